"""The compiled search core of the decoder behind a public interface (``SearchOptions.search``).

``smt_features/decode/csrc/search.cpp`` re-implements the Python stack search
(:mod:`smt_features.decode.stack_search`) in C++ and
queries KenLM through its C++ API; it is built by ``third_party/build_search.sh``
into ``smt_features/decode/_search*.so``. Results are identical to the Python search
(same expansion order, pruning, recombination, LM caches and state numbering,
floating-point operations in the same order; ``tests/smt/decode/test_fast_search.py``
compares both), so the Python search stays the reference and the fallback.

Division of labour: Python still builds the translation options
(``decoder.tables.collect_options`` — stateless features, future scores, score
bounds, table limit, span order); each option is registered once with the
core (its weighted stateless score, future score, bound, target word ids,
model-side LM words and per-position LM bounds). Per sentence the core gets
the option ids of every span and does the search — KenLM, distance
distortion, lexicalized reordering (each option's six log values and forward-values id), stacks, recombination arcs and n-best extraction — and returns
only the hypotheses on the best path and on the n-best paths, which
:meth:`Decoder.path_translation` turns into :class:`Translation` objects as
before.

``search='auto'`` (default) uses the core when the extension imports and the
model is one it handles (KenLM, distance distortion and lexicalized reordering as the only stateful
features, each LM loadable from its file and scoring exactly as the Python
``kenlm`` module does); otherwise the Python search runs (one log line says
why). ``'compiled'`` raises when the extension is missing; ``'python'`` never
uses it. Sentences longer than the core's ``MAX_WORDS`` (512) and the empty
sentence go to the Python search.
"""
from __future__ import annotations

import functools
import logging
import time
from pathlib import Path

from nmt.core.errors import UsageError

from smt_features.decode.hypothesis import (
    H_ARCS, H_COV, H_SCORE, O_FID, O_FUT, O_LMW, O_LR, O_REST, O_SL, O_TID, O_UB, O_WIDS, DecodeResult, chain,
)
from smt_features.model.features import LN10, DistortionFeature
from smt_features.model.kenlm import DEFAULT_LOAD, LOAD_METHODS
from smt_features.model.kenlm_feature import KenLMFeature
from smt_features.model.reordering import LexicalReorderingFeature

log = logging.getLogger(__name__)

BUILD_COMMAND = "bash third_party/build_search.sh"
SEARCH_MODES = ("python", "compiled", "auto")
ABI_VERSION = 3
STAT_KEYS = ("expanded", "created", "recombined", "discarded", "pruned", "lm_misses", "lm_states", "bounded",
             "abandoned")
_FOUND, _NO_HYPOTHESIS, _EMPTY_FINALS = 0, 1, 2


class CompiledSearchUnavailable(UsageError):
    """``search='compiled'`` was asked for but the extension is not built (or is stale)."""


def load_extension():
    """``(module, None)`` when ``smt_features.decode._search`` imports and is current, else ``(None, why)``."""
    try:
        from smt_features.decode import _search
    except ImportError as err:
        return None, f"cannot import smt_features.decode._search: {err}"
    if getattr(_search, "ABI_VERSION", None) != ABI_VERSION:
        return None, "smt_features.decode._search is from another version of this code; rebuild it"
    return _search, None


def available() -> bool:
    """True when the compiled search core is built and importable."""
    return load_extension()[0] is not None


def _model_path(lm: KenLMFeature) -> str | None:
    """The file the compiled core loads for ``lm`` (the scorer's own path first)."""
    for cand in (getattr(lm.scorer, "path", None), lm.path):
        if cand and Path(cand).is_file():
            return str(cand)
    return None


def unsupported_reason(decoder) -> str | None:
    """Why the compiled core cannot run this decoder's model, or None when it can."""
    for f in decoder.features:
        if f.stateful and type(f) not in (KenLMFeature, DistortionFeature, LexicalReorderingFeature):
            return f"stateful feature {f.name} ({type(f).__name__}) is not handled by the compiled search"
    for lm in decoder.lms:
        if _model_path(lm) is None:
            return f"{lm.name}: no model file for the compiled search to load"
    return None


