"""Strict readers and atomic writers of nmt.core.io."""
from __future__ import annotations

import gzip
import pickle
from pathlib import Path

import pytest

from nmt.core.io import (DataError, atomic_write, count_lines, iter_lines, iter_parallel, open_text,
                         read_lines, read_parallel, read_tsv_pairs)


def write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_non_utf8_byte_names_file_line_and_offset(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "bad.txt", b"ok line\nsecond\nbad \xff byte\n")
    with pytest.raises(DataError) as info:
        read_lines(path)
    message = str(info.value)
    assert str(path) in message and ":3:" in message
    assert "\\xff" in message and "offset 19" in message
    assert info.value.line == 3


def test_non_utf8_in_gzip_reports_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt.gz"
    path.write_bytes(gzip.compress("é\n".encode() + b"\xc3\x28\n"))
    with pytest.raises(DataError, match=r":2:"):
        read_lines(path)


def test_empty_and_blank_lines(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "e.txt", b"one\n \t\nthree\n")
    with pytest.raises(DataError, match=rf"{path}:2: empty line"):
        read_lines(path)
    assert read_lines(path, allow_empty=True) == ["one", " \t", "three"]
    streamed = iter_lines(path)
    assert next(streamed) == "one"
    with pytest.raises(DataError, match=":2:"):
        next(streamed)


def test_only_trailing_newline_is_stripped(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "crlf.txt", b"a\rb\r\nlast")
    assert read_lines(path) == ["a\rb", "last"]
    assert count_lines(path) == 2
    with open_text(path) as fh:
        assert fh.read() == "a\rb\r\nlast"


def test_parallel_length_mismatch_names_both_files(tmp_path: Path) -> None:
    src = write_bytes(tmp_path / "x.en", b"a\nb\nc\nd\n")
    tgt = write_bytes(tmp_path / "x.fr", b"A\nB\n")
    with pytest.raises(DataError) as info:
        read_parallel(src, tgt)
    message = str(info.value)
    assert f"{src} has 4 lines" in message and f"{tgt} has 2 lines" in message
    assert ":3:" in message
    # the other way round, streaming: the aligned pairs come first, then the error
    pairs = iter_parallel(tgt, src)
    assert next(pairs) == ("A", "a") and next(pairs) == ("B", "b")
    with pytest.raises(DataError, match="has 2 lines.*has 4 lines"):
        next(pairs)


def test_parallel_empty_line_names_the_side(tmp_path: Path) -> None:
    src = write_bytes(tmp_path / "y.en", b"a\nb\n")
    tgt = write_bytes(tmp_path / "y.fr", b"A\n\n")
    with pytest.raises(DataError, match=rf"{tgt}:2: empty"):
        read_parallel(src, tgt)
    assert read_parallel(src, tgt, allow_empty=True) == [("a", "A"), ("b", "")]


def test_tsv_pairs(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "t.tsv", "Hi.\tSalut !\tCC-BY\nGo.\tVa !\n".encode())
    assert read_tsv_pairs(path) == [("Hi.", "Salut !"), ("Go.", "Va !")]
    assert read_tsv_pairs(path, src_col=1, tgt_col=0)[0] == ("Salut !", "Hi.")
    bad = write_bytes(tmp_path / "bad.tsv", b"Hi.\tSalut\nno tab here\n")
    with pytest.raises(DataError, match=r":2: expected at least 2"):
        read_tsv_pairs(bad)


def test_gz_round_trip(tmp_path: Path) -> None:
    lines = ["première ligne", "zweite Zeile | ok", "x\ry"]
    path = tmp_path / "sub" / "round.txt.gz"
    with atomic_write(path) as fh:
        for line in lines:
            fh.write(line + "\n")
    assert gzip.decompress(path.read_bytes()).decode() == "".join(line + "\n" for line in lines)
    assert read_lines(path) == lines
    assert count_lines(path) == 3
    with atomic_write(tmp_path / "b.bin.gz", "wb") as fh:
        fh.write(b"\x00\x01")
    with open_text(tmp_path / "b.bin.gz", "rb") as fh:
        assert fh.read() == b"\x00\x01"


def test_atomic_write_keeps_old_file_on_error(tmp_path: Path) -> None:
    for name in ("keep.txt", "keep.txt.gz"):
        path = tmp_path / name
        with atomic_write(path) as fh:
            fh.write("old\n")
        with pytest.raises(RuntimeError):
            with atomic_write(path) as fh:
                fh.write("new partial")
                raise RuntimeError("boom")
        assert read_lines(path) == ["old"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt", "keep.txt.gz"]


def test_corrupt_gzip_is_a_data_error(tmp_path: Path) -> None:
    data = gzip.compress(b"".join(b"line %d\n" % i for i in range(1000)))
    path = write_bytes(tmp_path / "cut.txt.gz", data[: len(data) // 2])
    with pytest.raises(DataError, match="corrupt or truncated gzip"):
        read_lines(path)


def test_data_error_pickles() -> None:
    err = pickle.loads(pickle.dumps(DataError("f.txt", 7, "bad")))
    assert str(err) == "f.txt:7: bad" and err.line == 7 and err.path == "f.txt"
    ready_made = pickle.loads(pickle.dumps(DataError("g.txt: line 2: odd")))
    assert str(ready_made) == "g.txt: line 2: odd" and ready_made.line is None


def test_remove_stale_temp_files_keeps_finished_files(tmp_path) -> None:
    from nmt.core.io import atomic_write, remove_stale_temp_files

    with atomic_write(tmp_path / "done.json") as fh:
        fh.write("{}")
    stale = tmp_path / ".checkpoint_best.pt.abc123.tmp"
    stale.write_bytes(b"partial")
    (tmp_path / ".hidden").write_text("not ours")
    assert remove_stale_temp_files(tmp_path) == [stale]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".hidden", "done.json"]
