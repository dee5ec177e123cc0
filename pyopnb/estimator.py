"""OPNBClassifier: OPNB as a scikit-learn estimator."""
from __future__ import annotations

import copy
import warnings
from typing import Any, Callable, Dict, Iterator, List, Optional

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin

from ._validation import check_ndim, check_priors, estimator_data, fit_data, label_text
from .fitting import fit
from .formulation import Formulation, corrected, formulation
from .model import OPNBModel, predict, projection, staged_log_joint

__all__ = ["OPNBClassifier", "param_grid"]


def param_grid(n_features: int, n_classes: int = 2, *, full: bool = False,
               prefix: str = "") -> List[Dict[str, List[Any]]]:
    """The grid the study tunes OPNB on, over both formulations, for
    ``GridSearchCV(OPNBClassifier(), param_grid(p))``.

    R's formulation over ``lam`` (ndim min(p, 20)), and the journal's over
    ``gamma`` and ``ndim``: the quick profile's grids of
    :mod:`pyopnb.study` (``full=True``: the papers' grids, 10 lams and
    every ndim up to 20, about five times the fits). Tuned so, both
    formulations beat the untuned defaults and SVM on the study's PMLB sets
    (docs: "Choosing the formulation and lam").

    Parameters
    ----------
    n_features : int
        The number of columns the classifier gets (after a pipeline's steps).
    n_classes : int, default 2
        The number of classes (the grids do not depend on it today).
    full : bool, default False
        The papers' grids instead of the quick profile's.
    prefix : str, default ""
        Put before each name: ``"opnbclassifier__"`` for a pipeline's step.

    Returns
    -------
    list of dict
        GridSearchCV's ``param_grid``: one dict per formulation.
    """
    from .study.methods import METHODS

    p = check_ndim(n_features, n_features, "n_features")
    out = []
    for name, formulation_name in (("OPNB", "R"), ("OPNB-journal", "journal")):
        method = METHODS[name]
        grid = (method.grid if full else method.quick)(p, n_classes)
        out.append({prefix + "formulation": [formulation_name], **{prefix + k: list(v) for k, v in grid.items()}})
    return out


