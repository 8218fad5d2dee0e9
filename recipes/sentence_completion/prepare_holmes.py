#!/usr/bin/env python3
"""Training text for the MSR Sentence Completion Challenge from the Holmes corpus (522 Project
Gutenberg novels), at a size a CPU can train on.

    prepare_holmes.py --archive Holmes_Training_Data.tar.xz --novels 40 --out-dir DIR [--seed 1] [--draw first]

Takes ``--novels`` files drawn with ``--seed`` from the sorted archive listing (0 = all; listing the xz archive
decompresses all of it, 5.6 s here), or with ``--draw first`` the first ``--novels`` files in archive order
(only the archive up to them is read: the ``--quick`` smoke test's choice), drops the
Gutenberg licence header (up to ``*END*THE SMALL PRINT…*END*``) and the closing "End of Project
Gutenberg" lines, joins each paragraph, splits it into sentences (a ``.``/``!``/``?`` — optionally
followed by a quote — then white space and an upper-case letter or a quote), Moses-tokenizes
(sacremoses, English, no entity escaping) and lowercases with :func:`normalize`, which the
question scorer applies to the questions too. Keeps sentences of 3–80 tokens. Every 50th
sentence goes to ``valid.txt``, the rest to ``train.txt``; ``novels.txt`` lists the files used.
Files that are not UTF-8 are read as Latin-1 (counted in the output).
"""
from __future__ import annotations

import argparse
import random
import re
import sys
import tarfile
import tempfile
from functools import lru_cache
from pathlib import Path

from nmt.core.io import atomic_write

SENTENCE_END = re.compile(r"(?<=[.!?])([\"']?)\s+(?=[\"']?[A-Z])")
HEADER_END = re.compile(r"\*END\*THE SMALL PRINT!.*?\*END\*", re.S)
FOOTER = re.compile(r"^\s*End of (the )?Project Gutenberg.*$", re.I | re.M)


@lru_cache(maxsize=1)
def _tokenizer():
    import sacremoses

    return sacremoses.MosesTokenizer(lang="en")


def normalize(text: str) -> list[str]:
    """Moses-tokenized, lowercased tokens: the one normalisation of training text and questions."""
    return _tokenizer().tokenize(text.lower(), escape=False, aggressive_dash_splits=False)


def body(text: str) -> str:
    """The novel without the Gutenberg licence header and end line."""
    m = HEADER_END.search(text)
    if m:
        text = text[m.end():]
    return FOOTER.sub("", text)


def sentences(text: str) -> list[str]:
    out = []
    for para in re.split(r"\n\s*\n", text):
        flat = " ".join(para.split())
        if not flat:
            continue
        pieces = SENTENCE_END.split(flat)
        # split() keeps the captured closing quote as its own item: glue it back to its sentence
        sent = ""
        for i, piece in enumerate(pieces):
            if i % 2 == 1:
                sent += piece
                out.append(sent)
                sent = ""
            else:
                sent = piece
        if sent:
            out.append(sent)
    return out


def _is_novel(m: tarfile.TarInfo) -> bool:
    return m.isfile() and m.name.upper().endswith(".TXT")


def _kept_sentences(tar: tarfile.TarFile, m: tarfile.TarInfo, path: Path) -> bool:
    """Writes the novel's kept sentences to ``path``, one per line; True when it was read as Latin-1."""
    raw = tar.extractfile(m).read()  # type: ignore[union-attr]
    try:
        text, latin1 = raw.decode("utf-8"), False
    except UnicodeDecodeError:
        text, latin1 = raw.decode("latin-1"), True
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for sent in sentences(body(text)):
            toks = normalize(sent)
            if 3 <= len(toks) <= 80:
                fh.write(" ".join(toks) + "\n")
    return latin1


def _first_novels(tar: tarfile.TarFile, n: int, tmp: Path) -> tuple[list[tarfile.TarInfo], int]:
    """--draw first: the first ``n`` novels (0 = all) in archive order, read while the archive is listed, their
    sentences in ``tmp/I.txt`` with I their place in name order; and how many were read as Latin-1."""
    read: list[tuple[tarfile.TarInfo, Path]] = []
    latin1 = 0
    for m in tar:
        if _is_novel(m):
            read.append((m, tmp / f"{len(read)}.part"))
            latin1 += _kept_sentences(tar, m, read[-1][1])
            if len(read) == n:
                break
    read.sort(key=lambda mp: mp[0].name)
    for i, (_, part) in enumerate(read):
        part.rename(tmp / f"{i}.txt")
    return [m for m, _ in read], latin1


def _drawn_novels(tar: tarfile.TarFile, n: int, seed: int, tmp: Path) -> tuple[list[tarfile.TarInfo], int]:
    """--draw random: ``n`` novels (0 = all) drawn with ``seed`` from the sorted listing, as _first_novels."""
    members = sorted((m for m in tar.getmembers() if _is_novel(m)), key=lambda m: m.name)
    if n:
        members = sorted(random.Random(seed).sample(members, min(n, len(members))), key=lambda m: m.name)
    # an xz archive seeks back by decompressing again from its start, so the drawn novels are read in archive order
    latin1 = 0
    for i, m in sorted(enumerate(members), key=lambda im: im[1].offset):
        latin1 += _kept_sentences(tar, m, tmp / f"{i}.txt")
    return members, latin1


def _split(n: int, tmp: Path, out: Path) -> tuple[int, int, int]:
    """``tmp/0.txt`` … ``tmp/{n-1}.txt`` in turn: every 50th sentence to ``out/valid.txt``, the rest to
    ``out/train.txt``; returns (training sentences, their tokens, validation sentences)."""
    train = valid = tokens = k = 0
    with atomic_write(out / "train.txt") as ftrain, atomic_write(out / "valid.txt") as fvalid:
        for i in range(n):
            with open(tmp / f"{i}.txt", encoding="utf-8", newline="\n") as fh:
                for line in fh:
                    k += 1
                    if k % 50 == 0:
                        fvalid.write(line)
                        valid += 1
                    else:
                        ftrain.write(line)
                        train += 1
                        tokens += line.count(" ") + 1
    return train, tokens, valid


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--archive", required=True, help="Holmes_Training_Data.tar.xz")
    p.add_argument("--novels", type=int, default=40, help="novels drawn (0 = all 522)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--draw", choices=("random", "first"), default="random",
                   help="random: drawn with --seed from the sorted listing; first: the first --novels in the archive")
    p.add_argument("--out-dir", required=True)
    args = p.parse_args(argv)
    out = Path(args.out_dir)
    made_out = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(args.archive, "r:*") as tar, tempfile.TemporaryDirectory(prefix=".holmes.", dir=out) as tmp:
            if args.draw == "first":
                members, latin1 = _first_novels(tar, args.novels, Path(tmp))
            else:
                members, latin1 = _drawn_novels(tar, args.novels, args.seed, Path(tmp))
            if not members:
                raise SystemExit(f"{args.archive}: no .TXT files")
            train, tokens, valid = _split(len(members), Path(tmp), out)
    except BaseException:  # a refused or failed run leaves no out-dir it made
        if made_out and out.is_dir() and not any(out.iterdir()):
            out.rmdir()
        raise
    with atomic_write(out / "novels.txt") as fh:
        fh.write("".join(Path(m.name).name + "\n" for m in members))
    print(f"{len(members)} novels ({latin1} read as Latin-1): {train:,} training sentences ({tokens:,} tokens), "
          f"{valid:,} validation sentences -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
