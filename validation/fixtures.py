"""The recorded outputs of R's FKSUM 1.0.1 and OPNB 1.0 (fixtures/*.json)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import numpy as np

FIXTURES = Path(__file__).parent / "fixtures"

# tolerances set by the issues: kernel sums, objective, predictions
FK_REL, FK_ABS = 1e-10, 1e-12
OBJ_REL = 1e-9


def load(name: str) -> Dict[str, Any]:
    with open(FIXTURES / f"{name}.json") as fh:
        return json.load(fh, parse_constant=float)


def names(kind_prefix: str) -> List[str]:
    return sorted(p.stem for p in FIXTURES.glob(f"{kind_prefix}*.json"))


def arr(value: Any) -> np.ndarray:
    """A fixture number or matrix as float64 ("Inf" strings included)."""
    def conv(v):
        if isinstance(v, list):
            return [conv(u) for u in v]
        if isinstance(v, str):
            return float(v.replace("Inf", "inf"))
        return v
    return np.asarray(conv(value), dtype=np.float64)


FIT_FVAL_REL = 1e-8
FIT_V_ABS = 1e-6
POSTERIOR_ABS = 1e-10


def r_starts() -> Dict[str, Any]:
    """R's own start projections (eigen(cov(Xs))$vectors), recorded with
    validation/record/record_r_starts.py: R's binned objective is not
    symmetric under a column's sign flip, and eigenvector signs are each
    LAPACK's own choice."""
    return load("r_eigen_starts")


def fit_call(name: str, use_r_start: bool = True):
    """(X, y, kwargs for pyopnb.OPNB, outputs) of a fit fixture."""
    fx = load(name)
    i = fx["inputs"]
    args = dict(i["args"] or {})
    kw = {k: args[k] for k in ("ndim", "lam", "scale", "nbin") if k in args}
    if i["Cmat"] is not None:
        Cmat = arr(i["Cmat"])
        kw["C"] = lambda X, y: Cmat
    if i["V0"] is not None:
        V0 = arr(i["V0"])
        kw["V0"] = lambda X, y, ndim: V0
    elif use_r_start:
        kw["V0"] = arr(r_starts()["starts"][name])
    return arr(i["X"]), np.asarray(i["y"]), kw, fx["outputs"], i


def model_from_fixture(fields: Dict[str, Any]):
    """An OPNBModel rebuilt from a fixture's model fields."""
    from pyopnb.rio import model_from_fields

    f = dict(fields)
    f.setdefault("lam", 1e-3)
    f.setdefault("fval", float("nan"))
    f["ynames"] = np.asarray(f["ynames"], dtype=object)
    return model_from_fields({k: (v if k == "ynames" else arr(v)) for k, v in f.items()})


def column_signs(V: np.ndarray, Vref: np.ndarray) -> np.ndarray:
    """Signs that align V's columns with Vref's (LAPACK picks eigenvector signs)."""
    s = np.sign(np.sum(V * Vref, axis=0))
    s[s == 0] = 1
    return s
