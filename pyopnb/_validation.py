"""Input checks shared by the public functions: clear errors, never a silent wrong answer."""
from __future__ import annotations

import sys
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np


def exact_floats() -> dict:
    """``pandas.read_csv``'s options that read decimal text as the correctly
    rounded double, whatever pandas' version: pandas 3 converts so by
    default (and deprecates the option), while pandas 2's default converter
    lands an ulp away on some long decimals, so that the same file gave
    other numbers, and another fit, under another pandas."""
    import pandas as pd

    return {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    return value


def label_text(value: Any) -> str:
    """A label or value as a message shows it: repr of the plain Python
    value (1, 'a', (1, 2)), never numpy's (np.int64(1), np.str_('a'))."""
    return repr(_plain(value))


def rows_text(k: int) -> str:
    return f"{k} row" if k == 1 else f"{k} rows"


def _first_bad_column(bad: np.ndarray, names: Optional[Sequence[str]]) -> Tuple[str, str]:
    j = int(np.flatnonzero(bad.any(axis=0))[0])
    return (f"'{names[j]}'" if names else str(j)), rows_text(int(bad[:, j].sum()))


def _frame(X: Any, name: str = "X") -> Any:
    """X as a narwhals DataFrame when it is a dataframe of any library narwhals
    reads (pandas, polars, pyarrow, modin, cuDF, ...), else None. Every
    dataframe is read here, through that one well-kept library. Repeated
    column names are an error that names them: columns are matched by name."""
    if isinstance(X, (np.ndarray, list, tuple)) or np.isscalar(X):
        return None
    raw = getattr(X, "column_names", None)  # a pyarrow Table's names (its .columns are the data)
    if raw is None:
        raw = getattr(X, "columns", None)
    if raw is not None and not callable(raw):
        seen: set = set()
        dup = sorted({str(c) for c in raw if c in seen or seen.add(c)})
        if dup:
            raise ValueError(f"{name} has repeated column names {dup[:5]}: columns are matched by name, so each "
                             f"must be unique")
    import narwhals as nw

    frame = nw.from_native(X, eager_only=True, pass_through=True)
    return frame if isinstance(frame, nw.DataFrame) else None


def frame_matrix(X: Any, name: str) -> Optional[Tuple[np.ndarray, Tuple[Any, ...]]]:
    """A dataframe of any library as (float64 matrix, its column names as the
    frame has them), or None when X is no dataframe. Non-numeric columns are
    an error naming them (booleans read as 0/1), and missing values of every
    kind (NaN, None, pd.NA, null) become NaN, for the caller to name."""
    frame = _frame(X, name)
    if frame is None:
        return None
    import narwhals as nw

    schema = frame.schema
    text = [str(c) for c, dt in schema.items() if not (dt.is_numeric() or dt == nw.Boolean)]
    if text:
        raise ValueError(f"{name} has non-numeric columns {text[:5]}: encode them as numbers first "
                         f"(one-hot encoding, for example)")
    columns = list(frame.columns)
    if not columns:
        return np.empty((len(frame), 0)), ()
    numeric = frame.select([nw.col(c).cast(nw.Float64) for c in columns])
    M = np.empty((len(numeric), len(columns)), dtype=np.float64)
    for j, c in enumerate(numeric.columns):
        # a null as NaN, for the caller to name: pyarrow-backed pandas columns give pd.NA, which no float takes,
        # and take NaN itself for a null
        col = numeric.get_column(c)
        M[:, j] = np.asarray(col.fill_null(0.0).to_numpy(), dtype=np.float64)
        M[np.asarray(col.is_null().to_numpy(), dtype=bool), j] = np.nan
    _refuse_r_row_names(M, columns, name)
    return M, tuple(columns)


# what R's row names are called once read as a first column: pandas' read_csv, then polars' and pyarrow's,
# readr's, R's own read.csv (of a file write.csv wrote), pandas' reset_index
_ROW_NAMES_FIRST = ("Unnamed: 0", "", "...1", "X", "index", "level_0")
# what pyarrow calls a pandas index it stored as a column (parquet, feather), wherever the column is
_ROW_NAMES_ANY = ("__index_level_0__",)


def _refuse_r_row_names(M: np.ndarray, columns: Sequence[Any], name: str) -> None:
    """R's write.csv writes row names as a first column with no header; read
    as data, those row numbers become a feature (on rows kept in class order,
    a label leak). A column under a name that the dataframe libraries give
    row names (first, or a stored pandas index anywhere) holding distinct
    whole numbers (R's from 1, a pandas index written out from 0) is
    refused, with the way to read it as row names."""
    for j, col in enumerate(columns):
        label = str(col)
        if not (label in _ROW_NAMES_ANY or (j == 0 and label in _ROW_NAMES_FIRST)):
            continue
        values = M[:, j]
        # R's row numbers count from 1, a pandas index written out (to_csv, to_parquet, reset_index) from 0
        if not (values.size and np.all(np.isfinite(values)) and np.all(values >= 0)
                and np.all(values == np.floor(values)) and np.unique(values).size == values.size):
            continue
        if label in _ROW_NAMES_ANY:
            how = (f"a pandas index stored with the data (parquet, feather): read it with pandas.read_parquet, "
                   f"which restores the index, or drop it (polars: df.drop({label!r}); pyarrow: "
                   f"table.drop_columns([{label!r}]))")
        elif label == "X":
            how = ("R's read.csv names so the row names a write.csv file holds: read it in R with "
                   "read.csv(path, row.names = 1), or drop the column")
        else:
            how = (f"R's write.csv writes row names there: read the file with pd.read_csv(path, index_col=0) "
                   f"(polars: drop the column {label!r})")
        raise ValueError(f"{name}'s column {label!r} holds distinct row numbers under a name row names get: as a "
                         f"feature they would predict the rows' order. It is {how}; if it is data, give it "
                         f"another name")


def check_aligned(X: Any, y: Any) -> None:
    """pandas X and y whose row indexes differ are refused: rows are taken
    by position (as R takes a matrix's rows and a vector's entries), so
    they would pair each row with another row's label, with no word."""
    xi, yi = getattr(X, "index", None), getattr(y, "index", None)
    pd = sys.modules.get("pandas")
    if pd is None or not isinstance(xi, pd.Index) or not isinstance(yi, pd.Index) or xi.equals(yi):
        return
    if len(xi) != len(yi):
        return  # the row counts differ: the caller says so
    k = int(np.flatnonzero(np.asarray(xi) != np.asarray(yi))[0]) if xi.dtype == yi.dtype else 0
    raise ValueError(f"X and y have different row indexes (at position {k}: X's {label_text(xi[k])}, y's "
                     f"{label_text(yi[k])}): rows are paired by position, as R pairs a matrix's rows with a "
                     f"vector, so each row would get another row's label. Align them first (y = y.loc[X.index]), "
                     f"or pass y.to_numpy() if the positions do match")


def check_X(X: Any, name: str, d: Optional[int] = None, expected: Optional[Sequence[str]] = None) -> np.ndarray:
    """A finite float64 matrix, C-contiguous; errors name the first bad column.

    A dataframe's (of any library) non-numeric columns are refused by name,
    its missing values (NaN, None, pd.NA, null) are called missing and
    infinite ones infinite. With ``expected`` (the training columns' names)
    a dataframe's columns are matched by name, in any order (see
    :func:`feature_order`).
    """
    pd = sys.modules.get("pandas")
    framed = frame_matrix(X, name)
    names = None if framed is None else tuple(str(c) for c in framed[1])
    if framed is not None:
        Xa = framed[0]
    else:
        try:
            Xa = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError):
            objs = np.asarray(X, dtype=object)
            if pd is not None and any(v is pd.NA for v in objs.ravel()):
                raise ValueError(f"{name} has missing values (pd.NA): remove or impute them first") from None
            raise ValueError(f"{name} must be numeric: encode text or categorical columns as numbers first") from None
    if Xa.ndim == 1:
        if d is not None and d > 1:
            # one row, most likely (a column would need a one-feature model)
            raise ValueError(f"{name} is one-dimensional ({Xa.size} values) but the model has {d} features: pass "
                             f"rows as a 2-D array, one row as {name}.reshape(1, -1) (R: matrix(x, nrow = 1))")
        Xa = Xa.reshape(-1, 1)
    if Xa.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got shape {Xa.shape}")
    if Xa.shape[0] == 0:
        raise ValueError(f"{name} has no rows")
    if names is not None and expected is not None:
        Xa = align_columns(Xa, names, expected, name)
        names = tuple(expected)
    if d is not None and Xa.shape[1] != d:
        raise ValueError(f"{name} has {Xa.shape[1]} columns but the model was fitted on {d}")
    missing = np.isnan(Xa)
    if missing.any():
        col, rows = _first_bad_column(missing, names)
        raise ValueError(f"{name} has missing values (NaN) in column {col} ({rows}): remove or impute them first")
    infinite = np.isinf(Xa)
    if infinite.any():
        col, rows = _first_bad_column(infinite, names)
        raise ValueError(f"{name} has infinite values in column {col} ({rows})")
    return np.ascontiguousarray(Xa)


