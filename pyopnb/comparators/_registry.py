"""Every method of the papers' comparison with its parameter grid, so a study
can loop over them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List


@dataclass(frozen=True)
class Method:
    """A method of the comparison: ``make()`` gives an unfitted scikit-learn
    classifier, ``grid(p)`` its parameter grid for data with p features (as
    GridSearchCV's ``param_grid``), ``source`` where the method and the grid
    come from."""

    name: str
    make: Callable[[], Any]
    grid: Callable[[int], Dict[str, List[Any]]]
    source: str


_GAMMAS = [1 / 3, 1 / 2, 1.0, 2.0, 3.0]
_ALPHAS = [0.1, 0.2, 0.3, 0.4, 0.5]


def _ours(name: str, **kwargs: Any) -> Callable[[], Any]:
    """A factory of one of pyopnb's estimators (imported when first made)."""

    def make():
        from .. import comparators
        from ..estimator import OPNBClassifier

        cls = OPNBClassifier if name == "OPNBClassifier" else getattr(comparators, name)
        return cls(**kwargs)

    return make


def _sklearn(name: str, **kwargs: Any) -> Callable[[], Any]:
    def make():
        import sklearn.discriminant_analysis as da
        import sklearn.naive_bayes as nb
        import sklearn.svm as svm

        for mod in (da, nb, svm):
            if hasattr(mod, name):
                return getattr(mod, name)(**kwargs)
        raise ValueError(name)  # pragma: no cover - the names below exist

    return make


_JOURNAL = "the journal paper (Hofmeyr, Kamper and Melonas), section 4.2"
METHODS: Dict[str, Method] = {m.name: m for m in (
    Method("OPNB", _ours("OPNBClassifier"), lambda p: {"lam": [1e-4 * 2.0 ** i for i in range(10)]},
           "R OPNB 1.0's penalised formulation; lam over OPNB_CV_lam's default grid"),
    Method("OPNB-journal", _ours("OPNBClassifier", formulation="journal"),
           lambda p: {"gamma": _GAMMAS, "ndim": list(range(1, min(p, 20) + 1))}, _JOURNAL + " item 8"),
    Method("NB", _ours("KernelNB"), lambda p: {"gamma": _GAMMAS, "alpha": _ALPHAS}, _JOURNAL + " item 1"),
    Method("CCICA", _ours("CCICA"), lambda p: {"n_components": list(range(1, min(p, 20) + 1)), "gamma": _GAMMAS},
           _JOURNAL + " item 2"),
    Method("KDDA", _ours("KDDA"), lambda p: {"gamma": _GAMMAS, "alpha": _ALPHAS}, _JOURNAL + " item 3"),
    Method("LDA", _sklearn("LinearDiscriminantAnalysis", solver="eigen"), lambda p: {},
           _JOURNAL + " item 4 (scikit-learn's LDA on all discriminant directions; the paper also tuned "
                      "their number)"),
    Method("OPGD", _ours("OPGD", reg=1e-6), lambda p: {"ndim": list(range(1, min(p, 20) + 1))},
           _JOURNAL + " item 6; a ridge of 1e-6 of the mean variance keeps classes with fewer rows than ndim"),
    Method("RDA", _ours("RDA", reg=1e-6), lambda p: {"lam": [round(0.1 * i, 1) for i in range(1, 11)]},
           _JOURNAL + " item 5; a ridge of 1e-6 of the mean variance keeps classes with fewer rows than features"),
    Method("QDA", _sklearn("QuadraticDiscriminantAnalysis"), lambda p: {},
           "scikit-learn's QDA, a generative classifier the papers do not tune"),
    Method("SVM", _sklearn("SVC", kernel="rbf"),
           lambda p: {"gamma": [2.0 ** (2 * i + 1) for i in range(-8, 2)],
                      "C": [2.0 ** (2 * i + 1) for i in range(-3, 8)]}, _JOURNAL + " item 7 (libsvm's grid)"),
    Method("SelectiveNB", _ours("SelectiveNB"), lambda p: {"averaging": ["MAP", "BMA", "CMA"]},
           "Boullé, Compression-based averaging of selective naive Bayes classifiers (SNB(MAP), SNB(BMA), SNB(CMA))"),
    Method("GaussianNB", _sklearn("GaussianNB"), lambda p: {},
           "scikit-learn's GaussianNB"),
    Method("CategoricalNB", _sklearn("CategoricalNB", alpha=1.0), lambda p: {},
           "scikit-learn's CategoricalNB, Laplace smoothing (alpha = 1); features must be non-negative "
           "integer codes"),
    Method("MultinomialNB", _sklearn("MultinomialNB", alpha=1.0), lambda p: {},
           "scikit-learn's MultinomialNB, Laplace smoothing (alpha = 1); features must be non-negative counts"),
)}
