"""The fixed-order linear algebra (pyopnb._core.linalg): each result against a
reference summed in the stated order, on every vector path and thread
count; the Jacobi eigensolver against numpy's to rounding, with its sign
convention. Bit-equality with R's own cov, crossprod and sums is checked
live in validation/ (base R)."""
import math

import numpy as np
import pytest

from pyopnb._core import colstats, linalg as _linalg


def _in_row_order(A, B):
    """A'B with every entry added over the rows in order (elementwise adds are exact steps)."""
    C = np.zeros((A.shape[1], B.shape[1]))
    for i in range(A.shape[0]):
        C = C + A[i][:, None] * B[i][None, :]
    return C


@pytest.mark.parametrize("n, p, q", [(1, 1, 1), (5, 3, 1), (513, 7, 3), (1100, 9, 17), (2000, 2, 20), (300, 13, 33)])
def test_crossproduct_sums_rows_in_order_on_every_path_and_thread_count(every_path, n, p, q):
    rng = np.random.default_rng(n + p + q)
    A, B = rng.normal(size=(n, p)) * 10.0 ** rng.integers(-3, 4, p), rng.normal(size=(n, q))
    ref = _in_row_order(A, B)
    for results in every_path(lambda: [_linalg.crossprod(A, B, t) for t in (1, 2, 3, 8)]):
        for got in results:
            np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(_linalg.crossprod_t(A, np.ascontiguousarray(B.T), 2), ref)


def test_crossproduct_refuses_mismatched_rows():
    with pytest.raises(ValueError, match="rows"):
        _linalg.crossprod_t(np.zeros((3, 2)), np.zeros((2, 4)), 1)
    assert _linalg.crossprod(np.zeros((0, 2)), np.zeros((0, 3)), 1).shape == (2, 3)


def test_a_bad_vector_path_setting_is_an_error(monkeypatch):
    monkeypatch.setenv("PYOPNB_SIMD", "avx9")
    with pytest.raises(ValueError, match="PYOPNB_SIMD must be one of sse2, avx2, avx512"):
        _linalg.crossprod(np.ones((2, 2)), np.ones((2, 2)), 1)


def test_matmul_sums_the_inner_index_in_order():
    rng = np.random.default_rng(2)
    A, B = rng.normal(size=(6, 40)), rng.normal(size=(40, 5))
    ref = np.zeros((6, 5))
    for k in range(40):
        ref = ref + A[:, [k]] * B[[k], :]
    np.testing.assert_array_equal(_linalg.matmul(A, B, 2), ref)
    with pytest.raises(ValueError, match="matmul needs"):
        _linalg.matmul(A, A)


def test_R_sums_accumulate_in_long_double_in_order():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(50, 4)) * 1e10
    X[0] = 1e30  # large terms that a double sum would lose the rest beside
    ld = X.astype(np.longdouble)
    cols = [np.longdouble(0)] * 4
    for i in range(50):
        cols = [c + v for c, v in zip(cols, ld[i])]
    np.testing.assert_array_equal(colstats.r_colsums(X), np.array(cols, dtype=np.float64))
    rows = np.array([sum(ld[i, j] for j in range(4)) for i in range(50)], dtype=np.float64)
    np.testing.assert_array_equal(colstats.r_rowsums(X), rows)
    total = np.longdouble(0)
    for v in X.ravel():
        total += np.longdouble(v)
    assert colstats.r_sum(X.ravel()) == float(total)
    np.testing.assert_array_equal(colstats.col_norms(X), np.sqrt(colstats.r_colsums(X * X)))


def _naive_r_cov(X):
    """R's cov.c, one long-double operation at a time."""
    n, d = X.shape
    ld = X.astype(np.longdouble)
    m = []
    for j in range(d):
        s = np.longdouble(0)
        for v in ld[:, j]:
            s += v
        t = s / n
        s = np.longdouble(0)
        for v in ld[:, j]:
            s += v - t
        m.append(np.longdouble(np.float64(t + s / n)))
    ref = np.empty((d, d))
    with np.errstate(over="ignore"):
        for i in range(d):
            for j in range(d):
                s = np.longdouble(0)
                for k in range(n):
                    s += (ld[k, i] - m[i]) * (ld[k, j] - m[j])
                ref[i, j] = np.float64(s / (n - 1))
    return ref


