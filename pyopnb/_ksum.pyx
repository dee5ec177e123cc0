# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""Compiled core of pyopnb: exact kernel sums in difference form.

Kernel: K(u) = sum_{k=0..a} beta_k |u|^k exp(-|u|).

Every sum is built from three steps on a sorted set of *anchors*:

``_deposit``
    each sample point adds its weight to the nearest anchor at or right of it
    (left-sum table) and to the nearest anchor strictly left of it (right-sum
    table), already decayed by its distance to that anchor;
``_recurse``
    the one recursion: a forward pass turns the left deposits into
    ``Lincl[g] = sum_{x_i <= a_g} w_i ((a_g - x_i)/h)^k exp(-(a_g - x_i)/h)``
    and a backward pass the right deposits into
    ``Rexcl[g] = sum_{x_i > a_g} w_i ((x_i - a_g)/h)^k exp(-(x_i - a_g)/h)``;
``_evaluate``
    each evaluation point reads the tables of its neighbouring anchors and
    shifts them to itself.

Because the tables hold sums *relative to the anchor*, moving an anchor by
d >= 0 bandwidths is ``new_k = sum_j C(k, j) d^(k-j) e^(-d) old_j``: every
factor is non-negative, so with positive weights nothing cancels, and a gap of
any size decays to a true (possibly tiny) value instead of 0/0. FKSUM's
expanded form multiplies exp(x_i) by exp(-x_j), which loses accuracy with the
spread of x and returns NaN past about 745 bandwidths.

Exact sums use the sorted sample as anchors; binned sums use a grid; OPNB's
objective and gradient use both, per projected column, in parallel.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport exp, log, floor, INFINITY, NAN
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memset
from libcpp.algorithm cimport sort as cpp_sort
from libcpp.pair cimport pair

cnp.import_array()

