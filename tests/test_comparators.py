"""The comparators: each against a direct reference, scikit-learn's checks
and bad input."""
import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.utils.estimator_checks import parametrize_with_checks

from pyopnb.comparators import CCICA, KDDA, LDA, OPGD, RDA, KernelNB, SelectiveNB


@parametrize_with_checks([KernelNB(), KernelNB(nbin=200), KDDA(), RDA(lam=0.5, reg=1e-6), CCICA(), CCICA(n_components=1),
                          OPGD(reg=1e-6), OPGD(reg=1e-6, covariance="full"), LDA(), SelectiveNB(),
                          SelectiveNB(averaging="MAP")])
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


@pytest.mark.parametrize("est", [KernelNB(), KDDA(), RDA(reg=1e-6), CCICA(n_components=2), OPGD(ndim=2), LDA(),
                                 SelectiveNB()],
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


@pytest.mark.parametrize("est", [KernelNB(), KDDA(), RDA(), CCICA(), OPGD(), LDA(), SelectiveNB()],
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
    bad_param = {RDA: "lam", OPGD: "reg", LDA: "n_components", SelectiveNB: "averaging"}.get(type(est), "gamma")
    with pytest.raises(ValueError, match=bad_param):
        type(est)(**{bad_param: -1.0}).fit(X, y)


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
    # the data whitened by its total covariance first (on its range)
    B = clf.basis_
    np.testing.assert_allclose(np.cov(X @ B, rowvar=False, bias=True), np.eye(4), atol=1e-10)
    Z, Zte = (X - clf.center_) @ B, (Xte - clf.center_) @ B
    k = 1
    Xk = Z[y == k]
    mu = Xk.mean(axis=0)
    W, R = clf.whiten_[k], clf.rotation_[k]
    np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(np.cov((Xk - mu) @ W, rowvar=False, bias=True), np.eye(4), atol=1e-10)
    A, At = (Xk - mu) @ W[:, :3] @ R, (Zte - mu) @ W[:, :3] @ R
    rest = ((Zte - mu) @ W)[:, 3]
    logf = np.zeros(20)
    for j in range(3):
        h = clf.bandwidths_[k, j]
        logf += np.log(_kernel((At[:, j][:, None] - A[:, j][None, :]) / h).sum(axis=1) / (A.shape[0] * h))
    logf += np.log(abs(np.linalg.det(B))) + np.log(abs(np.linalg.det(W))) - 0.5 * rest ** 2 - 0.5 * np.log(2 * np.pi)
    np.testing.assert_allclose(clf._log_densities(Xte)[:, k], logf, rtol=1e-10)
    with pytest.raises(ValueError, match="n_components must be from 1 to the number of features"):
        CCICA(n_components=5).fit(X, y)


@pytest.mark.parametrize("covariance", ["diagonal", "full"])
def test_opgd_gradient_matches_finite_differences(covariance):
    from helpers import central_difference

    from pyopnb.comparators._opgd import class_covariances, opgd_objective

    X, y = data(n=120, d=5, binary=0)
    means, covs = class_covariances(X, y, 3, lam=0.2)
    logp = np.log(np.bincount(y) / y.size)
    V = np.random.default_rng(1).normal(size=(5, 2))
    f, g = opgd_objective(V, X, y, logp, means, covs, covariance)
    num = central_difference(lambda W: opgd_objective(W, X, y, logp, means, covs, covariance, False)[0], V, 1e-6)
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-7)
    # the value depends on each column's direction only, not its length (either form);
    # the full form also ignores any invertible mixing of the columns, the diagonal form does not
    assert opgd_objective(V * [3.0, -0.5], X, y, logp, means, covs, covariance, False)[0] == pytest.approx(f, rel=1e-12)
    mixed = opgd_objective(V @ np.array([[2.0, 0.5], [-1.0, 3.0]]), X, y, logp, means, covs, covariance, False)[0]
    assert (mixed == pytest.approx(f, rel=1e-10)) == (covariance == "full")


def test_opgd_objective_is_the_sum_of_log_posteriors_with_diagonal_gaussians():
    from scipy.stats import norm

    from pyopnb.comparators._opgd import class_covariances, opgd_objective

    X, y = data(n=80, d=3, binary=0)
    means, covs = class_covariances(X, y, 3)
    np.testing.assert_allclose(covs[1], np.cov(X[y == 1], rowvar=False))  # divisor n_k - 1, as R's cov
    V = np.random.default_rng(2).normal(size=(3, 2))
    logp = np.log(np.bincount(y) / y.size)
    joint = np.column_stack([logp[k] + sum(norm.logpdf(X @ V[:, j], means[k] @ V[:, j],
                                                        np.sqrt(V[:, j] @ covs[k] @ V[:, j])) for j in range(2))
                             for k in range(3)])
    want = np.sum(joint[np.arange(80), y] - logsumexp(joint, axis=1))
    assert opgd_objective(V, X, y, logp, means, covs, gradient=False)[0] == pytest.approx(want, rel=1e-12)


def test_opgd_diagonal_and_full_objectives_agree_on_one_column():
    """On one column V' S_k V is a scalar, so the compiled diagonal objective
    and the full one (SciPy's Cholesky) are the same function: equal values
    and gradients; and the fitted model's class log densities are the
    compiled terms the objective sums."""
    from pyopnb.comparators._opgd import class_covariances, opgd_objective

    X, y = data(n=90, d=4, binary=0)
    means, covs = class_covariances(X, y, 3, lam=0.1)
    logp = np.log(np.bincount(y) / y.size)
    V = np.random.default_rng(3).normal(size=(4, 1))
    fd, gd = opgd_objective(V, X, y, logp, means, covs, "diagonal")
    ff, gf = opgd_objective(V, X, y, logp, means, covs, "full")
    assert fd == pytest.approx(ff, rel=1e-12)
    np.testing.assert_allclose(gd, gf, rtol=1e-10, atol=1e-12 * np.abs(gf).max())
    est = OPGD(ndim=1, V0=V, maxit=1).fit(X, y)
    joint = est.class_log_prior_ + est._log_densities(X)
    want = np.sum(joint[np.arange(90), y] - logsumexp(joint, axis=1))
    assert opgd_objective(est.V_, X, y, logp, est.means_, est.covariances_, gradient=False)[0] == \
        pytest.approx(want, rel=1e-12)


def test_opgd_fit_start_order_and_staged_predictions():
    from pyopnb.comparators._opgd import class_covariances, opgd_objective, opgd_start

    X, y = data(n=300, d=5, K=4, binary=0)
    est = OPGD().fit(X, y)
    assert est.V_.shape == (5, 3)  # K - 1 columns by default, as the authors' package
    means, covs = class_covariances(X, y, 4)
    logp = est.class_log_prior_
    start = opgd_start(X, y, 4, 3)
    np.testing.assert_allclose(np.sum(start ** 2, axis=0), 1.0)
    f0 = opgd_objective(start, X, y, logp, means, covs, gradient=False)[0]
    assert est.objective_ > f0
    assert est.objective_ == pytest.approx(opgd_objective(est.V_, X, y, logp, means, covs, gradient=False)[0],
                                           rel=1e-12)
    # greedy order: the first column alone scores best of all columns alone, the first two best of pairs with it
    alone = [opgd_objective(est.V_[:, [j]], X, y, logp, means, covs, gradient=False)[0] for j in range(3)]
    assert int(np.argmax(alone)) == 0
    pairs = [opgd_objective(est.V_[:, [0, j]], X, y, logp, means, covs, gradient=False)[0] for j in (1, 2)]
    assert pairs[0] >= pairs[1]
    np.testing.assert_allclose(est.transform(X), X @ est.V_)
    staged = list(est.staged_predict(X))
    assert len(staged) == 3
    np.testing.assert_array_equal(staged[-1], est.predict(X))
    # the first column as a model of its own: diagonal Gaussians on z = X V_1
    one = OPGD(ndim=3).fit(X, y)
    one.V_ = est.V_[:, :1]
    np.testing.assert_array_equal(staged[0], one.predict(X))
    # V0 is where L-BFGS-B begins: the authors' start given is the default fit
    np.testing.assert_array_equal(OPGD(ndim=2, V0=start[:, :2]).fit(X, y).V_, OPGD(ndim=2).fit(X, y).V_)


def test_opgd_errors_and_the_ridge():
    X, y = data(n=60, d=4, binary=0)
    with pytest.raises(ValueError, match=r"ndim must be an integer from 1 to the number of features \(4\)"):
        OPGD(ndim=5).fit(X, y)
    with pytest.raises(ValueError, match="covariance must be 'diagonal'"):
        OPGD(covariance="spherical").fit(X, y)
    with pytest.raises(ValueError, match=r"V0 must be a finite \(4, 2\) matrix"):
        OPGD(V0=np.ones((3, 2))).fit(X, y)
    with pytest.raises(ValueError, match=r"lam must be in \[0, 1\]"):
        OPGD(lam=2).fit(X, y)
    # a column constant within a class: the authors' OPGD cannot start on it, the ridge (the study's) can
    flat = X.copy()
    flat[y == 0, 2] = 1.0
    e2 = np.eye(4)[:, [2]]
    with pytest.raises(ValueError, match="at the start, a class has zero variance on the projection.*reg > 0"):
        OPGD(ndim=1, V0=e2).fit(flat, y)
    p = OPGD(ndim=1, V0=e2, reg=1e-6).fit(flat, y).predict_proba(flat)
    assert np.all(np.isfinite(p))


def test_opgd_keeps_the_last_iterate_where_the_objective_becomes_undefined():
    """Separated classes: the start's posteriors are all 1, its gradient
    vanishes and the line search's first step leaves the objective undefined
    (R's optim stops with an error); the start is kept, with a warning."""
    from pyopnb import ConvergenceWarning

    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=30, random_state=0, cluster_std=0.1)
    with pytest.warns(ConvergenceWarning, match="objective is undefined.*last iterate is kept"):
        est = OPGD(reg=1e-6).fit(X, y)
    assert est.convergence_ == 52 and est.score(X, y) == 1.0


