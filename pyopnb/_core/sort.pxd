# keys up to this many are merge-sorted on the stack (a radix pass's bucket
# counts cost more than sorting a few hundred keys)
cdef enum:
    SORT_SMALL = 2048

cdef int _argsort(const double* x, Py_ssize_t n, Py_ssize_t* order, double* xs, int nthr) noexcept nogil

# a column's last sort, kept for its next: the keys, their order, and the
# keys in that order (order[0] < 0: none yet)
cdef struct SortMemo:
    double* x
    Py_ssize_t* order
    double* xs

cdef int _argsort_memo(const double* x, Py_ssize_t n, Py_ssize_t* order, double* xs, SortMemo* memo,
                       int nthr) noexcept nogil
