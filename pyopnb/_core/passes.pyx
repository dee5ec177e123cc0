# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""The OPNB objective and gradient, one projected column at a time: the
passes every column evaluation shares.

Every column of Z = XV is set up (sorted, or binned on a grid) and its
class densities summed by the recursion of _ksum; the passes over the points
(products over the columns, per-point gradient terms) then use every thread.
What an evaluation does to a column (its set-up, binning and sample-point
gradient) is its ColumnKind, chosen once when its scratch is made:
exact.pyx's exact sums, whose evaluator ExactPasses lives there too. The
binned objectives sum on each column's grid instead (grid.pyx's support:
R's r_grid.pyx, the paper's linear.pyx, the journal's interp_grid.pyx).
"""
import math

import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memcmp, memcpy, memset

from pyopnb._core.common cimport _MAX_ORDER, _region_threads
from pyopnb._core.scratch cimport scratch_alloc, scratch_free
from pyopnb._ksum cimport Anchors, EvalRows, _make_kernel, _sums_on_anchors, _tables_alloc, _tables_free
from pyopnb._core.products cimport (pyopnb_grad_points, pyopnb_grad_points_at_rows, pyopnb_grad_tables,
                                   pyopnb_log_products, pyopnb_rows_products, pyopnb_running,
                                   pyopnb_tables_at_rows)
from pyopnb._core.sort cimport SortMemo
from pyopnb._core.evaluator cimport CoreEvaluator
from pyopnb._core.simd cimport simd_path

from pyopnb._core.posteriors import product_posteriors

cnp.import_array()

cdef int _column_alloc(Column* col, Py_ssize_t n, Py_ssize_t G, int K, bint shared, int a1,
                       bint points) noexcept nogil:
    # G anchors: the points (exact) or the grid; evaluation rows: the points.
    # Sized to what the kind uses: a binned fit at n = 1e6 needs grid-sized
    # tables only. Without points, only the grid's tables (R's binned
    # objective, r_grid.pyx, keeps its own buffers for the points).
    cdef Py_ssize_t N = (n if n > G else G) if points else G
    cdef Py_ssize_t npt = n if points else 0
    memset(col, 0, sizeof(Column))
    col.anchors = <double*> scratch_alloc(G * sizeof(double))
    col.order = <Py_ssize_t*> scratch_alloc(npt * sizeof(Py_ssize_t))
    col.bin = <Py_ssize_t*> scratch_alloc(npt * sizeof(Py_ssize_t))
    col.lo = <Py_ssize_t*> scratch_alloc(npt * sizeof(Py_ssize_t))
    col.row = <Py_ssize_t*> scratch_alloc(npt * sizeof(Py_ssize_t))
    col.evlo = <Py_ssize_t*> scratch_alloc(N * sizeof(Py_ssize_t))
    col.Wa = <double*> scratch_alloc(G * K * sizeof(double))
    col.Wpts = <double*> scratch_alloc(npt * K * sizeof(double))
    col.ident = <Py_ssize_t*> scratch_alloc(N * sizeof(Py_ssize_t))
    col.S = <double*> scratch_alloc(N * K * sizeof(double))
    col.D = <double*> scratch_alloc(N * K * sizeof(double))
    # no deposit tables: every sample point sits on an anchor (exact), or the grid's tables take none
    if (_tables_alloc(&col.tb, G, K, a1, shared, False) or col.anchors == NULL
            or col.order == NULL or col.bin == NULL or col.lo == NULL or col.row == NULL
            or col.evlo == NULL or col.Wa == NULL or col.Wpts == NULL
            or col.ident == NULL or col.S == NULL or col.D == NULL):
        return -1
    cdef Py_ssize_t i
    for i in range(N):
        col.ident[i] = i
    return 0


cdef void _column_free(Column* col) noexcept nogil:
    scratch_free(col.anchors); scratch_free(col.order); scratch_free(col.bin); scratch_free(col.lo)
    scratch_free(col.row); scratch_free(col.evlo); scratch_free(col.Wa); scratch_free(col.Wpts)
    scratch_free(col.ident); scratch_free(col.S); scratch_free(col.D)
    _tables_free(&col.tb)
    memset(col, 0, sizeof(Column))


cdef void _column_sums(const Problem* P, Column* col, const double* z, const double* Wpts,
                      bint want_S, bint want_D, bint have_T, int nthr) noexcept nogil:
    """Kernel sums of the point weights Wpts [n, K] (NULL: the class weights),
    each class's column in its bandwidth, at the column's evaluation rows
    (col.S, col.D [m, K]; point i is row col.row[i])."""
    cdef Anchors A = Anchors(x=col.anchors, G=col.G, r=P.K, h=P.h, shared=P.shared, ker=&P.ker)
    cdef EvalRows rows = EvalRows(e=col.ev, lo=col.evlo, m=col.m, outrow=NULL, S=NULL, D=NULL, logS=False)
    if want_S:
        rows.S = col.S
    if want_D:
        rows.D = col.D
    P.kind.bin_weights(P, col, z, Wpts)
    _sums_on_anchors(&A, col.Wa, &col.tb, &rows, have_T, nthr)


cdef int _multiply_columns(const Problem* P, Column* cols, int w, double* pr, double* acc,
                           bint fresh, int nthr) noexcept nogil:
    """The wave's columns' densities into each point's running products
    pr, acc [n, K] (pyopnb_rows_products; started empty where ``fresh``: the
    first wave), in column order whatever the waves and threads. Points are
    independent: any split will do. -1: out of memory."""
    cdef Py_ssize_t n = P.n
    cdef Py_ssize_t b
    cdef int c
    # the columns' sums and their rows, as pyopnb_rows_products reads them
    cdef const double** base = <const double**> malloc(w * sizeof(double*))
    cdef const Py_ssize_t** idx = <const Py_ssize_t**> malloc(w * sizeof(Py_ssize_t*))
    if base == NULL or idx == NULL:
        free(base); free(idx)
        return -1
    for c in range(w):
        base[c] = cols[c].S
        idx[c] = cols[c].row
    cdef pyopnb_tables_at_rows T = pyopnb_tables_at_rows(base=base, idx=idx, nrow=w, K=P.K)
    cdef pyopnb_running out = pyopnb_running(pr=pr, acc=acc)
    nthr = _region_threads(nthr, n * P.K * w)
    if nthr == 1:
        pyopnb_rows_products(P.simd, &T, out, fresh, 0, n)
    else:
        for b in prange(_parts(n), num_threads=nthr, schedule='dynamic'):
            pyopnb_rows_products(P.simd, &T, out, fresh, b * PART_ROWS, min(n, (b + 1) * PART_ROWS))
    free(base); free(idx)
    return 0


cdef void _log_products(double* pr, const double* acc, Py_ssize_t m, int nthr) noexcept nogil:
    """pyopnb_log_products over m entries, in chunks on nthr threads."""
    cdef Py_ssize_t chunk = PART_ROWS
    cdef Py_ssize_t b
    nthr = _region_threads(nthr, m)
    if nthr == 1 or m <= chunk:
        pyopnb_log_products(m, pr, acc)
        return
    for b in prange((m + chunk - 1) // chunk, num_threads=nthr, schedule='dynamic'):
        pyopnb_log_products(min(chunk, m - b * chunk), &pr[b * chunk], &acc[b * chunk])


cdef void _point_terms(const Problem* P, Column* cols, int w, double* gz0, const double* post,
                       int nthr) noexcept nogil:
    """Point i as an evaluation point in the wave's columns (see the kinds' ColumnGrad):
    gz[c, i] = -sum_k c_ik D_k(z_i) / h_k and the c weights
    c_ik = (1{y_i = k} - P_ik) / f_k(z_i) into Wpts [n, K]. f = 0 only where
    class k is hundreds of bandwidths away: then P_ik = 0 too and every kernel
    term this weight meets is 0."""
    cdef Py_ssize_t n = P.n
    cdef Py_ssize_t b
    cdef pyopnb_grad_points pts = pyopnb_grad_points(post=post, y=P.y, wt=P.w, h=P.h, K=P.K, shared=P.shared)
    nthr = _region_threads(nthr, n * P.K * w)
    if nthr == 1:
        _point_rows(P, cols, w, gz0, &pts, 0, n)
        return
    for b in prange(_parts(n), num_threads=nthr, schedule='dynamic'):
        _point_rows(P, cols, w, gz0, &pts, b * PART_ROWS, min(n, (b + 1) * PART_ROWS))


cdef inline void _point_rows(const Problem* P, Column* cols, int w, double* gz0, const pyopnb_grad_points* pts,
                             Py_ssize_t i0, Py_ssize_t i1) noexcept nogil:
    cdef int c
    cdef pyopnb_grad_tables T
    for c in range(w):
        T = pyopnb_grad_tables(S=cols[c].S, D=cols[c].D, W=cols[c].Wpts)
        pyopnb_grad_points_at_rows(P.simd, &T, cols[c].row, pts, i0, i1, &gz0[c * P.n])


cdef class ColumnScratch:
    """A problem's class structure and the column scratch (one per column of
    a wave, made when first needed). An evaluator makes one and keeps it for
    every evaluation of its fit: fresh scratch each time would map and unmap
    its pages at every evaluation (a large share of an exact evaluation's
    time, measured in docs/benchmarks.md).

    Made as its evaluation's kind (exact.ExactScratch),
    which sets the column passes (``P.kind``); made as itself, it holds a
    grid's column tables only (``points`` False, no column passes:
    grid.pyx's GridTables). ``nbin`` and ``eps``: a grid's points and
    widening (unused by exact sums)."""
    def __cinit__(self, int[::1] y, int K, double[::1] h, Py_ssize_t nbin, double eps,
                  const double[::1] beta, int num_threads, bint points=True, w=None, totals=None):
        cdef Py_ssize_t n = y.shape[0], i
        cdef int k
        cdef const double[::1] wv
        if K < 1 or h.shape[0] != K:
            raise ValueError("need K >= 1 and one bandwidth per class")
        # the class totals W_k and the total W correctly rounded (math.fsum): the same doubles whatever the
        # points' order or their split into blocks; given (totals: (W_k, W)) where y is a part of a problem's points
        whole = None
        if totals is not None:
            whole = [float(t) for t in totals[0]]
            if len(whole) != K or not all(t > 0 and math.isfinite(t) for t in whole):
                raise ValueError(f"totals must give {K} positive class totals")
            whole.append(float(totals[1]))
        if w is not None:
            w = np.ascontiguousarray(w, dtype=np.float64)
            if w.shape != (n,) or not np.all(np.isfinite(w)) or not np.all(w > 0):
                raise ValueError(f"w must hold {n} positive finite weights")
            wv = w
            yk = np.asarray(y)
            if whole is None:
                whole = [math.fsum(w[yk == k]) for k in range(K)] + [math.fsum(w)]
        self.w = w
        self.y = y
        self.beta = np.array(beta)
        self.P.n_threads = max(1, num_threads)
        self.most = self.P.n_threads
        self.points = points
        self.G = nbin
        self.h = <double*> malloc(K * sizeof(double))
        # each class's total weight, then 1 / (W_k h_k); after them, wcls_h
        self.wcls = <double*> calloc(2 * K, sizeof(double))
        cdef double* wcls = self.wcls
        if self.h == NULL or wcls == NULL:
            raise MemoryError()
        if whole is None:
            for i in range(n):
                wcls[y[i]] += 1.0
            self.P.W = <double> n
        else:
            for k in range(K):
                wcls[k] = whole[k]
            self.P.W = whole[K]
        self.P.shared = True
        for k in range(K):
            self.h[k] = h[k]
            self.P.shared = self.P.shared and h[k] == h[0]
            wcls[k] = 1.0 / (wcls[k] * h[k])
            wcls[K + k] = wcls[k] / h[k]
        self.P.n = n
        self.P.K = K
        self.P.y = &y[0]
        self.P.h = self.h
        self.P.wcls = self.wcls
        self.P.wcls_h = &self.wcls[K]
        self.P.w = NULL
        if w is not None:
            self.P.w = &wv[0]
        self.P.kind = NULL
        self.P.nbin = nbin
        self.P.eps = eps
        # PYOPNB_SIMD read once a fit: every path gives the same bits
        self.P.simd = simd_path()
        if beta.shape[0] < 1 or beta.shape[0] > _MAX_ORDER + 1:
            raise ValueError("beta must have 1 to %d entries" % (_MAX_ORDER + 1))
        _make_kernel(&beta[0], beta.shape[0], &self.P.ker)

    @property
    def W(self) -> float:
        """The points' total weight (n without weights)."""
        return self.P.W

    @property
    def threads(self) -> int:
        """The threads of the next passes."""
        return self.P.n_threads

    cdef int _ensure(self, Py_ssize_t w) except -1:
        """Scratch for w columns (a wave's, or with keep every column's)."""
        if w > self.capacity:
            self.cols = <Column*> realloc(self.cols, w * sizeof(Column))
            if self.cols == NULL:
                self.capacity = self.ncol = 0
                raise MemoryError()
            memset(&self.cols[self.capacity], 0, (w - self.capacity) * sizeof(Column))
            self.capacity = w
        while self.ncol < w:
            if _column_alloc(&self.cols[self.ncol], self.P.n, self.G, self.P.K, self.P.shared,
                             # grid-only scratch: one order more, for GridTables' psi kernel
                             self.P.ker.a + (1 if self.points else 2), self.points):
                _column_free(&self.cols[self.ncol])
                raise MemoryError("not enough memory for the kernel-sum tables")
            self.ncol += 1
        return 0

    cdef int _plan(self, Py_ssize_t ndim) except -1:
        """What is kept between passes for ndim columns: here nothing (each
        pass sets its columns up); exact sums keep more (ExactScratch._plan)."""
        return 0

    cdef void _forget_plan(self):
        free(self.memos)
        free(self.memo_block)
        free(self.Zkept)
        self.memos = NULL
        self.memo_block = NULL
        self.Zkept = NULL
        self.kept = False
        self.keep = False

    def __dealloc__(self):
        cdef int c
        if self.cols != NULL:
            for c in range(self.ncol):
                _column_free(&self.cols[c])
        free(self.cols); free(self.h); free(self.wcls)
        free(self.memos); free(self.memo_block); free(self.Zkept)


