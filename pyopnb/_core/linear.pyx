# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""The paper's binned objective: each projected column's points binned
linearly on a grid of nbin points (each point's weight split between its two
grid points), its class densities summed at the points themselves from the
binned weights, and the exact derivative of that value (LinearGridTables),
and LinearGrid, the evaluator built on them. The grids' shared support is
grid.pyx's.

Every sum over the points goes by the fixed blocks of rows: the binned
weights (grid.pyx's), the gradient's deposits of the c weights and its
shares of the grid's motion, each block from zero and the blocks in order.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.string cimport memcpy, memset

from pyopnb._core.common cimport _data_or_null, _reduce_blocks, _thread_id
from pyopnb._ksum cimport Anchors, EvalRows, RunningSums, _deposit, _evaluate, _recurse
from pyopnb._core.passes cimport Column, Problem, _sample_weight, _set_grid
from pyopnb._core.posteriors cimport Priors, _row_posterior_products
from pyopnb._core.products cimport (pyopnb_grad_points, pyopnb_grad_points_at_rows, pyopnb_grad_tables,
                                    pyopnb_log_products, pyopnb_rows_products, pyopnb_running,
                                    pyopnb_tables_at_rows)
from pyopnb._core.grid cimport _EDGE, GridTables, Support, _GridEvaluator, _block_len

cnp.import_array()


cdef struct LinearColumn:
    # a column's grid and the value's tables on it, as the points read them
    Anchors A               # the grid points as the recursion's anchors
    RunningSums tb          # its running sums of the binned weights (Lincl, R; no deposits, no decays)
    const double* Wa        # [nbin, K]: the binned class weights
    const double* z         # the column's projections
    const int* cell_of      # each point's grid cell


cdef inline void _point_anchors(const LinearColumn* c, Py_ssize_t i0, Py_ssize_t m, Py_ssize_t* lo) noexcept nogil:
    """lo[j]: the last grid point <= z of point i0 + j, from its cell,
    robust to the rounding of the cell's division."""
    cdef Py_ssize_t j, g
    cdef double z
    for j in range(m):
        z = c.z[i0 + j]
        g = c.cell_of[i0 + j]
        while g > 0 and c.A.x[g] > z:
            g -= 1
        while g + 1 < c.A.G and c.A.x[g + 1] <= z:
            g += 1
        lo[j] = g


cdef inline void _densities_at(const LinearColumn* c, Py_ssize_t i0, Py_ssize_t m, Py_ssize_t* lo, double* S,
                               double* D) noexcept nogil:
    """S (and D, unless NULL) [m, K]: the column's class densities (and
    their derivatives' sums) at points i0..i0+m-1, summed from the binned
    weights where the points are."""
    _point_anchors(c, i0, m, lo)
    cdef EvalRows rows = EvalRows(e=&c.z[i0], lo=lo, m=m, outrow=NULL, S=S, D=D, logS=False)
    _evaluate(&c.A, &rows, c.Wa, 1, &c.tb)


cdef class LinearGridTables(GridTables):
    """The paper's binned objective: each column's class weights binned
    linearly on its grid, the class densities summed from them at each
    point where it lies, and the exact derivative of that value.

    The gradient's passes (see :meth:`gradient`) run one at a time on a part
    of a larger problem's points and on the grid side: part_gradient (the
    points' own terms, the c weights deposited on the grid per block),
    merge_gradient (the grid's sums of the c weights and the grid's own
    share of its motion), part_sample (the sample-point terms, each block's
    edge), merge_motion (the grid's motion) and part_motion."""
    cdef readonly Py_ssize_t TL     # a column's table of running sums in use: nbin x K x (a + 1)
    cdef Py_ssize_t TLx             # the room _recurse may use for one
    cdef Py_ssize_t Bv              # points a thread takes at a time in the passes over the points
    cdef object _anchors            # [ndim, nbin]: each column's grid points
    cdef object _Wa                 # [ndim, TK]: each column's binned class weights
    cdef object _Lincl, _R          # [ndim, TLx]: their running sums, as _recurse leaves them
    cdef object _deposits           # [ndim, nblk, 2 TL]: each (column, block)'s c weights deposited on the
                                    # grid, left tables then right; summed over the blocks, block 0 holds them
    cdef object _Sc                 # [ndim, TK]: the kernel sums of the c weights at the grid points
    cdef object _share              # [ndim, 2]: the grid's own shares of n dl/dlo and n dl/ddelta
    cdef object _Dc                 # [threads, TK]: the sums of the c weights' derivative on a grid
    cdef object _point_tables       # [threads, stride]: a thread's tables for a run of points
    cdef object _point_rows         # [threads, stride]: its points' grid points, rows 0, 1, ..., and pointers
    cdef Py_ssize_t table_stride, row_stride
    cdef double* anchorsp
    cdef double* Wap
    cdef double* Linclp
    cdef double* Rp
    cdef double* depositsp
    cdef double* Scp
    cdef double* sharep
    cdef double* Dcp
    cdef double* point_tablesp
    cdef Py_ssize_t* point_rowsp

    def __cinit__(self, Py_ssize_t ndim, int[::1] y, int K, double[::1] h, Py_ssize_t nbin,
                  double eps, const double[::1] beta, bint gradient, int num_threads, w=None, part=None):
        cdef int a1 = self.wk.P.ker.a + 1
        self.bins_simple = False
        self.TL = nbin * K * a1
        self.TLx = nbin * max(K, 2) * a1
        self.Bv = _block_len(K)
        self._anchors = np.empty((ndim, nbin))
        self._Wa = np.zeros((ndim, self.TK))
        self._Lincl = np.zeros((ndim, self.TLx))
        self._R = np.zeros((ndim, self.TLx))
        self._deposits = np.empty((ndim, self.nblk, 2 * self.TL)) if gradient else None
        self._Sc = np.empty((ndim, self.TK)) if gradient else None
        self._share = np.zeros((ndim, 2)) if gradient else None
        self._Dc = np.empty((self.wk.most, self.TK)) if gradient else None
        # the value's: a run's densities in every column, their products (pr, acc) and a row's logs; the
        # gradient's: a run's S, D and c weights in one column
        self.table_stride = max(ndim + 2, 3) * self.Bv * K + K + 16
        self.row_stride = 2 * self.Bv + 2 * ndim + 8
        self._point_tables = np.empty((self.wk.most, self.table_stride))
        self._point_rows = np.zeros((self.wk.most, self.row_stride), dtype=np.intp)
        self.anchorsp = _data_or_null(self._anchors)
        self.Wap = _data_or_null(self._Wa)
        self.Linclp = _data_or_null(self._Lincl)
        self.Rp = _data_or_null(self._R)
        self.depositsp = _data_or_null(self._deposits)
        self.Scp = _data_or_null(self._Sc)
        self.sharep = _data_or_null(self._share)
        self.Dcp = _data_or_null(self._Dc)
        self.point_tablesp = _data_or_null(self._point_tables)
        self.point_rowsp = <Py_ssize_t*> cnp.PyArray_DATA(self._point_rows)

    cdef LinearColumn _column(self, Py_ssize_t t) noexcept nogil:
        """Column t's grid and tables, as the points read them."""
        cdef LinearColumn c
        c.A = Anchors(x=&self.anchorsp[t * self.nbin], G=self.nbin, r=self.wk.P.K, h=self.wk.P.h,
                      shared=self.wk.P.shared, ker=&self.wk.P.ker)
        c.tb = RunningSums(Ldep=NULL, Lincl=&self.Linclp[t * self.TLx], R=&self.Rp[t * self.TLx], decay=NULL)
        c.Wa = &self.Wap[t * self.TK]
        c.z = &self.Ztp[t * self.n] if self.n else NULL
        c.cell_of = &self.cellsp[t * self.n] if self.n else NULL
        return c

    cdef void _column_tables(self, Py_ssize_t t, Column* col, Support* sp, int inner) noexcept nogil:
        # the whole grid: a point reads the sums between any two grid points
        self._grid_points(t, col)
        memcpy(&self.Wap[t * self.TK], &self.part_linp[t * self.nblk * self.TK], self.TK * sizeof(double))
        cdef LinearColumn c = self._column(t)
        c.tb.decay = col.tb.decay
        _recurse(&c.A, c.Wa, 1, &c.tb, True, False, inner)

    cdef void _grid_points(self, Py_ssize_t t, Column* col) noexcept nogil:
        """Column t's grid points, into _anchors (col's scratch: its grid)."""
        _set_grid(col, self.lop[t], self.deltap[t], self.nbin, True)
        memcpy(&self.anchorsp[t * self.nbin], col.anchors, self.nbin * sizeof(double))

    cdef double* _run_products(self, int tid, Py_ssize_t i0, Py_ssize_t m) noexcept nogil:
        """Points i0..i0+m-1 (m <= Bv), on thread tid's scratch: each
        column's densities at the points, multiplied over the columns in
        order (pyopnb_rows_products: pr [m, K], then acc [m, K] Bv K
        entries on, then room for a row's logs)."""
        cdef Py_ssize_t ndim = self.ndim, Bv = self.Bv, j, t
        cdef int K = self.wk.P.K
        cdef double* S = &self.point_tablesp[tid * self.table_stride]
        cdef double* pr = &S[ndim * Bv * K]
        cdef Py_ssize_t* lo = &self.point_rowsp[tid * self.row_stride]
        cdef Py_ssize_t* rows = &lo[Bv]
        cdef const double** base = <const double**> &rows[Bv]
        cdef const Py_ssize_t** idx = <const Py_ssize_t**> &rows[Bv + ndim]
        cdef LinearColumn c
        for j in range(m):
            rows[j] = j
        for t in range(ndim):
            c = self._column(t)
            _densities_at(&c, i0, m, lo, &S[t * Bv * K], NULL)
            base[t] = &S[t * Bv * K]
            idx[t] = rows
        cdef pyopnb_tables_at_rows T = pyopnb_tables_at_rows(base=base, idx=idx, nrow=<int> ndim, K=K)
        pyopnb_rows_products(self.wk.P.simd, &T, pyopnb_running(pr=pr, acc=&pr[Bv * K]), True, 0, m)
        return pr

    def _terms_and_posteriors(self, const double[::1] PI, bint posteriors):
        """The points' terms and posteriors (or None) from each column's
        densities at the points, multiplied over the columns in order."""
        logprior = self._check_built(PI)
        if posteriors and not self.has_gradient:
            raise ValueError("tables built without the gradient's")
        cdef Py_ssize_t n = self.n, Bv = self.Bv, nrun = (n + Bv - 1) // Bv, run, i0, m, j
        cdef int K = self.wk.P.K, tid, nthr = self.nthr
        if posteriors and self._post is None:
            self._post = np.empty((n, K))
        post = self._post if posteriors else None
        cdef double* pp = _data_or_null(post)
        cdef double[::1] tv = self._terms
        cdef const double[::1] lpv = logprior
        cdef Priors priors = Priors(PI=&PI[0], logprior=&lpv[0], K=K)
        cdef const int* y = self.wk.P.y
        cdef double* pr
        with nogil:
            for run in prange(nrun, num_threads=nthr, schedule='dynamic'):
                tid = _thread_id()
                i0 = run * Bv
                m = min(Bv, n - i0)
                pr = self._run_products(tid, i0, m)
                for j in range(m):
                    tv[i0 + j] = _row_posterior_products(&pr[j * K], &pr[(Bv + j) * K], &priors, y[i0 + j],
                                                         &pp[(i0 + j) * K] if posteriors else NULL, True,
                                                         &pr[2 * Bv * K])
        return post

    def log_densities(self):
        """log prod_t f_kt(z_it) [n, K] of the tables' Z (after update):
        each point's class log densities, for checks."""
        self._check_built()
        cdef Py_ssize_t n = self.n, Bv = self.Bv, run, i0, m, j
        cdef int K = self.wk.P.K
        out = np.empty((n, K))
        cdef double[:, ::1] ov = out
        cdef double* pr
        for run in range((n + Bv - 1) // Bv):
            i0 = run * Bv
            m = min(Bv, n - i0)
            pr = self._run_products(0, i0, m)
            pyopnb_log_products(m * K, pr, &pr[Bv * K])
            for j in range(m * K):
                ov[i0 + j // K, j % K] = pr[j]
        return out

    def gradient(self, const double[:, ::1] post):
        """n * dl/dZ [ndim, n] of the value: its exact derivative (the paper's T1, T2).

        With P the posteriors and c_ik = w_i (1{y_i = k} - P_ik) / f_k(z_i),
        n dl/dz_i has two parts:
          point i as an evaluation point: - sum_k c_ik D_k(z_i) / h_k;
          as a sample point, through its binning fraction (its class weight
            w_i / (W_y h_y) binned linearly): that weight times (Sc_y[g_i + 1] - Sc_y[g_i]) / delta,
            Sc_k the kernel sums at the grid points of the c weights, placed
            where the points lie.
        The grid moves with the extremes of z (lo, delta): its own share
        (the binned weights through the c weights' derivative sums on the
        grid) and the points' shares through their fractions go to the
        points at z's extremes. The grid's own share starts block 0's sums,
        so that up to one block the sums run in the points' order.
        """
        dZ = self._gradient_out(post, self.has_gradient)
        with nogil:
            self._point_terms(&post[0, 0])
            self._sample_sums()
            self._sample_terms(0)
            self._move_grids()
        return dZ

    cdef void _point_terms(self, const double* post) noexcept nogil:
        """Each point's terms as an evaluation point (into _dZ), and each
        (column, block)'s c weights deposited on its grid (into _deposits),
        the block's points in order."""
        cdef const Problem* P = &self.wk.P
        cdef Py_ssize_t n = self.n, nblk = self.nblk, B = self.B, Bv = self.Bv, TL = self.TL, it, t, i0, i1, r0, m, j
        cdef int K = P.K, tid
        cdef double* dep
        cdef double* S
        cdef double* D
        cdef double* Wc
        cdef Py_ssize_t* lo
        cdef Py_ssize_t* rows
        cdef LinearColumn c
        cdef pyopnb_grad_tables T
        cdef pyopnb_grad_points pts
        for it in prange(self.ndim * nblk, num_threads=self.nthr, schedule='dynamic'):
            tid = _thread_id()
            t = it // nblk
            i0 = (it % nblk) * B
            i1 = min(n, i0 + B)
            dep = &self.depositsp[it * 2 * TL]
            memset(dep, 0, 2 * TL * sizeof(double))
            S = &self.point_tablesp[tid * self.table_stride]
            D = &S[Bv * K]
            Wc = &D[Bv * K]
            lo = &self.point_rowsp[tid * self.row_stride]
            rows = &lo[Bv]
            for j in range(Bv):
                rows[j] = j
            c = self._column(t)
            r0 = i0
            while r0 < i1:
                m = min(Bv, i1 - r0)
                _densities_at(&c, r0, m, lo, S, D)
                T = pyopnb_grad_tables(S=S, D=D, W=Wc)
                pts = pyopnb_grad_points(post=&post[r0 * K], y=&P.y[r0], wt=P.w, h=P.h, K=K, shared=P.shared)
                if P.w != NULL:
                    pts.wt = &P.w[r0]
                pyopnb_grad_points_at_rows(P.simd, &T, rows, &pts, 0, m, &self.dZp[t * n + r0])
                _deposit(&c.A, &c.z[r0], Wc, m, lo, dep, &dep[TL])
                r0 = r0 + Bv

    cdef void _sample_sums(self) noexcept nogil:
        """Per column: the c weights' deposits added over the blocks in
        order, their kernel sums Sc and derivative sums at the grid points,
        and the grid's own share of its motion (into _share)."""
        cdef const Problem* P = &self.wk.P
        cdef Py_ssize_t ndim = self.ndim, nblk = self.nblk, TK = self.TK, TL = self.TL, t, g
        cdef int K = P.K, k, a1 = P.ker.a + 1, tid, nthr = self.nthr, inner = nthr if ndim == 1 else 1
        cdef double* dep
        cdef double* Dc
        cdef const double* Wa
        cdef Column* col
        cdef LinearColumn c
        cdef RunningSums tb
        cdef EvalRows grid_rows
        cdef double gam, d_lo, d_delta
        for t in prange(ndim, num_threads=min(ndim, nthr), schedule='dynamic'):
            tid = _thread_id()
            col = &self.wk.cols[tid]
            dep = &self.depositsp[t * nblk * 2 * TL]
            _reduce_blocks(dep, nblk, 2 * TL)
            c = self._column(t)
            # the thread's tables, the right ones starting from the right deposits
            tb = col.tb
            memcpy(tb.R, &dep[TL], TL * sizeof(double))
            _recurse(&c.A, dep, a1, &tb, False, False, inner)
            Dc = &self.Dcp[tid * TK]
            grid_rows = EvalRows(e=NULL, lo=col.ident, m=self.nbin, outrow=NULL, S=&self.Scp[t * TK], D=Dc,
                                 logS=False)
            _evaluate(&c.A, &grid_rows, dep, a1, &tb)
            # gamma_g = d(nl)/dG_g, the binning fractions fixed
            Wa = c.Wa
            d_lo = 0.0
            d_delta = 0.0
            for g in range(self.nbin):
                gam = 0.0
                for k in range(K):
                    gam = gam - Wa[g * K + k] * Dc[g * K + k] / P.h[k]
                d_lo = d_lo + gam
                d_delta = d_delta + g * gam
            self.sharep[2 * t] = d_lo
            self.sharep[2 * t + 1] = d_delta

    cdef void _sample_terms(self, Py_ssize_t first_block) noexcept nogil:
        """Each point's sample-point term (into _dZ), and each (column,
        block)'s edge (_EDGE's fields); the part's blocks start at the
        problem's block first_block, whose block 0 starts from the grid's
        own share."""
        cdef const Problem* P = &self.wk.P
        cdef Py_ssize_t n = self.n, nblk = self.nblk, TK = self.TK, B = self.B, it, t, i, i0, i1, g, imin, imax
        cdef int k, K = P.K
        cdef const double* Sc
        cdef const double* z
        cdef double* ed
        cdef double b, u, delta
        for it in prange(self.ndim * nblk, num_threads=self.nthr, schedule='dynamic'):
            t = it // nblk
            i0 = (it % nblk) * B
            i1 = min(n, i0 + B)
            Sc = &self.Scp[t * TK]
            z = &self.Ztp[t * n]
            delta = self.deltap[t]
            ed = &self.edgep[it * _EDGE]
            ed[0] = self.sharep[2 * t] if first_block + it % nblk == 0 else 0.0
            ed[1] = self.sharep[2 * t + 1] if first_block + it % nblk == 0 else 0.0
            imin = i0
            imax = i0
            for i in range(i0, i1):
                k = P.y[i]
                g = self.cellsp[t * n + i]
                # beta_i = d(nl)/du_i with the grid fixed: through the fractions
                b = _sample_weight(P, i) * (Sc[(g + 1) * K + k] - Sc[g * K + k])
                self.dZp[t * n + i] = self.dZp[t * n + i] + b / delta
                u = (z[i] - self.lop[t]) / delta
                ed[0] = ed[0] - b / delta
                ed[1] = ed[1] - u * b / delta
                if z[i] < z[imin]:
                    imin = i
                if z[i] > z[imax]:
                    imax = i
            ed[2] = z[imin]
            ed[3] = z[imax]
            ed[4] = <double> imin
            ed[5] = <double> imax

    def part_tables(self):
        """The grid side's tables a part's set_tables takes: (Wa, Lincl, R)."""
        return (self._Wa, self._Lincl, self._R)

    def set_tables(self, const double[::1] lo, const double[::1] delta, Wa, Lincl, R):
        """A part's tables, the grid side's part_tables, on the grids its
        points were binned on (part_bin)."""
        self._check_built()
        self._set_axes(lo, delta)
        self._copy_parts(Wa, self._Wa, "Wa")
        self._copy_parts(Lincl, self._Lincl, "Lincl")
        self._copy_parts(R, self._R, "R")
        cdef Py_ssize_t t
        for t in range(self.ndim):
            self._grid_points(t, &self.wk.cols[0])

    cdef object _gradient_weights(self):
        # the c weights deposited on the grid [ndim, nblk, 2 TL]
        return self._deposits

    def merge_gradient(self, deposits):
        """The grid side's: from the parts' deposits (part_gradient's, their
        blocks in order), each column's kernel sums Sc of the c weights at
        the grid points and the grid's own shares of its motion, [ndim, TK
        + 2] (Sc, then n dl/dlo and n dl/ddelta), for part_sample."""
        self._check_grid_side("merge_gradient")
        self._copy_parts(deposits, self._deposits, "deposits")
        with nogil:
            self._sample_sums()
        return np.concatenate([self._Sc, self._share], axis=1)

    def part_sample(self, merged, Py_ssize_t first_block):
        """A part's sample-point terms, read from merge_gradient's
        ``merged``, its blocks starting at the problem's block
        ``first_block``: each (column, block)'s edge [ndim, nblk, 4], its
        shares of n dl/dlo and n dl/ddelta and its extremes of z, for
        merge_motion."""
        if self._dZ is None:
            raise ValueError("call part_gradient first")
        mg = np.asarray(merged, dtype=np.float64)
        if mg.shape != (self.ndim, self.TK + 2):
            raise ValueError(f"merged must be ({self.ndim}, {self.TK + 2}), got {mg.shape}")
        if first_block < 0:
            raise ValueError(f"first_block must be >= 0, got {first_block}")
        self._Sc[...] = mg[:, :self.TK]
        self._share[...] = mg[:, self.TK:]
        with nogil:
            self._sample_terms(first_block)
        return self._part_edges()


cdef class LinearGrid(_GridEvaluator):
    """The paper's binned objective: each column's class weights binned
    linearly on ``nbin`` grid points (widened by ``eps`` at each end), the
    densities summed from them at each point, and the exact derivative of
    that value."""

    cdef GridTables _tables_for(self, Py_ssize_t ndim, bint gradient):
        return LinearGridTables(ndim, self.y0, self.K, self.h, self.nbin, self.eps, self.beta, gradient,
                                self.most_threads, self.w)
