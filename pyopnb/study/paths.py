"""What a path changes: a profile's one-fit paths against refits at every
value of the same grid, method by method.

The quick profile tunes a parameter such as ndim from one fit at its largest
value, predicting with the fit's first m columns for each m (the
estimator's ``staged_predict``). Whether that gives a method the error its
refits would give is measured here, from two studies of the same sets,
splits and seed: one with the profile's paths, one run with
``paths=False`` (``--refit-paths``), which refits at every value. The other
methods' results, which no path touches, come from the first.

A path is kept for a method when it moves the method's mean error on no set
by more than the splits move it there (:func:`path_effect`); otherwise the
profile refits.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from .methods import METHODS
from .report import _md, mean_errors, read, win_tie_loss

__all__ = ["split_errors", "path_effect", "write_path_report"]


def split_errors(db: str | Path) -> Dict:
    """{(set, method): errors [splits]} of a results file, only where every
    split has a finite error."""
    res = read(db)
    n = res["config"]["splits"]
    out: Dict = {}
    for d, s, m, e, _, _ in res["rows"]:
        out.setdefault((d, m), [np.nan] * n)
        if s < n and e is not None:
            out[(d, m)][s] = e
    return {k: np.asarray(v) for k, v in out.items() if np.all(np.isfinite(v))}


def _mean_ranks(E: np.ndarray) -> np.ndarray:
    """Each method's rank on each set (rows) among the methods (columns),
    ties sharing the mean of their places, averaged over the sets."""
    from scipy.stats import rankdata

    return np.mean([rankdata(row) for row in E], axis=0)


def path_effect(path_out: str | Path, refit_out: str | Path, methods: Optional[Sequence[str]] = None) -> List[Dict]:
    """What each path changes, method by method.

    For each method that a profile tunes by a path (or those named), over
    the sets where both studies have every split of it and the path study
    has every method: its mean error by path and by refits, the mean
    difference (path - refit) and its standard error over the sets, the
    split noise (each set's standard error of the mean over its splits of
    the refitted errors, their mean over the sets), the mean absolute
    change per set and the sets where the change exceeds that set's split
    noise, the path's wins-ties-losses against the refits, the method's
    mean rank among all the methods and its wins-ties-losses against the
    others both ways, and the verdict: ``"path"`` where no set's mean error
    moves by more than its split noise, else ``"refit"``.

    Parameters
    ----------
    path_out : str or Path
        A study's folder run with the profile's paths.
    refit_out : str or Path
        A study's folder of the same sets, splits and seed run with
        ``paths=False`` (``--refit-paths``).
    methods : sequence of str, optional
        The methods to measure (default: every method with a path that
        both studies ran).

    Returns
    -------
    list of dict
        One dict a method, keyed as described above.
    """
    pdb, rdb = Path(path_out) / "results.sqlite", Path(refit_out) / "results.sqlite"
    pc, rc = read(pdb)["config"], read(rdb)["config"]
    if rc.get("paths") is not False:
        raise ValueError(f"{refit_out} is not a study run with paths=False (--refit-paths)")
    if pc.get("paths") is False:
        raise ValueError(f"{path_out} is a study run with paths=False: give one with the profile's paths")
    if {k: v for k, v in pc.items() if k != "paths"} != {k: v for k, v in rc.items() if k != "paths"}:
        raise ValueError(f"the two studies differ in more than their paths: {pc} against {rc}")
    sets, all_methods, E, _ = mean_errors(pdb)
    P, R = split_errors(pdb), split_errors(rdb)
    wanted = [m for m in (methods or [m for m in all_methods if METHODS[m].path]) if m in all_methods]
    out = []
    for meth in wanted:
        j = all_methods.index(meth)
        rows = [i for i, s in enumerate(sets) if (s, meth) in P and (s, meth) in R and np.all(np.isfinite(E[i]))]
        if not rows:
            continue
        ep = np.array([P[(sets[i], meth)] for i in rows])  # [sets, splits]
        er = np.array([R[(sets[i], meth)] for i in rows])
        d = ep.mean(axis=1) - er.mean(axis=1)
        noise = er.std(axis=1, ddof=1) / np.sqrt(er.shape[1])
        Ep = E[rows]
        Er = Ep.copy()
        Er[:, j] = er.mean(axis=1)
        se = float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else float("nan")
        wp, wr = win_tie_loss(Ep)[j], win_tie_loss(Er)[j]
        against = win_tie_loss(np.stack([ep.mean(axis=1), er.mean(axis=1)], axis=1))[0, 1]
        beyond = np.abs(d) > noise + 1e-12
        out.append({
            "method": meth, "parameter": METHODS[meth].path, "sets": len(rows),
            "mean error, path": float(ep.mean()), "mean error, refits": float(er.mean()),
            "mean difference": float(d.mean()), "its standard error": se,
            "mean absolute change": float(np.mean(np.abs(d))), "split noise": float(np.mean(noise)),
            "sets beyond the split noise": int(beyond.sum()),
            "path against refits": tuple(int(v) for v in against),
            "mean rank, path": float(_mean_ranks(Ep)[j]), "mean rank, refits": float(_mean_ranks(Er)[j]),
            "W-T-L against the others, path": tuple(int(v) for v in wp.sum(axis=0) - wp[j]),
            "W-T-L against the others, refits": tuple(int(v) for v in wr.sum(axis=0) - wr[j]),
            "methods ranked": len(all_methods),
            "largest changes": sorted(((sets[i], float(x)) for i, x in zip(rows, d)), key=lambda t: -abs(t[1]))[:5],
            "verdict": "refit" if beyond.any() else "path",
        })
    return out


def write_path_report(path_out: str | Path, refit_out: str | Path, dest: str | Path,
                      methods: Optional[Sequence[str]] = None, *, overwrite: bool = False) -> Path:
    """Write :func:`path_effect` as a Markdown page, with its numbers beside it.

    Parameters
    ----------
    path_out : str or Path
        A study's folder run with the profile's paths.
    refit_out : str or Path
        A study's folder of the same sets, splits and seed run with
        ``paths=False`` (``--refit-paths``).
    dest : str or Path
        The page to write; its numbers go to the same name with the suffix
        ``.json``.
    methods : sequence of str, optional
        The methods to measure (default: every method with a path).
    overwrite : bool, default False
        Replace an existing page or its ``.json``; otherwise either raises
        FileExistsError before any work.

    Returns
    -------
    Path
        The page.
    """
    from ..rio import atomic_path, refuse_existing

    dest = Path(dest)
    if not overwrite:
        refuse_existing(dest)
        refuse_existing(dest.with_suffix(".json"))
    effects = path_effect(path_out, refit_out, methods)
    if not effects:
        raise ValueError("no method has results in both studies")
    wtl = lambda t: "-".join(str(v) for v in t)  # noqa: E731
    rows = [[e["method"], e["parameter"], e["sets"], f"{e['mean error, path']:.4f}", f"{e['mean error, refits']:.4f}",
             f"{e['mean difference']:+.4f} ± {e['its standard error']:.4f}", f"{e['mean absolute change']:.4f}",
             f"{e['split noise']:.4f}", e["sets beyond the split noise"], wtl(e["path against refits"]),
             f"{e['mean rank, path']:.2f} / {e['mean rank, refits']:.2f}",
             f"{wtl(e['W-T-L against the others, path'])} / {wtl(e['W-T-L against the others, refits'])}",
             e["verdict"]] for e in effects]
    config = read(Path(path_out) / "results.sqlite")["config"]
    lines = ["# What the quick profile's paths change: one fit's path against refits at every value", "",
             f"Two studies of the same sets, splits ({config['splits']}) and seed ({config['seed']}), "
             f"{'quick' if config['quick'] else 'full'} grids: one with the profile's paths (`{path_out}`), one "
             f"refitting at every value of every path (`{refit_out}`, `--refit-paths`). Other methods' results come "
             f"from the first; ranks are among all {effects[0]['methods ranked']} methods (1 best).", "",
             "A path is kept where it moves no set's mean error by more than the splits move it there (its split "
             "noise: the standard error of the set's mean over the splits, refitted); otherwise the profile refits. "
             "The split noise column is its mean over the sets.",
             "", _md(rows, ["method", "path over", "sets", "mean error, path", "mean error, refits",
                            "difference (path - refits) ± se", "mean absolute change", "split noise",
                            "sets beyond their noise",
                            "path vs refits W-T-L", "mean rank path / refits",
                            "W-T-L against the others, path / refits", "verdict"]), ""]
    for e in effects:
        lines.append(f"- {e['method']}, the largest changes (path - refits): "
                     + ", ".join(f"{s} {x:+.3f}" for s, x in e["largest changes"]))
    with atomic_path(dest.with_suffix(".json"), overwrite=overwrite) as tmp:
        tmp.write_text(json.dumps(effects, indent=1) + "\n")
    with atomic_path(dest, overwrite=overwrite) as tmp:
        tmp.write_text("\n".join(lines) + "\n")
    return dest
