"""Kernel source of gpu_tree, installed as the subpackage ``gpu_tree.kernels``.

The layout, in the shape of XGBoost's ``src/tree/hist/`` and ``src/tree/gpu_hist/``:

- ``cpu/`` (numba) and ``cuda/`` (numba.cuda): a module per stage, under the same name
  on both devices where the stage runs on both (``binning``, ``histograms``,
  ``partition``, ``row_statistics``, ``split_scan``, ``prediction``, ``sparse``,
  ``absolute_error``; ``launch``: how each device's kernels are compiled and launched).
  Stages of one device only keep their own names (``cpu/subtrees.py``,
  ``cpu/categorical.py``, ``cpu/random_draws.py``, ``cpu/oblique.py``; ``cuda/api.py``,
  the CUDA compiler).
- ``_*.py`` here: the sources shared by the stage modules, private to the kernels. All
  but one are plain Python that both devices compile (the split scan, the tree walk, the
  bin search, ...): one arithmetic, the same bits on either device. ``_prefetch.py`` (an
  LLVM prefetch intrinsic) is shared by CPU stage modules alone.
- ``walk.py``, ``python_mode.py``, ``compilation.py``: the walk without numba, the kernels
  run as Python for small fits, and numba's cache folder and compile notice.
- ``log2.py``: the entropy criteria's logarithm, the same bits on every device, both
  compiled (the split scan's) and on arrays (the vectorised search's).

numba keeps the compiled kernels (``cache=True``) beside their source, in ``__pycache__``,
under ``NUMBA_CACHE_DIR``, or in the user-wide ``~/.cache/numba``. Where it can write
none of them (a read-only install; ``docker run -u`` with HOME ``/``), every cached
kernel raised "cannot cache function" at import, ``gputree --version`` included:
:func:`.compilation.choose_cache_folder` (run by the ``cpu`` and ``cuda`` packages before
their modules decorate a kernel) then points numba at a folder of the user's temporary
directory, or lets the kernels run uncached where that cannot be written either. The
CUDA kernels follow the same setting: numba's own CUDA target, numba-cuda and
Numba-CUDA-MLIR all read ``numba.core.config`` where numba is installed, and this runs
before any of them decorates a kernel.
"""
