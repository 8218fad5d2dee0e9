"""Read and write moses.ini-style decoder configurations.

The syntax is Moses's (the "v2" format that ``train-model.perl`` writes)::

    # comment
    [input-factors]
    0

    [mapping]
    0 T 0

    [distortion-limit]
    6

    [feature]
    UnknownWordPenalty
    WordPenalty
    PhrasePenalty
    PhraseDictionaryMemory name=TranslationModel0 num-features=4 path=/m/phrase-table.gz input-factor=0 output-factor=0 table-limit=20
    Distortion
    KENLM name=LM0 factor=0 path=/m/lm.binary order=5

    [weight]
    UnknownWordPenalty0= 1
    WordPenalty0= -1
    PhrasePenalty0= 0.2
    TranslationModel0= 0.2 0.2 0.2 0.2
    Distortion0= 0.3
    LM0= 0.5

* A section starts with ``[name]``; its values are the following non-empty
  lines up to the next section. ``#`` starts a comment line.
* ``[feature]`` lines are ``Type key=value …``. A feature without
  ``name=`` is named ``Type`` + its index among features of that type
  (``Distortion0``, ``WordPenalty0``), as Moses does.
* ``[weight]`` lines are ``Name= v1 v2 …`` (Moses's ``-weight-overwrite``
  uses the same syntax on one line, see :func:`parse_weight_string`).
* Search options are one-value sections: ``[distortion-limit]``,
  ``[stack]`` (Moses also accepts ``[s]``), ``[beam-threshold]`` (``[b]``),
  ``[early-discarding-threshold]``, ``[max-phrase-length]``; others
  (``[input-factors]``, ``[mapping]``, …) are kept and written back as they
  were.

Every error names the file and line (:class:`MosesIniError`). Building one for a
system is :mod:`smt_features.model.moses_ini_build`.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nmt.core.io import DataError, atomic_write

#: Single-value sections that configure the search, with Moses's short aliases.
SEARCH_SECTION_ALIASES = {
    "s": "stack",
    "b": "beam-threshold",
    "dl": "distortion-limit",
    "max-phrase-length": "max-phrase-length",
}
KNOWN_FEATURE_TYPES = (
    "PhraseDictionaryMemory", "PhraseDictionaryCompact", "PhraseDictionaryBinary", "PhraseDictionaryOnDisk",
    "KENLM", "Distortion", "WordPenalty", "PhrasePenalty", "UnknownWordPenalty", "LexicalReordering",
)
_WEIGHT_NAME = re.compile(r"^(\S+)=$")


class MosesIniError(DataError):
    """A malformed moses.ini line: ``"<file>:<n>: <message>"``."""


@dataclass
class FeatureLine:
    """One ``[feature]`` line: its type and its ``key=value`` arguments in order."""

    type: str
    args: dict[str, str] = field(default_factory=dict)
    line_no: int = 0
    #: the name was not written (Moses's default ``Type<index>``); writing leaves it out again
    implicit_name: bool = False

    @property
    def name(self) -> str:
        return self.args["name"]

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.args.get(key, default)

    def format(self) -> str:
        items = [(k, v) for k, v in self.args.items() if not (k == "name" and self.implicit_name)]
        return " ".join([self.type] + [f"{k}={v}" for k, v in items])


@dataclass
class MosesConfig:
    """A parsed moses.ini.

    ``features`` in file order, each with a ``name`` (defaulted like Moses);
    ``weights`` maps a feature name to its weights; ``sections`` holds every
    other section's value lines (search options included) in file order.
    """

    features: list[FeatureLine] = field(default_factory=list)
    weights: dict[str, list[float]] = field(default_factory=dict)
    sections: dict[str, list[str]] = field(default_factory=dict)
    path: str | None = None
    weight_lines: dict[str, int] = field(default_factory=dict)
    section_lines: dict[str, int] = field(default_factory=dict)

    # ------------------------------------------------------------------ access
    def feature(self, name: str) -> FeatureLine:
        for f in self.features:
            if f.name == name:
                return f
        raise KeyError(f"no feature named {name!r}")

    def option(self, name: str, default: str | None = None) -> str | None:
        """The single value of a one-line section (``[stack]`` → ``"200"``), or ``default``."""
        values = self.sections.get(name)
        if not values:
            return default
        return values[0]

    def int_option(self, name: str, default: int) -> int:
        value = self.option(name)
        if value is None:
            return default
        try:
            return int(value)
        except ValueError:
            raise MosesIniError(self.path or "<moses.ini>", self._section_line(name),
                                f"[{name}] must be an integer, got {value!r}") from None

    def float_option(self, name: str, default: float) -> float:
        value = self.option(name)
        if value is None:
            return default
        try:
            return float(value)
        except ValueError:
            raise MosesIniError(self.path or "<moses.ini>", self._section_line(name),
                                f"[{name}] must be a number, got {value!r}") from None

    def set_option(self, name: str, value: object) -> None:
        self.sections[name] = [str(value)]

    def _section_line(self, name: str) -> int:
        return self.section_lines.get(name, 0)

    # ------------------------------------------------------------------ writing
    def to_text(self) -> str:
        """The configuration as moses.ini text (sections first, then features and weights)."""
        out = ["#########################", "### MOSES CONFIG FILE ###", "#########################", ""]
        for name, values in self.sections.items():
            out.append(f"[{name}]")
            out.extend(values)
            out.append("")
        out.append("# feature functions")
        out.append("[feature]")
        out.extend(f.format() for f in self.features)
        out.append("")
        out.append("# dense weights for feature functions")
        out.append("[weight]")
        for f in self.features:
            if f.name in self.weights:
                out.append(format_weight_line(f.name, self.weights[f.name]))
        for name, values in self.weights.items():  # weights of features not listed (kept as read)
            if not any(f.name == name for f in self.features):
                out.append(format_weight_line(name, values))
        return "\n".join(out) + "\n"

    def write(self, path: str | Path) -> None:
        with atomic_write(path) as fh:
            fh.write(self.to_text())

    def copy(self) -> "MosesConfig":
        return MosesConfig([FeatureLine(f.type, dict(f.args), f.line_no, f.implicit_name) for f in self.features],
                           {k: list(v) for k, v in self.weights.items()},
                           {k: list(v) for k, v in self.sections.items()}, self.path, dict(self.weight_lines),
                           dict(self.section_lines))


def format_number(value: float) -> str:
    """Shortest text that reads back to the same float (``0.2``, ``-1``, ``0.0375``)."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def format_weight_line(name: str, values: Sequence[float]) -> str:
    return f"{name}= " + " ".join(format_number(v) for v in values)


