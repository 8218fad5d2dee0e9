"""--stream-buffer for LM text (both regimes) and sentence pairs: same batches as in memory, exact resume."""
from __future__ import annotations

import gzip
import random
from collections import Counter
from pathlib import Path

import pytest
import torch
from tests.nmt.checkpoints import assert_same_checkpoint

from nmt.training.checkpoint import load_checkpoint
from nmt.cli.lm_train import cli_main as lm_train_main
from nmt.cli.train import cli_main as train_main
from nmt.data.vocab import Vocabulary
from nmt.lm.data import LMDataConfig, encode_all, read_sentences
from nmt.lm.task import LMTask, StreamWindow

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _lm_text(tmp_path: Path, n: int = 60, gz: bool = False) -> Path:
    rng = random.Random(5)
    lines = [" ".join(f"w{rng.randint(0, 9)}" for _ in range(rng.randint(0, 7))) for _ in range(n)]
    lines[0] = "\ufeff" + lines[0]
    raw = ("\r\n".join(lines[:5]) + "\r\n" + "\n".join(lines[5:]) + "\n").encode("utf-8")  # CRLF, BOM, empty lines
    path = tmp_path / ("train.txt.gz" if gz else "train.txt")
    path.write_bytes(gzip.compress(raw) if gz else raw)
    (tmp_path / "valid.txt").write_text("w1 w2\n\nw3\n", encoding="utf-8")
    return path


def _tasks(path: Path, **cfg) -> tuple[LMTask, LMTask]:
    opts = {k: cfg.pop(k) for k in ("batch_size", "max_tokens") if k in cfg}
    data = LMDataConfig(train=str(path), valid=str(path.parent / "valid.txt"), **cfg)
    vocab = Vocabulary.build(read_sentences(path), max_size=6)  # some words map to <unk>
    dev = encode_all(vocab, read_sentences(data.valid))
    mem = LMTask(data, vocab, encode_all(vocab, read_sentences(path, data.max_train_sentences)), dev, seed=3, **opts)
    data_s = LMDataConfig(**{**data.__dict__, "stream_buffer": cfg.get("stream_buffer", 10 ** 6)})
    return mem, LMTask(data_s, vocab, None, dev, seed=3, **opts)


@pytest.mark.parametrize("gz", [False, True])
def test_lm_stream_regime_rows_read_lazily_are_the_in_memory_rows(tmp_path: Path, monkeypatch, gz: bool) -> None:
    monkeypatch.setattr("nmt.lm.stream.INDEX_EVERY", 3)  # readers seek into the middle of the text
    path = _lm_text(tmp_path, gz=gz)
    for batch_size, bptt, limit in ((5, 4, None), (3, 7, 41), (1, 50, None), (400, 2, None)):
        mem, streamed = _tasks(path, regime="stream", bptt=bptt, batch_size=batch_size, max_train_sentences=limit)
        assert (streamed.num_batches, streamed.num_lines, streamed.train_tokens) == \
               (mem.num_batches, mem.num_lines, mem.train_tokens)

        def windows(task: LMTask, start: int, lo: int = 0, hi: int | None = None) -> list:
            out = []
            for k in range(start, task.num_batches):
                task._carried_next = (0, k)
                b = task.make_batch(StreamWindow(0, k, lo, hi))
                out.append((b["inputs"].tolist(), b["targets"].tolist()))
            return out

        full = windows(mem, 0)
        assert windows(streamed, 0) == full and windows(streamed, 0) == full  # a second epoch re-reads
        k = mem.num_batches // 2                                              # resume mid-epoch
        assert windows(streamed, k) == full[k:]
        rows = mem.stream_in.size(0)
        if rows > 2:  # a DDP rank's rows only
            assert windows(streamed, 1, 1, rows - 1) == windows(mem, 1, 1, rows - 1)


def test_lm_sentence_regime_windows(tmp_path: Path) -> None:
    path = _lm_text(tmp_path)
    mem, big = _tasks(path, regime="sentence", batch_size=4, max_len=6, stream_buffer=1000)
    assert big.num_dropped == mem.num_dropped > 0 and big.num_lines == mem.num_lines
    assert big.train_tokens == mem.train_tokens
    for epoch in (0, 1):  # a window holding every sentence: the in-memory batches
        got = [big.make_batch(item)["tokens"].tolist() for item in big.batches_for_epoch(epoch)]
        assert got == [mem.make_batch(item)["tokens"].tolist() for item in mem.batches_for_epoch(epoch)]
    _, small = _tasks(path, regime="sentence", batch_size=4, max_len=6, stream_buffer=7)
    want = Counter(tuple(s) for s in mem.train)
    plans = []
    for epoch in (0, 1):
        batches = [small.make_batch(item) for item in small.batches_for_epoch(epoch)]
        assert all(len(set(b["lengths"].tolist())) == 1 for b in batches)  # equal-length batches
        assert Counter(tuple(row[:n]) for b in batches for row, n in zip(b["tokens"].tolist(),
                                                                          b["lengths"].tolist())) == want
        plans.append([b["tokens"].tolist() for b in batches])
    assert plans[0] != plans[1] and len(plans[0]) == small.num_batches
    item = max(small.batches_for_epoch(0), key=lambda b: len(b.indices))  # DDP: disjoint parts of one batch
    parts = [small.shard_batch(item, rank, 2)[0] for rank in (0, 1)]
    assert sorted(i for p in parts for i in p.indices.tolist()) == sorted(item.indices.tolist())
    assert all(p.window == item.window and len(p.indices) < len(item.indices) for p in parts)


