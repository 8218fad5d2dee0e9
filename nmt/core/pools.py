"""Worker-process pools that are left safely: :func:`fork_pool` and :func:`ordered_map`.

``multiprocessing.Pool.__exit__`` calls ``terminate()``, which SIGTERMs the workers at once. A worker killed while it
writes a result still holds the result queue's lock; the pool's task handler thread then waits for that lock for
ever and ``terminate()`` never returns (CPython issue gh-96995, open: "multiprocessing.Pool terminate shuts down
workers too early"). Here that hung a test for 577 s, and ``tests/nmt/core/test_pools.py`` shows it within a few dozen
pools left by an error while results of 200 kB were in flight. So the pools here are left by ``close()`` and
``join()``: the workers finish the tasks already handed to them and exit by themselves. Callers keep those tasks few
(:func:`ordered_map`'s window), so leaving on an error costs at most a window of work; only ``KeyboardInterrupt``
terminates (the user asked to stop now, and the workers, in the same process group, were interrupted too).
"""
from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from multiprocessing.pool import Pool
from typing import Any


def can_fork() -> bool:
    """Whether this platform has the ``fork`` start method (workers inherit module globals)."""
    return "fork" in multiprocessing.get_all_start_methods()


@contextmanager
def fork_pool(processes: int, *, initializer: Callable[..., Any] | None = None, initargs: tuple = (),
              method: str | None = "fork") -> Iterator[Pool]:
    """A ``multiprocessing`` pool (start ``method``, default ``fork``; ``None``: the platform's default), closed and
    joined on leaving, on an error too: the tasks already handed to it finish (see the module docstring)."""
    pool = multiprocessing.get_context(method).Pool(processes, initializer=initializer, initargs=initargs)
    try:
        yield pool
    except KeyboardInterrupt:
        pool.terminate()
        raise
    finally:
        pool.close()  # a no-op after terminate()
        pool.join()


def ordered_map(pool: Pool, func: Callable[[Any], Any], tasks: Iterable, window: int) -> Iterator:
    """``pool.imap(func, tasks)`` with at most ``window`` tasks in flight (``imap`` would read ``tasks`` to the end at
    once, holding them all, and hand them all to the pool): results in task order, memory bounded by ``window``,
    and a caller that stops early leaves at most ``window`` tasks for :func:`fork_pool` to finish."""
    pending: deque = deque()
    for task in tasks:
        pending.append(pool.apply_async(func, (task,)))
        if len(pending) >= window:
            yield pending.popleft().get()
    while pending:
        yield pending.popleft().get()
