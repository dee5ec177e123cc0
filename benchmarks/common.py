"""Timing helpers shared by the benchmarks: pyopnb and R side by side in one run."""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from typing import Callable, List, Optional, Sequence

import numpy as np


# the environment before R starts: embedded R adds to it (R_HOME, LD_LIBRARY_PATH, ...)
_ENV = dict(os.environ)
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child_json(code: str) -> dict:
    """Run code in a fresh interpreter (for its own time and peak memory); its
    last printed line is JSON."""
    prog = f"import sys, json; sys.path.insert(0, {_ROOT!r})\n" + code
    out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, env=_ENV)
    if out.returncode != 0:
        raise RuntimeError(f"benchmark child failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    """Smallest wall time of ``repeat`` calls (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def peak_rss_mb() -> float:
    """Peak resident memory of this process image so far (MB).

    VmHWM, not getrusage's ru_maxrss: the latter carries the parent's size
    across fork and exec, so a child of a large process (R loaded) reads the
    parent's peak."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class R:
    """The R packages through rpy2, or None where R, rpy2 or a package is missing."""

    def __init__(self, packages: Sequence[str]):
        self.why_not: Optional[str] = None
        self.ro = None
        try:
            import rpy2.robjects as ro
            from rpy2.robjects import numpy2ri  # noqa: F401
        except Exception as exc:  # rpy2 missing or R not loadable
            self.why_not = f"rpy2/R not available ({type(exc).__name__}: {exc})"
            return
        for pkg in packages:
            ok = ro.r(f'c(suppressWarnings(suppressMessages(requireNamespace("{pkg}", quietly = TRUE))))')[0]
            if not ok:
                self.why_not = f"R package {pkg} is not installed"
                return
        self.ro = ro

    @property
    def ok(self) -> bool:
        return self.ro is not None

    def assign(self, name: str, value: np.ndarray) -> None:
        ro = self.ro
        arr = np.asarray(value)
        if arr.ndim == 1:
            vec = ro.FloatVector(arr.astype(float)) if arr.dtype.kind == "f" else ro.IntVector(arr.astype(int))
        else:
            vec = ro.r.matrix(ro.FloatVector(arr.ravel(order="F").astype(float)), nrow=arr.shape[0], ncol=arr.shape[1])
        ro.globalenv[name] = vec

    def time(self, expr: str, repeat: int = 3) -> float:
        """Smallest elapsed time of ``expr`` measured inside R."""
        code = f"{{ invisible({expr}); t <- c(); for (i in 1:{repeat}) t <- c(t, system.time({expr})[['elapsed']]); min(t) }}"
        return float(self.ro.r(code)[0])


def table(rows: List[List[object]], header: List[str]) -> str:
    """A markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        if len(r) != len(header):
            raise ValueError(f"row {r[0]!r} has {len(r)} cells for {len(header)} columns")
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)
