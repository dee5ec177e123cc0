"""Moving OPNB models between R and Python: RDS and JSON files, without R.

A model written here keeps what R's fields cannot hold, where R ignores it:
the class labels' type (R's levels are strings; integer labels come back as
integers) and L-BFGS-B's convergence code, as attributes of the RDS list
("pyopnb.ynames", "pyopnb.convergence") and as fields of the JSON file.
Labels are written as R writes a factor's levels (``0``/``1`` for numbers,
``FALSE``/``TRUE`` for booleans), so that R's ``predict`` compares equal to
R's own labels. A model that R saved has no convergence code (it reads as
unknown, None) and keeps only its levels' text: levels that are each R's
text of an integer, a logical or a double read back as that type.
"""
from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Union

import numpy as np

from .labels import level_text, levels_from_text
from .model import OPNBModel, check_model

__all__ = ["read_rds", "write_rds", "read_json", "write_json", "read_model", "write_model", "model_from_fields"]

_FIELDS = ("V", "X", "y", "PI", "h", "nc", "mu", "scales", "ynames", "lam", "fval")
# the labels' types a file can name, by numpy kind
_LABEL_KINDS = {"i": "integer", "u": "integer", "f": "double", "b": "logical"}


def _label_kind(ynames: np.ndarray) -> str:
    """The labels' type as R names it: integer, double, logical or character."""
    return _LABEL_KINDS.get(np.asarray(ynames).dtype.kind, "character")


def _vector(v: Any, name: str) -> np.ndarray:
    try:
        return np.asarray(getattr(v, "values", v), dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"model field {name!r} is not numeric") from None


def _names(v: Any) -> Any:
    """Column names R attached (names on mu / scales, or dimnames of X)."""
    coords = getattr(v, "coords", None)
    if coords is None:
        return None
    for dim in getattr(v, "dims", ())[-1:]:
        if dim in coords:
            vals = np.asarray(coords[dim].values)
            if vals.dtype.kind in "OU":
                return tuple(str(s) for s in vals)
    return None


def model_from_fields(fields: Any, ynames_kind: Optional[str] = None, convergence: Optional[int] = None) -> OPNBModel:
    """An OPNBModel from R's fields (a mapping, e.g. a converted R list).

    The labels come back in the type ``ynames_kind`` names (a file pyopnb
    wrote says it). R keeps only the levels' text: without a kind, levels
    that are each exactly R's text of an integer, a logical or a double
    read as that type (``"0"``, ``"1"`` as integers, as R's ``as.factor``
    wrote them from numbers), and any other text stays text."""
    missing = [f for f in _FIELDS if f not in fields]
    if missing:
        raise ValueError(f"not an OPNB model: fields {missing} are missing")
    V = _vector(fields["V"], "V")
    if V.ndim == 1:
        V = V.reshape(-1, 1)
    X = _vector(fields["X"], "X")
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    h = _vector(fields["h"], "h")
    nc = int(np.ravel(_vector(fields["nc"], "nc"))[0])
    if h.ndim == 1:
        h = h.reshape(nc, -1)
    y = _vector(fields["y"], "y")
    if not np.all(np.equal(np.mod(y, 1), 0)):
        raise ValueError("model field 'y' must hold integer class codes")
    ynames_raw = fields["ynames"]
    cats = getattr(ynames_raw, "categories", None)
    ynames = levels_from_text(np.ravel(np.asarray(ynames_raw) if cats is None else np.asarray(ynames_raw.astype(str))),
                              ynames_kind)
    PI = _vector(fields["PI"], "PI").ravel()
    unused: tuple = ()
    if ynames.size > nc == PI.size and y.size and y.max() <= nc:
        # a factor's levels after its last used one: R's classes are the codes 1..nc, and it keeps the rest
        ynames, unused = ynames[:nc], tuple(ynames[nc:].tolist())
    model = OPNBModel(
        V=np.ascontiguousarray(V), X=np.ascontiguousarray(X), y=y.astype(np.int64),
        PI=PI, h=np.ascontiguousarray(h), nc=nc,
        mu=_vector(fields["mu"], "mu").ravel(), scales=_vector(fields["scales"], "scales").ravel(),
        ynames=ynames, lam=float(np.ravel(_vector(fields["lam"], "lam"))[0]),
        fval=float(np.ravel(_vector(fields["fval"], "fval"))[0]),
        feature_names=_names(fields["mu"]) or _names(fields["X"]),
        target=_target(fields.get("target")),
        convergence=convergence, unused_levels=unused,
    )
    _check_consistent(model)
    return model


