"""Kernel source of gpu_tree, installed as the subpackage ``gpu_tree.kernels``.

``cpu``: numba CPU hot loops (binning, histograms, partition, exact-mode statistics,
prediction). The CUDA kernels live beside them and share their layout conventions.

numba keeps the compiled kernels (``cache=True``) beside their source, in ``__pycache__``,
under ``NUMBA_CACHE_DIR``, or in the user-wide ``~/.cache/numba``. Where it can write
none of them (a read-only install; ``docker run -u`` with HOME ``/``), every cached
kernel raised "cannot cache function" at import, ``gputree --version`` included:
:func:`.compilation.choose_cache_folder` (run by ``cpu.py`` and ``cuda.py`` before
they decorate a kernel) then points numba at a folder of the user's
temporary directory, or lets the kernels run uncached where that cannot be written
either. The CUDA kernels (``cuda.py``, cached too) follow the same setting: numba's own
CUDA target, numba-cuda and Numba-CUDA-MLIR all read ``numba.core.config`` where numba
is installed, and this runs before any of them decorates a kernel.
"""
