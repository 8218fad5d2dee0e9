"""The Python API: load a finished system, translate raw sentences (:class:`System`).

    from smt_features.serve.api import System

    with System.load("work/experiment/multi30k", system="+all+RNNsearch", run=1, threads=2) as system:
        for r in system.translate(["A man in an orange hat."], nbest=5, attention=True):
            print(r.translation, r.best.total, [h.text for h in r.nbest])

A translation is the full system's: the tuned moses.ini decodes (``smt-decode``'s decoder, its worker processes
forked once at load); for a reranked row its n-best list of the size the weights were tuned on gets the neural
features (``smt-rerank``'s scorers and functions), and the tuned reranking weights pick the 1-best (ties: the
earlier hypothesis). Values are rounded as the n-best files of the recipe round them (6 significant digits), so
the API's 1-best is the recipe's. Raw text in, raw text out (:mod:`smt_features.serve.text`). Several threads may
call :meth:`System.translate` at once: the workers take every call's sentences from one queue; the neural
scoring runs one batch at a time.
"""
from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nmt.core.io import DataError
from nmt.core.errors import UsageError
from nmt.core.paths import resolve_checkpoint
from smt_features.decode.corpus import DecodingPool
from smt_features.decode.decoder import Decoder
from smt_features.decode.hypothesis import DecodeResult
from smt_features.decode.run import DecodeConfig, load_decoder
from smt_features.model.moses_ini import read_moses_ini, resolve_feature_path
from smt_features.model.weights import Weights
from smt_features.neural import rerank as R
from smt_features.neural.rerank_run import feature_specs
from smt_features.serve import explain
from smt_features.serve.alignments import PhraseAlignments
from smt_features.serve.layout import SystemFiles, from_work
from smt_features.serve.results import Attention, Hypothesis, SentenceResult
from smt_features.serve.text import TextPipeline

log = logging.getLogger(__name__)


def _distinct(hyps: list[Hypothesis]) -> list[Hypothesis]:
    """The first (best) hypothesis of each target string."""
    seen: set[tuple[str, ...]] = set()
    return [h for h in hyps if not (tuple(h.tokens) in seen or seen.add(tuple(h.tokens)))]


@dataclass
class Request:
    """Raw sentences and what to return for them: ``nbest`` hypotheses (at most the reranked list's size), word
    alignments (``trace``), the attention of the system's attention model (``attention``); ``distinct``: a system
    without reranking decodes a distinct n-best list, a reranked one drops the repeats of its reranked list."""

    sentences: list[str]
    nbest: int = 1
    trace: bool = False
    scores: bool = False
    attention: bool = False
    distinct: bool = False  # the n-best list without repeated target strings (Moses's nbest-distinct)


@contextlib.contextmanager
def loading(path: str | Path, what: str) -> Iterator[None]:
    """Inside: a failure to load ``path`` becomes ``PATH: cannot load WHAT: reason`` (bad input, exit 2), unless
    it already names its file."""
    try:
        yield
    except (DataError, UsageError, OSError):
        raise
    except Exception as err:  # noqa: BLE001 - torch, KenLM, numpy: any failure to read a model file
        raise UsageError(f"{path}: cannot load {what}: {type(err).__name__}: {err}") from None


