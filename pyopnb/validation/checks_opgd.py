"""pyopnb's OPGD against its authors' R package (DavidHofmeyr/OPGD), live.

The package exports ``OPGD`` and ``predict.OPGD``; its objective and
gradient (``fnb_G_2``, ``dfnb_G_2``) are reached with ``:::``. The R code
below only builds inputs the way ``OPGD`` builds them (class means,
covariances, priors, its start) so that each piece can be compared alone.
"""
from __future__ import annotations

from typing import Dict, List

import numpy as np

from pyopnb.comparators import OPGD
from pyopnb.comparators._opgd import class_covariances, opgd_objective, opgd_start
from pyopnb.validation import rbridge
from pyopnb.validation.checks import LIVE, check, compare, identical
from pyopnb.validation.fixtures import column_signs

# the objective and gradient are the same sums in another order
_OBJ_REL = 1e-10
# a fit from the same start, where L-BFGS-B's path does not turn last bits
# into differences; elsewhere R's own spread sets the tolerance
_FIT_FLOOR = {"fval_rel": 1e-12, "V_abs": 1e-10, "posterior_abs": 1e-10}
_SPREAD_FACTOR = 10

# what OPGD computes before it optimises, for the given X__, y__ and lambda
_R_INPUTS = """
yy__ <- as.numeric(as.factor(y__)); nc__ <- max(yy__); n__ <- nrow(X__); d__ <- ncol(X__)
PI__ <- sapply(1:nc__, function(k) sum(yy__ == k)) / n__
MU__ <- t(sapply(1:nc__, function(k) colMeans(X__[which(yy__ == k), , drop = FALSE])))
M__ <- sapply(1:nc__, function(k) yy__ == k) %*% MU__
S__ <- lapply(1:nc__, function(k) (1 - lam__) * cov(X__[which(yy__ == k), ]) + lam__ * cov(X__ - M__))
Sw__ <- cov(X__ - M__); Sb__ <- cov(X__) - Sw__
E__ <- eigen(solve(Sw__ + diag(d__) * 1e-5) %*% Sb__ + cov(X__) * 1e-5)$vectors
"""


def _problems(seed: int, count: int):
    """Gaussian classes with their own covariances; every class at least p + 2 rows."""
    rng = np.random.default_rng(seed)
    for j in range(count):
        p, K = int(rng.integers(2, 7)), int(rng.integers(2, 5))
        n = int(rng.integers(40, 300))
        y = rng.choice(K, size=n, p=rng.dirichlet(np.ones(K) * 4))
        y[: K * (p + 2)] = np.repeat(np.arange(K), p + 2)
        A = rng.normal(size=(K, p, p)) * rng.uniform(0.2, 2.0, size=(K, 1, p))
        X = np.einsum("ij,ijk->ik", rng.normal(size=(n, p)), A[y]) + 1.5 * rng.normal(size=(K, p))[y]
        ndim = int(rng.integers(1, p + 1))
        lam = float(rng.choice([0.0, 0.0, 0.3]))
        yield j, X, y, ndim, lam, rng


def _cases(seed: int, count: int):
    """_problems with R's inputs built for each (R's start must be real: a
    complex one, which R's optim refuses, skips the case)."""
    for j, X, y, ndim, lam, rng in _problems(seed, count):
        labels = np.array([f"c{v}" for v in y], dtype=object)
        _r_setup(X, labels, lam)
        if not np.iscomplexobj(np.asarray(rbridge.r("E__"))):
            yield j, X, y, labels, ndim, lam, rng


def _r_setup(X: np.ndarray, labels: np.ndarray, lam: float) -> None:
    rbridge.load_packages("OPGD")
    rbridge.assign("X__", X)
    rbridge.assign("y__", labels)
    rbridge.r(f"lam__ <- {lam!r}")
    rbridge.r(_R_INPUTS)


def _get(code: str) -> np.ndarray:
    return np.asarray(rbridge.r(code), dtype=float)


def _r_fit(ndim: int, Xte: np.ndarray) -> Dict:
    """R's fit from its own start (the package's OPGD; with one column the
    package cannot order columns, so its optim call alone, which is all OPGD
    does for one column), and predict.OPGD on Xte."""
    rbridge.assign("Xte__", Xte)
    rbridge.r(f"V0__ <- E__[, 1:{ndim}, drop = FALSE]")
    if ndim >= 2:
        rbridge.r("s__ <- OPGD(X__, y__, V0 = V0__, lambda = lam__)")
    else:
        rbridge.r("V__ <- matrix(optim(V0__, OPGD:::fnb_G_2, OPGD:::dfnb_G_2, t(X__), yy__, MU__, S__, PI__, n__, "
                  "method = 'L-BFGS-B', control = list(fnscale = -1))$par, ncol = 1); "
                  "s__ <- list(V = V__, X = X__, y = yy__, MU = MU__, S = S__, PI = PI__, nc = nc__); "
                  "class(s__) <- 'OPGD'")
    rbridge.r("p__ <- OPGD:::predict.OPGD(s__, Xte__)")
    return {"V0": _get("V0__"), "V": _get("matrix(s__$V, nrow = d__)"), "posterior": _get("p__$posterior"),
            "class": _get("p__$class").astype(int) - 1,
            "fval": float(_get("OPGD:::fnb_G_2(s__$V, t(X__), yy__, MU__, S__, PI__, n__)").ravel()[0])}


