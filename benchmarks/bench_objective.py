"""One OPNB objective + gradient: pyopnb against R's OPNB internals, side by side.

n = 1e5, p = 20, K = 10, ndim = 20, random V (issue 4's case), plus scaling in
n. Run: python benchmarks/bench_objective.py [--n 100000] [--scaling]. R is
measured through rpy2 when R has OPNB installed; otherwise SPEC.md's figures
are shown, marked "(not measured)". Peak memory is this process's (Python) and,
for R, measured in a separate R process when R is available.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import R, best_of, child_json, table  # noqa: E402
from pyopnb.objective import objective_and_gradient  # noqa: E402

SPEC_R = {"exact": 15.3, "binned": 0.72}


def make(n, p=20, K=10, ndim=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = rng.integers(0, K, n)
    PI = np.bincount(y, minlength=K) / n
    V = rng.standard_normal((p, ndim)) * 0.3
    return V, X, y, PI, np.ones(K)


def _child_peak(n: int, nbin) -> float:
    """Peak RSS growth of one objective + gradient, measured in a fresh interpreter."""
    code = (
        "from benchmarks.bench_objective import make\n"
        "from benchmarks.common import peak_rss_mb\n"
        "from pyopnb.objective import objective_and_gradient\n"
        f"V, X, y, PI, h = make({n})\n"
        "base = peak_rss_mb()\n"
        f"objective_and_gradient(V, X, y, PI, h, nbin={nbin!r}, compat='R')\n"
        "print(json.dumps(peak_rss_mb() - base))\n"
    )
    return float(child_json(code))


def formulation_costs(n: int) -> str:
    """One evaluation of the journal's objective (normalised V, a bandwidth per
    class: the multi-bandwidth passes) beside R's formulation's at the same
    n, K, ndim, both on 1 and on 2 threads."""
    from pyopnb.evaluation import check_problem
    from pyopnb.formulation import CorrectFormulation, JournalFormulation, RFormulation

    V, X, y, PI, _ = make(n)
    h_k = np.linspace(0.2, 0.6, PI.size)  # class bandwidths as the journal's rule gives them: all different
    p_R = check_problem(X, y, PI, np.ones(PI.size))
    p_J = check_problem(X, y, PI, h_k)
    rows = []
    # best of 3 exact evaluations (seconds each), of 7 binned ones (a tenth of a second)
    for name, nbin, reps in (("exact", None, 3), ("binned", 1000, 7)):
        for threads in (1, 2):
            # one evaluator each, as a fit makes it, evaluated again and again
            ev_r = RFormulation().evaluator(p_R, nbin, threads)
            ev_c = CorrectFormulation().evaluator(p_R, nbin, threads)
            ev_j = JournalFormulation().evaluator(p_J, nbin, threads)
            t_r = best_of(lambda: ev_r.value_and_grad(V), reps)
            t_c = best_of(lambda: ev_c.value_and_grad(V), reps)
            t_j = best_of(lambda: ev_j.value_and_grad(V), reps)
            rows.append([name, threads, f"{t_r:.3f}", f"{t_c:.3f}", f"{t_j:.3f}", f"{t_j / t_r:.2f}x",
                         f"{t_j / t_c:.2f}x"])
    return (f"formulations, one objective + gradient, n = {n}, p = 20, K = 10, ndim = 20 "
            "(best of 3 exact, of 7 binned)\n"
            + table(rows, ["case", "threads", "R's s", "correct s", "journal s", "journal / R's",
                           "journal / correct"]))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--scaling", action="store_true", help="also time n = 1e3 .. 1e6")
    args = ap.parse_args(argv)
    V, X, y, PI, h = make(args.n)
    r = R(["OPNB"])
    rows = []
    if r.ok:
        r.ro.r("suppressMessages(library(OPNB))")
        r.assign("V", V)
        r.assign("X", X)
        r.assign("y0", y.astype(np.int64))
        r.assign("PI", PI)
        r.assign("h", h)
    for name, nbin in (("exact", None), ("binned", 1000)):
        for threads in (1, 2):
            t_py = best_of(lambda: objective_and_gradient(V, X, y, PI, h, nbin=nbin, compat="R", threads=threads), 2)
            if threads == 1:
                t_single = t_py
        if r.ok:
            if nbin is None:
                expr = "{OPNB:::f_NB_exact(V, X, y0, PI, h); OPNB:::df_NB_exact(V, X, y0, PI, h)}"
            else:
                expr = "{OPNB:::f_NB_cpp(V, X, y0, PI, h, 1000); OPNB:::df_NB_cpp(V, X, y0, PI, h, 1000)}"
            t_r, src = r.time(expr, 2), "measured"
        else:
            t_r, src = SPEC_R[name], "SPEC.md (not measured)"
        rows.append([name, f"{t_single:.3f}", f"{t_py:.3f}", f"{t_r:.3f}", src, f"{t_r / t_py:.1f}x"])
    print(f"objective + gradient, n = {args.n}, p = 20, K = 10, ndim = 20" + ("" if r.ok else f"  [R: {r.why_not}]"))
    print(table(rows, ["case", "pyopnb 1 thread s", "pyopnb 2 threads s", "R s", "R source", "R / pyopnb"]))
    print(f"pyopnb peak resident memory above its inputs, exact / binned, in a fresh process: "
          f"{_child_peak(args.n, None):.0f} / {_child_peak(args.n, 1000):.0f} MB "
          f"(R's exact: 1090 MB at this size, SPEC.md; a quarter is 272 MB)")
    print()
    print(formulation_costs(args.n))
    if args.scaling:
        srows = []
        for n in (1_000, 10_000, 100_000, 1_000_000):
            V, X, y, PI, h = make(n)
            te = best_of(lambda: objective_and_gradient(V, X, y, PI, h, compat="R"), 1)
            tb = best_of(lambda: objective_and_gradient(V, X, y, PI, h, nbin=1000, compat="R"), 1)
            srows.append([n, f"{te:.3f}", f"{tb:.3f}"])
        print(table(srows, ["n", "exact s", "binned s"]))


if __name__ == "__main__":
    main()
