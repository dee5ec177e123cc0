"""The ``pyopnb`` command: fit, predict and plot from CSV files.

    pyopnb demo [--png opnb_pima.png] [--csv DIR]
    pyopnb study --data PMLB_DIR --out DIR [--quick] [--jobs 2]   (see pyopnb study --help)
    pyopnb fit train.csv --target y [--ndim 3 --lam 1e-3 --nbin 1000 | --exact] [--no-scale] --out model.rds
    pyopnb fit train.csv --target y --formulation journal [--gamma 1 --prescale] --out model.rds
    pyopnb predict model.rds test.csv [--proba] [--target y] [--r-compatible] --out predictions.csv
    pyopnb plot model.rds [--data test.csv [--target y]] --out projection.png
    pyopnb validate [--select ID] [--json OUT]                    (every check against R)
    pyopnb validate train.csv --target y [--test test.csv] [--ndim N] [--lam L] [--exact | --nbin B]
                    [--cv FOLDS] [--record FILE | --against FILE] [--json OUT]   (your workflow, in R and here)

CSV files have a header row. Non-numeric feature columns are one-hot encoded
(said on stderr); the encoded columns are named ``column=level`` and kept
with the model, so test files are encoded the same way, their columns matched
by name in any order. A test file may still hold the label column: it is
left out, and with ``--target`` (or the model's own target column) predict
also prints the accuracy and a confusion table. Posteriors are computed in
log space, so far-away rows keep their class; ``--r-compatible`` gives R's
predict.OPNB numbers instead (densities multiplied, underflow to a uniform
posterior). Models are .rds (readable by R's readRDS and predict.OPNB) or
.json; predict and plot also read a fitted OPNBClassifier saved with joblib
(.joblib or .pkl: loading one runs code from the file, so read only files
you trust). A CSV that R's write.csv wrote keeps its first, unnamed column
as row names, not as a feature. Every output path is checked before any work: an output that is one of the
command's inputs is refused, and nothing is written when a command fails.
Exit codes: 0 done, 1 validate found a difference from R, 2 bad input or
usage, or R missing for validate (one line on stderr). Notes on the
fit (L-BFGS-B's iteration limit, a failed line search where that is not the
objective's normal end) come as one line on stderr, in the command's words.
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import numpy as np

from ._validation import align_columns, exact_floats, rows_text
from .labels import level_text

_SEP = "="


class CLIError(Exception):
    """A problem with the user's input: reported as 'pyopnb: error: ...', exit code 2."""


def _r_row_names(p: Path) -> bool:
    """Whether the file's first column is R's row names: write.csv (and
    write.table's col.names = NA) writes them under an empty first header."""
    import csv

    try:
        with open(p, newline="", encoding="utf-8-sig") as fh:
            header = next(csv.reader(fh), [])
    except (UnicodeDecodeError, csv.Error):
        return False
    return len(header) > 1 and header[0].strip() == ""


def _read_csv(path: str):
    """A CSV file as a DataFrame; R's row names (a first column under an
    empty header, as write.csv writes by default) become the index, not a
    feature, and the command says so."""
    import pandas as pd

    p = Path(path)
    if not p.is_file():
        raise CLIError(f"{path}: no such file")
    row_names = _r_row_names(p)
    try:
        df = pd.read_csv(p, index_col=0 if row_names else None, **exact_floats())
    except Exception as exc:  # pandas raises several kinds for bad CSV
        raise CLIError(f"{path}: cannot read as CSV ({type(exc).__name__}: {exc})") from None
    if df.shape[0] == 0 or df.shape[1] == 0:
        raise CLIError(f"{path}: no data rows")
    if row_names:
        print(f"pyopnb: {path}: the first column has no header, as R's write.csv writes row names: read as row "
              f"names, not as a feature", file=sys.stderr)
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
            if not seen and str(col) not in known:
                # not a training column at all: named among the extra columns by _align
                parts.append(np.zeros((len(df), 1)))
                names.append(str(col))
                continue
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
    for bad, what in ((np.isnan(X), "missing values"), (np.isinf(X), "infinite values")):
        if bad.any():
            j = int(np.flatnonzero(bad.any(axis=0))[0])
            raise CLIError(f"{path}: column {names[j]!r} has {what} ({rows_text(int(bad[:, j].sum()))})")
    return X, names


def _training_data(path: str, target: str):
    """(X, labels, feature names) of a training CSV: the target column's
    labels, the other columns encoded (see :func:`_encode`)."""
    df = _read_csv(path)
    if target not in df.columns:
        raise CLIError(f"{path}: no target column {target!r} (columns: {', '.join(map(str, df.columns))})")
    y = df[target]
    if y.isna().any():
        raise CLIError(f"{path}: the target column {target!r} has missing values")
    X, names = _encode(df.drop(columns=[target]), path)
    if X.shape[1] == 0:
        raise CLIError(f"{path}: no feature columns besides {target!r}")
    return X, y, names


