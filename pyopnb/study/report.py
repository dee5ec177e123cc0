"""The study's report: the papers' Table 1 (wins-ties-losses of every pair of
methods), Figure 2 (boxplots of min-normalised and studentised errors), the
mean test error of each method on each data set, the failures, and the
papers' numbers beside ours.

What exists is shown: a pair of methods is compared over the data sets
where both have a result on every split (the count beside each cell), a
method that failed on a set leaves only that set's cells, and a study of one
set still has its report.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["read", "mean_errors", "win_tie_loss", "pairwise", "standardised", "stops", "write_report", "check_beside",
           "PAPER_TABLE1", "PAPER_METHODS"]

# the journal paper's Table 1: "wins-ties-losses" of the row method against the column method, 162 sets
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
# the paper's eight methods, by our names: Figure 2 standardises over them
PAPER_METHODS = [_OURS_FOR_PAPER.get(m, m) for m in _J]
_TIE = 1e-12


def read(db: str | Path) -> Dict:
    """A results file: its config, rows (dataset, split, method, error,
    note, seconds) and the runs that made it."""
    con = sqlite3.connect(db)
    try:
        config = json.loads(con.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()[0])
        runs = con.execute("SELECT value FROM meta WHERE key = 'runs'").fetchone()
        rows = con.execute("SELECT dataset, split, method, error, note, seconds FROM results").fetchall()
    finally:
        con.close()
    return {"config": config, "rows": rows, "runs": [] if runs is None else json.loads(runs[0])}


def mean_errors(db: str | Path) -> Tuple[List[str], List[str], np.ndarray, Dict]:
    """(data sets, methods, [sets x methods] test error averaged over the
    splits, run config). A (set, method) without a finite error on every
    split is NaN: a failure, or a result still to run."""
    res = read(db)
    config, rows = res["config"], res["rows"]
    methods = sorted({r[2] for r in rows})
    sets = sorted({r[0] for r in rows})
    err = np.full((len(sets), len(methods), config["splits"]), np.nan)
    si, mi = {s: i for i, s in enumerate(sets)}, {m: i for i, m in enumerate(methods)}
    for d, s, m, e, _, _ in rows:
        if s < config["splits"] and e is not None:
            err[si[d], mi[m], s] = e
    with np.errstate(invalid="ignore"):
        E = np.where(np.all(np.isfinite(err), axis=2), err.mean(axis=2), np.nan)
    return sets, methods, E, config


def failures(db: str | Path) -> Dict[str, List[str]]:
    """Each method's failed (set, split)s with the reason, and the results still to run."""
    res = read(db)
    config, rows = res["config"], res["rows"]
    methods = sorted({r[2] for r in rows})
    out: Dict[str, List[str]] = {m: [] for m in methods}
    have = {(d, s, m) for d, s, m, *_ in rows}
    for d, s, m, e, note, _ in sorted(rows):
        if e is None:
            out[m].append(f"{d}, split {s + 1}: {(note or 'no reason recorded').splitlines()[0][:160]}")
    for d in sorted({r[0] for r in rows}):
        for m in methods:
            todo = [s for s in range(config["splits"]) if (d, s, m) not in have]
            if todo:
                out[m].append(f"{d}: {len(todo)} split(s) still to run")
    return {m: v for m, v in out.items() if v}


