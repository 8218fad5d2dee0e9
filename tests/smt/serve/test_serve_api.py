"""The Python API (smt_features.serve.api.System) on a tiny finished experiment: raw text in and out, the full
system's semantics (its 1-best and n-best = the recipe's chain smt-decode → smt-rerank → detruecase → detokenize),
traces, feature contributions, attention, the experiment layout."""
from __future__ import annotations

import math
import threading
from pathlib import Path

import pytest
from tests.smt.serve.serve_fixtures import NBEST, build_tiny_experiment

from nmt.data.tokenize import MosesTokenizer
from nmt.data.truecase import Truecaser, detruecase
from nmt.core.errors import UsageError
from nmt.core.formats.nbest import read_nbest
from smt_features.serve.api import Request, System
from smt_features.serve.layout import from_work

pytestmark = pytest.mark.usefixtures("one_torch_thread")
RAW = ["S3 s1 s2.", "s4 s0, s7!", "S11 s5 s9 s2.", "s1 s2 s4 s4.", "s8 s6 s10 s3 s1.", "s0 qq s2."]


@pytest.fixture(scope="session")
def work(tmp_path_factory) -> Path:
    return build_tiny_experiment(tmp_path_factory.mktemp("serve"))


@pytest.fixture(scope="module")
def baseline(work):
    with System.load(work, system="Baseline", threads=2) as system:
        yield system


@pytest.fixture(scope="module")
def full(work):
    with System.load(work, system="+all+RNNsearch", threads=1) as system:
        yield system


def _detok(tokens: list[str]) -> str:
    return MosesTokenizer("fr").detokenize(detruecase(" ".join(tokens)).split())


def test_layout_of_the_rows(work: Path) -> None:
    files = from_work(work, "+all+RNNsearch", 1)
    assert files.moses_ini == work / "rnn" / "rnnwp.tune.1" / "moses.tuned.ini"
    assert [i.split("=")[0] for i in files.lm] == ["LSTM0", "RMN0", "MOG0"]
    assert files.encdec == [f"RNN0={work / 'rnn' / 'phrase_model'}", f"RNNS0={work / 'rnnsearch' / 'model'}"]
    assert files.nbest_size == NBEST and files.rerank_weights == work / "rerank" / "allrs.1" / "weights"
    assert set(files.truecase) == {"en", "fr"} and (files.src_lang, files.tgt_lang) == ("en", "fr")
    assert from_work(work, "Baseline", 1).rerank_weights is None
    with pytest.raises(UsageError, match="unknown system '\\+Bogus'"):
        from_work(work, "+Bogus", 1)
    with pytest.raises(FileNotFoundError) as err:
        from_work(work, "Baseline", 2)
    assert err.value.filename == str(work / "smt" / "tune.2" / "moses.tuned.ini")
    with pytest.raises(FileNotFoundError, match="rerank weights"):
        from_work(work, "+LSTM-LM", 1)


def test_raw_text_in_raw_text_out(baseline: System, work: Path) -> None:
    """The source is tokenized and truecased as nmt-prepare did (the experiment's own truecase model)."""
    tc = Truecaser.load(work / "smt" / "data" / "truecase-model.en")
    for raw in RAW:
        assert baseline.text.source_tokens(raw) == tc(" ".join(MosesTokenizer("en").tokenize(raw))).split()
    assert baseline.text.source_tokens("S3  s1\ns2.") == ["s3", "s1", "s2", "."]
    assert baseline.text.target_text(["t3", "&amp;", "t1", "&apos;", "t2", "."]) == "T3 & t1 't2."


