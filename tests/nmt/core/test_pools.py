"""nmt.core.pools: a pool left by an error finishes the tasks handed to it and never hangs; ordered_map."""
import multiprocessing
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nmt.core.pools import can_fork, fork_pool, ordered_map

pytestmark = pytest.mark.skipif(not can_fork(), reason="the pools fork")

_RELEASE = None  # a multiprocessing.Event the workers inherit at the fork


def _write_when_released(path: str) -> str:
    assert _RELEASE is not None
    _RELEASE.wait()
    Path(path).write_text("done")
    return path


def test_an_error_in_the_block_lets_the_tasks_in_flight_finish(tmp_path):
    """Pool.__exit__ would terminate the workers, blocked in their tasks until the error is raised; fork_pool
    closes and joins: the tasks handed to the pool run to their end, then the error comes out."""
    global _RELEASE
    _RELEASE = multiprocessing.get_context("fork").Event()
    paths = [str(tmp_path / f"task{k}") for k in range(4)]
    try:
        with pytest.raises(ValueError, match="a data error"):
            with fork_pool(2) as pool:
                for p in paths:
                    pool.apply_async(_write_when_released, (p,))
                _RELEASE.set()
                raise ValueError("a data error")
    finally:
        _RELEASE = None
    assert [Path(p).read_text() for p in paths] == ["done"] * 4


def _blocked(_: int) -> None:
    assert _RELEASE is not None
    _RELEASE.wait()


def test_keyboard_interrupt_terminates_the_workers():
    """A Ctrl-C does not wait for the tasks: workers blocked for ever are terminated."""
    global _RELEASE
    _RELEASE = multiprocessing.get_context("fork").Event()  # never set
    try:
        with pytest.raises(KeyboardInterrupt):
            with fork_pool(2) as pool:
                pool.apply_async(_blocked, (0,))
                pool.apply_async(_blocked, (1,))
                workers = multiprocessing.active_children()
                raise KeyboardInterrupt
    finally:
        _RELEASE = None
    assert workers and not any(w.is_alive() for w in workers)


_MANY_POOLS = textwrap.dedent("""
    from nmt.core.pools import fork_pool

    def big_result(k):
        return b"x" * (200_000 if k % 2 else 50)  # more than a pipe holds: a worker writes it holding the queue lock

    for round in range(40):
        try:
            with fork_pool(2) as pool:
                pending = []
                for k in range(40):
                    pending.append(pool.apply_async(big_result, (k,)))
                    if len(pending) >= 4:
                        pending.pop(0).get()
                    if k == 17:
                        raise ValueError("a data error")
        except ValueError:
            pass
    print("ok")
""")


def test_pools_left_by_errors_with_large_results_in_flight_never_hang():
    """The CPython hang (gh-96995) fork_pool avoids: with Pool.__exit__ (terminate) this loop stopped for ever within
    a few dozen rounds here (a worker killed while writing a result leaves the result queue locked); the timeout
    only detects a hang, the loop takes about a second."""
    run = subprocess.run([sys.executable, "-c", _MANY_POOLS], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "ok"


def _square(x: int) -> int:
    return x * x


def test_ordered_map_keeps_the_order_and_reads_tasks_lazily():
    read = []

    def tasks():
        for k in range(50):
            read.append(k)
            yield k

    with fork_pool(2) as pool:
        results = ordered_map(pool, _square, tasks(), window=3)
        assert next(results) == 0
        assert len(read) == 3  # no more than the window was handed to the pool
        assert list(results) == [k * k for k in range(1, 50)]
