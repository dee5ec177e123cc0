"""Data sets shipped with pyopnb."""
from __future__ import annotations

import csv
from importlib import resources
from typing import NamedTuple

import numpy as np

__all__ = ["load_pima", "Dataset"]


class Dataset(NamedTuple):
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    feature_names: tuple


def load_pima() -> Dataset:
    """Pima Indians diabetes data as in R's MASS (Pima.tr: 200 rows, Pima.te: 332).

    Features: npreg, glu, bp, skin, bmi, ped, age; label ``type`` ("No"/"Yes").
    MASS is distributed under GPL-2 | GPL-3.
    """
    with resources.files("pyopnb").joinpath("data/pima.csv").open() as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    feats = tuple(header[:7])
    X = np.array([[float(v) for v in r[:7]] for r in body])
    y = np.array([r[7] for r in body])
    is_train = np.array([r[8] == "train" for r in body])
    return Dataset(X[is_train], y[is_train], X[~is_train], y[~is_train], feats)
