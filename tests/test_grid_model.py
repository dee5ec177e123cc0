"""pyopnb.grid_model: a model without its training rows. Its class densities
are the kernel sums of the class grids, within density_bound of the rows';
its grids are the same bits for any split of the rows into blocks' parts;
what needs the rows refuses it with the reason."""
import numpy as np
import pytest

import pyopnb
from pyopnb import grid_model as gm
from pyopnb.datasets import load_pima
from pyopnb.naive_bayes import class_log_densities
from pyopnb.parts import BlockLayout


@pytest.fixture(scope="module")
def pima_model():
    d = load_pima()
    return pyopnb.OPNB(d.X_train, d.y_train, ndim=3), d


def _rows_densities(model, Z, t):
    """[m, K]: column t's class densities summed over the training rows (R's predict)."""
    ptr = model.project(model.X)
    return class_log_densities(ptr[:, t:t + 1], model.y0, model.nc, model.h[:, t:t + 1], Z[:, t:t + 1], log=False)


@pytest.mark.parametrize("nbin", [50, 200, 1000])
def test_class_densities_are_the_rows_within_the_bound(pima_model, nbin):
    m, d = pima_model
    g = gm.grid_model(m, nbin)
    Z = m.project(np.vstack([d.X_test, m.X]))
    # beyond the training projections' range as well
    Z = np.vstack([Z, Z.min(axis=0) - 3 * m.h.max(axis=0), Z.max(axis=0) + 3 * m.h.max(axis=0)])
    bound = gm.density_bound(g)
    worst = 0.0
    for t in range(m.ndim):
        exact = _rows_densities(m, Z, t)
        grid = g.class_densities(Z[:, t:t + 1], False, 1) if t == 0 else None
        if grid is None:
            # column t alone: the grid model of column t's densities
            sub = gm.GridModel(**{**g.__dict__, "W": g.W[t:t + 1], "lo": g.lo[t:t + 1], "delta": g.delta[t:t + 1],
                                  "h": g.h[:, t:t + 1], "V": g.V[:, t:t + 1]})
            grid = sub.class_densities(Z[:, t:t + 1], False, 1)
        err = np.abs(grid - exact)
        slack = 1e-12 * np.abs(exact).max()
        assert np.all(err <= bound[None, :, t] + slack), (t, err.max(), bound[:, t])
        worst = max(worst, float((err / bound[None, :, t]).max()))
    # the bound is not idle: binning moves the densities by a visible share of it
    assert worst > 1e-2
    # and finer grids are closer
    assert bound.max() < 1.0


def test_predictions_follow_the_grid_densities(pima_model):
    m, d = pima_model
    g = gm.grid_model(m, 1000)
    for log in (False, True):
        out = pyopnb.predict(g, d.X_test, log=log)
        rows = pyopnb.predict(m, d.X_test, log=log)
        assert out["posterior"].shape == rows["posterior"].shape
        assert np.abs(out["posterior"] - rows["posterior"]).max() < 1e-3
        # the classes are the rows' but where two classes are within the binning's reach
        assert np.mean(out["class"] == rows["class"]) > 0.98
    logden = np.log(g.PI) + g.class_densities(m.project(d.X_test), True, 1)
    assert np.array_equal(pyopnb.predict(g, d.X_test, log=True)["class"], g.ynames[np.argmax(logden, axis=1)])
    # fewer columns: the first ones' grids
    assert np.array_equal(pyopnb.predict(g, d.X_test, ndim=2)["posterior"],
                          pyopnb.predict(gm.GridModel(**{**g.__dict__, "W": g.W[:2], "lo": g.lo[:2],
                                                         "delta": g.delta[:2], "h": g.h[:, :2], "V": g.V[:, :2]}),
                                         d.X_test)["posterior"])


def test_a_rows_prediction_depends_on_no_other_row(pima_model):
    m, d = pima_model
    g = gm.grid_model(m)
    whole = pyopnb.predict(g, d.X_test, log=True)
    parts = [pyopnb.predict(g, d.X_test[a:a + 37], log=True) for a in range(0, d.X_test.shape[0], 37)]
    for key in ("posterior", "log_posterior"):
        assert np.array_equal(whole[key], np.vstack([p[key] for p in parts]))
    assert np.array_equal(whole["class"], np.concatenate([p["class"] for p in parts]))


