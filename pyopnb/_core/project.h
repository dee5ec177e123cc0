/* Z' = (X V)' in R's summation order. Every entry z_ij is sum_l x_il v_lj
 * added over l in order, with no FMA (R's reference BLAS). A chain of
 * dependent additions runs at the adder's latency; holding w sums of one row
 * in w / 2 two-lane registers gives w independent chains, and each lane still
 * adds its own sum in order, so the bits are the same as a scalar loop's.
 */
#ifndef PYOPNB_PROJECT_H
#define PYOPNB_PROJECT_H

#include "lanes.h"

/* zt[(j0 + j) * n] for j < min(2 W, nd - j0): one row x [p] against V [p, ndp]
 * (row-major, ndp even, padded with zero columns) */
template <int W>
static inline void pyopnb_project_chunk(const double* x, ptrdiff_t p, const double* V, ptrdiff_t ndp,
                                        ptrdiff_t nd, ptrdiff_t j0, double* zt, ptrdiff_t n) {
    pyopnb_v2d acc[W];
    for (int q = 0; q < W; ++q) acc[q] = pyopnb_v2d{0.0, 0.0};
    for (ptrdiff_t l = 0; l < p; ++l) {
        const pyopnb_v2d xv = pyopnb_v2d{x[l], x[l]};
        const double* vr = V + l * ndp + j0;
        for (int q = 0; q < W; ++q) acc[q] = acc[q] + xv * pyopnb_load2(vr + 2 * q);
    }
    for (int q = 0; q < W; ++q) {
        zt[(j0 + 2 * q) * n] = acc[q][0];
        if (j0 + 2 * q + 1 < nd) zt[(j0 + 2 * q + 1) * n] = acc[q][1];
    }
}

/* the last pairs of columns (W or fewer): pyopnb_project_chunk with the
 * register count known at compile time */
template <int W>
static inline void pyopnb_project_tail(int pairs, const double* x, ptrdiff_t p, const double* V,
                                       ptrdiff_t ndp, ptrdiff_t nd, ptrdiff_t j0, double* zt, ptrdiff_t n) {
    if (pairs == W)
        pyopnb_project_chunk<W>(x, p, V, ndp, nd, j0, zt, n);
    else
        pyopnb_project_tail<W - 1>(pairs, x, p, V, ndp, nd, j0, zt, n);
}

template <>
inline void pyopnb_project_tail<0>(int, const double*, ptrdiff_t, const double*, ptrdiff_t, ptrdiff_t,
                                   ptrdiff_t, double*, ptrdiff_t) {}

/* one row of Z': zt[j * n] = sum_l x[l] V[l, j] for j < nd; V as above. At
 * most 24 sums at a time (12 registers), so that a row is read once when
 * ndim <= 24. */
static inline void pyopnb_project_row(const double* x, ptrdiff_t p, const double* V, ptrdiff_t ndp,
                                      ptrdiff_t nd, double* zt, ptrdiff_t n) {
    ptrdiff_t j = 0;
    for (; ndp - j > 24; j += 24) pyopnb_project_chunk<12>(x, p, V, ndp, nd, j, zt, n);
    pyopnb_project_tail<12>((int)((ndp - j) / 2), x, p, V, ndp, nd, j, zt, n);
}

#endif
