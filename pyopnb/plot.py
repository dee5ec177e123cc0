"""R's ``plot.OPNB``: training projections, decision boundaries and test points."""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple

import numpy as np

from ._core.linalg import c_log_array
from ._validation import check_X, label_text
from .exceptions import ProjectionRangeWarning
from .model import OPNBModel, check_model, projection
from .naive_bayes import class_log_densities

if TYPE_CHECKING:  # matplotlib loads only when a plot is drawn
    from matplotlib.axes import Axes

__all__ = ["plot", "class_styles"]

_GRID = 50  # R draws its boundaries on a 50 x 50 grid
# the class regions' grid: fine enough that a region's edge is no staircase
_REGION_GRID = 400
_CURVE = 400  # points along the axis of a one-column model's densities
_MARKERS = ("o", "^", "s", "D", "v", "P", "X", "*", "<", ">", "p", "h")
# a legend of more entries than this goes beside the axes, not over the data
_LEGEND_INSIDE = 10
# how far outside the training projections a shown point may lie, in widths of their range, before the data look
# unlike the training data (unscaled, or not through the pipeline's steps)
_FAR = 0.5
# the share of shown points lying that far out that warns
_FAR_SHARE = 0.1


def class_styles(K: int) -> List[Tuple[Tuple[float, ...], str]]:
    """A (colour, marker) pair per class, no two classes alike.

    tab10 up to 10 classes; then the 60 colours of tab20, tab20b and tab20c;
    past 60, colours evenly spaced along turbo. Markers cycle with a period
    (12) that differs from the colours', so neighbouring classes also differ
    in shape.
    """
    import matplotlib

    cmap = matplotlib.colormaps
    if K <= 10:
        colours = list(cmap["tab10"].colors)[:K]
    elif K <= 60:
        colours = [c for name in ("tab20", "tab20b", "tab20c") for c in cmap[name].colors][:K]
    else:
        colours = [tuple(c) for c in cmap["turbo"](np.linspace(0.02, 0.98, K))]
    return [(tuple(colours[k]), _MARKERS[k % len(_MARKERS)]) for k in range(K)]


def _check_labels(yte: Any, model: OPNBModel, m: int) -> np.ndarray:
    """Test labels as 0-based codes of the model's classes."""
    labels = np.asarray(yte, dtype=object).ravel()
    if labels.size != m:
        raise ValueError(f"yte has {labels.size} labels but Xte has {m} rows")
    index = {str(c): k for k, c in enumerate(model.ynames)}
    codes = np.array([index.get(str(v), -1) for v in labels])
    if (codes < 0).any():
        unknown = sorted({str(v) for v in labels[codes < 0]})
        raise ValueError(f"yte holds labels {unknown[:5]} that are not among the model's classes "
                         f"{[str(c) for c in model.ynames]}")
    return codes


def _legend(ax: Any, K: int, title: str) -> None:
    """The classes' legend, titled; past ten classes beside the axes, where
    the figure's constrained layout keeps it inside a plain savefig."""
    if K <= _LEGEND_INSIDE:
        ax.legend(loc="best", fontsize="small", title=title, title_fontsize="small")
    else:
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize="small",
                  ncol=int(np.ceil(K / 25)), markerscale=1.2, title=title, title_fontsize="small")


