"""pyopnb's warnings.

``ConvergenceWarning`` subclasses scikit-learn's own
(``sklearn.exceptions.ConvergenceWarning``), so that a filter on
scikit-learn's category silences pyopnb's too, and RuntimeWarning, as it
did before. The class is made on first use, so that importing pyopnb does
not import scikit-learn (0.7 s): ``pyopnb.ConvergenceWarning`` and
``pyopnb.exceptions.ConvergenceWarning`` are that class.
"""
from __future__ import annotations

import warnings
from functools import lru_cache
from typing import Any, Callable, List, Tuple

__all__ = ["CollapseWarning", "ConvergenceWarning", "ProjectionRangeWarning", "RDefectWarning", "RLabelsWarning", "fit_quietly"]  # noqa: F822 (made by __getattr__, on first use)


class RLabelsWarning(UserWarning):
    """Labels became classes as R makes them, where that differs from what
    their values alone say: distinct numbers that R's ``as.factor`` merges
    (it reads numbers through their 15-digit text)."""

    __module__ = "pyopnb"


class RDefectWarning(UserWarning):
    """A fit went where R OPNB 1.0's would have stopped: R's gradient sums
    are not finite there, and R keeps its start (see
    :mod:`pyopnb.r_failures`); ``r_defects=True`` does as R does."""

    __module__ = "pyopnb"


class CollapseWarning(UserWarning):
    """A fit whose posteriors are the class priors on every training point
    looked at: the model predicts the most frequent class everywhere
    (with R's formulation, lam dominates the likelihood)."""

    __module__ = "pyopnb"


class ProjectionRangeWarning(UserWarning):
    """The points given to a Display project far outside the training
    projections: X is likely not on the model's scale (raw data given to a
    model fitted after a pipeline's steps)."""

    __module__ = "pyopnb"


@lru_cache(maxsize=None)
def convergence_warning() -> type:
    """The ConvergenceWarning class (made once)."""
    from sklearn.exceptions import ConvergenceWarning as SklearnConvergenceWarning

    class ConvergenceWarning(SklearnConvergenceWarning, RuntimeWarning):
        """L-BFGS-B ended a fit without converging where that is not the
        formulation's normal end: the iteration limit (R's optim code 1) or a
        failed line search (code 52) with an exact gradient. R's binned
        objective ends with code 52 as a matter of course (its gradient is
        not the derivative of its binned value) and does not warn. The
        model's ``convergence`` keeps the code either way."""

    # pickle finds a class by its module and name: pyopnb.ConvergenceWarning is this class, made on first use
    ConvergenceWarning.__module__ = "pyopnb"
    ConvergenceWarning.__qualname__ = "ConvergenceWarning"
    return ConvergenceWarning


def fit_quietly(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Tuple[Any, List[str]]:
    """``fn(*args, **kwargs)`` with its convergence warnings held back: the
    result, and each warning's note without the caller's name (the part
    after its first ": "), for the caller to say in its own words. Other
    warnings pass on."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always", convergence_warning())
        warnings.simplefilter("always", RDefectWarning)
        warnings.simplefilter("always", CollapseWarning)
        result = fn(*args, **kwargs)
    notes = []
    for w in rec:
        if issubclass(w.category, (convergence_warning(), RDefectWarning, CollapseWarning)):
            notes.append(str(w.message).split(": ", 1)[-1])
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return result, notes


def __getattr__(name: str):
    if name == "ConvergenceWarning":
        return convergence_warning()
    raise AttributeError(f"module 'pyopnb.exceptions' has no attribute {name!r}")
