"""The formulations of OPNB that one fit driver optimises.

Each formulation says how the data are scaled, which bandwidths the classes
get, where L-BFGS-B starts, what it maximises, and how the optimum becomes a
model's V and h; :func:`pyopnb.model._fit` only drives the optimiser (as
scikit-learn's LDA dispatches on its ``solver``).

``RFormulation``
    R OPNB 1.0 (the penalised formulation of arXiv v1): centred and scaled
    data, bandwidth 1 for every class, start at the leading eigenvectors of
    cov, maximise l(V) - lam pen(V); ``correct=True`` counts the priors once.
``JournalFormulation``
    The method as published (the journal version, section 2 and section 4.2
    item 8): l at V with unit-norm columns (no penalty, priors once), class
    bandwidths h_k = 0.54 gamma (trace(Sigma_k)/p)^(1/2) n_k^(-1/5), start at
    LDA's discriminant directions completed by principal components, and
    optionally data pre-scaled by Sigma_W^(-1/2) (the paper's remedy on
    Hill-Valley, section 4.5).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple

import numpy as np

from . import _linalg, _project, _threads
from ._validation import as_positive_scalar
from .objective import Problem, Workspace, check_problem, evaluate, evaluate_normalised

__all__ = ["RFormulation", "JournalFormulation", "Setup", "lda_start", "journal_bandwidths", "within_between",
           "r_colmeans", "r_sd", "r_standardise"]

# the journal's constant for the kernel (1 + |x|) exp(-|x|) (its footnote 3)
_SILVERMAN_054 = 0.54
# eigenvalues of a covariance below this share of the largest count as zero
_RANK_TOL = 1e-10
# R's OPNB: an sd below this zeroes a column
_SD_ZERO = 1e-20


@dataclass
class Setup:
    """What a formulation hands the driver: the data as optimised, the start
    V, the objective's terms, and how to map the optimum back to raw data.

    T : (d, d) matrix such that projections of the scaled data are
    ``Xs_raw_scaled @ T @ V``, or None for the identity (pre-scaling).
    """

    mu: np.ndarray
    scales: np.ndarray
    T: Optional[np.ndarray]
    problem: Problem
    V: np.ndarray
    lam: float
    pen: Optional[Callable[[np.ndarray], float]]
    dpen: Optional[Callable[[np.ndarray], np.ndarray]]
    compat: str


def within_between(Xs: np.ndarray, codes: np.ndarray, K: int) -> Tuple[np.ndarray, np.ndarray]:
    """Sigma_W, the pooled within-class covariance (1/n) sum (x_i - mu_{y_i})(x_i - mu_{y_i})',
    and Sigma_B = (1/n) sum_k n_k (mu_k - mu)(mu_k - mu)'; Sigma_W + Sigma_B is
    the total (biased) covariance. Every sum runs over the rows in order
    (:mod:`pyopnb._linalg`), so the bits do not depend on the CPU."""
    n = Xs.shape[0]
    thr = _threads.resolve()
    counts = np.bincount(codes, minlength=K)
    onehot = np.zeros((n, K))
    onehot[np.arange(n), codes] = 1.0
    means = _linalg.crossprod(onehot, Xs, thr) / counts[:, None]
    R = np.ascontiguousarray(Xs - means[codes])
    Sw = _linalg.crossprod(R, R, thr) / n
    M = np.ascontiguousarray(means - _linalg.r_colsums(np.ascontiguousarray(Xs)) / n)
    Sb = _linalg.crossprod(np.ascontiguousarray(M * counts[:, None]), M, thr) / n
    return (Sw + Sw.T) / 2, (Sb + Sb.T) / 2


def _inv_sqrt(S: np.ndarray) -> Tuple[np.ndarray, int]:
    """S^(-1/2) on the range of a symmetric PSD matrix (a pseudo-inverse square
    root: eigenvalues under 1e-10 of the largest count as zero), and S's rank."""
    vals, vecs = _linalg.eigh(S)
    keep = vals > _RANK_TOL * max(vals.max(), 0.0) if vals.size else np.zeros(0, bool)
    U = vecs[:, keep]
    return _linalg.matmul(U / np.sqrt(vals[keep]), U.T), int(keep.sum())


