# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""A stable argsort of doubles on any number of threads: LSD radix (11-bit
digits) for large inputs, merge sort for small ones (a radix pass's bucket
counts cost more than sorting a few hundred keys), and on one thread a
radix sort by each key's rank in value where the keys spread. Each gives the
one stable order, so results do not depend on which runs."""
import numpy as np
from cython.parallel cimport prange
from libc.math cimport INFINITY
from libc.string cimport memcmp, memcpy, memset

from pyopnb._core.common cimport _region_threads, _thread_id
from pyopnb._core.scratch cimport scratch_alloc, scratch_free


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
DEF RUN = 16
# one thread's sort by rank (_rank_sort): two digits up to this many keys,
# three past; and the moves a key its insertion sort may take before the
# full radix sort takes over
DEF RANK_TWO_PASSES = 1 << 18
DEF RANK_MOVES = 4


cdef struct KeyIdx:
    unsigned long long key
    Py_ssize_t idx


cdef struct RankScale:
    # a key's rank in value, floor((v - lo) * scale), at most top (_rank_sort)
    double lo
    double scale
    long long top


cdef inline Py_ssize_t _digit(unsigned long long key, int shift, const RankScale* rank) noexcept nogil:
    """The radix digit at bit `shift`: of the key's bits (rank NULL) or of
    its rank (where rounding reaches top + 1, top; a NaN there too: its rank
    only places it for the insertion sort, which orders every key)."""
    cdef double r
    cdef long long q
    if rank == NULL:
        return (key >> shift) & (NBUCKET - 1)
    r = (_key_value(key) - rank.lo) * rank.scale
    q = <long long> r if r < rank.top else rank.top
    return (q >> shift) & (NBUCKET - 1)


cdef inline void _radix(KeyIdx* a0, KeyIdx* a1, Py_ssize_t n, Py_ssize_t* counts, int npass,
                        const RankScale* rank) noexcept nogil:
    """Stable LSD radix sort of a0[:n] by npass digits (_digit: of the key,
    or of its rank); the result ends in a0 (a1 is scratch; counts: npass x
    NBUCKET). Inlined, so that each caller's digit source is fixed."""
    cdef Py_ssize_t i, tot, cnt
    cdef int p, b, shift
    cdef bint skip
    cdef KeyIdx* tmp
    cdef KeyIdx* orig = a0
    memset(counts, 0, npass * NBUCKET * sizeof(Py_ssize_t))
    for i in range(n):
        for p in range(npass):
            counts[p * NBUCKET + _digit(a0[i].key, DIGIT * p, rank)] += 1
    for p in range(npass):
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
            b = _digit(a0[i].key, shift, rank)
            a1[counts[p * NBUCKET + b]] = a0[i]
            counts[p * NBUCKET + b] += 1
        tmp = a0; a0 = a1; a1 = tmp
    if a0 != orig:
        memcpy(orig, a0, n * sizeof(KeyIdx))


cdef inline bint _insertion(KeyIdx* a, Py_ssize_t lo, Py_ssize_t hi, Py_ssize_t budget) noexcept nogil:
    """Insertion sort of a[lo:hi] by key (stable); False once its moves pass
    budget (a[lo:hi] is then a permutation, not yet sorted)."""
    cdef Py_ssize_t i, j, moves = 0
    cdef KeyIdx item
    for i in range(lo + 1, hi):
        if a[i - 1].key <= a[i].key:
            continue
        item = a[i]
        j = i
        while j > lo and a[j - 1].key > item.key:
            a[j] = a[j - 1]
            j -= 1
        a[j] = item
        moves += i - j
        if moves > budget:
            return False
    return True


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


cdef void _small_sort(const double* x, Py_ssize_t n, Py_ssize_t* order, double* xs) noexcept nogil:
    """The stable argsort of n <= SORT_SMALL keys: insertion sort of runs of RUN,
    then pairwise stable merges, in buffers on the stack (no allocation)."""
    cdef KeyIdx buf0[SORT_SMALL]
    cdef KeyIdx buf1[SORT_SMALL]
    cdef KeyIdx* a0 = buf0
    cdef KeyIdx* a1 = buf1
    cdef KeyIdx* tmp
    cdef Py_ssize_t i, lo, hi, mid, width
    for i in range(n):
        a0[i].key = _sort_key(x[i])
        a0[i].idx = i
    lo = 0
    while lo < n:
        hi = min(lo + RUN, n)
        _insertion(a0, lo, hi, RUN * RUN)
        lo = hi
    width = RUN
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            _merge(&a0[lo], mid - lo, &a0[mid], hi - mid, &a1[lo])
            lo = hi
        tmp = a0; a0 = a1; a1 = tmp
        width *= 2
    _write_order(a0, n, order, xs)


cdef inline void _write_order(const KeyIdx* a, Py_ssize_t n, Py_ssize_t* order, double* xs) noexcept nogil:
    """order = the sorted items' indices, and xs = their keys' values unless NULL."""
    cdef Py_ssize_t i
    for i in range(n):
        order[i] = a[i].idx
        if xs != NULL:
            xs[i] = _key_value(a[i].key)


