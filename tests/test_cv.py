"""Cross-validation (pyopnb.cv): R's OPNB_CV_lam and the journal's
opnb_journal_cv, folds, processes and their warnings."""
import warnings

import numpy as np
import pytest
from helpers import convergence_warnings

from pyopnb import OPNB_CV_lam, opnb_journal, predict
from pyopnb.cv import opnb_journal_cv
from pyopnb.formulation import journal_bandwidths, r_standardise


def test_cv_with_an_integer_number_of_folds(pima):
    a = OPNB_CV_lam(pima.X_train, pima.y_train, 4, nlam=2, ndim=2, nbin=None)
    b = OPNB_CV_lam(pima.X_train, pima.y_train, 4, nlam=2, ndim=2, nbin=None)
    np.testing.assert_array_equal(a["cv_stats"], b["cv_stats"])
    from sklearn.model_selection import StratifiedKFold

    folds = [t for _, t in StratifiedKFold(4, shuffle=True, random_state=0).split(pima.X_train, pima.y_train)]
    c = OPNB_CV_lam(pima.X_train, pima.y_train, folds, nlam=2, ndim=2, nbin=None)
    np.testing.assert_array_equal(a["cv_stats"], c["cv_stats"])
    # stratified: each fold holds its share of the smaller class (68 of 200)
    assert all(abs(np.sum(pima.y_train[f] == "Yes") - 68 / 4) <= 1 for f in folds)
    with pytest.raises(ValueError, match="integer >= 2"):
        OPNB_CV_lam(pima.X_train, pima.y_train, 1)
    with pytest.raises(ValueError, match="smallest class has 68"):
        OPNB_CV_lam(pima.X_train, pima.y_train, 100)


def test_cv_parallel_equals_serial(pima):
    rng = np.random.default_rng(1)
    folds = np.array_split(rng.permutation(200), 4)
    a = OPNB_CV_lam(pima.X_train, pima.y_train, folds, nlam=2, ndim=2, nbin=None)
    b = OPNB_CV_lam(pima.X_train, pima.y_train, folds, nlam=2, ndim=2, nbin=None, n_jobs=2)
    np.testing.assert_allclose(a["cv_stats"], b["cv_stats"])
    assert a["model"].lam == b["model"].lam
    np.testing.assert_allclose(a["cv_stats"][:, 0], [1e-4, 2e-4])
    assert np.all((a["cv_stats"][:, 1] > 0.6) & (a["cv_stats"][:, 1] <= 1))
    with pytest.raises(ValueError, match="0-based"):
        OPNB_CV_lam(pima.X_train, pima.y_train, [np.arange(1, 101), np.arange(101, 201)])
    with pytest.raises(ValueError, match="repeats rows"):
        OPNB_CV_lam(pima.X_train, pima.y_train, [np.arange(0, 100), np.arange(50, 150)])


def test_cross_validation_warns_once_counting_its_fits(pima):
    cv, said = convergence_warnings(lambda: OPNB_CV_lam(pima.X_train, pima.y_train, 3, nlam=2, ndim=2, nbin=None,
                                                         maxit=2))
    inner = [s for s in said if s.startswith("OPNB_CV_lam:")]
    assert len(inner) == 1 and "6 of 6 fits did not end as they should" in inner[0]
    assert "maxit = 2" in inner[0]
    # the refit on every row is a fit of its own
    assert [s for s in said if s.startswith("OPNB:")] and cv["model"].convergence == 1
    _, said = convergence_warnings(lambda: opnb_journal_cv(pima.X_train, pima.y_train, 3, gamma=[1.0], ndim=[1, 2],
                                                            maxit=1))
    assert sum(s.startswith("opnb_journal_cv: 3 of 3 fits") for s in said) == 1


