"""The papers' experiment (pyopnb.study): preprocessing, the report's
statistics, and quick runs on PMLB data sets read in place (resumable,
joblib and a local Dask cluster alike)."""
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pyopnb.study import PAPER_TABLE1, preprocess, run_study, write_report
from pyopnb.study.protocol import protocol
from pyopnb.study.report import PAPER_METHODS, mean_errors, pairwise, standardised, win_tie_loss

# the project's data folder beside the checkout (CI has it there too), or PYOPNB_PMLB_DIR
PMLB = Path(os.environ.get("PYOPNB_PMLB_DIR", Path(__file__).resolve().parents[2] / "shared" / "pmlb"))
needs_pmlb = pytest.mark.skipif(not (PMLB / "iris" / "iris.tsv.gz").is_file(),
                                reason=f"the PMLB data sets are not at {PMLB} (set PYOPNB_PMLB_DIR)")
SMALL = ["parity5", "analcatdata_fraud", "analcatdata_aids", "analcatdata_bankruptcy", "analcatdata_japansolvent",
         "labor", "analcatdata_happiness", "confidence", "analcatdata_asbestos", "lupus"]


def test_preprocessing_follows_the_paper():
    rng = np.random.default_rng(0)
    n = 5000
    y = np.r_[np.zeros(3000), np.ones(1990), np.full(10, 2), ][:n]
    y[-4:] = 3  # a class of 4 rows: removed
    X = np.column_stack([rng.normal(size=n), np.full(n, 7.0), rng.integers(0, 3, n), rng.normal(size=n) * 50])
    Xp, yp, info = preprocess(X, y, seed=1)
    assert info["rows_in"] == 5000 and Xp.shape[0] <= 3000 and 3 not in set(yp)
    # the stratified subsample keeps the class shares (3000 / 5000 of each, class 3 dropped after)
    counts = {c: int(np.sum(yp == c)) for c in (0, 1, 2)}
    assert abs(counts[0] - 1800) <= 2 and abs(counts[1] - 1194) <= 2
    # the classes of 10 and 4 rows keep about 6 and 2 in the sample: fewer than 10, removed (step 2 after 1)
    assert counts[2] == 0 and info["classes_dropped"] == ["2.0", "3.0"]
    assert info["constant_dropped"] == 1 and info["one_hot_encoded"] == 1
    assert Xp.shape[1] == 1 + 2 + 1  # continuous, 3 levels -> 2 binary, continuous
    assert info["binary"] == [1, 2]  # the one-hot columns, for NB's and KDDA's alpha
    # the jitter: 1% of each covariate's sd
    wide = X[:, 3]
    assert np.std(Xp[:, 3]) == pytest.approx(np.std(wide) * np.sqrt(1 + 1e-4), rel=0.05)
    binary = Xp[:, 1]
    assert 0.003 < np.std(binary - np.round(binary)) < 0.007  # 1% of a 0/1 column's sd (~0.47)
    # more than 300 covariates: 300 principal components
    Xw = rng.normal(size=(400, 320))
    Xq, _, info = preprocess(Xw, np.arange(400) % 2, seed=2)
    assert Xq.shape == (400, 300) and info["principal_components"] == 300 and info["binary"] == []
    # the same seed gives the same data
    np.testing.assert_array_equal(preprocess(X, y, seed=1)[0], Xp)


def test_win_tie_loss_and_standardised_errors():
    E = np.array([[0.1, 0.2, 0.1], [0.3, 0.2, 0.25], [0.0, 0.5, 0.5]])
    W = win_tie_loss(E)
    np.testing.assert_array_equal(W[0, 1], [2, 0, 1])  # method 0 against 1: wins on sets 0 and 2, loses on 1
    np.testing.assert_array_equal(W[1, 2], [1, 1, 1])  # loses set 0, wins set 1, ties set 2
    np.testing.assert_array_equal(W[0, 2], W[2, 0][::-1])
    mn, st = standardised(E)
    np.testing.assert_allclose(mn[0], [0.0, 0.1 / 0.9, 0.0])
    np.testing.assert_allclose(st[1], (E[1] - E[1].mean()) / E[1].std(ddof=1))
    assert PAPER_TABLE1[("OPNB", "SVM")] == (61, 10, 91) and PAPER_TABLE1[("KDDA", "CCICA")] == (57, 1, 104)
    # standardised over some methods (the paper's), the others placed beside them
    mn, st = standardised(E, over=[0, 1])
    np.testing.assert_allclose(st[1], (E[1] - E[1, :2].mean()) / E[1, :2].std(ddof=1))
    assert len(PAPER_METHODS) == 8 and "OPNB-journal" in PAPER_METHODS and "OPNB" not in PAPER_METHODS


