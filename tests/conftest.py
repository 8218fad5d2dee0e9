"""Shared fixtures: a synthetic word-for-word 'translation' corpus written as nmt-prepare would."""
from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest

from nmt.data.vocab import Vocabulary

SRC_WORDS = [f"s{i}" for i in range(12)]
DICTIONARY = {w: f"t{i}" for i, w in enumerate(SRC_WORDS)}


def make_toy_data(root: Path, n_train: int = 240, n_dev: int = 20, seed: int = 0, pool: int = 30) -> Path:
    """Sentences of 2–6 source words drawn from a pool of ``pool`` distinct ones (so that a tiny
    model learns them in seconds); the target is their word-by-word translation."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    sentences = [[rng.choice(SRC_WORDS) for _ in range(rng.randint(2, 6))] for _ in range(pool)]

    def sample(n: int) -> tuple[list[str], list[str]]:
        src, tgt = [], []
        for _ in range(n):
            words = rng.choice(sentences)
            src.append(" ".join(words))
            tgt.append(" ".join(DICTIONARY[w] for w in words))
        return src, tgt

    for split, n in (("train", n_train), ("val", n_dev)):
        src, tgt = sample(n)
        (root / f"{split}.tok.en").write_text("\n".join(src) + "\n", encoding="utf-8")
        (root / f"{split}.tok.fr").write_text("\n".join(tgt) + "\n", encoding="utf-8")
        if split == "train":
            Vocabulary.build([s.split() for s in src], max_size=None).save(root / "vocab.en.tsv")
            Vocabulary.build([t.split() for t in tgt], max_size=None).save(root / "vocab.fr.tsv")
    return root


@pytest.fixture
def toy_data(tmp_path: Path) -> Path:
    return make_toy_data(tmp_path / "data")


def teacher_forced_log_probs(model, src_vocab, tgt_vocab, srcs, tgts) -> list[float]:
    """Reference ln p(tgt | src) per pair: the model's own teacher-forced pass, one padded batch."""
    import torch

    from nmt.data.batching import pair_batch

    batch = pair_batch([src_vocab.encode(list(s)) for s in srcs], [tgt_vocab.encode(list(t)) for t in tgts])
    with torch.no_grad():
        return model.eval().pair_log_probs(batch["src"], batch["tgt_in"], batch["tgt_out"]).tolist()


def assert_same_checkpoint(a: Path, b: Path) -> None:
    """Two checkpoints hold bit-identical training state: step, parameters, optimizer state, lr."""
    import torch

    from nmt.training.checkpoint import load_checkpoint

    sa, sb = load_checkpoint(a), load_checkpoint(b)
    assert sa["train_state"]["step"] == sb["train_state"]["step"]
    for name, tensor in sa["model"].items():
        assert torch.equal(tensor, sb["model"][name]), name
    for (ka, va), (kb, vb) in zip(sa["optimizer"]["state"].items(), sb["optimizer"]["state"].items()):
        assert ka == kb
        for key in va:
            assert torch.equal(va[key], vb[key]), (ka, key)
    assert sa["optimizer"]["param_groups"][0]["lr"] == sb["optimizer"]["param_groups"][0]["lr"]


def refused(capsys, match: str | None, status: int, *words: str) -> bool:
    """A command refused its input the toolkit's way: exit status 2, ``match`` (a regex) and each of
    ``words`` (plain text) on stderr, no traceback. Use as ``assert refused(capsys, ":3:", main([...]))``."""
    import re

    err = capsys.readouterr().err
    assert status == 2, f"exit status {status}, stderr: {err[-2000:]}"
    assert "Traceback" not in err, err[-2000:]
    assert match is None or re.search(match, err), f"{match!r} not in stderr: {err[-2000:]}"
    for word in words:
        assert word in err, f"{word!r} not in stderr: {err[-2000:]}"
    return True


@pytest.fixture
def one_torch_thread():
    """One intra-op torch thread for the test (deterministic reductions on every CPU; the CI box is
    shared). Use with ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def tiny_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data root laid out like multi30k/, gzipped from tests/data/tiny."""
    root = tmp_path / "mt_data"
    (root / "multi30k").mkdir(parents=True)
    layout = {"train": "train", "val": "val", "test_2016_flickr": "test", "test_2017_flickr": "test"}
    for split, name in layout.items():
        for lang in ("en", "fr"):
            data = (Path(__file__).parent / "data" / "tiny" / f"{name}.{lang}").read_bytes()
            (root / "multi30k" / f"{split}.{lang}.gz").write_bytes(gzip.compress(data))
    monkeypatch.setenv("MT_DATA", str(root))
    monkeypatch.setenv("MT_CACHE", str(tmp_path / "cache"))
    from nmt.data import corpora

    monkeypatch.setattr(corpora, "_urlopen", lambda url: pytest.fail(f"network used: {url}"))
    return root
