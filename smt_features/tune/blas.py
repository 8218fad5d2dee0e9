"""One BLAS thread for the optimisers' matrix products (``features @ weights`` over the whole pool).

OpenBLAS splits a large ``gemv`` over its threads and then rounds some rows differently from its
one-thread ``gemv`` (a handful in 30M rows here), so an optimiser's weights would depend on the
machine's core count; its threads also spin while waiting, which on a busy machine doubles the CPU a MERT
run takes. MERT, kbMIRA and PRO therefore run their products on one BLAS thread (their restarts already
run in ``--threads`` processes), the reference code as well as the fast one. Needs ``threadpoolctl``
(a dependency); without it nothing is limited.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def single_blas_thread() -> Iterator[None]:
    """BLAS limited to one thread inside the block (inherited by processes forked there)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - a declared dependency
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield
