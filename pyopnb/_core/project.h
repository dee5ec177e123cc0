/* Z' = (X V)' in R's summation order. Every entry z_ij is sum_l x_il v_lj
 * added over l in order, with no FMA (R's reference BLAS); or of (X - mu) V,
 * each x_il - mu_l the one subtraction R's sweep makes, so that no centred
 * copy of X is made. A chain of
 * dependent additions runs at the adder's latency; holding a row's sums in
 * several registers (VL columns a register: 2 on SSE2, 4 on AVX2, 8 on
 * AVX-512) gives independent chains, and each lane still adds its own sum
 * in order, so every path gives the same bits as a scalar loop.
 */
#ifndef PYOPNB_PROJECT_H
#define PYOPNB_PROJECT_H

#include <stddef.h>

#include "simd.h"

/* what one projection fixes: V and the shapes (by value below the
 * dispatch: in registers, whatever the stores to Z' may alias) */
typedef struct {
    ptrdiff_t p;        /* X's columns, V's rows */
    const double* V;    /* [p, ndp], row-major, zero columns past nd */
    ptrdiff_t ndp;      /* V's row length: at least nd, a multiple of 8 */
    ptrdiff_t nd;       /* V's columns: Z's */
    ptrdiff_t n;        /* Z's rows: the stride of Z' */
    const double* mu;   /* [p]: subtracted from each row of X first; NULL: none */
} pyopnb_projection;

/* a run of rows of X and where their projections go */
typedef struct {
    const double* x;    /* R rows [R, p], row-major */
    int R;
    double* zt;         /* Z' entry of the first row, column 0: row r, column j at zt[j * n + r] */
} pyopnb_project_run;

/* zt[(j0 + j) * n + r] for j < min(W VL, nd - j0), r < R: R rows x against
 * V (ndp at least j0 + W VL). R W chains of additions at once: a chain's
 * latency is the bound when there are few (one row at ndim = 5 had three). */
template <int VL, int R, int W, bool CENTRE>
static inline __attribute__((always_inline)) void pyopnb_project_chunk(const pyopnb_projection P,
                                                                       const double* x, ptrdiff_t j0, double* zt) {
    typedef typename pyopnb_dvec<VL>::type vec;
    const ptrdiff_t p = P.p, ndp = P.ndp, nd = P.nd, n = P.n;
    const double* V = P.V;
    vec acc[R][W];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 12
        for (int q = 0; q < W; ++q) acc[r][q] = vec{};
    for (ptrdiff_t l = 0; l < p; ++l) {
        const double* vr = V + l * ndp + j0;
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const double xl = CENTRE ? x[r * p + l] - P.mu[l] : x[r * p + l];
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

/* the last registers of columns (W or fewer) of a run's rows:
 * pyopnb_project_chunk with the register count known at compile time, as
 * many rows at once as keep about 12 registers of sums */
template <int VL, int W, bool CENTRE>
struct pyopnb_project_tail {
    static inline __attribute__((always_inline)) void run(int regs, const pyopnb_projection P,
                                                          pyopnb_project_run rows, ptrdiff_t j0) {
        if (regs == W) {
            constexpr int RW = 12 / W > 8 ? 8 : (12 / W < 1 ? 1 : 12 / W);
            const ptrdiff_t p = P.p;
            int r = 0;
            for (; r + RW <= rows.R; r += RW)
                pyopnb_project_chunk<VL, RW, W, CENTRE>(P, rows.x + r * p, j0, rows.zt + r);
            for (; r < rows.R; ++r) pyopnb_project_chunk<VL, 1, W, CENTRE>(P, rows.x + r * p, j0, rows.zt + r);
        } else {
            pyopnb_project_tail<VL, W - 1, CENTRE>::run(regs, P, rows, j0);
        }
    }
};

template <int VL, bool CENTRE>
struct pyopnb_project_tail<VL, 0, CENTRE> {
    static inline void run(int, const pyopnb_projection, pyopnb_project_run, ptrdiff_t) {}
};

/* a run's rows of Z': zt[j * n + r] = sum_l x[r, l] V[l, j] for j < nd. At
 * most 12 registers of a row's sums at a time, so that a row is read once
 * when ndim <= 12 VL. */
template <int VL, bool CENTRE>
static inline __attribute__((always_inline)) void pyopnb_project_centred(const pyopnb_projection P,
                                                                         pyopnb_project_run rows) {
    const ptrdiff_t nd = P.nd, p = P.p;
    ptrdiff_t j = 0;
    for (; nd - j > 12 * VL; j += 12 * VL)
        for (int r = 0; r < rows.R; ++r)
            pyopnb_project_chunk<VL, 1, 12, CENTRE>(P, rows.x + r * p, j, rows.zt + r);
    pyopnb_project_tail<VL, 12, CENTRE>::run((int)((nd - j + VL - 1) / VL), P, rows, j);
}

/* the centring chosen once a run, outside the loops (a subtraction in them
 * costs the plain projection of every evaluation) */
template <int VL>
static inline __attribute__((always_inline)) void pyopnb_project_on(const pyopnb_projection P,
                                                                    pyopnb_project_run rows) {
    if (P.mu)
        pyopnb_project_centred<VL, true>(P, rows);
    else
        pyopnb_project_centred<VL, false>(P, rows);
}

#if PYOPNB_DISPATCH
__attribute__((target("avx512f"))) static void pyopnb_project_avx512(const pyopnb_projection* P,
                                                                     pyopnb_project_run rows) {
    pyopnb_project_on<8>(*P, rows);
}
__attribute__((target("avx2"))) static void pyopnb_project_avx2(const pyopnb_projection* P,
                                                                pyopnb_project_run rows) {
    pyopnb_project_on<4>(*P, rows);
}
#endif

/* pyopnb_project_on on the vector path level (simd.pyx's simd_path), no wider
 * than the columns fill: a register mostly of zero columns costs more than
 * it saves (ndim = 1 took 40% longer on AVX2) */
static inline void pyopnb_project_rows(int level, const pyopnb_projection* P, pyopnb_project_run rows) {
#if PYOPNB_DISPATCH
    if (level >= 2 && P->nd > 4) { pyopnb_project_avx512(P, rows); return; }
    if (level >= 1 && P->nd > 2) { pyopnb_project_avx2(P, rows); return; }
#endif
    (void)level;
    pyopnb_project_on<2>(*P, rows);
}

#endif
