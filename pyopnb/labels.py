"""Class labels as R's ``as.factor`` codes them: levels in R's order, 0-based codes."""
from __future__ import annotations

import sys
from typing import Any, Tuple

import numpy as np

__all__ = ["factor"]


def _collation_key(s: str) -> Tuple[str, str]:
    # R sorts strings by the locale's collation (en_US: case-insensitive
    # first, lower case before upper on ties); C-locale order would put "B"
    # before "a"
    return (s.casefold(), s.swapcase())


def factor(y: Any) -> Tuple[np.ndarray, np.ndarray]:
    """R's ``as.factor``: (levels, 0-based codes).

    Numbers sort numerically, booleans FALSE < TRUE, strings by collation;
    a pandas Categorical keeps its category order (unused categories dropped).
    """
    cat = None
    # pandas is optional, and y can only be a pandas object if pandas is
    # loaded (importing it here would add a quarter of a second to a fit)
    pd = sys.modules.get("pandas")
    if pd is not None:
        if isinstance(y, (pd.Series, pd.Index)) and isinstance(y.dtype, pd.CategoricalDtype):
            cat = pd.Categorical(y)
        elif isinstance(y, pd.Categorical):
            cat = y
        elif isinstance(y, (pd.Series, pd.Index)):
            y = y.to_numpy()
    if cat is not None:
        if (cat.codes < 0).any():
            raise ValueError("y contains missing values")
        cat = cat.remove_unused_categories()
        return np.asarray(cat.categories, dtype=object), np.asarray(cat.codes, dtype=np.int64)
    arr = np.asarray(y)
    if arr.ndim != 1:
        if arr.ndim == 2 and 1 in arr.shape:
            arr = arr.ravel()
        else:
            raise ValueError(f"y must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError("y is empty")
    if arr.dtype.kind in "fc":
        if not np.all(np.isfinite(arr)):
            raise ValueError("y contains NaN or infinite values")
    if arr.dtype.kind in "biuf":
        levels, codes = np.unique(arr, return_inverse=True)
        return levels, codes.astype(np.int64)
    if arr.dtype.kind in "OUS":
        items = arr.tolist()
        if any(v is None or (isinstance(v, float) and not np.isfinite(v)) for v in items):
            raise ValueError("y contains missing values")
        kinds = {type(v) for v in items}
        if all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in items):
            return factor(np.asarray(items, dtype=float))
        if kinds <= {bool, np.bool_}:
            return factor(np.asarray(items, dtype=bool))
        strs = [str(v) for v in items]
        levels = sorted(set(strs), key=_collation_key)
        index = {lev: i for i, lev in enumerate(levels)}
        return np.asarray(levels, dtype=object), np.array([index[s] for s in strs], dtype=np.int64)
    raise ValueError(f"y has an unsupported dtype {arr.dtype}")
