"""One evaluator per fit: l(V), its gradient and R's column order, bound once.

A formulation chooses how its objective is computed once, in
``Formulation.evaluator``, and the fit then talks to the :class:`Evaluator`
it returns and to nothing else. The evaluator holds what a fit fixes: the
validated problem (scaled X, 0-based codes, priors, class bandwidths), the
bins (or exact sums), the thread count, and one compiled evaluation of l
(``pyopnb._core``: ExactPasses, LinearGrid for the paper's binned
objective, RGrid for R's, InterpGrid for the journal's) with its scratch
and tables. It knows the V its
state was last computed at, so R's greedy column order reads the tables of
the V it is asked about, never stale ones.

The compiled evaluations share one interface, :class:`CoreEvaluator` (``pyopnb._core.evaluator``):
``evaluate(Zt, gradient)`` gives l and n dl/dZ' at Z' = (X V)', and
``subset_values`` the greedy order's values. A formulation of one's own that
needs new arithmetic subclasses it (in Python or Cython) and hands an
instance to :class:`Evaluator`.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

from ._core import colstats, linalg, project
from ._core.evaluator import CoreEvaluator
from ._core.interp_grid import InterpGrid
from ._core.r_grid import RGrid
from ._core.exact import ExactPasses
from ._core.linear import LinearGrid
from ._core.scratch import pooled
from .ksum import DEFAULT_BETA

__all__ = ["Problem", "check_problem", "check_V", "Evaluator", "NormalisedEvaluator", "CoreEvaluator",
           "exact_passes", "linear_passes", "r_grid", "interp_grid", "greedy", "GRID_EPS"]

# R's f_NB_cpp / df_NB_cpp widen the grid of each projected column by this much.
GRID_EPS = 1e-8


@dataclass(frozen=True)
class Problem:
    """Validated inputs: X [n, d] (scaled), y0 [n] (0-based), PI [K], h [K],
    and the points' weights w [n] (None: every point weighs 1)."""

    X: np.ndarray
    y0: np.ndarray
    PI: np.ndarray
    h: np.ndarray
    w: Optional[np.ndarray] = None

    @property
    def K(self) -> int:
        return self.PI.size

    @functools.cached_property
    def W(self) -> float:
        """The points' total weight, correctly rounded (math.fsum): n without
        weights. Summed once: every gradient divides by it."""
        return float(self.X.shape[0]) if self.w is None else math.fsum(self.w)


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


def check_problem(X: Any, y0: Any, PI: Any, h: Any, w: Any = None) -> Problem:
    """Validate the scaled data, 0-based codes, priors, per-class bandwidths
    and the points' weights (None, or positive and finite: a fit drops the
    rows of weight 0 before)."""
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
    wa = None
    if w is not None:
        wa = _finite_array(w, "w", 1)
        if wa.size != n:
            raise ValueError(f"w must have one weight per row of X ({n}), got {wa.size}")
        if np.any(wa <= 0):
            raise ValueError("w must be strictly positive (drop the rows of weight 0)")
    return Problem(Xa, np.ascontiguousarray(yi, dtype=np.int32), PIa, ha, wa)


def check_V(V: Any, d: int) -> np.ndarray:
    """V as a C-contiguous float64 (d, ndim) matrix with ndim >= 1, finite."""
    Va = _finite_array(V, "V", 2)
    if Va.shape[0] != d:
        raise ValueError(f"V must have {d} rows (columns of X), got {Va.shape[0]}")
    if Va.shape[1] < 1:
        raise ValueError("V must have at least one column")
    return Va


# ---------------------------------------------------------------------------
# the compiled evaluations, with the kernel and grid every formulation uses
# ---------------------------------------------------------------------------

@pooled
def exact_passes(problem: Problem, threads: int, squared_priors: bool = False) -> ExactPasses:
    """Exact sums; ``squared_priors`` for R's f_NB_exact value."""
    return ExactPasses(problem.y0, problem.h, problem.PI, threads, DEFAULT_BETA, squared_priors, problem.w)


@pooled
def linear_passes(problem: Problem, nbin: int, threads: int) -> LinearGrid:
    """The paper's binned value: linear binning, each point's densities
    summed from the binned weights, and its exact gradient."""
    return LinearGrid(problem.y0, problem.h, problem.PI, threads, nbin, DEFAULT_BETA, GRID_EPS, problem.w)


@pooled
def r_grid(problem: Problem, nbin: int, threads: int) -> RGrid:
    """R's binned objective: f_NB_cpp's value and df_NB_cpp's gradient."""
    return RGrid(problem.y0, problem.h, problem.PI, threads, nbin, DEFAULT_BETA, GRID_EPS, problem.w)


@pooled
def interp_grid(problem: Problem, nbin: int, threads: int) -> InterpGrid:
    """The journal's binned objective: grid log densities interpolated at the points."""
    return InterpGrid(problem.y0, problem.h, problem.PI, threads, nbin, DEFAULT_BETA, GRID_EPS, problem.w)


