"""Moses phrase-table reader/writer: format, round trip, strict checks."""
from __future__ import annotations

import gzip
import math

import pytest

from nmt.core.formats.phrase_table import PhraseEntry, PhraseTableError, append_scores, format_entry, write_phrase_table
from nmt.core.formats.phrase_table_check import check_phrase_table
from nmt.core.formats.phrase_table_load import load_phrase_table
from nmt.core.formats.phrase_table_reader import iter_phrase_table, iter_raw_fields
from tests import TEST_DATA

DATA = TEST_DATA / "smt"
TOY = DATA / "toy.phrase-table"


def _entry(src: str, tgt: str, scores, alignment=((0, 0),), counts=(1, 1, 1)) -> PhraseEntry:
    return PhraseEntry(tuple(src.split()), tuple(tgt.split()), tuple(scores), tuple(alignment), tuple(counts))


def test_read_fixture():
    entries = list(iter_phrase_table(TOY))
    assert len(entries) == 6
    first = entries[0]
    assert first.src == ("das", "haus")
    assert first.tgt == ("the", "house")
    assert first.scores == (0.8, 0.5, 0.75, 0.6)
    assert first.alignment == ((0, 0), (1, 1))
    assert first.counts == (5.0, 4.0, 3.0)
    assert first.line_no == 1
    assert first.raw == TOY.read_text(encoding="utf-8").splitlines()[0]
    assert [e.line_no for e in entries] == [1, 2, 3, 4, 5, 6]


def test_format_is_moses_consolidate_layout():
    line = format_entry(_entry("a b", "x y z", (0.5, 1 / 3, 1.0, 2e-7), ((0, 0), (1, 0), (1, 2)), (3, 6, 1)))
    assert line == "a b ||| x y z ||| 0.5 0.333333 1 2e-07 ||| 0-0 1-0 1-2 ||| 3 6 1 ||| |||"
    assert format_entry(_entry("a", "x", (1, 1, 1, 1), (), (1, 1, 1))) == "a ||| x ||| 1 1 1 1 ||| ||| 1 1 1 ||| |||"


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_round_trip_sorted(tmp_path, suffix):
    entries = [
        _entry("haus", "house", (1.0, 0.9, 0.5, 0.8)),
        _entry("das haus", "the house", (0.8, 0.5, 0.75, 0.6), ((0, 0), (1, 1)), (5, 4, 3)),
        _entry("das", "the", (0.123456789, 0.5, 0.25, 1e-5), ((0, 0),), (1234567, 2, 1)),
        _entry("das haus", "the home", (0.2, 0.25, 0.25, 0.3), ((1, 1), (0, 0)), (4, 4, 1)),
        _entry("été", "summer", (1, 1, 1, 1)),
    ]
    path = tmp_path / f"pt{suffix}"
    assert write_phrase_table(entries, path) == 5
    if suffix:
        with gzip.open(path, "rb") as fh:
            data = fh.read()
    else:
        data = path.read_bytes()
    lines = data.split(b"\n")
    assert lines[-1] == b"" and len(lines) == 6
    assert lines[:-1] == sorted(lines[:-1])                 # LC_ALL=C byte order
    assert lines[0].startswith(b"das haus ||| the home |||")   # "das h" < "das |": 'h' < '|'
    assert b"das ||| the ||| 0.123457 0.5 0.25 1e-05 ||| 0-0 ||| 1.23457e+06 2 1 ||| |||" in lines
    back = {(e.src, e.tgt): e for e in iter_phrase_table(path)}
    for e in entries:
        got = back[(e.src, e.tgt)]
        assert got.alignment == e.alignment                  # kept in the given order
        for a, b in zip(got.scores, e.scores):
            assert a == pytest.approx(b, rel=1e-5)
    assert [e.src for e in iter_phrase_table(path)][-1] == ("été",)   # UTF-8 bytes sort after ASCII


def test_writer_rejects_bad_entries(tmp_path):
    bad = [
        _entry("a", "x", (0.0, 1, 1, 1)),
        _entry("a", "x", (1.5, 1, 1, 1)),
        PhraseEntry((), ("x",), (1.0,), (), ()),
        PhraseEntry(("a b",), ("x",), (1.0,), (), ()),
        PhraseEntry(("|||",), ("x",), (1.0,), (), ()),
        _entry("a", "x", (1.0,), ((0, 1),)),
    ]
    for e in bad:
        with pytest.raises(ValueError):
            write_phrase_table([e], tmp_path / "bad")
    with pytest.raises(ValueError, match="duplicate"):
        write_phrase_table([_entry("a", "x", (1.0,)), _entry("a", "x", (0.5,))], tmp_path / "dup")
    assert not (tmp_path / "bad").exists() and not (tmp_path / "dup").exists()


