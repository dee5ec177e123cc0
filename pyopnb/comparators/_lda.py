"""Linear discriminant analysis on its leading discriminant directions."""
from __future__ import annotations

from typing import Any, Iterator, Optional

import numpy as np
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin

from .._validation import label_text
from ..discriminant import discriminant_directions
from ._base import ClassDensityClassifier


class LDA(ClassNamePrefixFeaturesOutMixin, TransformerMixin, ClassDensityClassifier):
    """Linear discriminant analysis with a chosen number of discriminant
    directions (the papers' LDA), which never fails.

    Gaussian class densities with the maximum-likelihood pooled covariance
    Sigma_W, on the leading ``n_components`` discriminant directions
    (eigenvectors of Sigma_W^+ Sigma_B, :func:`pyopnb.discriminant.discriminant_directions`),
    scaled so that the classes have unit within-class variance there: a row
    goes to the class maximising log pi_k - ||z - m_k||^2 / 2, z its
    projection and m_k the class's. On all K - 1 directions this is
    scikit-learn's ``LinearDiscriminantAnalysis``; fewer give reduced-rank
    LDA. Where Sigma_W is singular (collinear or constant columns, more
    columns than rows) its pseudo-inverse is used on its range, so nothing
    is ever divided by zero; directions along which the class means do not
    differ are dropped, and with none left every row gets the most frequent
    class.

    Parameters
    ----------
    n_components : int or None
        Discriminant directions, 1..min(p, K - 1) (the paper tunes it over
        that range); None: all. More than the data have (the class means
        span fewer) gives all there are.

    Attributes
    ----------
    scalings_ : ndarray of shape (p, r)
        The directions; ``transform`` gives ``(X - xbar_) @ scalings_``.
    means_ : ndarray of shape (K, r)
        The class means on them.
    explained_variance_ratio_ : ndarray of shape (r,)
        The share of each direction's eigenvalue.
    """

    def __init__(self, n_components: Optional[int] = None):
        self.n_components = n_components

    def _fit_densities(self, X: np.ndarray, codes: np.ndarray) -> None:
        p, K = X.shape[1], self.classes_.size
        top = min(p, K - 1)
        m = top if self.n_components is None else self.n_components
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not 1 <= m <= top:
            raise ValueError(f"n_components must be an integer from 1 to min(n_features, n_classes - 1) = {top}, "
                             f"got {label_text(self.n_components)}")
        D, vals = discriminant_directions(X, codes, K)
        self.scalings_ = np.ascontiguousarray(D[:, :m])
        self.explained_variance_ratio_ = vals[:m] / vals.sum() if vals.size else vals
        self.xbar_ = X.mean(axis=0)
        Z = (X - self.xbar_) @ self.scalings_
        self.means_ = np.array([Z[codes == k].mean(axis=0) for k in range(K)])
        self._n_features_out = self.scalings_.shape[1]

    def transform(self, X: Any) -> np.ndarray:
        """The discriminant coordinates ``(X - xbar_) @ scalings_``.

        Parameters
        ----------
        X : array-like of shape (m, n_features)
            Test data.

        Returns
        -------
        ndarray of shape (m, n_components)
            The coordinates.
        """
        return (self._validated(X) - self.xbar_) @ self.scalings_

    def _log_densities(self, X: np.ndarray, ndim: Optional[int] = None) -> np.ndarray:
        r = self.scalings_.shape[1] if ndim is None else min(ndim, self.scalings_.shape[1])
        Z = (X - self.xbar_) @ self.scalings_[:, :r]
        out = np.empty((X.shape[0], self.classes_.size))
        for k in range(self.classes_.size):
            D = Z - self.means_[k, :r]
            out[:, k] = -0.5 * np.sum(D * D, axis=1)
        return out

    def staged_predict(self, X: Any) -> Iterator[np.ndarray]:
        """The classes predicted on the first r directions, r = 1, ..., ``n_components``.

        A fit with fewer directions is exactly its first r.

        Parameters
        ----------
        X : array-like of shape (m, n_features)
            Test data.

        Yields
        ------
        ndarray of shape (m,)
            The classes with 1, 2, ... directions.
        """
        X = self._validated(X)
        m = self.n_components if self.n_components is not None else self.scalings_.shape[1]
        for r in range(1, m + 1):
            yield self.classes_[np.argmax(self.class_log_prior_ + self._log_densities(X, r), axis=1)]