@pytest.mark.filterwarnings("ignore::pyopnb.ConvergenceWarning")
def test_class_grids_are_the_same_bits_for_any_split():
    rng = np.random.default_rng(3)
    n = 140000
    y = rng.integers(0, 3, n)
    X = rng.normal(size=(n, 4)) + y[:, None] * np.array([1.0, 0, 0.5, 0])
    m = pyopnb.OPNB(X, y, ndim=2, maxit=3)
    g = gm.grid_model(m, 300)
    B = BlockLayout(n).block_len
    Z = m.project(X)
    for bounds in ([0, B, n], [0, 2 * B, n], [0, B, 2 * B, n]):
        bins = gm.ClassGridBins(np.bincount(y), 300)
        pieces = list(zip(bounds, bounds[1:]))
        ext = [bins.extremes(Z[a:b], y[a:b]) for a, b in pieces]
        lo, delta = bins.axes(np.concatenate([e[0] for e in ext], 1), np.concatenate([e[1] for e in ext], 1))
        W = bins.merge(np.concatenate([bins.bin(Z[a:b], y[a:b], lo, delta) for a, b in pieces], 1))
        assert np.array_equal(lo, g.lo) and np.array_equal(delta, g.delta) and np.array_equal(W, g.W)
    # each class's weights are its share of the rows: 1 in all
    assert np.allclose(g.W.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    # the grid spans the projections
    assert np.all(g.lo < Z.min(axis=0)) and np.all(g.lo + 299 * g.delta > Z.max(axis=0))
    with pytest.raises(ValueError, match="all 3 blocks"):
        bins.merge(bins.bin(Z[:B], y[:B], lo, delta))


def test_what_needs_the_rows_refuses_a_grid_model(pima_model, tmp_path):
    m, d = pima_model
    g = gm.grid_model(m)
    with pytest.raises(ValueError, match="holds no training rows.*predict.OPNB"):
        pyopnb.write_rds(g, str(tmp_path / "m.rds"))
    assert not (tmp_path / "m.rds").exists()
    with pytest.raises(ValueError, match="holds no training rows"):
        pyopnb.plot(g)
    with pytest.raises(ValueError, match="at least 2"):
        gm.grid_model(m, 1)
    w = pyopnb.OPNB(d.X_train, d.y_train, ndim=2, weights=np.arange(1, d.X_train.shape[0] + 1.0))
    with pytest.raises(ValueError, match="weighted"):
        gm.grid_model(w)
    assert "GridModel(" in repr(g) and "nbin=1000" in repr(g)


@pytest.mark.parametrize("labels", ["strings", "integers"])
def test_a_grid_model_reads_back_from_json_to_the_bit(pima_model, tmp_path, labels):
    import pandas as pd

    m, d = pima_model
    y = np.asarray(d.y_train)
    if labels == "integers":
        y = (y == "Yes").astype(int) + 3
    else:
        y = pd.Categorical(y, categories=["Yes", "No", "Unsure"])
    fitted = pyopnb.OPNB(pd.DataFrame(d.X_train, columns=list(d.feature_names)), y, ndim=2)
    g = gm.grid_model(fitted, 300)
    path = tmp_path / "grid.json"
    pyopnb.write_json(g, path)
    back = pyopnb.read_model(path)
    assert isinstance(back, gm.GridModel)
    for k in ("V", "PI", "h", "mu", "scales", "lo", "delta", "W", "counts"):
        assert np.array_equal(getattr(back, k), getattr(g, k)), k
    assert list(back.ynames) == list(g.ynames) and type(back.ynames[0]) is type(g.ynames[0])
    assert back.unused_levels == g.unused_levels and back.feature_names == g.feature_names
    assert back.fval == g.fval and back.convergence == g.convergence
    te = pd.DataFrame(d.X_test, columns=list(d.feature_names))
    assert np.array_equal(pyopnb.predict(back, te)["class"], pyopnb.predict(g, te)["class"])
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "pyopnb-grid-model", "V": [[1.0]]}')
    with pytest.raises(ValueError, match="not a whole pyopnb grid model"):
        pyopnb.read_json(bad)