def test_append_scores_keeps_other_bytes():
    raw = "das haus ||| the house ||| 0.8 0.5 0.75 0.6 ||| 0-0 1-1 ||| 5 4 3 ||| |||"
    assert append_scores(raw, [0.0123456789]) == \
        "das haus ||| the house ||| 0.8 0.5 0.75 0.6 0.0123457 ||| 0-0 1-1 ||| 5 4 3 ||| |||"
    odd = "a  |||  x |||  0.5   1  |||0-0|||"
    assert append_scores(odd, [1, 0.5]) == "a  |||  x |||  0.5   1 1 0.5  |||0-0|||"
    assert append_scores("a ||| x ||| 0.5", [0.25]) == "a ||| x ||| 0.5 0.25"
    with pytest.raises(ValueError):
        append_scores("a ||| x", [0.5])


def test_iter_raw_fields():
    rows = list(iter_raw_fields(TOY))
    line_no, raw, fields = rows[2]
    assert line_no == 3 and raw.startswith("haus ||| house")
    assert fields == ["haus", "house", "1 0.9 0.5 0.8", "0-0", "6 12 6", "", ""]


GOOD = "a ||| x ||| 0.5 0.5 0.5 0.5 ||| 0-0 ||| 1 1 1 ||| |||"
BAD_LINES = {
    "too few fields": ("a ||| x", "found 2"),
    "too many fields": (GOOD + " ||| extra", "found 8"),
    "field count change": ("a ||| x ||| 0.5 0.5 0.5 0.5 ||| 0-0", "earlier lines have 7"),
    "empty source": (" ||| x ||| 0.5 0.5 0.5 0.5 ||| 0-0 ||| 1 1 1 ||| |||", "empty source"),
    "empty target": ("a |||  ||| 0.5 0.5 0.5 0.5 ||| 0-0 ||| 1 1 1 ||| |||", "empty target"),
    "score zero": ("a ||| x ||| 0 0.5 0.5 0.5 ||| 0-0 ||| 1 1 1 ||| |||", "(0, 1]"),
    "score above one": ("a ||| x ||| 0.5 1.5 0.5 0.5 ||| 0-0 ||| 1 1 1 ||| |||", "(0, 1]"),
    "negative score": ("a ||| x ||| 0.5 -0.5 0.5 0.5 ||| 0-0 ||| 1 1 1 ||| |||", "(0, 1]"),
    "nan score": ("a ||| x ||| 0.5 nan 0.5 0.5 ||| 0-0 ||| 1 1 1 ||| |||", "finite"),
    "non-number": ("a ||| x ||| 0.5 abc 0.5 0.5 ||| 0-0 ||| 1 1 1 ||| |||", "not a number"),
    "score count": ("a ||| x ||| 0.5 0.5 0.5 ||| 0-0 ||| 1 1 1 ||| |||", "earlier lines have 4"),
    "alignment range": ("a ||| x ||| 0.5 0.5 0.5 0.5 ||| 0-1 ||| 1 1 1 ||| |||", "out of range"),
    "alignment form": ("a ||| x ||| 0.5 0.5 0.5 0.5 ||| 0:0 ||| 1 1 1 ||| |||", "i-j"),
    "negative count": ("a ||| x ||| 0.5 0.5 0.5 0.5 ||| 0-0 ||| 1 -1 1 ||| |||", "non-negative"),
    "empty line": ("", "found 1"),
}


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_malformed_line_rejected_with_line_number(tmp_path, case):
    bad, message = BAD_LINES[case]
    path = tmp_path / "pt"
    path.write_text(f"{GOOD}\n{GOOD.replace('a |||', 'b |||')}\n{bad}\n{GOOD}\n", encoding="utf-8")
    with pytest.raises(PhraseTableError) as info:
        list(iter_phrase_table(path))
    err = info.value
    assert isinstance(err, ValueError)
    assert err.line == 3 and err.path == str(path)
    assert f"{path}:3:" in str(err)
    assert message in str(err)


def test_non_utf8_rejected(tmp_path):
    path = tmp_path / "pt.gz"
    with gzip.open(path, "wb") as fh:
        fh.write(GOOD.encode() + b"\n" + b"caf\xe9 ||| x ||| 0.5 0.5 0.5 0.5 ||| 0-0 ||| 1 1 1 ||| |||\n")
    with pytest.raises(PhraseTableError, match=r":2: invalid UTF-8"):
        list(iter_phrase_table(path))


