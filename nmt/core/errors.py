"""One error convention for every command of the toolkit.

A command that meets bad input prints one line on stderr and exits non-zero::

    PROG: FILE:LINE: what is wrong        (exit status 2: bad input or bad usage)
    PROG: internal error: ...             (exit status 1: a bug; --debug shows the traceback)

No traceback is printed unless ``--debug`` is given (or ``RNNSMT_DEBUG=1`` is set).
Wrap each ``cli_main`` with :func:`command`; raise :class:`UsageError` (or
:class:`nmt.core.io.DataError` for a fault at a file and line) from anywhere below it.
"""
from __future__ import annotations

import errno
import functools
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

EXIT_OK = 0
EXIT_FAILURE = 1      #: a bug, or an external tool that failed
EXIT_BAD_INPUT = 2    #: bad input file, bad option, refused overwrite
EXIT_INTERRUPTED = 130

DEBUG_FLAG = "--debug"


class UsageError(ValueError):
    """Bad options or a refused action (e.g. an output that would overwrite an input)."""


def _message_of(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        where = err.filename if err.filename is not None else ""
        return f"{where}: {err.strerror}" if where else err.strerror
    if isinstance(err, UnicodeDecodeError):
        return f"invalid UTF-8 byte(s) {err.object[err.start:err.end]!r} at byte {err.start}"
    text = str(err)
    return text if text else type(err).__name__


def is_bad_input(err: BaseException) -> bool:
    """Errors that describe the user's input or options rather than a bug of ours."""
    from nmt.core.io import DataError

    if isinstance(err, (DataError, UsageError, UnicodeDecodeError)):
        return True
    if isinstance(err, (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError,
                        FileExistsError)):
        return True
    if isinstance(err, OSError):
        return err.errno in (errno.ENOSPC, errno.ENAMETOOLONG, errno.EROFS)
    # every reader of ours raises ValueError subclasses with the file and line in the message
    return isinstance(err, ValueError)


def report(prog: str, err: BaseException, debug: bool = False) -> int:
    """Print ``err`` the toolkit's way on stderr; return the exit status."""
    if debug:
        traceback.print_exception(err, file=sys.stderr)
    if isinstance(err, KeyboardInterrupt):
        print(f"{prog}: interrupted", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    message = _message_of(err)
    if message.startswith(f"{prog}: "):
        message = message[len(prog) + 2:]
    if is_bad_input(err):
        print(f"{prog}: {message}", file=sys.stderr, flush=True)
        return EXIT_BAD_INPUT
    hint = "" if debug else f" (rerun with {DEBUG_FLAG} for the traceback)"
    print(f"{prog}: internal error: {type(err).__name__}: {message}{hint}", file=sys.stderr, flush=True)
    return EXIT_FAILURE


def command(prog: str) -> Callable[[Callable[..., int | None]], Callable[..., int]]:
    """Decorate a ``cli_main(argv)``: the toolkit's error convention and ``--debug``.

    ``argparse`` usage errors keep their own exit status 2; a ``SystemExit`` with a message
    is printed as ``PROG: message`` with status 2; any other exception goes through
    :func:`report`.
    """
    def wrap(main: Callable[..., int | None]) -> Callable[..., int]:
        @functools.wraps(main)
        def run(argv: Sequence[str] | None = None, *args: Any, **kwargs: Any) -> int:
            given = list(sys.argv[1:] if argv is None else argv)
            if "--" in given:  # options after '--' belong to another command (e.g. a launcher's)
                cut = given.index("--")
                head, tail = given[:cut], given[cut:]
            else:
                head, tail = given, []
            debug = os.environ.get("RNNSMT_DEBUG", "") not in ("", "0") or DEBUG_FLAG in head
            head = [a for a in head if a != DEBUG_FLAG]
            try:
                status = main(head + tail, *args, **kwargs)
            except SystemExit as exit_:
                code = exit_.code
                if code is None or isinstance(code, int):
                    return int(code or 0)
                return report(prog, UsageError(str(code)), debug)
            except BaseException as err:  # noqa: BLE001 - the one place that turns errors into messages
                return report(prog, err, debug)
            finally:
                sys.stdout.flush()
            return int(status or 0)
        run.prog = prog  # type: ignore[attr-defined]
        return run
    return wrap


def _same_file(a: Path, b: Path) -> bool:
    """Same file: by inode when both exist, else by resolved path (links followed)."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def refuse_overwriting_inputs(outputs: dict[str, str | os.PathLike[str] | None],
                              inputs: dict[str, str | os.PathLike[str] | None]) -> None:
    """Raise :class:`UsageError` when an output path is one of the input paths, or two outputs are one file
    (the second write would replace the first).

    ``outputs`` and ``inputs`` map a flag name (for the message) to a path; ``None``, ``""`` and
    ``"-"`` are skipped. Paths are compared after resolving links, and by inode when both exist.
    """
    given = [(flag, Path(p)) for flag, p in outputs.items() if p not in (None, "", "-")]
    for out_flag, out in given:
        for in_flag, src in inputs.items():
            if src in (None, "", "-"):
                continue
            if _same_file(out, Path(src)):
                raise UsageError(f"{out}: {out_flag} is the same file as {in_flag}; refusing to overwrite an input")
    for k, (flag_a, a) in enumerate(given):
        for flag_b, b in given[k + 1:]:
            if _same_file(a, b):
                raise UsageError(f"{b}: {flag_a} and {flag_b} are the same file")
