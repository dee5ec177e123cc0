"""The OPNB model: R's ``OPNB()`` and ``predict()``, step for step.

``OPNB`` follows R OPNB 1.0 (see the steps in its docstring); with
``correct=True`` it optimises the paper's objective instead of R's (whose exact
value squares the priors), which changes fits with unequal classes.
"""
from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Union

import numpy as np
import scipy.linalg
from scipy.optimize import minimize
from scipy.special import logsumexp

from . import _ksum
from ._validation import as_nbin, as_positive_scalar
from .ksum import DEFAULT_BETA as _DEFAULT_BETA
from .objective import Problem, Workspace, check_problem, default_threads, evaluate, grid_tables

__all__ = ["OPNBModel", "OPNB", "predict", "factor"]

# R's constants: sd below this zeroes a column; optim's L-BFGS-B defaults
_SD_ZERO = 1e-20
_LBFGS = dict(maxcor=5, maxiter=100, ftol=1e7 * np.finfo(float).eps, gtol=0.0)
_MACHINE_EPS = np.finfo(float).eps


# ---------------------------------------------------------------------------
# labels, as R's as.factor
# ---------------------------------------------------------------------------

def _collation_key(s: str) -> Tuple[str, str]:
    # R sorts strings by the locale's collation (en_US: case-insensitive
    # first, lower case before upper on ties); C-locale order would put "B"
    # before "a"
    return (s.casefold(), s.swapcase())


def factor(y: Any) -> Tuple[np.ndarray, np.ndarray]:
    """R's ``as.factor``: (levels, 0-based codes).

    Numbers sort numerically, booleans FALSE < TRUE, strings by collation;
    a pandas Categorical keeps its category order (unused categories dropped).
    """
    cat = None
    # pandas is optional, and y can only be a pandas object if pandas is
    # loaded (importing it here would add a quarter of a second to a fit)
    pd = sys.modules.get("pandas")
    if pd is not None:
        if isinstance(y, (pd.Series, pd.Index)) and isinstance(y.dtype, pd.CategoricalDtype):
            cat = pd.Categorical(y)
        elif isinstance(y, pd.Categorical):
            cat = y
        elif isinstance(y, (pd.Series, pd.Index)):
            y = y.to_numpy()
    if cat is not None:
        if (cat.codes < 0).any():
            raise ValueError("y contains missing values")
        cat = cat.remove_unused_categories()
        return np.asarray(cat.categories, dtype=object), np.asarray(cat.codes, dtype=np.int64)
    arr = np.asarray(y)
    if arr.ndim != 1:
        if arr.ndim == 2 and 1 in arr.shape:
            arr = arr.ravel()
        else:
            raise ValueError(f"y must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError("y is empty")
    if arr.dtype.kind in "fc":
        if not np.all(np.isfinite(arr)):
            raise ValueError("y contains NaN or infinite values")
    if arr.dtype.kind in "biuf":
        levels, codes = np.unique(arr, return_inverse=True)
        return levels, codes.astype(np.int64)
    if arr.dtype.kind in "OUS":
        items = arr.tolist()
        if any(v is None or (isinstance(v, float) and not np.isfinite(v)) for v in items):
            raise ValueError("y contains missing values")
        kinds = {type(v) for v in items}
        if all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in items):
            return factor(np.asarray(items, dtype=float))
        if kinds <= {bool, np.bool_}:
            return factor(np.asarray(items, dtype=bool))
        strs = [str(v) for v in items]
        levels = sorted(set(strs), key=_collation_key)
        index = {lev: i for i, lev in enumerate(levels)}
        return np.asarray(levels, dtype=object), np.array([index[s] for s in strs], dtype=np.int64)
    raise ValueError(f"y has an unsupported dtype {arr.dtype}")


# ---------------------------------------------------------------------------
# the fitted model
# ---------------------------------------------------------------------------

