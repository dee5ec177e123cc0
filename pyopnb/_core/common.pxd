# Declarations that the compiled modules share (threads.h; this file has no module of its own;
# scratch memory is scratch.pxd's).
cimport numpy as cnp

cdef extern from "_core/threads.h" nogil:
    int _thread_id()                # OpenMP's thread number (0 without OpenMP)
    int _max_threads()              # omp_get_max_threads() (1 without OpenMP)
    # the threads a parallel region of this much work takes, at most nthr (see threads.h)
    int _region_threads(int nthr, Py_ssize_t work)
    # the same for a product-sum loop of this many entries
    int _entry_threads(int nthr, Py_ssize_t entries)

cdef extern from "_core/blocks.h" nogil:
    # the fixed blocks of rows that sums over the points are added by (see blocks.h): how many, and their length
    Py_ssize_t _row_blocks "pyopnb_row_blocks"(Py_ssize_t n)
    Py_ssize_t _row_block_len "pyopnb_block_len"(Py_ssize_t n)
    Py_ssize_t BLOCK_ROWS "PYOPNB_BLOCK_ROWS"
    Py_ssize_t MAX_BLOCKS "PYOPNB_MAX_BLOCKS"
    # the blocks' partials [nblk, len] added in block order into the first
    void _reduce_blocks "pyopnb_reduce_blocks"(double* part, Py_ssize_t nblk, Py_ssize_t len)
    # sum_i w_i t_i (w NULL: sum_i t_i) by the blocks
    double _block_sum "pyopnb_block_sum"(const double* t, const double* w, Py_ssize_t n)
    # each block's partial of that sum, in blocks of B rows (a part of a larger problem), into out
    void _block_partials "pyopnb_block_partials"(const double* t, const double* w, Py_ssize_t n, Py_ssize_t B,
                                                 double* out)

# the highest power a of the kernel sum_{k <= a} beta_k |u|^k exp(-|u|)
cdef enum:
    _MAX_ORDER = 62


cdef inline double* _data_or_null(object arr) except? NULL:
    """The data of a C-contiguous float64 array of ours (kept alive by the
    caller), or NULL for None."""
    if arr is None:
        return NULL
    cdef cnp.ndarray a = arr
    if cnp.PyArray_TYPE(a) != cnp.NPY_DOUBLE or not cnp.PyArray_IS_C_CONTIGUOUS(a):
        raise ValueError("expected a C-contiguous float64 array")
    return <double*> cnp.PyArray_DATA(a)
