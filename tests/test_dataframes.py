"""Every dataframe library, read in one place: names recorded at fit, columns
matched by name in any order, repeated names refused; the estimator's model
is OPNB's (labels, their type, feature names) and is its own copy of X."""
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

from pyopnb import OPNB, OPNBClassifier, predict, read_model, write_model

pd = pytest.importorskip("pandas", reason="pandas is not installed")


def _frames(pima):
    cols = list(pima.feature_names)
    tr, te = pd.DataFrame(pima.X_train, columns=cols), pd.DataFrame(pima.X_test, columns=cols)
    out = [("pandas", tr, te, lambda f, c: f[c])]
    try:
        import polars as pl

        out.append(("polars", pl.from_pandas(tr), pl.from_pandas(te), lambda f, c: f.select(c)))
    except ImportError:
        pass
    try:
        import pyarrow as pa

        out.append(("pyarrow", pa.Table.from_pandas(tr), pa.Table.from_pandas(te), lambda f, c: f.select(c)))
    except ImportError:
        pass
    return out


@pytest.mark.parametrize("lib", ["pandas", "polars", "pyarrow"])
def test_every_dataframe_library_is_read_by_name(pima, lib):
    found = [f for f in _frames(pima) if f[0] == lib]
    if not found:
        pytest.skip(f"{lib} is not installed")
    _, tr, te, select = found[0]
    cols = list(pima.feature_names)
    clf = OPNBClassifier(ndim=2, maxit=10).fit(tr, pima.y_train)
    assert list(clf.feature_names_in_) == cols
    assert clf.model_.feature_names == tuple(cols)
    want = clf.predict_proba(te)
    np.testing.assert_array_equal(clf.predict_proba(select(te, cols[::-1])), want)
    np.testing.assert_array_equal(clf.predict_proba(pd.DataFrame(pima.X_test, columns=cols)), want)
    with pytest.raises(ValueError, match=r"missing \['age'\]"):
        clf.predict(select(te, cols[:-1]))
    # OPNB itself reads the same frames
    m = OPNB(tr, pima.y_train, ndim=2, maxit=10)
    assert m.feature_names == tuple(cols)
    np.testing.assert_array_equal(predict(m, select(te, cols[::-1]))["posterior"], predict(m, te)["posterior"])


def test_repeated_column_names_are_refused_at_fit(pima):
    tr = pd.DataFrame(pima.X_train, columns=list(pima.feature_names)).rename(columns={"bp": "glu"})
    for fit in (lambda: OPNBClassifier(maxit=5).fit(tr, pima.y_train), lambda: OPNB(tr, pima.y_train, maxit=5)):
        with pytest.raises(ValueError, match=r"repeated column names \['glu'\]"):
            fit()
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed")
    table = pa.Table.from_arrays([pa.array(pima.X_train[:, j]) for j in range(3)], names=["a", "b", "a"])
    with pytest.raises(ValueError, match=r"repeated column names \['a'\]"):
        OPNBClassifier(maxit=5).fit(table, pima.y_train)


def test_non_numeric_columns_are_named(pima):
    pl = pytest.importorskip("polars", reason="polars is not installed")
    tr = pl.from_pandas(pd.DataFrame(pima.X_train[:, :2], columns=["a", "b"])).with_columns(pl.lit("x").alias("s"))
    with pytest.raises(ValueError, match=r"non-numeric columns \['s'\]"):
        OPNB(tr, pima.y_train)


