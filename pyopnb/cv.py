"""R's ``OPNB_CV_lam``: choose the penalty by cross-validated accuracy."""
from __future__ import annotations

import math
import sys
import warnings
from collections import Counter
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _threads, exceptions
from ._validation import (as_positive_scalar, check_aligned, check_lam, check_ndim, check_priors, check_X,
                          label_text)
from .fitting import OPNB, opnb_journal
from .labels import factor_levels, factor_values
from .model import OPNBModel, predict
from .weights import check_weights

__all__ = ["OPNB_CV_lam", "opnb_journal_cv"]


def _stratified_folds(k: Any, labels: np.ndarray, random_state: Any) -> List[np.ndarray]:
    """k stratified folds (test rows of each), shuffled with a fixed seed."""
    from sklearn.model_selection import StratifiedKFold

    if not isinstance(k, (int, np.integer)) or isinstance(k, (bool, np.bool_)) or k < 2:
        raise ValueError(f"folds must be a list of index arrays or an integer >= 2, got {label_text(k)}")
    k = int(k)
    smallest = int(np.unique(labels, return_counts=True)[1].min())
    if smallest < k:
        raise ValueError(f"folds = {k} stratified folds need at least {k} rows of every class; "
                         f"the smallest class has {smallest}")
    skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=random_state)
    return [test for _, test in skf.split(np.zeros((labels.size, 1)), labels)]


def _check_folds(folds: Any, n: int, leave_rows_out: bool = False) -> List[np.ndarray]:
    if isinstance(folds, np.ndarray) and folds.ndim == 1 and folds.dtype.kind in "iu":
        raise ValueError("folds must be a list of index arrays (0-based), one per fold; "
                         "to pass fold labels per row use [np.flatnonzero(labels == f) for f in ...]")
    try:
        out = [np.asarray(f) for f in folds]
    except TypeError:
        raise ValueError("folds must be a list of index arrays (0-based)") from None
    if len(out) < 2:
        raise ValueError(f"folds must hold at least two folds, got {len(out)}")
    seen = np.zeros(n, dtype=bool)
    for j, f in enumerate(out):
        if f.ndim != 1 or f.size == 0 or f.dtype.kind not in "iu":
            raise ValueError(f"fold {j} must be a non-empty vector of integer row indices (0-based)")
        if f.min() < 0 or f.max() >= n:
            raise ValueError(f"fold {j} has indices outside 0..{n - 1}: folds are 0-based here, 1-based in R "
                             f"(from R's folds, pass [f - 1 for f in folds])")
        if seen[f].any() or np.unique(f).size != f.size:
            raise ValueError(f"fold {j} repeats rows already in a fold")
        seen[f] = True
    if not seen[0] and not leave_rows_out:
        # R's folds index rows from 1: passed as they are, they miss row 0 (and fail above only if they hold row n)
        raise ValueError(f"no fold holds row 0: these look like R's 1-based folds, which pyopnb would read one row "
                         f"off (folds are 0-based here); pass [f - 1 for f in folds]. If row 0 is left out on "
                         f"purpose, pass leave_rows_out=True: rows in no fold are neither fitted nor tested, nor "
                         f"used by the refit ({int((~seen).sum())} of {n} here)")
    return out


def _cv_data(X: Any, y: Any, folds: Any, random_state: Any, leave_rows_out: bool = False):
    """(X checked, labels, folds as 0-based index arrays): the labels' row
    subsets keep y's level order (a Categorical's own order too); ``folds``
    an integer k gives k stratified folds, seeded."""
    check_aligned(X, y)
    Xa = check_X(X, "X")
    levels, codes, labels = factor_values(y)
    if codes.size != Xa.shape[0]:
        raise ValueError(f"y has {codes.size} labels but X has {Xa.shape[0]} rows")
    if np.isscalar(folds):
        folds = _stratified_folds(folds, codes, random_state)
    return Xa, labels, _check_folds(folds, Xa.shape[0], leave_rows_out)


def _priors_by_label(priors: Any, labels: Any) -> Optional[Dict[Any, float]]:
    """The priors as a mapping from label (checked against y's levels), for
    every fold's fit to take by label: an array's order is that of y's
    levels, which a fold's rows need not show."""
    levels = factor_levels(labels)[0]
    PI = check_priors(priors, levels)
    return None if PI is None else dict(zip(levels.tolist(), PI.tolist()))


