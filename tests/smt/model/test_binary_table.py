"""The binarized phrase table (smt-binarize-table, smt_features.model.binary_table), the table filter
(smt-filter-table) and smt-tune's filtered table: same translations, n-best lists and tuned weights as the
in-memory table; stale sidecars and bad lines refused."""
from __future__ import annotations

import gzip
import json
import os
import random
import sys
from pathlib import Path

import pytest

pytest.importorskip("kenlm")

from smt_features.cli.binarize_table import cli_main as binarize_main  # noqa: E402
from smt_features.cli.decode import cli_main as decode_main  # noqa: E402
from smt_features.cli.filter_table import cli_main as filter_main  # noqa: E402
from smt_features.decode import fast_search  # noqa: E402
from smt_features.decode.decoder import Decoder  # noqa: E402
from smt_features.decode.options import SearchOptions  # noqa: E402
from smt_features.decode.table import PhraseTable, load_phrase_table  # noqa: E402
from smt_features.model.binary_table import BinaryPhraseTable, binarize_table  # noqa: E402
from smt_features.model.features import (  # noqa: E402
    DistortionFeature, PhrasePenaltyFeature, PhraseTableFeature, UnknownWordPenaltyFeature, WordPenaltyFeature,
)
from smt_features.model.kenlm import KenLMScorer  # noqa: E402
from smt_features.model.kenlm_feature import KenLMFeature  # noqa: E402
from smt_features.model.moses_ini_build import default_config  # noqa: E402
from tests import TEST_DATA

DATA = TEST_DATA / "decoder"
WEIGHTS = {"UnknownWordPenalty0": [1.0], "WordPenalty0": [-1.0], "PhrasePenalty0": [0.2],
           "TranslationModel0": [0.2] * 4, "Distortion0": [0.3], "LM0": [0.5]}
SEARCHES = ["python"] + (["compiled"] if fast_search.available() else [])


def random_table(path: Path, seed: int) -> list[str]:
    """A gzip Moses table over s0..s5 → t0..t9 with tied scores and one source phrase split over two runs of
    lines (the binarized table must give the file order of all of them); returns the lines."""
    rng = random.Random(seed)
    lines = []
    for n in (1, 2, 3):
        for _ in range(14):
            src = " ".join(f"s{rng.randrange(6)}" for _ in range(n))
            for _ in range(rng.randint(1, 6)):
                tgt = " ".join(f"t{rng.randrange(10)}" for _ in range(rng.randint(1, 3)))
                sc = " ".join(rng.choice(["0.5", "0.25", "0.125", "1"]) for _ in range(4))
                lines.append(f"{src} ||| {tgt} ||| {sc} ||| ||| 1 1 1")
    lines.append("s0 ||| t9 t9 ||| 0.5 0.5 0.5 0.5 ||| ||| 1 1 1")  # a second run of s0's lines
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("".join(f"{line}\n" for line in lines))
    return lines


def features(limit: int) -> list:
    return [UnknownWordPenaltyFeature(), WordPenaltyFeature(), PhrasePenaltyFeature(),
            PhraseTableFeature("TranslationModel0", 4, table_limit=limit), DistortionFeature(),
            KenLMFeature(KenLMScorer(DATA / "toy.arpa"), name="LM0")]


@pytest.mark.parametrize("search", SEARCHES)
@pytest.mark.parametrize("seed", [0, 1])
def test_binary_table_decodes_like_the_memory_table(tmp_path, seed, search):
    gz = tmp_path / "pt.gz"
    random_table(gz, seed)
    binarize_table(gz, tmp_path / "pt.gz.bin", spill_every=5)  # several spills into the buckets
    mem, binary = PhraseTable.load(gz), load_phrase_table(gz)
    assert isinstance(binary, BinaryPhraseTable) and len(binary) == len(mem)
    assert (binary.num_scores, binary.max_src_len) == (mem.num_scores, mem.max_src_len)
    for src, entries in mem.entries.items():
        assert binary.get(src) == entries
    assert binary.get(("s0", "nope")) is None and binary.get(("x",)) is None
    rng = random.Random(seed)
    sentences = [[f"s{rng.randrange(7)}" for _ in range(rng.randint(1, 7))] for _ in range(6)]
    for limit in (2, 0):  # table-limit pruning per lookup (ties: file order), and no limit
        a = Decoder(features(limit), WEIGHTS, mem, SearchOptions(search=search))
        b = Decoder(features(limit), WEIGHTS, binary, SearchOptions(search=search))
        assert a.search_kind == b.search_kind == search
        for words in sentences:
            for nbest, distinct in ((0, False), (8, False), (8, True)):
                ra, rb = a.decode(words, nbest=nbest, distinct=distinct), b.decode(words, nbest=nbest,
                                                                                    distinct=distinct)
                assert (ra.best.tokens, ra.best.score, ra.best.values) == (rb.best.tokens, rb.best.score,
                                                                            rb.best.values)
                assert [(h.tokens, h.score, h.values) for h in ra.nbest] == \
                    [(h.tokens, h.score, h.values) for h in rb.nbest]


