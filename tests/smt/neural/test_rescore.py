"""smt-rescore: appended RNN columns, byte preservation, resume after kill -9, shards, processes, bad input;
smt-inspect-phrases: the side-by-side Markdown tables."""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.refusal import refused
from tests.smt.neural.rescore_fixtures import (BAD_LINES, BIN, FLOOR, bad_table, reference_scorer, run_rescore,
                                               strip_appended, table_lines, train_model)

from nmt.core.formats.phrase_table import PhraseTableError
from nmt.core.formats.phrase_table_reader import iter_phrase_table
from tests import TEST_DATA


# -- the columns ---------------------------------------------------------------------------------------
def test_columns_match_pair_scorer_and_bytes_are_kept(setup, tmp_path: Path) -> None:
    out = tmp_path / "out.gz"
    summary = run_rescore(setup["table"], setup["fwd"], out, reverse_model=str(setup["rev"]), wp_column=True, window=17,
                   chunk_lines=34, max_tokens=40)
    assert summary["columns_appended"] == ["p_rnn(e|f)", "p_rnn(f|e)", "WP=exp(-unk)"]
    assert 10 < summary["peak_rss_mib"] < 100_000   # MiB of this process, the model included
    orig = table_lines(setup["table"])
    got = table_lines(out)
    assert len(got) == len(orig) and got[-1] == b"" and orig[-1] == b""
    entries = list(iter_phrase_table(setup["table"]))
    fwd, m_fwd = reference_scorer(setup["fwd"])
    rev, _ = reference_scorer(setup["rev"])
    ref_f = fwd.score_pairs([e.src for e in entries], [e.tgt for e in entries])
    ref_r = rev.score_pairs([e.tgt for e in entries], [e.src for e in entries])
    n_unk = 0
    for i, e in enumerate(entries):
        stripped, (pf, pr, wp) = strip_appended(got[i], 3)
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


def test_length_normalized_columns_are_per_token_geometric_means(setup, tmp_path: Path) -> None:
    """--length-normalize: exp(ln p(e|f) / (|e| + 1)) and exp(ln p(f|e) / (|f| + 1)), from the same scores."""
    plain, norm = tmp_path / "plain.gz", tmp_path / "norm.gz"
    run_rescore(setup["table"], setup["fwd"], plain, reverse_model=str(setup["rev"]), floor=1e-300)
    summary = run_rescore(setup["table"], setup["fwd"], norm, reverse_model=str(setup["rev"]), floor=1e-300,
                          length_normalize=True)
    assert summary["columns_appended"] == ["p_rnn(e|f)^(1/N)", "p_rnn(f|e)^(1/N)"]
    entries = list(iter_phrase_table(setup["table"]))
    for e, a, b in zip(entries, table_lines(plain), table_lines(norm)):
        (pf, pr), (nf, nr) = strip_appended(a, 2)[1], strip_appended(b, 2)[1]
        assert math.log(nf) == pytest.approx(math.log(pf) / (len(e.tgt) + 1), rel=1e-4, abs=1e-5)
        assert math.log(nr) == pytest.approx(math.log(pr) / (len(e.src) + 1), rel=1e-4, abs=1e-5)
        assert nf >= pf and nr >= pr


def test_torch_cell_model_matches_pair_scorer(setup, tmp_path: Path) -> None:
    """The generic decoder path (``--cell torch``: no per-word table, no context terms) scores the same."""
    model = train_model(setup["data"], tmp_path / "torch_cell", "en", "fr", "--cell", "torch")
    out = tmp_path / "out.gz"
    run_rescore(setup["table"], model, out, window=40, chunk_lines=40)
    entries = list(iter_phrase_table(setup["table"]))
    ref = reference_scorer(model)[0].score_pairs([e.src for e in entries], [e.tgt for e in entries])
    for line, r in zip(table_lines(out), ref):
        (p,) = strip_appended(line, 1)[1]
        assert p == pytest.approx(max(math.exp(r.log_prob), FLOOR), rel=2e-4)


def test_window_reordering_keeps_line_order(setup, tmp_path: Path) -> None:
    """Scores do not depend on where a pair lands in the length-sorted batches of its window."""
    results = {}
    for window in (5, 1000):
        out = tmp_path / f"w{window}.gz"
        run_rescore(setup["table"], setup["fwd"], out, window=window, chunk_lines=1000 if window == 1000 else 5,
             max_tokens=30)
        results[window] = [strip_appended(line, 1) for line in table_lines(out)[:-1]]
    entries = list(iter_phrase_table(setup["table"]))
    assert len({len(e.tgt) for e in entries}) >= 3
    for (a_line, (a,)), (b_line, (b,)) in zip(results[5], results[1000]):
        assert a_line == b_line and a == pytest.approx(b, rel=2e-4)


