"""A user's own OPNB workflow run in R and in pyopnb, compared quantity by quantity.

:func:`compare_with_r` fits OPNB from R's start with the same arguments on
both sides, predicts a test set (or the training rows), and, when asked,
runs ``OPNB_CV_lam`` over the same folds. Each quantity gets a tolerance and
the reason for it:

- *bit for bit*: quantities pyopnb computes with R's own arithmetic (the
  centring and scaling, the priors, the class labels and their order);
- *R's spread*: where R's fit turns the last bits of its data into
  differences (a line search that stops one evaluation sooner, a point an
  ulp across a bin edge), R's own results move when X moves by 1e-15
  relative. The comparison reruns R on ``X * (1 + 1e-15 u)`` (u uniform on
  [-1, 1], four seeds; docs/numerics.md) and allows 10 times the largest
  move of a continuous quantity (fval, V, h, posteriors) and the largest
  move of a discrete one (classes that change, CV accuracies), or a floor
  where R does not move at all: pyopnb's objective agrees with R's to about
  1e-15 relative per evaluation.

With ``record=FILE`` the R side is written to a JSON recording (the data's
fingerprint, the arguments, R's and its packages' versions, R's results and
spread); with ``against=FILE`` pyopnb is compared with that recording and no
R is needed. A recording replayed on other data or other arguments is an
error, not a comparison.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from .fixtures import FIT_FLOOR, SEEDS, SPREAD_FACTOR, column_signs, perturbed

__all__ = ["Report", "Row", "RecordingError", "RUnavailable", "compare_with_r", "assert_matches_r"]

FORMAT = "pyopnb-validate-recording"
FORMAT_VERSION = 1
R_PACKAGES = ("OPNB", "FKSUM")


class RecordingError(ValueError):
    """A recording that cannot be replayed here: another format, other data
    or other arguments than the ones it was made with."""


class RUnavailable(RuntimeError):
    """R, rpy2 or one of R's packages is missing; the message says which."""


@dataclass
class Row:
    """One compared quantity: its largest difference, the tolerance and
    where that tolerance comes from."""

    quantity: str
    difference: float
    tolerance: float
    source: str
    ok: bool
    detail: str = ""


@dataclass
class Report:
    """The comparison of one workflow with R's: a row a quantity, and what was compared.

    Parameters
    ----------
    rows : list of Row
        One compared quantity each: its largest difference, the tolerance,
        where the tolerance comes from, and whether it agrees.
    meta : dict, optional
        R's source (live or a recording), the versions, the data's
        fingerprint, the arguments, R's spread and R's warnings.
    """

    rows: List[Row]
    meta: Dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether every quantity is within its tolerance."""
        return all(r.ok for r in self.rows)

    @property
    def failures(self) -> List[Row]:
        """The rows that differ beyond their tolerance.

        Returns
        -------
        list of Row
            Empty when :attr:`ok`.
        """
        return [r for r in self.rows if not r.ok]

    def table(self) -> str:
        """The rows as a plain-text table, one line a quantity."""
        head = ["quantity", "difference", "tolerance", "verdict", "tolerance from"]
        body = [[r.quantity, _num(r.difference), _num(r.tolerance), "ok" if r.ok else "DIFFERS",
                 r.source + (f" ({r.detail})" if r.detail else "")] for r in self.rows]
        widths = [max(len(head[i]), *(len(b[i]) for b in body)) for i in range(4)]
        line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths + [0])).rstrip()  # noqa: E731
        return "\n".join([line(head), line(["-" * w for w in widths] + ["-" * 14])] + [line(b) for b in body])

    def __str__(self) -> str:
        return self.table()

    def to_json(self) -> str:
        """The report as JSON (non-finite numbers as strings)."""
        return json.dumps({"ok": self.ok, "rows": [_jsonable(asdict(r)) for r in self.rows],
                           "meta": _jsonable(self.meta)}, indent=1)


def _num(v: float) -> str:
    if isinstance(v, (int, np.integer)) or float(v).is_integer() and abs(v) < 1e6:
        return str(int(v))
    return f"{v:.2e}"


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _jsonable(u) for k, u in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(u) for u in v]
    if isinstance(v, np.ndarray):
        return _jsonable(v.tolist())
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return f if np.isfinite(f) else str(f)
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def _floats(v: Any) -> np.ndarray:
    """A recording's numbers back as float64 ('inf', 'nan' strings included)."""
    def conv(u):
        if isinstance(u, list):
            return [conv(w) for w in u]
        return float(u)
    return np.asarray(conv(v), dtype=np.float64)


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


