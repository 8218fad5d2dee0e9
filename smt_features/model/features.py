"""Features of the phrase-based log-linear model, with Moses's names and sign conventions.

One interface, :class:`Feature`: a named dense feature with ``num_values``
values (Moses's "score components"), labelled ``Name`` (one value) or
``Name_0 … Name_k`` (several, as Moses's MERT tools label them). A feature
has

* a **stateless, phrase-level part** — :meth:`Feature.phrase_values` — that the
  decoder evaluates once per translation option (from the phrase-table
  columns and the phrase itself) and caches;
* where needed a **stateful part** used during search (``stateful = True``):
  the language model (KenLM states) and distance-based distortion (the end
  of the previous source phrase). They also give an *isolation estimate*
  of a phrase (:meth:`Feature.estimate`) for future costs and table-limit
  pruning, as Moses does.

The model score of a translation is ``Σ_i λ_i h_i`` where ``h_i`` are the
feature values summed over the phrases of the derivation — natural logs
throughout (KenLM's log10 are converted; phrase-table probabilities enter
as ``ln p``).

Conventions (Moses's, so that its moses.ini weights mean the same here):

=====================  ==============================================  ==============
feature                value per phrase / hypothesis                   default weight
=====================  ==============================================  ==============
TranslationModel0      ``ln p`` of each phrase-table score column      0.2 each
                       (as many values as the table has columns: 4
                       from training, more once an RNN Encoder–Decoder
                       column or a count column is appended)
LM0 (KENLM)            ``ln p(e_j | history)`` of each target word,      0.5
                       ``<s>`` before the sentence, ``</s>`` after it
Distortion0            ``-|start_i - end_{i-1} - 1|`` (end_0 = -1,        0.3
                       so a first phrase starting at word s costs -s);
                       no cost for the end of the sentence
LexicalReordering0     six values, Moses's msd-bidirectional-fe:         0.3 each
                       ``max(ln p, -100)`` of the reordering table's
                       probability of the phrase's orientation (mono /
                       swap / discontinuous w.r.t. the previous source
                       span; a first phrase is mono iff it starts at 0)
                       — its own pair's prev-probability (values 0-2)
                       and the previous pair's next-probability (3-5);
                       0 for pairs not in the table; no future cost
                       (:mod:`smt_features.model.reordering`)
WordPenalty0           ``-(number of target words)``; with Moses's       -1
                       default weight -1 each word *adds* +1 to the
                       score (a word bonus, tuned by MERT)
PhrasePenalty0         ``+1`` per phrase                                0.2
UnknownWordPenalty0    ``-100`` per source word copied through because    1
                       the table has no translation of it (Moses's
                       ``FloorScore(log 0)``); not tuneable, so Moses
                       leaves it out of n-best lists
=====================  ==============================================  ==============

The language-model feature is :class:`smt_features.model.kenlm_feature.KenLMFeature`.

An unknown word's option carries the word penalty and phrase penalty of its
one-word target phrase and zeros for every translation-model column, as in
Moses.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import ClassVar

from smt_features.model.weights import Weights

#: Moses's floor for ``log(0)`` (``LOWEST_SCORE``); also the unknown-word value.
LOWEST_SCORE = -100.0
LN10 = math.log(10.0)


class Feature:
    """A named dense feature with ``num_values`` values.

    Subclasses set :attr:`kind` (the Moses ``[feature]`` keyword),
    :attr:`stateful`, and implement :meth:`phrase_values` (stateless part)
    and, for stateful features, the methods of their own state.
    """

    kind: ClassVar[str] = "Feature"
    stateful: ClassVar[bool] = False
    #: Weights train-model.perl writes for a new system.
    default_weight: ClassVar[float] = 1.0

    def __init__(self, name: str | None = None, num_values: int = 1, tuneable: bool = True,
                 args: Mapping[str, str] | None = None) -> None:
        if num_values < 1:
            raise ValueError(f"{self.kind}: num_values must be >= 1, got {num_values}")
        self.name = name or f"{self.kind}0"
        self.num_values = int(num_values)
        self.tuneable = tuneable
        #: the remaining ``key=value`` arguments of the moses.ini line, kept for writing it back
        self.args: dict[str, str] = dict(args or {})

    # ------------------------------------------------------------------ naming
    def value_names(self) -> list[str]:
        """``[Name]`` for one value, else ``[Name_0, …, Name_{k-1}]``."""
        if self.num_values == 1:
            return [self.name]
        return [f"{self.name}_{i}" for i in range(self.num_values)]

    def default_weights(self) -> list[float]:
        return [self.default_weight] * self.num_values

    # ------------------------------------------------------------------ stateless part
    def phrase_values(self, src: Sequence[str], tgt: Sequence[str],
                      scores: Sequence[float] | None) -> tuple[float, ...]:
        """Values of one translation option; ``scores`` is ``None`` for an unknown word's copy."""
        return (0.0,) * self.num_values

    def estimate(self, tgt: Sequence[str]) -> float:
        """Isolation estimate of a stateful feature for a target phrase (unweighted, one value)."""
        return 0.0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, num_values={self.num_values})"


