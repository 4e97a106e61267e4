"""Histograms on the GPU: a level's histograms in global memory, or in block-private
shared memory merged into global memory; :func:`add_row` is one row's statistics added
atomically (the sparse kernels add theirs by it too)."""

import numpy as np

from .. import compilation
from . import launch
from .api import cuda, device_function

# Shared memory per block for a block-private histogram: 48 KiB, the static limit every
# CUDA GPU offers without opting in to more. Its entries have the type of the global
# histogram's: int32 for int32 class counts (unweighted classification; 32-bit shared
# atomics are native, and a block holds twice the entries, so twice the features), int64
# for the rest (fixed-point weights, regression sums).
SHARED_HISTOGRAM_BYTES = 48 * 1024
SHARED_HISTOGRAM_ENTRIES = SHARED_HISTOGRAM_BYTES // 8  # int64: 6,144
SHARED_HISTOGRAM_ENTRIES_INT32 = SHARED_HISTOGRAM_BYTES // 4  # int32: 12,288


def shared_histogram_entries(dtype) -> int:
    """Entries of a block's shared histogram for a global histogram of ``dtype``."""
    return (
        SHARED_HISTOGRAM_ENTRIES_INT32 if np.dtype(dtype) == np.int32 else SHARED_HISTOGRAM_ENTRIES
    )


@device_function(inline=True, cache=True)
def add_row(
    target, index, i, is_classification, y_class, weight, unit_weight, count_channel, row_stats
):
    """Add row i's statistics to the channels starting at flat ``index`` of ``target``
    (a histogram entry of one node, feature and bin).

    With ``unit_weight`` (every weight is 1) no weight is read: a classification row adds
    1 to its class (``weight`` may be a 1-element stand-in), and a regression row's
    ``row_stats`` leave out channel 0, the weight, to which the row adds 1 here.
    """
    if is_classification:
        cuda.atomic.add(target, index + y_class[i], 1 if unit_weight else weight[i])
        if count_channel >= 0:
            cuda.atomic.add(target, index + count_channel, 1)
    else:
        first = 0
        if unit_weight:
            cuda.atomic.add(target, index, 1)
            first = 1
        for c in range(row_stats.shape[1]):
            cuda.atomic.add(target, index + first + c, row_stats[i, c])


@cuda.jit(cache=True)
def histograms_global(
    X_binned,
    row_list,
    node_of_row,
    slot_of_node,
    is_classification,
    y_class,
    weight,
    unit_weight,
    count_channel,
    row_stats,
    hist_flat,
    n_bins,
    n_channels,
):
    """Histograms of every node of a level in one launch, straight into global memory.

    The path for levels whose histograms do not fit a block's shared memory. ``row_list``:
    the rows of the nodes built (their segments of the backend's row order), the only
    rows read. One thread per (listed row, feature) pair, grid-striding: a warp reads
    consecutive listed rows of one feature.
    ``hist_flat`` is the (n_slots, n_features, n_bins, n_channels) histogram, flattened.
    Classification rows add their weight to their class (and 1 to ``count_channel`` if
    >= 0); regression rows add their ``row_stats`` (see :func:`add_row` for unit weights).
    """
    n_features = X_binned.shape[0]
    n_rows = row_list.shape[0]
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for task in range(start, n_rows * n_features, stride):
        f = task // n_rows
        i = row_list[task - f * n_rows]
        slot = slot_of_node[node_of_row[i]]
        if slot < 0:
            continue
        index = ((slot * n_features + f) * n_bins + X_binned[f, i]) * n_channels
        add_row(
            hist_flat,
            index,
            i,
            is_classification,
            y_class,
            weight,
            unit_weight,
            count_channel,
            row_stats,
        )


