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


def _cluster(default):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
        cl = distributed.Client(cluster, set_as_default=default)
    return cluster, cl


@pytest.fixture(scope="module")
def client():
    # the active client: the estimators, which take none, fit on it
    cluster, cl = _cluster(True)
    yield cl
    cl.close()
    cluster.close()


@pytest.fixture
def killable():
    """A cluster of its own for a test that SIGKILLs a worker: under load a
    killed worker's nanny may close instead of starting it again, which
    must not leave the other tests one worker short."""
    cluster, cl = _cluster(False)
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


@pytest.fixture(scope="module")
def journal_reference(data):
    X, y = data
    return pyopnb.opnb_journal(X, y, ndim=3, nbin=300, gamma=1.5)


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
    pass ``after`` of an evaluation: the next passes (and folds) find its
    parts gone."""

    def __init__(self, runner, after):
        self.runner, self.after, self.killed = runner, after, False

    def call(self, method, *args):
        return self._then(method, self.runner.call(method, *args))

    def call_fold(self, names, method, *args):
        return self._then(method, self.runner.call_fold(names, method, *args))

    def fold(self, names):
        return self.runner.fold(names)

    def _then(self, method, out):
        if method == self.after and not self.killed:
            holder = sorted(self.runner.client.who_has([self.runner._data[0][0]]).popitem()[1])[0]
            pid = self.runner.client.run(os.getpid, workers=[holder])[holder]
            os.kill(pid, signal.SIGKILL)
            self.killed = True
        return out


def _single_and_cluster(client, X, y0, kind, chunks):
    """The single machine's evaluator and the cluster's, of R's objective ("R"), the paper's or the journal's."""
    from pyopnb.parts import JOURNAL_GRID, LINEAR_GRID, R_GRID

    h = np.ones(3) if kind == "R" else np.array([0.4, 0.5, 0.45])
    PI = np.bincount(y0, minlength=3) / N
    prob = ev.check_problem(X, y0, PI, h)
    evaluator, core, objective = {"R": (ev.Evaluator, ev.r_grid, R_GRID),
                                  "paper": (ev.Evaluator, ev.linear_passes, LINEAR_GRID),
                                  "journal": (ev.NormalisedEvaluator, ev.interp_grid, JOURNAL_GRID)}[kind]
    single = evaluator(prob, core(prob, 300, 1), 300, 1)
    P = pdk.evaluator(da.from_array(X, chunks=(chunks, 5)), da.from_array(y0, chunks=chunks), h, PI, 300, client,
                      objective=objective)
    return single, P


@pytest.mark.parametrize("kind, after", [("R", "extremes"), ("R", "bin"), ("R", "value"), ("paper", "sample"),
                                         ("journal", "sample")])
def test_a_worker_killed_mid_evaluation_changes_no_bit(killable, data, kind, after):
    X, y = data
    V = np.random.default_rng(2).normal(size=(5, 2)) * (1e-2 if kind == "R" else 1.0)
    single, P = _single_and_cluster(killable, X, y.astype(np.int32), kind, 46667)
    f0, G0 = single.value_and_grad(V)
    try:
        P.runner = _Killing(P.runner, after)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f1, G1 = P.value_and_grad(V)
        assert P.runner.killed
        assert f1 == f0 and np.array_equal(G1, G0)
        # the passes without the rows found the killed worker's parts gone, and ran their chunks again with them
        # (after the value pass and its fold, the next pass reads the rows)
        assert (P.runner.runner.replays > 0) == (after in ("extremes", "bin"))
        # the next evaluation, on the workers there are (the killed one's nanny may or may not have started it again)
        f2, G2 = P.value_and_grad(V)
        assert f2 == f0 and np.array_equal(G2, G0)
    finally:
        P.runner.runner.close()


@pytest.mark.parametrize("kind", ["paper", "journal"])
@pytest.mark.parametrize("rows", [N, BlockLayout(N).block_len, 2 * BlockLayout(N).block_len])
def test_a_moving_grids_objective_on_the_cluster_is_the_single_machines(client, data, rows, kind):
    X, y = data
    E, P = _single_and_cluster(client, X, y.astype(np.int32), kind, rows)
    V = np.random.default_rng(3).normal(size=(5, 3))
    f0, G0 = E.value_and_grad(V)
    try:
        f1, G1 = P.value_and_grad(V)
        assert f1 == f0 and np.array_equal(G1, G0)
        assert P.order_columns(V) == E.order_columns(V)
    finally:
        P.runner.close()
    with pytest.raises(TypeError, match="R_GRID, LINEAR_GRID or JOURNAL_GRID"):
        pdk.evaluator(da.from_array(X, chunks=(rows, 5)), da.from_array(y, chunks=rows), np.ones(3),
                      np.full(3, 1 / 3), 300, client, objective="journal")


