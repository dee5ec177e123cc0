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


def max_rel(got: Any, ref: Any, floor: float) -> float:
    """Largest |got - ref| / max(|ref|, floor)."""
    g, r = np.asarray(got, dtype=float), np.asarray(ref, dtype=float)
    if g.shape != r.shape:
        raise AssertionError(f"shape {g.shape} != {r.shape}")
    if g.size == 0:
        return 0.0
    return float(np.max(np.abs(g - r) / np.maximum(np.abs(r), floor)))


def within(got: Any, ref: Any, rel: float, abs_: float) -> bool:
    g, r = np.asarray(got, dtype=float), np.asarray(ref, dtype=float)
    return bool(np.all(np.abs(g - r) <= np.maximum(rel * np.abs(r), abs_)))
