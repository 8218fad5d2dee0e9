"""Moses truecasing (nmt.data.truecase, nmt-truecase, nmt-prepare --truecase) on tiny hand-checked fixtures."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import sacremoses

from nmt.cli.truecase import cli_main
from nmt.core.io import read_lines
from nmt.data.truecase import Truecaser, count_casing, detruecase, model_lines, read_model
from nmt.data.prepare import PrepareConfig, prepare_parallel
from tests import ROOT

TEN_LINES = """\
The dog runs in Paris .
A man and the dog walk .
" The cat " sleeps in the house .
She said : The man is here . He is tall .
In Paris , the man saw John .
The man reads a book about Paris .
a lowercase start . ( The word after a bracket ) counts .
John and the cat play .
The house of John is big .
Dogs like the NATO park !
"""


def test_training_counts_as_train_truecaser_perl() -> None:
    lines = {line.split(" ", 1)[0].lower(): line for line in model_lines(count_casing(TEN_LINES.splitlines()))}
    # sentence starts never count: after the line start, a leading quote, ':' and '.'
    for start in ("she", "he", "dogs"):
        assert start not in lines
    assert lines["in"] == "in (2/2)"          # "In Paris" opens line 5: not counted
    assert lines["a"] == "a (2/2)"            # "A man" opens line 2; "a lowercase" opens line 7
    assert lines["the"] == "the (5/6) The (1)"  # '. (' : the bracket took the sentence start, "The" counts
    assert lines["john"] == "John (2/2)"      # lines 5 and 9; line 8's sentence-initial John does not count
    assert lines["nato"] == "NATO (1/1)" and lines["paris"] == "Paris (3/3)"
    assert lines['"'] == '" (1/1)' and lines["."] == ". (11/11)"  # tokens without letters count too


def test_truecase_and_detruecase(tmp_path: Path) -> None:
    truecaser = Truecaser.from_casing(count_casing(TEN_LINES.splitlines()))
    assert truecaser("THE man in paris .") == "the man in Paris ."        # sentence start: best casing
    assert truecaser("the dog . the cat sees john") == "the dog . the cat sees John"
    assert truecaser("He saw The dog") == "He saw The dog"                 # unknown type kept; known casing kept
    assert truecaser("he saw THE dog") == "he saw the dog"                 # unseen casing of a known type
    assert truecaser("") == ""
    assert detruecase("the dog . the cat ( the end ) ! \" the") == 'The dog . The cat ( the end ) ! " The'
    assert detruecase("élan vital") == "Élan vital" and detruecase("  ") == ""


def test_moses_model_files_both_ways(tmp_path: Path) -> None:
    moses = tmp_path / "truecase-model.en"   # as train-truecaser.perl writes it (--possiblyUseFirstToken: 0.1)
    moses.write_text("the (7/9) The (2)\nParis (3/3)\nnato (0.1/1.1) NATO (1)\n", encoding="utf-8")
    best, known = read_model(moses)
    assert best == {"the": "the", "paris": "Paris", "nato": "nato"} and known == {"the", "The", "Paris", "nato",
                                                                                  "NATO"}
    assert Truecaser(best, known)("THE NATO in PARIS") == "the NATO in Paris"
    ours = tmp_path / "ours"
    assert cli_main(["--train", str(tmp_path / "t.tok"), "--model", str(ours)]) == 2  # missing input
    (tmp_path / "t.tok").write_text(TEN_LINES, encoding="utf-8")
    assert cli_main(["--train", str(tmp_path / "t.tok"), "--model", str(ours)]) == 0
    theirs = sacremoses.MosesTruecaser(load_from=str(ours))   # sacremoses (a Moses port) reads our file
    ours_tc = Truecaser.load(ours)
    for line in ("THE man in paris .", "he saw THE john", "( the dog ) runs ."):
        assert theirs.truecase(line, return_str=True, use_known=True) == ours_tc(line)


@pytest.mark.parametrize("content, line, what", [
    ("the (2/2)\n\nParis (1/1)\n", 2, "empty line"),
    ("the (2/2) The\n", 1, "3 fields"),
    ("the (2) The (1)\n", 1, "expected (count/total)"),
    ("the (2/3) The 1\n", 1, "expected (count)"),
    ("the (2/3) Paris (1)\n", 1, "not a casing of"),
    ("the (2/2)\nParis (1/1)\nThe (1/1)\n", 3, "already on line 1"),
])
def test_bad_model_file_names_file_and_line(tmp_path: Path, capsys, content: str, line: int, what: str) -> None:
    model, text, out = tmp_path / "bad.model", tmp_path / "in.tok", tmp_path / "out.tc"
    model.write_text(content, encoding="utf-8")
    text.write_text("the dog\n", encoding="utf-8")
    assert cli_main(["--model", str(model), "--input", str(text), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"nmt-truecase: {model}:{line}: ") and what in err and "Traceback" not in err
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_cli_refuses_to_overwrite_and_bad_usage(tmp_path: Path, capsys) -> None:
    text = tmp_path / "in.tok"
    text.write_text("the dog\n", encoding="utf-8")
    assert cli_main(["--detruecase", "--input", str(text), "--output", str(text)]) == 2
    assert "refusing to overwrite an input" in capsys.readouterr().err
    assert cli_main(["--input", str(text), "--output", str(tmp_path / "o")]) == 2      # neither model nor detruecase
    assert cli_main(["--detruecase", "--input", str(text), "--output", str(tmp_path / "o")]) == 0
    assert read_lines(tmp_path / "o") == ["The dog"] and read_lines(text) == ["the dog"]


def _plain_corpus(folder: Path) -> Path:
    folder.mkdir()
    en = ["The dog sees Paris .", "A cat and the dog .", "He likes the cat in Paris .", "THE END ."]
    fr = ["Le chien voit Paris .", "Un chat et le chien .", "Il aime le chat à Paris .", "LA FIN ."]
    for name, rows in (("train", (en, fr)), ("dev", ([en[2]], [fr[2]]))):
        for lang, lines in zip(("en", "fr"), rows):
            (folder / f"{name}.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_prepare_truecase_writes_models_and_truecased_splits(tmp_path: Path) -> None:
    data = _plain_corpus(tmp_path / "corpus")
    plain = prepare_parallel(PrepareConfig(train=str(data / "train"), dev=str(data / "dev"),
                                           out_dir=str(tmp_path / "plain")))
    assert "truecase" not in plain and "truecase:" not in (tmp_path / "plain" / "config.yaml").read_text()
    out = tmp_path / "tc"
    stats = prepare_parallel(PrepareConfig(train=str(data / "train"), dev=str(data / "dev"), out_dir=str(out),
                                           truecase=True))
    assert stats["truecase"] == {"en": "truecase-model.en", "fr": "truecase-model.fr"}
    assert read_lines(out / "truecase-model.en")[:2] == ["dog (2/2)", "sees (1/1)"]
    assert read_lines(out / "train.tok.en") == ["the dog sees Paris .", "A cat and the dog .",  # "a", "he":
                                                "He likes the cat in Paris .", "the END ."]  # never seen inside
    assert read_lines(out / "train.en")[0] == "The dog sees Paris ."          # raw text stays cased
    assert read_lines(out / "dev.tok.fr") == ["Il aime le chat à Paris ."]
    vocab = {row.split("\t")[0] for row in read_lines(out / "vocab.en.tsv")}
    assert "the" in vocab and "The" not in vocab and "THE" not in vocab
    assert json.loads((out / "prepare.json").read_text())["truecase"]["fr"] == "truecase-model.fr"
    assert not [p for p in out.iterdir() if p.name.startswith(".")]
    with pytest.raises(ValueError, match="--truecase needs --tokenizer moses"):
        prepare_parallel(PrepareConfig(train=str(data / "train"), out_dir=str(tmp_path / "sp"), truecase=True,
                                       tokenizer="sentencepiece"))


def test_experiment_recipe_truecase_plan(tmp_path: Path) -> None:
    """`truecase: true` in an experiment config: nmt-prepare --truecase true and every stage --truecase (dry run);
    without the key the plan has no --truecase at all."""
    data = tmp_path / "d"
    data.mkdir()
    for name in ("tr", "dv", "ts"):
        for lang in ("en", "fr"):
            (data / f"{name}.{lang}").write_text("a house .\n", encoding="utf-8")
    env = {**os.environ, "PYTHON": sys.executable, "BIN": str(Path(sys.executable).parent), "RECIPE_DRY_RUN": "1"}
    cfg = tmp_path / "tc.yaml"
    plans = {}
    for key in ("  truecase: true\n", ""):
        cfg.write_text("experiment:\n  title: t\n  scale: s\n"
                       f"  files: {{train: '{data}/tr', dev: '{data}/dv', tests: ['{data}/ts']}}\n"
                       "  src: en\n  tgt: fr\n  systems: [Baseline, +RNN, +LSTM-LM]\n  mert_runs: 1\n"
                       f"  lm_corpus: target\n  filter_table: false\n{key}", encoding="utf-8")
        proc = subprocess.run(["bash", "recipes/experiment/run.sh", str(cfg), "--work", str(tmp_path / "w")],
                              capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
        assert proc.returncode == 0, proc.stderr
        plans[bool(key)] = [shlex.split(line[2:]) for line in proc.stdout.splitlines() if line.startswith("+ ")]
    on, off = plans[True], plans[False]
    assert len(on) == len(off) == 4                                # prepare, Baseline, +RNN, the LM row
    assert on[0][0].endswith("nmt-prepare") and on[0][on[0].index("--truecase") + 1] == "true"
    assert all("--truecase" in step for step in on[1:])
    assert not any("--truecase" in step for step in off)


def test_recipe_detruecases_before_scoring(tmp_path: Path) -> None:
    """common.sh's evaluate_outputs: with --truecase (truecase=1) the decoder output is detruecased (nmt-evaluate
    --detruecase) before detokenizing and sacreBLEU, every set of the call; without it the output is scored as it
    is; the input is kept."""
    hyp = tmp_path / "test.tok.fr"
    hyp.write_text("le chien . il dort\nune maison\n", encoding="utf-8")
    ref = tmp_path / "test.ref.fr"
    ref.write_text("Le chien. Il dort\nUne maison\n", encoding="utf-8")
    script = tmp_path / "s.sh"
    script.write_text(f'source "{ROOT}/recipes/lib/common.sh"\n'
                      f'evaluate_outputs "{hyp}" "{tmp_path}/off.fr" "{ref}" off "{tmp_path}/off.json"\n'
                      f'truecase=1\nevaluate_outputs "{hyp}" "{tmp_path}/on.fr" "{ref}" on "{tmp_path}/on.json" '
                      f'"{hyp}" "{tmp_path}/on2.fr" "{ref}" on2 "{tmp_path}/on2.json"\n',
                      encoding="utf-8")
    env = {**os.environ, "PYTHON": sys.executable, "BIN": str(Path(sys.executable).parent)}
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    assert read_lines(tmp_path / "off.fr") == ["le chien. il dort", "une maison"]
    assert read_lines(tmp_path / "on.fr") == read_lines(tmp_path / "on2.fr") == ["Le chien. Il dort", "Une maison"]
    assert json.loads((tmp_path / "on.json").read_text())["bleu"] == pytest.approx(100.0)
    assert json.loads((tmp_path / "off.json").read_text())["bleu"] < 100.0
    assert read_lines(hyp) == ["le chien . il dort", "une maison"]


def test_evaluate_detruecase_needs_detokenize(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """nmt-evaluate --detruecase works on Moses-tokenized output: without --detokenize it is refused (exit 2,
    one line, no JSON written)."""
    from nmt.cli.evaluate import cli_main

    (tmp_path / "hyp").write_text("le chien .\n", encoding="utf-8")
    (tmp_path / "ref").write_text("Le chien.\n", encoding="utf-8")
    assert cli_main(["--hyp", str(tmp_path / "hyp"), "--ref", str(tmp_path / "ref"), "--detruecase",
                     "--json", str(tmp_path / "s.json")]) == 2
    err = capsys.readouterr().err
    assert "--detruecase needs --detokenize LANG" in err and "Traceback" not in err
    assert not (tmp_path / "s.json").exists()
