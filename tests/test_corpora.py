"""Corpus registry: local data root, download cache, and the not-found error (no network)."""
from __future__ import annotations

import gzip
import io
import urllib.error
from pathlib import Path

import pytest

from nmt.data import corpora
from nmt.data.corpora import CorpusNotFound, data_root, get_split, list_corpora, list_splits
from nmt.data.io import count_lines

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """No network: every URL request fails and is recorded."""
    requested: list[str] = []

    def refuse(url: str) -> None:
        requested.append(url)
        raise urllib.error.URLError("network disabled in tests")

    monkeypatch.setattr(corpora, "_urlopen", refuse)
    return requested


def test_registry_lists() -> None:
    assert {"multi30k", "tatoeba", "europarl-excerpt", "newstest", "ptb", "wikitext-2", "fr-mono"} <= set(
        list_corpora())
    assert list_splits("multi30k") == ["train", "val", "test_2016_flickr", "test_2017_flickr"]
    with pytest.raises(ValueError, match="unknown corpus"):
        list_splits("nope")


@pytest.mark.skipif(not (SHARED / "multi30k" / "train.en.gz").is_file(), reason="shared data absent")
def test_resolves_real_multi30k(monkeypatch: pytest.MonkeyPatch, offline: list[str]) -> None:
    monkeypatch.setenv("MT_DATA", str(SHARED))
    split = get_split("multi30k", "val")
    assert set(split.files) == {"en", "fr"} and split.languages == ["en", "fr"]
    assert count_lines(split.files["en"]) == count_lines(split.files["fr"]) == 1014
    assert get_split("newstest", "newstest2013").pretokenized
    tatoeba = get_split("tatoeba", "all")
    assert set(tatoeba.files) == {"tsv"} and tatoeba.columns == {"en": 0, "fr": 1}
    assert set(get_split("ptb", "valid").files) == {"text"}
    assert offline == []
    with pytest.raises(ValueError, match="unknown split"):
        get_split("multi30k", "test_2018")


def test_default_root_without_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MT_DATA", raising=False)
    (tmp_path / "proj").mkdir()
    (tmp_path / "shared" / "data").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "proj")
    assert data_root() == (tmp_path / "shared" / "data").resolve()


def test_not_found_names_both_ways(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                   offline: list[str]) -> None:
    monkeypatch.setenv("MT_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("MT_CACHE", str(tmp_path / "cache"))
    with pytest.raises(CorpusNotFound) as info:
        get_split("multi30k", "train")
    message = str(info.value)
    assert "MT_DATA" in message and "multi30k/train.en.gz" in message
    assert "network access" in message and str(tmp_path / "cache" / "multi30k") in message
    assert offline and offline[0].endswith("/data/task1/raw/train.en.gz")
    assert isinstance(info.value, FileNotFoundError)
    with pytest.raises(CorpusNotFound, match="no public direct URL is configured for tatoeba"):
        get_split("tatoeba", "all")
    assert not (tmp_path / "cache" / "multi30k").exists() or not any((tmp_path / "cache" / "multi30k").iterdir())


class FakeResponse(io.BytesIO):
    pass


def test_download_into_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MT_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("MT_CACHE", str(tmp_path / "cache"))
    fetched: list[str] = []

    def fake_urlopen(url: str) -> FakeResponse:
        fetched.append(url)
        return FakeResponse(gzip.compress(f"{url.rsplit('/', 1)[1]}\n".encode()))

    monkeypatch.setattr(corpora, "_urlopen", fake_urlopen)
    split = get_split("multi30k", "val")
    assert split.files["fr"] == tmp_path / "cache" / "multi30k" / "val.fr.gz"
    assert len(fetched) == 8
    get_split("multi30k", "train")  # now all cached: no second download
    assert len(fetched) == 8


def test_download_checksum_mismatch_keeps_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MT_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("MT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(corpora, "_urlopen", lambda url: FakeResponse(b"not the ptb\n"))
    with pytest.raises(CorpusNotFound, match="md5"):
        get_split("ptb", "train")
    assert not list((tmp_path / "cache").rglob("*.txt"))
