"""The OPNB papers' experiment, reproducible: OPNB against the comparators on
PMLB data sets (Table 1: wins-ties-losses; Figure 2: standardised errors).

``python -m pyopnb.study --data DIR --out DIR [--quick]`` (or ``pyopnb study``)
runs the protocol of the journal paper's section 4.1-4.2 with results
stored as they come (an interrupted run resumes), in parallel through joblib
or on a Dask cluster, and writes the report.
"""
from .data import available, load, preprocess
from .methods import DEFAULT_METHODS
from .paths import path_effect, write_path_report
from .report import PAPER_TABLE1, write_report
from .run import run_study

__all__ = ["available", "load", "preprocess", "run_study", "write_report", "path_effect", "write_path_report",
           "DEFAULT_METHODS", "PAPER_TABLE1"]
