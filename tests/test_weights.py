"""Point weights in the compiled objective: each point's weight w_i in its
class's density (w_i / (W_k h_k)) and in the likelihood (sum_i w_i log P_i / W).
Weighted evaluations against the direct weighted formula, integer weights
against repeated rows, and unit weights against no weights, to the bit."""
import numpy as np
import pytest
from helpers import central_difference

from pyopnb.ksum import DEFAULT_BETA


def _kernel(u):
    a = np.abs(u)
    return sum(b * a ** m for m, b in enumerate(DEFAULT_BETA)) * np.exp(-a)


def direct_value(Zt, y, PI, h, w):
    """l = sum_i w_i log P(y_i | z_i) / W with weighted kernel densities."""
    K = PI.size
    n = Zt.shape[1]
    logf = np.zeros((n, K))
    for k in range(K):
        m = y == k
        for z in Zt:
            d = _kernel((z[:, None] - z[m][None, :]) / h[k]) @ w[m] / (w[m].sum() * h[k])
            logf[:, k] += np.log(d)
    lj = np.log(PI) + logf
    lp = lj[np.arange(n), y] - np.logaddexp.reduce(lj, axis=1)
    return float(np.sum(w * lp) / w.sum())


def problem(seed, n=40, ndim=2, K=3):
    rng = np.random.default_rng(seed)
    y = (np.arange(n) % K).astype(np.int32)
    Zt = rng.normal(size=(ndim, n)) + 0.8 * y
    PI = np.bincount(y) / n
    return Zt, y, PI, np.array([0.6, 0.9, 1.2][:K])


KINDS = ["exact", "linear", "rgrid", "interp"]


def make(kind, y, h, PI, w, threads=1):
    """The compiled evaluation of each kind: exact sums, the paper's linear binning, R's binned objective and
    the journal's interpolated one."""
    from pyopnb._core import exact, interp_grid, linear, r_grid

    if kind == "exact":
        return exact.ExactPasses(y, h, PI, threads, DEFAULT_BETA, False, w)
    cls = {"linear": linear.LinearGrid, "rgrid": r_grid.RGrid, "interp": interp_grid.InterpGrid}[kind]
    return cls(y, h, PI, threads, 200, DEFAULT_BETA, 1e-8, w)


def test_weighted_exact_value_is_the_weighted_formula():
    Zt, y, PI, h = problem(1)
    w = np.random.default_rng(2).uniform(0.2, 3.0, y.size)
    core = make("exact", y, h, PI, w)
    value, _ = core.evaluate(np.ascontiguousarray(Zt), False)
    assert value == pytest.approx(direct_value(Zt, y, PI, h, w), rel=1e-12)
    assert core.W == pytest.approx(w.sum(), rel=1e-15)


@pytest.mark.parametrize("kind", ["exact", "linear", "interp"])
def test_weighted_gradient_is_the_values_derivative(kind):
    """evaluate's gradient is W dl/dZ: central differences of the value."""
    Zt, y, PI, h = problem(3)
    w = np.random.default_rng(4).uniform(0.2, 3.0, y.size)
    core = make(kind, y, h, PI, w)
    Zt = np.ascontiguousarray(Zt)
    _, G = core.evaluate(Zt, True)
    num = central_difference(lambda Z: core.evaluate(np.ascontiguousarray(Z), False)[0], Zt, 1e-6)
    np.testing.assert_allclose(G / w.sum(), num, rtol=1e-5, atol=1e-7 * np.abs(num).max())


