"""The ``pyopnb`` command: fit, predict and plot from CSV files.

    pyopnb fit train.csv --target y [--ndim 3 --lam 1e-3 --nbin 1000 | --exact] [--no-scale] --out model.rds
    pyopnb predict model.rds test.csv [--proba] --out predictions.csv
    pyopnb plot model.rds [--data test.csv] --out projection.png

CSV files have a header row. Non-numeric feature columns are one-hot encoded
(said on stderr); the encoded columns are named ``column=level`` and kept
with the model, so test files are encoded the same way. Models are .rds
(readable by R's readRDS and predict.OPNB) or .json. Nothing is written when
a command fails. Exit codes: 0 done, 2 bad input or usage.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import numpy as np

_SEP = "="


class CLIError(Exception):
    """A problem with the user's input: reported as 'pyopnb: error: ...', exit code 2."""


def _read_csv(path: str):
    import pandas as pd

    p = Path(path)
    if not p.is_file():
        raise CLIError(f"{path}: no such file")
    try:
        df = pd.read_csv(p)
    except Exception as exc:  # pandas raises several kinds for bad CSV
        raise CLIError(f"{path}: cannot read as CSV ({type(exc).__name__}: {exc})") from None
    if df.shape[0] == 0 or df.shape[1] == 0:
        raise CLIError(f"{path}: no data rows")
    return df


def _encode(df, path: str, known: Optional[Sequence[str]] = None) -> Tuple[np.ndarray, List[str]]:
    """Numeric matrix and column names; text columns one-hot encoded as column=level."""
    import pandas as pd

    parts, names, encoded = [], [], []
    for col in df.columns:
        s = df[col]
        if pd.api.types.is_bool_dtype(s):
            s = s.astype(float)
        if pd.api.types.is_numeric_dtype(s):
            parts.append(s.to_numpy(dtype=float)[:, None])
            names.append(str(col))
            continue
        if s.isna().any():
            raise CLIError(f"{path}: column {col!r} has missing values")
        levels = sorted(s.astype(str).unique())
        if known is not None:
            seen = {n.split(_SEP, 1)[1] for n in known if n.startswith(f"{col}{_SEP}")}
            if not seen:
                raise CLIError(f"{path}: column {col!r} is not numeric here but was numeric in training "
                               f"(values such as {levels[:3]})")
            unseen = sorted(set(levels) - seen)
            if unseen:
                raise CLIError(f"{path}: column {col!r} has levels not seen in training: {unseen[:5]}")
            levels = sorted(seen)
        encoded.append(f"{col} ({len(levels)} levels)")
        for lev in levels:
            parts.append((s.astype(str) == lev).to_numpy(dtype=float)[:, None])
            names.append(f"{col}{_SEP}{lev}")
    if encoded and known is None:
        print(f"pyopnb: one-hot encoded the non-numeric columns {', '.join(encoded)}", file=sys.stderr)
    X = np.hstack(parts) if parts else np.empty((len(df), 0))
    bad = ~np.isfinite(X)
    if bad.any():
        j = int(np.flatnonzero(bad.any(axis=0))[0])
        raise CLIError(f"{path}: column {names[j]!r} has missing or non-numeric values "
                       f"({int(bad[:, j].sum())} rows)")
    return X, names


def _align(X: np.ndarray, names: List[str], model_names: Sequence[str], path: str) -> np.ndarray:
    missing = [n for n in model_names if n not in names and _SEP not in n]
    extra = [n for n in names if n not in model_names and _SEP not in n]
    if missing or extra:
        msg = []
        if missing:
            msg.append(f"missing {missing}")
        if extra:
            msg.append(f"not in training {extra}")
        raise CLIError(f"{path}: columns differ from the training data: " + "; ".join(msg))
    index = {n: i for i, n in enumerate(names)}
    # a training level absent from this file is a column of zeros
    return np.column_stack([X[:, index[n]] if n in index else np.zeros(X.shape[0]) for n in model_names])