def _n_jobs(n_jobs: Any, cores: Any) -> int:
    """Processes for a cross-validation: n_jobs (scikit-learn's name), or R's
    cores (deprecated); 1 by default, -1 for every core."""
    from ._threads import available_cores

    if cores is not None:
        warnings.warn("cores is deprecated: use n_jobs (processes, as scikit-learn names them)", FutureWarning,
                      stacklevel=3)
        if n_jobs is None:
            n_jobs = cores
    if n_jobs is None:
        return 1
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or (n_jobs < 1 and n_jobs != -1):
        raise ValueError(f"n_jobs must be a positive integer or -1 (every core), got {label_text(n_jobs)}")
    return available_cores() if n_jobs == -1 else int(n_jobs)


class _Progress:
    """A one-line progress bar on stderr: lam values and folds done."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.done, self.enabled = total, 0, enabled

    def step(self, what: str) -> None:
        self.done += 1
        if self.enabled:
            width = 30
            filled = int(width * self.done / self.total)
            sys.stderr.write(f"\rOPNB_CV_lam [{'#' * filled}{'.' * (width - filled)}] "
                             f"{self.done}/{self.total} {what:<40}")
            if self.done == self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()


def _warn_once(caller: str, notes: List[str], fits: int) -> None:
    """One warning for the inner fits of a cross-validation, counting each kind."""
    if notes:
        kinds = "; ".join(f"{k} of them: {note}" for note, k in Counter(notes).most_common())
        warnings.warn(f"{caller}: {len(notes)} of {fits} fits did not end as they should. {kinds}",
                      exceptions.ConvergenceWarning, stacklevel=3)


def _weights_of(w: Optional[np.ndarray], rows: np.ndarray) -> Dict[str, Any]:
    """The fit's weights= for these rows (nothing without weights)."""
    return {} if w is None else {"weights": w[rows]}


def _hits(pred: np.ndarray, labels: np.ndarray, w: Optional[np.ndarray], test: np.ndarray) -> float:
    """The test rows predicted right: counted, or their weight (correctly rounded)."""
    right = np.asarray(pred) == np.asarray(labels)
    return float(np.sum(right)) if w is None else math.fsum(w[test][right])


def _cv_weights(weights: Any, n: int) -> Optional[np.ndarray]:
    """The rows' weights for cross-validation, every row kept (a fold's fit
    drops its rows of weight 0, and they count 0 in its accuracy); None
    without weights or where they are all equal."""
    w, _ = check_weights(weights, n, "weights")
    if w is None:
        return None
    return np.asarray(weights, dtype=np.float64)


def _cv_accuracy(X, labels, folds, lam, fit_kwargs, progress: Optional[_Progress] = None,
                 label: str = "", w: Optional[np.ndarray] = None) -> Tuple[float, List[str]]:
    correct = 0.0
    total = 0.0
    notes: List[str] = []
    for j, test in enumerate(folds):
        train = np.concatenate([f for i, f in enumerate(folds) if i != j])
        model, said = exceptions.fit_quietly(OPNB, X[train], labels[train], lam=lam, **fit_kwargs,
                                             **_weights_of(w, train))
        notes += said
        pred = predict(model, X[test])["class"]
        correct += _hits(pred, labels[test], w, test)
        total += test.size if w is None else math.fsum(w[test])
        if progress is not None:
            progress.step(f"{label} fold {j + 1}/{len(folds)}")
    return correct / total, notes


def _fold_threads(threads: Optional[int], jobs_n: int, fit_kwargs: Dict[str, Any]) -> Optional[int]:
    """The folds' fits' thread count into fit_kwargs: ``threads`` (checked
    and capped once, here), else one per job when jobs run in processes
    (each fit already spreads its columns over threads), else pyopnb's
    default. Returns ``threads`` resolved, or None, for the refit."""
    thr = None if threads is None else _threads.resolve(threads)
    fit_kwargs["threads"] = thr if thr is not None or jobs_n == 1 else 1
    return thr


