# The one interface of the compiled evaluations (see evaluator.pyx).

cdef class CoreEvaluator:
    cdef readonly object y0         # int32 [n]: class codes 0..K-1
    cdef readonly object h          # [K]: each class's bandwidth
    cdef readonly object PI         # [K]: the priors PI_k
    cdef readonly object logprior   # [K]: log PI_k, the C library's log
    cdef readonly int K
    cdef readonly Py_ssize_t n
    cdef readonly int threads       # the next evaluations' threads
    cdef readonly int most_threads  # the threads its scratch is made for: threads at most

    cpdef void use_threads(self, int count)
    cpdef tuple evaluate(self, object Zt, bint gradient)
    cpdef list subset_values(self, object Zt, list chosen, list candidates)