def test_R_cov_in_its_order():
    """R's cov: long-double means refined once and rounded, long-double
    deviations and products, the sum over n - 1 rounded once."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 5)) * [1, 1e3, 1e-3, 7, 1] + [0, 5e3, 0, -2, 1e6]
    ref = _naive_r_cov(X)
    for threads in (1, 2, 7):
        np.testing.assert_array_equal(colstats.r_cov(X, threads), ref)
    np.testing.assert_allclose(ref, np.cov(X, rowvar=False), rtol=1e-12)
    with pytest.raises(ValueError, match="two rows"):
        colstats.r_cov(X[:1], 1)


def test_R_cov_with_deviations_past_a_double():
    """A block of rows whose deviations leave double's range (held in long
    doubles) and blocks beside it that do not (held as two doubles) give
    R's sums alike; so do subnormal columns."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(150, 4)) * [1.0, 1e-310, 3.0, 1.0]
    X[70:80, 2] = [1.79e308] + [-1.79e308] * 9  # the mean near -1.1e307: a deviation of 1.9e308, in the second block of 64
    ref = _naive_r_cov(X)
    assert (np.longdouble(X[70, 2]) - np.mean(X[:, 2].astype(np.longdouble))) > np.finfo(np.float64).max
    assert np.isinf(ref[2, 2]) and np.all(np.isfinite(np.delete(np.delete(ref, 2, 0), 2, 1)))
    for threads in (1, 3):
        np.testing.assert_array_equal(colstats.r_cov(X, threads), ref)


def _symmetric(d, seed, vals=None):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    vals = rng.normal(size=d) if vals is None else np.asarray(vals, dtype=float)
    return (Q * vals) @ Q.T


@pytest.mark.parametrize("d, seed", [(1, 0), (2, 1), (7, 2), (30, 3), (64, 4)])
def test_jacobi_eigenpairs_against_numpy(d, seed):
    A = _symmetric(d, seed)
    vals, vecs = _linalg.eigh(A)
    ref = np.linalg.eigvalsh(A)[::-1]
    scale = np.abs(ref).max()
    np.testing.assert_allclose(vals, ref, rtol=0, atol=1e-13 * scale * d)
    assert np.all(np.diff(vals) <= 0)  # decreasing, as R's eigen
    np.testing.assert_allclose(vecs.T @ vecs, np.eye(d), atol=1e-13 * d)
    np.testing.assert_allclose(A @ vecs, vecs * vals, atol=1e-13 * scale * d)
    # the sign convention: each vector's entry of largest magnitude is positive
    big = np.argmax(np.abs(vecs), axis=0)
    assert np.all(vecs[big, np.arange(d)] > 0)


def test_jacobi_with_repeated_zero_and_singular_spectra():
    for vals in ([3.0, 3.0, 1.0, 0.0], [0.0, 0.0, 0.0], [1e-300, 1.0, 1e300]):
        A = _symmetric(len(vals), 5, vals)
        got, vecs = _linalg.eigh(A)
        np.testing.assert_allclose(got, sorted(vals, reverse=True), rtol=1e-12, atol=1e-12 * max(vals + [1.0]))
        np.testing.assert_allclose(vecs.T @ vecs, np.eye(len(vals)), atol=1e-12)
    vals, vecs = _linalg.eigh(np.diag([1.0, 5.0, 2.0]))
    np.testing.assert_array_equal(vals, [5.0, 2.0, 1.0])
    np.testing.assert_array_equal(vecs, np.eye(3)[:, [1, 2, 0]])
    with pytest.raises(ValueError, match="NaN or infinite"):
        _linalg.eigh(np.array([[1.0, np.nan], [np.nan, 1.0]]))
    with pytest.raises(ValueError, match="square"):
        _linalg.eigh(np.zeros((2, 3)))


