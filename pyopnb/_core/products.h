/* A point's class densities multiplied over the columns (logged once), and
 * a point's step of the gradient: the per-point arithmetic that every
 * evaluation's passes over the points share.
 */
#ifndef PYOPNB_PRODUCTS_H
#define PYOPNB_PRODUCTS_H

#include "lanes.h"
#include "simd.h"
#include <immintrin.h>

/* dst[k] = src[k] for k < K, two at a time (short rows: a call to memcpy
 * costs more than the copy) */
static inline void pyopnb_copy_row(const double* src, int K, double* dst) {
    int k = 0;
    for (; k + 2 <= K; k += 2) memcpy(dst + k, src + k, 2 * sizeof(double));
    if (k < K) dst[k] = src[k];
}

/* A point's class densities multiplied over the columns and logged once.
 * For each class k: pr[k], the running product, and acc[k], the sum of the
 * logs of the products closed so far; log prod_t s_t = acc + log(pr)
 * (pyopnb_log_products). A product that would leave [1e-289, 1e289] (or meet
 * a 0, an inf or a NaN) is closed: its log goes to acc and the new factor
 * starts the next, so no product underflows or overflows, and a class
 * density of 0 still gives -inf. One log per point and class, where a log
 * per column would be ndim of them; a product rounds within an ulp a
 * factor, their sum of logs within as little. */
#define PYOPNB_PROD_LO 1e-289
#define PYOPNB_PROD_HI 1e289

/* one step of one class's product: pr = pr s where that stays in range,
 * else the product closed (see above); the slow path of every vector path */
static inline void pyopnb_mul1(double s, double* pr, double* acc) {
    const double q = *pr * s;
    if (q >= PYOPNB_PROD_LO && q <= PYOPNB_PROD_HI) {
        *pr = q;
    } else {
        *acc = *acc + log(*pr);
        *pr = s;
    }
}

/* pyopnb_mul1 for two classes, lane by lane */
static inline void pyopnb_mul2(pyopnb_v2d s, pyopnb_v2d* pr, pyopnb_v2d* acc) {
    for (int l = 0; l < 2; ++l) {
        double p = (*pr)[l], a = (*acc)[l];
        pyopnb_mul1(s[l], &p, &a);
        (*pr)[l] = p;
        (*acc)[l] = a;
    }
}

/* classes k, k + 1 of a row as a vector; a class without a partner (two = 0)
 * shares its register with `pad` */
static inline __m128d pyopnb_pair_at(const double* row, int k, int two, double pad) {
    return two ? _mm_loadu_pd(row + k) : _mm_set_pd(pad, row[k]);
}

/* The density tables that running products go through, one per column:
 * column r's table base[r] read at row idx[r][i] (K entries), nrow columns.
 * A column's sums at its sorted points (I = ptrdiff_t, passes.pyx) or its
 * grid tables at the points' cells (I = int, grid.pyx). */
template <class I>
struct pyopnb_tables_at {
    const double* const* base;
    const I* const* idx;
    int nrow;
    int K;
};
typedef pyopnb_tables_at<int> pyopnb_tables_at_cells;
typedef pyopnb_tables_at<ptrdiff_t> pyopnb_tables_at_rows;

/* Points' running products [n, K]: pr the products, acc the logs of those
 * closed (see above) */
typedef struct {
    double* pr;
    double* acc;
} pyopnb_running;

/* Running products continued through the tables T, in column order: the
 * one routine that multiplies densities over columns. NS independent
 * products at once, so that their chains of dependent multiplications
 * overlap: product j reads the tables T->base[j * base_step + r] at point
 * i + j * point_step, into pr[j], acc[j] [K] (two tables at one point:
 * base_step = nrow, point_step = 0; two points: 0 and 1). Two classes at a time, a pair's product stays in a
 * register through the columns (kept in memory it was stored and reloaded
 * at every column) and is first multiplied straight through, with one test
 * at the end that every partial product stayed in range: the in-range step
 * every time, so the same numbers as pyopnb_mul2 at each column. Otherwise
 * that pair goes again by pyopnb_mul2. The range test is in SSE2's own
 * terms: through the vector extension GCC moved each mask to integer
 * registers at every step. FRESH: the products start empty (pr = 1,
 * acc = 0) and pr, acc are only written: read back as a pair, two scalar
 * stores just made would stall the load. */
