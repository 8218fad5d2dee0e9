"""argparse flags for fairseq's legacy ``add_args`` generated from our config dataclasses.

Flags carry a prefix (``--encdec-…``, ``--lm-…``) so that they cannot collide with
fairseq's own options; every default is ``None`` so that the architecture
function's preset and then the dataclass defaults fill what the user leaves out.
"""
from __future__ import annotations

import dataclasses
import typing
from typing import Any

from nmt.core.config import base_type, parse_bool


def add_prefixed_dataclass_args(parser, cls: type, prefix: str) -> None:
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp, _ = base_type(hints[f.name])
        flag = "--" + (prefix + f.name).replace("_", "-")
        help_text = f"{f.metadata.get('help', '')} (dataclass default: {f.default})".replace("%", "%%")
        if tp is bool:
            parser.add_argument(flag, type=parse_bool, metavar="BOOL", default=None, help=help_text)
        elif tp in (int, float, str):
            parser.add_argument(flag, type=tp, default=None, help=help_text)
        # other field types (none today) are left to the preset / dataclass default


def prefixed_overrides(args: Any, cls: type, prefix: str) -> dict[str, Any]:
    """Values the user set on the command line (non-None), keyed by field name."""
    out = {}
    for f in dataclasses.fields(cls):
        value = getattr(args, prefix + f.name, None)
        if value is not None:
            out[f.name] = value
    return out


def set_default(args: Any, name: str, value: Any) -> None:
    if getattr(args, name, None) is None:
        setattr(args, name, value)
