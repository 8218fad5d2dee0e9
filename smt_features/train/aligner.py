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
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from itertools import islice

from nmt.core.io import atomic_write, iter_parallel
from nmt.core.pools import can_fork, fork_pool, ordered_map

from smt_features.train.align import (EFLOMAL_MAX_TOKENS, SYMMETRIZATIONS, Links, PathLike, symmetrize_chunk,
                                      format_pharaoh, long_pairs, parse_pharaoh, read_tokenized_parallel,
                                      some_lines, symmetrize_corpus, write_alignments)

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


# --------------------------------------------------------------------------- streamed: files in, files out

#: Sentence pairs per symmetrization task of :func:`symmetrize_files`.
SYMMETRIZE_CHUNK = 5000


def write_eflomal_texts(pairs: Iterable[tuple[str, str]], src_file: PathLike, tgt_file: PathLike,
                        lowercase: bool) -> int:
    """eflomal's input files for both sides, as a stream; returns the number of pairs.

    The bytes of ``eflomal.cython.read_text`` + ``write_text`` (header ``sentences vocabulary``, then
    ``length id...`` per sentence, ids by first occurrence, ``0`` for an empty sentence or one of
    :data:`EFLOMAL_MAX_TOKENS` tokens or more); only the vocabularies are held.
    """
    vocabs: tuple[dict[str, int], dict[str, int]] = ({}, {})
    n = 0
    with open(f"{src_file}.body", "w", encoding="ascii") as src_body, \
            open(f"{tgt_file}.body", "w", encoding="ascii") as tgt_body:
        bodies = (src_body, tgt_body)
        for pair in pairs:
            n += 1
            for text, vocab, body in zip(pair, vocabs, bodies):
                ids = [vocab.setdefault(tok, len(vocab)) for tok in (text.lower() if lowercase else text).split()]
                if not ids or len(ids) >= EFLOMAL_MAX_TOKENS:
                    body.write("0\n")
                else:
                    body.write(f"{len(ids)} {' '.join(map(str, ids))}\n")
    for name, vocab in ((src_file, vocabs[0]), (tgt_file, vocabs[1])):
        with open(name, "wb") as out, open(f"{name}.body", "rb") as body:
            out.write(f"{n} {len(vocab)}\n".encode("ascii"))
            shutil.copyfileobj(body, out, 1 << 20)
        os.unlink(f"{name}.body")
    return n


def eflomal_align_files(src_path: PathLike, tgt_path: PathLike, lengths: Sequence[tuple[int, int]],
                        fwd_out: PathLike, rev_out: PathLike, *, lowercase: bool = True,
                        options: EflomalOptions | None = None, chunk_pairs: int = 0,
                        tmp_dir: PathLike | None = None) -> None:
    """eflomal on two checked tokenized files (``lengths``: their pairs), links written to two files.

    The inputs are written as streams (:func:`write_eflomal_texts`); the eflomal binary holds its
    input as integers. ``chunk_pairs`` > 0 aligns independent chunks of that many pairs, one after the
    other (each chunk's statistics only: less memory for the binary, somewhat worse alignments).
    """
    from eflomal import cython as efc  # eflomal 2.0: align

    opts = options or EflomalOptions()
    too_long = long_pairs(lengths)
    if too_long:
        log.warning("eflomal does not align sentences of %d or more tokens: %d sentence pair(s) left unaligned "
                    "(line(s) %s)", EFLOMAL_MAX_TOKENS, len(too_long), some_lines(too_long))
    n = len(lengths)
    size = chunk_pairs if chunk_pairs > 0 else max(1, n)
    pairs = iter_parallel(src_path, tgt_path)
    with tempfile.TemporaryDirectory(prefix="eflomal.", dir=tmp_dir) as tmp, \
            open(fwd_out, "wb") as fwd_all, open(rev_out, "wb") as rev_all:
        src_file, tgt_file = os.path.join(tmp, "src.eflomal"), os.path.join(tmp, "tgt.eflomal")
        fwd_file, rev_file = os.path.join(tmp, "links.fwd"), os.path.join(tmp, "links.rev")
        for lo in range(0, n, size):
            write_eflomal_texts(islice(pairs, size), src_file, tgt_file, lowercase)
            efc.align(src_file, tgt_file, links_filename_fwd=fwd_file, links_filename_rev=rev_file,
                      model=opts.model, n_iterations=opts.n_iterations, n_samplers=opts.n_samplers,
                      quiet=opts.quiet, rel_iterations=opts.rel_iterations, null_prior=opts.null_prior)
            for name, out in ((fwd_file, fwd_all), (rev_file, rev_all)):
                if not os.path.exists(name):
                    raise AlignmentError(f"eflomal wrote no {os.path.basename(name)} (binary failed?)")
                with open(name, "rb") as fh:
                    shutil.copyfileobj(fh, out, 1 << 20)
                os.unlink(name)
            if n > size:
                log.info("eflomal: pairs %d-%d of %d aligned", lo + 1, min(n, lo + size), n)


