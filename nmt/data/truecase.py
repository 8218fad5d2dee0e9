"""Moses truecasing: train a truecase model on tokenized text, truecase and detruecase files, streamed.

The three steps of Moses's ``scripts/recaser``: ``train-truecaser.perl`` (count, for every word
type, how often each casing occurs where the casing is not forced by the sentence start; write
``best (count/total) other (count) ...`` one type a line), ``truecase.perl`` (a sentence-initial
word takes its best casing; elsewhere a word seen in training keeps its casing and an unseen
casing of a known type takes the best one) and ``detruecase.perl`` (uppercase the first letter of
each sentence). The model files are Moses's: a model written here loads in Moses and a Moses model
loads here.

Applying and detruecasing are sacremoses's ``MosesTruecaser.truecase`` (``use_known=True``, which
is Moses's behaviour) and ``MosesDetruecaser``. Training and the model file are done here, because
sacremoses falls short in three ways: its ``train`` holds the weights of the whole corpus in memory
(``chain(*map(...))``) and ``train_from_file`` reads the file with ``readlines()``, where this
module's memory is bounded by the vocabulary (types x casings); its counting is not
``train-truecaser.perl``'s (it skips every token without a letter and every quote or bracket
inside a line, so a word after ``. (`` is wrongly taken as sentence-initial, and its
``possibly_use_first_token`` tests ``i == 1`` instead of a one-token line); and its loader takes
only integer counts (``--possiblyUseFirstToken`` models have counts like ``0.1``) and names no
line of a malformed file.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import sacremoses
from tqdm import tqdm

from nmt.core.io import DataError, PathLike, atomic_write, iter_lines

#: tokens after which a new sentence starts, and tokens that delay the start (train-truecaser.perl's)
SENTENCE_END = frozenset((".", ":", "?", "!"))
DELAYED_SENTENCE_START = frozenset(("(", "[", '"', "'", "&apos;", "&quot;", "&#91;", "&#93;"))
_MARKUP = re.compile(r"<\S[^>]*>")  # an XML tag standing as a token (Moses's split_xml skips it)
_NUMBER = r"[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?"
_BEST_COUNT = re.compile(rf"\(({_NUMBER})/({_NUMBER})\)")
_OTHER_COUNT = re.compile(rf"\(({_NUMBER})\)")

Casing = dict[str, dict[str, float]]  # lowercased type -> {surface form: weight}, in first-seen order


def _words(line: str) -> list[str]:
    return [tok for tok in line.split() if not _MARKUP.fullmatch(tok)]


def count_line(casing: Casing, line: str, possibly_use_first_token: bool = False) -> None:
    """Add one tokenized line's evidence to ``casing``, by train-truecaser.perl's rules."""
    words = _words(line)
    start = 0
    while start < len(words) and words[start] in DELAYED_SENTENCE_START:
        start += 1
    first = True
    for i in range(start, len(words)):
        word = words[i]
        if not first and words[i - 1] in SENTENCE_END:
            first = True
        weight = 0.0
        if not first:
            weight = 1.0
        elif possibly_use_first_token:
            if word[:1].lower() == word[:1]:
                weight = 1.0  # a lowercase sentence start is full evidence
            elif len(words) == 1:
                weight = 0.1  # a capitalised one-token segment is weak evidence
        if weight:
            forms = casing.setdefault(word.lower(), {})
            forms[word] = forms.get(word, 0) + weight
        first = False


def count_casing(lines: Iterable[str], possibly_use_first_token: bool = False) -> Casing:
    """The casing counts of a stream of tokenized lines; memory holds the types, not the lines."""
    casing: Casing = {}
    for line in lines:
        count_line(casing, line, possibly_use_first_token)
    return casing


def _number(value: float) -> str:
    """A count as Perl prints it: ``3`` for integers, ``0.3`` (15 significant digits) otherwise."""
    return str(int(value)) if value == int(value) else f"{value:.15g}"


def model_lines(casing: Casing) -> Iterator[str]:
    """The model file's lines: ``best (count/total)`` then ``form (count)`` for each other casing."""
    for forms in casing.values():
        best, score = "", -1.0
        for form, count in forms.items():
            if count > score:  # strictly more: the first-seen casing wins a tie
                best, score = form, count
        others = "".join(f" {form} ({_number(count)})" for form, count in forms.items() if form != best)
        yield f"{best} ({_number(score)}/{_number(sum(forms.values()))}){others}"


