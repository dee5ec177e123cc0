"""Friedman-style regularised discriminant analysis."""
from __future__ import annotations

import numpy as np
import scipy.linalg

from ._base import ClassDensityClassifier
from .._validation import label_text


class RDA(ClassDensityClassifier):
    """Gaussian class densities with covariance lam Sigma_k + (1 - lam) Sigma_W.

    ``lam = 0`` is linear discriminant analysis, ``lam = 1`` quadratic
    discriminant analysis (the paper's grid: 0.1, 0.2, ..., 1). As in the
    paper both covariances are maximum-likelihood estimates: Sigma_k =
    (1/n_k) sum_{i in k} (x_i - mu_k)(x_i - mu_k)' and the pooled
    Sigma_W = sum_k (n_k / n) Sigma_k, so the two ends are scikit-learn's
    LinearDiscriminantAnalysis and (from scikit-learn 1.9, whose QDA divides
    by n_k) QuadraticDiscriminantAnalysis(reg_param=0).

    ``reg`` adds reg * (mean variance) to the diagonal of every class
    covariance (a ridge); its default, 1e-6, is the study's, so constant or
    collinear features and classes with fewer rows than features still give
    a density. With ``reg=0`` a class covariance that is singular is an
    error naming the class and suggesting ``reg``, never a silent
    pseudo-inverse.

    Parameters
    ----------
    lam : float, default 0.5
        The weight of the class covariance, in [0, 1].
    reg : float, default 1e-6
        The ridge, >= 0, as a multiple of the mean variance.
    """

    def __init__(self, lam: float = 0.5, reg: float = 1e-6):
        self.lam = lam
        self.reg = reg

    def _fit_densities(self, X: np.ndarray, codes: np.ndarray) -> None:
        lam, reg = float(self.lam), float(self.reg)
        if not 0.0 <= lam <= 1.0:
            raise ValueError(f"lam must be in [0, 1], got {label_text(self.lam)}")
        if not (np.isfinite(reg) and reg >= 0):
            raise ValueError(f"reg must be a finite number >= 0, got {label_text(self.reg)}")
        K, d = self.classes_.size, X.shape[1]
        n = X.shape[0]
        self.means_ = np.array([X[codes == k].mean(axis=0) for k in range(K)])
        R = X - self.means_[codes]
        Sw = R.T @ R / n
        self.chol_ = []
        self.log_det_ = np.empty(K)
        for k in range(K):
            Rk = R[codes == k]
            nk = Rk.shape[0]
            Sk = Rk.T @ Rk / nk if lam > 0 else 0.0
            S = lam * Sk + (1.0 - lam) * Sw
            if reg > 0:
                S = S + reg * np.trace(S) / d * np.eye(d)
            try:
                L = scipy.linalg.cholesky(S, lower=True)
            except scipy.linalg.LinAlgError:
                L = None
            diag = np.abs(np.diag(L)) if L is not None else np.zeros(1)
            if L is None or diag.min() <= 1e-7 * diag.max():
                raise ValueError(f"the covariance of class {label_text(self.classes_[k])} (lam = {lam:g}) is singular or "
                                 f"nearly so (constant or collinear features?): give reg > 0, e.g. reg=1e-3")
            self.chol_.append(L)
            self.log_det_[k] = 2.0 * np.sum(np.log(np.diag(L)))

    def _log_densities(self, X: np.ndarray) -> np.ndarray:
        K, d = self.classes_.size, X.shape[1]
        out = np.empty((X.shape[0], K))
        for k in range(K):
            U = scipy.linalg.solve_triangular(self.chol_[k], (X - self.means_[k]).T, lower=True)
            out[:, k] = -0.5 * (np.sum(U * U, axis=0) + self.log_det_[k] + d * np.log(2 * np.pi))
        return out
