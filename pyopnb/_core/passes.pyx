# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""The OPNB objective and gradient, one projected column at a time.

Every column of Z = XV is set up (sorted, or binned on a grid) and its
class densities summed by the recursion of _ksum; the passes over the points
(products over the columns, per-point gradient terms) then use every thread. Two modes:
MODE_EXACT (exact sums) and MODE_LINEAR (the correct binned objective: each
point's weight split linearly between its grid points, densities summed at
the points). ExactPasses and LinearPasses are the evaluators built on them. R's binned
objective reads densities at grid points and is r_grid.pyx's.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport exp, log, INFINITY
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memcmp, memcpy, memset

from pyopnb._core.common cimport EXACT, LINEAR, _MAX_ORDER, _region_threads, _thread_id
from pyopnb._core.scratch cimport scratch_alloc, scratch_free
from pyopnb._ksum cimport (_deposit, _evaluate, _last_of_ties, _make_kernel, _recurse, _sums_on_anchors,
                           _tables_alloc, _tables_free)
from pyopnb._core.geometry cimport _bin_linear, _grid_cell, _grid_delta, _grid_motion, _min_max
from pyopnb._core.products cimport pyopnb_grad_points_at_rows, pyopnb_log_products, pyopnb_rows_products
from pyopnb._core.sort cimport SortMemo, _argsort_memo
from pyopnb._core.evaluator cimport CoreEvaluator
from pyopnb._core.simd cimport simd_path

from pyopnb._core.posteriors import product_posteriors

cnp.import_array()

# exact problems whose columns' scratch fits in this many bytes keep every
# column between the value and the gradient pass (see ColumnScratch._plan)
DEF KEEP_BYTES = 128 * 1024 * 1024
# and keep each column's last sort (SortMemo: its keys, order and sorted keys)
# when those fit in this many
DEF MEMO_BYTES = 256 * 1024 * 1024

MODE_EXACT = EXACT
MODE_LINEAR = LINEAR


cdef int _column_alloc(Column* col, Py_ssize_t n, int mode, Py_ssize_t nbin, int K, bint shared, int a1,
                       bint points) noexcept nogil:
    # anchors: the points (exact) or the grid; evaluation rows: the points.
    # Sized to what the mode uses: a binned fit at n = 1e6 needs grid-sized
    # tables only. Without points, only the grid's tables (R's binned
    # objective, r_grid.pyx, keeps its own buffers for the points).
    cdef Py_ssize_t G = n if mode == EXACT else nbin
    cdef Py_ssize_t N = (n if n > G else G) if points else G
    cdef Py_ssize_t npt = n if points else 0
    memset(col, 0, sizeof(Column))
    col.anchors = <double*> scratch_alloc(G * sizeof(double))
    col.order = <Py_ssize_t*> scratch_alloc(npt * sizeof(Py_ssize_t))
    col.bin = <Py_ssize_t*> scratch_alloc(npt * sizeof(Py_ssize_t))
    col.lo = <Py_ssize_t*> scratch_alloc(npt * sizeof(Py_ssize_t))
    col.row = <Py_ssize_t*> scratch_alloc(npt * sizeof(Py_ssize_t))
    col.evlo = <Py_ssize_t*> scratch_alloc(N * sizeof(Py_ssize_t))
    col.Wa = <double*> scratch_alloc(G * K * sizeof(double))
    col.Wpts = <double*> scratch_alloc(npt * K * sizeof(double))
    col.ident = <Py_ssize_t*> scratch_alloc(N * sizeof(Py_ssize_t))
    col.S = <double*> scratch_alloc(N * K * sizeof(double))
    col.D = <double*> scratch_alloc(N * K * sizeof(double))
    # deposit tables only where points lie between anchors: the exact binned gradient
    if (_tables_alloc(&col.tb, G, K, a1, shared, mode == LINEAR and points) or col.anchors == NULL
            or col.order == NULL or col.bin == NULL or col.lo == NULL or col.row == NULL
            or col.evlo == NULL or col.Wa == NULL or col.Wpts == NULL
            or col.ident == NULL or col.S == NULL or col.D == NULL):
        return -1
    cdef Py_ssize_t i
    for i in range(N):
        col.ident[i] = i
    return 0


cdef void _column_free(Column* col) noexcept nogil:
    scratch_free(col.anchors); scratch_free(col.order); scratch_free(col.bin); scratch_free(col.lo)
    scratch_free(col.row); scratch_free(col.evlo); scratch_free(col.Wa); scratch_free(col.Wpts)
    scratch_free(col.ident); scratch_free(col.S); scratch_free(col.D)
    _tables_free(&col.tb)
    memset(col, 0, sizeof(Column))


