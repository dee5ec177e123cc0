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
 * In t(X) %*% dZ the rows go by the fixed blocks of blocks.h: each block's
 * partial is summed in row order from 0, and the partials are added in
 * block order, so that R's order holds up to one block (65536 rows) and the
 * bits depend on n alone above it. Threads take (block, range of l) items
 * as they come free: a thread on a busy core does fewer.
 */
#ifndef PYOPNB_LINALG_H
#define PYOPNB_LINALG_H

#include <stddef.h>
#include <string.h>

#include "blocks.h"
#include "simd.h"
#include "threads.h"

/* rows per block: a block of A (p doubles a row) and of B (qp) stays in cache */
#define PYOPNB_XP_ROWS 512
/* a tile of C in registers: up to PYOPNB_XP_LB rows (l) by PYOPNB_XP_NV vectors of t */
#define PYOPNB_XP_LB 4
#define PYOPNB_XP_NV 3

/* a run of at most PYOPNB_XP_ROWS rows of A'B, B laid out row-major */
typedef struct {
    const double* A;    /* the run's rows of A [m, p] */
    ptrdiff_t m;
    ptrdiff_t p;
    const double* B;    /* its rows of B [m, qp] (qp a multiple of 8) */
    ptrdiff_t qp;
    double* C;          /* C [p, qp], added to */
} pyopnb_xp_run;

/* C[l:l+LB, t0:t0+NV W] += A[0:m, l:l+LB]' B[0:m, t0:t0+NV W], rows in order */
template <int W, int LB, int NV>
static inline __attribute__((always_inline)) void pyopnb_xp_tile(const pyopnb_xp_run* R, ptrdiff_t l,
                                                                 ptrdiff_t t0) {
    /* unaligned vector loads and stores through a type of alignment 8;
     * loops over the tile fully unrolled, so that the tile lives in registers */
    typedef typename pyopnb_dvec<W>::type vec;
    const double* A = R->A;
    const double* B = R->B;
    double* C = R->C;
    const ptrdiff_t m = R->m, p = R->p, qp = R->qp;
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
    case (LBV) * 8 + (NVV): pyopnb_xp_tile<W, LBV, NVV>(R, l, t0); break;

/* C[l0:l1, :] += A[0:m, l0:l1]' B[0:m, :] for a run, tile by tile */
template <int W>
static inline __attribute__((always_inline)) void pyopnb_xp_rows(const pyopnb_xp_run* R, ptrdiff_t l0,
                                                                 ptrdiff_t l1) {
    const ptrdiff_t nvec = R->qp / W;
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
__attribute__((target("avx512f"))) static void pyopnb_xp_avx512(const pyopnb_xp_run* R, ptrdiff_t l0,
                                                                ptrdiff_t l1) {
    pyopnb_xp_rows<8>(R, l0, l1);
}
__attribute__((target("avx2"))) static void pyopnb_xp_avx2(const pyopnb_xp_run* R, ptrdiff_t l0, ptrdiff_t l1) {
    pyopnb_xp_rows<4>(R, l0, l1);
}
#endif

static void pyopnb_xp_base(const pyopnb_xp_run* R, ptrdiff_t l0, ptrdiff_t l1) {
    pyopnb_xp_rows<2>(R, l0, l1);
}

static inline void pyopnb_xp(int level, const pyopnb_xp_run* R, ptrdiff_t l0, ptrdiff_t l1) {
#if PYOPNB_DISPATCH
    if (level >= 2) { pyopnb_xp_avx512(R, l0, l1); return; }
    if (level == 1) { pyopnb_xp_avx2(R, l0, l1); return; }
#endif
    (void)level;
    pyopnb_xp_base(R, l0, l1);
}

/* A'B's operands: A [n, p] row-major and B given transposed, Bt [q, n]
 * (rows of Bt contiguous, as the objective's dZ'), C's rows padded to qp,
 * q rounded up to 8 */
typedef struct {
    const double* A;
    ptrdiff_t n;
    ptrdiff_t p;
    const double* Bt;
    ptrdiff_t q;
    ptrdiff_t qp;
    ptrdiff_t block;    /* rows per block: blocks.h's for n, or a larger problem's whose whole blocks these rows are */
} pyopnb_xp_operands;

/* C[l0:l1, :] += A[i0:i1, l0:l1]' B[i0:i1, :], rows in order, PYOPNB_XP_ROWS
 * at a time: each laid out row-major in own (PYOPNB_XP_ROWS * qp doubles,
 * its columns past q zero) */
static inline void pyopnb_xp_block(int level, const pyopnb_xp_operands* X, ptrdiff_t i0, ptrdiff_t i1,
                                   ptrdiff_t l0, ptrdiff_t l1, double* C, double* own) {
    const ptrdiff_t n = X->n, p = X->p, q = X->q, qp = X->qp;
    for (ptrdiff_t r0 = i0; r0 < i1; r0 += PYOPNB_XP_ROWS) {
        const ptrdiff_t m = i1 - r0 < PYOPNB_XP_ROWS ? i1 - r0 : PYOPNB_XP_ROWS;
        for (ptrdiff_t t = 0; t < q; ++t) {
            const double* src = X->Bt + t * n + r0;
            for (ptrdiff_t i = 0; i < m; ++i) own[i * qp + t] = src[i];
        }
        const pyopnb_xp_run run = {X->A + r0 * p, m, p, own, qp, C};
        pyopnb_xp(level, &run, l0, l1);
    }
}

/* C [p, qp] = A'B by blocks of X->block rows: block b's partial into
 * part + b p qp (C itself where there is one block), then the partials
 * added into C in block order (C NULL: the partials left in part, a part's
 * of a larger problem). Items (block, range of l), as many ranges of l as
 * make at least nthr items; each thread's own rows of B in buf (nthr parts
 * of PYOPNB_XP_ROWS * qp doubles). */
static void pyopnb_crossprod_t(int level, const pyopnb_xp_operands* X, double* C, double* part, double* buf,
                               int nthr) {
    const ptrdiff_t n = X->n, p = X->p, qp = X->qp, B = X->block;
    const ptrdiff_t nblk = (n + B - 1) / B;
    double* out = nblk == 1 && C != NULL ? C : part;
    for (ptrdiff_t j = 0; j < nblk * p * qp; ++j) out[j] = 0.0;
    if (p == 0 || X->q == 0) {
        if (nblk > 1 && C != NULL) memset(C, 0, p * qp * sizeof(double));
        return;
    }
    ptrdiff_t lparts = (nthr + nblk - 1) / nblk;
    if (lparts > p) lparts = p;
    if (lparts < 1) lparts = 1;
    const ptrdiff_t items = nblk * lparts;
    const int team = (int)(items < nthr ? items : nthr);
#pragma omp parallel num_threads(team > 0 ? team : 1) if (team > 1)
    {
        double* own = buf + (ptrdiff_t)_thread_id() * PYOPNB_XP_ROWS * qp;
        memset(own, 0, PYOPNB_XP_ROWS * qp * sizeof(double));
#pragma omp for schedule(dynamic)
        for (ptrdiff_t it = 0; it < items; ++it) {
            const ptrdiff_t b = it / lparts, lp = it % lparts;
            const ptrdiff_t i0 = b * B, i1 = i0 + B < n ? i0 + B : n;
            pyopnb_xp_block(level, X, i0, i1, p * lp / lparts, p * (lp + 1) / lparts, out + b * p * qp, own);
        }
    }
    if (nblk == 1 || C == NULL) return;
    pyopnb_reduce_blocks(part, nblk, p * qp);
    memcpy(C, part, p * qp * sizeof(double));
}

#endif