def test_the_estimators_model_is_OPNBs(pima, tmp_path):
    tr = pd.DataFrame(pima.X_train, columns=list(pima.feature_names))
    te = pd.DataFrame(pima.X_test, columns=list(pima.feature_names))
    clf = OPNBClassifier(ndim=2).fit(tr, pima.y_train)
    direct = OPNB(tr, pima.y_train, ndim=2)
    assert list(clf.model_.ynames) == list(direct.ynames) == ["No", "Yes"]
    assert clf.model_.feature_names == direct.feature_names
    np.testing.assert_array_equal(clf.model_.V, direct.V)
    # the estimator itself is a model for predict, write_model and plot
    np.testing.assert_array_equal(predict(clf, te, log=True)["class"], clf.predict(te))
    for suffix in ("rds", "json"):
        write_model(clf, tmp_path / f"m.{suffix}")
        back = read_model(tmp_path / f"m.{suffix}")
        assert list(back.ynames) == ["No", "Yes"]
        np.testing.assert_array_equal(predict(back, te[list(reversed(pima.feature_names))], log=True)["class"],
                                      clf.predict(te))
    # integer labels keep their type
    clf_int = OPNBClassifier(ndim=2, maxit=10).fit(pima.X_train, (pima.y_train == "Yes").astype(np.int64))
    assert clf_int.model_.ynames.dtype == np.int64 and clf_int.model_.feature_names is None
    import joblib

    joblib.dump(clf, tmp_path / "clf.joblib")
    np.testing.assert_array_equal(read_model(tmp_path / "clf.joblib").V, clf.model_.V)
    with pytest.raises(ValueError, match="not fitted yet"):
        write_model(OPNBClassifier(), tmp_path / "x.rds")


def test_a_fitted_model_keeps_its_own_copy_of_X(pima):
    Xtr = pima.X_train.copy()
    m = OPNB(Xtr, pima.y_train, ndim=2, maxit=10)
    clf = OPNBClassifier(ndim=2, maxit=10).fit(Xtr, pima.y_train)
    before = predict(m, pima.X_test)["posterior"], clf.predict_proba(pima.X_test)
    Xtr *= 100
    np.testing.assert_array_equal(predict(m, pima.X_test)["posterior"], before[0])
    np.testing.assert_array_equal(clf.predict_proba(pima.X_test), before[1])


def test_convergence_warnings_are_scikit_learns_category(pima):
    from sklearn.exceptions import ConvergenceWarning as SklearnConvergenceWarning

    import pyopnb

    assert issubclass(pyopnb.ConvergenceWarning, SklearnConvergenceWarning)
    assert issubclass(pyopnb.ConvergenceWarning, RuntimeWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=SklearnConvergenceWarning)
        OPNBClassifier(ndim=2, maxit=2, nbin=None).fit(pima.X_train, pima.y_train)  # stops at maxit: silenced
    with pytest.warns(pyopnb.ConvergenceWarning, match="iteration limit"):
        OPNB(pima.X_train, pima.y_train, ndim=2, maxit=2, nbin=None)
    # importing pyopnb loads no scikit-learn (0.7 s); the warning's class is made on first use
    code = "import sys, pyopnb; assert 'sklearn' not in sys.modules; pyopnb.ConvergenceWarning; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


def test_ndim_given_as_text_gets_the_proper_message(pima):
    with pytest.raises(ValueError, match=r"ndim must be an integer from 1 to 7, got '2'"):
        OPNBClassifier(ndim="2").fit(pima.X_train, pima.y_train)
    with pytest.raises(ValueError, match=r"ndim must be from 1 to n_features = 7, got 9"):
        OPNBClassifier(ndim=9).fit(pima.X_train, pima.y_train)


