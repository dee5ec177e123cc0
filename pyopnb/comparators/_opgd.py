"""Optimal projections for Gaussian discriminants (OPGD), as its authors' R
package defines it."""
from __future__ import annotations

import warnings
from typing import Any, Iterator, Optional, Tuple

import numpy as np
import scipy.linalg
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin

from .. import exceptions
from .._core import gaussian as _gaussian, lbfgsb as _lbfgsb
from .._validation import check_maxit, estimator_data, label_text
from ..formulation import greedy_order
from ..naive_bayes import posteriors
from ._base import ClassDensityClassifier

__all__ = ["OPGD", "opgd_objective", "opgd_start", "class_covariances"]

COVARIANCES = ("diagonal", "full")
# the authors' ridge in their start, eigen(solve(Sw + 1e-5 I) Sb + 1e-5 cov(X))
_START_RIDGE = 1e-5


def class_covariances(X: np.ndarray, codes: np.ndarray, K: int, lam: float = 0.0) -> Tuple[np.ndarray, np.ndarray]:
    """(class means [K, p], class covariances [K, p, p]) as the authors'
    ``OPGD``: S_k = (1 - lam) cov(X_k) + lam cov(X - M), with R's ``cov``
    (divisor n_k - 1) and M each row's class mean."""
    p = X.shape[1]
    means = np.array([X[codes == k].mean(axis=0) for k in range(K)])
    pooled = _cov(X - means[codes]) if lam > 0 else 0.0
    covs = np.empty((K, p, p))
    for k in range(K):
        covs[k] = (1.0 - lam) * _cov(X[codes == k]) + lam * pooled
    return means, covs


def _cov(X: np.ndarray) -> np.ndarray:
    """R's cov (divisor n - 1); NaN for one row, as R's NA."""
    if X.shape[0] < 2:
        return np.full((X.shape[1], X.shape[1]), np.nan)
    return np.atleast_2d(np.cov(X, rowvar=False))


def opgd_start(X: np.ndarray, codes: np.ndarray, K: int, ndim: int) -> np.ndarray:
    """The authors' start: the leading ``ndim`` eigenvectors (by the modulus
    of their eigenvalue, as R's ``eigen`` orders them) of
    solve(Sw + 1e-5 I) Sb + 1e-5 cov(X), with Sw = cov(X - M) and
    Sb = cov(X) - Sw. The matrix is not symmetric; where its leading
    eigenvalues are complex (R's ``optim`` would then refuse the start) the
    real parts are taken, at unit norm."""
    d = X.shape[1]
    means = np.array([X[codes == k].mean(axis=0) for k in range(K)])
    total = _cov(X)
    Sw = _cov(X - means[codes])
    A = np.linalg.inv(Sw + _START_RIDGE * np.eye(d)) @ (total - Sw) + _START_RIDGE * total
    vals, vecs = np.linalg.eig(A)
    order = np.argsort(-np.abs(vals), kind="stable")[:ndim]
    V = np.real(vecs[:, order])
    norms = np.sqrt(np.sum(V * V, axis=0))
    if np.any(~(norms > 0)):
        raise ValueError("the start's eigenvectors are complex with no real part; give V0")
    return np.ascontiguousarray(V / norms)


def _full_terms(Z: np.ndarray, M: np.ndarray, S: np.ndarray, log_prior: np.ndarray):
    """([n, K]: log pi_k + the log Gaussian density of z_i with mean M_k and
    covariance S_k [K, q, q], less the (2 pi)^(q/2) that every class shares;
    the Cholesky factors of the S_k)."""
    out = np.empty((Z.shape[0], M.shape[0]))
    L = np.array([scipy.linalg.cholesky(S[k], lower=True) for k in range(S.shape[0])])
    for k in range(M.shape[0]):
        W = scipy.linalg.solve_triangular(L[k], (Z - M[k]).T, lower=True)
        out[:, k] = log_prior[k] - np.sum(np.log(np.diag(L[k]))) - 0.5 * np.sum(W * W, axis=0)
    return out, L