def _target(v: Any) -> Any:
    if v is None:
        return None
    vals = np.ravel(np.asarray(getattr(v, "values", v), dtype=object))
    return str(vals[0]) if vals.size else None


def _check_consistent(m: OPNBModel) -> None:
    d, ndim = m.V.shape
    n = m.X.shape[0]
    problems = []
    if m.X.shape[1] != d:
        problems.append(f"X has {m.X.shape[1]} columns but V has {d} rows")
    if m.y.shape != (n,):
        problems.append(f"y has {m.y.size} entries for {n} rows of X")
    if m.PI.size != m.nc or m.ynames.size != m.nc:
        problems.append(f"PI ({m.PI.size}) and ynames ({m.ynames.size}) must have nc = {m.nc} entries")
    if m.h.shape != (m.nc, ndim):
        problems.append(f"h is {m.h.shape}, expected ({m.nc}, {ndim})")
    if m.mu.size != d or m.scales.size != d:
        problems.append("mu and scales must have one entry per column of X")
    if m.y.size and (m.y.min() < 1 or m.y.max() > m.nc):
        problems.append(f"y codes must lie in 1..{m.nc}")
    if m.w is not None and (np.shape(m.w) != (n,) or not np.all(np.isfinite(m.w)) or not np.all(np.asarray(m.w) > 0)):
        problems.append(f"w must hold {n} positive finite weights, one per row of X")
    if problems:
        raise ValueError("inconsistent OPNB model: " + "; ".join(problems))


def read_rds(path: Union[str, os.PathLike]) -> OPNBModel:
    """Read an OPNB model that R saved with ``saveRDS``; R need not be installed.

    Parameters
    ----------
    path : str or path-like
        An RDS file holding one object of class "OPNB" (not an .RData file).

    Returns
    -------
    OPNBModel
        R's fields. Levels that are each exactly R's text of an integer, a
        logical or a double come back as that type; other text stays text.
        R keeps no convergence code: it reads as None.

    See Also
    --------
    write_rds : The other way.
    read_model : Any model file, by its suffix.
    """
    import rdata

    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{p}: no such file")
    if _is_rdata(p):
        raise ValueError(f"{p}: this is an .RData file (R's save()), not an RDS file: in R, load it and save the "
                         f"OPNB model itself with saveRDS(model, \"model.rds\"), then read that")
    try:
        parsed = rdata.parser.parse_file(p)
    except Exception as exc:  # rdata raises many kinds on bad input
        raise ValueError(f"{p}: not a readable RDS file ({type(exc).__name__}: {exc})") from None
    attrs = _r_attributes(parsed.object)
    classes = attrs.get("class", [])
    if "OPNB" not in classes:
        names = attrs.get("names", [])
        if "model" in names and "cv_stats" in names:
            raise ValueError(f"{p}: this is the list OPNB_CV_lam returns (model and cv_stats), not a model: in R, "
                             f"save its model with saveRDS(cv$model, \"model.rds\"), then read that")
        kinds = {"INT": "an integer vector", "REAL": "a numeric vector", "STR": "a character vector",
                 "LGL": "a logical vector", "VEC": "a list", "LIST": "a pairlist"}
        kind = parsed.object.info.type.name
        what = f"of class {classes}" if classes else f"a plain R object ({kinds.get(kind, kind.lower())})"
        raise ValueError(f"{p}: the RDS object is {what}, not an OPNB model (R's OPNB() returns one: "
                         f"saveRDS(model, \"model.rds\"))")
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # rdata has no constructor for class "OPNB": a list is right
            converted = rdata.conversion.convert(parsed)
    except Exception as exc:
        raise ValueError(f"{p}: could not convert the R object ({type(exc).__name__}: {exc})") from None
    if not hasattr(converted, "keys"):
        raise ValueError(f"{p}: the OPNB object is not a named list")
    kind = attrs.get("pyopnb.ynames", [None])[0]
    code = attrs.get("pyopnb.convergence", [None])[0]
    return model_from_fields({str(k): v for k, v in converted.items()}, kind, None if code is None else int(code))


