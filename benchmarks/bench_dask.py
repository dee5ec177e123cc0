"""One evaluation of R's binned objective and its gradient on a Dask cluster
against one machine: the per-evaluation overhead of the distributed passes.

The single machine evaluates with ``threads`` threads
(``pyopnb.evaluation.Evaluator`` over ``r_grid``); the cluster is a
``LocalCluster`` of ``workers`` processes of one thread each, the rows
persisted on them in chunks of whole blocks (``pyopnb.dask.evaluator``).
Both evaluate at the same V and must give the same bits (checked). The
table gives the fastest of ``--repeat`` evaluations after a warm-up, and
the overhead: the distributed time less the single machine's.

Run: python -m benchmarks.bench_dask [--n 2000000] [--p 50] [--K 10] [--ndim 20]
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import best_of, table  # noqa: E402


def run(n: int, p: int, K: int, ndim: int, nbin: int, workers: int, threads: int, repeat: int) -> list:
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
    t_one = best_of(lambda: one.value_and_grad(V), repeat)
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
        t_dist = best_of(lambda: P.value_and_grad(V), repeat)
        P.runner.close()
    finally:
        client.close()
        cluster.close()
    return [[str(n), str(p), str(K), str(ndim), f"{threads} threads", f"{t_one:.3f}",
             f"{workers} x 1 thread", f"{t_dist:.3f}", f"{t_dist / t_one:.2f}", f"{(t_dist - t_one) * 1e3:.0f}"]]


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
    rows = run(args.n, args.p, args.K, args.ndim, args.nbin, args.workers, args.threads, args.repeat)
    print(table(rows, ["n", "p", "K", "ndim", "one machine", "(s)", "cluster", "(s)", "ratio", "overhead (ms)"]))


if __name__ == "__main__":
    main()
