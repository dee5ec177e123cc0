/* Two-lane vector kernels of the compiled core (SSE2, the x86-64 baseline).
 *
 * Each lane does the scalar code's operations in the scalar code's order, so
 * the bits are the same as the loops they replace; only independent
 * operations share a register. GCC's vector extension is used because the
 * compiler does not vectorise these loops itself: it keeps an array of
 * running sums in memory, and does not speculate a division past a guard.
 *
 * Z' = (X V)' in R's summation order. Every entry z_ij is sum_l x_il v_lj
 * added over l in order, with no FMA (R's reference BLAS). A chain of
 * dependent additions runs at the adder's latency; holding w sums of one row
 * in w / 2 two-lane registers gives w independent chains, and each lane still
 * adds its own sum in order, so the bits are the same as a scalar loop's.
 */
#ifndef PYOPNB_SIMD_H
#define PYOPNB_SIMD_H

#include <stddef.h>
#include <string.h>

typedef double pyopnb_v2d __attribute__((vector_size(16)));
typedef long long pyopnb_v2i __attribute__((vector_size(16)));

static inline pyopnb_v2d pyopnb_load2(const double* a) {
    pyopnb_v2d v;
    memcpy(&v, a, sizeof v);  /* unaligned */
    return v;
}

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

/* One point as an evaluation point in one column of R's binned gradient, all
 * classes sharing one bandwidth gh: c_k = (1{y = k} - post_k) / S_k (0 where
 * S_k is not positive), W_k += c_k, and the result 0 - (sum_k c_k D_k) / gh
 * with the sum added in class order. The divisions, the longest operation,
 * go two at a time. */
static inline double pyopnb_grad_point(const double* S, const double* D, double* W,
                                       const double* post, int y, int K, double gh) {
    const pyopnb_v2d zero = pyopnb_v2d{0.0, 0.0}, one = pyopnb_v2d{1.0, 1.0};
    double bsum = 0.0;
    int k = 0;
    for (; k + 2 <= K; k += 2) {
        const pyopnb_v2d f = pyopnb_load2(S + k);
        /* divide by 1 where f is not positive (the comparison is false for
           NaN, as the scalar test's), then put +0 there: no division by 0 or
           NaN is made. Selected by bit masks, which GCC and clang both take */
        const pyopnb_v2i pos = (pyopnb_v2i)(f > zero);
        const pyopnb_v2d fs = (pyopnb_v2d)(((pyopnb_v2i)f & pos) | ((pyopnb_v2i)one & ~pos));
        const pyopnb_v2d ind = pyopnb_v2d{y == k ? 1.0 : 0.0, y == k + 1 ? 1.0 : 0.0};
        const pyopnb_v2d q = (ind - pyopnb_load2(post + k)) / fs;
        const pyopnb_v2d c = (pyopnb_v2d)((pyopnb_v2i)q & pos);
        const pyopnb_v2d w = pyopnb_load2(W + k) + c;
        memcpy(W + k, &w, sizeof w);
        const pyopnb_v2d cd = c * pyopnb_load2(D + k);
        bsum = bsum + cd[0];
        bsum = bsum + cd[1];
    }
    if (k < K) {
        const double f = S[k];
        const double c = f > 0.0 ? ((y == k ? 1.0 : 0.0) - post[k]) / f : 0.0;
        W[k] += c;
        bsum = bsum + c * D[k];
    }
    return 0.0 - bsum / gh;
}

#endif
