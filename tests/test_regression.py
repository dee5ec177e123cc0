"""Regression checks hold pyopnb to its own recorded bits: they catch the
changes a replay within R's spread let through, on data the project never
tuned on, and pass untouched code on every thread count and vector path.

Recordings here are made with ``parity=False`` (pyopnb's own bits only, no
R), which is what the regression check reads; parity with R is tested in
validation/test_workflow.py."""
import json
from pathlib import Path

import numpy as np
import pytest

import pyopnb.fitting
import pyopnb.model
from pyopnb.testing import RecordingError, check_recording
from pyopnb.validation import recording
from pyopnb.validation.regression import Tolerances

sk = pytest.importorskip("sklearn.datasets", reason="the data sets come from scikit-learn")


def _split(X, y):
    return X[::2], y[::2], X[1::2]


def _wine():
    X, y = sk.load_wine(return_X_y=True)
    return _split(X, np.asarray(["barolo", "grignolino", "barbera"], dtype=object)[y])


def _cancer():
    X, y = sk.load_breast_cancer(return_X_y=True)
    return _split(X[:300, :12], y[:300])


def _integer_labels():
    # labels 1, 2 and 10 (R sorts them as numbers), a constant and a near-duplicate column
    rng = np.random.default_rng(11)
    y = rng.choice([1, 2, 10], size=240)
    X = rng.normal(size=(240, 5)) + np.c_[y == 2, y == 10, (y == 1) * 0.5, np.zeros((240, 2))]
    X[:, 3] = 4.0
    X[:, 4] = X[:, 0] * (1 + 1e-9)
    return _split(X, y)


DATA = {"wine": _wine, "cancer": _cancer, "integer labels": _integer_labels}
MODES = {"binned": dict(ndim=2), "exact": dict(ndim=2, nbin=None)}
CASES = [(d, m) for d in DATA for m in MODES]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """Each case recorded once, with one thread, by untouched code."""
    out = {}
    for d, m in CASES:
        path = tmp_path_factory.mktemp("rec") / f"{d}-{m}.json"
        report = check_recording(*DATA[d](), path=path, parity=False, threads=1, **MODES[m])
        assert report.meta["recording"]["action"] == "recorded"
        out[d, m] = path
    return out


def _side(path):
    return json.loads(path.read_text())["pyopnb"]["results"]


def _moved(path, report_now):
    """Whether any recorded output of pyopnb changed its bits (computed apart
    from the regression rows, from the new recording written beside)."""
    a, b = _side(path), _side(report_now)
    return json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True)


def _shift_posteriors(monkeypatch):
    original = pyopnb.model.predict

    def shifted(*args, **kwargs):
        out = dict(original(*args, **kwargs))
        out["posterior"] = out["posterior"] + 1e-3
        return out
    monkeypatch.setattr(pyopnb.model, "predict", shifted)


def _wrap_fit(monkeypatch, change_args=None, change_model=None):
    original = pyopnb.fitting.OPNB

    def fit(*args, **kwargs):
        if change_args:
            change_args(kwargs)
        m = original(*args, **kwargs)
        if change_model:
            change_model(m)
        return m
    monkeypatch.setattr(pyopnb.fitting, "OPNB", fit)


def _other_start(kwargs):
    def V0(X, y, ndim):
        rng = np.random.default_rng(3)
        return np.linalg.qr(rng.normal(size=(X.shape[1], ndim)))[0]
    kwargs["V0"] = V0


