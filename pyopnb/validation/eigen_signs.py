"""R's eigenvectors against pyopnb's port of reference LAPACK, measured live.

R's OPNB starts from ``eigen(cov(Xs))$vectors``; a column's sign decides
where R's binned fits go. ``pyopnb._core.eigen.r_eigen`` follows the path R's
eigen takes through reference LAPACK (dsytrd, dstemr, dormtr) operation for
operation. This script compares the two on matrices of order 1 to 100:
random covariances, covariances with the structures that make MRRR take its
other paths (zero columns split the tridiagonal matrix, repeated columns make
clusters, binary and rounded data make ties), and real data's covariances
(every PMLB set with at most 100 columns, and random column subsets of them),
each as OPNB scales it. It reports, for every column and for the leading 20,
how many have R's sign and how many are R's to the bit (and whether the
eigenvalues are R's to the bit), and counts the
columns whose eigenvalue is too close to a neighbour (relative gap under
1e-10) for any sign rule to be stable.

Run (needs R and rpy2): python -m pyopnb.validation.eigen_signs [--pmlb DIR] [--out results/eigen_signs.md]
"""
from __future__ import annotations

import argparse
import glob
import os
import sys
import time
from typing import Dict, Iterator, List, Tuple

import numpy as np

from pyopnb._validation import exact_floats

LEADING = 20
NEAR = 1e-10


def _scaled(X: np.ndarray) -> np.ndarray:
    """X centred and scaled as R's OPNB does (a constant column zeroed)."""
    from pyopnb.formulation import r_standardise

    return r_standardise(X, True)[2]


def _cov(Xs: np.ndarray) -> np.ndarray:
    from pyopnb._core import colstats

    return colstats.r_cov(np.ascontiguousarray(Xs), 1)


