/* Z' = (X V)' in R's summation order. Every entry z_ij is sum_l x_il v_lj
 * added over l in order, with no FMA (R's reference BLAS). A chain of
 * dependent additions runs at the adder's latency; holding w sums of one row
 * in w / 2 two-lane registers gives w independent chains, and each lane still
 * adds its own sum in order, so the bits are the same as a scalar loop's.
 */
#ifndef PYOPNB_PROJECT_H
#define PYOPNB_PROJECT_H

#include "lanes.h"

/* zt[(j0 + j) * n + r] for j < min(2 W, nd - j0), r < R: R rows x [R, p]
 * (row-major) against V [p, ndp] (row-major, ndp even, padded with zero
 * columns). R W chains of additions at once: a chain's latency is the
 * bound when there are few (one row at ndim = 5 had three). */
template <int R, int W>
static inline void pyopnb_project_chunk(const double* x, ptrdiff_t p, const double* V, ptrdiff_t ndp,
                                        ptrdiff_t nd, ptrdiff_t j0, double* zt, ptrdiff_t n) {
    pyopnb_v2d acc[R][W];
    for (int r = 0; r < R; ++r)
        for (int q = 0; q < W; ++q) acc[r][q] = pyopnb_v2d{0.0, 0.0};
    for (ptrdiff_t l = 0; l < p; ++l) {
        const double* vr = V + l * ndp + j0;
        for (int r = 0; r < R; ++r) {
            const double xl = x[r * p + l];
            const pyopnb_v2d xv = pyopnb_v2d{xl, xl};
            for (int q = 0; q < W; ++q) acc[r][q] = acc[r][q] + xv * pyopnb_load2(vr + 2 * q);
        }
    }
    for (int q = 0; q < W; ++q) {
        for (int r = 0; r < R; ++r) zt[(j0 + 2 * q) * n + r] = acc[r][q][0];
        if (j0 + 2 * q + 1 < nd)
            for (int r = 0; r < R; ++r) zt[(j0 + 2 * q + 1) * n + r] = acc[r][q][1];
    }
}

/* the last pairs of columns (W or fewer) of R rows: pyopnb_project_chunk
 * with the register count known at compile time, as many rows at once as
 * keep about 12 registers of sums */
template <int W>
static inline void pyopnb_project_tail(int pairs, int R, const double* x, ptrdiff_t p, const double* V,
                                       ptrdiff_t ndp, ptrdiff_t nd, ptrdiff_t j0, double* zt, ptrdiff_t n) {
    if (pairs == W) {
        constexpr int RW = 12 / W > 8 ? 8 : (12 / W < 1 ? 1 : 12 / W);
        int r = 0;
        for (; r + RW <= R; r += RW) pyopnb_project_chunk<RW, W>(x + r * p, p, V, ndp, nd, j0, zt + r, n);
        for (; r < R; ++r) pyopnb_project_chunk<1, W>(x + r * p, p, V, ndp, nd, j0, zt + r, n);
    } else {
        pyopnb_project_tail<W - 1>(pairs, R, x, p, V, ndp, nd, j0, zt, n);
    }
}

template <>
inline void pyopnb_project_tail<0>(int, int, const double*, ptrdiff_t, const double*, ptrdiff_t, ptrdiff_t,
                                   ptrdiff_t, double*, ptrdiff_t) {}

/* rows i..i+R-1 of Z': zt[j * n + r] = sum_l x[r, l] V[l, j] for j < nd;
 * V as above. At most 24 sums of a row at a time (12 registers), so that a
 * row is read once when ndim <= 24. */
static inline void pyopnb_project_rows(const double* x, int R, ptrdiff_t p, const double* V, ptrdiff_t ndp,
                                       ptrdiff_t nd, double* zt, ptrdiff_t n) {
    ptrdiff_t j = 0;
    for (; ndp - j > 24; j += 24)
        for (int r = 0; r < R; ++r) pyopnb_project_chunk<1, 12>(x + r * p, p, V, ndp, nd, j, zt + r, n);
    pyopnb_project_tail<12>((int)((ndp - j) / 2), R, x, p, V, ndp, nd, j, zt, n);
}

#endif