def _killing_at(client, iteration):
    """A fit's callback that SIGKILLs a worker at ``iteration``, and the workers it killed."""
    killed = []

    def kill_one(it, fval, gnorm):
        if it == iteration and not killed:
            worker = sorted(client.scheduler_info()["workers"])[0]
            os.kill(client.run(os.getpid, workers=[worker])[worker], signal.SIGKILL)
            killed.append(worker)

    return kill_one, killed


@pytest.mark.parametrize("form", ["R", "journal"])
def test_a_worker_killed_mid_fit_changes_no_bit(killable, data, reference, journal_reference, form):
    # the journal holds its raw and sorted rows through the fit: Dask makes a killed worker's again, the sorted
    # ones through the sort's tasks, and the class grids at the end bin the raw rows in the order they came
    from pyopnb.grid_model import grid_model

    X, y = data
    fit, params, ref = {"R": (pdk.OPNB, dict(ndim=2), reference),
                        "journal": (pdk.opnb_journal, dict(ndim=3, gamma=1.5), journal_reference)}[form]
    kill_one, killed = _killing_at(killable, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = fit(da.from_array(X, chunks=(46667, 5)), da.from_array(y, chunks=46667), nbin=300, client=killable,
                callback=kill_one, **params)
    assert killed
    g = grid_model(ref, 300)
    for field in ("V", "h", "PI", "mu", "scales", "lo", "delta", "W"):
        assert np.array_equal(getattr(m, field), getattr(g, field)), field
    assert m.fval == g.fval


def test_the_model_is_the_single_machines_grid_model(client, data, reference, capsys):
    from pyopnb.grid_model import grid_model

    X, y = data
    g = grid_model(reference, 300)
    for rows in (BlockLayout(N).block_len, 30000):
        m = pdk.OPNB(da.from_array(X, chunks=(rows, 5)), da.from_array(y, chunks=rows), ndim=2, nbin=300,
                     client=client)
        assert not hasattr(m, "X")
        assert np.array_equal(m.V, g.V) and m.fval == g.fval and np.array_equal(m.h, g.h)
        assert np.array_equal(m.lo, g.lo) and np.array_equal(m.delta, g.delta) and np.array_equal(m.W, g.W)
        assert list(m.ynames) == list(g.ynames) and np.array_equal(m.counts, np.bincount(y))
    # its own grid size, and the progress shown
    capsys.readouterr()
    m = pdk.OPNB(da.from_array(X, chunks=(30000, 5)), da.from_array(y, chunks=30000), ndim=2, nbin=300,
                 grid_nbin=64, client=client, progress=True)
    assert m.W.shape == (2, 64, 3) and np.array_equal(m.W, grid_model(reference, 64).W)
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("pyopnb.dask.OPNB: the cluster's dashboard:")
    assert "iteration 1: fval" in err[1] and err[1].endswith("s per evaluation")
    assert len(err) >= 3 and m.fval == reference.fval


def test_predict_is_lazy_and_each_rows_bits_are_one_machines(client, data, reference):
    from pyopnb.grid_model import grid_model

    X, y = data
    g = grid_model(reference, 300)
    Xte = X[:5000] + 0.25
    for log in (False, True):
        out = pdk.predict(g, da.from_array(Xte, chunks=(777, 5)), log=log)
        assert isinstance(out["posterior"], da.Array)
        got = dict(zip(out, client.compute(list(out.values()), sync=True)))
        ref = pyopnb.predict(g, Xte, log=log)
        assert sorted(got) == sorted(ref)
        for key in ref:
            assert np.array_equal(got[key], ref[key]), key
    # a model with rows, and fewer columns
    got = pdk.predict(reference, da.from_array(Xte, chunks=(1000, 5)), ndim=1)["posterior"].compute()
    assert np.array_equal(got, pyopnb.predict(reference, Xte, ndim=1)["posterior"])
    with pytest.raises(ValueError, match=r"\[m, 5\]"):
        pdk.predict(g, da.from_array(Xte[:, :4]))
    with pytest.raises(ValueError, match="ndim"):
        pdk.predict(g, da.from_array(Xte), ndim=3)


def test_a_dataframe_is_matched_by_name_and_a_factors_level_order_kept(client):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    from pyopnb.datasets import load_pima
    from pyopnb.grid_model import grid_model

    pima = load_pima()
    df = pd.DataFrame(pima.X_train, columns=list(pima.feature_names))
    # an R factor's order, not the sorted one
    labels = pd.Series(pd.Categorical(np.asarray(pima.y_train), categories=["Yes", "No", "Unsure"]))
    m = pyopnb.OPNB(df, labels, ndim=2)
    assert list(m.ynames) == ["Yes", "No"] and m.unused_levels == ("Unsure",)
    g = pdk.OPNB(dd.from_pandas(df, npartitions=3), dd.from_pandas(labels, npartitions=3), ndim=2, client=client)
    assert list(g.ynames) == ["Yes", "No"] and g.unused_levels == ("Unsure",)
    ref = grid_model(m)
    assert np.array_equal(g.V, ref.V) and g.fval == ref.fval and np.array_equal(g.W, ref.W)
    # test columns in another order are matched by name
    te = pd.DataFrame(pima.X_test, columns=list(pima.feature_names))
    shuffled = dd.from_pandas(te[list(reversed(te.columns))], npartitions=2)
    got = pdk.predict(g, shuffled)["class"].compute()
    assert np.array_equal(got, pyopnb.predict(ref, te)["class"])
    with pytest.raises(ValueError, match="missing"):
        pdk.predict(g, dd.from_pandas(te.iloc[:, 1:], npartitions=2))
    # categories of unknown order are refused, not sorted
    unknown = dd.from_pandas(pd.Series(labels.astype(str)), npartitions=3).astype("category")
    with pytest.raises(ValueError, match="unknown"):
        pdk.OPNB(dd.from_pandas(df, npartitions=3), unknown, ndim=2, client=client)


def test_the_estimator_fits_on_the_cluster_and_predicts_lazily(client):
    from pyopnb.datasets import load_pima
    from pyopnb.grid_model import grid_model

    pima = load_pima()
    est = pdk.DaskOPNBClassifier(ndim=2)
    assert distributed.get_client() is client
    est.fit(da.from_array(pima.X_train, chunks=(150, -1)), da.from_array(np.asarray(pima.y_train), chunks=150))
    ref = grid_model(pyopnb.OPNB(pima.X_train, pima.y_train, ndim=2))
    assert np.array_equal(est.model_.V, ref.V) and np.array_equal(est.model_.W, ref.W)
    assert list(est.classes_) == list(ref.ynames) and est.n_features_in_ == pima.X_train.shape[1]
    lazy = est.predict_proba(da.from_array(pima.X_test, chunks=(50, -1)))
    assert isinstance(lazy, da.Array)
    here = est.predict_proba(pima.X_test)
    assert np.array_equal(lazy.compute(), here)
    assert np.array_equal(here, pyopnb.predict(ref, pima.X_test, log=True)["posterior"])
    assert np.array_equal(est.predict(da.from_array(pima.X_test, chunks=(50, -1))).compute(),
                          est.predict(pima.X_test))
    assert est.score(pima.X_test, pima.y_test) > 0.7
    from sklearn.base import clone

    assert clone(est).get_params() == est.get_params()
    d = est.decision_function(pima.X_test)
    assert np.array_equal(d > 0, est.predict(pima.X_test) == est.classes_[1])


def test_a_fit_stopped_on_the_cluster_resumes_from_its_checkpoint(client, tmp_path):
    from pyopnb.datasets import load_pima

    pima = load_pima()
    X = da.from_array(np.asarray(pima.X_train), chunks=(64, -1))
    y = da.from_array(np.asarray(pima.y_train), chunks=64)
    whole = pdk.fit_projection(X, y, ndim=2, client=client)
    path = tmp_path / "fit.ckpt"

    def stop(iteration, fval, gnorm):
        if iteration == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pdk.fit_projection(X, y, ndim=2, client=client, checkpoint=path, callback=stop)
    resumed = pdk.fit_projection(X, y, ndim=2, client=client, checkpoint=path)
    assert np.array_equal(resumed.V, whole.V) and resumed.fval == whole.fval


def _set_simd(level):
    if level is None:
        os.environ.pop("PYOPNB_SIMD", None)
    else:
        os.environ["PYOPNB_SIMD"] = level
    from pyopnb._core import simd

    return simd.simd()


def test_workers_on_different_vector_paths_change_no_bit(client, data, reference):
    from pyopnb._core import simd

    paths = simd.simd_levels()
    if len(paths) < 2:
        pytest.skip(f"this CPU runs one vector path only ({paths}): no two to mix")
    X, y = data
    workers = sorted(client.scheduler_info()["workers"])
    taken = {}
    try:
        for w, level in zip(workers, (paths[0], paths[-1])):
            taken[w] = client.run(_set_simd, level, workers=[w])[w]
        assert len(set(taken.values())) == 2, taken
        f = pdk.fit_projection(da.from_array(X, chunks=(46667, 5)), da.from_array(y, chunks=46667), ndim=2,
                               nbin=300, client=client)
    finally:
        client.run(_set_simd, None)
    assert np.array_equal(f.V, reference.V) and f.fval == reference.fval


def test_a_parquet_data_set_as_users_read_it(client, tmp_path):
    # dd.read_parquet's columns read alone come in other partitions than the frame's: counting a column's rows
    # with to_dask_array(lengths=True) fails there ("The number of items in 'lengths' does not match")
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    pytest.importorskip("pyarrow")
    from pyopnb.datasets import load_pima
    from pyopnb.grid_model import grid_model

    pima = load_pima()
    df = pd.DataFrame(pima.X_train, columns=list(pima.feature_names))
    df["type"] = np.asarray(pima.y_train)
    dd.from_pandas(df, npartitions=4).to_parquet(tmp_path / "pima", write_index=False)
    data = dd.read_parquet(tmp_path / "pima")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # dask: string columns become object arrays
        m = pdk.OPNB(data.drop(columns="type"), data["type"], ndim=2, client=client)
        ref = pyopnb.OPNB(df.drop(columns="type"), df["type"], ndim=2)
        assert np.array_equal(m.V, ref.V) and m.fval == ref.fval and list(m.ynames) == list(ref.ynames)
        assert np.array_equal(m.W, grid_model(ref).W) and m.feature_names == tuple(pima.feature_names)
        te = pd.DataFrame(pima.X_test, columns=list(pima.feature_names))
        dd.from_pandas(te, npartitions=3).to_parquet(tmp_path / "test", write_index=False)
        got = pdk.predict(m, dd.read_parquet(tmp_path / "test"))["class"].compute()
    assert np.array_equal(got, pyopnb.predict(grid_model(ref), te)["class"])


def test_frames_held_here_keep_their_names_and_rs_row_names_are_refused(client, tmp_path):
    # polars lost its column names on the way to the cluster: a test frame with its columns in another order
    # was then read by position, a silent wrong answer
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    dd = pytest.importorskip("dask.dataframe")
    from pyopnb.datasets import load_pima

    pima = load_pima()
    tr = pd.DataFrame(pima.X_train, columns=list(pima.feature_names))
    te = pd.DataFrame(pima.X_test, columns=list(pima.feature_names))
    est = pdk.DaskOPNBClassifier(ndim=2).fit(pl.from_pandas(tr), pl.Series(np.asarray(pima.y_train)))
    assert tuple(est.feature_names_in_) == tuple(pima.feature_names)
    backwards = pl.from_pandas(te).select(list(reversed(te.columns)))
    ref = pyopnb.OPNBClassifier(ndim=2).fit(tr, pima.y_train)
    assert np.array_equal(est.predict(backwards), est.predict(te))
    assert np.array_equal(est.predict(backwards), ref.predict(te))
    lazy = pdk.predict(est.model_, backwards)["class"].compute()
    assert np.array_equal(lazy, est.predict(te))
    # R's write.csv file read without its row names as the index: refused, not a feature
    rcsv = tr.assign(type=np.asarray(pima.y_train))
    rcsv.index = np.arange(1, len(rcsv) + 1)
    rcsv.to_csv(tmp_path / "pima.csv")
    data = dd.read_csv(tmp_path / "pima.csv")
    with pytest.raises(ValueError, match="row numbers"):
        pdk.OPNB(data.drop(columns="type"), data["type"], ndim=2, client=client)
    # pandas X and y whose indexes differ are refused, as pyopnb.OPNB refuses them
    with pytest.raises(ValueError, match="different row indexes"):
        pdk.OPNB(tr, pd.Series(np.asarray(pima.y_train), index=np.arange(len(tr))[::-1]), ndim=2, client=client)


def test_priors_are_the_single_machines_and_enter_the_checkpoint(client, tmp_path):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    from pyopnb.datasets import load_pima
    from pyopnb.grid_model import grid_model

    pima = load_pima()
    df = pd.DataFrame(pima.X_train, columns=list(pima.feature_names))
    # an R factor's level order, and priors named by label: matched by name, not by position
    labels = pd.Series(pd.Categorical(np.asarray(pima.y_train), categories=["Yes", "No"]))
    priors = {"No": 0.3, "Yes": 0.7}
    ref = pyopnb.OPNB(df, labels, ndim=2, priors=priors)
    X, y = dd.from_pandas(df, npartitions=3), dd.from_pandas(labels, npartitions=3)
    g = pdk.OPNB(X, y, ndim=2, priors=priors, client=client)
    assert list(g.ynames) == ["Yes", "No"] and np.array_equal(g.PI, [0.7, 0.3])
    assert np.array_equal(g.V, ref.V) and g.fval == ref.fval and np.array_equal(g.W, grid_model(ref).W)
    plain = pyopnb.OPNB(df, labels, ndim=2)
    assert not np.array_equal(plain.V, ref.V)  # the priors move the fit
    te = pd.DataFrame(pima.X_test, columns=list(pima.feature_names))
    assert np.array_equal(pyopnb.predict(g, te)["posterior"], pyopnb.predict(grid_model(ref), te)["posterior"])
    # one per class in the levels' order, as the estimator takes them
    est = pdk.DaskOPNBClassifier(ndim=2, priors=[0.7, 0.3]).fit(X, y)
    assert np.array_equal(est.model_.V, ref.V) and list(est.classes_) == ["Yes", "No"]
    with pytest.raises(ValueError, match="not a class"):
        pdk.OPNB(X, y, ndim=2, priors={"no": 0.3, "Yes": 0.7}, client=client)
    with pytest.raises(ValueError, match="sum"):
        pdk.OPNB(X, y, ndim=2, priors=[0.7, 0.4], client=client)
    # a record of the fit without priors is another fit's: refused, and left as it was
    path = tmp_path / "fit.ckpt"
    pdk.fit_projection(X, y, ndim=2, client=client, checkpoint=path)
    before = path.read_bytes()
    with pytest.raises(ValueError, match="another fit"):
        pdk.fit_projection(X, y, ndim=2, priors=priors, client=client, checkpoint=path)
    assert path.read_bytes() == before


def test_where_R_stops_and_a_collapse_are_said_as_on_one_machine(client):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    from sklearn.datasets import make_classification

    from pyopnb.fitting import COLLAPSED
    from pyopnb.validation.fixtures import load

    # HouseVotes84, R's fold 8 at lam 4e-4 (test_r_failures): R's gradient fails on the path
    v = load("r_failures")["house_votes"]
    train = np.concatenate([f for i, f in enumerate(v["folds"]) if i != 7])
    X, y = np.asarray(v["X"], dtype=float)[train], pd.Series(np.asarray(v["y"], dtype=str)[train])
    Xd, yd = da.from_array(X, chunks=(100, -1)), dd.from_pandas(y, npartitions=2)
    with pytest.warns(pyopnb.RDefectWarning, match="R's OPNB 1.0 would not end here") as rec:
        g = pdk.OPNB(Xd, yd, lam=4e-4, client=client)
    assert [w.filename for w in rec if w.category is pyopnb.RDefectWarning] == [__file__]
    with pytest.warns(pyopnb.RDefectWarning):
        m = pyopnb.OPNB(X, y, lam=4e-4)
    assert np.array_equal(g.V, m.V) and g.fval == m.fval
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        kept = pdk.OPNB(Xd, yd, lam=4e-4, r_defects=True, client=client)
    assert not any(issubclass(w.category, pyopnb.RDefectWarning) for w in rec)
    assert any("keeps the start projection" in str(w.message) for w in rec)
    assert np.array_equal(kept.V, pyopnb.OPNB(X, y, lam=4e-4, r_defects=True).V)
    # a penalty that shrinks V to nothing: every posterior the prior, said as pyopnb.OPNB says it
    Xc, yc = make_classification(n_samples=3000, n_features=10, n_informative=5, n_classes=5, random_state=0)
    with pytest.warns(pyopnb.CollapseWarning, match="lam = 1 dominates the likelihood") as rec:
        pdk.OPNB(da.from_array(Xc, chunks=(1000, -1)), da.from_array(yc, chunks=1000), lam=1.0, ndim=2,
                 client=client)
    said = [w for w in rec if w.category is pyopnb.CollapseWarning]
    assert len(said) == 1 and str(said[0].message).startswith(f"pyopnb.dask.OPNB: {COLLAPSED}")
    assert said[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error", pyopnb.CollapseWarning)
        pdk.OPNB(da.from_array(Xc, chunks=(1000, -1)), da.from_array(yc, chunks=1000), ndim=2, client=client)


@pytest.mark.parametrize("rows", [N, BlockLayout(N).block_len, 30000])
def test_the_journals_fit_is_the_single_machines_for_any_chunking(client, data, journal_reference, rows):
    from pyopnb.grid_model import grid_model

    X, y = data
    m = pdk.opnb_journal(da.from_array(X, chunks=(rows, 5)), da.from_array(y, chunks=rows), ndim=3, nbin=300,
                         gamma=1.5, client=client)
    ref = grid_model(journal_reference, 300)
    for field in ("V", "h", "PI", "mu", "scales", "lo", "delta", "W"):
        assert np.array_equal(getattr(m, field), getattr(ref, field)), field
    assert m.fval == ref.fval and m.lam == 0.0 and m.convergence == ref.convergence


def test_the_journals_fit_reads_the_rows_in_one_order_and_prescales(client, data):
    # rows shuffled, with ties in the first column: the single machine sorts them, and so do the workers
    X, y = data
    rng = np.random.default_rng(5)
    order = rng.permutation(N)
    Xt = X[order].copy()
    Xt[:, 0] = np.round(Xt[:, 0], 1)
    yt = y[order]
    ref = pyopnb.opnb_journal(Xt, yt, ndim=2, nbin=200, prescale=True)
    m = pdk.opnb_journal(da.from_array(Xt, chunks=(40000, 5)), da.from_array(yt, chunks=40000), ndim=2, nbin=200,
                         prescale=True, client=client)
    assert np.array_equal(m.V, ref.V) and m.fval == ref.fval and np.array_equal(m.h, ref.h)
    # the same rows in another order: the same projection
    back = np.argsort(order)
    again = pdk.opnb_journal(da.from_array(Xt[back], chunks=(50000, 5)), da.from_array(yt[back], chunks=50000),
                             ndim=2, nbin=200, prescale=True, client=client)
    assert np.array_equal(again.V, m.V) and again.fval == m.fval


def test_the_estimator_fits_the_journal_and_refuses_the_other_formulations_parameters(client):
    from pyopnb.datasets import load_pima
    from pyopnb.grid_model import grid_model

    pima = load_pima()
    est = pdk.DaskOPNBClassifier(ndim=2, formulation="journal", gamma=0.5)
    est.fit(da.from_array(pima.X_train, chunks=(150, -1)), da.from_array(np.asarray(pima.y_train), chunks=150))
    ref = grid_model(pyopnb.opnb_journal(pima.X_train, pima.y_train, ndim=2, gamma=0.5))
    assert np.array_equal(est.model_.V, ref.V) and np.array_equal(est.model_.W, ref.W)
    assert est.formulation_.name == "journal" and est.formulation_.gamma == 0.5
    assert np.array_equal(est.predict_proba(pima.X_test), pyopnb.predict(ref, pima.X_test, log=True)["posterior"])
    X, y = da.from_array(pima.X_train, chunks=(150, -1)), da.from_array(np.asarray(pima.y_train), chunks=150)
    # the error lists the estimator's own parameters: a formulation's C and V0 are none of them
    with pytest.raises(ValueError, match="^lam belongs to another formulation: formulation journal takes gamma, "
                                         "prescale$"):
        pdk.DaskOPNBClassifier(formulation="journal", lam=1e-2).fit(X, y)
    with pytest.raises(ValueError, match="^gamma belongs to another formulation: formulation R takes lam, scale, "
                                         "r_defects$"):
        pdk.DaskOPNBClassifier(gamma=2.0).fit(X, y)
    with pytest.raises(ValueError, match="'R', 'correct' or 'journal'"):
        pdk.DaskOPNBClassifier(formulation="naive").fit(X, y)
    with pytest.raises(ValueError, match="V0 as a \\(d, ndim\\) matrix"):
        pdk.opnb_journal(X, y, ndim=2, V0=lambda Xs, y, ndim: Xs[:ndim].T)


@pytest.mark.parametrize("rows", [BlockLayout(N).block_len, 30000])
def test_the_papers_fit_is_the_single_machines_for_any_chunking(client, data, rows):
    # R's formulation with the paper's objective, as OPNBClassifier(formulation="correct") fits it
    from pyopnb.grid_model import grid_model

    X, y = data
    est = pdk.DaskOPNBClassifier(ndim=2, nbin=300, formulation="correct", lam=2e-3)
    est.fit(da.from_array(X, chunks=(rows, 5)), da.from_array(y, chunks=rows))
    here = pyopnb.OPNBClassifier(ndim=2, nbin=300, formulation="correct", lam=2e-3).fit(X, y)
    ref = grid_model(here.model_, 300)
    for field in ("V", "h", "PI", "mu", "scales", "lo", "delta", "W"):
        assert np.array_equal(getattr(est.model_, field), getattr(ref, field)), field
    assert est.model_.fval == ref.fval and est.model_.lam == 2e-3 and est.convergence_ == here.convergence_
    assert est.formulation_.name == "correct"
    Xt = X[:2000] + 0.1
    assert np.array_equal(est.predict_proba(Xt), pyopnb.predict(ref, Xt, log=True)["posterior"])
    with pytest.raises(ValueError, match="gamma"):
        pdk.DaskOPNBClassifier(formulation="correct", gamma=2.0).fit(X[:1000], y[:1000])


def test_the_journal_on_a_csv_written_from_R_keeps_the_factors_order(client, tmp_path, caplog):
    # as a user from R: write.csv(iris) and a factor of levels in the data's own order; read with dask
    import logging

    import pandas as pd
    dd = pytest.importorskip("dask.dataframe")
    from pyopnb.grid_model import grid_model

    rng = np.random.default_rng(7)
    n = 600
    lab = np.array(["setosa", "versicolor", "virginica"])[rng.integers(0, 3, n)]
    shift = (lab == "versicolor") * 1.0 + (lab == "virginica") * 2.0
    frame = pd.DataFrame({"Sepal.Length": rng.normal(size=n) + shift, "Sepal.Width": rng.normal(size=n),
                          "Petal.Length": rng.normal(size=n) - shift, "Species": lab})
    frame.index = frame.index + 1
    frame.to_csv(tmp_path / "iris.csv", index_label="")
    levels = ["virginica", "setosa", "versicolor"]
    ddf = dd.read_csv(tmp_path / "iris.csv", blocksize=8000).drop(columns="Unnamed: 0")
    ddf["Species"] = ddf["Species"].astype("category").cat.set_categories(levels)
    X = ddf[["Sepal.Length", "Sepal.Width", "Petal.Length"]]
    with caplog.at_level(logging.WARNING, logger="distributed.scheduler"):
        m = pdk.opnb_journal(X, ddf["Species"], ndim=2, nbin=200, client=client)
    assert not [r for r in caplog.records if "run_spec" in r.getMessage()]
    # the rows as the CSV holds them (each reader the same parser): the fit reads every last bit
    back = pd.read_csv(tmp_path / "iris.csv").drop(columns="Unnamed: 0")
    y = pd.Categorical(back["Species"], categories=levels)
    here = pyopnb.opnb_journal(back.drop(columns="Species"), y, ndim=2, nbin=200)
    assert list(m.ynames) == levels == list(here.ynames)
    assert list(m.feature_names) == ["Sepal.Length", "Sepal.Width", "Petal.Length"]
    assert np.array_equal(m.V, here.V) and m.fval == here.fval
    assert np.array_equal(m.W, grid_model(here, 200).W)


def test_a_worker_hands_back_pyarrows_pool_when_a_part_is_made(monkeypatch):
    # pyarrow's pool keeps a few hundred MB after a worker reads Parquet: handed back before a part's state is
    # made (docs/benchmarks.md), and not at a pass that finds its part made
    import sys
    import types

    from pyopnb.dask import _runner
    from pyopnb.parts import PartSpec

    released = []
    pool = types.SimpleNamespace(release_unused=lambda: released.append(1))
    monkeypatch.setitem(sys.modules, "pyarrow", types.SimpleNamespace(default_memory_pool=lambda: pool))
    rng = np.random.default_rng(4)
    y0 = rng.integers(0, 3, 500).astype(np.int32)
    X = rng.normal(size=(500, 4))
    spec = PartSpec(h=np.ones(3), PI=np.bincount(y0) / 500, counts=np.bincount(y0), n=500, nbin=50)
    token = "test-release"
    try:
        history = [("extremes", (rng.normal(size=(4, 2)),))]
        (part, ext), = _runner._parts_at(token, spec, 0, history, [(0, 0)], (X, y0), False)
        assert released == [1] and ext[0].shape == (2, 1)
        _runner._parts_at(token, spec, 0, history, [(0, 0)], (X, y0), True)
        assert released == [1]
        # without pyarrow loaded, nothing to hand back
        monkeypatch.delitem(sys.modules, "pyarrow")
        _runner._release_unused()
        assert released == [1]
    finally:
        assert _runner._forget(token) == 1


@pytest.mark.parametrize("method", ["bin", "value"])
def test_a_fold_sent_with_its_pass_that_finds_a_part_gone_is_made_again(client, data, monkeypatch, method):
    # the fold's chain goes with its pass, each link after its worker's pass task: a part lost between the two
    # (dropped here once the pass is done) leaves the chain BEHIND, and the fold is made again from the rows
    from pyopnb.dask import _runner

    X, y = data
    single, P = _single_and_cluster(client, X, y.astype(np.int32), "R", 46667)
    V = np.random.default_rng(7).normal(size=(5, 2)) * 1e-2
    runner = P.runner
    chain = runner._chain
    dropped = []

    def dropping(homes, names, after=None):
        if after is not None and runner._history[-1][0] == method and not dropped:
            client.gather([f for fs in after.values() for f in fs])
            dropped.append(client.run(_runner._forget, runner.token, [1], workers=[homes[1]])[homes[1]])
        return chain(homes, names, after)

    monkeypatch.setattr(runner, "_chain", dropping)
    try:
        f0, G0 = single.value_and_grad(V)
        f, G = P.value_and_grad(V)
        assert dropped == [1] and runner.replays == 1
        assert f == f0 and np.array_equal(G, G0)
    finally:
        runner.close()


def test_a_part_made_again_elsewhere_leaves_no_copy_behind(client, data):
    # a pass run on another worker than the part's home (its home paused, say) makes the part there: the copy it
    # left would hold its n-sized state to the end of the fit
    from pyopnb.dask import _runner

    X, y = data
    single, P = _single_and_cluster(client, X, y.astype(np.int32), "R", 46667)
    V = np.random.default_rng(5).normal(size=(5, 2)) * 1e-2
    runner = P.runner
    try:
        f0, G0 = single.value_and_grad(V)
        f, G = P.value_and_grad(V)
        assert f == f0 and np.array_equal(G, G0)
        home = runner._home[0]
        other = next(w for w in client.nthreads() if w != home)
        runner._run([(other, [0])], True)
        assert runner._home[0] == other

        def held(token=runner.token):
            return sorted(k[1] for k in _runner._PARTS if k[0] == token)

        where = client.run(held)
        assert 0 not in where[home] and 0 in where[other]
        assert sorted(c for cs in where.values() for c in cs) == [0, 1, 2]
        f1, G1 = P.value_and_grad(V)
        assert f1 == f0 and np.array_equal(G1, G0)
    finally:
        runner.close()


@pytest.mark.parametrize("backend", ["numpy_nullable", "pyarrow"])
def test_nullable_and_pyarrow_columns_fit_as_numpys_do(client, tmp_path, backend):
    # as a user reading Parquet with dtype_backend=...: Float64 or double[pyarrow] columns, Int64 labels, kept
    # integers as the single machine keeps them; a missing value in X or y named
    import pandas as pd

    pytest.importorskip("pyarrow", reason="Parquet needs pyarrow")
    dd = pytest.importorskip("dask.dataframe")
    rng = np.random.default_rng(6)
    y = rng.choice([3, 1, 2], 2000)
    frame = pd.DataFrame(rng.normal(size=(2000, 3)) + (y == 2)[:, None], columns=["a", "b", "c"])
    frame["label"] = y
    frame.to_parquet(tmp_path / "d.parquet")
    read = dd.read_parquet(tmp_path / "d.parquet", dtype_backend=backend)
    assert not isinstance(read.dtypes["a"], np.dtype) and not isinstance(read.dtypes["label"], np.dtype)
    X = read[["a", "b", "c"]]
    est = pdk.DaskOPNBClassifier(ndim=2, nbin=200).fit(X, read["label"])
    ref = pdk.DaskOPNBClassifier(ndim=2, nbin=200).fit(frame[["a", "b", "c"]].to_numpy(), y)
    assert np.array_equal(est.model_.V, ref.model_.V) and np.array_equal(est.model_.W, ref.model_.W)
    assert est.classes_.tolist() == [1, 2, 3] and est.classes_.dtype.kind == "i"
    assert np.array_equal(np.asarray(est.predict(X).compute()), ref.predict(frame[["a", "b", "c"]].to_numpy()))
    holed = frame.astype({"b": "Float64", "label": "Int64"})
    holed.loc[5, "b"] = pd.NA
    with pytest.raises(ValueError, match="NaN"):
        pdk.DaskOPNBClassifier(ndim=2, nbin=200).fit(dd.from_pandas(holed[["a", "b", "c"]], npartitions=2),
                                                     dd.from_pandas(holed["label"], npartitions=2))
    holed = frame.astype({"label": "Int64"})
    holed.loc[7, "label"] = pd.NA
    with pytest.raises(ValueError, match="y contains missing values"):
        pdk.DaskOPNBClassifier(ndim=2, nbin=200).fit(dd.from_pandas(holed[["a", "b", "c"]], npartitions=2),
                                                     dd.from_pandas(holed["label"], npartitions=2))


def test_object_labels_numpy_cannot_sort_are_named(client, data, reference):
    # numpy's sort of object labels raised a TypeError at None or NaN among strings, and at mixed types
    X, y = data
    names = np.array(["a", "b", "c"], dtype=object)[y]
    Xd = da.from_array(X, chunks=N // 3)
    for na in (None, np.nan):
        holed = names.copy()
        holed[N // 2] = na
        with pytest.raises(ValueError, match="y contains missing values"):
            pdk.OPNB(Xd, da.from_array(holed, chunks=N // 3), ndim=2, client=client)
    mixed = names.copy()
    mixed[1] = 1
    with pytest.raises(ValueError, match=r"y's labels \(int, str\) have no order"):
        pdk.OPNB(Xd, da.from_array(mixed, chunks=N // 3), ndim=2, client=client)
    # strings in an object array: the single machine's classes and fit
    g = pdk.OPNB(Xd, da.from_array(names, chunks=N // 3), ndim=2, nbin=300, client=client)
    from pyopnb.grid_model import grid_model

    ref = grid_model(reference)
    assert list(g.ynames) == ["a", "b", "c"] and np.array_equal(g.V, ref.V) and g.fval == ref.fval
