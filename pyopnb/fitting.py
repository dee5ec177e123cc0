"""Fitting OPNB: R's ``OPNB()``, the published formulation's ``opnb_journal()``,
and the one L-BFGS-B driver both go through.

The driver checks the data once, lets the formulation set up the problem
(scaling, bandwidths, start, penalty, and the evaluator of its objective,
bound to the problem once), maximises the objective with L-BFGS-B as R's
optim runs it (:mod:`pyopnb._core.lbfgsb`), orders the optimum's columns by
the evaluator's greedy order, and folds the scaling into the model's V.
Everything formulation-specific is the formulation's
(:mod:`pyopnb.formulation`).
"""
from __future__ import annotations

import inspect
import math
import time
import warnings
from typing import Any, Callable, Optional, Tuple, Union

import numpy as np

from . import _threads, exceptions
from ._core import colstats, lbfgsb as _lbfgsb, linalg as _linalg
from ._validation import (as_nbin, check_aligned, check_maxit, check_ndim, check_priors, check_X, column_names,
                          label_text)
from .exceptions import CollapseWarning, RDefectWarning
from .formulation import CorrectFormulation, Formulation, JournalFormulation, RFormulation, Setup
from .labels import factor_levels
from .ksum import kernel
from .model import OPNBModel, predict, projection
from .weights import check_weights
from .r_failures import R_UNDERFLOW, RFailure

__all__ = ["OPNB", "opnb_journal", "fit"]

# optim's L-BFGS-B settings as R's OPNB calls it (maxit is the caller's)
_LBFGS = dict(m=5, factr=1e7, pgtol=0.0)

Callback = Callable[[int, float, float], None]


