"""DaskOPNBClassifier: :func:`pyopnb.dask.OPNB` as a scikit-learn estimator."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

__all__ = ["DaskOPNBClassifier"]


class DaskOPNBClassifier(ClassifierMixin, BaseEstimator):
    """OPNB fitted on a Dask cluster, as a scikit-learn classifier.

    ``fit`` is :func:`pyopnb.dask.OPNB` (R's formulation), the paper's
    ("correct": R's with the paper's binned objective) or
    :func:`pyopnb.dask.opnb_journal` (the journal's), binned: the single
    machine's projection, bit for bit, for any chunking, on the active
    client's cluster (else a ``LocalCluster`` made for the fit: a client is
    no parameter, so ``clone`` and searches copy the estimator). The model
    it keeps holds no training row (``model_``, a
    :class:`pyopnb.grid_model.GridModel`). Predictions are in log space;
    given a dask collection they are lazy dask arrays
    (:func:`pyopnb.dask.predict`), given data held here numpy arrays, each
    row's the same bits either way.

    Each formulation takes its own parameters; those left at None take the
    formulation's defaults, and one of the other formulation given a value
    is an error at fit, as in :class:`pyopnb.OPNBClassifier`.

    Parameters
    ----------
    ndim : int, optional
        Projection columns (default ``min(n_features, 20)``).
    lam : float, optional
        Penalty on ``||V||^2`` (R, correct; default 1e-3).
    nbin : int, default 1000
        Bins per projected column in the fit (exact sums are refused).
    scale : bool, optional
        Scale the features to unit sd first (R, correct; default True).
    grid_nbin : int, optional
        Grid points of the model's class grids (default ``nbin``).
    maxit : int, default 100
        L-BFGS-B's iteration limit.
    threads : int, default 1
        Each task's threads.
    priors : array-like of shape (n_classes,) or mapping, optional
        The class priors: one per class in the order of ``classes_`` (the
        sorted labels, or a categorical's own order), or a mapping from
        label to prior; default the class proportions. The fit's
        likelihood and every prediction use them.
    r_defects : bool, optional
        Where R's gradient sums would not be finite, keep the start as R's
        OPNB does (True), or go on and warn (False, the default), as in
        :func:`pyopnb.OPNB` (R).
    formulation : {"R", "correct", "journal"}, default "R"
        R OPNB 1.0's penalised formulation; ``"correct"``, the same with
        the paper's objective (priors once, linear binning with densities
        summed at the points, its exact gradient), as
        ``OPNBClassifier(formulation="correct")``; or the method as
        published.
    gamma : float, optional
        Bandwidth multiplier (journal; default 1).
    prescale : bool, optional
        Multiply the scaled data by Sigma_W^(-1/2) first (journal; default False).

    Attributes
    ----------
    model_ : GridModel
        The fitted model, without the training rows.
    formulation_ : Formulation
        The formulation object fitted.
    classes_ : ndarray of shape (n_classes,)
        The labels in the order of the posteriors' columns: the model's
        levels (sorted, or a categorical's own order).
    convergence_ : int
        L-BFGS-B's stop in R's optim codes.
    n_features_in_ : int
        The number of training columns.
    feature_names_in_ : ndarray of str
        The training columns' names, when fitted on a dataframe.
    """

    def __init__(self, ndim: Optional[int] = None, lam: Optional[float] = None, nbin: int = 1000,
                 scale: Optional[bool] = None, grid_nbin: Optional[int] = None, maxit: int = 100, threads: int = 1,
                 priors: Any = None, r_defects: Optional[bool] = None, formulation: str = "R",
                 gamma: Optional[float] = None, prescale: Optional[bool] = None):
        self.ndim = ndim
        self.lam = lam
        self.nbin = nbin
        self.scale = scale
        self.grid_nbin = grid_nbin
        self.maxit = maxit
        self.threads = threads
        self.priors = priors
        self.r_defects = r_defects
        self.formulation = formulation
        self.gamma = gamma
        self.prescale = prescale

    def fit(self, X: Any, y: Any) -> "DaskOPNBClassifier":
        """Fit the projection and the class grids on the cluster.

        Parameters
        ----------
        X : dask array or DataFrame (or data held here) of shape (n, n_features)
            Training rows, numeric.
        y : dask array or Series (or data held here) of shape (n,)
            Their labels.

        Returns
        -------
        DaskOPNBClassifier
            The fitted estimator.
        """
        from ..formulation import formulation
        from . import _fit

        own = ("lam", "scale", "gamma", "prescale", "r_defects")
        given = {k: getattr(self, k) for k in own if getattr(self, k) is not None}
        if self.formulation not in ("R", "correct", "journal"):
            raise ValueError(f"formulation must be 'R', 'correct' or 'journal' on a Dask cluster, got "
                             f"{self.formulation!r}")
        # the error names only this estimator's parameters (a formulation's C and V0 are not among them)
        self.formulation_ = formulation(self.formulation, words={k: k for k in own + ("formulation",)}, **given)
        _, self.model_ = _fit(X, y, self.nbin if self.grid_nbin is None else self.grid_nbin, self.formulation_,
                              ndim=self.ndim, V0=None, nbin=self.nbin, maxit=self.maxit, client=None,
                              threads=self.threads, callback=None, progress=False, priors=self.priors,
                              caller="DaskOPNBClassifier.fit")
        self.classes_ = np.asarray(self.model_.ynames)
        self.n_features_in_ = int(self.model_.V.shape[0])
        if self.model_.feature_names is not None:
            self.feature_names_in_ = np.asarray(self.model_.feature_names, dtype=object)
        self.convergence_ = int(self.model_.convergence)
        return self

    def _predicted(self, X: Any) -> dict:
        """:func:`pyopnb.predict`'s (log space) of X: lazy for a dask X."""
        from sklearn.utils.validation import check_is_fitted

        from ..model import predict as predict_here
        from . import predict

        check_is_fitted(self, "model_")
        if hasattr(X, "dask"):
            return predict(self.model_, X, log=True, threads=self.threads)
        return predict_here(self.model_, X, log=True, threads=self.threads)

    def predict_log_proba(self, X: Any) -> Any:
        return self._predicted(X)["log_posterior"]

    def predict_proba(self, X: Any) -> Any:
        return self._predicted(X)["posterior"]

    def predict(self, X: Any) -> Any:
        return self._predicted(X)["class"]

    def decision_function(self, X: Any) -> Any:
        logp = self.predict_log_proba(X)
        return logp[:, 1] - logp[:, 0] if self.classes_.size == 2 else logp


def _document(method: Any, summary: str, returns: str) -> None:
    """A prediction method's docstring: its summary and return, the X every one takes."""
    method.__doc__ = f"""{summary}

        Parameters
        ----------
        X : dask array or DataFrame, or data held here, of shape (m, n_features)
            New rows; a dataframe is matched to the training columns by name.

        Returns
        -------
        {returns}
        """


for _method, _summary, _returns in (
        (DaskOPNBClassifier.predict_log_proba, "Log posterior class probabilities, computed in log space.",
         "dask array or ndarray of shape (m, n_classes)\n            Lazy for a dask X; columns in ``classes_`` order."),
        (DaskOPNBClassifier.predict_proba, "Posterior class probabilities, from the log posteriors (no underflow).",
         "dask array or ndarray of shape (m, n_classes)\n            Lazy for a dask X; columns in ``classes_`` order."),
        (DaskOPNBClassifier.predict, "The class of largest posterior (the first on ties).",
         "dask array or ndarray of shape (m,)\n            Labels from ``classes_``, lazy for a dask X."),
        (DaskOPNBClassifier.decision_function,
         "Confidence scores: the log posteriors, or for two classes the log odds of ``classes_[1]``.",
         "dask array or ndarray of shape (m,) for two classes, else (m, n_classes)\n"
         "            Positive where ``classes_[1]`` is predicted (two classes).")):
    _document(_method, _summary, _returns)