@pytest.mark.parametrize("stride", [1, 2, 3, 7, 512])
def test_lookup_through_the_fence_equals_a_full_binary_search(tmp_path, monkeypatch, stride):
    """The fenced search (one block of hashes read per lookup) finds what bisecting the whole hash column finds,
    for every stride, including the source phrase split over two runs (equal hashes across a block's end)."""
    import bisect

    from smt_features.model import binary_table

    monkeypatch.setattr(binary_table, "FENCE_STRIDE", stride)
    gz = tmp_path / "pt.gz"
    random_table(gz, 5)
    binarize_table(gz, tmp_path / "pt.gz.bin", spill_every=7)
    mem, binary = PhraseTable.load(gz), BinaryPhraseTable(tmp_path / "pt.gz.bin", source=gz)
    header = binary.header
    raw = (tmp_path / "pt.gz.bin").read_bytes()
    start, n = int(header["index_offset"]), int(header["num_groups"])
    column = [int.from_bytes(raw[start + 8 * i:start + 8 * i + 8], "little") for i in range(n)]
    assert column == sorted(column) and len(set(column)) < n  # s0's two runs: two equal hashes
    keys = column + [0, 2 ** 64 - 1] + [h + 1 for h in column] + [h - 1 for h in column if h]
    for key in keys:
        assert binary._hashes.equal_range(key) == range(bisect.bisect_left(column, key),
                                                         bisect.bisect_right(column, key))
    for src, entries in mem.entries.items():
        assert binary.get(src) == entries
    assert binary.get(("s0", "nope")) is None


def _decode_cli(ini: Path, src: Path, tag: str, tmp_path: Path) -> tuple[str, str]:
    out, nb = tmp_path / f"out.{tag}", tmp_path / f"nbest.{tag}"
    assert decode_main(["--moses-ini", str(ini), "--input", str(src), "--output", str(out), "--n-best-list",
                        str(nb), "5", "--progress", "false", "--threads", "2"]) == 0
    return out.read_text(encoding="utf-8"), nb.read_text(encoding="utf-8")


def _toy_system(folder: Path, seed: int = 3, gz: bool = True) -> tuple[Path, Path, Path]:
    """(table, moses.ini, input) of a toy system in ``folder`` (the table plain text when not ``gz``)."""
    folder.mkdir(parents=True, exist_ok=True)
    table = folder / "pt.gz"
    random_table(table, seed)
    if not gz:
        plain = folder / "pt"
        plain.write_bytes(gzip.decompress(table.read_bytes()))
        table.unlink()
        table = plain
    ini = folder / "moses.ini"
    default_config(str(table), str(DATA / "toy.arpa"), lm_order=2).write(ini)
    src = folder / "in.txt"
    src.write_text("s0 s1 s2\ns3 s4 s5 s0\ns9 s1\n", encoding="utf-8")
    return table, ini, src