def OPNB_CV_lam(
    X: Any,
    y: Any,
    folds: Union[int, Sequence[Sequence[int]]],
    nlam: int = 10,
    lam0: float = 1e-4,
    factor_: float = 2.0,
    nbin: Optional[int] = 1000,
    ndim: Optional[int] = None,
    scale: bool = True,
    cores: Optional[int] = None,
    V0: Any = None,
    C: Optional[Callable] = None,
    *,
    correct: bool = False,
    maxit: int = 100,
    n_jobs: Optional[int] = None,
    threads: Optional[int] = None,
    progress: bool = False,
    random_state: Any = 0,
    leave_rows_out: bool = False,
    r_defects: bool = False,
    priors: Any = None,
    weights: Any = None,
    **kwargs: Any,
) -> Dict[str, Any]:
    """Cross-validate the penalty over ``lam0 * factor^(i-1)``, i = 1..nlam, as R's ``OPNB_CV_lam``.

    For each lam, each fold is predicted by a model fitted on the other
    folds; the accuracy is the share of correct predictions over all folds.
    The best lam (the first on ties) is refitted on the rows of all folds.
    Every fit starts where R's does: from R's start (``eigen(cov(Xs))``, to
    the bit) by default; ``V0="R"`` computes it in R for every fold, and a
    function ``V0`` is called for every fold (a matrix would be one start
    for different data).

    Parameters
    ----------
    X : array-like or DataFrame of shape (n, d)
        The data, as in :func:`OPNB`.
    y : array-like of shape (n,)
        The labels, as in :func:`OPNB`.
    folds : int or sequence of index arrays
        An integer k for k stratified folds, shuffled with ``random_state``
        (the same call gives the same folds), or a list of 0-based row-index
        arrays (R's are 1-based).
    nlam : int, default 10
        How many values of lam.
    lam0 : float, default 1e-4
        The first value of lam.
    factor_ : float, default 2.0
        The ratio between successive values; ``factor=`` works too, as in R.
    nbin : int or None, default 1000
        Bins per projected column, or None for exact sums.
    ndim : int, optional
        Columns of V (default ``min(d, 20)``).
    scale : bool, default True
        Scale the columns to unit sd.
    cores : int, optional
        R's name for ``n_jobs``; deprecated.
    V0 : None, "R", callable or ndarray, optional
        The start of every fit, as in :func:`OPNB`.
    C : callable, optional
        The penalty matrix's function, as in :func:`OPNB`.
    correct : bool, default False
        Deprecated, as in :func:`OPNB`.
    maxit : int, default 100
        Each fit's L-BFGS-B iteration limit. The inner fits' convergence
        warnings come as one, counted.
    n_jobs : int, optional
        Processes: more than 1 runs the lam values in parallel through
        joblib (any joblib backend, Dask included).
    threads : int, optional
        Each fit's OpenMP thread count, the refit's included (default:
        pyopnb's, as in :func:`OPNB`); with ``n_jobs > 1`` each job's fits
        take one thread unless this is given.
    progress : bool, default False
        Draw a progress bar over lam values and folds on stderr.
    random_state : int, RandomState or None, default 0
        Seeds the folds when ``folds`` is an integer.
    leave_rows_out : bool, default False
        Folds that leave rows out are taken only with this: rows in no fold
        are neither fitted nor tested, nor used by the refit. Without it,
        folds that miss row 0 are refused as R's 1-based folds passed
        without ``- 1`` (they read every row one off).
    r_defects : bool, default False
        As in :func:`OPNB`: a fold's fit where R's gradient sums are not
        finite keeps its start, as R's does (True), or goes on and is
        counted in one warning (False).
    priors : mapping or array-like of shape (n_classes,), optional
        The class priors of every fit, the refit's included, as in
        :func:`OPNB` (an array in the order of y's levels); default each
        fit's class proportions, as R's.
    weights : array-like of shape (n_samples,), optional
        The rows' weights, ours (R's has none), as in :func:`OPNB`: each
        fold's fit takes its rows' weights, and the accuracy is the weight
        share of the held-out rows predicted right (rows of weight 0 count
        for nothing).
    **kwargs
        ``factor``, R's name for ``factor_``; anything else is an error.

    Returns
    -------
    dict
        ``"model"``: the :class:`OPNBModel` refitted at the best lam;
        ``"cv_stats"``: an (nlam, 2) array of [lam, accuracy].

    See Also
    --------
    OPNB : One fit.

    Examples
    --------
    >>> from pyopnb import OPNB_CV_lam
    >>> from pyopnb.datasets import load_pima
    >>> d = load_pima()
    >>> cv = OPNB_CV_lam(d.X_train, d.y_train, 3, nlam=2, ndim=2)
    >>> cv["cv_stats"].shape
    (2, 2)
    """
    if "factor" in kwargs:
        factor_ = kwargs.pop("factor")
    if kwargs:
        raise TypeError(f"unexpected arguments: {sorted(kwargs)}")
    Xa, labels, fl = _cv_data(X, y, folds, random_state, leave_rows_out)
    if isinstance(nlam, bool) or not float(nlam).is_integer() or int(nlam) < 1:
        raise ValueError(f"nlam must be a positive integer, got {label_text(nlam)}")
    lam0 = check_lam(lam0)
    fac = as_positive_scalar(factor_, "factor")
    lams = lam0 * fac ** np.arange(int(nlam))
    jobs_n = _n_jobs(n_jobs, cores)
    w = _cv_weights(weights, Xa.shape[0])
    fit_kwargs = dict(ndim=ndim, V0=V0, scale=scale, nbin=nbin, C=C, correct=correct, maxit=maxit,
                      r_defects=r_defects, priors=_priors_by_label(priors, labels))
    thr = _fold_threads(threads, jobs_n, fit_kwargs)
    if jobs_n > 1:
        from joblib import Parallel, delayed

        bar = _Progress(len(lams), progress)
        acc = [None] * len(lams)
        jobs = Parallel(n_jobs=jobs_n, return_as="generator_unordered")(
            delayed(lambda i, lam: (i, _cv_accuracy(Xa, labels, fl, lam, fit_kwargs, w=w)))(i, lam)
            for i, lam in enumerate(lams))
        notes: List[str] = []
        for i, (a, said) in jobs:
            acc[i] = a
            notes += said
            bar.step(f"lam {lams[i]:.3g}: accuracy {a:.4f}")
    else:
        bar = _Progress(len(lams) * len(fl), progress)
        runs = [_cv_accuracy(Xa, labels, fl, lam, fit_kwargs, bar, f"lam {i + 1}/{len(lams)} = {lam:.3g}", w)
                for i, lam in enumerate(lams)]
        acc = [a for a, _ in runs]
        notes = [n for _, said in runs for n in said]
    _warn_once("OPNB_CV_lam", notes, len(lams) * len(fl))
    acc = np.asarray(acc, dtype=float)
    best = int(np.argmax(acc))  # first of the maxima
    rows = np.concatenate(fl)
    fit_kwargs["threads"] = thr
    model: OPNBModel = OPNB(Xa[rows], labels[rows], lam=lams[best], **fit_kwargs, **_weights_of(w, rows))
    return {"model": model, "cv_stats": np.column_stack([lams, acc])}


