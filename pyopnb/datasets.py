"""Data sets shipped with pyopnb."""
from __future__ import annotations

import csv
from importlib import resources
from typing import NamedTuple

import numpy as np

__all__ = ["load_pima", "write_pima_csv", "Dataset"]


class Dataset(NamedTuple):
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    feature_names: tuple


def load_pima() -> Dataset:
    """The Pima Indians diabetes data as in R's MASS: ``Pima.tr`` (200 rows) and ``Pima.te`` (332).

    The features are npreg, glu, bp, skin, bmi, ped and age; the label is
    ``type`` ("No" or "Yes"). MASS is distributed under GPL-2 | GPL-3.

    Returns
    -------
    Dataset
        ``X_train``, ``y_train`` (Pima.tr), ``X_test``, ``y_test`` (Pima.te)
        and ``feature_names``.

    Examples
    --------
    >>> from pyopnb.datasets import load_pima
    >>> d = load_pima()
    >>> d.X_train.shape, d.X_test.shape
    ((200, 7), (332, 7))
    """
    with resources.files("pyopnb").joinpath("data/pima.csv").open() as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    feats = tuple(header[:7])
    X = np.array([[float(v) for v in r[:7]] for r in body])
    y = np.array([r[7] for r in body])
    is_train = np.array([r[8] == "train" for r in body])
    return Dataset(X[is_train], y[is_train], X[~is_train], y[~is_train], feats)


def write_pima_csv(folder) -> tuple:
    """Write Pima as the command line reads data: pima_train.csv and
    pima_test.csv in ``folder``, a header row, the label column ``type``.
    A file already there is left alone if it holds the same data, and is an
    error otherwise (nothing is written over). Returns the two paths."""
    from pathlib import Path

    d = load_pima()
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"{root}: no such folder")
    out = []
    for name, X, y in (("pima_train.csv", d.X_train, d.y_train), ("pima_test.csv", d.X_test, d.y_test)):
        rows = [",".join(d.feature_names + ("type",))]
        rows += [",".join([repr(float(v)) for v in x] + [str(lab)]) for x, lab in zip(X, y)]
        text = "\n".join(rows) + "\n"
        path = root / name
        if path.exists():
            if path.read_text() != text:
                raise ValueError(f"{path} exists and holds other data: remove it or choose another folder")
        else:
            path.write_text(text)
        out.append(path)
    return tuple(out)
