"""A user's workflow against R: replayed recordings (no R), live R where it is,
and ``pyopnb validate`` as a user runs it on files R wrote."""
import json
import re
import subprocess
import sys

import numpy as np
import pytest

from pyopnb.datasets import load_pima
from pyopnb.testing import assert_matches_r, compare_with_r
from pyopnb.validation import rbridge
from pyopnb.validation.fixtures import FIXTURES, write_r_csv
from pyopnb.validation.workflow import RecordingError, RUnavailable

pd = pytest.importorskip("pandas", reason="the command's tests write CSV files with pandas")

# recorded with R 4.2, OPNB 1.0 and FKSUM 1.0.1 (compare_with_r(..., record=...))
EXACT = dict(nbin=None, ndim=3, cv=3, nlam=3)
BINNED = dict(ndim=2, cv=3, nlam=3)
RECORDINGS = {"exact": (FIXTURES / "workflow_pima_exact.json", EXACT),
              "binned": (FIXTURES / "workflow_pima_binned.json", BINNED)}


@pytest.fixture(scope="module")
def pima():
    return load_pima()


def _rows(report):
    return {r.quantity: r for r in report.rows}


@pytest.mark.parametrize("which", sorted(RECORDINGS))
def test_a_recording_replays_with_no_R(pima, which):
    path, args = RECORDINGS[which]
    report = compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=path, **args)
    assert report.ok, report.table()
    rows = _rows(report)
    assert set(rows) == {"class labels (levels, in order)", "column means", "column scales", "priors",
                         "fval (relative)", "V", "h (relative)", "posteriors", "predicted classes that differ",
                         "CV lam values", "CV accuracy"}
    for exact in ("class labels (levels, in order)", "column means", "column scales", "priors"):
        assert rows[exact].difference == 0 and rows[exact].source.startswith("bit for bit")
    if which == "exact":
        # R does not move when X moves by 1e-15: the floor holds, and pyopnb is far inside it
        assert rows["fval (relative)"].tolerance == 1e-12 and rows["fval (relative)"].difference < 1e-13
        assert rows["V"].source.startswith("floor") and rows["V"].difference < 1e-12
    else:
        # R's binned fit moves with the data's last bits: its own spread sets the tolerance
        assert rows["V"].source.startswith("R's spread") and rows["V"].tolerance > 1e-10
    assert "versions" in report.meta and report.meta["versions"]["OPNB"] == "1.0"
    back = json.loads(report.to_json())
    assert back["ok"] is True and len(back["rows"]) == len(report.rows)


def _tampered(tmp_path, change):
    path, _ = RECORDINGS["exact"]
    rec = json.loads(path.read_text())
    change(rec["R"])
    out = tmp_path / "tampered.json"
    out.write_text(json.dumps(rec))
    return out


@pytest.mark.parametrize("what, change", [
    ("fval (relative)", lambda r: r.__setitem__("fval", r["fval"] * (1 + 1e-9))),
    ("V", lambda r: r["V"][1].__setitem__(0, r["V"][1][0] + 1e-8)),
    ("posteriors", lambda r: r["posterior"][7].__setitem__(1, r["posterior"][7][1] + 1e-6)),
    ("predicted classes that differ", lambda r: r["class"].__setitem__(3, "Yes" if r["class"][3] == "No" else "No")),
    ("class labels (levels, in order)", lambda r: r["ynames"].reverse()),
    ("CV accuracy", lambda r: r["cv_stats"][0].__setitem__(1, r["cv_stats"][0][1] + 0.005)),
])
def test_a_difference_beyond_its_tolerance_fails(pima, tmp_path, what, change):
    path = _tampered(tmp_path, change)
    report = compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=path, **EXACT)
    assert [r.quantity for r in report.failures] == [what]
    with pytest.raises(AssertionError, match="pyopnb differs from R in " + re.escape(what)):
        assert_matches_r(pima.X_train, pima.y_train, pima.X_test, against=path, **EXACT)


def test_a_recording_refuses_other_data_and_arguments(pima, tmp_path):
    path, args = RECORDINGS["exact"]
    X = pima.X_train.copy()
    X[5, 2] = np.nextafter(X[5, 2], np.inf)
    with pytest.raises(RecordingError, match="recorded on other data"):
        compare_with_r(X, pima.y_train, pima.X_test, against=path, **args)
    with pytest.raises(RecordingError, match="recorded on other data"):
        compare_with_r(pima.X_train, pima.y_train, None, against=path, **args)
    y = pima.y_train.copy()
    y[0] = "Yes" if y[0] == "No" else "No"
    with pytest.raises(RecordingError, match="recorded on other data"):
        compare_with_r(pima.X_train, y, pima.X_test, against=path, **args)
    with pytest.raises(RecordingError, match=r"other arguments \(nlam=3 there, 4 here\)"):
        compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=path, **{**args, "nlam": 4})
    with pytest.raises(RecordingError, match="other arguments"):
        compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=path, ndim=3, cv=3, nlam=3)  # binned
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"fval": 1}))
    with pytest.raises(RecordingError, match="not a recording"):
        compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=other, **args)
    with pytest.raises(RecordingError, match="no such recording"):
        compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=tmp_path / "none.json", **args)


