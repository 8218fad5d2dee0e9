"""Search options of the decoder (:class:`SearchOptions`), with Moses's defaults, and reading them from a moses.ini."""
from __future__ import annotations

import math
from dataclasses import dataclass

from smt_features.decode.hypothesis import NEG_INF


@dataclass
class SearchOptions:
    """Search settings; defaults are Moses's (``stack 200``, ``beam-threshold 1e-5``,
    ``distortion-limit 6`` from train-model.perl, table limit 20)."""

    stack_size: int = 200
    beam_threshold: float = 1e-5
    distortion_limit: int = 6
    table_limit: int = 20
    max_phrase_length: int = 20
    early_discarding_threshold: float = 0.0
    nbest_factor: int = 20
    #: skip options whose score bound cannot reach the target stack (exact; off = plain Moses loop)
    bound_pruning: bool = True
    #: tighten those bounds with per-word maxima read from the LM's ARPA file (exact)
    lm_upper_bounds: bool = True
    #: 'python', 'compiled' (smt_features.decode.fast_search; error if not built) or 'auto' (compiled when
    #: built and the model is supported, else Python); both give identical results
    search: str = "auto"

    def __post_init__(self) -> None:
        if self.stack_size < 1:
            raise ValueError("stack size must be >= 1")
        if not (0.0 <= self.beam_threshold <= 1.0):
            raise ValueError("beam-threshold is a probability ratio in [0, 1] (0 = no beam)")
        if self.early_discarding_threshold < 0.0:
            raise ValueError("early-discarding-threshold is a probability ratio >= 0 (0 = off)")
        if self.max_phrase_length < 1:
            raise ValueError("max-phrase-length must be >= 1")
        if self.table_limit < 0:
            raise ValueError("table-limit must be >= 0 (0 = no limit)")
        if self.search not in ("python", "compiled", "auto"):
            raise ValueError(f"search must be 'python', 'compiled' or 'auto', got {self.search!r}")

    @property
    def beam_width(self) -> float:
        """``ln(beam-threshold)`` (Moses's ``TransformScore``); ``-inf`` = no threshold pruning."""
        return math.log(self.beam_threshold) if self.beam_threshold > 0 else NEG_INF

    @property
    def early_discarding_width(self) -> float:
        return (math.log(self.early_discarding_threshold) if self.early_discarding_threshold > 0
                else NEG_INF)


def search_options_from_config(config, **overrides) -> SearchOptions:
    """:class:`SearchOptions` from a moses.ini's one-value sections, then ``overrides`` (``None`` = keep)."""
    values = dict(
        stack_size=config.int_option("stack", 200),
        beam_threshold=config.float_option("beam-threshold", 1e-5),
        distortion_limit=config.int_option("distortion-limit", 6),
        max_phrase_length=config.int_option("max-phrase-length", 20),
        early_discarding_threshold=config.float_option("early-discarding-threshold", 0.0),
    )
    values.update({k: v for k, v in overrides.items() if v is not None})
    return SearchOptions(**values)
