"""How the CUDA kernels are compiled and launched: where numba caches them, the source
key of the device-shared helpers they inline, the toolchain probe, and the launch grids
(:data:`MAX_GRID_X`, :data:`MAX_GRID_Y`; the simulator's small :data:`SIMULATOR_GRID`).
Every CUDA stage module imports it before it declares a kernel: where numba can cache
nothing, the kernels then compile uncached."""

import hashlib
from pathlib import Path

import numpy as np
from numba import config

from .. import _binning_search as _search
from .. import _split_scan as _scan
from .. import _squared_deviations as _deviations
from .. import _tree_walk as _walk
from .. import compilation, log2
from .api import cuda

# Where no folder can hold numba's cache, the kernels below compile uncached.
compilation.allow_uncached_cuda(cuda)

# numba's on-disk cache is keyed on the file a kernel is defined in (its time stamp and
# size), not on the files it inlines code from: an edit to _binning_search.py,
# _split_scan.py, log2.py, _squared_deviations.py or _tree_walk.py alone would leave stale kernels in the cache.
# The kernels that inline them take this hash of their source as a closure variable,
# which numba puts in the cache key (as the CPU kernels do for theirs).
HELPERS_SOURCE_KEY = int(
    hashlib.sha256(
        b"".join(Path(m.__file__).read_bytes() for m in (_search, _scan, log2, _deviations, _walk))
    ).hexdigest()[:15],
    16,
)


THREADS_PER_BLOCK = 256


@cuda.jit(cache=True)
def probe(out):
    """The toolchain check gpu_tree runs once per process before it trusts the GPU
    (``gpu_tree.backends.cuda.probe_failure``): each element its index times 3 plus 1,
    in int64 and float64 arithmetic, and one atomic addition per thread to ``out[0]``."""
    start = cuda.grid(1)
    for i in range(start, out.size, cuda.gridsize(1)):
        if i > 0:
            out[i] = np.int64(float(i) * 3.0) + 1
        cuda.atomic.add(out, 0, 1)


# The simulator runs each CUDA thread as a Python thread: a small grid-striding grid does
# the same work as a full one, thousands of times faster there. Several blocks, not one,
# so that the simulator exercises what only a multi-block launch has: block-private shared
# histograms merged into one global histogram, atomics from different blocks on the same
# entry, and grid strides larger than a block (tests may set other shapes).
SIMULATOR_GRID = (3, 16)
# Grid limits of every CUDA GPU (compute capability 3.0 on): gridDim.x at most 2**31 - 1,
# gridDim.y (and z) at most 65,535.
MAX_GRID_X = 2**31 - 1
MAX_GRID_Y = 65535


def simulating(simulator) -> bool:
    return bool(config.ENABLE_CUDASIM) if simulator is None else simulator


def launch_config(n_tasks: int, max_blocks: int = 4096, simulator: bool | None = None):
    """(blocks, threads) for a grid-striding kernel over ``n_tasks`` items: at most
    ``max_blocks`` (and :data:`MAX_GRID_X`) blocks, which stride over the rest."""
    if simulating(simulator):
        return SIMULATOR_GRID
    blocks = max(1, min(max_blocks, MAX_GRID_X, -(-n_tasks // THREADS_PER_BLOCK)))
    return blocks, THREADS_PER_BLOCK


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())
