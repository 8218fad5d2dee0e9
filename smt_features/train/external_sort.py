"""GNU ``sort`` as a bounded-memory external sort of tab-separated temp files, read back as a stream of lines.

Byte order (``LC_ALL=C``), the first tab-separated field as the key (``-t TAB -k1,1``), so that a
key sorts before every key it is a prefix of, exactly as Python sorts ``str`` (UTF-8 byte order is
code-point order). Memory is bounded by ``-S BUFFER``; spill files go to ``-T TMP_DIR``
(gzip-compressed with ``--compress-program=gzip`` when asked). Every command is an argument list.
"""
from __future__ import annotations

import gzip
import io
import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO

PathLike = str | os.PathLike[str]
_SIZE = re.compile(r"^\d+(\.\d+)?[bkKmMgGtT%]?$")


@dataclass(frozen=True)
class SortOptions:
    """``sort``'s knobs: ``-S buffer``, ``-T tmp_dir``, ``--parallel``, temp-file compression."""

    buffer: str = "1G"
    tmp_dir: str = ""
    parallel: int = 1
    compress: bool = False


def check_size(text: str) -> str:
    """``text`` if ``sort -S`` accepts it (``500M``, ``2G``, ``10%``, a number of KiB), else ValueError."""
    if not _SIZE.match(text):
        raise ValueError(f"sort buffer size {text!r}: expected a number with an optional unit "
                         "(b, K, M, G, T or %), e.g. 1G or 500M")
    return text


def sort_command() -> str:
    exe = shutil.which("sort")
    if exe is None:
        raise RuntimeError("GNU sort not found on PATH (needed for the streamed phrase extraction)")
    return exe


def open_temp(path: PathLike, mode: str, compress: bool) -> IO[str]:
    """A temp file as text with ``\\n`` line ends only: plain, or gzip (level 1) with ``compress``."""
    if compress:
        return io.TextIOWrapper(gzip.open(path, mode[0] + "b", compresslevel=1), encoding="utf-8", newline="\n")
    return open(path, mode[0], encoding="utf-8", newline="\n")


@contextmanager
def sorted_lines(files: Sequence[PathLike], opts: SortOptions, *, compressed_input: bool = False,
                 stable: bool = False) -> Iterator[Iterator[str]]:
    """The lines of ``files`` (concatenated; gzip with ``compressed_input``) sorted by their first field.

    Yields an iterator of lines (with their ``\\n``); a failing ``sort`` (or ``gzip -dc``) raises
    RuntimeError once the stream is read to its end. With ``stable`` equal keys keep input order.
    """
    args = [sort_command(), "-t", "\t", "-k1,1", "-S", check_size(opts.buffer),
            f"--parallel={max(1, opts.parallel)}"]
    if stable:
        args.append("-s")
    if opts.tmp_dir:
        args += ["-T", str(opts.tmp_dir)]
    if opts.compress:
        args.append("--compress-program=gzip")
    env = dict(os.environ, LC_ALL="C")
    procs: list[subprocess.Popen] = []
    try:
        if compressed_input:
            unzip = subprocess.Popen(["gzip", "-dc", "--", *map(str, files)], stdout=subprocess.PIPE)
            procs.append(unzip)
            sorter = subprocess.Popen(args, stdin=unzip.stdout, stdout=subprocess.PIPE, env=env)
            assert unzip.stdout is not None
            unzip.stdout.close()  # sort holds it now
        else:
            sorter = subprocess.Popen(args + ["--", *map(str, files)], stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, env=env)
        procs.append(sorter)
        assert sorter.stdout is not None
        text = io.TextIOWrapper(sorter.stdout, encoding="utf-8", newline="\n")

        def lines() -> Iterator[str]:
            yield from text
            for p in procs:
                if p.wait() != 0:
                    raise RuntimeError(f"{os.path.basename(p.args[0])} failed with exit status {p.returncode}")

        yield lines()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            if p.stdout is not None:
                p.stdout.close()
