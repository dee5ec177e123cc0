"""R's eigen, ported (pyopnb._core.eigen): the eigensystem itself, its errors, and
the default start it gives. Bit-for-bit agreement with R's eigen is checked
in validation/ (recorded matrices, and live R where it is installed)."""
import numpy as np
import pytest

from pyopnb._core.eigen import r_eigen


@pytest.mark.parametrize("n", [1, 2, 3, 7, 33, 61])
@pytest.mark.parametrize("kind", ["random", "zero columns", "repeated column", "binary"])
def test_an_eigensystem(n, kind):
    rng = np.random.default_rng(n)
    X = rng.normal(size=(3 * n + 5, n)) * rng.uniform(0.1, 10, n)
    if kind == "zero columns" and n > 1:
        X[:, :max(1, n // 4)] = 0.0
    elif kind == "repeated column" and n > 1:
        X[:, 1] = X[:, 0]
    elif kind == "binary":
        X = (X > 0.5).astype(float)
    A = np.cov(X, rowvar=False).reshape(n, n)
    vals, vecs = r_eigen(A)
    assert np.all(np.diff(vals) <= 0), "values decrease, as R's eigen orders them"
    np.testing.assert_allclose(vecs.T @ vecs, np.eye(n), atol=1e-13)
    scale = max(1.0, np.abs(vals).max())
    np.testing.assert_allclose(A @ vecs, vecs * vals, atol=1e-12 * scale)
    np.testing.assert_allclose(vals, np.linalg.eigvalsh(A)[::-1], atol=1e-12 * scale)


def test_only_the_lower_triangle_is_read():
    rng = np.random.default_rng(0)
    A = np.cov(rng.normal(size=(20, 5)), rowvar=False)
    B = A.copy()
    B[np.triu_indices(5, 1)] = 99.0
    for a, b in zip(r_eigen(A), r_eigen(B)):
        np.testing.assert_array_equal(a, b)


def test_bad_input():
    with pytest.raises(ValueError, match="square"):
        r_eigen(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="NaN or infinite"):
        r_eigen(np.array([[1.0, np.nan], [np.nan, 1.0]]))
    vals, vecs = r_eigen(np.zeros((0, 0)))
    assert vals.shape == (0,) and vecs.shape == (0, 0)


def test_the_default_start_is_Rs_start():
    # R 4.2 with reference LAPACK 3.11: eigen(cov(Xs))$vectors for the Pima fixture's scaled data
    from pyopnb.formulation import r_standardise, r_start
    from pyopnb.validation.fixtures import fit_call, r_starts

    X, _, _, _, _ = fit_call("fit_pima_default")
    ref = np.asarray(r_starts()["starts"]["fit_pima_default"])
    np.testing.assert_array_equal(r_start(None, r_standardise(X)[2], None, ref.shape[1]), ref)