def test_baseline_is_smt_decode(baseline: System, work: Path, tmp_path: Path) -> None:
    """1-best and n-best (hypotheses, feature values, totals) = smt-decode's on the same tokens; traces cover the
    source once; contributions add up to the total."""
    from smt_features.cli.decode import cli_main as decode

    results = baseline.translate(RAW, nbest=4, trace=True, scores=True)
    src = tmp_path / "in.tok"
    src.write_text("".join(" ".join(r.source_tokens) + "\n" for r in results), encoding="utf-8")
    assert decode(["--moses-ini", str(work / "smt" / "tune.1" / "moses.tuned.ini"), "--input", str(src), "--output",
                   str(tmp_path / "out"), "--n-best-list", str(tmp_path / "nb"), "4", "--progress", "false"]) == 0
    one_best = (tmp_path / "out").read_text(encoding="utf-8").split("\n")
    lists = read_nbest(tmp_path / "nb")
    for i, r in enumerate(results):
        assert r.best.tokens == one_best[i].split() and r.translation == _detok(one_best[i].split())
        assert [h.tokens for h in r.nbest] == [e.tokens for e in lists[i]]
        for h, e in zip(r.nbest, lists[i]):
            assert math.isclose(h.total, e.total, rel_tol=1e-5, abs_tol=1e-5)
            mine = {f.name: f.values for f in h.features if f.tuneable}
            for name, vals in e.features:
                assert all(math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-5) for a, b in zip(mine[name], vals))
            assert math.isclose(sum(f.contribution for f in h.features), h.total, rel_tol=1e-9, abs_tol=1e-9)
            covered = sorted(k for s in h.segments for k in range(s.src_start, s.src_end + 1))
            assert covered == list(range(len(r.source_tokens)))
            assert [w for s in h.segments for w in s.target] == h.tokens
            for s in h.segments:
                assert s.source == r.source_tokens[s.src_start:s.src_end + 1]
            assert all(0 <= i_ < len(r.source_tokens) and 0 <= j < len(h.tokens) for i_, j in h.word_alignment)
    # the table's alignments: s1 s2 → t2 t1 is crossed, an unknown word aligns to itself
    seg = {tuple(s.source): s for h in results[5].nbest for s in h.segments}
    assert seg[("qq",)].target == ["qq"] and seg[("qq",)].alignment == [(0, 0)]
    pair = baseline.alignments.lookup(["s1", "s2"], ["t2", "t1"])
    assert pair == [(0, 1), (1, 0)] and baseline.alignments.lookup(["s1"], ["t9"]) == []


def test_prefix_tree_is_the_plain_scoring(full: System, work: Path) -> None:
    """The served neural features (over each n-best list's prefix tree, the default) = every hypothesis scored whole
    (``prefix_tree=False``, smt-rerank's default), up to float rounding: the same lists, order and 1-bests."""
    def tree_flags(system: System) -> list[bool]:
        return [s.pair.prefix_tree if s.pair else s.lm.__self__.prefix_tree for s in system.specs
                if s.pair or hasattr(s.lm, "__self__")]

    assert tree_flags(full) == [True] * 5
    tree = full.translate(RAW, nbest=NBEST, scores=True)
    with System.load(work, system="+all+RNNsearch", threads=1, prefix_tree=False) as plain_system:
        assert tree_flags(plain_system) == [False] * 5
        plain = plain_system.translate(RAW, nbest=NBEST, scores=True)
    neural = {"LSTM0", "RMN0", "MOG0", "RNN0", "RNNS0"}
    for t, p in zip(tree, plain):
        assert t.translation == p.translation and [h.tokens for h in t.nbest] == [h.tokens for h in p.nbest]
        for ht, hp in zip(t.nbest, p.nbest):
            ft = {f.name: f.values for f in ht.features if f.name in neural}
            fp = {f.name: f.values for f in hp.features if f.name in neural}
            assert set(ft) == neural and ft.keys() == fp.keys()
            for name in neural:
                assert all(math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-4) for a, b in zip(ft[name], fp[name])), name
            assert math.isclose(ht.total, hp.total, rel_tol=1e-5, abs_tol=1e-5)


def test_reranked_system_is_the_recipe_chain(full: System, work: Path, tmp_path: Path) -> None:
    """+all+RNNsearch = smt-decode N-best → smt-rerank (LMs, RNN0) → smt-rerank (RNNS0) → smt-rerank --weights
    --one-best → detruecase → detokenize, as recipes/lib/lm_rerank.sh runs it."""
    from smt_features.cli.decode import cli_main as decode
    from smt_features.cli.rerank import cli_main as rerank

    results = full.translate(RAW, nbest=NBEST, scores=True)
    src = tmp_path / "in.tok"
    src.write_text("".join(" ".join(r.source_tokens) + "\n" for r in results), encoding="utf-8")
    nb, f1, f2 = tmp_path / "nb", tmp_path / "f1.gz", tmp_path / "f2.gz"
    assert decode(["--moses-ini", str(full.files.moses_ini), "--input", str(src), "--output", str(tmp_path / "o"),
                   "--n-best-list", str(nb), str(NBEST), "--progress", "false"]) == 0
    assert rerank(["--nbest", str(nb), "--src", str(src), "--output", str(f1), "--lm", *full.files.lm,
                   "--encdec", full.files.encdec[0], "--threads", "1"]) == 0
    assert rerank(["--nbest", str(f1), "--src", str(src), "--output", str(f2), "--encdec", full.files.encdec[1],
                   "--threads", "1"]) == 0
    weights = str(work / "rerank" / "allrs.1" / "weights")
    assert rerank(["--nbest", str(f2), "--src", str(src), "--weights", weights, "--one-best", str(tmp_path / "best"),
                   "--output", str(tmp_path / "final")]) == 0
    best = (tmp_path / "best").read_text(encoding="utf-8").split("\n")
    final = read_nbest(tmp_path / "final")
    decoder_best = (tmp_path / "o").read_text(encoding="utf-8").split("\n")
    assert sum(a != b for a, b in zip(best, decoder_best)) >= 2  # the neural features change 1-bests
    for i, r in enumerate(results):
        assert r.best.tokens == best[i].split() and r.translation == _detok(best[i].split())
        assert len(r.nbest) == len(final[i]) <= NBEST
        for mine, theirs in zip(sorted(h.total for h in r.nbest), sorted(e.total for e in final[i])):
            assert math.isclose(mine, theirs, rel_tol=1e-5)  # the file's totals: 6 significant digits
        assert [f.name for f in r.best.features][-5:] == ["LSTM0", "RMN0", "MOG0", "RNN0", "RNNS0"]
        assert all(r.nbest[k].total >= r.nbest[k + 1].total for k in range(len(r.nbest) - 1))
    assert full.max_nbest == NBEST and full.translate(RAW[:1], nbest=50)[0].nbest.__len__() <= NBEST


