# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""The grids' shared support for the binned objectives on each column's
grid, R's (r_grid.pyx), the paper's (linear.pyx) and the journal's
(interp_grid.pyx): each column's grid, its points' cells and the blocks'
binned class weights, the column's support, kernel sums on it, and the
gradient's share from the grid's motion with z's extremes (GridTables, the
base of each kind's tables, and _GridEvaluator, of each kind's evaluator).
Each column comes down to tables on its grid points, which every point
reads at or between its grid points. The passes over the points then read all columns' tables for a
block of points at a time: one sweep over the data instead of one read and
write of an n x K array per column, which would make these passes
memory-bound (more threads would then add little).
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport exp, log, INFINITY
from libc.string cimport memcpy, memset

cdef extern from *:
    int __builtin_ctzll(unsigned long long) nogil

from pyopnb._core.common cimport (MAX_BLOCKS, _MAX_ORDER, _block_partials, _data_or_null, _reduce_blocks,
                                  _region_threads, _row_block_len, _row_blocks, _thread_id)
from pyopnb._ksum cimport Anchors, EvalRows, Kernel, RunningSums, _make_kernel, _sums_on_anchors
from pyopnb._core.geometry cimport (_bin_linear, _grid_cell_of, _grid_delta, _grid_motion, _min_max,
                                    pyopnb_grid_coords)
from pyopnb._core.passes cimport Column, Problem, ColumnScratch, _grid_at, _sample_weight, _set_grid, _terms_mean
from pyopnb._core.linalg import c_log_array
from pyopnb._core.evaluator cimport CoreEvaluator
from pyopnb._core.decay cimport pyopnb_decay, pyopnb_exps
from pyopnb._core.products cimport (pyopnb_block_products, pyopnb_copy_row, pyopnb_log_products, pyopnb_running,
                                    pyopnb_tables_at_cells)

cnp.import_array()


# a column's sums run over its support alone unless the support holds nearly
# the whole grid (see _support_from_marks): more than _DENSE tenths of its points
DEF _DENSE = 9


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


cdef void _block_products(int level, const Py_ssize_t[:, ::1] ptrs, int ncol, int K, Py_ssize_t i0, Py_ssize_t m,
                          pyopnb_running first, pyopnb_running second) noexcept nogil:
    """first [m, K] (and second, where its pr is not NULL: the second
    tables, T2): for the points i0..i0+m-1, the product over the columns (in
    order) of their density tables at the points' cells (ptrs:
    _column_pointers'), kept as pyopnb_products_n keeps them, as passes.pyx's
    class_products; level: the vector path."""
    cdef pyopnb_tables_at_cells T = pyopnb_tables_at_cells(base=<const double* const*> &ptrs[0, 0],
                                                           idx=<const int* const*> &ptrs[2, 0], nrow=ncol, K=K)
    cdef pyopnb_running out[2]
    out[0] = first
    out[1] = second
    pyopnb_block_products(level, &T, i0, m, 2 if second.pr != NULL else 1, <int> ptrs.shape[1], out)



cdef void _mark_cells(const int* cells, Py_ssize_t n, unsigned char* mask) noexcept nogil:
    """Mark the points' cells in mask (a byte a grid point): 1 where a point's
    cell starts, 2 at the next grid point (linear binning's other anchor)."""
    cdef Py_ssize_t i
    for i in range(n):
        mask[cells[i]] |= 1
        mask[cells[i] + 1] |= 2


cdef void _support_from_marks(unsigned char* mask, Py_ssize_t nbin, Support* sp) noexcept nogil:
    """A column's support (see Support) from its marked grid points
    (_mark_cells'; nbin rounded up to 8 bytes), leaving mask zero. Read 8
    bytes at a time: most of a fine grid is empty."""
    cdef Py_ssize_t g, w, nw = (nbin + 7) // 8, m = 0, mc = 0
    cdef unsigned long long word
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


