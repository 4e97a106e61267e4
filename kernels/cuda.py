"""CUDA kernels (numba.cuda), launched on CuPy arrays, or numpy arrays in the simulator.

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
code path, with one difference: launches use a small grid (``SIMULATOR_GRID``: three
blocks of 16 threads), which grid-stride over the same work a full grid would share. No
warp intrinsics are used (the simulator has none). Arrays from CuPy are passed through
``__cuda_array_interface__``; numba synchronises on them around each launch, which is
harmless here since every launch's result is needed by the next step.

The CUDA module is numba's (``numba.cuda``) or Numba-CUDA-MLIR's, chosen in
:mod:`.cuda_api`. Every kernel and device function is compiled with ``cache=True``: a
process loads the compiled kernels from numba's on-disk cache (``__pycache__`` beside
this file, or ``NUMBA_CACHE_DIR``; see ``kernels/__init__.py`` for read-only installs)
instead of paying the JIT again. The simulator accepts the flag and ignores it.

Launch grids stay within every CUDA GPU's limits (:data:`MAX_GRID_X`,
:data:`MAX_GRID_Y`) whatever the number of rows or features: the kernels grid-stride over
what a smaller grid does not cover, rows along x and feature groups along y.
"""

import hashlib
from pathlib import Path

import numpy as np
from numba import config

from . import _binning_search as _search
from . import _split_scan as _scan
from . import _squared_deviations as _deviations
from . import _tree_walk as _walk
from . import compilation
from .cuda_api import cuda, device_function

# Before the first kernel is decorated: where numba caches them (see .compilation).
compilation.choose_cache_folder(Path(__file__).parent)

# Where no folder can hold numba's cache, the kernels below compile uncached.
compilation.allow_uncached_cuda(cuda)

# numba's on-disk cache is keyed on the file a kernel is defined in (its time stamp and
# size), not on the files it inlines code from: an edit to _binning_search.py,
# _split_scan.py, _squared_deviations.py or _tree_walk.py alone would leave stale kernels in the cache.
# The kernels that inline them take this hash of their source as a closure variable,
# which numba puts in the cache key (as kernels/cpu.py does for its kernels).
HELPERS_SOURCE_KEY = int(
    hashlib.sha256(
        b"".join(Path(m.__file__).read_bytes() for m in (_search, _scan, _deviations, _walk))
    ).hexdigest()[:15],
    16,
)

