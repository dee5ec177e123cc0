# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
# distutils: language = c++
"""Exact kernel sums in difference form: the recursion every sum, objective and gradient uses.

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

This module is the recursion and its entry points (exact_sums, grid_sums,
class_sums). Every evaluation of the objective calls it from the private
package pyopnb._core (its __init__ maps that package); _core/common.pxd,
_core/decay.pxd and _core/sweep.h declare the helpers it shares with them.
"""
import math

import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport exp, log, log1p, floor, INFINITY
from libc.string cimport memset

from pyopnb._core.common cimport _MAX_ORDER, _data_or_null, _entry_threads, _max_threads, _region_threads
from pyopnb._core.scratch cimport scratch_alloc, scratch_free
# gaps remembered by _gap_decays
DEF _GAP_CACHE = 4

from pyopnb._core.decay cimport pyopnb_decay as _decay, pyopnb_decay_from_exp as _decay_from_exp, pyopnb_exps as _exps
from pyopnb._core.sort cimport _argsort

cdef extern from "_core/sweep.h" nogil:
    # the default kernel's steps (see _core/sweep.h), for one weight column
    void _forward1 "pyopnb_forward1<double>"(double t0, double t1, double w, double* l0, double* l1)
    void _backward1 "pyopnb_backward1<double>"(double t0, double t1, double w, double* r0, double* r1)
    double _ksum1 "pyopnb_ksum1<double>"(double b0, double b1, double l0, double l1, double r0, double r1)
    double _dksum1 "pyopnb_dksum1<double>"(double g0, double g1, double l0, double l1, double r0, double r1)
    # the passes and the evaluation as one sweep, on one thread (weights and evaluation points on the anchors)
    ctypedef struct SweepAnchors "pyopnb_sweep_anchors":
        const double* x
        Py_ssize_t G
        const double* W
        int r
        const double* h
        bint shared
        const double* beta
        const double* gamma
        const double* T
    ctypedef struct SweepRows "pyopnb_sweep_rows":
        const Py_ssize_t* lo
        Py_ssize_t m
        const Py_ssize_t* outrow
        double* S
        double* D
    void _sweep1 "pyopnb_sweep1"(const SweepAnchors* A, const SweepRows* ev, double* L, double* R)

cnp.import_array()


def omp_max_threads():
    """OpenMP's omp_get_max_threads() in the runtime this core is linked with
    (OMP_NUM_THREADS, threadpoolctl's limits); 1 without OpenMP. The thread
    count itself is decided in pyopnb._threads."""
    return _max_threads()


MAX_ORDER = _MAX_ORDER


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


cdef void _deposit(const Anchors* A, const double* pos, const double* W, Py_ssize_t n, const Py_ssize_t* lo,
                   double* Ldep, double* Rdep) noexcept nogil:
    """Place points that lie between anchors: point i (weights W[i, :r]), with
    lo[i] the last anchor <= pos[i], goes to the left table of the first anchor
    >= pos[i] and to the right table of the last anchor < pos[i], decayed by
    its distance to each (in the bandwidth of each weight column, see
    _recurse). The deposit tables are [G, r, a+1], zeroed by the caller."""
    cdef Py_ssize_t i, g, gl, gr, G = A.G
    cdef const double* anchors = A.x
    cdef const double* h = A.h
    cdef bint shared = A.shared
    cdef int r = A.r, a = A.ker.a
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