template <int NS, bool FRESH, class I>
static inline void pyopnb_products_n(const pyopnb_tables_at<I>* T, ptrdiff_t i, int base_step, int point_step,
                                     double* const* pr, double* const* acc) {
    const double* const* base = T->base;
    const I* const* idx = T->idx;
    const int nrow = T->nrow, K = T->K;
    const __m128d lo = _mm_set1_pd(PYOPNB_PROD_LO), hi = _mm_set1_pd(PYOPNB_PROD_HI);
#define PYOPNB_ROW(j, r) (base[(j) * base_step + (r)] + (ptrdiff_t)idx[r][i + (j) * point_step] * K)
    for (int k = 0; k < K; k += 2) {
        const int two = k + 1 < K;
        __m128d p0[NS], q[NS], in[NS];
        for (int j = 0; j < NS; ++j) {
            p0[j] = q[j] = FRESH ? _mm_set1_pd(1.0) : pyopnb_pair_at(pr[j], k, two, 1.0);
            in[j] = _mm_castsi128_pd(_mm_set1_epi32(-1));
        }
        for (int r = 0; r < nrow; ++r) {
            for (int j = 0; j < NS; ++j) {
                q[j] = _mm_mul_pd(q[j], pyopnb_pair_at(PYOPNB_ROW(j, r), k, two, 1.0));
                in[j] = _mm_and_pd(in[j], _mm_and_pd(_mm_cmpge_pd(q[j], lo), _mm_cmple_pd(q[j], hi)));
            }
        }
        for (int j = 0; j < NS; ++j) {
            pyopnb_v2d p = q[j];
            if (_mm_movemask_pd(in[j]) != 3) {
                pyopnb_v2d a = FRESH ? pyopnb_v2d{0.0, 0.0} : pyopnb_pair_at(acc[j], k, two, 0.0);
                p = p0[j];
                for (int r = 0; r < nrow; ++r) pyopnb_mul2(pyopnb_pair_at(PYOPNB_ROW(j, r), k, two, 1.0), &p, &a);
                acc[j][k] = a[0];
                if (two) acc[j][k + 1] = a[1];
            } else if (FRESH) {
                acc[j][k] = 0.0;
                if (two) acc[j][k + 1] = 0.0;
            }
            pr[j][k] = p[0];
            if (two) pr[j][k + 1] = p[1];
        }
    }
#undef PYOPNB_ROW
}

#if PYOPNB_DISPATCH
/* lanes l < M of v into dst[l] (0 < M <= 4), straight from the register */
template <int M>
__attribute__((target("avx2"))) static inline __attribute__((always_inline)) void pyopnb_store_lanes(
        __m256d v, double* dst) {
    const __m128d lo = _mm256_castpd256_pd128(v);
    if (M >= 2) _mm_storeu_pd(dst, lo); else _mm_store_sd(dst, lo);
    if (M == 4) _mm_storeu_pd(dst + 2, _mm256_extractf128_pd(v, 1));
    else if (M == 3) _mm_store_sd(dst + 2, _mm256_extractf128_pd(v, 1));
}

/* pyopnb_products_n with four classes a register (AVX2). Lanes past K are
 * masked: not loaded, their range tests ignored, not stored. A lane whose
 * product left the range goes again by pyopnb_mul1, as the SSE2 path's
 * lanes do: the same numbers. M: K where it is known when compiled (at
 * most 4: the products in range are stored straight from the register),
 * else 0. */