class System:
    """A loaded system (see the module docstring); build it with :meth:`load`, release it with :meth:`close`."""

    def __init__(self, files: SystemFiles, decoder: Decoder, pool: DecodingPool, text: TextPipeline, *,
                 specs: list[R.FeatureSpec], rerank_weights: Weights | None, alignments: PhraseAlignments | None,
                 attention_feature: str | None) -> None:
        self.files, self.decoder, self.pool, self.text = files, decoder, pool, text
        self.specs, self.rerank_weights, self.alignments = specs, rerank_weights, alignments
        self.attention_feature = attention_feature
        self._decode_lock = threading.Lock()  # the in-process decoder (no workers) is not thread-safe
        self._neural_lock = threading.Lock()
        self.loaded_at = time.time()

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, work: str | Path | None = None, *, system: str = "Baseline", run: int = 1,
             files: SystemFiles | None = None, threads: int = 1, word_alignment: bool = True, device: str = "cpu",
             batch_size: int = 256, max_tokens: int = 4000, lm_max_tokens: int = 256, optimizer: str = "mert",
             encdec: str | Path | None = None, rnnsearch: str | Path | None = None,
             nbest_size: int | None = None, decode: DecodeConfig | None = None,
             torch_threads: int | None = None, prefix_tree: bool = True) -> "System":
        """Load row ``system`` of run ``run`` of the experiment in ``work`` (:func:`~smt_features.serve.layout.
        from_work`), or the explicit ``files``. ``threads``: decoder worker processes; ``word_alignment``: read
        the phrase pairs' alignments (for traces); ``decode``: smt-decode's search options (its moses_ini is
        replaced); ``max_tokens`` / ``lm_max_tokens``: padded tokens per forward pass of the encoder–decoders / the
        LMs (an LM's softmax over the whole vocabulary is cheapest per token in small passes that stay in the
        CPU's caches); ``torch_threads``: torch's threads for the neural scorers (1 when the decoder's workers
        take the other cores: more threads then wait on each other); ``prefix_tree``: the neural features read each
        sentence's n-best list over its prefix tree, each shared prefix once (smt-rerank --prefix-tree: the same
        values up to float rounding, several times faster). A file that cannot be loaded raises naming it."""
        if files is None:
            if work is None:
                raise UsageError("give an experiment work folder or the system's files")
            files = from_work(work, system, run, optimizer=optimizer, encdec=encdec, rnnsearch=rnnsearch,
                              nbest_size=nbest_size)
        files.check()
        t0 = time.perf_counter()
        text = TextPipeline(files.src_lang, files.tgt_lang, lowercase=files.lowercase, truecase=files.truecase)
        cfg = decode or DecodeConfig()
        cfg.moses_ini, cfg.threads = str(files.moses_ini), max(1, threads)
        ini = read_moses_ini(files.moses_ini)
        with loading(files.moses_ini, "the decoder's models"):
            decoder = load_decoder(cfg, ini)
        alignments = None
        if word_alignment:
            table = next(resolve_feature_path(f.get("path") or "", ini) for f in ini.features
                         if f.type.startswith("PhraseDictionary"))
            with loading(table, "the phrase table's alignments"):
                alignments = PhraseAlignments.read(table)
        # fork the decoder's workers before torch is loaded in this process
        pool = DecodingPool(decoder, cfg.threads, ignore_interrupt=True)
        try:
            if files.reranked and torch_threads:
                from nmt.scoring import set_threads

                set_threads(torch_threads)
            specs, weights, attention = cls._load_reranking(files, decoder, device, batch_size,
                                                            {"lm": lm_max_tokens, "kenlm": 0, "encdec": max_tokens},
                                                            prefix_tree)
        except BaseException:
            pool.close()
            raise
        log.info("loaded %s (%s) in %.1f s", files.name, files.moses_ini, time.perf_counter() - t0)
        return cls(files, decoder, pool, text, specs=specs, rerank_weights=weights, alignments=alignments,
                   attention_feature=attention)

    @staticmethod
    def _load_reranking(files: SystemFiles, decoder: Decoder, device: str, batch_size: int,
                        max_tokens: dict[str, int], prefix_tree: bool = True,
                        ) -> tuple[list[R.FeatureSpec], Weights | None, str | None]:
        """The neural features (in smt-rerank's order), the reranking weights, the attention model's feature."""
        if files.rerank_weights is None:
            return [], None, None
        weights = Weights.read(files.rerank_weights)
        taken = [name for name, _ in decoder.nbest_features([0.0] * decoder.features.size)]
        specs: list[R.FeatureSpec] = []
        for kind in ("lm", "kenlm", "encdec"):
            for item in getattr(files, kind):
                path = R.parse_named(item, f"--{kind}")[1]
                if kind != "kenlm":
                    path = str(resolve_checkpoint(path, files.checkpoint))  # a missing one: FileNotFoundError
                with loading(path, f"the {kind} model"):
                    specs += feature_specs(**{kind: [item]}, checkpoint=files.checkpoint, batch_size=batch_size,
                                           max_tokens=max_tokens[kind], device=device, taken=taken,
                                           prefix_tree=prefix_tree)
                taken.append(specs[-1].name)
        missing = [n for n in taken if n not in weights]
        if missing:
            raise UsageError(f"{files.rerank_weights}: no weights for {', '.join(missing)} (the n-best list's "
                             f"features are {' '.join(taken)})")
        attention = None
        for spec in specs:  # the first encoder–decoder that attends (RNNsearch)
            if spec.model is not None:
                try:
                    spec.model.attention([["a"]], [["a"]])
                except ValueError:
                    continue
                attention = spec.name
                break
        return specs, weights, attention

    def close(self) -> None:
        """Stop the decoder's worker processes."""
        self.pool.close()

    def __enter__(self) -> "System":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ translating
    @property
    def name(self) -> str:
        return self.files.name

    @property
    def max_nbest(self) -> int:
        """The most hypotheses a translation can list: a reranked system's tuned n-best size (else no limit: 0)."""
        return self.files.nbest_size if self.files.reranked else 0

    def translate(self, sentences: str | Sequence[str], *, nbest: int = 1, trace: bool = False,
                  scores: bool = False, attention: bool = False) -> list[SentenceResult]:
        """Translate raw sentences (one string: one sentence); one :class:`SentenceResult` each, in order."""
        if isinstance(sentences, str):
            sentences = [sentences]
        return self.translate_requests([Request(list(sentences), nbest, trace, scores, attention)])[0]

    def translate_requests(self, requests: Sequence[Request]) -> list[list[SentenceResult]]:
        """Several requests as one batch: their sentences are decoded together and scored together."""
        flat = [(r, s) for r in requests for s in r.sentences]
        tokens = [self.text.source_tokens(s) for _, s in flat]
        sizes = [self.files.nbest_size if self.files.reranked else (r.nbest if r.nbest > 1 else 0) for r, _ in flat]
        decoded = self._decode([" ".join(t) for t in tokens], sizes,
                               [r.distinct and not self.files.reranked for r, _ in flat])
        if self.files.reranked:
            hyps = self._rerank(decoded, tokens, [r.trace for r, _ in flat])
        else:
            hyps = [self._direct(res, src, r.trace) for res, src, (r, _) in zip(decoded, tokens, flat)]
        results = [SentenceResult(s, src, (_distinct(hs) if r.distinct else hs)[:max(1, r.nbest)],
                                  options={"nbest": r.nbest, "scores": r.scores, "trace": r.trace})
                   for (r, s), src, hs in zip(flat, tokens, hyps)]
        self._add_attention([res for res, (r, _) in zip(results, flat) if r.attention])
        out, k = [], 0
        for r in requests:
            out.append(results[k:k + len(r.sentences)])
            k += len(r.sentences)
        return out

    def _decode(self, lines: list[str], sizes: list[int], distinct: list[bool]) -> list[DecodeResult]:
        lock = self._decode_lock if self.pool.threads <= 1 else contextlib.nullcontext()
        with lock:
            return list(self.pool.decode(lines, nbest=sizes, distinct=distinct, chunksize=1))

    def _direct(self, res: DecodeResult, src: list[str], trace: bool) -> list[Hypothesis]:
        """A system without reranking: the decoder's 1-best, or its n-best list, with the moses.ini weights."""
        return [Hypothesis(self.text.target_text(list(tr.tokens)), list(tr.tokens), tr.score,
                           explain.decoder_features(self.decoder, tr),
                           explain.segments(tr, src, self.alignments if trace else None))
                for tr in (res.nbest or [res.best])]

    def _rerank(self, decoded: list[DecodeResult], sources: list[list[str]], trace: list[bool]
                ) -> list[list[Hypothesis]]:
        """smt-rerank's steps on the batch's n-best lists: features added, totals Σ λ·h, reranked best first."""
        assert self.rerank_weights is not None
        translations = [res.nbest or [res.best] for res in decoded]
        entries = [explain.nbest_entry(self.decoder, tr, i) for i, trs in enumerate(translations) for tr in trs
                   if sources[i]]  # an empty sentence is not scored (the encoder–decoder refuses it)
        if entries:
            with self._neural_lock:
                values = self._features(entries, sources)
            entries = R.add_features(entries, {n: [explain.moses_value(v) for v in vals] for n, vals in values.items()})
        by_sentence: dict[int, list] = {}
        for e in entries:
            by_sentence.setdefault(e.sent_id, []).append(e)
        out = []
        for i, trs in enumerate(translations):
            if i not in by_sentence:
                out.append(self._direct(decoded[i], sources[i], trace[i])[:1])
                continue
            ents = by_sentence[i]
            totals = [self.rerank_weights.total(e) for e in ents]
            order = sorted(range(len(ents)), key=lambda k: -totals[k])  # stable: ties keep the earlier line
            out.append([Hypothesis(self.text.target_text(ents[k].tokens), ents[k].tokens, totals[k],
                                   explain.entry_features(ents[k], self.rerank_weights),
                                   explain.segments(trs[k], sources[i], self.alignments if trace[i] else None))
                        for k in order])
        return out

    def _features(self, entries: list, sources: list[list[str]]) -> dict[str, list[float]]:
        """smt-rerank's feature values of the batch's n-best entries (in ``self.specs`` order): each LM scores the
        whole batch's hypotheses at once; an encoder–decoder scores one sentence's list at a time (measured: pairs
        of several sources in one pass pad every source to the longest and cost about twice as much)."""
        lms = [s for s in self.specs if s.pair is None]
        pairs = [s for s in self.specs if s.pair is not None]
        values = R.compute_features(entries, lms, sources) if lms else {}
        if pairs:
            per: dict[str, list[float]] = {s.name: [] for s in pairs}
            lo = 0
            while lo < len(entries):  # the entries of one sentence are consecutive
                hi = lo
                while hi < len(entries) and entries[hi].sent_id == entries[lo].sent_id:
                    hi += 1
                for name, vals in R.compute_features(entries[lo:hi], pairs, sources).items():
                    per[name] += vals
                lo = hi
            values.update(per)
        return {s.name: values[s.name] for s in self.specs}

    def _add_attention(self, results: list[SentenceResult]) -> None:
        """RNNsearch's attention over each result's 1-best (teacher-forced), where the system has the model."""
        spec = next((s for s in self.specs if s.name == self.attention_feature), None)
        todo = [r for r in results if r.source_tokens]
        if spec is None or not todo:
            return
        with self._neural_lock:
            rows = spec.model.attention([r.source_tokens for r in todo], [r.best.tokens for r in todo])
        for r, a in zip(todo, rows):
            r.attention = Attention(spec.name, r.source_tokens + ["</s>"], r.best.tokens + ["</s>"], a)

    def info(self) -> dict[str, Any]:
        """What the system is: its files, features, weights and models (:mod:`smt_features.serve.info`)."""
        from smt_features.serve.info import system_info

        return system_info(self.files, self.decoder, processes=self.pool.threads, rerank_weights=self.rerank_weights,
                           attention=self.attention_feature, word_alignment=self.alignments is not None)