def test_attention_of_the_rnnsearch_feature(full: System, baseline: System) -> None:
    r = full.translate(RAW[:2], attention=True)
    assert full.attention_feature == "RNNS0"
    for res in r:
        a = res.attention
        assert a.source == res.source_tokens + ["</s>"] and a.target == res.best.tokens + ["</s>"]
        assert len(a.rows) == len(a.target) and all(len(row) == len(a.source) for row in a.rows)
        assert all(math.isclose(sum(row), 1.0, rel_tol=1e-6) for row in a.rows)
    assert full.translate(RAW[:1])[0].attention is None                      # only when asked
    assert baseline.translate(RAW[:1], attention=True)[0].attention is None  # no model, no attention


def test_concurrent_calls_and_batches(full: System) -> None:
    """Threads calling at once, and several requests in one batch, give what one call at a time gives."""
    alone = [r.translation for r in full.translate(RAW)]
    got: dict[int, list[str]] = {}

    def call(k: int) -> None:
        got[k] = [r.translation for r in full.translate(RAW)]

    threads = [threading.Thread(target=call, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(v == alone for v in got.values()) and len(got) == 3
    batched = full.translate_requests([Request(RAW[:2]), Request(RAW[2:], nbest=3, trace=True)])
    assert [r.translation for rs in batched for r in rs] == alone
    assert len(batched[1][0].nbest) == 3 and batched[1][0].to_dict()["segments"]
    assert "segments" not in batched[0][0].to_dict() and "nbest" not in batched[0][0].to_dict()


def test_distinct_nbest(baseline: System, full: System) -> None:
    for system in (baseline, full):
        for r in system.translate_requests([Request(RAW, nbest=5, distinct=True)])[0]:
            texts = [tuple(h.tokens) for h in r.nbest]
            assert len(texts) == len(set(texts)) >= 1


def test_explicit_files_are_the_same_system(full: System, work: Path) -> None:
    """smt-serve's flags for the files one by one (no work folder) load the same system."""
    from nmt.core import config as C
    from smt_features.serve.server import ServeConfig, system_files

    d = work / "smt" / "data"
    cfg = C.parse(ServeConfig, ["--moses-ini", str(full.files.moses_ini), "--rerank-weights",
                                str(full.files.rerank_weights), "--lm", *full.files.lm, "--encdec", *full.files.encdec,
                                "--nbest-size", str(NBEST), "--truecase-model", f"en={d / 'truecase-model.en'}",
                                f"fr={d / 'truecase-model.fr'}"])
    with System.load(files=system_files(cfg), word_alignment=False) as explicit:
        assert [r.translation for r in explicit.translate(RAW)] == [r.translation for r in full.translate(RAW)]
        assert explicit.attention_feature == "RNNS0" and explicit.alignments is None
    with pytest.raises(UsageError, match="need the reranking weights"):
        System.load(files=system_files(C.parse(ServeConfig, ["--moses-ini", str(full.files.moses_ini), "--lm",
                                                             *full.files.lm])))
    with pytest.raises(UsageError, match="LANG=FILE"):
        system_files(C.parse(ServeConfig, ["--moses-ini", "x", "--truecase-model", "en"]))