cdef int _wave_setup(const Problem* P, const double* Zt, Py_ssize_t t0, int w, Column* cols, bint want_D,
                     SortMemo* memos, int nthr) noexcept nogil:
    """Columns t0..t0+w-1 of Zt [ndim, n] set up and summed (col.S, and
    col.D with want_D), a column to a thread (the whole team when w = 1).
    Returns how many failed (out of memory)."""
    cdef int c, bad = 0
    if w == 1:
        return _setup_one(P, Zt, t0, cols, want_D, memos, nthr)
    for c in prange(w, num_threads=_region_threads(w, P.n * P.K * w), schedule='static'):
        bad += _setup_one(P, Zt, t0 + c, &cols[c], want_D, memos, 1)
    return bad


cdef inline int _setup_one(const Problem* P, const double* Zt, Py_ssize_t t, Column* col, bint want_D,
                           SortMemo* memos, int nthr) noexcept nogil:
    if P.kind.setup(P, &Zt[t * P.n], col, &memos[t] if memos != NULL else NULL, nthr):
        return 1
    _column_sums(P, col, &Zt[t * P.n], NULL, True, want_D, False, nthr)
    return 0


cdef ColumnScratch _wave_work(const double[:, ::1] Zt, ColumnScratch wk):
    """The column passes' scratch for Zt, with room for a wave's columns."""
    if wk is None or wk.P.kind == NULL:
        raise TypeError("scratch must be an ExactScratch (a scratch with column passes)")
    if Zt.shape[1] != wk.P.n:
        raise ValueError(f"Zt must have {wk.P.n} columns (points), got {Zt.shape[1]}")
    wk._plan(Zt.shape[0])
    wk._ensure(Zt.shape[0] if wk.keep else _wave(max(Zt.shape[0], 1), wk.P.n_threads))
    return wk