template <int NS, bool FRESH, class I, int M>
__attribute__((target("avx2"))) static inline void pyopnb_products_n_avx2(
        const pyopnb_tables_at<I>* T, ptrdiff_t i, int base_step, int point_step, double* const* pr,
        double* const* acc) {
    const double* const* base = T->base;
    const I* const* idx = T->idx;
    const int nrow = T->nrow, K = M ? M : T->K;
    const __m256d lo = _mm256_set1_pd(PYOPNB_PROD_LO), hi = _mm256_set1_pd(PYOPNB_PROD_HI);
    const __m256d one = _mm256_set1_pd(1.0);
#define PYOPNB_ROW(j, r) (base[(j) * base_step + (r)] + (ptrdiff_t)idx[r][i + (j) * point_step] * K)
    for (int k = 0; k < K; k += 4) {
        const int m = K - k < 4 ? K - k : 4, mbits = (1 << m) - 1;
        const __m256i mask = _mm256_cmpgt_epi64(_mm256_set1_epi64x(m), _mm256_set_epi64x(3, 2, 1, 0));
        __m256d q[NS], in[NS];
        for (int j = 0; j < NS; ++j) {
            q[j] = FRESH ? one : _mm256_maskload_pd(pr[j] + k, mask);
            in[j] = _mm256_castsi256_pd(_mm256_set1_epi32(-1));
        }
        for (int r = 0; r < nrow; ++r) {
            for (int j = 0; j < NS; ++j) {
                q[j] = _mm256_mul_pd(q[j], _mm256_maskload_pd(PYOPNB_ROW(j, r) + k, mask));
                in[j] = _mm256_and_pd(in[j], _mm256_and_pd(_mm256_cmp_pd(q[j], lo, _CMP_GE_OQ),
                                                           _mm256_cmp_pd(q[j], hi, _CMP_LE_OQ)));
            }
        }
        for (int j = 0; j < NS; ++j) {
            const int ok = _mm256_movemask_pd(in[j]) & mbits;
            if (M && ok == mbits) {
                pyopnb_store_lanes<M ? M : 1>(q[j], pr[j] + k);
                if (FRESH) pyopnb_store_lanes<M ? M : 1>(_mm256_setzero_pd(), acc[j] + k);
                continue;
            }
            double qv[4];
            _mm256_storeu_pd(qv, q[j]);
            for (int l = 0; l < m; ++l) {
                if (!(ok >> l & 1)) {
                    double p = FRESH ? 1.0 : pr[j][k + l], a = FRESH ? 0.0 : acc[j][k + l];
                    for (int r = 0; r < nrow; ++r) pyopnb_mul1(PYOPNB_ROW(j, r)[k + l], &p, &a);
                    qv[l] = p;
                    acc[j][k + l] = a;
                } else if (FRESH) {
                    acc[j][k + l] = 0.0;
                }
                pr[j][k + l] = qv[l];
            }
        }
    }
#undef PYOPNB_ROW
}

#endif

/* pyopnb_products_n or its AVX2 form, chosen at compile time (the drivers
 * below are compiled once for each path) */
template <bool AVX2, int NS, bool FRESH, class I, int M = 0>
static inline __attribute__((always_inline)) void pyopnb_products_on(
        const pyopnb_tables_at<I>* T, ptrdiff_t i, int base_step, int point_step, double* const* pr,
        double* const* acc) {
#if PYOPNB_DISPATCH
    if (AVX2) {
        pyopnb_products_n_avx2<NS, FRESH, I, M>(T, i, base_step, point_step, pr, acc);
        return;
    }
#endif
    pyopnb_products_n<NS, FRESH, I>(T, i, base_step, point_step, pr, acc);
}

/* CALL(M) with M = K for a row of 2, 3 or 4 classes, else CALL(0): the
 * AVX2 kernels with the class count known when compiled (one register of
 * classes, stored straight from it) */
#define PYOPNB_ON_CLASSES(K, CALL) \
    do { \
        switch (K) { \
            case 2: CALL(2); break; \
            case 3: CALL(3); break; \
            case 4: CALL(4); break; \
            default: CALL(0); break; \
        } \
    } while (0)

/* The drivers run their loop over the points inside the vector path's own
 * function, so that the per-point kernel is inlined there; every path gives
 * the same bits (level: simd.pyx's simd_path). PYOPNB_ON_PATH(level, name,
 * args) calls name<true>(args) in an AVX2 function where level >= 1, else
 * name<false>(args). */
#if PYOPNB_DISPATCH
#define PYOPNB_AVX2_FN(name, params, args) \
    __attribute__((target("avx2"))) static void name##_avx2 params { name<true> args; }
