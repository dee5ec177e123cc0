# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""Posteriors and the mean log-likelihood from class log densities: the one
place where a row's classes are combined, for every evaluation, prediction
and comparator (the C library's exp and log, as R's)."""
import numpy as np
from cython.parallel cimport prange
from libc.math cimport exp, log, INFINITY


def log_posteriors(const double[:, ::1] logf, const int[::1] y, const double[::1] logprior, int num_threads,
                   value_logprior=None):
    """(mean log-likelihood, posteriors [n, K]) from class log densities, one pass per row.

    l = mean_i [logprior_{y_i} + logf_{i, y_i} - log sum_k exp(logprior_k + logf_ik)];
    posteriors exp(logprior_k + logf_ik - that log-sum). A row whose classes
    all have log density -inf gives -inf and NaN posteriors, as the formula does.
    ``value_logprior``: l with these log priors instead (R's exact value,
    whose priors are squared), the posteriors still with ``logprior``.
    """
    cdef Py_ssize_t n = logf.shape[0], i
    cdef int K = logf.shape[1]
    if logprior.shape[0] != K:
        raise ValueError(f"logprior must have {K} entries, got {logprior.shape[0]}")
    cdef const double[::1] vlp = logprior if value_logprior is None else value_logprior
    if vlp.shape[0] != K:
        raise ValueError(f"value_logprior must have {K} entries, got {vlp.shape[0]}")
    cdef bint apart = value_logprior is not None
    post = np.empty((n, K))
    terms = np.empty(n)
    cdef double[:, ::1] pv = post
    cdef double[::1] tv = terms
    cdef double total = 0.0
    with nogil:
        if num_threads <= 1:
            for i in range(n):
                tv[i] = _row_terms(&logf[i, 0], &logprior[0], &vlp[0], apart, K, y[i], &pv[i, 0])
        else:
            for i in prange(n, num_threads=num_threads, schedule="static"):
                tv[i] = _row_terms(&logf[i, 0], &logprior[0], &vlp[0], apart, K, y[i], &pv[i, 0])
        # summed in order, so that the value does not depend on the threads
        for i in range(n):
            total = total + tv[i]
    return total / n, post


cdef inline double _row_terms(const double* logf, const double* logprior, const double* vlp, bint apart,
                              int K, int y, double* post) noexcept nogil:
    """A row's term of l (with log priors vlp when apart) and its posteriors."""
    cdef double term = _row_posterior(logf, logprior, K, y, post)
    if apart:
        return _row_posterior(logf, vlp, K, y, NULL)
    return term


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
        for i in prange(m, num_threads=max(1, num_threads), schedule="static"):
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
