/* R's cov sums: for each pair (a, b) of columns, the long-double products of
 * the long-double deviations added over the rows in order (R's cov.c).
 *
 * Loading an 80-bit long double from memory is slow (a microcoded load on
 * x87), and it was most of the time. A deviation v is kept instead as two
 * doubles, h = (double) v and l = (double) (v - h): two fast loads and one
 * addition give v back exactly. v - h has at most 11 significant bits and,
 * as every difference of two doubles, is a multiple of the smallest
 * subnormal, so l holds it exactly whenever h is finite. A block with a
 * deviation past the largest double (or not finite) is held in long
 * doubles. Either way each product and sum is the one R forms.
 */
#ifndef PYOPNB_COV_H
#define PYOPNB_COV_H

#include <stddef.h>

/* a block's deviations, column j's at j * stride: as h + l */
struct PyopnbDevSplit {
    const double* h;
    const double* l;
    ptrdiff_t stride;
    long double at(ptrdiff_t j, ptrdiff_t k) const {
        return (long double)h[j * stride + k] + (long double)l[j * stride + k];
    }
};

/* ... or as long doubles */
struct PyopnbDevLong {
    const long double* v;
    ptrdiff_t stride;
    long double at(ptrdiff_t j, ptrdiff_t k) const { return v[j * stride + k]; }
};

/* G pairs of one column a against b[0..G-1]: a's deviation read once a
 * row, G chains of additions that overlap */
template <int G, class Dev>
static inline __attribute__((always_inline)) void pyopnb_cov_group(
        const Dev& dev, ptrdiff_t nb, ptrdiff_t a, const ptrdiff_t* b, long double* acc) {
    long double s[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) s[g] = acc[g];
    for (ptrdiff_t k = 0; k < nb; ++k) {
        const long double x = dev.at(a, k);
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) s[g] = s[g] + x * dev.at(b[g], k);
    }
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) acc[g] = s[g];
}

/* acc[pr] += the block's sum for pair (pi[pr], pj[pr]), pr in [a0, a1):
 * pairs of one column run along a row of the triangle, up to 4 a group */
template <class Dev>
static void pyopnb_cov_pairs(const Dev& dev, ptrdiff_t nb, const ptrdiff_t* pi, const ptrdiff_t* pj,
                             ptrdiff_t a0, ptrdiff_t a1, long double* acc) {
    ptrdiff_t pr = a0;
    while (pr < a1) {
        const ptrdiff_t a = pi[pr];
        int g = 1;
        while (g < 4 && pr + g < a1 && pi[pr + g] == a) ++g;
        switch (g) {
            case 4: pyopnb_cov_group<4>(dev, nb, a, pj + pr, acc + pr); break;
            case 3: pyopnb_cov_group<3>(dev, nb, a, pj + pr, acc + pr); break;
            case 2: pyopnb_cov_group<2>(dev, nb, a, pj + pr, acc + pr); break;
            default: pyopnb_cov_group<1>(dev, nb, a, pj + pr, acc + pr); break;
        }
        pr += g;
    }
}

/* One part's share of cov: d columns' means m, the pairs (pi[a], pj[a]),
 * a0 <= a < a1, and their sums acc */
typedef struct {
    const double* m;
    ptrdiff_t d;
    const ptrdiff_t* pi;
    const ptrdiff_t* pj;
    ptrdiff_t a0;
    ptrdiff_t a1;
    long double* acc;
} pyopnb_cov_part;

/* A part's deviations of a block of rows, column by column ([d, stride]
 * each): split into double high and low parts (h, l), or in long double (v)
 * where a split is not exact */
typedef struct {
    double* h;
    double* l;
    long double* v;
    ptrdiff_t stride;
} pyopnb_cov_devs;

/* one block of nb rows x[k * d + j] (row-major) less the means, into the
 * part's deviations: the sums of its pairs added to its acc */
static inline void pyopnb_cov_block(const double* x, ptrdiff_t nb, const pyopnb_cov_part* P,
                                    const pyopnb_cov_devs* buf) {
    const ptrdiff_t d = P->d, stride = buf->stride;
    const double* m = P->m;
    double* h = buf->h;
    double* l = buf->l;
    long double* v = buf->v;
    bool split = true;
    for (ptrdiff_t k = 0; k < nb; ++k)
        for (ptrdiff_t j = 0; j < d; ++j) {
            const long double dv = (long double)x[k * d + j] - (long double)m[j];
            const double hi = (double)dv;
            const double lo = (double)(dv - (long double)hi);
            h[j * stride + k] = hi;
            l[j * stride + k] = lo;
            split = split && (long double)hi + (long double)lo == dv;
        }
    if (split) {
        const PyopnbDevSplit dev = {h, l, stride};
        pyopnb_cov_pairs(dev, nb, P->pi, P->pj, P->a0, P->a1, P->acc);
        return;
    }
    for (ptrdiff_t k = 0; k < nb; ++k)
        for (ptrdiff_t j = 0; j < d; ++j) v[j * stride + k] = (long double)x[k * d + j] - (long double)m[j];
    const PyopnbDevLong dev = {v, stride};
    pyopnb_cov_pairs(dev, nb, P->pi, P->pj, P->a0, P->a1, P->acc);
}

#endif
