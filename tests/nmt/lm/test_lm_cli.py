"""nmt-lm-train / nmt-lm-eval / nmt-lm-score and the PTB recipe, on tiny synthetic corpora."""
from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.refusal import refused
from tests.nmt.checkpoints import assert_same_checkpoint
import torch
import torch.nn.functional as F

from nmt.training.checkpoint import load_checkpoint
from nmt.cli.lm_eval import cli_main as eval_main
from nmt.cli.lm_score import cli_main as score_main
from nmt.cli.lm_train import cli_main as train_main
from nmt.data.special import BOS, EOS, PAD
from nmt.data.vocab import Vocabulary
from nmt.lm.data import LMDataConfig, encode_all, read_sentences, sentence_batches, stream_matrix
from nmt.lm.loading import load_language_model
from nmt.lm.task import LMTask, StreamWindow
from nmt.lm.training import LMOptimConfig
from nmt.models.lm import build_lm
from nmt.training.trainer import Trainer
from nmt.training.config import LoopConfig, OptimConfig, TrainState, scheduled_lr
from tests import ROOT

WORDS = [f"w{i}" for i in range(10)]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _sentence(rng: random.Random) -> str:
    """A little grammar: each word is followed by one of two successors, so an LM can learn it."""
    words = [rng.choice(WORDS[:4])]
    for _ in range(rng.randint(0, 6)):
        words.append(WORDS[(WORDS.index(words[-1]) + rng.choice([1, 3])) % len(WORDS)])
    return " ".join(words)


def make_corpus(root: Path, n_train: int = 160, n_valid: int = 14, seed: int = 0) -> dict[str, Path]:
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    paths = {}
    for split, n in (("train", n_train), ("valid", n_valid), ("test", n_valid)):
        lines = [_sentence(rng) for _ in range(n)]
        if split != "train":
            lines[3] = ""                       # an empty line: scored as just </s>
            lines[5] = "w1 zzz <unk> w2"        # an OOV word and a literal <unk>
        paths[split] = root / f"{split}.txt"
        paths[split].write_text("\n".join(lines) + "\n", encoding="utf-8")
    return paths


@pytest.fixture
def corpus(tmp_path: Path) -> dict[str, Path]:
    return make_corpus(tmp_path / "data")


ARCH_FLAGS = {
    "lstm": ["--arch", "lstm", "--num-layers", "2"],
    "rm": ["--arch", "rm", "--memory-size", "3"],
    "rmr": ["--arch", "rmr", "--memory-size", "3", "--composition", "linear"],
    "mogrifier": ["--arch", "mogrifier", "--rounds", "2"],
}


def _train_args(corpus: dict[str, Path], out: Path, arch: str = "lstm", *extra: str) -> list[str]:
    return ["--train", str(corpus["train"]), "--valid", str(corpus["valid"]), "--test", str(corpus["test"]),
            *ARCH_FLAGS[arch], "--emb-dim", "8", "--hidden-dim", "8", "--out-dir", str(out), "--threads", "1",
            "--progress", "false", "--optimizer", "adam", "--lr", "0.02", "--batch-size", "8", "--clip-norm", "5",
            *extra]


def _counts(path: Path) -> tuple[int, int]:
    """(words, lines) counted independently of the code under test."""
    lines = path.read_text(encoding="utf-8").split("\n")[:-1]
    return sum(len(line.split()) for line in lines), len(lines)


def _scores(capsys, *args: str) -> list[str]:
    capsys.readouterr()
    assert score_main(list(args)) == 0
    return capsys.readouterr().out.splitlines()


# ----------------------------------------------------------------------------- end to end


