"""Every comparator beside OPNB on real data: accuracy and fit times.

5-fold stratified CV accuracy (seeded) with each method at its default
parameters, after scaling by the training sd (the papers' protocol), on the
data sets of ``bench_journal`` (scikit-learn's iris, wine, breast cancer;
r-cran-mlbench's Sonar, Glass, Vehicle, Ionosphere where installed), and the
fit + predict time of each method on a 3000 x 50 problem with 10 classes
(the comparators' speed goal: under 10 s each on the 2-core machine).

Run: python -m benchmarks.bench_comparators [--jobs 2] [--skip-speed]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.bench_journal import datasets  # noqa: E402
from benchmarks.common import table  # noqa: E402

ORDER = ("OPNB", "OPNB-journal", "NB", "CCICA", "KDDA", "LDA", "RDA", "QDA", "OPGD", "SVM", "SelectiveNB",
         "GaussianNB")


def _one(name, X, y, tr, te):
    from sklearn.base import clone
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from pyopnb.study.methods import METHODS

    est = make_pipeline(StandardScaler(), clone(METHODS[name].make()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        try:
            est.fit(X[tr], y[tr])
        except ValueError as exc:  # e.g. a singular class covariance for QDA
            return float("nan"), time.perf_counter() - t0, str(exc).split(":")[0]
        secs = time.perf_counter() - t0
        return float(np.mean(est.predict(X[te]) == y[te])), secs, ""


def speed(names) -> str:
    from sklearn.base import clone

    from pyopnb.study.methods import METHODS

    rng = np.random.default_rng(0)
    n, p, K = 3000, 50, 10
    y = rng.integers(0, K, n)
    X = rng.normal(size=(n, p)) + rng.normal(size=(K, p))[y]
    X[:, -5:] = (X[:, -5:] > 0).astype(float)
    rows = []
    for name in names:
        est = clone(METHODS[name].make())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            est.fit(X, y)
            est.predict_proba(X) if hasattr(est, "predict_proba") and name != "SVM" else est.predict(X)
        rows.append([name, f"{time.perf_counter() - t0:.2f}"])
    return "fit + predict on 3000 x 50, K = 10 (defaults)\n" + table(rows, ["method", "seconds"])


def main(argv=None) -> None:
    from joblib import Parallel, delayed
    from sklearn.model_selection import StratifiedKFold

    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--skip-speed", action="store_true")
    args = ap.parse_args(argv)
    rows, notes = [], []
    for dname, X, y in datasets():
        if X is None:
            notes.append(f"{dname}: skipped, {y}")
            continue
        folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
        out = Parallel(n_jobs=args.jobs)(delayed(_one)(m, X, y, tr, te) for m in ORDER for tr, te in folds)
        row = [dname]
        for i, m in enumerate(ORDER):
            res = out[i * 5:(i + 1) * 5]
            accs = [r[0] for r in res]
            fails = sorted({r[2] for r in res if r[2]})
            cell = "fails" if all(np.isnan(accs)) else f"{np.nanmean(accs):.3f} ({np.mean([r[1] for r in res]):.2f}s)"
            if fails:
                notes.append(f"{dname}, {m}: {len([a for a in accs if np.isnan(a)])} of 5 folds failed: {fails[0]}")
            row.append(cell)
        rows.append(row)
        print(f"{dname} done: " + " | ".join(row), file=sys.stderr, flush=True)
    print("5-fold CV accuracy at default parameters (mean fit seconds), data scaled by the training sd")
    print(table(rows, ["data"] + list(ORDER)))
    for n in notes:
        print(f"- {n}")
    if not args.skip_speed:
        print()
        print(speed(ORDER))


if __name__ == "__main__":
    main()
