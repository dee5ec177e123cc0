# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""Z = XV, each entry summed in R's order (to R's bits)."""
import numpy as np
from cython.parallel cimport prange

from pyopnb._core.common cimport _entry_threads
from pyopnb._core.simd cimport simd_path

cdef extern from "_core/project.h" nogil:
    ctypedef struct pyopnb_projection:
        Py_ssize_t p
        const double* V
        Py_ssize_t ndp
        Py_ssize_t nd
        Py_ssize_t n
        const double* mu
    ctypedef struct pyopnb_project_run:
        const double* x
        int R
        double* zt
    # a run of rows of Z' = (X V)' (or ((X - mu) V)') in R's summation order
    void pyopnb_project_rows(int level, const pyopnb_projection* P, pyopnb_project_run rows)

cdef extern from "_core/simd.h" nogil:
    void pyopnb_prefetch(const double* a, Py_ssize_t len)


# rows a call of pyopnb_project_rows takes: a multiple of every chunk's row count
DEF _ROWS = 24
# the block of rows asked of memory while a block is projected: this many ahead
DEF _AHEAD = 2


def project(const double[:, ::1] X, const double[:, ::1] V, int num_threads, out=None,
            const double[::1] mu=None):
    """Z' = (X V)', each entry summed over the features in order, without FMA.

    That is how R's reference BLAS forms X %*% V. OpenBLAS rounds differently,
    and on ill-conditioned problems the last bit of Z decides where
    L-BFGS-B's line search stops, so R's fits are only reproduced with R's order.
    ``out``: a C-contiguous [ndim, n] float64 array to write into (else a new one).
    ``mu`` [p]: ((X - mu) V)' instead, each x - mu the one subtraction of R's
    ``sweep(X, 2, mu)``, with no centred copy of X.
    """
    cdef Py_ssize_t n = X.shape[0], p = X.shape[1], nd = V.shape[1], i
    if V.shape[0] != p:
        raise ValueError("V must have as many rows as X has columns")
    if mu is not None and mu.shape[0] != p:
        raise ValueError("mu must hold one value per column of X")
    # V padded with zero columns to a multiple of 8: each vector path loads
    # whole registers of columns (2, 4 or 8)
    if nd % 8:
        Vc = np.zeros((p, nd + 8 - nd % 8))
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
    cdef Py_ssize_t nblk = (n + _ROWS - 1) // _ROWS
    cdef int level = simd_path()
    cdef const double* mup = NULL
    if mu is not None and p > 0:
        mup = &mu[0]
    cdef pyopnb_projection proj = pyopnb_projection(p=p, V=vp, ndp=ndp, nd=nd, n=n, mu=mup)
    with nogil:
        for i in prange(nblk, num_threads=_entry_threads(num_threads, n * p * nd), schedule="static"):
            xp = &X[i * _ROWS, 0] if p > 0 else NULL
            if i + _AHEAD < nblk:
                pyopnb_prefetch(xp + _AHEAD * _ROWS * p, min(_ROWS, n - (i + _AHEAD) * _ROWS) * p)
            pyopnb_project_rows(level, &proj, pyopnb_project_run(x=xp, R=<int> min(_ROWS, n - i * _ROWS),
                                                                 zt=&zt[0, i * _ROWS]))
    return Zt
