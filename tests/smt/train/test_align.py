"""Symmetrization (Koehn's heuristics), Pharaoh I/O and the eflomal wrapper."""
from __future__ import annotations

import pytest

from nmt.core.io import DataError
from smt_features.train import aligner as aligner_mod
from smt_features.train.aligner import EflomalOptions, align_files, eflomal_align
from smt_features.train.align import (
    SYMMETRIZATIONS,
    format_pharaoh,
    parse_pharaoh,
    read_alignments,
    symmetrize,
    symmetrize_corpus,
    write_alignments,
)

# A 5x5 example (source index, target index), worked by hand:
#   forward (e2f, one source word per target word): t0-s0 t1-s1 t2-s2 t3-s0 t4-s4
#   reverse (f2e, one target word per source word): s0-t0 s1-t1 s3-t2 s4-t0
FORWARD = [(0, 0), (1, 1), (2, 2), (0, 3), (4, 4)]
REVERSE = [(0, 0), (1, 1), (3, 2), (4, 0)]
EXPECTED = {
    "intersection": [(0, 0), (1, 1)],
    "union": [(0, 0), (0, 3), (1, 1), (2, 2), (3, 2), (4, 0), (4, 4)],
    # grow-diag: (1,1) grows diagonally to (2,2) (both words unaligned), which grows to (3,2)
    # (s3 unaligned); (0,3), (4,4), (4,0) are not neighbours of the grown alignment.
    "grow-diag": [(0, 0), (1, 1), (2, 2), (3, 2)],
    # final(e2f) adds (0,3) (t3 unaligned) and (4,4) (both unaligned); final(f2e) then finds
    # (4,0) with both words aligned and skips it.
    "grow-diag-final": [(0, 0), (0, 3), (1, 1), (2, 2), (3, 2), (4, 4)],
    # final-and needs both words unaligned: (0,3) is skipped (s0 is aligned), (4,4) is added.
    "grow-diag-final-and": [(0, 0), (1, 1), (2, 2), (3, 2), (4, 4)],
}


@pytest.mark.parametrize("method", SYMMETRIZATIONS)
def test_symmetrize_hand_example(method):
    assert symmetrize(FORWARD, REVERSE, 5, 5, method) == EXPECTED[method]


def test_final_sees_points_added_before():
    # one source word, three target words: both directions link s0 to t0, forward also to t2
    # (not a neighbour of (0,0)): final adds it (t2 unaligned), final-and does not (s0 aligned)
    assert symmetrize([(0, 0), (0, 2)], [(0, 0)], 1, 3, "grow-diag") == [(0, 0)]
    assert symmetrize([(0, 0), (0, 2)], [(0, 0)], 1, 3, "grow-diag-final") == [(0, 0), (0, 2)]
    assert symmetrize([(0, 0), (0, 2)], [(0, 0)], 1, 3, "grow-diag-final-and") == [(0, 0)]
    # empty intersection: final-and takes the first forward point, then blocks the second
    assert symmetrize([(0, 0), (0, 1)], [(1, 1)], 2, 2, "grow-diag-final-and") == [(0, 0), (1, 1)]
    # grow-diag adds the vertical neighbour (0,1) of (0,0): target 1 is unaligned
    assert symmetrize([(0, 0)], [(0, 0), (0, 1)], 1, 2, "grow-diag") == [(0, 0), (0, 1)]


def test_symmetrize_checks():
    with pytest.raises(ValueError, match="unknown symmetrization"):
        symmetrize([], [], 1, 1, "grow")
    with pytest.raises(ValueError, match="out of range"):
        symmetrize([(1, 0)], [], 1, 1)


def test_symmetrize_corpus_parallel_equals_serial():
    fwd = [FORWARD] * 2500
    rev = [REVERSE] * 2500
    lengths = [(5, 5)] * 2500
    serial = symmetrize_corpus(fwd, rev, lengths, processes=1)
    assert symmetrize_corpus(fwd, rev, lengths, processes=2) == serial
    assert serial[0] == EXPECTED["grow-diag-final-and"]
    with pytest.raises(ValueError):
        symmetrize_corpus(fwd, rev[:-1], lengths)


def test_pharaoh_io(tmp_path):
    assert parse_pharaoh("0-0 2-1  1-3\n") == [(0, 0), (2, 1), (1, 3)]
    assert format_pharaoh([(0, 0), (2, 1)]) == "0-0 2-1"
    assert parse_pharaoh("") == []
    for bad in ("0-", "a-1", "1:2", "-1-0"):
        with pytest.raises(ValueError):
            parse_pharaoh(bad)
    with pytest.raises(ValueError, match="out of range"):
        parse_pharaoh("0-3", 2, 3)
    path = tmp_path / "a" / "aligned"
    write_alignments(path, [[(0, 0)], [], [(1, 2), (0, 1)]])
    assert path.read_text() == "0-0\n\n1-2 0-1\n"
    assert read_alignments(path, [(1, 1), (1, 1), (2, 3)]) == [[(0, 0)], [], [(1, 2), (0, 1)]]
    with pytest.raises(DataError, match=":3:"):
        read_alignments(path, [(1, 1), (1, 1), (2, 2)])
    with pytest.raises(DataError):
        read_alignments(path, [(1, 1), (1, 1)])