@dataclass
class OPNBModel:
    """A fitted OPNB model with R's fields and meanings.

    V : (d, ndim) projection for raw data: projections are ``(X - mu) @ V``.
    X : (n, d) raw training data. y : (n,) class codes 1..K (as R).
    PI : (K,) priors. h : (K, ndim) bandwidths. nc : K. mu : (d,) column means.
    scales : (d,) column multipliers (1/sd, 0 for constant columns, 1 if not
    scaled). ynames : (K,) class labels. lam : penalty. fval : objective at V.
    Fields read as attributes (``m.V``) or items (``m["V"]``).
    """

    V: np.ndarray
    X: np.ndarray
    y: np.ndarray
    PI: np.ndarray
    h: np.ndarray
    nc: int
    mu: np.ndarray
    scales: np.ndarray
    ynames: np.ndarray
    lam: float
    fval: float
    feature_names: Optional[Tuple[str, ...]] = field(default=None, compare=False)
    convergence: int = field(default=0, compare=False)

    # not R's fields: column names seen at fit time, and optim's convergence
    # code (0 converged, 1 iteration limit, 52 line search failed)
    _EXTRA = ("feature_names", "convergence")

    def __getitem__(self, key: str) -> Any:
        if key not in self.keys():
            raise KeyError(key)
        return getattr(self, key)

    def keys(self) -> Tuple[str, ...]:
        """R's field names."""
        return tuple(f.name for f in fields(self) if f.name not in self._EXTRA)

    @property
    def ndim(self) -> int:
        return self.V.shape[1]

    def project(self, X: Any) -> np.ndarray:
        """Projections ``(X - mu) @ V`` of raw data."""
        Xa = _check_X(X, "Xte", self.V.shape[0])
        return (Xa - self.mu) @ self.V

    def __repr__(self) -> str:
        return (f"OPNBModel(d={self.V.shape[0]}, ndim={self.ndim}, classes={list(self.ynames)}, "
                f"lam={self.lam:g}, fval={self.fval:.6g})")


def _column_names(X: Any) -> Optional[Tuple[str, ...]]:
    cols = getattr(X, "columns", None)
    if cols is None:
        return None
    return tuple(str(c) for c in cols)


def _check_X(X: Any, name: str, d: Optional[int] = None) -> np.ndarray:
    """A finite float64 matrix; names the first bad column."""
    names = _column_names(X)
    try:
        Xa = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric (encode categorical columns first)") from None
    if Xa.ndim == 1:
        Xa = Xa.reshape(-1, 1)
    if Xa.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got shape {Xa.shape}")
    if Xa.shape[0] == 0:
        raise ValueError(f"{name} has no rows")
    if d is not None and Xa.shape[1] != d:
        raise ValueError(f"{name} has {Xa.shape[1]} columns but the model was fitted on {d}")
    bad = ~np.isfinite(Xa)
    if bad.any():
        j = int(np.flatnonzero(bad.any(axis=0))[0])
        label = f"'{names[j]}'" if names else str(j)
        raise ValueError(f"{name} contains NaN or infinite values in column {label} "
                         f"({int(bad[:, j].sum())} rows)")
    return np.ascontiguousarray(Xa)


# ---------------------------------------------------------------------------
# fitting
# ---------------------------------------------------------------------------

def r_colmeans(X: np.ndarray) -> np.ndarray:
    """R's colMeans: each column summed left to right in long double, over n."""
    return _ksum.r_colmeans(np.ascontiguousarray(X, dtype=np.float64))


def r_sd(X: np.ndarray) -> np.ndarray:
    """R's sd per column: a refined long-double mean, then a long-double sum of
    squared deviations over n - 1, all summed left to right. Matching R to
    the bit matters: the start's eigenvector signs, and so R's binned fits,
    can change with an ulp of the scaled data."""
    return _ksum.r_sd(np.ascontiguousarray(X, dtype=np.float64))


def r_standardise(X: np.ndarray, scale: bool = True) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """R OPNB's steps 2-3, to the bit: (mu, scales, Xs).

    mu = colMeans(X); scales = 1/sd of the centred columns (0 for sd < 1e-20,
    1 if not scale); Xs = (X - mu) * scales. R multiplies by 1/sd: dividing
    changes Xs by an ulp here and there, which can flip the sign of an
    eigenvector of the start, and R's binned objective tells signs apart.
    """
    n, d = X.shape
    mu = r_colmeans(X)
    Xc = X - mu
    if scale:
        sd = r_sd(Xc) if n > 1 else np.zeros(d)
        scales = np.where(sd < _SD_ZERO, 0.0, 1.0 / np.where(sd < _SD_ZERO, 1.0, sd))
        Xc *= scales
    else:
        scales = np.ones(d)
    return mu, scales, np.ascontiguousarray(Xc)


