/* The recursion of _ksum for the default kernel (a = 1): its steps, and
 * the one-thread sweep that runs them when the weights and the evaluation
 * points sit on the anchors (exact sums at the sample, binned sums at grid
 * points).
 *
 * Per weight column, the table entries on the left of an anchor are
 * (L0, L1), on its right (R0, R1), and a gap's decays (t0, t1) =
 * (e^-d, d e^-d). The steps are written once, for a double (the default
 * kernel's cases of _forward, _backward and _evaluate) or for two weight
 * columns in the lanes of a pyopnb_v2d (the sweep): the same operations,
 * so the sweep's sums have the passes' bits.
 */
#ifndef PYOPNB_SWEEP_H
#define PYOPNB_SWEEP_H

#include <stddef.h>
#include <string.h>
#include "decay.h"

#define PYOPNB_INLINE static inline __attribute__((always_inline))

/* forward: L at an anchor from L at the one before, a gap (t0, t1) away, and
 * the weight w on the anchor. (The + 0.0 is the general loop's addition of
 * the order-1 deposit, which is 0.) */
template <class V>
PYOPNB_INLINE void pyopnb_forward1(V t0, V t1, V w, V* l0, V* l1) {
    const V a = *l0, b = *l1;
    *l0 = t0 * a + w;
    *l1 = (t0 * b + t1 * a) + 0.0;
}

/* backward: R at an anchor from R at the next one, a gap (t0, t1) away, and
 * the weight w on that next anchor */
template <class V>
PYOPNB_INLINE void pyopnb_backward1(V t0, V t1, V w, V* r0, V* r1) {
    const V i0 = *r0 + w, i1 = *r1 + 0.0;
    *r0 = t0 * i0;
    *r1 = t0 * i1 + t1 * i0;
}

/* the sum (kernel coefficients b = beta) or its derivative (b = gamma, K'(u)
 * for u > 0: the tables' difference) at an anchor from its tables */
template <class V>
PYOPNB_INLINE V pyopnb_ksum1(double b0, double b1, V l0, V l1, V r0, V r1) {
    return (0.0 + b0 * (l0 + r0)) + b1 * (l1 + r1);
}
template <class V>
PYOPNB_INLINE V pyopnb_dksum1(double g0, double g1, V l0, V l1, V r0, V r1) {
    return (0.0 + g0 * (l0 - r0)) + g1 * (l1 - r1);
}

/* What a sweep reads of a column: weights W [G, r] on G anchors x
 * (nondecreasing), weight column c in bandwidth h[c] (h[0] for all where
 * shared), the default kernel's coefficients beta and gamma (K'(u) for
 * u > 0), and T the gaps' decays as _recurse lays them out */
typedef struct {
    const double* x;
    ptrdiff_t G;
    const double* W;
    int r;
    const double* h;
    int shared;
    const double* beta;
    const double* gamma;
    const double* T;
} pyopnb_sweep_anchors;

/* Where a sweep's sums go: m evaluation rows that sit on their anchors
 * lo[q] (nondecreasing), row q's output in row outrow[q] (NULL: q) of the
 * sums S and the derivatives' sums D [rows, r] (either NULL: not wanted) */
typedef struct {
    const ptrdiff_t* lo;
    ptrdiff_t m;
    const ptrdiff_t* outrow;
    double* S;
    double* D;
} pyopnb_sweep_rows;

/* One pair of weight columns (c, c + 1), a column to a lane; with FULL
 * false the last column of an odd number, in both lanes. SHARED: one
 * bandwidth, T [G, 2] the gaps' decays; else class bandwidths, T [G, r]
 * each class's e^-d (see _recurse).
 *
 * Each pass is a chain of dependent multiply-adds, bound by the adder's
 * latency, so the forward chain (from anchor 0) and the backward chain
 * (from anchor G-1) run side by side, their running entries in registers,
 * until they meet in the middle; past it each reads the other's stored
 * table and evaluates the rows at its anchor as it goes. The tables are
 * the pair's own: [G, 2] pairs of lanes, (L0, L1) in L and (R0, R1) in R. */
template <bool SHARED, bool FULL>
struct PyopnbSweepPair {
    const double* anchors;
    const double* W;
    const double* h;
    const double* T;
    const double* beta;
    const double* gamma;
    pyopnb_v2d* L;
    pyopnb_v2d* R;
    ptrdiff_t G;
    int r, c;

