# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""R's column statistics, to the bit: colMeans, var, sd, cov, sum, colSums,
rowSums and column norms, each added in R's order in long double as R adds
them. Threads take whole columns (or pairs of columns), never a part of one
sum, so the count does not change a bit. Also whether any column varies,
and sweep: a vector taken from, or multiplied into, every row."""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport sqrt
from libc.stdlib cimport malloc, calloc, free

from pyopnb._core.common cimport _entry_threads

cnp.import_array()

__all__ = ["r_colmeans", "r_var", "r_sd", "r_cov", "col_sums_from", "cov_sums_from", "r_sum", "r_colsums", "r_rowsums", "col_norms", "sweep",
           "any_varies", "col_ranges"]


# rows _col_sums reads at a time
DEF _SUM_ROWS = 256


cdef inline long double _dev(double x, long double c, bint square) noexcept nogil:
    """x - c in long double, squared if square (c 0 for an uncentred sum:
    x - 0 is x, exactly)."""
    cdef long double v = <long double> x - c
    if square:
        v = v * v
    return v


cdef void _col_sums(const double[:, ::1] X, const long double* centre, bint square,
                    long double* s, int nthr, bint carry=False) noexcept nogil:
    """s[j] = sum_i (X[i, j] - centre[j]) (squared if square), added in row
    order in long double; centre NULL for 0; carry: added on to the sums in
    s (the rows before these), else from 0. Each thread takes a range of
    columns and reads the rows in order, in blocks of rows that stay in
    cache while its columns add the block in registers, four columns at a
    time (two when centred): their chains of dependent additions overlap,
    and a column's sum is the same whoever adds it and beside whichever
    others."""
    cdef Py_ssize_t n = X.shape[0], p = X.shape[1], i, j, j0, j1, i0, i1
    cdef int part, nparts = <int> max(1, min(_entry_threads(nthr, n * p), p))
    cdef long double t0, t1, t2, t3, c0, c1
    for part in prange(nparts, num_threads=nparts, schedule='static'):
        j0 = part * p // nparts
        j1 = (part + 1) * p // nparts
        if not carry:
            for j in range(j0, j1):
                s[j] = 0.0
        for i0 in range(0, n, _SUM_ROWS):
            i1 = min(n, i0 + _SUM_ROWS)
            j = j0
            if centre != NULL:
                # two columns, their centres held in registers: four sums and four
                # centres overflow x87's eight registers, and a centre reloaded each
                # row (an 80-bit load, microcoded) made a centred pass four times as
                # slow as a plain one
                while j + 2 <= j1:
                    t0 = s[j]
                    t1 = s[j + 1]
                    c0 = centre[j]
                    c1 = centre[j + 1]
                    for i in range(i0, i1):
                        t0 = t0 + _dev(X[i, j], c0, square)
                        t1 = t1 + _dev(X[i, j + 1], c1, square)
                    s[j] = t0
                    s[j + 1] = t1
                    j = j + 2
            # uncentred only: the pairs leave a centred pass at most one column
            while j + 4 <= j1:
                t0 = s[j]
                t1 = s[j + 1]
                t2 = s[j + 2]
                t3 = s[j + 3]
                for i in range(i0, i1):
                    t0 = t0 + _dev(X[i, j], 0.0, square)
                    t1 = t1 + _dev(X[i, j + 1], 0.0, square)
                    t2 = t2 + _dev(X[i, j + 2], 0.0, square)
                    t3 = t3 + _dev(X[i, j + 3], 0.0, square)
                s[j] = t0
                s[j + 1] = t1
                s[j + 2] = t2
                s[j + 3] = t3
                j = j + 4
            while j < j1:
                t0 = s[j]
                c0 = centre[j] if centre != NULL else 0.0
                for i in range(i0, i1):
                    t0 = t0 + _dev(X[i, j], c0, square)
                s[j] = t0
                j = j + 1


cdef void _r_means(const double[:, ::1] X, long double* m, long double* s, int nthr) noexcept nogil:
    """m[j] = R's MEAN of column j in long double: the sum over n, refined once
    by the mean deviation from it (m + sum(x - m) / n); s: scratch [p]."""
    cdef Py_ssize_t n = X.shape[0], j
    _col_sums(X, NULL, False, m, nthr)
    for j in range(X.shape[1]):
        m[j] = m[j] / n
    _col_sums(X, m, False, s, nthr)
    for j in range(X.shape[1]):
        m[j] = m[j] + s[j] / n


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
    (m + sum(x - m) / n) and rounded to double, as R keeps it, then the
    long-double sum of the squared long-double deviations from it over
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
        _r_means(X, m, s, num_threads)
        for j in range(p):
            m[j] = <double> m[j]
        _col_sums(X, m, True, s, num_threads)
        for j in range(p):
            ov[j] = <double> (s[j] / (n - 1))
    free(m); free(s)
    return out


def r_sd(const double[:, ::1] X, int num_threads):
    """R's sd of each column (n >= 2): the square root of :func:`r_var`, taken in double."""
    return np.sqrt(r_var(X, num_threads))