def opgd_objective(V: np.ndarray, X: np.ndarray, codes: np.ndarray, log_prior: np.ndarray, means: np.ndarray,
                   covs: np.ndarray, covariance: str = "diagonal", gradient: bool = True):
    """The authors' objective (``fnb_G_2``): the sum over the rows of
    log P(y_i | z_i), z_i = V' x_i, under Gaussian class densities with means
    V' mu_k and covariances diag(V' S_k V) (``covariance="full"``: V' S_k V),
    and its p x q gradient in V (their ``dfnb_G_2``).

    Computed in log space (a log-sum-exp over the classes), where R
    multiplies densities and replaces a total of 0 by the smallest double;
    the two agree wherever R's densities do not underflow. A variance that is
    not positive raises ValueError.

    Diagonal gradient, with r_ijk = z_ij - V_j' mu_k, s_kj = V_j' S_k V_j and
    c_ik = 1{y_i = k} - P_ik: column j is
    sum_k [-(S_k V_j / s_kj) sum_i c_ik (1 - r_ijk^2 / s_kj) - sum_i c_ik (r_ijk / s_kj) (x_i - mu_k)].
    """
    if covariance == "diagonal":
        def c(a, dtype=np.float64):
            return np.ascontiguousarray(a, dtype=dtype)

        return _gaussian.diagonal_objective(c(X), c(V), c(codes, np.intp), c(log_prior), c(means), c(covs),
                                            gradient)
    n = X.shape[0]
    K = log_prior.size
    Z = X @ V
    M = means @ V
    SV = np.matmul(covs, V)  # S_k V, [K, p, q]
    rows = np.arange(n)
    Sq = np.einsum("pi,kpj->kij", V, SV)
    try:
        a, L = _full_terms(Z, M, Sq, log_prior)
    except np.linalg.LinAlgError:
        raise ValueError("a class covariance of the projection is singular") from None
    log_post, post = posteriors(a)
    value = float(np.sum(log_post[rows, codes]))
    if not gradient:
        return value, None
    Ct = -post.T  # c_ik, [K, n]
    Ct[codes, rows] += 1.0
    G = np.zeros_like(V)
    Wsum = np.zeros((V.shape[1], n))
    for k in range(K):
        U = scipy.linalg.cho_solve((L[k], True), (Z - M[k]).T)  # S^-1 r, [q, n]
        Wk = Ct[k] * U
        Sinv = scipy.linalg.cho_solve((L[k], True), np.eye(V.shape[1]))
        # d/dS of sum_i c_ik a_ik, then through S = V' S_k V
        B = -0.5 * Ct[k].sum() * Sinv + 0.5 * (U @ Wk.T)
        G += 2.0 * SV[k] @ B + np.outer(means[k], Wk.sum(axis=1))
        Wsum += Wk
    G -= (Wsum @ X).T
    return value, G


