"""smt-rescore: appended RNN columns, byte preservation, resume after kill -9, shards, processes, bad input;
smt-inspect-phrases: the side-by-side Markdown tables."""
from __future__ import annotations

import gzip
import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import refused

from conftest import make_toy_data
from nmt.formats.phrase_table import PhraseTableError, write_phrase_table
from nmt.formats.phrase_table_reader import iter_phrase_table
from smt_features.neural.rescore import rescore_table
from smt_features.neural.rescore_config import RescoreConfig

BIN = Path(sys.executable).parent
FLOOR = math.exp(-100)


# -- fixtures -----------------------------------------------------------------------------------------
def _train(data: Path, out: Path, src: str, tgt: str, *extra: str) -> Path:
    from nmt.cli.train import cli_main as train_main

    rc = train_main(["--data-dir", str(data), "--out-dir", str(out), "--preset", "tiny", "--src-lang", src,
                     "--tgt-lang", tgt, "--max-updates", "2", "--progress", "false", "--threads", "1", *extra])
    assert rc == 0
    return out


def _toy_table(data: Path, path: Path, seed: int = 0) -> Path:
    """A Moses table of the toy corpus's n-grams (up to 4 words), plus pairs with unknown words."""
    rng = random.Random(seed)
    src_lines = (data / "train.tok.en").read_text(encoding="utf-8").split("\n")
    tgt_lines = (data / "train.tok.fr").read_text(encoding="utf-8").split("\n")
    pairs = set()
    for s, t in zip(src_lines, tgt_lines):
        sw, tw = s.split(), t.split()
        for n in range(1, 5):
            for i in range(len(sw) - n + 1):
                pairs.add((tuple(sw[i:i + n]), tuple(tw[i:i + n])))
                if n > 1 and rng.random() < 0.3:  # a target of another length: varied lengths per source
                    pairs.add((tuple(sw[i:i + n]), tuple(tw[i:i + n - 1])))
    pairs |= {(("s1", "zz"), ("t1", "qq")), (("ww",), ("t3",)), (("s2",), ("yy", "xx", "t2"))}
    entries = []
    for src, tgt in pairs:
        k = min(len(src), len(tgt))
        scores = tuple(round(rng.uniform(0.01, 1.0), 4) for _ in range(4))
        entries.append((src, tgt, scores, tuple((i, i) for i in range(k)), (float(rng.randint(1, 9)),) * 3))
    write_phrase_table(entries, path)
    return path


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("rescore")
    data = make_toy_data(root / "data")
    fwd = _train(data, root / "fwd", "en", "fr")
    rev = _train(data, root / "rev", "fr", "en")
    table = _toy_table(data, root / "phrase-table.gz")
    return {"root": root, "data": data, "fwd": fwd, "rev": rev, "table": table}


def _run(table: Path, model: Path, output: Path, **kw) -> dict:
    kw.setdefault("threads", 1)
    kw.setdefault("progress", False)
    kw.setdefault("floor", FLOOR)
    rescore_table(RescoreConfig(table=str(table), model=str(model), output=str(output), **kw))
    return json.loads(Path(f"{output}.rescore.json").read_text(encoding="utf-8"))


def _lines(path: Path) -> list[bytes]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as fh:
        return fh.read().split(b"\n")


def _strip_appended(out_line: bytes, k: int) -> tuple[bytes, list[float]]:
    """The line without its last ``k`` scores (and the values removed)."""
    first = out_line.find(b"|||")
    second = out_line.find(b"|||", first + 3)
    third = out_line.find(b"|||", second + 3)
    end = len(out_line) if third < 0 else third
    field = out_line[second + 3:end]
    body = field.rstrip()
    toks = body.split(b" ")
    new = toks[-k:]
    kept = body[:len(body) - len(b" ".join(new)) - 1]
    return out_line[:second + 3] + kept + field[len(body):] + out_line[end:], [float(x) for x in new]


class _Reference:
    """Teacher-forced reference scores (the model's own forward pass), shaped like ``PairScore``."""

    def __init__(self, loaded):
        self.m = loaded

    def score_pairs(self, srcs, tgts):
        from types import SimpleNamespace

        from conftest import teacher_forced_log_probs

        m = self.m
        lps = teacher_forced_log_probs(m.model, m.src_vocab, m.tgt_vocab, srcs, tgts)
        return [SimpleNamespace(log_prob=lp, src_unk=m.src_vocab.unk_count(list(s)),
                                tgt_unk=m.tgt_vocab.unk_count(list(t))) for lp, s, t in zip(lps, srcs, tgts)]


