/* Fixed-order dense kernels with vector paths chosen at run time.
 *
 * C = A'B: every entry c_lt = sum_i a_il b_it is added over i in order from
 * 0, without FMA, as R's reference BLAS forms crossprod and t(X) %*% dZ.
 * Vectors run across independent outputs (several t of one l), so each lane
 * does the scalar code's operations in its order: the SSE2, AVX2 and
 * AVX-512 paths give the same bits. -ffp-contract=off (setup.py) keeps the
 * compiler from fusing products into sums, and the AVX2 path is compiled for
 * "avx2" alone (not "fma").
 *
 * Threads split the l (whole rows of C, so never a sum) and go through the
 * rows of A and B a block at a time together: a block is read from memory
 * once and shared through the cache, not once per thread.
 */
#ifndef PYOPNB_LINALG_H
#define PYOPNB_LINALG_H

#include <stddef.h>
#include <string.h>

#include "simd.h"

/* rows per block: a block of A (p doubles a row) and of B (qp) stays in cache */
#define PYOPNB_XP_ROWS 512
/* a tile of C in registers: up to PYOPNB_XP_LB rows (l) by PYOPNB_XP_NV vectors of t */
#define PYOPNB_XP_LB 4
#define PYOPNB_XP_NV 3

/* C[l:l+LB, t0:t0+NV W] += A[0:m, l:l+LB]' B[0:m, t0:t0+NV W], rows in order */
template <int W, int LB, int NV>
static inline __attribute__((always_inline)) void pyopnb_xp_tile(
        const double* A, ptrdiff_t m, ptrdiff_t p, ptrdiff_t l, const double* B, ptrdiff_t qp, ptrdiff_t t0,
        double* C) {
    /* unaligned vector loads and stores through a type of alignment 8;
     * loops over the tile fully unrolled, so that the tile lives in registers */
    typedef typename pyopnb_dvec<W>::type vec;
    vec acc[LB][NV];
#pragma GCC unroll 8
    for (int a = 0; a < LB; ++a)
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) acc[a][v] = *(const vec*)(C + (l + a) * qp + t0 + v * W);
    for (ptrdiff_t i = 0; i < m; ++i) {
        vec b[NV];
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) b[v] = *(const vec*)(B + i * qp + t0 + v * W);
#pragma GCC unroll 8
        for (int a = 0; a < LB; ++a) {
            const double x = A[i * p + l + a];
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) acc[a][v] = acc[a][v] + x * b[v];
        }
    }
#pragma GCC unroll 8
    for (int a = 0; a < LB; ++a)
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) *(vec*)(C + (l + a) * qp + t0 + v * W) = acc[a][v];
}

#define PYOPNB_XP_CASE(LBV, NVV) \
    case (LBV) * 8 + (NVV): pyopnb_xp_tile<W, LBV, NVV>(A, m, p, l, B, qp, t0, C); break;

/* C[l0:l1, :] += A[0:m, l0:l1]' B[0:m, :] (qp a multiple of 8), tile by tile */
template <int W>
static inline __attribute__((always_inline)) void pyopnb_xp_rows(
        const double* A, ptrdiff_t m, ptrdiff_t p, const double* B, ptrdiff_t qp, ptrdiff_t l0, ptrdiff_t l1,
        double* C) {
    const ptrdiff_t nvec = qp / W;
    for (ptrdiff_t l = l0; l < l1; l += PYOPNB_XP_LB) {
        const int lb = (int)(l1 - l < PYOPNB_XP_LB ? l1 - l : PYOPNB_XP_LB);
        for (ptrdiff_t v0 = 0; v0 < nvec; v0 += PYOPNB_XP_NV) {
            const int nv = (int)(nvec - v0 < PYOPNB_XP_NV ? nvec - v0 : PYOPNB_XP_NV);
            const ptrdiff_t t0 = v0 * W;
            switch (lb * 8 + nv) {
                PYOPNB_XP_CASE(1, 1) PYOPNB_XP_CASE(1, 2) PYOPNB_XP_CASE(1, 3)
                PYOPNB_XP_CASE(2, 1) PYOPNB_XP_CASE(2, 2) PYOPNB_XP_CASE(2, 3)
                PYOPNB_XP_CASE(3, 1) PYOPNB_XP_CASE(3, 2) PYOPNB_XP_CASE(3, 3)
                PYOPNB_XP_CASE(4, 1) PYOPNB_XP_CASE(4, 2) PYOPNB_XP_CASE(4, 3)
                default: break;
            }
        }
    }
}

