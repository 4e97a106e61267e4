"""The CPU kernels, compiled with numba (cached on disk after the first call), a module
per stage; ``kernels/cuda/`` holds the GPU's under the same names.

Layout conventions shared with the CUDA kernels:

- ``X_binned`` is indexed [feature, row], shape (n_features, n_samples), uint8 or
  uint16. The kernels work on either memory order: the CPU backend stores it row-major
  (a transposed view), so the scattered rows of a deep node cost one cache line each;
  feature-major suits coalesced GPU reads.
- Rows of a node are the slice ``sample_indices[start:end]``; a split partitions that
  slice in place, stably (left rows first), so row order inside every node stays
  ascending and reads stay cache friendly.
- Histograms have shape (n_nodes, n_features, n_bins, n_channels) and hold integers
  (the fixed-point statistics of :mod:`gpu_tree.data.stats`): int32 counts or int64.
"""

from pathlib import Path

from .. import compilation

# Before the first kernel of any stage module is decorated: where numba caches them.
compilation.choose_cache_folder(Path(__file__).parent.parent)
