# The two-lane kernels of _simd.h (this file has no module of its own).

cdef extern from "_simd.h" nogil:
    # t[m] = d^m exp(-d), m = 0..a: one gap of d >= 0 bandwidths
    void pyopnb_decay(double d, int a, double* t)
    # e[c] = exp(-dist / h[c]) for c < r: one gap in each of r bandwidths
    void pyopnb_exps(double dist, const double* h, int r, double* e)
    # pyopnb_decay's row from e = exp(-d)
    void pyopnb_decay_from_exp(double e, double d, int a, double* t)
    # dst[k] = src[k] for k < K: a short row
    void pyopnb_copy_row(const double* src, int K, double* dst)
    # running products over the columns, logged once (see _simd.h): a row of K
    # classes, one point's logged products of one or two tables at its cells,
    # empty products, the log
    void pyopnb_mul_row(const double* s, int K, double* pr, double* acc)
    void pyopnb_point_products(const double* T1, const double* T2, Py_ssize_t TK, int K, const int* C,
                               Py_ssize_t n, const Py_ssize_t* cols, int ncol, double* lf1, double* lf2)
    void pyopnb_products_start(Py_ssize_t n, double* pr, double* acc)
    void pyopnb_log_products(Py_ssize_t n, double* pr, const double* acc)
    # one point as an evaluation point in one column of the gradient
    double pyopnb_grad_point(const double* S, const double* D, double* W, const double* post,
                             int y, int K, const double* h, bint shared, bint fresh)
    # one row of Z' = (X V)' in R's summation order
    void pyopnb_project_row(const double* x, Py_ssize_t p, const double* V, Py_ssize_t ndp,
                            Py_ssize_t nd, double* zt, Py_ssize_t n)