ctypedef pair[double, Py_ssize_t] keyed

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static int _thread_id(void) { return omp_get_thread_num(); }
    #else
    static int _thread_id(void) { return 0; }
    #endif
    """
    int _thread_id() noexcept nogil


# Past this many bandwidths, d^m e^-d is formed in log space so that d^m
# cannot overflow before e^-d underflows.
cdef double _FAR = 600.0

# binning modes of the OPNB objective
cdef enum:
    EXACT = 0      # anchors are the sorted points themselves
    SIMPLE = 1     # whole weight to the grid point at or left (R's df_NB_cpp)
    LINEAR = 2     # weight split linearly between the two grid points


cdef inline void _decay(double d, int a, double* t) noexcept nogil:
    """t[m] = d^m exp(-d) for m = 0..a, d >= 0."""
    cdef int m
    cdef double ld
    if d == 0.0:
        t[0] = 1.0
        for m in range(1, a + 1):
            t[m] = 0.0
    elif d < _FAR:
        t[0] = exp(-d)
        for m in range(1, a + 1):
            t[m] = t[m - 1] * d
    else:
        ld = log(d)
        for m in range(a + 1):
            t[m] = exp(m * ld - d)


cdef inline void _shift(const double* src, double* dst, int a,
                        const double* t, const double* binom) noexcept nogil:
    """dst[k] = sum_j C(k, j) t[k-j] src[j]: move a table entry d to the right."""
    cdef int k, j
    cdef double s
    # the default kernel (a = 1) and Laplace (a = 0) unrolled: they are the hot path
    if a == 1:
        dst[0] = t[0] * src[0]
        dst[1] = t[0] * src[1] + t[1] * src[0]
        return
    if a == 0:
        dst[0] = t[0] * src[0]
        return
    for k in range(a + 1):
        s = 0.0
        for j in range(k + 1):
            s += binom[k * (a + 1) + j] * t[k - j] * src[j]
        dst[k] = s


cdef void _deposit(const double* pos, const double* W, Py_ssize_t n, int r,
                   const Py_ssize_t* idxL, const Py_ssize_t* idxR,
                   const double* anchors, Py_ssize_t G, double h, int a,
                   double* Ldep, double* Rdep) noexcept nogil:
    """Add point i (weights W[i, :r]) to Ldep[idxL[i]] and Rdep[idxR[i]].

    idxL[i] is the first anchor >= pos[i] (G if none), idxR[i] the last
    anchor < pos[i] (-1 if none). Tables are [G, r, a+1], zeroed by the caller.
    """
    cdef Py_ssize_t i, g
    cdef int c, k
    cdef int a1 = a + 1
    cdef double t[64]
    cdef double w
    for i in range(n):
        g = idxL[i]
        if g < G:
            _decay((anchors[g] - pos[i]) / h, a, t)
            for c in range(r):
                w = W[i * r + c]
                if w != 0.0:
                    for k in range(a1):
                        Ldep[(g * r + c) * a1 + k] += w * t[k]
        g = idxR[i]
        if g >= 0:
            _decay((pos[i] - anchors[g]) / h, a, t)
            for c in range(r):
                w = W[i * r + c]
                if w != 0.0:
                    for k in range(a1):
                        Rdep[(g * r + c) * a1 + k] += w * t[k]


cdef void _recurse(const double* anchors, Py_ssize_t G, int r, double h, int a,
                   const double* binom, const double* Ldep, double* Lincl,
                   double* R) noexcept nogil:
    """The recursion: Lincl from Ldep (forward); R from Rdep to Rexcl, in place (backward)."""
    cdef Py_ssize_t g
    cdef int c, k
    cdef int a1 = a + 1
    cdef Py_ssize_t row = r * a1
    cdef double t[64]
    cdef double buf[64]
    if G == 0:
        return
    for k in range(row):
        Lincl[k] = Ldep[k]
    for g in range(1, G):
        _decay((anchors[g] - anchors[g - 1]) / h, a, t)
        for c in range(r):
            _shift(&Lincl[(g - 1) * row + c * a1], buf, a, t, binom)
            for k in range(a1):
                Lincl[g * row + c * a1 + k] = buf[k] + Ldep[g * row + c * a1 + k]
    g = G - 2
    while g >= 0:
        _decay((anchors[g + 1] - anchors[g]) / h, a, t)
        for c in range(r):
            _shift(&R[(g + 1) * row + c * a1], buf, a, t, binom)
            for k in range(a1):
                R[g * row + c * a1 + k] += buf[k]
        g -= 1


cdef void _evaluate(const double* e, const Py_ssize_t* lo, Py_ssize_t m,
                    const double* anchors, Py_ssize_t G, int r, double h, int a,
                    const double* binom, const double* beta, const double* gamma,
                    const double* Ldep, const double* Lincl, const double* Rexcl,
                    double* S, double* D) noexcept nogil:
    """S[j, c] = ksum and D[j, c] = dksum at e[j], from the tables.

    lo[j] is the last anchor <= e[j] (-1 if none). An evaluation point that is
    not an anchor must have no sample point strictly between its two anchors
    (true for exact sums and for binned weights on a grid).
    S or D may be NULL when not wanted.
    """
    cdef Py_ssize_t j, g
    cdef int c, k
    cdef int a1 = a + 1
    cdef Py_ssize_t row = r * a1
    cdef double tl[64]
    cdef double tr[64]
    cdef double Lv[64]
    cdef double Rv[64]
    cdef double inc[64]
    cdef bint hasL, hasR, onanchor
    cdef double s, dd
    for j in range(m):
        g = lo[j]
        hasL = g >= 0
        onanchor = hasL and e[j] == anchors[g]
        hasR = onanchor or g + 1 < G
        if hasL:
            _decay((e[j] - anchors[g]) / h, a, tl)
        if hasR and not onanchor:
            _decay((anchors[g + 1] - e[j]) / h, a, tr)
        for c in range(r):
            if hasL:
                _shift(&Lincl[g * row + c * a1], Lv, a, tl, binom)
            else:
                for k in range(a1):
                    Lv[k] = 0.0
            if onanchor:
                for k in range(a1):
                    Rv[k] = Rexcl[g * row + c * a1 + k]
            elif hasR:
                # points >= anchor g+1: its exclusive table plus what sits on it
                for k in range(a1):
                    inc[k] = Rexcl[(g + 1) * row + c * a1 + k] + Ldep[(g + 1) * row + c * a1 + k]
                _shift(inc, Rv, a, tr, binom)
            else:
                for k in range(a1):
                    Rv[k] = 0.0
            if S != NULL:
                s = 0.0
                for k in range(a1):
                    s += beta[k] * (Lv[k] + Rv[k])
                S[j * r + c] = s
            if D != NULL:
                dd = 0.0
                for k in range(a1):
                    dd += gamma[k] * (Lv[k] - Rv[k])
                D[j * r + c] = dd


cdef struct Kernel:
    int a
    double beta[64]
    double gamma[64]
    double binom[4096]


cdef void _make_kernel(const double* beta, int nb, Kernel* ker) noexcept nogil:
    cdef int a = nb - 1
    cdef int k, j
    ker.a = a
    for k in range(a + 1):
        ker.beta[k] = beta[k]
    # K'(u) for u > 0 is sum_k gamma_k u^k e^-u, gamma_k = beta_k - (k+1) beta_{k+1}
    for k in range(a + 1):
        ker.gamma[k] = beta[k] - ((k + 1) * beta[k + 1] if k < a else 0.0)
    for k in range(a + 1):
        for j in range(a + 1):
            ker.binom[k * (a + 1) + j] = 0.0
        ker.binom[k * (a + 1)] = 1.0
        for j in range(1, k + 1):
            ker.binom[k * (a + 1) + j] = ker.binom[k * (a + 1) + j - 1] * (k - j + 1) / j


MAX_ORDER = 62


cdef class Tables:
    """Kernel-sum tables over a sorted set of anchors (see module docstring)."""
    cdef Kernel ker
    cdef double h
    cdef Py_ssize_t G
    cdef int r
    cdef object anchors, Ldep, Lincl, Rexcl

    def __init__(self, double[::1] anchors, double[:, ::1] W, double[::1] pos,
                 Py_ssize_t[::1] idxL, Py_ssize_t[::1] idxR, double h,
                 double[::1] beta):
        if beta.shape[0] < 1 or beta.shape[0] > MAX_ORDER + 1:
            raise ValueError("beta must have 1 to %d entries" % (MAX_ORDER + 1))
        _make_kernel(&beta[0], beta.shape[0], &self.ker)
        self.h = h
        self.G = anchors.shape[0]
        self.r = W.shape[1]
        self.anchors = np.asarray(anchors)
        a1 = self.ker.a + 1
        Ldep = np.zeros((self.G, self.r, a1))
        R = np.zeros((self.G, self.r, a1))
        Lincl = np.empty((self.G, self.r, a1))
        cdef double[:, :, ::1] Ld = Ldep, Rv = R, Li = Lincl
        cdef Py_ssize_t n = pos.shape[0]
        if self.G == 0 or self.r == 0:
            self.Ldep, self.Lincl, self.Rexcl = Ldep, Lincl, R
            return
        with nogil:
            if n > 0:
                _deposit(&pos[0], &W[0, 0], n, self.r, &idxL[0], &idxR[0],
                         &anchors[0], self.G, h, self.ker.a, &Ld[0, 0, 0], &Rv[0, 0, 0])
            _recurse(&anchors[0], self.G, self.r, h, self.ker.a, self.ker.binom,
                     &Ld[0, 0, 0], &Li[0, 0, 0], &Rv[0, 0, 0])
        self.Ldep, self.Lincl, self.Rexcl = Ldep, Lincl, R

    def evaluate(self, double[::1] e, Py_ssize_t[::1] lo, bint want_S=True, bint want_D=True):
        """Return (S, D), each [m, r] (None where not wanted)."""
        cdef Py_ssize_t m = e.shape[0]
        S = np.empty((m, self.r)) if want_S else None
        D = np.empty((m, self.r)) if want_D else None
        cdef double[:, ::1] Sv, Dv
        cdef double* Sp = NULL
        cdef double* Dp = NULL
        if m == 0 or self.r == 0:
            return S, D
        if want_S:
            Sv = S
            Sp = &Sv[0, 0]
        if want_D:
            Dv = D
            Dp = &Dv[0, 0]
        cdef double[::1] anc = self.anchors
        cdef double[:, :, ::1] Ld = self.Ldep, Li = self.Lincl, Rx = self.Rexcl
        with nogil:
            _evaluate(&e[0], &lo[0], m, &anc[0], self.G, self.r, self.h, self.ker.a,
                      self.ker.binom, self.ker.beta, self.ker.gamma,
                      &Ld[0, 0, 0], &Li[0, 0, 0], &Rx[0, 0, 0], Sp, Dp)
        return S, D


# ---------------------------------------------------------------------------
# OPNB objective and gradient, one projected column at a time
# ---------------------------------------------------------------------------

cdef struct Problem:
    Py_ssize_t n
    int K
    int ngroup
    const int* y            # class codes 0..K-1
    const int* gof          # group of each class
    const int* cof          # column of each class within its group
    const int* gsize        # classes per group
    const double* gh        # bandwidth of each group
    const double* wcls      # 1 / (n_k h_k)
    int mode                # EXACT, SIMPLE or LINEAR
    bint at_anchor          # densities read at the point's anchor (R's binned) or at the point
    Py_ssize_t nbin
    double eps              # grid widening
    Kernel ker


cdef struct Column:
    # scratch for one column, sized for the largest group
    Py_ssize_t G            # anchors in use
    double* anchors         # G
    Py_ssize_t* order       # n: points in increasing z (EXACT)
    Py_ssize_t* bin         # n: anchor of each point (EXACT: its tie group's first)
    Py_ssize_t m            # evaluation rows: sorted points, grid points, or points
    double* ev              # max(n, G): position of each evaluation row
    Py_ssize_t* evlo        # max(n, G): last anchor <= that position
    Py_ssize_t* row         # n: the evaluation row that gives point i its values
    Py_ssize_t* lo          # n: last anchor <= z_i (LINEAR: its grid cell)
    double* W               # max(n, G) x rmax
    double* pos             # max(n, G): deposit positions
    Py_ssize_t* iL          # max(n, G)
    Py_ssize_t* iR          # max(n, G)
    double* Ldep
    double* Lincl
    double* Rx
    double* S               # n x rmax (or G x rmax)
    double* D
    double lo_grid
    double delta


cdef int _column_alloc(Column* col, Py_ssize_t n, Py_ssize_t nbin, int rmax, int a1) noexcept nogil:
    cdef Py_ssize_t N = n if n > nbin else nbin
    col.anchors = <double*> malloc(N * sizeof(double))
    col.order = <Py_ssize_t*> malloc(n * sizeof(Py_ssize_t))
    col.bin = <Py_ssize_t*> malloc(n * sizeof(Py_ssize_t))
    col.lo = <Py_ssize_t*> malloc(n * sizeof(Py_ssize_t))
    col.row = <Py_ssize_t*> malloc(n * sizeof(Py_ssize_t))
    col.ev = <double*> malloc(N * sizeof(double))
    col.evlo = <Py_ssize_t*> malloc(N * sizeof(Py_ssize_t))
    col.W = <double*> malloc(N * rmax * sizeof(double))
    col.pos = <double*> malloc(N * sizeof(double))
    col.iL = <Py_ssize_t*> malloc(N * sizeof(Py_ssize_t))
    col.iR = <Py_ssize_t*> malloc(N * sizeof(Py_ssize_t))
    col.Ldep = <double*> malloc(N * rmax * a1 * sizeof(double))
    col.Lincl = <double*> malloc(N * rmax * a1 * sizeof(double))
    col.Rx = <double*> malloc(N * rmax * a1 * sizeof(double))
    col.S = <double*> malloc(N * rmax * sizeof(double))
    col.D = <double*> malloc(N * rmax * sizeof(double))
    if (col.anchors == NULL or col.order == NULL or col.bin == NULL or col.lo == NULL
            or col.row == NULL or col.ev == NULL or col.evlo == NULL or col.W == NULL or col.pos == NULL or col.iL == NULL
            or col.iR == NULL or col.Ldep == NULL or col.Lincl == NULL or col.Rx == NULL
            or col.S == NULL or col.D == NULL):
        return -1
    return 0


cdef void _column_free(Column* col) noexcept nogil:
    free(col.anchors); free(col.order); free(col.bin); free(col.lo); free(col.row); free(col.ev); free(col.evlo)
    free(col.W); free(col.pos); free(col.iL); free(col.iR)
    free(col.Ldep); free(col.Lincl); free(col.Rx); free(col.S); free(col.D)


cdef void _column_setup(const Problem* P, const double* z, Column* col) noexcept nogil:
    """Anchors and each point's anchor for one column of Z = XV."""
    cdef Py_ssize_t n = P.n, i, q, first, g
    cdef double zmin, zmax, u
    cdef keyed* keys
    if P.mode == EXACT:
        keys = <keyed*> malloc(n * sizeof(keyed))
        for i in range(n):
            keys[i].first = z[i]
            keys[i].second = i
        cpp_sort(keys, keys + n)
        col.G = n
        first = 0
        for q in range(n):
            col.order[q] = keys[q].second
            col.anchors[q] = keys[q].first
            if q > 0 and keys[q].first != keys[q - 1].first:
                first = q
            col.bin[keys[q].second] = first   # deposits go to the tie group's first anchor
        free(keys)
        # evaluate in sorted order (the tables are read sequentially); a
        # point's anchor for evaluation is its tie group's last
        col.m = n
        q = n - 1
        while q >= 0:
            if q == n - 1 or col.anchors[q] != col.anchors[q + 1]:
                g = q
            col.ev[q] = col.anchors[q]
            col.evlo[q] = g
            col.row[col.order[q]] = q
            col.lo[col.order[q]] = g
            q -= 1
        return
    zmin = z[0]
    zmax = z[0]
    for i in range(1, n):
        if z[i] < zmin:
            zmin = z[i]
        if z[i] > zmax:
            zmax = z[i]
    col.G = P.nbin
    col.lo_grid = zmin - P.eps
    col.delta = (zmax + P.eps - col.lo_grid) / (P.nbin - 1)
    for g in range(P.nbin):
        col.anchors[g] = col.lo_grid + g * col.delta
    for i in range(n):
        u = (z[i] - col.lo_grid) / col.delta
        g = <Py_ssize_t> floor(u)
        if g < 0:
            g = 0
        if g > P.nbin - 2:
            g = P.nbin - 2
        col.bin[i] = g
        # the last anchor <= z, robust to the rounding of floor(u)
        while g > 0 and col.anchors[g] > z[i]:
            g -= 1
        while g + 1 < P.nbin and col.anchors[g + 1] <= z[i]:
            g += 1
        col.lo[i] = g
        if P.at_anchor:
            col.row[i] = col.bin[i]
        else:
            col.row[i] = i
            col.ev[i] = z[i]
            col.evlo[i] = g
    if P.at_anchor:
        # R reads each point's density at its grid point: evaluate the grid once
        col.m = P.nbin
        for g in range(P.nbin):
            col.ev[g] = col.anchors[g]
            col.evlo[g] = g
    else:
        col.m = n


