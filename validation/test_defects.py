"""Recorded checks that are more than a comparison: R's defects, and what fixes them."""
import numpy as np
import pytest
from scipy.special import logsumexp

from pyopnb import OPNB, predict
from pyopnb.formulation import r_colmeans, r_sd
from pyopnb.objective import f_NB_exact
from pyopnb.validation.fixtures import arr, column_signs, fit_call, fit_tolerance, load, model_from_fixture, names, r_spread


@pytest.mark.parametrize("name", [n for n in names("fit_") if (load(n)["inputs"]["args"] or {}).get("nbin", 1) is None])
def test_exact_fit_needs_no_R_start(name):
    # the exact objective is symmetric under column sign flips: our own eigen start ends where R's does
    X, y, kw, out, _ = fit_call(name, use_r_start=False)
    m = OPNB(X, y, **kw)
    tol = fit_tolerance(r_spread()["fits"][name])
    assert m.fval == pytest.approx(out["fval"], rel=tol["fval_rel"])
    assert np.max(np.abs(m.V * column_signs(m.V, arr(out["V"])) - arr(out["V"]))) <= tol["V_abs"]


def test_centring_and_scaling_are_Rs_to_the_bit():
    for name in names("fit_"):
        fx = load(name)
        X = arr(fx["inputs"]["X"])
        mu = r_colmeans(X)
        np.testing.assert_array_equal(mu, arr(fx["outputs"]["mu"]))
        if (fx["inputs"]["args"] or {}).get("scale", True):
            sd = r_sd(X - mu)
            expect = arr(fx["outputs"]["scales"])
            got = np.where(sd < 1e-20, 0.0, 1.0 / np.where(sd < 1e-20, 1.0, sd))
            np.testing.assert_allclose(got, expect, rtol=2.3e-16, atol=0)


def _log_class_densities_naive(m, Xte):
    """log f_k(z) by log-sum-exp over every kernel term: no underflow anywhere."""
    ptr = (m.X - m.mu) @ m.V
    pte = (Xte - m.mu) @ m.V
    out = np.zeros((Xte.shape[0], m.nc))
    for k in range(m.nc):
        pk = ptr[m.y == k + 1]
        for t in range(m.V.shape[1]):
            h = m.h[k, t]
            u = np.abs(pte[:, t][:, None] - pk[:, t][None, :]) / h
            out[:, k] += logsumexp(np.log1p(u) - u, axis=1) + np.log(0.25 / (pk.shape[0] * h))
    return out


def test_log_predict_fixes_underflow():
    fx = load("predict_underflow")
    m = model_from_fixture(fx["inputs"]["model"])
    Xte = arr(fx["inputs"]["Xte"])
    rpost = arr(fx["outputs"]["posterior"])
    uniform = np.all(np.abs(rpost - 1.0 / m.nc) < 1e-12, axis=1)
    assert uniform.sum() == 16  # R's defect 4: products underflowed to machine epsilon
    p = predict(m, Xte, log=True)
    logden = np.log(m.PI) + _log_class_densities_naive(m, Xte)
    ref = logden - logsumexp(logden, axis=1, keepdims=True)
    np.testing.assert_allclose(p["log_posterior"], ref, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(p["class"], m.ynames[np.argmax(logden, axis=1)])
    # where R did not underflow, the two paths agree
    np.testing.assert_allclose(p["posterior"][~uniform], rpost[~uniform], atol=1e-10)
    assert not np.all(p["class"][uniform] == m.ynames[0])


def test_pima_exact_correct_value_from_spec():
    # SPEC: Pima, PCA start, 3 columns: R's exact -0.58641, correct -0.53371
    fx = load("obj_pima_pca3")
    i = fx["inputs"]
    args = (arr(i["V"]), arr(i["X"]), np.asarray(i["y"]) - 1, arr(i["PI"]), arr(i["h"]))
    assert f_NB_exact(*args) == pytest.approx(-0.58641, abs=1e-5)
    assert f_NB_exact(*args, compat="correct") == pytest.approx(-0.53371, abs=1e-5)