def test_floor_and_plain_three_field_table(setup, tmp_path: Path) -> None:
    table = tmp_path / "t.txt"
    table.write_bytes(b"s1 s2 ||| t1 t2 ||| 0.5 0.25\ns3 ||| t3 t4 t5 t6 ||| 1 0.125  \ns4 ||| t4 ||| 0.5 0.5")
    out = tmp_path / "o.txt"
    summary = run_rescore(table, setup["fwd"], out, floor=0.5, window=2, chunk_lines=2)
    lines = out.read_bytes().split(b"\n")
    assert len(lines) == 3 and not out.read_bytes().endswith(b"\n")  # a missing final newline stays missing
    assert lines[0] == b"s1 s2 ||| t1 t2 ||| 0.5 0.25 0.5"  # a tiny model: every p < 0.5 → floored
    assert lines[1] == b"s3 ||| t3 t4 t5 t6 ||| 1 0.125 0.5  "
    assert summary["stats"]["clamped"] == 3


# -- splitting the work -------------------------------------------------------------------------------
def test_shards_concatenate_to_the_single_run(setup, tmp_path: Path) -> None:
    opts = dict(window=10, chunk_lines=20, wp_column=True)
    single = tmp_path / "single.gz"
    run_rescore(setup["table"], setup["fwd"], single, **opts)
    parts = []
    for i in range(3):
        part = tmp_path / f"shard{i}.gz"
        run_rescore(setup["table"], setup["fwd"], part, shard=f"{i}/3", resume=(i == 1), **opts)
        parts.append(part.read_bytes())
    assert all(parts)
    assert b"".join(parts) == single.read_bytes()  # `cat shard*.gz` is the same file, byte for byte
    assert not Path(f"{tmp_path}/shard1.gz.parts").exists()


def test_two_processes_equal_one(setup, tmp_path: Path) -> None:
    one, two = tmp_path / "one.gz", tmp_path / "two.gz"
    run_rescore(setup["table"], setup["fwd"], one, window=12, chunk_lines=24, reverse_model=str(setup["rev"]))
    run_rescore(setup["table"], setup["fwd"], two, window=12, chunk_lines=24, reverse_model=str(setup["rev"]),
         processes=2, threads=2)
    assert one.read_bytes() == two.read_bytes()


def test_kill_9_then_resume_is_byte_identical(setup, tmp_path: Path) -> None:
    exe = BIN / "smt-rescore"
    if not exe.exists():
        pytest.skip(f"{exe} not installed (pip install -e .)")
    opts = ["--window", "8", "--chunk-lines", "16", "--threads", "1", "--wp-column", "--progress", "false",
            "--floor", repr(FLOOR)]
    full = tmp_path / "full.gz"
    run_rescore(setup["table"], setup["fwd"], full, window=8, chunk_lines=16, wp_column=True)
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
    n_lines = len(table_lines(setup["table"])) - 1
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
        run_rescore(setup["table"], setup["fwd"], out, window=8, chunk_lines=16, resume=True)
    with pytest.raises(ValueError, match="--resume"):  # leftovers without --resume are not overwritten silently
        run_rescore(setup["table"], setup["fwd"], out, window=8, chunk_lines=16)


# -- bad input ----------------------------------------------------------------------------------------
def test_malformed_line_stops_with_its_number(setup, tmp_path: Path) -> None:
    path, _ = bad_table(setup, tmp_path, {9: BAD_LINES[9]})
    out = tmp_path / "o.gz"
    with pytest.raises(PhraseTableError, match=r"bad\.gz:9: expected 7 fields|bad\.gz:9: 3 fields"):
        run_rescore(path, setup["fwd"], out, window=4, chunk_lines=4)
    assert not out.exists() and not list(tmp_path.glob(".o.gz*"))  # no partial output left
    from smt_features.cli.rescore import cli_main

    rc = cli_main(["--table", str(path), "--model", str(setup["fwd"]), "--output", str(out), "--progress", "false"])
    assert rc == 2  # bad input: exit status 2 with FILE:LINE (nmt.core.errors)