def plot(
    model: OPNBModel,
    Xte: Any = None,
    dims: Optional[Sequence[int]] = None,
    add_cols: bool = False,
    plot_train: bool = True,
    ax: Optional[Any] = None,
    *,
    yte: Any = None,
) -> Axes:
    """Plot a fitted model on its projection, as R's ``plot.OPNB``.

    Training points by class (colour and marker), the decision boundaries of
    the two-column model (where a class's posterior equals the largest
    other) on a 50 x 50 grid spanning each axis' range widened by half its
    sd, optional translucent class regions, and test points as small black
    dots, or, given their labels ``yte``, as hollow markers in their true
    class's style. The bandwidths are those of the columns shown (R uses
    columns 1 and 2 whatever ``dims`` says).

    A model with one column (R cannot fit those) is drawn along its one
    projection: each class's density times its prior, training points as a
    rug below the axis, test points under it.

    Parameters
    ----------
    model : OPNBModel
        A fitted model.
    Xte : array-like or DataFrame of shape (m, d), optional
        Test points to draw.
    dims : sequence of int, optional
        The two columns to draw, 1-based as in R (default (1, 2), or (1,) for
        a one-column model).
    add_cols : bool, default False
        Shade the class regions (a 400 x 400 image, so that their edges are
        crisp).
    plot_train : bool, default True
        Draw the training points.
    ax : matplotlib Axes, optional
        Where to draw (default a new figure's).
    yte : array-like of shape (m,), optional
        The test points' labels: they are drawn in their true class's style.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from pyopnb import OPNB, plot
    >>> from pyopnb.datasets import load_pima
    >>> d = load_pima()
    >>> ax = plot(OPNB(d.X_train, d.y_train, ndim=2), d.X_test, yte=d.y_test)
    >>> ax.get_xlabel()
    'projection 1'
    """
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    model = check_model(model)
    ndim = model.V.shape[1]
    if dims is None:
        dims = (1,) if ndim == 1 else (1, 2)
    try:
        cols = [int(d) - 1 for d in dims]
    except (TypeError, ValueError):
        raise ValueError(f"dims must be column numbers (1-based), got {label_text(dims)}") from None
    if ndim == 1:
        if cols != [0]:
            raise ValueError(f"the model has one column: dims must be (1,), got {label_text(tuple(dims))}")
    elif len(cols) != 2 or cols[0] == cols[1] or min(cols) < 0 or max(cols) >= ndim:
        raise ValueError(f"dims must be two different columns from 1 to {ndim}, got {label_text(tuple(dims))}")
    pte = None
    if Xte is not None:
        pte = projection(check_X(Xte, "Xte", model.V.shape[0], model.feature_names), model.mu, model.V[:, cols])
    elif yte is not None:
        raise ValueError("yte labels the rows of Xte: give Xte too")
    codes = None if yte is None else _check_labels(yte, model, pte.shape[0])
    if ax is None:
        K = model.nc
        _, ax = plt.subplots(figsize=(6.5 + (1.6 * np.ceil(K / 25) if K > _LEGEND_INSIDE else 0), 5.5),
                             layout="constrained")
    ptr = projection(model.X, model.mu, model.V[:, cols])
    if pte is not None:
        _warn_far(pte, ptr, cols, FAR_MODEL, 2)
    styles = class_styles(model.nc)
    if ndim == 1:
        return _plot_line(model, ptr, pte, codes, styles, plot_train, ax)

    pts = [ptr] if pte is None else [ptr, pte]
    allp = np.vstack(pts)
    lo = allp.min(axis=0) - allp.std(axis=0, ddof=1) / 2
    hi = allp.max(axis=0) + allp.std(axis=0, ddof=1) / 2
    gx = np.linspace(lo[0], hi[0], _GRID)
    gy = np.linspace(lo[1], hi[1], _GRID)
    GX, GY = np.meshgrid(gx, gy)
    grid = np.column_stack([GX.ravel(), GY.ravel()])
    logden = _log_joint(model, ptr, cols, grid)
    K = model.nc
    if add_cols:
        fx = np.linspace(lo[0], hi[0], _REGION_GRID)
        fy = np.linspace(lo[1], hi[1], _REGION_GRID)
        FX, FY = np.meshgrid(fx, fy)
        region = np.argmax(_log_joint(model, ptr, cols, np.column_stack([FX.ravel(), FY.ravel()])), axis=1)
        ax.imshow(region.reshape(FX.shape), origin="lower", extent=(lo[0], hi[0], lo[1], hi[1]), aspect="auto",
                  interpolation="nearest", cmap=ListedColormap([styles[k][0] for k in range(K)]), vmin=-0.5,
                  vmax=K - 0.5, alpha=0.15, zorder=0)
    for k in range(K):
        others = np.delete(logden, k, axis=1).max(axis=1)
        diff = (logden[:, k] - others).reshape(GX.shape)
        if diff.min() < 0 < diff.max():
            ax.contour(GX, GY, diff, levels=[0.0], colors=[styles[k][0]], linewidths=1.2)
    if plot_train:
        for k in range(K):
            sel = model.y == k + 1
            ax.scatter(ptr[sel, 0], ptr[sel, 1], s=18, marker=styles[k][1], color=styles[k][0],
                       label=str(model.ynames[k]), alpha=0.8)
    _test_points(ax, pte, codes, styles, lambda p: (p[:, 0], p[:, 1]))
    ax.set_xlabel(f"projection {cols[0] + 1}")
    ax.set_ylabel(f"projection {cols[1] + 1}")
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    if plot_train or pte is not None:
        _legend(ax, K, model.target or "class")
    return ax