@pytest.mark.parametrize("kind", KINDS)
def test_integer_weights_are_repeated_rows(kind):
    Zt, y, PI, h = problem(5)
    reps = np.random.default_rng(6).integers(1, 4, y.size)
    idx = np.repeat(np.arange(y.size), reps)
    Zt = np.ascontiguousarray(Zt)
    wv, wG = make(kind, y, h, PI, reps.astype(float)).evaluate(Zt, True)
    rv, rG = make(kind, y[idx].copy(), h, PI, None).evaluate(np.ascontiguousarray(Zt[:, idx]), True)
    assert wv == pytest.approx(rv, rel=1e-12)
    # a row's gradient is the sum of its copies'
    summed = np.zeros_like(wG)
    np.add.at(summed, (slice(None), idx), rG)
    np.testing.assert_allclose(wG, summed, rtol=1e-9, atol=1e-12 * np.abs(summed).max())


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("threads", [1, 2])
def test_unit_weights_are_no_weights_to_the_bit(kind, threads):
    Zt, y, PI, h = problem(7, n=300, ndim=3)
    Zt = np.ascontiguousarray(Zt)
    a = make(kind, y, h, PI, np.ones(y.size), threads).evaluate(Zt, True)
    b = make(kind, y, h, PI, None, threads).evaluate(Zt, True)
    assert a[0] == b[0]
    assert a[1].tobytes() == b[1].tobytes()


def test_weights_are_checked():
    Zt, y, PI, h = problem(8)
    for bad in (np.ones(y.size - 1), np.r_[0.0, np.ones(y.size - 1)], np.r_[np.nan, np.ones(y.size - 1)]):
        with pytest.raises(ValueError, match="positive finite weights"):
            make("exact", y, h, PI, bad)


@pytest.mark.parametrize("kind", ["exact", "rgrid"])
def test_weighted_subset_values_are_each_subset_evaluated(kind):
    """R's greedy column order reads l of column subsets: weighted, each is
    the weighted evaluation of that subset."""
    Zt, y, PI, h = problem(9, n=120, ndim=4)
    w = np.random.default_rng(10).uniform(0.2, 3.0, y.size)
    Zt = np.ascontiguousarray(Zt)
    core = make(kind, y, h, PI, w)
    got = core.subset_values(Zt, [2], [0, 1, 3])
    want = [make(kind, y, h, PI, w).evaluate(np.ascontiguousarray(Zt[[2, j]]), False)[0] for j in (0, 1, 3)]
    np.testing.assert_allclose(got, want, rtol=1e-13)


@pytest.mark.parametrize("kind", ["exact", "linear", "rgrid", "interp"])
def test_evaluator_gradient_in_V_with_weights(kind):
    """The Evaluator a fit drives: dl/dV = t(X) dZ / W, the weighted
    value's derivative in V (R's binned gradient is not its value's, by R's
    defect: there, integer weights against repeated rows)."""
    from pyopnb.evaluation import (Evaluator, NormalisedEvaluator, check_problem, exact_passes, interp_grid,
                                   linear_passes, r_grid)

    rng = np.random.default_rng(11)
    n, d, K = 60, 4, 3
    y = (np.arange(n) % K).astype(np.int32)
    X = rng.normal(size=(n, d)) + 0.7 * y[:, None] * (np.arange(d) < 2)
    w = rng.integers(1, 4, n).astype(float)
    V = rng.normal(size=(d, 2))
    PI = np.bincount(y) / n

    def evaluator(Xp, yp, wp):
        p = check_problem(Xp, yp, PI, np.array([0.6, 0.9, 1.2]), wp)
        core = {"exact": lambda: exact_passes(p, 1), "linear": lambda: linear_passes(p, 200, 1),
                "rgrid": lambda: r_grid(p, 200, 1), "interp": lambda: interp_grid(p, 200, 1)}[kind]()
        cls = NormalisedEvaluator if kind == "interp" else Evaluator
        return cls(p, core, None if kind == "exact" else 200, 1)

    ev = evaluator(X, y, w)
    value, G = ev.value_and_grad(V)
    idx = np.repeat(np.arange(n), w.astype(int))
    rvalue, rG = evaluator(X[idx], y[idx], None).value_and_grad(V)
    assert value == pytest.approx(rvalue, rel=1e-12)
    np.testing.assert_allclose(G, rG, rtol=1e-9, atol=1e-12 * np.abs(rG).max())
    if kind != "rgrid":
        np.testing.assert_allclose(G, central_difference(ev.value, V, 1e-6), rtol=1e-5, atol=1e-8)
    with pytest.raises(ValueError, match="strictly positive"):
        check_problem(X, y, PI, np.ones(K), np.r_[0.0, w[1:]])


