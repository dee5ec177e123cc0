# The objective's column passes: their types, the class-structure object a
# fit keeps, and small helpers inlined wherever they are cimported (see _passes.pyx).
from libc.math cimport exp, log, INFINITY

from pyopnb._ksum cimport Kernel, Tables


cdef struct Problem:
    Py_ssize_t n
    int K
    const int* y            # class codes 0..K-1
    const double* h         # bandwidth of each class
    bint shared             # one bandwidth for every class (every R fit): one decay per gap
    const double* wcls      # 1 / (n_k h_k)
    const double* wh        # wcls / h_k: a sample point's weight derivative per unit of its D
    int mode                # EXACT or LINEAR (_core)
    Py_ssize_t nbin
    double eps              # grid widening
    Kernel ker


cdef struct Column:
    # scratch for one column; weights and sums [., K] in class order
    Py_ssize_t G            # anchors in use
    double* anchors         # G
    Py_ssize_t* order       # n: points in increasing z (EXACT)
    Py_ssize_t* bin         # n: grid cell of each point (binned)
    Py_ssize_t* lo          # n: last anchor <= z_i
    Py_ssize_t m            # evaluation rows: sorted points, grid points, or points
    const double* ev        # position of each evaluation row: the anchors, or the column's z (not owned)
    Py_ssize_t* evlo        # max(n, G): last anchor <= that position
    Py_ssize_t* row         # n: the evaluation row that gives point i its values
    double* Wa              # G x K: weights on the anchors
    double* Wpts            # n x K: the c weights of every class
    Py_ssize_t* ident       # max(n, G): 0, 1, 2, ...
    Tables tb
    double* S               # max(n, G) x K: every class's sums
    double* D
    double lo_grid
    double delta