# The bin search shared with the CPU kernels (one source, the same codes).
_lookup_cell = device_function(cache=True)(_search.lookup_cell)
_bin_code = device_function(cache=True)(_search.make_bin_code(_lookup_cell))
# The tree walk shared with the CPU prediction kernel (one source, the same leaves).
_in_category_set = device_function(cache=True)(_walk.in_category_set)
_dense_value = device_function(cache=True)(_walk.dense_value)
_leaf_of_row = device_function(cache=True)(_walk.make_leaf_of_row(_in_category_set, _dense_value))
_add_tree_values = device_function(cache=True)(_walk.make_add_tree_values(_leaf_of_row))
# Where a CSR row stores a column (a sparse X's split feature, at a partition).
_stored_position = device_function(cache=True)(_walk.stored_position)

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
def _add_row(
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
    >= 0); regression rows add their ``row_stats`` (see :func:`_add_row` for unit weights).
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
        _add_row(
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
                    _add_row(
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


_squared_deviation = device_function(cache=True)(_deviations.squared_deviation)
_fixed_point_term = device_function(cache=True)(_deviations.fixed_point_term)
_term_exponent = device_function(cache=True)(_deviations.term_exponent)


@device_function(inline=True, cache=True)
def _record_extremes(i, slot, centred, weight, unit_weight, mean, largest, lowest, highest):
    """Row i's part of pass 1 for its node's ``slot``: atomic max and min (any order)."""
    term = _squared_deviation(centred, weight, unit_weight, i, mean)
    cuda.atomic.max(largest, slot, term)
    cuda.atomic.min(lowest, slot, centred[i])
    cuda.atomic.max(highest, slot, centred[i])


def _compile_squared_deviation_kernels(helpers_key):
    @cuda.jit(cache=True)
    def largest_squared_deviations(
        node_of_row,
        slot_of_node,
        centred,
        weight,
        unit_weight,
        mean_of_node,
        largest,
        lowest,
        highest,
    ):
        """Pass 1 of :mod:`_squared_deviations` for the nodes with a slot: their largest
        term, lowest and highest centred target. ``mean_of_node`` is indexed by node id;
        ``weight`` is not read with ``unit_weight`` (a 1-element stand-in will do)."""
        helpers_key  # noqa: B018 - in the cache key only (see HELPERS_SOURCE_KEY)
        start = cuda.grid(1)
        for i in range(start, node_of_row.shape[0], cuda.gridsize(1)):
            node = node_of_row[i]
            slot = slot_of_node[node]
            if slot >= 0:
                _record_extremes(
                    i,
                    slot,
                    centred,
                    weight,
                    unit_weight,
                    mean_of_node[node],
                    largest,
                    lowest,
                    highest,
                )

    @cuda.jit(cache=True)
    def squared_deviation_sums(
        node_of_row,
        slot_of_node,
        centred,
        weight,
        unit_weight,
        mean_of_node,
        largest,
        exponent,
        high,
        low,
    ):
        """Pass 2 of :mod:`_squared_deviations`: each slot's exponent (thread k writes slot
        k's; the grid covers the slots even where they outnumber the rows, as a
        distributed fit's worker may hold no row of some nodes), and the fixed-point
        terms summed as their high and low parts (integer atomics: exact in any order)."""
        helpers_key  # noqa: B018 - in the cache key only (see HELPERS_SOURCE_KEY)
        n_rows = node_of_row.shape[0]
        start = cuda.grid(1)
        # Not max(): Numba-CUDA-MLIR 0.6 cannot compile max() of two array lengths.
        end = n_rows if n_rows > exponent.shape[0] else exponent.shape[0]
        for i in range(start, end, cuda.gridsize(1)):
            if i < exponent.shape[0]:
                exponent[i] = _term_exponent(largest[i])
            if i >= n_rows:
                continue
            node = node_of_row[i]
            slot = slot_of_node[node]
            if slot >= 0:
                term = _squared_deviation(centred, weight, unit_weight, i, mean_of_node[node])
                q = _fixed_point_term(term, _term_exponent(largest[slot]))
                cuda.atomic.add(high, slot, q >> _deviations.LOW_BITS)
                cuda.atomic.add(low, slot, q & _deviations.LOW_MASK)

    return largest_squared_deviations, squared_deviation_sums


largest_squared_deviations, squared_deviation_sums = _compile_squared_deviation_kernels(
    HELPERS_SOURCE_KEY
)


def _unfused_product(a, b):
    """``a * b`` as libdevice's ``dmul_rn``, which NVVM never fuses into an addition
    (kernels/_split_scan.py says why that matters)."""
    return cuda.libdevice.dmul_rn(a, b)


# The simulator runs plain Python arithmetic and has no libdevice.
_product = device_function(cache=True)(
    _scan.plain_product if config.ENABLE_CUDASIM else _unfused_product
)
# The split search shared with the CPU twin (kernels/_split_scan.py: the same winners).
_node_totals, _score_feature, _choose_winner = _scan.make_split_scan(
    device_function(cache=True), _product
)
# Threads of a split-scoring block: one per feature, striding; few, since a level's
# nodes give the blocks.
SCORING_THREADS = 64
WINNER_FIXED_COLUMNS = _scan.WINNER_FIXED_COLUMNS


def _compile_score_splits(helpers_key):
    @cuda.jit(cache=True)
    def score_splits(
        hist,
        slots,
        n_bins,
        missing,
        use_missing,
        feature_mask,
        use_mask,
        scale,
        criterion,
        n_classes,
        outputs,
        count_channel,
        min_samples_leaf,
        min_weight_leaf,
        rtol,
        monotonic_cst,
        lower,
        upper,
        prefix,
        totals,
        results,
        nodes,
        winners,
    ):
        """The fused split search: every candidate of every node scored and each node's
        winner chosen, on the device (``kernels/_split_scan.py``; the arguments up to
        ``upper`` are ``CompiledSearch``'s).

        A block per node (blocks stride over the nodes): thread 0 sums the node's
        statistics, the threads score a feature each (striding over the features), then
        thread 0 picks the node's winner. Scratch, in global memory since the number of
        channels is known only at run time: ``prefix`` and ``totals`` (n_nodes,
        n_features, n_channels) int64, ``results`` (n_nodes, n_features, 4) float64,
        ``nodes`` (n_nodes, 2) float64. ``winners`` (n_nodes, WINNER_FIXED_COLUMNS +
        2 n_channels) int64 gets the winner rows (their float64 columns by their bits).
        """
        helpers_key  # noqa: B018 - in the cache key only (see HELPERS_SOURCE_KEY)
        parent = cuda.local.array(2, np.float64)
        scored = cuda.local.array(3, np.float64)
        n_features = hist.shape[1]
        thread = cuda.threadIdx.x
        for i in range(cuda.blockIdx.x, slots.shape[0], cuda.gridDim.x):
            slot = slots[i]
            missing_slot = slot if use_missing else 0
            if thread == 0:
                _node_totals(
                    hist, slot, 0, missing, use_missing, n_bins, scale, n_classes, outputs, nodes[i]
                )
            cuda.syncthreads()
            for f in range(thread, n_features, cuda.blockDim.x):
                _score_feature(
                    hist,
                    slot,
                    f,
                    n_bins,
                    missing[missing_slot, f],
                    use_missing,
                    (not use_mask) or feature_mask[i, f] != 0,
                    prefix[i, f],
                    totals[i, f],
                    scale,
                    criterion,
                    n_classes,
                    outputs,
                    count_channel,
                    min_samples_leaf,
                    min_weight_leaf,
                    monotonic_cst[f],
                    lower[i],
                    upper[i],
                    rtol,
                    nodes[i],
                    parent,
                    scored,
                    results[i, f],
                )
            cuda.syncthreads()
            if thread == 0:
                _choose_winner(
                    hist,
                    slot,
                    n_bins,
                    missing[missing_slot],
                    use_missing,
                    results[i],
                    totals[i],
                    criterion,
                    n_classes,
                    count_channel,
                    rtol,
                    nodes[i],
                    winners[i],
                    winners[i].view(np.float64),
                )

    return score_splits


score_splits = _compile_score_splits(HELPERS_SOURCE_KEY)


def scoring_launch_config(n_nodes: int, simulator: bool | None = None):
    """(blocks, threads) for :func:`score_splits`: a block per node, up to
    :data:`MAX_GRID_X` (blocks stride over the rest)."""
    if _simulating(simulator):
        return SIMULATOR_GRID
    return max(1, min(n_nodes, MAX_GRID_X)), SCORING_THREADS


def _compile_partition_rows(helpers_key):
    @cuda.jit(cache=True)
    def partition_rows(
        X_binned,
        node_of_row,
        split_feature,
        split_bin,
        missing_left,
        missing_bin,
        category_offset,
        category_words,
        left_child,
        right_child,
        child_slot,
        child_mean,
        centred,
        weight,
        unit_weight,
        largest,
        lowest,
        highest,
    ):
        """Move every row of a split node to its child: bin <= split_bin goes left, and the
        missing bin goes where ``missing_left[node]`` says. Categorical subset nodes
        (``category_offset[node]`` >= 0) send the codes in their bitset left.

        ``split_feature[node]`` < 0 marks nodes not split at this level (rows stay).
        Regression (``child_slot`` of more than one entry): each row also does pass 1 of
        :mod:`_squared_deviations` for its child, whose slot and mean are
        ``child_slot[child]`` and ``child_mean[child]``; classification passes 1-element
        stand-ins for these and the arrays after them.
        """
        helpers_key  # noqa: B018 - in the cache key only (see HELPERS_SOURCE_KEY)
        n_samples = node_of_row.shape[0]
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        for i in range(start, n_samples, stride):
            node = node_of_row[i]
            f = split_feature[node]
            if f < 0:
                continue
            code = X_binned[f, i]
            offset = category_offset[node]
            if code == missing_bin:
                goes_left = missing_left[node] != 0
            elif offset >= 0:
                goes_left = _in_category_set(category_words, offset, int(code))
            else:
                goes_left = code <= split_bin[node]
            child = left_child[node] if goes_left else right_child[node]
            node_of_row[i] = child
            if child_slot.shape[0] > 1:
                _record_extremes(
                    i,
                    child_slot[child],
                    centred,
                    weight,
                    unit_weight,
                    child_mean[child],
                    largest,
                    lowest,
                    highest,
                )

    return partition_rows


partition_rows = _compile_partition_rows(HELPERS_SOURCE_KEY)


@cuda.jit(cache=True)
def partition_rows_multiway(X_binned, node_of_row, slot_of_node, split_feature, child_of_code):
    """Move every row of a multiway node (``slot_of_node[node]`` >= 0) to the child of its
    category code: ``child_of_code[slot, code]``, whose entry for the missing bin, like
    those of codes the node did not see, is the node's default child."""
    n_samples = node_of_row.shape[0]
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n_samples, stride):
        slot = slot_of_node[node_of_row[i]]
        if slot < 0:
            continue
        node_of_row[i] = child_of_code[slot, X_binned[split_feature[slot], i]]


def _compile_sparse_kernels(helpers_key):
    """The kernels of a sparse X's CSR bin codes (``data.binning.SparseCodes``): each row
    stores the codes of its non-zero values (``indices`` increasing), every other value of
    feature f falls in the bin ``zero_code[f]``."""

    @cuda.jit(cache=True)
    def sparse_histograms(
        indptr,
        indices,
        codes,
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
        totals_flat,
        n_features,
        n_bins,
        n_channels,
    ):
        """The histograms of a level's nodes from their rows' stored values only, one
        thread per listed row (grid-striding): each row adds its statistics to its node's
        totals (``totals_flat``, (n_slots, n_channels) flat) and to the bin of each of its
        stored values. The zero bins are filled afterwards from the totals, by
        subtraction (the backend's work), so a pass costs what the stored values cost."""
        helpers_key  # noqa: B018 - in the cache key only (see HELPERS_SOURCE_KEY)
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        for task in range(start, row_list.shape[0], stride):
            i = row_list[task]
            slot = slot_of_node[node_of_row[i]]
            if slot < 0:
                continue
            _add_row(
                totals_flat,
                slot * n_channels,
                i,
                is_classification,
                y_class,
                weight,
                unit_weight,
                count_channel,
                row_stats,
            )
            for k in range(indptr[i], indptr[i + 1]):
                index = ((slot * n_features + indices[k]) * n_bins + codes[k]) * n_channels
                _add_row(
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

    @cuda.jit(cache=True)
    def split_feature_codes(indptr, indices, codes, zero_code, node_of_row, split_feature, out):
        """``out[0, i]``: row i's bin code of its node's split feature (its stored value's,
        found by a binary search of its stored columns, else the zero bin), for the rows
        of split nodes (``split_feature[node]`` >= 0): the partition then routes them on
        ``out`` as on a one-feature code matrix."""
        helpers_key  # noqa: B018 - in the cache key only (see HELPERS_SOURCE_KEY)
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        for i in range(start, node_of_row.shape[0], stride):
            f = split_feature[node_of_row[i]]
            if f < 0:
                continue
            k = _stored_position(indptr, indices, i, f)
            out[0, i] = codes[k] if k >= 0 else zero_code[f]

    return sparse_histograms, split_feature_codes


sparse_histograms, split_feature_codes = _compile_sparse_kernels(HELPERS_SOURCE_KEY)


def _compile_predict_leaves(helpers_key):
    @cuda.jit(cache=True)
    def predict_leaves(
        X, nodes, threshold, category_bitsets, n_category_words, branch_children, out
    ):
        """Leaf reached by each row, one thread per row: ``Tree.walk_arrays()`` are the
        arguments between ``X`` and ``out`` (the node rules and the layout: :mod:`_tree_walk`)."""
        helpers_key  # noqa: B018 - in the cache key only (see HELPERS_SOURCE_KEY)
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        for i in range(start, X.shape[0], stride):
            out[i] = _leaf_of_row(
                X, i, nodes, threshold, category_bitsets, n_category_words, branch_children, 0
            )

    @cuda.jit(cache=True)
    def predict_forest(
        X, nodes, threshold, category_bitsets, n_category_words, branch_children, roots, values, out
    ):
        """The trees' leaf values averaged, one thread per row, every tree in one launch:
        the arguments of ``kernels.cpu.predict_forest`` (``model.tree.forest_walk_arrays``),
        whose order of additions it keeps, so both devices give the same bits."""
        helpers_key  # noqa: B018 - in the cache key only (see HELPERS_SOURCE_KEY)
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        n_outputs = values.shape[1]
        for i in range(start, X.shape[0], stride):
            for c in range(n_outputs):
                out[i, c] = 0.0
            for t in range(roots.shape[0]):
                _add_tree_values(
                    X,
                    i,
                    nodes,
                    threshold,
                    category_bitsets,
                    n_category_words,
                    branch_children,
                    roots[t],
                    values,
                    out,
                )
            for c in range(n_outputs):
                out[i, c] /= roots.shape[0]

    return predict_leaves, predict_forest


predict_leaves, predict_forest = _compile_predict_leaves(HELPERS_SOURCE_KEY)


def _simulating(simulator) -> bool:
    return bool(config.ENABLE_CUDASIM) if simulator is None else simulator


def shared_launch_config(
    n_samples: int, n_groups: int, rows_per_thread: int = 16, simulator: bool | None = None
):
    """(grid, threads) for :func:`histograms_shared`: enough row blocks to fill the GPU,
    each thread summing about ``rows_per_thread`` rows before its block merges, and one
    block per feature group along y up to :data:`MAX_GRID_Y` (the kernel strides over
    the groups beyond).

    ``simulator``: the simulator's small grid (default: when the simulator is on).
    """
    y_blocks = max(1, min(n_groups, MAX_GRID_Y))
    if _simulating(simulator):
        blocks, threads = SIMULATOR_GRID
        return (blocks, y_blocks), threads
    row_blocks = max(1, min(1024, -(-n_samples // (THREADS_PER_BLOCK * rows_per_thread))))
    return (row_blocks, y_blocks), THREADS_PER_BLOCK


def launch_config(n_tasks: int, max_blocks: int = 4096, simulator: bool | None = None):
    """(blocks, threads) for a grid-striding kernel over ``n_tasks`` items: at most
    ``max_blocks`` (and :data:`MAX_GRID_X`) blocks, which stride over the rest."""
    if _simulating(simulator):
        return SIMULATOR_GRID
    blocks = max(1, min(max_blocks, MAX_GRID_X, -(-n_tasks // THREADS_PER_BLOCK)))
    return blocks, THREADS_PER_BLOCK


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())
