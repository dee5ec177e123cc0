"""The report of a workflow's checks: one vocabulary for the text, the JSON and the docs.

Two checks, kept apart:

- **regression**: pyopnb's results now against its own recorded results.
  pyopnb gives the same bits on every CPU and thread count, so the default
  is the same bits; ``rtol``/``atol`` loosen it per quantity.
- **parity**: pyopnb against R, within R's own spread (or bit for bit where
  pyopnb computes with R's own arithmetic).

Each row is one quantity of one check, named as R names it (``fval``,
``V``, ``h``, ``PI``, ``mu``, ``scales``, ``ynames``, ``posterior``,
``class``, ``cv_lam``, ``cv_accuracy``; regression adds L-BFGS-B's
``convergence`` code), with its verdict:

- ``same``: the same bits (regression);
- ``ok``: within its tolerance;
- ``DIFFERS``: beyond it (the run fails, exit 1);
- ``waived``: beyond it where a known defect of R explains it (R's fit
  stopped on a non-finite value and kept its start); it fails only under
  ``strict_r``;
- ``not judged``: no tolerance to judge by (R's spread not measured);
- ``updated``: moved since the old recording, which this run replaced on
  purpose (regression, when recording again).

A check as a whole is ``same``, ``ok``, ``DIFFERS``, ``recorded`` (its
reference was written by this run), or ``not checked`` (with the reason).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List

import numpy as np

__all__ = ["Row", "Report", "CHECKS", "VERDICTS"]

CHECKS = {"regression": "pyopnb now against its own recorded results", "parity": "pyopnb against R"}
VERDICTS = ("same", "ok", "DIFFERS", "waived", "not judged", "updated")


@dataclass
class Row:
    """One quantity of one check.

    Parameters
    ----------
    check : {"regression", "parity"}
        Which question the row answers.
    quantity : str
        R's name of the quantity.
    difference : float
        Its largest difference (relative for parity's ``fval`` and ``h``;
        a count for ``class`` and ``ynames``).
    tolerance : float
        The difference allowed.
    source : str
        Where the tolerance comes from.
    verdict : str
        One of :data:`VERDICTS`.
    detail : str, optional
        The entries that differ, both values, and why a row is waived.
    """

    check: str
    quantity: str
    difference: float
    tolerance: float
    source: str
    verdict: str
    detail: str = ""

    @property
    def ok(self) -> bool:
        """Whether the row lets the run pass."""
        return self.verdict != "DIFFERS"

    def to_dict(self) -> Dict[str, Any]:
        """The row as JSON values.

        Returns
        -------
        dict
            The row's fields, and ``ok``.
        """
        return {"check": self.check, "quantity": self.quantity, "difference": jsonable(self.difference),
                "tolerance": jsonable(self.tolerance), "verdict": self.verdict, "ok": self.ok,
                "source": self.source, "detail": self.detail}


@dataclass
class Report:
    """A workflow's two checks: a row a quantity, and what was compared.

    Parameters
    ----------
    rows : list of Row
        Regression's rows, then parity's.
    checks : dict, optional
        Per check (``"regression"``, ``"parity"``): ``status``
        (``"checked"``, ``"recorded"`` or ``"not checked"``), ``why``
        where not checked, and what it compared (pyopnb's identities, R's
        source and versions).
    meta : dict, optional
        The data's fingerprint, the arguments, R's spread, R's warnings,
        what R printed, and the cells where R's own parse of the files
        differs from pyopnb's.
    """

    rows: List[Row]
    checks: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    meta: Dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether no row differs beyond its tolerance."""
        return all(r.ok for r in self.rows)

    @property
    def exit_code(self) -> int:
        """0 when :attr:`ok`, else 1 (as ``pyopnb validate`` exits)."""
        return 0 if self.ok else 1

    @property
    def failures(self) -> List[Row]:
        """The rows that differ beyond their tolerance (empty when :attr:`ok`)."""
        return [r for r in self.rows if not r.ok]

    def of(self, check: str) -> List[Row]:
        """The rows of one check.

        Parameters
        ----------
        check : {"regression", "parity"}
            Which check.

        Returns
        -------
        list of Row
            Its rows, in the report's order.
        """
        if check not in CHECKS:
            raise ValueError(f"check must be one of {', '.join(map(repr, CHECKS))}, got {check!r}")
        return [r for r in self.rows if r.check == check]

    def verdict(self, check: str) -> str:
        """One check's verdict.

        Parameters
        ----------
        check : {"regression", "parity"}
            Which check.

        Returns
        -------
        str
            ``same`` (every row the same bits), ``ok``, ``DIFFERS``,
            ``recorded`` (its reference was written by this run) or ``not
            checked``.
        """
        rows = self.of(check)
        status = self.checks.get(check, {}).get("status", "checked" if rows else "not checked")
        if status != "checked":
            return status
        if any(not r.ok for r in rows):
            return "DIFFERS"
        return "same" if rows and all(r.verdict == "same" for r in rows) else "ok"

    def summary(self) -> str:
        """One line a check: its verdict, and what differs.

        Returns
        -------
        str
            Two lines, regression's then parity's.
        """
        lines = []
        for check in CHECKS:
            v = self.verdict(check)
            info = self.checks.get(check, {})
            if v in ("recorded", "not checked"):
                lines.append(f"{check}: {v}" + (f" ({info['why']})" if info.get("why") else ""))
                continue
            rows = self.of(check)
            bad = [r.quantity for r in rows if not r.ok]
            waived = [r.quantity for r in rows if r.verdict == "waived"]
            unjudged = [r.quantity for r in rows if r.verdict == "not judged"]
            line = f"{check}: {v}, {len(rows) - len(bad)} of {len(rows)} quantities pass"
            if bad:
                line += f"; differ: {', '.join(bad)}"
            if waived:
                line += f"; waived (R's known defect): {', '.join(waived)}"
            if unjudged:
                line += f"; not judged: {', '.join(unjudged)}"
            if check == "regression" and bad:
                line += f" ({_versions(info)})"
            lines.append(line)
        return "\n".join(lines)

    def table(self) -> str:
        """The report as plain text.

        Returns
        -------
        str
            A section a check (a line a quantity), then what R warned and
            printed, and the cells R's own parse of the files differs in.
        """
        out: List[str] = []
        for check, question in CHECKS.items():
            info = self.checks.get(check, {})
            out.append(f"{check}: {question}: {self.verdict(check)}")
            for line in _about(check, info):
                out.append(f"  {line}")
            rows = self.of(check)
            if rows:
                out.append(_rows_table(rows))
            out.append("")
        for w in self.meta.get("R warnings", []):
            out.append(f"R warned: {w}")
        console = self.meta.get("R console", "").strip()
        if console:
            out.append("R printed (kept here, not on the console):")
            out.extend(f"  {line}" for line in console.splitlines())
        differences = self.meta.get("R parse", {}).get("differences", [])
        if differences:
            out.append(f"R's read.csv and pyopnb's reader parse {len(differences)} cells differently "
                       f"(R fitted its own parse):")
            out.extend(f"  {_cell(d)}" for d in differences[:20])
            if len(differences) > 20:
                out.append(f"  ... and {len(differences) - 20} more (all in the JSON report)")
        return "\n".join(out).rstrip()

    def __str__(self) -> str:
        return self.table()

    def to_json(self) -> str:
        """The report as JSON (non-finite numbers as strings).

        Returns
        -------
        str
            ``ok``, ``exit_code``, ``checks`` (each one's verdict and what
            it compared), ``rows`` (each with its ``check``) and ``meta``.
        """
        checks = {c: {"verdict": self.verdict(c), **jsonable(self.checks.get(c, {}))} for c in CHECKS}
        return json.dumps({"ok": self.ok, "exit_code": self.exit_code, "checks": checks,
                           "rows": [r.to_dict() for r in self.rows], "meta": jsonable(self.meta)}, indent=1)


