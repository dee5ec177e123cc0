"""Where R OPNB 1.0's fit fails (its gradient sums not finite): said as R's
own runs show it, and R's result there with r_defects=True."""
import warnings

import numpy as np
import pytest

from pyopnb import OPNB, OPNB_CV_lam, RDefectWarning
from pyopnb.r_failures import R_UNDERFLOW, r_farthest, r_gradient_failure
from pyopnb.validation.fixtures import load

# R's boundary is its recursion's, within a few bandwidths of exp's underflow (module docstring)
_BAND = 3.0


@pytest.mark.parametrize("nbin", [None, 1000])
def test_where_Rs_gradient_is_not_finite_is_where_R_found_it(nbin):
    """368 one-column problems of R's: clusters 200-1200 bandwidths apart.
    R's gradient is not finite exactly where a point (a grid point, binned)
    lies past exp's underflow from every point of a class, outside a band
    of a few bandwidths around it; R's value is finite throughout."""
    cases = load("r_failures")["cases"]
    key = "exact_gradient" if nbin is None else "binned_gradient"
    judged = 0
    for c in cases:
        Z = np.asarray(c["x"])[:, None]
        y0 = np.asarray(c["y"])
        h = np.ones(y0.max() + 1)
        far = r_farthest(Z, y0, h, nbin).distance
        assert c["exact_value"] and c["binned_value"]
        if abs(far - R_UNDERFLOW) <= _BAND:
            continue
        judged += 1
        assert (r_gradient_failure(Z, y0, h, nbin) is None) == c[key], (far, c)
    assert judged >= 360 and 0 < sum(not c[key] for c in cases) < len(cases)


def _votes():
    v = load("r_failures")["house_votes"]
    return np.asarray(v["X"], dtype=float), np.asarray(v["y"], dtype=object), [np.asarray(f) for f in v["folds"]], v


def test_a_fit_R_keeps_at_its_start_is_Rs_with_r_defects():
    """HouseVotes84, R's fold 8 at lam 4e-4: a line search reaches a V where
    R's gradient is not finite, and R keeps its start (fval -0.27315). By
    default pyopnb goes on, to a better fval, and says where R stopped;
    r_defects=True gives R's model."""
    X, y, folds, v = _votes()
    train = np.concatenate([f for i, f in enumerate(folds) if i != 7])
    with pytest.warns(RDefectWarning, match=r"R's OPNB 1.0 would not end here\. At evaluation \d+ of L-BFGS-B a "
                                            r"grid point lay \d+ bandwidths from every point of class"):
        ours = OPNB(X[train], y[train], lam=4e-4)
    assert ours.fval > v["fold8_lam4e-4_fval"] + 0.1
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        kept = OPNB(X[train], y[train], lam=4e-4, r_defects=True)
    assert any("keeps the start projection, as R's OPNB does" in str(w.message) for w in rec)
    assert not any(issubclass(w.category, RDefectWarning) for w in rec)
    assert abs(kept.fval - v["fold8_lam4e-4_fval"]) <= 1e-12 * abs(v["fold8_lam4e-4_fval"])
    np.testing.assert_allclose(kept.V, np.asarray(v["fold8_lam4e-4_V"]), rtol=0, atol=1e-10)


def test_cross_validation_with_r_defects_is_Rs():
    X, y, folds, v = _votes()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        cv = OPNB_CV_lam(X, y, folds, nlam=4, r_defects=True)
    np.testing.assert_array_equal(cv["cv_stats"], np.asarray(v["cv_stats"]))
    assert any("1 of 40 fits did not end as they should" in str(w.message) and "keeps the start" in str(w.message)
               for w in rec)
    assert v["warnings"] and "returning initial solution" in v["warnings"][0]


def test_r_defects_belongs_to_Rs_formulation():
    X, y, _, _ = _votes()
    with pytest.raises(ValueError, match="r_defects=True reproduces R's own fit"):
        OPNB(X, y, correct=True, r_defects=True)
    with pytest.raises(ValueError, match="r_defects must be True or False"):
        OPNB(X, y, r_defects="yes")


def test_the_estimator_and_the_command_line_take_r_defects(tmp_path):
    import subprocess
    import sys

    import pandas as pd

    from pyopnb import OPNBClassifier, read_model

    X, y, folds, v = _votes()
    train = np.concatenate([f for i, f in enumerate(folds) if i != 7])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = OPNBClassifier(lam=4e-4, r_defects=True).fit(X[train], y[train])
    assert abs(clf.model_.fval - v["fold8_lam4e-4_fval"]) <= 1e-12 * abs(v["fold8_lam4e-4_fval"])
    with pytest.raises(ValueError, match="r_defects"):
        OPNBClassifier(formulation="journal", r_defects=True).fit(X[train], y[train])
    pd.DataFrame(X[train], columns=[f"v{j}" for j in range(X.shape[1])]).assign(party=y[train]).to_csv(
        tmp_path / "train.csv", index=False)
    for extra, said in (([], "R's OPNB 1.0 would not end here"), (["--r-defects"], "keeps the start projection")):
        r = subprocess.run([sys.executable, "-m", "pyopnb.cli", "fit", "train.csv", "--target", "party", "--lam",
                            "4e-4", *extra, "--out", "m.json"], cwd=tmp_path, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr
        assert "pyopnb: warning: " in r.stderr and said in r.stderr
        # the command's own flags in its advice, never Python's arguments
        assert "nbin=None" not in r.stderr and "r_defects=True" not in r.stderr and "--lam" in r.stderr
        if extra:
            assert "exact sums (--exact)" in r.stderr
        fval = read_model(tmp_path / "m.json").fval
        (tmp_path / "m.json").unlink()
        if extra:
            assert abs(fval - v["fold8_lam4e-4_fval"]) <= 1e-12 * abs(v["fold8_lam4e-4_fval"])
        else:
            assert fval > v["fold8_lam4e-4_fval"] + 0.1