def _lm_args(path: Path, out: Path, *extra: str) -> list[str]:
    return ["--train", str(path), "--valid", str(path.parent / "valid.txt"), "--arch", "lstm", "--emb-dim", "8",
            "--hidden-dim", "8", "--out-dir", str(out), "--threads", "1", "--progress", "false", "--optimizer",
            "adam", "--lr", "0.02", "--batch-size", "4", "--dropout-emb", "0.2", "--save-every", "3", *extra]


@pytest.mark.parametrize("regime", ["stream", "sentence"])
def test_lm_train_stream_buffer_resumes_exactly(regime: str, tmp_path: Path, capsys) -> None:
    path = _lm_text(tmp_path)
    extra = ["--regime", regime, "--stream-buffer", "9", "--bptt", "6", "--max-epochs", "5"]
    full, split, mem = tmp_path / "full", tmp_path / "split", tmp_path / "mem"
    assert lm_train_main(_lm_args(path, full, *extra, "--max-updates", "17")) == 0
    assert lm_train_main(_lm_args(path, split, *extra, "--max-updates", "5")) == 0
    assert lm_train_main(_lm_args(path, split, *extra, "--max-updates", "17", "--resume")) == 0
    assert_same_checkpoint(full / "checkpoint_last.pt", split / "checkpoint_last.pt")
    if regime == "stream":  # rows read lazily: the in-memory run's weights
        assert lm_train_main(_lm_args(path, mem, "--regime", regime, "--bptt", "6", "--max-epochs", "5",
                                      "--max-updates", "17")) == 0
        a, b = (load_checkpoint(p / "checkpoint_last.pt")["model"] for p in (full, mem))
        assert all(torch.equal(a[k], b[k]) for k in a)
    else:
        capsys.readouterr()
        assert lm_train_main(_lm_args(path, split, *extra[:2], "--stream-buffer", "8", *extra[4:],
                                      "--max-updates", "20", "--resume")) == 2
        assert "--stream-buffer 8: the checkpoint's data stream differs" in capsys.readouterr().err
    bad = tmp_path / "bad.txt"
    bad.write_bytes(path.read_bytes().replace(b"\n", b"\n\xff", 1))
    capsys.readouterr()
    assert lm_train_main(_lm_args(bad, tmp_path / "bad", *extra, "--vocab", str(full / "vocab.tsv"))) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2:" in err and "Traceback" not in err and not (tmp_path / "bad").exists()


def _pair_args(data: Path, out: Path, *extra: str) -> list[str]:
    return ["--data-dir", str(data), "--out-dir", str(out), "--preset", "tiny", "--dropout", "0.1", "--optimizer",
            "adam", "--lr", "0.01", "--batch-size", "16", "--progress", "false", "--threads", "1", *extra]


def test_train_sentence_pairs_stream_buffer(toy_data: Path, tmp_path: Path, capsys) -> None:
    """A window as large as the corpus = the in-memory run; small windows: exact resume; bad line: FILE:LINE."""
    mem, big = tmp_path / "mem", tmp_path / "big"
    assert train_main(_pair_args(toy_data, mem, "--max-updates", "18")) == 0  # 15 batches an epoch
    assert train_main(_pair_args(toy_data, big, "--max-updates", "18", "--stream-buffer", "100000")) == 0
    a, b = (load_checkpoint(p / "checkpoint_last.pt")["model"] for p in (mem, big))
    assert all(torch.equal(a[k], b[k]) for k in a)
    full, split = tmp_path / "full", tmp_path / "split"
    small = ["--stream-buffer", "50", "--save-every", "4", "--max-len", "5"]
    assert train_main(_pair_args(toy_data, full, *small, "--max-updates", "21")) == 0  # crosses an epoch
    assert train_main(_pair_args(toy_data, split, *small, "--max-updates", "7")) == 0
    position = load_checkpoint(split / "checkpoint_last.pt")["pair_stream"]["position"]
    assert position["batches"] == 7
    assert train_main(_pair_args(toy_data, split, *small, "--max-updates", "21", "--resume")) == 0
    assert_same_checkpoint(full / "checkpoint_last.pt", split / "checkpoint_last.pt")
    src = toy_data / "train.tok.en"
    src.write_text(src.read_text(encoding="utf-8").replace("\n", "\n\n", 1), encoding="utf-8")
    capsys.readouterr()
    assert train_main(_pair_args(toy_data, tmp_path / "bad", "--stream-buffer", "50")) == 2
    err = capsys.readouterr().err
    assert f"{src}:2:" in err and "Traceback" not in err and not (tmp_path / "bad").exists()
