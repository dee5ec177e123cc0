"""Moving OPNB models between R and Python: RDS files, without R."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Union

import numpy as np

from .model import OPNBModel

__all__ = ["read_rds", "model_from_fields"]

_FIELDS = ("V", "X", "y", "PI", "h", "nc", "mu", "scales", "ynames", "lam", "fval")


def _vector(v: Any, name: str) -> np.ndarray:
    try:
        return np.asarray(getattr(v, "values", v), dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"model field {name!r} is not numeric") from None


def _names(v: Any) -> Any:
    """Column names R attached (names on mu / scales, or dimnames of X)."""
    coords = getattr(v, "coords", None)
    if coords is None:
        return None
    for dim in getattr(v, "dims", ())[-1:]:
        if dim in coords:
            vals = np.asarray(coords[dim].values)
            if vals.dtype.kind in "OU":
                return tuple(str(s) for s in vals)
    return None


def model_from_fields(fields: Any) -> OPNBModel:
    """An OPNBModel from R's fields (a mapping, e.g. a converted R list)."""
    missing = [f for f in _FIELDS if f not in fields]
    if missing:
        raise ValueError(f"not an OPNB model: fields {missing} are missing")
    V = _vector(fields["V"], "V")
    if V.ndim == 1:
        V = V.reshape(-1, 1)
    X = _vector(fields["X"], "X")
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    h = _vector(fields["h"], "h")
    nc = int(np.ravel(_vector(fields["nc"], "nc"))[0])
    if h.ndim == 1:
        h = h.reshape(nc, -1)
    y = _vector(fields["y"], "y")
    if not np.all(np.equal(np.mod(y, 1), 0)):
        raise ValueError("model field 'y' must hold integer class codes")
    ynames_raw = fields["ynames"]
    cats = getattr(ynames_raw, "categories", None)
    ynames = np.asarray(
        [str(s) for s in (np.asarray(ynames_raw) if cats is None else np.asarray(ynames_raw.astype(str)))],
        dtype=object,
    )
    model = OPNBModel(
        V=np.ascontiguousarray(V), X=np.ascontiguousarray(X), y=y.astype(np.int64),
        PI=_vector(fields["PI"], "PI").ravel(), h=np.ascontiguousarray(h), nc=nc,
        mu=_vector(fields["mu"], "mu").ravel(), scales=_vector(fields["scales"], "scales").ravel(),
        ynames=ynames, lam=float(np.ravel(_vector(fields["lam"], "lam"))[0]),
        fval=float(np.ravel(_vector(fields["fval"], "fval"))[0]),
        feature_names=_names(fields["mu"]) or _names(fields["X"]),
    )
    _check_consistent(model)
    return model


def _check_consistent(m: OPNBModel) -> None:
    d, ndim = m.V.shape
    n = m.X.shape[0]
    problems = []
    if m.X.shape[1] != d:
        problems.append(f"X has {m.X.shape[1]} columns but V has {d} rows")
    if m.y.shape != (n,):
        problems.append(f"y has {m.y.size} entries for {n} rows of X")
    if m.PI.size != m.nc or m.ynames.size != m.nc:
        problems.append(f"PI ({m.PI.size}) and ynames ({m.ynames.size}) must have nc = {m.nc} entries")
    if m.h.shape != (m.nc, ndim):
        problems.append(f"h is {m.h.shape}, expected ({m.nc}, {ndim})")
    if m.mu.size != d or m.scales.size != d:
        problems.append("mu and scales must have one entry per column of X")
    if m.y.size and (m.y.min() < 1 or m.y.max() > m.nc):
        problems.append(f"y codes must lie in 1..{m.nc}")
    if problems:
        raise ValueError("inconsistent OPNB model: " + "; ".join(problems))


def read_rds(path: Union[str, os.PathLike]) -> OPNBModel:
    """Read an OPNB model that R saved with ``saveRDS`` (R need not be installed)."""
    import rdata

    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{p}: no such file")
    try:
        parsed = rdata.parser.parse_file(p)
    except Exception as exc:  # rdata raises many kinds on bad input
        raise ValueError(f"{p}: not a readable RDS file ({type(exc).__name__}: {exc})") from None
    classes = _r_class(parsed.object)
    if "OPNB" not in classes:
        raise ValueError(f"{p}: the RDS object is of class {classes or ['(none)']}, not 'OPNB'")
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # rdata has no constructor for class "OPNB": a list is right
            converted = rdata.conversion.convert(parsed)
    except Exception as exc:
        raise ValueError(f"{p}: could not convert the R object ({type(exc).__name__}: {exc})") from None
    if not hasattr(converted, "keys"):
        raise ValueError(f"{p}: the OPNB object is not a named list")
    return model_from_fields({str(k): v for k, v in converted.items()})


def _r_class(obj: Any) -> list:
    attrs = getattr(obj, "attributes", None)
    while attrs is not None and getattr(attrs, "value", None) is not None:
        tag = attrs.tag
        ref = getattr(tag, "referenced_object", None)
        sym = ref if ref is not None else tag
        name = getattr(getattr(sym, "value", None), "value", None)
        if name == b"class":
            return [c.value.decode() for c in attrs.value[0].value if c.value is not None]
        attrs = attrs.value[1] if len(attrs.value) > 1 else None
    return []
