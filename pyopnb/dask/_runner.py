"""The parts of a problem on Dask workers: a task per worker, or per chunk, and pass.

The rows sit on the workers as the chunks of a persisted dask array, each
chunk whole blocks of rows (:mod:`pyopnb.parts`). Each chunk's
:class:`~pyopnb.parts.RowPart` lives in the worker's process between the
passes of an evaluation (the n-sized state: Z, cells, posteriors, dZ), and
each pass's task returns what the grid side merges, per block. A pass that
reads the rows (the projection, t(X) dZ) is one task per chunk, so that a
worker holds one chunk's rows at a time however many it keeps (Dask may
spill the others to disk); the other passes are one task per worker over
the chunks it holds, without their rows.

A task carries the evaluation's earlier passes (their arguments each held
by a task of its own, fetched once by each worker), so that its result is a
function of the chunk's rows and the driver's data, whatever the part held
before: a task with the rows replays the passes its part has not made (its
worker was lost, or the part is new there); a task without them that finds
its part missing or behind returns BEHIND, and the chunk is run again by a
task that has them (Dask recomputes a lost chunk from X's graph). The
results are the same bits either way. A part made again elsewhere has its
old copy dropped from the worker it left, where that one is alive.
"""
from __future__ import annotations

import itertools
import sys
import threading
import uuid
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..part_stats import PartRows
from ..parts import PartSpec, RowPart

__all__ = ["DaskRunner", "DaskRows"]

# each worker process's parts: (fit token, chunk) -> [part, (evaluation, passes done)]
_PARTS: Dict[Tuple[str, int], List[Any]] = {}
_LOCK = threading.Lock()

# the parts' passes that read their rows (and can make a part afresh): a task per chunk, with its rows
READS_ROWS = frozenset({"extremes", "finish", "spreads", "r_extremes"})
# a task without the rows found a part missing or behind: the chunk is run again with its rows
BEHIND = "pyopnb.dask: part behind"


def _release_unused() -> None:
    """On a worker: hand back to the system the memory pyarrow's pool keeps
    from reading the source (Parquet), freed but held for reuse. Its
    default pool (mimalloc or jemalloc) keeps a few hundred MB after a
    worker has read its share of a Parquet data set: memory the parts'
    state needs through the fit, and which Dask counts as unmanaged
    towards its pause threshold."""
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        pa.default_memory_pool().release_unused()


def _is_behind(result: Any) -> bool:
    return isinstance(result, str) and result == BEHIND


def _parts_at(token: str, spec: PartSpec, evaluation: int, history: Sequence[Tuple[str, tuple]],
              chunks: Sequence[Tuple[int, int]], data: Sequence[np.ndarray],
              rerun_last: bool) -> List[Tuple[Any, Any]]:
    """On a worker: each of ``chunks``' parts (chunk, its first block) brought to the end of
    ``history`` (the evaluation's passes so far, each (method, args)),
    whose rows X and codes y0 are ``data`` (X_0, y_0, X_1, y_1, ...), with
    the last pass's result (None where it was not made here). A part not at
    the pass before replays the evaluation's passes from the start;
    ``rerun_last``: the last pass is made even where the part made it.
    Without ``data`` (no rows), a part that would need them (missing, or
    not at the pass before) is left as it is, its result BEHIND."""
    out = []
    for c, (chunk, first_block) in enumerate(chunks):
        key = (token, chunk)
        with _LOCK:
            entry = _PARTS.get(key)
            if entry is None and data:
                entry = _PARTS[key] = [RowPart(data[2 * c], data[2 * c + 1], spec, first_block), (-1, 0)]
                # the chunk's rows have just been made (read from the source, maybe) and its state comes next
                _release_unused()
        done = entry[1] if entry is not None else (-1, 0)
        at = done[1] if done[0] == evaluation else -1
        if at == len(history) and not rerun_last:
            start = len(history)
        elif not data:
            if entry is None or at != len(history) - 1:
                out.append((None, BEHIND))
                continue
            start = at
        else:
            # passes of this evaluation already made here: they are replayed from the start where they are not
            start = at if 0 <= at < len(history) else 0
        part = entry[0]
        # the rows are the task's (Dask's, which it may spill between tasks), not kept by the part
        part.X = np.ascontiguousarray(data[2 * c], dtype=np.float64) if data else None
        result = None
        try:
            for step, (method, args) in enumerate(history):
                if step >= start:
                    result = getattr(part, method)(*args)
        finally:
            part.X = None
        entry[1] = (evaluation, len(history))
        out.append((part, result))
    return out


