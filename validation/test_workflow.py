"""A user's workflow checked two ways, regression (pyopnb against its own
recorded bits) and parity (pyopnb against R): replayed recordings (no R),
live R where it is, and ``pyopnb validate`` as a user runs it on files R
wrote."""
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pyopnb
from pyopnb.datasets import load_pima
from pyopnb.testing import assert_matches_r, compare_with_r
from pyopnb.validation import rbridge, recording
from pyopnb.validation.fixtures import FIXTURES, write_r_csv
from pyopnb.validation.workflow import RecordingError, RUnavailable

pd = pytest.importorskip("pandas", reason="the command's tests write CSV files with pandas")

# R's side recorded with R 4.2, OPNB 1.0 and FKSUM 1.0.1; pyopnb's beside it (compare_with_r(..., record=...))
EXACT = dict(nbin=None, ndim=3, cv=3, nlam=3)
BINNED = dict(ndim=2, cv=3, nlam=3)
RECORDINGS = {"exact": (FIXTURES / "workflow_pima_exact.json", EXACT),
              "binned": (FIXTURES / "workflow_pima_binned.json", BINNED)}
# the exact recording as format 1 wrote it: R's side only, no checksum
FORMAT1 = FIXTURES / "workflow_pima_exact_format1.json"
PARITY = ["ynames", "mu", "scales", "PI", "fval", "V", "h", "posterior", "class", "cv_lam", "cv_accuracy"]
REGRESSION = ["ynames", "mu", "scales", "PI", "fval", "V", "h", "posterior", "class", "convergence", "cv_lam",
              "cv_accuracy"]


@pytest.fixture(scope="module")
def pima():
    return load_pima()


def _rows(report, check):
    return {r.quantity: r for r in report.of(check)}


@pytest.mark.parametrize("which", sorted(RECORDINGS))
def test_a_recording_replays_with_no_R(pima, which):
    path, args = RECORDINGS[which]
    report = compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=path, **args)
    assert report.ok, report.table()
    assert [r.quantity for r in report.of("regression")] == REGRESSION
    assert report.verdict("regression") == "same"
    assert [r.quantity for r in report.of("parity")] == PARITY
    rows = _rows(report, "parity")
    for exact in ("ynames", "mu", "scales", "PI"):
        assert rows[exact].difference == 0 and rows[exact].source.startswith("bit for bit")
    if which == "exact":
        # R does not move when X moves by 1e-15: the floor holds, and pyopnb is far inside it
        assert rows["fval"].tolerance == 1e-12 and rows["fval"].difference < 1e-13
        assert rows["V"].source.startswith("floor") and rows["V"].difference < 1e-12
    else:
        # R's binned fit moves with the data's last bits: its own spread sets the tolerance
        assert rows["V"].source.startswith("R's spread") and rows["V"].tolerance > 1e-10
    assert report.checks["parity"]["versions"]["OPNB"] == "1.0"
    assert report.checks["regression"]["recorded"]["version"] == pyopnb.__version__
    back = json.loads(report.to_json())
    assert back["ok"] is True and back["exit_code"] == 0 and len(back["rows"]) == len(report.rows)
    assert back["checks"]["regression"]["verdict"] == "same" and back["checks"]["parity"]["verdict"] == "ok"
    assert {row["check"] for row in back["rows"]} == {"regression", "parity"}


def _resigned(tmp_path, change, which="exact"):
    """A valid recording (its checksum made again) whose content ``change`` edits."""
    path, _ = RECORDINGS[which]
    rec = json.loads(path.read_text())
    change(rec)
    out = tmp_path / f"resigned-{which}.json"
    out.write_text(recording.dumps(rec))
    return out


def _r(change):
    return lambda rec: change(rec["R"]["results"])


