"""A fitted OPNB model without its training rows: each column's class grids.

R's ``predict.OPNB`` sums kernels over the training projections, so its
model keeps X and y. A model fitted past one machine (:mod:`pyopnb.dask`)
must not: :class:`GridModel` keeps, per projected column t, a grid of
``nbin`` points g_tj = lo_t + j delta_t spanning the training projections
(the binned objective's grid, ``GRID_EPS`` beyond their extremes) and each
class's linearly binned weights on it, W[t, j, k] (each point's 1/n_k split
between its two grid points, summed by the fixed blocks of rows, so the
same bits for any split of the rows into parts).

**How its predictions relate to** :func:`pyopnb.predict` **with the rows.**
They are R's ``predict`` formula with one change: each class density

    f_kt(x) = sum_j (W[t, j, k] / h[k, t]) K((x - g_tj) / h[k, t])

sums the kernel over the binned weights (exactly, at x itself, not rounded
to the grid; outside the grid too) instead of over the training points.
Linear binning replaces K at each point by its linear interpolation between
the two grid points around it, so, with K'' bounded by 1/4,

    |f_kt(x) - f_kt^rows(x)| <= delta_t^2 / (32 h[k, t]^3)

for every x (:func:`density_bound`), up to rounding; the posteriors and
classes follow from these densities as in ``predict``, log space or R's
products alike. A model fitted on one machine gives its grid model with
:func:`grid_model`, to the bit the one a distributed fit of the same rows
makes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Tuple

import numpy as np

from . import _ksum, _threads
from .ksum import DEFAULT_BETA
from .parts import PartSpec, add_blocks
from ._core.grid import grid_axes
from .evaluation import GRID_EPS
from .model import CONVERGENCE, OPNBModel, check_model, projection

__all__ = ["GridModel", "grid_model", "density_bound"]


@dataclass
class GridModel:
    """A fitted OPNB model that holds no training row (see the module's docstring).

    :func:`pyopnb.predict` takes it as it takes an :class:`OPNBModel`.

    Parameters
    ----------
    V, PI, h, nc, mu, scales, ynames, lam, fval
        R's fields, as :class:`pyopnb.OPNBModel`'s.
    lo : ndarray of shape (ndim,)
        Each column's first grid point.
    delta : ndarray of shape (ndim,)
        Each column's grid spacing.
    W : ndarray of shape (ndim, nbin, K)
        Each column's class weights at its grid points, each class's
        summing to 1 up to rounding.
    counts : ndarray of shape (K,)
        Each class's training rows.
    feature_names, convergence, unused_levels
        As :class:`pyopnb.OPNBModel`'s.
    """

    V: np.ndarray
    PI: np.ndarray
    h: np.ndarray
    nc: int
    mu: np.ndarray
    scales: np.ndarray
    ynames: np.ndarray
    lam: float
    fval: float
    lo: np.ndarray
    delta: np.ndarray
    W: np.ndarray
    counts: np.ndarray
    feature_names: Optional[Tuple[str, ...]] = field(default=None, compare=False)
    convergence: Optional[int] = field(default=None, compare=False)
    unused_levels: Tuple[Any, ...] = field(default=(), compare=False)

    @property
    def ndim(self) -> int:
        """The number of columns of V."""
        return self.V.shape[1]

    @property
    def nbin(self) -> int:
        """Grid points per column."""
        return self.W.shape[1]

    @property
    def n(self) -> int:
        """The training rows."""
        return int(np.sum(self.counts))

    def grid(self, t: int) -> np.ndarray:
        """Column t's grid points.

        Parameters
        ----------
        t : int
            The column.

        Returns
        -------
        ndarray of shape (nbin,)
            lo_t + j delta_t, j = 0..nbin-1.
        """
        return self.lo[t] + np.arange(self.nbin, dtype=np.float64) * self.delta[t]

    project = OPNBModel.project  # (X - mu) V, summed in R's order

    def class_densities(self, Z: np.ndarray, log: bool, threads: int) -> np.ndarray:
        """The class densities of projected points, summed over the class grids.

        Parameters
        ----------
        Z : ndarray of shape (m, t)
            Projections on the model's first t columns.
        log : bool
            Sum the columns' log densities (in a form that never
            underflows) instead of multiplying the densities.
        threads : int
            Threads; the numbers do not depend on it.

        Returns
        -------
        ndarray of shape (m, K)
            sum_t log f_kt(Z[:, t]) (``log``) or prod_t f_kt(Z[:, t]),
            f_kt from the class grids (see the module's docstring).
        """
        m, ncol = Z.shape
        out = np.zeros((m, self.nc)) if log else np.ones((m, self.nc))
        for t in range(ncol):
            g = self.grid(t)
            z = np.ascontiguousarray(Z[:, t])
            for k in range(self.nc):
                S = _column_sums(g, self.W[t, :, k], float(self.h[k, t]), z, log, threads)
                if log:
                    out[:, k] += S
                else:
                    out[:, k] *= S
        return out

    _densities = class_densities  # what predict reads (OPNBModel's sums over the rows)

    def train_points(self) -> int:
        """The points each prediction's sums run over (a thread count's work)."""
        return self.nbin * self.nc

    def __repr__(self) -> str:
        return (f"GridModel(d={self.V.shape[0]}, ndim={self.ndim}, classes={list(self.ynames)}, "
                f"nbin={self.nbin}, n={self.n}, lam={self.lam:g}, fval={self.fval:.6g}, "
                f"convergence={self.convergence} ({CONVERGENCE.get(self.convergence, 'unknown code')}))")


def _column_sums(grid: np.ndarray, weights: np.ndarray, h: float, z: np.ndarray, log: bool,
                 threads: int) -> np.ndarray:
    """f(z) = sum_j (weights_j / h) K((z - grid_j) / h), or its log, at z [m]."""
    wg = np.ascontiguousarray((weights / h).reshape(-1, 1))
    S, _ = _ksum.grid_sums(np.ascontiguousarray(grid), wg, h, DEFAULT_BETA, z, True, False, threads, log)
    return S[:, 0]


def density_bound(model: GridModel) -> np.ndarray:
    """The most a class density of a model without rows differs from the rows'.

    Parameters
    ----------
    model : GridModel
        The model.

    Returns
    -------
    ndarray of shape (K, ndim)
        delta_t^2 / (32 h[k, t]^3) for class k and column t, rounding
        aside (see the module's docstring).
    """
    return model.delta[None, :] ** 2 / (32.0 * model.h ** 3)


class ClassGridBins:
    """The class grids' passes over projections in parts of whole blocks
    (``pyopnb.parts``' rule, so any split gives the same bits): ``extremes``
    and ``bin`` on each part, ``axes`` and ``merge`` on the side that holds
    no rows.

    Parameters
    ----------
    counts : array-like of shape (K,)
        Each class's rows in the whole data.
    nbin : int
        Grid points per column.
    threads : int
        Each pass's threads.
    """

    def __init__(self, counts: Any, nbin: int, threads: int = 1):
        self.counts = np.asarray(counts, dtype=np.int64)
        n = int(self.counts.sum())
        K = self.counts.size
        self.spec = PartSpec(h=np.ones(K), PI=self.counts / float(n), counts=self.counts, n=n, nbin=int(nbin),
                             threads=int(threads))

    def _tables(self, Z: np.ndarray, y0: np.ndarray) -> Tuple[Any, np.ndarray]:
        """A part's tables over its projections, and their extremes."""
        nblk = -(-Z.shape[0] // self.spec.layout.block_len)
        T = self.spec.tables(Z.shape[1], np.ascontiguousarray(y0, dtype=np.int32), nblk, gradient=False)
        return T, T.part_extremes(np.ascontiguousarray(Z.T, dtype=np.float64))

    def extremes(self, Z: np.ndarray, y0: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """A part's projections Z [m, ndim] and codes: each (column, block)'s extremes [ndim, nblk]."""
        return self._tables(Z, y0)[1]

    def axes(self, zmin: np.ndarray, zmax: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """The grids (lo, delta) [ndim] from every block's extremes [ndim, nblk] in block order."""
        return grid_axes(zmin, zmax, GRID_EPS, self.spec.nbin)

    def bin(self, Z: np.ndarray, y0: np.ndarray, lo: np.ndarray, delta: np.ndarray) -> np.ndarray:
        """A part's blocks' class weights on the grids, [ndim, nblk, nbin * K]."""
        return self._tables(Z, y0)[0].part_bin(lo, delta)[0]

    def merge(self, part_lin: np.ndarray) -> np.ndarray:
        """Every block's weights [ndim, nblk, nbin * K], in block order,
        added: W [ndim, nbin, K]."""
        P = np.asarray(part_lin, dtype=np.float64)
        if P.shape[1] != self.spec.layout.nblk:
            raise ValueError(f"need the weights of all {self.spec.layout.nblk} blocks, got {P.shape[1]}")
        total = add_blocks(P, axis=1)
        return total.reshape(P.shape[0], self.spec.nbin, self.spec.K)


def from_parts(fields: dict, lo: np.ndarray, delta: np.ndarray, W: np.ndarray, counts: np.ndarray) -> GridModel:
    """A GridModel of R's fields (V, PI, h, nc, mu, scales, ynames, lam,
    fval and the extras) and the class grids."""
    return GridModel(lo=np.asarray(lo, dtype=np.float64), delta=np.asarray(delta, dtype=np.float64), W=W,
                     counts=np.asarray(counts, dtype=np.int64), **fields)


def grid_model(model: Any, nbin: Optional[int] = None, threads: Optional[int] = None) -> GridModel:
    """The model without its training rows: the class grids of its
    training projections (see the module's docstring).

    Parameters
    ----------
    model : OPNBModel or fitted OPNBClassifier
        A fitted model (pyopnb's or R's, :func:`pyopnb.read_rds`).
    nbin : int, optional
        Grid points per column; default 1000, R's OPNB's default bins.
    threads : int, optional
        Threads, as in :func:`pyopnb.OPNB`; the numbers do not depend on it.

    Returns
    -------
    GridModel
        Bit for bit the one :func:`pyopnb.dask.OPNB` makes from the same
        rows, whatever their chunking.
    """
    m = check_model(model)
    if m.w is not None:
        raise ValueError("a weighted model's class grids are not made: its class densities weigh each point, "
                         "and the class grids hold counts; predict with the model itself")
    nb = 1000 if nbin is None else int(nbin)
    if nb < 2:
        raise ValueError(f"nbin must be at least 2, got {nbin}")
    thr = _threads.resolve(threads)
    y0 = m.y0
    counts = np.bincount(y0, minlength=m.nc)
    bins = ClassGridBins(counts, nb, thr)
    Z = projection(m.X, m.mu, m.V, thr)
    lo, delta = bins.axes(*bins.extremes(Z, y0))
    W = bins.merge(bins.bin(Z, y0, lo, delta))
    return from_parts(model_fields(m), lo, delta, W, counts)


def model_fields(m: OPNBModel) -> dict:
    """The fields a GridModel shares with an OPNBModel."""
    return dict(V=m.V, PI=m.PI, h=m.h, nc=m.nc, mu=m.mu, scales=m.scales, ynames=m.ynames, lam=m.lam, fval=m.fval,
                feature_names=m.feature_names, convergence=m.convergence, unused_levels=m.unused_levels)