@pytest.mark.parametrize("arch", sorted(ARCH_FLAGS))
def test_train_eval_score_end_to_end(arch: str, corpus, tmp_path: Path, capsys) -> None:
    out = tmp_path / "m"
    assert train_main(_train_args(corpus, out, arch, "--max-epochs", "3")) == 0
    for name in ("checkpoint_best.pt", "checkpoint_last.pt", "config.yaml", "vocab.tsv", "summary.json"):
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["epochs"] == 3 and summary["train_tokens_per_s"] > 0

    res_path = tmp_path / "valid.json"
    assert eval_main(["--model", str(out), "--split", "valid", "--json", str(res_path)]) == 0
    printed = capsys.readouterr().out
    res = json.loads(res_path.read_text())
    words, lines = _counts(corpus["valid"])
    assert res["num_tokens"] == words + lines and res["num_sentences"] == lines
    assert res["num_oov"] == 1 and res["empty_lines"] == 1          # zzz; <unk> is a vocabulary word
    assert f"N={words + lines:,} tokens" in printed and "</s>" in printed and "<unk>" in printed

    # the trainer's dev figure is the same accounting
    assert math.isclose(summary["best_dev_ppl"], res["ppl"], rel_tol=1e-4)
    assert summary["dev_tokens"] == res["num_tokens"]

    scores = _scores(capsys, "--model", str(out), "--text", str(corpus["valid"]))
    assert len(scores) == lines                                       # nothing dropped or shifted
    total = math.fsum(float(s) for s in scores)
    assert math.isclose(math.exp(-total / (words + lines)), res["ppl"], rel_tol=1e-5)

    # per-token output: n + 1 values that sum to the line's total; the empty line is just </s>
    per_token = _scores(capsys, "--model", str(out), "--text", str(corpus["valid"]), "--per-token")
    text_lines = corpus["valid"].read_text().split("\n")[:-1]
    for row, line in zip(per_token, text_lines):
        head, values = row.split("\t")
        values = [float(v) for v in values.split()]
        assert len(values) == len(line.split()) + 1
        assert math.isclose(sum(values), float(head), abs_tol=1e-5)
    loaded = load_language_model(out)
    with torch.no_grad():
        logp, _ = loaded.model.step(torch.tensor([BOS]))
    assert math.isclose(float(scores[3]), float(logp[0, EOS]), abs_tol=1e-5)


def test_scores_equal_the_models_score_sentences(corpus, tmp_path: Path, capsys) -> None:
    out = tmp_path / "m"
    train_main(_train_args(corpus, out, "rm", "--max-updates", "10"))
    scores = [float(s) for s in _scores(capsys, "--model", str(out), "--text", str(corpus["test"]),
                                        "--checkpoint", "last")]
    loaded = load_language_model(out, which="last")
    ids = encode_all(loaded.vocab, read_sentences(corpus["test"]))
    tokens = torch.full((len(ids), max(map(len, ids))), PAD, dtype=torch.long)
    for i, s in enumerate(ids):
        tokens[i, :len(s)] = torch.tensor(s, dtype=torch.long)
    with torch.no_grad():
        ref = loaded.model.score_sentences(tokens, torch.tensor([len(s) for s in ids]))
    np.testing.assert_allclose(scores, ref.numpy(), atol=1e-4)


def test_stream_regime_end_to_end(corpus, tmp_path: Path, capsys) -> None:
    out = tmp_path / "m"
    assert train_main(_train_args(corpus, out, "lstm", "--regime", "stream", "--bptt", "6", "--batch-size", "3",
                                  "--max-epochs", "2", "--adam-beta1", "0")) == 0
    summary = json.loads((out / "summary.json").read_text())
    res_path = tmp_path / "r.json"
    eval_main(["--model", str(out), "--split", "valid", "--json", str(res_path), "--window", "5"])
    res = json.loads(res_path.read_text())
    words, lines = _counts(corpus["valid"])
    assert res["regime"] == "stream" and res["num_tokens"] == words + lines
    assert math.isclose(summary["best_dev_ppl"], res["ppl"], rel_tol=1e-4)   # eval_streams 1 = exact
    stream = [float(s) for s in _scores(capsys, "--model", str(out), "--text", str(corpus["valid"]),
                                        "--regime", "stream")]
    assert math.isclose(math.exp(-math.fsum(stream) / (words + lines)), res["ppl"], rel_tol=1e-5)
    # independent sentences start from </s> for a stream-trained model and differ from the stream figure
    indep = [float(s) for s in _scores(capsys, "--model", str(out), "--text", str(corpus["valid"]))]
    assert len(indep) == len(stream) == lines and indep != stream
    assert load_language_model(out).start == EOS
    ckpt = load_checkpoint(out / "checkpoint_last.pt")
    opt_group = ckpt["optimizer"]["param_groups"][0]
    assert tuple(opt_group["betas"]) == (0.0, 0.999)


