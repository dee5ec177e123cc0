"""Naive O(n m) kernel sums, exactly rounded: the reference for fk_sum.

Each term is split into its monomials w * beta_j * t^j * e^-t (and, for the
derivative, w * beta_j * j * t^(j-1) * e^-t), and math.fsum adds them all
exactly, so cancellation between monomials costs nothing.
"""
from __future__ import annotations

import math

import numpy as np

from ..ksum import kernel, kernel_derivative


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


def naive_r_binned(Zt, y0, PI, h, nbin, eps=1e-8):
    """R's binned objective (f_NB_cpp's value) and df_NB_cpp's n dl/dZ
    [ndim, n] by direct sums over the grid, O(nbin^2) per column, from
    SPEC.md's definition: per column t the grid lo + g delta (lo = min z -
    eps, nbin points to max z + eps), each point's cell a = floor((z - lo) /
    delta) (kept in 0..nbin-2) and fraction u; the value with each point's
    class weight 1/(n_k h_k) split linearly between grid points a and a + 1,
    the densities read at grid point a; the gradient with the weights whole
    in cell a, every term (the point as an evaluation point and as a sample
    point) taken at the grid positions. h: one bandwidth per class.

    Returns (value, posteriors [n, K] of the simple binning, dZ [ndim, n],
    the scale of dZ's terms: the largest of each kind summed in absolute
    value with 1{y_i = k} and P_ik apart, against which dZ, made of their
    differences, is accurate)."""
    Zt = np.asarray(Zt, dtype=float)
    y0 = np.asarray(y0)
    ndim, n = Zt.shape
    K = len(PI)
    h = np.asarray(h, dtype=float)
    w = 1.0 / (np.bincount(y0, minlength=K) * h)
    onehot = np.eye(K)[y0]
    logf_lin = np.zeros((n, K))
    logf_s = np.zeros((n, K))
    grids = []
    for t in range(ndim):
        z = Zt[t]
        lo = z.min() - eps
        delta = (z.max() + eps - lo) / (nbin - 1)
        G = lo + np.arange(nbin) * delta
        a = np.clip(np.floor((z - lo) / delta).astype(int), 0, nbin - 2)
        u = (z - lo) / delta - a
        Wl = np.zeros((nbin, K))
        np.add.at(Wl, a, onehot * ((1 - u) * w[y0])[:, None])
        np.add.at(Wl, a + 1, onehot * (u * w[y0])[:, None])
        Ws = np.zeros((nbin, K))
        np.add.at(Ws, a, onehot * w[y0][:, None])
        diff = (G[:, None] - G[None, :])[:, :, None] / h  # [grid, grid, K]
        Kg, Dg = kernel(diff), kernel_derivative(diff)  # the default kernel
        f_lin = np.einsum("gbk,bk->gk", Kg, Wl)
        f_s = np.einsum("gbk,bk->gk", Kg, Ws)
        df_s = np.einsum("gbk,bk->gk", Dg, Ws) / h  # d f_k / dx at the grid points
        with np.errstate(divide="ignore"):
            logf_lin += np.log(f_lin[a])
            logf_s += np.log(f_s[a])
        grids.append((a, f_s, df_s, Dg))
    logprior = np.log(PI)

    def posteriors(logf):
        v = logprior + logf
        mx = v.max(axis=1, keepdims=True)
        lse = mx[:, 0] + np.log(np.exp(v - mx).sum(axis=1))
        return v, lse

    v, lse = posteriors(logf_lin)
    value = np.mean(v[np.arange(n), y0] - lse)
    v, lse = posteriors(logf_s)
    post = np.exp(v - lse[:, None])
    dZ = np.empty((ndim, n))
    scale = 0.0
    for t, (a, f_s, df_s, Dg) in enumerate(grids):
        fa = f_s[a]
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.where(fa > 0, (onehot - post) / fa, 0.0)  # 0 where class k's density is 0 (P_ik is too)
        evaluation = np.sum(c * df_s[a], axis=1)
        # z_i as a sample point of its class: -w_k / h_k sum_j c_jk K'((g_j - g_i) / h_k)
        C = np.zeros((nbin, K))
        np.add.at(C, a, c)
        sample = -np.einsum("bgk,bk->gk", Dg, C) * (w / h)  # [grid, K]: at the sample's grid point
        dZ[t] = evaluation + sample[a, y0]
        with np.errstate(divide="ignore", invalid="ignore"):
            mag = np.where(fa > 0, (onehot + post) / fa, 0.0)
        Cm = np.zeros((nbin, K))
        np.add.at(Cm, a, mag)
        scale = max(scale, np.abs(mag * df_s[a]).sum(axis=1).max(),
                    (np.einsum("bgk,bk->gk", np.abs(Dg), Cm) * (w / h)).max())
    return value, post, dZ, scale
