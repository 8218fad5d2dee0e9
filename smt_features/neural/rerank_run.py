"""The ``smt-rerank`` run: read an n-best list, add neural / KenLM features, tune or apply weights, write.

What the features are: :mod:`smt_features.neural.rerank`; the weights file: Moses's ``[weight]``
text (:class:`smt_features.model.weights.Weights`).
"""
from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from nmt.core import config as C
from nmt.core.io import DataError, atomic_write, read_lines
from nmt.core.errors import UsageError, refuse_overwriting_inputs
from nmt.core.formats.nbest import NBestEntry, iter_nbest, write_nbest
from nmt.core.paths import CHECKPOINT_HELP, resolve_checkpoint
from nmt.scoring import PairScorer, naming_checkpoint
from smt_features.model.weights import Weights
from smt_features.neural import rerank as R
from smt_features.tune.optimizers import IMPLS, OPTIMIZERS


@dataclass
class RerankConfig:
    nbest: str = C.field("", help="Moses n-best list (plain or .gz)", required=True)
    src: str = C.field("", help="tokenized source sentences, line i = n-best id i (needed for --encdec; "
                                "when given, ids are checked against it)")
    output: str = C.field("", help="n-best list with the new features appended ('' = none written)")
    lm: list[str] = C.field([], help="neural LMs (nmt-lm-train model folders) as NAME=DIR ...")
    kenlm: list[str] = C.field([], help="KenLM models (ARPA or binary) as NAME=PATH ...")
    encdec: list[str] = C.field([], help="encoder–decoders (nmt-train model folders) as NAME=DIR ...")
    checkpoint: str = C.field("auto", help=CHECKPOINT_HELP)
    batch_size: int = C.field(256, help="hypotheses per scoring call")
    max_tokens: int = C.field(4000, help="padded tokens per forward pass inside a scoring call")
    prefix_tree: bool = C.field(False, help="the neural LMs and encoder–decoders read the hypotheses over their "
                                            "prefix tree (per source sentence for an encoder–decoder), each "
                                            "shared prefix once: faster, the same values up to float rounding "
                                            "(docs/rerank_report.md)")
    threads: int = C.field(2, help="torch intra-op threads")
    drop: list[str] = C.field([], help="feature groups of the n-best list to leave out (not tuned, not written): "
                                       "one enriched list serves systems with fewer features")
    weights: str = C.field("", help="moses.ini-style weight file ('Name= v ...' lines) to apply: totals "
                                    "recomputed, --one-best written; with --tune the starting point")
    tune: bool = C.field(False, help="tune the weights of all features with --optimizer (needs --ref)")
    ref: str = C.field("", help="tokenized reference, one line per source sentence (for --tune)")
    weights_out: str = C.field("", help="where --tune writes the weights (default: OUTPUT.weights, "
                                        "or NBEST.weights)")
    optimizer: str = C.field("mert", help="--tune's optimiser: mert (Och; Moses mert, --restarts random starts), "
                                          "kbmira (k-best batch MIRA, Cherry & Foster 2012; Moses kbmira) or pro "
                                          "(Hopkins & May 2011)")
    optimizer_impl: str = C.field("auto", help="the optimiser's code: auto (MERT's compiled line search when "
                                               "built; kbMIRA's and PRO's fast loops), compiled, or reference "
                                               "(the plain numpy code: the same weights, slower)")
    restarts: int = C.field(20, help="MERT random restarts")
    seed: int = C.field(1, help="the optimiser's random seed (MERT's starts, kbMIRA's order, PRO's samples)")
    one_best: str = C.field("", help="reranked 1-best (tokenized), one line per sentence")
    precision: int = C.field(6, help="significant digits of the numbers written (Moses: 6)")
    also: list[str] = C.field([], help="more lists to add the same features to, the models loaded once: NBEST SRC "
                                       "OUTPUT triples (with --output only: no --tune, --weights or --one-best)")


_MULTI = ("--lm", "--kenlm", "--encdec")


def check_repeats(argv: list[str]) -> None:
    """Refuse a model flag given twice (argparse would keep only the last list)."""
    for flag in _MULTI:
        if sum(1 for a in argv if a == flag or a.startswith(flag + "=")) > 1:
            raise SystemExit(f"smt-rerank: {flag} given more than once; list the models after one flag "
                             f"({flag} A=path1 B=path2)")


def _weights_out(cfg: RerankConfig) -> str:
    return cfg.weights_out or ((cfg.output or cfg.nbest) + ".weights")


