"""smt-rerank: neural / KenLM / encoder–decoder n-best features, MERT weights, reranked 1-best."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
from tests.refusal import refused

from smt_features.model.weights import Weights
from smt_features.neural import rerank as R
from smt_features.cli.rerank import cli_main as rerank_main
from nmt.core.formats.nbest import NBestEntry, NBestError, read_nbest
from tests.smt.neural.rescore_fixtures import teacher_forced_log_probs
from tests.toy_corpus import make_toy_data
from tests import ROOT

ARPA = ROOT / "tests" / "data" / "kenlm" / "hand_bigram.arpa"


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    """A tiny encoder–decoder and a tiny LSTM LM on the toy corpus (seconds)."""
    from nmt.cli.lm_train import cli_main as lm_train
    from nmt.cli.train import cli_main as nmt_train

    root = tmp_path_factory.mktemp("rerank")
    data = make_toy_data(root / "data", n_train=120, n_dev=10)
    encdec = root / "encdec"
    assert nmt_train(["--data-dir", str(data), "--out-dir", str(encdec), "--preset", "tiny", "--optimizer", "adam",
                      "--lr", "0.03", "--batch-size", "16", "--max-updates", "6", "--progress", "false"]) == 0
    lm = root / "lm"
    assert lm_train(["--train", str(data / "train.tok.fr"), "--valid", str(data / "val.tok.fr"), "--arch", "lstm",
                     "--emb-dim", "8", "--hidden-dim", "8", "--out-dir", str(lm), "--threads", "1", "--progress",
                     "false", "--optimizer", "adam", "--lr", "0.02", "--batch-size", "8", "--max-updates", "6"]) == 0
    return {"data": data, "encdec": encdec, "lm": lm}


NBEST = """\
0 ||| t1 t2  ||| LM0= -5 WordPenalty0= -2 ||| -1.5
0 ||| t1 t3  ||| LM0= -4 WordPenalty0= -2 ||| -1.2
0 ||| t1 t2  ||| LM0= -6 WordPenalty0= -2 ||| -1.8
2 ||| t4  ||| LM0= -3 WordPenalty0= -1 ||| -0.9
2 ||| t1 t2  ||| LM0= -7 WordPenalty0= -2 ||| -2.0
2 |||  ||| LM0= -9 WordPenalty0= 0 ||| -3.0
"""
SRC = "s1 s2\ns0 s0 s0\ns4\n"


def _write(tmp: Path) -> tuple[Path, Path]:
    nb, src = tmp / "in.nbest", tmp / "src.en"
    nb.write_text(NBEST, encoding="utf-8")
    src.write_text(SRC, encoding="utf-8")
    return nb, src


@pytest.mark.parametrize("tree", [[], ["--prefix-tree"]], ids=["plain", "prefix-tree"])
def test_feature_values_equal_the_scorers(tree, models, tmp_path: Path) -> None:
    from nmt.lm.data import encode_all
    from nmt.lm.loading import load_language_model
    from nmt.lm.scoring import sentence_token_logprobs
    from nmt.translation.model_io import load_translation_model
    from nmt.scoring import PairScorer
    from smt_features.model.kenlm import KenLMScorer

    nb, src = _write(tmp_path)
    out = tmp_path / "out.nbest"
    assert rerank_main(["--nbest", str(nb), "--src", str(src), "--output", str(out), "--precision", "12",
                        "--lm", f"LSTM0={models['lm']}", "--kenlm", f"KENLM0={ARPA}",
                        "--encdec", f"RNN0={models['encdec']}", "--batch-size", "2", *tree]) == 0
    got = read_nbest(out)
    assert sorted(got) == [0, 2]
    entries = [e for k in sorted(got) for e in got[k]]
    assert [e.value_names() for e in entries][0] == ["LM0", "WordPenalty0", "LSTM0", "KENLM0", "RNN0"]
    # totals left as they were (no weights given); old features unchanged
    assert [e.total for e in entries] == [-1.5, -1.2, -1.8, -0.9, -2.0, -3.0]
    assert [e.feature_dict()["LM0"][0] for e in entries] == [-5, -4, -6, -3, -7, -9]

    lm = load_language_model(models["lm"])
    hyps = [e.tokens for e in entries]
    lps = sentence_token_logprobs(lm.model, encode_all(lm.vocab, hyps), start=lm.start)
    expect_lm = [math.fsum(lp.tolist()) for lp in lps]
    ken = KenLMScorer(ARPA)
    expect_ken = [ken.score_sentence(h) if h else ken.model.score("") * math.log(10) for h in hyps]  # empty: </s>
    tm = load_translation_model(models["encdec"])
    srcs = [line.split() for line in SRC.splitlines()]
    # the id maps to the source line: sentence 2's source is "s4", not line 1
    expect_rnn = [s.log_prob for s in PairScorer(tm.model, tm.src_vocab, tm.tgt_vocab).score_pairs(
        [srcs[e.sent_id] for e in entries[:-1]], hyps[:-1])]
    # the empty hypothesis: ln p(</s> | src), teacher-forced (PairScorer refuses an empty side)
    expect_rnn += teacher_forced_log_probs(tm.model, tm.src_vocab, tm.tgt_vocab, [srcs[2]], [[]])
    for e, a, b, c in zip(entries, expect_lm, expect_ken, expect_rnn):
        f = e.feature_dict()
        tol = 1e-5 if tree else 1e-6  # float32, batched differently (the tree: read step by step too)
        assert f["LSTM0"][0] == pytest.approx(a, rel=tol, abs=tol)
        assert f["KENLM0"][0] == pytest.approx(b, rel=1e-6, abs=1e-6)  # float32, batched differently
        assert f["RNN0"][0] == pytest.approx(c, rel=tol, abs=tol)
    # same hypothesis under different sources gets different encoder–decoder scores, same LM score
    f0, f4 = entries[0].feature_dict(), entries[4].feature_dict()
    assert entries[0].tokens == entries[4].tokens
    assert f0["LSTM0"] == f4["LSTM0"] and f0["RNN0"] != f4["RNN0"]
    # KenLM by hand (log10 numbers of the fixture): <s> t4 </s> are OOV words of the bigram model
    assert all(v < 0 for v in expect_ken)


@pytest.mark.parametrize("tree", [[], ["--prefix-tree"]], ids=["plain", "prefix-tree"])
def test_lm_values_match_nmt_lm_score(tree, models, tmp_path: Path, capsys) -> None:
    from nmt.cli.lm_score import cli_main as score_main

    nb, src = _write(tmp_path)
    out = tmp_path / "out.nbest"
    assert rerank_main(["--nbest", str(nb), "--output", str(out), "--lm", f"LSTM0={models['lm']}", *tree]) == 0
    entries = [e for es in read_nbest(out).values() for e in es]
    text = tmp_path / "hyps.txt"
    text.write_text("".join(e.hypothesis + "\n" for e in entries), encoding="utf-8")
    capsys.readouterr()
    assert score_main(["--model", str(models["lm"]), "--text", str(text)]) == 0
    ref = [float(x) for x in capsys.readouterr().out.split()]
    assert [e.feature_dict()["LSTM0"][0] for e in entries] == pytest.approx(ref, abs=1e-5, rel=1e-5)


def test_distinct_hypotheses_scored_once() -> None:
    calls: list[list[str]] = []

    def lm(hyps):
        calls.extend(" ".join(h) for h in hyps)
        return [-float(len(h)) for h in hyps]

    entries = [NBestEntry(0, ["a", "b"], [("F", [1.0])], 0.0), NBestEntry(0, ["a"], [("F", [2.0])], 0.0),
               NBestEntry(1, ["a", "b"], [("F", [3.0])], 0.0)]
    pairs: list[tuple[str, str]] = []

    def pair(srcs, hyps):
        pairs.extend((" ".join(s), " ".join(h)) for s, h in zip(srcs, hyps))
        return [-1.0] * len(hyps)

    vals = R.compute_features(entries, [R.FeatureSpec("L", lm=lm), R.FeatureSpec("P", pair=pair)],
                              [["x"], ["y"]])
    assert sorted(calls) == ["a", "a b"]
    assert sorted(pairs) == [("x", "a"), ("x", "a b"), ("y", "a b")]
    assert vals["L"] == [-2.0, -1.0, -2.0]


def test_ids_out_of_range_and_malformed_lines(tmp_path: Path, capsys) -> None:
    nb, _ = _write(tmp_path)
    short = tmp_path / "short.en"
    short.write_text("s1\ns2\n", encoding="utf-8")
    assert refused(capsys, r"in\.nbest:4:.*sentence id 2 is out of range", rerank_main(["--nbest", str(nb), "--src", str(short), "--output", str(tmp_path / "o"),
                     "--kenlm", f"K0={ARPA}"]))
    bad = tmp_path / "bad.nbest"
    bad.write_text("0 ||| a  ||| LM0= -1 ||| -1\n0 ||| a b ||| LM0= x ||| -1\n", encoding="utf-8")
    assert refused(capsys, r"bad\.nbest:2:", rerank_main(["--nbest", str(bad), "--output", str(tmp_path / "o"), "--kenlm", f"K0={ARPA}"]))
    assert refused(capsys, "more than once", rerank_main(["--nbest", str(nb), "--output", "o", "--lm", "A=x", "--lm", "B=y"]))
    assert refused(capsys, "already", rerank_main(["--nbest", str(nb), "--output", str(tmp_path / "o"), "--kenlm", f"LM0={ARPA}"]))


def test_also_adds_the_same_features_to_more_lists(models, tmp_path: Path, capsys) -> None:
    """--also NBEST SRC OUTPUT ...: each list gets, byte for byte, what a call of its own writes (the models loaded
    once); a list of another feature layout, an incomplete triple, --tune with --also and an --also output that is
    an input are refused (exit 2, one line), nothing written."""
    nb, src = _write(tmp_path)
    nb2, src2 = tmp_path / "two.nbest", tmp_path / "two.en"
    nb2.write_text("0 ||| t4 t1  ||| LM0= -2 WordPenalty0= -2 ||| -1.0\n1 ||| t2  ||| LM0= -1 WordPenalty0= -1 ||| -0.5\n",
                   encoding="utf-8")
    src2.write_text("s4 s1\ns2\n", encoding="utf-8")
    feats = ["--lm", f"LSTM0={models['lm']}", "--kenlm", f"KENLM0={ARPA}", "--encdec", f"RNN0={models['encdec']}",
             "--drop", "WordPenalty0"]
    assert rerank_main(["--nbest", str(nb), "--src", str(src), "--output", str(tmp_path / "a1"), *feats]) == 0
    assert rerank_main(["--nbest", str(nb2), "--src", str(src2), "--output", str(tmp_path / "b1"), *feats]) == 0
    assert rerank_main(["--nbest", str(nb), "--src", str(src), "--output", str(tmp_path / "a2"), *feats,
                        "--also", str(nb2), str(src2), str(tmp_path / "b2")]) == 0
    assert (tmp_path / "a2").read_bytes() == (tmp_path / "a1").read_bytes()
    assert (tmp_path / "b2").read_bytes() == (tmp_path / "b1").read_bytes()
    assert "RNN0=" in (tmp_path / "b2").read_text() and "WordPenalty0" not in (tmp_path / "b2").read_text()
    other = tmp_path / "other.nbest"
    other.write_text("0 ||| t4  ||| LM0= -2 ||| -1.0\n", encoding="utf-8")
    capsys.readouterr()
    for extra, pattern in (([str(other), str(src2), str(tmp_path / "c")], r"other\.nbest:1: features LM0"),
                           ([str(nb2), str(src2)], "NBEST SRC OUTPUT triples"),
                           ([str(nb2), str(src2), str(tmp_path / "c"), "--tune", "--ref", str(src)], "adds features only"),
                           ([str(nb2), str(src2), str(nb)], "")):
        assert refused(capsys, pattern, rerank_main(["--nbest", str(nb), "--src", str(src), "--output",
                                                     str(tmp_path / "a3"), "--kenlm", f"KENLM0={ARPA}",
                                                     "--also", *extra]))
        assert not (tmp_path / "c").exists() and not (tmp_path / "a3").exists()
    assert nb.read_text(encoding="utf-8") == NBEST


def _synthetic(tmp: Path) -> tuple[Path, Path]:
    """Each sentence: the decoder's total prefers a wrong hypothesis; feature GOOD marks the reference."""
    lines, refs = [], []
    for i in range(6):
        ref = f"the r{i} is x{i} y{i} here"
        refs.append(ref)
        lines.append(f"{i} ||| w{i} v{i} u{i}  ||| LM0= -2 GOOD0= -5 ||| -2")
        lines.append(f"{i} ||| {ref}  ||| LM0= -3 GOOD0= -1 ||| -3")
        lines.append(f"{i} ||| the q{i} is  ||| LM0= -4 GOOD0= -4 ||| -4")
    nb, ref = tmp / "syn.nbest", tmp / "syn.ref"
    nb.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ref.write_text("\n".join(refs) + "\n", encoding="utf-8")
    return nb, ref