def test_weighted_class_sums_are_repeated_rows():
    """Predictions' class densities (_ksum.class_sums) with the training
    points' weights: integer weights as repeated rows, unit weights as none."""
    from pyopnb import _ksum

    rng = np.random.default_rng(12)
    n, K, ncol = 90, 3, 2
    y0 = (np.arange(n) % K).astype(np.intp)
    Ztr = np.ascontiguousarray(rng.normal(size=(n, ncol)) + y0[:, None])
    Zte = np.ascontiguousarray(rng.normal(size=(25, ncol)) + 1.0)
    H = np.array([[0.5, 0.7], [0.9, 0.6], [1.1, 0.8]])
    reps = rng.integers(1, 4, n)
    idx = np.repeat(np.arange(n), reps)
    for log_S in (True, False):
        got = _ksum.class_sums(Ztr, y0, K, H, Zte, DEFAULT_BETA, log_S, 1, reps.astype(float))
        want = _ksum.class_sums(np.ascontiguousarray(Ztr[idx]), y0[idx].copy(), K, H, Zte, DEFAULT_BETA, log_S, 1)
        np.testing.assert_allclose(got, want, rtol=1e-12)
        ones = _ksum.class_sums(Ztr, y0, K, H, Zte, DEFAULT_BETA, log_S, 1, np.ones(n))
        assert ones.tobytes() == _ksum.class_sums(Ztr, y0, K, H, Zte, DEFAULT_BETA, log_S, 1).tobytes()
    with pytest.raises(ValueError, match="positive finite weights"):
        _ksum.class_sums(Ztr, y0, K, H, Zte, DEFAULT_BETA, True, 1, np.zeros(n))


# ---------------------------------------------------------------------------
# the public fits: OPNB, opnb_journal and OPNBClassifier with weights
# ---------------------------------------------------------------------------

def _pima_weights(pima, seed=0):
    w = np.random.default_rng(seed).uniform(0.2, 3.0, len(pima.y_train))
    w[::7] = 0.0
    return w


@pytest.mark.parametrize("journal", [False, True])
@pytest.mark.parametrize("nbin", [None, 300])
def test_zero_weights_drop_rows_and_unit_weights_are_none(pima, journal, nbin):
    """Rows of weight 0 are the fit without them, and weights all 1 the fit
    without weights: to the bit, and so are the predictions."""
    from pyopnb import OPNB, opnb_journal, predict

    fit = opnb_journal if journal else OPNB
    X, y = np.asarray(pima.X_train), np.asarray(pima.y_train)
    w = _pima_weights(pima)
    keep = w > 0
    a = fit(X, y, ndim=2, nbin=nbin, weights=w)
    b = fit(X[keep], y[keep], ndim=2, nbin=nbin, weights=w[keep])
    assert a.V.tobytes() == b.V.tobytes() and a.fval == b.fval
    pa, pb = predict(a, pima.X_test)["posterior"], predict(b, pima.X_test)["posterior"]
    assert pa.tobytes() == pb.tobytes()
    ones = fit(X, y, ndim=2, nbin=nbin, weights=np.ones(len(y)))
    none = fit(X, y, ndim=2, nbin=nbin)
    assert ones.V.tobytes() == none.V.tobytes() and ones.w is None
    # weights move the fit: the weighted priors are the classes' weight shares
    shares = np.array([w[y == c].sum() for c in a.ynames]) / w.sum()
    np.testing.assert_allclose(a.PI, shares, rtol=1e-14)
    assert not np.allclose(a.PI, none.PI)


