"""Fixtures shared by the test modules."""
import os

import pytest

import pyopnb
from pyopnb import OPNB, _threads
from pyopnb.datasets import load_pima

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # the kit's tests that need hypothesis skip without it
    pass
else:
    # the same examples on every run and machine, and no deadline nor a check of the draws' speed, so that CI
    # judges the code, not a draw or a busy machine; `pytest --hypothesis-profile=explore` draws afresh
    _UNTIMED = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("pyopnb", derandomize=True, database=None, **_UNTIMED)
    settings.register_profile("explore", derandomize=False, **_UNTIMED)
    settings.load_profile("pyopnb")

if os.environ.get("PYOPNB_TEST_INSTALLED"):
    # CI's run against the built wheel: the suite must test the installed
    # package, never the repository's source folder
    assert "site-packages" in pyopnb.__file__, f"testing {pyopnb.__file__}, not the installed wheel"


@pytest.fixture(scope="session")
def pima():
    """The Pima data, split as R's MASS package splits it (Pima.tr, Pima.te)."""
    return load_pima()


@pytest.fixture(scope="session")
def df_model(pima):
    """OPNB fitted on Pima's training part as a DataFrame (named columns), 3 columns, exact sums."""
    pd = pytest.importorskip("pandas", reason="pandas is not installed")
    return OPNB(pd.DataFrame(pima.X_train, columns=list(pima.feature_names)), pima.y_train, ndim=3, nbin=None)


@pytest.fixture
def many_cores(monkeypatch):
    """pyopnb sees 64 usable cores: tests that run more threads than this
    machine has (their partitions must not change the bits) are not capped."""
    monkeypatch.setattr(_threads, "available_cores", lambda: 64)
    return 64


@pytest.fixture
def every_path(monkeypatch):
    """Run a function under each vector path this CPU has (PYOPNB_SIMD)."""
    from pyopnb._core import simd

    def run(fn):
        out = []
        for level in simd.simd_levels():
            monkeypatch.setenv("PYOPNB_SIMD", level)
            assert simd.simd() == level
            out.append(fn())
        monkeypatch.delenv("PYOPNB_SIMD")
        return out
    return run