def lda_start(Xs: np.ndarray, codes: np.ndarray, K: int, ndim: int) -> np.ndarray:
    """The journal's start: the leading eigenvectors of Sigma_W^-1 Sigma_B
    (LDA's discriminant directions, at most K - 1 of them), then, when ndim is
    larger, the leading principal components of the data projected onto the
    null space of those directions. Columns have unit norm.

    A singular Sigma_W (constant or collinear columns, p > n) is handled by
    working on its range: the directions are those of its pseudo-inverse,
    Sigma_W^+ Sigma_B, so no direction along which the classes do not vary is
    ever divided by zero, and the principal components fill the rest.
    Eigenvectors come from :func:`pyopnb._linalg.eigh` (its sign convention:
    each vector's largest entry positive), products in a fixed order.
    """
    d = Xs.shape[1]
    thr = _threads.resolve()
    Xs = np.ascontiguousarray(Xs, dtype=np.float64)
    Sw, Sb = within_between(Xs, codes, K)
    W, _ = _inv_sqrt(Sw)
    vals, vecs = _linalg.eigh(_linalg.matmul(_linalg.matmul(W, Sb), W))
    top = max(vals[0], 0.0) if vals.size else 0.0
    r = int(min(ndim, K - 1, np.sum(vals > _RANK_TOL * top))) if top > 0 else 0
    D = _linalg.matmul(W, vecs[:, :r])
    if r:
        D /= _linalg.col_norms(D)
    if r == ndim:
        return np.ascontiguousarray(D)
    # principal components of the data with the discriminant directions projected out
    Q = _linalg.orthonormal(D) if r else np.zeros((d, 0))
    Xp = np.ascontiguousarray(Xs - _linalg.matmul(_linalg.matmul(Xs, Q, thr), Q.T, thr)) if r else Xs
    C = _linalg.r_cov(Xp, thr)
    pvals, pvecs = _linalg.eigh(C)
    # the PCs are orthogonal to Q where C has rank; make sure, then complete
    P = pvecs - _linalg.matmul(Q, _linalg.crossprod(Q, pvecs, thr)) if r else pvecs
    norms = _linalg.col_norms(P)
    cols = [P[:, j] / norms[j] for j in range(d) if norms[j] > 1e-8][: ndim - r]
    V = np.column_stack([D] + cols) if cols else D
    if V.shape[1] < ndim:
        raise ValueError(f"ndim = {ndim} exceeds the {V.shape[1]} directions the data span")
    return np.ascontiguousarray(V)


def journal_bandwidths(Xs: np.ndarray, codes: np.ndarray, K: int, gamma: float,
                       levels: Optional[np.ndarray] = None) -> np.ndarray:
    """h_k = 0.54 gamma (trace(Sigma_k) / p)^(1/2) n_k^(-1/5): Sigma_k the
    sample covariance (n_k - 1) of class k, p the number of columns that vary
    (zeroed constant columns are not counted). One bandwidth per class,
    used on every projected column. Variances as R's var (long double)."""
    thr = _threads.resolve()
    Xs = np.ascontiguousarray(Xs, dtype=np.float64)
    p = int(np.sum(_project.r_var(Xs, thr) > 0)) if Xs.shape[0] > 1 else 0
    p = p or Xs.shape[1]
    h = np.empty(K)
    for k in range(K):
        Xk = np.ascontiguousarray(Xs[codes == k])
        name = levels[k] if levels is not None else k
        if Xk.shape[0] < 2:
            raise ValueError(f"class {name!r} has {Xk.shape[0]} row: the journal bandwidth needs at least 2 "
                             f"rows of every class")
        tr = _linalg.r_sum(_project.r_var(Xk, thr))
        if not tr > 0:
            raise ValueError(f"class {name!r} does not vary (all its rows are equal): its bandwidth would be 0")
        h[k] = _SILVERMAN_054 * gamma * np.sqrt(tr / p) * Xk.shape[0] ** -0.2
    return h


