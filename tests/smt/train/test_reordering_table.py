"""The msd-bidirectional-fe lexicalized reordering table: orientations, smoothing, its pairs, its reader."""
from __future__ import annotations

import gzip
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nmt.core.io import DataError
from nmt.core.formats.reordering_table import check_reordering_table, format_line, iter_reordering_table
from smt_features.cli.train import cli_main as train_phrases_main
from smt_features.cli.train_reordering import cli_main
from smt_features.train.reordering import DISC, MONO, SWAP, sentence_orientations
from smt_features.train.reordering_scoring import Smoothing, probabilities, score_lines
from tests import TEST_DATA

M, S, D = MONO, SWAP, DISC


def test_orientations_of_a_hand_worked_sentence_pair():
    # src  a b c d e   (e unaligned)        links (src-tgt): 0-0 1-2 2-1 3-3
    # tgt  A C B D                          corners (-1,-1) and (5,4) count as linked
    got = {span: (p, n) for span, p, n in sentence_orientations(5, 4, [(0, 0), (1, 2), (2, 1), (3, 3)])}
    assert got == {
        # span (sF, eF, sE, eE): (previous, next)
        (0, 0, 0, 0): (M, D),  # a|A: prev (-1,-1) corner; next (1,1) and (-1,1) unlinked
        (0, 2, 0, 2): (M, M),  # a b c|A C B: next (3,3) linked, (-1,3) not
        (0, 3, 0, 3): (M, D),  # a b c d|A C B D: next (4,4) is no corner (that is (5,4)), not linked
        (0, 4, 0, 3): (M, M),  # extended over unaligned e: next (5,4) is the corner
        (2, 2, 1, 1): (D, S),  # c|C: prev (1,0),(3,0) unlinked; next swap: (3,2) no, (1,2) yes
        (1, 2, 1, 2): (M, M),  # b c|C B: prev (0,0); next (3,3)
        (1, 3, 1, 3): (M, D),  # b c d|C B D: next (4,4), (0,4) unlinked
        (1, 4, 1, 3): (M, M),  # b c d e|C B D: next corner (5,4)
        (1, 1, 2, 2): (S, D),  # b|B: prev swap: (0,1) no, (2,1) yes; next (2,3),(0,3) unlinked
        (3, 3, 3, 3): (D, D),  # d|D: prev (2,2),(4,2) unlinked; next (4,4),(2,4) unlinked
        (3, 4, 3, 3): (D, M),  # d e|D: next corner (5,4)
    }
    # both neighbours linked is discontinuous: X is linked to x and z, y|Y sees (0,0) and (2,0)
    got = {span: (p, n) for span, p, n in sentence_orientations(3, 2, [(0, 0), (2, 0), (1, 1)])}
    assert got == {(0, 2, 0, 1): (M, M), (1, 1, 1, 1): (D, D)}


def test_smoothing_on_hand_counts():
    # constant 0.5 (train-model.perl's default): prev 3.5 1.5 0.5 / 5.5, next 0.5 0.5 4.5 / 5.5
    const = Smoothing.parse("0.5").values([6, 3, 1, 2, 2, 6])
    assert const == (0.5,) * 6
    line = next(score_lines([("x ||| y ||| ", [3, 1, 0, 0, 0, 4])], const))
    assert line == "x ||| y ||| 0.636364 0.272727 0.090909 0.090909 0.090909 0.818182 \n"
    # 0.5u: prev smoothing 0.5 * (6.1, 3.1, 1.1) / 10 = 0.305 0.155 0.055; 3.305 1.155 0.055 / 4.515
    counts = Smoothing.parse("0.5u").values([6, 3, 1, 2, 2, 6])
    assert counts[:3] == pytest.approx((0.305, 0.155, 0.055))
    p = probabilities([3, 1, 0, 0, 0, 4], counts)
    assert [f"{x:f}" for x in p[:3]] == ["0.732004", "0.255814", "0.012182"]
    assert sum(p[3:]) == pytest.approx(1.0)
    for bad in ("0", "-1", "x", "0.5uu", "inf"):
        with pytest.raises(ValueError):
            Smoothing.parse(bad)


def _corpus(tmp_path: Path, n: int = 40) -> list[str]:
    """A seeded random corpus with sparse alignments (unaligned words on both sides), as files."""
    rng = random.Random(7)
    src, tgt, align = [], [], []
    for _ in range(n):
        ls, lt = rng.randint(1, 9), rng.randint(1, 9)
        src.append(" ".join(f"s{rng.randint(0, 6)}" for _ in range(ls)))
        tgt.append(" ".join(f"t{rng.randint(0, 6)}" for _ in range(lt)))
        links = {(rng.randrange(ls), rng.randrange(lt)) for _ in range(rng.randint(0, ls + 1))}
        align.append(" ".join(f"{i}-{j}" for i, j in sorted(links)))
    for name, lines in (("c.src", src), ("c.tgt", tgt), ("c.align", align)):
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    return ["--src", str(tmp_path / "c.src"), "--tgt", str(tmp_path / "c.tgt"),
            "--alignment", str(tmp_path / "c.align")]


