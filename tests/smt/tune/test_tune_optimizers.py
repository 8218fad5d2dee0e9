"""kbMIRA and PRO recover known weights; seeded starts of smt-tune (same seed → same run, two seeds differ)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from tests.smt.tune.test_tune_loop import MOSES_INI, _tune_args, tune_setup  # noqa: F401 (a fixture)

from smt_features.cli import tune as cli_tune
from smt_features.model.moses_ini import parse_moses_ini
from smt_features.tune.kbmira import KbMiraOptions, background_bleu, kbmira
from smt_features.tune.pool import PoolArrays
from smt_features.tune.pro import ProOptions, bleu_plus_one, pro
from smt_features.tune.start import iteration_seed, random_start, tuneable_groups

W_TRUE = np.array([0.5, -0.2, 0.2, 0.1])


def _synthetic_pool(sentences: int = 60, k: int = 6, seed: int = 0) -> PoolArrays:
    """Random features; each sentence's BLEU statistics fall with the rank under W_TRUE, so the
    best-BLEU candidate is the argmax of W_TRUE·h and W_TRUE reaches BLEU 100 on the pool."""
    rng = np.random.default_rng(seed)
    feats = rng.normal(size=(sentences * k, len(W_TRUE)))
    stats = np.zeros((sentences * k, 9))
    for s in range(sentences):
        rows = slice(s * k, (s + 1) * k)
        rank = np.argsort(np.argsort(-(feats[rows] @ W_TRUE)))
        stats[rows] = [[10 - q, 10, 9 - q, 9, 8 - q, 8, 7 - q, 7, 10] for q in rank]
    return PoolArrays(feats, stats, np.repeat(np.arange(sentences), k), np.arange(sentences + 1) * k)


def _cosine(u: np.ndarray, v: np.ndarray) -> float:
    return float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))


def test_kbmira_recovers_the_generating_weights():
    pool = _synthetic_pool()
    assert pool.bleu(W_TRUE) == pytest.approx(100.0)
    start = np.array([0.0, 0.0, 0.0, 1.0])
    res = kbmira(pool, start, KbMiraOptions(seed=3))
    assert res.init_bleu < 90
    assert _cosine(res.weights, W_TRUE) > 0.99
    assert res.bleu == pytest.approx(100.0)
    assert np.abs(res.weights).sum() == pytest.approx(1.0)  # Moses's dense normalisation
    again = kbmira(pool, start, KbMiraOptions(seed=3))
    assert np.array_equal(again.weights, res.weights)  # seeded shuffling: deterministic
    fixed = kbmira(pool, np.array([0.0, 0.0, 0.3, 1.0]), KbMiraOptions(seed=3, fixed=["F2"]))
    assert fixed.weights[2] == 0.3  # a fixed non-zero weight is kept and sets the scale


def test_pro_recovers_the_generating_weights():
    pool = _synthetic_pool()
    start = np.array([0.0, 0.0, 0.0, 1.0])
    res = pro(pool, start, ProOptions(seed=3, interpolation=1.0))
    assert res.pairs > 0 and _cosine(res.weights, W_TRUE) > 0.95 and res.bleu > 95
    # Hopkins & May's interpolation: one step moves a tenth of the way from the current weights
    step = pro(pool, start, ProOptions(seed=3))
    expected = 0.1 * res.weights + 0.9 * start
    assert np.allclose(step.weights, expected / np.abs(expected).sum())


def test_sentence_bleus_of_moses():
    stats = np.array([[3, 4, 1, 3, 0, 2, 0, 1, 5]], dtype=float)
    # smoothedSentenceBleu: +1 on every order; brevity 1 - 5/4
    expected = np.exp(np.mean(np.log([4 / 5, 2 / 4, 1 / 3, 1 / 2])) + (1 - 5 / 4))
    assert bleu_plus_one(stats)[0] == pytest.approx(expected)
    bg = np.array([4, 4, 3, 3, 2, 2, 1, 1, 4], dtype=float)
    s = stats[0] + bg
    expected_bg = np.exp(np.mean(np.log(s[0:8:2] / s[1:8:2])) + min(0.0, 1 - s[8] / s[1])) * s[8]
    assert background_bleu(stats, bg)[0] == pytest.approx(expected_bg)


def test_random_start_is_seeded_and_keeps_fixed_and_untuneable_weights():
    base = parse_moses_ini(MOSES_INI)
    groups = tuneable_groups(base)
    assert "UnknownWordPenalty0" not in groups and "LM0" in groups
    a = random_start(base.weights, groups, 5)
    assert a == random_start(base.weights, groups, 5)
    assert a != random_start(base.weights, groups, 6)
    assert a["UnknownWordPenalty0"] == [1.0]
    assert sum(abs(v) for g in groups for v in a[g]) == pytest.approx(1.0)
    b = random_start(base.weights, groups, 5, fixed=["LM0"], ranges={"Distortion0": (2.0, 3.0)})
    assert b["LM0"] == [0.5] and 2.0 <= b["Distortion0"][0] <= 3.0
    assert iteration_seed(None, 2) == 3 and iteration_seed(10, 2) == 12


def _state(root, work):
    return json.loads((root / work / "iterations.json").read_text())


def _args_without_seed(root, work, *extra):
    args = _tune_args(root, work, *extra)
    i = args.index("--seed")
    return args[:i] + args[i + 2:]


def test_tune_seeds_same_seed_same_run_two_seeds_differ(tune_setup):
    root = tune_setup
    for work, seed in (("a", "3"), ("b", "3"), ("c", "4")):
        assert cli_tune.cli_main(_tune_args(root, work, "--max-iterations", "2") + ["--seed", seed]) == 0
    a, b, c = (_state(root, w) for w in "abc")
    def steps(state):  # everything but the timings
        return [(r["weights"], r["decode"]["dev_bleu"], r.get("mert", {}).get("weights")) for r in state["iterations"]]

    assert steps(a) == steps(b)
    assert a["final"]["weights"] == b["final"]["weights"]
    assert a["iterations"][0]["weights"] != c["iterations"][0]["weights"]  # different starting points
    ini = parse_moses_ini(MOSES_INI).weights
    assert a["iterations"][0]["weights"] != ini
    # no --seed: the first iteration starts from the moses.ini's weights, as before
    assert cli_tune.cli_main(_args_without_seed(root, "d", "--max-iterations", "1")) == 0
    assert _state(root, "d")["iterations"][0]["weights"] == ini
    assert _state(root, "d")["config"]["seed"] is None


@pytest.mark.parametrize("optimizer", ["kbmira", "pro"])
def test_tune_loop_with_other_optimizers(tune_setup, optimizer):
    root = tune_setup
    assert cli_tune.cli_main(_tune_args(root, optimizer, "--max-iterations", "3", "--optimizer", optimizer)) == 0
    state = _state(root, optimizer)
    rec = state["iterations"][0]
    assert optimizer in rec and "mert" not in rec and "bleu" in rec[optimizer]
    if optimizer == "kbmira":  # MIRA on this easy pool finds better weights than the random start
        assert rec[optimizer]["bleu"] > rec[optimizer]["init_bleu"]
    assert "PRO BLEU" in (root / optimizer / "mert.log").read_text() or optimizer == "kbmira"
    # resuming under another optimizer is refused
    assert cli_tune.cli_main(_tune_args(root, optimizer, "--resume", "--optimizer", "mert")) == 2


def test_tune_refuses_an_unknown_optimizer(tune_setup, capsys):
    assert cli_tune.cli_main(_tune_args(tune_setup, "x", "--optimizer", "lbfgs")) == 2
    assert "--optimizer must be one of mert, kbmira, pro" in capsys.readouterr().err


def test_a_run_without_seed_resumes_with_seed_one(tune_setup):
    root = tune_setup
    assert cli_tune.cli_main(_args_without_seed(root, "r", "--max-iterations", "1")) == 0
    assert cli_tune.cli_main(_args_without_seed(root, "r", "--max-iterations", "2", "--resume")
                             + ["--seed", "1"]) == 0
    assert cli_tune.cli_main(_args_without_seed(root, "r", "--max-iterations", "3", "--resume")
                             + ["--seed", "2"]) == 2  # another seed: refused


# ----------------------------------------------------------------------------- fast code = reference code

def _real_pool_or_synthetic():
    from tests.smt.tune.test_mert_kernel import random_pool, real_pool

    return [real_pool()[0], random_pool(5, n_sent=40, dim=5), _synthetic_pool(sentences=30, k=7, seed=3)]


@pytest.mark.parametrize("model_bg", [False, True])
def test_kbmira_fast_loop_gives_the_reference_numbers(model_bg):
    for arrays in _real_pool_or_synthetic():
        dim = arrays.features.shape[1]
        init = np.random.default_rng(dim).normal(size=dim)
        for seed, fixed in ((1, ()), (2, (1,))):
            opts = dict(seed=seed, passes=8, model_bg=model_bg, fixed=fixed)
            ref = kbmira(arrays, init, KbMiraOptions(impl="reference", **opts))
            fast = kbmira(arrays, init, KbMiraOptions(impl="fast", **opts))
            assert np.array_equal(ref.weights, fast.weights)
            assert (ref.epoch_bleus, ref.updates, ref.best_epoch, ref.bleu) == \
                (fast.epoch_bleus, fast.updates, fast.best_epoch, fast.bleu)


@pytest.mark.parametrize("chunk", [64, 7])
def test_pro_vectorised_sampling_gives_the_reference_pairs(chunk, monkeypatch):
    from smt_features.tune import pro as pro_module
    from smt_features.tune.pro import sample_pairs, sample_pairs_reference

    monkeypatch.setattr(pro_module, "CHUNK", chunk)  # 7: sentences in several chunks, cut anywhere

    for arrays in _real_pool_or_synthetic():
        for opts in (ProOptions(seed=4), ProOptions(seed=5, samples=300, keep=300), ProOptions(seed=6, keep=7),
                     ProOptions(seed=7, samples=40, keep=60, min_diff=0.2), ProOptions(seed=8, min_diff=2.0)):
            x1, y1 = sample_pairs_reference(arrays, opts, np.random.default_rng(opts.seed))
            x2, y2 = sample_pairs(arrays, opts, np.random.default_rng(opts.seed))
            assert np.array_equal(x1, x2) and np.array_equal(y1, y2)
        dim = arrays.features.shape[1]
        init = np.full(dim, 1.0 / dim)
        ref = pro(arrays, init, ProOptions(seed=3, impl="reference"))
        fast = pro(arrays, init, ProOptions(seed=3))
        assert np.array_equal(ref.weights, fast.weights) and ref.pairs == fast.pairs


@pytest.mark.parametrize("optimizer", ["mert", "kbmira", "pro"])
def test_tune_optimizer_impl_reference_gives_the_same_run(tune_setup, optimizer):
    root = tune_setup
    runs = {}
    for impl in ("auto", "reference"):
        assert cli_tune.cli_main(_tune_args(root, f"{optimizer}-{impl}", "--max-iterations", "3", "--optimizer",
                                            optimizer, "--optimizer-impl", impl)) == 0
        runs[impl] = _state(root, f"{optimizer}-{impl}")
        rec = runs[impl]["iterations"][0]
        assert rec["decode"]["read_seconds"] >= 0 and rec[optimizer]["seconds"] >= 0
    assert runs["auto"]["final"]["weights"] == runs["reference"]["final"]["weights"]
    assert [r[optimizer]["weights"] for r in runs["auto"]["iterations"] if optimizer in r] == \
        [r[optimizer]["weights"] for r in runs["reference"]["iterations"] if optimizer in r]
    assert (root / f"{optimizer}-auto" / "moses.tuned.ini").read_bytes() == \
        (root / f"{optimizer}-reference" / "moses.tuned.ini").read_bytes()


def test_tune_refuses_an_unknown_optimizer_impl(tune_setup, capsys):
    assert cli_tune.cli_main(_tune_args(tune_setup, "y", "--optimizer-impl", "numba")) == 2
    assert "--optimizer-impl must be one of auto, compiled, reference" in capsys.readouterr().err
