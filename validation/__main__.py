"""``python -m validation`` from the repository: ``pyopnb validate`` (the
installed kit, ``python -m pyopnb.validation``, works from any folder)."""
import sys

from pyopnb.cli import main

sys.exit(main(["validate", *sys.argv[1:]], prog="python -m validation"))
