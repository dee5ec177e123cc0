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

:func:`problems` needs hypothesis (``pip install pyopnb[testing]``);
:func:`check_gradient` needs nothing beyond numpy.

Which objectives' gradients are the derivatives of their values:

- ``"correct"`` (the paper's l; ``compat="correct"``), exact or binned: yes.
  Binned, the value has kinks where a point crosses a bin edge (its linear
  binning weights are piecewise linear in z); the gradient is the one-sided
  slope there, and :func:`check_gradient` differences across a kink at a
  smaller step.
- ``"journal"`` (``f_NB_normalised``), exact or binned: yes.
- ``"R"`` (R OPNB 1.0's internal functions, defects kept for R's numbers):
  no. Binned, ``df_NB_cpp`` bins simply and differentiates at the grid
  points while ``f_NB_cpp`` bins linearly and reads each point's grid
  point. Exact, ``f_NB_exact`` multiplies by the priors twice and
  ``df_NB_exact`` once, so they agree only when every class has the same
  prior. :func:`check_gradient` on a problem of R's says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Tuple

import numpy as np

from .objective import (df_NB_cpp, df_NB_exact, df_NB_normalised, f_NB_cpp, f_NB_exact, f_NB_normalised)
from .validation.workflow import (RecordingError, Report, RUnavailable, assert_matches_r, check_recording,
                                  compare_with_r)

__all__ = ["OPNBProblem", "problems", "check_gradient", "compare_with_r", "assert_matches_r", "check_recording",
           "Report", "RecordingError", "RUnavailable"]

# the formulations whose objectives the kit knows, and whether each one's
# gradient is the derivative of its value: (binned, exact)
_DERIVATIVE = {"R": (False, False), "correct": (True, True), "journal": (True, True)}

_EPS = np.finfo(np.float64).eps


@dataclass(frozen=True)
class OPNBProblem:
    """A valid problem for OPNB's objectives.

    Its fields are the R-internal functions' arguments
    (``f_NB_exact(p.V, p.X, p.y0, p.PI, p.h)`` works), with the formulation
    whose objective it is for and its bins. :func:`problems` draws them.

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
    formulation : {"correct", "journal", "R"}, default "correct"
        Whose objective: ``"R"`` R's internal functions (``compat="R"``),
        ``"correct"`` ``compat="correct"``, ``"journal"``
        ``f_NB_normalised`` and ``df_NB_normalised``.
    nbin : int, optional
        Bins per column; None for exact sums.

    Attributes
    ----------
    derivative : bool
        Whether the gradient is the value's derivative (not so for R's).
    """

    V: np.ndarray
    X: np.ndarray
    y0: np.ndarray
    PI: np.ndarray
    h: np.ndarray
    formulation: str = "correct"
    nbin: Optional[int] = None
    derivative: bool = field(init=False)

    def __post_init__(self) -> None:
        if self.formulation not in _DERIVATIVE:
            raise ValueError(f"formulation must be one of {', '.join(map(repr, _DERIVATIVE))}, "
                             f"got {self.formulation!r}")
        object.__setattr__(self, "derivative", _DERIVATIVE[self.formulation][self.nbin is None])

    def _call(self, V: Any, gradient: bool) -> Any:
        args = (V, self.X, self.y0, self.PI, self.h)
        if self.formulation == "journal":
            return (df_NB_normalised if gradient else f_NB_normalised)(*args, self.nbin)
        compat = "R" if self.formulation == "R" else "correct"
        if self.nbin is None:
            return (df_NB_exact if gradient else f_NB_exact)(*args, compat=compat)
        return (df_NB_cpp if gradient else f_NB_cpp)(*args, self.nbin, compat=compat)

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
        return self._call(V, False)

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
        return self._call(V, True)

    def why_not_a_derivative(self) -> Optional[str]:
        """Why this problem's gradient is not its value's derivative.

        Returns
        -------
        str or None
            The reason, or None where the gradient is the derivative.
        """
        if self.derivative:
            return None
        if self.nbin is not None:
            return ("R's binned gradient (df_NB_cpp, compat='R') is not the derivative of R's binned value "
                    "(f_NB_cpp): it bins simply and differentiates at the grid points, while the value bins "
                    "linearly and reads each point's grid point. This is R OPNB 1.0's defect, kept for R's "
                    "numbers; the 'correct' formulation's binned gradient is the derivative of its value")
        return ("R's exact value (f_NB_exact, compat='R') multiplies by the priors twice and its gradient "
                "(df_NB_exact) once, so the gradient is the value's derivative only when every class has the "
                "same prior. This is R OPNB 1.0's defect, kept for R's numbers; the 'correct' formulation "
                "counts the priors once in both")


def _scaled_columns(draw: Callable, st: Any, hnp: Any, n: int, p: int) -> np.ndarray:
    """n x p data: each column real or binary, values from a small lattice
    (ties) or anywhere in [-3, 3], then scaled by 10^s, s in -3..3."""
    X = np.empty((n, p))
    for j in range(p):
        if draw(st.booleans()):
            col = draw(hnp.arrays(np.float64, n, elements=st.sampled_from([0.0, 1.0])))
        else:
            col = draw(hnp.arrays(np.float64, n, elements=st.one_of(
                st.integers(-3, 3).map(float), st.floats(-3, 3, allow_nan=False, allow_infinity=False))))
        X[:, j] = col * 10.0 ** draw(st.integers(-3, 3))
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


def problems(formulation: str = "correct", binned: Optional[bool] = None, *, max_n: int = 30, max_p: int = 4,
             max_classes: int = 4, max_ndim: int = 3) -> Any:
    """A hypothesis strategy of valid :class:`OPNBProblem` s.

    Each has every class present (some with a single point), priors from
    the class frequencies, a bandwidth per class in [0.2, 3], and V without
    a zero column, moved off lattices (by distinct offsets below 1e-3, so
    that no point sits on a binned objective's kink to the last bits).
    Binned, the bandwidths are widened where needed so that a grid cell is
    at most half the narrowest bandwidth. X mixes binary and real columns,
    values drawn from a small lattice (so rows and values tie) or anywhere,
    each column scaled by 10^-3 to 10^3. Examples shrink towards few points,
    columns and classes, and small integer values. Needs hypothesis
    (``pip install pyopnb[testing]``).

    Parameters
    ----------
    formulation : {"correct", "journal", "R"}, default "correct"
        Whose objective, as :class:`OPNBProblem`'s.
    binned : bool, optional
        None draws exact or binned (20, 50 or 100 bins), True only binned,
        False only exact.
    max_n : int, default 30
        The most points.
    max_p : int, default 4
        The most columns of X.
    max_classes : int, default 4
        The most classes.
    max_ndim : int, default 3
        The most columns of V.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Draws :class:`OPNBProblem` s.

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> from pyopnb.testing import check_gradient, problems
    >>> @settings(max_examples=5, deadline=None, derandomize=True)
    ... @given(problems("journal"))
    ... def test_gradient(p):
    ...     check_gradient(p.value, p.gradient, p.V)
    >>> test_gradient()
    """
    try:
        from hypothesis import strategies as st
        from hypothesis.extra import numpy as hnp
    except ImportError:  # pragma: no cover - the message is the point
        raise ImportError("pyopnb.testing.problems needs hypothesis: pip install pyopnb[testing]") from None
    if formulation not in _DERIVATIVE:
        raise ValueError(f"formulation must be one of {', '.join(map(repr, _DERIVATIVE))}, got {formulation!r}")
    if binned not in (None, True, False):
        raise ValueError(f"binned must be None, True or False, got {binned!r}")
    for name, value, low in (("max_n", max_n, 2), ("max_p", max_p, 1), ("max_classes", max_classes, 2),
                             ("max_ndim", max_ndim, 1)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if max_n < max_classes:
        raise ValueError(f"max_n ({max_n}) must be at least max_classes ({max_classes}): every class needs a point")

    @st.composite
    def problem(draw: Callable) -> OPNBProblem:
        K = draw(st.integers(2, max_classes))
        n = draw(st.integers(K, max_n))
        p = draw(st.integers(1, max_p))
        ndim = draw(st.integers(1, min(max_ndim, p)))
        X = _scaled_columns(draw, st, hnp, n, p)
        y0 = draw(hnp.arrays(np.int64, n, elements=st.integers(0, K - 1)))
        y0[:K] = np.arange(K)  # every class present; the rest may all be one class
        PI = np.bincount(y0, minlength=K) / n
        h = np.asarray(draw(st.lists(st.floats(0.2, 3.0), min_size=K, max_size=K)))
        V = draw(hnp.arrays(np.float64, (p, ndim), elements=st.floats(-2, 2, allow_nan=False)).map(
            _off_lattice).filter(lambda M: bool(np.all(np.sqrt((M * M).sum(axis=0)) > 1e-2))))
        use_bins = draw(st.booleans()) if binned is None else binned
        nbin = draw(st.sampled_from([20, 50, 100])) if use_bins else None
        if nbin is not None:
            # a grid at least as fine as half the narrowest bandwidth, as binned
            # sums are meant to be: on cells of hundreds of bandwidths the binned
            # densities underflow, or rest on eps-sized binning fractions
            W = V / np.sqrt((V * V).sum(axis=0)) if formulation == "journal" else V
            cell = float(np.max(np.ptp(X @ W, axis=0))) / (nbin - 1)
            h = h * max(1.0, 2 * cell / float(h.min()))
        return OPNBProblem(V, X, y0, PI, h, formulation, nbin)

    return problem()


def check_gradient(value: Callable[[np.ndarray], float], gradient: Callable[[np.ndarray], np.ndarray],
                   V: Any, *, rtol: Optional[float] = None) -> None:
    """Assert that ``gradient(V)`` is the derivative of ``value`` at V.

    Each entry is compared with the central difference
    (value(V + s e) - value(V - s e)) / (2 s) at the step
    ``s = eps^(1/3) max(1, |V_ab|)`` (eps the double's, about 6e-6 at unit
    scale: it balances the difference's truncation error, of order s^2,
    against its rounding error, of order eta / s). An entry agrees when the
    two differ by at most

        ``rtol * max(max |gradient|, max |difference|) + 10 eta / s``,

    the first term relative to the gradient's own scale (``rtol`` 1e-5 by
    default: a gradient 5% off fails), the second the difference's
    rounding, eta being the value's own: half the largest symmetric second
    difference of the value when V's entries are scaled by 1 +- r, in
    alternating directions, r from a few ulps to 1e-10 (the slope cancels; what is left is rounding, and a jump that
    rounding makes, such as a binned value's on a grid whose cells span
    tens of bandwidths), and at least 4 eps ``max(1, |value|)`` (a
    mean log-likelihood's terms, log priors among them, are of order one
    however small their sum, and they round at their own scale).

    An entry that does not agree is differenced again: centrally at the
    step t = s / 10, then s / 100 and s / 1000 for as long as the difference
    still changes with the step by more than its bound (bound 10 eta / t);
    and one-sided, forward and backward, at s (each extrapolated from steps
    s and s / 2, 2 D(s / 2) - D(s), whose error is of order s^2; bound
    100 eta / s). The shorter steps serve a value that curves on a shorter
    scale than s (an entry of V that multiplies a column of values in the
    thousands), and only such a value: where the difference is the same at
    s and s / 10, no shorter step is taken and no looser bound applies;
    the one-sided ones a binned objective, which is piecewise smooth (its
    weights change slope where a point crosses a bin edge, and its grid
    follows a column's extremes, where points that tie make a kink): at a
    kink the gradient is one of the one-sided slopes. It agrees if any of
    these agrees; no bound is looser than 10^4 eta / s, about 1.5e-6 for a
    value of order one.

    Parameters
    ----------
    value : callable
        ``value(V)``, a float.
    gradient : callable
        ``gradient(V)``, an array of V's shape.
    V : array-like
        Where to check.
    rtol : float, optional
        The bound relative to the gradient's scale (default 1e-5).

    Returns
    -------
    None
        The gradient agrees.

    Raises
    ------
    AssertionError
        Naming the worst entry, its analytic and numeric values and the
        bound. ``value`` and ``gradient`` of an :class:`OPNBProblem` whose
        gradient is not its value's derivative (R's objectives) make the
        error say why.
    """
    Va = np.array(V, dtype=np.float64)
    if Va.ndim != 2 or Va.size == 0:
        raise ValueError(f"V must be a non-empty 2-dimensional matrix, got shape {Va.shape}")
    if not np.all(np.isfinite(Va)):
        raise ValueError("V contains NaN or infinite values")
    rtol = 1e-5 if rtol is None else float(rtol)
    if not rtol > 0:
        raise ValueError(f"rtol must be positive, got {rtol}")
    G = np.asarray(gradient(Va.copy()), dtype=np.float64)
    if G.shape != Va.shape:
        raise AssertionError(f"the gradient has shape {G.shape}, V has {Va.shape}")
    if not np.all(np.isfinite(G)):
        raise AssertionError("the gradient has NaN or infinite entries")

    f0 = float(value(Va.copy()))
    tiny = np.finfo(np.float64).tiny
    if not math.isfinite(f0):
        raise AssertionError(f"the value at V is not finite: {f0}")
    # the value's own rounding, measured: V scaled by 1 +- r for r from a few
    # ulps to 1e-10, the symmetric second difference taking out the value's
    # slope (its curvature is below rounding there), so what is left is how far
    # the value's last bits, or a jump that rounding makes, move; at least
    # that of terms of order one
    # (entries moved with alternating signs: a scale-invariant value, the
    # journal's, does not move along V itself)
    pattern = np.resize([1.0, -1.0, -1.0, 1.0], Va.size).reshape(Va.shape)
    eta = max([abs(float(value(Va * (1 + r * pattern))) + float(value(Va * (1 - r * pattern))) - 2 * f0) / 2
               for r in (4 * _EPS, 1e-12, 1e-10)] + [4 * _EPS * max(1.0, abs(f0))])

    def at(a: int, b: int, step: float) -> float:
        W = Va.copy()
        W[a, b] += step
        f = float(value(W))
        if not math.isfinite(f):
            raise AssertionError(f"the value is not finite at V[{a}, {b}] {step:+.3g}: {f}")
        return f

    def difference(a: int, b: int, s: float, kind: str = "central") -> Tuple[float, float]:
        """(the difference quotient at step s, its rounding bound)."""
        if kind == "central":
            return (at(a, b, s) - at(a, b, -s)) / (2 * s), 10 * eta / s
        # one-sided, extrapolated (2 D(s/2) - D(s)): its error is of order s^2, as a central one's
        sign = 1.0 if kind == "forward" else -1.0
        d1 = (at(a, b, sign * s) - f0) / (sign * s)
        d2 = (at(a, b, sign * s / 2) - f0) / (sign * s / 2)
        return 2 * d2 - d1, 100 * eta / s

    steps = np.cbrt(_EPS) * np.maximum(1.0, np.abs(Va))
    first = [[difference(a, b, steps[a, b]) for b in range(Va.shape[1])] for a in range(Va.shape[0])]
    N = np.array([[d for d, _ in row] for row in first])
    scale = max(float(np.max(np.abs(G))), float(np.max(np.abs(N))))

    def excess(g: float, t: Tuple[float, float, float]) -> float:
        return abs(g - t[1]) / (rtol * scale + t[2] + tiny)

    worst = None
    for a in range(Va.shape[0]):
        for b in range(Va.shape[1]):
            tries = [(steps[a, b], *first[a][b])]
            if excess(G[a, b], tries[-1]) > 1:
                # a kink within the step, or a value that curves on a shorter scale than the step (V's entry
                # multiplies a column of large values): shorter steps, and the one-sided slopes (the
                # gradient's at a kink)
                previous = tries[0][1]
                for t in steps[a, b] / np.array([10.0, 100.0, 1000.0]):
                    tries.append((t, *difference(a, b, t)))
                    if abs(tries[-1][1] - previous) <= tries[-1][2]:
                        break  # the difference no longer changes with the step: no shorter one is called for
                    previous = tries[-1][1]
                tries += [(steps[a, b], *difference(a, b, steps[a, b], kind)) for kind in ("forward", "backward")]
            best = min(tries, key=lambda t: excess(G[a, b], t))
            e = excess(G[a, b], best)
            if e > 1 and (worst is None or e > worst[0]):
                worst = (e, a, b, best[1], best[0], rtol * scale + best[2])
    if worst is None:
        return
    excess, a, b, num, s, bound = worst
    why = getattr(getattr(gradient, "__self__", None), "why_not_a_derivative", None)
    reason = why() if callable(why) else None
    message = (f"the gradient is not the derivative of the value at V[{a}, {b}]: analytic {G[a, b]:.10g}, "
               f"central difference {num:.10g} (step {s:.3g}); |difference| {abs(G[a, b] - num):.3g} > bound "
               f"{bound:.3g} (rtol {rtol:g} x scale {scale:.3g}, plus rounding)")
    if reason is not None:
        message += f". As expected: {reason}"
    raise AssertionError(message)