def _log_joint(model: OPNBModel, ptr: np.ndarray, cols: Sequence[int], at: np.ndarray) -> np.ndarray:
    """log PI_k f_k at the points ``at`` of the shown columns (their own bandwidths)."""
    return c_log_array(model.PI) + class_log_densities(ptr, model.y0, model.nc,
                                                  model.h[:, list(cols)], at, True, w=model.w)


def _test_points(ax: Any, pte: Optional[np.ndarray], codes: Optional[np.ndarray], styles, xy) -> None:
    if pte is None:
        ax.set_title("OPNB projection")
        return
    if codes is None:
        ax.scatter(*xy(pte), s=4, color="black", label="test points")
        ax.set_title("OPNB projection (black dots: test points)")
        return
    for k in np.unique(codes):
        sel = codes == k
        ax.scatter(*xy(pte[sel]), s=30, marker=styles[k][1], facecolors="none", edgecolors=[styles[k][0]],
                   linewidths=0.9)
    ax.set_title("OPNB projection (hollow: test points, by true class)")


def _plot_line(model, ptr, pte, codes, styles, plot_train, ax):
    """A one-column model: PI_k f_k along the projection, points as rugs below it."""
    z = ptr[:, 0] if pte is None else np.concatenate([ptr[:, 0], pte[:, 0]])
    pad = z.std(ddof=1) / 2 if z.size > 1 else 1.0
    grid = np.linspace(z.min() - pad, z.max() + pad, _CURVE)
    logden = _log_joint(model, ptr, [0], grid[:, None])
    dens = np.exp(logden)
    top = dens.max()
    K = model.nc
    for k in range(K):
        ax.plot(grid, dens[:, k], color=styles[k][0], lw=1.6, label=str(model.ynames[k]))
        if plot_train:
            sel = model.y == k + 1
            ax.scatter(ptr[sel, 0], np.full(sel.sum(), -0.06 * top), s=22, marker="|", color=styles[k][0])
    _test_points(ax, pte, codes, styles, lambda p: (p[:, 0], np.full(p.shape[0], -0.13 * top)))
    ax.axhline(0.0, color="0.6", lw=0.6)
    ax.set_xlim(grid[0], grid[-1])
    ax.set_ylim(-0.2 * top, 1.05 * top)
    ax.set_xlabel("projection 1")
    ax.set_ylabel("prior x class density")
    _legend(ax, K, model.target or "class")
    return ax


# what to do about data far from the training projections: a model's, and an estimator's
FAR_MODEL = ("give the data as the model was fitted on them (a pipeline's model: draw the pipeline with "
             "pyopnb.OPNBDisplay.from_estimator, which transforms X through its steps)")
FAR_ESTIMATOR = "are these the data the estimator takes?"


def _warn_far(Z: np.ndarray, Ztr: np.ndarray, cols: Sequence[int], hint: str, stacklevel: int) -> None:
    """Warn where many shown points project far outside the training
    projections (``stacklevel`` counted from the caller's caller's line)."""
    lo, hi = Ztr.min(axis=0), Ztr.max(axis=0)
    width = hi - lo
    far = ((Z < lo - _FAR * width) | (Z > hi + _FAR * width)).any(axis=1)
    if far.mean() > _FAR_SHARE:
        span = ", ".join(f"column {c + 1}: [{Z[:, i].min():.3g}, {Z[:, i].max():.3g}] against [{lo[i]:.3g}, "
                         f"{hi[i]:.3g}]" for i, c in enumerate(cols))
        warnings.warn(f"{far.mean():.0%} of the points project far outside the training data's projections "
                      f"({span}): {hint}", ProjectionRangeWarning, stacklevel=stacklevel + 1)
