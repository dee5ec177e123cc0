"""One thread setting for every parallel region, and results that do not depend on it."""
import os
import subprocess
import sys

import numpy as np
import pytest

from pyopnb import OPNB, _ksum
from pyopnb import _threads
from pyopnb._threads import ThreadCountWarning, available_cores, resolve
from pyopnb.ksum import DEFAULT_BETA, fk_sum
from pyopnb.objective import objective_and_gradient


@pytest.fixture(autouse=True)
def _sixty_four_cores(request, monkeypatch):
    """64 usable cores, so that counts above this machine's reach the core
    (the tests of the cap set their own)."""
    if "real_cores" not in request.keywords:
        monkeypatch.setattr(_threads, "available_cores", lambda: 64)


def test_explicit_count_wins_and_bad_counts_are_refused(monkeypatch):
    monkeypatch.setenv("PYOPNB_NUM_THREADS", "3")
    assert resolve(5) == 5
    assert resolve(-1) == 64
    for bad in (0, -2, 1.5, "x", True, "2.5"):
        with pytest.raises(ValueError, match="threads"):
            resolve(bad)


def test_environment_then_openmp(monkeypatch):
    from threadpoolctl import threadpool_info, threadpool_limits

    monkeypatch.setenv("PYOPNB_NUM_THREADS", "3")
    assert resolve() == 3
    monkeypatch.setenv("PYOPNB_NUM_THREADS", "zero")
    with pytest.raises(ValueError, match="PYOPNB_NUM_THREADS"):
        resolve()
    monkeypatch.delenv("PYOPNB_NUM_THREADS")
    # threadpoolctl sees the OpenMP runtime the core runs on and limits it
    assert any(lib["user_api"] == "openmp" for lib in threadpool_info())
    with threadpool_limits(limits=1, user_api="openmp"):
        assert resolve() == 1
    with threadpool_limits(limits=3, user_api="openmp"):
        assert resolve() == 3
        # a fit's count reaches everything it calls: its evaluator and the compiled core
        from pyopnb.formulation import RFormulation
        from pyopnb.labels import factor

        rng = np.random.default_rng(0)
        X, y = rng.normal(size=(40, 3)), np.repeat([0, 1], 20)
        levels, codes = factor(y)
        for nbin in (None, 100):
            ev = RFormulation().setup(X, codes, levels, 2, nbin=nbin, threads=2).evaluator
            assert ev.threads == 2 and ev.core.threads == 2
        assert resolve(4) == 4