def test_stream_blocks_from_a_zero_state(corpus, tmp_path: Path, capsys) -> None:
    """--carry-state false (fairseq's language_modeling blocks): the dev loss is the perplexity of
    nmt-lm-eval --block BPTT, which differs from the carried-state figure and from a by-hand block
    computation only if the state leaked across blocks."""
    out = tmp_path / "m"
    assert train_main(_train_args(corpus, out, "lstm", "--regime", "stream", "--bptt", "6", "--batch-size", "3",
                                  "--max-epochs", "1", "--carry-state", "false")) == 0
    summary = json.loads((out / "summary.json").read_text())
    blocks, carried = tmp_path / "b.json", tmp_path / "c.json"
    eval_main(["--model", str(out), "--split", "valid", "--json", str(blocks), "--block", "6"])
    eval_main(["--model", str(out), "--split", "valid", "--json", str(carried)])
    res_b, res_c = json.loads(blocks.read_text()), json.loads(carried.read_text())
    assert res_b["block"] == 6 and res_b["num_tokens"] == res_c["num_tokens"]
    assert math.isclose(summary["best_dev_ppl"], res_b["ppl"], rel_tol=1e-5)
    assert not math.isclose(res_b["ppl"], res_c["ppl"], rel_tol=1e-6)
    loaded = load_language_model(out)
    inputs, targets = stream_matrix(encode_all(loaded.vocab, read_sentences(corpus["valid"])), 1)
    nll = 0.0
    with torch.no_grad():
        for lo in range(0, inputs.size(1), 6):
            logits, _ = loaded.model(inputs[:, lo:lo + 6], None)
            nll += float(F.cross_entropy(logits[0], targets[0, lo:lo + 6], reduction="sum"))
    assert math.isclose(math.exp(nll / res_b["num_tokens"]), res_b["ppl"], rel_tol=1e-5)
    assert refused(capsys, "--block", eval_main(["--model", str(out), "--split", "valid", "--block", "6", "--regime", "sentence"]))


# ----------------------------------------------------------------------------- exact resume


@pytest.mark.parametrize("regime", ["sentence", "stream"])
def test_resume_continues_exactly(regime: str, corpus, tmp_path: Path) -> None:
    extra = ["--regime", regime, "--dropout-emb", "0.2", "--optimizer", "sgd", "--lr", "0.5",
             "--loss-norm", "sequence", "--lr-schedule", "epoch", "--lr-decay-start", "1", "--save-every", "4",
             "--max-epochs", "50"]
    extra += ["--bptt", "12", "--batch-size", "5"] if regime == "stream" else ["--batch-size", "16"]
    full, split = tmp_path / "full", tmp_path / "split"
    train_main(_train_args(corpus, full, "lstm", *extra, "--max-updates", "45"))
    per_epoch = load_checkpoint(full / "checkpoint_last.pt")["train_state"]
    assert per_epoch["epoch"] >= 1, "the run must cross an epoch boundary"
    train_main(_train_args(corpus, split, "lstm", *extra, "--max-updates", "9"))   # stops mid-epoch
    state = load_checkpoint(split / "checkpoint_last.pt")
    assert state["train_state"]["step"] == 9 and state["train_state"]["batch_in_epoch"] > 0
    if regime == "stream":
        assert state["lm_stream"]["state"] is not None
    train_main(_train_args(corpus, split, "lstm", *extra, "--max-updates", "45", "--resume"))
    assert_same_checkpoint(full / "checkpoint_last.pt", split / "checkpoint_last.pt")
    lrs = [h["lr"] for h in load_checkpoint(full / "checkpoint_last.pt")["train_state"]["history"] if "lr" in h]
    assert lrs[:3] == [0.5, 0.25, 0.125]     # halved every epoch after the first


