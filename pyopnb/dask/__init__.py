"""OPNB past one machine, on Dask: the same bits as one machine, whatever the chunking.

R's formulation (:func:`OPNB`), the paper's (``DaskOPNBClassifier(
formulation="correct")``) and the journal's (:func:`opnb_journal`, its
rows sorted on the workers first). The rows stay on the workers; the
driver holds V, the grids and
L-BFGS-B's state, nothing of size n. Every sum over the points goes by the
fixed blocks of rows (``_core/blocks.h``), so a chunking into whole blocks
gives the single-machine bits for any number of workers
(:mod:`pyopnb.parts`).

Needs the optional extra: ``pip install pyopnb[dask]``.
"""
from __future__ import annotations

import sys
import time
from typing import Any, List, Optional, Tuple

import numpy as np

try:
    import dask.array as da
    import distributed
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise ImportError("pyopnb.dask needs dask and distributed: pip install 'pyopnb[dask]'") from exc

from .. import _threads, part_stats
from ..grid_model import ClassGridBins, GridModel, from_parts
from ..fitting import collapse_rows, warn_if_collapsed
from ..formulation import Formulation, JournalFormulation, RFormulation
from .._validation import (_ROW_NAMES_ANY, _ROW_NAMES_FIRST, _frame, _refuse_r_row_names, check_aligned, check_ndim,
                           is_missing_label)
from ..labels import factor_levels
from ..model import _predictable, predict_arrays, projection
from ..part_fit import ProjectionFit, fit_projection as _fit_projection
from ..parts import R_GRID, BlockLayout, PartObjective, PartSpec, PartsEvaluator
from ._runner import DaskRows, DaskRunner
from ._sort import canonical_rows
from .estimator import DaskOPNBClassifier

__all__ = ["OPNB", "opnb_journal", "predict", "DaskOPNBClassifier", "GridModel", "fit_projection", "ProjectionFit",
           "evaluator", "block_chunks"]


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
              threads: int = 1, objective: PartObjective = R_GRID) -> PartsEvaluator:
    """A binned objective and its gradient with the rows on a Dask cluster.

    The same bits as the objective's evaluator on one machine, whatever the
    chunking (:class:`pyopnb.parts.PartsEvaluator` over a
    :class:`pyopnb.dask.DaskRunner`): ``pyopnb.evaluation.Evaluator`` over
    ``r_grid`` (R's, the default) or ``linear_passes`` (the paper's,
    ``objective=pyopnb.parts.LINEAR_GRID``), or ``NormalisedEvaluator``
    over ``interp_grid`` (the journal's, ``objective=pyopnb.parts.JOURNAL_GRID``).
    Close it with ``.runner.close()``, which drops the rows from the workers.

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
    objective : pyopnb.parts.PartObjective, default R_GRID
        The objective: ``pyopnb.parts.R_GRID``, ``LINEAR_GRID`` or ``JOURNAL_GRID``.

    Returns
    -------
    PartsEvaluator
        ``value(V)``, ``value_and_grad(V)`` and ``order_columns(V)``.
    """
    if not isinstance(objective, PartObjective):
        raise TypeError(f"objective must be pyopnb.parts.R_GRID, LINEAR_GRID or JOURNAL_GRID, got {objective!r}")
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
    counts = np.asarray(client.compute(da.bincount(yc, minlength=PI.size)).result())  # counted on the workers
    spec = PartSpec(h=h, PI=PI, counts=counts, n=n, nbin=int(nbin), threads=int(threads), objective=objective)
    return objective.evaluator(DaskRunner(client, Xc, yc, spec), spec)


