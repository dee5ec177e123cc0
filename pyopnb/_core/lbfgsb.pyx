# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""L-BFGS-B as R's ``optim(method = "L-BFGS-B")`` runs it, on unbounded variables.

OPNB maximises with R's optim, whose L-BFGS-B is version 2.3 of Zhu, Byrd,
Lu and Nocedal (Byrd et al. 1995, SIAM J. Sci. Comput. 16, 1190-1208), driven
by optim's loop (at most ``maxit`` iterations, then code 1; a failed line
search is code 52). SciPy's L-BFGS-B is version 3.0 and calls OpenBLAS, whose
kernels differ by CPU: the same fit moved in its last bits with
``OPENBLAS_CORETYPE``. This module follows the 2.3 algorithm step for step on
unbounded variables (OPNB has no bounds), with every inner product summed in
index order as the reference BLAS and LINPACK that R uses do, so that the
iterates do not depend on the CPU, and are R's wherever the objective's
values are.

What unbounded variables leave of the algorithm: the generalised Cauchy point
is needed only while the memory is empty (it is then x - g, the first step
being scaled to unit length by the line search), and afterwards the
subspace step is the L-BFGS step of the compact representation (Byrd,
Nocedal and Schnabel 1994), through the LEL' factorisation of the 2m x 2m
middle matrix. The line search is More and Thuente's (MINPACK-2 dcsrch),
with ftol = 1e-3, gtol = 0.9, xtol = 0.1.
"""
import numpy as np
cimport numpy as cnp
from libc.math cimport sqrt, fabs, isfinite
from libc.stdlib cimport calloc, free

cnp.import_array()

__all__ = ["minimize", "CONVERGED", "ITERATION_LIMIT", "LINE_SEARCH_FAILED"]

# R's optim codes
CONVERGED = 0
ITERATION_LIMIT = 1
LINE_SEARCH_FAILED = 52

cdef double EPSMCH = 2.220446049250313e-16  # DBL_EPSILON

# dcsrch's parameters in L-BFGS-B's line search
cdef double LS_FTOL = 1e-3, LS_GTOL = 0.9, LS_XTOL = 0.1, LS_STPMIN = 0.0
cdef double LS_STPMAX = 1e10
cdef int LS_MAX_BACKTRACKS = 20

# dcsrch's task
cdef enum:
    T_START = 0
    T_FG = 1
    T_CONV = 2
    T_WARN = 3
    T_ERROR = 4


# ---------------------------------------------------------------------------
# the reference BLAS-1 and LINPACK routines L-BFGS-B calls, in their order
# ---------------------------------------------------------------------------

cdef inline double _dot(Py_ssize_t n, const double* x, Py_ssize_t incx, const double* y,
                        Py_ssize_t incy) noexcept nogil:
    """Reference BLAS ddot: products added in index order from 0."""
    cdef double s = 0.0
    cdef Py_ssize_t i
    for i in range(n):
        s = s + x[i * incx] * y[i * incy]
    return s


cdef inline void _axpy(Py_ssize_t n, double a, const double* x, double* y) noexcept nogil:
    """Reference BLAS daxpy: y += a x (nothing when a is 0)."""
    cdef Py_ssize_t i
    if n <= 0 or a == 0.0:
        return
    for i in range(n):
        y[i] = y[i] + a * x[i]


cdef int _dpofa(double* a, Py_ssize_t lda, Py_ssize_t n) noexcept nogil:
    """LINPACK dpofa: the upper Cholesky factor R (A = R'R) over A's upper
    triangle, column by column. Returns 0, or the order of the leading minor
    that is not positive definite."""
    cdef Py_ssize_t j, k
    cdef double s, t
    for j in range(n):
        s = 0.0
        for k in range(j):
            t = a[k + j * lda] - _dot(k, &a[k * lda], 1, &a[j * lda], 1)
            t = t / a[k + k * lda]
            a[k + j * lda] = t
            s = s + t * t
        s = a[j + j * lda] - s
        if s <= 0.0:
            return <int> (j + 1)
        a[j + j * lda] = sqrt(s)
    return 0


cdef int _dtrsl(const double* t, Py_ssize_t ldt, Py_ssize_t n, double* b, bint transpose) noexcept nogil:
    """LINPACK dtrsl with T upper triangular: T x = b (job 01) or T' x = b
    (job 11), b overwritten. Returns 0, or the first zero diagonal (1-based)."""
    cdef Py_ssize_t j, jj
    for j in range(n):
        if t[j + j * ldt] == 0.0:
            return <int> (j + 1)
    if n == 0:
        return 0
    if transpose:
        b[0] = b[0] / t[0]
        for j in range(1, n):
            b[j] = b[j] - _dot(j, &t[j * ldt], 1, b, 1)
            b[j] = b[j] / t[j + j * ldt]
    else:
        b[n - 1] = b[n - 1] / t[(n - 1) + (n - 1) * ldt]
        for jj in range(2, n + 1):
            j = n - jj  # 0-based: the column solved now
            _axpy(j + 1, -b[j + 1], &t[(j + 1) * ldt], b)
            b[j] = b[j] / t[j + j * ldt]
    return 0


# ---------------------------------------------------------------------------
# MINPACK-2's line search
# ---------------------------------------------------------------------------

cdef struct _Search:
    int stage
    bint brackt
    double ginit, gtest, gx, gy, finit, fx, fy, stx, sty, stmin, stmax, width, width1


cdef inline double _dmin(double a, double b) noexcept nogil:
    return b if a > b else a  # as the C translation's min macro (NaN included)


cdef inline double _dmax(double a, double b) noexcept nogil:
    return b if a < b else a


cdef inline double _cubic_from(double stp, double fp, double dp, double st, double f, double d) noexcept nogil:
    """The minimiser of the cubic through (stp, fp, dp) and (st, f, d), as
    a step from stp (More and Thuente's cases 2 and 4)."""
    cdef double theta = (f - fp) * 3.0 / (stp - st) + d + dp
    cdef double s = _dmax(_dmax(fabs(theta), fabs(d)), fabs(dp))
    cdef double u = theta / s
    cdef double gamm = s * sqrt(u * u - d / s * (dp / s))
    if stp > st:
        gamm = -gamm
    cdef double p = gamm - dp + theta
    cdef double q = gamm - dp + gamm + d
    return stp + p / q * (st - stp)


cdef void _dcstep(double* stx, double* fx, double* dx, double* sty, double* fy, double* dy, double* stp,
                  double fp, double dp, bint* brackt, double stpmin, double stpmax) noexcept nogil:
    """A safeguarded step (cubic, quadratic or secant) and the update of the
    interval of uncertainty (More and Thuente's four cases)."""
    cdef double sgnd = dp * (dx[0] / fabs(dx[0]))
    cdef double theta, s, gamm, p, q, r, stpc, stpq, stpf, d
    if fp > fx[0]:
        theta = (fx[0] - fp) * 3.0 / (stp[0] - stx[0]) + dx[0] + dp
        s = _dmax(_dmax(fabs(theta), fabs(dx[0])), fabs(dp))
        d = theta / s
        gamm = s * sqrt(d * d - dx[0] / s * (dp / s))
        if stp[0] < stx[0]:
            gamm = -gamm
        p = gamm - dx[0] + theta
        q = gamm - dx[0] + gamm + dp
        r = p / q
        stpc = stx[0] + r * (stp[0] - stx[0])
        stpq = stx[0] + dx[0] / ((fx[0] - fp) / (stp[0] - stx[0]) + dx[0]) / 2.0 * (stp[0] - stx[0])
        if fabs(stpc - stx[0]) < fabs(stpq - stx[0]):
            stpf = stpc
        else:
            stpf = stpc + (stpq - stpc) / 2.0
        brackt[0] = True
    elif sgnd < 0.0:
        stpc = _cubic_from(stp[0], fp, dp, stx[0], fx[0], dx[0])
        stpq = stp[0] + dp / (dp - dx[0]) * (stx[0] - stp[0])
        if fabs(stpc - stp[0]) > fabs(stpq - stp[0]):
            stpf = stpc
        else:
            stpf = stpq
        brackt[0] = True
    elif fabs(dp) < fabs(dx[0]):
        theta = (fx[0] - fp) * 3.0 / (stp[0] - stx[0]) + dx[0] + dp
        s = _dmax(_dmax(fabs(theta), fabs(dx[0])), fabs(dp))
        d = theta / s
        d = d * d - dx[0] / s * (dp / s)
        gamm = 0.0 if d < 0 else s * sqrt(d)
        if stp[0] > stx[0]:
            gamm = -gamm
        p = gamm - dp + theta
        q = gamm + (dx[0] - dp) + gamm
        r = p / q
        if r < 0.0 and gamm != 0.0:
            stpc = stp[0] + r * (stx[0] - stp[0])
        elif stp[0] > stx[0]:
            stpc = stpmax
        else:
            stpc = stpmin
        stpq = stp[0] + dp / (dp - dx[0]) * (stx[0] - stp[0])
        if brackt[0]:
            if fabs(stpc - stp[0]) < fabs(stpq - stp[0]):
                stpf = stpc
            else:
                stpf = stpq
            d = stp[0] + (sty[0] - stp[0]) * 0.66
            if stp[0] > stx[0]:
                stpf = _dmin(d, stpf)
            else:
                stpf = _dmax(d, stpf)
        else:
            if fabs(stpc - stp[0]) > fabs(stpq - stp[0]):
                stpf = stpc
            else:
                stpf = stpq
            stpf = _dmin(stpmax, stpf)
            stpf = _dmax(stpmin, stpf)
    else:
        if brackt[0]:
            # MINPACK writes this case's theta as (fp - fy) 3 / (sty - stp): both negated, the same bits
            stpf = _cubic_from(stp[0], fp, dp, sty[0], fy[0], dy[0])
        elif stp[0] > stx[0]:
            stpf = stpmax
        else:
            stpf = stpmin
    if fp > fx[0]:
        sty[0] = stp[0]
        fy[0] = fp
        dy[0] = dp
    else:
        if sgnd < 0.0:
            sty[0] = stx[0]
            fy[0] = fx[0]
            dy[0] = dx[0]
        stx[0] = stp[0]
        fx[0] = fp
        dx[0] = dp
    stp[0] = stpf


cdef int _dcsrch(_Search* S, double f, double g, double* stp, double stpmax, int task) noexcept nogil:
    """One call of dcsrch: the next task (T_FG with a new stp, T_CONV, T_WARN
    or T_ERROR) given f and g at stp (at 0 with T_START)."""
    cdef double ftest, fm, gm, fxm, fym, gxm, gym
    cdef int out = -1
    if task == T_START:
        if stp[0] < LS_STPMIN or stp[0] > stpmax or g >= 0.0:
            return T_ERROR
        S.brackt = False
        S.stage = 1
        S.finit = f
        S.ginit = g
        S.gtest = LS_FTOL * S.ginit
        S.width = stpmax - LS_STPMIN
        S.width1 = S.width / 0.5
        S.stx = 0.0
        S.fx = S.finit
        S.gx = S.ginit
        S.sty = 0.0
        S.fy = S.finit
        S.gy = S.ginit
        S.stmin = 0.0
        S.stmax = stp[0] + stp[0] * 4.0
        return T_FG
    ftest = S.finit + stp[0] * S.gtest
    if S.stage == 1 and f <= ftest and g >= 0.0:
        S.stage = 2
    if S.brackt and (stp[0] <= S.stmin or stp[0] >= S.stmax):
        out = T_WARN
    if S.brackt and S.stmax - S.stmin <= LS_XTOL * S.stmax:
        out = T_WARN
    if stp[0] == stpmax and f <= ftest and g <= S.gtest:
        out = T_WARN
    if stp[0] == LS_STPMIN and (f > ftest or g >= S.gtest):
        out = T_WARN
    if f <= ftest and fabs(g) <= LS_GTOL * (-S.ginit):
        out = T_CONV
    if out >= 0:
        return out
    if S.stage == 1 and f <= S.fx and f > ftest:
        fm = f - stp[0] * S.gtest
        fxm = S.fx - S.stx * S.gtest
        fym = S.fy - S.sty * S.gtest
        gm = g - S.gtest
        gxm = S.gx - S.gtest
        gym = S.gy - S.gtest
        _dcstep(&S.stx, &fxm, &gxm, &S.sty, &fym, &gym, stp, fm, gm, &S.brackt, S.stmin, S.stmax)
        S.fx = fxm + S.stx * S.gtest
        S.fy = fym + S.sty * S.gtest
        S.gx = gxm + S.gtest
        S.gy = gym + S.gtest
    else:
        _dcstep(&S.stx, &S.fx, &S.gx, &S.sty, &S.fy, &S.gy, stp, f, g, &S.brackt, S.stmin, S.stmax)
    if S.brackt:
        if fabs(S.sty - S.stx) >= S.width1 * 0.66:
            stp[0] = S.stx + (S.sty - S.stx) * 0.5
        S.width1 = S.width
        S.width = fabs(S.sty - S.stx)
    if S.brackt:
        S.stmin = _dmin(S.stx, S.sty)
        S.stmax = _dmax(S.stx, S.sty)
    else:
        S.stmin = stp[0] + (stp[0] - S.stx) * 1.1
        S.stmax = stp[0] + (stp[0] - S.stx) * 4.0
    if stp[0] < LS_STPMIN:
        stp[0] = LS_STPMIN
    if stp[0] > stpmax:
        stp[0] = stpmax
    if (S.brackt and (stp[0] <= S.stmin or stp[0] >= S.stmax)) or (S.brackt and S.stmax - S.stmin <= LS_XTOL * S.stmax):
        stp[0] = S.stx
    return T_FG


# ---------------------------------------------------------------------------
# the limited-memory matrix
# ---------------------------------------------------------------------------

cdef class _Memory:
    """The L-BFGS matrix: S and Y (n x m, a column per correction, ``head``
    the oldest, 1-based as in the algorithm's description), S'Y, S'S, the
    Cholesky factor of theta S'S + L D^-1 L' (formt's, checked for positive
    definiteness), and the 2m x 2m middle matrix and its LEL' factor."""
    cdef Py_ssize_t n
    cdef int m, col, head, itail, iupdat
    cdef bint updatd
    cdef double theta
    cdef double* ws
    cdef double* wy
    cdef double* sy
    cdef double* ss
    cdef double* wt
    cdef double* wn
    cdef double* wn1
    cdef double* wv

    def __cinit__(self, Py_ssize_t n, int m):
        self.n, self.m = n, m
        self.ws = <double*> calloc(n * m, sizeof(double))
        self.wy = <double*> calloc(n * m, sizeof(double))
        self.sy = <double*> calloc(m * m, sizeof(double))
        self.ss = <double*> calloc(m * m, sizeof(double))
        self.wt = <double*> calloc(m * m, sizeof(double))
        self.wn = <double*> calloc(4 * m * m, sizeof(double))
        self.wn1 = <double*> calloc(4 * m * m, sizeof(double))
        self.wv = <double*> calloc(2 * m, sizeof(double))
        if (self.ws == NULL or self.wy == NULL or self.sy == NULL or self.ss == NULL or self.wt == NULL
                or self.wn == NULL or self.wn1 == NULL or self.wv == NULL):
            raise MemoryError()
        self.reset()

    def __dealloc__(self):
        free(self.ws); free(self.wy); free(self.sy); free(self.ss); free(self.wt)
        free(self.wn); free(self.wn1); free(self.wv)

    cdef void reset(self) noexcept nogil:
        """Forget every correction (the algorithm's restart)."""
        self.col = 0
        self.head = 1
        self.theta = 1.0
        self.iupdat = 0
        self.updatd = False

    # 1-based accessors, as the algorithm is written
    cdef inline double* S(self, Py_ssize_t i, int j) noexcept nogil:
        return &self.ws[(i - 1) + (j - 1) * self.n]

    cdef inline double* Y(self, Py_ssize_t i, int j) noexcept nogil:
        return &self.wy[(i - 1) + (j - 1) * self.n]

    cdef inline double* SY(self, int i, int j) noexcept nogil:
        return &self.sy[(i - 1) + (j - 1) * self.m]

    cdef inline double* SS(self, int i, int j) noexcept nogil:
        return &self.ss[(i - 1) + (j - 1) * self.m]

    cdef inline double* WT(self, int i, int j) noexcept nogil:
        return &self.wt[(i - 1) + (j - 1) * self.m]

    cdef inline double* WN(self, int i, int j) noexcept nogil:
        return &self.wn[(i - 1) + (j - 1) * 2 * self.m]

    cdef inline double* WN1(self, int i, int j) noexcept nogil:
        return &self.wn1[(i - 1) + (j - 1) * 2 * self.m]

    cdef int update(self, const double* d, const double* r, double rr, double dr, double stp,
                    double dtd) noexcept nogil:
        """matupd and formt: add the correction (s = d, y = r), theta = y'y / s'y,
        the new row of S'Y and column of S'S; then the Cholesky factor of
        theta S'S + L D^-1 L'. Returns formt's info (nonzero: not positive
        definite)."""
        cdef int m = self.m, j, i, k, pointr
        cdef Py_ssize_t n = self.n, q
        cdef double ddum
        if self.iupdat <= m:
            self.col = self.iupdat
            self.itail = (self.head + self.iupdat - 2) % m + 1
        else:
            self.itail = self.itail % m + 1
            self.head = self.head % m + 1
        for q in range(n):
            self.S(1, self.itail)[q] = d[q]
            self.Y(1, self.itail)[q] = r[q]
        self.theta = rr / dr
        if self.iupdat > m:
            # move old information: SS's upper and SY's lower triangles up a step
            for j in range(1, self.col):
                for i in range(j):
                    self.SS(1, j)[i] = self.SS(2, j + 1)[i]
                for i in range(self.col - j):
                    self.SY(j, j)[i] = self.SY(j + 1, j + 1)[i]
        pointr = self.head
        for j in range(1, self.col):
            self.SY(self.col, j)[0] = _dot(n, d, 1, self.Y(1, pointr), 1)
            self.SS(j, self.col)[0] = _dot(n, self.S(1, pointr), 1, d, 1)
            pointr = pointr % m + 1
        if stp == 1.0:
            self.SS(self.col, self.col)[0] = dtd
        else:
            self.SS(self.col, self.col)[0] = stp * stp * dtd
        self.SY(self.col, self.col)[0] = dr
        # formt: T = theta S'S + L D^-1 L' in wt's upper triangle, then its Cholesky factor
        for j in range(1, self.col + 1):
            self.WT(1, j)[0] = self.theta * self.SS(1, j)[0]
        for i in range(2, self.col + 1):
            for j in range(i, self.col + 1):
                ddum = 0.0
                for k in range(1, i):
                    ddum = ddum + self.SY(i, k)[0] * self.SY(j, k)[0] / self.SY(k, k)[0]
                self.WT(i, j)[0] = ddum + self.theta * self.SS(i, j)[0]
        return _dpofa(self.wt, m, self.col)

    cdef int formk(self) noexcept nogil:
        """formk with every variable free: the middle matrix
        K = [-D - Y'Y/theta, -L'; -L, 0] built from WN1 = [Y'Y, R_z'; R_z, 0]
        (updated by the newest correction) and factorised as LEL'.
        Returns 0, or nonzero when a Cholesky factor fails."""
        cdef int m = self.m, m2 = 2 * m, col = self.col, col2 = 2 * col
        cdef int jy, iy, js, is_, is1, js1, ipntr, jpntr, i, upcl, info
        cdef Py_ssize_t n = self.n, k
        cdef double temp1, temp2, temp3, temp4
        if self.updatd:
            if self.iupdat > m:
                # shift the old part of WN1
                for jy in range(1, m):
                    js = m + jy
                    for i in range(m - jy):
                        self.WN1(jy, jy)[i] = self.WN1(jy + 1, jy + 1)[i]
                        self.WN1(js, js)[i] = self.WN1(js + 1, js + 1)[i]
                    for i in range(m - 1):
                        self.WN1(m + 1, jy)[i] = self.WN1(m + 2, jy + 1)[i]
            # the new row of Y'Y (no variable is bound: the S'AA'S and L_a parts are 0)
            iy = col
            is_ = m + col
            ipntr = self.head + col - 1
            if ipntr > m:
                ipntr -= m
            jpntr = self.head
            for jy in range(1, col + 1):
                js = m + jy
                temp1 = 0.0
                for k in range(1, n + 1):
                    temp1 = temp1 + self.Y(k, ipntr)[0] * self.Y(k, jpntr)[0]
                self.WN1(iy, jy)[0] = temp1
                self.WN1(is_, js)[0] = 0.0
                self.WN1(is_, jy)[0] = 0.0
                jpntr = jpntr % m + 1
            # the new column of R_z
            jy = col
            jpntr = self.head + col - 1
            if jpntr > m:
                jpntr -= m
            ipntr = self.head
            for i in range(1, col + 1):
                is_ = m + i
                temp3 = 0.0
                for k in range(1, n + 1):
                    temp3 = temp3 + self.S(k, ipntr)[0] * self.Y(k, jpntr)[0]
                ipntr = ipntr % m + 1
                self.WN1(is_, jy)[0] = temp3
            upcl = col - 1
        else:
            upcl = col
        # the free set never changes: formk's corrections for entering and
        # leaving variables add zeros, which are kept for the same bits
        temp1 = 0.0
        temp2 = 0.0
        temp3 = 0.0
        temp4 = 0.0
        for iy in range(1, upcl + 1):
            is_ = m + iy
            for jy in range(1, iy + 1):
                js = m + jy
                self.WN1(iy, jy)[0] = self.WN1(iy, jy)[0] + temp1 - temp3
                self.WN1(is_, js)[0] = self.WN1(is_, js)[0] - temp2 + temp4
        for is_ in range(m + 1, m + upcl + 1):
            for jy in range(1, upcl + 1):
                if is_ <= jy + m:
                    self.WN1(is_, jy)[0] = self.WN1(is_, jy)[0] + (temp1 - temp3)
                else:
                    self.WN1(is_, jy)[0] = self.WN1(is_, jy)[0] + (-temp1 + temp3)
        # the upper triangle of WN = [D + Y'Y/theta, -L_a' + R_z'; ., S'AA'S theta]
        for iy in range(1, col + 1):
            is_ = col + iy
            is1 = m + iy
            for jy in range(1, iy + 1):
                js = col + jy
                js1 = m + jy
                self.WN(jy, iy)[0] = self.WN1(iy, jy)[0] / self.theta
                self.WN(js, is_)[0] = self.WN1(is1, js1)[0] * self.theta
            for jy in range(1, iy):
                self.WN(jy, is_)[0] = -self.WN1(is1, jy)[0]
            for jy in range(iy, col + 1):
                self.WN(jy, is_)[0] = self.WN1(is1, jy)[0]
            self.WN(iy, iy)[0] = self.WN(iy, iy)[0] + self.SY(iy, iy)[0]
        info = _dpofa(self.wn, m2, col)
        if info != 0:
            return -1
        for js in range(col + 1, col2 + 1):
            _dtrsl(self.wn, m2, col, self.WN(1, js), True)
        for is_ in range(col + 1, col2 + 1):
            for js in range(is_, col2 + 1):
                self.WN(is_, js)[0] = self.WN(is_, js)[0] + _dot(col, self.WN(1, is_), 1, self.WN(1, js), 1)
        info = _dpofa(self.WN(col + 1, col + 1), m2, col)
        if info != 0:
            return -2
        return 0

    cdef int subspace_step(self, double* x, double* d) noexcept nogil:
        """subsm with every variable free: d (on entry -g) becomes the
        L-BFGS direction (1/theta) d + (1/theta^2) W K^-1 W' d, and x += d.
        Returns nonzero when K's factor is singular."""
        cdef int m = self.m, m2 = 2 * m, col = self.col, col2 = 2 * col
        cdef int i, jy, js, pointr, info
        cdef Py_ssize_t n = self.n, j
        cdef double temp1, temp2
        cdef double* wv = self.wv
        pointr = self.head
        for i in range(1, col + 1):
            temp1 = 0.0
            temp2 = 0.0
            for j in range(1, n + 1):
                temp1 = temp1 + self.Y(j, pointr)[0] * d[j - 1]
                temp2 = temp2 + self.S(j, pointr)[0] * d[j - 1]
            wv[i - 1] = temp1
            wv[col + i - 1] = self.theta * temp2
            pointr = pointr % m + 1
        info = _dtrsl(self.wn, m2, col2, wv, True)
        if info != 0:
            return info
        for i in range(col):
            wv[i] = -wv[i]
        info = _dtrsl(self.wn, m2, col2, wv, False)
        if info != 0:
            return info
        pointr = self.head
        for jy in range(1, col + 1):
            js = col + jy
            for j in range(1, n + 1):
                d[j - 1] = d[j - 1] + (self.Y(j, pointr)[0] * wv[jy - 1] / self.theta
                                       + self.S(j, pointr)[0] * wv[js - 1])
            pointr = pointr % m + 1
        for j in range(n):
            d[j] = d[j] / self.theta
        for j in range(n):
            x[j] = x[j] + 1.0 * d[j]
        return 0


cdef double _projgr(Py_ssize_t n, const double* g) noexcept nogil:
    """The infinity norm of the (projected, here plain) gradient; NaNs are passed over as the original's test does."""
    cdef double s = 0.0
    cdef Py_ssize_t i
    for i in range(n):
        if s < fabs(g[i]):
            s = fabs(g[i])
    return s


cdef class _Function:
    """The objective as L-BFGS-B sees it: fg(x) -> (f, g), minimised."""
    cdef object fg
    cdef Py_ssize_t n
    cdef int nfgv

    def __cinit__(self, fg, Py_ssize_t n):
        self.fg = fg
        self.n = n
        self.nfgv = 0

    cdef double evaluate(self, double[::1] x, double[::1] g) except? -1.0:
        f, grad = self.fg(np.asarray(x).copy())
        cdef double fv = float(f)
        cdef const double[::1] gv = np.ascontiguousarray(grad, dtype=np.float64).reshape(-1)
        if gv.shape[0] != self.n:
            raise ValueError(f"the gradient has {gv.shape[0]} entries for {self.n} variables")
        if not isfinite(fv):
            # R's optim: "L-BFGS-B needs finite values of 'fn'"
            raise FloatingPointError("L-BFGS-B needs finite values of 'fn'")
        cdef Py_ssize_t i
        for i in range(self.n):
            if not isfinite(gv[i]):
                # R's optim checks the gradient too (its fmingr)
                raise FloatingPointError("non-finite value supplied by optim")
        g[:] = gv
        return fv


def minimize(fg, x0, int m=5, double factr=1e7, double pgtol=0.0, int maxit=100, callback=None):
    """Minimise fg over unbounded x as R's ``optim(method = "L-BFGS-B")``.

    fg(x) -> (f, g): the value and its gradient (a fresh array x each call).
    m, factr, pgtol, maxit: optim's ``lmm``, ``factr``, ``pgtol``, ``maxit``
    (R's defaults). callback(iteration, x, f, g) after each iteration.

    Stops as optim does: converged (relative reduction of f within
    factr * eps, or the gradient's largest entry <= pgtol) with code 0; past
    ``maxit`` iterations with code 1 (so x is iterate maxit + 1, as R's
    driver counts); when the line search cannot progress from an empty
    memory with code 52 (x is then the last iterate). A value or a gradient
    entry that is not finite raises FloatingPointError, as optim stops with
    an error.

    Returns a dict: x, f, g, convergence (R's code), iterations, evaluations,
    message.
    """
    cdef double[::1] x = np.array(x0, dtype=np.float64).reshape(-1)
    cdef Py_ssize_t n = x.shape[0], i
    if n == 0:
        raise ValueError("no variables to optimise")
    if m < 1:
        raise ValueError("m must be at least 1")
    if not (factr >= 0):
        raise ValueError("factr must be >= 0")
    cdef _Function P = _Function(fg, n)
    cdef _Memory M = _Memory(n, m)
    g_arr = np.empty(n)
    cdef double[::1] g = g_arr
    cdef double[::1] z = np.empty(n), r = np.empty(n), d = np.empty(n), t = np.empty(n)
    cdef double f, fold = 0.0, gd = 0.0, gdold = 0.0, stp = 0.0, dnorm, dtd = 0.0, stpmx, sbgnrm
    cdef double tol = factr * EPSMCH, ddum, rr, dr, f1, f2, dtm
    cdef int iter_ = 0, driver_iter = 0, ifun, iback, info, task, nskip = 0, nfgv
    cdef bint wrk, ls_failed
    cdef _Search search
    code, message = CONVERGED, ""

    f = P.evaluate(x, g)
    nfgv = 1
    sbgnrm = _projgr(n, &g[0])
    if sbgnrm <= pgtol:
        return _result(x, f, g_arr, CONVERGED, 0, nfgv, "CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL")
    while True:
        # the Cauchy point is needed only while the memory is empty; with
        # every variable free it is x + dtm (-g), dtm the quadratic's minimiser
        if M.col > 0:
            for i in range(n):
                z[i] = x[i]
            wrk = M.updatd
        else:
            for i in range(n):
                z[i] = x[i]
            if not sbgnrm <= 0.0:
                f1 = 0.0
                for i in range(n):
                    d[i] = -g[i]
                    f1 -= d[i] * d[i]
                f2 = -M.theta * f1
                dtm = -f1 / f2
                if dtm <= 0.0:
                    dtm = 0.0
                _axpy(n, 0.0 + dtm, &d[0], &z[0])
            wrk = M.updatd
        if M.col > 0:
            info = M.formk() if wrk else 0
            if info == 0:
                for i in range(n):
                    d[i] = -g[i]
                info = M.subspace_step(&z[0], &d[0])
            if info != 0:
                M.reset()
                continue
        for i in range(n):
            d[i] = z[i] - x[i]
        # the line search (lnsrlb)
        dtd = _dot(n, &d[0], 1, &d[0], 1)
        dnorm = sqrt(dtd)
        stpmx = LS_STPMAX
        stp = _dmin(1.0 / dnorm, stpmx) if iter_ == 0 else 1.0
        for i in range(n):
            t[i] = x[i]
            r[i] = g[i]
        fold = f
        ifun = 0
        iback = 0
        task = T_START
        info = 0
        ls_failed = False
        while True:
            gd = _dot(n, &g[0], 1, &d[0], 1)
            if ifun == 0:
                gdold = gd
                if gd >= 0.0:
                    info = -4  # not a descent direction
                    ls_failed = True
                    break
            task = _dcsrch(&search, f, gd, &stp, stpmx, task)
            if task == T_CONV or task == T_WARN:
                break
            ifun += 1
            nfgv += 1
            iback = ifun - 1
            if stp == 1.0:
                for i in range(n):
                    x[i] = z[i]
            else:
                for i in range(n):
                    x[i] = stp * d[i] + t[i]
            # (an ERROR from dcsrch's start is searched on, as the original does)
            if iback >= LS_MAX_BACKTRACKS:
                ls_failed = True
                break
            f = P.evaluate(x, g)
        if ls_failed:
            for i in range(n):
                x[i] = t[i]
                g[i] = r[i]
            f = fold
            if M.col == 0:
                if info == 0:
                    nfgv -= 1
                iter_ += 1
                return _result(x, f, g_arr, LINE_SEARCH_FAILED, driver_iter, nfgv,
                               "ERROR: ABNORMAL_TERMINATION_IN_LNSRCH")
            if info == 0:
                nfgv -= 1
            M.reset()
            continue
        iter_ += 1
        sbgnrm = _projgr(n, &g[0])
        driver_iter += 1
        if callback is not None:
            callback(driver_iter, np.asarray(x).copy(), f, g_arr.copy())
        if driver_iter > maxit:
            return _result(x, f, g_arr, ITERATION_LIMIT, driver_iter, nfgv, "NEW_X")
        if sbgnrm <= pgtol:
            return _result(x, f, g_arr, CONVERGED, driver_iter, nfgv, "CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL")
        ddum = _dmax(_dmax(fabs(fold), fabs(f)), 1.0)
        if fold - f <= tol * ddum:
            return _result(x, f, g_arr, CONVERGED, driver_iter, nfgv, "CONVERGENCE: REL_REDUCTION_OF_F <= FACTR*EPSMCH")
        # the correction: s = x_new - x_old (d scaled by stp), y = g_new - g_old
        for i in range(n):
            r[i] = g[i] - r[i]
        rr = _dot(n, &r[0], 1, &r[0], 1)
        if stp == 1.0:
            dr = gd - gdold
            ddum = -gdold
        else:
            dr = (gd - gdold) * stp
            for i in range(n):
                d[i] = stp * d[i]
            ddum = -gdold * stp
        if dr <= EPSMCH * ddum:
            nskip += 1
            M.updatd = False
            continue
        M.updatd = True
        M.iupdat += 1
        if M.update(&d[0], &r[0], rr, dr, stp, dtd) != 0:
            M.reset()


def _result(double[::1] x, double f, g, int code, int iterations, int evaluations, str message):
    return {"x": np.asarray(x).copy(), "f": f, "g": g.copy(), "convergence": code, "iterations": iterations,
            "evaluations": evaluations, "message": message}