def _about(check: str, info: Dict[str, Any]) -> List[str]:
    if check == "regression":
        lines = []
        if info.get("now"):
            lines.append(f"now: {_identity(info['now'])}")
        if info.get("recorded"):
            lines.append(f"recorded: {_identity(info['recorded'])}")
    else:
        lines = [f"R: {info['R']}"] if info.get("R") else []
    if info.get("why"):
        lines.append(info["why"])
    return lines


def _identity(i: Dict[str, Any]) -> str:
    threads = i.get("threads")
    return (f"pyopnb {i.get('version', '?')}" + (f" on {i['date']}" if i.get("date") else "")
            + f" ({i.get('machine', '?')}, {i.get('simd', '?')}, {threads} thread{'' if threads == 1 else 's'})")


def _versions(info: Dict[str, Any]) -> str:
    now, rec = info.get("now") or {}, info.get("recorded") or {}
    return (f"pyopnb {now.get('version', '?')} now, pyopnb {rec.get('version', '?')} in the recording"
            + (f" of {rec['date']}" if rec.get("date") else ""))


def _cell(d: Dict[str, Any]) -> str:
    return (f"{d['file']} row {d['row']}, column {d['column']!r}: text {d['text']!r}, pyopnb {d['pyopnb']!r}, "
            f"R {d['R']!r}")


def _num(v: float) -> str:
    if isinstance(v, (int, np.integer)) or float(v).is_integer() and abs(v) < 1e6:
        return str(int(v))
    return f"{v:.2e}"


def _rows_table(rows: List[Row]) -> str:
    head = ["quantity", "difference", "tolerance", "verdict", "tolerance from"]
    body = [[r.quantity, _num(r.difference), _num(r.tolerance), r.verdict,
             r.source + (f" ({r.detail})" if r.detail else "")] for r in rows]
    widths = [max(len(head[i]), *(len(b[i]) for b in body)) for i in range(4)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths + [0])).rstrip()  # noqa: E731
    return "\n".join([line(head), line(["-" * w for w in widths] + ["-" * 14])] + [line(b) for b in body])


def jsonable(v: Any) -> Any:
    """Plain JSON values (numpy's included), non-finite numbers as R's
    fixtures write them ("Inf", "-Inf", "NaN"), which read back as floats."""
    if isinstance(v, dict):
        return {str(k): jsonable(u) for k, u in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(u) for u in v]
    if isinstance(v, np.ndarray):
        return jsonable(v.tolist())
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if np.isnan(f):
            return "NaN"
        return f if np.isfinite(f) else ("Inf" if f > 0 else "-Inf")
    return v
