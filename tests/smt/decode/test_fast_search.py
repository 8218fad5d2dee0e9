"""The compiled search core (smt_features/decode/csrc/search.cpp via smt_features.decode.fast_search) against the
Python search of smt_features.decode.stack_search: the same 1-best, n-best lists, feature values, scores and
search statistics — compared exactly (bit for bit), on the toy fixtures of tests/data/decoder and
on random phrase tables, language models and inputs.

Needs the extension: ``bash third_party/build_search.sh`` (skipped otherwise, except the fallback
tests at the top).
"""
from __future__ import annotations

import logging
import random
from pathlib import Path

import pytest

pytest.importorskip("kenlm")

from smt_features.decode import fast_search  # noqa: E402
from smt_features.decode.corpus import decode_corpus  # noqa: E402
from smt_features.decode.decoder import Decoder  # noqa: E402
from smt_features.decode.hypothesis import (  # noqa: E402
    H_ARCS, H_COV, H_DIST, H_LAST, H_LM, H_OPT, H_PREV, H_SCORE, H_SID, H_START, H_TOTAL,
)
from smt_features.decode.load import build_decoder  # noqa: E402
from smt_features.decode.options import SearchOptions  # noqa: E402
from smt_features.decode.table import PhraseTable  # noqa: E402
from smt_features.model.features import (  # noqa: E402
    DistortionFeature, PhrasePenaltyFeature, PhraseTableFeature, UnknownWordPenaltyFeature,
    WordPenaltyFeature,
)
from smt_features.model.kenlm_feature import KenLMFeature  # noqa: E402
from smt_features.model.kenlm import KenLMScorer  # noqa: E402
from tests import TEST_DATA

DATA = TEST_DATA / "decoder"
DEFAULT_WEIGHTS = {"UnknownWordPenalty0": [1.0], "WordPenalty0": [-1.0], "PhrasePenalty0": [0.2],
                   "TranslationModel0": [0.2] * 4, "Distortion0": [0.3], "LM0": [0.5]}
BUILT = fast_search.available()
needs_ext = pytest.mark.skipif(not BUILT, reason=f"compiled search core not built: run `{fast_search.BUILD_COMMAND}`")


def toy_features(lm: str = "toy.arpa", distortion_cls=DistortionFeature) -> list:
    return [UnknownWordPenaltyFeature(), WordPenaltyFeature(), PhrasePenaltyFeature(),
            PhraseTableFeature("TranslationModel0", 4, table_limit=20), distortion_cls(),
            KenLMFeature(KenLMScorer(DATA / lm), name="LM0")]


def toy_pair(lm: str = "toy.arpa", **opts) -> tuple[Decoder, Decoder]:
    """(Python, compiled) decoders over the same features and table."""
    table = PhraseTable.load(DATA / "toy.phrase-table")
    feats = toy_features(lm)
    py = Decoder(feats, DEFAULT_WEIGHTS, table, SearchOptions(search="python", **opts))
    cc = Decoder(feats, DEFAULT_WEIGHTS, table, SearchOptions(search="compiled", **opts))
    assert py.search_kind == "python" and cc.search_kind == "compiled"
    return py, cc


# ----------------------------------------------------------------------------- comparison helpers

def same_translation(a, b, what) -> None:
    assert a.tokens == b.tokens, what
    assert a.score == b.score, what  # bit-identical (stronger than the 1e-9 relative asked for)
    assert a.values == b.values, what
    assert a.segments == b.segments, what


def same_result(a, b, what) -> None:
    same_translation(a.best, b.best, what)
    assert len(a.nbest) == len(b.nbest), what
    for i, (x, y) in enumerate(zip(a.nbest, b.nbest)):
        same_translation(x, y, (what, i))
    assert a.stats == b.stats, what
    assert a.sent_id == b.sent_id