cdef extern from "_core/cov.h" nogil:
    # a part's means, pairs [a0, a1) and their sums; its deviations' buffers
    ctypedef struct pyopnb_cov_part:
        const double* m
        Py_ssize_t d
        const Py_ssize_t* pi
        const Py_ssize_t* pj
        Py_ssize_t a0
        Py_ssize_t a1
        long double* acc
    ctypedef struct pyopnb_cov_devs:
        double* h
        double* l
        long double* v
        Py_ssize_t stride
    # one block of rows' sums of products of deviations, added to the part's sums
    void pyopnb_cov_block(const double* x, Py_ssize_t nb, const pyopnb_cov_part* P, const pyopnb_cov_devs* buf)


# rows of deviations r_cov holds at a time
DEF _COV_ROWS = 64


cdef void _cov_sums(const double[:, ::1] X, const double* m, const Py_ssize_t* pi, const Py_ssize_t* pj,
                    long double* acc, double* hl, long double* devs, Py_ssize_t nparts) noexcept nogil:
    """acc[pr] += the sum over X's rows, in order, of the long-double products
    of the deviations from m of columns pi[pr] and pj[pr], nparts threads
    taking ranges of the pairs (hl, devs: each one's deviations, cov.h)."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], npair = d * (d + 1) // 2, part, k0
    cdef pyopnb_cov_part share
    cdef pyopnb_cov_devs buf
    for part in prange(nparts, num_threads=<int> nparts, schedule="static"):
        share = pyopnb_cov_part(m=m, d=d, pi=pi, pj=pj, a0=part * npair // nparts,
                                a1=(part + 1) * npair // nparts, acc=acc)
        buf = pyopnb_cov_devs(h=&hl[part * 2 * _COV_ROWS * d], l=&hl[(part * 2 + 1) * _COV_ROWS * d],
                              v=&devs[part * _COV_ROWS * d], stride=_COV_ROWS)
        for k0 in range(0, n, _COV_ROWS):
            pyopnb_cov_block(&X[k0, 0], min(<Py_ssize_t> _COV_ROWS, n - k0), &share, &buf)


def col_sums_from(const double[:, ::1] X, acc, centre=None, bint square=False, int num_threads=1):
    """R's long-double column sums carried on over more rows: acc (long
    double [p]: the sums over the rows before X's, zeros at the first) plus
    each column of X (less centre, long double [p], where given; squared if
    square) added in row order. The new sums, long double [p]: every sum of
    colMeans, var and sd, over rows held in parts, in R's order."""
    cdef Py_ssize_t p = X.shape[1]
    out = np.array(acc, dtype=np.longdouble)
    if out.shape != (p,):
        raise ValueError(f"acc must have one sum per column ({p}), got shape {out.shape}")
    cdef long double* s = <long double*> cnp.PyArray_DATA(out)
    cdef long double* c = NULL
    if centre is not None:
        cen = np.ascontiguousarray(centre, dtype=np.longdouble)
        if cen.shape != (p,):
            raise ValueError(f"centre must have one entry per column ({p}), got shape {cen.shape}")
        c = <long double*> cnp.PyArray_DATA(cen)
    if X.shape[0]:
        with nogil:
            _col_sums(X, c, square, s, num_threads, True)
    return out


