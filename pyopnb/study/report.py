"""The study's report: the papers' Table 1 (wins-ties-losses of every pair of
methods), Figure 2 (boxplots of min-normalised and studentised errors), the
mean test error of each method on each data set, and the papers' numbers
beside ours."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["mean_errors", "win_tie_loss", "standardised", "write_report", "PAPER_TABLE1"]

# opnb-journal-version.md Table 1: "wins-ties-losses" of the row method against the column method, 162 sets
_J = ["OPNB", "OPGD", "SVM", "LDA", "RDA", "NB", "KDDA", "CCICA"]
_J_ROWS = {
    "OPNB": ["107-3-52", "61-10-91", "108-4-50", "108-4-50", "119-3-40", "137-1-24", "125-3-34"],
    "OPGD": ["45-5-112", "87-6-69", "85-4-73", "95-1-66", "127-0-35", "105-4-53"],
    "SVM": ["107-3-52", "109-5-48", "119-0-43", "146-0-16", "126-4-32"],
    "LDA": ["72-8-82", "94-3-65", "110-2-50", "82-2-78"],
    "RDA": ["103-1-58", "114-2-46", "87-3-72"],
    "NB": ["102-2-58", "80-2-80"],
    "KDDA": ["57-1-104"],
}
PAPER_TABLE1: Dict[Tuple[str, str], Tuple[int, int, int]] = {}
for _i, _r in enumerate(_J[:-1]):
    for _c, _cell in zip(_J[_i + 1:], _J_ROWS[_r]):
        PAPER_TABLE1[(_r, _c)] = tuple(int(v) for v in _cell.split("-"))  # type: ignore[assignment]
# the paper's OPNB is the published formulation; pyopnb's names for its methods
_OURS_FOR_PAPER = {"OPNB": "OPNB-journal"}
_TIE = 1e-12


def _read(db: str | Path):
    """(run config, rows (dataset, split, method, error, note)) of a results file."""
    con = sqlite3.connect(db)
    try:
        config = json.loads(con.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()[0])
        return config, con.execute("SELECT dataset, split, method, error, note FROM results").fetchall()
    finally:
        con.close()


def mean_errors(db: str | Path) -> Tuple[List[str], List[str], np.ndarray, Dict[str, int]]:
    """(data sets, methods, [sets x methods] test error averaged over the
    splits, run config). Only data sets where every method has a finite error
    on every split count (as in the papers, which compare complete rows)."""
    config, rows = _read(db)
    methods = sorted({r[2] for r in rows})
    sets = sorted({r[0] for r in rows})
    err = np.full((len(sets), len(methods), config["splits"]), np.nan)
    si, mi = {s: i for i, s in enumerate(sets)}, {m: i for i, m in enumerate(methods)}
    for d, s, m, e, _ in rows:
        if s < config["splits"] and e is not None:
            err[si[d], mi[m], s] = e
    complete = np.all(np.isfinite(err), axis=(1, 2))
    return [s for s, c in zip(sets, complete) if c], methods, err[complete].mean(axis=2), config


def left_out(db: str | Path) -> List[str]:
    """Data sets without every result: which methods failed (and why) or are still to run."""
    config, rows = _read(db)
    methods = sorted({r[2] for r in rows})
    out = []
    for d in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == d]
        failed = sorted({(m, (note or "").splitlines()[0][:120]) for _, _, m, e, note in mine if e is None})
        missing = len(methods) * config["splits"] - len(mine)
        if failed or missing:
            why = "; ".join(f"{m} failed ({n})" for m, n in failed)
            out.append(f"{d}: " + (why + ("; " if why and missing else "")) + (f"{missing} results to run" if missing else ""))
    return out


def win_tie_loss(E: np.ndarray) -> np.ndarray:
    """[m, m, 3]: wins, ties and losses of method i against j over the data sets (rows of E)."""
    d = E[:, :, None] - E[:, None, :]
    return np.stack([(d < -_TIE).sum(axis=0), (np.abs(d) <= _TIE).sum(axis=0), (d > _TIE).sum(axis=0)], axis=-1)


def standardised(E: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(min-normalised, studentised) errors, per data set (rows): (E - min)/(1 - min)
    and (E - mean)/sd over the methods (0 where every method errs alike)."""
    lo = E.min(axis=1, keepdims=True)
    minnorm = (E - lo) / np.where(lo < 1, 1 - lo, 1.0)
    sd = E.std(axis=1, ddof=1, keepdims=True) if E.shape[1] > 1 else np.zeros((E.shape[0], 1))
    student = np.where(sd > 0, (E - E.mean(axis=1, keepdims=True)) / np.where(sd > 0, sd, 1.0), 0.0)
    return minnorm, student


