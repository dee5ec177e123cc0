"""``python -m benchmarks``: every benchmark, pyopnb against R side by side.

Runs the kernel-sum, objective, fit and thread-scaling benchmarks and writes their tables to
results/ (benchmarks.md; scaling.png with --scaling). R is measured through
rpy2 where R has FKSUM and OPNB (set R_LIBS), else SPEC.md's figures are shown
and marked as not measured.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import sys

from benchmarks import bench_fk_sum, bench_objective, bench_threads, fits


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    ap.add_argument("--scaling", action="store_true", help="fit time and memory against n, p and ndim")
    ap.add_argument("--scale", action="store_true", help="the n = 1e6, p = 50, K = 10, ndim = 20 fit")
    ap.add_argument("--threads", action="store_true",
                    help="the thread-scaling table at full size (default: n / 10)")
    args = ap.parse_args()
    out = []
    for name, run in (("kernel sums", lambda: bench_fk_sum.main([])),
                      ("objective and gradient", lambda: bench_objective.main(["--scaling"])),
                      ("fits", lambda: fits.main((["--scaling"] if args.scaling else [])
                                                 + (["--scale"] if args.scale else []))),
                      ("threads", lambda: bench_threads.main(([] if args.threads else ["--quick"])
                                                             + (["--scale"] if args.scale else [])))):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            run()
        text = buf.getvalue()
        sys.stdout.write(f"## {name}\n\n{text}\n")
        out.append(f"## {name}\n\n{text}")
    fits.RESULTS.mkdir(exist_ok=True)
    (fits.RESULTS / "benchmarks.md").write_text("\n".join(out))


if __name__ == "__main__":
    main()
