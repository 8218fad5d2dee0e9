"""The LexicalReordering feature (Moses's msd-bidirectional-fe) in the decoder: scores computed by hand, the
Python search == the compiled core, the moses.ini line and weights, the table's errors, sidecar and filter."""
from __future__ import annotations

import gzip
import math
import random
from pathlib import Path

import pytest

from smt_features.decode import fast_search
from smt_features.decode.decoder import Decoder
from smt_features.decode.options import SearchOptions
from smt_features.decode.table import PhraseTable
from smt_features.model.features import (
    DistortionFeature, PhrasePenaltyFeature, PhraseTableFeature, UnknownWordPenaltyFeature, WordPenaltyFeature,
)
from smt_features.model.reordering import DISC, MONO, SWAP, LexicalReorderingFeature, log_scores, orientation
from tests import TEST_DATA

DATA = TEST_DATA / "decoder"
needs_ext = pytest.mark.skipif(not fast_search.available(),
                               reason=f"compiled search core not built: run `{fast_search.BUILD_COMMAND}`")
LR_LINE = ("LexicalReordering name=LexicalReordering0 num-features=6 type=wbe-msd-bidirectional-fe-allff "
           "input-factor=0 output-factor=0 path={}")


def write_lr(path: Path, lines: list[str]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))
    return path


def lr_decoder(tmp_path: Path, lr_lines: list[str], search: str = "python", **opts) -> Decoder:
    """Source words a, b; one option each (a -> A, b -> B); only the reordering weights are not 0."""
    table = PhraseTable.from_entries([("a", "A", [0.5]), ("b", "B", [0.5])])
    lr_table = PhraseTable.load(write_lr(tmp_path / f"lr{len(lr_lines)}.gz", lr_lines))
    feats = [UnknownWordPenaltyFeature(), WordPenaltyFeature(), PhrasePenaltyFeature(),
             PhraseTableFeature("TranslationModel0", 1), LexicalReorderingFeature(table=lr_table), DistortionFeature()]
    weights = {"WordPenalty0": [0.0], "PhrasePenalty0": [0.0], "TranslationModel0": [0.0], "Distortion0": [0.0],
               "LexicalReordering0": [1.0] * 6}
    return Decoder(feats, weights, table, SearchOptions(search=search, distortion_limit=-1, **opts))


def test_orientation_and_floor():
    assert orientation(-1, -1, 0, 2) == MONO and orientation(-1, -1, 1, 1) == DISC  # first phrase
    assert orientation(0, 1, 2, 4) == MONO and orientation(3, 4, 0, 2) == SWAP and orientation(3, 4, 0, 1) == DISC
    assert orientation(0, 1, 3, 3) == DISC
    assert log_scores([1.0, 0.0, math.e ** -200]) == (0.0, -100.0, -100.0)  # Moses's FloorScore(log p)


@pytest.mark.parametrize("search", ["python", pytest.param("compiled", marks=needs_ext)])
def test_scores_by_hand(tmp_path, search):
    # a: prev m s d = .1 .8 .1, next m s d = .2 .3 .5;  b: prev .2 .3 .5, next .1 .6 .3
    dec = lr_decoder(tmp_path, ["a ||| A ||| 0.1 0.8 0.1 0.2 0.3 0.5", "b ||| B ||| 0.2 0.3 0.5 0.1 0.6 0.3"],
                     search)
    res = dec.decode("a b", nbest=5)
    ln = math.log
    # swap derivation "B A": b first at 1 (not 0: discontinuous) -> prev_d(b) = ln .5;
    # a at [0,0] ends right before b's start (swap) -> prev_s(a) = ln .8, next_s(b) = ln .6
    swap = [0.0, ln(0.8), ln(0.5), 0.0, ln(0.6), 0.0]
    # monotone "A B": a at 0 (mono) -> prev_m(a) = ln .1; b right after a (mono) -> prev_m(b) = ln .2, next_m(a) = ln .2
    mono = [ln(0.1) + ln(0.2), 0.0, 0.0, ln(0.2), 0.0, 0.0]
    assert [t.tokens for t in res.nbest] == [["B", "A"], ["A", "B"]]
    sl = dec.features.slice("LexicalReordering0")
    for tr, want in zip(res.nbest, (swap, mono)):
        assert tr.values[sl] == pytest.approx(want, abs=1e-12)
        assert tr.score == pytest.approx(sum(want), abs=1e-12)  # all other weights are 0
    assert res.best.tokens == ["B", "A"]


