"""OPNBClassifier in the scikit-learn world."""
import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from pyopnb.estimator import OPNBClassifier

pd = pytest.importorskip("pandas", reason="pandas is not installed")


# pyopnb's weights are in proportion (AdaBoost's, summing to 1, fit as those summing to n), and counts stay
# counts (a variance's n - 1, the journal bandwidth's n_k): integer weights are close to repeated rows, not the
# same fit (pyopnb.weights)
_WEIGHTS_ARE_NOT_REPEATS = {"check_sample_weight_equivalence_on_dense_data":
                            "weights are proportions and counts stay counts (pyopnb.weights): close to repeated "
                            "rows, not the same fit"}


@parametrize_with_checks([OPNBClassifier(nbin=50), OPNBClassifier(nbin=None, ndim=2),
                          OPNBClassifier(formulation="journal", nbin=None, ndim=2)],
                         expected_failed_checks=lambda est: _WEIGHTS_ARE_NOT_REPEATS)
def test_sklearn_checks(estimator, check):
    check(estimator)


def test_pipeline_and_grid_search(pima):
    pipe = make_pipeline(StandardScaler(), OPNBClassifier(ndim=3, nbin=200))
    gs = GridSearchCV(pipe, {"opnbclassifier__lam": [1e-3, 1e-2]}, cv=3)
    gs.fit(pima.X_train, pima.y_train)
    assert gs.best_params_["opnbclassifier__lam"] in (1e-3, 1e-2)
    acc = gs.score(pima.X_test, pima.y_test)
    assert 0.7 < acc <= 1.0


def test_dataframe_and_label_kinds(pima):
    pd = pytest.importorskip("pandas", reason="pandas is not installed")
    df = pd.DataFrame(pima.X_train, columns=list(pima.feature_names))
    base = OPNBClassifier(ndim=2, nbin=None).fit(df, pima.y_train)
    assert list(base.feature_names_in_) == list(pima.feature_names)
    assert base.n_features_in_ == 7
    assert list(base.classes_) == ["No", "Yes"]
    proba = base.predict_proba(pd.DataFrame(pima.X_test, columns=list(pima.feature_names)))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    labels = {
        "int": (pima.y_train == "Yes").astype(int),
        "bool": pima.y_train == "Yes",
        "categorical": pd.Categorical(pima.y_train, categories=["No", "Yes"]),
    }
    for kind, y in labels.items():
        clf = OPNBClassifier(ndim=2, nbin=None).fit(df, y)
        np.testing.assert_allclose(clf.predict_proba(df), base.predict_proba(df), rtol=1e-10, atol=1e-12, err_msg=kind)
        assert set(np.unique(clf.predict(df))) <= set(np.unique(np.asarray(y)))


def test_transform_is_the_projection(pima):
    clf = OPNBClassifier(ndim=3, nbin=None).fit(pima.X_train, pima.y_train)
    Z = clf.transform(pima.X_test)
    np.testing.assert_allclose(Z, (pima.X_test - clf.model_.mu) @ clf.model_.V, rtol=1e-12)
    assert Z.shape == (pima.X_test.shape[0], 3)
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(pima.X_test)), clf.predict_proba(pima.X_test), rtol=1e-12)


def test_another_formulations_parameters_are_refused_at_fit(pima):
    X, y = pima.X_train, pima.y_train
    with pytest.raises(ValueError, match=r"gamma belongs to formulation 'journal': formulation 'R' takes"):
        OPNBClassifier(gamma=3).fit(X, y)
    with pytest.raises(ValueError, match=r"prescale belongs to formulation 'journal'"):
        OPNBClassifier(prescale=True).fit(X, y)
    with pytest.raises(ValueError, match=r"lam belongs to formulations? 'R' and 'correct'"):
        OPNBClassifier(formulation="journal", lam=0.1).fit(X, y)
    with pytest.raises(ValueError, match=r"correct=True belongs to formulation 'R'"):
        with pytest.warns(FutureWarning):
            OPNBClassifier(formulation="journal", correct=True).fit(X, y)
    # the paper's objective is a formulation; correct=True its deprecated alias
    a = OPNBClassifier(formulation="correct", ndim=2, nbin=None).fit(X, y)
    with pytest.warns(FutureWarning, match="formulation='correct'"):
        b = OPNBClassifier(correct=True, ndim=2, nbin=None).fit(X, y)
    np.testing.assert_array_equal(a.model_.V, b.model_.V)
    assert type(a.formulation_).__name__ == "CorrectFormulation"


def test_a_grid_search_warns_once_per_fit(pima):
    import warnings

    from sklearn.model_selection import GridSearchCV

    from pyopnb import ConvergenceWarning

    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        GridSearchCV(OPNBClassifier(ndim=2, nbin=None, maxit=2), {"lam": [1e-3, 1e-2]}, cv=3).fit(
            pima.X_train, pima.y_train)
    said = [str(w.message) for w in rec if issubclass(w.category, ConvergenceWarning)]
    assert len(said) == 2 * 3 + 1  # each of the 6 fits and the refit, once
    assert len(set(said)) == 1 and said[0].startswith("OPNBClassifier: L-BFGS-B stopped at its iteration limit")


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


