"""recipes/sentence_completion/prepare_holmes.py on a tar.xz written here: the seeded draw from the sorted listing,
--draw first (the archive's first novels), the Gutenberg header/footer removed, every 50th sentence held out, and an
archive without novels refused with nothing left behind."""
from __future__ import annotations

import io
import random
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests import ROOT

SCRIPT = ROOT / "recipes" / "sentence_completion" / "prepare_holmes.py"
HEADER = "Licence blah.\n*END*THE SMALL PRINT! FOR PUBLIC DOMAIN ETEXTS*Ver.04.29.93*END*\n\n"
FOOTER = "\n\nEnd of Project Gutenberg's Etext\n"


def _novel(name: str, sentences: int) -> str:
    body = " ".join(f"The {name.lower()} walked home number {i} today." for i in range(sentences))
    return HEADER + body + FOOTER


def _archive(path: Path, names: list[str], sizes: list[int]) -> Path:
    with tarfile.open(path, "w:xz") as tar:
        for name, n in zip(names, sizes):
            text = _novel(name, n)
            data = text.replace("Licence", "Licencé").encode("latin-1") if name == "CAFE" else text.encode("utf-8")
            info = tarfile.TarInfo(f"Holmes_Training_Data/{name}.TXT")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        readme = b"not a novel"
        info = tarfile.TarInfo("Holmes_Training_Data/README")
        info.size = len(readme)
        tar.addfile(info, io.BytesIO(readme))
    return path


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT)


NAMES = ["ZED", "ALPHA", "CAFE", "MID", "BETA"]  # archive order, not name order
SIZES = [60, 40, 30, 50, 20]


@pytest.mark.parametrize("draw", ["random", "first"])
def test_novels_drawn_split_and_cleaned(tmp_path: Path, draw: str) -> None:
    archive = _archive(tmp_path / "h.tar.xz", NAMES, SIZES)
    out = tmp_path / "out"
    proc = _run("--archive", str(archive), "--novels", "3", "--seed", "7", "--draw", draw, "--out-dir", str(out))
    assert proc.returncode == 0, proc.stderr
    if draw == "first":
        chosen = sorted(NAMES[:3])
    else:
        chosen = sorted(random.Random(7).sample(sorted(NAMES), 3))
    assert (out / "novels.txt").read_text().split() == [f"{n}.TXT" for n in chosen]
    train = (out / "train.txt").read_text().splitlines()
    valid = (out / "valid.txt").read_text().splitlines()
    expected = [f"the {n.lower()} walked home number {i} today ." for n in chosen for i in range(SIZES[NAMES.index(n)])]
    assert valid == expected[49::50]
    assert train == [s for k, s in enumerate(expected, 1) if k % 50]
    assert not any("licence" in s or "gutenberg" in s for s in train + valid)
    assert ("1 read as Latin-1" in proc.stdout) == ("CAFE" in chosen)
    assert sorted(p.name for p in out.iterdir()) == ["novels.txt", "train.txt", "valid.txt"]


def test_first_zero_takes_every_novel_in_name_order(tmp_path: Path) -> None:
    archive = _archive(tmp_path / "h.tar.xz", NAMES, SIZES)
    proc = _run("--archive", str(archive), "--novels", "0", "--draw", "first", "--out-dir", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "o" / "novels.txt").read_text().split() == [f"{n}.TXT" for n in sorted(NAMES)]


@pytest.mark.parametrize("draw", ["random", "first"])
def test_an_archive_without_novels_is_refused_and_leaves_nothing(tmp_path: Path, draw: str) -> None:
    archive = _archive(tmp_path / "h.tar.xz", [], [])
    out = tmp_path / "out"
    proc = _run("--archive", str(archive), "--novels", "2", "--draw", draw, "--out-dir", str(out))
    assert proc.returncode != 0 and "no .TXT files" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()
