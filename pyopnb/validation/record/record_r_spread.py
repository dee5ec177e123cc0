"""Record R's own spread on the fit and CV fixtures: how far R's OPNB moves
when the data move by an ulp.

R's fits turn the last bits of their data into differences in fval, V and
the posteriors (line searches that stop one evaluation sooner, bins an ulp
away), so the C library's exp and log, whose FMA and non-FMA variants differ
in rare last bits, move R's own results from one machine to another. A
tolerance for comparing with R's recorded outputs is justified by that
spread. This reruns R's OPNB (and OPNB_CV_lam) on X * (1 + 1e-15 u), u
uniform on [-1, 1] (columns that do not vary left as they are, as a
perturbation would otherwise create variation), for four seeds, from R's
recorded starts, and writes validation/fixtures/r_spread.json.

Needs R with the OPNB package (R_LIBS), and rpy2.
Run: python -m pyopnb.validation.record.record_r_spread
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from pyopnb.validation.fixtures import FIXTURES, SEEDS, arr, column_signs, fit_call, load, names, perturbed, r_starts

def _r_args(kw) -> str:
    from pyopnb.validation import rbridge

    args = []
    for k in ("ndim", "lam", "scale", "nbin"):
        if k in kw:
            v = kw[k]
            args.append(f"{k} = " + ("NULL" if v is None else {True: "TRUE", False: "FALSE"}.get(v, repr(v))))
    if "C" in kw:
        rbridge.assign("Cm__", kw["C"](None, None))
        args.append("C = function(X, y) Cm__")
    return ", ".join(args)


def r_fit(X, y, kw, V0, Xte):
    from pyopnb.validation import rbridge

    rbridge.assign("X__", X)
    rbridge.assign("y__", np.asarray([str(v) for v in y], dtype=object))
    rbridge.assign("Xte__", Xte)
    rbridge.assign("V0__", V0)
    rbridge.r(f"m__ <- OPNB(X__, y__, {_r_args(kw)}, V0 = function(X, y, ndim) V0__); p__ <- predict(m__, Xte__)")
    get = lambda code: np.asarray(rbridge.r(code))  # noqa: E731
    return float(get("m__$fval").ravel()[0]), get("m__$V"), get("p__$posterior")


def fit_spread(name: str) -> dict:
    X, y, kw, ref, i = fit_call(name)
    V0 = kw.pop("V0")
    V0 = V0(None, None, None) if callable(V0) else V0
    Xte = arr(i["Xte"])
    f0, Vr, P0 = r_fit(X, y, kw, V0, Xte)
    df, dV, dP = [0.0], [0.0], [0.0]
    for seed in SEEDS:
        f, V, P = r_fit(perturbed(X, seed), y, kw, V0, Xte)
        df.append(abs(f - f0) / abs(f0))
        dV.append(float(np.abs(V * column_signs(V, Vr) - Vr).max()))
        dP.append(float(np.abs(P - P0).max()))
    return {"fval_rel": max(df), "V_abs": max(dV), "posterior_abs": max(dP), "rerun_equals_recorded": f0 == ref["fval"]}


def cv_spread() -> dict:
    from pyopnb.validation import rbridge

    fx = load("cv_pima")
    i = fx["inputs"]
    X = arr(i["X"])
    folds = [np.asarray(f) - 1 for f in i["folds"]]  # recorded 1-based, as R takes them
    starts = [arr(v) for v in r_starts()["cv_pima"]]
    rbridge.assign("y__", np.asarray([str(v) for v in i["y"]], dtype=object))
    rbridge.assign_folds("folds__", folds)
    rbridge.r("starts__ <- list()")
    for k, S in enumerate(starts):
        rbridge.assign("s__", S)
        rbridge.r(f"starts__[[{k + 1}]] <- s__")
    # R's recorded start of each training set, found by its size and row order
    rbridge.r("""V0__ <- function(X, y, ndim) {
        sets <- c(lapply(seq_along(folds__), function(j) unlist(folds__[-j])), list(unlist(folds__)))
        for (k in seq_along(sets)) if (length(sets[[k]]) == nrow(X) &&
            isTRUE(all.equal(y, as.numeric(as.factor(y__))[sets[[k]]]))) return(starts__[[k]][, 1:ndim, drop = FALSE])
        stop("no recorded start for this training set") }""")

    def run(Xp):
        rbridge.assign("X__", Xp)
        rbridge.r(f"cv__ <- OPNB_CV_lam(X__, y__, folds__, nlam = {i['nlam']}, ndim = {i['ndim']}, V0 = V0__)")
        return np.asarray(rbridge.r("cv__$cv_stats"))[:, 1], float(np.asarray(rbridge.r("cv__$model$fval")).ravel()[0])

    acc0, f0 = run(X)
    dacc, df = [0.0], [0.0]
    for seed in SEEDS:
        acc, f = run(perturbed(X, seed))
        dacc.append(float(np.abs(acc - acc0).max()))
        df.append(abs(f - f0) / abs(f0))
    return {"accuracy_abs": max(dacc), "refit_fval_rel": max(df),
            "rerun_equals_recorded": bool(np.array_equal(acc0, arr(fx["outputs"]["cv_stats"])[:, 1]))}


def main() -> None:
    from pyopnb.validation import rbridge

    rbridge.load_packages("OPNB")
    out = {"R": str(np.asarray(rbridge.strings("R.version.string"))[0]),
           "perturbation": "X * (1 + 1e-15 u), u ~ U(-1, 1), in the columns that vary; seeds " + str(list(SEEDS)),
           "fits": {name: fit_spread(name) for name in names("fit_")}, "cv_pima": cv_spread()}
    path = Path(FIXTURES) / "r_spread.json"
    path.write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