def _with_levels(y, spec: str, path: str):
    """The labels as a pandas Categorical in the level order ``spec`` gives:
    "b,a,c", or @FILE, one level a line (R: ``writeLines(levels(y),
    "levels.txt")``). A CSV keeps only the labels' text, so their order is
    R's only when it says so: levels match the labels' text as R writes it."""
    import pandas as pd

    if spec.startswith("@"):
        try:
            levels = Path(spec[1:]).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise CLIError(f"--levels {spec}: cannot read the levels file ({exc.strerror})") from None
    else:
        levels = spec.split(",")
    levels = [v for v in levels if v != ""] if spec.startswith("@") else levels
    if not levels or any(v == "" for v in levels):
        raise CLIError(f"--levels {spec}: an empty level (give \"b,a,c\", or @FILE with one level a line)")
    repeated = sorted({v for v in levels if levels.count(v) > 1})
    if repeated:
        raise CLIError(f"--levels {spec}: levels {repeated[:5]} are given twice")
    text = np.asarray(level_text(y.to_numpy()), dtype=object)
    unknown = sorted(set(text.tolist()) - set(levels))
    if unknown:
        raise CLIError(f"{path}: labels {unknown[:5]} of the target column are not among --levels {spec}")
    index = {v: i for i, v in enumerate(levels)}
    codes = np.fromiter((index[t] for t in text), dtype=np.int64, count=text.size)
    # each level keeps its labels' type (integers stay integers); a level with no rows keeps its text
    values = {t: v for t, v in zip(text.tolist(), y.tolist())}
    categories = [values.get(v, v) for v in levels]
    if len({type(c) for c in categories}) > 1:
        categories = levels
    return pd.Categorical.from_codes(codes, categories=categories)


def _priors(spec: str, labels) -> dict:
    """--priors "a=0.3,b=0.7": each class's prior by its label's text (as the
    CSV writes it), as a mapping from the fit's labels."""
    from .labels import factor_levels

    levels = factor_levels(labels)[0]
    by_text = dict(zip(level_text(levels), levels.tolist()))
    out = {}
    for item in spec.split(","):
        label, eq, value = item.rpartition("=")
        if not eq or label == "":
            raise CLIError(f"--priors {spec}: give LABEL=PRIOR pairs, comma-separated (\"a=0.3,b=0.7\"), got "
                           f"{item!r}")
        if label not in by_text:
            raise CLIError(f"--priors {spec}: {label!r} is not a class of the target column (its classes: "
                           f"{', '.join(by_text)})")
        if by_text[label] in out:
            raise CLIError(f"--priors {spec}: {label!r} is given twice")
        try:
            out[by_text[label]] = float(value)
        except ValueError:
            raise CLIError(f"--priors {spec}: {value!r} is not a number (class {label!r})") from None
    return out


def _align(X: np.ndarray, names: List[str], model_names: Sequence[str], path: str) -> np.ndarray:
    """X's columns in the model's order; a training level absent from this
    file is a column of zeros (its one-hot column would be)."""
    try:
        return align_columns(X, names, model_names, path, absent_ok=lambda n: _SEP in n)
    except ValueError as exc:
        raise CLIError(str(exc)) from None


def _same_file(a: str, b: str) -> bool:
    """Whether two paths name one file (links and relative paths included)."""
    pa, pb = Path(a), Path(b)
    if pa.exists() and pb.exists():
        return os.path.samefile(pa, pb)
    return pa.resolve() == pb.resolve()


def _check_out(path: str, suffixes: Sequence[str], what: str, option: str = "--out",
               inputs: Sequence[Optional[str]] = (), overwrite: bool = False) -> None:
    """Fail before any work, not after a fit, on an output path that cannot be
    written, that is one of the command's inputs (it would be lost), or that
    exists without ``--overwrite``."""
    from .rio import refuse_existing

    p = Path(path)
    if p.suffix.lower() not in suffixes:
        allowed = " or ".join(suffixes) if len(suffixes) <= 2 else ", ".join(suffixes)
        raise CLIError(f"{option} {path}: {what} are {allowed}")
    for source in inputs:
        if source is not None and _same_file(path, source):
            raise CLIError(f"{option} {path} is the input {source}: writing there would destroy it; choose "
                           f"another output path")
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise CLIError(f"{option} {path}: the folder {folder} does not exist")
    if p.is_dir():
        raise CLIError(f"{option} {path}: is a folder")
    if not os.access(folder, os.W_OK):
        raise CLIError(f"{option} {path}: the folder {folder} is not writable")
    if not overwrite:
        try:
            refuse_existing(path, "pass --overwrite")
        except FileExistsError as exc:
            raise CLIError(f"{option} {exc}") from None


