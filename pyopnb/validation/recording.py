"""Recordings of a workflow: R's side and pyopnb's own, checked before use.

A recording holds what identifies the data (:func:`fingerprint`), the
workflow's arguments and folds, R's results with its versions, spread,
warnings and what it printed, and pyopnb's results with its version: the
two references a replay checks against (parity with R, and regression
against pyopnb's own recorded bits).

Before a recording is used its schema is checked (every section, every
quantity's shape against the data and arguments) and then its checksum, a
SHA-256 over its canonical JSON: a file edited by hand, cut short, half
written or missing a part is refused with one line naming what is wrong,
never replayed. The file is written so that it diffs well in git: keys in
a fixed order, one matrix row or ten vector entries a line, numbers in
their shortest form that reads back to the same bits.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from .report import jsonable

__all__ = ["RecordingError", "FORMAT", "FORMAT_VERSION", "fingerprint", "data_difference", "pyopnb_identity",
           "dumps", "load", "write_new", "replace", "v1_sha256"]

FORMAT = "pyopnb-validate-recording"
FORMAT_VERSION = 2

PathLike = Union[str, os.PathLike]


class RecordingError(ValueError):
    """A recording that cannot be used here: not a recording, damaged or
    edited since it was made, missing a part, or made on other data or with
    other arguments. The message is one line naming what is wrong."""


# ---------------------------------------------------------------------------
# what identifies the data
# ---------------------------------------------------------------------------

def _sha(a: Optional[np.ndarray]) -> Optional[str]:
    if a is None:
        return None
    h = hashlib.sha256(repr(a.shape).encode())
    h.update(np.ascontiguousarray(a, dtype="<f8").tobytes())
    return h.hexdigest()


def _label_type(y: np.ndarray, levels: Optional[List[str]]) -> str:
    """The labels' type as R reads it: a factor keeps its level order, the
    others sort as their type sorts (2 < 10 as numbers, "10" < "2" as text)."""
    if levels is not None:
        return "factor"
    return {"b": "logical", "i": "integer", "u": "integer", "f": "double"}.get(y.dtype.kind, "character")


def fingerprint(X: np.ndarray, y: np.ndarray, Xte: Optional[np.ndarray],
                levels: Optional[List[str]] = None) -> Dict[str, Any]:
    """What identifies a workflow's data, part by part, so that a mismatch
    can say which part differs.

    Parameters
    ----------
    X : ndarray of shape (n, p)
        The training data, float64.
    y : ndarray of shape (n,)
        The labels, as R receives them (numbers, booleans or strings).
    Xte : ndarray of shape (m, p) or None
        The rows predicted (None: the training rows).
    levels : list of str, optional
        A factor's level order (a pandas Categorical's).

    Returns
    -------
    dict
        ``n``, ``p``, ``test_rows``; SHA-256 of the training and test
        values; the labels' type, levels (R's text, in the factor's order)
        and a SHA-256 of the labels.
    """
    from ..labels import factor, level_text

    lev, _ = factor(y if levels is None else np.asarray(y, dtype=object))
    text = level_text(lev) if levels is None else list(levels)
    h = hashlib.sha256(repr(y.dtype.kind).encode())
    h.update("\x1f".join(map(str, y.tolist())).encode())
    return {"n": int(X.shape[0]), "p": int(X.shape[1]), "test_rows": None if Xte is None else int(Xte.shape[0]),
            "X": _sha(X), "Xte": _sha(Xte),
            "labels": {"type": _label_type(y, levels), "levels": text, "sha256": h.hexdigest()}}


def _short(levels: Sequence[str]) -> str:
    return repr(list(levels)) if len(levels) <= 6 else repr(list(levels[:6]))[:-1] + f", ... ({len(levels)})]"


def data_difference(recorded: Dict[str, Any], now: Dict[str, Any]) -> Optional[str]:
    """Which part of the data differs between a recording's fingerprint
    and this run's, in words; None when they are the same."""
    parts = []
    if recorded.get("n") != now["n"]:
        parts.append(f"the row count: {recorded.get('n')} there, {now['n']} here")
    if recorded.get("p") != now["p"]:
        parts.append(f"the column count: {recorded.get('p')} there, {now['p']} here")
    if recorded.get("test_rows") != now["test_rows"]:
        say = lambda m: "none (the training rows predicted)" if m is None else m  # noqa: E731
        parts.append(f"the test rows: {say(recorded.get('test_rows'))} there, {say(now['test_rows'])} here")
    rl, nl = recorded.get("labels") or {}, now["labels"]
    if rl.get("type") != nl["type"]:
        parts.append(f"the labels' type: {rl.get('type')} there, {nl['type']} here")
    if rl.get("levels") != nl["levels"]:
        parts.append(f"the labels' levels: {_short(rl.get('levels') or [])} there, {_short(nl['levels'])} here")
    elif rl.get("sha256") != nl["sha256"] and rl.get("type") == nl["type"]:
        parts.append("the labels' values (the same levels)")
    if not parts:
        if recorded.get("X") != now["X"]:
            parts.append("the training values")
        if recorded.get("Xte") != now["Xte"]:
            parts.append("the test values")
    return "; ".join(parts) if parts else None