def test_the_default_count_follows_the_work(monkeypatch):
    """A small fit runs on one thread by default (more only start and wait,
    and on a busy machine wait for the slowest core); a count asked for is
    kept whatever the work."""
    from threadpoolctl import threadpool_limits

    from pyopnb.formulation import RFormulation

    monkeypatch.delenv("PYOPNB_NUM_THREADS", raising=False)
    per = _threads.WORK_PER_THREAD
    seen = []
    setup = RFormulation.setup
    monkeypatch.setattr(RFormulation, "setup", lambda self, *a: seen.append(a[6]) or setup(self, *a))
    rng = np.random.default_rng(0)
    with threadpool_limits(limits=8, user_api="openmp"):
        assert resolve(None, 1) == 1
        assert resolve(None, 3 * per) == 3 and resolve(None, 3 * per + 1) == 4
        assert resolve(None, 100 * per) == 8 == resolve()
        assert resolve(2, 1) == 2
        monkeypatch.setenv("PYOPNB_NUM_THREADS", "2")
        assert resolve(None, 1) == 2
        monkeypatch.delenv("PYOPNB_NUM_THREADS")
        OPNB(rng.normal(size=(40, 3)), np.repeat([0, 1], 20), ndim=2)
        X = rng.normal(size=(12_000, 20))
        y = rng.integers(0, 3, 12_000)
        OPNB(X, y, ndim=5)
        OPNB(X, y, ndim=5, threads=1)
    assert seen == [1, -(-_threads.work(12_000, 20, 5, 3) // per), 1]
    assert seen[1] > 1


@pytest.mark.real_cores
def test_omp_num_threads_is_the_default_in_a_fresh_process():
    env = {k: v for k, v in os.environ.items() if k != "PYOPNB_NUM_THREADS"}
    code = "import warnings; warnings.simplefilter('ignore'); from pyopnb._threads import resolve; print(resolve())"
    for omp, want in (("1", 1), ("3", min(3, available_cores())), (None, available_cores())):
        if omp is None:
            env.pop("OMP_NUM_THREADS", None)
        else:
            env["OMP_NUM_THREADS"] = omp
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert int(out.stdout.strip()) == want


@pytest.mark.real_cores
def test_counts_above_the_cores_are_capped_with_one_warning(monkeypatch):
    """threads=64 on 2 cores made a 50-point fit 7 times slower, 10000 did
    not finish: a count above the usable cores takes the cores, from every
    source, with one warning a process that names the source."""
    monkeypatch.setattr(_threads, "available_cores", lambda: 2)
    monkeypatch.setattr(_threads, "_warned", False)
    with pytest.warns(ThreadCountWarning, match=r"threads=64 is more than the 2 cores") as record:
        assert resolve(64) == 2
    assert record[0].filename == __file__  # attributed to the caller, not to pyopnb
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve(10_000) == 2  # once a process
        assert resolve(2) == 2 and resolve(-1) == 2 and resolve(1) == 1
        monkeypatch.setenv("PYOPNB_NUM_THREADS", "8")
        assert resolve() == 2
    monkeypatch.setattr(_threads, "_warned", False)
    with pytest.warns(ThreadCountWarning, match="PYOPNB_NUM_THREADS='8'"):
        assert resolve() == 2
    monkeypatch.delenv("PYOPNB_NUM_THREADS")
    monkeypatch.setattr(_threads, "_warned", False)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=5, user_api="openmp"), pytest.warns(ThreadCountWarning, match="OpenMP"):
        assert resolve() == 2
    # a fit with threads=10000 finishes on the cores, with the warning from the user's line
    monkeypatch.setattr(_threads, "_warned", False)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 4))
    y = (X[:, 0] > 0).astype(int)
    with pytest.warns(ThreadCountWarning) as record:
        m = OPNB(X, y, threads=10_000)
    assert record[0].filename == __file__
    ref = OPNB(X, y, threads=1)
    np.testing.assert_array_equal(m.V, ref.V)


