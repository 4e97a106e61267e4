"""Binning on the GPU: every value's bin by the CPU's bin search
(``kernels/_binning_search.py``, the same codes) and each bin's bounds."""

from .. import _binning_search as _search
from .. import compilation
from .api import cuda, device_function
from .launch import HELPERS_SOURCE_KEY

# The bin search shared with the CPU kernels (one source, the same codes).
_lookup_cell = device_function(cache=True)(_search.lookup_cell)
_bin_code = device_function(cache=True)(_search.make_bin_code(_lookup_cell))


def _compile_bin_columns(helpers_key):
    @cuda.jit(cache=True)
    def bin_columns(
        X,
        edges,
        edge_offsets,
        lookup,
        cells_per_unit,
        track_bounds,
        missing_bin,
        X_binned,
        bin_lower,
        bin_upper,
    ):
        """Map raw values to bins on the device: the CPU kernel's search (same lookup grid,
        same cell arithmetic, so the same codes), one thread per (row, feature).

        Tasks run row-major, so a warp reads consecutive values of the row-major X. Bin
        bounds, for the features that track them, use atomic min / max: order-independent.
        """
        helpers_key  # noqa: B018 - in the cache key only (see HELPERS_SOURCE_KEY)
        n_samples, n_features = X.shape
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        for task in range(start, n_samples * n_features, stride):
            i = task // n_features
            f = task - i * n_features
            x = X[i, f]
            b = _bin_code(x, f, edges, edge_offsets, lookup, cells_per_unit, missing_bin)
            X_binned[f, i] = b
            if b == missing_bin:
                continue
            if track_bounds[f]:
                cuda.atomic.min(bin_lower, (f, b), x)
                cuda.atomic.max(bin_upper, (f, b), x)

    return bin_columns


bin_columns = _compile_bin_columns(HELPERS_SOURCE_KEY)


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())