def test_mert_weights_reorder_the_list(tmp_path: Path) -> None:
    nb, ref = _synthetic(tmp_path)
    init = tmp_path / "init.weights"
    init.write_text("[weight]\nLM0= 1\nGOOD0= 0\n", encoding="utf-8")
    before = tmp_path / "before.txt"
    assert rerank_main(["--nbest", str(nb), "--weights", str(init), "--one-best", str(before)]) == 0
    assert before.read_text().splitlines()[0] == "w0 v0 u0"
    w = tmp_path / "tuned.weights"
    out = tmp_path / "out.nbest"
    one = tmp_path / "one.txt"
    assert rerank_main(["--nbest", str(nb), "--tune", "--ref", str(ref), "--weights", str(init), "--weights-out",
                        str(w), "--output", str(out), "--one-best", str(one), "--restarts", "2"]) == 0
    weights = Weights.read(w)
    assert set(weights) == {"LM0", "GOOD0"} and weights["GOOD0"][0] > 0
    assert one.read_text().splitlines() == ref.read_text().splitlines()
    # applying the written weights again gives the same 1-best; totals are Σ λ·h
    one2 = tmp_path / "one2.txt"
    assert rerank_main(["--nbest", str(nb), "--weights", str(w), "--one-best", str(one2)]) == 0
    assert one2.read_text() == one.read_text()
    for es in read_nbest(out).values():
        for e in es:
            f = e.feature_dict()
            assert e.total == pytest.approx(weights["LM0"][0] * f["LM0"][0] + weights["GOOD0"][0] * f["GOOD0"][0],
                                            rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("optimizer", ["mert", "kbmira", "pro"])
def test_every_optimizer_finds_the_useful_feature(tmp_path: Path, optimizer: str) -> None:
    """--optimizer mert|kbmira|pro on the same list: each gives GOOD0 a positive weight and picks the references
    (from LM0 alone, the wrong hypotheses); the weights file names the optimiser."""
    nb, ref = _synthetic(tmp_path)
    init = tmp_path / "init.weights"
    init.write_text("[weight]\nLM0= 1\nGOOD0= 0\n", encoding="utf-8")
    w, one = tmp_path / "w", tmp_path / "one.txt"
    assert rerank_main(["--nbest", str(nb), "--tune", "--ref", str(ref), "--weights", str(init), "--weights-out",
                        str(w), "--one-best", str(one), "--optimizer", optimizer, "--seed", "3"]) == 0
    assert Weights.read(w)["GOOD0"][0] > 0 and one.read_text().splitlines() == ref.read_text().splitlines()
    assert f"({ {'mert': 'MERT', 'kbmira': 'kbMIRA', 'pro': 'PRO'}[optimizer] }, seed 3)" in w.read_text()
    # the reference code of the optimiser writes the same weights
    w_ref = tmp_path / "w_ref"
    assert rerank_main(["--nbest", str(nb), "--tune", "--ref", str(ref), "--weights", str(init), "--weights-out",
                        str(w_ref), "--optimizer", optimizer, "--seed", "3", "--optimizer-impl", "reference"]) == 0
    assert w_ref.read_bytes() == w.read_bytes()


def test_unknown_optimizer_is_refused(tmp_path: Path, capsys) -> None:
    nb, ref = _synthetic(tmp_path)
    assert refused(capsys, "--optimizer must be one of mert, kbmira, pro", rerank_main(
        ["--nbest", str(nb), "--tune", "--ref", str(ref), "--weights-out", str(tmp_path / "w"), "--optimizer", "sgd"]))
    assert refused(capsys, "--optimizer-impl must be one of auto, compiled, reference", rerank_main(
        ["--nbest", str(nb), "--tune", "--ref", str(ref), "--weights-out", str(tmp_path / "w"), "--optimizer-impl",
         "gpu"]))
    assert not (tmp_path / "w").exists()


def test_drop_leaves_a_feature_out_of_tuning_and_output(tmp_path: Path, capsys) -> None:
    """--drop GOOD0: the useful feature is gone, so the tuned 1-best is not the reference any more; naming a
    feature the list does not have is an error."""
    nb, ref = _synthetic(tmp_path)
    init = tmp_path / "init.weights"
    init.write_text("[weight]\nLM0= 1\nGOOD0= 0\n", encoding="utf-8")
    w, out, one = tmp_path / "w", tmp_path / "out.nbest", tmp_path / "one.txt"
    assert rerank_main(["--nbest", str(nb), "--drop", "GOOD0", "--tune", "--ref", str(ref), "--weights", str(init),
                        "--weights-out", str(w), "--output", str(out), "--one-best", str(one),
                        "--restarts", "2"]) == 0
    assert set(Weights.read(w)) == {"LM0"}
    assert all("GOOD0" not in e.feature_dict() for es in read_nbest(out).values() for e in es)
    assert one.read_text().splitlines() != ref.read_text().splitlines()
    assert refused(capsys, "cannot drop NOPE0", rerank_main(["--nbest", str(nb), "--drop", "NOPE0", "--output", str(out)]))


def test_weights_file_round_trip_and_errors(tmp_path: Path) -> None:
    text = Weights({"LM0": [0.5], "TM0": [0.1, -0.2]}).ini_text("comment")
    p = tmp_path / "w.ini"
    p.write_text("[feature]\nKENLM name=LM0\n" + text, encoding="utf-8")
    assert Weights.read(p) == {"LM0": [0.5], "TM0": [0.1, -0.2]}
    e = NBestEntry(0, ["a"], [("LM0", [2.0]), ("TM0", [1.0, 1.0])], 0.0)
    assert Weights.read(p).total(e) == pytest.approx(1.0 - 0.1)
    with pytest.raises(ValueError, match="no weight for feature X"):
        Weights({"LM0": [1.0]}).total(NBestEntry(0, ["a"], [("X", [1.0])], 0.0))
    with pytest.raises(ValueError, match="NAME=PATH"):
        R.parse_named("nopath")
    with pytest.raises(NBestError):
        R.check_ids([NBestEntry(3, ["a"], [], 0.0, line_no=7)], 2, "f")


@pytest.mark.parametrize("arch_flags", [["--arch", "rm", "--memory-size", "3"], ["--arch", "mogrifier", "--rounds", "2"]],
                         ids=["rmn", "mogrifier"])
@pytest.mark.parametrize("tree", [[], ["--prefix-tree"]], ids=["plain", "prefix-tree"])
def test_rmn_and_mogrifier_lms_as_features(arch_flags, tree, models, tmp_path: Path, capsys) -> None:
    from nmt.cli.lm_score import cli_main as score_main
    from nmt.cli.lm_train import cli_main as lm_train

    data = models["data"]
    lm = tmp_path / "lm"
    assert lm_train(["--train", str(data / "train.tok.fr"), "--valid", str(data / "val.tok.fr"), *arch_flags,
                     "--emb-dim", "8", "--hidden-dim", "8", "--out-dir", str(lm), "--threads", "1", "--progress",
                     "false", "--optimizer", "adam", "--lr", "0.02", "--batch-size", "8", "--max-updates", "3"]) == 0
    nb, src = _write(tmp_path)
    out = tmp_path / "out.nbest"
    assert rerank_main(["--nbest", str(nb), "--src", str(src), "--output", str(out), "--lm", f"MEM0={lm}",
                        "--batch-size", "3", *tree]) == 0
    entries = [e for es in read_nbest(out).values() for e in es]
    text = tmp_path / "hyps.txt"
    text.write_text("".join(e.hypothesis + "\n" for e in entries), encoding="utf-8")
    capsys.readouterr()
    assert score_main(["--model", str(lm), "--text", str(text)]) == 0
    ref = [float(x) for x in capsys.readouterr().out.split()]
    assert [e.feature_dict()["MEM0"][0] for e in entries] == pytest.approx(ref, abs=1e-5, rel=1e-5)


def test_one_best_has_one_line_per_source_line(tmp_path: Path, capsys) -> None:
    nb, src = _write(tmp_path)
    w = tmp_path / "w"
    w.write_text("LM0= 1\nWordPenalty0= 0\nK0= 0\nUnknownWordPenalty0= 1\n", encoding="utf-8")
    one = tmp_path / "one.txt"
    out = tmp_path / "out.nbest"
    assert rerank_main(["--nbest", str(nb), "--src", str(src), "--kenlm", f"K0={ARPA}", "--weights", str(w),
                        "--one-best", str(one), "--output", str(out)]) == 0
    # id 1 has no hypotheses: an empty line keeps the file aligned with the source
    assert one.read_text(encoding="utf-8").split("\n") == ["t1 t3", "", "t4", ""]
    assert [e.total for es in read_nbest(out).values() for e in es] == [-5, -4, -6, -3, -7, -9]
    assert refused(capsys, "needs --weights or --tune", rerank_main(["--nbest", str(nb), "--one-best", str(one)]))


def test_console_scripts_exist() -> None:
    import subprocess
    import sys

    bin_dir = Path(sys.executable).parent
    for name in ("smt-rerank", "smt-report"):
        proc = subprocess.run([str(bin_dir / name), "--help"], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0 and "--" in proc.stdout
