"""Cross-checks of pyopnb against the original R packages, installed with pyopnb.

Three sources of truth (:mod:`pyopnb.validation.checks`): outputs of R's
OPNB 1.0 and FKSUM 1.0.1 recorded in ``fixtures/`` (they ship with the
package, so these checks run anywhere, with no R); base R through rpy2; and
R's OPNB, FKSUM and OPGD packages through rpy2 where this machine has them.

``python -m pyopnb.validation`` and ``pyopnb validate`` run them all;
``pyopnb validate TRAIN.csv --target y`` compares your own workflow with R's
(:mod:`pyopnb.validation.workflow`).
"""
