"""recipes/wmt14_enfr: the dry run, the offline failure, and the small helpers (no network, seconds)."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests import ROOT

RECIPE = ROOT / "recipes" / "wmt14_enfr"
RUN = RECIPE / "run.sh"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"wmt14_recipe_{name}", RECIPE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


wmt14 = _load("wmt14")


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("WMT14_URL_BASE", "MT_DATA")}
    env.update(MT_CACHE=str(tmp_path / "cache"), BIN=str(Path(sys.executable).parent), **extra)
    return env


def _run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(RUN), *args], capture_output=True, text=True, timeout=60,
                          env=_env(tmp_path, **env), cwd=tmp_path)


def _files(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.is_file()]


def test_dry_run_prints_every_stage_and_runs_nothing(tmp_path):
    work = tmp_path / "work"
    res = _run(tmp_path, "--dry-run", "--work", str(work), "--mert-runs", "2", "--threads", "3")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    cache = tmp_path / "cache" / "wmt14"
    for name, url in wmt14.FILES.items():  # every URL, with its destination in $MT_CACHE/wmt14
        assert f"{url} -> {cache / name} [would download]" in out
    assert "http://www.statmt.org/wmt10/training-giga-fren.tar" in out
    assert "http://www.statmt.org/wmt14/test-full.tgz" in out
    for n in range(1, 6):
        assert f"== {n}. " in out
    # stages 6-10 are the generic recipe with this folder's config, on the plain files stages 3 and 5 write
    cfg = RECIPE / "config.yaml"
    files = work / "corpus" / "wmt14_enfr"
    assert "== 6-10. the generic experiment recipe" in out
    assert (f"+ bash {ROOT}/recipes/lib/experiment.sh {cfg} --work {work} --files-root {files} --mert-runs 2 "
            "--threads 3 --device cuda") in out
    assert (f"--out-dir {work}/smt/data --train {files}/train --dev {files}/newstest2012-2013 "
            f"--test {files}/newstest2014") in out
    assert (f"smt_baseline.sh --config {cfg} --mert-runs 2 --threads 3 --work {work}/smt --train train "
            "--dev newstest2012-2013 --tests newstest2014") in out
    rescore = [line for line in out.splitlines() if "recipes/lib/rnn_rescore.sh" in line]
    assert len(rescore) == 1 and rescore[0].startswith("+ bash ")
    assert f"--smt-work {work}/smt --work {work}/rnn --dev newstest2012-2013 --tests newstest2014" in rescore[0]
    assert "--device cuda" in rescore[0] and "--systems rnn\\ rnnwp" in rescore[0]
    assert "select_data.py" in out and "--words 348000000 --count-side tgt" in out
    assert "dry run done" in out
    # nothing downloaded, nothing written: not even the work folder
    assert not work.exists()
    assert _files(tmp_path) == []


def test_dry_run_options(tmp_path):
    res = _run(tmp_path, "--dry-run", "--work", "w", "--device", "cpu", "--select-words", "0")
    assert res.returncode == 0, res.stderr
    assert "--device cpu" in res.stdout and "--device cuda" not in res.stdout
    assert "select_data.py" not in res.stdout and "ln -sfn ../pool.en" in res.stdout
    assert f"--smt-work {tmp_path}/w/smt" in res.stdout  # a relative --work is resolved
    quick = _run(tmp_path, "--dry-run", "--quick", "--download-only")
    assert quick.returncode == 0, quick.stderr
    assert "download-only: done" in quick.stdout and "== 2." not in quick.stdout
    assert _run(tmp_path, "--dry-run", "--device", "tpu").returncode == 2
    assert _run(tmp_path, "--bogus").returncode == 2
    assert _files(tmp_path) == []


def test_offline_download_fails_clearly_and_leaves_nothing(tmp_path):
    res = _run(tmp_path, "--download-only", "--work", str(tmp_path / "w"),
               WMT14_URL_BASE=f"file://{tmp_path}/no-such-mirror")
    assert res.returncode == 1
    assert "cannot download file://" in res.stderr and "training-parallel-europarl-v7.tgz" in res.stderr
    assert "No network" in res.stderr
    assert _files(tmp_path) == []  # no .part file, no half archive


def test_download_from_a_mirror_is_atomic_and_skips_present_files(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    for name in wmt14.FILES:
        (mirror / name).write_bytes(name.encode())
    cache = tmp_path / "cache" / "wmt14"
    cache.mkdir(parents=True)
    (cache / "dev.tgz").write_bytes(b"mine")
    os.environ["WMT14_URL_BASE"] = f"file://{mirror}"
    try:
        assert wmt14.main(["download", "--cache", str(cache)]) == 0
    finally:
        del os.environ["WMT14_URL_BASE"]
    assert (cache / "dev.tgz").read_bytes() == b"mine"
    assert (cache / "test-full.tgz").read_bytes() == b"test-full.tgz"
    assert sorted(p.name for p in cache.iterdir()) == sorted(wmt14.FILES)


def test_sgm_to_text(tmp_path):
    sgm = tmp_path / "a.sgm"
    sgm.write_text('<srcset setid="x" srclang="any">\n<doc docid="d" origlang="en">\n'
                   '<seg id="1"> Tom &amp; Jerry &lt;3 &quot;cats&quot; l&apos;homme </seg>\n'
                   '<seg id=2>second\u2028line</seg>\n</doc>\n</srcset>\n', encoding="utf-8")
    plain = tmp_path / "b.txt"
    plain.write_text("third\n", encoding="utf-8")
    out = tmp_path / "out" / "set.en"
    assert wmt14.main(["sgm", "--out", str(out), str(sgm), str(plain)]) == 0
    assert out.read_text(encoding="utf-8").split("\n") == [
        'Tom & Jerry <3 "cats" l\'homme', "second line", "third", ""]
    empty = tmp_path / "e.sgm"
    empty.write_text('<seg id="1"></seg>\n', encoding="utf-8")
    assert wmt14.main(["sgm", "--out", str(tmp_path / "x"), str(empty)]) == 1


def test_concat_checks_alignment(tmp_path):
    ex = tmp_path / "extract"
    for i, (_, en, fr) in enumerate(wmt14.PARALLEL.values()):
        for member, text in ((en, f"hello {i}\n\nbye\n"), (fr, f"bonjour {i}\nx\nsalut\n")):
            path = ex / member
            path.parent.mkdir(parents=True, exist_ok=True)
            if member.endswith(".gz"):
                import gzip
                path.write_bytes(gzip.compress(text.encode()))
            else:
                path.write_text(text, encoding="utf-8")
    assert wmt14.main(["concat", "--extract", str(ex), "--out-dir", str(tmp_path / "c")]) == 0
    pool = (tmp_path / "c" / "pool.en").read_text(encoding="utf-8").splitlines()
    assert pool[:2] == ["hello 0", "bye"] and len(pool) == 2 * len(wmt14.PARALLEL)
    stats = json.loads((tmp_path / "c" / "pool.json").read_text())
    assert stats["total"]["kept"] == 10 and stats["corpora"]["un"]["dropped_empty"] == 1
    # one side one line longer: refused, nothing written
    (ex / wmt14.PARALLEL["un"][2]).write_text("a\nb\nc\nd\n", encoding="utf-8")
    assert wmt14.main(["concat", "--extract", str(ex), "--out-dir", str(tmp_path / "d")]) == 1
    assert not (tmp_path / "d" / "pool.en").exists() and not list((tmp_path / "d").glob("*.part"))


def test_data_only_prepares_the_plain_files_through_the_generic_recipe(tmp_path):
    files = tmp_path / "work" / "corpus" / "wmt14_enfr"
    files.mkdir(parents=True)
    train_en = ["the house is red .", "a small cat", "the cat sleeps", "a red car"] * 3
    train_fr = ["la maison est rouge .", "un petit chat", "le chat dort", "une voiture rouge"] * 3
    sets = {"train": (train_en, train_fr), "newstest2012-2013": (["the red cat"], ["le chat rouge"]),
            "newstest2014": (['Tom & "Jerry"'], ['Tom & « Jerry »'])}
    for split, (en, fr) in sets.items():
        (files / f"{split}.en").write_text("\n".join(en) + "\n", encoding="utf-8")
        (files / f"{split}.fr").write_text("\n".join(fr) + "\n", encoding="utf-8")
    work = tmp_path / "work"
    res = subprocess.run(["bash", str(ROOT / "recipes" / "lib" / "experiment.sh"), str(RECIPE / "config.yaml"),
                          "--work", str(work), "--files-root", str(files), "--data-only"],
                         capture_output=True, text=True, timeout=120, env=_env(tmp_path), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = work / "smt" / "data"
    stats = json.loads((out / "prepare.json").read_text())
    assert stats["splits"]["train"]["kept"] == 12
    assert set(stats["splits"]) == {"train", "newstest2012-2013", "newstest2014"}
    # raw references stay raw (not detokenized like the pretokenized `newstest` corpus)
    assert (out / "newstest2014.fr").read_text(encoding="utf-8") == "Tom & « Jerry »\n"
    assert (out / "newstest2014.en").read_text(encoding="utf-8") == 'Tom & "Jerry"\n'
    # tokenized like the training data (Moses, XML-escaped as the toolkit's tokenizer does)
    assert (out / "newstest2014.tok.en").read_text(encoding="utf-8") == "Tom &amp; &quot; Jerry &quot;\n"
    assert "--data-only: prepared data" in res.stdout and not (work / "smt" / "model").exists()


def test_config_sections_parse():
    import yaml

    from nmt.core import config as C
    from nmt.models.gru_encdec import PRESETS, GRUEncDecConfig
    from nmt.training.config import LoopConfig, OptimConfig
    from nmt.translation.data import TranslationDataConfig

    cfg = yaml.safe_load((RECIPE / "config.yaml").read_text(encoding="utf-8"))
    assert cfg["experiment"]["files"] == {"train": "train", "dev": "newstest2012-2013", "tests": ["newstest2014"]}
    assert cfg["prepare_quick"]["max_train_pairs"] == 20000 and "corpus" not in cfg["prepare"]
    classes = [TranslationDataConfig, GRUEncDecConfig, OptimConfig, LoopConfig]
    built = {}
    for section in ("train_phrases", "train_phrases_quick"):
        args, values = C.parse_args(classes, ["--config", f"{RECIPE / 'config.yaml'}:{section}"])
        data = C.build(TranslationDataConfig, args, values)
        built[section] = (data, C.build(GRUEncDecConfig, args, values, base=PRESETS[data.preset]),
                          C.build(OptimConfig, args, values), C.build(LoopConfig, args, values))
        assert built[section][3].batch_size == 64 and built[section][3].device == "cuda"
    data, model, optim, loop = built["train_phrases"]
    assert data.preset == "cho2014" and model.hidden_dim == 1000 and model.maxout_units == 500
    assert optim.optimizer == "adadelta" and optim.adadelta_rho == 0.95 and optim.adadelta_eps == 1e-6


def test_data_selection_prefers_in_domain_pairs(tmp_path):
    kenlm_lm = pytest.importorskip("smt_features.train.kenlm_build")
    pytest.importorskip("kenlm")
    try:
        kenlm_lm.find_kenlm_binary("lmplz")
        kenlm_lm.find_kenlm_binary("build_binary")
    except Exception as err:  # KenLM tools not built here
        pytest.skip(f"KenLM tools missing: {err}")
    news_en = [f"the minister said on {d} that the economy grew by {n} percent" for d in
               ("monday", "tuesday", "friday") for n in range(1, 8)]
    news_fr = [f"le ministre a dit {d} que l' économie a progressé de {n} pour cent" for d in
               ("lundi", "mardi", "vendredi") for n in range(1, 8)]
    parl_en = [f"madam president , i would like to thank the rapporteur for report number {n}" for n in range(21)]
    parl_fr = [f"madame la présidente , je voudrais remercier le rapporteur pour le rapport {n}" for n in range(21)]
    pool_en = [x for pair in zip(parl_en, news_en) for x in pair]
    pool_fr = [x for pair in zip(parl_fr, news_fr) for x in pair]
    d = tmp_path
    for name, lines in (("pool.en", pool_en), ("pool.fr", pool_fr), ("in.en", news_en[::2]), ("in.fr", news_fr[::2])):
        (d / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    news_words = sum(len(s.split()) for s in news_en)
    select = _load("select_data")
    argv = ["--pool-src", str(d / "pool.en"), "--pool-tgt", str(d / "pool.fr"), "--in-src", str(d / "in.en"),
            "--in-tgt", str(d / "in.fr"), "--out-src", str(d / "sel.en"), "--out-tgt", str(d / "sel.fr"),
            "--work", str(d / "sel"), "--words", str(news_words), "--order", "3", "--min-count", "1"]
    assert select.main(argv) == 0
    kept_en = (d / "sel.en").read_text(encoding="utf-8").splitlines()
    kept_fr = (d / "sel.fr").read_text(encoding="utf-8").splitlines()
    assert len(kept_en) == len(kept_fr) == len(news_en)
    assert kept_en == news_en and kept_fr == news_fr  # all the news, in pool order, none of the parliament
    record = json.loads((d / "sel" / "select.json").read_text())
    assert record["selected_words"]["src"] == news_words and record["pool_pairs"] == 42