# the command line's names of the settings a fit's notes suggest
_CLI_WORDS = {"lam": "--lam", "nbin": "--nbin", "exact": "--exact", "gamma": "--gamma", "V0": None, "maxit": "--maxit",
              "ndim": "--ndim"}


def cmd_fit(args) -> None:
    from .exceptions import fit_quietly
    from .fitting import COLLAPSED, KEPT_START, R_WOULD_STOP
    from .fitting import fit
    from .formulation import formulation
    from .rio import write_model

    _check_out(args.out, (".rds", ".json"), "model files", inputs=[args.train], overwrite=args.overwrite)
    if args.exact and args.nbin is not None:
        raise CLIError("--exact and --nbin contradict each other: --exact sums exactly, with no bins")
    nbin = None if args.exact else (1000 if args.nbin is None else args.nbin)
    given = {"lam": args.lam, "scale": False if args.no_scale else None, "gamma": args.gamma,
             "prescale": True if args.prescale else None, "r_defects": True if args.r_defects else None}
    flags = {"lam": "--lam", "scale": "--no-scale", "gamma": "--gamma", "prescale": "--prescale",
             "formulation": "--formulation", "r_defects": "--r-defects"}
    try:
        form = formulation(args.formulation, words=flags, **{k: v for k, v in given.items() if v is not None})
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    X, y, names = _training_data(args.train, args.target)
    labels = y.to_numpy() if args.levels is None else _with_levels(y, args.levels, args.train)
    priors = None if args.priors is None else _priors(args.priors, labels)
    try:
        # the command says the formulation's note itself, in its own words (no Python source line)
        model, notes = fit_quietly(fit, X, labels, form, ndim=args.ndim, nbin=nbin, maxit=args.maxit,
                                   threads=args.threads, priors=priors, caller="pyopnb fit")
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    model.feature_names = tuple(names)
    model.target = str(args.target)
    write_model(model, args.out, overwrite=args.overwrite)
    print(f"fitted OPNB on {X.shape[0]} rows, {X.shape[1]} features, classes {[str(c) for c in model.ynames]}: "
          f"fval {model.fval:.6g}; wrote {args.out}")
    # where R's own fit would stop: the fit kept its start as R's does (--r-defects), or went on
    r_notes = [n.replace(form.advice(nbin), form.advice(nbin, _CLI_WORDS)).replace("r_defects=True", "--r-defects")
               .replace("a larger lam", "a larger --lam") for n in notes if n.startswith((R_WOULD_STOP, KEPT_START))]
    collapsed = [n.replace(form.collapse_cause(), form.collapse_cause(_CLI_WORDS)) for n in notes
                 if n.startswith(COLLAPSED)]
    for n in r_notes + collapsed:
        print(f"pyopnb: warning: {n}", file=sys.stderr)
    note = form.convergence_note(model.convergence, nbin, args.maxit, _CLI_WORDS)
    if note is not None and not any(n.startswith(KEPT_START) for n in r_notes):
        print(f"pyopnb: warning: {note}", file=sys.stderr)
    elif model.convergence == 52 and not r_notes:
        print("pyopnb: note: L-BFGS-B ended at a failed line search (convergence code 52), the normal end of R's "
              "binned objective: its gradient is not the derivative of its binned value, and R's OPNB stops there "
              "too", file=sys.stderr)


def _load(path: str):
    from .rio import read_model

    try:
        return read_model(path)
    except ValueError as exc:
        raise CLIError(str(exc)) from None


def _model_matrix(model, path: str, target: Optional[str] = None):
    """The model's feature matrix from a CSV file, and the file's labels
    (None without a label column): ``target``, else the model's own."""
    df = _read_csv(path)
    label = target if target is not None else model.target
    labels = None
    if target is not None and target not in df.columns:
        raise CLIError(f"{path}: no target column {target!r} (columns: {', '.join(map(str, df.columns))})")
    if label is not None and label in df.columns:
        labels = df[label]
        if labels.isna().any():
            raise CLIError(f"{path}: the target column {label!r} has missing values")
        df = df.drop(columns=[label])
    names = model.feature_names
    d = model.V.shape[0]
    if names is None:
        # a model R fitted on an unnamed matrix: the file's columns are its
        # features, in order, and nothing tells a label column apart
        if label is None and df.shape[1] != d:
            raise CLIError(f"{path}: {df.shape[1]} columns, but the model has {d} features and no column names "
                           f"(R fitted it on an unnamed matrix){_label_hint(df, model)}")
        X, _ = _encode(df, path)
        if X.shape[1] != d:
            raise CLIError(f"{path}: {X.shape[1]} columns, but the model has {d} features")
        return X, labels
    if label is None:
        extra = [str(c) for c in df.columns if str(c) not in names and not any(
            n.startswith(f"{c}{_SEP}") for n in names)]
        if extra:
            raise CLIError(f"{path}: columns {extra[:5]} are not among the model's features, and the model names "
                           f"no label column{_label_hint(df, model)}")
    X, got = _encode(df, path, known=names)
    return _align(X, got, names, path), labels


