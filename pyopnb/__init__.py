"""pyopnb: Optimal Projections for Naive Bayes (Hofmeyr, Kamper and Melonas), ported from R."""
from .cv import OPNB_CV_lam
from .ksum import fk_sum, kernel_integral
from .model import OPNB, OPNBModel, predict
from .rio import read_rds, write_rds

__version__ = "0.1.0"
__all__ = ["OPNB", "OPNBModel", "OPNB_CV_lam", "fk_sum", "kernel_integral", "predict", "read_rds", "write_rds", "__version__"]