#define PYOPNB_ON_PATH(level, name, args) \
    do { if ((level) >= 1) name##_avx2 args; else name<false> args; } while (0)
#else
#define PYOPNB_AVX2_FN(name, params, args)
#define PYOPNB_ON_PATH(level, name, args) name<false> args
#endif

/* Grid tables: the m points i0.. of a block, started empty, each into its
 * rows of out[0] (and of out[1] where nset = 2) [m, K], the tables T read
 * at the points' cells (base_step: the second set's offset in T->base).
 * M: K where known when compiled (pyopnb_products_n_avx2), else 0. */
template <bool AVX2, int M>
static inline __attribute__((always_inline)) void pyopnb_block_products_m(
        const pyopnb_tables_at_cells* T, ptrdiff_t i0, ptrdiff_t m, int nset, int base_step,
        const pyopnb_running* out) {
    const int K = M ? M : T->K;
    for (ptrdiff_t j = 0; j < m; ++j) {
        double* pr[2] = {out[0].pr + j * K, nset == 2 ? out[1].pr + j * K : NULL};
        double* ac[2] = {out[0].acc + j * K, nset == 2 ? out[1].acc + j * K : NULL};
        if (nset == 2)
            pyopnb_products_on<AVX2, 2, true, int, M>(T, i0 + j, base_step, 0, pr, ac);
        else
            pyopnb_products_on<AVX2, 1, true, int, M>(T, i0 + j, base_step, 0, pr, ac);
    }
}
template <bool AVX2>
static inline __attribute__((always_inline)) void pyopnb_block_products_on(
        const pyopnb_tables_at_cells* T, ptrdiff_t i0, ptrdiff_t m, int nset, int base_step,
        const pyopnb_running* out) {
#define PYOPNB_BLOCK_M(M) pyopnb_block_products_m<AVX2, M>(T, i0, m, nset, base_step, out)
    PYOPNB_ON_CLASSES(AVX2 ? T->K : 0, PYOPNB_BLOCK_M);
#undef PYOPNB_BLOCK_M
}
#define PYOPNB_BLOCK_PARAMS (const pyopnb_tables_at_cells* T, ptrdiff_t i0, ptrdiff_t m, int nset, int base_step, \
                             const pyopnb_running* out)
#define PYOPNB_BLOCK_ARGS (T, i0, m, nset, base_step, out)
PYOPNB_AVX2_FN(pyopnb_block_products_on, PYOPNB_BLOCK_PARAMS, PYOPNB_BLOCK_ARGS)
static inline void pyopnb_block_products(int level, const pyopnb_tables_at_cells* T, ptrdiff_t i0, ptrdiff_t m,
                                         int nset, int base_step, const pyopnb_running* out) {
    PYOPNB_ON_PATH(level, pyopnb_block_products_on, PYOPNB_BLOCK_ARGS);
}

/* Columns' sums at the points' sorted rows (T): points i0..i1-1 continued
 * (or started empty, fresh) into out [n, K], two points at a time (their
 * chains overlap). M: K where known when compiled, else 0. */
template <bool AVX2, int M>
static inline __attribute__((always_inline)) void pyopnb_rows_products_m(
        const pyopnb_tables_at_rows* T, pyopnb_running out, int fresh, ptrdiff_t i0, ptrdiff_t i1) {
    const int K = M ? M : T->K;
    for (ptrdiff_t i = i0; i < i1; i += 2) {
        if (i + PYOPNB_AHEAD + 1 < i1) {
            for (int r = 0; r < T->nrow; ++r) {
                pyopnb_prefetch_at(T->base[r] + T->idx[r][i + PYOPNB_AHEAD] * K);
                pyopnb_prefetch_at(T->base[r] + T->idx[r][i + PYOPNB_AHEAD + 1] * K);
            }
        }
        double* p[2] = {out.pr + i * K, out.pr + (i + 1) * K};
        double* a[2] = {out.acc + i * K, out.acc + (i + 1) * K};
        if (i + 1 < i1) {
            if (fresh) pyopnb_products_on<AVX2, 2, true, ptrdiff_t, M>(T, i, 0, 1, p, a);
            else pyopnb_products_on<AVX2, 2, false, ptrdiff_t, M>(T, i, 0, 1, p, a);
        } else {
            if (fresh) pyopnb_products_on<AVX2, 1, true, ptrdiff_t, M>(T, i, 0, 1, p, a);
            else pyopnb_products_on<AVX2, 1, false, ptrdiff_t, M>(T, i, 0, 1, p, a);
        }
    }
}
template <bool AVX2>
static inline __attribute__((always_inline)) void pyopnb_rows_products_on(
        const pyopnb_tables_at_rows* T, pyopnb_running out, int fresh, ptrdiff_t i0, ptrdiff_t i1) {
#define PYOPNB_ROWS_M(M) pyopnb_rows_products_m<AVX2, M>(T, out, fresh, i0, i1)
    PYOPNB_ON_CLASSES(AVX2 ? T->K : 0, PYOPNB_ROWS_M);
#undef PYOPNB_ROWS_M
}
#define PYOPNB_ROWS_PARAMS (const pyopnb_tables_at_rows* T, pyopnb_running out, int fresh, ptrdiff_t i0, \
                            ptrdiff_t i1)