def test_lda_is_scikit_learn_s_on_all_directions_and_reduced_rank_on_fewer():
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    X, y = data(n=200, d=5, K=4, binary=0)
    Xte, _ = data(seed=7, n=50, d=5, K=4, binary=0)
    ours = LDA().fit(X, y)
    sk = LinearDiscriminantAnalysis(solver="eigen").fit(X, y)  # its pooled covariance is the ML one
    np.testing.assert_allclose(ours.predict_proba(Xte), sk.predict_proba(Xte), atol=1e-10)
    # the directions: unit within-class variance, class means as their projections
    Z = ours.transform(X)
    R = Z - ours.means_[y]
    np.testing.assert_allclose(R.T @ R / 200, np.eye(3), atol=1e-10)
    # one direction: nearest projected class mean, with the priors
    one = LDA(n_components=1).fit(X, y)
    z = one.transform(Xte)[:, 0]
    joint = np.log(np.bincount(y) / 200) - 0.5 * (z[:, None] - one.means_[:, 0][None, :]) ** 2
    np.testing.assert_array_equal(one.predict(Xte), np.argmax(joint, axis=1))
    staged = list(ours.staged_predict(Xte))
    np.testing.assert_array_equal(staged[0], one.predict(Xte))
    np.testing.assert_array_equal(staged[-1], ours.predict(Xte))
    with pytest.raises(ValueError, match=r"n_components must be an integer from 1 to min\(n_features, n_classes - 1\) = 3"):
        LDA(n_components=4).fit(X, y)


