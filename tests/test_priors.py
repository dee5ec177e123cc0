"""Class priors given by the user: matched by label, used by the fit's
likelihood and by every prediction, and the class proportions' bits when
they are the proportions."""
import subprocess
import sys

import numpy as np
import pytest

from pyopnb import OPNB, OPNB_CV_lam, OPNBClassifier, opnb_journal, opnb_journal_cv, predict
from pyopnb.evaluation import check_problem
from pyopnb.formulation import JournalFormulation, RFormulation
from pyopnb.objective import objective_and_gradient

pd = pytest.importorskip("pandas", reason="pandas is not installed")

NAMES = np.array(["setosa", "versicolor", "virginica"])


@pytest.fixture(scope="module")
def iris():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    return X, NAMES[y]


def _same(a, b):
    assert a.fval == b.fval
    np.testing.assert_array_equal(a.V, b.V)
    np.testing.assert_array_equal(a.PI, b.PI)


@pytest.mark.parametrize("nbin", [1000, None])
def test_the_proportions_given_give_the_defaults_bits(iris, nbin):
    X, y = iris
    third = {"virginica": 50 / 150, "setosa": 50 / 150, "versicolor": 50 / 150}
    _same(OPNB(X, y, ndim=2, nbin=nbin), OPNB(X, y, ndim=2, nbin=nbin, priors=third))
    _same(OPNB(X, y, ndim=2, nbin=nbin), OPNB(X, y, ndim=2, nbin=nbin, priors=[50 / 150] * 3))
    _same(opnb_journal(X, y, ndim=2, nbin=nbin), opnb_journal(X, y, ndim=2, nbin=nbin, priors=third))


def test_priors_are_matched_by_label_in_any_order(iris):
    X, y = iris
    mapping = {"virginica": 0.6, "setosa": 0.1, "versicolor": 0.3}
    a = OPNB(X, y, ndim=2, priors=mapping)
    np.testing.assert_array_equal(a.PI, [0.1, 0.3, 0.6])  # the model's levels, sorted as R's
    _same(a, OPNB(X, y, ndim=2, priors=[0.1, 0.3, 0.6]))
    _same(a, OPNB(X, y, ndim=2, priors=pd.Series(mapping)))
    # a Categorical's own level order: an array follows it, a mapping names the classes
    cat = pd.Categorical(y, categories=["virginica", "setosa", "versicolor"])
    b = OPNB(X, cat, ndim=2, priors=mapping)
    assert list(b.ynames) == ["virginica", "setosa", "versicolor"]
    np.testing.assert_array_equal(b.PI, [0.6, 0.1, 0.3])
    _same(b, OPNB(X, cat, ndim=2, priors=[0.6, 0.1, 0.3]))


def test_the_fit_maximises_the_likelihood_with_the_priors(iris):
    """The evaluator a fit optimises is the objective with the given priors
    (R's exact value squares them, as R's f_NB_exact does), and the priors
    move the model's predictions towards the favoured class."""
    X, y = iris
    codes = np.searchsorted(NAMES, y)
    PI = np.array([0.1, 0.3, 0.6])
    for form, compat in ((RFormulation(), "R"), (JournalFormulation(), None)):
        for nbin in (None, 300):
            st = form.setup(X, codes, NAMES.astype(object), 2, None, nbin, 1, PI=PI)
            np.testing.assert_array_equal(st.problem.PI, PI)
            if compat is None:
                continue
            V = np.random.default_rng(0).normal(size=(4, 2))
            want = objective_and_gradient(V, st.problem.X, codes, PI, st.problem.h, nbin=nbin, compat=compat,
                                          gradient=False)[0]
            assert st.evaluator.value(V) == want
            assert want != objective_and_gradient(V, st.problem.X, codes, np.full(3, 1 / 3), st.problem.h,
                                                  nbin=nbin, compat=compat, gradient=False)[0]
    plain = OPNB(X, y, ndim=2)
    skewed = OPNB(X, y, ndim=2, priors={"setosa": 0.01, "versicolor": 0.01, "virginica": 0.98})
    assert skewed.fval != plain.fval
    share = [np.mean(predict(m, X)["class"] == "virginica") for m in (plain, skewed)]
    assert share[1] > share[0]


@pytest.mark.parametrize("priors, match", [
    ([0.5, 0.5], "has 2 entries but y has 3 classes"),
    ({"setosa": 1.0}, "no prior for the classes 'versicolor', 'virginica'"),
    ({"setosa": 0.2, "versicolor": 0.2, "virginica": 0.5, "rose": 0.1}, "'rose', which is not a class"),
    ([0.2, 0.3, 0.6], "must sum to 1"),
    ([0.0, 0.4, 0.6], "positive and finite, got 0.0 for class 'setosa'"),
    ([np.nan, 0.4, 0.6], "NaN"),
    ([-0.2, 0.6, 0.6], "positive and finite"),
    ("setosa", "a mapping from label to prior"),
    ({"setosa": [0.2, 0.1], "versicolor": 0.2, "virginica": 0.5}, "must be one number"),
])
def test_bad_priors_are_refused(iris, priors, match):
    X, y = iris
    with pytest.raises(ValueError, match=match):
        OPNB(X, y, ndim=2, priors=priors)


