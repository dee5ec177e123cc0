"""Class labels as R's ``as.factor`` codes them: levels in R's order, 0-based codes.

Also R's text for a level (``as.character``), and that text read back in a
type, for model files that travel between R and Python.
"""
from __future__ import annotations

import math
import re
import sys
import warnings
from functools import lru_cache
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

from ._validation import is_missing_label, label_text
from .exceptions import RLabelsWarning

__all__ = ["factor", "factor_levels", "factor_values", "level_text", "levels_from_text", "collation_key",
           "sort_levels"]


@lru_cache(maxsize=1)
def _collator() -> Callable[[str], Any]:
    # R's usual builds (Debian's included) sort strings with ICU's root
    # collation, the Unicode Collation Algorithm; pyuca implements it (and
    # agreed with R 4.2 on 3000 random words of ASCII and accented letters)
    import pyuca

    return pyuca.Collator().sort_key


def collation_key(s: str) -> Any:
    """The sort key of R's ``sort`` on strings: the Unicode Collation Algorithm
    (ICU's root order: case-insensitive first, lower case before upper,
    punctuation before digits before letters, accents after the plain letter)."""
    return _collator()(s)


# Strings of digits and letters of one case only: their collation order is
# their code-point order (digits before letters, a prefix first, no case or
# accent to weigh), so they sort without the collator, whose tables take a
# tenth of a second or more to load, the first time in a process
_ONE_CASE = (re.compile(r"[0-9a-z]*"), re.compile(r"[0-9A-Z]*"))


def sort_levels(strs: Sequence[str]) -> List[str]:
    """The distinct strings in R's order (:func:`collation_key`)."""
    distinct = set(strs)
    if any(all(plain.fullmatch(s) for s in distinct) for plain in _ONE_CASE):
        return sorted(distinct)
    return sorted(distinct, key=collation_key)


def _categorical(y: Any) -> Any:
    """y as a pandas Categorical if it is one (or a Series of one), else None."""
    # pandas is optional here, and y can only be a pandas object if pandas is
    # loaded (importing it here would add a quarter of a second to a fit)
    pd = sys.modules.get("pandas")
    if pd is None:
        return None
    if isinstance(y, (pd.Series, pd.Index)) and isinstance(y.dtype, pd.CategoricalDtype):
        return pd.Categorical(y)
    if isinstance(y, pd.Categorical):
        return y
    return None


def factor(y: Any) -> Tuple[np.ndarray, np.ndarray]:
    """R's ``as.factor``: (levels, 0-based codes).

    Numbers sort numerically, booleans FALSE < TRUE, strings as R sorts them
    (:func:`collation_key`); a pandas Categorical keeps its category order,
    as R keeps a factor's levels, less its unused ones (see
    :func:`factor_levels`). Distinct numbers whose 15-digit text is one
    are one class, as in R, with a warning (:class:`RLabelsWarning`).
    """
    levels, codes, _ = factor_levels(y)
    return levels, codes


def factor_levels(y: Any) -> Tuple[np.ndarray, np.ndarray, Tuple[Any, ...]]:
    """:func:`factor`, and a factor's levels after its last used one (no
    rows): R's OPNB keeps those in its model's ``ynames`` beyond its ``nc``
    classes, and predicts none of them. A level with no rows before a
    used one is an error, as in R (whose fit stops there)."""
    cat = _categorical(y)
    if cat is not None:
        if (cat.codes < 0).any():
            raise ValueError("y contains missing values")
        used = np.zeros(len(cat.categories), dtype=bool)
        used[np.asarray(cat.codes)] = True
        last = int(np.flatnonzero(used)[-1]) if used.any() else -1
        gaps = [cat.categories[i] for i in range(last) if not used[i]]
        if gaps:
            raise ValueError(f"y's levels {', '.join(label_text(g) for g in gaps[:5])} have no rows, before levels "
                             f"that do: R's OPNB stops with an error there (\"non-conformable arrays\"), its classes "
                             f"being the codes 1 to the last one used. Drop them first (R: droplevels(y); pandas: "
                             f"y.cat.remove_unused_categories())")
        trailing = tuple(cat.categories[last + 1:])
        cat = cat.remove_unused_categories()
        return np.asarray(cat.categories, dtype=object), np.asarray(cat.codes, dtype=np.int64), trailing
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(y, (pd.Series, pd.Index)):
        y = y.to_numpy()
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
        return (*_r_number_classes(levels, codes.astype(np.int64).ravel()), ())
    if arr.dtype.kind in "OUS":
        items = arr.tolist()
        if set(map(type, items)) <= {str, np.str_}:
            return (*_factor_strings(items), ())  # no missing value, number or bool to look for item by item
        if any(map(is_missing_label, items)):
            raise ValueError("y contains missing values")
        if any(isinstance(v, float) and not math.isfinite(v) for v in items):
            raise ValueError("y contains NaN or infinite values")
        kinds = {type(v) for v in items}
        if all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in items):
            return factor_levels(np.asarray(items, dtype=float))
        if kinds <= {bool, np.bool_}:
            return factor_levels(np.asarray(items, dtype=bool))
        return (*_factor_strings([str(v) for v in items]), ())
    raise ValueError(f"y has an unsupported dtype {arr.dtype}")


