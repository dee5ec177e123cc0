"""Where one evaluation of R's binned objective spends its time, pass by pass.

An evaluation is: the projection Z = X V, the binning and grid tables
(``update``), the points' two products and their posteriors, the gradient's
passes (c weights, their grid sums, dl/dZ), and t(X) dZ. Each is timed
alone, the fastest of ``--repeat`` calls after a warm-up, on
benchmarks.fits' data scaled as R's OPNB scales it, at R's start V. "value
only" is the value's products without the posteriors, so the posteriors'
share is the difference. The whole-fit ratios against R are
``python -m benchmarks.whole_fits``'.

Run: python -m benchmarks.bench_passes [--n 100000] [--p 20] [--K 3] [--ndim 5] [--threads 1] [--repeat 20]
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.bench_default_threads import _best  # noqa: E402
from benchmarks.common import table  # noqa: E402
from benchmarks.fits import make_data  # noqa: E402


def run(n: int, p: int, K: int, ndim: int, threads: int, repeat: int, nbin: int = 1000) -> List[List[str]]:
    from pyopnb._core import linalg, project
    from pyopnb._core.r_grid import RGridTables
    from pyopnb.evaluation import GRID_EPS
    from pyopnb.formulation import r_standardise, r_start
    from pyopnb.ksum import DEFAULT_BETA
    from pyopnb.labels import factor_levels

    X, labels = make_data(n, p, K)
    _, codes, _ = factor_levels(labels)
    y0 = np.ascontiguousarray(codes, dtype=np.int32)
    _, _, Xs = r_standardise(X, threads=threads)
    V = r_start(None, Xs, y0 + 1, ndim, threads)
    PI = np.bincount(y0, minlength=K) / n
    tables = RGridTables(ndim, y0, K, np.ones(K), nbin, GRID_EPS, DEFAULT_BETA, True, threads, None, None)
    Zt = project.project(Xs, V, threads)
    tables.update(Zt)
    _, post = tables.value_and_posteriors(PI, True)
    dZ = tables.gradient(post)
    passes = [("projection Z = X V", lambda: project.project(Xs, V, threads, out=Zt)),
              ("binning and grid tables (update)", lambda: tables.update(Zt)),
              ("products and posteriors", lambda: tables.value_and_posteriors(PI, True)),
              ("value only (products)", lambda: tables.value_and_posteriors(PI, False)),
              ("gradient (c weights, grid sums, dl/dZ)", lambda: tables.gradient(post)),
              ("t(X) dZ", lambda: linalg.crossprod_t(Xs, dZ, threads))]
    times = {name: _best(fn, repeat) for name, fn in passes}
    total = sum(t for name, t in times.items() if name != "value only (products)")
    return [[name, f"{times[name] * 1e3:.2f}", "" if name == "value only (products)" else f"{times[name] / total:.0%}"]
            for name, _ in passes] + [["one evaluation", f"{total * 1e3:.2f}", "100%"]]


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_passes", description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--p", type=int, default=20)
    ap.add_argument("--K", type=int, default=3)
    ap.add_argument("--ndim", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args(argv)
    rows = run(args.n, args.p, args.K, args.ndim, args.threads, args.repeat)
    print(f"R's binned objective, one evaluation pass by pass: n = {args.n}, p = {args.p}, K = {args.K}, "
          f"ndim = {args.ndim}, nbin = 1000, {args.threads} thread(s); fastest of {args.repeat}\n")
    print(table(rows, ["pass", "ms", "share"]))


if __name__ == "__main__":
    main()
