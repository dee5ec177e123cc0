"""OPNB objective and gradient: finite differences, invariances, modes, bad input."""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from helpers import central_difference
from hypothesis import strategies as st

from pyopnb.objective import df_NB_cpp, df_NB_exact, f_NB_cpp, f_NB_exact, objective_and_gradient
from pyopnb.validation.naive import naive_r_binned


def problem(seed, n=60, d=4, ndim=2, K=3, ties=True, equal=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if ties:
        X[1] = X[0]
        X[3, 0] = X[2, 0]
    y = np.arange(n) % K if equal else rng.integers(0, K, n)
    y[:K] = np.arange(K)
    PI = np.bincount(y, minlength=K) / n
    V = rng.normal(size=(d, ndim))
    return V, X, y, PI


def numerical_gradient(V, X, y, PI, h, nbin, step=1e-6):
    return central_difference(lambda W: objective_and_gradient(W, X, y, PI, h, nbin=nbin, gradient=False)[0],
                              V, step)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 100_000),
    n=st.integers(5, 60),
    d=st.integers(1, 5),
    ndim=st.integers(1, 3),
    K=st.integers(2, 4),
    hs=st.lists(st.floats(0.3, 3.0), min_size=4, max_size=4),
    binned=st.booleans(),
)
def test_correct_gradient_matches_finite_differences(seed, n, d, ndim, K, hs, binned):
    K = min(K, n)
    V, X, y, PI = problem(seed, n, d, ndim, K)
    h = np.array(hs[:K])
    nbin = 40 if binned else None
    _, g = objective_and_gradient(V, X, y, PI, h, nbin=nbin)
    num = numerical_gradient(V, X, y, PI, h, nbin)
    # a central difference at step 1e-6 carries about 1e-10 of rounding noise
    # (eps |l| / step): relative to the gradient only where that is not tiny
    # (hypothesis found n = 5 with |gradient| = 2e-6, noise 3e-11; a step of
    # 1e-4 agrees with the analytic value there to 3e-7)
    scale = max(np.max(np.abs(num)), 1e-4)
    err = np.max(np.abs(g - num)) / scale
    if binned and err >= 1e-5:
        # the binned value has kinks where a point crosses a bin edge (its
        # linear-binning weights are piecewise linear in z): a difference that
        # straddles one is off by the jump in slope, a shorter one is not
        # (hypothesis found seed 4103, n = 25: 1.9e-4 at step 1e-6, 7e-8 at 1e-7)
        num = numerical_gradient(V, X, y, PI, h, nbin, step=1e-7)
        err = np.max(np.abs(g - num)) / scale
    assert err < 1e-5


def test_correct_binned_gradient_at_a_bin_edge_kink():
    """The example above where step 1e-6 straddles a kink: the analytic
    gradient is the one-sided slope, as a step of 1e-7 shows."""
    V, X, y, PI = problem(4103, 25, 3, 1, 2)
    _, g = objective_and_gradient(V, X, y, PI, np.ones(2), nbin=40)
    num = numerical_gradient(V, X, y, PI, np.ones(2), 40, step=1e-7)
    assert np.max(np.abs(g - num)) / np.max(np.abs(num)) < 1e-6
    straddled = numerical_gradient(V, X, y, PI, np.ones(2), 40, step=1e-6)
    assert np.max(np.abs(g - straddled)) / np.max(np.abs(num)) > 1e-5


@pytest.mark.parametrize("compat", ["R", "correct"])
@pytest.mark.parametrize("nbin", [None, 50])
def test_invariances(compat, nbin):
    V, X, y, PI = problem(7, n=80, d=4, ndim=3, K=3)
    h = np.array([0.7, 1.0, 1.3])
    f0, g0 = objective_and_gradient(V, X, y, PI, h, nbin=nbin, compat=compat)
    # flipping a column's sign
    Vf = V.copy()
    Vf[:, 1] *= -1
    f1, g1 = objective_and_gradient(Vf, X, y, PI, h, nbin=nbin, compat=compat)
    if compat == "R" and nbin is not None:
        # R reads each density at the grid point on the point's left, and a
        # flip turns left into right: equal only up to the binning error
        assert f1 == pytest.approx(f0, rel=1e-2)
        assert f1 != f0
    else:
        assert f1 == pytest.approx(f0, rel=1e-10)
        np.testing.assert_allclose(g1[:, 1], -g0[:, 1], rtol=1e-7, atol=1e-12)
    # permuting the samples
    perm = np.random.default_rng(1).permutation(80)
    f2, g2 = objective_and_gradient(V, X[perm], y[perm], PI, h, nbin=nbin, compat=compat)
    assert f2 == pytest.approx(f0, rel=1e-12)
    np.testing.assert_allclose(g2, g0, rtol=1e-9, atol=1e-13)
    if compat == "correct":
        relabel = np.array([2, 0, 1])
        inv = np.argsort(relabel)
        f3, g3 = objective_and_gradient(V, X, relabel[y], PI[inv], h[inv], nbin=nbin, compat=compat)
        assert f3 == pytest.approx(f0, rel=1e-12)
        np.testing.assert_allclose(g3, g0, rtol=1e-9, atol=1e-13)


def test_binned_value_approaches_exact_in_correct_mode():
    V, X, y, PI = problem(3, n=150, d=5, ndim=3, K=3)
    h = np.ones(3)
    exact = f_NB_exact(V, X, y, PI, h, compat="correct")
    errs = [abs(f_NB_cpp(V, X, y, PI, h, nbin=nb, compat="correct") - exact) for nb in (20, 200, 2000)]
    assert errs[2] < errs[1] < errs[0]
    assert errs[2] < 1e-5
    gexact = df_NB_exact(V, X, y, PI, h, compat="correct")
    gerr = [np.max(np.abs(df_NB_cpp(V, X, y, PI, h, nbin=nb, compat="correct") - gexact)) for nb in (20, 200, 2000)]
    assert gerr[2] < gerr[1] < gerr[0]
    assert gerr[2] < 1e-2 * np.max(np.abs(gexact))