cdef void _sums_on_anchors(const Problem* P, Column* col, const double* z,
                           int grp, int r, const double* Wpts, bint want_S) noexcept nogil:
    """Kernel sums of the group's weights Wpts [n, r] (one row per point), at the
    column's evaluation rows (col.S, col.D, [m, r]; point i is row col.row[i]).

    EXACT: each point sits on its own anchor. SIMPLE: its weight moves to its
    grid point. LINEAR: its weight is split between its two grid points.
    """
    cdef Py_ssize_t n = P.n, G = col.G, i, q, g
    cdef int c, a = P.ker.a, a1 = P.ker.a + 1
    cdef double h = P.gh[grp], frac
    memset(col.Ldep, 0, G * r * a1 * sizeof(double))
    memset(col.Rx, 0, G * r * a1 * sizeof(double))
    if P.mode == EXACT:
        for q in range(n):
            i = col.order[q]
            col.pos[q] = col.anchors[q]
            col.iL[q] = col.bin[i]
            col.iR[q] = col.bin[i] - 1
            for c in range(r):
                col.W[q * r + c] = Wpts[i * r + c]
        _deposit(col.pos, col.W, n, r, col.iL, col.iR, col.anchors, G, h, a, col.Ldep, col.Rx)
    else:
        memset(col.W, 0, G * r * sizeof(double))
        for i in range(n):
            g = col.bin[i]
            if P.mode == SIMPLE:
                for c in range(r):
                    col.W[g * r + c] += Wpts[i * r + c]
            else:
                frac = (z[i] - col.lo_grid) / col.delta - g
                for c in range(r):
                    col.W[g * r + c] += (1.0 - frac) * Wpts[i * r + c]
                    col.W[(g + 1) * r + c] += frac * Wpts[i * r + c]
        for g in range(G):
            col.pos[g] = col.anchors[g]
            col.iL[g] = g
            col.iR[g] = g - 1
        _deposit(col.pos, col.W, G, r, col.iL, col.iR, col.anchors, G, h, a, col.Ldep, col.Rx)
    _recurse(col.anchors, G, r, h, a, P.ker.binom, col.Ldep, col.Lincl, col.Rx)
    _evaluate(col.ev, col.evlo, col.m, col.anchors, G, r, h, a, P.ker.binom, P.ker.beta,
              P.ker.gamma, col.Ldep, col.Lincl, col.Rx, col.S if want_S else NULL, col.D)


