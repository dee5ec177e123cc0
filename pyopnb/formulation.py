"""The formulations of OPNB that one fit driver optimises.

Each formulation owns everything about itself: its parameters and their
checks, how the data are scaled, which bandwidths the classes get, where
L-BFGS-B starts, its penalty and likelihood, the order of the optimum's
columns, the columns the model takes, and what an optimiser outcome means
for it. :func:`pyopnb.fitting.fit` only drives the optimiser (as
scikit-learn's LDA dispatches on its ``solver``); ``FORMULATIONS`` names
them for ``OPNBClassifier``, the command line and the study.

``RFormulation`` ("R")
    R OPNB 1.0 (the penalised formulation of arXiv v1): centred and scaled
    data, bandwidth 1 for every class, start at the leading eigenvectors of
    cov, maximise l(V) - lam pen(V) with R's objective, defects included
    (squared priors in the exact value; a binned gradient that is not the
    derivative of the binned value).
``CorrectFormulation`` ("correct")
    R's formulation (its scaling, start and penalty, from
    ``PenalisedFormulation``) with the paper's objective: priors once, and a
    binned value whose gradient is its exact derivative.
``JournalFormulation`` ("journal")
    The method as published (the journal version, section 2 and section 4.2
    item 8): l at V with unit-norm columns (no penalty, priors once), class
    bandwidths h_k = 0.54 gamma (trace(Sigma_k)/p)^(1/2) n_k^(-1/5), start at
    LDA's discriminant directions completed by principal components, and
    optionally data pre-scaled by Sigma_W^(-1/2) (the paper's remedy on
    Hill-Valley, section 4.5).

Each formulation makes its choice of objective once, in ``evaluator``: an
:class:`pyopnb.evaluation.Evaluator` bound to the fit's problem, bins and
threads, that computes l, its gradient and the greedy column order. A
fourth formulation is one class with these methods and one line in
``FORMULATIONS``; one that needs arithmetic of its own also subclasses the
compiled evaluations' interface, ``pyopnb.evaluation.CoreEvaluator``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Callable, ClassVar, Dict, List, Optional, Tuple

import numpy as np

from . import _threads
from ._core import colstats, eigen as _eigen, linalg as _linalg, scratch as _scratch
from ._validation import as_positive_scalar, check_lam, label_text
from .discriminant import inv_sqrt, lda_start, within_between
from .weights import class_totals, weighted_colmeans, weighted_cov, weighted_var
from .r_failures import R_UNDERFLOW, RFailure, r_gradient_failure
from .evaluation import (Evaluator, NormalisedEvaluator, Problem, check_problem, exact_passes, greedy,
                         interp_grid, linear_passes, r_grid)

__all__ = ["Formulation", "PenalisedFormulation", "RFormulation", "CorrectFormulation", "JournalFormulation",
           "FORMULATIONS", "formulation", "register", "corrected", "Setup", "journal_bandwidths", "r_colmeans",
           "r_sd", "r_standardise", "r_start", "greedy_order", "class_priors"]

# the journal's constant for the kernel (1 + |x|) exp(-|x|) (its footnote 3)
_SILVERMAN_054 = 0.54
# R's OPNB: an sd below this zeroes a column
_SD_ZERO = 1e-20


@dataclass
class Setup:
    """What a formulation hands the driver: the data as optimised, the start
    V, the evaluator of its l, the penalty, and how to map the optimum back
    to raw data.

    prescale : (d, d) matrix such that projections of the scaled data are
    ``Xs_raw_scaled @ prescale @ V``, or None for the identity.
    """

    mu: np.ndarray
    scales: np.ndarray
    prescale: Optional[np.ndarray]
    evaluator: Evaluator
    V: np.ndarray
    lam: float
    pen: Optional[Callable[[np.ndarray], float]]
    dpen: Optional[Callable[[np.ndarray], np.ndarray]]
    # R's formulation: where R's own gradient would not be finite at V (None: never asked), and whether the fit
    # then does as R's OPNB does (keeps its start) rather than go on and say so
    r_failure: Optional[Callable[[np.ndarray], Optional[RFailure]]] = None
    r_defects: bool = False

    @property
    def problem(self) -> Problem:
        """The validated problem the evaluator is bound to."""
        return self.evaluator.problem


@dataclass
class PartSetup:
    """What a formulation hands a fit on rows held in parts
    (:mod:`pyopnb.part_fit`): the scaling and pre-scaling, the map from the
    raw rows to the rows the objective reads (``pyopnb.part_stats.RowMap``),
    the start V, the class bandwidths h, the penalty, the objective over the
    parts (``pyopnb.parts.PartObjective``), the settings that fix the fit's
    path besides the data (a checkpoint's key), and whether the fit keeps
    its start where R's gradient would fail (None: no such check)."""

    mu: np.ndarray
    scales: np.ndarray
    prescale: Optional[np.ndarray]
    rows: Any
    V: np.ndarray
    h: np.ndarray
    lam: float
    pen: Optional[Callable[[np.ndarray], float]]
    dpen: Optional[Callable[[np.ndarray], np.ndarray]]
    objective: Any
    key: Tuple[Any, ...]
    r_defects: Optional[bool] = None


def given_start(V0: Any, d: int, ndim: int) -> np.ndarray:
    """A start given as a matrix on the scaled data, checked: a fit on parts
    takes no function (it would need the rows)."""
    if callable(V0) or isinstance(V0, str):
        raise ValueError("a fit on rows in parts takes V0 as a (d, ndim) matrix: a function of the rows, or R's "
                         "own start, would need them in one place")
    V = np.asarray(V0, dtype=np.float64)
    if V.shape != (d, ndim) or not np.all(np.isfinite(V)):
        raise ValueError(f"V0 must be a finite ({d}, {ndim}) matrix, got shape {V.shape}")
    return np.ascontiguousarray(V)


def journal_bandwidths(Xs: np.ndarray, codes: np.ndarray, K: int, gamma: float,
                       levels: Optional[np.ndarray] = None, threads: Optional[int] = None,
                       w: Optional[np.ndarray] = None) -> np.ndarray:
    """h_k = 0.54 gamma (trace(Sigma_k) / p)^(1/2) n_k^(-1/5): Sigma_k the
    sample covariance (n_k - 1) of class k, p the number of columns that vary
    (zeroed constant columns are not counted). One bandwidth per class,
    used on every projected column. Variances as R's var (long double); with
    the points' weights ``w``, weighted variances (:func:`pyopnb.weights.weighted_var`),
    n_k still the class's rows."""
    thr = _threads.resolve(threads)
    Xs = np.ascontiguousarray(Xs, dtype=np.float64)
    p = int(np.sum(colstats.r_var(Xs, thr) > 0)) if Xs.shape[0] > 1 else 0

    def trace(k: int) -> float:
        Xk = np.ascontiguousarray(Xs[codes == k])
        if w is None:
            return colstats.r_sum(colstats.r_var(Xk, thr))
        wk = np.ascontiguousarray(w[codes == k])
        return colstats.r_sum(weighted_var(Xk - weighted_colmeans(Xk, wk, thr), wk, thr))

    return bandwidths_from(p or Xs.shape[1], np.bincount(codes, minlength=K), trace, gamma, levels)


def bandwidths_from(p: int, counts: np.ndarray, trace: Callable[[int], float], gamma: float,
                    levels: Optional[np.ndarray] = None) -> np.ndarray:
    """The journal's h_k (:func:`journal_bandwidths`) from p, the classes'
    rows and ``trace(k)``, the trace of class k's covariance (asked only of
    a class of two rows or more)."""
    h = np.empty(len(counts))
    for k in range(len(counts)):
        name = label_text(levels[k] if levels is not None else k)
        nk = int(counts[k])
        if nk < 2:
            raise ValueError(f"class {name} has {nk} row: the journal bandwidth needs at least 2 "
                             f"rows of every class")
        tr = trace(k)
        if not tr > 0:
            raise ValueError(f"class {name} does not vary (all its rows are equal): its bandwidth would be 0")
        h[k] = _SILVERMAN_054 * gamma * np.sqrt(tr / p) * nk ** -0.2
    return h


# ---------------------------------------------------------------------------
# R's data scaling, start and penalty (R OPNB 1.0's steps 2-5)
# ---------------------------------------------------------------------------

def canonical_order(Xa: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """The rows' order by class, then by the columns in turn, equal rows in
    the order they came: ``np.lexsort`` over the codes and every column,
    which takes a sort per column. Sorted by the class and the first column,
    continuous data have no ties left, and the other columns are then read
    only to find that out."""
    if Xa.shape[1] == 0:
        return np.argsort(codes, kind="stable")
    order = np.lexsort((Xa[:, 0], codes))
    c, x = codes[order], Xa[order, 0]
    if Xa.shape[1] > 1 and np.any((c[1:] == c[:-1]) & (x[1:] == x[:-1])):
        order = np.lexsort(np.vstack([Xa.T[::-1], codes[None, :]]))
    return order


def r_colmeans(X: np.ndarray, threads: Optional[int] = None) -> np.ndarray:
    """R's colMeans: each column summed left to right in long double, over n."""
    return colstats.r_colmeans(np.ascontiguousarray(X, dtype=np.float64), _threads.resolve(threads))


def r_sd(X: np.ndarray, threads: Optional[int] = None) -> np.ndarray:
    """R's sd per column: a refined long-double mean, then a long-double sum of
    squared deviations over n - 1, all summed left to right. Matching R to
    the bit matters: the start's eigenvector signs, and so R's binned fits,
    can change with an ulp of the scaled data."""
    return colstats.r_sd(np.ascontiguousarray(X, dtype=np.float64), _threads.resolve(threads))


def r_standardise(X: np.ndarray, scale: bool = True, names: Optional[Tuple[str, ...]] = None,
                  threads: Optional[int] = None, w: Optional[np.ndarray] = None
                  ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """R OPNB's steps 2-3, to the bit: (mu, scales, Xs).

    mu = colMeans(X); scales = 1/sd of the centred columns (0 for sd < 1e-20,
    1 if not scale); Xs = (X - mu) * scales. R multiplies by 1/sd: dividing
    changes Xs by an ulp here and there, which can flip the sign of an
    eigenvector of the start, and R's binned objective tells signs apart.
    A column whose variance overflows double precision (values past about
    1e154) is an error naming it (R would zero it silently). With the points'
    weights ``w``, the weighted mean and sd (:mod:`pyopnb.weights`).
    """
    n, d = X.shape
    thr = _threads.resolve(threads)
    mu = r_colmeans(X, thr) if w is None else weighted_colmeans(X, w, thr)
    # from the core's pool, not NumPy's allocator, which advises a large
    # array onto huge pages: the kernel's compaction for them stalled the
    # first touch of this one by up to 30 ms in a fresh process
    with _scratch.arrays():
        Xc = np.empty((n, d))
    colstats.sweep(np.ascontiguousarray(X, dtype=np.float64), mu, Xc, True, thr)
    if scale:
        if n < 2:
            sd = np.zeros(d)
        else:
            sd = r_sd(Xc, thr) if w is None else np.sqrt(weighted_var(Xc, w, thr))
        scales = r_scales(sd, names)
        colstats.sweep(Xc, scales, Xc, False, thr)
    else:
        scales = np.ones(d)
    return mu, scales, Xc


def r_scales(sd: np.ndarray, names: Optional[Tuple[str, ...]] = None) -> np.ndarray:
    """R's scales from the columns' sd: 1/sd, 0 for sd < 1e-20 (a constant
    column). A column whose variance overflowed (sd not finite) is an error
    naming it (R would zero it silently)."""
    if not np.all(np.isfinite(sd)):
        j = int(np.flatnonzero(~np.isfinite(sd))[0])
        col = f"'{names[j]}'" if names else str(j)
        raise ValueError(f"X's column {col} varies too much for its variance to be a double (values past about "
                         f"1e154): divide X by a constant first")
    return np.where(sd < _SD_ZERO, 0.0, 1.0 / np.where(sd < _SD_ZERO, 1.0, sd))


def _penalty(C: Optional[Callable], Xs: np.ndarray, y1: np.ndarray, d: int):
    """pen(V) and its gradient, as R computes them: sum(V^2) (in long
    double, over V's entries column by column), or the sum over columns of
    t(v) %*% Cmat %*% v; and 2 V or 2 Cmat %*% V (products in R's order)."""
    if C is None:
        return (lambda V: colstats.r_sum(np.ravel(V * V, order="F"))), (lambda V: 2.0 * V)
    Cmat = np.asarray(C(Xs, y1), dtype=np.float64)
    if Cmat.shape != (d, d):
        raise ValueError(f"C must return a {d} x {d} matrix (d = columns of X), got shape {Cmat.shape}")
    if not np.all(np.isfinite(Cmat)):
        raise ValueError("C returned a matrix with NaN or infinite values")
    if not np.allclose(Cmat, Cmat.T, rtol=1e-12, atol=1e-14 * max(1.0, np.abs(Cmat).max())):
        raise ValueError("C must return a symmetric matrix")
    Cmat = np.ascontiguousarray(Cmat)

    def pen(V: np.ndarray) -> float:
        return colstats.r_sum([_linalg.matmul(_linalg.matmul(V[None, :, t], Cmat), V[:, t:t + 1])[0, 0]
                              for t in range(V.shape[1])])

    return pen, (lambda V: 2.0 * _linalg.matmul(Cmat, V))


def r_start(V0: Any, Xs: np.ndarray, y1: np.ndarray, ndim: int, threads: Optional[int] = None,
            w: Optional[np.ndarray] = None) -> np.ndarray:
    """R's start on the scaled data: V0 as given (a matrix, or a function of
    (Xs, y, ndim) with y 1-based, as R's OPNB calls it), else the leading
    ndim eigenvectors of cov(Xs) (weighted with ``w``); ``V0="R"`` computes
    those in R itself (through rpy2), with the signs of the LAPACK that R
    links (unweighted only)."""
    d = Xs.shape[1]
    if isinstance(V0, str):
        if V0 != "R":
            raise ValueError(f"V0 must be None, \"R\" (R's own start, through rpy2), a matrix or a function; "
                             f"got {V0!r}")
        if w is not None:
            raise ValueError("V0=\"R\" is R's unweighted start: give weights with V0=None (the weighted "
                             "covariance's eigenvectors) or a V0 of your own")
        from .rinterop import r_eigen_start

        return r_eigen_start(Xs, ndim)
    if V0 is None:
        # the first ndim eigenvectors of R's cov(Xs), by decreasing eigenvalue,
        # as R's eigen computes them with reference LAPACK: their signs decide
        # where R's binned fits go (its objective tells a column's signs apart)
        thr = _threads.resolve(threads)
        Xs = np.ascontiguousarray(Xs)
        C = colstats.r_cov(Xs, thr) if w is None else weighted_cov(Xs - weighted_colmeans(Xs, w, thr), w, thr)
        vals, vecs = _eigen.r_eigen(C)
        return np.ascontiguousarray(vecs[:, :ndim])
    out = V0(Xs, y1, ndim) if callable(V0) else V0
    V = np.asarray(out, dtype=np.float64)
    if V.ndim == 1 and ndim == 1:
        V = V.reshape(-1, 1)
    if V.shape != (d, ndim):
        # R: "V0 must be a function which returns a matrix with ncol(X) rows and ndim columns"
        raise ValueError(f"V0 must be a function which returns a matrix with ncol(X) = {d} rows "
                         f"and ndim = {ndim} columns; got shape {V.shape}")
    if not np.all(np.isfinite(V)):
        raise ValueError("V0 returned NaN or infinite values")
    return np.ascontiguousarray(V)



def class_priors(codes: np.ndarray, K: int, PI: Optional[np.ndarray] = None,
                 w: Optional[np.ndarray] = None) -> np.ndarray:
    """The priors of a fit: ``PI`` where the caller gave them, else R's, the
    class proportions n_k / n of the codes 0..K-1 (with the points' weights
    ``w``, the weight proportions W_k / W)."""
    if PI is not None:
        return PI
    if w is not None:
        return class_totals(codes, K, w) / math.fsum(w)
    return np.bincount(codes, minlength=K) / codes.size


class Formulation:
    """What every formulation provides to the fit driver.

    ``name``: its registry name. ``params``: its parameters and their
    defaults (the estimator and the command line refuse another
    formulation's).
    """

    name: ClassVar[str]
    params: ClassVar[Dict[str, Any]]

    def setup(self, Xa: np.ndarray, codes: np.ndarray, levels: np.ndarray, ndim: int,
              names: Optional[Tuple[str, ...]] = None, nbin: Optional[int] = 1000,
              threads: Optional[int] = None, PI: Optional[np.ndarray] = None,
              w: Optional[np.ndarray] = None) -> Setup:
        """The data as optimised, the start V, the evaluator of l bound to
        the problem, ``nbin`` (None: exact sums) and ``threads``, and the
        penalty. ``w``: the rows' weights, positive (:mod:`pyopnb.weights`;
        None: unweighted). ``PI``: the class priors in the order of ``levels``,
        validated (None: the class proportions, :func:`class_priors`)."""
        raise NotImplementedError

    def evaluator(self, problem: Problem, nbin: Optional[int], threads: int) -> Evaluator:
        """The formulation's l on ``problem`` (no penalty), made once per fit."""
        raise NotImplementedError

    def check_parts(self) -> None:
        """Whether the formulation is fitted on rows in parts
        (:meth:`part_setup`); a ValueError saying why not."""
        raise ValueError(f"the {self.name!r} formulation is not fitted on rows in parts: its binned objective "
                         f"has no passes over parts (R's, the paper's and the journal's do)")

    def part_setup(self, parts: Any, n: int, d: int, counts: np.ndarray, levels: np.ndarray, ndim: int,
                   V0: Any = None, names: Optional[Tuple[str, ...]] = None, threads: int = 1,
                   block_len: Optional[int] = None) -> PartSetup:
        """:meth:`setup` on rows held in parts (``pyopnb.part_stats.PartRows``:
        n rows of d columns, ``counts`` of each class, in the order of
        ``levels``), to the bit: V0 None (the formulation's start) or a
        (d, ndim) matrix; ``block_len`` the rows of n's blocks
        (``pyopnb.parts.BlockLayout``)."""
        self.check_parts()
        raise NotImplementedError

    def final_columns(self, V: np.ndarray, norms: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """The optimum's columns and norms as the model takes them: V's own."""
        return V, norms

    def gradient_defect(self, nbin: Optional[int], PI: np.ndarray) -> Optional[str]:
        """Why this formulation's gradient of l is not the derivative of its
        value on a problem with priors ``PI`` and ``nbin`` bins (None: exact
        sums), for the gradient checks (:mod:`pyopnb.testing`) to say; None
        where it is, as it is for every formulation but R's."""
        return None

    def convergence_note(self, code: int, nbin: Optional[int], maxit: int = 100,
                         words: Optional[Dict[str, Optional[str]]] = None) -> Optional[str]:
        """What L-BFGS-B's outcome (R's optim code) says of a fit, for a
        warning; None where it is the formulation's normal outcome. ``words``
        names the settings as the caller knows them (PYTHON_WORDS, or the
        command line's flags)."""
        words = _words(words)
        if code == 0:
            return None
        if code == 1:
            return (f"L-BFGS-B stopped at its iteration limit, {words['maxit']} = {maxit} (convergence code 1, as R's "
                    f"optim reports it): the projection may not be an optimum yet. Give a larger {words['maxit']}.")
        return ("L-BFGS-B stopped because its line search failed (convergence code 52, as R's optim reports it): "
                "the projection may not be a local optimum. Try " + self.advice(nbin, words) + ".")

    def advice(self, nbin: Optional[int], words: Optional[Dict[str, Optional[str]]] = None) -> str:
        """What to try when the optimiser did not end well, in the caller's words."""
        return _suggest(self._remedies(nbin), _words(words))

    def _remedies(self, nbin: Optional[int]) -> List[str]:
        return ([] if nbin is None else ["nbin", "exact"]) + ["V0"]

    def collapse_cause(self, words: Optional[Dict[str, Optional[str]]] = None) -> str:
        """Why a fit's posteriors may all be the priors, and what to change
        in the caller's words (as :meth:`advice`), for the warning that says
        so."""
        return "the projection separates no class here. Try " + _suggest(["V0", "ndim"], _words(words))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{f.name}={getattr(self, f.name)!r}' for f in fields(self))})"


# how a setting is named in a remedy: Python's arguments (the command line has its own flags)
PYTHON_WORDS: Dict[str, Optional[str]] = {"lam": "lam", "nbin": "nbin", "exact": "nbin=None", "gamma": "gamma",
                                          "V0": "V0", "maxit": "maxit", "ndim": "ndim"}
_REMEDY = {"lam": "a larger {}", "nbin": "more bins ({})", "exact": "exact sums ({})", "gamma": "another {}",
           "V0": "another start {}", "ndim": "more columns ({})"}


def _inherits(form: Formulation, cls: type, *methods: str) -> bool:
    """Whether ``form``'s class takes ``methods`` from ``cls`` as they are."""
    return all(getattr(type(form), m) is getattr(cls, m) for m in methods)


def _words(words: Optional[Dict[str, Optional[str]]]) -> Dict[str, Optional[str]]:
    return PYTHON_WORDS if words is None else words


def _suggest(keys: List[str], words: Dict[str, Optional[str]]) -> str:
    """'a, b or c' of the remedies that the caller can name (words[key] not None)."""
    items = [_REMEDY[k].format(words[k]) for k in keys if words.get(k)]
    if not items:
        return "other settings"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def greedy_order(ndim: int, score: Callable[[List[int], int], float]) -> List[int]:
    """Forward selection of columns: each step adds the column j whose
    ``score(chosen, j)`` is largest (the first of equal ones); R's greedy
    order with a score of one candidate at a time (as OPGD's)."""
    return greedy(ndim, lambda chosen, remaining: [score(chosen, j) for j in remaining])


@dataclass(repr=False)
class PenalisedFormulation(Formulation):
    """R OPNB 1.0's penalised formulation without its choice of objective:
    R's scaling, start and penalty (see :func:`pyopnb.OPNB`), shared by
    ``RFormulation`` and ``CorrectFormulation``."""

    lam: float = 1e-3
    V0: Any = None
    C: Optional[Callable] = None
    scale: bool = True

    params: ClassVar[Dict[str, Any]] = {"lam": 1e-3, "scale": True, "C": None, "V0": None}

    def __post_init__(self) -> None:
        self.lam = check_lam(self.lam)
        if not isinstance(self.scale, (bool, np.bool_)):
            raise ValueError(f"scale must be True or False, got {label_text(self.scale)}")

    def setup(self, Xa: np.ndarray, codes: np.ndarray, levels: np.ndarray, ndim: int,
              names: Optional[Tuple[str, ...]] = None, nbin: Optional[int] = 1000,
              threads: Optional[int] = None, PI: Optional[np.ndarray] = None,
              w: Optional[np.ndarray] = None) -> Setup:
        thr = _threads.resolve(threads)
        K = levels.size
        mu, scales, Xs = r_standardise(Xa, self.scale, names, thr, w)
        problem = check_problem(Xs, codes.astype(np.int32), class_priors(codes, K, PI, w),
                                self.bandwidths(Xs, codes, K, thr), w)
        y1 = codes + 1
        V = r_start(self.V0, Xs, y1, ndim, thr, w)
        pen, dpen = _penalty(self.C, Xs, y1, Xs.shape[1])
        return Setup(mu, scales, None, self.evaluator(problem, nbin, thr), V, self.lam, pen, dpen)

    def bandwidths(self, Xs: np.ndarray, codes: np.ndarray, K: int, threads: int) -> np.ndarray:
        """The classes' bandwidths on the scaled data Xs (codes 0-based): R's,
        1 for every class. A formulation of one's own may choose others."""
        return np.ones(K)

    def check_parts(self) -> None:
        if self._on_parts() is None:
            super().check_parts()
        if self.C is not None or self.V0 is not None:
            raise ValueError("a fit on rows in parts takes R's ridge penalty (C None) and V0 as its argument")

    def part_setup(self, parts: Any, n: int, d: int, counts: np.ndarray, levels: np.ndarray, ndim: int,
                   V0: Any = None, names: Optional[Tuple[str, ...]] = None, threads: int = 1,
                   block_len: Optional[int] = None) -> PartSetup:
        """:meth:`setup`'s steps on the parts: R's scaling and start (or V0), bandwidths 1, R's ridge penalty."""
        from . import part_stats

        self.check_parts()
        mu, scales = part_stats.r_scaling(parts, n, d, self.scale, names)
        if not np.any(scales) and self.scale:
            raise ValueError("no column of X varies (every column is constant): there is nothing to project")
        rows = part_stats.RowMap(mu, scales)
        V = part_stats.r_start(parts, n, d, ndim, rows) if V0 is None else given_start(V0, d, ndim)
        pen, dpen = _penalty(None, np.empty((0, d)), np.empty(0), d)
        h = self.bandwidths(np.empty((0, d)), np.empty(0), len(levels), threads)
        objective, key, r_defects = self._on_parts()  # type: ignore[misc]
        return PartSetup(mu, scales, None, rows, V, h, self.lam, pen, dpen, objective, key, r_defects)

    def _on_parts(self) -> Optional[Tuple[Any, Tuple[Any, ...], Optional[bool]]]:
        """The objective over the parts, the settings that fix the fit's
        path (a checkpoint's key), and R's keep-the-start rule (None: none);
        None where there is no such objective (a subclass's own l or
        bandwidths: the parts' passes are the built-in objectives')."""
        return None

    def _remedies(self, nbin: Optional[int]) -> List[str]:
        return ["lam"] + super()._remedies(nbin)

    def collapse_cause(self, words: Optional[Dict[str, Optional[str]]] = None) -> str:
        lam = _words(words)["lam"]
        return (f"{lam} = {self.lam:g} dominates the likelihood: the penalty lam * ||V||^2 shrinks V until the "
                f"projected points of every class lie within a bandwidth of each other. Give a smaller {lam} "
                f"(OPNB_CV_lam chooses one by cross-validation)")


@dataclass(repr=False)
class RFormulation(PenalisedFormulation):
    """R OPNB 1.0's formulation (see :func:`pyopnb.OPNB`).

    ``r_defects``: where R's gradient sums would not be finite at an
    evaluated V (:mod:`pyopnb.r_failures`), R's OPNB stops and keeps its
    start; True does so too, False (the default) goes on and warns.
    """

    name: ClassVar[str] = "R"
    r_defects: bool = False

    params: ClassVar[Dict[str, Any]] = {**PenalisedFormulation.params, "r_defects": False}

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.r_defects, (bool, np.bool_)):
            raise ValueError(f"r_defects must be True or False, got {label_text(self.r_defects)}")

    def setup(self, Xa: np.ndarray, codes: np.ndarray, levels: np.ndarray, ndim: int,
              names: Optional[Tuple[str, ...]] = None, nbin: Optional[int] = 1000,
              threads: Optional[int] = None, PI: Optional[np.ndarray] = None,
              w: Optional[np.ndarray] = None) -> Setup:
        st = super().setup(Xa, codes, levels, ndim, names, nbin, threads, PI, w)
        problem, thr = st.problem, _threads.resolve(threads)
        # a column's projected spread is at most sum_j |V_jt| ptp(X_j): below the underflow, no projection is needed
        spreads = colstats.col_ranges(np.ascontiguousarray(problem.X, dtype=np.float64))
        reach = R_UNDERFLOW * float(np.min(problem.h))

        def r_failure(V: np.ndarray) -> Optional[RFailure]:
            if np.all(np.abs(V).T @ spreads <= reach):
                return None
            return r_gradient_failure(_linalg.matmul(problem.X, V, thr), problem.y0, problem.h, nbin)

        st.r_failure = r_failure
        st.r_defects = bool(self.r_defects)
        return st

    def _on_parts(self) -> Optional[Tuple[Any, Tuple[Any, ...], Optional[bool]]]:
        from .parts import R_GRID

        if not _inherits(self, RFormulation, "evaluator", "bandwidths"):
            return None
        return R_GRID, (self.lam, self.scale), bool(self.r_defects)

    def evaluator(self, problem: Problem, nbin: Optional[int], threads: int) -> Evaluator:
        """R's l: exact sums with R's squared priors in the value, or R's
        binned f_NB_cpp / df_NB_cpp (densities read at each point's grid
        point; the gradient is not the value's derivative)."""
        core = exact_passes(problem, threads, squared_priors=True) if nbin is None else r_grid(problem, nbin, threads)
        return Evaluator(problem, core, nbin, threads)

    def gradient_defect(self, nbin: Optional[int], PI: np.ndarray) -> Optional[str]:
        """R's defects, kept for R's numbers: binned, the gradient is never
        the value's derivative; exact, only where the priors are equal."""
        if nbin is not None:
            return ("R's binned gradient (df_NB_cpp, compat='R') is not the derivative of R's binned value "
                    "(f_NB_cpp): it bins simply and differentiates at the grid points, while the value bins "
                    "linearly and reads each point's grid point. This is R OPNB 1.0's defect, kept for R's "
                    "numbers; the 'correct' formulation's binned gradient is the derivative of its value")
        if np.ptp(np.asarray(PI, dtype=np.float64)) == 0:
            return None
        return ("R's exact value (f_NB_exact, compat='R') multiplies by the priors twice and its gradient "
                "(df_NB_exact) once, so the gradient is the value's derivative only when every class has the "
                "same prior. This is R OPNB 1.0's defect, kept for R's numbers; the 'correct' formulation "
                "counts the priors once in both")

    def convergence_note(self, code: int, nbin: Optional[int], maxit: int = 100,
                         words: Optional[Dict[str, Optional[str]]] = None) -> Optional[str]:
        # R's binned gradient is not the derivative of its binned value: a
        # line search that cannot progress is its normal end, as in R's OPNB
        if code == 52 and nbin is not None:
            return None
        return super().convergence_note(code, nbin, maxit, words)


@dataclass(repr=False)
class CorrectFormulation(PenalisedFormulation):
    """R's formulation (scaling, start, penalty) with the paper's objective:
    priors counted once, and binned, linear binning with each point's
    density summed from the binned weights and its exact gradient."""

    name: ClassVar[str] = "correct"

    def _on_parts(self) -> Optional[Tuple[Any, Tuple[Any, ...], Optional[bool]]]:
        from .parts import LINEAR_GRID

        if not _inherits(self, CorrectFormulation, "evaluator", "bandwidths"):
            return None
        return LINEAR_GRID, (self.name, self.lam, self.scale), None

    def evaluator(self, problem: Problem, nbin: Optional[int], threads: int) -> Evaluator:
        """The paper's l, exact or linearly binned, with its exact gradient."""
        core = exact_passes(problem, threads) if nbin is None else linear_passes(problem, nbin, threads)
        return Evaluator(problem, core, nbin, threads)


@dataclass(repr=False)
class JournalFormulation(Formulation):
    """The published OPNB (see :func:`pyopnb.opnb_journal`)."""

    gamma: float = 1.0
    prescale: bool = False
    V0: Any = None

    name: ClassVar[str] = "journal"
    params: ClassVar[Dict[str, Any]] = {"gamma": 1.0, "prescale": False, "V0": None}

    def __post_init__(self) -> None:
        self.gamma = as_positive_scalar(self.gamma, "gamma")
        if not isinstance(self.prescale, (bool, np.bool_)):
            raise ValueError(f"prescale must be True or False, got {label_text(self.prescale)}")

    def setup(self, Xa: np.ndarray, codes: np.ndarray, levels: np.ndarray, ndim: int,
              names: Optional[Tuple[str, ...]] = None, nbin: Optional[int] = 1000,
              threads: Optional[int] = None, PI: Optional[np.ndarray] = None,
              w: Optional[np.ndarray] = None) -> Setup:
        thr = _threads.resolve(threads)
        K = levels.size
        # The rows in one order whatever order they came in: a sum's last bits
        # depend on its order, and the binned objective's L-BFGS-B path turns
        # such bits into another end point (a shuffled 1500 x 10 set ended
        # 7.6e-7 away in fval, its posteriors 0.003 apart). R's formulation
        # keeps the caller's order, as R sums in it.
        order = canonical_order(Xa, codes)
        Xa, codes = np.ascontiguousarray(Xa[order]), np.ascontiguousarray(codes[order])
        if w is not None:
            w = np.ascontiguousarray(w[order])
        # the paper's protocol: each variable over its training sd (constant ones zeroed)
        mu, scales, Xs = r_standardise(Xa, True, names, thr, w)
        prescale = None
        if self.prescale:
            prescale, _ = inv_sqrt(within_between(Xs, codes, K, thr, w)[0])
            Xs = _linalg.matmul(Xs, prescale, thr)
        h = journal_bandwidths(Xs, codes, K, self.gamma, levels, thr, w)
        problem = check_problem(Xs, codes.astype(np.int32), class_priors(codes, K, PI, w), h, w)
        if self.V0 is None:
            V = lda_start(Xs, codes, K, ndim, thr, w)
        else:
            V = r_start(self.V0, Xs, codes + 1, ndim, thr, w)
        return Setup(mu, scales, prescale, self.evaluator(problem, nbin, thr), V, 0.0, None, None)

    def check_parts(self) -> None:
        if not _inherits(self, JournalFormulation, "evaluator", "final_columns"):
            super().check_parts()
        if self.V0 is not None:
            raise ValueError("a fit on rows in parts takes V0 as its argument")

    def part_setup(self, parts: Any, n: int, d: int, counts: np.ndarray, levels: np.ndarray, ndim: int,
                   V0: Any = None, names: Optional[Tuple[str, ...]] = None, threads: int = 1,
                   block_len: Optional[int] = None) -> PartSetup:
        """:meth:`setup`'s steps on the parts, the rows in the order given
        (a fit on parts sorts them first, as :func:`canonical_order`)."""
        from . import part_stats
        from .parts import JOURNAL_GRID, BlockLayout

        self.check_parts()
        B = BlockLayout(n).block_len if block_len is None else block_len
        counts = np.asarray(counts, dtype=np.int64)
        mu, scales = part_stats.r_scaling(parts, n, d, True, names)
        rows = part_stats.RowMap(mu, scales)
        prescale = None
        if self.prescale:
            prescale, _ = inv_sqrt(part_stats.within_between(parts, n, d, counts, rows, B, threads)[0])
            rows = part_stats.RowMap(mu, scales, prescale)
        p = int(np.sum(part_stats.r_var(parts, n, d, rows) > 0)) if n > 1 else 0
        h = bandwidths_from(p or d, counts,
                            lambda k: colstats.r_sum(part_stats.r_var(parts, int(counts[k]), d, rows.of_class(k))),
                            self.gamma, levels)
        if V0 is None:
            V = part_stats.lda_start(parts, n, d, counts, ndim, rows, B, threads)
        else:
            V = given_start(V0, d, ndim)
        return PartSetup(mu, scales, prescale, rows, V, h, 0.0, None, None, JOURNAL_GRID,
                         (self.name, self.gamma, bool(self.prescale), h))

    def evaluator(self, problem: Problem, nbin: Optional[int], threads: int) -> Evaluator:
        """l(V-bar), V's columns normalised, and its gradient in V: exact
        sums, or each column's class log densities on its grid interpolated
        at the points (a value that moves smoothly with z)."""
        core = exact_passes(problem, threads) if nbin is None else interp_grid(problem, nbin, threads)
        return NormalisedEvaluator(problem, core, nbin, threads)

    def final_columns(self, V: np.ndarray, norms: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """The value is V-bar's: the model (and the greedy order) takes unit columns."""
        return V / norms, np.ones_like(norms)

    def _remedies(self, nbin: Optional[int]) -> List[str]:
        return ([] if nbin is None else ["nbin", "exact"]) + ["gamma", "V0"]

    def collapse_cause(self, words: Optional[Dict[str, Optional[str]]] = None) -> str:
        w = _words(words)
        return (f"the projection separates no class at {w['gamma']} = {self.gamma:g}. Try a smaller {w['gamma']}, "
                + _suggest(["V0", "ndim"], w))


FORMULATIONS: Dict[str, type] = {f.name: f for f in (RFormulation, CorrectFormulation, JournalFormulation)}


def register(cls: type) -> type:
    """Register a formulation class under its ``name``, for
    :func:`formulation` and ``OPNBClassifier(formulation=name)``; usable
    as a class decorator. Registering a class again is a
    no-op; another class under a name already taken is an error."""
    if not (isinstance(cls, type) and issubclass(cls, Formulation)):
        raise TypeError(f"register takes a subclass of pyopnb.formulation.Formulation, got {label_text(cls)}")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ValueError(f"{cls.__name__} needs a class attribute name, a non-empty string, to be registered")
    if not isinstance(getattr(cls, "params", None), dict):
        raise ValueError(f"{cls.__name__} needs a class attribute params, a dict of its parameters and defaults")
    known = FORMULATIONS.get(name)
    if known is not None and known is not cls:
        raise ValueError(f"the name {name!r} is taken by {known.__module__}.{known.__qualname__}: give "
                         f"{cls.__name__} another name")
    FORMULATIONS[name] = cls
    return cls


def corrected(name: str) -> str:
    """The formulation that the deprecated flag ``correct=True`` selects
    beside ``name``: R's formulation with the paper's objective."""
    if FORMULATIONS.get(name) is RFormulation:
        return CorrectFormulation.name
    raise ValueError(f"correct=True belongs to formulation {RFormulation.name!r} (it is formulation="
                     f"{CorrectFormulation.name!r}), not {label_text(name)}")


def formulation(name: str, *, words: Optional[Dict[str, str]] = None, **params: Any) -> Formulation:
    """The formulation registered as ``name``, built with ``params``; a
    parameter of another formulation is an error that says whose it is.

    ``words`` names the parameters (and ``"formulation"``) as the caller
    knows them, the command line's flags: the error then names those, and
    lists only the parameters the caller can give."""
    if name not in FORMULATIONS:
        raise ValueError(f"formulation must be one of {', '.join(map(repr, FORMULATIONS))}, got {label_text(name)}")
    cls = FORMULATIONS[name]
    if words is not None:
        foreign = [k for k in params if k not in cls.params]
        if foreign:
            takes = ", ".join(w for k, w in words.items() if k in cls.params) or "none of these"
            verb = "belongs" if len(foreign) == 1 else "belong"
            raise ValueError(f"{' and '.join(words[k] for k in foreign)} {verb} to another formulation: "
                             f"{words['formulation']} {name} takes {takes}")
    foreign = sorted(k for k in params if k not in cls.params)
    if foreign:
        owners = {k: [n for n, c in FORMULATIONS.items() if k in c.params] for k in foreign}
        said = "; ".join(f"{k} belongs to formulation {' and '.join(map(repr, o))}" if o else f"{k} is no parameter"
                         for k, o in owners.items())
        raise ValueError(f"{said}: formulation {name!r} takes {', '.join(sorted(cls.params))}")
    return cls(**params)
