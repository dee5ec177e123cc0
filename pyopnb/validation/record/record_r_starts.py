"""Record R's start projections (eigen(cov(Xs))$vectors) for the fit fixtures.

Needs R and rpy2 (no R package beyond base R). Writes
validation/fixtures/r_eigen_starts.json. R's eigenvector signs are its
LAPACK's choice; R's binned objective is not symmetric under a column's sign
flip, so reproducing a binned R fit needs R's own start.
Run: python -m pyopnb.validation.record.record_r_starts
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from pyopnb.validation.fixtures import FIXTURES, arr, load, names


def main() -> None:
    import rpy2.robjects as ro
    from rpy2.robjects import numpy2ri
    from rpy2.robjects.conversion import localconverter

    out = {"R": str(ro.r("R.version.string")[0]), "lapack": str(ro.r("La_version()")[0]), "starts": {}}
    for name in names("fit_"):
        fx = load(name)
        args = fx["inputs"]["args"] or {}
        X = arr(fx["inputs"]["X"])
        ndim = args.get("ndim", min(X.shape[1], 20))
        scale = args.get("scale", True)
        with localconverter(ro.default_converter + numpy2ri.converter):
            ro.globalenv["X"] = X
            V = np.array(ro.r(
                f"""Xc <- sweep(X, 2, colMeans(X)); s <- apply(Xc, 2, sd)
                    m <- if ({'TRUE' if scale else 'FALSE'}) ifelse(s < 1e-20, 0, 1 / s) else rep(1, ncol(X))
                    eigen(cov(sweep(Xc, 2, m, "*")))$vectors[, 1:{ndim}, drop = FALSE]"""))
        out["starts"][name] = V.tolist()
    # OPNB_CV_lam fits each fold's complement, then the union of the folds
    fx = load("cv_pima")
    X = arr(fx["inputs"]["X"])
    folds = [np.asarray(f) - 1 for f in fx["inputs"]["folds"]]
    sets = [np.concatenate([f for i, f in enumerate(folds) if i != j]) for j in range(len(folds))]
    sets.append(np.concatenate(folds))
    cv_starts = []
    for rows in sets:
        with localconverter(ro.default_converter + numpy2ri.converter):
            ro.globalenv["X"] = X[rows]
            V = np.array(ro.r(
                f"""Xc <- sweep(X, 2, colMeans(X)); s <- apply(Xc, 2, sd)
                    eigen(cov(sweep(Xc, 2, ifelse(s < 1e-20, 0, 1 / s), "*")))$vectors[, 1:{fx["inputs"]["ndim"]}, drop = FALSE]"""))
        cv_starts.append(V.tolist())
    out["cv_pima"] = cv_starts
    path = Path(FIXTURES) / "r_eigen_starts.json"
    path.write_text(json.dumps(out, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
