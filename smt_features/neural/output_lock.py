"""The output lock of a rescoring run (one writer per output), and the removal of a killed run's temp files."""
from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from nmt.core.io import remove_stale_temp_files
from nmt.core.errors import UsageError

log = logging.getLogger(__name__)


class OutputLock:
    """An exclusive, non-blocking lock on one output: ``flock`` on ``OUTPUT.lock`` beside it.

    Two runs writing the same output (its temp files, its ``OUTPUT.parts/`` chunks) would corrupt each
    other; the second one is refused with :class:`~nmt.core.errors.UsageError` naming the holder (the pid and
    host the holder wrote into the lock file). The operating system drops the lock when its holder
    exits, even on ``kill -9``, so a crashed run never blocks the next one. On release the lock file is
    removed (while still locked; a run that opened the old file notices and opens the new one).
    """

    def __init__(self, output: str | os.PathLike, prog: str = "smt-rescore") -> None:
        self.output = str(output)
        self.path = Path(f"{output}.lock")
        self.prog = prog
        self.fd: int | None = None

    def acquire(self) -> "OutputLock":
        import fcntl
        import socket

        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = self._holder(fd)
                os.close(fd)
                raise UsageError(f"{self.output}: another run is writing this output ({holder}; lock file "
                                 f"{self.path}); wait for it to finish or stop it") from None
            except BaseException:
                os.close(fd)
                raise
            try:  # the previous holder may have removed the file between our open and our flock
                current = os.stat(self.path)
            except FileNotFoundError:
                current = None
            if current is not None and os.path.samestat(os.fstat(fd), current):
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, f"pid={os.getpid()} host={socket.gethostname()} prog={self.prog} "
                     f"since={time.strftime('%Y-%m-%dT%H:%M:%S')}\n".encode())
        self.fd = fd
        return self

    @staticmethod
    def _holder(fd: int) -> str:
        try:
            text = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
        except OSError:
            text = ""
        info = dict(item.split("=", 1) for item in text.split() if "=" in item)
        if "pid" not in info:
            return "held by another process that has not yet written its pid"
        where = f"pid {info['pid']} on host {info.get('host', '?')}"
        if info.get("prog"):
            where = f"{info['prog']}, {where}"
        return f"held by {where}" + (f" since {info['since']}" if info.get("since") else "")

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> "OutputLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def remove_stale_temps(output: str | os.PathLike, sidecars: tuple[str, ...] = (".rescore.json", ".skipped")
                       ) -> list[Path]:
    """Delete the temp files a killed run left for ``output`` (``.NAME.XXXXXXXX.tmp`` beside it, NAME the
    output's name or one of its ``sidecars``); no other file is touched. Call it holding the output's
    :class:`OutputLock` (a live run's temp files are never stale then). Returns what was removed."""
    out = Path(output)
    removed = remove_stale_temp_files(out.parent, names=[out.name] + [out.name + s for s in sidecars])
    if removed:
        log.info("removed %d stale temp file(s) of %s left by an interrupted run: %s", len(removed), out,
                 ", ".join(p.name for p in removed))
    return removed
