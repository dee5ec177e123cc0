"""Optimal projections for Gaussian discriminants."""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np
import scipy.linalg
from scipy.optimize import minimize
from scipy.special import logsumexp

from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin

from ._base import ClassDensityClassifier
from .._validation import label_text

_LBFGS = dict(maxcor=5, maxiter=100, ftol=1e7 * np.finfo(float).eps, gtol=0.0)


def _class_moments(X: np.ndarray, codes: np.ndarray, K: int) -> Tuple[np.ndarray, np.ndarray]:
    """Class means [K, p] and maximum-likelihood covariances [K, p, p]."""
    means = np.array([X[codes == k].mean(axis=0) for k in range(K)])
    covs = np.empty((K, X.shape[1], X.shape[1]))
    for k in range(K):
        R = X[codes == k] - means[k]
        covs[k] = R.T @ R / R.shape[0]
    return means, covs


def _projected(V: np.ndarray, means: np.ndarray, covs: np.ndarray, reg: float):
    """Projected means [K, q], covariances V' Sigma_k V (+ the ridge) and their Cholesky factors."""
    q = V.shape[1]
    M = means @ V
    S = np.einsum("pi,kpr,rj->kij", V, covs, V)
    if reg > 0:
        S = S + reg * (np.trace(S, axis1=1, axis2=2) / q)[:, None, None] * np.eye(q)
    return M, S, np.array([scipy.linalg.cholesky(Sk, lower=True) for Sk in S])


def opgd_objective(V: np.ndarray, X: np.ndarray, codes: np.ndarray, log_prior: np.ndarray, means: np.ndarray,
                   covs: np.ndarray, reg: float = 0.0, gradient: bool = True):
    """The mean log-likelihood (1/n) sum_i log P(y_i | z_i) of Gaussian class
    densities on Z = X V (class k: mean V' mu_k, covariance V' Sigma_k V), and
    its p x q gradient in V.

    With a_ik = log pi_k + log N(z_i; V' mu_k, S_k), c_ik = 1{y_i = k} - P_ik,
    r_ik = x_i - mu_k and u_ik = S_k^-1 V' r_ik:
    d a_ik / dV = -Sigma_k V S_k^-1 - r_ik u_ik' + Sigma_k V u_ik u_ik',
    so dl/dV = (1/n) sum_k [-(sum_i c_ik) Sigma_k V S_k^-1 - R_k' (c_k * U_k) + Sigma_k V U_k' (c_k * U_k)]
    (with the ridge, S_k's derivative gains reg/q tr(dS_k) I, added below).
    """
    n, q = X.shape[0], V.shape[1]
    K = log_prior.size
    M, S, L = _projected(V, means, covs, reg)
    Z = X @ V
    a = np.empty((n, K))
    U = []
    for k in range(K):
        D = Z - M[k]
        W = scipy.linalg.solve_triangular(L[k], D.T, lower=True)  # L^-1 d
        a[:, k] = log_prior[k] - 0.5 * np.sum(W * W, axis=0) - np.sum(np.log(np.diag(L[k]))) \
            - 0.5 * q * np.log(2 * np.pi)
        if gradient:
            U.append(scipy.linalg.solve_triangular(L[k].T, W, lower=False).T)  # S^-1 d, [n, q]
    lse = logsumexp(a, axis=1)
    value = float(np.mean(a[np.arange(n), codes] - lse))
    if not gradient:
        return value, None
    P = np.exp(a - lse[:, None])
    C = -P
    C[np.arange(n), codes] += 1.0
    G = np.zeros_like(V)
    for k in range(K):
        ck = C[:, k]
        Uk = U[k]
        Sinv = scipy.linalg.cho_solve((L[k], True), np.eye(q))
        SV = covs[k] @ V
        CU = ck[:, None] * Uk
        # dS-adjoint: the matrix B with d(sum_i c_ik a_ik) = tr(B dS_k) + the mean term
        B = -0.5 * ck.sum() * Sinv + 0.5 * (Uk.T @ CU)
        if reg > 0:
            B = B + (reg / q) * np.trace(B) * np.eye(q)
        R = X - means[k]
        G += -(R.T @ CU) + 2.0 * SV @ B
    return value, G / n


