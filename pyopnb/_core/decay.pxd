# The kernel's decays over a gap (decay.h; this file has no module of its own).

cdef extern from "_core/decay.h" nogil:
    # t[m] = d^m exp(-d), m = 0..a: one gap of d >= 0 bandwidths
    void pyopnb_decay(double d, int a, double* t)
    # e[c] = exp(-dist / h[c]) for c < r: one gap in each of r bandwidths
    void pyopnb_exps(double dist, const double* h, int r, double* e)
    # pyopnb_decay's row from e = exp(-d)
    void pyopnb_decay_from_exp(double e, double d, int a, double* t)