cdef int _column_setup(const Classes* P, const double* z, Column* col, SortMemo* memo,
                       int nthr) noexcept nogil:
    """Anchors, evaluation rows and each point's anchor for one column of Z = XV
    (memo: the column's last sort, or NULL; see _argsort_memo)."""
    cdef Py_ssize_t n = P.n, i, q, g
    cdef double zmin, zmax, lo, delta
    if P.mode == EXACT:
        if _argsort_memo(z, n, col.order, col.anchors, memo, nthr):
            return -1
        col.G = n
        col.m = n
        col.ev = col.anchors
        # evaluate in sorted order (tables read sequentially); a point's
        # anchor for evaluation is its tie group's last
        _last_of_ties(col.anchors, n, col.evlo)
        for q in range(n):
            col.row[col.order[q]] = q
            col.lo[col.order[q]] = col.evlo[q]
        return 0
    _min_max(z, n, &zmin, &zmax)
    col.G = P.nbin
    delta = _grid_delta(zmin, zmax, P.eps, P.nbin, &lo)
    _set_grid(col, lo, delta, P.nbin, True)
    for i in range(n):
        g = _grid_cell(z[i], col.lo_grid, col.delta, P.nbin)
        col.bin[i] = g
        # the last anchor <= z, robust to the rounding of floor(u)
        while g > 0 and col.anchors[g] > z[i]:
            g -= 1
        while g + 1 < P.nbin and col.anchors[g + 1] <= z[i]:
            g += 1
        col.lo[i] = g
        col.row[i] = i
        col.evlo[i] = g
    col.m = n
    col.ev = z
    return 0


cdef void _bin_weights(const Classes* P, Column* col, const double* z, const double* Wpts) noexcept nogil:
    """col.Wa [G, K]: the points' weights moved onto the anchors.

    Wpts [n, K], or NULL for the class weights: point i weighs 1/(n_k h_k)
    in the column of its class k, so only one column per point is touched.
    """
    cdef Py_ssize_t i, q, g
    cdef int c, k, K = P.K, c0 = 0, c1 = P.K
    cdef double frac, w = 0.0
    if P.mode == EXACT:
        if Wpts == NULL:
            memset(col.Wa, 0, col.G * K * sizeof(double))
        for q in range(P.n):
            i = col.order[q]
            if Wpts == NULL:
                k = P.y[i]
                col.Wa[q * K + k] = P.wcls[k]
            else:
                for c in range(K):
                    col.Wa[q * K + c] = Wpts[i * K + c]
        return
    memset(col.Wa, 0, col.G * K * sizeof(double))
    for i in range(P.n):
        g = col.bin[i]
        if Wpts == NULL:
            c0 = P.y[i]
            c1 = c0 + 1
            w = P.wcls[c0]
        frac = (z[i] - col.lo_grid) / col.delta - g
        for c in range(c0, c1):
            if Wpts != NULL:
                w = Wpts[i * K + c]
            _bin_linear(&col.Wa[c], g, K, frac, w)


cdef void _column_sums(const Classes* P, Column* col, const double* z, const double* Wpts,
                      bint want_S, bint want_D, bint have_T, int nthr) noexcept nogil:
    """Kernel sums of the point weights Wpts [n, K] (NULL: the class weights),
    each class's column in its bandwidth, at the column's evaluation rows
    (col.S, col.D [m, K]; point i is row col.row[i])."""
    _bin_weights(P, col, z, Wpts)
    # exact: each evaluation row is a sorted point, on its anchor
    _sums_on_anchors(col.anchors, col.G, col.Wa, P.K, P.h, P.shared, &P.ker, &col.tb,
                     <const double*> NULL if P.mode == EXACT else col.ev, col.evlo, col.m, NULL,
                     col.S if want_S else NULL, col.D if want_D else NULL, False, have_T, nthr)


# rows a part of a pass over the points holds: parts are taken by threads as they come free, so a thread on a busy
# core does fewer (the points are independent: any split gives the same bits)
DEF PART_ROWS = 4096


cdef inline Py_ssize_t _parts(Py_ssize_t n) noexcept nogil:
    return (n + PART_ROWS - 1) // PART_ROWS