@pytest.mark.parametrize("what, change", [
    ("fval", _r(lambda r: r.__setitem__("fval", r["fval"] * (1 + 1e-9)))),
    ("V", _r(lambda r: r["V"][1].__setitem__(0, r["V"][1][0] + 1e-8))),
    ("posterior", _r(lambda r: r["posterior"][7].__setitem__(1, r["posterior"][7][1] + 1e-6))),
    ("class", _r(lambda r: r["class"].__setitem__(3, "Yes" if r["class"][3] == "No" else "No"))),
    ("ynames", _r(lambda r: r["ynames"].reverse())),
    ("cv_accuracy", _r(lambda r: r["cv_stats"][0].__setitem__(1, r["cv_stats"][0][1] + 0.005))),
])
def test_a_difference_from_R_beyond_its_tolerance_fails_parity(pima, tmp_path, what, change):
    path = _resigned(tmp_path, change)
    report = compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=path, **EXACT)
    assert [(r.check, r.quantity) for r in report.failures] == [("parity", what)]
    assert report.verdict("regression") == "same" and report.exit_code == 1
    with pytest.raises(AssertionError, match="pyopnb's workflow differs in parity " + re.escape(what)):
        assert_matches_r(pima.X_train, pima.y_train, pima.X_test, against=path, **EXACT)


def test_a_difference_from_the_recording_fails_regression(pima, tmp_path):
    path = _resigned(tmp_path, lambda rec: rec["pyopnb"]["results"].__setitem__(
        "fval", np.nextafter(rec["pyopnb"]["results"]["fval"], 0)))
    report = compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=path, **EXACT)
    assert [(r.check, r.quantity) for r in report.failures] == [("regression", "fval")]
    assert report.verdict("parity") == "ok"
    # one ulp: the same bits are the default; a tolerance of a part in 1e15 lets it pass
    assert "worse (OPNB maximises fval)" in report.failures[0].detail
    assert compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=path, rtol={"fval": 1e-15}, **EXACT).ok


def test_known_R_defects_are_waived_unless_strict(pima, tmp_path):
    # R's fit of fold 2 at the first lam kept its start, and its accuracy there differs: waived, shown
    def kept(rec):
        rec["R"]["kept_start"] = [{"call": "OPNB_CV_lam", "lam": rec["R"]["results"]["cv_stats"][0][0], "fold": 2}]
        rec["R"]["results"]["cv_stats"][0][1] -= 1 / 30
    path = _resigned(tmp_path, kept)
    report = compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=path, **EXACT)
    row = _rows(report, "parity")["cv_accuracy"]
    assert report.ok and row.verdict == "waived"
    assert re.match(r"lam 0\.0001: R 0\.\d+, pyopnb 0\.\d+, where R's fit of fold 2 stopped on a non-finite value "
                    r"and kept its start", row.detail), row.detail
    strict = compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=path, strict_r=True, **EXACT)
    assert [r.quantity for r in strict.failures] == ["cv_accuracy"] and "(strict_r: not waived)" in \
        strict.failures[0].detail
    # a difference at a lam where no R fit kept its start is not waived
    def elsewhere(rec):
        kept(rec)
        rec["R"]["results"]["cv_stats"][1][1] -= 1 / 30
    report = compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=_resigned(tmp_path, elsewhere), **EXACT)
    assert [r.quantity for r in report.failures] == ["cv_accuracy"]
    # R's own fit kept its start: the fit's rows are waived, with both fvals
    def fit_kept(rec):
        rec["R"]["kept_start"] = [{"call": "OPNB", "lam": 1e-3, "fold": None}]
        rec["R"]["results"]["fval"] -= 0.01
    report = compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=_resigned(tmp_path, fit_kept), **EXACT)
    row = _rows(report, "parity")["fval"]
    assert report.ok and row.verdict == "waived" and "R's fit stopped on a non-finite value and kept its start" in \
        row.detail and "fval R -0.454" in row.detail


@pytest.mark.parametrize("change, message", [
    (lambda r: r["R"]["results"].__setitem__("fval", r["R"]["results"]["fval"] * 2),
     "its checksum does not match its contents"),
    (lambda r: r["R"]["spread"].__setitem__("V_abs", 1e9), "its checksum does not match its contents"),
    (lambda r: r["R"].pop("spread"), "R's side lacks its 'spread' section"),
    (lambda r: r["R"]["results"].pop("cv_stats"), "R's side lacks its 'cv_stats' section"),
    (lambda r: r["R"]["results"].__setitem__("class", r["R"]["results"]["class"][:10]),
     "R's side's 'class' has 10 entries, the rows predicted are 332"),
    (lambda r: r["R"]["results"].__setitem__("V", r["R"]["results"]["V"][:5]),
     "R's side's 'V' has shape 5x3, the data and arguments give 7x3"),
    (lambda r: r["R"]["spread"].pop("posterior_abs"), "R's spread lacks 'posterior_abs'"),
    (lambda r: r.__setitem__("folds", r["folds"][:2]), "the recording has 2 folds, its arguments 3"),
    (lambda r: r.pop("checksum"), "the recording lacks its 'checksum' section"),
])
def test_an_edited_or_incomplete_recording_is_refused_in_one_line(pima, tmp_path, change, message):
    path, args = RECORDINGS["exact"]
    rec = json.loads(path.read_text())
    change(rec)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(rec, indent=1))
    with pytest.raises(RecordingError) as info:
        compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=bad, **args)
    assert str(info.value).startswith(f"{bad}: {message}") and "\n" not in str(info.value)


