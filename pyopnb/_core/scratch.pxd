# The core's scratch memory (scratch.h): every compiled module's large
# buffers come from scratch_alloc and go back by scratch_free.
cdef void* scratch_alloc(size_t nbytes) noexcept nogil
cdef void scratch_free(void* p) noexcept nogil
