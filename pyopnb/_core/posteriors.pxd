# Posteriors and the likelihood's terms from class log densities (see posteriors.pyx).
from libc.math cimport exp, log, INFINITY


cdef inline double _row_posterior(const double* logf, const double* logprior, int K, int y,
                                 double* post) noexcept nogil:
    """One row of log_posteriors: the row's term of l, and (unless post is
    NULL) its posteriors."""
    cdef int k
    cdef double mx = -INFINITY, ssum = 0.0, v, e
    for k in range(K):
        v = logprior[k] + logf[k]
        if v > mx:
            mx = v
    for k in range(K):
        v = logprior[k] + logf[k] - mx
        # the largest class's term is exp(0) = 1 exactly: one exp fewer a row
        e = 1.0 if v == 0.0 else exp(v)
        if post != NULL:
            post[k] = e
        ssum = ssum + e
    if post != NULL:
        for k in range(K):
            post[k] = post[k] / ssum
    return logprior[y] + logf[y] - (mx + log(ssum))
