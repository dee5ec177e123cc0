"""Shared by the test modules (pytest puts this folder on sys.path)."""
import warnings

import numpy as np

from pyopnb import ConvergenceWarning


def central_difference(f, V: np.ndarray, step: float) -> np.ndarray:
    """The gradient of f at V by central differences, entry by entry."""
    g = np.zeros_like(V)
    for a in range(V.shape[0]):
        for b in range(V.shape[1]):
            Vp, Vm = V.copy(), V.copy()
            Vp[a, b] += step
            Vm[a, b] -= step
            g[a, b] = (f(Vp) - f(Vm)) / (2 * step)
    return g


def convergence_warnings(fn):
    """fn's result, and the messages of the ConvergenceWarnings it gave."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(w.message) for w in rec if issubclass(w.category, ConvergenceWarning)]
