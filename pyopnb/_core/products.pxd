# The per-point arithmetic of the passes over the points (products.h; this
# file has no module of its own).

cdef extern from "_core/products.h" nogil:
    # dst[k] = src[k] for k < K: a short row
    void pyopnb_copy_row(const double* src, int K, double* dst)
    # running products over the columns, logged once (see products.h), on the
    # vector path level: a block of m points at their grid cells, started
    # empty, nset (1 or 2) table sets at once; and points i0..i1-1 at their
    # sorted rows, continued (or started empty, fresh)
    void pyopnb_block_products(int level, const double* const* base, const int* const* idx, int nrow, int K,
                               Py_ssize_t i0, Py_ssize_t m, int nset, int base_step, double* pr1, double* pr2,
                               double* acc1, double* acc2)
    void pyopnb_rows_products(int level, const double* const* base, const Py_ssize_t* const* idx, int nrow, int K,
                              double* pr, double* acc, bint fresh, Py_ssize_t i0, Py_ssize_t i1)
    # the products' logs
    void pyopnb_log_products(Py_ssize_t n, double* pr, const double* acc)
    # the points' side of one column's gradient terms: posteriors [i K],
    # classes, weights (wt NULL: 1), bandwidths (shared: one)
    ctypedef struct pyopnb_grad_points:
        const double* post
        const int* y
        const double* wt
        const double* h
        int K
        bint shared
    # the tables the points are read at (S, D [rows, K]) and the c weights W they add into
    ctypedef struct pyopnb_grad_tables:
        const double* S
        const double* D
        double* W
    # points i0..i1-1 as evaluation points in one column, on the vector path
    # level: tables read at the grid cells (weights by cell) or at the sorted
    # rows (weights by point, started fresh)
    void pyopnb_grad_points_at_cells(int level, const pyopnb_grad_tables* T, const int* cells,
                                     const pyopnb_grad_points* P, Py_ssize_t i0, Py_ssize_t i1, double* dz)
    void pyopnb_grad_points_at_rows(int level, const pyopnb_grad_tables* T, const Py_ssize_t* rows,
                                    const pyopnb_grad_points* P, Py_ssize_t i0, Py_ssize_t i1, double* dz)
