"""The pyopnb command, end to end through subprocess."""
import re
import subprocess
import sys

import numpy as np
import pytest

from pyopnb.datasets import load_pima
from pyopnb.rio import read_model
from pyopnb.validation.fixtures import write_r_csv as _r_csv

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


def _fitted(tmp):
    if not (tmp / "m.rds").exists():
        r = run("fit", "train.csv", "--target", "type", "--ndim", "2", "--exact", "--out", "m.rds", cwd=tmp)
        assert r.returncode == 0, r.stderr
    return tmp / "m.rds"


def test_predict_reads_a_file_that_holds_the_labels(files):
    tmp, d = files
    _fitted(tmp)
    te = pd.read_csv(tmp / "test.csv")
    te["type"] = d.y_test
    te = te[["type"] + list(reversed(list(te.columns[:-1])))]  # label first, features reversed
    te.to_csv(tmp / "labelled.csv", index=False)
    r = run("predict", "m.rds", "test.csv", "--out", "plain.csv", cwd=tmp)
    assert r.returncode == 0, r.stderr
    for extra in ([], ["--target", "type"]):
        r = run("predict", "m.rds", "labelled.csv", *extra, "--out", "lab.csv", "--overwrite", cwd=tmp)
        assert r.returncode == 0, r.stderr
        pd.testing.assert_frame_equal(pd.read_csv(tmp / "lab.csv"), pd.read_csv(tmp / "plain.csv"))
        pred = pd.read_csv(tmp / "plain.csv")["class"].to_numpy()
        acc = np.mean(pred == d.y_test)
        assert f"accuracy {acc:.4f} ({int(round(acc * 332))} of 332 rows)" in r.stdout
        table = r.stdout.splitlines()[-2:]
        n_no_no = int(np.sum((d.y_test == "No") & (pred == "No")))
        assert table[0].split() == ["No", str(n_no_no), str(int(np.sum(d.y_test == "No")) - n_no_no)]
    r = run("predict", "m.rds", "test.csv", "--target", "type", "--out", "x.csv", cwd=tmp)
    assert r.returncode == 2 and "no target column 'type'" in r.stderr


def test_predict_defaults_to_log_space(files):
    tmp, d = files
    _fitted(tmp)
    te = pd.read_csv(tmp / "test.csv").head(4)
    te.loc[0, ["glu", "bmi", "age"]] = [2e4, 5e3, 8e3]  # far from every training point
    te.to_csv(tmp / "far.csv", index=False)
    r = run("predict", "m.rds", "far.csv", "--proba", "--out", "far_log.csv", cwd=tmp)
    assert r.returncode == 0, r.stderr
    r = run("predict", "m.rds", "far.csv", "--proba", "--r-compatible", "--out", "far_r.csv", cwd=tmp)
    assert r.returncode == 0, r.stderr
    assert "underflowed" in r.stderr  # R's numbers: the user is told
    lg, rr = pd.read_csv(tmp / "far_log.csv"), pd.read_csv(tmp / "far_r.csv")
    assert rr.loc[0, "p_No"] == 0.5 and rr.loc[0, "class"] == "No"  # R's defect: uniform, first class
    assert max(lg.loc[0, "p_No"], lg.loc[0, "p_Yes"]) > 0.99
    np.testing.assert_allclose(lg.loc[1:, ["p_No", "p_Yes"]], rr.loc[1:, ["p_No", "p_Yes"]], rtol=1e-10)


@pytest.mark.parametrize(
    "args, message",
    [
        # checked before the fit: the bad target would be found later
        (("fit", "train.csv", "--target", "nope", "--out", "no_dir/m.rds"), "the folder no_dir does not exist"),
        (("predict", "m.rds", "test.csv", "--out", "no_dir/p.csv"), "the folder no_dir does not exist"),
        (("predict", "m.rds", "test.csv", "--out", "p.txt"), "predictions are .csv"),
        (("plot", "m.rds", "--out", "p.xyz"), "--out p.xyz: images are .eps"),
        (("plot", "m.rds", "--out", "no_dir/p.png"), "the folder no_dir does not exist"),
        (("plot", "m.rds", "--target", "type", "--out", "p.png"), "give --data too"),
        (("plot", "m.rds", "--dims", "1", "3", "--out", "p.png"), "dims must be two different columns from 1 to 2"),
        (("predict", "m.rds", "commented.csv", "--out", "x.csv"), "not in training ['comment']"),
        (("predict", "m.rds", "bad_label.csv", "--target", "type", "--out", "x.csv"),
         "labels ['Maybe'] are not among the model's classes"),
    ],
)
def test_user_errors_are_one_line_and_exit_2(files, args, message):
    tmp, d = files
    _fitted(tmp)
    te = pd.read_csv(tmp / "test.csv")
    te.assign(comment="see notes").to_csv(tmp / "commented.csv", index=False)
    te.assign(type=np.where(np.arange(len(te)) == 3, "Maybe", "No")).to_csv(tmp / "bad_label.csv", index=False)
    r = run(*args, cwd=tmp)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("pyopnb: error: ")]
    assert len(lines) == 1 and message in lines[0], r.stderr
    assert not any((tmp / n).exists() for n in ("x.csv", "p.txt", "p.xyz", "p.png"))


