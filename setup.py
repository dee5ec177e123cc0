"""Build the compiled core of pyopnb (metadata lives in pyproject.toml)."""
import sys

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

openmp = [] if sys.platform == "darwin" else ["-fopenmp"]

extensions = [
    Extension(
        "pyopnb._ksum",
        ["pyopnb/_ksum.pyx"],
        include_dirs=[np.get_include(), "pyopnb"],
        language="c++",
        # no FMA contraction: sums must round as R's (see _ksum.project)
        extra_compile_args=["-O3", "-std=c++11", "-ffp-contract=off"] + openmp,
        extra_link_args=openmp,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
]

setup(ext_modules=cythonize(extensions, compiler_directives={"language_level": "3"}))