cdef void _class_weights(const Problem* P, int grp, int r, double* W) noexcept nogil:
    """W[i, c] = 1/(n_k h_k) if point i is in the group's c-th class k."""
    cdef Py_ssize_t i
    cdef int k
    memset(W, 0, P.n * r * sizeof(double))
    for i in range(P.n):
        k = P.y[i]
        if P.gof[k] == grp:
            W[i * r + P.cof[k]] = P.wcls[k]


cdef void _column_logf(const Problem* P, const double* z, Column* col,
                       double* Wpts, double* logf) noexcept nogil:
    """logf[i, k] += log f_kt(z_it) for this column."""
    cdef Py_ssize_t i, j, w
    cdef int grp, k, r
    for grp in range(P.ngroup):
        r = P.gsize[grp]
        _class_weights(P, grp, r, Wpts)
        _sums_on_anchors(P, col, z, grp, r, Wpts, True)
        for j in range(col.m * r):
            col.S[j] = log(col.S[j])
        for i in range(P.n):
            w = col.row[i] * r
            for k in range(P.K):
                if P.gof[k] == grp:
                    logf[i * P.K + k] += col.S[w + P.cof[k]]


cdef void _column_grad(const Problem* P, const double* z, Column* col,
                       double* Wpts, const double* post, double* gz) noexcept nogil:
    """gz[i] = n * d l / d z_it for this column (see the paper's T1, T2).

    With c_ik = (1{y_i = k} - P_ik) / f_kt(z_it) (P the posteriors), the derivative is
      - sum_k c_ik D_k(z_i) / h_k            (point i as an evaluation point)
      + d/dz_i of the class-y_i weights      (point i as a sample point)
    The second is a kernel sum of the c weights: read at the point's anchor for
    exact and R's simple binning; for linear binning it acts through the
    binning fractions and the grid's ends (min and max of z).
    """
    cdef Py_ssize_t n = P.n, i, g, G, imin, imax, w
    cdef int grp, k, r, c, K = P.K
    cdef double h, pk, f, d_lo, d_delta, dl_lo, dl_delta, gam, b, u, zmin, zmax
    for i in range(n):
        gz[i] = 0.0
    d_lo = 0.0
    d_delta = 0.0
    for grp in range(P.ngroup):
        r = P.gsize[grp]
        h = P.gh[grp]
        _class_weights(P, grp, r, Wpts)
        _sums_on_anchors(P, col, z, grp, r, Wpts, True)
        # c weights, and the evaluation-point term (before col.S, col.D are reused)
        for i in range(n):
            w = col.row[i] * r
            for k in range(K):
                if P.gof[k] != grp:
                    continue
                c = P.cof[k]
                f = col.S[w + c]
                # f = 0 only where class k is hundreds of bandwidths away: then
                # P_ik = 0 too and every kernel term this weight meets is 0
                pk = ((1.0 if P.y[i] == k else 0.0) - post[i * K + k]) / f if f > 0.0 else 0.0
                Wpts[i * r + c] = pk
                gz[i] -= pk * col.D[w + c] / h
        if P.mode != LINEAR:
            _sums_on_anchors(P, col, z, grp, r, Wpts, False)
            for i in range(n):
                k = P.y[i]
                if P.gof[k] == grp:
                    gz[i] -= P.wcls[k] / h * col.D[col.row[i] * r + P.cof[k]]
        else:
            # Phi (ksum) and Psi (dksum) of the c weights at the grid points,
            # from the points where they really are.
            G = col.G
            memset(col.Ldep, 0, G * r * (P.ker.a + 1) * sizeof(double))
            memset(col.Rx, 0, G * r * (P.ker.a + 1) * sizeof(double))
            for i in range(n):
                g = col.lo[i]
                col.pos[i] = z[i]
                if z[i] == col.anchors[g]:
                    col.iL[i] = g
                    col.iR[i] = g - 1
                else:
                    col.iL[i] = g + 1 if g + 1 < G else G
                    col.iR[i] = g
            _deposit(col.pos, Wpts, n, r, col.iL, col.iR, col.anchors, G, h, P.ker.a,
                     col.Ldep, col.Rx)
            _recurse(col.anchors, G, r, h, P.ker.a, P.ker.binom, col.Ldep, col.Lincl, col.Rx)
            for g in range(G):
                col.iL[g] = g
            _evaluate(col.anchors, col.iL, G, col.anchors, G, r, h, P.ker.a, P.ker.binom,
                      P.ker.beta, P.ker.gamma, col.Ldep, col.Lincl, col.Rx, col.S, col.D)
            # bin weights of the group's classes, for the grid-motion term
            _class_weights(P, grp, r, Wpts)
            memset(col.W, 0, G * r * sizeof(double))
            for i in range(n):
                g = col.bin[i]
                b = (z[i] - col.lo_grid) / col.delta - g
                for c in range(r):
                    col.W[g * r + c] += (1.0 - b) * Wpts[i * r + c]
                    col.W[(g + 1) * r + c] += b * Wpts[i * r + c]
            # gamma_g = d(nl)/dG_g with binning fractions fixed
            for g in range(G):
                gam = 0.0
                for c in range(r):
                    gam -= col.W[g * r + c] * col.D[g * r + c] / h
                d_lo += gam
                d_delta += g * gam
            # beta_i = d(nl)/du_i with the grid fixed: through the fractions
            for i in range(n):
                k = P.y[i]
                if P.gof[k] != grp:
                    continue
                c = P.cof[k]
                g = col.bin[i]
                b = P.wcls[k] * (col.S[(g + 1) * r + c] - col.S[g * r + c])
                gz[i] += b / col.delta
                u = (z[i] - col.lo_grid) / col.delta
                d_lo -= b / col.delta
                d_delta -= u * b / col.delta
    if P.mode == LINEAR:
        imin = 0
        imax = 0
        for i in range(1, n):
            if z[i] < z[imin]:
                imin = i
            if z[i] > z[imax]:
                imax = i
        # lo = zmin - eps, delta = (zmax - zmin + 2 eps) / (nbin - 1)
        gz[imin] += d_lo - d_delta / (P.nbin - 1)
        gz[imax] += d_delta / (P.nbin - 1)


