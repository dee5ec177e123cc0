"""Linear discriminant analysis's quantities: the within- and between-class
covariances, their discriminant directions, and the journal's start built
from them. Shared by the journal formulation (its start and pre-scaling) and
the LDA comparator; every sum and eigenvector is computed in a fixed order
(:mod:`pyopnb._core.linalg`), so the bits do not depend on the CPU."""
from __future__ import annotations

import math
from typing import Callable, Optional, Tuple

import numpy as np

from . import _threads
from ._core import colstats, linalg as _linalg
from .weights import class_totals, weighted_colmeans, weighted_cov

__all__ = ["within_between", "pooled", "inv_sqrt", "discriminant_directions", "directions_from", "lda_start",
           "start_from"]

# eigenvalues of a covariance below this share of the largest count as zero
RANK_TOL = 1e-10


def within_between(Xs: np.ndarray, codes: np.ndarray, K: int,
                   threads: Optional[int] = None, w: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Sigma_W, the pooled within-class covariance (1/n) sum (x_i - mu_{y_i})(x_i - mu_{y_i})',
    and Sigma_B = (1/n) sum_k n_k (mu_k - mu)(mu_k - mu)'; Sigma_W + Sigma_B is
    the total (biased) covariance. With the points' weights ``w``
    (:mod:`pyopnb.weights`), each point weighs w_i / W and each class W_k / W.
    Every sum runs over the rows in order (:mod:`pyopnb._core.linalg`), so
    the bits do not depend on the CPU."""
    n = Xs.shape[0]
    thr = _threads.resolve(threads)
    onehot = np.zeros((n, K))
    if w is None:
        counts = np.bincount(codes, minlength=K)
        onehot[np.arange(n), codes] = 1.0
        means = _linalg.crossprod(onehot, Xs, thr) / counts[:, None]
        R = np.ascontiguousarray(Xs - means[codes])
        Sw = _linalg.crossprod(R, R, thr) / n
        return pooled(Sw, means, colstats.r_colsums(np.ascontiguousarray(Xs)) / n, counts, n, thr)
    totals = class_totals(codes, K, w)
    W = math.fsum(w)
    onehot[np.arange(n), codes] = w
    means = _linalg.crossprod(onehot, Xs, thr) / totals[:, None]
    R = np.ascontiguousarray(Xs - means[codes])
    Sw = _linalg.crossprod(np.ascontiguousarray(R * w[:, None]), R, thr) / W
    return pooled(Sw, means, weighted_colmeans(Xs, w, thr), totals, W, thr)


def pooled(Sw: np.ndarray, means: np.ndarray, mean: np.ndarray, sizes: np.ndarray, total: float,
           threads: int) -> Tuple[np.ndarray, np.ndarray]:
    """(Sigma_W, Sigma_B) from Sigma_W's sum over the total, the class means
    [K, d], the overall mean and the classes' sizes [K] (counts or weights)
    out of ``total``: each made exactly symmetric."""
    M = np.ascontiguousarray(means - mean)
    Sb = _linalg.crossprod(np.ascontiguousarray(M * sizes[:, None]), M, threads) / total
    return (Sw + Sw.T) / 2, (Sb + Sb.T) / 2


def inv_sqrt(S: np.ndarray) -> Tuple[np.ndarray, int]:
    """S^(-1/2) on the range of a symmetric PSD matrix (a pseudo-inverse square
    root: eigenvalues under 1e-10 of the largest count as zero), and S's rank."""
    vals, vecs = _linalg.eigh(S)
    keep = vals > RANK_TOL * max(vals.max(), 0.0) if vals.size else np.zeros(0, bool)
    U = vecs[:, keep]
    return _linalg.matmul(U / np.sqrt(vals[keep]), U.T), int(keep.sum())


def discriminant_directions(X: np.ndarray, codes: np.ndarray, K: int, threads: Optional[int] = None,
                            w: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
    """LDA's discriminant directions [p, r] and their eigenvalues [r],
    largest first: D = Sigma_W^(+1/2) U with U the eigenvectors of
    Sigma_W^(+1/2) Sigma_B Sigma_W^(+1/2), so that D' Sigma_W D = I (the
    projected classes have unit within-class variance) and D spans the
    leading eigenvectors of Sigma_W^+ Sigma_B. Only the r <= K - 1 directions
    whose eigenvalue exceeds 1e-10 of the largest are kept. Sigma_W's
    pseudo-inverse (on its range) serves where it is singular."""
    return directions_from(*within_between(np.ascontiguousarray(X, dtype=np.float64), codes, K, threads, w), K)


def directions_from(Sw: np.ndarray, Sb: np.ndarray, K: int) -> Tuple[np.ndarray, np.ndarray]:
    """:func:`discriminant_directions` from Sigma_W and Sigma_B."""
    W, _ = inv_sqrt(Sw)
    vals, vecs = _linalg.eigh(_linalg.matmul(_linalg.matmul(W, Sb), W))
    top = max(vals[0], 0.0) if vals.size else 0.0
    r = int(min(K - 1, np.sum(vals > RANK_TOL * top))) if top > 0 else 0
    return _linalg.matmul(W, vecs[:, :r]), vals[:r]


def lda_start(Xs: np.ndarray, codes: np.ndarray, K: int, ndim: int, threads: Optional[int] = None,
              w: Optional[np.ndarray] = None) -> np.ndarray:
    """The journal's start: the leading eigenvectors of Sigma_W^-1 Sigma_B
    (LDA's discriminant directions, at most K - 1 of them), then, when ndim is
    larger, the leading principal components of the data projected onto the
    null space of those directions. Columns have unit norm.

    A singular Sigma_W (constant or collinear columns, p > n) is handled by
    working on its range: the directions are those of its pseudo-inverse,
    Sigma_W^+ Sigma_B, so no direction along which the classes do not vary is
    ever divided by zero, and the principal components fill the rest.
    Eigenvectors come from :func:`pyopnb._core.linalg.eigh` (its sign convention:
    each vector's largest entry positive), products in a fixed order.
    """
    thr = _threads.resolve(threads)
    Xs = np.ascontiguousarray(Xs, dtype=np.float64)

    def cov_without(Q: Optional[np.ndarray]) -> np.ndarray:
        Xp = np.ascontiguousarray(Xs - _linalg.matmul(_linalg.matmul(Xs, Q, thr), Q.T, thr)) if Q is not None else Xs
        return colstats.r_cov(Xp, thr) if w is None else weighted_cov(Xp - weighted_colmeans(Xp, w, thr), w, thr)

    return start_from(discriminant_directions(Xs, codes, K, thr, w)[0], Xs.shape[1], ndim, cov_without, thr)


def start_from(D: np.ndarray, d: int, ndim: int, cov_without: Callable[[Optional[np.ndarray]], np.ndarray],
               threads: int) -> np.ndarray:
    """:func:`lda_start` from the discriminant directions D [d, r] and
    ``cov_without(Q)``, the data's covariance with the columns of Q
    projected out (None: the data's own)."""
    D = np.ascontiguousarray(D[:, :ndim])
    r = D.shape[1]
    if r:
        D /= colstats.col_norms(D)
    if r == ndim:
        return np.ascontiguousarray(D)
    # principal components of the data with the discriminant directions projected out
    Q = _linalg.orthonormal(D) if r else np.zeros((d, 0))
    C = cov_without(Q if r else None)
    pvals, pvecs = _linalg.eigh(C)
    # the PCs are orthogonal to Q where C has rank; make sure, then complete
    P = pvecs - _linalg.matmul(Q, _linalg.crossprod(Q, pvecs, threads)) if r else pvecs
    norms = colstats.col_norms(P)
    cols = [P[:, j] / norms[j] for j in range(d) if norms[j] > 1e-8][: ndim - r]
    V = np.column_stack([D] + cols) if cols else D
    if V.shape[1] < ndim:
        raise ValueError(f"ndim = {ndim} exceeds the {V.shape[1]} directions the data span")
    return np.ascontiguousarray(V)
