"""One evaluation of R's binned objective and its gradient on a Dask cluster
against one machine: the per-evaluation overhead of the distributed passes.

The single machine evaluates with ``threads`` threads
(``pyopnb.evaluation.Evaluator`` over ``r_grid``); the cluster is a
``LocalCluster`` of ``workers`` processes of one thread each, the rows
persisted on them in chunks of whole blocks (``pyopnb.dask.evaluator``).
Both evaluate at the same V and must give the same bits (checked). The
first table gives the fastest of ``--repeat`` evaluations after a warm-up,
and the overhead: the distributed time less the single machine's. The
second says where the cores went: the CPU seconds an evaluation (the mean
over the warm-up and the timed ones) of the single machine's process, and
on the cluster of each worker's task thread, of each worker's other
threads (its event loop: messages, transfers, heartbeats, the profiler)
and of the driver's process (the client, and the ``LocalCluster``'s
scheduler and nannies, which run in it). On a machine with as many cores
as the single machine's threads, any CPU the cluster spends outside its
task threads comes out of its wall time.

Run: python -m benchmarks.bench_dask [--n 2000000] [--p 50] [--K 10] [--ndim 20]
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Any, Callable, List, Tuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import best_of, table  # noqa: E402

# in the names Dask gives its workers' task threads ("<i>-Dask-Default-Threads-<pid>-<j>")
TASK_THREADS = "Dask-Default-Threads"


def process_cpu() -> Tuple[float, float]:
    """This process's CPU seconds (user + system): (its task threads', the
    rest's). Task threads are Dask's workers' (by :data:`TASK_THREADS`); in
    any other process all are the rest's."""
    import threading

    import psutil

    tasks = {t.native_id for t in threading.enumerate() if TASK_THREADS in t.name}
    proc = psutil.Process()
    total = sum(proc.cpu_times()[:2])
    task = sum(t.user_time + t.system_time for t in proc.threads() if t.id in tasks)
    return task, total - task


def counted(fn: Callable[[], Any], calls: List[int]) -> Callable[[], Any]:
    """``fn``, each call counted in ``calls[0]``."""
    def call() -> Any:
        calls[0] += 1
        return fn()
    return call


def run(n: int, p: int, K: int, ndim: int, nbin: int, workers: int, threads: int,
        repeat: int) -> Tuple[list, list]:
    """(the times' row, the CPU seconds' row)."""
    import dask.array as da
    import distributed

    from pyopnb import evaluation as ev
    from pyopnb.dask import evaluator
    from pyopnb.parts import BlockLayout

    rng = np.random.default_rng(0)
    y0 = rng.integers(0, K, n).astype(np.int32)
    X = rng.normal(size=(n, p)) + 0.3 * np.eye(K, p)[y0]
    h = np.ones(K)
    PI = np.bincount(y0, minlength=K) / n
    V = rng.normal(size=(p, ndim)) * 0.1
    prob = ev.check_problem(X, y0, PI, h)
    one = ev.Evaluator(prob, ev.r_grid(prob, nbin, threads), nbin, threads)
    f1, G1 = one.value_and_grad(V)
    calls = [0]
    before = sum(process_cpu())
    t_one = best_of(counted(lambda: one.value_and_grad(V), calls), repeat)
    cpu_one = (sum(process_cpu()) - before) / calls[0]
    del one
    B = BlockLayout(n).block_len
    per = -(-BlockLayout(n).nblk // workers) * B
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
        client = distributed.Client(cluster)
    try:
        P = evaluator(da.from_array(X, chunks=(per, p)), da.from_array(y0, chunks=per), h, PI, nbin, client, 1)
        f2, G2 = P.value_and_grad(V)
        if f2 != f1 or not np.array_equal(G2, G1):
            raise AssertionError("the cluster's evaluation is not the single machine's bits")
        calls = [0]
        at_workers, at_driver = client.run(process_cpu), sum(process_cpu())
        t_dist = best_of(counted(lambda: P.value_and_grad(V), calls), repeat)
        on_workers, driver = client.run(process_cpu), (sum(process_cpu()) - at_driver) / calls[0]
        P.runner.close()
    finally:
        client.close()
        cluster.close()
    # each worker's (task thread, other threads) seconds an evaluation, in the workers' order
    used = [[(b - a) / calls[0] for a, b in zip(at_workers[w], on_workers[w])] for w in sorted(on_workers)]
    times = [str(n), str(p), str(K), str(ndim), f"{threads} threads", f"{t_one:.3f}",
             f"{workers} x 1 thread", f"{t_dist:.3f}", f"{t_dist / t_one:.2f}", f"{(t_dist - t_one) * 1e3:.0f}"]
    cpu = [f"{cpu_one:.3f}", " / ".join(f"{u[0]:.3f}" for u in used), " / ".join(f"{u[1]:.3f}" for u in used),
           f"{driver:.3f}", f"{driver + sum(sum(u) for u in used):.3f}"]
    return [times], [cpu]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2_000_000)
    ap.add_argument("--p", type=int, default=50)
    ap.add_argument("--K", type=int, default=10)
    ap.add_argument("--ndim", type=int, default=20)
    ap.add_argument("--nbin", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2, help="the single machine's threads")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    times, cpu = run(args.n, args.p, args.K, args.ndim, args.nbin, args.workers, args.threads, args.repeat)
    print(table(times, ["n", "p", "K", "ndim", "one machine", "(s)", "cluster", "(s)", "ratio", "overhead (ms)"]))
    print()
    print("CPU seconds an evaluation:")
    print(table(cpu, ["one machine", "workers' task threads", "workers' other threads",
                      "driver (client, scheduler, nannies)", "cluster in all"]))


if __name__ == "__main__":
    main()