def check_ndim(ndim: Any, d: int, bound: str = "ncol(X)") -> int:
    """ndim, 1..d (default min(d, 20), R's); ``bound`` names what d counts
    in the error (the data's columns at a fit, the model's at predict)."""
    if ndim is None:
        return min(d, 20)
    if isinstance(ndim, bool) or not isinstance(ndim, (int, float, np.integer, np.floating)) \
            or not float(ndim).is_integer():
        raise ValueError(f"ndim must be an integer from 1 to {d}, got {label_text(ndim)}")
    nd = int(ndim)
    if not 1 <= nd <= d:
        raise ValueError(f"ndim must be from 1 to {bound} = {d}, got {nd}")
    return nd


def check_lam(lam: Any) -> float:
    """The penalty's weight: finite and >= 0 (R fits lam = 0, no penalty)."""
    try:
        v = float(lam)
    except (TypeError, ValueError):
        raise ValueError(f"lam must be a non-negative number, got {label_text(lam)}") from None
    if not np.isfinite(v) or v < 0:
        raise ValueError(f"lam must be finite and >= 0 (0: no penalty), got {label_text(lam)}")
    return v


def check_maxit(maxit: Any) -> int:
    """L-BFGS-B's iteration limit (R's optim control maxit), a positive integer."""
    if isinstance(maxit, bool) or not isinstance(maxit, (int, np.integer, float)) or not float(maxit).is_integer() \
            or int(maxit) < 1:
        raise ValueError(f"maxit must be a positive integer (R's optim default: 100), got {label_text(maxit)}")
    return int(maxit)


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