    inline pyopnb_v2d pair(const double* x) const {
        return FULL ? pyopnb_load2(x) : pyopnb_v2d{x[0], x[0]};
    }
    /* gap g's decays (anchors g-1 to g); pyopnb_decay_from_exp's, lane by lane */
    inline void gap(ptrdiff_t g, pyopnb_v2d* t0, pyopnb_v2d* t1) const {
        if (SHARED) {
            *t0 = pyopnb_v2d{T[2 * g], T[2 * g]};
            *t1 = pyopnb_v2d{T[2 * g + 1], T[2 * g + 1]};
            return;
        }
        const double dist = anchors[g] - anchors[g - 1];
        const pyopnb_v2d d = pyopnb_v2d{dist, dist} / pair(h + c);
        if (d[0] >= PYOPNB_FAR || d[1] >= PYOPNB_FAR) {
            double a[2], b[2];
            pyopnb_decay_from_exp(T[g * r + c], d[0], 1, a);
            pyopnb_decay_from_exp(T[g * r + c + FULL], d[1], 1, b);
            *t0 = pyopnb_v2d{a[0], b[0]};
            *t1 = pyopnb_v2d{a[1], b[1]};
            return;
        }
        *t0 = pair(&T[g * r + c]);
        *t1 = *t0 * d;
    }
    inline void forward(ptrdiff_t g, pyopnb_v2d* l0, pyopnb_v2d* l1) const {
        pyopnb_v2d t0, t1;
        gap(g, &t0, &t1);
        pyopnb_forward1(t0, t1, pair(&W[g * r + c]), l0, l1);
    }
    inline void backward(ptrdiff_t g, pyopnb_v2d* r0, pyopnb_v2d* r1) const {
        pyopnb_v2d t0, t1;
        gap(g + 1, &t0, &t1);
        pyopnb_backward1(t0, t1, pair(&W[(g + 1) * r + c]), r0, r1);
    }
    inline void put(double* out, ptrdiff_t o, pyopnb_v2d v) const {
        if (FULL)
            memcpy(&out[o * r + c], &v, sizeof v);
        else
            out[o * r + c] = v[0];
    }
    /* row o's sum and derivative from the entries on both sides of its anchor */
    inline void emit(const pyopnb_sweep_rows* ev, ptrdiff_t q, pyopnb_v2d l0, pyopnb_v2d l1, pyopnb_v2d r0,
                     pyopnb_v2d r1) const {
        const ptrdiff_t o = ev->outrow ? ev->outrow[q] : q;
        if (ev->S) put(ev->S, o, pyopnb_ksum1(beta[0], beta[1], l0, l1, r0, r1));
        if (ev->D) put(ev->D, o, pyopnb_dksum1(gamma[0], gamma[1], l0, l1, r0, r1));
    }

    /* qmid: the first row at an anchor >= G / 2 (the forward sweep's; the rest the backward's) */
    void run(const pyopnb_sweep_rows* ev, ptrdiff_t qmid) const {
        const ptrdiff_t* lo = ev->lo;
        const ptrdiff_t m = ev->m;
        const ptrdiff_t H = G / 2;
        const pyopnb_v2d zero = pyopnb_v2d{0.0, 0.0};
        pyopnb_v2d l0 = pair(&W[c]), l1 = zero, r0 = zero, r1 = zero;
        /* to the middle: L stored at anchors 0..H-1, R at G-1..H */
        for (ptrdiff_t s = 0; s < H; ++s) {
            if (s > 0) {
                forward(s, &l0, &l1);
                backward(G - 1 - s, &r0, &r1);
            }
            L[2 * s] = l0;
            L[2 * s + 1] = l1;
            R[2 * (G - 1 - s)] = r0;
            R[2 * (G - 1 - s) + 1] = r1;
        }
        if (G - H > H) {  /* G odd: R at H too */
            if (H > 0) backward(H, &r0, &r1);
            R[2 * H] = r0;
            R[2 * H + 1] = r1;
        }
        /* past the middle: forward over H..G-1 reading R, backward over H-1..0 reading L */
        ptrdiff_t qf = qmid, qb = qmid - 1;
        for (ptrdiff_t s = 0; s < H; ++s) {
            const ptrdiff_t gf = H + s, gb = H - 1 - s;
            forward(gf, &l0, &l1);
            backward(gb, &r0, &r1);
            for (; qf < m && lo[qf] == gf; ++qf) emit(ev, qf, l0, l1, R[2 * gf], R[2 * gf + 1]);
            for (; qb >= 0 && lo[qb] == gb; --qb) emit(ev, qb, L[2 * gb], L[2 * gb + 1], r0, r1);
        }
        if (G - H > H) {  /* G odd: the last anchor */
            if (H > 0) forward(G - 1, &l0, &l1);
            for (; qf < m && lo[qf] == G - 1; ++qf) emit(ev, qf, l0, l1, R[2 * (G - 1)], R[2 * (G - 1) + 1]);
        }
    }
};

template <bool SHARED, bool FULL>
static inline void pyopnb_sweep_pair(const pyopnb_sweep_anchors* A, int c, const pyopnb_sweep_rows* ev,
                                     ptrdiff_t qmid, double* L, double* R) {
    const PyopnbSweepPair<SHARED, FULL> sw = {A->x, A->W, A->h, A->T, A->beta, A->gamma, (pyopnb_v2d*)L,
                                              (pyopnb_v2d*)R, A->G, A->r, c};
    sw.run(ev, qmid);
}

/* The sums of A's weights at ev's rows, on one thread. L and R: scratch of
 * 4 G doubles each, 16-byte aligned. */
static inline void pyopnb_sweep1(const pyopnb_sweep_anchors* A, const pyopnb_sweep_rows* ev, double* L, double* R) {
    const ptrdiff_t G = A->G, m = ev->m;
    const int r = A->r;
    if (G == 0) return;
    /* the first row at an anchor >= G / 2: the forward sweep's, the rest the backward's */
    ptrdiff_t a = 0, b = m;
    while (a < b) {
        const ptrdiff_t mid = (a + b) / 2;
        if (ev->lo[mid] < G / 2)
            a = mid + 1;
        else
            b = mid;
    }
    int c = 0;
    for (; c + 2 <= r; c += 2) {
        if (A->shared)
            pyopnb_sweep_pair<true, true>(A, c, ev, a, L, R);
        else
            pyopnb_sweep_pair<false, true>(A, c, ev, a, L, R);
    }
    if (c < r) {
        if (A->shared)
            pyopnb_sweep_pair<true, false>(A, c, ev, a, L, R);
        else
            pyopnb_sweep_pair<false, false>(A, c, ev, a, L, R);
    }
}

#endif
