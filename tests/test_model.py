"""OPNB(), predict(), OPNB_CV_lam() and plot(): behaviour beyond R's fixtures."""
import pickle

import matplotlib
import numpy as np
import pytest

from pyopnb import OPNB, OPNB_CV_lam, predict
from pyopnb.datasets import load_pima
from pyopnb.labels import factor
from pyopnb.objective import f_NB_exact

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def pima():
    return load_pima()


@pytest.fixture(scope="module")
def model(pima):
    return OPNB(pima.X_train, pima.y_train, ndim=3, nbin=None)


def test_fields_as_attributes_and_items(model, pima):
    assert model.keys() == ("V", "X", "y", "PI", "h", "nc", "mu", "scales", "ynames", "lam", "fval")
    for k in model.keys():
        assert model[k] is getattr(model, k)
    assert model.V.shape == (7, 3) and model.h.shape == (2, 3)
    # V is in raw units: projections of raw data are (X - mu) V, columns of unit norm once rescaled
    np.testing.assert_allclose(np.linalg.norm(model.V / model.scales[:, None], axis=0), 1.0, rtol=1e-12)
    np.testing.assert_allclose(model.h[0], model.h[1])
    with pytest.raises(KeyError):
        model["nope"]


def test_pickled_model_predicts_identically(model, pima, tmp_path):
    path = tmp_path / "m.pkl"
    path.write_bytes(pickle.dumps(model))
    back = pickle.loads(path.read_bytes())
    a, b = predict(model, pima.X_test), predict(back, pima.X_test)
    np.testing.assert_array_equal(a["posterior"], b["posterior"])
    np.testing.assert_array_equal(a["class"], b["class"])


def test_ndim_one_works(pima):
    # R stops with "incorrect number of dimensions" here (SPEC defect 2)
    m = OPNB(pima.X_train, pima.y_train, ndim=1)
    assert m.V.shape == (7, 1)
    p = predict(m, pima.X_test)
    assert p["posterior"].shape == (332, 2)
    assert np.mean(p["class"] == pima.y_test) > 0.7
    p1 = predict(OPNB(pima.X_train, pima.y_train, ndim=3), pima.X_test, ndim=1)
    assert p1["posterior"].shape == (332, 2)


def test_correct_objective_switch(pima):
    r = OPNB(pima.X_train, pima.y_train, ndim=2, nbin=None)
    c = OPNB(pima.X_train, pima.y_train, ndim=2, nbin=None, correct=True)
    assert r.fval != pytest.approx(c.fval, rel=1e-6)  # unequal classes: squared priors change the fit
    # the correct fit's fval is the paper's objective at its V
    Xs = (pima.X_train - c.mu) * c.scales
    Vopt = (c.V / c.scales[:, None]) / c.h[0]
    lam_pen = c.lam * np.sum(Vopt**2)
    y0 = c.y - 1
    assert c.fval == pytest.approx(f_NB_exact(Vopt, Xs, y0, c.PI, np.ones(2), compat="correct") - lam_pen, rel=1e-10)


def test_callback_reports_progress(pima):
    seen = []
    OPNB(pima.X_train, pima.y_train, ndim=2, callback=lambda it, f, g: seen.append((it, f, g)))
    assert len(seen) >= 2
    assert [s[0] for s in seen] == list(range(1, len(seen) + 1))
    assert all(np.isfinite(s[1]) and s[2] >= 0 for s in seen)


def test_labels_follow_R_factor_levels():
    lev, codes = factor(np.array(["b", "a", "B", "c"]))
    assert list(lev) == ["a", "b", "B", "c"]  # en_US collation, as R
    lev, codes = factor(np.array([10, 2, 2, 33]))
    assert list(lev) == [2, 10, 33] and list(codes) == [1, 0, 0, 2]
    lev, codes = factor(np.array([True, False, True]))
    assert list(lev) == [False, True]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(X=np.c_[np.ones(10), np.r_[np.nan, np.ones(9)]]), "column 1"),
        (dict(y=np.zeros(10)), "at least two classes"),
        (dict(y=np.r_[np.zeros(5), np.ones(4)]), "9 labels but X has 10 rows"),
        (dict(ndim=0), "ndim must be from 1 to ncol"),
        (dict(ndim=3), "ndim must be from 1 to ncol"),
        (dict(lam=0.0), r"lam must be positive and finite \(R requires it strictly positive\)"),
        (dict(lam=-1.0), r"lam must be positive and finite \(R requires it strictly positive\)"),
        (dict(C=lambda X, y: np.eye(3)), "C must return a 2 x 2 matrix"),
        (dict(C=lambda X, y: np.array([[1.0, 2.0], [0.0, 1.0]])), "symmetric"),
        (dict(V0=lambda X, y, nd: np.ones((3, nd))), "V0 must be a function which returns a matrix with ncol"),
        (dict(nbin=1), "nbin must be None"),
    ],
)
def test_bad_input(kwargs, match):
    rng = np.random.default_rng(0)
    args = dict(X=rng.normal(size=(10, 2)), y=np.r_[np.zeros(5), np.ones(5)])
    args.update(kwargs)
    X, y = args.pop("X"), args.pop("y")
    with pytest.raises(ValueError, match=match):
        OPNB(X, y, **args)


