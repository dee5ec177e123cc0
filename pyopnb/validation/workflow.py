"""A user's own OPNB workflow, checked two ways: regression and parity.

The workflow is R's: the fit from R's start with the given arguments, its
predictions on a test set (or the training rows), and, when asked,
``OPNB_CV_lam`` over stratified folds. :func:`compare_with_r` runs it in
pyopnb and answers two questions, kept apart (:mod:`.report`):

1. **Regression: did pyopnb's numbers change since the recording?** A
   recording holds pyopnb's own results beside R's. pyopnb gives the same
   bits on every CPU and thread count, so by default a replay asks for the
   same bits; ``rtol``/``atol`` loosen it per quantity (:mod:`.regression`).
2. **Parity: does pyopnb still agree with R?** Each quantity gets a
   tolerance and the reason for it:

   - *bit for bit*: quantities pyopnb computes with R's own arithmetic (the
     centring and scaling, the priors, the class labels and their order);
   - *R's spread*: where R's fit turns the last bits of its data into
     differences (a line search that stops one evaluation sooner, a point
     an ulp across a bin edge), R's own results move when X moves by 1e-15
     relative. R is rerun on ``X * (1 + 1e-15 u)`` (u uniform on [-1, 1],
     ``spread_seeds`` seeds, 4 by default; docs/numerics.md) and 10 times
     the largest move of a continuous quantity (fval, V, h, posteriors) and
     the largest move of a discrete one (classes, CV accuracies) are
     allowed, or a floor where R does not move at all: pyopnb's objective
     agrees with R's to about 1e-15 relative per evaluation;
   - *waived*: where R's fit or a CV fold's fit stopped on a non-finite
     value and kept its start (a known defect of R OPNB 1.0: FKSUM's sums
     overflow where pyopnb's stay finite), the rows it moves say so and
     show both values, and do not fail unless ``strict_r=True``.

With ``record=FILE`` the workflow's results are written to a new JSON
recording (:mod:`.recording`: the data's fingerprint, the arguments and
folds, R's side with its versions, spread, warnings and what it printed,
pyopnb's side with its version), checked by schema and checksum whenever
it is read. With ``against=FILE`` no R is needed: pyopnb is checked
against the recording. Both together carry the recording's R side into a
new recording with pyopnb's results now (after an intended change, or to
bring a recording of format 1 up to date).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np

from . import recording
from .fixtures import FIT_FLOOR, SEEDS, SPREAD_FACTOR, column_signs, perturbed
from .recording import RecordingError
from .regression import Tolerances
from .report import Report, Row

__all__ = ["Report", "Row", "RecordingError", "RUnavailable", "compare_with_r", "assert_matches_r", "check_recording"]

R_PACKAGES = ("OPNB", "FKSUM")
PathLike = Union[str, os.PathLike]
Tol = Union[None, float, Mapping[str, float]]

# the message R OPNB 1.0 warns with where optim stopped on a non-finite value and the start was kept
KEPT_START = "returning initial solution"


class RUnavailable(RuntimeError):
    """R, rpy2 or one of R's packages is missing; the message says which."""


# ---------------------------------------------------------------------------
# the workflow's inputs
# ---------------------------------------------------------------------------

_ARGS = ("ndim", "lam", "nbin", "scale", "cv", "nlam")