cdef int _setup_problem(Problem* P, Py_ssize_t n, int K, int[::1] y, double[::1] h,
                        int mode, bint at_anchor, Py_ssize_t nbin, double eps,
                        int* gof, int* cof, int* gsize, double* gh, double* wcls) noexcept:
    cdef int k, j, ng = 0, rmax = 0
    cdef Py_ssize_t i
    cdef double beta[2]
    cdef Py_ssize_t* counts = <Py_ssize_t*> calloc(K, sizeof(Py_ssize_t))
    for i in range(n):
        counts[y[i]] += 1
    # classes sharing a bandwidth share one pass over the anchors
    for k in range(K):
        gof[k] = -1
        for j in range(ng):
            if gh[j] == h[k]:
                gof[k] = j
                cof[k] = gsize[j]
                gsize[j] += 1
                break
        if gof[k] < 0:
            gh[ng] = h[k]
            gof[k] = ng
            cof[k] = 0
            gsize[ng] = 1
            ng += 1
        wcls[k] = 1.0 / (counts[k] * h[k])
    free(counts)
    for j in range(ng):
        if gsize[j] > rmax:
            rmax = gsize[j]
    P.n = n
    P.K = K
    P.ngroup = ng
    P.y = &y[0]
    P.gof = gof
    P.cof = cof
    P.gsize = gsize
    P.gh = gh
    P.wcls = wcls
    P.mode = mode
    P.at_anchor = at_anchor
    P.nbin = nbin
    P.eps = eps
    beta[0] = 0.25
    beta[1] = 0.25
    _make_kernel(beta, 2, &P.ker)
    return rmax