def stops(db: str | Path) -> Dict[str, Dict[str, int]]:
    """How each method's fits stopped, over its results that recorded it
    (:class:`pyopnb.study.protocol.Stops`): ``fits`` and the count of each
    code over every fit (``code 0``, ``code 1``, ...), ``final code 1`` and
    ``final code 52`` (the results whose final fit stopped so),
    ``results`` (those counted) and ``unrecorded`` (results stored before
    the codes were kept). Methods whose fits have no code are left out."""
    con = sqlite3.connect(db)
    try:
        cols = {r[1] for r in con.execute("PRAGMA table_info(results)")}
        rows = con.execute("SELECT method, stops FROM results" if "stops" in cols
                           else "SELECT method, NULL FROM results").fetchall()
    finally:
        con.close()
    out: Dict[str, Dict[str, int]] = {}
    unrecorded: Dict[str, int] = {}
    for method, text in rows:
        if text is None:
            unrecorded[method] = unrecorded.get(method, 0) + 1
            continue
        rec = json.loads(text)
        if not rec["counts"]:
            continue
        m = out.setdefault(method, {"results": 0, "fits": 0, "final code 1": 0, "final code 52": 0})
        m["results"] += 1
        for code, count in rec["counts"].items():
            m["fits"] += count
            m[f"code {code}"] = m.get(f"code {code}", 0) + count
        if rec["final"] in (1, 52):
            m[f"final code {rec['final']}"] += 1
    for method, m in out.items():
        m["unrecorded"] = unrecorded.get(method, 0)
    return out


def win_tie_loss(E: np.ndarray) -> np.ndarray:
    """[m, m, 3]: wins, ties and losses of method i against j over the data
    sets (rows of E) where both have a result (NaN: none)."""
    d = E[:, :, None] - E[:, None, :]
    both = np.isfinite(d)
    with np.errstate(invalid="ignore"):
        return np.stack([((d < -_TIE) & both).sum(axis=0), ((np.abs(d) <= _TIE) & both).sum(axis=0),
                         ((d > _TIE) & both).sum(axis=0)], axis=-1)


def pairwise(E: np.ndarray) -> np.ndarray:
    """[m, m]: the data sets each pair of methods is compared over."""
    ok = np.isfinite(E)
    return ok.T.astype(int) @ ok.astype(int)


def standardised(E: np.ndarray, over: Sequence[int] = None) -> Tuple[np.ndarray, np.ndarray]:
    """(min-normalised, studentised) errors per data set (rows): (E - min)/(1 - min)
    and (E - mean)/sd, the min, mean and sd taken over the methods ``over``
    (all by default), so methods outside them are placed beside those, not
    among them (0 where every method of ``over`` errs alike)."""
    cols = list(range(E.shape[1])) if over is None else list(over)
    ref = E[:, cols]
    lo = ref.min(axis=1, keepdims=True)
    minnorm = (E - lo) / np.where(lo < 1, 1 - lo, 1.0)
    sd = ref.std(axis=1, ddof=1, keepdims=True) if ref.shape[1] > 1 else np.zeros((E.shape[0], 1))
    student = np.where(sd > 0, (E - ref.mean(axis=1, keepdims=True)) / np.where(sd > 0, sd, 1.0), 0.0)
    return minnorm, student


