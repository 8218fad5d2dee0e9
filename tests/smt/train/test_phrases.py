"""Phrase extraction (Koehn/Och with unaligned-word extension) and Moses scoring."""
from __future__ import annotations

from fractions import Fraction as F

import pytest

from smt_features.train import phrase_scoring
from smt_features.train.align import write_alignments
from smt_features.cli.train import cli_main
from nmt.core.formats.phrase_table_check import check_phrase_table
from nmt.core.formats.phrase_table_reader import iter_phrase_table
from smt_features.train.lexical import LexicalTable
from smt_features.train.phrase_counts import ExtractionCounts, count_corpus, count_sentence
from smt_features.train.phrase_scoring import score_phrase_counts, score_phrase_lines, write_scored_table
from smt_features.train.phrases import build_phrase_table
from smt_features.train.spans import extract_phrase_pairs, extract_spans
from tests import ROOT, TEST_DATA

# Koehn, Statistical Machine Translation (2010), section 5.2.2: word alignment of
# "michael geht davon aus , dass er im haus bleibt" / "michael assumes that he will stay in the house".
DE = "michael geht davon aus , dass er im haus bleibt".split()
EN = "michael assumes that he will stay in the house".split()
ALIGN = [(0, 0), (1, 1), (2, 1), (3, 1), (5, 2), (6, 3), (9, 4), (9, 5), (7, 6), (7, 7), (8, 8)]

# All phrase pairs consistent with ALIGN (derived by hand, same as the textbook's listing).
TEXTBOOK_PAIRS = {
    ("michael", "michael"),
    ("michael geht davon aus", "michael assumes"),
    ("michael geht davon aus ,", "michael assumes"),
    ("michael geht davon aus , dass", "michael assumes that"),
    ("michael geht davon aus , dass er", "michael assumes that he"),
    ("michael geht davon aus , dass er im haus bleibt", "michael assumes that he will stay in the house"),
    ("geht davon aus", "assumes"),
    ("geht davon aus ,", "assumes"),
    ("geht davon aus , dass", "assumes that"),
    ("geht davon aus , dass er", "assumes that he"),
    ("geht davon aus , dass er im haus bleibt", "assumes that he will stay in the house"),
    ("dass", "that"),
    (", dass", "that"),
    ("dass er", "that he"),
    (", dass er", "that he"),
    ("dass er im haus bleibt", "that he will stay in the house"),
    (", dass er im haus bleibt", "that he will stay in the house"),
    ("er", "he"),
    ("er im haus bleibt", "he will stay in the house"),
    ("im haus bleibt", "will stay in the house"),
    ("bleibt", "will stay"),
    ("im", "in the"),
    ("im haus", "in the house"),
    ("haus", "house"),
}


def _pairs(src, tgt, align, max_len):
    return {(" ".join(s), " ".join(t)) for s, t, _ in extract_phrase_pairs(src, tgt, align, max_len)}


def test_textbook_phrase_set():
    got = extract_phrase_pairs(DE, EN, ALIGN, max_phrase_length=20)
    assert len(got) == len(TEXTBOOK_PAIRS) == 24          # each pair extracted once
    assert {(" ".join(s), " ".join(t)) for s, t, _ in got} == TEXTBOOK_PAIRS


def test_textbook_max_phrase_length_7():
    expected = {(s, t) for s, t in TEXTBOOK_PAIRS if len(s.split()) <= 7 and len(t.split()) <= 7}
    assert len(expected) == 22
    assert _pairs(DE, EN, ALIGN, 7) == expected
    assert _pairs(DE, EN, ALIGN, 1) == {("michael", "michael"), ("dass", "that"), ("er", "he"), ("haus", "house")}


def test_within_phrase_alignment_target_major():
    got = {(" ".join(s), " ".join(t)): a for s, t, a in extract_phrase_pairs(DE, EN, ALIGN, 7)}
    assert got[("im haus bleibt", "will stay in the house")] == ((2, 0), (2, 1), (0, 2), (0, 3), (1, 4))
    assert got[(", dass er", "that he")] == ((1, 0), (2, 1))


