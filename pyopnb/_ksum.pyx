# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""Compiled core of pyopnb: exact kernel sums in difference form.

Kernel: K(u) = sum_{k=0..a} beta_k |u|^k exp(-|u|).

Every sum is built on a sorted set of *anchors* (the sorted sample for exact
sums, a grid for binned ones) carrying tables

    Lincl[g, k] = sum_{x_i <= a_g} w_i ((a_g - x_i)/h)^k exp(-(a_g - x_i)/h)
    Rexcl[g, k] = sum_{x_i >  a_g} w_i ((x_i - a_g)/h)^k exp(-(x_i - a_g)/h)

``_recurse`` is the one recursion that builds them (forward for L, backward
for R); ``_evaluate`` reads each evaluation point's neighbouring anchors and
shifts them to the point. ``_deposit`` places sample points that lie between
anchors (only the exact binned gradient needs it); weights that sit on the
anchors are placed directly.

Because the tables hold sums *relative to the anchor*, moving an anchor by
d >= 0 bandwidths is ``new_k = sum_j C(k, j) d^(k-j) e^(-d) old_j``: every
factor is non-negative, so with positive weights nothing cancels, and a gap of
any size decays to a true (possibly tiny) value instead of 0/0. FKSUM's
expanded form multiplies exp(x_i) by exp(-x_j), which loses accuracy with the
spread of x and returns NaN past about 745 bandwidths.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport exp, log, log1p, floor, sqrt, INFINITY
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memset, memcpy

cnp.import_array()

cdef extern from *:
    """
    #include <stdlib.h>
    #include <sys/mman.h>
    /* Large scratch goes on transparent huge pages: touching fresh 4 KiB
       pages one fault at a time cost as much as the kernel sums themselves
       (a third of fk_sum's time at n = 1e6). */
    static void* _alloc(size_t nbytes) {
        void* p = NULL;
        const size_t huge = (size_t)1 << 21;
        size_t rounded;
        if (nbytes < 2 * huge)
            return malloc(nbytes ? nbytes : 1);
        rounded = (nbytes + huge - 1) & ~(huge - 1);
        if (posix_memalign(&p, huge, rounded))
            return NULL;
    #ifdef MADV_HUGEPAGE
        madvise(p, rounded, MADV_HUGEPAGE);
    #endif
        return p;
    }
    """
    void* _alloc(size_t nbytes) noexcept nogil

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static int _thread_id(void) { return omp_get_thread_num(); }
    #else
    static int _thread_id(void) { return 0; }
    #endif
    """
    int _thread_id() noexcept nogil

# Past this many bandwidths, d^m e^-d is formed in log space so that d^m
# cannot overflow before e^-d underflows.
cdef double _FAR = 600.0

MAX_ORDER = 62

# binning modes of the OPNB objective
cdef enum:
    EXACT = 0      # anchors are the sorted points themselves
    SIMPLE = 1     # whole weight to the grid point at or left (R's df_NB_cpp)
    LINEAR = 2     # weight split linearly between the two grid points


# ---------------------------------------------------------------------------
# sorting: a stable LSD radix argsort (11-bit digits) of doubles
# ---------------------------------------------------------------------------

cdef inline unsigned long long _sort_key(double v) noexcept nogil:
    # IEEE bits, flipped so that unsigned order is numeric order (-0 is 0:
    # a stable sort keeps the two in input order, as numpy's does)
    cdef unsigned long long u
    v = v + 0.0
    memcpy(&u, &v, 8)
    if u >> 63:
        return ~u
    return u | (<unsigned long long> 1 << 63)


# Keys are radix-sorted in cache-sized chunks (in parallel), then merged:
# one radix pass over 1e6 keys misses the cache on every write.
DEF DIGIT = 11
DEF NBUCKET = 2048
DEF NPASS = 6
DEF CHUNK = 65536


cdef struct KeyIdx:
    unsigned long long key
    Py_ssize_t idx


cdef void _radix(KeyIdx* a0, KeyIdx* a1, Py_ssize_t n, Py_ssize_t* counts) noexcept nogil:
    """Stable LSD radix sort of a0[:n] by key; the result ends in a0 (a1 is scratch)."""
    cdef Py_ssize_t i, tot, cnt
    cdef int p, b, shift
    cdef bint skip
    cdef KeyIdx* tmp
    cdef KeyIdx* orig = a0
    memset(counts, 0, NPASS * NBUCKET * sizeof(Py_ssize_t))
    for i in range(n):
        for p in range(NPASS):
            counts[p * NBUCKET + ((a0[i].key >> (DIGIT * p)) & (NBUCKET - 1))] += 1
    for p in range(NPASS):
        shift = DIGIT * p
        skip = False
        tot = 0
        for b in range(NBUCKET):
            cnt = counts[p * NBUCKET + b]
            if cnt == n:
                skip = True   # every key has this digit
            counts[p * NBUCKET + b] = tot
            tot += cnt
        if skip:
            continue
        for i in range(n):
            b = (a0[i].key >> shift) & (NBUCKET - 1)
            a1[counts[p * NBUCKET + b]] = a0[i]
            counts[p * NBUCKET + b] += 1
        tmp = a0; a0 = a1; a1 = tmp
    if a0 != orig:
        memcpy(orig, a0, n * sizeof(KeyIdx))


cdef void _merge(const KeyIdx* a, Py_ssize_t na, const KeyIdx* b, Py_ssize_t nb, KeyIdx* out) noexcept nogil:
    """Stable merge (ties from a first)."""
    cdef Py_ssize_t i = 0, j = 0, o = 0
    while i < na and j < nb:
        if b[j].key < a[i].key:
            out[o] = b[j]
            j += 1
        else:
            out[o] = a[i]
            i += 1
        o += 1
    if i < na:
        memcpy(&out[o], &a[i], (na - i) * sizeof(KeyIdx))
    if j < nb:
        memcpy(&out[o], &b[j], (nb - j) * sizeof(KeyIdx))


cdef inline double _key_value(unsigned long long u) noexcept nogil:
    """The double whose _sort_key is u."""
    cdef double v
    if u >> 63:
        u &= ~(<unsigned long long> 1 << 63)
    else:
        u = ~u
    memcpy(&v, &u, 8)
    return v


cdef Py_ssize_t _merge_split(const KeyIdx* a, Py_ssize_t na, const KeyIdx* b, Py_ssize_t nb,
                             Py_ssize_t k) noexcept nogil:
    """How many of the first k outputs of the stable merge of a and b come from a."""
    cdef Py_ssize_t lo = max(0, k - nb), hi = min(k, na), i
    while lo < hi:
        i = (lo + hi) // 2
        # a[i] precedes b[k-i-1] (ties from a first): more than i come from a
        if a[i].key <= b[k - i - 1].key:
            lo = i + 1
        else:
            hi = i
    return lo


cdef void _merge_level(const KeyIdx* src, KeyIdx* dst, Py_ssize_t n, Py_ssize_t width) noexcept nogil:
    """Merge the sorted runs src[c w : (c+1) w] pairwise into dst. Each merge is
    cut into pieces by output position (merge path), so that the last levels,
    with fewer merges than threads, still keep both threads busy."""
    cdef Py_ssize_t nmerge = (n + 2 * width - 1) // (2 * width)
    cdef Py_ssize_t npiece = 4 if nmerge < 4 else 1
    cdef Py_ssize_t t, c, p, lo, mid, hi, k0, k1, i0, i1
    for t in prange(nmerge * npiece, num_threads=2, schedule='static'):
        c = t // npiece
        p = t % npiece
        lo = c * 2 * width
        mid = min(lo + width, n)
        hi = min(lo + 2 * width, n)
        k0 = (hi - lo) * p // npiece
        k1 = (hi - lo) * (p + 1) // npiece
        i0 = _merge_split(&src[lo], mid - lo, &src[mid], hi - mid, k0)
        i1 = _merge_split(&src[lo], mid - lo, &src[mid], hi - mid, k1)
        _merge(&src[lo + i0], i1 - i0, &src[mid + k0 - i0], (k1 - i1) - (k0 - i0), &dst[lo + k0])


cdef int _argsort(const double* x, Py_ssize_t n, Py_ssize_t* order, double* xs) noexcept nogil:
    """order = a stable argsort of x[:n], and xs = x[order] unless xs is NULL
    (read back from the keys: no gather). Returns -1 when out of memory."""
    cdef KeyIdx* a0 = <KeyIdx*> _alloc(n * sizeof(KeyIdx))
    cdef KeyIdx* a1 = <KeyIdx*> _alloc(n * sizeof(KeyIdx))
    cdef Py_ssize_t nchunk = (n + CHUNK - 1) // CHUNK
    cdef Py_ssize_t* counts = <Py_ssize_t*> malloc(2 * NPASS * NBUCKET * sizeof(Py_ssize_t))
    cdef KeyIdx* tmp
    cdef Py_ssize_t i, c, lo, width
    cdef int tid
    if a0 == NULL or a1 == NULL or counts == NULL:
        free(a0); free(a1); free(counts)
        return -1
    for i in prange(n, num_threads=2, schedule='static'):
        a0[i].key = _sort_key(x[i])
        a0[i].idx = i
    # nested in a parallel region (OPNB's columns) this runs on one thread
    for c in prange(nchunk, num_threads=2, schedule='static'):
        tid = _thread_id()
        lo = c * CHUNK
        _radix(&a0[lo], &a1[lo], min(CHUNK, n - lo), &counts[tid * NPASS * NBUCKET])
    width = CHUNK
    while width < n:
        _merge_level(a0, a1, n, width)
        tmp = a0; a0 = a1; a1 = tmp
        width *= 2
    for i in prange(n, num_threads=2, schedule='static'):
        order[i] = a0[i].idx
        if xs != NULL:
            xs[i] = _key_value(a0[i].key)
    free(a0); free(a1); free(counts)
    return 0


def argsort(const double[::1] x):
    """Stable argsort of a float64 vector (radix sort; NaN-free input)."""
    cdef Py_ssize_t n = x.shape[0]
    out = np.empty(n, dtype=np.intp)
    cdef Py_ssize_t[::1] ov = out
    cdef int rc = 0
    if n:
        with nogil:
            rc = _argsort(&x[0], n, &ov[0], NULL)
    if rc:
        raise MemoryError("argsort: out of memory")
    return out


# ---------------------------------------------------------------------------
# the recursion
# ---------------------------------------------------------------------------

cdef struct Kernel:
    int a
    double beta[64]
    double gamma[64]
    double binom[4096]


cdef void _make_kernel(const double* beta, int nb, Kernel* ker) noexcept nogil:
    cdef int a = nb - 1
    cdef int k, j
    ker.a = a
    for k in range(a + 1):
        ker.beta[k] = beta[k]
    # K'(u) for u > 0 is sum_k gamma_k u^k e^-u, gamma_k = beta_k - (k+1) beta_{k+1}
    for k in range(a + 1):
        ker.gamma[k] = beta[k] - ((k + 1) * beta[k + 1] if k < a else 0.0)
    for k in range(a + 1):
        for j in range(a + 1):
            ker.binom[k * (a + 1) + j] = 0.0
        ker.binom[k * (a + 1)] = 1.0
        for j in range(1, k + 1):
            ker.binom[k * (a + 1) + j] = ker.binom[k * (a + 1) + j - 1] * (k - j + 1) / j


cdef inline void _decay(double d, int a, double* t) noexcept nogil:
    """t[m] = d^m exp(-d) for m = 0..a, d >= 0."""
    cdef int m
    cdef double ld
    if d == 0.0:
        t[0] = 1.0
        for m in range(1, a + 1):
            t[m] = 0.0
    elif d < _FAR:
        t[0] = exp(-d)
        for m in range(1, a + 1):
            t[m] = t[m - 1] * d
    else:
        ld = log(d)
        for m in range(a + 1):
            t[m] = exp(m * ld - d)


cdef inline void _shift(const double* src, double* dst, int a,
                        const double* t, const double* binom) noexcept nogil:
    """dst[k] = sum_j C(k, j) t[k-j] src[j]: move a table entry d to the right."""
    cdef int k, j
    cdef double s
    # the default kernel (a = 1) and Laplace (a = 0) unrolled: they are the hot path
    if a == 1:
        dst[0] = t[0] * src[0]
        dst[1] = t[0] * src[1] + t[1] * src[0]
        return
    if a == 0:
        dst[0] = t[0] * src[0]
        return
    for k in range(a + 1):
        s = 0.0
        for j in range(k + 1):
            s += binom[k * (a + 1) + j] * t[k - j] * src[j]
        dst[k] = s


cdef void _deposit(const double* pos, const double* W, Py_ssize_t n, int r,
                   const Py_ssize_t* lo, const double* anchors, Py_ssize_t G,
                   double h, int a, double* Ldep, double* Rdep) noexcept nogil:
    """Place points that lie between anchors: point i (weights W[i, :r]), with
    lo[i] the last anchor <= pos[i], goes to the left table of the first anchor
    >= pos[i] and to the right table of the last anchor < pos[i], decayed by
    its distance to each. Tables are [G, r, a+1], zeroed by the caller."""
    cdef Py_ssize_t i, g, gl, gr
    for i in range(n):
        g = lo[i]
        if g >= 0 and pos[i] == anchors[g]:
            gl, gr = g, g - 1
        else:
            gl, gr = g + 1, g
        if gl < G:
            _add_decayed((anchors[gl] - pos[i]) / h, a, &W[i * r], r, &Ldep[gl * r * (a + 1)])
        if gr >= 0:
            _add_decayed((pos[i] - anchors[gr]) / h, a, &W[i * r], r, &Rdep[gr * r * (a + 1)])


cdef inline void _add_decayed(double d, int a, const double* w, int r, double* entry) noexcept nogil:
    """entry[c, k] += w[c] d^k e^-d: weights placed d bandwidths from a table's anchor."""
    cdef int c, k
    cdef double t[64]
    _decay(d, a, t)
    for c in range(r):
        for k in range(a + 1):
            entry[c * (a + 1) + k] += w[c] * t[k]


