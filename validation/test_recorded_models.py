"""Fits, predictions, saved models and cross-validation against recorded R outputs."""
import numpy as np
import pytest
from scipy.special import logsumexp

from pyopnb import OPNB, OPNB_CV_lam, predict, read_rds
from pyopnb.model import r_colmeans, r_sd
from validation.fixtures import (FIT_FVAL_REL, FIT_V_ABS, FIXTURES, POSTERIOR_ABS, arr, column_signs,
                                 fit_call, load, model_from_fixture, names, r_starts)


@pytest.mark.parametrize("name", names("fit_"))
def test_fit_matches_R(name):
    X, y, kw, out, inputs = fit_call(name)
    m = OPNB(X, y, **kw)
    assert list(m.ynames) == out["ynames"]
    np.testing.assert_array_equal(m.y, out["y"])
    np.testing.assert_allclose(m.PI, arr(out["PI"]), rtol=1e-15)
    np.testing.assert_allclose(m.mu, arr(out["mu"]), rtol=1e-15)
    np.testing.assert_allclose(m.scales, arr(out["scales"]), rtol=1e-15)
    assert m.fval == pytest.approx(out["fval"], rel=FIT_FVAL_REL)
    Vr = arr(out["V"])
    s = column_signs(m.V, Vr)
    assert np.max(np.abs(m.V * s - Vr)) < FIT_V_ABS
    np.testing.assert_allclose(m.h, arr(out["h"]), rtol=1e-5)
    Xte = arr(inputs["Xte"])
    p = predict(m, Xte)
    np.testing.assert_array_equal(p["class"], np.asarray(out["class"], dtype=object))
    np.testing.assert_allclose(p["posterior"], arr(out["posterior"]), atol=1e-6)
    p2 = predict(m, Xte, ndim=2)
    np.testing.assert_array_equal(p2["class"], np.asarray(out["class_ndim2"], dtype=object))


@pytest.mark.parametrize("name", [n for n in names("fit_") if load(n)["inputs"]["args"] and load(n)["inputs"]["args"].get("nbin", 1) is None])
def test_exact_fit_needs_no_R_start(name):
    # the exact objective is symmetric under column sign flips: our own eigen start ends where R's does
    X, y, kw, out, _ = fit_call(name, use_r_start=False)
    m = OPNB(X, y, **kw)
    assert m.fval == pytest.approx(out["fval"], rel=FIT_FVAL_REL)
    assert np.max(np.abs(m.V * column_signs(m.V, arr(out["V"])) - arr(out["V"]))) < FIT_V_ABS


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


@pytest.mark.parametrize("name", names("predict_"))
def test_predict_matches_R(name):
    fx = load(name)
    m = model_from_fixture(fx["inputs"]["model"])
    Xte = arr(fx["inputs"]["Xte"])
    p = predict(m, Xte)
    np.testing.assert_allclose(p["posterior"], arr(fx["outputs"]["posterior"]), atol=POSTERIOR_ABS)
    np.testing.assert_array_equal(p["class"], np.asarray(fx["outputs"]["class"], dtype=object))


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


@pytest.mark.parametrize("key", ["pima_ndim4", "iris_exact_ndim2"])
def test_R_models_load_and_predict(key):
    fx = load("models_predictions")
    m = read_rds(FIXTURES.parent / "models" / fx["inputs"][key]["file"])
    p = predict(m, arr(fx["inputs"][key]["Xte"]))
    np.testing.assert_allclose(p["posterior"], arr(fx["outputs"][key]["posterior"]), atol=POSTERIOR_ABS)
    np.testing.assert_array_equal(p["class"], np.asarray(fx["outputs"][key]["class"], dtype=object))


def test_cv_matches_R():
    fx = load("cv_pima")
    i, out = fx["inputs"], fx["outputs"]
    X = arr(i["X"])
    folds = [np.asarray(f) - 1 for f in i["folds"]]
    # R's start for each training set (each fold's complement, then all folds)
    sets = [np.concatenate([f for k, f in enumerate(folds) if k != j]) for j in range(len(folds))]
    sets.append(np.concatenate(folds))
    starts = [arr(v) for v in r_starts()["cv_pima"]]
    keys = []
    for rows in sets:
        Xc = X[rows] - r_colmeans(X[rows])
        keys.append(Xc * (1.0 / r_sd(Xc)))

    def V0(Xs, y, ndim):
        j = next(j for j, k in enumerate(keys) if k.shape == Xs.shape and np.array_equal(k, Xs))
        return starts[j]

    res = OPNB_CV_lam(X, np.asarray(i["y"]), folds, nlam=i["nlam"], ndim=i["ndim"], V0=V0)
    np.testing.assert_allclose(res["cv_stats"], arr(out["cv_stats"]), rtol=1e-15)
    m = res["model"]
    assert m.lam == out["lam"]
    assert m.fval == pytest.approx(out["fval"], rel=FIT_FVAL_REL)
    assert np.max(np.abs(m.V * column_signs(m.V, arr(out["V"])) - arr(out["V"]))) < FIT_V_ABS
