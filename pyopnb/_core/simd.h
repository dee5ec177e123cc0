/* The vector paths chosen at run time: PYOPNB_DISPATCH where the compiler
 * builds functions for AVX2 and AVX-512 beside the SSE2 baseline, and the
 * widest path this CPU runs. A path's kernels do the baseline's operations
 * lane by lane in its order, so every path gives the same bits
 * (PYOPNB_SIMD caps the path, for the tests and the fingerprint).
 */
#ifndef PYOPNB_SIMD_H
#define PYOPNB_SIMD_H

#include <stddef.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define PYOPNB_DISPATCH 1
#else
#define PYOPNB_DISPATCH 0
#endif

/* the vector of W doubles, loaded and stored unaligned (GCC's vector
 * extension takes no size that depends on a template parameter) */
typedef double pyopnb_d2 __attribute__((vector_size(16), aligned(8)));
typedef double pyopnb_d4 __attribute__((vector_size(32), aligned(8)));
typedef double pyopnb_d8 __attribute__((vector_size(64), aligned(8)));
template <int W> struct pyopnb_dvec;
template <> struct pyopnb_dvec<2> { typedef pyopnb_d2 type; };
template <> struct pyopnb_dvec<4> { typedef pyopnb_d4 type; };
template <> struct pyopnb_dvec<8> { typedef pyopnb_d8 type; };

/* Asks memory for a[0:len] (doubles) ahead of its reads: a pass that reads
 * X while it computes waited for memory in a fit, where X has left the
 * caches between passes, twice as long as on its own. */
static inline void pyopnb_prefetch(const double* a, ptrdiff_t len) {
    for (ptrdiff_t k = 0; k < len; k += 8) __builtin_prefetch(a + k);
}

/* Rows read or written in another order than memory's (a column's points
 * in sorted order, a point's row of a sorted column) wait for memory at
 * every point, where the next addresses are known well ahead: a loop asks
 * for the row PYOPNB_AHEAD points on. A prefetch moves no bit. */
#define PYOPNB_AHEAD 32
static inline void pyopnb_prefetch_at(const void* a) { __builtin_prefetch(a); }
static inline void pyopnb_prefetch_write(const void* a) { __builtin_prefetch(a, 1); }

/* The widest vector path this CPU runs: 2 (AVX-512), 1 (AVX2), 0 (SSE2, the x86-64 baseline). */
static inline int pyopnb_simd_best(void) {
#if PYOPNB_DISPATCH
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return 2;
    if (__builtin_cpu_supports("avx2")) return 1;
#endif
    return 0;
}

#endif
