# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""The journal formulation's binned objective: each column's class log
densities on its grid, interpolated linearly at the points, and the exact
derivative of that value (InterpGridTables), and InterpGrid, the evaluator
built on them. The grids' shared support is grid.pyx's.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport exp, log
from libc.string cimport memset

from pyopnb._core.common cimport _MAX_ORDER, _data_or_null, _thread_id
from pyopnb._ksum cimport _make_kernel
from pyopnb._core.geometry cimport _bin_linear
from pyopnb._core.passes cimport Column, Problem, _point_weight, _sample_weight
from pyopnb._core.posteriors cimport _row_posterior
from pyopnb._core.grid cimport _EDGE, GridSum, GridTables, Support, _GridEvaluator, _block_len, _cell_frac, _grid_sums

cnp.import_array()


cdef struct GridPoints:
    # the n points on each of ndim columns' grids
    const double* Zt            # [ndim, n]: their projections
    const int* cell_of          # [ndim, n]: their cells
    const double* lo            # [ndim]: each grid's first point
    const double* delta         # [ndim]: and its spacing
    Py_ssize_t n
    Py_ssize_t ndim


cdef void _block_interp(const double* T, Py_ssize_t TK, int K, const GridPoints* at, Py_ssize_t i0, Py_ssize_t m,
                        double* acc) noexcept nogil:
    """acc [m, K]: for the points i0..i0+m-1, the sum over the columns (in
    order) of the tables T [ndim, TK] interpolated linearly between the
    point's two grid points, (1 - u) T[g] + u T[g + 1]."""
    cdef Py_ssize_t t, j, i, g, n = at.n
    cdef int k
    cdef double u
    cdef const double* row
    cdef double* a
    memset(acc, 0, m * K * sizeof(double))
    for t in range(at.ndim):
        for j in range(m):
            i = i0 + j
            g = at.cell_of[t * n + i]
            u = _cell_frac(at.Zt[t * n + i], at.lo[t], at.delta[t], g)
            row = &T[t * TK + g * K]
            a = &acc[j * K]
            for k in range(K):
                a[k] = a[k] + ((1.0 - u) * row[k] + u * row[K + k])