def check_paths(cfg: RerankConfig, also: Sequence[tuple[str, str, str]] = ()) -> None:
    """Refuse, before anything is read or written, an output that is an input (or another output); ``also``:
    the ``--also`` triples (:func:`also_lists`)."""
    outputs = {"--output": cfg.output or None, "--one-best": cfg.one_best or None,
               "--weights-out": _weights_out(cfg) if cfg.tune else None}
    inputs: dict[str, str | None] = {"--nbest": cfg.nbest, "--src": cfg.src or None, "--ref": cfg.ref or None,
                                     "--weights": cfg.weights or None}
    for kind, items in (("--lm", cfg.lm), ("--kenlm", cfg.kenlm), ("--encdec", cfg.encdec)):
        for item in items:
            name, path = R.parse_named(item, kind)
            inputs[f"{kind} {name}"] = path
    for k, (nbest, src, output) in enumerate(also, start=1):
        inputs[f"--also {k}: NBEST"], inputs[f"--also {k}: SRC"] = nbest, src
        outputs[f"--also {k}: OUTPUT"] = output
    refuse_overwriting_inputs(outputs, inputs)


def also_lists(cfg: RerankConfig) -> list[tuple[str, str, str]]:
    """``--also``'s (NBEST, SRC, OUTPUT) triples; refused unless the run only adds features."""
    if not cfg.also:
        return []
    if len(cfg.also) % 3:
        raise UsageError(f"--also takes NBEST SRC OUTPUT triples; got {len(cfg.also)} path(s)")
    if not cfg.output or cfg.tune or cfg.weights or cfg.one_best:
        raise UsageError("--also adds features only: give --output, and no --tune, --weights or --one-best")
    if cfg.encdec and not all(cfg.also[1::3]):
        raise UsageError("--encdec needs each --also list's SRC")
    return [tuple(cfg.also[i:i + 3]) for i in range(0, len(cfg.also), 3)]  # type: ignore[misc]


def read_list(nbest: str, src: str) -> tuple[list[NBestEntry], list[list[str]] | None, int]:
    """An n-best list, its sources (checked against its ids) and its number of sentences."""
    entries = list(iter_nbest(nbest))
    if not entries:
        raise UsageError(f"{nbest}: empty n-best list")
    sources = None
    num = max(e.sent_id for e in entries) + 1
    if src:
        sources = [line.split() for line in read_lines(src, allow_empty=True)]
        R.check_ids(entries, len(sources), nbest)
        num = len(sources)
    return entries, sources, num


def load_model(path: str, which: str, build):
    """``build()`` with a vocabulary/checkpoint mismatch reported as ``CHECKPOINT: ...``."""
    with naming_checkpoint(resolve_checkpoint(path, which)):
        return build()


def feature_specs(lm: Sequence[str] = (), kenlm: Sequence[str] = (), encdec: Sequence[str] = (), *,
                  checkpoint: str = "auto", batch_size: int = 256, max_tokens: int = 4000, device: str = "cpu",
                  taken: Iterable[str] = (), prefix_tree: bool = False) -> list[R.FeatureSpec]:
    """The scorers of ``--lm``, ``--kenlm`` and ``--encdec`` items (``NAME=PATH``), in that order; a name in
    ``taken`` (the n-best list's own features) or given twice is refused. Used by smt-rerank and the Python API."""
    specs: list[R.FeatureSpec] = []
    seen = set(taken)
    for kind, items in (("lm", lm), ("kenlm", kenlm), ("encdec", encdec)):
        for item in items:
            name, path = R.parse_named(item, f"--{kind}")
            if name in seen:
                raise ValueError(f"--{kind}: feature name {name} is already used (n-best or another model)")
            seen.add(name)
            if kind == "lm":
                specs.append(R.FeatureSpec(name, lm=load_model(path, checkpoint, lambda: R.neural_lm_scorer(
                    path, which=checkpoint, batch_size=batch_size, max_tokens=max_tokens, device=device,
                    prefix_tree=prefix_tree))))
            elif kind == "kenlm":
                specs.append(R.FeatureSpec(name, lm=R.kenlm_scorer(path)))
            else:
                model = load_model(path, checkpoint, lambda: PairScorer.load(path, which=checkpoint, device=device,
                                                                             max_tokens=max_tokens))
                specs.append(R.FeatureSpec(name, pair=R.pair_score_fn(model, batch_size, prefix_tree), model=model))
    return specs