# ----------------------------------------------------------------------------- stream mode


def _stream_task(corpus, batch_size: int = 3, bptt: int = 5) -> LMTask:
    cfg = LMDataConfig(train=str(corpus["train"]), valid=str(corpus["valid"]), regime="stream", bptt=bptt)
    train = read_sentences(corpus["train"])
    vocab = Vocabulary.build(train, max_size=None)
    return LMTask(cfg, vocab, encode_all(vocab, train), encode_all(vocab, read_sentences(corpus["valid"])),
                  batch_size=batch_size, seed=1)


def test_stream_matrix_holds_every_token_once() -> None:
    sents = [[5, 6], [], [7, 8, 9]]
    inputs, targets = stream_matrix(sents, 2)
    # stream: </s> 5 6 </s> </s> 7 8 9 </s>: 8 predicted tokens in 2 rows of 4
    assert targets.tolist() == [[5, 6, EOS, EOS], [7, 8, 9, EOS]]
    assert inputs.tolist() == [[EOS, 5, 6, EOS], [EOS, 7, 8, 9]]
    inputs, targets = stream_matrix(sents, 3)                        # 8 tokens, rows of 3: one PAD
    assert (targets != PAD).sum() == 8 and targets[-1, -1] == PAD and inputs[-1, -1] == PAD


def test_stream_windows_are_sequential_and_state_is_carried(corpus) -> None:
    task = _stream_task(corpus)
    torch.manual_seed(0)
    model = build_lm("lstm", len(task.vocab), emb_dim=8, hidden_dim=8)
    loop = LoopConfig(out_dir=str(Path(corpus["train"]).parent / "t"), batch_size=3, max_epochs=2, progress=False,
                      threads=1, save_every=1000)
    trainer = Trainer(model, task, loop, OptimConfig(optimizer="sgd", lr=0.1), {"model": {}})
    assert trainer.lengths is None          # the task's own plan: train_lengths is not needed
    seen: list[tuple[int, int]] = []
    fresh: list[bool] = []   # did the model start the window from a reset state?
    loss = task.loss

    def record(m, batch):
        if batch["kind"] == "train":
            seen.append((trainer.state.epoch, batch["window"]))
        return loss(m, batch)

    def pre_hook(module, args):
        if module.training:
            fresh.append(args[1] is None)

    task.loss = record
    handle = model.register_forward_pre_hook(pre_hook)
    trainer.train()
    handle.remove()
    k = task.num_batches
    assert k == len(trainer.epoch_batches(0)) and k > 3
    assert seen == [(e, w) for e in range(2) for w in range(k)]      # in order, every epoch from window 0
    assert fresh == [w == 0 for _ in range(2) for w in range(k)]     # reset only at each epoch start
    h, c = task._carried["train"]
    assert not h.requires_grad and h.grad_fn is None                 # detached: truncated BPTT

    # the windows cover the stream in order
    task2 = _stream_task(corpus)
    model.eval()
    cols = []
    with torch.no_grad():
        for item in task2.batches_for_epoch(0):
            batch = task2.make_batch(item)
            cols.append(batch["targets"])
            task2.loss(model, batch)
        torch.testing.assert_close(torch.cat(cols, 1), task2.stream_tgt)
        # the carried state changes what the model predicts for a window
        task2.loss(model, task2.make_batch(StreamWindow(0, 0)))
        carried = task2._carried["train"]
        batch = task2.make_batch(StreamWindow(0, 1))
        with_state, _ = model(batch["inputs"], carried)
        reset, _ = model(batch["inputs"], None)
    assert not torch.allclose(with_state, reset)
    # a rank's rows of a window (DDP): its slice of the rows, the same columns
    part, weight = task2.shard_batch(StreamWindow(0, 0), 1, 2)
    assert weight == 1.0 and (part.lo, part.hi) == (2, 3)
    rows = task2.make_batch(part)["inputs"]
    torch.testing.assert_close(rows, task2.stream_in[2:3, :5])


