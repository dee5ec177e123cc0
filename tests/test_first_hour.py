"""What a new user meets first (issue 13): columns matched by name, loud
optimiser failures and underflow, file modes, plots of any class count and of
one column, scikit-learn conventions."""
import os
import warnings

import matplotlib
import numpy as np
import pytest

from pyopnb import OPNB, OPNB_CV_lam, predict, write_rds
from pyopnb.datasets import load_pima
from pyopnb.estimator import OPNBClassifier
from pyopnb.rio import write_json

matplotlib.use("Agg")
pd = pytest.importorskip("pandas", reason="pandas is not installed")


@pytest.fixture(scope="module")
def pima():
    return load_pima()


@pytest.fixture(scope="module")
def df_model(pima):
    return OPNB(pd.DataFrame(pima.X_train, columns=list(pima.feature_names)), pima.y_train, ndim=3, nbin=None)


def test_predict_matches_dataframe_columns_by_name(df_model, pima):
    te = pd.DataFrame(pima.X_test, columns=list(pima.feature_names))
    want = predict(df_model, te)
    shuffled = te[list(reversed(pima.feature_names))]
    got = predict(df_model, shuffled)
    np.testing.assert_array_equal(got["posterior"], want["posterior"])
    np.testing.assert_array_equal(df_model.project(shuffled), df_model.project(te))
    # positionally, the reversed table is another data set: the fix is what makes these equal
    with pytest.warns(RuntimeWarning, match="underflowed"):
        assert not np.array_equal(predict(df_model, shuffled.to_numpy())["posterior"], want["posterior"])
    with pytest.raises(ValueError, match=r"Xte: columns differ from the training data: missing \['bmi'\]; "
                                         r"not in training \['BMI'\]"):
        predict(df_model, te.rename(columns={"bmi": "BMI"}))
    with pytest.raises(ValueError, match=r"missing \['age'\]"):
        predict(df_model, te.drop(columns=["age"]))
    with pytest.raises(ValueError, match="repeated column names"):
        predict(df_model, pd.concat([te, te[["glu"]]], axis=1))


def test_estimator_matches_dataframe_columns_by_name(pima):
    tr = pd.DataFrame(pima.X_train, columns=list(pima.feature_names))
    te = pd.DataFrame(pima.X_test, columns=list(pima.feature_names))
    clf = OPNBClassifier(ndim=2, nbin=None).fit(tr, pima.y_train)
    shuffled = te[list(reversed(pima.feature_names))]
    np.testing.assert_array_equal(clf.predict_proba(shuffled), clf.predict_proba(te))
    np.testing.assert_array_equal(clf.transform(shuffled), clf.transform(te))
    with pytest.raises(ValueError, match=r"X: columns differ from the training data: missing \['npreg'\]"):
        clf.predict(te.drop(columns=["npreg"]))


def test_estimator_feature_names_out_and_pandas_output(pima):
    tr = pd.DataFrame(pima.X_train, columns=list(pima.feature_names))
    clf = OPNBClassifier(ndim=3, nbin=None).fit(tr, pima.y_train)
    assert list(clf.get_feature_names_out()) == ["opnbclassifier0", "opnbclassifier1", "opnbclassifier2"]
    out = clf.set_output(transform="pandas").transform(tr)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == list(clf.get_feature_names_out())
    np.testing.assert_allclose(out.to_numpy(), (pima.X_train - clf.model_.mu) @ clf.model_.V, rtol=1e-12)


def test_estimator_takes_no_sample_weight(pima):
    # weights would be ignored by the unweighted kernel sums: refused, not silently dropped
    with pytest.raises(TypeError):
        OPNBClassifier(ndim=2).fit(pima.X_train, pima.y_train, sample_weight=np.ones(200))


