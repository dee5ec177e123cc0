"""R's set-up statistics of rows held in parts, to the bit: colMeans, sd, cov.

R adds each column over the rows in order, in long double. Rows held in
parts (:mod:`pyopnb.parts`) keep that order when each part carries on the
sums where the part before left them (``colstats.col_sums_from``,
``cov_sums_from``): a chain of small tasks, one a part, passing p (or
d(d+1)/2) long doubles along. So the scaling and the start of a fit on
parts are R's and the single machine's bits, whatever the split, with no
change to the single machine's order. A chain runs its parts one after
another: each statistic is one pass over the data, not a parallel one.

A *chain* is a callable ``chain(step, acc, *args)`` that returns
``step(X_k, ..., step(X_1, step(X_0, acc, *args), *args) ..., *args)``
over the parts' rows X_0, X_1, ... in row order.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np

from ._core import colstats, eigen as _eigen
from .formulation import r_scales

__all__ = ["standardised", "sums_step", "cov_step", "local_chain", "r_scaling", "r_cov", "r_start"]

Chain = Callable[..., np.ndarray]


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


def sums_step(X: np.ndarray, acc: np.ndarray, mu: Optional[np.ndarray], scales: Optional[np.ndarray],
              centre: Optional[np.ndarray], square: bool, threads: int = 1) -> np.ndarray:
    """A part's step of a column sum: its rows (standardised by mu and
    scales) less centre, squared if square, added on to acc."""
    return colstats.col_sums_from(standardised(X, mu, scales, threads), acc, centre, square, threads)


def cov_step(X: np.ndarray, acc: np.ndarray, mu: Optional[np.ndarray], scales: Optional[np.ndarray],
             m: np.ndarray, threads: int = 1) -> np.ndarray:
    """A part's step of cov's sums of products of deviations from m."""
    return colstats.cov_sums_from(standardised(X, mu, scales, threads), m, acc, threads)


def local_chain(parts: Sequence[np.ndarray], threads: int = 1) -> Chain:
    """The chain over parts' rows held here, in order."""

    def chain(step: Callable[..., np.ndarray], acc: np.ndarray, *args: Any) -> np.ndarray:
        for X in parts:
            acc = step(X, acc, *args, threads)
        return acc

    return chain


def _r_means(chain: Chain, n: int, d: int, mu: Optional[np.ndarray], scales: Optional[np.ndarray]
             ) -> np.ndarray:
    """R's MEAN of each column (long double): the sum over n, refined once by
    the mean deviation from it."""
    N = np.longdouble(n)
    m = chain(sums_step, np.zeros(d, dtype=np.longdouble), mu, scales, None, False) / N
    return m + chain(sums_step, np.zeros(d, dtype=np.longdouble), mu, scales, m, False) / N


def r_scaling(chain: Chain, n: int, d: int, scale: bool = True, names: Optional[Tuple[str, ...]] = None
              ) -> Tuple[np.ndarray, np.ndarray]:
    """(mu, scales) of ``formulation.r_standardise``, unweighted: R's
    colMeans, and 1/sd of the centred columns (0 for sd < 1e-20; 1 if not
    scale)."""
    mu = (chain(sums_step, np.zeros(d, dtype=np.longdouble), None, None, None, False)
          / np.longdouble(n)).astype(np.float64)
    if not scale:
        return mu, np.ones(d)
    if n < 2:
        sd = np.zeros(d)
    else:
        # R's var: the refined mean rounded to double, then the squared deviations from it over n - 1
        m = _r_means(chain, n, d, mu, None).astype(np.float64).astype(np.longdouble)
        ss = chain(sums_step, np.zeros(d, dtype=np.longdouble), mu, None, m, True)
        sd = np.sqrt((ss / np.longdouble(n - 1)).astype(np.float64))
    return mu, r_scales(sd, names)


def r_cov(chain: Chain, n: int, d: int, mu: Optional[np.ndarray] = None, scales: Optional[np.ndarray] = None
          ) -> np.ndarray:
    """R's cov of the parts' rows (standardised by mu and scales), as
    ``colstats.r_cov``."""
    if n < 2:
        raise ValueError("cov needs at least two rows")
    m = _r_means(chain, n, d, mu, scales).astype(np.float64)
    acc = chain(cov_step, np.zeros(d * (d + 1) // 2, dtype=np.longdouble), mu, scales, m)
    vals = (acc / np.longdouble(n - 1)).astype(np.float64)
    C = np.empty((d, d))
    pr = 0
    for i in range(d):
        for j in range(i + 1):
            C[i, j] = C[j, i] = vals[pr]
            pr += 1
    return C


def r_start(chain: Chain, n: int, d: int, ndim: int, mu: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """R's start on the standardised rows: the leading ndim eigenvectors of
    their cov, as R's eigen computes them (``formulation.r_start``)."""
    _, vecs = _eigen.r_eigen(r_cov(chain, n, d, mu, scales))
    return np.ascontiguousarray(vecs[:, :ndim])
