"""The pyopnb command, end to end through subprocess."""
import subprocess
import sys

import numpy as np
import pytest

from pyopnb.datasets import load_pima

pd = pytest.importorskip("pandas", reason="pandas is not installed")


def run(*args, cwd):
    return subprocess.run([sys.executable, "-m", "pyopnb.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = load_pima()
    tmp = tmp_path_factory.mktemp("cli")
    tr = pd.DataFrame(d.X_train, columns=list(d.feature_names))
    tr["site"] = np.where(np.arange(200) % 3 == 0, "A", "B")
    tr["type"] = d.y_train
    te = pd.DataFrame(d.X_test, columns=list(d.feature_names))
    te["site"] = "A"
    tr.to_csv(tmp / "train.csv", index=False)
    te.to_csv(tmp / "test.csv", index=False)
    return tmp, d


@pytest.mark.parametrize("fmt", ["rds", "json"])
def test_fit_predict_plot(files, fmt):
    tmp, d = files
    r = run("fit", "train.csv", "--target", "type", "--ndim", "2", "--exact", "--out", f"m.{fmt}", cwd=tmp)
    assert r.returncode == 0, r.stderr
    assert "one-hot encoded the non-numeric columns site (2 levels)" in r.stderr
    r = run("predict", f"m.{fmt}", "test.csv", "--proba", "--out", f"pred_{fmt}.csv", cwd=tmp)
    assert r.returncode == 0, r.stderr
    pred = pd.read_csv(tmp / f"pred_{fmt}.csv")
    assert list(pred.columns) == ["class", "p_No", "p_Yes"]
    assert len(pred) == 332
    np.testing.assert_allclose(pred[["p_No", "p_Yes"]].sum(axis=1), 1.0, rtol=1e-12)
    assert np.mean(pred["class"].to_numpy() == d.y_test) > 0.7
    r = run("plot", f"m.{fmt}", "--data", "test.csv", "--out", f"p_{fmt}.png", cwd=tmp)
    assert r.returncode == 0, r.stderr
    assert (tmp / f"p_{fmt}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_same_model_from_both_formats(files):
    tmp, _ = files
    run("fit", "train.csv", "--target", "type", "--ndim", "2", "--exact", "--out", "a.rds", cwd=tmp)
    run("fit", "train.csv", "--target", "type", "--ndim", "2", "--exact", "--out", "a.json", cwd=tmp)
    run("predict", "a.rds", "test.csv", "--proba", "--out", "a1.csv", cwd=tmp)
    run("predict", "a.json", "test.csv", "--proba", "--out", "a2.csv", cwd=tmp)
    pd.testing.assert_frame_equal(pd.read_csv(tmp / "a1.csv"), pd.read_csv(tmp / "a2.csv"))


@pytest.mark.parametrize(
    "args, message",
    [
        (("fit", "train.csv", "--target", "nope", "--out", "x.rds"), "no target column 'nope'"),
        (("fit", "missing.csv", "--target", "type", "--out", "x.rds"), "missing.csv: no such file"),
        (("fit", "train.csv", "--target", "type", "--out", "x.txt"), "model files are .rds or .json"),
        (("fit", "train.csv", "--target", "type", "--ndim", "40", "--out", "x.rds"), "ndim must be from 1"),
        (("predict", "nomodel.rds", "test.csv", "--out", "x.csv"), "no such file"),
        (("predict", "m.rds", "bad_cols.csv", "--out", "x.csv"), "columns differ from the training data"),
        (("predict", "m.rds", "bad_level.csv", "--out", "x.csv"), "levels not seen in training"),
        (("predict", "m.rds", "bad_text.csv", "--out", "x.csv"), "was numeric in training"),
    ],
)
def test_errors(files, args, message):
    tmp, d = files
    if not (tmp / "m.rds").exists():
        run("fit", "train.csv", "--target", "type", "--ndim", "2", "--out", "m.rds", cwd=tmp)
    te = pd.read_csv(tmp / "test.csv")
    te.drop(columns=["bmi"]).to_csv(tmp / "bad_cols.csv", index=False)
    te.assign(site="Z").to_csv(tmp / "bad_level.csv", index=False)
    te.assign(glu="high").to_csv(tmp / "bad_text.csv", index=False)
    r = run(*args, cwd=tmp)
    assert r.returncode == 2
    error = r.stderr.strip().splitlines()[-1]
    assert error.startswith("pyopnb: error: ") and message in error, r.stderr
    assert not (tmp / "x.rds").exists() and not (tmp / "x.csv").exists()
