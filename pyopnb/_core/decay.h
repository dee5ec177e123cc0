/* The kernel's decays over a gap, d^m exp(-d), for the recursion (_ksum)
 * and the grid evaluations.
 *
 * One exception to R's bits, on the class-bandwidth path only (no R bits to
 * keep): pyopnb_exps takes small gaps' exponentials from a series, within an
 * ulp.
 */
#ifndef PYOPNB_DECAY_H
#define PYOPNB_DECAY_H

#include "lanes.h"

/* The decays of one gap: t[m] = d^m exp(-d) for m = 0..a, d >= 0 (d
 * bandwidths). Past PYOPNB_FAR bandwidths d^m e^-d is formed in log space,
 * so that d^m cannot overflow before e^-d underflows. */
#define PYOPNB_FAR 600.0

static inline void pyopnb_decay(double d, int a, double* t) {
    if (d == 0.0) {
        t[0] = 1.0;
        for (int m = 1; m <= a; ++m) t[m] = 0.0;
    } else if (d < PYOPNB_FAR) {
        t[0] = exp(-d);
        for (int m = 1; m <= a; ++m) t[m] = t[m - 1] * d;
    } else {
        const double ld = log(d);
        for (int m = 0; m <= a; ++m) t[m] = exp(m * ld - d);
    }
}

/* t[m] = d^m exp(-d) for m = 0..a from e = exp(-d): pyopnb_decay's row,
 * to the bit, without its exponential (e as pyopnb_exps gives it). */
static inline void pyopnb_decay_from_exp(double e, double d, int a, double* t) {
    if (d >= PYOPNB_FAR) {
        pyopnb_decay(d, a, t);
        return;
    }
    t[0] = e;
    for (int m = 1; m <= a; ++m) t[m] = t[m - 1] * d;
}

/* exp(-d) for 0 <= d < PYOPNB_SMALL by its series to d^6, within an ulp of
 * glibc's exp (the first term left out, d^7 / 7!, is under 2^-60). For a
 * double or two lanes. */
#define PYOPNB_SMALL (1.0 / 64)

template <class V>
static inline V pyopnb_exp_series(V d) {
    const V one = d * 0.0 + 1.0;
    return one - d * (one - d * (0.5 - d * (1.0 / 6 - d * (1.0 / 24 - d * (1.0 / 120 - d * (1.0 / 720))))));
}

/* e[c] = exp(-dist / h[c]) for c < r: one gap in every class's bandwidth
 * (class bandwidths, the journal's formulation). This is K exponentials a
 * gap where one bandwidth needs one. With many points a gap is a small
 * fraction of every bandwidth, and there the series above replaces exp, two
 * classes at a time: a polynomial in registers instead of a call per class.
 * The recursion tabulates these alone and forms each row d^m exp(-d) as it
 * reads it (pyopnb_decay_from_exp): a table of whole rows would be a+1
 * times larger. */
static inline void pyopnb_exps(double dist, const double* h, int r, double* e) {
    int c = 0;
    for (; c + 2 <= r; c += 2) {
        const pyopnb_v2d d = pyopnb_v2d{dist, dist} / pyopnb_load2(h + c);
        if (d[0] < PYOPNB_SMALL && d[1] < PYOPNB_SMALL) {
            const pyopnb_v2d v = pyopnb_exp_series(d);
            memcpy(e + c, &v, sizeof v);
        } else {
            e[c] = exp(-d[0]);
            e[c + 1] = exp(-d[1]);
        }
    }
    if (c < r) {
        const double d = dist / h[c];
        e[c] = d < PYOPNB_SMALL ? pyopnb_exp_series(d) : exp(-d);
    }
}

#endif
