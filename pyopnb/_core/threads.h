/* OpenMP's thread numbers, for the compiled modules (their scratch memory is scratch.h's). */
#ifndef PYOPNB_THREADS_H
#define PYOPNB_THREADS_H

#ifdef _OPENMP
#include <omp.h>
static inline int _thread_id(void) { return omp_get_thread_num(); }
static inline int _max_threads(void) { return omp_get_max_threads(); }
#else
static inline int _thread_id(void) { return 0; }
static inline int _max_threads(void) { return 1; }
#endif

#endif
