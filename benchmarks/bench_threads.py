"""Thread scaling: wall and CPU time of the objective and of fits against the thread count.

Cases (issue 14's goals): one objective + gradient of R's binned objective
(n = 1e6, p = 50, K = 10, ndim = 20, nbin = 1000), one exact objective +
gradient (n = 1e5, p = 20, K = 10, ndim = 20), a binned fit with ndim = 2 at
n = 1e6 and, with --scale, the n = 1e6, p = 50, K = 10, ndim = 20 binned fit.
Every case runs at each thread count in one process (the data made once);
CPU time is the process's, all threads together. --quick divides n by 10.

Run: python -m benchmarks.bench_threads [--threads 1 2 4 8 16] [--quick] [--scale]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import table  # noqa: E402


def _data(n: int, p: int, K: int, seed: int = 0) -> Tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    X = rng.normal(size=(n, p))
    X[:, :min(10, p)] += rng.normal(size=(K, min(10, p)))[y]
    return X, y


def _timed(fn: Callable[[], object], repeat: int) -> Tuple[float, float]:
    """(wall, CPU) seconds of the fastest of ``repeat`` calls after a warm-up."""
    fn()
    best = (np.inf, np.inf)
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        best = min(best, (time.perf_counter() - w0, time.process_time() - c0))
    return best


def cases(quick: bool, scale: bool) -> List[Tuple[str, Callable[[int], Callable[[], object]], int]]:
    """(name, threads -> the call to time, repeats)."""
    from pyopnb import OPNB
    from pyopnb.evaluation import check_problem
    from pyopnb.formulation import RFormulation

    div = 10 if quick else 1
    out = []

    def evaluation(n, p, nbin):
        X, y = _data(n, p, 10)
        V = np.random.default_rng(1).standard_normal((p, 20)) * 0.3
        prob = check_problem(X, y, np.bincount(y) / n, np.ones(10) * 0.3)
        # an evaluator as a fit makes it, on thr threads, evaluated again and again
        return lambda thr: (lambda ev=RFormulation().evaluator(prob, nbin, thr): ev.value_and_grad(V))

    out.append((f"objective+gradient, binned, n={1_000_000 // div:.0e} p=50 K=10 ndim=20",
                evaluation(1_000_000 // div, 50, 1000), 3))
    out.append((f"objective+gradient, exact, n={100_000 // div:.0e} p=20 K=10 ndim=20",
                evaluation(100_000 // div, 20, None), 3))
    X, y = _data(1_000_000 // div, 50, 10)
    out.append((f"fit, binned, n={1_000_000 // div:.0e} p=50 K=10 ndim=2",
                lambda thr: (lambda: OPNB(X, y, ndim=2, nbin=1000, threads=thr)), 1))
    if scale:
        out.append((f"fit, binned, n={1_000_000 // div:.0e} p=50 K=10 ndim=20",
                    lambda thr: (lambda: OPNB(X, y, ndim=20, nbin=1000, threads=thr)), 0))
    return out


def main(argv: Optional[Sequence[str]] = None) -> str:
    from pyopnb._threads import available_cores

    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_threads", description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=None,
                    help="thread counts (default: 1, 2, 4, ... up to the cores this process may use)")
    ap.add_argument("--quick", action="store_true", help="n divided by 10")
    ap.add_argument("--scale", action="store_true", help="also the ndim = 20 fit at n = 1e6")
    args = ap.parse_args(argv)
    cores = available_cores()
    threads = args.threads or sorted({t for t in (1, 2, 4, 8, 16, 32, 64) if t <= cores} | {cores})
    rows = []
    for name, make, repeat in cases(args.quick, args.scale):
        base = None
        for thr in threads:
            fn = make(thr)
            if repeat:
                wall, cpu = _timed(fn, repeat)
            else:  # one long fit: no warm-up
                w0, c0 = time.perf_counter(), time.process_time()
                fn()
                wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            base = wall if base is None else base
            rows.append([name, thr, f"{wall:.3f}", f"{cpu:.3f}", f"{base / wall:.2f}", f"{cpu / wall:.2f}"])
            print(" | ".join(map(str, rows[-1])), file=sys.stderr, flush=True)
    md = (f"Thread scaling on {cores} cores ({os.uname().machine}); speed-up against the first thread count\n\n"
          + table(rows, ["case", "threads", "wall s", "CPU s", "speed-up", "CPU / wall"]))
    print(md)
    return md


if __name__ == "__main__":
    main()