def test_pairs_absent_from_the_table_score_zero(tmp_path):
    dec = lr_decoder(tmp_path, ["a ||| A ||| 0.1 0.8 0.1 0.2 0.3 0.5"])
    res = dec.decode("a b", nbest=5)
    sl = dec.features.slice("LexicalReordering0")
    by_tokens = {tuple(t.tokens): t.values[sl] for t in res.nbest}
    ln = math.log
    # "A B": prev_m(a) = ln .1, next_m(a) = ln .2 (b has no line: its own value is 0)
    assert by_tokens[("A", "B")] == pytest.approx([ln(0.1), 0, 0, ln(0.2), 0, 0])
    # "B A": b absent (0), then a swaps: prev_s(a) = ln .8; no forward value from b
    assert by_tokens[("B", "A")] == pytest.approx([0, ln(0.8), 0, 0, 0, 0])


# ----------------------------------------------------------------------------- Python == compiled

def random_lr_lines(rng: random.Random, table: PhraseTable, keep: float) -> list[str]:
    lines = []
    for src in sorted(table.entries):
        for tgt, _ in table.entries[src]:
            if rng.random() < keep:
                probs = [rng.choice([0.05, 0.1, 0.2, 0.3, 0.5, 0.6]) for _ in range(6)]  # ties on purpose
                lines.append(f"{' '.join(src)} ||| {' '.join(tgt)} ||| " + " ".join(map(str, probs)))
    return lines


def random_table(rng: random.Random) -> PhraseTable:
    src_vocab, tgt_vocab = ["a", "b", "c", "d", "e"], ["x", "y", "z", "w", "v"]
    entries = []
    for _ in range(40):
        src = " ".join(rng.choice(src_vocab) for _ in range(rng.randint(1, 3)))
        tgt = " ".join(rng.choice(tgt_vocab) for _ in range(rng.randint(1, 3)))
        entries.append((src, tgt, [rng.choice([0.1, 0.25, 0.5, 0.9]) for _ in range(4)]))
    return PhraseTable.from_entries(entries)


def same(a, b, what) -> None:
    for x, y in [(a.best, b.best)] + list(zip(a.nbest, b.nbest)):
        assert (x.tokens, x.score, x.values, x.segments) == (y.tokens, y.score, y.values, y.segments), what
    assert len(a.nbest) == len(b.nbest) and a.stats == b.stats, what


@needs_ext
@pytest.mark.parametrize("seed", range(4))
def test_compiled_equals_python(tmp_path, seed):
    from smt_features.model.kenlm import KenLMScorer
    from smt_features.model.kenlm_feature import KenLMFeature

    rng = random.Random(seed)
    table = PhraseTable.load(DATA / "toy.phrase-table") if seed == 0 else random_table(rng)
    lr_table = PhraseTable.load(write_lr(tmp_path / "lr.gz", random_lr_lines(rng, table, 0.8)))
    feats = [UnknownWordPenaltyFeature(), WordPenaltyFeature(), PhrasePenaltyFeature(),
             PhraseTableFeature("TranslationModel0", 4), LexicalReorderingFeature(table=lr_table),
             DistortionFeature(), KenLMFeature(KenLMScorer(DATA / "toy.arpa"), name="LM0")]
    weights = {"WordPenalty0": [-1.0], "PhrasePenalty0": [0.2], "TranslationModel0": [0.2] * 4, "Distortion0": [0.3],
               "LM0": [0.5], "LexicalReordering0": [rng.uniform(-0.2, 0.6) for _ in range(6)]}
    vocab = sorted({w for s in table.entries for w in s}) + ["q"]
    sentences = ["a b", "b c a b", "c b a", "a q b c"] + [
        " ".join(rng.choice(vocab) for _ in range(rng.randint(3, 9))) for _ in range(4)]
    for opts in ({"distortion_limit": -1}, {"distortion_limit": 2, "stack_size": 3},
                 {"distortion_limit": 3, "early_discarding_threshold": 0.01, "beam_threshold": 1e-3}):
        py = Decoder(feats, weights, table, SearchOptions(search="python", **opts))
        cc = Decoder(feats, weights, table, SearchOptions(search="compiled", **opts))
        assert cc.search_kind == "compiled"
        for s in sentences:
            same(py.decode(s, nbest=20, sent_id=1), cc.decode(s, nbest=20, sent_id=1), (seed, opts, s))
            same(py.decode(s, nbest=8, distinct=True), cc.decode(s, nbest=8, distinct=True), (seed, opts, s))


