"""A fit's checkpoint: its evaluations so far, in a file, so that a fit
stopped anywhere resumes from it with the bits of a fit never stopped.

L-BFGS-B is a function of the values and gradients it is given: replaying
the recorded ones (each at the V it asked for, checked bit for bit) brings
the optimiser back to where it stopped, for the cost of its own arithmetic,
with none of the evaluations made again. Past the record, each new
evaluation is added to the file (written whole to a temporary file, then
renamed over it, so a stop mid-write leaves the last complete one).
"""
from __future__ import annotations

import hashlib
import os
from typing import Any, List, Tuple

import numpy as np

__all__ = ["Checkpointed", "fit_key"]


def fit_key(*parts: Any) -> str:
    """A digest of what fixes a fit's path (its data's statistics, start
    and settings): a checkpoint of another fit is refused."""
    h = hashlib.sha256()
    for p in parts:
        a = np.asarray(p)
        h.update(str(a.dtype).encode() + str(a.shape).encode())
        h.update(a.tobytes() if a.dtype != object else repr(a.tolist()).encode())
    return h.hexdigest()


class Checkpointed:
    """An evaluator whose ``value_and_grad`` replays the checkpoint at
    ``path`` before it evaluates (see the module's docstring); every other
    attribute is the evaluator's.

    Parameters
    ----------
    evaluator : object
        The fit's evaluator (``value_and_grad(V)``).
    path : str or os.PathLike
        The checkpoint file: read if it exists (it must be this fit's),
        written after each new evaluation.
    key : str
        :func:`fit_key` of the fit.
    """

    def __init__(self, evaluator: Any, path: Any, key: str):
        self.evaluator = evaluator
        self.path = os.fspath(path)
        self.key = key
        self.records: List[Tuple[np.ndarray, float, np.ndarray]] = []
        self.replayed = 0
        if os.path.exists(self.path):
            try:
                with np.load(self.path, allow_pickle=False) as f:
                    stored = str(f["key"])
                    V, F, G = f["V"], f["F"], f["G"]
            except (OSError, ValueError, KeyError) as exc:
                raise ValueError(f"{self.path} is not a pyopnb checkpoint ({exc}): give another path") from None
            if stored != key:
                raise ValueError(f"the checkpoint {self.path} is of another fit (other data, start or settings): "
                                 f"remove it or give another path; it is left as it is")
            self.records = [(V[i], float(F[i]), G[i]) for i in range(F.size)]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.evaluator, name)

    def value_and_grad(self, V: Any) -> Tuple[float, np.ndarray]:
        """The recorded value and gradient at V, or the evaluator's (then recorded)."""
        Va = np.ascontiguousarray(V, dtype=np.float64)
        i = self.replayed
        if i < len(self.records):
            Vr, F, G = self.records[i]
            if Vr.shape != Va.shape or not np.array_equal(Vr, Va):
                raise ValueError(f"the checkpoint {self.path} does not follow this fit at evaluation {i + 1}: the "
                                 f"optimiser asks for another V than it recorded there")
            self.replayed += 1
            return F, G.copy()
        F, G = self.evaluator.value_and_grad(Va)
        self.records.append((Va.copy(), float(F), np.array(G, copy=True)))
        self.replayed += 1
        self._write()
        return F, G

    def _write(self) -> None:
        tmp = self.path + ".tmp"
        with open(tmp, "wb") as f:
            np.savez(f, key=np.asarray(self.key), V=np.stack([r[0] for r in self.records]),
                     F=np.asarray([r[1] for r in self.records]), G=np.stack([r[2] for r in self.records]))
        os.replace(tmp, self.path)
