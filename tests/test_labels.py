"""Labels as R codes them and writes them: level order, level text, types
read back from R's files, and a Categorical's order kept through a
cross-validation."""

import warnings

import numpy as np
import pytest

from pyopnb import OPNB, OPNB_CV_lam, opnb_journal_cv, predict, read_rds, write_rds
from pyopnb.labels import factor, level_text, levels_from_text

pd = pytest.importorskip("pandas", reason="pandas is not installed")


def test_strings_sort_as_R_sorts_them():
    # R 4.2 (ICU root collation): levels(as.factor(x)) for these words
    words = ["b", "A", "a", "B", "a-b", "a_b", "élevé", "eleve", "zeta", "Zeta"]
    r_order = ["a", "A", "a_b", "a-b", "b", "B", "eleve", "élevé", "zeta", "Zeta"]
    levels, codes = factor(np.asarray(words, dtype=object))
    assert list(levels) == r_order
    assert [r_order[c] for c in codes] == words


@pytest.mark.parametrize("value, text", [
    (0.0, "0"), (1.0, "1"), (-2.5, "-2.5"), (0.5, "0.5"), (1 / 3, "0.333333333333333"), (0.1 + 0.2, "0.3"),
    (1e5, "1e+05"), (100001.0, "100001"), (123456.0, "123456"), (1e-4, "1e-04"), (1e-3, "0.001"),
    (1.5e-4, "0.00015"), (1e15, "1e+15"), (1234567.1, "1234567.1"), (2.0 ** 60, "1152921504606846976"), (1e16, "1e+16")])
def test_doubles_are_written_as_R_writes_them(value, text):
    assert level_text(np.array([value])) == [text]


def test_level_text_of_every_type():
    assert level_text(np.array([0, 1, 12])) == ["0", "1", "12"]
    assert level_text(np.array([False, True])) == ["FALSE", "TRUE"]
    assert level_text(np.array(["No", "Yes"], dtype=object)) == ["No", "Yes"]
    assert level_text(np.array([0.0, 1.0])) == ["0", "1"]


def test_levels_read_back_from_Rs_text():
    assert levels_from_text(["1", "2", "10"]).dtype == np.int64
    assert list(levels_from_text(["FALSE", "TRUE"])) == [False, True]
    dbl = levels_from_text(["0.5", "1e+05"])
    assert dbl.dtype == np.float64 and list(dbl) == [0.5, 1e5]
    # text that is not exactly R's text of a number stays text
    for text in (["01", "2"], ["1.0", "2"], ["a", "1"], ["1e5"], [" 1"]):
        assert levels_from_text(text).dtype == object, text
    # a named type wins
    assert levels_from_text(["1", "2"], "character").dtype == object
    assert levels_from_text(["1", "2"], "double").dtype == np.float64
    with pytest.raises(ValueError, match="not one of integer"):
        levels_from_text(["1"], "complex")


def _rds_levels(path):
    """The ynames an RDS file holds, as R reads them (strings)."""
    import warnings

    import rdata

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rdata has no constructor for class "OPNB"
        obj = rdata.conversion.convert(rdata.parser.parse_file(path))
    return [str(v) for v in np.ravel(np.asarray(obj["ynames"]))]


@pytest.mark.parametrize("labels, text", [
    (np.array([0.0, 1.0]), ["0", "1"]), (np.array([False, True]), ["FALSE", "TRUE"]),
    (np.array([0.5, 100000.0]), ["0.5", "1e+05"]), (np.array([3, 7]), ["3", "7"])])
def test_rds_files_hold_Rs_level_text(pima, tmp_path, labels, text):
    y = labels[(pima.y_train == "Yes").astype(int)]
    m = OPNB(pima.X_train, y, ndim=2)
    write_rds(m, tmp_path / "m.rds")
    assert _rds_levels(tmp_path / "m.rds") == text
    back = read_rds(tmp_path / "m.rds")
    assert back.ynames.dtype == m.ynames.dtype and list(back.ynames) == list(m.ynames)


