"""Where log records go: the one stderr set-up of every command, and a run's log file."""
from __future__ import annotations

import logging
import sys
from pathlib import Path

#: ``LEVEL logger.name: message``, the toolkit's stderr log line.
FORMAT = "%(levelname)s %(name)s: %(message)s"


def setup_logging(verbose: bool = False, fmt: str = FORMAT) -> None:
    """Log records to stderr as ``fmt``: INFO and up with ``verbose``, else WARNING and up."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format=fmt, stream=sys.stderr)


def add_file_log(path: Path, logger: str = "nmt", fmt: str = "%(asctime)s %(levelname)s %(message)s",
                 datefmt: str | None = None) -> logging.Handler:
    """Send ``logger`` (INFO and up) also to ``path`` as ``fmt`` (default ``time LEVEL message``); undo with
    :func:`remove_file_log`."""
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(fmt, datefmt))
    root = logging.getLogger(logger)
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    return handler


def remove_file_log(handler: logging.Handler, logger: str = "nmt") -> None:
    logging.getLogger(logger).removeHandler(handler)
    handler.close()
