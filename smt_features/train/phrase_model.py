"""The ``smt-train-phrases`` step: word alignment (eflomal), symmetrization, phrase extraction and scoring.

Writes into ``--out-dir``: ``aligned.<symmetrization>`` (Pharaoh ``i-j``
lines), ``lex.f2e`` / ``lex.e2f`` (Moses word translation tables),
``phrase-table.gz`` (Moses format, see :mod:`nmt.core.formats.phrase_table`) and
``config.yaml`` (the resolved options); prints the time of each stage.

The input files hold tokenized text, one sentence per line, tokens separated
by spaces (e.g. ``nmt-prepare``'s ``train.tok.<lang>``). The phrase table
keeps the case of this text; ``--lowercase-align`` (default on) lowercases
only what the aligner sees.

The phrase table is extracted and scored the Moses way, through temp files and
GNU ``sort`` (:mod:`smt_features.train.extract_stream`), with memory bounded by
``--sort-buffer`` (default ``1G``) and ``--extract-chunk-lines`` instead of by the
corpus; ``--sort-buffer memory`` counts in RAM instead (the same table bytes); see
``docs/training_smt.md``. On that default path the inputs are streams too (:mod:`smt_features.train.corpus_stream`):
no stage holds the corpus or its alignment as lists, only 8 bytes a sentence pair.

Example::

    smt-train-phrases --src train.tok.en --tgt train.tok.fr --out-dir work/smt/model
"""
from __future__ import annotations

import errno
import logging
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from nmt.core import config as nmt_config
from nmt.core.config import field
from nmt.core.io import DataError
from nmt.core.errors import UsageError, refuse_overwriting_inputs
from nmt.core.formats.phrase_table_check import check_phrase_table
from nmt.core.formats.reordering_table import TABLE_NAME

from smt_features.train.align import (EFLOMAL_MAX_TOKENS, SYMMETRIZATIONS, long_pairs, read_alignments,
                                      read_tokenized_parallel, report_bare, report_long_and_uneven,
                                      report_unaligned, some_lines, symmetrize_corpus, write_alignments)
from smt_features.train.aligner import (EflomalOptions, SymmetrizedSummary, eflomal_align, eflomal_align_files,
                                        symmetrize_files)
from smt_features.train.corpus_stream import check_alignment, scan_corpus, write_normalized_alignment
from smt_features.train.external_sort import SortOptions, check_size
from smt_features.train.extract_stream import DEFAULT_CHUNK_LINES, StreamOptions
from smt_features.train.phrases import PhraseTableStats, build_phrase_table, build_phrase_table_from_files
from smt_features.train.reordering_scoring import Smoothing
from smt_features.train.reordering_step import TrainReorderingConfig, train_reordering
from smt_features.train.spans import DEFAULT_MAX_PHRASE_LENGTH

log = logging.getLogger(__name__)
REORDERING_MODELS = ("", "msd-bidirectional-fe")


