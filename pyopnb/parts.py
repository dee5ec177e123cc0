"""R's binned objective over the rows in parts: the same bits as one machine.

Every sum over the points goes by the fixed blocks of rows of
``_core/blocks.h``: each block summed in row order from zero, the blocks'
partials added in block order. A part of the data that holds whole blocks
can therefore do its blocks' work alone and hand back their partials; the
side that merges them (the *grid side*: a machine holding no rows) adds
them in block order and gets the bits of the whole data on one machine,
whatever the split of the blocks into parts and wherever each part runs.

One evaluation of l(V) and its gradient makes four passes over the parts,
each a call on every part (:class:`RowPart`) and a merge on the grid side
(:class:`PartsEvaluator`):

1. ``extremes``: Z = X V for the part's rows, each block's extremes per
   column; the grid side finds each column's grid (``grid_axes``).
2. ``bin``: the part's points binned on those grids, each block's grid
   weights kept, and the grid points its cells mark returned; ``fold``
   adds the blocks' weights in order, part after part, each part onto the
   sum of the parts before it (so one array a part, not a block, goes to
   the grid side); the grid side makes the tables (kernel sums on the
   grids).
3. ``value``: the part's points' terms, summed per block, and their c
   weights (the gradient's), binned per block and folded as in 2; the grid
   side adds the sums in block order (l) and sums the c weights at the grid
   points.
4. ``finish``: the part's dZ and its blocks' partials of t(X) dZ; the grid
   side adds them in block order (dl/dV).

The grid side holds the grids, tables and L-BFGS-B's state, nothing of
size n. A *runner* carries the calls to the parts: :class:`LocalRunner`
here, ``pyopnb.dask``'s on a cluster.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ._core import linalg, project
from ._core.grid import grid_axes
from ._core.r_grid import RGridTables
from .evaluation import GRID_EPS, greedy
from .ksum import DEFAULT_BETA
from .r_failures import R_UNDERFLOW, RFailure, farthest, r_cells, r_grid

__all__ = ["BlockLayout", "PartSpec", "RowPart", "LocalRunner", "PartsEvaluator"]


@dataclass(frozen=True)
class BlockLayout:
    """The fixed blocks of n rows: ``nblk`` blocks of ``block_len`` rows, the
    last shorter. A function of n alone (``_core/blocks.h``)."""

    n: int

    @property
    def nblk(self) -> int:
        return linalg.row_blocks(self.n)[0]

    @property
    def block_len(self) -> int:
        return linalg.row_blocks(self.n)[1]

    def rows(self, b0: int, b1: int) -> Tuple[int, int]:
        """The rows [start, stop) of blocks b0..b1-1."""
        if not 0 <= b0 < b1 <= self.nblk:
            raise ValueError(f"blocks {b0}..{b1 - 1} are not within 0..{self.nblk - 1}")
        return b0 * self.block_len, min(self.n, b1 * self.block_len)

    def block_of(self, row: int) -> int:
        """The block row ``row`` (0..n) starts; n: nblk."""
        return -(-row // self.block_len) if row >= self.n else row // self.block_len

    def check_bounds(self, bounds: Sequence[int]) -> List[int]:
        """Row bounds 0 = r_0 < r_1 < ... < r_m = n of m parts, each on a
        block boundary; the block index of each bound."""
        bl = [int(b) for b in bounds]
        if len(bl) < 2 or bl[0] != 0 or bl[-1] != self.n or any(a >= b for a, b in zip(bl, bl[1:])):
            raise ValueError(f"part bounds must increase from 0 to n = {self.n}, got {bl}")
        bad = [b for b in bl[1:-1] if b % self.block_len]
        if bad:
            raise ValueError(f"part bounds must fall on block boundaries (multiples of {self.block_len} rows, the "
                             f"blocks of n = {self.n}); {bad} do not")
        return [self.block_of(b) for b in bl]


@dataclass(frozen=True)
class PartSpec:
    """What every part of one problem shares: its classes' bandwidths h and
    priors PI [K], counts n_k [K] of the whole data, its total n, its bins
    per column and the threads of each part's passes."""

    h: np.ndarray
    PI: np.ndarray
    counts: np.ndarray
    n: int
    nbin: int
    threads: int = 1

    @property
    def K(self) -> int:
        return int(self.PI.size)

    @property
    def layout(self) -> BlockLayout:
        return BlockLayout(self.n)

    def part(self, nblk: int) -> Tuple[int, int, Tuple[np.ndarray, float]]:
        """The compiled tables' ``part`` for nblk blocks."""
        return self.layout.block_len, nblk, (np.asarray(self.counts, dtype=np.float64), float(self.n))

    def tables(self, ndim: int, y0: np.ndarray, nblk: int, gradient: bool = True) -> RGridTables:
        """R's binned tables for ndim columns over the points y0 (none: the
        grid side); ``gradient=False``: the value's bins only."""
        return RGridTables(ndim, y0, self.K, self.h, self.nbin, GRID_EPS, DEFAULT_BETA, gradient, self.threads,
                           None, self.part(nblk))