def test_R_binned_value_approaches_correct_exact():
    # SPEC: R's binned value with 1e5 bins equals the correct exact value (Pima: -0.53371)
    V, X, y, PI = problem(5, n=120, d=4, ndim=2, K=2)
    h = np.ones(2)
    correct = f_NB_exact(V, X, y, PI, h, compat="correct")
    assert f_NB_cpp(V, X, y, PI, h, nbin=100_000, compat="R") == pytest.approx(correct, abs=1e-6)


def test_equal_class_sizes_R_and_correct_agree():
    V, X, y, PI = problem(11, n=90, d=3, ndim=2, K=3, equal=True)
    h = np.ones(3)
    assert f_NB_exact(V, X, y, PI, h, compat="R") == pytest.approx(f_NB_exact(V, X, y, PI, h, compat="correct"), rel=1e-14)
    # and with unequal classes R's squared priors give another number
    V, X, y, PI = problem(12, n=90, d=3, ndim=2, K=3)
    assert abs(f_NB_exact(V, X, y, PI, h, compat="R") - f_NB_exact(V, X, y, PI, h, compat="correct")) > 1e-4


def test_threads_do_not_change_results(many_cores):
    V, X, y, PI = problem(2, n=300, d=6, ndim=5, K=4)
    h = np.array([1.0, 1.0, 0.5, 1.0])
    for nbin in (None, 100):
        for compat in ("R", "correct"):
            f1, g1 = objective_and_gradient(V, X, y, PI, h, nbin=nbin, compat=compat, threads=1)
            f2, g2 = objective_and_gradient(V, X, y, PI, h, nbin=nbin, compat=compat, threads=2)
            f3, g3 = objective_and_gradient(V, X, y, PI, h, nbin=nbin, compat=compat, threads=3)
            # the same additions in the same order whatever the thread count
            assert f1 == f2 == f3
            np.testing.assert_array_equal(g1, g2)
            np.testing.assert_array_equal(g2, g3)


def test_R_binned_gradient_is_not_the_derivative_of_its_value():
    # R's defect, kept in compat="R": df_NB_cpp differentiates another binning
    V, X, y, PI = problem(4, n=60, d=3, ndim=2, K=2, ties=False)
    h = np.ones(2)
    g = df_NB_cpp(V, X, y, PI, h, nbin=30, compat="R")
    num = np.zeros_like(V)
    for a in range(3):
        for b in range(2):
            Vp, Vm = V.copy(), V.copy()
            Vp[a, b] += 1e-6
            Vm[a, b] -= 1e-6
            num[a, b] = (f_NB_cpp(Vp, X, y, PI, h, 30) - f_NB_cpp(Vm, X, y, PI, h, 30)) / 2e-6
    assert np.max(np.abs(g - num)) > 1e-4 * np.max(np.abs(num))


@pytest.mark.parametrize(
    "change, match",
    [
        (dict(X=np.ones((8, 3))), "V must have 3 rows"),
        (dict(y=np.array([0, 1, 2, 0, 1, 0])), "y0 must be a vector of length 8"),
        (dict(y=np.array([0, 1, 2, 0, 1, 0, 1, 1])), "class codes 0..1"),
        (dict(y=np.array([0, 0, 0, 0, 0, 0, 0, 0])), r"class\(es\) \[1\] have no points"),
        (dict(y=np.array([0, 1, 0.5, 0, 1, 0, 1, 1])), "integer class codes"),
        (dict(h=np.array([1.0, 0.0])), "h must be strictly positive"),
        (dict(h=np.array([1.0])), "h has 1 entries but PI has 2"),
        (dict(PI=np.array([1.0, -0.1])), "PI must be strictly positive"),
        (dict(X=np.full((8, 2), np.nan)), "X contains NaN"),
        (dict(V=np.array([[np.inf], [1.0]])), "V contains NaN"),
        (dict(nbin=1), "nbin must be an integer >= 2"),
        (dict(compat="python"), "compat must be"),
    ],
)
def test_bad_input(change, match):
    rng = np.random.default_rng(0)
    args = dict(V=rng.normal(size=(2, 1)), X=rng.normal(size=(8, 2)), y=np.array([0, 1] * 4), PI=np.array([0.5, 0.5]), h=np.ones(2), nbin=None, compat="correct")
    args.update(change)
    with pytest.raises(ValueError, match=match):
        objective_and_gradient(args["V"], args["X"], args["y"], args["PI"], args["h"], nbin=args["nbin"], compat=args["compat"])


@pytest.mark.parametrize("ndim", [1, 2, 3, 4, 5, 7, 8, 13, 24, 25, 30, 50, 100])
@pytest.mark.parametrize("n", [1, 23, 24, 25, 257])
def test_projection_sums_features_in_order(every_path, n, ndim):
    # R's reference BLAS forms X %*% V entry by entry, adding the features in
    # order; the objective uses the same order so that fits end where R's do.
    # n and ndim around the kernel's blocks: 24 rows, up to 8 rows and 12
    # registers of columns at a time (24 columns on SSE2, 48 on AVX2, 96 on
    # AVX-512), on every vector path
    from pyopnb._core import project as _project

    rng = np.random.default_rng(9)
    X = rng.normal(size=(n, 11)) * 10.0 ** rng.integers(-3, 4, 11)
    V = rng.normal(size=(11, ndim))
    ref = np.zeros((ndim, n))
    for l in range(11):
        ref += V[l][:, None] * X[:, l][None, :]
    for results in every_path(lambda: [_project.project(X, V, threads) for threads in (1, 2, 3)]):
        for Zt in results:
            np.testing.assert_array_equal(Zt, ref)
    np.testing.assert_allclose(Zt, (X @ V).T, rtol=1e-12, atol=1e-12 * np.abs(X).max())
    # centred as R's sweep(X, 2, mu) %*% V, with no centred copy made: each x - mu one subtraction, then the
    # same sums
    mu = X.mean(axis=0) + rng.normal(size=11)
    Xc = X - mu
    ref = np.zeros((ndim, n))
    for l in range(11):
        ref += V[l][:, None] * Xc[:, l][None, :]
    for results in every_path(lambda: [_project.project(X, V, threads, mu=mu) for threads in (1, 2, 3)]):
        for Zt in results:
            np.testing.assert_array_equal(Zt, ref)
    with pytest.raises(ValueError, match="one value per column"):
        _project.project(X, V, 1, mu=mu[:-1])