# how far from 1 the priors' sum may be (a third each sums to 1 within rounding)
_PRIORS_SUM_TOL = 1e-8


def check_priors(priors: Any, levels: Sequence[Any], name: str = "priors") -> Optional[np.ndarray]:
    """The class priors PI_k in the order of ``levels`` (the fit's classes),
    or None for the class proportions n_k / n.

    ``priors`` is a mapping from label to prior (a dict, or a pandas Series
    whose index holds the labels), matched by label and naming every class
    and nothing else; or a sequence with one prior per class, in the order
    of ``levels``. Each prior is finite and positive (a class of prior 0 has
    posterior 0 everywhere, and its own points log 0), and they sum to 1.
    """
    if priors is None:
        return None
    K = len(levels)
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(priors, pd.Series):
        priors = dict(zip(priors.index, priors.to_numpy()))
    if isinstance(priors, dict):
        index = {}
        for k, level in enumerate(levels):
            index.setdefault(_plain(level), k)
        values = np.full(K, np.nan)
        foreign = []
        for label, value in priors.items():
            k = index.get(_plain(label))
            if k is None:
                foreign.append(label)
            else:
                one = as_float_vector(value, f"{name}[{label_text(label)}]")
                if one.size != 1:
                    raise ValueError(f"{name}[{label_text(label)}] must be one number, got {label_text(value)}")
                values[k] = one[0]
        if foreign:
            raise ValueError(f"{name} names {', '.join(label_text(v) for v in foreign[:5])}, which "
                             f"{'is not a class' if len(foreign) == 1 else 'are not classes'} of y (its classes: "
                             f"{', '.join(label_text(v) for v in levels[:10])})")
        missing = [levels[k] for k in np.flatnonzero(np.isnan(values))]
        if missing:
            raise ValueError(f"{name} gives no prior for the class{'es' if len(missing) > 1 else ''} "
                             f"{', '.join(label_text(v) for v in missing[:5])}: give one for every class of y")
    else:
        if isinstance(priors, (str, bytes)):
            raise ValueError(f"{name} must be a mapping from label to prior, or one prior per class, got "
                             f"{label_text(priors)}")
        values = as_float_vector(priors, name)
        if values.size != K:
            raise ValueError(f"{name} has {values.size} entries but y has {K} classes "
                             f"({', '.join(label_text(v) for v in levels[:10])}, in this order); a mapping from "
                             f"label to prior names them")
    bad = ~np.isfinite(values) | (values <= 0)
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"{name} must be positive and finite, got {float(values[k])!r} for class {label_text(levels[k])} "
                         f"(a class of prior 0 is never predicted, and its own points make the likelihood 0)")
    total = float(np.sum(values))
    if abs(total - 1.0) > _PRIORS_SUM_TOL:
        raise ValueError(f"{name} must sum to 1, got a sum of {total!r}")
    return np.ascontiguousarray(values, dtype=np.float64)


