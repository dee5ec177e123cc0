"""The classifiers the OPNB papers compare OPNB with, as scikit-learn estimators.

``KernelNB`` (naive Bayes with kernel density marginals), ``CCICA``
(class-conditional ICA with kernel naive Bayes), ``KDDA`` (kernel density
discriminant analysis), ``LDA`` (linear discriminant analysis on a chosen
number of discriminant directions), ``RDA`` (regularised discriminant
analysis), ``OPGD`` (optimal projections for Gaussian discriminants, as its
authors' R package) and ``SelectiveNB`` (Boulle's selective naive Bayes with
MODL preprocessing and model averaging). QDA, the SVM and scikit-learn's
naive Bayes classifiers are used as they are. The study's list of methods
with their grids is :data:`pyopnb.study.methods.METHODS`.
"""
from typing import Any

from ._ccica import CCICA
from ._kdda import KDDA
from ._kernel_nb import KernelNB
from ._lda import LDA
from ._opgd import OPGD
from ._rda import RDA
from ._snb import SelectiveNB

__all__ = ["KernelNB", "CCICA", "KDDA", "LDA", "RDA", "OPGD", "SelectiveNB"]


def __getattr__(name: str) -> Any:
    if name in ("METHODS", "Method"):
        # the library does not reach into the experiment: the study's registry lives with the study
        raise AttributeError(f"pyopnb.comparators.{name} has moved: use pyopnb.study.methods.{name}")
    raise AttributeError(f"module 'pyopnb.comparators' has no attribute {name!r}")
