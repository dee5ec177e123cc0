# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""Posteriors and the mean log-likelihood from class densities or their
logs: the one place where a row's classes are combined, for every
evaluation, prediction and comparator (the C library's exp and log, as
R's)."""
import math

import numpy as np
from cython.parallel cimport prange
from libc.math cimport exp, log, INFINITY

from pyopnb._core.common cimport _block_sum, _region_threads, _thread_id


def product_posteriors(const double[:, ::1] pr, const double[:, ::1] acc, const int[::1] y,
                       const double[::1] PI, int num_threads, value_PI=None, w=None, W=None):
    """(mean log-likelihood, posteriors [n, K]) from class densities kept as
    running products (pr, acc [n, K], f_ik = pr_ik exp(acc_ik):
    pyopnb_products_n'), one pass per row (_row_posterior_products).

    l = mean_i log(PI_{y_i} f_{i, y_i} / sum_k PI_k f_ik); posteriors
    PI_k f_ik / sum_j PI_j f_ij; with weights ``w`` [n], l =
    sum_i w_i log(...) / W, W = sum_i w_i correctly rounded (given by a
    caller that keeps it, else summed here). A row whose own class has density 0 gives
    -inf; one whose classes all have density 0 gives a NaN term and NaN
    posteriors (0 / 0), as the formula does. ``value_PI``: l with
    these priors instead (R's exact value, whose priors are squared), the
    posteriors still with ``PI``.
    """
    cdef Py_ssize_t n = pr.shape[0], i
    cdef int K = pr.shape[1], k, tid, nthr = _region_threads(num_threads, n * pr.shape[1])
    if acc.shape[0] != n or acc.shape[1] != K:
        raise ValueError(f"acc must be ({n}, {K}), got ({acc.shape[0]}, {acc.shape[1]})")
    if y.shape[0] != n:
        raise ValueError(f"y must have {n} entries, got {y.shape[0]}")
    if PI.shape[0] != K:
        raise ValueError(f"PI must have {K} entries, got {PI.shape[0]}")
    cdef const double[::1] vPI = PI if value_PI is None else value_PI
    if vPI.shape[0] != K:
        raise ValueError(f"value_PI must have {K} entries, got {vPI.shape[0]}")
    cdef bint apart = value_PI is not None
    cdef const double[::1] wv
    cdef bint weighted = w is not None
    cdef double Wt = <double> n
    if weighted:
        wv = np.ascontiguousarray(w, dtype=np.float64)
        if wv.shape[0] != n:
            raise ValueError(f"w must have {n} entries, got {wv.shape[0]}")
        # correctly rounded, as the evaluations' (ColumnScratch.W)
        Wt = math.fsum(w) if W is None else W
    # the priors' logs for rows whose products closed, the C library's log
    lp = np.empty((2, K))
    cdef double[:, ::1] lpv = lp
    for k in range(K):
        lpv[0, k] = log(PI[k])
        lpv[1, k] = log(vPI[k])
    post = np.empty((n, K))
    terms = np.empty(n)
    lf = np.empty((nthr, K + 16))  # padded: threads writing neighbouring rows share cache lines
    cdef double[:, ::1] pv = post
    cdef double[::1] tv = terms
    cdef double[:, ::1] lfv = lf
    cdef double total = 0.0
    cdef const double* wp = &wv[0] if weighted and n > 0 else NULL
    # the posteriors' priors, and the value's (R's squared ones, where apart)
    cdef Priors post_priors = Priors(PI=&PI[0], logprior=&lpv[0, 0], K=K)
    cdef Priors value_priors = Priors(PI=&vPI[0], logprior=&lpv[1, 0], K=K)
    with nogil:
        for i in prange(n, num_threads=nthr, schedule="static"):
            tid = _thread_id()
            tv[i] = _row_posterior_products(&pr[i, 0], &acc[i, 0], &post_priors, y[i], &pv[i, 0], not apart,
                                            &lfv[tid, 0])
            if apart:
                tv[i] = _row_posterior_products(&pr[i, 0], &acc[i, 0], &value_priors, y[i], NULL, True,
                                                &lfv[tid, 0])
        # summed by the fixed blocks of rows, so that the value does not depend on the threads
        if n > 0:
            total = _block_sum(&tv[0], wp, n)
    return total / Wt, post


def posteriors(const double[:, ::1] logjoint, int num_threads):
    """(log posteriors, posteriors) [m, K] from each row's log joint densities
    log(PI_k f_k): the row's largest entry taken out before exp, the C
    library's exp and log (numpy's differ by SIMD level). A row whose every
    entry is -inf gives NaN, as the formula does."""
    cdef Py_ssize_t m = logjoint.shape[0], i
    cdef int K = logjoint.shape[1], k
    logpost = np.empty((m, K))
    post = np.empty((m, K))
    cdef double[:, ::1] lv = logpost
    cdef double[:, ::1] pv = post
    cdef double mx, ssum, lse
    with nogil:
        for i in prange(m, num_threads=_region_threads(num_threads, m * K), schedule="static"):
            mx = -INFINITY
            for k in range(K):
                if logjoint[i, k] > mx:
                    mx = logjoint[i, k]
            ssum = 0.0
            for k in range(K):
                pv[i, k] = exp(logjoint[i, k] - mx)
                ssum = ssum + pv[i, k]
            lse = mx + log(ssum)
            for k in range(K):
                pv[i, k] = pv[i, k] / ssum
                lv[i, k] = logjoint[i, k] - lse
    return logpost, post
