"""Shared by the test modules (pytest puts this folder on sys.path)."""
import numpy as np


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