def test_lda_never_fails_on_a_singular_pooled_covariance():
    rng = np.random.default_rng(4)
    y = np.repeat([0, 1, 2], 10)
    X = rng.normal(size=(30, 60))
    X[:, :3] += 3 * np.eye(3)[y]
    X[:, 10] = X[:, 11] * 2 + 1  # collinear
    X[:, 12] = 5.0  # constant
    est = LDA().fit(X, y)
    assert est.score(X, y) >= 0.8 and np.all(np.isfinite(est.predict_proba(X)))
    # classes that do not differ at all: every row gets the commonest class
    yy = np.r_[np.zeros(12, int), np.ones(8, int)]
    same = np.tile(rng.normal(size=(4, 3)), (5, 1))
    np.testing.assert_array_equal(LDA().fit(same, yy).predict(same[:3]), [0, 0, 0])


def test_kernel_nb_with_the_one_hot_mask_is_close_to_categorical_nb():
    """Ordinal columns of 5 levels, one-hot encoded, noised and scaled as the
    study does: with the mask, NB's alpha smooths the binary columns (as a
    Laplace adjustment would) and its error is close to CategoricalNB's on
    the raw levels; without it the binary columns get bandwidths sized to
    the noise."""
    from sklearn.naive_bayes import CategoricalNB
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(12)
    n, d, K = 1500, 6, 3
    y = rng.integers(0, K, n)
    levels = np.clip(np.round(rng.integers(0, 5, size=(K, d))[y] + rng.normal(size=(n, d))), 0, 4).astype(int)
    onehot = OneHotEncoder(drop="first", sparse_output=False).fit_transform(levels)
    noisy = onehot + rng.normal(scale=0.01 * onehot.std(axis=0), size=onehot.shape)
    tr, te = np.arange(1000), np.arange(1000, n)
    Xs = noisy / noisy[tr].std(axis=0, ddof=1)
    cat = 1 - CategoricalNB().fit(levels[tr], y[tr]).score(levels[te], y[te])
    mask = np.ones(onehot.shape[1], dtype=bool)
    for alpha in (0.1, 0.3, 0.5):
        nb = 1 - KernelNB(alpha=alpha, binary=mask).fit(Xs[tr], y[tr]).score(Xs[te], y[te])
        assert nb - cat < 0.04, alpha
    blind = 1 - KernelNB(alpha=0.3).fit(Xs[tr], y[tr]).score(Xs[te], y[te])
    assert blind - cat > 0.1


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


