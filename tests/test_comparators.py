"""The comparators: each against a direct reference, scikit-learn's checks,
bad input, and the registry of the papers' methods and grids."""
import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.utils.estimator_checks import parametrize_with_checks

from pyopnb.comparators import CCICA, KDDA, METHODS, OPGD, RDA, KernelNB, SelectiveNB


@parametrize_with_checks([KernelNB(), KernelNB(nbin=200), KDDA(), RDA(lam=0.5, reg=1e-6), CCICA(), CCICA(n_components=1),
                          OPGD(reg=1e-6), SelectiveNB(), SelectiveNB(averaging="MAP")])
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
    np.testing.assert_allclose(RDA(lam=0.0, reg=0.0).fit(X, y).predict_proba(Xte), lda.predict_proba(Xte), atol=1e-8)
    # lam = 1: Gaussian class densities with the classes' maximum-likelihood covariances
    joint = np.column_stack([np.log(np.mean(y == k)) + multivariate_normal(
        X[y == k].mean(axis=0), np.cov(X[y == k], rowvar=False, bias=True)).logpdf(Xte) for k in range(3)])
    qda_p = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
    np.testing.assert_allclose(RDA(lam=1.0, reg=0.0).fit(X, y).predict_proba(Xte), qda_p, atol=1e-10)
    qda = QuadraticDiscriminantAnalysis(reg_param=0.0, store_covariance=True).fit(X, y)
    if np.allclose(qda.covariance_[0], np.cov(X[y == 0], rowvar=False, bias=True)):  # scikit-learn >= 1.9
        np.testing.assert_allclose(RDA(lam=1.0, reg=0.0).fit(X, y).predict_proba(Xte), qda.predict_proba(Xte),
                                   atol=1e-8)
    mid = RDA(lam=0.5).fit(X, y).predict_proba(Xte)
    assert not np.allclose(mid, lda.predict_proba(Xte), atol=1e-4)


def test_rda_singular_covariance_is_an_error_or_a_ridge():
    X, y = data(n=120, binary=0)
    X = np.column_stack([X, X[:, 0] + X[:, 1]])
    with pytest.raises(ValueError, match=r"the covariance of class 0 \(lam = 0.5\) is singular or nearly so.*reg > 0"):
        RDA(lam=0.5, reg=0.0).fit(X, y)
    # the default ridge (the study's, 1e-6 of the mean variance) fits such data
    np.testing.assert_allclose(RDA().fit(X, y).predict_proba(X).sum(axis=1), 1.0, rtol=1e-12)
    wide = np.random.default_rng(0).normal(size=(10, 20))
    np.testing.assert_allclose(RDA().fit(wide, np.arange(10) % 2).predict_proba(wide).sum(axis=1), 1.0, rtol=1e-12)
    p = RDA(lam=0.5, reg=1e-3).fit(X, y).predict_proba(X)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-12)
    with pytest.raises(ValueError, match=r"lam must be in \[0, 1\]"):
        RDA(lam=1.5).fit(X, y)


@pytest.mark.parametrize("est", [KernelNB(), KDDA(), RDA(reg=1e-6), CCICA(n_components=2), OPGD(ndim=2), SelectiveNB()],
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


@pytest.mark.parametrize("est", [KernelNB(), KDDA(), RDA(), CCICA(), OPGD(), SelectiveNB()],
                         ids=lambda e: type(e).__name__)
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
    bad_param = {RDA: "lam", OPGD: "reg", SelectiveNB: "averaging"}.get(type(est), "gamma")
    with pytest.raises(ValueError, match=bad_param):
        type(est)(**{bad_param: -1.0}).fit(X, y)


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


@pytest.mark.parametrize("reg", [0.0, 0.05])
def test_opgd_gradient_matches_finite_differences(reg):
    from helpers import central_difference

    from pyopnb.comparators._opgd import _class_moments, opgd_objective

    X, y = data(n=120, d=5, binary=0)
    K = 3
    means, covs = _class_moments(X, y, K)
    logp = np.log(np.bincount(y) / y.size)
    V = np.random.default_rng(1).normal(size=(5, 2))
    f, g = opgd_objective(V, X, y, logp, means, covs, reg)
    num = central_difference(lambda W: opgd_objective(W, X, y, logp, means, covs, reg, False)[0], V, 1e-6)
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-8)
    if reg == 0:
        # without the ridge the value depends on V's column space only
        A = np.array([[2.0, 0.5], [-1.0, 3.0]])
        assert opgd_objective(V @ A, X, y, logp, means, covs, 0.0, False)[0] == pytest.approx(f, rel=1e-10)


