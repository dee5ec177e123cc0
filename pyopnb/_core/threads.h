/* OpenMP's thread numbers and the threads a parallel region takes, for the compiled modules (their scratch
 * memory is scratch.h's). */
#ifndef PYOPNB_THREADS_H
#define PYOPNB_THREADS_H

#include <stddef.h>

#ifdef _OPENMP
#include <omp.h>
static inline int _thread_id(void) { return omp_get_thread_num(); }
static inline int _max_threads(void) { return omp_get_max_threads(); }
#else
static inline int _thread_id(void) { return 0; }
static inline int _max_threads(void) { return 1; }
#endif

/* The work, in visits of one point (or grid point) in one class, that pays
 * for one more thread of a parallel region: a team's start and its wait for
 * the slowest member cost tens of microseconds on a quiet machine and a time
 * slice where a core is busy, so a region with less work runs on fewer
 * threads than the count the caller was given (measured in
 * benchmarks/bench_default_threads.py). The results do not depend on it: the
 * core's partitions are fixed by the problem, never by the team. */
#define PYOPNB_REGION_WORK 8192

/* A visit's work in the entries of a product-sum loop (the projection,
 * t(X) dZ, the column statistics): a kernel sum's visit takes its decays,
 * the recursion's terms and a division, a product-sum entry one fused step. */
#define PYOPNB_ENTRIES_PER_VISIT 16

/* The threads a region of ``work`` visits takes: at most nthr, at least 1. */
static inline int _region_threads(int nthr, ptrdiff_t work) {
    ptrdiff_t most = work / PYOPNB_REGION_WORK;
    if (most < 1 || nthr < 1) return 1;
    return most < nthr ? (int)most : nthr;
}

/* The same for a product-sum loop of ``entries``. */
static inline int _entry_threads(int nthr, ptrdiff_t entries) {
    return _region_threads(nthr, entries / PYOPNB_ENTRIES_PER_VISIT);
}

#endif
