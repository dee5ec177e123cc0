"""The binned objectives over the rows in parts: the same bits as one machine.

Every sum over the points goes by the fixed blocks of rows of
``_core/blocks.h``: each block summed in row order from zero, the blocks'
partials added in block order. A part of the data that holds whole blocks
can therefore do its blocks' work alone and hand back their partials; the
side that merges them (the *grid side*: a machine holding no rows) adds
them in block order and gets the bits of the whole data on one machine,
whatever the split of the blocks into parts and wherever each part runs.

One evaluation of l(V) and its gradient makes these passes over the parts,
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
3. ``value``: the part's points' terms, summed per block, and their
   gradient weights, binned per block and folded as in 2; the grid side
   adds the sums in block order (l) and sums the weights on the grids.
4. The objective's own (:class:`PartObjective`):

   - R's (:data:`R_GRID`): ``finish``, the part's dZ from the grid side's
     sums (D_c) and its blocks' partials of t(X) dZ.
   - The paper's (:data:`LINEAR_GRID`) and the journal's
     (:data:`JOURNAL_GRID`): ``sample``, the part's sample-point terms and
     each block's edge (its shares of the grid's motion and its extremes of
     z); the grid side adds the edges in block order and finds the first
     block at each extreme; then ``finish``, the motion added at the points
     there, and the partials of t(X) dZ.

   The grid side adds the partials in block order (dl/dV).

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
from ._core.interp_grid import InterpGridTables
from ._core.linear import LinearGridTables
from ._core.r_grid import RGridTables
from .evaluation import GRID_EPS, NormalisedEvaluator, greedy
from .ksum import DEFAULT_BETA
from .r_failures import R_UNDERFLOW, RFailure, farthest, r_cells, r_grid

__all__ = ["BlockLayout", "PartObjective", "R_GRID", "LINEAR_GRID", "JOURNAL_GRID", "PartSpec", "RowPart",
           "LocalRunner", "PartsEvaluator", "NormalisedPartsEvaluator"]


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


class PartObjective:
    """A binned objective as the parts and the grid side compute it: the
    compiled tables each side holds, and the passes of its gradient after
    the value's (:meth:`gradient`). One instance per objective
    (:data:`R_GRID`, :data:`LINEAR_GRID`, :data:`JOURNAL_GRID`), chosen once, in the
    :class:`PartSpec`."""

    name = ""
    tables_class: Any = None
    # the grid weights the bin pass keeps (RowPart.bin), folded for the grid side's merge_parts
    binned: Tuple[str, ...] = ("lin",)

    def tables(self, spec: "PartSpec", ndim: int, y0: np.ndarray, nblk: int, gradient: bool = True) -> Any:
        """The tables for ndim columns over the points y0 (none: the grid
        side); ``gradient=False``: the value's alone."""
        return self.tables_class(ndim, y0, spec.K, spec.h, spec.nbin, GRID_EPS, DEFAULT_BETA, gradient,
                                 spec.threads, None, spec.part(nblk))

    def gradient(self, runner: Any, grid: Any, grad: np.ndarray) -> np.ndarray:
        """The blocks' partials of t(X) dZ in block order, after a value
        pass with the gradient (``grad``: the parts' gradient weights it
        kept, folded): the parts' passes and the grid side's merges."""
        raise NotImplementedError

    def finish(self, tables: Any, merged: np.ndarray, first_block: int) -> np.ndarray:
        """A part's n dl/dZ' from the grid side's last merge (the part's
        blocks starting at the problem's block ``first_block``)."""
        raise NotImplementedError

    def sample(self, tables: Any, merged: np.ndarray, first_block: int) -> np.ndarray:
        """A part's sample-point terms, each (column, block)'s edge, from
        the grid side's merge_gradient (a grid that moves with z's extremes)."""
        raise NotImplementedError(f"{self.name} has no sample pass")

    def subset_values(self, evaluator: "PartsEvaluator", W: np.ndarray) -> Any:
        """R's greedy order's ``values(chosen, remaining)`` at directions W."""
        raise NotImplementedError

    def evaluator(self, runner: Any, spec: "PartSpec") -> "PartsEvaluator":
        """The grid side of the objective over the parts ``runner`` calls."""
        return PartsEvaluator(runner, spec)

    def __reduce__(self) -> Any:
        # one instance per objective, on the workers too
        return (_objective, (self.name,))

    def __repr__(self) -> str:
        return f"pyopnb.parts.{self.name}"