def test_unaligned_words_extend_both_sides():
    # source "a b", target "x y z"; y is unaligned
    assert _pairs("a b".split(), "x y z".split(), [(0, 0), (1, 2)], 7) == {
        ("a", "x"), ("a", "x y"), ("a b", "x y z"), ("b", "y z"), ("b", "z")}
    # source "a u b" with u unaligned: u attaches to either neighbour, never alone
    assert _pairs("a u b".split(), "x z".split(), [(0, 0), (2, 1)], 7) == {
        ("a", "x"), ("a u", "x"), ("u b", "z"), ("b", "z"), ("a u b", "x z")}
    # the length limit also bounds the extension
    assert ("a u", "x") not in _pairs("a u b".split(), "x z".split(), [(0, 0), (2, 1)], 1)


def test_no_alignment_no_phrases_and_range_check():
    assert extract_spans(3, 2, []) == []
    with pytest.raises(ValueError):
        extract_spans(2, 2, [(2, 0)])


def test_counting_matches_spans():
    lexical = LexicalTable.from_corpus([DE], [EN], [ALIGN])
    counts = ExtractionCounts(lexical)
    count_sentence(DE, EN, ALIGN, counts, 7)
    assert counts.occurrences == 22
    assert {tuple(k.split(" ||| ")[:2]) for k in counts.phrases} == _pairs(DE, EN, ALIGN, 7)
    assert counts.phrases["im haus bleibt ||| will stay in the house ||| 2-0 2-1 0-2 0-3 1-4"] == 1
    # word counts as Moses get_lexical: links, plus NULL for unaligned words
    assert lexical.word_pairs[(",", "NULL")] == 1
    assert lexical.f_totals["bleibt"] == 2 and lexical.e_totals["assumes"] == 3
    assert lexical.e_totals["NULL"] == 1 and "NULL" not in lexical.f_totals
    # lexical weights stored at extraction (per-position factors) == computed per phrase pair
    for key, pair in counts.lex.items():
        lex_e, lex_f = pair.real, pair.imag
        src, tgt, al = key.split(" ||| ")
        src, tgt = src.split(), tgt.split()
        t2s = [sorted(int(p.split("-")[0]) for p in al.split() if int(p.split("-")[1]) == j)
               for j in range(len(tgt))]
        s2t = [sorted(int(p.split("-")[1]) for p in al.split() if int(p.split("-")[0]) == i)
               for i in range(len(src))]
        assert lex_e == lexical.lex_e_given_f(src, tgt, t2s), key
        assert lex_f == lexical.lex_f_given_e(src, tgt, s2t), key


# ---------------------------------------------------------------------- scoring, by hand

TOY_SRC = ["a b", "a c d", "a b e"]
TOY_TGT = ["x y", "x z", "y w"]
TOY_ALIGN = [[(0, 0), (1, 1)], [(0, 0), (1, 1)], [(0, 0), (1, 0)]]
# Links: (a,x) x2, (b,y) x2, (c,z), (a,y); unaligned: d, e (source), w (target).
# c(f): a 3, b 2, c 1, d 1, e 1, NULL 1     c(e): x 2, y 3, z 1, w 1, NULL 2
# w(e|f): x|a 2/3, y|a 1/3, y|b 1, z|c 1, w|NULL 1, NULL|d 1, NULL|e 1
# w(f|e): a|x 1, a|y 1/3, b|y 2/3, c|z 1, NULL|w 1, d|NULL 1/2, e|NULL 1/2
# phrase counts: c(f): a 2, "a b" 3, "a b e" 2, b 1, "a c" 1, "a c d" 1, c 1, "c d" 1
#                c(e): x 2, "x y" 1, y 3, "y w" 2, "x z" 2, z 2
TOY_EXPECTED = {
    # (src, tgt): (phi(f|e), lex(f|e), phi(e|f), lex(e|f)), alignment, counts (c(e) c(f) c(f,e))
    ("a", "x"): ((F(1), F(1), F(1), F(2, 3)), ((0, 0),), (2, 2, 2)),
    ("a b", "x y"): ((F(1), F(2, 3), F(1, 3), F(2, 3)), ((0, 0), (1, 1)), (1, 3, 1)),
    ("a b", "y"): ((F(1, 3), F(2, 9), F(1, 3), F(2, 3)), ((0, 0), (1, 0)), (3, 3, 1)),
    ("a b", "y w"): ((F(1, 2), F(2, 9), F(1, 3), F(2, 3)), ((0, 0), (1, 0)), (2, 3, 1)),
    ("a b e", "y"): ((F(1, 3), F(1, 9), F(1, 2), F(2, 3)), ((0, 0), (1, 0)), (3, 2, 1)),
    ("a b e", "y w"): ((F(1, 2), F(1, 9), F(1, 2), F(2, 3)), ((0, 0), (1, 0)), (2, 2, 1)),
    ("a c", "x z"): ((F(1, 2), F(1), F(1), F(2, 3)), ((0, 0), (1, 1)), (2, 1, 1)),
    ("a c d", "x z"): ((F(1, 2), F(1, 2), F(1), F(2, 3)), ((0, 0), (1, 1)), (2, 1, 1)),
    ("b", "y"): ((F(1, 3), F(2, 3), F(1), F(1)), ((0, 0),), (3, 1, 1)),
    ("c", "z"): ((F(1, 2), F(1), F(1), F(1)), ((0, 0),), (2, 1, 1)),
    ("c d", "z"): ((F(1, 2), F(1, 2), F(1), F(1)), ((0, 0),), (2, 1, 1)),
}


