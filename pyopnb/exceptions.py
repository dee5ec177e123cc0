"""pyopnb's warnings."""
from __future__ import annotations

__all__ = ["ConvergenceWarning"]


class ConvergenceWarning(RuntimeWarning):
    """L-BFGS-B ended a fit without converging where that is not the
    formulation's normal end: the iteration limit (R's optim code 1) or a
    failed line search (code 52) with an exact gradient. R's binned
    objective ends with code 52 as a matter of course (its gradient is not
    the derivative of its binned value) and does not warn. The model's
    ``convergence`` keeps the code either way."""
