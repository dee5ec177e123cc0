"""``python -m pyopnb.validation``: every cross-check against R, as a report.

    python -m pyopnb.validation                      # all checks; report.json beside
    python -m pyopnb.validation --select fit/        # the checks whose id contains fit/
    python -m pyopnb.validation --csv data.csv --label y [--ndim 3 --lam 1e-3 --nbin 1000 | --exact]

The CSV mode fits OPNB on your data with pyopnb and with R's OPNB (through
rpy2; R needs the OPNB package) and compares the two fits and their
predictions on the same rows. Exit code 1 when a check fails.
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path
from typing import Dict, List

import numpy as np


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.2e}"
    return str(v)


def print_table(rows: List[Dict]) -> None:
    header = ["check", "what", "source", "max abs", "max rel", "tolerance", "verdict"]
    body = [[r["check"], r["what"], r["source"], _fmt(r["max_abs"]), _fmt(r["max_rel"]), r["tolerance"],
             r["verdict"] + (f" ({r['note']})" if r["note"] else "")] for r in rows]
    widths = [max(len(header[i]), *(len(b[i]) for b in body)) if body else len(header[i]) for i in range(len(header))]
    widths[-1] = 0
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    print(line(header))
    print(line(["-" * max(w, 7) for w in widths]))
    for b in body:
        print(line(b))


def _read_csv(path: Path, label: str):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows:
        raise SystemExit(f"{path}: empty file")
    header, body = rows[0], rows[1:]
    if label not in header:
        raise SystemExit(f"{path}: no column {label!r} (columns: {', '.join(header)})")
    j = header.index(label)
    feats = [h for i, h in enumerate(header) if i != j]
    try:
        X = np.array([[float(v) for i, v in enumerate(r) if i != j] for r in body])
    except ValueError as exc:
        raise SystemExit(f"{path}: the feature columns must be numeric ({exc})") from None
    y = np.array([r[j] for r in body], dtype=object)
    return X, y, feats


def csv_rows(args) -> List[Dict]:
    from pyopnb import OPNB
    from pyopnb.validation import rbridge
    from pyopnb.validation.checks import LIVE, _fit_results, _r_eigen, _r_fit

    reason = rbridge.why_not(["OPNB"])
    if reason:
        raise SystemExit(f"the CSV cross-check needs R's OPNB: {reason}")
    X, y, _ = _read_csv(Path(args.csv), args.label)
    nbin = None if args.exact else args.nbin
    ndim = args.ndim or min(X.shape[1], 20)
    ref = _r_fit(X, y, ndim, args.lam, nbin, X)
    m = OPNB(X, y, ndim=ndim, lam=args.lam, nbin=nbin, V0=lambda Xs, y_, nd: _r_eigen(Xs, nd))
    results = _fit_results(Path(args.csv).name, LIVE, m, ref, X, ref)
    from dataclasses import asdict

    return [{"check": "csv", **asdict(r), "verdict": "pass" if r.ok else "FAIL"} for r in results]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pyopnb.validation", description=__doc__.splitlines()[0])
    ap.add_argument("--select", help="run only the checks whose id contains this")
    ap.add_argument("--json", default="validation_report.json", help="where to write the report (JSON)")
    ap.add_argument("--csv", help="cross-check a fit on this CSV file (header row; numeric features)")
    ap.add_argument("--label", help="the CSV's class column")
    ap.add_argument("--ndim", type=int)
    ap.add_argument("--lam", type=float, default=1e-3)
    ap.add_argument("--nbin", type=int, default=1000)
    ap.add_argument("--exact", action="store_true", help="exact kernel sums (nbin = NULL)")
    args = ap.parse_args(argv)
    if args.csv:
        if not args.label:
            ap.error("--csv needs --label")
        rows = csv_rows(args)
    else:
        from pyopnb.validation.checks import run_all

        rows = run_all(args.select)
    from pyopnb.validation.checks import to_json

    print_table(rows)
    Path(args.json).write_text(to_json(rows))
    n_fail = sum(r["verdict"] == "FAIL" for r in rows)
    n_skip = sum(r["verdict"] == "skipped" for r in rows)
    print(f"\n{len(rows) - n_fail - n_skip} passed, {n_fail} failed, {n_skip} skipped; report written to {args.json}")
    return 1 if n_fail else 0


if __name__ == "__main__":
    sys.exit(main())
