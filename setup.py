"""Build the compiled core of pyopnb (metadata lives in pyproject.toml).

One extension per section of the core, sharing declarations through .pxd
files: _sort (argsorts), _ksum (the kernel-sum recursion, exact and
binned sums), _passes (the objective's column passes), _grid (the grid
tables of R's and the journal's binned objectives), _project (Z = XV and R's
column statistics), _lbfgsb (R's L-BFGS-B), _linalg (fixed-order linear
algebra), _gaussian (OPGD's diagonal Gaussian objective), _eigen (R's eigen: reference
LAPACK's symmetric eigensolver, ported); _testing gives tests entry points to pieces the product calls
from C only.
"""
import os
import sys

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

openmp = [] if sys.platform == "darwin" else ["-fopenmp"]
MODULES = ("_sort", "_ksum", "_passes", "_grid", "_project", "_lbfgsb", "_linalg", "_gaussian", "_eigen", "_testing")

extensions = [
    Extension(
        f"pyopnb.{name}",
        [f"pyopnb/{name}.pyx"],
        include_dirs=[np.get_include(), "pyopnb"],
        language="c++",
        # no FMA contraction: sums must round as R's (see _project.project)
        extra_compile_args=["-O3", "-std=c++11", "-ffp-contract=off"] + openmp,
        extra_link_args=openmp,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
    for name in MODULES
]

jobs = max(1, min(len(MODULES), os.cpu_count() or 1))
setup(
    ext_modules=cythonize(extensions, compiler_directives={"language_level": "3"}, nthreads=jobs),
    options={"build_ext": {"parallel": jobs}},
)