def test_predict_bad_input(model):
    with pytest.raises(ValueError, match="Xte has 6 columns but the model was fitted on 7"):
        predict(model, np.ones((3, 6)))
    bad = np.ones((3, 7))
    bad[1, 4] = np.nan
    with pytest.raises(ValueError, match=r"Xte has missing values \(NaN\) in column 4 \(1 row\)"):
        predict(model, bad)
    bad[1, 4] = -np.inf
    with pytest.raises(ValueError, match=r"Xte has infinite values in column 4 \(1 row\)"):
        predict(model, bad)
    with pytest.raises(ValueError, match="ndim must be from 1"):
        predict(model, np.ones((3, 7)), ndim=4)
    with pytest.raises(ValueError, match="model must be an OPNBModel"):
        predict({"V": 1}, np.ones((3, 7)))


def test_dataframe_column_named_in_errors(pima):
    pd = pytest.importorskip("pandas", reason="pandas is not installed")
    df = pd.DataFrame(pima.X_train, columns=list(pima.feature_names))
    df.loc[3, "bmi"] = np.nan
    with pytest.raises(ValueError, match="column 'bmi'"):
        OPNB(df, pima.y_train)


def test_cv_parallel_equals_serial(pima):
    rng = np.random.default_rng(1)
    folds = np.array_split(rng.permutation(200), 4)
    a = OPNB_CV_lam(pima.X_train, pima.y_train, folds, nlam=2, ndim=2, nbin=None)
    b = OPNB_CV_lam(pima.X_train, pima.y_train, folds, nlam=2, ndim=2, nbin=None, n_jobs=2)
    np.testing.assert_allclose(a["cv_stats"], b["cv_stats"])
    assert a["model"].lam == b["model"].lam
    np.testing.assert_allclose(a["cv_stats"][:, 0], [1e-4, 2e-4])
    assert np.all((a["cv_stats"][:, 1] > 0.6) & (a["cv_stats"][:, 1] <= 1))
    with pytest.raises(ValueError, match="0-based"):
        OPNB_CV_lam(pima.X_train, pima.y_train, [np.arange(1, 101), np.arange(101, 201)])
    with pytest.raises(ValueError, match="repeats rows"):
        OPNB_CV_lam(pima.X_train, pima.y_train, [np.arange(0, 100), np.arange(50, 150)])


def test_plot_draws_what_it_says(model, pima, tmp_path):
    from matplotlib.collections import PathCollection

    from pyopnb.plot import plot

    ax = plot(model, pima.X_test, dims=(1, 3), add_cols=True)
    scatters = [c for c in ax.collections if isinstance(c, PathCollection)]
    sizes = sorted(len(c.get_offsets()) for c in scatters)
    assert sizes == [68, 132, 332]  # classes Yes, No, and the test points
    assert ax.get_xlabel() == "projection 1" and ax.get_ylabel() == "projection 3"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["No", "Yes", "test points"]
    # a boundary was drawn (contour lines) and the figure renders to a PNG
    assert any(type(c).__name__ == "QuadContourSet" for c in ax.collections)
    out = tmp_path / "p.png"
    ax.figure.savefig(out)
    assert out.stat().st_size > 10_000
    with pytest.raises(ValueError, match="dims must be two different columns"):
        plot(model, dims=(1, 4))


def test_plot_uses_the_bandwidths_of_the_columns_shown(model):
    # R uses those of columns 1 and 2 whatever dims says (SPEC defect 3)
    from matplotlib.pyplot import subplots

    from pyopnb.plot import plot

    m2 = type(model)(**{**{k: model[k] for k in model.keys()}, "h": model.h * np.array([1.0, 1.0, 3.0])})
    _, ax1 = subplots()
    _, ax2 = subplots()
    plot(model, dims=(1, 2), ax=ax1)
    plot(m2, dims=(1, 2), ax=ax2)
    seg1 = [p.vertices for c in ax1.collections if hasattr(c, "get_paths") for p in c.get_paths()]
    seg2 = [p.vertices for c in ax2.collections if hasattr(c, "get_paths") for p in c.get_paths()]
    assert all(np.array_equal(a, b) for a, b in zip(seg1, seg2))  # column 3's bandwidth plays no part
    _, ax3 = subplots()
    _, ax4 = subplots()
    plot(model, dims=(1, 3), ax=ax3)
    plot(m2, dims=(1, 3), ax=ax4)
    seg3 = [p.vertices for c in ax3.collections if type(c).__name__ != "PathCollection" for p in c.get_paths()]
    seg4 = [p.vertices for c in ax4.collections if type(c).__name__ != "PathCollection" for p in c.get_paths()]
    assert any(a.shape != b.shape or not np.allclose(a, b) for a, b in zip(seg3, seg4))


def test_openmp_spin_default_and_user_setting():
    """pyopnb shortens OpenMP's idle spinning before its core loads, unless
    the user chose a value."""
    import os
    import subprocess
    import sys

    code = "import os, pyopnb; print(os.environ['GOMP_SPINCOUNT'])"
    env = {k: v for k, v in os.environ.items() if k != "GOMP_SPINCOUNT"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "10000"
    out = subprocess.run([sys.executable, "-c", code], env={**env, "GOMP_SPINCOUNT": "5"},
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "5"