def _pairs(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [" ||| ".join(line.split(" ||| ")[:2]) for line in fh]


def test_table_pairs_are_the_phrase_tables_in_its_order(tmp_path):
    common = _corpus(tmp_path)
    assert train_phrases_main(common + ["--out-dir", str(tmp_path / "pt"), "--processes", "1",
                                        "--max-phrase-length", "4"]) == 0
    one = tmp_path / "one.gz"
    assert cli_main(common + ["--out", str(one), "--processes", "1", "--max-phrase-length", "4"]) == 0
    table = _pairs(tmp_path / "pt" / "phrase-table.gz")
    assert len(table) > 100
    assert _pairs(one) == table
    check = check_reordering_table(one)
    assert check.lines == len(table) and check.sorted and check.duplicates == 0
    # forked workers, 3-pair chunks, a small sort buffer and a temp folder: the same bytes, no temp left
    two = tmp_path / "two.gz"
    assert cli_main(common + ["--out", str(two), "--processes", "2", "--max-phrase-length", "4", "--chunk-lines", "3",
                              "--sort-buffer", "1M", "--tmp-dir", str(tmp_path / "tmp")]) == 0
    assert gzip.decompress(two.read_bytes()) == gzip.decompress(one.read_bytes())
    assert list((tmp_path / "tmp").iterdir()) == []


def test_train_phrases_reordering_flag_writes_the_same_table_and_its_moses_ini_line(tmp_path, capsys):
    """smt-train-phrases --reordering msd-bidirectional-fe: smt-train-reordering's table from the step's own
    alignment, and with --lm the LexicalReordering0 line of train-model.perl in moses.ini; a bad value exits 2."""
    common = _corpus(tmp_path)
    lm = str(TEST_DATA / "kenlm" / "hand_bigram.arpa")
    out = tmp_path / "pt"
    assert train_phrases_main(common + ["--out-dir", str(out), "--processes", "1", "--max-phrase-length", "4",
                                        "--reordering", "msd-bidirectional-fe", "--lm", lm, "--lm-order", "2"]) == 0
    one = tmp_path / "one.gz"
    assert cli_main(common + ["--out", str(one), "--processes", "1", "--max-phrase-length", "4"]) == 0
    table = out / "reordering-table.wbe-msd-bidirectional-fe.gz"
    assert gzip.decompress(table.read_bytes()) == gzip.decompress(one.read_bytes())
    ini = (out / "moses.ini").read_text(encoding="utf-8")
    assert ("LexicalReordering name=LexicalReordering0 num-features=6 type=wbe-msd-bidirectional-fe-allff "
            f"input-factor=0 output-factor=0 path={table.resolve()}\n") in ini
    assert "LexicalReordering0= 0.3 0.3 0.3 0.3 0.3 0.3\n" in ini
    capsys.readouterr()
    assert train_phrases_main(common + ["--out-dir", str(tmp_path / "bad"), "--reordering", "hier-msd"]) == 2
    assert "--reordering must be one of" in capsys.readouterr().err and not (tmp_path / "bad").exists()


@pytest.mark.parametrize("text, line, what", [
    ("a ||| b ||| 0.5 0.25 0.25 0.2 0.2 0.6 \nc ||| d ||| 0.5 0.25 0.25 0.2 0.2 \n", 2, "5 scores"),
    ("a ||| b ||| 0.5 0.25 0.25 0.2 0.2 0.6 \nc ||| d 0.5 0.25 0.25 0.2 0.2 0.6\n", 2, "3 fields"),
    ("a ||| b ||| 0.5 0.25 0.25 0.2 0.2 x\n", 1, "not all numbers"),
    ("a ||| b ||| 0.5 0.25 0.25 0.2 0.2 0.6\n ||| b ||| 0.5 0.25 0.25 0.2 0.2 0.6\n", 2, "empty source"),
    ("a ||| b ||| 0.5 0.25 0.35 0.2 0.2 0.6\n", 1, "sum to"),
    ("a ||| b ||| 1.5 0.25 0.25 0.2 0.2 0.6\n", 1, "probability"),
    ("a ||| b ||| 0.5 0.25 0.25 0.2 0.2 0.6\n\n", 2, "empty line"),
])
def test_reader_names_file_and_line(tmp_path, text, line, what):
    path = tmp_path / "r.txt"
    path.write_text(text)
    with pytest.raises(DataError) as err:
        list(iter_reordering_table(path))
    assert str(err.value).startswith(f"{path}:{line}:") and what in str(err.value)


def test_format_line_round_trips(tmp_path):
    line = format_line("a b", "c", [0.5, 0.25, 0.25, 1 / 3, 1 / 3, 1 / 3])
    assert line == "a b ||| c ||| 0.500000 0.250000 0.250000 0.333333 0.333333 0.333333 \n"
    (tmp_path / "r").write_text(line)
    assert list(iter_reordering_table(tmp_path / "r"))[0].scores[3] == 0.333333


def test_bad_alignment_line_leaves_nothing(tmp_path, capsys):
    common = _corpus(tmp_path, 12)
    lines = (tmp_path / "c.align").read_text().splitlines()
    lines[9] = "0-0 99-0"
    (tmp_path / "c.align").write_text("\n".join(lines) + "\n")
    out = tmp_path / "o" / "r.gz"
    assert cli_main(common + ["--out", str(out), "--chunk-lines", "2"]) == 2
    err = capsys.readouterr().err
    assert "c.align:10:" in err and "Traceback" not in err
    assert not out.exists() and [p.name for p in (tmp_path / "o").iterdir()] == []


def test_killed_run_leaves_no_table(tmp_path):
    common = _corpus(tmp_path, 12)
    out = tmp_path / "k" / "r.gz"
    code = textwrap.dedent(f"""
        import os, signal
        from smt_features.train import reordering_step
        from smt_features.cli.train_reordering import cli_main
        def die(pairs, smoothing):  # killed while the table is being written
            yield "a ||| b ||| 0.5 0.25 0.25 0.5 0.25 0.25 \\n"
            os.kill(os.getpid(), signal.SIGKILL)
        reordering_step.score_lines = die
        cli_main({common + ["--out", str(out), "--processes", "1"]!r})
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == -9, proc.stderr
    assert not out.exists()
    assert [p.name for p in out.parent.iterdir() if not p.name.startswith(".")] == []
