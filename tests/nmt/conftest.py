"""Fixtures of the ground floor's tests: a data root laid out like multi30k/."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tests import TEST_DATA


@pytest.fixture
def tiny_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data root laid out like multi30k/, gzipped from tests/data/tiny."""
    root = tmp_path / "mt_data"
    (root / "multi30k").mkdir(parents=True)
    layout = {"train": "train", "val": "val", "test_2016_flickr": "test", "test_2017_flickr": "test"}
    for split, name in layout.items():
        for lang in ("en", "fr"):
            data = (TEST_DATA / "tiny" / f"{name}.{lang}").read_bytes()
            (root / "multi30k" / f"{split}.{lang}.gz").write_bytes(gzip.compress(data))
    monkeypatch.setenv("MT_DATA", str(root))
    monkeypatch.setenv("MT_CACHE", str(tmp_path / "cache"))
    from nmt.data import corpora

    monkeypatch.setattr(corpora, "_urlopen", lambda url: pytest.fail(f"network used: {url}"))
    return root
