"""The fitted model and predict(): fields, pickling, labels, bad input,
columns matched by name, R's underflow; behaviour beyond R's fixtures."""
import pickle
import warnings

import matplotlib
import numpy as np
import pytest

from pyopnb import OPNB, predict
from pyopnb.labels import factor

matplotlib.use("Agg")
pd = pytest.importorskip("pandas", reason="pandas is not installed")


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
    # R's y is 1-based; y0, not one of R's fields, the 0-based codes pyopnb's functions take
    assert "y0" not in model.keys()
    np.testing.assert_array_equal(model.y0, model.y - 1)
    assert model.y0.min() == 0 and model.ynames[model.y0].tolist() == list(pima.y_train)


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
        (dict(lam=-1.0), r"lam must be finite and >= 0 \(0: no penalty\)"),
        (dict(lam=np.inf), r"lam must be finite and >= 0"),
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
    with pytest.raises(ValueError, match=r"ndim must be from 1 to the model's columns, ncol\(V\) = 3, got 4"):
        predict(model, np.ones((3, 7)), ndim=4)
    with pytest.raises(ValueError, match="model must be an OPNBModel"):
        predict({"V": 1}, np.ones((3, 7)))
    # one row given as a vector: say so, not "1 columns"
    with pytest.raises(ValueError, match=r"Xte is one-dimensional \(7 values\) but the model has 7 features: "
                                         r"pass rows as a 2-D array, one row as Xte.reshape\(1, -1\)"):
        predict(model, np.ones(7))
    np.testing.assert_array_equal(predict(model, np.ones((1, 7)))["posterior"],
                                  predict(model, np.ones(7).reshape(1, -1))["posterior"])


def test_lam_zero_fits_as_R_fits_it(pima):
    # R's OPNB accepts lam = 0 (no penalty); only negative or infinite lam is refused
    m0 = OPNB(pima.X_train, pima.y_train, ndim=2, lam=0.0, maxit=20)
    m1 = OPNB(pima.X_train, pima.y_train, ndim=2, lam=1e-3, maxit=20)
    assert m0.lam == 0.0 and np.isfinite(m0.fval)
    assert m0.fval != m1.fval


def test_dataframe_column_named_in_errors(pima):
    pd = pytest.importorskip("pandas", reason="pandas is not installed")
    df = pd.DataFrame(pima.X_train.copy(), columns=list(pima.feature_names))  # pandas 2 shares the array
    df.loc[3, "bmi"] = np.nan
    with pytest.raises(ValueError, match="column 'bmi'"):
        OPNB(df, pima.y_train)


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