def as_nbin(value: Any, allow_none: bool = True) -> Any:
    """None (exact sums, if allowed) or an integer number of bins >= 2."""
    if value is None and allow_none:
        return None
    if value is None or isinstance(value, bool) or not float(value).is_integer():
        what = "None or an integer >= 2 (None: exact sums)" if allow_none else "an integer >= 2"
        raise ValueError(f"nbin must be {what}, got {label_text(value)}")
    if int(value) < 2:
        if not allow_none:
            raise ValueError(f"nbin must be an integer >= 2, got {label_text(value)}")
        raise ValueError(f"nbin must be at least 2, got {label_text(value)} (nbin must be None for exact sums, or an "
                         f"integer >= 2)")
    return int(value)


def as_positive_scalar(value: Any, name: str, why: str = "") -> float:
    """A finite, strictly positive float; ``why`` is added to the error."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive number, got {label_text(value)}") from None
    if not np.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be positive and finite{why}, got {label_text(value)}")
    return v


def column_names(X: Any) -> Optional[Tuple[str, ...]]:
    """The column names of a dataframe of any library (as strings), or None
    for arrays. Repeated names are an error naming them: columns are matched
    by name."""
    frame = _frame(X)
    return None if frame is None else tuple(str(c) for c in frame.columns)


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


def _as_named(X: Any, name: str, expected: Optional[Sequence[str]] = None,
              labels: Optional[Sequence[Any]] = None) -> Tuple[Any, Optional[Tuple[Any, ...]]]:
    """A dataframe of any library as a pandas one of float columns (what
    scikit-learn's bookkeeping of feature names reads), its columns put in
    the ``expected`` order by name when given; anything else as it is. With
    it, the frame's column labels where they are not all strings (integer
    column names): scikit-learn records no such names, so they are matched
    here, to the training ``labels`` when given, through their text. A frame
    whose labels are not the training ones is an error, never read by
    position."""
    framed = frame_matrix(X, name)
    if framed is None:
        return X, None
    import pandas as pd

    M, names = framed
    if labels is not None:
        return M[:, feature_order(names, labels, name)], tuple(names)
    if not all(isinstance(c, str) for c in names):
        return M, tuple(names)
    if expected is not None:
        M = M[:, feature_order(names, expected, name)]
        names = tuple(expected)
    return pd.DataFrame(M, columns=list(names), copy=False), None


def estimator_data(estimator: Any, X: Any) -> np.ndarray:
    """Test data for a fitted estimator, one way for every estimator: a
    dataframe of any library matched to the training columns by name, in
    any order (an error names what is missing or extra), integer column
    names too; an array by position; float64, checked by scikit-learn's
    validation."""
    from sklearn.utils.validation import check_is_fitted, validate_data

    check_is_fitted(estimator)
    data, _ = _as_named(X, "X", getattr(estimator, "feature_names_in_", None),
                        getattr(estimator, "_column_labels", None))
    return validate_data(estimator, data, dtype=np.float64, reset=False)


def is_missing_label(v: Any) -> bool:
    """Whether one label, an item of an object array, is missing: None,
    pandas' NA (a string column's missing value) or a float NaN."""
    if v is None or (isinstance(v, float) and v != v):
        return True
    pd = sys.modules.get("pandas")
    return pd is not None and v is pd.NA


def refuse_missing_labels(y: Any) -> None:
    """A missing label held by pandas (pd.NA, None or NaN in a Series, an
    Index or an extension array) or by a numpy object array (None, pd.NA,
    NaN) is an error that says so. scikit-learn's own check compares each label
    with itself, which pd.NA answers with a TypeError."""
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(y, (pd.Series, pd.Index, pd.api.extensions.ExtensionArray)):
        missing = bool(np.asarray(pd.isna(y)).any())
    elif isinstance(y, np.ndarray) and y.dtype == object:
        missing = any(map(is_missing_label, y.ravel().tolist()))
    else:
        return
    if missing:
        raise ValueError("y contains missing values")


def fit_data(estimator: Any, X: Any, y: Any) -> Tuple[np.ndarray, np.ndarray]:
    """A scikit-learn classifier's fit input: X as float64 (checked, n_features_in_
    and feature_names_in_ set from a dataframe of any library, whose column
    names must be unique; ``_column_labels`` its labels where they are not
    all strings, for test frames to be matched to), ``classes_`` set, and y as codes 0..K-1 in
    ``classes_`` order; at least two classes."""
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import validate_data

    data, estimator._column_labels = _as_named(X, "X")
    refuse_missing_labels(y)
    X, y = validate_data(estimator, data, y, dtype=np.float64, ensure_min_samples=2)
    check_classification_targets(y)
    estimator.classes_, codes = np.unique(y, return_inverse=True)
    if estimator.classes_.size < 2:
        raise ValueError(f"{type(estimator).__name__} needs at least two classes; y has 1: "
                         f"{label_text(estimator.classes_[0])}")
    return X, codes
