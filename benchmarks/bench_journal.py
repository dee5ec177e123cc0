"""The journal formulation beside R's and a plain kernel Naive Bayes on real data.

5-fold stratified CV accuracy (seeded) on iris, wine and breast cancer
(scikit-learn's) and Sonar, Glass, Vehicle and Ionosphere (Debian's
r-cran-mlbench, read with rdata; a set whose file is absent is skipped and
said so). Each method's parameter is tuned by 3-fold CV inside each training
part: the journal's gamma, R's lam, the kernel NB's bandwidth multiplier.
Also: the ndim path of the journal formulation, fitting the largest ndim once
and predicting with its first m greedy columns, against refitting at each m.

Run: python -m benchmarks.bench_journal [--quick] [--jobs 2]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import table  # noqa: E402

MLBENCH = Path("/usr/lib/R/site-library/mlbench/data")
GAMMAS = (0.5, 1.0, 2.0)
LAMS = (1e-4, 1e-3, 1e-2)


def datasets():
    from sklearn.datasets import load_breast_cancer, load_iris, load_wine

    for name, loader in (("iris", load_iris), ("wine", load_wine), ("breast cancer", load_breast_cancer)):
        X, y = loader(return_X_y=True)
        yield name, X, y.astype(str)
    for name, target in (("Sonar", "Class"), ("Glass", "Type"), ("Vehicle", "Class"), ("Ionosphere", "Class")):
        path = MLBENCH / f"{name}.rda"
        if not path.exists():
            yield name, None, f"{path} absent (apt-get install r-cran-mlbench)"
            continue
        import rdata

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "Unknown encoding. Assumed ASCII."
            df = rdata.read_rda(path)[name]
        y = df[target].astype(str).to_numpy()
        X = df.drop(columns=[target]).apply(lambda s: s.astype(float)).to_numpy()
        keep = X.std(axis=0) > 0  # Ionosphere's V2 is constant
        yield name, X[:, keep], y


def _fit_predict(method, param, Xtr, ytr, Xte):
    from pyopnb import OPNB, opnb_journal, predict
    from pyopnb.comparators import KernelNB

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if method == "journal":
            m = opnb_journal(Xtr, ytr, gamma=param, threads=1)
        elif method == "R":
            m = OPNB(Xtr, ytr, lam=param, threads=1)
        else:
            return KernelNB(gamma=param).fit(Xtr, ytr).predict(Xte)
    return predict(m, Xte, log=True)["class"]


def _tuned(method, grid, Xtr, ytr, Xte, seed):
    from sklearn.model_selection import StratifiedKFold

    inner = list(StratifiedKFold(3, shuffle=True, random_state=seed).split(Xtr, ytr))
    scores = [np.mean([np.mean(_fit_predict(method, g, Xtr[a], ytr[a], Xtr[b]) == ytr[b]) for a, b in inner])
              for g in grid]
    best = grid[int(np.argmax(scores))]
    t0 = time.perf_counter()
    pred = _fit_predict(method, best, Xtr, ytr, Xte)
    return pred, best, time.perf_counter() - t0


def one_fold(method, grid, X, y, tr, te, seed):
    pred, best, secs = _tuned(method, grid, X[tr], y[tr], X[te], seed)
    return float(np.mean(pred == y[te])), best, secs


def ndim_path(sets, jobs: int) -> str:
    """opnb_journal_cv with path=True (one fit at the largest ndim per gamma
    and fold) against path=False (a fit at every ndim), same folds and grid:
    the pair each selects, both pairs' accuracy under the refitting CV, and
    the time each took."""
    from pyopnb import opnb_journal_cv

    rows = []
    for name, X, y in sets:
        ndims = [m for m in (1, 2, 3, 5, 8, 12, 20) if m <= min(X.shape[1], 20)]
        out = {}
        for path in (True, False):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                out[path] = opnb_journal_cv(X, y, 5, gamma=GAMMAS, ndim=ndims, path=path, cores=jobs)
            out[path]["seconds"] = time.perf_counter() - t0
        refit = {(g, int(m)): a for g, m, a in out[False]["cv_stats"]}
        pick_p = (out[True]["gamma"], out[True]["ndim"])
        pick_r = (out[False]["gamma"], out[False]["ndim"])
        rows.append([name, f"{pick_p[0]:g}, {pick_p[1]}", f"{pick_r[0]:g}, {pick_r[1]}",
                     f"{refit[pick_p]:.3f}", f"{refit[pick_r]:.3f}", f"{out[True]['seconds']:.1f}",
                     f"{out[False]['seconds']:.1f}"])
        print(f"{name} path done: " + " | ".join(rows[-1]), file=sys.stderr, flush=True)
    return ("ndim by the greedy path (fit the largest ndim once, predict with its first m columns) against "
            "refitting at each ndim; 5-fold CV, gamma in {0.5, 1, 2}, ndim in {1, 2, 3, 5, 8, 12, 20} up to "
            "min(p, 20); accuracy of each selected pair under the refitting CV\n"
            + table(rows, ["data", "path picks (gamma, ndim)", "refit picks", "path pick's refit-CV acc",
                           "refit pick's acc", "path s", "refit s"]))


def main(argv=None) -> None:
    from joblib import Parallel, delayed
    from sklearn.model_selection import StratifiedKFold

    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="iris, wine and Sonar only")
    ap.add_argument("--path-only", action="store_true", help="only the ndim-path comparison")
    args = ap.parse_args(argv)
    sets = [(n, X, y) for n, X, y in datasets() if X is not None
            and (not args.quick or n in ("iris", "wine", "Sonar"))]
    if args.path_only:
        print(ndim_path(sets, args.jobs))
        return
    methods = (("journal", GAMMAS), ("R", LAMS), ("kernel NB", GAMMAS))
    rows, notes = [], []
    for name, X, y in datasets():
        if X is None:
            notes.append(f"{name}: skipped, {y}")
            continue
        if args.quick and name not in ("iris", "wine", "Sonar"):
            continue
        folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
        jobs = [(m, g, tr, te) for m, g in methods for tr, te in folds]
        out = Parallel(n_jobs=args.jobs)(delayed(one_fold)(m, g, X, y, tr, te, 1) for m, g, tr, te in jobs)
        row = [name, f"{X.shape[0]} x {X.shape[1]}, K = {np.unique(y).size}"]
        for i, (m, _) in enumerate(methods):
            res = out[i * 5:(i + 1) * 5]
            acc = np.mean([r[0] for r in res])
            picked = sorted({r[1] for r in res})
            row += [f"{acc:.3f}", ", ".join(f"{p:g}" for p in picked), f"{np.mean([r[2] for r in res]):.2f}"]
        rows.append(row)
        print(f"{name} done: " + " | ".join(row), file=sys.stderr, flush=True)
    print("5-fold CV accuracy (parameter tuned by inner 3-fold CV; fit s: the final fit's mean time, 1 thread)")
    print(table(rows, ["data", "size", "journal acc", "gamma chosen", "journal fit s", "R's acc", "lam chosen",
                       "R's fit s", "kernel NB acc", "NB gamma chosen", "NB fit s"]), flush=True)
    for n in notes:
        print(f"- {n}")
    print()
    print(ndim_path(sets, args.jobs))


if __name__ == "__main__":
    main()