def _workflow_args(p: int, kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """The workflow's arguments, resolved as R resolves its defaults."""
    from .._validation import as_nbin, check_lam, check_ndim

    unknown = sorted(set(kwargs) - set(_ARGS))
    if unknown:
        raise TypeError(f"compare_with_r got unknown arguments {', '.join(unknown)}; it takes "
                        f"{', '.join(_ARGS)} (an R start: the comparison is of R's own workflow)")
    ndim = kwargs.get("ndim")
    cv = kwargs.get("cv")
    if cv is not None and (isinstance(cv, bool) or not isinstance(cv, (int, np.integer)) or cv < 2):
        raise ValueError(f"cv must be a number of folds >= 2, got {cv!r}")
    nlam = kwargs.get("nlam", 10)
    if isinstance(nlam, bool) or not isinstance(nlam, (int, np.integer)) or nlam < 1:
        raise ValueError(f"nlam must be a positive integer, got {nlam!r}")
    scale = kwargs.get("scale", True)
    if not isinstance(scale, (bool, np.bool_)):
        raise ValueError(f"scale must be True or False, got {scale!r}")
    return {"ndim": check_ndim(min(p, 20) if ndim is None else ndim, p), "lam": check_lam(kwargs.get("lam", 1e-3)),
            "nbin": as_nbin(kwargs.get("nbin", 1000)), "scale": bool(scale),
            "cv": None if cv is None else int(cv), "nlam": int(nlam)}


def _labels(y: Any, n: int) -> Tuple[np.ndarray, Optional[List[str]]]:
    """(y as a vector R reads with the same type: numbers, booleans or
    strings; a pandas Categorical's levels in its order, which R's factor
    keeps too, else None)."""
    from ..labels import _categorical, factor, level_text

    levels, _ = factor(y)  # the same label checks as a fit's, before R sees them
    cat = _categorical(y)
    a = np.asarray(cat if cat is not None else getattr(y, "to_numpy", lambda: y)())
    if a.ndim != 1 or a.size != n:
        raise ValueError(f"y must be a vector of {n} labels (one per row of X), got shape {a.shape}")
    if cat is not None:
        return np.asarray([str(v) for v in a.tolist()], dtype=object), level_text(levels)
    if a.dtype.kind in "biuf":
        return a, None
    return np.asarray([str(v) for v in a.tolist()], dtype=object), None


def _folds(y: np.ndarray, k: int) -> List[np.ndarray]:
    """k stratified folds, seeded as ``OPNB_CV_lam(folds=k)`` seeds them (0-based)."""
    from ..cv import _stratified_folds
    from ..labels import factor

    return _stratified_folds(k, factor(y)[1], 0)


@dataclass
class Inputs:
    """One workflow's data and arguments, checked and resolved once.

    ``y`` is what pyopnb fits (the user's labels, a Categorical kept as
    one); ``y_r`` the same labels as the vector R receives.
    """

    X: np.ndarray
    y: Any
    y_r: np.ndarray
    Xte: Optional[np.ndarray]
    levels: Optional[List[str]]
    args: Dict[str, Any]
    fp: Dict[str, Any]

    @classmethod
    def of(cls, X: Any, y: Any, Xte: Any, opnb_args: Dict[str, Any]) -> "Inputs":
        from .._validation import check_X, column_names

        Xa = check_X(X, "X")
        # a dataframe's test columns are matched to X's by name, in any order
        Xt = None if Xte is None else check_X(Xte, "Xte", d=Xa.shape[1], expected=column_names(X))
        ya, levels = _labels(y, Xa.shape[0])
        args = _workflow_args(Xa.shape[1], opnb_args)
        return cls(Xa, y if levels is not None else ya, ya, Xt, levels, args,
                   recording.fingerprint(Xa, ya, Xt, levels))

    def v1_sha(self) -> str:
        return recording.v1_sha256(self.X, self.y_r, self.Xte, self.levels)


# ---------------------------------------------------------------------------
# pyopnb's side
# ---------------------------------------------------------------------------

RESULTS = ("fval", "V", "h", "PI", "mu", "scales", "ynames", "posterior", "class")


def _pyopnb_side(run: Inputs, folds: Optional[List[np.ndarray]], threads: int) -> Dict[str, Any]:
    from ..cv import OPNB_CV_lam
    from ..fitting import OPNB
    from ..labels import level_text
    from ..model import predict

    a = run.args
    X, Xte = run.X, run.X if run.Xte is None else run.Xte
    m = OPNB(X, run.y, ndim=a["ndim"], lam=a["lam"], nbin=a["nbin"], scale=a["scale"], threads=threads)
    pred = predict(m, Xte, threads=threads)
    out = {"fval": m.fval, "V": m.V, "h": m.h, "PI": m.PI, "mu": m.mu, "scales": m.scales,
           "ynames": level_text(m.ynames), "posterior": pred["posterior"], "class": level_text(pred["class"]),
           "convergence": int(m.convergence)}
    if folds is not None:
        cv = OPNB_CV_lam(X, run.y, folds, nlam=a["nlam"], nbin=a["nbin"], ndim=a["ndim"], scale=a["scale"],
                         threads=threads)
        out["cv_stats"] = cv["cv_stats"]
    return out


# ---------------------------------------------------------------------------
# R's side
# ---------------------------------------------------------------------------

# R's warnings, collected rather than printed; where OPNB warns that it kept
# its start, the frames say which fit: OPNB's own (it holds Vout and lam)
# and, in OPNB_CV_lam, the fold loop's (it holds fl and yhats)
_R_HANDLER = """
warns__ <- character(0); kept_call__ <- character(0); kept_lam__ <- numeric(0); kept_fold__ <- integer(0)
quietly__ <- function(expr, call) withCallingHandlers(expr, warning = function(w) {
  msg <- conditionMessage(w); warns__ <<- c(warns__, msg)
  if (grepl("%s", msg, fixed = TRUE)) {
    lam <- NA_real_; fold <- NA_integer_
    for (f in rev(sys.frames())) {
      if (is.na(lam) && exists("Vout", envir = f, inherits = FALSE) && exists("lam", envir = f, inherits = FALSE))
        lam <- get("lam", envir = f)
      if (is.na(fold) && exists("fl", envir = f, inherits = FALSE) && exists("yhats", envir = f, inherits = FALSE))
        fold <- as.integer(get("fl", envir = f))
    }
    kept_call__ <<- c(kept_call__, call); kept_lam__ <<- c(kept_lam__, lam); kept_fold__ <<- c(kept_fold__, fold)
  }
  invokeRestart("muffleWarning")
})
""" % KEPT_START


def r_side(X, y, Xte, args, folds=None, levels=None) -> Dict[str, Any]:
    """R's OPNB on (X, y) with ``args`` (``_workflow_args``' keys), its
    predictions on Xte (None: X), and OPNB_CV_lam over ``folds`` (0-based;
    None: none); ``levels`` a factor's level order for y.

    Returns R's results (``fval``, ``V``, ``h``, ``PI``, ``mu``,
    ``scales``, ``ynames``, ``posterior``, ``class``, ``cv_stats``), with
    ``warnings`` (each once), ``kept_start`` (R's fits that stopped on a
    non-finite value and kept their start: the call, its lam and, in
    OPNB_CV_lam, the fold, 1-based) and ``console`` (what R printed, kept
    off the console)."""
    from . import rbridge

    rbridge.load_packages(*R_PACKAGES)
    with rbridge.console() as printed:
        rbridge.assign("X__", X)
        rbridge.assign("y__", y)
        if levels is not None:
            rbridge.assign("lev__", list(levels))
            rbridge.r("y__ <- factor(y__, levels = lev__)")
        rbridge.assign("Xte__", X if Xte is None else Xte)
        nb = "NULL" if args["nbin"] is None else int(args["nbin"])
        common = f"ndim = {args['ndim']}, nbin = {nb}, scale = {'TRUE' if args['scale'] else 'FALSE'}"
        rbridge.r(_R_HANDLER)
        rbridge.r(f"m__ <- quietly__(OPNB(X__, y__, lam = {args['lam']!r}, {common}), 'OPNB'); "
                  f"p__ <- predict(m__, Xte__)")
        get = lambda code: np.asarray(rbridge.r(code), dtype=np.float64)  # noqa: E731
        out: Dict[str, Any] = {
            "fval": float(get("m__$fval").ravel()[0]), "V": get("m__$V").reshape(X.shape[1], -1),
            "h": get("m__$h").reshape(-1, args["ndim"]), "PI": get("m__$PI").ravel(), "mu": get("m__$mu").ravel(),
            "scales": get("m__$scales").ravel(), "ynames": list(rbridge.strings("as.character(m__$ynames)")),
            "posterior": get("p__$posterior").reshape((X if Xte is None else Xte).shape[0], -1),
            "class": list(rbridge.strings("as.character(p__$class)"))}
        if folds is not None:
            rbridge.assign_folds("folds__", folds)
            rbridge.r(f"cv__ <- quietly__(OPNB_CV_lam(X__, y__, folds__, nlam = {args['nlam']}, {common}), "
                      f"'OPNB_CV_lam')")
            out["cv_stats"] = get("cv__$cv_stats").reshape(-1, 2)
        calls = rbridge.strings("kept_call__")
        lams = get("as.double(kept_lam__)").ravel()
        folds_kept = get("as.double(kept_fold__)").ravel()
        out["kept_start"] = [{"call": str(c), "lam": float(lam), "fold": None if np.isnan(f) else int(f)}
                             for c, lam, f in zip(calls, lams, folds_kept)]
        out["warnings"] = list(dict.fromkeys(" ".join(w.split()) for w in rbridge.strings("warns__")))
    out["console"] = "".join(printed)
    return out


def _r_versions() -> Dict[str, str]:
    from . import rbridge

    out = {"R": str(rbridge.strings("R.version.string")[0])}
    for pkg in R_PACKAGES:
        out[pkg] = str(rbridge.strings(f'as.character(packageVersion("{pkg}"))')[0])
    return out


def measure_spread(X, y, Xte, args, folds, ref, levels=None, seeds=SEEDS) -> Dict[str, float]:
    """How far R's own results (``ref``, from :func:`r_side`) move when X
    moves by 1e-15 relative, over ``seeds``."""
    s = {"seeds": len(seeds), "fval_rel": 0.0, "V_abs": 0.0, "h_rel": 0.0, "posterior_abs": 0.0,
         "class_changes": 0, "cv_accuracy_abs": 0.0}
    for seed in seeds:
        alt = r_side(perturbed(X, seed), y, Xte, args, folds, levels)
        s["fval_rel"] = max(s["fval_rel"], abs(alt["fval"] - ref["fval"]) / abs(ref["fval"]))
        s["V_abs"] = max(s["V_abs"], float(np.abs(alt["V"] * column_signs(alt["V"], ref["V"]) - ref["V"]).max()))
        s["h_rel"] = max(s["h_rel"], float((np.abs(alt["h"] - ref["h"]) / np.abs(ref["h"])).max()))
        s["posterior_abs"] = max(s["posterior_abs"], float(np.abs(alt["posterior"] - ref["posterior"]).max()))
        s["class_changes"] = max(s["class_changes"], sum(a != b for a, b in zip(alt["class"], ref["class"])))
        if folds is not None:
            d = float(np.abs(alt["cv_stats"][:, 1] - ref["cv_stats"][:, 1]).max())
            s["cv_accuracy_abs"] = max(s["cv_accuracy_abs"], d)
    return s


def _spread_seeds(n: Optional[int]) -> Tuple[int, ...]:
    if n is None:
        return SEEDS
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"spread_seeds must be a whole number >= 0 (0: R's spread is not measured), got {n!r}")
    return tuple(SEEDS[0] + k for k in range(int(n)))


