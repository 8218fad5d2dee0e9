"""Corpus registry: corpus name + split → files, found locally or in a download cache.

Every corpus is a declaration (YAML: name, folder, per-split files or PREFIXes; see docs/data.md): the
built-in ones ship in ``nmt/data/registry/``; a user's ``corpus.yaml`` is used by giving its path where a
corpus name goes (``nmt-prepare --corpus my/corpus.yaml``), its folder relative to that file.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nmt.core.io import GZIP_ERRORS, DataError, atomic_write

DOWNLOAD_ENV = "RNNSMT_DOWNLOAD"
REGISTRY_DIR = Path(__file__).with_name("registry")  #: the built-in declarations (package data)
_KEYS = {"name", "folder", "languages", "splits", "suffix", "base_url", "sha256", "pretokenized", "columns"}


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
class Corpus:
    """One corpus declaration (a ``corpus.yaml``; see docs/data.md).

    ``source`` is the YAML file of a user's declaration: its ``folder`` is then relative to that file's
    folder; a built-in declaration's ``folder`` is looked up in the data root and the download cache.
    """

    folder: str
    splits: dict[str, dict[str, str]]          # split → key → file name
    base_url: str | None = None
    sha256: dict[str, str] = field(default_factory=dict)  # file → expected sha256; no sum, no download
    pretokenized: bool = False
    columns: dict[str, int] = field(default_factory=dict)
    name: str = ""
    source: Path | None = None




def _prefix_files(prefix: str, langs: list[str], suffix: str | None, folder: Path | None) -> dict[str, str]:
    """``PREFIX.LANG`` + suffix; without a suffix, ``.gz`` where only ``PREFIX.LANG.gz`` exists in ``folder``."""
    files = {}
    for lang in langs:
        name = f"{prefix}.{lang}"
        if suffix is not None:
            name += suffix
        elif folder is not None and not (folder / name).is_file() and (folder / f"{name}.gz").is_file():
            name += ".gz"
        files[lang] = name
    return files


def load_corpus(path: str | os.PathLike[str], *, builtin: bool = False) -> Corpus:
    """Read a corpus declaration (YAML); :class:`DataError` names the file and what is wrong."""
    import yaml

    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        raise DataError(path, mark.line + 1 if mark else 1, f"not valid YAML: {err}") from None
    if not isinstance(doc, dict):
        raise DataError(f"{path}: a corpus declaration is a mapping (name, folder, splits, ...)")
    unknown = sorted(set(doc) - _KEYS)
    if unknown:
        raise DataError(f"{path}: unknown key(s) {unknown}; known: {sorted(_KEYS)}")
    name, folder = str(doc.get("name") or path.stem), str(doc.get("folder", "."))
    langs = [str(x) for x in doc.get("languages") or []]
    splits_doc = doc.get("splits")
    if not isinstance(splits_doc, dict) or not splits_doc:
        raise DataError(f"{path}: 'splits' must map each split name to a PREFIX or to {{key: file}}")
    base = None if builtin else (path.parent / folder)
    splits: dict[str, dict[str, str]] = {}
    for split, value in splits_doc.items():
        if isinstance(value, str):
            if len(langs) < 1:
                raise DataError(f"{path}: split {split!r} is a PREFIX: declare 'languages: [src, tgt]'")
            splits[str(split)] = _prefix_files(value, langs, doc.get("suffix"), base)
        elif isinstance(value, dict) and value and all(isinstance(v, str) for v in value.values()):
            splits[str(split)] = {str(k): v for k, v in value.items()}
        else:
            raise DataError(f"{path}: split {split!r} must be a PREFIX or a mapping {{en: file, fr: file}}, "
                            f"{{text: file}} or {{tsv: file}}")
    columns = {str(k): int(v) for k, v in (doc.get("columns") or {}).items()}
    if any("tsv" in files for files in splits.values()) and len(columns) < 2:
        raise DataError(f"{path}: a tsv split needs 'columns: {{src_lang: 0, tgt_lang: 1}}'")
    return Corpus(folder, splits, base_url=doc.get("base_url"), sha256=dict(doc.get("sha256") or {}),
                  pretokenized=bool(doc.get("pretokenized", False)), columns=columns, name=name,
                  source=None if builtin else path.resolve())


def _builtin() -> dict[str, Corpus]:
    specs = [load_corpus(p, builtin=True) for p in sorted(REGISTRY_DIR.glob("*.yaml"))]
    return {spec.name: spec for spec in specs}


CORPORA: dict[str, Corpus] = _builtin()
_MULTI30K_URL = CORPORA["multi30k"].base_url
_DECLARED: dict[Path, Corpus] = {}  # user declarations read so far, by resolved path


def is_declaration(corpus: str) -> bool:
    """Whether ``corpus`` names a YAML declaration file rather than a registry corpus."""
    return corpus.endswith((".yaml", ".yml")) and corpus not in CORPORA


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


def _spec(corpus: str) -> Corpus:
    if is_declaration(corpus):
        path = Path(corpus).expanduser().resolve()
        if path not in _DECLARED:
            if not path.is_file():
                raise CorpusNotFound(f"{corpus}: corpus declaration not found")
            _DECLARED[path] = load_corpus(path)
        return _DECLARED[path]
    try:
        return CORPORA[corpus]
    except KeyError:
        raise ValueError(f"unknown corpus {corpus!r}; known: {list_corpora()} "
                         f"(or give a corpus declaration, a .yaml file)") from None


def list_splits(corpus: str) -> list[str]:
    return list(_spec(corpus).splits)


def _folders(spec: Corpus) -> list[Path]:
    """Where the files of ``spec`` are looked for, in order."""
    if spec.source is not None:
        return [spec.source.parent / spec.folder, cache_dir() / spec.folder]
    root = data_root()
    return [base / spec.folder for base in ([root] if root else []) + [cache_dir()]]


def _locate(spec: Corpus, file_name: str) -> Path | None:
    for folder in _folders(spec):
        path = folder / file_name
        if path.is_file():
            return path
    return None


def download_requested(allow: bool | None = None) -> bool:
    """``allow`` if given, else whether ``$RNNSMT_DOWNLOAD`` is set to 1 (true, yes)."""
    if allow is not None:
        return allow
    return os.environ.get(DOWNLOAD_ENV, "").strip().lower() in ("1", "true", "yes")


def _downloadable(spec: Corpus, file_name: str) -> bool:
    return bool(spec.base_url) and file_name in spec.sha256


def _not_found(corpus: str, file_name: str, reason: str = "", *, asked: bool = False) -> CorpusNotFound:
    spec = _spec(corpus)
    cache = cache_dir() / spec.folder
    root = data_root()
    looked = f"looked in {root / spec.folder if root else '(no data root)'} and {cache}"
    if spec.source is not None:
        looked = f"looked in {' and '.join(str(f) for f in _folders(spec))}, declared in {spec.source}"
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
        except (OSError, *GZIP_ERRORS) as err:
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
    return Split(split, files, corpus=spec.name or corpus, pretokenized=spec.pretokenized,
                 columns=dict(spec.columns))


def prefix_split(prefix: str, langs: tuple[str, ...]) -> Split:
    """The split of Moses-style files ``PREFIX.LANG`` (or ``PREFIX.LANG.gz``), named by PREFIX's basename."""
    files = {}
    for lang in langs:
        plain = Path(f"{prefix}.{lang}")
        gz = Path(f"{plain}.gz")
        if not plain.is_file() and not gz.is_file():
            raise CorpusNotFound(f"{plain}: not found (nor {gz}): a PREFIX names the files PREFIX.LANG, "
                                 f"one per language ({', '.join(langs)})")
        files[lang] = plain if plain.is_file() else gz
    return Split(Path(prefix).name, files, corpus=str(Path(prefix).parent))


__all__ = ["CORPORA", "DOWNLOAD_ENV", "Corpus", "CorpusNotFound", "REGISTRY_DIR", "Split", "cache_dir", "data_root", "download",
           "download_requested", "get_split", "is_declaration", "list_corpora", "list_splits",
           "load_corpus", "prefix_split"]
