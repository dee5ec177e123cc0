"""Checks for users' own tests: pyopnb against its own recorded bits and
against R on their data, valid OPNB problems as a hypothesis strategy, and
a gradient check against central differences.

>>> from pyopnb.testing import assert_matches_r
>>> assert_matches_r(X, y, Xte, ndim=3, cv=5, record="r.json")   # doctest: +SKIP
>>> assert_matches_r(X, y, Xte, ndim=3, cv=5, against="r.json")  # doctest: +SKIP

Two checks, kept apart: *regression* (pyopnb's results now against its own
recorded results: the same bits by default, ``rtol=``/``atol=`` to loosen)
and *parity* (pyopnb against R, within R's own spread).
:func:`compare_with_r` returns the report (``.ok``, ``.verdict(check)``,
``.table()``, ``.to_json()``); :func:`assert_matches_r` raises
AssertionError with it. Live, they need R with OPNB and FKSUM (and rpy2,
``pip install pyopnb[r]``); ``record="r.json"`` saves R's side and
pyopnb's once, and ``against="r.json"`` replays them where R is absent.
:func:`check_recording` records where a recording is missing and replays
it otherwise, as pytest's ``pyopnb_regression`` fixture does
(:mod:`pyopnb.pytest_plugin`, :mod:`pyopnb.validation.workflow`).

>>> from hypothesis import given
>>> from pyopnb.testing import check_gradient, problems
>>> @given(problems("correct"))
... def test_my_gradient(p):
...     check_gradient(p.value, p.gradient, p.V)
>>> test_my_gradient()

:func:`problems` needs hypothesis (``pip install pyopnb[testing]``);
:func:`check_gradient` and :func:`check_objective` need nothing beyond
numpy. :func:`check_gradient` returns what it compared (a
:class:`GradientCheck`), and tells a wrong gradient (AssertionError) from
a value that is not differentiable where it is checked
(:class:`NotDifferentiableError`). :func:`check_objective` checks what a
fit of a formulation, built-in or one's own, maximises: its l less its
penalty, through the fit's own path.

Each formulation says whether its gradient is the derivative of its value
(``Formulation.gradient_defect``):

- ``"correct"`` (the paper's l; ``compat="correct"``), exact or binned: yes.
  Binned, the value has kinks where a point crosses a bin edge (its linear
  binning weights are piecewise linear in z): between them the gradient is
  the value's derivative, and on one it lies between the one-sided slopes.
- ``"journal"`` (``f_NB_normalised``), exact or binned: yes, kinks as above.
- ``"R"`` (R OPNB 1.0's internal functions, defects kept for R's numbers):
  binned, no: ``df_NB_cpp`` bins simply and differentiates at the grid
  points while ``f_NB_cpp`` bins linearly and reads each point's grid
  point. Exact, ``f_NB_exact`` multiplies by the priors twice and
  ``df_NB_exact`` once, so they agree only when every class has the same
  prior. :func:`check_gradient` on a problem of R's says so.
- A formulation of one's own: yes, unless its ``gradient_defect`` says why
  not.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, List, Optional, Tuple

import numpy as np

from .validation.workflow import (RecordingError, Report, RUnavailable, assert_matches_r, check_recording,
                                  compare_with_r)

__all__ = ["OPNBProblem", "problems", "check_gradient", "check_objective", "GradientCheck", "Probe",
           "GradientError", "NotDifferentiableError", "compare_with_r", "assert_matches_r", "check_recording", "Report",
           "RecordingError", "RUnavailable"]

_EPS = np.finfo(np.float64).eps
# the base step of a difference: it balances truncation (order s^2) against rounding (order eta / s)
_STEP = float(np.cbrt(_EPS))
# problems() draws a gradient whose largest entry is this many times the value's rounding over the step
_INFORMATIVE = 1e6
# how far from zero, in spreads, problems() lets a column and the projected points lie
_OFFSET = 10.0
# the shortest central step is s / 10^this; past s / 1000, only while its rounding bound is within this
# share of the gradient's scale (or rtol's, if larger)
_SHORTEST = 9
_FINE = 1e-3
# how a probe says its one-sided slopes moved with the step (rounding in steps, not a kink)
_STEPS = "slopes that change with the step"


class NotDifferentiableError(AssertionError):
    """The value is not differentiable at V along a probe, and the gradient
    lies beyond both one-sided slopes there.

    Raised by :func:`check_gradient` where the forward and backward slopes
    at V differ by more than the check's bound (a kink: a binned value's
    point on a bin edge, or tied points at a grid's end) and the analytic
    entry is neither within the bound of either slope nor between them.
    It is not said to be the gradient's fault: check at a point off the
    lattice (as :func:`problems` draws V).

    Parameters
    ----------
    message : str
        The probes at kinks: each one's slopes and analytic value.
    check : GradientCheck
        Everything the check compared.
    """

    def __init__(self, message: str, check: "GradientCheck"):
        super().__init__(message)
        self.check = check


class GradientError(AssertionError):
    """The gradient is not the derivative of the value, where the value is differentiable.

    Raised by :func:`check_gradient` and :func:`check_objective`.

    Parameters
    ----------
    message : str
        The worst probes (up to five), each with its analytic and numeric
        values and bound.
    check : GradientCheck
        Everything the check compared.
    """

    def __init__(self, message: str, check: "GradientCheck"):
        super().__init__(message)
        self.check = check


@dataclass(frozen=True)
class Probe:
    """One comparison :func:`check_gradient` made: an entry of V, or a direction.

    Parameters
    ----------
    where : str
        ``"V[a, b]"``, or ``"direction k"`` in the directional mode.
    analytic : float
        The gradient's entry, or its inner product with the direction.
    numeric : float
        The difference quotient that decided.
    how : str
        Which difference decided: central or one-sided, at which step, or
        ``between the one-sided slopes`` at a kink.
    bound : float
        What the analytic value may differ from ``numeric`` by.
    ok : bool
        Whether it agrees.
    forward, backward : float, optional
        The one-sided slopes at V, where the first differences disagreed.
    kink : bool, default False
        Whether the one-sided slopes differ by more than the bound: the
        value is not differentiable at V along this probe.
    """

    where: str
    analytic: float
    numeric: float
    how: str
    bound: float
    ok: bool
    forward: Optional[float] = None
    backward: Optional[float] = None
    kink: bool = False

    @property
    def difference(self) -> float:
        """The absolute difference between the analytic and the numeric value."""
        return abs(self.analytic - self.numeric)

    @property
    def excess(self) -> float:
        """The difference over the bound (above 1: the probe fails)."""
        if self.bound > 0:
            return self.difference / self.bound
        return math.inf if self.difference > 0 else 0.0


@dataclass
class GradientCheck:
    """What :func:`check_gradient` compared, probe by probe.

    Parameters
    ----------
    probes : list of Probe
        One per entry of V, or per direction.
    rtol : float
        The bound's part relative to the gradient's scale.
    scale : float
        The gradient's scale: the largest absolute entry of the gradient or
        of the first differences.
    eta : float
        The value's own rounding, measured at V.
    """

    probes: List[Probe]
    rtol: float
    scale: float
    eta: float

    @property
    def ok(self) -> bool:
        """Whether every probe agrees."""
        return all(p.ok for p in self.probes)

    def worst(self, k: int = 5) -> List[Probe]:
        """The probes closest to failing, or failing most.

        Parameters
        ----------
        k : int, default 5
            How many.

        Returns
        -------
        list of Probe
            By decreasing difference over bound.
        """
        return sorted(self.probes, key=lambda p: -p.excess)[:k]

    def table(self) -> str:
        """The probes as plain text, a line each.

        Returns
        -------
        str
            Each probe's place, analytic and numeric values, bound, verdict
            and the difference that decided.
        """
        lines = [f"{'probe':<14} {'analytic':>14} {'numeric':>14} {'bound':>9}  verdict  decided by"]
        for p in self.probes:
            verdict = "ok" if p.ok else ("KINK" if p.kink else "DIFFERS")
            lines.append(f"{p.where:<14} {p.analytic:>14.8g} {p.numeric:>14.8g} {p.bound:>9.2g}  {verdict:<7}  "
                         f"{p.how}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


# ---------------------------------------------------------------------------
# the check
# ---------------------------------------------------------------------------

def _rounding(value: Callable[[np.ndarray], float], Va: np.ndarray, f0: float) -> float:
    """The value's own rounding at V: half the largest symmetric second
    difference with V's entries scaled by 1 +- r, in alternating directions
    (a scale-invariant value, the journal's, does not move along V itself),
    r from a few ulps to 1e-10 (the slope cancels; what is left is rounding,
    and a jump that rounding makes); at least 4 eps max(1, |value|) (a mean
    log-likelihood's terms are of order one however small their sum)."""
    pattern = np.resize([1.0, -1.0, -1.0, 1.0], Va.size).reshape(Va.shape)
    return max([abs(float(value(Va * (1 + r * pattern))) + float(value(Va * (1 - r * pattern))) - 2 * f0) / 2
                for r in (4 * _EPS, 1e-12, 1e-10)] + [4 * _EPS * max(1.0, abs(f0))])


class _Differences:
    """Difference quotients of ``value`` along one probe's direction D at V."""

    def __init__(self, value: Callable, Va: np.ndarray, f0: float, eta: float, D: np.ndarray, where: str):
        self.value, self.Va, self.f0, self.eta, self.D, self.where = value, Va, f0, eta, D, where

    def at(self, step: float) -> float:
        f = float(self.value(self.Va + step * self.D))
        if not math.isfinite(f):
            raise AssertionError(f"the value is not finite at V + {step:+.3g} along {self.where}: {f}")
        return f

    def central(self, s: float) -> Tuple[float, float]:
        """(the central difference at step s, its rounding bound)."""
        return (self.at(s) - self.at(-s)) / (2 * s), 10 * self.eta / s

    def one_sided(self, s: float, sign: float) -> Tuple[float, float]:
        """(the one-sided slope at step s, extrapolated 2 D(s/2) - D(s) so
        that its error is of order s^2, as a central one's; its bound)."""
        d1 = (self.at(sign * s) - self.f0) / (sign * s)
        d2 = (self.at(sign * s / 2) - self.f0) / (sign * s / 2)
        return 2 * d2 - d1, 100 * self.eta / s


def _explanation(gradient: Any) -> Optional[str]:
    """Why a gradient is not its value's derivative, where the gradient is
    an :class:`OPNBProblem`'s own method, or a function that calls one's
    (``lambda V: p.gradient(V)``: a closure or a global it names, in a
    function whose code names ``gradient``), and the problem's formulation
    says why."""
    seen: set = set()

    def reach(f: Any, depth: int) -> Iterator[Any]:
        if depth > 3 or id(f) in seen:
            return
        seen.add(id(f))
        yield f
        owner = getattr(f, "__self__", None)
        if owner is not None:
            yield from reach(owner, depth + 1)
        code = getattr(f, "__code__", None)
        if code is None or "gradient" not in code.co_names + code.co_varnames:
            return
        for cell in getattr(f, "__closure__", None) or ():
            try:
                yield from reach(cell.cell_contents, depth + 1)
            except ValueError:  # an empty cell
                pass
        names = getattr(f, "__globals__", {})
        for name in code.co_names:
            if name in names:
                yield from reach(names[name], depth + 1)

    for obj in reach(gradient, 0):
        if isinstance(obj, OPNBProblem):
            return obj.why_not_a_derivative()
    return None


def check_gradient(value: Callable[[np.ndarray], float], gradient: Callable[[np.ndarray], np.ndarray],
                   V: Any, *, rtol: Optional[float] = None, directions: Optional[int] = None,
                   random_state: Any = None) -> GradientCheck:
    """Assert that ``gradient(V)`` is the derivative of ``value`` at V.

    Each entry of V (or, with ``directions=k``, each of k random unit
    directions, as scipy's ``check_grad(direction="random")``) is a probe:
    the gradient's entry (or its inner product with the direction) is
    compared with the central difference (value(V + s D) - value(V - s
    D)) / (2 s) at the step ``s = eps^(1/3) max(1, |V_ab|)`` (eps the
    double's, about 6e-6 at unit scale: it balances the difference's
    truncation error, of order s^2, against its rounding error, of order
    eta / s). A probe agrees when the two differ by at most

        ``rtol * max(max |gradient|, max |difference|) + 10 eta / s``,

    the first term relative to the gradient's own scale (``rtol`` 1e-5 by
    default: a gradient 5% off fails), the second the difference's
    rounding, eta being the value's own: half the largest symmetric second
    difference of the value when V's entries are scaled by 1 +- r, in
    alternating directions, r from a few ulps to 1e-10, and at least 4 eps
    ``max(1, |value|)``.

    A probe that does not agree is differenced again: centrally at the step
    t = s / 10, then s / 100, s / 1000 and on by factors of ten, for as
    long as the difference still changes with the step by more than its
    bound (bound 10 eta / t) and, past s / 1000, that bound stays within a
    thousandth of the scale, or ``rtol * scale`` if larger (down to
    s / 10^9), for a value that curves on a shorter scale than s (a binned
    value where V's entry multiplies a column of large scale, and a small
    step moves the points across a grid's cells, or with a kink just past
    s / 1000); and one-sided,
    forward and backward, at s (each extrapolated from steps s and s / 2,
    whose error is of order s^2; bound 100 eta / s), for a value with a
    kink within the step (a binned value, whose weights change slope where
    a point crosses a bin edge). It agrees if any of these agrees. If none
    does, the one-sided slopes at V itself (at the step s / 100) decide:

    - where they differ by more than the bound, the one-sided slopes at
      the step t = s / 1000 are asked too. Where those agree with each
      other (bound ``rtol * scale + 10 eta / t``, no looser than the
      shortest central step's), the kink lies a step away and V itself
      is differentiable: the probe agrees if the gradient agrees with
      them, and fails (the gradient's fault) if the gradient lies farther
      than they do from the central difference at s. Otherwise the value is not
      differentiable at V along the probe, as far as differences can
      tell: a kink at V (a point on a bin edge, or tied points at a grid's
      end, as on lattice data with V on the coordinate axes), kinks a few
      steps away, or a value that moves in steps coarser than its rounding
      at V shows (projected points far from zero against their spread:
      each point's rounding moves the kernel sums). The gradient agrees if
      it lies within the bound of either one-sided slope at s / 100 or
      between them; else the check raises
      :class:`NotDifferentiableError`, which does not blame the gradient
      and says which of these the slopes point to (a jump in slope that
      the shorter step keeps is a kink at V);
    - where they agree, the value is differentiable there and the gradient
      is not its derivative: AssertionError.

    Parameters
    ----------
    value : callable
        ``value(V)``, a float.
    gradient : callable
        ``gradient(V)``, an array of V's shape.
    V : array-like of shape (d, ndim)
        Where to check.
    rtol : float, optional
        The bound relative to the gradient's scale (default 1e-5).
    directions : int, optional
        Check along this many random unit directions instead of every entry
        (for problems where an entry at a time is slow: 2 evaluations a
        direction, where the entries take 2 d ndim).
    random_state : int, numpy Generator or None, optional
        Seeds the directions.

    Returns
    -------
    GradientCheck
        Every probe: the analytic value, the difference that decided, its
        bound, and the one-sided slopes where they were asked.

    Raises
    ------
    GradientError
        An AssertionError listing the worst probes (up to five), each with
        its analytic and numeric values and bound. A problem's gradient that is not its
        value's derivative (R's objectives), passed as the problem's own
        method or wrapped in a function that calls it, makes the error
        say why. The exception's ``check`` is the :class:`GradientCheck`.
    NotDifferentiableError
        Where the only failing probes are at kinks of the value.

    Examples
    --------
    >>> import numpy as np
    >>> from pyopnb.testing import check_gradient
    >>> f = lambda V: float(np.sum(np.sin(V)))
    >>> check_gradient(f, np.cos, np.ones((3, 2))).ok
    True
    >>> check_gradient(f, np.cos, np.ones((3, 2)), directions=4, random_state=0).ok
    True
    """
    Va = np.array(V, dtype=np.float64)
    if Va.ndim != 2 or Va.size == 0:
        raise ValueError(f"V must be a non-empty 2-dimensional matrix, got shape {Va.shape}")
    if not np.all(np.isfinite(Va)):
        raise ValueError("V contains NaN or infinite values")
    rtol = 1e-5 if rtol is None else float(rtol)
    if not rtol > 0:
        raise ValueError(f"rtol must be positive, got {rtol}")
    if directions is not None and (isinstance(directions, bool) or not isinstance(directions, (int, np.integer))
                                   or directions < 1):
        raise ValueError(f"directions must be a positive integer, got {directions!r}")
    G = np.asarray(gradient(Va.copy()), dtype=np.float64)
    if G.shape != Va.shape:
        raise AssertionError(f"the gradient has shape {G.shape}, V has {Va.shape}")
    if not np.all(np.isfinite(G)):
        raise AssertionError("the gradient has NaN or infinite entries")
    f0 = float(value(Va.copy()))
    if not math.isfinite(f0):
        raise AssertionError(f"the value at V is not finite: {f0}")
    eta = _rounding(value, Va, f0)

    # the probes: (where, direction, analytic, base step)
    probes: List[Tuple[str, np.ndarray, float, float]] = []
    if directions is None:
        for a in range(Va.shape[0]):
            for b in range(Va.shape[1]):
                D = np.zeros_like(Va)
                D[a, b] = 1.0
                probes.append((f"V[{a}, {b}]", D, float(G[a, b]), _STEP * max(1.0, abs(Va[a, b]))))
    else:
        rng = np.random.default_rng(random_state)
        for k in range(int(directions)):
            D = rng.standard_normal(Va.shape)
            D /= np.sqrt(np.sum(D * D))
            probes.append((f"direction {k}", D, float(np.sum(G * D)), _STEP * max(1.0, float(np.abs(Va).max()))))
    diffs = [_Differences(value, Va, f0, eta, D, where) for where, D, _, _ in probes]
    first = [d.central(s) for d, (_, _, _, s) in zip(diffs, probes)]
    scale = max(max(abs(g) for _, _, g, _ in probes), max(abs(c[0]) for c in first), float(np.abs(G).max()))
    tiny = np.finfo(np.float64).tiny

    def excess(g: float, numeric: float, rounding: float) -> float:
        return abs(g - numeric) / (rtol * scale + rounding + tiny)

    out: List[Probe] = []
    for (where, _, g, s), d, c in zip(probes, diffs, first):
        tries = [(c[0], c[1], f"central difference, step {s:.3g}")]
        if excess(g, *tries[0][:2]) > 1:
            previous = c[0]
            for k in range(1, _SHORTEST + 1):
                t = s / 10.0 ** k
                # past s / 1000 only while the difference's rounding stays within a thousandth of the scale
                # (or rtol's share, if larger), where a 1% error still shows: for a binned value that curves
                # within a cell (a column of large scale moves the points across cells) or has a kink just
                # past s / 1000
                if k > 3 and 10 * eta / t > max(rtol, _FINE) * scale:
                    break
                num, rnd = d.central(t)
                tries.append((num, rnd, f"central difference, step {t:.3g}"))
                if abs(num - previous) <= rnd:
                    break  # the difference no longer changes with the step: no shorter one is called for
                previous = num
            for sign, kind in ((1.0, "forward"), (-1.0, "backward")):
                num, rnd = d.one_sided(s, sign)
                tries.append((num, rnd, f"{kind} slope, step {s:.3g}"))
        num, rnd, how = min(tries, key=lambda t: excess(g, t[0], t[1]))
        if excess(g, num, rnd) <= 1:
            out.append(Probe(where, g, num, how, rtol * scale + rnd, True))
            continue
        # no difference agrees: the one-sided slopes at V itself say whether V is a kink along this probe
        fwd, bf = d.one_sided(s / 100, 1.0)
        bwd, bb = d.one_sided(s / 100, -1.0)
        bound = rtol * scale + max(bf, bb)
        if abs(fwd - bwd) > bound:
            # a kink at V keeps its jump in slope at a shorter step; one a step away loses it there (V itself is
            # differentiable, and the shorter slopes judge the gradient); one that rounding makes (a value that
            # moves in steps coarser than its estimated rounding) changes with the step
            fwd3, bf3 = d.one_sided(s / 1000, 1.0)
            bwd3, bb3 = d.one_sided(s / 1000, -1.0)
            bound3 = rtol * scale + max(bf3, bb3)
            # the extrapolated slope's own rounding bound (10 eta / t), not the loose one: no looser than the
            # shortest central step's, which problems() sets its informative draws against
            near = min((fwd3, bwd3), key=lambda t: abs(g - t))
            tight = rtol * scale + 10 * eta / (s / 1000)
            if abs(fwd3 - bwd3) <= tight:
                how = f"one-sided slope, step {s / 1000:.3g} (a kink within {s / 100:.3g} of V)"
                if abs(g - near) <= tight:
                    out.append(Probe(where, g, near, how, tight, True, fwd3, bwd3))
                    continue
                # the gradient, not the shorter slopes, far from the central difference at s: a wrong gradient.
                # Slopes that agree only by being flat (a value in steps wider than t) sit far from it instead
                if abs(g - c[0]) > abs(near - c[0]) + tight:
                    out.append(Probe(where, g, near, how, tight, False, fwd3, bwd3))
                    continue
            lo, hi = min(fwd, bwd), max(fwd, bwd)
            nearest = min(max(g, lo), hi)
            ok = lo - bound <= g <= hi + bound
            what = "a kink" if abs((fwd3 - bwd3) - (fwd - bwd)) <= bound3 else _STEPS
            out.append(Probe(where, g, nearest, f"between the one-sided slopes at V ({what}), step {s / 100:.3g}",
                             bound, ok, fwd, bwd, True))
        else:
            out.append(Probe(where, g, num, how, rtol * scale + rnd, False, fwd, bwd))
    check = GradientCheck(out, rtol, scale, eta)
    wrong = [p for p in out if not p.ok and not p.kink]
    kinks = [p for p in out if not p.ok and p.kink]
    if wrong:
        wrong.sort(key=lambda p: -p.excess)
        lines = [f"{p.where}: analytic {p.analytic:.10g}, {p.how.split(',')[0]} {p.numeric:.10g} "
                 f"({p.how.split(', ', 1)[1]}); |difference| {p.difference:.3g} > bound {p.bound:.3g}"
                 for p in wrong[:5]]
        more = f" (and {len(wrong) - 5} more)" if len(wrong) > 5 else ""
        message = (f"the gradient is not the derivative of the value at {lines[0]} (rtol {rtol:g} x scale "
                   f"{scale:.3g}, plus rounding)" + ("; also " + "; ".join(lines[1:]) if len(lines) > 1 else "")
                   + more)
        reason = _explanation(gradient)
        if reason is not None:
            message += f". As expected: {reason}"
        raise GradientError(message, check)
    if kinks:
        kinks.sort(key=lambda p: -p.excess)
        lines = [f"{p.where}: forward slope {p.forward:.10g}, backward slope {p.backward:.10g}, analytic "
                 f"{p.analytic:.10g} beyond both by more than the bound {p.bound:.3g}" for p in kinks[:5]]
        if any(_STEPS in p.how for p in kinks):
            why = (": the one-sided slopes change with the step: V lies within a few steps of kinks (as on lattice "
                   "data with V on the axes), or the value moves in steps coarser than its rounding at V shows "
                   "(projected points far from zero against their spread, as data with a large offset, where each "
                   "point's rounding moves the kernel sums); no difference quotient can judge the gradient there. "
                   "Check at a point off the lattice (V moved by small distinct offsets, as problems() draws it), "
                   "on centred data (as R's scale = TRUE fits it)")
        else:
            why = (": V sits on a kink of the value (a point on a bin edge, or tied points at a grid's end, as on "
                   "lattice data with V on the axes), where no gradient is the derivative; check at a point off "
                   "the lattice (V moved by small distinct offsets, as problems() draws it)")
        raise NotDifferentiableError(
            f"the value is not differentiable at V along {lines[0]}" + ("; also " + "; ".join(lines[1:])
                                                                       if len(lines) > 1 else "") + why, check)
    return check


# ---------------------------------------------------------------------------
# what a fit optimises
# ---------------------------------------------------------------------------

def check_objective(formulation: Any, X: Any, y: Any, V: Any = None, *, ndim: Optional[int] = None,
                    nbin: Optional[int] = 1000, threads: Optional[int] = None, rtol: Optional[float] = None,
                    directions: Optional[int] = None, random_state: Any = None, **params: Any) -> GradientCheck:
    """Check the gradient of the objective a fit of ``formulation`` maximises, penalty included.

    The formulation's ``setup`` makes what a fit fixes (the scaled data,
    the bandwidths, the start, the penalty), and the fit's own objective
    (l(V) - lam pen(V) for a penalised formulation, l(V-bar) for the
    journal's) is checked with :func:`check_gradient`, value and gradient
    through the same path :func:`pyopnb.OPNB` and
    :class:`pyopnb.OPNBClassifier` optimise: a formulation whose l is
    right but whose penalty gradient is not fails here.

    Parameters
    ----------
    formulation : Formulation or str
        A formulation object (a built-in one, or one's own), or a
        registered name made with ``params``.
    X : array-like of shape (n, d)
        The data, as a fit takes them (raw: the formulation scales them).
    y : array-like of shape (n,)
        The labels.
    V : array-like of shape (d, ndim), optional
        Where to check, in the optimiser's coordinates (the formulation's
        scaled data); default the fit's start.
    ndim : int, optional
        Columns of V (default ``min(d, 20)``, or V's).
    nbin : int or None, default 1000
        Bins per projected column; None for exact sums.
    threads : int, optional
        OpenMP threads for the evaluations (the numbers do not depend on it).
    rtol, directions, random_state
        As :func:`check_gradient` takes them.
    **params
        The parameters of a formulation given by name (``lam``, ``gamma``, ...).

    Returns
    -------
    GradientCheck
        What was compared, when the gradient agrees.

    Raises
    ------
    GradientError
        An AssertionError, where the gradient is not the derivative of the
        value (saying why, where the formulation knows: R's objectives).
    NotDifferentiableError
        Where V sits on a kink of a binned value.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from pyopnb.testing import check_objective
    >>> X, y = load_iris(return_X_y=True)
    >>> check_objective("correct", X, y, ndim=2, nbin=None, lam=1e-3).ok
    True
    """
    from . import _threads
    from ._validation import as_nbin, check_ndim, check_X, column_names
    from .fitting import _Objective
    from .formulation import Formulation, formulation as named
    from .labels import factor

    if isinstance(formulation, str):
        form = named(formulation, **params)
    elif isinstance(formulation, Formulation):
        if params:
            raise TypeError(f"parameters {sorted(params)} are for a formulation given by name; this one is an "
                            f"object with its own")
        form = formulation
    else:
        raise TypeError(f"formulation must be a pyopnb.formulation.Formulation or a registered name, got "
                        f"{type(formulation).__name__}")
    Xa = check_X(X, "X")
    levels, codes = factor(y)
    if codes.size != Xa.shape[0]:
        raise ValueError(f"y has {codes.size} labels but X has {Xa.shape[0]} rows")
    Vg = None if V is None else np.array(V, dtype=np.float64)
    if Vg is not None and (Vg.ndim != 2 or Vg.shape[0] != Xa.shape[1]):
        raise ValueError(f"V must be a ({Xa.shape[1]}, ndim) matrix, got shape {Vg.shape}")
    nd = check_ndim(Vg.shape[1] if Vg is not None and ndim is None else ndim, Xa.shape[1])
    if Vg is not None and Vg.shape[1] != nd:
        raise ValueError(f"V has {Vg.shape[1]} columns, ndim is {nd}")
    nbin_v = as_nbin(nbin)
    thr = _threads.resolve(threads)
    st = form.setup(Xa, codes, levels, nd, column_names(X), nbin_v, thr)
    obj = _Objective(st, Xa.shape[1], nd)
    where = st.V if Vg is None else Vg
    try:
        return check_gradient(obj.value, lambda W: obj.value_and_grad(W)[1], where, rtol=rtol,
                              directions=directions, random_state=random_state)
    except GradientError as exc:
        reason = form.gradient_defect(nbin_v, st.problem.PI)
        if reason is None or "As expected" in str(exc):
            raise
        raise GradientError(f"{exc}. As expected: {reason}", exc.check) from None


# ---------------------------------------------------------------------------
# problems
# ---------------------------------------------------------------------------

def _formulation(formulation: Any) -> Any:
    """A formulation object from a registered name or an object."""
    from .formulation import FORMULATIONS, Formulation, formulation as named

    if isinstance(formulation, Formulation):
        return formulation
    if isinstance(formulation, str) and formulation in FORMULATIONS:
        return named(formulation)
    raise ValueError(f"formulation must be one of {', '.join(map(repr, FORMULATIONS))} or a "
                     f"pyopnb.formulation.Formulation, got {formulation!r}")


def _plain(a: np.ndarray) -> str:
    """An array as plain Python that rebuilds it to the bit."""
    return f"np.array({json.dumps(np.asarray(a).tolist())})"


@dataclass(frozen=True, repr=False, eq=False)
class OPNBProblem:
    """A valid problem for a formulation's objective.

    Its fields are the R-internal functions' arguments
    (``f_NB_exact(p.V, p.X, p.y0, p.PI, p.h)`` works), with the formulation
    whose objective it is for and its bins. :func:`problems` draws them.
    The value and gradient are the formulation's evaluator's, the object a
    fit optimises (made once a problem).

    Parameters
    ----------
    V : ndarray of shape (d, ndim)
        A projection without a zero column.
    X : ndarray of shape (n, d)
        The data, scaled as the objectives take them.
    y0 : ndarray of shape (n,)
        0-based class codes, every class present.
    PI : ndarray of shape (K,)
        The priors.
    h : ndarray of shape (K,)
        A bandwidth per class.
    formulation : str or Formulation, default "correct"
        Whose objective: a registered name (``"R"``: R's internal
        functions, ``compat="R"``; ``"correct"``: ``compat="correct"``;
        ``"journal"``: ``f_NB_normalised``) or a formulation object, one's
        own included.
    nbin : int, optional
        Bins per column; None for exact sums.

    Attributes
    ----------
    derivative : bool
        Whether the gradient is the value's derivative (the formulation's
        ``gradient_defect`` says; not so for R's binned objective, nor its
        exact one where the priors differ).
    """

    V: np.ndarray
    X: np.ndarray
    y0: np.ndarray
    PI: np.ndarray
    h: np.ndarray
    formulation: Any = "correct"
    nbin: Optional[int] = None
    derivative: bool = field(init=False)

    def __post_init__(self) -> None:
        from .evaluation import check_problem

        form = _formulation(self.formulation)
        evaluator = form.evaluator(check_problem(self.X, self.y0, self.PI, self.h), self.nbin, 1)
        object.__setattr__(self, "_form", form)
        object.__setattr__(self, "_evaluator", evaluator)
        object.__setattr__(self, "derivative", form.gradient_defect(self.nbin, self.PI) is None)

    def __repr__(self) -> str:
        # plain data: a shrunk example pastes back as it printed, to the bit
        return (f"OPNBProblem(V={_plain(self.V)}, X={_plain(self.X)}, y0={_plain(self.y0)}, PI={_plain(self.PI)}, "
                f"h={_plain(self.h)}, formulation={self.formulation!r}, nbin={self.nbin!r})")

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # hypothesis prints a falsifying example with this, not with a dataclass's fields
        printer.text(repr(self))

    def value(self, V: Any) -> float:
        """The formulation's objective l at V.

        Parameters
        ----------
        V : array-like of shape (d, ndim)
            A projection of the problem's shape.

        Returns
        -------
        float
            The value.
        """
        from .evaluation import check_V

        return self._evaluator.value(check_V(V, self.X.shape[1]))

    def gradient(self, V: Any) -> np.ndarray:
        """The formulation's gradient at V.

        Parameters
        ----------
        V : array-like of shape (d, ndim)
            A projection of the problem's shape.

        Returns
        -------
        ndarray of shape (d, ndim)
            The gradient.
        """
        from .evaluation import check_V

        return self._evaluator.value_and_grad(check_V(V, self.X.shape[1]))[1]

    def why_not_a_derivative(self) -> Optional[str]:
        """Why this problem's gradient is not its value's derivative.

        Returns
        -------
        str or None
            The formulation's reason, or None where the gradient is the
            derivative.
        """
        return self._form.gradient_defect(self.nbin, self.PI)

    def projected(self) -> np.ndarray:
        """The points as the objective projects them: X times V, or V's
        columns normalised where the formulation does (the journal's).

        Returns
        -------
        ndarray of shape (n, ndim)
            The projected points.
        """
        W, _ = self._evaluator.directions(np.ascontiguousarray(self.V, dtype=np.float64))
        return self.X @ W


def _scaled_columns(draw: Callable, st: Any, hnp: Any, n: int, p: int, scale: Any) -> np.ndarray:
    """n x p data: each column real or binary, values from a small lattice
    (ties) or anywhere in [-3, 3], centred where they lie far from zero
    against their spread, then scaled by 10^s, s drawn from ``scale``."""
    X = np.empty((n, p))
    for j in range(p):
        if draw(st.booleans()):
            col = draw(hnp.arrays(np.float64, n, elements=st.sampled_from([0.0, 1.0])))
        else:
            col = draw(hnp.arrays(np.float64, n, elements=st.one_of(
                st.integers(-3, 3).map(float), st.floats(-3, 3, allow_nan=False, allow_infinity=False))))
        # a column far from zero against its spread moves to centre on zero: each projected point's rounding is
        # relative to its magnitude, and there it would move the kernel sums in steps that no difference quotient
        # can tell from a wrong gradient (fits centre too: R's scale = TRUE)
        mid = (col.max() + col.min()) / 2
        if abs(mid) > _OFFSET * np.ptp(col):
            col = col - mid
        X[:, j] = col * 10.0 ** draw(scale)
    return X


def _off_lattice(V: np.ndarray) -> np.ndarray:
    """V moved by distinct offsets below 1e-3 (fractional parts of multiples
    of sqrt 2): rows of X that differ then never project to the same point,
    and no point sits on a bin edge to the last bits. A binned value has a
    kink there (the bin's weights, or the grid's end, change slope), and a
    kink within rounding distance of V is one no difference quotient can
    resolve; simple values such as V = 1 on lattice data put one there."""
    offsets = np.modf(np.sqrt(2.0) * np.arange(1, V.size + 1))[0].reshape(V.shape)
    return V + 1e-3 * offsets


def _normalises(form: Any) -> bool:
    """Whether the formulation's objective takes V's columns normalised (its
    evaluator's directions divide by their norms), asked on a small problem."""
    from .evaluation import check_problem

    ev = form.evaluator(check_problem(np.eye(2), np.array([0, 1]), np.array([0.5, 0.5]), np.ones(2)), None, 1)
    return ev.directions(np.array([[2.0], [0.0]]))[1] is not None


def _on_kink(p: OPNBProblem) -> bool:
    """Whether a binned problem's V sits on a kink of its value, to a
    millionth of a cell: a point on a grid point, or distinct rows tied at
    a column's extremes (the grid's ends)."""
    from .evaluation import GRID_EPS

    Z = p.projected()
    zmin, zmax = Z.min(axis=0), Z.max(axis=0)
    lo, hi = zmin - GRID_EPS, zmax + GRID_EPS
    cell = (hi - lo) / (p.nbin - 1)
    if not np.all(cell > 0):
        return True  # a grid of no width: every point on it
    u = (Z - lo) / cell
    # the points at a column's extremes sit just inside the grid's ends, and move with them
    inner = (Z > zmin) & (Z < zmax)
    if np.any(inner & (np.abs(u - np.round(u)) < 1e-6)):
        return True
    rows = np.unique(p.X, axis=0, return_inverse=True)[1].ravel()
    for t in range(Z.shape[1]):
        for end in (Z[:, t].min(), Z[:, t].max()):
            near = np.abs(Z[:, t] - end) <= 1e-6 * cell[t]
            if np.unique(rows[near]).size > 1:
                return True
    return False


def _strategy(st: Any, value: Any, name: str, kind: str, low: float, log: bool = False) -> Any:
    """A hypothesis strategy from a strategy, a fixed value, a (low, high)
    range, or (nbin) a list of values to sample."""
    from hypothesis.strategies import SearchStrategy

    if isinstance(value, SearchStrategy):
        return value
    if isinstance(value, list) and kind == "int" and value:
        for v in value:
            _number(v, name, kind, low)
        return st.sampled_from(value)
    if isinstance(value, tuple):
        if len(value) != 2:
            raise ValueError(f"{name} must be a (low, high) range, got {value!r}")
        a, b = (_number(v, name, kind, low) for v in value)
        if a > b:
            raise ValueError(f"{name}: the range {value!r} is empty (low > high)")
        if kind == "int":
            return st.integers(int(a), int(b))
        if log and a > 0:
            # log-uniform: small bandwidths are drawn as often as large ones
            return st.floats(math.log(a), math.log(b)).map(math.exp)
        return st.floats(a, b, allow_nan=False, allow_infinity=False)
    return st.just(_number(value, name, kind, low))


def _number(v: Any, name: str, kind: str, low: float) -> Any:
    ok = (isinstance(v, (int, np.integer)) if kind == "int" else isinstance(v, (int, float, np.integer, np.floating)))
    if isinstance(v, bool) or not ok or not math.isfinite(v) or v < low:
        raise ValueError(f"{name} must be {'an integer' if kind == 'int' else 'a number'} >= {low:g} (or a range or "
                         f"a hypothesis strategy), got {v!r}")
    return v


def problems(formulation: Any = "correct", binned: Optional[bool] = None, *, n: Any = None, p: Any = None,
             classes: Any = None, ndim: Any = None, h: Any = (0.05, 3.0), nbin: Any = None, scale: Any = (-3, 3),
             informative: bool = True, max_n: int = 30, max_p: int = 4, max_classes: int = 4,
             max_ndim: int = 3) -> Any:
    """A hypothesis strategy of valid :class:`OPNBProblem` s.

    Each has every class present (some with a single point), priors from
    the class frequencies, a bandwidth per class (log-uniform in ``h``:
    the bandwidths real fits use, the journal's 0.1-0.2 on scaled data
    among them), and V without a zero column, moved off lattices (by
    distinct offsets below 1e-3). X mixes binary and real columns, values
    drawn from a small lattice (so rows and values tie) or anywhere, each
    column centred where it lies more than 10 times its spread from zero,
    then scaled by 10^s, s in ``scale``, so that columns lie up to 10^6
    apart (projected points far from zero against their spread make a
    value in coarse steps, which no difference can judge; the projected
    points too lie within 10 spreads of zero). X as a whole is then scaled so that the projected points spread
    over 0.3 to 30 times the widest bandwidth, where a gradient tells the
    classes apart (each projected column within a factor 100 of the
    widest; V keeps entries of order one, as in real fits). Examples
    shrink towards few points, columns and classes, and small integer
    values; they print as plain data (``OPNBProblem(V=np.array(...),
    ...)``), to paste back. Needs hypothesis (``pip install
    pyopnb[testing]``).

    Binned, ``nbin`` is raised where a grid cell would be wider than half
    the narrowest bandwidth (binned sums are meant for cells narrower than
    the kernel; past 20000 bins the bandwidths are widened instead), and a
    draw whose V sits on a kink of the value (a point on a grid point, or
    distinct rows tied at a grid's end) is rejected: V is never on a kink,
    whatever the ranges.

    With ``informative`` (the default), a draw whose gradient could not
    show a bug is rejected: one whose largest gradient entry is below
    10^6 times the value's rounding over the check's step. There the
    loosest bound :func:`check_gradient` may accept under (10^4 times the
    rounding over the step: its shortest central step, or the one-sided
    slopes at a kink) would hide an error of 1% (a projection that does
    not tell the classes apart, points that tie on it, a lone point of a
    class). A few draws in a hundred are rejected so.

    Parameters
    ----------
    formulation : str or Formulation, default "correct"
        Whose objective, as :class:`OPNBProblem`'s: a registered name or a
        formulation object, one's own included.
    binned : bool, optional
        None draws exact or binned, True only binned, False only exact.
    n, p, classes, ndim : int, (low, high) or strategy, optional
        The points (default 2 to ``max_n``, at least one a class), columns
        of X (1 to ``max_p``), classes (2 to ``max_classes``) and columns
        of V (1 to ``max_ndim``, at most p).
    h : float, (low, high) or strategy, default (0.05, 3.0)
        The class bandwidths.
    nbin : int, (low, high), list or strategy, optional
        Bins per column of a binned problem (default 20, 50, 100 or 1000).
    scale : int, (low, high) or strategy, default (-3, 3)
        The exponent s of each column's scale 10^s.
    informative : bool, default True
        Reject draws whose gradient is too flat to show a bug.
    max_n, max_p, max_classes, max_ndim : int
        The upper ends of the default ranges.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Draws :class:`OPNBProblem` s.

    Examples
    --------
    >>> from hypothesis import given
    >>> from pyopnb.testing import check_gradient, problems
    >>> @given(problems("journal", h=(0.05, 0.3)))
    ... def test_gradient(p):
    ...     check_gradient(p.value, p.gradient, p.V)
    >>> test_gradient()
    """
    try:
        from hypothesis import assume
        from hypothesis import strategies as st
        from hypothesis.extra import numpy as hnp
    except ImportError:  # pragma: no cover - the message is the point
        raise ImportError("pyopnb.testing.problems needs hypothesis: pip install pyopnb[testing]") from None
    form = _formulation(formulation)
    if binned not in (None, True, False):
        raise ValueError(f"binned must be None, True or False, got {binned!r}")
    for name, value, low in (("max_n", max_n, 2), ("max_p", max_p, 1), ("max_classes", max_classes, 2),
                             ("max_ndim", max_ndim, 1)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if n is None and max_n < max_classes:
        raise ValueError(f"max_n ({max_n}) must be at least max_classes ({max_classes}): every class needs a point")
    s_classes = _strategy(st, (2, max_classes) if classes is None else classes, "classes", "int", 2)
    s_n = None if n is None else _strategy(st, n, "n", "int", 2)
    # an objective of V's normalised columns does not change with V where X has one column: at least two
    least = 2 if _normalises(form) else 1
    if least == 2 and max_p < 2 and p is None:
        raise ValueError(f"{form.name}'s objective normalises V's columns: with one column of X it does not "
                         f"change with V (max_p must be at least 2)")
    s_p = _strategy(st, (least, max(least, max_p)) if p is None else p, "p", "int", least)
    s_ndim = _strategy(st, (1, max_ndim) if ndim is None else ndim, "ndim", "int", 1)
    s_h = _strategy(st, h, "h", "float", 1e-12, log=True)
    s_nbin = _strategy(st, [20, 50, 100, 1000] if nbin is None else nbin, "nbin", "int", 2)
    s_scale = _strategy(st, scale, "scale", "int", -300)

    @st.composite
    def problem(draw: Callable) -> OPNBProblem:
        K = draw(s_classes)
        size = draw(st.integers(K, max(K, max_n)) if s_n is None else s_n)
        assume(size >= K)  # every class needs a point
        d = draw(s_p)
        nd = min(draw(s_ndim), d)
        X = _scaled_columns(draw, st, hnp, size, d, s_scale)
        y0 = draw(hnp.arrays(np.int64, size, elements=st.integers(0, K - 1)))
        y0[:K] = np.arange(K)  # every class present; the rest may all be one class
        PI = np.bincount(y0, minlength=K) / size
        hk = np.asarray([draw(s_h) for _ in range(K)])
        V = draw(hnp.arrays(np.float64, (d, nd), elements=st.floats(-2, 2, allow_nan=False)).map(
            _off_lattice).filter(lambda M: bool(np.all(np.sqrt((M * M).sum(axis=0)) > 1e-2))))
        # the points' spread on the projection, set against the bandwidths (0.3 to 30 times the widest),
        # by scaling X as a whole (its columns keep their relative scales, V its entries of order one): where
        # it is far wider, each point sees only its own class and the gradient vanishes; where far narrower,
        # the classes blur into one. Every projected column within a factor 100 of the widest
        Z = OPNBProblem(V, X, y0, PI, hk, form, None).projected()
        spreads = np.ptp(Z, axis=0)
        spread = float(spreads.max())
        assume(spread > 0 and float(spreads.min()) > 1e-2 * spread)
        # nor far from zero when columns cancel on the projection
        assume(float(np.abs(Z).max()) <= _OFFSET * spread)
        factor = float(hk.max()) * 10.0 ** draw(st.floats(-0.5, 1.5)) / spread
        # a spread of a few subnormals, or a column V barely uses, would scale past the doubles
        assume(math.isfinite(factor) and float(np.abs(X).max()) * factor < 1e300)
        X = X * factor
        spread *= factor
        use_bins = draw(st.booleans()) if binned is None else binned
        bins = draw(s_nbin) if use_bins else None
        if bins is not None:
            # a grid at least as fine as half the narrowest bandwidth, as binned sums are meant to be: on
            # cells of hundreds of bandwidths the binned densities underflow, or rest on eps-sized fractions
            need = int(math.ceil(2 * spread / float(hk.min()))) + 1
            bins = max(bins, min(need, 20000))
            if need > bins:
                hk = hk * (2 * spread / (bins - 1) / float(hk.min()))
        prob = OPNBProblem(V, X, y0, PI, hk, formulation, bins)
        if bins is not None:
            assume(not _on_kink(prob))
        if informative:
            f0 = prob.value(V)
            G = prob.gradient(V)
            assume(math.isfinite(f0) and np.all(np.isfinite(G)))
            step = _STEP * max(1.0, float(np.abs(V).max()))
            # the loosest bound check_gradient accepts under is 10^4 eta / s (its shortest central step, and the
            # one-sided slopes at a kink): 100 times that, and a 1% error in the largest entry shows
            assume(float(np.abs(G).max()) > _INFORMATIVE * _rounding(prob.value, np.asarray(V, dtype=np.float64), f0)
                   / step)
        return prob

    return problem()

