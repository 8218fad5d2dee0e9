"""Stack decoder on hand-made fixtures (tests/data/decoder, see its README).

Weights are Moses's train-model.perl defaults unless a test says otherwise:
UnknownWordPenalty0 1, WordPenalty0 -1, PhrasePenalty0 0.2,
TranslationModel0 0.2 × 4, Distortion0 0.3, LM0 0.5.
"""
from __future__ import annotations

import math

import pytest

pytest.importorskip("kenlm")

from smt_features.decode.corpus import decode_corpus  # noqa: E402
from smt_features.decode.decoder import Decoder  # noqa: E402
from smt_features.decode.hypothesis import O_SL, O_TGT  # noqa: E402
from smt_features.decode.load import build_decoder  # noqa: E402
from smt_features.decode.options import SearchOptions  # noqa: E402
from smt_features.decode.table import PhraseTable  # noqa: E402
from smt_features.model.features import (  # noqa: E402
    LOWEST_SCORE, DistortionFeature, FeatureSet, PhrasePenaltyFeature, PhraseTableFeature,
    UnknownWordPenaltyFeature, WordPenaltyFeature,
)
from smt_features.model.kenlm_feature import KenLMFeature  # noqa: E402
from smt_features.model.kenlm import KenLMScorer  # noqa: E402
from tests import TEST_DATA

DATA = TEST_DATA / "decoder"
LN2 = math.log(2.0)
LN10 = math.log(10.0)
DEFAULT_WEIGHTS = {"UnknownWordPenalty0": [1.0], "WordPenalty0": [-1.0], "PhrasePenalty0": [0.2],
                   "TranslationModel0": [0.2] * 4, "Distortion0": [0.3], "LM0": [0.5]}


def make_features(lm: str = "toy.arpa") -> list:
    return [UnknownWordPenaltyFeature(), WordPenaltyFeature(), PhrasePenaltyFeature(),
            PhraseTableFeature("TranslationModel0", 4, table_limit=20), DistortionFeature(),
            KenLMFeature(KenLMScorer(DATA / lm), name="LM0")]


def make_decoder(lm: str = "toy.arpa", table: PhraseTable | None = None, weights=None, **opts) -> Decoder:
    table = table or PhraseTable.load(DATA / "toy.phrase-table")
    return Decoder(make_features(lm), weights or DEFAULT_WEIGHTS, table, SearchOptions(**opts))


def exhaustive(decoder: Decoder, words: list[str], distortion_limit: int) -> list[tuple[float, list[str]]]:
    """Every derivation's score, by brute force, with Moses's distortion-limit rules.

    The LM is applied to each complete target string at once (KenLMScorer.score_sentence),
    independently of the decoder's state handling and recombination.
    """
    scorer = decoder.lms[0].scorer
    w_lm = decoder.weight_dict()["LM0"][0]
    w_d = decoder.weight_dict()["Distortion0"][0]
    n = len(words)
    full = (1 << n) - 1
    out: list[tuple[float, list[str]]] = []

    def rec(cov: int, last: int, tgt: list[str], sl: float, dist: float) -> None:
        if cov == full:
            out.append((sl + w_d * dist + w_lm * scorer.score_sentence(tgt), tgt))
            return
        first_gap = (~cov & (cov + 1)).bit_length() - 1
        for start in range(n):
            for end in range(start, n):
                mask = ((1 << (end - start + 1)) - 1) << start
                if cov & mask:
                    break
                jump = abs(start - last - 1)
                if distortion_limit >= 0:
                    if jump > distortion_limit:
                        continue
                    if start != first_gap and end + 1 - first_gap > distortion_limit:
                        continue
                opts = decoder.options_for(tuple(words[start:end + 1]))
                if not opts and start == end:
                    opts = [decoder.unknown_option(words[start])]
                for o in opts:
                    rec(cov | mask, end, tgt + list(o[O_TGT]), sl + o[O_SL], dist - jump)

    rec(0, -1, [], 0.0, 0.0)
    out.sort(key=lambda x: -x[0])
    return out


def weighted(decoder: Decoder, values) -> float:
    return sum(w * v for w, v in zip(decoder.weights, values))


