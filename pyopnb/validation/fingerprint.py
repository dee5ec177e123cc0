"""A fingerprint of pyopnb's results on real data: one hash of the bits of
fits, predictions and cross-validations, to compare across CPU settings.

    python -m pyopnb.validation.fingerprint            # the hash, and one per item
    python -m pyopnb.validation.fingerprint --items    # each item's hash on its own line too

pyopnb's numbers must not depend on the CPU beyond the C library's exp and
log (which R's depend on too): not on OpenBLAS's core type
(``OPENBLAS_CORETYPE``), numpy's SIMD level (``NPY_DISABLE_CPU_FEATURES``),
pyopnb's own vector path (``PYOPNB_SIMD``) or the thread count
(``PYOPNB_NUM_THREADS``). ``.ci/run`` runs this under each and requires the
same hash. The data: Pima (shipped with pyopnb), and iris, wine and breast
cancer (shipped with scikit-learn).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
import warnings
from typing import Any, Callable, Dict, List, Tuple

import numpy as np


def _bits(value: Any) -> bytes:
    """The exact bits of a result: arrays as float64 or their labels, scalars exactly."""
    if isinstance(value, dict):
        return b"".join(k.encode() + _bits(value[k]) for k in sorted(value))
    if isinstance(value, (list, tuple)):
        return b"".join(_bits(v) for v in value)
    arr = np.asarray(value)
    if arr.dtype.kind in "OUS":
        return "\x1f".join(str(v) for v in arr.ravel()).encode()
    return np.ascontiguousarray(arr, dtype=np.float64).tobytes() + str(arr.shape).encode()


def _model(m) -> Dict[str, Any]:
    return {"V": m.V, "h": m.h, "fval": m.fval, "convergence": float(m.convergence), "mu": m.mu,
            "scales": m.scales}


def items() -> List[Tuple[str, Callable[[], Any]]]:
    """(name, function returning the result) for every item fingerprinted."""
    from sklearn.datasets import load_breast_cancer, load_iris, load_wine

    from pyopnb import OPNB, OPNB_CV_lam, opnb_journal, opnb_journal_cv, predict
    from pyopnb.datasets import load_pima
    from pyopnb.estimator import OPNBClassifier
    from pyopnb.discriminant import lda_start
    from pyopnb.formulation import r_start, r_standardise
    from pyopnb.objective import f_NB_normalised, df_NB_normalised, objective_and_gradient

    pima = load_pima()
    iris, wine, cancer = load_iris(), load_wine(), load_breast_cancer()
    half = np.arange(cancer.target.size) % 2 == 0
    Xc, yc, Xc_te = cancer.data[half], cancer.target[half], cancer.data[~half]

    def fit_and_predict(m, Xte):
        return {"model": _model(m), "posterior": predict(m, Xte)["posterior"],
                "log": predict(m, Xte, log=True)["log_posterior"]}

    def objective(X=Xc, y=yc):
        _, _, Xs = r_standardise(X)
        y0 = y.astype(np.int32)
        V = np.random.default_rng(7).normal(size=(Xs.shape[1], 4))
        PI = np.bincount(y0) / y0.size
        out = {}
        for nbin in (None, 300):
            for compat in ("R", "correct"):
                out[f"{nbin}{compat}"] = objective_and_gradient(V, Xs, y0, PI, np.ones(2), nbin=nbin, compat=compat)
            h = np.array([0.4, 0.7])
            out[f"{nbin}journal"] = (f_NB_normalised(V, Xs, y0, PI, h, nbin), df_NB_normalised(V, Xs, y0, PI, h, nbin))
        return out

    def starts():
        _, _, Xs = r_standardise(cancer.data)
        return {"R": r_start(None, Xs, cancer.target + 1, 10), "LDA": lda_start(Xs, cancer.target, 2, 10)}

    def classifier():
        r = OPNBClassifier(ndim=3).fit(Xc, yc)
        j = OPNBClassifier(formulation="journal", ndim=2, gamma=0.5).fit(Xc, yc)
        return {"R": (r.predict_proba(Xc_te), r.transform(Xc_te)), "journal": (j.predict_proba(Xc_te), j.transform(Xc_te))}

    def objective_in_blocks():
        # more rows than one block (pyopnb/_core/blocks.h): breast cancer 500 times, copy k scaled by 1 + k 1e-4
        copies = 500
        scale = 1.0 + 1e-4 * np.repeat(np.arange(copies), Xc.shape[0])[:, None]
        return objective(np.tile(Xc, (copies, 1)) * scale, np.tile(yc, copies))

    eye = np.eye(iris.data.shape[1]) + 0.1
    return [
        ("starts: eigen(cov) and LDA, breast cancer", starts),
        ("objective and gradient, breast cancer", objective),
        ("objective and gradient, 142,000 rows in three blocks", objective_in_blocks),
        ("OPNB binned, Pima", lambda: fit_and_predict(OPNB(pima.X_train, pima.y_train, ndim=3), pima.X_test)),
        ("OPNB exact, wine", lambda: fit_and_predict(OPNB(wine.data, wine.target, ndim=4, nbin=None), wine.data)),
        ("OPNB binned, breast cancer", lambda: fit_and_predict(OPNB(Xc, yc, ndim=5), Xc_te)),
        ("OPNB with C, iris", lambda: fit_and_predict(OPNB(iris.data, iris.target, ndim=2, lam=1e-2,
                                                             C=lambda X, y: eye), iris.data)),
        ("opnb_journal binned, wine", lambda: fit_and_predict(opnb_journal(wine.data, wine.target, ndim=3), wine.data)),
        ("opnb_journal exact, breast cancer", lambda: fit_and_predict(opnb_journal(Xc, yc, ndim=2, nbin=None), Xc_te)),
        ("opnb_journal prescaled, iris", lambda: fit_and_predict(opnb_journal(iris.data, iris.target, ndim=2,
                                                                             prescale=True), iris.data)),
        ("OPNB_CV_lam, Pima", lambda: (lambda cv: {"stats": cv["cv_stats"], "model": _model(cv["model"])})(
            OPNB_CV_lam(pima.X_train, pima.y_train, 3, nlam=3, ndim=2))),
        ("opnb_journal_cv, iris", lambda: (lambda cv: {"stats": cv["cv_stats"], "model": _model(cv["model"])})(
            opnb_journal_cv(iris.data, iris.target, 3, gamma=[0.5, 1.0], ndim=[1, 2]))),
        ("OPNBClassifier, breast cancer", classifier),
    ]


def fingerprint() -> Tuple[str, List[Tuple[str, str]]]:
    """(the overall hash, [(item, its hash)])."""
    total = hashlib.sha256()
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence notes: the numbers are what is compared
        for name, fn in items():
            b = _bits(fn())
            total.update(name.encode() + b)
            rows.append((name, hashlib.sha256(b).hexdigest()[:16]))
    return total.hexdigest(), rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pyopnb.validation.fingerprint", description=__doc__.splitlines()[0])
    ap.add_argument("--items", action="store_true", help="print each item's hash too")
    args = ap.parse_args(argv)
    from pyopnb import _threads
    from pyopnb._core import simd as _simd

    digest, rows = fingerprint()
    settings = {k: os.environ.get(k, "") for k in ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES", "PYOPNB_SIMD")}
    print(f"settings {settings} threads {_threads.resolve()} vector path {_simd.simd()}", file=sys.stderr)
    if args.items:
        for name, h in rows:
            print(f"item {h} {name}")
    print(f"fingerprint {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