def log_densities(double[:, ::1] Zt, ColumnScratch scratch):
    """logf[i, k] = log prod_t f_kt(z_it) [n, K]: class_products' products,
    logged (for the checks that read class log densities; the evaluations
    combine the products themselves, product_posteriors)."""
    logf, acc = class_products(Zt, scratch)
    cdef double[:, ::1] lv = logf
    cdef const double[:, ::1] av = acc
    cdef Py_ssize_t m = lv.shape[0] * lv.shape[1]
    if m:
        with nogil:
            _log_products(&lv[0, 0], &av[0, 0], m, scratch.P.n_threads)
    return logf


def class_products(double[:, ::1] Zt, ColumnScratch scratch, tuple init=None):
    """(pr, acc) [n, K]: prod_t f_kt(z_it) = pr[i, k] exp(acc[i, k]) as
    pyopnb_products_n keeps them (acc 0 where the product stayed in range);
    Zt is [ndim, n]. ``scratch``: the problem and its evaluation
    (exact.ExactScratch), kept between calls.
    ``init``: the (pr, acc) of columns before Zt's, to go on from (not
    changed): the products of all the columns then, to the bit, since the
    columns go in in order whatever the waves.

    The columns go in waves (see _wave): each column of a wave is set up
    and summed on its own thread (the whole team when the wave has one
    column), then every thread multiplies the wave's densities into its
    points' products (pyopnb_rows_products: never an underflow).
    """
    cdef ColumnScratch wk = _wave_work(Zt, scratch)
    cdef Py_ssize_t ndim = Zt.shape[0], n = Zt.shape[1], t0
    cdef const Problem* P = &wk.P
    cdef int K = P.K, nthr = wk.P.n_threads, W = _wave(max(ndim, 1), wk.P.n_threads), w
    cdef Column* cols
    cdef bint keep = wk.keep
    cdef int bad = 0
    cdef bint fresh = init is None
    if not fresh:
        if len(init) != 2 or any(np.shape(a) != (n, K) for a in init):
            raise ValueError(f"init must be (pr, acc), each ({n}, {K})")
        if ndim == 0 or n == 0:
            return np.array(init[0], dtype=np.float64), np.array(init[1], dtype=np.float64)
    elif ndim == 0 or n == 0:
        return np.ones((n, K)), np.zeros((n, K))
    # each point's class densities multiplied over the columns
    prods = np.empty((n, K)) if fresh else np.array(init[0], dtype=np.float64, order="C")
    acc = np.empty((n, K)) if fresh else np.array(init[1], dtype=np.float64, order="C")
    cdef double* pr = <double*> cnp.PyArray_DATA(prods)
    cdef double* ac = <double*> cnp.PyArray_DATA(acc)
    # the kept columns are a whole Z's only when the products started here
    keep = keep and fresh
    wk.kept = False
    with nogil:
        t0 = 0
        while t0 < ndim and not bad:
            w = <int> min(W, ndim - t0)
            cols = wk.cols + (t0 if keep else 0)
            bad = _wave_setup(P, &Zt[0, 0], t0, w, cols, keep, wk.memos, nthr)
            if not bad:
                bad = _multiply_columns(P, cols, w, pr, ac, fresh and t0 == 0, nthr)
            t0 = t0 + w
        if keep and not bad:
            memcpy(wk.Zkept, &Zt[0, 0], ndim * n * sizeof(double))
    if bad:
        raise MemoryError("not enough memory for the kernel-sum tables")
    wk.kept = keep
    return prods, acc


