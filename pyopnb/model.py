"""The fitted OPNB model and R's ``predict()``, step for step."""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field, fields
from typing import Any, Dict, Iterator, Optional, Tuple

import numpy as np

from . import _threads
from ._core import colstats, linalg as _linalg, project as _project
from ._validation import check_ndim, check_X, label_text
from .naive_bayes import class_log_densities, posteriors

__all__ = ["OPNBModel", "predict", "staged_log_joint", "check_model", "projection", "CONVERGENCE"]

_MACHINE_EPS = np.finfo(float).eps
# R's optim codes for L-BFGS-B; None: not kept (a model that R saved)
CONVERGENCE = {0: "converged", 1: "iteration limit reached", 52: "line search failed",
               None: "unknown: R does not keep it"}


# ---------------------------------------------------------------------------
# the fitted model
# ---------------------------------------------------------------------------

@dataclass
class OPNBModel:
    """A fitted OPNB model with R's fields and meanings.

    The fields read as attributes (``m.V``) or items (``m["V"]``), as R's
    list does; :func:`OPNB`, :func:`opnb_journal` and the readers of model
    files make them.

    Parameters
    ----------
    V : ndarray of shape (d, ndim)
        The projection of raw data: projections are ``(X - mu) @ V``.
    X : ndarray of shape (n, d)
        The raw training data.
    y : ndarray of shape (n,)
        Class codes 1..K, as R keeps them (1-based); :attr:`y0` gives the
        0-based codes that the rest of pyopnb takes.
    PI : ndarray of shape (K,)
        The priors.
    h : ndarray of shape (K, ndim)
        The bandwidths, per class and column.
    nc : int
        K, the number of classes.
    mu : ndarray of shape (d,)
        The column means.
    scales : ndarray of shape (d,)
        Column multipliers: 1/sd, 0 for constant columns, 1 if not scaled.
    ynames : ndarray of shape (K,)
        The class labels, in the order of the codes.
    lam : float
        The penalty.
    fval : float
        The objective at V.
    feature_names : tuple of str, optional
        Beyond R's fields: the training columns' names (a DataFrame's, or the
        command line's), or None. Test data with names is matched to them by
        name, in any order.
    convergence : int, optional
        L-BFGS-B's outcome in R's ``optim`` codes: 0 converged; 1 stopped at
        the iteration limit (``maxit``); 52 the line search failed, which is
        the normal end of R's binned objective (its gradient is not the
        derivative of its binned value) and elsewhere means the last V may
        not be a local optimum. None for a model that R saved (R does not
        keep it). A fit whose outcome is not its formulation's normal one
        warns (:class:`pyopnb.ConvergenceWarning`).
    target : str, optional
        The name of the label column the command line trained on, or None; a
        test file that still holds it is read without it.
    w : ndarray of shape (n,), optional
        Beyond R's fields: the training rows' weights (``weights=``,
        ``sample_weight``; None: unweighted). Each class's density weighs
        its training points by them (:mod:`pyopnb.weights`). R's
        ``predict.OPNB`` has no weights: :func:`write_rds` refuses such a
        model.
    unused_levels : tuple, optional
        A factor's levels after its last used one: R's OPNB keeps them in
        ``ynames`` beyond its ``nc`` classes (a model fitted on a subsample
        that lacks the last classes), predicts none of them, and gives
        posterior columns for its ``nc`` classes only; so does pyopnb.
        Written back to R with ``ynames``.

    See Also
    --------
    predict : Posteriors and classes of new data.
    write_rds : Save the model for R.
    """

    V: np.ndarray
    X: np.ndarray
    y: np.ndarray
    PI: np.ndarray
    h: np.ndarray
    nc: int
    mu: np.ndarray
    scales: np.ndarray
    ynames: np.ndarray
    lam: float
    fval: float
    feature_names: Optional[Tuple[str, ...]] = field(default=None, compare=False)
    convergence: Optional[int] = field(default=None, compare=False)
    target: Optional[str] = field(default=None, compare=False)
    unused_levels: Tuple[Any, ...] = field(default=(), compare=False)
    w: Optional[np.ndarray] = field(default=None, compare=False)

    _EXTRA = ("feature_names", "convergence", "target", "unused_levels", "w")  # not R's fields

    @property
    def r_levels(self) -> np.ndarray:
        """R's ``ynames``: the classes' labels, then the factor's levels
        after its last used one (:attr:`unused_levels`), which R keeps and
        never predicts."""
        if not self.unused_levels:
            return self.ynames
        return np.concatenate([self.ynames, np.asarray(self.unused_levels, dtype=self.ynames.dtype)])

    def __getitem__(self, key: str) -> Any:
        if key not in self.keys():
            raise KeyError(key)
        return getattr(self, key)

    def keys(self) -> Tuple[str, ...]:
        """R's field names.

        Returns
        -------
        tuple of str
            The names ``m[name]`` accepts.
        """
        return tuple(f.name for f in fields(self) if f.name not in self._EXTRA)

    @property
    def ndim(self) -> int:
        """The number of columns of V.

        Returns
        -------
        int
            ``V.shape[1]``.
        """
        return self.V.shape[1]

    @property
    def y0(self) -> np.ndarray:
        """The training labels as 0-based class codes (``y - 1``).

        Returns
        -------
        ndarray of shape (n,)
            The codes pyopnb's functions take.
        """
        return np.asarray(self.y, dtype=np.int64) - 1

    def project(self, X: Any) -> np.ndarray:
        """Project raw data: ``(X - mu) @ V``, summed in R's order.

        Parameters
        ----------
        X : array-like or DataFrame of shape (m, d)
            Raw data, matched by name as in :func:`predict`.

        Returns
        -------
        ndarray of shape (m, ndim)
            The projections.
        """
        Xa = check_X(X, "Xte", self.V.shape[0], self.feature_names)
        return projection(Xa, self.mu, self.V)

    def _densities(self, Z: np.ndarray, log: bool, threads: int) -> np.ndarray:
        """[m, K]: sum_t log f_kt(Z[:, t]) (log) or prod_t f_kt over Z's
        columns (the model's first), summed over the training rows as R's
        predict sums them (GridModel's: over its class grids)."""
        nd = Z.shape[1]
        ptr = projection(self.X, self.mu, np.ascontiguousarray(self.V[:, :nd]), threads)
        return _class_log_densities(self, Z, ptr, nd, log, threads)

    def train_points(self) -> int:
        """The points each prediction's sums run over (a thread count's work)."""
        return int(self.X.shape[0])

    def __repr__(self) -> str:
        return (f"OPNBModel(d={self.V.shape[0]}, ndim={self.ndim}, classes={list(self.ynames)}, "
                f"lam={self.lam:g}, fval={self.fval:.6g}, convergence={self.convergence} "
                f"({CONVERGENCE.get(self.convergence, 'unknown code')}))")


