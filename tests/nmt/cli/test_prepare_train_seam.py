"""The README's command chain as a newcomer runs it: nmt-prepare on plain files, then nmt-train --data-dir.

nmt-prepare names each split after its PREFIX's basename (``--dev data/dev`` → ``dev.tok.en``) and records which
split is which in prepare.json; nmt-train --data-dir must find them there (it used to look for ``val`` only).
The commands run as ``python -m`` from this checkout, so the code under test is this tree's.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TINY = ROOT / "tests" / "data" / "tiny"


def _run(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)


@pytest.fixture
def prepared(tmp_path: Path) -> Path:
    """``nmt-prepare --train T --dev D --test E`` with the dev set's PREFIX named ``newsdev`` (not ``val``)."""
    raw = tmp_path / "raw"
    raw.mkdir()
    for name, as_name in (("train", "corpus"), ("val", "newsdev"), ("test", "newstest")):
        for lang in ("en", "fr"):
            shutil.copyfile(TINY / f"{name}.{lang}", raw / f"{as_name}.{lang}")
    data = tmp_path / "DATA"
    proc = _run("nmt.cli.prepare", "--train", str(raw / "corpus"), "--dev", str(raw / "newsdev"), "--test",
                str(raw / "newstest"), "--src", "en", "--tgt", "fr", "--out-dir", str(data))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return data


def test_prepare_records_split_roles(prepared: Path) -> None:
    stats = json.loads((prepared / "prepare.json").read_text(encoding="utf-8"))
    assert stats["roles"] == {"train": "corpus", "dev": "newsdev", "test": ["newstest"]}
    assert (prepared / "newsdev.tok.en").is_file() and not (prepared / "val.tok.en").exists()


def test_train_finds_the_splits_prepare_wrote(prepared: Path, tmp_path: Path) -> None:
    model = tmp_path / "M"
    proc = _run("nmt.cli.train", "--data-dir", str(prepared), "--out-dir", str(model), "--preset", "tiny",
                "--max-updates", "2", "--threads", "1", "--progress", "false")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (model / "checkpoint_last.pt").is_file()


def test_missing_split_is_one_line_exit_2(prepared: Path, tmp_path: Path) -> None:
    (prepared / "newsdev.tok.fr").unlink()
    proc = _run("nmt.cli.train", "--data-dir", str(prepared), "--out-dir", str(tmp_path / "M"), "--preset", "tiny",
                "--max-updates", "2", "--threads", "1", "--progress", "false")
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith(f"nmt-train: {prepared / 'newsdev.tok.fr'}: no such file ")
    assert "the dev split 'newsdev'" in lines[0] and str(prepared / "prepare.json") in lines[0]


def test_no_dev_split_recorded_is_refused(prepared: Path, tmp_path: Path) -> None:
    stats_path = prepared / "prepare.json"
    stats = json.loads(stats_path.read_text(encoding="utf-8"))
    stats["roles"]["dev"] = None
    stats_path.write_text(json.dumps(stats), encoding="utf-8")
    proc = _run("nmt.cli.train", "--data-dir", str(prepared), "--out-dir", str(tmp_path / "M"), "--preset", "tiny",
                "--max-updates", "2", "--threads", "1", "--progress", "false")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith(f"nmt-train: {stats_path}: nmt-prepare wrote no dev split")


def test_old_data_dir_keeps_train_and_val(toy_data: Path, tmp_path: Path) -> None:
    """A folder without prepare.json (or one whose prepare.json has no roles) is read as train/val."""
    from nmt.data.prepared import split_names
    from nmt.translation.data import TranslationDataConfig

    paths = TranslationDataConfig(data_dir=str(toy_data)).resolved_paths()
    assert paths["train_src"] == str(toy_data / "train.tok.en") and paths["dev_tgt"] == str(toy_data / "val.tok.fr")
    (toy_data / "prepare.json").write_text(json.dumps({"splits": {"train": {}, "val": {}}}), encoding="utf-8")
    names = split_names(toy_data)
    assert (names.train, names.dev) == ("train", "val") and "older nmt-prepare" in names.source
    assert TranslationDataConfig(data_dir=str(toy_data)).resolved_paths() == paths
    (toy_data / "val.tok.en").unlink()
    with pytest.raises(FileNotFoundError, match="the dev split 'val'"):
        TranslationDataConfig(data_dir=str(toy_data)).resolved_paths()