def _label_hint(df, model) -> str:
    """Advice naming the file's columns whose values are all among the
    model's classes: one of them is likely the label column."""
    known = set(level_text(model.ynames))
    candidates = []
    for col in df.columns:
        text = level_text(df[col].dropna().to_numpy())
        if text and set(text) <= known:
            candidates.append(str(col))
    if candidates:
        return (f": if {candidates[0]!r} is the label column, pass --target {candidates[0]}"
                + (f" (columns holding only class labels: {candidates})" if len(candidates) > 1 else ""))
    return ": pass --target COLUMN to leave the label column out"


def _as_model_labels(labels, model, path: str) -> np.ndarray:
    """A label column as the model's classes, compared by R's text of each
    (a float 1.0 read from a CSV is the class 1), checked against them."""
    known = level_text(model.ynames)
    text = level_text(labels.to_numpy())
    unknown = sorted(set(text) - set(known))
    if unknown:
        raise CLIError(f"{path}: labels {unknown[:5]} are not among the model's classes {known}")
    index = {t: k for k, t in enumerate(known)}
    return model.ynames[[index[t] for t in text]]


def _report(truth: np.ndarray, pred: np.ndarray, classes: Sequence[str]) -> str:
    """Accuracy and a confusion table (rows: true class, columns: predicted)."""
    classes = [str(c) for c in classes]
    index = {c: i for i, c in enumerate(classes)}
    table = np.zeros((len(classes), len(classes)), dtype=np.int64)
    for t, p in zip(truth, pred):
        table[index[str(t)], index[str(p)]] += 1
    width = max(max(map(len, classes)), len(str(table.max())), 4)
    lines = [f"accuracy {np.trace(table) / table.sum():.4f} ({np.trace(table)} of {table.sum()} rows)",
             "confusion (rows: true class, columns: predicted)",
             " " * (width + 1) + " ".join(c.rjust(width) for c in classes)]
    for c, row in zip(classes, table):
        lines.append(c.rjust(width) + " " + " ".join(str(v).rjust(width) for v in row))
    return "\n".join(lines)


def cmd_predict(args) -> None:
    import pandas as pd

    from .model import predict
    from .rio import atomic_path

    _check_out(args.out, (".csv",), "predictions", inputs=[args.model, args.data], overwrite=args.overwrite)
    model = _load(args.model)
    X, labels = _model_matrix(model, args.data, args.target)
    truth = None if labels is None else _as_model_labels(labels, model, args.data)
    try:
        out = predict(model, X, log=not args.r_compatible)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    res = pd.DataFrame({"class": out["class"]})
    if args.proba:
        for k, name in enumerate(model.ynames):
            res[f"p_{name}"] = out["posterior"][:, k]
    with atomic_path(args.out, overwrite=args.overwrite) as tmp:
        res.to_csv(tmp, index=False)
    print(f"predicted {len(res)} rows; wrote {args.out}")
    if truth is not None:
        print(_report(truth, out["class"], model.ynames))


def _image_formats() -> Sequence[str]:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    return tuple(f".{k}" for k in Figure().canvas.get_supported_filetypes())


def cmd_plot(args) -> None:
    from .plot import plot
    from .rio import atomic_path

    _check_out(args.out, _image_formats(), "images", inputs=[args.model, args.data], overwrite=args.overwrite)
    if args.target is not None and not args.data:
        raise CLIError("--target names the label column of --data: give --data too")
    model = _load(args.model)
    Xte, labels = _model_matrix(model, args.data, args.target) if args.data else (None, None)
    yte = None if labels is None else _as_model_labels(labels, model, args.data)
    try:
        ax = plot(model, Xte, dims=args.dims, add_cols=args.regions, yte=yte)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    suffix = Path(args.out).suffix.lower().lstrip(".")
    with atomic_path(args.out, overwrite=args.overwrite) as tmp:
        ax.figure.savefig(tmp, format=suffix, dpi=110, bbox_inches="tight")
    print(f"wrote {args.out}")


def cmd_demo(args) -> None:
    from .__main__ import run_demo
    from .datasets import write_pima_csv

    _check_out(args.png, _image_formats(), "images", option="--png", overwrite=args.overwrite)
    if args.csv is not None:
        try:
            paths = write_pima_csv(args.csv)
        except ValueError as exc:
            raise CLIError(f"--csv {args.csv}: {exc}") from None
        print(f"the data as CSV (label column type): {paths[0]}, {paths[1]}")
    run_demo(args.png, overwrite=args.overwrite)