def test_plot_colours_test_points_by_their_label(files):
    tmp, d = files
    _fitted(tmp)
    te = pd.read_csv(tmp / "test.csv").assign(type=d.y_test)
    te.to_csv(tmp / "labelled_plot.csv", index=False)
    r = run("plot", "m.rds", "--data", "labelled_plot.csv", "--out", "lab.svg", cwd=tmp)
    assert r.returncode == 0, r.stderr  # the model's target column is left out of the features
    svg = (tmp / "lab.svg").read_text()
    assert "hollow: test points, by true class" in svg


def test_outputs_get_the_umask_mode(files):
    tmp, _ = files
    import os

    def run_umask(*args):
        return subprocess.run([sys.executable, "-c", "import os, sys; os.umask(0o022); from pyopnb.cli import main; "
                               "sys.exit(main(sys.argv[1:]))", *args], cwd=tmp, capture_output=True, text=True,
                              timeout=300)

    assert run_umask("fit", "train.csv", "--target", "type", "--ndim", "2", "--out", "u.json").returncode == 0
    assert run_umask("predict", "u.json", "test.csv", "--out", "u.csv").returncode == 0
    assert run_umask("plot", "u.json", "--out", "u.png").returncode == 0
    for name in ("u.json", "u.csv", "u.png"):
        assert os.stat(tmp / name).st_mode & 0o777 == 0o644, name


def test_fit_the_journal_formulation(files):
    tmp, d = files
    r = run("fit", "train.csv", "--target", "type", "--formulation", "journal", "--gamma", "0.5", "--ndim", "2",
            "--exact", "--out", "j.json", cwd=tmp)
    assert r.returncode == 0, r.stderr
    from pyopnb.rio import read_json

    m = read_json(tmp / "j.json")
    assert m.lam == 0.0 and m.h.shape == (2, 2) and m.h[0, 0] == m.h[0, 1] and m.h[0, 0] != m.h[1, 0]
    r = run("predict", "j.json", "test.csv", "--out", "j.csv", cwd=tmp)
    assert r.returncode == 0, r.stderr
    r = run("fit", "train.csv", "--target", "type", "--formulation", "journal", "--ndim", "1", "--out", "j1.json",
            cwd=tmp)  # gamma 1 by default
    assert r.returncode == 0, r.stderr
    assert read_json(tmp / "j1.json").h[0, 0] == pytest.approx(2 * m.h[0, 0], rel=1e-12)
    r = run("fit", "train.csv", "--target", "type", "--formulation", "journal", "--lam", "0.1", "--out", "x.rds",
            cwd=tmp)
    assert r.returncode == 2 and "--lam belongs to another formulation: --formulation journal takes" in r.stderr
    r = run("fit", "train.csv", "--target", "type", "--gamma", "2", "--prescale", "--out", "x.rds", cwd=tmp)
    assert r.returncode == 2 and "--gamma and --prescale belong to another formulation" in r.stderr


def test_fit_threads(files):
    """--threads reaches the fit: the same model on 1 and 3 threads; a bad count is refused."""
    tmp, _ = files
    for t in ("1", "3"):
        r = run("fit", "train.csv", "--target", "type", "--ndim", "2", "--exact", "--threads", t,
                "--out", f"t{t}.json", cwd=tmp)
        assert r.returncode == 0, r.stderr
    assert (tmp / "t1.json").read_text() == (tmp / "t3.json").read_text()
    r = run("fit", "train.csv", "--target", "type", "--threads", "0", "--out", "t0.json", cwd=tmp)
    assert r.returncode == 2 and "threads must be a positive integer" in r.stderr


def _one_line_error(r, *fragments):
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pyopnb: error: "), r.stderr
    for f in fragments:
        assert f in lines[0], lines[0]


