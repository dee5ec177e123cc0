/* The core's scratch memory: one pool for every compiled module and for the
 * NumPy arrays the core makes (scratch.pyx installs it as NumPy's memory
 * handler around the core's calls).
 *
 * Why a pool: glibc's malloc serves a large block by mmap and, when such a
 * block is freed, raises its mmap and trim thresholds to that block's size.
 * Which block a process frees first then decides whether every later
 * evaluation's scratch comes back from the heap or from fresh pages that
 * fault one at a time when touched: the order of a process's first calls
 * set the speed of the rest (4.5x the CPU time at n = 150). Here a
 * freed block of 32 KiB to 32 MiB is kept, by size class, for the next
 * request of its class, whatever came first; at most KEEP_MAX bytes are kept
 * idle, and scratch_release() hands them back.
 *
 * Every block carries a header before its data (its class and size), so a
 * block from scratch_alloc must go back by scratch_free, never free().
 */
#ifndef PYOPNB_SCRATCH_H
#define PYOPNB_SCRATCH_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mutex>

namespace pyopnb_scratch {

const size_t HEADER = 64;             /* keeps the data 64-byte aligned where the block is */
const size_t POOL_MIN = 32u << 10;    /* blocks (header included) pooled from this size... */
const size_t POOL_MAX = 32u << 20;    /* ...to this one */
const size_t KEEP_MAX = 64u << 20;    /* idle bytes kept at most */
const int NCLASS = 4 * 64;            /* four classes per power of two */
const int DEPTH = 8;                  /* idle blocks kept per class */
const size_t DIRECT = (size_t)-1;     /* the class of a block that is not pooled */
const size_t MAGIC = 0x7079706f6e6273ULL;

struct Header {
    size_t cls;    /* size class, or DIRECT */
    size_t bytes;  /* what was asked for */
    size_t magic;
};

struct Pool {
    std::mutex lock;
    void* idle[NCLASS][DEPTH];
    int nidle[NCLASS];
    size_t kept;
    size_t reused;  /* requests served from idle blocks, for the tests */
};

static Pool pool;

/* the class of a block of `total` bytes (POOL_MIN <= total <= POOL_MAX) and its size */
static inline int class_of(size_t total, size_t* csize) {
    int e = 63 - __builtin_clzll((unsigned long long)(total - 1)); /* 2^e < total <= 2^(e+1) */
    size_t base = (size_t)1 << e, step = base >> 2;
    size_t q = (total - base + step - 1) / step;                 /* 1..4 */
    *csize = base + q * step;
    return 4 * e + (int)(q - 1);
}

/* the size of class c */
static inline size_t class_size(int c) {
    size_t base = (size_t)1 << (c / 4);
    return base + (size_t)(c % 4 + 1) * (base >> 2);
}

/* fresh memory from the C library. Not advised onto transparent huge
   pages: where the kernel compacts memory for them (defrag "madvise", a
   common default), a fit's first touch of its arrays stalled by up to
   30 ms in a fresh process, more than the fewer page faults saved */
static inline void* fresh(size_t total) { return malloc(total); }

static inline void* alloc(size_t nbytes) {
    size_t total = (nbytes ? nbytes : 1) + HEADER, csize = 0, cls = DIRECT;
    void* base = NULL;
    if (total < nbytes) return NULL; /* overflow */
    if (total >= POOL_MIN && total <= POOL_MAX) {
        cls = (size_t)class_of(total, &csize);
        {
            std::lock_guard<std::mutex> guard(pool.lock);
            if (pool.nidle[cls] > 0) {
                base = pool.idle[cls][--pool.nidle[cls]];
                pool.kept -= csize;
                pool.reused += 1;
            }
        }
        if (base == NULL) base = fresh(csize);
    } else {
        base = fresh(total);
    }
    if (base == NULL) return NULL;
    Header* h = (Header*)base;
    h->cls = cls;
    h->bytes = nbytes;
    h->magic = MAGIC;
    return (char*)base + HEADER;
}

static inline void release_block(void* p) {
    if (p == NULL) return;
    void* base = (char*)p - HEADER;
    Header* h = (Header*)base;
    if (h->magic != MAGIC) abort(); /* not a block of this pool: a bug, never a silent corruption */
    if (h->cls != DIRECT) {
        size_t csize = class_size((int)h->cls);
        std::lock_guard<std::mutex> guard(pool.lock);
        if (pool.nidle[h->cls] < DEPTH && pool.kept + csize <= KEEP_MAX) {
            pool.idle[h->cls][pool.nidle[h->cls]++] = base;
            pool.kept += csize;
            return;
        }
    }
    h->magic = 0;
    free(base);
}

static inline void* alloc_zeroed(size_t nelem, size_t elsize) {
    if (elsize && nelem > (size_t)-1 / elsize) return NULL;
    void* p = alloc(nelem * elsize);
    if (p) memset(p, 0, nelem * elsize);
    return p;
}

static inline void* resize(void* p, size_t nbytes) {
    if (p == NULL) return alloc(nbytes);
    const Header* h = (const Header*)((char*)p - HEADER);
    void* q = alloc(nbytes);
    if (q == NULL) return NULL;
    memcpy(q, p, h->bytes < nbytes ? h->bytes : nbytes);
    release_block(p);
    return q;
}

/* every idle block back to the C library; returns the bytes freed */
static inline size_t release_idle(void) {
    std::lock_guard<std::mutex> guard(pool.lock);
    size_t freed = pool.kept;
    for (int c = 0; c < NCLASS; ++c) {
        while (pool.nidle[c] > 0) {
            void* base = pool.idle[c][--pool.nidle[c]];
            ((Header*)base)->magic = 0;
            free(base);
        }
    }
    pool.kept = 0;
    return freed;
}

static inline size_t kept_bytes(void) {
    std::lock_guard<std::mutex> guard(pool.lock);
    return pool.kept;
}

static inline size_t reused_count(void) {
    std::lock_guard<std::mutex> guard(pool.lock);
    return pool.reused;
}

/* NumPy's memory handler interface (NEP 49) */
static inline void* np_malloc(void*, size_t n) { return alloc(n); }
static inline void* np_calloc(void*, size_t nelem, size_t elsize) { return alloc_zeroed(nelem, elsize); }
static inline void* np_realloc(void*, void* p, size_t n) { return resize(p, n); }
static inline void np_free(void*, void* p, size_t) { release_block(p); }

}  // namespace pyopnb_scratch

#endif