SRC = ["the house is small", "the house is big", "a small house", "the big house is old", "old house"]
TGT = ["das haus ist klein", "das haus ist groß", "ein kleines haus", "das große haus ist alt", "altes haus"]


def test_eflomal_directions():
    src = [s.split() for s in SRC] * 20
    tgt = [t.split() for t in TGT] * 20
    # eflomal is an unseeded Gibbs sampler (its binary takes no seed): with its default 2 samplers a run
    # now and then leaves one of the 5 sentence kinds (20 copies) misaligned: measured 5 of 130 runs below
    # 95 (60, 81, 86, 89, 92). 8 samplers: 299 of 300 runs linked all 100, one 94 (4 samplers: 1 of 130 at 80).
    forward, reverse = eflomal_align(src, tgt, options=EflomalOptions(n_samplers=8))
    assert len(forward) == len(reverse) == 100
    for s, t, fwd, rev in zip(src, tgt, forward, reverse):
        assert all(0 <= i < len(s) and 0 <= j < len(t) for i, j in fwd + rev)
        assert len({j for _, j in fwd}) == len(fwd)        # forward: <= 1 source word per target word
        assert len({i for i, _ in rev}) == len(rev)        # reverse: <= 1 target word per source word
    # "house" <-> "haus" in every sentence pair: eflomal must link them (nearly) always; the margin
    # allows one sentence kind lost to a stuck sampler (not seen in 300 runs with 8 samplers)
    house = sum((s.index("house"), t.index("haus")) in symmetrize(f, r, len(s), len(t))
                for s, t, f, r in zip(src, tgt, forward, reverse))
    assert house >= 80
    assert eflomal_align([], []) == ([], [])
    with pytest.raises(ValueError):
        eflomal_align([["a"]], [])


def test_lowercase_is_for_the_aligner_only(monkeypatch, tmp_path):
    from eflomal import cython as efc

    seen = []
    real = efc.read_text

    def spy(lines, lowercase, prefix, suffix):
        lines = list(lines)
        seen.append((lines, lowercase))
        return real(lines, lowercase, prefix, suffix)

    monkeypatch.setattr(efc, "read_text", spy)
    (tmp_path / "s").write_text("The House\nthe house\n")
    (tmp_path / "t").write_text("Das Haus\ndas haus\n")
    links = align_files(tmp_path / "s", tmp_path / "t", tmp_path / "out", lowercase=True)
    assert [flag for _, flag in seen] == [True, True]
    assert seen[0][0] == ["The House", "the house"]          # eflomal lowercases internally
    assert len(links) == 2 and (tmp_path / "out").read_text().count("\n") == 2
    seen.clear()
    eflomal_align([["A"]], [["B"]], lowercase=False)
    assert [flag for _, flag in seen] == [False, False]


def test_alignment_line_keeps_token_count():
    assert aligner_mod._alignment_line(["a", "b\u00a0c", ""], False) == "a b_c _"


def _reference(forward, reverse, n_src, n_tgt, method):
    """Koehn's pseudo code, literally: scan every (e, f) cell, read the current alignment."""
    fwd, rev = set(forward), set(reverse)
    union = fwd | rev
    a = set(fwd & rev)

    def e_aligned(e):
        return any((f, e) in a for f in range(n_src))

    def f_aligned(f):
        return any((f, e) in a for e in range(n_tgt))

    neighbours = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))
    added = True
    while added:
        added = False
        for e in range(n_tgt):
            for f in range(n_src):
                if (f, e) in a:
                    for de, df in neighbours:
                        e2, f2 = e + de, f + df
                        if (not e_aligned(e2) or not f_aligned(f2)) and (f2, e2) in union and (f2, e2) not in a:
                            a.add((f2, e2))
                            added = True
    if method == "grow-diag":
        return sorted(a)
    for direction in (fwd, rev):
        for e in range(n_tgt):
            for f in range(n_src):
                if (f, e) in direction and (f, e) not in a:
                    if method == "grow-diag-final-and":
                        ok = not e_aligned(e) and not f_aligned(f)
                    else:
                        ok = not e_aligned(e) or not f_aligned(f)
                    if ok:
                        a.add((f, e))
    return sorted(a)


@pytest.mark.parametrize("method", ["grow-diag", "grow-diag-final", "grow-diag-final-and"])
def test_symmetrize_matches_literal_pseudo_code(method):
    import random

    rng = random.Random(7)
    for _ in range(300):
        n_src, n_tgt = rng.randint(1, 9), rng.randint(1, 9)
        # directional alignments as the aligners give them: <= 1 link per target / source word
        forward = [(rng.randrange(n_src), j) for j in range(n_tgt) if rng.random() < 0.8]
        reverse = [(i, rng.randrange(n_tgt)) for i in range(n_src) if rng.random() < 0.8]
        assert symmetrize(forward, reverse, n_src, n_tgt, method) == \
            _reference(forward, reverse, n_src, n_tgt, method), (forward, reverse, n_src, n_tgt)
