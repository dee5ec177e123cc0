"""Where R OPNB 1.0's fit fails: its gradient's kernel sums are not finite.

R's sums reach a point from a class's points through exp(-distance /
bandwidth); past about 745 bandwidths that underflows to 0, and R's
gradient (df_NB_exact, df_NB_cpp) divides by it. Measured with R 4.2.2 and
OPNB 1.0 on 368 random one-column problems with wide gaps: R's gradient
is not finite exactly where a point (exact sums), or a grid point (binned
sums: every grid point, empty ones included), lies farther than that from
every point of some class; its value stays finite. R's optim passes the
non-finite gradient on, L-BFGS-B steps to a non-finite V, optim stops with
an error ("non-finite value supplied by optim"), and R's OPNB keeps its
start V with a warning. pyopnb's sums stay finite there; this module says
where R's would not, so that a fit can say so, or do as R does
(``r_defects=True``). The boundary is R's to within a few bandwidths
(single-step measurements put it at 746.1-746.25): where a line search
lands in that band, the two may differ; in the cases met, the distances
jumped to thousands.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Tuple

import numpy as np

__all__ = ["R_UNDERFLOW", "RFailure", "farthest", "r_cells", "r_farthest", "r_gradient_failure", "r_grid"]

# -log of half the smallest subnormal double: exp(-d) rounds to 0 beyond it
R_UNDERFLOW = 745.1332191019411
# R's binned grid: from the smallest projected value less this to the largest plus it (SPEC, df_NB_cpp)
_GRID_MARGIN = 1e-8


@dataclass(frozen=True)
class RFailure:
    """Where R's gradient is not finite.

    Parameters
    ----------
    column : int
        The projected column, 0-based.
    code : int
        The class code, 0-based.
    distance : float
        From the farthest point (or grid point) to that class's nearest
        point, in the class's bandwidths.
    """

    column: int
    code: int
    distance: float


def r_grid(zmin: float, zmax: float, nbin: int) -> Tuple[float, float]:
    """R's binned grid over a column whose points span [zmin, zmax]: its
    first point and spacing (the range widened by 1e-8 at each end)."""
    lo, hi = zmin - _GRID_MARGIN, zmax + _GRID_MARGIN
    return lo, (hi - lo) / (nbin - 1)


def r_cells(z: np.ndarray, lo: float, spacing: float, nbin: int) -> np.ndarray:
    """The cell of R's grid (lo, spacing) each point's weight goes to: the
    grid point at or left of it."""
    return np.minimum(np.floor((z - lo) / spacing).astype(np.int64), nbin - 1)


def _reach(at: np.ndarray, where: np.ndarray) -> float:
    """The farthest any of ``where`` lies from its nearest of ``at`` (sorted)."""
    i = np.searchsorted(at, where)
    left = np.where(i > 0, where - at[np.maximum(i - 1, 0)], np.inf)
    right = np.where(i < at.size, at[np.minimum(i, at.size - 1)] - where, np.inf)
    return float(np.max(np.minimum(left, right)))


def farthest(spans: np.ndarray, finite: np.ndarray, h: np.ndarray,
             class_points: Callable[[int, int], Tuple[np.ndarray, np.ndarray]]) -> RFailure:
    """The farthest a point lies from every point of one class, over the
    columns: ``spans`` [ndim] each column's range of points, ``finite``
    whether its points are, ``class_points(t, k)`` on column t the points
    that count (the points, or every grid point) and class k's (sorted;
    none where the class has no point). The first column not finite is
    infinitely far."""
    worst = RFailure(0, 0, 0.0)
    for t in range(spans.size):
        if not finite[t]:
            return RFailure(t, 0, float("inf"))
        if spans[t] <= worst.distance * float(h.min()):
            continue  # no distance here passes the farthest yet
        for k in range(h.size):
            where, at = class_points(t, k)
            if not at.size:
                continue
            far = _reach(at, where) / float(h[k])
            if far > worst.distance:
                worst = RFailure(t, k, far)
    return worst


def r_farthest(Z: np.ndarray, y0: np.ndarray, h: np.ndarray, nbin: Optional[int]) -> RFailure:
    """The farthest a point lies from every point of one class, on any column.

    Parameters
    ----------
    Z : ndarray of shape (n, ndim)
        The projection: the scaled data times V.
    y0 : ndarray of shape (n,)
        The class codes, 0-based.
    h : ndarray of shape (K,)
        The classes' bandwidths: distances are in them.
    nbin : int or None
        None: exact sums, the points themselves. Else R's binned grid of
        ``nbin`` points over each column (its range widened by 1e-8), every
        grid point, with each point's weight in the bin at or left of it.

    Returns
    -------
    RFailure
        The column, the class and the distance, in that class's bandwidths.
    """
    Z = np.asarray(Z, dtype=np.float64)
    y0 = np.asarray(y0)
    h = np.asarray(h, dtype=np.float64)
    finite = np.all(np.isfinite(Z), axis=0)
    with np.errstate(over="ignore"):
        spans = np.ptp(np.where(finite, Z, 0.0), axis=0)

    def class_points(t: int, k: int) -> Tuple[np.ndarray, np.ndarray]:
        z, mine = Z[:, t], y0 == k
        if nbin is None:
            return z, np.sort(z[mine])
        lo, spacing = r_grid(z.min(), z.max(), nbin)
        where = lo + spacing * np.arange(nbin)
        return where, where[np.unique(r_cells(z[mine], lo, spacing, nbin))]

    return farthest(spans, finite, h, class_points)


def r_gradient_failure(Z: np.ndarray, y0: np.ndarray, h: np.ndarray, nbin: Optional[int]) -> Optional[RFailure]:
    """Where R's gradient at a projection is not finite, or None.

    Parameters
    ----------
    Z, y0, h, nbin
        As in :func:`r_farthest`.

    Returns
    -------
    RFailure or None
        :func:`r_farthest`'s answer where its distance passes
        :data:`R_UNDERFLOW`, else None (projections spread over less than
        that are passed at once).
    """
    Z = np.asarray(Z, dtype=np.float64)
    if np.all(np.isfinite(Z)) and np.all(np.ptp(Z, axis=0) <= R_UNDERFLOW * float(np.min(h))):
        return None
    worst = r_farthest(Z, y0, h, nbin)
    return worst if worst.distance > R_UNDERFLOW else None
