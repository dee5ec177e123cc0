"""The ``pyopnb_regression`` fixture: regression tests of an OPNB workflow, installed with pyopnb.

pytest finds this plugin through pyopnb's ``pytest11`` entry point: any
test may ask for the fixture.

.. code-block:: python

    def test_credit_model(pyopnb_regression):
        X, y, Xte = load_credit()
        pyopnb_regression.check(X, y, Xte, ndim=3, cv=5)

``check`` runs the workflow (:func:`pyopnb.testing.compare_with_r`'s: the
fit from R's start, its predictions, ``OPNB_CV_lam`` where ``cv`` is given)
and keeps one recording a test, beside it: ``tests/test_credit.py``'s test
``test_credit_model`` reads and writes ``tests/test_credit/test_credit_model.json``
(a JSON file laid out to diff well in git).

- **No recording yet, R present**: it records R's side and pyopnb's, and
  checks parity with R live.
- **A recording**: it replays, with no R: regression (pyopnb's results
  keep their recorded bits, or ``rtol``/``atol``) and parity (pyopnb
  against R's recorded results). A difference fails the test with the
  report.
- **``pytest --pyopnb-update``**: it records again on purpose (with live R
  where R is, else R's recorded side is kept) and says in the summary what
  changed.
- **A recording that cannot be used** (edited, cut short, of other data
  or arguments), or none and no R to make one: the test fails with one
  line, and pytest exits 2 rather than 1.

``check(..., parity=False)`` needs no R ever: it records and replays
pyopnb's own bits only.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, List, Mapping, Optional, Set, Union

import pytest

__all__ = ["PyopnbRegression"]

_LOG = pytest.StashKey[List[str]]()
_UNUSABLE = pytest.StashKey[List[str]]()

Tol = Union[None, float, Mapping[str, float]]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pyopnb", "pyopnb's regression recordings")
    group.addoption("--pyopnb-update", action="store_true", default=False,
                    help="pyopnb_regression: record every recording the tests check again, on purpose (R's side "
                         "with live R where R is, else kept from the recording), and say what changed")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_LOG] = []
    config.stash[_UNUSABLE] = []


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    lines = config.stash.get(_LOG, [])
    if lines:
        terminalreporter.section("pyopnb_regression")
        for line in lines:
            terminalreporter.write_line(line)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # a recording that cannot be used is an error of the run's input, as the command's exit 2
    if session.config.stash.get(_UNUSABLE, []) and session.exitstatus in (0, 1):
        session.exitstatus = 2


class PyopnbRegression:
    """What the ``pyopnb_regression`` fixture gives a test: :meth:`check`.

    Parameters
    ----------
    request : pytest.FixtureRequest
        The test's request (its file and name place the recording).
    """

    def __init__(self, request: pytest.FixtureRequest):
        self._request = request
        self._names: Set[str] = set()

    def path(self, name: Optional[str] = None) -> Path:
        """The recording of this test (or of its call ``name``).

        Parameters
        ----------
        name : str, optional
            A name for one of several checks in the test.

        Returns
        -------
        Path
            ``<test file's folder>/<test file's name>/<test name>[-<name>].json``.
        """
        node = self._request.node
        test_file = Path(str(node.fspath))
        stem = re.sub(r"[^\w.-]", "_", node.name) + ("" if name is None else "-" + re.sub(r"[^\w.-]", "_", name))
        return test_file.parent / test_file.stem / f"{stem}.json"

    def check(self, X: Any, y: Any, Xte: Any = None, *, name: Optional[str] = None, parity: bool = True,
              rtol: Tol = None, atol: Tol = None, strict_r: bool = False, threads: Optional[int] = None,
              spread_seeds: Optional[int] = None, **opnb_args: Any) -> Any:
        """Check the workflow against this test's recording, or record it.

        Parameters
        ----------
        X, y, Xte
            The data, as :func:`pyopnb.testing.compare_with_r` takes them.
        name : str, optional
            Tells apart several checks in one test (each its own recording).
        parity : bool, default True
            Record R's side and check pyopnb against it; False records and
            checks pyopnb's own bits only, with no R ever.
        rtol, atol, strict_r, threads, spread_seeds, **opnb_args
            As :func:`pyopnb.testing.compare_with_r` takes them
            (``spread_seeds`` when recording with R).

        Returns
        -------
        Report
            The checks, when they pass (the test fails with the report
            otherwise).
        """
        from .validation.recording import RecordingError
        from .validation.workflow import RUnavailable, check_recording

        key = "" if name is None else name
        if key in self._names:
            raise ValueError("pyopnb_regression.check was called twice in this test with the same name: give each "
                             "call its own name=")
        self._names.add(key)
        path = self.path(name)
        config = self._request.config
        try:
            report = check_recording(X, y, Xte, path=path, update=config.getoption("pyopnb_update"), parity=parity,
                                     rtol=rtol, atol=atol, strict_r=strict_r, threads=threads,
                                     spread_seeds=spread_seeds, **opnb_args)
        except (RecordingError, RUnavailable) as exc:
            config.stash[_UNUSABLE].append(str(path))
            pytest.fail(f"pyopnb_regression: {exc}", pytrace=False)
        done = report.meta["recording"]
        if done["action"] != "replayed":
            config.stash[_LOG].append(done["said"].replace(str(path), os.path.relpath(path), 1))
        if not report.ok:
            pytest.fail(f"pyopnb_regression: {path}\n{report.summary()}\n\n{report.table()}", pytrace=False)
        return report


@pytest.fixture
def pyopnb_regression(request: pytest.FixtureRequest) -> PyopnbRegression:
    """Check an OPNB workflow against this test's recording (see :mod:`pyopnb.pytest_plugin`)."""
    return PyopnbRegression(request)