def flatten(finals: list[list]) -> tuple[list[int], list[tuple]]:
    """The hypothesis graph reachable from ``finals`` (prev links and arcs) numbered in visiting order."""
    index: dict[int, int] = {}
    recs: list = []

    def visit(h: list) -> int:
        if id(h) in index:
            return index[id(h)]
        prev = visit(h[H_PREV]) if h[H_PREV] is not None else -1
        i = len(recs)
        index[id(h)] = i
        recs.append(None)
        arcs = None if h[H_ARCS] is None else [visit(a) for a in h[H_ARCS]]
        recs[i] = (h[H_TOTAL], h[H_SCORE], h[H_COV], h[H_LAST], h[H_SID], prev, h[H_OPT], h[H_LM], h[H_DIST],
                   arcs, h[H_START])
        return i

    return [visit(f) for f in finals], recs


def compare_graph(dec: Decoder, words: list[str], keep_arcs: bool, what) -> None:
    """The Python search and FastSearch.search on one decoder: the same final hypotheses and everything
    reachable from them (numbers, coverage, LM state ids, options, arcs), the same statistics."""
    final_p, stats_p = dec.python_search(words, keep_arcs)
    graph_p = flatten(dec.final_hyps)
    final_c, stats_c = dec.compiled.search(words, keep_arcs)
    graph_c = flatten(dec.final_hyps)
    assert stats_p == stats_c, what
    assert (final_p is None) == (final_c is None), what
    assert graph_p == graph_c, what


# ----------------------------------------------------------------------------- selection and fallback

def test_search_option_is_validated():
    with pytest.raises(ValueError, match="search"):
        SearchOptions(search="fast")


def test_compiled_without_extension_errors_and_auto_falls_back(monkeypatch, caplog):
    monkeypatch.setattr(fast_search, "load_extension", lambda: (None, "not built (test)"))
    table = PhraseTable.load(DATA / "toy.phrase-table")
    with pytest.raises(ValueError, match="build_search.sh"):
        Decoder(toy_features(), DEFAULT_WEIGHTS, table, SearchOptions(search="compiled"))
    with caplog.at_level(logging.INFO, logger="smt_features.decode.fast_search"):
        dec = Decoder(toy_features(), DEFAULT_WEIGHTS, table, SearchOptions(search="auto"))
    assert dec.search_kind == "python"
    assert "build_search.sh" in caplog.text
    assert dec.translate("a b").text == "x y"


@needs_ext
def test_unsupported_stateful_feature_falls_back_to_python(caplog):
    class OtherDistortion(DistortionFeature):  # a stateful feature the core does not know
        pass

    table = PhraseTable.load(DATA / "toy.phrase-table")
    with caplog.at_level(logging.INFO, logger="smt_features.decode.fast_search"):
        dec = Decoder(toy_features(distortion_cls=OtherDistortion), DEFAULT_WEIGHTS, table, SearchOptions())
    assert dec.search_kind == "python"
    assert len([r for r in caplog.records if "OtherDistortion" in r.getMessage()]) == 1
    assert dec.translate("a b").text == "x y"


@needs_ext
def test_auto_uses_the_compiled_core_when_built():
    table = PhraseTable.load(DATA / "toy.phrase-table")
    assert Decoder(toy_features(), DEFAULT_WEIGHTS, table, SearchOptions()).search_kind == "compiled"
    assert Decoder(toy_features(), DEFAULT_WEIGHTS, table, SearchOptions(search="python")).search_kind == "python"


# ----------------------------------------------------------------------------- toy fixtures

TOY_SENTENCES = ["a b", "a b c", "c b a", "b c a b", "a q b c", "q r", "a b c a b c b", "c", "b a c b a c"]


@needs_ext
@pytest.mark.parametrize("opts", [
    {},
    {"stack_size": 100000, "beam_threshold": 0.0, "distortion_limit": -1},
    {"distortion_limit": 0},
    {"distortion_limit": 1, "stack_size": 2},
    {"early_discarding_threshold": 1.0},
    {"early_discarding_threshold": 0.01, "stack_size": 3},
    {"bound_pruning": False},
    {"stack_size": 1, "beam_threshold": 0.5},
    {"beam_threshold": 1.0},  # prunes every stack empty: no translation, in both searches
])
def test_toy_compiled_equals_python(opts):
    py, cc = toy_pair(**opts)
    for sent in TOY_SENTENCES:
        for nbest, distinct in ((0, False), (10, False), (10, True)):
            what = (sent, opts, nbest, distinct)
            same_result(py.decode(sent, nbest=nbest, distinct=distinct),
                        cc.decode(sent, nbest=nbest, distinct=distinct), what)
        for keep_arcs in (False, True):
            compare_graph(cc, sent.split(), keep_arcs, (sent, opts, keep_arcs))