#define PYOPNB_ROWS_ARGS (T, out, fresh, i0, i1)
PYOPNB_AVX2_FN(pyopnb_rows_products_on, PYOPNB_ROWS_PARAMS, PYOPNB_ROWS_ARGS)
static inline void pyopnb_rows_products(int level, const pyopnb_tables_at_rows* T, pyopnb_running out, int fresh,
                                        ptrdiff_t i0, ptrdiff_t i1) {
    PYOPNB_ON_PATH(level, pyopnb_rows_products_on, PYOPNB_ROWS_ARGS);
}

/* pr[k] = acc[k] + log(pr[k]) for k < n: the logs of the products kept by
 * pyopnb_products_n, in place */
static inline void pyopnb_log_products(ptrdiff_t n, double* pr, const double* acc) {
    for (ptrdiff_t k = 0; k < n; ++k) pr[k] = acc[k] + log(pr[k]);
}

/* The points' side of the gradient's per-point terms in one column: each
 * point's posteriors [i K], class and weight w_i (wt NULL: 1), and the
 * classes' bandwidths (shared: one bandwidth, every R fit) */
typedef struct {
    const double* post;
    const int* y;
    const double* wt;
    const double* h;
    int K;
    int shared;
} pyopnb_grad_points;

/* What a column's points are read at and add into: f_k's sums S and the
 * derivative's sums D [rows, K], and the c weights W, by row of the tables
 * (a grid cell's, R's binned gradient) or by point (W + i K, started fresh:
 * the exact passes) */
typedef struct {
    const double* S;
    const double* D;
    double* W;
} pyopnb_grad_tables;

/* The tables' rows of point j, asked for ahead of their reads (j < i1),
 * where the points' rows are a sorted column's (see pyopnb_prefetch_at) */
template <class I>
static inline __attribute__((always_inline)) void pyopnb_grad_prefetch(const pyopnb_grad_tables* T, const I* at,
                                                                       int K, ptrdiff_t j, ptrdiff_t i1) {
    if (j < i1) {
        pyopnb_prefetch_at(T->S + (ptrdiff_t)at[j] * K);
        pyopnb_prefetch_at(T->D + (ptrdiff_t)at[j] * K);
    }
}

static inline double pyopnb_point_weight(const pyopnb_grad_points* P, ptrdiff_t i) {
    return P->wt ? P->wt[i] : 1.0;
}

/* One point i as an evaluation point in one column of the gradient, its
 * table rows S, D and weights W:
 * c_k = w_i (1{y = k} - post_k) / S_k (0 where S_k is not positive), W_k += c_k
 * (fresh: W_k = 0 + c_k, W's old content unread: a vector load of two
 * scalars just stored would wait for them),
 * and the sum of the classes' terms c_k D_k (shared) or c_k D_k / h_k
 * (class bandwidths), added in class order. The point's result is 0 - that
 * sum, over h[0] where shared, as R's df_NB_cpp; the caller finishes it
 * (pyopnb_grad_finish), so that the divisions by h[0] go a vector at a
 * time. The divisions, the longest operation, go two at a time. */