def test_two_phrase_toy_best_path_and_score():
    """Source "a b". Candidates (TM ln terms are multiples of ln 2):

    * [a→x][b→y]: TM 0.2·8·ln½ = −1.6 ln 2 = −1.10904; WP −1·(−2) = +2; PP 0.2·2 = 0.4;
      distortion 0; LM log10 p(x|<s>) + p(y|x) + p(</s>|y) = −0.25 − 0.5 − 0.25 = −1,
      weighted 0.5·(−ln 10) = −1.15129. Total = 2.4 − 1.6 ln 2 − 0.5 ln 10 = 0.139672.
    * [a b→x y]: TM 0.2·4·ln¼ = −1.6 ln 2 (the same), WP +2, PP 0.2, same LM: 0.139672 − 0.2.
    * [a→x][b→z]: TM −2.4 ln 2; LM −0.25 + (−0.25 − 1) + (−1) = −2.5: total −2.14178.
    * [b→y][a→x] (swapped): distortion −1 − 2 = −3 → −0.9; LM −1.5 − 0.5 − 1.25 = −3.25: −3.35074.

    So the best is "x y" from two phrases with score 2.4 − 1.6 ln 2 − 0.5 ln 10.
    """
    dec = make_decoder()
    tr = dec.translate("a b")
    expected = 2.4 - 1.6 * LN2 - 0.5 * LN10
    assert tr.tokens == ["x", "y"]
    assert tr.score == pytest.approx(expected, abs=1e-6)
    assert expected == pytest.approx(0.139672, abs=1e-6)
    h = dec.features.split(tr.values)
    assert h["TranslationModel0"] == pytest.approx([2 * math.log(0.5)] * 4)
    assert h["LM0"] == pytest.approx([-1.0 * LN10], abs=1e-6)
    assert h["Distortion0"] == [0.0]
    assert h["WordPenalty0"] == [-2.0]
    assert h["PhrasePenalty0"] == [2.0]
    assert h["UnknownWordPenalty0"] == [0.0]
    assert weighted(dec, tr.values) == pytest.approx(tr.score, abs=1e-9)
    assert [(s, e) for s, e, _ in tr.segments] == [(0, 0), (1, 1)]


def test_matches_exhaustive_search_with_recombination():
    """With no pruning, recombination must not change the best score (3- and 4-word sentences)."""
    dec = make_decoder(stack_size=100000, beam_threshold=0.0, distortion_limit=-1)
    for sent in ("a b c", "c b a", "a b c a", "b c a b"):
        words = sent.split()
        brute = exhaustive(dec, words, -1)
        res = dec.decode(words)
        assert res.best.score == pytest.approx(brute[0][0], abs=1e-9), sent
        assert res.stats["recombined"] > 0
        assert weighted(dec, res.best.values) == pytest.approx(res.best.score, abs=1e-9)


def test_matches_exhaustive_search_under_distortion_limit():
    for dl in (0, 1, 2):
        dec = make_decoder(stack_size=100000, beam_threshold=0.0, distortion_limit=dl)
        for sent in ("c b a", "b c a b"):
            brute = exhaustive(dec, sent.split(), dl)
            assert dec.translate(sent).score == pytest.approx(brute[0][0], abs=1e-9), (sent, dl)


def test_default_pruning_finds_the_exhaustive_best_on_toy_input():
    dec = make_decoder()
    for sent in ("a b c", "b c a b"):
        assert dec.translate(sent).score == pytest.approx(exhaustive(dec, sent.split(), 6)[0][0], abs=1e-9)


@pytest.mark.parametrize("dl,expected", [(0, "x y"), (1, "x y"), (2, "y x"), (-1, "y x")])
def test_reordering_within_and_beyond_distortion_limit(dl, expected):
    """swap.arpa: log10 p("y x") = −0.3 against −9 for "x y", worth 0.5·8.7·ln 10 ≈ 10 in score;
    swapping costs distortion −(1 + 2) · 0.3 = −0.9. Translating b first jumps 1 word, then
    returning to a jumps 2, and Moses's check end + 1 − first_gap = 2 ≤ limit forbids it below 2."""
    table = PhraseTable.from_entries([("a", "x", (0.5,) * 4), ("b", "y", (0.5,) * 4)])
    dec = make_decoder("swap.arpa", table=table, distortion_limit=dl)
    tr = dec.translate("a b")
    assert tr.text == expected
    h = dec.features.split(tr.values)
    assert h["Distortion0"] == ([-3.0] if expected == "y x" else [0.0])
    assert weighted(dec, tr.values) == pytest.approx(tr.score, abs=1e-9)


