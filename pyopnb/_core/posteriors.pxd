# Posteriors and the likelihood's terms from class densities (see posteriors.pyx).
from libc.float cimport DBL_MAX, DBL_MIN
from libc.math cimport exp, log, INFINITY

cdef extern from "_core/products.h" nogil:
    const double PYOPNB_PROD_HI


cdef inline double _row_posterior(const double* logf, const double* logprior, int K, int y,
                                 double* post) noexcept nogil:
    """One row from its class log densities: the row's term of l, and
    (unless post is NULL) its posteriors."""
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


cdef struct Priors:
    # a fit's class priors, as the rows' posteriors read them
    const double* PI            # [K]
    const double* logprior      # [K]: their logs
    int K


cdef inline double _row_numerator_sum(const double* pr, const double* acc, const double* PI, int K,
                                      double* numer) noexcept nogil:
    """s = sum_k PI_k pr[k] in class order, where a row's numerators PI_k f_k,
    from its class densities as pyopnb_products_n leaves them (f_k = pr[k]
    exp(acc[k])), can be taken as PI_k pr[k]: every product stayed whole
    (acc 0) and each PI_k f_k is a normal number. Else 0, which no such s is
    (each term is at least DBL_MIN); s may be inf.

    Unless numer is NULL, PI_k pr[k] goes into numer [K] whatever s, for a
    caller that needs them too; the posteriors pass NULL, where forming them
    again beats a round trip through memory."""
    cdef int k
    cdef bint whole = True
    cdef double q, s = 0.0
    for k in range(K):
        q = PI[k] * pr[k]
        if numer != NULL:
            numer[k] = q
        # false for NaN; pr <= PYOPNB_PROD_HI keeps an inf out where acc is 0
        whole = whole & (acc[k] == 0.0) & (q >= DBL_MIN) & (pr[k] <= PYOPNB_PROD_HI)
        s = s + q
    return s if whole else 0.0


cdef inline double _row_posterior_products(const double* pr, const double* acc, const Priors* pri, int y,
                                           double* post, bint term, double* lf) noexcept nogil:
    """One row from its class densities as pyopnb_products_n leaves them
    (f_k = pr[k] exp(acc[k])): the row's term of l (when ``term``; else 0)
    and (unless post is NULL) its posteriors.

    Where every product stayed whole (acc 0) and each PI_k f_k is a normal
    number, they are combined as they are: posteriors PI_k f_k / s and the
    term log(PI_y f_y / s), s = sum_k PI_k f_k in class order. That is one
    log a row and no exp, where the logs of the products and a log-sum-exp
    took K logs, K - 1 exps and a log; and the posteriors round once, where
    each went through a log and an exp. Otherwise (a product closed, a
    density 0, inf or NaN) the row's logs go into lf [K] (scratch) and
    through _row_posterior, which never underflows.
    """
    cdef int k, K = pri.K
    cdef const double* PI = pri.PI
    cdef double s = _row_numerator_sum(pr, acc, PI, K, NULL), r
    if s != 0.0 and s <= DBL_MAX:
        if post != NULL:
            for k in range(K):
                post[k] = PI[k] * pr[k] / s
        if not term:
            return 0.0
        r = PI[y] * pr[y] / s
        if r >= DBL_MIN:
            return log(r)
        # the class of the row is hundreds of nats behind: the ratio would lose digits
        return log(PI[y] * pr[y]) - log(s)
    for k in range(K):
        lf[k] = acc[k] + log(pr[k])
    return _row_posterior(lf, pri.logprior, K, y, post)
