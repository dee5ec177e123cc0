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

from . import _lbfgsb, _linalg, _passes, _project
from ._validation import align_columns, as_nbin, as_positive_scalar, column_names
from .formulation import JournalFormulation, RFormulation
from .naive_bayes import class_log_densities
from . import _threads
from .objective import Problem, Workspace, grid_tables

__all__ = ["OPNBModel", "OPNB", "opnb_journal", "predict", "factor"]

# optim's L-BFGS-B defaults, as R's OPNB calls it
_LBFGS = dict(m=5, factr=1e7, pgtol=0.0, maxit=100)
_MACHINE_EPS = np.finfo(float).eps
# R's optim codes for L-BFGS-B
_CONVERGENCE = {0: "converged", 1: "iteration limit reached", 52: "line search failed"}


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

    Beyond R's fields:

    feature_names : the training columns' names (a DataFrame's, or the
        command line's), or None. Test data with names is matched to them by
        name, in any order.
    convergence : L-BFGS-B's outcome, in R's ``optim`` codes: 0 converged;
        1 stopped at the iteration limit (100, as R); 52 the line search
        failed (the last V may not be a local optimum: try a larger ``lam``,
        exact sums with ``nbin=None``, more bins, or another start ``V0``).
        A fit that ends with 52 warns.
    target : the name of the label column the command line trained on, or
        None; a test file that still holds it is read without it.
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
    target: Optional[str] = field(default=None, compare=False)

    _EXTRA = ("feature_names", "convergence", "target")  # not R's fields

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
        """Projections ``(X - mu) @ V`` of raw data (summed in R's order)."""
        Xa = _check_X(X, "Xte", self.V.shape[0], self.feature_names)
        return _projection(Xa, self.mu, self.V)

    def __repr__(self) -> str:
        return (f"OPNBModel(d={self.V.shape[0]}, ndim={self.ndim}, classes={list(self.ynames)}, "
                f"lam={self.lam:g}, fval={self.fval:.6g}, convergence={self.convergence} "
                f"({_CONVERGENCE.get(self.convergence, 'unknown code')}))")


def _projection(X: np.ndarray, mu: np.ndarray, V: np.ndarray) -> np.ndarray:
    """(X - mu) V [m, ndim] as R's sweep(X, 2, mu) %*% V: each entry summed
    over the features in order (the same bits on every CPU)."""
    return np.ascontiguousarray(_project.project(np.ascontiguousarray(X - mu), np.ascontiguousarray(V),
                                                 _threads.resolve()).T)


