"""``--config FILE[:SECTION]`` values are checked against each option's type when the config is read
(nmt.core.config): a wrong type or choice is bad input (``FILE:SECTION: OPTION: expected …``, exit 2)."""
from __future__ import annotations

import pytest

from nmt.core import config as C
from nmt.core.errors import UsageError
from tests.refusal import refused


def _yaml(tmp_path, text: str):
    path = tmp_path / "run.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_nmt_prepare_refuses_a_bad_type_and_a_bad_choice(tmp_path, capsys):
    from nmt.cli.prepare import cli_main

    cfg = _yaml(tmp_path, "prep:\n  workers: many\nbad_choice:\n  tokenizer: spaces\n")
    assert refused(capsys, None, cli_main(["--config", f"{cfg}:prep"]),
                   f"nmt-prepare: {cfg}:prep: workers: expected an integer, got 'many'")
    assert refused(capsys, None, cli_main(["--config", f"{cfg}:bad_choice"]),
                   f"nmt-prepare: {cfg}:bad_choice: tokenizer: expected one of moses, sentencepiece, got 'spaces'")


def test_a_good_config_is_read_and_converted_as_the_flags_would_be(tmp_path):
    from nmt.data.prepare import PrepareConfig

    cfg = _yaml(tmp_path, "prep:\n  workers: '3'\n  tokenizer: sentencepiece\n  out_dir: 2024\n")
    got = C.parse(PrepareConfig, ["--config", f"{cfg}:prep"])
    assert (got.workers, got.tokenizer, got.out_dir) == (3, "sentencepiece", "2024")
    assert C.parse(PrepareConfig, ["--config", f"{cfg}:prep", "--workers", "5"]).workers == 5


@pytest.mark.parametrize("tp, value, want", [
    (int, 4, 4), (int, "4", 4), (float, 1, 1.0), (float, "1e-3", 1e-3), (bool, False, False), (bool, "yes", True),
    (str, "x", "x"), (str, 7, "7"), (list[str], ["a", 3], ["a", "3"]), (list[int], 5, [5]),
])
def test_check_value_accepts(tp, value, want):
    assert C.check_value(tp, value, "f.yaml:s: opt") == want


@pytest.mark.parametrize("tp, value, words", [
    (int, "many", "expected an integer, got 'many'"), (int, 2.5, "expected an integer, got 2.5"),
    (int, True, "expected an integer, got True"), (float, "fast", "expected a number, got 'fast'"),
    (bool, "maybe", "expected a boolean (true/false), got 'maybe'"), (bool, 3, "expected a boolean"),
    (str, [1, 2], "expected a string, got [1, 2]"), (list[int], ["x"], "expected an integer, got 'x'"),
    (list[str], {"a": 1}, "expected a list"), (int, None, "expected an integer, got nothing"),
])
def test_check_value_refuses(tp, value, words):
    with pytest.raises(UsageError, match="^f.yaml:s: opt: ") as err:
        C.check_value(tp, value, "f.yaml:s: opt")
    assert words in str(err.value)


def test_choices_apply_to_list_items():
    assert C.check_value(list[str], ["a", "b"], "w", ("a", "b")) == ["a", "b"]
    with pytest.raises(UsageError, match="w: expected one of a, b, got 'c'"):
        C.check_value(list[str], ["a", "c"], "w", ("a", "b"))