def test_bad_calls_say_what_is_wrong(pima, tmp_path):
    path, args = RECORDINGS["exact"]
    with pytest.raises(TypeError, match="unknown arguments V0"):
        compare_with_r(pima.X_train, pima.y_train, V0=np.eye(7)[:, :2])
    with pytest.raises(ValueError, match="exclude each other"):
        compare_with_r(pima.X_train, pima.y_train, against=path, record=tmp_path / "r.json", **args)
    with pytest.raises(ValueError, match="cv must be a number of folds"):
        compare_with_r(pima.X_train, pima.y_train, against=path, cv=1)
    with pytest.raises(ValueError, match="ndim"):
        compare_with_r(pima.X_train, pima.y_train, against=path, ndim=9)
    with pytest.raises(ValueError, match="y must be a vector of 200 labels"):
        compare_with_r(pima.X_train, pima.y_train[:50], against=path)
    existing = tmp_path / "exists.json"
    existing.write_text("{}")
    with pytest.raises(FileExistsError, match="never overwritten"):
        compare_with_r(pima.X_train, pima.y_train, record=existing, **args)
    assert existing.read_text() == "{}"


def test_live_comparison_without_R_says_what_is_missing(pima, monkeypatch):
    monkeypatch.setattr(rbridge, "why_not", lambda pkgs=(): "R package OPNB is not installed in this R")
    with pytest.raises(RUnavailable, match="needs R with the OPNB and FKSUM packages.*OPNB is not installed"):
        compare_with_r(pima.X_train, pima.y_train, **EXACT)


def _needs_R():
    reason = rbridge.why_not(["OPNB", "FKSUM"])
    if reason:
        pytest.skip(f"the live comparison needs R's OPNB and FKSUM: {reason}")


def test_live_R_and_its_recording_agree(pima, tmp_path):
    _needs_R()
    rec = tmp_path / "rec.json"
    live = compare_with_r(pima.X_train, pima.y_train, pima.X_test, record=rec, nbin=None, ndim=2)
    assert live.ok, live.table()
    assert live.meta["R"] == "live R"
    replay = compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=rec, nbin=None, ndim=2)
    assert [(r.quantity, r.difference, r.tolerance) for r in replay.rows] == \
        [(r.quantity, r.difference, r.tolerance) for r in live.rows]


def test_live_labels_as_R_reads_them(pima):
    # integer labels: R sorts them numerically (2 < 10), and so must the comparison's both sides
    _needs_R()
    y = np.where(pima.y_train == "Yes", 10, 2)
    report = compare_with_r(pima.X_train, y, nbin=None, ndim=2)
    assert report.ok, report.table()


# --- the command --------------------------------------------------------------

