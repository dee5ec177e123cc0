"""The API reference's promises: every public name has a numpydoc docstring
that documents each of its parameters, its examples run, the reference
lists it, and its signature carries type hints for type checkers (py.typed)."""
import doctest
import importlib
import inspect
import re
from pathlib import Path

import pytest

import pyopnb
import pyopnb.comparators
import pyopnb.study
import pyopnb.testing

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api.rst"
# the study's entry points; its constants are described in prose
STUDY = ["run_study", "write_report", "available", "load", "preprocess"]
# the checks the docs build makes with -W (docs/conf.py): a docstring; every
# parameter documented, none unknown, each with a description; a summary
CHECKS = {"GL08", "PR01", "PR02", "PR07", "RT03", "SS01"}


def public_names():
    out = [("pyopnb", n) for n in pyopnb.__all__ if n != "__version__"]
    out += [("pyopnb.comparators", n) for n in pyopnb.comparators.__all__]
    out += [("pyopnb.study", n) for n in STUDY]
    out += [("pyopnb.testing", n) for n in pyopnb.testing.__all__]
    try:
        dask_api = importlib.import_module("pyopnb.dask")
    except ImportError:  # the optional extra (pip install 'pyopnb[dask]')
        pass
    else:
        out += [("pyopnb.dask", n) for n in dask_api.__all__]
    out += [("pyopnb.grid_model", n) for n in ("grid_model", "density_bound")]
    return out + [("pyopnb.datasets", "load_pima")]


def _obj(module, name):
    import importlib

    return getattr(importlib.import_module(module), name)


def _members(module, name):
    """The object and its public methods and properties defined by pyopnb."""
    obj = _obj(module, name)
    yield f"{module}.{name}", obj
    if inspect.isclass(obj):
        for m, v in inspect.getmembers(obj):
            defined = getattr(v, "__module__", None) or getattr(getattr(v, "fget", None), "__module__", "")
            if not m.startswith("_") and (callable(v) or isinstance(v, property)) and defined.startswith("pyopnb"):
                yield f"{module}.{name}.{m}", v


ALL = [(q, o) for module, name in public_names() for q, o in _members(module, name)]


@pytest.mark.parametrize("qualname", [q for q, _ in ALL])
def test_numpydoc_docstring(qualname):
    validate = pytest.importorskip("numpydoc.validate", reason="numpydoc is not installed (pip install .[docs])")
    errors = [f"{code}: {msg}" for code, msg in validate.validate(qualname)["errors"] if code in CHECKS]
    assert not errors, "\n".join(errors)


def test_docs_checks_match():
    conf = (ROOT / "docs" / "conf.py").read_text()
    m = re.search(r"numpydoc_validation_checks = \{(.*?)\}", conf)
    assert m and set(re.findall(r'"(\w+)"', m.group(1))) == CHECKS


@pytest.mark.parametrize("module, name", public_names(), ids=lambda v: v if isinstance(v, str) else None)
def test_api_reference_lists_it(module, name):
    text = API.read_text()
    current = None
    listed = set()
    for line in text.splitlines():
        if line.startswith(".. currentmodule::"):
            current = line.split("::")[1].strip()
        elif re.match(r"^   [A-Za-z_]\w*$", line) and current:
            listed.add((current, line.strip()))
    assert (module, name) in listed, f"{module}.{name} is not in docs/api.rst"


@pytest.mark.parametrize("qualname", [q for q, o in ALL if (inspect.getdoc(o) or "").count(">>>")])
def test_docstring_examples_run(qualname, tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    obj = dict(ALL)[qualname]
    finder, runner = doctest.DocTestFinder(recurse=False), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = finder.find(obj, qualname, globs={})
    assert tests and any(t.examples for t in tests)
    for t in tests:
        runner.run(t)
    assert runner.failures == 0, f"{runner.failures} of the examples in {qualname}'s docstring failed"


def test_key_functions_have_examples():
    for obj in (pyopnb.OPNB, pyopnb.predict, pyopnb.OPNB_CV_lam, pyopnb.opnb_journal, pyopnb.opnb_journal_cv):
        assert "Examples\n" in inspect.getdoc(obj), obj.__name__


def test_typed_package():
    assert (Path(pyopnb.__file__).parent / "py.typed").is_file(), "py.typed is missing from the installed package"


@pytest.mark.parametrize("module, name", [p for p in public_names() if inspect.isfunction(_obj(*p))],
                         ids=lambda v: v if isinstance(v, str) else None)
def test_public_functions_are_annotated(module, name):
    fn = _obj(module, name)
    sig = inspect.signature(fn)
    missing = [p.name for p in sig.parameters.values() if p.annotation is inspect.Parameter.empty]
    assert not missing, f"{module}.{name}: parameters without a type hint: {missing}"
    assert sig.return_annotation is not inspect.Signature.empty, f"{module}.{name} has no return type hint"