CHANGES = {
    "posteriors shifted by 1e-3": _shift_posteriors,
    "V scaled by 1 + 1e-6": lambda mp: _wrap_fit(mp, change_model=lambda m: setattr(m, "V", m.V * (1 + 1e-6))),
    "nbin 500 for 1000": lambda mp: _wrap_fit(mp, change_args=lambda k: k.update(nbin=500) if k.get("nbin") == 1000
                                              else None),
    "L-BFGS-B stopped at 20 iterations": lambda mp: _wrap_fit(mp, change_args=lambda k: k.update(maxit=20)),
    "a start elsewhere": lambda mp: _wrap_fit(mp, change_args=_other_start),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_strict_replay_catches_every_change_that_moves_the_output(recorded, tmp_path, monkeypatch, change):
    CHANGES[change](monkeypatch)
    moved_somewhere = 0
    for d, m in CASES:
        report = check_recording(*DATA[d](), path=recorded[d, m], parity=False, threads=1, **MODES[m])
        # the changed code's own results, recorded apart: did the change move any output?
        now = tmp_path / f"{d}-{m}.json"
        check_recording(*DATA[d](), path=now, parity=False, threads=1, **MODES[m])
        moved = _moved(recorded[d, m], now)
        assert (report.verdict("regression") == "DIFFERS") == moved, (d, m, report.summary())
        assert report.ok == (not moved)
        moved_somewhere += moved
    # nbin moves only the binned fits, and a fit that converges within 20 iterations is not moved at all
    assert moved_somewhere >= {"nbin 500 for 1000": 3, "L-BFGS-B stopped at 20 iterations": 1}.get(change, 6)


@pytest.mark.parametrize("threads", [1, 2])
def test_untouched_code_replays_on_any_thread_count(recorded, many_cores, threads):
    for d, m in CASES:
        report = check_recording(*DATA[d](), path=recorded[d, m], parity=False, threads=threads, **MODES[m])
        assert report.verdict("regression") == "same", report.table()
        assert report.checks["regression"]["recorded"]["threads"] == 1
        assert report.checks["regression"]["now"]["threads"] == threads


def test_untouched_code_replays_on_every_vector_path(recorded, every_path):
    X, y, Xte = DATA["wine"]()
    verdicts = every_path(lambda: check_recording(X, y, Xte, path=recorded["wine", "binned"], parity=False,
                                                  **MODES["binned"]).verdict("regression"))
    assert verdicts and set(verdicts) == {"same"}


def test_a_difference_says_where_with_both_values(recorded, tmp_path, monkeypatch):
    X, y, Xte = DATA["wine"]()
    path = recorded["wine", "exact"]
    _wrap_fit(monkeypatch, change_args=lambda k: k.update(maxit=3))
    report = check_recording(X, y, Xte, path=path, parity=False, **MODES["exact"])
    rows = {r.quantity: r for r in report.of("regression")}
    rec = _side(path)
    check_recording(X, y, Xte, path=tmp_path / "now.json", parity=False, **MODES["exact"])
    now = _side(tmp_path / "now.json")
    assert rows["ynames"].verdict == rows["PI"].verdict == rows["mu"].verdict == "same"
    fval = rows["fval"]
    assert fval.verdict == "DIFFERS" and "worse (OPNB maximises fval)" in fval.detail
    assert f"recorded {rec['fval']!r}" in fval.detail
    V = rows["V"]
    assert V.verdict == "DIFFERS" and V.detail.startswith(f"{V.detail.split()[0]} of 26 entries differ: V[")
    # the first entry shown is the one that moved most, with both its values
    i, j = (int(v) for v in V.detail.split("V[", 1)[1].split("]", 1)[0].split(","))
    assert f"V[{i}, {j}] recorded {rec['V'][i][j]!r}, now {now['V'][i][j]!r}" in V.detail
    moves = np.abs(np.asarray(now["V"]) - np.asarray(rec["V"]))
    assert V.difference == moves.max() == moves[i, j]
    assert "posterior[" in rows["posterior"].detail and "'barolo'" in rows["posterior"].detail
    assert rows["convergence"].detail == "L-BFGS-B's code recorded 0 (converged), now 1 (iteration limit reached)"
    assert "pyopnb 0.1.0 now, pyopnb 0.1.0 in the recording of" in report.summary()


def test_tolerances_loosen_regression_per_quantity(recorded, monkeypatch):
    X, y, Xte = DATA["cancer"]()
    path = recorded["cancer", "binned"]
    _shift_posteriors(monkeypatch)
    assert check_recording(X, y, Xte, path=path, parity=False, **MODES["binned"]).verdict("regression") == "DIFFERS"
    report = check_recording(X, y, Xte, path=path, parity=False, atol={"posterior": 1.5e-3}, **MODES["binned"])
    rows = {r.quantity: r for r in report.of("regression")}
    assert report.ok and rows["posterior"].verdict == "ok" and rows["V"].verdict == "same"
    assert rows["posterior"].source == "rtol 0, atol 0.0015 (given)"
    assert 1e-3 - 1e-12 < rows["posterior"].difference < 1e-3 + 1e-12
    # an rtol of 1e-3 is not enough for posteriors near 0
    report = check_recording(X, y, Xte, path=path, parity=False, rtol=1e-3, **MODES["binned"])
    assert {r.quantity for r in report.failures} == {"posterior"}


@pytest.mark.parametrize("rtol, message", [
    ({"class": 1e-3}, "class is compared exactly"),
    ({"V ": 1e-3}, "no quantity 'V '"),
    (-1e-3, "must be a finite number >= 0"),
    (float("nan"), "must be a finite number >= 0"),
    (True, "must be a finite number >= 0"),
])
def test_bad_tolerances_say_what_is_wrong(rtol, message):
    with pytest.raises(ValueError, match=message):
        Tolerances.of(rtol=rtol)


def test_an_update_says_what_changed_and_becomes_the_reference(recorded, tmp_path, monkeypatch):
    X, y, Xte = DATA["integer labels"]()
    path = tmp_path / "r.json"
    path.write_bytes(recorded["integer labels", "binned"].read_bytes())
    same = check_recording(X, y, Xte, path=path, update=True, parity=False, **MODES["binned"])
    assert same.meta["recording"]["action"] == "updated"
    assert same.meta["recording"]["said"].endswith("pyopnb's results unchanged")
    assert path.read_bytes() != b"" and _side(path) == _side(recorded["integer labels", "binned"])
    _wrap_fit(monkeypatch, change_model=lambda m: setattr(m, "V", m.V * (1 + 1e-6)))
    changed = check_recording(X, y, Xte, path=path, update=True, parity=False, **MODES["binned"])
    assert changed.ok and "pyopnb's results changed: V (" in changed.meta["recording"]["said"]
    assert {r.quantity for r in changed.of("regression") if r.verdict == "updated"} >= {"V", "posterior"}
    # the changed code is the reference now: it replays, and the old code does not
    assert check_recording(X, y, Xte, path=path, parity=False, **MODES["binned"]).verdict("regression") == "same"
    monkeypatch.undo()
    assert check_recording(X, y, Xte, path=path, parity=False, **MODES["binned"]).verdict("regression") == "DIFFERS"


def test_the_recording_diffs_well(recorded):
    text = recorded["wine", "binned"].read_text()
    lines = text.splitlines()
    assert lines[1] == ' "format": "pyopnb-validate-recording",' and lines[3].startswith(' "checksum": "sha256:')
    rec = json.loads(text)
    # a matrix row a line, ten vector entries a line: a changed entry is a changed line
    stripped = [line.strip().rstrip(",") for line in lines]
    for row in rec["pyopnb"]["results"]["posterior"] + rec["pyopnb"]["results"]["V"]:
        assert "[" + ", ".join(map(repr, row)) + "]" in stripped
    classes = rec["pyopnb"]["results"]["class"]
    assert ", ".join(json.dumps(c) for c in classes[10:20]) in stripped and len(classes) == 89
    assert rec["pyopnb"]["identity"]["version"] == pyopnb.__version__
    assert rec["R"] is None and rec["data"]["labels"]["levels"] == ["barbera", "barolo", "grignolino"]


# --- a recording is checked before use -------------------------------------

def _edited(tmp_path, source, change):
    rec = json.loads(source.read_text())
    change(rec)
    out = tmp_path / "edited.json"
    out.write_text(json.dumps(rec, indent=1))
    return out


@pytest.mark.parametrize("change, message", [
    (lambda r: r["pyopnb"]["results"]["V"][0].__setitem__(0, r["pyopnb"]["results"]["V"][0][0] * 2),
     "its checksum does not match its contents"),
    (lambda r: r["pyopnb"]["results"].pop("V"), "pyopnb's side lacks its 'V' section"),
    (lambda r: r["pyopnb"]["results"].__setitem__("class", r["pyopnb"]["results"]["class"][:10]),
     "pyopnb's side's 'class' has 10 entries, the rows predicted are 89"),
    (lambda r: r.pop("pyopnb"), "the recording lacks its 'pyopnb' section"),
    (lambda r: r["data"].__setitem__("n", 90), "its checksum does not match its contents"),
    (lambda r: r["data"].pop("n"), "the recording's data section lacks the row and column counts"),
    (lambda r: r["args"].__setitem__("ndim", 3), "pyopnb's side's 'V' has shape 13x2, the data and arguments give "
                                                 "13x3"),
    (lambda r: r.__setitem__("version", 3), "recording format version 3"),
])
def test_an_edited_or_incomplete_recording_is_refused(recorded, tmp_path, change, message):
    X, y, Xte = DATA["wine"]()
    path = _edited(tmp_path, recorded["wine", "binned"], change)
    with pytest.raises(RecordingError, match="^" + str(path).replace("\\", "\\\\") + ".*" + message.replace("(", "\\(")
                       .replace(")", "\\)")):
        check_recording(X, y, Xte, path=path, parity=False, **MODES["binned"])


def test_a_cut_recording_is_refused(recorded, tmp_path):
    X, y, Xte = DATA["wine"]()
    text = recorded["wine", "binned"].read_text()
    for cut in (len(text) // 2, len(text) - 3):
        path = tmp_path / "cut.json"
        path.write_text(text[:cut])
        with pytest.raises(RecordingError, match="not complete JSON .*: the file was cut short, half written or "
                                                 "edited"):
            check_recording(X, y, Xte, path=path, parity=False, **MODES["binned"])


@pytest.mark.parametrize("what, change, message", [
    ("the values", lambda X, y, Xte: (X + np.eye(*X.shape) * 1e-12, y, Xte), "the training values"),
    ("the test values", lambda X, y, Xte: (X, y, Xte[::-1]), "the test values"),
    ("the row count", lambda X, y, Xte: (X[:-1], y[:-1], Xte), "the row count: 89 there, 88 here"),
    ("no test rows", lambda X, y, Xte: (X, y, None),
     "the test rows: 89 there, none (the training rows predicted) here"),
    ("the labels' type",
     lambda X, y, Xte: (X, np.asarray([{"barbera": 0, "barolo": 1, "grignolino": 2}[v] for v in y]), Xte),
     "the labels' type: character there, integer here"),
    ("the labels' levels", lambda X, y, Xte: (X, np.where(y == "barolo", "nebbiolo", y).astype(object), Xte),
     "the labels' levels: ['barbera', 'barolo', 'grignolino'] there, ['barbera', 'grignolino', 'nebbiolo'] here"),
    ("the labels' values", lambda X, y, Xte: (X, y[::-1].copy(), Xte), "the labels' values (the same levels)"),
])
def test_other_data_say_which_part_differs(recorded, what, change, message):
    X, y, Xte = change(*DATA["wine"]())
    with pytest.raises(RecordingError, match="recorded on other data \\(" + message.replace("(", "\\(")
                       .replace(")", "\\)").replace("[", "\\[").replace("]", "\\]")):
        check_recording(X, y, Xte, path=recorded["wine", "binned"], parity=False, **MODES["binned"])


def test_other_arguments_and_paths(recorded, tmp_path):
    X, y, Xte = DATA["wine"]()
    with pytest.raises(RecordingError, match=r"other arguments \(ndim=2 there, 3 here\)"):
        check_recording(X, y, Xte, path=recorded["wine", "binned"], parity=False, ndim=3)
    # parity asked of a recording that holds no R side
    with pytest.raises(RecordingError, match="holds no R side \\(recorded with parity=False\\)"):
        check_recording(X, y, Xte, path=recorded["wine", "binned"], **MODES["binned"])
    with pytest.raises(ValueError, match="spread_seeds must be a whole number >= 0"):
        check_recording(X, y, Xte, path=tmp_path / "x.json", parity=False, spread_seeds=-1, **MODES["binned"])


def test_the_checksum_covers_both_sides():
    rec = {"data": {"n": 1}, "R": {"spread": {"fval_rel": 1e-15}}, "pyopnb": {"results": {"fval": -0.5}}}
    base = json.loads(recording.dumps(rec))["checksum"]
    for path in (("R", "spread", "fval_rel"), ("pyopnb", "results", "fval")):
        other = json.loads(json.dumps(rec))
        d = other
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = 1e9
        assert json.loads(recording.dumps(other))["checksum"] != base


def _write_then_fail(monkeypatch):
    """Path.write_text writing half of its text, then failing (a full disk, a kill)."""
    original = Path.write_text

    def half(self, text, *args, **kwargs):
        original(self, text[:len(text) // 2], *args, **kwargs)
        raise OSError("no space left on device")
    monkeypatch.setattr(Path, "write_text", half)


@pytest.mark.parametrize("update", [False, True])
def test_an_interrupted_recording_leaves_no_partial_file(recorded, tmp_path, monkeypatch, update):
    rec = json.loads(recorded["wine", "binned"].read_text())
    path = tmp_path / "rec.json"
    if update:
        recording.write_new(path, rec)
        before = path.read_bytes()
    _write_then_fail(monkeypatch)
    with pytest.raises(OSError, match="no space left"):
        (recording.replace if update else recording.write_new)(path, rec)
    # the old recording whole, or none; and no file beside it
    assert [p.name for p in tmp_path.iterdir()] == (["rec.json"] if update else [])
    if update:
        assert path.read_bytes() == before


def test_a_recording_made_meanwhile_is_kept(recorded, tmp_path, monkeypatch):
    rec = json.loads(recorded["wine", "binned"].read_text())
    path = tmp_path / "rec.json"
    original = Path.write_text

    def another_writer_first(self, text, *args, **kwargs):
        original(path, "another writer's\n")
        return original(self, text, *args, **kwargs)
    monkeypatch.setattr(Path, "write_text", another_writer_first)
    with pytest.raises(FileExistsError, match=r"record again on purpose \(update=True"):
        recording.write_new(path, rec)
    monkeypatch.undo()
    assert path.read_text() == "another writer's\n"
    assert [p.name for p in tmp_path.iterdir()] == ["rec.json"]