@needs_ext
@pytest.mark.parametrize("dl", [0, 1, 2, -1])
def test_toy_swap_lm_reordering(dl):
    table = PhraseTable.from_entries([("a", "x", (0.5,) * 4), ("b", "y", (0.5,) * 4)])
    feats = toy_features("swap.arpa")
    py = Decoder(feats, DEFAULT_WEIGHTS, table, SearchOptions(search="python", distortion_limit=dl))
    cc = Decoder(feats, DEFAULT_WEIGHTS, table, SearchOptions(search="compiled", distortion_limit=dl))
    for sent in ("a b", "b a", "a b a b"):
        same_result(py.decode(sent, nbest=5), cc.decode(sent, nbest=5), (sent, dl))


@needs_ext
def test_empty_sentence_and_weight_changes():
    py, cc = toy_pair()
    same_result(py.decode([], nbest=3), cc.decode([], nbest=3), "empty")
    new = dict(DEFAULT_WEIGHTS, LM0=[0.9], Distortion0=[0.05], WordPenalty0=[0.4])
    for dec in (py, cc):
        dec.translate("a b c")
        dec.set_weights(new)  # clears the option caches: the core must forget its registered options
    for sent in TOY_SENTENCES:
        same_result(py.decode(sent, nbest=10), cc.decode(sent, nbest=10), sent)


@needs_ext
def test_build_decoder_cli_and_corpus(tmp_path):
    from smt_features.cli.decode import cli_main
    from smt_features.model.moses_ini_build import default_config

    cfg = default_config(str(DATA / "toy.phrase-table"), str(DATA / "toy.arpa"), lm_order=2)
    py = build_decoder(cfg, options=SearchOptions(search="python"))
    cc = build_decoder(cfg)
    assert cc.search_kind == "compiled"
    lines = TOY_SENTENCES + ["", "a q b"]
    for a, b in zip(decode_corpus(py, lines, nbest=4), decode_corpus(cc, lines, threads=2, nbest=4)):
        same_result(a, b, a.sent_id)
    ini = tmp_path / "moses.ini"
    cfg.write(ini)
    src = tmp_path / "in.txt"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    outs = {}
    for mode in ("python", "compiled"):
        out, nb = tmp_path / f"out.{mode}", tmp_path / f"nbest.{mode}"
        assert cli_main(["--moses-ini", str(ini), "--input", str(src), "--output", str(out), "--n-best-list", str(nb),
                         "7", "distinct", "--progress", "false", "--search", mode]) == 0
        outs[mode] = (out.read_text(encoding="utf-8"), nb.read_text(encoding="utf-8"))
    assert outs["python"] == outs["compiled"]


@needs_ext
def test_sentences_longer_than_the_core_use_python(caplog):
    py, cc = toy_pair()
    cc.compiled.max_words = 4
    with caplog.at_level(logging.WARNING, logger="smt_features.decode.fast_search"):
        for sent in ("a b c a b", "b c a b c a"):
            same_result(py.decode(sent, nbest=5), cc.decode(sent, nbest=5), sent)
    assert len([r for r in caplog.records if "longer than" in r.getMessage()]) == 1


# ----------------------------------------------------------------------------- random models

