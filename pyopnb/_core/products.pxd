# The per-point arithmetic of the passes over the points (products.h; this
# file has no module of its own).

cdef extern from "_core/products.h" nogil:
    # dst[k] = src[k] for k < K: a short row
    void pyopnb_copy_row(const double* src, int K, double* dst)
    # running products over the columns, logged once (see products.h): nset (1
    # or 2) products continued (or started empty, fresh) through nrow columns,
    # each a table read at the points' grid cells or at their rows
    void pyopnb_products_at_cells(const double* const* base, const int* const* idx, int nrow, int K,
                                  Py_ssize_t i, int nset, bint fresh, int base_step, int point_step,
                                  double* const* pr, double* const* acc)
    void pyopnb_products_at_rows(const double* const* base, const Py_ssize_t* const* idx, int nrow, int K,
                                 Py_ssize_t i, int nset, bint fresh, int base_step, int point_step,
                                 double* const* pr, double* const* acc)
    # the products' logs
    void pyopnb_log_products(Py_ssize_t n, double* pr, const double* acc)
    # one point as an evaluation point in one column of the gradient
    double pyopnb_grad_point(const double* S, const double* D, double* W, const double* post,
                             int y, int K, const double* h, bint shared, bint fresh)