def _validate_suite(args) -> int:
    from .validation.checks import run_all, table, to_json

    with warnings.catch_warnings():
        # some checks reproduce R's defects on purpose (densities that underflow): their rows say how it went
        warnings.simplefilter("ignore")
        rows = run_all(args.select)
    if not rows:
        raise CLIError(f"--select {args.select!r}: no check's id contains it")
    out = sys.stderr if _json_target(args.json) else sys.stdout
    print(table(rows), file=out)
    n_fail = sum(r["verdict"] == "FAIL" for r in rows)
    n_skip = sum(r["verdict"] == "skipped" for r in rows)
    print(f"\n{len(rows) - n_fail - n_skip} passed, {n_fail} failed, {n_skip} skipped"
          + (" (R or one of its packages is missing here; the reason is beside each)" if n_skip else ""), file=out)
    if args.json:
        _write_json(args.json, to_json(rows), args.overwrite)
        if not _json_target(args.json):
            print(f"wrote {args.json}", file=out)
    return 1 if n_fail else 0


def _tolerance(values: Optional[Sequence[str]], option: str):
    """--rtol/--atol: VALUE for every quantity that takes one, QUANTITY=VALUE
    for one; repeatable (a quantity's own value wins)."""
    from .validation.regression import TOLERANT

    if not values:
        return None
    base, own = None, {}
    for item in values:
        name, _, text = item.rpartition("=")
        try:
            value = float(text)
        except ValueError:
            raise CLIError(f"{option} {item}: give a number, or QUANTITY=NUMBER (quantities: "
                           f"{', '.join(TOLERANT)})") from None
        if name:
            own[name] = value
        elif base is not None:
            raise CLIError(f"{option} was given two values for every quantity ({base:g} and {value:g})")
        else:
            base = value
    return {**({q: base for q in TOLERANT} if base is not None else {}), **own}


def _json_target(path: Optional[str]) -> bool:
    """Whether --json goes to standard output (``--json -``)."""
    return path == "-"


def _write_json(path: str, text: str, overwrite: bool) -> None:
    from .rio import atomic_path

    if _json_target(path):
        print(text)
        return
    with atomic_path(path, overwrite=overwrite) as tmp:
        tmp.write_text(text)


def _r_inputs(args, X, Xte, y, names):
    """R's own parse of the files (--r-reads-csv), compared with pyopnb's."""
    from .labels import level_text
    from .validation import rbridge
    from .validation.rparse import read_in_r
    from .validation.workflow import R_PACKAGES, RUnavailable

    reason = rbridge.why_not(R_PACKAGES)
    if reason:
        raise RUnavailable(f"--r-reads-csv: R reads the files itself, and needs R with the OPNB and FKSUM "
                           f"packages, and rpy2: {reason}")
    row_names = [_r_row_names(Path(args.train)), args.test is not None and _r_row_names(Path(args.test))]
    try:
        return read_in_r(args.train, args.test, args.target, names, X, Xte, level_text(y.to_numpy()), row_names)
    except ValueError as exc:
        raise CLIError(str(exc)) from None


def cmd_validate(args) -> int:
    """The suite of checks against R (no file), or the user's own workflow:
    regression against its recording, and parity with R."""
    to_stdout = _json_target(args.json)
    if args.json and not to_stdout:
        _check_out(args.json, (".json",), "reports", option="--json", inputs=[args.train, args.test, args.against],
                   overwrite=args.overwrite)
    if args.train is None:
        given = [f for f, v in (("--target", args.target), ("--test", args.test), ("--ndim", args.ndim),
                                ("--lam", args.lam), ("--nbin", args.nbin), ("--exact", args.exact),
                                ("--cv", args.cv), ("--record", args.record), ("--against", args.against),
                                ("--rtol", args.rtol), ("--atol", args.atol), ("--strict-r", args.strict_r),
                                ("--r-reads-csv", args.r_reads_csv), ("--spread-seeds", args.spread_seeds)) if v]
        if given:
            raise CLIError(f"{given[0]} belongs to a workflow: give its training file, "
                           f"pyopnb validate TRAIN.csv --target COLUMN")
        return _validate_suite(args)
    if args.select:
        raise CLIError("--select chooses among the suite's checks: give no training file with it")
    if args.target is None:
        raise CLIError("a workflow needs its class column: --target COLUMN")
    if args.exact and args.nbin is not None:
        raise CLIError("--exact and --nbin contradict each other: --exact sums exactly, with no bins")
    if args.against and args.spread_seeds is not None:
        raise CLIError("--spread-seeds sets how live R's spread is measured; a recording (--against) keeps its own")
    if args.record:
        if os.path.lexists(args.record):
            # not --overwrite's: only --update replaces a recording
            raise CLIError(f"--record {args.record}: exists; a recording is never overwritten (remove it or "
                           f"choose another path)")
        _check_out(args.record, (".json",), "recordings", option="--record",
                   inputs=[args.train, args.test, args.json, args.against])
    rtol, atol = _tolerance(args.rtol, "--rtol"), _tolerance(args.atol, "--atol")
    X, y, names = _training_data(args.train, args.target)
    Xte = None
    if args.test is not None:
        dte = _read_csv(args.test)
        if args.target in dte.columns:
            dte = dte.drop(columns=[args.target])
        Xte_raw, got = _encode(dte, args.test, known=names)
        Xte = _align(Xte_raw, got, names, args.test)
    from .validation.workflow import RUnavailable, compare_with_r

    opnb_args = {"lam": 1e-3 if args.lam is None else args.lam,
                 "nbin": None if args.exact else (1000 if args.nbin is None else args.nbin),
                 "cv": args.cv, "nlam": args.nlam}
    if args.ndim is not None:
        opnb_args["ndim"] = args.ndim
    try:
        r_inputs = _r_inputs(args, X, Xte, y, names) if args.r_reads_csv and not args.against else None
        report = compare_with_r(X, y.to_numpy(), Xte, against=args.against, record=args.record,
                                threads=args.threads, rtol=rtol, atol=atol, strict_r=args.strict_r,
                                spread_seeds=args.spread_seeds, r_inputs=r_inputs, **opnb_args)
    except RUnavailable as exc:
        raise CLIError(str(exc)) from None
    if args.r_reads_csv and args.against and "R parse" not in report.meta:
        raise CLIError(f"--r-reads-csv: in {args.against} R fitted pyopnb's parse of the files, not its own "
                       f"read.csv: record again with --r-reads-csv, or replay without it")
    out = sys.stderr if to_stdout else sys.stdout
    print(f"pyopnb validate: {args.train}: {X.shape[0]} rows, {X.shape[1]} features; predicting "
          f"{args.test or 'the training rows'}", file=out)
    print(report.table(), file=out)
    print("\n" + report.summary(), file=out)
    if args.record:
        print(f"recorded R's and pyopnb's results in {args.record}: replay with --against {args.record}, no R "
              f"needed", file=out)
    if args.json:
        _write_json(args.json, report.to_json(), args.overwrite)
        if not to_stdout:
            print(f"wrote {args.json}", file=out)
    return report.exit_code


