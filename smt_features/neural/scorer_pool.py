"""The scorers of ``smt-rescore``: the encoder–decoder(s) in this process, or in a pool of worker processes.

Either scorer takes a window's pairs with ``submit(srcs, tgts)`` and returns a callable giving its
result (``log_prob``, ``src_unk``, ``tgt_unk``, ``sources`` and with a reverse model ``rev_log_prob``).
The models are reached through :mod:`nmt.scoring` only (imported inside the functions: no torch at import).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from nmt.core.paths import resolve_checkpoint

log = logging.getLogger(__name__)


@dataclass
class EngineSpec:
    """What a scoring process needs to build its engines (picklable)."""

    model: str
    reverse_model: str
    which: str
    max_tokens: int
    device: str
    amp: str
    softmax_block: int
    threads: int


def build_scorers(spec: EngineSpec):
    """The (forward, reverse or None) :class:`~nmt.scoring.PairScorer` of ``spec``."""
    from nmt.scoring import PairScorer, naming_checkpoint, set_threads

    set_threads(max(1, spec.threads))
    kw = dict(max_tokens=spec.max_tokens, device=spec.device, amp=spec.amp, softmax_block=spec.softmax_block)
    engines = []
    for model in (spec.model, spec.reverse_model):
        if not model:
            engines.append(None)
            continue
        ckpt = str(resolve_checkpoint(model, spec.which))
        with naming_checkpoint(ckpt):
            engines.append(PairScorer.load(ckpt, **kw))
    return engines[0], engines[1]


def _score_job(engines, srcs: list, tgts: list) -> dict[str, Any]:
    fwd, rev = engines
    out = fwd.score_window(srcs, tgts)
    result = {"log_prob": out.log_prob, "src_unk": out.src_unk, "tgt_unk": out.tgt_unk, "sources": out.num_sources}
    if rev is not None:
        result["rev_log_prob"] = rev.score_window(tgts, srcs).log_prob
    return result


_WORKER_ENGINES = None


def _worker_init(spec: EngineSpec) -> None:
    global _WORKER_ENGINES
    _WORKER_ENGINES = build_scorers(spec)


def _noop() -> None:
    return None


def _worker_score(srcs: list, tgts: list) -> dict[str, Any]:
    return _score_job(_WORKER_ENGINES, srcs, tgts)


class InlineScorer:
    """Scores each window in this process, when it is submitted."""

    def __init__(self, engines):
        self.engines = engines

    def submit(self, srcs, tgts):
        result = _score_job(self.engines, srcs, tgts)
        return lambda: result

    def close(self):
        pass


class PoolScorer:
    """Scores whole windows in ``processes`` worker processes (each loads its own models); results in order."""

    def __init__(self, spec: EngineSpec, processes: int):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.pool = ProcessPoolExecutor(max_workers=processes, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=_worker_init, initargs=(spec,))
        for _ in range(processes):  # workers start (and load the models) on submission: start them all now
            self.pool.submit(_noop)

    def submit(self, srcs, tgts):
        return self.pool.submit(_worker_score, srcs, tgts).result

    def close(self):
        self.pool.shutdown(wait=True, cancel_futures=True)


def check_models(fwd, rev) -> None:
    if rev is None:
        return
    same = fwd.src_vocab.fingerprint() == rev.src_vocab.fingerprint() and \
        fwd.tgt_vocab.fingerprint() == rev.tgt_vocab.fingerprint()
    if same and fwd.src_vocab.fingerprint() != fwd.tgt_vocab.fingerprint():
        raise ValueError("--reverse-model has the same source/target vocabularies as --model: it scores the same "
                         "direction; train it target->source")
    if fwd.src_vocab.fingerprint() != rev.tgt_vocab.fingerprint() or \
            fwd.tgt_vocab.fingerprint() != rev.src_vocab.fingerprint():
        log.warning("--reverse-model's vocabularies are not those of --model swapped; check it was trained "
                    "target->source on the same data")
