"""Sphinx configuration of gpu_tree's documentation site.

Build it from the repository root (the site lands in docs/_build/html, not committed)::

    pip install . -r docs/requirements.txt
    sphinx-build -W --keep-going -b html docs docs/_build/html

Pages are Markdown (MyST) or reStructuredText; the API reference is generated from the
docstrings by autodoc and numpydoc; ``docs/examples/*.py`` run at every build
(sphinx-gallery) and their figures go into the gallery.
"""

import logging
import os
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent

# Examples run small fits: the kernels run as Python there (no compilation), matplotlib
# draws off screen.
os.environ.setdefault("MPLBACKEND", "Agg")

import gpu_tree  # noqa: E402

project = "gpu_tree"
author = "the gpu_tree authors"
copyright = "the gpu_tree authors"  # noqa: A001 - Sphinx's name
release = gpu_tree.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "examples/GALLERY_HEADER.rst", "requirements.txt"]
myst_enable_extensions = ["dollarmath", "deflist"]
myst_heading_anchors = 3

# The API reference: one entry per public name, members in source order; numpydoc renders
# the docstrings' sections. Members are listed by autodoc, so numpydoc's own member
# tables (which need autosummary pages) are off.
autodoc_member_order = "bysource"
# Every cross-reference must resolve (with -W, a broken one fails the build); what the
# public docstrings name outside the public names is in the reference too (Tree.apply's
# batch thresholds, export_png's TreeTooLargeToDraw).
nitpicky = True
autodoc_typehints = "none"
autodoc_default_options = {"members": True, "undoc-members": False}
numpydoc_show_class_members = False
numpydoc_xref_param_type = False

sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "show_memory": False,
    "min_reported_time": 1,
}

html_theme = "furo"
html_title = f"gpu_tree {release}"
html_static_path = []

# The examples' fits log their progress to the "gpu_tree" logger; the pages show what the
# examples print, not the log.
logging.getLogger("gpu_tree").setLevel(logging.WARNING)


def _skip_scikit_learn_members(app, what, name, obj, skip, options):
    """Leave out what the estimators inherit from scikit-learn's bases (get_params,
    set_params, the metadata-routing requests): scikit-learn documents those, and its
    docstrings refer to its own glossary."""
    module = getattr(obj, "__module__", None) or ""
    if module.split(".")[0] == "sklearn":
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_scikit_learn_members)