def test_weighted_predictions_use_the_weights(pima):
    """A weighted model's class densities weigh its training rows: the
    posteriors are those of the densities computed with the weights."""
    from pyopnb import OPNB, predict
    from pyopnb.naive_bayes import class_log_densities, posteriors

    w = _pima_weights(pima, 1)
    m = OPNB(pima.X_train, pima.y_train, ndim=2, nbin=None, weights=w)
    ptr = (m.X - m.mu) @ m.V
    pte = (np.asarray(pima.X_test, dtype=float) - m.mu) @ m.V
    lj = np.log(m.PI) + class_log_densities(ptr, m.y0, m.nc, m.h, pte, True, w=m.w)
    np.testing.assert_allclose(predict(m, pima.X_test)["posterior"], posteriors(lj)[1], rtol=1e-10, atol=1e-13)
    unweighted = lj - class_log_densities(ptr, m.y0, m.nc, m.h, pte, True, w=m.w) + \
        class_log_densities(ptr, m.y0, m.nc, m.h, pte, True)
    assert not np.allclose(posteriors(unweighted)[1], posteriors(lj)[1])


def test_weighted_model_files(pima, tmp_path):
    """JSON and joblib keep the weights; an RDS file, which R's predict
    would read without them, is refused."""
    import joblib

    from pyopnb import OPNB, predict, read_json, write_json, write_rds

    m = OPNB(pima.X_train, pima.y_train, ndim=2, weights=_pima_weights(pima))
    write_json(m, tmp_path / "m.json")
    back = read_json(tmp_path / "m.json")
    assert back.w.tobytes() == m.w.tobytes()
    assert predict(back, pima.X_test)["posterior"].tobytes() == predict(m, pima.X_test)["posterior"].tobytes()
    joblib.dump(m, tmp_path / "m.joblib")
    assert joblib.load(tmp_path / "m.joblib").w.tobytes() == m.w.tobytes()
    with pytest.raises(ValueError, match="R's predict.OPNB has none"):
        write_rds(m, tmp_path / "m.rds")
    assert not (tmp_path / "m.rds").exists()


def test_bad_weights_are_refused(pima):
    from pyopnb import OPNB

    X, y = pima.X_train, pima.y_train
    n = len(y)
    for bad, match in ((np.ones(n - 1), "one weight per row"), (np.r_[-1.0, np.ones(n - 1)], "negative"),
                       (np.r_[np.nan, np.ones(n - 1)], "NaN"), (np.zeros(n), "zero for every row"),
                       (["a"] * n, "numbers")):
        with pytest.raises(ValueError, match=match):
            OPNB(X, y, ndim=2, weights=bad)
    w = np.where(np.asarray(y) == "Yes", 0.0, 1.0)
    with pytest.raises(ValueError, match="class 'Yes' has weight 0 on every row"):
        OPNB(X, y, ndim=2, weights=w)


def test_estimator_sample_weight_and_class_weight(pima):
    from pyopnb import OPNBClassifier

    X, y = np.asarray(pima.X_train), np.asarray(pima.y_train)
    w = _pima_weights(pima, 2)
    keep = w > 0
    a = OPNBClassifier(ndim=2, nbin=None).fit(X, y, sample_weight=w)
    b = OPNBClassifier(ndim=2, nbin=None).fit(X[keep], y[keep], sample_weight=w[keep])
    assert a.model_.V.tobytes() == b.model_.V.tobytes()
    with pytest.raises(ValueError, match="sample_weight"):
        OPNBClassifier(ndim=2).fit(X, y, sample_weight=np.ones(3))
    # balanced classes weigh alike: equal priors
    bal = OPNBClassifier(ndim=2, nbin=None, class_weight="balanced").fit(X, y)
    np.testing.assert_allclose(bal.model_.PI, [0.5, 0.5], rtol=1e-14)
    # a class_weight mapping multiplies sample_weight
    cw = OPNBClassifier(ndim=2, nbin=None, class_weight={"No": 1.0, "Yes": 3.0}).fit(X, y, sample_weight=w)
    by_hand = OPNBClassifier(ndim=2, nbin=None).fit(X, y, sample_weight=w * np.where(y == "Yes", 3.0, 1.0))
    assert cw.model_.V.tobytes() == by_hand.model_.V.tobytes()
    with pytest.raises(ValueError, match="not classes: 'maybe'"):
        OPNBClassifier(ndim=2, class_weight={"maybe": 2.0}).fit(X, y)


