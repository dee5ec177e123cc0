"""Running the study: tasks in parallel through joblib (any joblib backend, a
Dask cluster included), each result stored as soon as it arrives."""
from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path
from typing import Any, Iterator, List, Optional, Sequence

from .data import available, dataset_seed, load, preprocess
from .methods import DEFAULT_METHODS, METHODS
from .protocol import evaluate, protocol, splits
from .store import Store

__all__ = ["run_study"]


class _Bar:
    """tasks done of total, elapsed time and an estimate of the time left, on
    stderr: a bar redrawn in place on a terminal, else (a log) a line at
    every tenth of the tasks, without carriage returns."""

    def __init__(self, total: int, enabled: bool, stream=None):
        self.total, self.done, self.enabled, self.t0 = total, 0, enabled, time.perf_counter()
        self.stream = sys.stderr if stream is None else stream
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.next_line = 1

    def step(self, what: str) -> None:
        self.done += 1
        if not self.enabled:
            return
        el = time.perf_counter() - self.t0
        left = el / self.done * (self.total - self.done)
        counts = f"{self.done}/{self.total} {_hms(el)} elapsed, ~{_hms(left)} left"
        if not self.tty:
            if self.done >= self.next_line * self.total / 10 or self.done == self.total:
                self.stream.write(f"study: {counts} ({what})\n")
                self.stream.flush()
                while self.next_line * self.total / 10 <= self.done:
                    self.next_line += 1
            return
        width = 28
        fill = int(width * self.done / max(self.total, 1))
        self.stream.write(f"\rstudy [{'#' * fill}{'.' * (width - fill)}] {counts}  {what[:40]:<40}")
        if self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()


