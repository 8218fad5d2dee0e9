"""Running the word aligner: eflomal in both directions on tokenized sentence pairs (and on two files).

Pipeline: tokenized sentence pairs → eflomal (``eflomal.cython`` API of
eflomal 2.0: ``read_text`` → ``write_text`` → ``align``, which runs the
bundled ``eflomal`` binary and writes forward and reverse links) →
symmetrization (:mod:`smt_features.train.align`) → Pharaoh lines ``i-j``.

Case: by default the aligner sees **lowercased** tokens (``lowercase=True``;
eflomal's own ``Aligner`` always lowercases), which pools the statistics of
``A``/``a``. Lowercasing is for alignment only: indices refer to the
tokens as given, and the phrase table keeps the case of the tokenized text
it is built from (truecase or lowercase that text consistently, before
alignment, if the decoder input is truecased/lowercased).

eflomal samples (Gibbs), so two runs can give slightly different alignments.
Sentences of 1024 or more tokens (:data:`~smt_features.train.align.EFLOMAL_MAX_TOKENS`) are not aligned by
eflomal (empty links); :func:`eflomal_align` says so in the log, with their
count and first line numbers.
"""
from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass

from smt_features.train.align import (EFLOMAL_MAX_TOKENS, SYMMETRIZATIONS, Links, PathLike, long_pairs,
                                      parse_pharaoh, read_tokenized_parallel, some_lines, symmetrize_corpus,
                                      write_alignments)

log = logging.getLogger(__name__)


class AlignmentError(RuntimeError):
    """eflomal did not produce the expected output."""


@dataclass
class EflomalOptions:
    """Options passed to ``eflomal.cython.align`` (its defaults unless noted)."""

    model: int = 3                 # 1 = IBM1, 2 = +HMM, 3 = +fertility
    n_samplers: int = 2            # independent samplers (run in parallel by the binary)
    rel_iterations: float = 1.0    # iterations relative to eflomal's default schedule
    n_iterations: tuple[int, int, int] | None = None  # explicit (IBM1, HMM, fertility) iterations
    null_prior: float = 0.2
    quiet: bool = True


def _alignment_line(tokens: Sequence[str], lowercase: bool) -> str:
    line = " ".join(tokens)
    if line.split() != list(tokens):   # a token with (unicode) whitespace, or an empty token
        line = " ".join("".join("_" if ch.isspace() else ch for ch in t) or "_" for t in tokens)
    return line.lower() if lowercase else line


def _read_links(path: str, lengths: Sequence[tuple[int, int]], what: str) -> list[Links]:
    out: list[Links] = []
    with open(path, encoding="utf-8") as fh:
        for k, line in enumerate(fh):
            if k >= len(lengths):
                raise AlignmentError(f"eflomal {what} links: more lines than the {len(lengths)} sentence pairs")
            sl, tl = lengths[k]
            try:
                out.append(parse_pharaoh(line, sl, tl))
            except ValueError as err:
                raise AlignmentError(f"eflomal {what} links, line {k + 1}: {err}") from None
    if len(out) != len(lengths):
        raise AlignmentError(f"eflomal {what} links: {len(out)} lines for {len(lengths)} sentence pairs "
                             f"(did the eflomal binary fail?)")
    return out


def eflomal_align(src_sents: Sequence[Sequence[str]], tgt_sents: Sequence[Sequence[str]], *,
                  lowercase: bool = True, options: EflomalOptions | None = None,
                  tmp_dir: PathLike | None = None) -> tuple[list[Links], list[Links]]:
    """Align tokenized sentence pairs with eflomal; returns ``(forward, reverse)`` links.

    Both are lists of ``(src, tgt)`` points per sentence. ``lowercase``
    lowercases the tokens the aligner sees (see the module docstring).
    """
    from eflomal import cython as efc  # eflomal 2.0: read_text, write_text, align

    opts = options or EflomalOptions()
    if len(src_sents) != len(tgt_sents):
        raise ValueError(f"{len(src_sents)} source vs {len(tgt_sents)} target sentences")
    lengths = [(len(s), len(t)) for s, t in zip(src_sents, tgt_sents)]
    if not lengths:
        return [], []
    too_long = long_pairs(lengths)
    if too_long:
        log.warning("eflomal does not align sentences of %d or more tokens: %d sentence pair(s) left unaligned "
                    "(line(s) %s)", EFLOMAL_MAX_TOKENS, len(too_long), some_lines(too_long))
    with tempfile.TemporaryDirectory(prefix="eflomal.", dir=tmp_dir) as tmp:
        src_file = os.path.join(tmp, "src.eflomal")
        tgt_file = os.path.join(tmp, "tgt.eflomal")
        fwd_file = os.path.join(tmp, "links.fwd")
        rev_file = os.path.join(tmp, "links.rev")
        for sents, name in ((src_sents, src_file), (tgt_sents, tgt_file)):
            # read_text(lines, lowercase, prefix_len, suffix_len) -> (index arrays, vocabulary)
            indexed, vocab = efc.read_text((_alignment_line(s, False) for s in sents), lowercase, 0, 0)
            with open(name, "wb") as fh:
                efc.write_text(fh, tuple(indexed), len(vocab))
        efc.align(src_file, tgt_file,
                  links_filename_fwd=fwd_file, links_filename_rev=rev_file,
                  model=opts.model, n_iterations=opts.n_iterations, n_samplers=opts.n_samplers,
                  quiet=opts.quiet, rel_iterations=opts.rel_iterations, null_prior=opts.null_prior)
        for name in (fwd_file, rev_file):
            if not os.path.exists(name):
                raise AlignmentError(f"eflomal wrote no {os.path.basename(name)} (binary failed?)")
        forward = _read_links(fwd_file, lengths, "forward")
        reverse = _read_links(rev_file, lengths, "reverse")
    return forward, reverse


def word_align(src_sents: Sequence[Sequence[str]], tgt_sents: Sequence[Sequence[str]], *,
               method: str = "grow-diag-final-and", lowercase: bool = True,
               options: EflomalOptions | None = None, processes: int = 1) -> list[Links]:
    """eflomal both ways + symmetrization; one sorted list of ``(src, tgt)`` points per pair."""
    if method not in SYMMETRIZATIONS:
        raise ValueError(f"unknown symmetrization {method!r}; choose from {SYMMETRIZATIONS}")
    forward, reverse = eflomal_align(src_sents, tgt_sents, lowercase=lowercase, options=options)
    lengths = [(len(s), len(t)) for s, t in zip(src_sents, tgt_sents)]
    return symmetrize_corpus(forward, reverse, lengths, method, processes)


def align_files(src_path: PathLike, tgt_path: PathLike, out_path: PathLike, *,
                method: str = "grow-diag-final-and", lowercase: bool = True,
                options: EflomalOptions | None = None, forward_out: PathLike | None = None,
                reverse_out: PathLike | None = None, processes: int = 1) -> list[Links]:
    """Align two tokenized files; write the symmetrized Pharaoh file (and optionally both directions)."""
    src, tgt = read_tokenized_parallel(src_path, tgt_path)
    t0 = time.perf_counter()
    forward, reverse = eflomal_align(src, tgt, lowercase=lowercase, options=options)
    log.info("eflomal: %d pairs in %.1f s", len(src), time.perf_counter() - t0)
    lengths = [(len(s), len(t)) for s, t in zip(src, tgt)]
    links = symmetrize_corpus(forward, reverse, lengths, method, processes)
    if forward_out is not None:
        write_alignments(forward_out, forward)
    if reverse_out is not None:
        write_alignments(reverse_out, reverse)
    write_alignments(out_path, links)
    return links
