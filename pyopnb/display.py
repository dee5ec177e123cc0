"""OPNBDisplay: a fitted OPNB classifier drawn on its projection, as
scikit-learn's Displays draw theirs (``from_estimator``, ``from_model``,
``plot``; the figure in ``ax_`` and ``figure_``).

What is drawn is what the classifier does. A model of one or two columns
is the whole classifier on its plane, and its class regions are shaded.
A model of more columns decides with columns the plane does not show: by
default its points are coloured by the class ``predict`` gives them
(``response="predict"``). ``response="regions"`` shades the regions
``predict`` gives on the plane through the shown points' mean in the other
columns, where only points near that plane fall in their own region. The
title says which. :attr:`OPNBDisplay.drawn_` holds the class the figure
shows at each point, for checking it against ``predict``.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ._validation import check_X, label_text
from .model import OPNBModel, check_model, predict, projection
from .naive_bayes import class_log_densities
from .plot import (_REGION_GRID, FAR_ESTIMATOR, FAR_MODEL, _check_labels, _legend, _log_joint, _warn_far,
                   class_styles)

__all__ = ["OPNBDisplay"]

class OPNBDisplay:
    """A fitted OPNB classifier on two columns of its projection.

    Build it with :meth:`from_estimator` (an ``OPNBClassifier`` or a
    Pipeline ending in one) or :meth:`from_model` (an :class:`OPNBModel`);
    both draw at once. The constructor only stores what is drawn.

    Parameters
    ----------
    Z : ndarray of shape (m, 2)
        The shown points' projections on the columns ``dims``.
    predicted : ndarray of shape (m,)
        The class codes (0-based, in ``classes`` order) ``predict`` gives the points.
    classes : ndarray of shape (K,)
        The class labels.
    dims : tuple of two int
        The columns shown, 1-based as in R.
    ndim : int
        The model's number of columns.
    regions : ndarray of shape (G, G), optional
        The class (0-based) predicted at each cell of the image over ``extent``.
    extent : tuple of four float, optional
        (xmin, xmax, ymin, ymax) of the image.
    y : ndarray of shape (m,), optional
        The points' true class codes (0-based).
    target : str, optional
        The class variable's name, for the legend.

    Attributes
    ----------
    drawn_ : ndarray of shape (m,)
        The class code the figure shows at each point: the region under it,
        or the colour it is drawn in.
    response_ : str
        "regions" or "predict".
    ax_ : matplotlib Axes
        Set by :meth:`plot`.
    figure_ : matplotlib Figure
        Set by :meth:`plot`.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from pyopnb import OPNBClassifier
    >>> from pyopnb.datasets import load_pima
    >>> from pyopnb.display import OPNBDisplay
    >>> d = load_pima()
    >>> pipe = make_pipeline(StandardScaler(), OPNBClassifier(ndim=3)).fit(d.X_train, d.y_train)
    >>> disp = OPNBDisplay.from_estimator(pipe, d.X_test, d.y_test)
    >>> bool((disp.drawn_ == disp.predicted).all())
    True
    """

    def __init__(self, *, Z: np.ndarray, predicted: np.ndarray, classes: np.ndarray, dims: Sequence[int], ndim: int,
                 regions: Optional[np.ndarray] = None, extent: Optional[Sequence[float]] = None,
                 y: Optional[np.ndarray] = None, target: Optional[str] = None):
        self.Z = Z
        self.predicted = predicted
        self.classes = classes
        self.dims = tuple(dims)
        self.ndim = ndim
        self.regions = regions
        self.extent = None if extent is None else tuple(extent)
        self.y = y
        self.target = target
        self.response_ = "predict" if regions is None else "regions"
        if regions is None:
            self.drawn_ = predicted
        else:
            G = regions.shape[0]
            x0, x1, y0, y1 = self.extent
            ix = np.clip(((Z[:, 0] - x0) / (x1 - x0) * G).astype(np.intp), 0, G - 1)
            iy = np.clip(((Z[:, 1] - y0) / (y1 - y0) * G).astype(np.intp), 0, G - 1)
            self.drawn_ = regions[iy, ix]

    @classmethod
    def from_estimator(cls, estimator: Any, X: Any, y: Any = None, *, dims: Sequence[int] = (1, 2),
                       response: str = "auto", ax: Any = None) -> "OPNBDisplay":
        """Draw a fitted ``OPNBClassifier``, or a Pipeline ending in one, on X.

        A Pipeline's steps before the classifier transform X first, so X is
        the data as the pipeline takes it (raw, unscaled).

        Parameters
        ----------
        estimator : OPNBClassifier or Pipeline
            Fitted.
        X : array-like or DataFrame of shape (m, n_features)
            The points to show, as the estimator takes them.
        y : array-like of shape (m,), optional
            Their true labels: drawn as each point's marker.
        dims : tuple of two int, default (1, 2)
            The projection columns shown, 1-based.
        response : {"auto", "regions", "predict"}, default "auto"
            "regions" shades the classes' regions; "predict" colours each
            point by its predicted class. "auto": regions for a model of one
            or two columns, where they are the classifier's, else predict.
        ax : matplotlib Axes, optional
            Where to draw.

        Returns
        -------
        OPNBDisplay
        """
        from sklearn.pipeline import Pipeline
        from sklearn.utils.validation import check_is_fitted

        final = estimator[-1] if isinstance(estimator, Pipeline) else estimator
        if not hasattr(final, "model_") or not isinstance(getattr(final, "model_", None), OPNBModel):
            check_is_fitted(final)
            raise TypeError(f"OPNBDisplay.from_estimator needs an OPNBClassifier or a Pipeline ending in one, got "
                            f"{type(final).__name__}")
        Xt = estimator[:-1].transform(X) if isinstance(estimator, Pipeline) else X
        Xm = final._validate_test(Xt)
        model = final.model_
        codes = None if y is None else _check_labels(y, model, Xm.shape[0])
        return cls._build(model, Xm, codes, dims, response, ax, estimator=type(estimator).__name__)

    @classmethod
    def from_model(cls, model: OPNBModel, X: Any, y: Any = None, *, dims: Sequence[int] = (1, 2),
                   response: str = "auto", ax: Any = None) -> "OPNBDisplay":
        """Draw an :class:`OPNBModel` (pyopnb's or R's) on X, given on the
        model's own scale (the columns it was fitted on). Points that
        project far outside the training projections warn
        (:class:`pyopnb.ProjectionRangeWarning`).

        Parameters
        ----------
        model : OPNBModel
            A fitted model.
        X : array-like or DataFrame of shape (m, d)
            The points to show, on the model's scale; matched to its columns
            by name where both have names.
        y : array-like of shape (m,), optional
            Their true labels: drawn as each point's marker.
        dims : tuple of two int, default (1, 2)
            The projection columns shown, 1-based.
        response : {"auto", "regions", "predict"}, default "auto"
            As in :meth:`from_estimator`.
        ax : matplotlib Axes, optional
            Where to draw.

        Returns
        -------
        OPNBDisplay
        """
        model = check_model(model)
        Xm = check_X(X, "X", model.V.shape[0], model.feature_names)
        codes = None if y is None else _check_labels(y, model, Xm.shape[0])
        return cls._build(model, Xm, codes, dims, response, ax, estimator="model")

    @classmethod
    def _build(cls, model: OPNBModel, Xm: np.ndarray, codes: Optional[np.ndarray], dims: Sequence[int],
               response: str, ax: Any, estimator: str) -> "OPNBDisplay":
        ndim = model.V.shape[1]
        if ndim < 2:
            raise ValueError("OPNBDisplay draws two columns; the model has one (pyopnb.plot draws it along its "
                             "projection)")
        try:
            cols = [int(d) - 1 for d in dims]
        except (TypeError, ValueError):
            raise ValueError(f"dims must be column numbers (1-based), got {label_text(dims)}") from None
        if len(cols) != 2 or cols[0] == cols[1] or min(cols) < 0 or max(cols) >= ndim:
            raise ValueError(f"dims must be two different columns from 1 to {ndim}, got {label_text(tuple(dims))}")
        if response not in ("auto", "regions", "predict"):
            raise ValueError(f"response must be 'auto', 'regions' or 'predict', got {label_text(response)}")
        if response == "auto":
            response = "regions" if ndim == 2 else "predict"
        Zall = projection(Xm, model.mu, model.V)
        Ztr = projection(model.X, model.mu, model.V)
        _warn_far(Zall[:, cols], Ztr[:, cols], cols, FAR_MODEL if estimator == "model" else FAR_ESTIMATOR, 3)
        predicted = np.argmax(predict(model, Xm, log=True)["log_posterior"], axis=1)
        Z = Zall[:, cols]
        regions = extent = None
        if response == "regions":
            both = np.vstack([Z, Ztr[:, cols]])
            pad = both.std(axis=0, ddof=1) / 2
            lo, hi = both.min(axis=0) - pad, both.max(axis=0) + pad
            extent = (lo[0], hi[0], lo[1], hi[1])
            # the cells' centres, so that a point's cell is the one whose class it is drawn over
            gx = lo[0] + (np.arange(_REGION_GRID) + 0.5) * (hi[0] - lo[0]) / _REGION_GRID
            gy = lo[1] + (np.arange(_REGION_GRID) + 0.5) * (hi[1] - lo[1]) / _REGION_GRID
            GX, GY = np.meshgrid(gx, gy)
            logj = _plane_log_joint(model, Ztr, cols, Zall.mean(axis=0), np.column_stack([GX.ravel(), GY.ravel()]))
            regions = np.argmax(logj, axis=1).reshape(GX.shape)
        disp = cls(Z=Z, predicted=predicted, classes=np.asarray(model.ynames), dims=[c + 1 for c in cols], ndim=ndim,
                   regions=regions, extent=extent, y=codes, target=model.target)
        return disp.plot(ax=ax)

    def plot(self, ax: Any = None) -> "OPNBDisplay":
        """Draw (again).

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Where to draw (default a new figure's).

        Returns
        -------
        OPNBDisplay
            Itself, with ``ax_`` and ``figure_`` set.
        """
        import matplotlib.pyplot as plt
        from matplotlib.colors import ListedColormap

        K = self.classes.size
        if ax is None:
            _, ax = plt.subplots(figsize=(6.5, 5.5), layout="constrained")
        styles = class_styles(K)
        names = [str(c) for c in self.classes]
        if self.regions is not None:
            ax.imshow(self.regions, origin="lower", extent=self.extent, aspect="auto", interpolation="nearest",
                      cmap=ListedColormap([styles[k][0] for k in range(K)]), vmin=-0.5, vmax=K - 0.5, alpha=0.2,
                      zorder=0)
        # a point's marker is its true class where y is given (else its predicted one); its colour, over
        # regions the marker's class, else its predicted class: the legend gives each class's pair
        shape = self.predicted if self.y is None else self.y
        for k in range(K):
            sel = shape == k
            if sel.any():
                colour = [styles[c][0] for c in (self.drawn_[sel] if self.regions is None else np.full(sel.sum(), k))]
                ax.scatter(self.Z[sel, 0], self.Z[sel, 1], s=20, marker=styles[k][1], c=colour,
                           edgecolors="none" if self.regions is None else "black", linewidths=0.3, alpha=0.85)
            ax.scatter([], [], s=20, marker=styles[k][1], color=styles[k][0], label=names[k])
        if self.extent is not None:
            ax.set_xlim(self.extent[0], self.extent[1])
            ax.set_ylim(self.extent[2], self.extent[3])
        ax.set_xlabel(f"projection {self.dims[0]}")
        ax.set_ylabel(f"projection {self.dims[1]}")
        ax.set_title(self._title(), fontsize="medium")
        key = "" if self.y is None else (" (marker: true)" if self.regions is not None
                                          else " (colour: predicted, marker: true)")
        _legend(ax, K, (self.target or "class") + key)
        self.ax_, self.figure_ = ax, ax.figure
        return self

    def _title(self) -> str:
        other = self.ndim - 2
        if self.regions is None:
            return f"points coloured by predict ({self.ndim} columns)"
        if other == 0:
            return "class regions of predict"
        return (f"regions of predict on the plane through the points' mean in the other {other} "
                f"column{'s' if other > 1 else ''}")


def _plane_log_joint(model: OPNBModel, Ztr: np.ndarray, cols: Sequence[int], centre: np.ndarray,
                     at: np.ndarray) -> np.ndarray:
    """log PI_k f_k on the plane of the shown columns through ``centre``: the
    shown columns' log densities at ``at`` plus, the same for every cell, the
    other columns' at the centre (naive Bayes sums the columns' logs)."""
    other = [t for t in range(Ztr.shape[1]) if t not in cols]
    out = _log_joint(model, Ztr[:, list(cols)], cols, at)
    if other:
        out = out + class_log_densities(Ztr[:, other], model.y0, model.nc, model.h[:, other],
                                        centre[None, other], True, w=model.w)
    return out