@pytest.mark.parametrize("line_no", sorted(BAD_LINES))
def test_each_kind_of_bad_line_is_reported(setup, tmp_path: Path, line_no: int) -> None:
    path, _ = bad_table(setup, tmp_path, {line_no: BAD_LINES[line_no]})
    with pytest.raises(PhraseTableError, match=f":{line_no}:"):
        run_rescore(path, setup["fwd"], tmp_path / "o.gz", window=4, chunk_lines=4)


def test_skip_bad_drops_counts_and_lists(setup, tmp_path: Path) -> None:
    path, lines = bad_table(setup, tmp_path, BAD_LINES)
    out = tmp_path / "o.gz"
    summary = run_rescore(path, setup["fwd"], out, window=4, chunk_lines=8, skip_bad=True, resume=True)
    assert summary["stats"]["skipped"] == 4 and summary["stats"]["pairs"] == 36
    got = table_lines(out)[:-1]
    good = [line for i, line in enumerate(lines[:40], 1) if i not in BAD_LINES]
    assert [strip_appended(g, 1)[0] for g in got] == good  # nothing shifted
    side = Path(f"{out}.skipped").read_text(encoding="utf-8").splitlines()
    assert [int(s.split("\t")[0]) for s in side] == sorted(BAD_LINES)
    # the same bad lines are judged the same way by a shard that starts after the first line
    part = tmp_path / "p.gz"
    run_rescore(path, setup["fwd"], part, window=4, chunk_lines=8, skip_bad=True, shard="1/2")
    assert out.read_bytes().endswith(part.read_bytes())


def test_reverse_model_in_the_wrong_direction_is_refused(setup, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="same direction"):
        run_rescore(setup["table"], setup["fwd"], tmp_path / "o.gz", reverse_model=str(setup["fwd"]))


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
    run_rescore(setup["table"], setup["fwd"], a, window=50, chunk_lines=100)
    run_rescore(setup["table"], setup["fwd"], b, window=50, chunk_lines=100, amp="bf16")
    for x, y in zip(table_lines(a)[:-1], table_lines(b)[:-1]):
        (lx, (px,)), (ly, (py,)) = strip_appended(x, 1), strip_appended(y, 1)
        assert lx == ly and math.log(px) == pytest.approx(math.log(py), abs=0.05)


# -- the shard launcher (smt-rescore-sharded) --------------------------------------------------------------
def test_sharded_launcher_merges_in_order(setup, tmp_path: Path, capsys) -> None:
    from smt_features.cli.rescore_sharded import cli_main as launch_main
    from smt_features.neural.sharded import part_path

    single = tmp_path / "single.gz"
    run_rescore(setup["table"], setup["fwd"], single, window=10, chunk_lines=20, wp_column=True)
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
    bad_path, _ = bad_table(setup, tmp_path, {9: BAD_LINES[9]})
    merged_bad = tmp_path / "merged-bad.gz"
    rc = launch_main(["--shards", "2", "--output", str(merged_bad), "--table", str(bad_path), *args[2:]])
    assert refused(capsys, r"bad\.gz:9: .*\(shard 0/2", rc) and not merged_bad.exists()
    assert refused(capsys, None, launch_main(["--shards", "2", "--output", str(bad), *args, "--shard", "0/2"]))


def test_moses_ini_for_the_rescored_table_loads_in_the_decoder(setup, tmp_path: Path) -> None:
    """--moses-ini: the written config points at the new table with num-features 4 + 2 and a 0.2 weight
    per new score; the decoder loads the table with it (the column count must match)."""
    pytest.importorskip("kenlm")
    from smt_features.decode.load import build_decoder
    from smt_features.model.moses_ini import read_moses_ini
    from smt_features.model.moses_ini_build import default_config

    data_dir = TEST_DATA / "decoder"
    ini = tmp_path / "moses.ini"
    default_config(str(setup["table"]), str(data_dir / "toy.arpa"), lm_order=2).write(ini)
    out = tmp_path / "pt.rnn.gz"
    run_rescore(setup["table"], setup["fwd"], out, wp_column=True, moses_ini=str(ini))
    new = read_moses_ini(f"{out}.moses.ini")
    tm = new.feature("TranslationModel0")
    assert tm.get("num-features") == "6" and tm.get("path") == str(out.resolve())
    assert new.weights["TranslationModel0"] == [0.2] * 6 and new.weights["LM0"] == [0.5]
    decoder = build_decoder(new)
    first_src = next(iter(iter_phrase_table(setup["table"]))).src
    best = decoder.translate(" ".join(first_src))
    assert best.tokens and len(decoder.features.split(best.values)["TranslationModel0"]) == 6
