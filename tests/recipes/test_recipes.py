"""Every recipe's --quick run, end to end as a user calls it (CPU, CI scale). The recipes that read
the real corpora skip when ``$MT_DATA`` (default ``../shared/data``) does not hold them. The two experiment
tables are built stage by stage in test_multi30k_table_quick.py and test_wmt_small_quick.py."""
from __future__ import annotations

import csv
import json
import math
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from tests import ROOT
from tests.recipes.helpers import ENV, MT_DATA, need, need_tools, run

def test_reverse_copy_quick(tmp_path: Path) -> None:
    out = run("recipes/reverse_copy/run.sh", "--quick", "--threads", "1", "--work", str(tmp_path))
    res = json.loads((tmp_path / "results.json").read_text())
    assert set(res["models"]) == {"lstm", "mogrifier"}
    for model in res["models"].values():
        first, last = model["curve"][0][1], model["curve"][-1][1]
        assert last < first                                    # it learns something in 40 steps
        assert all(0 < v["cross_entropy"] < 10 for v in model["final"].values())
    assert (tmp_path / "cross_entropy_vs_length.png").stat().st_size > 1000
    assert "| mogrifier (r=5) |" in out


def test_sentence_completion_trains_the_papers_model() -> None:
    """The 69.2 % model of the RMN paper (§6) is what run.sh trains by default, at both scales: a
    unidirectional RM(+tM-g) with three LSTM layers below the memory block and dropout 0.3."""
    import yaml

    from nmt.models.lm import build_config, build_lm

    here = ROOT / "recipes" / "sentence_completion"
    default = re.search(r'^models="([^"]*)"$', (here / "run.sh").read_text(), re.M).group(1).split()
    assert "rm+tM-g-3x128" in default
    cfg = yaml.safe_load((here / "config.yaml").read_text())
    for section in ("rm+tM-g-3x128", "rm+tM-g-3x128-quick"):
        arch, model = build_config(cfg[section]["arch"])
        assert arch == "rm" and (model.num_layers, model.temporal, model.composition) == (3, True, "gating")
        assert model.dropout_emb == model.dropout_hidden == model.dropout_out == 0.3
    lm = build_lm(cfg["rm+tM-g-3x128"]["arch"], 50)
    assert lm.lstm.num_layers == 3 and lm.lstm.dropout == 0.3 and not lm.lstm.bidirectional
    assert not hasattr(lm, "top")                                  # RM: no LSTM above the memory block


@pytest.mark.slow
def test_sentence_completion_quick(tmp_path: Path) -> None:
    """The default models (LSTM and the paper's RM(+tM-g), 3 LSTM layers, dropout 0.3) at --quick scale:
    each answers every question with one of its five candidates, the answer being the candidate it
    scores highest, and the accuracy is the share of those answers that match the answer key."""
    need("msr-sentence-completion/Holmes_Training_Data.tar.xz", "msr-sentence-completion/testing_data.csv",
         "msr-sentence-completion/test_answer.csv")
    need_tools()
    out = run("recipes/sentence_completion/run.sh", "--quick", "--threads", "1", "--work", str(tmp_path),
              timeout=1200)
    msr = MT_DATA / "msr-sentence-completion"
    with open(msr / "test_answer.csv", encoding="utf-8", newline="") as fh:
        key = {row["id"]: row["answer"].strip() for row in csv.DictReader(fh)}
    assert len(key) == 1040
    acc = json.loads((tmp_path / "accuracy.json").read_text())
    assert set(acc) == {"kenlm-5gram", "lstm-1x128", "rm+tM-g-3x128"}
    for name, v in acc.items():
        rows = [line.split("\t") for line in (tmp_path / "predictions" / f"{name}.tsv").read_text().splitlines()]
        assert [r[0] for r in rows] == list(key)                      # every question once, in order
        correct = 0
        for qid, pick, gold, scores in rows:
            s = [float(x) for x in scores.split()]
            assert len(s) == 5 and all(math.isfinite(x) and x < 0 for x in s)   # ln p of a whole sentence
            assert len(pick) == 1 and pick in "abcde"
            assert s["abcde".index(pick)] >= max(s) - 1e-4        # the best-scoring one (scores printed to 4 places)
            assert gold == key[qid]
            correct += pick == gold
        assert v["questions"] == 1040 and v["correct"] == correct
        assert 0.0 <= v["accuracy"] / 100 <= 1.0 and v["accuracy"] == round(100 * correct / 1040, 2)
        assert f"{name}: {correct} / 1040 correct" in out
    assert len((tmp_path / "text" / "novels.txt").read_text().split()) == 2
    # the neural model really is the paper's sentence-completion RM: 3 LSTM layers below the memory block
    import yaml

    summary = json.loads((tmp_path / "rm+tM-g-3x128" / "summary.json").read_text())
    assert summary["arch"] == "rm" and summary["preset"] == "rm-paper-msr" and 0 < summary["train_lines"] <= 1000
    model = yaml.safe_load((tmp_path / "rm+tM-g-3x128" / "config.yaml").read_text())["model"]
    assert (model["num_layers"], model["temporal"], model["composition"]) == (3, True, "gating")
    assert model["dropout_hidden"] == model["dropout_out"] == 0.3


