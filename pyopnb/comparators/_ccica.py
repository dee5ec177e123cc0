"""Class-conditional ICA followed by kernel naive Bayes (Bressan and Vitria, 2002)."""
from __future__ import annotations

import warnings
from typing import Optional

import numpy as np

from ..naive_bayes import class_log_densities
from ._base import ClassDensityClassifier, positive
from ._kernel_nb import silverman
from .._validation import label_text

# in coordinates where the total covariance is the identity, a class
# covariance's eigenvalues are floored at this (the same for every class), so
# that a class with fewer rows than features, or constant within itself along
# some direction, still has a density
_EIG_FLOOR = 1e-8
# the total covariance's eigenvalues under this share of its largest are its null space
_RANK_TOL = 1e-10


class CCICA(ClassDensityClassifier):
    """Each class's data rotated to independent components, then naive Bayes
    with kernel density marginals on them (the papers' CCICA).

    Class k is whitened by its own covariance (s = L_k^(-1/2) U_k' (x - mu_k)),
    the leading ``n_components`` whitened coordinates are rotated by
    scikit-learn's FastICA (an orthogonal rotation, since they are already
    white), and their marginals are kernel density estimates (OPNB's kernel,
    ``gamma`` times Silverman's rule per class and component, as
    :class:`KernelNB`).

    The data are first put in the coordinates that whiten their total
    covariance, on its range alone: a column that carries nothing (a
    constant, or a linear combination of others) adds no coordinate, so it
    changes nothing, and the floor on a class's eigenvalues (1e-8) is the
    same for every class. Class densities must be comparable across classes,
    so each is a density of x itself (of z, times the whitening's Jacobian
    ``|det B|``, where columns are dependent):
    ``f_k(x) = |det B| |det L_k^(-1/2)| prod_j g_kj(ica_j) prod_(j > m) phi(s_j)``.
    The Jacobian of the whitening is the factor ``|det L_k^(-1/2)|`` (the ICA
    rotation has ``|det| = 1``), and the whitened coordinates left out of the ICA
    (when n_components < p) keep a standard normal density rather than being
    dropped: dropping them would compare densities of different dimensions.

    Parameters
    ----------
    n_components : int or None
        The shared ICA dimension, 1..p (the paper tunes it over 1..min(p, 20));
        None: min(p, 20). At most the data's rank is used (a column that
        carries nothing adds no component).
    gamma : float > 0
        Bandwidth multiplier (grid 1/3, 1/2, 1, 2, 3).
    random_state : int
        FastICA's seed (its start is the identity, so the fit does not
        depend on it; kept for compatibility).
    """

    def __init__(self, n_components: Optional[int] = None, gamma: float = 1.0, random_state: int = 0):
        self.n_components = n_components
        self.gamma = gamma
        self.random_state = random_state

    def _fit_densities(self, X: np.ndarray, codes: np.ndarray) -> None:
        from sklearn.decomposition import FastICA
        from sklearn.exceptions import ConvergenceWarning

        gamma = positive(self.gamma, "gamma")
        p = X.shape[1]
        m = min(p, 20) if self.n_components is None else int(self.n_components)
        if not 1 <= m <= p:
            raise ValueError(f"n_components must be from 1 to the number of features ({p}), got {label_text(self.n_components)}")
        Z = self._total_whitening(X)
        r = Z.shape[1]
        m = min(m, r)
        K = self.classes_.size
        self.means_, self.whiten_, self.rotation_, self.log_jacobian_ = [], [], [], np.empty(K)
        comps, H = [], np.empty((K, m))
        for k in range(K):
            Xk = Z[codes == k]
            mu = Xk.mean(axis=0)
            C = np.atleast_2d(np.cov(Xk, rowvar=False, bias=True)) if Xk.shape[0] > 1 else np.zeros((r, r))
            vals, vecs = np.linalg.eigh(C)
            vals, vecs = vals[::-1], vecs[:, ::-1]
            vals = np.maximum(vals, _EIG_FLOOR)
            W = vecs / np.sqrt(vals)  # x -> s = (x - mu) @ W: white coordinates, leading variance first
            S = (Xk - mu) @ W[:, :m]
            if m > 1 and Xk.shape[0] > m:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    # started from the white coordinates themselves: they are the class covariance's
                    # eigenvectors, the same whatever basis whitened the data (up to signs, which FastICA's
                    # odd contrast ignores), so the components are too
                    ica = FastICA(whiten=False, w_init=np.eye(m), random_state=self.random_state, max_iter=400)
                    ica.fit(S)
                R = ica.components_.T
                # FastICA's unmixing of white data is orthogonal up to its tolerance: make it exactly so
                u, _, vt = np.linalg.svd(R)
                R = u @ vt
            else:
                R = np.eye(m)
            A = S @ R
            self.means_.append(mu)
            self.whiten_.append(W)
            self.rotation_.append(R)
            self.log_jacobian_[k] = -0.5 * np.sum(np.log(vals))
            comps.append(A)
            H[k] = gamma * silverman(A, 1.0)
        self.bandwidths_ = H
        self._m = m
        self._comps = comps

    def _total_whitening(self, X: np.ndarray) -> np.ndarray:
        """X in the coordinates that whiten its total covariance on its
        range, constant columns left out (kept for the test data:
        ``varying_``, ``center_``, ``basis_``)."""
        # constant columns dropped exactly (no rounding of theirs reaches the rest), then the range
        self.varying_ = np.ptp(X, axis=0) > 0
        if not self.varying_.any():
            raise ValueError("CCICA: no column of X varies: there is nothing to model")
        X = X[:, self.varying_]
        self.center_ = X.mean(axis=0)
        Xc = X - self.center_
        # a varying column gives the total covariance a positive eigenvalue: keep is never empty
        vals, vecs = np.linalg.eigh(np.atleast_2d(np.cov(Xc, rowvar=False, bias=True)))
        keep = vals > _RANK_TOL * vals.max()
        self.basis_ = vecs[:, keep] / np.sqrt(vals[keep])
        # the whitening's Jacobian on the range: with every column varying and
        # independent, each class density is a density of x itself
        self.log_basis_jacobian_ = -0.5 * float(np.sum(np.log(vals[keep])))
        return Xc @ self.basis_

    def _log_densities(self, X: np.ndarray) -> np.ndarray:
        K, m = self.classes_.size, self._m
        Z = (X[:, self.varying_] - self.center_) @ self.basis_
        out = np.empty((X.shape[0], K))
        for k in range(K):
            S = (Z - self.means_[k]) @ self.whiten_[k]
            A = S[:, :m] @ self.rotation_[k]
            Ck = self._comps[k]
            # the class's own components, one class at a time through the shared core
            out[:, k] = class_log_densities(Ck, np.zeros(Ck.shape[0], dtype=np.int64), 1, self.bandwidths_[k:k + 1],
                                            A, True)[:, 0]
            rest = S[:, m:]
            out[:, k] += self.log_basis_jacobian_ + self.log_jacobian_[k] - 0.5 * np.sum(rest * rest, axis=1) \
                - 0.5 * rest.shape[1] * np.log(2 * np.pi)
        return out
