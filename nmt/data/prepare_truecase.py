"""``nmt-prepare --truecase``: Moses truecasing of the tokenized splits, one model per language.

As Moses's pipeline: a truecase model is trained on each language's tokenized training side
(``truecase-model.<lang>``, Moses's format, :mod:`nmt.data.truecase`), the training side's
``<split>.tok.<lang>`` files are rewritten truecased (streamed, atomically) and the vocabulary is
counted on the truecased tokens; dev and test tokens are truecased as they are written, before their
OOV rates. The raw ``<split>.<lang>`` files stay as they were (cased text, the BLEU references).
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from nmt.core.io import atomic_write, iter_lines
from nmt.data.truecase import Truecaser, train_file


def model_name(lang: str) -> str:
    return f"truecase-model.{lang}"


def truecase_train_split(out: Path, name: str, langs: tuple[str, str]) -> tuple[dict[str, Truecaser],
                                                                               list[Counter[str]]]:
    """Train ``truecase-model.<lang>`` on ``out/<name>.tok.<lang>``, truecase that file in place (it is
    our own output), and return the truecasers and the token counts of the truecased files."""
    truecasers: dict[str, Truecaser] = {}
    counts: list[Counter[str]] = [Counter(), Counter()]
    for side, lang in enumerate(langs):
        tok = out / f"{name}.tok.{lang}"
        train_file([tok], out / model_name(lang))
        truecasers[lang] = Truecaser.load(out / model_name(lang))
        with atomic_write(tok) as fh:  # the temp file is written in full before it replaces tok
            for line in iter_lines(tok, allow_empty=True):
                cased = truecasers[lang](line)
                counts[side].update(cased.split())
                fh.write(cased + "\n")
    return truecasers, counts
