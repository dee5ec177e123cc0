"""The formulations (pyopnb.formulation): each owns its start, bandwidths,
objective and parameters; the registry serves every entry point."""
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from pyopnb import OPNB
from pyopnb.discriminant import lda_start, within_between
from pyopnb.fitting import fit
from pyopnb.formulation import FORMULATIONS, CorrectFormulation, RFormulation, formulation, journal_bandwidths
from pyopnb.objective import f_NB_exact


def test_correct_objective_switch(pima):
    r = OPNB(pima.X_train, pima.y_train, ndim=2, nbin=None)
    with pytest.warns(FutureWarning, match=r"OPNB\(correct=True\) is deprecated"):
        c = OPNB(pima.X_train, pima.y_train, ndim=2, nbin=None, correct=True)
    # the deprecated flag is the "correct" formulation, to the bit
    same = fit(pima.X_train, pima.y_train, CorrectFormulation(), ndim=2, nbin=None)
    assert same.fval == c.fval
    np.testing.assert_array_equal(same.V, c.V)
    assert r.fval != pytest.approx(c.fval, rel=1e-6)  # unequal classes: squared priors change the fit
    # the correct fit's fval is the paper's objective at its V
    Xs = (pima.X_train - c.mu) * c.scales
    Vopt = (c.V / c.scales[:, None]) / c.h[0]
    lam_pen = c.lam * np.sum(Vopt**2)
    y0 = c.y - 1
    assert c.fval == pytest.approx(f_NB_exact(Vopt, Xs, y0, c.PI, np.ones(2), compat="correct") - lam_pen, rel=1e-10)


@pytest.mark.parametrize("seed, K, ndim", [(0, 3, 2), (1, 4, 3), (2, 5, 2), (3, 2, 1)])
def test_start_is_lda_scalings(seed, K, ndim):
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    rng = np.random.default_rng(seed)
    n, d = 300, 6
    y = rng.integers(0, K, n)
    X = rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) + rng.normal(scale=2, size=(K, d))[y]
    V = lda_start(X, y, K, ndim)
    S = LinearDiscriminantAnalysis(solver="eigen").fit(X, y).scalings_[:, :ndim]
    S = S / np.linalg.norm(S, axis=0)
    np.testing.assert_allclose(np.linalg.norm(V, axis=0), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.abs(np.sum(V * S, axis=0)), 1.0, rtol=1e-8)


def test_start_completes_with_principal_components_of_the_rest():
    rng = np.random.default_rng(5)
    n, d, K = 400, 6, 3
    y = rng.integers(0, K, n)
    X = rng.normal(size=(n, d)) * np.array([1, 1, 5, 3, 1, 1]) + rng.normal(scale=3, size=(K, d))[y]
    V = lda_start(X, y, K, 4)
    D = lda_start(X, y, K, 2)
    np.testing.assert_allclose(V[:, :2], D, rtol=1e-12)
    Q = np.linalg.qr(D)[0]
    # the added columns are orthogonal to the discriminant directions, and
    # are the top principal components of the data with those projected out
    np.testing.assert_allclose(Q.T @ V[:, 2:], 0.0, atol=1e-10)
    Xp = X - X @ Q @ Q.T
    vals, vecs = np.linalg.eigh(np.cov(Xp, rowvar=False))
    np.testing.assert_allclose(np.abs(np.sum(V[:, 2:] * vecs[:, ::-1][:, :2], axis=0)), 1.0, rtol=1e-8)


def test_start_with_singular_within_class_covariance():
    rng = np.random.default_rng(7)
    n, K = 200, 3
    y = rng.integers(0, K, n)
    X = rng.normal(size=(n, 3)) + rng.normal(scale=3, size=(K, 3))[y]
    X = np.column_stack([X, X[:, 0] + X[:, 1], np.zeros(n)])  # collinear and constant columns
    Sw, _ = within_between(X, y, K)
    assert np.linalg.matrix_rank(Sw) == 3
    V = lda_start(X, y, K, 4)
    assert np.all(np.isfinite(V)) and V.shape == (5, 4)
    np.testing.assert_allclose(np.linalg.norm(V, axis=0), 1.0, rtol=1e-12)
    # the discriminant directions never lean on the constant column
    assert np.all(np.abs(V[4, :2]) < 1e-10)


def test_bandwidths_follow_the_paper():
    rng = np.random.default_rng(2)
    X = np.column_stack([rng.normal(size=90), rng.normal(scale=3, size=90), np.zeros(90)])
    y = np.repeat([0, 1], [30, 60])
    h = journal_bandwidths(X, y, 2, 2.0)
    for k, nk in ((0, 30), (1, 60)):
        Xk = X[y == k]
        # p = 2: the constant column does not count
        want = 0.54 * 2.0 * np.sqrt(np.trace(np.cov(Xk, rowvar=False)) / 2) * nk ** -0.2
        assert h[k] == pytest.approx(want, rel=1e-12)
    with pytest.raises(ValueError, match="class 1 does not vary"):
        journal_bandwidths(np.r_[X[:30], np.ones((60, 3))], y, 2, 1.0)


