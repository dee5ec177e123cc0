"""The rows in parts (pyopnb.parts): R's, the paper's and the journal's binned
objectives and their gradients from parts of whole blocks, merged on a grid
side with no rows, are the single machine's bits, whatever the split."""
import numpy as np
import pytest

from pyopnb import evaluation as ev
from pyopnb.formulation import JournalFormulation, RFormulation
from pyopnb._core import linalg
from pyopnb._core.grid import grid_axes
from pyopnb._core.r_grid import RGridTables
from pyopnb.parts import (JOURNAL_GRID, LINEAR_GRID, R_GRID, BlockLayout, LocalRunner, NormalisedPartsEvaluator,
                          PartSpec, PartsEvaluator, RowPart, add_blocks, split)


def _problem(n, d=5, K=3, seed=0, h=0.4):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n).astype(np.int32)
    X = rng.normal(size=(n, d)) + 0.4 * y[:, None] * (np.arange(d) < 2)
    hv = np.full(K, h)
    PI = np.bincount(y, minlength=K) / n
    return X, y, hv, PI, rng


def _single(X, y, h, PI, nbin, threads=1):
    prob = ev.check_problem(X, y, PI, h)
    return ev.Evaluator(prob, ev.r_grid(prob, nbin, threads), nbin, threads)


def _parts(X, y, h, PI, nbin, bounds, threads=1):
    spec = PartSpec(h=h, PI=PI, counts=np.bincount(y, minlength=PI.size), n=X.shape[0], nbin=nbin,
                    threads=threads)
    return PartsEvaluator(LocalRunner(split(X, y, spec, bounds)), spec)


def test_block_layout_is_the_compiled_ones():
    for n in (1, 65536, 65537, 140000, 10**7):
        lay = BlockLayout(n)
        assert (lay.nblk, lay.block_len) == linalg.row_blocks(n)
        assert lay.rows(lay.nblk - 1, lay.nblk)[1] == n
    lay = BlockLayout(140000)
    assert lay.block_len == 46667
    assert lay.check_bounds([0, 46667, 140000]) == [0, 1, 3]
    with pytest.raises(ValueError, match="block boundaries"):
        lay.check_bounds([0, 46666, 140000])
    with pytest.raises(ValueError, match="increase from 0 to n"):
        lay.check_bounds([0, 140001])


@pytest.mark.parametrize("threads", [1, 2])
def test_parts_give_the_single_machines_bits_for_every_split(threads):
    n = 140000  # three blocks of 46,667 rows
    X, y, h, PI, rng = _problem(n)
    E = _single(X, y, h, PI, 300, threads)
    B = BlockLayout(n).block_len
    for ndim in (1, 3):
        V = rng.normal(size=(X.shape[1], ndim))
        f0, G0 = E.value_and_grad(V)
        for bounds in ([0, n], [0, B, n], [0, 2 * B, n], [0, B, 2 * B, n]):
            P = _parts(X, y, h, PI, 300, bounds, threads)
            f1, G1 = P.value_and_grad(V)
            assert f1 == f0 and np.array_equal(G1, G0), (ndim, bounds)
            assert P.value(V) == E.value(V)


def test_one_block_is_Rs_row_order_and_the_same_bits():
    X, y, h, PI, rng = _problem(3000, K=4, seed=3, h=0.3)
    V = rng.normal(size=(5, 2))
    f0, G0 = _single(X, y, h, PI, 1000).value_and_grad(V)
    f1, G1 = _parts(X, y, h, PI, 1000, [0, 3000]).value_and_grad(V)
    assert f1 == f0 and np.array_equal(G1, G0)


def test_a_split_off_block_boundaries_is_refused():
    X, y, h, PI, _ = _problem(140000)
    with pytest.raises(ValueError, match="block boundaries"):
        _parts(X, y, h, PI, 300, [0, 50000, 140000])