def test_skip_bad_counts(tmp_path):
    path = tmp_path / "pt"
    lines = [GOOD, BAD_LINES["score zero"][0], GOOD.replace("a |||", "b |||"), b"\xff".decode("latin-1"),
             BAD_LINES["score count"][0], BAD_LINES["empty source"][0], GOOD.replace("a |||", "c |||")]
    path.write_bytes(b"\n".join(line.encode("utf-8") if line != "\xff" else b"\xff ||| x" for line in lines) + b"\n")
    reader = iter_phrase_table(path, skip_bad=True)
    entries = list(reader)
    assert [e.src for e in entries] == [("a",), ("b",), ("c",)]
    assert [e.line_no for e in entries] == [1, 3, 7]
    assert reader.n_skipped == 4
    assert reader.skipped_lines == [2, 4, 5, 6]
    assert reader.n_read == 7


def test_check_phrase_table(tmp_path):
    stats = check_phrase_table(TOY)
    assert stats.lines == 6
    assert stats.sources == 3
    assert stats.num_scores == 4
    assert stats.min_score == 0.1 and stats.max_score == 1.0
    assert stats.min_scores == (0.2, 0.2, 0.25, 0.1)
    assert stats.max_scores == (1.0, 0.9, 1.0, 0.8)
    assert stats.sorted is False                                  # hand-written, not sorted
    assert "6 lines" in stats.summary()
    out = tmp_path / "pt.gz"
    write_phrase_table(iter_phrase_table(TOY), out)
    assert check_phrase_table(out).sorted is True


def test_load_phrase_table_limit_and_weights():
    table = load_phrase_table(TOY, table_limit=2)
    assert set(table) == {("das", "haus"), ("haus",), ("klein",)}
    # default ranking: direct phrase probability p(e|f), the third column
    assert [e.tgt for e in table[("haus",)]] == [("house",), ("home",)]        # 0.5 > 0.25 = 0.25 (file order)
    assert table[("haus",)][0].raw is None
    everything = load_phrase_table(TOY, table_limit=0)
    assert len(everything[("haus",)]) == 3
    by_inverse = load_phrase_table(TOY, table_limit=1, weights=[1, 0, 0, 0])
    assert by_inverse[("haus",)][0].tgt == ("house",)
    by_lex = load_phrase_table(TOY, table_limit=3, weights=[0, 1, 0, 1])
    assert [e.tgt for e in by_lex[("haus",)]] == [("house",), ("home",), ("building",)]
    mixed = load_phrase_table(TOY, table_limit=3, weights=[0.2, 0.2, 0.2, 0.2])
    keys = [sum(0.2 * math.log(s) for s in e.scores) for e in mixed[("haus",)]]
    assert keys == sorted(keys, reverse=True)
    with pytest.raises(ValueError, match="weights"):
        load_phrase_table(TOY, weights=[1, 1])


def test_load_phrase_table_filtered_by_sources(tmp_path):
    table = load_phrase_table(TOY, table_limit=20, sources={("haus",), ("klein",), ("nicht", "da")})
    assert set(table) == {("haus",), ("klein",)}
    assert table[("haus",)][0].counts == ()                    # counts dropped unless asked for
    assert load_phrase_table(TOY, keep_counts=True)[("haus",)][0].counts == (6.0, 12.0, 6.0)
    # lines of filtered-out sources are not parsed beyond their source field and their layout (field and
    # score counts, the same on every line)
    path = tmp_path / "pt"
    path.write_text(GOOD + "\n" + "b ||| y ||| 0 abc 2 x ||| 9-9 ||| x ||| |||\n", encoding="utf-8")
    assert set(load_phrase_table(path, sources={("a",)})) == {("a",)}
    with pytest.raises(PhraseTableError, match=":2:"):
        load_phrase_table(path)


def test_filtered_table_refuses_a_line_with_another_score_count(tmp_path):
    """A 3-score line in a 4-score table is refused even when the lines before it are filtered out (it used to
    fix the table's layout, so its third score was taken for φ(e|f)); and a filtered line of another layout too."""
    path = tmp_path / "pt"
    path.write_text(GOOD + "\n" + "b ||| y ||| 0.5 0.5 0.2 ||| 0-0 ||| 1 1 1 ||| |||\n", encoding="utf-8")
    for wanted in ({("b",)}, {("a",)}):
        with pytest.raises(PhraseTableError, match=r"pt:2: 3 scores, but earlier lines have 4"):
            load_phrase_table(path, sources=wanted)