def test_a_recording_refuses_other_data_and_arguments(pima, tmp_path):
    path, args = RECORDINGS["exact"]
    X = pima.X_train.copy()
    X[5, 2] = np.nextafter(X[5, 2], np.inf)
    with pytest.raises(RecordingError, match=r"recorded on other data \(the training values\)"):
        compare_with_r(X, pima.y_train, pima.X_test, against=path, **args)
    with pytest.raises(RecordingError, match=r"recorded on other data \(the test rows: 332 there, none \(the "
                                             r"training rows predicted\) here\)"):
        compare_with_r(pima.X_train, pima.y_train, None, against=path, **args)
    y = pima.y_train.copy()
    y[0] = "Yes" if y[0] == "No" else "No"
    with pytest.raises(RecordingError, match=r"recorded on other data \(the labels' values \(the same levels\)\)"):
        compare_with_r(pima.X_train, y, pima.X_test, against=path, **args)
    with pytest.raises(RecordingError, match=r"recorded on other data \(the labels' type: character there, "
                                             r"logical here; the labels' levels: \['No', 'Yes'\] there, "
                                             r"\['FALSE', 'TRUE'\] here\)"):
        compare_with_r(pima.X_train, pima.y_train == "Yes", pima.X_test, against=path, **args)
    with pytest.raises(RecordingError, match=r"the labels' levels: \['No', 'Yes'\] there, \['Yes', 'No'\] here"):
        compare_with_r(pima.X_train, pd.Categorical(pima.y_train, categories=["Yes", "No"]), pima.X_test,
                       against=path, **args)
    with pytest.raises(RecordingError, match=r"other arguments \(nlam=3 there, 4 here\)"):
        compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=path, **{**args, "nlam": 4})
    with pytest.raises(RecordingError, match=r"other arguments \(nbin=None there, 1000 here\)"):
        compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=path, ndim=3, cv=3, nlam=3)  # binned
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"fval": 1}))
    with pytest.raises(RecordingError, match="not a recording"):
        compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=other, **args)
    with pytest.raises(RecordingError, match="no such recording"):
        compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=tmp_path / "none.json", **args)


def test_a_recording_of_format_1_is_brought_up_to_date_keeping_R_s_side(pima, tmp_path):
    with pytest.raises(RecordingError, match=r"a recording of format 1 holds R's side only, with no pyopnb results "
                                             r"and no checksum: make one of format 2 from it with against="):
        compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=FORMAT1, **EXACT)
    new = tmp_path / "new.json"
    up = compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=FORMAT1, record=new, **EXACT)
    assert up.ok and up.verdict("regression") == "recorded" and up.verdict("parity") == "ok"
    old, now = json.loads(FORMAT1.read_text()), json.loads(new.read_text())
    assert now["R"]["results"]["V"] == old["R"]["V"] and now["R"]["spread"]["V_abs"] == old["spread"]["V_abs"]
    assert now["R"]["versions"] == old["versions"] and now["folds"] == old["folds"]
    replay = compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=new, **EXACT)
    assert replay.verdict("regression") == "same"
    # format 1's one hash still tells other data apart
    with pytest.raises(RecordingError, match="recorded on other data"):
        compare_with_r(pima.X_train[::-1].copy(), pima.y_train, pima.X_test, against=FORMAT1,
                       record=tmp_path / "n2.json", **EXACT)