cdef int _rank_sort(const double* x, Py_ssize_t n, Py_ssize_t* order, double* xs) noexcept nogil:
    """The stable argsort of x[:n] on one thread: an LSD radix sort by each
    key's rank, floor((v - min) * scale) on two or three digits, then an insertion
    sort by the whole key. The rank rounds monotonically in v, so after the
    radix passes only keys of one rank can be out of order: the insertion
    sort moves few. Two passes of 11 bits stand in for the six that the whole
    key takes. Whatever the ranks, the insertion sort leaves every key in
    order. Returns 1 where the keys do not spread evenly enough (an infinite
    key, a range that overflows, the insertion sort past RANK_MOVES moves a
    key): the caller sorts by the whole key; -1 when out of memory."""
    cdef Py_ssize_t i
    cdef double lo = x[0], hi = x[0], v
    cdef int npass = 2 if n <= RANK_TWO_PASSES else 3
    cdef RankScale rank
    for i in range(n):
        v = x[i]
        if v < lo:
            lo = v
        elif v > hi:
            hi = v
    rank.lo = lo
    rank.scale = (hi - lo) if hi > lo else 0.0
    if not (rank.scale > 0.0 and rank.scale < INFINITY):
        return 1            # one value, or an infinity among them
    rank.top = (<long long> 1 << (DIGIT * npass)) - 1
    rank.scale = (rank.top + 1.0) / rank.scale
    if not (rank.scale < INFINITY):
        return 1
    cdef KeyIdx* a0 = <KeyIdx*> scratch_alloc(n * sizeof(KeyIdx))
    cdef KeyIdx* a1 = <KeyIdx*> scratch_alloc(n * sizeof(KeyIdx))
    cdef Py_ssize_t* counts = <Py_ssize_t*> scratch_alloc(npass * NBUCKET * sizeof(Py_ssize_t))
    cdef int rc = 1
    if a0 == NULL or a1 == NULL or counts == NULL:
        scratch_free(a0); scratch_free(a1); scratch_free(counts)
        return -1
    for i in range(n):
        a0[i].key = _sort_key(x[i])
        a0[i].idx = i
    _radix(a0, a1, n, counts, npass, &rank)
    if _insertion(a0, 0, n, RANK_MOVES * n):
        _write_order(a0, n, order, xs)
        rc = 0
    scratch_free(a0); scratch_free(a1); scratch_free(counts)
    return rc


cdef int _argsort(const double* x, Py_ssize_t n, Py_ssize_t* order, double* xs, int nthr) noexcept nogil:
    """order = a stable argsort of x[:n], and xs = x[order] unless xs is NULL
    (read back from the keys: no gather), on nthr threads (the order does not
    depend on them). Returns -1 when out of memory."""
    cdef int rc
    nthr = _region_threads(nthr, n)
    if n <= SORT_SMALL:
        _small_sort(x, n, order, xs)
        return 0
    if nthr == 1:
        rc = _rank_sort(x, n, order, xs)
        if rc <= 0:
            return rc
    cdef KeyIdx* a0 = <KeyIdx*> scratch_alloc(n * sizeof(KeyIdx))
    cdef KeyIdx* a1 = <KeyIdx*> scratch_alloc(n * sizeof(KeyIdx))
    cdef Py_ssize_t nchunk = (n + CHUNK - 1) // CHUNK
    cdef Py_ssize_t* counts = <Py_ssize_t*> scratch_alloc(nthr * NPASS * NBUCKET * sizeof(Py_ssize_t))
    cdef KeyIdx* tmp
    cdef Py_ssize_t i, c, lo, width
    cdef int tid
    if a0 == NULL or a1 == NULL or counts == NULL:
        scratch_free(a0); scratch_free(a1); scratch_free(counts)
        return -1
    for i in prange(n, num_threads=nthr, schedule='static'):
        a0[i].key = _sort_key(x[i])
        a0[i].idx = i
    for c in prange(nchunk, num_threads=nthr, schedule='static'):
        tid = _thread_id()
        lo = c * CHUNK
        _radix(&a0[lo], &a1[lo], min(CHUNK, n - lo), &counts[tid * NPASS * NBUCKET], NPASS, NULL)
    width = CHUNK
    while width < n:
        _merge_level(a0, a1, n, width, nthr)
        tmp = a0; a0 = a1; a1 = tmp
        width *= 2
    for i in prange(n, num_threads=nthr, schedule='static'):
        order[i] = a0[i].idx
        if xs != NULL:
            xs[i] = _key_value(a0[i].key)
    scratch_free(a0); scratch_free(a1); scratch_free(counts)
    return 0


cdef int _argsort_memo(const double* x, Py_ssize_t n, Py_ssize_t* order, double* xs, SortMemo* memo,
                       int nthr) noexcept nogil:
    """_argsort, remembered in ``memo`` (NULL: _argsort alone): keys the
    same to the bit as the last call's take its order and sorted keys back,
    two copies where a sort reads and writes every key several times. A
    fit's gradient pass sorts the columns its value pass sorted. (Sorting
    from the last order by insertion was tried first: the key it reads by
    that order is a random read each, as long as the sort it saves.)
    Returns -1 when out of memory."""
    if memo != NULL and n > 0 and memo.order[0] >= 0 and memcmp(x, memo.x, n * sizeof(double)) == 0:
        memcpy(order, memo.order, n * sizeof(Py_ssize_t))
        if xs != NULL:
            memcpy(xs, memo.xs, n * sizeof(double))
        return 0
    if _argsort(x, n, order, memo.xs if memo != NULL and xs == NULL else xs, nthr):
        return -1
    if memo != NULL and n > 0:
        memcpy(memo.x, x, n * sizeof(double))
        memcpy(memo.order, order, n * sizeof(Py_ssize_t))
        if xs != NULL:
            memcpy(memo.xs, xs, n * sizeof(double))
    return 0
