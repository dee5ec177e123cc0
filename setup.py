"""Build the compiled core of pyopnb (metadata lives in pyproject.toml).

``pyopnb/_ksum.pyx`` holds the kernel sums: the one recursion that every
sum, objective and gradient goes through. Everything else compiled lives in
the private package ``pyopnb/_core`` (its ``__init__.py`` maps it), one
extension per concern, sharing declarations through .pxd files.
"""
import os
import sys

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

openmp = [] if sys.platform == "darwin" else ["-fopenmp"]
# the kernel sums stay at the package's root (the project's fixed layout)
MODULES = ("_ksum",) + tuple(f"_core.{name}" for name in (
    "scratch", "simd", "sort", "evaluator", "posteriors", "passes", "exact", "linear", "grid", "r_grid", "interp_grid", "project",
    "colstats", "linalg", "lbfgsb", "gaussian", "eigen", "testing"))

extensions = [
    Extension(
        f"pyopnb.{name}",
        [f"pyopnb/{name.replace('.', '/')}.pyx"],
        include_dirs=[np.get_include(), "pyopnb"],
        language="c++",
        # no FMA contraction: sums must round as R's (see _project.project)
        extra_compile_args=["-O3", "-std=c++11", "-ffp-contract=off"] + openmp,
        extra_link_args=openmp,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION"),
                       # numpy >= 2 (pyproject.toml): its memory-handler API (scratch.pyx)
                       ("NPY_TARGET_VERSION", "NPY_2_0_API_VERSION")],
    )
    for name in MODULES
]

jobs = max(1, min(len(MODULES), os.cpu_count() or 1))
setup(
    ext_modules=cythonize(extensions, compiler_directives={"language_level": "3"}, nthreads=jobs),
    options={"build_ext": {"parallel": jobs}},
)