def test_stream_refuses_a_window_without_its_state(corpus) -> None:
    task = _stream_task(corpus)
    with pytest.raises(RuntimeError, match="carried"):
        task.make_batch(StreamWindow(0, 2))


# ----------------------------------------------------------------------------- batching, schedule


def test_sentence_batches_have_equal_lengths() -> None:
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 9, size=300).tolist()
    a = sentence_batches(lengths, batch_size=20, seed=3, epoch=0)
    b = sentence_batches(lengths, batch_size=20, seed=3, epoch=1)
    assert len(a) == len(b)                                             # same count every epoch
    assert sorted(np.concatenate(a).tolist()) == list(range(300))
    for batch in a:
        assert 1 <= len(batch) <= 20 and len({lengths[i] for i in batch}) == 1
    assert [x.tolist() for x in a] == [x.tolist() for x in sentence_batches(lengths, batch_size=20, seed=3, epoch=0)]
    assert [x.tolist() for x in a] != [x.tolist() for x in b]
    capped = sentence_batches(lengths, batch_size=20, max_tokens=30, seed=3)
    assert all(len(x) * (lengths[x[0]] + 1) <= 30 or len(x) == 1 for x in capped)


def test_lr_schedules() -> None:
    cfg = LMOptimConfig(lr_schedule="epoch", lr_decay=0.5, lr_decay_start=4)
    assert [scheduled_lr(cfg, 1.0, TrainState(epoch=e)) for e in range(7)] == [1, 1, 1, 1, 0.5, 0.25, 0.125]
    cfg = LMOptimConfig(lr_schedule="plateau", lr_decay=0.5)
    hist = [{"dev_loss": 3.0}, {"dev_loss": 2.0}, {"dev_loss": 2.5}, {"train_loss": 1.0}, {"dev_loss": 1.5},
            {"dev_loss": 1.6}]
    assert scheduled_lr(cfg, 1.0, TrainState(history=hist)) == 0.25
    assert scheduled_lr(LMOptimConfig(), 0.3, TrainState(epoch=9)) == 0.3