def write_random_arpa(path: Path, rng: random.Random, words: list[str], order: int) -> None:
    """A consistent random back-off model (every n-gram's prefix and suffix present, backoffs <= 1)."""
    lp = lambda: round(rng.uniform(-2.5, -0.2), 4)  # noqa: E731
    bo = lambda: round(rng.uniform(-0.8, 0.0), 4)  # noqa: E731
    grams: list[dict[tuple[str, ...], tuple[float, float | None]]] = []
    uni = {("<unk>",): (-3.0, None), ("<s>",): (-99.0, bo()), ("</s>",): (lp(), None)}
    for w in words:
        uni[(w,)] = (lp(), bo() if order > 1 else None)
    grams.append(uni)
    ctx = ["<s>"] + words
    nxt = words + ["</s>"]
    if order >= 2:
        bi = {}
        for a in ctx:
            for b in nxt:
                if rng.random() < 0.35:
                    bi[(a, b)] = (lp(), bo() if order > 2 and b != "</s>" else None)
        grams.append(bi)
    if order >= 3:
        tri = {}
        for (a, b) in grams[1]:
            if b == "</s>":
                continue
            for c in nxt:
                if (b, c) in grams[1] and rng.random() < 0.35:
                    tri[(a, b, c)] = (lp(), None)
        grams.append(tri)
    lines = ["\\data\\"] + [f"ngram {i + 1}={len(g)}" for i, g in enumerate(grams)] + [""]
    for i, g in enumerate(grams):
        lines.append(f"\\{i + 1}-grams:")
        for key, (p, b) in g.items():
            lines.append(f"{p}\t{' '.join(key)}" + (f"\t{b}" if b is not None else ""))
        lines.append("")
    lines.append("\\end\\")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def random_table(rng: random.Random, src_vocab: list[str], tgt_vocab: list[str]) -> PhraseTable:
    entries = []
    sources = {(w,) for w in rng.sample(src_vocab, len(src_vocab) - 2)}  # two source words only in longer phrases
    while len(sources) < 40:
        sources.add(tuple(rng.choice(src_vocab) for _ in range(rng.randint(2, 3))))
    for src in sorted(sources):
        targets = set()
        for _ in range(rng.randint(1, 6)):
            length = 0 if rng.random() < 0.04 else rng.randint(1, 3)  # the odd empty target phrase
            targets.add(tuple(rng.choice(tgt_vocab) for _ in range(length)))
        for tgt in sorted(targets):
            scores = tuple(0.0 if rng.random() < 0.03 else round(rng.uniform(0.01, 1.0), 3) for _ in range(4))
            entries.append((src, tgt, scores))
    return PhraseTable.from_entries(entries)


def random_weights(rng: random.Random, lm_names: list[str], negative_lm: bool) -> dict[str, list[float]]:
    w = {"UnknownWordPenalty0": [1.0], "WordPenalty0": [rng.uniform(-1.5, 0.5)],
         "PhrasePenalty0": [rng.uniform(-0.5, 0.5)], "TranslationModel0": [rng.uniform(0.05, 0.4) for _ in range(4)],
         "Distortion0": [rng.uniform(0.05, 0.6)]}
    for i, name in enumerate(lm_names):
        w[name] = [rng.uniform(0.2, 0.8) if i == 0 else rng.uniform(0.05, 0.5)]
    if negative_lm:
        w[lm_names[0]] = [-0.25]
    return w


# (distortion limit, stack, beam threshold, early discarding, table limit, max phrase length, extras)
RANDOM_CONFIGS = [
    (-1, 3, 1e-5, 0.0, 20, 20, {}),
    (0, 2, 1e-5, 0.0, 4, 20, {}),
    (3, 4, 1e-5, 0.0, 20, 20, {}),
    (3, 1, 1e-2, 0.0, 20, 2, {}),
    (-1, 5, 0.0, 0.0, 3, 20, {}),
    (3, 3, 1e-5, 0.5, 20, 20, {}),
    (0, 4, 1e-5, 1e-3, 20, 20, {}),
    (-1, 2, 1e-3, 1.0, 0, 20, {}),
    (3, 3, 1e-5, 0.0, 20, 20, {"bound_pruning": False}),
    (3, 6, 1e-5, 0.0, 20, 20, {"lm_upper_bounds": False}),
    (3, 3, 1e-5, 0.0, 20, 20, {"negative_lm": True}),
    (-1, 4, 1e-5, 0.0, 20, 20, {"no_distortion": True}),
    (3, 4, 1e-5, 0.0, 20, 20, {"no_lm": True}),
    (3, 4, 1e-5, 0.2, 20, 20, {"second_lm": True}),
    (-1, 200, 1e-5, 0.0, 20, 20, {"second_lm": True}),
]