def test_orthonormal_basis_in_order():
    rng = np.random.default_rng(6)
    D = rng.normal(size=(9, 4))
    Q = _linalg.orthonormal(D)
    np.testing.assert_allclose(Q.T @ Q, np.eye(4), atol=1e-15 * 10)
    # the same flag of subspaces as D's columns: Q's first k span D's first k
    for k in range(1, 5):
        P = Q[:, :k] @ Q[:, :k].T
        np.testing.assert_allclose(P @ D[:, :k], D[:, :k], atol=1e-13)
    with pytest.raises(ValueError, match="not independent"):
        _linalg.orthonormal(np.column_stack([D[:, 0], 2 * D[:, 0]]))


def test_exp_and_log_are_the_C_librarys():
    x = np.r_[np.geomspace(1e-300, 1e300, 2001), 0.5, 1.0, 2.0]
    assert _linalg.c_log_array(x).tolist() == [math.log(v) for v in x]
    z = np.linspace(-745, 709, 4001)
    assert _linalg.c_exp_array(z).tolist() == [math.exp(v) for v in z]


def test_R_var_is_R_sd_squared_before_its_root():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(30, 3)) * [1.0, 1e-8, 1e8]
    np.testing.assert_array_equal(colstats.r_sd(X, 2), np.sqrt(colstats.r_var(X, 1)))
    np.testing.assert_allclose(colstats.r_var(X, 1), X.var(axis=0, ddof=1), rtol=1e-14)


@pytest.mark.parametrize("n", [1, 37, 511, 512, 513, 5000])
def test_crossprod_t_threads_own_their_blocks(n, many_cores):
    """Each thread lays out its own blocks of B (no barrier between
    blocks): every entry is still summed over the rows in order, so the
    bits do not depend on the threads, whatever n is against the 512-row
    block (a buffer sized for n < 512 rows once overran)."""
    rng = np.random.default_rng(n)
    A, Bt = rng.normal(size=(n, 7)), rng.normal(size=(3, n))
    ref = _linalg.crossprod_t(A, Bt, 1)
    np.testing.assert_allclose(ref, A.T @ Bt.T, rtol=1e-12, atol=1e-12)
    for threads in (2, 3, 7, 9):
        np.testing.assert_array_equal(_linalg.crossprod_t(A, Bt, threads), ref)


