"""smt-rescore's output safety: stale temp files of a killed run are cleaned up by the rerun (only its own),
one writer per output (an flock on OUTPUT.lock, the holder named), a truncated gzip reported at its true
line, an output that is an input refused; smt-rerank and smt-inspect-phrases refuse to overwrite inputs."""
from __future__ import annotations

import fcntl
import gzip
import os
import socket
import zlib
from pathlib import Path

import pytest
from tests.refusal import refused
from tests.toy_corpus import make_toy_data

from smt_features.cli.rescore import cli_main as rescore_main
from nmt.core.formats.phrase_table import PhraseTableError
from smt_features.neural.output_lock import OutputLock, remove_stale_temps
from smt_features.neural.table_windows import count_table_lines

TABLE = "".join(f"s{i % 7} s{i % 3} ||| t{i % 5} ||| 0.5 0.{i % 9 + 1} 0.25 0.5 ||| 0-0 ||| 1 1 1 ||| |||\n"
                for i in range(30))


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    import torch

    from nmt.cli.train import cli_main as train_main

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("safety")
    data = make_toy_data(root / "data", n_train=40, n_dev=6)
    out = root / "model"
    assert train_main(["--data-dir", str(data), "--out-dir", str(out), "--preset", "tiny", "--max-updates", "1",
                       "--progress", "false", "--threads", "1"]) == 0
    return out


def _table(tmp_path: Path) -> Path:
    path = tmp_path / "pt.gz"
    path.write_bytes(gzip.compress(TABLE.encode(), mtime=0))
    return path


def _rescore(table: Path, model: Path, out: Path, *extra: str) -> int:
    return rescore_main(["--table", str(table), "--model", str(model), "--checkpoint", "last", "--output", str(out),
                         "--threads", "1", "--progress", "false", "--window", "8", "--chunk-lines", "8", *extra])


def test_rerun_removes_the_stale_temp_files_of_its_own_output_only(model: Path, tmp_path: Path) -> None:
    """What a SIGKILL mid-run leaves (mkstemp's ``.OUT.XXXXXXXX.tmp``), simulated: the next run removes it,
    and the temp files of other outputs (or of a similar name) stay."""
    table = _table(tmp_path)
    out = tmp_path / "out.gz"
    stale = [tmp_path / ".out.gz.k3x_9a0q.tmp", tmp_path / ".out.gz.rescore.json.abcdefgh.tmp"]
    others = [tmp_path / ".other.gz.k3x_9a0q.tmp", tmp_path / ".out.gz.x.k3x_9a0q.tmp",
              tmp_path / ".out.gz.abcdefghij.tmp", tmp_path / "out.gz.k3x_9a0q.tmp"]
    for p in stale + others:
        p.write_bytes(b"partial")
    assert _rescore(table, model, out) == 0
    assert out.is_file() and not Path(f"{out}.lock").exists()
    assert not any(p.exists() for p in stale)
    assert all(p.exists() for p in others)
    assert remove_stale_temps(out) == []  # nothing left of its own


def test_a_held_lock_refuses_a_second_writer_and_names_the_holder(model: Path, tmp_path: Path, capsys) -> None:
    table = _table(tmp_path)
    out = tmp_path / "out.gz"
    lock_path = Path(f"{out}.lock")
    holder = open(lock_path, "w+")  # another writer, as this test process: its own open file description
    try:
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        holder.write("pid=4242 host=node7 prog=smt-rescore since=2024-01-01T00:00:00\n")
        holder.flush()
        for extra in ((), ("--resume",)):
            rc = _rescore(table, model, out, *extra)
            assert refused(capsys, r"out\.gz: another run is writing this output \(held by smt-rescore, pid 4242 on "
                                   r"host node7", rc)
            assert not out.exists() and not Path(f"{out}.parts").exists()
            assert not Path(f"{out}.rescore.json").exists()
        assert lock_path.read_text().startswith("pid=4242 host=node7")  # the holder's lock is left alone
    finally:
        holder.close()  # the holder exits: the OS releases its flock (as after kill -9)
    assert _rescore(table, model, out, "--resume") == 0
    assert out.is_file() and not lock_path.exists() and not Path(f"{out}.parts").exists()