def _is_rdata(p: Path) -> bool:
    """Whether the file is an .RData workspace (save()), by its magic
    number (RDX2 or RDX3) under any of R's compressions."""
    import bz2
    import gzip
    import lzma

    for opener in (gzip.open, bz2.open, lzma.open, open):
        try:
            with opener(p, "rb") as fh:
                head = fh.read(5)
        except (OSError, EOFError, lzma.LZMAError):
            continue
        return head[:3] == b"RDX"
    return False


def _r_attributes(obj: Any) -> Dict[str, list]:
    """An R object's attributes as lists of Python values (strings and
    numbers), by name."""
    out: Dict[str, list] = {}
    attrs = getattr(obj, "attributes", None)
    while attrs is not None and getattr(attrs, "value", None) is not None:
        tag = attrs.tag
        ref = getattr(tag, "referenced_object", None)
        sym = ref if ref is not None else tag
        name = getattr(getattr(sym, "value", None), "value", None)
        if isinstance(name, bytes):
            vals = attrs.value[0].value
            if isinstance(vals, list):
                out[name.decode()] = [v.value.decode() if getattr(v, "value", None) is not None else None
                                      for v in vals]
            else:
                out[name.decode()] = list(np.ravel(vals)) if vals is not None else []
        attrs = attrs.value[1] if len(attrs.value) > 1 else None
    return out


# ---------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------

def _plain_mode(target: Path) -> int:
    try:
        return target.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)  # reading the umask means setting it: put it straight back
        os.umask(umask)
        return 0o666 & ~umask


def _exists_error(path: Union[str, os.PathLike], how: str) -> FileExistsError:
    return FileExistsError(f"{path}: exists, and pyopnb replaces a file only when asked ({how} to replace it, "
                           f"or choose another path)")


def refuse_existing(path: Union[str, os.PathLike], how: str = "pass overwrite=True") -> None:
    """Raise FileExistsError if ``path`` exists: no file is replaced unless asked.

    ``how`` tells the caller's way of asking (an argument, a command-line option)."""
    if os.path.lexists(path):
        raise _exists_error(path, how)


def _move_new(tmp: str, target: Path, how: str) -> None:
    """Move ``tmp`` to ``target``, which must not exist, in one step where the
    filesystem allows (a hard link fails on an existing name, where a check
    then a rename could race another writer)."""
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise _exists_error(target, how) from None
    except OSError:
        # a filesystem without hard links: check, then rename
        refuse_existing(target, how)
        os.replace(tmp, target)