@dataclass
class TrainPhrasesConfig:
    src: str = field("", help="tokenized source-language training file (plain or .gz)", required=True)
    tgt: str = field("", help="tokenized target-language training file, line-aligned with --src", required=True)
    out_dir: str = field("", help="output folder", required=True)
    max_phrase_length: int = field(DEFAULT_MAX_PHRASE_LENGTH, help="longest phrase (words) on either side")
    symmetrization: str = field("grow-diag-final-and", help=f"one of {', '.join(SYMMETRIZATIONS)}")
    lowercase_align: bool = field(True, help="lowercase the tokens the aligner sees (the table keeps the case)")
    alignment: str | None = field(None, help="use this Pharaoh alignment file instead of running eflomal")
    write_directional: bool = field(False, help="also write eflomal's aligned.forward / aligned.reverse")
    processes: int = field(2, help="worker processes for symmetrization, extraction and scoring")
    eflomal_model: int = field(3, help="eflomal model: 1 = IBM1, 2 = +HMM, 3 = +fertility")
    eflomal_samplers: int = field(2, help="eflomal independent samplers (run in parallel)")
    eflomal_rel_iterations: float = field(1.0, help="eflomal iterations relative to its default schedule")
    eflomal_null_prior: float = field(0.2, help="eflomal prior probability of a NULL link (lower: fewer unaligned "
                                                "words, a smaller phrase table)")
    check: bool = field(False, help="re-read the written table with the strict reader and print its statistics")
    lm: str = field("", help="KenLM model (ARPA or binary) of the target language: also write OUT_DIR/moses.ini "
                             "with train-model.perl's features and default weights (distance reordering)")
    lm_order: int = field(5, help="order of --lm (the moses.ini KENLM line)")
    reordering: str = field("", help="'msd-bidirectional-fe': also write Moses's lexicalized reordering table "
                                     "OUT_DIR/reordering-table.wbe-msd-bidirectional-fe.gz from the same alignment "
                                     "(as smt-train-reordering) and, with --lm, its LexicalReordering0 line in "
                                     "moses.ini; '' (default): distance reordering only")
    reordering_smoothing: str = field("0.5", help="with --reordering: smt-train-reordering's --smoothing")
    sort_buffer: str = field("1G", help="phrase extraction streamed through temp files and GNU sort, memory "
                                        "bounded by this sort -S size (e.g. 500M, 2G); 'memory' (or '') counts "
                                        "every phrase pair in RAM instead (same table bytes)")
    extract_chunk_lines: int = field(DEFAULT_CHUNK_LINES, help="streamed extraction: sentence pairs counted "
                                                               "per temp file (memory per worker)")
    tmp_dir: str = field("", help="streamed extraction: folder for its temp files (default: --out-dir)")
    sort_compress: bool = field(False, help="streamed extraction: gzip the temp files and sort's own")
    align_chunk_pairs: int = field(0, help="run eflomal on independent chunks of this many sentence pairs "
                                           "(bounds the aligner's memory; alignments from less data are "
                                           "somewhat worse); 0 = the whole corpus at once")


def _reordering_config(cfg: TrainPhrasesConfig) -> TrainReorderingConfig:
    """``--reordering``'s table from the step's own inputs and alignment (the same phrase pairs as the table)."""
    out = Path(cfg.out_dir)
    buffer = cfg.sort_buffer if cfg.sort_buffer not in ("", "memory") else "1G"
    return TrainReorderingConfig(src=cfg.src, tgt=cfg.tgt, alignment=str(out / f"aligned.{cfg.symmetrization}"),
                                 out=str(out / TABLE_NAME), max_phrase_length=cfg.max_phrase_length,
                                 smoothing=cfg.reordering_smoothing, sort_buffer=buffer, tmp_dir=cfg.tmp_dir,
                                 processes=cfg.processes)


def output_paths(cfg: TrainPhrasesConfig) -> dict[str, Path]:
    """Every file the step writes into ``--out-dir`` (named for messages)."""
    out = Path(cfg.out_dir)
    paths = {"config.yaml": out / "config.yaml", f"aligned.{cfg.symmetrization}": out / f"aligned.{cfg.symmetrization}",
             "lex.f2e": out / "lex.f2e", "lex.e2f": out / "lex.e2f", "phrase-table.gz": out / "phrase-table.gz"}
    if cfg.write_directional:
        paths.update({"aligned.forward": out / "aligned.forward", "aligned.reverse": out / "aligned.reverse"})
    if cfg.lm:
        paths["moses.ini"] = out / "moses.ini"
    if cfg.reordering:
        paths[TABLE_NAME] = out / TABLE_NAME
    return {f"--out-dir's {name}": path for name, path in paths.items()}


def _check_input_file(path: str, flag: str) -> None:
    p = Path(path)
    if p.is_dir():
        raise IsADirectoryError(errno.EISDIR, f"{flag} is a directory, not a file", path)
    if not p.is_file():
        raise FileNotFoundError(errno.ENOENT, f"{flag}: no such file", path)


def _check_tokens(path: str, sents: list[list[str]]) -> None:
    """A token holding ``|||`` would break the phrase table's fields: name its line."""
    for k, toks in enumerate(sents):
        for tok in toks:
            if "|||" in tok:
                raise DataError(path, k + 1, f"token {tok!r} contains '|||', the phrase table's field "
                                             "separator (escape '|' when tokenizing)")