def _r_number_classes(levels: np.ndarray, codes: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Sorted distinct numbers and their codes, merged as R's ``as.factor``
    merges them: through their text, 15 significant digits
    (``as.character``), so that 0.1 + 0.2 and 0.3 are one class, "0.3".
    Each class keeps its smallest number; a merge warns, naming the numbers."""
    if levels.dtype.kind == "b" or (levels.dtype.kind in "iu" and levels.size
                                    and max(abs(int(levels[0])), abs(int(levels[-1]))) < 2 ** 31):
        return levels, codes  # R's integers and logicals: their text is exact
    text = [_r_double_text(float(v)) for v in levels.tolist()]
    # rounding to 15 digits keeps the order, so numbers of one text are neighbours in sorted order
    new = np.fromiter((i > 0 and text[i] != text[i - 1] for i in range(len(text))), dtype=np.int64,
                      count=len(text)).cumsum()
    if new.size == 0 or new[-1] == levels.size - 1:
        return levels, codes
    first = np.flatnonzero(np.r_[True, new[1:] != new[:-1]])
    sizes = np.diff(np.r_[first, levels.size])
    merged = [(text[f], levels[f:f + s].tolist()) for f, s in zip(first.tolist(), sizes.tolist()) if s > 1]
    say = "; ".join(f"{', '.join(repr(v) for v in values)} as {t!r}" for t, values in merged[:3])
    warnings.warn(f"y: {len(merged)} group(s) of distinct numbers are one class each, as R's as.factor makes them "
                  f"(it reads numbers through 15 significant digits): {say}. Round y, or pass it as text, to say "
                  f"which classes you mean", RLabelsWarning, stacklevel=3)
    return levels[first], new[codes]


def _factor_strings(strs: List[str]) -> Tuple[np.ndarray, np.ndarray]:
    """:func:`factor` of strings: levels in R's order, codes by a lookup per string."""
    levels = sort_levels(strs)
    index = {lev: i for i, lev in enumerate(levels)}
    return (np.asarray(levels, dtype=object),
            np.fromiter(map(index.__getitem__, strs), dtype=np.int64, count=len(strs)))


def factor_values(y: Any) -> Tuple[np.ndarray, np.ndarray, Any]:
    """(levels, codes, labels): :func:`factor`'s result and the labels as a
    vector whose row subsets keep the levels' order when factored again (a
    pandas Categorical where y is one, else the levels by row), for the fits
    of a cross-validation; a factor's unused last levels stay in it, as R's
    subsets keep them)."""
    levels, codes, unused = factor_levels(y)
    if _categorical(y) is not None:
        import pandas as pd

        return levels, codes, pd.Categorical.from_codes(codes, categories=list(levels) + list(unused))
    return levels, codes, levels[codes]


# ---------------------------------------------------------------------------
# R's text for a level, and back
# ---------------------------------------------------------------------------

def _r_double_text(x: float) -> str:
    """R's ``as.character`` of a double: 15 significant digits at most, the
    fewest that keep the value to 15, fixed notation unless scientific is
    narrower (R's ``scipen = 0``)."""
    if x == 0:
        return "0"
    if math.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    target = float(f"{x:.14e}")
    nsig = next(k for k in range(1, 16) if float(f"{x:.{k - 1}e}") == target)
    mant, exp = f"{x:.{nsig - 1}e}".split("e")
    e = int(exp)
    sci = f"{mant}e{'-' if e < 0 else '+'}{abs(e):02d}"
    fixed = f"{x:.{max(0, nsig - 1 - e)}f}"
    return fixed if len(fixed) <= len(sci) else sci


def level_text(levels: Sequence[Any]) -> List[str]:
    """Each level as R writes it in a factor's levels: integers as digits,
    doubles as ``as.character`` does (``0``, ``0.5``, ``1e+05``), booleans
    ``FALSE``/``TRUE``, strings as they are."""
    arr = np.asarray(levels)
    if arr.dtype.kind == "b":
        return ["TRUE" if v else "FALSE" for v in arr.tolist()]
    if arr.dtype.kind in "iu":
        return [str(int(v)) for v in arr.tolist()]
    if arr.dtype.kind == "f":
        return [_r_double_text(float(v)) for v in arr.tolist()]
    out = []
    for v in np.ravel(arr).tolist():
        if isinstance(v, (bool, np.bool_)):
            out.append("TRUE" if v else "FALSE")
        elif isinstance(v, (float, np.floating)):
            out.append(_r_double_text(float(v)))
        else:
            out.append(str(v))
    return out


_INTEGER_TEXT = re.compile(r"-?(0|[1-9][0-9]*)\Z")


def levels_from_text(text: Sequence[str], kind: Optional[str] = None) -> np.ndarray:
    """Levels read back from R's text, in the type ``kind`` names (integer,
    double, logical or character). With no kind (a model R saved: R keeps
    only the text), the type is the one whose R text the levels are, each
    exactly: integers (``"0"``, ``"12"``), logicals (``"FALSE"``, ``"TRUE"``),
    doubles (``"0.5"``, ``"1e+05"``); anything else stays text."""
    text = [str(v) for v in text]
    if kind == "integer":
        return np.asarray([int(v) for v in text], dtype=np.int64)
    if kind == "double":
        return np.asarray([float(v) for v in text], dtype=np.float64)
    if kind == "logical":
        return np.asarray([v.upper() == "TRUE" for v in text], dtype=bool)
    if kind not in (None, "character"):
        raise ValueError(f"a model file names its labels' type {kind!r}, not one of integer, double, logical, "
                         f"character")
    if kind is None and text:
        if all(_INTEGER_TEXT.match(v) for v in text) and all(abs(int(v)) < 2 ** 63 for v in text):
            return np.asarray([int(v) for v in text], dtype=np.int64)
        if all(v in ("FALSE", "TRUE") for v in text):
            return np.asarray([v == "TRUE" for v in text], dtype=bool)
        try:
            values = [float(v) for v in text]
        except ValueError:
            values = None
        if values is not None and all(math.isfinite(x) and _r_double_text(x) == v for x, v in zip(values, text)):
            return np.asarray(values, dtype=np.float64)
    return np.asarray(text, dtype=object)