class _RGridOnParts(PartObjective):
    """R's binned objective: the parts' c weights summed on the grid (D_c), then each part's dZ and t(X) dZ."""

    name = "R_GRID"
    tables_class = RGridTables
    binned = ("lin", "simple")

    def gradient(self, runner: Any, grid: Any, grad: np.ndarray) -> np.ndarray:
        D_c = grid.merge_gradient(grad[:, None])
        return _in_order(runner.call("finish", D_c), 0)

    def finish(self, tables: Any, merged: np.ndarray, first_block: int) -> np.ndarray:
        return tables.part_gradient_finish(merged)

    def subset_values(self, evaluator: "PartsEvaluator", W: np.ndarray) -> Any:
        # each step's values from the parts' tables at W, added in block order
        evaluator._at(W, False)

        def values(chosen: List[int], remaining: List[int]) -> np.ndarray:
            total = np.zeros(len(remaining))
            for partial in _in_order(evaluator.runner.call("subset", chosen, remaining), 0):
                total = total + partial
            return total / float(evaluator.spec.n)

        return values


class _MovingGridOnParts(PartObjective):
    """A binned objective whose grid moves with z's extremes: the parts'
    gradient weights summed on the grid, the parts' sample-point terms and
    each block's edge, the grid's motion from the edges in block order,
    then each part's dZ (the motion at its points at z's extremes) and
    t(X) dZ."""

    def gradient(self, runner: Any, grid: Any, grad: np.ndarray) -> np.ndarray:
        merged = grid.merge_gradient(grad[:, None])
        motion = grid.merge_motion(_in_order(runner.call("sample", merged), 1))
        return _in_order(runner.call("finish", motion), 0)

    def finish(self, tables: Any, merged: np.ndarray, first_block: int) -> np.ndarray:
        return tables.part_motion(merged, first_block)

    def subset_values(self, evaluator: "PartsEvaluator", W: np.ndarray) -> Any:
        # as CoreEvaluator.subset_values: each subset of W's columns evaluated afresh
        return lambda chosen, remaining: [evaluator._at(np.ascontiguousarray(W[:, chosen + [j]]), False)[0]
                                          for j in remaining]


class _LinearGridOnParts(_MovingGridOnParts):
    """The paper's binned objective: the parts' c weights deposited on the
    grid where they lie (summed there: Sc, with the grid's own share of its
    motion), then the moving grid's passes. The grid's own share starts the
    problem's block 0."""

    name = "LINEAR_GRID"
    tables_class = LinearGridTables

    def sample(self, tables: Any, merged: np.ndarray, first_block: int) -> np.ndarray:
        return tables.part_sample(merged, first_block)


class _JournalGridOnParts(_MovingGridOnParts):
    """The journal's binned objective at V's unit columns: the parts' a
    weights binned on the grid (Phi), then the moving grid's passes."""

    name = "JOURNAL_GRID"
    tables_class = InterpGridTables

    def sample(self, tables: Any, merged: np.ndarray, first_block: int) -> np.ndarray:
        return tables.part_sample(merged)

    def evaluator(self, runner: Any, spec: "PartSpec") -> "PartsEvaluator":
        return NormalisedPartsEvaluator(runner, spec)


#: R's binned objective (f_NB_cpp's value, df_NB_cpp's gradient) over parts
R_GRID: PartObjective = _RGridOnParts()
#: the paper's binned objective over parts: linear binning, densities summed at the points, its exact gradient
LINEAR_GRID: PartObjective = _LinearGridOnParts()
#: the journal's binned objective over parts: l at V's unit columns, log densities interpolated on the grids
JOURNAL_GRID: PartObjective = _JournalGridOnParts()


def _objective(name: str) -> PartObjective:
    return {o.name: o for o in (R_GRID, LINEAR_GRID, JOURNAL_GRID)}[name]