def _validate_arguments(v: argparse.ArgumentParser) -> None:
    """The validate command's options (``pyopnb validate`` and ``python -m pyopnb.validation``)."""
    v.add_argument("train", nargs="?", help="training CSV (R's write.csv row names are read as row names)")
    v.add_argument("--target", help="the class column")
    v.add_argument("--test", help="CSV of rows to predict (default: the training rows)")
    v.add_argument("--ndim", type=int, help="projection columns (default: R's, min(ncol, 20))")
    v.add_argument("--lam", type=float, help="penalty (default 1e-3)")
    v.add_argument("--nbin", type=int, help="bins per projected column (default 1000)")
    v.add_argument("--exact", action="store_true", help="exact kernel sums (R's nbin = NULL)")
    v.add_argument("--cv", type=int, metavar="FOLDS", help="also run OPNB_CV_lam over this many stratified folds, "
                                                            "the same folds in R")
    v.add_argument("--nlam", type=int, default=10, help="penalties OPNB_CV_lam tries (default 10, R's)")
    v.add_argument("--record", metavar="FILE", help="write R's and pyopnb's results to this new .json recording; "
                                                    "with --against, R's side comes from that recording (no R)")
    v.add_argument("--against", metavar="FILE", help="check against a recording instead of R: no R needed")
    v.add_argument("--rtol", action="append", metavar="[QUANTITY=]X",
                   help="regression: allow |now - recorded| <= atol + rtol |recorded| (default: the same bits); "
                        "X for every quantity, or QUANTITY=X (fval, V, h, PI, mu, scales, posterior, cv_lam, "
                        "cv_accuracy); repeatable")
    v.add_argument("--atol", action="append", metavar="[QUANTITY=]X", help="regression: as --rtol, absolute")
    v.add_argument("--strict-r", action="store_true",
                   help="parity fails where R's fit kept its start on a non-finite value (waived by default)")
    v.add_argument("--r-reads-csv", action="store_true",
                   help="R reads the CSV files with its own read.csv, as an R pipeline does (the report lists "
                        "the cells the two parse differently)")
    v.add_argument("--spread-seeds", type=int, metavar="N",
                   help="reruns of R on X moved by 1e-15 that measure R's spread (default 4; 0 skips them, and "
                        "parity judges only what is bit for bit or within the floor)")
    v.add_argument("--select", help="the suite: run only the checks whose id contains this")
    v.add_argument("--threads", type=int, help="pyopnb's threads for every fit, CV folds included (the results do "
                                               "not depend on it)")
    v.add_argument("--json", metavar="OUT", help="also write the report as JSON (- for standard output, the "
                                                 "table then on standard error); a usage error writes its JSON too")
    v.add_argument("--overwrite", action="store_true", help="replace an existing --json file (default: refuse "
                                                            "it; a recording is replaced only by --update)")
    v.set_defaults(func=cmd_validate)