def fingerprint(X: np.ndarray, y: np.ndarray, Xte: Optional[np.ndarray],
                levels: Optional[List[str]] = None) -> Dict[str, Any]:
    """What identifies the data: their shapes and a SHA-256 of their bits
    (and of a Categorical's level order)."""
    h = hashlib.sha256()
    if levels is not None:
        h.update(("levels\x1e" + "\x1f".join(levels)).encode())
    for a in (X, Xte):
        if a is not None:
            h.update(repr(a.shape).encode())
            h.update(np.ascontiguousarray(a, dtype="<f8").tobytes())
    h.update(repr(y.dtype.kind).encode())
    h.update("\x1f".join(map(str, y.tolist())).encode())
    return {"sha256": h.hexdigest(), "n": int(X.shape[0]), "p": int(X.shape[1]),
            "test_rows": None if Xte is None else int(Xte.shape[0])}


def _folds(y: np.ndarray, k: int) -> List[np.ndarray]:
    """k stratified folds, seeded as ``OPNB_CV_lam(folds=k)`` seeds them (0-based)."""
    from ..cv import _stratified_folds
    from ..labels import factor

    return _stratified_folds(k, factor(y)[1], 0)


# ---------------------------------------------------------------------------
# the two sides
# ---------------------------------------------------------------------------

def _pyopnb_side(X, y, Xte, args, folds, threads) -> Dict[str, Any]:
    from ..cv import OPNB_CV_lam
    from ..fitting import OPNB
    from ..labels import level_text
    from ..model import predict

    m = OPNB(X, y, ndim=args["ndim"], lam=args["lam"], nbin=args["nbin"], scale=args["scale"], threads=threads)
    pred = predict(m, X if Xte is None else Xte, threads=threads)
    out = {"fval": m.fval, "V": m.V, "h": m.h, "PI": m.PI, "mu": m.mu, "scales": m.scales,
           "ynames": level_text(m.ynames), "posterior": pred["posterior"], "class": level_text(pred["class"])}
    if folds is not None:
        cv = OPNB_CV_lam(X, y, folds, nlam=args["nlam"], nbin=args["nbin"], ndim=args["ndim"], scale=args["scale"])
        out["cv_stats"] = cv["cv_stats"]
    return out


def r_side(X, y, Xte, args, folds=None, levels=None) -> Dict[str, Any]:
    """R's OPNB on (X, y) with ``args`` (``_workflow_args``' keys), its
    predictions on Xte (None: X), and OPNB_CV_lam over ``folds`` (0-based;
    None: none); ``levels`` a factor's level order for y. R's warnings are
    collected, not printed."""
    from . import rbridge

    rbridge.load_packages(*R_PACKAGES)
    rbridge.assign("X__", X)
    rbridge.assign("y__", y)
    if levels is not None:
        rbridge.assign("lev__", list(levels))
        rbridge.r("y__ <- factor(y__, levels = lev__)")
    rbridge.assign("Xte__", X if Xte is None else Xte)
    nb = "NULL" if args["nbin"] is None else int(args["nbin"])
    common = f"ndim = {args['ndim']}, nbin = {nb}, scale = {'TRUE' if args['scale'] else 'FALSE'}"
    rbridge.r("warns__ <- character(0); quietly__ <- function(expr) withCallingHandlers(expr, warning = function(w) "
              "{ warns__ <<- c(warns__, conditionMessage(w)); invokeRestart('muffleWarning') })")
    rbridge.r(f"m__ <- quietly__(OPNB(X__, y__, lam = {args['lam']!r}, {common})); p__ <- predict(m__, Xte__)")
    get = lambda code: np.asarray(rbridge.r(code), dtype=np.float64)  # noqa: E731
    out = {"fval": float(get("m__$fval").ravel()[0]), "V": get("m__$V").reshape(X.shape[1], -1),
           "h": get("m__$h").reshape(-1, args["ndim"]), "PI": get("m__$PI").ravel(), "mu": get("m__$mu").ravel(),
           "scales": get("m__$scales").ravel(), "ynames": list(rbridge.strings("as.character(m__$ynames)")),
           "posterior": get("p__$posterior").reshape((X if Xte is None else Xte).shape[0], -1),
           "class": list(rbridge.strings("as.character(p__$class)"))}
    if folds is not None:
        rbridge.assign_folds("folds__", folds)
        rbridge.r(f"cv__ <- quietly__(OPNB_CV_lam(X__, y__, folds__, nlam = {args['nlam']}, {common}))")
        out["cv_stats"] = get("cv__$cv_stats").reshape(-1, 2)
    # R's warnings, each once: what R said of its own fits (a fit that kept its start, say)
    out["warnings"] = list(dict.fromkeys(" ".join(w.split()) for w in rbridge.strings("warns__")))
    return out


