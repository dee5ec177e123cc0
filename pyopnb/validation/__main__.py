"""``python -m pyopnb.validation``: the same as ``pyopnb validate``.

    python -m pyopnb.validation                     # every check against R; exit 1 on a failure
    python -m pyopnb.validation --select fit/       # the checks whose id contains fit/
    python -m pyopnb.validation TRAIN.csv --target y [--test TEST.csv] [--cv 5] --record r.json   # with R, once
    python -m pyopnb.validation TRAIN.csv --target y [--test TEST.csv] [--cv 5] --against r.json  # anywhere

See ``python -m pyopnb.validation --help``.
"""
import sys

from pyopnb.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], prog="python -m pyopnb.validation", only="validate"))
