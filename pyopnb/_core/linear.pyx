# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""The paper's binned objective: each projected column's points binned
linearly on a grid of nbin points (each point's weight split between its two
grid points), its class densities summed at the points from the binned
weights, and the exact derivative of that value (the column kind of
passes.pyx's shared passes, and the evaluator LinearPasses)."""
from libc.string cimport memset

from pyopnb._core.passes cimport Problem, Column, ColumnKind, ColumnScratch, _ColumnPasses, _set_grid
from pyopnb._ksum cimport Anchors, EvalRows, _deposit, _evaluate, _recurse
from pyopnb._core.geometry cimport _bin_linear, _grid_cell, _grid_delta, _grid_motion, _min_max
from pyopnb._core.sort cimport SortMemo


cdef int _setup(const Problem* P, const double* z, Column* col, SortMemo* memo, int nthr) noexcept nogil:
    """A column's anchors (its grid), evaluation rows (its points, where they
    are) and each point's cell and anchor (memo unused: nothing is sorted)."""
    cdef Py_ssize_t n = P.n, i, g
    cdef double zmin, zmax, lo, delta
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


cdef void _bin_weights(const Problem* P, Column* col, const double* z, const double* Wpts) noexcept nogil:
    """col.Wa [G, K]: the points' weights split between their grid points.

    Wpts [n, K], or NULL for the class weights: point i weighs 1/(n_k h_k)
    in the column of its class k, so only one column per point is touched.
    """
    cdef Py_ssize_t i, g
    cdef int c, K = P.K, c0 = 0, c1 = P.K
    cdef double frac, w = 0.0
    memset(col.Wa, 0, col.G * K * sizeof(double))
    for i in range(P.n):
        g = col.bin[i]
        if Wpts == NULL:
            c0 = P.y[i]
            c1 = c0 + 1
            w = P.wpt[i]
        frac = (z[i] - col.lo_grid) / col.delta - g
        for c in range(c0, c1):
            if Wpts != NULL:
                w = Wpts[i * K + c]
            _bin_linear(&col.Wa[c], g, K, frac, w)


cdef void _grad(const Problem* P, const double* z, Column* col, double* gz, int nthr) noexcept nogil:
    """The sample-point part of gz = n * d l / d z_t for this column, after
    passes.pyx's _point_terms (see the paper's T1, T2).

    With c_ik = (1{y_i = k} - P_ik) / f_kt(z_it) (P the posteriors), the derivative is
      - sum_k c_ik D_k(z_i) / h_k            (point i as an evaluation point: _point_terms)
      + d/dz_i of the class-y_i weights      (point i as a sample point)
    The second is a kernel sum of the c weights (read at the point's anchor for
    exact sums, exact.pyx); with linear binning it acts through the binning
    fractions and the grid's ends (min and max of z), added to gz here.
    """
    cdef Py_ssize_t n = P.n, i, g, G = col.G, imin, imax
    cdef int k, c, K = P.K, a1 = P.ker.a + 1
    cdef double d_lo, d_delta, gam, b, u
    # Phi (ksum) and Psi (dksum) of the c weights at the grid points,
    # from the points where they really are.
    memset(col.tb.Ldep, 0, G * K * a1 * sizeof(double))
    memset(col.tb.R, 0, G * K * a1 * sizeof(double))
    cdef Anchors A = Anchors(x=col.anchors, G=G, r=K, h=P.h, shared=P.shared, ker=&P.ker)
    # every grid point, on its anchor
    cdef EvalRows grid_rows = EvalRows(e=NULL, lo=col.ident, m=G, outrow=NULL, S=col.S, D=col.D, logS=False)
    _deposit(&A, z, col.Wpts, n, col.lo, col.tb.Ldep, col.tb.R)
    _recurse(&A, col.tb.Ldep, a1, &col.tb, False, True, nthr)
    _evaluate(&A, &grid_rows, col.tb.Ldep, a1, &col.tb)
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
        b = P.wpt[i] * (col.S[(g + 1) * K + k] - col.S[g * K + k])
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
    _grid_motion(&gz[imin], &gz[imax], d_lo, d_delta, P.nbin)


cdef ColumnKind _LINEAR = ColumnKind(setup=_setup, bin_weights=_bin_weights, grad=_grad, sample_terms=NULL)


cdef class LinearScratch(ColumnScratch):
    """ColumnScratch for linear binning: LinearScratch(y, K, h, nbin, eps,
    beta, num_threads), nbin grid points per column widened by eps at each
    end."""

    def __cinit__(self, *args, **kwargs):
        if self.P.nbin < 2:
            raise ValueError("need nbin >= 2")
        self.P.kind = &_LINEAR
        self.deposits = self.points


cdef class LinearPasses(_ColumnPasses):
    """The paper's binned l: linear binning on ``nbin`` grid points per
    column (widened by ``eps`` at each end), each point's densities summed
    from the binned weights, and the exact derivative of that value."""

    def __init__(self, y0, h, PI, int threads, Py_ssize_t nbin, const double[::1] beta, double eps, w=None):
        if nbin < 2:
            raise ValueError("need nbin >= 2")
        _ColumnPasses.__init__(self, y0, h, PI, threads, nbin, False)
        self.scratch = LinearScratch(self.y0, self.K, self.h, nbin, eps, beta, self.threads, True, w)