def _live_r(run: Inputs, folds: Optional[List[np.ndarray]], seeds: Tuple[int, ...],
            r_inputs: Any = None) -> Dict[str, Any]:
    """R's side of a recording, from live R: its results, versions, how it
    got its data, its warnings and kept starts, what it printed, its spread."""
    X, Xte, y = (run.X, run.Xte, run.y_r) if r_inputs is None else (r_inputs.X, r_inputs.Xte, r_inputs.y)
    r = r_side(X, y, Xte, run.args, folds, run.levels)
    spread = measure_spread(X, y, Xte, run.args, folds, r, run.levels, seeds) if seeds else None
    return {"versions": _r_versions(), "input": None if r_inputs is None else r_inputs.section(),
            "results": {k: r[k] for k in RESULTS + ("cv_stats",) if k in r}, "warnings": r["warnings"],
            "kept_start": r["kept_start"], "console": r["console"], "spread": spread}


# ---------------------------------------------------------------------------
# parity rows
# ---------------------------------------------------------------------------

_FLOOR = {"fval_rel": FIT_FLOOR["fval_rel"], "V_abs": FIT_FLOOR["V_abs"], "h_rel": 1e-12,
          "posterior_abs": FIT_FLOOR["posterior_abs"]}
_NO_SPREAD = "R's spread not measured (spread_seeds=0)"