@pytest.mark.slow
def test_multi30k_nmt_quick_tiny(tmp_path: Path) -> None:
    """The README's main job, with training cut to 5 updates (the full --quick run is `make run`; each update of
    its cpu-small model takes about 0.5 s here, so 20 updates were a quarter of the test)."""
    need("multi30k/train.en.gz", "multi30k/test_2017_flickr.fr.gz")
    out = run("recipes/multi30k_enfr/run.sh", "--quick", "--work", str(tmp_path), "--", "--max-updates", "5",
              "--threads", "1")
    import sacrebleu

    for split in ("test_2016_flickr", "test_2017_flickr"):
        res = json.loads((tmp_path / f"{split}.scores.json").read_text())
        hyp = (tmp_path / f"{split}.hyp.fr").read_text(encoding="utf-8").splitlines()
        ref = (tmp_path / "data" / f"{split}.fr").read_text(encoding="utf-8").splitlines()
        src = (tmp_path / "data" / f"{split}.en").read_text(encoding="utf-8").splitlines()
        assert res["num_sentences"] == len(hyp) == len(ref) == len(src) == 1000
        # the recorded scores are sacreBLEU's on the files the recipe wrote (recomputed here) ...
        assert res["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hyp, [ref]).score, abs=1e-6)
        assert res["chrf"] == pytest.approx(sacrebleu.corpus_chrf(hyp, [ref]).score, abs=1e-6)
        # ... of decoder output, not the source passed through (5 updates are far too few to translate,
        # so no quality floor here; the SMT baseline tests have one)
        assert any(h.strip() for h in hyp)
        assert sum(h == s for h, s in zip(hyp, src)) < 10
    assert "BLEU" in out


def test_recipes_share_recipes_lib_and_hold_no_inline_python() -> None:
    """Every recipe script sources recipes/lib/common.sh; none runs Python from a heredoc or -c, and none
    reaches into another recipe's folder for a script (shared pieces live in recipes/lib)."""
    scripts = sorted((ROOT / "recipes").glob("*/*.sh"))
    assert scripts
    for path in scripts:
        text = path.read_text(encoding="utf-8")
        folder = path.parent.name
        if folder != "lib":
            assert 'source "$(dirname "$0")/../lib/common.sh"' in text, path
        assert not re.search(r"python\"? +(-c|- )|<<'?(PY|EOF)", text), path
        code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        others = {m.group(1) for m in re.finditer(r"recipes/(\w+)/\w+\.(?:sh|py)", code)} - {folder, "lib"}
        if folder == "lib":
            others -= {"ptb_lm"}  # lib/lm_rerank.sh trains the target-side LMs with recipes/ptb_lm/run.sh
        assert not others, (path, others)


def test_config_value_and_run_step(tmp_path: Path) -> None:
    cfg = ROOT / "recipes" / "multi30k_enfr" / "config.yaml"
    lib = ROOT / "recipes" / "lib"

    def value(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(lib / "config_value.py"), *args], capture_output=True,
                              text=True, timeout=60)
    assert value(f"{cfg}:smt_quick", "mert_nbest").stdout == "20\n"
    assert value(f"{cfg}:smt", "mert_max_iterations").stdout == ""          # empty: the command's default
    assert value(f"{cfg}:prepare", "test_splits").stdout == "test_2016_flickr\ntest_2017_flickr\n"
    missing = value(f"{cfg}:smt", "no_such_key")
    assert missing.returncode == 1 and "no no_such_key in smt" in missing.stderr
    flags = value("--flags", f"{ROOT / 'recipes' / 'reverse_copy' / 'config.yaml'}:quick").stdout.split("\n")
    assert flags[0].startswith("--")
    # run_step reuses a finished step (its output exists) and runs the command otherwise
    script = tmp_path / "s.sh"
    script.write_text(f'source "{lib}/common.sh"\n'
                      f'run_step a "{tmp_path}/out" -- touch "{tmp_path}/ran1"\n'
                      f'touch "{tmp_path}/out"\n'
                      f'run_step b "{tmp_path}/out" -- touch "{tmp_path}/ran2"\n', encoding="utf-8")
    run(str(script))
    assert (tmp_path / "ran1").exists() and not (tmp_path / "ran2").exists()