# ---------------------------------------------------------------------------
# R's data scaling, start and penalty (R OPNB 1.0's steps 2-5)
# ---------------------------------------------------------------------------

def r_colmeans(X: np.ndarray) -> np.ndarray:
    """R's colMeans: each column summed left to right in long double, over n."""
    return _project.r_colmeans(np.ascontiguousarray(X, dtype=np.float64), _threads.resolve())


def r_sd(X: np.ndarray) -> np.ndarray:
    """R's sd per column: a refined long-double mean, then a long-double sum of
    squared deviations over n - 1, all summed left to right. Matching R to
    the bit matters: the start's eigenvector signs, and so R's binned fits,
    can change with an ulp of the scaled data."""
    return _project.r_sd(np.ascontiguousarray(X, dtype=np.float64), _threads.resolve())


def r_standardise(X: np.ndarray, scale: bool = True) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """R OPNB's steps 2-3, to the bit: (mu, scales, Xs).

    mu = colMeans(X); scales = 1/sd of the centred columns (0 for sd < 1e-20,
    1 if not scale); Xs = (X - mu) * scales. R multiplies by 1/sd: dividing
    changes Xs by an ulp here and there, which can flip the sign of an
    eigenvector of the start, and R's binned objective tells signs apart.
    """
    n, d = X.shape
    thr = _threads.resolve()
    mu = r_colmeans(X)
    Xc = np.empty((n, d))

    def centre(s: int, e: int) -> None:
        np.subtract(X[s:e], mu, out=Xc[s:e])

    _threads.for_blocks(n, centre, thr)  # elementwise: the same bits on any blocks
    if scale:
        sd = r_sd(Xc) if n > 1 else np.zeros(d)
        scales = np.where(sd < _SD_ZERO, 0.0, 1.0 / np.where(sd < _SD_ZERO, 1.0, sd))

        def rescale(s: int, e: int) -> None:
            np.multiply(Xc[s:e], scales, out=Xc[s:e])

        _threads.for_blocks(n, rescale, thr)
    else:
        scales = np.ones(d)
    return mu, scales, Xc


def _penalty(C: Optional[Callable], Xs: np.ndarray, y1: np.ndarray, d: int):
    """pen(V) and its gradient, as R computes them: sum(V^2) (in long
    double, over V's entries column by column), or the sum over columns of
    t(v) %*% Cmat %*% v; and 2 V or 2 Cmat %*% V (products in R's order)."""
    if C is None:
        return (lambda V: _linalg.r_sum(np.ravel(V * V, order="F"))), (lambda V: 2.0 * V)
    Cmat = np.asarray(C(Xs, y1), dtype=np.float64)
    if Cmat.shape != (d, d):
        raise ValueError(f"C must return a {d} x {d} matrix (d = columns of X), got shape {Cmat.shape}")
    if not np.all(np.isfinite(Cmat)):
        raise ValueError("C returned a matrix with NaN or infinite values")
    if not np.allclose(Cmat, Cmat.T, rtol=1e-12, atol=1e-14 * max(1.0, np.abs(Cmat).max())):
        raise ValueError("C must return a symmetric matrix")
    Cmat = np.ascontiguousarray(Cmat)

    def pen(V: np.ndarray) -> float:
        return _linalg.r_sum([_linalg.matmul(_linalg.matmul(V[None, :, t], Cmat), V[:, t:t + 1])[0, 0]
                              for t in range(V.shape[1])])

    return pen, (lambda V: 2.0 * _linalg.matmul(Cmat, V))