def test_unknown_word_copied_with_penalty():
    dec = make_decoder()
    tr = dec.translate("a q b")
    assert tr.tokens == ["x", "q", "y"]
    h = dec.features.split(tr.values)
    assert h["UnknownWordPenalty0"] == [LOWEST_SCORE]
    assert h["TranslationModel0"] == pytest.approx([2 * math.log(0.5)] * 4)  # q adds 0
    assert h["WordPenalty0"] == [-3.0]
    assert h["PhrasePenalty0"] == [3.0]
    lm = dec.lms[0].scorer.score_sentence(["x", "q", "y"])
    assert h["LM0"] == pytest.approx([lm], abs=1e-6)
    assert tr.score == pytest.approx(weighted(dec, tr.values), abs=1e-9)
    # a sentence of unknown words only
    assert dec.translate("q r").tokens in (["q", "r"], ["r", "q"])


def test_empty_sentence():
    dec = make_decoder()
    res = dec.decode([])
    assert res.best.tokens == []
    assert res.best.score == pytest.approx(0.5 * dec.lms[0].scorer.score_sentence([]), abs=1e-9)


def test_nbest_order_sums_and_exactness():
    """Without pruning, the n-best list (recombination arcs) is the top of all derivations."""
    dec = make_decoder(stack_size=100000, beam_threshold=0.0, distortion_limit=-1)
    words = "a b c".split()
    brute = exhaustive(dec, words, -1)
    res = dec.decode(words, nbest=12)
    scores = [t.score for t in res.nbest]
    assert len(scores) == 12
    assert scores == sorted(scores, reverse=True)
    assert scores == pytest.approx([s for s, _ in brute[:12]], abs=1e-9)
    assert res.nbest[0].tokens == res.best.tokens
    for t in res.nbest:
        assert weighted(dec, t.values) == pytest.approx(t.score, abs=1e-9)
    # distinct: one entry per target string, the best derivation of each
    res_d = dec.decode(words, nbest=8, distinct=True)
    texts = [t.text for t in res_d.nbest]
    assert len(texts) == len(set(texts))
    best_per_string: dict[str, float] = {}
    for s, tgt in brute:
        best_per_string.setdefault(" ".join(tgt), s)
    expected = sorted(best_per_string.values(), reverse=True)[:8]
    assert [t.score for t in res_d.nbest] == pytest.approx(expected, abs=1e-9)


def test_nbest_with_default_pruning_is_sorted_and_consistent():
    dec = make_decoder()
    res = dec.decode("b c a b".split(), nbest=20)
    scores = [t.score for t in res.nbest]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] == pytest.approx(res.best.score)
    for t in res.nbest:
        assert weighted(dec, t.values) == pytest.approx(t.score, abs=1e-9)


def test_table_limit_keeps_best_by_future_score():
    table = PhraseTable.load(DATA / "toy.phrase-table")
    feats = make_features()
    feats[3] = PhraseTableFeature("TranslationModel0", 4, table_limit=1)
    dec = Decoder(feats, DEFAULT_WEIGHTS, table, SearchOptions())
    opts = dec.options_for(("a",))
    assert [o[O_TGT] for o in opts] == [("x",)]


def test_extra_score_columns_become_more_tm_features():
    """A table with 6 columns (e.g. an RNN Encoder–Decoder score and a count column appended)."""
    table = PhraseTable.from_entries([("a", "x", (0.5, 0.5, 0.5, 0.5, 0.25, 1.0)),
                                      ("b", "y", (0.5, 0.5, 0.5, 0.5, 0.5, 1.0))])
    feats = make_features()
    feats[3] = PhraseTableFeature("TranslationModel0", 6)
    weights = dict(DEFAULT_WEIGHTS, TranslationModel0=[0.2] * 6)
    dec = Decoder(feats, weights, table, SearchOptions())
    tr = dec.translate("a b")
    h = dec.features.split(tr.values)["TranslationModel0"]
    assert h[4] == pytest.approx(math.log(0.25) + math.log(0.5))
    assert h[5] == 0.0
    assert dec.features.value_names()[3:9] == [f"TranslationModel0_{i}" for i in range(6)]
    with pytest.raises(ValueError, match="score columns"):
        Decoder(make_features(), DEFAULT_WEIGHTS, table, SearchOptions())


def test_early_discarding_keeps_toy_best():
    dec = make_decoder(early_discarding_threshold=1.0)
    assert dec.translate("a b c").score == pytest.approx(make_decoder().translate("a b c").score)


