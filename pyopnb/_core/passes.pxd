# The objective's column passes (exact.pyx's exact sums): their types, the
# class-structure object a fit keeps, and small helpers inlined wherever they are cimported (see passes.pyx).
from libc.math cimport exp, log, INFINITY

from pyopnb._ksum cimport Kernel, RunningSums
from pyopnb._core.common cimport _block_sum
from pyopnb._core.sort cimport SortMemo
from pyopnb._core.evaluator cimport CoreEvaluator


cdef struct Problem
cdef struct Column


# What an evaluation does to one projected column: chosen once, when its scratch is made (ExactScratch),
# and read through Problem.kind by the shared passes.
ctypedef int (*ColumnSetup)(const Problem* P, const double* z, Column* col, SortMemo* memo,
                            int nthr) noexcept nogil
ctypedef void (*BinWeights)(const Problem* P, Column* col, const double* z, const double* Wpts) noexcept nogil
ctypedef void (*ColumnGrad)(const Problem* P, const double* z, Column* col, double* gz, int nthr) noexcept nogil
ctypedef void (*SampleTerms)(const Problem* P, Column* cols, int w, double* gz0, int nthr) noexcept nogil


cdef struct ColumnKind:
    ColumnSetup setup       # anchors, evaluation rows and each point's anchor
    BinWeights bin_weights  # points' weights onto the anchors
    ColumnGrad grad         # a column's sample-point part of the gradient, after the points' terms
    SampleTerms sample_terms  # the wave's sample-point part read at each point's row, or NULL: grad's alone


cdef struct Problem:
    # a problem as the compiled passes see it: resolved once, when its scratch is made (ColumnScratch),
    # its threads again when the evaluator is told another count (use_threads)
    Py_ssize_t n
    int K
    const int* y            # class codes 0..K-1
    const double* h         # bandwidth of each class
    bint shared             # one bandwidth for every class (every R fit): one decay per gap
    const double* wcls      # [K]: 1 / (W_k h_k), W_k class k's total weight (n_k without weights)
    const double* wcls_h    # [K]: wcls_k / h_k, a point's sample weight over its bandwidth without weights
    const double* w         # n: each point's weight w_i in the likelihood, or NULL: every point weighs 1
    double W                # the points' total weight (n without weights)
    const ColumnKind* kind  # the evaluation's column passes (NULL: a grid's tables, which make their own)
    Py_ssize_t nbin
    double eps              # grid widening
    Kernel ker
    int simd                # the vector path (products.h's per-point kernels), fixed when the scratch is made
    int n_threads           # the threads of the next passes (each region takes what its work pays for)


cdef struct Column:
    # scratch for one column; weights and sums [., K] in class order
    Py_ssize_t G            # anchors in use
    double* anchors         # G
    Py_ssize_t* order       # n: points in increasing z (exact)
    Py_ssize_t* bin         # n: grid cell of each point (binned)
    Py_ssize_t* lo          # n: last anchor <= z_i
    Py_ssize_t m            # evaluation rows: sorted points, grid points, or points
    const double* ev        # position of each evaluation row (the column's z, not owned), or NULL: on its anchor
    Py_ssize_t* evlo        # max(n, G): last anchor <= that position
    Py_ssize_t* row         # n: the evaluation row that gives point i its values
    double* Wa              # G x K: weights on the anchors
    double* Wpts            # n x K: the c weights of every class
    Py_ssize_t* ident       # max(n, G): 0, 1, 2, ...
    RunningSums tb
    double* S               # max(n, G) x K: every class's sums
    double* D
    double lo_grid
    double delta


# rows a part of a pass over the points holds: parts are taken by threads as they come free, so a thread on a busy
# core does fewer (the points are independent: any split gives the same bits)
cdef enum:
    PART_ROWS = 4096


cdef inline Py_ssize_t _parts(Py_ssize_t n) noexcept nogil:
    return (n + PART_ROWS - 1) // PART_ROWS


