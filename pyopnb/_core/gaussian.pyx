# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""OPGD's objective with diagonal Gaussian class densities on a projection
(the authors' fnb_G_2 and dfnb_G_2), compiled: at the sizes of the papers'
experiment a fit makes a few dozen evaluations of a few microseconds' work
each, which numpy's per-operation overhead made a hundred. Posteriors come
from the core's _row_posterior, as every classifier's."""
import numpy as np
cimport numpy as cnp
from libc.math cimport log

from pyopnb._core.posteriors cimport _row_posterior

cnp.import_array()


cdef class _Projected:
    """The class statistics on the projection V [p, q]: SV = S_k V [K, p, q],
    the variances s = diag(V' S_k V) [K, q], the means M = mu_k' V [K, q] and
    -1/2 sum_j log s_kj [K]."""
    cdef double[:, :, ::1] SV
    cdef double[:, ::1] s, M
    cdef double[::1] half_logdet

    def __init__(self, const double[:, ::1] V, const double[:, ::1] means, const double[:, :, ::1] covs):
        cdef Py_ssize_t K = means.shape[0], p = V.shape[0], q = V.shape[1], k, a, r, j
        cdef double acc
        if means.shape[1] != p or covs.shape[0] != K or covs.shape[1] != p or covs.shape[2] != p:
            raise ValueError(f"means must be (K, {p}) and covs (K, {p}, {p})")
        self.SV = np.zeros((K, p, q))
        self.s = np.zeros((K, q))
        self.M = np.zeros((K, q))
        self.half_logdet = np.zeros(K)
        for k in range(K):
            for a in range(p):
                for j in range(q):
                    acc = 0.0
                    for r in range(p):
                        acc = acc + covs[k, a, r] * V[r, j]
                    self.SV[k, a, j] = acc
            for j in range(q):
                acc = 0.0
                for a in range(p):
                    acc = acc + V[a, j] * self.SV[k, a, j]
                if not acc > 0.0:  # also NaN
                    raise ValueError("a class has zero variance on the projection")
                self.s[k, j] = acc
                self.half_logdet[k] = self.half_logdet[k] - 0.5 * log(acc)
                acc = 0.0
                for a in range(p):
                    acc = acc + means[k, a] * V[a, j]
                self.M[k, j] = acc

    cdef void row(self, const double* x, const double[:, ::1] V, double* z, double* lf) noexcept nogil:
        """z = V' x [q], and lf [K]: each class's log density at z less the
        (2 pi)^(q/2) that every class shares."""
        cdef Py_ssize_t p = V.shape[0], q = V.shape[1], K = self.s.shape[0], a, j, k
        cdef double acc, r
        for j in range(q):
            z[j] = 0.0
        for a in range(p):
            for j in range(q):
                z[j] = z[j] + x[a] * V[a, j]
        for k in range(K):
            acc = 0.0
            for j in range(q):
                r = z[j] - self.M[k, j]
                acc = acc + r * r / self.s[k, j]
            lf[k] = self.half_logdet[k] - 0.5 * acc


def diagonal_terms(const double[:, ::1] X, const double[:, ::1] V, const double[:, ::1] means,
                   const double[:, :, ::1] covs):
    """[m, K]: each row's class log densities under N(V' mu_k, diag(V' S_k V))
    less the (2 pi)^(q/2) that every class shares."""
    if X.shape[1] != V.shape[0]:
        raise ValueError(f"X has {X.shape[1]} columns but V has {V.shape[0]} rows")
    cdef _Projected pr = _Projected(V, means, covs)
    cdef Py_ssize_t m = X.shape[0], K = means.shape[0], i
    out = np.empty((m, K))
    z = np.empty(max(1, V.shape[1]))
    cdef double[:, ::1] ov = out
    cdef double[::1] zv = z
    for i in range(m):
        pr.row(&X[i, 0], V, &zv[0], &ov[i, 0])
    return out


def diagonal_objective(const double[:, ::1] X, const double[:, ::1] V, const Py_ssize_t[::1] codes,
                       const double[::1] log_prior, const double[:, ::1] means, const double[:, :, ::1] covs,
                       bint gradient):
    """(sum_i log P(y_i | z_i), its gradient in V [p, q] or None) with
    P from the diagonal Gaussian class densities (see _opgd.opgd_objective).
    With r_ijk = z_ij - M_kj and c_ik = 1{y_i = k} - P_ik, column j of the
    gradient is sum_k [-(S_k V_j / s_kj) b_kj + mu_k w_kj] - sum_i x_i W_ij,
    b_kj = sum_i c_ik (1 - r_ijk^2 / s_kj), w_kj = sum_i c_ik r_ijk / s_kj and
    W_ij = sum_k c_ik r_ijk / s_kj."""
    cdef Py_ssize_t n = X.shape[0], p = V.shape[0], q = V.shape[1], K = means.shape[0], i, a, j, k
    if X.shape[1] != p or codes.shape[0] != n or log_prior.shape[0] != K:
        raise ValueError("X, V, codes and log_prior do not match")
    cdef _Projected pr = _Projected(V, means, covs)
    work = np.zeros(2 * K + 2 * q + 2 * K * q)
    G = np.zeros((p, q))
    cdef double[::1] wv = work
    cdef double[:, ::1] Gv = G
    cdef double* lf = &wv[0]
    cdef double* post = &wv[K]
    cdef double* z = &wv[2 * K]
    cdef double* Wi = &wv[2 * K + q]
    cdef double* b = &wv[2 * K + 2 * q]
    cdef double* w = &wv[2 * K + 2 * q + K * q]
    cdef double value = 0.0, c, u, r
    cdef int y
    for i in range(n):
        y = <int>codes[i]
        if y < 0 or y >= K:
            raise ValueError(f"codes must be in 0..{K - 1}")
        pr.row(&X[i, 0], V, z, lf)
        value = value + _row_posterior(lf, &log_prior[0], <int>K, y, post if gradient else NULL)
        if not gradient:
            continue
        for j in range(q):
            Wi[j] = 0.0
        for k in range(K):
            c = (1.0 if k == y else 0.0) - post[k]
            for j in range(q):
                r = z[j] - pr.M[k, j]
                u = c * r / pr.s[k, j]
                Wi[j] = Wi[j] + u
                w[k * q + j] = w[k * q + j] + u
                b[k * q + j] = b[k * q + j] + (c - u * r)
        for a in range(p):
            for j in range(q):
                Gv[a, j] = Gv[a, j] - X[i, a] * Wi[j]
    if not gradient:
        return value, None
    for k in range(K):
        for a in range(p):
            for j in range(q):
                Gv[a, j] = Gv[a, j] + means[k, a] * w[k * q + j] - pr.SV[k, a, j] * (b[k * q + j] / pr.s[k, j])
    return value, G
