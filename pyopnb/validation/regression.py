"""Regression: pyopnb's results now against its own recorded results.

pyopnb gives the same bits on every CPU and thread count, so the default
is the same bits, which never flakes; ``rtol`` and ``atol`` loosen a
quantity to ``|now - recorded| <= atol + rtol * |recorded|`` entry by entry
(as :func:`numpy.isclose`). Labels, classes and L-BFGS-B's convergence
code are compared exactly. A row that differs names its entries with both
values (numbered from 0, as in Python), and for ``fval`` whether pyopnb's
objective is now better or worse (OPNB maximises it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from .report import Row

__all__ = ["QUANTITIES", "TOLERANT", "Tolerances", "rows"]

# every quantity regression compares, in the report's order
QUANTITIES = ("ynames", "mu", "scales", "PI", "fval", "V", "h", "posterior", "class", "convergence", "cv_lam",
              "cv_accuracy")
# the ones rtol/atol may loosen (the others are labels and codes)
TOLERANT = ("mu", "scales", "PI", "fval", "V", "h", "posterior", "cv_lam", "cv_accuracy")

Tol = Union[None, float, Mapping[str, float]]


@dataclass(frozen=True)
class Tolerances:
    """Per-quantity ``rtol`` and ``atol`` (0 and 0: the same bits)."""

    rtol: Mapping[str, float]
    atol: Mapping[str, float]

    @classmethod
    def of(cls, rtol: Tol = None, atol: Tol = None) -> "Tolerances":
        """Tolerances from a number (every quantity that takes one) or a
        mapping ``{quantity: number}``; None: the same bits.

        Raises
        ------
        ValueError
            A negative or non-finite number, an unknown quantity, or one
            compared exactly (``ynames``, ``class``, ``convergence``).
        """
        return cls(_per_quantity(rtol, "rtol"), _per_quantity(atol, "atol"))

    def at(self, quantity: str) -> "tuple[float, float]":
        return self.rtol.get(quantity, 0.0), self.atol.get(quantity, 0.0)

    @property
    def strict(self) -> bool:
        """Whether every quantity must keep its bits."""
        return not any(self.rtol.values()) and not any(self.atol.values())


def _per_quantity(tol: Tol, name: str) -> Dict[str, float]:
    if tol is None:
        return {}
    if isinstance(tol, Mapping):
        items = dict(tol)
    else:
        items = {q: tol for q in TOLERANT}
    out = {}
    for q, v in items.items():
        if q not in QUANTITIES:
            raise ValueError(f"{name}: no quantity {q!r}; regression compares {', '.join(QUANTITIES)}")
        if q not in TOLERANT:
            raise ValueError(f"{name}: {q} is compared exactly (labels and codes); a tolerance applies to "
                             f"{', '.join(TOLERANT)}")
        if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)) \
                or not np.isfinite(v) or v < 0:
            raise ValueError(f"{name} for {q} must be a finite number >= 0, got {v!r}")
        out[q] = float(v)
    return out


def rows(recorded: Dict[str, Any], now: Dict[str, Any], tol: Tolerances) -> List[Row]:
    """One regression row a quantity: now against recorded.

    Parameters
    ----------
    recorded, now : dict
        pyopnb's results (``ynames``, ``mu``, ``scales``, ``PI``, ``fval``,
        ``V``, ``h``, ``posterior``, ``class``, ``convergence``, and
        ``cv_stats`` where cross-validated).
    tol : Tolerances
        What each quantity may move by.

    Returns
    -------
    list of Row
        In the order of :data:`QUANTITIES`.
    """
    classes = [str(c) for c in recorded["ynames"]]
    by_class = lambda i: repr(classes[i]) if i < len(classes) else str(i)  # noqa: E731
    out = [_labels("ynames", recorded["ynames"], now["ynames"], "class labels (levels, in order)")]
    for q in ("mu", "scales", "PI", "fval", "V"):
        out.append(_numbers(q, recorded[q], now[q], tol))
    out.append(_numbers("h", recorded["h"], now["h"], tol, lambda ix: f"[{by_class(ix[0])}, {ix[1]}]"))
    out.append(_numbers("posterior", recorded["posterior"], now["posterior"], tol,
                        lambda ix: f"[{ix[0]}, {by_class(ix[1])}]"))
    out.append(_labels("class", recorded["class"], now["class"], "predicted classes"))
    out.append(_code(recorded["convergence"], now["convergence"]))
    if "cv_stats" in recorded:
        R, N = np.asarray(recorded["cv_stats"]), np.asarray(now["cv_stats"])
        lam = lambda ix: f" at lam {R[ix[0], 0]:.6g}"  # noqa: E731
        out.append(_numbers("cv_lam", R[:, 0], N[:, 0], tol, lam))
        out.append(_numbers("cv_accuracy", R[:, 1], N[:, 1], tol, lam))
    return out


def _source(rt: float, at: float) -> str:
    return "same bits" if rt == 0 and at == 0 else f"rtol {rt:g}, atol {at:g} (given)"


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)


def _numbers(q: str, recorded: Any, now: Any, tol: Tolerances,
             where: Optional[Callable[[tuple], str]] = None) -> Row:
    rt, at = tol.at(q)
    b, a = np.asarray(recorded, dtype=np.float64), np.asarray(now, dtype=np.float64)
    if a.shape != b.shape:
        return Row("regression", q, np.inf, 0.0, _source(rt, at), "DIFFERS",
                   f"shape {'x'.join(map(str, b.shape))} recorded, {'x'.join(map(str, a.shape))} now")
    same_bits = _bits(a) != _bits(b)
    if not same_bits.any():
        return Row("regression", q, 0.0, 0.0, _source(rt, at), "same")
    with np.errstate(invalid="ignore"):
        diff = np.where(a == b, 0.0, np.abs(a - b))
    diff = np.where(np.isnan(a) & np.isnan(b), 0.0, np.where(np.isnan(diff), np.inf, diff))
    allowed = at + rt * np.abs(np.where(np.isfinite(b), b, 0.0))
    bad = same_bits if tol.strict else diff > allowed
    worst = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.ndim else ()
    largest, allowed_there = float(diff[worst]), float(allowed[worst])
    if not bad.any():
        return Row("regression", q, largest, allowed_there, _source(rt, at), "ok",
                   f"{int(same_bits.sum())} of {a.size} entries moved within the tolerance")
    if a.ndim == 0:
        detail = f"recorded {float(b)!r}, now {float(a)!r}"
        if q == "fval":
            better = "better" if a > b else "worse"
            detail += f": {better} (OPNB maximises fval)"
        return Row("regression", q, largest, allowed_there, _source(rt, at), "DIFFERS", detail)
    order = np.argsort(-np.where(bad, diff, -1.0), axis=None, kind="stable")[:3]
    label = where or (lambda ix: "[" + ", ".join(map(str, ix)) + "]")
    shown = []
    for flat in order:
        ix = np.unravel_index(int(flat), a.shape)
        shown.append(f"{q}{label(tuple(int(i) for i in ix))} recorded {float(b[ix])!r}, now {float(a[ix])!r}")
    detail = f"{int(bad.sum())} of {a.size} entries differ: " + "; ".join(shown)
    if q == "cv_accuracy":
        detail += f"; mean accuracy {'higher' if a.mean() > b.mean() else 'lower'} now"
    return Row("regression", q, largest, allowed_there, _source(rt, at), "DIFFERS", detail)


def _labels(q: str, recorded: Sequence[str], now: Sequence[str], what: str) -> Row:
    rec, cur = [str(v) for v in recorded], [str(v) for v in now]
    if len(rec) != len(cur):
        return Row("regression", q, float(abs(len(rec) - len(cur))), 0.0, "same labels", "DIFFERS",
                   f"{len(rec)} {what} recorded, {len(cur)} now")
    changed = [i for i, (r, c) in enumerate(zip(rec, cur)) if r != c]
    if not changed:
        return Row("regression", q, 0.0, 0.0, "same labels", "same")
    shown = "; ".join(f"{q}[{i}] recorded {rec[i]!r}, now {cur[i]!r}" for i in changed[:5])
    more = f" (and {len(changed) - 5} more)" if len(changed) > 5 else ""
    return Row("regression", q, float(len(changed)), 0.0, "same labels", "DIFFERS",
               f"{len(changed)} of {len(rec)} {what} differ: {shown}{more}")


def _code(recorded: int, now: int) -> Row:
    from ..model import CONVERGENCE

    if int(recorded) == int(now):
        return Row("regression", "convergence", 0.0, 0.0, "same code", "same")
    say = lambda c: f"{c} ({CONVERGENCE.get(int(c), 'unknown code')})"  # noqa: E731
    return Row("regression", "convergence", 1.0, 0.0, "same code", "DIFFERS",
               f"L-BFGS-B's code recorded {say(recorded)}, now {say(now)}")