cdef inline int _wave(Py_ssize_t ndim, int nthr) noexcept nogil:
    """Columns taken at a time by the column passes: as even waves as nthr
    threads allow (20 columns on 16 threads: two waves of 10). Each column
    of a wave has its own scratch; the passes over the points then use every
    thread whatever the wave's size."""
    cdef Py_ssize_t nwave = (ndim + nthr - 1) // nthr
    return <int> max(1, (ndim + nwave - 1) // nwave)


cdef inline Py_ssize_t _grid_cell(double z, double lo, double delta, Py_ssize_t nbin) noexcept nogil:
    """R's bin of z: floor((z - lo) / delta), kept in 0..nbin-2."""
    return _grid_cell_of((z - lo) / delta, nbin)


cdef inline Py_ssize_t _grid_cell_of(double u, Py_ssize_t nbin) noexcept nogil:
    """_grid_cell from u = (z - lo) / delta."""
    # truncation is floor on [1, nbin - 1), and cheaper than a call to floor
    if u < 1.0:
        return 0
    if u >= nbin - 1:
        return nbin - 2
    return <Py_ssize_t> u


cdef inline void _min_max(const double* z, Py_ssize_t n, double* zmin, double* zmax) noexcept nogil:
    """The extremes of z[:n] (n >= 1), four running pairs at a time: a single
    pair waits on each comparison. Extremes are exact: any order finds them
    (a tie of -0 and +0 may keep either, and both give the same grid)."""
    cdef double mn[4]
    cdef double mx[4]
    cdef Py_ssize_t i, j
    for j in range(4):
        mn[j] = z[0]
        mx[j] = z[0]
    i = 1
    while i + 4 <= n:
        for j in range(4):
            if z[i + j] < mn[j]:
                mn[j] = z[i + j]
            if z[i + j] > mx[j]:
                mx[j] = z[i + j]
        i += 4
    while i < n:
        if z[i] < mn[0]:
            mn[0] = z[i]
        if z[i] > mx[0]:
            mx[0] = z[i]
        i += 1
    for j in range(1, 4):
        if mn[j] < mn[0]:
            mn[0] = mn[j]
        if mx[j] > mx[0]:
            mx[0] = mx[j]
    zmin[0] = mn[0]
    zmax[0] = mx[0]


cdef inline void _set_grid(Column* col, double lo, double delta, Py_ssize_t nbin, bint fill) noexcept nogil:
    """A binned column's grid, lo + g delta for g < nbin, as its anchors
    (only its lo and delta without fill: a sparse support's sums take the
    few grid points they need from _grid_at)."""
    cdef Py_ssize_t g
    col.lo_grid = lo
    col.delta = delta
    if fill:
        for g in range(nbin):
            col.anchors[g] = _grid_at(col, g)


cdef inline double _grid_at(const Column* col, Py_ssize_t g) noexcept nogil:
    """Grid point g of a binned column."""
    return col.lo_grid + g * col.delta


cdef inline double _grid_delta(double zmin, double zmax, double eps, Py_ssize_t nbin, double* lo) noexcept nogil:
    """R's grid of a column: lo = zmin - eps, and the spacing returned, so that
    nbin points span [zmin - eps, zmax + eps]."""
    lo[0] = zmin - eps
    return (zmax + eps - lo[0]) / (nbin - 1)


cdef inline void _bin_linear(double* grid, Py_ssize_t g, Py_ssize_t stride, double u, double w) noexcept nogil:
    """Weight w at fraction u of cell g, split linearly between its grid points
    (entries g * stride and (g + 1) * stride)."""
    grid[g * stride] += (1.0 - u) * w
    grid[(g + 1) * stride] += u * w


cdef inline void _grid_motion(double* gz, Py_ssize_t imin, Py_ssize_t imax, double d_lo, double d_delta,
                              Py_ssize_t nbin) noexcept nogil:
    """The grid's ends follow z's extremes (lo = zmin - eps, delta = (zmax - zmin
    + 2 eps) / (nbin - 1)): d/dlo and d/ddelta of the value go to the points at
    the minimum and the maximum."""
    gz[imin] += d_lo - d_delta / (nbin - 1)
    gz[imax] += d_delta / (nbin - 1)


cdef inline double _row_posterior(const double* logf, const double* logprior, int K, int y,
                                 double* post) noexcept nogil:
    """One row of log_posteriors: the row's term of l, and (unless post is
    NULL) its posteriors."""
    cdef int k
    cdef double mx = -INFINITY, ssum = 0.0, v, e
    for k in range(K):
        v = logprior[k] + logf[k]
        if v > mx:
            mx = v
    for k in range(K):
        v = logprior[k] + logf[k] - mx
        # the largest class's term is exp(0) = 1 exactly: one exp fewer a row
        e = 1.0 if v == 0.0 else exp(v)
        if post != NULL:
            post[k] = e
        ssum = ssum + e
    if post != NULL:
        for k in range(K):
            post[k] = post[k] / ssum
    return logprior[y] + logf[y] - (mx + log(ssum))


cdef class _Work:
    cdef Problem P
    cdef int nthr
    cdef Py_ssize_t ncol    # columns of scratch made so far
    cdef Py_ssize_t capacity
    cdef bint points        # scratch for passes over the points (else only grid tables)
    cdef Column* cols
    cdef bint keep          # every column kept between passes (exact sums that fit: _plan)
    cdef Py_ssize_t* hints  # nhint x n: each column's last order, for the next sort (or NULL: _plan)
    cdef Py_ssize_t nhint
    cdef double* Zkept      # nhint x n: the Zt that the kept columns were set up for
    cdef bint kept          # the kept columns hold the last value pass's sums (S and D)
    cdef double* h
    cdef double* wcls
    cdef double* wh
    cdef object y

    cdef int _ensure(self, Py_ssize_t w) except -1
    cdef int _plan(self, Py_ssize_t ndim) except -1
    cdef int _check(self, const int[::1] y, int K, const double[::1] h, int mode, Py_ssize_t nbin) except -1
