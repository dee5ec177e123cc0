"""OPNB past one machine, on Dask: the same bits as one machine, whatever the chunking.

The rows stay on the workers; the driver holds V, the grids and
L-BFGS-B's state, nothing of size n. Every sum over the points goes by the
fixed blocks of rows (``_core/blocks.h``), so a chunking into whole blocks
gives the single-machine bits for any number of workers
(:mod:`pyopnb.parts`).

Needs the optional extra: ``pip install pyopnb[dask]``.
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np

try:
    import dask.array as da
    import distributed
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise ImportError("pyopnb.dask needs dask and distributed: pip install 'pyopnb[dask]'") from exc

from .. import _threads, part_stats
from ..labels import factor_levels
from ..part_fit import ProjectionFit, fit_projection as _fit_projection
from ..parts import BlockLayout, PartSpec, PartsEvaluator
from ._runner import DaskRunner

__all__ = ["fit_projection", "ProjectionFit", "evaluator", "block_chunks"]


def block_chunks(X: Any, n: Optional[int] = None) -> Any:
    """Rechunk X onto whole blocks of rows.

    Each chunk then holds whole blocks of rows
    (:class:`pyopnb.parts.BlockLayout`) and every column. A chunking already
    on block boundaries is kept; otherwise each chunk takes about as many
    blocks as X's chunks held rows, at least one.

    Parameters
    ----------
    X : dask array
        Rows first, of known chunk sizes.
    n : int, optional
        The rows of the problem X belongs to (default X's own).

    Returns
    -------
    dask array
        X, chunked on block boundaries.
    """
    X = da.asarray(X)
    rows = X.chunks[0]
    if any(np.isnan(r) for r in rows):
        raise ValueError("X's chunk sizes are unknown: compute them first (to_dask_array(lengths=True))")
    n = int(sum(rows)) if n is None else int(n)
    lay = BlockLayout(n)
    bounds = np.cumsum(rows)[:-1]
    wide = {1: -1} if X.ndim == 2 else {}
    if np.all(bounds % lay.block_len == 0):
        return X.rechunk(wide) if wide else X
    per = max(1, int(round(float(np.median(rows)) / lay.block_len)))
    return X.rechunk({0: per * lay.block_len, **wide})


def _client(client: Optional[Any]) -> Tuple[Any, Optional[Any]]:
    """(the client to use, a cluster made here to close after, or None)."""
    if client is not None:
        return client, None
    try:
        return distributed.get_client(), None
    except ValueError:
        cluster = distributed.LocalCluster(processes=True, dashboard_address=None)
        return distributed.Client(cluster), cluster


def evaluator(X: Any, y0: Any, h: Any, PI: Any, nbin: int = 1000, client: Optional[Any] = None,
              threads: int = 1) -> PartsEvaluator:
    """R's binned objective and its gradient with the rows on a Dask cluster.

    The same bits as ``pyopnb.evaluation.Evaluator`` over ``r_grid`` on one
    machine, whatever the chunking (:class:`pyopnb.parts.PartsEvaluator`
    over a :class:`pyopnb.dask.DaskRunner`). Close it with
    ``.runner.close()``, which drops the rows from the workers.

    Parameters
    ----------
    X : dask array
        The scaled rows [n, d].
    y0 : dask array
        Their 0-based class codes [n].
    h : array-like
        Each class's bandwidth [K].
    PI : array-like
        Each class's prior [K].
    nbin : int, default 1000
        Grid points per projected column.
    client : distributed.Client, optional
        The cluster's client (default: the active one).
    threads : int, default 1
        Each task's threads.

    Returns
    -------
    PartsEvaluator
        ``value(V)``, ``value_and_grad(V)`` and ``order_columns(V)``.
    """
    if client is None:
        client = distributed.get_client()
    X = da.asarray(X)
    y0 = da.asarray(y0)
    if X.ndim != 2 or y0.ndim != 1 or X.shape[0] != y0.shape[0]:
        raise ValueError(f"X must be [n, d] and y0 [n], got {X.shape} and {y0.shape}")
    n = int(X.shape[0])
    Xc = block_chunks(X.astype(np.float64), n)
    yc = y0.astype(np.int32).rechunk({0: Xc.chunks[0]})
    h = np.ascontiguousarray(h, dtype=np.float64)
    PI = np.ascontiguousarray(PI, dtype=np.float64)
    counts = np.bincount(np.asarray(yc.compute()), minlength=PI.size)
    spec = PartSpec(h=h, PI=PI, counts=counts, n=n, nbin=int(nbin), threads=int(threads))
    return PartsEvaluator(DaskRunner(client, Xc, yc, spec), spec)


def _as_rows(X: Any) -> Tuple[Any, Optional[Tuple[str, ...]]]:
    """X as a float64 dask array [n, d] of known chunk sizes, and its column names (a dataframe's)."""
    names = None
    if hasattr(X, "to_dask_array"):
        names = tuple(str(c) for c in X.columns)
        bad = [c for c, t in zip(X.columns, X.dtypes) if not (np.issubdtype(t, np.number) or t == bool)]
        if bad:
            raise ValueError(f"X's columns {bad} are not numeric: OPNB needs numbers")
        X = X.to_dask_array(lengths=True)
    X = da.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got shape {X.shape}")
    return X.astype(np.float64), names


def _codes(y: np.ndarray, sorted_levels: np.ndarray, order: np.ndarray) -> np.ndarray:
    """A chunk's labels as 0-based codes into the levels (sorted_levels[order]
    the levels' numpy order)."""
    pos = np.clip(np.searchsorted(sorted_levels, y), 0, sorted_levels.size - 1)
    if not np.array_equal(sorted_levels[pos], y):
        raise ValueError("y holds a label outside its levels")
    return order[pos].astype(np.int32)


def _check_finite(X: np.ndarray) -> np.ndarray:
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinite values")
    return X


def fit_projection(X: Any, y: Any, ndim: Optional[int] = None, lam: float = 1e-3, V0: Any = None,
                   scale: bool = True, nbin: int = 1000, *, maxit: int = 100, client: Optional[Any] = None,
                   threads: int = 1, callback: Optional[Any] = None) -> ProjectionFit:
    """Fit R's OPNB projection on a Dask cluster, the single machine's bits.

    :func:`pyopnb.OPNB`'s V, bandwidths, priors, scaling and fval on the
    same rows in the same order (R's binned objective), bit for bit, for
    any chunking and any number of workers (:mod:`pyopnb.part_fit`). The
    rows stay on the workers: R's scaling and start come from their chained
    column sums, each evaluation from one task per worker and pass; the
    driver holds V, the grids and L-BFGS-B's state. A worker lost during
    the fit is recomputed by Dask from X's graph, with the same bits.

    Parameters
    ----------
    X : dask array or dask DataFrame
        The rows [n, d], numeric, split by rows; rechunked onto whole
        blocks of rows where needed (:func:`block_chunks`).
    y : dask array or dask Series
        One label per row (numbers or strings), its levels sorted as
        :func:`pyopnb.OPNB` sorts them.
    ndim : int, optional
        Columns of V, as in :func:`pyopnb.OPNB`.
    lam : float, default 1e-3
        The penalty's weight.
    V0 : array-like, optional
        A (d, ndim) start on the scaled data (default R's).
    scale : bool, default True
        Scale the columns to unit sd, as R's OPNB.
    nbin : int, default 1000
        Grid points per projected column. Exact sums (None) are refused:
        they need a sort of all rows at every evaluation.
    maxit : int, default 100
        L-BFGS-B's iterations.
    client : distributed.Client, optional
        The cluster's client; default the active one, else a
        ``LocalCluster`` made for the fit and closed after.
    threads : int, default 1
        Each task's threads.
    callback : callable, optional
        ``callback(iteration, fval, gradient norm)``, as :func:`pyopnb.OPNB`'s.

    Returns
    -------
    ProjectionFit
        The projection, bandwidths, priors, scaling and fval; no rows.
    """
    if nbin is None:
        raise ValueError("pyopnb.dask fits sum on grids: exact sums (nbin=None) need a sort of all rows at every "
                         "evaluation; give nbin")
    Xr, names = _as_rows(X)
    yd = y.to_dask_array(lengths=True) if hasattr(y, "to_dask_array") else da.asarray(y)
    if yd.ndim != 1 or Xr.shape[0] != yd.shape[0]:
        raise ValueError(f"y must hold one label per row of X ({Xr.shape[0]}), got shape {yd.shape}")
    n, d = (int(s) for s in Xr.shape)
    cl, cluster = _client(client)
    try:
        Xc = block_chunks(Xr, n).map_blocks(_check_finite, dtype=np.float64)
        yc = yd.rechunk({0: Xc.chunks[0]})
        levels, _, _ = factor_levels(np.asarray(cl.compute(da.unique(yc)).result()))
        order = np.argsort(levels, kind="stable")
        yk = yc.map_blocks(_codes, np.asarray(levels)[order], order, dtype=np.int32)
        Xp, yp = cl.persist([Xc, yk])
        counts = np.asarray(cl.compute(da.bincount(yp, minlength=levels.size)).result())
        by_key = {f.key: f for f in distributed.futures_of(Xp)}
        pieces = [by_key[k[0]] for k in Xp.__dask_keys__()]
        held = [Xp]
        del Xp
        runners: List[DaskRunner] = []

        def chain(step: Any, acc: np.ndarray, *args: Any) -> np.ndarray:
            # one task a chunk, each carrying on the sums of the one before
            fut = cl.submit(step, pieces[0], acc, *args, threads, pure=False)
            for piece in pieces[1:]:
                fut = cl.submit(step, piece, fut, *args, threads, pure=False)
            return np.asarray(fut.result())

        def runner_for(mu: np.ndarray, scales: np.ndarray, spec: PartSpec) -> DaskRunner:
            Xs = held[0].map_blocks(part_stats.standardised, mu, scales, threads, dtype=np.float64)
            runners.append(DaskRunner(cl, Xs, yp, spec))
            # the raw rows' chunks are let go once the scaled ones are made: Dask keeps the tasks that make
            # them again, should a worker be lost
            held.clear()
            pieces.clear()
            by_key.clear()
            return runners[-1]

        try:
            return _fit_projection(chain, runner_for, n, d, counts, levels, ndim=ndim, lam=lam, V0=V0,
                                   scale=scale, nbin=nbin, maxit=maxit, threads=_threads.resolve(threads),
                                   callback=callback, names=names, caller="pyopnb.dask.fit_projection")
        finally:
            for r in runners:
                r.close()
            held.clear()
    finally:
        if cluster is not None:
            cl.close()
            cluster.close()
