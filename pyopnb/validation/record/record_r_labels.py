"""Record what R does with labels and R's eigen, for the checks without R.

Writes validation/fixtures/r_labels.json and validation/fixtures/r_eigen.json,
validation/models/iris_int_labels.rds (R's OPNB on iris with integer
labels 1, 2, 3, saved with saveRDS) and validation/models/iris_unused_level.rds
(R's OPNB on a factor whose last level has no rows). Needs R with OPNB and
rpy2.
Run: python -m pyopnb.validation.record.record_r_labels
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np

from pyopnb.validation.fixtures import FIXTURES

DOUBLES = [0.0, 1.0, -1.0, 0.5, 2.5, -2.5, 1 / 3, 2 / 3, 0.1, 0.2, 0.3, 0.1 + 0.2, 1e-3, 1e-4, 1.5e-4, 100.0,
           1e5, 1e5 + 1, 123456.0, 1234567.1, 1e15, 1e16, 123456789012.0, 3.14159265358979, 2 ** 52, 2 ** 60,
           7e-10, 1e300, -1e-300, 0.000123456, 99999.0, 100000.5, 1e-5]


def words(seed: int, count: int):
    rng = random.Random(seed)
    chars = [chr(i) for i in range(32, 127)] + list("éèêëàâäôöüçñÉÈÀÇÑßøåæœÅØÆ")
    out = set()
    while len(out) < count:
        out.add("".join(rng.choice(chars) for _ in range(rng.randint(1, 5))))
    return sorted(out)


KINDS = ("random", "zero columns", "repeated column", "binary", "rounded")


def eigen_cases(count: int = 30, max_order: int = 25):
    """Data whose covariances take every path MRRR treats apart: random,
    zero columns (splits), a repeated column (clusters), binary and rounded
    data (ties); (kind, X) pairs."""
    rng = np.random.default_rng(20261125)
    cases = []
    for j in range(count):
        d = int(rng.integers(1, max_order + 1))
        X = rng.normal(size=(int(rng.integers(d + 2, 3 * d + 10)), d)) * rng.uniform(0.1, 10, d)
        kind = j % 5
        if kind == 1 and d > 1:
            X[:, rng.choice(d, max(1, d // 5), replace=False)] = 1.0
        elif kind == 2 and d > 1:
            X[:, 0] = X[:, d - 1]
        elif kind == 3:
            X = (X > 0.8).astype(float)
        elif kind == 4:
            X = np.round(X)
        cases.append((KINDS[kind], X))
    return cases


def main() -> None:
    import rpy2.robjects as ro

    from pyopnb.validation import rbridge

    rbridge.load_packages("OPNB")
    out = {"R": str(ro.r("R.version.string")[0]), "collation": str(ro.r('Sys.getlocale("LC_COLLATE")')[0]),
           "icu": str(ro.r("icuGetCollate()")[0])}
    out["doubles"] = DOUBLES
    out["as_character"] = list(ro.r["as.character"](ro.FloatVector(DOUBLES)))
    w = words(7, 2000)
    out["words"] = w
    out["levels"] = list(ro.r("function(x) levels(as.factor(x))")(ro.StrVector(w)))
    # an R model on integer labels, saved as R saves it
    models = Path(FIXTURES).parent / "models"
    path = (models / "iris_int_labels.rds").as_posix()
    ro.r(f"""X <- as.matrix(iris[, 1:4]); y <- as.integer(iris$Species)
             set.seed(3); te <- sample(150, 30)
             m <- OPNB(X[-te, ], y[-te], ndim = 2, nbin = NULL)
             saveRDS(m, "{path}")
             p <- predict(m, X[te, ])""")
    out["int_model"] = {"file": "iris_int_labels.rds", "test_rows": [int(v) - 1 for v in ro.r("te")],
                        "class": list(ro.r("as.character(p$class)")), "y_test": [int(v) for v in ro.r("y[te]")]}
    # numbers become classes through their 15-digit text
    merged = [0.1 + 0.2, 0.3, 0.7, 1 / 3, 0.333333333333333, 1.0, 1 + 2 ** -52, 2 ** 53, 2 ** 53 + 2]
    out["merged_numbers"] = {"values": merged,
                             "levels": list(ro.r("function(x) levels(as.factor(x))")(ro.FloatVector(merged))),
                             "codes": [int(v) for v in ro.r("function(x) as.integer(as.factor(x))")(
                                 ro.FloatVector(merged))]}
    # a factor whose last level has no rows (R keeps it in ynames, beyond nc), and one with an empty middle level
    path = (models / "iris_unused_level.rds").as_posix()
    ro.r(f"""X <- as.matrix(iris[1:100, 1:4]); y <- iris$Species[1:100]
             m <- OPNB(X, y, ndim = 2)
             saveRDS(m, "{path}")
             p <- predict(m, as.matrix(iris[c(1, 60, 120), 1:4]))""")
    out["unused_level_model"] = {"file": "iris_unused_level.rds", "rows": [0, 59, 119],
                                 "ynames": list(ro.r("m$ynames")), "nc": int(ro.r("m$nc")[0]),
                                 "posterior": np.asarray(ro.r("p$posterior")).reshape(3, 2, order="F").tolist(),
                                 "class": list(ro.r("as.character(p$class)"))}
    out["unused_middle_level"] = str(ro.r("""function() {
        y <- factor(as.character(iris$Species[c(1:50, 101:150)]), levels = levels(iris$Species))
        r <- try(suppressWarnings(OPNB(as.matrix(iris[c(1:50, 101:150), 1:4]), y, ndim = 2)), silent = TRUE)
        if (inherits(r, "try-error")) conditionMessage(attr(r, "condition")) else "no error"
    }""")()[0])
    (Path(FIXTURES) / "r_labels.json").write_text(json.dumps(out, indent=1, ensure_ascii=False))
    eig = {"R": out["R"], "lapack": str(ro.r("La_version()")[0]), "cases": []}
    for _, X in eigen_cases():
        rbridge.assign("X__", X)
        A = np.asarray(rbridge.r("cov(X__)")).reshape(X.shape[1], X.shape[1])
        rbridge.assign("A__", A)
        V = np.asarray(rbridge.r("eigen(A__)$vectors")).reshape(A.shape)
        eig["cases"].append({"A": A.tolist(), "vectors": V.tolist()})
    (Path(FIXTURES) / "r_eigen.json").write_text(json.dumps(eig))
    print("wrote r_labels.json, r_eigen.json, models/iris_int_labels.rds and models/iris_unused_level.rds")


if __name__ == "__main__":
    main()
