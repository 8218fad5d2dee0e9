"""nmt-train: learning, exact resume, and kill -9 in the middle of training."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml
from tests.nmt.checkpoints import assert_same_checkpoint

from nmt.training.checkpoint import load_checkpoint
from nmt.cli.train import cli_main as train_main
from tests import TEST_DATA


def _args(data: Path, out: Path, *extra: str) -> list[str]:
    return ["--data-dir", str(data), "--out-dir", str(out), "--preset", "tiny", "--dropout", "0.1",
            "--optimizer", "adam", "--lr", "0.01", "--batch-size", "16", "--progress", "false",
            "--threads", "1", *extra]  # one thread: bit-exact comparisons even on a loaded machine


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_training_lowers_dev_loss(toy_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "m"
    assert train_main(_args(toy_data, out, "--max-epochs", "16", "--patience", "0", "--lr", "0.03", "--dropout", "0",
                            "--seed", "1")) == 0
    history = json.loads((out / "history.json").read_text())
    dev = [h["dev_loss"] for h in history if "dev_loss" in h]
    assert len(dev) == 16
    # Robust properties, not one noisy value: with lr 0.03 the per-epoch dev loss jumps by up to
    # ±0.7 (this seed: 2.58 at epoch 1, 1.08 at 15, 1.77 at 16), so the last value alone says
    # little. The best epoch is well below the first, and the running mean falls clearly.
    assert min(dev) < dev[0] - 0.8, dev
    assert sum(dev[-4:]) / 4 < sum(dev[:4]) / 4 - 0.4, dev
    best = load_checkpoint(out / "checkpoint_best.pt")["train_state"]
    assert best["best_dev"] == min(dev)
    assert (out / "checkpoint_best.pt").exists() and (out / "train.log").exists()
    cfg = yaml.safe_load((out / "config.yaml").read_text())
    assert cfg["model"]["hidden_dim"] == 32 and cfg["optim"]["optimizer"] == "adam"


def test_resume_continues_exactly(toy_data: Path, tmp_path: Path) -> None:
    full, split = tmp_path / "full", tmp_path / "split"
    train_main(_args(toy_data, full, "--max-updates", "23", "--save-every", "5"))
    train_main(_args(toy_data, split, "--max-updates", "9", "--save-every", "5"))  # stops mid-epoch
    assert load_checkpoint(split / "checkpoint_last.pt")["train_state"]["step"] == 9
    train_main(_args(toy_data, split, "--max-updates", "23", "--save-every", "5", "--resume"))
    assert_same_checkpoint(full / "checkpoint_last.pt", split / "checkpoint_last.pt")
    # resuming a run that already reached its limit trains nothing more
    train_main(_args(toy_data, split, "--max-updates", "23", "--save-every", "5", "--resume"))
    assert_same_checkpoint(full / "checkpoint_last.pt", split / "checkpoint_last.pt")
    # each run logs to its own folder only
    assert "resumed" not in (full / "train.log").read_text()


def test_kill9_then_resume(toy_data: Path, tmp_path: Path) -> None:
    full, killed = tmp_path / "full", tmp_path / "killed"
    common = ["--max-updates", "120", "--save-every", "4", "--eval-every", "10"]
    train_main(_args(toy_data, full, *common))
    # the child sleeps 50 ms per batch (results unchanged): on a fast machine 120 updates could
    # otherwise finish before the poll below sees update 8, and the test would depend on speed
    slow = ("import sys, time; from nmt.translation.data import TranslationTask as T; f = T.make_batch; "
            "T.make_batch = lambda self, idx: (time.sleep(0.05), f(self, idx))[1]; "
            "from nmt.cli.train import cli_main; sys.exit(cli_main(sys.argv[1:]))")
    cmd = [sys.executable, "-c", slow, *_args(toy_data, killed, *common)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    last = killed / "checkpoint_last.pt"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if last.exists() and load_checkpoint(last)["train_state"]["step"] >= 8:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "training finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    step_at_kill = load_checkpoint(last)["train_state"]["step"]
    assert 8 <= step_at_kill < 120
    # nothing left half-written: every file in the folder loads
    for path in killed.iterdir():
        if path.suffix == ".pt":
            load_checkpoint(path)
        elif path.suffix == ".json":
            json.loads(path.read_text())
    # a kill -9 during an atomic write may leave its temp file (never a half-written final file);
    # the resumed run removes such leftovers
    train_main(_args(toy_data, killed, *common, "--resume"))
    assert_same_checkpoint(full / "checkpoint_last.pt", last)
    assert not [p for p in killed.iterdir() if p.name.startswith(".")], "temp files left behind"


def test_trains_on_unique_phrase_table_pairs(tmp_path: Path, monkeypatch) -> None:
    """The paper's regime: the table's unique pairs, frequencies ignored; a bad line names its number."""
    from collections import Counter

    from nmt.data.vocab import Vocabulary
    from nmt.translation.data import TranslationTask, unique_phrase_pairs
    from nmt.core.formats.phrase_table import PhraseTableError

    toy = TEST_DATA / "smt" / "toy.phrase-table"
    lines = toy.read_text(encoding="utf-8").splitlines()
    # the same (src, tgt) pairs again with other scores / counts (a table concatenated from two runs,
    # or a pair kept by two extraction passes): still sorted, each duplicate next to its first copy
    dups = {"das haus ||| the house": "0.4 0.3 0.2 0.1 ||| 0-0 1-1 ||| 2 2 1 ||| |||",
            "haus ||| home": "0.1 0.1 0.05 0.05 ||| 0-0 ||| 9 9 1 ||| |||"}
    rows = []
    for line in lines:
        rows.append(line)
        key = " ||| ".join(line.split(" ||| ")[:2])
        if key in dups:
            rows.append(f"{key} ||| {dups[key]}")
            rows.append(f"{key} ||| {dups[key]}")  # and once more, byte-identical
    table = tmp_path / "dup.phrase-table"
    table.write_text("\n".join(rows) + "\n", encoding="utf-8")
    raw_pairs = [tuple(tuple(side.split()) for side in row.split(" ||| ")[:2]) for row in rows]
    expected = set(raw_pairs)
    assert len(raw_pairs) == len(expected) + 4 and len(expected) == len(lines)  # the fixture has duplicates

    pairs = unique_phrase_pairs(str(table))
    assert pairs[0] == (["das", "haus"], ["the", "house"])
    assert [(tuple(s), tuple(t)) for s, t in pairs] == list(dict.fromkeys(raw_pairs))  # first copies, table order
    Vocabulary.build([s for s, _ in pairs], max_size=None).save(tmp_path / "vocab.de.tsv")
    Vocabulary.build([t for _, t in pairs], max_size=None).save(tmp_path / "vocab.en.tsv")
    (tmp_path / "val.tok.de").write_text("das haus\n", encoding="utf-8")
    (tmp_path / "val.tok.en").write_text("the house\n", encoding="utf-8")

    seen: list[tuple[tuple[int, ...], tuple[int, ...]]] = []  # every training example the trainer batches
    make_batch = TranslationTask.make_batch

    def recording_make_batch(self, indices):
        seen.extend((tuple(self.train_src[i]), tuple(self.train_tgt[i])) for i in indices)
        return make_batch(self, indices)

    monkeypatch.setattr(TranslationTask, "make_batch", recording_make_batch)
    out = tmp_path / "m"
    assert train_main(["--phrase-table", str(table), "--data-dir", str(tmp_path), "--src-lang", "de", "--tgt-lang",
                       "en", "--out-dir", str(out), "--preset", "tiny", "--max-epochs", "1", "--batch-size", "2",
                       "--progress", "false", "--threads", "1"]) == 0
    src_vocab = Vocabulary.load(tmp_path / "vocab.de.tsv")
    tgt_vocab = Vocabulary.load(tmp_path / "vocab.en.tsv")
    want = Counter((tuple(src_vocab.encode(list(s))), tuple(tgt_vocab.encode(list(t)))) for s, t in expected)
    assert Counter(seen) == want  # one epoch: each distinct pair exactly once, no duplicate twice
    assert load_checkpoint(out / "checkpoint_last.pt")["train_state"]["step"] == -(-len(expected) // 2)
    bad = tmp_path / "bad.phrase-table"
    bad.write_text(table.read_text(encoding="utf-8") + "x ||| ||| 0.5\n", encoding="utf-8")
    n_lines = len(bad.read_text(encoding="utf-8").splitlines())
    try:
        unique_phrase_pairs(str(bad))
    except PhraseTableError as err:
        # "FILE:LINE: msg" (the toolkit's convention) or the older "... line N ..."
        assert re.search(rf"(:|line ){n_lines}\b", str(err)), str(err)
    else:
        raise AssertionError("malformed line accepted")


def test_phrase_pairs_by_count_and_reverse_direction(tmp_path: Path, monkeypatch) -> None:
    """--phrase-pairs count: each unique pair as often as its joint count c(e,f) per epoch; --reverse: the model
    reads the target phrase and predicts the source, with the vocabularies swapped to their sides."""
    from collections import Counter

    from nmt.data.vocab import Vocabulary
    from nmt.translation.data import TranslationTask

    toy = TEST_DATA / "smt" / "toy.phrase-table"
    rows = [line.split(" ||| ") for line in toy.read_text(encoding="utf-8").splitlines()]
    joint = Counter({(tuple(r[0].split()), tuple(r[1].split())): int(r[4].split()[2]) for r in rows})
    Vocabulary.build([list(s) for s, _ in joint], max_size=None).save(tmp_path / "vocab.de.tsv")
    Vocabulary.build([list(t) for _, t in joint], max_size=None).save(tmp_path / "vocab.en.tsv")
    (tmp_path / "val.tok.de").write_text("das haus\n", encoding="utf-8")
    (tmp_path / "val.tok.en").write_text("the house\n", encoding="utf-8")
    src_vocab, tgt_vocab = Vocabulary.load(tmp_path / "vocab.de.tsv"), Vocabulary.load(tmp_path / "vocab.en.tsv")

    seen: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    make_batch = TranslationTask.make_batch

    def recording_make_batch(self, indices):
        seen.extend((tuple(self.train_src[i]), tuple(self.train_tgt[i])) for i in indices)
        return make_batch(self, indices)

    monkeypatch.setattr(TranslationTask, "make_batch", recording_make_batch)
    common = ["--phrase-table", str(toy), "--data-dir", str(tmp_path), "--src-lang", "de", "--tgt-lang", "en",
              "--preset", "tiny", "--max-epochs", "1", "--batch-size", "2", "--progress", "false", "--threads", "1"]
    assert train_main([*common, "--out-dir", str(tmp_path / "count"), "--phrase-pairs", "count"]) == 0
    want = Counter({(tuple(src_vocab.encode(list(s))), tuple(tgt_vocab.encode(list(t)))): n
                    for (s, t), n in joint.items()})
    assert Counter(seen) == want and sum(want.values()) > len(want)  # the fixture's counts are not all 1

    seen.clear()
    out = tmp_path / "reverse"
    assert train_main([*common, "--out-dir", str(out), "--reverse"]) == 0
    assert Counter(seen) == Counter((tuple(tgt_vocab.encode(list(t))), tuple(src_vocab.encode(list(s))))
                                    for s, t in joint)
    ckpt = load_checkpoint(out / "checkpoint_last.pt")
    assert (out / "src_vocab.tsv").read_text() == (tmp_path / "vocab.en.tsv").read_text()  # input side: English
    assert (out / "tgt_vocab.tsv").read_text() == (tmp_path / "vocab.de.tsv").read_text()
    assert ckpt["model"]["src_embed.weight"].shape[0] == len(tgt_vocab)  # the model reads English
    # the recorded config resolves to the same (model-side) files again
    from nmt.translation.data import TranslationDataConfig
    data = yaml.safe_load((out / "config.yaml").read_text())["data"]
    paths = TranslationDataConfig(**data).resolved_paths()
    assert Path(paths["src_vocab"]).resolve() == (out / "src_vocab.tsv").resolve()
    assert paths["dev_src"].endswith("val.tok.en")

    # sentence pairs have no counts: refused before anything is written
    assert train_main(["--data-dir", str(tmp_path), "--src-lang", "de", "--tgt-lang", "en", "--out-dir",
                       str(tmp_path / "x"), "--phrase-pairs", "count", "--progress", "false"]) == 2
    assert not (tmp_path / "x").exists()


def test_weight_averaging_on_stall_resumes_exactly(toy_data: Path, tmp_path: Path) -> None:
    """--average on_stall: a running mean of the parameters from the first dev evaluation that does not
    improve; it is what evaluation and checkpoint_best see, and checkpoint_last carries it."""
    full, split = tmp_path / "full", tmp_path / "split"
    common = ["--lr", "0.1", "--eval-every", "3", "--patience", "0", "--average", "on_stall", "--save-every", "5",
              "--threads", "1"]
    train_main(_args(toy_data, full, *common, "--max-updates", "24"))
    train_main(_args(toy_data, split, *common, "--max-updates", "13"))
    mid = load_checkpoint(split / "checkpoint_last.pt")
    assert mid["train_state"]["step"] == 13 and mid["average"]["count"] >= 1, "the run must stall before update 13"
    train_main(_args(toy_data, split, *common, "--max-updates", "24", "--resume"))
    assert_same_checkpoint(full / "checkpoint_last.pt", split / "checkpoint_last.pt")
    last, other = load_checkpoint(full / "checkpoint_last.pt"), load_checkpoint(split / "checkpoint_last.pt")
    assert last["average"]["count"] == other["average"]["count"] > mid["average"]["count"]
    for name, tensor in last["average"]["params"].items():
        assert torch.equal(tensor, other["average"]["params"][name]), name
    history = last["train_state"]["history"]
    started = next(h["step"] for h in history if h.get("average") == "started")
    assert last["average"]["count"] == 24 - started
    evals = [h for h in history if "dev_loss" in h]
    assert all(("averaged" in h) == (h["step"] > started) for h in evals)
    # checkpoint_best holds the averaged weights of its evaluation (here: the last one, if it improved)
    best = load_checkpoint(full / "checkpoint_best.pt")
    if evals[-1]["dev_loss"] == last["train_state"]["best_dev"]:
        assert best["train_state"]["step"] == 24 and "average" not in best
        for name, tensor in last["average"]["params"].items():
            assert torch.equal(best["model"][name], tensor), name
        assert not all(torch.equal(best["model"][k], last["model"][k]) for k in last["model"])


def _stream_fixture(tmp_path: Path) -> tuple[Path, list[tuple[tuple[str, ...], tuple[str, ...]]]]:
    """A sorted table of 40 sources, 1-3 targets each, some pairs repeated (as with two extraction passes)."""
    from nmt.data.vocab import Vocabulary

    rows = []
    for i in range(40):
        src = " ".join(["w%02d" % i] + ["x"] * (i % 4))
        for j in range(1 + i % 3):
            tgt = " ".join(["t%d" % j] * (1 + (i + j) % 5))
            rows.append(f"{src} ||| {tgt} ||| 0.5 0.5 0.5 0.5 ||| ||| 1 1 1 ||| |||")
            if (i + j) % 7 == 0:
                rows.append(f"{src} ||| {tgt} ||| 0.25 0.5 0.5 0.5 ||| ||| 2 1 1 ||| |||")
    rows.sort()
    table = tmp_path / "stream.phrase-table"
    table.write_text("\n".join(rows) + "\n", encoding="utf-8")
    pairs = list(dict.fromkeys(tuple(tuple(side.split()) for side in r.split(" ||| ")[:2]) for r in rows))
    Vocabulary.build([list(s) for s, _ in pairs], max_size=None).save(tmp_path / "vocab.de.tsv")
    Vocabulary.build([list(t) for _, t in pairs], max_size=None).save(tmp_path / "vocab.en.tsv")
    (tmp_path / "val.tok.de").write_text("w01 x\n", encoding="utf-8")
    (tmp_path / "val.tok.en").write_text("t0 t0\n", encoding="utf-8")
    return table, pairs


def test_stream_buffer_batches_permute_the_unique_pairs_and_resume(tmp_path: Path, capsys) -> None:
    """--stream-buffer: one epoch is a permutation of the in-memory unique pairs; same seed, same batches;
    a plan picked up mid-epoch gives the same remaining batches; resume is exact; bad lines name FILE:LINE."""
    from collections import Counter

    from nmt.training.pair_stream import PairStream
    from nmt.data.vocab import Vocabulary
    from nmt.translation.data import unique_phrase_pairs

    table, pairs = _stream_fixture(tmp_path)
    src_v, tgt_v = Vocabulary.load(tmp_path / "vocab.de.tsv"), Vocabulary.load(tmp_path / "vocab.en.tsv")
    in_memory = [(s, t) for s, t in unique_phrase_pairs(str(table)) if len(s) <= 4 and len(t) <= 4]
    assert [(tuple(s), tuple(t)) for s, t in unique_phrase_pairs(str(table))] == pairs
    want = Counter((tuple(src_v.encode(s)), tuple(tgt_v.encode(t))) for s, t in in_memory)
    assert 40 < len(in_memory) < len(pairs)  # --max-len 4 drops some

    def stream(seed: int = 3, max_tokens: int | None = None) -> PairStream:
        return PairStream(str(table), src_v.encode, tgt_v.encode, max_len=4, buffer=9, batch_size=4,
                          max_tokens=max_tokens, seed=seed)

    def batches(s: PairStream, epoch: int, start: int = 0) -> list[list[tuple[tuple[int, ...], ...]]]:
        plan = s.plan(epoch)
        out = []
        for i in range(start, len(plan)):
            src, tgt = s.pairs(plan[i])
            out.append([(tuple(a), tuple(b)) for a, b in zip(src, tgt)])
        return out

    for max_tokens in (None, 9):
        s = stream(max_tokens=max_tokens)
        assert s.num_pairs == len(in_memory) and s.num_dropped == len(pairs) - len(in_memory)
        for epoch in (0, 1):
            got = batches(s, epoch)
            assert len(got) == s.num_batches and Counter(p for b in got for p in b) == want
            if max_tokens:
                assert all(len(b) * max(max(len(x), len(y)) for x, y in b) <= 9 for b in got)
    full = batches(stream(), 0)
    assert full == batches(stream(), 0) and full != batches(stream(), 1) and full != batches(stream(seed=4), 0)
    for k in (1, 3, len(full) - 1):  # a fresh stream (a resumed run) starting mid-epoch, inside a window
        assert batches(stream(), 0, start=k) == full[k:]

    # end to end: nmt-train killed mid-epoch at update 7 and resumed = one run of 19 updates
    def run(out: Path, *extra: str) -> int:
        return train_main(["--phrase-table", str(table), "--data-dir", str(tmp_path), "--src-lang", "de",
                           "--tgt-lang", "en", "--max-len", "4", "--stream-buffer", "9", *_args(tmp_path, out)[2:],
                           "--batch-size", "4", "--save-every", "7", *extra])  # 21 batches an epoch

    full_dir, split_dir = tmp_path / "full", tmp_path / "split"
    assert run(full_dir, "--max-updates", "19") == 0
    assert run(split_dir, "--max-updates", "7") == 0
    position = load_checkpoint(split_dir / "checkpoint_last.pt")["pair_stream"]["position"]
    assert position["batches"] == 7 and 18 < position["pairs_consumed"] <= 22  # inside the third window
    assert run(split_dir, "--max-updates", "19", "--resume") == 0
    assert_same_checkpoint(full_dir / "checkpoint_last.pt", split_dir / "checkpoint_last.pt")
    assert yaml.safe_load((full_dir / "config.yaml").read_text())["data"]["stream_buffer"] == 9
    capsys.readouterr()  # another buffer cannot continue the same batches:
    assert train_main(["--phrase-table", str(table), "--data-dir", str(tmp_path), "--src-lang", "de", "--tgt-lang",
                       "en", "--max-len", "4", "--stream-buffer", "8", *_args(tmp_path, split_dir)[2:],
                       "--batch-size", "4", "--max-updates", "25", "--resume"]) == 2
    assert "--stream-buffer 8: the checkpoint's data stream differs" in capsys.readouterr().err

    lines = table.read_text(encoding="utf-8").splitlines()
    bad = tmp_path / "bad.phrase-table"
    bad.write_text("\n".join(lines[:5] + ["x ||| ||| 0.5"] + lines[5:]) + "\n", encoding="utf-8")
    unsorted = tmp_path / "unsorted.phrase-table"
    unsorted.write_text("\n".join(lines[:5] + lines[-1:] + lines[5:-1]) + "\n", encoding="utf-8")
    for path, line in ((bad, 6), (unsorted, 7)):
        assert train_main(["--phrase-table", str(path), "--data-dir", str(tmp_path), "--src-lang", "de",
                           "--tgt-lang", "en", "--stream-buffer", "9", *_args(tmp_path, tmp_path / f"m_{line}")[2:]]) == 2
        msg = capsys.readouterr().err
        assert f"{path}:{line}:" in msg and "Traceback" not in msg, msg
        assert not (tmp_path / f"m_{line}").exists()


def test_stream_buffer_reverse_reads_each_table_pair_target_to_source(tmp_path: Path) -> None:
    """--stream-buffer with --reverse: an epoch is a permutation of the in-memory reverse pairs (the table's
    target side is the model's source), the same --max-len drops; the forward stream is not that."""
    from collections import Counter

    from nmt.translation.data import TranslationDataConfig, TranslationTask

    table, _ = _stream_fixture(tmp_path)

    def epoch_pairs(reverse: bool, stream_buffer: int | None) -> tuple[Counter, int]:
        cfg = TranslationDataConfig(data_dir=str(tmp_path), src_lang="de", tgt_lang="en", phrase_table=str(table),
                                    reverse=reverse, max_len=3, stream_buffer=stream_buffer)
        task = TranslationTask(cfg, batching=(4, None, 3))
        if stream_buffer is None:
            return Counter(zip(map(tuple, task.train_src), map(tuple, task.train_tgt))), task.num_dropped
        got: Counter = Counter()
        for batch in task.batches_for_epoch(0):
            src, tgt = task._stream.pairs(batch)
            got.update(zip(map(tuple, src), map(tuple, tgt)))
        return got, task.num_dropped

    in_memory, dropped = epoch_pairs(True, None)
    assert dropped > 0 and len(in_memory) > 20
    assert epoch_pairs(True, 9) == (in_memory, dropped)
    assert epoch_pairs(False, 9)[0] != in_memory


def test_keep_epochs_keeps_each_epoch_end_and_resumes_to_the_same(toy_data: Path, tmp_path: Path) -> None:
    from nmt.core.paths import resolve_checkpoint

    full, split = tmp_path / "full", tmp_path / "split"
    train_main(_args(toy_data, full, "--max-epochs", "2", "--keep-epochs", "true", "--save-every", "5"))
    epoch1, epoch2 = full / "checkpoint_epoch1.pt", full / "checkpoint_epoch2.pt"
    assert resolve_checkpoint(full, "epoch1") == epoch1 and resolve_checkpoint(full, "epoch2") == epoch2
    first, second = load_checkpoint(epoch1)["train_state"], load_checkpoint(epoch2)["train_state"]
    assert (first["epoch"], second["epoch"]) == (1, 2) and 0 < first["step"] < second["step"]
    assert_same_checkpoint(epoch2, full / "checkpoint_last.pt")  # the run ended with epoch 2
    # one epoch, then resumed to two: the same epoch ends as the uninterrupted run
    train_main(_args(toy_data, split, "--max-epochs", "1", "--keep-epochs", "true", "--save-every", "5"))
    assert not (split / "checkpoint_epoch2.pt").exists()
    train_main(_args(toy_data, split, "--max-epochs", "2", "--keep-epochs", "true", "--save-every", "5", "--resume"))
    assert_same_checkpoint(epoch1, split / "checkpoint_epoch1.pt")
    assert_same_checkpoint(epoch2, split / "checkpoint_epoch2.pt")
    with pytest.raises(FileNotFoundError):
        resolve_checkpoint(full, "epoch3")
    for bad in ("epoch0", "epochs", "epoch", "first"):
        with pytest.raises(ValueError, match="best, last, epochN or auto"):
            resolve_checkpoint(full, bad)
    # --overwrite removes the kept epochs of the run it replaces; without --keep-epochs none are written
    train_main(_args(toy_data, full, "--max-updates", "3", "--overwrite"))
    assert not list(full.glob("checkpoint_epoch*.pt"))
