"""The study's results on disk: one SQLite row per (data set, split, method),
written as soon as it is computed, so an interrupted run loses nothing."""
from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any, Dict, Optional, Set, Tuple

__all__ = ["Store"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS datasets (name TEXT PRIMARY KEY, info TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    dataset TEXT NOT NULL, split INTEGER NOT NULL, method TEXT NOT NULL,
    error REAL, params TEXT NOT NULL, seconds REAL NOT NULL, note TEXT NOT NULL,
    PRIMARY KEY (dataset, split, method));
"""
# added after the first results were stored: a file made before has the
# column added, NULL in its older rows (how their fits stopped was not kept)
_STOPS = "stops"


class Store:
    """results.sqlite in the study's folder. ``config`` (splits, profile,
    seed) is fixed by the first run: results of another protocol are never
    mixed into the same file."""

    def __init__(self, folder: str | Path, config: Dict[str, Any]):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / "results.sqlite"
        self.computed = 0
        self._run: Optional[Dict[str, Any]] = None
        self.db = sqlite3.connect(self.path)
        self.db.executescript(_SCHEMA)
        row = self.db.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()
        if row is None:
            with self.db:
                self.db.execute("INSERT INTO meta VALUES ('config', ?)", (json.dumps(config, sort_keys=True),))
        elif json.loads(row[0]) != config:
            self.db.close()
            raise ValueError(f"{self.path} holds results of another protocol ({row[0]}); this run is "
                             f"{json.dumps(config, sort_keys=True)}: give another output folder")
        # a file of this protocol made before the column: changed only once it is known to be written to
        if _STOPS not in {r[1] for r in self.db.execute("PRAGMA table_info(results)")}:
            with self.db:
                self.db.execute(f"ALTER TABLE results ADD COLUMN {_STOPS} TEXT")

    def done(self) -> Set[Tuple[str, int, str]]:
        return {(d, int(s), m) for d, s, m in self.db.execute("SELECT dataset, split, method FROM results")}

    def begin_run(self, command: Optional[str]) -> None:
        """Count the results added from now on as one run of ``command``
        (None: a run not recorded). The run's record (its command, wall
        seconds to its last result, results computed) is written with each
        result, in the same transaction, so that a run killed outright still
        counts in the report; a run that computes nothing leaves none."""
        self.computed = 0
        self._run = None if command is None else {"command": command, "t0": time.perf_counter(),
                                                  "before": self.runs()}

    def add(self, dataset: str, split: int, method: str, row: Dict[str, Any]) -> None:
        with self.db:  # one transaction per result: committed before the next is awaited
            self.db.execute("INSERT OR REPLACE INTO results (dataset, split, method, error, params, seconds, note, "
                            f"{_STOPS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            (dataset, split, method, row["error"], row["params"], row["seconds"], row["note"],
                             row.get("stops")))
            if self._run is not None:
                runs = self._run["before"] + [{"command": self._run["command"], "computed": self.computed + 1,
                                               "seconds": time.perf_counter() - self._run["t0"]}]
                self.db.execute("INSERT OR REPLACE INTO meta VALUES ('runs', ?)", (json.dumps(runs),))
        self.computed += 1

    def runs(self) -> list:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'runs'").fetchone()
        return [] if row is None else json.loads(row[0])

    def add_dataset(self, name: str, info: Dict[str, Any]) -> None:
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO datasets VALUES (?, ?)", (name, json.dumps(info)))

    def close(self) -> None:
        self.db.close()
