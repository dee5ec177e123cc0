"""The classifiers the OPNB papers compare OPNB with, as scikit-learn estimators.

``KernelNB`` (naive Bayes with kernel density marginals), ``CCICA``
(class-conditional ICA with kernel naive Bayes), ``KDDA`` (kernel density
discriminant analysis), ``RDA`` (regularised discriminant analysis) and
``OPGD`` (optimal projections for Gaussian discriminants) and ``SelectiveNB``
(Boulle's selective naive Bayes with MODL preprocessing and model averaging)
are implemented here; LDA, QDA, the SVM and scikit-learn's naive
Bayes classifiers are used as they are. ``METHODS`` names every one with the
papers' parameter grid (see :class:`Method`).
"""
from ._ccica import CCICA
from ._kdda import KDDA
from ._kernel_nb import KernelNB
from ._opgd import OPGD
from ._rda import RDA
from ._snb import SelectiveNB
from ._registry import METHODS, Method

__all__ = ["KernelNB", "CCICA", "KDDA", "RDA", "OPGD", "SelectiveNB", "METHODS", "Method"]