def _toy_counts():
    return count_corpus([s.split() for s in TOY_SRC], [t.split() for t in TOY_TGT], TOY_ALIGN, 7)


def test_toy_scores_by_hand():
    entries = list(score_phrase_counts(_toy_counts()))
    got = {(" ".join(e.src), " ".join(e.tgt)): e for e in entries}
    assert set(got) == set(TOY_EXPECTED)
    for key, (scores, alignment, counts) in TOY_EXPECTED.items():
        e = got[key]
        assert e.scores == pytest.approx([float(s) for s in scores], rel=1e-12), key
        assert e.alignment == alignment, key
        assert e.counts == counts, key


def test_toy_lines_and_lexical_tables(tmp_path):
    lines = score_phrase_lines(_toy_counts())
    assert lines == sorted(lines)
    assert "a b ||| y ||| 0.333333 0.222222 0.333333 0.666667 ||| 0-0 1-0 ||| 3 3 1 ||| |||" in lines
    assert "a c d ||| x z ||| 0.5 0.5 1 0.666667 ||| 0-0 1-1 ||| 2 1 1 ||| |||" in lines
    lex = _toy_counts().lexical
    lex.write(tmp_path / "lex.f2e", tmp_path / "lex.e2f")
    f2e = set((tmp_path / "lex.f2e").read_text().splitlines())
    e2f = set((tmp_path / "lex.e2f").read_text().splitlines())
    assert {"x a 0.6666667", "y a 0.3333333", "y b 1.0000000", "w NULL 1.0000000", "NULL d 1.0000000"} <= f2e
    assert {"a x 1.0000000", "a y 0.3333333", "b y 0.6666667", "d NULL 0.5000000", "NULL w 1.0000000"} <= e2f
    assert len(f2e) == len(e2f) == 7


def test_most_frequent_alignment_wins():
    src, tgt = "a b".split(), "x y".split()
    straight, crossed = [(0, 0), (1, 1)], [(0, 1), (1, 0)]
    counts = count_corpus([src] * 3, [tgt] * 3, [straight, crossed, crossed], 7)
    entry = {(e.src, e.tgt): e for e in score_phrase_counts(counts)}[(("a", "b"), ("x", "y"))]
    assert entry.alignment == ((1, 0), (0, 1))
    assert entry.counts == (3, 3, 3)
    # a tie goes to the larger target->source map, as in Moses (here: the crossed one)
    counts = count_corpus([src] * 2, [tgt] * 2, [crossed, straight], 7)
    entry = {(e.src, e.tgt): e for e in score_phrase_counts(counts)}[(("a", "b"), ("x", "y"))]
    assert entry.alignment == ((1, 0), (0, 1))


