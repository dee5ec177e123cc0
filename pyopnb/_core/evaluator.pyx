# cython: language_level=3
# distutils: language = c++
"""The interface every compiled evaluation of l implements.

An evaluator is made once per fit for one problem (class codes, bandwidths,
priors, threads, and whatever its kind fixes: the bins, R's squared priors)
and then evaluates l at one Z' = (X V)' after another, keeping its scratch
and tables between calls. The kinds: ``passes.ExactPasses`` (exact sums),
``linear.LinearGrid`` (the paper's linear binning, summed at the points), ``r_grid.RGrid`` (R's
f_NB_cpp and df_NB_cpp) and ``interp_grid.InterpGrid`` (the journal's interpolated
log densities). A subclass, compiled or Python, overrides ``evaluate`` and,
where its tables answer it faster, ``subset_values``.
"""
import numpy as np

from pyopnb._core.linalg import c_log_array


cdef class CoreEvaluator:
    """l and n dl/dZ' from Z' [ndim, n], for one problem.

    Parameters: ``y0`` the class codes 0..K-1 (every class present),
    ``h`` each class's bandwidth, ``PI`` the priors, ``threads`` the
    thread count of every pass.
    """

    def __init__(self, y0, h, PI, int threads):
        self.y0 = np.ascontiguousarray(y0, dtype=np.int32)
        self.h = np.ascontiguousarray(h, dtype=np.float64)
        PIa = np.ascontiguousarray(PI, dtype=np.float64)
        if self.y0.ndim != 1 or self.h.ndim != 1 or PIa.shape != self.h.shape:
            raise ValueError("need y0 [n], and h and PI [K]")
        self.K = <int> self.h.shape[0]
        self.n = self.y0.shape[0]
        if self.n < 1 or self.K < 1:
            raise ValueError("need at least one point and one class")
        self.PI = PIa
        self.logprior = c_log_array(PIa)
        self.threads = max(1, threads)
        self.most_threads = self.threads

    cpdef void use_threads(self, int count):
        """Run the next evaluations on ``count`` threads, at most
        ``most_threads`` (those its scratch is made for). The results do not
        depend on it: a fit may change it between evaluations, to the count
        that runs fastest now (``pyopnb._threads.Pace``)."""
        self.threads = max(1, min(count, self.most_threads))

    cpdef tuple evaluate(self, object Zt, bint gradient):
        """(l, n dl/dZ' [ndim, n] or None) at Z' [ndim, n] (C-contiguous float64)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement evaluate")

    cpdef list subset_values(self, object Zt, list chosen, list candidates):
        """[l at Z's rows chosen + [j] for j in candidates], Zt being the
        Z' of the last ``evaluate``: R's greedy column order. Here each
        subset is evaluated afresh (a column's densities do not depend on
        the others, so this is l(V[:, chosen + [j]]) to the bit)."""
        Za = np.asarray(Zt)
        return [self.evaluate(np.ascontiguousarray(Za[chosen + [j]]), False)[0] for j in candidates]
