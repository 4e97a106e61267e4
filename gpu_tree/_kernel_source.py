"""Where ``gpu_tree.kernels`` comes from.

The kernel source is the top-level ``kernels/`` folder of the project (its stated layout:
pyproject.toml, README.md, gpu_tree/, kernels/, tests/, bench/, Dockerfile). Installing
the project maps that folder to the subpackage ``gpu_tree.kernels``
(``[tool.setuptools] package-dir`` in pyproject.toml): a wheel copies it into
``gpu_tree/kernels/``, an editable install points an import hook at it.

A source checkout used without installing (``PYTHONPATH=.``, or running from the
repository root) has no such mapping. There the package loads ``kernels/`` from beside
itself; and where it can find the kernels nowhere, it says so and how to fix it instead
of failing deep inside an import.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

KERNELS_PACKAGE = "gpu_tree.kernels"


def _checkout_kernels() -> Path:
    """The kernels/ folder of the source checkout this package lies in."""
    return Path(__file__).resolve().parent.parent / "kernels"


def ensure_kernels_importable() -> None:
    """Make ``import gpu_tree.kernels`` work in an installed package and in a checkout."""
    if KERNELS_PACKAGE in sys.modules or importlib.util.find_spec(KERNELS_PACKAGE) is not None:
        return  # installed: a wheel's gpu_tree/kernels/, or an editable install's mapping
    folder = _checkout_kernels()
    init = folder / "__init__.py"
    if not init.is_file():
        raise ImportError(
            f"gpu_tree cannot find its kernels: {KERNELS_PACKAGE} is not installed and there "
            f"is no {folder} beside the package. The kernel source lives in the project's "
            "top-level kernels/ folder and is installed as gpu_tree.kernels: install the "
            "project (pip install . or pip install -e . from the repository root) instead of "
            "copying the gpu_tree/ folder alone.",
            name=KERNELS_PACKAGE,
        )
    spec = importlib.util.spec_from_file_location(
        KERNELS_PACKAGE, init, submodule_search_locations=[str(folder)]
    )
    # Loaded on first use, not here: kernels/__init__ imports numba, which takes a second,
    # and `import gpu_tree` (the command line's first step, before its interrupt handlers
    # are set) must stay light.
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[KERNELS_PACKAGE] = module
    spec.loader.exec_module(module)