def test_predict_warns_when_r_numbers_underflow(df_model, pima):
    far = pima.X_test[:5].copy()
    far[:2] *= 60.0  # every class density of these rows underflows in a product
    with pytest.warns(RuntimeWarning, match=r"2 of 5 rows underflowed.*log=True"):
        r = predict(df_model, far)
    np.testing.assert_array_equal(r["posterior"][:2], 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        lg = predict(df_model, far, log=True)
        predict(df_model, pima.X_test)  # no underflow, no warning
    assert np.all(lg["posterior"][:2].max(axis=1) > 0.99)


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_written_files_get_the_umask_mode(df_model, tmp_path, umask):
    old = os.umask(umask)
    try:
        write_rds(df_model, tmp_path / "m.rds")
        write_json(df_model, tmp_path / "m.json")
        (tmp_path / "plain").write_text("x")
    finally:
        os.umask(old)
    plain = (tmp_path / "plain").stat().st_mode & 0o777
    assert plain == 0o666 & ~umask
    assert (tmp_path / "m.rds").stat().st_mode & 0o777 == plain
    assert (tmp_path / "m.json").stat().st_mode & 0o777 == plain
    # an existing file keeps its own mode, as a plain open() would leave it
    os.chmod(tmp_path / "m.rds", 0o600)
    write_rds(df_model, tmp_path / "m.rds")
    assert (tmp_path / "m.rds").stat().st_mode & 0o777 == 0o600


def test_cv_with_an_integer_number_of_folds(pima):
    a = OPNB_CV_lam(pima.X_train, pima.y_train, 4, nlam=2, ndim=2, nbin=None)
    b = OPNB_CV_lam(pima.X_train, pima.y_train, 4, nlam=2, ndim=2, nbin=None)
    np.testing.assert_array_equal(a["cv_stats"], b["cv_stats"])
    from sklearn.model_selection import StratifiedKFold

    folds = [t for _, t in StratifiedKFold(4, shuffle=True, random_state=0).split(pima.X_train, pima.y_train)]
    c = OPNB_CV_lam(pima.X_train, pima.y_train, folds, nlam=2, ndim=2, nbin=None)
    np.testing.assert_array_equal(a["cv_stats"], c["cv_stats"])
    # stratified: each fold holds its share of the smaller class (68 of 200)
    assert all(abs(np.sum(pima.y_train[f] == "Yes") - 68 / 4) <= 1 for f in folds)
    with pytest.raises(ValueError, match="integer >= 2"):
        OPNB_CV_lam(pima.X_train, pima.y_train, 1)
    with pytest.raises(ValueError, match="smallest class has 68"):
        OPNB_CV_lam(pima.X_train, pima.y_train, 100)


def _scatters(ax):
    from matplotlib.collections import PathCollection

    return [c for c in ax.collections if isinstance(c, PathCollection)]


def test_plot_styles_stay_distinct_past_ten_classes():
    from matplotlib.colors import to_rgba

    from pyopnb.plot import class_styles, plot

    for K in (3, 10, 26, 60, 75):
        styles = class_styles(K)
        colours = {tuple(np.round(to_rgba(c), 6)) for c, _ in styles}
        assert len(colours) == K, K
    rng = np.random.default_rng(0)
    K = 26
    y = np.repeat([chr(65 + k) for k in range(K)], 12)
    X = rng.normal(size=(y.size, 3)) + np.repeat(rng.normal(scale=3, size=(K, 3)), 12, axis=0)
    m = OPNB(X, y, ndim=2, nbin=None)
    ax = plot(m)
    faces = [tuple(np.round(c.get_facecolor()[0], 6)) for c in _scatters(ax)]
    assert len(set(faces)) == K
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == [chr(65 + k) for k in range(K)]
    # beside the axes, not over the data
    fig = ax.figure
    fig.canvas.draw()
    lbox = legend.get_window_extent()
    abox = ax.get_window_extent()
    assert lbox.x0 >= abox.x1


def test_plot_one_column_model_draws_class_densities(pima):
    from pyopnb.plot import plot

    m = OPNB(pima.X_train, pima.y_train, ndim=1, nbin=None)
    ax = plot(m, pima.X_test, yte=pima.y_test)
    curves = ax.get_lines()
    dens = [ln for ln in curves if ln.get_label() in ("No", "Yes")]
    assert len(dens) == 2
    # PI_k f_k integrates to PI_k along the projection (the curve spans the data widely)
    for ln in dens:
        x, f = ln.get_xdata(), ln.get_ydata()
        k = list(m.ynames).index(ln.get_label())
        assert np.trapezoid(f, x) == pytest.approx(m.PI[k], abs=0.01)
    # training rug (200 points) and test points by true class (332 points in two groups)
    sizes = sorted(len(c.get_offsets()) for c in _scatters(ax))
    assert sum(sizes) == 200 + 332 and len(sizes) == 4
    with pytest.raises(ValueError, match=r"dims must be \(1,\)"):
        plot(m, dims=(1, 2))


def test_plot_colours_test_points_by_true_class(df_model, pima):
    from pyopnb.plot import plot

    ax = plot(df_model, pima.X_test, yte=pima.y_test)
    sc = _scatters(ax)
    hollow = [c for c in sc if len(c.get_facecolors()) == 0 or c.get_facecolors()[0][3] == 0]
    assert sorted(len(c.get_offsets()) for c in hollow) == sorted(
        [int(np.sum(pima.y_test == "No")), int(np.sum(pima.y_test == "Yes"))])
    train = [c for c in sc if c not in hollow]
    for t, h in zip(sorted(train, key=lambda c: c.get_label()), hollow):
        assert np.allclose(t.get_facecolors()[0][:3], h.get_edgecolors()[0][:3])
    with pytest.raises(ValueError, match=r"labels \['maybe'\] that are not among"):
        plot(df_model, pima.X_test[:3], yte=["No", "maybe", "Yes"])
    with pytest.raises(ValueError, match="yte has 2 labels but Xte has 3 rows"):
        plot(df_model, pima.X_test[:3], yte=["No", "Yes"])