static inline double pyopnb_grad_point(const pyopnb_grad_points* P, ptrdiff_t i, const double* S, const double* D,
                                       double* W, int fresh) {
    const int K = P->K, shared = P->shared, y = P->y[i];
    const double* post = P->post + i * K;
    const double* h = P->h;
    const double wi = pyopnb_point_weight(P, i);
    const pyopnb_v2d zero = pyopnb_v2d{0.0, 0.0}, one = pyopnb_v2d{1.0, 1.0};
    const pyopnb_v2d yd = pyopnb_v2d{(double)y, (double)y}, wv = pyopnb_v2d{wi, wi};
    double bsum = 0.0;
    int k = 0;
    for (; k + 2 <= K; k += 2) {
        const pyopnb_v2d f = pyopnb_load2(S + k);
        /* divide by 1 where f is not positive (the comparison is false for
           NaN, as the scalar test's), then put +0 there: no division by 0 or
           NaN is made. Selected by bit masks, which GCC and clang both take */
        const pyopnb_v2i pos = (pyopnb_v2i)(f > zero);
        const pyopnb_v2d fs = (pyopnb_v2d)(((pyopnb_v2i)f & pos) | ((pyopnb_v2i)one & ~pos));
        /* 1{y = k} by a vector comparison: a branch on the class missed
           for every other point */
        const pyopnb_v2d kk = pyopnb_v2d{(double)k, (double)(k + 1)};
        const pyopnb_v2d ind = (pyopnb_v2d)((pyopnb_v2i)(kk == yd) & (pyopnb_v2i)one);
        const pyopnb_v2d q = (ind - pyopnb_load2(post + k)) / fs;
        const pyopnb_v2d c = (pyopnb_v2d)((pyopnb_v2i)q & pos) * wv;
        const pyopnb_v2d w = (fresh ? zero : pyopnb_load2(W + k)) + c;
        memcpy(W + k, &w, sizeof w);
        pyopnb_v2d cd = c * pyopnb_load2(D + k);
        if (!shared) cd = cd / pyopnb_load2(h + k);
        bsum = bsum + cd[0];
        bsum = bsum + cd[1];
    }
    if (k < K) {
        const double f = S[k];
        const double c = (f > 0.0 ? ((double)(y == k) - post[k]) / f : 0.0) * wi;
        W[k] = (fresh ? 0.0 : W[k]) + c;
        bsum = bsum + (shared ? c * D[k] : c * D[k] / h[k]);
    }
    return bsum;
}

#if PYOPNB_DISPATCH
/* A group of m <= 4 classes from class k in one AVX2 register: its mask
 * (lanes below m), its lanes' classes, and their bandwidths (1 where
 * shared, and in the masked lanes, whose quotients are never read). A
 * caller of a row of at most four classes makes one for all its points */
typedef struct {
    int k;
    int m;
    __m256i mask;
    __m256d kk;
    __m256d hk;
} pyopnb_class_group;

__attribute__((target("avx2"))) static inline pyopnb_class_group pyopnb_group_of(const pyopnb_grad_points* P,
                                                                                 int k) {
    pyopnb_class_group g;
    g.k = k;
    g.m = P->K - k < 4 ? P->K - k : 4;
    g.mask = _mm256_cmpgt_epi64(_mm256_set1_epi64x(g.m), _mm256_set_epi64x(3, 2, 1, 0));
    g.kk = _mm256_set_pd((double)(k + 3), (double)(k + 2), (double)(k + 1), (double)k);
    g.hk = P->shared ? _mm256_set1_pd(1.0)
                     : _mm256_blendv_pd(_mm256_set1_pd(1.0), _mm256_maskload_pd(P->h + k, g.mask),
                                        _mm256_castsi256_pd(g.mask));
    return g;
}

/* Lanes l < m of w into W[l], and of cd added to bsum one by one in lane
 * order. M > 0: m is M, known when compiled, and the lanes are taken out
 * of the registers; through memory (M = 0) each lane costs a store and a
 * load, and the point's loop was bound by those instructions. */
template <int M>
__attribute__((target("avx2"))) static inline __attribute__((always_inline)) double pyopnb_put_lanes(
        __m256d w, __m256d cd, int m, double* W, double bsum) {
    if (M == 0) {
        double wv[4], cv[4];
        _mm256_storeu_pd(wv, w);
        _mm256_storeu_pd(cv, cd);
        for (int l = 0; l < m; ++l) {
            W[l] = wv[l];
            bsum = bsum + cv[l];
        }
        return bsum;
    }
    pyopnb_store_lanes<M>(w, W);
    const __m128d clo = _mm256_castpd256_pd128(cd), chi = _mm256_extractf128_pd(cd, 1);
    bsum = bsum + _mm_cvtsd_f64(clo);
    if (M >= 2) bsum = bsum + _mm_cvtsd_f64(_mm_unpackhi_pd(clo, clo));
    if (M >= 3) bsum = bsum + _mm_cvtsd_f64(chi);
    if (M >= 4) bsum = bsum + _mm_cvtsd_f64(_mm_unpackhi_pd(chi, chi));
    return bsum;
}

/* pyopnb_grad_point for one group of classes (AVX2), added to bsum: each
 * lane does the SSE2 code's operations in its order, and the classes'
 * terms go into the sum one by one in class order, so the bits are the
 * same; a row of three classes takes one pass where SSE2 takes a pair and
 * a scalar class. Lanes past K are masked: no load, no store. M: the
 * group's class count where known when compiled, else 0 (g->m). */
