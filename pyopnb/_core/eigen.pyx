# cython: boundscheck=False, wraparound=False, cdivision=True
"""R's ``eigen`` on a symmetric matrix, in pyopnb's own fixed-order code.

R's OPNB starts from ``eigen(cov(Xs))$vectors``; R's eigen calls LAPACK's
dsyevr, whose eigenvectors' signs (and last bits) are those of the path it
takes: Householder tridiagonalisation (dsytrd), then MRRR (dstemr: dqds
eigenvalues, twisted factorisations), then the reflectors applied back
(dormtr). ``_reflapack.h`` follows reference LAPACK 3.11 and reference BLAS,
R's usual LAPACK, operation for operation; nothing here calls a BLAS or
LAPACK library, so the result is the same on every CPU.
"""
import numpy as np

cimport numpy as cnp

cnp.import_array()

cdef extern from "_core/reflapack.h" nogil:
    int rl_dsyevr(int n, double* a, double* w, double* z)

__all__ = ["r_eigen"]


def r_eigen(A):
    """R's ``eigen(A, symmetric = TRUE)``: eigenvalues in decreasing order and
    the eigenvectors (columns), with the signs and the bits R's eigen gives
    where R links reference LAPACK (Debian's and R's own builds).

    The lower triangle is read, as R's eigen reads it. Raises ArithmeticError
    in the rare case where reference LAPACK's MRRR solver gives up and dsyevr
    turns to another algorithm (inverse iteration), which is not ported.
    """
    Aa = np.array(A, dtype=np.float64, order="F")
    if Aa.ndim != 2 or Aa.shape[0] != Aa.shape[1]:
        raise ValueError(f"r_eigen needs a square matrix, got shape {Aa.shape}")
    if not np.all(np.isfinite(Aa)):
        raise ValueError("r_eigen: the matrix has NaN or infinite entries")
    cdef int n = Aa.shape[0], info
    w = np.empty(n)
    Z = np.zeros((n, n), order="F")
    if n == 0:
        return w, Z
    cdef double[::1, :] av = Aa
    cdef double[::1] wv = w
    cdef double[::1, :] zv = Z
    with nogil:
        info = rl_dsyevr(n, &av[0, 0], &wv[0], &zv[0, 0])
    if info != 0:
        raise ArithmeticError(f"r_eigen: reference LAPACK's MRRR solver (dstemr) would stop here (info {info}), "
                              f"and R's eigen would take dsyevr's inverse-iteration fallback, which pyopnb does "
                              f"not reproduce")
    return w[::-1].copy(), np.ascontiguousarray(Z[:, ::-1])

