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

cdef extern from "_reflapack.h" nogil:
    void rl_dsytrd_l(int n, double* a, int lda, double* d, double* e, double* tau, double* work)
    int rl_dstemr(int n, double* d, double* e, double* w, double* z)
    int rl_dsyevr(int n, double* a, double* w, double* z)
    int rl_dlasq2(int n, double* z)
    ctypedef struct rl_spectrum:
        int nsplit, m
        double pivmin, vl, vu
        int *isplit
        int *iblock
        int *indexw
        double *W
        double *WERR
        double *WGAP
        double *GERS
    int rl_dlarre(int n, double* D, double* E, double* E2, double spltol, rl_spectrum* sp, double* WORK)

__all__ = ["r_eigen"]


def _symmetric(A, what):
    Aa = np.array(A, dtype=np.float64, order="F")
    if Aa.ndim != 2 or Aa.shape[0] != Aa.shape[1]:
        raise ValueError(f"{what} needs a square matrix, got shape {Aa.shape}")
    if not np.all(np.isfinite(Aa)):
        raise ValueError(f"{what}: the matrix has NaN or infinite entries")
    return Aa


def r_eigen(A):
    """R's ``eigen(A, symmetric = TRUE)``: eigenvalues in decreasing order and
    the eigenvectors (columns), with the signs and the bits R's eigen gives
    where R links reference LAPACK (Debian's and R's own builds).

    The lower triangle is read, as R's eigen reads it. Raises ArithmeticError
    in the rare case where reference LAPACK's MRRR solver gives up and dsyevr
    turns to another algorithm (inverse iteration), which is not ported.
    """
    Aa = _symmetric(A, "r_eigen")
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


def _dsytrd_lower(A):
    """dsytrd('L') as dsyevr calls it: (d, e, tau, A overwritten with the reflectors)."""
    Aa = _symmetric(A, "_dsytrd_lower")
    cdef int n = Aa.shape[0]
    d = np.zeros(n)
    e = np.zeros(max(n - 1, 1))
    tau = np.zeros(max(n - 1, 1))
    work = np.zeros(max(n, 1) * 28)
    cdef double[::1, :] av = Aa
    cdef double[::1] dv = d, ev = e, tv = tau, wk = work
    if n > 0:
        rl_dsytrd_l(n, &av[0, 0], n, &dv[0], &ev[0], &tv[0], &wk[0])
    return d, e[:n - 1], tau[:n - 1], Aa


def _dstemr(d, e):
    """dstemr('V', 'A') on the tridiagonal (d, e): (w ascending, Z), or info."""
    dd = np.array(d, dtype=np.float64)
    cdef int n = dd.size, info
    ee = np.zeros(max(n, 1))
    ee[:n - 1] = e
    w = np.zeros(max(n, 1))
    Z = np.zeros((max(n, 1), max(n, 1)), order="F")
    cdef double[::1] dv = dd, ev = ee, wv = w
    cdef double[::1, :] zv = Z
    info = rl_dstemr(n, &dv[0], &ev[0], &wv[0], &zv[0, 0])
    if info != 0:
        return info
    return w[:n], Z[:n, :n]


def _dlarre(d, e, double spltol):
    """dlarre('A') on (d, e) with dstemr's split tolerance: its outputs, for tests."""
    cdef int n = len(d), info
    D = np.zeros(n + 1); D[1:] = d
    E = np.zeros(n + 1); E[1:n] = e
    E2 = E * E
    W = np.zeros(n + 1); WERR = np.zeros(n + 1); WGAP = np.zeros(n + 1); GERS = np.zeros(2 * n + 1)
    ib = np.zeros(3 * n + 3, dtype=np.intc)
    WORK = np.zeros(6 * n + 1)
    cdef double[::1] Dv = D, Ev = E, E2v = E2, Wv = W, WEv = WERR, WGv = WGAP, Gv = GERS, WKv = WORK
    cdef int[::1] ibv = ib
    cdef rl_spectrum sp
    sp.isplit = &ibv[0]
    sp.iblock = &ibv[n + 1]
    sp.indexw = &ibv[2 * n + 2]
    sp.W = &Wv[0]; sp.WERR = &WEv[0]; sp.WGAP = &WGv[0]; sp.GERS = &Gv[0]
    info = rl_dlarre(n, &Dv[0], &Ev[0], &E2v[0], spltol, &sp, &WKv[0])
    return dict(info=info, D=D[1:], L=E[1:], W=W[1:], WERR=WERR[1:], WGAP=WGAP[1:], nsplit=sp.nsplit,
                pivmin=sp.pivmin, iblock=ib[n + 2:2 * n + 2].copy())
