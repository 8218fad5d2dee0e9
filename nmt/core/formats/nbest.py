"""Moses n-best lists: reader and writer.

One line per hypothesis, exactly as Moses (``moses -n-best-list FILE N``)
writes it::

    0 ||| a man in an orange hat  ||| Distortion0= 0 LM0= -21.8734 WordPenalty0= -6 PhrasePenalty0= 3 TranslationModel0= -2.1 -3.4 -1.9 -2.8 ||| -4.5876

* the sentence number (0-based), the hypothesis, the unweighted feature
  values labelled ``Name=`` (a multi-valued feature lists all its values
  after one label), the weighted total ``Σ λ·h``;
* Moses prints every target word followed by a space, so the hypothesis
  field ends with two spaces before ``|||``; numbers are printed like C++
  ``ostream`` defaults (``%g``, 6 significant digits);
* features appear in Moses's order: stateful features (``Distortion0``,
  ``LM0``) first, then stateless ones, each group in moses.ini order;
  features that are not tuneable (``UnknownWordPenalty0``) are left out, so
  the printed values do not always add up to the total (they do once the
  unknown-word penalty, constant over one sentence's list, is added back).

Optional further fields (Moses's segmentation / word alignment) are kept
by the reader as :attr:`NBestEntry.extra`.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from nmt.core.io import GZIP_ERRORS, DataError, open_text

class NBestError(DataError):
    """A malformed n-best line: ``"<file>:<line>: <message>"``."""


@dataclass
class NBestEntry:
    """One n-best line. ``features`` keeps the file's order: ``[(name, [values…]), …]``."""

    sent_id: int
    tokens: list[str]
    features: list[tuple[str, list[float]]]
    total: float
    extra: list[str] = field(default_factory=list)
    line_no: int = 0

    @property
    def hypothesis(self) -> str:
        return " ".join(self.tokens)

    def feature_dict(self) -> dict[str, list[float]]:
        return {name: list(values) for name, values in self.features}

    def values(self) -> list[float]:
        """All feature values, flattened in file order."""
        return [v for _, vals in self.features for v in vals]

    def value_names(self) -> list[str]:
        """``Name`` or ``Name_i`` for each value of :meth:`values` (MERT's labels)."""
        out = []
        for name, vals in self.features:
            out.extend([name] if len(vals) == 1 else [f"{name}_{i}" for i in range(len(vals))])
        return out


def format_value(value: float, precision: int = 6) -> str:
    """A number as C++ ``ostream`` prints it with ``precision`` significant digits (``%g``)."""
    return "%.*g" % (precision, value)


def format_features(features: Iterable[tuple[str, Sequence[float]]], precision: int = 6) -> str:
    """``" Name= v1 v2 Name2= v"`` — with the leading space Moses writes."""
    parts = []
    for name, values in features:
        parts.append(f" {name}=")
        parts.extend(" " + format_value(v, precision) for v in values)
    return "".join(parts)


def format_nbest_line(sent_id: int, tokens: Sequence[str], features: Iterable[tuple[str, Sequence[float]]],
                      total: float, *, precision: int = 6, extra: Sequence[str] = ()) -> str:
    """One n-best line (without ``\\n``), byte for byte as Moses writes it."""
    hyp = "".join(t + " " for t in tokens)
    line = f"{sent_id} ||| {hyp} |||{format_features(features, precision)} ||| {format_value(total, precision)}"
    for field_text in extra:
        line += " ||| " + field_text
    return line


def write_nbest(fh: IO[str], entries: Iterable[NBestEntry], *, precision: int = 6) -> int:
    """Write entries as n-best lines to an open text file; returns the number of lines."""
    n = 0
    for e in entries:
        fh.write(format_nbest_line(e.sent_id, e.tokens, e.features, e.total, precision=precision,
                                   extra=e.extra) + "\n")
        n += 1
    return n