def test_the_registry_builds_each_formulation_and_names_whose_parameters_are_whose():
    assert set(FORMULATIONS) == {"R", "correct", "journal"}
    assert formulation("journal", gamma=2.0).gamma == 2.0
    assert formulation("R").lam == 1e-3
    with pytest.raises(ValueError, match="formulation must be one of 'R', 'correct', 'journal'"):
        formulation("penalised")
    with pytest.raises(ValueError, match="gamma"):
        formulation("R", gamma=2.0)
    with pytest.raises(ValueError, match="lam"):
        formulation("journal", lam=1e-2)


def test_a_fourth_formulation_is_one_class_and_one_registry_line(pima, monkeypatch):
    """A formulation of our own, registered: the estimator fits it by name
    with nothing else changed (here R's with a tenfold penalty, which must
    give R's fit at ten times lam)."""
    from dataclasses import dataclass

    from pyopnb.estimator import OPNBClassifier

    @dataclass(repr=False)
    class Heavier(RFormulation):
        name = "heavier"

        def setup(self, *args, **kwargs):
            s = super().setup(*args, **kwargs)
            s.lam *= 10
            return s

    monkeypatch.setitem(FORMULATIONS, "heavier", Heavier)
    clf = OPNBClassifier(formulation="heavier", lam=1e-3, ndim=2, nbin=None).fit(pima.X_train, pima.y_train)
    ref = OPNB(pima.X_train, pima.y_train, lam=1e-2, ndim=2, nbin=None)
    np.testing.assert_array_equal(clf.model_.V, ref.V)
    assert clf.formulation_.name == "heavier"



class _GaussianSums:
    """A compiled evaluation's stand-in with arithmetic of its own: kernel
    naive Bayes with a Gaussian kernel, its sums taken directly in numpy
    (O(n^2) per column), l and n dl/dZ' exactly."""

    @staticmethod
    def evaluate(core, Zt, gradient):
        y, h, logprior = core.y0, core.h, core.logprior
        n, K = y.size, h.size
        ndim = Zt.shape[0]
        onehot = np.eye(K)[y]
        counts = onehot.sum(axis=0)
        logf = np.zeros((n, K))
        parts = []
        for t in range(ndim):
            U = (Zt[t][:, None] - Zt[t][None, :]) / h[y][None, :]  # (evaluation point, sample point)
            Phi = np.exp(-0.5 * U * U) / np.sqrt(2 * np.pi)
            f = Phi @ onehot / (counts * h)  # f_kt at each point
            logf += np.log(f)
            parts.append((U, Phi, f))
        joint = logprior + logf
        lse = np.logaddexp.reduce(joint, axis=1)
        value = float(np.mean(joint[np.arange(n), y] - lse))
        if not gradient:
            return value, None
        a = onehot - np.exp(joint - lse[:, None])  # 1{y_i = k} - P_ik
        dZt = np.zeros((ndim, n))
        for t, (U, Phi, f) in enumerate(parts):
            dPhi = -U * Phi / h[y][None, :]  # d phi((z_i - z_j) / h_j) / d z_i
            w = a / f / (counts * h)  # per point and class
            dZt[t] = np.einsum("ij,jk,ik->i", dPhi, onehot, w)  # point i as an evaluation point
            dZt[t] -= np.einsum("ij,ij->j", dPhi, w[:, y])  # point j as a sample point of its class
        return value, dZt


def _gaussian_formulation():
    """A fourth formulation, neither R's nor the journal's: the journal's
    normalised l, with the Gaussian kernel's sums above (one bandwidth)."""
    from dataclasses import dataclass
    from typing import Any, ClassVar, Dict

    from pyopnb.evaluation import CoreEvaluator, NormalisedEvaluator, check_problem
    from pyopnb.formulation import Formulation, Setup, r_standardise, r_start

    class GaussianSums(CoreEvaluator):
        def evaluate(self, Zt, gradient):
            return _GaussianSums.evaluate(self, np.asarray(Zt), gradient)

    @dataclass(repr=False)
    class GaussianKernel(Formulation):
        bandwidth: float = 0.5

        name: ClassVar[str] = "gaussian"
        params: ClassVar[Dict[str, Any]] = {"bandwidth": 0.5}

        def setup(self, Xa, codes, levels, ndim, names=None, nbin=1000, threads=None):
            mu, scales, Xs = r_standardise(Xa, True, names, threads)
            K = levels.size
            problem = check_problem(Xs, codes, np.bincount(codes, minlength=K) / codes.size,
                                    np.full(K, self.bandwidth))
            V = r_start(None, Xs, codes + 1, ndim, threads)
            return Setup(mu, scales, None, self.evaluator(problem, nbin, threads or 1), V, 0.0, None, None)

        def evaluator(self, problem, nbin, threads):
            return NormalisedEvaluator(problem, GaussianSums(problem.y0, problem.h, problem.PI, threads), None,
                                       threads)

        def final_columns(self, V, norms):
            return V / norms, np.ones_like(norms)

    return GaussianKernel


