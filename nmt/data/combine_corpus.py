"""The combined real En–Fr corpus (~216k pairs: Multi30k train + Tatoeba + Europarl excerpt) as plain files.

Reads the read-only benchmark data (``$MT_DATA``, default ``../shared/data``) and writes, under
``OUT_DIR`` only, ``train.en/.fr``, ``dev.en/.fr``, ``test.en/.fr`` (raw, untokenized, one sentence per
line) and ``combine.json`` (sources, counts, seed). Held-out sets: the pairs are visited in a seeded
random order; a pair goes to dev (then test) while that set is short of its size, unless its English or
French sentence is already held out (no duplicate inside dev + test). Every pair whose English or French
sentence occurs in dev or test is then left out of train (Tatoeba repeats sentences with several
translations), so no dev/test sentence is in train on either side. Train keeps the sources' order
(Multi30k, Tatoeba, Europarl). Pairs with an empty side are dropped (counted).
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from nmt.core import config as C
from nmt.data.corpora import data_root
from nmt.core.io import DataError, atomic_write, iter_lines, iter_parallel
from nmt.core.errors import UsageError

SOURCES = {
    "multi30k-train": ("multi30k/train.en.gz", "multi30k/train.fr.gz"),
    "tatoeba-fra-eng": ("tatoeba/fra-eng.tsv.gz", None),
    "europarl-v7-20k": ("europarl-v7-excerpt/europarl-v7.20k.en.gz", "europarl-v7-excerpt/europarl-v7.20k.fr.gz"),
}


@dataclass
class CombineConfig:
    out_dir: str = C.field("", help="folder for train/dev/test .en/.fr and combine.json", required=True)
    data: str = C.field("", help="benchmark data folder (default: $MT_DATA, else ../shared/data)")
    dev_size: int = C.field(1000, help="pairs held out for dev")
    test_size: int = C.field(1000, help="pairs held out for test")
    seed: int = C.field(13, help="seed of the held-out draw (random.Random)")


def _clean(text: str) -> str:
    return " ".join(text.split())  # one space between words; no tab, no stray CR


def read_sources(root: Path) -> list[tuple[str, str, str]]:
    """Every (source name, English, French) pair, in source order."""
    pairs: list[tuple[str, str, str]] = []
    for name, (first, second) in SOURCES.items():
        if second is None:
            path = root / first
            for n, line in enumerate(iter_lines(path, allow_empty=True), 1):
                cols = line.split("\t")
                if len(cols) < 2:
                    raise DataError(path, n, "expected 'english<TAB>french'")
                pairs.append((name, _clean(cols[0]), _clean(cols[1])))
        else:
            for en, fr in iter_parallel(root / first, root / second, allow_empty=True):
                pairs.append((name, _clean(en), _clean(fr)))
    return pairs


def split(pairs: list[tuple[str, str, str]], dev_size: int, test_size: int, seed: int
          ) -> tuple[list[int], list[int], list[int], int]:
    """Indices of dev, test and train, and how many pairs were left out of train for sharing a held-out side."""
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    held_en: set[str] = set()
    held_fr: set[str] = set()
    dev: list[int] = []
    test: list[int] = []
    for i in order:
        if len(test) >= test_size:
            break
        _, en, fr = pairs[i]
        if en in held_en or fr in held_fr:
            continue
        (dev if len(dev) < dev_size else test).append(i)
        held_en.add(en)
        held_fr.add(fr)
    held = set(dev) | set(test)
    train = [i for i, (_, en, fr) in enumerate(pairs) if i not in held and en not in held_en and fr not in held_fr]
    return dev, test, train, len(pairs) - len(held) - len(train)


def combine(cfg: CombineConfig) -> dict[str, object]:
    """Write the three splits under ``cfg.out_dir``; returns what combine.json says."""
    if cfg.dev_size < 1 or cfg.test_size < 1:
        raise UsageError("--dev-size and --test-size must be at least 1")
    root = Path(cfg.data) if cfg.data else data_root()
    if root is None or not (root / "multi30k").is_dir():
        raise UsageError(f"no benchmark data folder (give --data or set MT_DATA): {root}")
    raw = read_sources(root)
    pairs = [p for p in raw if p[1] and p[2]]
    dev, test, train, shared = split(pairs, cfg.dev_size, cfg.test_size, cfg.seed)
    out = Path(cfg.out_dir)
    for name, idx in (("train", train), ("dev", dev), ("test", test)):
        for side, lang in ((1, "en"), (2, "fr")):
            with atomic_write(out / f"{name}.{lang}") as f:
                f.writelines(pairs[i][side] + "\n" for i in idx)
    per_source = {s: sum(1 for i in train if pairs[i][0] == s) for s in SOURCES}
    summary: dict[str, object] = {
        "data": str(root.resolve()), "sources": {k: list(filter(None, v)) for k, v in SOURCES.items()},
        "pairs_read": len(raw), "empty_side_dropped": len(raw) - len(pairs), "seed": cfg.seed,
        "dev": len(dev), "test": len(test), "train": len(train), "train_by_source": per_source,
        "left_out_sharing_a_held_out_sentence": shared,
    }
    with atomic_write(out / "combine.json") as f:
        f.write(json.dumps(summary, indent=2) + "\n")
    return summary