def _part_pass(token: str, spec: PartSpec, evaluation: int, history: Sequence[Tuple[str, tuple]],
               chunks: Sequence[Tuple[int, int]], rerun_last: bool, *data: np.ndarray) -> Tuple[str, List[Any]]:
    """On a worker: the worker's address, and the last pass of ``history``
    for each of ``chunks`` (:func:`_parts_at`)."""
    from distributed import get_worker

    return get_worker().address, [r for _, r in _parts_at(token, spec, evaluation, history, chunks, data, rerun_last)]


def _part_fold(token: str, spec: PartSpec, evaluation: int, history: Sequence[Tuple[str, tuple]],
               chunks: Sequence[Tuple[int, int]], names: Sequence[str], carry: Any, after: Any = None) -> Any:
    """On a worker: the kept arrays ``names`` of the last pass of
    ``history``, folded over ``chunks`` in order onto ``carry`` (the
    chunks' before them; None: the first); BEHIND where a part is not at
    the end of the history. ``after``: the results of the worker's tasks
    of that pass, which the fold waits for (they are not read)."""
    if _is_behind(carry):
        return carry
    for part, result in _parts_at(token, spec, evaluation, history, chunks, (), False):
        if _is_behind(result):
            return result
        carry = part.fold(names, carry)
    return carry


def _at(worker: str) -> Dict[str, Any]:
    """A task's placement: on ``worker`` where it holds the rows ("": none does now, anywhere)."""
    return dict(workers=[worker], allow_other_workers=True) if worker else {}


def _hold(args: tuple) -> tuple:
    """The driver's data of a pass, as a task's result."""
    return args


def _forget(token: str, chunks: Optional[Sequence[int]] = None) -> int:
    """On a worker: drop a fit's parts (only those of ``chunks`` where
    given); how many there were."""
    with _LOCK:
        keys = [k for k in _PARTS if k[0] == token and (chunks is None or k[1] in chunks)]
        for k in keys:
            del _PARTS[k]
    return len(keys)


