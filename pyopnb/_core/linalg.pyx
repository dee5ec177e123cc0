# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""Dense linear algebra in a fixed order: the same bits on every CPU and thread count.

BLAS and LAPACK choose their kernels by CPU (OpenBLAS's core types), and
numpy's exp and log by SIMD level, so results computed through them move in
their last bits from one machine to the next; R's (reference BLAS and
LAPACK) do not. Everything here sums each output in a stated order, without
FMA, and takes exp and log from the C library as R does. Where R computes
the same quantity (crossprod, cov, sum, colSums), R's order is used:
reference BLAS adds products in index order, and R's own sums accumulate in
long double.

Threads split the outputs, never a sum, so the count does not change a bit.
The crossproduct's vector paths (SSE2, AVX2, AVX-512, chosen at run time:
``pyopnb._core.simd``) run across independent outputs and give the same
bits.
"""

import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport sqrt, fabs, exp as c_exp, log as c_log
from libc.stdlib cimport malloc, calloc, free

from pyopnb._core.project import project
from pyopnb._core.common cimport _entry_threads, _row_block_len, _row_blocks
from pyopnb._core.simd cimport simd_path

cnp.import_array()

cdef extern from "_core/linalg.h" nogil:
    ctypedef struct pyopnb_xp_operands:
        const double* A
        Py_ssize_t n
        Py_ssize_t p
        const double* Bt
        Py_ssize_t q
        Py_ssize_t qp
        Py_ssize_t block
    void pyopnb_crossprod_t(int level, const pyopnb_xp_operands* X, double* C, double* part, double* buf, int nthr)
    int PYOPNB_XP_ROWS

__all__ = ["row_blocks", "crossprod", "crossprod_t", "matmul", "eigh", "orthonormal", "c_log_array", "c_exp_array"]



def row_blocks(Py_ssize_t n):
    """(blocks, rows per block): the fixed blocks of n rows that every sum
    over the points goes by (_core/blocks.h)."""
    if n < 1:
        raise ValueError("need n >= 1")
    return int(_row_blocks(n)), int(_row_block_len(n))


def crossprod(A, B, int num_threads):
    """A'B [p, q] for A [n, p], B [n, q]: entry (l, t) = sum_i A[i, l] B[i, t]
    added over i in order (R's crossprod with reference BLAS)."""
    Bt = np.ascontiguousarray(np.asarray(B, dtype=np.float64).T)
    return crossprod_t(np.ascontiguousarray(A, dtype=np.float64), Bt, num_threads)


def crossprod_t(const double[:, ::1] A, const double[:, ::1] Bt, int num_threads, Py_ssize_t block_len=0):
    """A'B [p, q] from A [n, p] and B given transposed, Bt [q, n] (the
    objective's dZ'): t(X) %*% dZ, each entry summed over the rows in order
    within each of the fixed blocks of rows (_core/blocks.h; R's order up
    to one block, 65536 rows), the blocks' partials added in block order.
    Threads take (block, range of l) items as they come free.

    ``block_len``: the rows are whole blocks of a larger problem's, of
    block_len rows each; its blocks' partials are returned, [nblk, p, q],
    for the whole problem's sum in block order."""
    cdef Py_ssize_t n = A.shape[0], p = A.shape[1], q = Bt.shape[0]
    if Bt.shape[1] != n:
        raise ValueError(f"A has {n} rows but Bt has {Bt.shape[1]} columns")
    if block_len < 0:
        raise ValueError("block_len must be positive (or 0: the blocks of n rows)")
    cdef bint parts = block_len > 0
    cdef Py_ssize_t B = block_len if parts else _row_block_len(n)
    cdef Py_ssize_t nblk = (n + B - 1) // B if n else 0
    if n == 0 or p == 0 or q == 0:
        return np.zeros((nblk, p, q)) if parts else np.zeros((p, q))
    cdef Py_ssize_t qp = ((q + 7) // 8) * 8
    C = np.empty((p, qp))
    cdef double[:, ::1] cv = C
    cdef int level = simd_path(), nthr = max(1, _entry_threads(num_threads, n * p * q))
    buf = np.empty(nthr * PYOPNB_XP_ROWS * qp)  # each thread's rows of B
    part = np.empty(nblk * p * qp if nblk > 1 or parts else 1)  # the blocks' partials
    cdef double[::1] bv = buf, pv = part
    cdef pyopnb_xp_operands X = pyopnb_xp_operands(A=&A[0, 0], n=n, p=p, Bt=&Bt[0, 0], q=q, qp=qp, block=B)
    with nogil:
        pyopnb_crossprod_t(level, &X, <double*> NULL if parts else &cv[0, 0], &pv[0], &bv[0], nthr)
    if parts:
        return np.ascontiguousarray(part.reshape(nblk, p, qp)[:, :, :q])
    return np.ascontiguousarray(C[:, :q])


def matmul(A, B, int num_threads=1):
    """A @ B with each entry summed over the inner index in order, without
    FMA (R's %*% with reference BLAS)."""
    A = np.ascontiguousarray(A, dtype=np.float64)
    B = np.ascontiguousarray(B, dtype=np.float64)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"matmul needs (m, k) @ (k, q), got {A.shape} @ {B.shape}")
    if B.shape[1] == 0 or A.shape[0] == 0:
        return np.zeros((A.shape[0], B.shape[1]))
    return np.ascontiguousarray(project(A, B, num_threads).T)


# ---------------------------------------------------------------------------
# a symmetric eigensolver: cyclic Jacobi
# ---------------------------------------------------------------------------

cdef int _jacobi(double* a, double* v, Py_ssize_t d, int max_sweeps) noexcept nogil:
    """Diagonalise the symmetric a [d, d] (both triangles, row-major) by
    cyclic-by-row Jacobi rotations, Rutishauser's formulas; v [d, d] gets the
    rotations' product, vector k in row k. Returns the sweeps taken, or -1
    if max_sweeps did not suffice.

    A rotation of (p, q) is skipped, and a_pq set to 0, when 100 |a_pq| is
    negligible beside both diagonals or beside the matrix's largest
    diagonal; for the first three sweeps, entries under a fifth of the mean
    off-diagonal size wait. Every step is a fixed sequence of operations."""
    cdef Py_ssize_t p, q, r
    cdef int sweep
    cdef double off, thresh, apq, g, h, theta, t, c, s, tau, arp, arq, scale = 0.0
    for p in range(d):
        for q in range(d):
            v[p * d + q] = 1.0 if p == q else 0.0
        if fabs(a[p * d + p]) > scale:
            scale = fabs(a[p * d + p])
    for sweep in range(1, max_sweeps + 1):
        off = 0.0
        for p in range(d):
            for q in range(p + 1, d):
                off = off + fabs(a[p * d + q])
        if off == 0.0:
            return sweep - 1
        thresh = 0.2 * off / (d * d) if sweep < 4 else 0.0
        for p in range(d - 1):
            for q in range(p + 1, d):
                apq = a[p * d + q]
                g = 100.0 * fabs(apq)
                if sweep > 4 and ((fabs(a[p * d + p]) + g == fabs(a[p * d + p])
                                   and fabs(a[q * d + q]) + g == fabs(a[q * d + q])) or scale + g == scale):
                    a[p * d + q] = 0.0
                    a[q * d + p] = 0.0
                    continue
                if fabs(apq) <= thresh or apq == 0.0:
                    continue
                h = a[q * d + q] - a[p * d + p]
                if fabs(h) + g == fabs(h):
                    t = apq / h
                else:
                    theta = 0.5 * h / apq
                    t = 1.0 / (fabs(theta) + sqrt(1.0 + theta * theta))
                    if theta < 0.0:
                        t = -t
                c = 1.0 / sqrt(1.0 + t * t)
                s = t * c
                tau = s / (1.0 + c)
                a[p * d + p] = a[p * d + p] - t * apq
                a[q * d + q] = a[q * d + q] + t * apq
                a[p * d + q] = 0.0
                a[q * d + p] = 0.0
                for r in range(d):
                    if r == p or r == q:
                        continue
                    arp = a[p * d + r]
                    arq = a[q * d + r]
                    a[p * d + r] = arp - s * (arq + tau * arp)
                    a[q * d + r] = arq + s * (arp - tau * arq)
                    a[r * d + p] = a[p * d + r]
                    a[r * d + q] = a[q * d + r]
                for r in range(d):
                    arp = v[p * d + r]
                    arq = v[q * d + r]
                    v[p * d + r] = arp - s * (arq + tau * arp)
                    v[q * d + r] = arq + s * (arp - tau * arq)
    return -1


def eigh(A):
    """Eigenvalues (decreasing, as R's eigen) and eigenvectors (columns) of
    a symmetric matrix, by cyclic Jacobi: deterministic, no LAPACK.

    Sign convention: each eigenvector's entry of largest absolute value is
    positive (the first such entry on ties). Equal eigenvalues keep the
    order of the diagonal positions Jacobi converged to."""
    Aa = np.array(A, dtype=np.float64, order="C")
    if Aa.ndim != 2 or Aa.shape[0] != Aa.shape[1]:
        raise ValueError(f"eigh needs a square matrix, got shape {Aa.shape}")
    if not np.all(np.isfinite(Aa)):
        raise ValueError("eigh: the matrix has NaN or infinite entries")
    cdef Py_ssize_t d = Aa.shape[0], k, j, big
    # the mean of the two triangles: exactly symmetric, so both rotate alike
    Aa = (Aa + Aa.T) * 0.5
    Aa = np.ascontiguousarray(Aa)
    Vr = np.empty((d, d))
    if d == 0:
        return np.empty(0), np.empty((0, 0))
    cdef double[:, ::1] av = Aa
    cdef double[:, ::1] vv = Vr
    cdef int sweeps
    with nogil:
        sweeps = _jacobi(&av[0, 0], &vv[0, 0], d, 100)
    if sweeps < 0:
        raise ArithmeticError("eigh: Jacobi rotations did not converge in 100 sweeps")
    vals = np.diagonal(Aa).copy()
    order = sorted(range(d), key=lambda i: (-vals[i], i))
    vals = vals[order]
    vecs = np.ascontiguousarray(Vr[order].T)
    for k in range(d):
        big = int(np.argmax(np.abs(vecs[:, k])))
        if vecs[big, k] < 0:
            vecs[:, k] = -vecs[:, k]
    return vals, vecs


def orthonormal(D):
    """An orthonormal basis of D's columns, in order: Gram-Schmidt, each
    column projected off the earlier ones twice ("twice is enough"), sums in
    index order. The columns must be independent: a column left with under
    1e-10 of its norm by the projections is an error."""
    Q = np.array(D, dtype=np.float64, order="F")
    if Q.ndim != 2:
        raise ValueError("orthonormal needs a matrix")
    cdef Py_ssize_t n = Q.shape[0], r = Q.shape[1], j, k, i, rep
    cdef double[::1, :] qv = Q
    cdef double s, nrm, before
    for j in range(r):
        s = 0.0
        for i in range(n):
            s = s + qv[i, j] * qv[i, j]
        before = sqrt(s)
        for rep in range(2):
            for k in range(j):
                s = 0.0
                for i in range(n):
                    s = s + qv[i, k] * qv[i, j]
                for i in range(n):
                    qv[i, j] = qv[i, j] - s * qv[i, k]
        s = 0.0
        for i in range(n):
            s = s + qv[i, j] * qv[i, j]
        nrm = sqrt(s)
        if not nrm > 1e-10 * before:
            raise ValueError("orthonormal: the columns are not independent")
        for i in range(n):
            qv[i, j] = qv[i, j] / nrm
    return np.ascontiguousarray(Q)


ctypedef double (*_unary)(double) noexcept nogil


cdef _each(x, _unary f):
    arr = np.array(x, dtype=np.float64, order="C")
    cdef double[::1] v = arr.reshape(-1)
    cdef Py_ssize_t i
    for i in range(v.shape[0]):
        v[i] = f(v[i])
    return arr


def c_log_array(x):
    """log of each entry by the C library's log (R's), not numpy's SIMD log."""
    return _each(x, c_log)


def c_exp_array(x):
    """exp of each entry by the C library's exp (R's), not numpy's SIMD exp."""
    return _each(x, c_exp)