def _scorer(model_dir: Path):
    from nmt.model_io import load_translation_model

    m = load_translation_model(model_dir, which="last")
    return _Reference(m), m


# -- the columns ---------------------------------------------------------------------------------------
def test_columns_match_pair_scorer_and_bytes_are_kept(setup, tmp_path: Path) -> None:
    out = tmp_path / "out.gz"
    summary = _run(setup["table"], setup["fwd"], out, reverse_model=str(setup["rev"]), wp_column=True, window=17,
                   chunk_lines=34, max_tokens=40)
    assert summary["columns_appended"] == ["p_rnn(e|f)", "p_rnn(f|e)", "WP=exp(-unk)"]
    assert 10 < summary["peak_rss_mib"] < 100_000   # MiB of this process, the model included
    orig = _lines(setup["table"])
    got = _lines(out)
    assert len(got) == len(orig) and got[-1] == b"" and orig[-1] == b""
    entries = list(iter_phrase_table(setup["table"]))
    fwd, m_fwd = _scorer(setup["fwd"])
    rev, _ = _scorer(setup["rev"])
    ref_f = fwd.score_pairs([e.src for e in entries], [e.tgt for e in entries])
    ref_r = rev.score_pairs([e.tgt for e in entries], [e.src for e in entries])
    n_unk = 0
    for i, e in enumerate(entries):
        stripped, (pf, pr, wp) = _strip_appended(got[i], 3)
        assert stripped == orig[i], f"line {i + 1} changed beyond the new columns"
        assert pf == pytest.approx(max(math.exp(ref_f[i].log_prob), FLOOR), rel=2e-4)
        assert pr == pytest.approx(max(math.exp(ref_r[i].log_prob), FLOOR), rel=2e-4)
        unk = m_fwd.src_vocab.unk_count(e.src) + m_fwd.tgt_vocab.unk_count(e.tgt)
        assert unk == ref_f[i].src_unk + ref_f[i].tgt_unk
        assert wp == pytest.approx(math.exp(-unk), rel=1e-5) and 0 < pf <= 1 and 0 < pr <= 1
        n_unk += unk > 0
    assert n_unk == 3 and summary["stats"]["unk_pairs"] == 3
    assert summary["stats"]["src_unk"] == 2 and summary["stats"]["tgt_unk"] == 3
    # the output is a valid table for the strict reader, with 3 more scores per line
    assert all(len(e.scores) == 7 for e in iter_phrase_table(out))


def test_torch_cell_model_matches_pair_scorer(setup, tmp_path: Path) -> None:
    """The generic decoder path (``--cell torch``: no per-word table, no context terms) scores the same."""
    model = _train(setup["data"], tmp_path / "torch_cell", "en", "fr", "--cell", "torch")
    out = tmp_path / "out.gz"
    _run(setup["table"], model, out, window=40, chunk_lines=40)
    entries = list(iter_phrase_table(setup["table"]))
    ref = _scorer(model)[0].score_pairs([e.src for e in entries], [e.tgt for e in entries])
    for line, r in zip(_lines(out), ref):
        (p,) = _strip_appended(line, 1)[1]
        assert p == pytest.approx(max(math.exp(r.log_prob), FLOOR), rel=2e-4)


def test_window_reordering_keeps_line_order(setup, tmp_path: Path) -> None:
    """Scores do not depend on where a pair lands in the length-sorted batches of its window."""
    results = {}
    for window in (5, 1000):
        out = tmp_path / f"w{window}.gz"
        _run(setup["table"], setup["fwd"], out, window=window, chunk_lines=1000 if window == 1000 else 5,
             max_tokens=30)
        results[window] = [_strip_appended(line, 1) for line in _lines(out)[:-1]]
    entries = list(iter_phrase_table(setup["table"]))
    assert len({len(e.tgt) for e in entries}) >= 3
    for (a_line, (a,)), (b_line, (b,)) in zip(results[5], results[1000]):
        assert a_line == b_line and a == pytest.approx(b, rel=2e-4)


def test_floor_and_plain_three_field_table(setup, tmp_path: Path) -> None:
    table = tmp_path / "t.txt"
    table.write_bytes(b"s1 s2 ||| t1 t2 ||| 0.5 0.25\ns3 ||| t3 t4 t5 t6 ||| 1 0.125  \ns4 ||| t4 ||| 0.5 0.5")
    out = tmp_path / "o.txt"
    summary = _run(table, setup["fwd"], out, floor=0.5, window=2, chunk_lines=2)
    lines = out.read_bytes().split(b"\n")
    assert len(lines) == 3 and not out.read_bytes().endswith(b"\n")  # a missing final newline stays missing
    assert lines[0] == b"s1 s2 ||| t1 t2 ||| 0.5 0.25 0.5"  # a tiny model: every p < 0.5 → floored
    assert lines[1] == b"s3 ||| t3 t4 t5 t6 ||| 1 0.125 0.5  "
    assert summary["stats"]["clamped"] == 3


