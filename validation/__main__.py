"""``python -m validation`` from the repository: the installed kit's report
(``python -m pyopnb.validation``, which works from any folder)."""
import sys

from pyopnb.validation.__main__ import main

sys.exit(main())
