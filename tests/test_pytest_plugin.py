"""The pyopnb_regression fixture in a fresh project, as a user's own pytest
runs it: found through pyopnb's pytest11 entry point, one recording a test
beside it, replays with no R, --pyopnb-update, and exit 2 for a recording
that cannot be used."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from pyopnb.validation import rbridge
from pyopnb.validation.fixtures import FIXTURES

# fits that converge (no ConvergenceWarning), so that each run stays short
TEST = textwrap.dedent('''
    from pyopnb.datasets import load_pima


    def test_pima(pyopnb_regression):
        d = load_pima()
        report = pyopnb_regression.check(d.X_train, d.y_train, d.X_test, ndim=3, nbin=None, parity=False)
        assert report.verdict("parity") == "not checked"


    def test_pima_twice(pyopnb_regression):
        d = load_pima()
        pyopnb_regression.check(d.X_train, d.y_train, d.X_test, name="binned", ndim=2, parity=False)
        pyopnb_regression.check(d.X_train, d.y_train, d.X_test, name="exact", ndim=1, nbin=None, parity=False)
''')

# a change inside pyopnb, planted the way a regression would come: every fit's V moved by one part in 1e6
PLANTED = textwrap.dedent('''
    import pyopnb.fitting

    _fit = pyopnb.fitting.OPNB


    def _moved(*args, **kwargs):
        m = _fit(*args, **kwargs)
        m.V = m.V * (1 + 1e-6)
        return m


    pyopnb.fitting.OPNB = _moved
''')

# no R at all: rpy2 cannot be imported, and R_HOME points nowhere
NO_R = "import sys\nsys.modules['rpy2'] = None\n"


def pytest_run(folder, *args, env=None):
    e = dict(os.environ, **(env or {}))
    e.pop("PYTEST_ADDOPTS", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                           *args], cwd=folder, capture_output=True, text=True, timeout=600, env=e)


def test_record_replay_fail_update_and_damage(tmp_path):
    """The fixture's life in one project: a first run records, the next
    replays, a planted change fails with the report, an update records it
    and says what changed, damaged recordings exit 2 and an update replaces
    them."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_model.py").write_text(TEST)
    folder = tmp_path / "tests" / "test_model"
    names = ["test_pima.json", "test_pima_twice-binned.json", "test_pima_twice-exact.json"]

    r = pytest_run(tmp_path, "tests")
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in folder.iterdir()) == names
    assert "recorded tests/test_model/test_pima.json: no R side (parity=False), pyopnb" in r.stdout
    before = {n: (folder / n).read_bytes() for n in names}

    r = pytest_run(tmp_path, "tests")
    assert r.returncode == 0 and "2 passed" in r.stdout, r.stdout + r.stderr
    assert "pyopnb_regression" not in r.stdout
    assert {n: (folder / n).read_bytes() for n in names} == before

    (tmp_path / "tests" / "conftest.py").write_text(PLANTED)
    r = pytest_run(tmp_path, "tests")
    assert r.returncode == 1 and "2 failed" in r.stdout, r.stdout + r.stderr
    assert "regression: DIFFERS" in r.stdout and "differ: V, posterior" in r.stdout and "V[" in r.stdout
    assert {n: (folder / n).read_bytes() for n in names} == before

    r = pytest_run(tmp_path, "tests", "--pyopnb-update")
    assert r.returncode == 0, r.stdout + r.stderr
    assert ("updated tests/test_model/test_pima.json: no R side (parity=False); pyopnb's results changed: V ("
            in r.stdout)
    # the changed code is the reference now, and the old code no longer passes
    os.remove(tmp_path / "tests" / "conftest.py")
    r = pytest_run(tmp_path, "tests")
    assert r.returncode == 1 and "2 failed" in r.stdout, r.stdout + r.stderr

    # damaged recordings: one edited, one with a section missing (a test stops at its first failing check)
    rec = json.loads((folder / names[0]).read_text())
    rec["pyopnb"]["results"]["fval"] *= 1.0000001
    (folder / names[0]).write_text(json.dumps(rec))
    rec = json.loads((folder / names[1]).read_text())
    del rec["pyopnb"]["results"]["V"]
    (folder / names[1]).write_text(json.dumps(rec))
    r = pytest_run(tmp_path, "tests")
    assert r.returncode == 2 and "2 failed" in r.stdout, r.stdout + r.stderr
    for name, message in zip(names, ("its checksum does not match its contents",
                                     "pyopnb's side lacks its 'V' section")):
        assert f"pyopnb_regression: {folder / name}: {message}" in r.stdout.replace("\n", " ")
    r = pytest_run(tmp_path, "tests", "--pyopnb-update")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("in place of one that could not be used") == 2
    assert {n: (folder / n).read_bytes() for n in names} == before