def _penalty(C: Optional[Callable], Xs: np.ndarray, y1: np.ndarray, d: int):
    """pen(V) and its gradient: sum(V^2), or sum_t v_t' Cmat v_t."""
    if C is None:
        return (lambda V: float(np.sum(V * V))), (lambda V: 2.0 * V)
    Cmat = np.asarray(C(Xs, y1), dtype=np.float64)
    if Cmat.shape != (d, d):
        raise ValueError(f"C must return a {d} x {d} matrix (d = columns of X), got shape {Cmat.shape}")
    if not np.all(np.isfinite(Cmat)):
        raise ValueError("C returned a matrix with NaN or infinite values")
    if not np.allclose(Cmat, Cmat.T, rtol=1e-12, atol=1e-14 * max(1.0, np.abs(Cmat).max())):
        raise ValueError("C must return a symmetric matrix")
    return (lambda V: float(np.sum(V * (Cmat @ V)))), (lambda V: 2.0 * (Cmat @ V))


def _start(V0: Any, Xs: np.ndarray, y1: np.ndarray, ndim: int) -> np.ndarray:
    d = Xs.shape[1]
    if V0 is None:
        # first ndim eigenvectors of cov(Xs), decreasing eigenvalue. R's eigen
        # calls LAPACK's dsyevr, as driver "evr" does; its column signs are
        # the ones R gets, which matters because R's binned objective is not
        # symmetric under a column's sign flip
        vals, vecs = scipy.linalg.eigh(np.cov(Xs, rowvar=False).reshape(d, d), driver="evr")
        return np.ascontiguousarray(vecs[:, ::-1][:, :ndim])
    out = V0(Xs, y1, ndim) if callable(V0) else V0
    V = np.asarray(out, dtype=np.float64)
    if V.ndim == 1 and ndim == 1:
        V = V.reshape(-1, 1)
    if V.shape != (d, ndim):
        # R: "V0 must be a function which returns a matrix with ncol(X) rows and ndim columns"
        raise ValueError(f"V0 must be a function which returns a matrix with ncol(X) = {d} rows "
                         f"and ndim = {ndim} columns; got shape {V.shape}")
    if not np.all(np.isfinite(V)):
        raise ValueError("V0 returned NaN or infinite values")
    return np.ascontiguousarray(V)


def _check_ndim(ndim: Any, d: int) -> int:
    if ndim is None:
        return min(d, 20)
    if isinstance(ndim, bool) or not float(ndim).is_integer():
        raise ValueError(f"ndim must be an integer from 1 to {d}, got {ndim!r}")
    nd = int(ndim)
    if not 1 <= nd <= d:
        raise ValueError(f"ndim must be from 1 to ncol(X) = {d}, got {nd}")
    return nd


def _check_lam(lam: Any) -> float:
    return as_positive_scalar(lam, "lam", " (R requires it strictly positive)")


