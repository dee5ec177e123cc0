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
    static int _max_threads(void) { return omp_get_max_threads(); }
    #else
    static int _thread_id(void) { return 0; }
    static int _max_threads(void) { return 1; }
    #endif
    """
    int _thread_id() noexcept nogil
    int _max_threads() noexcept nogil


def omp_max_threads():
    """OpenMP's omp_get_max_threads() in the runtime this core is linked with
    (OMP_NUM_THREADS, threadpoolctl's limits); 1 without OpenMP. The thread
    count itself is decided in pyopnb._threads."""
    return _max_threads()

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


cdef void _merge_level(const KeyIdx* src, KeyIdx* dst, Py_ssize_t n, Py_ssize_t width,
                       int nthr) noexcept nogil:
    """Merge the sorted runs src[c w : (c+1) w] pairwise into dst. Each merge is
    cut into pieces by output position (merge path), so that the last levels,
    with fewer merges than threads, still keep every thread busy (the output
    is the stable merge whatever the pieces)."""
    cdef Py_ssize_t nmerge = (n + 2 * width - 1) // (2 * width)
    cdef Py_ssize_t npiece = max(1, (2 * nthr + nmerge - 1) // nmerge)
    cdef Py_ssize_t t, c, p, lo, mid, hi, k0, k1, i0, i1
    for t in prange(nmerge * npiece, num_threads=nthr, schedule='static'):
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


cdef int _argsort(const double* x, Py_ssize_t n, Py_ssize_t* order, double* xs, int nthr) noexcept nogil:
    """order = a stable argsort of x[:n], and xs = x[order] unless xs is NULL
    (read back from the keys: no gather), on nthr threads (the order does not
    depend on them). Returns -1 when out of memory."""
    cdef KeyIdx* a0 = <KeyIdx*> _alloc(n * sizeof(KeyIdx))
    cdef KeyIdx* a1 = <KeyIdx*> _alloc(n * sizeof(KeyIdx))
    cdef Py_ssize_t nchunk = (n + CHUNK - 1) // CHUNK
    cdef Py_ssize_t* counts = <Py_ssize_t*> malloc(nthr * NPASS * NBUCKET * sizeof(Py_ssize_t))
    cdef KeyIdx* tmp
    cdef Py_ssize_t i, c, lo, width
    cdef int tid
    if a0 == NULL or a1 == NULL or counts == NULL:
        free(a0); free(a1); free(counts)
        return -1
    for i in prange(n, num_threads=nthr, schedule='static'):
        a0[i].key = _sort_key(x[i])
        a0[i].idx = i
    for c in prange(nchunk, num_threads=nthr, schedule='static'):
        tid = _thread_id()
        lo = c * CHUNK
        _radix(&a0[lo], &a1[lo], min(CHUNK, n - lo), &counts[tid * NPASS * NBUCKET])
    width = CHUNK
    while width < n:
        _merge_level(a0, a1, n, width, nthr)
        tmp = a0; a0 = a1; a1 = tmp
        width *= 2
    for i in prange(n, num_threads=nthr, schedule='static'):
        order[i] = a0[i].idx
        if xs != NULL:
            xs[i] = _key_value(a0[i].key)
    free(a0); free(a1); free(counts)
    return 0


def argsort(const double[::1] x, int num_threads):
    """Stable argsort of a float64 vector (radix sort; NaN-free input)."""
    cdef Py_ssize_t n = x.shape[0]
    out = np.empty(n, dtype=np.intp)
    cdef Py_ssize_t[::1] ov = out
    cdef int rc = 0
    if n:
        with nogil:
            rc = _argsort(&x[0], n, &ov[0], NULL, max(1, num_threads))
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


cdef extern from "_simd.h" nogil:
    # t[m] = d^m exp(-d), m = 0..a: one gap of d >= 0 bandwidths
    void _decay "pyopnb_decay" (double d, int a, double* t)
    # the same for each of r bandwidths h[c], into t[c (a+1) + m]
    void _decays "pyopnb_decays" (double dist, const double* h, int r, int a, double* t)


def gap_decays(const double[::1] dist, const double[::1] h, int a):
    """T [m, r, a+1]: d^k exp(-d), d = dist[j] / h[c], as the recursion takes
    each gap in the class bandwidths h (r > 1 of them) or in one (r = 1)."""
    cdef Py_ssize_t m = dist.shape[0], j
    cdef int r = h.shape[0]
    if r < 1 or a < 0 or a > MAX_ORDER:
        raise ValueError("need a bandwidth and 0 <= a <= MAX_ORDER")
    T = np.empty((m, r, a + 1))
    cdef double[:, :, ::1] tv = T
    for j in range(m):
        if r == 1:
            _decay(dist[j] / h[0], a, &tv[j, 0, 0])
        else:
            _decays(dist[j], &h[0], r, a, &tv[j, 0, 0])
    return T


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
                   const double* h, bint shared, int a, double* Ldep, double* Rdep) noexcept nogil:
    """Place points that lie between anchors: point i (weights W[i, :r]), with
    lo[i] the last anchor <= pos[i], goes to the left table of the first anchor
    >= pos[i] and to the right table of the last anchor < pos[i], decayed by
    its distance to each (in the bandwidth of each weight column, see
    _recurse). Tables are [G, r, a+1], zeroed by the caller."""
    cdef Py_ssize_t i, g, gl, gr
    for i in range(n):
        g = lo[i]
        if g >= 0 and pos[i] == anchors[g]:
            gl, gr = g, g - 1
        else:
            gl, gr = g + 1, g
        if gl < G:
            _add_decayed(anchors[gl] - pos[i], h, shared, a, &W[i * r], r, &Ldep[gl * r * (a + 1)])
        if gr >= 0:
            _add_decayed(pos[i] - anchors[gr], h, shared, a, &W[i * r], r, &Rdep[gr * r * (a + 1)])


cdef inline void _add_decayed(double dist, const double* h, bint shared, int a, const double* w, int r,
                              double* entry) noexcept nogil:
    """entry[c, k] += w[c] d^k e^-d, d = dist / h[c] (h[0] for every c when
    shared): weights placed dist from a table's anchor."""
    cdef int c, k
    cdef double t[64]
    if shared:
        _decay(dist / h[0], a, t)
    for c in range(r):
        if not shared:
            _decay(dist / h[c], a, t)
        for k in range(a + 1):
            entry[c * (a + 1) + k] += w[c] * t[k]


cdef void _recurse(const double* anchors, Py_ssize_t G, int r, const double* h, bint shared, int a,
                  const double* binom, const double* Ldep, int dep_a1, double* Lincl,
                  double* R, double* T, bint on_anchor, int nthr) noexcept nogil:
    """The recursion. Forward: Lincl[g] = shift(Lincl[g-1]) + Ldep[g].
    Backward: R[g] += shift(R[g+1]) (R holds the right deposits), or, with
    on_anchor, R[g] = shift(R[g+1] + Ldep[g+1]).

    Weight column c has bandwidth h[c], or h[0] for all when shared (every
    R fit): then each gap has one decay row, T [G, a+1]; otherwise a row per
    column, T [G, r, a+1]. Either way the classes go through one pass over
    the anchors, so class bandwidths cost only their exponentials.
    Ldep[g, c, k] is Ldep[(g r + c) dep_a1 + k], and 0 for k >= dep_a1: with
    dep_a1 = 1 it is just the weights sitting on the anchors (order 0).
    on_anchor: every sample sits on an anchor, so a point's right-table entry
    is its own weight shifted one gap left, and R needs no deposits (nor
    zeroing). Each gap's decay is computed once (on nthr threads); the two
    passes then run side by side when nthr > 1.
    """
    cdef Py_ssize_t g
    cdef int part
    cdef int a1 = a + 1
    if G == 0:
        return
    if shared:
        for g in prange(1, G, num_threads=nthr, schedule="static"):
            _decay((anchors[g] - anchors[g - 1]) / h[0], a, &T[g * a1])
    else:
        for g in prange(1, G, num_threads=nthr, schedule="static"):
            _decays(anchors[g] - anchors[g - 1], h, r, a, &T[g * r * a1])
    for part in prange(2, num_threads=min(2, nthr), schedule="static"):
        if part == 0:
            _forward(G, r, a, binom, T, shared, Ldep, dep_a1, Lincl)
        else:
            _backward(G, r, a, binom, T, shared, Ldep, dep_a1, R, on_anchor)


cdef inline double _dep(const double* dep, int dep_a1, Py_ssize_t g, int r, int c, int k) noexcept nogil:
    return dep[(g * r + c) * dep_a1 + k] if k < dep_a1 else 0.0


cdef inline const double* _gap_decay(const double* T, Py_ssize_t g, int c, int r, int a1,
                                   bint shared) noexcept nogil:
    """Gap g's decay row for weight column c (see _recurse)."""
    return &T[g * a1] if shared else &T[(g * r + c) * a1]


cdef void _forward(Py_ssize_t G, int r, int a, const double* binom, const double* T, bint shared,
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
            _shift(&Lincl[(g - 1) * row + c * a1], buf, a, _gap_decay(T, g, c, r, a1, shared), binom)
            for k in range(a1):
                Lincl[g * row + c * a1 + k] = buf[k] + _dep(Ldep, dep_a1, g, r, c, k)


cdef void _backward(Py_ssize_t G, int r, int a, const double* binom, const double* T, bint shared,
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
        for c in range(r):
            t = _gap_decay(T, g + 1, c, r, a1, shared)
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


cdef inline void _point_decays(double rawl, double rawr, double h, int a, bint hasL, bint hasR,
                               bint onanchor, bint logS, double* dl, double* dr, double* tl,
                               double* tr) noexcept nogil:
    """An evaluation point's distances to its anchors in bandwidth h (rawl to
    the left one, rawr to the right one) and their decays (or just powers
    for sums kept in log space)."""
    if hasL:
        dl[0] = rawl / h
        if logS:
            _powers(dl[0], a, tl)
        else:
            _decay(dl[0], a, tl)
    if hasR and not onanchor:
        dr[0] = rawr / h
        if logS:
            _powers(dr[0], a, tr)
        else:
            _decay(dr[0], a, tr)
    elif onanchor:
        dr[0] = 0.0


cdef void _evaluate(const double* e, const Py_ssize_t* lo, Py_ssize_t m,
                    const Py_ssize_t* outrow,
                    const double* anchors, Py_ssize_t G, int r, const double* h, bint shared,
                    const Kernel* ker, const double* Ldep, int dep_a1, const double* Lincl,
                    const double* Rexcl, double* S, double* D, bint logS) noexcept nogil:
    """S[row, c] = ksum and D[row, c] = dksum at e[j], row = outrow[j] (j if NULL),
    weight column c in bandwidth h[c] (h[0] when shared).

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
    cdef double Lbuf[64]
    cdef double Rbuf[64]
    cdef double inc[64]
    cdef double zero[64]
    cdef const double* Lv
    cdef const double* Rv
    cdef bint hasL, hasR, onanchor, moved
    cdef double s, dd, dl = 0.0, dr = 0.0, sr, rawl = 0.0, rawr = 0.0
    for k in range(a1):
        zero[k] = 0.0
    for j in range(m):
        g = lo[j]
        o = outrow[j] if outrow != NULL else j
        hasL = g >= 0
        onanchor = hasL and e[j] == anchors[g]
        hasR = onanchor or g + 1 < G
        rawl = e[j] - anchors[g] if hasL else 0.0
        rawr = anchors[g + 1] - e[j] if hasR and not onanchor else 0.0
        # a point on its anchor (every exact sum at the sample) reads the
        # tables as they are, whatever the bandwidth
        moved = rawl != 0.0 or rawr != 0.0
        if shared or not moved:
            _point_decays(rawl, rawr, h[0], a, hasL, hasR, onanchor, logS, &dl, &dr, tl, tr)
        for c in range(r):
            if moved and not shared:
                _point_decays(rawl, rawr, h[c], a, hasL, hasR, onanchor, logS, &dl, &dr, tl, tr)
            if hasL and dl == 0.0:
                Lv = &Lincl[g * row + c * a1]
            elif hasL:
                _shift(&Lincl[g * row + c * a1], Lbuf, a, tl, ker.binom)
                Lv = Lbuf
            else:
                Lv = zero
            if onanchor:
                Rv = &Rexcl[g * row + c * a1]
            elif hasR:
                # points >= anchor g+1: its exclusive table plus what sits on it
                for k in range(a1):
                    inc[k] = Rexcl[(g + 1) * row + c * a1 + k] + _dep(Ldep, dep_a1, g + 1, r, c, k)
                _shift(inc, Rbuf, a, tr, ker.binom)
                Rv = Rbuf
            else:
                Rv = zero
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
    double* T       # each gap's decays (see _recurse)


cdef int _tables_alloc(Tables* tb, Py_ssize_t G, int r, int a1, bint shared, bint deposits=True) noexcept nogil:
    # deposit tables only for points between anchors (weights on anchors need none)
    tb.Ldep = <double*> _alloc(G * r * a1 * sizeof(double)) if deposits else NULL
    tb.Lincl = <double*> _alloc(G * r * a1 * sizeof(double))
    tb.R = <double*> _alloc(G * r * a1 * sizeof(double))
    tb.T = <double*> _alloc(G * (1 if shared else r) * a1 * sizeof(double))
    if (deposits and tb.Ldep == NULL) or tb.Lincl == NULL or tb.R == NULL or tb.T == NULL:
        return -1
    return 0


cdef void _tables_free(Tables* tb) noexcept nogil:
    free(tb.Ldep); free(tb.Lincl); free(tb.R); free(tb.T)
    memset(tb, 0, sizeof(Tables))


cdef void _sums_on_anchors(const double* anchors, Py_ssize_t G, const double* Wa, int r,
                          const double* h, bint shared, const Kernel* ker, Tables* tb,
                          const double* e, const Py_ssize_t* lo, Py_ssize_t m,
                          const Py_ssize_t* outrow, double* S, double* D, bint logS, int nthr) noexcept nogil:
    """Sums of weights Wa [G, r] sitting on the anchors (column c in bandwidth
    h[c], or h[0] when shared), at m evaluation points, on nthr threads. (The
    weights serve as the left deposits directly: no table to fill.)"""
    _recurse(anchors, G, r, h, shared, ker.a, ker.binom, Wa, 1, tb.Lincl, tb.R, tb.T, True, nthr)
    _evaluate_chunks(e, lo, m, outrow, anchors, G, r, h, shared, ker, Wa, 1, tb, S, D, logS, nthr)


cdef void _evaluate_chunks(const double* e, const Py_ssize_t* lo, Py_ssize_t m,
                           const Py_ssize_t* outrow, const double* anchors, Py_ssize_t G, int r,
                           const double* h, bint shared, const Kernel* ker, const double* dep, int dep_a1,
                           const Tables* tb, double* S, double* D, bint logS, int nthr) noexcept nogil:
    """_evaluate over chunks of points on nthr threads (points are independent)."""
    cdef Py_ssize_t chunk = max(1024, (m + 4 * nthr - 1) // (4 * nthr)), nch = (m + chunk - 1) // chunk, c0, s0, len0
    for c0 in prange(nch, num_threads=nthr, schedule="static"):
        s0 = c0 * chunk
        len0 = min(chunk, m - s0)
        if outrow != NULL:
            _evaluate(e + s0, lo + s0, len0, outrow + s0, anchors, G, r, h, shared, ker, dep, dep_a1,
                      tb.Lincl, tb.R, S, D, logS)
        else:
            _evaluate(e + s0, lo + s0, len0, NULL, anchors, G, r, h, shared, ker, dep, dep_a1, tb.Lincl, tb.R,
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
               e, bint want_S, bint want_D, bint log_S, int num_threads):
    """Exact kernel sums of the r weight columns W [n, r] at e (None: at x),
    on num_threads threads.

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
    cdef int a1 = ker.a + 1, bad = 0, nthr = max(1, num_threads)
    cdef Tables tb
    cdef Py_ssize_t* order = <Py_ssize_t*> _alloc(n * sizeof(Py_ssize_t))
    cdef double* anchors = <double*> _alloc(n * sizeof(double))
    cdef double* Wa = <double*> _alloc(n * r * sizeof(double))
    # at the sample the sorted points are their own evaluation points
    cdef Py_ssize_t* eorder = order if at_x else <Py_ssize_t*> _alloc(m * sizeof(Py_ssize_t))
    cdef double* es = anchors if at_x else <double*> _alloc(m * sizeof(double))
    cdef Py_ssize_t* lo = <Py_ssize_t*> _alloc(m * sizeof(Py_ssize_t))
    with nogil:
        if (_tables_alloc(&tb, n, r, a1, True, False) or order == NULL or anchors == NULL or Wa == NULL
                or eorder == NULL or es == NULL or lo == NULL or _argsort(&x[0], n, order, anchors, nthr)):
            bad = 1
        else:
            for q in prange(n, num_threads=nthr, schedule="static"):
                for j in range(r):
                    Wa[q * r + j] = W[order[q], j]
            if at_x:
                # in sorted order; a point's anchor is its tie group's last
                _last_of_ties(anchors, n, lo)
            elif _argsort(&ev[0], m, eorder, es, nthr):
                bad = 1
            else:
                # evaluation points sorted too: tables are read in order, anchors found by a merge
                q = -1
                for j in range(m):
                    while q + 1 < n and anchors[q + 1] <= es[j]:
                        q += 1
                    lo[j] = q
            if not bad:
                _sums_on_anchors(anchors, n, Wa, r, &h, True, &ker, &tb, es, lo, m, eorder, Sp, Dp, log_S, nthr)
    _tables_free(&tb)
    if not at_x:
        free(eorder); free(es)
    free(order); free(anchors); free(Wa); free(lo)
    if bad:
        raise MemoryError("exact_sums: out of memory")
    return S, D


def grid_sums(const double[::1] grid, const double[:, ::1] Wg, double h, const double[::1] beta,
              const double[::1] e, bint want_S, bint want_D, int num_threads):
    """Sums of grid weights Wg [G, r] (grid equally spaced) at any points e,
    on num_threads threads.

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
        if _tables_alloc(&tb, G, r, ker.a + 1, True, False) or lo == NULL:
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
            _sums_on_anchors(&grid[0], G, &Wg[0, 0], r, &h, True, &ker, &tb, &e[0], lo, m,
                             NULL, Sp, Dp, False, max(1, num_threads))
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
    const int* y            # class codes 0..K-1
    const double* h         # bandwidth of each class
    bint shared             # one bandwidth for every class (every R fit): one decay per gap
    const double* wcls      # 1 / (n_k h_k)
    int mode                # EXACT, SIMPLE or LINEAR
    bint at_anchor          # densities read at the point's grid point (R's binned) or at the point
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


cdef int _column_alloc(Column* col, Py_ssize_t n, int mode, bint at_anchor, Py_ssize_t nbin,
                       int K, bint shared, int a1, bint points) noexcept nogil:
    # anchors: the points (exact) or the grid; evaluation rows: the points,
    # or the grid when R reads densities at grid points. Sized to what the
    # mode uses: a binned fit at n = 1e6 needs grid-sized tables only.
    # Without points, only the grid's tables (R's binned objective's passes
    # over the points keep their own buffers).
    cdef Py_ssize_t G = n if mode == EXACT else nbin
    cdef Py_ssize_t M = nbin if (mode != EXACT and at_anchor) else n
    cdef Py_ssize_t N = M if M > G else G
    cdef Py_ssize_t npt = n if points else 0
    memset(col, 0, sizeof(Column))
    col.anchors = <double*> _alloc(G * sizeof(double))
    col.order = <Py_ssize_t*> _alloc(npt * sizeof(Py_ssize_t))
    col.bin = <Py_ssize_t*> _alloc(npt * sizeof(Py_ssize_t))
    col.lo = <Py_ssize_t*> _alloc(npt * sizeof(Py_ssize_t))
    col.row = <Py_ssize_t*> _alloc(npt * sizeof(Py_ssize_t))
    col.evlo = <Py_ssize_t*> _alloc(N * sizeof(Py_ssize_t))
    col.Wa = <double*> _alloc(G * K * sizeof(double))
    col.Wpts = <double*> _alloc(npt * K * sizeof(double))
    col.ident = <Py_ssize_t*> _alloc(N * sizeof(Py_ssize_t))
    col.S = <double*> _alloc(N * K * sizeof(double))
    col.D = <double*> _alloc(N * K * sizeof(double))
    # deposit tables only where points lie between anchors: the exact binned gradient
    if (_tables_alloc(&col.tb, G, K, a1, shared, mode == LINEAR and not at_anchor) or col.anchors == NULL
            or col.order == NULL or col.bin == NULL or col.lo == NULL or col.row == NULL
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
    memset(col, 0, sizeof(Column))


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


cdef int _column_setup(const Problem* P, const double* z, Column* col, int nthr) noexcept nogil:
    """Anchors, evaluation rows and each point's anchor for one column of Z = XV."""
    cdef Py_ssize_t n = P.n, i, q, g
    cdef double zmin, zmax, lo, delta
    if P.mode == EXACT:
        if _argsort(z, n, col.order, col.anchors, nthr):
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
    delta = _grid_delta(zmin, zmax, P.eps, P.nbin, &lo)
    _set_grid(col, lo, delta, P.nbin)
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


cdef void _bin_weights(const Problem* P, Column* col, const double* z, const double* Wpts,
                       int mode) noexcept nogil:
    """col.Wa [G, K]: the points' weights moved onto the anchors.

    Wpts [n, K], or NULL for the class weights: point i weighs 1/(n_k h_k)
    in the column of its class k, so only one column per point is touched.
    """
    cdef Py_ssize_t i, q, g
    cdef int c, k, K = P.K, c0 = 0, c1 = P.K
    cdef double frac, w = 0.0
    if mode == EXACT:
        if Wpts == NULL:
            memset(col.Wa, 0, col.G * K * sizeof(double))
        for q in range(P.n):
            i = col.order[q]
            if Wpts == NULL:
                k = P.y[i]
                col.Wa[q * K + k] = P.wcls[k]
            else:
                for c in range(K):
                    col.Wa[q * K + c] = Wpts[i * K + c]
        return
    memset(col.Wa, 0, col.G * K * sizeof(double))
    for i in range(P.n):
        g = col.bin[i]
        if Wpts == NULL:
            c0 = P.y[i]
            c1 = c0 + 1
            w = P.wcls[c0]
        frac = (z[i] - col.lo_grid) / col.delta - g if mode == LINEAR else 0.0
        for c in range(c0, c1):
            if Wpts != NULL:
                w = Wpts[i * K + c]
            if mode == LINEAR:
                _bin_linear(&col.Wa[c], g, K, frac, w)
            else:
                col.Wa[g * K + c] += w


cdef void _column_sums(const Problem* P, Column* col, const double* z, const double* Wpts,
                      bint want_S, bint want_D, int nthr) noexcept nogil:
    """Kernel sums of the point weights Wpts [n, K] (NULL: the class weights),
    each class's column in its bandwidth, at the column's evaluation rows
    (col.S, col.D [m, K]; point i is row col.row[i])."""
    _bin_weights(P, col, z, Wpts, P.mode)
    _sums_on_anchors(col.anchors, col.G, col.Wa, P.K, P.h, P.shared, &P.ker, &col.tb,
                            col.ev, col.evlo, col.m, NULL, col.S if want_S else NULL,
                            col.D if want_D else NULL, False, nthr)


cdef void _add_logs(const Problem* P, Column* cols, int w, Py_ssize_t t0, int nslot, double* parts,
                    int nthr) noexcept nogil:
    """parts[(t0 + c) % nslot, i, k] += log f_k(t0+c)(z_i) for the wave's columns
    c < w, added in column order: each slot's sum takes its columns in order
    whatever the waves and threads. The logs are taken first, in place and
    in row order (sequential reads: 13% faster than at each point's row).
    Rows and points are independent: any split will do."""
    cdef Py_ssize_t n = P.n, i, j, j0, j1, it, mK = cols[0].m * P.K
    cdef Py_ssize_t chunk = max(4096, (w * mK + 4 * nthr - 1) // (4 * nthr)), nch = (mK + chunk - 1) // chunk
    cdef int c, k, K = P.K
    cdef const double* src
    cdef double* dst
    cdef double* sk
    for it in prange(w * nch, num_threads=nthr, schedule='static'):
        sk = cols[it // nch].S
        j0 = (it % nch) * chunk
        j1 = min(mK, j0 + chunk)
        for j in range(j0, j1):
            sk[j] = log(sk[j])
    for i in prange(n, num_threads=nthr, schedule='static'):
        for c in range(w):
            src = &cols[c].S[cols[c].row[i] * K]
            dst = &parts[(((t0 + c) % nslot) * n + i) * K]
            for k in range(K):
                dst[k] = dst[k] + src[k]


cdef extern from "_simd.h" nogil:
    void pyopnb_project_row(const double* x, Py_ssize_t p, const double* V, Py_ssize_t ndp,
                            Py_ssize_t nd, double* zt, Py_ssize_t n)
    double pyopnb_grad_point(const double* S, const double* D, double* W, const double* post,
                             int y, int K, const double* h, bint shared)


cdef void _point_terms(const Problem* P, Column* cols, int w, double* gz0, const double* post,
                       int nthr) noexcept nogil:
    """Point i as an evaluation point in the wave's columns (see _column_grad):
    gz[c, i] = -sum_k c_ik D_k(z_i) / h_k and the c weights
    c_ik = (1{y_i = k} - P_ik) / f_k(z_i) into Wpts [n, K]. f = 0 only where
    class k is hundreds of bandwidths away: then P_ik = 0 too and every kernel
    term this weight meets is 0."""
    cdef Py_ssize_t n = P.n, i, o
    cdef int c, k, K = P.K
    cdef Column* col
    for i in prange(n, num_threads=nthr, schedule='static'):
        for c in range(w):
            col = &cols[c]
            o = col.row[i] * K
            for k in range(K):
                col.Wpts[i * K + k] = 0.0
            gz0[c * n + i] = pyopnb_grad_point(&col.S[o], &col.D[o], &col.Wpts[i * K], &post[i * K],
                                               P.y[i], K, P.h, P.shared)


cdef void _sample_terms(const Problem* P, Column* cols, int w, double* gz0, int nthr) noexcept nogil:
    """Point i as a sample point in the wave's columns: gz[c, i] -= the
    derivative of its class's weight, from the kernel sums of the c weights
    (col.D at the point's row)."""
    cdef Py_ssize_t n = P.n, i
    cdef int c, k
    for i in prange(n, num_threads=nthr, schedule='static'):
        k = P.y[i]
        for c in range(w):
            gz0[c * n + i] -= P.wcls[k] / P.h[k] * cols[c].D[cols[c].row[i] * P.K + k]


cdef void _column_grad(const Problem* P, const double* z, Column* col, double* gz, int nthr) noexcept nogil:
    """The sample-point part of gz = n * d l / d z_t for this column, after
    _point_terms (see the paper's T1, T2).

    With c_ik = (1{y_i = k} - P_ik) / f_kt(z_it) (P the posteriors), the derivative is
      - sum_k c_ik D_k(z_i) / h_k            (point i as an evaluation point: _point_terms)
      + d/dz_i of the class-y_i weights      (point i as a sample point)
    The second is a kernel sum of the c weights: read at the point's anchor for
    exact and R's simple binning (into col.D here, subtracted by
    _sample_terms); for linear binning it acts through the binning fractions
    and the grid's ends (min and max of z), added to gz here.
    """
    cdef Py_ssize_t n = P.n, i, g, G = col.G, imin, imax
    cdef int k, c, K = P.K, a1 = P.ker.a + 1
    cdef double d_lo, d_delta, gam, b, u
    if P.mode != LINEAR:
        _column_sums(P, col, z, col.Wpts, False, True, nthr)
        return
    # Phi (ksum) and Psi (dksum) of the c weights at the grid points,
    # from the points where they really are.
    memset(col.tb.Ldep, 0, G * K * a1 * sizeof(double))
    memset(col.tb.R, 0, G * K * a1 * sizeof(double))
    _deposit(z, col.Wpts, n, K, col.lo, col.anchors, G, P.h, P.shared, P.ker.a, col.tb.Ldep, col.tb.R)
    _recurse(col.anchors, G, K, P.h, P.shared, P.ker.a, P.ker.binom, col.tb.Ldep, a1,
             col.tb.Lincl, col.tb.R, col.tb.T, False, nthr)
    _evaluate(col.anchors, col.ident, G, NULL, col.anchors, G, K, P.h, P.shared, &P.ker,
              col.tb.Ldep, a1, col.tb.Lincl, col.tb.R, col.S, col.D, False)
    # class weights binned, for the grid-motion term
    _bin_weights(P, col, z, NULL, LINEAR)
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
        b = P.wcls[k] * (col.S[(g + 1) * K + k] - col.S[g * K + k])
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
    _grid_motion(gz, imin, imax, d_lo, d_delta, P.nbin)


# Reductions over the columns go through this many slots (column t into slot
# t % _NSLOT, the slots added in order at the end): a fixed order of
# additions, set by ndim alone, so the sums do not depend on the threads.
cdef int _NSLOT = 4


cdef inline int _wave(Py_ssize_t ndim, int nthr) noexcept nogil:
    """Columns taken at a time by the column passes: as even waves as nthr
    threads allow (20 columns on 16 threads: two waves of 10). Each column
    of a wave has its own scratch; the passes over the points then use every
    thread whatever the wave's size."""
    cdef Py_ssize_t nwave = (ndim + nthr - 1) // nthr
    return <int> max(1, (ndim + nwave - 1) // nwave)


cdef class _Work:
    """A problem's class structure and the column scratch (one per column of
    a wave, made when first needed). A fit makes one and passes it to every
    evaluation's column passes (``column_work``): allocating the scratch anew
    each time cost 30% of an exact evaluation at n = 1e4 (14.1 ms against
    10.2), most of it the kernel mapping and unmapping pages."""
    cdef Problem P
    cdef int nthr
    cdef int ncol           # columns of scratch made so far
    cdef bint points        # scratch for passes over the points (else only grid tables)
    cdef Column* cols
    cdef double* h
    cdef double* wcls
    cdef object y

    def __cinit__(self, int[::1] y, int K, double[::1] h, int mode, bint at_anchor, Py_ssize_t nbin,
                  double eps, const double[::1] beta, int num_threads, bint points=True):
        cdef Py_ssize_t n = y.shape[0], i
        cdef int k
        if K < 1 or h.shape[0] != K:
            raise ValueError("need K >= 1 and one bandwidth per class")
        self.y = y
        self.nthr = max(1, num_threads)
        self.points = points
        self.h = <double*> malloc(K * sizeof(double))
        self.wcls = <double*> calloc(K, sizeof(double))
        self.cols = <Column*> calloc(self.nthr, sizeof(Column))
        if self.h == NULL or self.wcls == NULL or self.cols == NULL:
            raise MemoryError()
        for i in range(n):
            self.wcls[y[i]] += 1.0
        self.P.shared = True
        for k in range(K):
            self.h[k] = h[k]
            self.P.shared = self.P.shared and h[k] == h[0]
            self.wcls[k] = 1.0 / (self.wcls[k] * h[k])
        self.P.n = n
        self.P.K = K
        self.P.y = &y[0]
        self.P.h = self.h
        self.P.wcls = self.wcls
        self.P.mode = mode
        self.P.at_anchor = at_anchor
        self.P.nbin = nbin
        self.P.eps = eps
        if beta.shape[0] < 1 or beta.shape[0] > MAX_ORDER + 1:
            raise ValueError("beta must have 1 to %d entries" % (MAX_ORDER + 1))
        _make_kernel(&beta[0], beta.shape[0], &self.P.ker)

    cdef int _ensure(self, int w) except -1:
        """Scratch for w columns at a time (w <= the thread count)."""
        w = min(w, self.nthr)
        while self.ncol < w:
            if _column_alloc(&self.cols[self.ncol], self.P.n, self.P.mode, self.P.at_anchor, self.P.nbin,
                             self.P.K, self.P.shared,
                             # grid-only scratch: one order more, for GridTables' psi kernel
                             self.P.ker.a + (1 if self.points else 2), self.points):
                _column_free(&self.cols[self.ncol])
                raise MemoryError("not enough memory for the kernel-sum tables")
            self.ncol += 1
        return 0

    cdef int _check(self, const int[::1] y, int K, const double[::1] h, int mode, bint at_anchor,
                    Py_ssize_t nbin) except -1:
        cdef int k
        cdef bint same = (y.shape[0] == self.P.n and K == self.P.K and h.shape[0] == K
                          and mode == self.P.mode and at_anchor == self.P.at_anchor
                          and (mode == EXACT or nbin == self.P.nbin))
        if same and y.shape[0] > 0:
            same = &y[0] == self.P.y
        for k in range(K if same else 0):
            same = same and self.h[k] == h[k]
        if not same:
            raise ValueError("work was made for another problem")
        return 0

    def __dealloc__(self):
        cdef int c
        if self.cols != NULL:
            for c in range(self.ncol):
                _column_free(&self.cols[c])
        free(self.cols); free(self.h); free(self.wcls)


def column_work(int[::1] y, int K, double[::1] h, int mode, bint at_anchor,
                Py_ssize_t nbin, double eps, const double[::1] beta, int num_threads):
    """Scratch for log_densities and log_density_gradient with these arguments
    (Zt of any number of rows), to pass as their ``work`` when calling them often."""
    return _Work(y, K, h, mode, at_anchor, nbin, eps, beta, num_threads)


cdef _Work _work_for(int[::1] y, int K, double[::1] h, int mode, bint at_anchor,
                     Py_ssize_t nbin, double eps, const double[::1] beta, int num_threads, _Work work):
    # y, K, h, the mode and nbin are checked; eps, beta and the threads are the caller's to keep
    if work is None:
        return _Work(y, K, h, mode, at_anchor, nbin, eps, beta, num_threads)
    work._check(y, K, h, mode, at_anchor, nbin)
    return work


cdef int _wave_setup(const Problem* P, const double* Zt, Py_ssize_t t0, int w, Column* cols, bint want_D,
                     int nthr) noexcept nogil:
    """Columns t0..t0+w-1 of Zt [ndim, n] set up and summed (col.S, and
    col.D with want_D), a column to a thread (the whole team when w = 1).
    Returns how many failed (out of memory)."""
    cdef int c, bad = 0, inner = nthr if w == 1 else 1
    for c in prange(w, num_threads=w, schedule='static'):
        if _column_setup(P, &Zt[(t0 + c) * P.n], &cols[c], inner):
            bad += 1
        else:
            _column_sums(P, &cols[c], &Zt[(t0 + c) * P.n], NULL, True, want_D, inner)
    return bad


cdef _Work _wave_work(const double[:, ::1] Zt, int[::1] y, int K, double[::1] h, int mode, bint at_anchor,
                      Py_ssize_t nbin, double eps, const double[::1] beta, int num_threads, _Work work):
    """The column passes' scratch for Zt, with room for a wave's columns."""
    cdef _Work wk = _work_for(y, K, h, mode, at_anchor, nbin, eps, beta, num_threads, work)
    if Zt.shape[1] != wk.P.n:
        raise ValueError(f"Zt must have {wk.P.n} columns (points), got {Zt.shape[1]}")
    wk._ensure(_wave(max(Zt.shape[0], 1), wk.nthr))
    return wk


def log_densities(double[:, ::1] Zt, int[::1] y, int K, double[::1] h,
                  int mode, bint at_anchor, Py_ssize_t nbin, double eps, const double[::1] beta,
                  int num_threads, _Work work=None):
    """logf[i, k] = sum_t log f_kt(z_it); Zt is [ndim, n]. ``work``: from column_work.

    The columns go in waves (see _wave): each column of a wave is set up
    and summed on its own thread (the whole team when the wave has one
    column), then every thread adds the wave's logs over blocks of points.
    """
    cdef Py_ssize_t ndim = Zt.shape[0], n = Zt.shape[1], t0
    cdef _Work wk = _wave_work(Zt, y, K, h, mode, at_anchor, nbin, eps, beta, num_threads, work)
    cdef const Problem* P = &wk.P
    cdef int nthr = wk.nthr, W = _wave(max(ndim, 1), wk.nthr), w
    cdef int nslot = min(ndim, _NSLOT), slot
    cdef Column* cols = wk.cols
    parts = np.zeros((nslot, n, K))
    cdef double[:, :, ::1] pv = parts
    cdef int bad = 0
    if ndim == 0 or n == 0:
        return np.zeros((n, K))
    with nogil:
        t0 = 0
        while t0 < ndim and not bad:
            w = <int> min(W, ndim - t0)
            bad = _wave_setup(P, &Zt[0, 0], t0, w, cols, False, nthr)
            if not bad:
                _add_logs(P, cols, w, t0, nslot, &pv[0, 0, 0], nthr)
            t0 = t0 + w
    if bad:
        raise MemoryError("not enough memory for the kernel-sum tables")
    out = parts[0]
    for slot in range(1, nslot):
        out += parts[slot]
    return out


def log_density_gradient(double[:, ::1] Zt, int[::1] y, int K, double[::1] h,
                         int mode, bint at_anchor, Py_ssize_t nbin, double eps,
                         double[:, ::1] post, const double[::1] beta, int num_threads, _Work work=None):
    """n * d l / d Z, as [ndim, n], given the class posteriors [n, K]. ``work``: from column_work.

    In waves of columns as log_densities: set-up and kernel sums a column to
    a thread, the per-point terms on every thread.
    """
    cdef Py_ssize_t ndim = Zt.shape[0], n = Zt.shape[1], t0
    cdef _Work wk = _wave_work(Zt, y, K, h, mode, at_anchor, nbin, eps, beta, num_threads, work)
    cdef const Problem* P = &wk.P
    cdef int nthr = wk.nthr, W = _wave(max(ndim, 1), wk.nthr), w, c, inner
    if post.shape[0] != n or post.shape[1] != K:
        raise ValueError(f"post must be ({n}, {K}), got ({post.shape[0]}, {post.shape[1]})")
    cdef Column* cols = wk.cols
    dZ = np.zeros((ndim, n))
    if ndim == 0 or n == 0:
        return dZ
    cdef double[:, ::1] dv = dZ
    cdef int bad = 0
    with nogil:
        t0 = 0
        while t0 < ndim and not bad:
            w = <int> min(W, ndim - t0)
            inner = nthr if w == 1 else 1
            bad = _wave_setup(P, &Zt[0, 0], t0, w, cols, True, nthr)
            if bad:
                break
            _point_terms(P, cols, w, &dv[t0, 0], &post[0, 0], nthr)
            for c in prange(w, num_threads=w, schedule='static'):
                _column_grad(P, &Zt[t0 + c, 0], &cols[c], &dv[t0 + c, 0], inner)
            if P.mode != LINEAR:
                _sample_terms(P, cols, w, &dv[t0, 0], nthr)
            t0 = t0 + w
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


cdef inline Py_ssize_t _bin_nblk(Py_ssize_t n) noexcept nogil:
    """Blocks of points whose grid weights are summed apart and then added in
    block order (R's binned passes): a function of n only, so the sums do not
    depend on the threads; one block up to 65536 points (the order of a
    single sequential pass), at most 64 (their grids' memory)."""
    return max(1, min(64, (n + 65535) // 65536))


cdef void _reduce_blocks(double* part, Py_ssize_t nblk, Py_ssize_t TK) noexcept nogil:
    """part[0] += part[1], then part[2], ...: a column's block grids, in block order."""
    cdef Py_ssize_t b, j
    cdef double* dst = part
    cdef const double* src
    for b in range(1, nblk):
        src = &part[b * TK]
        for j in range(TK):
            dst[j] = dst[j] + src[j]


cdef void _grid_sums(const Problem* P, const Kernel* ker, Column* col, const double* Wk, double* S,
                    double* D, int logmode, int nthr) noexcept nogil:
    """Kernel sums (kernel ker) at the column's grid points of grid weights
    Wk [nbin, K], each class in its bandwidth: S and D [nbin, K], either
    NULL if not wanted. logmode: 0 the sums, 1 their logs (R's tables: log of
    the sum), 2 logs summed in log space (finite however far a grid point is
    from a class's weights)."""
    cdef Py_ssize_t j
    _sums_on_anchors(col.anchors, P.nbin, Wk, P.K, P.h, P.shared, ker, &col.tb, col.anchors, col.ident,
                     P.nbin, NULL, S, D, logmode == 2, nthr)
    if logmode == 1 and S != NULL:
        for j in range(P.nbin * P.K):
            S[j] = log(S[j])


cdef inline double _cell_frac(double z, double lo, double delta, Py_ssize_t g) noexcept nogil:
    """A point's place in its cell g, in [0, 1): its linear binning fraction."""
    return (z - lo) / delta - g


cdef void _block_interp(const double* T, Py_ssize_t TK, int K, const int* C, const double* Zt,
                        const double* lo, const double* delta, Py_ssize_t n, Py_ssize_t ndim,
                        Py_ssize_t i0, Py_ssize_t m, double* acc) noexcept nogil:
    """acc [m, K]: for the points i0..i0+m-1, the sum over the columns (in
    order) of the tables T [ndim, TK] interpolated linearly between the
    point's two grid points, (1 - u) T[g] + u T[g + 1]."""
    cdef Py_ssize_t t, j, i, g
    cdef int k
    cdef double u
    cdef const double* row
    cdef double* a
    memset(acc, 0, m * K * sizeof(double))
    for t in range(ndim):
        for j in range(m):
            i = i0 + j
            g = C[t * n + i]
            u = _cell_frac(Zt[t * n + i], lo[t], delta[t], g)
            row = &T[t * TK + g * K]
            a = &acc[j * K]
            for k in range(K):
                a[k] = a[k] + ((1.0 - u) * row[k] + u * row[K + k])


cdef class GridTables:
    """R's binned densities of every column of Z = XV at its grid points.

    For column t: the grid lo[t] + g delta[t] (g = 0..nbin-1) and tables
    [nbin * K] (entry g * K + k) of log f with linear binning (f_NB_cpp's
    value) and, for the gradient, f, log f and the kernel derivative sums D
    with simple binning (df_NB_cpp). ``update(Zt)`` builds them for a Z; the
    other methods are the passes over the points. One object serves all of a
    fit's evaluations, so its buffers are allocated once (fresh pages cost a
    tenth of an evaluation at n = 1e6).

    Parallel work: the passes over the points go by (column, block of
    points) on every thread, each block binning its points into its own grid
    (blocks fixed by n, see _bin_nblk, added in order); the grid-sized kernel
    sums go a column to a thread.
    """
    cdef _Work wk
    cdef readonly Py_ssize_t ndim, n, nbin
    cdef Py_ssize_t TK, nblk
    cdef int nslot
    cdef readonly bint has_gradient, interp
    cdef readonly object Zt, lo, delta, logS_lin, logS_simple, S_simple, D_simple
    cdef object _post, _terms, _dZ, _W, _part_lin, _part_simple, _zmin, _zmax, _Psi, _edge
    cdef Kernel psi
    cdef readonly int[:, ::1] cells  # each point's grid cell in each column

    def __cinit__(self, Py_ssize_t ndim, int[::1] y, int K, double[::1] h, Py_ssize_t nbin,
                  double eps, const double[::1] beta, bint gradient, int num_threads, bint interp=False):
        cdef int m
        if ndim < 1 or nbin < 2 or nbin > 2**31 - 1:
            raise ValueError("need ndim >= 1 and 2 <= nbin < 2**31")
        if y.shape[0] < 1:
            raise ValueError("need at least one point")
        self.wk = _Work(y, K, h, LINEAR, True, nbin, eps, beta, num_threads, False)
        self.wk._ensure(<int> min(ndim, self.wk.nthr))
        self.ndim, self.n, self.nbin, self.TK = ndim, y.shape[0], nbin, nbin * K
        self.nblk = _bin_nblk(self.n)
        self.nslot = min(ndim, _NSLOT)
        self.has_gradient = gradient
        self.interp = interp
        self.Zt = None
        self.lo = np.empty(ndim)
        self.delta = np.empty(ndim)
        self.logS_lin = np.empty((ndim, self.TK))
        simple = gradient and not interp
        self.logS_simple = np.empty((ndim, self.TK)) if simple else None
        self.S_simple = np.empty((ndim, self.TK)) if simple else None
        self.D_simple = np.empty((ndim, self.TK)) if simple else None
        if interp:
            # psi(u) = u K'(u), even: beta_psi[m] = m beta_m - beta_{m-1}
            if beta.shape[0] > MAX_ORDER:
                raise ValueError("beta has too many entries for the interpolated gradient")
            bpsi = np.zeros(beta.shape[0] + 1)
            for m in range(beta.shape[0] + 1):
                bpsi[m] = (m * beta[m] if m < beta.shape[0] else 0.0) - (beta[m - 1] if m > 0 else 0.0)
            _make_kernel(<double*> cnp.PyArray_DATA(bpsi), bpsi.shape[0], &self.psi)
            self._Psi = np.empty((ndim, self.TK)) if gradient else None
            self._edge = np.empty((ndim, self.nblk, 4)) if gradient else None
        # each (column, block)'s grid weights, and its extremes
        self._part_lin = np.empty((ndim, self.nblk, self.TK))
        self._part_simple = np.empty((ndim, self.nblk, self.TK)) if gradient else None
        self._zmin = np.empty((ndim, self.nblk))
        self._zmax = np.empty((ndim, self.nblk))
        # the passes' outputs, reused from one Z to the next (a fit's evaluations)
        self._post = None
        self._terms = np.empty(self.n)
        self.cells = np.empty((ndim, self.n), dtype=np.intc)
        self._dZ = None
        self._W = None

    def update(self, double[:, ::1] Zt):
        """Build the tables of Z' = Zt [ndim, n]. Arrays returned by earlier
        passes are overwritten by the next passes."""
        cdef Py_ssize_t ndim = self.ndim, n = self.n, nbin = self.nbin, TK = self.TK, nblk = self.nblk
        cdef int K = self.wk.P.K, nthr = self.wk.nthr
        if Zt.shape[0] != ndim or Zt.shape[1] != n:
            raise ValueError(f"Zt must be ({ndim}, {n}), got ({Zt.shape[0]}, {Zt.shape[1]})")
        self.Zt = np.asarray(Zt)
        cdef bint interp = self.interp
        cdef bint gradient = self.has_gradient and not interp
        cdef double[::1] lov = self.lo, dv = self.delta
        cdef double* Tl = _data_or_null(self.logS_lin)
        cdef double* Tls = _data_or_null(self.logS_simple)
        cdef double* Ts = _data_or_null(self.S_simple)
        cdef double* Td = _data_or_null(self.D_simple)
        cdef double* PL = _data_or_null(self._part_lin)
        cdef double* PS = _data_or_null(self._part_simple)
        cdef double[:, ::1] zmn = self._zmin, zmx = self._zmax
        cdef const Problem* P = &self.wk.P
        cdef Column* cols = self.wk.cols
        cdef Column* col
        cdef int tid, k, inner = nthr if ndim == 1 else 1
        cdef Py_ssize_t B = (n + nblk - 1) // nblk, it, t, b, i, i0, i1, g, j
        cdef double mn, mx, z, frac, wt
        cdef double* pl
        cdef double* ps
        cdef int[:, ::1] cv = self.cells
        with nogil:
            for it in prange(ndim * nblk, num_threads=nthr, schedule='static'):
                t = it // nblk
                i0 = (it % nblk) * B
                i1 = min(n, i0 + B)
                mn = Zt[t, i0]
                mx = Zt[t, i0]
                for i in range(i0 + 1, i1):
                    if Zt[t, i] < mn:
                        mn = Zt[t, i]
                    if Zt[t, i] > mx:
                        mx = Zt[t, i]
                zmn[t, it % nblk] = mn
                zmx[t, it % nblk] = mx
            for t in range(ndim):
                mn = zmn[t, 0]
                mx = zmx[t, 0]
                for b in range(1, nblk):
                    mn = min(mn, zmn[t, b])
                    mx = max(mx, zmx[t, b])
                dv[t] = _grid_delta(mn, mx, P.eps, nbin, &lov[t])
            # cells, and each block's grid weights: linear binning (the value)
            # and simple (the gradient), whole class weights 1/(n_k h_k)
            for it in prange(ndim * nblk, num_threads=nthr, schedule='static'):
                t = it // nblk
                i0 = (it % nblk) * B
                i1 = min(n, i0 + B)
                pl = &PL[it * TK]
                memset(pl, 0, TK * sizeof(double))
                if gradient:
                    ps = &PS[it * TK]
                    memset(ps, 0, TK * sizeof(double))
                for i in range(i0, i1):
                    z = Zt[t, i]
                    g = _grid_cell(z, lov[t], dv[t], nbin)
                    cv[t, i] = <int> g
                    k = P.y[i]
                    wt = P.wcls[k]
                    frac = _cell_frac(z, lov[t], dv[t], g)
                    _bin_linear(&pl[k], g, K, frac, wt)
                    if gradient:
                        ps[g * K + k] += wt
            for t in prange(ndim, num_threads=min(ndim, nthr), schedule='static'):
                tid = _thread_id()
                col = &cols[tid]
                _set_grid(col, lov[t], dv[t], nbin)
                _reduce_blocks(&PL[t * nblk * TK], nblk, TK)
                _grid_sums(P, &P.ker, col, &PL[t * nblk * TK], &Tl[t * TK], NULL, 2 if interp else 1, inner)
                if gradient:
                    _reduce_blocks(&PS[t * nblk * TK], nblk, TK)
                    _grid_sums(P, &P.ker, col, &PS[t * nblk * TK], &Ts[t * TK], &Td[t * TK], 0, inner)
                    for j in range(TK):
                        Tls[t * TK + j] = log(Ts[t * TK + j])
        return self

    def _check_built(self, logprior=None):
        if self.Zt is None:
            raise ValueError("no tables yet: call update(Zt) first")
        if logprior is not None and len(logprior) != self.wk.P.K:
            raise ValueError(f"logprior must have K = {self.wk.P.K} entries, got {len(logprior)}")

    def value_and_posteriors(self, const double[::1] logprior, bint posteriors):
        """(l with linear binning, posteriors [n, K] with simple binning or None):
        log_posteriors of log_densities' arrays, without forming them.
        Interpolated tables: l and the posteriors of the log densities
        interpolated linearly between each point's two grid points."""
        self._check_built(logprior)
        if self.interp:
            return self._interp_value(logprior, posteriors)
        if posteriors and self.logS_simple is None:
            raise ValueError("tables built without the gradient's")
        cdef Py_ssize_t n = self.n, ndim = self.ndim, i, j, b, i0, m
        cdef int K = self.wk.P.K, tid, nthr = self.wk.nthr, nslot = self.nslot
        cdef Py_ssize_t B = _block_len(K), nblk = (n + B - 1) // B
        if posteriors and self._post is None:
            self._post = np.empty((n, K))
        post = self._post if posteriors else None
        terms = self._terms
        rows = np.empty((nthr, K + 16))  # padded: threads writing neighbouring rows share cache lines
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

    def _interp_value(self, const double[::1] logprior, bint posteriors):
        if posteriors and not self.has_gradient:
            raise ValueError("tables built without the gradient's")
        cdef Py_ssize_t n = self.n, ndim = self.ndim, i, j, b, i0, m
        cdef int K = self.wk.P.K, tid, nthr = self.wk.nthr
        cdef Py_ssize_t B = _block_len(K), nblk = (n + B - 1) // B
        if posteriors and self._post is None:
            self._post = np.empty((n, K))
        post = self._post if posteriors else None
        accs = np.empty((nthr, B * K + 16))
        cdef double* pp = _data_or_null(post)
        cdef double[::1] tv = self._terms
        cdef double[:, ::1] av = accs
        cdef const int* y = self.wk.P.y
        cdef const double* Tl = _data_or_null(self.logS_lin)
        cdef const double* Zp = _data_or_null(self.Zt)
        cdef const double* lo = _data_or_null(self.lo)
        cdef const double* dl = _data_or_null(self.delta)
        cdef const int* C = &self.cells[0, 0]
        cdef double total = 0.0
        with nogil:
            for b in prange(nblk, num_threads=nthr, schedule='static'):
                tid = _thread_id()
                i0 = b * B
                m = min(B, n - i0)
                _block_interp(Tl, self.TK, K, C, Zp, lo, dl, n, ndim, i0, m, &av[tid, 0])
                for j in range(m):
                    tv[i0 + j] = _row_posterior(&av[tid, j * K], &logprior[0], K, y[i0 + j],
                                                &pp[(i0 + j) * K] if posteriors else NULL)
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
        if self.interp:
            raise ValueError("subset_values reads R's tables, not interpolated ones")
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
        rows = np.empty((nthr, K + 16))  # padded: threads writing neighbouring rows share cache lines
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
        into the point's cell) at its grid point. The c weights are added per
        (column, block of points) into the block's grid, the blocks then in
        order (as update's).
        """
        self._check_built()
        if self.interp and self.has_gradient:
            return self._interp_gradient(post)
        if self.S_simple is None:
            raise ValueError("tables built without the gradient's")
        if post.shape[0] != self.n or post.shape[1] != self.wk.P.K:
            raise ValueError(f"post must be ({self.n}, {self.wk.P.K}), got ({post.shape[0]}, {post.shape[1]})")
        cdef Py_ssize_t n = self.n, ndim = self.ndim, nbin = self.nbin, TK = self.TK, nblk = self.nblk
        cdef const Problem* P = &self.wk.P
        cdef int K = P.K, k, tid, nthr = self.wk.nthr, inner = nthr if ndim == 1 else 1
        cdef Py_ssize_t B = (n + nblk - 1) // nblk, it, t, i, i0, i1, e
        if self._dZ is None:
            self._dZ = np.empty((ndim, n))
            self._W = np.empty((ndim, TK))
        dZ = self._dZ
        cdef double[:, ::1] dv = dZ
        cdef double* DW = _data_or_null(self._W)
        cdef double* PW = _data_or_null(self._part_lin)
        cdef double* pw
        cdef const int* C = &self.cells[0, 0]
        cdef double[::1] lo = self.lo, delta = self.delta
        cdef double* Ts = _data_or_null(self.S_simple)
        cdef double* Td = _data_or_null(self.D_simple)
        cdef Column* cols = self.wk.cols
        cdef Column* col
        cdef const double* pp = &post[0, 0]
        with nogil:
            for it in prange(ndim * nblk, num_threads=nthr, schedule='static'):
                t = it // nblk
                i0 = (it % nblk) * B
                i1 = min(n, i0 + B)
                pw = &PW[it * TK]
                memset(pw, 0, TK * sizeof(double))
                for i in range(i0, i1):
                    e = C[t * n + i] * K
                    dv[t, i] = pyopnb_grad_point(&Ts[t * TK + e], &Td[t * TK + e], &pw[e], &pp[i * K], P.y[i],
                                                 K, P.h, P.shared)
            # the sample-point term: sums of each column's c weights at its grid
            for t in prange(ndim, num_threads=min(ndim, nthr), schedule='static'):
                tid = _thread_id()
                col = &cols[tid]
                _set_grid(col, lo[t], delta[t], nbin)
                _reduce_blocks(&PW[t * nblk * TK], nblk, TK)
                _grid_sums(P, &P.ker, col, &PW[t * nblk * TK], NULL, &DW[t * TK], 0, inner)
            for it in prange(ndim * nblk, num_threads=nthr, schedule='static'):
                t = it // nblk
                i0 = (it % nblk) * B
                i1 = min(n, i0 + B)
                for i in range(i0, i1):
                    k = P.y[i]
                    dv[t, i] -= P.wcls[k] / P.h[k] * DW[t * TK + C[t * n + i] * K + k]
        return dZ


    def _interp_gradient(self, const double[:, ::1] post):
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
        if post.shape[0] != self.n or post.shape[1] != self.wk.P.K:
            raise ValueError(f"post must be ({self.n}, {self.wk.P.K}), got ({post.shape[0]}, {post.shape[1]})")
        cdef Py_ssize_t n = self.n, ndim = self.ndim, nbin = self.nbin, TK = self.TK, nblk = self.nblk
        cdef const Problem* P = &self.wk.P
        cdef int K = P.K, k, tid, nthr = self.wk.nthr, inner = nthr if ndim == 1 else 1
        cdef Py_ssize_t B = (n + nblk - 1) // nblk, it, t, i, i0, i1, g, j, b, imin, imax
        if self._dZ is None:
            self._dZ = np.empty((ndim, n))
            self._W = np.empty((ndim, TK))
        dZ = self._dZ
        cdef double[:, ::1] dv = dZ
        cdef double* Phi = _data_or_null(self._W)
        cdef double* Psi = _data_or_null(self._Psi)
        cdef double* PA = _data_or_null(self._part_simple)
        cdef double* Wb = _data_or_null(self._part_lin)  # block 0 of each column: its binned weights
        cdef double* edge = _data_or_null(self._edge)
        cdef double* pa
        cdef const double* row
        cdef const int* C = &self.cells[0, 0]
        cdef const double* Zp = _data_or_null(self.Zt)
        cdef const double* Tl = _data_or_null(self.logS_lin)
        cdef double[::1] lo = self.lo, delta = self.delta
        cdef Column* cols = self.wk.cols
        cdef Column* col
        cdef const double* pp = &post[0, 0]
        cdef double u, a, e, d, sv, kern, d_lo, d_delta
        cdef double* ed
        kdelta = np.zeros(ndim)
        cdef double[::1] kd = kdelta
        with nogil:
            # evaluation-point terms, and the a_ik binned onto the grid by block
            for it in prange(ndim * nblk, num_threads=nthr, schedule='static'):
                t = it // nblk
                i0 = (it % nblk) * B
                i1 = min(n, i0 + B)
                pa = &PA[it * TK]
                memset(pa, 0, TK * sizeof(double))
                for i in range(i0, i1):
                    g = C[t * n + i]
                    u = _cell_frac(Zp[t * n + i], lo[t], delta[t], g)
                    row = &Tl[t * TK + g * K]
                    e = 0.0
                    for k in range(K):
                        a = (1.0 if P.y[i] == k else 0.0) - pp[i * K + k]
                        e = e + a * (row[K + k] - row[k])
                        _bin_linear(&pa[k], g, K, u, a)
                    dv[t, i] = e
            # per column: c = A / f on the grid, its sums with K and with psi
            for t in prange(ndim, num_threads=min(ndim, nthr), schedule='static'):
                tid = _thread_id()
                col = &cols[tid]
                _set_grid(col, lo[t], delta[t], nbin)
                pa = &PA[t * nblk * TK]
                _reduce_blocks(pa, nblk, TK)
                for j in range(TK):
                    # |c| from logs: f may be far below A's scale
                    a = pa[j]
                    pa[j] = 0.0 if a == 0.0 else (exp(log(a) - Tl[t * TK + j]) if a > 0.0
                                                  else -exp(log(-a) - Tl[t * TK + j]))
                _grid_sums(P, &P.ker, col, pa, &Phi[t * TK], NULL, 0, inner)
                _grid_sums(P, &self.psi, col, pa, &Psi[t * TK], NULL, 0, inner)
                kern = 0.0
                for j in range(TK):
                    kern = kern + Wb[t * nblk * TK + j] * Psi[t * TK + j]
                kd[t] = kern / delta[t]
            # sample-point terms, dz = (dl/ds) / delta, and each block's share of the grid's motion
            for it in prange(ndim * nblk, num_threads=nthr, schedule='static'):
                t = it // nblk
                i0 = (it % nblk) * B
                i1 = min(n, i0 + B)
                ed = &edge[it * 4]
                ed[0] = 0.0
                ed[1] = 0.0
                imin = i0
                imax = i0
                for i in range(i0, i1):
                    k = P.y[i]
                    g = C[t * n + i]
                    d = dv[t, i] + P.wcls[k] * (Phi[t * TK + (g + 1) * K + k] - Phi[t * TK + g * K + k])
                    sv = (Zp[t * n + i] - lo[t]) / delta[t]
                    dv[t, i] = d / delta[t]
                    ed[0] = ed[0] - d / delta[t]
                    ed[1] = ed[1] - sv * d / delta[t]
                    if Zp[t * n + i] < Zp[t * n + imin]:
                        imin = i
                    if Zp[t * n + i] > Zp[t * n + imax]:
                        imax = i
                ed[2] = <double> imin
                ed[3] = <double> imax
            # the grid's motion, its blocks' shares added in order
            for t in range(ndim):
                d_lo = 0.0
                d_delta = kd[t]
                imin = <Py_ssize_t> edge[t * nblk * 4 + 2]
                imax = <Py_ssize_t> edge[t * nblk * 4 + 3]
                for b in range(nblk):
                    ed = &edge[(t * nblk + b) * 4]
                    d_lo = d_lo + ed[0]
                    d_delta = d_delta + ed[1]
                    if Zp[t * n + <Py_ssize_t> ed[2]] < Zp[t * n + imin]:
                        imin = <Py_ssize_t> ed[2]
                    if Zp[t * n + <Py_ssize_t> ed[3]] > Zp[t * n + imax]:
                        imax = <Py_ssize_t> ed[3]
                _grid_motion(&dv[t, 0], imin, imax, d_lo, d_delta, nbin)
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
                    long double* s, int nthr) noexcept nogil:
    """s[j] = sum_i (X[i, j] - centre[j]) (squared if square), added in row
    order in long double; centre NULL for 0. Each thread takes a range of
    columns and reads the rows in order, all its columns at once: a column's
    sum is the same whoever adds it."""
    cdef Py_ssize_t n = X.shape[0], p = X.shape[1], i, j, j0, j1
    cdef int part, nparts = <int> max(1, min(nthr, p))
    cdef long double v
    for part in prange(nparts, num_threads=nparts, schedule='static'):
        j0 = part * p // nparts
        j1 = (part + 1) * p // nparts
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


def r_colmeans(const double[:, ::1] X, int num_threads):
    """R's colMeans: each column summed left to right in long double, over n."""
    cdef Py_ssize_t n = X.shape[0], p = X.shape[1], j
    out = np.empty(p)
    cdef double[::1] ov = out
    cdef long double* s = <long double*> malloc(max(p, 1) * sizeof(long double))
    if s == NULL:
        raise MemoryError()
    with nogil:
        _col_sums(X, NULL, False, s, num_threads)
        for j in range(p):
            ov[j] = <double> (s[j] / n)
    free(s)
    return out


def r_sd(const double[:, ::1] X, int num_threads):
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
        _col_sums(X, NULL, False, m, num_threads)
        for j in range(p):
            m[j] = m[j] / n
        _col_sums(X, m, False, s, num_threads)
        for j in range(p):
            m[j] = m[j] + s[j] / n
        _col_sums(X, m, True, s, num_threads)
        for j in range(p):
            ov[j] = sqrt(<double> (s[j] / (n - 1)))
    free(m); free(s)
    return out