def _md(rows: Sequence[Sequence[object]], head: Sequence[str]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def _figure(minnorm: np.ndarray, student: np.ndarray, methods: List[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for ax, S, title in ((axes[0], minnorm, "(a) Min-normalised errors"), (axes[1], student, "(b) Studentised errors")):
        order = np.argsort(S.mean(axis=0), kind="stable")
        ax.boxplot([S[:, j] for j in order], tick_labels=[methods[j] for j in order])
        ax.plot(np.arange(1, len(order) + 1), S.mean(axis=0)[order], "o", color="red", label="mean")
        ax.set_title(title)
        ax.tick_params(axis="x", rotation=45)
    axes[0].legend(loc="upper left")
    fig.suptitle(f"Standardised test errors over {S.shape[0]} data sets, ordered by mean (cf. the papers' Figure 2)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(out: str | Path, command: Optional[str] = None, seconds: Optional[float] = None) -> Path:
    """report.md, table1.csv, errors.csv and figure2.png in ``out`` from its results.sqlite."""
    out = Path(out)
    sets, methods, E, config = mean_errors(out / "results.sqlite")
    if not sets:
        raise ValueError(f"{out}: no data set has every method's result on every split yet")
    W = win_tie_loss(E)
    minnorm, student = standardised(E)
    m = len(methods)
    table = [[methods[i]] + ["" if i == j else "-".join(str(v) for v in W[i, j]) for j in range(m)] for i in range(m)]
    with open(out / "table1.csv", "w") as fh:
        fh.write("method," + ",".join(methods) + "\n")
        fh.writelines(",".join(r) + "\n" for r in table)
    with open(out / "errors.csv", "w") as fh:
        fh.write("dataset," + ",".join(methods) + "\n")
        fh.writelines(f"{s}," + ",".join(f"{v:.6f}" for v in row) + "\n" for s, row in zip(sets, E))
    _figure(minnorm, student, methods, out / "figure2.png")
    # the papers' cells beside ours, where both have the pair
    beside = []
    for (a, b), paper in PAPER_TABLE1.items():
        oa, ob = _OURS_FOR_PAPER.get(a, a), _OURS_FOR_PAPER.get(b, b)
        if oa in methods and ob in methods:
            w = W[methods.index(oa), methods.index(ob)]
            n = sum(paper)
            beside.append([f"{oa} vs {ob}", "-".join(map(str, paper)), f"{paper[0] / n:.2f}",
                           "-".join(str(v) for v in w), f"{w[0] / max(w.sum(), 1):.2f}"])
    order = np.argsort(student.mean(axis=0), kind="stable")
    means = [[methods[j], f"{E[:, j].mean():.4f}", f"{minnorm[:, j].mean():.3f}", f"{student[:, j].mean():.3f}"]
             for j in order]
    lines = [
        "# OPNB against the comparators on PMLB data sets (the papers' Table 1 and Figure 2)", "",
        f"{len(sets)} data sets with every method on every split; protocol: {config['splits']} splits, "
        f"{'quick' if config['quick'] else 'full'} grids, seed {config['seed']}.",
    ]
    if command:
        import os
        import platform

        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        lines.append(f"Made by `{command}`" + (f" in {seconds / 3600:.2f} h" if seconds else "")
                     + f", on {platform.machine()} {platform.system()} with {cores} cores "
                     f"(Python {platform.python_version()}).")
    lines += ["", "## Wins-ties-losses (row against column; lower mean test error wins)", "", _md(table, ["", *methods]),
              "", "## Beside the journal paper's Table 1 (162 data sets; the paper's OPNB is our OPNB-journal)", "",
              _md(beside, ["pair", "paper W-T-L", "paper win share", "ours W-T-L", "our win share"]), "",
              "## Mean errors (ordered by mean studentised error; Figure 2: figure2.png)", "",
              _md(means, ["method", "mean test error", "mean min-normalised", "mean studentised"]), "",
              "## Mean test error per data set", "",
              _md([[s] + [f"{v:.3f}" for v in row] for s, row in zip(sets, E)], ["data set", *methods])]
    gone = left_out(out / "results.sqlite")
    if gone:
        lines += ["", "## Data sets left out of the tables", ""] + [f"- {g}" for g in gone]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    return out / "report.md"
