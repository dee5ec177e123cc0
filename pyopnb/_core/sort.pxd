# keys up to this many are merge-sorted on the stack (a radix pass's bucket
# counts cost more than sorting a few hundred keys)
cdef enum:
    SORT_SMALL = 2048

cdef int _argsort(const double* x, Py_ssize_t n, Py_ssize_t* order, double* xs, int nthr) noexcept nogil
cdef int _argsort_hinted(const double* x, Py_ssize_t n, Py_ssize_t* order, double* xs, Py_ssize_t* hint,
                         int nthr) noexcept nogil
