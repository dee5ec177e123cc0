"""Point weights: ``sample_weight`` (scikit-learn) and ``weights=`` (our R
functions' argument; R's OPNB has none): their check, and the weighted
statistics a weighted fit takes in place of R's.

The weights are importance weights, invariant to their scale: every
statistic uses w_i / W (W the total weight), so weights that sum to 1 (as
AdaBoost gives them) and weights that sum to n fit the same model. A class's
density weighs its point i by w_i / W_k, the likelihood each point's log
posterior by w_i / W, the priors are W_k / W. Counts stay counts: the
divisor n - 1 of a variance and the journal bandwidth's n_k^(-1/5) count the
rows of positive weight. So integer weights are close to, not the same as,
rows repeated that many times.

Rows of weight 0 are dropped before anything is computed (the fit is the fit
without them, to the bit), and weights that are all equal are no weights
(the same model, to the bit). Sums are R's order through the compiled core
(``linalg.crossprod_t``), and totals are correctly rounded (``math.fsum``):
the same bits on every machine.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Tuple

import numpy as np

from ._core import linalg as _linalg
from ._validation import label_text

__all__ = ["check_weights", "weighted_colmeans", "weighted_var", "weighted_cov", "class_totals"]


def check_weights(weights: Any, n: int, name: str = "sample_weight") -> Tuple[Optional[np.ndarray], np.ndarray]:
    """(w, keep): the weights of the rows kept, and the rows kept (those of
    positive weight), for ``n`` rows; w is None where the weights are None
    or all equal (no weights: the same model). Refused: a shape other than
    (n,), a non-numeric, NaN, infinite or negative weight, and weights that
    are all 0."""
    keep = np.ones(n, dtype=bool)
    if weights is None:
        return None, keep
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numbers, one per row, got {label_text(weights)}") from None
    if w.ndim == 0 or w.shape != (n,):
        raise ValueError(f"{name} must have one weight per row ({n}), got shape {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"{name} contains NaN or infinite values")
    if np.any(w < 0):
        raise ValueError(f"{name} must not be negative (row {int(np.flatnonzero(w < 0)[0])})")
    keep = w > 0
    if not keep.any():
        raise ValueError(f"{name} is zero for every row: there is nothing to fit")
    w = np.ascontiguousarray(w[keep])
    if np.all(w == w[0]):
        return None, keep
    return w, keep


def _total(w: np.ndarray) -> float:
    return math.fsum(w)


def weighted_colmeans(X: np.ndarray, w: np.ndarray, threads: int) -> np.ndarray:
    """sum_i w_i X[i, j] / W per column: t(X) w in R's order, over W."""
    wt = np.ascontiguousarray(w, dtype=np.float64).reshape(1, -1)
    return _linalg.crossprod_t(np.ascontiguousarray(X, dtype=np.float64), wt, threads)[:, 0] / _total(w)


def weighted_var(Xc: np.ndarray, w: np.ndarray, threads: int) -> np.ndarray:
    """Each centred column's weighted variance, sum_i w_i Xc[i, j]^2 / W
    times n / (n - 1) (n the rows): R's var where the weights are equal."""
    n = Xc.shape[0]
    if n < 2:
        raise ValueError("a variance needs at least two rows of positive weight")
    sq = np.ascontiguousarray(Xc * Xc)
    return weighted_colmeans(sq, w, threads) * (n / (n - 1))


def weighted_cov(Xc: np.ndarray, w: np.ndarray, threads: int) -> np.ndarray:
    """The centred columns' weighted covariance, t(Xc) diag(w) Xc / W times
    n / (n - 1), symmetric to the bit."""
    n = Xc.shape[0]
    if n < 2:
        raise ValueError("a covariance needs at least two rows of positive weight")
    Xc = np.ascontiguousarray(Xc, dtype=np.float64)
    wXt = np.ascontiguousarray((Xc * np.asarray(w, dtype=np.float64)[:, None]).T)
    C = _linalg.crossprod_t(Xc, wXt, threads) * (1.0 / _total(w)) * (n / (n - 1))
    lower = np.tril(C)
    return lower + np.tril(C, -1).T


def class_totals(codes: np.ndarray, K: int, w: np.ndarray) -> np.ndarray:
    """Each class's total weight W_k, correctly rounded."""
    return np.array([math.fsum(w[codes == k]) for k in range(K)])
