"""MERT: BLEU statistics, the exact line search and the optimiser (the smt-tune loop: test_tune_loop.py)."""
from __future__ import annotations

import random

import numpy as np
import pytest
import sacrebleu

from smt_features.tune.bleu_stats import BleuScorer, bleu_from_stats, corpus_bleu, sentence_bleu
from smt_features.tune.envelope import line_search, sort_rows, upper_envelope
from smt_features.tune.mert import MertOptions, mert, optimise
from smt_features.tune.pool import NBestPool, PoolArrays

VOCAB = [f"w{i}" for i in range(8)]


def _random_sentence(rng: random.Random, lo: int = 3, hi: int = 12) -> list[str]:
    return [rng.choice(VOCAB) for _ in range(rng.randint(lo, hi))]


def _corrupt(rng: random.Random, ref: list[str], errors: int) -> list[str]:
    out = list(ref)
    for _ in range(errors):
        op = rng.randrange(3)
        if op == 0 and len(out) > 1:
            del out[rng.randrange(len(out))]
        elif op == 1:
            out[rng.randrange(len(out))] = rng.choice(VOCAB)
        else:
            i = rng.randrange(len(out))
            out.insert(i, out[i])
    return out


# =============================================================================== BLEU statistics

def test_corpus_bleu_equals_sacrebleu_tokenize_none():
    rng = random.Random(3)
    refs = [" ".join(_random_sentence(rng)) for _ in range(60)]
    hyps = [" ".join(_corrupt(rng, r.split(), rng.randint(0, 4))) for r in refs]
    ours = corpus_bleu(hyps, refs)
    ref_score = sacrebleu.metrics.BLEU(tokenize="none").corpus_score(hyps, [refs]).score
    assert ours == pytest.approx(ref_score, abs=1e-9)
    assert 10 < ours < 100


def test_corpus_bleu_multi_reference_closest_length():
    rng = random.Random(5)
    refs1 = [" ".join(_random_sentence(rng)) for _ in range(40)]
    refs2 = [" ".join(_corrupt(rng, r.split(), 2)) for r in refs1]
    hyps = [" ".join(_corrupt(rng, r.split(), rng.randint(0, 3))) for r in refs1]
    ours = corpus_bleu(hyps, [[a, b] for a, b in zip(refs1, refs2)])
    ref_score = sacrebleu.metrics.BLEU(tokenize="none").corpus_score(hyps, [refs1, refs2]).score
    assert ours == pytest.approx(ref_score, abs=1e-9)


def test_bleu_brevity_penalty_and_zero_matches():
    scorer = BleuScorer(["a b c d e f"])
    s = scorer.stats(0, "a b c d")
    assert list(s) == [4, 4, 3, 3, 2, 2, 1, 1, 6]
    assert bleu_from_stats(s) == pytest.approx(100 * np.exp(1 - 6 / 4))
    assert bleu_from_stats(scorer.stats(0, "a c e")) == 0.0  # no bigram match: 0 (Moses, no smoothing)
    assert bleu_from_stats(scorer.stats(0, "")) == 0.0
    # vectorised over leading axes
    many = np.stack([s, scorer.stats(0, "a b c d e f")])
    np.testing.assert_allclose(bleu_from_stats(many), [100 * np.exp(1 - 6 / 4), 100.0])


def test_sentence_bleu_add_one_matches_sacrebleu():
    rng = random.Random(7)
    for _ in range(20):
        ref = " ".join(_random_sentence(rng, 2, 9))
        hyp = " ".join(_corrupt(rng, ref.split(), rng.randint(0, 4)))
        ours = sentence_bleu(BleuScorer([ref]).stats(0, hyp), smooth=1.0)
        theirs = sacrebleu.metrics.BLEU(tokenize="none", smooth_method="add-k", smooth_value=1,
                                        effective_order=False).sentence_score(hyp, [ref]).score
        assert ours == pytest.approx(theirs, abs=1e-6), (hyp, ref)