#if PYOPNB_DISPATCH
__attribute__((target("avx512f"))) static void pyopnb_xp_avx512(
        const double* A, ptrdiff_t m, ptrdiff_t p, const double* B, ptrdiff_t qp, ptrdiff_t l0, ptrdiff_t l1,
        double* C) {
    pyopnb_xp_rows<8>(A, m, p, B, qp, l0, l1, C);
}
__attribute__((target("avx2"))) static void pyopnb_xp_avx2(
        const double* A, ptrdiff_t m, ptrdiff_t p, const double* B, ptrdiff_t qp, ptrdiff_t l0, ptrdiff_t l1,
        double* C) {
    pyopnb_xp_rows<4>(A, m, p, B, qp, l0, l1, C);
}
#endif

static void pyopnb_xp_base(const double* A, ptrdiff_t m, ptrdiff_t p, const double* B, ptrdiff_t qp,
                           ptrdiff_t l0, ptrdiff_t l1, double* C) {
    pyopnb_xp_rows<2>(A, m, p, B, qp, l0, l1, C);
}

static inline void pyopnb_xp(int level, const double* A, ptrdiff_t m, ptrdiff_t p, const double* B, ptrdiff_t qp,
                             ptrdiff_t l0, ptrdiff_t l1, double* C) {
#if PYOPNB_DISPATCH
    if (level >= 2) { pyopnb_xp_avx512(A, m, p, B, qp, l0, l1, C); return; }
    if (level == 1) { pyopnb_xp_avx2(A, m, p, B, qp, l0, l1, C); return; }
#endif
    (void)level;
    pyopnb_xp_base(A, m, p, B, qp, l0, l1, C);
}

/* C [p, qp] = A'B for A [n, p] row-major and B given transposed, Bt [q, n]
 * (rows of Bt contiguous, as the objective's dZ'), qp = q rounded up to 8.
 * The threads take fixed ranges of l and go through the rows on their own,
 * a block at a time: each lays out its block of B row-major (zero columns
 * past q, written once) in its own part of buf (min(p, nthr) parts of
 * PYOPNB_XP_ROWS * qp doubles), so that no thread waits for another between blocks (at two
 * barriers a block, two threads took longer than one). Each entry is
 * summed over the rows in order whatever the threads. */
static void pyopnb_crossprod_t(int level, const double* A, ptrdiff_t n, ptrdiff_t p, const double* Bt,
                               ptrdiff_t q, ptrdiff_t qp, double* C, double* buf, int nthr) {
    const int parts = (int)(p < nthr ? p : nthr);
    for (ptrdiff_t j = 0; j < p * qp; ++j) C[j] = 0.0;
    if (p == 0 || q == 0) return;
#pragma omp parallel for num_threads(parts > 0 ? parts : 1) if (parts > 1) schedule(static)
    for (int part = 0; part < parts; ++part) {
        double* own = buf + (ptrdiff_t)part * PYOPNB_XP_ROWS * qp;
        const ptrdiff_t l0 = p * part / parts, l1 = p * (part + 1) / parts;
        for (ptrdiff_t i0 = 0; i0 < n; i0 += PYOPNB_XP_ROWS) {
            const ptrdiff_t m = n - i0 < PYOPNB_XP_ROWS ? n - i0 : PYOPNB_XP_ROWS;
            for (ptrdiff_t t = 0; t < qp; ++t) {
                if (t < q) {
                    const double* src = Bt + t * n + i0;
                    for (ptrdiff_t i = 0; i < m; ++i) own[i * qp + t] = src[i];
                } else if (i0 == 0) {
                    /* the zero columns stay zero: only the first block writes them */
                    for (ptrdiff_t i = 0; i < PYOPNB_XP_ROWS; ++i) own[i * qp + t] = 0.0;
                }
            }
            pyopnb_xp(level, A + i0 * p, m, p, own, qp, l0, l1, C);
        }
    }
}

#endif
