# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""R's binned objective: f_NB_cpp's value and df_NB_cpp's gradient
(RGridTables), and RGrid, the evaluator built on them. Every point reads
its class densities at its grid point (its cell), so each column comes down
to tables [nbin, K] at the grid points; the passes over the points read all
columns' tables for a block of points at a time. The grids' shared support
is grid.pyx's.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport exp, frexp, ldexp, log, INFINITY, M_LN2
from libc.string cimport memset

from pyopnb._core.common cimport _data_or_null, _reduce_blocks, _thread_id
from pyopnb._core.passes cimport Column, Problem, _point_weight, _sample_weight_h
from pyopnb._core.posteriors cimport Priors, _row_numerator_sum, _row_posterior, _row_posterior_products
from pyopnb._core.products cimport (pyopnb_grad_points, pyopnb_grad_points_at_cells, pyopnb_grad_tables,
                                   pyopnb_running)
from pyopnb._core.grid cimport (GridSum, GridTables, Support, _GridEvaluator, _block_len, _block_products,
                                _column_pointers, _grid_sums)

cnp.import_array()


cdef extern from *:
    """
    /* the greedy order's numerators a_iy E_tgy below it may have lost digits to underflow (the
       point's own class is over 575 nats behind the others): such a point takes the direct
       log-sum-exp */
    #define PYOPNB_NUMERATOR_FLOOR 1e-250
    """
    const double PYOPNB_NUMERATOR_FLOOR


cdef inline int _binary_exponent(double x) noexcept nogil:
    """e of x = f 2^e, f in [0.5, 1) (frexp's), for a normal x."""
    cdef int e
    frexp(x, &e)
    return e