def test_a_failure_leaves_only_its_own_cells():
    """A method without a result on a set: its pairs count the other sets,
    every other pair all of them (the report used to drop the set from every pair)."""
    E = np.array([[0.1, 0.2, 0.3], [0.3, np.nan, 0.25], [0.0, 0.5, 0.5]])
    W, N = win_tie_loss(E), pairwise(E)
    np.testing.assert_array_equal(N, [[3, 2, 3], [2, 2, 2], [3, 2, 3]])
    np.testing.assert_array_equal(W[0, 2], [2, 0, 1])  # all three sets
    np.testing.assert_array_equal(W[0, 1], [2, 0, 0])  # sets 0 and 2
    assert np.all(W.sum(axis=2)[~np.eye(3, dtype=bool)] == N[~np.eye(3, dtype=bool)])


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    if not (PMLB / "iris" / "iris.tsv.gz").is_file():
        pytest.skip(f"the PMLB data sets are not at {PMLB} (set PYOPNB_PMLB_DIR)")
    out = tmp_path_factory.mktemp("study")
    t0 = time.perf_counter()
    store = run_study(PMLB, out, datasets=SMALL, n_splits=3, quick=True, n_jobs=2, progress=False,
                      command="python -m pyopnb.study (the test's quick run)")
    seconds = time.perf_counter() - t0
    store.close()
    return out, store.computed, seconds


