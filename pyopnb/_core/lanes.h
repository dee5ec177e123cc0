/* Two lanes of doubles (SSE2, the x86-64 baseline), for the compiled core's
 * vector kernels (decay.h, and through it sweep.h; products.h).
 *
 * Each lane does the scalar code's operations in the scalar code's order, so
 * the bits are the same as the loops they replace; only independent
 * operations share a register. GCC's vector extension is used because the
 * compiler does not vectorise these loops itself: it keeps an array of
 * running sums in memory, and does not speculate a division past a guard.
 */
#ifndef PYOPNB_LANES_H
#define PYOPNB_LANES_H

#include <stddef.h>
#include <string.h>
#include <math.h>
#include <emmintrin.h>

typedef double pyopnb_v2d __attribute__((vector_size(16)));
typedef long long pyopnb_v2i __attribute__((vector_size(16)));

static inline pyopnb_v2d pyopnb_load2(const double* a) {
    pyopnb_v2d v;
    memcpy(&v, a, sizeof v);  /* unaligned */
    return v;
}

#endif