@check("live/OPGD: inputs, start, objective and gradient against the authors' package", LIVE, r_packages=("OPGD",))
def _live_opgd_pieces() -> List:
    out = []
    for j, X, y, labels, ndim, lam, rng in _cases(41, 6):
        K = int(y.max()) + 1
        what = f"problem{j} n={X.shape[0]} p={X.shape[1]} K={K} lam={lam:g}"
        means, covs = class_covariances(X, y, K, lam)
        out.append(compare(f"{what}: class means", LIVE, means, _get("MU__"), 1e-14, 1e-15))
        out.append(compare(f"{what}: class covariances", LIVE, covs,
                           np.array([_get(f"S__[[{k + 1}]]") for k in range(K)]), 1e-12, 1e-14))
        start = opgd_start(X, y, K, X.shape[1])
        ref = _get("E__")
        out.append(compare(f"{what}: start (column signs are LAPACK's)", LIVE, start * column_signs(start, ref),
                           ref, 1e-8, 1e-10))
        V = rng.normal(size=(X.shape[1], ndim))
        rbridge.assign("V__", V)
        f_r = float(_get("OPGD:::fnb_G_2(V__, t(X__), yy__, MU__, S__, PI__, n__)").ravel()[0])
        g_r = _get("OPGD:::dfnb_G_2(V__, t(X__), yy__, MU__, S__, PI__, n__)")
        f, g = opgd_objective(V, X, y, np.log(np.bincount(y) / y.size), means, covs)
        out.append(compare(f"{what}: fnb_G_2 at a random V", LIVE, f, f_r, _OBJ_REL, 0))
        out.append(compare(f"{what}: dfnb_G_2 at a random V", LIVE, g, g_r.reshape(g.shape), _OBJ_REL,
                           _OBJ_REL * float(np.abs(g_r).max())))
    return out


@check("live/OPGD: fits from R's start and predictions against the authors' package", LIVE, r_packages=("OPGD",))
def _live_opgd_fits() -> List:
    out = []
    for j, X, y, labels, ndim, lam, rng in _cases(43, 8):
        Xte = X[rng.permutation(X.shape[0])[:40]] + rng.normal(scale=0.2, size=(40, X.shape[1]))
        ref = _r_fit(ndim, Xte)
        est = OPGD(ndim=ndim, V0=ref["V0"], lam=lam).fit(X, labels)
        what = f"fit{j} n={X.shape[0]} p={X.shape[1]} K={int(y.max()) + 1} ndim={ndim} lam={lam:g}"
        results = _fit_results(what, est, ref, Xte, _FIT_FLOOR, "")
        if not all(r.ok for r in results):
            spread = _r_spread(X, labels, lam, ndim, Xte, ref)
            tol = {k: max(v, _SPREAD_FACTOR * spread[k]) for k, v in _FIT_FLOOR.items()}
            note = (f"R's own fit moves by fval {spread['fval_rel']:.1e} (relative), V {spread['V_abs']:.1e}, "
                    f"posteriors {spread['posterior_abs']:.1e} when X moves by 1e-15; its objective is flat there")
            results = _fit_results(what, est, ref, Xte, tol, note)
        out += results
    return out


def _fit_results(what: str, est: OPGD, ref: Dict, Xte: np.ndarray, tol: Dict[str, float], note: str) -> List:
    return [compare(f"{what}: objective", LIVE, est.objective_, ref["fval"], tol["fval_rel"], 0, note),
            compare(f"{what}: V", LIVE, est.V_, ref["V"], 0, tol["V_abs"], note),
            compare(f"{what}: posteriors", LIVE, est.predict_proba(Xte), ref["posterior"], 0, tol["posterior_abs"],
                    note),
            identical(f"{what}: classes", LIVE, list(est.predict(Xte)), [f"c{v}" for v in ref["class"]])]


def _r_spread(X: np.ndarray, labels: np.ndarray, lam: float, ndim: int, Xte: np.ndarray, ref: Dict) -> Dict:
    """R's own spread: its fits on X * (1 + 1e-15 u) (the recorder's
    perturbation and seeds) from the same start, against its fit on X."""
    from pyopnb.validation.fixtures import SEEDS, perturbed

    fv, dV, dP = [0.0], [0.0], [0.0]
    for seed in SEEDS:
        _r_setup(perturbed(X, seed), labels, lam)
        rbridge.assign("E__", ref["V0"])
        alt = _r_fit(ndim, Xte)
        fv.append(abs(alt["fval"] - ref["fval"]) / abs(ref["fval"]))
        dV.append(float(np.abs(alt["V"] - ref["V"]).max()))
        dP.append(float(np.abs(alt["posterior"] - ref["posterior"]).max()))
    return {"fval_rel": max(fv), "V_abs": max(dV), "posterior_abs": max(dP)}