cdef int _recurse(const double* anchors, Py_ssize_t G, int r, double h, int a,
                  const double* binom, const double* Ldep, int dep_a1, double* Lincl,
                  double* R, bint on_anchor) noexcept nogil:
    """The recursion. Forward: Lincl[g] = shift(Lincl[g-1]) + Ldep[g].
    Backward: R[g] += shift(R[g+1]) (R holds the right deposits), or, with
    on_anchor, R[g] = shift(R[g+1] + Ldep[g+1]).

    Ldep[g, c, k] is Ldep[(g r + c) dep_a1 + k], and 0 for k >= dep_a1: with
    dep_a1 = 1 it is just the weights sitting on the anchors (order 0).
    on_anchor: every sample sits on an anchor, so a point's right-table entry
    is its own weight shifted one gap left, and R needs no deposits (nor
    zeroing). Each gap's decay is computed once; the two passes then run side
    by side (one thread each, outside a parallel region).
    Returns -1 when out of memory.
    """
    cdef Py_ssize_t g
    cdef int part
    cdef int a1 = a + 1
    cdef double* T
    if G == 0:
        return 0
    T = <double*> _alloc(G * a1 * sizeof(double))
    if T == NULL:
        return -1
    for g in prange(1, G, num_threads=2, schedule="static"):
        _decay((anchors[g] - anchors[g - 1]) / h, a, &T[g * a1])
    for part in prange(2, num_threads=2, schedule="static"):
        if part == 0:
            _forward(G, r, a, binom, T, Ldep, dep_a1, Lincl)
        else:
            _backward(G, r, a, binom, T, Ldep, dep_a1, R, on_anchor)
    free(T)
    return 0


cdef inline double _dep(const double* dep, int dep_a1, Py_ssize_t g, int r, int c, int k) noexcept nogil:
    return dep[(g * r + c) * dep_a1 + k] if k < dep_a1 else 0.0


cdef void _forward(Py_ssize_t G, int r, int a, const double* binom, const double* T,
                   const double* Ldep, int dep_a1, double* Lincl) noexcept nogil:
    cdef Py_ssize_t g
    cdef int c, k
    cdef int a1 = a + 1
    cdef Py_ssize_t row = r * a1
    cdef double buf[64]
    for c in range(r):
        for k in range(a1):
            Lincl[c * a1 + k] = _dep(Ldep, dep_a1, 0, r, c, k)
    for g in range(1, G):
        for c in range(r):
            _shift(&Lincl[(g - 1) * row + c * a1], buf, a, &T[g * a1], binom)
            for k in range(a1):
                Lincl[g * row + c * a1 + k] = buf[k] + _dep(Ldep, dep_a1, g, r, c, k)


cdef void _backward(Py_ssize_t G, int r, int a, const double* binom, const double* T,
                    const double* Ldep, int dep_a1, double* R, bint on_anchor) noexcept nogil:
    cdef Py_ssize_t g
    cdef int c, k
    cdef int a1 = a + 1
    cdef Py_ssize_t row = r * a1
    cdef double buf[64]
    cdef double inc[64]
    cdef const double* t
    if on_anchor:
        for k in range(row):
            R[(G - 1) * row + k] = 0.0
    g = G - 2
    while g >= 0:
        t = &T[(g + 1) * a1]
        for c in range(r):
            if on_anchor:
                for k in range(a1):
                    inc[k] = R[(g + 1) * row + c * a1 + k] + _dep(Ldep, dep_a1, g + 1, r, c, k)
                _shift(inc, buf, a, t, binom)
                for k in range(a1):
                    R[g * row + c * a1 + k] = buf[k]
            else:
                _shift(&R[(g + 1) * row + c * a1], buf, a, t, binom)
                for k in range(a1):
                    R[g * row + c * a1 + k] += buf[k]
        g -= 1


cdef inline void _powers(double d, int a, double* t) noexcept nogil:
    """t[m] = d^m: _decay without its e^-d, for sums kept in log space."""
    cdef int m
    t[0] = 1.0
    for m in range(1, a + 1):
        t[m] = t[m - 1] * d


cdef inline double _logaddexp(double u, double v) noexcept nogil:
    if u == -INFINITY:
        return v
    if v == -INFINITY:
        return u
    if u > v:
        return u + log1p(exp(v - u))
    return v + log1p(exp(u - v))


