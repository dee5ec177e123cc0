# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""Test support: Python entry points to pieces of the compiled core that the
product calls only from C (the gap decays of the kernel-sum recursion, the
argsorts), so that tests can hold each to its reference alone. Nothing in
pyopnb imports this module."""
import numpy as np

from pyopnb._core.common cimport _MAX_ORDER, _block_sum, _row_block_len, _row_blocks
from pyopnb._core.decay cimport pyopnb_decay as _decay, pyopnb_decay_from_exp as _decay_from_exp, pyopnb_exps as _exps
from pyopnb._core.sort cimport SortMemo, _argsort, _argsort_memo

MAX_ORDER = _MAX_ORDER


def gap_decays(const double[::1] dist, const double[::1] h, int a):
    """T [m, r, a+1]: d^k exp(-d), d = dist[j] / h[c], as the recursion takes
    each gap in the class bandwidths h (r > 1 of them) or in one (r = 1)."""
    cdef Py_ssize_t m = dist.shape[0], j
    cdef int r = h.shape[0], c
    if r < 1 or a < 0 or a > MAX_ORDER:
        raise ValueError("need a bandwidth and 0 <= a <= MAX_ORDER")
    T = np.empty((m, r, a + 1))
    E = np.empty(r)
    cdef double[:, :, ::1] tv = T
    cdef double[::1] ev = E
    for j in range(m):
        if r == 1:
            _decay(dist[j] / h[0], a, &tv[j, 0, 0])
            continue
        _exps(dist[j], &h[0], r, &ev[0])
        for c in range(r):
            _decay_from_exp(ev[c], dist[j] / h[c], a, &tv[j, c, 0])
    return T


def row_blocks(Py_ssize_t n):
    """(number of blocks, rows per block) of the fixed blocks of n rows (_core/blocks.h)."""
    return _row_blocks(n), _row_block_len(n)


def block_sum(const double[::1] t, w=None):
    """sum_i w_i t_i (w None: sum_i t_i) as the value sums its points' terms: by the fixed blocks of rows."""
    cdef Py_ssize_t n = t.shape[0]
    cdef const double[::1] wv
    cdef const double* wp = NULL
    if w is not None:
        wv = np.ascontiguousarray(w, dtype=np.float64)
        if wv.shape[0] != n:
            raise ValueError("w must have one entry per term")
        wp = &wv[0] if n else NULL
    return _block_sum(&t[0], wp, n) if n else 0.0


def argsort(const double[::1] x, int num_threads):
    """Stable argsort of a float64 vector (merge sort up to SORT_SMALL keys, radix above; NaN-free input)."""
    cdef Py_ssize_t n = x.shape[0]
    out = np.empty(n, dtype=np.intp)
    cdef Py_ssize_t[::1] ov = out
    cdef int rc = 0
    if n:
        with nogil:
            rc = _argsort(&x[0], n, &ov[0], NULL, max(1, num_threads))
    if rc:
        raise MemoryError("argsort: out of memory")
    return out


def argsort_memo(const double[::1] x, double[::1] memo_x, Py_ssize_t[::1] memo_order, double[::1] memo_xs):
    """(order, sorted keys) of x by _argsort_memo, with the memo's arrays
    (memo_order[0] = -1: none yet), which the call updates; for the tests."""
    cdef Py_ssize_t n = x.shape[0]
    if memo_x.shape[0] != n or memo_order.shape[0] != n or memo_xs.shape[0] != n:
        raise ValueError("the memo's arrays must have one entry per key")
    out = np.empty(n, dtype=np.intp)
    xs = np.empty(n)
    cdef Py_ssize_t[::1] ov = out
    cdef double[::1] sv = xs
    cdef SortMemo memo
    cdef int rc = 0
    if n:
        memo.x = &memo_x[0]
        memo.order = &memo_order[0]
        memo.xs = &memo_xs[0]
        with nogil:
            rc = _argsort_memo(&x[0], n, &ov[0], &sv[0], &memo, 1)
    if rc:
        raise MemoryError("argsort_memo: out of memory")
    return out, xs