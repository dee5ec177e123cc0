"""``python -m pyopnb.study``: run the papers' experiment and write its report."""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import List, Optional, Sequence

from .methods import DEFAULT_METHODS


def build_parser(prog: str = "python -m pyopnb.study") -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description="OPNB against the comparators on PMLB data sets "
                                                         "(the papers' Table 1 and Figure 2).")
    ap.add_argument("--data", required=True, help="a folder of PMLB data sets in the pmlb package's cache layout")
    ap.add_argument("--out", required=True, help="the study's folder: results.sqlite and the report")
    ap.add_argument("--sets", help="comma-separated data set names (default: every set in --data)")
    ap.add_argument("--methods", help=f"comma-separated methods (default: {','.join(DEFAULT_METHODS)})")
    ap.add_argument("--splits", type=int, help="train/test splits (default 10, or 3 with --quick)")
    ap.add_argument("--quick", action="store_true", help="3 splits, 3-fold tuning and small grids")
    ap.add_argument("--jobs", type=int, default=1, help="parallel jobs (default 1)")
    ap.add_argument("--backend", choices=("loky", "dask"), default="loky")
    ap.add_argument("--scheduler", help="with --backend dask: the scheduler's address, or 'local' for a cluster "
                                        "on this machine (the default)")
    ap.add_argument("--refit-paths", action="store_true",
                    help="refit at every value of a parameter the profile tunes by one fit's path (ndim, "
                         "n_components): the measurement of what a path changes")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--report-only", action="store_true", help="write the report from the results so far")
    ap.add_argument("--beside", metavar="DIR",
                    help="another study's folder (another profile): the report sets the two side by side on the "
                         "data sets where both have every result")
    ap.add_argument("--no-progress", action="store_true")
    return ap


def main(argv: Optional[Sequence[str]] = None, prog: str = "python -m pyopnb.study") -> int:
    from .report import check_beside, write_report
    from .run import run_study

    from .run import Interrupted

    args = build_parser(prog).parse_args(argv)
    command = f"{prog} " + " ".join(shlex.quote(a) for a in _shown(sys.argv[1:] if argv is None else list(argv)))
    try:
        if args.beside is not None:  # refused before the run, not after it
            check_beside(args.out, args.beside, "--beside")
        if not args.report_only:
            if not Path(args.data).is_dir():
                raise ValueError(f"--data {args.data}: no such folder (a folder of PMLB data sets: NAME/NAME.tsv.gz)")
            splits = args.splits if args.splits is not None else (3 if args.quick else 10)
            run_study(args.data, args.out, datasets=args.sets.split(",") if args.sets else None,
                      methods=args.methods.split(",") if args.methods else None,
                      n_splits=splits, quick=args.quick, n_jobs=args.jobs, backend=args.backend,
                      scheduler=args.scheduler, seed=args.seed, progress=not args.no_progress,
                      command=command, paths=not args.refit_paths).close()
        path = write_report(args.out, beside=args.beside)
    except Interrupted as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 130
    except (ValueError, OSError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    print(f"report written to {path}")
    return 0


def _shown(argv: List[str]) -> List[str]:
    """The command line as the report records it: a long --sets list as its count."""
    out = list(argv)
    for i, a in enumerate(out[:-1]):
        if a == "--sets" and out[i + 1].count(",") >= 5:
            out[i + 1] = f"<{out[i + 1].count(',') + 1} sets>"
    return out


if __name__ == "__main__":
    sys.exit(main())
