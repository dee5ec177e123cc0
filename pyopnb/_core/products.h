/* A point's class densities multiplied over the columns (logged once), and
 * a point's step of the gradient: the per-point arithmetic that every
 * evaluation's passes over the points share.
 */
#ifndef PYOPNB_PRODUCTS_H
#define PYOPNB_PRODUCTS_H

#include "lanes.h"

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

/* one step for two classes, lane by lane: pr = pr s where that stays in
 * range, else the product closed (see above); pyopnb_products' slow path */
static inline void pyopnb_mul2(pyopnb_v2d s, pyopnb_v2d* pr, pyopnb_v2d* acc) {
    const pyopnb_v2d q = *pr * s;
    for (int l = 0; l < 2; ++l) {
        if (q[l] >= PYOPNB_PROD_LO && q[l] <= PYOPNB_PROD_HI) {
            (*pr)[l] = q[l];
        } else {
            (*acc)[l] = (*acc)[l] + log((*pr)[l]);
            (*pr)[l] = s[l];
        }
    }
}

/* classes k, k + 1 of a row as a vector; a class without a partner (two = 0)
 * shares its register with `pad` */
static inline __m128d pyopnb_pair_at(const double* row, int k, int two, double pad) {
    return two ? _mm_loadu_pd(row + k) : _mm_set_pd(pad, row[k]);
}

/* Running products continued through rows of densities, one per column, in
 * order: the one routine that multiplies densities over columns. Column r's
 * densities are a table base[r] read at row idx[r][i] (K entries): a
 * column's sums at its sorted points (passes.pyx) or its grid tables at the
 * points' cells (grid.pyx). NS independent products at once, so that their
 * chains of dependent multiplications overlap: product j reads the tables
 * base[j * base_step + r] at point i + j * point_step, into pr[j], acc[j]
 * [K] (two tables at one point: base_step = nrow, point_step = 0; two
 * points: 0 and 1). Two classes at a time, a pair's product stays in a
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
static inline void pyopnb_products_n(const double* const* base, const I* const* idx, int nrow, int K,
                                     ptrdiff_t i, int base_step, int point_step, double* const* pr,
                                     double* const* acc) {
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

/* pyopnb_products_n for nset = 1 or 2 products, continued (fresh = 0) or
 * started empty (fresh = 1): tables read at the points' grid cells (int),
 * or at their rows (ptrdiff_t) */
template <class I>
static inline void pyopnb_products(const double* const* base, const I* const* idx, int nrow, int K, ptrdiff_t i,
                                   int nset, int fresh, int base_step, int point_step, double* const* pr,
                                   double* const* acc) {
    if (fresh) {
        if (nset == 2)
            pyopnb_products_n<2, true, I>(base, idx, nrow, K, i, base_step, point_step, pr, acc);
        else
            pyopnb_products_n<1, true, I>(base, idx, nrow, K, i, base_step, point_step, pr, acc);
    } else {
        if (nset == 2)
            pyopnb_products_n<2, false, I>(base, idx, nrow, K, i, base_step, point_step, pr, acc);
        else
            pyopnb_products_n<1, false, I>(base, idx, nrow, K, i, base_step, point_step, pr, acc);
    }
}

static inline void pyopnb_products_at_cells(const double* const* base, const int* const* idx, int nrow, int K,
                                            ptrdiff_t i, int nset, int fresh, int base_step, int point_step,
                                            double* const* pr, double* const* acc) {
    pyopnb_products<int>(base, idx, nrow, K, i, nset, fresh, base_step, point_step, pr, acc);
}

static inline void pyopnb_products_at_rows(const double* const* base, const ptrdiff_t* const* idx, int nrow,
                                           int K, ptrdiff_t i, int nset, int fresh, int base_step, int point_step,
                                           double* const* pr, double* const* acc) {
    pyopnb_products<ptrdiff_t>(base, idx, nrow, K, i, nset, fresh, base_step, point_step, pr, acc);
}

/* pr[k] = acc[k] + log(pr[k]) for k < n: the logs of the products kept by
 * pyopnb_products, in place */
static inline void pyopnb_log_products(ptrdiff_t n, double* pr, const double* acc) {
    for (ptrdiff_t k = 0; k < n; ++k) pr[k] = acc[k] + log(pr[k]);
}

/* One point as an evaluation point in one column of the gradient:
 * c_k = (1{y = k} - post_k) / S_k (0 where S_k is not positive), W_k += c_k
 * (fresh: W_k = 0 + c_k, W's old content unread: a vector load of two
 * scalars just stored would wait for them),
 * and the result 0 - sum_k c_k D_k / h_k. With one bandwidth (shared, h[0]:
 * every R fit) the sum is (sum_k c_k D_k) / h[0], added in class order, as
 * R's df_NB_cpp; with class bandwidths each term is divided by its own.
 * The divisions, the longest operation, go two at a time. */
static inline double pyopnb_grad_point(const double* S, const double* D, double* W,
                                       const double* post, int y, int K, const double* h, int shared,
                                       int fresh) {
    const pyopnb_v2d zero = pyopnb_v2d{0.0, 0.0}, one = pyopnb_v2d{1.0, 1.0};
    const pyopnb_v2d yd = pyopnb_v2d{(double)y, (double)y};
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
        const pyopnb_v2d c = (pyopnb_v2d)((pyopnb_v2i)q & pos);
        const pyopnb_v2d w = (fresh ? zero : pyopnb_load2(W + k)) + c;
        memcpy(W + k, &w, sizeof w);
        pyopnb_v2d cd = c * pyopnb_load2(D + k);
        if (!shared) cd = cd / pyopnb_load2(h + k);
        bsum = bsum + cd[0];
        bsum = bsum + cd[1];
    }
    if (k < K) {
        const double f = S[k];
        const double c = f > 0.0 ? ((double)(y == k) - post[k]) / f : 0.0;
        W[k] = (fresh ? 0.0 : W[k]) + c;
        bsum = bsum + (shared ? c * D[k] : c * D[k] / h[k]);
    }
    return shared ? 0.0 - bsum / h[0] : 0.0 - bsum;
}

#endif
