# The vector path of the compiled core's kernels (simd.pyx).
cdef int simd_path() except -1