def log_densities(double[:, ::1] Zt, int[::1] y, int K, double[::1] h,
                  int mode, bint at_anchor, Py_ssize_t nbin, double eps, int num_threads):
    """logf[i, k] = sum_t log f_kt(z_it), default kernel; Zt is [ndim, n]."""
    cdef Py_ssize_t ndim = Zt.shape[0], n = Zt.shape[1], t, i
    cdef int nthr = max(1, min(num_threads, ndim))
    cdef int* gof = <int*> malloc(K * sizeof(int))
    cdef int* cof = <int*> malloc(K * sizeof(int))
    cdef int* gsize = <int*> calloc(K, sizeof(int))
    cdef double* gh = <double*> malloc(K * sizeof(double))
    cdef double* wcls = <double*> malloc(K * sizeof(double))
    cdef Problem P
    cdef int rmax = _setup_problem(&P, n, K, y, h, mode, at_anchor, nbin, eps,
                                   gof, cof, gsize, gh, wcls)
    parts = np.zeros((nthr, n, K))
    cdef double[:, :, ::1] pv = parts
    cdef Column* cols = <Column*> calloc(nthr, sizeof(Column))
    cdef double** wbuf = <double**> calloc(nthr, sizeof(double*))
    cdef int tid, bad = 0
    cdef Py_ssize_t N = n if n > nbin else nbin
    for tid in range(nthr):
        if _column_alloc(&cols[tid], n, nbin, rmax, P.ker.a + 1) != 0:
            bad = 1
        wbuf[tid] = <double*> malloc(N * rmax * sizeof(double))
        if wbuf[tid] == NULL:
            bad = 1
    if not bad:
        with nogil:
            for t in prange(ndim, num_threads=nthr, schedule='static'):
                tid = _thread_id()
                _column_setup(&P, &Zt[t, 0], &cols[tid])
                _column_logf(&P, &Zt[t, 0], &cols[tid], wbuf[tid], &pv[tid, 0, 0])
    for tid in range(nthr):
        _column_free(&cols[tid])
        free(wbuf[tid])
    free(cols); free(wbuf); free(gof); free(cof); free(gsize); free(gh); free(wcls)
    if bad:
        raise MemoryError("not enough memory for the kernel-sum tables")
    return parts.sum(axis=0)