def projection(X: np.ndarray, mu: np.ndarray, V: np.ndarray, threads: Optional[int] = None) -> np.ndarray:
    """(X - mu) V [m, ndim] as R's sweep(X, 2, mu) %*% V: each entry summed
    over the features in order (the same bits on every CPU)."""
    thr = _threads.resolve(threads)
    Xa = np.ascontiguousarray(X, dtype=np.float64)
    return np.ascontiguousarray(_project.project(Xa, np.ascontiguousarray(V, dtype=np.float64), thr,
                                                 mu=np.ascontiguousarray(mu, dtype=np.float64)).T)


# ---------------------------------------------------------------------------
# prediction
# ---------------------------------------------------------------------------

def _class_log_densities(model: OPNBModel, pte: np.ndarray, ptr: np.ndarray, ndim: int, log: bool,
                         threads: int, first: int = 0) -> np.ndarray:
    """[m, K]: log f_k (log=True) or the product densities f_k, per R's
    predict, over the model's columns first..first + ndim - 1 (pte and ptr
    hold those columns)."""
    y0 = model.y0
    counts = np.bincount(y0, minlength=model.nc)
    if np.any(counts == 0):
        raise ValueError(f"class {label_text(model.ynames[int(np.argmin(counts))])} has no training points in the model")
    return class_log_densities(ptr[:, :ndim], y0, model.nc, model.h[:, first:first + ndim], pte[:, :ndim], log,
                               threads=threads, w=model.w)


def check_model(model: Any) -> OPNBModel:
    """The OPNBModel itself, or a fitted OPNBClassifier's (its ``model_``)."""
    if isinstance(model, OPNBModel):
        return model
    inner = getattr(model, "model_", None)
    if isinstance(inner, OPNBModel):
        return inner
    if type(model).__name__ == "OPNBClassifier":
        raise ValueError("this OPNBClassifier is not fitted yet: call fit first")
    if type(model).__name__ == "GridModel":
        raise ValueError("this model holds no training rows (a GridModel: pyopnb.dask.OPNB's, or grid_model's), "
                         "and this needs them: R's predict.OPNB and plot sum kernels over the training rows "
                         "(model$X, model$y), which class grids cannot stand in for. pyopnb.predict takes it")
    pipeline = type(model).__name__ == "Pipeline"
    raise ValueError(f"model must be an OPNBModel (from OPNB() or pyopnb.read_rds) or a fitted OPNBClassifier, "
                     f"got {type(model).__name__}"
                     + (": to draw a pipeline on the data it takes, use pyopnb.display.OPNBDisplay.from_estimator"
                        if pipeline else ""))


