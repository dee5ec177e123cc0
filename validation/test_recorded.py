"""pyopnb against recorded outputs of the real R packages (always runs)."""
import numpy as np
import pytest

from pyopnb import fk_sum
from pyopnb.objective import df_NB_cpp, df_NB_exact, f_NB_cpp, f_NB_exact
from validation.fixtures import FK_ABS, FK_REL, OBJ_REL, arr, load, names, within


@pytest.mark.parametrize("name", names("fk_"))
@pytest.mark.parametrize("type_", ["ksum", "dksum", "both"])
def test_fk_sum(name, type_):
    fx = load(name)
    i = fx["inputs"]
    got = fk_sum(arr(i["x"]), arr(i["omega"]), i["h"], None if i["x_eval"] is None else arr(i["x_eval"]),
                 arr(i["beta"]), i["nbin"], type_)
    ref = arr(fx["outputs"][type_])
    assert got.shape == ref.shape
    assert within(got, ref, FK_REL, FK_ABS), np.max(np.abs(got - ref))


@pytest.mark.parametrize("name", names("obj_"))
def test_objective_R_compatible(name):
    fx = load(name)
    i, o = fx["inputs"], fx["outputs"]
    args = (arr(i["V"]), arr(i["X"]), np.asarray(i["y"]) - 1, arr(i["PI"]), arr(i["h"]))
    assert f_NB_exact(*args) == pytest.approx(o["f_exact"], rel=OBJ_REL)
    assert within(df_NB_exact(*args), arr(o["df_exact"]), OBJ_REL, 1e-14)
    assert f_NB_cpp(*args, nbin=i["nbin"]) == pytest.approx(o["f_binned"], rel=OBJ_REL)
    assert within(df_NB_cpp(*args, nbin=i["nbin"]), arr(o["df_binned"]), OBJ_REL, 1e-14)


def test_pima_exact_correct_value_from_spec():
    # SPEC: Pima, PCA start, 3 columns: R's exact -0.58641, correct -0.53371
    fx = load("obj_pima_pca3")
    i = fx["inputs"]
    args = (arr(i["V"]), arr(i["X"]), np.asarray(i["y"]) - 1, arr(i["PI"]), arr(i["h"]))
    assert f_NB_exact(*args) == pytest.approx(-0.58641, abs=1e-5)
    assert f_NB_exact(*args, compat="correct") == pytest.approx(-0.53371, abs=1e-5)
