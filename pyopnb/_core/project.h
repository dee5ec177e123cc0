/* Z' = (X V)' in R's summation order. Every entry z_ij is sum_l x_il v_lj
 * added over l in order, with no FMA (R's reference BLAS). A chain of
 * dependent additions runs at the adder's latency; holding a row's sums in
 * several registers (VL columns a register: 2 on SSE2, 4 on AVX2, 8 on
 * AVX-512) gives independent chains, and each lane still adds its own sum
 * in order, so every path gives the same bits as a scalar loop.
 */
#ifndef PYOPNB_PROJECT_H
#define PYOPNB_PROJECT_H

#include <stddef.h>

#include "simd.h"

/* zt[(j0 + j) * n + r] for j < min(W VL, nd - j0), r < R: R rows x [R, p]
 * (row-major) against V [p, ndp] (row-major, zero columns past nd, ndp at
 * least j0 + W VL). R W chains of additions at once: a chain's latency is
 * the bound when there are few (one row at ndim = 5 had three). */
template <int VL, int R, int W>
static inline __attribute__((always_inline)) void pyopnb_project_chunk(
        const double* x, ptrdiff_t p, const double* V, ptrdiff_t ndp, ptrdiff_t nd, ptrdiff_t j0, double* zt,
        ptrdiff_t n) {
    typedef typename pyopnb_dvec<VL>::type vec;
    vec acc[R][W];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 12
        for (int q = 0; q < W; ++q) acc[r][q] = vec{};
    for (ptrdiff_t l = 0; l < p; ++l) {
        const double* vr = V + l * ndp + j0;
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const double xl = x[r * p + l];
#pragma GCC unroll 12
            for (int q = 0; q < W; ++q) acc[r][q] = acc[r][q] + xl * *(const vec*)(vr + VL * q);
        }
    }
#pragma GCC unroll 12
    for (int q = 0; q < W; ++q)
        for (int c = 0; c < VL && j0 + VL * q + c < nd; ++c)
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) zt[(j0 + VL * q + c) * n + r] = acc[r][q][c];
}

/* the last registers of columns (W or fewer) of R rows: pyopnb_project_chunk
 * with the register count known at compile time, as many rows at once as
 * keep about 12 registers of sums */
template <int VL, int W>
struct pyopnb_project_tail {
    static inline __attribute__((always_inline)) void run(
            int regs, int R, const double* x, ptrdiff_t p, const double* V, ptrdiff_t ndp, ptrdiff_t nd,
            ptrdiff_t j0, double* zt, ptrdiff_t n) {
        if (regs == W) {
            constexpr int RW = 12 / W > 8 ? 8 : (12 / W < 1 ? 1 : 12 / W);
            int r = 0;
            for (; r + RW <= R; r += RW)
                pyopnb_project_chunk<VL, RW, W>(x + r * p, p, V, ndp, nd, j0, zt + r, n);
            for (; r < R; ++r) pyopnb_project_chunk<VL, 1, W>(x + r * p, p, V, ndp, nd, j0, zt + r, n);
        } else {
            pyopnb_project_tail<VL, W - 1>::run(regs, R, x, p, V, ndp, nd, j0, zt, n);
        }
    }
};

template <int VL>
struct pyopnb_project_tail<VL, 0> {
    static inline void run(int, int, const double*, ptrdiff_t, const double*, ptrdiff_t, ptrdiff_t, ptrdiff_t,
                           double*, ptrdiff_t) {}
};

/* rows i..i+R-1 of Z': zt[j * n + r] = sum_l x[r, l] V[l, j] for j < nd; V
 * as above with ndp a multiple of 8. At most 12 registers of a row's sums
 * at a time, so that a row is read once when ndim <= 12 VL. */
template <int VL>
static inline __attribute__((always_inline)) void pyopnb_project_on(
        const double* x, int R, ptrdiff_t p, const double* V, ptrdiff_t ndp, ptrdiff_t nd, double* zt,
        ptrdiff_t n) {
    ptrdiff_t j = 0;
    for (; nd - j > 12 * VL; j += 12 * VL)
        for (int r = 0; r < R; ++r) pyopnb_project_chunk<VL, 1, 12>(x + r * p, p, V, ndp, nd, j, zt + r, n);
    pyopnb_project_tail<VL, 12>::run((int)((nd - j + VL - 1) / VL), R, x, p, V, ndp, nd, j, zt, n);
}

#if PYOPNB_DISPATCH
__attribute__((target("avx512f"))) static void pyopnb_project_avx512(
        const double* x, int R, ptrdiff_t p, const double* V, ptrdiff_t ndp, ptrdiff_t nd, double* zt,
        ptrdiff_t n) {
    pyopnb_project_on<8>(x, R, p, V, ndp, nd, zt, n);
}
__attribute__((target("avx2"))) static void pyopnb_project_avx2(
        const double* x, int R, ptrdiff_t p, const double* V, ptrdiff_t ndp, ptrdiff_t nd, double* zt,
        ptrdiff_t n) {
    pyopnb_project_on<4>(x, R, p, V, ndp, nd, zt, n);
}
#endif

/* pyopnb_project_on on the vector path level (simd.pyx's simd_path), no wider
 * than the columns fill: a register mostly of zero columns costs more than
 * it saves (ndim = 1 took 40% longer on AVX2) */
static inline void pyopnb_project_rows(int level, const double* x, int R, ptrdiff_t p, const double* V,
                                       ptrdiff_t ndp, ptrdiff_t nd, double* zt, ptrdiff_t n) {
#if PYOPNB_DISPATCH
    if (level >= 2 && nd > 4) { pyopnb_project_avx512(x, R, p, V, ndp, nd, zt, n); return; }
    if (level >= 1 && nd > 2) { pyopnb_project_avx2(x, R, p, V, ndp, nd, zt, n); return; }
#endif
    (void)level;
    pyopnb_project_on<2>(x, R, p, V, ndp, nd, zt, n);
}

#endif