# -- splitting the work -------------------------------------------------------------------------------
def test_shards_concatenate_to_the_single_run(setup, tmp_path: Path) -> None:
    opts = dict(window=10, chunk_lines=20, wp_column=True)
    single = tmp_path / "single.gz"
    _run(setup["table"], setup["fwd"], single, **opts)
    parts = []
    for i in range(3):
        part = tmp_path / f"shard{i}.gz"
        _run(setup["table"], setup["fwd"], part, shard=f"{i}/3", resume=(i == 1), **opts)
        parts.append(part.read_bytes())
    assert all(parts)
    assert b"".join(parts) == single.read_bytes()  # `cat shard*.gz` is the same file, byte for byte
    assert not Path(f"{tmp_path}/shard1.gz.parts").exists()


def test_two_processes_equal_one(setup, tmp_path: Path) -> None:
    one, two = tmp_path / "one.gz", tmp_path / "two.gz"
    _run(setup["table"], setup["fwd"], one, window=12, chunk_lines=24, reverse_model=str(setup["rev"]))
    _run(setup["table"], setup["fwd"], two, window=12, chunk_lines=24, reverse_model=str(setup["rev"]),
         processes=2, threads=2)
    assert one.read_bytes() == two.read_bytes()


def test_kill_9_then_resume_is_byte_identical(setup, tmp_path: Path) -> None:
    exe = BIN / "smt-rescore"
    if not exe.exists():
        pytest.skip(f"{exe} not installed (pip install -e .)")
    opts = ["--window", "8", "--chunk-lines", "16", "--threads", "1", "--wp-column", "--progress", "false",
            "--floor", repr(FLOOR)]
    full = tmp_path / "full.gz"
    _run(setup["table"], setup["fwd"], full, window=8, chunk_lines=16, wp_column=True)
    out = tmp_path / "resumed.gz"
    parts = Path(f"{out}.parts")
    env = dict(os.environ, SMT_RESCORE_TEST_WINDOW_DELAY="0.15")
    cmd = [str(exe), "--table", str(setup["table"]), "--model", str(setup["fwd"]), "--output", str(out),
           "--resume", *opts]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while not (parts / "chunk-000001.gz").exists():  # two chunks committed, the run is mid-way
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        assert time.time() < deadline
        time.sleep(0.02)
    time.sleep(0.1)  # into the next chunk
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL and not out.exists()
    committed = sorted(p.name for p in parts.glob("chunk-*.gz"))
    n_lines = len(_lines(setup["table"])) - 1
    assert 2 <= len(committed) < math.ceil(n_lines / 16)
    # an unfinished chunk's temp file may be left; the resumed run ignores it
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert f"resuming: {len(committed)} of" in res.stderr
    assert out.read_bytes() == full.read_bytes()
    summary = json.loads(Path(f"{out}.rescore.json").read_text(encoding="utf-8"))
    st = summary["stats"]
    assert st["chunks_reused"] == len(committed)
    assert st["pairs"] == n_lines and st["pairs_this_run"] == n_lines - 16 * len(committed)  # none twice, none lost
    assert not parts.exists()


def test_resume_refuses_other_settings(setup, tmp_path: Path) -> None:
    out = tmp_path / "o.gz"
    parts = Path(f"{out}.parts")
    parts.mkdir()
    (parts / "progress.json").write_text(json.dumps({"settings": {"window": 3}}), encoding="utf-8")
    with pytest.raises(ValueError, match="other settings"):
        _run(setup["table"], setup["fwd"], out, window=8, chunk_lines=16, resume=True)
    with pytest.raises(ValueError, match="--resume"):  # leftovers without --resume are not overwritten silently
        _run(setup["table"], setup["fwd"], out, window=8, chunk_lines=16)


# -- bad input ----------------------------------------------------------------------------------------
def _bad_table(setup, tmp_path: Path, bad: dict[int, bytes]) -> tuple[Path, list[bytes]]:
    lines = _lines(setup["table"])[:40]
    for i, text in bad.items():
        lines[i - 1] = text
    path = tmp_path / "bad.gz"
    with gzip.open(path, "wb") as fh:
        fh.write(b"\n".join(lines) + b"\n")
    return path, lines


