# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""R's column statistics, to the bit: colMeans, var, sd, cov, sum, colSums,
rowSums and column norms, each added in R's order in long double as R adds
them. Threads take whole columns (or pairs of columns), never a part of one
sum, so the count does not change a bit."""
import numpy as np
from cython.parallel cimport prange
from libc.math cimport sqrt
from libc.stdlib cimport malloc, calloc, free

__all__ = ["r_colmeans", "r_var", "r_sd", "r_cov", "r_sum", "r_colsums", "r_rowsums", "col_norms"]


# rows _col_sums reads at a time
DEF _SUM_ROWS = 256


cdef void _col_sums(const double[:, ::1] X, const long double* centre, bint square,
                    long double* s, int nthr) noexcept nogil:
    """s[j] = sum_i (X[i, j] - centre[j]) (squared if square), added in row
    order in long double; centre NULL for 0. Each thread takes a range of
    columns and reads the rows in order, in blocks of rows that stay in
    cache while each of its columns adds the block in a register: a
    column's sum is the same whoever adds it."""
    cdef Py_ssize_t n = X.shape[0], p = X.shape[1], i, j, j0, j1, i0, i1
    cdef int part, nparts = <int> max(1, min(nthr, p))
    cdef long double v, t
    for part in prange(nparts, num_threads=nparts, schedule='static'):
        j0 = part * p // nparts
        j1 = (part + 1) * p // nparts
        for j in range(j0, j1):
            s[j] = 0.0
        for i0 in range(0, n, _SUM_ROWS):
            i1 = min(n, i0 + _SUM_ROWS)
            for j in range(j0, j1):
                t = s[j]
                for i in range(i0, i1):
                    v = <long double> X[i, j]
                    if centre != NULL:
                        v = v - centre[j]
                    if square:
                        v = v * v
                    t = t + v
                s[j] = t


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


# rows of deviations r_cov holds at a time
DEF _COV_ROWS = 64


def r_cov(const double[:, ::1] X, int num_threads):
    """R's cov(X) for a complete matrix, to the bit: each column's mean a
    long-double sum over n refined once (R's MEAN) and rounded to double;
    each entry the long-double sum of the long-double products of the
    deviations (taken in long double from the double means), over n - 1,
    rounded to double. Threads take ranges of the d(d+1)/2 pairs."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], npair = d * (d + 1) // 2
    cdef Py_ssize_t i, j, k, part, nparts, a0, a1, pr
    if n < 2:
        raise ValueError("cov needs at least two rows")
    out = np.empty((d, d))
    if d == 0:
        return out
    cdef double[:, ::1] ov = out
    cdef double* m = <double*> malloc(d * sizeof(double))
    cdef long double* acc = <long double*> calloc(npair, sizeof(long double))
    cdef Py_ssize_t* pi = <Py_ssize_t*> malloc(npair * sizeof(Py_ssize_t))
    cdef Py_ssize_t* pj = <Py_ssize_t*> malloc(npair * sizeof(Py_ssize_t))
    nparts = max(1, min(num_threads, npair))
    # each part's deviations for a block of rows: a pair's sum then stays in
    # a register through the block (in memory it was stored and reloaded at
    # every row), and still adds the rows in order
    cdef long double* devs = <long double*> malloc(nparts * _COV_ROWS * d * sizeof(long double))
    cdef long double s, t
    cdef long double* dev
    cdef Py_ssize_t k0, nb, a, b
    if m == NULL or acc == NULL or pi == NULL or pj == NULL or devs == NULL:
        free(m); free(acc); free(pi); free(pj); free(devs)
        raise MemoryError()
    pr = 0
    for i in range(d):
        for j in range(i + 1):
            pi[pr] = i
            pj[pr] = j
            pr += 1
    with nogil:
        for j in prange(d, num_threads=<int> max(1, min(num_threads, d)), schedule="static"):
            s = 0.0
            for k in range(n):
                s = s + X[k, j]
            t = s / n
            s = 0.0
            for k in range(n):
                s = s + (X[k, j] - t)
            t = t + s / n
            m[j] = <double> t
        for part in prange(nparts, num_threads=<int> nparts, schedule="static"):
            a0 = part * npair // nparts
            a1 = (part + 1) * npair // nparts
            dev = &devs[part * _COV_ROWS * d]
            for k0 in range(0, n, _COV_ROWS):
                nb = min(<Py_ssize_t> _COV_ROWS, n - k0)
                for k in range(nb):
                    for j in range(d):
                        dev[k * d + j] = <long double> X[k0 + k, j] - <long double> m[j]
                for pr in range(a0, a1):
                    a = pi[pr]
                    b = pj[pr]
                    s = acc[pr]
                    for k in range(nb):
                        s = s + dev[k * d + a] * dev[k * d + b]
                    acc[pr] = s
        for pr in range(npair):
            ov[pi[pr], pj[pr]] = <double> (acc[pr] / (n - 1))
            ov[pj[pr], pi[pr]] = ov[pi[pr], pj[pr]]
    free(m); free(acc); free(pi); free(pj); free(devs)
    return out


def r_sum(x):
    """R's sum of a double vector: added in order in long double."""
    cdef const double[::1] v = np.ascontiguousarray(x, dtype=np.float64).reshape(-1)
    cdef long double s = 0.0
    cdef Py_ssize_t i
    for i in range(v.shape[0]):
        s = s + v[i]
    return <double> s


def r_colsums(const double[:, ::1] X):
    """R's colSums: each column added in row order in long double."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], i, j
    cdef long double* s = <long double*> calloc(max(d, 1), sizeof(long double))
    if s == NULL:
        raise MemoryError()
    out = np.empty(d)
    cdef double[::1] ov = out
    for i in range(n):
        for j in range(d):
            s[j] = s[j] + X[i, j]
    for j in range(d):
        ov[j] = <double> s[j]
    free(s)
    return out


def r_rowsums(const double[:, ::1] X):
    """R's rowSums: each row added in column order in long double."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], i, j
    cdef long double s
    out = np.empty(n)
    cdef double[::1] ov = out
    for i in range(n):
        s = 0.0
        for j in range(d):
            s = s + X[i, j]
        ov[i] = <double> s
    return out


def col_norms(V):
    """R's sqrt(colSums(V^2)): squares in double, each column added in long double."""
    Va = np.ascontiguousarray(V, dtype=np.float64)
    if Va.ndim == 1:
        Va = Va.reshape(-1, 1)
    return np.sqrt(r_colsums(np.ascontiguousarray(Va * Va)))