@dataclass(frozen=True)
class PartSpec:
    """What every part of one problem shares: its classes' bandwidths h and
    priors PI [K], counts n_k [K] of the whole data, its total n, its bins
    per column, the threads of each part's passes and the objective."""

    h: np.ndarray
    PI: np.ndarray
    counts: np.ndarray
    n: int
    nbin: int
    threads: int = 1
    objective: PartObjective = R_GRID

    @property
    def K(self) -> int:
        return int(self.PI.size)

    @property
    def layout(self) -> BlockLayout:
        return BlockLayout(self.n)

    def part(self, nblk: int) -> Tuple[int, int, Tuple[np.ndarray, float]]:
        """The compiled tables' ``part`` for nblk blocks."""
        return self.layout.block_len, nblk, (np.asarray(self.counts, dtype=np.float64), float(self.n))

    def tables(self, ndim: int, y0: np.ndarray, nblk: int, gradient: bool = True) -> Any:
        """The objective's tables for ndim columns over the points y0 (none:
        the grid side); ``gradient=False``: the value's bins only."""
        return self.objective.tables(self, ndim, y0, nblk, gradient)


class RowPart:
    """The rows of whole blocks of a problem, and their passes (see the
    module's docstring). X: the part's rows [m, d] of the scaled data;
    y0: their 0-based class codes; first_block: the problem's block its
    first row starts."""

    def __init__(self, X: np.ndarray, y0: np.ndarray, spec: PartSpec, first_block: int = 0):
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        self.y0 = np.ascontiguousarray(y0, dtype=np.int32)
        if self.X.ndim != 2 or self.y0.shape != (self.X.shape[0],) or self.X.shape[0] < 1:
            raise ValueError(f"a part needs rows X [m, d] and m class codes, got {self.X.shape} and "
                             f"{self.y0.shape}")
        self.spec = spec
        self.nblk = -(-self.X.shape[0] // spec.layout.block_len)
        self.first_block = int(first_block)
        if not 0 <= self.first_block <= spec.layout.nblk - self.nblk:
            raise ValueError(f"a part of {self.nblk} blocks cannot start at block {first_block} of "
                             f"{spec.layout.nblk}")
        self._tables: Dict[int, Any] = {}
        self._Zt: Optional[np.ndarray] = None
        # the last pass's per-block arrays that the grid side takes folded (fold)
        self._kept: Dict[str, np.ndarray] = {}

    def _for(self, ndim: int) -> Any:
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

    def value(self, lo: np.ndarray, delta: np.ndarray, tables: Tuple[np.ndarray, ...],
              gradient: bool) -> np.ndarray:
        """Each block's sum of the points' terms, on the grid side's tables
        (its ``part_tables()``); with the gradient, its blocks' gradient
        weights (each objective's ``part_gradient``) are kept for
        :meth:`fold` ("grad")."""
        T = self._for(lo.size)
        T.set_tables(lo, delta, *tables)
        sums, _ = T.part_value(self.spec.PI, gradient)
        self._kept = {"grad": T.part_gradient()} if gradient else {}
        return sums

    def sample(self, merged: np.ndarray) -> np.ndarray:
        """A moving grid's sample-point terms: each (column, block)'s edge
        (:meth:`PartObjective.sample`), from the grid side's merge_gradient."""
        return self.spec.objective.sample(self._for(merged.shape[0]), merged, self.first_block)

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

    def finish(self, merged: np.ndarray) -> np.ndarray:
        """The part's blocks' partials of t(X) dZ, dZ finished from the grid
        side's last merge (:meth:`PartObjective.finish`)."""
        dZt = self.spec.objective.finish(self._for(merged.shape[0]), merged, self.first_block)
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

    def call_fold(self, names: Sequence[str], method: str, *args: Any) -> Tuple[List[Any], List[np.ndarray]]:
        """:meth:`call`, then :meth:`fold` of the arrays ``names`` that pass keeps."""
        return self.call(method, *args), self.fold(names)


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
        np.add(total, B[b], out=total)
    return total


# below this, a sum of products can reach no infinity
_NO_OVERFLOW = 1e300


class PartsEvaluator:
    """A binned objective l(V) and its gradient (the spec's
    :class:`PartObjective`; R's by default), as
    :class:`pyopnb.evaluation.Evaluator` computes them on one machine, with
    the rows in parts (see the module's docstring): the grid side of the
    passes. ``runner.call(method, *args)`` calls each part's method and
    returns their results in part order, the parts in the order of their
    rows; ``runner.fold(names)`` folds the arrays ``names`` the last pass
    kept, every block in order; ``runner.call_fold(names, method, *args)``
    is the two."""

    def __init__(self, runner: Any, spec: PartSpec):
        self.runner = runner
        self.spec = spec
        self.nbin: Optional[int] = spec.nbin
        self.threads = self.most_threads = spec.threads
        self._grid: Dict[int, Any] = {}
        self._projected: Optional[Tuple[np.ndarray, np.ndarray, np.ndarray]] = None
        self._largest: Optional[np.ndarray] = None  # each column's largest |x| (spreads)

    def use_threads(self, count: int) -> None:
        """The parts keep their threads: a distributed pass's pace is its
        workers'."""

    def directions(self, V: np.ndarray) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        """The matrix whose projection l is taken at, and the column norms
        it was divided by (None: V itself), as :class:`~pyopnb.evaluation.Evaluator`'s."""
        return V, None

    def chain(self, W: np.ndarray, norms: Optional[np.ndarray], G: np.ndarray) -> np.ndarray:
        """dl/dV from dl/dW (W = :meth:`directions`)."""
        return G

    def _grid_side(self, ndim: int) -> Any:
        # the parts hand it their blocks folded (runner.call_fold): one block's worth
        if ndim not in self._grid:
            self._grid = {ndim: self.spec.tables(ndim, np.zeros(0, dtype=np.int32), 1)}
        return self._grid[ndim]

    def _evaluate(self, V: Any, gradient: bool) -> Tuple[float, Optional[np.ndarray]]:
        Va = np.ascontiguousarray(V, dtype=np.float64)
        if Va.ndim != 2 or Va.shape[1] < 1:
            raise ValueError(f"V must be a matrix of at least one column, got shape {Va.shape}")
        W, norms = self.directions(Va)
        value, G = self._at(W, gradient)
        return value, None if G is None else self.chain(W, norms, G)

    def _at(self, W: np.ndarray, gradient: bool) -> Tuple[float, Optional[np.ndarray]]:
        """l and dl/dW at the directions W: the passes over the parts."""
        grid = self._grid_side(W.shape[1])
        ext = self.runner.call("extremes", W)
        zmin, zmax = _in_order([e[0] for e in ext], 1), _in_order([e[1] for e in ext], 1)
        # the parts keep this W's Z until the next evaluation: r_failure at W reads it
        self._projected = (W.copy(), zmin.min(axis=1), zmax.max(axis=1))
        lo, delta = grid_axes(zmin, zmax, GRID_EPS, self.spec.nbin)
        # each part's blocks added onto the parts' before it: one array a part crosses the network, not a block
        marks, (lin, *simple) = self.runner.call_fold(self.spec.objective.binned, "bin", lo, delta)
        grid.merge_parts(lo, delta, lin[:, None], simple[0][:, None] if simple else None,
                         np.bitwise_or.reduce(np.stack(marks), axis=0))
        value_args = (lo, delta, grid.part_tables(), gradient)
        if gradient:
            sums, (grad,) = self.runner.call_fold(("grad",), "value", *value_args)
        else:
            sums = self.runner.call("value", *value_args)
        total = 0.0
        for s in _in_order(sums, 0):
            total = total + float(s)
        value = total / float(self.spec.n)
        if not gradient:
            return value, None
        G = add_blocks(self.spec.objective.gradient(self.runner, grid, grad))
        G /= float(self.spec.n)
        return value, G

    def value(self, V: Any) -> float:
        """l at V."""
        return self._evaluate(V, False)[0]

    def order_columns(self, V: Any) -> List[int]:
        """R's column order (:func:`pyopnb.evaluation.greedy`) at V's
        directions, each step's values from the parts' blocks, added in
        block order."""
        W, _ = self.directions(np.ascontiguousarray(V, dtype=np.float64))
        return greedy(W.shape[1], self.spec.objective.subset_values(self, W))

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


class NormalisedPartsEvaluator(PartsEvaluator):
    """The journal's l at V's unit columns and its gradient in V, as
    :class:`pyopnb.evaluation.NormalisedEvaluator`, with the rows in parts."""

    directions = NormalisedEvaluator.directions
    chain = NormalisedEvaluator.chain


def split(X: np.ndarray, y0: np.ndarray, spec: PartSpec, bounds: Sequence[int]) -> List[RowPart]:
    """The rows of X and y0 in parts between row bounds on block boundaries
    (:meth:`BlockLayout.check_bounds`)."""
    blocks = spec.layout.check_bounds(bounds)
    return [RowPart(X[a:b], y0[a:b], spec, first) for a, b, first in zip(bounds, bounds[1:], blocks)]