BAD_LINES = {
    5: b"s1 s2 ||| t1 t2 ||| 0.5 0.5 0.5 ||| 0-0 ||| 1 1 1 ||| |||",  # 3 scores, others have 4
    9: b"s1 ||| t1 ||| 0.5 0.5 0.5 0.5",  # 3 fields, others have 7
    12: b" ||| t1 ||| 0.5 0.5 0.5 0.5 ||| ||| 1 1 1 ||| |||",  # empty source phrase
    20: b"s1 \xff ||| t1 ||| 0.5 0.5 0.5 0.5 ||| 0-0 ||| 1 1 1 ||| |||",  # not UTF-8
}


def test_malformed_line_stops_with_its_number(setup, tmp_path: Path) -> None:
    path, _ = _bad_table(setup, tmp_path, {9: BAD_LINES[9]})
    out = tmp_path / "o.gz"
    with pytest.raises(PhraseTableError, match=r"bad\.gz:9: expected 7 fields|bad\.gz:9: 3 fields"):
        _run(path, setup["fwd"], out, window=4, chunk_lines=4)
    assert not out.exists() and not list(tmp_path.glob(".o.gz*"))  # no partial output left
    from smt_features.cli.rescore import cli_main

    rc = cli_main(["--table", str(path), "--model", str(setup["fwd"]), "--output", str(out), "--progress", "false"])
    assert rc == 2  # bad input: exit status 2 with FILE:LINE (nmt.errors)


@pytest.mark.parametrize("line_no", sorted(BAD_LINES))
def test_each_kind_of_bad_line_is_reported(setup, tmp_path: Path, line_no: int) -> None:
    path, _ = _bad_table(setup, tmp_path, {line_no: BAD_LINES[line_no]})
    with pytest.raises(PhraseTableError, match=f":{line_no}:"):
        _run(path, setup["fwd"], tmp_path / "o.gz", window=4, chunk_lines=4)


def test_skip_bad_drops_counts_and_lists(setup, tmp_path: Path) -> None:
    path, lines = _bad_table(setup, tmp_path, BAD_LINES)
    out = tmp_path / "o.gz"
    summary = _run(path, setup["fwd"], out, window=4, chunk_lines=8, skip_bad=True, resume=True)
    assert summary["stats"]["skipped"] == 4 and summary["stats"]["pairs"] == 36
    got = _lines(out)[:-1]
    good = [line for i, line in enumerate(lines[:40], 1) if i not in BAD_LINES]
    assert [_strip_appended(g, 1)[0] for g in got] == good  # nothing shifted
    side = Path(f"{out}.skipped").read_text(encoding="utf-8").splitlines()
    assert [int(s.split("\t")[0]) for s in side] == sorted(BAD_LINES)
    # the same bad lines are judged the same way by a shard that starts after the first line
    part = tmp_path / "p.gz"
    _run(path, setup["fwd"], part, window=4, chunk_lines=8, skip_bad=True, shard="1/2")
    assert out.read_bytes().endswith(part.read_bytes())


def test_reverse_model_in_the_wrong_direction_is_refused(setup, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="same direction"):
        _run(setup["table"], setup["fwd"], tmp_path / "o.gz", reverse_model=str(setup["fwd"]))


