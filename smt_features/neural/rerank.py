"""N-best reranking with neural features: add log-probabilities from neural LMs, KenLM and the
RNN Encoder–Decoder to a Moses n-best list, tune the weights with MERT, pick the reranked 1-best.

Features (all natural log, one value each, appended after the list's own groups in the order
given):

* **neural LM** (any ``nmt-lm-train`` model: LSTM, RMN, Mogrifier): ``ln p(hyp)`` including the
  ``</s>`` that ends the hypothesis, each hypothesis from a fresh state (``<s>`` context, or
  ``</s>`` for stream-trained models) — the value ``nmt-lm-score`` prints;
* **KenLM**: ``ln p(hyp </s> | <s>)`` (``KenLMScorer.score_sentence``; ARPA log10 × ln 10);
* **encoder–decoder**: sentence-level ``ln p(hyp | source)`` incl. ``</s>`` (``nmt.scoring.PairScorer``);
  the source is line ``id`` (0-based) of the ``--src`` file.

Each distinct hypothesis (per LM) or distinct ``(id, hypothesis)`` pair (encoder–decoder) is scored
once, in batches. ``torch`` / ``nmt`` are imported only when a neural scorer is built.

Totals: :func:`add_features` keeps each line's total as it was unless weights are given, in
which case ``total = Σ λ·h`` over all features of the line (the new ones included).
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nmt.core.formats.nbest import NBestEntry, NBestError
from smt_features.model.weights import Weights, layout_of

# a batch scorer: list of tokenized hypotheses -> one ln p per hypothesis
LMScoreFn = Callable[[Sequence[Sequence[str]]], list[float]]
# a pair scorer: (sources, hypotheses) -> one ln p(hyp | src) per pair
PairScoreFn = Callable[[Sequence[Sequence[str]], Sequence[Sequence[str]]], list[float]]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


def parse_named(spec: str, what: str = "feature") -> tuple[str, str]:
    """``"LSTM0=path/to/model"`` → ``("LSTM0", "path/to/model")``."""
    name, eq, path = spec.partition("=")
    if not eq or not name or not path:
        raise ValueError(f"{what}: expected NAME=PATH, got {spec!r}")
    if not _NAME.match(name):
        raise ValueError(f"{what}: feature name {name!r} must be a letter or '_' followed by letters, digits, "
                         "'_', '.', '-' (Moses style: LSTM0)")
    return name, path


# ------------------------------------------------------------------------------------- scorers

def _batched(items: Sequence, batch_size: int) -> Iterable[Sequence]:
    step = max(1, int(batch_size))
    for lo in range(0, len(items), step):
        yield items[lo:lo + step]


def neural_lm_scorer(model_dir: str | Path, *, which: str = "auto", batch_size: int = 256,
                     max_tokens: int = 4000, device: str = "cpu", prefix_tree: bool = False) -> LMScoreFn:
    """ln p(hyp incl. </s>) under an ``nmt-lm-train`` model, each hypothesis from a fresh state (with
    ``prefix_tree``: over the hypotheses' prefix tree, each shared prefix read once)."""
    from nmt.scoring import LMScorer

    return LMScorer.load(model_dir, which=which, device=device, batch_size=batch_size, max_tokens=max_tokens,
                         prefix_tree=prefix_tree).score_sentences


def kenlm_scorer(path: str | Path, map_unk: str | None = "auto") -> LMScoreFn:
    """ln p(hyp </s> | <s>) under a KenLM model; ``map_unk="auto"`` reads the model's sidecar as ``smt-kenlm eval``."""
    from smt_features.model.kenlm import KenLMScorer, recorded_map_unk

    if map_unk == "auto":
        map_unk = recorded_map_unk(Path(path))
    scorer = KenLMScorer(path, map_unk=map_unk or None)

    def score(hyps: Sequence[Sequence[str]]) -> list[float]:
        # KenLM refuses an empty string: an empty hypothesis is just </s>
        return [scorer.score_sentence(list(h)) if h else scorer.model.score("", bos=True, eos=True) * math.log(10)
                for h in hyps]

    return score


def encdec_scorer(model_dir: str | Path, *, which: str = "auto", batch_size: int = 256, max_tokens: int = 4000,
                  device: str = "cpu") -> PairScoreFn:
    """ln p(hyp | src) incl. </s> under an ``nmt-train`` encoder–decoder (``PairScorer``)."""
    from nmt.scoring import PairScorer

    return pair_score_fn(PairScorer.load(model_dir, which=which, device=device, max_tokens=max_tokens), batch_size)


def pair_score_fn(scorer: Any, batch_size: int = 256, prefix_tree: bool = False) -> PairScoreFn:
    """The pair scorer of a loaded ``nmt.scoring.PairScorer``: ln p(hyp | src) incl. </s>, empty hypotheses too
    (with ``prefix_tree``: each source's hypotheses over their prefix tree, ``PairScorer.tree_log_probs``)."""

    def score(srcs: Sequence[Sequence[str]], hyps: Sequence[Sequence[str]]) -> list[float]:
        if any(not s for s in srcs):
            raise ValueError("the encoder–decoder cannot score an empty source sentence")
        if prefix_tree:
            return scorer.tree_log_probs(srcs, hyps)
        out: list[float | None] = [None] * len(hyps)
        full = [i for i, h in enumerate(hyps) if h]
        empty = [i for i, h in enumerate(hyps) if not h]
        for chunk in _batched(full, batch_size):
            res = scorer.score_pairs([list(srcs[i]) for i in chunk], [list(hyps[i]) for i in chunk])
            for i, r in zip(chunk, res):
                out[i] = r.log_prob
        # ln p(</s> | src) for empty hypotheses (score_pairs refuses an empty side)
        for i, v in zip(empty, scorer.empty_target_log_probs([srcs[i] for i in empty], batch_size) if empty else []):
            out[i] = v
        return out  # type: ignore[return-value]

    score.prefix_tree = prefix_tree  # type: ignore[attr-defined]  # which path it takes (for callers and tests)
    return score


# ------------------------------------------------------------------------------------- features

@dataclass
class FeatureSpec:
    """A named feature: an LM-type scorer (hypothesis only) or a pair scorer (source, hypothesis)."""

    name: str
    lm: LMScoreFn | None = None
    pair: PairScoreFn | None = None
    model: Any = None  # the loaded model behind ``pair``, when kept (an ``nmt.scoring.PairScorer``: its attention)


def check_ids(entries: Sequence[NBestEntry], num_sources: int, path: str = "<n-best>") -> None:
    """Every sentence id must index a line of the source file (0-based)."""
    for e in entries:
        if e.sent_id >= num_sources:
            raise NBestError(path, e.line_no, f"sentence id {e.sent_id} is out of range: the source file has "
                                              f"{num_sources} line(s) (ids 0..{num_sources - 1})")


def compute_features(entries: Sequence[NBestEntry], specs: Sequence[FeatureSpec],
                     sources: Sequence[Sequence[str]] | None = None) -> dict[str, list[float]]:
    """Value of each feature for each entry (in entry order); distinct inputs are scored once."""
    out: dict[str, list[float]] = {}
    for spec in specs:
        if spec.lm is not None:
            keys = list(dict.fromkeys(tuple(e.tokens) for e in entries))
            vals = spec.lm([list(k) for k in keys])
            table = dict(zip(keys, vals))
            out[spec.name] = [float(table[tuple(e.tokens)]) for e in entries]
        elif spec.pair is not None:
            if sources is None:
                raise ValueError(f"feature {spec.name}: the encoder–decoder needs the source sentences (--src)")
            pkeys = list(dict.fromkeys((e.sent_id, tuple(e.tokens)) for e in entries))
            vals = spec.pair([list(sources[i]) for i, _ in pkeys], [list(h) for _, h in pkeys])
            ptable = dict(zip(pkeys, vals))
            out[spec.name] = [float(ptable[(e.sent_id, tuple(e.tokens))]) for e in entries]
        else:
            raise ValueError(f"feature {spec.name}: no scorer")
        if len(out[spec.name]) != len(entries):
            raise RuntimeError(f"feature {spec.name}: scorer returned a wrong number of values")
    return out


def add_features(entries: Sequence[NBestEntry], values: Mapping[str, Sequence[float]],
                 weights: Mapping[str, Sequence[float]] | None = None) -> list[NBestEntry]:
    """New entries with the feature groups ``values`` appended (one value each).

    Totals: recomputed as ``Σ λ·h`` when ``weights`` is given, else left as they were.
    """
    out = []
    w = Weights(weights) if weights is not None else None
    for i, e in enumerate(entries):
        existing = {n for n, _ in e.features}
        clash = existing & set(values)
        if clash:
            raise NBestError("<n-best>", e.line_no, f"feature(s) {sorted(clash)} already in the n-best list")
        feats = [(n, list(v)) for n, v in e.features] + [(n, [float(vals[i])]) for n, vals in values.items()]
        ne = NBestEntry(e.sent_id, list(e.tokens), feats, e.total, list(e.extra), e.line_no)
        if w is not None:
            ne.total = w.total(ne)
        out.append(ne)
    return out


# ------------------------------------------------------------------------------------- n-best lists

def drop_features(entries: Sequence[NBestEntry], names: Sequence[str], where: str = "<n-best>"
                  ) -> list[NBestEntry]:
    """The entries without the feature groups ``names`` (each must be a group of the list)."""
    present = {n for e in entries[:1] for n, _ in e.features}
    unknown = [n for n in names if n not in present]
    if unknown:
        raise ValueError(f"{where}: cannot drop {', '.join(unknown)}: the list's features are "
                         f"{', '.join(n for n, _ in entries[0].features)}")
    gone = set(names)
    return [NBestEntry(e.sent_id, e.tokens, [(n, v) for n, v in e.features if n not in gone], e.total, e.extra,
                       e.line_no) for e in entries]


def tune(entries: Sequence[NBestEntry], references: Sequence[str], *, num_sentences: int | None = None,
         init: Mapping[str, Sequence[float]] | None = None, restarts: int = 20, seed: int = 1,
         optimizer: str = "mert", impl: str = "auto") -> tuple[dict[str, list[float]], float]:
    """Tune all features on the list: ``optimizer`` mert (``restarts`` random starts besides ``init``), kbmira
    or pro, ``impl`` as ``--optimizer-impl`` (:func:`smt_features.tune.optimizers.optimise_fixed_pool`);
    returns ``(grouped weights, BLEU %)``.

    Start: ``init`` where given, features missing from it start at 0 (if ``init`` is None, every
    feature starts at ``1/D``). BLEU: tokenized corpus BLEU in percent on the n-best list.
    """
    from smt_features.tune.optimizers import optimise_fixed_pool
    from smt_features.tune.pool import NBestPool

    if not entries:
        raise ValueError("empty n-best list")
    n = num_sentences if num_sentences is not None else max(e.sent_id for e in entries) + 1
    if len(references) < n:
        raise ValueError(f"{len(references)} references for {n} sentences")
    lists: list[list[NBestEntry]] = [[] for _ in range(n)]
    for e in entries:
        lists[e.sent_id].append(e)
    layout = layout_of(entries[0].features)
    dim = sum(k for _, k in layout)
    init_flat = Weights(init).to_flat(layout, default=0.0) if init is not None else Weights().to_flat(
        layout, default=1.0 / dim)
    keep = [i for i in range(n) if lists[i]]
    pool = NBestPool.from_lists([lists[i] for i in keep], [references[i] for i in keep])
    names = pool.feature_names or []
    vector, bleu = optimise_fixed_pool(pool, [init_flat[n] for n in names], optimizer, seed=seed,
                                       restarts=restarts, impl=impl)
    weights = {n: float(v) for n, v in zip(names, vector)}
    return Weights.from_flat(weights, layout), float(bleu)  # type: ignore[arg-type]


def one_best(entries: Sequence[NBestEntry], num_sentences: int | None = None,
             weights: Mapping[str, Sequence[float]] | None = None) -> list[list[str] | None]:
    """Highest-scoring hypothesis per sentence id (by ``Σ λ·h`` with ``weights``, else by the line's total);
    ties go to the earliest line; ``None`` for an id without hypotheses."""
    n = num_sentences if num_sentences is not None else (max((e.sent_id for e in entries), default=-1) + 1)
    best: list[tuple[float, NBestEntry] | None] = [None] * n
    w = Weights(weights) if weights is not None else None
    for e in entries:
        score = w.total(e) if w is not None else e.total
        cur = best[e.sent_id]
        if cur is None or score > cur[0]:
            best[e.sent_id] = (score, e)
    return [None if b is None else list(b[1].tokens) for b in best]
