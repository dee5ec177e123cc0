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
    # running products over the columns, logged once (see _simd.h): nset (1
    # or 2) products continued through nrow columns, each a table read at the
    # points' grid cells or at their rows; empty products; the logs
    void pyopnb_products_at_cells(const double* const* base, const int* const* idx, int nrow, int K,
                                  Py_ssize_t i, int nset, int base_step, int point_step, double* const* pr,
                                  double* const* acc)
    void pyopnb_products_at_rows(const double* const* base, const Py_ssize_t* const* idx, int nrow, int K,
                                 Py_ssize_t i, int nset, int base_step, int point_step, double* const* pr,
                                 double* const* acc)
    void pyopnb_products_start(Py_ssize_t n, double* pr, double* acc)
    void pyopnb_log_products(Py_ssize_t n, double* pr, const double* acc)
    # one point as an evaluation point in one column of the gradient
    double pyopnb_grad_point(const double* S, const double* D, double* W, const double* post,
                             int y, int K, const double* h, bint shared, bint fresh)
    # one row of Z' = (X V)' in R's summation order
    void pyopnb_project_row(const double* x, Py_ssize_t p, const double* V, Py_ssize_t ndp,
                            Py_ssize_t nd, double* zt, Py_ssize_t n)