def write_model(casing: Casing, path: PathLike) -> None:
    """Write ``casing`` as a Moses truecase model, atomically."""
    with atomic_write(path) as fh:
        for line in model_lines(casing):
            fh.write(line + "\n")


def read_model(path: PathLike) -> tuple[dict[str, str], set[str]]:
    """(best casing of each lowercased type, every known casing) of a Moses truecase model.

    As ``truecase.perl``: the first word of a line is the type's best casing, every word listed is
    known. Strict: an empty line, an odd number of fields, a count not in Moses's form, a casing of
    another type or a type listed twice is a :class:`DataError` naming the file and line.
    """
    best: dict[str, str] = {}
    known: set[str] = set()
    where: dict[str, int] = {}
    for line_no, line in enumerate(iter_lines(path, allow_empty=True), 1):
        fields = line.split()
        if not fields:
            raise DataError(path, line_no, "empty line (a truecase model line is 'word (count/total) "
                                           "other (count) ...')")
        if len(fields) % 2:
            raise DataError(path, line_no, f"{len(fields)} fields, expected pairs 'word (count)' "
                                           "(first 'word (count/total)')")
        kind = fields[0].lower()
        for k in range(0, len(fields), 2):
            word, count = fields[k], fields[k + 1]
            pattern, form = (_BEST_COUNT, "(count/total)") if k == 0 else (_OTHER_COUNT, "(count)")
            if not pattern.fullmatch(count):
                raise DataError(path, line_no, f"field {k + 2} is {count!r}, expected {form} after {word!r}")
            if word.lower() != kind:
                raise DataError(path, line_no, f"{word!r} is not a casing of {fields[0]!r} (one type a line)")
            known.add(word)
        if kind in where:
            raise DataError(path, line_no, f"type {kind!r} is already on line {where[kind]}")
        where[kind] = line_no
        best[kind] = fields[0]
    if not best:
        raise DataError(f"{path}: empty truecase model")
    return best, known


class Truecaser:
    """Moses's ``truecase.perl`` on one tokenized line at a time (sacremoses's ``MosesTruecaser``)."""

    def __init__(self, best: dict[str, str], known: set[str]) -> None:
        self._moses = sacremoses.MosesTruecaser()
        self._moses.model = {"best": best, "known": known}

    @classmethod
    def load(cls, path: PathLike) -> Truecaser:
        return cls(*read_model(path))

    @classmethod
    def from_casing(cls, casing: Casing) -> Truecaser:
        best = {kind: line.split(" ", 1)[0] for kind, line in zip(casing, model_lines(casing))}
        return cls(best, {form for forms in casing.values() for form in forms})

    def __call__(self, line: str) -> str:
        return self._moses.truecase(line, return_str=True, use_known=True)


_DETRUECASER = sacremoses.MosesDetruecaser()


def detruecase(line: str) -> str:
    """Moses's ``detruecase.perl``: the first letter of every sentence of the line uppercased."""
    return _DETRUECASER.detruecase(line, return_str=True)


def _progress(lines: Iterable[str], desc: str) -> Iterable[str]:
    return tqdm(lines, unit=" lines", desc=desc, disable=None)


def train_file(paths: list[PathLike], model: PathLike, possibly_use_first_token: bool = False) -> dict[str, Any]:
    """Train a model on tokenized text files (streamed) and write it atomically; returns counts."""
    casing: Casing = {}
    n_lines = 0
    for path in paths:
        for line in _progress(iter_lines(path, allow_empty=True), f"truecase-train {Path(path).name}"):
            count_line(casing, line, possibly_use_first_token)
            n_lines += 1
    if not casing:
        raise DataError(f"{paths[0]}: no word to learn a casing from ({n_lines} lines)")
    write_model(casing, model)
    return {"lines": n_lines, "types": len(casing), "model": str(model)}


def map_file(fn: Any, input: PathLike, output: PathLike, desc: str) -> int:
    """Write ``fn(line)`` for every line of ``input`` to ``output`` (streamed, atomic); returns the line count."""
    n = 0
    with atomic_write(output) as out:
        for line in _progress(iter_lines(input, allow_empty=True), desc):
            out.write(fn(line) + "\n")
            n += 1
    return n
