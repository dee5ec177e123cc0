"""OPNB's objective l(V) and its gradient, as R's internal functions.

``l(V) = (1/n) sum_i [log(PI_{y_i} f_{y_i}(z_i)) - log(sum_k PI_k f_k(z_i))]``
with ``z_i = V' x_i``, ``f_k(z) = prod_t f_kt(z_t)`` and
``f_kt(x) = 1/(n_k h_k) sum_{j: y_j = k} K((x - z_jt) / h_k)``, K the default
kernel ``(1 + |u|) exp(-|u|) / 4``. No penalty here (see :mod:`pyopnb.model`).

Two behaviours, chosen by ``compat`` (:class:`Behaviour` objects, which the
formulations hold):

``"R"``
    R OPNB 1.0's numbers, defects included: ``f_NB_exact`` squares the priors;
    ``f_NB_cpp`` bins linearly and reads each point's density at its grid point,
    while ``df_NB_cpp`` bins simply and differentiates at the grid positions,
    so it is not the gradient of ``f_NB_cpp``.
``"correct"``
    The paper's l(V), priors once. Binned: linear binning, densities summed
    exactly at each point from the binned weights, and a gradient that is the
    exact derivative of that value (through the binning fractions and the
    grid's ends too).

A point's class densities are multiplied over the columns, each product
logged before it could underflow (see _simd.h's pyopnb_products), and the
posteriors are combined in log space: no class density rounds to 0 in a
product, and one that is 0 gives ``-inf``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Tuple

import numpy as np

from . import _grid, _linalg, _passes, _project, _threads
from ._validation import as_nbin
from .ksum import DEFAULT_BETA

__all__ = ["f_NB_exact", "df_NB_exact", "f_NB_cpp", "df_NB_cpp", "f_NB_normalised", "df_NB_normalised",
           "objective_and_gradient", "Compat", "Behaviour", "R_BEHAVIOUR", "CORRECT_BEHAVIOUR",
           "INTERPOLATED_BEHAVIOUR"]

Compat = Literal["R", "correct"]


@dataclass(frozen=True)
class Behaviour:
    """How l(V) is computed, as a formulation asks for it.

    squared_priors: R's exact value multiplies by PI_k twice (its gradient
    does not). binned: where binned densities are read: ``"grid"``, at each
    point's grid point (R's f_NB_cpp / df_NB_cpp, _grid.RGridTables);
    ``"points"``, summed from the binned weights at each point (the paper's,
    _passes' linear mode); ``"interpolated"``, the grid's log densities
    interpolated at each point (the journal's, _grid.InterpGridTables)."""

    squared_priors: bool
    binned: Literal["grid", "points", "interpolated"]


R_BEHAVIOUR = Behaviour(squared_priors=True, binned="grid")
CORRECT_BEHAVIOUR = Behaviour(squared_priors=False, binned="points")
INTERPOLATED_BEHAVIOUR = Behaviour(squared_priors=False, binned="interpolated")
# R's compat= argument, at the public functions' boundary
_COMPAT = {"R": R_BEHAVIOUR, "correct": CORRECT_BEHAVIOUR}

# R's f_NB_cpp / df_NB_cpp widen the grid of each projected column by this much.
_GRID_EPS = 1e-8


@dataclass(frozen=True)
class Problem:
    """Validated inputs: X [n, d], y0 [n] (0-based), PI [K], h [K]."""

    X: np.ndarray
    y0: np.ndarray
    PI: np.ndarray
    h: np.ndarray

    @property
    def K(self) -> int:
        return self.PI.size


def _finite_array(value: Any, name: str, ndim: int) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric") from None
    if ndim == 2 and arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return np.ascontiguousarray(arr)


def check_problem(X: Any, y0: Any, PI: Any, h: Any) -> Problem:
    """Validate the scaled data, 0-based codes, priors and per-class bandwidths."""
    Xa = _finite_array(X, "X", 2)
    n = Xa.shape[0]
    if n == 0:
        raise ValueError("X has no rows")
    PIa = _finite_array(PI, "PI", 1)
    ha = _finite_array(h, "h", 1)
    K = PIa.size
    if K < 1:
        raise ValueError("PI must have one entry per class")
    if ha.size != K:
        raise ValueError(f"h has {ha.size} entries but PI has {K}: give one bandwidth per class")
    if np.any(PIa <= 0):
        raise ValueError("PI must be strictly positive")
    if np.any(ha <= 0):
        raise ValueError("h must be strictly positive")
    ya = np.asarray(y0)
    if ya.ndim != 1 or ya.size != n:
        raise ValueError(f"y0 must be a vector of length {n} (rows of X), got shape {ya.shape}")
    if ya.size and not np.all(np.isfinite(ya.astype(np.float64))):
        raise ValueError("y0 contains NaN or infinite values")
    if not np.all(np.equal(np.mod(ya.astype(np.float64), 1), 0)):
        raise ValueError("y0 must hold integer class codes 0..K-1")
    yi = ya.astype(np.int64)
    if yi.min() < 0 or yi.max() >= K:
        raise ValueError(f"y0 must hold class codes 0..{K - 1} (K = len(PI)); found {yi.min()}..{yi.max()}")
    counts = np.bincount(yi, minlength=K)
    if np.any(counts == 0):
        raise ValueError(f"class(es) {np.flatnonzero(counts == 0).tolist()} have no points")
    return Problem(Xa, np.ascontiguousarray(yi, dtype=np.int32), PIa, ha)


def _check_V(V: Any, d: int) -> np.ndarray:
    Va = _finite_array(V, "V", 2)
    if Va.shape[0] != d:
        raise ValueError(f"V must have {d} rows (columns of X), got {Va.shape[0]}")
    if Va.shape[1] < 1:
        raise ValueError("V must have at least one column")
    return Va


def _new_tables(ndim: int, p: Problem, nbin: int, gradient: bool, threads: int,
                interp: bool) -> "_grid.GridTables":
    kind = _grid.InterpGridTables if interp else _grid.RGridTables
    return kind(ndim, p.y0, p.K, p.h, nbin, _GRID_EPS, DEFAULT_BETA, gradient, threads)


def _tables_for(ws: "Workspace | None", ndim: int, p: Problem, nb: int, gradient: bool, thr: int,
                interp: bool) -> "_grid.GridTables":
    """The workspace's grid tables when they fit this evaluation, else new ones (kept there)."""
    tables = None if ws is None else ws.tables
    if (tables is None or tables.ndim != ndim or tables.nbin != nb or tables.interp != interp
            or (gradient and not tables.has_gradient)):
        tables = _new_tables(ndim, p, nb, gradient, thr, interp)
    if ws is not None:
        ws.tables = tables
    return tables


def grid_tables(Zt: np.ndarray, p: Problem, nbin: int, gradient: bool, threads: int) -> "_grid.RGridTables":
    """R's binned densities of each column of Z at its grid points (see _grid.RGridTables)."""
    return _new_tables(Zt.shape[0], p, nbin, gradient, threads, False).update(Zt)


def _loglik(logf: np.ndarray, y0: np.ndarray, logprior: np.ndarray, threads: int,
            value_logprior: np.ndarray | None = None) -> Tuple[float, np.ndarray]:
    """Mean log-likelihood (with value_logprior when given) and posteriors
    (with logprior) from class log densities, in one pass (C's exp and log:
    no numpy warnings to silence)."""
    value, post = _passes.log_posteriors(logf, y0, np.ascontiguousarray(logprior, dtype=np.float64), threads,
                                         value_logprior)
    return float(value), post


def _behaviour(compat: str) -> Behaviour:
    if compat not in _COMPAT:
        raise ValueError(f"compat must be 'R' or 'correct', got {compat!r}")
    return _COMPAT[compat]


def objective_and_gradient(
    V: Any, X: Any, y0: Any, PI: Any, h: Any, *, nbin: Any = None, compat: Compat = "correct",
    gradient: bool = True, threads: int | None = None,
) -> Tuple[float, np.ndarray | None]:
    """l(V) and, if asked, its d x ndim gradient; ``nbin=None`` for exact sums.

    With ``compat="R"`` these are R's ``f_NB_*`` value and ``df_NB_*`` gradient
    (which, binned, are not consistent with each other; see the module notes).
    """
    behaviour = _behaviour(compat)
    p = check_problem(X, y0, PI, h)
    Va = _check_V(V, p.X.shape[1])
    nb = None if nbin is None else as_nbin(nbin, allow_none=False)
    thr = _threads.resolve(threads)
    # a workspace of its own: the gradient pass reuses the value pass's columns
    return evaluate(Va, p, nb, behaviour, gradient, thr, Workspace())


class Workspace:
    """Buffers that a fit's evaluations share (Z, R's binned tables, the
    column passes' scratch): the same problem, V of the same shape, evaluated
    a hundred times."""

    def __init__(self) -> None:
        self.Zt: np.ndarray | None = None
        self.tables: "_grid.GridTables | None" = None
        self.work: Any = None
        self.work_key: Tuple | None = None
        self.work_problem: Problem | None = None

    def column_work(self, p: Problem, mode: int, nb: int, thr: int) -> Any:
        """The column passes' scratch for this problem and mode (made once)."""
        key = (mode, nb, thr)
        if self.work is None or self.work_key != key or self.work_problem is not p:
            self.work = _passes.column_work(p.y0, p.K, p.h, mode, nb, _GRID_EPS, DEFAULT_BETA, thr)
            self.work_key = key
            self.work_problem = p
        return self.work


def evaluate(Va: np.ndarray, p: Problem, nb: int | None, behaviour: Behaviour, gradient: bool,
             thr: int, ws: Workspace | None = None) -> Tuple[float, np.ndarray | None]:
    """objective_and_gradient on validated input (a fit validates its data
    once), computed as ``behaviour`` says."""
    binned = nb is not None
    Va = np.ascontiguousarray(Va, dtype=np.float64)
    # Z' with R's summation order (see _project.project), columns of Z contiguous
    Zt = _project.project(p.X, Va, thr, out=None if ws is None else ws.Zt)
    if ws is not None:
        ws.Zt = Zt
    logprior = _linalg.c_log_array(p.PI)

    if binned and behaviour.binned != "points":
        # densities read on each column's grid: per-column tables
        tables = _tables_for(ws, Va.shape[1], p, nb, gradient, thr, behaviour.binned == "interpolated")
        tables.update(Zt)
        value, post = tables.value_and_posteriors(logprior, gradient)
        if not gradient:
            return float(value), None
        return float(value), _gradient_in_V(tables.gradient(post), p.X, thr)

    # exact sums, or the correct binned value (linear binning, densities at the points)
    mode, nb = (_passes.MODE_LINEAR, nb) if binned else (_passes.MODE_EXACT, 0)
    work = None if ws is None else ws.column_work(p, mode, nb, thr)
    logf = _passes.log_densities(Zt, p.y0, p.K, p.h, mode, nb, _GRID_EPS, DEFAULT_BETA, thr, work)
    # R's exact value squares the priors, its gradient does not
    squared = behaviour.squared_priors and not binned
    value, post = _loglik(logf, p.y0, logprior, thr, 2 * logprior if squared else None)
    if not gradient:
        return value, None
    dZt = _passes.log_density_gradient(Zt, p.y0, p.K, p.h, mode, nb, _GRID_EPS, post, DEFAULT_BETA, thr, work)
    return value, _gradient_in_V(dZt, p.X, thr)


def evaluate_normalised(Va: np.ndarray, p: Problem, nb: int | None, gradient: bool, thr: int,
                        ws: Workspace | None = None) -> Tuple[float, np.ndarray | None]:
    """The journal paper's objective, eq. (7)-(8): l at V-bar = V diag(||V_t||)^-1
    (priors once), and its gradient in V by the chain rule of eq. (12)-(13):
    column t of dl/dV-bar projected off v_t and divided by ||v_t||. The
    value does not change when a column is scaled, so the gradient is
    orthogonal to each column."""
    norms = _linalg.col_norms(Va)
    if np.any(norms == 0):
        raise ValueError("a column of V is zero: the normalised objective is undefined there")
    Vbar = Va / norms
    # binned: each column's class log densities on its grid (class bandwidths)
    # interpolated at the points, a value that moves smoothly with z
    value, gbar = evaluate(Vbar, p, nb, INTERPOLATED_BEHAVIOUR, gradient, thr, ws)
    if gbar is None:
        return value, None
    return value, (gbar - Vbar * _linalg.r_colsums(np.ascontiguousarray(Vbar * gbar))) / norms


def _normalised(V: Any, X: Any, y0: Any, PI: Any, h: Any, nbin: Any, gradient: bool,
                threads: int | None) -> Tuple[float, np.ndarray | None]:
    p = check_problem(X, y0, PI, h)
    Va = _check_V(V, p.X.shape[1])
    nb = None if nbin is None else as_nbin(nbin, allow_none=False)
    thr = _threads.resolve(threads)
    return evaluate_normalised(Va, p, nb, gradient, thr)


def f_NB_normalised(V: Any, X: Any, y0: Any, PI: Any, h: Any, nbin: Any = None, threads: int | None = None) -> float:
    """The published objective (journal version, eq. 7-8): the mean
    log-likelihood (1/n) l(V-bar), V-bar = V with unit-norm columns, priors
    counted once, class bandwidths h (length K). X already scaled, y0 0-based;
    ``nbin=None`` for exact sums, else each column's class log densities at
    ``nbin`` grid points (linear binning) interpolated linearly at the points."""
    return _normalised(V, X, y0, PI, h, nbin, False, threads)[0]


def df_NB_normalised(V: Any, X: Any, y0: Any, PI: Any, h: Any, nbin: Any = None,
                     threads: int | None = None) -> np.ndarray:
    """The d x ndim gradient in V of :func:`f_NB_normalised`: the exact
    derivative of the value it returns, exact or binned."""
    return _normalised(V, X, y0, PI, h, nbin, True, threads)[1]


def _gradient_in_V(dZt: np.ndarray, X: np.ndarray, thr: int) -> np.ndarray:
    """dl/dV [d, ndim] from n dl/dZ' [ndim, n]: t(X) %*% dZ / n, each entry
    summed over the points in order as R's reference BLAS does (on thr
    threads, the same bits on any)."""
    G = _linalg.crossprod_t(X, np.ascontiguousarray(dZt), thr)
    G /= X.shape[0]
    return G


def f_NB_exact(V: Any, X: Any, y0: Any, PI: Any, h: Any, compat: Compat = "R") -> float:
    """l(V) with exact kernel sums. ``compat="R"`` reproduces R's squared priors."""
    return objective_and_gradient(V, X, y0, PI, h, compat=compat, gradient=False)[0]


def df_NB_exact(V: Any, X: Any, y0: Any, PI: Any, h: Any, compat: Compat = "R") -> np.ndarray:
    """Gradient of l(V) (priors once, as R's df_NB_exact in either mode), d x ndim."""
    return objective_and_gradient(V, X, y0, PI, h, compat=compat)[1]


def f_NB_cpp(V: Any, X: Any, y0: Any, PI: Any, h: Any, nbin: int = 1000, compat: Compat = "R") -> float:
    """l(V) with binned kernel sums on ``nbin`` grid points per projected column."""
    return objective_and_gradient(V, X, y0, PI, h, nbin=as_nbin(nbin, allow_none=False), compat=compat, gradient=False)[0]


def df_NB_cpp(V: Any, X: Any, y0: Any, PI: Any, h: Any, nbin: int = 1000, compat: Compat = "R") -> np.ndarray:
    """Gradient with binned sums: R's simple-binning gradient, or the exact
    derivative of the correct binned value."""
    return objective_and_gradient(V, X, y0, PI, h, nbin=as_nbin(nbin, allow_none=False), compat=compat)[1]
