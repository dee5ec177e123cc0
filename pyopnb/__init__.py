"""pyopnb: Optimal Projections for Naive Bayes (Hofmeyr, Kamper and Melonas), ported from R."""
import os

# Before the compiled core loads OpenMP (libgomp reads this once, at load):
# between parallel regions libgomp's idle threads spin for 300000 rounds by
# default, milliseconds, and on shared or virtual CPUs that spinning took the
# time of the thread doing the work (a one-column fit ran 3.5 times slower,
# 0.67 s against 0.19 s at n = 2e4). A user's own setting wins.
os.environ.setdefault("GOMP_SPINCOUNT", "10000")

from .cv import OPNB_CV_lam, opnb_journal_cv  # noqa: E402
from .ksum import fk_sum, kernel_integral  # noqa: E402
from .model import OPNB, OPNBModel, opnb_journal, predict  # noqa: E402
from .rio import read_rds, write_rds  # noqa: E402

__version__ = "0.1.0"
__all__ = ["OPNB", "OPNBModel", "OPNB_CV_lam", "opnb_journal", "opnb_journal_cv", "fk_sum", "kernel_integral", "predict", "read_rds", "write_rds", "__version__"]
