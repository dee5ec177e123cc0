"""The kernel naive Bayes core: class densities as products of univariate
kernel density estimates, one bandwidth per class and column.

One routine serves OPNB's ``predict`` and ``plot`` (columns = the projection
of the data) and the comparators' :class:`~pyopnb.comparators.KernelNB`
(columns = the features), as scikit-learn's ``_BaseNB`` serves its naive
Bayes classifiers.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from . import _ksum, _threads
from ._core import linalg as _linalg, posteriors as _posteriors
from .ksum import DEFAULT_BETA, fk_sum

__all__ = ["class_log_densities", "posteriors"]


def class_log_densities(Ztr: np.ndarray, y0: np.ndarray, K: int, H: np.ndarray, Zte: np.ndarray,
                        log: bool = True, nbin: Optional[int] = None, threads: Optional[int] = None,
                        w: Optional[np.ndarray] = None) -> np.ndarray:
    """[m, K]: sum_t log f_kt(Zte[:, t]) (``log``), or the products of the
    f_kt, where f_kt(z) = 1/(n_k H[k, t]) sum_{i: y0_i = k} K((z - Ztr[i, t]) / H[k, t])
    with OPNB's kernel K(u) = (1 + |u|) exp(-|u|) / 4 and exact sums.

    In log space each sum is taken in a form that never underflows (a point
    far from every training point of a class still gets its finite log
    density), so the log densities are right where the products (R's way)
    round to 0. ``nbin``: FKSUM's binned sums instead (log space only; a
    density that is not positive there gives -inf, for the caller to redo
    exactly). ``threads``: as everywhere (``pyopnb._threads.resolve``).
    ``w``: the training points' weights (positive), point i weighing
    w_i / (W_k H[k, t]) in its class (:mod:`pyopnb.weights`); None: 1 each.
    """
    thr = _threads.resolve(threads)
    if nbin is None:
        return _ksum.class_sums(np.ascontiguousarray(Ztr, dtype=np.float64), np.ascontiguousarray(y0, dtype=np.intp),
                                K, np.ascontiguousarray(H, dtype=np.float64),
                                np.ascontiguousarray(Zte, dtype=np.float64), DEFAULT_BETA, log, thr, w)
    if not log:
        raise ValueError("binned class densities are in log space only (log=True)")
    m, ncol = Zte.shape
    out = np.zeros((m, K))
    for k in range(K):
        Zk = Ztr[y0 == k]
        nk = Zk.shape[0]
        if nk == 0:
            raise ValueError(f"class {k} has no training points")
        wk = None if w is None else np.asarray(w, dtype=np.float64)[y0 == k]
        Wk = float(nk) if wk is None else math.fsum(wk)
        for t in range(ncol):
            h = float(H[k, t])
            wcls = 1.0 / (Wk * h)
            S = fk_sum(np.ascontiguousarray(Zk[:, t]), np.full(nk, wcls) if wk is None else wk * wcls, h,
                       np.ascontiguousarray(Zte[:, t]), nbin=nbin, threads=thr)
            with np.errstate(divide="ignore", invalid="ignore"):
                out[:, k] += np.where(S > 0, _linalg.c_log_array(np.where(S > 0, S, 1.0)), -np.inf)
    return out


def posteriors(log_joint: np.ndarray, threads: Optional[int] = None) -> "tuple[np.ndarray, np.ndarray]":
    """(log posteriors, posteriors) [m, K] from log(PI_k f_k) [m, K], by
    Bayes' rule in log space (each row's largest term taken out before exp),
    with the C library's exp and log, so no row underflows and the bits do
    not depend on numpy's SIMD level. Serves OPNB's ``predict``, the
    estimator and every comparator."""
    return _posteriors.posteriors(np.ascontiguousarray(log_joint, dtype=np.float64), _threads.resolve(threads))