def _start(V0: Any, Xs: np.ndarray, y1: np.ndarray, ndim: int) -> np.ndarray:
    d = Xs.shape[1]
    if V0 is None:
        # the first ndim eigenvectors of R's cov(Xs), by decreasing eigenvalue.
        # R's eigen (LAPACK's dsyevr) picks each column's sign as its build
        # does; ours are fixed by _linalg.eigh's convention (largest entry
        # positive). R's binned objective tells signs apart: to reproduce an R
        # fit to the bit, pass R's start as V0
        vals, vecs = _linalg.eigh(_linalg.r_cov(np.ascontiguousarray(Xs), _threads.resolve()))
        return np.ascontiguousarray(vecs[:, :ndim])
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



@dataclass
class RFormulation:
    """R OPNB 1.0's formulation (see :func:`pyopnb.OPNB`)."""

    lam: float
    V0: Any = None
    C: Optional[Callable] = None
    scale: bool = True
    correct: bool = False

    @property
    def compat(self) -> str:
        return "correct" if self.correct else "R"

    def setup(self, Xa: np.ndarray, codes: np.ndarray, levels: np.ndarray, ndim: int) -> Setup:
        K = levels.size
        mu, scales, Xs = r_standardise(Xa, self.scale)
        PI = np.bincount(codes, minlength=K) / codes.size
        problem = check_problem(Xs, codes.astype(np.int32), PI, np.ones(K))
        y1 = codes + 1
        V = _start(self.V0, Xs, y1, ndim)
        pen, dpen = _penalty(self.C, Xs, y1, Xs.shape[1])
        return Setup(mu, scales, None, problem, V, self.lam, pen, dpen, self.compat)

    def likelihood(self, V: np.ndarray, problem: Problem, nbin: Optional[int], gradient: bool,
                   threads: int, ws: Optional[Workspace]) -> Tuple[float, Optional[np.ndarray]]:
        """l(V) (R's, or with correct=True the paper's) and its gradient in V."""
        return evaluate(V, problem, nbin, self.compat, gradient, threads, ws)

    def final_columns(self, V: np.ndarray, norms: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """The optimum's columns and norms as the model takes them: V's own."""
        return V, norms


@dataclass
class JournalFormulation:
    """The published OPNB (see :func:`pyopnb.opnb_journal`)."""

    gamma: float = 1.0
    prescale: bool = False
    V0: Any = None

    def __post_init__(self) -> None:
        self.gamma = as_positive_scalar(self.gamma, "gamma")

    compat = "correct"

    def setup(self, Xa: np.ndarray, codes: np.ndarray, levels: np.ndarray, ndim: int) -> Setup:
        K = levels.size
        # the paper's protocol: each variable over its training sd (constant ones zeroed)
        mu, scales, Xs = r_standardise(Xa, True)
        T = None
        if self.prescale:
            T, _ = _inv_sqrt(within_between(Xs, codes, K)[0])
            Xs = _linalg.matmul(Xs, T, _threads.resolve())
        h = journal_bandwidths(Xs, codes, K, self.gamma, levels)
        PI = np.bincount(codes, minlength=K) / codes.size
        problem = check_problem(Xs, codes.astype(np.int32), PI, h)
        if self.V0 is None:
            V = lda_start(Xs, codes, K, ndim)
        else:
            V = _start(self.V0, Xs, codes + 1, ndim)
        return Setup(mu, scales, T, problem, V, 0.0, None, None, self.compat)

    def likelihood(self, V: np.ndarray, problem: Problem, nbin: Optional[int], gradient: bool,
                   threads: int, ws: Optional[Workspace]) -> Tuple[float, Optional[np.ndarray]]:
        """l(V-bar), V's columns normalised, and its gradient in V."""
        return evaluate_normalised(V, problem, nbin, gradient, threads, ws)

    def final_columns(self, V: np.ndarray, norms: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """The value is V-bar's: the model (and the greedy order) takes unit columns."""
        return V / norms, np.ones_like(norms)