def _refused_as_stale(capsys, table: Path, ini: Path, src: Path, out: Path) -> str:
    capsys.readouterr()
    assert decode_main(["--moses-ini", str(ini), "--input", str(src), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"smt-decode: {table}.bin: stale binarized phrase table") and "smt-binarize-table" in err
    assert "Traceback" not in err and not out.exists()
    return err


def test_smt_decode_uses_a_current_sidecar_and_refuses_a_stale_one(tmp_path, capsys):
    gz, ini, src = _toy_system(tmp_path)
    before = _decode_cli(ini, src, "text", tmp_path)
    assert binarize_main(["--table", str(gz), "--progress", "false"]) == 0
    assert _decode_cli(ini, src, "binary", tmp_path) == before
    header = json.loads((tmp_path / "pt.gz.bin").read_bytes()[24:4096].split(b"\n", 1)[0])
    assert header["source"]["sample_blake2b"] and header["payload_blake2b"]
    with open(gz, "ab") as fh:  # the table grew after binarizing
        fh.write(b"\0")
    _refused_as_stale(capsys, gz, ini, src, tmp_path / "o")


def test_a_copied_system_with_new_mtimes_keeps_its_sidecar(tmp_path):
    """``cp -r`` without keeping mtimes: the sidecar is judged by the table's size and content stamp."""
    import shutil

    gz, ini, src = _toy_system(tmp_path / "a")
    assert binarize_main(["--table", str(gz), "--progress", "false"]) == 0
    before = _decode_cli(ini, src, "a", tmp_path)
    copy = tmp_path / "b"
    copy.mkdir()
    for name in ("pt.gz", "pt.gz.bin", "in.txt"):
        shutil.copyfile(tmp_path / "a" / name, copy / name)  # contents only: new mtimes
    os.utime(copy / "pt.gz", ns=(10**18, 10**18 + 12345))
    os.utime(copy / "pt.gz.bin", ns=(10**18, 10**18 - 10**9))  # older than its table, too
    default_config(str(copy / "pt.gz"), str(DATA / "toy.arpa"), lm_order=2).write(copy / "moses.ini")
    assert isinstance(load_phrase_table(copy / "pt.gz"), BinaryPhraseTable)
    assert _decode_cli(copy / "moses.ini", copy / "in.txt", "b", tmp_path) == before
    assert binarize_main(["--table", str(copy / "pt.gz"), "--check", "--progress", "false"]) == 0


def test_a_table_edited_in_place_to_the_same_size_is_stale(tmp_path, capsys):
    table, ini, src = _toy_system(tmp_path, gz=False)
    assert binarize_main(["--table", str(table), "--progress", "false"]) == 0
    text = table.read_text(encoding="utf-8")
    edited = text.replace("0.125", "0.375", 1)
    assert edited != text and len(edited) == len(text)
    st = table.stat()
    table.write_text(edited, encoding="utf-8")
    os.utime(table, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    err = _refused_as_stale(capsys, table, ini, src, tmp_path / "o")
    assert "same size" in err and "content" in err
    assert binarize_main(["--table", str(table), "--check", "--progress", "false"]) == 2
    assert f"{table}.bin: stale binarized phrase table" in capsys.readouterr().err


def test_an_old_sidecar_without_content_stamp_is_judged_by_mtime(tmp_path, capsys):
    """A sidecar written before the content stamp: same size and mtime, as before, else stale."""
    from smt_features.model import binary_table as B

    gz, ini, src = _toy_system(tmp_path)
    side = tmp_path / "pt.gz.bin"
    assert binarize_main(["--table", str(gz), "--progress", "false"]) == 0
    raw = bytearray(side.read_bytes())
    header = json.loads(bytes(raw[len(B.MAGIC):B.HEADER_SIZE]).split(b"\n", 1)[0])
    del header["source"]["sample_blake2b"], header["payload_blake2b"]
    raw[:B.HEADER_SIZE] = B._header_bytes(header)
    side.write_bytes(bytes(raw))
    assert isinstance(load_phrase_table(gz), BinaryPhraseTable)
    assert binarize_main(["--table", str(gz), "--check"]) == 2
    assert "without a payload checksum" in capsys.readouterr().err
    st = gz.stat()
    os.utime(gz, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    err = _refused_as_stale(capsys, gz, ini, src, tmp_path / "o")
    assert "mtime_ns" in err


def test_check_finds_a_corrupted_sidecar(tmp_path, capsys):
    """64 KiB overwritten in the middle of a sidecar: the decoder's header checks cannot see it, --check does."""
    gz = tmp_path / "pt.gz"
    with gzip.open(gz, "wt", encoding="utf-8") as fh:
        for i in range(12000):
            fh.write(f"w{i} ||| v{i} x{i % 7} ||| 0.5 0.25 {(i % 8 + 1) / 8} 1 ||| ||| 1 1 1\n")
    side = tmp_path / "pt.gz.bin"
    assert binarize_main(["--table", str(gz), "--progress", "false"]) == 0
    assert binarize_main(["--table", str(gz), "--check", "--progress", "false"]) == 0
    size = side.stat().st_size
    assert size > 4 * 65536
    with open(side, "r+b") as fh:
        fh.seek(size // 2)
        fh.write(os.urandom(65536))
    capsys.readouterr()
    assert isinstance(load_phrase_table(gz), BinaryPhraseTable)  # opening it does not read it whole
    assert binarize_main(["--table", str(gz), "--check"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"smt-binarize-table: {side}: corrupt binarized phrase table") and "Traceback" not in err
    assert binarize_main(["--table", str(gz), "--check", "--output", str(side)]) == 2


def test_binarize_and_filter_refuse_bad_lines(tmp_path, capsys):
    bad = tmp_path / "bad.gz"
    with gzip.open(bad, "wt", encoding="utf-8") as fh:
        fh.write("a ||| x ||| 0.5 0.5\na ||| y ||| 0.5 zz\n")
    (tmp_path / "in.txt").write_text("a\n", encoding="utf-8")
    assert binarize_main(["--table", str(bad), "--progress", "false"]) == 2
    assert filter_main(["--table", str(bad), "--input", str(tmp_path / "in.txt"), "--output",
                        str(tmp_path / "f.gz"), "--progress", "false"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"smt-binarize-table: {bad}:2: score 'zz' is not a number",
                   f"smt-filter-table: {bad}:2: score 'zz' is not a number"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.gz", "in.txt"]  # nothing partial left
    assert binarize_main(["--table", str(bad), "--output", str(bad)]) == 2  # never overwrite the input


def test_filter_keeps_exactly_the_lines_of_input_phrases(tmp_path):
    gz = tmp_path / "pt.gz"
    lines = random_table(gz, 5)
    lines[3] = lines[3].replace(" ||| ", "  |||  ", 1)  # odd spacing is kept byte for byte
    with gzip.open(gz, "wt", encoding="utf-8") as fh:
        fh.write("".join(f"{line}\n" for line in lines))
    (tmp_path / "a.en").write_text("s0 s1 s2 s3\ns5\n", encoding="utf-8")
    (tmp_path / "b.en").write_text("s4 s4 s2\n", encoding="utf-8")
    for max_len in (2, 0):
        out = tmp_path / f"f{max_len}.gz"
        assert filter_main(["--table", str(gz), "--input", str(tmp_path / "a.en"), str(tmp_path / "b.en"),
                            "--output", str(out), "--max-phrase-length", str(max_len), "--progress", "false"]) == 0
        grams = set()
        for sent in (["s0", "s1", "s2", "s3"], ["s5"], ["s4", "s4", "s2"]):
            for i in range(len(sent)):
                for j in range(i + 1, len(sent) + 1):
                    if not max_len or j - i <= max_len:
                        grams.add(" ".join(sent[i:j]))
        expected = [line for line in lines if " ".join(line.split("|||")[0].split()) in grams]
        assert 0 < len(expected) < len(lines)
        with gzip.open(out, "rt", encoding="utf-8") as fh:
            assert fh.read() == "".join(f"{line}\n" for line in expected)


def test_tune_with_the_filtered_table_gives_the_same_weights(tmp_path):
    from smt_features.cli import tune as cli_tune

    gz = tmp_path / "pt.gz"
    random_table(gz, 7)
    ini = tmp_path / "moses.ini"
    default_config(str(gz), str(DATA / "toy.arpa"), lm_order=2).write(ini)
    rng = random.Random(1)
    src = [" ".join(f"s{rng.randrange(6)}" for _ in range(rng.randint(2, 6))) for _ in range(6)]
    (tmp_path / "dev.en").write_text("".join(f"{s}\n" for s in src), encoding="utf-8")
    (tmp_path / "dev.fr").write_text("".join(f"{s.replace('s', 't')}\n" for s in src), encoding="utf-8")
    runs = {}
    for flag in ("true", "false"):
        work = tmp_path / f"work.{flag}"
        assert cli_tune.cli_main(["--moses-ini", str(ini), "--dev-src", str(tmp_path / "dev.en"), "--dev-ref",
                                  str(tmp_path / "dev.fr"), "--work-dir", str(work), "--nbest", "5",
                                  "--max-iterations", "2", "--restarts", "2", "--filter-table", flag,
                                  "--decoder-cmd", f"{sys.executable} -m smt_features.cli.decode"]) == 0
        state = json.loads((work / "iterations.json").read_text())
        runs[flag] = ((work / "moses.tuned.ini").read_bytes(), (work / "run1.best5.out").read_bytes(),
                      [r["weights"] for r in state["iterations"]])
    assert runs["true"] == runs["false"]
    assert (tmp_path / "work.true" / "filtered" / "pt.gz").exists()
    assert not (tmp_path / "work.false" / "filtered").exists()
    assert str(tmp_path / "work.true" / "filtered" / "pt.gz") in (tmp_path / "work.true" / "run1.moses.ini").read_text()