def OPNB(
    X: Any,
    y: Any,
    ndim: Optional[int] = None,
    lam: float = 1e-3,
    V0: Union[None, Callable, np.ndarray] = None,
    scale: bool = True,
    nbin: Optional[int] = 1000,
    C: Optional[Callable] = None,
    *,
    correct: bool = False,
    maxit: int = 100,
    threads: Optional[int] = None,
    callback: Optional[Callback] = None,
    r_defects: bool = False,
    priors: Any = None,
    weights: Any = None,
) -> OPNBModel:
    """Fit an Optimal Projections Naive Bayes model, as R's ``OPNB()``.

    The steps of R's OPNB 1.0: the labels become factor levels; the columns
    are centred by their means and, with ``scale``, divided by their sds
    (n - 1; a column with sd < 1e-20 is zeroed); the priors are n_k / n
    (or ``priors``, pyopnb's own argument); V
    starts at the first ``ndim`` eigenvectors of the covariance, R's
    ``eigen(cov(Xs))$vectors`` to the bit, signs included (or at ``V0``);
    every class gets bandwidth 1; L-BFGS-B (memory 5, at most ``maxit``
    iterations, factr 1e7, pgtol 0) maximises ``l(V) - lam * pen(V)``, with
    pen = sum(V^2) or sum_t v_t' C(Xs, y) v_t; the columns are ordered
    greedily by l and normalised (bandwidths h_k / ||v_t||), and the scaling
    is folded into V.

    Parameters
    ----------
    X : array-like or DataFrame of shape (n, d)
        The training data. A DataFrame's column names travel with the model,
        and :func:`predict` matches a DataFrame's columns by them.
    y : array-like of shape (n,)
        Labels of any kind. Their levels sort as R's ``as.factor`` sorts
        them (numbers through their 15-digit text, as R's: distinct numbers
        of one text are one class, with :class:`pyopnb.RLabelsWarning`),
        or in a pandas Categorical's own order. A Categorical's unused last
        levels are kept as R keeps them (``model.unused_levels``); one
        before a used level is an error, as R's fit stops there. pandas X
        and y must share their row index (rows are paired by position).
    ndim : int, optional
        Columns of V, 1 to d (default ``min(d, 20)``). R fails at 1; pyopnb
        does not.
    lam : float, default 1e-3
        The penalty's weight, >= 0. With 0 (R accepts it) nothing bounds V's
        scale: R's own fits then usually stop on a non-finite value in
        FKSUM's sums and keep their start, with a warning; pyopnb's sums stay
        finite and the fit goes on.
    V0 : None, "R", callable or ndarray of shape (d, ndim), optional
        The start. None: R's. ``"R"``: R's start computed by R itself through
        rpy2, for an R whose LAPACK is not the reference one. A function
        ``V0(Xs, y_codes, ndim)`` returning a (d, ndim) matrix (``y_codes``
        1-based, as R's), or the matrix itself.
    scale : bool, default True
        Scale the columns to unit sd.
    nbin : int or None, default 1000
        Bins per projected column, or None for exact kernel sums.
    C : callable, optional
        ``C(Xs, y_codes)`` returning a symmetric (d, d) penalty matrix; None
        penalises sum(V^2).
    correct : bool, default False
        Deprecated (FutureWarning): True fits the "correct" formulation, R's
        with the paper's objective (priors counted once). Use
        ``pyopnb.fitting.fit(X, y, CorrectFormulation(lam=...))`` or
        ``OPNBClassifier(formulation="correct")``.
    maxit : int, default 100
        L-BFGS-B's iteration limit (R's ``optim`` control ``maxit``). A fit
        that reaches it ends with convergence code 1 and warns.
    threads : int, optional
        Threads for every parallel step: default ``PYOPNB_NUM_THREADS``, else
        OpenMP's setting (``OMP_NUM_THREADS`` or threadpoolctl's), else every
        core this process may use; -1 is every core. The result does not
        depend on it.
    callback : callable, optional
        Called after each L-BFGS-B iteration with (iteration, objective,
        gradient norm).
    r_defects : bool, default False
        Where R's own fit would stop: at a V where R's gradient sums are
        not finite (a point farther than about 745 bandwidths from every
        point of a class, as with ``scale=False`` or a small lam; see
        :mod:`pyopnb.r_failures`), R's optim stops with an error and R's
        OPNB keeps its start V, with a warning. pyopnb's sums stay finite
        there: by default the fit goes on and warns
        (:class:`pyopnb.RDefectWarning`); True keeps the start, as R does,
        for R's numbers.
    priors : mapping or array-like of shape (n_classes,), optional
        The class priors PI_k, where the class proportions n_k / n (R's, the
        default) are not the population's: a mapping from label to prior (a
        dict, or a pandas Series indexed by label) naming every class, or
        one prior per class in the order of ``model.ynames`` (y's levels).
        Each positive, summing to 1. The fit's likelihood and every
        prediction use them; R's OPNB has no such argument, and R's
        ``predict`` on a model written with :func:`write_rds` uses them too.
    weights : array-like of shape (n_samples,), optional
        One non-negative weight per row, ours (R's OPNB has none): rows of
        weight 0 are dropped, and the others weigh in the scaling, the
        start, the bandwidths, the priors, the class densities and the
        likelihood, in proportion (weights summing to 1 or to n fit the same
        model; see :mod:`pyopnb.weights`). The model keeps them for its
        predictions, so R's ``predict`` cannot use it: :func:`write_rds`
        refuses a weighted model.

    Returns
    -------
    OPNBModel
        R's fields (``V``, ``h``, ``PI``, ``mu``, ``scales``, ``ynames``,
        ``fval``, ...) and the convergence code.

    See Also
    --------
    predict : Posteriors and classes of new data.
    OPNB_CV_lam : Tune ``lam`` by cross-validation.
    opnb_journal : The journal paper's formulation.

    Examples
    --------
    >>> from pyopnb import OPNB, predict
    >>> from pyopnb.datasets import load_pima
    >>> d = load_pima()
    >>> model = OPNB(d.X_train, d.y_train, ndim=2)
    >>> model.V.shape
    (7, 2)
    >>> predict(model, d.X_test)["class"][:3].tolist()
    ['Yes', 'No', 'No']
    """
    if correct:
        warnings.warn("OPNB(correct=True) is deprecated: use pyopnb.fitting.fit(X, y, CorrectFormulation(...)) or "
                      "OPNBClassifier(formulation='correct')", FutureWarning, stacklevel=2)
    if correct:
        if r_defects:
            raise ValueError("r_defects=True reproduces R's own fit, not the 'correct' formulation's")
        form: Formulation = CorrectFormulation(lam=lam, V0=V0, C=C, scale=scale)
    else:
        form = RFormulation(lam=lam, V0=V0, C=C, scale=scale, r_defects=r_defects)
    return fit(X, y, form, ndim=ndim, nbin=nbin, maxit=maxit, threads=threads, callback=callback, priors=priors,
               weights=weights, caller="OPNB")