def _compile_histograms_shared(shared_dtype):
    """:func:`histograms_shared` with a shared histogram of ``shared_dtype`` entries (as
    many as fill :data:`SHARED_HISTOGRAM_BYTES`): numba needs the shared array's type and
    size when it compiles, hence one kernel per type, from this one source."""
    shared_entries = shared_histogram_entries(shared_dtype)

    @cuda.jit(cache=True)
    def histograms_shared(
        X_binned,
        row_list,
        node_of_row,
        slot_of_node,
        is_classification,
        y_class,
        weight,
        unit_weight,
        count_channel,
        row_stats,
        hist_flat,
        n_bins,
        n_channels,
        n_slots,
        features_per_block,
    ):
        """As :func:`histograms_global`, accumulating in a block-private shared-memory histogram.

        Grid: (row blocks, feature-group blocks). The features form groups of
        ``features_per_block``; block (x, y) takes the groups y, y + gridDim.y, ... (more
        groups than gridDim.y's limit of 65,535 are strided over) and, for each, sums the
        rows x, x + gridDim.x, ... of that group's features, every slot, in shared memory,
        then adds its non-zero entries to the global histogram: one global atomic per entry
        per block instead of one per row. The launcher guarantees
        n_slots * features_per_block * n_bins * n_channels <= the shared histogram's
        entries (:func:`shared_features_per_block`).

        The shared entries are int64, or int32 in the variant for int32 histograms (class
        counts): a block's count in an entry is at most the rows it reads, fewer than 2**31,
        so the int32 sums and their merge are exact too.
        """
        # shared_dtype and shared_entries are closure variables, hence in numba's cache key:
        # the two variants' cached kernels are told apart (as HELPERS_SOURCE_KEY is).
        shared = cuda.shared.array(shared_entries, dtype=shared_dtype)
        n_features = X_binned.shape[0]
        n_rows = row_list.shape[0]
        row_stride = cuda.gridDim.x * cuda.blockDim.x
        # Groups y, y + gridDim.y, ...: the same for every thread of a block, so the barriers
        # inside are reached by all. (A while loop: range's trip count would cost a 64-bit
        # division and registers, 66 instead of 58 on sm_90.)
        first = cuda.blockIdx.y * features_per_block
        while first < n_features:
            group = min(features_per_block, n_features - first)
            n_entries = n_slots * group * n_bins * n_channels
            for k in range(cuda.threadIdx.x, n_entries, cuda.blockDim.x):
                shared[k] = 0
            cuda.syncthreads()
            for t in range(
                cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x, n_rows, row_stride
            ):
                i = row_list[t]
                slot = slot_of_node[node_of_row[i]]
                if slot < 0:
                    continue
                for g in range(group):
                    index = ((slot * group + g) * n_bins + X_binned[first + g, i]) * n_channels
                    add_row(
                        shared,
                        index,
                        i,
                        is_classification,
                        y_class,
                        weight,
                        unit_weight,
                        count_channel,
                        row_stats,
                    )
            cuda.syncthreads()
            for k in range(cuda.threadIdx.x, n_entries, cuda.blockDim.x):
                value = shared[k]
                if value != 0:
                    c = k % n_channels
                    rest = k // n_channels
                    b = rest % n_bins
                    rest //= n_bins
                    g = rest % group
                    slot = rest // group
                    cuda.atomic.add(
                        hist_flat,
                        ((slot * n_features + first + g) * n_bins + b) * n_channels + c,
                        value,
                    )
            cuda.syncthreads()  # the merge has read shared before the next group clears it
            first += cuda.gridDim.y * features_per_block

    return histograms_shared


# int64 entries: weighted classification and regression; int32 entries: int32 counts.
histograms_shared = _compile_histograms_shared(np.int64)
histograms_shared_int32 = _compile_histograms_shared(np.int32)


def shared_histogram_kernel(dtype):
    """The shared-memory histogram kernel for a global histogram of ``dtype``."""
    return histograms_shared_int32 if np.dtype(dtype) == np.int32 else histograms_shared


def shared_features_per_block(
    n_slots: int, n_bins: int, n_channels: int, n_features: int, dtype
) -> int:
    """Features one block's shared histogram holds for every slot, for a global histogram
    of ``dtype`` (:func:`shared_histogram_entries`); 0: use global memory."""
    per_feature = n_slots * n_bins * n_channels
    entries = shared_histogram_entries(dtype)
    return min(n_features, entries // per_feature) if per_feature else 0


def shared_launch_config(
    n_samples: int, n_groups: int, rows_per_thread: int = 16, simulator: bool | None = None
):
    """(grid, threads) for :func:`histograms_shared`: enough row blocks to fill the GPU,
    each thread summing about ``rows_per_thread`` rows before its block merges, and one
    block per feature group along y up to :data:`.launch.MAX_GRID_Y` (the kernel strides over
    the groups beyond).

    ``simulator``: the simulator's small grid (default: when the simulator is on).
    """
    y_blocks = max(1, min(n_groups, launch.MAX_GRID_Y))
    if launch.simulating(simulator):
        blocks, threads = launch.SIMULATOR_GRID
        return (blocks, y_blocks), threads
    row_blocks = max(1, min(1024, -(-n_samples // (launch.THREADS_PER_BLOCK * rows_per_thread))))
    return (row_blocks, y_blocks), launch.THREADS_PER_BLOCK


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())
