"""The estimator's second round: decision_function, the collapse warning,
integer column names, the Display, a picklable ConvergenceWarning."""
import pickle
import warnings

import matplotlib
import numpy as np
import pytest
from sklearn.datasets import load_digits, make_classification
from sklearn.ensemble import StackingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import pyopnb
from pyopnb import CollapseWarning, OPNBClassifier, OPNBDisplay, ProjectionRangeWarning

matplotlib.use("Agg")
pd = pytest.importorskip("pandas", reason="pandas is not installed")


def test_decision_function_is_what_predict_decides(pima):
    clf = OPNBClassifier(ndim=2).fit(pima.X_train, pima.y_train)
    score = clf.decision_function(pima.X_test)
    logp = clf.predict_log_proba(pima.X_test)
    assert score.shape == (pima.X_test.shape[0],)
    np.testing.assert_array_equal(score, logp[:, 1] - logp[:, 0])
    np.testing.assert_array_equal(clf.classes_[(score > 0).astype(int)], clf.predict(pima.X_test))
    X, y = make_classification(n_samples=300, n_features=6, n_informative=4, n_classes=3, random_state=0)
    clf3 = OPNBClassifier(ndim=2).fit(X, y)
    np.testing.assert_array_equal(clf3.decision_function(X), clf3.predict_log_proba(X))
    # stacking on decision_function, as it failed before
    stack = StackingClassifier([("opnb", OPNBClassifier(ndim=2))], LogisticRegression(),
                               stack_method="decision_function", cv=3).fit(X[:200], y[:200])
    assert stack.score(X[200:], y[200:]) > 0.6


def test_a_fit_whose_posteriors_are_the_priors_warns():
    X, y = make_classification(n_samples=3000, n_features=10, n_informative=5, n_classes=5, random_state=0)
    with pytest.warns(CollapseWarning, match=r"lam = 1 dominates the likelihood.*Give a smaller lam"):
        clf = OPNBClassifier(lam=1.0, ndim=3).fit(X, y)
    assert np.unique(clf.predict(X)).size == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", CollapseWarning)
        clf = OPNBClassifier(ndim=3).fit(X, y)
    assert np.unique(clf.predict(X)).size == 5
    from pyopnb.fitting import COLLAPSED

    with pytest.warns(CollapseWarning) as rec:
        pyopnb.OPNB(X, y, lam=1.0, ndim=2)
    assert str(rec[0].message).startswith(f"OPNB: {COLLAPSED}")


def test_integer_column_names_are_matched_by_name(pima):
    df = pd.DataFrame(pima.X_train)
    clf = OPNBClassifier(ndim=2).fit(df, pima.y_train)
    test = pd.DataFrame(pima.X_test)
    order = list(reversed(test.columns))
    np.testing.assert_array_equal(clf.predict_proba(test[order]), clf.predict_proba(test))
    np.testing.assert_array_equal(clf.predict_proba(test.rename(columns=str)[[str(c) for c in order]]),
                                  clf.predict_proba(pima.X_test))
    with pytest.raises(ValueError, match=r"missing \['0'\]; not in training \['99'\]"):
        clf.predict(test.rename(columns={0: 99}))
    # refitted on an array, frames are read by position again
    clf.fit(pima.X_train, pima.y_train)
    np.testing.assert_array_equal(clf.predict_proba(test), clf.predict_proba(pima.X_test))


def test_convergence_warning_pickles():
    cls = pyopnb.ConvergenceWarning
    assert pickle.loads(pickle.dumps(cls)) is cls
    w = pickle.loads(pickle.dumps(cls("a note")))
    assert type(w) is cls and str(w) == "a note"


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return train_test_split(X, y, random_state=0)