cdef void _evaluate(const double* e, const Py_ssize_t* lo, Py_ssize_t m,
                    const Py_ssize_t* outrow,
                    const double* anchors, Py_ssize_t G, int r, double h, const Kernel* ker,
                    const double* Ldep, int dep_a1, const double* Lincl, const double* Rexcl,
                    double* S, double* D, bint logS) noexcept nogil:
    """S[row, c] = ksum and D[row, c] = dksum at e[j], row = outrow[j] (j if NULL).

    lo[j] is the last anchor <= e[j] (-1 if none). An evaluation point that is
    not an anchor must have no sample strictly between its two anchors (true
    for exact sums and for binned weights on a grid). S or D may be NULL.
    logS: S holds log ksum, formed as log(left part) - d_left and
    log(right part) - d_right, so a point thousands of bandwidths from the
    sample gets its log density instead of log(0) (positive weights and beta).
    """
    cdef Py_ssize_t j, g, o
    cdef int c, k
    cdef int a = ker.a
    cdef int a1 = a + 1
    cdef Py_ssize_t row = r * a1
    cdef double tl[64]
    cdef double tr[64]
    cdef double Lv[64]
    cdef double Rv[64]
    cdef double inc[64]
    cdef bint hasL, hasR, onanchor
    cdef double s, dd, dl = 0.0, dr = 0.0, sr
    for j in range(m):
        g = lo[j]
        o = outrow[j] if outrow != NULL else j
        hasL = g >= 0
        onanchor = hasL and e[j] == anchors[g]
        hasR = onanchor or g + 1 < G
        if hasL:
            dl = (e[j] - anchors[g]) / h
            if logS:
                _powers(dl, a, tl)
            else:
                _decay(dl, a, tl)
        if hasR and not onanchor:
            dr = (anchors[g + 1] - e[j]) / h
            if logS:
                _powers(dr, a, tr)
            else:
                _decay(dr, a, tr)
        elif onanchor:
            dr = 0.0
        for c in range(r):
            if hasL and dl == 0.0:
                for k in range(a1):
                    Lv[k] = Lincl[g * row + c * a1 + k]
            elif hasL:
                _shift(&Lincl[g * row + c * a1], Lv, a, tl, ker.binom)
            else:
                for k in range(a1):
                    Lv[k] = 0.0
            if onanchor:
                for k in range(a1):
                    Rv[k] = Rexcl[g * row + c * a1 + k]
            elif hasR:
                # points >= anchor g+1: its exclusive table plus what sits on it
                for k in range(a1):
                    inc[k] = Rexcl[(g + 1) * row + c * a1 + k] + _dep(Ldep, dep_a1, g + 1, r, c, k)
                _shift(inc, Rv, a, tr, ker.binom)
            else:
                for k in range(a1):
                    Rv[k] = 0.0
            if S != NULL and logS:
                s = 0.0
                sr = 0.0
                for k in range(a1):
                    s += ker.beta[k] * Lv[k]
                    sr += ker.beta[k] * Rv[k]
                S[o * r + c] = _logaddexp(log(s) - dl if hasL else -INFINITY,
                                          log(sr) - dr if hasR else -INFINITY)
            elif S != NULL:
                s = 0.0
                for k in range(a1):
                    s += ker.beta[k] * (Lv[k] + Rv[k])
                S[o * r + c] = s
            if D != NULL:
                dd = 0.0
                for k in range(a1):
                    dd += ker.gamma[k] * (Lv[k] - Rv[k])
                D[o * r + c] = dd


cdef struct Tables:
    double* Ldep
    double* Lincl
    double* R


cdef int _tables_alloc(Tables* tb, Py_ssize_t G, int r, int a1, bint deposits=True) noexcept nogil:
    # deposit tables only for points between anchors (weights on anchors need none)
    tb.Ldep = <double*> _alloc(G * r * a1 * sizeof(double)) if deposits else NULL
    tb.Lincl = <double*> _alloc(G * r * a1 * sizeof(double))
    tb.R = <double*> _alloc(G * r * a1 * sizeof(double))
    if (deposits and tb.Ldep == NULL) or tb.Lincl == NULL or tb.R == NULL:
        return -1
    return 0


cdef void _tables_free(Tables* tb) noexcept nogil:
    free(tb.Ldep); free(tb.Lincl); free(tb.R)
    tb.Ldep = NULL; tb.Lincl = NULL; tb.R = NULL


cdef int _sums_on_anchors(const double* anchors, Py_ssize_t G, const double* Wa, int r,
                          double h, const Kernel* ker, Tables* tb,
                          const double* e, const Py_ssize_t* lo, Py_ssize_t m,
                          const Py_ssize_t* outrow, double* S, double* D, bint logS) noexcept nogil:
    """Sums of weights Wa [G, r] sitting on the anchors, at m evaluation points.
    (The weights serve as the left deposits directly: no table to fill.)"""
    if _recurse(anchors, G, r, h, ker.a, ker.binom, Wa, 1, tb.Lincl, tb.R, True):
        return -1
    _evaluate_chunks(e, lo, m, outrow, anchors, G, r, h, ker, Wa, 1, tb, S, D, logS)
    return 0


cdef void _evaluate_chunks(const double* e, const Py_ssize_t* lo, Py_ssize_t m,
                           const Py_ssize_t* outrow, const double* anchors, Py_ssize_t G, int r,
                           double h, const Kernel* ker, const double* dep, int dep_a1, const Tables* tb,
                           double* S, double* D, bint logS) noexcept nogil:
    """_evaluate over chunks of points on two threads (one inside a parallel region)."""
    cdef Py_ssize_t chunk = 32768, nch = (m + chunk - 1) // chunk, c0, s0, len0
    for c0 in prange(nch, num_threads=2, schedule="static"):
        s0 = c0 * chunk
        len0 = min(chunk, m - s0)
        if outrow != NULL:
            _evaluate(e + s0, lo + s0, len0, outrow + s0, anchors, G, r, h, ker, dep, dep_a1, tb.Lincl, tb.R,
                      S, D, logS)
        else:
            _evaluate(e + s0, lo + s0, len0, NULL, anchors, G, r, h, ker, dep, dep_a1, tb.Lincl, tb.R,
                      S + s0 * r if S != NULL else NULL, D + s0 * r if D != NULL else NULL, logS)


cdef void _last_of_ties(const double* sorted_x, Py_ssize_t n, Py_ssize_t* last) noexcept nogil:
    """last[q] = the last index of sorted_x[q]'s tie group."""
    cdef Py_ssize_t q = n - 1, g = n - 1
    while q >= 0:
        if q == n - 1 or sorted_x[q] != sorted_x[q + 1]:
            g = q
        last[q] = g
        q -= 1


cdef double* _data_or_null(object arr) except? NULL:
    """The data of a C-contiguous float64 array of ours (kept alive by the
    caller), or NULL for None."""
    if arr is None:
        return NULL
    cdef cnp.ndarray a = arr
    if a.dtype != np.float64 or not a.flags.c_contiguous:
        raise ValueError("expected a C-contiguous float64 array")
    return <double*> cnp.PyArray_DATA(a)


def exact_sums(const double[::1] x, const double[:, ::1] W, double h, const double[::1] beta,
               e, bint want_S, bint want_D, bint log_S=False):
    """Exact kernel sums of the r weight columns W [n, r] at e (None: at x).

    Returns (S, D) [m, r] in e's (or x's) order, None where not wanted; with
    log_S, S holds log ksum (for positive weights and beta).
    """
    cdef Py_ssize_t n = x.shape[0], r = W.shape[1], m, q, j
    cdef Kernel ker
    _make_kernel(&beta[0], beta.shape[0], &ker)
    cdef bint at_x = e is None
    cdef const double[::1] ev = x if at_x else e
    m = ev.shape[0]
    S = np.empty((m, r)) if want_S else None
    D = np.empty((m, r)) if want_D else None
    if m == 0 or r == 0:
        return S, D
    cdef double* Sp = _data_or_null(S)
    cdef double* Dp = _data_or_null(D)
    cdef int a1 = ker.a + 1, bad = 0
    cdef Tables tb
    cdef Py_ssize_t* order = <Py_ssize_t*> _alloc(n * sizeof(Py_ssize_t))
    cdef double* anchors = <double*> _alloc(n * sizeof(double))
    cdef double* Wa = <double*> _alloc(n * r * sizeof(double))
    # at the sample the sorted points are their own evaluation points
    cdef Py_ssize_t* eorder = order if at_x else <Py_ssize_t*> _alloc(m * sizeof(Py_ssize_t))
    cdef double* es = anchors if at_x else <double*> _alloc(m * sizeof(double))
    cdef Py_ssize_t* lo = <Py_ssize_t*> _alloc(m * sizeof(Py_ssize_t))
    with nogil:
        if (_tables_alloc(&tb, n, r, a1, False) or order == NULL or anchors == NULL or Wa == NULL
                or eorder == NULL or es == NULL or lo == NULL or _argsort(&x[0], n, order, anchors)):
            bad = 1
        else:
            for q in prange(n, num_threads=2, schedule="static"):
                for j in range(r):
                    Wa[q * r + j] = W[order[q], j]
            if at_x:
                # in sorted order; a point's anchor is its tie group's last
                _last_of_ties(anchors, n, lo)
            elif _argsort(&ev[0], m, eorder, es):
                bad = 1
            else:
                # evaluation points sorted too: tables are read in order, anchors found by a merge
                q = -1
                for j in range(m):
                    while q + 1 < n and anchors[q + 1] <= es[j]:
                        q += 1
                    lo[j] = q
            if not bad and _sums_on_anchors(anchors, n, Wa, r, h, &ker, &tb, es, lo, m, eorder,
                                            Sp, Dp, log_S):
                bad = 1
    _tables_free(&tb)
    if not at_x:
        free(eorder); free(es)
    free(order); free(anchors); free(Wa); free(lo)
    if bad:
        raise MemoryError("exact_sums: out of memory")
    return S, D