def test_the_grid_side_refuses_the_parts_passes_and_a_part_the_merges():
    X, y, h, PI, rng = _problem(500)
    spec = PartSpec(h=h, PI=PI, counts=np.bincount(y, minlength=3), n=500, nbin=100)
    part = RowPart(X, y, spec)
    ext = part.extremes(rng.normal(size=(5, 2)))
    lo, delta = grid_axes(ext[0], ext[1], ev.GRID_EPS, 100)
    marks = part.bin(lo, delta)
    PL, PS = (part.fold(("lin", "simple"), None)[i][:, None] for i in range(2))
    with pytest.raises(ValueError, match="grid side"):
        part._for(2).merge_parts(lo, delta, PL, PS, marks)
    grid = spec.tables(2, np.zeros(0, dtype=np.int32), 1)
    with pytest.raises(ValueError, match="must be"):
        grid.merge_parts(lo, delta, PL[:, :0], PS, marks)
    with pytest.raises(ValueError, match="2 blocks, not 1"):
        RGridTables(2, np.zeros(140000, dtype=np.int32), 3, h, 100, ev.GRID_EPS, np.array([0.25, 0.25]), True, 1,
                    None, (70000, 1, (np.ones(3), 3.0)))


def test_grid_axes_are_updates():
    X, y, h, PI, rng = _problem(140000)
    V = rng.normal(size=(5, 3))
    spec = PartSpec(h=h, PI=PI, counts=np.bincount(y, minlength=3), n=140000, nbin=200)
    part = RowPart(X, y, spec)
    zmin, zmax = part.extremes(V)
    assert zmin.shape == (3, 3)
    lo, delta = grid_axes(zmin, zmax, ev.GRID_EPS, 200)
    ref = RGridTables(3, y, 3, h, 200, ev.GRID_EPS, np.array([0.25, 0.25]), False, 1).update(part._Zt)
    assert np.array_equal(ref.lo, lo) and np.array_equal(ref.delta, delta)
    assert np.array_equal(lo, part._Zt.min(axis=1) - ev.GRID_EPS)


def test_crossprod_partials_add_to_the_whole():
    rng = np.random.default_rng(5)
    n = 140000
    A = rng.normal(size=(n, 4))
    Bt = rng.normal(size=(3, n))
    whole = linalg.crossprod_t(A, Bt, 2)
    B = BlockLayout(n).block_len
    parts = np.concatenate([linalg.crossprod_t(np.ascontiguousarray(A[a:b]), np.ascontiguousarray(Bt[:, a:b]), 2,
                                               block_len=B) for a, b in ((0, B), (B, n))])
    assert parts.shape == (3, 4, 3)
    assert np.array_equal(add_blocks(parts), whole)
    with pytest.raises(ValueError, match="block_len"):
        linalg.crossprod_t(A, Bt, 1, block_len=-1)


@pytest.mark.parametrize("n", [1000, 140000])
def test_chained_statistics_are_Rs_for_every_split(n):
    from pyopnb import formulation as fm, part_stats
    from pyopnb._core import colstats

    rng = np.random.default_rng(3)
    d = 6
    X = rng.normal(size=(n, d)) * np.array([1e3, 1, 1e-3, 5, 2, 3]) + 7
    X[:, 5] = 2.5  # a constant column: scale 0
    mu, scales, Xs = fm.r_standardise(X, True, None, 2)
    C = colstats.r_cov(np.ascontiguousarray(Xs), 2)
    V = fm.r_start(None, Xs, None, 2, 2)
    y0 = np.zeros(n, dtype=np.int32)
    for bounds in ([0, n], [0, 333, n], [0, 1, 500, 999, n]):
        parts = part_stats.LocalRows([X[a:b] for a, b in zip(bounds, bounds[1:])],
                                     [y0[a:b] for a, b in zip(bounds, bounds[1:])], 2)
        mu2, scales2 = part_stats.r_scaling(parts, n, d)
        assert np.array_equal(mu2, mu) and np.array_equal(scales2, scales) and scales2[5] == 0
        rows = part_stats.RowMap(mu2, scales2)
        assert np.array_equal(part_stats.r_cov(parts, n, d, rows), C)
        assert np.array_equal(part_stats.r_start(parts, n, d, 2, rows), V)
        assert np.array_equal(part_stats.r_var(parts, n, d, rows), colstats.r_var(np.ascontiguousarray(Xs), 1))
    unscaled = part_stats.r_scaling(part_stats.LocalRows([X], [y0]), n, d, scale=False)
    assert np.array_equal(unscaled[0], mu) and np.array_equal(unscaled[1], np.ones(d))


def test_carried_sums_refuse_a_wrong_length():
    from pyopnb._core import colstats

    X = np.ones((3, 2))
    with pytest.raises(ValueError, match="one sum per column"):
        colstats.col_sums_from(X, np.zeros(3, dtype=np.longdouble))
    with pytest.raises(ValueError, match="d\\(d\\+1\\)/2"):
        colstats.cov_sums_from(X, np.zeros(2), np.zeros(2, dtype=np.longdouble))