def _in_memory_frame(data: Any) -> Any:
    """A dataframe or Series held here (pandas, polars, pyarrow, ...) as a
    dask one of one partition, its names (and a categorical's order) kept;
    anything else as it is."""
    if hasattr(data, "dask"):
        return data
    import dask.dataframe as dd

    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(data, (pd.DataFrame, pd.Series)):
        return dd.from_pandas(data, npartitions=1)
    frame = _frame(data)
    if frame is not None:
        return dd.from_pandas(frame.to_pandas(), npartitions=1)
    import narwhals as nw

    series = nw.from_native(data, series_only=True, pass_through=True)
    return dd.from_pandas(series.to_pandas(), npartitions=1) if isinstance(series, nw.Series) else data


def _as_rows(X: Any) -> Tuple[Any, Optional[Tuple[str, ...]]]:
    """X as a float64 dask array [n, d] of known chunk sizes, and its column names (a dataframe's)."""
    names = None
    X = _in_memory_frame(X)
    if hasattr(X, "to_dask_array"):
        from pandas.api.types import is_bool_dtype, is_numeric_dtype

        names = tuple(str(c) for c in X.columns)
        bad = [c for c, t in zip(X.columns, X.dtypes) if not (is_numeric_dtype(t) or is_bool_dtype(t))]
        if bad:
            raise ValueError(f"X's columns {bad} are not numeric: OPNB needs numbers")
        if not all(isinstance(t, np.dtype) for t in X.dtypes):
            # pandas' nullable and pyarrow-backed columns (dtype_backend=...), a missing value as NaN, which the
            # rows' check then names, as pyopnb.OPNB's does
            X = X.astype(np.float64)
        for j, c in enumerate(X.columns):
            if str(c) in _ROW_NAMES_ANY or (j == 0 and str(c) in _ROW_NAMES_FIRST):
                # R's write.csv row names read as a column: the same refusal as a frame held here (that column read)
                _refuse_r_row_names(np.asarray(X[c].compute(), dtype=np.float64).reshape(-1, 1), [c], "X")
        X = _frame_rows(X)
    X = da.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got shape {X.shape}")
    return X.astype(np.float64), names


def _frame_rows(frame: Any) -> Any:
    """A dask DataFrame or Series as a dask array of known chunk sizes.

    ``to_dask_array(lengths=True)`` counts the partitions' rows in a graph
    of its own, which Dask may optimise into other partitions than the
    array's (a column of ``dd.read_parquet``'s data read alone: "The number
    of items in 'lengths' does not match the number of partitions"); the
    array's own chunks are counted then."""
    try:
        return frame.to_dask_array(lengths=True)
    except ValueError:
        return frame.to_dask_array().compute_chunk_sizes()