def grid_sums(const double[::1] grid, const double[:, ::1] Wg, double h, const double[::1] beta,
              const double[::1] e, bint want_S, bint want_D):
    """Sums of grid weights Wg [G, r] (grid equally spaced) at any points e.

    Points outside the grid get the exact sums of the grid weights.
    """
    cdef Py_ssize_t G = grid.shape[0], r = Wg.shape[1], m = e.shape[0], j, g
    cdef Kernel ker
    _make_kernel(&beta[0], beta.shape[0], &ker)
    S = np.empty((m, r)) if want_S else None
    D = np.empty((m, r)) if want_D else None
    if m == 0 or r == 0 or G == 0:
        return S, D
    cdef double* Sp = _data_or_null(S)
    cdef double* Dp = _data_or_null(D)
    cdef double delta = (grid[G - 1] - grid[0]) / (G - 1) if G > 1 else 1.0
    cdef double u
    cdef int bad = 0
    cdef Tables tb
    cdef Py_ssize_t* lo = <Py_ssize_t*> _alloc(m * sizeof(Py_ssize_t))
    with nogil:
        if _tables_alloc(&tb, G, r, ker.a + 1, False) or lo == NULL:
            bad = 1
        else:
            for j in range(m):
                # the last grid point <= e: arithmetic, then corrected for rounding
                u = (e[j] - grid[0]) / delta
                if u < 0:
                    g = -1
                elif u >= G - 1:
                    g = G - 1
                else:
                    g = <Py_ssize_t> floor(u)
                while g >= 0 and grid[g] > e[j]:
                    g -= 1
                while g + 1 < G and grid[g + 1] <= e[j]:
                    g += 1
                lo[j] = g
            if _sums_on_anchors(&grid[0], G, &Wg[0, 0], r, h, &ker, &tb, &e[0], lo, m,
                                NULL, Sp, Dp, False):
                bad = 1
    _tables_free(&tb)
    free(lo)
    if bad:
        raise MemoryError("grid_sums: out of memory")
    return S, D


# ---------------------------------------------------------------------------
# OPNB objective and gradient, one projected column at a time
# ---------------------------------------------------------------------------

cdef struct Problem:
    Py_ssize_t n
    int K
    int ngroup
    const int* y            # class codes 0..K-1
    const int* gof          # group of each class
    const int* cof          # column of each class within its group
    const int* gsize        # classes per group
    const double* gh        # bandwidth of each group
    const double* wcls      # 1 / (n_k h_k)
    int mode                # EXACT, SIMPLE or LINEAR
    bint at_anchor          # densities read at the point's grid point (R's binned) or at the point
    Py_ssize_t nbin
    double eps              # grid widening
    Kernel ker


cdef struct Column:
    # scratch for one column, sized for the largest group
    Py_ssize_t G            # anchors in use
    double* anchors         # G
    Py_ssize_t* order       # n: points in increasing z (EXACT)
    Py_ssize_t* bin         # n: grid cell of each point (binned)
    Py_ssize_t* lo          # n: last anchor <= z_i
    Py_ssize_t m            # evaluation rows: sorted points, grid points, or points
    const double* ev        # position of each evaluation row: the anchors, or the column's z (not owned)
    Py_ssize_t* evlo        # max(n, G): last anchor <= that position
    Py_ssize_t* row         # n: the evaluation row that gives point i its values
    double* Wa              # max(n, G) x rmax: weights on the anchors
    double* Wpts            # n x rmax: weights of the points
    Py_ssize_t* ident       # max(n, G): 0, 1, 2, ...
    Tables tb
    double* S               # max(n, G) x rmax
    double* D
    double lo_grid
    double delta


cdef int _column_alloc(Column* col, Py_ssize_t n, int mode, bint at_anchor, Py_ssize_t nbin, int rmax,
                       int a1) noexcept nogil:
    # anchors: the points (exact) or the grid; evaluation rows: the points,
    # or the grid when R reads densities at grid points. Sized to what the
    # mode uses: a binned fit at n = 1e6 needs grid-sized tables only.
    cdef Py_ssize_t G = n if mode == EXACT else nbin
    cdef Py_ssize_t M = nbin if (mode != EXACT and at_anchor) else n
    cdef Py_ssize_t N = M if M > G else G
    col.anchors = <double*> _alloc(G * sizeof(double))
    col.order = <Py_ssize_t*> _alloc(n * sizeof(Py_ssize_t))
    col.bin = <Py_ssize_t*> _alloc(n * sizeof(Py_ssize_t))
    col.lo = <Py_ssize_t*> _alloc(n * sizeof(Py_ssize_t))
    col.row = <Py_ssize_t*> _alloc(n * sizeof(Py_ssize_t))
    col.evlo = <Py_ssize_t*> _alloc(N * sizeof(Py_ssize_t))
    col.Wa = <double*> _alloc(G * rmax * sizeof(double))
    col.Wpts = <double*> _alloc(n * rmax * sizeof(double))
    col.ident = <Py_ssize_t*> _alloc(N * sizeof(Py_ssize_t))
    col.S = <double*> _alloc(N * rmax * sizeof(double))
    col.D = <double*> _alloc(N * rmax * sizeof(double))
    # deposit tables only where points lie between anchors: the exact binned gradient
    if (_tables_alloc(&col.tb, G, rmax, a1, mode == LINEAR and not at_anchor) or col.anchors == NULL or col.order == NULL
            or col.bin == NULL or col.lo == NULL or col.row == NULL
            or col.evlo == NULL or col.Wa == NULL or col.Wpts == NULL
            or col.ident == NULL or col.S == NULL or col.D == NULL):
        return -1
    cdef Py_ssize_t i
    for i in range(N):
        col.ident[i] = i
    return 0


cdef void _column_free(Column* col) noexcept nogil:
    free(col.anchors); free(col.order); free(col.bin); free(col.lo); free(col.row)
    free(col.evlo); free(col.Wa); free(col.Wpts); free(col.ident); free(col.S); free(col.D)
    _tables_free(&col.tb)


cdef inline Py_ssize_t _grid_cell(double z, double lo, double delta, Py_ssize_t nbin) noexcept nogil:
    """R's bin of z: floor((z - lo) / delta), kept in 0..nbin-2."""
    cdef double u = (z - lo) / delta
    # truncation is floor on [1, nbin - 1), and cheaper than a call to floor
    if u < 1.0:
        return 0
    if u >= nbin - 1:
        return nbin - 2
    return <Py_ssize_t> u


cdef inline void _set_grid(Column* col, double lo, double delta, Py_ssize_t nbin) noexcept nogil:
    """A binned column's grid, lo + g delta for g < nbin, as its anchors."""
    cdef Py_ssize_t g
    col.lo_grid = lo
    col.delta = delta
    for g in range(nbin):
        col.anchors[g] = lo + g * delta


cdef int _column_setup(const Problem* P, const double* z, Column* col) noexcept nogil:
    """Anchors, evaluation rows and each point's anchor for one column of Z = XV."""
    cdef Py_ssize_t n = P.n, i, q, g
    cdef double zmin, zmax, lo
    if P.mode == EXACT:
        if _argsort(z, n, col.order, col.anchors):
            return -1
        col.G = n
        col.m = n
        col.ev = col.anchors
        # evaluate in sorted order (tables read sequentially); a point's
        # anchor for evaluation is its tie group's last
        _last_of_ties(col.anchors, n, col.evlo)
        for q in range(n):
            col.row[col.order[q]] = q
            col.lo[col.order[q]] = col.evlo[q]
        return 0
    zmin = z[0]
    zmax = z[0]
    for i in range(1, n):
        if z[i] < zmin:
            zmin = z[i]
        if z[i] > zmax:
            zmax = z[i]
    col.G = P.nbin
    lo = zmin - P.eps
    _set_grid(col, lo, (zmax + P.eps - lo) / (P.nbin - 1), P.nbin)
    for i in range(n):
        g = _grid_cell(z[i], col.lo_grid, col.delta, P.nbin)
        col.bin[i] = g
        if P.at_anchor:
            # densities read at the cell's grid point: no anchor search
            col.row[i] = g
            continue
        # the last anchor <= z, robust to the rounding of floor(u)
        while g > 0 and col.anchors[g] > z[i]:
            g -= 1
        while g + 1 < P.nbin and col.anchors[g + 1] <= z[i]:
            g += 1
        col.lo[i] = g
        col.row[i] = i
        col.evlo[i] = g
    if P.at_anchor:
        # R reads each point's density at its grid point: evaluate the grid once
        col.m = P.nbin
        col.ev = col.anchors
        for g in range(P.nbin):
            col.evlo[g] = g
    else:
        col.m = n
        col.ev = z
    return 0


cdef void _bin_weights(const Problem* P, Column* col, const double* z, int grp, int r,
                       const double* Wpts, int mode) noexcept nogil:
    """col.Wa [G, r]: the points' weights moved onto the anchors.

    Wpts [n, r], or NULL for the group's class weights: point i weighs
    1/(n_k h_k) in the column of its class k (if k is in the group), so only
    one column per point is touched.
    """
    cdef Py_ssize_t i, q, g
    cdef int c, k, c0 = 0, c1 = r
    cdef double frac, w = 0.0
    if mode == EXACT:
        if Wpts == NULL:
            memset(col.Wa, 0, col.G * r * sizeof(double))
        for q in range(P.n):
            i = col.order[q]
            if Wpts == NULL:
                k = P.y[i]
                if P.gof[k] == grp:
                    col.Wa[q * r + P.cof[k]] = P.wcls[k]
            else:
                for c in range(r):
                    col.Wa[q * r + c] = Wpts[i * r + c]
        return
    memset(col.Wa, 0, col.G * r * sizeof(double))
    for i in range(P.n):
        g = col.bin[i]
        if Wpts == NULL:
            k = P.y[i]
            if P.gof[k] != grp:
                continue
            c0 = P.cof[k]
            c1 = c0 + 1
            w = P.wcls[k]
        frac = (z[i] - col.lo_grid) / col.delta - g if mode == LINEAR else 0.0
        for c in range(c0, c1):
            if Wpts != NULL:
                w = Wpts[i * r + c]
            col.Wa[g * r + c] += (1.0 - frac) * w
            if mode == LINEAR:
                col.Wa[(g + 1) * r + c] += frac * w