def test_a_fit_in_parts_is_OPNBs(pima):
    import pyopnb
    from pyopnb.part_fit import fit_projection_local

    m = pyopnb.OPNB(pima.X_train, pima.y_train, ndim=2)
    f = fit_projection_local(pima.X_train, pima.y_train, [0, pima.X_train.shape[0]], ndim=2)
    assert np.array_equal(f.V, m.V) and f.fval == m.fval and np.array_equal(f.h, m.h)
    assert np.array_equal(f.PI, m.PI) and np.array_equal(f.mu, m.mu) and np.array_equal(f.scales, m.scales)
    assert list(f.levels) == list(m.ynames) and f.convergence == m.convergence
    X, y, _, _, _ = _problem(140000)
    m = pyopnb.OPNB(X, y, ndim=2, nbin=300)
    f = fit_projection_local(X, y, [0, BlockLayout(140000).block_len, 140000], ndim=2, nbin=300)
    assert np.array_equal(f.V, m.V) and f.fval == m.fval
    with pytest.raises(ValueError, match="exact sums"):
        fit_projection_local(X, y, [0, 140000], nbin=None)


def test_the_papers_fit_in_parts_is_the_single_machines():
    # R's formulation with the paper's objective (OPNBClassifier(formulation="correct")), in 1 to 3 parts
    from pyopnb.fitting import fit
    from pyopnb.formulation import CorrectFormulation
    from pyopnb.part_fit import fit_projection_local

    X, y, _, _, _ = _problem(140000, seed=4)
    B = BlockLayout(140000).block_len
    m = fit(X, y, CorrectFormulation(lam=2e-3, scale=False), ndim=2, nbin=300)
    for bounds in ([0, 140000], [0, 2 * B, 140000], [0, B, 2 * B, 140000]):
        f = fit_projection_local(X, y, bounds, CorrectFormulation(lam=2e-3, scale=False), ndim=2, nbin=300)
        assert np.array_equal(f.V, m.V) and f.fval == m.fval and np.array_equal(f.h, m.h), bounds
        assert np.array_equal(f.mu, m.mu) and np.array_equal(f.scales, m.scales)
        assert f.convergence == m.convergence and f.lam == 2e-3
    with pytest.raises(ValueError, match="C None"):
        fit_projection_local(X, y, [0, 140000], CorrectFormulation(C=lambda X, y: np.eye(5)))


def test_a_formulation_with_its_own_objective_is_refused_on_parts():
    # the parts' passes are the built-in objectives': a subclass's own l or bandwidths would be silently replaced
    from pyopnb.formulation import CorrectFormulation
    from pyopnb.part_fit import fit_projection_local

    class Wider(CorrectFormulation):
        def bandwidths(self, Xs, codes, K, threads):
            return np.full(K, 2.0)

    class Mine(JournalFormulation):
        def evaluator(self, problem, nbin, threads):
            return super().evaluator(problem, nbin, threads)

    X, y, _, _, _ = _problem(500)
    for form in (Wider(), Mine()):
        with pytest.raises(ValueError, match="is not fitted on rows in parts"):
            fit_projection_local(X, y, [0, 500], form, ndim=1, nbin=50)
    for form in (RFormulation(), CorrectFormulation(), JournalFormulation()):
        form.check_parts()


def test_the_greedy_order_in_parts_is_the_single_machines():
    n = 140000
    X, y, h, PI, rng = _problem(n, d=6)
    E = _single(X, y, h, PI, 300, 2)
    V = rng.normal(size=(6, 4))
    B = BlockLayout(n).block_len
    E.value(V)
    one = E.core.subset_values(E._Zt, [1], [0, 2, 3])
    for bounds in ([0, n], [0, B, n]):
        P = _parts(X, y, h, PI, 300, bounds, 2)
        P.value(V)
        total = np.zeros(3)
        for partial in np.concatenate(P.runner.call("subset", [1], [0, 2, 3])):
            total = total + partial
        assert np.array_equal(total / n, one)
        assert P.order_columns(V) == E.order_columns(V)