@dataclass
class SymmetrizedSummary:
    """What :func:`symmetrize_files` saw: links written, pairs with words but no link, long pairs skipped."""

    links: int = 0
    bare: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)


def _link_chunks(fwd_path: PathLike, rev_path: PathLike, lengths: Sequence[tuple[int, int]], method: str,
                 directional: list) -> Iterator[tuple]:
    """Symmetrization tasks of :data:`SYMMETRIZE_CHUNK` pairs from the two link files read in lockstep."""
    n = len(lengths)
    with open(fwd_path, encoding="utf-8") as fwd, open(rev_path, encoding="utf-8") as rev:
        lo = 0
        while True:
            parsed = []
            for fh, what, out in ((fwd, "forward", directional[0]), (rev, "reverse", directional[1])):
                links: list[Links] = []
                for k, line in enumerate(islice(fh, SYMMETRIZE_CHUNK), start=lo):
                    if k >= n:
                        raise AlignmentError(f"eflomal {what} links: more lines than the {n} sentence pairs")
                    try:
                        links.append(parse_pharaoh(line, *lengths[k]))
                    except ValueError as err:
                        raise AlignmentError(f"eflomal {what} links, line {k + 1}: {err}") from None
                if out is not None:
                    out.writelines(f"{format_pharaoh(a)}\n" for a in links)
                parsed.append(links)
            got = min(len(parsed[0]), len(parsed[1]))
            if got < SYMMETRIZE_CHUNK and lo + got < n:
                what = "forward" if len(parsed[0]) == got else "reverse"
                raise AlignmentError(f"eflomal {what} links: {lo + got} lines for {n} sentence pairs "
                                     f"(did the eflomal binary fail?)")
            if not got:
                return
            yield parsed[0], parsed[1], [lengths[k] for k in range(lo, lo + got)], method
            lo += got


def symmetrize_files(fwd_path: PathLike, rev_path: PathLike, lengths: Sequence[tuple[int, int]],
                     out_path: PathLike, method: str = "grow-diag-final-and", processes: int = 1, *,
                     forward_out: PathLike | None = None, reverse_out: PathLike | None = None,
                     check: Callable[[SymmetrizedSummary], None] | None = None) -> SymmetrizedSummary:
    """:func:`~smt_features.train.align.symmetrize_corpus` from eflomal's link files to ``out_path``, streamed.

    Chunks go to ``processes`` forked workers, a few at a time, results written in corpus order;
    ``forward_out`` / ``reverse_out`` get the directional links as Pharaoh lines. All outputs are
    atomic: an exception (also ``check``'s, called with the summary before they are kept) leaves none behind.
    """
    summary = SymmetrizedSummary()
    with ExitStack() as stack:
        out = stack.enter_context(atomic_write(out_path))
        directional = [stack.enter_context(atomic_write(p)) if p is not None else None
                       for p in (forward_out, reverse_out)]
        tasks = _link_chunks(fwd_path, rev_path, lengths, method, directional)
        if processes <= 1 or len(lengths) < 2000 or not can_fork():
            results: Iterator[list[Links]] = map(symmetrize_chunk, tasks)
        else:
            pool = stack.enter_context(fork_pool(processes))
            results = ordered_map(pool, symmetrize_chunk, tasks, 2 * processes)
        k = 0
        for part in results:
            for links in part:
                sl, tl = lengths[k]
                if not links and (sl >= EFLOMAL_MAX_TOKENS or tl >= EFLOMAL_MAX_TOKENS):
                    summary.skipped.append(k)
                elif sl and tl and not links:
                    summary.bare.append(k)
                summary.links += len(links)
                out.write(f"{format_pharaoh(links)}\n")
                k += 1
        if k != len(lengths):
            raise AlignmentError(f"eflomal links: {k} lines for {len(lengths)} sentence pairs")
        if check is not None:
            check(summary)
    return summary