def parse_nbest_line(line: str, path: str = "<n-best>", line_no: int = 0) -> NBestEntry:
    """Parse one line; raises :class:`NBestError` naming ``path`` and ``line_no``."""
    fields = line.rstrip("\r\n").split("|||")
    if len(fields) < 4:
        raise NBestError(path, line_no, f"expected at least 4 '|||'-separated fields "
                                        f"(id ||| hypothesis ||| features ||| total), found {len(fields)}")
    id_text = fields[0].strip()
    if not (id_text.isdigit() and id_text.isascii()):
        raise NBestError(path, line_no, f"sentence id {id_text!r} is not a non-negative integer")
    tokens = fields[1].split()
    features: list[tuple[str, list[float]]] = []
    seen: set[str] = set()
    current: list[float] | None = None
    for tok in fields[2].split():
        if tok[-1] == "=" and len(tok) > 1:  # a label "Name=" (split() leaves no whitespace in tok)
            name = tok[:-1]
            if name in seen:
                raise NBestError(path, line_no, f"feature {name} appears twice")
            seen.add(name)
            current = []
            features.append((name, current))
            continue
        if current is None:
            raise NBestError(path, line_no, f"feature value {tok!r} before any 'Name=' label")
        try:
            value = float(tok)
        except ValueError:
            raise NBestError(path, line_no, f"feature value {tok!r} is not a number") from None
        if math.isnan(value):
            raise NBestError(path, line_no, f"feature value {tok!r} is not a number")
        current.append(value)
    for name, values in features:
        if not values:
            raise NBestError(path, line_no, f"feature {name} has no values")
    total_text = fields[3].strip()
    try:
        total = float(total_text)
    except ValueError:
        raise NBestError(path, line_no, f"total score {total_text!r} is not a number") from None
    if math.isnan(total):
        raise NBestError(path, line_no, "total score is NaN")
    extra = [f.strip() for f in fields[4:]]
    return NBestEntry(int(id_text), tokens, features, total, extra, line_no)


def iter_nbest(path: str | Path, *, check_order: bool = True) -> Iterator[NBestEntry]:
    """Stream the entries of an n-best file (plain or ``.gz``).

    With ``check_order``: sentence ids must not decrease (Moses writes them
    in input order) and every line of a file must carry the same feature
    labels, with the same number of values each.
    """
    path_s = str(path)
    prev_id = -1
    layout: list[tuple[str, int]] | None = None
    line_no = 0
    with open_text(path, "rb") as fh:
        lines = iter(fh)
        while True:
            try:
                raw = next(lines)
            except StopIteration:
                break
            except GZIP_ERRORS as err:  # truncated / corrupt gzip
                raise NBestError(path_s, line_no + 1, f"cannot read file (corrupt or truncated gzip stream: "
                                                      f"{err})") from None
            line_no += 1
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise NBestError(path_s, line_no, f"invalid UTF-8 at byte {err.start} of the line") from None
            if not line.strip():
                raise NBestError(path_s, line_no, "empty line")
            entry = parse_nbest_line(line, path_s, line_no)
            if check_order:
                if entry.sent_id < prev_id:
                    raise NBestError(path_s, line_no, f"sentence id {entry.sent_id} after {prev_id} "
                                                      "(ids must not decrease)")
                this_layout = [(n, len(v)) for n, v in entry.features]
                if layout is None:
                    layout = this_layout
                elif this_layout != layout:
                    raise NBestError(path_s, line_no, f"feature labels/sizes {this_layout} differ from "
                                                      f"line 1's {layout}")
            prev_id = entry.sent_id
            yield entry


def read_nbest(path: str | Path, *, check_order: bool = True) -> dict[int, list[NBestEntry]]:
    """All entries grouped by sentence id, in file order."""
    out: dict[int, list[NBestEntry]] = {}
    for entry in iter_nbest(path, check_order=check_order):
        out.setdefault(entry.sent_id, []).append(entry)
    return out
