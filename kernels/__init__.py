"""Kernel source of gpu_tree, installed as the subpackage ``gpu_tree.kernels``.

``cpu``: numba CPU hot loops (binning, histograms, partition, exact-mode statistics,
prediction). The CUDA kernels live beside them and share their layout conventions.

numba keeps the compiled kernels (``cache=True``) beside their source, in ``__pycache__``,
or under ``NUMBA_CACHE_DIR``. Where the source folder cannot be written (a read-only
install) and no cache folder is set, every cached kernel raised "cannot cache function"
at import, ``gputree --version`` included: :func:`_ensure_numba_can_cache` then points
numba at a folder of the user's temporary directory. The CUDA kernels (``cuda.py``,
cached too) follow the same setting: numba's own CUDA target, numba-cuda and
Numba-CUDA-MLIR all read ``numba.core.config`` where numba is installed, and this runs
before any of them decorates a kernel.
"""

import os
import tempfile


def _writable_folder(path) -> bool:
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError:
        return False
    return True


def _ensure_numba_can_cache():
    from numba.core import config

    if config.CACHE_DIR or _writable_folder(os.path.join(os.path.dirname(__file__), "__pycache__")):
        return
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    fallback = os.path.join(tempfile.gettempdir(), f"gpu_tree-numba-cache-{uid}")
    if _writable_folder(fallback):
        config.CACHE_DIR = fallback


_ensure_numba_can_cache()