cdef void _grid_sums(const Problem* P, Column* col, Support* sp, const GridSum* g, int nthr) noexcept nogil:
    """The kernel sums ``g`` asks for (see GridSum) at the column's grid
    points, each class in its bandwidth, at the support's points only (the
    other rows are left as they were). A sparse support's sums run over its
    points alone, else over the whole grid."""
    cdef Py_ssize_t j, m = sp.m if g.anchors_all else sp.mc, me = sp.m if g.eval_all else sp.mc
    cdef const Py_ssize_t* anc = sp.weighted if g.anchors_all else sp.occupied
    cdef const Py_ssize_t* ev = sp.weighted if g.eval_all else sp.occupied
    cdef const Py_ssize_t* lo
    cdef int K = P.K
    cdef bint have_decays = g.have_decays
    cdef Anchors A
    cdef EvalRows rows
    # the column's tables, with the decays in g.decays where asked (the column's own stay as they are)
    cdef RunningSums tb = col.tb
    if g.decays != NULL:
        tb.decay = g.decays
    # (the evaluation points are grid points, on their anchors: no positions to give)
    if sp.sparse:
        for j in range(m):
            sp.ax[j] = _grid_at(col, anc[j])
            pyopnb_copy_row(&g.weights[anc[j] * K], K, &sp.W[j * K])
        if not have_decays:
            _cell_gap_decays(P, g.ker, col.delta, anc, m, sp, tb.decay)
            have_decays = True
        # an evaluation point's anchor: itself, found by its place among the anchors
        lo = sp.occupied_pos if (g.anchors_all and not g.eval_all) else col.ident
        A = Anchors(x=sp.ax, G=m, r=K, h=P.h, shared=P.shared, ker=g.ker)
        rows = EvalRows(e=NULL, lo=lo, m=me, outrow=ev, S=g.S, D=g.D, logS=g.logs)
        _sums_on_anchors(&A, sp.W, &tb, &rows, have_decays, nthr)
    else:
        A = Anchors(x=col.anchors, G=P.nbin, r=K, h=P.h, shared=P.shared, ker=g.ker)
        rows = EvalRows(e=NULL, lo=ev, m=me, outrow=ev, S=g.S, D=g.D, logS=g.logs)
        _sums_on_anchors(&A, g.weights, &tb, &rows, have_decays, nthr)


