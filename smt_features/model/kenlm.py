"""KenLM n-gram language model queries (natural log) through the ``kenlm`` module, and ``smt-kenlm eval``.

Queries go through the ``kenlm`` Python module. Everything returned here is a **natural log** (ARPA files
and KenLM work in log10; we multiply by ln 10). Estimation (``lmplz``, ``build_binary``) is
:mod:`smt_features.train.kenlm_build`'s job; the literal ``<unk>`` is rewritten to ``map_unk`` here
as it was there (see that module's docstring).

Command line (``smt-kenlm``, :mod:`smt_features.cli.kenlm`)::

    smt-kenlm train --text ptb.train.txt --out-prefix work/lm/ptb5 --order 5
    smt-kenlm eval --model work/lm/ptb5.binary --text ptb.test.txt
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, NamedTuple, Sequence

import yaml

from nmt.core import config as C
from nmt.core.io import DataError, atomic_write, iter_lines
from nmt.core.errors import refuse_overwriting_inputs
from nmt.core.perplexity import LN10, PerplexityResult, format_result, kenlm_perplexity, split_words

from smt_features.train.kenlm_text import DEFAULT_MAP_UNK, UNK, check_input_file, check_map_unk


class TokenScore(NamedTuple):
    ln_prob: float      # natural log of p(token | context)
    ngram_len: int      # length of the n-gram KenLM matched
    is_oov: bool        # the token was scored as <unk>


#: how a KenLM binary is brought into memory (``load=``; KenLM's ``util::LoadMethod``, the same numbers in its
#: C++ API): ``lazy`` maps the file and reads pages as they are touched (memory and start-up do not grow
#: with the file; the default), ``populate`` maps it and reads it all at once (``MAP_POPULATE``; KenLM's and
#: Moses's default), ``read`` reads it into allocated memory. An ARPA file is always parsed into memory.
LOAD_METHODS = {"lazy": 0, "populate": 2, "read": 3}
DEFAULT_LOAD = "lazy"


class KenLMScorer:
    """Natural-log queries of an ARPA or KenLM binary model through the ``kenlm`` module.

    ``map_unk`` rewrites the token ``<unk>`` before lookup; it must match what
    the model was estimated with (see the module docstring). A model that was
    not estimated with the rewrite scores the rewritten word as OOV, which is
    what it would have done with ``<unk>`` anyway. ``load``: one of
    :data:`LOAD_METHODS` (a binary model's loading; queries score the same).
    """

    def __init__(self, path: str | Path, map_unk: str | None = DEFAULT_MAP_UNK, load: str = DEFAULT_LOAD):
        import kenlm  # imported here so importing this module needs no compiled extension

        check_map_unk(map_unk)
        if load not in LOAD_METHODS:
            raise ValueError(f"KenLM load method must be one of {', '.join(LOAD_METHODS)}, not {load!r}")
        self.path = check_input_file(path, "KenLM model")
        self.load = load
        self._kenlm = kenlm
        config = kenlm.Config()
        config.load_method = getattr(kenlm.LoadMethod, {"lazy": "LAZY", "populate": "POPULATE_OR_READ",
                                                        "read": "READ"}[load])
        try:
            self.model = kenlm.Model(str(self.path), config)
        except OSError as err:  # kenlm: "Cannot read model '...' (... FormatLoadException ...)"
            detail = str(err)
            if "Cannot read model" not in detail:
                raise
            raise DataError(f"{self.path}: not a KenLM model (ARPA or binary) that KenLM can read: "
                            f"{detail.split('(', 1)[-1].rstrip(')').strip()}") from None
        self.map_unk = map_unk

    @property
    def order(self) -> int:
        return int(self.model.order)

    def _word(self, word: str) -> str:
        return self.map_unk if (self.map_unk is not None and word == UNK) else word

    def _sentence(self, tokens: str | Sequence[str]) -> str:
        words = split_words(tokens) if isinstance(tokens, str) else list(tokens)
        if self.map_unk is not None:
            words = [self._word(w) for w in words]
        sent = " ".join(words)
        if len(split_words(sent)) != len(words):
            raise ValueError("tokens must be non-empty and contain no whitespace")
        return sent

    def score_sentence(self, tokens: str | Sequence[str], bos: bool = True, eos: bool = True) -> float:
        """ln p(tokens [</s>] | [<s>]); by default the whole sentence including ``</s>``."""
        return self.model.score(self._sentence(tokens), bos=bos, eos=eos) * LN10

    def token_scores(self, tokens: str | Sequence[str], bos: bool = True, eos: bool = True) -> list[TokenScore]:
        """One :class:`TokenScore` per token, plus a last one for ``</s>`` when ``eos``."""
        return [TokenScore(lp * LN10, int(n), bool(oov))
                for lp, n, oov in self.model.full_scores(self._sentence(tokens), bos=bos, eos=eos)]

    def begin_state(self):
        """A ``kenlm.State`` for the start of a sentence (context ``<s>``)."""
        state = self._kenlm.State()
        self.model.BeginSentenceWrite(state)
        return state

    def null_state(self):
        """A ``kenlm.State`` with empty context."""
        state = self._kenlm.State()
        self.model.NullContextWrite(state)
        return state

    def score_word(self, state, word: str):
        """``(ln p(word | state), new_state)``; ``state`` is left unchanged.

        States are hashable and comparable (for hypothesis recombination).
        Score ``"</s>"`` at the end of a sentence.
        """
        new_state = self._kenlm.State()
        lp = self.model.BaseScore(state, self._word(word), new_state)
        return lp * LN10, new_state

    def end_sentence(self, state) -> float:
        """ln p(</s> | state)."""
        return self.score_word(state, "</s>")[0]

    def vocab_contains(self, word: str) -> bool:
        """True when ``word`` (after ``map_unk``) is in the model's vocabulary."""
        return self._word(word) in self.model

    def perplexity(self, lines: Iterable[str]) -> PerplexityResult:
        """See :func:`nmt.core.perplexity.kenlm_perplexity`."""
        return kenlm_perplexity(self, lines)

    def __repr__(self) -> str:
        return f"KenLMScorer({str(self.path)!r}, order={self.order}, map_unk={self.map_unk!r}, load={self.load!r})"


# --------------------------------------------------------------------------- smt-kenlm eval

@dataclass
class KenLMEvalConfig:
    """Options of ``smt-kenlm eval``."""

    model: str = C.field("", help="ARPA file or KenLM binary", required=True)
    text: str = C.field("", help="text to score, one tokenized sentence per line (plain or .gz)", required=True)
    map_unk: str | None = C.field(None, help="rewrite <unk> to this word before lookup; default: the value "
                                             f"recorded in the model's .config.yaml, else {DEFAULT_MAP_UNK}; "
                                             "'' = no rewrite")
    name: str = C.field("", help="label of the result line (default: model and text names)")
    json_out: str = C.field("", help="also write the result as JSON here")


def sidecar_path(model_path: Path) -> Path:
    """The ``.config.yaml`` record ``smt-kenlm train`` wrote beside a model (``ptb5.binary``: ``ptb5.config.yaml``)."""
    stem = model_path.name
    for suffix in (".binary", ".arpa.gz", ".arpa", ".bin", ".klm"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    return model_path.with_name(stem + ".config.yaml")


def recorded_map_unk(model_path: Path) -> str:
    """The ``<unk>`` mapping the model was built with, from its sidecar record (``DEFAULT_MAP_UNK`` without one)."""
    side = sidecar_path(model_path)
    try:
        recorded = yaml.safe_load(side.read_text(encoding="utf-8")) if side.is_file() else None
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise DataError(f"{side}: the model's record is not readable YAML ({err}); "
                        "pass --map-unk to skip it") from None
    return recorded.get("map_unk", DEFAULT_MAP_UNK) if isinstance(recorded, dict) else DEFAULT_MAP_UNK


def evaluate_lm(cfg: KenLMEvalConfig, config_path: str | None = None) -> int:
    """``smt-kenlm eval``: the perplexity line of ``cfg.text`` under ``cfg.model`` (and ``--json-out``)."""
    model_path = Path(cfg.model)
    refuse_overwriting_inputs({"--json-out": cfg.json_out or None},
                              {"--model": cfg.model, "--text": cfg.text, "--config": config_path})
    # the text first (cheap): a missing, empty or unreadable text is reported before the model is loaded
    lines = iter_lines(cfg.text, allow_empty=True)  # strict UTF-8 (FILE:LINE); an empty line is a sentence
    first = next(lines, None)
    if first is None:
        raise DataError(f"{cfg.text}: empty file: no sentence to score")
    map_unk = recorded_map_unk(model_path) if cfg.map_unk is None else cfg.map_unk
    scorer = KenLMScorer(model_path, map_unk=map_unk or None)
    res = kenlm_perplexity(scorer, itertools.chain([first], lines))
    name = cfg.name or f"kenlm {model_path.name} on {Path(cfg.text).name}"
    unk_note = "OOVs included, scored with p(<unk>) times context back-offs"
    if map_unk:
        unk_note += f"; the text's literal <unk> read as the word {map_unk!r}"
    print(format_result(res, name, unk=unk_note))
    if cfg.json_out:
        with atomic_write(cfg.json_out) as fh:
            fh.write(json.dumps({"name": name, "model": str(model_path), "text": cfg.text,
                                 "map_unk": map_unk or None, **res.to_dict()}, indent=2) + "\n")
    return 0