# R's binned objective as a fit evaluates it (RGridTables) against its
# definition summed directly (validation.naive.naive_r_binned)
_BETA = np.array([0.25, 0.25])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 100_000), n=st.integers(3, 400), ndim=st.integers(1, 9), K=st.integers(2, 5),
       nbin=st.integers(2, 300), groups=st.booleans(), threads=st.integers(1, 3))
def test_grid_tables_are_r_s_binned_objective(seed, n, ndim, K, nbin, groups, threads):
    from pyopnb._core import r_grid as _grid

    rng = np.random.default_rng(seed)
    n = max(n, K)
    Zt = rng.normal(size=(ndim, n)) * rng.uniform(0.1, 10)
    y = rng.integers(0, K, n).astype(np.int32)
    y[:K] = np.arange(K)
    PI = np.bincount(y, minlength=K) / n
    h = rng.choice([0.5, 1.0, 2.0], K) if groups else np.ones(K)
    value, post, dZ, scale = naive_r_binned(Zt, y, PI, h, nbin)
    tables = _grid.RGridTables(ndim, y, K, h, nbin, 1e-8, _BETA, True, threads)
    # a second Z through the same object: its buffers are reused, to the bit
    tables.update(rng.normal(size=(ndim, n)))
    tables.value_and_posteriors(PI, True)
    tables.update(Zt)
    v2, post2 = tables.value_and_posteriors(PI, True)
    g2 = tables.gradient(post2)
    fresh = _grid.RGridTables(ndim, y, K, h, nbin, 1e-8, _BETA, True, 1).update(Zt)
    v3, post3 = fresh.value_and_posteriors(PI, True)
    assert v3 == v2  # the threads change nothing
    np.testing.assert_array_equal(post3, post2)
    np.testing.assert_array_equal(fresh.gradient(post3), g2)
    assert v2 == pytest.approx(value, rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(post2, post, rtol=0, atol=1e-12)
    np.testing.assert_allclose(g2, dZ, rtol=1e-10, atol=1e-13 * scale)


def _c_exp(x):
    """exp of each entry by the C library (Python's math.exp): numpy's SIMD
    exp differs from it in last bits by CPU, and the decays are held to
    glibc's exp, which R's exact sums use."""
    return np.vectorize(math.exp, otypes=[float])(x)


def test_class_bandwidth_decays_within_an_ulp():
    """Each gap's decays in every class bandwidth (a series below 1/64
    bandwidths, exp above; the far form past 600) against the C library's
    exp, exp(-d) alone likewise, and the one-bandwidth decays (R's path)
    exactly as exp(-d) d^k."""
    from pyopnb._core import testing as _testing

    rng = np.random.default_rng(3)
    h = np.array([0.25, 0.5, 1.0, 3.0, 0.7])  # odd: a class without a partner lane
    d = np.r_[0.0, 5e-324, np.geomspace(1e-12, 1.0, 400), rng.uniform(0, 2 / 64, 400) * h.min(),
              1 / 64 * h, np.nextafter(1 / 64 * h, 0), 200.0, 620.0]
    T = _testing.gap_decays(d, h, 2)
    u = d[:, None] / h
    e = _c_exp(-u)
    ref = e[..., None] * u[..., None] ** np.arange(3)
    near = u < 600
    assert np.max(np.abs(T[..., 0] - ref[..., 0])[near] / np.spacing(ref[..., 0][near])) <= 1.0
    # the powers by products: an ulp a factor
    np.testing.assert_allclose(T[near], ref[near], rtol=4e-16, atol=0)
    # far away, exp(k log d - d): the rounding of an argument near -600
    np.testing.assert_allclose(T[~near], ref[~near], rtol=1e-13, atol=0)
    assert T[0, :, 0].tolist() == [1.0] * 5 and not T[0, :, 1:].any()
    # exp(-d) alone (the default kernel's table with class bandwidths)
    E = _testing.gap_decays(d, h, 0)[..., 0]
    assert np.max(np.abs(E - ref[..., 0])[near] / np.spacing(ref[..., 0][near])) <= 1.0
    np.testing.assert_allclose(E[~near], ref[..., 0][~near], rtol=1e-13, atol=0)
    one = _testing.gap_decays(d, h[:1], 2)[:, 0]
    exact = _c_exp(-(d / h[0]))
    np.testing.assert_array_equal(one[d / h[0] < 600, 0], exact[d / h[0] < 600])


@pytest.mark.parametrize("linear, nbin", [(False, 0), (True, 300)])
def test_class_bandwidths_are_each_class_in_its_own_bandwidth(linear, nbin):
    """One pass carries every class in its own bandwidth (the journal's
    formulation). Each class's log densities must be what a pass with that
    bandwidth for all classes gives (R's one-bandwidth path, glibc's exp).
    The gaps straddle 1/64 of the bandwidths, where the class-bandwidth
    decays switch from their series to exp."""
    from pyopnb._core import passes as _passes

    rng = np.random.default_rng(11)
    K, n = 4, 3000
    h = np.array([0.3, 0.7, 1.1, 0.3])
    y = rng.integers(0, K, n).astype(np.int32)
    # spacings from 0 to 4/64 of the smallest bandwidth, and ties
    Zt = np.vstack([np.cumsum(rng.uniform(0.0, 4 / 64 * 0.3, n) * (rng.random(n) > 0.05)),
                    rng.normal(size=n)])
    Zt = Zt[:, rng.permutation(n)].copy()
    both = log_densities(Zt, y, K, h, nbin, 2)
    for k in range(K):
        alone = log_densities(Zt, y, K, np.full(K, h[k]), nbin, 2)[:, k]
        np.testing.assert_allclose(both[:, k], alone, rtol=1e-13, atol=0)
        # the gradient, with posteriors that make every c weight 0 but class
        # k's: only class k's sums and bandwidth enter it
        post = np.eye(K)[y]
        post[:, k] -= 0.5
        grad = log_density_gradient(Zt, post, y, K, h, nbin, 2)
        ref = log_density_gradient(Zt, post, y, K, np.full(K, h[k]), nbin, 2)
        np.testing.assert_allclose(grad, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
        assert np.abs(ref).max() > 0


@pytest.mark.parametrize("K", [2, 3, 4])
def test_grid_gradient_where_a_class_density_underflows(K):
    """Classes 1500 bandwidths apart: each class's density is exactly 0 at
    the other's grid points, where the c weights are 0 by definition. The
    gradient's two-at-a-time divisions (even and odd K) against the direct
    sums."""
    from pyopnb._core import r_grid as _grid

    rng = np.random.default_rng(K)
    n = 300
    y = (np.arange(n) % K).astype(np.int32)
    Zt = np.vstack([rng.normal(size=n) + 1500.0 * y, rng.normal(size=n)])
    PI = np.bincount(y) / n
    h = np.ones(K)
    value, post, dZ, scale = naive_r_binned(Zt, y, PI, h, 200)
    tables = _grid.RGridTables(2, y, K, h, 200, 1e-8, _BETA, True, 2).update(Zt)
    assert np.any(tables.S_simple == 0.0)
    v2, post2 = tables.value_and_posteriors(PI, True)
    dZ2 = tables.gradient(post2)
    assert np.all(np.isfinite(dZ2))
    np.testing.assert_allclose(dZ2, dZ, rtol=1e-10, atol=1e-13 * scale)


def test_remembered_sorts_serve_only_their_own_columns():
    """Exact sums too large to keep every column between the passes remember
    each column's last sort instead: the gradient pass of the value pass's
    Z copies those sorts, any other Z is sorted afresh. The same numbers as
    fresh scratch, as Z changes in one entry and its column count changes."""
    from pyopnb._core import passes as _passes

    rng = np.random.default_rng(11)
    n, K = 120_000, 4  # 5 columns' scratch is past what is kept (exact.pyx's KEEP_BYTES)
    y = (np.arange(n) % K).astype(np.int32)
    h = np.full(K, 0.7)
    work = column_scratch(y, K, h, 0, 1)
    post = rng.dirichlet(np.ones(K), size=n)
    Zt = rng.normal(size=(5, n))
    for step in range(4):
        if step == 2:
            Zt = Zt.copy()
            Zt[3, 17] += 0.25
        elif step == 3:
            Zt = rng.normal(size=(6, n))
        np.testing.assert_array_equal(_passes.log_densities(Zt, work),
                                      _passes.log_densities(Zt, column_scratch(y, K, h, 0, 1)))
        assert work.plan == "sorts"
        np.testing.assert_array_equal(_passes.log_density_gradient(Zt, post, work),
                                      _passes.log_density_gradient(Zt, post, column_scratch(y, K, h, 0, 1)))


def column_scratch(y, K, h, nbin, threads):
    """The exact column passes' scratch (nbin unused: 0)."""
    from pyopnb._core import exact

    return exact.ExactScratch(y, K, h, nbin, 0.0, _BETA, threads)


def log_densities(Zt, y, K, h, nbin, threads):
    """Each point's class log densities [n, K] of Zt: exact sums (nbin 0), or
    the paper's linear binning on nbin grid points."""
    from pyopnb._core import linear, passes as _passes

    if nbin:
        return linear.LinearGridTables(Zt.shape[0], y, K, h, nbin, 1e-8, _BETA, False, threads).update(
            np.ascontiguousarray(Zt)).log_densities()
    return _passes.log_densities(Zt, column_scratch(y, K, h, 0, threads))


def log_density_gradient(Zt, post, y, K, h, nbin, threads):
    """n dl/dZ [ndim, n] of Zt at the posteriors post, as log_densities."""
    from pyopnb._core import linear, passes as _passes

    if nbin:
        T = linear.LinearGridTables(Zt.shape[0], y, K, h, nbin, 1e-8, _BETA, True, threads)
        return T.update(np.ascontiguousarray(Zt)).gradient(np.ascontiguousarray(post)).copy()
    return _passes.log_density_gradient(Zt, post, column_scratch(y, K, h, 0, threads))


def test_column_scratch_reused_across_evaluations():
    """One scratch object serves a fit's evaluations: the same numbers as
    fresh scratch, for Z of 3, 1 and 6 columns in turn; Z of another
    problem, and a scratch with no column passes, are refused."""
    from pyopnb._core import passes as _passes

    rng = np.random.default_rng(5)
    n, K, ndim = 200, 3, 3
    y = (np.arange(n) % K).astype(np.int32)
    h = np.array([1.0, 1.0, 0.5])
    work = column_scratch(y, K, h, 0, 2)
    assert work.threads == 2
    for nd in (ndim, 1, ndim + 3):
        Zt = rng.normal(size=(nd, n))
        fresh = _passes.log_densities(Zt, column_scratch(y, K, h, 0, 2))
        np.testing.assert_array_equal(_passes.log_densities(Zt, work), fresh)
        post = np.full((n, K), 1.0 / K)
        np.testing.assert_array_equal(_passes.log_density_gradient(Zt, post, work),
                                      _passes.log_density_gradient(Zt, post, column_scratch(y, K, h, 0, 2)))
    # the value pass's columns serve the gradient of that Z only, and once
    A, B = rng.normal(size=(2, 2, n))
    post = rng.dirichlet(np.ones(K), size=n)
    for first, second in ((A, B), (A, A)):
        _passes.log_densities(first, work)
        for _ in range(2):
            np.testing.assert_array_equal(_passes.log_density_gradient(second, post, work),
                                          _passes.log_density_gradient(second, post, column_scratch(y, K, h, 0, 2)))
    with pytest.raises(ValueError, match="Zt must have 200 columns"):
        _passes.log_densities(Zt[:, :100].copy(), work)
    with pytest.raises(ValueError, match=r"post must be \(200, 3\)"):
        _passes.log_density_gradient(Zt, post[:, :2].copy(), work)
    with pytest.raises(TypeError, match="an ExactScratch"):
        _passes.log_densities(Zt, _passes.ColumnScratch(y, K, h, 40, 1e-8, _BETA, 2, False))
    with pytest.raises(ValueError, match="one bandwidth per class"):
        column_scratch(y, K, h[:2].copy(), 0, 2)


def grid_tables(Zt, p, nbin, gradient, threads):
    """R's binned densities of each column of Z' at its grid points, built."""
    from pyopnb._core import r_grid as _grid

    return _grid.RGridTables(Zt.shape[0], p.y0, p.K, p.h, nbin, 1e-8, _BETA, gradient, threads).update(Zt)


def test_grid_subset_values_are_the_objective_of_the_subsets():
    from pyopnb._core import project as _project
    from pyopnb.objective import check_problem

    V, X, y, PI = problem(5, n=300, d=6, ndim=5, K=4)
    p = check_problem(X, y, PI, np.ones(4))
    tables = grid_tables(_project.project(p.X, V, 2), p, 50, False, 2)
    got = tables.subset_values([3, 1], [0, 2, 4], PI)
    want = [f_NB_cpp(V[:, [3, 1, j]], X, y, PI, np.ones(4), nbin=50) for j in (0, 2, 4)]
    np.testing.assert_allclose(got, want, rtol=1e-14)
    assert tables.subset_values([], [2], PI)[0] == pytest.approx(
        f_NB_cpp(V[:, [2]], X, y, PI, np.ones(4), nbin=50), rel=1e-14)
    # the candidates' scaled rows are kept for one update only: another V's
    V2 = V + 0.3 * np.random.default_rng(6).normal(size=V.shape)
    tables.update(_project.project(p.X, V2, 2))
    got = tables.subset_values([3, 1], [0, 2, 4], PI)
    want = [f_NB_cpp(V2[:, [3, 1, j]], X, y, PI, np.ones(4), nbin=50) for j in (0, 2, 4)]
    np.testing.assert_allclose(got, want, rtol=1e-14)
    with pytest.raises(ValueError, match="column indices"):
        tables.subset_values([5], [0], PI)
    with pytest.raises(ValueError, match="without the gradient"):
        tables.gradient(np.zeros((300, 4)))
    with pytest.raises(ValueError, match="Zt must be"):
        tables.update(np.zeros((5, 10)))
    with pytest.raises(ValueError, match="PI must have K = 4"):
        tables.value_and_posteriors(np.zeros(3), False)


@pytest.mark.parametrize("kind", ["exact", "linear", "exact_r"])
@pytest.mark.parametrize("threads", [1, 2])
def test_column_passes_subset_values_are_each_subset_afresh(kind, threads):
    """The exact and linear passes' subset values go on from the chosen
    columns' products, kept from step to step: each is l of its subset
    evaluated afresh, to the bit, through R's greedy steps, after another
    Z, and out of order."""
    from pyopnb._core import evaluator as _evaluator, exact as _exact, linear as _linear, passes as _passes
    from pyopnb._core import project as _project
    from pyopnb.objective import check_problem

    V, X, y, PI = problem(8, n=400, d=6, ndim=5, K=3)
    p = check_problem(X, y, PI, np.ones(3))
    make = {"exact": lambda: _exact.ExactPasses(p.y0, p.h, PI, threads, _BETA),
            "exact_r": lambda: _exact.ExactPasses(p.y0, p.h, PI, threads, _BETA, True),
            "linear": lambda: _linear.LinearGrid(p.y0, p.h, PI, threads, 60, _BETA, 1e-8)}[kind]
    core = make()

    def afresh(Zt, chosen, candidates):
        return _evaluator.CoreEvaluator.subset_values(make(), Zt, chosen, candidates)

    for W in (V, V + 0.2 * np.random.default_rng(9).normal(size=V.shape)):
        Zt = _project.project(p.X, W, 1)
        core.evaluate(Zt, True)
        chosen, remaining = [], list(range(5))
        while remaining:
            got = core.subset_values(Zt, chosen, remaining)
            assert got == afresh(Zt, chosen, remaining)
            chosen.append(remaining.pop(int(np.argmax(got))))
        # the same step again, a step back, and chosen columns in another order
        assert core.subset_values(Zt, chosen[:3], [chosen[3]]) == afresh(Zt, chosen[:3], [chosen[3]])
        assert core.subset_values(Zt, chosen[:3], [chosen[4]]) == afresh(Zt, chosen[:3], [chosen[4]])
        assert core.subset_values(Zt, chosen[:1], chosen[1:]) == afresh(Zt, chosen[:1], chosen[1:])
        assert core.subset_values(Zt, chosen[1::-1], [4]) == afresh(Zt, chosen[1::-1], [4])
    with pytest.raises(ValueError, match="init must be"):
        _passes.class_products(Zt[:1].copy(), column_scratch(p.y0, 3, p.h, 0, 1),
                               (np.ones((400, 3)), np.zeros((3, 400))))


def _direct_subset_values(tables, base, candidates, logprior, y):
    """The subsets' l straight from the tables: a log-sum-exp per point (the
    base's log densities from its density tables, as subset_values takes
    them, the candidates' from their log tables)."""
    T = tables.logS_lin.reshape(tables.ndim, tables.nbin, -1)
    S = tables.S_lin.reshape(tables.ndim, tables.nbin, -1)
    n = tables.n
    rows = np.arange(n)
    cells = np.asarray(tables.cells)
    B = sum((np.log(S[t][cells[t]]) for t in base), np.zeros((n, T.shape[2])))
    out = []
    for j in candidates:
        v = logprior + B + T[j][cells[j]]
        mx = v.max(axis=1, keepdims=True)
        lse = mx[:, 0] + np.log(np.exp(v - mx).sum(axis=1))
        out.append(np.mean(v[rows, y] - lse))
    return np.array(out)


def test_grid_subset_values_where_base_and_candidate_disagree_by_far():
    """The factored log-sum-exp against the direct one, with tables edited so
    that the base and a candidate put points in different classes by up to
    2600 nats (the factored sum underflows past about 575): each point takes
    one path or the other, and both must give the direct value."""
    from pyopnb._core import project as _project
    from pyopnb.objective import check_problem

    V, X, y, PI = problem(11, n=400, d=5, ndim=4, K=3)
    p = check_problem(X, y, PI, np.ones(3))
    Zt = _project.project(p.X, V, 2)
    tables = grid_tables(Zt, p, 40, False, 2)
    logprior = np.log(PI)
    plain = tables.subset_values([0], [1, 2, 3], PI)
    np.testing.assert_allclose(plain, _direct_subset_values(tables, [0], [1, 2, 3], logprior, p.y0),
                               rtol=1e-13)
    # fresh tables, edited after their logs are made (asking for no candidate
    # makes them) and before any candidate's rows are scaled (once per update)
    tables = grid_tables(Zt, p, 40, False, 2)
    assert tables.subset_values([0], [], PI).size == 0
    T = tables.logS_lin.reshape(4, 40, 3)
    S = tables.S_lin.reshape(4, 40, 3)
    g = np.arange(40)
    S[0, :, 0] *= np.exp(34.0 * (g - 20))  # the base favours class 0 on the right
    T[2, :, 1] += 100.0 * (20 - g)  # a candidate favours class 1 on the left
    T[3, 5, :] = -np.inf  # a grid cell where no class has density
    # the factored sum of candidate 2: both paths taken
    cells = np.asarray(tables.cells)
    a = logprior + np.log(S[0][cells[0]])
    a = np.exp(a - a.max(axis=1, keepdims=True))
    E = T[2][cells[2]]
    E = np.exp(E - E.max(axis=1, keepdims=True))
    s = (a * E).sum(axis=1)
    assert 0 < np.sum(s < 1e-250) < len(s)
    got = tables.subset_values([0], [1, 2], PI)
    want = _direct_subset_values(tables, [0], [1, 2], logprior, p.y0)
    assert np.all(np.isfinite(want))
    np.testing.assert_allclose(got, want, rtol=1e-13)
    if np.any(cells[3] == 5):
        with np.errstate(invalid="ignore"):
            assert np.isnan(tables.subset_values([0], [3], PI)[0])


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_grid_subset_values_against_long_double_terms(weighted, threads):
    """subset_values' terms, unweighted as one product of the points'
    ratios a block (its fraction renormalised many times over 5000 points)
    and weighted as each point's log, against the direct log-sum-exp of
    the same tables in long double: within two units in the last place of
    l (a wrong power of two, a lost renormalisation or a point's weight
    left out would be off by far more)."""
    from pyopnb._core import project as _project
    from pyopnb._core import r_grid as _grid
    from pyopnb.objective import check_problem

    V, X, y, PI = problem(12, n=5000, d=5, ndim=4, K=3)
    p = check_problem(X, y, PI, np.ones(3))
    w = np.random.default_rng(13).uniform(0.5, 2.0, 5000) if weighted else None
    tables = _grid.RGridTables(4, p.y0, 3, p.h, 60, 1e-8, _BETA, False, threads, w).update(
        _project.project(p.X, V, threads))
    got = tables.subset_values([0, 2], [1, 3], PI)
    T = np.asarray(tables.logS_lin).reshape(4, 60, 3).astype(np.longdouble)
    S = np.asarray(tables.S_lin).reshape(4, 60, 3).astype(np.longdouble)
    cells = np.asarray(tables.cells)
    base = np.log(S[0][cells[0]]) + np.log(S[2][cells[2]])
    wl = np.ones(5000, dtype=np.longdouble) if w is None else w.astype(np.longdouble)
    want = []
    for j in (1, 3):
        v = np.log(PI.astype(np.longdouble)) + base + T[j][cells[j]]
        mx = v.max(axis=1, keepdims=True)
        terms = v[np.arange(5000), p.y0] - (mx[:, 0] + np.log(np.exp(v - mx).sum(axis=1)))
        want.append(float((wl * terms).sum() / wl.sum()))
    np.testing.assert_allclose(got, want, rtol=4e-16)


def test_grid_subset_values_have_one_threads_bits_on_two_call_after_call():
    """The greedy order's values on 2 threads, asked again and again, are
    the 1-thread values to the bit: each block's product of ratios is its
    own thread's (a renormalisation's exponent the threads once shared
    came out wrong about once in a hundred calls here)."""
    from pyopnb._core import project as _project
    from pyopnb._core import r_grid as _grid

    rng = np.random.default_rng(5)
    n, K = 300000, 10
    y = rng.integers(0, K, n).astype(np.int32)
    X = rng.normal(size=(n, 5)) + np.eye(K, 5)[y] * 0.2  # ratios near 1/K: many renormalisations
    Zt = _project.project(X, rng.normal(size=(5, 4)), 1)
    PI = np.bincount(y) / n
    h = np.full(K, 0.3)
    one = _grid.RGridTables(4, y, K, h, 300, 1e-8, _BETA, False, 1).update(Zt).subset_values([], [0, 1, 2, 3], PI)
    two = _grid.RGridTables(4, y, K, h, 300, 1e-8, _BETA, False, 2).update(Zt)
    for _ in range(60):
        np.testing.assert_array_equal(two.subset_values([], [0, 1, 2, 3], PI), one)


def test_r_column_statistics_are_long_double_sums_in_order():
    from pyopnb._core import colstats

    rng = np.random.default_rng(3)
    X = rng.normal(size=(501, 5)) * np.array([1e-8, 1.0, 1e3, 1e8, 3.0]) + 1e4
    for j in range(5):
        s = np.longdouble(0)
        for v in X[:, j]:
            s = s + np.longdouble(v)
        for threads in (1, 2, 3, 8):  # columns split among threads: each sum's order is fixed
            assert colstats.r_colmeans(X, threads)[j] == float(s / 501)
    Xc = X - colstats.r_colmeans(X, 2)
    xl = Xc[:, 2].astype(np.longdouble)
    m = np.longdouble(0)
    for v in xl:
        m = m + v
    m = m / 501
    r = np.longdouble(0)
    for v in xl:
        r = r + (v - m)
    m = np.longdouble(float(m + r / 501))  # R keeps the mean as a double
    ss = np.longdouble(0)
    for v in xl:
        ss = ss + (v - m) * (v - m)
    for threads in (1, 2, 7):
        assert colstats.r_sd(Xc, threads)[2] == np.sqrt(float(ss / 500))
    with pytest.raises(ValueError, match="two rows"):
        colstats.r_sd(Xc[:1], 1)


def test_tiny_gradient_against_a_coarser_difference():
    # the example hypothesis found: the gradient is 2e-6 and the step-1e-6
    # difference is noisy; a step of 1e-4 pins the analytic value
    V, X, y, PI = problem(1783, 5, 1, 1, 2)
    h = np.array([0.3125, 0.3125])
    _, g = objective_and_gradient(V, X, y, PI, h)
    num = numerical_gradient(V, X, y, PI, h, None, step=1e-4)
    np.testing.assert_allclose(g, num, rtol=1e-6)


def _products_rows(rng, n):
    """Class densities as running products (pr, acc) with every kind of row:
    whole products, closed ones (acc != 0), a class density 0, a row's class
    over 700 nats behind the others, and a row whose classes are all 0."""
    pr = np.exp(rng.normal(size=(n, 3)) * 4)
    acc = np.zeros((n, 3))
    acc[5, 1] = -900.0  # a product closed far below the smallest double
    acc[6, :] = [-750.0, -751.0, -749.5]  # every class closed: the row still has posteriors
    pr[7, 2] = 0.0  # a class density 0 (its product closed at 0)
    acc[7, 2] = -3.0
    pr[8] = [1e-280, 1e280, 1.0]  # the second class wins by 1290 nats: a ratio below DBL_MIN
    pr[9] = 0.0  # no class has density: -inf and NaN
    acc[9] = -5.0
    return pr, acc


def _log_space(pr, acc, y, PI):
    """The row terms and posteriors in log space, numpy's way."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lj = np.log(PI) + acc + np.log(pr)
        lse = np.logaddexp.reduce(lj, axis=1)
        return lj[np.arange(len(y)), y] - lse, np.exp(lj - lse[:, None])


@pytest.mark.parametrize("threads", [1, 2])
def test_posteriors_from_products_are_the_log_space_ones(threads):
    """product_posteriors combines whole products as they are and takes the
    logs of the rest: either way the log-space numbers, row by row."""
    from pyopnb._core import posteriors as _posteriors

    rng = np.random.default_rng(3)
    n = 57
    pr, acc = _products_rows(rng, n)
    y = rng.integers(0, 3, n).astype(np.intc)
    y[7], y[8] = 2, 0  # the class of density 0; the class far behind
    PI = np.array([0.2, 0.3, 0.5])
    value, post = _posteriors.product_posteriors(pr, acc, y, PI, threads)
    terms, expected = _log_space(pr, acc, y, PI)
    assert np.isnan(value)  # row 9: 0 / 0
    ok = np.isfinite(terms)
    assert ok.sum() == n - 2
    rows = np.array([_posteriors.product_posteriors(pr[i:i + 1], acc[i:i + 1], y[i:i + 1], PI, 1)[0]
                     for i in range(n)])
    assert np.isneginf(rows[7]) and np.isnan(rows[9])  # its own class's density 0; every class's
    np.testing.assert_allclose(rows[ok], terms[ok], rtol=1e-13, atol=1e-13)
    assert rows[8] == pytest.approx(np.log(0.2 * 1e-280) - np.log(0.3 * 1e280), rel=1e-14)
    np.testing.assert_allclose(post[:9], expected[:9], rtol=1e-12, atol=1e-300)
    assert post[7, 2] == 0.0 and np.isnan(post[9]).all()
    np.testing.assert_allclose(post[:9].sum(axis=1), 1.0, rtol=1e-14)
    with pytest.raises(ValueError, match="PI must have 3"):
        _posteriors.product_posteriors(pr, acc, y, PI[:2], threads)
    with pytest.raises(ValueError, match="acc must be"):
        _posteriors.product_posteriors(pr, acc[:3], y, PI, threads)


@pytest.mark.parametrize("threads", [1, 2])
def test_value_with_other_priors_comes_from_the_same_pass(threads):
    """R's exact value squares the priors and its gradient does not: one
    pass gives the value with the one and the posteriors with the other,
    each to the bit of a pass of its own."""
    from pyopnb._core import posteriors as _posteriors

    rng = np.random.default_rng(3)
    pr, acc = _products_rows(rng, 57)
    pr[9], acc[9] = 1.0, 0.0
    y = rng.integers(0, 3, 57).astype(np.intc)
    PI = np.array([0.2, 0.3, 0.5])
    value, post = _posteriors.product_posteriors(pr, acc, y, PI, threads, PI * PI)
    squared, _ = _posteriors.product_posteriors(pr, acc, y, PI * PI, threads)
    plain, plain_post = _posteriors.product_posteriors(pr, acc, y, PI, threads)
    assert np.isfinite(value) and value == squared and value != plain
    assert post.tobytes() == plain_post.tobytes()
    np.testing.assert_allclose(post.sum(axis=1), 1.0, rtol=1e-14)
    with pytest.raises(ValueError, match="value_PI must have 3"):
        _posteriors.product_posteriors(pr, acc, y, PI, threads, PI[:2])


@pytest.mark.parametrize("mode, nbin", [("exact", 0), ("linear", 50)])
def test_densities_multiplied_over_columns_never_underflow(mode, nbin):
    """Classes 30 bandwidths apart in each of 40 columns: a point's density
    under the other class is about e^-30 a column, e^-1200 over all of them,
    far below the smallest double, and one column moves five points of
    class 1 900 bandwidths further (class 0's density exactly 0 there). The log of the product must be the sum of the columns'
    logs (each column alone: one factor, no product), and -inf where a
    factor is 0."""
    from pyopnb._core import passes as _passes

    rng = np.random.default_rng(3)
    n, K, ndim = 80, 2, 40
    y = (np.arange(n) % K).astype(np.int32)
    Zt = rng.normal(size=(ndim, n)) + 30.0 * y
    Zt[7, 1:10:2] += 870.0
    h = np.ones(K)
    nb = nbin if mode == "linear" else 0
    both = log_densities(Zt, y, K, h, nb, 1)
    alone = sum(log_densities(Zt[t:t + 1].copy(), y, K, h, nb, 1) for t in range(ndim))
    assert np.all(both[y == 0, 1] < -1000) and np.all(both[y == 1, 0] < -1000)
    finite = np.isfinite(alone)
    assert np.sum(~finite) == 5
    np.testing.assert_array_equal(np.isfinite(both), finite)
    np.testing.assert_allclose(both[finite], alone[finite], rtol=1e-14)
    assert np.all(both[~finite] == -np.inf)
    # the same products on two threads and in waves: the same bits
    np.testing.assert_array_equal(log_densities(Zt, y, K, h, nb, 3), both)


def test_r_binned_value_multiplies_the_tables_over_columns():
    """R's binned value (RGridTables) from products of its density tables at
    the points' cells, where those products underflow: the direct sum of logs."""
    from pyopnb._core import r_grid as _grid

    rng = np.random.default_rng(4)
    n, K, ndim = 90, 3, 30
    y = (np.arange(n) % K).astype(np.int32)
    Zt = rng.normal(size=(ndim, n)) + 40.0 * y
    h = np.ones(K)
    PI = np.bincount(y) / n
    tables = _grid.RGridTables(ndim, y, K, h, 60, 1e-8, _BETA, True, 2).update(Zt)
    value, post = tables.value_and_posteriors(PI, True)
    cells = np.asarray(tables.cells)
    for S, got in ((tables.S_lin, None), (tables.S_simple, post)):
        S = S.reshape(ndim, 60, K)
        logf = sum(np.log(S[t][cells[t]]) for t in range(ndim))
        assert np.all(logf[y == 0, 2] < -1000)
        v = np.log(PI) + logf
        mx = v.max(axis=1, keepdims=True)
        lse = mx[:, 0] + np.log(np.exp(v - mx).sum(axis=1))
        if got is None:
            assert value == pytest.approx(np.mean(v[np.arange(n), y] - lse), rel=1e-13)
        else:
            np.testing.assert_allclose(got, np.exp(v - lse[:, None]), rtol=1e-12, atol=1e-300)


def test_former_behaviour_names_warn_and_give_the_formulation():
    """The plumbing names objective.py exported before each formulation made
    its own evaluator: still importable, with a FutureWarning, each giving
    the formulation whose objective it named."""
    import pyopnb.objective as objective
    from pyopnb.formulation import CorrectFormulation, Formulation, JournalFormulation, RFormulation

    for name, want in (("R_BEHAVIOUR", RFormulation), ("CORRECT_BEHAVIOUR", CorrectFormulation),
                       ("INTERPOLATED_BEHAVIOUR", JournalFormulation)):
        with pytest.warns(FutureWarning, match=f"objective.{name} is deprecated"):
            got = getattr(objective, name)
        assert type(got) is want
    with pytest.warns(FutureWarning):
        assert objective.Behaviour is Formulation
    with pytest.raises(AttributeError, match="no attribute 'Workspace'"):
        objective.Workspace


def test_an_evaluator_reads_the_tables_of_the_V_it_is_asked_about():
    """R's binned greedy order after an evaluation at another V: the evaluator
    rebuilds its tables at the V it orders (the order of a fresh evaluator)."""
    from pyopnb.evaluation import check_problem
    from pyopnb.formulation import RFormulation

    V, X, y, PI = problem(8, n=300, d=6, ndim=4, K=3)
    p = check_problem(X, y, PI, np.ones(3))
    V2 = V[:, ::-1] * np.array([1.0, -2.0, 0.5, 3.0])
    ev = RFormulation().evaluator(p, 50, 2)
    ev.value_and_grad(V2)
    stale = list(ev.core.subset_values(ev._Zt, [], list(range(4))))  # what V2's tables say
    got = ev.order_columns(V)
    # the greedy order by definition: each step the subset whose R binned value is largest
    chosen, remaining = [], list(range(4))
    while remaining:
        vals = [f_NB_cpp(V[:, chosen + [j]], X, y, PI, np.ones(3), nbin=50) for j in remaining]
        chosen.append(remaining.pop(int(np.argmax(vals))))
    assert got == chosen
    alone = [f_NB_cpp(V[:, [j]], X, y, PI, np.ones(3), nbin=50) for j in range(4)]
    assert int(np.argmax(stale)) != int(np.argmax(alone))  # V2's tables would have chosen another first column
    # and its own last V's tables serve as they are
    ev.value_and_grad(V)
    assert ev.order_columns(V) == RFormulation().evaluator(p, 50, 1).order_columns(V)
    with pytest.raises(TypeError, match="core must be"):
        type(ev)(p, object(), 50, 2)


def test_the_greedy_order_asks_no_values_of_the_last_candidate():
    """R's greedy order takes the best candidate at each step; the last one
    left comes last whatever its value, so it is not evaluated (a pass over
    the points saved), and the order is the one that asks every step."""
    from pyopnb.evaluation import greedy

    score = {0: 1.0, 1: 3.0, 2: 2.0, 3: 3.0}  # ties go to the first
    asked = []

    def values(chosen, remaining):
        asked.append((list(chosen), list(remaining)))
        return [score[j] + 0.1 * len(chosen) for j in remaining]

    assert greedy(4, values) == [1, 3, 2, 0]
    assert asked == [([], [0, 1, 2, 3]), ([1], [0, 2, 3]), ([1, 3], [0, 2])]
    assert greedy(1, values) == [0] and len(asked) == 3