class DaskRunner:
    """Carries :class:`~pyopnb.parts.PartsEvaluator`'s calls to the parts on
    a Dask cluster.

    X, y0: a dask array [n, d] of the scaled rows and one [n] of their
    0-based codes, chunked alike along the rows, each chunk whole blocks of
    rows (:func:`pyopnb.dask.block_chunks`), X in one chunk across its
    columns. They are persisted on the workers once; each pass is then one
    task per worker, on the chunks it holds.
    """

    def __init__(self, client: Any, X: Any, y0: Any, spec: PartSpec):
        from distributed import futures_of, wait

        if X.chunks[0] != y0.chunks[0]:
            raise ValueError("X and y0 must be chunked alike along the rows")
        if len(X.chunks[1]) != 1:
            raise ValueError("X must be one chunk across its columns")
        # each chunk's first block: a part's own blocks are numbered from it
        self._first = spec.layout.check_bounds(np.concatenate([[0], np.cumsum(X.chunks[0])]))[:-1]
        self.client = client
        self.spec = spec
        self.token = uuid.uuid4().hex
        self.X, self.y0 = client.persist([X, y0])
        by_key = {f.key: f for f in futures_of(self.X) + futures_of(self.y0)}
        self._data = [(by_key[kx[0]], by_key[ky])
                      for kx, ky in zip(self.X.__dask_keys__(), self.y0.__dask_keys__())]
        # placed before the first pass, so that each worker's task finds its chunks there (wait asks the
        # current client: this one, which need not be the process's default)
        with client.as_current():
            wait(list(by_key.values()))
        # the worker whose process holds each chunk's part: where its last pass ran (a pass sent elsewhere, where
        # that worker is paused or gone, makes the part again from the rows there)
        self._home = self._owners()
        self._evaluation = itertools.count()
        self._current = -1
        self.evaluations = 0
        # chunks run again with their rows after a task without them found their part missing or behind
        self.replays = 0
        self._history: List[Tuple[str, Any]] = []

    def _placed(self, chunks: Sequence[int]) -> List[Tuple[int, int]]:
        """Each chunk with its first block."""
        return [(c, self._first[c]) for c in chunks]

    def _owners(self) -> List[str]:
        """The worker holding each chunk now (by its X; "" where none does), in row order."""
        holders = self.client.who_has([fx for fx, _ in self._data])
        return [sorted(holders.get(fx.key) or ("",))[0] for fx, _ in self._data]

    def _homes(self) -> List[str]:
        """Each chunk's home (see __init__), or where its rows are now where
        that worker is gone ("": none holds them)."""
        alive = set(self.client.nthreads())
        if all(h in alive for h in self._home):
            return list(self._home)
        owners = self._owners()
        return [h if h in alive else owners[c] for c, h in enumerate(self._home)]

    def _run(self, tasks: List[Tuple[str, List[int]]], rows: bool, rerun_last: bool = True) -> List[Any]:
        """The history's last pass, a task for each (worker, chunks), each
        chunk's result in row order (None for chunks in no task)."""
        return self._collect(tasks, self.client.gather(self._submit(tasks, rows, rerun_last)))

    def _submit(self, tasks: List[Tuple[str, List[int]]], rows: bool, rerun_last: bool = True) -> List[Any]:
        """The tasks of the history's last pass, one for each (worker, chunks)."""
        return [self._pass(w, ch, rows, rerun_last) for w, ch in tasks]

    def _collect(self, tasks: List[Tuple[str, List[int]]], gathered: Sequence[Any]) -> List[Any]:
        """Each chunk's result of the pass's tasks (their results
        ``gathered``) in row order (None for chunks in no task); each
        chunk's home is where its part made the pass."""
        results: List[Any] = [None] * len(self._data)
        moved: Dict[str, List[int]] = {}
        for (_, chunks), (where, res) in zip(tasks, gathered):
            for c, r in zip(chunks, res):
                results[c] = r
                if not _is_behind(r):
                    if self._home[c] and self._home[c] != where:
                        moved.setdefault(self._home[c], []).append(c)
                    self._home[c] = where
        self._drop_stale(moved)
        return results

    def _drop_stale(self, moved: Dict[str, List[int]]) -> None:
        """Drop the copies of parts made again elsewhere from the workers
        they left (``moved``: worker -> chunks), where those are alive: a
        copy left there would hold its n-sized state to the end of the fit."""
        if not moved:
            return
        alive = set(self.client.nthreads())
        for worker, chunks in moved.items():
            if worker in alive:
                try:
                    self.client.run(_forget, self.token, chunks, workers=[worker])
                except (OSError, KeyError, ValueError):  # gone since: its parts went with it
                    pass

    def call(self, method: str, *args: Any) -> List[Any]:
        """Each part's ``method(*args)``, in part (row) order: an
        ``extremes`` call starts an evaluation."""
        return self._call(method, args, None)[0]

    def call_fold(self, names: Sequence[str], method: str, *args: Any) -> Tuple[List[Any], List[np.ndarray]]:
        """:meth:`call`, and :meth:`fold` of the arrays ``names`` that pass
        keeps, in one round trip: the fold's chain is sent with the pass,
        each of its tasks after the pass's task on its worker."""
        results, folded = self._call(method, args, tuple(names))
        if _is_behind(folded):
            # a part was not at the pass when the chain reached it (its worker lost, or the pass made elsewhere):
            # the pass's chunks are all where their parts made it now
            folded = self.fold(names)
        return results, folded

    def _call(self, method: str, args: tuple, names: Optional[Tuple[str, ...]]) -> Tuple[List[Any], Any]:
        """:meth:`call`, with the chain of :meth:`fold` of ``names`` after it
        (its result BEHIND where a part was not at the pass; None: no fold)."""
        if method == "extremes":
            self._current = next(self._evaluation)
            self.evaluations += 1
            self._history = []
        # held by a task, not scattered: a lost worker's copy is made again from the task, as Dask does for
        # any result
        self._history.append((method, self.client.submit(_hold, args, pure=False)))
        rows = method in READS_ROWS
        homes = self._homes()
        if rows:
            tasks = [(w, [c]) for c, w in enumerate(homes)]
        else:
            groups: Dict[str, List[int]] = {}
            for c, w in enumerate(homes):
                groups.setdefault(w, []).append(c)
            tasks = list(groups.items())
        futures = self._submit(tasks, rows)
        if names is not None:
            after: Dict[str, List[Any]] = {}
            for (w, _), f in zip(tasks, futures):
                after.setdefault(w, []).append(f)
            futures.append(self._chain(homes, names, after))
        gathered = self.client.gather(futures)
        results = self._collect(tasks, gathered[:len(tasks)])
        behind = [c for c, r in enumerate(results) if _is_behind(r)]
        if behind:
            self.replays += len(behind)
            again = self._run([(homes[c], [c]) for c in behind], True)
            for c in behind:
                results[c] = again[c]
        return results, (gathered[-1] if names is not None else None)

    def _pass(self, worker: str, chunks: List[int], rows: bool, rerun_last: bool = True) -> Any:
        """The task of the history's last pass over ``chunks`` (held by
        ``worker``; "": none now), with their rows or without
        (``rerun_last``: see :func:`_parts_at`)."""
        data = [f for c in chunks for f in self._data[c]] if rows else []
        return self.client.submit(_part_pass, self.token, self.spec, self._current, list(self._history),
                                  self._placed(chunks), rerun_last, *data, pure=False, **_at(worker))

    def fold(self, names: Sequence[str]) -> List[np.ndarray]:
        """The parts' kept arrays ``names`` (:meth:`pyopnb.parts.RowPart.fold`)
        folded in row order: a task for each run of consecutive chunks on one
        worker, each carrying on the one before, so one array a run crosses
        the network."""
        for _ in range(2):
            homes = self._homes()
            folded = self.client.gather(self._chain(homes, tuple(names)))
            if not _is_behind(folded):
                return folded
            # a part lost its state (its worker was lost): every chunk brought to the end of the history, a
            # chunk's rows at a time (parts there already make no pass), then the chain again
            self.replays += 1
            self._run([(w, [c]) for c, w in enumerate(homes)], True, False)
        raise RuntimeError("a part of the rows could not be brought to the end of the evaluation")

    def _chain(self, homes: Sequence[str], names: Tuple[str, ...],
               after: Optional[Dict[str, List[Any]]] = None) -> Any:
        """The future of the fold's chain over the chunks at ``homes``: a
        task for each run of consecutive chunks on one worker, each after
        the one before and, where ``after`` is given (worker -> the tasks of
        the pass there), after its worker's pass."""
        carry: Any = None
        start = 0
        for worker, run in itertools.groupby(homes):
            chunks = list(range(start, start + len(list(run))))
            start = chunks[-1] + 1
            carry = self.client.submit(_part_fold, self.token, self.spec, self._current, list(self._history),
                                       self._placed(chunks), names, carry, None if after is None else after[worker],
                                       pure=False, **_at(worker))
        return carry

    def close(self) -> None:
        """Drop the parts from the workers and release the persisted rows."""
        try:
            self.client.run(_forget, self.token)
        finally:
            self._data = []
            self.X = self.y0 = None


class DaskRows(PartRows):
    """The raw rows and codes of persisted dask arrays, chunk by chunk
    (``X_chunks``, ``y_chunks``: their futures, in row order), for the
    set-up's passes (:class:`pyopnb.part_stats.PartRows`): a chain is one
    task a chunk, each carrying on the one before; ``each`` one task a
    chunk, where it lies."""

    def __init__(self, client: Any, X_chunks: Sequence[Any], y_chunks: Sequence[Any], threads: int = 1):
        self.client, self.threads = client, threads
        self.X_chunks, self.y_chunks = list(X_chunks), list(y_chunks)

    def chain(self, step: Any, acc: Any, *args: Any) -> Any:
        for X, y0 in zip(self.X_chunks, self.y_chunks):
            acc = self.client.submit(step, X, y0, acc, *args, self.threads, pure=False)
        return np.asarray(acc.result())

    def each(self, step: Any, *args: Any) -> List[Any]:
        return self.client.gather([self.client.submit(step, X, y0, *args, self.threads, pure=False)
                                   for X, y0 in zip(self.X_chunks, self.y_chunks)])

    def release(self) -> None:
        """Let go of the chunks (Dask frees them once no one else holds them)."""
        self.X_chunks.clear()
        self.y_chunks.clear()