def _r_versions() -> Dict[str, str]:
    from . import rbridge

    out = {"R": str(rbridge.strings("R.version.string")[0])}
    for pkg in R_PACKAGES:
        out[pkg] = str(rbridge.strings(f'as.character(packageVersion("{pkg}"))')[0])
    return out


def measure_spread(X, y, Xte, args, folds, ref, levels=None) -> Dict[str, float]:
    """How far R's own results (``ref``, from :func:`r_side`) move when X
    moves by 1e-15 relative, over the seeds of the recorded fixtures."""
    s = {"fval_rel": 0.0, "V_abs": 0.0, "h_rel": 0.0, "posterior_abs": 0.0, "class_changes": 0, "cv_accuracy_abs": 0.0}
    for seed in SEEDS:
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


# ---------------------------------------------------------------------------
# rows
# ---------------------------------------------------------------------------

_FLOOR = {"fval_rel": FIT_FLOOR["fval_rel"], "V_abs": FIT_FLOOR["V_abs"], "h_rel": 1e-12,
          "posterior_abs": FIT_FLOOR["posterior_abs"]}


def _continuous(name: str, diff: float, key: str, spread: Dict[str, float]) -> Row:
    floor, moved = _FLOOR[key], SPREAD_FACTOR * float(spread[key])
    if moved > floor:
        tol, source = moved, f"R's spread: {SPREAD_FACTOR:g} x {float(spread[key]):.1e}"
    else:
        tol, source = floor, "floor: R does not move; pyopnb's objective is R's to ~1e-15 per evaluation"
    return Row(name, diff, tol, source, bool(diff <= tol))


def _discrete(name: str, diff: float, key: str, spread: Dict[str, float], unit: str) -> Row:
    tol = float(spread[key])
    source = (f"R's spread: its own {unit} move by up to {_num(tol)}" if tol > 0
              else f"R's spread: its own {unit} do not move")
    return Row(name, diff, tol, source, bool(diff <= tol))


def _exact(name: str, same: bool, detail: str = "") -> Row:
    return Row(name, 0.0 if same else 1.0, 0.0, "bit for bit: R's arithmetic, ported", bool(same), detail)


