cdef int _argsort(const double* x, Py_ssize_t n, Py_ssize_t* order, double* xs, int nthr) noexcept nogil