@contextmanager
def atomic_path(path: Union[str, os.PathLike], *, overwrite: bool = False,
                how: str = "pass overwrite=True") -> Iterator[Path]:
    """A temporary path beside ``path``, moved onto it only if the block succeeds:
    a failed write leaves no partial file (and an existing file untouched).

    An existing ``path`` is refused before the block runs, and again when the
    file is moved into place, unless ``overwrite``; ``how`` tells the caller's
    way of asking for that (:func:`refuse_existing`)."""
    target = Path(path)
    if target.parent and not target.parent.exists():
        raise ValueError(f"{target}: the folder {target.parent} does not exist")
    if not overwrite:
        refuse_existing(target, how)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    os.close(fd)
    try:
        yield Path(tmp)
        # mkstemp makes the file 0600; give it the mode a plain open() would
        # (an existing file's own mode, else 0666 less the umask)
        os.chmod(tmp, _plain_mode(target))
        if overwrite:
            os.replace(tmp, target)
        else:
            _move_new(tmp, target, how)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _opnb_r_object(model: OPNBModel, converter: Any) -> Any:
    """The R list R's OPNB() returns, with class "OPNB", for rdata's writer."""
    from rdata.parser import RObjectType
    from rdata.conversion.to_r import build_r_object

    def named(values: np.ndarray, names) -> Any:
        obj = converter.convert_to_r_object(np.asarray(values, dtype=np.float64))
        if names is None:
            return obj
        attrs = converter.convert_to_r_attributes({"names": np.asarray(names, dtype=object)})
        return build_r_object(RObjectType.REAL, value=obj.value, attributes=attrs)

    def matrix(values: np.ndarray, colnames=None) -> Any:
        a = np.asarray(values, dtype=np.float64)
        attrs = {"dim": np.array(a.shape, dtype=np.int32)}
        if colnames is not None:
            attrs["dimnames"] = [None, np.asarray(colnames, dtype=object)]
        return build_r_object(RObjectType.REAL, value=a.ravel(order="F"),
                              attributes=converter.convert_to_r_attributes(attrs))

    names = model.feature_names
    values = [
        matrix(model.V),
        matrix(model.X, names),
        converter.convert_to_r_object(np.asarray(model.y, dtype=np.float64)),
        converter.convert_to_r_object(np.asarray(model.PI, dtype=np.float64)),
        matrix(model.h),
        converter.convert_to_r_object(np.array([float(model.nc)])),
        named(model.mu, names),
        named(model.scales, names),
        converter.convert_to_r_object(np.asarray(level_text(model.r_levels), dtype=object)),
        converter.convert_to_r_object(np.array([float(model.lam)])),
        converter.convert_to_r_object(np.array([float(model.fval)])),
    ]
    names_out = list(_FIELDS)
    if model.target is not None:
        # not one of R's fields: R's predict.OPNB reads the others by name and ignores it
        values.append(converter.convert_to_r_object(np.asarray([str(model.target)], dtype=object)))
        names_out.append("target")
    extra: Dict[str, Any] = {"pyopnb.ynames": _label_kind(model.ynames)}
    if model.convergence is not None:
        # not R's: R's predict.OPNB ignores attributes
        extra["pyopnb.convergence"] = np.array([int(model.convergence)], dtype=np.int32)
    attrs = converter.convert_to_r_attributes({"names": np.asarray(names_out, dtype=object), "class": "OPNB",
                                               **extra})
    return build_r_object(RObjectType.VEC, value=values, is_object=True, attributes=attrs)


def write_rds(model: OPNBModel, path: Union[str, os.PathLike], *, overwrite: bool = False) -> None:
    """Save a model as R's ``saveRDS`` would, for R's ``readRDS`` and ``predict.OPNB``.

    R need not be installed. The file is written whole or not at all.

    Parameters
    ----------
    model : OPNBModel
        The model (a fitted OPNBClassifier's ``model_`` too).
    path : str or path-like
        The RDS file to write.
    overwrite : bool, default False
        Replace an existing file. Otherwise an existing ``path`` raises
        FileExistsError (R's ``saveRDS`` replaces it without asking).

    Returns
    -------
    None
        The model is in the file.

    See Also
    --------
    read_rds : The other way.
    """
    import rdata

    model = check_model(model)
    _check_consistent(model)
    if model.w is not None:
        raise ValueError("this model was fitted with weights, and R's predict.OPNB has none: it would weigh every "
                         "training row alike and give other posteriors. Save it with write_json or joblib, or fit "
                         "without weights for R")
    with atomic_path(path, overwrite=overwrite) as tmp:
        rdata.write_rds(tmp, model, constructor_dict={OPNBModel: _opnb_r_object})