class OPGD(ClassNamePrefixFeaturesOutMixin, TransformerMixin, ClassDensityClassifier):
    """Optimal projections for Gaussian discriminants (the papers' OPGD).

    Gaussian class densities on the projected data Z = X V, their means and
    (maximum-likelihood) covariances computed from Z inside the objective,
    and V chosen to maximise the multinomial log-likelihood of the classes,
    the objective OPNB maximises with kernel densities. L-BFGS-B (as OPNB's
    fit: memory 5, at most ``max_iter`` iterations) starts from LDA's
    discriminant directions completed by principal components (the journal
    paper's start, :func:`pyopnb.formulation.lda_start`); the papers tune
    ``ndim`` over 1..min(p, 20).

    What this follows: the OPNB journal paper's description of OPGD (section
    4.2 item 6: "a Gaussian discriminant model fit to an optimal projection
    of the data, as determined by the same multinomial likelihood objective")
    and the abstract of Hofmeyr, Kamper and Melonas, "Optimal projections for
    Gaussian discriminants" (Advances in Data Analysis and Classification 17,
    2023; arXiv 2004.03294), which was found but whose body could not be read
    here: its parametrisation or start may differ from this one. The
    objective depends on V only through its column space (an invertible
    change of coordinates of Z changes every class density by the same
    Jacobian), so the fitted V is returned with orthonormal columns.

    Parameters
    ----------
    ndim : int or None
        Projection columns, 1..p; None: min(p, 20).
    reg : float >= 0
        A ridge on each projected covariance, reg x (its mean variance), for
        classes with fewer rows than ndim; 0 by default (such a class is then
        an error naming it).
    max_iter : int
        L-BFGS-B iterations at most; ``n_iter_`` says how many ran (at least 1).
    """

    def __init__(self, ndim: Optional[int] = None, reg: float = 0.0, max_iter: int = 100):
        self.ndim = ndim
        self.reg = reg
        self.max_iter = max_iter

    def _fit_densities(self, X: np.ndarray, codes: np.ndarray) -> None:
        from ..formulation import lda_start

        p = X.shape[1]
        q = min(p, 20) if self.ndim is None else int(self.ndim)
        if not 1 <= q <= p:
            raise ValueError(f"ndim must be from 1 to the number of features ({p}), got {label_text(self.ndim)}")
        reg = float(self.reg)
        if not (np.isfinite(reg) and reg >= 0):
            raise ValueError(f"reg must be a finite number >= 0, got {label_text(self.reg)}")
        K = self.classes_.size
        # centre and scale for the optimiser's sake (the objective does not care)
        self.centre_ = X.mean(axis=0)
        sd = X.std(axis=0)
        self.scale_ = np.where(sd > 0, 1.0 / np.where(sd > 0, sd, 1.0), 0.0)
        Xs = (X - self.centre_) * self.scale_
        means, covs = _class_moments(Xs, codes, K)
        V0 = lda_start(Xs, codes, K, q)
        self._check_definite(V0, means, covs, reg)

        def fg(v: np.ndarray):
            V = v.reshape(p, q)
            try:
                f, g = opgd_objective(V, Xs, codes, self.class_log_prior_, means, covs, reg)
            except (np.linalg.LinAlgError, ValueError):
                return np.inf, np.zeros_like(v)
            return -f, -g.ravel()

        res = minimize(fg, V0.ravel(), jac=True, method="L-BFGS-B",
                       options={**_LBFGS, "maxiter": int(self.max_iter)})
        V = res.x.reshape(p, q) if np.isfinite(res.fun) else V0
        # scikit-learn's convention: at least 1 (a start already optimal stops L-BFGS-B at iteration 0)
        self.n_iter_ = max(int(res.nit), 1)
        Q, _ = np.linalg.qr(V)
        self.projection_ = Q * self.scale_[:, None]  # Z = (X - centre_) @ projection_
        self.objective_ = opgd_objective(Q, Xs, codes, self.class_log_prior_, means, covs, reg, False)[0]
        Z = (X - self.centre_) @ self.projection_
        self.means_, self.covariances_ = _class_moments(Z, codes, K)
        self._reg = reg
        self._n_features_out = q

    def _check_definite(self, V, means, covs, reg) -> None:
        try:
            _projected(V, means, covs, reg)
        except np.linalg.LinAlgError:
            small = [str(c) for c, m in zip(self.classes_, self.class_count_) if m <= V.shape[1]]
            raise ValueError(f"a class covariance of the projected data is singular (classes with at most "
                             f"ndim = {V.shape[1]} rows: {small or 'none; collinear features?'}): give reg > 0 "
                             f"or a smaller ndim") from None

    def transform(self, X: Any) -> np.ndarray:
        """The projection ``(X - centre_) @ projection_``."""
        from sklearn.utils.validation import check_is_fitted, validate_data

        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return (X - self.centre_) @ self.projection_

    def _log_densities(self, X: np.ndarray) -> np.ndarray:
        Z = (X - self.centre_) @ self.projection_
        q = Z.shape[1]
        _, _, L = _projected(np.eye(q), self.means_, self.covariances_, self._reg)
        out = np.empty((X.shape[0], self.classes_.size))
        for k in range(self.classes_.size):
            W = scipy.linalg.solve_triangular(L[k], (Z - self.means_[k]).T, lower=True)
            out[:, k] = -0.5 * np.sum(W * W, axis=0) - np.sum(np.log(np.diag(L[k]))) - 0.5 * q * np.log(2 * np.pi)
        return out
