"""The one weights model: feature name → weight values, as a flat vector, as moses.ini text, over n-best lines.

A feature group ``Name`` has ``k`` values (Moses's score components). The *layout* of a model or an
n-best list is its ordered ``[(name, k), …]``; its *value names* label the flat vector: ``Name`` for
a one-value group, ``Name_0 … Name_{k-1}`` otherwise (as Moses's MERT tools and
:meth:`nmt.core.formats.nbest.NBestEntry.value_names` label them).

:class:`Weights` is an ordered ``{name: [values]}`` (a ``dict``, so it is JSON as it stands) with the
conversions every room needs:

* to / from a flat vector in a layout (:meth:`Weights.to_vector`, :meth:`Weights.from_vector`), and
  to / from value names (:meth:`Weights.to_flat`, :meth:`Weights.from_flat`);
* to / from Moses text: ``[weight]`` sections (:meth:`Weights.ini_text`, :meth:`Weights.read`) and
  the one-line ``-weight-overwrite`` form (:meth:`Weights.override_string`);
* ``Σ λ·h`` of an n-best line's feature groups (:meth:`Weights.total`).

Which values are fixed or bounded is said with value names or group names: :func:`value_indices`
resolves them, :func:`parse_ranges` reads Moses's ``NAME:LO..HI`` ranges.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

Layout = list[tuple[str, int]]


def layout_of(features: Sequence[tuple[str, Sequence[float]]]) -> Layout:
    """``[("LM0", [v]), ("TM0", [v, v])]`` (an n-best line's groups) → ``[("LM0", 1), ("TM0", 2)]``."""
    return [(name, len(values)) for name, values in features]


def value_names(layout: Sequence[tuple[str, int]]) -> list[str]:
    """``[("LM0", 1), ("TM0", 2)]`` → ``["LM0", "TM0_0", "TM0_1"]``."""
    out: list[str] = []
    for name, k in layout:
        out.extend([name] if k == 1 else [f"{name}_{i}" for i in range(k)])
    return out


def _index_of(key: str | int, names: Sequence[str]) -> int:
    if isinstance(key, int) or (not isinstance(key, str) and hasattr(key, "__index__")):  # numpy ints too
        if not 0 <= int(key) < len(names):
            raise ValueError(f"feature index {key} out of range (0..{len(names) - 1})")
        return int(key)
    if key in names:
        return names.index(key)
    # a group name ("TranslationModel0") is not a single feature
    raise ValueError(f"unknown feature {key!r}; features: {' '.join(names)}")


def value_indices(keys: Iterable[str | int], names: Sequence[str]) -> list[int]:
    """Indices of values; a group name (``TranslationModel0``) selects all its ``_i`` values."""
    out: list[int] = []
    for key in keys:
        if isinstance(key, str) and key not in names:
            group = [i for i, n in enumerate(names) if n.rsplit("_", 1)[0] == key]
            if group:
                out.extend(group)
                continue
        out.append(_index_of(key, names))
    return sorted(set(out))


def parse_ranges(items: Sequence[str]) -> dict[str, tuple[float, float]]:
    """``["LM0:-1..1", "TranslationModel0:0..2"]`` → ``{"LM0": (-1, 1), …}`` (Moses's ``--range``)."""
    out = {}
    for item in items:
        name, sep, rng = item.rpartition(":")
        lo_hi = rng.split("..")
        if not sep or not name or len(lo_hi) != 2:
            raise ValueError(f"--ranges: expected NAME:LO..HI, got {item!r}")
        try:
            lo, hi = float(lo_hi[0]), float(lo_hi[1])
        except ValueError:
            raise ValueError(f"--ranges: bad numbers in {item!r}") from None
        if lo > hi:
            raise ValueError(f"--ranges: {item!r} has LO > HI")
        out[name] = (lo, hi)
    return out


class Weights(dict[str, list[float]]):
    """Ordered ``{feature name: weight values}``; see the module docstring."""

    def __init__(self, groups: Mapping[str, Sequence[float]] | None = None) -> None:
        super().__init__((name, list(values)) for name, values in (groups or {}).items())

    # ------------------------------------------------------------------ flat vectors
    def to_vector(self, layout: Sequence[tuple[str, int]], *,
                  defaults: float | Mapping[str, Sequence[float]] | None = None, where: str = "") -> list[float]:
        """The values in ``layout`` order. A group without weights takes ``defaults`` (a number for
        every value, or per group), else raises; ``where`` (the n-best file) words the errors as a
        moses.ini that does not match its n-best lists."""
        out: list[float] = []
        for name, k in layout:
            if name in self:
                w = list(self[name])
            elif isinstance(defaults, Mapping) and name in defaults:
                w = list(defaults[name])
            elif defaults is not None and not isinstance(defaults, Mapping):
                w = [defaults] * k
            elif where:
                raise ValueError(f"{where}: the n-best lists have feature {name}, but the moses.ini has no weights "
                                 f"for it ([weight] names: {' '.join(self)})")
            else:
                raise KeyError(f"no weights for feature {name}")
            if len(w) != k:
                if where:
                    raise ValueError(f"{where}: {name} has {k} value(s) in the n-best lists but {len(w)} "
                                     "weight(s) in the moses.ini")
                raise ValueError(f"feature {name} has {k} value(s) but {len(w)} weight(s)")
            out.extend(float(x) for x in w)
        return out

    @classmethod
    def from_vector(cls, vec: Sequence[float], layout: Sequence[tuple[str, int]],
                    base: Mapping[str, Sequence[float]] | None = None) -> "Weights":
        """``base`` (groups not in the layout keep theirs) with the layout's groups read from ``vec``."""
        out = cls(base)
        i = 0
        for name, k in layout:
            out[name] = [float(x) for x in vec[i:i + k]]
            i += k
        return out

    def to_flat(self, layout: Sequence[tuple[str, int]], default: float | None = None) -> dict[str, float]:
        """``{value name: weight}`` (MERT's labels); a group missing gets ``default`` (or raises)."""
        return dict(zip(value_names(layout), self.to_vector(layout, defaults=default)))

    @classmethod
    def from_flat(cls, flat: Mapping[str, float], layout: Sequence[tuple[str, int]]) -> "Weights":
        """MERT's value names (``TM0_0`` …) back to groups ``{"TM0": [..]}`` in ``layout``."""
        return cls.from_vector([float(flat[n]) for n in value_names(layout)], layout)

    # ------------------------------------------------------------------ n-best lines
    def total(self, entry: Any) -> float:
        """``Σ λ·h`` over an n-best entry's feature groups; every group needs weights of the same size."""
        total = 0.0
        for name, vals in entry.features:
            if name not in self:
                raise ValueError(f"no weight for feature {name} (weights given for: {' '.join(self)})")
            w = self[name]
            if len(w) != len(vals):
                raise ValueError(f"feature {name} has {len(vals)} value(s) but {len(w)} weight(s)")
            total += math.fsum(a * b for a, b in zip(w, vals))
        return total

    # ------------------------------------------------------------------ Moses text
    def override_string(self) -> str:
        """One line in Moses's ``-weight-overwrite`` syntax: ``"LM0= 0.5 TranslationModel0= 0.2 0.2"``."""
        from smt_features.model.moses_ini import format_weight_line

        return " ".join(format_weight_line(n, v) for n, v in self.items())

    def ini_text(self, comment: str = "") -> str:
        """A moses.ini ``[weight]`` section (``comment`` lines first, as ``# …``)."""
        from smt_features.model.moses_ini import format_weight_line

        lines = [f"# {c}" for c in comment.splitlines()] if comment else []
        lines.append("[weight]")
        lines.extend(format_weight_line(n, list(v)) for n, v in self.items())
        return "\n".join(lines) + "\n"

    @classmethod
    def read(cls, path: str | Path) -> "Weights":
        """Weights from a moses.ini-style file: ``Name= v …`` lines (a ``[weight]`` header, other sections,
        blank lines and ``#`` comments are allowed; only the ``[weight]`` section is read when there are
        sections)."""
        from nmt.core.io import iter_lines
        from smt_features.model.moses_ini import MosesIniError, parse_weight_tokens

        out = cls()
        section: str | None = None
        for line_no, raw in enumerate(iter_lines(path, allow_empty=True), start=1):  # strict UTF-8: FILE:LINE
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if line.startswith("[") and line.endswith("]"):
                section = line[1:-1].strip()
                continue
            if section not in (None, "weight"):
                continue
            for name, vals in parse_weight_tokens(line.split(), str(path), line_no).items():
                if name in out:
                    raise MosesIniError(str(path), line_no, f"weights for {name} given twice")
                out[name] = vals
        if not out:
            raise MosesIniError(str(path), None, "no 'Name= value' weight lines found")
        return out