def _skip_unaligned_long(src: list[list[str]], tgt: list[list[str]], links: list,
                         ) -> tuple[list[list[str]], list[list[str]]]:
    """Leave out the pairs eflomal could not align (a side of EFLOMAL_MAX_TOKENS or more tokens, no links):
    they keep their (empty) line in the alignment file but give no lexical counts and no phrase pairs."""
    skipped = [k for k in long_pairs([(len(s), len(t)) for s, t in zip(src, tgt)]) if not links[k]]
    if not skipped:
        return src, tgt
    log.warning("skipped %d sentence pair(s) of %d or more tokens that eflomal left unaligned (line(s) %s): "
                "they add nothing to the lexical tables or the phrase table; split them to use them",
                len(skipped), EFLOMAL_MAX_TOKENS, ", ".join(str(k + 1) for k in skipped[:5])
                + (", ..." if len(skipped) > 5 else ""))
    src, tgt = list(src), list(tgt)
    for k in skipped:
        src[k], tgt[k] = [], []
    return src, tgt


def _stream_options(cfg: TrainPhrasesConfig) -> StreamOptions | None:
    """The streamed path's options (``--sort-buffer`` given), or None for the in-memory path."""
    if cfg.sort_buffer in ("", "memory"):
        return None
    try:
        check_size(cfg.sort_buffer)
    except ValueError as e:
        raise UsageError(f"--sort-buffer: {e}") from None
    if cfg.extract_chunk_lines < 1:
        raise UsageError("--extract-chunk-lines must be >= 1")
    if cfg.tmp_dir and Path(cfg.tmp_dir).exists() and not Path(cfg.tmp_dir).is_dir():
        raise UsageError(f"{cfg.tmp_dir}: --tmp-dir exists and is not a folder")
    return StreamOptions(cfg.extract_chunk_lines, SortOptions(cfg.sort_buffer, cfg.tmp_dir, cfg.processes,
                                                              cfg.sort_compress))


def train_phrases(cfg: TrainPhrasesConfig) -> dict[str, float]:
    """Run the whole step (but ``--lm``'s moses.ini, which the command writes with the model room's
    :func:`~smt_features.model.moses_ini_build.default_config`); returns the seconds per stage.

    Every input is read and checked before anything is written: bad input raises
    :class:`nmt.core.io.DataError` (file and line) or :class:`nmt.core.errors.UsageError`
    and leaves ``--out-dir`` as it was.
    """
    if cfg.symmetrization not in SYMMETRIZATIONS:
        raise UsageError(f"--symmetrization must be one of {SYMMETRIZATIONS}, not {cfg.symmetrization!r}")
    if cfg.max_phrase_length < 1:
        raise UsageError("--max-phrase-length must be >= 1")
    stream = _stream_options(cfg)
    if cfg.reordering not in REORDERING_MODELS:
        raise UsageError(f"--reordering must be one of {', '.join(m or repr(m) for m in REORDERING_MODELS)}, "
                         f"not {cfg.reordering!r}")
    reordering = _reordering_config(cfg) if cfg.reordering else None
    if reordering is not None:
        try:
            Smoothing.parse(cfg.reordering_smoothing)
        except ValueError as e:
            raise UsageError(f"--reordering-smoothing: {e}") from None
    if cfg.align_chunk_pairs < 0 or (cfg.align_chunk_pairs and stream is None):
        raise UsageError("--align-chunk-pairs must be >= 0 (and needs the streamed path: a --sort-buffer size)")
    if Path(cfg.out_dir).exists() and not Path(cfg.out_dir).is_dir():
        raise UsageError(f"{cfg.out_dir}: --out-dir exists and is not a folder")
    outputs = output_paths(cfg)
    aligned_out = outputs[f"--out-dir's aligned.{cfg.symmetrization}"]
    inputs = {"--src": cfg.src, "--tgt": cfg.tgt, "--lm": cfg.lm or None}
    refuse_overwriting_inputs(outputs, inputs)
    # --alignment may be the folder's own alignment file (retraining with other options): it is not rewritten
    reuse_alignment = bool(cfg.alignment) and Path(cfg.alignment).is_file() and aligned_out.is_file() and \
        os.path.samefile(cfg.alignment, aligned_out)
    refuse_overwriting_inputs({k: v for k, v in outputs.items() if v != aligned_out or not reuse_alignment},
                              {"--alignment": cfg.alignment or None})
    for flag, path in (("--src", cfg.src), ("--tgt", cfg.tgt), ("--lm", cfg.lm), ("--alignment", cfg.alignment)):
        if path:
            _check_input_file(path, flag)
    out = Path(cfg.out_dir)
    times: dict[str, float] = {}

    def stage(name: str, start: float) -> float:
        now = time.perf_counter()
        times[name] = now - start
        print(f"[smt-train-phrases] {name}: {now - start:.1f} s", flush=True)
        return now

    t_all = time.perf_counter()
    if stream is None:
        stats = _train_in_memory(cfg, aligned_out, reuse_alignment, stage)
    else:
        stats = _train_streamed(cfg, stream, aligned_out, reuse_alignment, stage)
    times["extraction"] = stats.count_seconds
    times["scoring"] = stats.score_seconds
    print(f"[smt-train-phrases] lexical tables + phrase extraction: {stats.count_seconds:.1f} s "
          f"({stats.occurrences} occurrences of {stats.distinct_pairs} distinct pair+alignment keys)")
    print(f"[smt-train-phrases] scoring + writing phrase-table.gz ({stats.lines} lines): "
          f"{stats.score_seconds:.1f} s")
    if reordering is not None:
        t = time.perf_counter()
        r = train_reordering(reordering)
        stage(f"lexicalized reordering table ({r.pairs} lines)", t)
    t = time.perf_counter()
    times["total"] = t - t_all
    print(f"[smt-train-phrases] total: {t - t_all:.1f} s", flush=True)
    if cfg.check:
        table_stats = check_phrase_table(out / "phrase-table.gz")
        stage("check table", t)
        print(f"[smt-train-phrases] {table_stats.summary()}")
    return times