def random_case(tmp_path: Path, seed: int):
    rng = random.Random(seed)
    src_vocab = [f"s{i}" for i in range(10)]
    tgt_vocab = [f"t{i}" for i in range(12)] + ["<unk>"]  # t10, t11 are not in the LMs
    lm_vocab = [f"t{i}" for i in range(10)]
    arpa3 = tmp_path / f"r{seed}.o3.arpa"
    arpa2 = tmp_path / f"r{seed}.o2.arpa"
    write_random_arpa(arpa3, rng, lm_vocab, 3)
    write_random_arpa(arpa2, rng, lm_vocab[:7], 2)
    table = random_table(rng, src_vocab, tgt_vocab)
    sentences = []
    for _ in range(8):
        n = rng.randint(1, 12)
        sentences.append([rng.choice(src_vocab) if rng.random() > 0.1 else rng.choice(["u1", "u2"])
                          for _ in range(n)])
    return rng, table, [KenLMScorer(arpa3), KenLMScorer(arpa2)], sentences


@needs_ext
@pytest.mark.parametrize("seed", range(8))
def test_random_compiled_equals_python(tmp_path, seed):
    rng, table, scorers, sentences = random_case(tmp_path, seed)
    cases = 0
    for dl, stack, beam, ed, tl, mpl, extra in RANDOM_CONFIGS:
        feats = [UnknownWordPenaltyFeature(), WordPenaltyFeature(), PhrasePenaltyFeature(),
                 PhraseTableFeature("TranslationModel0", 4, table_limit=tl)]
        if not extra.get("no_distortion"):
            feats.append(DistortionFeature())
        lm_names = []
        if not extra.get("no_lm"):
            feats.append(KenLMFeature(scorers[0], name="LM0"))
            lm_names.append("LM0")
            if extra.get("second_lm"):
                feats.append(KenLMFeature(scorers[1], name="LM1"))
                lm_names.append("LM1")
        weights = random_weights(rng, lm_names, bool(extra.get("negative_lm")))
        if extra.get("no_distortion"):
            del weights["Distortion0"]
        opts = {k: v for k, v in extra.items() if k in ("bound_pruning", "lm_upper_bounds")}
        common = dict(distortion_limit=dl, stack_size=stack, beam_threshold=beam, early_discarding_threshold=ed,
                      max_phrase_length=mpl, **opts)
        py = Decoder(feats, weights, table, SearchOptions(search="python", **common))
        cc = Decoder(feats, weights, table, SearchOptions(search="compiled", **common))
        assert cc.search_kind == "compiled"
        for words in sentences:
            what = (seed, " ".join(words), dl, stack, beam, ed, tl, mpl, extra)
            for nbest, distinct in ((0, False), (10, False), (10, True)):
                same_result(py.decode(words, nbest=nbest, distinct=distinct),
                            cc.decode(words, nbest=nbest, distinct=distinct), (what, nbest, distinct))
                cases += 1
            compare_graph(cc, words, True, what)
    assert cases == len(RANDOM_CONFIGS) * len(sentences) * 3


@needs_ext
@pytest.mark.parametrize("n", [70, 130])
def test_random_long_sentences(tmp_path, n):
    """Coverage wider than 64 bits (the core's 2- and 4-word bitsets)."""
    rng, table, scorers, _ = random_case(tmp_path, 100 + n)
    words = [rng.choice([f"s{i}" for i in range(10)] + ["u1"]) for _ in range(n)]
    feats = [UnknownWordPenaltyFeature(), WordPenaltyFeature(), PhrasePenaltyFeature(),
             PhraseTableFeature("TranslationModel0", 4, table_limit=5), DistortionFeature(),
             KenLMFeature(scorers[0], name="LM0")]
    weights = random_weights(rng, ["LM0"], False)
    common = dict(distortion_limit=3, stack_size=2, max_phrase_length=2)
    py = Decoder(feats, weights, table, SearchOptions(search="python", **common))
    cc = Decoder(feats, weights, table, SearchOptions(search="compiled", **common))
    same_result(py.decode(words, nbest=10), cc.decode(words, nbest=10), n)
    compare_graph(cc, words, False, n)
