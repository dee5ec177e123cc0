# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""Z = XV and R's column statistics, each summed in R's order (to R's bits)."""
import numpy as np
from cython.parallel cimport prange
from libc.stdlib cimport malloc, free
from libc.math cimport sqrt

from pyopnb._simd cimport pyopnb_project_row


def project(const double[:, ::1] X, const double[:, ::1] V, int num_threads, out=None):
    """Z' = (X V)', each entry summed over the features in order, without FMA.

    That is how R's reference BLAS forms X %*% V. OpenBLAS rounds differently,
    and on ill-conditioned problems the last bit of Z decides where
    L-BFGS-B's line search stops, so R's fits are only reproduced with R's order.
    ``out``: a C-contiguous [ndim, n] float64 array to write into (else a new one).
    """
    cdef Py_ssize_t n = X.shape[0], p = X.shape[1], nd = V.shape[1], i
    if V.shape[0] != p:
        raise ValueError("V must have as many rows as X has columns")
    # V padded to an even number of columns: the kernel takes them in pairs
    if nd % 2:
        Vc = np.zeros((p, nd + 1))
        Vc[:, :nd] = V
    else:
        Vc = V
    cdef Py_ssize_t ndp = Vc.shape[1]
    cdef const double[:, ::1] vc = Vc
    if (isinstance(out, np.ndarray) and out.shape == (nd, n) and out.dtype == np.float64
            and out.flags.c_contiguous and out.flags.writeable):
        Zt = out
    else:
        Zt = np.empty((nd, n))
    if n == 0 or nd == 0:
        return Zt
    cdef double[:, ::1] zt = Zt
    cdef const double* vp = &vc[0, 0] if p > 0 else NULL
    cdef const double* xp
    with nogil:
        for i in prange(n, num_threads=max(1, num_threads), schedule="static"):
            xp = &X[i, 0] if p > 0 else NULL
            pyopnb_project_row(xp, p, vp, ndp, nd, &zt[0, i], n)
    return Zt


# ---------------------------------------------------------------------------
# R's column statistics, to the bit: R sums left to right in long double
# ---------------------------------------------------------------------------

cdef void _col_sums(const double[:, ::1] X, const long double* centre, bint square,
                    long double* s, int nthr) noexcept nogil:
    """s[j] = sum_i (X[i, j] - centre[j]) (squared if square), added in row
    order in long double; centre NULL for 0. Each thread takes a range of
    columns and reads the rows in order, all its columns at once: a column's
    sum is the same whoever adds it."""
    cdef Py_ssize_t n = X.shape[0], p = X.shape[1], i, j, j0, j1
    cdef int part, nparts = <int> max(1, min(nthr, p))
    cdef long double v
    for part in prange(nparts, num_threads=nparts, schedule='static'):
        j0 = part * p // nparts
        j1 = (part + 1) * p // nparts
        for j in range(j0, j1):
            s[j] = 0.0
        for i in range(n):
            for j in range(j0, j1):
                v = <long double> X[i, j]
                if centre != NULL:
                    v = v - centre[j]
                if square:
                    v = v * v
                s[j] = s[j] + v


def r_colmeans(const double[:, ::1] X, int num_threads):
    """R's colMeans: each column summed left to right in long double, over n."""
    cdef Py_ssize_t n = X.shape[0], p = X.shape[1], j
    out = np.empty(p)
    cdef double[::1] ov = out
    cdef long double* s = <long double*> malloc(max(p, 1) * sizeof(long double))
    if s == NULL:
        raise MemoryError()
    with nogil:
        _col_sums(X, NULL, False, s, num_threads)
        for j in range(p):
            ov[j] = <double> (s[j] / n)
    free(s)
    return out


def r_var(const double[:, ::1] X, int num_threads):
    """R's var of each column (n >= 2): a long-double mean refined once
    (m + sum(x - m) / n), then the long-double sum of squared deviations over
    n - 1, rounded to double."""
    cdef Py_ssize_t n = X.shape[0], p = X.shape[1], j
    if n < 2:
        raise ValueError("var needs at least two rows")
    out = np.empty(p)
    cdef double[::1] ov = out
    cdef long double* m = <long double*> malloc(max(p, 1) * sizeof(long double))
    cdef long double* s = <long double*> malloc(max(p, 1) * sizeof(long double))
    if m == NULL or s == NULL:
        free(m); free(s)
        raise MemoryError()
    with nogil:
        _col_sums(X, NULL, False, m, num_threads)
        for j in range(p):
            m[j] = m[j] / n
        _col_sums(X, m, False, s, num_threads)
        for j in range(p):
            m[j] = m[j] + s[j] / n
        _col_sums(X, m, True, s, num_threads)
        for j in range(p):
            ov[j] = <double> (s[j] / (n - 1))
    free(m); free(s)
    return out


def r_sd(const double[:, ::1] X, int num_threads):
    """R's sd of each column (n >= 2): the square root of :func:`r_var`, taken in double."""
    return np.sqrt(r_var(X, num_threads))
