"""Unusual but valid input of the phrase-based commands is read, not refused (the other half of the
bad-input probe, ``tests/probe/cases_smt_train_decode.py``): CRLF line ends and a UTF-8 byte order mark
give the same result as plain text; a 5,000-token training line is skipped with a warning naming it."""
from __future__ import annotations

import gzip
import logging
from pathlib import Path

import pytest

from tests.probe.cases_smt_train_decode import TRAIN_SRC, TRAIN_TGT
from tests import TEST_DATA

DECODER_DATA = TEST_DATA / "decoder"


def crlf_bom(lines: list[str]) -> bytes:
    return ("\ufeff" + "\r\n".join(lines) + "\r\n").encode("utf-8")


def plain(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode("utf-8")


def _table_lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return fh.read().splitlines()


def _train(tmp_path: Path, name: str, src: bytes, tgt: bytes) -> tuple[int, Path]:
    from smt_features.cli.train import cli_main

    (tmp_path / f"{name}.src").write_bytes(src)
    (tmp_path / f"{name}.tgt").write_bytes(tgt)
    out = tmp_path / name
    rc = cli_main(["--src", str(tmp_path / f"{name}.src"), "--tgt", str(tmp_path / f"{name}.tgt"), "--out-dir",
                   str(out), "--processes", "1", "--eflomal-samplers", "1", "--symmetrization", "intersection"])
    return rc, out


def test_train_phrases_reads_crlf_and_bom(tmp_path):
    rc, out = _train(tmp_path, "crlf", crlf_bom(TRAIN_SRC), crlf_bom(TRAIN_TGT))
    assert rc == 0
    lines = _table_lines(out / "phrase-table.gz")
    assert lines and not any("\r" in ln or "\ufeff" in ln for ln in lines)
    assert any(ln.startswith("s1 ||| t1 |||") for ln in lines)
    assert len((out / "aligned.intersection").read_text().splitlines()) == len(TRAIN_SRC)


def test_train_phrases_skips_a_5000_token_line_and_says_so(tmp_path, caplog):
    src = TRAIN_SRC[:1] + [" ".join(["s1"] * 5000)] + TRAIN_SRC[2:]
    tgt = TRAIN_TGT[:1] + [" ".join(["t1"] * 5000)] + TRAIN_TGT[2:]
    with caplog.at_level(logging.WARNING):
        rc, out = _train(tmp_path, "long", plain(src), plain(tgt))
    assert rc == 0
    text = caplog.text
    assert "1 sentence pair(s)" in text and "line(s) 2" in text and "skipped" in text
    aligned = (out / "aligned.intersection").read_text().splitlines()
    assert len(aligned) == len(src) and aligned[1] == ""  # the line stays, without links
    lines = _table_lines(out / "phrase-table.gz")  # valid gzip, nothing from the long pair
    assert lines and not any(ln.startswith("s1 s1 s1") for ln in lines)
    # the 5,000 unaligned words of the long pair do not pollute w(e|NULL) (it would be ~1 for t1)
    lex = [ln.split() for ln in (out / "lex.f2e").read_text().splitlines()]
    assert all(float(w) < 0.9 for e, f, w in lex if f == "NULL" and e == "t1")


def test_train_phrases_refuses_an_empty_corpus_before_writing(tmp_path, capsys):
    rc, out = _train(tmp_path, "empty", b"", b"")
    assert rc == 2
    assert "empty" in capsys.readouterr().err
    assert not out.exists()


def test_uneven_pairs_are_reported(caplog):
    from smt_features.train.align import report_long_and_uneven, report_unaligned

    with caplog.at_level(logging.WARNING):
        assert report_long_and_uneven([(2, 2), (1, 20), (3, 3)], "c.src") == [1]
        assert report_unaligned([[(0, 0)], [], []], [(1, 1), (2, 2), (0, 3)], "c.src") == [1]
    assert "line(s) 2" in caplog.text


def _ini(tmp_path: Path) -> Path:
    from smt_features.model.moses_ini_build import default_config

    ini = tmp_path / "moses.ini"
    default_config(str(DECODER_DATA / "toy.phrase-table"), str(DECODER_DATA / "toy.arpa"), lm_order=2).write(ini)
    return ini


def test_decode_reads_crlf_and_bom(tmp_path):
    from smt_features.cli.decode import cli_main

    ini = _ini(tmp_path)
    sents = ["a b", "b c a b"]
    outputs = []
    for name, data in (("plain", plain(sents)), ("crlf", crlf_bom(sents))):
        (tmp_path / f"{name}.in").write_bytes(data)
        out = tmp_path / f"{name}.out"
        assert cli_main(["--moses-ini", str(ini), "--input", str(tmp_path / f"{name}.in"), "--output", str(out),
                         "--progress", "false"]) == 0
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1] and outputs[0].count(b"\n") == 2


def test_decode_refuses_an_overlong_line_unless_allowed(tmp_path, capsys):
    from smt_features.cli.decode import cli_main

    ini = _ini(tmp_path)
    (tmp_path / "in").write_text("a b\n" + " ".join(["a", "b"] * 40) + "\n")
    args = ["--moses-ini", str(ini), "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"),
            "--progress", "false"]
    assert cli_main([*args, "--max-sentence-length", "50"]) == 2
    assert f"{tmp_path / 'in'}:2:" in capsys.readouterr().err and not (tmp_path / "out").exists()
    assert cli_main([*args, "--max-sentence-length", "0"]) == 0
    assert len((tmp_path / "out").read_text().splitlines()) == 2


kenlm = pytest.importorskip("kenlm")


def test_kenlm_eval_reads_crlf_and_bom(tmp_path, capsys):
    from smt_features.cli.kenlm import cli_main

    sents = ["x y", "y z x y"]
    results = []
    for name, data in (("plain", plain(sents)), ("crlf", crlf_bom(sents))):
        (tmp_path / name).write_bytes(data)
        assert cli_main(["eval", "--model", str(DECODER_DATA / "toy.arpa"), "--text", str(tmp_path / name),
                         "--name", "x"]) == 0
        results.append(capsys.readouterr().out)
    assert results[0] == results[1] and "ppl" in results[0]


def test_kenlm_train_reads_crlf_and_bom(tmp_path):
    from smt_features.cli.kenlm import cli_main
    from smt_features.train.kenlm_build import find_kenlm_binary

    try:
        find_kenlm_binary("lmplz")
    except FileNotFoundError:
        pytest.skip("KenLM tools not built")
    (tmp_path / "t").write_bytes(crlf_bom(["w1 w2 w3", "w2 w3", "w3 w1 w2 w4", "w4 w1"]))
    assert cli_main(["train", "--text", str(tmp_path / "t"), "--out-prefix", str(tmp_path / "lm"), "--order", "2",
                     "--memory", "64M", "--discount-fallback", "--data-structure", ""]) == 0
    arpa = (tmp_path / "lm.arpa").read_text(encoding="utf-8")
    assert "\ufeff" not in arpa and "\r" not in arpa and "\tw1\t" in arpa