def _train_in_memory(cfg: TrainPhrasesConfig, aligned_out: Path, reuse_alignment: bool, stage
                     ) -> PhraseTableStats:
    """``--sort-buffer memory``: the corpus and its alignment held as lists (the older path)."""
    out = Path(cfg.out_dir)
    t = time.perf_counter()
    src, tgt = read_tokenized_parallel(cfg.src, cfg.tgt)
    if not src:
        raise DataError(f"{cfg.src}: no sentence pairs: --src and --tgt are empty (nothing to train on; "
                        "no phrase table written)")
    _check_tokens(cfg.src, src)
    _check_tokens(cfg.tgt, tgt)
    lengths = [(len(s), len(t_)) for s, t_ in zip(src, tgt)]
    report_long_and_uneven(lengths, cfg.src)
    t = stage(f"read {len(src)} sentence pairs", t)
    links = read_alignments(cfg.alignment, lengths) if cfg.alignment else None

    out.mkdir(parents=True, exist_ok=True)
    nmt_config.save(cfg, out / "config.yaml")
    aligned_path = aligned_out
    if links is not None:
        t = stage("read alignment", t)
    else:
        opts = EflomalOptions(model=cfg.eflomal_model, n_samplers=cfg.eflomal_samplers,
                              rel_iterations=cfg.eflomal_rel_iterations, null_prior=cfg.eflomal_null_prior)
        forward, reverse = eflomal_align(src, tgt, lowercase=cfg.lowercase_align, options=opts)
        t = stage("eflomal alignment (both directions)", t)
        if cfg.write_directional:
            write_alignments(out / "aligned.forward", forward)
            write_alignments(out / "aligned.reverse", reverse)
        links = symmetrize_corpus(forward, reverse, lengths, cfg.symmetrization, cfg.processes)
        del forward, reverse
        t = stage(f"symmetrization ({cfg.symmetrization})", t)
        src, tgt = _skip_unaligned_long(src, tgt, links)
    report_unaligned(links, [(len(s), len(t_)) for s, t_ in zip(src, tgt)], cfg.src)
    if not any(links):
        raise DataError(f"{cfg.alignment or cfg.src}: not one alignment link in the {len(links)} sentence "
                        "pair(s): no phrase pair to extract, no phrase table written")
    if not (cfg.alignment and reuse_alignment):
        write_alignments(aligned_path, links)
        t = stage(f"write {aligned_path.name}", t)

    return build_phrase_table(src, tgt, links, out / "phrase-table.gz",
                               max_phrase_length=cfg.max_phrase_length, processes=cfg.processes,
                               lex_f2e=out / "lex.f2e", lex_e2f=out / "lex.e2f")