def test_no_torch_at_import() -> None:
    code = ("import sys, smt_features.neural.rescore, smt_features.cli.rescore, smt_features.cli.rescore_sharded, "
            "smt_features.cli.inspect_phrases; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# -- smt-inspect-phrases ------------------------------------------------------------------------------
def test_inspect_phrases_markdown(setup, tmp_path: Path) -> None:
    from smt_features.cli.inspect_phrases import cli_main as inspect_main

    sources = tmp_path / "sources.txt"
    sources.write_text("s1 s2\ns1\nnot in table\n", encoding="utf-8")
    out = tmp_path / "inspect.md"
    rc = inspect_main(["--table", str(setup["table"]), "--model", str(setup["fwd"]), "--sources", str(sources),
                       "--top", "3", "--generate", "2", "--output", str(out), "--threads", "1"])
    assert rc == 0
    text = out.read_text(encoding="utf-8")
    assert text.count("\n## ") == 3 and "| rank | target (φ(e\\|f)) |" in text
    assert "Generated by the encoder–decoder" in text and "not in the phrase table" in text
    section = text.split("## `s1`")[1].split("\n## ")[0]
    table_rows = [r for r in section.splitlines() if r.startswith("| 1 ") or r.startswith("| 3 ")]
    assert len(table_rows) >= 2


def test_bf16_autocast_on_cpu_is_close(setup, tmp_path: Path) -> None:
    a, b = tmp_path / "fp32.gz", tmp_path / "bf16.gz"
    _run(setup["table"], setup["fwd"], a, window=50, chunk_lines=100)
    _run(setup["table"], setup["fwd"], b, window=50, chunk_lines=100, amp="bf16")
    for x, y in zip(_lines(a)[:-1], _lines(b)[:-1]):
        (lx, (px,)), (ly, (py,)) = _strip_appended(x, 1), _strip_appended(y, 1)
        assert lx == ly and math.log(px) == pytest.approx(math.log(py), abs=0.05)


# -- the shard launcher (smt-rescore-sharded) --------------------------------------------------------------
def test_sharded_launcher_merges_in_order(setup, tmp_path: Path, capsys) -> None:
    from smt_features.cli.rescore_sharded import cli_main as launch_main
    from smt_features.neural.sharded import part_path

    single = tmp_path / "single.gz"
    _run(setup["table"], setup["fwd"], single, window=10, chunk_lines=20, wp_column=True)
    args = ["--table", str(setup["table"]), "--model", str(setup["fwd"]), "--window", "10", "--chunk-lines", "20",
            "--wp-column", "--threads", "1", "--progress", "false", "--floor", repr(FLOOR)]
    merged = tmp_path / "merged.gz"
    assert launch_main(["--shards", "3", "--output", str(merged), "--dry-run", *args]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 4 and "--shard 2/3" in printed[2] and printed[3].startswith("cat ")
    from smt_features.model.moses_ini import read_moses_ini
    from smt_features.model.moses_ini_build import default_config

    ini = tmp_path / "moses.ini"
    default_config(str(setup["table"]), "lm.binary").write(ini)
    assert launch_main(["--shards", "3", "--output", str(merged), *args, "--moses-ini", str(ini)]) == 0
    assert merged.read_bytes() == single.read_bytes()
    merged_ini = read_moses_ini(f"{merged}.moses.ini")          # written once, after the merge, for the whole table
    assert merged_ini.feature("TranslationModel0").get("num-features") == "6"
    assert merged_ini.feature("TranslationModel0").get("path") == str(merged.resolve())
    assert not part_path(merged, 0, 3).exists()                  # parts removed after the merge
    # a missing table is refused before any shard starts (exit 2, the file named)
    bad = tmp_path / "bad.gz"
    rc = launch_main(["--shards", "2", "--output", str(bad), "--keep-parts",
                      "--table", str(tmp_path / "missing.gz"), *args[2:]])
    assert refused(capsys, "missing.gz", rc) and not bad.exists() and not part_path(bad, 0, 2).exists()
    # a shard that fails on a bad line: its FILE:LINE comes back with exit 2
    bad_table, _ = _bad_table(setup, tmp_path, {9: BAD_LINES[9]})
    merged_bad = tmp_path / "merged-bad.gz"
    rc = launch_main(["--shards", "2", "--output", str(merged_bad), "--table", str(bad_table), *args[2:]])
    assert refused(capsys, r"bad\.gz:9: .*\(shard 0/2", rc) and not merged_bad.exists()
    assert refused(capsys, None, launch_main(["--shards", "2", "--output", str(bad), *args, "--shard", "0/2"]))


def test_moses_ini_for_the_rescored_table_loads_in_the_decoder(setup, tmp_path: Path) -> None:
    """--moses-ini: the written config points at the new table with num-features 4 + 2 and a 0.2 weight
    per new score; the decoder loads the table with it (the column count must match)."""
    pytest.importorskip("kenlm")
    from smt_features.decode.load import build_decoder
    from smt_features.model.moses_ini import read_moses_ini
    from smt_features.model.moses_ini_build import default_config

    data_dir = Path(__file__).parent / "data" / "decoder"
    ini = tmp_path / "moses.ini"
    default_config(str(setup["table"]), str(data_dir / "toy.arpa"), lm_order=2).write(ini)
    out = tmp_path / "pt.rnn.gz"
    _run(setup["table"], setup["fwd"], out, wp_column=True, moses_ini=str(ini))
    new = read_moses_ini(f"{out}.moses.ini")
    tm = new.feature("TranslationModel0")
    assert tm.get("num-features") == "6" and tm.get("path") == str(out.resolve())
    assert new.weights["TranslationModel0"] == [0.2] * 6 and new.weights["LM0"] == [0.5]
    decoder = build_decoder(new)
    first_src = next(iter(iter_phrase_table(setup["table"]))).src
    best = decoder.translate(" ".join(first_src))
    assert best.tokens and len(decoder.features.split(best.values)["TranslationModel0"]) == 6