def _num(v: float) -> str:
    return f"{v:.4g}"


class _Parity:
    """Parity rows for one comparison: R's spread, and R's fits that kept their start."""

    def __init__(self, spread: Optional[Dict[str, float]], kept: List[Dict[str, Any]], strict_r: bool):
        self.spread, self.strict_r = spread, strict_r
        self.fit_kept = [e for e in kept if e["call"] == "OPNB"]
        self.cv_kept: Dict[float, List[int]] = {}
        for e in kept:
            if e["call"] == "OPNB_CV_lam" and e.get("fold") is not None:
                self.cv_kept.setdefault(float(e["lam"]), []).append(int(e["fold"]))

    def waive(self, row: Row, why: str) -> Row:
        row.detail = why if not row.detail else f"{row.detail}; {why}"
        row.verdict = "DIFFERS" if self.strict_r else "waived"
        if self.strict_r:
            row.detail += " (strict_r: not waived)"
        return row

    def exact(self, name: str, same: bool, detail: str = "") -> Row:
        return Row("parity", name, 0.0 if same else 1.0, 0.0, "bit for bit: R's arithmetic, ported",
                   "ok" if same else "DIFFERS", detail)

    def continuous(self, name: str, diff: float, key: str, relative: bool = False) -> Row:
        floor = _FLOOR[key]
        rel = " (relative)" if relative else ""
        if self.spread is None:
            if diff <= floor:
                return Row("parity", name, diff, floor, f"floor{rel}: within pyopnb's agreement with R's objective",
                           "ok")
            return Row("parity", name, diff, floor, _NO_SPREAD + rel, "not judged")
        moved = SPREAD_FACTOR * float(self.spread[key])
        if moved > floor:
            tol, source = moved, f"R's spread{rel}: {SPREAD_FACTOR:g} x {float(self.spread[key]):.1e}"
        else:
            tol, source = floor, f"floor{rel}: R does not move; pyopnb's objective is R's to ~1e-15 per evaluation"
        return Row("parity", name, diff, tol, source, "ok" if diff <= tol else "DIFFERS")

    def discrete(self, name: str, diffs: np.ndarray, key: str, unit: str) -> Row:
        diff = float(diffs.max()) if diffs.size else 0.0
        if self.spread is None:
            if diff == 0:
                return Row("parity", name, 0.0, 0.0, f"none differ ({_NO_SPREAD})", "ok")
            return Row("parity", name, diff, 0.0, _NO_SPREAD, "not judged")
        tol = float(self.spread[key])
        source = (f"R's spread: its own {unit} move by up to {tol:g}" if tol > 0
                  else f"R's spread: its own {unit} do not move")
        return Row("parity", name, diff, tol, source, "ok" if diff <= tol else "DIFFERS")

    def standardised(self, key: str, ours: np.ndarray, r: np.ndarray, on_r_parse: Any) -> Row:
        """mu or scales, bit for bit: pyopnb's arithmetic on the data R fitted.
        Where R read the files itself, that is R's own parse (``on_r_parse``:
        pyopnb's (mu, scales) of it, or False where the recording kept too
        few cells to rebuild it), and pyopnb's own parse may move them."""
        a = np.asarray(ours if on_r_parse is None or on_r_parse is False else on_r_parse[key])
        b = np.asarray(r)
        ok = a.shape == b.shape and np.array_equal(a, b)
        detail = "" if ok else f"max difference {np.abs(a - b).max() if a.shape == b.shape else 'shape'}"
        if on_r_parse is None:
            return self.exact(key, ok, detail)
        if on_r_parse is False:
            return Row("parity", key, 0.0, 0.0, "R fitted its own parse of the files, which the recording keeps "
                       "only in part", "not judged")
        moved = np.abs(np.asarray(ours) - b).max() if np.shape(ours) == b.shape else np.inf
        detail = "; ".join(filter(None, [detail, f"pyopnb's own parse of the files moves it by up to {moved:.1e}"
                                         if moved else ""]))
        return Row("parity", key, 0.0 if ok else 1.0, 0.0, "bit for bit on R's parse of the files: R's arithmetic, "
                   "ported", "ok" if ok else "DIFFERS", detail)

    def rows(self, ours: Dict[str, Any], r: Dict[str, Any], on_r_parse: Any = None) -> List[Row]:
        same = list(ours["ynames"]) == list(r["ynames"])
        rows = [self.exact("ynames", same, "" if same else f"pyopnb {ours['ynames'][:5]}, R {r['ynames'][:5]}")]
        rows += [self.standardised(key, ours[key], r[key], on_r_parse) for key in ("mu", "scales")]
        a, b = np.asarray(ours["PI"]), np.asarray(r["PI"])
        ok = a.shape == b.shape and np.array_equal(a, b)
        rows.append(self.exact("PI", ok, "" if ok else f"max difference "
                               f"{np.abs(a - b).max() if a.shape == b.shape else 'shape'}"))
        fit = [self.continuous("fval", abs(ours["fval"] - r["fval"]) / abs(r["fval"]), "fval_rel", True)]
        V, Vr = np.asarray(ours["V"]), np.asarray(r["V"])
        fit.append(self.continuous("V", float(np.abs(V - Vr).max()) if V.shape == Vr.shape else np.inf, "V_abs"))
        h, hr = np.asarray(ours["h"]), np.asarray(r["h"])
        fit.append(self.continuous("h", float((np.abs(h - hr) / np.abs(hr)).max()) if h.shape == hr.shape
                                   else np.inf, "h_rel", True))
        P, Pr = np.asarray(ours["posterior"]), np.asarray(r["posterior"])
        fit.append(self.continuous("posterior", float(np.abs(P - Pr).max()) if P.shape == Pr.shape else np.inf,
                                   "posterior_abs"))
        changed = np.asarray([sum(a != b for a, b in zip(ours["class"], r["class"]))], dtype=float)
        fit.append(self.discrete("class", changed, "class_changes", "classes"))
        if self.fit_kept:
            why = (f"R's fit stopped on a non-finite value and kept its start (R's known defect): fval R "
                   f"{r['fval']!r}, pyopnb {float(ours['fval'])!r}")
            fit = [self.waive(row, why) if row.verdict in ("DIFFERS", "not judged") else row for row in fit]
        rows += fit
        if "cv_stats" in r:
            rows += self.cv_rows(np.asarray(ours["cv_stats"]), np.asarray(r["cv_stats"]))
        return rows

    def cv_rows(self, S: np.ndarray, Sr: np.ndarray) -> List[Row]:
        same = S.shape == Sr.shape and np.allclose(S[:, 0], Sr[:, 0], rtol=1e-15, atol=0)
        rows = [self.exact("cv_lam", same)]
        if S.shape != Sr.shape:
            return rows + [Row("parity", "cv_accuracy", np.inf, 0.0, "shapes differ", "DIFFERS")]
        diffs = np.abs(S[:, 1] - Sr[:, 1])
        row = self.discrete("cv_accuracy", diffs, "cv_accuracy_abs", "accuracies")
        if row.verdict == "ok":
            return rows + [row]
        tol = row.tolerance
        beyond = [i for i in range(len(diffs)) if diffs[i] > tol]
        kept = [i for i in beyond if float(Sr[i, 0]) in self.cv_kept]
        others = [i for i in beyond if i not in kept]
        say = lambda i: f"lam {Sr[i, 0]:.6g}: R {_num(Sr[i, 1])}, pyopnb {_num(S[i, 1])}"  # noqa: E731
        folds = lambda i: ", ".join(map(str, sorted(set(self.cv_kept[float(Sr[i, 0])]))))  # noqa: E731
        explained = "; ".join(f"{say(i)}, where R's fit of fold {folds(i)} stopped on a non-finite value and kept "
                              f"its start (R's known defect)" for i in kept)
        if others:
            # R's defect explains some of the differences, not all: the row fails, saying which is which
            row.detail = "; ".join(filter(None, ["; ".join(say(i) for i in others), explained]))
        elif kept:
            row = self.waive(row, explained)
        return rows + [row]


