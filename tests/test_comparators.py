"""The comparators: each against a direct reference, scikit-learn's checks,
bad input, and the registry of the papers' methods and grids."""
import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.utils.estimator_checks import parametrize_with_checks

from pyopnb.comparators import CCICA, KDDA, METHODS, RDA, KernelNB


@parametrize_with_checks([KernelNB(), KernelNB(nbin=200), KDDA(), RDA(lam=0.5, reg=1e-6), CCICA(), CCICA(n_components=1)])
def test_sklearn_checks(estimator, check):
    check(estimator)


def data(seed=0, n=90, d=4, K=3, binary=1):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    y[:K] = np.arange(K)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 3, d) + rng.normal(scale=2, size=(K, d))[y]
    if binary:
        X[:, -binary:] = (rng.uniform(size=(n, binary)) < 0.3 + 0.2 * y[:, None]).astype(float)
    return X, y


def _kernel(u):
    return (1 + np.abs(u)) * np.exp(-np.abs(u)) / 4


def test_kernel_nb_is_the_direct_product_of_kernel_densities():
    X, y = data()
    Xte, _ = data(seed=1, n=25)
    clf = KernelNB(gamma=0.7, alpha=0.25).fit(X, y)
    H = clf.bandwidths_
    logden = np.zeros((25, 3))
    for k in range(3):
        Xk = X[y == k]
        for j in range(4):
            u = (Xte[:, j][:, None] - Xk[:, j][None, :]) / H[k, j]
            logden[:, k] += np.log(_kernel(u).sum(axis=1) / (Xk.shape[0] * H[k, j]))
    joint = np.log(np.bincount(y) / y.size) + logden
    np.testing.assert_allclose(clf.predict_log_proba(Xte), joint - logsumexp(joint, axis=1, keepdims=True),
                               rtol=1e-10, atol=1e-12)
    # the bandwidths: gamma x Silverman's rule (scaled to this kernel), alpha on the binary column
    assert list(clf.binary_) == [False, False, False, True]
    np.testing.assert_array_equal(H[:, 3], 0.25)
    for k in range(3):
        x = X[y == k, 0]
        q75, q25 = np.percentile(x, [75, 25])
        want = 0.7 * 0.45 * min(x.std(ddof=1), (q75 - q25) / 1.34) * x.size ** -0.2
        assert H[k, 0] == pytest.approx(want, rel=1e-12)
    binned = KernelNB(gamma=0.7, alpha=0.25, nbin=2000).fit(X, y)
    np.testing.assert_allclose(binned.predict_proba(Xte), clf.predict_proba(Xte), atol=2e-3)


def test_kernel_nb_far_rows_are_decided_in_log_space():
    X, y = data(binary=0)
    clf = KernelNB().fit(X, y)
    row = X[y == 2].mean(axis=0) * 200.0  # every class density underflows as a product of sums
    with np.errstate(divide="ignore"):
        products = np.prod([[np.sum(_kernel((row[j] - X[y == k, j]) / clf.bandwidths_[k, j]))
                             for j in range(4)] for k in range(3)], axis=1)
    assert np.all(products == 0)
    p = clf.predict_proba(row[None, :])
    assert np.all(np.isfinite(p)) and p.sum() == pytest.approx(1.0) and p.max() > 0.99


def test_kdda_is_the_direct_gaussian_kernel_estimate():
    X, y = data()
    Xte, _ = data(seed=2, n=30)
    clf = KDDA(gamma=1.5, alpha=0.2).fit(X, y)
    pc = 3
    logden = np.zeros((30, 3))
    for k in range(3):
        Xk = X[y == k]
        nk = Xk.shape[0]
        h = np.r_[1.5 * (4 / (nk * (pc + 2))) ** (1 / (pc + 4)) * Xk[:, :3].std(axis=0, ddof=1), 0.2]
        np.testing.assert_allclose(clf.bandwidths_[k], h, rtol=1e-12)
        z = (Xte[:, None, :] - Xk[None, :, :]) / h
        dens = np.exp(-0.5 * np.sum(z * z, axis=2)).sum(axis=1) / (nk * np.prod(h) * (2 * np.pi) ** 2)
        logden[:, k] = np.log(dens)
    joint = np.log(np.bincount(y) / y.size) + logden
    np.testing.assert_allclose(clf.predict_log_proba(Xte), joint - logsumexp(joint, axis=1, keepdims=True),
                               rtol=1e-9, atol=1e-11)


def test_kdda_blocks_do_not_change_the_answer(monkeypatch):
    import pyopnb.comparators._kdda as kd

    X, y = data(n=300, binary=0)
    a = KDDA().fit(X, y).predict_log_proba(X)
    monkeypatch.setattr(kd, "_BLOCK", 7)
    b = KDDA().fit(X, y).predict_log_proba(X)
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_rda_ends_are_lda_and_qda():
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis, QuadraticDiscriminantAnalysis

    X, y = data(n=300, binary=0)
    Xte, _ = data(seed=3, n=50, binary=0)
    from scipy.stats import multivariate_normal

    lda = LinearDiscriminantAnalysis(solver="lsqr").fit(X, y)
    np.testing.assert_allclose(RDA(lam=0.0).fit(X, y).predict_proba(Xte), lda.predict_proba(Xte), atol=1e-8)
    # lam = 1: Gaussian class densities with the classes' maximum-likelihood covariances
    joint = np.column_stack([np.log(np.mean(y == k)) + multivariate_normal(
        X[y == k].mean(axis=0), np.cov(X[y == k], rowvar=False, bias=True)).logpdf(Xte) for k in range(3)])
    qda_p = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
    np.testing.assert_allclose(RDA(lam=1.0).fit(X, y).predict_proba(Xte), qda_p, atol=1e-10)
    qda = QuadraticDiscriminantAnalysis(reg_param=0.0, store_covariance=True).fit(X, y)
    if np.allclose(qda.covariance_[0], np.cov(X[y == 0], rowvar=False, bias=True)):  # scikit-learn >= 1.9
        np.testing.assert_allclose(RDA(lam=1.0).fit(X, y).predict_proba(Xte), qda.predict_proba(Xte), atol=1e-8)
    mid = RDA(lam=0.5).fit(X, y).predict_proba(Xte)
    assert not np.allclose(mid, lda.predict_proba(Xte), atol=1e-4)


