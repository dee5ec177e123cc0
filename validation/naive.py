"""Naive O(n m) kernel sums, exactly rounded: the reference for fk_sum.

Each term is split into its monomials w * beta_j * t^j * e^-t (and, for the
derivative, w * beta_j * j * t^(j-1) * e^-t), and math.fsum adds them all
exactly, so cancellation between monomials costs nothing.
"""
from __future__ import annotations

import math

import numpy as np


def _monomials(xi, wi, h, e, beta):
    left = e >= xi  # ties count as left; decided on positions, not on a rounded u
    t = abs((e - xi) / h)
    ex = math.exp(-t)
    ks = [wi * b * t**j * ex for j, b in enumerate(beta)]
    # g'(t) = sum_j beta_j (j t^(j-1) - t^j) e^-t; K'((x - e)/h) is -g'(t) on the left
    sign = -1.0 if left else 1.0
    ds = []
    for j, b in enumerate(beta):
        if j:
            ds.append(sign * wi * b * j * t ** (j - 1) * ex)
        ds.append(-sign * wi * b * t**j * ex)
    return ks, ds


def naive_fk_sum(x, omega, h, x_eval, beta=(0.25, 0.25)):
    """(S, D, scale_S, scale_D): exactly rounded sums, and the scales errors
    are measured against: the sum of absolute per-sample terms for S, of
    absolute monomials for D, each weighted by max(1, t). The weight is the
    condition of e^-t: t = |e - x_i| / h is itself rounded, so e^-t of it is
    only good to about t units in the last place, here as in any kernel sum
    (a point 500 bandwidths away: 1e-13)."""
    S, D, aS, aD = [], [], [], []
    for e in x_eval:
        ks_all, ds_all, ks_abs, ds_abs = [], [], [], []
        for xi, wi in zip(x, omega):
            ks, ds = _monomials(xi, wi, h, e, beta)
            cond = max(1.0, abs((e - xi) / h))
            ks_all += ks
            ds_all += ds
            ks_abs.append(abs(math.fsum(ks)) * cond)
            # the derivative's monomials cancel near its roots (t = 2 for
            # beta = (0, 0, 1)): its condition is the sum of their magnitudes
            ds_abs.append(math.fsum(abs(v) for v in ds) * cond)
        S.append(math.fsum(ks_all))
        D.append(math.fsum(ds_all))
        aS.append(math.fsum(ks_abs))
        aD.append(math.fsum(ds_abs))
    return tuple(np.array(v) for v in (S, D, aS, aD))