def pyopnb_identity(threads: int) -> Dict[str, Any]:
    """pyopnb's version, the day, and the machine and settings of a run
    (the results do not depend on the last three: they say where the
    recording was made)."""
    import numpy

    from .. import __version__
    from .._core import simd

    return {"version": __version__, "date": datetime.date.today().isoformat(),
            "machine": platform.machine(), "simd": simd.simd(), "threads": int(threads),
            "python": platform.python_version(), "numpy": numpy.__version__}


# ---------------------------------------------------------------------------
# writing: canonical form, checksum, a layout that diffs well
# ---------------------------------------------------------------------------

def _canonical(rec: Dict[str, Any]) -> str:
    body = {k: v for k, v in rec.items() if k != "checksum"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def _checksum(rec: Dict[str, Any]) -> str:
    return "sha256:" + hashlib.sha256(_canonical(rec).encode()).hexdigest()


def _scalar(v: Any) -> bool:
    return not isinstance(v, (dict, list))


def _layout(v: Any, indent: int) -> str:
    pad, inner = " " * indent, " " * (indent + 1)
    one = lambda u: json.dumps(u, ensure_ascii=False, allow_nan=False)  # noqa: E731
    if isinstance(v, dict):
        if not v:
            return "{}"
        items = [f"{inner}{one(k)}: {_layout(u, indent + 1)}" for k, u in v.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(v, list):
        if all(_scalar(u) for u in v):
            if len(v) <= 10:
                return "[" + ", ".join(one(u) for u in v) + "]"
            # ten entries a line: one changed entry is one changed line
            lines = [", ".join(one(u) for u in v[i:i + 10]) for i in range(0, len(v), 10)]
            return "[\n" + ",\n".join(inner + line for line in lines) + "\n" + pad + "]"
        if all(isinstance(u, list) and all(_scalar(w) for w in u) for u in v):
            # a matrix: one row a line
            return "[\n" + ",\n".join(inner + "[" + ", ".join(one(w) for w in u) + "]" for u in v) + "\n" + pad + "]"
        return "[\n" + ",\n".join(inner + _layout(u, indent + 1) for u in v) + "\n" + pad + "]"
    return one(v)


def dumps(rec: Dict[str, Any]) -> str:
    """A recording as the text of its file, with its checksum.

    Parameters
    ----------
    rec : dict
        The recording without its checksum (numpy arrays allowed).

    Returns
    -------
    str
        JSON laid out to diff well, ending in a newline.
    """
    body = jsonable({"format": FORMAT, "version": FORMAT_VERSION,
                      **{k: v for k, v in rec.items() if k not in ("checksum", "format", "version")}})
    out = {"format": FORMAT, "version": FORMAT_VERSION, "checksum": _checksum(body), **body}
    return _layout(out, 0) + "\n"


# how a recording is replaced on purpose, for the refusal of an existing one
_UPDATE = "record again on purpose (update=True, or validate --update)"


def _write(path: PathLike, rec: Dict[str, Any], overwrite: bool) -> None:
    """A recording written through a file beside ``path`` and moved onto it
    whole: an interrupted write leaves no partial recording, and the old
    one (if any) whole."""
    from ..rio import atomic_path

    text = dumps(rec)
    with atomic_path(path, overwrite=overwrite, how=_UPDATE) as tmp:
        Path(tmp).write_text(text, encoding="utf-8")


def write_new(path: PathLike, rec: Dict[str, Any]) -> None:
    """Write a recording to a file that must not exist yet (none is
    overwritten: FileExistsError, also where another writer makes it
    meanwhile)."""
    _write(path, rec, False)


def replace(path: PathLike, rec: Dict[str, Any]) -> None:
    """Write a recording in place of an existing one, asked for on purpose
    (an update)."""
    _write(path, rec, True)


# ---------------------------------------------------------------------------
# reading: the schema, then the checksum
# ---------------------------------------------------------------------------

def _floats(v: Any) -> np.ndarray:
    def conv(u):
        if isinstance(u, list):
            return [conv(w) for w in u]
        if isinstance(u, str):
            return float(u.replace("Inf", "inf").replace("NaN", "nan"))
        if isinstance(u, bool) or not isinstance(u, (int, float)):
            raise TypeError(u)
        return float(u)
    return np.asarray(conv(v), dtype=np.float64)


_KIND_NAMES = {dict: "a table", list: "a list", str: "text", int: "a whole number", float: "a number"}


class _Schema:
    """Checks one recording against the data and arguments it claims, and
    turns its numbers back into arrays; every complaint is one line."""

    def __init__(self, path: PathLike):
        self.path = path

    def fail(self, what: str) -> RecordingError:
        return RecordingError(f"{self.path}: {what}")

    def section(self, parent: Dict[str, Any], key: str, where: str, kind: Any = dict, null: bool = False) -> Any:
        if key not in parent:
            raise self.fail(f"{where} lacks its {key!r} section: the file is incomplete or was edited")
        v = parent[key]
        if v is None and null:
            return None
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if not isinstance(v, kinds) or (isinstance(v, bool) and bool not in kinds):
            names = " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)
            raise self.fail(f"{where}'s {key!r} is not {names}: the file was edited or damaged")
        return v

    def array(self, side: Dict[str, Any], key: str, where: str, shape: Sequence[Optional[int]]) -> np.ndarray:
        raw = self.section(side, key, where, (int, float, str) if not shape else list)
        try:
            a = _floats(raw)
        except (TypeError, ValueError):
            raise self.fail(f"{where}'s {key!r} holds something other than numbers (or is ragged)") from None
        if a.ndim != len(shape) or any(s is not None and s != t for s, t in zip(shape, a.shape)):
            want = "a number" if not shape else "x".join("?" if s is None else str(s) for s in shape)
            raise self.fail(f"{where}'s {key!r} has shape {'x'.join(map(str, a.shape)) or 'scalar'}, "
                            f"the data and arguments give {want}: the file was cut or edited")
        return a

    def strings(self, side: Dict[str, Any], key: str, where: str, size: Optional[int], what: str) -> List[str]:
        v = self.section(side, key, where, list)
        if not all(isinstance(s, str) for s in v):
            raise self.fail(f"{where}'s {key!r} holds something other than text")
        if size is not None and len(v) != size:
            raise self.fail(f"{where}'s {key!r} has {len(v)} entries, {what} {size}: the file was cut or edited")
        return list(v)

    def results(self, side: Dict[str, Any], where: str, args: Dict[str, Any], p: int, m: int,
                pyopnb: bool) -> Dict[str, Any]:
        """A side's results as arrays, each shape checked."""
        ynames = self.strings(side, "ynames", where, None, "")
        K, ndim = len(ynames), int(args["ndim"])
        out: Dict[str, Any] = {"ynames": ynames}
        out["fval"] = float(self.array(side, "fval", where, ()))
        out["V"] = self.array(side, "V", where, (p, ndim))
        out["h"] = self.array(side, "h", where, (K, ndim))
        out["PI"] = self.array(side, "PI", where, (K,))
        out["mu"] = self.array(side, "mu", where, (p,))
        out["scales"] = self.array(side, "scales", where, (p,))
        out["posterior"] = self.array(side, "posterior", where, (m, K))
        out["class"] = self.strings(side, "class", where, m, "the rows predicted are")
        if args.get("cv") is not None:
            out["cv_stats"] = self.array(side, "cv_stats", where, (int(args["nlam"]), 2))
        elif "cv_stats" in side:
            raise self.fail(f"{where} has 'cv_stats' but the recording's arguments have no cv")
        if pyopnb:
            conv = self.section(side, "convergence", where, int)
            out["convergence"] = int(conv)
        return out


_R_PARTS = {"versions": dict, "input": dict, "results": dict, "warnings": list, "kept_start": list, "console": str,
            "spread": dict}


def load(path: PathLike, fp: Dict[str, Any], args: Dict[str, Any], *, legacy: Optional[str] = None) -> Dict[str, Any]:
    """A recording, checked against these data and arguments, with its
    numbers as arrays.

    Parameters
    ----------
    path : path-like
        The recording.
    fp : dict
        This run's :func:`fingerprint`.
    args : dict
        This run's resolved arguments.
    legacy : str, optional
        These data's format-1 hash (:func:`v1_sha256`): read format 1 too
        (R's side only, no checksum), to carry its R side into a recording
        of this format. Without it format 1 is refused.

    Returns
    -------
    dict
        ``"R"``: None, or R's side (``versions``, ``input``, ``results``,
        ``warnings``, ``kept_start``, ``console``, ``spread``);
        ``"pyopnb"``: None (format 1), or pyopnb's (``identity``,
        ``results``); ``"folds"``: 0-based index arrays or None;
        ``"version"``: the format's version.

    Raises
    ------
    RecordingError
        Anything that makes the file unusable here, in one line.
    """
    p = Path(path)
    if not p.is_file():
        raise RecordingError(f"{p}: no such recording")
    try:
        rec = json.loads(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise RecordingError(f"{p}: not a recording of pyopnb validate (not UTF-8 text)") from None
    except json.JSONDecodeError as exc:
        raise RecordingError(f"{p}: not complete JSON ({exc.msg} at line {exc.lineno}): the file was cut short, "
                             f"half written or edited") from None
    if not isinstance(rec, dict) or rec.get("format") != FORMAT:
        raise RecordingError(f"{p}: not a recording of pyopnb validate (no format {FORMAT!r})")
    version = rec.get("version")
    if version == 1 and legacy is not None:
        return _load_v1(p, rec, fp, args, legacy)
    if version == 1:
        raise RecordingError(f"{p}: a recording of format 1 holds R's side only, with no pyopnb results and no "
                             f"checksum: make one of format {FORMAT_VERSION} from it with against={p}, record=NEW "
                             f"(R's side is kept, pyopnb's results now become the reference), or record again "
                             f"with R")
    if version != FORMAT_VERSION:
        raise RecordingError(f"{p}: recording format version {version!r}; this pyopnb reads version "
                             f"{FORMAT_VERSION}")
    # first the file against what it claims (its data's shape, its arguments), then its checksum, and only
    # then against this run: an edited file is said to be edited, not to be of other data
    s = _Schema(p)
    checksum = s.section(rec, "checksum", "the recording", str)
    data = _data(s, s.section(rec, "data", "the recording"))
    rargs = _args(s, s.section(rec, "args", "the recording"))
    folds = _folds(s, rec, rargs, data["n"])
    pdim, m = data["p"], data["test_rows"] or data["n"]
    out: Dict[str, Any] = {"version": version, "folds": folds, "R": None}
    r = s.section(rec, "R", "the recording", dict, null=True)
    if r is not None:
        for key, kind in _R_PARTS.items():
            s.section(r, key, "R's side", kind, null=key in ("spread", "input"))
        out["R"] = {"versions": dict(r["versions"]), "input": _input(s, r["input"], data),
                    "results": s.results(r["results"], "R's side", rargs, pdim, m, False),
                    "warnings": s.strings(r, "warnings", "R's side", None, ""),
                    "kept_start": _kept(s, r), "console": s.section(r, "console", "R's side", str),
                    "spread": _spread(s, r)}
    py = s.section(rec, "pyopnb", "the recording")
    identity = s.section(py, "identity", "pyopnb's side")
    out["pyopnb"] = {"identity": identity,
                     "results": s.results(s.section(py, "results", "pyopnb's side"), "pyopnb's side", rargs,
                                          pdim, m, True)}
    if checksum != _checksum(rec):
        raise RecordingError(f"{p}: its checksum does not match its contents: the file was edited or damaged after "
                             f"it was recorded (record it again, or restore it from version control)")
    what = data_difference(data, fp)
    if what is not None:
        raise RecordingError(f"{p} was recorded on other data ({what}): a recording replays only on the data it "
                             f"was made with; record again with record=")
    _match_args(p, rargs, args)
    return out


def _count(v: Any, least: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= least


def _data(s: _Schema, data: Dict[str, Any]) -> Dict[str, Any]:
    """The recording's data section: its shape is what its results are checked against."""
    if not (_count(data.get("n"), 1) and _count(data.get("p"), 1)
            and (data.get("test_rows") is None or _count(data.get("test_rows"), 1))):
        raise s.fail("the recording's data section lacks the row and column counts: the file was cut or edited")
    return data


def _args(s: _Schema, args: Dict[str, Any]) -> Dict[str, Any]:
    """The recording's arguments, as far as its results' shapes depend on them."""
    if not (_count(args.get("ndim"), 1) and _count(args.get("nlam"), 1)
            and (args.get("cv") is None or _count(args.get("cv"), 2))):
        raise s.fail("the recording's arguments lack ndim, nlam or cv: the file was cut or edited")
    return args


def _match_args(p: Path, rargs: Dict[str, Any], args: Dict[str, Any]) -> None:
    if rargs != args:
        diff = ", ".join(f"{k}={rargs.get(k)!r} there, {args[k]!r} here" for k in args if rargs.get(k) != args[k])
        raise RecordingError(f"{p} was recorded with other arguments ({diff or 'their keys differ'}): record again "
                             f"with these")


def _folds(s: _Schema, rec: Dict[str, Any], args: Dict[str, Any], n: int) -> Optional[List[np.ndarray]]:
    folds = s.section(rec, "folds", "the recording", list, null=True)
    if args.get("cv") is None:
        if folds is not None:
            raise s.fail("the recording has folds but its arguments have no cv")
        return None
    if folds is None or len(folds) != args["cv"]:
        raise s.fail(f"the recording has {0 if folds is None else len(folds)} folds, its arguments {args['cv']}: "
                     f"the file was cut or edited")
    out = []
    for f in folds:
        if not isinstance(f, list) or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n
                                              for i in f):
            raise s.fail(f"a fold holds something other than row numbers 0..{n - 1}")
        out.append(np.asarray(f, dtype=np.intp))
    if sum(map(len, out)) != n or len(np.unique(np.concatenate(out))) != n:
        raise s.fail(f"the folds do not cover the {n} rows once each: the file was cut or edited")
    return out


_SPREAD_KEYS = ("fval_rel", "V_abs", "h_rel", "posterior_abs", "class_changes", "cv_accuracy_abs")


def _spread(s: _Schema, r: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    spread = r["spread"]
    if spread is None:
        return None
    if not isinstance(spread, dict):
        raise s.fail("R's spread is not a table of numbers")
    out: Dict[str, Any] = {}
    for key in ("seeds",) + _SPREAD_KEYS:
        v = spread.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0:
            raise s.fail(f"R's spread lacks {key!r} (or it is not a number >= 0): the file was cut or edited")
        out[key] = int(v) if key == "seeds" else float(v)
    return out


_CELL = {"file": str, "row": int, "column": str, "j": int, "text": str, "pyopnb": (int, float, str),
         "R": (int, float, str)}


def _input(s: _Schema, section: Optional[Dict[str, Any]], fp: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """How R got its data: None (pyopnb's parse), or R's own read of the
    files with the cells it parsed apart (rparse.RParse.section)."""
    if section is None:
        return None
    files = s.section(section, "files", "R's input", list)
    count = s.section(section, "count", "R's input", int)
    cells = s.section(section, "differences", "R's input", list)
    if not files or not all(isinstance(f, str) for f in files) or count < len(cells):
        raise s.fail("R's input does not say which files R read, or counts fewer cells than it lists")
    for c in cells:
        if not isinstance(c, dict) or any(not isinstance(c.get(k), t) or isinstance(c.get(k), bool)
                                          for k, t in _CELL.items()):
            raise s.fail("R's input lists a cell without its file, row, column, text and both values")
        rows = fp["n"] if c["file"] == files[0] else (fp["test_rows"] or 0)
        if not (1 <= c["row"] <= rows and 0 <= c["j"] < fp["p"]):
            raise s.fail(f"R's input lists a cell outside the data (row {c['row']}, column {c['j']})")
        c["pyopnb"], c["R"] = float(_floats(c["pyopnb"])), float(_floats(c["R"]))
    return dict(section)


def _kept(s: _Schema, r: Dict[str, Any]) -> List[Dict[str, Any]]:
    kept = s.section(r, "kept_start", "R's side", list)
    for e in kept:
        if not isinstance(e, dict) or e.get("call") not in ("OPNB", "OPNB_CV_lam"):
            raise s.fail("R's kept_start holds something other than R's fits that kept their start")
    return [dict(e) for e in kept]


def _load_v1(p: Path, rec: Dict[str, Any], fp: Dict[str, Any], args: Dict[str, Any], sha: str) -> Dict[str, Any]:
    """Format 1's R side, checked as far as it can be (it has no checksum),
    to carry into a recording of format 2."""
    s = _Schema(p)
    data = s.section(rec, "data", "the recording")
    if (data.get("n"), data.get("p"), data.get("test_rows")) != (fp["n"], fp["p"], fp["test_rows"]):
        raise RecordingError(f"{p} was recorded on other data (n {data.get('n')}, p {data.get('p')}, test rows "
                             f"{data.get('test_rows')} there; {fp['n']}, {fp['p']}, {fp['test_rows']} here): record "
                             f"again with record=")
    if data.get("sha256") != sha:
        raise RecordingError(f"{p} was recorded on other data (the values or labels differ; format 1 does not say "
                             f"which): record again with record=")
    _match_args(p, s.section(rec, "args", "the recording"), args)
    r = s.section(rec, "R", "the recording")
    warnings = [str(w) for w in r.get("warnings", [])]
    if any("returning initial solution" in w for w in warnings):
        raise RecordingError(f"{p}: R warned there that a fit kept its start, and format 1 does not say which fit: "
                             f"record again with R")
    spread = _spread(s, {"spread": {"seeds": 4, **s.section(rec, "spread", "the recording")}})
    return {"version": 1, "folds": _folds(s, rec, args, fp["n"]), "pyopnb": None,
            "R": {"versions": dict(s.section(rec, "versions", "the recording")), "input": None,
                  "results": s.results(r, "R's side", args, fp["p"], fp["test_rows"] or fp["n"], False),
                  "warnings": warnings, "kept_start": [], "console": "", "spread": spread}}


def v1_sha256(X: np.ndarray, y: np.ndarray, Xte: Optional[np.ndarray], levels: Optional[List[str]]) -> str:
    """Format 1's one hash of the data (format 2 keeps the parts apart)."""
    h = hashlib.sha256()
    if levels is not None:
        h.update(("levels\x1e" + "\x1f".join(levels)).encode())
    for a in (X, Xte):
        if a is not None:
            h.update(repr(a.shape).encode())
            h.update(np.ascontiguousarray(a, dtype="<f8").tobytes())
    h.update(repr(y.dtype.kind).encode())
    h.update("\x1f".join(map(str, y.tolist())).encode())
    return h.hexdigest()