def test_every_estimator_reads_frames_one_way(pima):
    # the comparators as OPNBClassifier: names matched in any order, repeated names refused, pyarrow read
    from pyopnb.comparators import CCICA, KDDA, OPGD, RDA, KernelNB

    cols = list(pima.feature_names)
    tr = pd.DataFrame(pima.X_train, columns=cols)
    te = pd.DataFrame(pima.X_test, columns=cols)
    for est in (KernelNB(), RDA(), KDDA(), CCICA(n_components=2), OPGD(ndim=2, maxit=20)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(tr, pima.y_train)
        want = est.predict_proba(te)
        np.testing.assert_array_equal(est.predict_proba(te[cols[::-1]]), want, err_msg=type(est).__name__)
        with pytest.raises(ValueError, match="repeated column names"):
            est.fit(tr.rename(columns={"bp": "glu"}), pima.y_train)
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed")
    est = KernelNB().fit(pa.Table.from_pandas(tr), pima.y_train)
    np.testing.assert_array_equal(est.predict_proba(pa.Table.from_pandas(te[cols[::-1]])),
                                  KernelNB().fit(tr, pima.y_train).predict_proba(te))


def test_the_command_line_reads_a_fitted_estimator(pima, tmp_path):
    import joblib

    cols = list(pima.feature_names)
    clf = OPNBClassifier(ndim=2).fit(pd.DataFrame(pima.X_train, columns=cols), pima.y_train)
    joblib.dump(clf, tmp_path / "clf.joblib")
    te = pd.DataFrame(pima.X_test, columns=cols)[cols[::-1]]
    te["type"] = pima.y_test
    te.to_csv(tmp_path / "test.csv", index=False)
    out = subprocess.run([sys.executable, "-m", "pyopnb.cli", "predict", "clf.joblib", "test.csv", "--target", "type",
                          "--out", "p.csv"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    got = pd.read_csv(tmp_path / "p.csv")["class"].to_numpy()
    np.testing.assert_array_equal(got, clf.predict(pd.DataFrame(pima.X_test, columns=cols)))


def test_Rs_row_names_read_as_data_are_refused(pima, tmp_path):
    # R's write.csv puts row names in a first column with no header: pandas reads it as
    # 'Unnamed: 0', polars as '', and as a feature the row numbers predict the rows' order
    rows = [",".join(['""'] + [f'"{c}"' for c in pima.feature_names] + ['"type"'])]
    for i, (x, t) in enumerate(zip(pima.X_train, pima.y_train)):
        rows.append(",".join([f'"{i + 1}"'] + [repr(float(v)) for v in x] + [f'"{t}"']))
    path = tmp_path / "train.csv"
    path.write_text("\n".join(rows) + "\n")
    df = pd.read_csv(path)
    for fit in (lambda X, y: OPNB(X, y, maxit=3), lambda X, y: OPNBClassifier(maxit=3).fit(X, y)):
        with pytest.raises(ValueError, match=r"column 'Unnamed: 0' holds distinct row numbers under a name row "
                                             r"names get.*pd.read_csv\(path, index_col=0\)"):
            fit(df.drop(columns="type"), df["type"])
    pl = pytest.importorskip("polars", reason="polars is not installed")
    with pytest.raises(ValueError, match=r"column '' holds distinct row numbers"):
        OPNB(pl.read_csv(path).drop("type"), df["type"].to_numpy(), maxit=3)
    # read as R meant it, the same data fit as the plain matrix does
    good = pd.read_csv(path, index_col=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = OPNB(good.drop(columns="type"), good["type"], ndim=2, maxit=5)
        b = OPNB(pima.X_train, pima.y_train, ndim=2, maxit=5)
    np.testing.assert_array_equal(a.V, b.V)


# --- issue 57: row names under every name, nulls, indexes ------------------------------------------------------

def test_Rs_row_names_are_refused_under_every_name_the_libraries_give_them(pima, tmp_path):
    """R's row names, read as a column: readr's "...1", R's read.csv "X",
    reset_index's "index", and a pandas index stored in parquet, which
    polars and pyarrow read as a last column "__index_level_0__" (it was
    fitted as a feature). Each is refused, saying how to read it."""
    rows = np.arange(1, pima.X_train.shape[0] + 1)
    base = pd.DataFrame(pima.X_train, columns=list(pima.feature_names))
    for name, hint in (("...1", "index_col=0"), ("X", r"read.csv\(path, row.names = 1\)"), ("index", "index_col=0")):
        X = base.copy()
        X.insert(0, name, rows)
        with pytest.raises(ValueError, match=rf"column '{re.escape(name)}' holds distinct row numbers.*{hint}"):
            OPNB(X, pima.y_train, maxit=3)
    # pandas' own habit: to_csv writes its index (0, 1, ...) as a first column, read back as 'Unnamed: 0'
    X = base.copy()
    X.insert(0, "Unnamed: 0", rows - 1)
    with pytest.raises(ValueError, match=r"column 'Unnamed: 0' holds distinct row numbers"):
        OPNB(X, pima.y_train, maxit=3)
    # the same names elsewhere, or over values that are no row numbers, are data
    X = base.copy()
    X.insert(1, "X", rows)
    X.insert(0, "index", np.r_[rows[1:], 1.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert OPNB(X, pima.y_train, maxit=3).V.shape[0] == base.shape[1] + 2
    pytest.importorskip("pyarrow", reason="pyarrow is not installed")
    pl = pytest.importorskip("polars", reason="polars is not installed")
    named = base.set_axis(rows, axis=0)  # R's CSV read with index_col=0: the row names are the index
    named.to_parquet(tmp_path / "train.parquet")
    back = pl.read_parquet(tmp_path / "train.parquet")
    assert back.columns[-1] == "__index_level_0__"
    with pytest.raises(ValueError, match=r"column '__index_level_0__' holds distinct row numbers.*pandas.read_parquet"):
        OPNB(back, pima.y_train, maxit=3)
    # pandas restores the index: the same fit as the matrix
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = OPNB(pd.read_parquet(tmp_path / "train.parquet"), pima.y_train, ndim=2, maxit=3)
        b = OPNB(pima.X_train, pima.y_train, ndim=2, maxit=3)
    np.testing.assert_array_equal(a.V, b.V)


def test_a_null_in_a_pyarrow_backed_frame_is_named_as_other_backends_name_it(pima):
    pytest.importorskip("pyarrow", reason="pyarrow is not installed")
    X = pd.DataFrame(pima.X_train, columns=list(pima.feature_names)).convert_dtypes(dtype_backend="pyarrow")
    X.iloc[[3, 7], 2] = None
    message = rf"X has missing values \(NaN\) in column '{pima.feature_names[2]}' \(2 rows\)"
    with pytest.raises(ValueError, match=message):
        OPNB(X, pima.y_train)
    with pytest.raises(ValueError, match="Input X contains NaN"):  # scikit-learn's own check, as for numpy
        OPNBClassifier().fit(X, pima.y_train)
    # without the nulls, the same bits as numpy's
    full = pd.DataFrame(pima.X_train, columns=list(pima.feature_names)).convert_dtypes(dtype_backend="pyarrow")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(OPNB(full, pima.y_train, ndim=2, maxit=3).V,
                                      OPNB(pima.X_train, pima.y_train, ndim=2, maxit=3).V)


def test_X_and_y_with_other_row_indexes_are_refused(pima):
    """pandas X and y are paired by position, as R pairs a matrix and a
    vector: shuffled apart, each row would get another row's label."""
    from pyopnb import OPNB_CV_lam

    X = pd.DataFrame(pima.X_train, columns=list(pima.feature_names))
    y = pd.Series(pima.y_train)
    order = np.random.default_rng(0).permutation(len(y))
    Xs = X.iloc[order]
    for call in (lambda: OPNB(Xs, y, maxit=3), lambda: OPNB_CV_lam(Xs, y, 2, nlam=1, maxit=3)):
        with pytest.raises(ValueError, match=rf"X and y have different row indexes \(at position 0: X's "
                                             rf"{order[0]}, y's 0\).*y.loc\[X.index\]"):
            call()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = OPNB(Xs, y.loc[Xs.index], ndim=2, maxit=3)
        b = OPNB(pima.X_train[order], pima.y_train[order], ndim=2, maxit=3)
    np.testing.assert_array_equal(a.V, b.V)
