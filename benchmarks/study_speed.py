"""The study's time before and after a change: two runs of ``python -m
pyopnb.study`` on the same sets, each result's own time, per method.

Each run records every (set, split, method) result with the seconds its
task took (results.sqlite). This compares two such folders, over the
results both hold, and writes a table per method: tasks, their summed time
in each run, and the ratio; and each folder's wall time (its runs' own
record: seconds from a run's start to its last result, summed over runs;
``--walls`` for a folder of a version that kept no such record, timed
outside, e.g. with /usr/bin/time).

Run, e.g. with SETS the 64 smallest sets and two checkouts:

    (cd OLD && python -m pyopnb.study --data PMLB --out /tmp/before --quick --jobs 2 --no-progress --sets "$SETS")
    (cd NEW && python -m pyopnb.study --data PMLB --out /tmp/after --quick --jobs 2 --no-progress --sets "$SETS")
    python -m benchmarks.study_speed /tmp/before /tmp/after --labels 598de4f HEAD --out results/study_speed.md
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import Dict, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import table  # noqa: E402

Key = Tuple[str, int, str]


def task_times(folder: Path) -> Tuple[Dict[Key, float], float]:
    """({(set, split, method): seconds} of a study folder's finished results,
    the wall seconds of its recorded runs)."""
    path = Path(folder) / "results.sqlite"
    if not path.is_file():
        raise FileNotFoundError(f"no study results at {path}")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT dataset, split, method, seconds FROM results").fetchall()
        runs = con.execute("SELECT value FROM meta WHERE key = 'runs'").fetchone()
    finally:
        con.close()
    wall = sum(r["seconds"] for r in json.loads(runs[0])) if runs else float("nan")
    return {(d, int(s), m): float(sec) for d, s, m, sec in rows}, wall


def compare(before: Dict[Key, float], after: Dict[Key, float], labels: Tuple[str, str],
            walls: Optional[Tuple[float, float]] = None) -> str:
    """The per-method table over the results both runs hold (markdown)."""
    common = sorted(set(before) & set(after))
    if not common:
        raise ValueError("the two runs share no (set, split, method) result")
    methods = sorted({k[2] for k in common})
    rows = []
    for m in methods + ["all methods"]:
        keys = [k for k in common if m == "all methods" or k[2] == m]
        b = sum(before[k] for k in keys)
        a = sum(after[k] for k in keys)
        rows.append([m, len(keys), f"{b:.1f}", f"{a:.1f}", f"{b / a:.1f}x" if a > 0 else "-"])
    sets = len({k[0] for k in common})
    text = (f"The study's tasks' own time (seconds) on {sets} sets, {len(common)} results both runs hold: "
            f"{labels[0]} against {labels[1]}\n\n"
            + table(rows, ["method", "results", f"{labels[0]} s", f"{labels[1]} s", f"{labels[0]} / {labels[1]}"]))
    if walls is not None:
        text += (f"\n\nWall time of each run: {labels[0]} {walls[0]:.0f} s, "
                 f"{labels[1]} {walls[1]:.0f} s ({walls[0] / walls[1]:.1f}x)\n")
    return text


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path, help="the earlier run's study folder")
    ap.add_argument("after", type=Path, help="the later run's study folder")
    ap.add_argument("--labels", nargs=2, default=("before", "after"))
    ap.add_argument("--walls", nargs=2, type=float,
                    help="each run's wall seconds, where a folder has no record of its own")
    ap.add_argument("--out", type=Path, help="write the table here (refused if the file exists)")
    args = ap.parse_args(argv)
    (tb, wb), (ta, wa) = task_times(args.before), task_times(args.after)
    walls = tuple(args.walls) if args.walls else (wb, wa)
    # a folder without a record of its own has no wall time to show (NaN)
    text = compare(tb, ta, tuple(args.labels), walls if all(w == w for w in walls) else None)
    if args.out is not None:
        with open(args.out, "x") as fh:  # never overwrite an earlier comparison
            fh.write(text)
    print(text)


if __name__ == "__main__":
    main()