def test_no_command_writes_over_its_input(files):
    tmp, _ = files
    assert run("fit", "train.csv", "--target", "type", "--ndim", "2", "--exact", "--out", "own.rds", cwd=tmp).returncode == 0
    before = {p: (tmp / p).read_bytes() for p in ("test.csv", "own.rds", "train.csv")}
    _one_line_error(run("predict", "own.rds", "test.csv", "--out", "test.csv", cwd=tmp), "--out test.csv is the input")
    _one_line_error(run("predict", "own.rds", "./test.csv", "--out", f"../{tmp.name}/test.csv", cwd=tmp),
                    "is the input ./test.csv")
    _one_line_error(run("plot", "own.rds", "--out", "own.rds", cwd=tmp), "images are")
    (tmp / "own.png").symlink_to(tmp / "test.csv")
    _one_line_error(run("plot", "own.rds", "--data", "test.csv", "--out", "own.png", cwd=tmp), "is the input test.csv")
    _one_line_error(run("fit", "train.csv", "--target", "type", "--out", "train.csv", cwd=tmp), "model files are")
    assert {p: (tmp / p).read_bytes() for p in before} == before


def test_no_command_replaces_a_file_unless_asked(files):
    tmp, _ = files
    _fitted(tmp)
    mine = {name: f"mine {name}" for name in ("kept.rds", "kept.csv", "kept.png", "kept.json")}
    for name, text in mine.items():
        (tmp / name).write_text(text)
    how = "pass --overwrite to replace it"
    _one_line_error(run("fit", "train.csv", "--target", "type", "--exact", "--out", "kept.rds", cwd=tmp),
                    "--out kept.rds: exists", how)
    _one_line_error(run("predict", "m.rds", "test.csv", "--out", "kept.csv", cwd=tmp), "--out kept.csv: exists", how)
    _one_line_error(run("plot", "m.rds", "--out", "kept.png", cwd=tmp), "--out kept.png: exists", how)
    _one_line_error(run("demo", "--png", "kept.png", cwd=tmp), "--png kept.png: exists", how)
    r = run("validate", "--select", "nothing", "--json", "kept.json", cwd=tmp)
    assert r.returncode == 2 and "--json kept.json: exists" in r.stderr, r.stderr
    assert {name: (tmp / name).read_text() for name in mine} == mine
    assert not [p.name for p in tmp.iterdir() if p.name.startswith(".kept.")]  # no temporary file left behind
    # asked: replaced
    r = run("fit", "train.csv", "--target", "type", "--ndim", "2", "--exact", "--out", "kept.rds", "--overwrite",
            cwd=tmp)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(read_model(tmp / "kept.rds").V, read_model(tmp / "m.rds").V)
    r = run("predict", "m.rds", "test.csv", "--out", "kept.csv", "--overwrite", cwd=tmp)
    assert r.returncode == 0, r.stderr
    assert pd.read_csv(tmp / "kept.csv").shape[0] == 332


def test_fit_options_and_notes_in_the_commands_words(files):
    tmp, _ = files
    _one_line_error(run("fit", "train.csv", "--target", "type", "--exact", "--nbin", "300", "--out", "x.rds", cwd=tmp),
                    "--exact and --nbin contradict each other")
    _one_line_error(run("fit", "train.csv", "--target", "type", "--gamma", "2", "--out", "x.rds", cwd=tmp),
                    "--gamma belongs to another formulation: --formulation R takes --lam, --no-scale")
    _one_line_error(run("fit", "train.csv", "--target", "type", "--formulation", "journal", "--lam", "0.1",
                        "--out", "x.rds", cwd=tmp), "--lam belongs to another formulation")
    r = run("fit", "train.csv", "--target", "type", "--ndim", "2", "--exact", "--maxit", "3", "--out", "x.rds", cwd=tmp)
    assert r.returncode == 0
    note = [ln for ln in r.stderr.splitlines() if ln.startswith("pyopnb: warning:")]
    assert note == ["pyopnb: warning: L-BFGS-B stopped at its iteration limit, --maxit = 3 (convergence code 1, as "
                    "R's optim reports it): the projection may not be an optimum yet. Give a larger --maxit."]
    assert ".py:" not in r.stderr  # no Python source line
    from pyopnb import read_rds

    assert read_rds(tmp / "x.rds").convergence == 1


def test_data_errors_say_missing_or_infinite(files):
    tmp, _ = files
    te = pd.read_csv(tmp / "test.csv")
    te.loc[4, "glu"] = np.inf
    te.to_csv(tmp / "inf.csv", index=False)
    te.loc[4, "glu"] = np.nan
    te.to_csv(tmp / "nan.csv", index=False)
    run("fit", "train.csv", "--target", "type", "--ndim", "2", "--exact", "--out", "e.rds", cwd=tmp)
    _one_line_error(run("predict", "e.rds", "inf.csv", "--out", "p.csv", cwd=tmp), "'glu' has infinite values (1 row)")
    _one_line_error(run("predict", "e.rds", "nan.csv", "--out", "p.csv", cwd=tmp), "'glu' has missing values (1 row)")