def synthetic(rng: np.random.Generator, count: int) -> Iterator[Tuple[str, np.ndarray]]:
    kinds = ("gaussian", "scales", "few rows", "zero columns", "repeated columns", "binary", "rounded")
    for j in range(count):
        kind = kinds[j % len(kinds)]
        d = int(rng.integers(1, 101))
        m = int(rng.integers(max(3, d // 2), 3 * d + 30)) if kind != "few rows" else int(rng.integers(3, d + 3))
        X = rng.standard_normal((m, d))
        if kind == "scales":
            X = X @ rng.standard_normal((d, d)) * rng.uniform(0.01, 100, d)
        elif kind == "zero columns" and d > 1:
            X[:, rng.choice(d, size=max(1, d // 5), replace=False)] = 3.0
        elif kind == "repeated columns" and d > 1:
            src = rng.choice(d, size=max(1, d // 4))
            X[:, rng.choice(d, size=src.size, replace=False)] = X[:, src]
        elif kind == "binary":
            X = (rng.random((m, d)) < rng.uniform(0.05, 0.5, d)).astype(float)
        elif kind == "rounded":
            X = np.round(X * 2)
        yield kind, _cov(_scaled(X))


def real(pmlb: str, rng: np.random.Generator, subsets: int) -> Iterator[Tuple[str, np.ndarray]]:
    import pandas as pd

    for path in sorted(glob.glob(os.path.join(pmlb, "*", "*.tsv.gz"))):
        df = pd.read_csv(path, sep="\t", **exact_floats())
        X = df.drop(columns=["target"]).to_numpy(dtype=float)
        if not np.all(np.isfinite(X)):
            continue
        if X.shape[0] > 20000:
            X = X[rng.choice(X.shape[0], 20000, replace=False)]
        if X.shape[1] <= 100:
            yield "real data", _cov(_scaled(X))
        for _ in range(subsets):
            k = int(rng.integers(1, min(X.shape[1], 100) + 1))
            cols = np.sort(rng.choice(X.shape[1], size=k, replace=False))
            yield "real data, column subsets", _cov(_scaled(X[:, cols]))


def r_eigen_live():
    import rpy2.robjects as ro

    fn = ro.r("function(v, n) { e <- eigen(matrix(v, n, n)); c(e$values, e$vectors) }")

    def call(A: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        n = A.shape[0]
        out = np.array(fn(ro.FloatVector(np.ravel(A, order="F")), n))
        return out[:n], out[n:].reshape((n, n), order="F")

    return call, str(ro.r("R.version.string")[0]), str(ro.r("La_version()")[0]), str(ro.r("La_library()")[0])


def measure(cases: Iterator[Tuple[str, np.ndarray]], r_call) -> Dict[str, Dict[str, int]]:
    from pyopnb._core.eigen import r_eigen

    stats: Dict[str, Dict[str, int]] = {}
    for kind, A in cases:
        s = stats.setdefault(kind, dict(matrices=0, columns=0, sign=0, bits=0, lead=0, lead_sign=0, lead_bits=0,
                                        near=0, near_sign=0, matrices_bits=0, values_bits=0, fallback=0))
        s["matrices"] += 1
        rv, rV = r_call(A)
        try:
            pv, pV = r_eigen(A)
        except ArithmeticError:
            s["fallback"] += 1
            continue
        n = A.shape[0]
        same_sign = np.sum(pV * rV, axis=0) > 0
        same_bits = np.all(pV == rV, axis=0)
        scale = max(np.max(np.abs(rv)), np.finfo(float).tiny)
        gaps = np.full(n, np.inf)
        if n > 1:
            diff = np.abs(np.diff(rv)) / scale
            gaps[:-1] = diff
            gaps[1:] = np.minimum(gaps[1:], diff)
        near = gaps < NEAR
        lead = slice(0, min(LEADING, n))
        s["columns"] += n
        s["sign"] += int(same_sign.sum())
        s["bits"] += int(same_bits.sum())
        s["lead"] += len(range(n)[lead])
        s["lead_sign"] += int(same_sign[lead].sum())
        s["lead_bits"] += int(same_bits[lead].sum())
        s["near"] += int(near.sum())
        s["near_sign"] += int(same_sign[near].sum())
        s["matrices_bits"] += int(same_bits.all())
        s["values_bits"] += int(np.array_equal(pv, rv))
    return stats


def report(stats: Dict[str, Dict[str, int]], versions: List[str], seconds: float) -> str:
    total = {k: sum(s[k] for s in stats.values()) for k in next(iter(stats.values()))}
    lines = ["# R's eigenvectors against pyopnb's port of reference LAPACK", "",
             f"Measured live by `python -m pyopnb.validation.eigen_signs` ({seconds:.0f} s): {', '.join(versions)}.", "",
             "Each matrix is a covariance of data scaled as R's OPNB scales it (`eigen(cov(Xs))`), of order 1 to "
             "100. A column is R's sign when its dot product with R's column is positive, R's bits when every "
             f"entry is identical. Leading: the first {LEADING} columns (OPNB's ndim is at most 20). Near-degenerate: "
             f"an eigenvalue within {NEAR:g} of a neighbour, relative to the largest, where no sign rule could be "
             "stable and only the same arithmetic gives R's sign.", "",
             "| matrices | count | all columns: R's sign | R's bits | leading: R's sign | R's bits | "
             "near-degenerate: R's sign | matrices: vectors R's bits | values R's bits | MRRR fallback |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for kind, s in list(stats.items()) + [("all", total)]:
        lines.append(f"| {kind} | {s['matrices']} | {s['sign']} of {s['columns']} | {s['bits']} | "
                     f"{s['lead_sign']} of {s['lead']} | {s['lead_bits']} | {s['near_sign']} of {s['near']} | "
                     f"{s['matrices_bits']} | {s['values_bits']} | {s['fallback']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pyopnb.validation.eigen_signs", description=__doc__.splitlines()[0])
    ap.add_argument("--pmlb", default=os.path.join("..", "shared", "pmlb"), help="PMLB data folder (cache layout)")
    ap.add_argument("--synthetic", type=int, default=1400, help="synthetic matrices")
    ap.add_argument("--subsets", type=int, default=4, help="random column subsets per PMLB set")
    ap.add_argument("--seed", type=int, default=20261125)
    ap.add_argument("--out", help="write the report here (Markdown)")
    args = ap.parse_args(argv)
    try:
        r_call, *versions = r_eigen_live()
    except Exception as exc:  # rpy2 missing, or R failing to start
        print(f"validation.eigen_signs needs R and rpy2: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    start = time.time()

    def cases():
        yield from synthetic(rng, args.synthetic)
        if os.path.isdir(args.pmlb):
            yield from real(args.pmlb, rng, args.subsets)

    stats = measure(cases(), r_call)
    text = report(stats, versions, time.time() - start)
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)
    total = {k: sum(s[k] for s in stats.values()) for k in ("sign", "columns")}
    return 0 if total["sign"] == total["columns"] else 1


if __name__ == "__main__":
    sys.exit(main())
