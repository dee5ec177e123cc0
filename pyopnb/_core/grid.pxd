# The grids' shared support (grid.pyx), for the binned objectives on each column's grid: R's
# (r_grid.pyx), the paper's (linear.pyx) and the journal's (interp_grid.pyx).
from pyopnb._ksum cimport Kernel
from pyopnb._core.passes cimport Column, Problem, ColumnScratch
from pyopnb._core.evaluator cimport CoreEvaluator
from pyopnb._core.products cimport pyopnb_running


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


cdef inline Py_ssize_t _block_len(int K) noexcept nogil:
    # points per block: a block's products (2 x K each) stay in cache; a
    # function of K only, so that block sums do not depend on the threads
    return max(8, 4096 // K)


cdef inline double _cell_frac(double z, double lo, double delta, Py_ssize_t g) noexcept nogil:
    """A point's place in its cell g, in [0, 1): its linear binning fraction."""
    return (z - lo) / delta - g


cdef object _column_pointers(const double* T1, const double* T2, Py_ssize_t TK, const int* cell_of, Py_ssize_t n,
                             const Py_ssize_t[::1] cols)


cdef void _block_products(int level, const Py_ssize_t[:, ::1] ptrs, int ncol, int K, Py_ssize_t i0, Py_ssize_t m,
                          pyopnb_running first, pyopnb_running second) noexcept nogil




cdef struct GridSum:
    # one kernel sum on a column's grid (_grid_sums)
    const Kernel* ker       # the kernel: the fit's, or the journal's psi(u) = u K'(u)
    const double* weights   # [nbin, K]: the grid weights, each class's column in its bandwidth
    double* S               # [nbin, K]: the sums, or NULL (with logs, their logs)
    double* D               # [nbin, K]: the sums of the kernel's derivative, or NULL
    bint logs               # S in logs, summed in log space (finite however far a grid point is from a
                            # class's weights: the journal's tables)
    bint anchors_all        # the weights lie on the whole support (linear binning), else on the cells
    bint eval_all           # the sums wanted on the whole support, else at the cells (R's readings)
    double* decays          # where the anchors' decays go (NULL: the column scratch's table)
    bint have_decays        # they are there already (the same anchors as an earlier sum)


cdef void _grid_sums(const Problem* P, Column* col, Support* sp, const GridSum* g, int nthr) noexcept nogil


# a (column, block)'s edge of a gradient whose grid moves with z's extremes (the paper's and the journal's):
# its shares of n dl/dlo and n dl/ddelta, its extremes of z, and the rows (within the part) that hold them
cdef enum:
    _EDGE = 6


cdef struct GridMotion:
    # a column's grid motion: n dl/dlo and n dl/ddelta, and the blocks whose points are z's extremes
    double d_lo
    double d_delta
    Py_ssize_t bmin
    Py_ssize_t bmax


cdef GridMotion _merge_edges(const double* edge, Py_ssize_t nblk, Py_ssize_t stride, double kdelta) noexcept nogil


cdef class GridTables:
    cdef ColumnScratch wk
    cdef readonly Py_ssize_t ndim, n, nbin
    cdef Py_ssize_t TK
    cdef readonly Py_ssize_t nblk, B   # the blocks of rows the points' sums go by, and rows per block
    cdef bint _logs_made
    cdef bint supports_made         # each column's support is its points' (else a part's, binned for the grid side)
    cdef readonly bint has_gradient
    # each point's whole class weight binned into its cell too (R's gradient reads those tables)
    cdef bint bins_simple
    cdef readonly object Zt, lo, delta, S_lin, logS_lin, S_simple, D_simple
    cdef object _post, _terms, _dZ, _part_lin, _part_simple, _zmin, _zmax
    # each column's support (see Support), each thread's scratch for one
    cdef object _weighted, _occupied, _occupied_pos, _nweighted, _noccupied, _sparse, _mask
    cdef object _support_positions, _support_weights, _stamp, _cur
    # R's gradient's decays over each column's cells; each thread's decays of gaps of k cells
    cdef object _gap_rows
    # subset_values' scaled exponentials of the log tables, at each column's cells
    cdef object _cell_exps
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
    cdef double* part_simplep       # the same binned whole into the cells (R's tables with a gradient; else NULL)
    cdef Py_ssize_t gap_row_len
    cdef Kernel psi
    cdef readonly int[:, ::1] cells  # each point's grid cell in each column
    cdef object _cells
    cdef int* cellsp
    cdef const double* Ztp          # Z' [ndim, n] of the passes (self.Zt's data)
    cdef double* lop                # [ndim]: each column's grid: its first point
    cdef double* deltap             # and spacing
    cdef double* zminp              # [ndim, nblk]: each (column, block)'s extremes
    cdef double* zmaxp
    cdef double* dZp                # _dZ's data (NULL until a gradient makes it)
    # a moving grid's gradient (the paper's, the journal's): each (column, block)'s edge [ndim, nblk, _EDGE],
    # and each column's share of n dl/ddelta that is no block's (the journal's kernel share; else 0)
    cdef object _edge, _kdelta
    cdef double* edgep
    cdef double* kdeltap

    cdef int nthr                   # the passes' team: the threads given, capped by a pass's work (_run_on)

    cdef void _run_on(self, int threads)
    cdef void _move_grids(self) noexcept nogil
    cdef void _take(self, object Zt) except *
    cdef void _set_axes(self, const double[::1] lo, const double[::1] delta) except *
    cdef void _extremes(self) noexcept nogil
    cdef void _bin(self) noexcept nogil
    cdef void _make_tables(self, const unsigned char* marks) noexcept nogil
    cdef void _column_tables(self, Py_ssize_t t, Column* col, Support* sp, int inner) noexcept nogil
    cdef void _point_terms(self, const double* post) noexcept nogil
    cdef object _gradient_weights(self)
    cdef Support _column_support(self, Py_ssize_t t, int tid, bint build) noexcept nogil
    cdef Support _summing_column(self, Py_ssize_t t, int tid, Column* col, double lo, double delta,
                                 double* parts) noexcept nogil


cdef class _GridEvaluator(CoreEvaluator):
    cdef readonly Py_ssize_t nbin
    cdef object beta
    cdef double eps
    cdef object w                   # the points' weights (None: every point weighs 1)
    cdef dict _tables

    cdef GridTables _tables_for(self, Py_ssize_t ndim, bint gradient)
    cdef GridTables _updated(self, object Zt, bint gradient)
