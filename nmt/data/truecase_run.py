"""``nmt-truecase``'s options and work: train a Moses truecase model, truecase or detruecase a file."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nmt.core.config import field
from nmt.data.truecase import Truecaser, detruecase, map_file, train_file
from nmt.core.errors import UsageError, refuse_overwriting_inputs


@dataclass
class TruecaseConfig:
    train: list[str] = field([], help="train: tokenized text FILE(s) to learn the casings from (writes --model)")
    model: str | None = field(None, help="the truecase model (Moses's format): written by --train, read to truecase")
    input: str | None = field(None, help="tokenized text to truecase (with --model) or to detruecase")
    output: str | None = field(None, help="where the truecased or detruecased text goes")
    detruecase: bool = field(False, help="detruecase --input (Moses's detruecase.perl): no --model needed")
    possibly_use_first_token: bool = field(False, help="train: count lowercase sentence starts, and a capitalised "
                                                       "one-token line at 0.1 (train-truecaser.perl's option)")


def run(cfg: TruecaseConfig) -> dict[str, Any]:
    """Train, truecase or detruecase as ``cfg`` says (see ``nmt-truecase --help``)."""
    if cfg.train:
        if not cfg.model or cfg.input or cfg.output or cfg.detruecase:
            raise UsageError("train with --train FILE... --model OUT (and no --input/--output/--detruecase)")
        refuse_overwriting_inputs({"--model": cfg.model}, {f"--train {p}": p for p in cfg.train})
        return train_file(list(cfg.train), cfg.model, cfg.possibly_use_first_token)
    if not cfg.input or not cfg.output:
        raise UsageError("give --train FILE --model OUT, or --model M --input F --output O, "
                         "or --detruecase --input F --output O")
    if cfg.detruecase == bool(cfg.model):
        raise UsageError("give either --model (truecase) or --detruecase, not both or neither")
    refuse_overwriting_inputs({"--output": cfg.output}, {"--input": cfg.input, "--model": cfg.model})
    if cfg.detruecase:
        return {"lines": map_file(detruecase, cfg.input, cfg.output, "detruecase"), "output": cfg.output}
    truecaser = Truecaser.load(cfg.model)
    return {"lines": map_file(truecaser, cfg.input, cfg.output, "truecase"), "output": cfg.output}