def _brute_force_stats(hyp: list[str], refs: list[list[str]]) -> list[float]:
    """The 9 statistics by their definition: clipped n-gram matches (max count over the references), hypothesis
    n-grams, and the closest reference length (the shorter on a tie)."""
    out: list[float] = []
    for n in range(1, 5):
        grams = [tuple(hyp[i:i + n]) for i in range(len(hyp) - n + 1)]
        matched = 0
        for g in set(grams):
            most = max(sum(tuple(r[i:i + n]) == g for i in range(len(r) - n + 1)) for r in refs)
            matched += min(grams.count(g), most)
        out += [matched, max(len(hyp) - n + 1, 0)]
    out.append(min((len(r) for r in refs), key=lambda k: (abs(k - len(hyp)), k)))
    return out


def test_sentence_stats_are_the_definition():
    rng = random.Random(11)
    vocab = ["a", "b", "c", "d"]  # few types: repeated n-grams, clipping at work
    for _ in range(300):
        refs = [[rng.choice(vocab) for _ in range(rng.randint(1, 9))] for _ in range(rng.randint(1, 3))]
        hyp = [rng.choice(vocab) for _ in range(rng.randint(0, 10))]
        scorer = BleuScorer([[" ".join(r) for r in refs]])
        assert list(scorer.stats(0, " ".join(hyp))) == _brute_force_stats(hyp, refs), (hyp, refs)


# =============================================================================== pool

NBEST_TEXT = """0 ||| a b c  ||| Distortion0= 0 LM0= -3.5 WordPenalty0= -3 TranslationModel0= -1 -2 ||| -4
0 ||| a b c  ||| Distortion0= 0 LM0= -3.5 WordPenalty0= -3 TranslationModel0= -1 -2 ||| -4
0 ||| a b c  ||| Distortion0= -2 LM0= -3.5 WordPenalty0= -3 TranslationModel0= -1 -2 ||| -5
1 ||| x y  ||| Distortion0= 0 LM0= -2 WordPenalty0= -2 TranslationModel0= -0.5 -1 ||| -3
"""


def test_pool_reads_moses_nbest_and_dedupes(tmp_path):
    path = tmp_path / "n.best"
    path.write_text(NBEST_TEXT, encoding="utf-8")
    pool = NBestPool(["a b c", "x y z"])
    read, new = pool.add_nbest_file(path)
    assert (read, new) == (4, 3)  # the repeated line is one candidate; other Distortion0 value is another
    assert pool.feature_names == ["Distortion0", "LM0", "WordPenalty0", "TranslationModel0_0",
                                  "TranslationModel0_1"]
    assert pool.layout == [("Distortion0", 1), ("LM0", 1), ("WordPenalty0", 1), ("TranslationModel0", 2)]
    assert pool.add_nbest_file(path) == (4, 0)
    assert pool.sizes() == [2, 1]
    assert pool.one_best([1, 0, 0, 0, 0]) == ["a b c", "x y"]
    # an n-best list with another feature layout is refused
    other = tmp_path / "other.best"
    other.write_text("0 ||| a  ||| LM0= -1 ||| -1\n", encoding="utf-8")
    with pytest.raises(ValueError, match="differ"):
        pool.add_nbest_file(other)
    # a sentence id beyond the references is refused, and the lines before it stay in the pool
    beyond = tmp_path / "beyond.best"
    beyond.write_text(NBEST_TEXT.replace("1 ||| x y", "2 ||| x y"), encoding="utf-8")
    fresh = NBestPool(["a b c", "x y z"])
    with pytest.raises(ValueError, match="sentence id 2 outside the 2 references"):
        fresh.add_nbest_file(beyond)
    assert fresh.sizes() == [2, 0]


# =============================================================================== line search

def _random_pool(seed: int, n_sent: int = 25, n_cand: int = 15, dim: int = 4) -> NBestPool:
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    refs = [_random_sentence(rng) for _ in range(n_sent)]
    pool = NBestPool([" ".join(r) for r in refs])
    for i, ref in enumerate(refs):
        for _ in range(n_cand):
            hyp = _corrupt(rng, ref, rng.randint(0, 5))
            feats = list(nrng.normal(size=dim - 1)) + [-float(len(hyp))]  # last: an integer feature (ties)
            pool.add(i, " ".join(hyp), feats)
        pool.add(i, " ".join(hyp), feats[:-1] + [feats[-1] - 1.0])  # same string, other features
    return pool