def attach(decoder) -> "FastSearch | None":
    """The compiled search for ``decoder`` per ``decoder.options.search``, or None (Python search)."""
    mode = decoder.options.search
    if mode == "python":
        return None
    ext, why = load_extension()
    if ext is None:
        if mode == "compiled":
            raise CompiledSearchUnavailable(f"search='compiled' but the compiled search core is not available ({why}); "
                               f"build it with `{BUILD_COMMAND}` from the repository root")
        log.info("compiled search core not built (%s); using the Python search (build: %s)", why, BUILD_COMMAND)
        return None
    reason = unsupported_reason(decoder)
    fast = None
    if reason is None:
        try:
            fast = FastSearch(decoder, ext)
        except Exception as err:  # e.g. a model KenLM's C++ loader refuses, or one that scores differently
            reason = f"the compiled search cannot use the language model(s): {err}"
    if reason is not None:
        (log.warning if mode == "compiled" else log.info)("%s; using the Python search", reason)
        return None
    return fast


def _probe_null(core, li: int, words) -> list[float]:
    """log10 scores of ``words`` after the null context, by LM ``li`` of ``core``."""
    return core.probe(li, words, False)


class FastSearch:
    """The compiled core bound to one :class:`Decoder` (its LMs loaded again through KenLM's C++ API)."""

    kind = "compiled"

    def __init__(self, decoder, ext) -> None:
        self.decoder = decoder
        self.max_words = int(ext.MAX_WORDS)
        paths = [_model_path(lm) for lm in decoder.lms]
        # each LM loaded as its Python model was (lazily by default: the two copies map the same file)
        methods = [LOAD_METHODS[getattr(lm.scorer, "load", DEFAULT_LOAD)] for lm in decoder.lms]
        self.core = ext.Core(paths, LN10, methods)
        self._check_models()
        # the options' LM scores from the core's copy too: the Python copy (mapped lazily) is then not read
        for li, lm in enumerate(decoder.lms):
            lm.use_null_context_scorer(functools.partial(_probe_null, self.core, li))
        self._tables_ref = None
        self._reg: dict[int, int] = {}
        self._opts: list[tuple] = []
        self._warned_long = False

    # ------------------------------------------------------------------ set-up
    def _check_models(self) -> None:
        """The core's copy of each LM must score exactly as the Python ``kenlm`` model does."""
        words = ["</s>", "<unk>", "<s>"]
        for src, entries in self.decoder.table.entries.items():
            for tgt, _ in entries[:3]:
                words.extend(tgt)
            if len(words) > 40:
                break
        import kenlm  # the LMs' scorers already imported it

        for li, lm in enumerate(self.decoder.lms):
            model = lm.scorer.model
            if self.core.order(li) != int(model.order):
                raise ValueError(f"{lm.name}: order {self.core.order(li)} in the compiled core, "
                                 f"{model.order} in Python")
            lm_words = list(lm.lm_words(words))
            for begin in (True, False):
                state = lm.begin_state() if begin else lm.null_state()
                expected = []
                for w in lm_words:
                    out = kenlm.State()
                    expected.append(model.BaseScore(state, w, out))
                    state = out
                got = self.core.probe(li, lm_words, begin)
                if got != expected:
                    raise ValueError(f"{lm.name}: the compiled core's copy of {_model_path(lm)} scores "
                                     f"differently from the Python kenlm model")

    def _sync(self) -> None:
        """Forget registered options when the decoder has new :class:`SearchTables` (``set_weights``)."""
        tables = self.decoder.tables
        if tables is not self._tables_ref:
            self.core.clear_options()
            self._reg = {}
            self._opts = []
            self._tables_ref = tables

    def _spans(self, words: list[str]) -> list[int]:
        """``[start, end, count, option ids…]`` per span, in ``collect_options`` order (registering new options)."""
        self._sync()
        spans = self.decoder.tables.collect_options(words)
        reg = self._reg
        get = reg.get
        opts = self._opts
        flat: list[int] = []
        new = []
        for i, row in enumerate(spans):
            for j, row_opts in row:
                flat += (i, j, len(row_opts))
                for o in row_opts:
                    cid = get(id(o))  # the option is kept alive in self._opts, so its id stays unique
                    if cid is None:
                        cid = reg[id(o)] = len(opts)
                        opts.append(o)
                        new.append((o[O_TID], o[O_SL], o[O_FUT], o[O_UB], o[O_WIDS], o[O_REST], o[O_LMW],
                                    o[O_LR], o[O_FID]))
                    flat.append(cid)
        if new:
            try:
                self.core.add_options(new)
            except BaseException:
                self._tables_ref = None  # start over next time
                raise
        return flat

    def _run(self, words: list[str], keep_arcs: bool, nbest: int, distinct: bool, graph: bool):
        o = self.decoder.options
        max_paths = nbest * max(1, o.nbest_factor) if distinct else nbest
        spans = self._spans(words)  # first: may install new tables
        tables = self.decoder.tables
        return self.core.search(len(words), spans, o.stack_size, o.beam_width,
                                o.early_discarding_width, o.distortion_limit, tables.w_dist, tuple(tables.w_lms),
                                keep_arcs, nbest, distinct, max_paths, graph,
                                None if tables.w_lr is None else tuple(tables.w_lr))

    def _supported_length(self, n: int) -> bool:
        if n == 0:
            return False
        if n > self.max_words:
            if not self._warned_long:
                log.warning("a sentence of %d words is longer than the compiled search handles (%d); "
                            "such sentences use the Python search", n, self.max_words)
                self._warned_long = True
            return False
        return True

    def _build(self, nodes: list[tuple], arcs: bool) -> list[list]:
        """Hypothesis lists (the ``H_*`` layout of :mod:`smt_features.decode.hypothesis`) from the core's nodes."""
        opts = self._opts
        hs: list[list] = []
        append = hs.append
        for total, score, last, sid, prev, opt, lm, dval, start, _ in nodes:
            if prev < 0:  # the root
                append([total, score, 0, last, sid, None, None, lm, dval, None, start])
            else:
                p = hs[prev]
                cov = p[H_COV] | (((1 << (last - start + 1)) - 1) << start)
                append([total, score, cov, last, sid, p, opts[opt], lm, dval, None, start])
        if arcs:
            for h, node in zip(hs, nodes):
                if node[9] is not None:
                    h[H_ARCS] = [hs[a] for a in node[9]]
        return hs

    # ------------------------------------------------------------------ entry points
    def search(self, words: list[str], keep_arcs: bool):
        """As :meth:`Decoder.python_search`: ``(best final hypothesis or None, stats)``, with
        ``decoder.final_hyps`` and every hypothesis reachable from it (arcs included)."""
        dec = self.decoder
        if not self._supported_length(len(words)):
            return dec.python_search(words, keep_arcs)
        dec.final_hyps = []
        status, nodes, finals, _, st = self._run(words, keep_arcs, 0, False, True)
        if status == _EMPTY_FINALS:  # nothing survives the last stack: Python fails the same way
            return dec.python_search(words, keep_arcs)
        stats = dict(zip(STAT_KEYS, st))
        if status == _NO_HYPOTHESIS:
            return None, stats
        hs = self._build(nodes, arcs=True)
        dec.final_hyps = [hs[i] for i in finals]
        return dec.final_hyps[0], stats

    def decode(self, words: list[str], nbest: int = 0, distinct: bool = False,
               sent_id: int = 0) -> DecodeResult | None:
        """As ``Decoder.decode`` (n-best extraction in the core too); None = let the Python search do it."""
        if not self._supported_length(len(words)):
            return None
        dec = self.decoder
        t0 = time.perf_counter()
        status, nodes, finals, paths, st = self._run(words, nbest > 0, nbest, distinct, False)
        if status == _EMPTY_FINALS:
            return None
        stats = dict(zip(STAT_KEYS, st))
        if status == _NO_HYPOTHESIS:
            result = DecodeResult(sent_id, dec.empty_translation(False), [], 0.0, stats)
        else:
            hs = self._build(nodes, arcs=False)
            final = hs[finals[0]]
            result = DecodeResult(sent_id, dec.path_translation(chain(final), final[H_SCORE]), [], 0.0, stats)
            if nbest > 0:
                result.nbest = [dec.path_translation([hs[i] for i in path], score) for score, path in paths]
        result.seconds = time.perf_counter() - t0
        return result
