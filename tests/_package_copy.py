"""A copy of the package, run uninstalled in a child process: for the tests of a checkout
that is not installed, of a read-only install and of the image's unknown user."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def site_packages() -> str:
    import numpy

    return str(Path(numpy.__file__).resolve().parents[1])


def run_in_a_copy(tmp_path, code, env, with_kernels=True, prepare=None):
    """Copy gpu_tree/ (and kernels/) to ``tmp_path``, let ``prepare(tmp_path)`` alter the
    copy, and run ``code`` there uninstalled. ``-S`` keeps the editable install's import
    hook (a .pth file) out of the child, whose kernels compile whatever the size of its
    data (as conftest.py asks of every test)."""
    import shutil

    for name in ("gpu_tree", "kernels") if with_kernels else ("gpu_tree",):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    if prepare is not None:
        prepare(tmp_path)
    return subprocess.run(
        [sys.executable, "-S", "-c", code],
        cwd=tmp_path,
        env={
            "PYTHONPATH": f"{tmp_path}:{site_packages()}",
            "GPU_TREE_PYTHON_KERNELS": os.environ["GPU_TREE_PYTHON_KERNELS"],
            **env,
        },
        capture_output=True,
        text=True,
        timeout=600,
    )
