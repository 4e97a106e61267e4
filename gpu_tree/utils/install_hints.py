"""How to install an optional dependency: worded once, for every message that needs it.

gpu_tree is not on a package index; users install it from a checkout, so a hint naming
the package's own extra by its index name fails for everyone. A hint names the
packages themselves, which pip finds anywhere, and the extra that installs them from a
checkout with the versions pyproject.toml asks for (tests/utils/test_install_hints.py keeps the
two in step).
"""

from __future__ import annotations

# Each optional extra of pyproject.toml that a message points to: its packages, as pip
# takes them on a shell's command line (brackets quoted).
EXTRA_PACKAGES = {
    "parquet": "pyarrow",
    "frames": "pandas pyarrow",
    "plot": "matplotlib",
    "cuda12": 'cupy-cuda12x "numba-cuda[cu12]"',
    "cuda13": 'cupy-cuda13x "numba-cuda[cu13]"',
    "dask": '"dask[distributed]"',
    "export": "onnx onnxruntime treelite",
}


def install_hint(extra: str) -> str:
    """'pip install <packages> (or, in a gpu_tree checkout, pip install ".[<extra>]")'."""
    return f'pip install {EXTRA_PACKAGES[extra]} (or, in a gpu_tree checkout, pip install ".[{extra}]")'
