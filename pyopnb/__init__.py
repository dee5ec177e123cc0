"""pyopnb: Optimal Projections for Naive Bayes (Hofmeyr, Kamper and Melonas), ported from R."""
import os
from importlib.util import find_spec as _find_spec

# Before the compiled core loads OpenMP (libgomp reads this once, at load):
# between parallel regions libgomp's idle threads spin for 300000 rounds by
# default, milliseconds, and on shared or virtual CPUs that spinning takes
# the time of the thread doing the work, between every two of a fit's many
# short parallel regions (measured in docs/benchmarks.md). A user's own
# setting wins.
os.environ.setdefault("GOMP_SPINCOUNT", "10000")

if _find_spec("pyopnb._ksum") is None:
    # Python found this source folder, whose compiled core is not built (a
    # plain `python` in the repository's root reads it before the installed
    # package): say so, rather than fail on the first compiled import
    raise ImportError(
        f"pyopnb's compiled core is not built in {os.path.dirname(os.path.abspath(__file__))}: this is the "
        f"source folder. Build it in place with `python -m pip install -e .` (or `python setup.py build_ext "
        f"--inplace`) in the repository's root, or run Python from another folder to use the installed pyopnb.")

from .cv import OPNB_CV_lam, opnb_journal_cv  # noqa: E402
from .display import OPNBDisplay  # noqa: E402
from .exceptions import CollapseWarning, ProjectionRangeWarning, RDefectWarning, RLabelsWarning  # noqa: E402
from .fitting import OPNB, opnb_journal  # noqa: E402
from .ksum import fk_sum, kernel_integral  # noqa: E402
from .model import OPNBModel, predict  # noqa: E402
# R's plot, bound over the submodule's name: imported here (it loads
# matplotlib only when it draws), because a lazy name is replaced by the
# submodule once anything imports pyopnb.plot
from .plot import plot  # noqa: E402
from .rio import read_json, read_model, read_rds, write_json, write_model, write_rds  # noqa: E402

__version__ = "0.1.0"
__all__ = ["OPNB", "OPNBModel", "OPNB_CV_lam", "OPNBClassifier", "OPNBDisplay", "CollapseWarning",
           "ConvergenceWarning", "ProjectionRangeWarning", "RDefectWarning", "RLabelsWarning", "opnb_journal",
           "opnb_journal_cv", "fk_sum", "kernel_integral", "plot", "predict", "read_json", "read_model", "read_rds",
           "write_json", "write_model", "write_rds", "__version__"]


def __getattr__(name: str):
    # scikit-learn loads only when the estimator or the warning's class is asked for
    if name == "ConvergenceWarning":
        from .exceptions import convergence_warning

        return convergence_warning()
    if name == "OPNBClassifier":
        from .estimator import OPNBClassifier

        return OPNBClassifier
    raise AttributeError(f"module 'pyopnb' has no attribute {name!r}")