class PhraseTableFeature(Feature):
    """``TranslationModel0``: ``ln`` of each phrase-table score column.

    The number of values is the number of score columns of the table
    (Moses's ``num-features``); the table itself is held by the decoder's
    :class:`smt_features.decode.table.PhraseTable`.
    """

    kind = "PhraseDictionaryMemory"
    default_weight = 0.2

    def __init__(self, name: str | None = "TranslationModel0", num_values: int = 4, tuneable: bool = True,
                 path: str | None = None, table_limit: int = 20, args: Mapping[str, str] | None = None,
                 kind: str | None = None) -> None:
        super().__init__(name, num_values, tuneable, args)
        self.path = path
        self.table_limit = table_limit
        if kind:
            self.kind = kind  # type: ignore[misc]  # e.g. PhraseDictionaryCompact spelled in an ini

    def phrase_values(self, src, tgt, scores):
        if scores is None:  # unknown word: no table scores (Moses leaves them 0)
            return (0.0,) * self.num_values
        if len(scores) != self.num_values:
            raise ValueError(f"{self.name}: {len(scores)} scores for a {self.num_values}-feature table")
        log = math.log
        return tuple(log(s) if s > 0.0 else LOWEST_SCORE for s in scores)


class WordPenaltyFeature(Feature):
    """``WordPenalty0``: ``-(number of target words)`` (Moses's sign; its default weight is -1)."""

    kind = "WordPenalty"
    default_weight = -1.0

    def phrase_values(self, src, tgt, scores):
        return (-float(len(tgt)),)


class PhrasePenaltyFeature(Feature):
    """``PhrasePenalty0``: ``+1`` per phrase."""

    kind = "PhrasePenalty"
    default_weight = 0.2

    def phrase_values(self, src, tgt, scores):
        return (1.0,)


class UnknownWordPenaltyFeature(Feature):
    """``UnknownWordPenalty0``: ``-100`` for each source word copied through untranslated.

    Not tuneable by default (Moses): left out of n-best lists, weight 1.
    """

    kind = "UnknownWordPenalty"
    default_weight = 1.0

    def __init__(self, name: str | None = None, num_values: int = 1, tuneable: bool = False,
                 args: Mapping[str, str] | None = None) -> None:
        super().__init__(name, num_values, tuneable, args)

    def phrase_values(self, src, tgt, scores):
        return (LOWEST_SCORE if scores is None else 0.0,)


class DistortionFeature(Feature):
    """``Distortion0``: ``-|start_i - end_{i-1} - 1|``, state = end of the previous source phrase (−1 at start)."""

    kind = "Distortion"
    stateful = True
    default_weight = 0.3

    @staticmethod
    def begin_state() -> int:
        return -1

    @staticmethod
    def value(prev_end: int, start: int) -> float:
        return -float(abs(start - prev_end - 1))


class FeatureSet:
    """The ordered features of a model and the flat layout of their values.

    Values of all features are concatenated in feature order into one
    vector (``h``), weights likewise (``λ``). ``score(h) = Σ λ_i h_i``.
    """

    def __init__(self, features: Sequence[Feature]) -> None:
        names = [f.name for f in features]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"duplicate feature name(s): {sorted(dup)}")
        self.features = list(features)
        self.offsets: list[int] = []
        off = 0
        for f in self.features:
            self.offsets.append(off)
            off += f.num_values
        self.size = off
        self._by_name = {f.name: i for i, f in enumerate(self.features)}

    def __iter__(self):
        return iter(self.features)

    def __len__(self) -> int:
        return len(self.features)

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def get(self, name: str) -> Feature:
        return self.features[self._by_name[name]]

    def index(self, name: str) -> int:
        return self._by_name[name]

    def slice(self, name: str) -> slice:
        i = self._by_name[name]
        return slice(self.offsets[i], self.offsets[i] + self.features[i].num_values)

    def value_names(self) -> list[str]:
        return [n for f in self.features for n in f.value_names()]

    def of_kind(self, cls: type) -> list[Feature]:
        return [f for f in self.features if isinstance(f, cls)]

    def layout(self) -> list[tuple[str, int]]:
        """``[(feature name, number of values), …]`` in feature order."""
        return [(f.name, f.num_values) for f in self.features]

    def weight_vector(self, weights: Mapping[str, Sequence[float]], *, use_defaults: bool = False) -> list[float]:
        """Flat ``λ`` from ``{feature name: values}``; a missing feature raises ``KeyError``
        unless ``use_defaults`` (then :meth:`Feature.default_weights`)."""
        defaults = {f.name: f.default_weights() for f in self.features
                    if use_defaults or isinstance(f, UnknownWordPenaltyFeature)}
        out = Weights(weights).to_vector(self.layout(), defaults=defaults)
        unknown = set(weights) - set(self._by_name)
        if unknown:
            raise KeyError(f"weights for unknown feature(s): {sorted(unknown)}")
        return out

    def split(self, values: Sequence[float]) -> dict[str, list[float]]:
        """``{feature name: its values}`` from a flat vector."""
        if len(values) != self.size:
            raise ValueError(f"expected {self.size} values, got {len(values)}")
        return {f.name: list(values[o:o + f.num_values]) for f, o in zip(self.features, self.offsets)}

    def nbest_order(self) -> list[Feature]:
        """Tuneable features in the order Moses prints them in n-best lists: stateful first, then stateless."""
        return ([f for f in self.features if f.stateful and f.tuneable]
                + [f for f in self.features if not f.stateful and f.tuneable])

    @staticmethod
    def dot(weights: Sequence[float], values: Sequence[float]) -> float:
        return math.fsum(w * v for w, v in zip(weights, values))