def test_an_R_saved_model_reads_its_labels_in_their_type():
    # R's own OPNB on iris with integer labels 1, 2, 3, saved by saveRDS: R
    # keeps only the levels' text ("1", "2", "3")
    from sklearn.datasets import load_iris

    from pyopnb.validation.fixtures import FIXTURES, load

    fx = load("r_labels")["int_model"]
    m = read_rds(FIXTURES.parent / "models" / fx["file"])
    assert m.ynames.dtype == np.int64 and list(m.ynames) == [1, 2, 3]
    p = predict(m, load_iris().data[fx["test_rows"]])
    assert level_text(p["class"]) == fx["class"]
    assert (p["class"] == np.asarray(fx["y_test"])).mean() > 0.9


@pytest.mark.parametrize("cv", ["R", "journal"])
def test_cross_validation_keeps_a_categoricals_level_order(pima, cv):
    y = pd.Categorical(pima.y_train, categories=["Yes", "No"])
    direct = OPNB(pima.X_train, y, ndim=2)
    assert list(direct.ynames) == ["Yes", "No"]
    if cv == "R":
        res = OPNB_CV_lam(pima.X_train, y, 3, nlam=1, ndim=2)
    else:
        res = opnb_journal_cv(pima.X_train, y, 3, gamma=[1.0], ndim=[2])
    assert list(res["model"].ynames) == ["Yes", "No"]
    post = predict(res["model"], pima.X_test)["posterior"]
    # column 0 is "Yes": the rows predicted Yes have the larger first column
    cls = predict(res["model"], pima.X_test)["class"]
    assert np.all((post[:, 0] > post[:, 1]) == (cls == "Yes"))
    # plain labels keep their type and R's order through a cross-validation
    res2 = OPNB_CV_lam(pima.X_train, (pima.y_train == "Yes").astype(int), 3, nlam=1, ndim=2)
    assert res2["model"].ynames.dtype == np.int64 and list(res2["model"].ynames) == [0, 1]


def test_one_case_strings_sort_without_the_collator_and_as_it_would():
    """Digits and letters of one case sort by code point, as the Unicode
    Collation Algorithm sorts them (checked here against it), so a fit on
    labels like "c0", "c1" does not load the collator's tables; any other
    string (mixed case, punctuation, accents) goes through it."""
    import random

    from pyopnb.labels import collation_key, sort_levels

    rng = random.Random(0)
    for alphabet in ("0123456789abcdefghijklmnopqrstuvwxyz", "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ", "019az"):
        words = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 4))) for _ in range(400)]
        assert sort_levels(words) == sorted(set(words), key=collation_key)
    mixed = ["b", "B", "a", "A", "a-b", "ab", "é", "e", "10", "9", "_x"]
    assert sort_levels(mixed) == sorted(set(mixed), key=collation_key)
    assert sort_levels(mixed) != sorted(set(mixed))  # where code points would be wrong, the collator decides


@pytest.mark.parametrize("dtype", ["object", "string[python]", "string[pyarrow]"])
def test_missing_labels_are_refused_in_every_string_column(dtype):
    """None, NaN and pandas' NA among string labels are missing values, never
    a class of their own (pd.NA's text, "<NA>", was taken as a level); labels
    that are all strings keep R's level order."""
    if dtype.endswith("pyarrow]"):
        pytest.importorskip("pyarrow", reason="pyarrow is not installed")
    levels, codes = factor(pd.Series(["Yes", "No", "yes", "b"], dtype=dtype))
    assert list(levels) == ["b", "No", "yes", "Yes"] and list(codes) == [3, 1, 2, 0]
    missing = [None, np.nan] if dtype == "object" else [pd.NA]
    for na in missing:
        with pytest.raises(ValueError, match="y contains missing values"):
            factor(pd.Series(["Yes", "No", na], dtype=dtype))
    with pytest.raises(ValueError, match="y contains missing values"):
        factor(np.array(["Yes", None], dtype=object))
    # the scikit-learn estimator says so too, where scikit-learn's check raised a TypeError at pd.NA
    from pyopnb import OPNBClassifier

    X = np.random.default_rng(0).normal(size=(6, 2))
    for na in missing:
        y = pd.Series(["Yes", "No", "No", "Yes", "Yes", na], dtype=dtype)
        for given in (y, y.to_numpy(dtype=object)):
            with pytest.raises(ValueError, match="y contains missing values"):
                OPNBClassifier(ndim=1).fit(X, given)


# --- issue 57: labels as R makes them, unused levels -----------------------------------------------------------