def test_opgd_fit_improves_on_its_start_and_full_rank_is_qda():
    from pyopnb.formulation import lda_start

    X, y = data(n=300, d=4, binary=0)
    est = OPGD(ndim=2).fit(X, y)
    Xs = (X - est.centre_) * est.scale_
    from pyopnb.comparators._opgd import _class_moments, opgd_objective

    means, covs = _class_moments(Xs, y, 3)
    start = opgd_objective(lda_start(Xs, y, 3, 2), Xs, y, est.class_log_prior_, means, covs, 0.0, False)[0]
    assert est.objective_ > start
    np.testing.assert_allclose(est.transform(X), (X - est.centre_) @ est.projection_)
    # ndim = p: every projection gives the same Gaussian posteriors as QDA (maximum-likelihood covariances)
    full = OPGD(ndim=4).fit(X, y)
    np.testing.assert_allclose(full.predict_proba(X), RDA(lam=1.0, reg=0.0).fit(X, y).predict_proba(X), atol=1e-8)


def _modl_cost(x, y, J, cuts):
    """The 2006 MODL criterion of the partition of x by ``cuts``, term by term."""
    from math import comb, factorial, log

    part = np.searchsorted(cuts, x, side="right")
    N, I = x.size, len(cuts) + 1
    c = log(N) + log(comb(N + I - 1, I - 1))
    for i in range(I):
        nij = [int(np.sum((part == i) & (y == j))) for j in range(J)]
        ni = sum(nij)
        c += log(comb(ni + J - 1, J - 1)) + log(factorial(ni)) - sum(log(factorial(v)) for v in nij)
    return c


def test_modl_discretisation_is_the_criterion_s_optimum():
    from itertools import combinations

    from pyopnb.comparators._snb import modl_discretise

    rng = np.random.default_rng(8)
    for trial in range(4):
        x = rng.integers(0, 11, 60).astype(float)
        y = ((x > 4) ^ (rng.uniform(size=60) < 0.15 * trial)).astype(int) + (x > 8)
        cuts, cost, one = modl_discretise(x, y, 3)
        assert cost == pytest.approx(_modl_cost(x, y, 3, cuts), rel=1e-12)
        assert one == pytest.approx(_modl_cost(x, y, 3, np.array([])), rel=1e-12)
        vals = np.unique(x)
        mids = (vals[1:] + vals[:-1]) / 2
        brute = min(_modl_cost(x, y, 3, np.array(c)) for r in range(len(mids) + 1) for c in combinations(mids, r))
        assert cost == pytest.approx(brute, rel=1e-12)


def test_modl_grouping_cost_and_merges():
    from math import comb, factorial, log

    from pyopnb.comparators._snb import modl_group

    rng = np.random.default_rng(9)
    # values 0, 1 and 2 share one class profile, 3 and 4 another
    x = rng.integers(0, 5, 400).astype(float)
    y = np.where(x < 3, rng.uniform(size=400) < 0.2, rng.uniform(size=400) < 0.8).astype(int)
    mapping, cost, one = modl_group(x, y, 2)
    assert mapping[0.0] == mapping[1.0] == mapping[2.0] != mapping[3.0] == mapping[4.0]
    # the criterion by hand: log V + log B(V, I) + the parts' costs; B(5, 2) = S(5,1) + S(5,2) = 1 + 15
    c = log(5) + log(16)
    for g in (x < 3, x >= 3):
        nij = [int(np.sum(g & (y == j))) for j in range(2)]
        c += log(comb(sum(nij) + 1, 1)) + log(factorial(sum(nij))) - sum(log(factorial(v)) for v in nij)
    assert cost == pytest.approx(c, rel=1e-12) and cost < one


