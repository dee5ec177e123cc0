"""Set-up statistics of rows held in parts, to the bit: R's colMeans, sd,
var and cov, and the journal's class variances and LDA start.

R adds each column over the rows in order, in long double. Rows held in
parts (:mod:`pyopnb.parts`) keep that order when each part carries on the
sums where the part before left them (``colstats.col_sums_from``,
``cov_sums_from``): a chain of small tasks, one a part, passing p (or
d(d+1)/2) long doubles along. So the scaling and the start of a fit on
parts are the single machine's bits, whatever the split, with no change to
the single machine's order. A chain runs its parts one after another: each
statistic is one pass over the data, not a parallel one. The sums that go
by the fixed blocks of rows (``linalg.crossprod``: the LDA's class means
and within-class sums) are each part's blocks' partials, added in block
order.

The rows as a statistic reads them are a :class:`RowMap` of the raw rows:
standardised, pre-scaled, with directions projected out, of one class.

:class:`PartRows` reaches the parts: ``chain(step, acc, *args)`` returns
``step(X_k, y_k, ..., step(X_0, y_0, acc, *args, threads) ..., *args, threads)``
over the parts' raw rows X_0, X_1, ... and their class codes, in row order,
and ``each(step, *args)`` the list of ``step(X_i, y_i, *args, threads)``
in part order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

from ._core import colstats, eigen as _eigen, linalg as _linalg
from .formulation import r_scales

__all__ = ["RowMap", "PartRows", "LocalRows", "standardised", "sums_step", "cov_step", "r_scaling", "r_var",
           "r_colsums", "r_cov", "r_start", "within_between", "lda_start"]


class PartRows:
    """The raw rows of a problem in parts, and their class codes: the
    passes the set-up makes over them (see the module's docstring)."""

    def chain(self, step: Callable[..., Any], acc: Any, *args: Any) -> Any:
        raise NotImplementedError

    def each(self, step: Callable[..., Any], *args: Any) -> List[Any]:
        raise NotImplementedError


class LocalRows(PartRows):
    """Parts' rows held here, in order: X_0, X_1, ... and their 0-based codes y_0, y_1, ..."""

    def __init__(self, parts: Sequence[np.ndarray], codes: Sequence[np.ndarray], threads: int = 1):
        if len(parts) != len(codes):
            raise ValueError(f"{len(parts)} parts of rows but {len(codes)} of codes")
        self.parts, self.codes, self.threads = list(parts), list(codes), threads

    def chain(self, step: Callable[..., Any], acc: Any, *args: Any) -> Any:
        for X, y0 in zip(self.parts, self.codes):
            acc = step(X, y0, acc, *args, self.threads)
        return acc

    def each(self, step: Callable[..., Any], *args: Any) -> List[Any]:
        return [step(X, y0, *args, self.threads) for X, y0 in zip(self.parts, self.codes)]


@dataclass(frozen=True, eq=False)
class RowMap:
    """The rows as a statistic or a fit reads them: (X - mu) * scales (mu
    None: X; scales None: not multiplied), times ``prescale`` where given,
    less their projection on the orthonormal columns of ``Q`` where given;
    of class ``k`` alone where given. Each step is the single machine's
    (``formulation.r_standardise``, the journal's pre-scaling,
    ``discriminant.lda_start``'s), row by row."""

    mu: Optional[np.ndarray] = None
    scales: Optional[np.ndarray] = None
    prescale: Optional[np.ndarray] = None
    Q: Optional[np.ndarray] = None
    k: Optional[int] = None

    def __call__(self, X: np.ndarray, y0: Optional[np.ndarray] = None, threads: int = 1) -> np.ndarray:
        if self.k is not None:
            if y0 is None:
                raise ValueError("a class's rows need the rows' codes")
            X = X[np.asarray(y0) == self.k]
        Xs = standardised(X, self.mu, self.scales, threads)
        if self.prescale is not None:
            Xs = _linalg.matmul(Xs, self.prescale, threads)
        if self.Q is not None:
            Xs = np.ascontiguousarray(Xs - _linalg.matmul(_linalg.matmul(Xs, self.Q, threads), self.Q.T, threads))
        return np.ascontiguousarray(Xs)

    def of_class(self, k: int) -> "RowMap":
        """The same map of class k's rows alone."""
        return RowMap(self.mu, self.scales, self.prescale, self.Q, k)

    def without(self, Q: Optional[np.ndarray]) -> "RowMap":
        """The same map less the projection on Q's columns (None: as it is)."""
        return self if Q is None else RowMap(self.mu, self.scales, self.prescale, Q, self.k)

    def apply(self, X: np.ndarray, threads: int = 1) -> np.ndarray:
        """The map of rows whatever their classes (a dask chunk's ``map_blocks``)."""
        return self(X, None, threads)


def standardised(X: np.ndarray, mu: Optional[np.ndarray], scales: Optional[np.ndarray], threads: int = 1
                 ) -> np.ndarray:
    """(X - mu) * scales as ``formulation.r_standardise`` forms it (mu None:
    X; scales None: not multiplied)."""
    Xa = np.ascontiguousarray(X, dtype=np.float64)
    if mu is None:
        return Xa
    Xc = np.empty_like(Xa)
    colstats.sweep(Xa, np.asarray(mu, dtype=np.float64), Xc, True, threads)
    if scales is not None:
        colstats.sweep(Xc, np.asarray(scales, dtype=np.float64), Xc, False, threads)
    return Xc


def sums_step(X: np.ndarray, y0: np.ndarray, acc: np.ndarray, rows: RowMap, centre: Optional[np.ndarray],
              square: bool, threads: int = 1) -> np.ndarray:
    """A part's step of a column sum: its rows (as ``rows`` maps them) less
    centre, squared if square, added on to acc."""
    return colstats.col_sums_from(rows(X, y0, threads), acc, centre, square, threads)


def cov_step(X: np.ndarray, y0: np.ndarray, acc: np.ndarray, rows: RowMap, m: np.ndarray,
             threads: int = 1) -> np.ndarray:
    """A part's step of cov's sums of products of deviations from m."""
    return colstats.cov_sums_from(rows(X, y0, threads), m, acc, threads)


def _r_means(parts: PartRows, n: int, d: int, rows: RowMap) -> np.ndarray:
    """R's MEAN of each column (long double): the sum over n, refined once by
    the mean deviation from it."""
    N = np.longdouble(n)
    m = parts.chain(sums_step, np.zeros(d, dtype=np.longdouble), rows, None, False) / N
    return m + parts.chain(sums_step, np.zeros(d, dtype=np.longdouble), rows, m, False) / N


def r_colsums(parts: PartRows, d: int, rows: RowMap = RowMap()) -> np.ndarray:
    """R's colSums of the mapped rows (``colstats.r_colsums``)."""
    return parts.chain(sums_step, np.zeros(d, dtype=np.longdouble), rows, None, False).astype(np.float64)


def r_var(parts: PartRows, n: int, d: int, rows: RowMap = RowMap()) -> np.ndarray:
    """R's var of each column of the n mapped rows (``colstats.r_var``): the
    refined mean rounded to double, then the squared deviations from it
    over n - 1."""
    if n < 2:
        raise ValueError("var needs at least two rows")
    m = _r_means(parts, n, d, rows).astype(np.float64).astype(np.longdouble)
    ss = parts.chain(sums_step, np.zeros(d, dtype=np.longdouble), rows, m, True)
    return (ss / np.longdouble(n - 1)).astype(np.float64)


def r_scaling(parts: PartRows, n: int, d: int, scale: bool = True, names: Optional[Tuple[str, ...]] = None
              ) -> Tuple[np.ndarray, np.ndarray]:
    """(mu, scales) of ``formulation.r_standardise``, unweighted: R's
    colMeans, and 1/sd of the centred columns (0 for sd < 1e-20; 1 if not
    scale)."""
    mu = (parts.chain(sums_step, np.zeros(d, dtype=np.longdouble), RowMap(), None, False)
          / np.longdouble(n)).astype(np.float64)
    if not scale:
        return mu, np.ones(d)
    sd = np.zeros(d) if n < 2 else np.sqrt(r_var(parts, n, d, RowMap(mu)))
    return mu, r_scales(sd, names)


def r_cov(parts: PartRows, n: int, d: int, rows: RowMap = RowMap()) -> np.ndarray:
    """R's cov of the n mapped rows, as ``colstats.r_cov``."""
    if n < 2:
        raise ValueError("cov needs at least two rows")
    m = _r_means(parts, n, d, rows).astype(np.float64)
    acc = parts.chain(cov_step, np.zeros(d * (d + 1) // 2, dtype=np.longdouble), rows, m)
    vals = (acc / np.longdouble(n - 1)).astype(np.float64)
    C = np.empty((d, d))
    pr = 0
    for i in range(d):
        for j in range(i + 1):
            C[i, j] = C[j, i] = vals[pr]
            pr += 1
    return C


def r_start(parts: PartRows, n: int, d: int, ndim: int, rows: RowMap) -> np.ndarray:
    """R's start on the mapped rows: the leading ndim eigenvectors of
    their cov, as R's eigen computes them (``formulation.r_start``)."""
    _, vecs = _eigen.r_eigen(r_cov(parts, n, d, rows))
    return np.ascontiguousarray(vecs[:, :ndim])


def _class_sums_step(X: np.ndarray, y0: np.ndarray, rows: RowMap, K: int, block_len: int,
                     threads: int = 1) -> np.ndarray:
    # the part's blocks' partials of crossprod(onehot, Xs): each class's column sums
    Xs = rows(X, y0, threads)
    onehot = np.zeros((Xs.shape[0], K))
    onehot[np.arange(Xs.shape[0]), y0] = 1.0
    return _linalg.crossprod_t(onehot, np.ascontiguousarray(Xs.T), threads, block_len=block_len)


def _within_step(X: np.ndarray, y0: np.ndarray, rows: RowMap, means: np.ndarray, block_len: int,
                 threads: int = 1) -> np.ndarray:
    # the part's blocks' partials of crossprod(R, R), R the rows less their class's mean
    R = np.ascontiguousarray(rows(X, y0, threads) - means[y0])
    return _linalg.crossprod_t(R, np.ascontiguousarray(R.T), threads, block_len=block_len)


def within_between(parts: PartRows, n: int, d: int, counts: np.ndarray, rows: RowMap, block_len: int,
                   threads: int = 1) -> Tuple[np.ndarray, np.ndarray]:
    """``discriminant.within_between`` of the mapped rows (unweighted), the
    parts' blocks of ``block_len`` rows (those of n) added in block order."""
    from .discriminant import pooled
    from .parts import add_blocks

    counts = np.asarray(counts)
    K = counts.size
    means = add_blocks(np.concatenate(parts.each(_class_sums_step, rows, K, block_len))) / counts[:, None]
    Sw = add_blocks(np.concatenate(parts.each(_within_step, rows, means, block_len))) / n
    return pooled(Sw, means, r_colsums(parts, d, rows) / n, counts, n, threads)


def lda_start(parts: PartRows, n: int, d: int, counts: np.ndarray, ndim: int, rows: RowMap, block_len: int,
              threads: int = 1) -> np.ndarray:
    """``discriminant.lda_start`` on the mapped rows (unweighted)."""
    from .discriminant import directions_from, start_from

    D, _ = directions_from(*within_between(parts, n, d, counts, rows, block_len, threads), np.asarray(counts).size)
    return start_from(D, d, ndim, lambda Q: r_cov(parts, n, d, rows.without(Q)), threads)