def _parse_feature_line(text: str, path: str, line_no: int, type_counts: dict[str, int]) -> FeatureLine:
    toks = text.split()
    ftype = toks[0]
    if "=" in ftype:
        raise MosesIniError(path, line_no, f"a [feature] line starts with the feature type, got {ftype!r}")
    args: dict[str, str] = {}
    for tok in toks[1:]:
        key, eq, value = tok.partition("=")
        if not eq or not key or not value:
            raise MosesIniError(path, line_no, f"expected key=value, got {tok!r}")
        if key in args:
            raise MosesIniError(path, line_no, f"argument {key!r} given twice")
        args[key] = value
    index = type_counts.get(ftype, 0)
    type_counts[ftype] = index + 1
    implicit = "name" not in args
    if implicit:
        args = {"name": f"{ftype}{index}", **args}
    return FeatureLine(ftype, args, line_no, implicit)


def parse_weight_tokens(tokens: Sequence[str], path: str, line_no: int) -> dict[str, list[float]]:
    """``["LM0=", "0.5", "TranslationModel0=", "0.2", …]`` → ``{"LM0": [0.5], …}``."""
    out: dict[str, list[float]] = {}
    current: str | None = None
    for tok in tokens:
        m = _WEIGHT_NAME.match(tok)
        if m:
            current = m.group(1)
            if current in out:
                raise MosesIniError(path, line_no, f"weights for {current} given twice")
            out[current] = []
            continue
        if "=" in tok:  # "LM0=0.5" (no space): accept like Moses does not; say how to fix
            raise MosesIniError(path, line_no, f"expected 'Name=' followed by numbers, got {tok!r} "
                                               "(write a space after '=')")
        if current is None:
            raise MosesIniError(path, line_no, f"weight value {tok!r} before any 'Name='")
        try:
            out[current].append(float(tok))
        except ValueError:
            raise MosesIniError(path, line_no, f"weight {tok!r} of {current} is not a number") from None
    for name, values in out.items():
        if not values:
            raise MosesIniError(path, line_no, f"no weights after {name}=")
    return out


def parse_weight_string(text: str, source: str = "<weights>") -> dict[str, list[float]]:
    """Moses ``-weight-overwrite`` syntax: ``"LM0= 0.5 TranslationModel0= 0.2 0.2 0.2 0.2"``."""
    return parse_weight_tokens(text.split(), source, 1)


def parse_moses_ini(text: str | Iterable[str], path: str = "<moses.ini>") -> MosesConfig:
    """Parse moses.ini text (or its lines). Raises :class:`MosesIniError` naming ``path`` and the line."""
    lines = text.splitlines() if isinstance(text, str) else list(text)
    cfg = MosesConfig(path=path)
    section_lines = cfg.section_lines
    section: str | None = None
    type_counts: dict[str, int] = {}
    for line_no, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            if not line.endswith("]") or len(line) < 3:
                raise MosesIniError(path, line_no, f"bad section header {line!r}")
            section = line[1:-1].strip()
            if not section or " " in section:
                raise MosesIniError(path, line_no, f"bad section name {section!r}")
            section = SEARCH_SECTION_ALIASES.get(section, section)
            if section not in ("feature", "weight"):
                if section in cfg.sections:
                    raise MosesIniError(path, line_no, f"section [{section}] appears twice")
                cfg.sections[section] = []
                section_lines[section] = line_no
            continue
        if section is None:
            raise MosesIniError(path, line_no, f"text outside any [section]: {line!r}")
        if section == "feature":
            fl = _parse_feature_line(line, path, line_no, type_counts)
            if any(f.name == fl.name for f in cfg.features):
                raise MosesIniError(path, line_no, f"two features named {fl.name}")
            cfg.features.append(fl)
        elif section == "weight":
            for name, values in parse_weight_tokens(line.split(), path, line_no).items():
                if name in cfg.weights:
                    raise MosesIniError(path, line_no, f"weights for {name} given twice "
                                                       f"(first on line {cfg.weight_lines[name]})")
                cfg.weights[name] = values
                cfg.weight_lines[name] = line_no
        else:
            cfg.sections[section].append(line)
    _validate(cfg)
    return cfg