# ----------------------------------------------------------------------------- moses.ini, CLI, table files

def test_moses_ini_round_trip_and_nbest_names(tmp_path):
    from smt_features.decode.load import build_decoder
    from smt_features.model.moses_ini import parse_moses_ini
    from smt_features.model.moses_ini_build import default_config
    from smt_features.model.weights import Weights, layout_of, value_names

    lr = write_lr(tmp_path / "reordering-table.wbe-msd-bidirectional-fe.gz", ["a ||| x ||| 0.5 0.25 0.25 0.5 0.25 0.25"])
    cfg = default_config(str(DATA / "toy.phrase-table"), str(DATA / "toy.arpa"), lm_order=2, reordering_table=str(lr))
    text = cfg.to_text()
    assert LR_LINE.format(lr) in text.splitlines()
    assert "LexicalReordering0= 0.3 0.3 0.3 0.3 0.3 0.3" in text.splitlines()
    assert parse_moses_ini(text, "x.ini").to_text() == text
    (tmp_path / "x.ini").write_text(text, encoding="utf-8")
    w = Weights.read(tmp_path / "x.ini")  # what MERT starts from: six more weights, named as Moses's tools do
    assert w["LexicalReordering0"] == [0.3] * 6
    assert [n for n in value_names(layout_of(list(w.items()))) if n.startswith("Lex")] == [
        f"LexicalReordering0_{i}" for i in range(6)]
    assert default_config("t", "l").to_text() == default_config("t", "l", reordering_table=None).to_text()
    assert "LexicalReordering" not in default_config("t", "l").to_text()
    dec = build_decoder(parse_moses_ini(text, "x.ini"))
    names = [n for n, _ in dec.nbest_features(dec.decode("a b").best.values)]
    assert names == ["LexicalReordering0", "Distortion0", "LM0", "WordPenalty0", "PhrasePenalty0", "TranslationModel0"]


def run_decode(tmp_path: Path, lr: Path, extra: str = "", threads: int = 1) -> int:
    from smt_features.cli.decode import cli_main

    ini = tmp_path / "moses.ini"
    ini.write_text(f"""[feature]
UnknownWordPenalty
WordPenalty
PhrasePenalty
PhraseDictionaryMemory name=TranslationModel0 num-features=4 path={DATA / 'toy.phrase-table'} input-factor=0 output-factor=0
{LR_LINE.format(lr)}{extra}
Distortion
KENLM name=LM0 factor=0 path={DATA / 'toy.arpa'} order=2

[weight]
WordPenalty0= -1
PhrasePenalty0= 0.2
TranslationModel0= 0.2 0.2 0.2 0.2
LexicalReordering0= 0.3 0.3 0.3 0.3 0.3 0.3
Distortion0= 0.3
LM0= 0.5
""", encoding="utf-8")
    src = tmp_path / "in.txt"
    src.write_text("a b\nc b a\n", encoding="utf-8")
    return cli_main(["-f", str(ini), "--input", str(src), "--output", str(tmp_path / "out.txt"),
                     "--n-best-list", str(tmp_path / "nbest.txt"), "3", "--progress", "false",
                     "--threads", str(threads)])