_JOURNAL_GAMMAS = (1 / 3, 1 / 2, 1.0, 2.0, 3.0)


def _journal_fold(X, labels, train, test, gamma, ndims, path, fit_kwargs,
                  w: Optional[np.ndarray] = None) -> Tuple[np.ndarray, List[str], int]:
    """Test-fold hits (count of correct predictions, or their weight) for
    each ndim, the fits' convergence warnings, and the number of fits."""
    hits = np.zeros(len(ndims))
    fw = _weights_of(w, train)
    if path:
        # one fit at the largest ndim; its first m greedy columns serve ndim = m
        model, notes = exceptions.fit_quietly(opnb_journal, X[train], labels[train], ndim=max(ndims), gamma=gamma,
                                              **fit_kwargs, **fw)
        for j, m in enumerate(ndims):
            hits[j] = _hits(predict(model, X[test], ndim=m, log=True)["class"], labels[test], w, test)
        return hits, notes, 1
    notes = []
    for j, m in enumerate(ndims):
        model, said = exceptions.fit_quietly(opnb_journal, X[train], labels[train], ndim=m, gamma=gamma, **fit_kwargs,
                                             **fw)
        notes += said
        hits[j] = _hits(predict(model, X[test], log=True)["class"], labels[test], w, test)
    return hits, notes, len(ndims)


