"""The default thread count against the work: whole fits at 1 thread, at 2
threads and at the default (which chooses from the work, see
``pyopnb._threads.WORK_PER_THREAD``), on a quiet machine and with one core
kept busy by another process.

Each case fits R's formulation (binned, and exact) on Gaussian classes
shifted in 10 columns, the fastest of ``--repeat`` fits after a warm-up.
The busy core is a pure-Python loop pinned to the last core this process
may use; the fits may run on every core. Run it on a machine with nothing
else running.

Run: python -m benchmarks.bench_default_threads [--repeat 3] [--quick]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from typing import Callable, List

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.bench_threads import _data  # noqa: E402
from benchmarks.common import table  # noqa: E402

CASES = [  # n, p, K, ndim
    (150, 4, 3, 2), (300, 8, 2, 2), (1000, 10, 3, 3), (3000, 20, 3, 5), (10_000, 20, 3, 5),
    (30_000, 20, 3, 5), (100_000, 20, 3, 5),
]


def _best(fn: Callable[[], object], repeat: int) -> float:
    fn()
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


class _BusyCore:
    """Another process spinning on the last usable core, while in the block."""

    def __enter__(self):
        core = sorted(os.sched_getaffinity(0))[-1]
        self.proc = subprocess.Popen([sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{core}}})\n"
                                      "while True: pass"])
        time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


def run(repeat: int, quick: bool) -> List[List[str]]:
    import warnings

    from pyopnb import OPNB, _threads

    rows = []
    cases = [c for c in CASES if not quick or c[0] <= 10_000]
    for n, p, K, ndim in cases:
        X, y = _data(n, p, K)
        for nbin in (1000, None):
            if nbin is None and n > 30_000:
                continue
            default = _threads.resolve(None, _threads.work(n, p, ndim, K))

            def fit(thr, X=X, y=y, nbin=nbin, ndim=ndim):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return lambda: OPNB(X, y, ndim=ndim, nbin=nbin, threads=thr)

            times = []
            for busy in (False, True):
                if busy:
                    ctx = _BusyCore()
                    ctx.__enter__()
                try:
                    times += [_best(fit(t), repeat) for t in (1, 2, None)]
                finally:
                    if busy:
                        ctx.__exit__()
            q1, q2, qd, b1, b2, bd = times
            rows.append([f"{n}", f"{p}", f"{K}", f"{ndim}", "binned" if nbin else "exact",
                         f"{_threads.work(n, p, ndim, K):.2g}", f"{default}",
                         f"{q1:.4f}", f"{q2:.4f}", f"{q1 / q2:.2f}", f"{qd:.4f}",
                         f"{b1:.4f}", f"{b2:.4f}", f"{b2 / b1:.2f}", f"{bd:.4f}", f"{bd / b1:.2f}"])
            print(" | ".join(rows[-1]), flush=True)
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="cases up to n = 1e4")
    args = ap.parse_args(argv)
    os.environ.pop("PYOPNB_NUM_THREADS", None)
    from pyopnb import _threads

    print(f"{_threads.available_cores()} cores; WORK_PER_THREAD = {_threads.WORK_PER_THREAD}")
    rows = run(args.repeat, args.quick)
    print(table(rows, ["n", "p", "K", "ndim", "sums", "work", "default threads", "quiet 1", "quiet 2", "speed-up 2",
                       "quiet default", "busy 1", "busy 2", "busy 2 / 1", "busy default", "busy default / 1"]))


if __name__ == "__main__":
    main()