@pytest.mark.parametrize("n", [2, 3, 4, 5, 7, 10, 150])
def test_quartiles_are_numpys_percentiles_to_the_bit(n):
    """KernelNB's spread (Silverman's IQR) from one sort against np.percentile."""
    from pyopnb.comparators._base import split_spread

    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 6)) * 1e3
    X[:, 0] = np.round(X[:, 0] / 500)  # ties
    X[:, 1] = 4.0  # a constant column
    sd, iqr = split_spread(X)
    q75, q25 = np.percentile(X, [75, 25], axis=0)
    np.testing.assert_array_equal(iqr, (q75 - q25) / 1.34)
    np.testing.assert_array_equal(sd, X.std(axis=0, ddof=1))


@pytest.mark.parametrize("dataset", ["iris", "wine"])
def test_ccica_is_unmoved_by_columns_that_carry_nothing(dataset):
    # a constant column used to add a class-dependent term (each class's zero
    # eigenvalue floored relative to its own largest): iris's training accuracy
    # fell from 0.987 to 0.833
    from sklearn.datasets import load_iris, load_wine

    X, y = (load_iris if dataset == "iris" else load_wine)(return_X_y=True)
    base = CCICA().fit(X, y)
    with_constant = CCICA().fit(np.column_stack([X, np.full(len(X), 3.0)]), y)
    np.testing.assert_array_equal(with_constant.predict_proba(np.column_stack([X, np.full(len(X), 3.0)])),
                                  base.predict_proba(X))
    # a collinear column adds no coordinate either; what is left is FastICA's sensitivity to
    # rounding, which moves with the BLAS kernel and the CPU (measured over OpenBLAS's core
    # types and numpy's SIMD levels: 98.7% to 100% of predictions kept, scores within 0.007)
    Xl = np.column_stack([X, X[:, 0] + 2 * X[:, 1]])
    collinear = CCICA().fit(Xl, y)
    assert (collinear.predict(Xl) == base.predict(X)).mean() >= 0.97
    assert abs(collinear.score(Xl, y) - base.score(X, y)) <= 0.02


def test_the_library_does_not_reach_into_the_study():
    """The study's registry of methods lives with the study: asking the
    comparators for it says where it is, and importing them imports no study."""
    import subprocess
    import sys

    import pyopnb.comparators as comparators

    with pytest.raises(AttributeError, match=r"use pyopnb\.study\.methods\.METHODS"):
        comparators.METHODS
    code = "import sys, pyopnb.comparators; print(any(m.startswith('pyopnb.study') for m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