cdef void _recurse(const Anchors* A, const double* Ldep, int dep_a1, RunningSums* tb, bint on_anchor, bint have_T,
                  int nthr) noexcept nogil:
    """The recursion over A's anchors, into tb's tables (Lincl, R, and the
    gaps' decays T = tb.decay). Forward: Lincl[g] = shift(Lincl[g-1]) + Ldep[g].
    Backward: R[g] += shift(R[g+1]) (R holds the right deposits), or, with
    on_anchor, R[g] = shift(R[g+1] + Ldep[g+1]).

    Weight column c has bandwidth h[c], or h[0] for all when shared (every
    R fit); either way the classes go through one pass over the anchors.
    Each gap's decays are computed once, on nthr threads: with one bandwidth
    its row d^m exp(-d), T [G, a+1]; with class bandwidths exp(-d) of each
    class, T [G, r], each row formed as the passes read it (a table of whole
    rows would be a+1 times larger, and the passes would write and read it
    whole).
    Ldep[g, c, k] is Ldep[(g r + c) dep_a1 + k], and 0 for k >= dep_a1: with
    dep_a1 = 1 it is just the weights sitting on the anchors (order 0).
    on_anchor: every sample sits on an anchor (so dep_a1 = 1), a point's
    right-table entry is its own weight shifted one gap left, and R needs no
    deposits (nor zeroing). The two passes run side by side when nthr > 1.
    have_T: T already holds these anchors' decays (a second sum over the
    same column, in the same bandwidths).
    """
    cdef Py_ssize_t G = A.G
    cdef int part
    cdef double* T = tb.decay
    if G == 0:
        return
    nthr = _region_threads(nthr, G * A.r)
    if nthr == 1:
        # no parallel region: a team of one still costs a futex wake-up
        if not have_T:
            _gap_decays(A.x, 1, G, A.h, A.shared, A.ker.a, A.r, T)
        _forward(A, T, Ldep, dep_a1, tb.Lincl)
        _backward(A, T, Ldep, dep_a1, tb.R, on_anchor)
        return
    if not have_T:
        for part in prange(nthr, num_threads=nthr, schedule="static"):
            _gap_decays(A.x, max(1, part * G // nthr), (part + 1) * G // nthr, A.h, A.shared, A.ker.a, A.r, T)
    for part in prange(2, num_threads=2, schedule="static"):
        if part == 0:
            _forward(A, T, Ldep, dep_a1, tb.Lincl)
        else:
            _backward(A, T, Ldep, dep_a1, tb.R, on_anchor)


cdef inline void _gap_decays(const double* anchors, Py_ssize_t g0, Py_ssize_t g1, const double* h, bint shared,
                             int a, int r, double* T) noexcept nogil:
    """The decays of gaps g0..g1-1 (see _recurse). A grid's gaps, lo + g delta
    apart, take a handful of values (their rounding): a gap equal to one of
    the last few seen copies that one's row (the same bits) instead of
    calling exp again."""
    cdef Py_ssize_t g, row = (a + 1) if shared else r
    cdef Py_ssize_t seen[_GAP_CACHE]
    cdef double seen_d[_GAP_CACHE]
    cdef double d
    cdef int c, j, slot = 0
    cdef bint hit
    for c in range(_GAP_CACHE):
        seen_d[c] = -1.0  # no gap is negative: never matched
    for g in range(g0, g1):
        d = anchors[g] - anchors[g - 1]
        hit = False
        for c in range(_GAP_CACHE):
            if d == seen_d[c]:
                for j in range(row):
                    T[g * row + j] = T[seen[c] * row + j]
                hit = True
                break
        if hit:
            continue
        if shared:
            _decay(d / h[0], a, &T[g * row])
        else:
            _exps(d, h, r, &T[g * row])
        seen[slot] = g
        seen_d[slot] = d
        slot = (slot + 1) % _GAP_CACHE


cdef inline double _dep(const double* dep, int dep_a1, Py_ssize_t g, int r, int c, int k) noexcept nogil:
    return dep[(g * r + c) * dep_a1 + k] if k < dep_a1 else 0.0


cdef inline const double* _gap_row(const Anchors* A, const double* T, Py_ssize_t g, int c, int a,
                                   double* buf) noexcept nogil:
    """Gap g's decay row d^m exp(-d) (anchors g-1 to g) for weight column c
    (see _recurse), a the kernel's order (a constant where the caller's loop
    is the default kernel's): the table's row, or formed in buf from the
    class's exp(-d)."""
    if A.shared:
        return &T[g * (a + 1)]
    _decay_from_exp(T[g * A.r + c], (A.x[g] - A.x[g - 1]) / A.h[c], a, buf)
    return buf


cdef void _forward(const Anchors* A, const double* T, const double* Ldep, int dep_a1, double* Lincl) noexcept nogil:
    cdef Py_ssize_t g, G = A.G
    cdef int c, k, r = A.r, a = A.ker.a
    cdef const double* binom = <const double*> A.ker.binom
    cdef int a1 = a + 1
    cdef Py_ssize_t row = r * a1
    cdef double buf[64]
    cdef double tb[64]
    cdef const double* t
    cdef const double* src
    cdef double* dst
    for c in range(r):
        for k in range(a1):
            Lincl[c * a1 + k] = _dep(Ldep, dep_a1, 0, r, c, k)
    if a == 1 and dep_a1 == 1:
        # the default kernel, weights on the anchors (every sum but the exact
        # binned gradient's): the loop below unrolled, the same operations
        for g in range(1, G):
            for c in range(r):
                t = _gap_row(A, T, g, c, 1, tb)
                src = &Lincl[(g - 1) * row + c * 2]
                dst = &Lincl[g * row + c * 2]
                dst[0] = src[0]
                dst[1] = src[1]
                _forward1(t[0], t[1], Ldep[g * r + c], &dst[0], &dst[1])
        return
    for g in range(1, G):
        for c in range(r):
            _shift(&Lincl[(g - 1) * row + c * a1], buf, a, _gap_row(A, T, g, c, a, tb), binom)
            for k in range(a1):
                Lincl[g * row + c * a1 + k] = buf[k] + _dep(Ldep, dep_a1, g, r, c, k)


cdef void _backward(const Anchors* A, const double* T, const double* Ldep, int dep_a1, double* R,
                    bint on_anchor) noexcept nogil:
    cdef Py_ssize_t g, G = A.G
    cdef int c, k, r = A.r, a = A.ker.a
    cdef const double* binom = <const double*> A.ker.binom
    cdef int a1 = a + 1
    cdef Py_ssize_t row = r * a1
    cdef double buf[64]
    cdef double inc[64]
    cdef double tb[64]
    cdef const double* t
    cdef const double* src
    cdef double* dst
    if on_anchor:
        for k in range(row):
            R[(G - 1) * row + k] = 0.0
    if on_anchor and a == 1:
        # the default kernel, weights on the anchors: the loop below unrolled,
        # the same operations
        g = G - 2
        while g >= 0:
            for c in range(r):
                t = _gap_row(A, T, g + 1, c, 1, tb)
                src = &R[(g + 1) * row + c * 2]
                dst = &R[g * row + c * 2]
                dst[0] = src[0]
                dst[1] = src[1]
                _backward1(t[0], t[1], Ldep[(g + 1) * r + c], &dst[0], &dst[1])
            g -= 1
        return
    g = G - 2
    while g >= 0:
        for c in range(r):
            t = _gap_row(A, T, g + 1, c, a, tb)
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


cdef struct PointPlace:
    # an evaluation point between its two anchors
    bint hasL                   # an anchor at its left (the last anchor <= it)
    bint hasR                   # one at its right, or it sits on its left one
    bint onanchor               # it sits on its left anchor
    double rawl                 # its distance to the left anchor
    double rawr                 # and to the right one


cdef struct AnchorDistances:
    # a point's distances to its anchors in a bandwidth
    double dl
    double dr


cdef inline AnchorDistances _point_decays(PointPlace pt, double h, int a, bint logS, double* tl,
                                          double* tr) noexcept nogil:
    """The point's distances to its anchors in bandwidth h, and their decays
    into tl and tr [a + 1] (or just powers, for sums kept in log space).
    By value: the decays written through tl and tr cannot then alias the
    place, which stays in registers."""
    cdef AnchorDistances out = AnchorDistances(dl=0.0, dr=0.0)
    if pt.hasL:
        out.dl = pt.rawl / h
        if logS:
            _powers(out.dl, a, tl)
        else:
            _decay(out.dl, a, tl)
    if pt.hasR and not pt.onanchor:
        out.dr = pt.rawr / h
        if logS:
            _powers(out.dr, a, tr)
        else:
            _decay(out.dr, a, tr)
    return out


cdef void _evaluate(const Anchors* A, const EvalRows* ev, const double* Ldep, int dep_a1,
                    const RunningSums* tb) noexcept nogil:
    """S[row, c] = ksum and D[row, c] = dksum at e[j], row = outrow[j] (j if NULL),
    weight column c in bandwidth h[c] (h[0] when shared), from the
    recursion's tables tb.Lincl and tb.R (exclusive). e NULL: every
    point sits on its anchor, e[j] = anchors[lo[j]].

    lo[j] is the last anchor <= e[j] (-1 if none). An evaluation point that is
    not an anchor must have no sample strictly between its two anchors (true
    for exact sums and for binned weights on a grid). S or D may be NULL.
    logS: S holds log ksum, formed as log(left part) - d_left and
    log(right part) - d_right, so a point thousands of bandwidths from the
    sample gets its log density instead of log(0) (positive weights and beta).
    """
    cdef const double* e = ev.e
    cdef const Py_ssize_t* lo = ev.lo
    cdef Py_ssize_t m = ev.m
    cdef const Py_ssize_t* outrow = ev.outrow
    cdef double* S = ev.S
    cdef double* D = ev.D
    cdef bint logS = ev.logS
    cdef const double* anchors = A.x
    cdef Py_ssize_t G = A.G
    cdef int r = A.r
    cdef const double* h = A.h
    cdef bint shared = A.shared
    cdef const Kernel* ker = A.ker
    cdef const double* Lincl = tb.Lincl
    cdef const double* Rexcl = tb.R
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
    cdef bint moved
    cdef double s, dd, sr
    cdef PointPlace pt
    cdef AnchorDistances dist = AnchorDistances(dl=0.0, dr=0.0)
    cdef const double* Lg
    cdef const double* Rg
    cdef double b0 = ker.beta[0], b1 = ker.beta[1] if a >= 1 else 0.0
    cdef double g0 = ker.gamma[0], g1 = ker.gamma[1] if a >= 1 else 0.0
    for k in range(a1):
        zero[k] = 0.0
    for j in range(m):
        g = lo[j]
        o = outrow[j] if outrow != NULL else j
        pt.hasL = g >= 0
        pt.onanchor = pt.hasL and (e == NULL or e[j] == anchors[g])
        pt.hasR = pt.onanchor or g + 1 < G
        if pt.onanchor and a == 1 and not logS:
            # a point on its anchor (every exact sum at the sample), default
            # kernel: the tables as they are, the sums below unrolled (the
            # same operations)
            Lg = &Lincl[g * row]
            Rg = &Rexcl[g * row]
            for c in range(r):
                if S != NULL:
                    S[o * r + c] = _ksum1(b0, b1, Lg[2 * c], Lg[2 * c + 1], Rg[2 * c], Rg[2 * c + 1])
                if D != NULL:
                    D[o * r + c] = _dksum1(g0, g1, Lg[2 * c], Lg[2 * c + 1], Rg[2 * c], Rg[2 * c + 1])
            continue
        # (e is not NULL here: off its anchor, or no anchor at its left)
        pt.rawl = e[j] - anchors[g] if pt.hasL and not pt.onanchor else 0.0
        pt.rawr = anchors[g + 1] - e[j] if pt.hasR and not pt.onanchor else 0.0
        # a point on its anchor (every exact sum at the sample) reads the
        # tables as they are, whatever the bandwidth
        moved = pt.rawl != 0.0 or pt.rawr != 0.0
        if shared or not moved:
            dist = _point_decays(pt, h[0], a, logS, tl, tr)
        for c in range(r):
            if moved and not shared:
                dist = _point_decays(pt, h[c], a, logS, tl, tr)
            if pt.hasL and dist.dl == 0.0:
                Lv = &Lincl[g * row + c * a1]
            elif pt.hasL:
                _shift(&Lincl[g * row + c * a1], Lbuf, a, tl, ker.binom)
                Lv = Lbuf
            else:
                Lv = zero
            if pt.onanchor:
                Rv = &Rexcl[g * row + c * a1]
            elif pt.hasR:
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
                S[o * r + c] = _logaddexp(log(s) - dist.dl if pt.hasL else -INFINITY,
                                          log(sr) - dist.dr if pt.hasR else -INFINITY)
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


cdef int _tables_alloc(RunningSums* tb, Py_ssize_t G, int r, int a1, bint shared, bint deposits) noexcept nogil:
    # deposit tables only for points between anchors (weights on anchors need none)
    tb.Ldep = <double*> scratch_alloc(G * r * a1 * sizeof(double)) if deposits else NULL
    # (room for two columns at least: _sweep1 takes weight columns in pairs)
    tb.Lincl = <double*> scratch_alloc(G * max(r, 2) * a1 * sizeof(double))
    tb.R = <double*> scratch_alloc(G * max(r, 2) * a1 * sizeof(double))
    tb.decay = <double*> scratch_alloc(G * (a1 if shared else r) * sizeof(double))
    if (deposits and tb.Ldep == NULL) or tb.Lincl == NULL or tb.R == NULL or tb.decay == NULL:
        return -1
    return 0


cdef void _tables_free(RunningSums* tb) noexcept nogil:
    scratch_free(tb.Ldep); scratch_free(tb.Lincl); scratch_free(tb.R); scratch_free(tb.decay)
    memset(tb, 0, sizeof(RunningSums))


cdef void _sums_on_anchors(const Anchors* A, const double* Wa, RunningSums* tb, const EvalRows* ev, bint have_T,
                          int nthr) noexcept nogil:
    """Sums of weights Wa [G, r] sitting on A's anchors (column c in bandwidth
    h[c], or h[0] when shared), at ev's points, on nthr threads. (The
    weights serve as the left deposits directly: no table to fill.) have_T:
    see _recurse. ev.e NULL: every evaluation point sits on its anchor lo[j],
    lo nondecreasing (exact sums at the sample, grid sums at grid points):
    on one thread, with the default kernel, the passes then run as one
    sweep (_core/sweep.h)."""
    cdef SweepAnchors sa
    cdef SweepRows sr
    # one thread when neither region's work pays for a team (_recurse's and _evaluate_chunks' own caps)
    nthr = max(_region_threads(nthr, A.G * A.r), _region_threads(nthr, ev.m * A.r))
    if ev.e == NULL and nthr == 1 and A.ker.a == 1 and not ev.logS:
        if not have_T:
            _gap_decays(A.x, 1, A.G, A.h, A.shared, 1, A.r, tb.decay)
        sa = SweepAnchors(x=A.x, G=A.G, W=Wa, r=A.r, h=A.h, shared=A.shared, beta=&A.ker.beta[0],
                          gamma=&A.ker.gamma[0], T=tb.decay)
        sr = SweepRows(lo=ev.lo, m=ev.m, outrow=ev.outrow, S=ev.S, D=ev.D)
        _sweep1(&sa, &sr, tb.Lincl, tb.R)
        return
    _recurse(A, Wa, 1, tb, True, have_T, nthr)
    _evaluate_chunks(A, ev, Wa, 1, tb, nthr)


cdef void _evaluate_chunks(const Anchors* A, const EvalRows* ev, const double* dep, int dep_a1,
                           const RunningSums* tb, int nthr) noexcept nogil:
    """_evaluate over chunks of points on nthr threads (points are independent)."""
    nthr = _region_threads(nthr, ev.m * A.r)
    cdef Py_ssize_t m = ev.m
    cdef Py_ssize_t chunk = max(1024, (m + 4 * nthr - 1) // (4 * nthr)), nch = (m + chunk - 1) // chunk, c0
    if nthr == 1 or nch == 1:
        _evaluate(A, ev, dep, dep_a1, tb)
        return
    for c0 in prange(nch, num_threads=nthr, schedule="static"):
        _evaluate_chunk(A, ev, c0 * chunk, min(chunk, m - c0 * chunk), dep, dep_a1, tb)


cdef inline void _evaluate_chunk(const Anchors* A, const EvalRows* ev, Py_ssize_t s0, Py_ssize_t len0,
                                 const double* dep, int dep_a1, const RunningSums* tb) noexcept nogil:
    """_evaluate of ev's points s0 .. s0+len0-1."""
    cdef EvalRows part = ev[0]
    part.e = ev.e + s0 if ev.e != NULL else NULL
    part.lo = ev.lo + s0
    part.m = len0
    if ev.outrow != NULL:
        part.outrow = ev.outrow + s0
    else:
        part.S = ev.S + s0 * A.r if ev.S != NULL else NULL
        part.D = ev.D + s0 * A.r if ev.D != NULL else NULL
    _evaluate(A, &part, dep, dep_a1, tb)


cdef void _last_of_ties(const double* sorted_x, Py_ssize_t n, Py_ssize_t* last) noexcept nogil:
    """last[q] = the last index of sorted_x[q]'s tie group."""
    cdef Py_ssize_t q = n - 1, g = n - 1
    while q >= 0:
        if q == n - 1 or sorted_x[q] != sorted_x[q + 1]:
            g = q
        last[q] = g
        q -= 1


cdef inline void _merge_anchors(const double* anchors, Py_ssize_t n, const double* es, Py_ssize_t m,
                                Py_ssize_t* lo) noexcept nogil:
    """lo[j] = the last anchor <= es[j] (-1: none), es sorted too: tables
    are then read in order, anchors found by a merge."""
    cdef Py_ssize_t q = -1, j
    for j in range(m):
        while q + 1 < n and anchors[q + 1] <= es[j]:
            q += 1
        lo[j] = q


cdef inline void _sorted_rows(const double* W, Py_ssize_t r, const Py_ssize_t* order, double* Wa,
                              Py_ssize_t q0, Py_ssize_t q1) noexcept nogil:
    """Wa's rows q0..q1-1: the rows of W [n, r] in sorted order."""
    cdef Py_ssize_t q, j
    for q in range(q0, q1):
        for j in range(r):
            Wa[q * r + j] = W[order[q] * r + j]


cdef struct SampleScratch:
    # a sample's sort and the recursion's tables, for its n points
    RunningSums* tb
    Py_ssize_t* order       # n: the sample's order
    double* anchors         # n: the sorted sample
    double* Wa              # [n, r]: the weights in sorted order
    Py_ssize_t* lo          # m: each evaluation point's last anchor


cdef int _sample_sums(const double* x, const double* W, Anchors* A, SampleScratch* sc, EvalRows* ev,
                     int nthr) noexcept nogil:
    """Exact sums of the sample x [A.G] with weights W [A.G, A.r] (row i:
    x[i]'s) in A's bandwidth and kernel, at ev.m sorted evaluation points
    ev.e (ev.outrow: their rows of S and D), or at the sample itself (ev.e
    NULL, m = n, rows in x's order). A's anchors, ev's anchors and, at the
    sample, its rows are set here, in sc. Returns -1 when out of memory
    (the sort's)."""
    cdef Py_ssize_t q, n = A.G
    cdef int r = A.r
    cdef int copy_thr = _entry_threads(nthr, n * r)
    nthr = _region_threads(nthr, n * r)
    if _argsort(x, n, sc.order, sc.anchors, nthr):
        return -1
    if copy_thr == 1:
        _sorted_rows(W, r, sc.order, sc.Wa, 0, n)
    else:
        for q in prange(copy_thr, num_threads=copy_thr, schedule="static"):
            _sorted_rows(W, r, sc.order, sc.Wa, q * n // copy_thr, (q + 1) * n // copy_thr)
    A.x = sc.anchors
    ev.lo = sc.lo
    if ev.e == NULL:
        # in sorted order; a point's anchor is its tie group's last
        _last_of_ties(sc.anchors, n, sc.lo)
        ev.outrow = sc.order
    else:
        _merge_anchors(sc.anchors, n, ev.e, ev.m, sc.lo)
    # at the sample every point is its own anchor
    _sums_on_anchors(A, sc.Wa, sc.tb, ev, False, nthr)
    return 0


def class_sums(const double[:, ::1] Ztr, const Py_ssize_t[::1] y0, int K, const double[:, ::1] H,
               const double[:, ::1] Zte, const double[::1] beta, bint log_S, int num_threads, w=None):
    """[m, K]: for each class k, sum_t log f_kt(Zte[:, t]) (log_S) or prod_t f_kt(Zte[:, t]),
    f_kt(z) = 1/(n_k H[k, t]) sum_{y0_i = k} K((z - Ztr[i, t]) / H[k, t]); with
    the training points' weights ``w`` [n] (positive), point i weighs
    w_i / (W_k H[k, t]), W_k its class's total weight (math.fsum), as in the
    objective (passes.pyx's ColumnScratch).

    _sample_sums of each (column, class) with weights 1/(n_k H[k, t]), every
    column's evaluation points sorted once for all classes, and the columns
    added (or multiplied) into each class's entry in order: the same numbers
    as those calls one by one, without a call and its buffers per pair.
    """
    cdef Py_ssize_t n = Ztr.shape[0], ncol = Ztr.shape[1], m = Zte.shape[0], i, j, t, q
    cdef int k, bad = 0, nthr = max(1, num_threads)
    if y0.shape[0] != n:
        raise ValueError(f"y0 must have one entry per row of Ztr ({n}), got {y0.shape[0]}")
    if Zte.shape[1] != ncol or H.shape[0] != K or H.shape[1] != ncol:
        raise ValueError(f"need Zte [m, {ncol}] and H [{K}, {ncol}], got {Zte.shape[1]} columns "
                         f"and H ({H.shape[0]}, {H.shape[1]})")
    counts = np.zeros(K + 1, dtype=np.intp)
    for i in range(n):
        if y0[i] < 0 or y0[i] >= K:
            raise ValueError(f"y0 must hold class codes 0..{K - 1}, found {y0[i]}")
        counts[y0[i] + 1] += 1
    for k in range(K):
        if counts[k + 1] == 0:
            raise ValueError(f"class {k} has no training points")
    cdef bint weighted = w is not None
    cdef const double[::1] wt
    # each class's total weight: its count without weights
    totals = counts[1:].astype(np.float64)
    if weighted:
        wa = np.ascontiguousarray(w, dtype=np.float64)
        if wa.shape != (n,) or not np.all(np.isfinite(wa)) or not np.all(wa > 0):
            raise ValueError(f"w must hold {n} positive finite weights")
        wt = wa
        totals = np.array([math.fsum(wa[np.asarray(y0) == k]) for k in range(K)])
    cdef const double[::1] Wk = totals
    # each class's rows, in row order: start[k] .. start[k + 1]
    start = np.cumsum(counts)
    rows = np.argsort(np.asarray(y0), kind="stable").astype(np.intp)
    cdef const Py_ssize_t[::1] st = start
    cdef const Py_ssize_t[::1] rw = rows
    out = np.zeros((m, K)) if log_S else np.ones((m, K))
    if m == 0 or ncol == 0:
        return out
    cdef double[:, ::1] ov = out
    cdef Py_ssize_t nmax = int(counts.max())
    cdef Kernel ker
    _make_kernel(&beta[0], beta.shape[0], &ker)
    cdef RunningSums tb
    cdef double h, wcls
    cdef double* xk = <double*> scratch_alloc(nmax * sizeof(double))
    cdef double* wk = <double*> scratch_alloc(nmax * sizeof(double))
    cdef Py_ssize_t* order = <Py_ssize_t*> scratch_alloc(nmax * sizeof(Py_ssize_t))
    cdef double* anchors = <double*> scratch_alloc(nmax * sizeof(double))
    cdef double* Wa = <double*> scratch_alloc(nmax * sizeof(double))
    cdef double* e = <double*> scratch_alloc(m * sizeof(double))
    cdef Py_ssize_t* eorder = <Py_ssize_t*> scratch_alloc(m * sizeof(Py_ssize_t))
    cdef double* es = <double*> scratch_alloc(m * sizeof(double))
    cdef Py_ssize_t* lo = <Py_ssize_t*> scratch_alloc(m * sizeof(Py_ssize_t))
    cdef double* S = <double*> scratch_alloc(m * sizeof(double))
    cdef SampleScratch sc = SampleScratch(tb=&tb, order=order, anchors=anchors, Wa=Wa, lo=lo)
    cdef Anchors A
    cdef EvalRows ev
    with nogil:
        if (_tables_alloc(&tb, nmax, 1, ker.a + 1, True, False) or xk == NULL or wk == NULL or order == NULL
                or anchors == NULL or Wa == NULL or e == NULL or eorder == NULL or es == NULL
                or lo == NULL or S == NULL):
            bad = 1
        t = 0
        while t < ncol and not bad:
            for j in range(m):
                e[j] = Zte[j, t]
            bad = _argsort(e, m, eorder, es, nthr)
            k = 0
            while k < K and not bad:
                q = st[k + 1] - st[k]
                h = H[k, t]
                wcls = 1.0 / (Wk[k] * h)
                for i in range(q):
                    xk[i] = Ztr[rw[st[k] + i], t]
                    wk[i] = wt[rw[st[k] + i]] * wcls if weighted else wcls
                A = Anchors(x=NULL, G=q, r=1, h=&h, shared=True, ker=&ker)
                ev = EvalRows(e=es, lo=NULL, m=m, outrow=eorder, S=S, D=NULL, logS=log_S)
                bad = _sample_sums(xk, wk, &A, &sc, &ev, nthr)
                if not bad:
                    for j in range(m):
                        if log_S:
                            ov[j, k] = ov[j, k] + S[j]
                        else:
                            ov[j, k] = ov[j, k] * S[j]
                k += 1
            t += 1
    _tables_free(&tb)
    scratch_free(xk); scratch_free(wk); scratch_free(order); scratch_free(anchors); scratch_free(Wa)
    scratch_free(e); scratch_free(eorder); scratch_free(es); scratch_free(lo); scratch_free(S)
    if bad:
        raise MemoryError("class_sums: out of memory")
    return out


def exact_sums(const double[::1] x, const double[:, ::1] W, double h, const double[::1] beta,
               e, bint want_S, bint want_D, bint log_S, int num_threads):
    """Exact kernel sums of the r weight columns W [n, r] at e (None: at x),
    on num_threads threads.

    Returns (S, D) [m, r] in e's (or x's) order, None where not wanted; with
    log_S, S holds log ksum (for positive weights and beta).
    """
    cdef Py_ssize_t n = x.shape[0], r = W.shape[1], m
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
    cdef RunningSums tb
    cdef Py_ssize_t* order = <Py_ssize_t*> scratch_alloc(n * sizeof(Py_ssize_t))
    cdef double* anchors = <double*> scratch_alloc(n * sizeof(double))
    cdef double* Wa = <double*> scratch_alloc(n * r * sizeof(double))
    # at the sample the sorted points are their own evaluation points
    cdef Py_ssize_t* eorder = order if at_x else <Py_ssize_t*> scratch_alloc(m * sizeof(Py_ssize_t))
    cdef double* es = anchors if at_x else <double*> scratch_alloc(m * sizeof(double))
    cdef Py_ssize_t* lo = <Py_ssize_t*> scratch_alloc(m * sizeof(Py_ssize_t))
    cdef SampleScratch sc = SampleScratch(tb=&tb, order=order, anchors=anchors, Wa=Wa, lo=lo)
    cdef Anchors A = Anchors(x=NULL, G=n, r=<int> r, h=&h, shared=True, ker=&ker)
    cdef EvalRows rows = EvalRows(e=NULL, lo=NULL, m=m, outrow=eorder, S=Sp, D=Dp, logS=log_S)
    if not at_x:
        rows.e = es
    with nogil:
        if (_tables_alloc(&tb, n, r, a1, True, False) or order == NULL or anchors == NULL or Wa == NULL
                or eorder == NULL or es == NULL or lo == NULL
                or (not at_x and _argsort(&ev[0], m, eorder, es, nthr))):
            bad = 1
        else:
            bad = _sample_sums(&x[0], &W[0, 0], &A, &sc, &rows, nthr)
    _tables_free(&tb)
    if not at_x:
        scratch_free(eorder); scratch_free(es)
    scratch_free(order); scratch_free(anchors); scratch_free(Wa); scratch_free(lo)
    if bad:
        raise MemoryError("exact_sums: out of memory")
    return S, D


def grid_sums(const double[::1] grid, const double[:, ::1] Wg, double h, const double[::1] beta,
              const double[::1] e, bint want_S, bint want_D, int num_threads, bint log_S=False):
    """Sums of grid weights Wg [G, r] (grid equally spaced) at any points e,
    on num_threads threads; with log_S, S holds log ksum in the form that
    never underflows (_sums_on_anchors', for non-negative weights).

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
    cdef RunningSums tb
    cdef Py_ssize_t* lo = <Py_ssize_t*> scratch_alloc(m * sizeof(Py_ssize_t))
    cdef Anchors A = Anchors(x=&grid[0], G=G, r=<int> r, h=&h, shared=True, ker=&ker)
    cdef EvalRows ev = EvalRows(e=&e[0], lo=lo, m=m, outrow=NULL, S=Sp, D=Dp, logS=log_S)
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
            _sums_on_anchors(&A, &Wg[0, 0], &tb, &ev, False, max(1, num_threads))
    _tables_free(&tb)
    scratch_free(lo)
    if bad:
        raise MemoryError("grid_sums: out of memory")
    return S, D