def _rows(ours: Dict[str, Any], r: Dict[str, Any], spread: Dict[str, float]) -> List[Row]:
    rows = [_exact("class labels (levels, in order)", list(ours["ynames"]) == list(r["ynames"]),
                   "" if list(ours["ynames"]) == list(r["ynames"])
                   else f"pyopnb {ours['ynames'][:5]}, R {r['ynames'][:5]}")]
    for key in ("mu", "scales", "PI"):
        a, b = np.asarray(ours[key]), np.asarray(r[key])
        same = a.shape == b.shape and np.array_equal(a, b)
        rows.append(_exact({"mu": "column means", "scales": "column scales", "PI": "priors"}[key], same,
                           "" if same else f"max difference {np.abs(a - b).max() if a.shape == b.shape else 'shape'}"))
    rows.append(_continuous("fval (relative)", abs(ours["fval"] - r["fval"]) / abs(r["fval"]), "fval_rel", spread))
    V, Vr = np.asarray(ours["V"]), np.asarray(r["V"])
    rows.append(_continuous("V", float(np.abs(V - Vr).max()) if V.shape == Vr.shape else np.inf, "V_abs", spread))
    h, hr = np.asarray(ours["h"]), np.asarray(r["h"])
    rows.append(_continuous("h (relative)", float((np.abs(h - hr) / np.abs(hr)).max()) if h.shape == hr.shape
                            else np.inf, "h_rel", spread))
    P, Pr = np.asarray(ours["posterior"]), np.asarray(r["posterior"])
    rows.append(_continuous("posteriors", float(np.abs(P - Pr).max()) if P.shape == Pr.shape else np.inf,
                            "posterior_abs", spread))
    changed = sum(a != b for a, b in zip(ours["class"], r["class"]))
    rows.append(_discrete("predicted classes that differ", changed, "class_changes", spread, "classes"))
    if "cv_stats" in r:
        S, Sr = np.asarray(ours["cv_stats"]), np.asarray(r["cv_stats"])
        rows.append(_exact("CV lam values", S.shape == Sr.shape and np.allclose(S[:, 0], Sr[:, 0], rtol=1e-15, atol=0)))
        rows.append(_discrete("CV accuracy", float(np.abs(S[:, 1] - Sr[:, 1]).max()) if S.shape == Sr.shape
                              else np.inf, "cv_accuracy_abs", spread, "accuracies"))
    return rows


# ---------------------------------------------------------------------------
# recordings
# ---------------------------------------------------------------------------

def _recording(fp, args, folds, versions, r, spread) -> Dict[str, Any]:
    return {"format": FORMAT, "version": FORMAT_VERSION, "data": fp, "args": args,
            "folds": None if folds is None else [np.asarray(f).tolist() for f in folds],
            "versions": versions, "R": _jsonable(r), "spread": spread}


def read_recording(path: Union[str, os.PathLike], fp: Dict[str, Any], args: Dict[str, Any]) -> Dict[str, Any]:
    """A recording's R side, after checking that it was made on these data
    with these arguments (RecordingError names what differs)."""
    p = Path(path)
    if not p.is_file():
        raise RecordingError(f"{p}: no such recording")
    try:
        rec = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordingError(f"{p}: not a recording of pyopnb validate (not JSON: {exc})") from None
    if not isinstance(rec, dict) or rec.get("format") != FORMAT:
        raise RecordingError(f"{p}: not a recording of pyopnb validate (no format {FORMAT!r})")
    if rec.get("version") != FORMAT_VERSION:
        raise RecordingError(f"{p}: recording format version {rec.get('version')!r}; this pyopnb reads "
                             f"version {FORMAT_VERSION}")
    data = rec.get("data", {})
    if data != fp:
        what = ", ".join("their SHA-256 differs" if k == "sha256" else f"{k} {data.get(k)!r} there, {fp[k]!r} here"
                         for k in fp if data.get(k) != fp[k])
        raise RecordingError(f"{p} was recorded on other data ({what}): a recording replays only on the data it "
                             f"was made with; record again with --record")
    if rec.get("args") != args:
        theirs = rec.get("args", {})
        what = ", ".join(f"{k}={theirs.get(k)!r} there, {args[k]!r} here" for k in args if theirs.get(k) != args[k])
        raise RecordingError(f"{p} was recorded with other arguments ({what}): record again with these")
    r = dict(rec["R"])
    for key in ("V", "h", "PI", "mu", "scales", "posterior", "cv_stats"):
        if key in r:
            r[key] = _floats(r[key])
    r["fval"] = float(r["fval"])
    folds = None if rec.get("folds") is None else [np.asarray(f, dtype=np.intp) for f in rec["folds"]]
    return {"R": r, "spread": rec["spread"], "versions": rec.get("versions", {}), "folds": folds}


def _write_new(path: Union[str, os.PathLike], text: str) -> None:
    """Write a file that must not exist yet (no recording is overwritten)."""
    with open(path, "x", encoding="utf-8") as fh:
        fh.write(text)


