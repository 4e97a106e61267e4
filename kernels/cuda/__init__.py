"""The CUDA kernels (numba.cuda), launched on CuPy arrays, or numpy arrays in the
simulator, a module per stage under the names of ``kernels/cpu/``'s.

Layout conventions shared with :mod:`gpu_tree.kernels.cpu`:

- ``X_binned`` is indexed [feature, row], feature-major on the device so that the
  threads of a warp, which take consecutive rows, read consecutive bytes.
- ``node_of_row`` holds each row's current tree node; a level's histogram launch maps
  node ids to histogram slots with ``slot_of_node`` (-1: the node is not built).
- Histograms have shape (n_slots, n_features, n_bins, n_channels) and hold integers: the
  fixed-point statistics of ``gpu_tree.data.stats`` (class counts, weights, regression
  sums), int32 counts or int64. Integer atomic additions are exact and their order
  does not matter: trees are deterministic and equal to the CPU backend's.

Under ``NUMBA_ENABLE_CUDASIM=1`` the same source runs on the CPU, one Python thread per
CUDA thread: CI checks these kernels there on small data. The simulator runs the GPU's
code path, with one difference: launches use a small grid (``launch.SIMULATOR_GRID``:
three blocks of 16 threads), which grid-stride over the same work a full grid would
share. No warp intrinsics are used (the simulator has none). Arrays from CuPy are passed
through ``__cuda_array_interface__``; numba synchronises on them around each launch,
which is harmless here since every launch's result is needed by the next step.

The CUDA module is numba's (``numba.cuda``) or Numba-CUDA-MLIR's, chosen in :mod:`.api`.
Every kernel and device function is compiled with ``cache=True``: a process loads the
compiled kernels from numba's on-disk cache (``__pycache__`` beside their source, or
``NUMBA_CACHE_DIR``; see ``kernels/__init__.py`` for read-only installs) instead of
paying the JIT again. The simulator accepts the flag and ignores it.

Launch grids stay within every CUDA GPU's limits (``launch.MAX_GRID_X``,
``launch.MAX_GRID_Y``) whatever the number of rows or features: the kernels grid-stride
over what a smaller grid does not cover, rows along x and feature groups along y.
"""

from pathlib import Path

from .. import compilation

# Before the first kernel of any stage module is declared: where numba caches them.
compilation.choose_cache_folder(Path(__file__).parent.parent)
