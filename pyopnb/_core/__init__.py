"""pyopnb's compiled core (private): the evaluations of l, R's arithmetic and
the optimiser. The kernel sums themselves, the one recursion every sum
goes through, are ``pyopnb._ksum``.

Evaluations of l, one interface (``evaluator.pxd``), made once per fit:
    evaluator   the interface: ``evaluate(Zt, gradient)``, ``subset_values``
    passes      the exact sums' column passes, one projected column at a
                time: set-up and sums in waves, products, the points' terms
    exact       ``ExactPasses``: exact sums (``ExactScratch``, its column kind)
    grid        the grids' shared support: cells, binning, supports, sums on
                a grid, a moving grid's motion (``GridTables``, the base of
                each binned kind's tables)
    r_grid      ``RGrid`` (R's f_NB_cpp / df_NB_cpp)
    linear      ``LinearGrid``: the paper's linear binning, densities summed
                at the points
    interp_grid ``InterpGrid`` (the journal's interpolated log densities)
    posteriors  a row's classes combined: l's terms and the posteriors
    geometry    a projected column's grid (cells, ends, linear binning)
    products.h  a point's class densities multiplied over the columns, and its
                gradient terms (SSE2, and AVX2 where the CPU has it)
    decay.h     the kernel's decays over a gap; sweep.h the recursion's
                one-thread sweep; lanes.h the two-lane vector type

R's arithmetic, to R's bits:
    project     Z = X V in reference BLAS's order (project.h)
    colstats    colMeans, var, sd, cov, sum, colSums, rowSums
    linalg      crossproducts, products, Jacobi, the C library's exp and log
    eigen       R's eigen: reference LAPACK's dsyevr, ported (reflapack.h)
    lbfgsb      R's optim L-BFGS-B

Others: simd (the kernels' vector path, SSE2, AVX2 or AVX-512, chosen at
run time; simd.h), scratch (the one pool of scratch memory: every module's buffers,
and the core's NumPy arrays inside ``scratch.arrays()``), sort (argsorts),
gaussian (OPGD's objective), testing (entry points for tests to pieces
called from C only), common.pxd / threads.h (OpenMP's thread numbers, and
the threads a parallel region's work pays for).
"""