cdef int _multiply_columns(const Classes* P, Column* cols, int w, double* pr, double* acc,
                           bint fresh, int nthr) noexcept nogil:
    """The wave's columns' densities into each point's running products
    pr, acc [n, K] (pyopnb_rows_products; started empty where ``fresh``: the
    first wave), in column order whatever the waves and threads. Points are
    independent: any split will do. -1: out of memory."""
    cdef Py_ssize_t n = P.n
    cdef Py_ssize_t b
    cdef int c
    # the columns' sums and their rows, as pyopnb_rows_products reads them
    cdef const double** base = <const double**> malloc(w * sizeof(double*))
    cdef const Py_ssize_t** idx = <const Py_ssize_t**> malloc(w * sizeof(Py_ssize_t*))
    if base == NULL or idx == NULL:
        free(base); free(idx)
        return -1
    for c in range(w):
        base[c] = cols[c].S
        idx[c] = cols[c].row
    nthr = _region_threads(nthr, n * P.K * w)
    if nthr == 1:
        pyopnb_rows_products(P.simd, base, idx, w, P.K, pr, acc, fresh, 0, n)
    else:
        for b in prange(_parts(n), num_threads=nthr, schedule='dynamic'):
            pyopnb_rows_products(P.simd, base, idx, w, P.K, pr, acc, fresh, b * PART_ROWS,
                                 min(n, (b + 1) * PART_ROWS))
    free(base); free(idx)
    return 0


