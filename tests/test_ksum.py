"""fk_sum: exact sums against naive ones, binned against exact, bad input."""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyopnb.validation.naive import naive_fk_sum
from pyopnb import fk_sum, kernel_integral


def test_single_point_matches_spec_example():
    # SPEC: x = 0.3, omega = 2, h = 1, e = -1 gives ksum 0.3134, dksum -0.1771
    both = fk_sum([0.3], [2.0], 1.0, [-1.0], type="both")
    assert both.shape == (1, 2)
    assert both[0, 0] == pytest.approx(2 * (1 + 1.3) * math.exp(-1.3) / 4, rel=1e-15)
    assert both[0, 1] == pytest.approx(-2 * 1.3 * math.exp(-1.3) / 4, rel=1e-15)


def test_far_gap_is_tiny_not_nan():
    # FKSUM returns NaN here (SPEC defect 6); the true value is about 9.4e-43
    v = fk_sum([0.0, 1.0, 10.0], [1.0, 1.0, 1.0], 0.001, [0.9])[0]
    ref = naive_fk_sum([0.0, 1.0, 10.0], [1.0] * 3, 0.001, [0.9])[0][0]
    assert np.isfinite(v) and v > 0
    assert v == pytest.approx(ref, rel=1e-13)
    assert v == pytest.approx(101 * math.exp(-100) / 4, rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_wide_spread_small_bandwidth_relative_accuracy(seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1e4, 1e4, 400)
    # clusters so that many sums are not just the point's own term
    x[:200] = rng.uniform(-0.05, 0.05, 200)
    w = rng.uniform(0.1, 1.0, x.size)
    e = np.r_[x[::7], rng.uniform(-1e4, 1e4, 50), rng.uniform(-0.06, 0.06, 50)]
    S, D, _, aD = naive_fk_sum(x, w, 1e-3, e)
    got = fk_sum(x, w, 1e-3, e, type="both")
    pos = S > 1e-290
    assert pos.sum() > 100
    assert np.max(np.abs(got[pos, 0] - S[pos]) / S[pos]) < 1e-13
    okd = aD > 1e-290
    assert np.max(np.abs(got[okd, 1] - D[okd]) / aD[okd]) < 1e-13


def test_evaluation_at_sample_keeps_order_and_ties():
    x = np.array([0.5, -1.0, 0.5, 2.0, 0.5])
    w = np.array([1.0, 2.0, -0.5, 0.25, 0.0])
    beta = (1.0,)  # Laplace kernel: dksum at a tie depends on the tie rule
    S, D, _, _ = naive_fk_sum(x, w, 0.7, x, beta)
    got = fk_sum(x, w, 0.7, beta=beta, type="both")
    np.testing.assert_allclose(got[:, 0], S, rtol=1e-14)
    np.testing.assert_allclose(got[:, 1], D, rtol=1e-14, atol=1e-15)
    # a sample at the evaluation point counts as on the left: omega (beta_0 - beta_1)
    assert fk_sum([1.0], [3.0], 1.0, [1.0], beta=(1.0,), type="dksum")[0] == pytest.approx(3.0)


@pytest.mark.parametrize("r", [1, 2, 3])
@pytest.mark.parametrize("n", [1, 2, 3, 8, 9, 301])
def test_one_thread_sweep_has_the_passes_bits(n, r):
    """On one thread the default kernel's sums at the sample run as one
    sweep (_sweep.h: both passes at once, evaluating as they meet); on two,
    as the forward and backward passes and then the evaluation. The same
    operations: the same bits, with ties, far gaps and an odd number of
    weight columns."""
    from pyopnb import _ksum
    from pyopnb.ksum import DEFAULT_BETA

    rng = np.random.default_rng(10 * n + r)
    x = rng.normal(size=n)
    x[: n // 3] = np.round(x[: n // 3])
    x[n // 2:] += 3000.0  # thousands of bandwidths from the rest
    W = rng.normal(size=(n, r))
    one = _ksum.exact_sums(x, W, 0.3, DEFAULT_BETA, None, True, True, False, 1)
    two = _ksum.exact_sums(x, W, 0.3, DEFAULT_BETA, None, True, True, False, 2)
    for a, b in zip(one, two):
        assert a.shape == (n, r)
        assert a.tobytes() == b.tobytes()
    S, D, _, _ = naive_fk_sum(x, W[:, 0], 0.3, x)
    np.testing.assert_allclose(one[0][:, 0], S, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(one[1][:, 0], D, rtol=1e-12, atol=1e-12)


xs_strategy = st.lists(
    st.one_of(
        st.floats(-5, 5, allow_nan=False),
        st.sampled_from([0.0, 1.0, -2.5, 1000.0]),  # ties, duplicates and far gaps
    ),
    min_size=1,
    max_size=300,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    x=xs_strategy,
    data=st.data(),
    h=st.floats(1e-3, 1e3),
    order=st.integers(0, 4),
    positive=st.booleans(),
)
def test_exact_equals_naive(x, data, h, order, positive):
    n = len(x)
    wlo = 0.0 if positive else -2.0
    w = data.draw(st.lists(st.one_of(st.just(0.0), st.floats(wlo, 2.0)), min_size=n, max_size=n))
    beta = data.draw(st.lists(st.floats(0.0 if positive else -1.0, 1.0), min_size=order + 1, max_size=order + 1))
    e = data.draw(
        st.lists(
            st.one_of(st.sampled_from(x), st.floats(-1e4, 1e4), st.floats(-6, 6)),
            min_size=0,
            max_size=40,
        )
    )
    S, D, aS, aD = naive_fk_sum(x, w, h, e, beta)
    got = fk_sum(x, w, h, e, beta=beta, type="both")
    assert got.shape == (len(e), 2)
    # error relative to the sum of absolute terms: exact for positive weights
    tol = 1e-13 if positive else 1e-12
    floor = 1e-300
    assert np.all(np.abs(got[:, 0] - S) <= tol * aS + floor)
    assert np.all(np.abs(got[:, 1] - D) <= tol * aD + floor)
    at_sample = fk_sum(x, w, h, beta=beta, type="both")
    S2, D2, aS2, aD2 = naive_fk_sum(x, w, h, x, beta)
    assert np.all(np.abs(at_sample[:, 0] - S2) <= tol * aS2 + floor)
    assert np.all(np.abs(at_sample[:, 1] - D2) <= tol * aD2 + floor)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), h=st.floats(0.05, 2.0))
def test_binned_approaches_exact(seed, h):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=200)
    w = rng.uniform(0, 1, 200)
    e = np.r_[x[:50], rng.uniform(x.min(), x.max(), 50)]
    exact = fk_sum(x, w, h, e, type="both")
    errs = [np.max(np.abs(fk_sum(x, w, h, e, nbin=nb, type="both") - exact)) for nb in (50, 400, 3200)]
    assert errs[2] < errs[1] < errs[0]
    assert errs[2] < 1e-3 * np.max(np.abs(exact))


def test_binned_outside_grid_is_the_sum_of_the_binned_weights():
    rng = np.random.default_rng(3)
    x = rng.normal(size=250)
    w = rng.uniform(0, 1, 250)
    nbin = 200
    # FKSUM's grid after centring; the binned weights it sums
    c = x.mean()
    lo, hi = x.min() - c - 1e-5, x.max() - c + 1e-5
    delta = (hi - lo) / (nbin - 1)
    grid = lo + np.arange(nbin) * delta
    pos = (x - c - lo) / delta
    a = np.floor(pos).astype(int)
    frac = pos - a
    gw = np.bincount(a, w * (1 - frac), nbin) + np.bincount(a + 1, w * frac, nbin)
    e = np.array([x.min() - 3, x.max() + 3, x.min() - 50, 0.1, x.max() + 1e-6])
    S, D, _, _ = naive_fk_sum(grid + c, gw, 0.5, e)
    got = fk_sum(x, w, 0.5, e, nbin=nbin, type="both")
    np.testing.assert_allclose(got[:, 0], S, rtol=1e-12)
    np.testing.assert_allclose(got[:, 1], D, rtol=1e-11, atol=1e-14)
    # fewer evaluation points than bins (FKSUM clamps bin indices there: SPEC defect 5)
    e40 = np.linspace(x.min(), x.max(), 40)
    np.testing.assert_allclose(fk_sum(x, w, 0.5, e40, nbin=nbin), fk_sum(x, w, 0.5, e40), rtol=1e-3)


def test_kernel_integral_and_density():
    assert kernel_integral() == pytest.approx(1.0)
    assert kernel_integral([0.1, 0.2, 0.3, 0.4]) == pytest.approx(2 * (0.1 + 0.2 + 0.6 + 2.4))
    rng = np.random.default_rng(0)
    x = rng.normal(size=500)
    grid = np.linspace(-8, 8, 4001)
    dens = fk_sum(x, np.full(500, 1 / (500 * 0.3)), 0.3, grid)
    assert np.trapezoid(dens, grid) == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("beta", [(0.25, 0.25), (0.1, 0.3, 0.2), (0.5,), (0.0, 0.0, 1.0)])
def test_kernel_and_its_derivative_are_fk_sums_of_one_point(beta):
    """kernel and kernel_derivative at u are fk_sum's and its derivative's
    sum over one sample point at 0, weight 1, bandwidth 1, evaluated at u,
    against the naive, exactly rounded terms; the derivative against
    central differences of the kernel too."""
    from pyopnb.ksum import kernel, kernel_derivative

    u = np.r_[np.linspace(-12.0, 12.0, 97), 0.0, -1e-9, 1e-9]
    S, D, _, _ = naive_fk_sum([0.0], [1.0], 1.0, u, beta=beta)
    # fk_sum's S(e) sums K((e - x) / h), its D K'((x - e) / h): -K'(u) here,
    # but at u = 0, where K' has no value unless beta_1 = beta_0 (kernel_derivative
    # gives 0, the mean of its two sides there)
    np.testing.assert_allclose(kernel(u, beta), S, rtol=4e-15, atol=1e-300)
    np.testing.assert_allclose(kernel_derivative(u, beta)[u != 0], -D[u != 0], rtol=4e-14, atol=1e-16)
    assert kernel_derivative([0.0], beta)[0] == 0.0
    both = fk_sum([0.0], [1.0], 1.0, u, beta=beta, type="both")
    np.testing.assert_allclose(kernel(u, beta), both[:, 0], rtol=1e-13, atol=1e-300)
    step = 1e-6
    away = np.abs(u) > 1e-3  # K' jumps at 0 where beta_1 != beta_0
    central = (kernel(u + step, beta) - kernel(u - step, beta)) / (2 * step)
    np.testing.assert_allclose(kernel_derivative(u, beta)[away], central[away], rtol=1e-7, atol=1e-10)
    assert kernel(np.zeros((2, 3)), beta).shape == (2, 3)
    with pytest.raises(ValueError, match="beta"):
        kernel(u, [np.nan])


def test_kernel_examples_run():
    """pyopnb.ksum.kernel's and kernel_derivative's docstring examples (not
    in the top-level API, whose examples test_docs runs)."""
    import doctest

    from pyopnb import ksum

    runner = doctest.DocTestRunner()
    for fn in (ksum.kernel, ksum.kernel_derivative):
        tests = doctest.DocTestFinder().find(fn)
        assert tests and tests[0].examples
        for t in tests:
            runner.run(t)
    assert runner.failures == 0


def test_types_and_shapes():
    x = [0.0, 1.0, 2.0]
    w = [1.0, 1.0, 1.0]
    s = fk_sum(x, w, 1.0)
    d = fk_sum(x, w, 1.0, type="dksum")
    b = fk_sum(x, w, 1.0, type="both")
    np.testing.assert_array_equal(b[:, 0], s)
    np.testing.assert_array_equal(b[:, 1], d)
    assert fk_sum(x, w, 1.0, x_eval=[]).shape == (0,)
    assert fk_sum(np.array(x, dtype=np.float32), np.array([1, 1, 1], dtype=np.int64), 1).dtype == np.float64


def test_accepts_pandas_series():
    pd = pytest.importorskip("pandas", reason="pandas is not installed")
    x = pd.Series([0.0, 1.0, 2.0], index=[10, 20, 30])
    np.testing.assert_allclose(fk_sum(x, pd.Series([1.0, 2.0, 3.0]), 0.5), fk_sum([0.0, 1.0, 2.0], [1, 2, 3], 0.5))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(x=[0.0, np.nan], omega=[1, 1], h=1), "x contains NaN"),
        (dict(x=[0.0, 1.0], omega=[1, np.inf], h=1), "omega contains NaN"),
        (dict(x=[0.0, 1.0], omega=[1, 1], h=1, x_eval=[np.nan]), "x_eval contains NaN"),
        (dict(x=[0.0, 1.0], omega=[1, 1], h=0), "h must be positive"),
        (dict(x=[0.0, 1.0], omega=[1, 1], h=-1), "h must be positive"),
        (dict(x=[0.0, 1.0], omega=[1, 1], h=np.inf), "h must be positive"),
        (dict(x=[0.0, 1.0], omega=[1], h=1), "omega has length 1"),
        (dict(x=[], omega=[], h=1), "x must not be empty"),
        (dict(x=[0.0, 1.0], omega=[1, 1], h=1, nbin=1), "nbin must be at least 2"),
        (dict(x=[0.0, 1.0], omega=[1, 1], h=1, nbin=2.5), "nbin must be None or an integer"),
        (dict(x=[0.0, 1.0], omega=[1, 1], h=1, beta=[]), "beta must be a non-empty"),
        (dict(x=[0.0, 1.0], omega=[1, 1], h=1, beta=[[0.25, 0.25]]), "beta must be a non-empty 1-D"),
        (dict(x=[0.0, 1.0], omega=[1, 1], h=1, type="density"), "type must be"),
        (dict(x=[[0.0, 1.0]], omega=[1, 1], h=1), "x must be one-dimensional"),
        (dict(x=["a", "b"], omega=[1, 1], h=1), "x must be numeric"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        fk_sum(**kwargs)


@pytest.mark.parametrize("n", [1, 2, 17, 150, 2047, 2048, 2049, 65535, 65536, 65537, 3 * 65536 + 5, 300_001])
def test_radix_argsort_is_numpys_stable_argsort(n):
    # sizes around the chunk length exercise the merge-path split of the last merges
    from pyopnb._core.testing import argsort

    rng = np.random.default_rng(n)
    x = np.round(rng.standard_normal(n), 2)  # many ties
    x[::5] = -0.0  # -0 and 0 tie, as for numpy
    x[1::5] = 0.0
    x[2::97] = np.array([-1e308, 1e308, 5e-324, -5e-324])[np.arange(x[2::97].size) % 4]
    want = np.argsort(x, kind="stable")
    for threads in (1, 2, 3, 16):  # merge pieces depend on the threads, the order must not
        np.testing.assert_array_equal(argsort(x, threads), want)


@pytest.mark.parametrize("n", [2049, 100_003, (1 << 18) + 1])
@pytest.mark.parametrize("shape", ["spread", "outlier", "tiny range", "constant", "infinite"])
def test_one_thread_argsort_is_numpys_stable_argsort(n, shape):
    """One thread's sort ranks the keys by value in two or three radix passes
    (n past 2^18: three), then puts each rank's keys in order; keys that do
    not spread (an outlier that crowds the rest into a few ranks, a range
    too small to scale, one value, an infinity) go to the full radix sort.
    Every case is the stable order, ties and -0 == 0 included."""
    from pyopnb._core.testing import argsort

    rng = np.random.default_rng(n)
    x = np.round(rng.standard_normal(n), 3)  # ties
    x[::11] = -0.0
    x[1::11] = 0.0
    if shape == "outlier":
        x[n // 2] = 1e300
    elif shape == "tiny range":
        x = 5e-324 * rng.integers(0, 3, n)
    elif shape == "constant":
        x[:] = 2.5
    elif shape == "infinite":
        x[7] = -np.inf
    want = np.argsort(x, kind="stable")
    np.testing.assert_array_equal(argsort(x, 1), want)


@pytest.mark.parametrize("n", [1, 3, 150, 2048, 5000])
def test_remembered_argsort_is_the_stable_argsort(n):
    """The sort that remembers a column's last sort: keys the same to the bit
    take the remembered order (and it must be theirs); keys that differ in
    one place, or by -0 for 0, are sorted again, and remembered."""
    from pyopnb._core.testing import argsort_memo

    rng = np.random.default_rng(n)
    x = np.round(rng.standard_normal(n), 1)  # ties, broken by index as the stable sort does
    x[::7] = -0.0
    memo_x, memo_xs = np.empty(n), np.empty(n)
    memo_order = np.full(n, -1, dtype=np.intp)
    for step in range(6):
        want = np.argsort(x, kind="stable")
        order, xs = argsort_memo(x, memo_x, memo_order, memo_xs)
        np.testing.assert_array_equal(order, want)
        np.testing.assert_array_equal(xs, x[want])
        np.testing.assert_array_equal(memo_order, want)
        np.testing.assert_array_equal(memo_x, x)
        if step in (1, 3):  # the same keys again
            continue
        x = x.copy()
        if step == 4:
            x[np.signbit(x) & (x == 0)] = 0.0  # -0 to 0: equal as numbers, not as bits; sorted again
        else:
            x[(step * 5) % n] = x.min() - 1.0  # one key moves to the front


@pytest.mark.parametrize("log_S", [True, False])
def test_class_sums_are_the_pairs_exact_sums(log_S):
    """class_sums (every class's densities in every column, the naive Bayes
    core) against exact_sums called for each (column, class) with weights
    1/(n_k h), added or multiplied in column order: the same bits. Ties, a
    test point on a training point, class bandwidths."""
    from pyopnb import _ksum
    from pyopnb.ksum import DEFAULT_BETA

    rng = np.random.default_rng(8)
    n, m, ncol, K = 70, 45, 3, 3
    y = rng.integers(0, K, n)
    y[:K] = np.arange(K)
    Ztr = rng.normal(size=(n, ncol))
    Ztr[1] = Ztr[0]
    Zte = 2.0 * rng.normal(size=(m, ncol))
    Zte[0] = Ztr[0]
    H = rng.uniform(0.1, 2.0, size=(K, ncol))
    got = _ksum.class_sums(Ztr, y.astype(np.intp), K, H, Zte, DEFAULT_BETA, log_S, 2)
    want = np.zeros((m, K)) if log_S else np.ones((m, K))
    for k in range(K):
        for t in range(ncol):
            x = np.ascontiguousarray(Ztr[y == k, t])
            w = np.full((x.size, 1), 1.0 / (x.size * H[k, t]))
            S, _ = _ksum.exact_sums(x, w, H[k, t], DEFAULT_BETA, np.ascontiguousarray(Zte[:, t]), True, False,
                                    log_S, 1)
            want[:, k] = want[:, k] + S[:, 0] if log_S else want[:, k] * S[:, 0]
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="class 1 has no training points"):
        _ksum.class_sums(Ztr, np.where(y == 1, 0, y).astype(np.intp), K, H, Zte, DEFAULT_BETA, log_S, 1)
    with pytest.raises(ValueError, match="class codes 0..2"):
        _ksum.class_sums(Ztr, np.where(y == 1, 3, y).astype(np.intp), K, H, Zte, DEFAULT_BETA, log_S, 1)
    with pytest.raises(ValueError, match="H"):
        _ksum.class_sums(Ztr, y.astype(np.intp), K, H[:, :2].copy(), Zte, DEFAULT_BETA, log_S, 1)
