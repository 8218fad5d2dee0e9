"""Dataclass configs as the single source of options.

Every option is a dataclass field with ``metadata={"help": ...}``. From it we
generate argparse flags (kebab-case), read YAML recipe files (same keys, snake
or kebab case) and write the resolved config next to every output.

Precedence: dataclass default < YAML file (``--config``) < command-line flag.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml

T = TypeVar("T")


def field(default: Any = dataclasses.MISSING, help: str = "", *, required: bool = False,
          choices: Any = None, **kw: Any) -> Any:
    """A dataclass field with help text (mutable defaults via ``default_factory``).

    ``required=True`` declares the option required once, here: :func:`build` refuses a config that
    leaves it unset (``None`` or empty) with ``missing --FLAG (or FLAG: in the --config YAML)``.
    ``choices`` (a sequence) limits the values: the flag's argparse ``choices`` and a check of the
    ``--config`` YAML value (of each item, for a list field).
    """
    meta = {"help": help, "required": required}
    if choices is not None:
        meta["choices"] = tuple(choices)
    if isinstance(default, (list, dict)):
        value = default
        return dataclasses.field(default_factory=lambda: type(value)(value), metadata=meta, **kw)
    return dataclasses.field(default=default, metadata=meta, **kw)


def required_fields(cls: type) -> list[str]:
    """Names of the fields of ``cls`` declared with ``field(..., required=True)``."""
    return [f.name for f in dataclasses.fields(cls) if f.metadata.get("required")]


def check_required(cfg: Any) -> None:
    """Refuse (:class:`nmt.core.errors.UsageError`) a config whose required fields are unset."""
    from nmt.core.errors import UsageError

    missing = [flag_name(name) for name in required_fields(type(cfg)) if getattr(cfg, name) in (None, "", [])]
    if missing:
        keys = ", ".join(m[2:].replace("-", "_") for m in missing)
        raise UsageError(f"missing {', '.join(missing)} (or {keys}: in the --config YAML)")


def flag_name(name: str) -> str:
    """The command-line flag of a field: ``max_len`` → ``--max-len``."""
    return "--" + name.replace("_", "-")


def base_type(tp: Any) -> tuple[Any, bool]:
    """(scalar type, is_optional) of a field annotation."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0], True
    return tp, False


def parse_bool(text: str) -> bool:
    low = text.lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected a boolean, got {text!r}")


def add_dataclass_args(parser: argparse.ArgumentParser, cls: type) -> None:
    """Add one flag per field of ``cls``; defaults are ``None`` so YAML can fill them."""
    hints = typing.get_type_hints(cls)
    group = parser.add_argument_group(cls.__name__)
    for f in dataclasses.fields(cls):
        tp, _ = base_type(hints[f.name])
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)  # type: ignore[misc]
        help_text = f"{f.metadata.get('help', '')} (default: {default})".replace("%", "%%")
        choices = f.metadata.get("choices")
        if choices is not None and tp is not bool:
            group.add_argument(flag_name(f.name), type=typing.get_args(tp)[0] if typing.get_origin(tp) is list
                               else tp, choices=choices, nargs="*" if typing.get_origin(tp) is list else None,
                               default=None, help=help_text)
        elif tp is bool:
            group.add_argument(flag_name(f.name), type=parse_bool, nargs="?", const=True, default=None,
                               metavar="BOOL", help=help_text)
        elif typing.get_origin(tp) is list:
            (item,) = typing.get_args(tp)
            group.add_argument(flag_name(f.name), type=item, nargs="*", default=None, help=help_text)
        else:
            group.add_argument(flag_name(f.name), type=tp, default=None, help=help_text)


class ConfigValues(dict):
    """The option: value mapping of a ``--config`` YAML; ``source`` is ``FILE`` or ``FILE:SECTION`` (for messages)."""

    source: str = "config"


_TYPE_WORDS = {int: "an integer", float: "a number", bool: "a boolean (true/false)", str: "a string"}


def _type_word(tp: Any) -> str:
    return _TYPE_WORDS.get(tp, getattr(tp, "__name__", str(tp)))


def _check_scalar(tp: Any, value: Any, where: str, choices: tuple | None) -> Any:
    """``value`` (from YAML) as the argparse type ``tp`` would give it; :class:`UsageError` when it is not one."""
    from nmt.core.errors import UsageError

    def bad() -> UsageError:
        return UsageError(f"{where}: expected {_type_word(tp)}, got {value!r}")

    if tp is bool:
        if isinstance(value, bool):
            out = value
        elif isinstance(value, str):
            try:
                out = parse_bool(value)
            except argparse.ArgumentTypeError:
                raise bad() from None
        else:
            raise bad()
    elif tp is int or tp is float:  # int takes an int or its text; float also takes a float
        accepted = (int, str) if tp is int else (int, float, str)
        if isinstance(value, bool) or not isinstance(value, accepted):
            raise bad()
        try:
            out = tp(value)
        except ValueError:
            raise bad() from None
    elif tp is str:
        if isinstance(value, str):
            out = value
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out = str(value)  # `output: 2024`: what the flag would give
        else:
            raise bad()
    elif isinstance(tp, type) and tp is not Any and isinstance(value, str):
        try:  # Path and the like: built from the text, as argparse does
            out = tp(value)
        except (TypeError, ValueError):
            raise bad() from None
    else:
        out = value
    if choices is not None and out not in choices:
        from nmt.core.errors import UsageError

        shown = ", ".join(repr(c) if c == "" else str(c) for c in choices)
        raise UsageError(f"{where}: expected one of {shown}, got {value!r}")
    return out