def opnb_journal_cv(
    X: Any,
    y: Any,
    folds: Union[int, Sequence[Sequence[int]]] = 5,
    gamma: Sequence[float] = _JOURNAL_GAMMAS,
    ndim: Optional[Sequence[int]] = None,
    nbin: Optional[int] = 1000,
    prescale: bool = False,
    *,
    path: bool = True,
    maxit: int = 100,
    n_jobs: Optional[int] = None,
    cores: Optional[int] = None,
    threads: Optional[int] = None,
    random_state: Any = 0,
    progress: bool = False,
    leave_rows_out: bool = False,
    priors: Any = None,
    weights: Any = None,
) -> Dict[str, Any]:
    """Tune the journal formulation's gamma and ndim by cross-validated accuracy.

    The best pair (the first on ties: the smaller gamma, then the smaller
    ndim) is refitted on the rows of all folds.

    Parameters
    ----------
    X : array-like or DataFrame of shape (n, d)
        The data, as in :func:`OPNB`.
    y : array-like of shape (n,)
        The labels, as in :func:`OPNB`.
    folds : int or sequence of index arrays, default 5
        An integer k (stratified, shuffled with ``random_state``) or 0-based
        row-index arrays.
    gamma : sequence of float, optional
        Bandwidth multipliers; default the paper's grid, 1/3, 1/2, 1, 2, 3.
    ndim : sequence of int, optional
        Numbers of columns; default 1 to ``min(d, 20)``.
    nbin : int or None, default 1000
        Bins per projected column, or None for exact sums.
    prescale : bool, default False
        Multiply the scaled data by Sigma_W^(-1/2) first, as in
        :func:`opnb_journal`.
    path : bool, default True
        For each gamma and fold, fit the largest ndim once and predict with
        its first m columns for every m (the columns are in greedy order):
        one fit per gamma and fold. False refits at every ndim, as the paper
        did.
    maxit : int, default 100
        Each fit's L-BFGS-B iteration limit; the inner fits' convergence
        warnings come as one, counted.
    n_jobs : int, optional
        Processes: more than 1 runs (gamma, fold) pairs in parallel through
        joblib, one thread per fit unless ``threads`` is given.
    cores : int, optional
        Deprecated name of ``n_jobs``.
    threads : int, optional
        Each fit's OpenMP thread count, the refit's included.
    random_state : int, RandomState or None, default 0
        Seeds the folds when ``folds`` is an integer.
    progress : bool, default False
        Draw a progress bar on stderr.
    leave_rows_out : bool, default False
        As in :func:`OPNB_CV_lam`: folds that miss row 0 are refused as
        R's 1-based folds unless this is given.
    priors : mapping or array-like of shape (n_classes,), optional
        The class priors of every fit, as in :func:`OPNB_CV_lam`.
    weights : array-like of shape (n_samples,), optional
        The rows' weights, as in :func:`OPNB_CV_lam`.

    Returns
    -------
    dict
        ``"model"`` (the refitted :class:`OPNBModel`), ``"gamma"`` and
        ``"ndim"`` (the best pair) and ``"cv_stats"``, a
        (len(gamma) * len(ndim), 3) array of [gamma, ndim, accuracy].

    See Also
    --------
    opnb_journal : One fit.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from pyopnb import opnb_journal_cv
    >>> X, y = load_iris(return_X_y=True)
    >>> cv = opnb_journal_cv(X, y, 3, gamma=[0.5, 1.0], ndim=[1, 2])
    >>> cv["cv_stats"].shape
    (4, 3)
    """
    Xa, labels, fl = _cv_data(X, y, folds, random_state, leave_rows_out)
    d = Xa.shape[1]
    ndims = list(range(1, min(d, 20) + 1)) if ndim is None else sorted({check_ndim(m, d) for m in ndim})
    if not ndims:
        raise ValueError("ndim must list at least one number of columns")
    gammas = [as_positive_scalar(g, "gamma") for g in np.atleast_1d(gamma)]
    jobs_n = _n_jobs(n_jobs, cores)
    w = _cv_weights(weights, Xa.shape[0])
    fit_kwargs: Dict[str, Any] = dict(nbin=nbin, prescale=prescale, maxit=maxit,
                                      priors=_priors_by_label(priors, labels))
    thr = _fold_threads(threads, jobs_n, fit_kwargs)
    pairs = [(g, j) for g in range(len(gammas)) for j in range(len(fl))]
    bar = _Progress(len(pairs), progress)

    def job(g: int, j: int):
        train = np.concatenate([f for i, f in enumerate(fl) if i != j])
        return g, _journal_fold(Xa, labels, train, fl[j], gammas[g], ndims, path, fit_kwargs, w)

    hits = np.zeros((len(gammas), len(ndims)))
    if jobs_n > 1:
        from joblib import Parallel, delayed

        results = Parallel(n_jobs=jobs_n, return_as="generator_unordered")(delayed(job)(g, j) for g, j in pairs)
    else:
        results = (job(g, j) for g, j in pairs)
    notes: List[str] = []
    fits = 0
    for g, (h, said, k) in results:
        hits[g] += h
        notes += said
        fits += k
        bar.step(f"gamma {gammas[g]:.3g}")
    _warn_once("opnb_journal_cv", notes, fits)
    acc = hits / (sum(f.size for f in fl) if w is None else math.fsum(w[np.concatenate(fl)]))
    gi, mi = np.unravel_index(int(np.argmax(acc)), acc.shape)  # first of the maxima, row-major
    rows = np.concatenate(fl)
    fit_kwargs["threads"] = thr
    model = opnb_journal(Xa[rows], labels[rows], ndim=ndims[mi], gamma=gammas[gi], **fit_kwargs,
                         **_weights_of(w, rows))
    stats = np.array([[g, m, acc[a, b]] for a, g in enumerate(gammas) for b, m in enumerate(ndims)])
    return {"model": model, "gamma": gammas[gi], "ndim": ndims[mi], "cv_stats": stats}