_VALIDATE_DESCRIPTION = (
    "With no file: every check against R (R's recorded outputs always; base R and R's OPNB, FKSUM and OPGD where "
    "installed). With TRAIN.csv: your workflow (the fit from R's start, predict and OPNB_CV_lam) checked two ways: "
    "regression, pyopnb's results against its own recorded ones (the same bits by default), and parity, pyopnb "
    "against R (live through rpy2, or recorded), each quantity with its tolerance and where it comes from. Exit 0 "
    "when everything passes, 1 when something differs, 2 on a usage error, a recording that cannot be used, or R "
    "or its packages missing.")


_OVERWRITE_HELP = "replace an existing output file (default: refuse it)"


def build_parser(prog: str = "pyopnb") -> argparse.ArgumentParser:
    ap = _Parser(prog=prog, description="Optimal Projections for Naive Bayes, from CSV files.")
    sub = ap.add_subparsers(dest="command", required=True)
    m = sub.add_parser("demo", help="the main job on built-in data: OPNB on Pima, with a projection plot")
    m.add_argument("--png", default="opnb_pima.png", help="where to write the projection plot")
    m.add_argument("--csv", metavar="DIR", help="also write the data as pima_train.csv and pima_test.csv in DIR "
                                                "(label column: type), for trying the other commands")
    m.add_argument("--overwrite", action="store_true", help=_OVERWRITE_HELP)
    m.set_defaults(func=cmd_demo)
    sub.add_parser("study", help="the papers' experiment on PMLB data sets (pyopnb study --help)", add_help=False)
    f = sub.add_parser("fit", help="fit a model on a CSV file")
    f.add_argument("train")
    f.add_argument("--target", required=True, help="the class column")
    f.add_argument("--ndim", type=int)
    from .formulation import FORMULATIONS

    f.add_argument("--formulation", choices=list(FORMULATIONS), default="R",
                   help="R: R OPNB 1.0's penalised objective (default); correct: the same with the paper's "
                        "objective (priors once); journal: the method as published (normalised projections, "
                        "class bandwidths, LDA start)")
    f.add_argument("--lam", type=float, help="penalty (formulations R and correct; default 1e-3)")
    f.add_argument("--gamma", type=float, help="bandwidth multiplier (formulation journal; default 1)")
    f.add_argument("--prescale", action="store_true", help="formulation journal: multiply the scaled data by "
                                                           "the within-class covariance's inverse square root")
    f.add_argument("--nbin", type=int, help="bins per projected column (default 1000)")
    f.add_argument("--exact", action="store_true", help="exact kernel sums (R's nbin = NULL); not with --nbin")
    f.add_argument("--maxit", type=int, default=100,
                   help="L-BFGS-B's iteration limit (R's optim maxit, default 100)")
    f.add_argument("--no-scale", action="store_true", help="do not scale features to unit sd")
    f.add_argument("--threads", type=int, help="threads for the fit, -1 for every core (default: "
                   "PYOPNB_NUM_THREADS, else OMP_NUM_THREADS, else every core); the model does not depend on it")
    f.add_argument("--r-defects", action="store_true",
                   help="formulation R: where R's gradient sums would not be finite, keep the start as R's OPNB "
                        "does (default: go on, and say so)")
    f.add_argument("--levels", metavar="LIST|@FILE",
                   help="the classes' order, as R's factor levels: \"b,a,c\", or @FILE with one level a line "
                        "(R: writeLines(levels(y), \"levels.txt\")). A CSV keeps only the labels' text, and its "
                        "levels sort as R's as.factor sorts text; a factor's own order is lost without this")
    f.add_argument("--priors", metavar="LABEL=P,...",
                   help="the class priors, \"a=0.3,b=0.7\", every class named as the CSV writes its label, "
                        "summing to 1 (default: the class proportions, R's)")
    f.add_argument("--out", required=True, help="model file, .rds or .json")
    f.add_argument("--overwrite", action="store_true", help=_OVERWRITE_HELP)
    f.set_defaults(func=cmd_fit)
    p = sub.add_parser("predict", help="predict the classes of a CSV file")
    p.add_argument("model")
    p.add_argument("data")
    p.add_argument("--proba", action="store_true", help="also write the posterior of each class")
    p.add_argument("--target", help="the label column of the data: print accuracy and a confusion table "
                                    "(default: the model's training label column, when the file has it)")
    p.add_argument("--r-compatible", action="store_true",
                   help="R's predict.OPNB numbers: densities multiplied, and a row whose densities all "
                        "underflow gets a uniform posterior and the first class (default: log space)")
    p.add_argument("--log", action="store_true", help=argparse.SUPPRESS)  # the default now; old scripts pass it
    p.add_argument("--out", required=True, help="predictions, .csv")
    p.add_argument("--overwrite", action="store_true", help=_OVERWRITE_HELP)
    p.set_defaults(func=cmd_predict)
    g = sub.add_parser("plot", help="plot a model's projection")
    g.add_argument("model")
    g.add_argument("--data", help="a CSV of points to add (test points)")
    g.add_argument("--target", help="the label column of --data: colour its points by class")
    g.add_argument("--dims", type=int, nargs="+", help="the columns to show, 1-based (default: 1 2, or 1 for "
                                                      "a one-column model)")
    g.add_argument("--regions", action="store_true", help="shade the class regions")
    g.add_argument("--out", required=True, help="image file; its suffix gives the format (.png, .pdf, .svg, ...)")
    g.add_argument("--overwrite", action="store_true", help=_OVERWRITE_HELP)
    g.set_defaults(func=cmd_plot)
    v = sub.add_parser("validate", help="check pyopnb against R and against its own recordings: the suite (no "
                                        "file), or your own workflow", description=_VALIDATE_DESCRIPTION)
    _validate_arguments(v)
    return ap


