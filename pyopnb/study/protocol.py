"""One (data set, split, method) of the papers' protocol: tuning by CV on the
training part with folds shared by every method, then the test error."""
from __future__ import annotations

import json
import time
import warnings
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

__all__ = ["DEFAULT_METHODS", "grid", "splits", "evaluate"]

# the papers' comparison (the journal paper's section 4.2), OPNB in both formulations
DEFAULT_METHODS = ("OPNB", "OPNB-journal", "NB", "CCICA", "KDDA", "LDA", "RDA", "OPGD", "SVM", "SelectiveNB")
TEST_SIZE = 0.25

# --quick: a few values of each grid, so that a run takes minutes, not days
_QUICK = {
    "OPNB": lambda p: {"lam": [1e-3, 1e-2]},
    "OPNB-journal": lambda p: {"gamma": [0.5, 1.0, 2.0], "ndim": list(range(1, min(p, 3) + 1))},
    "NB": lambda p: {"gamma": [0.5, 1.0, 2.0], "alpha": [0.3]},
    "CCICA": lambda p: {"n_components": list(range(1, min(p, 2) + 1)), "gamma": [1.0]},
    "KDDA": lambda p: {"gamma": [0.5, 1.0, 2.0], "alpha": [0.3]},
    "RDA": lambda p: {"lam": [0.2, 0.6, 1.0]},
    "OPGD": lambda p: {"ndim": list(range(1, min(p, 3) + 1))},
    "SVM": lambda p: {"gamma": [2.0 ** -7, 2.0 ** -3, 2.0], "C": [0.5, 8.0, 128.0]},
}


def grid(method: str, p: int, quick: bool) -> Dict[str, List[Any]]:
    """The method's parameter grid for p covariates: the papers' (the
    registry's), or the quick profile's."""
    from ..comparators import METHODS

    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
    if quick and method in _QUICK:
        return _QUICK[method](p)
    return METHODS[method].grid(p)


def splits(y: np.ndarray, n_splits: int, n_folds: int, seed: int) -> List[Tuple[np.ndarray, np.ndarray, list]]:
    """(train, test, inner folds) for each split: stratified 75/25 splits, and
    stratified k-fold CV folds of each training part (the same for every
    method), all seeded."""
    from sklearn.model_selection import StratifiedKFold, StratifiedShuffleSplit

    out = []
    sss = StratifiedShuffleSplit(n_splits=n_splits, test_size=TEST_SIZE, random_state=seed)
    for s, (train, test) in enumerate(sss.split(np.zeros((y.size, 1)), y)):
        k = int(min(n_folds, np.unique(y[train], return_counts=True)[1].min()))
        inner = list(StratifiedKFold(max(k, 2), shuffle=True, random_state=seed + 7919 * (s + 1))
                     .split(np.zeros((train.size, 1)), y[train]))
        out.append((np.sort(train), np.sort(test), inner))
    return out


def _scaled(X: np.ndarray, train: np.ndarray) -> np.ndarray:
    """Each covariate divided by its sd on the training rows (the papers' scaling)."""
    sd = X[train].std(axis=0, ddof=1)
    return X / np.where(sd > 0, sd, 1.0)


def evaluate(method: str, X: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray, inner: Sequence,
             quick: bool) -> Dict[str, Any]:
    """Tune ``method`` by CV over its grid on the training rows (folds
    ``inner``), refit on them with the best parameters, and return the test
    misclassification rate, the parameters, and the seconds it all took.
    A method that cannot be fitted on these data (a singular covariance, say)
    gives error NaN and the reason."""
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV

    from ..comparators import METHODS

    t0 = time.perf_counter()
    Xs = _scaled(X, train)
    Xtr, ytr, Xte, yte = Xs[train], y[train], Xs[test], y[test]
    params = grid(method, X.shape[1], quick)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if method == "OPNB-journal":
                # one fit per gamma and fold (the greedy ndim path), on the same folds
                from ..cv import opnb_journal_cv
                from ..model import predict

                cv = opnb_journal_cv(Xtr, ytr, [te for _, te in inner], gamma=params["gamma"],
                                     ndim=params["ndim"])
                pred = predict(cv["model"], Xte, log=True)["class"]
                best = {"gamma": cv["gamma"], "ndim": cv["ndim"]}
            else:
                est = clone(METHODS[method].make())
                if "threads" in est.get_params():
                    est.set_params(threads=1)  # the study's jobs are the parallelism
                if any(len(v) > 1 for v in params.values()):
                    gs = GridSearchCV(est, params, cv=list(inner), error_score=np.nan).fit(Xtr, ytr)
                    if not np.isfinite(gs.best_score_):
                        raise ValueError("every parameter setting failed in cross-validation")
                    est, best = gs.best_estimator_, gs.best_params_
                else:
                    best = {k: v[0] for k, v in params.items()}
                    est.set_params(**best).fit(Xtr, ytr)
                pred = est.predict(Xte)
        error, note = float(np.mean(pred != yte)), ""
    except (ValueError, np.linalg.LinAlgError, FloatingPointError) as exc:
        error, best, note = float("nan"), {}, f"{type(exc).__name__}: {exc}"[:300]
    return {"error": error, "params": json.dumps(best, default=float), "seconds": time.perf_counter() - t0,
            "note": note}
