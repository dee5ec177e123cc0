"""pyopnb.dask: fits and evaluations on a Dask cluster of worker processes
give the single machine's bits, whatever the chunking, and a worker killed
mid-evaluation changes no bit."""
import os
import signal
import warnings

import numpy as np
import pytest

import pyopnb
from pyopnb import evaluation as ev
from pyopnb.parts import BlockLayout

da = pytest.importorskip("dask.array", reason="pyopnb.dask needs dask (pip install 'pyopnb[dask]')")
distributed = pytest.importorskip("distributed", reason="pyopnb.dask needs distributed")
pdk = pytest.importorskip("pyopnb.dask")

N = 140000  # three blocks of 46,667 rows


@pytest.fixture(scope="module")
def client():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
        cl = distributed.Client(cluster)
    yield cl
    cl.close()
    cluster.close()


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, N)
    X = rng.normal(size=(N, 5)) + 0.5 * y[:, None] * (np.arange(5) < 2)
    X[:, 3] *= 1e3
    return X, y


@pytest.fixture(scope="module")
def reference(data):
    X, y = data
    return pyopnb.OPNB(X, y, ndim=2, nbin=300)


@pytest.mark.parametrize("rows", [N, BlockLayout(N).block_len, 2 * BlockLayout(N).block_len, 30000])
def test_a_fit_is_the_single_machines_for_any_chunking(client, data, reference, rows):
    X, y = data
    f = pdk.fit_projection(da.from_array(X, chunks=(rows, 5)), da.from_array(y, chunks=rows), ndim=2, nbin=300,
                           client=client)
    m = reference
    assert np.array_equal(f.V, m.V) and f.fval == m.fval
    assert np.array_equal(f.h, m.h) and np.array_equal(f.PI, m.PI)
    assert np.array_equal(f.mu, m.mu) and np.array_equal(f.scales, m.scales)
    assert f.convergence == m.convergence and f.n == N
    assert list(f.levels) == list(m.ynames)


def test_a_dataframe_with_string_labels(client):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    from pyopnb.datasets import load_pima

    pima = load_pima()
    df = pd.DataFrame(pima.X_train, columns=list(pima.feature_names))
    labels = pd.Series(np.asarray(pima.y_train).astype(str))
    m = pyopnb.OPNB(df, labels, ndim=2)
    f = pdk.fit_projection(dd.from_pandas(df, npartitions=3), dd.from_pandas(labels, npartitions=3), ndim=2,
                           client=client)
    assert np.array_equal(f.V, m.V) and f.fval == m.fval
    assert list(f.levels) == list(m.ynames)


def test_exact_sums_and_bad_rows_are_refused(client, data):
    X, y = data
    Xd, yd = da.from_array(X[:1000], chunks=500), da.from_array(y[:1000], chunks=500)
    with pytest.raises(ValueError, match="exact sums"):
        pdk.fit_projection(Xd, yd, nbin=None, client=client)
    bad = X[:1000].copy()
    bad[700, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        pdk.fit_projection(da.from_array(bad, chunks=500), yd, ndim=2, nbin=100, client=client)
    with pytest.raises(ValueError, match="one label per row"):
        pdk.fit_projection(Xd, yd[:999], nbin=100, client=client)


class _Killing:
    """A runner that SIGKILLs the worker holding the first chunk after the
    first pass of an evaluation: the next passes find its parts gone."""

    def __init__(self, runner):
        self.runner, self.killed = runner, False

    def call(self, method, *args):
        out = self.runner.call(method, *args)
        if method == "extremes" and not self.killed:
            holder = sorted(self.runner.client.who_has([self.runner._data[0][0]]).popitem()[1])[0]
            pid = self.runner.client.run(os.getpid, workers=[holder])[holder]
            os.kill(pid, signal.SIGKILL)
            self.killed = True
        return out


def test_a_worker_killed_mid_evaluation_changes_no_bit(client, data):
    X, y = data
    y0 = y.astype(np.int32)
    h = np.ones(3)
    PI = np.bincount(y0, minlength=3) / N
    prob = ev.check_problem(X, y0, PI, h)
    V = np.random.default_rng(2).normal(size=(5, 2)) * 1e-2
    f0, G0 = ev.Evaluator(prob, ev.r_grid(prob, 300, 1), 300, 1).value_and_grad(V)
    P = pdk.evaluator(da.from_array(X, chunks=(46667, 5)), da.from_array(y0, chunks=46667), h, PI, 300, client)
    try:
        P.runner = _Killing(P.runner)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f1, G1 = P.value_and_grad(V)
        assert P.runner.killed
        assert f1 == f0 and np.array_equal(G1, G0)
        client.wait_for_workers(2, timeout=60)
        f2, G2 = P.value_and_grad(V)
        assert f2 == f0 and np.array_equal(G2, G0)
    finally:
        P.runner.runner.close()


def test_a_worker_killed_mid_fit_changes_no_bit(client, data, reference):
    X, y = data
    killed = []

    def kill_one(iteration, fval, gnorm):
        if iteration == 2 and not killed:
            worker = sorted(client.scheduler_info()["workers"])[0]
            os.kill(client.run(os.getpid, workers=[worker])[worker], signal.SIGKILL)
            killed.append(worker)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = pdk.fit_projection(da.from_array(X, chunks=(46667, 5)), da.from_array(y, chunks=46667), ndim=2,
                               nbin=300, client=client, callback=kill_one)
    assert killed
    assert np.array_equal(f.V, reference.V) and f.fval == reference.fval
    client.wait_for_workers(2, timeout=60)