cdef class InterpGridTables(GridTables):
    """The journal formulation's binned objective: each column's class log
    densities on its grid (logs summed in log space, so finite however far a
    grid point lies from a class) interpolated linearly at the points, and
    the exact derivative of that value.

    The gradient's passes (see :meth:`gradient`) run one at a time on a part
    of a larger problem's points and on the grid side: part_gradient (the
    points' own terms, the a weights binned), merge_gradient (the grid's
    sums), part_sample (the sample-point terms, each block's edge),
    merge_motion (the grid's motion) and part_motion."""
    cdef object _part_a             # [ndim, nblk, TK]: each (column, block)'s a weights binned linearly; then,
                                    # summed over the blocks, block 0 holds the column's c = A / f
    cdef object _Phi                # [ndim, TK]: the kernel sums of the c weights at the grid points
    cdef object _Psi                # [ndim, TK]: the same in the kernel psi(u) = u K'(u)
    cdef double* part_ap            # their data (NULL without a gradient)
    cdef double* Phip
    cdef double* Psip

    def __cinit__(self, Py_ssize_t ndim, int[::1] y, int K, double[::1] h, Py_ssize_t nbin,
                  double eps, const double[::1] beta, bint gradient, int num_threads, w=None, part=None):
        cdef int m
        self.bins_simple = False
        # psi(u) = u K'(u), even: beta_psi[m] = m beta_m - beta_{m-1}
        if beta.shape[0] > _MAX_ORDER:
            raise ValueError("beta has too many entries for the interpolated gradient")
        bpsi = np.zeros(beta.shape[0] + 1)
        for m in range(beta.shape[0] + 1):
            bpsi[m] = (m * beta[m] if m < beta.shape[0] else 0.0) - (beta[m - 1] if m > 0 else 0.0)
        _make_kernel(<double*> cnp.PyArray_DATA(bpsi), bpsi.shape[0], &self.psi)
        self._part_a = np.empty((ndim, self.nblk, self.TK)) if gradient else None
        self._Phi = np.empty((ndim, self.TK)) if gradient else None
        self._Psi = np.empty((ndim, self.TK)) if gradient else None
        self.part_ap = _data_or_null(self._part_a)
        self.Phip = _data_or_null(self._Phi)
        self.Psip = _data_or_null(self._Psi)

    cdef void _column_tables(self, Py_ssize_t t, Column* col, Support* sp, int inner) noexcept nogil:
        cdef const Problem* P = &self.wk.P
        cdef Py_ssize_t TK = self.TK
        # linear binning, log densities summed in log space on the whole support (interpolated between)
        cdef GridSum g = GridSum(ker=&P.ker, weights=&self.part_linp[t * self.nblk * TK], S=&self.logS_linp[t * TK],
                                 D=NULL, logs=True, anchors_all=True, eval_all=True, decays=NULL, have_decays=False)
        _grid_sums(P, col, sp, &g, inner)

    def _terms_and_posteriors(self, const double[::1] PI, bint posteriors):
        """The points' terms and posteriors (or None) of the log densities
        interpolated linearly between each point's two grid points."""
        cdef const double[::1] logprior = self._check_built(PI)
        if posteriors and not self.has_gradient:
            raise ValueError("tables built without the gradient's")
        cdef Py_ssize_t n = self.n, ndim = self.ndim, j, b, i0, m
        cdef int K = self.wk.P.K, tid, nthr = self.nthr
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
        cdef GridPoints at = GridPoints(Zt=_data_or_null(self.Zt), cell_of=self.cellsp, lo=self.lop,
                                        delta=self.deltap, n=n, ndim=ndim)
        with nogil:
            for b in prange(nblk, num_threads=nthr, schedule='dynamic'):
                tid = _thread_id()
                i0 = b * B
                m = min(B, n - i0)
                _block_interp(Tl, self.TK, K, &at, i0, m, &av[tid, 0])
                for j in range(m):
                    tv[i0 + j] = _row_posterior(&av[tid, j * K], &logprior[0], K, y[i0 + j],
                                                &pp[(i0 + j) * K] if posteriors else NULL)
        return post

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
        with nogil:
            self._point_terms(&post[0, 0])
            self._sample_sums()
            self._sample_terms()
            self._move_grids()
        return dZ

    cdef void _point_terms(self, const double* post) noexcept nogil:
        """Each point's terms as an evaluation point (into _dZ), and each
        (column, block)'s a weights binned linearly (into _part_a)."""
        cdef Py_ssize_t n = self.n, nblk = self.nblk, TK = self.TK, B = self.B, it, t, i, i0, i1, g
        cdef const Problem* P = &self.wk.P
        cdef int K = P.K, k
        cdef double* PA = self.part_ap
        cdef double* pa
        cdef const double* row
        cdef double u, a, e
        for it in prange(self.ndim * nblk, num_threads=self.nthr, schedule='dynamic'):
            t = it // nblk
            i0 = (it % nblk) * B
            i1 = min(n, i0 + B)
            pa = &PA[it * TK]
            memset(pa, 0, TK * sizeof(double))
            for i in range(i0, i1):
                g = self.cellsp[t * n + i]
                u = _cell_frac(self.Ztp[t * n + i], self.lop[t], self.deltap[t], g)
                row = &self.logS_linp[t * TK + g * K]
                e = 0.0
                for k in range(K):
                    a = ((1.0 if P.y[i] == k else 0.0) - post[i * K + k]) * _point_weight(P, i)
                    # a class whose density underflowed at a grid point (-inf there:
                    # thousands of bandwidths from all its points) has posterior 0
                    # here and adds nothing to the value's slope, not 0 * inf
                    if a != 0.0:
                        e = e + a * (row[K + k] - row[k])
                    _bin_linear(&pa[k], g, K, u, a)
                self.dZp[t * n + i] = e

    cdef void _sample_sums(self) noexcept nogil:
        """Per column: c = A / f on the grid (the blocks' a weights added in
        order), its sums with K (_Phi) and with psi (_Psi), and the kernel's
        share of n dl/ddelta (_kdelta)."""
        cdef const Problem* P = &self.wk.P
        cdef Py_ssize_t ndim = self.ndim, nblk = self.nblk, TK = self.TK, t, j
        cdef int K = P.K, k, tid, nthr = self.nthr, inner = nthr if ndim == 1 else 1
        cdef double* Phi = self.Phip
        cdef double* Psi = self.Psip
        cdef double* PA = self.part_ap
        cdef double* kd = self.kdeltap
        cdef const double* Wb = self.part_linp  # block 0 of each column: its binned weights
        cdef const double* Tl = self.logS_linp
        cdef double* pa
        cdef Column* col
        cdef Support sp
        cdef GridSum column_sum
        cdef double a, kern
        for t in prange(ndim, num_threads=min(ndim, nthr), schedule='dynamic'):
            tid = _thread_id()
            col = &self.wk.cols[tid]
            pa = &PA[t * nblk * TK]
            sp = self._summing_column(t, tid, col, self.lop[t], self.deltap[t], pa)
            for j in range(TK):
                # |c| from logs: f may be far below A's scale
                a = pa[j]
                pa[j] = 0.0 if a == 0.0 else (exp(log(a) - Tl[t * TK + j]) if a > 0.0
                                              else -exp(log(-a) - Tl[t * TK + j]))
            column_sum = GridSum(ker=&P.ker, weights=pa, S=&Phi[t * TK], D=NULL, logs=False, anchors_all=True,
                                 eval_all=True, decays=NULL, have_decays=False)
            _grid_sums(P, col, &sp, &column_sum, inner)
            # psi has one order more: its decay rows differ, unless they hold the exps alone
            column_sum = GridSum(ker=&self.psi, weights=pa, S=&Psi[t * TK], D=NULL, logs=False,
                                 anchors_all=True, eval_all=True, decays=NULL, have_decays=not P.shared)
            _grid_sums(P, col, &sp, &column_sum, inner)
            # the binned weights lie on the support: the rest of the grid adds nothing
            kern = 0.0
            for j in range(sp.m):
                for k in range(K):
                    kern = kern + Wb[t * nblk * TK + sp.weighted[j] * K + k] * Psi[t * TK + sp.weighted[j] * K + k]
            kd[t] = kern / self.deltap[t]

    cdef void _sample_terms(self) noexcept nogil:
        """Each point's sample-point term and dz = (dl/ds) / delta (into
        _dZ), and each (column, block)'s edge (_EDGE's fields)."""
        cdef const Problem* P = &self.wk.P
        cdef Py_ssize_t n = self.n, nblk = self.nblk, TK = self.TK, B = self.B, it, t, i, i0, i1, g, imin, imax
        cdef int k
        cdef const double* Phi = self.Phip
        cdef double* edge = self.edgep
        cdef const double* Zp = self.Ztp
        cdef double* dv = self.dZp
        cdef double d, sv
        cdef double* ed
        for it in prange(self.ndim * nblk, num_threads=self.nthr, schedule='dynamic'):
            t = it // nblk
            i0 = (it % nblk) * B
            i1 = min(n, i0 + B)
            ed = &edge[it * _EDGE]
            ed[0] = 0.0
            ed[1] = 0.0
            imin = i0
            imax = i0
            for i in range(i0, i1):
                k = P.y[i]
                g = self.cellsp[t * n + i]
                d = dv[t * n + i] + _sample_weight(P, i) * (Phi[t * TK + (g + 1) * P.K + k] - Phi[t * TK + g * P.K + k])
                sv = (Zp[t * n + i] - self.lop[t]) / self.deltap[t]
                dv[t * n + i] = d / self.deltap[t]
                ed[0] = ed[0] - d / self.deltap[t]
                ed[1] = ed[1] - sv * d / self.deltap[t]
                if Zp[t * n + i] < Zp[t * n + imin]:
                    imin = i
                if Zp[t * n + i] > Zp[t * n + imax]:
                    imax = i
            ed[2] = Zp[t * n + imin]
            ed[3] = Zp[t * n + imax]
            ed[4] = <double> imin
            ed[5] = <double> imax

    def part_tables(self):
        """The grid side's tables a part's set_tables takes: (logS_lin,)."""
        return (self.logS_lin,)

    def set_tables(self, const double[::1] lo, const double[::1] delta, logS_lin):
        """A part's tables, the grid side's part_tables, on the grids its
        points were binned on (part_bin)."""
        self._check_built()
        self._set_axes(lo, delta)
        self._copy_parts(logS_lin, self.logS_lin, "logS_lin")

    cdef object _gradient_weights(self):
        # the a weights binned linearly [ndim, nblk, TK]
        return self._part_a

    def merge_gradient(self, part_a):
        """The grid side's: the kernel sums Phi [ndim, TK] of c = A / f, A
        the parts' a weights (part_gradient's, their blocks in order), for
        part_sample; the kernel's share of the grid's motion is kept for
        merge_motion."""
        self._check_grid_side("merge_gradient")
        self._copy_parts(part_a, self._part_a, "part_a")
        with nogil:
            self._sample_sums()
        return self._Phi.copy()

    def part_sample(self, Phi):
        """A part's sample-point terms, read from Phi (merge_gradient's):
        each (column, block)'s edge [ndim, nblk, 4], its shares of n dl/dlo
        and n dl/ddelta and its extremes of z, for merge_motion."""
        if self._dZ is None:
            raise ValueError("call part_gradient first")
        self._copy_parts(Phi, self._Phi, "Phi")
        with nogil:
            self._sample_terms()
        return self._part_edges()


cdef class InterpGrid(_GridEvaluator):
    """The journal's binned objective: each column's class log densities on
    ``nbin`` grid points interpolated linearly at the points, and the exact
    derivative of that value."""

    cdef GridTables _tables_for(self, Py_ssize_t ndim, bint gradient):
        return InterpGridTables(ndim, self.y0, self.K, self.h, self.nbin, self.eps, self.beta, gradient,
                                self.most_threads, self.w)
