"""Live R for rpy2 users: models both ways (``from_r``, ``to_r``) and R's own
start (``r_eigen_start``, behind ``V0="R"``).

Models go through R's own serialisation (saveRDS / readRDS on a temporary
file), so a model crosses exactly as it would in an RDS file, with one
converter to maintain.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any

import numpy as np

from .model import OPNBModel
from .rio import read_rds, write_rds

__all__ = ["from_r", "to_r", "r_eigen_start"]


def _ro(what: str = "from_r / to_r"):
    try:
        import rpy2.robjects as ro
    except Exception as exc:  # ImportError, or R failing to load
        raise ImportError(f"{what}: rpy2 and R are needed ({type(exc).__name__}: {exc}); install R, then "
                          f"pip install 'pyopnb[r]'") from None
    return ro


def r_eigen_start(Xs: np.ndarray, ndim: int) -> np.ndarray:
    """R OPNB's default start, computed by R: ``eigen(cov(Xs))$vectors[, 1:ndim]``
    on the scaled data (pyopnb's scaled data is R's to the bit), so the
    columns' signs are those of the LAPACK this R links (reference LAPACK,
    OpenBLAS, MKL and Accelerate each choose their own)."""
    ro = _ro('V0="R"')
    Xs = np.asarray(Xs, dtype=np.float64)
    n, d = Xs.shape
    start = ro.r("function(X, k) eigen(cov(X))$vectors[, seq_len(k), drop = FALSE]")
    m = ro.r["matrix"](ro.FloatVector(np.ravel(Xs, order="F")), nrow=n, ncol=d)
    V = np.array(list(start(m, int(ndim))), dtype=np.float64)  # column-major, as R stores it
    return np.ascontiguousarray(V.reshape((d, ndim), order="F"))


def from_r(robj: Any) -> OPNBModel:
    """An OPNBModel from a live R object of class "OPNB" (an rpy2 object)."""
    ro = _ro()
    classes = list(ro.r["class"](robj))
    if "OPNB" not in classes:
        raise ValueError(f"the R object is of class {classes}, not 'OPNB'")
    fd, path = tempfile.mkstemp(suffix=".rds")
    os.close(fd)
    try:
        ro.r["saveRDS"](robj, path)
        return read_rds(path)
    finally:
        os.unlink(path)


def to_r(model: OPNBModel) -> Any:
    """The model as a live R object of class "OPNB", for R's predict.OPNB."""
    ro = _ro()
    fd, path = tempfile.mkstemp(suffix=".rds")
    os.close(fd)
    try:
        os.unlink(path)
        write_rds(model, path)
        return ro.r["readRDS"](path)
    finally:
        if os.path.exists(path):
            os.unlink(path)
