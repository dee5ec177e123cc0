"""Small data fast: pyopnb against R at every n, side by side in one run.

1. One objective + gradient (R's f_NB_* then df_NB_*; pyopnb's
   objective_and_gradient, compat="R"), p = 20, K = 2, ndim = 20, exact and
   binned (nbin = 1000), 1 thread, for n from 100 to 1e6: the ratio R / pyopnb.
   pyopnb is timed both as a user calls it (the public function: input
   checks, fresh buffers) and as a fit evaluates it (a workspace kept from
   one evaluation to the next, V moved a little each time).
2. Fits: OPNB on iris (ndim 2 and 4, R's default nbin = 1000, and exact).
3. Tuning on the study's small PMLB sets: OPNB_CV_lam (R's default grid, 5
   folds) in R and in pyopnb; opnb_journal_cv and OPNBClassifier beside.
4. The comparators at 150 x 20: fit + predict against scikit-learn's
   nearest equivalent.

Everything on 1 thread (OMP_NUM_THREADS=1 for R and pyopnb alike). Writes
results/small_data.md and results/small_data.png.

Run: python -m benchmarks.bench_small [--max-n 1000000] [--pmlb DIR]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.bench_objective import make  # noqa: E402
from benchmarks.common import R, table  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results"
NS = (100, 150, 300, 1000, 3000, 10_000, 30_000, 100_000, 300_000, 1_000_000)
SMALL_SETS = ("analcatdata_aids", "lupus", "analcatdata_fraud", "labor", "iris", "wine_recognition",
              "hayes_roth", "heart_statlog", "breast_cancer_wisconsin", "pima")


def _reps(seconds_each: float, budget: float = 1.0) -> int:
    return int(min(2000, max(1, budget / max(seconds_each, 1e-6))))


def _time(fn, budget: float = 1.0) -> float:
    """Best of a few batches' mean: batch sizes from a first call."""
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    reps = _reps(first, budget / 3)
    best = np.inf
    for _ in range(3 if first < budget else 1):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
    return min(best, first) if reps == 1 else best


def _r_time(r: R, expr: str, budget: float = 1.0) -> float:
    """The same in R: the mean of a batch of calls, best of 3 (system.time's
    resolution is a millisecond: a batch lasts a good part of a second)."""
    t1 = float(r.ro.r(f"system.time({expr})[['elapsed']]")[0])
    reps = _reps(max(t1, 1e-4), budget / 3)
    if t1 >= budget:
        return t1
    code = f"min(sapply(1:3, function(j) system.time(for (i in 1:{reps}) {expr})[['elapsed']])) / {reps}"
    return float(r.ro.r(code)[0])


def objective_ratios(r: R, ns) -> list:
    from pyopnb.evaluation import check_problem
    from pyopnb.formulation import RFormulation
    from pyopnb.objective import objective_and_gradient

    rows = []
    for n in ns:
        V, X, y, PI, h = make(n, K=2)
        budget = 1.0 if n <= 30_000 else 0.0
        if r.ok:
            for name, val in (("V", V), ("X", X), ("y0", y.astype(np.int64)), ("PI", PI), ("h", h)):
                r.assign(name, val)
        for case, nbin in (("exact", None), ("binned", 1000)):
            public = _time(lambda: objective_and_gradient(V, X, y, PI, h, nbin=nbin, compat="R", threads=1), budget)
            ev = RFormulation().evaluator(check_problem(X, y, PI, h), nbin, 1)
            rng = np.random.default_rng(1)
            steps = [V + 1e-3 * rng.standard_normal(V.shape) for _ in range(8)]
            k = [0]

            def in_fit():
                k[0] = (k[0] + 1) % len(steps)
                ev.value_and_grad(steps[k[0]])

            fit_eval = _time(in_fit, budget)
            if r.ok:
                expr = ("{OPNB:::f_NB_exact(V, X, y0, PI, h); OPNB:::df_NB_exact(V, X, y0, PI, h)}" if nbin is None
                        else "{OPNB:::f_NB_cpp(V, X, y0, PI, h, 1000); OPNB:::df_NB_cpp(V, X, y0, PI, h, 1000)}")
                t_r = _r_time(r, expr, budget)
                rows.append([n, case, t_r * 1e3, public * 1e3, fit_eval * 1e3, t_r / public, t_r / fit_eval])
            else:
                rows.append([n, case, np.nan, public * 1e3, fit_eval * 1e3, np.nan, np.nan])
            print(f"  n = {n} {case}: R {rows[-1][2]:.3f} ms, pyopnb {public * 1e3:.3f} / {fit_eval * 1e3:.3f} ms",
                  file=sys.stderr)
    return rows


