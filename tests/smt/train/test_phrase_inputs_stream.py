"""smt-train-phrases' streamed inputs: no corpus list, same bytes whatever the chunk size, eflomal's format."""
from __future__ import annotations

import logging

import pytest

from nmt.core.io import DataError
from smt_features.cli.train import cli_main
from smt_features.train import aligner, phrase_model
from smt_features.train.align import symmetrize_corpus, write_alignments
from smt_features.train.corpus_stream import check_alignment, scan_corpus

SRC = ["a b", "a c d", "a b e", "b a", "d c a b", "e", "c c a"]
TGT = ["x y", "x z", "y w", "y x", "z x y w", "w", "z y x"]
ALIGN = [[(0, 0), (1, 1)], [(0, 0), (1, 1)], [(0, 0), (1, 0)], [(0, 1), (1, 0)],
         [(1, 0), (2, 1), (3, 2)], [], [(0, 0), (2, 2)]]


def _files(tmp_path):
    (tmp_path / "c.src").write_text("\n".join(SRC) + "\n")
    (tmp_path / "c.tgt").write_text("\n".join(TGT) + "\n")
    write_alignments(tmp_path / "c.align", ALIGN)
    return ["--src", str(tmp_path / "c.src"), "--tgt", str(tmp_path / "c.tgt"), "--alignment",
            str(tmp_path / "c.align"), "--processes", "1"]


def test_streamed_step_builds_no_corpus_list_and_chunks_do_not_matter(tmp_path, monkeypatch):
    common = _files(tmp_path)
    assert cli_main(common + ["--out-dir", str(tmp_path / "mem"), "--sort-buffer", "memory"]) == 0

    def whole_corpus(*args, **kwargs):
        raise AssertionError("the streamed path read the whole corpus into lists")

    for name in ("read_tokenized_parallel", "read_alignments", "build_phrase_table", "eflomal_align"):
        monkeypatch.setattr(phrase_model, name, whole_corpus)
    for chunk in ("2", "1000"):
        assert cli_main(common + ["--out-dir", str(tmp_path / chunk), "--extract-chunk-lines", chunk]) == 0
    for f in ("phrase-table.gz", "lex.f2e", "lex.e2f", "aligned.grow-diag-final-and"):
        assert (tmp_path / "2" / f).read_bytes() == (tmp_path / "1000" / f).read_bytes() == \
            (tmp_path / "mem" / f).read_bytes(), f


def test_stream_checks_name_file_and_line(tmp_path):
    (tmp_path / "s").write_text("a b\nc ||| d\n")
    (tmp_path / "t").write_text("x\ny\n")
    with pytest.raises(DataError, match=r"s:2: token '\|\|\|'"):
        scan_corpus(tmp_path / "s", tmp_path / "t")
    (tmp_path / "s").write_text("a b\nc d\n")
    lengths = scan_corpus(tmp_path / "s", tmp_path / "t")
    assert list(lengths) == [(2, 1), (2, 1)]
    for text, where in (("0-0\n", r"a:2: 1 alignment lines for 2"), ("0-0\n0-0\n0-0\n", r"a:3: more alignment"),
                        ("0-0\n2-0\n", r"a:2: alignment point 2-0 out of range")):
        (tmp_path / "a").write_text(text)
        with pytest.raises(DataError, match=where):
            check_alignment(tmp_path / "a", lengths)
    (tmp_path / "a").write_text("0-0\n\n")
    summary = check_alignment(tmp_path / "a", lengths)
    assert (list(summary.bare), summary.links) == ([1], 1)


def test_eflomal_input_written_as_stream_is_eflomals_own(tmp_path):
    from eflomal import cython as efc

    src = ["A b C", "b  a", " ".join(["z"] * 1100), "é É"]
    tgt = ["x", "Y y", "q", "ü"]
    aligner.write_eflomal_texts(zip(src, tgt), tmp_path / "s.ef", tmp_path / "t.ef", lowercase=True)
    for lines, name in ((src, "s.ef"), (tgt, "t.ef")):
        indexed, vocab = efc.read_text(iter(lines), True, 0, 0)
        with open(tmp_path / f"own.{name}", "wb") as fh:
            efc.write_text(fh, tuple(indexed), len(vocab))
        assert (tmp_path / name).read_bytes() == (tmp_path / f"own.{name}").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["own.s.ef", "own.t.ef", "s.ef", "t.ef"]


def test_symmetrize_files_matches_lists_with_a_pool(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(aligner, "SYMMETRIZE_CHUNK", 7)
    n = 2100   # the pool is used from 2000 pairs on
    fwd = [[(0, 0), (1, 1)], [(0, 1)], [], [(1, 0), (1, 1)]] * (n // 4)
    rev = [[(0, 0)], [(0, 1), (1, 0)], [], [(1, 1)]] * (n // 4)
    lengths = [(2, 2), (2, 2), (1, 1), (2, 2)] * (n // 4)
    write_alignments(tmp_path / "f", fwd)
    write_alignments(tmp_path / "r", rev)
    summary = aligner.symmetrize_files(tmp_path / "f", tmp_path / "r", lengths, tmp_path / "out", processes=2,
                                       forward_out=tmp_path / "fo")
    write_alignments(tmp_path / "expected", symmetrize_corpus(fwd, rev, lengths, processes=1))
    assert (tmp_path / "out").read_bytes() == (tmp_path / "expected").read_bytes()
    assert (tmp_path / "fo").read_bytes() == (tmp_path / "f").read_bytes()
    assert summary.bare[:2] == [2, 6] and len(summary.bare) == n // 4
    (tmp_path / "r").write_text("0-0\n")
    with pytest.raises(aligner.AlignmentError, match="reverse links: 1 lines for 2100"):
        aligner.symmetrize_files(tmp_path / "f", tmp_path / "r", lengths, tmp_path / "out2")
    assert not (tmp_path / "out2").exists()


def test_align_chunk_pairs_runs_eflomal_per_chunk(tmp_path, caplog):
    common = _files(tmp_path)[:4] + ["--eflomal-samplers", "1", "--processes", "1"]
    with caplog.at_level(logging.INFO):
        assert cli_main(common + ["--out-dir", str(tmp_path / "o"), "--align-chunk-pairs", "3"]) == 0
    assert "pairs 7-7 of 7 aligned" in caplog.text
    assert len((tmp_path / "o" / "aligned.grow-diag-final-and").read_text().splitlines()) == len(SRC)
    assert cli_main(common + ["--out-dir", str(tmp_path / "bad"), "--align-chunk-pairs", "-1"]) == 2