class OPGD(ClassNamePrefixFeaturesOutMixin, TransformerMixin, ClassDensityClassifier):
    """Optimal projections for Gaussian discriminants (Hofmeyr, Kamper and
    Melonas), as the authors' R package ``OPGD`` defines it.

    Gaussian class densities on the projection z = V' x with means V' mu_k
    and the diagonal variances diag(V' S_k V), S_k the class's covariance
    (R's ``cov``, divisor n_k - 1; ``lam`` shrinks it towards the pooled
    within-class covariance, the package's ``lambda``). V maximises the sum
    over the training rows of log P(y_i | z_i) (:func:`opgd_objective`) by
    L-BFGS-B with R's defaults (pyopnb's port of R's ``optim``), from the
    authors' start (:func:`opgd_start`) or ``V0``. The fitted columns are
    then put in greedy order: each next column is the one that, added to
    those chosen, gives the largest objective. Nothing is centred, scaled or
    orthonormalised, as in R; ``transform`` gives X V.

    Where this differs from the package: the objective is computed in log
    space (R's densities can underflow to 0 far from every class, where R
    substitutes the smallest double); ``ndim = 1`` works (R's column
    ordering fails on one column, so R's OPGD cannot fit one, nor two
    classes by default); ``reg`` is ours. ``covariance="full"`` uses the
    full V' S_k V, a variant of ours (QDA on the projection).

    Linear algebra goes through numpy and SciPy (LAPACK's nonsymmetric
    eigensolver for the start), so unlike OPNB's results these may move in
    their last bits with the BLAS kernel.

    Parameters
    ----------
    ndim : int or None
        Projection columns, 1..p; None: K - 1 (at most p), the package's default.
    V0 : array (p, ndim) or None
        The start; None: the authors' (:func:`opgd_start`).
    lam : float in [0, 1]
        Shrinkage of each class covariance towards the pooled one (0, the package's default).
    covariance : {"diagonal", "full"}
        The projected class covariances: their diagonal (the authors') or in full.
    reg : float >= 0
        Adds reg x (mean of its diagonal) to each S_k's diagonal, so that a
        class with fewer rows than features keeps positive variances
        (0: none, as the package; the study uses 1e-6).
    maxit : int
        L-BFGS-B's iteration limit (R's optim ``maxit``, 100). Reaching it, or
        a failed line search, warns (:class:`pyopnb.ConvergenceWarning`);
        where a trial point leaves the objective undefined (a projected
        variance of 0), R's optim stops with an error and this keeps the
        last iterate, with a warning and code 52.

    Attributes
    ----------
    V_ : ndarray of shape (p, ndim)
        The projection, columns in greedy order.
    means_ : ndarray of shape (K, p)
        The class means.
    covariances_ : ndarray of shape (K, p, p)
        The S_k.
    objective_ : float
        The objective at ``V_``.
    convergence_ : int
        R's optim code.
    n_iter_ : int
        L-BFGS-B iterations.
    """

    def __init__(self, ndim: Optional[int] = None, V0: Any = None, lam: float = 0.0, covariance: str = "diagonal",
                 reg: float = 0.0, maxit: int = 100):
        self.ndim = ndim
        self.V0 = V0
        self.lam = lam
        self.covariance = covariance
        self.reg = reg
        self.maxit = maxit

    def _fit_densities(self, X: np.ndarray, codes: np.ndarray) -> None:
        p, K = X.shape[1], self.classes_.size
        q = self._check_params(p, K)
        means, covs = class_covariances(X, codes, K, float(self.lam))
        if not np.all(np.isfinite(covs)):
            small = [label_text(c) for c, m in zip(self.classes_, self.class_count_) if m < 2]
            raise ValueError(f"classes with one row have no covariance: {', '.join(small)}")
        if self.reg > 0:
            covs = covs + float(self.reg) * (np.trace(covs, axis1=1, axis2=2) / p)[:, None, None] * np.eye(p)
        V0 = opgd_start(X, codes, K, q) if self.V0 is None else self._given_start(p, q)
        logp = self.class_log_prior_
        cov = self.covariance

        def fg(v: np.ndarray):
            f, g = opgd_objective(v.reshape(q, p).T, X, codes, logp, means, covs, cov)
            return -f, -g.T.ravel()  # R's optim minimises -f (fnscale = -1); V column-major, as R stores it

        maxit = check_maxit(self.maxit)
        try:
            fg(V0.T.ravel())
        except ValueError as exc:
            raise ValueError(f"OPGD: at the start, {exc}: give reg > 0 (e.g. reg=1e-6), lam > 0, a smaller ndim "
                             f"or another V0") from None
        last = {"x": V0.T.ravel(), "iterations": 0}

        def keep(iteration, x, f, g):
            last.update(x=x, iterations=iteration)

        try:
            res = _lbfgsb.minimize(fg, V0.T.ravel(), maxit=maxit, callback=keep)
            v, code, fval, iterations = res["x"], res["convergence"], -float(res["f"]), res["iterations"]
            note = {1: f"L-BFGS-B stopped at its iteration limit, maxit = {maxit}: give a larger maxit",
                    52: "L-BFGS-B's line search failed"}.get(code, "")
        except (ValueError, FloatingPointError) as exc:
            # R's optim stops with an error here; the last iterate is a model all the same
            v, code, iterations = last["x"], 52, last["iterations"]
            fval = -fg(v)[0]
            note = (f"L-BFGS-B's line search reached a projection where the objective is undefined ({exc}); "
                    f"the last iterate is kept (R's optim stops with an error)")
        if note:
            warnings.warn(f"OPGD: {note} (convergence code {code})", exceptions.ConvergenceWarning, stacklevel=3)
        V = v.reshape(q, p).T

        def score(chosen, j):
            return opgd_objective(V[:, chosen + [j]], X, codes, logp, means, covs, cov, False)[0]

        self.V_ = np.ascontiguousarray(V[:, greedy_order(q, score)])
        self.means_, self.covariances_ = means, covs
        self.objective_ = fval
        self.convergence_ = int(code)
        self.n_iter_ = int(iterations)
        self._n_features_out = q

    def _check_params(self, p: int, K: int) -> int:
        q = min(K - 1, p) if self.ndim is None else self.ndim
        if isinstance(q, bool) or not isinstance(q, (int, np.integer)) or not 1 <= q <= p:
            raise ValueError(f"ndim must be an integer from 1 to the number of features ({p}), got "
                             f"{label_text(self.ndim)}")
        if self.covariance not in COVARIANCES:
            raise ValueError(f"covariance must be 'diagonal' (the authors') or 'full', got {label_text(self.covariance)}")
        lam, reg = float(self.lam), float(self.reg)
        if not 0.0 <= lam <= 1.0:
            raise ValueError(f"lam must be in [0, 1], got {label_text(self.lam)}")
        if not (np.isfinite(reg) and reg >= 0):
            raise ValueError(f"reg must be a finite number >= 0, got {label_text(self.reg)}")
        return int(q)

    def _given_start(self, p: int, q: int) -> np.ndarray:
        V0 = np.asarray(self.V0, dtype=np.float64)
        if V0.ndim == 1:
            V0 = V0[:, None]
        if V0.shape != (p, q) or not np.all(np.isfinite(V0)):
            raise ValueError(f"V0 must be a finite ({p}, {q}) matrix (features x ndim), got shape {V0.shape}")
        return V0

    def transform(self, X: Any) -> np.ndarray:
        """The projection ``X @ V_``, not centred, as the authors' package.

        Parameters
        ----------
        X : array-like of shape (m, n_features)
            Test data.

        Returns
        -------
        ndarray of shape (m, ndim)
            The projections.
        """
        return estimator_data(self, X) @ self.V_

    def _log_densities(self, X: np.ndarray, ndim: Optional[int] = None) -> np.ndarray:
        V = np.ascontiguousarray(self.V_ if ndim is None else self.V_[:, :ndim])
        if self.covariance == "diagonal":
            return _gaussian.diagonal_terms(np.ascontiguousarray(X), V, self.means_, self.covariances_)
        Sq = np.einsum("pi,kpj->kij", V, np.matmul(self.covariances_, V))
        return _full_terms(X @ V, self.means_ @ V, Sq, np.zeros(self.classes_.size))[0]

    def staged_predict(self, X: Any) -> Iterator[np.ndarray]:
        """The classes predicted with the first m columns of ``V_``, m = 1, ..., ndim.

        The greedy order makes each a model of its own, so one fit serves every
        ndim (as :func:`pyopnb.opnb_journal_cv`'s path).

        Parameters
        ----------
        X : array-like of shape (m, n_features)
            Test data.

        Yields
        ------
        ndarray of shape (m,)
            The classes with 1, 2, ... columns.
        """
        X = self._validated(X)
        for m in range(1, self.V_.shape[1] + 1):
            yield self.classes_[np.argmax(self.class_log_prior_ + self._log_densities(X, m), axis=1)]
