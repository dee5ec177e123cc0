"""Class-conditional ICA followed by kernel naive Bayes (Bressan and Vitria, 2002)."""
from __future__ import annotations

import warnings
from typing import Optional

import numpy as np

from ..naive_bayes import class_log_densities
from ._base import ClassDensityClassifier, positive
from ._kernel_nb import silverman
from .._validation import label_text

# a class covariance's eigenvalues are floored at this share of its largest,
# so that a class with fewer rows than features still has a density
_EIG_FLOOR = 1e-8


class CCICA(ClassDensityClassifier):
    """Each class's data rotated to independent components, then naive Bayes
    with kernel density marginals on them (the papers' CCICA).

    Class k is whitened by its own covariance (s = L_k^(-1/2) U_k' (x - mu_k)),
    the leading ``n_components`` whitened coordinates are rotated by
    scikit-learn's FastICA (an orthogonal rotation, since they are already
    white), and their marginals are kernel density estimates (OPNB's kernel,
    ``gamma`` times Silverman's rule per class and component, as
    :class:`KernelNB`).

    Class densities must be comparable across classes, so each is a density
    of x itself: f_k(x) = |det L_k^(-1/2)| prod_j g_kj(ica_j) prod_(j > m) phi(s_j).
    The Jacobian of the whitening is the factor |det L_k^(-1/2)| (the ICA
    rotation has |det| = 1), and the whitened coordinates left out of the ICA
    (when n_components < p) keep a standard normal density rather than being
    dropped: dropping them would compare densities of different dimensions.

    Parameters
    ----------
    n_components : int or None
        The shared ICA dimension, 1..p (the paper tunes it over 1..min(p, 20));
        None: min(p, 20).
    gamma : float > 0
        Bandwidth multiplier (grid 1/3, 1/2, 1, 2, 3).
    random_state : int
        FastICA's seed.
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
        K = self.classes_.size
        self.means_, self.whiten_, self.rotation_, self.log_jacobian_ = [], [], [], np.empty(K)
        comps, H = [], np.empty((K, m))
        for k in range(K):
            Xk = X[codes == k]
            mu = Xk.mean(axis=0)
            C = np.atleast_2d(np.cov(Xk, rowvar=False, bias=True)) if Xk.shape[0] > 1 else np.zeros((p, p))
            vals, vecs = np.linalg.eigh(C)
            vals, vecs = vals[::-1], vecs[:, ::-1]
            top = vals[0] if vals[0] > 0 else 1.0
            vals = np.maximum(vals, _EIG_FLOOR * top)
            W = vecs / np.sqrt(vals)  # x -> s = (x - mu) @ W: white coordinates, leading variance first
            S = (Xk - mu) @ W[:, :m]
            if m > 1 and Xk.shape[0] > m:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    ica = FastICA(whiten=False, random_state=self.random_state, max_iter=400)
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

    def _log_densities(self, X: np.ndarray) -> np.ndarray:
        K, m = self.classes_.size, self._m
        out = np.empty((X.shape[0], K))
        for k in range(K):
            S = (X - self.means_[k]) @ self.whiten_[k]
            A = S[:, :m] @ self.rotation_[k]
            Ck = self._comps[k]
            # the class's own components, one class at a time through the shared core
            out[:, k] = class_log_densities(Ck, np.zeros(Ck.shape[0], dtype=np.int64), 1, self.bandwidths_[k:k + 1],
                                            A, True)[:, 0]
            rest = S[:, m:]
            out[:, k] += self.log_jacobian_[k] - 0.5 * np.sum(rest * rest, axis=1) \
                - 0.5 * rest.shape[1] * np.log(2 * np.pi)
        return out