def test_cli_nbest_prints_six_values(tmp_path):
    lr = write_lr(tmp_path / "lr.gz", ["a ||| x ||| 0.5 0.25 0.25 0.5 0.25 0.25", "b ||| y ||| 0.6 0.2 0.2 0.7 0.2 0.1"])
    assert run_decode(tmp_path, lr, threads=2) == 0  # forked workers share the loaded table
    first = (tmp_path / "nbest.txt").read_text(encoding="utf-8").splitlines()[0]
    assert first.split(" ||| ")[2].startswith("LexicalReordering0= ")
    assert len(first.split(" ||| ")[2].split("Distortion0=")[0].split()) == 7  # the name and six values


@pytest.mark.parametrize("lines, extra, message", [
    (["a ||| x ||| 0.5 0.25 0.25 0.5 0.25", "b ||| y ||| 0.5 0.25 0.25 0.5 0.25 0.25"], "", "lr.gz:2: "),
    (["a ||| x ||| 0.5 0.25 0.25 0.5 0.25 abc"], "", "lr.gz:1: "),
    (["a ||| x ||| 0.5 0.25 0.25 0.5 0.25 0.25"], " default-scores=0.5", "moses.ini:6: LexicalReordering0: "),
])
def test_bad_reordering_table_or_line(tmp_path, capsys, lines, extra, message):
    lr = write_lr(tmp_path / "lr.gz", lines)
    assert run_decode(tmp_path, lr, extra) == 2
    err = capsys.readouterr().err
    assert err.startswith("smt-decode: ") and message in err and "Traceback" not in err
    assert not (tmp_path / "out.txt").exists()


def test_binarized_sidecar_and_filtered_table_give_the_same_translations(tmp_path):
    from smt_features.model.binary_table import binarize_table, sidecar_path
    from smt_features.model.table_filter import filter_table

    rng = random.Random(5)
    table = PhraseTable.load(DATA / "toy.phrase-table")
    lr = write_lr(tmp_path / "lr.gz", random_lr_lines(rng, table, 1.0))
    assert run_decode(tmp_path, lr) == 0
    want = (tmp_path / "nbest.txt").read_text(encoding="utf-8")
    binarize_table(lr, sidecar_path(lr))
    assert run_decode(tmp_path, lr) == 0
    assert (tmp_path / "nbest.txt").read_text(encoding="utf-8") == want
    small = tmp_path / "small" / "lr.gz"
    small.parent.mkdir()
    filter_table(lr, [tmp_path / "in.txt"], small)
    assert run_decode(tmp_path, small) == 0
    assert (tmp_path / "nbest.txt").read_text(encoding="utf-8") == want


def test_tuning_filters_the_reordering_table_too(tmp_path):
    from types import SimpleNamespace

    from smt_features.model.moses_ini import parse_moses_ini
    from smt_features.model.moses_ini_build import default_config
    from smt_features.tune.filtered import decoding_model

    lr = write_lr(tmp_path / "lr.gz", ["a ||| x ||| 0.5 0.25 0.25 0.5 0.25 0.25", "c ||| w ||| 0.6 0.2 0.2 0.7 0.2 0.1"])
    base = parse_moses_ini(default_config(str(DATA / "toy.phrase-table"), str(DATA / "toy.arpa"), lm_order=2,
                                          reordering_table=str(lr)).to_text(), str(tmp_path / "moses.ini"))
    dev = tmp_path / "dev.src"
    dev.write_text("a b\n", encoding="utf-8")
    cfg, _ = decoding_model(SimpleNamespace(filter_table=True, dev_src=str(dev), weights_mode="ini"), base, tmp_path)
    path = Path(cfg.feature("LexicalReordering0").get("path"))
    assert path == (tmp_path / "filtered" / "LexicalReordering0.lr.gz").resolve()
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        assert fh.read() == "a ||| x ||| 0.5 0.25 0.25 0.5 0.25 0.25\n"