def log_density_gradient(double[:, ::1] Zt, int[::1] y, int K, double[::1] h,
                         int mode, bint at_anchor, Py_ssize_t nbin, double eps,
                         double[:, ::1] post, int num_threads):
    """n * d l / d Z, as [ndim, n], given the class posteriors [n, K]."""
    cdef Py_ssize_t ndim = Zt.shape[0], n = Zt.shape[1], t
    cdef int nthr = max(1, min(num_threads, ndim))
    cdef int* gof = <int*> malloc(K * sizeof(int))
    cdef int* cof = <int*> malloc(K * sizeof(int))
    cdef int* gsize = <int*> calloc(K, sizeof(int))
    cdef double* gh = <double*> malloc(K * sizeof(double))
    cdef double* wcls = <double*> malloc(K * sizeof(double))
    cdef Problem P
    cdef int rmax = _setup_problem(&P, n, K, y, h, mode, at_anchor, nbin, eps,
                                   gof, cof, gsize, gh, wcls)
    dZ = np.zeros((ndim, n))
    cdef double[:, ::1] dv = dZ
    cdef Column* cols = <Column*> calloc(nthr, sizeof(Column))
    cdef double** wbuf = <double**> calloc(nthr, sizeof(double*))
    cdef int tid, bad = 0
    cdef Py_ssize_t N = n if n > nbin else nbin
    for tid in range(nthr):
        if _column_alloc(&cols[tid], n, nbin, rmax, P.ker.a + 1) != 0:
            bad = 1
        wbuf[tid] = <double*> malloc(N * rmax * sizeof(double))
        if wbuf[tid] == NULL:
            bad = 1
    if not bad:
        with nogil:
            for t in prange(ndim, num_threads=nthr, schedule='static'):
                tid = _thread_id()
                _column_setup(&P, &Zt[t, 0], &cols[tid])
                _column_grad(&P, &Zt[t, 0], &cols[tid], wbuf[tid], &post[0, 0], &dv[t, 0])
    for tid in range(nthr):
        _column_free(&cols[tid])
        free(wbuf[tid])
    free(cols); free(wbuf)
    free(gof); free(cof); free(gsize); free(gh); free(wcls)
    if bad:
        raise MemoryError("not enough memory for the kernel-sum tables")
    return dZ