def opnb_journal(
    X: Any,
    y: Any,
    ndim: Optional[int] = None,
    gamma: float = 1.0,
    nbin: Optional[int] = 1000,
    prescale: bool = False,
    V0: Union[None, Callable, np.ndarray] = None,
    *,
    maxit: int = 100,
    threads: Optional[int] = None,
    callback: Optional[Callback] = None,
    priors: Any = None,
    weights: Any = None,
) -> OPNBModel:
    """Fit OPNB as published (the journal version of the paper).

    Each variable is centred and divided by its training sd (constant ones
    zeroed); with ``prescale`` the data are then multiplied by Sigma_W^(-1/2),
    the pooled within-class covariance's inverse square root
    (pseudo-inverse where singular). Class k gets the bandwidth
    h_k = 0.54 gamma (trace(Sigma_k)/p)^(1/2) n_k^(-1/5) on every projected
    column. L-BFGS-B (as in :func:`OPNB`) maximises the mean log-likelihood
    at V with unit-norm columns (priors once, no penalty; exact sums with
    ``nbin=None``, else linear binning with densities at the points, and its
    exact gradient), from LDA's discriminant directions completed by
    principal components (or ``V0``). The columns are then ordered greedily
    by the same objective, as R orders its own.

    Parameters
    ----------
    X : array-like or DataFrame of shape (n, d)
        The training data, as in :func:`OPNB`.
    y : array-like of shape (n,)
        Labels of any kind, as in :func:`OPNB`.
    ndim : int, optional
        Columns of V, 1 to d (default ``min(d, 20)``).
    gamma : float, default 1.0
        Bandwidth multiplier, > 0 (the paper's grid: 1/3, 1/2, 1, 2, 3).
    nbin : int or None, default 1000
        Bins per projected column, or None for exact sums.
    prescale : bool, default False
        Multiply the scaled data by Sigma_W^(-1/2) first (the paper's remedy
        for Hill-Valley-like data).
    V0 : None, callable or ndarray of shape (d, ndim), optional
        None: LDA's start. A matrix, or a function ``V0(Xs, y_codes, ndim)``.
        The fit reads the rows in one canonical order (by class, then by
        value), so that it does not depend on the order they come in; a
        function is given them in that order.
    maxit : int, default 100
        L-BFGS-B's iteration limit, as in :func:`OPNB`.
    threads : int, optional
        Threads, as in :func:`OPNB`; the result does not depend on it.
    callback : callable, optional
        Called after each iteration, as in :func:`OPNB`.
    priors : mapping or array-like of shape (n_classes,), optional
        The class priors, as in :func:`OPNB` (default the class proportions).
    weights : array-like of shape (n_samples,), optional
        The rows' weights, as in :func:`OPNB` (the paper has none).

    Returns
    -------
    OPNBModel
        A model that :func:`predict`, :func:`plot`, :func:`write_rds` (and
        R's ``predict.OPNB``) and the command line take as they are: V maps
        raw data, ``h[k, t]`` = h_k (V's columns have unit norm in the scaled
        data), ``lam`` = 0 and ``fval`` the mean log-likelihood.

    See Also
    --------
    opnb_journal_cv : Tune gamma and ndim by cross-validation.
    OPNB : R's penalised formulation.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from pyopnb import opnb_journal
    >>> X, y = load_iris(return_X_y=True)
    >>> model = opnb_journal(X, y, ndim=2, gamma=1.0)
    >>> model.h.shape
    (3, 2)
    """
    form = JournalFormulation(gamma=gamma, prescale=prescale, V0=V0)
    return fit(X, y, form, ndim=ndim, nbin=nbin, maxit=maxit, threads=threads, callback=callback, priors=priors,
               weights=weights, caller="opnb_journal")