def _lookup(values: np.ndarray, known: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """A chunk's labels (or category codes) as 0-based class codes: known
    [u] sorted, codes [u] each one's class."""
    pos = np.clip(np.searchsorted(known, values), 0, known.size - 1)
    if not np.array_equal(known[pos], values):
        raise ValueError("y holds a label outside its levels (or a missing one)")
    return codes[pos].astype(np.int32)


def _distinct(values: np.ndarray) -> List[Any]:
    """A chunk's distinct labels, in the order they come (none compared)."""
    return list(dict.fromkeys(np.asarray(values).ravel().tolist()))


def _object_labels(cl: Any, yd: Any) -> np.ndarray:
    """The distinct labels of an object array, sorted: found without
    comparing them, so that a missing one (None or NaN among strings, which
    numpy's sort raises a TypeError at) is named, and labels of types with
    no order between them are refused."""
    import dask

    chunks = cl.gather(cl.compute([dask.delayed(_distinct)(b) for b in yd.to_delayed().ravel()]))
    items = list(dict.fromkeys(v for chunk in chunks for v in chunk))
    if any(map(is_missing_label, items)):
        raise ValueError("y contains missing values")
    labels = np.empty(len(items), dtype=object)  # one dimension whatever the items are
    labels[:] = items
    try:
        return np.unique(labels)
    except TypeError:
        kinds = ", ".join(sorted({type(v).__name__ for v in items}))
        raise ValueError(f"y's labels ({kinds}) have no order to sort them by: give them as one type that has "
                         f"one (y.astype(str), say)") from None


def _labels(cl: Any, y: Any, chunks: Tuple[int, ...]) -> Tuple[Any, np.ndarray, Tuple[Any, ...]]:
    """y's 0-based class codes as a dask array in ``chunks``, its levels
    (:func:`pyopnb.labels.factor_levels`' rule: a categorical's own
    category order, R's factor order; else sorted as R sorts), and a
    categorical's levels after its last used one."""
    y = _in_memory_frame(y)
    categorical = str(getattr(y, "dtype", None)) == "category"
    if categorical and not y.cat.known:
        raise ValueError("y is a categorical whose categories are unknown (as dd.read_parquet gives them), so its "
                         "level order is too: y.cat.as_known() takes the data's own order, "
                         "y.cat.set_categories([...]) the order you give")
    src = y.cat.codes if categorical else y
    if not categorical and hasattr(src, "isna") and not isinstance(src.dtype, np.dtype):
        # pandas' nullable and pyarrow-backed labels: a missing one named (numpy's sort of them raises a
        # TypeError at pd.NA), the others as numpy holds them, so that Int64 labels stay integers
        if bool(cl.compute(src.isna().any()).result()):
            raise ValueError("y contains missing values")
        kept = getattr(src.dtype, "numpy_dtype", None)
        src = src.astype(kept if kept is not None and kept.kind in "biuf" else object)
    yd = _frame_rows(src) if hasattr(src, "to_dask_array") else da.asarray(src)
    if yd.ndim != 1 or sum(yd.chunks[0]) != sum(chunks):
        raise ValueError(f"y must hold one label per row of X ({sum(chunks)}), got shape {yd.shape}")
    yd = yd.rechunk({0: chunks})
    known = _object_labels(cl, yd) if yd.dtype == object else np.asarray(cl.compute(da.unique(yd)).result())
    if categorical:
        if known.size and known[0] < 0:
            raise ValueError("y contains missing values")
        import pandas as pd

        levels, known_codes, trailing = factor_levels(pd.Categorical.from_codes(known, y.cat.categories))
    else:
        levels, known_codes, trailing = factor_levels(known)
    return yd.map_blocks(_lookup, known, known_codes, dtype=np.int32), levels, trailing


def _check_finite(X: np.ndarray) -> np.ndarray:
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinite values")
    return X


def fit_projection(X: Any, y: Any, ndim: Optional[int] = None, lam: float = 1e-3, V0: Any = None,
                   scale: bool = True, nbin: int = 1000, *, maxit: int = 100, client: Optional[Any] = None,
                   threads: int = 1, callback: Optional[Any] = None, progress: bool = False,
                   checkpoint: Any = None, priors: Any = None, r_defects: bool = False) -> ProjectionFit:
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
        :func:`pyopnb.OPNB` sorts them; a categorical Series of known
        categories keeps their order, as an R factor's levels (unknown
        categories are refused: their order is not known).
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
    progress : bool, default False
        Print the cluster's dashboard link, then each iteration's fval,
        evaluations so far and seconds per evaluation, to stderr.
    checkpoint : str or os.PathLike, optional
        A file recording each evaluation as it is made. A fit stopped
        anywhere (the driver lost, Ctrl-C) and run again with the same
        file replays the record and goes on, with the bits of a fit never
        stopped (:mod:`pyopnb.checkpoint`). A file of another fit is
        refused and left as it is.
    priors : mapping or array-like of shape (n_classes,), optional
        The class priors, as :func:`pyopnb.OPNB`'s: a mapping from label to
        prior naming every class, or one per class in the order of y's
        levels; default the class proportions n_k / n.
    r_defects : bool, default False
        Where R's gradient sums would not be finite at an evaluated V (a
        grid point past about 745 bandwidths from every point of a class:
        :mod:`pyopnb.r_failures`), R's OPNB stops and keeps its start V.
        pyopnb's sums stay finite: by default the fit goes on and warns
        (:class:`pyopnb.RDefectWarning`); True keeps the start, as R does.
        As :func:`pyopnb.OPNB`'s; the check costs one more pass an
        evaluation, only where V spreads the rows that far.

    Returns
    -------
    ProjectionFit
        The projection, bandwidths, priors, scaling and fval; no rows.
    """
    form = RFormulation(lam=lam, scale=scale, r_defects=r_defects)
    return _fit(X, y, None, form, ndim=ndim, V0=V0, nbin=nbin, maxit=maxit, client=client, threads=threads,
                callback=callback, progress=progress, checkpoint=checkpoint, priors=priors,
                caller="pyopnb.dask.fit_projection")[0]


def OPNB(X: Any, y: Any, ndim: Optional[int] = None, lam: float = 1e-3, V0: Any = None, scale: bool = True,
         nbin: int = 1000, *, grid_nbin: Optional[int] = None, maxit: int = 100, client: Optional[Any] = None,
         threads: int = 1, callback: Optional[Any] = None, progress: bool = False,
         checkpoint: Any = None, priors: Any = None, r_defects: bool = False) -> GridModel:
    """R's OPNB on a Dask cluster: the model without its training rows.

    The fit is :func:`fit_projection`'s (:func:`pyopnb.OPNB`'s V, h, PI,
    mu, scales and fval, bit for bit, for any chunking), then one more
    pass over the rows bins their final projections into each column's
    class grids (:mod:`pyopnb.grid_model`): bit for bit
    ``grid_model(pyopnb.OPNB(X, y, ...), grid_nbin)``. Its predictions
    (:func:`predict`, or :func:`pyopnb.predict` on data held here) are
    R's predict with each class density summed over the class grids, not
    the rows: within :func:`pyopnb.grid_model.density_bound` of them.

    Parameters
    ----------
    X, y, ndim, lam, V0, scale, nbin, maxit, client, threads, callback, progress, checkpoint, priors, r_defects
        As :func:`fit_projection`'s; the priors are the model's too, in
        its predictions. As :func:`pyopnb.OPNB`, a model whose posteriors
        are the priors on 1000 training rows spread evenly (it predicts one
        class everywhere) is said so (:class:`pyopnb.CollapseWarning`). y may be a dask categorical Series
        of known categories: its category order is the level order, as
        an R factor's is.
    grid_nbin : int, optional
        Grid points per column of the class grids (default ``nbin``).

    Returns
    -------
    GridModel
        V, h, PI, mu, scales, fval, the levels and the class grids.

    Examples
    --------
    >>> import dask.array as da
    >>> from pyopnb.datasets import load_pima
    >>> import pyopnb.dask
    >>> d = load_pima()
    >>> X, y = da.from_array(d.X_train, chunks=(200, -1)), da.from_array(d.y_train, chunks=200)
    >>> m = pyopnb.dask.OPNB(X, y, ndim=2)  # doctest: +SKIP
    >>> pyopnb.dask.predict(m, da.from_array(d.X_test))["class"].compute()  # doctest: +SKIP
    """
    form = RFormulation(lam=lam, scale=scale, r_defects=r_defects)
    fit, model = _fit(X, y, nbin if grid_nbin is None else grid_nbin, form, ndim=ndim, V0=V0, nbin=nbin,
                      maxit=maxit, client=client, threads=threads, callback=callback, progress=progress,
                      checkpoint=checkpoint, priors=priors, caller="pyopnb.dask.OPNB")
    assert model is not None
    return model


def opnb_journal(X: Any, y: Any, ndim: Optional[int] = None, gamma: float = 1.0, nbin: int = 1000,
                 prescale: bool = False, V0: Any = None, *, grid_nbin: Optional[int] = None, maxit: int = 100,
                 client: Optional[Any] = None, threads: int = 1, callback: Optional[Any] = None,
                 progress: bool = False, checkpoint: Any = None, priors: Any = None) -> GridModel:
    """The published OPNB (:func:`pyopnb.opnb_journal`) on a Dask cluster:
    the model without its training rows.

    The fit is :func:`pyopnb.opnb_journal`'s on the same rows, bit for bit,
    for any chunking: as there, the rows are fitted in one canonical order
    (by class, then by each column, equal rows in the order they came),
    here sorted on the workers first (no row comes to the driver). The
    scaling, pre-scaling, bandwidths and LDA start come from the sorted
    rows' chained sums and block partials, each evaluation from one task
    per worker and pass. Then one more pass bins the final projections of
    the rows, in the order they came, into each column's class grids: bit
    for bit ``grid_model(pyopnb.opnb_journal(X, y, ...), grid_nbin)``.

    Parameters
    ----------
    X, y, maxit, client, threads, callback, progress, checkpoint, priors
        As :func:`OPNB`'s.
    ndim : int, optional
        Columns of V, 1 to d (default ``min(d, 20)``).
    gamma : float, default 1.0
        Bandwidth multiplier, > 0.
    nbin : int, default 1000
        Bins per projected column. Exact sums (None) are refused: they need
        a sort of all rows at every evaluation.
    prescale : bool, default False
        Multiply the scaled data by Sigma_W^(-1/2) first.
    V0 : ndarray of shape (d, ndim), optional
        A start on the scaled (and pre-scaled) data; default LDA's. A
        function of the rows is refused: it would need them in one place.
    grid_nbin : int, optional
        Grid points per column of the class grids (default ``nbin``).

    Returns
    -------
    GridModel
        V, h, PI, mu, scales, fval (the mean log-likelihood), lam = 0, the
        levels and the class grids.
    """
    form = JournalFormulation(gamma=gamma, prescale=prescale)
    fit, model = _fit(X, y, nbin if grid_nbin is None else grid_nbin, form, ndim=ndim, V0=V0, nbin=nbin,
                      maxit=maxit, client=client, threads=threads, callback=callback, progress=progress,
                      checkpoint=checkpoint, priors=priors, caller="pyopnb.dask.opnb_journal")
    assert model is not None
    return model


def _fit(X: Any, y: Any, grid_nbin: Optional[int], form: Formulation, *, ndim: Optional[int], V0: Any,
         nbin: Optional[int], maxit: int, client: Optional[Any], threads: int, callback: Optional[Any],
         progress: bool, caller: str, checkpoint: Any = None,
         priors: Any = None) -> Tuple[ProjectionFit, Optional[GridModel]]:
    """The fit of ``form`` (R's or the paper's, or the journal's on the rows in canonical
    order), and with grid_nbin its model of class grids."""
    form.check_parts()
    if nbin is None:
        raise ValueError("pyopnb.dask fits sum on grids: exact sums (nbin=None) need a sort of all rows at every "
                         "evaluation; give nbin")
    if grid_nbin is not None and int(grid_nbin) < 2:
        raise ValueError(f"grid_nbin must be at least 2, got {grid_nbin}")
    check_aligned(X, y)  # pandas X and y held here: paired by position, as R pairs them
    Xr, names = _as_rows(X)
    n, d = (int(s) for s in Xr.shape)
    thr = _threads.resolve(threads)
    cl, cluster = _client(client)
    try:
        Xc = block_chunks(Xr, n).map_blocks(_check_finite, dtype=np.float64)
        yk, levels, trailing = _labels(cl, y, Xc.chunks[0])
        # the rows as they came (the class grids bin them in that order) and as fitted
        raw, Xf, yf = Xc, Xc, yk
        if isinstance(form, JournalFormulation):
            # the journal fits its rows in one order whatever order they came in, as on one machine. The rows
            # and codes as they came are held through the fit, for the sort and for the class grids, which bin
            # them in that order: X's graph is never submitted again, where its keys, fused otherwise, would
            # meet the tasks the sort keeps known to the scheduler
            yk = cl.persist(yk)
            raw = cl.persist(Xc)
            Xf, yf = canonical_rows(cl, raw, yk)
            Xf = block_chunks(Xf, n)
            yf = yf.rechunk({0: Xf.chunks[0]})
        Xp, yp = cl.persist([Xf, yf])
        counts = np.asarray(cl.compute(da.bincount(yp, minlength=levels.size)).result())
        by_key = {f.key: f for f in distributed.futures_of(Xp) + distributed.futures_of(yp)}
        parts = DaskRows(cl, [by_key[k[0]] for k in Xp.__dask_keys__()], [by_key[k] for k in yp.__dask_keys__()],
                         thr)
        held = [Xp]
        del Xp
        runners: List[DaskRunner] = []

        def release() -> None:
            held.clear()
            parts.release()
            by_key.clear()

        def runner_for(rows: part_stats.RowMap, spec: PartSpec) -> DaskRunner:
            # R's raw rows are let go before the rows the objective reads are made, from X's graph again (a
            # chunk at a time): a worker never holds both, and Dask keeps the tasks that make either again. The
            # journal's sorted rows would take the sort again: its rows are made from those held, then let go
            if Xf is Xc:
                release()
                runners.append(DaskRunner(cl, Xc.map_blocks(rows.apply, thr, dtype=np.float64), yp, spec))
            else:
                runners.append(DaskRunner(cl, held[0].map_blocks(rows.apply, thr, dtype=np.float64), yp, spec))
                release()
            return runners[-1]

        if progress:
            callback = _Progress(cl, runners, callback, caller)
        try:
            fit = _fit_projection(parts, runner_for, n, d, counts, levels, form, ndim=ndim, V0=V0, nbin=nbin,
                                  maxit=maxit, threads=thr, callback=callback, names=names, caller=caller,
                                  checkpoint=checkpoint, priors=priors, stacklevel=4)
        finally:
            for r in runners:
                r.close()
            held.clear()
        if grid_nbin is None:
            return fit, None
        # the model's class grids bin the rows in the order they came, as grid_model() of pyopnb's model does
        lo, delta, W, X_rows = _class_grids(cl, raw, yp if Xf is Xc else yk, fit, int(grid_nbin), thr,
                                            collapse_rows(n))
        fields = dict(V=fit.V, PI=fit.PI, h=fit.h, nc=int(levels.size), mu=fit.mu, scales=fit.scales,
                      ynames=levels, lam=fit.lam, fval=fit.fval, feature_names=names,
                      convergence=fit.convergence, unused_levels=trailing)
        model = from_parts(fields, lo, delta, W, counts)
        warn_if_collapsed(model, X_rows, form, thr, caller)
        return fit, model
    finally:
        if cluster is not None:
            cl.close()
            cluster.close()


class _Progress:
    """A fit's progress on stderr: the dashboard's link, then a line an
    iteration (fval, evaluations so far, seconds per evaluation), before
    the user's callback."""

    def __init__(self, client: Any, runners: List[DaskRunner], callback: Optional[Any], caller: str):
        self.runners, self.callback, self.caller = runners, callback, caller
        self.start = time.perf_counter()
        link = getattr(client, "dashboard_link", None)
        print(f"{caller}: the cluster's dashboard: {link or 'none (no dashboard)'}", file=sys.stderr, flush=True)

    def __call__(self, iteration: int, fval: float, gnorm: float) -> Any:
        evals = sum(r.evaluations for r in self.runners)
        per = (time.perf_counter() - self.start) / max(evals, 1)
        print(f"{self.caller}: iteration {iteration}: fval {fval:.10g}, {evals} evaluations, "
              f"{per:.3f} s per evaluation", file=sys.stderr, flush=True)
        return None if self.callback is None else self.callback(iteration, fval, gnorm)


