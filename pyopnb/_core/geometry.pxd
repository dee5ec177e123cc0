# A projected column's grid: R's cells, the grid's ends and linear binning
# (inlined wherever cimported; this file has no module of its own).

cdef extern from "_core/geometry.h" nogil:
    # u[i] = (z[i] - lo) / delta for i < n, on the vector path level
    void pyopnb_grid_coords(int level, const double* z, double lo, double delta, Py_ssize_t n, double* u)


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


cdef inline void _grid_motion(double* at_min, double* at_max, double d_lo, double d_delta,
                              Py_ssize_t nbin) noexcept nogil:
    """The grid's ends follow z's extremes (lo = zmin - eps, delta = (zmax - zmin
    + 2 eps) / (nbin - 1)): d/dlo and d/ddelta of the value go to the points at
    the minimum and the maximum (their entries of dl/dz; NULL: held by
    another part of the rows). One point at both takes the minimum's first."""
    if at_min != NULL:
        at_min[0] += d_lo - d_delta / (nbin - 1)
    if at_max != NULL:
        at_max[0] += d_delta / (nbin - 1)