def test_numbers_become_classes_through_their_15_digit_text_as_in_R():
    """R's as.factor reads numbers through as.character (15 significant
    digits): 0.1 + 0.2 and 0.3 are one class "0.3" in R, and in pyopnb,
    which warns and names the numbers; numbers apart in 15 digits stay
    apart (2^53 and 2^53 + 2), with no warning."""
    from pyopnb import RLabelsWarning
    from pyopnb.validation.fixtures import load

    fx = load("r_labels")["merged_numbers"]
    values = np.asarray(fx["values"], dtype=float)
    with pytest.warns(RLabelsWarning, match=r"3 group\(s\) of distinct numbers.*0\.3, 0\.30000000000000004 as '0\.3'"):
        levels, codes = factor(values)
    assert level_text(levels) == fx["levels"]
    assert list(codes + 1) == fx["codes"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        levels, codes = factor(values[[0, 2, 7, 8]])  # no two of these share their text
    assert levels.size == 4
    # a fit's classes are R's: three labels, two classes
    X = np.array([[0.0], [0.1], [1.0], [1.1], [0.05], [1.05]])
    with pytest.warns(RLabelsWarning):
        m = OPNB(X, np.array([0.1 + 0.2, 0.3, 0.7, 0.7, 0.3, 0.7]), ndim=1)
    assert m.nc == 2 and level_text(m.ynames) == ["0.3", "0.7"]


def test_a_factor_whose_last_levels_have_no_rows_is_Rs_model():
    """R keeps a factor's unused last levels in ynames beyond nc, and
    predicts only its nc classes. R's model reads (it was refused as
    inconsistent) and predicts R's posteriors; pyopnb's fit of the same
    factor is R's model, written back with R's ynames."""
    from pyopnb.validation.fixtures import FIXTURES, load

    fx = load("r_labels")["unused_level_model"]
    iris = load_iris_frame()
    X, species = iris.drop(columns="species"), iris["species"]
    m = read_rds(FIXTURES.parent / "models" / fx["file"])
    assert m.nc == fx["nc"] == 2 and list(m.ynames) == fx["ynames"][:2]
    assert m.unused_levels == tuple(fx["ynames"][2:]) and list(m.r_levels) == fx["ynames"]
    p = predict(m, X.to_numpy()[fx["rows"]])
    np.testing.assert_allclose(p["posterior"], fx["posterior"], rtol=0, atol=1e-12)
    assert list(p["class"]) == fx["class"]
    y = pd.Categorical(species[:100], categories=fx["ynames"])
    ours = OPNB(X[:100], y, ndim=2)
    assert ours.nc == 2 and ours.unused_levels == ("virginica",)
    assert abs(ours.fval - m.fval) <= 1e-9 * abs(m.fval)
    q = predict(ours, X.to_numpy()[fx["rows"]])
    np.testing.assert_allclose(q["posterior"], fx["posterior"], rtol=0, atol=1e-7)
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        write_rds(ours, Path(tmp) / "m.rds")
        back = read_rds(Path(tmp) / "m.rds")
    assert list(back.r_levels) == fx["ynames"] and back.nc == 2


def test_a_level_with_no_rows_before_a_used_one_is_an_error_as_in_R():
    from pyopnb.validation.fixtures import load

    r_error = load("r_labels")["unused_middle_level"]
    iris = load_iris_frame()
    rows = list(range(50)) + list(range(100, 150))
    y = pd.Categorical(iris["species"].to_numpy()[rows], categories=["setosa", "versicolor", "virginica"])
    with pytest.raises(ValueError, match=r"y's levels 'versicolor' have no rows, before levels that do: R's OPNB "
                                         r"stops with an error there \(\"" + r_error + r"\"\).*droplevels\(y\)"):
        OPNB(iris.drop(columns="species").to_numpy()[rows], y, ndim=2)
    # dropped, as the message says, the fit goes on
    m = OPNB(iris.drop(columns="species").to_numpy()[rows], y.remove_unused_categories(), ndim=2)
    assert list(m.ynames) == ["setosa", "virginica"]


def load_iris_frame():
    from sklearn.datasets import load_iris

    d = load_iris(as_frame=True)
    return d.data.assign(species=np.asarray(d.target_names)[d.target])
