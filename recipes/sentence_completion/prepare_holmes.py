#!/usr/bin/env python3
"""Training text for the MSR Sentence Completion Challenge from the Holmes corpus (522 Project
Gutenberg novels), at a size a CPU can train on.

    prepare_holmes.py --archive Holmes_Training_Data.tar.xz --novels 40 --out-dir DIR [--seed 1]

Takes ``--novels`` files drawn with ``--seed`` from the sorted archive listing (0 = all), drops the
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--archive", required=True, help="Holmes_Training_Data.tar.xz")
    p.add_argument("--novels", type=int, default=40, help="novels drawn (0 = all 522)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out-dir", required=True)
    args = p.parse_args(argv)
    out = Path(args.out_dir)
    with tarfile.open(args.archive, "r:*") as tar:
        members = sorted((m for m in tar.getmembers() if m.isfile() and m.name.upper().endswith(".TXT")),
                         key=lambda m: m.name)
        if not members:
            raise SystemExit(f"{args.archive}: no .TXT files")
        if args.novels:
            members = sorted(random.Random(args.seed).sample(members, min(args.novels, len(members))),
                             key=lambda m: m.name)
        latin1 = 0
        # an xz archive seeks back by decompressing again from its start, so the drawn novels are read in archive
        # order, each one's kept sentences into a temporary file, and written out in name order from there
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".holmes.", dir=out) as tmp:
            for i, m in sorted(enumerate(members), key=lambda im: im[1].offset):
                raw = tar.extractfile(m).read()  # type: ignore[union-attr]
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    text = raw.decode("latin-1")
                    latin1 += 1
                with open(Path(tmp) / f"{i}.txt", "w", encoding="utf-8", newline="\n") as fh:
                    for sent in sentences(body(text)):
                        toks = normalize(sent)
                        if 3 <= len(toks) <= 80:
                            fh.write(" ".join(toks) + "\n")
            train = valid = 0
            tokens = 0
            with atomic_write(out / "train.txt") as ftrain, atomic_write(out / "valid.txt") as fvalid:
                k = 0
                for i in range(len(members)):
                    with open(Path(tmp) / f"{i}.txt", encoding="utf-8", newline="\n") as fh:
                        for line in fh:
                            k += 1
                            if k % 50 == 0:
                                fvalid.write(line)
                                valid += 1
                            else:
                                ftrain.write(line)
                                train += 1
                                tokens += line.count(" ") + 1
        with atomic_write(out / "novels.txt") as fh:
            fh.write("".join(Path(m.name).name + "\n" for m in members))
    print(f"{len(members)} novels ({latin1} read as Latin-1): {train:,} training sentences ({tokens:,} tokens), "
          f"{valid:,} validation sentences -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