class _UsageError(Exception):
    """argparse's complaint about the command line, raised rather than
    exiting, so that the command can still write its JSON."""

    def __init__(self, parser: argparse.ArgumentParser, message: str):
        super().__init__(message)
        self.parser, self.message = parser, message


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        raise _UsageError(self, message)


def validation_parser(prog: str = "python -m pyopnb.validation") -> argparse.ArgumentParser:
    """The validate command's parser on its own, whose usage line works as typed under ``prog``."""
    ap = _Parser(prog=prog, description=_VALIDATE_DESCRIPTION)
    _validate_arguments(ap)
    return ap


def _option(argv: Sequence[str], name: str) -> Optional[str]:
    """An option's value read off the raw command line (where argparse failed)."""
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def _error_json(argv: Sequence[str], message: str) -> None:
    """validate's JSON for a run that stopped on a usage error (exit 2),
    where --json names a place that can take it."""
    import json

    path = _option(argv, "--json")
    if path is None:
        return
    inputs = [a for a in argv if a.endswith(".csv")] + [_option(argv, "--against"), _option(argv, "--record")]
    overwrite = "--overwrite" in argv
    if not _json_target(path):
        try:
            _check_out(path, (".json",), "reports", option="--json", inputs=inputs, overwrite=overwrite)
        except CLIError:
            return
    not_run = {"verdict": "not checked", "why": "the command stopped before any check"}
    _write_json(path, json.dumps({"ok": False, "exit_code": 2, "error": message,
                                  "checks": {"regression": not_run, "parity": not_run}, "rows": []}, indent=1),
                overwrite)


def main(argv: Optional[Sequence[str]] = None, prog: str = "pyopnb", only: Optional[str] = None) -> int:
    """The command line: ``pyopnb COMMAND ...``, or with ``only="validate"``
    the validate command alone (``python -m pyopnb.validation ...``)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if only is None and argv[:1] == ["study"]:
        # the papers' experiment has its own options: python -m pyopnb.study
        from .study.__main__ import main as study_main

        return study_main(argv[1:], prog="pyopnb study")
    validating = only == "validate" or argv[:1] == ["validate"]
    try:
        args = (validation_parser(prog) if only == "validate" else build_parser(prog)).parse_args(argv)
    except _UsageError as exc:
        exc.parser.print_usage(sys.stderr)
        print(f"{exc.parser.prog}: error: {exc.message}", file=sys.stderr)
        if validating:
            _error_json(argv, exc.message)
        return 2
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            rc = args.func(args) or 0
    except (CLIError, ValueError, OSError) as exc:
        # a user's mistake (bad values, unreadable or unwritable files, a recording that cannot be used):
        # one line, no traceback
        msg = _in_cli_words(str(exc).splitlines()[0]) if str(exc) else type(exc).__name__
        print(f"pyopnb: error: {msg}", file=sys.stderr)
        if validating:
            _error_json(argv, msg)
        return 2
    # warnings as one line each, in the command's words, without Python's source lines
    for msg in dict.fromkeys(str(w.message).splitlines()[0] for w in caught):
        print(f"pyopnb: warning: {_in_cli_words(msg)}", file=sys.stderr)
    return rc


# the validation API's arguments, as the command names them
_VALIDATE_WORDS = (("against=", "--against "), ("record=", "--record "), ("spread_seeds=", "--spread-seeds "),
                   ("strict_r", "--strict-r"))


def _in_cli_words(message: str) -> str:
    """A library warning's advice, with the command's options for Python's arguments."""
    from .model import LOG_SPACE_ADVICE

    message = (message.replace(LOG_SPACE_ADVICE,
                               "without --r-compatible, posteriors are computed in log space and keep their class")
               .replace("predict: ", ""))
    for python, command in _VALIDATE_WORDS:
        message = message.replace(python, command)
    return message


if __name__ == "__main__":
    sys.exit(main())