cdef void _cell_gap_decays(const Problem* P, const Kernel* ker, double delta, const Py_ssize_t* anc,
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


cdef void _axes(const double* zmin, const double* zmax, Py_ssize_t ndim, Py_ssize_t nblk, double eps, Py_ssize_t nbin,
                double* lo, double* delta) noexcept nogil:
    """Each column's grid (lo, delta [ndim]) from its blocks' extremes
    (zmin, zmax [ndim, nblk]), taken in block order."""
    cdef Py_ssize_t t, b
    cdef double mn, mx
    for t in range(ndim):
        mn = zmin[t * nblk]
        mx = zmax[t * nblk]
        for b in range(1, nblk):
            mn = min(mn, zmin[t * nblk + b])
            mx = max(mx, zmax[t * nblk + b])
        delta[t] = _grid_delta(mn, mx, eps, nbin, &lo[t])


def grid_axes(zmin, zmax, double eps, Py_ssize_t nbin):
    """(lo, delta), each column's grid, from every block's extremes [ndim,
    nblk] (the parts' part_extremes, their blocks in order), as update
    finds them."""
    cdef const double[:, ::1] mn = np.ascontiguousarray(zmin, dtype=np.float64)
    cdef const double[:, ::1] mx = np.ascontiguousarray(zmax, dtype=np.float64)
    if mn.shape[0] != mx.shape[0] or mn.shape[1] != mx.shape[1] or mn.shape[1] < 1:
        raise ValueError("zmin and zmax must be [ndim, nblk] alike, with a block at least")
    if nbin < 2:
        raise ValueError("need nbin >= 2")
    lo = np.empty(mn.shape[0])
    delta = np.empty(mn.shape[0])
    cdef double[::1] lv = lo, dv = delta
    _axes(&mn[0, 0], &mx[0, 0], mn.shape[0], mn.shape[1], eps, nbin, &lv[0], &dv[0])
    return lo, delta


cdef GridMotion _merge_edges(const double* edge, Py_ssize_t nblk, Py_ssize_t stride, double kdelta) noexcept nogil:
    """A column's blocks' edges (each ``stride`` apart, the first four
    fields of _EDGE), in block order: their shares of the motion added onto
    0 and onto kdelta (the share that is no block's), and the first block
    at each extreme of z (strict comparisons, as a scan of the points would
    find them)."""
    cdef GridMotion m = GridMotion(d_lo=0.0, d_delta=kdelta, bmin=0, bmax=0)
    cdef Py_ssize_t b
    cdef const double* ed
    for b in range(nblk):
        ed = &edge[b * stride]
        m.d_lo = m.d_lo + ed[0]
        m.d_delta = m.d_delta + ed[1]
        if ed[2] < edge[m.bmin * stride + 2]:
            m.bmin = b
        if ed[3] > edge[m.bmax * stride + 3]:
            m.bmax = b
    return m


# points whose fractions _bin_points divides at once
DEF _FRAC_CHUNK = 256


cdef struct GridAxis:
    # a column's grid: nbin points from lo, delta apart
    double lo
    double delta
    Py_ssize_t nbin


cdef void _bin_points(const Problem* P, const double* z, GridAxis grid, Py_ssize_t i0, Py_ssize_t i1, int* cells,
                      double* pl, double* ps) noexcept nogil:
    """Points i0..i1-1 of a column z binned into a block's grids [nbin, K]
    (zeroed first): linear binning into pl, whole weights into ps (NULL:
    none), each class's weight 1/(n_k h_k); each point's cell into cells.
    The cell and the fraction come from one division, (z - lo) / delta
    (_cell_frac's value), made for a chunk of points at once
    (pyopnb_grid_coords: vector divisions, with the same bits)."""
    cdef double fr[_FRAC_CHUNK]
    cdef Py_ssize_t c0, c1, i, g, nbin = grid.nbin
    cdef int k, K = P.K
    cdef double frac, wt, lo = grid.lo, delta = grid.delta
    memset(pl, 0, nbin * K * sizeof(double))
    if ps != NULL:
        memset(ps, 0, nbin * K * sizeof(double))
    for c0 in range(i0, i1, _FRAC_CHUNK):
        c1 = min(i1, c0 + _FRAC_CHUNK)
        pyopnb_grid_coords(P.simd, &z[c0], lo, delta, c1 - c0, fr)
        for i in range(c0, c1):
            frac = fr[i - c0]
            g = _grid_cell_of(frac, nbin)
            frac = frac - g
            cells[i] = <int> g
            k = P.y[i]
            wt = _sample_weight(P, i)
            _bin_linear(&pl[k], g, K, frac, wt)
            if ps != NULL:
                ps[g * K + k] += wt


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
    (blocks fixed by n, _core/blocks.h, added in order); the grid-sized kernel
    sums go a column to a thread.
    """
    def __cinit__(self, Py_ssize_t ndim, int[::1] y, int K, double[::1] h, Py_ssize_t nbin,
                  double eps, const double[::1] beta, bint gradient, int num_threads, w=None, part=None):
        if type(self) is GridTables:
            raise TypeError("GridTables is the shared base: make RGridTables or InterpGridTables")
        if ndim < 1 or nbin < 2 or nbin > 2**31 - 1:
            raise ValueError("need ndim >= 1 and 2 <= nbin < 2**31")
        totals = None
        if part is None:
            if y.shape[0] < 1:
                raise ValueError("need at least one point")
            self.nblk = _row_blocks(y.shape[0])
            self.B = _row_block_len(y.shape[0])
        else:
            # (rows per block, blocks, (W_k, W)): a part of a larger problem's points, whole blocks of
            # it, or its grid side (no points, its blocks all)
            block_len, nblk, totals = part
            if block_len < 1 or nblk < 1 or nblk > MAX_BLOCKS:
                raise ValueError(f"part needs rows per block >= 1 and 1..{MAX_BLOCKS} blocks")
            if y.shape[0] and (y.shape[0] + block_len - 1) // block_len != nblk:
                raise ValueError(f"a part of {y.shape[0]} points in blocks of {block_len} holds "
                                 f"{(y.shape[0] + block_len - 1) // block_len} blocks, not {nblk}")
            self.nblk, self.B = nblk, block_len
        self.wk = ColumnScratch(y, K, h, nbin, eps, beta, num_threads, False, w, totals)
        self.wk._ensure(<int> min(ndim, self.wk.P.n_threads))
        self.ndim, self.n, self.nbin, self.TK = ndim, y.shape[0], nbin, nbin * K
        self._run_on(self.wk.P.n_threads)
        self.has_gradient = gradient
        self.Zt = None
        self.lo = np.empty(ndim)
        self.delta = np.empty(ndim)
        # rows outside a column's support keep what they hold: zero, not garbage, at first
        # (R's logs: made when subset_values first asks, see _make_logs)
        self.logS_lin = np.zeros((ndim, self.TK))
        # each (column, block)'s grid weights, and its extremes
        self._part_lin = np.empty((ndim, self.nblk, self.TK))
        self._part_simple = None  # R's tables with a gradient make it (RGridTables)
        self._zmin = np.empty((ndim, self.nblk))
        self._zmax = np.empty((ndim, self.nblk))
        # the passes' outputs, reused from one Z to the next (a fit's evaluations)
        self._post = None
        self._terms = np.empty(self.n)
        self._cells = np.empty((ndim, self.n), dtype=np.intc)
        self.cells = self._cells
        self._dZ = None
        # each column's support (see _support_from_marks), and each thread's scratch for it
        self._weighted = np.empty((ndim, nbin), dtype=np.intp)
        self._occupied = np.empty((ndim, nbin), dtype=np.intp)
        self._occupied_pos = np.empty((ndim, nbin), dtype=np.intp)
        self._nweighted = np.zeros(ndim, dtype=np.intp)
        self._noccupied = np.zeros(ndim, dtype=np.intp)
        self._sparse = np.zeros(ndim, dtype=np.uint8)
        self._mask = np.zeros((self.wk.P.n_threads, 8 * ((nbin + 7) // 8)), dtype=np.uint8)
        self._support_positions = np.empty((self.wk.P.n_threads, nbin))
        self._support_weights = np.empty((self.wk.P.n_threads, nbin * K))
        # each column's decays over its cells (R's gradient, sparse supports), a row a gap as _recurse's T
        self.cell_decay_len = nbin * (self.wk.P.ker.a + 1 if self.wk.P.shared else K)
        # each thread's decays of gaps of k cells (sparse supports), for the widest kernel (psi's)
        self.gap_row_len = self.wk.P.ker.a + 2 if self.wk.P.shared else K
        self._gap_rows = np.empty((self.wk.P.n_threads, nbin * self.gap_row_len))
        self._stamp = np.zeros((self.wk.P.n_threads, nbin), dtype=np.intc)
        self._cur = np.zeros(self.wk.P.n_threads, dtype=np.intc)
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
        self.lop = <double*> cnp.PyArray_DATA(self.lo)
        self.deltap = <double*> cnp.PyArray_DATA(self.delta)
        self.zminp = <double*> cnp.PyArray_DATA(self._zmin)
        self.zmaxp = <double*> cnp.PyArray_DATA(self._zmax)
        self.cellsp = <int*> cnp.PyArray_DATA(self._cells)
        self.logS_linp = <double*> cnp.PyArray_DATA(self.logS_lin)
        self.part_simplep = NULL
        # a moving grid's edges (the kinds whose gradient reads them)
        self._edge = np.empty((ndim, self.nblk, _EDGE)) if gradient else None
        self._kdelta = np.zeros(ndim) if gradient else None
        self.edgep = _data_or_null(self._edge)
        self.kdeltap = _data_or_null(self._kdelta)

    cdef void _run_on(self, int threads):
        """The threads of the next passes (at most those the scratch was
        made for), and the team of a pass over every column's points."""
        self.wk.P.n_threads = threads
        self.nthr = _region_threads(threads, self.n * self.ndim * self.wk.P.K)

    cdef void _column_tables(self, Py_ssize_t t, Column* col, Support* sp, int inner) noexcept nogil:
        """Column t's tables from its blocks' binned weights, summed (col
        set on its grid, sp its support; inner: the threads within the
        column): each kind's own."""
        pass

    cdef void _point_terms(self, const double* post) noexcept nogil:
        """The gradient's first pass over the points: each point's own terms
        (into _dZ) and each (column, block)'s gradient weights
        (_gradient_weights): each kind's own."""
        pass

    cdef object _gradient_weights(self):
        """The array of each (column, block)'s gradient weights that
        _point_terms fills [ndim, nblk, L]: each kind's own."""
        raise NotImplementedError

    def part_gradient(self):
        """A part's gradient, its first pass: the points' own terms (kept),
        and each (column, block)'s gradient weights [ndim, nblk, L] (each
        kind's), for the grid side's merge_gradient."""
        if self._post is None:
            raise ValueError("no posteriors yet: call part_value(PI, True) first")
        self._gradient_out(self._post, self.has_gradient)
        cdef const double[:, ::1] post = self._post
        with nogil:
            self._point_terms(&post[0, 0])
        return self._gradient_weights().copy()

    def update(self, double[:, ::1] Zt):
        """Build the tables of Z' = Zt [ndim, n]. Arrays returned by earlier
        passes are overwritten by the next passes."""
        self._take(Zt)
        with nogil:
            self._extremes()
            _axes(self.zminp, self.zmaxp, self.ndim, self.nblk, self.wk.P.eps, self.nbin, self.lop, self.deltap)
            self._bin()
            self._make_tables(NULL)
        self._logs_made = False
        return self

    cdef void _take(self, object Zt) except *:
        """Zt [ndim, n] as the next passes' Z'."""
        cdef const double[:, ::1] zv = Zt
        if zv.shape[0] != self.ndim or zv.shape[1] != self.n:
            raise ValueError(f"Zt must be ({self.ndim}, {self.n}), got ({zv.shape[0]}, {zv.shape[1]})")
        self.Zt = np.asarray(Zt)
        self.Ztp = &zv[0, 0] if self.n else NULL

    cdef void _extremes(self) noexcept nogil:
        """Each (column, block)'s extremes of Z', into _zmin and _zmax [ndim, nblk]."""
        cdef Py_ssize_t n = self.n, nblk = self.nblk, B = self.B, it, t, i0, i1
        cdef double* zmn = self.zminp
        cdef double* zmx = self.zmaxp
        for it in prange(self.ndim * nblk, num_threads=self.nthr, schedule='dynamic'):
            t = it // nblk
            i0 = (it % nblk) * B
            i1 = min(n, i0 + B)
            _min_max(&self.Ztp[t * n + i0], i1 - i0, &zmn[it], &zmx[it])

    cdef void _bin(self) noexcept nogil:
        """The points' cells on the grids lo, delta, and each (column,
        block)'s grid weights: linear binning (the value) and, where the
        kind asks, whole (the gradient), class weights 1/(n_k h_k)."""
        cdef Py_ssize_t n = self.n, nblk = self.nblk, B = self.B, TK = self.TK, it, t, i0, i1
        cdef double* PL = self.part_linp
        cdef double* PS = self.part_simplep
        cdef bint simple = self.bins_simple
        cdef const double* lov = self.lop
        cdef const double* dv = self.deltap
        cdef int* cells = self.cellsp
        for it in prange(self.ndim * nblk, num_threads=self.nthr, schedule='dynamic'):
            t = it // nblk
            i0 = (it % nblk) * B
            i1 = min(n, i0 + B)
            _bin_points(&self.wk.P, &self.Ztp[t * n], GridAxis(lo=lov[t], delta=dv[t], nbin=self.nbin), i0, i1,
                        &cells[t * n], &PL[it * TK], &PS[it * TK] if simple else NULL)

    cdef void _make_tables(self, const unsigned char* marks) noexcept nogil:
        """Each column's support (from the points' cells, and the grid points
        marked in marks [ndim, nbin] where not NULL: the parts' of a larger
        problem), its grid, its blocks' weights added in order, and its
        tables (the kind's _column_tables)."""
        cdef Py_ssize_t ndim = self.ndim, t, nmask = 8 * ((self.nbin + 7) // 8)
        cdef int tid, nthr = self.nthr, inner = nthr if ndim == 1 else 1
        cdef Column* col
        cdef Support sp
        for t in prange(ndim, num_threads=min(ndim, nthr), schedule='dynamic'):
            tid = _thread_id()
            col = &self.wk.cols[tid]
            if marks != NULL:
                memcpy(&self.maskp[tid * nmask], &marks[t * self.nbin], self.nbin)
            sp = self._column_support(t, tid, True)
            _set_grid(col, self.lop[t], self.deltap[t], self.nbin, not sp.sparse)
            _reduce_blocks(&self.part_linp[t * self.nblk * self.TK], self.nblk, self.TK)
            self._column_tables(t, col, &sp, inner)
        self.supports_made = True

    def value_and_posteriors(self, const double[::1] PI, bint posteriors):
        """(l, posteriors [n, K] or None) with priors PI: the points' terms
        (_terms_and_posteriors, each kind's) averaged by the fixed blocks of
        rows."""
        post = self._terms_and_posteriors(PI, posteriors)
        cdef const double[::1] tv = self._terms
        return _terms_mean(&tv[0], &self.wk.P), post

    def _terms_and_posteriors(self, const double[::1] PI, bint posteriors):
        """The points' terms (into _terms) and their posteriors (or None)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement _terms_and_posteriors")

    # -----------------------------------------------------------------
    # a part of a larger problem's points (made with ``part``), and the
    # grid side that merges the parts: the passes of update, one at a time
    # -----------------------------------------------------------------

    def part_value(self, const double[::1] PI, bint posteriors):
        """A part's value_and_posteriors: its blocks' sums of their points'
        terms (their weights times their log posteriors, [nblk]; the whole
        problem's l is their sum in block order over its total weight), and
        the posteriors, kept for part_gradient (None without them)."""
        post = self._terms_and_posteriors(PI, posteriors)
        sums = np.zeros(self.nblk)
        cdef double[::1] sv = sums
        cdef const double[::1] tv = self._terms
        if self.n:
            _block_partials(&tv[0], self.wk.P.w, self.n, self.B, &sv[0])
        return sums, post

    def part_extremes(self, double[:, ::1] Zt):
        """This part's Z' = Zt [ndim, n]: each (column, block)'s extremes,
        (zmin, zmax) [ndim, nblk]."""
        self._take(Zt)
        with nogil:
            self._extremes()
        return self._zmin.copy(), self._zmax.copy()

    def part_bin(self, const double[::1] lo, const double[::1] delta):
        """Bin this part's points on the whole problem's grids (lo, delta,
        from every part's extremes: grid_axes): each (column, block)'s
        linearly binned weights [ndim, nblk, TK], whole weights (the
        gradient's, or None) and the grid points its cells mark [ndim,
        nbin] (_mark_cells')."""
        self._check_built()
        self._set_axes(lo, delta)
        marks = np.zeros((self.ndim, 8 * ((self.nbin + 7) // 8)), dtype=np.uint8)
        cdef unsigned char[:, ::1] mv = marks
        cdef Py_ssize_t t
        self.supports_made = False
        with nogil:
            self._bin()
            for t in range(self.ndim):
                _mark_cells(&self.cellsp[t * self.n], self.n, &mv[t, 0])
        return (self._part_lin.copy(), None if self._part_simple is None else self._part_simple.copy(),
                np.ascontiguousarray(marks[:, :self.nbin]))

    def merge_parts(self, const double[::1] lo, const double[::1] delta, part_lin, part_simple, marks):
        """The grid side (made with ``part`` and no points): the tables of
        the whole problem from its parts' part_bin, their blocks in order
        (part_lin [ndim, nblk, TK], part_simple alike or None, marks [ndim,
        nbin] OR-ed over the parts)."""
        if self.n != 0:
            raise ValueError("merge_parts is the grid side's: make it with no points")
        self._set_axes(lo, delta)
        self._copy_parts(part_lin, self._part_lin, "part_lin")
        if self.bins_simple:
            self._copy_parts(part_simple, self._part_simple, "part_simple")
        mk = np.ascontiguousarray(marks, dtype=np.uint8)
        if mk.shape != (self.ndim, self.nbin):
            raise ValueError(f"marks must be ({self.ndim}, {self.nbin}), got {mk.shape}")
        cdef const unsigned char[:, ::1] mv = mk
        self.Zt = np.empty((self.ndim, 0))
        with nogil:
            self._make_tables(&mv[0, 0])
        self._logs_made = False
        return self

    cdef void _set_axes(self, const double[::1] lo, const double[::1] delta) except *:
        if lo.shape[0] != self.ndim or delta.shape[0] != self.ndim:
            raise ValueError(f"lo and delta must have ndim = {self.ndim} entries")
        self.lo[:] = lo
        self.delta[:] = delta

    def _copy_parts(self, src, dest, name):
        src = np.asarray(src, dtype=np.float64)
        if dest is None or src.shape != dest.shape:
            raise ValueError(f"{name} must be {None if dest is None else dest.shape}, got {src.shape}")
        dest[...] = src

    cdef Support _column_support(self, Py_ssize_t t, int tid, bint build) noexcept nogil:
        """Column t's support with thread tid's scratch: found from the
        cells (build, in update, added to the marks already in the
        thread's mask) or as update found it."""
        cdef Support sp
        sp.weighted = &self.weightedp[t * self.nbin]
        sp.occupied = &self.occupiedp[t * self.nbin]
        sp.occupied_pos = &self.occupied_posp[t * self.nbin]
        sp.ax = &self.support_positionsp[tid * self.nbin]
        sp.W = &self.support_weightsp[tid * self.nbin * self.wk.P.K]
        sp.E = &self.gap_rowsp[tid * self.nbin * self.gap_row_len]
        sp.stamp = &self.stampp[tid * self.nbin]
        sp.cur = &self.curp[tid]
        cdef unsigned char* mask = &self.maskp[tid * 8 * ((self.nbin + 7) // 8)]
        if build:
            _mark_cells(&self.cellsp[t * self.n], self.n, mask)
            _support_from_marks(mask, self.nbin, &sp)
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

    cdef void _move_grids(self) noexcept nogil:
        """One machine's grid motion: each column's edges added in block
        order, their share added at the points at z's extremes (the
        gradient's last pass, after the edges are made)."""
        cdef Py_ssize_t t
        cdef GridMotion m
        cdef const double* ed
        for t in range(self.ndim):
            ed = &self.edgep[t * self.nblk * _EDGE]
            m = _merge_edges(ed, self.nblk, _EDGE, self.kdeltap[t])
            _grid_motion(&self.dZp[t * self.n + <Py_ssize_t> ed[m.bmin * _EDGE + 4]],
                         &self.dZp[t * self.n + <Py_ssize_t> ed[m.bmax * _EDGE + 5]], m.d_lo, m.d_delta, self.nbin)

    def _part_edges(self):
        """A part's edges, as merge_motion takes them: [ndim, nblk, 4]."""
        return np.ascontiguousarray(self._edge[:, :, :4])

    def merge_motion(self, edges):
        """The grid side's: each column's grid motion from the parts' edges
        [ndim, nblk, 4] (their part_sample's, their blocks in order), for
        part_motion: [ndim, 4] of n dl/dlo, n dl/ddelta and the blocks
        holding z's minimum and maximum."""
        self._check_grid_side("merge_motion")
        if self._edge is None:
            raise ValueError(f"{type(self).__name__}'s grids do not move with the points")
        ed = np.ascontiguousarray(edges, dtype=np.float64)
        if ed.ndim != 3 or ed.shape[0] != self.ndim or ed.shape[1] < 1 or ed.shape[2] != 4:
            raise ValueError(f"edges must be ({self.ndim}, nblk, 4), got {ed.shape}")
        cdef const double[:, :, ::1] ev = ed
        cdef const double[::1] kd = self._kdelta
        out = np.empty((self.ndim, 4))
        cdef double[:, ::1] ov = out
        cdef Py_ssize_t t
        cdef GridMotion m
        for t in range(self.ndim):
            m = _merge_edges(&ev[t, 0, 0], ed.shape[1], 4, kd[t])
            ov[t, 0], ov[t, 1], ov[t, 2], ov[t, 3] = m.d_lo, m.d_delta, <double> m.bmin, <double> m.bmax
        return out

    def part_motion(self, motion, Py_ssize_t first_block):
        """A part's n * dl/dZ [ndim, n] (after part_sample): the grid's
        motion (merge_motion's) added at the part's points at z's extremes,
        where they lie in its blocks (the first of which is the problem's
        block ``first_block``)."""
        if self._dZ is None or self._edge is None:
            raise ValueError("call part_gradient first")
        mo = np.ascontiguousarray(motion, dtype=np.float64)
        if mo.shape != (self.ndim, 4):
            raise ValueError(f"motion must be ({self.ndim}, 4), got {mo.shape}")
        cdef const double[:, ::1] mv = mo
        cdef const double* edge = self.edgep
        cdef Py_ssize_t t, bmin, bmax, n = self.n, nblk = self.nblk
        cdef double* at_min
        cdef double* at_max
        for t in range(self.ndim):
            bmin = <Py_ssize_t> mv[t, 2] - first_block
            bmax = <Py_ssize_t> mv[t, 3] - first_block
            at_min = &self.dZp[t * n + <Py_ssize_t> edge[(t * nblk + bmin) * _EDGE + 4]] if 0 <= bmin < nblk else NULL
            at_max = &self.dZp[t * n + <Py_ssize_t> edge[(t * nblk + bmax) * _EDGE + 5]] if 0 <= bmax < nblk else NULL
            _grid_motion(at_min, at_max, mv[t, 0], mv[t, 1], self.nbin)
        return self._dZ

    def _check_grid_side(self, str name):
        """The checks of the grid side's merges of the parts' gradient passes."""
        if self.n != 0:
            raise ValueError(f"{name} is the grid side's: make it with no points")
        self._check_built()
        if not self.has_gradient:
            raise ValueError("tables built without the gradient's")

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
            self.dZp = _data_or_null(self._dZ)
        return self._dZ


cdef class _GridEvaluator(CoreEvaluator):
    """An evaluator that reads densities on each column's grid: the tables
    of the first number of columns it meets (a fit's), and one set for the
    latest other number (the greedy order's subsets), each built once and
    updated at every evaluation."""
    def __init__(self, y0, h, PI, int threads, Py_ssize_t nbin, const double[::1] beta, double eps, w=None):
        CoreEvaluator.__init__(self, y0, h, PI, threads)
        if nbin < 2 or nbin > 2**31 - 1:
            raise ValueError("need 2 <= nbin < 2**31")
        self.nbin, self.eps, self.w = nbin, eps, w
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
        tables._run_on(self.threads)
        tables.update(Zt)
        return tables

    cpdef tuple evaluate(self, object Zt, bint gradient):
        cdef GridTables tables = self._updated(Zt, gradient)
        value, post = tables.value_and_posteriors(self.PI, gradient)
        if not gradient:
            return float(value), None
        return float(value), tables.gradient(post)