def run(*args, cwd):
    return subprocess.run([sys.executable, "-m", "pyopnb.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def r_files(pima, tmp_path_factory):
    """Pima as R's write.csv writes it (row names under an empty header)."""
    tmp = tmp_path_factory.mktemp("validate")
    for name, X, y in (("train", pima.X_train, pima.y_train), ("test", pima.X_test, pima.y_test)):
        df = pd.DataFrame(X, columns=list(pima.feature_names))
        df["type"] = y
        write_r_csv(df, tmp / f"{name}.csv")
    return tmp


def _validate_args(which):
    _, args = RECORDINGS[which]
    out = ["--ndim", str(args["ndim"]), "--cv", "3", "--nlam", "3"]
    return out + (["--exact"] if args.get("nbin", 1000) is None else [])


def test_validate_replays_a_recording_on_Rs_csv_files(r_files):
    path, _ = RECORDINGS["exact"]
    r = run("validate", "train.csv", "--target", "type", "--test", "test.csv", *_validate_args("exact"),
            "--against", str(path), "--json", "report.json", cwd=r_files)
    assert r.returncode == 0, r.stdout + r.stderr
    # the row names were not taken as a feature: the recording's fingerprint matched
    assert "train.csv: the first column has no header" in r.stderr
    assert "11 of 11 quantities agree with R" in r.stdout
    assert "fval (relative)" in r.stdout and "bit for bit" in r.stdout
    assert json.loads((r_files / "report.json").read_text())["ok"] is True


def test_validate_exits_1_on_a_difference(r_files, tmp_path):
    bad = _tampered(tmp_path, lambda rec: rec.__setitem__("fval", rec["fval"] * (1 + 1e-9)))
    r = run("validate", "train.csv", "--target", "type", "--test", "test.csv", *_validate_args("exact"),
            "--against", str(bad), cwd=r_files)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "10 of 11 quantities agree with R; differ: fval (relative)" in r.stdout


@pytest.mark.parametrize("args, message", [
    (["--target", "kind"], "no target column 'kind'"),
    (["--target", "type", "--test", "test.csv", "--ndim", "3", "--nlam", "4", "--cv", "3", "--exact"],
     "other arguments (nlam=3 there, 4 here)"),
    (["--target", "type", "--ndim", "3", "--nlam", "3", "--cv", "3", "--exact"],
     "recorded on other data (their SHA-256 differs, test_rows 332 there, None here)"),
    (["--target", "type", "--exact", "--nbin", "50"], "--exact and --nbin contradict"),
    (["--target", "type", "--record", "r.json", "--against", "x.json"], "exclude each other"),
    (["--select", "fit/"], "--select chooses among the suite's checks"),
])
def test_validate_usage_errors_exit_2_and_write_nothing(r_files, args, message):
    path, _ = RECORDINGS["exact"]
    full = ["validate", "train.csv", *args, "--json", "never.json"]
    if "--against" not in args and "--record" not in args:
        full += ["--against", str(path)]
    r = run(*full, cwd=r_files)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and r.stderr.count("pyopnb: error:") == 1
    assert not (r_files / "never.json").exists() and not (r_files / "r.json").exists()


def test_validate_never_overwrites_a_recording(r_files):
    (r_files / "kept.json").write_text("mine")
    r = run("validate", "train.csv", "--target", "type", "--record", "kept.json", cwd=r_files)
    assert r.returncode == 2 and "never overwritten" in r.stderr
    assert (r_files / "kept.json").read_text() == "mine"


def test_validate_without_R_exits_2_naming_what_is_missing(r_files):
    # a Python whose rpy2 cannot load: the live comparison says so in one line
    code = ("import sys; sys.modules['rpy2'] = None; from pyopnb.cli import main; "
            "sys.exit(main(['validate', 'train.csv', '--target', 'type', '--exact', '--ndim', '2']))")
    r = subprocess.run([sys.executable, "-c", code], cwd=r_files, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "comparing with R needs R with the OPNB and FKSUM packages, and rpy2: rpy2 or R is not available" \
        in r.stderr


def test_validate_with_no_file_runs_the_suite(tmp_path):
    r = run("validate", "--select", "fk_sum/fk_basic", "--json", "suite.json", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3 passed, 0 failed, 0 skipped" in r.stdout
    rows = json.loads((tmp_path / "suite.json").read_text())
    assert [row["verdict"] for row in rows] == ["pass"] * 3
    r = subprocess.run([sys.executable, "-m", "pyopnb.validation", "--select", "fk_sum/fk_basic"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "3 passed" in r.stdout
    r = run("validate", "--select", "no such check", cwd=tmp_path)
    assert r.returncode == 2 and "no check's id contains it" in r.stderr


def test_the_suite_exits_1_on_a_failing_check(tmp_path):
    code = ("import sys; from pyopnb.validation import checks; "
            "checks.check('zz/always fails', checks.RECORDED)(lambda: [checks.compare('one', checks.RECORDED, 1.0, "
            "2.0, 0, 0)]); from pyopnb.cli import main; sys.exit(main(['validate', '--select', 'zz/']))")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "0 passed, 1 failed" in r.stdout


def test_live_R_warnings_come_with_the_report():
    # iris, binned, lam from 1e-4: some of R's fold fits meet a non-finite value in FKSUM's sums and keep
    # their start (R's warning); pyopnb's sums stay finite, so its accuracy differs, and the report says why
    _needs_R()
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    report = compare_with_r(X, y, ndim=2, cv=3, nlam=3)
    assert any("returning initial solution" in w for w in report.meta["R warnings"])
    assert [r.quantity for r in report.failures] == ["CV accuracy"]


def test_live_a_categorical_keeps_its_level_order_in_R(pima):
    # R's factor keeps its levels' order, as pyopnb keeps a Categorical's: "Yes" first on both sides
    _needs_R()
    y = pd.Categorical(pima.y_train, categories=["Yes", "No"])
    report = compare_with_r(pima.X_train, y, nbin=None, ndim=2)
    assert report.ok, report.table()
    plain = compare_with_r(pima.X_train, pima.y_train, nbin=None, ndim=2)
    assert report.meta["data"]["sha256"] != plain.meta["data"]["sha256"]


def test_a_test_frame_is_matched_to_the_training_columns_by_name(pima):
    # the recording was made with Xte in the training order: the same rows in another column order (pandas
    # or polars) replay, as they are the same data; a renamed column is an error naming it
    path, args = RECORDINGS["exact"]
    names = list(pima.feature_names)
    X = pd.DataFrame(pima.X_train, columns=names)
    Xte = pd.DataFrame(pima.X_test, columns=names)[names[::-1]]
    assert compare_with_r(X, pima.y_train, Xte, against=path, **args).ok
    pl = pytest.importorskip("polars", reason="polars is not installed")
    assert compare_with_r(pl.from_pandas(X), pima.y_train, pl.from_pandas(Xte), against=path, **args).ok
    with pytest.raises(ValueError, match=r"missing \['glu'\]; not in training \['glucose'\]"):
        compare_with_r(X, pima.y_train, Xte.rename(columns={"glu": "glucose"}), against=path, **args)
