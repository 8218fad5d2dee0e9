"""``smt-train-phrases``: word alignment (eflomal), symmetrization, phrase extraction and scoring.

Writes into ``--out-dir``: ``aligned.<symmetrization>`` (Pharaoh ``i-j``
lines), ``lex.f2e`` / ``lex.e2f`` (Moses word translation tables),
``phrase-table.gz`` (Moses format, see :mod:`smt_features.phrase_table`) and
``config.yaml`` (the resolved options); prints the time of each stage.

The input files hold tokenized text, one sentence per line, tokens separated
by spaces (e.g. ``nmt-prepare``'s ``train.tok.<lang>``). The phrase table
keeps the case of this text; ``--lowercase-align`` (default on) lowercases
only what the aligner sees.

Example::

    smt-train-phrases --src train.tok.en --tgt train.tok.fr --out-dir work/smt/model
"""
from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from nmt import config as nmt_config
from nmt.config import field

from smt_features.align import (SYMMETRIZATIONS, EflomalOptions, eflomal_align, read_alignments,
                                read_tokenized_parallel, symmetrize_corpus, write_alignments)
from smt_features.moses_ini import default_config
from smt_features.phrase_table import check_phrase_table
from smt_features.phrases import DEFAULT_MAX_PHRASE_LENGTH, build_phrase_table
from nmt.errors import command

log = logging.getLogger(__name__)


@dataclass
class TrainPhrasesConfig:
    src: str = field("", help="tokenized source-language training file (plain or .gz)")
    tgt: str = field("", help="tokenized target-language training file, line-aligned with --src")
    out_dir: str = field("", help="output folder")
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


def train_phrases(cfg: TrainPhrasesConfig) -> dict[str, float]:
    """Run the whole step; returns the seconds per stage."""
    if not (cfg.src and cfg.tgt and cfg.out_dir):
        raise ValueError("--src, --tgt and --out-dir are required")
    if cfg.symmetrization not in SYMMETRIZATIONS:
        raise ValueError(f"--symmetrization must be one of {SYMMETRIZATIONS}, not {cfg.symmetrization!r}")
    if cfg.max_phrase_length < 1:
        raise ValueError("--max-phrase-length must be >= 1")
    if cfg.lm and not Path(cfg.lm).is_file():
        raise FileNotFoundError(f"--lm {cfg.lm}: no such file")
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    times: dict[str, float] = {}

    def stage(name: str, start: float) -> float:
        now = time.perf_counter()
        times[name] = now - start
        print(f"[smt-train-phrases] {name}: {now - start:.1f} s", flush=True)
        return now

    t = t_all = time.perf_counter()
    nmt_config.save(cfg, out / "config.yaml")
    src, tgt = read_tokenized_parallel(cfg.src, cfg.tgt)
    lengths = [(len(s), len(t_)) for s, t_ in zip(src, tgt)]
    t = stage(f"read {len(src)} sentence pairs", t)

    aligned_path = out / f"aligned.{cfg.symmetrization}"
    if cfg.alignment:
        links = read_alignments(cfg.alignment, lengths)
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
    write_alignments(aligned_path, links)
    t = stage(f"write {aligned_path.name}", t)

    stats = build_phrase_table(src, tgt, links, out / "phrase-table.gz",
                               max_phrase_length=cfg.max_phrase_length, processes=cfg.processes,
                               lex_f2e=out / "lex.f2e", lex_e2f=out / "lex.e2f")
    times["extraction"] = stats.count_seconds
    times["scoring"] = stats.score_seconds
    print(f"[smt-train-phrases] lexical tables + phrase extraction: {stats.count_seconds:.1f} s "
          f"({stats.occurrences} occurrences of {stats.distinct_pairs} distinct pair+alignment keys)")
    print(f"[smt-train-phrases] scoring + writing phrase-table.gz ({stats.lines} lines): "
          f"{stats.score_seconds:.1f} s")
    t = time.perf_counter()
    times["total"] = t - t_all
    print(f"[smt-train-phrases] total: {t - t_all:.1f} s", flush=True)
    if cfg.check:
        table_stats = check_phrase_table(out / "phrase-table.gz")
        stage("check table", t)
        print(f"[smt-train-phrases] {table_stats.summary()}")
    if cfg.lm:
        ini = out / "moses.ini"
        default_config(str((out / "phrase-table.gz").resolve()), str(Path(cfg.lm).resolve()),
                       lm_order=cfg.lm_order).write(ini)
        print(f"[smt-train-phrases] wrote {ini} (train-model.perl's default weights)")
    return times


@command("smt-train-phrases")
def cli_main(argv: list[str] | None = None) -> int:
    """Entry point of ``smt-train-phrases``."""
    cfg = nmt_config.parse(TrainPhrasesConfig, argv, description=__doc__.splitlines()[0])
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        train_phrases(cfg)
    except (ValueError, FileNotFoundError, RuntimeError) as err:  # DataError, PhraseTableError, eflomal
        print(f"smt-train-phrases: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())
