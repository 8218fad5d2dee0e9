"""From the decoder's derivations to the API's hypotheses: n-best entries as ``smt-decode`` writes them (values
rounded to Moses's 6 significant digits, as the reranking reads them back), each feature's values and weights,
and the phrase segmentation with the word alignment of every phrase pair."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from nmt.core.formats.nbest import NBestEntry, format_value
from smt_features.decode.decoder import Decoder
from smt_features.decode.hypothesis import Translation
from smt_features.serve.alignments import PhraseAlignments
from smt_features.serve.results import FeatureScore, Segment


def moses_value(value: float) -> float:
    """A number as it comes back from a Moses n-best line (``%g``, 6 significant digits): what smt-rerank reads."""
    return float(format_value(value))


def nbest_entry(decoder: Decoder, tr: Translation, sent_id: int) -> NBestEntry:
    """The n-best line ``smt-decode --n-best-list`` writes for ``tr``, as ``smt-rerank`` reads it back."""
    groups = [(name, [moses_value(v) for v in vals]) for name, vals in decoder.nbest_features(tr.values)]
    return NBestEntry(sent_id, list(tr.tokens), groups, moses_value(tr.score))


def decoder_features(decoder: Decoder, tr: Translation) -> list[FeatureScore]:
    """Every feature of the decoder with its values and moses.ini weights, Moses's n-best order first, then the
    features left out of n-best lists (``UnknownWordPenalty0``): their contributions add up to ``tr.score``."""
    split, weights = decoder.features.split(tr.values), decoder.weight_dict()
    order = decoder.features.nbest_order()
    order += [f for f in decoder.features if f not in order]
    return [FeatureScore(f.name, list(split[f.name]), list(weights[f.name]), f.tuneable) for f in order]


def entry_features(entry: NBestEntry, weights: Mapping[str, Sequence[float]]) -> list[FeatureScore]:
    """The feature groups of a (reranked) n-best entry with their reranking weights."""
    return [FeatureScore(name, list(vals), list(weights[name])) for name, vals in entry.features]


def segments(tr: Translation, source: Sequence[str], alignments: PhraseAlignments | None) -> list[Segment]:
    """The derivation's phrases in target order; with ``alignments`` each carries its pair's word alignment (an
    unknown word passed through aligns to itself, ``0-0``, as Moses's unknown-word option does)."""
    out: list[Segment] = []
    pos = 0
    for start, end, target in tr.segments:
        src = list(source[start:end + 1])
        tgt = list(target)
        points: list[tuple[int, int]] = []
        if alignments is not None:
            points = alignments.lookup(src, tgt)
            if not points and len(src) == 1 and src == tgt:
                points = [(0, 0)]
        out.append(Segment(start, end, pos, pos + len(tgt) - 1, src, tgt, points))
        pos += len(tgt)
    return out