def _train_streamed(cfg: TrainPhrasesConfig, stream: StreamOptions, aligned_out: Path, reuse_alignment: bool,
                    stage) -> PhraseTableStats:
    """The default path: every input read as a stream (:mod:`smt_features.train.corpus_stream`), memory
    bounded by the options (lengths: 8 bytes a pair), not by the corpus."""
    out = Path(cfg.out_dir)
    t = time.perf_counter()
    lengths = scan_corpus(cfg.src, cfg.tgt)
    if not len(lengths):
        raise DataError(f"{cfg.src}: no sentence pairs: --src and --tgt are empty (nothing to train on; "
                        "no phrase table written)")
    report_long_and_uneven(lengths, cfg.src)
    t = stage(f"read {len(lengths)} sentence pairs", t)
    given = check_alignment(cfg.alignment, lengths) if cfg.alignment else None
    out.mkdir(parents=True, exist_ok=True)
    nmt_config.save(cfg, out / "config.yaml")
    if given is not None:
        t = stage("read alignment", t)
        report_bare(given.bare, cfg.src)
        if not given.links:
            raise DataError(f"{cfg.alignment}: not one alignment link in the {len(lengths)} sentence "
                            "pair(s): no phrase pair to extract, no phrase table written")
        if not reuse_alignment:
            write_normalized_alignment(cfg.alignment, aligned_out)
            t = stage(f"write {aligned_out.name}", t)
    else:
        def check(summary: SymmetrizedSummary) -> None:
            if summary.skipped:
                log.warning("skipped %d sentence pair(s) of %d or more tokens that eflomal left unaligned "
                            "(line(s) %s): they add nothing to the lexical tables or the phrase table; split "
                            "them to use them", len(summary.skipped), EFLOMAL_MAX_TOKENS, some_lines(summary.skipped))
            report_bare(summary.bare, cfg.src)
            if not summary.links:
                raise DataError(f"{cfg.src}: not one alignment link in the {len(lengths)} sentence "
                                "pair(s): no phrase pair to extract, no phrase table written")

        opts = EflomalOptions(model=cfg.eflomal_model, n_samplers=cfg.eflomal_samplers,
                              rel_iterations=cfg.eflomal_rel_iterations, null_prior=cfg.eflomal_null_prior)
        with tempfile.TemporaryDirectory(prefix=".eflomal.", dir=cfg.tmp_dir or out) as tmp:
            fwd, rev = Path(tmp) / "links.fwd", Path(tmp) / "links.rev"
            eflomal_align_files(cfg.src, cfg.tgt, lengths, fwd, rev, lowercase=cfg.lowercase_align, options=opts,
                                chunk_pairs=cfg.align_chunk_pairs, tmp_dir=tmp)
            t = stage("eflomal alignment (both directions)", t)
            directional = (out / "aligned.forward", out / "aligned.reverse") if cfg.write_directional else (None,) * 2
            symmetrize_files(fwd, rev, lengths, aligned_out, cfg.symmetrization, cfg.processes,
                             forward_out=directional[0], reverse_out=directional[1], check=check)
        stage(f"symmetrization ({cfg.symmetrization}) + write {aligned_out.name}", t)
    del lengths
    return build_phrase_table_from_files(cfg.src, cfg.tgt, aligned_out, out / "phrase-table.gz", stream=stream,
                                         max_phrase_length=cfg.max_phrase_length, processes=cfg.processes,
                                         lex_f2e=out / "lex.f2e", lex_e2f=out / "lex.e2f",
                                         skip_long_unaligned=given is None)