cdef int _column_sums(const Problem* P, Column* col, const double* z, int grp, int r,
                      const double* Wpts, bint want_S) noexcept nogil:
    """Kernel sums of the group's point weights Wpts [n, r] (NULL: the class
    weights) at the column's evaluation rows (col.S, col.D [m, r]; point i is
    row col.row[i])."""
    _bin_weights(P, col, z, grp, r, Wpts, P.mode)
    return _sums_on_anchors(col.anchors, col.G, col.Wa, r, P.gh[grp], &P.ker, &col.tb,
                            col.ev, col.evlo, col.m, NULL, col.S if want_S else NULL, col.D, False)


cdef int _column_logf(const Problem* P, const double* z, Column* col, double* logf) noexcept nogil:
    """logf[i, k] += log f_kt(z_it) for this column."""
    cdef Py_ssize_t i, j, w
    cdef int grp, k, r
    for grp in range(P.ngroup):
        r = P.gsize[grp]
        if _column_sums(P, col, z, grp, r, NULL, True):
            return -1
        for j in range(col.m * r):
            col.S[j] = log(col.S[j])
        if P.ngroup == 1:
            # one bandwidth for all classes (every fit): column c is class c
            for i in range(P.n):
                w = col.row[i] * r
                for k in range(r):
                    logf[i * r + k] += col.S[w + k]
            continue
        for i in range(P.n):
            w = col.row[i] * r
            for k in range(P.K):
                if P.gof[k] == grp:
                    logf[i * P.K + k] += col.S[w + P.cof[k]]
    return 0


cdef extern from "_simd.h" nogil:
    void pyopnb_project_row(const double* x, Py_ssize_t p, const double* V, Py_ssize_t ndp,
                            Py_ssize_t nd, double* zt, Py_ssize_t n)
    double pyopnb_grad_point(const double* S, const double* D, double* W, const double* post,
                             int y, int K, double gh)


cdef int _column_grad(const Problem* P, const double* z, Column* col,
                      const double* post, double* gz) noexcept nogil:
    """gz[i] = n * d l / d z_it for this column (see the paper's T1, T2).

    With c_ik = (1{y_i = k} - P_ik) / f_kt(z_it) (P the posteriors), the derivative is
      - sum_k c_ik D_k(z_i) / h_k            (point i as an evaluation point)
      + d/dz_i of the class-y_i weights      (point i as a sample point)
    The second is a kernel sum of the c weights: read at the point's anchor for
    exact and R's simple binning; for linear binning it acts through the
    binning fractions and the grid's ends (min and max of z).
    """
    cdef Py_ssize_t n = P.n, i, g, G, imin, imax, w
    cdef int grp, k, r, c, K = P.K
    cdef double h, pk, f, d_lo, d_delta, gam, b, u
    cdef double* Wpts = col.Wpts
    for i in range(n):
        gz[i] = 0.0
    d_lo = 0.0
    d_delta = 0.0
    for grp in range(P.ngroup):
        r = P.gsize[grp]
        h = P.gh[grp]
        if _column_sums(P, col, z, grp, r, NULL, True):
            return -1
        # c weights, and the evaluation-point term (before col.S, col.D are reused).
        # f = 0 only where class k is hundreds of bandwidths away: then P_ik = 0
        # too and every kernel term this weight meets is 0
        for i in range(n):
            w = col.row[i] * r
            if P.ngroup == 1:
                # one bandwidth for all classes (every fit): column c is class c
                for c in range(r):
                    Wpts[i * r + c] = 0.0
                gz[i] = pyopnb_grad_point(&col.S[w], &col.D[w], &Wpts[i * r], &post[i * K], P.y[i], r, h)
                continue
            for k in range(K):
                if P.gof[k] != grp:
                    continue
                c = P.cof[k]
                f = col.S[w + c]
                pk = ((1.0 if P.y[i] == k else 0.0) - post[i * K + k]) / f if f > 0.0 else 0.0
                Wpts[i * r + c] = pk
                gz[i] -= pk * col.D[w + c] / h
        if P.mode != LINEAR:
            if _column_sums(P, col, z, grp, r, Wpts, False):
                return -1
            for i in range(n):
                k = P.y[i]
                if P.gof[k] == grp:
                    gz[i] -= P.wcls[k] / h * col.D[col.row[i] * r + P.cof[k]]
        else:
            # Phi (ksum) and Psi (dksum) of the c weights at the grid points,
            # from the points where they really are.
            G = col.G
            memset(col.tb.Ldep, 0, G * r * (P.ker.a + 1) * sizeof(double))
            memset(col.tb.R, 0, G * r * (P.ker.a + 1) * sizeof(double))
            _deposit(z, Wpts, n, r, col.lo, col.anchors, G, h, P.ker.a, col.tb.Ldep, col.tb.R)
            if _recurse(col.anchors, G, r, h, P.ker.a, P.ker.binom, col.tb.Ldep, P.ker.a + 1,
                        col.tb.Lincl, col.tb.R, False):
                return -1
            _evaluate(col.anchors, col.ident, G, NULL, col.anchors, G, r, h, &P.ker,
                      col.tb.Ldep, P.ker.a + 1, col.tb.Lincl, col.tb.R, col.S, col.D, False)
            # bin weights of the group's classes, for the grid-motion term
            _bin_weights(P, col, z, grp, r, NULL, LINEAR)
            # gamma_g = d(nl)/dG_g with binning fractions fixed
            for g in range(G):
                gam = 0.0
                for c in range(r):
                    gam -= col.Wa[g * r + c] * col.D[g * r + c] / h
                d_lo += gam
                d_delta += g * gam
            # beta_i = d(nl)/du_i with the grid fixed: through the fractions
            for i in range(n):
                k = P.y[i]
                if P.gof[k] != grp:
                    continue
                c = P.cof[k]
                g = col.bin[i]
                b = P.wcls[k] * (col.S[(g + 1) * r + c] - col.S[g * r + c])
                gz[i] += b / col.delta
                u = (z[i] - col.lo_grid) / col.delta
                d_lo -= b / col.delta
                d_delta -= u * b / col.delta
    if P.mode == LINEAR:
        imin = 0
        imax = 0
        for i in range(1, n):
            if z[i] < z[imin]:
                imin = i
            if z[i] > z[imax]:
                imax = i
        # lo = zmin - eps, delta = (zmax - zmin + 2 eps) / (nbin - 1)
        gz[imin] += d_lo - d_delta / (P.nbin - 1)
        gz[imax] += d_delta / (P.nbin - 1)
    return 0




# columns are spread over at most this many threads (see log_densities)
cdef int _NSLOT = 4


cdef class _Work:
    """A problem's class structure and per-thread column scratch. A fit makes
    one and passes it to every evaluation's column passes (``column_work``):
    allocating the scratch anew each time cost 30% of an exact evaluation at
    n = 1e4 (14.1 ms against 10.2), most of it the kernel mapping and
    unmapping pages."""
    cdef Problem P
    cdef int nthr
    cdef Column* cols
    cdef int* gof
    cdef int* cof
    cdef int* gsize
    cdef double* gh
    cdef double* wcls
    cdef int* kat           # class at column c of group j: kat[(sizes of groups < j) + c]
    cdef object y

    def __cinit__(self, Py_ssize_t ndim, int[::1] y, int K, double[::1] h, int mode,
                  bint at_anchor, Py_ssize_t nbin, double eps, const double[::1] beta, int num_threads):
        cdef Py_ssize_t n = y.shape[0], i
        cdef int k, j, ng = 0, rmax = 0, tid
        self.y = y
        self.nthr = max(1, min(num_threads, ndim, _NSLOT))
        self.gof = <int*> malloc(K * sizeof(int))
        self.cof = <int*> malloc(K * sizeof(int))
        self.gsize = <int*> calloc(K, sizeof(int))
        self.gh = <double*> malloc(K * sizeof(double))
        self.wcls = <double*> calloc(K, sizeof(double))
        self.cols = <Column*> calloc(self.nthr, sizeof(Column))
        self.kat = <int*> malloc(K * sizeof(int))
        if (self.kat == NULL or self.gof == NULL or self.cof == NULL or self.gsize == NULL or self.gh == NULL
                or self.wcls == NULL or self.cols == NULL):
            raise MemoryError()
        for i in range(n):
            self.wcls[y[i]] += 1.0
        # classes sharing a bandwidth share one pass over the anchors
        for k in range(K):
            self.gof[k] = -1
            for j in range(ng):
                if self.gh[j] == h[k]:
                    self.gof[k] = j
                    self.cof[k] = self.gsize[j]
                    self.gsize[j] += 1
                    break
            if self.gof[k] < 0:
                self.gh[ng] = h[k]
                self.gof[k] = ng
                self.cof[k] = 0
                self.gsize[ng] = 1
                ng += 1
            self.wcls[k] = 1.0 / (self.wcls[k] * h[k])
        for j in range(ng):
            rmax = max(rmax, self.gsize[j])
        for k in range(K):
            i = self.cof[k]
            for j in range(self.gof[k]):
                i += self.gsize[j]
            self.kat[i] = k
        self.P.n = n
        self.P.K = K
        self.P.ngroup = ng
        self.P.y = &y[0]
        self.P.gof = self.gof
        self.P.cof = self.cof
        self.P.gsize = self.gsize
        self.P.gh = self.gh
        self.P.wcls = self.wcls
        self.P.mode = mode
        self.P.at_anchor = at_anchor
        self.P.nbin = nbin
        self.P.eps = eps
        if beta.shape[0] < 1 or beta.shape[0] > MAX_ORDER + 1:
            raise ValueError("beta must have 1 to %d entries" % (MAX_ORDER + 1))
        _make_kernel(&beta[0], beta.shape[0], &self.P.ker)
        for tid in range(self.nthr):
            if _column_alloc(&self.cols[tid], n, mode, at_anchor, nbin, rmax, self.P.ker.a + 1):
                raise MemoryError("not enough memory for the kernel-sum tables")

    cdef int _check(self, const int[::1] y, int K, const double[::1] h, int mode, bint at_anchor,
                    Py_ssize_t nbin) except -1:
        cdef int k
        cdef bint same = (y.shape[0] == self.P.n and K == self.P.K and h.shape[0] == K
                          and mode == self.P.mode and at_anchor == self.P.at_anchor
                          and (mode == EXACT or nbin == self.P.nbin))
        if same and y.shape[0] > 0:
            same = &y[0] == self.P.y
        for k in range(K if same else 0):
            same = same and self.gh[self.gof[k]] == h[k]
        if not same:
            raise ValueError("work was made for another problem")
        return 0

    def __dealloc__(self):
        cdef int tid
        if self.cols != NULL:
            for tid in range(self.nthr):
                _column_free(&self.cols[tid])
        free(self.cols); free(self.gof); free(self.cof); free(self.gsize)
        free(self.gh); free(self.wcls); free(self.kat)


