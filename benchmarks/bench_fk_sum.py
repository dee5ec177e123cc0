"""fk_sum: pyopnb against FKSUM's fk_sum, n = 1e6 standard normal points, h = 0.1.

Run: python benchmarks/bench_fk_sum.py [--n 1000000]. R is measured through
rpy2 in the same run when R has FKSUM installed; otherwise SPEC.md's figures
from the reference machine are shown and marked "(not measured)".
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import R, best_of, table  # noqa: E402
from pyopnb import fk_sum  # noqa: E402

# R's times on the reference machine (SPEC.md), used when R cannot run here
SPEC_R = {"at sample": 1.6, "at 1e6 other points": 0.85, "binned 1000 bins": 0.13}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    args = ap.parse_args(argv)
    n = args.n
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n)
    w = np.full(n, 1.0 / n)
    e = rng.standard_normal(n)
    h = 0.1
    cases = [
        ("at sample", lambda: fk_sum(x, w, h), "fk_sum(x, w, 0.1)"),
        ("at 1e6 other points", lambda: fk_sum(x, w, h, e), "fk_sum(x, w, 0.1, x_eval = e)"),
        ("at 1e6 other points, both", lambda: fk_sum(x, w, h, e, type="both"), "fk_sum(x, w, 0.1, x_eval = e, type = 'both')"),
        ("binned 1000 bins", lambda: fk_sum(x, w, h, nbin=1000), "fk_sum(x, w, 0.1, nbin = 1000)"),
    ]
    r = R(["FKSUM"])
    if r.ok:
        r.ro.r("suppressMessages(library(FKSUM))")
        r.assign("x", x)
        r.assign("w", w)
        r.assign("e", e)
    rows = []
    for name, fn, rexpr in cases:
        t_py = best_of(fn, 7)
        if r.ok:
            t_r, src = r.time(rexpr), "measured"
        elif name in SPEC_R:
            t_r, src = SPEC_R[name], "SPEC.md (not measured)"
        else:
            t_r, src = float("nan"), "not measured"
        rows.append([name, f"{t_py:.3f}", f"{t_r:.3f}", src, f"{t_r / t_py:.1f}x"])
    # the floor a user would otherwise write: a naive numpy sum at n = 1e4
    m = 10_000
    xs, ws = x[:m], np.full(m, 1.0 / m)

    def naive():
        u = np.abs(xs[:, None] - xs[None, :]) / h
        return ((1 + u) * np.exp(-u) / 4 * ws[None, :]).sum(axis=1)

    t_naive, t_fast = best_of(naive, 1), best_of(lambda: fk_sum(xs, ws, h))
    rows.append([f"naive numpy at n = {m}", f"{t_fast:.4f}", f"{t_naive:.3f} (numpy)", "measured", f"{t_naive / t_fast:.0f}x"])
    print(f"fk_sum, n = {n}, h = {h}" + ("" if r.ok else f"  [R: {r.why_not}]"))
    print(table(rows, ["case", "pyopnb s", "R s", "R source", "R / pyopnb"]))


if __name__ == "__main__":
    main()
