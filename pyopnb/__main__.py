"""``pyopnb demo`` (or ``python -m pyopnb``): the main job on built-in data (Pima, from R's MASS).

Fits OPNB on the 200 training rows, reports test accuracy beside a plain
kernel Naive Bayes (:class:`pyopnb.comparators.KernelNB`: the same kernel
densities on the raw features, bandwidths by Silverman's rule), and writes
the projection plot to a PNG.
"""
from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from .comparators import KernelNB
from .datasets import load_pima
from .fitting import OPNB
from .model import CONVERGENCE, predict


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m pyopnb", description=__doc__.splitlines()[0])
    ap.add_argument("--png", default="opnb_pima.png", help="where to write the projection plot")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing --png (default: refuse it)")
    args = ap.parse_args()
    try:
        run_demo(args.png, overwrite=args.overwrite)
    except FileExistsError as exc:
        ap.exit(2, f"{ap.prog}: error: {exc}\n")


def run_demo(png: str, overwrite: bool = False) -> None:
    """The main job (also ``pyopnb demo``): fit, compare, and plot to ``png``,
    which must not exist unless ``overwrite``."""
    from .rio import atomic_path, refuse_existing

    if not overwrite:
        refuse_existing(png, "pass --overwrite")
    data = load_pima()
    print(f"Pima (R's MASS): {len(data.y_train)} training and {len(data.y_test)} test rows, "
          f"{len(data.feature_names)} features")
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        # said in the report line below instead
        warnings.simplefilter("ignore", RuntimeWarning)
        model = OPNB(data.X_train, data.y_train, ndim=2)
    fit_s = time.perf_counter() - t0
    pred = predict(model, data.X_test)["class"]
    acc = np.mean(pred == data.y_test)
    acc_nb = KernelNB().fit(data.X_train, data.y_train).score(data.X_test, data.y_test)
    print(f"OPNB, 2 projected dimensions (fit {fit_s:.2f} s, objective {model.fval:.4f}): "
          f"test accuracy {acc:.3f}")
    meaning = CONVERGENCE.get(model.convergence, "unknown")
    if model.convergence == 52:
        meaning += ": the normal end of R's binned objective, whose gradient is not its value's derivative"
    print(f"  L-BFGS-B ended with convergence code {model.convergence} ({meaning})")
    print(f"kernel Naive Bayes on the 7 raw features:           test accuracy {acc_nb:.3f}")
    top = np.argsort(-np.abs(model.V[:, 0] / model.scales.clip(min=1e-300)))[:3]
    print("first projection leans on: " + ", ".join(data.feature_names[j] for j in top))
    import matplotlib

    matplotlib.use("Agg")
    from .plot import plot

    ax = plot(model, data.X_test, add_cols=True, yte=data.y_test)
    with atomic_path(png, overwrite=overwrite) as tmp:
        ax.figure.savefig(tmp, format=Path(png).suffix.lstrip(".").lower() or "png", dpi=110, bbox_inches="tight")
    print(f"projection plot written to {png}")


if __name__ == "__main__":
    main()
