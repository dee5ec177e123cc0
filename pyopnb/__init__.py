"""pyopnb: Optimal Projections for Naive Bayes (Hofmeyr, Kamper and Melonas), ported from R."""
from .ksum import fk_sum, kernel_integral

__version__ = "0.1.0"
__all__ = ["fk_sum", "kernel_integral", "__version__"]
