"""Loading a phrase table into memory: ``{source phrase: its best entries}``, pruned per source."""
from __future__ import annotations

import math
from collections.abc import Container, Sequence

from nmt.core.formats.phrase_table import DIRECT_PHRASE_PROB, PathLike, PhraseEntry, PhraseTableError
from nmt.core.formats.phrase_table_reader import PhraseTableReader


def _weighted_log_score(scores: Sequence[float], weights: Sequence[float]) -> float:
    total = 0.0
    for w, s in zip(weights, scores):
        if w:
            total += w * math.log(s)
    return total


def load_phrase_table(path: PathLike, table_limit: int | None = 20,
                      weights: Sequence[float] | None = None, *,
                      skip_bad: bool = False, keep_counts: bool = False,
                      sources: Container[tuple[str, ...]] | None = None) -> dict[tuple[str, ...], list[PhraseEntry]]:
    """Load a table into ``{src tuple: [entries, best first]}``, keeping ``table_limit`` per source.

    Entries are ranked by ``Σ weights[i] · ln(scores[i])``. The default
    weights rank by the direct phrase probability φ(e|f) alone (column 3),
    as the classic Pharaoh/Moses ``ttable-limit`` did. Moses's own
    pre-pruning ranks by the full weighted "future score" of the target
    phrase (all table scores with their tuned weights, plus word penalty and
    an LM estimate), so pass the tuned translation-model weights to get close
    to it; the LM part is not available here. Ties keep file order.
    ``table_limit`` of ``None`` or ``0`` keeps everything (Moses: 0 = no
    limit). To save memory the entries have no ``raw`` line (``None``) and,
    unless ``keep_counts``, no counts (``()``); identical phrases share one
    tuple of interned words.

    ``sources`` (e.g. the set of all source n-grams of a test set, as
    Moses's ``filter-model-given-input.pl`` uses) keeps only those source
    phrases; the lines of the others are skipped unparsed, which is much
    faster and smaller for a whole Multi30k table.
    """
    source_filter = None if sources is None else sources.__contains__
    reader = PhraseTableReader(path, skip_bad=skip_bad, keep_raw=False, intern=True, keep_counts=keep_counts,
                               source_filter=source_filter)
    limit = table_limit or 0
    table: dict[tuple[str, ...], list[tuple[float, int, PhraseEntry]]] = {}
    w: Sequence[float] | None = None
    for entry in reader:
        if w is None:
            n = len(entry.scores)
            if weights is None:
                if n <= DIRECT_PHRASE_PROB:
                    raise PhraseTableError(path, entry.line_no, f"only {n} scores; pass weights explicitly")
                w = [0.0] * n
                w[DIRECT_PHRASE_PROB] = 1.0
            else:
                w = list(weights)
                if len(w) != n:
                    raise ValueError(f"{len(w)} weights for a table with {n} scores ({path})")
        key = -_weighted_log_score(entry.scores, w)
        bucket = table.get(entry.src)
        if bucket is None:
            table[entry.src] = [(key, entry.line_no, entry)]
        else:
            bucket.append((key, entry.line_no, entry))
            if limit and len(bucket) >= 4 * limit:
                bucket.sort(key=lambda x: (x[0], x[1]))
                del bucket[limit:]
    out: dict[tuple[str, ...], list[PhraseEntry]] = {}
    for src, bucket in table.items():
        bucket.sort(key=lambda x: (x[0], x[1]))
        if limit:
            del bucket[limit:]
        out[src] = [e for _, _, e in bucket]
    return out
