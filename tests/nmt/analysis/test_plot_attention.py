"""nmt-plot-attention: alignment heat-maps of nmt-translate --attention, strict reader, nothing partial on bad input."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from nmt.cli.plot_attention import cli_main as plot_main
from nmt.cli.train import cli_main as train_main
from nmt.cli.translate import cli_main as translate_main

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _record(line: int, source: list[str], target: list[str], rows: list[list[float]]) -> dict:
    return {"line": line, "source": source + ["</s>"], "target": target + ["</s>"], "attention": rows}


GOOD = [
    _record(1, ["the", "cat"], ["le", "chat"], [[0.9, 0.1, 0.0], [0.05, 0.95, 0.0], [0.0, 0.1, 0.9]]),
    _record(2, ["a", "$5", "dog"], ["un", "chien", "à", "5$"],
            [[1.0, 0, 0, 0], [0, 0, 1.0, 0], [0.2, 0.3, 0.3, 0.2], [0, 0.7, 0.2, 0.1], [0, 0, 0, 1.0]]),
    _record(3, ["yes"], ["oui"], [[0.6, 0.4], [0.3, 0.7]]),
    _record(4, ["no"], ["non"], [[0.5, 0.5], [0.0, 1.0]]),
]


def _write(path: Path, records: list, raw: dict[int, str] | None = None) -> Path:
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    for index, text in (raw or {}).items():
        lines[index] = text
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR", f"{path} is not a PNG"
    assert len(data) > 2000, f"{path}: only {len(data)} bytes"
    return struct.unpack(">II", data[16:24])


def test_default_plots_the_first_three_records(tmp_path: Path) -> None:
    att = _write(tmp_path / "hyp.attn.jsonl", GOOD)
    out = tmp_path / "plots"
    assert plot_main(["--attention", str(att), "--out-dir", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["attention.1.png", "attention.2.png", "attention.3.png"]
    for n in (1, 2, 3):
        width, height = _png_size(out / f"attention.{n}.png")
        assert width >= 200 and height >= 200
    # wider for more source words (4 columns against 2)
    assert _png_size(out / "attention.2.png")[0] > _png_size(out / "attention.3.png")[0]
    # the grey scale is 0 (black) .. 1 (white): cells of 0.25 and 0.75 are drawn in those greys
    import matplotlib.image as mpimg

    grey = _write(tmp_path / "grey.jsonl", [_record(7, ["x"], ["y"], [[0.25, 0.75], [0.75, 0.25]])])
    assert plot_main(["--attention", str(grey), "--out-dir", str(tmp_path / "g")]) == 0
    pixels = mpimg.imread(tmp_path / "g" / "attention.7.png")[..., :3].mean(-1)
    for level in (0.25, 0.75):
        share = float((abs(pixels - level) < 0.02).mean())
        assert share > 0.08, f"{share:.3f} of the pixels at grey {level}"


def test_lines_and_max_sentences_pick_records(tmp_path: Path, capsys) -> None:
    att = _write(tmp_path / "a.jsonl", GOOD)
    assert plot_main(["--attention", str(att), "--out-dir", str(tmp_path / "o"), "--lines", "4", "2"]) == 0
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["attention.2.png", "attention.4.png"]
    assert plot_main(["--attention", str(att), "--out-dir", str(tmp_path / "m"), "--max-sentences", "1"]) == 0
    assert [p.name for p in (tmp_path / "m").iterdir()] == ["attention.1.png"]
    capsys.readouterr()
    assert plot_main(["--attention", str(att), "--out-dir", str(tmp_path / "b"), "--lines", "1",
                      "--max-sentences", "2"]) == 2
    assert "--lines or --max-sentences, not both" in capsys.readouterr().err


def _bad_cases() -> dict[str, tuple[list, dict[int, str], str]]:
    short_row = _record(2, ["a", "b"], ["x"], [[0.5, 0.5], [0.2, 0.3, 0.5]])
    bad_sum = _record(2, ["a", "b"], ["x"], [[0.5, 0.5, 0.0], [0.2, 0.3, 0.49]])
    few_rows = _record(2, ["a", "b"], ["x", "y"], [[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    negative = _record(2, ["a"], ["x"], [[1.2, -0.2], [0.0, 1.0]])
    no_key = {k: v for k, v in GOOD[1].items() if k != "target"}
    return {
        "not JSON": (GOOD[:3], {1: '{"line": 2, "source": ['}, "not a JSON object"),
        "not an object": (GOOD[:3], {1: "[1, 2]"}, "not a JSON object"),
        "missing key": ([GOOD[0], no_key, GOOD[2]], {}, "missing key(s) target"),
        "row length": ([GOOD[0], short_row, GOOD[2]], {}, "attention row 1 has 2 weights, expected 3"),
        "row sum": ([GOOD[0], bad_sum, GOOD[2]], {}, "attention row 2 sums to 0.99, not 1"),
        "row count": ([GOOD[0], few_rows, GOOD[2]], {}, '"attention" has 2 rows, expected 3'),
        "weight range": ([GOOD[0], negative, GOOD[2]], {}, "must be a number in [0, 1]"),
        "line twice": ([GOOD[0], GOOD[0], GOOD[2]], {}, '"line": 1 again (first at line 1)'),
        "empty line": (GOOD[:3], {1: ""}, "empty line"),
    }


@pytest.mark.parametrize("case", sorted(_bad_cases()))
def test_bad_record_is_refused_at_file_line(case: str, tmp_path: Path, capsys) -> None:
    records, raw, what = _bad_cases()[case]
    att = _write(tmp_path / "bad.jsonl", records, raw)
    before = att.read_bytes()
    out = tmp_path / "plots"
    # the fault is in the second record, not one of those asked for: every record is checked
    assert plot_main(["--attention", str(att), "--out-dir", str(out), "--lines", "3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"nmt-plot-attention: {att}:2: ") and what in err, err
    assert "Traceback" not in err and err.count("\n") == 1
    assert not out.exists() and att.read_bytes() == before


def test_missing_line_empty_file_and_outputs_that_are_inputs(tmp_path: Path, capsys) -> None:
    att = _write(tmp_path / "a.jsonl", GOOD)
    out = tmp_path / "plots"
    assert plot_main(["--attention", str(att), "--out-dir", str(out), "--lines", "2", "9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"nmt-plot-attention: {att}: no record of input line 9") and "input lines 1..4" in err
    assert not out.exists()
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    assert plot_main(["--attention", str(empty), "--out-dir", str(out)]) == 2
    assert f"{empty}: empty" in capsys.readouterr().err and not out.exists()
    # the attention file sits where a PNG would go: refused, the input untouched
    out.mkdir()
    trap = _write(out / "attention.1.png", GOOD)
    before = trap.read_bytes()
    assert plot_main(["--attention", str(trap), "--out-dir", str(out)]) == 2
    assert "refusing to overwrite an input" in capsys.readouterr().err
    assert trap.read_bytes() == before and sorted(p.name for p in out.iterdir()) == ["attention.1.png"]
    assert plot_main(["--attention", str(att), "--out-dir", str(att)]) == 2  # --out-dir is a file
    assert "not a folder" in capsys.readouterr().err


def test_rnnsearch_translate_attention_then_plot(toy_data: Path, tmp_path: Path) -> None:
    model = tmp_path / "m"
    assert train_main(["--data-dir", str(toy_data), "--out-dir", str(model), "--arch", "rnnsearch", "--preset",
                       "rnnsearch-tiny", "--optimizer", "adam", "--lr", "0.01", "--batch-size", "16",
                       "--max-updates", "6", "--progress", "false", "--threads", "1"]) == 0
    src = tmp_path / "in.txt"
    src.write_text("s1 s2\ns3 s4 s5 s1\ns2\n", encoding="utf-8")
    att = tmp_path / "hyp.attn.jsonl"
    assert translate_main(["--model", str(model), "--checkpoint", "last", "--input", str(src), "--output",
                           str(tmp_path / "hyp.txt"), "--tokenized", "true", "--detokenize", "false",
                           "--beam-size", "2", "--threads", "1", "--attention", str(att)]) == 0
    out = tmp_path / "plots"
    assert plot_main(["--attention", str(att), "--out-dir", str(out), "--lines", "2", "3"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["attention.2.png", "attention.3.png"]
    # one column per source token + </s>: the 5-token source gives the wider figure
    assert _png_size(out / "attention.2.png")[0] > _png_size(out / "attention.3.png")[0]
