"""The gradient's t(X) dZ (``pyopnb._core.linalg.crossprod_t``) against the
thread count, on a quiet machine and with one core kept busy by another
process.

t(X) dZ is the evaluation's largest product-sum at many columns (n = 1e6,
p = 50, ndim = 20: 1e9 products). Its rows go by the fixed blocks of
``pyopnb/_core/blocks.h``; the table gives the fastest of ``--repeat`` calls
after a warm-up. Run it with another build's pyopnb on the path to compare
two versions side by side (docs/benchmarks.md).

Run: python -m benchmarks.bench_crossprod [--repeat 5] [--n 1000000]
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import List

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.bench_default_threads import _best, _BusyCore  # noqa: E402
from benchmarks.common import table  # noqa: E402


def run(n: int, p: int, q: int, repeat: int) -> List[List[str]]:
    from pyopnb._core import linalg

    rng = np.random.default_rng(0)
    A = rng.normal(size=(n, p))
    Bt = np.ascontiguousarray(rng.normal(size=(q, n)))
    times = {}
    for busy in (False, True):
        for threads in (1, 2):
            if busy:
                with _BusyCore():
                    times[busy, threads] = _best(lambda: linalg.crossprod_t(A, Bt, threads), repeat)
            else:
                times[busy, threads] = _best(lambda: linalg.crossprod_t(A, Bt, threads), repeat)
    row = [str(n), str(p), str(q)] + [f"{times[b, t] * 1e3:.0f}" for b in (False, True) for t in (1, 2)]
    row += [f"{times[True, 2] / times[True, 1]:.2f}"]
    return [row]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--p", type=int, default=50)
    ap.add_argument("--q", type=int, default=20, help="dZ's columns (ndim)")
    args = ap.parse_args(argv)
    import pyopnb

    print(f"pyopnb from {os.path.dirname(pyopnb.__file__)}")
    print(table(run(args.n, args.p, args.q, args.repeat),
                ["n", "p", "ndim", "quiet 1 (ms)", "quiet 2 (ms)", "busy 1 (ms)", "busy 2 (ms)", "busy 2 / 1"]))


if __name__ == "__main__":
    main()
