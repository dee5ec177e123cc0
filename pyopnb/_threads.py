"""The one place that decides how many threads pyopnb's compiled core uses.

Every parallel region of the core runs on at most the count :func:`resolve` returns:

1. ``threads=`` given to a function or estimator (``-1``: every core this
   process may use); the entry point passes its count to everything it calls;
2. else the environment variable ``PYOPNB_NUM_THREADS``;
3. else OpenMP's own setting, ``omp_get_max_threads()`` of the OpenMP runtime
   the core is linked with: ``OMP_NUM_THREADS`` where set, a limit set with
   threadpoolctl (``threadpool_limits(k, user_api="openmp")``) or by joblib's
   workers, else the cores this process may use; and, where the entry point
   says how much work it has, no more threads than that work keeps busy
   (one per :data:`WORK_PER_THREAD`): a small fit runs on one thread, where
   more would only start and wait, and on a busy machine wait for the
   slowest core.

A count above the cores this process may use (:func:`available_cores`) is
capped at those cores, with a warning the first time: threads beyond the
cores only wait for one another (on 2 cores, 64 threads made a small fit 7
times slower, and 10000 did not finish).

The count is the most a step takes: each parallel region of the compiled
core takes one thread per unit of its own work (``_region_threads`` in
``pyopnb/_core/threads.h``), so a small region runs on the caller's thread
alone, and a fit paces its count between evaluations (:class:`Pace`).

Results do not depend on the count: the core splits its work in fixed
partitions and adds partial sums in a fixed order.
"""
from __future__ import annotations

import os
import sys
import warnings
from typing import Any, Optional

__all__ = ["available_cores", "resolve", "work", "Pace", "ThreadCountWarning", "WORK_PER_THREAD"]


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity), at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


class ThreadCountWarning(RuntimeWarning):
    """A thread count above the usable cores was capped at them."""


_warned = False


def _user_stacklevel() -> int:
    """The stacklevel of the first caller outside pyopnb (for warnings.warn
    called from the function that calls this)."""
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == "pyopnb":
        frame, level = frame.f_back, level + 1
    return level


def _capped(count: int, label: str) -> int:
    """count, or the usable cores where it is more (warned once a process)."""
    global _warned
    cores = available_cores()
    if count <= cores:
        return count
    if not _warned:
        _warned = True
        warnings.warn(f"{label} is more than the {cores} cores this process may use: pyopnb uses {cores} threads "
                      f"(threads beyond the cores only wait for each other). Said once per process.",
                      ThreadCountWarning, stacklevel=_user_stacklevel())
    return cores


def _positive(value: Any, what: str) -> int:
    try:
        as_int = int(value)
        ok = as_int == float(value)
    except (TypeError, ValueError):
        ok = False
    if not ok or isinstance(value, bool) or (as_int < 1 and as_int != -1):
        raise ValueError(f"{what} must be a positive integer or -1 (every core), got {value!r}")
    return available_cores() if as_int == -1 else _capped(as_int, f"{what}={value!r}")


# the work one more thread needs to pay for itself, in the units of work(): measured on the whole fits of
# benchmarks/bench_default_threads.py (docs/benchmarks.md)
WORK_PER_THREAD = 1_000_000


def work(n: int, d: int, ndim: int, K: int) -> int:
    """One evaluation's work, in units of WORK_PER_THREAD: the projection
    and t(X) dZ (n d ndim) and the class passes (n ndim K)."""
    return int(n) * int(ndim) * (int(d) + int(K))


def resolve(threads: Optional[int] = None, work: Optional[int] = None) -> int:
    """The thread count for the core: ``threads``, else
    ``PYOPNB_NUM_THREADS``, else OpenMP's setting (``OMP_NUM_THREADS``,
    threadpoolctl), else the cores; at most the usable cores. The last two,
    the defaults, give no more threads than ``work`` (see :func:`work`)
    keeps busy, where the caller gives it; a count asked for is kept. Each
    public entry point resolves its count once and passes it down to
    everything it calls."""
    if threads is not None:
        return _positive(threads, "threads")
    env = os.environ.get("PYOPNB_NUM_THREADS", "").strip()
    if env:
        return _positive(env, "PYOPNB_NUM_THREADS")
    from . import _ksum

    count = max(1, int(_ksum.omp_max_threads()))
    count = _capped(count, f"OpenMP's thread count, {count} (OMP_NUM_THREADS or a threadpoolctl limit),")
    if work is not None:
        count = max(1, min(count, -(-int(work) // WORK_PER_THREAD)))
    return count


class Pace:
    """The thread count of a fit's next evaluation, from how fast the last
    ones ran: on a busy machine a thread on a shared core holds every other
    at each of an evaluation's parallel regions, and fewer threads run
    faster. The fit's results do not depend on the count (the core's parts
    and blocks are fixed by n), so only its time moves.

    It starts at ``most`` (the count resolved for the fit). Its third
    evaluation tries half the count, and later ones, :attr:`EVERY`
    evaluations apart, a neighbouring count (half the current, or double it
    up to ``most``, in turn); it moves there where that evaluation ran in
    under :attr:`GAIN` of the median of the current count's last three. A
    try that does not move doubles the wait before the next (up to
    :attr:`LONGEST`): under contention a try of more threads costs many
    evaluations' time. The first evaluation, which makes the scratch, is
    not timed.
    """

    EVERY = 8
    LONGEST = 256
    GAIN = 0.9

    def __init__(self, most: int):
        self.most = max(1, int(most))
        self.current = self.most
        self.recent: list = []
        self.evaluations = 0
        self.trying: Optional[int] = None
        self.downwards = True
        self.wait = self.EVERY
        self.next_try = 3

    def next(self, seconds: float) -> int:
        """The count for the next evaluation, the last having taken ``seconds``."""
        self.evaluations += 1
        if self.most == 1 or self.evaluations == 1:
            return self.current
        if self.trying is not None:
            tried, self.trying = self.trying, None
            if seconds < self.GAIN * sorted(self.recent)[len(self.recent) // 2]:
                self.current, self.recent, self.wait = tried, [seconds], self.EVERY
            else:
                self.wait = min(self.LONGEST, 2 * self.wait)
            self.next_try = self.evaluations + self.wait
            return self.current
        self.recent = (self.recent + [seconds])[-3:]
        if self.evaluations >= self.next_try:
            down, up = max(1, self.current // 2), min(self.most, 2 * self.current)
            tried = up if down == self.current or (not self.downwards and up != self.current) else down
            self.downwards = not self.downwards
            if tried != self.current:
                self.trying = tried
                return tried
        return self.current