def test_bad_calls_say_what_is_wrong(pima, tmp_path, monkeypatch):
    path, args = RECORDINGS["exact"]
    with pytest.raises(TypeError, match="unknown arguments V0"):
        compare_with_r(pima.X_train, pima.y_train, V0=np.eye(7)[:, :2])
    with pytest.raises(ValueError, match="cv must be a number of folds"):
        compare_with_r(pima.X_train, pima.y_train, against=path, cv=1)
    with pytest.raises(ValueError, match="ndim"):
        compare_with_r(pima.X_train, pima.y_train, against=path, ndim=9)
    with pytest.raises(ValueError, match="y must be a vector of 200 labels"):
        compare_with_r(pima.X_train, pima.y_train[:50], against=path)
    with pytest.raises(ValueError, match="spread_seeds= sets how live R's spread is measured"):
        compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=path, spread_seeds=0, **args)
    with pytest.raises(ValueError, match="rtol: class is compared exactly"):
        compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=path, rtol={"class": 1}, **args)
    existing = tmp_path / "exists.json"
    existing.write_text("{}")
    with pytest.raises(FileExistsError, match="never overwritten"):
        compare_with_r(pima.X_train, pima.y_train, record=existing, **args)
    assert existing.read_text() == "{}"
    # record= into a folder that does not exist fails before R is asked for

    def no_R_please(pkgs=()):
        raise AssertionError("R was asked for")
    monkeypatch.setattr(rbridge, "why_not", no_R_please)
    with pytest.raises(FileNotFoundError, match=r"record='.*nowhere/r.json': the folder .*nowhere does not exist"):
        compare_with_r(pima.X_train, pima.y_train, record=tmp_path / "nowhere" / "r.json", **args)


def test_threads_reach_every_fit_the_CV_folds_too(pima, monkeypatch):
    import pyopnb.cv
    import pyopnb.fitting

    seen = []
    for module, name in ((pyopnb.fitting, "OPNB"), (pyopnb.cv, "OPNB_CV_lam")):
        original = getattr(module, name)

        def spy(*a, _original=original, _name=name, **k):
            seen.append((_name, k.get("threads")))
            return _original(*a, **k)
        monkeypatch.setattr(module, name, spy)
    path, args = RECORDINGS["exact"]
    assert compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=path, threads=1, **args).ok
    assert seen == [("OPNB", 1), ("OPNB_CV_lam", 1)]


def test_live_comparison_without_R_says_what_is_missing(pima, monkeypatch):
    monkeypatch.setattr(rbridge, "why_not", lambda pkgs=(): "R package OPNB is not installed in this R")
    with pytest.raises(RUnavailable, match="needs R with the OPNB and FKSUM packages.*OPNB is not installed"):
        compare_with_r(pima.X_train, pima.y_train, **EXACT)


