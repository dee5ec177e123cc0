"""Does L-BFGS-B's iteration limit (R's optim maxit = 100) cut fits short?

For five common data sets, fits each formulation at maxit 100, 300 and 1000
at their default ndim (min(p, 20)) in 5-fold cross-validation (stratified,
seeded) and reports how many fits
stopped at the limit (convergence code 1), the iterations used, the
cross-validated accuracy and the time. R's formulation with binned sums ends
at a failed line search (code 52) as a matter of course and is not shown.

Run: python -m benchmarks.bench_maxit
"""
from __future__ import annotations

import time
import warnings

import numpy as np


def _datasets():
    from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine

    from pyopnb.datasets import load_pima

    d = load_pima()
    yield "pima", np.vstack([d.X_train, d.X_test]), np.concatenate([d.y_train, d.y_test])
    for name, load in (("iris", load_iris), ("wine", load_wine), ("breast cancer", load_breast_cancer)):
        X, y = load(return_X_y=True)
        yield name, X, y
    X, y = load_digits(return_X_y=True)
    keep = np.isin(y, [1, 7, 9])  # three classes of digits
    yield "digits 1/7/9", X[keep], y[keep]


def main() -> None:
    from sklearn.model_selection import StratifiedKFold

    from pyopnb import OPNB, opnb_journal, predict

    forms = {"R, exact sums": lambda X, y, m, cb: OPNB(X, y, nbin=None, maxit=m, callback=cb),
             "journal, binned": lambda X, y, m, cb: opnb_journal(X, y, maxit=m, callback=cb),
             "journal, exact sums": lambda X, y, m, cb: opnb_journal(X, y, nbin=None, maxit=m, callback=cb)}
    print("| data | formulation | maxit | fits at the limit | iterations (mean, max) | CV accuracy | time |")
    print("|---|---|---|---|---|---|---|")
    for name, X, y in _datasets():
        folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
        for form, fit in forms.items():
            for maxit in (100, 300, 1000):
                at_limit, iters, hits, t0 = 0, [], 0, time.perf_counter()
                for tr, te in folds:
                    count = []
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        m = fit(X[tr], y[tr], maxit, lambda it, f, g: count.append(it))
                    at_limit += m.convergence == 1
                    iters.append(len(count))
                    hits += int(np.sum(predict(m, X[te], log=True)["class"] == y[te]))
                elapsed = time.perf_counter() - t0
                print(f"| {name} | {form} | {maxit} | {at_limit} of 5 | {np.mean(iters):.0f}, {max(iters)} | "
                      f"{hits / len(y):.4f} | {elapsed:.1f} s |", flush=True)


if __name__ == "__main__":
    main()