def test_config_load_answers_as_config_value_py(tmp_path: Path) -> None:
    """After `config_load FILE`, common.sh's config_value answers from memory (no Python process: py is
    /bin/false then) with config_value.py's own output, refusal and exit status; config_has says which nodes
    exist; a file that cannot be read stops config_load with config_value.py's one line."""
    import contextlib
    import io
    sys.path.insert(0, str(ROOT / "recipes" / "lib"))
    try:
        import config_value
    finally:
        sys.path.pop(0)
    lib = ROOT / "recipes" / "lib"
    mine = tmp_path / "my config.yaml"
    mine.write_text("a:\n  n: 3\n  x: 0.3\n  none: null\n  flag: true\n  no_: false\n  list: [p, 2, q r]\n"
                    "  deep: {inner: {k: v}}\n  empty_list: []\n  odd: 'two\n\n    lines'\n"
                    "  flags: {max_len: 50, drop: true, keep: false, sets: [a, b], nothing: null}\n"
                    "top_value: 7\n1: not a string key\n", encoding="utf-8")
    multi30k = ROOT / "recipes" / "experiment" / "multi30k.yaml"
    questions = [  # (asked from memory, or config_value.py's to answer: a section's value, flags of a value)
        [f"{mine}:a", "n"], [f"{mine}:a", "x"], [f"{mine}:a", "none"], [f"{mine}:a", "flag"], [f"{mine}:a", "no_"],
        [f"{mine}:a", "list"], [f"{mine}:a", "deep", "inner", "k"], [f"{mine}:a", "empty_list"], [f"{mine}:a", "odd"],
        [f"{mine}:a", "missing"], [f"{mine}:nosection", "n"], [f"{mine}:a", "n", "below_a_value"],
        [f"{mine}:a", "deep", "missing", "k"], [str(mine), "top_value"], [str(mine), "1"], [str(mine), "a", "n"],
        [f"{mine}:top_value", "k"], ["--flags", f"{mine}:a"], ["--flags", f"{mine}:a:flags"],
        [f"{mine}:a:flags", "max_len"], ["--flags", f"{mine}:nosection"],
        [f"{multi30k}:smt_quick", "mert_nbest"], [f"{multi30k}:experiment", "systems"],
        ["--flags", f"{multi30k}:train_phrases_quick"], [f"{multi30k}:smt", "no_such_key"],
    ]

    def direct(question: list[str]) -> tuple[int, str, str]:
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                code = config_value.main(question)
        except SystemExit as stop:
            return 1, out.getvalue(), f"{stop.code}\n"
        return code, out.getvalue(), ""

    lines = [f'source "{lib}/common.sh"', f'config_load "{mine}"', f'config_load "{multi30k}"', "py=/bin/false",
             "set +e"]
    for i, question in enumerate(questions):
        words = " ".join(map(shlex.quote, question))
        lines += [f'(config_value {words}) > "{tmp_path}/out.{i}" 2> "{tmp_path}/err.{i}"; echo $? > "{tmp_path}/rc.{i}"',
                  f'config_has {words} && touch "{tmp_path}/has.{i}"']
    (tmp_path / "ask.sh").write_text("\n".join(lines) + "\nexit 0\n", encoding="utf-8")
    run(str(tmp_path / "ask.sh"))
    for i, question in enumerate(questions):
        got = tuple(f(tmp_path / f"{name}.{i}") for f, name in ((lambda p: int(p.read_text()), "rc"),
                                                                 (Path.read_text, "out"), (Path.read_text, "err")))
        assert got == direct(question), question
        if question[0] != "--flags":
            assert (tmp_path / f"has.{i}").exists() == (got[0] == 0), question
    # a section asked as a value is config_value.py's to print (py is /bin/false here: status 1, nothing printed)
    assert direct([f"{mine}:a", "deep"])[1].startswith("{")
    gone = subprocess.run(["bash", "-c", f'source "{lib}/common.sh"; config_load "{tmp_path}/gone.yaml"; echo after'],
                          capture_output=True, text=True, timeout=60, env=ENV)
    assert gone.returncode == 1 and gone.stdout == ""
    assert gone.stderr == f"config_value.py: {tmp_path}/gone.yaml: No such file or directory\n"


