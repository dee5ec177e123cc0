"""The classifiers the OPNB papers compare OPNB with, as scikit-learn estimators.

``KernelNB`` (naive Bayes with kernel density marginals), ``CCICA``
(class-conditional ICA with kernel naive Bayes), ``KDDA`` (kernel density
discriminant analysis) and ``RDA`` (regularised discriminant analysis) are
implemented here; LDA, QDA, the SVM and scikit-learn's naive
Bayes classifiers are used as they are. ``METHODS`` names every one with the
papers' parameter grid (see :class:`Method`).
"""
from ._ccica import CCICA
from ._kdda import KDDA
from ._kernel_nb import KernelNB
from ._rda import RDA
from ._registry import METHODS, Method

__all__ = ["KernelNB", "CCICA", "KDDA", "RDA", "METHODS", "Method"]
