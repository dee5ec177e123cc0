"""Fitting (pyopnb.fitting): the optimiser's outcome in R's optim codes, a
warning only where it is not the formulation's normal end, advice that fits
the call, the iteration limit as a parameter, and errors that name the
problem in the data."""
import warnings

import numpy as np
import pytest

from helpers import convergence_warnings

import pyopnb
from pyopnb import OPNB, opnb_journal
from pyopnb.fitting import fit as fit_formulation
from pyopnb.formulation import CorrectFormulation


def _optimiser_ends_with(monkeypatch, code):
    """L-BFGS-B's outcome made ``code`` at the start, whatever the data: the
    driver's handling is under test here, the optimiser's own stopping rules
    in tests/test_lbfgsb.py."""
    from pyopnb import fitting

    def minimize(fg, x0, callback=None, **options):
        f, g = fg(np.array(x0))
        return {"x": np.array(x0), "f": f, "g": g, "convergence": code, "iterations": 0, "evaluations": 1,
                "message": ""}

    monkeypatch.setattr(fitting._lbfgsb, "minimize", minimize)


def test_a_failed_line_search_is_Rs_binned_objectives_normal_end(pima, monkeypatch):
    _optimiser_ends_with(monkeypatch, 52)
    m, said = convergence_warnings(lambda: OPNB(pima.X_train, pima.y_train, ndim=2))
    assert said == []  # R's binned gradient is not its value's derivative: R's OPNB stops there too
    assert m.convergence == 52 and "convergence=52 (line search failed)" in repr(m)


@pytest.mark.parametrize("fit, must, must_not", [
    (lambda d: OPNB(d.X_train, d.y_train, ndim=2, nbin=None), ["OPNB:", "a larger lam", "another start V0"],
     ["nbin", "binned"]),
    (lambda d: fit_formulation(d.X_train, d.y_train, CorrectFormulation(), ndim=2), ["more bins (nbin)", "exact sums (nbin=None)"],
     []),
    (lambda d: opnb_journal(d.X_train, d.y_train, ndim=2), ["opnb_journal:", "exact sums (nbin=None)"], ["lam"]),
    (lambda d: opnb_journal(d.X_train, d.y_train, ndim=2, nbin=None), ["another gamma"], ["nbin", "lam"]),
])
def test_a_failed_line_search_elsewhere_warns_with_advice_that_fits_the_call(pima, monkeypatch, fit, must, must_not):
    _optimiser_ends_with(monkeypatch, 52)
    m, said = convergence_warnings(lambda: fit(pima))
    assert len(said) == 1 and m.convergence == 52
    assert "line search failed (convergence code 52" in said[0]
    for text in must:
        assert text in said[0]
    for text in must_not:
        assert text not in said[0]


def test_the_iteration_limit_warns_and_maxit_is_the_callers(pima):
    m, said = convergence_warnings(lambda: OPNB(pima.X_train, pima.y_train, ndim=2, nbin=None, maxit=3))
    assert m.convergence == 1
    assert len(said) == 1 and "iteration limit, maxit = 3 (convergence code 1" in said[0]
    assert "Give a larger maxit" in said[0]
    m, said = convergence_warnings(lambda: opnb_journal(pima.X_train, pima.y_train, ndim=2, maxit=2))
    assert m.convergence == 1 and "opnb_journal: L-BFGS-B stopped at its iteration limit, maxit = 2" in said[0]
    # a larger maxit is used: the fit ends before it (whether L-BFGS-B then
    # reports convergence or a last line search lost in rounding is the bits' call)
    ok, said = convergence_warnings(lambda: OPNB(pima.X_train, pima.y_train, ndim=2, nbin=None, lam=1e-2,
                                                  maxit=500))
    assert ok.convergence in (0, 52)
    assert not any("iteration limit" in s for s in said)
    for bad in (0, -1, 2.5, True, "100"):
        with pytest.raises(ValueError, match="maxit must be a positive integer"):
            OPNB(pima.X_train, pima.y_train, ndim=2, maxit=bad)


@pytest.mark.parametrize("make, message", [
    (lambda X: np.ones_like(X), "no column of X varies"),
    (lambda X: X * 1e300, r"X's column 0 varies too much for its variance to be a double"),
])
def test_data_errors_name_the_problem_in_the_data(pima, make, message):
    for fit in (OPNB, opnb_journal):
        with pytest.raises(ValueError, match=message):
            fit(make(pima.X_train), pima.y_train, ndim=2)


def test_label_errors_show_plain_values(pima):
    y = np.r_[np.zeros(199, dtype=np.int64), 1]
    with pytest.raises(ValueError, match=r"^class 1 has 1 row: the journal bandwidth needs at least 2"):
        opnb_journal(pima.X_train, y, ndim=2)
    X = np.repeat(pima.X_train[:2], 100, axis=0)
    with pytest.raises(ValueError, match=r"^class 0 does not vary"):
        opnb_journal(X, np.repeat([0, 1], 100), ndim=2)


def test_missing_values_in_a_nullable_column_are_called_missing(pima):
    pd = pytest.importorskip("pandas", reason="pandas is not installed")
    df = pd.DataFrame(pima.X_train, columns=list(pima.feature_names)).astype({"npreg": "Int64"})
    df.loc[5, "npreg"] = pd.NA
    with pytest.raises(ValueError, match=r"X has missing values \(NaN\) in column 'npreg' \(1 row\)"):
        OPNB(df, pima.y_train, ndim=2)
    with pytest.raises(ValueError, match=r"X has non-numeric columns \['npreg'\]"):
        OPNB(df.astype({"npreg": str}), pima.y_train, ndim=2)


@pytest.mark.parametrize("weighted", [False, True])
def test_direct_posteriors_are_predicts_up_to_rounding(weighted):
    from sklearn.datasets import make_classification

    from pyopnb.fitting import direct_posteriors
    from pyopnb.model import predict, projection

    X, y = make_classification(n_samples=1200, n_features=6, n_informative=4, n_classes=3, random_state=1)
    w = np.random.default_rng(2).uniform(0.5, 2.0, size=len(y)) if weighted else None
    model = OPNB(X, y, ndim=3, nbin=None, weights=w)
    rows = X[::97]
    V = np.ascontiguousarray(model.V)
    ours = direct_posteriors(model, projection(model.X, model.mu, V), projection(rows, model.mu, V))
    theirs = predict(model, rows, log=True)["posterior"]
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-11)
    assert np.abs(theirs - model.PI).max() > 0.1  # rows far from the priors: the comparison means something


def test_a_fit_told_apart_by_a_few_rows_is_not_predicted_again(monkeypatch):
    from sklearn.datasets import make_classification

    from pyopnb import fitting

    X, y = make_classification(n_samples=3000, n_features=10, n_informative=5, n_classes=5, random_state=0)
    calls = []
    original = fitting.predict

    def counted(*args, **kwargs):
        calls.append(args[1].shape[0])
        return original(*args, **kwargs)
    monkeypatch.setattr(fitting, "predict", counted)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pyopnb.CollapseWarning)
        OPNB(X, y, ndim=3)
    assert calls == []
    # collapsed (as test_estimator_round2's): the few rows do not tell it apart, and the 1000 rows are predicted
    with pytest.warns(pyopnb.CollapseWarning):
        OPNB(X, y, lam=1.0, ndim=3)
    assert calls == [1000]