def test_parallel_equals_serial(monkeypatch):
    src = [s.split() for s in TOY_SRC] * 400
    tgt = [t.split() for t in TOY_TGT] * 400
    align = TOY_ALIGN * 400
    serial = count_corpus(src, tgt, align, 7, processes=1)
    parallel = count_corpus(src, tgt, align, 7, processes=2)
    assert serial.phrases == parallel.phrases and serial.lex == parallel.lex
    assert serial.occurrences == parallel.occurrences == 400 * 12
    monkeypatch.setattr(phrase_scoring, "PARALLEL_MIN_KEYS", 0)
    lines = score_phrase_lines(serial, processes=1)
    assert score_phrase_lines(serial, processes=2) == lines


def test_parallel_table_is_one_gzip_stream(tmp_path, monkeypatch):
    import gzip

    monkeypatch.setattr(phrase_scoring, "PARALLEL_MIN_KEYS", 0)
    src = [s.split() for s in TOY_SRC] + [DE]
    tgt = [t.split() for t in TOY_TGT] + [EN]
    align = TOY_ALIGN + [ALIGN]
    counts = count_corpus(src, tgt, align, 7)
    expected = "".join(line + "\n" for line in score_phrase_lines(counts))
    assert write_scored_table(counts, tmp_path / "serial.gz", processes=1) == 33
    assert write_scored_table(counts, tmp_path / "par.gz", processes=2) == 33   # 4 gzip members
    assert write_scored_table(counts, tmp_path / "plain", processes=2) == 33
    for name in ("serial.gz", "par.gz"):
        with gzip.open(tmp_path / name, "rt", encoding="utf-8") as fh:
            assert fh.read() == expected
    assert (tmp_path / "plain").read_text(encoding="utf-8") == expected
    assert not list(tmp_path.glob("*.partial"))


def test_build_phrase_table_files(tmp_path):
    stats = build_phrase_table([s.split() for s in TOY_SRC], [t.split() for t in TOY_TGT], TOY_ALIGN,
                               tmp_path / "phrase-table.gz", lex_f2e=tmp_path / "lex.f2e",
                               lex_e2f=tmp_path / "lex.e2f")
    assert stats.lines == len(TOY_EXPECTED) and stats.occurrences == 12
    table = check_phrase_table(tmp_path / "phrase-table.gz")
    assert table.lines == 11 and table.sorted and table.num_scores == 4
    assert 0 < table.min_score and table.max_score <= 1
    assert (tmp_path / "lex.f2e").exists() and (tmp_path / "lex.e2f").exists()
    with pytest.raises(ValueError, match=r"\|\|\|"):
        build_phrase_table([["a", "|||"]], [["x"]], [[(0, 0)]], tmp_path / "bad.gz")


def test_cli_with_given_alignment(tmp_path, capsys):
    (tmp_path / "train.src").write_text("\n".join(TOY_SRC) + "\n")
    (tmp_path / "train.tgt").write_text("\n".join(TOY_TGT) + "\n")
    write_alignments(tmp_path / "train.align", TOY_ALIGN)
    out = tmp_path / "model"
    rc = cli_main(["--src", str(tmp_path / "train.src"), "--tgt", str(tmp_path / "train.tgt"),
                   "--out-dir", str(out), "--alignment", str(tmp_path / "train.align")])
    assert rc == 0
    for name in ("aligned.grow-diag-final-and", "lex.f2e", "lex.e2f", "phrase-table.gz", "config.yaml"):
        assert (out / name).exists(), name
    assert (out / "aligned.grow-diag-final-and").read_text() == "0-0 1-1\n0-0 1-1\n0-0 1-0\n"
    printed = capsys.readouterr().out
    assert "phrase extraction" in printed and "total" in printed
    assert len(list(iter_phrase_table(out / "phrase-table.gz"))) == 11
    assert not (out / "moses.ini").exists()