class RowPart:
    """The rows of whole blocks of a problem, and their passes (see the
    module's docstring). X: the part's rows [m, d] of the scaled data;
    y0: their 0-based class codes."""

    def __init__(self, X: np.ndarray, y0: np.ndarray, spec: PartSpec):
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        self.y0 = np.ascontiguousarray(y0, dtype=np.int32)
        if self.X.ndim != 2 or self.y0.shape != (self.X.shape[0],) or self.X.shape[0] < 1:
            raise ValueError(f"a part needs rows X [m, d] and m class codes, got {self.X.shape} and "
                             f"{self.y0.shape}")
        self.spec = spec
        self.nblk = -(-self.X.shape[0] // spec.layout.block_len)
        self._tables: Dict[int, RGridTables] = {}
        self._Zt: Optional[np.ndarray] = None
        # the last pass's per-block arrays that the grid side takes folded (fold)
        self._kept: Dict[str, np.ndarray] = {}

    def _for(self, ndim: int) -> RGridTables:
        if ndim not in self._tables:
            self._tables = {ndim: self.spec.tables(ndim, self.y0, self.nblk)}
        return self._tables[ndim]

    def extremes(self, V: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        Va = np.ascontiguousarray(V, dtype=np.float64)
        if self._Zt is None or self._Zt.shape[0] != Va.shape[1]:
            self._Zt = None
        self._Zt = project.project(self.X, Va, self.spec.threads, out=self._Zt)
        return self._for(Va.shape[1]).part_extremes(self._Zt)

    def bin(self, lo: np.ndarray, delta: np.ndarray) -> np.ndarray:
        """Bin the part's points: its blocks' grid weights are kept for
        :meth:`fold` ("lin", "simple"); the grid points its cells mark
        [ndim, nbin] are returned."""
        lin, simple, marks = self._for(lo.size).part_bin(lo, delta)
        self._kept = {"lin": lin, "simple": simple}
        return marks

    def value(self, lo: np.ndarray, delta: np.ndarray, tables: Tuple[np.ndarray, np.ndarray, np.ndarray],
              gradient: bool) -> np.ndarray:
        """Each block's sum of the points' terms; with the gradient, its
        blocks' c weights are kept for :meth:`fold` ("c")."""
        T = self._for(lo.size)
        T.set_tables(lo, delta, *tables)
        sums, _ = T.part_value(self.spec.PI, gradient)
        self._kept = {"c": T.part_gradient()} if gradient else {}
        return sums

    def fold(self, names: Sequence[str], carry: Optional[Sequence[np.ndarray]]) -> List[np.ndarray]:
        """The kept per-block arrays ``names`` of the last pass, each
        [ndim, nblk, L], added block by block in order onto ``carry`` (the
        parts before this one's, in order; None: this part is the first)."""
        return [add_blocks(self._kept[name], None if carry is None else carry[i], axis=1)
                for i, name in enumerate(names)]

    def spreads(self) -> Tuple[np.ndarray, np.ndarray]:
        """Each column's extremes over the part's rows."""
        return self.X.min(axis=0), self.X.max(axis=0)

    def r_extremes(self, V: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Z = X V for the part's rows (kept for :meth:`r_cells`), and per
        column its extremes and whether it is finite: where R's gradient
        fails (:mod:`pyopnb.r_failures`)."""
        Va = np.ascontiguousarray(V, dtype=np.float64)
        if self._Zt is not None and self._Zt.shape[0] != Va.shape[1]:
            self._Zt = None
        # into the evaluation's Z (one n-sized array a part): the next evaluation projects afresh
        self._Zt = project.project(self.X, Va, self.spec.threads, out=self._Zt)
        finite = np.all(np.isfinite(self._Zt), axis=1)
        Z = np.where(finite[:, None], self._Zt, 0.0)
        return Z.min(axis=1), Z.max(axis=1), finite

    def r_cells(self, lo: np.ndarray, spacing: np.ndarray) -> np.ndarray:
        """The cells of R's grids (lo, spacing per column) that hold a point
        of each class, after :meth:`r_extremes` or an evaluation's passes
        (the Z they made): bits [ndim, K, nbin], packed."""
        assert self._Zt is not None
        nbin, K = self.spec.nbin, self.spec.K
        held = np.zeros((self._Zt.shape[0], K, nbin), dtype=bool)
        for t in range(self._Zt.shape[0]):
            held[t, self.y0, r_cells(self._Zt[t], lo[t], spacing[t], nbin)] = True
        return np.packbits(held, axis=2)

    def subset(self, base: List[int], candidates: List[int]) -> np.ndarray:
        """Each block's partials of R's greedy order's values (after a value pass)."""
        return next(iter(self._tables.values())).part_subset_values(base, candidates, self.spec.PI)

    def finish(self, D_c: np.ndarray) -> np.ndarray:
        dZt = self._for(D_c.shape[0]).part_gradient_finish(D_c)
        return linalg.crossprod_t(self.X, dZt, self.spec.threads, block_len=self.spec.layout.block_len)


class LocalRunner:
    """Calls every part in this process, in part order."""

    def __init__(self, parts: Sequence[RowPart]):
        self.parts = list(parts)

    def call(self, method: str, *args: Any) -> List[Any]:
        return [getattr(part, method)(*args) for part in self.parts]

    def fold(self, names: Sequence[str]) -> List[np.ndarray]:
        """The parts' kept arrays ``names``, every block added in order (:meth:`RowPart.fold`, part by part)."""
        carry = None
        for part in self.parts:
            carry = part.fold(names, carry)
        assert carry is not None
        return carry


def _in_order(results: Sequence[np.ndarray], axis: int) -> np.ndarray:
    """The parts' per-block results joined in block order (the runner
    returns them in part order, the parts' blocks in order)."""
    return np.concatenate([np.asarray(r) for r in results], axis=axis)


def add_blocks(blocks: np.ndarray, carry: Optional[np.ndarray] = None, axis: int = 0) -> np.ndarray:
    """Blocks' partials (blocks along ``axis``) added in block order onto
    ``carry`` (None: from the first block), as ``pyopnb_reduce_blocks``:
    each entry's sum is the same double whatever numpy's loop does, since
    each add is one rounding. A fold of a problem's blocks part after part,
    each part onto the sum of the parts before it, is the same sum."""
    if blocks is None:
        raise ValueError("no blocks to add: the pass before keeps them")
    B = np.moveaxis(np.asarray(blocks), axis, 0)
    total = np.array(B[0] if carry is None else carry, dtype=np.float64, copy=True)
    for b in range(0 if carry is not None else 1, B.shape[0]):
        total = total + B[b]
    return total


# below this, a sum of products can reach no infinity
_NO_OVERFLOW = 1e300


class PartsEvaluator:
    """R's binned objective l(V) and its gradient, as
    :class:`pyopnb.evaluation.Evaluator` over ``r_grid`` computes them, with
    the rows in parts (see the module's docstring): the grid side of the
    passes. ``runner.call(method, *args)`` calls each part's method and
    returns their results in part order, the parts in the order of their
    rows."""

    def __init__(self, runner: Any, spec: PartSpec):
        self.runner = runner
        self.spec = spec
        self.nbin: Optional[int] = spec.nbin
        self.threads = self.most_threads = spec.threads
        self._grid: Dict[int, RGridTables] = {}
        self._projected: Optional[Tuple[np.ndarray, np.ndarray, np.ndarray]] = None
        self._largest: Optional[np.ndarray] = None  # each column's largest |x| (spreads)

    def use_threads(self, count: int) -> None:
        """The parts keep their threads: a distributed pass's pace is its
        workers'."""

    def _grid_side(self, ndim: int) -> RGridTables:
        # the parts hand it their blocks folded (runner.fold): one block's worth
        if ndim not in self._grid:
            self._grid = {ndim: self.spec.tables(ndim, np.zeros(0, dtype=np.int32), 1)}
        return self._grid[ndim]

    def _evaluate(self, V: Any, gradient: bool) -> Tuple[float, Optional[np.ndarray]]:
        Va = np.ascontiguousarray(V, dtype=np.float64)
        if Va.ndim != 2 or Va.shape[1] < 1:
            raise ValueError(f"V must be a matrix of at least one column, got shape {Va.shape}")
        grid = self._grid_side(Va.shape[1])
        ext = self.runner.call("extremes", Va)
        zmin, zmax = _in_order([e[0] for e in ext], 1), _in_order([e[1] for e in ext], 1)
        # the parts keep this V's Z until the next evaluation: r_failure at V reads it
        self._projected = (Va.copy(), zmin.min(axis=1), zmax.max(axis=1))
        lo, delta = grid_axes(zmin, zmax, GRID_EPS, self.spec.nbin)
        marks = self.runner.call("bin", lo, delta)
        # each part's blocks added onto the parts' before it: one array a part crosses the network, not a block
        lin, simple = self.runner.fold(("lin", "simple"))
        grid.merge_parts(lo, delta, lin[:, None], simple[:, None], np.bitwise_or.reduce(np.stack(marks), axis=0))
        tables = (grid.S_lin, grid.S_simple, grid.D_simple)
        total = 0.0
        for s in _in_order(self.runner.call("value", lo, delta, tables, gradient), 0):
            total = total + float(s)
        value = total / float(self.spec.n)
        if not gradient:
            return value, None
        D_c = grid.merge_gradient(self.runner.fold(("c",))[0][:, None])
        G = add_blocks(_in_order(self.runner.call("finish", D_c), 0))
        G /= float(self.spec.n)
        return value, G

    def value(self, V: Any) -> float:
        """l at V."""
        return self._evaluate(V, False)[0]

    def order_columns(self, V: Any) -> List[int]:
        """R's column order (:func:`pyopnb.evaluation.greedy`), each step's
        values from the parts' blocks at V, added in block order."""
        Va = np.ascontiguousarray(V, dtype=np.float64)
        self._evaluate(Va, False)

        def values(chosen: List[int], remaining: List[int]) -> np.ndarray:
            total = np.zeros(len(remaining))
            for partial in _in_order(self.runner.call("subset", chosen, remaining), 0):
                total = total + partial
            return total / float(self.spec.n)

        return greedy(Va.shape[1], values)

    def spreads(self) -> np.ndarray:
        """Each column's spread (max - min) over the rows: one pass."""
        ext = self.runner.call("spreads")
        lo, hi = np.minimum.reduce([e[0] for e in ext]), np.maximum.reduce([e[1] for e in ext])
        self._largest = np.maximum(np.abs(lo), np.abs(hi))
        return hi - lo

    def r_failure(self, V: Any) -> Optional[RFailure]:
        """Where R's gradient at V is not finite, or None: as
        :func:`pyopnb.r_failures.r_gradient_failure` on the rows, from the
        parts' extremes of Z = X V and the cells of R's grids that hold each
        class's points (one more pass, only where Z spreads wider than R's
        sums reach; the evaluation's own extremes and Z serve where V is the
        last evaluated)."""
        Va = np.ascontiguousarray(V, dtype=np.float64)
        last = self._projected
        # the extremes say Z is finite only where no sum can overflow (inf - inf would be NaN between them)
        if (last is not None and self._largest is not None and np.array_equal(last[0], Va)
                and np.all(np.abs(Va).T @ self._largest < _NO_OVERFLOW)):
            zmin, zmax = last[1], last[2]
            finite = np.ones(zmin.size, dtype=bool)
        else:
            # the parts' Z becomes this V's: the last evaluation's no longer serves
            self._projected = None
            ext = self.runner.call("r_extremes", Va)
            finite = np.logical_and.reduce([e[2] for e in ext])
            zmin = np.minimum.reduce([e[0] for e in ext])
            zmax = np.maximum.reduce([e[1] for e in ext])
        with np.errstate(over="ignore"):
            spans = zmax - zmin
        h = np.asarray(self.spec.h, dtype=np.float64)
        if np.all(finite) and np.all(spans <= R_UNDERFLOW * float(np.min(h))):
            return None
        if not np.all(finite):
            t = int(np.argmin(finite))
            return RFailure(t, 0, float("inf"))  # as farthest says the first column not finite
        nbin = self.spec.nbin
        grids = [r_grid(a, b, nbin) for a, b in zip(zmin, zmax)]
        lo, spacing = np.array([g[0] for g in grids]), np.array([g[1] for g in grids])
        held = np.unpackbits(np.bitwise_or.reduce(self.runner.call("r_cells", lo, spacing)), axis=2,
                             count=nbin).astype(bool)

        def class_points(t: int, k: int) -> Tuple[np.ndarray, np.ndarray]:
            where = lo[t] + spacing[t] * np.arange(nbin)
            return where, where[held[t, k]]

        worst = farthest(spans, finite, h, class_points)
        return worst if worst.distance > R_UNDERFLOW else None

    def value_and_grad(self, V: Any) -> Tuple[float, np.ndarray]:
        """l at V and dl/dV, (d, ndim)."""
        value, G = self._evaluate(V, True)
        assert G is not None
        return value, G


def split(X: np.ndarray, y0: np.ndarray, spec: PartSpec, bounds: Sequence[int]) -> List[RowPart]:
    """The rows of X and y0 in parts between row bounds on block boundaries
    (:meth:`BlockLayout.check_bounds`)."""
    spec.layout.check_bounds(bounds)
    return [RowPart(X[a:b], y0[a:b], spec) for a, b in zip(bounds, bounds[1:])]