def _md(rows: Sequence[Sequence[object]], head: Sequence[str]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def _figure(minnorm: np.ndarray, student: np.ndarray, methods: List[str], paper: List[int], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for ax, S, title in ((axes[0], minnorm, "(a) Min-normalised errors"), (axes[1], student, "(b) Studentised errors")):
        order = [int(j) for j in np.argsort(S.mean(axis=0), kind="stable")]
        ax.boxplot([S[:, j] for j in order], tick_labels=[methods[j] + ("" if j in paper else " *") for j in order])
        ax.plot(np.arange(1, len(order) + 1), S.mean(axis=0)[order], "o", color="red", label="mean")
        ax.set_title(title)
        ax.tick_params(axis="x", rotation=45)
    axes[0].legend(loc="upper left")
    fig.suptitle(f"Standardised test errors over {S.shape[0]} data sets, ordered by mean (cf. the papers' Figure 2)\n"
                 f"normalised over the paper's methods; * placed beside them")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _stops_section(db: Path, methods: List[str]) -> List[str]:
    """The report's account of how the optimisers stopped, by method."""
    st = stops(db)
    head = ["", "## How the fits stopped (R's optim codes), by method", ""]
    if not st:
        return head + ["No result recorded its fits' optimiser codes (results stored before the codes were kept, "
                       "or no method here has one)."]
    pct = lambda k, n: f"{k} ({100 * k / n:.1f}%)" if n else "0"  # noqa: E731
    rows = []
    for meth in [m for m in methods if m in st]:
        m = st[meth]
        other = sum(v for k, v in m.items() if k.startswith("code ") and k not in ("code 0", "code 1", "code 52"))
        rows.append([meth, m["results"], m["fits"], pct(m.get("code 1", 0), m["fits"]),
                     pct(m.get("code 52", 0), m["fits"]), other, pct(m["final code 1"], m["results"]),
                     pct(m["final code 52"], m["results"]), m["unrecorded"] or ""])
    return head + ["Every fit a result made, the tuning's and the final one: code 1 is the iteration limit "
                   "(maxit), 52 a failed line search. A method whose fits have no code is not listed.", "",
                   _md(rows, ["method", "results", "fits", "code 1", "code 52", "other codes",
                              "final fit code 1", "final fit code 52", "results without codes"])]


def _paths_section(out: Path) -> List[str]:
    """The measurement of the profile's paths (``paths.json`` beside the
    report, :func:`pyopnb.study.write_path_report`), where there is one."""
    path = out / "paths.json"
    if not path.is_file():
        return []
    rows = [[e["method"], e["parameter"], e["sets"], f"{e['mean error, path']:.4f}", f"{e['mean error, refits']:.4f}",
             e["sets beyond the split noise"], f"{e['mean rank, path']:.2f} / {e['mean rank, refits']:.2f}",
             e["verdict"]] for e in json.loads(path.read_text())]
    return ["", "## What one fit's path changes against refits (paths.md)", "",
            "Measured on two studies of the same sets, one refitting every path; a profile keeps a path only where "
            "it moves no set's mean error by more than the set's split noise.", "",
            _md(rows, ["method", "path over", "sets", "mean error, path", "mean error, refits",
                       "sets beyond their split noise", "mean rank path / refits", "verdict"])]


def _paper_pairs(methods: Sequence[str]) -> List[Tuple[str, Tuple[int, int, int], int, int]]:
    """The paper's Table 1 pairs both of whose methods are here: (our label,
    the paper's W-T-L, row index, column index in ``methods``)."""
    out = []
    for (a, b), paper_cell in PAPER_TABLE1.items():
        oa, ob = _OURS_FOR_PAPER.get(a, a), _OURS_FOR_PAPER.get(b, b)
        if oa in methods and ob in methods:
            out.append((f"{oa} vs {ob}", paper_cell, methods.index(oa), methods.index(ob)))
    return out


def _share(wtl: Sequence[int]) -> str:
    """Wins over the sets compared, as the paper's cells are read here."""
    return f"{wtl[0] / max(sum(wtl), 1):.2f}"


def _profile(config: Dict) -> str:
    return (f"{'quick' if config['quick'] else 'full'} profile, version {config.get('protocol', 1)}, "
            f"{config['splits']} splits")


def check_beside(out: str | Path, beside: str | Path, name: str = "beside") -> Path:
    """``beside`` as a study to set beside the one in ``out``: another
    study's folder, holding results. ``name`` is how the error calls it."""
    beside = Path(beside)
    if not (beside / "results.sqlite").is_file():
        raise ValueError(f"{name} {beside}: no results.sqlite there (another study's folder)")
    if beside.resolve() == Path(out).resolve():
        raise ValueError(f"{name} {beside}: that is this study's own folder (give another profile's)")
    return beside


def _beside_section(sets: List[str], methods: List[str], E: np.ndarray, config: Dict, other: Path) -> List[str]:
    """This study beside another (another profile of the same experiment):
    each method's mean error, mean studentised error and rank, and the
    paper's pairs, in both, over the data sets where every method the two
    share has a result in both, so that neither side's numbers come from
    sets the other lacks."""
    osets, omethods, OE, oconfig = mean_errors(other / "results.sqlite")
    shared = [m for m in methods if m in omethods]
    head = ["", f"## Side by side with {other} ({_profile(oconfig)}), on the data sets where both have every result",
            ""]
    if len(shared) < 2:
        return head + [f"The two studies share {len(shared)} method(s): nothing to compare."]
    here = E[:, [methods.index(m) for m in shared]]
    there = OE[:, [omethods.index(m) for m in shared]]
    complete_here = {s for s, row in zip(sets, here) if np.isfinite(row).all()}
    common = [s for s, row in zip(osets, there) if np.isfinite(row).all() and s in complete_here]
    if not common:
        return head + ["No data set has a result of every shared method in both studies."]
    here = here[[sets.index(s) for s in common]]
    there = there[[osets.index(s) for s in common]]
    paper = [j for j, m in enumerate(shared) if m in PAPER_METHODS] or None
    st_here, st_there = standardised(here, paper)[1].mean(axis=0), standardised(there, paper)[1].mean(axis=0)
    rank = lambda v: np.argsort(np.argsort(v, kind="stable"), kind="stable") + 1  # noqa: E731
    r_here, r_there = rank(st_here), rank(st_there)
    rows = [[m + ("" if paper is None or j in paper else " (beside)"), f"{here[:, j].mean():.4f}",
             f"{there[:, j].mean():.4f}", f"{st_here[j]:.3f}", f"{st_there[j]:.3f}", r_here[j], r_there[j]]
            for j, m in sorted(enumerate(shared), key=lambda jm: r_here[jm[0]])]
    W_here, W_there = win_tie_loss(here), win_tie_loss(there)
    pairs = [[label, _share(paper_cell), "-".join(map(str, W_here[i, j])), _share(W_here[i, j]),
              "-".join(map(str, W_there[i, j])), _share(W_there[i, j])]
             for label, paper_cell, i, j in _paper_pairs(shared)]
    this = f"this study ({_profile(config)})"
    lines = head + [f"{len(common)} data sets; \"here\" is {this}, \"there\" the study in {other}. Ranks by mean "
                    "studentised error (1 the lowest), standardised over the paper's methods among those shared.", "",
                    _md(rows, ["method", "mean error here", "mean error there", "mean studentised here",
                               "mean studentised there", "rank here", "rank there"])]
    if pairs:
        lines += ["", "The paper's pairs over the same sets (win share: wins over the sets compared, as above):", "",
                  _md(pairs, ["pair", "paper win share", "W-T-L here", "win share here", "W-T-L there",
                              "win share there"])]
    return lines


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h"


def write_report(out: str | Path, beside: Optional[str | Path] = None) -> Path:
    """Write the study's report from its results.

    ``report.md``, ``table1.csv``, ``errors.csv`` and ``figure2.png``: every
    pair of methods over the data sets where both have results (Table 1,
    beside the paper's), the errors' boxplots (Figure 2), the failures by
    method, and the time of every run.

    Parameters
    ----------
    out : str or Path
        The study's folder, holding ``results.sqlite``.
    beside : str or Path, optional
        Another study's folder (another profile of the experiment, such as
        the quick profile beside the full one): the report then sets the
        two side by side on the data sets where both have every result of
        the methods they share. It is named in the report as given.

    Returns
    -------
    Path
        The report, ``out/report.md``.
    """
    out = Path(out)
    db = out / "results.sqlite"
    if not db.is_file():
        raise ValueError(f"{out}: no results.sqlite here (run the study first)")
    if beside is not None:
        beside = check_beside(out, beside)
    sets, methods, E, config = mean_errors(db)
    if not sets:
        raise ValueError(f"{out}: no results yet")
    res = read(db)
    W = win_tie_loss(E)
    N = pairwise(E)
    m = len(methods)
    cell = lambda i, j: "" if i == j else f"{'-'.join(str(v) for v in W[i, j])} ({N[i, j]})"  # noqa: E731
    table = [[methods[i]] + [cell(i, j) for j in range(m)] for i in range(m)]
    with open(out / "table1.csv", "w") as fh:
        fh.write("method," + ",".join(methods) + "\n")
        fh.writelines(",".join(r) + "\n" for r in table)
    with open(out / "errors.csv", "w") as fh:
        fh.write("dataset," + ",".join(methods) + "\n")
        fh.writelines(f"{s}," + ",".join("" if not np.isfinite(v) else f"{v:.6f}" for v in row) + "\n"
                      for s, row in zip(sets, E))
    # Figure 2 over the sets where every method shown has a result, normalised over the paper's methods
    paper = [methods.index(p) for p in PAPER_METHODS if p in methods]
    complete = np.all(np.isfinite(E), axis=1)
    lines = ["# OPNB against the comparators on PMLB data sets (the papers' Table 1 and Figure 2)", "",
             f"{len(sets)} data sets with results; protocol: {config['splits']} splits, "
             f"{'quick' if config['quick'] else 'full'} grids, seed {config['seed']}"
             f"{'; every path refitted at each of its values' if config.get('paths') is False else ''}."]
    runs = res["runs"]
    # a run killed outright by an older version, which recorded a run only at its end, left no record
    unrecorded = len(res["rows"]) - sum(r["computed"] for r in runs)
    if runs:
        total = sum(r["seconds"] for r in runs)
        tasks = sum(r[5] for r in res["rows"])
        lines.append(f"Made in {len(runs)}{' recorded' if unrecorded > 0 else ''} run{'s' if len(runs) > 1 else ''}: "
                     f"{_hours(total)} of wall time in all, {_hours(tasks)} of the tasks' own time; the last run was "
                     f"`{runs[-1]['command']}`.")
    if unrecorded > 0:
        lines.append(f"{unrecorded} of the {len(res['rows'])} results come from runs that left no record of their "
                     f"wall time (killed before they could write it); the tasks' own time counts them.")
    lines += ["", "## Wins-ties-losses (row against column; lower mean test error wins; in brackets the data sets "
              "where both have results)", "", _md(table, ["", *methods])]
    paper_rows = [[label, "-".join(map(str, paper_cell)), _share(paper_cell), "-".join(map(str, W[i, j])),
                   str(N[i, j]), _share(W[i, j])] for label, paper_cell, i, j in _paper_pairs(methods)]
    lines += ["", "## Beside the journal paper's Table 1 (162 data sets; the paper's OPNB is our OPNB-journal)", "",
              _md(paper_rows, ["pair", "paper W-T-L", "paper win share", "ours W-T-L", "our sets", "our win share"])]
    if complete.any() and paper:
        minnorm, student = standardised(E[complete], paper)
        _figure(minnorm, student, methods, paper, out / "figure2.png")
        order = np.argsort(student.mean(axis=0), kind="stable")
        means = [[methods[j] + ("" if j in paper else " (beside)"), f"{E[complete][:, j].mean():.4f}",
                  f"{minnorm[:, j].mean():.3f}", f"{student[:, j].mean():.3f}"] for j in order]
        lines += ["", f"## Mean errors over the {int(complete.sum())} data sets where every method has results "
                      "(Figure 2: figure2.png; standardised over the paper's methods, ours beside them)", "",
                  _md(means, ["method", "mean test error", "mean min-normalised", "mean studentised"])]
    counts = np.isfinite(E).sum(axis=0)
    with np.errstate(invalid="ignore"):
        own = [[methods[j], str(counts[j]), f"{np.nanmean(E[:, j]):.4f}" if counts[j] else "-"] for j in range(m)]
    lines += ["", "## Each method over the data sets where it has results", "",
              _md(own, ["method", "data sets", "mean test error"]),
              "", "## Mean test error per data set (blank: a failure, or still to run)", "",
              _md([[s] + ["" if not np.isfinite(v) else f"{v:.3f}" for v in row] for s, row in zip(sets, E)],
                  ["data set", *methods])]
    if beside is not None:
        lines += _beside_section(sets, methods, E, config, beside)
    lines += _stops_section(db, methods)
    lines += _paths_section(out)
    failed = failures(db)
    if failed:
        lines += ["", "## Failures, by method", ""]
        for meth, items in failed.items():
            lines.append(f"- {meth} ({len(items)}):")
            lines += [f"  - {it}" for it in items[:50]]
            if len(items) > 50:
                lines.append(f"  - and {len(items) - 50} more")
    (out / "report.md").write_text("\n".join(lines) + "\n")
    return out / "report.md"