def _check_X(X: Any, name: str, d: Optional[int] = None,
             expected: Optional[Sequence[str]] = None) -> np.ndarray:
    """A finite float64 matrix; names the first bad column.

    With ``expected`` (the training columns' names) a DataFrame's columns are
    matched by name, in any order (see :func:`pyopnb._validation.feature_order`).
    """
    names = column_names(X)
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
    if names is not None and expected is not None:
        Xa = align_columns(Xa, names, expected, name)
        names = tuple(expected)
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
    """The formulation's objective on a flattened (column-major, as R) V, for
    the optimiser: l(V) - lam pen(V), or the normalised l(V-bar)."""

    def __init__(self, form, setup, d, ndim, nbin, threads):
        # validated once by the fit, not at each of the optimiser's evaluations
        self.problem = setup.problem
        self.form = form
        self.setup = setup
        self.ws = Workspace()
        self.d, self.ndim = d, ndim
        self.nbin, self.threads = nbin, threads
        self.evals = 0
        self.last = None

    def unflat(self, v: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(v.reshape(self.d, self.ndim, order="F"))

    def likelihood(self, V: np.ndarray, gradient: bool):
        """The formulation's l (no penalty) at V, of any number of columns, and its gradient."""
        return self.form.likelihood(V, self.problem, self.nbin, gradient, self.threads, self.ws)

    def _evaluate(self, V: np.ndarray, gradient: bool):
        st = self.setup
        f, g = self.likelihood(V, gradient)
        if st.pen is not None:
            f = f - st.lam * st.pen(V)
            if gradient:
                g = g - st.lam * st.dpen(V)
        return f, g

    def value(self, V: np.ndarray) -> float:
        return self._evaluate(V, False)[0]

    def __call__(self, v: np.ndarray) -> Tuple[float, np.ndarray]:
        V = self.unflat(v)
        try:
            F, G = self._evaluate(V, True)
        except ValueError as exc:  # a zero column of the normalised objective
            raise FloatingPointError(str(exc)) from None
        self.evals += 1
        self.last = (v.copy(), F, G)
        if not np.isfinite(F) or not np.all(np.isfinite(G)):
            # R's optim stops with "L-BFGS-B needs finite values of 'fn'"
            raise FloatingPointError("L-BFGS-B needs finite values of 'fn'")
        return -F, -G.ravel(order="F")


def _greedy_order(V: np.ndarray, p: Problem, nbin, compat, threads, ws: Optional[Workspace],
                  likelihood: Callable[[np.ndarray], float]) -> list:
    """R's column order: forward selection by l (lam = 0), ties to the first.

    likelihood: the formulation's l of a subset of V's columns. R's binned
    objective instead reads the subsets' values off the columns' grid tables
    (ws's, if they are V's)."""
    ndim = V.shape[1]
    chosen: list = []
    remaining = list(range(ndim))
    tables = None
    if nbin is not None and compat == "R":
        # a column's grid densities do not depend on the others: built once
        tables = None if ws is None else ws.tables
        if tables is None:
            tables = grid_tables(_project.project(p.X, V, threads), p, nbin, False, threads)
        logprior = _linalg.c_log_array(p.PI)
    while remaining:
        if tables is not None:
            scores = tables.subset_values(chosen, remaining, logprior)
        else:
            scores = [likelihood(np.ascontiguousarray(V[:, chosen + [j]])) for j in remaining]
        best = int(np.argmax(scores))  # first of the maxima
        chosen.append(remaining.pop(best))
    return chosen


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
    threads : threads for every parallel step (default: ``PYOPNB_NUM_THREADS``,
        else OpenMP's setting, ``OMP_NUM_THREADS`` or threadpoolctl's, else
        every core this process may use; -1: every core). Results do not
        depend on it.
    callback : called after each L-BFGS iteration with (iteration, objective, gradient norm).
    """
    form = RFormulation(lam=_check_lam(lam), V0=V0, C=C, scale=scale, correct=correct)
    return _fit(X, y, ndim, nbin, threads, callback, form)


def opnb_journal(
    X: Any,
    y: Any,
    ndim: Optional[int] = None,
    gamma: float = 1.0,
    nbin: Optional[int] = 1000,
    prescale: bool = False,
    V0: Union[None, Callable, np.ndarray] = None,
    threads: Optional[int] = None,
    callback: Optional[Callable[[int, float, float], None]] = None,
) -> OPNBModel:
    """Fit OPNB as published (the journal version of the paper).

    Each variable is centred and divided by its training sd (constant ones
    zeroed); with ``prescale`` the data are then multiplied by
    Sigma_W^(-1/2), the pooled within-class covariance's inverse square root
    (pseudo-inverse where singular). Class k gets the bandwidth
    h_k = 0.54 gamma (trace(Sigma_k)/p)^(1/2) n_k^(-1/5) on every projected
    column. L-BFGS-B (as :func:`OPNB`) maximises the mean log-likelihood at
    V with unit-norm columns (priors once, no penalty; exact sums with
    ``nbin=None``, else linear binning with densities at the points, and
    its exact gradient), from LDA's discriminant directions completed by
    principal components (or ``V0``). Columns are then ordered greedily by
    the same objective, as R orders its own.

    Returns an :class:`OPNBModel` that :func:`predict`, :func:`pyopnb.plot.plot`,
    :func:`pyopnb.write_rds` (and R's ``predict.OPNB``) and the command line
    take as they are: V maps raw data, ``h[k, t]`` = h_k (V's columns have
    unit norm in the scaled data), ``lam`` = 0, ``fval`` the mean
    log-likelihood.

    Parameters
    ----------
    X, y : data and labels, as :func:`OPNB`. ndim : columns, 1..d (default min(d, 20)).
    gamma : bandwidth multiplier > 0 (the paper's grid: 1/3, 1/2, 1, 2, 3).
    nbin : bins per projected column, or None for exact sums.
    prescale : multiply the scaled data by Sigma_W^(-1/2) first.
    V0 : None (LDA start), a (d, ndim) matrix or a function (Xs, y_codes, ndim).
    threads, callback : as :func:`OPNB`.
    """
    form = JournalFormulation(gamma=gamma, prescale=prescale, V0=V0)
    return _fit(X, y, ndim, nbin, threads, callback, form)


def _fit(X, y, ndim, nbin, threads, callback, form) -> OPNBModel:
    """The optimiser's driver: the formulation gives everything else."""
    Xa = _check_X(X, "X")
    n, d = Xa.shape
    levels, codes = factor(y)
    if codes.size != n:
        raise ValueError(f"y has {codes.size} labels but X has {n} rows")
    K = levels.size
    if K < 2:
        raise ValueError(f"y must have at least two classes, found {K}")
    nd = _check_ndim(ndim, d)
    nbin_v = as_nbin(nbin)
    thr = _threads.resolve(threads)
    # BLAS on one thread: OpenBLAS's idle threads spin and would take the
    # cores from the core's OpenMP threads (a fit ran 8 times slower at
    # n = 1e4); X'dZ is parallel by blocks instead (objective._gradient_in_V)
    with _threads.using(thr):
        return _drive(X, Xa, codes, levels, nd, nbin_v, thr, callback, form)


def _drive(X, Xa, codes, levels, nd, nbin_v, thr, callback, form) -> OPNBModel:
    d, K = Xa.shape[1], levels.size
    st = form.setup(Xa, codes, levels, nd)
    problem = st.problem
    V = st.V
    obj = _Objective(form, st, d, nd, nbin_v, thr)

    def _cb(iteration: int, x: np.ndarray, f: float, g: np.ndarray) -> None:
        if callback is not None:
            callback(iteration, -float(f), float(np.sqrt(_linalg.r_sum(g * g))))

    try:
        res = _lbfgsb.minimize(obj, V.ravel(order="F"), callback=_cb, **_LBFGS)
        convergence = res["convergence"]
        Vopt = obj.unflat(res["x"])
    except FloatingPointError as exc:
        warnings.warn(f"optimisation failed ({exc}); returning the initial projection", RuntimeWarning,
                      stacklevel=4)
        Vopt = V
        convergence = 52
    if convergence == 52:
        why = (" With R's binned objective this is common, and R's OPNB stops at the same point: its "
               "gradient is not the exact derivative of its binned value." if st.compat == "R" and nbin_v else "")
        warnings.warn(
            "OPNB: L-BFGS-B stopped because its line search failed (convergence code 52, as R's optim "
            "reports it): the projection may not be a local optimum of the objective." + why + " Try "
            + ("a larger lam, " if st.pen is not None else "") + "exact sums (nbin=None), more bins, or another "
            "start V0.", RuntimeWarning, stacklevel=4)
    if obj.last is not None and np.array_equal(obj.last[0], Vopt.ravel(order="F")):
        fval = obj.last[1]  # the optimiser's last evaluation was at Vopt
    else:
        fval = obj.value(Vopt)
    norms = _linalg.col_norms(Vopt)
    if np.any(norms == 0):
        raise ValueError("a column of V is zero: the projection is degenerate (check V0 and C)")
    Vopt, norms = form.final_columns(Vopt, norms)
    # R's binned objective: the workspace now holds Vopt's tables either way
    order = _greedy_order(Vopt, problem, nbin_v, st.compat, thr, obj.ws, lambda W: obj.likelihood(W, False)[0])
    Vopt, norms = Vopt[:, order], norms[order]
    h = np.outer(problem.h, 1.0 / norms)
    Vn = Vopt / norms
    if st.T is not None:
        Vn = _linalg.matmul(st.T, Vn)
    Vout = Vn * st.scales[:, None]
    return OPNBModel(V=Vout, X=Xa, y=codes + 1, PI=problem.PI, h=h, nc=K, mu=st.mu, scales=st.scales,
                     ynames=levels, lam=st.lam, fval=float(fval), feature_names=column_names(X),
                     convergence=convergence)


# ---------------------------------------------------------------------------
# prediction
# ---------------------------------------------------------------------------

def _class_log_densities(model: OPNBModel, pte: np.ndarray, ptr: np.ndarray, ndim: int, log: bool) -> np.ndarray:
    """[m, K]: log f_k (log=True) or the product densities f_k, per R's predict."""
    y0 = np.asarray(model.y, dtype=np.int64) - 1
    counts = np.bincount(y0, minlength=model.nc)
    if np.any(counts == 0):
        raise ValueError(f"class {model.ynames[int(np.argmin(counts))]!r} has no training points in the model")
    return class_log_densities(ptr[:, :ndim], y0, model.nc, model.h[:, :ndim], pte[:, :ndim], log)


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
    Xa = _check_X(Xte, "Xte", d, model.feature_names)
    V = np.ascontiguousarray(model.V[:, :nd])
    ptr = _projection(model.X, model.mu, V)
    pte = _projection(Xa, model.mu, V)
    if log:
        logden = _linalg.c_log_array(model.PI) + _class_log_densities(model, pte, ptr, nd, True)
        logpost, post = _passes.posteriors(np.ascontiguousarray(logden), _threads.resolve())
        cls = model.ynames[np.argmax(logden, axis=1)]
        return {"posterior": post, "class": cls, "log_posterior": logpost}
    den = model.PI * _class_log_densities(model, pte, ptr, nd, False)
    lost = np.isnan(den) | (den <= 0)
    n_lost = int(lost.all(axis=1).sum())
    if n_lost:
        # R's numbers keep R's defect; the user should learn that log=True has none
        warnings.warn(
            f"predict: every class density of {n_lost} of {den.shape[0]} rows underflowed to 0; as R does, "
            f"they become machine epsilon, so those rows get a uniform posterior and the first class. "
            f"predict(..., log=True) computes in log space and has no such rows.", RuntimeWarning, stacklevel=2)
    den = np.ascontiguousarray(np.where(lost, _MACHINE_EPS, den))
    post = den / _linalg.r_rowsums(den)[:, None]
    return {"posterior": post, "class": model.ynames[np.argmax(post, axis=1)]}
