"""Record where R OPNB 1.0's gradient sums are not finite, and a fit R kept at its start.

Writes validation/fixtures/r_failures.json:

- ``cases``: random one-column problems, two or three classes in clusters
  200 to 1200 bandwidths apart (bandwidth 1, V = 1), and whether R's
  exact (df_NB_exact) and binned (df_NB_cpp, 1000 bins) gradients and
  values are finite there;
- ``house_votes``: mlbench's HouseVotes84 (rows without NA, votes as 0/1),
  R's 10 folds after ``set.seed(2)``, and R's OPNB_CV_lam over 4 values of
  lam, where the fit of fold 8 at lam 4e-4 keeps its start.

Needs R with OPNB, mlbench and rpy2.
Run: python -m pyopnb.validation.record.record_r_failures
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from pyopnb.validation.fixtures import FIXTURES

_CASES = """
set.seed(42)
out <- list()
for (r in 1:400) {
  K <- sample(2:3, 1); nc <- sample(2:4, 1)
  centers <- cumsum(c(0, runif(nc - 1, 200, 1200)))
  x <- c(); y <- c()
  for (c in 1:nc) { m <- sample(1:6, 1); x <- c(x, centers[c] + runif(m, 0, 3))
                    y <- c(y, sample(0:(K - 1), m, replace = TRUE)) }
  if (length(unique(y)) < K) next
  PI <- as.numeric(table(factor(y, levels = 0:(K - 1)))) / length(y); h <- rep(1, K)
  V <- matrix(1, 1, 1); X <- matrix(x, ncol = 1)
  out[[length(out) + 1]] <- list(x = x, y = y,
    exact_gradient = all(is.finite(OPNB:::df_NB_exact(V, X, y, PI, h))),
    binned_gradient = all(is.finite(OPNB:::df_NB_cpp(V, X, y, PI, h, 1000))),
    exact_value = is.finite(OPNB:::f_NB_exact(V, X, y, PI, h)),
    binned_value = is.finite(OPNB:::f_NB_cpp(V, X, y, PI, h, 1000)))
}
out
"""

_VOTES = """
data(HouseVotes84, package = "mlbench"); d <- na.omit(HouseVotes84)
X__ <- sapply(d[, -1], function(v) as.numeric(v == "y")); y__ <- as.character(d$Class)
set.seed(2); n <- nrow(X__); folds__ <- split(sample(n), rep(1:10, length.out = n))
kept__ <- character(0)
cv__ <- withCallingHandlers(OPNB_CV_lam(X__, factor(y__), folds__, nlam = 4, lam0 = 1e-4),
  warning = function(w) { kept__ <<- c(kept__, conditionMessage(w)); invokeRestart("muffleWarning") })
te__ <- folds__[[8]]; tr__ <- unlist(folds__[-8])
fold8__ <- suppressWarnings(OPNB(X__[tr__, ], factor(y__[tr__]), lam = 4e-4))
"""


def main() -> None:
    import rpy2.robjects as ro

    from pyopnb.validation import rbridge

    rbridge.load_packages("OPNB")
    cases = []
    for c in ro.r(_CASES):
        get = dict(zip(c.names, c))
        cases.append({"x": [float(v) for v in get["x"]], "y": [int(v) for v in get["y"]],
                      **{k: bool(get[k][0]) for k in ("exact_gradient", "binned_gradient", "exact_value",
                                                      "binned_value")}})
    ro.r(_VOTES)
    votes = {"X": np.asarray(ro.r("X__")).astype(int).tolist(), "y": list(ro.r("y__")),
             "folds": [[int(v) - 1 for v in f] for f in ro.r("folds__")],
             "cv_stats": np.asarray(ro.r("cv__$cv_stats")).tolist(),
             "warnings": list(ro.r("kept__")),
             "fold8_lam4e-4_fval": float(ro.r("fold8__$fval")[0]),
             "fold8_lam4e-4_V": np.asarray(ro.r("fold8__$V")).tolist()}
    out = {"R": str(ro.r("R.version.string")[0]), "cases": cases, "house_votes": votes}
    (Path(FIXTURES) / "r_failures.json").write_text(json.dumps(out, separators=(",", ":")))
    print(f"wrote r_failures.json: {len(cases)} cases")


if __name__ == "__main__":
    main()
