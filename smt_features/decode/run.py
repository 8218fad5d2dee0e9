"""smt-decode's run: its options (:class:`DecodeConfig`), the input check, decoding a corpus into the output files.

Input and output are tokenized, one sentence per line (detokenization and
BLEU happen in the recipe). ``--moses-ini`` (``-f``, Moses's spelling) is the
system (see :mod:`smt_features.model.moses_ini`); the search flags override its
sections and ``--weights-override`` its weights (Moses's ``-weight-overwrite``
syntax: ``"LM0= 0.5 TranslationModel0= 0.2 0.2 0.2 0.2"``). ``--config
YAML[:SECTION]`` gives any of these options (same names as the flags; flags win).
Progress (sentences/s) goes to stderr; a summary line with the load time and the
decoding speed (model loading excluded) ends the run.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, fields

from nmt.core import config as C
from nmt.core.io import DataError, atomic_write, iter_lines
from nmt.core.errors import refuse_overwriting_inputs
from nmt.core.formats.nbest import format_nbest_line

from smt_features.decode.corpus import decode_corpus
from smt_features.decode.decoder import Decoder
from smt_features.decode.load import build_decoder
from smt_features.decode.options import search_options_from_config
from smt_features.model.kenlm import LOAD_METHODS
from smt_features.model.moses_ini import (
    MosesConfig, apply_weight_overrides, check_feature_files, parse_weight_string, read_moses_ini,
)

STAT_TOTALS = ("expanded", "created", "recombined", "discarded", "pruned", "lm_misses")


@dataclass
class DecodeConfig:
    moses_ini: str = C.field("", help="moses.ini of the system (features, weights, search options); "
                                      "-f is Moses's spelling", required=True)
    input: str = C.field("-", help="tokenized input, one sentence per line ('-' = stdin)")
    output: str = C.field("-", help="tokenized 1-best output ('-' = stdout)")
    n_best_list: list[str] = C.field([], help="FILE N [distinct]: also write an N-best list in Moses format")
    threads: int = C.field(1, help="decode in this many worker processes (forked after loading; order kept)")
    stack: int | None = C.field(None, help="stack size (histogram pruning); moses.ini [stack], else 200")
    table_limit: int | None = C.field(None, help="translation options per source phrase; feature line's "
                                                 "table-limit, else 20 (0 = all)")
    distortion_limit: int | None = C.field(None, help="maximum jump in source words (-1 = none); "
                                                      "moses.ini [distortion-limit], else 6")
    beam_threshold: float | None = C.field(None, help="threshold pruning, as a probability ratio to the best "
                                                      "hypothesis of a stack (Moses -b); default 1e-5")
    early_discarding_threshold: float | None = C.field(None, help="Moses early discarding as a probability "
                                                                  "ratio (0 = off, the default)")
    max_phrase_length: int | None = C.field(None, help="longest source phrase looked up (default 20)")
    max_sentence_length: int = C.field(1000, help="refuse an input line of more words than this (its search "
                                                  "would take very long; the compiled search handles up to "
                                                  "512); 0 = none")
    search: str = C.field("auto", help="search implementation: 'python', 'compiled' (the C++ core built by "
                                       "third_party/build_search.sh; error if missing) or 'auto' (compiled "
                                       "when available); identical results")
    lm_load: str = C.field("", choices=("",) + tuple(LOAD_METHODS), help="how KenLM binaries are loaded: lazy (mapped, pages read as touched: memory "
                                    "and start-up do not grow with the LM), populate (mapped and read at start), "
                                    "read; default: the KENLM line's lazyken (1 lazy, 0 populate), else lazy")
    weights_override: str = C.field("", help="replace weights, e.g. 'LM0= 0.5 Distortion0= 0.1'")
    progress: bool = C.field(True, help="show a tqdm progress bar with sentences/s on stderr")
    stats_json: str = C.field("", help="write timings and counts of the run as JSON here")


def parse_decode_args(argv: Sequence[str] | None, description: str = "") -> tuple[DecodeConfig, tuple | None]:
    """``(config, n-best spec (FILE, N, distinct) or None)`` from smt-decode's command line (usage errors exit 2)."""
    parser = argparse.ArgumentParser(prog="smt-decode", description=description)
    parser.add_argument("--config", help="YAML file (or FILE:SECTION) with option: value lines, same names as "
                        "the flags; flags given on the command line win")
    C.add_dataclass_args(parser, DecodeConfig)
    parser.add_argument("-f", dest="moses_ini", default=None, help="same as --moses-ini (Moses's spelling)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    yaml_values = C.load_yaml(args.config) if args.config else {}
    names = {f.name for f in fields(DecodeConfig)}
    unknown = [k for k in yaml_values if k.replace("-", "_") not in names]
    if unknown:
        parser.error(f"{args.config}: unknown option(s) {unknown}")
    cfg = C.build(DecodeConfig, args, yaml_values, source=str(args.config))
    if cfg.threads < 1:
        parser.error("--threads must be >= 1")
    if cfg.max_sentence_length < 0:
        parser.error("--max-sentence-length must be >= 0 (0 = no limit)")
    if cfg.lm_load and cfg.lm_load not in LOAD_METHODS:
        parser.error(f"--lm-load must be one of {', '.join(LOAD_METHODS)}, not {cfg.lm_load!r}")
    return cfg, nbest_spec(cfg.n_best_list, parser)


def nbest_spec(values: list[str], parser: argparse.ArgumentParser) -> tuple[str, int, bool] | None:
    if not values:
        return None
    if len(values) not in (2, 3) or (len(values) == 3 and values[2] != "distinct"):
        parser.error("--n-best-list takes FILE N [distinct]")
    try:
        n = int(values[1])
    except ValueError:
        parser.error(f"--n-best-list: N must be an integer, got {values[1]!r}")
    if n < 1:
        parser.error("--n-best-list: N must be >= 1")
    return values[0], n, len(values) == 3


def read_input(path: str, max_words: int = 0) -> list[str]:
    """The input sentences (strict UTF-8; an empty line is an empty sentence, translated as an empty line).

    An empty file, or a line of more than ``max_words`` words (``0``: no limit), raises
    :class:`nmt.core.io.DataError` naming the file (and line).
    """
    if path in ("", "-"):
        name = "<stdin>"
        lines = [line.rstrip("\r\n") for line in sys.stdin]
    else:
        name = path
        lines = list(iter_lines(path, allow_empty=True))
        if not lines:
            raise DataError(f"{path}: empty file: no sentence to translate")
    if max_words > 0:
        for k, line in enumerate(lines):
            n = len(line.split())
            if n > max_words:
                raise DataError(name, k + 1, f"a sentence of {n} words, more than --max-sentence-length "
                                             f"{max_words} (its search would take very long): split it, or raise "
                                             "the limit (0 = none)")
    return lines


def load_decoder(cfg: DecodeConfig, ini: MosesConfig | None = None) -> Decoder:
    """The decoder of ``cfg.moses_ini`` (or of ``ini``, read from it already) with ``cfg``'s weight overrides and
    search options (the flags win over the moses.ini's sections): what smt-decode and the Python API decode with."""
    if ini is None:
        ini = read_moses_ini(cfg.moses_ini)
    if cfg.weights_override:
        apply_weight_overrides(ini, parse_weight_string(cfg.weights_override, "--weights-override"))
    options = search_options_from_config(
        ini, stack_size=cfg.stack, distortion_limit=cfg.distortion_limit, beam_threshold=cfg.beam_threshold,
        early_discarding_threshold=cfg.early_discarding_threshold, max_phrase_length=cfg.max_phrase_length,
        search=cfg.search)
    return build_decoder(ini, options=options, table_limit=cfg.table_limit, lm_load=cfg.lm_load or None)


def run(cfg: DecodeConfig, nbest: tuple[str, int, bool] | None = None) -> dict:
    """Decode ``cfg.input`` to ``cfg.output`` (and the n-best list); returns the run's statistics."""
    from tqdm import tqdm

    # every check before the model is loaded, and nothing written before the end
    outputs = {"--output": cfg.output, "--n-best-list": nbest[0] if nbest else None,
               "--stats-json": cfg.stats_json or None}
    refuse_overwriting_inputs(outputs, {"--input": cfg.input, "--moses-ini": cfg.moses_ini})
    lines = read_input(cfg.input, cfg.max_sentence_length)
    t0 = time.perf_counter()
    ini = read_moses_ini(cfg.moses_ini)
    refuse_overwriting_inputs(outputs, {f"{name} (path= in --moses-ini)": path
                                        for name, path in check_feature_files(ini).items()})
    decoder = load_decoder(cfg, ini)
    options = decoder.options
    load_s = time.perf_counter() - t0
    print(f"[smt-decode] loaded {cfg.moses_ini} in {load_s:.1f} s: {len(decoder.table)} phrase pairs, "
          f"features {', '.join(f.name for f in decoder.features)}; stack {options.stack_size}, "
          f"distortion limit {options.distortion_limit}, table limit {decoder.tm.table_limit}, "
          f"{cfg.threads} process(es), {decoder.search_kind} search", file=sys.stderr, flush=True)

    n_best = nbest[1] if nbest else 0
    distinct = nbest[2] if nbest else False
    out_lines: list[str] = []
    nbest_lines: list[str] = []
    t1 = time.perf_counter()
    bar = tqdm(total=len(lines), unit="sent", disable=not cfg.progress, file=sys.stderr, dynamic_ncols=True)
    totals = dict.fromkeys(STAT_TOTALS, 0)
    for res in decode_corpus(decoder, lines, threads=cfg.threads, nbest=n_best, distinct=distinct):
        out_lines.append(res.best.text)
        for tr in res.nbest:
            nbest_lines.append(format_nbest_line(res.sent_id, tr.tokens, decoder.nbest_features(tr.values),
                                                 tr.score))
        for k in totals:
            totals[k] += res.stats.get(k, 0)
        bar.update(1)
    bar.close()
    decode_s = time.perf_counter() - t1
    if cfg.output in ("", "-"):
        sys.stdout.write("".join(line + "\n" for line in out_lines))
        sys.stdout.flush()
    else:
        with atomic_write(cfg.output) as fh:
            fh.write("".join(line + "\n" for line in out_lines))
    if nbest:
        with atomic_write(nbest[0]) as fh:
            fh.write("".join(line + "\n" for line in nbest_lines))
    speed = len(lines) / decode_s if decode_s > 0 else float("inf")
    stats = {"sentences": len(lines), "load_seconds": round(load_s, 3), "decode_seconds": round(decode_s, 3),
             "sentences_per_second": round(speed, 3), "threads": cfg.threads,
             "stack": options.stack_size, "distortion_limit": options.distortion_limit,
             "table_limit": decoder.tm.table_limit, "beam_threshold": options.beam_threshold,
             "early_discarding_threshold": options.early_discarding_threshold, "search": decoder.search_kind,
             **totals}
    print(f"[smt-decode] decoded {len(lines)} sentences in {decode_s:.1f} s ({speed:.2f} sentences/s, "
          f"{cfg.threads} process(es), model loading excluded)", file=sys.stderr, flush=True)
    if cfg.stats_json:
        with atomic_write(cfg.stats_json) as fh:
            fh.write(json.dumps(stats, indent=2) + "\n")
    return stats
