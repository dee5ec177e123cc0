"""R through rpy2, for the live checks: availability, conversion, calls.

Nothing here installs anything: R, rpy2 and R's OPNB and FKSUM packages are
whatever the machine has (R_LIBS is honoured). ``why_not(...)`` says which
piece is missing, for skip reasons.
"""
from __future__ import annotations

import contextlib
import functools
import os
from typing import Any, Iterator, List, Optional, Sequence

import numpy as np


@functools.lru_cache(maxsize=None)
def _r():
    """The rpy2 robjects module with R started, or the reason it cannot be."""
    saved = os.environ.get("LD_LIBRARY_PATH")
    try:
        import rpy2.robjects as ro  # noqa: F401
        from rpy2.robjects import numpy2ri  # noqa: F401
    except Exception as exc:  # ImportError, or R's shared library failing to load
        return None, f"rpy2 or R is not available ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})"
    finally:
        # R's start sets LD_LIBRARY_PATH to its own library folders (R's ldpaths). This process has loaded
        # what it needs (the loader read the variable when the process started), but every process it starts
        # after would search them first: a Python whose libpython lies elsewhere (pyenv's, a conda one) then
        # loads the system's, and its own extension modules fail (dask's and joblib's workers among them)
        if saved is None:
            os.environ.pop("LD_LIBRARY_PATH", None)
        else:
            os.environ["LD_LIBRARY_PATH"] = saved
    return ro, None


@functools.lru_cache(maxsize=None)
def _has_package(pkg: str) -> bool:
    ro, _ = _r()
    code = f'c(suppressWarnings(suppressMessages(requireNamespace("{pkg}", quietly = TRUE))))'
    return bool(ro.r(code)[0])


def why_not(packages: Sequence[str] = ()) -> Optional[str]:
    """None when R (and the packages) can be used, else the reason."""
    ro, reason = _r()
    if ro is None:
        return reason
    for pkg in packages:
        if not _has_package(pkg):
            return f"R package {pkg} is not installed in this R (set R_LIBS to where it is)"
    return None


def r(code: str) -> Any:
    """Evaluate R code; numeric results come back as numpy arrays."""
    ro, reason = _r()
    if ro is None:
        raise RuntimeError(reason)
    from rpy2.robjects import numpy2ri
    from rpy2.robjects.conversion import localconverter

    with localconverter(ro.default_converter + numpy2ri.converter):
        return ro.r(code)


def assign(name: str, value: Any) -> None:
    """Put a Python value into R's global environment (matrices column-major as R)."""
    ro, reason = _r()
    if ro is None:
        raise RuntimeError(reason)
    from rpy2.robjects import numpy2ri
    from rpy2.robjects.conversion import localconverter

    if value is None:
        ro.globalenv[name] = ro.NULL
        return
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], str):
        ro.globalenv[name] = ro.StrVector(list(value))
        return
    arr = np.asarray(value)
    if arr.dtype.kind in "OUS":
        ro.globalenv[name] = ro.StrVector([str(v) for v in arr.tolist()])
        return
    if arr.dtype.kind == "b":
        ro.globalenv[name] = ro.BoolVector(arr.tolist())
        return
    if arr.ndim <= 1:
        # a plain vector (numpy2ri would give a 1-d array, which R's is.vector rejects)
        ro.globalenv[name] = ro.FloatVector(np.atleast_1d(arr).astype(np.float64).tolist())
        return
    with localconverter(ro.default_converter + numpy2ri.converter):
        ro.globalenv[name] = arr.astype(np.float64)


def assign_folds(name: str, folds: Sequence[Any]) -> None:
    """Put folds (0-based row-index arrays) into R as a list of 1-based
    integer vectors, as R's OPNB_CV_lam takes them."""
    r(f"{name} <- list()")
    for k, f in enumerate(folds):
        assign("f__", np.asarray(f) + 1)
        r(f"{name}[[{k + 1}]] <- as.integer(f__)")


def strings(code: str) -> np.ndarray:
    """An R character vector as an object array of str."""
    ro, reason = _r()
    if ro is None:
        raise RuntimeError(reason)
    return np.asarray([str(s) for s in ro.r(code)], dtype=object)


def load_packages(*pkgs: str) -> None:
    for pkg in pkgs:
        r(f"suppressWarnings(suppressMessages(library({pkg})))")


@contextlib.contextmanager
def console() -> Iterator[List[str]]:
    """What R prints inside the block (its output and its error stream,
    ``try()``'s "Error in optim(...)" included), collected into a list
    rather than printed on the console."""
    import rpy2.rinterface_lib.callbacks as callbacks

    printed: List[str] = []
    saved = callbacks.consolewrite_print, callbacks.consolewrite_warnerror
    callbacks.consolewrite_print = callbacks.consolewrite_warnerror = printed.append
    try:
        yield printed
    finally:
        callbacks.consolewrite_print, callbacks.consolewrite_warnerror = saved
