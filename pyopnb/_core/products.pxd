# The per-point arithmetic of the passes over the points (products.h; this
# file has no module of its own).

cdef extern from "_core/products.h" nogil:
    # dst[k] = src[k] for k < K: a short row
    void pyopnb_copy_row(const double* src, int K, double* dst)
    # the density tables running products go through, a column each: column
    # r's table base[r] [rows, K] read at row idx[r][i] (a grid cell, or a
    # sorted row)
    ctypedef struct pyopnb_tables_at_cells:
        const double* const* base
        const int* const* idx
        int nrow
        int K
    ctypedef struct pyopnb_tables_at_rows:
        const double* const* base
        const Py_ssize_t* const* idx
        int nrow
        int K
    # points' running products [n, K]: the products and the logs of those closed
    ctypedef struct pyopnb_running:
        double* pr
        double* acc
    # running products over the columns, logged once (see products.h), on the
    # vector path level: a block of m points at their grid cells, started
    # empty, nset (1 or 2) table sets at once (the second at T.base +
    # base_step), into out[0] (and out[1]); and points i0..i1-1 at their
    # sorted rows, continued (or started empty, fresh)
    void pyopnb_block_products(int level, const pyopnb_tables_at_cells* T, Py_ssize_t i0, Py_ssize_t m, int nset,
                               int base_step, const pyopnb_running* out)
    void pyopnb_rows_products(int level, const pyopnb_tables_at_rows* T, pyopnb_running out, bint fresh,
                              Py_ssize_t i0, Py_ssize_t i1)
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
