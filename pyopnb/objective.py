"""OPNB's objective l(V) and its gradient, as R's internal functions.

``l(V) = (1/n) sum_i [log(PI_{y_i} f_{y_i}(z_i)) - log(sum_k PI_k f_k(z_i))]``
with ``z_i = V' x_i``, ``f_k(z) = prod_t f_kt(z_t)`` and
``f_kt(x) = 1/(n_k h_k) sum_{j: y_j = k} K((x - z_jt) / h_k)``, K the default
kernel ``(1 + |u|) exp(-|u|) / 4``. No penalty here (see :mod:`pyopnb.model`).

Two objectives, chosen by ``compat``: the objective of the formulation of
that name (:mod:`pyopnb.formulation`), whose evaluator computes it:

``"R"``
    R OPNB 1.0's numbers, defects included: ``f_NB_exact`` squares the priors;
    ``f_NB_cpp`` bins linearly and reads each point's density at its grid point,
    while ``df_NB_cpp`` bins simply and differentiates at the grid positions,
    so it is not the gradient of ``f_NB_cpp``.
``"correct"``
    The paper's l(V), priors once. Binned: linear binning, densities summed
    exactly at each point from the binned weights, and a gradient that is the
    exact derivative of that value (through the binning fractions and the
    grid's ends too).

A point's class densities are multiplied over the columns, each product
logged before it could underflow (see _core/products.h), and the
posteriors combined from the products where they stayed in range, else in
log space (_core/posteriors.pxd): no class density rounds to 0 in a
product, and one that is 0 gives ``-inf``.
"""
from __future__ import annotations

import warnings
from typing import Any, Literal, Optional, Tuple

import numpy as np

from . import _threads
from ._validation import as_nbin
from .evaluation import Problem, check_problem, check_V
from .formulation import CorrectFormulation, JournalFormulation, RFormulation

__all__ = ["f_NB_exact", "df_NB_exact", "f_NB_cpp", "df_NB_cpp", "f_NB_normalised", "df_NB_normalised",
           "objective_and_gradient", "Compat", "Problem", "check_problem"]

Compat = Literal["R", "correct"]

# R's compat= argument, at the public functions' boundary: the formulation whose objective it names
_COMPAT = {"R": RFormulation, "correct": CorrectFormulation}


def _evaluate(form_cls: type, V: Any, X: Any, y0: Any, PI: Any, h: Any, nbin: Any, gradient: bool,
              threads: Optional[int]) -> Tuple[float, Optional[np.ndarray]]:
    """The formulation's l at V (and its gradient), on an evaluator of its own."""
    p = check_problem(X, y0, PI, h)
    Va = check_V(V, p.X.shape[1])
    nb = None if nbin is None else as_nbin(nbin, allow_none=False)
    thr = _threads.resolve(threads)
    ev = form_cls().evaluator(p, nb, thr)
    if gradient:
        return ev.value_and_grad(Va)
    return ev.value(Va), None


def objective_and_gradient(
    V: Any, X: Any, y0: Any, PI: Any, h: Any, *, nbin: Any = None, compat: Compat = "correct",
    gradient: bool = True, threads: int | None = None,
) -> Tuple[float, np.ndarray | None]:
    """l(V) and, if asked, its d x ndim gradient; ``nbin=None`` for exact sums.

    With ``compat="R"`` these are R's ``f_NB_*`` value and ``df_NB_*`` gradient
    (which, binned, are not consistent with each other; see the module notes).
    """
    if compat not in _COMPAT:
        raise ValueError(f"compat must be 'R' or 'correct', got {compat!r}")
    return _evaluate(_COMPAT[compat], V, X, y0, PI, h, nbin, gradient, threads)


def f_NB_normalised(V: Any, X: Any, y0: Any, PI: Any, h: Any, nbin: Any = None, threads: int | None = None) -> float:
    """The published objective (journal version, eq. 7-8): the mean
    log-likelihood (1/n) l(V-bar), V-bar = V with unit-norm columns, priors
    counted once, class bandwidths h (length K). X already scaled, y0 0-based;
    ``nbin=None`` for exact sums, else each column's class log densities at
    ``nbin`` grid points (linear binning) interpolated linearly at the points."""
    return _evaluate(JournalFormulation, V, X, y0, PI, h, nbin, False, threads)[0]


def df_NB_normalised(V: Any, X: Any, y0: Any, PI: Any, h: Any, nbin: Any = None,
                     threads: int | None = None) -> np.ndarray:
    """The d x ndim gradient in V of :func:`f_NB_normalised`: the exact
    derivative of the value it returns, exact or binned."""
    return _evaluate(JournalFormulation, V, X, y0, PI, h, nbin, True, threads)[1]


def f_NB_exact(V: Any, X: Any, y0: Any, PI: Any, h: Any, compat: Compat = "R") -> float:
    """l(V) with exact kernel sums. ``compat="R"`` reproduces R's squared priors."""
    return objective_and_gradient(V, X, y0, PI, h, compat=compat, gradient=False)[0]


def df_NB_exact(V: Any, X: Any, y0: Any, PI: Any, h: Any, compat: Compat = "R") -> np.ndarray:
    """Gradient of l(V) (priors once, as R's df_NB_exact in either mode), d x ndim."""
    return objective_and_gradient(V, X, y0, PI, h, compat=compat)[1]


def f_NB_cpp(V: Any, X: Any, y0: Any, PI: Any, h: Any, nbin: int = 1000, compat: Compat = "R") -> float:
    """l(V) with binned kernel sums on ``nbin`` grid points per projected column."""
    return objective_and_gradient(V, X, y0, PI, h, nbin=as_nbin(nbin, allow_none=False), compat=compat, gradient=False)[0]


def df_NB_cpp(V: Any, X: Any, y0: Any, PI: Any, h: Any, nbin: int = 1000, compat: Compat = "R") -> np.ndarray:
    """Gradient with binned sums: R's simple-binning gradient, or the exact
    derivative of the correct binned value."""
    return objective_and_gradient(V, X, y0, PI, h, nbin=as_nbin(nbin, allow_none=False), compat=compat)[1]


# Names of the former plumbing between the formulations and the objective,
# which the formulations' evaluators replace (pyopnb.evaluation).
_FORMER = {"Behaviour": "Formulation", "R_BEHAVIOUR": "RFormulation", "CORRECT_BEHAVIOUR": "CorrectFormulation",
           "INTERPOLATED_BEHAVIOUR": "JournalFormulation"}


def __getattr__(name: str) -> Any:
    if name in _FORMER:
        from . import formulation

        warnings.warn(f"pyopnb.objective.{name} is deprecated: a formulation now chooses its objective once, in "
                      f"its evaluator (pyopnb.formulation.{_FORMER[name]}().evaluator(problem, nbin, threads)); "
                      f"this name gives that formulation", FutureWarning, stacklevel=2)
        cls = getattr(formulation, _FORMER[name])
        return cls if name == "Behaviour" else cls()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
