"""Naive O(n m) kernel sums, exactly rounded with math.fsum: the reference."""
from __future__ import annotations

import math

import numpy as np


def kernel_terms(x, omega, h, e, beta):
    """Per-sample terms omega_i K((e - x_i)/h) and omega_i K'((x_i - e)/h) at one point e."""
    ks, ds = [], []
    for xi, wi in zip(x, omega):
        left = e >= xi  # ties count as left; decided on positions, not on a rounded u
        t = abs((e - xi) / h)
        ex = math.exp(-t)
        k = sum(b * t**j for j, b in enumerate(beta)) * ex
        # g'(t) = sum_j beta_j (j t^(j-1) - t^j) e^-t; K'((x - e)/h) = -g'(t) on the left
        gp = sum(b * ((j * t ** (j - 1) if j else 0.0) - t**j) for j, b in enumerate(beta)) * ex
        ks.append(wi * k)
        ds.append(wi * (-gp if left else gp))
    return ks, ds


def naive_fk_sum(x, omega, h, x_eval, beta=(0.25, 0.25)):
    """(S, D, scale_S, scale_D): sums, and sums of absolute terms (for signed weights)."""
    S, D, aS, aD = [], [], [], []
    for e in x_eval:
        ks, ds = kernel_terms(x, omega, h, e, beta)
        S.append(math.fsum(ks))
        D.append(math.fsum(ds))
        aS.append(math.fsum(abs(v) for v in ks))
        aD.append(math.fsum(abs(v) for v in ds))
    return tuple(np.array(v) for v in (S, D, aS, aD))