def test_a_formulation_with_arithmetic_of_its_own_plugs_in(monkeypatch):
    """One Python class for the formulation and one evaluation class for its
    arithmetic (here in Python): registered, its gradient checked against
    central differences, fitted by OPNB's driver, its columns put in R's
    greedy order by the evaluator, and the model predicts."""
    from helpers import central_difference
    from sklearn.datasets import load_iris

    from pyopnb import predict
    from pyopnb.fitting import fit
    from pyopnb.labels import factor

    GaussianKernel = _gaussian_formulation()
    monkeypatch.setitem(FORMULATIONS, "gaussian", GaussianKernel)
    X, y = load_iris(return_X_y=True)
    form = formulation("gaussian", bandwidth=0.4)
    levels, codes = factor(y)
    st = form.setup(X, codes, levels, 2, nbin=None, threads=1)
    ev = st.evaluator
    V = st.V + 0.1 * np.random.default_rng(3).normal(size=st.V.shape)
    value, G = ev.value_and_grad(V)
    num = central_difference(ev.value, V, 1e-6)
    np.testing.assert_allclose(G, num, rtol=1e-5, atol=1e-8 * np.abs(num).max())
    assert value == ev.value(V)
    # the greedy order from the interface's own subsets: the first column is the best alone
    order = ev.order_columns(V)
    alone = [ev.value(V[:, [t]]) for t in range(2)]
    assert order[0] == int(np.argmax(alone)) and sorted(order) == [0, 1]
    # OPNB's driver fits it: the optimum beats the start, and the model predicts iris well
    model = fit(X, y, form, ndim=2, nbin=None)
    assert model.fval > ev.value(st.V)
    assert (predict(model, X)["class"] == y).mean() > 0.9
    with pytest.raises(ValueError, match="bandwidth belongs to formulation 'gaussian'"):
        formulation("R", bandwidth=0.4)


def test_register_names_a_formulation_once(monkeypatch):
    from pyopnb import formulation as formulation_module
    from pyopnb.formulation import CorrectFormulation, register

    monkeypatch.setattr(formulation_module, "FORMULATIONS", dict(FORMULATIONS))

    @dataclass(repr=False)
    class Mine(CorrectFormulation):
        name: ClassVar[str] = "mine"

    assert register(Mine) is Mine and register(Mine) is Mine  # again: a no-op
    assert isinstance(formulation_module.formulation("mine", lam=0.01), Mine)

    @dataclass(repr=False)
    class Other(CorrectFormulation):
        name: ClassVar[str] = "mine"

    with pytest.raises(ValueError, match="the name 'mine' is taken by .*Mine: give Other another name"):
        register(Other)
    with pytest.raises(ValueError, match="the name 'R' is taken"):
        register(type("Impostor", (CorrectFormulation,), {"name": "R"}))
    with pytest.raises(TypeError, match="subclass of pyopnb.formulation.Formulation"):
        register(dict)
    with pytest.raises(ValueError, match="needs a class attribute name"):
        register(type("Nameless", (CorrectFormulation,), {"name": ""}))


def test_the_estimator_fits_a_formulation_object_with_its_own_parameters():
    from sklearn.base import clone
    from sklearn.datasets import load_iris

    from pyopnb import OPNBClassifier
    from pyopnb.formulation import CorrectFormulation

    X, y = load_iris(return_X_y=True)
    form = CorrectFormulation(lam=0.01)
    a = OPNBClassifier(formulation=form, ndim=2, nbin=None).fit(X, y)
    b = OPNBClassifier(formulation="correct", lam=0.01, ndim=2, nbin=None).fit(X, y)
    np.testing.assert_array_equal(a.model_.V, b.model_.V)
    assert a.formulation_ is not form and a.formulation_.lam == 0.01  # the user's object is not fitted in place
    c = clone(OPNBClassifier(formulation=form, ndim=2, nbin=None)).fit(X, y)
    np.testing.assert_array_equal(c.model_.V, a.model_.V)
    with pytest.raises(ValueError, match="holds its own parameters: set lam on it, not on the estimator"):
        OPNBClassifier(formulation=form, lam=0.1).fit(X, y)