def test_weighted_ensembles(pima):
    """scikit-learn's weighted ensembles take the estimator."""
    from sklearn.ensemble import AdaBoostClassifier, StackingClassifier, VotingClassifier
    from sklearn.linear_model import LogisticRegression

    from pyopnb import OPNBClassifier

    X, y = np.asarray(pima.X_train), np.asarray(pima.y_train)
    w = np.random.default_rng(3).uniform(0.5, 2.0, len(y))
    base = [("opnb", OPNBClassifier(ndim=2, nbin=200)), ("lr", LogisticRegression(max_iter=2000))]
    for model in (VotingClassifier(base, voting="soft"), StackingClassifier(base, stack_method="decision_function")):
        assert model.fit(X, y, sample_weight=w).score(pima.X_test, pima.y_test) > 0.7
    ada = AdaBoostClassifier(OPNBClassifier(ndim=2, nbin=200), n_estimators=3, random_state=0).fit(X, y)
    assert ada.score(pima.X_test, pima.y_test) > 0.7


def test_cross_validation_with_weights(pima):
    """OPNB_CV_lam and opnb_journal_cv with weights: unit weights are none
    (the same accuracies and model), and rows of weight 0 count for
    nothing: the fits and accuracies of the data without them, on folds
    without them."""
    from pyopnb import OPNB_CV_lam, opnb_journal_cv

    X, y = np.asarray(pima.X_train)[:150], np.asarray(pima.y_train)[:150]
    n = len(y)
    folds = [np.arange(i, n, 3) for i in range(3)]
    a = OPNB_CV_lam(X, y, folds, nlam=2, ndim=2, nbin=200, weights=np.ones(n))
    b = OPNB_CV_lam(X, y, folds, nlam=2, ndim=2, nbin=200)
    assert a["cv_stats"].tobytes() == b["cv_stats"].tobytes()
    assert a["model"].V.tobytes() == b["model"].V.tobytes()
    w = np.where(np.arange(n) % 5 == 0, 0.0, 1.0 + (np.arange(n) % 3))
    keep = w > 0
    renumber = np.cumsum(keep) - 1
    kept_folds = [renumber[f[keep[f]]] for f in folds]
    c = OPNB_CV_lam(X, y, folds, nlam=2, ndim=2, nbin=200, weights=w)
    d = OPNB_CV_lam(X[keep], y[keep], kept_folds, nlam=2, ndim=2, nbin=200, weights=w[keep])
    np.testing.assert_array_equal(c["cv_stats"], d["cv_stats"])
    assert c["model"].V.tobytes() == d["model"].V.tobytes()
    e = opnb_journal_cv(X, y, folds, gamma=[1.0], ndim=[1, 2], nbin=200, weights=w)
    f = opnb_journal_cv(X[keep], y[keep], kept_folds, gamma=[1.0], ndim=[1, 2], nbin=200, weights=w[keep])
    np.testing.assert_array_equal(e["cv_stats"], f["cv_stats"])


def test_metadata_routing_takes_sample_weight(pima):
    """set_fit_request: GridSearchCV routes sample_weight to the estimator's
    fit, each fold's rows' weights."""
    import sklearn
    from sklearn.model_selection import GridSearchCV

    from pyopnb import OPNBClassifier

    w = np.random.default_rng(4).uniform(0.5, 2.0, len(pima.y_train))
    with sklearn.config_context(enable_metadata_routing=True):
        est = OPNBClassifier(ndim=2, nbin=200).set_fit_request(sample_weight=True).set_score_request(
            sample_weight=False)
        gs = GridSearchCV(est, {"lam": [1e-3, 1e-2]}, cv=3).fit(pima.X_train, pima.y_train, sample_weight=w)
    refit = OPNBClassifier(ndim=2, nbin=200, lam=gs.best_params_["lam"]).fit(pima.X_train, pima.y_train,
                                                                           sample_weight=w)
    assert gs.best_estimator_.model_.V.tobytes() == refit.model_.V.tobytes()