# ---------------------------------------------------------------------------
# the one engine: a reference in, a recording out
# ---------------------------------------------------------------------------

def _check(run: Inputs, *, old: Optional[Dict[str, Any]], against: Optional[PathLike],
           record: Optional[PathLike], overwrite: bool = False, live: bool, parity: bool = True,
           threads: Optional[int], tol: Tolerances, strict_r: bool, seeds: Tuple[int, ...],
           r_inputs: Any = None) -> Report:
    """Run the workflow in pyopnb and check it.

    ``old`` a recording (:func:`.recording.load`, read from ``against``)
    to check against: its R side is used unless ``live``; ``record`` where
    to write the new recording (a new file, or in place with
    ``overwrite``); ``live`` R's side from live R; ``parity`` False for
    pyopnb's own bits only."""
    from .._threads import resolve

    threads = resolve(threads)
    if live:
        from . import rbridge

        reason = rbridge.why_not(R_PACKAGES)
        if reason:
            raise RUnavailable(f"comparing with R needs R with the OPNB and FKSUM packages, and rpy2: {reason}")
        folds = None if run.args["cv"] is None else _folds(run.y_r, run.args["cv"])
        r = _live_r(run, folds, seeds, r_inputs)
        r_source = "live R"
    elif old is not None:
        folds, r = old["folds"], old["R"]
        r_source = f"recording {against}"
    else:
        folds, r, r_source = (None if run.args["cv"] is None else _folds(run.y_r, run.args["cv"])), None, ""
    # a recording keeps R's side (written again as it came), even where parity is not checked
    r_kept, r = r, (r if parity else None)
    ours = _pyopnb_side(run, folds, threads)
    identity = recording.pyopnb_identity(threads)

    rows: List[Row] = []
    regression: Dict[str, Any] = {"now": identity}
    reference = None if old is None else old["pyopnb"]
    if reference is not None:
        from .regression import rows as regression_rows

        regression["recorded"] = reference["identity"]
        found = regression_rows(reference["results"], ours, tol)
        if record is not None:
            # a recording replaced on purpose: what changed is said, not failed
            for row in found:
                if row.verdict in ("DIFFERS", "ok"):
                    row.verdict = "updated"
        rows += found
    if record is not None:
        regression["status"] = "recorded"
        regression["why"] = f"pyopnb's results now are the reference in {record}"
    elif reference is None:
        regression["status"] = "not checked"
        regression["why"] = (f"{against} is of format 1 (no pyopnb results)" if old is not None
                             else "no recording to check against: record= writes one")
    else:
        regression["status"] = "checked"

    checks: Dict[str, Any] = {"regression": regression}
    meta: Dict[str, Any] = {"data": run.fp, "args": run.args}
    if r is not None:
        rows += _Parity(r["spread"], r["kept_start"], strict_r).rows(ours, r["results"], _on_r_parse(run, r))
        versions = r["versions"]
        about = ", ".join(v if k == "R" else f"{k} {v}" for k, v in versions.items())
        checks["parity"] = {"status": "checked", "R": f"{r_source} ({about})", "versions": versions,
                            "spread": r["spread"], "strict_r": strict_r}
        meta.update({"R warnings": r["warnings"], "R kept its start": r["kept_start"], "R console": r["console"]})
        if r["input"] is not None:
            meta["R parse"] = r["input"]
    else:
        why = ("parity=False: pyopnb's own bits only" if not parity
               else f"{against} holds no R side (recorded with parity=False)" if against is not None
               else "no R side")
        checks["parity"] = {"status": "not checked", "why": why}
    report = Report(rows, checks, meta)
    if record is not None:
        rec = {"data": run.fp, "args": run.args, "folds": None if folds is None else [f.tolist() for f in folds],
               "R": r_kept, "pyopnb": {"identity": identity, "results": ours}}
        (recording.replace if overwrite else recording.write_new)(record, rec)
    return report