def run(cfg: RerankConfig) -> dict:
    """Read the n-best list, add the features, tune and/or apply weights, write what was asked for."""
    if not (cfg.output or cfg.one_best or cfg.tune):
        raise UsageError("nothing to do: give --output, --one-best and/or --tune")
    if cfg.tune and not cfg.ref:
        raise UsageError("--tune needs --ref")
    if cfg.optimizer not in OPTIMIZERS:
        raise UsageError(f"--optimizer must be one of {', '.join(OPTIMIZERS)}, not {cfg.optimizer!r}")
    if cfg.optimizer_impl not in IMPLS:
        raise UsageError(f"--optimizer-impl must be one of {', '.join(IMPLS)}, not {cfg.optimizer_impl!r}")
    if cfg.encdec and not cfg.src:
        raise UsageError("--encdec needs --src (the source sentence of each n-best id)")
    also = also_lists(cfg)
    check_paths(cfg, also)
    entries, sources, num = read_list(cfg.nbest, cfg.src)
    layout = [n for n, _ in entries[0].features]
    more_lists = []  # the --also lists, all read and checked before a model is loaded or a file written
    for nbest, src, output in also:
        more, more_sources, _ = read_list(nbest, src)
        if [n for n, _ in more[0].features] != layout:
            raise DataError(nbest, more[0].line_no, f"features {' '.join(n for n, _ in more[0].features)}; "
                                                    f"--nbest {cfg.nbest} has {' '.join(layout)}")
        more_lists.append((more, more_sources, nbest, output))
    specs = feature_specs(cfg.lm, cfg.kenlm, cfg.encdec, checkpoint=cfg.checkpoint, batch_size=cfg.batch_size,
                          max_tokens=cfg.max_tokens, taken=set(layout), prefix_tree=cfg.prefix_tree)

    def with_features(items: list[NBestEntry], srcs: list[list[str]] | None, path: str) -> list[NBestEntry]:
        items = R.add_features(items, R.compute_features(items, specs, srcs))
        return R.drop_features(items, cfg.drop, path) if cfg.drop else items

    entries = with_features(entries, sources, cfg.nbest)
    for more, more_sources, nbest, output in more_lists:  # the same models, each list written whole
        with atomic_write(output) as fh:
            write_nbest(fh, with_features(more, more_sources, nbest), precision=cfg.precision)

    weights = Weights.read(cfg.weights) if cfg.weights else None
    summary: dict = {"sentences": num, "hypotheses": len(entries), "new_features": [s.name for s in specs],
                     "dropped": list(cfg.drop)}
    if cfg.tune:
        refs = read_lines(cfg.ref, allow_empty=True)
        if len(refs) < num:
            raise DataError(cfg.ref, len(refs) + 1, f"{len(refs)} reference line(s) for {num} sentence(s)")
        weights, bleu = R.tune(entries, refs, num_sentences=num, init=weights, restarts=cfg.restarts,
                               seed=cfg.seed, optimizer=cfg.optimizer, impl=cfg.optimizer_impl)
        out_w = _weights_out(cfg)
        with atomic_write(out_w) as fh:
            fh.write(Weights(weights).ini_text(f"smt-rerank --tune ({OPTIMIZERS[cfg.optimizer]}, seed {cfg.seed}) on "
                                                 f"{cfg.nbest}: tokenized n-best BLEU {bleu:.2f}"))
        summary.update(tuned_bleu=bleu, weights_file=out_w, optimizer=cfg.optimizer)
        print(f"smt-rerank: {OPTIMIZERS[cfg.optimizer]} BLEU {bleu:.2f} (tokenized, on the n-best list); weights -> {out_w}",
              file=sys.stderr)
    if weights is not None:
        w = Weights(weights)
        entries = [NBestEntry(e.sent_id, e.tokens, e.features, w.total(e), e.extra, e.line_no) for e in entries]
    if cfg.output:
        with atomic_write(cfg.output) as fh:
            write_nbest(fh, entries, precision=cfg.precision)
    if cfg.one_best:
        if weights is None:
            raise ValueError("--one-best needs --weights or --tune (the input totals do not weigh the new "
                             "features)")
        best = R.one_best(entries, num)
        missing = sum(1 for b in best if b is None)
        if missing:
            print(f"smt-rerank: {missing} sentence(s) without hypotheses: empty lines", file=sys.stderr)
        with atomic_write(cfg.one_best) as fh:
            fh.write("".join(" ".join(b or []) + "\n" for b in best))
    summary["output"] = cfg.output
    return summary