def test_rda_singular_covariance_is_an_error_or_a_ridge():
    X, y = data(n=120, binary=0)
    X = np.column_stack([X, X[:, 0] + X[:, 1]])
    with pytest.raises(ValueError, match="is singular or nearly so.*reg > 0"):
        RDA(lam=0.5).fit(X, y)
    p = RDA(lam=0.5, reg=1e-3).fit(X, y).predict_proba(X)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-12)
    with pytest.raises(ValueError, match=r"lam must be in \[0, 1\]"):
        RDA(lam=1.5).fit(X, y)


@pytest.mark.parametrize("est", [KernelNB(), KDDA(), RDA(reg=1e-6), CCICA(n_components=2)],
                         ids=lambda e: type(e).__name__)
def test_posteriors_and_row_order(est):
    X, y = data(n=120)
    Xte, _ = data(seed=4, n=40)
    est.fit(X, y)
    p = est.predict_proba(Xte)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-12)
    perm = np.random.default_rng(0).permutation(X.shape[0])
    q = type(est)(**est.get_params()).fit(X[perm], y[perm]).predict_proba(Xte)
    np.testing.assert_allclose(p, q, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("est", [KernelNB(), KDDA(), RDA(), CCICA()], ids=lambda e: type(e).__name__)
def test_bad_input(est):
    X, y = data()
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        type(est)().fit(bad, y)
    with pytest.raises(ValueError, match="at least two classes|1 class"):
        type(est)().fit(X, np.zeros(X.shape[0]))
    with pytest.raises(ValueError, match="inconsistent numbers of samples|samples"):
        type(est)().fit(X, y[:-1])
    fitted = type(est)().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        fitted.predict(X[:, :2])
    with pytest.raises(ValueError, match="gamma|lam"):
        type(est)(**{"lam" if isinstance(est, RDA) else "gamma": -1.0}).fit(X, y)


def test_registry_names_every_method_with_a_usable_grid():
    from sklearn.model_selection import ParameterGrid

    assert {"OPNB", "OPNB-journal", "NB", "KDDA", "LDA", "RDA", "QDA", "SVM", "GaussianNB", "CategoricalNB",
            "MultinomialNB"} <= set(METHODS)
    assert METHODS["SVM"].grid(10)["gamma"][0] == 2.0 ** -15 and METHODS["SVM"].grid(10)["C"][-1] == 2.0 ** 15
    assert METHODS["OPNB-journal"].grid(30)["ndim"] == list(range(1, 21))
    for m in METHODS.values():
        est = m.make()
        for params in list(ParameterGrid(m.grid(5)))[:3]:
            est.set_params(**params)
        assert m.source


@pytest.mark.parametrize("m", [1, 2])
def test_ccica_class_densities_integrate_to_one(m):
    """Each class's density is a density of x (the whitening's Jacobian and
    the left-out coordinates' normal density included), so it integrates to 1
    over the plane and densities of different classes are comparable."""
    rng = np.random.default_rng(5)
    n = 400
    S = np.column_stack([rng.laplace(size=n), rng.uniform(-2, 2, size=n)])
    X = np.r_[S @ np.array([[2.0, 0.5], [0.3, 1.0]]), S @ np.array([[0.5, -1.0], [1.5, 0.4]]) + 3.0]
    y = np.repeat([0, 1], n)
    clf = CCICA(n_components=m).fit(X, y)
    g = np.linspace(-14, 17, 311)
    G = np.array(np.meshgrid(g, g)).reshape(2, -1).T
    dens = np.exp(clf._log_densities(G))
    cell = (g[1] - g[0]) ** 2
    np.testing.assert_allclose(dens.sum(axis=0) * cell, 1.0, atol=0.02)


def test_ccica_is_the_direct_computation():
    X, y = data(n=150, binary=0)
    Xte, _ = data(seed=6, n=20, binary=0)
    clf = CCICA(n_components=3, gamma=0.8).fit(X, y)
    k = 1
    Xk = X[y == k]
    mu = Xk.mean(axis=0)
    W, R = clf.whiten_[k], clf.rotation_[k]
    np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(np.cov((Xk - mu) @ W, rowvar=False, bias=True), np.eye(4), atol=1e-10)
    A, At = (Xk - mu) @ W[:, :3] @ R, (Xte - mu) @ W[:, :3] @ R
    rest = ((Xte - mu) @ W)[:, 3]
    logf = np.zeros(20)
    for j in range(3):
        h = clf.bandwidths_[k, j]
        logf += np.log(_kernel((At[:, j][:, None] - A[:, j][None, :]) / h).sum(axis=1) / (A.shape[0] * h))
    logf += np.log(abs(np.linalg.det(W))) - 0.5 * rest ** 2 - 0.5 * np.log(2 * np.pi)
    np.testing.assert_allclose(clf._log_densities(Xte)[:, k], logf, rtol=1e-10)
    with pytest.raises(ValueError, match="n_components must be from 1 to the number of features"):
        CCICA(n_components=5).fit(X, y)