def test_selective_nb_selects_informative_variables_once():
    rng = np.random.default_rng(10)
    n = 600
    y = rng.integers(0, 2, n)
    a = y + rng.normal(scale=0.8, size=n)
    b = -y + rng.normal(scale=0.9, size=n)
    X = np.column_stack([a, b, a + 1e-9 * rng.normal(size=n), rng.normal(size=(n, 3))])
    m = SelectiveNB(averaging="MAP").fit(X, y)
    assert set(m.selected_) <= {0, 1, 2} and 1 in m.selected_
    assert len({0, 2} & set(m.selected_)) == 1  # a copy of a selected variable breaks the NB assumption
    assert np.all(m.level_[3:] == 0) and np.all(m.level_[:3] > 0)
    np.testing.assert_array_equal(m.weights_, np.isin(np.arange(6), m.selected_).astype(float))
    # the MAP model's cost is the paper's criterion (4), and no evaluated model beats it
    from math import comb, log

    S = m.class_log_prior_ + sum(m.log_cond_[k][np.searchsorted(m.cuts_[k], X[:, k], side="right")]
                                 for k in m.selected_)
    data = -np.sum(S[np.arange(n), y] - logsumexp(S, axis=1))
    km = len(m.selected_)
    assert min(c for _, c in m.models_) == pytest.approx(log(7) + log(comb(6 + km - 1, km)) + data, rel=1e-10)
    cma = SelectiveNB().fit(X, y)
    assert np.all((cma.weights_ >= 0) & (cma.weights_ <= 1)) and np.all(cma.weights_[3:] == 0)
    assert 0 < cma.weights_[0] + cma.weights_[2] and cma.weights_[1] > 0
    bma = SelectiveNB(averaging="BMA").fit(X, y)
    np.testing.assert_allclose(bma.predict_proba(X).sum(axis=1), 1.0, rtol=1e-12)


def test_selective_nb_unseen_category_is_neutral():
    rng = np.random.default_rng(11)
    y = rng.integers(0, 2, 300)
    X = np.column_stack([y * 2 + rng.integers(0, 2, 300), y + rng.normal(size=300)])
    m = SelectiveNB(categorical=[0], averaging="MAP").fit(X, y)
    assert 0 in m.selected_
    row = np.array([[9.0, 0.3]])  # category 9 never seen: only column 1 speaks
    alone = SelectiveNB(averaging="MAP").fit(X[:, [1]], y)
    if 1 in m.selected_:
        np.testing.assert_allclose(m.predict_proba(row), alone.predict_proba(row[:, [1]]), rtol=1e-12)
    else:
        np.testing.assert_allclose(m.predict_proba(row), np.exp(m.class_log_prior_)[None, :], rtol=1e-12)


def test_khiops_discretisations_cost_no_less_under_the_paper_s_criterion(monkeypatch):
    """Khiops (the author's tool) as a cross-check, where it installs: it finds
    the same informative and uninformative variables, and its intervals never
    score better than ours under the 2006 criterion we optimise (Khiops 11
    uses a later prior, so its intervals can differ; ours are the optimum of
    the paper's)."""
    import os
    import sys

    pytest.importorskip("khiops.sklearn", reason="the khiops package is not installed (pip install khiops)")
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    import warnings

    pd = pytest.importorskip("pandas", reason="pandas is not installed")
    from khiops.sklearn import KhiopsClassifier

    from pyopnb.comparators._snb import modl_discretise

    rng = np.random.default_rng(0)
    n, J = 400, 3
    y = rng.integers(0, J, n)
    cols = {"a": np.round(rng.normal(size=n) * 3 + y * 1.5), "b": np.round(rng.normal(size=n) * 2),
            "c": np.round(rng.uniform(0, 40, size=n) + (y == 2) * 15)}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rep = KhiopsClassifier().fit(pd.DataFrame(cols), y).model_report_.preparation_report
    except Exception as exc:  # the package without a working Khiops binary
        pytest.skip(f"khiops is installed but its binary does not run here: {type(exc).__name__}: {exc}")
    for name, x in cols.items():
        v = rep.get_variable_statistics(name)
        cuts, cost, one = modl_discretise(x, y, J)
        assert (v.level > 0) == (cuts.size > 0), name
        if v.data_grid is not None:
            kh = np.array([p.upper_bound for p in v.data_grid.dimensions[0].partition][:-1])
            assert cost <= _modl_cost(x, y, J, kh) + 1e-9, name
