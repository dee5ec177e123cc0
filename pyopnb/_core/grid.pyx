# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""Binned objectives that read densities on each column's grid: R's f_NB_cpp
(value) and df_NB_cpp (gradient), RGridTables, and the journal's
interpolated tables, InterpGridTables; RGrid and InterpGrid are the
evaluators built on them. Every point reads its class densities at its grid
point, so each column comes down to tables [nbin, K] at the grid points. The
passes over the points then read all columns' tables for a block of points
at a time: one sweep over the data instead of one read and write of an
n x K array per column, which would make these passes memory-bound (more
threads would then add little).
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport exp, log, INFINITY
from libc.string cimport memcpy, memset

cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil

from pyopnb._core.common cimport LINEAR, _MAX_ORDER, _data_or_null, _region_threads, _thread_id
from pyopnb._ksum cimport Kernel, RunningSums, _make_kernel, _sums_on_anchors
from pyopnb._core.geometry cimport _bin_linear, _grid_cell_of, _grid_delta, _grid_motion, _min_max
from pyopnb._core.passes cimport Column, Classes, ColumnScratch, _grid_at, _set_grid
from pyopnb._core.posteriors cimport _row_posterior, _row_posterior_products
from pyopnb._core.linalg import c_log_array
from pyopnb._core.evaluator cimport CoreEvaluator
from pyopnb._core.decay cimport pyopnb_decay, pyopnb_exps
from pyopnb._core.products cimport (pyopnb_block_products, pyopnb_copy_row, pyopnb_grad_points_at_cells,
                                    pyopnb_log_products)

cnp.import_array()


# a column's sums run over its support alone unless the support holds nearly
# the whole grid (see _support): more than _DENSE tenths of its points
DEF _DENSE = 9