def test_build_from_moses_ini_and_weights(tmp_path):
    from smt_features.model.moses_ini_build import default_config

    cfg = default_config(str(DATA / "toy.phrase-table"), str(DATA / "toy.arpa"), lm_order=2)
    dec = build_decoder(cfg)
    assert [f.name for f in dec.features] == ["UnknownWordPenalty0", "WordPenalty0", "PhrasePenalty0",
                                              "TranslationModel0", "Distortion0", "LM0"]
    assert dec.weight_dict() == DEFAULT_WEIGHTS
    assert not dec.features.get("UnknownWordPenalty0").tuneable
    assert [f.name for f in dec.features.nbest_order()] == ["Distortion0", "LM0", "WordPenalty0",
                                                            "PhrasePenalty0", "TranslationModel0"]
    assert dec.translate("a b").text == "x y"


def test_decode_corpus_two_processes_keeps_order():
    dec = make_decoder()
    lines = ["a b", "b c a b", "c", "a q b", "", "c b a"] * 3
    one = [r.best.text for r in decode_corpus(dec, lines, threads=1)]
    two = list(decode_corpus(dec, lines, threads=2, nbest=3))
    assert [r.best.text for r in two] == one
    assert [r.sent_id for r in two] == list(range(len(lines)))
    assert all(len(r.nbest) >= 1 for r in two)


def test_decoding_pool_reused_per_sentence_sizes_and_interrupts():
    """One DecodingPool serves several calls (per-sentence n-best sizes), the workers forked once; with
    ignore_interrupt they outlive SIGINT and SIGTERM (sent to the process group) and go on decoding."""
    import multiprocessing
    import os
    import signal

    from smt_features.decode.corpus import DecodingPool

    dec = make_decoder()
    lines = ["a b", "b c a b", "c", "a q b"]
    with DecodingPool(dec, 2, ignore_interrupt=True) as pool:
        workers = multiprocessing.active_children()
        assert len(workers) == 2
        first = list(pool.decode(lines, nbest=[0, 3, 2, 0]))
        for w, sig in zip(workers, (signal.SIGINT, signal.SIGTERM)):
            os.kill(w.pid, sig)
        second = list(pool.decode(lines, nbest=3, first_id=10))
        assert all(w.is_alive() for w in workers) and set(multiprocessing.active_children()) == set(workers)
    assert [len(r.nbest) for r in first][0::3] == [0, 0] and len(first[1].nbest) == 3 and len(first[2].nbest) >= 1
    assert [r.best.text for r in first] == [r.best.text for r in second] == [dec.translate(x).text for x in lines]
    assert [r.sent_id for r in second] == [10, 11, 12, 13]


def test_decoding_pool_left_by_an_error_finishes_its_chunks_and_stops():
    """A reader that fails midway (e.g. a broken output pipe) leaves the pool: the chunks handed to it are decoded,
    the workers exit (closed and joined, not terminated: nmt.core.pools) and the error comes out."""
    import multiprocessing

    from smt_features.decode.corpus import CHUNKS_AHEAD_PER_WORKER, DecodingPool

    dec = make_decoder()
    read = []

    def lines():
        for k in range(1000):
            read.append(k)
            yield ["a b", "b c a b", "c"][k % 3]

    with pytest.raises(BrokenPipeError):
        with DecodingPool(dec, 2) as pool:
            workers = multiprocessing.active_children()
            results = pool.decode(lines(), nbest=5, chunksize=2)
            assert next(results).best.text == dec.translate("a b").text
            raise BrokenPipeError("stdout closed")
    assert not any(w.is_alive() for w in workers)
    assert len(read) <= 2 * CHUNKS_AHEAD_PER_WORKER * 2 + 2  # only a window of chunks was read and handed out


def test_featureset_weights_errors():
    fs = FeatureSet(make_features())
    with pytest.raises(KeyError, match="LM0"):
        fs.weight_vector({k: v for k, v in DEFAULT_WEIGHTS.items() if k != "LM0"})
    with pytest.raises(ValueError, match="TranslationModel0"):
        fs.weight_vector(dict(DEFAULT_WEIGHTS, TranslationModel0=[0.2] * 3))
    with pytest.raises(KeyError, match="Nope0"):
        fs.weight_vector(dict(DEFAULT_WEIGHTS, Nope0=[1.0]))