def write_json(model: Any, path: Union[str, os.PathLike], *, overwrite: bool = False) -> None:
    """Save a model as JSON: R's fields (matrices as lists of rows) and what R cannot hold.

    The feature names, the label column's name, the labels' type and the
    convergence code are kept. A model without rows
    (:class:`pyopnb.grid_model.GridModel`) keeps its class grids instead of
    X and y; every number is written so that it reads back to the bit.

    Parameters
    ----------
    model : OPNBModel or GridModel
        The model.
    path : str or path-like
        The JSON file to write.
    overwrite : bool, default False
        Replace an existing file. Otherwise an existing ``path`` raises
        FileExistsError.

    Returns
    -------
    None
        The model is in the file.

    See Also
    --------
    read_json : The other way.
    """
    from .grid_model import GridModel

    if isinstance(model, GridModel):
        return _write_grid_json(model, path, overwrite)
    model = check_model(model)
    _check_consistent(model)
    doc = {"format": "pyopnb-model", "version": 2,
           "feature_names": list(model.feature_names) if model.feature_names else None,
           "target": model.target, "convergence": None if model.convergence is None else int(model.convergence),
           "ynames_type": _label_kind(model.ynames),
           "w": None if model.w is None else np.asarray(model.w, dtype=np.float64).tolist()}
    for k in _FIELDS:
        v = getattr(model, k)
        if k == "ynames":
            v = model.r_levels
            doc[k] = [str(s) for s in v] if doc["ynames_type"] == "character" else np.asarray(v).tolist()
        else:
            doc[k] = np.asarray(v).tolist() if np.ndim(v) else v
    with atomic_path(path, overwrite=overwrite) as tmp:
        tmp.write_text(json.dumps(doc))


def read_json(path: Union[str, os.PathLike]) -> Any:
    """Read a model written by :func:`write_json`.

    Parameters
    ----------
    path : str or path-like
        A pyopnb JSON model file.

    Returns
    -------
    OPNBModel or GridModel
        The model, with its labels' type, names and convergence code.
    """
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except FileNotFoundError:
        raise ValueError(f"{p}: no such file") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{p}: not a JSON model file ({exc})") from None
    if isinstance(doc, dict) and doc.get("format") == _GRID_FORMAT:
        return _read_grid_json(doc)
    if not isinstance(doc, dict) or doc.get("format") != "pyopnb-model":
        raise ValueError(f"{p}: not a pyopnb model (JSON without format 'pyopnb-model')")
    fields = {k: doc[k] for k in _FIELDS if k in doc}
    fields["ynames"] = np.asarray(doc.get("ynames", []), dtype=object)
    code = doc.get("convergence")
    model = model_from_fields(fields, doc.get("ynames_type"), None if code is None else int(code))
    if doc.get("feature_names"):
        model.feature_names = tuple(doc["feature_names"])
    model.target = doc.get("target")
    if doc.get("w") is not None:
        model.w = np.asarray(doc["w"], dtype=np.float64)
        _check_consistent(model)
    return model


_GRID_FORMAT = "pyopnb-grid-model"
_GRID_FIELDS = ("V", "PI", "h", "mu", "scales", "lo", "delta", "W", "counts")


def _write_grid_json(model: Any, path: Union[str, os.PathLike], overwrite: bool) -> None:
    """A GridModel as JSON (floats as Python's repr: the same bits back)."""
    kind = _label_kind(model.ynames)
    doc = {"format": _GRID_FORMAT, "version": 1, "nc": int(model.nc), "lam": float(model.lam),
           "fval": float(model.fval), "ynames_type": kind,
           "ynames": [str(v) for v in model.ynames] if kind == "character" else np.asarray(model.ynames).tolist(),
           "unused_levels": [str(v) for v in model.unused_levels],
           "feature_names": list(model.feature_names) if model.feature_names else None,
           "convergence": None if model.convergence is None else int(model.convergence)}
    for k in _GRID_FIELDS:
        doc[k] = np.asarray(getattr(model, k)).tolist()
    with atomic_path(path, overwrite=overwrite) as tmp:
        tmp.write_text(json.dumps(doc))