# ---------------------------------------------------------------------------
# the entry points
# ---------------------------------------------------------------------------

def compare_with_r(X: Any, y: Any, Xte: Any = None, *, against: Union[None, str, os.PathLike] = None,
                   record: Union[None, str, os.PathLike] = None, threads: Optional[int] = None,
                   **opnb_args: Any) -> Report:
    """Run one OPNB workflow in R (through rpy2) and in pyopnb and compare them.

    Parameters
    ----------
    X, y
        Training data (numeric matrix or dataframe; labels of any type R's
        ``as.factor`` reads: the same vector goes to R).
    Xte
        Rows to predict (None: the training rows).
    against
        A recording (``record=``) to compare with instead of live R: no R is
        needed. Other data or other arguments raise :class:`RecordingError`.
    record
        Also write R's side to this new JSON file (never overwritten).
    threads
        pyopnb's OpenMP threads.
    **opnb_args
        ``ndim`` (default ``min(ncol(X), 20)``), ``lam`` (1e-3), ``nbin``
        (1000; None for exact sums), ``scale`` (True), ``cv`` (a number of
        stratified folds for ``OPNB_CV_lam``; None: no cross-validation) and
        ``nlam`` (10), as R's ``OPNB`` and ``OPNB_CV_lam`` take them.

    Returns
    -------
    Report
        ``.ok``, ``.rows``, ``.table()`` and ``.to_json()``.

    Raises
    ------
    RUnavailable
        Live comparison where R, rpy2, OPNB or FKSUM is missing.
    RecordingError
        A recording that does not belong to these data and arguments.
    """
    from .._threads import resolve
    from .._validation import check_X, column_names

    if against is not None and record is not None:
        raise ValueError("record= and against= exclude each other: record runs R, against replaces it")
    Xa = check_X(X, "X")
    # a dataframe's test columns are matched to X's by name, in any order
    Xt = None if Xte is None else check_X(Xte, "Xte", d=Xa.shape[1], expected=column_names(X))
    ya, levels = _labels(y, Xa.shape[0])
    args = _workflow_args(Xa.shape[1], opnb_args)
    fp = fingerprint(Xa, ya, Xt, levels)
    if record is not None and Path(record).exists():
        raise FileExistsError(f"{record}: exists; a recording is never overwritten (remove it or choose another)")
    threads = resolve(threads)
    if against is not None:
        rec = read_recording(against, fp, args)
        r, spread, versions, folds = rec["R"], rec["spread"], rec["versions"], rec["folds"]
        source = f"recording {against}"
    else:
        from . import rbridge

        reason = rbridge.why_not(R_PACKAGES)
        if reason:
            raise RUnavailable(f"comparing with R needs R with the OPNB and FKSUM packages, and rpy2: {reason}")
        folds = None if args["cv"] is None else _folds(ya, args["cv"])
        r = r_side(Xa, ya, Xt, args, folds, levels)
        spread = measure_spread(Xa, ya, Xt, args, folds, r, levels)
        versions = _r_versions()
        source = "live R"
    ours = _pyopnb_side(Xa, y if levels is not None else ya, Xt, args, folds, threads)
    report = Report(_rows(ours, r, spread), {"R": source, "versions": versions, "data": fp, "args": args,
                                             "spread": spread, "R warnings": list(r.get("warnings", []))})
    if record is not None:
        _write_new(record, json.dumps(_recording(fp, args, folds, versions, r, spread), indent=1))
    return report


def assert_matches_r(X: Any, y: Any, Xte: Any = None, **kwargs: Any) -> Report:
    """Assert that pyopnb's workflow matches R's on these data.

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
        ``threads``, ``ndim``, ``lam``, ``nbin``, ``scale``, ``cv``, ``nlam``).

    Returns
    -------
    Report
        The comparison, when every quantity agrees.

    Raises
    ------
    AssertionError
        With the report's table, when a quantity differs beyond its
        tolerance.
    """
    report = compare_with_r(X, y, Xte, **kwargs)
    if not report.ok:
        names = ", ".join(r.quantity for r in report.failures)
        raise AssertionError(f"pyopnb differs from R in {names}:\n{report.table()}")
    return report