def test_cv_over_gamma_and_ndim_by_the_greedy_path(pima):
    from pyopnb import opnb_journal_cv

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        a = opnb_journal_cv(pima.X_train, pima.y_train, 3, gamma=[0.5, 1.0], ndim=[1, 3], nbin=None)
        b = opnb_journal_cv(pima.X_train, pima.y_train, 3, gamma=[0.5, 1.0], ndim=[1, 3], nbin=None, path=False)
    assert a["cv_stats"].shape == (4, 3)
    np.testing.assert_array_equal(a["cv_stats"][:, :2], [[0.5, 1], [0.5, 3], [1.0, 1], [1.0, 3]])
    # at the largest ndim the path's fit is the refit's: same accuracy
    np.testing.assert_array_equal(a["cv_stats"][1::2], b["cv_stats"][1::2])
    # an accuracy by hand: gamma 1, ndim 1 through the path, fold 0 held out
    from sklearn.model_selection import StratifiedKFold

    from pyopnb.labels import factor

    codes = factor(pima.y_train)[1]
    folds = [t for _, t in StratifiedKFold(3, shuffle=True, random_state=0).split(pima.X_train, codes)]
    hits = 0
    for j, te in enumerate(folds):
        tr = np.concatenate([f for i, f in enumerate(folds) if i != j])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            m = opnb_journal(pima.X_train[tr], pima.y_train[tr], ndim=3, gamma=1.0, nbin=None)
        hits += int(np.sum(predict(m, pima.X_train[te], ndim=1, log=True)["class"] == pima.y_train[te]))
    assert a["cv_stats"][2, 2] == hits / 200
    best = int(np.argmax(a["cv_stats"][:, 2]))
    assert (a["gamma"], a["ndim"]) == tuple(a["cv_stats"][best, :2])
    assert a["model"].ndim == a["ndim"] and a["model"].h[0, 0] == pytest.approx(
        journal_bandwidths(r_standardise(pima.X_train)[2], codes, 2, a["gamma"])[0], rel=1e-12)
    with pytest.raises(ValueError, match="gamma must be a positive number"):
        opnb_journal_cv(pima.X_train, pima.y_train, 3, gamma=["x"])


def test_cv_threads_reach_every_fit(pima, monkeypatch):
    """threads= goes to each fold's fit and to the refit, and the bits do
    not depend on it; a bad count is an error before any fit."""
    import pyopnb.cv as cv

    seen = []

    def spy(real):
        def fit(*args, **kwargs):
            seen.append(kwargs.get("threads"))
            return real(*args, **kwargs)
        return fit

    monkeypatch.setattr(cv, "OPNB", spy(cv.OPNB))
    monkeypatch.setattr(cv, "opnb_journal", spy(cv.opnb_journal))
    runs = {}
    for threads in (1, 2, None):
        seen.clear()
        runs[threads] = OPNB_CV_lam(pima.X_train, pima.y_train, 3, nlam=2, ndim=2, nbin=None, threads=threads)
        assert seen == [threads] * 7  # 2 lam x 3 folds, and the refit
    np.testing.assert_array_equal(runs[1]["cv_stats"], runs[2]["cv_stats"])
    np.testing.assert_array_equal(runs[1]["model"].V, runs[2]["model"].V)
    seen.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        opnb_journal_cv(pima.X_train, pima.y_train, 3, gamma=[1.0], ndim=[1, 2], nbin=None, threads=2)
    assert seen == [2] * 4  # one path fit a fold, and the refit
    for bad in (0, -2, 1.5):
        with pytest.raises(ValueError, match="threads"):
            OPNB_CV_lam(pima.X_train, pima.y_train, 3, nlam=1, ndim=2, threads=bad)
        with pytest.raises(ValueError, match="threads"):
            opnb_journal_cv(pima.X_train, pima.y_train, 3, gamma=[1.0], ndim=[1], threads=bad)
    assert seen == [2] * 4


def test_Rs_one_based_folds_are_refused_unless_rows_are_left_out_on_purpose(pima):
    """R's folds passed without - 1: over every row they hold n (an error
    before); over some rows they miss row 0, and were read one row off with
    no word. Now refused, with the hint; leave_rows_out=True takes them,
    and rows in no fold then count nowhere: the same CV as on the data
    without those rows."""
    n = pima.X_train.shape[0]
    r_folds = [np.arange(1, 181, 3), np.arange(2, 181, 3), np.arange(3, 181, 3)]  # R's 1-based, rows 1..180
    with pytest.raises(ValueError, match=r"no fold holds row 0: these look like R's 1-based folds.*"
                                         r"\[f - 1 for f in folds\].*leave_rows_out=True.*\(20 of 200 here\)"):
        OPNB_CV_lam(pima.X_train, pima.y_train, r_folds, nlam=1, ndim=2)
    with pytest.raises(ValueError, match=r"outside 0\.\.199: folds are 0-based here, 1-based in R \(from R's "
                                         r"folds, pass \[f - 1 for f in folds\]\)"):
        OPNB_CV_lam(pima.X_train, pima.y_train, [np.arange(1, n + 1, 2), np.arange(2, n + 1, 2)], nlam=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kept = OPNB_CV_lam(pima.X_train, pima.y_train, r_folds, nlam=2, ndim=2, maxit=5, leave_rows_out=True)
        rows = np.concatenate(r_folds)
        order = np.argsort(rows)
        renumbered = np.empty(n, dtype=np.int64)
        renumbered[rows[order]] = np.arange(rows.size)
        alone = OPNB_CV_lam(pima.X_train[np.sort(rows)], pima.y_train[np.sort(rows)],
                            [renumbered[f] for f in r_folds], nlam=2, ndim=2, maxit=5)
    np.testing.assert_array_equal(kept["cv_stats"], alone["cv_stats"])
    np.testing.assert_array_equal(kept["model"].V, alone["model"].V)