@pytest.mark.parametrize("seed", range(6))
def test_line_search_beats_every_grid_point(seed):
    pool = _random_pool(seed)
    arrays = pool.arrays()
    rng = np.random.default_rng(100 + seed)
    origin = rng.normal(size=4)
    for direction in (rng.normal(size=4), np.eye(4)[3], np.eye(4)[0]):
        a = arrays.features @ origin
        b = arrays.features @ direction
        res = line_search(arrays, a, b, min_interval=0.0)
        at_gamma = arrays.bleu(origin + res.gamma * direction)
        assert at_gamma == pytest.approx(res.bleu, abs=1e-9)
        grid = np.concatenate([np.linspace(-20, 20, 1601), np.linspace(-1, 1, 801)])
        assert res.bleu >= _grid_bleu(arrays, a, b, grid).max() - 1e-9


def _grid_bleu(arrays: PoolArrays, a: np.ndarray, b: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Brute force: corpus BLEU of the argmax 1-bests at every γ of ``grid``."""
    scores = a[:, None] + b[:, None] * grid[None, :]
    total = np.zeros((len(grid), 9))
    for s in range(arrays.num_sentences):
        lo, hi = arrays.offsets[s], arrays.offsets[s + 1]
        total += arrays.stats[lo + np.argmax(scores[lo:hi], axis=0)]
    return bleu_from_stats(total)


def test_upper_envelope_matches_brute_force():
    pool = _random_pool(11, n_sent=10, n_cand=30)
    arrays = pool.arrays()
    rng = np.random.default_rng(0)
    a = arrays.features @ rng.normal(size=4)
    b = arrays.features[:, 3]  # integer slopes: many equal ones
    hull = upper_envelope(arrays.sent, a, b, sort_rows(arrays.sent, b))
    on_hull = np.zeros(len(a), dtype=bool)
    on_hull[hull] = True
    for g in np.linspace(-30, 30, 1201):
        scores = a + g * b
        for s in range(arrays.num_sentences):
            lo, hi = arrays.offsets[s], arrays.offsets[s + 1]
            seg = scores[lo:hi]
            # the brute-force winner (or a line exactly tied with it) is on the envelope
            assert on_hull[lo:hi][seg == seg.max()].any(), (g, s)
    # every envelope line wins somewhere: between its breakpoints
    for s in range(arrays.num_sentences):
        rows = [r for r in hull if arrays.sent[r] == s]
        slopes = b[rows]
        assert np.all(np.diff(slopes) > 0)
        for j, r in enumerate(rows):
            lo_g = -1e9 if j == 0 else (a[rows[j - 1]] - a[r]) / (b[r] - b[rows[j - 1]])
            hi_g = 1e9 if j == len(rows) - 1 else (a[r] - a[rows[j + 1]]) / (b[rows[j + 1]] - b[r])
            assert lo_g < hi_g
            g = 0.5 * (lo_g + hi_g) if abs(lo_g) < 1e8 and abs(hi_g) < 1e8 else (hi_g - 1 if lo_g < -1e8 else lo_g + 1)
            lo, hi = arrays.offsets[s], arrays.offsets[s + 1]
            assert np.argmax((a + g * b)[lo:hi]) + lo == r


# =============================================================================== optimiser

def _ratio_pool(rng: random.Random, n_sent: int = 30):
    """Two features; the reference wins a sentence iff 0.8 < λ1/λ2 < 1.25 with λ2 > 0
    (thresholds vary per sentence, the tightest are 0.8 and 1.25)."""
    refs, lists = [], []
    for i in range(n_sent):
        ref = _random_sentence(rng, 6, 10)
        bad1 = ["z1"] * len(ref)
        bad2 = ["z2"] * (len(ref) - 1) + [ref[0]]
        hi_t = 1.25 if i % 3 == 0 else rng.uniform(1.25, 3.0)
        lo_t = 0.8 if i % 3 == 1 else rng.uniform(0.2, 0.8)
        # score(bad1) - score(ref) = λ1 - hi_t·λ2 < 0  ⇔  λ1/λ2 < hi_t
        # score(bad2) - score(ref) = -λ1 + lo_t·λ2 < 0 ⇔  λ1/λ2 > lo_t
        base = np.array([rng.uniform(-3, 3), rng.uniform(-3, 3)])
        lists.append([(" ".join(ref), base), (" ".join(bad1), base + [1.0, -hi_t]),
                      (" ".join(bad2), base + [-1.0, lo_t])])
        refs.append(" ".join(ref))
    return refs, lists


def test_mert_finds_the_optimal_weight_ratio():
    refs, lists = _ratio_pool(random.Random(1))
    weights, bleu = optimise(lists, refs, [1.0, -1.0], restarts=5, seed=3)
    assert bleu == pytest.approx(100.0)
    assert weights[1] > 0 and 0.8 < weights[0] / weights[1] < 1.25
    assert np.abs(weights).sum() == pytest.approx(1.0)  # Moses normalisation Σ|λ| = 1
    # the reported BLEU is the BLEU of the 1-bests the weights choose, recomputed independently
    chosen = [max(cands, key=lambda c: float(np.dot(weights, c[1])))[0] for cands in lists]
    assert bleu == pytest.approx(corpus_bleu(chosen, refs), abs=1e-9)
    assert bleu == pytest.approx(sacrebleu.metrics.BLEU(tokenize="none").corpus_score(chosen, [refs]).score,
                                 abs=1e-9)


def test_mert_reported_bleu_is_the_one_best_bleu_on_random_data():
    pool = _random_pool(21, n_sent=30, n_cand=20)
    res = mert(pool, [0.1, 0.1, 0.1, 0.1], MertOptions(restarts=3, random_directions=2, seed=4))
    assert res.bleu == pytest.approx(corpus_bleu(pool.one_best(res.weights), pool.references), abs=1e-9)
    assert res.bleu >= max(res.start_bleus) - 1e-9
    assert res.bleu >= pool.bleu([0.1, 0.1, 0.1, 0.1])


def test_mert_is_deterministic_with_a_seed():
    pool = _random_pool(8, n_sent=20)
    opts = MertOptions(restarts=4, random_directions=1, seed=42)
    r1 = mert(pool, [1.0, 0.0, 0.0, 0.5], opts)
    r2 = mert(_random_pool(8, n_sent=20), [1.0, 0.0, 0.0, 0.5], opts)
    np.testing.assert_array_equal(r1.weights, r2.weights)
    assert r1.bleu == r2.bleu and r1.start_bleus == r2.start_bleus


def test_mert_in_worker_processes_gives_the_same_result():
    pool = _random_pool(9, n_sent=30, n_cand=12, dim=5)
    init = [0.2, -0.1, 0.3, 0.1, -0.2]
    for opts in (dict(restarts=5, seed=3), dict(restarts=4, seed=5, clip_to_ranges=True,
                                               ranges={pool.feature_names[0]: (0.0, 0.5)})):
        here = mert(pool, init, MertOptions(**opts))
        forked = mert(pool, init, MertOptions(**opts, workers=2))
        assert np.array_equal(here.weights, forked.weights) and here.bleu == forked.bleu
        assert here.start_bleus == forked.start_bleus and here.best_start == forked.best_start
        assert here.line_searches == forked.line_searches
    # random directions share one generator across starts: climbed here whatever `workers` says
    a = mert(pool, init, MertOptions(restarts=3, random_directions=2, seed=7))
    b = mert(pool, init, MertOptions(restarts=3, random_directions=2, seed=7, workers=2))
    assert np.array_equal(a.weights, b.weights)


def test_fixed_features_and_ranges():
    pool = _random_pool(9, n_sent=20)
    names = pool.feature_names
    init = [0.3, -0.2, 0.1, 0.4]
    res = mert(pool, init, MertOptions(restarts=3, seed=1, fixed=[names[1]]))
    assert res.weights[1] == pytest.approx(-0.2)
    # a feature fixed at 0 (switched off, as +RNN without its WP column) stays 0 and the run stays normalised;
    # it equals the run on the pool without that feature
    off = mert(pool, [0.3, 0.0, 0.1, 0.4], MertOptions(restarts=3, seed=1, fixed=[names[1]]))
    assert off.weights[1] == 0.0 and np.sum(np.abs(off.weights)) == pytest.approx(1.0)
    res = mert(pool, init, MertOptions(restarts=3, seed=1, ranges={names[0]: (0.0, 0.5)}, default_range=(-1, 1),
                                       clip_to_ranges=True))
    assert 0.0 <= res.weights[0] <= 0.5 and np.all(np.abs(res.weights) <= 1.0 + 1e-12)


def test_optimise_accepts_named_weights_and_nbest_entries(tmp_path):
    from nmt.core.formats.nbest import read_nbest

    path = tmp_path / "n.best"
    path.write_text(NBEST_TEXT, encoding="utf-8")
    grouped = read_nbest(path)
    lists = [grouped[0], grouped[1]]
    init = {"Distortion0": 0.3, "LM0": 0.5, "WordPenalty0": -1.0, "TranslationModel0_0": 0.2,
            "TranslationModel0_1": 0.2}
    weights, bleu = optimise(lists, ["a b c", "x y z"], init, restarts=2)
    assert set(weights) == set(init) and 0 <= bleu <= 100  # (too short for a 4-gram: 0)
    assert sum(abs(v) for v in weights.values()) == pytest.approx(1.0)


def test_line_search_on_large_pool_is_fast():
    rng = np.random.default_rng(0)
    n_sent, n_cand, dim = 300, 300, 9
    n = n_sent * n_cand
    feats = rng.normal(size=(n, dim))
    stats = np.zeros((n, 9))
    length = rng.integers(5, 20, size=n)
    for k in range(4):
        stats[:, 2 * k + 1] = np.maximum(length - k, 0)
        stats[:, 2 * k] = rng.binomial(stats[:, 2 * k + 1].astype(int), 0.5 / (k + 1))
    stats[:, 8] = 12
    arrays = PoolArrays(feats, stats, np.repeat(np.arange(n_sent), n_cand), np.arange(n_sent + 1) * n_cand)
    import time

    a = feats @ rng.normal(size=dim)
    order = arrays.coordinate_order(0)
    t = time.perf_counter()
    for _ in range(5):
        line_search(arrays, a, feats[:, 0], order=order)
    assert (time.perf_counter() - t) / 5 < 0.5  # ~10 ms on an idle core; generous for a loaded machine


def test_pool_arrays_built_in_steps_equal_arrays_built_at_once():
    """arrays() merges the candidates added since its last call after each sentence's earlier ones."""
    rng = random.Random(4)
    refs = [" ".join(_random_sentence(rng)) for _ in range(6)]
    batches = [[(rng.randrange(6), " ".join(_random_sentence(rng)), [rng.random(), float(rng.randrange(3))])
                for _ in range(25)] for _ in range(4)]
    stepwise, at_once = NBestPool(refs), NBestPool(refs)
    for batch in batches:
        for s, h, f in batch:
            stepwise.add(s, h, f)
            at_once.add(s, h, f)
        for s in range(6):  # every sentence needs a candidate before arrays()
            stepwise.add(s, "w0", [0.0, 0.0])
            at_once.add(s, "w0", [0.0, 0.0])
        stepwise.arrays()
    a, b = stepwise.arrays(), at_once.arrays()
    assert np.array_equal(a.features, b.features) and np.array_equal(a.stats, b.stats)
    assert np.array_equal(a.sent, b.sent) and np.array_equal(a.offsets, b.offsets)
    assert stepwise.hypotheses(range(len(a.sent))) == at_once.hypotheses(range(len(b.sent)))