def fits(r: R) -> list:
    from sklearn.datasets import load_iris

    from pyopnb import OPNB

    X, y = load_iris(return_X_y=True)
    rows = []
    if r.ok:
        r.assign("Xi", X)
        r.ro.globalenv["yi"] = r.ro.StrVector([str(v) for v in y])
    for ndim in (2, 4):
        for nbin in (1000, None):
            ours = _time(lambda: OPNB(X, y, ndim=ndim, nbin=nbin, threads=1))
            nb = "NULL" if nbin is None else nbin
            t_r = _r_time(r, f"OPNB(Xi, yi, ndim = {ndim}, nbin = {nb})") if r.ok else np.nan
            rows.append([f"OPNB, iris, ndim = {ndim}, " + ("exact" if nbin is None else f"nbin = {nbin}"),
                         t_r * 1e3, ours * 1e3, t_r / ours])
    return rows


def tuning(r: R, pmlb: Path) -> list:
    from pyopnb import OPNB_CV_lam, opnb_journal_cv
    from pyopnb.estimator import OPNBClassifier
    from pyopnb.study.data import load, preprocess

    rows = []
    for name in SMALL_SETS:
        if not (pmlb / name / f"{name}.tsv.gz").is_file():
            continue
        X, y = load(name, pmlb)
        X, y, _ = preprocess(X, y, 0)
        y = np.asarray([str(v) for v in y], dtype=object)
        folds = [np.flatnonzero(np.arange(y.size) % 5 == f) for f in range(5)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            OPNB_CV_lam(X, y, folds)
            cv = time.perf_counter() - t0
            t0 = time.perf_counter()
            opnb_journal_cv(X, y, folds)
            jcv = time.perf_counter() - t0
            t0 = time.perf_counter()
            OPNBClassifier(threads=1).fit(X, y)
            clf = time.perf_counter() - t0
        t_r = t_rfit = np.nan
        if r.ok:
            r.assign("Xs", X)
            r.ro.globalenv["ys"] = r.ro.StrVector(list(y))
            r.ro.r("fl <- list()")
            for f, idx in enumerate(folds):
                r.ro.globalenv["fi"] = r.ro.IntVector((idx + 1).tolist())
                r.ro.r(f"fl[[{f + 1}]] <- fi")
            t_r = float(r.ro.r("suppressWarnings(system.time(OPNB_CV_lam(Xs, ys, fl))[['elapsed']])")[0])
            t_rfit = float(r.ro.r("suppressWarnings(system.time(OPNB(Xs, ys))[['elapsed']])")[0])
        rows.append([name, f"{X.shape[0]} x {X.shape[1]}", t_r, cv, t_r / cv, t_rfit * 1e3, clf * 1e3,
                     t_rfit / clf, jcv])
        print(f"  {name}: R CV {t_r:.2f} s, ours {cv:.2f} s", file=sys.stderr)
    return rows


def comparators() -> list:
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis, QuadraticDiscriminantAnalysis
    from sklearn.naive_bayes import GaussianNB

    from pyopnb.comparators import CCICA, KDDA, LDA, OPGD, RDA, KernelNB, SelectiveNB

    rng = np.random.default_rng(0)
    n, p, K = 150, 20, 3
    y = rng.integers(0, K, n)
    X = rng.standard_normal((n, p)) + rng.standard_normal((K, p))[y]
    pairs = (("KernelNB", KernelNB(), "GaussianNB", GaussianNB()),
             ("CCICA", CCICA(), "GaussianNB", GaussianNB()),
             ("KDDA", KDDA(), "GaussianNB", GaussianNB()),
             ("SelectiveNB", SelectiveNB(), "GaussianNB", GaussianNB()),
             ("LDA", LDA(), "LinearDiscriminantAnalysis", LinearDiscriminantAnalysis()),
             ("RDA", RDA(), "QuadraticDiscriminantAnalysis", QuadraticDiscriminantAnalysis()),
             ("OPGD", OPGD(reg=1e-6), "QuadraticDiscriminantAnalysis", QuadraticDiscriminantAnalysis()))
    rows = []
    for ours, est, theirs, ref in pairs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t_o = _time(lambda: est.fit(X, y).predict(X))
            t_s = _time(lambda: ref.fit(X, y).predict(X))
        rows.append([ours, theirs, t_o * 1e3, t_s * 1e3, t_o / t_s])
    return rows


def _figure(rows: list, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for case, style, colour in (("exact", "o-", "tab:blue"), ("binned", "s-", "tab:red")):
        sel = [r for r in rows if r[1] == case]
        ax.plot([r[0] for r in sel], [r[5] for r in sel], style, color=colour, alpha=0.5, label=f"{case}, as called")
        ax.plot([r[0] for r in sel], [r[6] for r in sel], style.replace("-", "--"), color=colour,
                label=f"{case}, in a fit")
    ax.axhline(10, color="grey", lw=1, ls=":", label="10x")
    ax.set_xscale("log")
    ax.set_yscale("log")
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    ax.yaxis.set_major_locator(FixedLocator([2, 3, 4, 6, 8, 10, 15, 20]))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.set_xlabel("n (p = 20, K = 2, ndim = 20)")
    ax.set_ylabel("R time / pyopnb time")
    ax.set_title("One objective + gradient, 1 thread: R OPNB 1.0 against pyopnb")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _read_table(path: Path) -> list:
    """The objective table's rows back from small_data.md."""
    rows = []
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 7 and cells[1] in ("exact", "binned") and cells[0].isdigit():
            rows.append([int(cells[0]), cells[1], *(float(c.rstrip("x")) for c in cells[2:])])
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_small", description=__doc__.splitlines()[0])
    ap.add_argument("--max-n", type=float, default=1e6)
    ap.add_argument("--pmlb", default=str(Path(__file__).resolve().parents[2] / "shared" / "pmlb"))
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: objective,fits,tuning,comparators")
    ap.add_argument("--figure-only", action="store_true", help="redraw small_data.png from small_data.md")
    args = ap.parse_args(argv)
    if args.figure_only:
        _figure(_read_table(RESULTS / "small_data.md"), RESULTS / "small_data.png")
        return
    skip = set(filter(None, args.skip.split(",")))
    r = R(["OPNB"])
    if r.ok:
        r.ro.r("suppressMessages(library(OPNB))")
    out = [f"# Small data fast: pyopnb against R, 1 thread\n\nR: {'measured in the same run' if r.ok else r.why_not}\n"]
    if "objective" not in skip:
        rows = objective_ratios(r, [n for n in NS if n <= args.max_n])
        out.append("## One objective + gradient (p = 20, K = 2, ndim = 20)\n")
        out.append(table([[n, c, f"{a:.3f}", f"{b:.3f}", f"{d:.3f}", f"{e:.1f}x", f"{g:.1f}x"]
                          for n, c, a, b, d, e, g in rows],
                         ["n", "case", "R ms", "pyopnb as called ms", "pyopnb in a fit ms", "R / as called",
                          "R / in a fit"]))
        RESULTS.mkdir(exist_ok=True)
        if r.ok:
            _figure(rows, RESULTS / "small_data.png")
    if "fits" not in skip:
        out.append("\n## Fits\n")
        out.append(table([[a, f"{b:.1f}", f"{c:.1f}", f"{d:.1f}x"] for a, b, c, d in fits(r)],
                         ["fit", "R ms", "pyopnb ms", "R / pyopnb"]))
    if "tuning" not in skip:
        out.append("\n## Tuning on the study's small sets (after its preprocessing; 5 folds)\n")
        out.append(table([[a, b, f"{c:.2f}", f"{d:.2f}", f"{e:.1f}x", f"{f:.0f}", f"{g:.0f}", f"{h:.1f}x",
                           f"{i:.2f}"] for a, b, c, d, e, f, g, h, i in tuning(r, Path(args.pmlb))],
                         ["data", "n x p", "R OPNB_CV_lam s", "pyopnb s", "R / pyopnb", "R OPNB ms",
                          "OPNBClassifier ms", "R / pyopnb", "opnb_journal_cv s"]))
    if "comparators" not in skip:
        out.append("\n## Comparators: fit + predict on 150 x 20, K = 3\n")
        out.append(table([[a, b, f"{c:.2f}", f"{d:.2f}", f"{e:.1f}x"] for a, b, c, d, e in comparators()],
                         ["pyopnb", "scikit-learn", "pyopnb ms", "scikit-learn ms", "pyopnb / scikit-learn"]))
    text = "\n".join(out) + "\n"
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "small_data.md").write_text(text)


if __name__ == "__main__":
    main()
