"""The rows of a Dask array in the journal's canonical order, on the workers.

The journal formulation fits its rows sorted by class, then by each column
in turn, equal rows in the order they came
(:func:`pyopnb.formulation.canonical_order`): its sums then have the same
bits whatever order the rows came in. On a cluster the rows are sorted as
a sample sort, with no row on the driver:

1. each chunk sorts its rows by the key (code, x_0, ..., x_{d-1}, row),
   the row's place in the data last, so that no two keys are equal;
2. the driver takes evenly spaced keys of every sorted chunk and chooses
   splitters among them (a few per chunk: nothing of size n);
3. each chunk cuts its sorted rows at the splitters, and each bucket
   gathers its pieces, the chunks' in order, and sorts them by the key.

The buckets in order are the rows in canonical order: np.lexsort's, as the
single machine's, ties between the columns' equal values (0.0 and -0.0
among them) left to the next key and finally to the row's place.
"""
from __future__ import annotations

from typing import Any, List, Tuple

import numpy as np

__all__ = ["canonical_rows"]

# keys a chunk offers for the splitters, per bucket: more evens out the buckets
_OVERSAMPLE = 16


def _keys(X: np.ndarray, y0: np.ndarray, rows: np.ndarray) -> Tuple[np.ndarray, ...]:
    # np.lexsort's keys, the primary last: the row's place, the columns from the last, the code
    return (rows,) + tuple(X[:, j] for j in range(X.shape[1] - 1, -1, -1)) + (y0,)


def _sort_chunk(X: np.ndarray, y0: np.ndarray, start: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A chunk's rows, codes and places (from ``start``) sorted by the key."""
    rows = np.arange(start, start + X.shape[0], dtype=np.int64)
    order = np.lexsort(_keys(X, y0, rows))
    return np.ascontiguousarray(X[order]), np.ascontiguousarray(y0[order]), rows[order]


def _samples(sorted_chunk: Tuple[np.ndarray, np.ndarray, np.ndarray], count: int
             ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``count`` evenly spaced keys of a sorted chunk."""
    X, y0, rows = sorted_chunk
    at = np.unique(np.linspace(0, X.shape[0] - 1, num=min(count, X.shape[0])).astype(np.int64))
    return X[at], y0[at], rows[at]


def _cuts(sorted_chunk: Tuple[np.ndarray, np.ndarray, np.ndarray],
          splitters: Tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """Where the sorted chunk's rows cross each splitter: bucket b holds the
    rows [cuts[b], cuts[b + 1]) (a row equal to a splitter starts its bucket)."""
    X, y0, rows = sorted_chunk
    SX, Sy, Sr = splitters
    s = Sr.size
    # the splitters first: stable, a splitter sorts before a row with its key
    order = np.lexsort(_keys(np.concatenate([SX, X]), np.concatenate([Sy, y0]), np.concatenate([Sr, rows])))
    is_row = order >= s
    # the rows keep their order among themselves: row i's bucket is the splitters before it
    bucket = np.cumsum(~is_row)[is_row]
    return np.searchsorted(bucket, np.arange(s + 2), side="left")[: s + 2].astype(np.int64)


def _split(sorted_chunk: Tuple[np.ndarray, np.ndarray, np.ndarray],
           splitters: Tuple[np.ndarray, np.ndarray, np.ndarray]) -> List[Tuple[np.ndarray, ...]]:
    """The sorted chunk cut at the splitters: its piece of each bucket."""
    cut = _cuts(sorted_chunk, splitters)
    return [tuple(a[cut[b]:cut[b + 1]] for a in sorted_chunk) for b in range(cut.size - 1)]


def _bucket(*pieces: Tuple[np.ndarray, ...]) -> Tuple[np.ndarray, np.ndarray]:
    """A bucket from each chunk's piece of it, in chunk order, sorted by the key: (rows, codes)."""
    X = np.concatenate([p[0] for p in pieces])
    y0 = np.concatenate([p[1] for p in pieces])
    rows = np.concatenate([p[2] for p in pieces])
    order = np.lexsort(_keys(X, y0, rows))
    return np.ascontiguousarray(X[order]), np.ascontiguousarray(y0[order])


def canonical_rows(client: Any, X: Any, y0: Any) -> Tuple[Any, Any]:
    """X [n, d] and its 0-based codes y0 [n] (dask arrays chunked alike
    along the rows, X in one chunk across its columns) in canonical order:
    dask arrays of the sorted rows and codes, one chunk a bucket, held on
    the workers (see the module's docstring). Every step is a task of X's
    graph, so Dask makes a lost piece again from X; each chunk is sorted
    twice, once for the splitters and once for its pieces (X is best held:
    it is read twice)."""
    import dask.array as da
    from dask import delayed

    if X.chunks[0] != y0.chunks[0] or len(X.chunks[1]) != 1:
        raise ValueError("X and y0 must be chunked alike along the rows, X in one chunk across its columns")
    d = int(X.shape[1])
    starts = np.concatenate([[0], np.cumsum(X.chunks[0])[:-1]]).astype(np.int64)
    sort = delayed(_sort_chunk, pure=True)
    X_parts = X.to_delayed(optimize_graph=False).ravel()
    y_parts = y0.to_delayed(optimize_graph=False).ravel()
    chunks = [sort(xd, yd, int(s)) for xd, yd, s in zip(X_parts, y_parts, starts)]
    m = len(chunks)
    samples = client.compute([delayed(_samples)(c, _OVERSAMPLE * m) for c in chunks], sync=True)
    SX = np.concatenate([s[0] for s in samples])
    Sy = np.concatenate([s[1] for s in samples])
    Sr = np.concatenate([s[2] for s in samples])
    order = np.lexsort(_keys(SX, Sy, Sr))
    picks = order[np.linspace(0, order.size, num=m + 1).astype(np.int64)[1:-1]]
    splitters = (SX[picks], Sy[picks], Sr[picks])
    splits = [delayed(_split)(c, splitters) for c in chunks]
    buckets = client.persist([delayed(_bucket)(*[sp[b] for sp in splits]) for b in range(m)])
    sizes = client.compute([delayed(np.size)(b[1]) for b in buckets], sync=True)
    pairs = [(b, int(k)) for b, k in zip(buckets, sizes) if k > 0]
    Xs = da.concatenate([da.from_delayed(b[0], shape=(k, d), dtype=np.float64) for b, k in pairs])
    ys = da.concatenate([da.from_delayed(b[1], shape=(k,), dtype=y0.dtype) for b, k in pairs])
    return Xs, ys