def cmd_fit(args) -> None:
    from .model import OPNB
    from .rio import write_model

    if Path(args.out).suffix.lower() not in (".rds", ".json"):
        raise CLIError(f"--out {args.out}: model files are .rds or .json")
    df = _read_csv(args.train)
    if args.target not in df.columns:
        raise CLIError(f"{args.train}: no target column {args.target!r} (columns: {', '.join(map(str, df.columns))})")
    y = df[args.target]
    if y.isna().any():
        raise CLIError(f"{args.train}: the target column {args.target!r} has missing values")
    X, names = _encode(df.drop(columns=[args.target]), args.train)
    if X.shape[1] == 0:
        raise CLIError(f"{args.train}: no feature columns besides {args.target!r}")
    try:
        model = OPNB(X, y.to_numpy(), ndim=args.ndim, lam=args.lam, nbin=None if args.exact else args.nbin,
                     scale=not args.no_scale)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    model.feature_names = tuple(names)
    write_model(model, args.out)
    print(f"fitted OPNB on {X.shape[0]} rows, {X.shape[1]} features, classes {list(model.ynames)}: "
          f"fval {model.fval:.6g}; wrote {args.out}")


def _load(path: str):
    from .rio import read_model

    try:
        return read_model(path)
    except ValueError as exc:
        raise CLIError(str(exc)) from None


def _model_matrix(model, path: str) -> np.ndarray:
    df = _read_csv(path)
    names = model.feature_names
    if names is None:
        X, _ = _encode(df, path)
        if X.shape[1] != model.V.shape[0]:
            raise CLIError(f"{path}: {X.shape[1]} columns, but the model has {model.V.shape[0]} features")
        return X
    X, got = _encode(df, path, known=names)
    return _align(X, got, names, path)


def cmd_predict(args) -> None:
    import pandas as pd

    from .model import predict
    from .rio import atomic_path

    model = _load(args.model)
    X = _model_matrix(model, args.data)
    try:
        out = predict(model, X, log=args.log)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    res = pd.DataFrame({"class": out["class"]})
    if args.proba:
        for k, name in enumerate(model.ynames):
            res[f"p_{name}"] = out["posterior"][:, k]
    with atomic_path(args.out) as tmp:
        res.to_csv(tmp, index=False)
    print(f"predicted {len(res)} rows; wrote {args.out}")


def cmd_plot(args) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from .plot import plot
    from .rio import atomic_path

    model = _load(args.model)
    Xte = _model_matrix(model, args.data) if args.data else None
    try:
        ax = plot(model, Xte, dims=tuple(args.dims), add_cols=args.regions)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    suffix = Path(args.out).suffix.lower().lstrip(".") or "png"
    with atomic_path(args.out) as tmp:
        ax.figure.savefig(tmp, format=suffix, dpi=110, bbox_inches="tight")
    print(f"wrote {args.out}")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="pyopnb", description="Optimal Projections for Naive Bayes, from CSV files.")
    sub = ap.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fit", help="fit a model on a CSV file")
    f.add_argument("train")
    f.add_argument("--target", required=True, help="the class column")
    f.add_argument("--ndim", type=int)
    f.add_argument("--lam", type=float, default=1e-3)
    f.add_argument("--nbin", type=int, default=1000)
    f.add_argument("--exact", action="store_true", help="exact kernel sums (R's nbin = NULL)")
    f.add_argument("--no-scale", action="store_true", help="do not scale features to unit sd")
    f.add_argument("--out", required=True, help="model file, .rds or .json")
    f.set_defaults(func=cmd_fit)
    p = sub.add_parser("predict", help="predict the classes of a CSV file")
    p.add_argument("model")
    p.add_argument("data")
    p.add_argument("--proba", action="store_true", help="also write the posterior of each class")
    p.add_argument("--log", action="store_true", help="combine densities in log space (no underflow)")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_predict)
    g = sub.add_parser("plot", help="plot a model's projection")
    g.add_argument("model")
    g.add_argument("--data", help="a CSV of points to add (test points)")
    g.add_argument("--dims", type=int, nargs=2, default=[1, 2])
    g.add_argument("--regions", action="store_true", help="shade the class regions")
    g.add_argument("--out", required=True)
    g.set_defaults(func=cmd_plot)
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except CLIError as exc:
        print(f"pyopnb: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