def greedy(ndim: int, values: Callable[[List[int], List[int]], Sequence[float]]) -> List[int]:
    """Forward selection of ndim columns, R's greedy order: each step adds
    the candidate whose value with the chosen ones is largest, the first of
    equal ones. ``values(chosen, remaining)`` gives each remaining
    candidate's value, in their order; it is not asked about the last
    candidate, which comes last whatever its value."""
    chosen: List[int] = []
    remaining = list(range(ndim))
    while len(remaining) > 1:
        best = int(np.argmax(values(chosen, remaining)))  # the first of the maxima
        chosen.append(remaining.pop(best))
    return chosen + remaining


class Evaluator:
    """l(V) of one formulation on one problem, bound once per fit.

    Parameters
    ----------
    problem : the validated problem (:func:`check_problem`).
    core : the compiled evaluation (a :class:`CoreEvaluator`), made for
        this problem and ``threads``.
    nbin : the bins per projected column, or None for exact sums (kept for
        the caller's information; ``core`` already holds them).
    threads : the thread count of the projection and of X' dZ.

    ``value(V)``, ``value_and_grad(V)`` and ``order_columns(V)`` take V of
    any number of columns. The gradient is dl/dV: t(X) %*% dZ / W (W = n
    without weights) summed as R's reference BLAS sums it.
    """

    def __init__(self, problem: Problem, core: CoreEvaluator, nbin: Optional[int], threads: int):
        if not isinstance(core, CoreEvaluator):
            raise TypeError(f"core must be a pyopnb.evaluation.CoreEvaluator, got {type(core).__name__}")
        if core.n != problem.X.shape[0] or core.K != problem.K:
            raise ValueError("core was made for another problem")
        self.problem = problem
        self.core = core
        self.nbin = nbin
        self.threads = threads
        self.most_threads = threads
        self._Zt: Optional[np.ndarray] = None
        # the directions whose Z' the core's scratch and tables hold (None: unknown)
        self._at: Optional[np.ndarray] = None

    def use_threads(self, count: int) -> None:
        """Run the next evaluations on ``count`` threads, at most
        ``most_threads`` (those it was made for). The results do not
        depend on it: a fit may change it between evaluations
        (:class:`pyopnb._threads.Pace`)."""
        self.threads = max(1, min(int(count), self.most_threads))
        self.core.use_threads(self.threads)

    def directions(self, V: np.ndarray) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        """The matrix whose projection l is taken at, and the column norms
        it was divided by (None: V itself)."""
        return V, None

    def _project(self, W: np.ndarray) -> np.ndarray:
        # Z' with R's summation order (project.project), in a buffer kept between evaluations
        self._Zt = project.project(self.problem.X, W, self.threads, out=self._Zt)
        return self._Zt

    @pooled
    def _evaluate(self, V: Any, gradient: bool) -> Tuple[float, Optional[np.ndarray]]:
        Va = np.ascontiguousarray(V, dtype=np.float64)
        W, norms = self.directions(Va)
        Zt = self._project(W)
        self._at = None
        value, dZt = self.core.evaluate(Zt, gradient)
        self._at = W.copy()
        if not gradient:
            return float(value), None
        # t(X) %*% dZ / W, each entry summed over the points in order as R's reference BLAS does
        G = linalg.crossprod_t(self.problem.X, np.ascontiguousarray(dZt), self.threads)
        G /= self.problem.W
        return float(value), self.chain(W, norms, G)

    def chain(self, W: np.ndarray, norms: Optional[np.ndarray], G: np.ndarray) -> np.ndarray:
        """dl/dV from dl/dW (W = :meth:`directions`)."""
        return G

    def value(self, V: Any) -> float:
        """l at V."""
        return self._evaluate(V, False)[0]

    def value_and_grad(self, V: Any) -> Tuple[float, np.ndarray]:
        """l at V and dl/dV, (d, ndim)."""
        value, G = self._evaluate(V, True)
        assert G is not None
        return value, G

    @pooled
    def order_columns(self, V: Any) -> List[int]:
        """R's column order: forward selection by l (lam = 0), ties to the
        first. Each step's values come from the core at V's own Z'."""
        Va = np.ascontiguousarray(V, dtype=np.float64)
        W, _ = self.directions(Va)
        if self._at is None or self._at.shape != W.shape or not np.array_equal(self._at, W):
            self._evaluate(Va, False)
        Zt = self._Zt
        try:
            return greedy(W.shape[1], lambda chosen, remaining: self.core.subset_values(Zt, chosen, remaining))
        finally:
            # the subsets' evaluations may have moved the core's state off V
            self._at = None


class NormalisedEvaluator(Evaluator):
    """The journal paper's objective, eq. (7)-(8): l at V-bar = V
    diag(||V_t||)^-1, and its gradient in V by the chain rule of eq.
    (12)-(13): column t of dl/dV-bar projected off v_t and divided by
    ||v_t||. The value does not change when a column is scaled, so the
    gradient is orthogonal to each column."""

    def directions(self, V: np.ndarray) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        norms = colstats.col_norms(V)
        if np.any(norms == 0):
            raise ValueError("a column of V is zero: the normalised objective is undefined there")
        return V / norms, norms

    def chain(self, W: np.ndarray, norms: Optional[np.ndarray], G: np.ndarray) -> np.ndarray:
        return (G - W * colstats.r_colsums(np.ascontiguousarray(W * G))) / norms