template <int M>
__attribute__((target("avx2"))) static inline __attribute__((always_inline)) double pyopnb_grad_group_avx2(
        const pyopnb_grad_points* P, ptrdiff_t i, const pyopnb_class_group* g, const double* S, const double* D,
        double* W, int fresh, double bsum) {
    const int k = g->k;
    const double* post = P->post + i * P->K;
    const __m256d zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0);
    const __m256d yd = _mm256_set1_pd((double)P->y[i]), wt = _mm256_set1_pd(pyopnb_point_weight(P, i));
    const __m256d f = _mm256_maskload_pd(S + k, g->mask);
    /* f > 0, false for NaN (and for the masked lanes' zeros) */
    const __m256d pos = _mm256_cmp_pd(f, zero, _CMP_GT_OQ);
    const __m256d fs = _mm256_blendv_pd(one, f, pos);
    const __m256d ind = _mm256_and_pd(_mm256_cmp_pd(g->kk, yd, _CMP_EQ_OQ), one);
    const __m256d q = _mm256_div_pd(_mm256_sub_pd(ind, _mm256_maskload_pd(post + k, g->mask)), fs);
    const __m256d c = _mm256_mul_pd(_mm256_and_pd(q, pos), wt);
    const __m256d w = _mm256_add_pd(fresh ? zero : _mm256_maskload_pd(W + k, g->mask), c);
    __m256d cd = _mm256_mul_pd(c, _mm256_maskload_pd(D + k, g->mask));
    if (!P->shared) cd = _mm256_div_pd(cd, g->hk);
    return pyopnb_put_lanes<M>(w, cd, g->m, W + k, bsum);
}

__attribute__((target("avx2"))) static inline double pyopnb_grad_point_avx2(
        const pyopnb_grad_points* P, ptrdiff_t i, const double* S, const double* D, double* W, int fresh) {
    double bsum = 0.0;
    for (int k = 0; k < P->K; k += 4) {
        const pyopnb_class_group g = pyopnb_group_of(P, k);
        bsum = pyopnb_grad_group_avx2<0>(P, i, &g, S, D, W, fresh, bsum);
    }
    return bsum;
}
#endif

#if PYOPNB_DISPATCH
/* The points' sums with a row of K <= 4 classes (AVX2): one group of
 * classes, made once for all the points (M: K where known when compiled,
 * else 0) */
template <class I, bool W_OWN, int M>
__attribute__((target("avx2"))) static inline __attribute__((always_inline)) void pyopnb_grad_points_group_m(
        const pyopnb_grad_tables* T, const I* at, const pyopnb_grad_points* P, ptrdiff_t i0, ptrdiff_t i1,
        double* dz) {
    const int K = M ? M : P->K;
    const pyopnb_class_group g = pyopnb_group_of(P, 0);
    for (ptrdiff_t i = i0; i < i1; ++i) {
        if (W_OWN) pyopnb_grad_prefetch(T, at, K, i + PYOPNB_AHEAD, i1);
        const ptrdiff_t e = (ptrdiff_t)at[i] * K;
        dz[i] = pyopnb_grad_group_avx2<M>(P, i, &g, T->S + e, T->D + e, W_OWN ? T->W + i * K : T->W + e, W_OWN,
                                          0.0);
    }
}

/* pyopnb_grad_points_group_m with the class count known when compiled */
template <class I, bool W_OWN>
__attribute__((target("avx2"))) static inline void pyopnb_grad_points_group_avx2(
        const pyopnb_grad_tables* T, const I* at, const pyopnb_grad_points* P, ptrdiff_t i0, ptrdiff_t i1,
        double* dz) {
#define PYOPNB_GROUP_M(M) pyopnb_grad_points_group_m<I, W_OWN, M>(T, at, P, i0, i1, dz)
    PYOPNB_ON_CLASSES(P->K, PYOPNB_GROUP_M);
#undef PYOPNB_GROUP_M
}
#endif

/* dz[i] = 0 - dz[i] / h[0] (shared) or 0 - dz[i], i0 <= i < i1: the points'
 * sums (pyopnb_grad_point's) made their results, in a loop the compiler
 * vectorises (a division's bits do not depend on its lane) */