def test_where_Rs_gradient_fails_is_found_from_the_parts():
    """PartsEvaluator.r_failure is r_gradient_failure on the rows, for every
    split: none, a grid point past the reach of a class, a non-finite Z."""
    from pyopnb._core import project
    from pyopnb.r_failures import r_gradient_failure

    n = 140000
    X, y, h, PI, rng = _problem(n)
    # a class far out on column 0: its grid points lie thousands of bandwidths from the other classes' points
    X[y == 2, 0] += 40.0
    B = BlockLayout(n).block_len
    for V in (0.01 * rng.normal(size=(5, 2)), np.array([[100.0, 0.0], [0.0, 1.0], [0, 0], [0, 0], [0, 0]]),
              np.array([[0.0, 1.0], [1.0, 0.0], [0, 0], [0, 0], [0, 0]]) * 80.0,
              np.array([[np.inf], [0.0], [0], [0], [0]])):
        with np.errstate(invalid="ignore"):
            want = r_gradient_failure(project.project(X, V, 1).T, y, h, 300)
        for bounds in ([0, n], [0, B, n], [0, B, 2 * B, n]):
            with np.errstate(invalid="ignore"):
                got = _parts(X, y, h, PI, 300, bounds).r_failure(V)
            assert got == want, (V, bounds)
            if np.all(np.isfinite(V)):
                # after an evaluation at V, its own extremes and Z serve: no pass projects again
                P = _parts(X, y, h, PI, 300, bounds)
                P.spreads()
                P.value_and_grad(V)
                called, call = [], P.runner.call
                P.runner.call = lambda method, *args: called.append(method) or call(method, *args)
                assert P.r_failure(V) == want and "r_extremes" not in called, (V, bounds)
    assert want is not None and want.distance == np.inf
    far = _parts(X, y, h, PI, 300, [0, n]).r_failure(np.array([[100.0, 0.0], [0.0, 1.0], [0, 0], [0, 0], [0, 0]]))
    assert far is not None and far.column == 0 and far.distance > 745


def test_a_fit_in_parts_that_R_stops_warns_and_keeps_Rs_start_with_r_defects():
    # HouseVotes84, R's fold 8 at lam 4e-4 (test_r_failures): R's gradient fails on the path
    import warnings

    import pyopnb
    from pyopnb.part_fit import fit_projection_local
    from pyopnb.validation.fixtures import load

    v = load("r_failures")["house_votes"]
    X, y = np.asarray(v["X"], dtype=float), np.asarray(v["y"], dtype=object)
    train = np.concatenate([f for i, f in enumerate(v["folds"]) if i != 7])
    X, y = X[train], y[train]
    with pytest.warns(pyopnb.RDefectWarning, match="R's OPNB 1.0 would not end here") as rec:
        f = fit_projection_local(X, y, [0, X.shape[0]], RFormulation(lam=4e-4))
    assert rec[0].filename == __file__  # said at the user's call
    with pytest.warns(pyopnb.RDefectWarning):
        m = pyopnb.OPNB(X, y, lam=4e-4)
    assert np.array_equal(f.V, m.V) and f.fval == m.fval
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        kept = fit_projection_local(X, y, [0, X.shape[0]], RFormulation(lam=4e-4, r_defects=True))
        ref = pyopnb.OPNB(X, y, lam=4e-4, r_defects=True)
    assert not any(issubclass(w.category, pyopnb.RDefectWarning) for w in rec)
    assert any("keeps the start projection, as R's OPNB does" in str(w.message) for w in rec)
    assert np.array_equal(kept.V, ref.V) and kept.fval == ref.fval
    assert abs(kept.fval - v["fold8_lam4e-4_fval"]) <= 1e-12 * abs(v["fold8_lam4e-4_fval"])


# the binned objectives whose grid moves with z's extremes: each one's single machine evaluator
_MOVING = {"journal": (JOURNAL_GRID, ev.NormalisedEvaluator, ev.interp_grid),
           "paper": (LINEAR_GRID, ev.Evaluator, ev.linear_passes)}


def _moving_single(kind, X, y, h, PI, nbin, threads=1):
    _, evaluator, core = _MOVING[kind]
    prob = ev.check_problem(X, y, PI, h)
    return evaluator(prob, core(prob, nbin, threads), nbin, threads)


def _moving_parts(kind, X, y, h, PI, nbin, bounds, threads=1, runner=LocalRunner):
    objective, evaluator, _ = _MOVING[kind]
    spec = PartSpec(h=h, PI=PI, counts=np.bincount(y, minlength=PI.size), n=X.shape[0], nbin=nbin,
                    threads=threads, objective=objective)
    P = spec.objective.evaluator(runner(split(X, y, spec, bounds)), spec)
    assert isinstance(P, NormalisedPartsEvaluator) == (evaluator is ev.NormalisedEvaluator)
    return P