def log_density_gradient(double[:, ::1] Zt, double[:, ::1] post, ColumnScratch scratch):
    """n * d l / d Z, as [ndim, n], given the class posteriors [n, K].
    ``scratch``: as class_products', kept between calls.

    In waves of columns as log_densities: set-up and kernel sums a column to
    a thread, the per-point terms on every thread.
    """
    cdef ColumnScratch wk = _wave_work(Zt, scratch)
    cdef Py_ssize_t ndim = Zt.shape[0], n = Zt.shape[1], t0
    cdef const Problem* P = &wk.P
    cdef int K = P.K, nthr = wk.P.n_threads, W = _wave(max(ndim, 1), wk.P.n_threads), w, c, inner
    if post.shape[0] != n or post.shape[1] != K:
        raise ValueError(f"post must be ({n}, {K}), got ({post.shape[0]}, {post.shape[1]})")
    cdef Column* cols
    cdef bint keep = wk.keep
    dZ = np.zeros((ndim, n))
    if ndim == 0 or n == 0:
        return dZ
    cdef double[:, ::1] dv = dZ
    cdef int bad = 0
    # the value pass's columns serve when they are this Zt's (the gradient's
    # own sums then overwrite them: once only)
    cdef bint reuse = wk.kept and memcmp(wk.Zkept, &Zt[0, 0], ndim * n * sizeof(double)) == 0
    wk.kept = False
    with nogil:
        t0 = 0
        while t0 < ndim and not bad:
            w = <int> min(W, ndim - t0)
            inner = nthr if w == 1 else 1
            cols = wk.cols + (t0 if keep else 0)
            if not reuse:
                bad = _wave_setup(P, &Zt[0, 0], t0, w, cols, True, wk.memos, nthr)
            if bad:
                break
            _point_terms(P, cols, w, &dv[t0, 0], &post[0, 0], nthr)
            if w == 1:
                P.kind.grad(P, &Zt[t0, 0], &cols[0], &dv[t0, 0], inner)
            else:
                for c in prange(w, num_threads=_region_threads(w, n * K * w), schedule='static'):
                    P.kind.grad(P, &Zt[t0 + c, 0], &cols[c], &dv[t0 + c, 0], inner)
            if P.kind.sample_terms != NULL:
                P.kind.sample_terms(P, cols, w, &dv[t0, 0], nthr)
            t0 = t0 + w
    if bad:
        raise MemoryError("not enough memory for the kernel-sum tables")
    return dZ