cdef class RGridTables(GridTables):
    """R's binned objective as a fit evaluates it: tables of f with linear
    binning (f_NB_cpp's value) and, for the gradient, f and the kernel
    derivative sums D with simple binning (df_NB_cpp), every point reading
    its column's tables at its grid point."""
    cdef double* S_linp             # [ndim, TK]: f with linear binning, at the grid points
    cdef double* S_simplep          # [ndim, TK]: f with simple binning (NULL without a gradient)
    cdef double* D_simplep          # [ndim, TK]: its kernel derivative sums
    cdef double* cell_decaysp       # [ndim, cell_decay_len]: each column's decays over its cells
    cdef object _cell_decays
    cdef object _D_c                # [ndim, TK]: the kernel derivative sums of the c weights at the grid points
    cdef double* D_cp

    def __cinit__(self, Py_ssize_t ndim, int[::1] y, int K, double[::1] h, Py_ssize_t nbin,
                  double eps, const double[::1] beta, bint gradient, int num_threads, w=None, part=None):
        self.bins_simple = gradient
        self.S_lin = np.zeros((ndim, self.TK))
        self.S_simple = np.empty((ndim, self.TK)) if gradient else None
        self.D_simple = np.empty((ndim, self.TK)) if gradient else None
        self._cell_decays = np.empty((ndim, self.cell_decay_len)) if gradient else None
        self._D_c = np.empty((ndim, self.TK)) if gradient else None
        self._part_simple = np.empty((ndim, self.nblk, self.TK)) if gradient else None
        self.part_simplep = _data_or_null(self._part_simple)
        self.S_linp = <double*> cnp.PyArray_DATA(self.S_lin)
        self.S_simplep = _data_or_null(self.S_simple)
        self.D_simplep = _data_or_null(self.D_simple)
        self.cell_decaysp = _data_or_null(self._cell_decays)
        self.D_cp = _data_or_null(self._D_c)

    cdef void _column_tables(self, Py_ssize_t t, Column* col, Support* sp, int inner) noexcept nogil:
        cdef const Problem* P = &self.wk.P
        cdef Py_ssize_t TK = self.TK, nblk = self.nblk
        cdef double* decays = &self.cell_decaysp[t * self.cell_decay_len] if sp.sparse else NULL
        # linear binning, densities read at the cells
        cdef GridSum g = GridSum(ker=&P.ker, weights=&self.part_linp[t * nblk * TK], S=&self.S_linp[t * TK], D=NULL,
                                 logs=False, anchors_all=True, eval_all=False, decays=NULL, have_decays=False)
        _grid_sums(P, col, sp, &g, inner)
        if self.bins_simple:
            # R's simple binning: whole weights at the cells: on a sparse support the cells'
            # decays are kept for the gradient's sums; on the grid, they are those just made
            _reduce_blocks(&self.part_simplep[t * nblk * TK], nblk, TK)
            g = GridSum(ker=&P.ker, weights=&self.part_simplep[t * nblk * TK], S=&self.S_simplep[t * TK],
                        D=&self.D_simplep[t * TK], logs=False, anchors_all=False, eval_all=False, decays=decays,
                        have_decays=not sp.sparse)
            _grid_sums(P, col, sp, &g, inner)

    def _terms_and_posteriors(self, const double[::1] PI, bint posteriors):
        """The points' terms with linear binning and their posteriors with
        simple binning (or None), each point's densities read at its grid
        point, as R's f_NB_cpp and df_NB_cpp, and combined from their
        products (_row_posterior_products)."""
        logprior = self._check_built(PI)
        if posteriors and self.S_simple is None:
            raise ValueError("tables built without the gradient's")
        cdef Py_ssize_t n = self.n, ndim = self.ndim, i, j, b, i0, m
        cdef int K = self.wk.P.K, tid, nthr = self.nthr
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
        cdef double* lf
        cdef double* lf_simple
        cdef Priors priors = Priors(PI=&PI[0], logprior=&lpv[0], K=K)
        cdef const Py_ssize_t[:, ::1] pv = _column_pointers(Tl, Ts if posteriors else NULL, TK, cell_of, n, colv)
        with nogil:
            for b in prange(nblk, num_threads=nthr, schedule='dynamic'):
                tid = _thread_id()
                i0 = b * B
                m = min(B, n - i0)
                lf = &av[tid, 0]
                # the simple binning's products, for the posteriors: none without them
                lf_simple = &lf[B * K]
                if not posteriors:
                    lf_simple = NULL
                _block_products(self.wk.P.simd, pv, ndim, K, i0, m, pyopnb_running(pr=lf, acc=&lf[2 * B * K]),
                                pyopnb_running(pr=lf_simple, acc=&lf[3 * B * K]))
                for j in range(m):
                    tv[i0 + j] = _row_posterior_products(&lf[j * K], &lf[(2 * B + j) * K], &priors, y[i0 + j],
                                                         NULL, True, &lf[4 * B * K])
                if posteriors:
                    for j in range(m):
                        _row_posterior_products(&lf[(B + j) * K], &lf[(3 * B + j) * K], &priors, y[i0 + j],
                                                &pp[(i0 + j) * K], False, &lf[4 * B * K])
        return post

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
        if not self.supports_made:
            # a part's tables came from the grid side: its own points' cells are all its passes read
            for t in range(self.ndim):
                self._column_support(t, 0, True)
            self.supports_made = True
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
        is chosen): E = exp(logS_lin - M), M each row's largest log (NaN
        where one is NaN, as numpy's max). Only at the cells: over whole
        grids these exps were most of a small fit's greedy ordering."""
        cdef Py_ssize_t j, e, g
        cdef int k, K = self.wk.P.K
        cdef double mx, v
        if self._cell_exps is None:
            self._cell_exps = np.zeros((self.ndim, self.TK))
            self._scaled = np.zeros(self.ndim, dtype=np.uint8)
        cdef unsigned char[::1] done = self._scaled
        if done[t]:
            return
        done[t] = 1
        cdef Support sp = self._column_support(t, 0, False)
        cdef double[:, ::1] L = self.logS_lin
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
            for k in range(K):
                # the C library's exp: numpy's differs by SIMD level
                E[t, e + k] = exp(L[t, e + k] - mx)

    def subset_values(self, base, candidates, const double[::1] PI):
        """l (linear binning) of the columns base + [j], for each j in candidates:
        objective_and_gradient(V[:, base + [j]]) up to rounding; see
        _subset_partials. Each candidate's sum goes by the fixed blocks of
        rows: each block's partial, then the blocks' in block order."""
        parts = self._subset_partials(base, candidates, PI)
        total = np.zeros(parts.shape[1])
        for b in range(parts.shape[0]):
            total = total + parts[b]
        return total / self.wk.P.W

    def part_subset_values(self, base, candidates, const double[::1] PI):
        """A part's subset_values: its blocks' partials [nblk, len(candidates)]
        (the whole problem's values are their sums in block order over its
        total weight)."""
        return self._subset_partials(base, candidates, PI)

    def _subset_partials(self, base, candidates, const double[::1] PI):
        """For each j in candidates, each block of rows' partial [nblk, ncand]
        of the sum of its points' weighted terms of l (linear binning) over
        the columns base + [j].

        Each column's tables are built once, so R's greedy ordering costs a
        pass over the points per step. A point's term is split into the
        base's part and the candidate's: with a_ik = PI_k f_ik / max_k' PI_k'
        f_ik' (f_ik the base columns' products of S_lin, as
        value_and_posteriors takes them) and E_tgk = exp(logf_tgk - M_tg) (the
        candidate's logS_lin, each grid row scaled by its largest entry), the
        term is log r_i, r_i = a_iy E_tgy / sum_k a_ik E_tgk, in (0, 1]. The
        exponentials are per grid cell, not per point. Unweighted, a
        block's sum of log r_i is the log of their product, kept as a
        fraction and a power of two (frexp): one log a block and candidate
        where there was one a point (the logs were most of the ordering's
        time), and more accurate than a sum of rounded logs. Weighted, each
        point takes its log. A point whose base products closed, or a
        density 0, inf or NaN, or whose numerator a_iy E_tgy is below 1e-250
        (PYOPNB_NUMERATOR_FLOOR: the base and the candidate put it in other
        classes than its own by over 575 nats) takes the direct log-sum-exp
        of its logs. Only the greedy order's choices read these values, and
        they are l's up to rounding.
        """
        cdef const double[::1] logprior = self._check_built(PI)
        self._make_logs()
        bcols = np.ascontiguousarray(base, dtype=np.intp).reshape(-1)
        ccols = np.ascontiguousarray(candidates, dtype=np.intp).reshape(-1)
        for arr in (bcols, ccols):
            if arr.size and (arr.min() < 0 or arr.max() >= self.ndim):
                raise ValueError(f"column indices must be in 0..{self.ndim - 1}")
        cdef Py_ssize_t n = self.n, j, b, i0, m, g
        cdef int K = self.wk.P.K, c, k, tid, yi, ex, nthr = self.nthr
        cdef const Problem* P = &self.wk.P
        cdef int nb = bcols.size, nc = ccols.size
        cdef const double* row
        cdef const double* er
        cdef const double* pr
        cdef const double* acc
        cdef double* ar
        cdef double s, mx, x, r, frac, direct
        cdef long long twos
        cdef bint whole
        # items of B points (cache-sized), within the fixed blocks of rows: per of them a block
        cdef Py_ssize_t B = _block_len(K), RB = self.B, per = (RB + B - 1) // B, nitem = self.nblk * per, t, rb
        if nc == 0:
            return np.zeros((self.nblk, 0))
        bcols = np.r_[bcols, 0]  # never empty
        cdef const Py_ssize_t[::1] bv = bcols
        cdef const Py_ssize_t[::1] ccv = ccols
        for c in range(nc):
            self._scale_rows(ccv[c])
        cdef const double[:, ::1] Ev = self._cell_exps
        part = np.zeros((nitem, nc))
        rows = np.empty((nthr, K + 16))  # padded: threads writing neighbouring rows share cache lines
        accs = np.empty((nthr, 2 * B * K + 16))
        ratios = np.empty((nthr, B * K))
        wholes = np.empty((nthr, B + 64), dtype=np.uint8)  # whether a point's products stayed whole; padded
        cdef double[:, ::1] pv = part
        cdef double[:, ::1] rv = rows
        cdef double[:, ::1] av = accs
        cdef double[:, ::1] xv = ratios
        cdef unsigned char[:, ::1] wv = wholes
        cdef const double* PI_ = &PI[0]
        cdef const int* y = self.wk.P.y
        cdef const double* Tl = _data_or_null(self.logS_lin)
        cdef const double* Sl = _data_or_null(self.S_lin)
        cdef const int* cell_of = &self.cells[0, 0]
        cdef Py_ssize_t TK = self.TK
        cdef bint weighted = P.w != NULL
        cdef const Py_ssize_t[:, ::1] bp = _column_pointers(Sl, NULL, TK, cell_of, n, bv)
        with nogil:
            for b in prange(nitem, num_threads=nthr, schedule='dynamic'):
                tid = _thread_id()
                rb = b // per
                i0 = rb * RB + (b % per) * B
                m = min(B, min(n, (rb + 1) * RB) - i0)
                if m <= 0:
                    continue
                _block_products(self.wk.P.simd, bp, nb, K, i0, m, pyopnb_running(pr=&av[tid, 0], acc=&av[tid, B * K]),
                                pyopnb_running(pr=NULL, acc=NULL))
                # a point's a_k = PI_k f_k / max_k PI_k f_k, where its products stayed whole
                for j in range(m):
                    pr = &av[tid, j * K]
                    acc = &av[tid, (B + j) * K]
                    ar = &xv[tid, j * K]
                    whole = _row_numerator_sum(pr, acc, PI_, K, ar) != 0.0
                    wv[tid, j] = whole
                    if whole:
                        mx = 0.0
                        for k in range(K):
                            if ar[k] > mx:
                                mx = ar[k]
                        for k in range(K):
                            ar[k] = ar[k] / mx
                for c in range(nc):
                    t = ccv[c]
                    # the block's product of r_i as frac 2^twos (frac kept normal), and its other points' terms
                    frac = 1.0
                    twos = 0
                    direct = 0.0
                    for j in range(m):
                        g = cell_of[t * n + i0 + j]
                        yi = y[i0 + j]
                        er = &Ev[t, g * K]
                        if wv[tid, j]:
                            ar = &xv[tid, j * K]
                            s = 0.0
                            for k in range(K):
                                s = s + ar[k] * er[k]
                            x = ar[yi] * er[yi]
                            r = x / s
                            # s >= x, so r <= 1 but where s is NaN, and r >= x / K keeps the product normal
                            if x >= PYOPNB_NUMERATOR_FLOOR and r <= 1.0:
                                if weighted:
                                    direct = direct + _point_weight(P, i0 + j) * log(r)
                                else:
                                    frac = frac * r
                                    if frac < 1e-50:
                                        # assigned here, so each thread's own (a variable only
                                        # passed by address to frexp was one the threads shared)
                                        ex = _binary_exponent(frac)
                                        frac = ldexp(frac, -ex)
                                        twos = twos + ex
                                continue
                        row = &Tl[t * TK + g * K]
                        pr = &av[tid, j * K]
                        acc = &av[tid, (B + j) * K]
                        for k in range(K):
                            rv[tid, k] = acc[k] + log(pr[k]) + row[k]
                        direct = direct + _point_weight(P, i0 + j) * _row_posterior(&rv[tid, 0], &logprior[0], K,
                                                                                    yi, NULL)
                    pv[b, c] = direct + (log(frac) + <double> twos * M_LN2)
        # each block of rows' partial: its items' in order
        blocks = np.zeros((self.nblk, nc))
        cdef double[:, ::1] bk = blocks
        for rb in range(self.nblk):
            for j in range(per):
                for c in range(nc):
                    bk[rb, c] = bk[rb, c] + pv[rb * per + j, c]
        return blocks

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
        with nogil:
            self._point_terms(&post[0, 0])
            self._sample_sums()
            self._sample_terms()
        return dZ

    cdef object _gradient_weights(self):
        # the c weights binned whole into the cells [ndim, nblk, TK]
        return self._part_lin

    def merge_gradient(self, part_c):
        """The grid side's: the kernel derivative sums [ndim, TK] of the
        parts' c weights (part_gradient's, their blocks in order) at the
        grid points, for part_gradient_finish."""
        self._check_grid_side("merge_gradient")
        self._copy_parts(part_c, self._part_lin, "part_c")
        with nogil:
            self._sample_sums()
        return self._D_c.copy()

    def part_gradient_finish(self, D_c):
        """A part's n * dl/dZ [ndim, n]: its points' own terms (part_gradient)
        with their sample-point terms read from D_c (merge_gradient's)."""
        if self._dZ is None:
            raise ValueError("call part_gradient first")
        self._copy_parts(D_c, self._D_c, "D_c")
        with nogil:
            self._sample_terms()
        return self._dZ

    cdef void _point_terms(self, const double* post) noexcept nogil:
        """Each point's own term of dZ (into _dZ), and each (column, block)'s
        c weights binned whole into its cells: in the memory of the value's
        linearly binned weights, spent once its tables are made."""
        cdef Py_ssize_t n = self.n, nblk = self.nblk, TK = self.TK, B = self.B, it, t, i0, i1
        cdef const Problem* P = &self.wk.P
        cdef double* part_c = self.part_linp
        cdef double* pc
        cdef double* dZ = self.dZp
        cdef pyopnb_grad_points pts = pyopnb_grad_points(post=post, y=P.y, wt=P.w, h=P.h, K=P.K, shared=P.shared)
        cdef pyopnb_grad_tables T
        for it in prange(self.ndim * nblk, num_threads=self.nthr, schedule='dynamic'):
            t = it // nblk
            i0 = (it % nblk) * B
            i1 = min(n, i0 + B)
            pc = &part_c[it * TK]
            memset(pc, 0, TK * sizeof(double))
            T = pyopnb_grad_tables(S=&self.S_simplep[t * TK], D=&self.D_simplep[t * TK], W=pc)
            pyopnb_grad_points_at_cells(P.simd, &T, &self.cellsp[t * n], &pts, i0, i1, &dZ[t * n])

    cdef void _sample_sums(self) noexcept nogil:
        """The sample-point term: each column's c weights (its blocks' added
        in order) summed at its grid, into _D_c."""
        cdef const Problem* P = &self.wk.P
        cdef Py_ssize_t ndim = self.ndim, nblk = self.nblk, TK = self.TK, t
        cdef int tid, nthr = self.nthr, inner = nthr if ndim == 1 else 1
        cdef double* D_c = self.D_cp
        cdef double* part_c = self.part_linp
        cdef Column* col
        cdef Support sp
        cdef GridSum g
        cdef double* decays
        for t in prange(ndim, num_threads=min(ndim, nthr), schedule='dynamic'):
            tid = _thread_id()
            col = &self.wk.cols[tid]
            sp = self._summing_column(t, tid, col, self.lop[t], self.deltap[t], &part_c[t * nblk * TK])
            decays = &self.cell_decaysp[t * self.cell_decay_len] if sp.sparse else NULL
            g = GridSum(ker=&P.ker, weights=&part_c[t * nblk * TK], S=NULL, D=&D_c[t * TK], logs=False,
                        anchors_all=False, eval_all=False, decays=decays, have_decays=sp.sparse)
            _grid_sums(P, col, &sp, &g, inner)

    cdef void _sample_terms(self) noexcept nogil:
        """Each point's sample-point term, read from _D_c at its cell, taken from dZ."""
        cdef const Problem* P = &self.wk.P
        cdef Py_ssize_t n = self.n, nblk = self.nblk, TK = self.TK, B = self.B, it, t, i, i0, i1
        cdef int K = P.K
        cdef const double* D_c = self.D_cp
        cdef double* dZ = self.dZp
        for it in prange(self.ndim * nblk, num_threads=self.nthr, schedule='dynamic'):
            t = it // nblk
            i0 = (it % nblk) * B
            i1 = min(n, i0 + B)
            for i in range(i0, i1):
                dZ[t * n + i] -= _sample_weight_h(P, i) * D_c[t * TK + self.cellsp[t * n + i] * K + P.y[i]]

    def part_tables(self):
        """The grid side's tables a part's set_tables takes: (S_lin, S_simple, D_simple)."""
        return (self.S_lin, self.S_simple, self.D_simple)

    def set_tables(self, const double[::1] lo, const double[::1] delta, S_lin, S_simple, D_simple):
        """A part's tables, the grid side's merge_parts' (S_lin, and with a
        gradient S_simple and D_simple, [ndim, TK] each), on the grids its
        points were binned on (part_bin)."""
        self._check_built()
        self._set_axes(lo, delta)
        self._copy_parts(S_lin, self.S_lin, "S_lin")
        if self.S_simple is not None:
            self._copy_parts(S_simple, self.S_simple, "S_simple")
            self._copy_parts(D_simple, self.D_simple, "D_simple")
        self._logs_made = False


cdef class RGrid(_GridEvaluator):
    """R's binned objective (f_NB_cpp's value, df_NB_cpp's gradient, which
    is not its derivative), on ``nbin`` grid points per column."""

    cdef GridTables _tables_for(self, Py_ssize_t ndim, bint gradient):
        return RGridTables(ndim, self.y0, self.K, self.h, self.nbin, self.eps, self.beta, gradient,
                           self.most_threads, self.w)

    cpdef list subset_values(self, object Zt, list chosen, list candidates):
        """Read off the columns' tables (each column's grid densities do not
        depend on the others): a pass over the points per step."""
        cdef GridTables tables = self._tables.get(np.shape(Zt)[0])
        if tables is None or tables.Zt is None or not np.array_equal(tables.Zt, Zt):
            tables = self._updated(Zt, False)
        tables._run_on(self.threads)
        return list(tables.subset_values(chosen, candidates, self.PI))