def test_lm_rerank_refuses_an_unknown_optimizer(tmp_path: Path) -> None:
    """lm_rerank.sh --optimizer: mert, kbmira or pro; anything else stops before any work (exit 2)."""
    proc = subprocess.run(["bash", "recipes/lib/lm_rerank.sh", "--config", "c.yaml", "--smt-work", str(tmp_path / "smt"),
                           "--rnn-work", str(tmp_path / "rnn"), "--lm-work", str(tmp_path / "lm"), "--work",
                           str(tmp_path / "rerank"), "--rows", "rnnsearch", "--rnnsearch", "m", "--optimizer", "sgd"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, env=ENV)
    assert proc.returncode == 2 and "--optimizer must be mert, kbmira or pro, not 'sgd'" in proc.stderr
    assert not (tmp_path / "rerank").exists()


def test_lm_rerank_refuses_a_bad_prefix_tree_value(tmp_path: Path) -> None:
    """lm_rerank.sh --prefix-tree (or the config's smt.rerank_prefix_tree): true or false; anything else stops
    before any work (exit 2)."""
    proc = subprocess.run(["bash", "recipes/lib/lm_rerank.sh", "--config", "recipes/experiment/multi30k.yaml",
                           "--smt-work", str(tmp_path / "smt"), "--rnn-work", str(tmp_path / "rnn"), "--lm-work",
                           str(tmp_path / "lm"), "--work", str(tmp_path / "rerank"), "--rows", "rnnsearch",
                           "--rnnsearch", "m", "--prefix-tree", "maybe"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, env=ENV)
    assert proc.returncode == 2 and "--prefix-tree (smt.rerank_prefix_tree) must be true or false, not 'maybe'" \
        in proc.stderr
    assert not (tmp_path / "rerank").exists()


def test_experiment_recipe_dry_run_on_plain_files(tmp_path: Path) -> None:
    """recipes/experiment/run.sh CONFIG with RECIPE_DRY_RUN=1: the plan of a config naming plain PREFIX.LANG
    files (set names = the prefixes' base names, any number of tests, only the stages the systems need), and
    nothing run; an unknown system is refused (exit 2)."""
    data = tmp_path / "my data"
    data.mkdir()
    for name in ("corpus", "heldout", "news1", "news2", "news3"):
        for lang, line in (("en", "a house ."), ("fr", "une maison .")):
            (data / f"{name}.{lang}").write_text(line + "\n", encoding="utf-8")
    systems = "[Baseline, +RNN, +Mogrifier-LM]"
    cfg = tmp_path / "mine.yaml"

    def write(systems: str, lm: str = "lm_corpus: my-lm") -> None:
        cfg.write_text(
            "experiment:\n  title: mine\n  scale: tiny\n  scale_quick: tinier\n"
            f"  files: {{train: '{data}/corpus', dev: '{data}/heldout',\n"
            f"          tests: ['{data}/news1', '{data}/news2', '{data}/news3']}}\n"
            f"  src: en\n  tgt: fr\n  systems: {systems}\n  mert_runs: 2\n  {lm}\n"
            "  filter_table: true\n", encoding="utf-8")
    write(systems)
    work = tmp_path / "work"
    proc = subprocess.run(["bash", "recipes/experiment/run.sh", str(cfg), "--quick", "--work", str(work),
                           "--threads", "1"], capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env={**ENV, "RECIPE_DRY_RUN": "1"})
    assert proc.returncode == 0, proc.stderr
    plan = [shlex.split(line[2:]) for line in proc.stdout.splitlines() if line.startswith("+ ")]
    assert len(plan) == 4, plan                                    # prepare, Baseline, +RNN, the LM row

    def after(words: list[str], flag: str, n: int = 1) -> list[str]:
        return words[words.index(flag) + 1:words.index(flag) + 1 + n]
    assert plan[0][0].endswith("nmt-prepare") and after(plan[0], "--train") == [f"{data}/corpus"]
    assert after(plan[0], "--test", 3) == [f"{data}/news1", f"{data}/news2", f"{data}/news3"]
    assert after(plan[0], "--src-lang") == ["en"] and after(plan[0], "--tgt-lang") == ["fr"]
    assert after(plan[1], "--train") == ["corpus"]
    assert plan[1][1].endswith("smt_baseline.sh") and "--quick" in plan[1]
    assert after(plan[1], "--dev") == ["heldout"] and after(plan[1], "--tests") == ["news1 news2 news3"]
    assert after(plan[1], "--mert-runs") == ["2"] and after(plan[1], "--threads") == ["1"]
    assert plan[2][1].endswith("rnn_rescore.sh") and after(plan[2], "--systems") == ["rnn"]
    assert after(plan[2], "--filter-sets") == ["heldout news1 news2 news3"]
    assert plan[3][1].endswith("lm_rerank.sh") and after(plan[3], "--rows") == ["mog"]
    assert after(plan[3], "--lm-corpus") == ["my-lm"]
    assert "scale: tinier" in proc.stdout
    assert not (work / "smt" / "data").exists()                    # a dry run runs nothing
    # lm_corpus: target: the LMs on the experiment's own tokenized target side (train, dev, first test)
    write(systems, "lm_corpus: target\n  lm_epochs: 1\n  lm_max_updates: 300")
    proc = subprocess.run(["bash", "recipes/experiment/run.sh", str(cfg), "--work", str(work)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, env={**ENV, "RECIPE_DRY_RUN": "1"})
    assert proc.returncode == 0, proc.stderr
    lm_step = [shlex.split(line[2:]) for line in proc.stdout.splitlines() if "lm_rerank.sh" in line][0]
    assert after(lm_step, "--lm-corpus") == ["files"] and after(lm_step, "--lm-epochs") == ["1"]
    assert after(lm_step, "--lm-max-updates") == ["300"]
    # --quick reads lm_epochs_quick / lm_max_updates_quick instead (the suite's tiny scale)
    write(systems, "lm_corpus: target\n  lm_epochs: 5\n  lm_max_updates_quick: 20")
    proc = subprocess.run(["bash", "recipes/experiment/run.sh", str(cfg), "--quick", "--work", str(work)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, env={**ENV, "RECIPE_DRY_RUN": "1"})
    assert proc.returncode == 0, proc.stderr
    lm_step = [shlex.split(line[2:]) for line in proc.stdout.splitlines() if "lm_rerank.sh" in line][0]
    assert after(lm_step, "--lm-max-updates") == ["20"] and "--lm-epochs" not in lm_step
    assert after(lm_step, "--lm-text") == [" ".join(f"{work}/smt/data/{s}.tok.fr" for s in
                                                    ("corpus", "heldout", "news1"))]
    # +RNNsearch alone: its model is trained on the prepared pairs, and no LM is needed (no lm_corpus)
    write("[Baseline, +RNNsearch]", "lm_epochs: 1")
    proc = subprocess.run(["bash", "recipes/experiment/run.sh", str(cfg), "--work", str(work)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, env={**ENV, "RECIPE_DRY_RUN": "1"})
    assert proc.returncode == 0, proc.stderr
    plan = [shlex.split(line[2:]) for line in proc.stdout.splitlines() if line.startswith("+ ")]
    assert [p[1] if p[0] == "bash" else p[0] for p in plan][2:] == ["run_step", str(ROOT / "recipes/lib/lm_rerank.sh")]
    assert plan[2][-1] == "train_rnnsearch" and after(plan[3], "--rows") == ["rnnsearch"]
    assert after(plan[3], "--rnnsearch") == [f"{work}/rnnsearch/model"] and "--lm-corpus" not in plan[3]
    # +all+RNNsearch: the +RNN+WP runs, the RNNsearch model and the LMs, one reranking step
    write("[Baseline, +all+RNNsearch]", "lm_corpus: my-lm")
    proc = subprocess.run(["bash", "recipes/experiment/run.sh", str(cfg), "--work", str(work)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, env={**ENV, "RECIPE_DRY_RUN": "1"})
    assert proc.returncode == 0, proc.stderr
    plan = [shlex.split(line[2:]) for line in proc.stdout.splitlines() if line.startswith("+ ")]
    assert after(plan[2], "--systems") == ["rnnwp"] and plan[3][-1] == "train_rnnsearch"
    assert after(plan[4], "--rows") == ["allrs"] and after(plan[4], "--rnnsearch") == [f"{work}/rnnsearch/model"]
    assert after(plan[4], "--lm-corpus") == ["my-lm"]
    write("[Baseline, +BERT]")
    bad = subprocess.run(["bash", "recipes/experiment/run.sh", str(cfg), "--work", str(work)],
                         capture_output=True, text=True, timeout=60, cwd=ROOT, env={**ENV, "RECIPE_DRY_RUN": "1"})
    assert bad.returncode == 2 and "unknown system '+BERT'" in bad.stderr


def test_experiment_refuses_max_eval_pairs_below_the_lines_it_scores(tmp_path: Path) -> None:
    """experiment.sh (RECIPE_DRY_RUN=1): a prepare section whose max_eval_pairs (nmt-prepare --max-eval-pairs) keeps
    fewer dev/test pairs than smt[_quick]'s dev_lines or test_lines ask for is refused before anything runs."""
    data = tmp_path / "data"
    data.mkdir()
    for name in ("corpus", "heldout", "news"):
        for lang in ("en", "fr"):
            (data / f"{name}.{lang}").write_text("a\n", encoding="utf-8")
    cfg = tmp_path / "mine.yaml"

    def plan(dev_lines: str, test_lines: str) -> subprocess.CompletedProcess:
        cfg.write_text("experiment:\n  title: mine\n  scale: s\n  scale_quick: q\n"
                       f"  files: {{train: '{data}/corpus', dev: '{data}/heldout', tests: ['{data}/news']}}\n"
                       "  src: en\n  tgt: fr\n  systems: [Baseline]\n  mert_runs: 1\n  filter_table: false\n"
                       "prepare: {max_len: 80}\nprepare_quick: {max_len: 80, max_eval_pairs: 100}\n"
                       f"smt_quick: {{dev_lines: {dev_lines}, test_lines: {test_lines}}}\n", encoding="utf-8")
        return subprocess.run(["bash", "recipes/experiment/run.sh", str(cfg), "--quick", "--work", str(tmp_path / "w")],
                              capture_output=True, text=True, timeout=60, cwd=ROOT, env={**ENV, "RECIPE_DRY_RUN": "1"})
    ok = plan("100", "50")
    assert ok.returncode == 0, ok.stderr
    assert f"--config {cfg}:prepare_quick" in ok.stdout
    for dev_lines, test_lines, key, shown in (("101", "50", "dev_lines", "101"), ("100", "", "test_lines", "all")):
        bad = plan(dev_lines, test_lines)
        assert bad.returncode == 2 and "Traceback" not in bad.stderr
        assert bad.stderr.strip() == (f"experiment.sh: {cfg}: prepare_quick's max_eval_pairs (100) keeps fewer "
                                      f"dev/test pairs than smt_quick's {key} ({shown} lines)")
    assert plan("100", "50").returncode == 0 and not (tmp_path / "w" / "smt" / "data").exists()


def test_rnn_rescore_scores_the_table_with_the_configs_checkpoint(tmp_path: Path) -> None:
    """rnn_rescore.sh (RECIPE_DRY_RUN=1, --stop-after rescore): smt-rescore gets the config's
    smt.phrase_checkpoint (auto without it), and --rescore-flags come after it, so a row can override it."""
    smt = tmp_path / "smt"
    (smt / "model").mkdir(parents=True)
    (smt / "data").mkdir()
    (smt / "model" / "moses.ini").write_text("", encoding="utf-8")
    for lang in ("en", "fr"):
        (smt / "data" / f"vocab.{lang}.tsv").write_text("<pad>\n<unk>\n<s>\n</s>\na\n", encoding="utf-8")
    cfg = tmp_path / "cfg.yaml"

    def rescore_step(checkpoint: str, *extra: str) -> list[str]:
        cfg.write_text("train_phrases:\n  preset: tiny\nsmt:\n  dev: val\n  tests: test\n  mert_nbest: 10\n"
                       f"  mert_max_iterations:\n  mert_flags:\n  phrase_vocab: full\n{checkpoint}", encoding="utf-8")
        proc = subprocess.run(["bash", "recipes/lib/rnn_rescore.sh", "--config", str(cfg), "--smt-work", str(smt),
                               "--work", str(tmp_path / "work"), "--threads", "1", "--stop-after", "rescore", *extra],
                              capture_output=True, text=True, timeout=60, cwd=ROOT, env={**ENV, "RECIPE_DRY_RUN": "1"})
        assert proc.returncode == 0, proc.stderr
        steps = [shlex.split(line[2:]) for line in proc.stdout.splitlines() if line.startswith("+ ")]
        return [s for s in steps if s[0].endswith("smt-rescore")][0]

    def checkpoints(step: list[str]) -> list[str]:
        return [step[i + 1] for i, word in enumerate(step) if word == "--checkpoint"]
    assert checkpoints(rescore_step("  phrase_checkpoint: epoch2\n")) == ["epoch2"]
    assert checkpoints(rescore_step("")) == ["auto"]
    assert checkpoints(rescore_step("  phrase_checkpoint: last\n", "--rescore-flags", "--checkpoint best")) == \
        ["last", "best"]   # the later one wins (smt-rescore's parser)
    assert not (tmp_path / "work" / "phrase-table.rnn.gz").exists()   # a dry run runs nothing


def test_rnn_rescore_reverse_model_from_the_config(tmp_path: Path) -> None:
    """smt.phrase_reverse: true trains the reverse model p(f|e) beside the forward one (train_phrase_model …
    --reverse into WORK/phrase_model.reverse) and smt-rescore appends its score; --no-reverse or --reverse-model win over the
    config; a value other than true/false stops before any work."""
    smt = tmp_path / "smt"
    (smt / "model").mkdir(parents=True)
    (smt / "model" / "moses.ini").write_text("", encoding="utf-8")
    for lang in ("en", "fr"):
        (smt / "data").mkdir(exist_ok=True)
        (smt / "data" / f"vocab.{lang}.tsv").write_text("<pad>\t0\n<unk>\t0\n<s>\t0\n</s>\t0\nw\t3\n",
                                                        encoding="utf-8")
    cfg = tmp_path / "cfg.yaml"
    fwd, rev = tmp_path / "fwd", tmp_path / "rev"

    def plan(reverse: str, *extra: str) -> tuple[subprocess.CompletedProcess, list[list[str]]]:
        cfg.write_text("train_phrases:\n  preset: tiny\nsmt:\n  dev: val\n  tests: test\n  mert_nbest: 10\n"
                       f"  mert_max_iterations:\n  mert_flags:\n  phrase_vocab: full\n{reverse}", encoding="utf-8")
        proc = subprocess.run(["bash", "recipes/lib/rnn_rescore.sh", "--config", str(cfg), "--smt-work", str(smt),
                               "--work", str(tmp_path / "work"), "--threads", "1", "--stop-after", "rescore",
                               "--model", str(fwd), *extra],
                              capture_output=True, text=True, timeout=60, cwd=ROOT, env={**ENV, "RECIPE_DRY_RUN": "1"})
        return proc, [shlex.split(line[2:]) for line in proc.stdout.splitlines() if line.startswith("+ ")]

    def reverse_of(steps: list[list[str]]) -> list[str]:
        rescore = [s for s in steps if s[0].endswith("smt-rescore")][0]
        return rescore[rescore.index("--reverse-model") + 1:][:1] if "--reverse-model" in rescore else []

    proc, steps = plan("  phrase_reverse: true\n")
    assert proc.returncode == 0, proc.stderr
    trains = [s for s in steps if s[0] == "train_phrase_model"]   # common.sh's nmt-train of a phrase model
    assert len(trains) == 1 and trains[0][-1] == "--reverse"
    assert trains[0][5] == str(tmp_path / "work" / "phrase_model.reverse")   # its output folder
    assert reverse_of(steps) == [str(tmp_path / "work" / "phrase_model.reverse")]
    for extra in (["--no-reverse"], []):   # --no-reverse, or a config without the key (or false): no reverse model
        proc, steps = plan("  phrase_reverse: true\n" if extra else "  phrase_reverse: false\n", *extra)
        assert proc.returncode == 0 and not [s for s in steps if s[0] == "train_phrase_model"]
        assert not reverse_of(steps)
    proc, steps = plan("  phrase_reverse: true\n", "--reverse-model", str(rev))
    assert proc.returncode == 0 and reverse_of(steps) == [str(rev)]
    assert not [s for s in steps if s[0] == "train_phrase_model"]
    proc, _ = plan("  phrase_reverse: maybe\n")
    assert proc.returncode == 2 and "smt.phrase_reverse must be true or false, not 'maybe'" in proc.stderr
    assert not (tmp_path / "work" / "phrase-table.rnn.gz").exists()


def test_rnn_rescore_averages_the_checkpoints_the_config_names(tmp_path: Path) -> None:
    """smt.phrase_average (or --average NAMES): nmt-average-checkpoints writes MODEL/checkpoint_avg_….pt from
    those checkpoints of the forward and the reverse model, and smt-rescore reads those two files."""
    smt = tmp_path / "smt"
    (smt / "model").mkdir(parents=True)
    (smt / "model" / "moses.ini").write_text("", encoding="utf-8")
    cfg = tmp_path / "cfg.yaml"
    fwd, rev = tmp_path / "fwd", tmp_path / "rev"

    def steps(average: str, *extra: str) -> list[list[str]]:
        cfg.write_text("train_phrases:\n  preset: tiny\nsmt:\n  dev: val\n  tests: test\n  mert_nbest: 10\n"
                       f"  mert_max_iterations:\n  mert_flags:\n  phrase_vocab: full\n{average}", encoding="utf-8")
        proc = subprocess.run(["bash", "recipes/lib/rnn_rescore.sh", "--config", str(cfg), "--smt-work", str(smt),
                               "--work", str(tmp_path / "work"), "--threads", "1", "--stop-after", "rescore",
                               "--model", str(fwd), "--reverse-model", str(rev), *extra],
                              capture_output=True, text=True, timeout=60, cwd=ROOT, env={**ENV, "RECIPE_DRY_RUN": "1"})
        assert proc.returncode == 0, proc.stderr
        return [shlex.split(line[2:]) for line in proc.stdout.splitlines() if line.startswith("+ ")]

    def after(step: list[str], flag: str) -> list[str]:
        i = step.index(flag) + 1
        return step[i:next((k for k in range(i, len(step)) if step[k].startswith("--")), len(step))]
    plan = steps("  phrase_average: epoch1 epoch2 last\n")
    averages = [s for s in plan if s[0].endswith("nmt-average-checkpoints")]
    rescore = [s for s in plan if s[0].endswith("smt-rescore")][0]
    assert [(after(s, "--model"), after(s, "--inputs")) for s in averages] == [
        ([str(fwd)], ["epoch1", "epoch2", "last"]), ([str(rev)], ["epoch1", "epoch2", "last"])]
    assert after(rescore, "--model") == [str(fwd / "checkpoint_avg_epoch1_epoch2_last.pt")]
    assert after(rescore, "--reverse-model") == [str(rev / "checkpoint_avg_epoch1_epoch2_last.pt")]
    assert after(averages[0], "--output") == after(rescore, "--model")
    # --average "" (a row that does not average) wins over the config; --average NAMES too
    plan = steps("  phrase_average: epoch1 epoch2 last\n", "--average", "")
    assert not [s for s in plan if s[0].endswith("nmt-average-checkpoints")]
    assert after([s for s in plan if s[0].endswith("smt-rescore")][0], "--model") == [str(fwd)]
    plan = steps("", "--average", "best last")
    assert after([s for s in plan if s[0].endswith("smt-rescore")][0], "--model") == [
        str(fwd / "checkpoint_avg_best_last.pt")]
