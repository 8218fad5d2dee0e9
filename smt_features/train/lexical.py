"""Word translation tables (Moses ``lex.f2e`` / ``lex.e2f``) and the lexical weights they give phrase pairs.

Lexical weighting (Koehn, Och & Marcu 2003), with f = source and e = target:
lex(e|f, a) = Π_j [ 1/|{i: (i, j) ∈ a}| · Σ_{(i, j) ∈ a} w(e_j|f_i) ], and
w(e_j|NULL) for a target word without links; lex(f|e) symmetrically.
Word translation tables from the symmetrized alignment of the whole
corpus (Moses ``get_lexical``): w(e|f) = c(f, e) / c(f), w(f|e) =
c(f, e) / c(e), where an unaligned word counts as aligned to ``NULL``.
They are written as ``lex.f2e`` (``e f w(e|f)``) and ``lex.e2f``
(``f e w(f|e)``) with ``%.7f`` like Moses, but the scores use the exact
values (Moses reads the rounded file back, so its lex columns can differ
in the last printed digit for rare words).

The literal word ``NULL`` stands for the empty word in the lexical tables,
as in Moses (a real token ``NULL`` would share its statistics).
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from nmt.core.io import atomic_write

from smt_features.train.align import Links

PathLike = str | os.PathLike[str]
NULL = "NULL"


def count_word_alignments(src: Sequence[str], tgt: Sequence[str], alignment: Sequence[tuple[int, int]],
                          word_pairs: dict, f_totals: dict, e_totals: dict) -> None:
    """Moses ``get_lexical`` counts of one sentence pair (``NULL`` for unaligned words)."""
    n_f, n_e = len(src), len(tgt)
    f_aligned = [False] * n_f
    e_aligned = [False] * n_e
    for i, j in set(alignment):
        if not (0 <= i < n_f and 0 <= j < n_e):
            raise ValueError(f"alignment point {i}-{j} out of range for lengths {n_f}, {n_e}")
        f_aligned[i] = e_aligned[j] = True
        f, e = src[i], tgt[j]
        word_pairs[(f, e)] = word_pairs.get((f, e), 0) + 1
        f_totals[f] = f_totals.get(f, 0) + 1
        e_totals[e] = e_totals.get(e, 0) + 1
    for j in range(n_e):
        if not e_aligned[j]:
            e = tgt[j]
            word_pairs[(NULL, e)] = word_pairs.get((NULL, e), 0) + 1
            e_totals[e] = e_totals.get(e, 0) + 1
            f_totals[NULL] = f_totals.get(NULL, 0) + 1
    for i in range(n_f):
        if not f_aligned[i]:
            f = src[i]
            word_pairs[(f, NULL)] = word_pairs.get((f, NULL), 0) + 1
            f_totals[f] = f_totals.get(f, 0) + 1
            e_totals[NULL] = e_totals.get(NULL, 0) + 1


class LexicalTable:
    """Word translation probabilities from alignment counts (Moses ``get_lexical``)."""

    def __init__(self, word_pairs: dict, f_totals: dict, e_totals: dict) -> None:
        self.word_pairs = word_pairs
        self.f_totals = f_totals
        self.e_totals = e_totals
        #: w(e|f) = c(f, e) / c(f)   (lex.f2e)
        self.e_given_f = {fe: c / f_totals[fe[0]] for fe, c in word_pairs.items()}
        #: w(f|e) = c(f, e) / c(e)   (lex.e2f)
        self.f_given_e = {fe: c / e_totals[fe[1]] for fe, c in word_pairs.items()}

    @classmethod
    def from_corpus(cls, src_sents: Sequence[Sequence[str]], tgt_sents: Sequence[Sequence[str]],
                    alignments: Sequence[Links]) -> "LexicalTable":
        return cls.from_pairs(zip(src_sents, tgt_sents, alignments))

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[Sequence[str], Sequence[str], Links]]) -> "LexicalTable":
        """The tables from ``(src tokens, tgt tokens, links)`` triples, read once (a stream is enough)."""
        word_pairs: dict = {}
        f_totals: dict = {}
        e_totals: dict = {}
        for s, t, a in pairs:
            count_word_alignments(s, t, a, word_pairs, f_totals, e_totals)
        return cls(word_pairs, f_totals, e_totals)

    def target_factors(self, src: Sequence[str], tgt: Sequence[str],
                       t2s: Sequence[Sequence[int]]) -> list[float]:
        """Per target word: mean w(e|f) over its links (ascending source index), or w(e|NULL)."""
        table = self.e_given_f
        out = []
        for j, links in enumerate(t2s):
            e = tgt[j]
            if not links:
                out.append(table[(NULL, e)])
            else:
                total = 0.0
                for i in links:
                    total += table[(src[i], e)]
                out.append(total / len(links))
        return out

    def source_factors(self, src: Sequence[str], tgt: Sequence[str],
                       s2t: Sequence[Sequence[int]]) -> list[float]:
        """Per source word: mean w(f|e) over its links (ascending target index), or w(f|NULL)."""
        table = self.f_given_e
        out = []
        for i, links in enumerate(s2t):
            f = src[i]
            if not links:
                out.append(table[(f, NULL)])
            else:
                total = 0.0
                for j in links:
                    total += table[(f, tgt[j])]
                out.append(total / len(links))
        return out

    def lex_e_given_f(self, src: Sequence[str], tgt: Sequence[str], t2s: Sequence[Sequence[int]]) -> float:
        """lex(e|f) of a phrase pair under the target→source map ``t2s`` (Moses ``score``)."""
        score = 1.0
        for x in self.target_factors(src, tgt, t2s):
            score *= x
        return score

    def lex_f_given_e(self, src: Sequence[str], tgt: Sequence[str], s2t: Sequence[Sequence[int]]) -> float:
        """lex(f|e) of a phrase pair under the source→target map ``s2t`` (Moses ``score --Inverse``)."""
        score = 1.0
        for x in self.source_factors(src, tgt, s2t):
            score *= x
        return score

    def write(self, f2e_path: PathLike, e2f_path: PathLike) -> None:
        """Moses's ``lex.f2e`` (``e f w(e|f)``) and ``lex.e2f`` (``f e w(f|e)``), ``%.7f``, sorted."""
        keys = sorted(self.word_pairs)
        with atomic_write(f2e_path) as fh:
            fh.writelines(f"{e} {f} {self.e_given_f[(f, e)]:.7f}\n" for f, e in keys)
        with atomic_write(e2f_path) as fh:
            fh.writelines(f"{f} {e} {self.f_given_e[(f, e)]:.7f}\n" for f, e in keys)