def test_with_no_R_a_recording_with_R_replays_and_none_is_an_error(tmp_path):
    # a recording with R's side (R 4.2.2, OPNB 1.0, FKSUM 1.0.1) beside a user's test
    (tmp_path / "tests" / "test_pima").mkdir(parents=True)
    shutil.copy(FIXTURES / "workflow_pima_exact.json", tmp_path / "tests" / "test_pima" / "test_pima.json")
    (tmp_path / "tests" / "conftest.py").write_text(NO_R)
    (tmp_path / "tests" / "test_pima.py").write_text(textwrap.dedent('''
        from pyopnb.datasets import load_pima


        def test_pima(pyopnb_regression):
            d = load_pima()
            report = pyopnb_regression.check(d.X_train, d.y_train, d.X_test, nbin=None, ndim=3, cv=3, nlam=3)
            assert report.verdict("parity") == "ok"


        def test_new(pyopnb_regression):
            d = load_pima()
            pyopnb_regression.check(d.X_train, d.y_train, d.X_test, nbin=None, ndim=2)
    '''))
    nowhere = {"R_HOME": str(tmp_path / "nowhere")}
    r = pytest_run(tmp_path, "tests", env=nowhere)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "1 failed, 1 passed" in r.stdout
    assert "no recording at" in r.stdout and "and no R to make one (rpy2 or R is not available" in r.stdout
    assert not (tmp_path / "tests" / "test_pima" / "test_new.json").exists()
    # with no R, an update keeps the recording's R side and records pyopnb's results again
    r = pytest_run(tmp_path, "tests/test_pima.py::test_pima", "--pyopnb-update", env=nowhere)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "R's side kept from the recording; pyopnb's results unchanged" in r.stdout


def test_with_R_the_first_run_records_R_too(tmp_path):
    reason = rbridge.why_not(["OPNB", "FKSUM"])
    if reason:
        pytest.skip(f"recording R's side needs R with OPNB and FKSUM: {reason}")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_pima.py").write_text(textwrap.dedent('''
        from pyopnb.datasets import load_pima


        def test_pima(pyopnb_regression):
            d = load_pima()
            pyopnb_regression.check(d.X_train, d.y_train, d.X_test, nbin=None, ndim=3, spread_seeds=1)
    '''))
    r = pytest_run(tmp_path, "tests")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "recorded tests/test_pima/test_pima.json: R's side from live R" in r.stdout
    rec = json.loads((tmp_path / "tests" / "test_pima" / "test_pima.json").read_text())
    assert rec["R"]["versions"]["OPNB"] == "1.0" and rec["R"]["spread"]["seeds"] == 1
    r = pytest_run(tmp_path, "tests", "--pyopnb-update")
    assert r.returncode == 0 and "R's side from live R; pyopnb's results unchanged" in r.stdout, r.stdout
    # and it replays where R is not
    (tmp_path / "tests" / "conftest.py").write_text(NO_R)
    r = pytest_run(tmp_path, "tests", env={"R_HOME": str(tmp_path / "nowhere")})
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout + r.stderr