def _hms(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def _task(name, s, method, X, y, train, test, inner, quick, binary, paths):
    return name, s, method, evaluate(method, X, y, train, test, inner, quick, binary, paths)


@contextlib.contextmanager
def _backend(backend: str, scheduler: Optional[str], n_jobs: int) -> Iterator[None]:
    import joblib

    if backend == "loky":
        yield
        return
    if backend != "dask":
        raise ValueError(f"backend must be 'loky' or 'dask', got {backend!r}")
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ValueError("the dask backend needs dask.distributed: pip install 'dask[distributed]'") from None
    cluster = None
    if scheduler in (None, "local"):
        # a cluster on this machine: the same code runs on a remote one given its address
        cluster = LocalCluster(n_workers=max(1, n_jobs), threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(scheduler)
    try:
        with joblib.parallel_config(backend="dask"):
            yield
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_study(data: str | Path, out: str | Path, datasets: Optional[Sequence[str]] = None,
              methods: Optional[Sequence[str]] = None, n_splits: int = 10, quick: bool = False, n_jobs: int = 1,
              backend: str = "loky", scheduler: Optional[str] = None, seed: int = 0,
              progress: bool = True, command: Optional[str] = None, paths: bool = True) -> Store:
    """Run the papers' protocol on PMLB data sets, storing every result as it comes.

    For each data set: the papers' preprocessing (:func:`preprocess`),
    ``n_splits`` stratified 75/25 splits, tuning by stratified 5-fold CV (3
    with ``quick``) on each training part with the same folds for every
    method, scaling by the training sd, and the test error of each method.
    Results go to ``out/results.sqlite``; what is already there is not
    computed again, so an interrupted run resumes. Ctrl-C raises
    ``Interrupted``, saying how much is saved.

    Parameters
    ----------
    data : str or Path
        A folder of PMLB sets in the ``pmlb`` package's cache layout.
    out : str or Path
        The study's folder.
    datasets : sequence of str, optional
        The sets to run (default every set in ``data``).
    methods : sequence of str, optional
        Names from ``pyopnb.study.methods.METHODS`` (default
        ``DEFAULT_METHODS``, the papers' comparison).
    n_splits : int, default 10
        Train/test splits per set (the quick profile's default is 3).
    quick : bool, default False
        The quick profile: 3 splits by default, 3 folds and small grids.
    n_jobs : int, default 1
        Processes.
    backend : str, default "loky"
        joblib's backend; ``"dask"`` runs on a Dask cluster.
    scheduler : str, optional
        The Dask scheduler's address, with ``backend="dask"``.
    seed : int, default 0
        Seeds everything with each set's name, so that the same call gives
        the same results.
    progress : bool, default True
        Report progress on stderr.
    command : str, optional
        The command line that ran it, recorded with the run's time for the
        report.
    paths : bool, default True
        Tune a parameter by its path (one fit at its largest value) where
        the profile does (:mod:`pyopnb.study.methods`); False refits at
        every value, for measuring what a path changes. Recorded in the
        store's configuration, so the two are never mixed.

    Returns
    -------
    Store
        The results store.

    Examples
    --------
    >>> from pyopnb.study import run_study, write_report
    >>> run_study("PMLB_DIR", "out", datasets=["iris"], quick=True)  # doctest: +SKIP
    >>> write_report("out")  # doctest: +SKIP
    """
    from joblib import Parallel, delayed

    if isinstance(n_splits, bool) or int(n_splits) != n_splits or int(n_splits) < 1:
        raise ValueError(f"the number of splits must be a positive integer, got {n_splits!r}")
    if isinstance(n_jobs, bool) or int(n_jobs) != n_jobs or (int(n_jobs) < 1 and int(n_jobs) != -1):
        raise ValueError(f"the number of jobs must be a positive integer or -1 (every core), got {n_jobs!r}")
    here = set(available(data))  # the folder must exist: nothing is downloaded
    names = list(datasets) if datasets else sorted(here)
    missing = [n for n in names if n not in here]
    if missing:
        raise ValueError(f"data sets not found in {data}: {missing[:5]}")
    if not names:
        raise ValueError(f"{data}: no data sets (NAME/NAME.tsv.gz) in this folder")
    meths = list(methods) if methods else list(DEFAULT_METHODS)
    unknown = [m for m in meths if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown methods {unknown}; known: {', '.join(METHODS)}")
    config = {"splits": int(n_splits), "quick": bool(quick), "seed": int(seed),
              "protocol": protocol(quick)}
    if not paths:
        config["paths"] = False  # absent: the profile's own paths, as every store before the option
    store = Store(out, config)
    done = store.done()
    tasks: List[Any] = []
    for name in names:
        if all((name, s, m) in done for s in range(n_splits) for m in meths):
            continue
        X, y = load(name, data)
        dseed = dataset_seed(name, seed)
        X, y, info = preprocess(X, y, dseed)
        store.add_dataset(name, info)
        for s, (train, test, inner) in enumerate(splits(y, n_splits, 3 if quick else 5, dseed % (2 ** 31))):
            tasks += [(name, s, m, X, y, train, test, inner, quick, info["binary"], paths) for m in meths
                      if (name, s, m) not in done]
    store.begin_run(command)  # store.computed: what this call ran (0: everything was there already)
    bar = _Bar(len(tasks), progress)
    try:
        if tasks:
            with _backend(backend, scheduler, n_jobs):
                results = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(delayed(_task)(*t) for t in tasks)
                for name, s, m, row in results:
                    store.add(name, s, m, row)
                    bar.step(f"{name} {s + 1} {m}")
    except KeyboardInterrupt:
        raise Interrupted(store.computed, len(tasks), store.folder) from None
    return store


class Interrupted(Exception):
    """The study was interrupted (Ctrl-C): ``saved`` of ``total`` results of
    this run are in the store, and a rerun resumes."""

    def __init__(self, saved: int, total: int, folder: Path):
        super().__init__(f"interrupted; {saved} of {total} results of this run are saved in {folder}; run the same "
                         f"command again to resume")
        self.saved, self.total = saved, total