cdef void _log_products(double* pr, const double* acc, Py_ssize_t m, int nthr) noexcept nogil:
    """pyopnb_log_products over m entries, in chunks on nthr threads."""
    cdef Py_ssize_t chunk = PART_ROWS
    cdef Py_ssize_t b
    nthr = _region_threads(nthr, m)
    if nthr == 1 or m <= chunk:
        pyopnb_log_products(m, pr, acc)
        return
    for b in prange((m + chunk - 1) // chunk, num_threads=nthr, schedule='dynamic'):
        pyopnb_log_products(min(chunk, m - b * chunk), &pr[b * chunk], &acc[b * chunk])


cdef void _point_terms(const Classes* P, Column* cols, int w, double* gz0, const double* post,
                       int nthr) noexcept nogil:
    """Point i as an evaluation point in the wave's columns (see _column_grad):
    gz[c, i] = -sum_k c_ik D_k(z_i) / h_k and the c weights
    c_ik = (1{y_i = k} - P_ik) / f_k(z_i) into Wpts [n, K]. f = 0 only where
    class k is hundreds of bandwidths away: then P_ik = 0 too and every kernel
    term this weight meets is 0."""
    cdef Py_ssize_t n = P.n
    cdef Py_ssize_t b
    nthr = _region_threads(nthr, n * P.K * w)
    if nthr == 1:
        _point_rows(P, cols, w, gz0, post, 0, n)
        return
    for b in prange(_parts(n), num_threads=nthr, schedule='dynamic'):
        _point_rows(P, cols, w, gz0, post, b * PART_ROWS, min(n, (b + 1) * PART_ROWS))


cdef inline void _point_rows(const Classes* P, Column* cols, int w, double* gz0, const double* post,
                             Py_ssize_t i0, Py_ssize_t i1) noexcept nogil:
    cdef int c
    cdef Column* col
    for c in range(w):
        col = &cols[c]
        pyopnb_grad_points_at_rows(P.simd, col.S, col.D, col.Wpts, col.row, post, P.y, i0, i1, P.K, P.h,
                                   P.shared, &gz0[c * P.n])


cdef void _sample_terms(const Classes* P, Column* cols, int w, double* gz0, int nthr) noexcept nogil:
    """Point i as a sample point in the wave's columns: gz[c, i] -= the
    derivative of its class's weight, from the kernel sums of the c weights
    (col.D at the point's row)."""
    cdef Py_ssize_t n = P.n
    cdef Py_ssize_t b
    nthr = _region_threads(nthr, n * w)
    if nthr == 1:
        _sample_rows(P, cols, w, gz0, 0, n)
        return
    for b in prange(_parts(n), num_threads=nthr, schedule='dynamic'):
        _sample_rows(P, cols, w, gz0, b * PART_ROWS, min(n, (b + 1) * PART_ROWS))


cdef inline void _sample_rows(const Classes* P, Column* cols, int w, double* gz0, Py_ssize_t i0,
                              Py_ssize_t i1) noexcept nogil:
    cdef Py_ssize_t n = P.n, i
    cdef int c, k
    for i in range(i0, i1):
        k = P.y[i]
        for c in range(w):
            gz0[c * n + i] -= P.wh[k] * cols[c].D[cols[c].row[i] * P.K + k]


cdef void _column_grad(const Classes* P, const double* z, Column* col, double* gz, int nthr) noexcept nogil:
    """The sample-point part of gz = n * d l / d z_t for this column, after
    _point_terms (see the paper's T1, T2).

    With c_ik = (1{y_i = k} - P_ik) / f_kt(z_it) (P the posteriors), the derivative is
      - sum_k c_ik D_k(z_i) / h_k            (point i as an evaluation point: _point_terms)
      + d/dz_i of the class-y_i weights      (point i as a sample point)
    The second is a kernel sum of the c weights: read at the point's anchor for
    exact and R's simple binning (into col.D here, subtracted by
    _sample_terms); for linear binning it acts through the binning fractions
    and the grid's ends (min and max of z), added to gz here.
    """
    cdef Py_ssize_t n = P.n, i, g, G = col.G, imin, imax
    cdef int k, c, K = P.K, a1 = P.ker.a + 1
    cdef double d_lo, d_delta, gam, b, u
    if P.mode == EXACT:
        # the column's decays are those of its setup's sums
        _column_sums(P, col, z, col.Wpts, False, True, True, nthr)
        return
    # Phi (ksum) and Psi (dksum) of the c weights at the grid points,
    # from the points where they really are.
    memset(col.tb.Ldep, 0, G * K * a1 * sizeof(double))
    memset(col.tb.R, 0, G * K * a1 * sizeof(double))
    _deposit(z, col.Wpts, n, K, col.lo, col.anchors, G, P.h, P.shared, P.ker.a, col.tb.Ldep, col.tb.R)
    _recurse(col.anchors, G, K, P.h, P.shared, P.ker.a, P.ker.binom, col.tb.Ldep, a1,
             col.tb.Lincl, col.tb.R, col.tb.decay, False, True, nthr)
    _evaluate(NULL, col.ident, G, NULL, col.anchors, G, K, P.h, P.shared, &P.ker,
              col.tb.Ldep, a1, col.tb.Lincl, col.tb.R, col.S, col.D, False)
    # class weights binned, for the grid-motion term
    _bin_weights(P, col, z, NULL)
    # gamma_g = d(nl)/dG_g with binning fractions fixed
    d_lo = 0.0
    d_delta = 0.0
    for g in range(G):
        gam = 0.0
        for c in range(K):
            gam -= col.Wa[g * K + c] * col.D[g * K + c] / P.h[c]
        d_lo += gam
        d_delta += g * gam
    # beta_i = d(nl)/du_i with the grid fixed: through the fractions
    for i in range(n):
        k = P.y[i]
        g = col.bin[i]
        b = P.wcls[k] * (col.S[(g + 1) * K + k] - col.S[g * K + k])
        gz[i] += b / col.delta
        u = (z[i] - col.lo_grid) / col.delta
        d_lo -= b / col.delta
        d_delta -= u * b / col.delta
    imin = 0
    imax = 0
    for i in range(1, n):
        if z[i] < z[imin]:
            imin = i
        if z[i] > z[imax]:
            imax = i
    _grid_motion(gz, imin, imax, d_lo, d_delta, P.nbin)


cdef class ColumnScratch:
    """A problem's class structure and the column scratch (one per column of
    a wave, made when first needed). An evaluator makes one and keeps it for
    every evaluation of its fit: fresh scratch each time would map and unmap
    its pages at every evaluation (a large share of an exact evaluation's
    time, measured in docs/benchmarks.md)."""
    def __cinit__(self, int[::1] y, int K, double[::1] h, int mode, Py_ssize_t nbin,
                  double eps, const double[::1] beta, int num_threads, bint points=True):
        cdef Py_ssize_t n = y.shape[0], i
        cdef int k
        if K < 1 or h.shape[0] != K:
            raise ValueError("need K >= 1 and one bandwidth per class")
        if mode != EXACT and mode != LINEAR:
            raise ValueError(f"mode must be MODE_EXACT ({EXACT}) or MODE_LINEAR ({LINEAR}), got {mode}")
        self.y = y
        self.nthr = max(1, num_threads)
        self.most = self.nthr
        self.points = points
        self.h = <double*> malloc(K * sizeof(double))
        self.wcls = <double*> calloc(K, sizeof(double))
        self.wh = <double*> malloc(K * sizeof(double))
        if self.h == NULL or self.wcls == NULL or self.wh == NULL:
            raise MemoryError()
        self.keep = False  # decided for each ndim (_plan)
        for i in range(n):
            self.wcls[y[i]] += 1.0
        self.P.shared = True
        for k in range(K):
            self.h[k] = h[k]
            self.P.shared = self.P.shared and h[k] == h[0]
            self.wcls[k] = 1.0 / (self.wcls[k] * h[k])
            self.wh[k] = self.wcls[k] / h[k]
        self.P.n = n
        self.P.K = K
        self.P.y = &y[0]
        self.P.h = self.h
        self.P.wcls = self.wcls
        self.P.wh = self.wh
        self.P.mode = mode
        self.P.nbin = nbin
        self.P.eps = eps
        # PYOPNB_SIMD read once a fit: every path gives the same bits
        self.P.simd = simd_path()
        if beta.shape[0] < 1 or beta.shape[0] > _MAX_ORDER + 1:
            raise ValueError("beta must have 1 to %d entries" % (_MAX_ORDER + 1))
        _make_kernel(&beta[0], beta.shape[0], &self.P.ker)

    cdef int _ensure(self, Py_ssize_t w) except -1:
        """Scratch for w columns (a wave's, or with keep every column's)."""
        if w > self.capacity:
            self.cols = <Column*> realloc(self.cols, w * sizeof(Column))
            if self.cols == NULL:
                self.capacity = self.ncol = 0
                raise MemoryError()
            memset(&self.cols[self.capacity], 0, (w - self.capacity) * sizeof(Column))
            self.capacity = w
        while self.ncol < w:
            if _column_alloc(&self.cols[self.ncol], self.P.n, self.P.mode, self.P.nbin,
                             self.P.K, self.P.shared,
                             # grid-only scratch: one order more, for GridTables' psi kernel
                             self.P.ker.a + (1 if self.points else 2), self.points):
                _column_free(&self.cols[self.ncol])
                raise MemoryError("not enough memory for the kernel-sum tables")
            self.ncol += 1
        return 0

    cdef int _plan(self, Py_ssize_t ndim) except -1:
        """Whether ndim columns are kept between the value and gradient
        passes: exact sums whose columns' scratch fits in KEEP_BYTES. Kept,
        there is a copy of Zt, so that the gradient pass knows when the
        value pass's columns are its own. Exact sums not kept whose sorts
        fit in MEMO_BYTES keep each column's last sort (every column starts
        without one): the gradient pass, which sets its columns up again,
        then copies the value pass's sorts (_argsort_memo)."""
        cdef Py_ssize_t t, n = self.P.n
        cdef int K = self.P.K
        # a column's scratch per point (see _column_alloc) and its copy of z
        cdef Py_ssize_t per_point = 72 + 32 * K * (self.P.ker.a + 1) + 32 * K + 8
        cdef Py_ssize_t memo_point = 2 * sizeof(double) + sizeof(Py_ssize_t)
        cdef char* block
        cdef bint exact = self.P.mode == EXACT and self.points and n > 0
        cdef bint keep = exact and ndim * n * per_point <= KEEP_BYTES
        cdef bint memo = exact and not keep and ndim * n * memo_point <= MEMO_BYTES
        if keep == self.keep and (self.memos != NULL) == memo and (not (keep or memo) or ndim == self.nplan):
            return 0
        free(self.memos)
        free(self.memo_block)
        free(self.Zkept)
        self.memos = NULL
        self.memo_block = NULL
        self.Zkept = NULL
        self.kept = False
        self.nplan = ndim
        self.keep = False
        if memo:
            self.memos = <SortMemo*> malloc(ndim * sizeof(SortMemo))
            self.memo_block = malloc(ndim * n * memo_point)
            if self.memos == NULL or self.memo_block == NULL:
                free(self.memos)
                free(self.memo_block)
                self.memos = NULL
                self.memo_block = NULL
                raise MemoryError()
            block = <char*> self.memo_block
            for t in range(ndim):
                self.memos[t].x = <double*> &block[t * n * memo_point]
                self.memos[t].xs = <double*> &block[(t * memo_point + sizeof(double)) * n]
                self.memos[t].order = <Py_ssize_t*> &block[(t * memo_point + 2 * sizeof(double)) * n]
                self.memos[t].order[0] = -1
        if keep:
            self.Zkept = <double*> malloc(ndim * n * sizeof(double))
            if self.Zkept == NULL:
                raise MemoryError()
            self.keep = True
        return 0

    cdef int _check(self, const int[::1] y, int K, const double[::1] h, int mode, Py_ssize_t nbin) except -1:
        cdef int k
        cdef bint same = (y.shape[0] == self.P.n and K == self.P.K and h.shape[0] == K
                          and mode == self.P.mode
                          and (mode == EXACT or nbin == self.P.nbin))
        if same and y.shape[0] > 0:
            same = &y[0] == self.P.y
        for k in range(K if same else 0):
            same = same and self.h[k] == h[k]
        if not same:
            raise ValueError("work was made for another problem")
        return 0

    def __dealloc__(self):
        cdef int c
        if self.cols != NULL:
            for c in range(self.ncol):
                _column_free(&self.cols[c])
        free(self.cols); free(self.h); free(self.wcls); free(self.wh)
        free(self.memos); free(self.memo_block); free(self.Zkept)


cdef ColumnScratch _work_for(int[::1] y, int K, double[::1] h, int mode,
                     Py_ssize_t nbin, double eps, const double[::1] beta, int num_threads, ColumnScratch work):
    # y, K, h, the mode and nbin are checked; eps, beta and the threads are the caller's to keep
    if work is None:
        return ColumnScratch(y, K, h, mode, nbin, eps, beta, num_threads)
    work._check(y, K, h, mode, nbin)
    return work


cdef int _wave_setup(const Classes* P, const double* Zt, Py_ssize_t t0, int w, Column* cols, bint want_D,
                     SortMemo* memos, int nthr) noexcept nogil:
    """Columns t0..t0+w-1 of Zt [ndim, n] set up and summed (col.S, and
    col.D with want_D), a column to a thread (the whole team when w = 1).
    Returns how many failed (out of memory)."""
    cdef int c, bad = 0
    if w == 1:
        return _setup_one(P, Zt, t0, cols, want_D, memos, nthr)
    for c in prange(w, num_threads=_region_threads(w, P.n * P.K * w), schedule='static'):
        bad += _setup_one(P, Zt, t0 + c, &cols[c], want_D, memos, 1)
    return bad


cdef inline int _setup_one(const Classes* P, const double* Zt, Py_ssize_t t, Column* col, bint want_D,
                           SortMemo* memos, int nthr) noexcept nogil:
    if _column_setup(P, &Zt[t * P.n], col, &memos[t] if memos != NULL else NULL, nthr):
        return 1
    _column_sums(P, col, &Zt[t * P.n], NULL, True, want_D, False, nthr)
    return 0


cdef ColumnScratch _wave_work(const double[:, ::1] Zt, int[::1] y, int K, double[::1] h, int mode,
                      Py_ssize_t nbin, double eps, const double[::1] beta, int num_threads, ColumnScratch work):
    """The column passes' scratch for Zt, with room for a wave's columns."""
    cdef ColumnScratch wk = _work_for(y, K, h, mode, nbin, eps, beta, num_threads, work)
    if Zt.shape[1] != wk.P.n:
        raise ValueError(f"Zt must have {wk.P.n} columns (points), got {Zt.shape[1]}")
    wk._plan(Zt.shape[0])
    wk._ensure(Zt.shape[0] if wk.keep else _wave(max(Zt.shape[0], 1), wk.nthr))
    return wk


def log_densities(double[:, ::1] Zt, int[::1] y, int K, double[::1] h,
                  int mode, Py_ssize_t nbin, double eps, const double[::1] beta,
                  int num_threads, ColumnScratch scratch=None):
    """logf[i, k] = log prod_t f_kt(z_it) [n, K]: class_products' products,
    logged (for the checks that read class log densities; the evaluations
    combine the products themselves, product_posteriors)."""
    logf, acc = class_products(Zt, y, K, h, mode, nbin, eps, beta, num_threads, scratch)
    cdef double[:, ::1] lv = logf
    cdef const double[:, ::1] av = acc
    cdef Py_ssize_t m = lv.shape[0] * lv.shape[1]
    if m:
        with nogil:
            _log_products(&lv[0, 0], &av[0, 0], m, max(1, num_threads))
    return logf


def class_products(double[:, ::1] Zt, int[::1] y, int K, double[::1] h,
                   int mode, Py_ssize_t nbin, double eps, const double[::1] beta,
                   int num_threads, ColumnScratch scratch=None, tuple init=None):
    """(pr, acc) [n, K]: prod_t f_kt(z_it) = pr[i, k] exp(acc[i, k]) as
    pyopnb_products_n keeps them (acc 0 where the product stayed in range);
    Zt is [ndim, n]. ``scratch``: a ColumnScratch made for these arguments,
    kept between calls. ``init``: the (pr, acc) of columns before Zt's, to
    go on from (not changed): the products of all the columns then, to the
    bit, since the columns go in in order whatever the waves.

    The columns go in waves (see _wave): each column of a wave is set up
    and summed on its own thread (the whole team when the wave has one
    column), then every thread multiplies the wave's densities into its
    points' products (pyopnb_rows_products: never an underflow).
    """
    cdef Py_ssize_t ndim = Zt.shape[0], n = Zt.shape[1], t0
    cdef ColumnScratch wk = _wave_work(Zt, y, K, h, mode, nbin, eps, beta, num_threads, scratch)
    cdef const Classes* P = &wk.P
    cdef int nthr = wk.nthr, W = _wave(max(ndim, 1), wk.nthr), w
    cdef Column* cols
    cdef bint keep = wk.keep
    cdef int bad = 0
    cdef bint fresh = init is None
    if not fresh:
        if len(init) != 2 or any(np.shape(a) != (n, K) for a in init):
            raise ValueError(f"init must be (pr, acc), each ({n}, {K})")
        if ndim == 0 or n == 0:
            return np.array(init[0], dtype=np.float64), np.array(init[1], dtype=np.float64)
    elif ndim == 0 or n == 0:
        return np.ones((n, K)), np.zeros((n, K))
    # each point's class densities multiplied over the columns
    prods = np.empty((n, K)) if fresh else np.array(init[0], dtype=np.float64, order="C")
    acc = np.empty((n, K)) if fresh else np.array(init[1], dtype=np.float64, order="C")
    cdef double* pr = <double*> cnp.PyArray_DATA(prods)
    cdef double* ac = <double*> cnp.PyArray_DATA(acc)
    # the kept columns are a whole Z's only when the products started here
    keep = keep and fresh
    wk.kept = False
    with nogil:
        t0 = 0
        while t0 < ndim and not bad:
            w = <int> min(W, ndim - t0)
            cols = wk.cols + (t0 if keep else 0)
            bad = _wave_setup(P, &Zt[0, 0], t0, w, cols, keep, wk.memos, nthr)
            if not bad:
                bad = _multiply_columns(P, cols, w, pr, ac, fresh and t0 == 0, nthr)
            t0 = t0 + w
        if keep and not bad:
            memcpy(wk.Zkept, &Zt[0, 0], ndim * n * sizeof(double))
    if bad:
        raise MemoryError("not enough memory for the kernel-sum tables")
    wk.kept = keep
    return prods, acc


def log_density_gradient(double[:, ::1] Zt, int[::1] y, int K, double[::1] h,
                         int mode, Py_ssize_t nbin, double eps,
                         double[:, ::1] post, const double[::1] beta, int num_threads, ColumnScratch scratch=None):
    """n * d l / d Z, as [ndim, n], given the class posteriors [n, K]. ``scratch``: a ColumnScratch made for these arguments, kept between calls.

    In waves of columns as log_densities: set-up and kernel sums a column to
    a thread, the per-point terms on every thread.
    """
    cdef Py_ssize_t ndim = Zt.shape[0], n = Zt.shape[1], t0
    cdef ColumnScratch wk = _wave_work(Zt, y, K, h, mode, nbin, eps, beta, num_threads, scratch)
    cdef const Classes* P = &wk.P
    cdef int nthr = wk.nthr, W = _wave(max(ndim, 1), wk.nthr), w, c, inner
    if post.shape[0] != n or post.shape[1] != K:
        raise ValueError(f"post must be ({n}, {K}), got ({post.shape[0]}, {post.shape[1]})")
    cdef Column* cols
    cdef bint keep = wk.keep
    dZ = np.zeros((ndim, n))
    if ndim == 0 or n == 0:
        return dZ
    cdef double[:, ::1] dv = dZ
    cdef int bad = 0
    # the value pass's columns serve when they are this Zt's (the gradient's
    # own sums then overwrite them: once only)
    cdef bint reuse = wk.kept and memcmp(wk.Zkept, &Zt[0, 0], ndim * n * sizeof(double)) == 0
    wk.kept = False
    with nogil:
        t0 = 0
        while t0 < ndim and not bad:
            w = <int> min(W, ndim - t0)
            inner = nthr if w == 1 else 1
            cols = wk.cols + (t0 if keep else 0)
            if not reuse:
                bad = _wave_setup(P, &Zt[0, 0], t0, w, cols, True, wk.memos, nthr)
            if bad:
                break
            _point_terms(P, cols, w, &dv[t0, 0], &post[0, 0], nthr)
            if w == 1:
                _column_grad(P, &Zt[t0, 0], &cols[0], &dv[t0, 0], inner)
            else:
                for c in prange(w, num_threads=_region_threads(w, n * K * w), schedule='static'):
                    _column_grad(P, &Zt[t0 + c, 0], &cols[c], &dv[t0 + c, 0], inner)
            if P.mode == EXACT:
                _sample_terms(P, cols, w, &dv[t0, 0], nthr)
            t0 = t0 + w
    if bad:
        raise MemoryError("not enough memory for the kernel-sum tables")
    return dZ


cdef class _ColumnPasses(CoreEvaluator):
    """l by the column passes in ``mode``, with a scratch kept for every
    evaluation (the shared part of ExactPasses and LinearPasses)."""
    cdef ColumnScratch scratch
    cdef readonly int mode
    cdef readonly Py_ssize_t nbin
    cdef readonly bint squared_priors
    cdef object beta, value_PI
    cdef double eps
    # subset_values' chosen rows of Z' and their products (pr, acc), or None
    cdef object _chosen_rows
    cdef tuple _chosen_products

    def __init__(self, y0, h, PI, int threads, int mode, Py_ssize_t nbin, const double[::1] beta, double eps,
                 bint squared_priors):
        if type(self) is _ColumnPasses:
            raise TypeError("make ExactPasses or LinearPasses")
        CoreEvaluator.__init__(self, y0, h, PI, threads)
        self.mode, self.nbin, self.eps = mode, nbin, eps
        self.beta = np.array(beta)
        self.squared_priors = squared_priors
        self.value_PI = self.PI * self.PI if squared_priors else None
        self.scratch = ColumnScratch(self.y0, self.K, self.h, mode, nbin, eps, self.beta, self.threads)

    cpdef void use_threads(self, int count):
        CoreEvaluator.use_threads(self, count)
        self.scratch.nthr = self.threads

    cpdef tuple evaluate(self, object Zt, bint gradient):
        pr, acc = class_products(Zt, self.y0, self.K, self.h, self.mode, self.nbin, self.eps, self.beta,
                                 self.threads, self.scratch)
        value, post = product_posteriors(pr, acc, self.y0, self.PI, self.threads, self.value_PI)
        if not gradient:
            return float(value), None
        return float(value), log_density_gradient(Zt, self.y0, self.K, self.h, self.mode, self.nbin, self.eps, post,
                                                  self.beta, self.threads, self.scratch)

    cpdef list subset_values(self, object Zt, list chosen, list candidates):
        """As CoreEvaluator.subset_values, to the bit, with each point's products
        over ``chosen`` made once and each candidate's column multiplied into
        them: R's greedy order then sums every column once a step, not
        the chosen ones again for each candidate. The chosen columns'
        products are kept for the next step, which adds one column to them
        (None: no column chosen, each candidate's products made afresh)."""
        Za = np.asarray(Zt)
        rows = np.array(Za[chosen], dtype=np.float64, order="C")
        kept = self._chosen_rows
        if not chosen:
            state = None
        elif kept is not None and kept.shape[0] == len(chosen) and np.array_equal(kept, rows):
            state = self._chosen_products
        elif kept is not None and kept.shape[0] == len(chosen) - 1 and np.array_equal(kept, rows[:-1]):
            state = self._products(rows[-1:], self._chosen_products)
        else:
            state = self._products(rows, None)
        self._chosen_rows, self._chosen_products = rows, state
        values = []
        for j in candidates:
            pr, acc = self._products(np.ascontiguousarray(Za[[j]]), state)
            values.append(float(product_posteriors(pr, acc, self.y0, self.PI, self.threads, self.value_PI)[0]))
        return values

    cdef tuple _products(self, Zt, tuple init):
        return class_products(Zt, self.y0, self.K, self.h, self.mode, self.nbin, self.eps, self.beta, self.threads,
                              self.scratch, init)


cdef class ExactPasses(_ColumnPasses):
    """l with exact kernel sums, each column's points sorted, and its exact
    gradient. ``squared_priors``: R's f_NB_exact, whose value multiplies by
    PI_k twice (its gradient, R's df_NB_exact, does not)."""

    def __init__(self, y0, h, PI, int threads, const double[::1] beta, bint squared_priors=False):
        _ColumnPasses.__init__(self, y0, h, PI, threads, EXACT, 0, beta, 0.0, squared_priors)


cdef class LinearPasses(_ColumnPasses):
    """The paper's binned l: linear binning on ``nbin`` grid points per
    column (widened by ``eps`` at each end), each point's densities summed
    from the binned weights, and the exact derivative of that value."""

    def __init__(self, y0, h, PI, int threads, Py_ssize_t nbin, const double[::1] beta, double eps):
        if nbin < 2:
            raise ValueError("need nbin >= 2")
        _ColumnPasses.__init__(self, y0, h, PI, threads, LINEAR, nbin, beta, eps, False)