static inline __attribute__((always_inline)) void pyopnb_grad_finish(const pyopnb_grad_points* P, ptrdiff_t i0,
                                                                    ptrdiff_t i1, double* dz) {
    if (P->shared) {
        const double h0 = P->h[0];
        for (ptrdiff_t i = i0; i < i1; ++i) dz[i] = 0.0 - dz[i] / h0;
    } else {
        for (ptrdiff_t i = i0; i < i1; ++i) dz[i] = 0.0 - dz[i];
    }
}

/* The points i0 <= i < i1 as evaluation points in one column, in order:
 * dz[i] = point i's result (pyopnb_grad_point's sum, finished by
 * pyopnb_grad_finish) of the tables T read at the point's row at[i] (a grid
 * cell: weights by cell; or a sorted row: weights by point, W + i K,
 * started fresh) */
template <bool AVX2, class I, bool W_OWN>
static inline __attribute__((always_inline)) void pyopnb_grad_points_on(
        const pyopnb_grad_tables* T, const I* at, const pyopnb_grad_points* P, ptrdiff_t i0, ptrdiff_t i1,
        double* dz) {
    const int K = P->K;
#if PYOPNB_DISPATCH
    if (AVX2 && K <= 4) {
        pyopnb_grad_points_group_avx2<I, W_OWN>(T, at, P, i0, i1, dz);
        pyopnb_grad_finish(P, i0, i1, dz);
        return;
    }
#endif
    for (ptrdiff_t i = i0; i < i1; ++i) {
        if (W_OWN) pyopnb_grad_prefetch(T, at, K, i + PYOPNB_AHEAD, i1);
        const ptrdiff_t e = (ptrdiff_t)at[i] * K;
        double* w = W_OWN ? T->W + i * K : T->W + e;
#if PYOPNB_DISPATCH
        if (AVX2) {
            dz[i] = pyopnb_grad_point_avx2(P, i, T->S + e, T->D + e, w, W_OWN);
            continue;
        }
#endif
        dz[i] = pyopnb_grad_point(P, i, T->S + e, T->D + e, w, W_OWN);
    }
    pyopnb_grad_finish(P, i0, i1, dz);
}
template <bool AVX2>
static inline __attribute__((always_inline)) void pyopnb_grad_cells_on(
        const pyopnb_grad_tables* T, const int* at, const pyopnb_grad_points* P, ptrdiff_t i0, ptrdiff_t i1,
        double* dz) {
    pyopnb_grad_points_on<AVX2, int, false>(T, at, P, i0, i1, dz);
}
template <bool AVX2>
static inline __attribute__((always_inline)) void pyopnb_grad_rows_on(
        const pyopnb_grad_tables* T, const ptrdiff_t* at, const pyopnb_grad_points* P, ptrdiff_t i0, ptrdiff_t i1,
        double* dz) {
    pyopnb_grad_points_on<AVX2, ptrdiff_t, true>(T, at, P, i0, i1, dz);
}
#define PYOPNB_GRAD_ARGS (T, at, P, i0, i1, dz)
PYOPNB_AVX2_FN(pyopnb_grad_cells_on, (const pyopnb_grad_tables* T, const int* at, const pyopnb_grad_points* P,
                                      ptrdiff_t i0, ptrdiff_t i1, double* dz), PYOPNB_GRAD_ARGS)
PYOPNB_AVX2_FN(pyopnb_grad_rows_on, (const pyopnb_grad_tables* T, const ptrdiff_t* at, const pyopnb_grad_points* P,
                                     ptrdiff_t i0, ptrdiff_t i1, double* dz), PYOPNB_GRAD_ARGS)

static inline void pyopnb_grad_points_at_cells(int level, const pyopnb_grad_tables* T, const int* at,
                                               const pyopnb_grad_points* P, ptrdiff_t i0, ptrdiff_t i1, double* dz) {
    PYOPNB_ON_PATH(level, pyopnb_grad_cells_on, PYOPNB_GRAD_ARGS);
}

static inline void pyopnb_grad_points_at_rows(int level, const pyopnb_grad_tables* T, const ptrdiff_t* at,
                                              const pyopnb_grad_points* P, ptrdiff_t i0, ptrdiff_t i1, double* dz) {
    PYOPNB_ON_PATH(level, pyopnb_grad_rows_on, PYOPNB_GRAD_ARGS);
}

#endif