def _validate(cfg: MosesConfig) -> None:
    path = cfg.path or "<moses.ini>"
    names = {f.name for f in cfg.features}
    for name, line_no in cfg.weight_lines.items():
        if name not in names:
            raise MosesIniError(path, line_no, f"weights for {name}, but no [feature] line defines it "
                                               f"(features: {', '.join(sorted(names)) or 'none'})")
    for f in cfg.features:
        n_expected = 1
        if f.type.startswith("PhraseDictionary"):
            nf = f.get("num-features")
            if nf is None:
                raise MosesIniError(path, f.line_no, f"{f.type} {f.name} needs num-features=")
            try:
                n_expected = int(nf)
            except ValueError:
                raise MosesIniError(path, f.line_no, f"num-features must be an integer, got {nf!r}") from None
            if n_expected < 1:
                raise MosesIniError(path, f.line_no, "num-features must be >= 1")
            if f.get("path") is None:
                raise MosesIniError(path, f.line_no, f"{f.type} {f.name} needs path=")
        elif f.type in ("KENLM", "LexicalReordering"):
            if f.get("path") is None:
                raise MosesIniError(path, f.line_no, f"{f.type} {f.name} needs path=")
        if "num-features" in f.args and not f.type.startswith("PhraseDictionary"):
            try:
                n_expected = int(f.args["num-features"])
            except ValueError:
                raise MosesIniError(path, f.line_no, "num-features must be an integer") from None
        if f.name in cfg.weights and len(cfg.weights[f.name]) != n_expected:
            raise MosesIniError(path, cfg.weight_lines[f.name],
                                f"{f.name} has {n_expected} value(s) (line {f.line_no}) but "
                                f"{len(cfg.weights[f.name])} weight(s)")
        for key in ("tuneable",):
            if key in f.args and f.args[key] not in ("true", "false"):
                raise MosesIniError(path, f.line_no, f"{key}= must be true or false, got {f.args[key]!r}")
    for name in ("stack", "distortion-limit", "max-phrase-length"):
        if name in cfg.sections:
            cfg.int_option(name, 0)
    for name in ("beam-threshold", "early-discarding-threshold"):
        if name in cfg.sections:
            cfg.float_option(name, 0.0)


def resolve_feature_path(path: str, cfg: MosesConfig) -> Path:
    """A feature's ``path=`` as the decoder opens it: from the working directory, else (when that does not
    exist) from the moses.ini's folder."""
    p = Path(path)
    if p.is_absolute() or p.exists() or not cfg.path:
        return p
    cand = Path(cfg.path).parent / p
    return cand if cand.exists() else p


def check_feature_files(cfg: MosesConfig, only: Iterable[str] | None = None) -> dict[str, Path]:
    """Every feature ``path=`` (phrase tables, language models; ``only`` these feature names) must be an
    existing file. Raises :class:`MosesIniError` at the feature's line otherwise; returns
    ``{feature name: resolved path}``.
    """
    where = cfg.path or "<moses.ini>"
    names = None if only is None else set(only)
    found = {}
    for f in cfg.features:
        value = f.get("path")
        if value is None or (names is not None and f.name not in names):
            continue
        p = resolve_feature_path(value, cfg)
        if p.is_dir():
            raise MosesIniError(where, f.line_no, f"{f.name}: path={value} is a directory, not a file")
        if not p.is_file():
            raise MosesIniError(where, f.line_no, f"{f.name}: path={value}: no such file")
        found[f.name] = p
    return found


def read_moses_ini(path: str | Path) -> MosesConfig:
    """Read a moses.ini file (UTF-8)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise MosesIniError(str(path), text_line_of_byte(path.read_bytes(), err.start),
                            f"invalid UTF-8: {err.reason}") from None
    return parse_moses_ini(text, str(path))


def text_line_of_byte(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def apply_weight_overrides(cfg: MosesConfig, overrides: Mapping[str, Sequence[float]], source: str = "--weights-override"
                           ) -> None:
    """Replace weights of named features (checked against the features and their sizes)."""
    for name, values in overrides.items():
        try:
            f = cfg.feature(name)
        except KeyError:
            raise MosesIniError(source, 1, f"weights for {name}, but the configuration has no such feature "
                                           f"(features: {', '.join(x.name for x in cfg.features)})") from None
        old = cfg.weights.get(name)
        expected = len(old) if old is not None else (int(f.get("num-features", "1") or 1))
        if len(values) != expected:
            raise MosesIniError(source, 1, f"{name} needs {expected} weight(s), got {len(values)}")
        cfg.weights[name] = [float(v) for v in values]