@pytest.mark.parametrize("ndim", [2, 12])
def test_display_draws_what_predict_gives(digits, ndim):
    Xtr, Xte, ytr, yte = digits
    pipe = make_pipeline(StandardScaler(), OPNBClassifier(ndim=ndim)).fit(Xtr, ytr)
    pred = pipe.predict(Xte)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProjectionRangeWarning)
        disp = OPNBDisplay.from_estimator(pipe, Xte, yte)
    assert disp.response_ == ("regions" if ndim == 2 else "predict")
    agree = np.mean(disp.classes[disp.drawn_] == pred)
    assert agree >= 0.99
    assert disp.ax_.get_title() == ("class regions of predict" if ndim == 2
                                    else f"points coloured by predict ({ndim} columns)")
    if ndim > 2:
        # the plane's regions are asked for: the title says where they are drawn
        planes = OPNBDisplay.from_estimator(pipe, Xte, response="regions")
        assert planes.ax_.get_title().startswith("regions of predict on the plane through the points' mean in the "
                                                 f"other {ndim - 2} columns")
    # the model of a pipeline given raw, unscaled data: far outside its projections, and said
    with pytest.warns(ProjectionRangeWarning, match="project far outside the training data's projections") as rec:
        OPNBDisplay.from_model(pipe[-1].model_, Xte)
    with pytest.warns(ProjectionRangeWarning, match="OPNBDisplay.from_estimator") as rec2:
        pyopnb.plot(pipe[-1].model_, Xte)
    assert rec[0].filename == rec2[0].filename == __file__  # said at the caller's line
    scaled = pipe[0].transform(Xte)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProjectionRangeWarning)
        from_model = OPNBDisplay.from_model(pipe[-1].model_, scaled, yte)
        pyopnb.plot(pipe[-1].model_, scaled)
    np.testing.assert_array_equal(from_model.predicted, disp.predicted)


def test_display_refuses_what_it_cannot_draw(pima):
    from sklearn.linear_model import LogisticRegression

    lr = make_pipeline(StandardScaler(), LogisticRegression()).fit(pima.X_train, pima.y_train)
    with pytest.raises(TypeError, match="needs an OPNBClassifier or a Pipeline ending in one"):
        OPNBDisplay.from_estimator(lr, pima.X_test)
    one = OPNBClassifier(ndim=1).fit(pima.X_train, pima.y_train)
    with pytest.raises(ValueError, match="the model has one"):
        OPNBDisplay.from_estimator(one, pima.X_test)
    two = OPNBClassifier(ndim=2).fit(pima.X_train, pima.y_train)
    with pytest.raises(ValueError, match="dims must be two different columns"):
        OPNBDisplay.from_estimator(two, pima.X_test, dims=(1, 3))
    with pytest.raises(ValueError, match="not among the model's classes"):
        OPNBDisplay.from_estimator(two, pima.X_test, ["maybe"] * pima.X_test.shape[0])
    with pytest.raises(ValueError, match="OPNBDisplay.from_estimator"):
        pyopnb.plot(make_pipeline(StandardScaler(), OPNBClassifier(ndim=2)).fit(pima.X_train, pima.y_train))


def test_param_grid_searches_both_formulations_as_the_study_does():
    from sklearn.datasets import load_iris
    from sklearn.model_selection import GridSearchCV

    from pyopnb.estimator import param_grid
    from pyopnb.study.methods import METHODS

    grid = param_grid(30)
    assert grid == [{"formulation": ["R"], **METHODS["OPNB"].quick(30, 2)},
                    {"formulation": ["journal"], **METHODS["OPNB-journal"].quick(30, 2)}]
    assert grid[1]["ndim"] == [1, 2, 3, 5, 10, 20] and param_grid(4)[1]["ndim"] == [1, 2, 3, 4]
    assert len(param_grid(30, full=True)[1]["ndim"]) == 20
    X, y = load_iris(return_X_y=True)
    pipe = make_pipeline(StandardScaler(), OPNBClassifier())
    search = GridSearchCV(pipe, param_grid(4, prefix="opnbclassifier__"), cv=3).fit(X, y)
    assert len(search.cv_results_["params"]) == 2 + 3 * 4
    assert search.best_params_["opnbclassifier__formulation"] in ("R", "journal")
    assert search.best_score_ > 0.9
    with pytest.raises(ValueError):
        param_grid(0)


def test_the_command_line_says_a_collapse_in_its_flags(tmp_path, pima):
    import subprocess
    import sys

    pd.DataFrame(pima.X_train, columns=list(pima.feature_names)).assign(type=pima.y_train).to_csv(
        tmp_path / "train.csv", index=False)
    r = subprocess.run([sys.executable, "-m", "pyopnb.cli", "fit", "train.csv", "--target", "type", "--lam", "100",
                        "--out", "m.json"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "pyopnb: warning: every posterior is the class prior" in r.stderr
    assert "--lam = 100 dominates the likelihood" in r.stderr and "Give a smaller --lam" in r.stderr
