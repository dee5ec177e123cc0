"""Boulle's selective naive Bayes: MODL preprocessing, MAP variable selection,
and Bayesian or compression-based model averaging (Boulle, JMLR 8, 2007)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np
from scipy.special import gammaln, logsumexp

from ._base import ClassDensityClassifier
from .._validation import label_text

# numeric variables with more distinct values than this are cut only between
# equal-frequency elementary intervals (this many) before the exact search
_MAX_ELEMENTARY = 100


def _log_comb(n, k):
    """log C(n, k), elementwise."""
    return gammaln(np.asarray(n, dtype=float) + 1) - gammaln(np.asarray(k, dtype=float) + 1) \
        - gammaln(np.asarray(n, dtype=float) - np.asarray(k, dtype=float) + 1)


def _part_costs(counts: np.ndarray) -> np.ndarray:
    """The MODL cost of parts with class counts [..., J]: the choice of the part's
    class distribution, log C(N_i + J - 1, J - 1), plus the multinomial
    coding of its labels, log N_i! - sum_j log N_ij!."""
    J = counts.shape[-1]
    Ni = counts.sum(axis=-1)
    return _log_comb(Ni + J - 1, J - 1) + gammaln(Ni + 1) - gammaln(counts + 1).sum(axis=-1)


def modl_discretise(x: np.ndarray, codes: np.ndarray, J: int) -> Tuple[np.ndarray, float, float]:
    """The MODL discretisation of a numeric variable (Boulle, 2006): the
    intervals minimising
    log N + log C(N + I - 1, I - 1) + sum_i [log C(N_i + J - 1, J - 1) + log N_i! - sum_j log N_ij!],
    found exactly by dynamic programming over cut points between distinct
    values (between equal-frequency elementary intervals when there are more
    than 100 distinct values).

    Returns (cut points, the optimum's cost, the one-interval cost); a value
    v falls in interval searchsorted(cuts, v, side='right'). Cut points lie
    halfway between the training values on either side.
    """
    N = x.size
    order = np.argsort(x, kind="stable")
    xs, ys = x[order], codes[order]
    values, starts = np.unique(xs, return_index=True)
    ends = np.r_[starts[1:], N]
    V = values.size
    if V > _MAX_ELEMENTARY:
        # equal-frequency elementary intervals whose edges fall between distinct values
        want = np.linspace(0, N, _MAX_ELEMENTARY + 1)[1:-1]
        edge = np.unique(np.searchsorted(ends, want, side="left"))
        groups = np.split(np.arange(V), edge + 1)
        groups = [g for g in groups if g.size]
    else:
        groups = [np.array([v]) for v in range(V)]
    E = len(groups)
    # class counts of each elementary interval, and their cumulative sums
    onehot = np.zeros((N, J))
    onehot[np.arange(N), ys] = 1.0
    cum = np.vstack([np.zeros(J), np.cumsum(onehot, axis=0)])
    edges = np.array([starts[g[0]] for g in groups] + [N])
    C = cum[edges]  # [E + 1, J]
    # cost of the interval from elementary edge s to e (s < e)
    seg = np.full((E + 1, E + 1), np.inf)
    for s in range(E):
        seg[s, s + 1:] = _part_costs(C[s + 1:] - C[s])
    # best[c, e]: the least sum of part costs covering elementary intervals 0..e-1 with c parts
    best = np.full((E + 1, E + 1), np.inf)
    arg = np.zeros((E + 1, E + 1), dtype=np.int64)
    best[0, 0] = 0.0
    for c in range(1, E + 1):
        tot = best[c - 1, :, None] + seg  # [s, e]
        arg[c] = np.argmin(tot, axis=0)
        best[c] = tot[arg[c], np.arange(E + 1)]
    I = np.arange(1, E + 1)
    total = np.log(N) + _log_comb(N + I - 1, I - 1) + best[1:, E]
    Ibest = int(np.argmin(total)) + 1
    cuts_at: List[int] = []
    e = E
    for c in range(Ibest, 0, -1):
        s = int(arg[c, e])
        if s > 0:
            cuts_at.append(s)
        e = s
    cuts = np.array(sorted((xs[edges[s] - 1] + xs[edges[s]]) / 2.0 for s in cuts_at))
    return cuts, float(total[Ibest - 1]), float(total[0])


def _log_bell_partial(V: int) -> np.ndarray:
    """log B(V, I) for I = 1..V: the number of partitions of V values into at most I groups."""
    S = [[0] * (V + 1) for _ in range(V + 1)]
    S[0][0] = 1
    for n in range(1, V + 1):
        for k in range(1, n + 1):
            S[n][k] = k * S[n - 1][k] + S[n - 1][k - 1]
    partial = np.cumsum([S[V][k] for k in range(1, V + 1)], dtype=object)
    return np.array([float(np.log(float(p))) if p < 10 ** 300 else _big_log(p) for p in partial])


def _big_log(p: int) -> float:
    digits = len(str(p)) - 1
    return float(np.log(p // 10 ** max(digits - 15, 0))) + max(digits - 15, 0) * np.log(10)


def modl_group(x: np.ndarray, codes: np.ndarray, J: int) -> Tuple[Dict[float, int], float, float]:
    """The MODL grouping of a categorical variable (Boulle, 2005): groups of
    values minimising log V + log B(V, I) + sum_i [log C(N_i + J - 1, J - 1) + log N_i! - sum_j log N_ij!],
    by greedy merges of the pair that lowers the cost most, down to one
    group, keeping the best partition seen.

    Returns (value -> group, the best cost, the one-group cost).
    """
    values, inv = np.unique(x, return_inverse=True)
    V = values.size
    counts = np.zeros((V, J))
    np.add.at(counts, (inv, codes), 1.0)
    logB = _log_bell_partial(V)
    groups = [[v] for v in range(V)]
    gcounts = [counts[v].copy() for v in range(V)]
    parts = _part_costs(np.array(gcounts))

    def cost(parts_sum: float, I: int) -> float:
        return float(np.log(V) + logB[I - 1] + parts_sum)

    best = (cost(parts.sum(), V), [list(g) for g in groups])
    while len(groups) > 1:
        G = len(groups)
        A = np.array(gcounts)
        merged = _part_costs(A[:, None, :] + A[None, :, :])
        delta = merged - parts[:, None] - parts[None, :]
        delta[np.tril_indices(G)] = np.inf
        a, b = np.unravel_index(int(np.argmin(delta)), delta.shape)
        groups[a] += groups[b]
        gcounts[a] = gcounts[a] + gcounts[b]
        del groups[b], gcounts[b]
        parts = _part_costs(np.array(gcounts))
        c = cost(parts.sum(), len(groups))
        if c < best[0]:
            best = (c, [list(g) for g in groups])
    one = cost(float(_part_costs(counts.sum(axis=0))), 1)
    mapping = {float(values[v]): i for i, g in enumerate(best[1]) for v in g}
    return mapping, best[0], one


class SelectiveNB(ClassDensityClassifier):
    """Boulle's selective naive Bayes (the MODL-based SNB of Khiops).

    Preprocessing: each numeric variable is discretised by MODL, each
    categorical one (``categorical``) grouped by MODL; a variable whose best
    partition is a single part carries no information. P(part | class) is the
    m-estimate (N_ij + 1/N) / (N_j + I/N), I the variable's number of parts
    (the paper's (support + m p) / (coverage + m) with m p = 1/N; its "p = 1/J"
    read as one over the parts, which makes the estimates sum to 1).

    Selection: the MAP subset of variables for the criterion
    log(K + 1) + log C(K + K_m - 1, K_m) - sum_n log P_m(y_n | x_n) (K
    variables, K_m selected), searched by the paper's multi-start fast
    forward-backward heuristic MS(FFWBW) (``n_starts`` random orders, each
    alternating fast forward and fast backward passes, at most ``max_iter``
    rounds). ``averaging``: "MAP" uses the best subset (weights 0 or 1);
    "BMA" weights each variable by the posterior probability of the models
    the search evaluated; "CMA" by their compression coefficients
    1 - cost(M) / cost(M_0), positive ones only (the paper's proposal).
    Prediction: log P(y | x) = log P(y) + sum_k w_k log P(x_k | y), normalised.
    A categorical value not seen in training contributes nothing.

    Parameters
    ----------
    averaging : {"CMA", "BMA", "MAP"}, default "CMA"
        How the variables are weighted, as above.
    categorical : boolean mask or column indices, optional
        The categorical columns, grouped rather than discretised (default
        none).
    n_starts : int, optional
        Random orders of the multi-start search (default
        1 + ceil(log2(k + 1)), k the informative variables).
    max_iter : int, default 5
        Forward-backward rounds per start.
    random_state : int, default 0
        Seeds the random orders.
    """

    def __init__(self, averaging: str = "CMA", categorical: Any = None, n_starts: Optional[int] = None,
                 max_iter: int = 5, random_state: int = 0):
        self.averaging = averaging
        self.categorical = categorical
        self.n_starts = n_starts
        self.max_iter = max_iter
        self.random_state = random_state

    def _fit_densities(self, X: np.ndarray, codes: np.ndarray) -> None:
        from ._base import binary_columns

        if self.averaging not in ("MAP", "BMA", "CMA"):
            raise ValueError(f"averaging must be 'MAP', 'BMA' or 'CMA', got {label_text(self.averaging)}")
        N, K = X.shape
        J = self.classes_.size
        self.categorical_ = binary_columns(X, self.categorical)
        self.cuts_, self.groups_, self.level_ = [], [], np.zeros(K)
        L = []  # per variable: log P(x_k | class) of each training row [N, J]
        self.log_cond_ = []
        class_n = np.bincount(codes, minlength=J).astype(float)
        for k in range(K):
            if self.categorical_[k]:
                mapping, c, c0 = modl_group(X[:, k], codes, J)
                part = np.array([mapping[float(v)] for v in X[:, k]])
                self.groups_.append(mapping)
                self.cuts_.append(None)
                nparts = max(mapping.values()) + 1
            else:
                cuts, c, c0 = modl_discretise(X[:, k], codes, J)
                part = np.searchsorted(cuts, X[:, k], side="right")
                self.cuts_.append(cuts)
                self.groups_.append(None)
                nparts = cuts.size + 1
            self.level_[k] = max(0.0, 1.0 - c / c0) if nparts > 1 else 0.0
            counts = np.zeros((nparts, J))
            np.add.at(counts, (part, codes), 1.0)
            table = np.log((counts + 1.0 / N) / (class_n + nparts / N))
            if nparts == 1:
                table[:] = 0.0  # one part: the same for every class, exactly
            self.log_cond_.append(table)
            L.append(table[part])
        self.weights_, self.selected_, self.models_ = self._select(np.array(L) if K else np.zeros((0, N, J)),
                                                                   codes, N, K)

    def _select(self, L: np.ndarray, codes: np.ndarray, N: int, K: int):
        rng = np.random.default_rng(self.random_state)
        prior = self.class_log_prior_
        if int(self.max_iter) < 1:
            raise ValueError(f"max_iter must be a positive integer, got {label_text(self.max_iter)}")
        self.n_iter_ = 1  # forward-backward rounds of the longest start
        informative = [k for k in range(K) if self.level_[k] > 0]
        rows = np.arange(N)

        def data_cost(S: np.ndarray) -> float:
            return float(-np.sum(S[rows, codes] - logsumexp(S, axis=1)))

        def model_cost(km: int) -> float:
            return float(np.log(K + 1) + _log_comb(K + km - 1, km))

        base = np.broadcast_to(prior, (N, prior.size)).copy()
        null = model_cost(0) + data_cost(base)
        seen: Dict[frozenset, float] = {frozenset(): null}
        best_sel, best_cost = frozenset(), null
        starts = self.n_starts if self.n_starts is not None else 1 + int(np.ceil(np.log2(len(informative) + 1)))
        for _ in range(max(1, int(starts))):
            sel: set = set()
            S = base.copy()
            cost = null
            for _round in range(int(self.max_iter)):
                self.n_iter_ = max(getattr(self, "n_iter_", 0), _round + 1)
                improved = False
                for forward in (True, False):
                    pool = [k for k in informative if (k not in sel) == forward]
                    for k in rng.permutation(pool) if pool else []:
                        k = int(k)
                        T = S + L[k] if forward else S - L[k]
                        trial = (sel | {k}) if forward else (sel - {k})
                        c = model_cost(len(trial)) + data_cost(T)
                        seen.setdefault(frozenset(trial), c)
                        if c < cost - 1e-12:
                            sel, S, cost, improved = trial, T, c, True
                if not improved:
                    break
            if cost < best_cost:
                best_sel, best_cost = frozenset(sel), cost
        models = sorted(seen.items(), key=lambda kv: kv[1])
        w = np.zeros(K)
        if self.averaging == "MAP":
            w[list(best_sel)] = 1.0
        else:
            sels = [m for m, _ in models]
            costs = np.array([c for _, c in models])
            if self.averaging == "BMA":
                weight = np.exp(-(costs - costs.min()))
            else:
                weight = np.maximum(1.0 - costs / null, 0.0)
            if weight.sum() > 0:
                for m, wt in zip(sels, weight):
                    for k in m:
                        w[k] += wt
                w /= weight.sum()
        return w, np.array(sorted(best_sel), dtype=np.int64), models

    def _parts(self, X: np.ndarray, k: int) -> np.ndarray:
        if self.cuts_[k] is not None:
            return np.searchsorted(self.cuts_[k], X[:, k], side="right")
        mapping = self.groups_[k]
        return np.array([mapping.get(float(v), -1) for v in X[:, k]])

    def _log_densities(self, X: np.ndarray) -> np.ndarray:
        out = np.zeros((X.shape[0], self.classes_.size))
        for k in np.flatnonzero(self.weights_):
            part = self._parts(X, k)
            known = part >= 0
            out[known] += self.weights_[k] * self.log_cond_[k][part[known]]
        return out
