# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""The objective with exact kernel sums: each projected column's points
sorted and summed at themselves, and its exact gradient (the column kind of
passes.pyx's shared passes, and the evaluator ExactPasses)."""
from cython.parallel cimport prange
from libc.stdlib cimport malloc
from libc.string cimport memset

from pyopnb._core.common cimport _region_threads
from pyopnb._core.passes cimport (Problem, Column, ColumnKind, ColumnScratch, _ColumnPasses, _column_sums, _parts,
                                  _sample_weight, _sample_weight_h, PART_ROWS)
from pyopnb._ksum cimport _last_of_ties
from pyopnb._core.sort cimport SortMemo, _argsort_memo

cdef extern from "_core/simd.h" nogil:
    const int PYOPNB_AHEAD
    void pyopnb_prefetch_at(const void* a)
    void pyopnb_prefetch_write(const void* a)

# problems whose columns' scratch fits in this many bytes keep every
# column between the value and the gradient pass (see ExactScratch._plan)
DEF KEEP_BYTES = 256 * 1024 * 1024
# and keep each column's last sort (SortMemo: its keys, order and sorted keys)
# when those fit in this many
DEF MEMO_BYTES = 256 * 1024 * 1024


cdef int _setup(const Problem* P, const double* z, Column* col, SortMemo* memo, int nthr) noexcept nogil:
    """A column's anchors (its points, sorted), evaluation rows (the sorted
    points, each on its anchor) and each point's anchor (memo: the column's
    last sort, or NULL; see _argsort_memo)."""
    cdef Py_ssize_t n = P.n, q
    if _argsort_memo(z, n, col.order, col.anchors, memo, nthr):
        return -1
    col.G = n
    col.m = n
    col.ev = NULL
    # evaluate in sorted order (tables read sequentially); a point's
    # anchor for evaluation is its tie group's last
    _last_of_ties(col.anchors, n, col.evlo)
    cdef Py_ssize_t j
    for q in range(n):
        if q + PYOPNB_AHEAD < n:
            j = col.order[q + PYOPNB_AHEAD]
            pyopnb_prefetch_write(&col.row[j])
            pyopnb_prefetch_write(&col.lo[j])
        col.row[col.order[q]] = q
        col.lo[col.order[q]] = col.evlo[q]
    return 0


cdef void _bin_weights(const Problem* P, Column* col, const double* z, const double* Wpts) noexcept nogil:
    """col.Wa [G, K]: the points' weights on their anchors, in sorted order.

    Wpts [n, K], or NULL for the class weights: point i weighs 1/(n_k h_k)
    in the column of its class k, so only one column per point is touched.
    """
    cdef Py_ssize_t i, q, j
    cdef int c, k, K = P.K
    if Wpts == NULL:
        memset(col.Wa, 0, col.G * K * sizeof(double))
    for q in range(P.n):
        if q + PYOPNB_AHEAD < P.n:
            j = col.order[q + PYOPNB_AHEAD]
            if Wpts != NULL:
                pyopnb_prefetch_at(&Wpts[j * K])
            else:
                pyopnb_prefetch_at(&P.y[j])
                if P.w != NULL:
                    pyopnb_prefetch_at(&P.w[j])
        i = col.order[q]
        if Wpts == NULL:
            k = P.y[i]
            col.Wa[q * K + k] = _sample_weight(P, i)
        else:
            for c in range(K):
                col.Wa[q * K + c] = Wpts[i * K + c]


cdef void _grad(const Problem* P, const double* z, Column* col, double* gz, int nthr) noexcept nogil:
    """The kernel sums of the c weights at the column's points (col.D), the
    derivative of each sample point's class weight, which _sample_terms
    reads at the point's row (see passes.pyx's _point_terms). The column's
    decays are those of its set-up's sums."""
    _column_sums(P, col, z, col.Wpts, False, True, True, nthr)


cdef void _sample_terms(const Problem* P, Column* cols, int w, double* gz0, int nthr) noexcept nogil:
    """Point i as a sample point in the wave's columns: gz[c, i] -= the
    derivative of its class's weight, from the kernel sums of the c weights
    (col.D at the point's row)."""
    cdef Py_ssize_t n = P.n
    cdef Py_ssize_t b
    nthr = _region_threads(nthr, n * w)
    if nthr == 1:
        _sample_rows(P, cols, w, gz0, 0, n)
        return
    for b in prange(_parts(n), num_threads=nthr, schedule='dynamic'):
        _sample_rows(P, cols, w, gz0, b * PART_ROWS, min(n, (b + 1) * PART_ROWS))


cdef inline void _sample_rows(const Problem* P, Column* cols, int w, double* gz0, Py_ssize_t i0,
                              Py_ssize_t i1) noexcept nogil:
    cdef Py_ssize_t n = P.n, i
    cdef int c, k
    for i in range(i0, i1):
        if i + PYOPNB_AHEAD < i1:
            for c in range(w):
                pyopnb_prefetch_at(&cols[c].D[cols[c].row[i + PYOPNB_AHEAD] * P.K])
        k = P.y[i]
        for c in range(w):
            gz0[c * n + i] -= _sample_weight_h(P, i) * cols[c].D[cols[c].row[i] * P.K + k]


cdef ColumnKind _EXACT = ColumnKind(setup=_setup, bin_weights=_bin_weights, grad=_grad, sample_terms=_sample_terms)


cdef class ExactScratch(ColumnScratch):
    """ColumnScratch for exact sums: ExactScratch(y, K, h, 0, 0.0, beta,
    num_threads) (the grid's nbin and eps unused). Where they fit, every
    column is kept between the value and the gradient pass, or each
    column's last sort (_plan)."""

    def __cinit__(self, *args, **kwargs):
        self.P.kind = &_EXACT
        self.G = self.P.n

    @property
    def plan(self):
        """What the last passes kept for the next: "columns" (every column),
        "sorts" (each column's last sort) or None."""
        return "columns" if self.keep else ("sorts" if self.memos != NULL else None)

    cdef int _plan(self, Py_ssize_t ndim) except -1:
        """Whether ndim columns are kept between the value and gradient
        passes: when their scratch fits in KEEP_BYTES. Kept, there is a copy
        of Zt, so that the gradient pass knows when the value pass's columns
        are its own. Columns not kept whose sorts fit in MEMO_BYTES keep each
        column's last sort (every column starts without one): the gradient
        pass, which sets its columns up again, then copies the value pass's
        sorts (_argsort_memo)."""
        cdef Py_ssize_t t, n = self.P.n
        cdef int K = self.P.K
        # a column's scratch per point (see _column_alloc) and its copy of z
        cdef Py_ssize_t per_point = 72 + 32 * K * (self.P.ker.a + 1) + 32 * K + 8
        cdef Py_ssize_t memo_point = 2 * sizeof(double) + sizeof(Py_ssize_t)
        cdef char* block
        cdef bint any_points = self.points and n > 0
        cdef bint keep = any_points and ndim * n * per_point <= KEEP_BYTES
        cdef bint memo = any_points and not keep and ndim * n * memo_point <= MEMO_BYTES
        if keep == self.keep and (self.memos != NULL) == memo and (not (keep or memo) or ndim == self.nplan):
            return 0
        self._forget_plan()
        self.nplan = ndim
        if memo:
            self.memos = <SortMemo*> malloc(ndim * sizeof(SortMemo))
            self.memo_block = malloc(ndim * n * memo_point)
            if self.memos == NULL or self.memo_block == NULL:
                self._forget_plan()
                raise MemoryError()
            block = <char*> self.memo_block
            for t in range(ndim):
                self.memos[t].x = <double*> &block[t * n * memo_point]
                self.memos[t].xs = <double*> &block[(t * memo_point + sizeof(double)) * n]
                self.memos[t].order = <Py_ssize_t*> &block[(t * memo_point + 2 * sizeof(double)) * n]
                self.memos[t].order[0] = -1
        if keep:
            self.Zkept = <double*> malloc(ndim * n * sizeof(double))
            if self.Zkept == NULL:
                raise MemoryError()
            self.keep = True
        return 0


cdef class ExactPasses(_ColumnPasses):
    """l with exact kernel sums, each column's points sorted, and its exact
    gradient. ``squared_priors``: R's f_NB_exact, whose value multiplies by
    PI_k twice (its gradient, R's df_NB_exact, does not)."""

    def __init__(self, y0, h, PI, int threads, const double[::1] beta, bint squared_priors=False, w=None):
        _ColumnPasses.__init__(self, y0, h, PI, threads, 0, squared_priors)
        self.scratch = ExactScratch(self.y0, self.K, self.h, 0, 0.0, beta, self.threads, True, w)
