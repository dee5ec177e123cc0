"""R's ``plot.OPNB``: training projections, decision boundaries and test points."""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from .model import OPNBModel, _check_model, _check_X, _class_log_densities

__all__ = ["plot"]

_GRID = 50  # R draws its boundaries on a 50 x 50 grid
_MARKERS = ("o", "^", "s", "D", "v", "P", "X", "*", "<", ">")


def plot(
    model: OPNBModel,
    Xte: Any = None,
    dims: Sequence[int] = (1, 2),
    add_cols: bool = False,
    plot_train: bool = True,
    ax: Optional[Any] = None,
):
    """Plot a fitted model on two of its projection columns, as R's ``plot.OPNB``.

    Training points by class (colour and marker), the decision boundaries of
    the two-column model (where a class's posterior equals the largest other)
    on a 50 x 50 grid spanning each axis' range widened by half its sd,
    optional translucent class regions (``add_cols``), and test points as
    small black dots. ``dims`` are 1-based, as in R; the bandwidths are those
    of the columns shown (R uses columns 1 and 2 whatever ``dims`` says).

    Returns the matplotlib Axes.
    """
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    model = _check_model(model)
    ndim = model.V.shape[1]
    try:
        cols = [int(d) - 1 for d in dims]
    except (TypeError, ValueError):
        raise ValueError(f"dims must be two column numbers (1-based), got {dims!r}") from None
    if len(cols) != 2 or cols[0] == cols[1] or min(cols) < 0 or max(cols) >= ndim:
        raise ValueError(f"dims must be two different columns from 1 to {ndim}, got {tuple(dims)!r}")
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 5.5))

    ptr = (model.X - model.mu) @ model.V[:, cols]
    pts = [ptr]
    pte = None
    if Xte is not None:
        pte = (_check_X(Xte, "Xte", model.V.shape[0]) - model.mu) @ model.V[:, cols]
        pts.append(pte)
    allp = np.vstack(pts)
    lo = allp.min(axis=0) - allp.std(axis=0, ddof=1) / 2
    hi = allp.max(axis=0) + allp.std(axis=0, ddof=1) / 2
    gx = np.linspace(lo[0], hi[0], _GRID)
    gy = np.linspace(lo[1], hi[1], _GRID)
    GX, GY = np.meshgrid(gx, gy)
    grid = np.column_stack([GX.ravel(), GY.ravel()])
    sub = OPNBModel(V=np.eye(2), X=ptr, y=model.y, PI=model.PI, h=model.h[:, cols], nc=model.nc,
                    mu=np.zeros(2), scales=np.ones(2), ynames=model.ynames, lam=model.lam, fval=model.fval)
    logden = np.log(model.PI) + _class_log_densities(sub, grid, ptr, 2, True)
    colors = plt.get_cmap("tab10").colors
    K = model.nc
    if add_cols:
        region = np.argmax(logden, axis=1).reshape(GX.shape)
        ax.contourf(GX, GY, region, levels=np.arange(K + 1) - 0.5,
                    cmap=ListedColormap([colors[k % 10] for k in range(K)]), alpha=0.15)
    for k in range(K):
        others = np.delete(logden, k, axis=1).max(axis=1)
        diff = (logden[:, k] - others).reshape(GX.shape)
        if diff.min() < 0 < diff.max():
            ax.contour(GX, GY, diff, levels=[0.0], colors=[colors[k % 10]], linewidths=1.2)
    if plot_train:
        for k in range(K):
            sel = model.y == k + 1
            ax.scatter(ptr[sel, 0], ptr[sel, 1], s=18, marker=_MARKERS[k % len(_MARKERS)],
                       color=colors[k % 10], label=str(model.ynames[k]), alpha=0.8)
    if pte is not None:
        ax.scatter(pte[:, 0], pte[:, 1], s=4, color="black", label="test points")
        ax.set_title("OPNB projection (black dots: test points)")
    else:
        ax.set_title("OPNB projection")
    ax.set_xlabel(f"projection {cols[0] + 1}")
    ax.set_ylabel(f"projection {cols[1] + 1}")
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    if plot_train or pte is not None:
        ax.legend(loc="best", fontsize="small")
    return ax
