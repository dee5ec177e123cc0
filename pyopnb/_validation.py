"""Input checks shared by the public functions: clear errors, never a silent wrong answer."""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Tuple

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


def column_names(X: Any) -> Optional[Tuple[str, ...]]:
    """The column names of a DataFrame (as strings), or None for arrays."""
    cols = getattr(X, "columns", None)
    if cols is None:
        return None
    return tuple(str(c) for c in cols)


def feature_order(names: Sequence[str], expected: Sequence[str], name: str,
                  absent_ok: Optional[Callable[[str], bool]] = None) -> np.ndarray:
    """Where each ``expected`` column sits among ``names``: predict, the
    estimator and the command line all match test columns to training columns
    by name through this, so a reordered table is read right and a different
    one is an error, never a silent misreading.

    ``absent_ok(col)`` marks columns that may be missing (position -1) or
    extra (ignored): the command line's one-hot levels absent from a file.
    Raises ValueError naming the missing and the extra columns.
    """
    names = [str(c) for c in names]
    expected = [str(c) for c in expected]
    for what, cols in ((name, names), ("the training data", expected)):
        seen: set = set()
        dup = sorted({c for c in cols if c in seen or seen.add(c)})
        if dup:
            raise ValueError(f"{what} has repeated column names {dup[:5]}: columns must be matched by name")
    ok = absent_ok or (lambda c: False)
    index = {c: i for i, c in enumerate(names)}
    want = set(expected)
    missing = [c for c in expected if c not in index and not ok(c)]
    extra = [c for c in names if c not in want and not ok(c)]
    if missing or extra:
        msg = []
        if missing:
            msg.append(f"missing {missing}")
        if extra:
            msg.append(f"not in training {extra}")
        raise ValueError(f"{name}: columns differ from the training data: " + "; ".join(msg))
    return np.array([index.get(c, -1) for c in expected], dtype=np.intp)


def align_columns(X: np.ndarray, names: Optional[Sequence[str]], expected: Optional[Sequence[str]], name: str,
                  absent_ok: Optional[Callable[[str], bool]] = None) -> np.ndarray:
    """X's columns in the training order when both sides have names (columns
    allowed absent by ``absent_ok`` are zeros); X as it is otherwise."""
    if names is None or expected is None:
        return X
    pos = feature_order(names, expected, name, absent_ok)
    if np.array_equal(pos, np.arange(X.shape[1])):
        return X
    out = np.zeros((X.shape[0], pos.size), dtype=X.dtype)
    have = pos >= 0
    out[:, have] = X[:, pos[have]]
    return np.ascontiguousarray(out)


def fit_data(estimator: Any, X: Any, y: Any) -> Tuple[np.ndarray, np.ndarray]:
    """A scikit-learn classifier's fit input: X as float64 (checked, n_features_in_
    and feature_names_in_ set), ``classes_`` set, and y as codes 0..K-1 in
    ``classes_`` order; at least two classes."""
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import validate_data

    X, y = validate_data(estimator, X, y, dtype=np.float64, ensure_min_samples=2)
    check_classification_targets(y)
    estimator.classes_, codes = np.unique(y, return_inverse=True)
    if estimator.classes_.size < 2:
        raise ValueError(f"{type(estimator).__name__} needs at least two classes; y has 1: "
                         f"{estimator.classes_[0]!r}")
    return X, codes