def test_demo_names_its_own_option(files):
    tmp, _ = files
    _one_line_error(run("demo", "--png", "x.txt", cwd=tmp), "--png x.txt: images are")


def test_an_unbuilt_source_folder_says_so(tmp_path):
    """Importing pyopnb from a source folder whose core is not built (Python in
    the repository's root before `pip install -e .`) says how to fix it."""
    import shutil
    from pathlib import Path

    import pyopnb

    src = Path(pyopnb.__file__).parent
    shutil.copytree(src, tmp_path / "pyopnb", ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.cpp", "__pycache__"))
    # -S: no site packages, so the source folder is what Python finds (an
    # editable install's finder would otherwise take the built one)
    r = subprocess.run([sys.executable, "-S", "-c", "import pyopnb"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: pyopnb's compiled core is not built in") and "pip install -e ." in last


def test_the_demo_says_what_its_convergence_code_means(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pyopnb.cli", "demo", "--png", "d.png"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    line = [ln for ln in r.stdout.splitlines() if "convergence code" in ln][0]
    code = int(line.split("convergence code ")[1].split()[0])
    assert ("binned" in line) == (code == 52), line
    if code == 0:
        assert line.endswith("(converged)")


def test_predicts_warnings_are_one_line_in_the_commands_words(files):
    tmp, _ = files
    run("fit", "train.csv", "--target", "type", "--ndim", "2", "--exact", "--out", "u.rds", cwd=tmp)
    te = pd.read_csv(tmp / "test.csv")
    te.loc[:1, "glu"] = 1e6  # every class density of these rows underflows in a product
    te.to_csv(tmp / "far.csv", index=False)
    r = run("predict", "u.rds", "far.csv", "--r-compatible", "--out", "far_pred.csv", cwd=tmp)
    assert r.returncode == 0, r.stderr
    warn = [ln for ln in r.stderr.splitlines() if ln.startswith("pyopnb: warning:")]
    assert len(warn) == 1 and "2 of 332 rows underflowed" in warn[0] and "without --r-compatible" in warn[0]
    assert "log=True" not in r.stderr and ".py:" not in r.stderr


def test_Rs_write_csv_row_names_are_not_a_feature(files):
    tmp, d = files
    tr = pd.DataFrame(d.X_train, columns=list(d.feature_names))
    tr["type"] = d.y_train
    _r_csv(tr, tmp / "r_train.csv")
    r = run("fit", "r_train.csv", "--target", "type", "--ndim", "2", "--out", "r_model.json", cwd=tmp)
    assert r.returncode == 0, r.stderr
    assert "read as row names, not as a feature" in r.stderr
    import json

    assert json.loads((tmp / "r_model.json").read_text())["feature_names"] == list(d.feature_names)
    te = pd.DataFrame(d.X_test, columns=list(d.feature_names))
    te["type"] = d.y_test
    _r_csv(te, tmp / "r_test.csv")
    r = run("predict", "r_model.json", "r_test.csv", "--out", "r_pred.csv", cwd=tmp)
    assert r.returncode == 0, r.stderr
    assert "accuracy" in r.stdout
    # the same as a plain CSV of the same data
    tr.to_csv(tmp / "plain_train.csv", index=False)
    r2 = run("fit", "plain_train.csv", "--target", "type", "--ndim", "2", "--out", "plain.json", cwd=tmp)
    assert r2.returncode == 0 and "row names" not in r2.stderr
    a, b = (json.loads((tmp / f).read_text()) for f in ("r_model.json", "plain.json"))
    assert a["V"] == b["V"]


def test_an_R_model_on_an_unnamed_matrix_says_to_pass_the_label_column(files, tmp_path):
    # R's OPNB fitted on an unnamed matrix: the model knows no column names and no target
    from pyopnb import OPNB, write_rds

    tmp, d = files
    write_rds(OPNB(d.X_train, d.y_train, ndim=2), tmp_path / "r.rds")
    te = pd.DataFrame(d.X_test, columns=list(d.feature_names))
    te["type"] = d.y_test
    te.to_csv(tmp_path / "test.csv", index=False)
    for cmd in (["predict", "r.rds", "test.csv", "--out", "p.csv"], ["plot", "r.rds", "--data", "test.csv",
                                                                      "--out", "p.png"]):
        r = run(*cmd, cwd=tmp_path)
        assert r.returncode == 2
        assert ("8 columns, but the model has 7 features and no column names (R fitted it on an unnamed matrix): "
                "if 'type' is the label column, pass --target type") in r.stderr, r.stderr
        assert not (tmp_path / cmd[-1]).exists()
    r = run("predict", "r.rds", "test.csv", "--target", "type", "--out", "p.csv", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "accuracy" in r.stdout


def test_a_named_model_without_a_target_says_which_column_to_leave_out(files, tmp_path):
    from pyopnb import OPNB, write_rds

    tmp, d = files
    write_rds(OPNB(pd.DataFrame(d.X_train, columns=list(d.feature_names)), d.y_train, ndim=2), tmp_path / "r.rds")
    te = pd.DataFrame(d.X_test, columns=list(d.feature_names))
    te["type"] = d.y_test
    te.to_csv(tmp_path / "test.csv", index=False)
    r = run("predict", "r.rds", "test.csv", "--out", "p.csv", cwd=tmp_path)
    assert r.returncode == 2
    assert "columns ['type'] are not among the model's features" in r.stderr
    assert "pass --target type" in r.stderr


def test_long_decimals_read_as_the_correctly_rounded_doubles_under_any_pandas(tmp_path):
    # pandas 2's default converter reads 711.43092292985130600 an ulp away from the correctly rounded double;
    # the same file must give the same data, and the same fit, under every pandas pyopnb allows
    texts = ["711.43092292985130600", "541.761245844501957", "485.7188759241424520578", "0.94031136642766605101"]
    rows = ['"","a","b","y"'] + [f'"{i + 1}",{texts[i % 4]},{(i * 7) % 5}.{i},{"yes" if i % 3 else "no"}'
                                 for i in range(12)]
    (tmp_path / "train.csv").write_text("\n".join(rows) + "\n")
    r = subprocess.run([sys.executable, "-m", "pyopnb.cli", "fit", "train.csv", "--target", "y", "--exact",
                        "--ndim", "1", "--out", "m.json"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    from pyopnb import read_model

    X = read_model(tmp_path / "m.json").X
    assert [float(v).hex() for v in X[:4, 0]] == [float(t).hex() for t in texts]


def test_levels_carry_Rs_level_order_through_a_csv(files):
    """write.csv keeps a factor's labels, not its levels: read back, they
    sort. --levels (a list, or @FILE as R's writeLines(levels(y)) writes
    it) gives the order back: the model's classes, the posterior's columns
    and the fit are the API's with a Categorical in that order."""
    from pyopnb import OPNB, read_rds

    tmp, d = files
    (tmp / "levels.txt").write_text("Yes\nNo\n")
    for spec in ("@levels.txt", "Yes,No"):
        r = run("fit", "train.csv", "--target", "type", "--ndim", "2", "--levels", spec, "--out", "lv.rds", cwd=tmp)
        assert r.returncode == 0, r.stderr
        assert "classes ['Yes', 'No']" in r.stdout
        m = read_rds(tmp / "lv.rds")
        assert list(m.ynames) == ["Yes", "No"]
        (tmp / "lv.rds").unlink()
    tr = pd.read_csv(tmp / "train.csv")
    api = OPNB(pd.get_dummies(tr.drop(columns="type"), dtype=float).to_numpy(),
               pd.Categorical(tr["type"], categories=["Yes", "No"]), ndim=2)
    np.testing.assert_array_equal(m.PI, api.PI)
    assert abs(m.fval - api.fval) <= 1e-12 * abs(api.fval)
    r = run("fit", "train.csv", "--target", "type", "--levels", "@levels.txt", "--out", "lv.rds", cwd=tmp)
    r = run("predict", "lv.rds", "test.csv", "--proba", "--out", "lv.csv", cwd=tmp)
    assert r.returncode == 0, r.stderr
    assert list(pd.read_csv(tmp / "lv.csv").columns) == ["class", "p_Yes", "p_No"]
    # labels the levels do not name, a level twice, an empty level, a missing file: one line, exit 2
    for spec, message in (("Yes,Maybe", r"labels \['No'\] of the target column are not among --levels Yes,Maybe"),
                          ("Yes,No,Yes", r"levels \['Yes'\] are given twice"),
                          ("Yes,,No", "an empty level"),
                          ("@nofile.txt", "cannot read the levels file")):
        r = run("fit", "train.csv", "--target", "type", "--levels", spec, "--out", "bad.rds", cwd=tmp)
        assert r.returncode == 2 and re.search(message, r.stderr), r.stderr
        assert not (tmp / "bad.rds").exists()
