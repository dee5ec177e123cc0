"""``python -m pyopnb.validation``: the same as ``pyopnb validate``.

    python -m pyopnb.validation                     # every check against R; exit 1 on a failure
    python -m pyopnb.validation --select fit/       # the checks whose id contains fit/
    python -m pyopnb.validation TRAIN.csv --target y [--test TEST.csv] [--cv 5]   # your workflow vs R's

See ``pyopnb validate --help``.
"""
import sys

from pyopnb.cli import main

if __name__ == "__main__":
    sys.exit(main(["validate", *sys.argv[1:]], prog="python -m pyopnb.validation"))
