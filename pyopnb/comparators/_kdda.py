"""Kernel density discriminant analysis with diagonal Gaussian bandwidths."""
from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import logsumexp

from ._base import ClassDensityClassifier, binary_columns, positive

# test rows per block: a block's distances to a class (rows x n_k doubles) stay
# near 8 MB at n_k = 3000
_BLOCK = 384


class KDDA(ClassDensityClassifier):
    """Multivariate kernel density estimate of each class, Gaussian product
    kernel, a diagonal bandwidth matrix per class (the papers' KDDA).

    Class k's bandwidths: on the continuous features
    gamma (4 / (n_k (p_c + 2)))^(1 / (p_c + 4)) sd_kj (Silverman's rule for a
    Gaussian kernel in p_c dimensions, sd_kj the class's sd of feature j); on
    the binary (one-hot) features ``alpha``. Densities are summed in log space
    (a log-sum-exp over the class's rows), in blocks of test rows, so nothing
    underflows and memory stays bounded.

    A class's feature that does not vary gets the sd of the whole training
    column there; a column constant over all rows is left out of every class
    density alike.

    Parameters
    ----------
    gamma : float, default 1.0
        Multiplier (> 0) of the continuous features' bandwidths (the paper's
        grid: 1/3, 1/2, 1, 2, 3).
    alpha : float, default 0.3
        Bandwidth (> 0) of the binary features (grid: 0.1, 0.2, ..., 0.5).
    binary : "auto", None, boolean mask or column indices, default "auto"
        Which features are binary; "auto": those whose training values are
        all 0 or 1.
    """

    def __init__(self, gamma: float = 1.0, alpha: float = 0.3, binary: Any = "auto"):
        self.gamma = gamma
        self.alpha = alpha
        self.binary = binary

    def _fit_densities(self, X: np.ndarray, codes: np.ndarray) -> None:
        gamma = positive(self.gamma, "gamma")
        alpha = positive(self.alpha, "alpha")
        self.binary_ = binary_columns(X, self.binary)
        whole = X.std(axis=0, ddof=1) if X.shape[0] > 1 else np.zeros(X.shape[1])
        self.used_ = self.binary_ | (whole > 0)
        cont = ~self.binary_ & self.used_
        pc = int(cont.sum())
        K = self.classes_.size
        H = np.ones((K, X.shape[1]))
        for k in range(K):
            Xk = X[codes == k]
            nk = Xk.shape[0]
            sd = Xk.std(axis=0, ddof=1) if nk > 1 else np.zeros(X.shape[1])
            sd = np.where(sd > 0, sd, whole)
            H[k, cont] = gamma * (4.0 / (nk * (pc + 2))) ** (1.0 / (pc + 4)) * sd[cont]
            H[k, self.binary_] = alpha
        self.bandwidths_ = H
        self._X, self._codes = X[:, self.used_].copy(), codes

    def _log_densities(self, X: np.ndarray) -> np.ndarray:
        X = X[:, self.used_]
        K, p = self.classes_.size, X.shape[1]
        out = np.empty((X.shape[0], K))
        for k in range(K):
            h = self.bandwidths_[k, self.used_]
            A = self._X[self._codes == k] / h
            a2 = np.sum(A * A, axis=1)
            const = -np.log(A.shape[0]) - np.sum(np.log(h)) - 0.5 * p * np.log(2 * np.pi)
            for i0 in range(0, X.shape[0], _BLOCK):
                B = X[i0:i0 + _BLOCK] / h
                # squared distances by the expansion (BLAS); rounding can make one slightly negative
                D2 = np.maximum(np.sum(B * B, axis=1)[:, None] + a2[None, :] - 2.0 * (B @ A.T), 0.0)
                out[i0:i0 + _BLOCK, k] = logsumexp(-0.5 * D2, axis=1) + const
        return out
