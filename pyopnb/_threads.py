"""The one place that decides how many threads pyopnb's compiled core uses.

Every parallel region of the core runs on the count :func:`resolve` returns:

1. ``threads=`` given to a function or estimator (``-1``: every core this
   process may use); the entry point passes its count to everything it calls;
2. else the environment variable ``PYOPNB_NUM_THREADS``;
3. else OpenMP's own setting, ``omp_get_max_threads()`` of the OpenMP runtime
   the core is linked with: ``OMP_NUM_THREADS`` where set, a limit set with
   threadpoolctl (``threadpool_limits(k, user_api="openmp")``) or by joblib's
   workers, else the cores this process may use.

Results do not depend on the count: the core splits its work in fixed
partitions and adds partial sums in a fixed order.
"""
from __future__ import annotations

import concurrent.futures
import os
from typing import Any, Callable, Dict, List, Optional

__all__ = ["available_cores", "resolve", "for_blocks"]


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity), at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def _positive(value: Any, what: str) -> int:
    try:
        as_int = int(value)
        ok = as_int == float(value)
    except (TypeError, ValueError):
        ok = False
    if not ok or isinstance(value, bool) or (as_int < 1 and as_int != -1):
        raise ValueError(f"{what} must be a positive integer or -1 (every core), got {value!r}")
    return available_cores() if as_int == -1 else as_int


def resolve(threads: Optional[int] = None) -> int:
    """The thread count for the core: ``threads``, else
    ``PYOPNB_NUM_THREADS``, else OpenMP's setting (``OMP_NUM_THREADS``,
    threadpoolctl), else the cores. Each public entry point resolves its
    count once and passes it down to everything it calls."""
    if threads is not None:
        return _positive(threads, "threads")
    env = os.environ.get("PYOPNB_NUM_THREADS", "").strip()
    if env:
        return _positive(env, "PYOPNB_NUM_THREADS")
    from . import _ksum

    return max(1, int(_ksum.omp_max_threads()))


_pools: Dict[int, concurrent.futures.ThreadPoolExecutor] = {}


def _pool(threads: int) -> concurrent.futures.ThreadPoolExecutor:
    if threads not in _pools:
        _pools[threads] = concurrent.futures.ThreadPoolExecutor(max_workers=threads,
                                                                thread_name_prefix="pyopnb")
    return _pools[threads]


# rows per block of for_blocks: the blocks depend on n alone
_ROWS = 65536


def for_blocks(n: int, fn: Callable[[int, int], Any], threads: int) -> List[Any]:
    """[fn(s, e) for each block s:e of range(n)], in block order, the blocks
    run on ``threads`` threads (NumPy releases the GIL). The blocks are
    fixed by n alone (65536 rows, at most 64)."""
    nblk = max(1, min(64, -(-n // _ROWS)))
    edges = [n * b // nblk for b in range(nblk + 1)]
    if threads == 1 or nblk == 1:
        return [fn(edges[b], edges[b + 1]) for b in range(nblk)]
    return list(_pool(threads).map(lambda b: fn(edges[b], edges[b + 1]), range(nblk)))
