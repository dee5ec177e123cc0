"""What a profile of the study costs, estimated from timed fits.

Running the full profile on a set of 3000 rows and 300 columns takes days,
so its cost is measured from a sample of its fits: for each method, a few
settings spread over its grid (the grid's order, so every parameter's range
is met) are fitted on the first tuning fold's training rows and predict its
held-out rows, in CPU seconds on one thread; their mean times the fits one
split makes (each setting on each fold, and the refit) is the split's cost,
times the splits the profile's. ``python -m pyopnb.study.cost`` does this
for a size-stratified sample of the data sets and scales each stratum's set
up to the stratum, for the total over every set.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ..rio import atomic_path, refuse_existing
from .data import available, dataset_seed, load, preprocess
from .methods import DEFAULT_METHODS
from .protocol import grid, make_estimator, scaled, splits, tuning_plan

__all__ = ["method_cost", "stratified_sample", "effective_size"]


def method_cost(method: str, X: np.ndarray, y: np.ndarray, train: np.ndarray, inner: Sequence,
                binary: Optional[Sequence[int]], quick: bool, sample: int = 4) -> Dict[str, Any]:
    """One split's estimated CPU seconds for ``method`` (see the module):
    the fits timed, their mean, the fits a split makes, and the estimate."""
    from sklearn.base import clone

    Xs = scaled(X, train)
    Xtr, ytr = Xs[train], y[train]
    params = grid(method, X.shape[1], np.unique(ytr).size, quick)
    settings, _ = tuning_plan(method, params, quick)
    n_fits = len(settings) * len(inner) + 1
    picked = [settings[int(i)] for i in np.unique(np.linspace(0, len(settings) - 1, sample).round())] \
        if settings else [{k: v[0] for k, v in params.items()}]
    fit_rows, val_rows = inner[0]
    est = make_estimator(method, X.shape[1], binary)
    times, failed = [], 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for setting in picked:
            t0 = time.process_time()
            try:
                e = clone(est).set_params(**setting).fit(Xtr[fit_rows], ytr[fit_rows])
                e.predict(Xtr[val_rows])
            except (ValueError, np.linalg.LinAlgError, FloatingPointError):
                failed += 1
            times.append(time.process_time() - t0)
    mean = float(np.mean(times))
    return {"timed": len(picked), "failed": failed, "seconds_per_fit": mean, "fits": n_fits,
            "split_seconds": mean * n_fits}


def effective_size(name: str, folder: str | Path) -> int:
    """Rows times columns as the preprocessing caps them (3000 rows, 300
    columns; one-hot columns counted as given): the order the study runs
    sets in. From the folder's summary.tsv (PMLB's: dataset, n_instances,
    n_features) where it lists the set, else from the file."""
    import gzip

    summary = Path(folder) / "summary.tsv"
    if summary.is_file():
        for line in summary.read_text().splitlines()[1:]:
            cells = line.split("\t")
            if cells[0] == name:
                return min(int(cells[1]), 3000) * min(int(cells[2]), 300)
    path = Path(folder) / name / f"{name}.tsv.gz"
    with gzip.open(path, "rt") as fh:
        cols = len(fh.readline().rstrip("\n").split("\t")) - 1
        rows = sum(1 for _ in fh)
    return min(rows, 3000) * min(cols, 300)


def stratified_sample(names: Sequence[str], sizes: Sequence[int], k: int) -> List[Dict[str, Any]]:
    """k strata of consecutive sets by size, and each stratum's middle set:
    [{"set", "stratum": [names]}]."""
    order = [names[i] for i in np.argsort(np.asarray(sizes), kind="stable")]
    bounds = np.linspace(0, len(order), k + 1).round().astype(int)
    out = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        if b > a:
            stratum = order[a:b]
            out.append({"set": stratum[len(stratum) // 2], "stratum": stratum})
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pyopnb.study.cost", description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="a folder of PMLB data sets (NAME/NAME.tsv.gz)")
    ap.add_argument("--strata", type=int, default=8, help="size strata, one set timed in each (default 8)")
    ap.add_argument("--sample", type=int, default=4, help="settings timed per method (default 4)")
    ap.add_argument("--splits", type=int, default=10, help="the profile's splits (default 10)")
    ap.add_argument("--quick", action="store_true", help="the quick profile's grids instead of the full one's")
    ap.add_argument("--methods", help=f"comma-separated methods (default: {','.join(DEFAULT_METHODS)})")
    ap.add_argument("--out", help="write the tables here (markdown) as well; an existing file is refused")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing --out file (default: refuse it)")
    args = ap.parse_args(argv)
    if args.out and not args.overwrite:
        # before the timed fits, which take minutes
        try:
            refuse_existing(args.out, "pass --overwrite")
        except FileExistsError as exc:
            ap.error(f"--out {exc}")
    names = available(args.data)
    methods = args.methods.split(",") if args.methods else list(DEFAULT_METHODS)
    sizes = [effective_size(n, args.data) for n in names]
    plan = stratified_sample(names, sizes, args.strata)
    folds = 3 if args.quick else 5
    rows, totals = [], {m: 0.0 for m in methods}
    for entry in plan:
        name = entry["set"]
        X, y = load(name, args.data)
        X, y, info = preprocess(X, y, dataset_seed(name, 0))
        train, _, inner = splits(y, 1, folds, dataset_seed(name, 0) % (2 ** 31))[0]
        cost = {}
        for m in methods:
            c = method_cost(m, X, y, train, inner, info["binary"], args.quick, args.sample)
            cost[m] = c["split_seconds"] * args.splits
            totals[m] += cost[m] * len(entry["stratum"])
            print(f"  {name} {m}: {c['seconds_per_fit']:.3f} s a fit x {c['fits']} fits x {args.splits} splits "
                  f"= {cost[m] / 3600:.2f} CPU h", file=sys.stderr)
        rows.append((name, f"{X.shape[0]} x {X.shape[1]}", len(entry["stratum"]), cost))
    head = ["set (its stratum's middle)", "rows x columns", "sets in stratum", *methods, "all methods"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, shape, k, cost in rows:
        lines.append(f"| {name} | {shape} | {k} | " + " | ".join(f"{cost[m] / 3600:.2f}" for m in methods)
                     + f" | {sum(cost.values()) / 3600:.2f} |")
    total = sum(totals.values())
    lines.append(f"| all {len(names)} sets (each stratum as its set) | | {len(names)} | "
                 + " | ".join(f"{totals[m] / 3600:.1f}" for m in methods) + f" | {total / 3600:.1f} |")
    profile = "quick" if args.quick else "full"
    text = (f"CPU hours of the {profile} profile ({args.splits} splits), one thread, from {args.sample} timed fits "
            f"per method and set:\n\n" + "\n".join(lines) + "\n\nShares of the total: "
            + ", ".join(f"{m} {100 * totals[m] / total:.0f}%" for m in sorted(methods, key=lambda m: -totals[m]))
            + "\n")
    print(text)
    if args.out:
        with atomic_path(args.out, overwrite=args.overwrite, how="pass --overwrite") as tmp:
            tmp.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
