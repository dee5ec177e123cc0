/* A column's points' grid coordinates u = (z - lo) / delta, from which
 * geometry.pxd takes their cells and fractions: a register of them at a
 * time on the AVX2 path, where the SSE2 baseline divides two at a time and
 * the divisions were a fifth of the binning. A quotient's bits do not
 * depend on its lane, so every path gives the same. */
#ifndef PYOPNB_GEOMETRY_H
#define PYOPNB_GEOMETRY_H

#include <stddef.h>

#include "simd.h"

static inline __attribute__((always_inline)) void pyopnb_grid_coords_on(const double* z, double lo, double delta,
                                                                        ptrdiff_t n, double* u) {
    for (ptrdiff_t i = 0; i < n; ++i) u[i] = (z[i] - lo) / delta;
}

#if PYOPNB_DISPATCH
__attribute__((target("avx2"))) static void pyopnb_grid_coords_avx2(const double* z, double lo, double delta,
                                                                    ptrdiff_t n, double* u) {
    pyopnb_grid_coords_on(z, lo, delta, n, u);
}
#endif

/* u[i] = (z[i] - lo) / delta, i < n, on the vector path level (simd.pyx's
 * simd_path; AVX-512's wider divisions measured no faster) */
static inline void pyopnb_grid_coords(int level, const double* z, double lo, double delta, ptrdiff_t n, double* u) {
#if PYOPNB_DISPATCH
    if (level >= 1) {
        pyopnb_grid_coords_avx2(z, lo, delta, n, u);
        return;
    }
#endif
    (void)level;
    pyopnb_grid_coords_on(z, lo, delta, n, u);
}

#endif