def test_starting_R_leaves_the_environment_that_child_processes_inherit(tmp_path):
    # R's start sets LD_LIBRARY_PATH to its own folders; left so, a Python started afterwards (a dask or joblib
    # worker) loads another libpython and fails to import its own extension modules
    code = ("import os, json, sys; before = os.environ.get('LD_LIBRARY_PATH'); "
            "from pyopnb.validation import rbridge; reason = rbridge.why_not(); "
            "print(json.dumps([reason, before, os.environ.get('LD_LIBRARY_PATH')]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                       env={k: v for k, v in __import__("os").environ.items() if k != "LD_LIBRARY_PATH"})
    reason, before, after = json.loads(r.stdout.strip().splitlines()[-1])
    if reason:
        pytest.skip(f"R does not start here: {reason}")
    assert before is None and after is None
    # and a Python started after R imports a module of its own that is compiled (ssl, as dask's workers do)
    code = ("import subprocess, sys; from pyopnb.validation import rbridge; rbridge.r('1 + 1'); "
            "sys.exit(subprocess.run([sys.executable, '-c', 'import ssl']).returncode)")
    assert subprocess.run([sys.executable, "-c", code], timeout=300, cwd=tmp_path).returncode == 0


def _needs_R():
    reason = rbridge.why_not(["OPNB", "FKSUM"])
    if reason:
        pytest.skip(f"the live comparison needs R's OPNB and FKSUM: {reason}")


def test_live_R_and_its_recording_agree(pima, tmp_path):
    _needs_R()
    rec = tmp_path / "rec.json"
    live = compare_with_r(pima.X_train, pima.y_train, pima.X_test, record=rec, nbin=None, ndim=2)
    assert live.ok, live.table()
    assert live.checks["parity"]["R"].startswith("live R") and live.verdict("regression") == "recorded"
    replay = compare_with_r(pima.X_train, pima.y_train, pima.X_test, against=rec, nbin=None, ndim=2)
    assert replay.verdict("regression") == "same"
    assert [(r.quantity, r.difference, r.tolerance) for r in replay.of("parity")] == \
        [(r.quantity, r.difference, r.tolerance) for r in live.of("parity")]


def test_live_labels_as_R_reads_them(pima):
    # integer labels: R sorts them numerically (2 < 10), and so must the comparison's both sides
    _needs_R()
    y = np.where(pima.y_train == "Yes", 10, 2)
    report = compare_with_r(pima.X_train, y, nbin=None, ndim=2, spread_seeds=1)
    assert report.ok, report.table()


def test_live_R_s_kept_start_is_waived_and_its_console_kept():
    # iris, binned, lam from 1e-4: R's fit of one fold meets a non-finite value in FKSUM's sums and keeps its
    # start (R's warning, and try()'s "Error in optim" on R's console); pyopnb's sums stay finite
    _needs_R()
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    report = compare_with_r(X, y, ndim=2, cv=3, nlam=3, spread_seeds=1)
    assert any("returning initial solution" in w for w in report.meta["R warnings"])
    assert report.meta["R kept its start"] == [{"call": "OPNB_CV_lam", "lam": 1e-4, "fold": 2}]
    assert "Error in optim" in report.meta["R console"] and "Error in optim" in report.table()
    assert report.ok and _rows(report, "parity")["cv_accuracy"].verdict == "waived"
    strict = compare_with_r(X, y, ndim=2, cv=3, nlam=3, spread_seeds=1, strict_r=True)
    assert [r.quantity for r in strict.failures] == ["cv_accuracy"]


def test_live_a_categorical_keeps_its_level_order_in_R(pima):
    # R's factor keeps its levels' order, as pyopnb keeps a Categorical's: "Yes" first on both sides
    _needs_R()
    y = pd.Categorical(pima.y_train, categories=["Yes", "No"])
    report = compare_with_r(pima.X_train, y, nbin=None, ndim=2, spread_seeds=1)
    assert report.ok, report.table()
    assert report.meta["data"]["labels"] == {**report.meta["data"]["labels"], "type": "factor",
                                             "levels": ["Yes", "No"]}


def test_live_no_spread_seeds_judges_only_what_needs_no_spread(pima):
    _needs_R()
    report = compare_with_r(pima.X_train, pima.y_train, pima.X_test, spread_seeds=0, ndim=2)
    assert report.checks["parity"]["spread"] is None
    rows = _rows(report, "parity")
    assert rows["ynames"].verdict == "ok" and rows["class"].source.endswith("(R's spread not measured "
                                                                              "(spread_seeds=0))")
    assert {r.verdict for r in rows.values()} <= {"ok", "not judged"} and report.ok


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
            "--against", str(path), "--json", "report.json", "--threads", "1", cwd=r_files)
    assert r.returncode == 0, r.stdout + r.stderr
    # the row names were not taken as a feature: the recording's fingerprint matched
    assert "train.csv: the first column has no header" in r.stderr
    assert "regression: same, 12 of 12 quantities pass" in r.stdout
    assert "parity: ok, 11 of 11 quantities pass" in r.stdout
    assert "regression: pyopnb now against its own recorded results: same" in r.stdout
    assert "bit for bit" in r.stdout and "same bits" in r.stdout
    back = json.loads((r_files / "report.json").read_text())
    assert back["ok"] is True and back["checks"]["regression"]["now"]["threads"] == 1


def test_validate_json_to_standard_output(r_files):
    path, _ = RECORDINGS["exact"]
    r = run("validate", "train.csv", "--target", "type", "--test", "test.csv", *_validate_args("exact"),
            "--against", str(path), "--json", "-", cwd=r_files)
    assert r.returncode == 0, r.stdout + r.stderr
    back = json.loads(r.stdout)  # the JSON alone: the table went to standard error
    assert back["exit_code"] == 0 and "parity: ok" in r.stderr and not (r_files / "-").exists()