def column_work(int[::1] y, int K, double[::1] h, int mode, bint at_anchor,
                Py_ssize_t nbin, double eps, const double[::1] beta, int num_threads):
    """Scratch for log_densities and log_density_gradient with these arguments
    (Zt of any number of rows), to pass as their ``work`` when calling them often."""
    # the passes use at most _NSLOT threads whatever ndim is
    return _Work(_NSLOT, y, K, h, mode, at_anchor, nbin, eps, beta, num_threads)


cdef _Work _work_for(Py_ssize_t ndim, int[::1] y, int K, double[::1] h, int mode, bint at_anchor,
                     Py_ssize_t nbin, double eps, const double[::1] beta, int num_threads, _Work work):
    # y, K, h, the mode and nbin are checked; eps and beta are the caller's to keep
    if work is None:
        return _Work(ndim, y, K, h, mode, at_anchor, nbin, eps, beta, num_threads)
    work._check(y, K, h, mode, at_anchor, nbin)
    return work


def log_densities(double[:, ::1] Zt, int[::1] y, int K, double[::1] h,
                  int mode, bint at_anchor, Py_ssize_t nbin, double eps, const double[::1] beta,
                  int num_threads, _Work work=None):
    """logf[i, k] = sum_t log f_kt(z_it); Zt is [ndim, n]. ``work``: from column_work."""
    cdef Py_ssize_t ndim = Zt.shape[0], n = Zt.shape[1], t
    cdef _Work wk = _work_for(ndim, y, K, h, mode, at_anchor, nbin, eps, beta, num_threads, work)
    cdef const Problem* P = &wk.P
    cdef Column* cols = wk.cols
    cdef int nthr = wk.nthr
    # column t adds into slot t % NSLOT, slots summed in order at the end: the
    # same additions in the same order whatever the number of threads, so a
    # fit does not depend on it
    cdef int nslot = min(ndim, _NSLOT), slot
    parts = np.zeros((nslot, n, K))
    cdef double[:, :, ::1] pv = parts
    cdef int tid, bad = 0
    with nogil:
        for slot in prange(nslot, num_threads=min(nthr, nslot), schedule='static'):
            tid = _thread_id()
            t = slot
            while t < ndim:
                if (_column_setup(P, &Zt[t, 0], &cols[tid])
                        or _column_logf(P, &Zt[t, 0], &cols[tid], &pv[slot, 0, 0])):
                    bad += 1
                t = t + nslot
    if bad:
        raise MemoryError("not enough memory for the kernel-sum tables")
    out = parts[0]
    for slot in range(1, nslot):
        out += parts[slot]
    return out


def log_density_gradient(double[:, ::1] Zt, int[::1] y, int K, double[::1] h,
                         int mode, bint at_anchor, Py_ssize_t nbin, double eps,
                         double[:, ::1] post, const double[::1] beta, int num_threads, _Work work=None):
    """n * d l / d Z, as [ndim, n], given the class posteriors [n, K]. ``work``: from column_work."""
    cdef Py_ssize_t ndim = Zt.shape[0], n = Zt.shape[1], t
    cdef _Work wk = _work_for(ndim, y, K, h, mode, at_anchor, nbin, eps, beta, num_threads, work)
    cdef const Problem* P = &wk.P
    cdef Column* cols = wk.cols
    cdef int nthr = wk.nthr
    dZ = np.zeros((ndim, n))
    cdef double[:, ::1] dv = dZ
    cdef int tid, bad = 0
    with nogil:
        for t in prange(ndim, num_threads=nthr, schedule='static'):
            tid = _thread_id()
            if (_column_setup(P, &Zt[t, 0], &cols[tid])
                    or _column_grad(P, &Zt[t, 0], &cols[tid], &post[0, 0], &dv[t, 0])):
                bad += 1
    if bad:
        raise MemoryError("not enough memory for the kernel-sum tables")
    return dZ


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
        e = exp(logprior[k] + logf[k] - mx)
        if post != NULL:
            post[k] = e
        ssum = ssum + e
    if post != NULL:
        for k in range(K):
            post[k] = post[k] / ssum
    return logprior[y] + logf[y] - (mx + log(ssum))


def log_posteriors(const double[:, ::1] logf, const int[::1] y, const double[::1] logprior, int num_threads):
    """(mean log-likelihood, posteriors [n, K]) from class log densities, one pass per row.

    l = mean_i [logprior_{y_i} + logf_{i, y_i} - log sum_k exp(logprior_k + logf_ik)];
    posteriors exp(logprior_k + logf_ik - that log-sum). A row whose classes
    all have log density -inf gives -inf and NaN posteriors, as the formula does.
    """
    cdef Py_ssize_t n = logf.shape[0], i
    cdef int K = logf.shape[1]
    post = np.empty((n, K))
    terms = np.empty(n)
    cdef double[:, ::1] pv = post
    cdef double[::1] tv = terms
    cdef double total = 0.0
    with nogil:
        for i in prange(n, num_threads=max(1, num_threads), schedule="static"):
            tv[i] = _row_posterior(&logf[i, 0], &logprior[0], K, y[i], &pv[i, 0])
        # summed in order, so that the value does not depend on the threads
        for i in range(n):
            total = total + tv[i]
    return total / n, post


# ---------------------------------------------------------------------------
# R's binned objective (f_NB_cpp value, df_NB_cpp gradient). Every point reads
# its class densities at its grid point, so each column comes down to tables
# [nbin, K] at the grid points. The passes over the points then read all
# columns' tables for a block of points at a time: one sweep over the data
# instead of one read and write of an n x K array per column, which made
# these passes memory-bound (a second thread gained 10%).
# ---------------------------------------------------------------------------

