"""The text ``lmplz`` reads and KenLM queries see: input checks, strict UTF-8 streaming, the ``<unk>`` rewrite.

See :mod:`smt_features.train.kenlm_build` for why the literal ``<unk>`` is rewritten to
:data:`DEFAULT_MAP_UNK`; :class:`smt_features.model.kenlm.KenLMScorer` applies the same rewrite to queries.
"""
from __future__ import annotations

import errno
import gzip
import re
from pathlib import Path
from typing import IO

from nmt.core.io import GZIP_ERRORS, DataError
from nmt.core.perplexity import split_words

DEFAULT_MAP_UNK = "_unk_"
UNK = "<unk>"

_SPACE_CLASS = rb" \t\n\r\x0b\x0c"  # KenLM's word separators (see nmt.core.perplexity)


def check_input_file(path: str | Path, what: str) -> Path:
    """``path`` as a :class:`Path`; :class:`FileNotFoundError` / :class:`IsADirectoryError` naming it."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, f"{what} is a directory, not a file", str(path))
    if not path.is_file():
        raise FileNotFoundError(errno.ENOENT, f"{what} not found", str(path))
    return path


def stream_checked(src: IO[bytes], write, path: Path, rewriter: "UnkRewriter | None") -> tuple[int, int]:
    """Copy the text to lmplz block by block, checking it: strict UTF-8 (:class:`DataError` with the line),
    a leading byte order mark dropped, ``<unk>`` rewritten. Returns ``(lines, lines with a word)``."""
    n_lines = 0
    n_words = 0
    try:
        for block in iter(lambda: src.readlines(1 << 20), []):
            if n_lines == 0 and block[0].startswith(b"\xef\xbb\xbf"):
                block[0] = block[0][3:]
            data = b"".join(block)
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                for k, raw in enumerate(block):
                    try:
                        raw.decode("utf-8")
                    except UnicodeDecodeError as err:
                        raise DataError(path, n_lines + k + 1,
                                        f"invalid UTF-8 byte(s) {raw[err.start:err.end]!r} at byte {err.start} "
                                        "of the line") from None
                raise
            if not n_words:
                n_words = sum(1 for raw in block if raw.split())
            if rewriter is not None:
                data = b"".join(rewriter(raw) for raw in block)
            write(data)
            n_lines += len(block)
    except GZIP_ERRORS as err:  # read a block at a time: the line is not known, the lines before it are
        raise DataError(f"{path}: corrupt or truncated gzip stream after its first {n_lines} line(s) or fewer: "
                        f"{err}") from None
    return n_lines, n_words


def open_binary_text(path: Path) -> IO[bytes]:
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def _whole_word(word: str) -> re.Pattern[bytes]:
    return re.compile(rb"(?<![^" + _SPACE_CLASS + rb"])" + re.escape(word.encode("utf-8"))
                      + rb"(?![^" + _SPACE_CLASS + rb"])")


def check_map_unk(map_unk: str | None) -> None:
    if map_unk is None:
        return
    if not map_unk or split_words(map_unk) != [map_unk] or map_unk in (UNK, "<s>", "</s>"):
        raise ValueError(f"map_unk must be one ordinary word without whitespace, got {map_unk!r}")


class UnkRewriter:
    """Streams text to lmplz, rewriting whole-word ``<unk>`` and checking for collisions."""

    def __init__(self, map_unk: str):
        self.pattern = _whole_word(UNK)
        self.repl = map_unk.encode("utf-8")
        self.repl_pattern = _whole_word(map_unk)
        self.unk_count = 0
        self.repl_seen = False

    def __call__(self, line: bytes) -> bytes:
        if self.repl in line and self.repl_pattern.search(line):
            self.repl_seen = True
        if b"<unk>" in line:
            line, n = self.pattern.subn(self.repl, line)
            self.unk_count += n
        return line