cdef inline Py_ssize_t _block_len(int K) noexcept nogil:
    # points per block: a block's products (2 x K each) stay in cache; a
    # function of K only, so that block sums do not depend on the threads
    return max(8, 4096 // K)


cdef object _column_pointers(const double* T1, const double* T2, Py_ssize_t TK, const int* cell_of, Py_ssize_t n,
                             const Py_ssize_t[::1] cols):
    """For _block_products, as addresses in an intp array [3, ncol]: row 0 the
    columns cols' tables in T1 [ndim, TK], row 1 in T2 (NULL: none), row 2
    their cells in cell_of [ndim, n]."""
    cdef Py_ssize_t ncol = cols.shape[0], c
    out = np.zeros((3, max(ncol, 1)), dtype=np.intp)
    cdef Py_ssize_t[:, ::1] ov = out
    for c in range(ncol):
        ov[0, c] = <Py_ssize_t> &T1[cols[c] * TK]
        ov[1, c] = <Py_ssize_t> &T2[cols[c] * TK] if T2 != NULL else 0
        ov[2, c] = <Py_ssize_t> &cell_of[cols[c] * n]
    return out


cdef void _block_products(int level, const Py_ssize_t[:, ::1] ptrs, int ncol, int nset, int K, Py_ssize_t i0,
                          Py_ssize_t m, double* pr1, double* pr2, double* acc1, double* acc2) noexcept nogil:
    """pr1, acc1 (and pr2, acc2 where nset = 2) [m, K]: for the points
    i0..i0+m-1, the product over the columns (in order) of their density
    tables at the points' cells (ptrs: _column_pointers'), kept as
    pyopnb_products_n keeps them, as passes.pyx's class_products; two tables
    at once where nset = 2; level: the vector path."""
    pyopnb_block_products(level, <const double* const*> &ptrs[0, 0], <const int* const*> &ptrs[2, 0], ncol, K,
                          i0, m, nset, <int> ptrs.shape[1], pr1, pr2, acc1, acc2)


cdef inline Py_ssize_t _bin_nblk(Py_ssize_t n) noexcept nogil:
    """Blocks of points whose grid weights are summed apart and then added in
    block order (R's binned passes): a function of n only, so the sums do not
    depend on the threads; one block up to 65536 points (the order of a
    single sequential pass), at most 64 (their grids' memory)."""
    return max(1, min(64, (n + 65535) // 65536))


cdef void _reduce_blocks(double* part, Py_ssize_t nblk, Py_ssize_t TK) noexcept nogil:
    """part[0] += part[1], then part[2], ...: a column's block grids, in block order."""
    cdef Py_ssize_t b, j
    cdef double* dst = part
    cdef const double* src
    for b in range(1, nblk):
        src = &part[b * TK]
        for j in range(TK):
            dst[j] = dst[j] + src[j]


cdef struct Support:
    # a column's grid points that matter, increasing: weighted, those that
    # hold weight (each point's cell and the next, for linear binning);
    # occupied, the points' cells alone (where R reads densities, where whole
    # weights sit), with occupied_pos[j] the position of occupied[j] in
    # weighted; scratch for positions and weights
    Py_ssize_t* weighted
    Py_ssize_t m
    Py_ssize_t* occupied
    Py_ssize_t* occupied_pos
    Py_ssize_t mc
    bint sparse             # sums run over these points alone (else over the whole grid)
    double* ax              # m: anchors' positions
    double* W               # m x K weights
    double* E               # nbin rows: the decay of a gap of k cells, row k (sparse)
    int* stamp              # nbin: E's row k holds this sum's decay when stamp[k] == cur
    int* cur


cdef void _support(const int* cells, Py_ssize_t n, Py_ssize_t nbin, unsigned char* mask, Support* sp) noexcept nogil:
    """A column's support (see Support) from its points' cells; mask: nbin
    (rounded up to 8) zero bytes, left zero. Read 8 bytes at a time: most of
    a fine grid is empty."""
    cdef Py_ssize_t i, g, w, nw = (nbin + 7) // 8, m = 0, mc = 0
    cdef unsigned long long word
    for i in range(n):
        mask[cells[i]] |= 1
        mask[cells[i] + 1] |= 2
    for w in range(nw):
        memcpy(&word, &mask[8 * w], 8)
        while word:
            # the next marked byte (x86-64 and Arm64 are little-endian: byte b is bits 8b..8b+7)
            g = 8 * w + (__builtin_ctzll(word) >> 3)
            word &= ~(<unsigned long long> 0xFF << (8 * (g - 8 * w)))
            sp.weighted[m] = g
            if mask[g] & 1:
                sp.occupied[mc] = g
                sp.occupied_pos[mc] = m
                mc += 1
            m += 1
            mask[g] = 0
    sp.m = m
    sp.mc = mc
    # summing over the support alone skips the empty grid between the points
    # (the same sums up to rounding, measured faster down to a tenth of the
    # grid left empty); a support of nearly the whole grid sums on the grid
    sp.sparse = 10 * m <= _DENSE * nbin


cdef void _grid_sums(const Classes* P, const Kernel* ker, Column* col, const double* Wk, double* S,
                    double* D, bint logs, Support* sp, bint anchors_all, bint eval_all, double* T, bint have_T,
                    int nthr) noexcept nogil:
    """Kernel sums (kernel ker) at the column's grid points of grid weights
    Wk [nbin, K], each class in its bandwidth: S and D [nbin, K], either
    NULL if not wanted, at the support's points only (the other rows are
    left as they were). The weights lie on the whole support (anchors_all:
    linear binning) or on the cells; the sums are wanted on the whole
    support (eval_all) or at the cells (R's readings). logs: S holds log
    sums, summed in log space (finite however far a grid point is from a
    class's weights: the journal's tables). A sparse
    support's sums run over its points alone, else over the whole grid.
    T: where the anchors' decays go (NULL: the column scratch's table);
    have_T: they are there already (the same anchors as an earlier sum)."""
    cdef Py_ssize_t j, m = sp.m if anchors_all else sp.mc, me = sp.m if eval_all else sp.mc
    cdef const Py_ssize_t* anc = sp.weighted if anchors_all else sp.occupied
    cdef const Py_ssize_t* ev = sp.weighted if eval_all else sp.occupied
    cdef const Py_ssize_t* lo
    cdef int K = P.K
    # the column's tables, with the decays in T where asked (the column's own stay as they are)
    cdef RunningSums tb = col.tb
    if T != NULL:
        tb.decay = T
    # (the evaluation points are grid points, on their anchors: no positions to give)
    if sp.sparse:
        for j in range(m):
            sp.ax[j] = _grid_at(col, anc[j])
            pyopnb_copy_row(&Wk[anc[j] * K], K, &sp.W[j * K])
        if not have_T:
            _cell_gap_decays(P, ker, col.delta, anc, m, sp, tb.decay)
            have_T = True
        # an evaluation point's anchor: itself, found by its place among the anchors
        lo = sp.occupied_pos if (anchors_all and not eval_all) else col.ident
        _sums_on_anchors(sp.ax, m, sp.W, K, P.h, P.shared, ker, &tb, NULL, lo, me, ev, S, D,
                         logs, have_T, nthr)
    else:
        _sums_on_anchors(col.anchors, P.nbin, Wk, K, P.h, P.shared, ker, &tb, NULL, ev, me, ev, S, D,
                         logs, have_T, nthr)


cdef void _cell_gap_decays(const Classes* P, const Kernel* ker, double delta, const Py_ssize_t* anc,
                           Py_ssize_t m, Support* sp, double* T) noexcept nogil:
    """The decays of a sparse support's gaps (into T, as _recurse lays
    them out): a gap of k cells is k delta wide, and the few distinct k of a
    column each take one exp (the anchors' differences, rounded apart, would
    each take their own)."""
    cdef Py_ssize_t j, gap
    cdef int row = (ker.a + 1) if P.shared else P.K
    cdef double* e
    sp.cur[0] += 1
    for j in range(1, m):
        gap = anc[j] - anc[j - 1]
        e = &sp.E[gap * row]
        if sp.stamp[gap] != sp.cur[0]:
            if P.shared:
                pyopnb_decay(gap * delta / P.h[0], ker.a, e)
            else:
                pyopnb_exps(gap * delta, P.h, P.K, e)
            sp.stamp[gap] = sp.cur[0]
        pyopnb_copy_row(e, row, &T[j * row])


# points whose fractions _bin_points divides at once
DEF _FRAC_CHUNK = 256


cdef void _bin_points(const Classes* P, const double* z, double lo, double delta, Py_ssize_t nbin,
                      Py_ssize_t i0, Py_ssize_t i1, int* cells, double* pl, double* ps) noexcept nogil:
    """Points i0..i1-1 of a column z binned into a block's grids [nbin, K]
    (zeroed first): linear binning into pl, whole weights into ps (NULL:
    none), each class's weight 1/(n_k h_k); each point's cell into cells.
    The cell and the fraction come from one division, (z - lo) / delta
    (_cell_frac's value), made for a chunk of points in a loop of its own:
    the compiler puts several in a vector division, with the same bits."""
    cdef double fr[_FRAC_CHUNK]
    cdef Py_ssize_t c0, c1, i, g
    cdef int k, K = P.K
    cdef double frac, wt
    memset(pl, 0, nbin * K * sizeof(double))
    if ps != NULL:
        memset(ps, 0, nbin * K * sizeof(double))
    for c0 in range(i0, i1, _FRAC_CHUNK):
        c1 = min(i1, c0 + _FRAC_CHUNK)
        for i in range(c0, c1):
            fr[i - c0] = (z[i] - lo) / delta
        for i in range(c0, c1):
            frac = fr[i - c0]
            g = _grid_cell_of(frac, nbin)
            frac = frac - g
            cells[i] = <int> g
            k = P.y[i]
            wt = P.wcls[k]
            _bin_linear(&pl[k], g, K, frac, wt)
            if ps != NULL:
                ps[g * K + k] += wt


cdef inline double _cell_frac(double z, double lo, double delta, Py_ssize_t g) noexcept nogil:
    """A point's place in its cell g, in [0, 1): its linear binning fraction."""
    return (z - lo) / delta - g


cdef void _block_interp(const double* T, Py_ssize_t TK, int K, const int* cell_of, const double* Zt,
                        const double* lo, const double* delta, Py_ssize_t n, Py_ssize_t ndim,
                        Py_ssize_t i0, Py_ssize_t m, double* acc) noexcept nogil:
    """acc [m, K]: for the points i0..i0+m-1, the sum over the columns (in
    order) of the tables T [ndim, TK] interpolated linearly between the
    point's two grid points, (1 - u) T[g] + u T[g + 1]."""
    cdef Py_ssize_t t, j, i, g
    cdef int k
    cdef double u
    cdef const double* row
    cdef double* a
    memset(acc, 0, m * K * sizeof(double))
    for t in range(ndim):
        for j in range(m):
            i = i0 + j
            g = cell_of[t * n + i]
            u = _cell_frac(Zt[t * n + i], lo[t], delta[t], g)
            row = &T[t * TK + g * K]
            a = &acc[j * K]
            for k in range(K):
                a[k] = a[k] + ((1.0 - u) * row[k] + u * row[K + k])


cdef class GridTables:
    """Binned densities of every column of Z = XV at its grid points: the
    machinery that R's tables (:class:`RGridTables`) and the journal's
    interpolated ones (:class:`InterpGridTables`) share.

    For column t: the grid lo[t] + g delta[t] (g = 0..nbin-1) and tables
    [nbin * K] (entry g * K + k) of f with linear binning: R's as they are
    (S_lin, multiplied over the columns at each point: _block_products), the
    journal's in logs (logS_lin, interpolated).
    ``update(Zt)`` builds them for a Z: the shared binning, then each
    column's own tables (``_column_tables``, each kind's); the subclasses'
    other methods are the passes over the points. One object serves all of a fit's evaluations, so
    its buffers are allocated once (fresh pages fault at first touch, at
    every evaluation).

    Parallel work: the passes over the points go by (column, block of
    points) on every thread, each block binning its points into its own grid
    (blocks fixed by n, see _bin_nblk, added in order); the grid-sized kernel
    sums go a column to a thread.
    """
    cdef ColumnScratch wk
    cdef readonly Py_ssize_t ndim, n, nbin
    cdef Py_ssize_t TK, nblk
    cdef bint _logs_made
    cdef readonly bint has_gradient
    # each point's whole class weight binned into its cell too (R's gradient reads those tables)
    cdef bint bins_simple
    cdef readonly object Zt, lo, delta, S_lin, logS_lin, S_simple, D_simple
    cdef object _post, _terms, _dZ, _W, _part_lin, _part_simple, _zmin, _zmax, _Psi, _edge
    # each column's support (see Support), each thread's scratch for one
    cdef object _weighted, _occupied, _occupied_pos, _nweighted, _noccupied, _sparse, _mask
    cdef object _support_positions, _support_weights, _stamp, _cur
    # R's gradient's decays over each column's cells; each thread's decays of gaps of k cells
    cdef object _cell_decays, _gap_rows
    # subset_values' per-cell maxima and scaled exponentials of the log tables
    cdef object _cell_max, _cell_exps
    cdef object _vp_scratch, _all_cols, _scaled
    cdef Py_ssize_t cell_decay_len
    cdef Py_ssize_t* weightedp
    cdef Py_ssize_t* occupiedp
    cdef Py_ssize_t* occupied_posp
    cdef Py_ssize_t* nweightedp
    cdef Py_ssize_t* noccupiedp
    cdef unsigned char* sparsep
    cdef unsigned char* maskp
    cdef double* support_positionsp
    cdef double* support_weightsp
    cdef double* gap_rowsp
    cdef int* stampp
    cdef int* curp
    cdef double* part_linp          # each (column, block)'s linearly binned class weights
    cdef double* logS_linp          # [ndim, TK]: log f with linear binning (the journal's; R's, made on demand)
    cdef double* part_simplep       # the same binned whole into the cells (NULL without a gradient)
    cdef Py_ssize_t gap_row_len
    cdef Kernel psi
    cdef readonly int[:, ::1] cells  # each point's grid cell in each column

    def __cinit__(self, Py_ssize_t ndim, int[::1] y, int K, double[::1] h, Py_ssize_t nbin,
                  double eps, const double[::1] beta, bint gradient, int num_threads):
        if type(self) is GridTables:
            raise TypeError("GridTables is the shared base: make RGridTables or InterpGridTables")
        if ndim < 1 or nbin < 2 or nbin > 2**31 - 1:
            raise ValueError("need ndim >= 1 and 2 <= nbin < 2**31")
        if y.shape[0] < 1:
            raise ValueError("need at least one point")
        self.wk = ColumnScratch(y, K, h, LINEAR, nbin, eps, beta, num_threads, False)
        self.wk._ensure(<int> min(ndim, self.wk.nthr))
        self.ndim, self.n, self.nbin, self.TK = ndim, y.shape[0], nbin, nbin * K
        self.nblk = _bin_nblk(self.n)
        self.has_gradient = gradient
        self.Zt = None
        self.lo = np.empty(ndim)
        self.delta = np.empty(ndim)
        # rows outside a column's support keep what they hold: zero, not garbage, at first
        # (R's logs: made when subset_values first asks, see _make_logs)
        self.logS_lin = np.zeros((ndim, self.TK))
        # each (column, block)'s grid weights, and its extremes
        self._part_lin = np.empty((ndim, self.nblk, self.TK))
        self._part_simple = np.empty((ndim, self.nblk, self.TK)) if gradient else None
        self._zmin = np.empty((ndim, self.nblk))
        self._zmax = np.empty((ndim, self.nblk))
        # the passes' outputs, reused from one Z to the next (a fit's evaluations)
        self._post = None
        self._terms = np.empty(self.n)
        self.cells = np.empty((ndim, self.n), dtype=np.intc)
        self._dZ = None
        self._W = None
        # each column's support (see _support), and each thread's scratch for it
        self._weighted = np.empty((ndim, nbin), dtype=np.intp)
        self._occupied = np.empty((ndim, nbin), dtype=np.intp)
        self._occupied_pos = np.empty((ndim, nbin), dtype=np.intp)
        self._nweighted = np.zeros(ndim, dtype=np.intp)
        self._noccupied = np.zeros(ndim, dtype=np.intp)
        self._sparse = np.zeros(ndim, dtype=np.uint8)
        self._mask = np.zeros((self.wk.nthr, 8 * ((nbin + 7) // 8)), dtype=np.uint8)
        self._support_positions = np.empty((self.wk.nthr, nbin))
        self._support_weights = np.empty((self.wk.nthr, nbin * K))
        # each column's decays over its cells (R's gradient, sparse supports), a row a gap as _recurse's T
        self.cell_decay_len = nbin * (self.wk.P.ker.a + 1 if self.wk.P.shared else K)
        # each thread's decays of gaps of k cells (sparse supports), for the widest kernel (psi's)
        self.gap_row_len = self.wk.P.ker.a + 2 if self.wk.P.shared else K
        self._gap_rows = np.empty((self.wk.nthr, nbin * self.gap_row_len))
        self._stamp = np.zeros((self.wk.nthr, nbin), dtype=np.intc)
        self._cur = np.zeros(self.wk.nthr, dtype=np.intc)
        self.gap_rowsp = <double*> cnp.PyArray_DATA(self._gap_rows)
        self.stampp = <int*> cnp.PyArray_DATA(self._stamp)
        self.curp = <int*> cnp.PyArray_DATA(self._cur)
        self.weightedp = <Py_ssize_t*> cnp.PyArray_DATA(self._weighted)
        self.occupiedp = <Py_ssize_t*> cnp.PyArray_DATA(self._occupied)
        self.occupied_posp = <Py_ssize_t*> cnp.PyArray_DATA(self._occupied_pos)
        self.nweightedp = <Py_ssize_t*> cnp.PyArray_DATA(self._nweighted)
        self.noccupiedp = <Py_ssize_t*> cnp.PyArray_DATA(self._noccupied)
        self.sparsep = <unsigned char*> cnp.PyArray_DATA(self._sparse)
        self.maskp = <unsigned char*> cnp.PyArray_DATA(self._mask)
        self.support_positionsp = <double*> cnp.PyArray_DATA(self._support_positions)
        self.support_weightsp = <double*> cnp.PyArray_DATA(self._support_weights)
        self.part_linp = <double*> cnp.PyArray_DATA(self._part_lin)
        self.logS_linp = <double*> cnp.PyArray_DATA(self.logS_lin)
        self.part_simplep = _data_or_null(self._part_simple)

    cdef void _column_tables(self, Py_ssize_t t, Column* col, Support* sp, int inner) noexcept nogil:
        """Column t's tables from its blocks' binned weights, summed (col
        set on its grid, sp its support; inner: the threads within the
        column): each kind's own."""
        pass

    def update(self, double[:, ::1] Zt):
        """Build the tables of Z' = Zt [ndim, n]. Arrays returned by earlier
        passes are overwritten by the next passes."""
        cdef Py_ssize_t ndim = self.ndim, n = self.n, nbin = self.nbin, TK = self.TK, nblk = self.nblk
        cdef int nthr = _region_threads(self.wk.nthr, n * ndim * self.wk.P.K)
        if Zt.shape[0] != ndim or Zt.shape[1] != n:
            raise ValueError(f"Zt must be ({ndim}, {n}), got ({Zt.shape[0]}, {Zt.shape[1]})")
        self.Zt = np.asarray(Zt)
        cdef bint simple = self.bins_simple
        cdef double[::1] lov = self.lo, dv = self.delta
        cdef double* PL = self.part_linp
        cdef double* PS = self.part_simplep
        cdef double[:, ::1] zmn = self._zmin, zmx = self._zmax
        cdef const Classes* P = &self.wk.P
        cdef Column* cols = self.wk.cols
        cdef Column* col
        cdef Support sp
        cdef int tid, inner = nthr if ndim == 1 else 1
        cdef Py_ssize_t B = (n + nblk - 1) // nblk, it, t, b, i0, i1
        cdef double mn, mx
        cdef int[:, ::1] cv = self.cells
        with nogil:
            for it in prange(ndim * nblk, num_threads=nthr, schedule='dynamic'):
                t = it // nblk
                i0 = (it % nblk) * B
                i1 = min(n, i0 + B)
                _min_max(&Zt[t, i0], i1 - i0, &zmn[t, it % nblk], &zmx[t, it % nblk])
            for t in range(ndim):
                mn = zmn[t, 0]
                mx = zmx[t, 0]
                for b in range(1, nblk):
                    mn = min(mn, zmn[t, b])
                    mx = max(mx, zmx[t, b])
                dv[t] = _grid_delta(mn, mx, P.eps, nbin, &lov[t])
            # cells, and each block's grid weights: linear binning (the value)
            # and simple (the gradient), whole class weights 1/(n_k h_k)
            for it in prange(ndim * nblk, num_threads=nthr, schedule='dynamic'):
                t = it // nblk
                i0 = (it % nblk) * B
                i1 = min(n, i0 + B)
                _bin_points(P, &Zt[t, 0], lov[t], dv[t], nbin, i0, i1, &cv[t, 0], &PL[it * TK],
                            &PS[it * TK] if simple else NULL)
            for t in prange(ndim, num_threads=min(ndim, nthr), schedule='dynamic'):
                tid = _thread_id()
                col = &cols[tid]
                sp = self._column_support(t, tid, True)
                _set_grid(col, lov[t], dv[t], nbin, not sp.sparse)
                _reduce_blocks(&PL[t * nblk * TK], nblk, TK)
                self._column_tables(t, col, &sp, inner)
        self._logs_made = False
        return self

    cdef Support _column_support(self, Py_ssize_t t, int tid, bint build) noexcept nogil:
        """Column t's support with thread tid's scratch: found from the
        cells (build, in update) or as update found it."""
        cdef Support sp
        sp.weighted = &self.weightedp[t * self.nbin]
        sp.occupied = &self.occupiedp[t * self.nbin]
        sp.occupied_pos = &self.occupied_posp[t * self.nbin]
        sp.ax = &self.support_positionsp[tid * self.nbin]
        sp.W = &self.support_weightsp[tid * self.nbin * self.wk.P.K]
        sp.E = &self.gap_rowsp[tid * self.nbin * self.gap_row_len]
        sp.stamp = &self.stampp[tid * self.nbin]
        sp.cur = &self.curp[tid]
        if build:
            _support(&self.cells[t, 0], self.n, self.nbin, &self.maskp[tid * 8 * ((self.nbin + 7) // 8)], &sp)
            self.nweightedp[t] = sp.m
            self.noccupiedp[t] = sp.mc
            self.sparsep[t] = sp.sparse
        else:
            sp.m = self.nweightedp[t]
            sp.mc = self.noccupiedp[t]
            sp.sparse = self.sparsep[t]
        return sp

    cdef Support _summing_column(self, Py_ssize_t t, int tid, Column* col, double lo, double delta,
                                 double* parts) noexcept nogil:
        """Column t's support as update found it, its grid on thread tid's
        column scratch, and its blocks' grid weights (parts) added in block
        order: a gradient's sums over the grid start here."""
        cdef Support sp = self._column_support(t, tid, False)
        _set_grid(col, lo, delta, self.nbin, not sp.sparse)
        _reduce_blocks(parts, self.nblk, self.TK)
        return sp

    def _check_built(self, PI=None):
        """After the checks every pass makes, the priors' logs (the C
        library's log; None without PI), for the rows that go through logs."""
        if self.Zt is None:
            raise ValueError("no tables yet: call update(Zt) first")
        if PI is None:
            return None
        if len(PI) != self.wk.P.K:
            raise ValueError(f"PI must have K = {self.wk.P.K} entries, got {len(PI)}")
        return c_log_array(PI)

    def _gradient_out(self, const double[:, ::1] post, bint ready):
        """The gradient's output [ndim, n], kept between calls, after the
        checks every gradient makes (``ready``: tables built with the
        gradient's)."""
        self._check_built()
        if not ready:
            raise ValueError("tables built without the gradient's")
        if post.shape[0] != self.n or post.shape[1] != self.wk.P.K:
            raise ValueError(f"post must be ({self.n}, {self.wk.P.K}), got ({post.shape[0]}, {post.shape[1]})")
        if self._dZ is None:
            self._dZ = np.empty((self.ndim, self.n))
            self._W = np.empty((self.ndim, self.TK))
        return self._dZ


cdef class RGridTables(GridTables):
    """R's binned objective as a fit evaluates it: tables of f with linear
    binning (f_NB_cpp's value) and, for the gradient, f and the kernel
    derivative sums D with simple binning (df_NB_cpp), every point reading
    its column's tables at its grid point."""
    cdef double* S_linp             # [ndim, TK]: f with linear binning, at the grid points
    cdef double* S_simplep          # [ndim, TK]: f with simple binning (NULL without a gradient)
    cdef double* D_simplep          # [ndim, TK]: its kernel derivative sums
    cdef double* cell_decaysp       # [ndim, cell_decay_len]: each column's decays over its cells

    def __cinit__(self, Py_ssize_t ndim, int[::1] y, int K, double[::1] h, Py_ssize_t nbin,
                  double eps, const double[::1] beta, bint gradient, int num_threads):
        self.bins_simple = gradient
        self.S_lin = np.zeros((ndim, self.TK))
        self.S_simple = np.empty((ndim, self.TK)) if gradient else None
        self.D_simple = np.empty((ndim, self.TK)) if gradient else None
        self._cell_decays = np.empty((ndim, self.cell_decay_len)) if gradient else None
        self.S_linp = <double*> cnp.PyArray_DATA(self.S_lin)
        self.S_simplep = _data_or_null(self.S_simple)
        self.D_simplep = _data_or_null(self.D_simple)
        self.cell_decaysp = _data_or_null(self._cell_decays)

    cdef void _column_tables(self, Py_ssize_t t, Column* col, Support* sp, int inner) noexcept nogil:
        cdef const Classes* P = &self.wk.P
        cdef Py_ssize_t TK = self.TK, nblk = self.nblk
        # linear binning, densities read at the cells
        _grid_sums(P, &P.ker, col, &self.part_linp[t * nblk * TK], &self.S_linp[t * TK], NULL, False, sp, True,
                   False, NULL, False, inner)
        if self.bins_simple:
            # R's simple binning: whole weights at the cells: on a sparse support the cells'
            # decays are kept for the gradient's sums; on the grid, they are those just made
            _reduce_blocks(&self.part_simplep[t * nblk * TK], nblk, TK)
            _grid_sums(P, &P.ker, col, &self.part_simplep[t * nblk * TK], &self.S_simplep[t * TK],
                       &self.D_simplep[t * TK], 0, sp, False, False,
                       &self.cell_decaysp[t * self.cell_decay_len] if sp.sparse else NULL, not sp.sparse, inner)

    def value_and_posteriors(self, const double[::1] PI, bint posteriors):
        """(l with linear binning, posteriors [n, K] with simple binning or
        None) with priors PI, each point's densities read at its grid point,
        as R's f_NB_cpp and df_NB_cpp, and combined from their products
        (_row_posterior_products)."""
        logprior = self._check_built(PI)
        if posteriors and self.S_simple is None:
            raise ValueError("tables built without the gradient's")
        cdef Py_ssize_t n = self.n, ndim = self.ndim, i, j, b, i0, m
        cdef int K = self.wk.P.K, tid, nthr = _region_threads(self.wk.nthr, n * ndim * self.wk.P.K)
        cdef Py_ssize_t B = _block_len(K), nblk = (n + B - 1) // B
        if posteriors and self._post is None:
            self._post = np.empty((n, K))
        post = self._post if posteriors else None
        terms = self._terms
        if self._vp_scratch is None:
            # each thread's products for a block, linear and simple binning,
            # their closed logs, and a row's logs, padded (threads writing
            # neighbouring rows share cache lines); made once
            self._vp_scratch = np.empty((self.wk.most, 4 * B * K + K + 16))
            self._all_cols = np.arange(ndim, dtype=np.intp)
        cdef double* pp = _data_or_null(post)
        cdef double[::1] tv = terms
        cdef const double[::1] lpv = logprior
        cdef double[:, ::1] av = self._vp_scratch
        cdef const Py_ssize_t[::1] colv = self._all_cols
        cdef const int* y = self.wk.P.y
        cdef const double* Tl = _data_or_null(self.S_lin)
        cdef const double* Ts = _data_or_null(self.S_simple)
        cdef const int* cell_of = &self.cells[0, 0]
        cdef Py_ssize_t TK = self.TK
        cdef double total = 0.0
        cdef double* lf
        cdef const Py_ssize_t[:, ::1] pv = _column_pointers(Tl, Ts if posteriors else NULL, TK, cell_of, n, colv)
        with nogil:
            for b in prange(nblk, num_threads=nthr, schedule='dynamic'):
                tid = _thread_id()
                i0 = b * B
                m = min(B, n - i0)
                lf = &av[tid, 0]
                _block_products(self.wk.P.simd, pv, ndim, 2 if posteriors else 1, K, i0, m, lf, &lf[B * K],
                                &lf[2 * B * K], &lf[3 * B * K])
                for j in range(m):
                    tv[i0 + j] = _row_posterior_products(&lf[j * K], &lf[(2 * B + j) * K], &PI[0], &lpv[0], K,
                                                         y[i0 + j], NULL, True, &lf[4 * B * K])
                if posteriors:
                    for j in range(m):
                        _row_posterior_products(&lf[(B + j) * K], &lf[(3 * B + j) * K], &PI[0], &lpv[0], K,
                                                y[i0 + j], &pp[(i0 + j) * K], False, &lf[4 * B * K])
            # summed in order, so that the value does not depend on the threads
            for i in range(n):
                total = total + tv[i]
        return total / n, post

    cdef void _make_logs(self):
        """logS_lin = log S_lin at each column's cells (its support's occupied cells: all
        that subset_values reads), once per update."""
        cdef Py_ssize_t t, j, e
        cdef int k, K = self.wk.P.K
        cdef Support sp
        cdef double[:, ::1] T = self.S_lin
        cdef double[:, ::1] L = self.logS_lin
        if self._logs_made:
            return
        if self._scaled is not None:
            self._scaled[:] = 0  # new logs: every column's scaled rows are stale
        for t in range(self.ndim):
            sp = self._column_support(t, 0, False)
            for j in range(sp.mc):
                e = sp.occupied[j] * K
                for k in range(K):
                    L[t, e + k] = log(T[t, e + k])
        self._logs_made = True

    cdef void _scale_rows(self, Py_ssize_t t):
        """subset_values' scaled rows of column t at its cells, once per
        update (the greedy order asks for a column at every step until it
        is chosen): M, each row's largest log (NaN where one is NaN, as
        numpy's max), and E = exp(logS_lin - M). Only at the cells: over
        whole grids these exps were most of a small fit's greedy ordering."""
        cdef Py_ssize_t j, e, g
        cdef int k, K = self.wk.P.K
        cdef double mx, v
        if self._cell_max is None:
            self._cell_max = np.zeros((self.ndim, self.nbin))
            self._cell_exps = np.zeros((self.ndim, self.TK))
            self._scaled = np.zeros(self.ndim, dtype=np.uint8)
        cdef unsigned char[::1] done = self._scaled
        if done[t]:
            return
        done[t] = 1
        cdef Support sp = self._column_support(t, 0, False)
        cdef double[:, ::1] L = self.logS_lin
        cdef double[:, ::1] M = self._cell_max
        cdef double[:, ::1] E = self._cell_exps
        for j in range(sp.mc):
            g = sp.occupied[j]
            e = g * K
            mx = -INFINITY
            for k in range(K):
                v = L[t, e + k]
                if v != v:
                    mx = v
                    break
                if v > mx:
                    mx = v
            M[t, g] = mx
            for k in range(K):
                # the C library's exp: numpy's differs by SIMD level
                E[t, e + k] = exp(L[t, e + k] - mx)

    def subset_values(self, base, candidates, const double[::1] PI):
        """l (linear binning) of the columns base + [j], for each j in candidates:
        objective_and_gradient(V[:, base + [j]]) up to rounding.

        Each column's tables are built once, so R's greedy ordering costs a
        pass over the points per step. A point's log-sum-exp over the classes
        is split into the base's part and the candidate's: with
        a_ik = exp(logprior_k + B_ik - m_i) (B the base columns' log densities,
        from S_lin as value_and_posteriors takes them) and
        E_tgk = exp(logf_tgk - M_tg) (the candidate's logS_lin, each grid row
        scaled by its largest entry), log sum_k exp(...) = m_i + M_tg +
        log sum_k a_ik E_tgk. The exponentials are then per point and per grid
        cell, not per point and candidate: one log per candidate instead of K
        exps. Where the sum would underflow (the base and the candidate put a
        point in different classes by over 575 nats) the point takes the
        direct log-sum-exp.
        """
        cdef const double[::1] logprior = self._check_built(PI)
        self._make_logs()
        bcols = np.ascontiguousarray(base, dtype=np.intp).reshape(-1)
        ccols = np.ascontiguousarray(candidates, dtype=np.intp).reshape(-1)
        for arr in (bcols, ccols):
            if arr.size and (arr.min() < 0 or arr.max() >= self.ndim):
                raise ValueError(f"column indices must be in 0..{self.ndim - 1}")
        cdef Py_ssize_t n = self.n, j, b, i0, m, g
        cdef int K = self.wk.P.K, c, k, tid, yi, nthr = _region_threads(self.wk.nthr, n * self.ndim * self.wk.P.K)
        cdef int nb = bcols.size, nc = ccols.size
        cdef const double* row
        cdef const double* er
        cdef double* ar
        cdef double s, mx
        cdef Py_ssize_t B = _block_len(K), nblk = (n + B - 1) // B, t
        if nc == 0:
            return np.empty(0)
        bcols = np.r_[bcols, 0]  # never empty
        cdef const Py_ssize_t[::1] bv = bcols
        cdef const Py_ssize_t[::1] ccv = ccols
        for c in range(nc):
            self._scale_rows(ccv[c])
        cdef const double[:, ::1] Mv = self._cell_max
        cdef const double[:, ::1] Ev = self._cell_exps
        part = np.zeros((nblk, nc))
        rows = np.empty((nthr, K + 16))  # padded: threads writing neighbouring rows share cache lines
        accs = np.empty((nthr, 2 * B * K + 16))
        aexp = np.empty((nthr, B * K))
        amax = np.empty((nthr, B))
        cdef double[:, ::1] pv = part
        cdef double[:, ::1] rv = rows
        cdef double[:, ::1] av = accs
        cdef double[:, ::1] xv = aexp
        cdef double[:, ::1] mv = amax
        cdef const int* y = self.wk.P.y
        cdef const double* Tl = _data_or_null(self.logS_lin)
        cdef const double* Sl = _data_or_null(self.S_lin)
        cdef const int* cell_of = &self.cells[0, 0]
        cdef Py_ssize_t TK = self.TK
        cdef const Py_ssize_t[:, ::1] bp = _column_pointers(Sl, NULL, TK, cell_of, n, bv)
        with nogil:
            for b in prange(nblk, num_threads=nthr, schedule='dynamic'):
                tid = _thread_id()
                i0 = b * B
                m = min(B, n - i0)
                _block_products(self.wk.P.simd, bp, nb, 1, K, i0, m, &av[tid, 0], NULL, &av[tid, B * K], NULL)
                pyopnb_log_products(m * K, &av[tid, 0], &av[tid, B * K])
                for j in range(m):
                    ar = &xv[tid, j * K]
                    mx = -INFINITY
                    for k in range(K):
                        ar[k] = logprior[k] + av[tid, j * K + k]
                        if ar[k] > mx:
                            mx = ar[k]
                    for k in range(K):
                        ar[k] = exp(ar[k] - mx)
                    mv[tid, j] = mx
                for c in range(nc):
                    t = ccv[c]
                    for j in range(m):
                        g = cell_of[t * n + i0 + j]
                        yi = y[i0 + j]
                        row = &Tl[t * TK + g * K]
                        er = &Ev[t, g * K]
                        ar = &xv[tid, j * K]
                        s = 0.0
                        for k in range(K):
                            s = s + ar[k] * er[k]
                        if s >= 1e-250:  # false for NaN (a row of -inf)
                            pv[b, c] += (logprior[yi] + av[tid, j * K + yi] + row[yi]
                                         - (mv[tid, j] + Mv[t, g] + log(s)))
                        else:
                            for k in range(K):
                                rv[tid, k] = av[tid, j * K + k] + row[k]
                            pv[b, c] += _row_posterior(&rv[tid, 0], &logprior[0], K, yi, NULL)
        return part.sum(axis=0) / n

    def gradient(self, const double[:, ::1] post):
        """n * dl/dZ [ndim, n] of df_NB_cpp, given the posteriors [n, K].

        The derivative in each z_it: point i as an evaluation point,
        -sum_k c_ik D_kt(g_i) / h_k with c_ik = (1{y_i = k} - P_ik) / f_kt(g_i),
        and as a sample point, the kernel sums of the c weights (binned whole
        into the point's cell) at its grid point. The c weights are added per
        (column, block of points) into the block's grid, the blocks then in
        order (as update's).
        """
        dZ = self._gradient_out(post, self.S_simple is not None)
        cdef Py_ssize_t n = self.n, ndim = self.ndim, nbin = self.nbin, TK = self.TK, nblk = self.nblk
        cdef const Classes* P = &self.wk.P
        cdef int K = P.K, k, tid, nthr = _region_threads(self.wk.nthr, n * ndim * P.K), inner = nthr if ndim == 1 else 1
        cdef Py_ssize_t B = (n + nblk - 1) // nblk, it, t, i, i0, i1
        cdef double[:, ::1] dv = dZ
        cdef double* DW = _data_or_null(self._W)
        cdef double* Tc = _data_or_null(self._cell_decays)
        cdef Py_ssize_t cell_decay_len = self.cell_decay_len
        cdef double* PW = _data_or_null(self._part_lin)
        cdef double* pw
        cdef const int* cell_of = &self.cells[0, 0]
        cdef double[::1] lo = self.lo, delta = self.delta
        cdef double* Ts = _data_or_null(self.S_simple)
        cdef double* Td = _data_or_null(self.D_simple)
        cdef Column* cols = self.wk.cols
        cdef Column* col
        cdef Support sp
        cdef const double* pp = &post[0, 0]
        with nogil:
            for it in prange(ndim * nblk, num_threads=nthr, schedule='dynamic'):
                t = it // nblk
                i0 = (it % nblk) * B
                i1 = min(n, i0 + B)
                pw = &PW[it * TK]
                memset(pw, 0, TK * sizeof(double))
                pyopnb_grad_points_at_cells(P.simd, &Ts[t * TK], &Td[t * TK], pw, &cell_of[t * n], pp, P.y, i0, i1,
                                            K, P.h, P.shared, &dv[t, 0])
            # the sample-point term: sums of each column's c weights at its grid
            for t in prange(ndim, num_threads=min(ndim, nthr), schedule='dynamic'):
                tid = _thread_id()
                col = &cols[tid]
                sp = self._summing_column(t, tid, col, lo[t], delta[t], &PW[t * nblk * TK])
                _grid_sums(P, &P.ker, col, &PW[t * nblk * TK], NULL, &DW[t * TK], 0, &sp, False, False,
                           &Tc[t * cell_decay_len] if sp.sparse else NULL, sp.sparse, inner)
            for it in prange(ndim * nblk, num_threads=nthr, schedule='dynamic'):
                t = it // nblk
                i0 = (it % nblk) * B
                i1 = min(n, i0 + B)
                for i in range(i0, i1):
                    k = P.y[i]
                    dv[t, i] -= P.wh[k] * DW[t * TK + cell_of[t * n + i] * K + k]
        return dZ


cdef class InterpGridTables(GridTables):
    """The journal formulation's binned objective: each column's class log
    densities on its grid (logs summed in log space, so finite however far a
    grid point lies from a class) interpolated linearly at the points, and
    the exact derivative of that value."""

    def __cinit__(self, Py_ssize_t ndim, int[::1] y, int K, double[::1] h, Py_ssize_t nbin,
                  double eps, const double[::1] beta, bint gradient, int num_threads):
        cdef int m
        self.bins_simple = False
        # psi(u) = u K'(u), even: beta_psi[m] = m beta_m - beta_{m-1}
        if beta.shape[0] > _MAX_ORDER:
            raise ValueError("beta has too many entries for the interpolated gradient")
        bpsi = np.zeros(beta.shape[0] + 1)
        for m in range(beta.shape[0] + 1):
            bpsi[m] = (m * beta[m] if m < beta.shape[0] else 0.0) - (beta[m - 1] if m > 0 else 0.0)
        _make_kernel(<double*> cnp.PyArray_DATA(bpsi), bpsi.shape[0], &self.psi)
        self._Psi = np.empty((ndim, self.TK)) if gradient else None
        self._edge = np.empty((ndim, self.nblk, 4)) if gradient else None

    cdef void _column_tables(self, Py_ssize_t t, Column* col, Support* sp, int inner) noexcept nogil:
        cdef const Classes* P = &self.wk.P
        cdef Py_ssize_t TK = self.TK
        # linear binning, log densities summed in log space on the whole support (interpolated between)
        _grid_sums(P, &P.ker, col, &self.part_linp[t * self.nblk * TK], &self.logS_linp[t * TK], NULL, True, sp,
                   True, True, NULL, False, inner)

    def value_and_posteriors(self, const double[::1] PI, bint posteriors):
        """(l, posteriors [n, K] or None) with priors PI, of the log densities
        interpolated linearly between each point's two grid points."""
        cdef const double[::1] logprior = self._check_built(PI)
        if posteriors and not self.has_gradient:
            raise ValueError("tables built without the gradient's")
        cdef Py_ssize_t n = self.n, ndim = self.ndim, i, j, b, i0, m
        cdef int K = self.wk.P.K, tid, nthr = _region_threads(self.wk.nthr, n * ndim * self.wk.P.K)
        cdef Py_ssize_t B = _block_len(K), nblk = (n + B - 1) // B
        if posteriors and self._post is None:
            self._post = np.empty((n, K))
        post = self._post if posteriors else None
        if self._vp_scratch is None:
            # each thread's log densities for a block, padded (threads writing
            # neighbouring rows share cache lines); made once
            self._vp_scratch = np.empty((self.wk.most, B * K + 16))
        cdef double* pp = _data_or_null(post)
        cdef double[::1] tv = self._terms
        cdef double[:, ::1] av = self._vp_scratch
        cdef const int* y = self.wk.P.y
        cdef const double* Tl = _data_or_null(self.logS_lin)
        cdef const double* Zp = _data_or_null(self.Zt)
        cdef const double* lo = _data_or_null(self.lo)
        cdef const double* dl = _data_or_null(self.delta)
        cdef const int* cell_of = &self.cells[0, 0]
        cdef double total = 0.0
        with nogil:
            for b in prange(nblk, num_threads=nthr, schedule='dynamic'):
                tid = _thread_id()
                i0 = b * B
                m = min(B, n - i0)
                _block_interp(Tl, self.TK, K, cell_of, Zp, lo, dl, n, ndim, i0, m, &av[tid, 0])
                for j in range(m):
                    tv[i0 + j] = _row_posterior(&av[tid, j * K], &logprior[0], K, y[i0 + j],
                                                &pp[(i0 + j) * K] if posteriors else NULL)
            for i in range(n):
                total = total + tv[i]
        return total / n, post

    def gradient(self, const double[:, ::1] post):
        """n * dl/dZ [ndim, n] of the interpolated value: its exact derivative.

        With s_i = (z_i - lo) / delta a point's place on the grid (cell g_i,
        fraction u_i), L_k[g] the log density at grid point g and
        a_ik = 1{y_i = k} - P_ik, n dl/ds_i has two parts:
          point i as an evaluation point: sum_k a_ik (L_k[g_i + 1] - L_k[g_i]);
          as a sample point (its class weight w binned linearly):
            w (Phi_y[g_i + 1] - Phi_y[g_i]), Phi_k = the kernel sums on the grid
            of c_k[g] = A_k[g] / f_k[g], A_k the a_ik binned as the weights are.
        The grid moves with the extremes of z (lo, delta); with s fixed, delta
        also scales the kernel's argument: n dl/ddelta gets
        (1/delta) sum_k sum_j Wb_k[j] Psi_k[j], Psi_k the grid sums of c_k with
        the kernel psi(u) = u K'(u), Wb_k the binned class weights.
        """
        dZ = self._gradient_out(post, self.has_gradient)
        cdef Py_ssize_t n = self.n, ndim = self.ndim, nbin = self.nbin, TK = self.TK, nblk = self.nblk
        cdef const Classes* P = &self.wk.P
        cdef int K = P.K, k, tid, nthr = _region_threads(self.wk.nthr, n * ndim * P.K), inner = nthr if ndim == 1 else 1
        cdef Py_ssize_t B = (n + nblk - 1) // nblk, it, t, i, i0, i1, g, j, b, imin, imax
        cdef double[:, ::1] dv = dZ
        cdef double* Phi = _data_or_null(self._W)
        cdef double* Psi = _data_or_null(self._Psi)
        cdef double* PA = _data_or_null(self._part_simple)
        cdef double* Wb = _data_or_null(self._part_lin)  # block 0 of each column: its binned weights
        cdef double* edge = _data_or_null(self._edge)
        cdef double* pa
        cdef const double* row
        cdef const int* cell_of = &self.cells[0, 0]
        cdef const double* Zp = _data_or_null(self.Zt)
        cdef const double* Tl = _data_or_null(self.logS_lin)
        cdef double[::1] lo = self.lo, delta = self.delta
        cdef Column* cols = self.wk.cols
        cdef Column* col
        cdef Support sp
        cdef const double* pp = &post[0, 0]
        cdef double u, a, e, d, sv, kern, d_lo, d_delta
        cdef double* ed
        kdelta = np.zeros(ndim)
        cdef double[::1] kd = kdelta
        with nogil:
            # evaluation-point terms, and the a_ik binned onto the grid by block
            for it in prange(ndim * nblk, num_threads=nthr, schedule='dynamic'):
                t = it // nblk
                i0 = (it % nblk) * B
                i1 = min(n, i0 + B)
                pa = &PA[it * TK]
                memset(pa, 0, TK * sizeof(double))
                for i in range(i0, i1):
                    g = cell_of[t * n + i]
                    u = _cell_frac(Zp[t * n + i], lo[t], delta[t], g)
                    row = &Tl[t * TK + g * K]
                    e = 0.0
                    for k in range(K):
                        a = (1.0 if P.y[i] == k else 0.0) - pp[i * K + k]
                        # a class whose density underflowed at a grid point (-inf there:
                        # thousands of bandwidths from all its points) has posterior 0
                        # here and adds nothing to the value's slope, not 0 * inf
                        if a != 0.0:
                            e = e + a * (row[K + k] - row[k])
                        _bin_linear(&pa[k], g, K, u, a)
                    dv[t, i] = e
            # per column: c = A / f on the grid, its sums with K and with psi
            for t in prange(ndim, num_threads=min(ndim, nthr), schedule='dynamic'):
                tid = _thread_id()
                col = &cols[tid]
                pa = &PA[t * nblk * TK]
                sp = self._summing_column(t, tid, col, lo[t], delta[t], pa)
                for j in range(TK):
                    # |c| from logs: f may be far below A's scale
                    a = pa[j]
                    pa[j] = 0.0 if a == 0.0 else (exp(log(a) - Tl[t * TK + j]) if a > 0.0
                                                  else -exp(log(-a) - Tl[t * TK + j]))
                _grid_sums(P, &P.ker, col, pa, &Phi[t * TK], NULL, 0, &sp, True, True, NULL, False, inner)
                # psi has one order more: its decay rows differ, unless T holds the exps alone
                _grid_sums(P, &self.psi, col, pa, &Psi[t * TK], NULL, 0, &sp, True, True, NULL, not P.shared, inner)
                # the binned weights lie on the support: the rest of the grid adds nothing
                kern = 0.0
                for j in range(sp.m):
                    for k in range(K):
                        kern = kern + Wb[t * nblk * TK + sp.weighted[j] * K + k] * Psi[t * TK + sp.weighted[j] * K + k]
                kd[t] = kern / delta[t]
            # sample-point terms, dz = (dl/ds) / delta, and each block's share of the grid's motion
            for it in prange(ndim * nblk, num_threads=nthr, schedule='dynamic'):
                t = it // nblk
                i0 = (it % nblk) * B
                i1 = min(n, i0 + B)
                ed = &edge[it * 4]
                ed[0] = 0.0
                ed[1] = 0.0
                imin = i0
                imax = i0
                for i in range(i0, i1):
                    k = P.y[i]
                    g = cell_of[t * n + i]
                    d = dv[t, i] + P.wcls[k] * (Phi[t * TK + (g + 1) * K + k] - Phi[t * TK + g * K + k])
                    sv = (Zp[t * n + i] - lo[t]) / delta[t]
                    dv[t, i] = d / delta[t]
                    ed[0] = ed[0] - d / delta[t]
                    ed[1] = ed[1] - sv * d / delta[t]
                    if Zp[t * n + i] < Zp[t * n + imin]:
                        imin = i
                    if Zp[t * n + i] > Zp[t * n + imax]:
                        imax = i
                ed[2] = <double> imin
                ed[3] = <double> imax
            # the grid's motion, its blocks' shares added in order
            for t in range(ndim):
                d_lo = 0.0
                d_delta = kd[t]
                imin = <Py_ssize_t> edge[t * nblk * 4 + 2]
                imax = <Py_ssize_t> edge[t * nblk * 4 + 3]
                for b in range(nblk):
                    ed = &edge[(t * nblk + b) * 4]
                    d_lo = d_lo + ed[0]
                    d_delta = d_delta + ed[1]
                    if Zp[t * n + <Py_ssize_t> ed[2]] < Zp[t * n + imin]:
                        imin = <Py_ssize_t> ed[2]
                    if Zp[t * n + <Py_ssize_t> ed[3]] > Zp[t * n + imax]:
                        imax = <Py_ssize_t> ed[3]
                _grid_motion(&dv[t, 0], imin, imax, d_lo, d_delta, nbin)
        return dZ


cdef class _GridEvaluator(CoreEvaluator):
    """An evaluator that reads densities on each column's grid: the tables
    of the first number of columns it meets (a fit's), and one set for the
    latest other number (the greedy order's subsets), each built once and
    updated at every evaluation."""
    cdef readonly Py_ssize_t nbin
    cdef object beta
    cdef double eps
    cdef dict _tables

    def __init__(self, y0, h, PI, int threads, Py_ssize_t nbin, const double[::1] beta, double eps):
        CoreEvaluator.__init__(self, y0, h, PI, threads)
        if nbin < 2 or nbin > 2**31 - 1:
            raise ValueError("need 2 <= nbin < 2**31")
        self.nbin, self.eps = nbin, eps
        self.beta = np.array(beta)
        self._tables = {}

    cdef GridTables _tables_for(self, Py_ssize_t ndim, bint gradient):
        raise NotImplementedError

    cdef GridTables _updated(self, object Zt, bint gradient):
        cdef Py_ssize_t ndim = np.shape(Zt)[0]
        cdef GridTables tables = self._tables.get(ndim)
        if tables is None or (gradient and not tables.has_gradient):
            if tables is None and len(self._tables) > 1:
                # the fit's own tables (the first made) and one set for another
                # ndim (the greedy order's subsets, one size at a time): tables
                # are n-sized, and one set per subset size would hold them all
                first = next(iter(self._tables))
                self._tables = {first: self._tables[first]}
            tables = self._tables_for(ndim, gradient)
            self._tables[ndim] = tables
        # made for most_threads; run on the count of now
        tables.wk.nthr = self.threads
        tables.update(Zt)
        return tables

    cpdef tuple evaluate(self, object Zt, bint gradient):
        cdef GridTables tables = self._updated(Zt, gradient)
        value, post = tables.value_and_posteriors(self.PI, gradient)
        if not gradient:
            return float(value), None
        return float(value), tables.gradient(post)


cdef class RGrid(_GridEvaluator):
    """R's binned objective (f_NB_cpp's value, df_NB_cpp's gradient, which
    is not its derivative), on ``nbin`` grid points per column."""

    cdef GridTables _tables_for(self, Py_ssize_t ndim, bint gradient):
        return RGridTables(ndim, self.y0, self.K, self.h, self.nbin, self.eps, self.beta, gradient,
                           self.most_threads)

    cpdef list subset_values(self, object Zt, list chosen, list candidates):
        """Read off the columns' tables (each column's grid densities do not
        depend on the others): a pass over the points per step."""
        cdef GridTables tables = self._tables.get(np.shape(Zt)[0])
        if tables is None or tables.Zt is None or not np.array_equal(tables.Zt, Zt):
            tables = self._updated(Zt, False)
        tables.wk.nthr = self.threads
        return list(tables.subset_values(chosen, candidates, self.PI))


cdef class InterpGrid(_GridEvaluator):
    """The journal's binned objective: each column's class log densities on
    ``nbin`` grid points interpolated linearly at the points, and the exact
    derivative of that value."""

    cdef GridTables _tables_for(self, Py_ssize_t ndim, bint gradient):
        return InterpGridTables(ndim, self.y0, self.K, self.h, self.nbin, self.eps, self.beta, gradient,
                                self.most_threads)