def test_the_estimator_takes_priors_in_the_order_of_classes_(iris):
    X, y = iris
    cat = pd.Categorical(y, categories=["virginica", "setosa", "versicolor"])
    a = OPNBClassifier(ndim=2, priors=[0.1, 0.3, 0.6]).fit(X, cat)
    assert list(a.classes_) == list(NAMES)  # sorted, as scikit-learn's classes_
    np.testing.assert_array_equal(a.model_.PI, [0.1, 0.3, 0.6])
    b = OPNBClassifier(ndim=2, priors={"virginica": 0.6, "versicolor": 0.3, "setosa": 0.1}).fit(X, y)
    _same(a.model_, b.model_)
    assert OPNBClassifier(priors=[0.1, 0.3, 0.6]).get_params()["priors"] == [0.1, 0.3, 0.6]
    plain = OPNBClassifier(ndim=2).fit(X, y)
    assert plain.predict_proba(X)[:, 2].mean() < a.predict_proba(X)[:, 2].mean()
    with pytest.raises(ValueError, match="has 2 entries"):
        OPNBClassifier(priors=[0.5, 0.5]).fit(X, y)


def test_cross_validation_gives_every_fit_the_priors_by_label(iris):
    X, y = iris
    cat = pd.Categorical(y, categories=["virginica", "setosa", "versicolor"])
    r = OPNB_CV_lam(X, cat, 3, nlam=2, ndim=2, priors=[0.6, 0.1, 0.3])
    np.testing.assert_array_equal(r["model"].PI, [0.6, 0.1, 0.3])
    mapping = {"virginica": 0.6, "versicolor": 0.3, "setosa": 0.1}
    same = OPNB_CV_lam(X, cat, 3, nlam=2, ndim=2, priors=mapping)
    np.testing.assert_array_equal(same["cv_stats"], r["cv_stats"])
    plain = OPNB_CV_lam(X, cat, 3, nlam=2, ndim=2)
    assert not np.array_equal(plain["model"].PI, r["model"].PI)
    j = opnb_journal_cv(X, y, 3, gamma=[1.0], ndim=[2], priors=mapping)
    np.testing.assert_array_equal(j["model"].PI, [0.1, 0.3, 0.6])
    with pytest.raises(ValueError, match="must sum to 1"):
        OPNB_CV_lam(X, y, 3, nlam=1, priors=[0.6, 0.3, 0.3])


def test_the_command_line_names_priors_by_the_labels_text(iris, tmp_path):
    from sklearn.datasets import load_iris

    from pyopnb import read_rds

    frame = load_iris(as_frame=True).frame  # integer labels 0, 1, 2
    frame.to_csv(tmp_path / "iris.csv", index=False)

    def run(*args):
        return subprocess.run([sys.executable, "-m", "pyopnb.cli", "fit", "iris.csv", "--target", "target",
                               "--ndim", "2", *args], cwd=tmp_path, capture_output=True, text=True, timeout=300)

    r = run("--priors", "2=0.6,0=0.1,1=0.3", "--out", "m.rds")
    assert r.returncode == 0, r.stderr
    model = read_rds(tmp_path / "m.rds")
    np.testing.assert_array_equal(model.PI, [0.1, 0.3, 0.6])
    _same(model, OPNB(iris[0], frame["target"].to_numpy(), ndim=2, priors=[0.1, 0.3, 0.6]))
    for spec, said in (("2=0.6,0=0.4", "no prior for the class 1"), ("2=0.6,0=0.1,x=0.3", "'x' is not a class"),
                       ("2:0.6", "LABEL=PRIOR pairs"), ("2=0.6,0=a,1=0.3", "'a' is not a number"),
                       ("2=0.6,2=0.1,1=0.3", "given twice")):
        r = run("--priors", spec, "--out", "bad.rds")
        assert r.returncode != 0 and said in r.stderr, (spec, r.stderr)
        assert not (tmp_path / "bad.rds").exists()


def test_a_formulation_whose_setup_takes_no_priors_is_told_so(iris):
    from pyopnb.fitting import fit

    class Old(RFormulation):
        def setup(self, Xa, codes, levels, ndim, names=None, nbin=1000, threads=None):
            return super().setup(Xa, codes, levels, ndim, names, nbin, threads)

    X, y = iris
    _same(fit(X, y, Old(), ndim=2), OPNB(X, y, ndim=2))  # without priors, as before
    with pytest.raises(ValueError, match="Old.setup takes no PI"):
        fit(X, y, Old(), ndim=2, priors=[0.1, 0.3, 0.6])
