"""One (data set, split, method) of the papers' protocol: tuning by CV on the
training part with folds shared by every method, then the test error."""
from __future__ import annotations

import json
import time
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .methods import DEFAULT_METHODS, METHODS

__all__ = ["DEFAULT_METHODS", "PROTOCOL", "protocol", "grid", "splits", "evaluate", "path_search", "make_estimator",
           "tuning_plan", "scaled", "Stops"]

TEST_SIZE = 0.25
# each profile's version, raised whenever a method, grid or step changes what
# one of its stored results means, so that a store never mixes results of two
# versions: the quick profile's 4 refits OPNB-journal's and OPGD's ndim where
# 3 took one fit's path; the full profile's steps have not changed since 3
PROTOCOL = {"quick": 4, "full": 3}


def protocol(quick: bool) -> int:
    """The version of the quick or the full profile (:data:`PROTOCOL`)."""
    return PROTOCOL["quick" if quick else "full"]


def grid(method: str, p: int, K: int, quick: bool) -> Dict[str, List[Any]]:
    """The method's parameter grid for p covariates and K classes: the
    papers' or the quick profile's (:mod:`pyopnb.study.methods`)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
    m = METHODS[method]
    return m.quick(p, K) if quick else m.grid(p, K)


def splits(y: np.ndarray, n_splits: int, n_folds: int, seed: int) -> List[Tuple[np.ndarray, np.ndarray, list]]:
    """(train, test, inner folds) for each split: stratified 75/25 splits, and
    stratified k-fold CV folds of each training part (the same for every
    method), all seeded."""
    from sklearn.model_selection import StratifiedKFold, StratifiedShuffleSplit

    out = []
    sss = StratifiedShuffleSplit(n_splits=n_splits, test_size=TEST_SIZE, random_state=seed)
    for s, (train, test) in enumerate(sss.split(np.zeros((y.size, 1)), y)):
        # the folds index the training rows in the order they are returned in
        train = np.sort(train)
        k = int(min(n_folds, np.unique(y[train], return_counts=True)[1].min()))
        inner = list(StratifiedKFold(max(k, 2), shuffle=True, random_state=seed + 7919 * (s + 1))
                     .split(np.zeros((train.size, 1)), y[train]))
        out.append((train, np.sort(test), inner))
    return out


def scaled(X: np.ndarray, train: np.ndarray) -> np.ndarray:
    """Each covariate divided by its sd on the training rows (the papers' scaling)."""
    sd = X[train].std(axis=0, ddof=1)
    return X / np.where(sd > 0, sd, 1.0)


class Stops:
    """How a result's fits stopped: the count of each optimiser code (R's
    optim codes: 0 converged, 1 the iteration limit, 52 the line search
    failed) over every fit made for it, the tuning's and the final one, and
    the final fit's code. A method whose estimator has no ``convergence_``
    records nothing."""

    def __init__(self) -> None:
        self.counts: Dict[int, int] = {}
        self.final: Optional[int] = None

    def add(self, est: Any) -> None:
        """Count ``est``'s last fit (a fitted estimator)."""
        code = getattr(est, "convergence_", None)
        if code is not None:
            self.counts[int(code)] = self.counts.get(int(code), 0) + 1

    def scorer(self) -> Any:
        """GridSearchCV's ``scoring``: accuracy, as its default, counting each fit scored."""
        def accuracy(est: Any, X: np.ndarray, y: np.ndarray) -> float:
            self.add(est)
            return float(np.mean(est.predict(X) == y))
        return accuracy

    def json(self) -> str:
        """The record the store keeps: {"counts": {code: fits}, "final": code or null}."""
        return json.dumps({"counts": {str(k): v for k, v in sorted(self.counts.items())}, "final": self.final})


def make_estimator(method: str, n_features: int, binary: Optional[Sequence[int]] = None) -> Any:
    """The method's unfitted estimator as the protocol runs it: one thread
    (the study's jobs are the parallelism), and the one-hot columns
    ``binary`` for the methods that take them."""
    spec = METHODS[method]
    est = spec.make()
    if "threads" in est.get_params():
        est.set_params(threads=1)
    if spec.takes_binary:
        mask = np.zeros(n_features, dtype=bool)
        mask[list(binary or [])] = True
        est.set_params(binary=mask)
    return est


def tuning_plan(method: str, params: Dict[str, List[Any]], quick: bool,
                paths: bool = True) -> Tuple[List[Dict[str, Any]], Optional[str]]:
    """(the settings fitted on each fold, the parameter served by a path or
    None): with a path, one setting per value of the other parameters, at
    the path's largest value. A profile takes a method's path where the
    method says so (``path_in_quick``, ``path_in_full``); ``paths=False``
    refits at every value instead, whatever the method says (the
    measurement of what a path changes)."""
    from sklearn.model_selection import ParameterGrid

    spec = METHODS[method]
    takes_path = spec.path_in_quick if quick else spec.path_in_full
    if paths and spec.path and takes_path and params.get(spec.path):
        top = max(params[spec.path])
        others = ParameterGrid({k: v for k, v in params.items() if k != spec.path})
        return [{**o, spec.path: top} for o in others], spec.path
    return list(ParameterGrid(params)) if any(len(v) > 1 for v in params.values()) else [], None


def evaluate(method: str, X: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray, inner: Sequence,
             quick: bool, binary: Optional[Sequence[int]] = None, paths: bool = True) -> Dict[str, Any]:
    """Tune ``method`` by CV over its grid on the training rows (folds
    ``inner``), refit on them with the best parameters, and return the test
    misclassification rate, the parameters, and the seconds it all took.
    ``binary``: the one-hot columns (for the methods that take them);
    ``paths``: see :func:`tuning_plan`. A method that cannot be fitted on
    these data gives error NaN and the reason."""
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV

    t0 = time.perf_counter()
    stops = Stops()
    Xs = scaled(X, train)
    Xtr, ytr, Xte, yte = Xs[train], y[train], Xs[test], y[test]
    params = grid(method, X.shape[1], np.unique(ytr).size, quick)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = make_estimator(method, X.shape[1], binary)
            _, path = tuning_plan(method, params, quick, paths)
            if path:
                best = path_search(est, params, path, Xtr, ytr, inner, stops)
            elif any(len(v) > 1 for v in params.values()):
                gs = GridSearchCV(est, params, cv=list(inner), error_score=np.nan, refit=False,
                                  scoring=stops.scorer()).fit(Xtr, ytr)
                if not np.isfinite(gs.best_score_):
                    raise ValueError("every parameter setting failed in cross-validation")
                best = gs.best_params_
            else:
                best = {k: v[0] for k, v in params.items()}
            final = clone(est).set_params(**best).fit(Xtr, ytr)
            stops.add(final)
            stops.final = getattr(final, "convergence_", None)
            pred = final.predict(Xte)
        error, note = float(np.mean(pred != yte)), ""
    except (ValueError, np.linalg.LinAlgError, FloatingPointError) as exc:
        error, best, note = float("nan"), {}, f"{type(exc).__name__}: {exc}"[:300]
    return {"error": error, "params": json.dumps(best, default=float), "seconds": time.perf_counter() - t0,
            "note": note, "stops": stops.json()}


def path_search(est: Any, params: Dict[str, List[Any]], path: str, X: np.ndarray, y: np.ndarray,
                inner: Sequence, stops: Optional[Stops] = None) -> Dict[str, Any]:
    """The best parameters by CV accuracy (mean over the folds, as
    GridSearchCV; the first best in grid order), where every value of
    ``path`` comes from one fit at its largest value through the
    estimator's ``staged_predict``: one fit per setting of the other
    parameters and fold. A fit that fails scores NaN for its setting.
    ``stops`` counts the fits' optimiser codes."""
    from sklearn.base import clone
    from sklearn.model_selection import ParameterGrid

    values = sorted(params[path])
    others = list(ParameterGrid({k: v for k, v in params.items() if k != path}))
    scores = np.zeros((len(others), len(values)))
    for i, setting in enumerate(others):
        for fit_rows, val_rows in inner:
            try:
                e = clone(est).set_params(**setting, **{path: values[-1]}).fit(X[fit_rows], y[fit_rows])
                if stops is not None:
                    stops.add(e)
                staged = list(e.staged_predict(X[val_rows]))
            except (ValueError, np.linalg.LinAlgError, FloatingPointError):
                scores[i] = np.nan
                break
            for j, m in enumerate(values):
                # an estimator with fewer columns than asked (LDA's rank) predicts as with all it has
                scores[i, j] += np.mean(staged[min(m, len(staged)) - 1] == y[val_rows]) / len(inner)
    if not np.isfinite(scores).any():
        raise ValueError("every parameter setting failed in cross-validation")
    i, j = np.unravel_index(int(np.nanargmax(scores)), scores.shape)
    return {**others[i], path: values[j]}