def test_sequence_loss_norm_is_the_gradient_of_the_sum_over_rows(corpus, tmp_path: Path) -> None:
    """One SGD step with --loss-norm sequence = a step on Σ nll / sentences (no clipping)."""
    out = tmp_path / "m"
    args = _train_args(corpus, out, "lstm", "--optimizer", "sgd", "--lr", "0.7", "--loss-norm", "sequence",
                       "--clip-norm", "0", "--max-updates", "1", "--max-len", "3")
    train_main(args)
    after = load_checkpoint(out / "checkpoint_last.pt")["model"]
    # rebuild the initial model and the first batch
    torch.manual_seed(1)
    model = build_lm("lstm", len(Vocabulary.load(out / "vocab.tsv")), emb_dim=8, hidden_dim=8, num_layers=2)
    cfg = LMDataConfig(train=str(corpus["train"]), valid=str(corpus["valid"]), max_len=3)
    vocab = Vocabulary.load(out / "vocab.tsv")
    task = LMTask(cfg, vocab, encode_all(vocab, read_sentences(corpus["train"])),
                  encode_all(vocab, read_sentences(corpus["valid"])), batch_size=8, seed=1)
    task_seq = LMTask(cfg, vocab, task.train, task.dev, batch_size=8, seed=1, loss_norm="sequence")
    batch = task.make_batch(task.batches_for_epoch(0)[0])
    nll, ntok, norm = task.loss(model.train(), batch)
    rows = batch["tokens"].size(0)
    assert norm == ntok and task_seq.loss(model, batch)[2] == rows < ntok
    (nll / rows).backward()
    with torch.no_grad():
        for name, p in model.named_parameters():
            torch.testing.assert_close(p - 0.7 * p.grad, after[name], rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- errors


def test_vocabulary_mismatch_is_refused(corpus, tmp_path: Path, capsys) -> None:
    out = tmp_path / "m"
    train_main(_train_args(corpus, out, "lstm", "--max-epochs", "1"))
    other = tmp_path / "other.tsv"
    Vocabulary.build([["a", "b", "c"]], max_size=None).save(other)
    for main, extra in ((eval_main, ["--split", "valid"]), (score_main, ["--text", str(corpus["valid"])])):
        assert refused(capsys, "mismatch", main(["--model", str(out), "--vocab", str(other), *extra]))
    # a folder whose vocab.tsv was replaced is refused too
    (out / "vocab.tsv").write_text(other.read_text())
    assert refused(capsys, "mismatch", eval_main(["--model", str(out), "--split", "valid"]))
    # resuming with another vocabulary is refused before anything is trained
    assert refused(capsys, "mismatch", train_main(_train_args(corpus, out, "lstm", "--max-epochs", "2", "--resume", "--vocab", str(other))))


def test_unknown_arch_and_options_fail_clearly(corpus, tmp_path: Path, capsys) -> None:
    assert refused(capsys, "unknown LM architecture", train_main(_train_args(corpus, tmp_path / "m", "lstm", "--arch", "transformer")))
    assert refused(capsys, None, train_main(_train_args(corpus, tmp_path / "m", "lstm", "--memory-size", "4")))  # an RMN option for an LSTM
    assert refused(capsys, "max-tokens", train_main(_train_args(corpus, tmp_path / "m", "lstm", "--regime", "stream", "--max-tokens", "100")))


# ----------------------------------------------------------------------------- the recipe


def test_recipe_config_sections_build(tmp_path: Path) -> None:
    import yaml

    from nmt.models.lm import PRESETS

    cfg = yaml.safe_load((ROOT / "recipes/ptb_lm/config.yaml").read_text())
    for name in ("lstm-1x128", "lstm-2x128", "lstm-3x128", "rm+tM-g", "rm-tM-l", "rmr-tM-g", "mogrifier"):
        for section in (name, f"{name}-quick"):
            values = cfg[section]
            assert values["arch"] in PRESETS, section
            assert values["max_epochs"] == (1 if section.endswith("quick") else 15)
        assert cfg[f"{name}-quick"]["max_train_sentences"] == 5000
    paper = cfg["rm+tM-g"]
    assert (paper["optimizer"], paper["lr"], paper["clip_norm"], paper["batch_size"], paper["regime"],
            paper["lr_decay_start"], paper["lr_decay"]) == ("sgd", 1.0, 5.0, 20, "sentence", 4, 0.5)
    assert PRESETS[paper["arch"]]["memory_size"] == 15
    mog = cfg["mogrifier"]
    assert (mog["optimizer"], mog["adam_beta1"], mog["clip_norm"], mog["regime"]) == ("adam", 0.0, 10.0, "stream")


def _fake_results(work: Path) -> None:
    def dump(path: Path, **kw):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(kw))

    base = {"num_sentences": 3370, "num_oov": 0}
    dump(work / "kenlm/valid.json", ppl=148.01, num_tokens=73760, **base)
    dump(work / "kenlm/test.json", ppl=141.19, num_tokens=82430, **{**base, "num_sentences": 3761})
    (work / "kenlm/ptb5.arpa").write_text("\\data\\\nngram 1=10000\nngram 2=20\n\n\\1-grams:\n")
    dump(work / "lstm-3x128/summary.json", num_parameters=2_900_000, epochs=15, regime="sentence",
         train_tokens_per_s=5100.4, this_run={"threads": 2})
    dump(work / "lstm-3x128/valid.json", ppl=130.5, num_tokens=73760, regime="sentence", **base)
    dump(work / "lstm-3x128/test.json", ppl=125.25, num_tokens=82430, regime="sentence", **base)
    dump(work / "mogrifier/summary.json", num_parameters=3_000_000, epochs=15, regime="stream",
         train_tokens_per_s=900, this_run={"threads": 2})
    for suffix, regime, ppl in (("", "stream", 110.0), (".sentence", "sentence", 121.0)):
        dump(work / f"mogrifier/valid{suffix}.json", ppl=ppl, num_tokens=73760, regime=regime, **base)
        dump(work / f"mogrifier/test{suffix}.json", ppl=ppl - 1, num_tokens=82430, regime=regime, **base)