class _Objective:
    """The formulation's objective on a flattened (column-major, as R) V, for
    the optimiser: l(V) - lam pen(V), or the normalised l(V-bar), from the
    setup's evaluator."""

    def __init__(self, setup: Setup, d: int, ndim: int):
        self.setup = setup
        self.evaluator = setup.evaluator
        self.d, self.ndim = d, ndim
        self.last: Optional[Tuple[np.ndarray, float, np.ndarray]] = None
        self.evaluations = 0
        # the first evaluation where R's own gradient would not be finite: (its number, where, the start's value)
        self.r_failed: Optional[Tuple[int, RFailure]] = None
        self.first_value: Optional[float] = None
        # an evaluator of one's own formulation without use_threads keeps its count
        self.pace = _threads.Pace(getattr(self.evaluator, "most_threads", 1))

    def unflat(self, v: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(v.reshape(self.d, self.ndim, order="F"))

    def value(self, V: np.ndarray) -> float:
        st = self.setup
        f = self.evaluator.value(V)
        return f if st.pen is None else f - st.lam * st.pen(V)

    def value_and_grad(self, V: np.ndarray) -> Tuple[float, np.ndarray]:
        """The objective the fit maximises at V (d x ndim) and its gradient."""
        st = self.setup
        F, G = self.evaluator.value_and_grad(V)
        if st.pen is not None:
            F = F - st.lam * st.pen(V)
            G = G - st.lam * st.dpen(V)
        return F, G

    def __call__(self, v: np.ndarray) -> Tuple[float, np.ndarray]:
        start = time.perf_counter()
        try:
            F, G = self.value_and_grad(self.unflat(v))
        except ValueError as exc:  # a zero column of the normalised objective
            raise FloatingPointError(str(exc)) from None
        count = self.pace.next(time.perf_counter() - start)
        if count != self.evaluator.threads:
            self.evaluator.use_threads(count)
        self.last = (v.copy(), F, G)
        self.evaluations += 1
        if self.first_value is None:
            self.first_value = F
        st = self.setup
        if st.r_failure is not None and self.r_failed is None:
            where = st.r_failure(self.unflat(v))
            if where is not None:
                self.r_failed = (self.evaluations, where)
                if st.r_defects:
                    # R's gradient is not finite here: L-BFGS-B steps to a non-finite V and R's optim stops
                    raise FloatingPointError(f"R's gradient is not finite at evaluation {self.evaluations}, and "
                                             f"R's optim stops with \"non-finite value supplied by optim\"; "
                                             f"r_defects=True")
        if not math.isfinite(F) or not np.isfinite(G).all():
            # R's optim stops with "L-BFGS-B needs finite values of 'fn'"
            raise FloatingPointError("L-BFGS-B needs finite values of 'fn'")
        return -F, -G.ravel(order="F")


def fit(X: Any, y: Any, form: Formulation, *, ndim: Optional[int] = None, nbin: Optional[int] = 1000,
        maxit: int = 100, threads: Optional[int] = None, callback: Optional[Callback] = None,
        priors: Any = None, weights: Any = None, caller: str = "fit") -> OPNBModel:
    """Fit the formulation ``form`` to (X, y): the optimiser's driver.

    ``priors``: the class priors, a mapping from label to prior or one per
    class in the order of y's levels (:func:`pyopnb._validation.check_priors`);
    None for the class proportions.

    ``weights``: one non-negative weight per row (:mod:`pyopnb.weights`):
    rows of weight 0 are dropped, and the rest weigh in every statistic, the
    class densities and the likelihood; weights all equal are no weights.

    ``caller`` names the public function in warnings. A fit whose
    optimiser outcome is not the formulation's normal one warns once
    (:class:`pyopnb.ConvergenceWarning`); one whose objective is not finite
    at the start or along the way keeps the start V, as R's OPNB does, and
    warns.
    """
    check_aligned(X, y)
    Xa = check_X(X, "X")
    if not Xa.flags.owndata or Xa is X:
        # a kernel naive Bayes model is its training data: the caller's array,
        # changed later, must not change the model's predictions
        Xa = Xa.copy()
    n, d = Xa.shape
    levels, codes, unused = factor_levels(y)
    if codes.size != n:
        raise ValueError(f"y has {codes.size} labels but X has {n} rows")
    w, keep = check_weights(weights, n, "sample_weight" if caller == "OPNBClassifier" else "weights")
    if not keep.all():
        Xa, codes = np.ascontiguousarray(Xa[keep]), codes[keep]
        n = Xa.shape[0]
        empty = np.flatnonzero(np.bincount(codes, minlength=levels.size) == 0)
        if empty.size:
            raise ValueError(f"class {label_text(levels[int(empty[0])])} has weight 0 on every row: give it a "
                             f"positive weight somewhere, or leave it out of y")
    K = levels.size
    if K < 2:
        raise ValueError(f"y must have at least two classes, found {K}")
    if not colstats.any_varies(Xa):
        raise ValueError("no column of X varies (every column is constant): there is nothing to project")
    nd = check_ndim(ndim, d)
    nbin_v = as_nbin(nbin)
    maxit = check_maxit(maxit)
    thr = _threads.resolve(threads, _threads.work(n, d, nd, K))
    PI = check_priors(priors, levels)
    names = column_names(X)
    # a formulation of one's own whose setup takes no priors is called as before
    given = {} if PI is None else {"PI": PI}
    if given and not _takes_keyword(form, "PI"):
        raise ValueError(f"priors were given, but {type(form).__name__}.setup takes no PI: add the keyword argument "
                         f"PI=None to it and pass it on (pyopnb.formulation.class_priors)")
    if w is not None:
        if not _takes_keyword(form, "w"):
            raise ValueError(f"weights were given, but {type(form).__name__}.setup takes no w: add the keyword "
                             f"argument w=None to it and pass it on (pyopnb.weights)")
        given["w"] = w
    st = form.setup(Xa, codes, levels, nd, names, nbin_v, thr, **given)
    obj = _Objective(st, d, nd)
    Vopt, convergence = _optimise(obj, st.V, maxit, callback, form, nbin_v, caller)
    if obj.r_failed is not None and not st.r_defects:
        warn_r_failure(obj, levels, caller)
    V, h, fval = final_projection(st, obj, Vopt, form, st.problem.h, thr)
    model = OPNBModel(V=V, X=Xa, y=codes + 1, PI=st.problem.PI, h=h, nc=K, mu=st.mu,
                      scales=st.scales, ynames=levels, lam=st.lam, fval=fval, feature_names=names,
                      convergence=convergence, unused_levels=unused, w=w)
    warn_if_collapsed(model, model.X[collapse_rows(Xa.shape[0])], form, thr, caller)
    return model


def final_projection(st: Setup, obj: "_Objective", Vopt: np.ndarray, form: Formulation, h_classes: np.ndarray,
                     threads: int) -> Tuple[np.ndarray, np.ndarray, float]:
    """The model's (V, h, fval) from the optimum Vopt: the objective there,
    the columns in the evaluator's greedy order, each scaled to unit norm
    (its bandwidths h_classes [K] divided by its norm), and the scaling
    folded in, so that V projects the raw data."""
    if obj.last is not None and np.array_equal(obj.last[0], Vopt.ravel(order="F")):
        fval = obj.last[1]  # the optimiser's last evaluation was at Vopt
    else:
        fval = obj.value(Vopt)
    norms = colstats.col_norms(Vopt)
    if np.any(norms == 0):
        raise ValueError("a column of V is zero: the projection is degenerate (check V0 and C)")
    Vopt, norms = form.final_columns(Vopt, norms)
    order = st.evaluator.order_columns(Vopt)
    Vopt, norms = Vopt[:, order], norms[order]
    h = np.outer(h_classes, 1.0 / norms)
    Vn = Vopt / norms
    if st.prescale is not None:
        Vn = _linalg.matmul(st.prescale, Vn, threads)
    return Vn * st.scales[:, None], h, float(fval)


def _takes_keyword(form: Formulation, name: str) -> bool:
    """Whether the formulation's setup takes the keyword ``name`` (or any keyword)."""
    params = inspect.signature(form.setup).parameters.values()
    return any(p.name == name or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


# training rows a fit's posteriors are looked at on, evenly spaced: enough to see a class told apart anywhere,
# few enough to cost a fraction of one evaluation
_COLLAPSE_ROWS = 1000
# how near every posterior is to the priors in a collapsed fit (a fit that tells classes apart anywhere moves them by
# far more, kernel sums on noise included)
_COLLAPSE_TOL = 1e-3


def collapse_rows(n: int) -> np.ndarray:
    """The training rows a fit's collapse is looked for on: evenly spaced."""
    return np.unique(np.linspace(0, n - 1, min(n, _COLLAPSE_ROWS)).astype(np.intp))


# rows of X_rows whose posteriors the collapse check first sums directly: the fit is told apart at the first that
# shows it
_PROBE_ROWS = 4
# training rows a direct sum takes at a time
_DIRECT_RUN = 65536


def direct_posteriors(model: OPNBModel, Ztr: np.ndarray, Zte: np.ndarray) -> np.ndarray:
    """[m, K]: the posteriors of a few projected rows Zte [m, ndim] by the
    model's class densities over its projected training rows Ztr [n,
    ndim], each kernel sum taken directly: O(n ndim) a row, where
    :func:`predict`'s exact sums sort every column of every class whatever
    the rows. The same densities as predict's, rounded otherwise (numpy's
    exp and log, in another order), so a bound on a posterior and not its
    bits. A row whose classes all have density 0 here gives NaN."""
    y0 = model.y0
    w = None if model.w is None else np.asarray(model.w, dtype=np.float64)
    logjoint = np.empty((Zte.shape[0], model.nc))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        for k in range(model.nc):
            in_k = y0 == k
            Zk, hk = Ztr[in_k], model.h[k]
            wk = None if w is None else w[in_k]
            total = float(Zk.shape[0]) if wk is None else wk.sum()
            for r in range(Zte.shape[0]):
                f = np.zeros(Zte.shape[1])
                # by runs of rows: a run's temporaries, not the class's
                for s in range(0, Zk.shape[0], _DIRECT_RUN):
                    Kv = kernel((Zte[r] - Zk[s:s + _DIRECT_RUN]) / hk)
                    f += Kv.sum(axis=0) if wk is None else wk[s:s + _DIRECT_RUN] @ Kv
                logjoint[r, k] = np.log(model.PI[k]) + np.log(f / (total * hk)).sum()
        e = np.exp(logjoint - logjoint.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)


def _told_apart(model: Any, X_rows: np.ndarray, threads: int) -> bool:
    """Whether the posteriors of one of the first rows of X_rows, summed
    directly (:func:`direct_posteriors`), stand at least twice the collapse
    tolerance from the priors. Then predict's on X_rows, which round apart
    from them by far less, are not the priors, and its sums need not be
    made. Tried where those would cost more than the direct sums: a model
    with its training rows, more of them than X_rows."""
    if not isinstance(model, OPNBModel) or model.X.shape[0] <= len(X_rows):
        return False
    V = np.ascontiguousarray(model.V)
    Ztr = projection(model.X, model.mu, V, threads)
    Zte = projection(X_rows[:_PROBE_ROWS], model.mu, V, threads)
    for r in range(Zte.shape[0]):
        gap = np.max(np.abs(direct_posteriors(model, Ztr, Zte[r:r + 1]) - model.PI))
        if gap >= 2 * _COLLAPSE_TOL:  # False for a NaN row
            return True
    return False


def warn_if_collapsed(model: Any, X_rows: np.ndarray, form: Formulation, threads: int, caller: str,
                      stacklevel: int = 3) -> None:
    """Warn where the fitted posteriors are the priors on the training rows
    X_rows (:func:`collapse_rows`' of X): the model then predicts the most
    frequent class everywhere, and its optimiser's outcome says nothing of
    it (it converged, to V near zero). ``stacklevel``: the user's call,
    counted as ``warnings.warn`` counts it, from the caller of this
    function (1). A fit told apart by a few rows' direct sums
    (:func:`_told_apart`) is not asked more."""
    if _told_apart(model, X_rows, threads):
        return
    post = predict(model, X_rows, log=True, threads=threads)["posterior"]
    gap = float(np.max(np.abs(post - model.PI)))
    if gap < _COLLAPSE_TOL:
        warnings.warn(f"{caller}: {COLLAPSED} (by at most {gap:.2g} on {len(X_rows)} training rows): the model "
                      f"predicts class {label_text(model.ynames[int(np.argmax(model.PI))])} everywhere. "
                      f"{form.collapse_cause()}.", CollapseWarning, stacklevel=stacklevel + 1)


# how the notes of a fit that left R's path, or collapsed, begin, for the command line to tell them from other notes
R_WOULD_STOP = "R's OPNB 1.0 would not end here"
KEPT_START = "the optimisation failed"
COLLAPSED = "every posterior is the class prior"


def warn_r_failure(obj: _Objective, levels: np.ndarray, caller: str, stacklevel: int = 3) -> None:
    """Say where R's OPNB would have stopped on this fit's path, and what it
    would have returned (``stacklevel``: the user's call, counted as
    ``warnings.warn`` counts it, from the caller of this function (1))."""
    evaluation, where = obj.r_failed
    warnings.warn(f"{caller}: {R_WOULD_STOP}. At evaluation {evaluation} of L-BFGS-B a "
                  f"{'grid point' if obj.evaluator.nbin is not None else 'point'} lay {where.distance:.0f} "
                  f"bandwidths from every point of class {label_text(levels[where.code])} on projected column "
                  f"{where.column + 1}, where R's gradient sums are not finite (exp underflows past about "
                  f"{R_UNDERFLOW:.0f} bandwidths): R's optim then stops with an error, and R's OPNB keeps its start "
                  f"(objective {obj.first_value:.6g}) and warns \"Numerical errors occurred\". pyopnb's sums stay "
                  f"finite and the fit went on. Pass r_defects=True for R's result; or, as R advises, a larger lam",
                  RDefectWarning, stacklevel=stacklevel + 1)


def _optimise(obj: _Objective, V: np.ndarray, maxit: int, callback: Optional[Callback], form: Formulation,
              nbin: Optional[int], caller: str) -> Tuple[np.ndarray, int]:
    """(the optimum, R's optim code) by L-BFGS-B from V, with the warnings the outcome calls for."""
    def _cb(iteration: int, x: np.ndarray, f: float, g: np.ndarray) -> None:
        if callback is not None:
            callback(iteration, -float(f), float(np.sqrt(colstats.r_sum(g * g))))

    try:
        res = _lbfgsb.minimize(obj, V.ravel(order="F"), callback=_cb, maxit=maxit, **_LBFGS)
    except FloatingPointError as exc:
        # R's OPNB: "Numerical errors occurred with settings provided, returning initial solution"
        warnings.warn(f"{caller}: {KEPT_START} ({exc}); the model keeps the start projection, as R's "
                      f"OPNB does. Try " + form.advice(nbin) + ".", exceptions.ConvergenceWarning,
                      stacklevel=4)
        return V, 52
    note = form.convergence_note(res["convergence"], nbin, maxit)
    if note is not None:
        warnings.warn(f"{caller}: {note}", exceptions.ConvergenceWarning, stacklevel=4)
    return obj.unflat(res["x"]), res["convergence"]
