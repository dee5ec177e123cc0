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


POSTERIOR_ABS = 1e-10

# Fits: what pyopnb's objective's own agreement with R's (about 1e-15
# relative per evaluation) allows where R's fit does not amplify last bits
FIT_FLOOR = {"fval_rel": 1e-12, "V_abs": 1e-10, "posterior_abs": 1e-10}
# where it does, this many times R's own spread (r_spread.json)
SPREAD_FACTOR = 10.0
# R's spread: its results on X moved by 1e-15 relative, under these seeds
SEEDS = (1000, 1001, 1002, 1003)


def perturbed(X: np.ndarray, seed: int) -> np.ndarray:
    """X times (1 + 1e-15 u), u uniform on [-1, 1], in the columns that vary
    (a constant column would otherwise start to vary)."""
    u = np.random.default_rng(seed).uniform(-1, 1, X.shape)
    varies = np.ptp(X, axis=0) > 0
    return np.where(varies, X * (1 + 1e-15 * u), X)


def r_spread() -> Dict[str, Any]:
    """R's own spread on the fit and CV fixtures: how far R's results move
    when X moves by 1e-15 relative (validation/record/record_r_spread.py).
    The C library's exp and log differ in rare last bits between machines
    (FMA and non-FMA variants), so R's own recorded numbers are only
    reproducible to that spread."""
    return load("r_spread")


def fit_tolerance(spread: Dict[str, float]) -> Dict[str, float]:
    """Tolerances for comparing a fit with R's: the floor, or SPREAD_FACTOR
    times R's own spread where that is larger."""
    return {k: max(v, SPREAD_FACTOR * float(spread.get(k, 0.0))) for k, v in FIT_FLOOR.items()}


def r_starts() -> Dict[str, Any]:
    """R's own start projections (eigen(cov(Xs))$vectors), recorded with
    validation/record/record_r_starts.py: R's binned objective is not
    symmetric under a column's sign flip, and the default start must give
    these to the bit (pyopnb._core.eigen ports R's reference LAPACK path)."""
    return load("r_eigen_starts")


def fit_call(name: str, use_r_start: bool = False):
    """(X, y, kwargs for pyopnb.OPNB, outputs) of a fit fixture: pyopnb's
    default start (R's, to the bit), or R's recorded start passed as V0 with
    ``use_r_start``."""
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


def write_r_csv(df: Any, path: Any, row_names: bool = True) -> None:
    """Write a pandas DataFrame as R's ``write.csv`` writes it: quoted header
    and strings, numbers in full, and by default a first column of row names
    ("1", "2", ...) under an empty header."""
    lines = [",".join(f'"{c}"' for c in ([""] if row_names else []) + [str(c) for c in df.columns])]
    for i, row in enumerate(df.itertuples(index=False)):
        vals = [f'"{i + 1}"'] if row_names else []
        vals += [f'"{v}"' if isinstance(v, str) else repr(float(v)) for v in row]
        lines.append(",".join(vals))
    Path(path).write_text("\n".join(lines) + "\n")