def test_perplexity_table_on_fake_results(tmp_path: Path) -> None:
    _fake_results(tmp_path)
    out = subprocess.run([sys.executable, str(ROOT / "recipes/ptb_lm/perplexity_table.py"), str(tmp_path),
                          "--models", "kenlm", "lstm-3x128", "mogrifier", "rm+tM-g"],
                         capture_output=True, text=True, check=True).stdout
    rows = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| model")]
    assert [r.split(" | ")[0] for r in rows] == ["| kenlm", "| lstm-3x128", "| mogrifier", "| mogrifier"]
    kenlm, lstm, mog_stream, mog_sent = (r.split(" | ") for r in rows)
    assert kenlm[2] == "10,020 n-grams" and kenlm[4:6] == ["148.01", "141.19"] and "141.2" in kenlm[9]
    assert lstm[2] == "2,900,000" and lstm[4:7] == ["130.50", "125.25", "73,760 / 82,430"]
    assert lstm[8].startswith("5,100") and "126.1" in lstm[9]
    assert mog_stream[1] == "stream" and mog_sent[1] == "stream → eval sentence" and mog_sent[5] == "120.00"
    assert "no results found for: rm+tM-g" in out and "N = words + one </s> per line" in out


@pytest.mark.slow
def test_recipe_quick_smoke(tmp_path: Path) -> None:
    """run.sh --quick on a tiny synthetic 'PTB' (one model; KenLM if its tools are built)."""
    data = tmp_path / "data" / "ptb"
    paths = make_corpus(tmp_path / "raw", n_train=120, n_valid=10)
    data.mkdir(parents=True)
    for split in ("train", "valid", "test"):
        (data / f"ptb.{split}.txt").write_text(paths[split].read_text().replace("\n\n", "\nw1\n"))
    from smt_features.train.kenlm_build import KenLMNotFoundError, find_kenlm_binary

    try:
        find_kenlm_binary("lmplz")
        kenlm = []
    except KenLMNotFoundError:
        kenlm = ["--no-kenlm"]
    work = tmp_path / "work"
    env = {**os.environ, "MT_DATA": str(tmp_path / "data"), "PYTHON": sys.executable}
    proc = subprocess.run(["bash", str(ROOT / "recipes/ptb_lm/run.sh"), "--quick", "--work", str(work),
                           "--models", "lstm-1x128", "--threads", "1", *kenlm],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = (work / "table.md").read_text()
    assert "| lstm-1x128 | sentence | " in table
    if not kenlm:
        assert "| kenlm | sentence | " in table
    res = json.loads((work / "lstm-1x128/test.json").read_text())
    words, lines = _counts(data / "ptb.test.txt")
    assert res["num_tokens"] == words + lines
    assert json.loads((work / "lstm-1x128/summary.json").read_text())["epochs"] == 1


def test_recipe_evaluate_checks_every_model_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """recipes/ptb_lm/evaluate.py takes --model/--name pairs (run.sh evaluates all its models in one process):
    one name per model, and a model that is not trained stops it before any model is evaluated."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("ptb_lm_evaluate", ROOT / "recipes" / "ptb_lm" / "evaluate.py")
    recipe_evaluate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recipe_evaluate)
    trained, missing = tmp_path / "a", tmp_path / "b"
    trained.mkdir()
    (trained / "config.yaml").write_text("data: {regime: sentence}\n", encoding="utf-8")
    with pytest.raises(SystemExit) as stop:
        recipe_evaluate.main(["--model", str(trained), "--model", str(missing), "--name", "a"])
    assert stop.value.code == 2 and "2 --model but 1 --name" in capsys.readouterr().err
    assert recipe_evaluate.main(["--model", str(trained), "--name", "a", "--model", str(missing), "--name", "b"]) == 2
    assert f"evaluate.py: {missing / 'config.yaml'}: not found" in capsys.readouterr().err
    assert sorted(p.name for p in trained.iterdir()) == ["config.yaml"]     # the first model was not evaluated
