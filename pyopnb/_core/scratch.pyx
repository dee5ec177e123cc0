# cython: language_level=3
# distutils: language = c++
"""The core's scratch memory: one pool (scratch.h) for the compiled
modules' buffers and, inside :func:`arrays`, for the NumPy arrays the core
makes. Without it glibc's malloc, whose thresholds move with the first large
block a process frees, made the speed of every later call depend on which
call came first."""
import functools

cimport numpy as cnp
from cpython.pycapsule cimport PyCapsule_New

cnp.import_array()

cdef extern from "_core/scratch.h" namespace "pyopnb_scratch" nogil:
    void* alloc(size_t nbytes)
    void release_block(void* p)
    size_t release_idle()
    size_t kept_bytes()
    size_t reused_count()
    void* np_malloc(void* ctx, size_t n)
    void* np_calloc(void* ctx, size_t nelem, size_t elsize)
    void* np_realloc(void* ctx, void* p, size_t n)
    void np_free(void* ctx, void* p, size_t n)
    size_t POOL_MIN, POOL_MAX, KEEP_MAX

cdef extern from "numpy/arrayobject.h":
    ctypedef struct PyDataMemAllocator:
        void* ctx
        void* (*malloc)(void* ctx, size_t size) noexcept nogil
        void* (*calloc)(void* ctx, size_t nelem, size_t elsize) noexcept nogil
        void* (*realloc)(void* ctx, void* ptr, size_t new_size) noexcept nogil
        void (*free)(void* ctx, void* ptr, size_t size) noexcept nogil
    ctypedef struct PyDataMem_Handler:
        char name[127]
        unsigned char version
        PyDataMemAllocator allocator
    object PyDataMem_SetHandler(object handler)


cdef void* scratch_alloc(size_t nbytes) noexcept nogil:
    return alloc(nbytes)


cdef void scratch_free(void* p) noexcept nogil:
    release_block(p)


cdef PyDataMem_Handler _handler
_handler.name[:14] = b"pyopnb_scratch"
_handler.name[14] = 0
_handler.version = 1
_handler.allocator.ctx = NULL
_handler.allocator.malloc = np_malloc
_handler.allocator.calloc = np_calloc
_handler.allocator.realloc = np_realloc
_handler.allocator.free = np_free
_HANDLER = PyCapsule_New(&_handler, "mem_handler", NULL)

#: what the pool keeps: blocks from POOL_MIN to POOL_MAX bytes, KEEP_MAX idle at most
LIMITS = {"pool_min": POOL_MIN, "pool_max": POOL_MAX, "keep_max": KEEP_MAX}


cdef class arrays:
    """``with arrays():`` NumPy arrays made inside come from the pool (in
    this thread's context; an array goes back to the pool whenever it is
    freed). Nests; each ``with`` needs its own instance."""

    cdef object _previous

    def __enter__(self):
        self._previous = PyDataMem_SetHandler(_HANDLER)
        return self

    def __exit__(self, *exc):
        PyDataMem_SetHandler(self._previous)
        self._previous = None
        return False


def pooled(fn):
    """``fn`` with the NumPy arrays it makes taken from the pool (inside
    :class:`arrays`): for the functions that make or run the core's
    evaluations."""
    @functools.wraps(fn)
    def in_pool(*args, **kwargs):
        with arrays():
            return fn(*args, **kwargs)
    return in_pool


def release():
    """Free every idle block; returns the bytes handed back."""
    return release_idle()


def kept():
    """Bytes the pool holds idle."""
    return kept_bytes()


def reused():
    """Requests served so far from idle blocks."""
    return reused_count()