@needs_pmlb
def test_quick_study_on_ten_small_sets(quick_run):
    out, computed, seconds = quick_run
    assert computed == 10 * 3 * 10  # sets x splits x methods
    con = sqlite3.connect(out / "results.sqlite")
    n, finite = con.execute("SELECT COUNT(*), COUNT(error) FROM results").fetchone()
    con.close()
    assert n == 300 and finite == 300  # every method has an error on every split
    con = sqlite3.connect(out / "results.sqlite")
    coded = dict(con.execute("SELECT method, COUNT(*) FROM results WHERE stops NOT LIKE '%\"final\": null%' "
                             "GROUP BY method").fetchall())
    con.close()
    assert coded == {"OPNB": 30, "OPNB-journal": 30, "OPGD": 30}  # the methods with an optimiser's code
    report = write_report(out)
    sets, methods, E, config = mean_errors(out / "results.sqlite")
    assert config == {"splits": 3, "quick": True, "seed": 0, "protocol": protocol(True)} and protocol(True) == 4
    assert len(methods) == 10 and E.shape == (10, 10) and len(sets) == 10
    finite = np.isfinite(E)
    assert finite.all() and np.all((E >= 0) & (E <= 1))
    text = report.read_text()
    assert "## Wins-ties-losses" in text and "OPNB-journal vs SVM | 61-10-91" in text
    assert "Made in 1 run" in text and "(the test's quick run)" in text
    assert "## How the fits stopped" in text and "| OPGD | 30 |" in text
    table = (out / "table1.csv").read_text().splitlines()
    assert len(table) == 11 and all(len(r.split(",")) == 11 for r in table)
    # each pair's wins, ties and losses add up to the data sets where both have results
    W, N = win_tie_loss(E), pairwise(E)
    assert np.all(W.sum(axis=2)[~np.eye(10, dtype=bool)] == N[~np.eye(10, dtype=bool)])
    assert (out / "figure2.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "errors.csv").read_text().count("\n") == len(sets) + 1


@needs_pmlb
def test_a_rerun_computes_nothing_new(quick_run):
    out, _, _ = quick_run
    store = run_study(PMLB, out, datasets=SMALL, n_splits=3, quick=True, n_jobs=2, progress=False)
    assert store.computed == 0
    with pytest.raises(ValueError, match="holds results of another protocol"):
        run_study(PMLB, out, datasets=SMALL, n_splits=2, quick=True, progress=False)


@needs_pmlb
def test_an_interrupted_run_resumes(tmp_path):
    sets = ["analcatdata_aids", "lupus"]
    first = run_study(PMLB, tmp_path, datasets=sets[:1], methods=["LDA", "NB"], n_splits=2, quick=True,
                      progress=False)
    assert first.computed == 4
    second = run_study(PMLB, tmp_path, datasets=sets, methods=["LDA", "NB"], n_splits=2, quick=True,
                       progress=False)
    assert second.computed == 4  # only the second set's


@needs_pmlb
def test_dask_cluster_gives_the_same_results(tmp_path):
    pytest.importorskip("dask.distributed", reason="dask.distributed is not installed (pip install 'dask[distributed]')")
    kw = dict(datasets=["analcatdata_aids", "lupus"], methods=["OPNB", "RDA"], n_splits=2, quick=True,
              progress=False)
    run_study(PMLB, tmp_path / "loky", n_jobs=2, **kw).close()
    run_study(PMLB, tmp_path / "dask", n_jobs=2, backend="dask", scheduler="local", **kw).close()

    def rows(folder):
        con = sqlite3.connect(folder / "results.sqlite")
        try:
            return sorted(con.execute("SELECT dataset, split, method, error, params FROM results").fetchall())
        finally:
            con.close()

    a, b = rows(tmp_path / "loky"), rows(tmp_path / "dask")
    assert len(a) == 8 and a == b


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="no such folder"):
        run_study(tmp_path / "nope", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_command_line_refuses_bad_numbers_before_any_work(tmp_path, capsys):
    from pyopnb.study.__main__ import main

    out = tmp_path / "out"
    assert main(["--data", str(tmp_path / "nope"), "--out", str(out)]) == 2
    assert "--data" in capsys.readouterr().err and not out.exists()
    (tmp_path / "data").mkdir()
    for args, said in ((["--splits", "0"], "splits must be a positive integer, got 0"),
                       (["--jobs", "0"], "jobs must be a positive integer or -1")):
        assert main(["--data", str(tmp_path / "data"), "--out", str(out)] + args) == 2
        err = capsys.readouterr().err
        assert said in err and err.count("\n") == 1
    assert not out.exists()


def test_progress_in_a_log_has_no_carriage_returns():
    import io

    from pyopnb.study.run import _Bar

    log = io.StringIO()
    bar = _Bar(50, True, stream=log)
    for k in range(50):
        bar.step(f"task {k}")
    text = log.getvalue()
    assert "\r" not in text and len(text.splitlines()) == 10 and text.splitlines()[-1].startswith("study: 50/50")


@needs_pmlb
def test_an_interrupted_study_says_what_it_saved(tmp_path, monkeypatch, capsys):
    from pyopnb.study import run as run_module
    from pyopnb.study.__main__ import main

    calls = {"n": 0}
    real = run_module.evaluate

    def evaluate(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(run_module, "evaluate", evaluate)
    argv = ["--data", str(PMLB), "--out", str(tmp_path), "--sets", "lupus", "--methods", "LDA,NB", "--splits", "2",
            "--quick", "--no-progress"]
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert "interrupted; 2 of 4 results of this run are saved" in err and "run the same command again" in err
    assert "Traceback" not in err
    monkeypatch.setattr(run_module, "evaluate", real)
    assert main(argv) == 0
    text = (tmp_path / "report.md").read_text()
    assert "Made in 2 runs" in text


_KILLED_ON_THIRD = """
import os, sys
from pyopnb.study import run as r
real, calls = r.evaluate, [0]
def evaluate(*args, **kwargs):
    calls[0] += 1
    if calls[0] == 3:
        os._exit(9)  # as SIGKILL or a machine's restart: no handler, no finally
    return real(*args, **kwargs)
r.evaluate = evaluate
r.run_study(sys.argv[1], sys.argv[2], datasets=["lupus"], methods=["LDA", "NB"], n_splits=2, quick=True,
            progress=False, command="killed")
"""


@needs_pmlb
def test_a_run_killed_outright_keeps_its_record(tmp_path):
    """The report counts every run's wall time: a run's record is written
    with each of its results, so one killed outright still has it."""
    proc = subprocess.run([sys.executable, "-c", _KILLED_ON_THIRD, str(PMLB), str(tmp_path)])
    assert proc.returncode == 9

    def runs():
        con = sqlite3.connect(tmp_path / "results.sqlite")
        (value,) = con.execute("SELECT value FROM meta WHERE key = 'runs'").fetchone()
        con.close()
        return json.loads(value)

    killed = runs()
    assert [(r["command"], r["computed"]) for r in killed] == [("killed", 2)] and killed[0]["seconds"] > 0
    store = run_study(PMLB, tmp_path, datasets=["lupus"], methods=["LDA", "NB"], n_splits=2, quick=True,
                      progress=False, command="resumed")
    assert store.computed == 2
    store.close()
    assert [(r["command"], r["computed"]) for r in runs()] == [("killed", 2), ("resumed", 2)]
    text = write_report(tmp_path).read_text()
    assert "Made in 2 runs" in text and "the last run was `resumed`" in text and "left no record" not in text
    # a store written by an older version, whose killed run left no record
    con = sqlite3.connect(tmp_path / "results.sqlite")
    with con:
        con.execute("UPDATE meta SET value = ? WHERE key = 'runs'", (json.dumps(runs()[1:]),))
    con.close()
    text = write_report(tmp_path).read_text()
    assert "Made in 1 recorded run" in text and "2 of the 4 results come from runs that left no record" in text


@needs_pmlb
def test_a_one_set_study_writes_its_report(tmp_path):
    run_study(PMLB, tmp_path, datasets=["lupus"], methods=["LDA", "NB", "SVM"], n_splits=2, quick=True,
              progress=False).close()
    text = write_report(tmp_path).read_text()
    assert "1 data sets with results" in text and "| LDA |" in text
    (tmp_path / "d" / "x").mkdir(parents=True)
    with pytest.raises(ValueError, match="not found"):
        run_study(tmp_path / "d", tmp_path / "out", datasets=["iris"])


def _ordinal_set(seed: int, n: int = 600, d: int = 6, K: int = 3):
    """Ordinal columns of 5 levels, each class around its own levels."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    levels = np.clip(np.round(rng.integers(0, 5, size=(K, d))[y] + rng.normal(size=(n, d))), 0, 4)
    return levels, y


def test_the_protocol_gives_nb_and_kdda_the_one_hot_columns():
    """NB on ordinal data through the whole protocol (one-hot, noise,
    scaling, tuning): its alpha reaches the binary columns, and its error is
    close to CategoricalNB's on the raw levels; without the mask it is not."""
    from sklearn.naive_bayes import CategoricalNB

    from pyopnb.study.protocol import evaluate, splits

    levels, y = _ordinal_set(3)
    X, yp, info = preprocess(levels, y, seed=3)
    assert len(info["binary"]) == X.shape[1] == 24
    train, test, inner = splits(yp, 1, 3, 0)[0]
    cat = 1 - CategoricalNB().fit(levels[train], y[train]).score(levels[test], y[test])
    nb = evaluate("NB", X, yp, train, test, inner, True, info["binary"])
    assert '"alpha"' in nb["params"] and nb["error"] - cat < 0.05
    blind = evaluate("NB", X, yp, train, test, inner, True, None)
    assert blind["error"] - cat > 0.1
    kdda = evaluate("KDDA", X, yp, train, test, inner, True, info["binary"])
    assert np.isfinite(kdda["error"]) and kdda["error"] < blind["error"]


def test_path_search_is_the_grid_search_where_the_path_is_exact():
    """LDA's first m directions are the fit with m: tuning n_components by
    one fit per fold (the path) picks what separate fits pick."""
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    from pyopnb.comparators import LDA
    from pyopnb.study.protocol import path_search

    rng = np.random.default_rng(4)
    y = rng.integers(0, 5, 300)
    X = rng.normal(size=(300, 6)) + rng.normal(size=(5, 6))[y] * [2, 1, 0.5, 0.3, 0.1, 0]
    inner = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
    grid = {"n_components": [1, 2, 3, 4]}
    gs = GridSearchCV(LDA(), grid, cv=inner).fit(X, y)
    assert path_search(LDA(), grid, "n_components", X, y, inner) == gs.best_params_


def test_every_method_has_an_error_where_pooled_covariances_are_singular():
    """More one-hot columns than training rows (as PMLB's promoters): every
    method of the comparison still gives a finite test error."""
    from pyopnb.study.methods import DEFAULT_METHODS
    from pyopnb.study.protocol import evaluate, splits

    rng = np.random.default_rng(5)
    n = 60
    y = np.repeat([0, 1], n // 2)
    cats = rng.integers(0, 4, size=(n, 30))
    cats[:, :3] = np.where(rng.uniform(size=(n, 3)) < 0.7, y[:, None] * 2, cats[:, :3])
    X, yp, info = preprocess(cats, y, seed=5)
    assert X.shape[1] == 90 > n
    train, test, inner = splits(yp, 1, 3, 0)[0]
    for method in DEFAULT_METHODS:
        row = evaluate(method, X, yp, train, test, inner, True, info["binary"])
        assert np.isfinite(row["error"]), (method, row["note"])


def test_cost_estimates_time_sampled_fits_and_scale_each_stratum():
    from pyopnb.study.cost import method_cost, stratified_sample
    from pyopnb.study.protocol import splits

    names = [f"s{i}" for i in range(10)]
    plan = stratified_sample(names, [5, 3, 9, 1, 7, 2, 8, 4, 6, 0], 3)
    assert [len(p["stratum"]) for p in plan] == [3, 4, 3]
    assert sum((p["stratum"] for p in plan), []) == ["s9", "s3", "s5", "s1", "s7", "s0", "s8", "s4", "s6", "s2"]
    assert [p["set"] for p in plan] == ["s3", "s0", "s6"]  # each stratum's middle set
    levels, y = _ordinal_set(6, n=300)
    X, yp, info = preprocess(levels, y, seed=6)
    train, _, inner = splits(yp, 1, 3, 0)[0]
    c = method_cost("NB", X, yp, train, inner, info["binary"], quick=True, sample=2)
    assert c["timed"] == 2 and c["failed"] == 0 and c["fits"] == 9 * 3 + 1
    assert c["seconds_per_fit"] > 0 and c["split_seconds"] == pytest.approx(c["seconds_per_fit"] * c["fits"])


def test_every_split_and_tuning_fold_is_stratified():
    """The test parts and each training part's tuning folds keep the class
    shares (the papers' stratified sampling at every stage), and the folds
    partition the training rows they index."""
    from pyopnb.study.protocol import splits

    rng = np.random.default_rng(7)
    y = np.repeat(np.arange(4), [13, 300, 250, 10])[rng.permutation(573)]
    for train, test, inner in splits(y, 3, 3, 5):
        assert np.all(np.diff(train) > 0) and np.intersect1d(train, test).size == 0
        tr_counts = np.bincount(y[train], minlength=4)
        np.testing.assert_allclose(np.bincount(y[test], minlength=4), np.bincount(y, minlength=4) * 0.25, atol=1)
        held = np.concatenate([val for _, val in inner])
        assert np.array_equal(np.sort(held), np.arange(train.size))
        for fit_rows, val_rows in inner:
            np.testing.assert_allclose(np.bincount(y[train][val_rows], minlength=4), tr_counts / 3, atol=1)


def test_study_speed_compares_the_results_both_runs_hold(tmp_path):
    """benchmarks.study_speed: per-method sums of each result's seconds over
    the (set, split, method) results both folders hold, their ratio, and
    each run's recorded wall time; an existing output file is refused."""
    from benchmarks import study_speed
    from pyopnb.study.store import Store

    def run(folder, rows):
        store = Store(folder, {"splits": 3})
        store.begin_run("test")
        for (d, s, m), sec in rows.items():
            store.add(d, s, m, {"error": 0.1, "params": "{}", "seconds": sec, "note": ""})
        store.close()

    run(tmp_path / "a", {("iris", 0, "OPNB"): 4.0, ("iris", 1, "OPNB"): 2.0, ("iris", 0, "LDA"): 1.0,
                         ("wine", 0, "OPNB"): 9.0})
    run(tmp_path / "b", {("iris", 0, "OPNB"): 1.0, ("iris", 1, "OPNB"): 1.0, ("iris", 0, "LDA"): 2.0})
    (ta, wa), (tb, wb) = study_speed.task_times(tmp_path / "a"), study_speed.task_times(tmp_path / "b")
    assert ta[("wine", 0, "OPNB")] == 9.0 and wa > 0 and wb > 0
    text = study_speed.compare(ta, tb, ("old", "new"), (10.0, 4.0))
    assert "| OPNB | 2 | 6.0 | 2.0 | 3.0x |" in text
    assert "| LDA | 1 | 1.0 | 2.0 | 0.5x |" in text
    assert "| all methods | 3 | 7.0 | 4.0 | 1.8x |" in text and "on 1 sets, 3 results" in text
    assert "old 10 s, new 4 s (2.5x)" in text
    out = tmp_path / "speed.md"
    study_speed.main([str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(out)])
    assert "| OPNB | 2 |" in out.read_text()
    with pytest.raises(FileExistsError):
        study_speed.main([str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(out)])
    with pytest.raises(FileNotFoundError, match="no study results"):
        study_speed.task_times(tmp_path / "c")


def test_the_report_sets_another_profile_beside_it(tmp_path, capsys):
    """--beside: each method's mean error, mean studentised error and rank,
    and the paper's pairs, in both studies, over only the sets where both
    have every shared method's result on every split."""
    from pyopnb.study.__main__ import main
    from pyopnb.study.store import Store

    def study(folder, config, errors):
        store = Store(folder, config)
        store.begin_run("test")
        for (d, m), errs in errors.items():
            for s, e in enumerate(errs):
                store.add(d, s, m, {"error": e, "params": "{}", "seconds": 1.0, "note": ""})
        store.close()

    full = {"protocol": 3, "quick": False, "seed": 0, "splits": 2}
    quick = {"protocol": 4, "quick": True, "seed": 0, "splits": 2}
    # set c is the full study's alone; the quick study lacks a split of NB on set b, and has a method more
    study(tmp_path / "full", full, {("a", "OPNB-journal"): [0.1, 0.1], ("a", "SVM"): [0.2, 0.2], ("a", "NB"): [0.3, 0.3],
                                    ("b", "OPNB-journal"): [0.3, 0.3], ("b", "SVM"): [0.2, 0.2], ("b", "NB"): [0.4, 0.4],
                                    ("c", "OPNB-journal"): [0.9, 0.9], ("c", "SVM"): [0.1, 0.1], ("c", "NB"): [0.1, 0.1]})
    study(tmp_path / "quick", quick, {("a", "OPNB-journal"): [0.3, 0.3], ("a", "SVM"): [0.2, 0.2],
                                      ("a", "NB"): [0.1, 0.1], ("a", "LDA"): [0.5, 0.5],
                                      ("b", "OPNB-journal"): [0.3, 0.3], ("b", "SVM"): [0.2, 0.2], ("b", "NB"): [0.4],
                                      ("b", "LDA"): [0.5, 0.5]})
    text = write_report(tmp_path / "full", beside=tmp_path / "quick").read_text()
    section = text.split("## Side by side with ")[1].split("\n## ")[0]
    assert f"{tmp_path / 'quick'} (quick profile, version 4, 2 splits)" in section
    assert "1 data sets;" in section and "(full profile, version 3, 2 splits)" in section
    # on set a alone: OPNB-journal best here (studentised -1), NB best there
    assert "| OPNB-journal | 0.1000 | 0.3000 | -1.000 | 1.000 | 1 | 3 |" in section
    assert "| NB | 0.3000 | 0.1000 | 1.000 | -1.000 | 3 | 1 |" in section
    assert "| OPNB-journal vs SVM | 0.38 | 1-0-0 | 1.00 | 0-0-1 | 0.00 |" in section
    assert "LDA" not in section  # a method of one study only
    # the report's own tables still count every set of this study
    assert "3 data sets with results" in text
    assert "## Side by side with " in write_report(tmp_path / "quick", beside=tmp_path / "full").read_text()
    with pytest.raises(ValueError, match="own folder"):
        write_report(tmp_path / "full", beside=tmp_path / "full")
    with pytest.raises(ValueError, match="no results.sqlite"):
        write_report(tmp_path / "full", beside=tmp_path)
    assert "## Side by side with " not in write_report(tmp_path / "full").read_text()
    # the command line refuses a folder without results before any work
    out = tmp_path / "out"
    (tmp_path / "data").mkdir()
    assert main(["--data", str(tmp_path / "data"), "--out", str(out), "--beside", str(tmp_path)]) == 2
    assert "--beside" in capsys.readouterr().err and not out.exists()
    # a run given its own folder is refused before it computes anything
    before = (tmp_path / "full" / "results.sqlite").read_bytes()
    assert main(["--data", str(tmp_path / "data"), "--out", str(tmp_path / "full"),
                 "--beside", str(tmp_path / "full")]) == 2
    assert "own folder" in capsys.readouterr().err
    assert (tmp_path / "full" / "results.sqlite").read_bytes() == before
    assert main(["--data", "x", "--out", str(tmp_path / "full"), "--report-only",
                 "--beside", str(tmp_path / "quick")]) == 0
    assert "## Side by side with " in (tmp_path / "full" / "report.md").read_text()


def test_each_result_counts_how_its_fits_stopped(tmp_path):
    """The optimiser's code of every fit a result makes (the tuning's, by
    grid or path, and the final fit's) is counted and stored, and the
    report shows each method's iteration limits and failed line searches."""
    from sklearn.model_selection import StratifiedKFold

    from pyopnb import OPNBClassifier
    from pyopnb.exceptions import ConvergenceWarning
    from pyopnb.study.protocol import Stops, evaluate, path_search, splits
    from pyopnb.study.report import stops
    from pyopnb.study.store import Store

    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, 240)
    X = rng.normal(size=(240, 5)) + rng.normal(size=(3, 5))[y]
    train, test, inner = splits(y, 1, 3, 0)[0]
    # by grid: OPNB's quick grid (two lam) on three folds, then the final fit
    grid_row = evaluate("OPNB", X, y, train, test, inner, True)
    rec = json.loads(grid_row["stops"])
    assert sum(rec["counts"].values()) == 2 * 3 + 1 and rec["final"] in (0, 1, 51, 52)
    # the journal's quick grid refitted (three gammas at ndim 1, 2, 3, 5), or by its path: one fit at ndim 5
    path_row = evaluate("OPNB-journal", X, y, train, test, inner, True)
    assert sum(json.loads(path_row["stops"])["counts"].values()) == 3 * 4 * 3 + 1
    by_path = evaluate("OPNB-journal", X, y, train, test, inner, True, paths=True)
    assert sum(json.loads(by_path["stops"])["counts"].values()) == 3 * 4 * 3 + 1  # the profile refits it anyway
    # a method without an optimiser code counts nothing
    assert json.loads(evaluate("LDA", X, y, train, test, inner, True)["stops"]) == {"counts": {}, "final": None}
    # an iteration limit is counted as code 1, through path_search as through a grid
    st = Stops()
    folds = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
    with pytest.warns(ConvergenceWarning, match="iteration limit"):
        path_search(OPNBClassifier(formulation="journal", maxit=2), {"ndim": [1, 3]}, "ndim", X, y, folds, st)
    assert st.counts == {1: 3}
    # stored, and a store made before the codes were kept gets the column, its old rows without codes
    old = tmp_path / "old"
    old.mkdir()
    con = sqlite3.connect(old / "results.sqlite")
    con.executescript("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                      "CREATE TABLE results (dataset TEXT NOT NULL, split INTEGER NOT NULL, method TEXT NOT NULL, "
                      "error REAL, params TEXT NOT NULL, seconds REAL NOT NULL, note TEXT NOT NULL, "
                      "PRIMARY KEY (dataset, split, method));")
    config = {"splits": 1, "quick": True, "seed": 0, "protocol": protocol(True)}
    con.execute("INSERT INTO meta VALUES ('config', ?)", (json.dumps(config, sort_keys=True),))
    con.execute("INSERT INTO results VALUES ('a', 0, 'OPNB', 0.1, '{}', 1.0, '')")
    con.commit()
    con.close()
    assert stops(old / "results.sqlite") == {}  # read as it is: no column, nothing recorded
    with pytest.raises(ValueError, match="another protocol"):
        Store(old, {**config, "splits": 2})
    con = sqlite3.connect(old / "results.sqlite")
    assert "stops" not in {r[1] for r in con.execute("PRAGMA table_info(results)")}  # a refused run changes nothing
    con.close()
    store = Store(old, config)
    store.add("b", 0, "OPNB", {**grid_row, "stops": json.dumps({"counts": {"0": 5, "1": 2}, "final": 1})})
    store.add("b", 0, "OPNB-journal", path_row)
    store.add("b", 0, "LDA", evaluate("LDA", X, y, train, test, inner, True))
    store.close()
    got = stops(old / "results.sqlite")
    assert set(got) == {"OPNB", "OPNB-journal"}
    assert got["OPNB"] == {"results": 1, "fits": 7, "code 0": 5, "code 1": 2, "final code 1": 1,
                           "final code 52": 0, "unrecorded": 1}
    text = write_report(old).read_text()
    assert "## How the fits stopped" in text
    assert "| OPNB | 1 | 7 | 2 (28.6%) | 0 (0.0%) | 0 | 1 (100.0%) | 0 (0.0%) | 1 |" in text


@needs_pmlb
def test_what_a_path_changes_is_measured_against_refits(tmp_path):
    """Two studies of the same sets, one refitting every path: LDA's path is
    its refits (the same errors, every set a tie, kept), and the page shows
    every method with a path."""
    from pyopnb.study.paths import path_effect, write_path_report

    sets = ["lupus", "analcatdata_fraud", "analcatdata_asbestos"]
    common = dict(datasets=sets, n_splits=2, quick=True, progress=False)
    run_study(PMLB, tmp_path / "path", methods=["LDA", "OPNB-journal", "NB"], **common).close()
    run_study(PMLB, tmp_path / "refit", methods=["LDA", "OPNB-journal"], paths=False, **common).close()
    effects = {e["method"]: e for e in path_effect(tmp_path / "path", tmp_path / "refit")}
    assert set(effects) == {"LDA", "OPNB-journal"}  # NB has no path
    lda = effects["LDA"]
    assert lda["sets"] == 3 and lda["mean difference"] == 0 and lda["path against refits"] == (0, 3, 0)
    assert lda["verdict"] == "path" and lda["mean rank, path"] == lda["mean rank, refits"]
    journal = effects["OPNB-journal"]
    assert journal["verdict"] in ("path", "refit") and 0 <= journal["mean error, refits"] <= 1
    assert sum(journal["W-T-L against the others, refits"]) == 3 * 2  # two other methods on three sets
    page = write_path_report(tmp_path / "path", tmp_path / "refit", tmp_path / "paths.md").read_text()
    assert "| LDA | n_components | 3 |" in page and "| OPNB-journal | ndim | 3 |" in page
    assert json.loads((tmp_path / "paths.json").read_text())[0]["method"] in ("LDA", "OPNB-journal")
    (tmp_path / "paths.md").write_text("mine")
    with pytest.raises(FileExistsError, match="paths.md: exists"):
        write_path_report(tmp_path / "path", tmp_path / "refit", tmp_path / "paths.md")
    assert (tmp_path / "paths.md").read_text() == "mine"
    assert "| LDA |" in write_path_report(tmp_path / "path", tmp_path / "refit", tmp_path / "paths.md",
                                          overwrite=True).read_text()
    # beside a study's report, the measurement goes into it
    write_path_report(tmp_path / "path", tmp_path / "refit", tmp_path / "path" / "paths.md")
    report = write_report(tmp_path / "path").read_text()
    assert "## What one fit's path changes" in report and "| LDA | n_components | 3 |" in report
    assert "## What one fit's path changes" not in write_report(tmp_path / "refit").read_text()
    with pytest.raises(ValueError, match="not a study run with paths=False"):
        path_effect(tmp_path / "refit", tmp_path / "path")
    run_study(PMLB, tmp_path / "other", methods=["LDA"], paths=False, **{**common, "n_splits": 3}).close()
    with pytest.raises(ValueError, match="differ in more than their paths"):
        path_effect(tmp_path / "path", tmp_path / "other")


def test_each_profile_takes_a_path_only_where_the_method_says():
    """LDA's path is its refits: both profiles take it. OPNB-journal's and
    OPGD's moved results by more than the split noise (results/study/paths.md):
    both profiles refit them at each ndim. paths=False refits every path."""
    from pyopnb.study.protocol import tuning_plan

    lda, ndim = {"n_components": [1, 2, 3]}, {"ndim": [1, 2, 3], "gamma": [0.5, 1.0]}
    for quick in (True, False):
        assert tuning_plan("LDA", lda, quick) == ([{"n_components": 3}], "n_components")
        assert tuning_plan("LDA", lda, quick, paths=False)[1] is None
        settings, path = tuning_plan("OPNB-journal", ndim, quick)
        assert path is None and len(settings) == 6
        assert tuning_plan("OPGD", {"ndim": [1, 2, 3]}, quick)[1] is None


def test_cost_refuses_an_existing_out_before_any_work(tmp_path, capsys):
    from pyopnb.study.cost import main

    out = tmp_path / "cost.md"
    out.write_text("kept\n")
    # refused before the data folder is looked at (no such folder here)
    with pytest.raises(SystemExit) as exc:
        main(["--data", str(tmp_path / "none"), "--out", str(out)])
    assert exc.value.code == 2
    assert "cost.md: exists" in capsys.readouterr().err
    assert out.read_text() == "kept\n"
    # asked to replace it, the run goes on to the data
    with pytest.raises(ValueError, match="no such folder"):
        main(["--data", str(tmp_path / "none"), "--out", str(out), "--overwrite"])
    assert out.read_text() == "kept\n"
