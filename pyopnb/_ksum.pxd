# The recursion's types and the routines the objective's modules call (see _ksum.pyx).

cdef struct Kernel:
    int a
    double beta[64]
    double gamma[64]
    double binom[4096]


cdef struct RunningSums:
    double* Ldep
    double* Lincl
    double* R
    double* decay   # each gap's decays: [G, a+1] with one bandwidth, [G, r] with class bandwidths (see _recurse)


cdef void _make_kernel(const double* beta, int nb, Kernel* ker) noexcept nogil

cdef void _deposit(const double* pos, const double* W, Py_ssize_t n, int r,
                   const Py_ssize_t* lo, const double* anchors, Py_ssize_t G,
                   const double* h, bint shared, int a, double* Ldep, double* Rdep) noexcept nogil

cdef void _recurse(const double* anchors, Py_ssize_t G, int r, const double* h, bint shared, int a,
                  const double* binom, const double* Ldep, int dep_a1, double* Lincl,
                  double* R, double* T, bint on_anchor, bint have_T, int nthr) noexcept nogil

cdef void _evaluate(const double* e, const Py_ssize_t* lo, Py_ssize_t m,
                    const Py_ssize_t* outrow,
                    const double* anchors, Py_ssize_t G, int r, const double* h, bint shared,
                    const Kernel* ker, const double* Ldep, int dep_a1, const double* Lincl,
                    const double* Rexcl, double* S, double* D, bint logS) noexcept nogil

cdef int _tables_alloc(RunningSums* tb, Py_ssize_t G, int r, int a1, bint shared, bint deposits) noexcept nogil

cdef void _tables_free(RunningSums* tb) noexcept nogil

cdef void _sums_on_anchors(const double* anchors, Py_ssize_t G, const double* Wa, int r,
                          const double* h, bint shared, const Kernel* ker, RunningSums* tb,
                          const double* e, const Py_ssize_t* lo, Py_ssize_t m,
                          const Py_ssize_t* outrow, double* S, double* D, bint logS,
                          bint have_T, int nthr) noexcept nogil

cdef void _last_of_ties(const double* sorted_x, Py_ssize_t n, Py_ssize_t* last) noexcept nogil

