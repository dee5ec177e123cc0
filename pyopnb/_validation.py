"""Input checks shared by the public functions: clear errors, never a silent wrong answer."""
from __future__ import annotations

from typing import Any

import numpy as np


def as_float_vector(value: Any, name: str, *, allow_empty: bool = False) -> np.ndarray:
    """A finite 1-D float64 array from a list, numpy array or pandas Series."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric: {exc}") from None
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} must not be empty")
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(f"{name} contains NaN or infinite values (first at index {int(np.argmax(bad))})")
    return np.ascontiguousarray(arr)


def as_nbin(value: Any, allow_none: bool = True) -> Any:
    """None (exact sums, if allowed) or an integer number of bins >= 2."""
    if value is None and allow_none:
        return None
    if value is None or isinstance(value, bool) or not float(value).is_integer():
        what = "None or an integer >= 2 (None: exact sums)" if allow_none else "an integer >= 2"
        raise ValueError(f"nbin must be {what}, got {value!r}")
    if int(value) < 2:
        if not allow_none:
            raise ValueError(f"nbin must be an integer >= 2, got {value!r}")
        raise ValueError(f"nbin must be at least 2, got {value!r} (nbin must be None for exact sums, or an integer >= 2)")
    return int(value)


def as_positive_scalar(value: Any, name: str, why: str = "") -> float:
    """A finite, strictly positive float; ``why`` is added to the error."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive number, got {value!r}") from None
    if not np.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be positive and finite{why}, got {value!r}")
    return v
