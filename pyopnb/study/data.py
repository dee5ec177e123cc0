"""PMLB data sets, read through the ``pmlb`` package, and the papers' preprocessing."""
from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np

from .._validation import exact_floats

__all__ = ["available", "load", "preprocess", "dataset_seed"]

MAX_ROWS = 3000
MIN_CLASS = 10
MAX_LEVELS = 5
JITTER = 0.01
MAX_COVARIATES = 300


def available(folder: str | Path) -> List[str]:
    """The data sets in a folder of the ``pmlb`` package's cache layout.

    Parameters
    ----------
    folder : str or Path
        A folder holding ``NAME/NAME.tsv.gz`` files.

    Returns
    -------
    list of str
        The sets' names, sorted.
    """
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"{root}: no such folder (a folder of PMLB data sets: NAME/NAME.tsv.gz)")
    return sorted(p.name for p in root.iterdir() if (p / f"{p.name}.tsv.gz").is_file())


def load(name: str, folder: str | Path) -> Tuple[Any, np.ndarray]:
    """One data set, read from a folder in the ``pmlb`` package's cache layout.

    The file is ``NAME/NAME.tsv.gz``, read as ``pmlb.fetch_data`` reads it;
    the pmlb package is not needed, and nothing is downloaded. Rows with
    missing values are dropped.

    Parameters
    ----------
    name : str
        The set's name.
    folder : str or Path
        The folder.

    Returns
    -------
    X : DataFrame
        The features.
    y : ndarray
        The labels (the ``target`` column).
    """
    import pandas as pd

    path = Path(folder) / name / f"{name}.tsv.gz"
    if not path.is_file():
        raise ValueError(f"data set {name!r} is not in {folder} (its file {path} is missing; the pmlb package "
                         f"downloads sets: pmlb.fetch_data({name!r}, local_cache_dir={str(folder)!r}))")
    df = pd.read_csv(path, sep="\t", compression="gzip", **exact_floats())
    if "target" not in df.columns:
        raise ValueError(f"{name}: no 'target' column")
    df = df.dropna()
    return df.drop(columns=["target"]), df["target"].to_numpy()


def dataset_seed(name: str, seed: int) -> int:
    """A seed per data set: the same for a name and a study seed on any
    machine (not Python's salted hash)."""
    return (zlib.crc32(name.encode()) + 1_000_003 * int(seed)) % (2 ** 32)


def preprocess(X: Any, y: np.ndarray, seed: int) -> Tuple[np.ndarray, np.ndarray, Dict[str, Any]]:
    """The papers' preprocessing (the journal paper's section 4.1).

    In order:

    1. more than 3000 rows: a stratified sample of 3000;
    2. classes with fewer than 10 rows removed;
    3. covariates with zero standard deviation removed;
    4. covariates with at most 5 distinct values one-hot encoded (G values
       give G - 1 binary columns);
    5. Gaussian noise of 1% of each covariate's sd added to it;
    6. more than 300 covariates: replaced by their first 300 principal
       components.

    Parameters
    ----------
    X : array-like of shape (n, p)
        The features.
    y : ndarray of shape (n,)
        The labels.
    seed : int
        Seeds the sample and the noise.

    Returns
    -------
    X : ndarray
        The preprocessed features.
    y : ndarray
        The labels of the rows kept.
    info : dict
        What each step did; ``info["binary"]`` lists the columns that step 4
        made (0/1 before the noise), for the methods that treat binary
        columns apart (NB, KDDA); none after step 6.
    """
    from sklearn.model_selection import train_test_split

    rng = np.random.default_rng(seed)
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    info: Dict[str, Any] = {"rows_in": int(X.shape[0]), "covariates_in": int(X.shape[1])}
    if X.shape[0] > MAX_ROWS:
        keep, _ = train_test_split(np.arange(X.shape[0]), train_size=MAX_ROWS, stratify=_strata(y),
                                   random_state=int(rng.integers(2 ** 31)))
        keep = np.sort(keep)
        X, y = X[keep], y[keep]
    labels, counts = np.unique(y, return_counts=True)
    small = labels[counts < MIN_CLASS]
    if small.size:
        keep = ~np.isin(y, small)
        X, y = X[keep], y[keep]
    info["classes_dropped"] = [str(v) for v in small]
    sd = X.std(axis=0, ddof=1) if X.shape[0] > 1 else np.zeros(X.shape[1])
    X = X[:, sd > 0]
    info["constant_dropped"] = int(np.sum(~(sd > 0)))
    parts, binary, onehot = [], [], 0
    for j in range(X.shape[1]):
        values = np.unique(X[:, j])
        if values.size <= MAX_LEVELS:
            parts.append((X[:, j][:, None] == values[None, 1:]).astype(float))
            binary += [True] * (values.size - 1)
            onehot += 1
        else:
            parts.append(X[:, [j]])
            binary.append(False)
    X = np.hstack(parts) if parts else np.empty((X.shape[0], 0))
    info["one_hot_encoded"] = onehot
    X = X + rng.normal(size=X.shape) * (JITTER * X.std(axis=0, ddof=1))
    if X.shape[1] > MAX_COVARIATES:
        Xc = X - X.mean(axis=0)
        _, _, Vt = np.linalg.svd(Xc, full_matrices=False)
        X = Xc @ Vt[:MAX_COVARIATES].T
        info["principal_components"] = MAX_COVARIATES
        binary = [False] * MAX_COVARIATES  # components mix every column
    info.update(rows=int(X.shape[0]), covariates=int(X.shape[1]), classes=int(np.unique(y).size),
                binary=[j for j, b in enumerate(binary) if b])
    if info["classes"] < 2:
        raise ValueError("fewer than two classes with at least 10 rows")
    return np.ascontiguousarray(X), y, info


def _strata(y: np.ndarray) -> np.ndarray:
    """Labels to stratify on: classes too small to split (one row) join the largest."""
    labels, counts = np.unique(y, return_counts=True)
    if counts.min() >= 2:
        return y
    big = labels[np.argmax(counts)]
    return np.where(np.isin(y, labels[counts < 2]), big, y)
