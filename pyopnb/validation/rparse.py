"""R reads the CSV files itself, as a team's R pipeline does (``--r-reads-csv``).

pyopnb reads a CSV with pandas; R's ``read.csv`` converts decimal text to
doubles with its own routine, which now and then lands one ulp away from
pandas' (and either may be one ulp from the correctly rounded value). A
workflow whose R side is to match the team's R pipeline must then fit R on
R's own parse: :func:`read_in_r` reads the files in R, puts R's values
where pyopnb has a numeric column (the one-hot columns pyopnb makes from
text are 0 and 1 on both sides), and lists every cell whose value or label
the two readers parse differently, with the file's text.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

__all__ = ["RParse", "read_in_r", "training_matrix"]

# a recording keeps at most this many of the cells that parse differently
MAX_CELLS = 1000


@dataclass
class RParse:
    """What R fits on when it reads the files itself.

    Parameters
    ----------
    X : ndarray of shape (n, p)
        pyopnb's training matrix with R's values in its numeric columns.
    Xte : ndarray of shape (m, p) or None
        The same for the test file.
    y : ndarray of shape (n,)
        The label column as R read it (numbers, booleans or text).
    files : list of str
        The files R read.
    differences : list of dict
        The cells the two readers parse differently: ``file``, ``row``
        (1-based, as in the file and in R), ``column`` and ``j`` (its
        place in pyopnb's matrix, from 0), ``text``, ``pyopnb`` and ``R``.
    count : int
        How many cells differ (``differences`` keeps the first
        :data:`MAX_CELLS`).
    """

    X: np.ndarray
    Xte: Optional[np.ndarray]
    y: np.ndarray
    files: List[str]
    differences: List[Dict[str, Any]] = field(default_factory=list)
    count: int = 0

    def section(self) -> Dict[str, Any]:
        """How R got its data, for a recording and the report."""
        return {"read_by": "R's read.csv", "files": list(self.files), "count": self.count,
                "differences": list(self.differences)}


_READ = """
rd__ <- function(path, rn, cls = NA) read.csv(path, check.names = FALSE, row.names = if (rn) 1L else NULL,
                                              stringsAsFactors = FALSE, colClasses = cls, fileEncoding = "UTF-8-BOM")
"""


def _read(path: str, row_names: bool, columns: Sequence[str]) -> "tuple[Dict[str, np.ndarray], Dict[str, Any]]":
    """R's parse of ``columns`` (numbers, or R's vector for a label column)
    and the file's text of each of them."""
    from . import rbridge

    rbridge.r(_READ)
    rbridge.assign("path__", [str(path)])
    rn = "TRUE" if row_names else "FALSE"
    rbridge.r(f"d__ <- rd__(path__, {rn}); t__ <- rd__(path__, {rn}, 'character')")
    have = set(rbridge.strings("names(d__)"))
    missing = [c for c in columns if c not in have]
    if missing:
        raise ValueError(f"{path}: R's read.csv finds no column {missing[0]!r} (its columns: "
                         f"{sorted(have)[:8]})")
    values, text = {}, {}
    for c in columns:
        rbridge.assign("col__", [c])
        kind = str(rbridge.strings("class(d__[[col__]])[1]")[0])
        if kind in ("numeric", "integer"):
            values[c] = np.asarray(rbridge.r("as.double(d__[[col__]])"), dtype=np.float64)
        elif kind == "logical":
            values[c] = np.asarray(rbridge.r("as.logical(d__[[col__]])"), dtype=bool)
        else:
            values[c] = np.asarray(rbridge.strings("as.character(d__[[col__]])"), dtype=object)
        text[c] = rbridge.strings("t__[[col__]]")
    return values, text


def _numeric(values: Dict[str, np.ndarray], col: str, path: str) -> np.ndarray:
    v = values[col]
    if v.dtype.kind == "b":
        return v.astype(np.float64)
    if v.dtype.kind != "f":
        sample = [str(s) for s in v[:3]]
        raise ValueError(f"{path}: R's read.csv reads column {col!r} as text (values such as {sample}) where pyopnb "
                         f"reads numbers: R's pipeline would not fit this column as it is")
    return v