class _Objective:
    """l(V) - lam pen(V) on a flattened (column-major, as R) V, for the optimiser."""

    def __init__(self, problem, d, ndim, lam, pen, dpen, nbin, compat, threads):
        # validated once by the fit, not at each of the optimiser's evaluations
        self.problem = problem
        self.ws = Workspace()
        self.d, self.ndim, self.lam = d, ndim, lam
        self.pen, self.dpen = pen, dpen
        self.nbin, self.compat, self.threads = nbin, compat, threads
        self.evals = 0
        self.last = None

    def unflat(self, v: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(v.reshape(self.d, self.ndim, order="F"))

    def value(self, V: np.ndarray) -> float:
        f, _ = evaluate(V, self.problem, self.nbin, self.compat, False, self.threads, self.ws)
        return f - self.lam * self.pen(V)

    def __call__(self, v: np.ndarray) -> Tuple[float, np.ndarray]:
        V = self.unflat(v)
        f, g = evaluate(V, self.problem, self.nbin, self.compat, True, self.threads, self.ws)
        F = f - self.lam * self.pen(V)
        G = g - self.lam * self.dpen(V)
        self.evals += 1
        self.last = (v.copy(), F, G)
        if not np.isfinite(F) or not np.all(np.isfinite(G)):
            # R's optim stops with "L-BFGS-B needs finite values of 'fn'"
            raise FloatingPointError("L-BFGS-B needs finite values of 'fn'")
        return -F, -G.ravel(order="F")


def _greedy_order(V: np.ndarray, p: Problem, nbin, compat, threads, ws: Optional[Workspace] = None) -> list:
    """R's column order: forward selection by l (lam = 0, bandwidths 1), ties to the first.

    ws: the fit's workspace, if its tables are V's (R's binned objective);
    the column passes reuse its scratch for the subsets (the others)."""
    ndim = V.shape[1]
    chosen: list = []
    remaining = list(range(ndim))
    tables = None
    if nbin is not None and compat == "R":
        # a column's grid densities do not depend on the others: built once
        tables = None if ws is None else ws.tables
        if tables is None:
            tables = grid_tables(_ksum.project(p.X, V, threads), p, nbin, False, threads)
        logprior = np.log(p.PI)
    while remaining:
        if tables is not None:
            scores = tables.subset_values(chosen, remaining, logprior)
        else:
            scores = [evaluate(np.ascontiguousarray(V[:, chosen + [j]]), p, nbin, compat, False, threads, ws)[0]
                      for j in remaining]
        best = int(np.argmax(scores))  # first of the maxima
        chosen.append(remaining.pop(best))
    return chosen


def _blas_single_thread():
    """A context that keeps BLAS on one thread: OpenBLAS's idle threads spin,
    and would take the cores from the compiled core's OpenMP threads (a fit
    ran 8 times slower at n = 1e4). It also makes a fit independent of the BLAS
    thread count."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # threadpoolctl comes with scikit-learn; without it, do nothing
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


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
    threads: Optional[int] = None,
    callback: Optional[Callable[[int, float, float], None]] = None,
) -> OPNBModel:
    """Fit an Optimal Projections Naive Bayes model, as R's ``OPNB()``.

    Steps (R OPNB 1.0): labels to factor levels; centre by column means; divide
    by column sds (n - 1; a column with sd < 1e-20 is zeroed) when ``scale``;
    priors n_k / n; start V = the first ``ndim`` eigenvectors of cov (or
    ``V0(Xs, y, ndim)``); bandwidth 1 for every class; maximise
    ``l(V) - lam * pen(V)`` (pen = sum(V^2), or sum_t v_t' C(Xs, y) v_t) with
    L-BFGS-B (memory 5, at most 100 iterations, factr 1e7, pgtol 0); order the
    columns greedily by l; normalise columns (bandwidths h_k / ||v_t||) and
    fold the scaling into V.

    Parameters
    ----------
    X : (n, d) array-like or DataFrame. y : (n,) labels of any kind.
    ndim : columns of V, 1..d (default min(d, 20)). R fails at ndim = 1; we do not.
    lam : penalty, > 0. V0 : None, a function (Xs, y_codes, ndim) -> (d, ndim),
    or a (d, ndim) matrix. scale : scale columns to unit sd.
    nbin : bins per projected column, or None for exact sums.
    C : None or a function (Xs, y_codes) -> symmetric (d, d) penalty matrix.
    correct : optimise the paper's objective (priors once) instead of R's.
    threads : threads for the columns of V (default: all cores).
    callback : called after each L-BFGS iteration with (iteration, objective, gradient norm).
    """
    with _blas_single_thread():
        return _fit(X, y, ndim, lam, V0, scale, nbin, C, correct, threads, callback)


def _fit(X, y, ndim, lam, V0, scale, nbin, C, correct, threads, callback) -> OPNBModel:
    Xa = _check_X(X, "X")
    n, d = Xa.shape
    levels, codes = factor(y)
    if codes.size != n:
        raise ValueError(f"y has {codes.size} labels but X has {n} rows")
    K = levels.size
    if K < 2:
        raise ValueError(f"y must have at least two classes, found {K}")
    nd = _check_ndim(ndim, d)
    lam_v = _check_lam(lam)
    nbin_v = as_nbin(nbin)
    compat = "correct" if correct else "R"
    thr = default_threads() if threads is None else max(1, int(threads))

    mu, scales, Xs = r_standardise(Xa, scale)
    counts = np.bincount(codes, minlength=K)
    PI = counts / n
    y0 = codes.astype(np.int32)
    y1 = codes + 1
    problem = check_problem(Xs, y0, PI, np.ones(K))

    V = _start(V0, Xs, y1, nd)
    pen, dpen = _penalty(C, Xs, y1, d)
    obj = _Objective(problem, d, nd, lam_v, pen, dpen, nbin_v, compat, thr)

    iteration = [0]

    def _cb(intermediate_result):
        iteration[0] += 1
        if callback is not None:
            # the accepted point is the last one L-BFGS-B evaluated
            x, F, G = obj.last
            if not np.array_equal(x, intermediate_result.x):
                F, G = obj(intermediate_result.x)
                F, G = -F, -G
            callback(iteration[0], float(F), float(np.linalg.norm(G)))

    try:
        res = minimize(obj, V.ravel(order="F"), jac=True, method="L-BFGS-B", options=_LBFGS, callback=_cb)
        convergence = 0 if res.success else (1 if res.nit >= _LBFGS["maxiter"] else 52)
        Vopt = obj.unflat(res.x)
    except FloatingPointError as exc:
        warnings.warn(f"optimisation failed ({exc}); returning the initial projection", RuntimeWarning,
                      stacklevel=2)
        Vopt = V
        convergence = 52
    if obj.last is not None and np.array_equal(obj.last[0], Vopt.ravel(order="F")):
        fval = obj.last[1]  # the optimiser's last evaluation was at Vopt
    else:
        fval = obj.value(Vopt)
    # either way the workspace now holds Vopt's tables (R's binned objective)
    order = _greedy_order(Vopt, problem, nbin_v, compat, thr, obj.ws)
    Vopt = Vopt[:, order]
    norms = np.linalg.norm(Vopt, axis=0)
    if np.any(norms == 0):
        raise ValueError("a column of V is zero: the projection is degenerate (check V0 and C)")
    h = np.outer(np.ones(K), 1.0 / norms)
    Vout = (Vopt / norms) * scales[:, None]
    return OPNBModel(V=Vout, X=Xa, y=y1, PI=PI, h=h, nc=K, mu=mu, scales=scales, ynames=levels,
                     lam=lam_v, fval=float(fval), feature_names=_column_names(X), convergence=convergence)


# ---------------------------------------------------------------------------
# prediction
# ---------------------------------------------------------------------------

def _class_log_densities(model: OPNBModel, pte: np.ndarray, ptr: np.ndarray, ndim: int, log: bool) -> np.ndarray:
    """[m, K]: log f_k (log=True) or the product densities f_k, per R's predict."""
    K = model.nc
    y0 = np.asarray(model.y, dtype=np.int64) - 1
    out = np.zeros((pte.shape[0], K)) if log else np.ones((pte.shape[0], K))
    for k in range(K):
        pk = ptr[y0 == k]
        nk = pk.shape[0]
        if nk == 0:
            raise ValueError(f"class {model.ynames[k]!r} has no training points in the model")
        for t in range(ndim):
            hkt = float(model.h[k, t])
            w = np.full((nk, 1), 1.0 / (nk * hkt))
            if log:
                L, _ = _ksum.exact_sums(np.ascontiguousarray(pk[:, t]), w, hkt, _DEFAULT_BETA,
                                        np.ascontiguousarray(pte[:, t]), True, False, True)
                out[:, k] += L[:, 0]
            else:
                S, _ = _ksum.exact_sums(np.ascontiguousarray(pk[:, t]), w, hkt, _DEFAULT_BETA,
                                        np.ascontiguousarray(pte[:, t]), True, False)
                out[:, k] *= S[:, 0]
    return out


def _check_model(model: Any) -> OPNBModel:
    if isinstance(model, OPNBModel):
        return model
    raise ValueError(f"model must be an OPNBModel (from OPNB() or pyopnb.read_rds), got {type(model).__name__}")


def predict(model: OPNBModel, Xte: Any, ndim: Optional[int] = None, *, log: bool = False) -> Dict[str, np.ndarray]:
    """Posterior class probabilities and classes for new data, as R's ``predict.OPNB``.

    R multiplies the class densities of the columns; a product that underflows
    (or is not positive) becomes machine epsilon, so far-away points get a
    uniform posterior and the first class (SPEC defect 4). ``log=True`` sums
    log densities instead (computed in log space, never underflowing) and also
    returns ``log_posterior``.

    Returns a dict with ``posterior`` (m, K) and ``class`` (m,) of labels.
    """
    model = _check_model(model)
    d, full = model.V.shape
    nd = full if ndim is None else _check_ndim(ndim, full)
    Xa = _check_X(Xte, "Xte", d)
    V = model.V[:, :nd]
    ptr = (model.X - model.mu) @ V
    pte = (Xa - model.mu) @ V
    if log:
        logden = np.log(model.PI) + _class_log_densities(model, pte, ptr, nd, True)
        logpost = logden - logsumexp(logden, axis=1, keepdims=True)
        post = np.exp(logpost)
        cls = model.ynames[np.argmax(logden, axis=1)]
        return {"posterior": post, "class": cls, "log_posterior": logpost}
    den = model.PI * _class_log_densities(model, pte, ptr, nd, False)
    den = np.where(np.isnan(den) | (den <= 0), _MACHINE_EPS, den)
    post = den / den.sum(axis=1, keepdims=True)
    return {"posterior": post, "class": model.ynames[np.argmax(post, axis=1)]}