cdef class _ColumnPasses(CoreEvaluator):
    """l by the column passes of its scratch's kind, with the scratch kept
    for every evaluation (the shared part of exact.ExactPasses, whose
    __init__ makes the scratch)."""

    def __init__(self, y0, h, PI, int threads, Py_ssize_t nbin, bint squared_priors):
        if type(self) is _ColumnPasses:
            raise TypeError("make exact.ExactPasses")
        CoreEvaluator.__init__(self, y0, h, PI, threads)
        self.nbin = nbin
        self.squared_priors = squared_priors
        self.value_PI = self.PI * self.PI if squared_priors else None

    cpdef void use_threads(self, int count):
        CoreEvaluator.use_threads(self, count)
        self.scratch.P.n_threads = self.threads

    @property
    def W(self) -> float:
        """The points' total weight (n without weights): l's divisor, and the
        gradient's (evaluate returns W dl/dZ)."""
        return self.scratch.W

    cpdef tuple evaluate(self, object Zt, bint gradient):
        pr, acc = class_products(Zt, self.scratch)
        value, post = product_posteriors(pr, acc, self.y0, self.PI, self.threads, self.value_PI, self.scratch.w,
                                         self.scratch.P.W)
        if not gradient:
            return float(value), None
        return float(value), log_density_gradient(Zt, post, self.scratch)
    cpdef list subset_values(self, object Zt, list chosen, list candidates):
        """As CoreEvaluator.subset_values, to the bit, with each point's products
        over ``chosen`` made once and each candidate's column multiplied into
        them: R's greedy order then sums every column once a step, not
        the chosen ones again for each candidate. The chosen columns'
        products are kept for the next step, which adds one column to them
        (None: no column chosen, each candidate's products made afresh)."""
        Za = np.asarray(Zt)
        rows = np.array(Za[chosen], dtype=np.float64, order="C")
        kept = self._chosen_rows
        if not chosen:
            state = None
        elif kept is not None and kept.shape[0] == len(chosen) and np.array_equal(kept, rows):
            state = self._chosen_products
        elif kept is not None and kept.shape[0] == len(chosen) - 1 and np.array_equal(kept, rows[:-1]):
            state = self._products(rows[-1:], self._chosen_products)
        else:
            state = self._products(rows, None)
        self._chosen_rows, self._chosen_products = rows, state
        values = []
        for j in candidates:
            pr, acc = self._products(np.ascontiguousarray(Za[[j]]), state)
            values.append(float(product_posteriors(pr, acc, self.y0, self.PI, self.threads, self.value_PI,
                                                   self.scratch.w, self.scratch.P.W)[0]))
        return values

    cdef tuple _products(self, Zt, tuple init):
        return class_products(Zt, self.scratch, init)
