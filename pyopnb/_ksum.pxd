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


cdef struct Anchors:
    # a column's anchors and its sums' bandwidths: what every pass of the recursion reads
    const double* x         # G anchors, nondecreasing
    Py_ssize_t G
    int r                   # weight columns (the classes)
    const double* h         # each weight column's bandwidth, or h[0] for every column when shared
    bint shared
    const Kernel* ker


cdef struct EvalRows:
    # where sums are read, and where they go
    const double* e         # m positions, or NULL: each point on its anchor lo[j]
    const Py_ssize_t* lo    # m: the last anchor <= the point (-1: none)
    Py_ssize_t m
    const Py_ssize_t* outrow  # m: the output row of point j, or NULL: row j
    double* S               # [rows, r]: the kernel sums, or NULL
    double* D               # [rows, r]: the sums of the kernel's derivative, or NULL
    bint logS               # S as log ksum (positive weights and beta)


cdef void _make_kernel(const double* beta, int nb, Kernel* ker) noexcept nogil

cdef void _deposit(const Anchors* A, const double* pos, const double* W, Py_ssize_t n, const Py_ssize_t* lo,
                   double* Ldep, double* Rdep) noexcept nogil

cdef void _recurse(const Anchors* A, const double* Ldep, int dep_a1, RunningSums* tb, bint on_anchor, bint have_T,
                  int nthr) noexcept nogil

cdef void _evaluate(const Anchors* A, const EvalRows* ev, const double* Ldep, int dep_a1,
                    const RunningSums* tb) noexcept nogil

cdef int _tables_alloc(RunningSums* tb, Py_ssize_t G, int r, int a1, bint shared, bint deposits) noexcept nogil

cdef void _tables_free(RunningSums* tb) noexcept nogil

cdef void _sums_on_anchors(const Anchors* A, const double* Wa, RunningSums* tb, const EvalRows* ev, bint have_T,
                          int nthr) noexcept nogil

cdef void _last_of_ties(const double* sorted_x, Py_ssize_t n, Py_ssize_t* last) noexcept nogil