def check_value(tp: Any, value: Any, where: str, choices: tuple | None = None, optional: bool = False) -> Any:
    """A ``--config`` value checked (and converted) against a field's annotation, as its argparse flag would be:
    int, float, bool, str, choices, and ``list[X]`` (each item; a single value becomes a one-item list).
    Raises :class:`UsageError` ``WHERE: expected an integer, got 'many'``."""
    from nmt.core.errors import UsageError

    if value is None:
        if optional or tp not in (int, float, bool):
            return None
        raise UsageError(f"{where}: expected {_type_word(tp)}, got nothing")
    if typing.get_origin(tp) is list:
        args = typing.get_args(tp)
        item = args[0] if args else Any
        if isinstance(value, dict):
            raise UsageError(f"{where}: expected a list, got {value!r}")
        items = value if isinstance(value, (list, tuple)) else [value]
        return [_check_scalar(item, v, where, choices) for v in items]
    if typing.get_origin(tp) is not None:  # dict[...] and other shapes: left to the config class
        return value
    if tp in (int, float, bool, str) and isinstance(value, (list, dict)):
        raise UsageError(f"{where}: expected {_type_word(tp)}, got {value!r}")
    return _check_scalar(tp, value, where, choices)


def _coerce(cls: type, values: dict[str, Any], source: str) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    by_name = {f.name: f for f in dataclasses.fields(cls)}
    out = {}
    for key, value in values.items():
        name = key.replace("-", "_")
        if name not in by_name:
            raise ValueError(f"{source}: unknown option {key!r} for {cls.__name__}; known: {sorted(by_name)}")
        tp, optional = base_type(hints[name])
        out[name] = check_value(tp, value, f"{source}: {key}", by_name[name].metadata.get("choices"), optional)
    return out


def load_yaml(path: str | Path) -> dict[str, Any]:
    """Options from a YAML mapping; ``file.yaml:section`` selects one top-level section."""
    path = str(path)
    section = None
    if ":" in path and not Path(path).exists():
        path, section = path.rsplit(":", 1)
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh) or {}
    except yaml.YAMLError as err:  # a malformed file: FILE:LINE: what the parser says
        from nmt.core.io import DataError

        mark = getattr(err, "problem_mark", None)
        what = "not valid YAML: " + " ".join(str(getattr(err, "problem", "") or err).split())
        if mark is None:
            raise DataError(f"{path}: {what}") from None
        raise DataError(path, mark.line + 1, what) from None
    except UnicodeDecodeError as err:
        from nmt.core.io import DataError

        raise DataError(f"{path}: not UTF-8 text (byte {err.start}): {err.reason}") from None
    if section is not None:
        if not isinstance(data, dict) or section not in data:
            raise ValueError(f"{path}: no section {section!r}")
        data = data[section] or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a config file must be a mapping of option: value")
    values = ConfigValues(data)
    values.source = path if section is None else f"{path}:{section}"
    return values


def build(cls: type[T], args: argparse.Namespace | None = None, yaml_values: dict[str, Any] | None = None,
          source: str = "config", base: dict[str, Any] | None = None) -> T:
    """Instantiate ``cls``: defaults < ``base`` (a preset) < YAML values < non-None command-line values."""
    values: dict[str, Any] = dict(base or {})
    names = {f.name for f in dataclasses.fields(cls)}
    if yaml_values:
        source = getattr(yaml_values, "source", source)  # FILE[:SECTION] of a load_yaml mapping
        values.update(_coerce(cls, {k: v for k, v in yaml_values.items() if k.replace("-", "_") in names}, source))
    if args is not None:
        for name in names:
            v = getattr(args, name, None)
            if v is not None:
                values[name] = v
    cfg = cls(**values)
    check_required(cfg)
    return cfg


def parse_args(classes: list[type], argv: list[str] | None = None, description: str = ""
               ) -> tuple[argparse.Namespace, dict[str, Any]]:
    """Parse flags of several config classes (plus ``--config file.yaml``); returns (args, YAML values)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--config", help="YAML file (or FILE:SECTION) with option: value lines, same names as the "
                        "flags; flags given on the command line win")
    for cls in classes:
        add_dataclass_args(parser, cls)
    args = parser.parse_args(argv)
    yaml_values = load_yaml(args.config) if args.config else {}
    names = {f.name for cls in classes for f in dataclasses.fields(cls)}
    unknown = [k for k in yaml_values if k.replace("-", "_") not in names]
    if unknown:
        parser.error(f"{args.config}: unknown option(s) {unknown}")
    return args, yaml_values


def parse(cls: type[T], argv: list[str] | None = None, description: str = "") -> T:
    """Parse ``argv`` into ``cls``; ``--config file.yaml`` supplies defaults."""
    args, yaml_values = parse_args([cls], argv, description)
    return build(cls, args, yaml_values, source=str(args.config))


def to_dict(cfg: Any) -> dict[str, Any]:
    return dataclasses.asdict(cfg)


def save(cfg: Any, path: str | Path) -> None:
    """Write the resolved config as YAML (atomically)."""
    from nmt.core.io import atomic_write

    with atomic_write(path) as fh:
        yaml.safe_dump(to_dict(cfg), fh, sort_keys=False, allow_unicode=True)


def fingerprint(cfg: Any) -> str:
    return json.dumps(to_dict(cfg), sort_keys=True)