def predict(model: OPNBModel, Xte: Any, ndim: Optional[int] = None, *, log: bool = False,
            threads: Optional[int] = None) -> Dict[str, np.ndarray]:
    """Posterior class probabilities and classes for new data, as R's ``predict.OPNB``.

    R multiplies the class densities of the columns; a product that
    underflows (or is not positive) becomes machine epsilon, so far-away
    points get a uniform posterior and the first class (a defect of R's
    OPNB 1.0, kept for R's numbers; such rows warn). ``log=True`` sums log
    densities instead, never underflowing.

    Parameters
    ----------
    model : OPNBModel or GridModel
        A fitted model, pyopnb's or R's (:func:`read_rds`), or one without
        its training rows (:class:`pyopnb.grid_model.GridModel`, whose
        class densities come from its class grids).
    Xte : array-like or DataFrame of shape (m, d)
        New data. A DataFrame is matched to the training columns by name; a
        missing or extra column is an error that names it.
    ndim : int, optional
        Use the first ``ndim`` columns of V (default all).
    log : bool, default False
        Compute in log space, and return ``log_posterior`` too.
    threads : int, optional
        Threads, as in :func:`OPNB`; the numbers do not depend on it.

    Returns
    -------
    dict
        ``"posterior"``, an (m, K) array; ``"class"``, the (m,) labels; with
        ``log=True`` also ``"log_posterior"``.

    Examples
    --------
    >>> from pyopnb import OPNB, predict
    >>> from pyopnb.datasets import load_pima
    >>> d = load_pima()
    >>> out = predict(OPNB(d.X_train, d.y_train, ndim=2), d.X_test, log=True)
    >>> sorted(out)
    ['class', 'log_posterior', 'posterior']
    """
    return _predict(_predictable(model), Xte, ndim, log, threads)


def _predictable(model: Any) -> Any:
    """An OPNBModel (check_model's) or a model without rows (a GridModel)."""
    from .grid_model import GridModel
    return model if isinstance(model, GridModel) else check_model(model)


def _predict_work(model: Any, Xa: np.ndarray) -> int:
    """A prediction's work (:func:`pyopnb._threads.work`): the training points and the new rows, projected and
    summed."""
    d, ndim = model.V.shape
    return _threads.work(model.train_points() + Xa.shape[0], d, ndim, model.nc)


# the remedy predict's underflow warning names (the command line says it in its own words)
LOG_SPACE_ADVICE = "predict(..., log=True) computes in log space and has no such rows"


def _predict(model: Any, Xte: Any, ndim: Optional[int], log: bool,
             threads: Optional[int]) -> Dict[str, np.ndarray]:
    post, code, logpost = predict_arrays(model, Xte, ndim, log, threads)
    out = {"posterior": post, "class": model.ynames[code]}
    if log:
        out["log_posterior"] = logpost
    return out


def predict_arrays(model: Any, Xte: Any, ndim: Optional[int], log: bool,
                   threads: Optional[int]) -> Tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
    """:func:`predict`'s numbers for a checked model: (posteriors [m, K],
    each row's class code [m], log posteriors or None)."""
    d, full = model.V.shape
    nd = full if ndim is None else check_ndim(ndim, full, "the model's columns, ncol(V)")
    Xa = check_X(Xte, "Xte", d, model.feature_names)
    thr = _threads.resolve(threads, _predict_work(model, Xa))
    pte = projection(Xa, model.mu, np.ascontiguousarray(model.V[:, :nd]), thr)
    if log:
        logden = _linalg.c_log_array(model.PI) + model._densities(pte, True, thr)
        logpost, post = posteriors(logden, thr)
        return post, np.argmax(logden, axis=1), logpost
    den = model.PI * model._densities(pte, False, thr)
    lost = np.isnan(den) | (den <= 0)
    n_lost = int(lost.all(axis=1).sum())
    if n_lost:
        # R's numbers keep R's defect; the user should learn that log=True has none
        warnings.warn(
            f"predict: every class density of {n_lost} of {den.shape[0]} rows underflowed to 0; as R does, "
            f"they become machine epsilon, so those rows get a uniform posterior and the first class. "
            f"{LOG_SPACE_ADVICE}.", RuntimeWarning, stacklevel=4)
    den = np.ascontiguousarray(np.where(lost, _MACHINE_EPS, den))
    post = den / colstats.r_rowsums(den)[:, None]
    return post, np.argmax(post, axis=1), None


def staged_log_joint(model: OPNBModel, Xte: Any, threads: Optional[int] = None) -> Iterator[np.ndarray]:
    """log(PI_k f_k) [m, K] on the first 1, 2, ..., ndim columns in turn:
    the greedy column order makes each a model of its own, so one fit serves
    every ndim. Each is bitwise ``predict(model, Xte, ndim, log=True)``'s,
    for the cost of one predict with every column."""
    model = check_model(model)
    Xa = check_X(Xte, "Xte", model.V.shape[0], model.feature_names)
    thr = _threads.resolve(threads, _predict_work(model, Xa))
    ptr = projection(model.X, model.mu, model.V, thr)
    pte = projection(Xa, model.mu, model.V, thr)
    total = np.zeros((Xa.shape[0], model.nc))
    logprior = _linalg.c_log_array(model.PI)
    for t in range(model.V.shape[1]):
        total += _class_log_densities(model, pte[:, t:t + 1], ptr[:, t:t + 1], 1, True, thr, t)
        yield logprior + total