def _read_grid_json(doc: dict) -> Any:
    from .grid_model import GridModel

    try:
        arrays = {k: np.asarray(doc[k], dtype=np.int64 if k == "counts" else np.float64) for k in _GRID_FIELDS}
        kind = doc["ynames_type"]
        model = GridModel(nc=int(doc["nc"]), lam=float(doc["lam"]), fval=float(doc["fval"]),
                          ynames=levels_from_text(np.asarray(doc["ynames"], dtype=object), kind),
                          feature_names=tuple(doc["feature_names"]) if doc.get("feature_names") else None,
                          convergence=doc.get("convergence"),
                          unused_levels=tuple(levels_from_text(np.asarray(doc["unused_levels"], dtype=object),
                                                               kind).tolist()) if doc["unused_levels"] else (),
                          **arrays)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"not a whole pyopnb grid model ({type(exc).__name__}: {exc})") from None
    K, nd = model.nc, model.V.shape[1] if model.V.ndim == 2 else -1
    if (model.W.shape != (nd, model.W.shape[1], K) or model.h.shape != (K, nd) or model.PI.shape != (K,)
            or model.lo.shape != (nd,) or model.delta.shape != (nd,) or model.ynames.shape != (K,)):
        raise ValueError("not a consistent pyopnb grid model: its fields' shapes disagree")
    return model


_PICKLES = (".joblib", ".pkl", ".pickle")


def _read_pickled(path: Union[str, os.PathLike]) -> OPNBModel:
    """The model in a joblib or pickle file: an OPNBModel, or a fitted
    OPNBClassifier's. Loading a pickle runs code from the file: read only
    files you trust."""
    import joblib

    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{p}: no such file")
    try:
        obj = joblib.load(p)
    except Exception as exc:  # a pickle fails in many ways
        raise ValueError(f"{p}: not a readable joblib or pickle file ({type(exc).__name__}: {exc})") from None
    try:
        return check_model(obj)
    except ValueError as exc:
        raise ValueError(f"{p}: {exc}") from None


def read_model(path: Union[str, os.PathLike]) -> OPNBModel:
    """Read a model file, by its suffix.

    Parameters
    ----------
    path : str or path-like
        ``.rds`` (R's ``saveRDS``), ``.json`` (:func:`write_json`), or a
        joblib or pickle file (``.joblib``, ``.pkl``, ``.pickle``) holding a
        model or a fitted OPNBClassifier. Loading a pickle runs code from the
        file: read only files you trust.

    Returns
    -------
    OPNBModel
        The model.
    """
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        return read_json(path)
    if suffix == ".rds":
        return read_rds(path)
    if suffix in _PICKLES:
        return _read_pickled(path)
    raise ValueError(f"{path}: model files are .rds or .json (or a fitted OPNBClassifier's .joblib or .pkl)")


def write_model(model: OPNBModel, path: Union[str, os.PathLike], *, overwrite: bool = False) -> None:
    """Write a model to ``.rds`` (for R) or ``.json``, by the file's suffix.

    Parameters
    ----------
    model : OPNBModel or OPNBClassifier
        A model, or a fitted OPNBClassifier (its model is written).
    path : str or path-like
        The file, ending in ``.rds`` or ``.json``.
    overwrite : bool, default False
        Replace an existing file. Otherwise an existing ``path`` raises
        FileExistsError.

    Returns
    -------
    None
        The model is in the file.
    """
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        return write_json(model, path, overwrite=overwrite)
    if suffix == ".rds":
        return write_rds(model, path, overwrite=overwrite)
    raise ValueError(f"{path}: model files are .rds or .json")