def _class_grids(cl: Any, Xc: Any, yp: Any, fit: ProjectionFit, nbin: int, threads: int,
                 rows: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The final projections' class grids (lo, delta, W), two passes over
    the raw rows' chunks (read again from X's graph, once), a task a chunk,
    and the raw rows ``rows`` [len(rows), d] from the same read."""
    bins = ClassGridBins(fit.counts, nbin, threads)
    Z, picked = cl.persist([Xc.map_blocks(projection, fit.mu, fit.V, threads, dtype=np.float64,
                                          chunks=(Xc.chunks[0], (fit.V.shape[1],))), Xc[rows]])
    X_rows = np.asarray(cl.compute(picked).result())
    del picked
    try:
        z_of = {f.key: f for f in distributed.futures_of(Z)}
        y_of = {f.key: f for f in distributed.futures_of(yp)}
        pairs = [(z_of[kz[0]], y_of[ky]) for kz, ky in zip(Z.__dask_keys__(), yp.__dask_keys__())]
        ext = cl.gather([cl.submit(bins.extremes, z, yy, pure=False) for z, yy in pairs])
        lo, delta = bins.axes(np.concatenate([e[0] for e in ext], axis=1), np.concatenate([e[1] for e in ext], axis=1))
        part_lin = cl.gather([cl.submit(bins.bin, z, yy, lo, delta, pure=False) for z, yy in pairs])
        return lo, delta, bins.merge(np.concatenate(part_lin, axis=1)), X_rows
    finally:
        del Z


def predict(model: Any, X: Any, ndim: Optional[int] = None, *, log: bool = False, threads: int = 1) -> dict:
    """:func:`pyopnb.predict` of rows on a Dask cluster, lazily (``map_blocks``).

    Each row's numbers are those :func:`pyopnb.predict` gives it on one
    machine, to the bit, whatever the chunking: a row's prediction depends
    on no other row.

    Parameters
    ----------
    model : GridModel or OPNBModel
        A fitted model (:func:`OPNB`'s, or one held here).
    X : dask array or dask DataFrame
        The rows [m, d]; a dataframe's columns are matched to the model's
        by name.
    ndim : int, optional
        The first ndim columns of V (default all).
    log : bool, default False
        As :func:`pyopnb.predict`'s.
    threads : int, default 1
        Each task's threads.

    Returns
    -------
    dict of dask arrays
        ``"posterior"`` [m, K], ``"class"`` [m] and with ``log=True``
        ``"log_posterior"`` [m, K]; computing them together computes each
        chunk once.
    """
    m = _predictable(model)
    X = _in_memory_frame(X)
    if hasattr(X, "to_dask_array"):
        names = [str(c) for c in X.columns]
        if m.feature_names is not None:
            missing = [c for c in m.feature_names if c not in names]
            extra = [c for c in names if c not in m.feature_names]
            if missing or extra:
                raise ValueError(f"X's columns do not match the model's: missing {missing}, not in the model "
                                 f"{extra}")
            X = X[list(m.feature_names)]
        X = _frame_rows(X)
    Xd = da.asarray(X)
    if Xd.ndim != 2 or Xd.shape[1] != m.V.shape[0]:
        raise ValueError(f"X must be [m, {m.V.shape[0]}], got shape {Xd.shape}")
    Xd = Xd.rechunk({1: -1})
    if ndim is not None:
        check_ndim(ndim, m.V.shape[1], "the model's columns, ncol(V)")  # here, not when a chunk is computed
    K = int(m.nc)
    width = 2 * K + 1 if log else K + 1

    def rows(block: np.ndarray) -> np.ndarray:
        post, code, logpost = predict_arrays(m, block, ndim, log, threads)
        return np.column_stack([post, code.astype(np.float64)] + ([logpost] if log else []))

    both = Xd.map_blocks(rows, dtype=np.float64, chunks=(Xd.chunks[0], (width,)))
    out = {"posterior": both[:, :K],
           "class": both[:, K].map_blocks(lambda c: np.asarray(m.ynames)[c.astype(np.intp)],
                                          dtype=np.asarray(m.ynames).dtype)}
    if log:
        out["log_posterior"] = both[:, K + 1:]
    return out