def test_cli_writes_moses_ini_with_lm(tmp_path):
    from smt_features.model.moses_ini import read_moses_ini

    (tmp_path / "train.src").write_text("\n".join(TOY_SRC) + "\n")
    (tmp_path / "train.tgt").write_text("\n".join(TOY_TGT) + "\n")
    write_alignments(tmp_path / "train.align", TOY_ALIGN)
    lm = TEST_DATA / "decoder" / "toy.arpa"
    out = tmp_path / "model"
    assert cli_main(["--src", str(tmp_path / "train.src"), "--tgt", str(tmp_path / "train.tgt"), "--out-dir", str(out),
                     "--alignment", str(tmp_path / "train.align"), "--lm", str(lm), "--lm-order", "2"]) == 0
    ini = read_moses_ini(out / "moses.ini")
    assert ini.weights["TranslationModel0"] == [0.2] * 4 and ini.weights["LM0"] == [0.5]
    text = (out / "moses.ini").read_text()
    assert f"path={(out / 'phrase-table.gz').resolve()}" in text and f"path={lm.resolve()} order=2" in text
    assert cli_main(["--src", str(tmp_path / "train.src"), "--tgt", str(tmp_path / "train.tgt"), "--out-dir",
                     str(tmp_path / "m2"), "--lm", str(tmp_path / "none.arpa")]) == 2  # bad input
    assert not (tmp_path / "m2").exists()  # refused before anything is written


def test_cli_end_to_end_with_eflomal(tmp_path):
    src = ["the house is small", "the house is big", "a small house", "the big house is old", "old house"] * 10
    tgt = ["das haus ist klein", "das haus ist groß", "ein kleines haus", "das große haus ist alt", "altes haus"] * 10
    (tmp_path / "s").write_text("\n".join(src) + "\n")
    (tmp_path / "t").write_text("\n".join(tgt) + "\n")
    out = tmp_path / "m"
    assert cli_main(["--src", str(tmp_path / "s"), "--tgt", str(tmp_path / "t"), "--out-dir", str(out),
                     "--max-phrase-length", "3", "--symmetrization", "intersection"]) == 0
    lines = (out / "aligned.intersection").read_text().splitlines()
    assert len(lines) == 50
    stats = check_phrase_table(out / "phrase-table.gz")
    assert stats.lines > 0 and stats.max_src_len <= 3 and stats.max_tgt_len <= 3


def test_cli_reports_bad_input(tmp_path, capsys):
    (tmp_path / "s").write_text("a b\n\n")
    (tmp_path / "t").write_text("x y\nz\n")
    assert cli_main(["--src", str(tmp_path / "s"), "--tgt", str(tmp_path / "t"),
                     "--out-dir", str(tmp_path / "m")]) == 2
    assert f"{tmp_path / 's'}:2:" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_fixture_dir_exists():
    assert (TEST_DATA / "smt").is_dir()


# ---------------------------------------------------------------------- streamed path (temp files + GNU sort)

def _stream_corpus():
    """Toy + textbook + alignment variants (ties included) + UTF-8 and prefix-ordering cases."""
    crossed, straight = [(0, 1), (1, 0)], [(0, 0), (1, 1)]
    # "p q" / "u v": a tie whose direct (target->source) and inverse (source->target) winners differ
    src = [s.split() for s in TOY_SRC] + [DE] + [["a", "b"]] * 4 + [["é", "a"], ["é", "ab", "a"]] + \
        [["p", "q"]] * 2 + [["q"]]
    tgt = [t.split() for t in TOY_TGT] + [EN] + [["x", "y"]] * 4 + [["e", "x"], ["é", "x!", "x"]] + \
        [["u", "v"]] * 2 + [["v"]]
    align = TOY_ALIGN + [ALIGN] + [crossed, straight, crossed, straight] + [[(0, 0), (1, 1)], [(0, 0), (2, 2)]] + \
        [[(0, 0), (0, 1)], [(1, 0), (1, 1)], [(0, 0)]]   # (the last one makes their lexical weights differ)
    return src * 3, tgt * 3, align * 3


def _stream_opts(chunk_lines=1, buffer="1M", compress=False):
    from smt_features.train.external_sort import SortOptions
    from smt_features.train.extract_stream import StreamOptions

    return StreamOptions(chunk_lines, SortOptions(buffer, compress=compress))


@pytest.mark.parametrize("processes,chunk_lines,compress,name", [
    (1, 1, False, "phrase-table.gz"), (2, 2, True, "phrase-table.gz"), (2, 1000, False, "phrase-table")])