def test_the_lock_records_this_process_and_goes_away(tmp_path: Path) -> None:
    out = tmp_path / "o.gz"
    with OutputLock(out):
        text = Path(f"{out}.lock").read_text()
        assert f"pid={os.getpid()} host={socket.gethostname()}" in text
        with pytest.raises(ValueError, match=f"pid {os.getpid()} on host"):
            OutputLock(out).acquire()
    assert not Path(f"{out}.lock").exists()
    # a stale lock file of a crashed holder (no flock on it) does not block
    Path(f"{out}.lock").write_text("pid=1 host=gone\n")
    with OutputLock(out):
        assert f"pid={os.getpid()}" in Path(f"{out}.lock").read_text()


def test_truncated_gzip_is_reported_at_the_line_where_the_stream_broke(model: Path, tmp_path: Path, capsys) -> None:
    text = "".join(f"s{i} s{i * 7 % 13} ||| t{i} ||| 0.5 0.5 0.{i % 9 + 1} 0.5 ||| 0-0 ||| 1 1 1 ||| |||\n"
                   for i in range(600))
    whole = gzip.compress(text.encode(), mtime=0)
    cut = whole[: len(whole) // 2]
    path = tmp_path / "trunc.gz"
    path.write_bytes(cut)
    true_line = zlib.decompressobj(31).decompress(cut).count(b"\n") + 1
    assert true_line > 100
    with pytest.raises(PhraseTableError, match=rf"trunc\.gz:{true_line}: .*truncated"):
        count_table_lines(str(path))
    out = tmp_path / "o.gz"
    assert refused(capsys, rf"trunc\.gz:{true_line}: ", _rescore(path, model, out))
    assert not out.exists() and not list(tmp_path.glob(".o.gz*"))


def test_output_equal_to_an_input_is_refused_before_writing(model: Path, tmp_path: Path, capsys) -> None:
    table = _table(tmp_path)
    before = table.read_bytes()
    assert refused(capsys, "--output is the same file as --table", _rescore(table, model, table))
    vocab = model / "src_vocab.tsv"
    vocab_bytes = vocab.read_bytes()
    assert refused(capsys, "same file as --model's vocabulary", _rescore(table, model, vocab))
    assert table.read_bytes() == before and vocab.read_bytes() == vocab_bytes


def test_rerank_refuses_to_overwrite_its_nbest(tmp_path: Path, capsys) -> None:
    from smt_features.cli.rerank import cli_main as rerank_main

    nbest = tmp_path / "dev.nbest"
    nbest.write_text("0 ||| x y  ||| LM0= -2.5 ||| -2.5\n0 ||| y x  ||| LM0= -3 ||| -3\n", encoding="utf-8")
    before = nbest.read_bytes()
    assert refused(capsys, "--output is the same file as --nbest", rerank_main(["--nbest", str(nbest), "--output",
                                                                                str(nbest)]))
    assert nbest.read_bytes() == before
    link = tmp_path / "link.nbest"
    link.symlink_to(nbest)
    assert refused(capsys, "same file", rerank_main(["--nbest", str(nbest), "--output", str(link)]))
    assert nbest.read_bytes() == before


def test_inspect_refuses_a_line_with_another_score_count(model: Path, tmp_path: Path, capsys) -> None:
    """The 3-score line is the only line of the inspected source: it used to be read, printing 0.2 as φ(e|f)."""
    from smt_features.cli.inspect_phrases import cli_main as inspect_main

    table = tmp_path / "pt"
    table.write_text("a ||| x ||| 0.5 0.5 0.5 0.5 ||| 0-0 ||| 1 1 1 ||| |||\n"
                     "b ||| y ||| 0.5 0.5 0.2 ||| 0-0 ||| 1 1 1 ||| |||\n", encoding="utf-8")
    sources = tmp_path / "src.txt"
    sources.write_text("b\n", encoding="utf-8")
    out = tmp_path / "inspect.md"
    rc = inspect_main(["--table", str(table), "--model", str(model), "--checkpoint", "last", "--sources",
                       str(sources), "--generate", "0", "--threads", "1", "--output", str(out)])
    assert refused(capsys, r"pt:2: 3 scores, but earlier lines have 4", rc) and not out.exists()