@pytest.mark.parametrize("threads", [1, 3])
def test_sweep_is_numpys_broadcast_to_the_bit(threads):
    """colstats.sweep (R's standardising steps: centre, then scale) against
    NumPy's X - v and X * v, in place too; any threads give the same bits."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((1001, 7)) * 10.0 ** rng.integers(-5, 5, 7)
    v = rng.standard_normal(7)
    out = np.full_like(X, np.nan)
    colstats.sweep(X, v, out, True, threads)
    np.testing.assert_array_equal(out, X - v)
    colstats.sweep(out, v, out, False, threads)
    np.testing.assert_array_equal(out, (X - v) * v)
    with pytest.raises(ValueError, match="sweep"):
        colstats.sweep(X, v[:6], out, True, threads)


def test_any_varies_finds_a_single_different_entry():
    X = np.full((500, 4), 3.0)
    assert not colstats.any_varies(X)
    assert not colstats.any_varies(X[:1])
    X[499, 3] = np.nextafter(3.0, 4.0)
    assert colstats.any_varies(X)
    X[:, 3] = 0.0
    X[499, 3] = -0.0
    assert not colstats.any_varies(X)  # -0 == 0: no column varies


def test_col_ranges_are_ptp():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(1001, 7)) * 10.0 ** rng.integers(-200, 200, 7)
    X[500, 2] = 1e300  # an extreme in the middle, and at either end
    X[0, 3] = -1e300
    X[-1, 4] = 7e299
    np.testing.assert_array_equal(colstats.col_ranges(X), np.ptp(X, axis=0))
    np.testing.assert_array_equal(colstats.col_ranges(X[:1]), np.zeros(7))
    assert colstats.col_ranges(np.array([[1.0], [-np.inf]]))[0] == np.inf
    with pytest.raises(ValueError, match="at least one row"):
        colstats.col_ranges(np.empty((0, 3)))


# ---------------------------------------------------------------------------
# sums over the points by the fixed blocks of rows (pyopnb/_core/blocks.h)
# ---------------------------------------------------------------------------

def _blocks(n):
    from pyopnb._core import testing as _testing

    nblk, B = _testing.row_blocks(n)
    return [(b * B, min(n, (b + 1) * B)) for b in range(nblk)]


def test_the_blocks_are_a_function_of_n_alone():
    assert _blocks(1) == [(0, 1)] and _blocks(65536) == [(0, 65536)]
    assert _blocks(65537) == [(0, 32769), (32769, 65537)]
    assert _blocks(142000) == [(0, 47334), (47334, 94668), (94668, 142000)]
    big = _blocks(64 * 65536 + 1)  # past 64 blocks, the blocks grow instead
    assert len(big) == 64 and big[0] == (0, 65537) and big[-1][1] == 64 * 65536 + 1


def test_above_one_block_the_crossproduct_adds_the_blocks_partials_in_block_order(every_path):
    """Up to 65536 rows, every entry is added over the rows in order (R's
    reference BLAS); above, within each block in order from 0, then the
    blocks' partials in block order, on every path and thread count."""
    rng = np.random.default_rng(5)
    n = 2 * 65536 + 1234
    A, B = rng.normal(size=(n, 3)) * np.array([1.0, 1e3, 1e-3]), rng.normal(size=(n, 2))
    ref = np.zeros((3, 2))
    for i0, i1 in _blocks(n):
        ref = ref + _in_row_order(A[i0:i1], B[i0:i1])
    assert not np.array_equal(ref, _in_row_order(A, B))  # the blocks' order is not the rows' here
    for results in every_path(lambda: [_linalg.crossprod(A, B, t) for t in (1, 2, 3, 8)]):
        for got in results:
            np.testing.assert_array_equal(got, ref)
    one = 65536  # one block: the rows' order
    np.testing.assert_array_equal(_linalg.crossprod(A[:one], B[:one], 2), _in_row_order(A[:one], B[:one]))


def test_the_values_sum_of_its_points_terms_goes_by_the_blocks():
    from pyopnb._core import testing as _testing
    from pyopnb._core.posteriors import product_posteriors

    rng = np.random.default_rng(6)
    n = 65536 + 300
    t, w = rng.normal(size=n) * 10.0 ** rng.integers(-8, 8, n), rng.uniform(0.1, 3.0, n)
    for weights in (None, w):
        ref = 0.0
        for i0, i1 in _blocks(n):
            part = 0.0
            for i in range(i0, i1):
                part += float(t[i]) if weights is None else float(weights[i]) * float(t[i])
            ref += part
        assert _testing.block_sum(t, weights) == ref
    # the exact evaluations' value: its points' terms (each one's own, from a problem of that row alone) by the blocks
    K = 3
    pr, acc = rng.uniform(0.01, 1.0, size=(n, K)), np.zeros((n, K))
    y, PI = rng.integers(0, K, n).astype(np.int32), np.array([0.2, 0.3, 0.5])
    terms = np.array([product_posteriors(pr[i:i + 1], acc[i:i + 1], y[i:i + 1], PI, 1)[0] for i in range(n)])
    for threads in (1, 2):
        assert product_posteriors(pr, acc, y, PI, threads)[0] == _testing.block_sum(terms) / n
    assert product_posteriors(pr, acc, y, PI, 2, w=w)[0] == _testing.block_sum(terms, w) / math.fsum(w)