cdef inline double _sample_weight(const Problem* P, Py_ssize_t i) noexcept nogil:
    """Point i's weight as a sample point, w_i / (W_k h_k) (k its class): without weights the class's own
    double. Made where it is read: an n-sized table of it would be state a part of the rows holds."""
    return P.wcls[P.y[i]] if P.w == NULL else P.w[i] * P.wcls[P.y[i]]


cdef inline double _sample_weight_h(const Problem* P, Py_ssize_t i) noexcept nogil:
    """_sample_weight over its class's bandwidth: its weight's derivative per unit of its D. Without weights
    the class's quotient, made once (a division a point and column was a quarter of R's binned gradient)."""
    return P.wcls_h[P.y[i]] if P.w == NULL else _sample_weight(P, i) / P.h[P.y[i]]


cdef inline double _point_weight(const Problem* P, Py_ssize_t i) noexcept nogil:
    """Point i's weight in the likelihood (1 without weights: a product by it keeps the bits)."""
    return 1.0 if P.w == NULL else P.w[i]


cdef inline double _terms_mean(const double* terms, const Problem* P) noexcept nogil:
    """l from the points' terms, each times its weight, summed by the fixed blocks of rows (whatever the
    threads; point order up to one block), over the total weight (without weights: over n)."""
    return _block_sum(terms, P.w, P.n) / (<double> P.n if P.w == NULL else P.W)


cdef inline int _wave(Py_ssize_t ndim, int nthr) noexcept nogil:
    """Columns taken at a time by the column passes: as even waves as nthr
    threads allow (20 columns on 16 threads: two waves of 10). Each column
    of a wave has its own scratch; the passes over the points then use every
    thread whatever the wave's size."""
    cdef Py_ssize_t nwave = (ndim + nthr - 1) // nthr
    return <int> max(1, (ndim + nwave - 1) // nwave)


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


cdef int _column_alloc(Column* col, Py_ssize_t n, Py_ssize_t G, int K, bint shared, int a1,
                       bint points) noexcept nogil
cdef void _column_free(Column* col) noexcept nogil
cdef void _column_sums(const Problem* P, Column* col, const double* z, const double* Wpts,
                      bint want_S, bint want_D, bint have_T, int nthr) noexcept nogil


cdef class ColumnScratch:
    cdef Problem P
    cdef int most           # the threads its per-thread scratch is made for: P.n_threads at most
    cdef Py_ssize_t G       # anchors of a column: the points (exact) or the grid
    cdef Py_ssize_t ncol    # columns of scratch made so far
    cdef Py_ssize_t capacity
    cdef bint points        # scratch for passes over the points (else only grid tables)
    cdef Column* cols
    cdef bint keep          # every column kept between passes (exact sums that fit: ExactScratch._plan)
    cdef SortMemo* memos    # nplan: each column's last sort, for its next (or NULL)
    cdef Py_ssize_t nplan   # the columns the kept columns' copy of Zt and the memos were made for
    cdef void* memo_block   # the memos' arrays
    cdef double* Zkept      # ndim x n: the Zt that the kept columns were set up for
    cdef bint kept          # the kept columns hold the last value pass's sums (S and D)
    cdef double* h
    cdef double* wcls
    cdef object w                   # the weights as given (float64 [n]), or None
    cdef object y
    cdef readonly object beta       # the kernel's coefficients, as given

    cdef int _ensure(self, Py_ssize_t w) except -1
    cdef int _plan(self, Py_ssize_t ndim) except -1
    cdef void _forget_plan(self)


cdef class _ColumnPasses(CoreEvaluator):
    cdef ColumnScratch scratch
    cdef readonly Py_ssize_t nbin
    cdef readonly bint squared_priors
    cdef object value_PI
    # subset_values' chosen rows of Z' and their products (pr, acc), or None
    cdef object _chosen_rows
    cdef tuple _chosen_products

    cdef tuple _products(self, Zt, tuple init)