def test_streamed_table_is_byte_identical(tmp_path, monkeypatch, processes, chunk_lines, compress, name):
    monkeypatch.setattr(phrase_scoring, "PARALLEL_MIN_KEYS", 0)  # several gzip members with processes=2
    src, tgt, align = _stream_corpus()
    mem = build_phrase_table(src, tgt, align, tmp_path / "mem" / name, processes=processes,
                             lex_f2e=tmp_path / "mem" / "lex.f2e", lex_e2f=tmp_path / "mem" / "lex.e2f")
    st = build_phrase_table(src, tgt, align, tmp_path / "st" / name, processes=processes,
                            lex_f2e=tmp_path / "st" / "lex.f2e", lex_e2f=tmp_path / "st" / "lex.e2f",
                            stream=_stream_opts(chunk_lines, compress=compress))
    for f in (name, "lex.f2e", "lex.e2f"):
        assert (tmp_path / "st" / f).read_bytes() == (tmp_path / "mem" / f).read_bytes(), f
    assert (st.occurrences, st.distinct_pairs, st.lines) == (mem.occurrences, mem.distinct_pairs, mem.lines)
    assert sorted(p.name for p in (tmp_path / "st").iterdir()) == sorted([name, "lex.f2e", "lex.e2f"])


def test_streamed_failure_leaves_nothing(tmp_path, monkeypatch):
    from smt_features.train import extract_stream

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(extract_stream, "format_line", broken)  # fails in the consolidate step
    src, tgt, align = _stream_corpus()
    with pytest.raises(RuntimeError, match="disk full"):
        build_phrase_table(src, tgt, align, tmp_path / "out" / "phrase-table.gz", stream=_stream_opts())
    assert list((tmp_path / "out").iterdir()) == []   # no table, no temp folder, no partial file


def test_streamed_killed_run_leaves_no_table(tmp_path):
    """SIGKILL while the table is being written: no phrase-table.gz (atomic write); only temp files remain."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(ROOT)!r})
        from tests.smt.train.test_phrases import _stream_corpus, _stream_opts
        from smt_features.train import extract_stream
        from smt_features.train.phrases import build_phrase_table
        extract_stream.encode_lines = lambda lines, gz: os.kill(os.getpid(), signal.SIGKILL)
        build_phrase_table(*_stream_corpus(), {str(tmp_path / 'phrase-table.gz')!r}, stream=_stream_opts())
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == -9, proc.stderr
    assert not (tmp_path / "phrase-table.gz").exists()
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == []


def test_cli_streamed_same_bytes_and_bad_buffer(tmp_path, capsys):
    (tmp_path / "train.src").write_text("\n".join(TOY_SRC) + "\n")
    (tmp_path / "train.tgt").write_text("\n".join(TOY_TGT) + "\n")
    write_alignments(tmp_path / "train.align", TOY_ALIGN)
    common = ["--src", str(tmp_path / "train.src"), "--tgt", str(tmp_path / "train.tgt"),
              "--alignment", str(tmp_path / "train.align")]
    assert cli_main(common + ["--out-dir", str(tmp_path / "mem"), "--sort-buffer", "memory"]) == 0
    assert cli_main(common + ["--out-dir", str(tmp_path / "dflt")]) == 0   # streamed, the default
    assert (tmp_path / "dflt" / "phrase-table.gz").read_bytes() == (tmp_path / "mem" / "phrase-table.gz").read_bytes()
    assert sorted(p.name for p in (tmp_path / "dflt").iterdir()) == sorted(p.name for p in (tmp_path / "mem").iterdir())
    assert cli_main(common + ["--out-dir", str(tmp_path / "st"), "--sort-buffer", "10M", "--extract-chunk-lines",
                              "1", "--tmp-dir", str(tmp_path / "tmp"), "--sort-compress"]) == 0
    assert (tmp_path / "st" / "phrase-table.gz").read_bytes() == (tmp_path / "mem" / "phrase-table.gz").read_bytes()
    assert list((tmp_path / "tmp").iterdir()) == []
    capsys.readouterr()
    assert cli_main(common + ["--out-dir", str(tmp_path / "bad"), "--sort-buffer", "lots"]) == 2
    assert "--sort-buffer" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
