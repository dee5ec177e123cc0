"""Sphinx configuration: ``python -m sphinx -W -b html docs OUT`` (``pip install .[docs]``).

The API reference is generated from the numpydoc docstrings (autosummary),
the Markdown pages are read by myst-parser, and the gallery's examples in
``examples/`` run at every build (sphinx-gallery), each with its figures.
"""
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
ROOT = Path(__file__).resolve().parents[1]

# the installed pyopnb (a wheel, or `pip install -e .`): its compiled core is built. `python -m sphinx` run
# in the repository's root puts the root first on sys.path, where the source folder, not built in place,
# would hide the installed package (pip install ".[docs]" builds it elsewhere)
if not any((ROOT / "pyopnb" / f"_ksum{suffix}").exists() for suffix in EXTENSION_SUFFIXES):
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT]
import pyopnb  # noqa: E402

project = "pyopnb"
author = "the pyopnb developers"
copyright = "2026, the pyopnb developers (GPL-3.0-or-later)"
release = pyopnb.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "api/generated/*.examples", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.json", "auto_examples/*.md5", "sg_execution_times.rst"]
root_doc = "index"

autosummary_generate = True
autodoc_typehints = "none"  # the numpydoc sections carry the types; the signatures keep the hints
autodoc_default_options = {"members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# every public name documents every parameter it takes, and only those,
# and says what it returns: a missing or stale entry fails the build (-W)
numpydoc_validation_checks = {"GL08", "PR01", "PR02", "PR07", "RT03", "SS01"}
numpydoc_validation_exclude = {r"\.__init__$", r"\.__call__$", r"\.__getitem__$"}

myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
# README-style test directives are HTML comments: they do not show
suppress_warnings = ["myst.header"]

sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "abort_on_example_error": True,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "show_memory": False,
    "min_reported_time": 1e9,
}

html_theme = "pydata_sphinx_theme"
html_title = f"pyopnb {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_static_path = []
templates_path = ["_templates"]
