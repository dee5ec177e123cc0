/* C helpers that the compiled modules share: scratch memory and OpenMP's thread numbers. */
#ifndef PYOPNB_ALLOC_H
#define PYOPNB_ALLOC_H

#include <stdlib.h>
#include <sys/mman.h>
/* Large scratch goes on transparent huge pages: a fresh 4 KiB page costs a
   fault when first touched, and large sums touch as many pages as they add
   points, so faults one page at a time rival the kernel sums themselves. */
static inline void* _alloc(size_t nbytes) {
    void* p = NULL;
    const size_t huge = (size_t)1 << 21;
    size_t rounded;
    if (nbytes < 2 * huge)
        return malloc(nbytes ? nbytes : 1);
    rounded = (nbytes + huge - 1) & ~(huge - 1);
    if (posix_memalign(&p, huge, rounded))
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, rounded, MADV_HUGEPAGE);
#endif
    return p;
}

#ifdef _OPENMP
#include <omp.h>
static inline int _thread_id(void) { return omp_get_thread_num(); }
static inline int _max_threads(void) { return omp_get_max_threads(); }
#else
static inline int _thread_id(void) { return 0; }
static inline int _max_threads(void) { return 1; }
#endif

#endif
