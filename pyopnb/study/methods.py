"""The study's methods: each with its estimator, the papers' parameter grid,
the quick profile's grid, and how the protocol tunes it.

The papers' comparison is the journal paper's section 4.2; ``source`` says
where each method and grid come from. A new method is one entry here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from sklearn.discriminant_analysis import QuadraticDiscriminantAnalysis
from sklearn.naive_bayes import CategoricalNB, GaussianNB, MultinomialNB
from sklearn.svm import SVC

from ..comparators import CCICA, KDDA, LDA, OPGD, RDA, KernelNB, SelectiveNB
from ..estimator import OPNBClassifier

__all__ = ["Method", "METHODS", "DEFAULT_METHODS", "ndim_path"]

Grid = Callable[[int, int], Dict[str, List[Any]]]


@dataclass(frozen=True)
class Method:
    """A method of the comparison.

    ``make()`` gives an unfitted scikit-learn classifier; ``grid(p, K)`` the
    papers' parameter grid for p features and K classes, ``quick(p, K)`` the
    quick profile's (GridSearchCV's ``param_grid``). ``path`` names a
    parameter whose values one fit at the largest serves, through the
    estimator's ``staged_predict`` (its first m columns are a model of m
    columns); ``path_in_quick`` and ``path_in_full`` say whether the quick
    and the full profile tune it that way (where the path gives what
    separate fits give) or by separate fits, as the paper did.
    ``takes_binary``: the estimator gets the preprocessing's one-hot columns
    as ``binary``.
    """

    name: str
    make: Callable[[], Any]
    grid: Grid
    quick: Grid
    source: str
    path: Optional[str] = None
    path_in_quick: bool = True
    path_in_full: bool = False
    takes_binary: bool = False


# OPNB-journal's and OPGD's ndim paths moved a set's quick-profile error by
# more than its split noise on 14 and 15 of 50 sets (results/study/paths.md):
# both profiles refit them at each ndim. LDA's path is its refits exactly.
GAMMAS = [1 / 3, 1 / 2, 1.0, 2.0, 3.0]
ALPHAS = [0.1, 0.2, 0.3, 0.4, 0.5]
QUICK_GAMMAS = [0.5, 1.0, 2.0]
QUICK_ALPHAS = [0.1, 0.3, 0.5]
MAX_NDIM = 20
_JOURNAL = "the journal paper (Hofmeyr, Kamper and Melonas), section 4.2"


def ndims(p: int) -> List[int]:
    """The papers' grid of projection dimensions: 1..min(p, 20)."""
    return list(range(1, min(p, MAX_NDIM) + 1))


def ndim_path(p: int) -> List[int]:
    """The quick profile's: 1, 2, 3, 5, 10, 20 up to min(p, 20), and min(p, 20) itself."""
    top = min(p, MAX_NDIM)
    return sorted({m for m in (1, 2, 3, 5, 10, 20) if m <= top} | {top})


def _fixed(**grid: List[Any]) -> Grid:
    return lambda p, K: dict(grid)


def _lda_components(p: int, K: int) -> Dict[str, List[int]]:
    return {"n_components": list(range(1, min(p, K - 1) + 1))}


METHODS: Dict[str, Method] = {m.name: m for m in (
    Method("OPNB", lambda: OPNBClassifier(), _fixed(lam=[1e-4 * 2.0 ** i for i in range(10)]),
           _fixed(lam=[1e-3, 1e-2]),
           "R OPNB 1.0's penalised formulation, ndim min(p, 20); lam over OPNB_CV_lam's default grid"),
    Method("OPNB-journal", lambda: OPNBClassifier(formulation="journal"),
           lambda p, K: {"gamma": GAMMAS, "ndim": ndims(p)},
           lambda p, K: {"gamma": QUICK_GAMMAS, "ndim": ndim_path(p)}, _JOURNAL + " item 8", path="ndim",
           path_in_quick=False),
    Method("NB", lambda: KernelNB(), _fixed(gamma=GAMMAS, alpha=ALPHAS), _fixed(gamma=QUICK_GAMMAS, alpha=QUICK_ALPHAS),
           _JOURNAL + " item 1: alpha on the one-hot columns, gamma times Silverman's rule on the rest",
           takes_binary=True),
    Method("CCICA", lambda: CCICA(), lambda p, K: {"n_components": ndims(p), "gamma": GAMMAS},
           lambda p, K: {"n_components": ndim_path(p), "gamma": [1.0]}, _JOURNAL + " item 2"),
    Method("KDDA", lambda: KDDA(), _fixed(gamma=GAMMAS, alpha=ALPHAS), _fixed(gamma=QUICK_GAMMAS, alpha=QUICK_ALPHAS),
           _JOURNAL + " item 3: alpha I on the one-hot columns", takes_binary=True),
    Method("LDA", lambda: LDA(), _lda_components, _lda_components,
           _JOURNAL + " item 4: the number of discriminant directions tuned over 1..min(p, K - 1); a pseudo-inverse "
                      "where the pooled covariance is singular", path="n_components", path_in_full=True),
    Method("OPGD", lambda: OPGD(reg=1e-6), lambda p, K: {"ndim": ndims(p)}, lambda p, K: {"ndim": ndim_path(p)},
           _JOURNAL + " item 6, as the authors' R package OPGD defines it; a ridge of 1e-6 of the mean variance "
                      "keeps classes with fewer rows than features", path="ndim", path_in_quick=False),
    Method("RDA", lambda: RDA(reg=1e-6), _fixed(lam=[round(0.1 * i, 1) for i in range(1, 11)]),
           _fixed(lam=[0.2, 0.6, 1.0]),
           _JOURNAL + " item 5; a ridge of 1e-6 of the mean variance keeps classes with fewer rows than features"),
    Method("QDA", lambda: QuadraticDiscriminantAnalysis(), _fixed(), _fixed(),
           "scikit-learn's QDA, a generative classifier the papers do not tune"),
    Method("SVM", lambda: SVC(kernel="rbf"),
           _fixed(gamma=[2.0 ** (2 * i + 1) for i in range(-8, 2)], C=[2.0 ** (2 * i + 1) for i in range(-3, 8)]),
           _fixed(gamma=[2.0 ** -7, 2.0 ** -3, 2.0], C=[0.5, 8.0, 128.0]), _JOURNAL + " item 7 (libsvm's grid)"),
    Method("SelectiveNB", lambda: SelectiveNB(), _fixed(averaging=["MAP", "BMA", "CMA"]),
           _fixed(averaging=["MAP", "BMA", "CMA"]),
           "Boullé, Compression-based averaging of selective naive Bayes classifiers (SNB(MAP), SNB(BMA), SNB(CMA))"),
    Method("GaussianNB", lambda: GaussianNB(), _fixed(), _fixed(), "scikit-learn's GaussianNB"),
    Method("CategoricalNB", lambda: CategoricalNB(alpha=1.0), _fixed(), _fixed(),
           "scikit-learn's CategoricalNB, Laplace smoothing (alpha = 1); features must be non-negative integer codes"),
    Method("MultinomialNB", lambda: MultinomialNB(alpha=1.0), _fixed(), _fixed(),
           "scikit-learn's MultinomialNB, Laplace smoothing (alpha = 1); features must be non-negative counts"),
)}

# the papers' comparison (the journal paper's section 4.2), OPNB in both formulations
DEFAULT_METHODS = ("OPNB", "OPNB-journal", "NB", "CCICA", "KDDA", "LDA", "RDA", "OPGD", "SVM", "SelectiveNB")