def test_cli_decode_writes_output_and_nbest(tmp_path, capsys):
    from smt_features.cli.decode import cli_main
    from smt_features.model.moses_ini_build import default_config
    from nmt.core.formats.nbest import read_nbest

    ini = tmp_path / "moses.ini"
    default_config(str(DATA / "toy.phrase-table"), str(DATA / "toy.arpa"), lm_order=2).write(ini)
    src = tmp_path / "in.txt"
    src.write_text("a b\nb c a b\n\na q b\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    nbest = tmp_path / "nbest.txt"
    stats = tmp_path / "stats.json"
    rc = cli_main(["--moses-ini", str(ini), "--input", str(src), "--output", str(out), "--n-best-list", str(nbest),
                   "5", "--threads", "2", "--stack", "50", "--distortion-limit", "-1", "--progress", "false",
                   "--weights-override", "Distortion0= 0.1", "--stats-json", str(stats)])
    assert rc == 0
    lines = out.read_text(encoding="utf-8").split("\n")
    assert lines[0] == "x y" and lines[2] == "" and lines[3] == "x q y" and len(lines) == 5
    grouped = read_nbest(nbest)
    assert sorted(grouped) == [0, 1, 2, 3]
    dec = make_decoder(distortion_limit=-1, weights=dict(DEFAULT_WEIGHTS, Distortion0=[0.1]))
    w = dec.weight_dict()
    for sent_id, entries in grouped.items():
        totals = [e.total for e in entries]
        assert totals == sorted(totals, reverse=True)
        for e in entries:
            # printed features are the tuneable ones (UnknownWordPenalty0 left out, as Moses does)
            assert [n for n, _ in e.features] == ["Distortion0", "LM0", "WordPenalty0", "PhrasePenalty0",
                                                  "TranslationModel0"]
            s = sum(wi * v for n, vals in e.features for wi, v in zip(w[n], vals))
            unk = -100.0 * sum(1 for t in e.tokens if t == "q")
            assert s + unk == pytest.approx(e.total, rel=1e-5, abs=1e-4)  # %g: 6 digits
    assert grouped[0][0].tokens == ["x", "y"]
    err = capsys.readouterr().err
    assert "sentences/s" in err
    assert '"sentences": 4' in stats.read_text()


def test_cli_decode_options_from_yaml_section(tmp_path):
    """--config YAML:SECTION gives the same run as the flags (flags still win); -f is --moses-ini."""
    from smt_features.cli.decode import cli_main
    from smt_features.model.moses_ini_build import default_config

    ini = tmp_path / "moses.ini"
    default_config(str(DATA / "toy.phrase-table"), str(DATA / "toy.arpa"), lm_order=2).write(ini)
    src = tmp_path / "in.txt"
    src.write_text("a b\nc b a\n", encoding="utf-8")
    flags = tmp_path / "flags"
    assert cli_main(["-f", str(ini), "--input", str(src), "--output", str(flags / "out"), "--n-best-list",
                     str(flags / "nbest"), "3", "--distortion-limit", "-1", "--progress", "false"]) == 0
    yaml_dir = tmp_path / "yaml"
    cfg = tmp_path / "decode.yaml"
    cfg.write_text(f"decode:\n  moses_ini: {ini}\n  input: {src}\n  output: {yaml_dir / 'out'}\n"
                   f"  n_best_list: [{yaml_dir / 'nbest'}, 3]\n  distortion_limit: 0\n  progress: false\n",
                   encoding="utf-8")
    assert cli_main(["--config", f"{cfg}:decode", "--distortion-limit", "-1"]) == 0
    for name in ("out", "nbest"):
        assert (yaml_dir / name).read_text(encoding="utf-8") == (flags / name).read_text(encoding="utf-8")


def test_cli_reports_bad_config(tmp_path, capsys):
    from smt_features.cli.decode import cli_main

    ini = tmp_path / "moses.ini"
    ini.write_text("[feature]\nKENLM name=LM0 path=nowhere.arpa\n[weight]\nLM0= 1 2\n", encoding="utf-8")
    assert cli_main(["-f", str(ini), "--input", str(ini), "--progress", "false"]) == 2
    assert f"{ini}:4:" in capsys.readouterr().err


def test_negative_lm_weight_disables_bounds_but_stays_exact():
    weights = dict(DEFAULT_WEIGHTS, LM0=[-0.3])
    dec = make_decoder(weights=weights, stack_size=100000, beam_threshold=0.0, distortion_limit=-1)
    for sent in ("a b c", "c b a"):
        assert dec.translate(sent).score == pytest.approx(exhaustive(dec, sent.split(), -1)[0][0], abs=1e-9)


def test_plain_loop_and_bound_pruning_agree():
    plain = make_decoder(bound_pruning=False)
    bounded = make_decoder()
    for sent in ("a b c", "b c a b", "a q b c"):
        a, b = plain.translate(sent), bounded.translate(sent)
        assert a.tokens == b.tokens and a.score == pytest.approx(b.score, abs=1e-12)