class OPNBClassifier(ClassNamePrefixFeaturesOutMixin, ClassifierMixin, TransformerMixin, BaseEstimator):
    """Optimal Projections Naive Bayes classifier.

    Fits OPNB in one of its formulations (:mod:`pyopnb.formulation`) and
    predicts in log space, so posteriors never underflow. ``transform``
    returns the projections ``(X - mu) @ V``, named ``opnbclassifier0``, ...
    by ``get_feature_names_out`` (so ``set_output(transform="pandas")``
    works). A DataFrame given to predict or transform is matched to the
    training columns by name, in any order, integer names too (fitted on an
    array, X is read by position, as in scikit-learn). ``fit`` takes
    ``sample_weight`` (and ``class_weight`` multiplies it): every statistic,
    class density and the likelihood weigh the rows in proportion
    (:mod:`pyopnb.weights`).

    Each formulation takes its own parameters; those left at None take the
    formulation's defaults, and one of another formulation given a value is
    an error at fit (a grid search over it would otherwise fit the same
    model again and again).

    Parameters
    ----------
    ndim : int, optional
        Projection columns (default ``min(n_features, 20)``).
    formulation : {"R", "correct", "journal"}, str or Formulation, default "R"
        ``"R"``: R OPNB 1.0's penalised formulation (:func:`pyopnb.OPNB`;
        ``lam``, ``scale`` and ``C`` apply). ``"correct"``: the same with
        the paper's objective (priors once). ``"journal"``: the method as
        published (:func:`pyopnb.opnb_journal`; ``gamma`` and ``prescale``
        apply). A name registered with :func:`pyopnb.formulation.register`
        takes its defaults; a Formulation object is fitted as it is, with
        its own parameters (then the estimator's are left at None).
    lam : float, optional
        Penalty on ``||V||^2``, > 0 (R, correct; default 1e-3).
    scale : bool, optional
        Scale features to unit sd before fitting (R, correct; default True).
    C : callable, optional
        A penalty matrix, as in :func:`pyopnb.OPNB` (R, correct).
    gamma : float, optional
        Bandwidth multiplier (journal; default 1, grid 1/3, 1/2, 1, 2, 3).
    prescale : bool, optional
        Multiply the scaled data by Sigma_W^(-1/2) first (journal; default False).
    r_defects : bool, optional
        Where R's gradient sums would not be finite, keep the start as R's
        OPNB does (R; default False: go on and warn), as in
        :func:`pyopnb.OPNB`.
    V0 : callable or array, optional
        The start, as in :func:`pyopnb.OPNB` (every formulation).
    nbin : int or None, default 1000
        Bins per projected column; None for exact kernel sums.
    priors : array-like of shape (n_classes,) or mapping, optional
        The class priors, in the order of ``classes_`` (the sorted labels),
        or a mapping from label to prior naming every class; each positive,
        summing to 1. Default: the training data's class proportions. The
        fit's likelihood and every prediction use them (every formulation).
    class_weight : dict or "balanced", optional
        Weights of the classes, multiplying ``sample_weight``, as
        scikit-learn's classifiers take them: a mapping from label to weight,
        or "balanced" (n / (n_classes n_k)). They weigh the likelihood and,
        unless ``priors`` are given, make the priors the classes' weight
        shares ("balanced": equal priors).
    maxit : int, default 100
        L-BFGS-B's iteration limit (R's optim ``maxit``, 100).
    threads : int, optional
        Threads for every parallel step of a fit (-1: every core). Default:
        ``PYOPNB_NUM_THREADS``, else OpenMP's setting (``OMP_NUM_THREADS``,
        threadpoolctl's limits), else every core this process may use. Under
        ``GridSearchCV(n_jobs=k)`` joblib's workers set OpenMP's count to
        cores // k, so the fits share the cores instead of oversubscribing
        them. The fitted model does not depend on it.
    correct : bool, optional
        Deprecated alias: ``correct=True`` is ``formulation="correct"``.

    Attributes
    ----------
    model_ : OPNBModel
        The fitted model, with the estimator's labels and column names.
    formulation_ : Formulation
        The formulation object fitted.
    classes_ : ndarray of shape (n_classes,)
        The labels, in the order of the posteriors' columns.
    convergence_ : int
        L-BFGS-B's stop, R's optim codes: 0 converged, 1 the iteration limit
        (``maxit``), 51 a warning, 52 the line search failed (the model's
        ``convergence``).
    n_features_in_ : int
        The number of training columns.
    feature_names_in_ : ndarray of str
        The training columns' names, when fitted on a DataFrame with string
        column names.
    """

    def __init__(self, ndim: Optional[int] = None, lam: Optional[float] = None, nbin: Optional[int] = 1000,
                 scale: Optional[bool] = None, V0: Optional[Callable] = None, C: Optional[Callable] = None,
                 correct: Optional[bool] = None, threads: Optional[int] = None, formulation: str = "R",
                 gamma: Optional[float] = None, prescale: Optional[bool] = None, maxit: int = 100,
                 r_defects: Optional[bool] = None, priors: Any = None, class_weight: Any = None):
        self.ndim = ndim
        self.lam = lam
        self.nbin = nbin
        self.scale = scale
        self.V0 = V0
        self.C = C
        self.correct = correct
        self.threads = threads
        self.formulation = formulation
        self.gamma = gamma
        self.prescale = prescale
        self.maxit = maxit
        self.r_defects = r_defects
        self.priors = priors
        self.class_weight = class_weight

    def _formulation(self) -> Formulation:
        """The formulation with the parameters given (those left at None take its defaults)."""
        name = self.formulation
        given = {k: getattr(self, k) for k in ("lam", "scale", "C", "gamma", "prescale", "V0", "r_defects")
                 if getattr(self, k) is not None}
        if isinstance(name, Formulation):
            if given or self.correct is not None:
                extra = sorted(given) + (["correct"] if self.correct is not None else [])
                raise ValueError(f"formulation is a {type(name).__name__} object, which holds its own parameters: "
                                 f"set {', '.join(extra)} on it, not on the estimator")
            return copy.deepcopy(name)
        if self.correct is not None:
            warnings.warn("OPNBClassifier(correct=True) is deprecated: use formulation='correct'",
                          FutureWarning, stacklevel=3)
            if self.correct:
                name = corrected(name)
        return formulation(name, **given)

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> "OPNBClassifier":
        """Fit the projection and the class densities.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n, n_features)
            Training data; a DataFrame's column names are kept.
        y : array-like of shape (n,)
            Labels of any kind. ``classes_`` are the distinct labels sorted,
            as in scikit-learn's classifiers: a pandas Categorical's level
            order is not kept (:func:`pyopnb.OPNB` keeps it, as R's factor).
        sample_weight : array-like of shape (n,), optional
            Non-negative weights of the rows: rows of weight 0 are left out,
            and the others weigh in proportion (weights summing to 1 or to n
            fit the same model); weights all equal are no weights.

        Returns
        -------
        OPNBClassifier
            The fitted estimator.
        """
        X, codes = fit_data(self, X, y)
        ndim = None if self.ndim is None else check_ndim(self.ndim, X.shape[1], "n_features")
        self.formulation_ = self._formulation()
        # codes 0..K-1 keep the model's class order that of classes_, the priors' array order
        PI = check_priors(self.priors, self.classes_)
        weights = self._weights(codes, sample_weight)
        self.model_: OPNBModel = fit(X, codes, self.formulation_, ndim=ndim, nbin=self.nbin, maxit=self.maxit,
                                     threads=self.threads, priors=PI, weights=weights, caller="OPNBClassifier")
        # the model is the estimator's: its labels and their type, its columns' names
        self.model_.ynames = np.asarray(self.classes_)
        names = getattr(self, "feature_names_in_", None)
        self.model_.feature_names = None if names is None else tuple(str(c) for c in names)
        self._n_features_out = self.model_.ndim
        self.convergence_ = int(self.model_.convergence)
        return self

    def _weights(self, codes: np.ndarray, sample_weight: Any) -> Optional[np.ndarray]:
        """The rows' weights: sample_weight times class_weight's (None: neither)."""
        if self.class_weight is None:
            return sample_weight
        from sklearn.utils.class_weight import compute_class_weight

        if isinstance(self.class_weight, dict):
            missing = [label_text(c) for c in self.class_weight if not np.any(self.classes_ == c)]
            if missing:
                raise ValueError(f"class_weight names labels that are not classes: {', '.join(missing)}")
        per_class = compute_class_weight(self.class_weight, classes=self.classes_, y=self.classes_[codes])
        w = per_class[codes]
        if sample_weight is None:
            return w
        sw = np.asarray(sample_weight, dtype=np.float64)
        if sw.shape != w.shape:
            raise ValueError(f"sample_weight must have one weight per row ({w.size}), got shape {sw.shape}")
        return sw * w

    def _validate_test(self, X: Any) -> np.ndarray:
        """X as a float matrix, a dataframe's columns put in the training order by name."""
        return estimator_data(self, X)

    def _predict(self, X: Any) -> dict:
        X = self._validate_test(X)  # checks that the estimator is fitted
        return predict(self.model_, X, log=True)

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Log posterior class probabilities, computed in log space.

        Parameters
        ----------
        X : array-like or DataFrame of shape (m, n_features)
            New data; a DataFrame is matched to the training columns by name.

        Returns
        -------
        ndarray of shape (m, n_classes)
            Columns in ``classes_`` order.
        """
        return self._predict(X)["log_posterior"]

    def predict_proba(self, X: Any) -> np.ndarray:
        """Posterior class probabilities, from the log posteriors (no underflow).

        Parameters
        ----------
        X : array-like or DataFrame of shape (m, n_features)
            New data; a DataFrame is matched to the training columns by name.

        Returns
        -------
        ndarray of shape (m, n_classes)
            Columns in ``classes_`` order; rows sum to 1.
        """
        return self._predict(X)["posterior"]

    def predict(self, X: Any) -> np.ndarray:
        """The class of largest posterior (the first on ties).

        Parameters
        ----------
        X : array-like or DataFrame of shape (m, n_features)
            New data; a DataFrame is matched to the training columns by name.

        Returns
        -------
        ndarray of shape (m,)
            Labels from ``classes_``.
        """
        logp = self._predict(X)["log_posterior"]
        return self.classes_[np.argmax(logp, axis=1)]

    def decision_function(self, X: Any) -> np.ndarray:
        """Confidence scores, as scikit-learn's classifiers give them: the
        log posteriors, or for two classes the log posterior odds of
        ``classes_[1]`` (positive where it is predicted). ``predict`` is
        their argmax (for two classes, ``classes_[1]`` where the score is
        positive), so stacking on them sees what the classifier decides.

        Parameters
        ----------
        X : array-like or DataFrame of shape (m, n_features)
            New data; a DataFrame is matched to the training columns by name.

        Returns
        -------
        ndarray of shape (m,) for two classes, else (m, n_classes)
            Columns in ``classes_`` order.
        """
        logp = self._predict(X)["log_posterior"]
        return logp[:, 1] - logp[:, 0] if self.classes_.size == 2 else logp

    def staged_predict(self, X: Any) -> Iterator[np.ndarray]:
        """The classes predicted with the first m columns of the projection, m = 1, ..., ndim.

        Each is ``predict`` of a model of m columns: the greedy column order
        makes the first m the fit's own choice, so one fit serves a search over
        ndim.

        Parameters
        ----------
        X : array-like or DataFrame of shape (m, n_features)
            New data; a DataFrame is matched to the training columns by name.

        Yields
        ------
        ndarray of shape (m,)
            The classes with 1, 2, ... columns.
        """
        X = self._validate_test(X)
        for logjoint in staged_log_joint(self.model_, X):
            yield self.classes_[np.argmax(logjoint, axis=1)]

    def transform(self, X: Any) -> np.ndarray:
        """Projections ``(X - mu) @ V`` on the fitted columns, summed in R's order.

        Parameters
        ----------
        X : array-like or DataFrame of shape (m, n_features)
            New data; a DataFrame is matched to the training columns by name.

        Returns
        -------
        ndarray of shape (m, ndim)
            Named ``opnbclassifier0``, ... by ``get_feature_names_out``.
        """
        X = self._validate_test(X)
        return projection(X, self.model_.mu, self.model_.V)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = False
        return tags
