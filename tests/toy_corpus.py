"""A synthetic word-for-word 'translation' corpus written as nmt-prepare would (the tests' toy data)."""
from __future__ import annotations

import random
from pathlib import Path

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