@pytest.mark.parametrize("kind", sorted(_MOVING))
@pytest.mark.parametrize("threads", [1, 2])
def test_a_moving_grids_objective_in_parts_is_the_single_machines_for_every_split(kind, threads):
    n = 140000
    X, y, h, PI, rng = _problem(n)
    h = np.array([0.3, 0.45, 0.38])
    B = BlockLayout(n).block_len
    E = _moving_single(kind, X, y, h, PI, 300, threads)
    for ndim in (1, 3):
        V = rng.normal(size=(X.shape[1], ndim))
        f0, G0 = E.value_and_grad(V)
        order = E.order_columns(V)
        for bounds in ([0, n], [0, B, n], [0, 2 * B, n], [0, B, 2 * B, n]):
            P = _moving_parts(kind, X, y, h, PI, 300, bounds, threads)
            f1, G1 = P.value_and_grad(V)
            assert f1 == f0 and np.array_equal(G1, G0), (ndim, bounds)
            assert P.value(V) == f0
            assert P.order_columns(V) == order
        # the gradient is the value's: its slope along a direction
        P = _moving_parts(kind, X, y, h, PI, 300, [0, B, n], threads)
        D = rng.normal(size=V.shape)
        eps = 1e-6
        slope = (P.value(V + eps * D) - P.value(V - eps * D)) / (2 * eps)
        assert abs(slope - np.sum(G1 * D)) < 1e-5 * max(1.0, abs(slope))


@pytest.mark.parametrize("kind", sorted(_MOVING))
def test_the_grids_motion_goes_to_the_first_block_at_each_extreme_wherever_its_part(kind):
    # column 0's extremes tie between rows of blocks 0 and 2 (the first block must take the motion, as one scan
    # of the points finds it) and those rows differ elsewhere, so another choice would change t(X) dZ
    n = 140000
    X, y, h, PI, rng = _problem(n, d=4)
    B = BlockLayout(n).block_len
    for r in (10, 2 * B + 10):
        X[r, 0] = -40.0
    for r in (B + 5, 2 * B + 7):
        X[r, 0] = 40.0
    X[2 * B + 10, 1:] += 3.0
    X[2 * B + 7, 1:] -= 3.0
    V = np.column_stack([np.eye(4)[0], rng.normal(size=4)])
    f0, G0 = _moving_single(kind, X, y, h, PI, 200).value_and_grad(V)
    for bounds in ([0, B, n], [0, 2 * B, n], [0, B, 2 * B, n]):
        f1, G1 = _moving_parts(kind, X, y, h, PI, 200, bounds).value_and_grad(V)
        assert f1 == f0 and np.array_equal(G1, G0), bounds
    # the motion's blocks, as the parts were told them: column 0's first minimum and first maximum
    seen = []

    class Recording(LocalRunner):
        def call(self, method, *args):
            if method == "finish":
                seen.append(args[0])
            return super().call(method, *args)

    P = _moving_parts(kind, X, y, h, PI, 200, [0, B, 2 * B, n], runner=Recording)
    assert P.value_and_grad(V)[0] == f0
    assert seen[0][0, 2:].tolist() == [0.0, 1.0]
    assert not np.array_equal(X[10], X[2 * B + 10]) and not np.array_equal(X[B + 5], X[2 * B + 7])


def test_a_part_is_told_where_its_blocks_start():
    n = 140000
    X, y, h, PI, _ = _problem(n, d=2)
    spec = PartSpec(h=h, PI=PI, counts=np.bincount(y, minlength=3), n=n, nbin=100, objective=JOURNAL_GRID)
    B = spec.layout.block_len
    assert [p.first_block for p in split(X, y, spec, [0, B, 2 * B, n])] == [0, 1, 2]
    with pytest.raises(ValueError, match="cannot start at block 2"):
        RowPart(X[:2 * B], y[:2 * B], spec, first_block=2)


def test_the_objectives_travel_as_themselves():
    import pickle

    for objective in (R_GRID, LINEAR_GRID, JOURNAL_GRID):
        assert pickle.loads(pickle.dumps(objective)) is objective
    spec = PartSpec(h=np.ones(2), PI=np.full(2, 0.5), counts=np.ones(2), n=2, nbin=10, objective=JOURNAL_GRID)
    assert pickle.loads(pickle.dumps(spec)).objective is JOURNAL_GRID