@pytest.mark.real_cores
def test_joblib_workers_do_not_oversubscribe():
    """GridSearchCV(n_jobs=k) runs fits in joblib's worker processes, which
    set OpenMP's count to cores // k: the fits there take it."""
    from joblib import Parallel, delayed

    counts = Parallel(n_jobs=2)(delayed(resolve)() for _ in range(2))
    assert all(1 <= c <= max(1, available_cores() // 2) for c in counts)


def _problem(seed, n, d, ndim, K):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.integers(0, K, n)
    X[:, 0] += y
    return rng.normal(size=(d, ndim)) * 0.5, X, y, np.bincount(y, minlength=K) / n


@pytest.mark.parametrize("ndim", [1, 3])
def test_results_do_not_depend_on_the_thread_count_past_one_block(ndim):
    """n = 70000 is past the 65536-point blocks of the binned passes and of
    X'dZ: partial sums added in a fixed order, so 1, 2, 3 and 5 threads
    (oversubscribed here) give the same bits; one bandwidth and several."""
    V, X, y, PI = _problem(ndim, 70_000, 4, ndim, 3)
    for h in (np.full(3, 0.4), np.array([0.3, 0.4, 0.5])):
        for nbin, compat in ((None, "R"), (300, "R"), (300, "correct")):
            ref = objective_and_gradient(V, X, y, PI, h, nbin=nbin, compat=compat, threads=1)
            for threads in (2, 3, 5):
                f, g = objective_and_gradient(V, X, y, PI, h, nbin=nbin, compat=compat, threads=threads)
                assert f == ref[0], (nbin, compat, threads)
                np.testing.assert_array_equal(g, ref[1])


def test_journal_fits_do_not_depend_on_the_thread_count_past_one_part():
    """The journal's interpolated grid and its exact sums at n past the
    parts threads take as they come free (4096 points) and the blocks of
    its passes: 1, 2 and 3 threads give the same model, bit for bit."""
    from pyopnb import opnb_journal

    _, X, y, _ = _problem(11, 20_000, 4, 2, 3)
    for nbin in (1000, None):
        ref = opnb_journal(X, y, ndim=2, nbin=nbin, maxit=10, threads=1)
        for threads in (2, 3):
            m = opnb_journal(X, y, ndim=2, nbin=nbin, maxit=10, threads=threads)
            assert m.fval == ref.fval
            np.testing.assert_array_equal(m.V, ref.V)


def test_pace_moves_to_the_count_that_runs_faster():
    """Half the threads tried at the third evaluation and kept where faster;
    a try that loses doubles the wait before the next."""
    from pyopnb._threads import Pace

    pace = Pace(4)
    assert [pace.next(t) for t in (9.0, 1.0, 1.0)] == [4, 4, 2]  # the first untimed; the third tries 2
    assert pace.next(0.5) == 2 and pace.current == 2  # 2 ran in half the time: kept
    counts = [pace.next(0.5) for _ in range(8)]
    assert counts[-1] == 4 and pace.trying == 4  # EVERY later: double, in turn
    assert pace.next(2.0) == 2 and pace.wait == 2 * Pace.EVERY  # slower: back, and wait longer
    assert Pace(1).next(1.0) == 1 and all(Pace(1).next(t) == 1 for t in (1.0, 5.0, 0.1))


@pytest.mark.parametrize("nbin, compat", [(None, "R"), (300, "R"), (300, "correct"), (300, "journal")])
def test_evaluations_on_changing_thread_counts_give_the_same_bits(nbin, compat):
    """An evaluator switched between thread counts from one evaluation to
    the next (as a fit's Pace does) gives the bits of one count throughout."""
    from pyopnb.evaluation import check_problem
    from pyopnb.formulation import formulation

    V, X, y, PI = _problem(12, 9000, 4, 3, 3)
    form = formulation("journal" if compat == "journal" else compat)
    prob = check_problem(X, y, PI, np.array([0.3, 0.4, 0.5]))
    fixed = form.evaluator(prob, nbin, 1)
    moving = form.evaluator(prob, nbin, 3)
    for step, count in enumerate((3, 1, 2, 3, 1)):
        moving.use_threads(count)
        assert moving.threads == count and moving.core.threads == count
        W = V + 0.01 * step
        f1, g1 = fixed.value_and_grad(W)
        f2, g2 = moving.value_and_grad(W)
        assert f1 == f2
        np.testing.assert_array_equal(g1, g2)
    moving.use_threads(64)
    assert moving.threads == 3  # at most the count its scratch was made for


def test_blocks_agree_with_one_pass():
    """The blocked binned passes against the one-block order they replace:
    equal to rounding (the blocks only regroup the additions)."""
    V, X, y, PI = _problem(9, 70_000, 4, 2, 3)
    h = np.full(3, 0.4)
    f, g = objective_and_gradient(V, X, y, PI, h, nbin=300, compat="R", threads=2)
    # the same problem as 35000 duplicated points: one block each, the same densities
    half = slice(0, 35_000)
    Xd = np.vstack([X[half], X[half]])
    yd = np.concatenate([y[half], y[half]])
    f2, g2 = objective_and_gradient(V, Xd, yd, np.bincount(yd) / yd.size, h, nbin=300, compat="R", threads=2)
    f1, g1 = objective_and_gradient(V, X[half], y[half], np.bincount(y[half]) / 35_000, h, nbin=300, compat="R",
                                    threads=2)
    assert f2 == pytest.approx(f1, rel=1e-13)
    np.testing.assert_allclose(g2, g1, rtol=1e-10, atol=1e-13)
    assert np.isfinite(f) and g.shape == (4, 2)


def test_kernel_sums_and_fits_take_threads():
    # past the work that gives a parallel region a second thread (threads.h's PYOPNB_REGION_WORK)
    rng = np.random.default_rng(4)
    x, w, e = rng.normal(size=40_000), rng.uniform(size=40_000), rng.normal(size=20_000)
    ref = fk_sum(x, w, 0.3, e, type="both", threads=1)
    for threads in (2, 3):
        np.testing.assert_array_equal(fk_sum(x, w, 0.3, e, type="both", threads=threads), ref)
        np.testing.assert_array_equal(fk_sum(x, w, 0.3, e, nbin=200, threads=threads),
                                      fk_sum(x, w, 0.3, e, nbin=200, threads=1))
    S, _ = _ksum.exact_sums(x, w.reshape(-1, 1), 0.3, DEFAULT_BETA, e, True, False, False, 4)
    np.testing.assert_array_equal(S[:, 0], ref[:, 0])
    with pytest.raises(ValueError, match="threads"):
        fk_sum(x, w, 0.3, threads=0)
    X = rng.normal(size=(12_000, 5))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    a, b = OPNB(X, y, ndim=3, nbin=None, maxit=5, threads=1), OPNB(X, y, ndim=3, nbin=None, maxit=5, threads=3)
    np.testing.assert_array_equal(a.V, b.V)
    assert a.fval == b.fval


_TEAMS = """
import os, sys, warnings
import numpy as np
from pyopnb import OPNB
warnings.simplefilter("ignore")
n, nbin = int(sys.argv[1]), (None if sys.argv[2] == "exact" else 1000)
rng = np.random.default_rng(0)
X = rng.standard_normal((n, 6))
y = np.arange(n) % 2
X[:, :2] += y[:, None]
before = len(os.listdir("/proc/self/task"))
OPNB(X, y, ndim=2, nbin=nbin, threads=2)
print(before, len(os.listdir("/proc/self/task")))
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts the process's threads in /proc (Linux)")
@pytest.mark.parametrize("n, sums, more", [(300, "exact", False), (300, "binned", False), (60_000, "binned", True)])
@pytest.mark.real_cores
def test_small_regions_start_no_team(n, sums, more):
    """threads=2 asked for on a small fit: every parallel region has too
    little work for a second thread and runs on the caller's alone, so
    OpenMP never starts one (with a core busy elsewhere, a team's wait made
    such fits 2 to 5 times slower); a large fit's regions do start one."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYOPNB_NUM_THREADS", "OMP_NUM_THREADS")}
    env["OPENBLAS_NUM_THREADS"] = "1"  # numpy's BLAS starts no threads of its own
    out = subprocess.run([sys.executable, "-c", _TEAMS, str(n), sums], env=env, capture_output=True, text=True,
                         check=True)
    before, after = map(int, out.stdout.split())
    # on one usable core threads=2 is capped at one thread: no team at all
    assert (after > before) == (more and available_cores() >= 2), (before, after)


def test_journal_binned_objective_past_one_block():
    """The journal's interpolated binned objective at n = 70000 (two blocks):
    the same bits on any thread count, and its gradient the derivative of its
    value (central differences)."""
    from helpers import central_difference

    from pyopnb.objective import df_NB_normalised, f_NB_normalised

    V, X, y, PI = _problem(11, 70_000, 3, 2, 3)
    h = np.array([0.2, 0.3, 0.25])
    f1, g1 = f_NB_normalised(V, X, y, PI, h, nbin=200, threads=1), df_NB_normalised(V, X, y, PI, h, nbin=200, threads=1)
    for threads in (2, 3):
        assert f_NB_normalised(V, X, y, PI, h, nbin=200, threads=threads) == f1
        np.testing.assert_array_equal(df_NB_normalised(V, X, y, PI, h, nbin=200, threads=threads), g1)
    # points crossing cell edges put kinks in the value: the shorter step straddles fewer
    errs = [np.abs(g1 - central_difference(lambda W: f_NB_normalised(W, X, y, PI, h, nbin=200, threads=2), V, s)).max()
            for s in (1e-6, 1e-7)]
    assert min(errs) < 1e-5 * np.abs(g1).max()


def test_openmp_spin_default_and_user_setting():
    """pyopnb shortens OpenMP's idle spinning before its core loads, unless
    the user chose a value."""
    import os
    import subprocess
    import sys

    code = "import os, pyopnb; print(os.environ['GOMP_SPINCOUNT'])"
    env = {k: v for k, v in os.environ.items() if k != "GOMP_SPINCOUNT"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "10000"
    out = subprocess.run([sys.executable, "-c", code], env={**env, "GOMP_SPINCOUNT": "5"},
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "5"