cdef inline Py_ssize_t _block_len(int K) noexcept nogil:
    # points per block: a block's slot sums (NSLOT x K each) stay in cache; a
    # function of K only, so that block sums do not depend on the threads
    return max(8, 4096 // K)


cdef void _block_add(const double* Tt, int K, const int* cell, Py_ssize_t m, double* acc,
                     Py_ssize_t stride) noexcept nogil:
    """acc[j * stride + k] += Tt[cell[j] * K + k] for j < m: one column's
    table read at the points' cells."""
    cdef Py_ssize_t j
    cdef int k
    cdef double* a
    cdef const double* row
    for j in range(m):
        row = &Tt[cell[j] * K]
        a = &acc[j * stride]
        for k in range(K):
            a[k] = a[k] + row[k]


cdef void _block_slots(const double* T, Py_ssize_t TK, int K, const int* C, Py_ssize_t n,
                       const Py_ssize_t* cols, int ncol, int nslot, Py_ssize_t i0, Py_ssize_t m,
                       double* acc) noexcept nogil:
    """acc [m, nslot, K]: for the points i0..i0+m-1, the sums over the columns
    cols[:ncol] of the tables T [ndim, TK] at the points' cells C [ndim, n],
    the column at position p in slot p % nslot (log_densities' slots: see
    _combine)."""
    cdef int p
    cdef Py_ssize_t t
    memset(acc, 0, m * nslot * K * sizeof(double))
    for p in range(ncol):
        t = cols[p]
        _block_add(&T[t * TK], K, &C[t * n + i0], m, &acc[(p % nslot) * K], nslot * K)


cdef inline void _combine(const double* acc, int nslot, int K, double* out) noexcept nogil:
    """out[k] = the slots added in order: log_densities' sums exactly."""
    cdef int s, k
    for k in range(K):
        out[k] = acc[k]
    for s in range(1, nslot):
        for k in range(K):
            out[k] = out[k] + acc[s * K + k]


cdef inline double _grad_point(const Problem* P, const int* kat, const double* S, const double* D,
                               double* W, const double* post, int yi) noexcept nogil:
    """Point i as an evaluation point in one column: -sum_k c_ik D_k / h_k,
    c_ik = (1{y_i = k} - P_ik) / f_k, with the column's tables S, D at the
    point's cell; adds the c weights into the cell's W."""
    cdef int grp, r, c, k, goff = 0
    cdef double f, pk, bsum, d = 0.0
    if P.ngroup == 1:  # the classes in order (kat is the identity)
        return pyopnb_grad_point(S, D, W, post, yi, P.K, P.gh[0])
    for grp in range(P.ngroup):
        r = P.gsize[grp]
        bsum = 0.0
        for c in range(r):
            k = kat[goff + c]
            f = S[k]
            # f = 0 only where class k is hundreds of bandwidths away: then
            # P_ik = 0 too and every term it meets is 0
            pk = ((1.0 if yi == k else 0.0) - post[k]) / f if f > 0.0 else 0.0
            W[k] += pk
            bsum = bsum + pk * D[k]
        d = d - bsum / P.gh[grp]
        goff = goff + r
    return d


cdef class GridTables:
    """R's binned densities of every column of Z = XV at its grid points.

    For column t: the grid lo[t] + g delta[t] (g = 0..nbin-1) and tables
    [nbin * K] (entry g * K + k) of log f with linear binning (f_NB_cpp's
    value) and, for the gradient, f, log f and the kernel derivative sums D
    with simple binning (df_NB_cpp). ``update(Zt)`` builds them for a Z; the
    other methods are the passes over the points. One object serves all of a
    fit's evaluations, so its buffers are allocated once (fresh pages cost a
    tenth of an evaluation at n = 1e6).
    """
    cdef _Work wk
    cdef readonly Py_ssize_t ndim, n, nbin
    cdef Py_ssize_t TK
    cdef int nslot
    cdef readonly bint has_gradient
    cdef readonly object Zt, lo, delta, logS_lin, logS_simple, S_simple, D_simple
    cdef object _post, _terms, _dZ, _W
    cdef readonly int[:, ::1] cells  # each point's grid cell in each column

    def __cinit__(self, Py_ssize_t ndim, int[::1] y, int K, double[::1] h, Py_ssize_t nbin,
                  double eps, const double[::1] beta, bint gradient, int num_threads):
        if ndim < 1 or nbin < 2 or nbin > 2**31 - 1:
            raise ValueError("need ndim >= 1 and 2 <= nbin < 2**31")
        self.wk = _Work(ndim, y, K, h, LINEAR, True, nbin, eps, beta, num_threads)
        self.ndim, self.n, self.nbin, self.TK = ndim, y.shape[0], nbin, nbin * K
        self.nslot = min(ndim, _NSLOT)
        self.has_gradient = gradient
        self.Zt = None
        self.lo = np.empty(ndim)
        self.delta = np.empty(ndim)
        self.logS_lin = np.empty((ndim, self.TK))
        self.logS_simple = np.empty((ndim, self.TK)) if gradient else None
        self.S_simple = np.empty((ndim, self.TK)) if gradient else None
        self.D_simple = np.empty((ndim, self.TK)) if gradient else None
        # the passes' outputs, reused from one Z to the next (a fit's evaluations)
        self._post = None
        self._terms = np.empty(self.n)
        self.cells = np.empty((ndim, self.n), dtype=np.intc)
        self._dZ = None
        self._W = None

    def update(self, double[:, ::1] Zt):
        """Build the tables of Z' = Zt [ndim, n]. Arrays returned by earlier
        passes are overwritten by the next passes."""
        cdef Py_ssize_t ndim = self.ndim, n = self.n, nbin = self.nbin, t, j, off
        cdef int K = self.wk.P.K
        if Zt.shape[0] != ndim or Zt.shape[1] != n:
            raise ValueError(f"Zt must be ({ndim}, {n}), got ({Zt.shape[0]}, {Zt.shape[1]})")
        self.Zt = np.asarray(Zt)
        cdef bint gradient = self.has_gradient
        cdef double[::1] lov = self.lo, dv = self.delta
        cdef double[:, ::1] Tl = self.logS_lin
        cdef double* Tls = _data_or_null(self.logS_simple)
        cdef double* Ts = _data_or_null(self.S_simple)
        cdef double* Td = _data_or_null(self.D_simple)
        cdef Problem Psimple = self.wk.P
        Psimple.mode = SIMPLE
        cdef const Problem* P = &self.wk.P
        cdef Column* cols = self.wk.cols
        cdef Column* col
        cdef const int* kat = self.wk.kat
        cdef int grp, r, tid, bad = 0
        cdef Py_ssize_t e
        cdef int[:, ::1] cv = self.cells
        with nogil:
            for t in prange(ndim, num_threads=self.wk.nthr, schedule='static'):
                tid = _thread_id()
                col = &cols[tid]
                if _column_setup(P, &Zt[t, 0], col):
                    bad += 1
                    continue
                lov[t] = col.lo_grid
                dv[t] = col.delta
                for j in range(n):
                    cv[t, j] = <int> col.bin[j]
                off = 0
                for grp in range(P.ngroup):
                    r = P.gsize[grp]
                    # col.S, col.D [nbin, r] -> entry g * K + (class of column c)
                    if _column_sums(P, col, &Zt[t, 0], grp, r, NULL, True):
                        bad += 1
                    for j in range(nbin * r):
                        Tl[t, (j // r) * K + kat[off + j % r]] = log(col.S[j])
                    if gradient:
                        if _column_sums(&Psimple, col, &Zt[t, 0], grp, r, NULL, True):
                            bad += 1
                        for j in range(nbin * r):
                            e = t * self.TK + (j // r) * K + kat[off + j % r]
                            Ts[e] = col.S[j]
                            Tls[e] = log(col.S[j])
                            Td[e] = col.D[j]
                    off = off + r
        if bad:
            raise MemoryError("not enough memory for the kernel-sum tables")
        return self

    def _check_built(self, logprior=None):
        if self.Zt is None:
            raise ValueError("no tables yet: call update(Zt) first")
        if logprior is not None and len(logprior) != self.wk.P.K:
            raise ValueError(f"logprior must have K = {self.wk.P.K} entries, got {len(logprior)}")

    def value_and_posteriors(self, const double[::1] logprior, bint posteriors):
        """(l with linear binning, posteriors [n, K] with simple binning or None):
        log_posteriors of log_densities' arrays, without forming them."""
        self._check_built(logprior)
        if posteriors and self.logS_simple is None:
            raise ValueError("tables built without the gradient's")
        cdef Py_ssize_t n = self.n, ndim = self.ndim, i, j, b, i0, m
        cdef int K = self.wk.P.K, tid, nthr = self.wk.nthr, nslot = self.nslot
        cdef Py_ssize_t B = _block_len(K), nblk = (n + B - 1) // B
        if posteriors and self._post is None:
            self._post = np.empty((n, K))
        post = self._post if posteriors else None
        terms = self._terms
        rows = np.empty((nthr, K))
        accs = np.empty((nthr, B * _NSLOT * K))
        cols = np.arange(ndim, dtype=np.intp)
        cdef double* pp = _data_or_null(post)
        cdef double[::1] tv = terms
        cdef double[:, ::1] rv = rows
        cdef double[:, ::1] av = accs
        cdef const Py_ssize_t[::1] colv = cols
        cdef const int* y = self.wk.P.y
        cdef const double* Tl = _data_or_null(self.logS_lin)
        cdef const double* Tls = _data_or_null(self.logS_simple)
        cdef const int* C = &self.cells[0, 0]
        cdef Py_ssize_t TK = self.TK
        cdef double total = 0.0
        with nogil:
            for b in prange(nblk, num_threads=nthr, schedule='static'):
                tid = _thread_id()
                i0 = b * B
                m = min(B, n - i0)
                _block_slots(Tl, TK, K, C, n, &colv[0], ndim, nslot, i0, m, &av[tid, 0])
                for j in range(m):
                    _combine(&av[tid, j * nslot * K], nslot, K, &rv[tid, 0])
                    tv[i0 + j] = _row_posterior(&rv[tid, 0], &logprior[0], K, y[i0 + j], NULL)
                if posteriors:
                    _block_slots(Tls, TK, K, C, n, &colv[0], ndim, nslot, i0, m, &av[tid, 0])
                    for j in range(m):
                        _combine(&av[tid, j * nslot * K], nslot, K, &rv[tid, 0])
                        _row_posterior(&rv[tid, 0], &logprior[0], K, y[i0 + j], &pp[(i0 + j) * K])
            # summed in order, so that the value does not depend on the threads
            for i in range(n):
                total = total + tv[i]
        return total / n, post

    def subset_values(self, base, candidates, const double[::1] logprior):
        """l (linear binning) of the columns base + [j], for each j in candidates:
        objective_and_gradient(V[:, base + [j]]) up to rounding.

        Each column's tables are built once, so R's greedy ordering costs a
        pass over the points per step. A point's log-sum-exp over the classes
        is split into the base's part and the candidate's: with
        a_ik = exp(logprior_k + B_ik - m_i) (B the base columns' log densities)
        and E_tgk = exp(logf_tgk - M_tg) (the candidate's table, each grid row
        scaled by its largest entry), log sum_k exp(...) = m_i + M_tg +
        log sum_k a_ik E_tgk. The exponentials are then per point and per grid
        cell, not per point and candidate: one log per candidate instead of K
        exps. Where the sum would underflow (the base and the candidate put a
        point in different classes by over 575 nats) the point takes the
        direct log-sum-exp.
        """
        self._check_built(logprior)
        bcols = np.ascontiguousarray(base, dtype=np.intp).reshape(-1)
        ccols = np.ascontiguousarray(candidates, dtype=np.intp).reshape(-1)
        for arr in (bcols, ccols):
            if arr.size and (arr.min() < 0 or arr.max() >= self.ndim):
                raise ValueError(f"column indices must be in 0..{self.ndim - 1}")
        cdef Py_ssize_t n = self.n, j, b, i0, m, g
        cdef int K = self.wk.P.K, c, k, tid, yi, nthr = self.wk.nthr
        cdef int nb = bcols.size, nc = ccols.size
        cdef const double* row
        cdef const double* er
        cdef double* ar
        cdef double s, mx
        cdef Py_ssize_t B = _block_len(K), nblk = (n + B - 1) // B, t
        if nc == 0:
            return np.empty(0)
        bcols = np.r_[bcols, 0]  # never empty
        cdef const Py_ssize_t[::1] bv = bcols
        cdef const Py_ssize_t[::1] ccv = ccols
        Tl3 = self.logS_lin.reshape(self.ndim, self.nbin, K)
        with np.errstate(invalid="ignore"):
            Mx = Tl3.max(axis=2)
            Ex = np.exp(Tl3 - Mx[:, :, None]).reshape(self.ndim, self.TK)
        cdef const double[:, ::1] Mv = Mx
        cdef const double[:, ::1] Ev = Ex
        part = np.zeros((nblk, nc))
        rows = np.empty((nthr, K))
        accs = np.empty((nthr, B * K))
        aexp = np.empty((nthr, B * K))
        amax = np.empty((nthr, B))
        cdef double[:, ::1] pv = part
        cdef double[:, ::1] rv = rows
        cdef double[:, ::1] av = accs
        cdef double[:, ::1] xv = aexp
        cdef double[:, ::1] mv = amax
        cdef const int* y = self.wk.P.y
        cdef const double* Tl = _data_or_null(self.logS_lin)
        cdef const int* C = &self.cells[0, 0]
        cdef Py_ssize_t TK = self.TK
        with nogil:
            for b in prange(nblk, num_threads=nthr, schedule='static'):
                tid = _thread_id()
                i0 = b * B
                m = min(B, n - i0)
                _block_slots(Tl, TK, K, C, n, &bv[0], nb, 1, i0, m, &av[tid, 0])
                for j in range(m):
                    ar = &xv[tid, j * K]
                    mx = -INFINITY
                    for k in range(K):
                        ar[k] = logprior[k] + av[tid, j * K + k]
                        if ar[k] > mx:
                            mx = ar[k]
                    for k in range(K):
                        ar[k] = exp(ar[k] - mx)
                    mv[tid, j] = mx
                for c in range(nc):
                    t = ccv[c]
                    for j in range(m):
                        g = C[t * n + i0 + j]
                        yi = y[i0 + j]
                        row = &Tl[t * TK + g * K]
                        er = &Ev[t, g * K]
                        ar = &xv[tid, j * K]
                        s = 0.0
                        for k in range(K):
                            s = s + ar[k] * er[k]
                        if s >= 1e-250:  # false for NaN (a row of -inf)
                            pv[b, c] += (logprior[yi] + av[tid, j * K + yi] + row[yi]
                                         - (mv[tid, j] + Mv[t, g] + log(s)))
                        else:
                            for k in range(K):
                                rv[tid, k] = av[tid, j * K + k] + row[k]
                            pv[b, c] += _row_posterior(&rv[tid, 0], &logprior[0], K, yi, NULL)
        return part.sum(axis=0) / n

    def gradient(self, const double[:, ::1] post):
        """n * dl/dZ [ndim, n] of df_NB_cpp, given the posteriors [n, K].

        The derivative in each z_it: point i as an evaluation point,
        -sum_k c_ik D_kt(g_i) / h_k with c_ik = (1{y_i = k} - P_ik) / f_kt(g_i),
        and as a sample point, the kernel sums of the c weights (binned whole
        into the point's cell) at its grid point. A thread owns whole columns:
        the c weights are added over the points in order, and the column's
        tables stay in cache while the posteriors stream past.
        """
        self._check_built()
        if self.S_simple is None:
            raise ValueError("tables built without the gradient's")
        if post.shape[0] != self.n or post.shape[1] != self.wk.P.K:
            raise ValueError(f"post must be ({self.n}, {self.wk.P.K}), got ({post.shape[0]}, {post.shape[1]})")
        cdef Py_ssize_t n = self.n, ndim = self.ndim, nbin = self.nbin, TK = self.TK
        cdef const Problem* P = &self.wk.P
        cdef int K = P.K, k, grp, tid, r, own, c
        cdef Py_ssize_t i, t, gi
        cdef int nthr = self.wk.nthr
        if self._dZ is None:
            self._dZ = np.empty((ndim, n))
            self._W = np.empty((ndim, TK))
        dZ = self._dZ
        Wc = self._W
        Wc.fill(0.0)
        cdef double[:, ::1] dv = dZ
        cdef double* Wp = _data_or_null(Wc)
        cdef const int* C = &self.cells[0, 0]
        cdef double[::1] lo = self.lo, delta = self.delta
        cdef double* Ts = _data_or_null(self.S_simple)
        cdef double* Td = _data_or_null(self.D_simple)
        cdef Column* cols = self.wk.cols
        cdef Column* col
        cdef const int* kat = self.wk.kat
        cdef double h
        cdef const double* pp = &post[0, 0]
        cdef Py_ssize_t e
        cdef int bad = 0, goff
        with nogil:
            for own in prange(nthr, num_threads=nthr, schedule='static'):
                tid = _thread_id()
                col = &cols[tid]
                t = own
                while t < ndim:
                    for i in range(n):
                        e = t * TK + C[t * n + i] * K
                        dv[t, i] = _grad_point(P, kat, &Ts[e], &Td[e], &Wp[e], &pp[i * K], P.y[i])
                    t = t + nthr
                # the sample-point term: sums of each column's c weights at its grid
                t = own
                while t < ndim:
                    _set_grid(col, lo[t], delta[t], nbin)
                    goff = 0
                    for grp in range(P.ngroup):
                        r = P.gsize[grp]
                        h = P.gh[grp]
                        for gi in range(nbin):
                            for c in range(r):
                                col.Wa[gi * r + c] = Wp[t * TK + gi * K + kat[goff + c]]
                        if _sums_on_anchors(col.anchors, nbin, col.Wa, r, h, &P.ker, &col.tb,
                                            col.anchors, col.ident, nbin, NULL, NULL, col.D, False):
                            bad += 1
                        for i in range(n):
                            k = P.y[i]
                            if P.gof[k] == grp:
                                dv[t, i] -= P.wcls[k] / h * col.D[C[t * n + i] * r + P.cof[k]]
                        goff = goff + r
                    t = t + nthr
        if bad:
            raise MemoryError("not enough memory for the kernel-sum tables")
        return dZ


def project(const double[:, ::1] X, const double[:, ::1] V, int num_threads, out=None):
    """Z' = (X V)', each entry summed over the features in order, without FMA.

    That is how R's reference BLAS forms X %*% V. OpenBLAS rounds differently,
    and on ill-conditioned problems the last bit of Z decides where
    L-BFGS-B's line search stops, so R's fits are only reproduced with R's order.
    ``out``: a C-contiguous [ndim, n] float64 array to write into (else a new one).
    """
    cdef Py_ssize_t n = X.shape[0], p = X.shape[1], nd = V.shape[1], i
    if V.shape[0] != p:
        raise ValueError("V must have as many rows as X has columns")
    # V padded to an even number of columns: the kernel takes them in pairs
    Vc = np.zeros((p, nd + nd % 2))
    Vc[:, :nd] = V
    cdef Py_ssize_t ndp = Vc.shape[1]
    cdef const double[:, ::1] vc = Vc
    if (isinstance(out, np.ndarray) and out.shape == (nd, n) and out.dtype == np.float64
            and out.flags.c_contiguous and out.flags.writeable):
        Zt = out
    else:
        Zt = np.empty((nd, n))
    if n == 0 or nd == 0:
        return Zt
    cdef double[:, ::1] zt = Zt
    cdef const double* vp = &vc[0, 0] if p > 0 else NULL
    cdef const double* xp
    with nogil:
        for i in prange(n, num_threads=max(1, num_threads), schedule="static"):
            xp = &X[i, 0] if p > 0 else NULL
            pyopnb_project_row(xp, p, vp, ndp, nd, &zt[0, i], n)
    return Zt


# ---------------------------------------------------------------------------
# R's column statistics, to the bit: R sums left to right in long double
# ---------------------------------------------------------------------------

cdef void _col_sums(const double[:, ::1] X, const long double* centre, bint square,
                    long double* s) noexcept nogil:
    """s[j] = sum_i (X[i, j] - centre[j]) (squared if square), added in row
    order in long double; centre NULL for 0. Two threads take half of the
    columns each and read the rows in order, all their columns at once."""
    cdef Py_ssize_t n = X.shape[0], p = X.shape[1], i, j, j0, j1
    cdef int part
    cdef long double v
    for part in prange(2, num_threads=2, schedule='static'):
        j0 = part * p // 2
        j1 = (part + 1) * p // 2
        for j in range(j0, j1):
            s[j] = 0.0
        for i in range(n):
            for j in range(j0, j1):
                v = <long double> X[i, j]
                if centre != NULL:
                    v = v - centre[j]
                if square:
                    v = v * v
                s[j] = s[j] + v


def r_colmeans(const double[:, ::1] X):
    """R's colMeans: each column summed left to right in long double, over n."""
    cdef Py_ssize_t n = X.shape[0], p = X.shape[1], j
    out = np.empty(p)
    cdef double[::1] ov = out
    cdef long double* s = <long double*> malloc(max(p, 1) * sizeof(long double))
    if s == NULL:
        raise MemoryError()
    with nogil:
        _col_sums(X, NULL, False, s)
        for j in range(p):
            ov[j] = <double> (s[j] / n)
    free(s)
    return out


def r_sd(const double[:, ::1] X):
    """R's sd of each column (n >= 2): a long-double mean refined once
    (m + sum(x - m) / n), then the long-double sum of squared deviations over
    n - 1, its square root taken in double."""
    cdef Py_ssize_t n = X.shape[0], p = X.shape[1], j
    if n < 2:
        raise ValueError("sd needs at least two rows")
    out = np.empty(p)
    cdef double[::1] ov = out
    cdef long double* m = <long double*> malloc(max(p, 1) * sizeof(long double))
    cdef long double* s = <long double*> malloc(max(p, 1) * sizeof(long double))
    if m == NULL or s == NULL:
        free(m); free(s)
        raise MemoryError()
    with nogil:
        _col_sums(X, NULL, False, m)
        for j in range(p):
            m[j] = m[j] / n
        _col_sums(X, m, False, s)
        for j in range(p):
            m[j] = m[j] + s[j] / n
        _col_sums(X, m, True, s)
        for j in range(p):
            ov[j] = sqrt(<double> (s[j] / (n - 1)))
    free(m); free(s)
    return out