def read_in_r(train: str, test: Optional[str], target: str, names: Sequence[str], X: np.ndarray,
              Xte: Optional[np.ndarray], labels_text: Sequence[str], row_names: Sequence[bool]) -> RParse:
    """Read the workflow's files with R's ``read.csv`` and compare R's parse with pyopnb's.

    Parameters
    ----------
    train, test : str
        The training file and the test file (or None).
    target : str
        The label column.
    names : sequence of str
        pyopnb's feature columns, in its order (``column=level`` for a
        one-hot column it made from text).
    X, Xte : ndarray
        pyopnb's matrices (Xte None without a test file).
    labels_text : sequence of str
        pyopnb's labels, as R's text of each.
    row_names : pair of bool
        Whether each file's first column is R's row names (``write.csv``).

    Returns
    -------
    RParse

    Raises
    ------
    ValueError
        A column R cannot read as pyopnb does (one line).
    """
    own = _plain_columns(train, row_names[0])
    numeric = [j for j, c in enumerate(names) if c in own]
    cols = [names[j] for j in numeric]
    diffs: List[Dict[str, Any]] = []
    count = 0
    vals, text = _read(train, row_names[0], cols + [target])
    XR = X.copy()
    for j, c in zip(numeric, cols):
        XR[:, j] = _numeric(vals, c, train)
    count += _differences(train, cols, numeric, X[:, numeric], XR[:, numeric], text, diffs)
    y = vals[target]
    y_text = [_r_text(v) for v in y]
    for i, (a, b) in enumerate(zip(labels_text, y_text)):
        if a != b:
            count += 1
            if len(diffs) < MAX_CELLS:
                diffs.append({"file": train, "row": i + 1, "column": target, "text": str(text[target][i]),
                              "pyopnb": a, "R": b})
    XteR = None
    if test is not None and Xte is not None:
        tv, tt = _read(test, row_names[1], cols)
        XteR = Xte.copy()
        for j, c in zip(numeric, cols):
            XteR[:, j] = _numeric(tv, c, test)
        count += _differences(test, cols, numeric, Xte[:, numeric], XteR[:, numeric], tt, diffs)
    files = [train] + ([test] if test is not None else [])
    return RParse(XR, XteR, y, files, diffs, count)


def _plain_columns(path: str, row_names: bool) -> set:
    """The file's own column names (a name with '=' may be the file's, not a one-hot column)."""
    import csv

    with open(path, newline="", encoding="utf-8-sig") as fh:
        header = next(csv.reader(fh), [])
    return set(header[1:] if row_names else header)


def _r_text(v: Any) -> str:
    from ..labels import level_text

    return level_text(np.asarray([v]))[0]


def _differences(path: str, cols: Sequence[str], index: Sequence[int], ours: np.ndarray, theirs: np.ndarray,
                 text: Dict[str, Any], out: List[Dict[str, Any]]) -> int:
    bits = ours.view(np.uint64) != np.ascontiguousarray(theirs).view(np.uint64)
    rows, js = np.nonzero(bits)
    for i, j in zip(rows.tolist(), js.tolist()):
        if len(out) < MAX_CELLS:
            out.append({"file": path, "row": i + 1, "column": cols[j], "j": int(index[j]),
                        "text": str(text[cols[j]][i]), "pyopnb": float(ours[i, j]), "R": float(theirs[i, j])})
    return int(bits.sum())


def training_matrix(X: np.ndarray, section: Dict[str, Any]) -> Optional[np.ndarray]:
    """R's parse of the training file rebuilt from pyopnb's and the cells a
    recording lists (None where it kept only the first :data:`MAX_CELLS`)."""
    cells = [d for d in section["differences"] if d["file"] == section["files"][0]]
    if len(section["differences"]) < section["count"]:
        return None
    XR = np.array(X, dtype=np.float64, copy=True)
    for d in cells:
        XR[d["row"] - 1, d["j"]] = d["R"]
    return XR
