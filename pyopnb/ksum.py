"""Univariate kernel sums, FKSUM's ``fk_sum``, computed exactly in difference form.

The kernel is ``K(u) = sum_k beta_k |u|^k exp(-|u|)``; FKSUM's default
``beta = (1/4, 1/4)`` gives ``(1 + |u|) exp(-|u|) / 4``, a density.
"""
from __future__ import annotations

from typing import Any, Literal, Optional, Sequence

import numpy as np

from . import _ksum, _threads
from ._validation import as_float_vector, as_nbin, as_positive_scalar

__all__ = ["fk_sum", "kernel", "kernel_derivative", "kernel_integral", "binned_weights", "DEFAULT_BETA"]

KsumType = Literal["ksum", "dksum", "both"]

# FKSUM's default kernel (1 + |u|) exp(-|u|) / 4, the one OPNB uses: the one
# place this constant lives
DEFAULT_BETA = np.array([0.25, 0.25])
DEFAULT_BETA.setflags(write=False)

# FKSUM widens its binning grid by this much on each side (in x's units).
_BIN_MARGIN = 1e-5


def _as_beta(beta: Any) -> np.ndarray:
    arr = np.asarray(beta, dtype=np.float64)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"beta must be a non-empty 1-D sequence of coefficients, got shape {arr.shape}")
    if arr.size > _ksum.MAX_ORDER + 1:
        raise ValueError(f"beta may have at most {_ksum.MAX_ORDER + 1} coefficients, got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("beta contains NaN or infinite values")
    return np.ascontiguousarray(arr)


def kernel_integral(beta: Sequence[float] = DEFAULT_BETA) -> float:
    """The integral of FKSUM's kernel over the real line: ``2 * sum_k beta_k k!``.

    Parameters
    ----------
    beta : sequence of float, default (1/4, 1/4)
        The kernel's coefficients, as in :func:`fk_sum`.

    Returns
    -------
    float
        The integral (1 for the default kernel).

    Examples
    --------
    >>> from pyopnb import kernel_integral
    >>> kernel_integral()
    1.0
    """
    b = _as_beta(beta)
    fact = np.cumprod(np.r_[1.0, np.arange(1, b.size)])
    return float(2.0 * np.sum(b * fact))


def _polynomial_times_decay(u: Any, coef: np.ndarray) -> np.ndarray:
    """sum_k coef_k |u|^k exp(-|u|) at each u (Horner's rule), in numpy."""
    t = np.abs(np.asarray(u, dtype=np.float64))
    out = np.full_like(t, coef[-1])
    for c in coef[-2::-1]:
        out *= t
        out += c
    np.negative(t, out=t)
    np.exp(t, out=t)
    out *= t
    return out


def kernel(u: Any, beta: Any = DEFAULT_BETA) -> np.ndarray:
    """FKSUM's kernel ``K(u) = sum_k beta_k |u|^k exp(-|u|)`` at each u.

    The kernel :func:`fk_sum` sums, evaluated directly in numpy: for
    references, plots and checks. numpy's exp differs in its last bits
    between SIMD levels, so these are the kernel's values to rounding, not
    the bits of the compiled sums' terms.

    Parameters
    ----------
    u : array-like
        Points, in bandwidths (``(e - x) / h``).
    beta : sequence of float, default (1/4, 1/4)
        The kernel's coefficients, as in :func:`fk_sum`; the default is
        OPNB's kernel ``(1 + |u|) exp(-|u|) / 4``.

    Returns
    -------
    ndarray of u's shape

    Examples
    --------
    >>> from pyopnb.ksum import kernel
    >>> kernel([0.0, -1.0, 1.0]).round(6)
    array([0.25   , 0.18394, 0.18394])
    """
    return _polynomial_times_decay(u, _as_beta(beta))


def kernel_derivative(u: Any, beta: Any = DEFAULT_BETA) -> np.ndarray:
    """The derivative ``K'(u)`` of :func:`kernel` at each u.

    ``K'(u) = sign(u) exp(-|u|) sum_k beta_k (k |u|^(k-1) - |u|^k)``, which
    is ``-u exp(-|u|) / 4`` for OPNB's kernel; to rounding, as
    :func:`kernel`. At u = 0, where K' has no value unless beta_1 = beta_0,
    it is 0, the mean of its two sides.

    Parameters
    ----------
    u : array-like
        Points, in bandwidths.
    beta : sequence of float, default (1/4, 1/4)
        The kernel's coefficients, as in :func:`fk_sum`.

    Returns
    -------
    ndarray of u's shape

    Examples
    --------
    >>> from pyopnb.ksum import kernel_derivative
    >>> kernel_derivative([-1.0, 0.0, 1.0]).round(6)
    array([ 0.09197,  0.     , -0.09197])
    """
    b = _as_beta(beta)
    # g'(t) for g(t) = sum_k beta_k t^k e^-t: coefficient k is (k + 1) beta_(k+1) - beta_k
    coef = np.append(b[1:] * np.arange(1, b.size), 0.0) - b
    return np.sign(np.asarray(u, dtype=np.float64)) * _polynomial_times_decay(u, coef)


def binned_weights(x: np.ndarray, omega: np.ndarray, nbin: int):
    """FKSUM's grid over (centred) x and the linearly binned weights on it."""
    lo = x.min() - _BIN_MARGIN
    hi = x.max() + _BIN_MARGIN
    delta = (hi - lo) / (nbin - 1)
    grid = lo + np.arange(nbin) * delta
    pos = (x - lo) / delta
    a = np.clip(np.floor(pos).astype(np.intp), 0, nbin - 2)
    frac = pos - a
    gw = np.bincount(a, weights=omega * (1.0 - frac), minlength=nbin)
    gw += np.bincount(a + 1, weights=omega * frac, minlength=nbin)
    return grid, gw


def fk_sum(
    x: Any,
    omega: Any,
    h: float,
    x_eval: Any = None,
    beta: Any = DEFAULT_BETA,
    nbin: Optional[int] = None,
    type: KsumType = "ksum",
    threads: Optional[int] = None,
) -> np.ndarray:
    """Kernel sums ``S(e) = sum_i omega_i K((e - x_i) / h)`` and their derivative.

    Parameters
    ----------
    x, omega : array-like of shape (n,)
        Sample points and their weights (any sign).
    h : float
        Bandwidth, positive. No ``1/h`` factor is applied (as in FKSUM).
    x_eval : array-like of shape (m,), optional
        Evaluation points; ``None`` evaluates at ``x`` in ``x``'s order.
    beta : sequence of float
        Kernel coefficients ``beta_0..beta_a`` (order ``a`` = len(beta) - 1).
    nbin : int, optional
        ``None`` for exact sums in O((n + m) log n); an integer >= 2 for FKSUM's
        binned approximation: x is centred, linearly binned onto ``nbin`` grid
        points spanning ``[min - 1e-5, max + 1e-5]``, and the binned weights are
        summed exactly at each evaluation point. Evaluation points outside the
        grid get the exact sum of the binned weights (FKSUM reads past its
        arrays there).
    type : {"ksum", "dksum", "both"}
        ``"dksum"`` is ``D(e) = sum_i omega_i K'((x_i - e) / h) = -h dS/de``,
        FKSUM's sign convention; a sample point equal to ``e`` counts as lying
        to its left. ``"both"`` returns the two as columns.
    threads : int, optional
        Threads for the sums (see :func:`pyopnb._threads.resolve`); the
        numbers do not depend on it.

    Returns
    -------
    numpy.ndarray
        Shape (m,) for ``"ksum"`` and ``"dksum"``, (m, 2) for ``"both"``.
    """
    if type not in ("ksum", "dksum", "both"):
        raise ValueError(f"type must be 'ksum', 'dksum' or 'both', got {type!r}")
    xv = as_float_vector(x, "x")
    w = as_float_vector(omega, "omega")
    if w.size != xv.size:
        raise ValueError(f"omega has length {w.size} but x has length {xv.size}")
    hv = as_positive_scalar(h, "h")
    b = _as_beta(beta)
    ev = xv if x_eval is None else as_float_vector(x_eval, "x_eval", allow_empty=True)
    nbin = as_nbin(nbin)
    thr = _threads.resolve(threads, _threads.work(xv.size + ev.size, 0, 1, 1))

    want_S, want_D = type != "dksum", type != "ksum"
    if nbin is None:
        S, D = _ksum.exact_sums(xv, w.reshape(-1, 1), hv, b, None if x_eval is None else ev, want_S, want_D,
                                False, thr)
    else:
        # FKSUM centres x first; the grid and the binning follow it exactly
        centre = xv.mean()
        grid, gw = binned_weights(xv - centre, w, nbin)
        S, D = _ksum.grid_sums(grid, gw.reshape(-1, 1), hv, b, np.ascontiguousarray(ev - centre), want_S, want_D,
                               thr)
    S = None if S is None else S[:, 0]
    D = None if D is None else D[:, 0]
    if type == "ksum":
        return S
    if type == "dksum":
        return D
    return np.column_stack([S, D])
