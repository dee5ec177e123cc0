"""Every vector path of the compiled core gives the same bits: the per-point
kernels (products over the columns, the gradient's evaluation-point terms)
run two classes a register on SSE2 and four on AVX2, and must agree to the
bit for every class count (masked lanes past K), with one bandwidth or one
per class, and where products leave the normal range and go through the
logs. Paths the CPU lacks are left out by ``every_path``."""
import numpy as np
import pytest

from pyopnb._core import exact as _exact, passes as _passes, simd
from pyopnb.ksum import DEFAULT_BETA
from pyopnb.objective import df_NB_normalised, f_NB_normalised, objective_and_gradient


def _problem(K, n, p, seed, spread):
    rng = np.random.default_rng(seed)
    y0 = np.arange(n) % K
    X = rng.normal(size=(n, p)) + spread * y0[:, None] * rng.normal(size=p)
    PI = np.bincount(y0, minlength=K) / n
    return X, y0, PI, rng


def _bits(value, grad):
    return np.float64(value).tobytes() + np.ascontiguousarray(grad).tobytes()


@pytest.mark.parametrize("K", [1, 2, 3, 4, 5, 9])
@pytest.mark.parametrize("nbin", [None, 64])
@pytest.mark.parametrize("compat", ["R", "correct"])
def test_objective_and_gradient_have_the_same_bits_on_every_path(every_path, K, nbin, compat):
    X, y0, PI, rng = _problem(K, 240, 6, K, 1.5)
    V = rng.normal(size=(6, 4))
    h = np.full(K, 0.4)
    got = every_path(lambda: [_bits(*objective_and_gradient(V, X, y0, PI, h, nbin=nbin, compat=compat,
                                                             threads=t)) for t in (1, 2)])
    assert len({b for run in got for b in run}) == 1


@pytest.mark.parametrize("K", [2, 3, 5])
@pytest.mark.parametrize("nbin", [None, 64])
def test_class_bandwidths_have_the_same_bits_on_every_path(every_path, K, nbin):
    X, y0, PI, rng = _problem(K, 200, 5, 10 + K, 1.0)
    V = rng.normal(size=(5, 3))
    h = 0.2 + 0.3 * np.arange(K)  # one per class: each term divided by its own
    got = every_path(lambda: _bits(f_NB_normalised(V, X, y0, PI, h, nbin=nbin, threads=1),
                                   df_NB_normalised(V, X, y0, PI, h, nbin=nbin, threads=1)))
    assert len(set(got)) == 1


@pytest.mark.parametrize("K", [2, 3, 6])
@pytest.mark.parametrize("nbin", [None, 500])
def test_products_out_of_range_have_the_same_bits_on_every_path(every_path, K, nbin):
    # far-apart classes, narrow bandwidths and many columns: products of
    # densities fall below 1e-289 and close (products.h), densities reach 0
    X, y0, PI, rng = _problem(K, 150, 24, 20 + K, 60.0)
    V = np.eye(24)
    h = np.full(K, 0.05)
    Zt = np.ascontiguousarray(X.T)
    y = y0.astype(np.int32)

    def products():
        pr, acc = _passes.class_products(Zt, _exact.ExactScratch(y, K, h, 0, 0.0, DEFAULT_BETA, 1))
        return pr.tobytes() + acc.tobytes()

    pr, acc = _passes.class_products(Zt, _exact.ExactScratch(y, K, h, 0, 0.0, DEFAULT_BETA, 1))
    assert (acc != 0).any() and (acc == 0).any()  # some products closed, some not
    assert len(set(every_path(products))) == 1
    got = every_path(lambda: _bits(*objective_and_gradient(V, X, y0, PI, h, nbin=nbin, compat="R", threads=1)))
    assert len(set(got)) == 1


def test_simd_level_names_the_path(monkeypatch):
    levels = simd.simd_levels()
    assert levels[0] == "sse2"
    monkeypatch.setenv("PYOPNB_SIMD", "sse2")
    assert simd.simd() == "sse2" and simd.simd_level() == 0
    monkeypatch.setenv("PYOPNB_SIMD", "avx512")  # a cap: never wider than the CPU's widest
    assert simd.simd() == levels[-1] and simd.simd_level() == len(levels) - 1
