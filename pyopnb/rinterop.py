"""Live R objects for rpy2 users: ``from_r`` and ``to_r``.

Both go through R's own serialisation (saveRDS / readRDS on a temporary
file), so a model crosses exactly as it would in an RDS file, with one
converter to maintain.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any

from .model import OPNBModel
from .rio import read_rds, write_rds

__all__ = ["from_r", "to_r"]


def _ro():
    try:
        import rpy2.robjects as ro
    except Exception as exc:  # ImportError, or R failing to load
        raise ImportError(f"from_r / to_r need rpy2 and R ({type(exc).__name__}: {exc})") from None
    return ro


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
