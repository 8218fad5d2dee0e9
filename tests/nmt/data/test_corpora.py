"""Corpus registry: local data root, download cache (only when asked, sha256-checked), the not-found error.

No test touches the network: ``corpora._urlopen`` is replaced."""
from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import urllib.error
from pathlib import Path

import pytest

from nmt.data import corpora
from nmt.data.corpora import CorpusNotFound, data_root, get_split, list_corpora, list_splits
from nmt.core.io import count_lines
from tests import ROOT

SHARED = ROOT / ".." / "shared" / "data"


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


@pytest.fixture
def empty_dirs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("MT_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("MT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(corpora.DOWNLOAD_ENV, raising=False)
    return tmp_path


def test_missing_corpus_is_not_downloaded_unless_asked(empty_dirs: Path, offline: list[str]) -> None:
    with pytest.raises(CorpusNotFound) as info:
        get_split("multi30k", "train")
    message = str(info.value)
    assert "MT_DATA" in message and "multi30k/train.en.gz" in message
    assert str(empty_dirs / "empty" / "multi30k") in message and str(empty_dirs / "cache" / "multi30k") in message
    assert "nothing is downloaded unless asked" in message and "--download" in message
    assert "RNNSMT_DOWNLOAD=1" in message and f"{corpora._MULTI30K_URL}train.en.gz" in message
    assert offline == []  # no network without the opt-in
    assert isinstance(info.value, FileNotFoundError)
    with pytest.raises(CorpusNotFound, match="no public direct URL is configured for tatoeba"):
        get_split("tatoeba", "all", allow_download=True)
    assert offline == []


def test_download_failure_keeps_nothing(empty_dirs: Path, offline: list[str], capsys) -> None:
    with pytest.raises(CorpusNotFound, match="download failed") as info:
        get_split("multi30k", "train", allow_download=True)
    assert offline and offline[0].endswith("/data/task1/raw/train.en.gz")
    assert "network disabled in tests" in str(info.value)
    assert "downloading multi30k/train.en.gz from https://" in capsys.readouterr().err
    cache = empty_dirs / "cache" / "multi30k"
    assert not cache.exists() or not any(cache.iterdir())


class FakeResponse(io.BytesIO):
    pass


def _fake_multi30k(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Serve made-up multi30k files and register their sha256 (so the download checks pass)."""
    fetched: list[str] = []
    payload = {name: gzip.compress(f"{name}\n".encode(), mtime=0)
               for files in corpora.CORPORA["multi30k"].splits.values() for name in files.values()}
    spec = dataclasses.replace(corpora.CORPORA["multi30k"],
                               sha256={n: hashlib.sha256(d).hexdigest() for n, d in payload.items()})
    monkeypatch.setitem(corpora.CORPORA, "multi30k", spec)

    def fake_urlopen(url: str) -> FakeResponse:
        fetched.append(url)
        return FakeResponse(payload[url.rsplit("/", 1)[1]])

    monkeypatch.setattr(corpora, "_urlopen", fake_urlopen)
    return fetched


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_download_into_cache_when_asked(how: str, empty_dirs: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys) -> None:
    fetched = _fake_multi30k(monkeypatch)
    if how == "environment":
        monkeypatch.setenv(corpora.DOWNLOAD_ENV, "1")
    split = get_split("multi30k", "val", allow_download=True if how == "argument" else None)
    assert split.files["fr"] == empty_dirs / "cache" / "multi30k" / "val.fr.gz"
    assert len(fetched) == 8
    err = capsys.readouterr().err
    assert f"downloading multi30k/val.fr.gz from {corpora._MULTI30K_URL}val.fr.gz to " in err
    assert err.count("expected sha256") == 8
    get_split("multi30k", "train")  # now all cached: no second download, no opt-in needed
    assert len(fetched) == 8


def test_download_checksum_mismatch_keeps_nothing(empty_dirs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corpora, "_urlopen", lambda url: FakeResponse(b"not the ptb\n"))
    with pytest.raises(CorpusNotFound, match="sha256 .* differs from the expected"):
        get_split("ptb", "train", allow_download=True)
    assert not list((empty_dirs / "cache").rglob("*.txt"))


def test_no_checksum_no_download(empty_dirs: Path, monkeypatch: pytest.MonkeyPatch, offline: list[str]) -> None:
    spec = corpora.CORPORA["ptb"]
    monkeypatch.setitem(corpora.CORPORA, "ptb", dataclasses.replace(
        spec, sha256={k: v for k, v in spec.sha256.items() if k != "ptb.test.txt"}))
    with pytest.raises(CorpusNotFound, match="no sha256 is known for ptb/ptb.test.txt, so it is never downloaded"):
        get_split("ptb", "train", allow_download=True)
    assert offline == []  # refused before anything is fetched


@pytest.mark.parametrize("corpus", ["multi30k", "ptb"])
def test_checksums_match_the_shared_files(corpus: str) -> None:
    spec = corpora.CORPORA[corpus]
    names = [name for files in spec.splits.values() for name in files.values()]
    assert set(spec.sha256) == set(names)  # every downloadable file has its sum
    folder = SHARED / spec.folder
    if not folder.is_dir():
        pytest.skip("shared data absent")
    for name in names:
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == spec.sha256[name], name


def test_builtin_declarations_and_a_bad_one(tmp_path: Path) -> None:
    assert {p.stem for p in corpora.REGISTRY_DIR.glob("*.yaml")} == set(list_corpora())
    multi30k = corpora.load_corpus(corpora.REGISTRY_DIR / "multi30k.yaml", builtin=True)
    assert multi30k.splits["val"] == {"en": "val.en.gz", "fr": "val.fr.gz"} and multi30k.source is None
    bad = tmp_path / "c.yaml"
    bad.write_text("name: x\nsplits: {train: train}\ncolour: red\n", encoding="utf-8")
    with pytest.raises(corpora.DataError, match=r"c.yaml: unknown key\(s\) \['colour'\]"):
        get_split(str(bad), "train")
    bad.write_text("name: x\nsplits: {train: train}\n", encoding="utf-8")
    with pytest.raises(corpora.DataError, match="declare 'languages"):
        corpora.load_corpus(bad)
    bad.write_text("splits: [oops\n", encoding="utf-8")
    with pytest.raises(corpora.DataError, match="c.yaml:2: not valid YAML"):
        corpora.load_corpus(bad)