def _on_r_parse(run: Inputs, r: Dict[str, Any]) -> Any:
    """pyopnb's (mu, scales) of R's own parse of the files, where R read
    them itself; False where the recording keeps too few cells to rebuild
    it; None where R fitted pyopnb's parse."""
    if r["input"] is None:
        return None
    from ..formulation import r_standardise
    from .rparse import training_matrix

    XR = training_matrix(run.X, r["input"])
    if XR is None:
        return False
    mu, scales, _ = r_standardise(XR, run.args["scale"])
    return {"mu": mu, "scales": scales}


def _check_record_path(record: PathLike) -> None:
    p = Path(record)
    if p.exists():
        raise FileExistsError(f"record={str(record)!r}: exists; a recording is never overwritten (remove it or "
                              f"choose another)")
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise FileNotFoundError(f"record={str(record)!r}: the folder {folder} does not exist")


# ---------------------------------------------------------------------------
# the entry points
# ---------------------------------------------------------------------------

def compare_with_r(X: Any, y: Any, Xte: Any = None, *, against: Optional[PathLike] = None,
                   record: Optional[PathLike] = None, threads: Optional[int] = None, rtol: Tol = None,
                   atol: Tol = None, strict_r: bool = False, spread_seeds: Optional[int] = None,
                   r_inputs: Any = None, **opnb_args: Any) -> Report:
    """Run one OPNB workflow in pyopnb and check it: regression against its
    recording, and parity with R (live through rpy2, or recorded).

    Parameters
    ----------
    X, y
        Training data (numeric matrix or dataframe; labels of any type R's
        ``as.factor`` reads: the same vector goes to R).
    Xte
        Rows to predict (None: the training rows).
    against
        A recording to check against instead of live R: no R is needed.
        pyopnb's results must keep their recorded bits (regression), and
        agree with R's recorded results (parity). Other data, other
        arguments, or a file edited or damaged since it was recorded raise
        :class:`RecordingError`.
    record
        Write the workflow's results, R's and pyopnb's, to this new JSON
        file (never overwritten; its folder must exist). With ``against``
        too, R's side is carried over from that recording and pyopnb's
        results now become the reference (no R needed): after an intended
        change, or to bring a recording of format 1 up to date.
    threads
        pyopnb's OpenMP threads for every fit (CV folds included); the
        results do not depend on it.
    rtol, atol
        Loosen regression from the same bits to ``|now - recorded| <= atol
        + rtol * |recorded|``: a number for every quantity that takes one
        (``fval``, ``V``, ``h``, ``PI``, ``mu``, ``scales``,
        ``posterior``, ``cv_lam``, ``cv_accuracy``), or a mapping
        ``{quantity: number}``.
    strict_r
        Fail parity where R's fit or a CV fold's fit stopped on a
        non-finite value and kept its start (waived by default: a known
        defect of R's, shown with both values).
    spread_seeds
        How many reruns of R on X moved by 1e-15 measure R's spread (live
        only; default 4). 0 skips them: parity then judges only what lies
        within the floor or bit for bit, and the rest is ``not judged``.
    r_inputs
        What R fits, where R read the files itself (:func:`.rparse.read_in_r`,
        the command's ``--r-reads-csv``); live only.
    **opnb_args
        ``ndim`` (default ``min(ncol(X), 20)``), ``lam`` (1e-3), ``nbin``
        (1000; None for exact sums), ``scale`` (True), ``cv`` (a number of
        stratified folds for ``OPNB_CV_lam``; None: no cross-validation) and
        ``nlam`` (10), as R's ``OPNB`` and ``OPNB_CV_lam`` take them.

    Returns
    -------
    Report
        ``.ok``, ``.rows`` (each with its ``check``), ``.verdict(check)``,
        ``.table()`` and ``.to_json()``.

    Raises
    ------
    RUnavailable
        Live comparison where R, rpy2, OPNB or FKSUM is missing.
    RecordingError
        A recording that cannot be used for these data and arguments.
    FileExistsError, FileNotFoundError
        ``record=`` an existing file, or in a missing folder (before R runs).
    """
    run = Inputs.of(X, y, Xte, opnb_args)
    tol = Tolerances.of(rtol, atol)
    if not isinstance(strict_r, (bool, np.bool_)):
        raise ValueError(f"strict_r must be True or False, got {strict_r!r}")
    live = against is None
    if not live and spread_seeds is not None:
        raise ValueError("spread_seeds= sets how live R's spread is measured; a recording keeps its own")
    if not live and r_inputs is not None:
        raise ValueError("r_inputs= is what live R reads; a recording keeps how R read its data")
    seeds = _spread_seeds(spread_seeds)
    if record is not None:
        _check_record_path(record)
    old = None
    if against is not None:
        old = recording.load(against, run.fp, run.args, legacy=run.v1_sha() if record is not None else None)
    return _check(run, old=old, against=against, record=record, live=live, threads=threads, tol=tol,
                  strict_r=bool(strict_r), seeds=seeds, r_inputs=r_inputs)


