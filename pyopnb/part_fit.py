"""OPNB fits with the rows in parts: the single machine's projection, to the bit.

The driver (:func:`fit_projection`) holds no row: the formulation's
set-up (R's scaling and start; the journal's scaling, pre-scaling,
bandwidths and LDA start) comes from the parts' chained column sums and
block partials (:mod:`pyopnb.part_stats`, the formulation's
``part_setup``), the objective and its gradient from the parts' blocks
(:class:`pyopnb.parts.PartsEvaluator`), and L-BFGS-B runs as
:func:`pyopnb.OPNB` runs it (:mod:`pyopnb.fitting`'s driver). The result,
:class:`ProjectionFit`, is what ``pyopnb.OPNB`` (or
``pyopnb.opnb_journal``) would fit on the same rows in the same order with
its binned objective: the same V, bandwidths, priors, scaling and fval,
bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np

from . import _threads, part_stats
from ._validation import as_nbin, check_maxit, check_ndim, check_priors
from .checkpoint import Checkpointed, fit_key
from .fitting import Callback, _Objective, _optimise, final_projection, warn_r_failure
from .formulation import Formulation, JournalFormulation, RFormulation, Setup, canonical_order
from .labels import factor_levels
from .parts import BlockLayout, LocalRunner, PartSpec, PartsEvaluator, split
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


def fit_projection(parts: part_stats.PartRows, runner_for: Callable[[part_stats.RowMap, PartSpec], Any],
                   n: int, d: int, counts: Sequence[int], levels: np.ndarray, form: Formulation, *,
                   ndim: Optional[int] = None, V0: Any = None, nbin: int = 1000, maxit: int = 100,
                   threads: int = 1, callback: Optional[Callback] = None, names: Optional[Tuple[str, ...]] = None,
                   caller: str = "OPNB", checkpoint: Any = None, priors: Any = None,
                   stacklevel: int = 2) -> ProjectionFit:
    """A formulation's binned fit (R's or the journal's) on rows in parts.

    ``parts``: the raw rows and their class codes in parts
    (:class:`pyopnb.part_stats.PartRows`), in the order the formulation
    fits them; ``runner_for(rows, spec)``: a runner over the rows as
    ``rows`` (a :class:`pyopnb.part_stats.RowMap`) maps them, their class
    codes and spec (:class:`pyopnb.parts.PartsEvaluator`'s). ``counts``:
    each class's rows. The other arguments are :func:`pyopnb.OPNB`'s; V0
    None (the formulation's start) or a (d, ndim) matrix on the scaled
    data. ``checkpoint``: a file that records the evaluations, and that a
    fit stopped anywhere resumes from with the same bits
    (:mod:`pyopnb.checkpoint`). ``priors``: the class priors, as
    :func:`pyopnb.OPNB`'s (a mapping from label to prior, or one per class
    in the order of ``levels``; default the class proportions). Where R's
    gradient sums would not be finite at an evaluated V, R's formulation
    warns (:class:`pyopnb.RDefectWarning`) or, with ``r_defects``, keeps
    its start, as :func:`pyopnb.OPNB`. ``stacklevel``: the user's call,
    counted as ``warnings.warn`` counts it, from this function (1).
    """
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
    ps = form.part_setup(parts, n, d, counts, levels, nd, V0, names, threads, BlockLayout(n).block_len)
    PI = counts / float(n) if given is None else given
    spec = PartSpec(h=ps.h, PI=PI, counts=counts, n=n, nbin=nbin_v, threads=threads, objective=ps.objective)
    evaluator = grid_side = ps.objective.evaluator(runner_for(ps.rows, spec), spec)
    if checkpoint is not None:
        # the priors enter the key only where given: a record of a fit with the class proportions keeps its key
        key = fit_key(n, d, counts, np.asarray([str(v) for v in levels]), nbin_v, *ps.key, ps.mu, ps.scales, ps.V,
                      *(() if given is None else (PI,)))
        evaluator = Checkpointed(evaluator, checkpoint, key)
    st = Setup(ps.mu, ps.scales, ps.prescale, evaluator, ps.V, ps.lam, ps.pen, ps.dpen)  # type: ignore[arg-type]
    if ps.r_defects is not None:
        st.r_failure, st.r_defects = _r_failure(grid_side), ps.r_defects
    obj = _Objective(st, d, nd)
    Vopt, convergence = _optimise(obj, st.V, maxit, callback, form, nbin_v, caller)
    if obj.r_failed is not None and not st.r_defects:
        warn_r_failure(obj, levels, caller, stacklevel)
    Vm, h, fval = final_projection(st, obj, Vopt, form, spec.h, threads)
    return ProjectionFit(V=Vm, h=h, PI=PI, mu=ps.mu, scales=ps.scales, fval=fval, convergence=int(convergence),
                         levels=levels, lam=ps.lam, nbin=nbin_v, n=n, counts=counts)


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


def fit_projection_local(X: Any, y: Any, bounds: Sequence[int], form: Optional[Formulation] = None,
                         **kwargs: Any) -> ProjectionFit:
    """:func:`fit_projection` on rows held here, split at ``bounds`` (on
    block boundaries, :class:`pyopnb.parts.BlockLayout`): the reference
    that a distributed fit's parts are checked against. ``form``: R's (the
    default, :class:`pyopnb.formulation.RFormulation`) or the journal's,
    whose rows are fitted in :func:`pyopnb.formulation.canonical_order`."""
    form = RFormulation() if form is None else form
    Xa = np.ascontiguousarray(X, dtype=np.float64)
    levels, codes, _ = factor_levels(y)
    if isinstance(form, JournalFormulation):
        order = canonical_order(Xa, codes)
        Xa, codes = np.ascontiguousarray(Xa[order]), codes[order]
    n, d = Xa.shape
    threads = _threads.resolve(kwargs.get("threads", 1))
    kwargs["threads"] = threads
    y0 = codes.astype(np.int32)
    pieces = [(Xa[a:b], y0[a:b]) for a, b in zip(bounds, bounds[1:])]

    def runner_for(rows: part_stats.RowMap, spec: PartSpec) -> LocalRunner:
        return LocalRunner(split(rows.apply(Xa, threads), y0, spec, bounds))

    kwargs.setdefault("stacklevel", 3)
    parts = part_stats.LocalRows([p[0] for p in pieces], [p[1] for p in pieces], threads)
    return fit_projection(parts, runner_for, n, d, np.bincount(codes, minlength=levels.size), levels, form,
                          **kwargs)
