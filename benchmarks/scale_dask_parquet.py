"""A binned fit read with ``dd.read_parquet`` from a Parquet data set larger
than any one worker's memory: time and peak memory per worker.

The data set (n rows of p normal columns, class means apart on the first
columns, K classes) is written by the workers themselves, a partition a
task, so the driver never holds it. The fit is ``pyopnb.dask.OPNB`` on a
``LocalCluster`` of ``--workers`` processes of one thread, each with
``--memory-limit``; Dask spills to disk what does not fit, and with
``--memory-target`` (the fraction of the limit Dask's own data may take
before it spills as data comes in) keeps at most that much of the rows in
memory: the fit's own state per row must fit beside it. The table gives
the fit's time, its evaluations, the seconds per evaluation, and each
worker's peak resident memory (its process's, from getrusage).

Run: python -m benchmarks.scale_dask_parquet [--n 20000000] [--p 20] [--workers 3] [--memory-limit 1.5GB]
     [--memory-target 0.6]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import table  # noqa: E402


def _peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def write_data(path: str, n: int, p: int, K: int, rows_per_part: int) -> None:
    """The data set in Parquet files, made and written by the workers."""
    import dask.array as da
    import dask.dataframe as dd

    rs = da.random.RandomState(0)
    y = rs.randint(0, K, size=n, chunks=rows_per_part)
    X = rs.normal(size=(n, p), chunks=(rows_per_part, p)) + 0.5 * (y[:, None] == da.arange(p)[None, :] % K) \
        * (da.arange(p)[None, :] < 2 * K)
    df = dd.from_dask_array(X, columns=[f"x{j}" for j in range(p)])
    df["label"] = dd.from_dask_array(y)
    df.to_parquet(path, write_index=False)


def run(args: argparse.Namespace) -> list:
    import dask.dataframe as dd
    import distributed

    import pyopnb.dask

    import dask

    # the workers take the driver's Dask config (their nannies pass it on)
    with warnings.catch_warnings(), dask.config.set({"distributed.worker.memory.target": args.memory_target}):
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                           memory_limit=args.memory_limit, dashboard_address=None,
                                           local_directory=args.spill)
        client = distributed.Client(cluster)
    try:
        if not os.path.exists(args.data):
            t0 = time.perf_counter()
            write_data(args.data, args.n, args.p, args.K, args.rows_per_part)
            print(f"wrote {args.data} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        df = dd.read_parquet(args.data)
        X = df[[c for c in df.columns if c != "label"]]
        evaluations = []
        t0 = time.perf_counter()
        model = pyopnb.dask.OPNB(X, df["label"], ndim=args.ndim, nbin=args.nbin, client=client, progress=True,
                                 callback=lambda i, f, g: evaluations.append(i))
        took = time.perf_counter() - t0
        peaks = client.run(_peak_rss_mb)
        print(model, file=sys.stderr)
    finally:
        client.close()
        cluster.close()
    worst = max(peaks.values())
    return [[str(args.n), str(args.p), str(args.K), str(args.ndim),
             f"{args.workers} x {args.memory_limit} (target {args.memory_target})",
             f"{took:.0f}", str(model.convergence), ", ".join(f"{v:.0f}" for v in sorted(peaks.values())),
             f"{worst:.0f}"]]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000_000)
    ap.add_argument("--p", type=int, default=20)
    ap.add_argument("--K", type=int, default=3)
    ap.add_argument("--ndim", type=int, default=2)
    ap.add_argument("--nbin", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--memory-limit", default="1.5GB")
    ap.add_argument("--memory-target", type=float, default=0.6,
                    help="Dask's distributed.worker.memory.target: the fraction of the limit its own data may take "
                         "before it spills as data comes in (Dask's default 0.6)")
    ap.add_argument("--rows-per-part", type=int, default=None,
                    help="rows a Parquet file (default: whole blocks of rows, about 500,000)")
    ap.add_argument("--data", default=None, help="the Parquet folder (default: one in the temp folder, kept)")
    ap.add_argument("--spill", default=None, help="the workers' spill folder")
    args = ap.parse_args(argv)
    import tempfile

    from pyopnb.parts import BlockLayout

    if args.rows_per_part is None:
        # files of whole blocks: the fit then takes the partitions as they are, with no rechunk
        B = BlockLayout(args.n).block_len
        args.rows_per_part = B * max(1, round(500_000 / B))

    args.data = args.data or os.path.join(tempfile.gettempdir(), f"pyopnb_scale_{args.n}_{args.p}_{args.K}.parquet")
    args.spill = args.spill or tempfile.mkdtemp(prefix="pyopnb_spill_")
    try:
        rows = run(args)
    finally:
        shutil.rmtree(args.spill, ignore_errors=True)
    print(table(rows, ["n", "p", "K", "ndim", "workers", "fit (s)", "convergence", "peak RSS per worker (MB)",
                       "largest (MB)"]))


if __name__ == "__main__":
    main()