def assert_matches_r(X: Any, y: Any, Xte: Any = None, **kwargs: Any) -> Report:
    """Assert that pyopnb's workflow keeps its recorded bits and matches R's.

    Parameters
    ----------
    X : array-like or DataFrame of shape (n, d)
        Training data, as :func:`compare_with_r` takes it.
    y : array-like of shape (n,)
        Labels.
    Xte : array-like or DataFrame, optional
        Rows to predict (None: the training rows).
    **kwargs
        :func:`compare_with_r`'s other arguments (``against``, ``record``,
        ``threads``, ``rtol``, ``atol``, ``strict_r``, ``spread_seeds``,
        ``ndim``, ``lam``, ``nbin``, ``scale``, ``cv``, ``nlam``).

    Returns
    -------
    Report
        The checks, when every quantity passes.

    Raises
    ------
    AssertionError
        With the report's summary and table, when a quantity differs
        beyond its tolerance.
    """
    report = compare_with_r(X, y, Xte, **kwargs)
    if not report.ok:
        names = ", ".join(f"{r.check} {r.quantity}" for r in report.failures)
        raise AssertionError(f"pyopnb's workflow differs in {names}:\n{report.summary()}\n\n{report.table()}")
    return report


def check_recording(X: Any, y: Any, Xte: Any = None, *, path: PathLike, update: bool = False, parity: bool = True,
                    threads: Optional[int] = None, rtol: Tol = None, atol: Tol = None, strict_r: bool = False,
                    spread_seeds: Optional[int] = None, **opnb_args: Any) -> Report:
    """Replay a workflow's recording, or make it: the engine of the
    ``pyopnb_regression`` fixture, for any test runner or script.

    - ``path`` exists (and no ``update``): replay, with no R: regression
      against pyopnb's recorded results, parity against R's.
    - ``path`` is missing: record R's side (live R) and pyopnb's, and check
      parity live.
    - ``update=True``: record again on purpose, over ``path``: R's side with
      live R where R is, else kept from the recording; the report's
      regression rows say what changed (verdict ``updated``).

    Parameters
    ----------
    X, y, Xte
        The data, as :func:`compare_with_r` takes them.
    path : path-like
        The recording (its folder is made where missing).
    update : bool, default False
        Record again over an existing recording.
    parity : bool, default True
        Check pyopnb against R; False records and checks pyopnb's own bits
        only, with no R ever (a recording's R side is kept all the same).
    threads, rtol, atol, strict_r, spread_seeds, **opnb_args
        As :func:`compare_with_r` takes them (``spread_seeds`` when
        recording with R).

    Returns
    -------
    Report
        Its ``meta["recording"]`` says what was done (``action``:
        ``replayed``, ``recorded`` or ``updated``) in one line (``said``).

    Raises
    ------
    RecordingError
        A recording that cannot be used, or none and no R to make one.
    """
    from . import rbridge

    run = Inputs.of(X, y, Xte, opnb_args)
    common = dict(parity=bool(parity), threads=threads, tol=Tolerances.of(rtol, atol), strict_r=bool(strict_r),
                  seeds=_spread_seeds(spread_seeds))
    path = Path(path)
    if path.is_file() and not update:
        old = recording.load(path, run.fp, run.args)
        if parity and old["R"] is None:
            raise RecordingError(f"{path} holds no R side (recorded with parity=False): record it again where R is "
                                 f"(update=True, pytest --pyopnb-update), or check with parity=False")
        report = _check(run, old=old, against=path, record=None, live=False, **common)
        report.meta["recording"] = {"path": str(path), "action": "replayed", "said": f"replayed {path}"}
        return report
    missing_r = rbridge.why_not(R_PACKAGES) if parity else None
    live = parity and missing_r is None
    old, problem = None, None
    if path.is_file():
        try:
            old = recording.load(path, run.fp, run.args, legacy=run.v1_sha())
        except RecordingError as exc:
            problem = str(exc)
    if parity and not live:
        if not path.is_file():
            raise RecordingError(f"no recording at {path}, and no R to make one ({missing_r}): run once where R "
                                 f"has OPNB and FKSUM, or with parity=False to record pyopnb's own bits only")
        if old is None:
            raise RecordingError(f"{path} cannot be recorded again without R ({missing_r}), nor its R side kept: "
                                 f"{problem}")
        if old["R"] is None:
            raise RecordingError(f"{path} holds no R side to keep, and there is no R here ({missing_r})")
    path.parent.mkdir(parents=True, exist_ok=True)
    report = _check(run, old=old, against=path if old is not None else None, record=path,
                    overwrite=path.is_file(), live=live, **common)
    r_side = ("R's side from live R" if live else "R's side kept from the recording" if old and old["R"]
              else "no R side (parity=False)")
    if old is None:
        said = (f"recorded {path}" + (f" in place of one that could not be used ({problem})" if problem else "")
                + f": {r_side}, pyopnb {report.checks['regression']['now']['version']}")
    else:
        changed = [r for r in report.of("regression") if r.verdict == "updated"]
        what = ("pyopnb's results unchanged" if not changed else "pyopnb's results changed: "
                + "; ".join(f"{r.quantity} ({r.detail})" if r.detail else r.quantity for r in changed))
        said = f"updated {path}: {r_side}; {what}"
    report.meta["recording"] = {"path": str(path), "action": "recorded" if old is None else "updated", "said": said}
    return report