def test_validate_exits_1_on_a_difference_naming_both_versions(r_files, tmp_path):
    bad = _resigned(tmp_path, lambda rec: rec["R"]["results"].__setitem__("fval", rec["R"]["results"]["fval"]
                                                                          * (1 + 1e-9)))
    r = run("validate", "train.csv", "--target", "type", "--test", "test.csv", *_validate_args("exact"),
            "--against", str(bad), cwd=r_files)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "parity: DIFFERS, 10 of 11 quantities pass; differ: fval" in r.stdout
    moved = _resigned(tmp_path, lambda rec: rec["pyopnb"]["results"]["V"][2].__setitem__(1, 0.5))
    r = run("validate", "train.csv", "--target", "type", "--test", "test.csv", *_validate_args("exact"),
            "--against", str(moved), "--json", "r.json", cwd=r_files)
    assert r.returncode == 1, r.stdout + r.stderr
    assert re.search(r"regression: DIFFERS, 11 of 12 quantities pass; differ: V \(pyopnb \S+ now, pyopnb \S+ in the "
                     r"recording of \d{4}-\d\d-\d\d\)", r.stdout), r.stdout
    assert "1 of 21 entries differ: V[2, 1] recorded 0.5, now " in r.stdout
    back = json.loads((r_files / "r.json").read_text())
    assert back["exit_code"] == 1 and back["checks"]["regression"]["verdict"] == "DIFFERS"
    # a tolerance that covers it, for this quantity only
    r = run("validate", "train.csv", "--target", "type", "--test", "test.csv", *_validate_args("exact"),
            "--against", str(moved), "--atol", "V=3", "--rtol", "1e-12", cwd=r_files)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "regression: ok, 12 of 12 quantities pass" in r.stdout


def test_validate_strict_r_fails_a_waived_row(r_files, tmp_path):
    def kept(rec):
        rec["R"]["kept_start"] = [{"call": "OPNB_CV_lam", "lam": rec["R"]["results"]["cv_stats"][0][0], "fold": 1}]
        rec["R"]["results"]["cv_stats"][0][1] -= 0.1
    path = _resigned(tmp_path, kept)
    base = ["validate", "train.csv", "--target", "type", "--test", "test.csv", *_validate_args("exact"),
            "--against", str(path)]
    r = run(*base, cwd=r_files)
    assert r.returncode == 0 and "waived (R's known defect): cv_accuracy" in r.stdout, r.stdout + r.stderr
    r = run(*base, "--strict-r", cwd=r_files)
    assert r.returncode == 1 and "differ: cv_accuracy" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("args, message", [
    (["--target", "kind"], "no target column 'kind'"),
    (["--target", "type", "--test", "test.csv", "--ndim", "3", "--nlam", "4", "--cv", "3", "--exact"],
     "other arguments (nlam=3 there, 4 here)"),
    (["--target", "type", "--ndim", "3", "--nlam", "3", "--cv", "3", "--exact"],
     "recorded on other data (the test rows: 332 there, none (the training rows predicted) here): a recording "
     "replays only on the data it was made with; record again with --record "),
    (["--target", "type", "--exact", "--nbin", "50"], "--exact and --nbin contradict"),
    (["--target", "type", "--spread-seeds", "0"], "--spread-seeds sets how live R's spread is measured"),
    (["--target", "type", "--rtol", "class=1"], "rtol: class is compared exactly"),
    (["--target", "type", "--rtol", "V=x"], "--rtol V=x: give a number, or QUANTITY=NUMBER"),
    (["--select", "fit/"], "--select chooses among the suite's checks"),
    (["--target", "type", "--nlam", "x"], "argument --nlam: invalid int value: 'x'"),
])
def test_validate_usage_errors_exit_2_and_still_write_their_json(r_files, args, message):
    path, _ = RECORDINGS["exact"]
    (r_files / "error.json").unlink(missing_ok=True)
    full = ["validate", "train.csv", *args, "--json", "error.json", "--against", str(path)]
    r = run(*full, cwd=r_files)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and r.stderr.count("error:") == 1
    back = json.loads((r_files / "error.json").read_text())
    assert back["ok"] is False and back["exit_code"] == 2 and message in back["error"] and back["rows"] == []
    r = run(*full[:-4], "--json", "-", "--against", str(path), cwd=r_files)
    assert r.returncode == 2 and json.loads(r.stdout)["exit_code"] == 2


