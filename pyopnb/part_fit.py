"""R's OPNB fit with the rows in parts: the single machine's projection, to the bit.

The driver (:func:`fit_projection`) holds no row: R's scaling and start
come from the parts' chained column sums (:mod:`pyopnb.part_stats`), the
objective and its gradient from the parts' blocks
(:class:`pyopnb.parts.PartsEvaluator`), and L-BFGS-B runs as
:func:`pyopnb.OPNB` runs it (:mod:`pyopnb.fitting`'s driver). The result,
:class:`ProjectionFit`, is what ``pyopnb.OPNB`` would fit on the same rows
in the same order with R's binned objective: the same V, bandwidths,
priors, scaling and fval, bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np

from . import _threads, part_stats
from ._validation import as_nbin, check_maxit, check_ndim, check_priors
from .checkpoint import Checkpointed, fit_key
from .fitting import Callback, _Objective, _optimise, final_projection, warn_r_failure
from .formulation import RFormulation, Setup, _penalty
from .labels import factor_levels
from .parts import LocalRunner, PartSpec, PartsEvaluator, split
from .r_failures import R_UNDERFLOW, RFailure

__all__ = ["ProjectionFit", "fit_projection", "fit_projection_local"]


@dataclass(frozen=True)
class ProjectionFit:
    """A fitted projection without the training rows.

    What :func:`pyopnb.OPNB`'s model holds, less X and y.

    Parameters
    ----------
    V : ndarray of shape (d, ndim)
        The projection of the raw data (scaling folded in), columns in R's order.
    h : ndarray of shape (K, ndim)
        The classes' bandwidths on each projected column.
    PI : ndarray of shape (K,)
        The priors.
    mu : ndarray of shape (d,)
        The columns' means.
    scales : ndarray of shape (d,)
        1/sd of each column (0 for a constant one; 1 without scaling).
    fval : float
        The objective at the optimum.
    convergence : int
        R's optim code.
    levels : ndarray of shape (K,)
        The class labels in code order.
    lam : float
        The penalty's weight.
    nbin : int
        Grid points per projected column.
    n : int
        The rows fitted.
    counts : ndarray of shape (K,)
        Each class's rows.
    """

    V: np.ndarray
    h: np.ndarray
    PI: np.ndarray
    mu: np.ndarray
    scales: np.ndarray
    fval: float
    convergence: int
    levels: np.ndarray
    lam: float
    nbin: int
    n: int
    counts: np.ndarray


def fit_projection(chain: part_stats.Chain, runner_for: Callable[[np.ndarray, np.ndarray, PartSpec], Any],
                   n: int, d: int, counts: Sequence[int], levels: np.ndarray, *, ndim: Optional[int] = None,
                   lam: float = 1e-3, V0: Any = None, scale: bool = True, nbin: int = 1000, maxit: int = 100,
                   threads: int = 1, callback: Optional[Callback] = None, names: Optional[Tuple[str, ...]] = None,
                   caller: str = "OPNB", checkpoint: Any = None, priors: Any = None, r_defects: bool = False,
                   stacklevel: int = 2) -> ProjectionFit:
    """R's OPNB (its defaults, R's binned objective) on rows in parts.

    ``chain``: the parts' chained column sums over the raw rows
    (:mod:`pyopnb.part_stats`); ``runner_for(mu, scales, spec)``: a runner
    over the standardised rows (X - mu) * scales, their class codes and
    spec (:class:`pyopnb.parts.PartsEvaluator`'s). ``counts``: each class's
    rows. The other arguments are :func:`pyopnb.OPNB`'s; V0 None (R's start)
    or a (d, ndim) matrix on the scaled data. ``checkpoint``: a file that
    records the evaluations, and that a fit stopped anywhere resumes from
    with the same bits (:mod:`pyopnb.checkpoint`). ``priors``: the class
    priors, as :func:`pyopnb.OPNB`'s (a mapping from label to prior, or one
    per class in the order of ``levels``; default the class proportions).
    ``r_defects``: where R's gradient sums would not be finite at an
    evaluated V, R's OPNB stops and keeps its start; True does so too, False
    goes on and warns (:class:`pyopnb.RDefectWarning`), as
    :func:`pyopnb.OPNB`. ``stacklevel``: the user's call, counted as
    ``warnings.warn`` counts it, from this function (1).
    """
    form = RFormulation(lam=lam, scale=scale, r_defects=r_defects)
    K = len(levels)
    counts = np.asarray(counts, dtype=np.int64)
    if K < 2:
        raise ValueError(f"y must have at least two classes, found {K}")
    if counts.shape != (K,) or np.any(counts < 1):
        raise ValueError("every class needs a row")
    nbin_v = as_nbin(nbin)
    if nbin_v is None:
        raise ValueError("a fit on parts sums on grids (nbin): exact sums need a sort of all rows at every "
                         "evaluation; give nbin")
    nd = check_ndim(ndim, d)
    maxit = check_maxit(maxit)
    given = check_priors(priors, levels)
    mu, scales = part_stats.r_scaling(chain, n, d, form.scale, names)
    if not np.any(scales) and form.scale:
        raise ValueError("no column of X varies (every column is constant): there is nothing to project")
    if V0 is None:
        V = part_stats.r_start(chain, n, d, nd, mu, scales)
    else:
        V = np.ascontiguousarray(V0, dtype=np.float64)
        if V.shape != (d, nd) or not np.all(np.isfinite(V)):
            raise ValueError(f"V0 must be a finite ({d}, {nd}) matrix, got shape {V.shape}")
    PI = counts / float(n) if given is None else given
    spec = PartSpec(h=form.bandwidths(np.empty((0, d)), np.empty(0), K, threads), PI=PI, counts=counts, n=n,
                    nbin=nbin_v, threads=threads)
    parts = PartsEvaluator(runner_for(mu, scales, spec), spec)
    evaluator: Any = parts
    if checkpoint is not None:
        # the priors enter the key only where given: a record of a fit with the class proportions keeps its key
        key = fit_key(n, d, counts, np.asarray([str(v) for v in levels]), nbin_v, form.lam, form.scale, mu, scales,
                      V, *(() if given is None else (PI,)))
        evaluator = Checkpointed(evaluator, checkpoint, key)
    pen, dpen = _penalty(None, np.empty((0, d)), np.empty(0), d)
    st = Setup(mu, scales, None, evaluator, V, form.lam, pen, dpen)  # type: ignore[arg-type]
    st.r_failure, st.r_defects = _r_failure(parts), form.r_defects
    obj = _Objective(st, d, nd)
    Vopt, convergence = _optimise(obj, st.V, maxit, callback, form, nbin_v, caller)
    if obj.r_failed is not None and not st.r_defects:
        warn_r_failure(obj, levels, caller, stacklevel)
    Vm, h, fval = final_projection(st, obj, Vopt, form, spec.h, threads)
    return ProjectionFit(V=Vm, h=h, PI=PI, mu=mu, scales=scales, fval=fval, convergence=int(convergence),
                         levels=levels, lam=form.lam, nbin=nbin_v, n=n, counts=counts)


def _r_failure(parts: PartsEvaluator) -> Callable[[np.ndarray], Optional[RFailure]]:
    """RFormulation's check of where R's gradient fails, on the parts: V
    whose columns cannot spread the rows past R's reach is passed at once
    (each column's spread of the rows found in one pass, here)."""
    spreads = parts.spreads()
    reach = R_UNDERFLOW * float(np.min(parts.spec.h))

    def r_failure(V: np.ndarray) -> Optional[RFailure]:
        if np.all(np.abs(V).T @ spreads <= reach):
            return None
        return parts.r_failure(V)

    return r_failure


def fit_projection_local(X: Any, y: Any, bounds: Sequence[int], **kwargs: Any) -> ProjectionFit:
    """:func:`fit_projection` on rows held here, split at ``bounds`` (on
    block boundaries, :class:`pyopnb.parts.BlockLayout`): the reference
    that a distributed fit's parts are checked against."""
    Xa = np.ascontiguousarray(X, dtype=np.float64)
    levels, codes, _ = factor_levels(y)
    n, d = Xa.shape
    threads = _threads.resolve(kwargs.get("threads", 1))
    kwargs["threads"] = threads
    pieces = [Xa[a:b] for a, b in zip(bounds, bounds[1:])]

    def runner_for(mu: np.ndarray, scales: np.ndarray, spec: PartSpec) -> LocalRunner:
        Xs = part_stats.standardised(Xa, mu, scales, threads)
        return LocalRunner(split(Xs, codes.astype(np.int32), spec, bounds))

    kwargs.setdefault("stacklevel", 3)
    return fit_projection(part_stats.local_chain(pieces, threads), runner_for, n, d,
                          np.bincount(codes, minlength=levels.size), levels, **kwargs)