def cov_sums_from(const double[:, ::1] X, const double[::1] m, acc, int num_threads=1):
    """R's cov sums carried on over more rows: acc (long double [d(d+1)/2],
    pairs (i, j <= i) row by row; zeros at the first) plus X's rows'
    long-double products of deviations from the means m [d], in row order.
    The new sums: ``cov_from_sums`` gives cov."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], npair = d * (d + 1) // 2, i, j, pr, nparts
    if m.shape[0] != d:
        raise ValueError(f"m must have one mean per column ({d})")
    out = np.array(acc, dtype=np.longdouble)
    if out.shape != (npair,):
        raise ValueError(f"acc must have d(d+1)/2 = {npair} sums, got shape {out.shape}")
    if n == 0 or d == 0:
        return out
    pairs = np.empty((2, npair), dtype=np.intp)
    cdef Py_ssize_t[:, ::1] pv = pairs
    pr = 0
    for i in range(d):
        for j in range(i + 1):
            pv[0, pr] = i
            pv[1, pr] = j
            pr += 1
    nparts = max(1, min(_entry_threads(num_threads, n * npair), npair))
    hl = np.empty(nparts * 2 * _COV_ROWS * d)
    devs = np.empty(nparts * _COV_ROWS * d, dtype=np.longdouble)
    cdef double[::1] hv = hl
    cdef long double* s = <long double*> cnp.PyArray_DATA(out)
    cdef long double* dv = <long double*> cnp.PyArray_DATA(devs)
    with nogil:
        _cov_sums(X, &m[0], &pv[0, 0], &pv[1, 0], s, &hv[0], dv, nparts)
    return out


def r_cov(const double[:, ::1] X, int num_threads):
    """R's cov(X) for a complete matrix, to the bit: each column's mean a
    long-double sum over n refined once (R's MEAN) and rounded to double;
    each entry the long-double sum of the long-double products of the
    deviations (taken in long double from the double means), over n - 1,
    rounded to double. Threads take ranges of the d(d+1)/2 pairs."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], npair = d * (d + 1) // 2
    cdef Py_ssize_t i, j, nparts, pr
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
    nparts = max(1, min(_entry_threads(num_threads, n * npair), npair))
    # each part's deviations for a block of rows, column by column (cov.h):
    # a pair's sum stays in a register through the block and still adds the
    # rows in order
    cdef double* hl = <double*> malloc(nparts * 2 * _COV_ROWS * d * sizeof(double))
    cdef long double* devs = <long double*> malloc(nparts * _COV_ROWS * d * sizeof(long double))
    cdef long double* mm = <long double*> malloc(2 * d * sizeof(long double))
    cdef long double* sm = &mm[d] if mm != NULL else NULL
    if m == NULL or acc == NULL or pi == NULL or pj == NULL or hl == NULL or devs == NULL or mm == NULL:
        free(m); free(acc); free(pi); free(pj); free(hl); free(devs); free(mm)
        raise MemoryError()
    pr = 0
    for i in range(d):
        for j in range(i + 1):
            pi[pr] = i
            pj[pr] = j
            pr += 1
    with nogil:
        _r_means(X, mm, sm, num_threads)
        for j in range(d):
            m[j] = <double> mm[j]
        _cov_sums(X, m, pi, pj, acc, hl, devs, nparts)
        for pr in range(npair):
            ov[pi[pr], pj[pr]] = <double> (acc[pr] / (n - 1))
            ov[pj[pr], pi[pr]] = ov[pi[pr], pj[pr]]
    free(m); free(acc); free(pi); free(pj); free(hl); free(devs); free(mm)
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


def sweep(const double[:, ::1] A, const double[::1] v, double[:, ::1] out, bint subtract, int num_threads):
    """out = A - v (subtract) or A * v, v taken against every row; out may be
    A. Each entry is one IEEE operation, so any threads give the same bits
    (NumPy's broadcast takes a call of its inner loop per short row)."""
    cdef Py_ssize_t n = A.shape[0], p = A.shape[1], i, j
    if v.shape[0] != p or out.shape[0] != n or out.shape[1] != p:
        raise ValueError(f"sweep: A is ({n}, {p}), v ({v.shape[0]},), out ({out.shape[0]}, {out.shape[1]})")
    with nogil:
        if subtract:
            for i in prange(n, num_threads=_entry_threads(num_threads, n * p), schedule="static"):
                for j in range(p):
                    out[i, j] = A[i, j] - v[j]
        else:
            for i in prange(n, num_threads=_entry_threads(num_threads, n * p), schedule="static"):
                for j in range(p):
                    out[i, j] = A[i, j] * v[j]


def any_varies(const double[:, ::1] X):
    """Whether some column of X (NaN-free) holds two values: read until the
    first entry that differs from its column's first (a row or two on most
    data, where a range per column reads all of X)."""
    cdef Py_ssize_t n = X.shape[0], p = X.shape[1], i, j
    for i in range(1, n):
        for j in range(p):
            if X[i, j] != X[0, j]:
                return True
    return False


def col_ranges(const double[:, ::1] X):
    """max - min of each column of X (NaN-free; n >= 1), in one pass over
    the rows: numpy's ptp along the rows of a C-ordered X reduces a row at
    a time, twice, at ten times the cost. The extremes are exact, so the
    ranges are ptp's values."""
    cdef Py_ssize_t n = X.shape[0], p = X.shape[1], i, j
    if n == 0:
        raise ValueError("col_ranges needs at least one row")
    lo = np.array(X[0], dtype=np.float64)
    hi = lo.copy()
    cdef double[::1] lv = lo
    cdef double[::1] hv = hi
    cdef double v
    with nogil:
        for i in range(1, n):
            for j in range(p):
                v = X[i, j]
                lv[j] = v if v < lv[j] else lv[j]
                hv[j] = v if v > hv[j] else hv[j]
    return hi - lo