def test_validate_a_damaged_recording_exits_2_in_one_line(r_files, tmp_path):
    path, _ = RECORDINGS["exact"]
    bad = tmp_path / "bad.json"
    bad.write_text(path.read_text()[:5000])
    r = run("validate", "train.csv", "--target", "type", "--test", "test.csv", *_validate_args("exact"),
            "--against", str(bad), cwd=r_files)
    assert r.returncode == 2 and r.stderr.count("pyopnb: error:") == 1, r.stdout + r.stderr
    assert "not complete JSON" in r.stderr and "Traceback" not in r.stderr
    r = run("validate", "train.csv", "--target", "type", "--test", "test.csv", *_validate_args("exact"),
            "--against", str(FORMAT1), cwd=r_files)
    assert r.returncode == 2 and f"make one of format 2 from it with --against {FORMAT1}, --record NEW" in r.stderr


def test_validate_brings_a_format_1_recording_up_to_date(r_files):
    (r_files / "new.json").unlink(missing_ok=True)
    r = run("validate", "train.csv", "--target", "type", "--test", "test.csv", *_validate_args("exact"),
            "--against", str(FORMAT1), "--record", "new.json", cwd=r_files)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "regression: recorded" in r.stdout and "parity: ok" in r.stdout
    r = run("validate", "train.csv", "--target", "type", "--test", "test.csv", *_validate_args("exact"),
            "--against", "new.json", cwd=r_files)
    assert r.returncode == 0 and "regression: same" in r.stdout, r.stdout + r.stderr


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
    code = code.replace("'2']", "'2', '--r-reads-csv']")
    r = subprocess.run([sys.executable, "-c", code], cwd=r_files, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "--r-reads-csv: R reads the files itself, and needs R" in r.stderr


def test_validate_r_reads_csv_on_a_recording_made_without_it(r_files):
    path, _ = RECORDINGS["exact"]
    r = run("validate", "train.csv", "--target", "type", "--test", "test.csv", *_validate_args("exact"),
            "--against", str(path), "--r-reads-csv", cwd=r_files)
    assert r.returncode == 2 and "R fitted pyopnb's parse of the files, not its own read.csv" in r.stderr


def test_python_m_validation_help_shows_a_usage_line_that_works(r_files):
    r = subprocess.run([sys.executable, "-m", "pyopnb.validation", "--help"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and r.stdout.startswith("usage: python -m pyopnb.validation [-h] [--target TARGET]")
    path, _ = RECORDINGS["exact"]
    r = subprocess.run([sys.executable, "-m", "pyopnb.validation", "train.csv", "--target", "type", "--test",
                        "test.csv", *_validate_args("exact"), "--against", str(path)], cwd=r_files,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "regression: same" in r.stdout, r.stdout + r.stderr


def test_validate_with_no_file_runs_the_suite(tmp_path):
    r = run("validate", "--select", "fk_sum/fk_basic", "--json", "suite.json", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3 passed, 0 failed, 0 skipped" in r.stdout
    rows = json.loads((tmp_path / "suite.json").read_text())
    assert [row["verdict"] for row in rows] == ["pass"] * 3
    r = subprocess.run([sys.executable, "-m", "pyopnb.validation", "--select", "fk_sum/fk_basic"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "3 passed" in r.stdout
    r = run("validate", "--select", "fk_sum/fk_basic", "--json", "-", cwd=tmp_path)
    assert r.returncode == 0 and [row["verdict"] for row in json.loads(r.stdout)] == ["pass"] * 3
    assert "3 passed" in r.stderr and not (tmp_path / "-").exists()
    r = run("validate", "--select", "no such check", cwd=tmp_path)
    assert r.returncode == 2 and "no check's id contains it" in r.stderr


def test_the_suite_exits_1_on_a_failing_check(tmp_path):
    code = ("import sys; from pyopnb.validation import checks; "
            "checks.check('zz/always fails', checks.RECORDED)(lambda: [checks.compare('one', checks.RECORDED, 1.0, "
            "2.0, 0, 0)]); from pyopnb.cli import main; sys.exit(main(['validate', '--select', 'zz/']))")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "0 passed, 1 failed" in r.stdout


# --- R reads the files itself ----------------------------------------------------

# made by test_live_r_reads_csv_lists_the_cells_parsed_apart's first command (R 4.2.2, OPNB 1.0, FKSUM 1.0.1)
R_READS_CSV = Path(__file__).parent / "recordings" / "r_reads_csv.json"

# decimal text that R's read.csv turns into a double one ulp away from the correctly rounded one (pandas')
R_PARSES_APART = ["711.43092292985130600", "541.761245844501957", "485.7188759241424520578"]


@pytest.fixture(scope="module")
def parse_files(tmp_path_factory):
    """A training file (write.csv's layout) with three cells R parses one ulp from pandas, integer labels."""
    tmp = tmp_path_factory.mktemp("parse")
    rng = np.random.default_rng(7)
    y = rng.choice([1, 2, 10], size=120)
    X = np.round(rng.normal(size=(120, 3)) + np.c_[y == 2, y == 10, np.zeros(120)], 6)
    lines = ['"","a","b","c","y"'] + [f'"{i + 1}",' + ",".join(repr(float(v)) for v in X[i]) + f",{y[i]}"
                                       for i in range(120)]
    for k, text in enumerate(R_PARSES_APART):
        row = lines[1 + 10 * k + 3].split(",")
        row[1 + k] = text
        lines[1 + 10 * k + 3] = ",".join(row)
    (tmp / "train.csv").write_text("\n".join(lines) + "\n")
    return tmp


def test_live_r_reads_csv_lists_the_cells_parsed_apart(parse_files):
    _needs_R()
    r = run("validate", "train.csv", "--target", "y", "--exact", "--ndim", "2", "--r-reads-csv", "--spread-seeds",
            "1", "--record", "rec.json", "--json", "live.json", cwd=parse_files)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "R's read.csv and pyopnb's reader parse 3 cells differently (R fitted its own parse):" in r.stdout
    cells = json.loads((parse_files / "live.json").read_text())["meta"]["R parse"]["differences"]
    assert [(c["row"], c["column"], c["text"]) for c in cells] == [(4, "a", R_PARSES_APART[0]),
                                                                   (14, "b", R_PARSES_APART[1]),
                                                                   (24, "c", R_PARSES_APART[2])]
    for c in cells:
        assert c["pyopnb"] == float(c["text"]) and abs(c["R"] - c["pyopnb"]) == np.spacing(c["pyopnb"])
    # replayed with no R, the recording still lists them
    r = run("validate", "train.csv", "--target", "y", "--exact", "--ndim", "2", "--against", "rec.json",
            "--r-reads-csv", cwd=parse_files)
    assert r.returncode == 0 and "parse 3 cells differently" in r.stdout, r.stdout + r.stderr


def test_a_recording_of_R_s_own_parse_replays_with_no_R(parse_files, tmp_path):
    args = ["validate", "train.csv", "--target", "y", "--exact", "--ndim", "2", "--json", "replay.json",
            "--overwrite"]
    r = run(*args, "--against", str(R_READS_CSV), cwd=parse_files)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "R's read.csv and pyopnb's reader parse 3 cells differently" in r.stdout
    rows = {row["quantity"]: row for row in json.loads((parse_files / "replay.json").read_text())["rows"]
            if row["check"] == "parity"}
    # pyopnb's centring and scaling of R's own parse (rebuilt from the recorded cells) are R's, to the bit
    for key in ("mu", "scales"):
        assert rows[key]["verdict"] == "ok" and rows[key]["source"].startswith("bit for bit on R's parse")
        assert "pyopnb's own parse of the files moves it by up to" in rows[key]["detail"]
    # a recorded cell that is not R's value breaks that
    def wrong(rec):
        cell = rec["R"]["input"]["differences"][0]
        cell["R"] = cell["pyopnb"] + 2 * (cell["R"] - cell["pyopnb"])
    rec = json.loads(R_READS_CSV.read_text())
    wrong(rec)
    bad = tmp_path / "wrong.json"
    bad.write_text(recording.dumps(rec))
    r = run(*args, "--against", str(bad), cwd=parse_files)
    assert r.returncode == 1 and "parity: DIFFERS" in r.stdout and "differ: mu, scales" in r.stdout, r.stdout
    # a recording that kept only some of the cells cannot rebuild R's parse: those rows are not judged
    rec = json.loads(R_READS_CSV.read_text())
    rec["R"]["input"]["count"] = 5000
    bad.write_text(recording.dumps(rec))
    r = run(*args, "--against", str(bad), cwd=parse_files)
    assert r.returncode == 0 and "not judged: mu, scales" in r.stdout, r.stdout
