"""CPU hot loops, compiled with numba (cached on disk after the first call).

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

import hashlib
import inspect
import os
import threading
import types
from pathlib import Path

import numpy as np
from numba import config as numba_config
from numba import get_num_threads as numba_get_num_threads
from numba import njit, prange
from numba import types as numba_types
from numba.extending import overload

from . import _binning_search as _search
from . import _random_keys as _keys
from . import _random_split, compilation, python_mode
from . import _split_scan as _scan
from . import _squared_deviations as _deviations
from . import _tree_walk as _walk
from ._prefetch import ROWS_AHEAD, prefetch_item, prefetch_item_2d

# Before the first kernel is decorated: where numba caches them (see .compilation).
compilation.choose_cache_folder(Path(__file__).parent)


# nonfinite_columns' flags: a column holds a NaN (a missing value), an infinity.
HOLDS_NAN, HOLDS_INFINITY = 1, 2


@njit(parallel=True, cache=True)
def nonfinite_columns(X):
    """Each column of the 2-D array X's :data:`HOLDS_NAN` and :data:`HOLDS_INFINITY`
    flags (uint8): one parallel pass over blocks of rows (each thread reads its rows
    contiguously), no temporary array of X's size. One kernel for both questions: binning
    asks for the NaNs and input checks for infinities, and each kernel costs a first run
    its compile."""
    n_samples, n_features = X.shape
    n_blocks = min(64, max(1, n_samples // 4096))
    found = np.zeros((n_blocks, n_features), dtype=np.uint8)
    for block in prange(n_blocks):
        for i in range(block * n_samples // n_blocks, (block + 1) * n_samples // n_blocks):
            for f in range(n_features):
                value = X[i, f]
                if value != value:
                    found[block, f] |= HOLDS_NAN
                elif abs(value) == np.inf:
                    found[block, f] |= HOLDS_INFINITY
    out = np.zeros(n_features, dtype=np.uint8)
    for block in range(n_blocks):
        for f in range(n_features):
            out[f] |= found[block, f]
    return out


def borrowing_njit(**options):
    """``numba.njit`` without reference counting (numba's ``_nrt=False``), for helpers that
    only read and write the arrays they are given. With it, every array a helper takes
    costs an atomic increment and decrement per call, inlined or not: a split candidate
    cost 140 ns with it and 39 ns without (gini, two classes, the scan inlined; bench in
    bench/RESULTS.md). numba refuses to compile an allocation without reference
    counting, so a helper that allocates fails to compile instead of leaking."""
    return njit(_nrt=False, **options)


# The bin search is shared with the CUDA kernels (one source, the same codes).
LOOKUP_CELLS_PER_EDGE = _search.LOOKUP_CELLS_PER_EDGE
_lookup_cell = njit(cache=True, inline="always")(_search.lookup_cell)
_grid_scale = njit(cache=True, inline="always")(_search.grid_scale)
bin_code = njit(inline="always")(_search.make_bin_code(_lookup_cell))
# The tree walk is shared with the CUDA prediction kernel (one source, the same leaves).
_in_category_set = njit(cache=True, inline="always")(_walk.in_category_set)
_dense_value = njit(cache=True, inline="always")(_walk.dense_value)
stored_position = njit(cache=True, inline="always")(_walk.stored_position)
_sparse_value = njit(inline="always")(_walk.make_sparse_value(stored_position))


def _value_of(X, i, f):
    """X[i, f] for the walk: a dense array, or a CSR matrix as (indptr, indices, data)."""
    raise NotImplementedError("compiled only: see the overload below")


@overload(_value_of, inline="always")
def _value_of_by_kind(X, i, f):
    # Chosen at compile time by X's type: the prediction kernels take either kind of X,
    # each compiled once for it, with one walk.
    if isinstance(X, numba_types.BaseTuple):
        return lambda X, i, f: _sparse_value(X, i, f)
    return lambda X, i, f: _dense_value(X, i, f)


def _value_of_in_python(X, i, f):
    """:func:`_value_of` run as Python (kernels/python_mode.py): X's kind at run time."""
    if isinstance(X, tuple):
        return _sparse_value(X, i, f)
    return _dense_value(X, i, f)


python_mode.python_equivalent(_value_of, _value_of_in_python)
_leaf_of_row = njit(inline="always")(_walk.make_leaf_of_row(_in_category_set, _value_of))
_add_tree_values = njit(inline="always")(_walk.make_add_tree_values(_leaf_of_row))


@njit(parallel=True, cache=True)
def build_bin_lookup(edges, edge_offsets, n_cells, lookup, cells_per_unit):
    """lookup[f, c] = number of edges of feature f whose cell is < c (c = 0..n_cells)."""
    n_features = edge_offsets.shape[0] - 1
    for f in prange(n_features):
        offset = edge_offsets[f]
        n_edges = edge_offsets[f + 1] - offset
        for c in range(n_cells + 1):
            lookup[f, c] = 0
        cells_per_unit[f] = 0.0
        if n_edges < 2:
            continue
        first = edges[offset]
        cells_per_unit[f] = _grid_scale(first, edges[offset + n_edges - 1], n_cells)
        # Edge 0 sits at the grid's origin; count each later edge into every cell past its own.
        for k in range(1, n_edges):
            cell = _lookup_cell(edges[offset + k], first, cells_per_unit[f], n_cells)
            lookup[f, cell + 1] += 1
        lookup[f, 0] = 0
        lookup[f, 1] += 1  # edge 0 is in cell 0
        for c in range(1, n_cells + 1):
            lookup[f, c] += lookup[f, c - 1]


@njit(parallel=True, cache=True)
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
    """Map raw values to bins; record each bin's smallest and largest value.

    A value goes to bin b when edges[b-1] < x <= edges[b] (b = number of edges below x).
    ``lookup``/``cells_per_unit`` come from :func:`build_bin_lookup`: the binary search
    runs only over the edges sharing x's grid cell. ``bin_lower``/``bin_upper``
    (n_features, n_bins) must come in filled with +inf/-inf; they are updated only for
    features with ``track_bounds`` set (two compares per value saved on the others).
    NaN goes to ``missing_bin`` (the last bin; the caller passes -1 when X has no NaN).

    Parallel over blocks of rows, so each thread reads rows of the row-major X
    contiguously; each block keeps private min/max tables, merged at the end.
    """
    n_samples, n_features = X.shape
    n_bins = bin_lower.shape[1]
    n_blocks = min(64, max(1, n_samples // 4096))
    block_lower = np.full((n_blocks, n_features, n_bins), np.inf)
    block_upper = np.full((n_blocks, n_features, n_bins), -np.inf)
    for block in prange(n_blocks):
        first_row = block * n_samples // n_blocks
        last_row = (block + 1) * n_samples // n_blocks
        lower = block_lower[block]
        upper = block_upper[block]
        for i in range(first_row, last_row):
            for f in range(n_features):
                x = X[i, f]
                b = bin_code(x, f, edges, edge_offsets, lookup, cells_per_unit, missing_bin)
                X_binned[f, i] = b
                if b == missing_bin:
                    continue
                if track_bounds[f]:
                    widen_bounds(lower, upper, f, b, x)
    merge_block_bounds(block_lower, block_upper, bin_lower, bin_upper)


@njit(cache=True, inline="always")
def widen_bounds(lower, upper, f, b, x):
    """Feature f's bin b: its smallest and largest value so far, widened to hold x."""
    if x < lower[f, b]:
        lower[f, b] = x
    if x > upper[f, b]:
        upper[f, b] = x


@njit(cache=True)
def merge_block_bounds(block_lower, block_upper, bin_lower, bin_upper):
    """The bounds each block of rows kept privately, merged into ``bin_lower`` /
    ``bin_upper`` (n_features, n_bins)."""
    n_blocks, n_features, n_bins = block_lower.shape
    for block in range(n_blocks):
        for f in range(n_features):
            for b in range(n_bins):
                bin_lower[f, b] = min(bin_lower[f, b], block_lower[block, f, b])
                bin_upper[f, b] = max(bin_upper[f, b], block_upper[block, f, b])


@njit(cache=True)
def feature_group_size(n_nodes, n_features, n_threads):
    """Features handled by one task: as many as keeps every thread busy (4 tasks each).

    A task reads each row's index, class and weight once for its whole group, so larger
    groups mean fewer redundant reads; too few tasks would leave threads idle.
    """
    tasks_wanted = 4 * n_threads
    groups_needed = max(1, -(-tasks_wanted // n_nodes))
    return max(1, min(n_features, -(-n_features // groups_needed)))


# The draws' generator (_random_keys.py), compiled; the grower's numpy code takes arrays.
_, root_key, child_key, draw_score = _keys.make_random_keys(njit(inline="always"))
# The streams of the per-node draws (which features, extra trees' thresholds).
FEATURE_SALT, THRESHOLD_SALT = _keys.FEATURE_SALT, _keys.THRESHOLD_SALT
# A draw as a uniform float in [0, 1) (numpy arrays here; the finisher compiles it).
unit_interval = _keys.unit_interval


@njit(parallel=True, cache=True)
def one_hot_stats(y_class, weight, count_channel, out):
    """``out[i]``: row i's classification statistics: its weight in its class's channel,
    1 in ``count_channel`` (< 0: none), 0 in the others (zeroed here, in parallel: the
    rows of a forest's batch are millions)."""
    for i in prange(y_class.shape[0]):
        for c in range(out.shape[1]):
            out[i, c] = 0
        out[i, y_class[i]] = weight[i]
        if count_channel >= 0:
            out[i, count_channel] = 1


@njit(cache=True)
def root_keys(seed, trees, out):
    """``out[k]``: the root key of tree ``trees[k]``."""
    for k in range(trees.shape[0]):
        out[k] = root_key(seed, trees[k])


@njit(cache=True)
def child_keys(parent_keys, branches, out):
    """``out[k]``: the key of child ``branches[k]`` of the node keyed ``parent_keys[k]``."""
    for k in range(parent_keys.shape[0]):
        out[k] = child_key(parent_keys[k], branches[k])


@njit(cache=True)
def draw_scores(keys, n_features, salt, out):
    """``out[k, f]``: node ``keys[k]``'s draw for feature f in the stream ``salt``."""
    for k in range(keys.shape[0]):
        for f in range(n_features):
            out[k, f] = draw_score(keys[k], f, salt)


@njit(cache=True, inline="always")
def _holds_rows(hist, slot, f, b):
    """Whether bin b of feature f of histogram slot ``slot`` holds rows (any channel)."""
    for c in range(hist.shape[3]):
        if hist[slot, f, b, c] != 0:
            return True
    return False


@njit(parallel=True, cache=True)
def filled_bins(hist, slots, features, missing, use_missing, filled):
    """``filled[k, j]``: the bins of feature ``features[k, j]`` (``features`` (len(slots),
    m), or (1, m) for every slot) holding rows in histogram slot ``slots[k]`` (any
    channel non-zero; plus 1, where ``use_missing``, if ``missing`` (n_slots,
    n_features, n_channels; a stand-in otherwise) holds rows). The grower draws features
    among those filling more than one: the ones not constant in the node."""
    n_bins, n_channels = hist.shape[2], hist.shape[3]
    per_slot = features.shape[0] > 1
    for k in prange(slots.shape[0]):
        slot = slots[k]
        listed = features[np.int64(k) if per_slot else np.int64(0)]
        for j in range(listed.shape[0]):
            f = listed[j]
            count = 0
            for b in range(n_bins):
                if _holds_rows(hist, slot, f, b):
                    count += 1
            if use_missing:
                for c in range(n_channels):
                    if missing[slot, f, c] != 0:
                        count += 1
                        break
            filled[k, j] = count


@njit(cache=True, inline="always")
def group_task(task, n_features, group):
    """(node, first feature, end feature) of histogram task number ``task``."""
    n_groups = -(-n_features // group)
    first = (task % n_groups) * group
    return task // n_groups, first, min(n_features, first + group)


@njit(parallel=True, cache=True)
def histograms_classification(
    X_binned,
    sample_indices,
    node_start,
    node_end,
    node_features,
    y_class,
    weight,
    unit_weight,
    count_channel,
    n_threads,
    hist,
):
    """Class-weight histograms for a batch of nodes; ``count_channel`` < 0 means none.

    ``node_features`` (n_nodes, k), or (1, k) for every node: the features whose
    histograms are built, ``hist[node, j]`` feature ``node_features[node, j]``'s (every
    feature, in order: ``hist[node, f]`` is feature f's; or a forest node's drawn
    features, the only ones it searches). One task per (node, group of its features):
    each task owns its histogram blocks, so no two threads write the same memory; it
    zeroes them first (``hist`` may hold anything: zeroed by the threads that fill it,
    the memory is touched once, in parallel). ``unit_weight``: every weight is 1 (not
    read).
    """
    n_nodes = node_start.shape[0]
    n_listed = node_features.shape[1]
    per_node = node_features.shape[0] > 1
    group = feature_group_size(n_nodes, n_listed, n_threads)
    n_groups = -(-n_listed // group)
    for task in prange(n_nodes * n_groups):
        node, first, last = group_task(task, n_listed, group)
        features = node_features[node if per_node else 0]
        node_hist = hist[node]
        node_hist[first:last] = 0
        end = node_end[node]
        for j in range(node_start[node], end):
            if j + ROWS_AHEAD < end:  # a later row's codes, class and weight
                ahead = sample_indices[j + ROWS_AHEAD]
                for k in range(first, last):
                    prefetch_item_2d(X_binned, features[k], ahead)
                prefetch_item(y_class, ahead)
                if not unit_weight:
                    prefetch_item(weight, ahead)
            i = sample_indices[j]
            c = y_class[i]
            w = 1 if unit_weight else weight[i]
            for k in range(first, last):
                b = X_binned[features[k], i]
                node_hist[k, b, c] += w
                if count_channel >= 0:
                    node_hist[k, b, count_channel] += 1


@njit(parallel=True, cache=True)
def histograms_dense(
    X_binned, sample_indices, node_start, node_end, node_features, row_stats, n_threads, hist
):
    """Histograms of dense per-row statistics (regression: w, w*(y - centre)[, 1]);
    ``node_features``, tasks and zeroing as :func:`histograms_classification`'s."""
    n_nodes = node_start.shape[0]
    n_listed = node_features.shape[1]
    per_node = node_features.shape[0] > 1
    n_channels = row_stats.shape[1]
    group = feature_group_size(n_nodes, n_listed, n_threads)
    n_groups = -(-n_listed // group)
    for task in prange(n_nodes * n_groups):
        node, first, last = group_task(task, n_listed, group)
        features = node_features[node if per_node else 0]
        node_hist = hist[node]
        node_hist[first:last] = 0
        end = node_end[node]
        for j in range(node_start[node], end):
            if j + ROWS_AHEAD < end:  # a later row's codes and statistics
                ahead = sample_indices[j + ROWS_AHEAD]
                for k in range(first, last):
                    prefetch_item_2d(X_binned, features[k], ahead)
                prefetch_item_2d(row_stats, ahead, 0)
            i = sample_indices[j]
            for k in range(first, last):
                b = X_binned[features[k], i]
                for c in range(n_channels):
                    node_hist[k, b, c] += row_stats[i, c]


# Extremely randomised trees' split of a feature (kernels/_random_split.py), inlined here
# and in the subtree finisher; its source hash is in the kernels' cache keys.
_random_split_of_feature = borrowing_njit(forceinline=True)(_random_split.random_split_of_feature)
RANDOM_SPLIT_SOURCE_HASH = hashlib.sha256(Path(_random_split.__file__).read_bytes()).hexdigest()


def _compile_random_split_histograms(source_hash):
    @njit(parallel=True, cache=True)
    def random_split_histograms(
        hist,
        slots,
        missing_bin,
        codes,
        lower,
        upper,
        uniform,
        out_hist,
        out_code,
        out_lower,
        out_upper,
    ):
        """Extremely randomised trees' candidates (``kernels/_random_split.py``): per node
        slot ``slots[k]`` and feature f, one threshold drawn uniformly between the node's
        lowest and highest value (``uniform[k, f]`` in [0, 1)), written as a compact
        histogram of two bins: ``out_hist[k, f, 0]`` the present bins up to the split,
        ``[1]`` the rest; ``out_code``, ``out_lower`` and ``out_upper`` their bounds: each
        collapsed bin's highest code, lowest and highest value (a split after a collapsed
        bin sends its codes and those below left). The outputs come zeroed: a side with no
        bin keeps its zeros.

        ``hist`` (slots, features, bins, channels): dense (bin b has code b;
        ``missing_bin`` its missing values' bin, skipped, -1: none) or compact (``codes``
        per slot). ``codes``, ``lower`` and ``upper``: (slots or 1, features, bins), each
        first axis broadcast where 1."""
        source_hash  # noqa: B018 - in the cache key only
        n_features, n_bins = hist.shape[1], hist.shape[2]
        for k in prange(slots.shape[0]):
            slot = slots[k]
            at = slot if lower.shape[0] > 1 else 0
            code_at = slot if codes.shape[0] > 1 else 0  # broadcast apart: exact mode's one row
            split_codes = np.empty(3, dtype=np.int64)
            bounds = np.empty(4)
            for f in range(n_features):
                present = _random_split_of_feature(
                    hist,
                    slot,
                    f,
                    n_bins,
                    missing_bin,
                    codes[code_at, f],
                    lower[at, f],
                    upper[at, f],
                    uniform[k, f],
                    out_hist[k, f],
                    split_codes,
                    bounds,
                )
                if not present:
                    continue
                out_code[k, f, 0] = split_codes[0]
                out_lower[k, f, 0] = bounds[0]
                out_upper[k, f, 0] = bounds[1]
                if split_codes[2] >= 0:
                    # A split at bin 1 sends every present value left: its code is the last.
                    out_code[k, f, 1] = split_codes[1]
                    out_lower[k, f, 1] = bounds[2]
                    out_upper[k, f, 1] = bounds[3]

    return random_split_histograms


random_split_histograms = _compile_random_split_histograms(RANDOM_SPLIT_SOURCE_HASH)


@njit(parallel=True, cache=True)
def subtract_histograms(hist, parent_slots, child_hist, out):
    """``out[k] = hist[parent_slots[k]] - child_hist[k]``: the larger siblings' histograms
    from their parents' and the smaller siblings' (the subtraction trick), in one
    parallel pass (a copy then a subtraction read the memory twice, the copy serially)."""
    for k in prange(parent_slots.shape[0]):
        parent = hist[parent_slots[k]]
        child = child_hist[k]
        target = out[k]
        for f in range(parent.shape[0]):
            for b in range(parent.shape[1]):
                for c in range(parent.shape[2]):
                    target[f, b, c] = parent[f, b, c] - child[f, b, c]


@njit(parallel=True, cache=True)
def partition_rows(
    columns,
    sample_indices,
    node_start,
    node_end,
    feature,
    threshold,
    missing_left,
    missing_code,
    category_offset,
    category_words,
    scratch,
):
    """Stable in-place partition of each node's rows: ``columns[f, i] <= threshold`` goes left.

    ``columns`` is either ``X_binned`` with bin thresholds (histogram mode) or the raw
    feature-major values with real thresholds (exact mode). A missing value (NaN, or the
    code ``missing_code``: the missing bin, or NaN for raw values) goes left where
    ``missing_left[node]``. Categorical subset nodes (``category_offset[node]`` >= 0)
    send the category codes in their bitset, in ``category_words`` from that offset,
    left. Returns rows sent left, per node.
    """
    n_nodes = node_start.shape[0]
    n_left = np.zeros(n_nodes, dtype=np.int64)
    for node in prange(n_nodes):
        column = columns[feature[node]]
        limit = threshold[node]
        start = node_start[node]
        end = node_end[node]
        left = start
        right = end
        # Lefts fill scratch from the start, rights from the end (reversed), then are
        # copied back in order: stable on both sides.
        to_left = missing_left[node] != 0
        offset = category_offset[node]
        for j in range(start, end):
            if j + ROWS_AHEAD < end:
                prefetch_item(column, sample_indices[j + ROWS_AHEAD])
            i = sample_indices[j]
            value = column[i]
            if value != value or value == missing_code:
                goes_left = to_left
            elif offset >= 0:
                goes_left = _in_category_set(category_words, offset, int(value))
            else:
                goes_left = value <= limit
            if goes_left:
                scratch[left] = i
                left += 1
            else:
                right -= 1
                scratch[right] = i
        for j in range(start, left):
            sample_indices[j] = scratch[j]
        n_right = end - left
        for k in range(n_right):
            sample_indices[left + k] = scratch[end - 1 - k]
        n_left[node] = left - start
    return n_left


# Below this many rows a node's values are ordered by insertion sort (no allocation).
_INSERTION_SORT_ROWS = 32


@njit(parallel=True, cache=True)
def compact_histograms(
    columns, sample_indices, node_start, node_end, row_stats, missing_code, hist, values, missing
):
    """Per node and feature, one compact bin per distinct value among the node's rows, in
    increasing order, holding the summed row statistics.

    Exact mode runs it on raw values (every midpoint is a candidate, as in Zaki and
    Meira's Algorithm 19.2);
    histogram mode runs it on bin codes for nodes with fewer rows than bins, where a
    dense histogram would mostly hold empty bins. Cost follows the node's rows, not
    the number of bins.

    ``hist`` (n_nodes, n_features, width, n_channels) comes in zeroed and ``values``
    (n_nodes, n_features, width) filled with +inf; width >= the largest node's rows.
    Missing values (NaN, or ``missing_code``) are summed apart, into ``missing``
    (n_nodes, n_features, n_channels), zeroed on entry.
    """
    n_nodes = node_start.shape[0]
    n_features = columns.shape[0]
    n_channels = row_stats.shape[1]
    for node in prange(n_nodes):
        start = node_start[node]
        n_rows = node_end[node] - start
        keys = np.empty(n_rows, dtype=np.float64)
        order = np.empty(n_rows, dtype=np.int64)
        rows = np.empty(n_rows, dtype=np.int64)
        for f in range(n_features):
            column = columns[f]
            n_present = 0
            for j in range(n_rows):
                i = sample_indices[start + j]
                x = column[i]
                if x != x or x == missing_code:
                    for c in range(n_channels):
                        missing[node, f, c] += row_stats[i, c]
                else:
                    keys[n_present] = x
                    rows[n_present] = i
                    n_present += 1
            if n_present <= _INSERTION_SORT_ROWS:
                for j in range(n_present):
                    order[j] = j
                for j in range(1, n_present):
                    k = order[j]
                    t = j - 1
                    while t >= 0 and keys[order[t]] > keys[k]:
                        order[t + 1] = order[t]
                        t -= 1
                    order[t + 1] = k
            else:
                order[:n_present] = np.argsort(keys[:n_present], kind="mergesort")
            compact_bin = -1
            previous = 0.0
            for j in range(n_present):
                k = order[j]
                x = keys[k]
                if compact_bin < 0 or x != previous:
                    compact_bin += 1
                    values[node, f, compact_bin] = x
                    previous = x
                i = rows[k]
                for c in range(n_channels):
                    hist[node, f, compact_bin, c] += row_stats[i, c]


@njit(nogil=True, cache=True)
def compact_rows(hist, slots, nonempty, compact, bin_index):
    """Copy each (node, feature) row of the histograms ``hist[slots]`` (histogram slots)
    with its non-empty bins first, in bin order; ``bin_index`` gets the bin at each
    position of the compacted row (-1 past them).

    ``compact`` (len(slots), n_features, width, n_channels) comes in zeroed. One pass,
    where the array-namespace version needs index arrays and gathers. Serial and without
    the GIL: split selection already runs its chunks on parallel threads.
    """
    n_features = hist.shape[1]
    n_bins = hist.shape[2]
    n_channels = hist.shape[3]
    width = compact.shape[2]
    for task in range(slots.shape[0] * n_features):
        k = task // n_features
        f = task % n_features
        slot = slots[k]
        position = 0
        for b in range(n_bins):
            if nonempty[slot, f, b]:
                for c in range(n_channels):
                    compact[k, f, position, c] = hist[slot, f, b, c]
                bin_index[k, f, position] = b
                position += 1
        for rest in range(position, width):
            bin_index[k, f, rest] = -1


@njit(parallel=True, cache=True)
def compact_code_histograms(
    X_binned,
    sample_indices,
    node_start,
    node_end,
    row_stats,
    missing_bin,
    bin_lower,
    bin_upper,
    hist,
    code,
    lower,
    upper,
    missing,
):
    """:func:`compact_histograms` for bin codes: compact bins in code order without
    sorting.

    Codes are small integers: the codes present are collected with a presence table, then
    put in order by insertion sort when few, or by scanning the table when many, so a
    node costs about its rows, not its sort. Writes, per compact bin, the summed
    row statistics (``hist``, zeroed on entry), the bin ``code`` (-1 past the codes present)
    and that bin's value bounds (``lower``/``upper``, +inf past them); rows in
    ``missing_bin`` are summed into ``missing`` (zeroed on entry).
    """
    n_nodes = node_start.shape[0]
    n_features = X_binned.shape[0]
    n_bins = bin_lower.shape[1]
    n_channels = row_stats.shape[1]
    width = hist.shape[2]
    for node in prange(n_nodes):
        start = node_start[node]
        end = node_end[node]
        compact_bin_of_code = np.full(n_bins, -1, dtype=np.int64)
        distinct = np.empty(n_bins, dtype=np.int64)
        for f in range(n_features):
            n_present = 0
            for j in range(start, end):
                b = X_binned[f, sample_indices[j]]
                if b != missing_bin and compact_bin_of_code[b] < 0:
                    compact_bin_of_code[b] = 0
                    distinct[n_present] = b
                    n_present += 1
            if n_present * n_present <= n_bins:
                # Few codes: insertion sort them (cheaper than scanning every bin).
                for k in range(1, n_present):
                    b = distinct[k]
                    t = k - 1
                    while t >= 0 and distinct[t] > b:
                        distinct[t + 1] = distinct[t]
                        t -= 1
                    distinct[t + 1] = b
            else:
                # Many codes: the presence table, scanned in code order.
                k = 0
                for b in range(n_bins):
                    if compact_bin_of_code[b] >= 0:
                        distinct[k] = b
                        k += 1
            for k in range(n_present):
                b = distinct[k]
                compact_bin_of_code[b] = k
                code[node, f, k] = b
                lower[node, f, k] = bin_lower[f, b]
                upper[node, f, k] = bin_upper[f, b]
            for k in range(n_present, width):
                code[node, f, k] = -1
                lower[node, f, k] = np.inf
                upper[node, f, k] = np.inf
            for j in range(start, end):
                i = sample_indices[j]
                b = X_binned[f, i]
                if b == missing_bin:
                    for c in range(n_channels):
                        missing[node, f, c] += row_stats[i, c]
                else:
                    compact_bin = compact_bin_of_code[b]
                    for c in range(n_channels):
                        hist[node, f, compact_bin, c] += row_stats[i, c]
            for j in range(start, end):  # reset only what was set
                b = X_binned[f, sample_indices[j]]
                if b != missing_bin:
                    compact_bin_of_code[b] = -1


@njit(parallel=True, cache=True)
def partition_rows_multiway(
    columns,
    sample_indices,
    node_start,
    node_end,
    feature,
    branch_of_code,
    default_branch,
    missing_code,
    scratch,
    branch_rows,
):
    """Stable in-place partition of each node's rows into its multiway branches.

    Row i of node k goes to branch ``branch_of_code[k, code]`` (code: the row's category
    code, a bin code or a raw code value), or ``default_branch[k]`` when missing or
    outside the table. Branch b's rows end up b-th in the node's slice, in their old
    order; ``branch_rows`` (n_nodes, n_branches) gets the rows of each branch.
    """
    n_nodes = node_start.shape[0]
    n_codes = branch_of_code.shape[1]
    for node in prange(n_nodes):
        column = columns[feature[node]]
        start = node_start[node]
        end = node_end[node]
        for j in range(start, end):
            branch = _branch_of(
                column[sample_indices[j]],
                branch_of_code,
                default_branch,
                node,
                n_codes,
                missing_code,
            )
            branch_rows[node, branch] += 1
        position = start
        for b in range(branch_rows.shape[1]):  # each branch's first position in scratch
            count = branch_rows[node, b]
            branch_rows[node, b] = position
            position += count
        for j in range(start, end):
            i = sample_indices[j]
            branch = _branch_of(
                column[i], branch_of_code, default_branch, node, n_codes, missing_code
            )
            scratch[branch_rows[node, branch]] = i
            branch_rows[node, branch] += 1
        previous = start
        for b in range(branch_rows.shape[1]):  # back from each branch's end to its count
            end_of_branch = branch_rows[node, b]
            branch_rows[node, b] = end_of_branch - previous
            previous = end_of_branch
        for j in range(start, end):
            sample_indices[j] = scratch[j]


@njit(cache=True, inline="always")
def _branch_of(value, branch_of_code, default_branch, node, n_codes, missing_code):
    if value != value or value == missing_code or value < 0 or value >= n_codes:
        return default_branch[node]
    return branch_of_code[node, int(value)]


# The host step after the two passes (numpy; the CUDA backend uses it too).
combine_squared_deviation_parts = _deviations.combine
_squared_deviation = njit(inline="always")(_deviations.squared_deviation)
_fixed_point_term = njit(inline="always")(_deviations.fixed_point_term)
_term_exponent = njit(inline="always")(_deviations.term_exponent)
DEVIATIONS_SOURCE_HASH = hashlib.sha256(Path(_deviations.__file__).read_bytes()).hexdigest()


def _compile_squared_deviation_kernels(source_hash):
    # The helpers' source hash is in the cache key, as for predict_leaves below.
    @njit(parallel=True, cache=True)
    def largest_squared_deviations(
        sample_indices,
        node_start,
        node_end,
        centred,
        weight,
        unit_weight,
        means,
        largest,
        lowest,
        highest,
    ):
        """Pass 1 of :mod:`_squared_deviations`: each node's largest term, lowest and
        highest centred target."""
        source_hash  # noqa: B018 - in the cache key only
        for k in prange(node_start.shape[0]):
            most = 0.0
            low = np.inf
            high = -np.inf
            for j in range(node_start[k], node_end[k]):
                i = sample_indices[j]
                most = max(most, _squared_deviation(centred, weight, unit_weight, i, means[k]))
                low = min(low, centred[i])
                high = max(high, centred[i])
            largest[k] = most
            lowest[k] = low
            highest[k] = high

    @njit(parallel=True, cache=True)
    def squared_deviation_sums(
        sample_indices,
        node_start,
        node_end,
        centred,
        weight,
        unit_weight,
        means,
        largest,
        exponent,
        high,
        low,
    ):
        """Pass 2 of :mod:`_squared_deviations`: each node's exponent (from its largest
        term), and its fixed-point terms summed as their high and low parts."""
        source_hash  # noqa: B018 - in the cache key only
        for k in prange(node_start.shape[0]):
            high_sum = 0
            low_sum = 0
            exponent[k] = _term_exponent(largest[k])
            for j in range(node_start[k], node_end[k]):
                term = _squared_deviation(centred, weight, unit_weight, sample_indices[j], means[k])
                q = _fixed_point_term(term, exponent[k])
                high_sum += q >> _deviations.LOW_BITS
                low_sum += q & _deviations.LOW_MASK
            high[k] = high_sum
            low[k] = low_sum

    return largest_squared_deviations, squared_deviation_sums


largest_squared_deviations, squared_deviation_sums = _compile_squared_deviation_kernels(
    DEVIATIONS_SOURCE_HASH
)


# numba's on-disk cache is keyed on the file a kernel is defined in (its time stamp and
# size), not on the files it inlines code from: an edit to _tree_walk.py alone (its node
# columns, say) would leave a stale predict_leaves in the cache. The walk's source, hashed,
# is a closure variable of the kernel, and numba puts closure variables in the cache key.
WALK_SOURCE_HASH = hashlib.sha256(Path(_walk.__file__).read_bytes()).hexdigest()
# The columns of the node table the walk reads (Tree.walk_arrays builds it).
WALK_NODE_COLUMNS = _walk.NODE_COLUMNS


# Rows a forest's prediction takes through each tree in turn (kernels' predict_forest).
FOREST_ROWS = 256


def _compile_predict_leaves(walk_source_hash):
    @njit(parallel=True, cache=True)
    def predict_leaves(
        X, nodes, threshold, category_bitsets, n_category_words, branch_children, out
    ):
        """Leaf index reached by each row: ``Tree.walk_arrays()`` are the arguments between
        ``X`` and ``out`` (the node rules and the layout: :mod:`_tree_walk`)."""
        walk_source_hash  # noqa: B018 - in the cache key only (see WALK_SOURCE_HASH)
        for i in prange(out.shape[0]):  # X: dense, or CSR as (indptr, indices, data)
            out[i] = _leaf_of_row(
                X, i, nodes, threshold, category_bitsets, n_category_words, branch_children, 0
            )

    @njit(cache=True)
    def predict_leaves_serial(
        X, nodes, threshold, category_bitsets, n_category_words, branch_children, out
    ):
        """:func:`predict_leaves` in the calling thread: for small batches, where waking
        the thread pool costs more than the walk (the same walk, so the same leaves)."""
        walk_source_hash  # noqa: B018 - in the cache key only (see WALK_SOURCE_HASH)
        for i in range(out.shape[0]):
            out[i] = _leaf_of_row(
                X, i, nodes, threshold, category_bitsets, n_category_words, branch_children, 0
            )

    @njit(parallel=True, cache=True)
    def predict_forest(
        X, nodes, threshold, category_bitsets, n_category_words, branch_children, roots, values, out
    ):
        """The trees' leaf values averaged, per row: the trees packed in one node table
        (``model.tree.forest_walk_arrays``), tree t walked from ``roots[t]``, ``values``
        (n_nodes, n_outputs) the leaves' values. Per row the trees are added in order,
        then divided by their number (as summing the trees' predictions would). A task
        takes FOREST_ROWS rows through one tree after another: a tree's nodes stay in
        cache for its rows (one row through every tree would evict them)."""
        walk_source_hash  # noqa: B018 - in the cache key only (see WALK_SOURCE_HASH)
        n_rows, n_outputs = out.shape[0], values.shape[1]  # X dense or CSR, as above
        for block in prange((n_rows + FOREST_ROWS - 1) // FOREST_ROWS):
            first = block * FOREST_ROWS
            end = min(n_rows, first + FOREST_ROWS)
            for i in range(first, end):
                for c in range(n_outputs):
                    out[i, c] = 0.0
            for t in range(roots.shape[0]):
                for i in range(first, end):
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
            for i in range(first, end):
                for c in range(n_outputs):
                    out[i, c] /= roots.shape[0]

    return predict_leaves, predict_leaves_serial, predict_forest


predict_leaves, predict_leaves_serial, predict_forest = _compile_predict_leaves(WALK_SOURCE_HASH)


# The lock-step walk's node table (Tree.lockstep_arrays): one row per node, these columns.
# A leaf's row leads back to itself (both children the leaf, feature 0), so a row that
# has reached its leaf keeps stepping in place instead of leaving the loop.
STEP_LEFT, STEP_RIGHT, STEP_FEATURE, STEP_MISSING_LEFT = range(4)
STEP_COLUMNS = 4
# Rows walked together: their steps are independent, so the core overlaps their loads and
# comparisons instead of waiting on one row's chain of dependent loads and mispredicted
# branches (a 10,000-row batch on a 25,000-node tree: about 20 % less time).
LOCKSTEP_ROWS = 16


@borrowing_njit(forceinline=True)
def _walk_lockstep_group(X, start, root, steps, threshold, current):
    """Rows ``start`` to ``start + LOCKSTEP_ROWS`` (or X's end) walked from node ``root``,
    stepping together until none moves; leaves their leaves in ``current``
    (LOCKSTEP_ROWS, scratch) and returns how many rows it walked."""
    m = min(LOCKSTEP_ROWS, X.shape[0] - start)
    for g in range(m):
        current[g] = root
    moving = True
    while moving:
        moving = False
        for g in range(m):
            node = current[g]
            x = X[start + g, steps[node, STEP_FEATURE]]
            # Bitwise, not short-circuit: a select, not a branch the core mispredicts.
            go_left = (x <= threshold[node]) | ((x != x) & (steps[node, STEP_MISSING_LEFT] != 0))
            following = steps[node, STEP_LEFT] if go_left else steps[node, STEP_RIGHT]
            moving |= following != node
            current[g] = following
    return m


@borrowing_njit(forceinline=True)
def _lockstep_leaves(X, start, steps, threshold, current, out):
    """``out``: the leaves of :func:`_walk_lockstep_group`'s rows from the root."""
    m = _walk_lockstep_group(X, start, 0, steps, threshold, current)
    for g in range(m):
        out[start + g] = current[g]


@njit(cache=True)
def predict_leaves_lockstep(X, steps, threshold, out):
    """The leaf each row of ``X`` reaches in a tree of numeric splits only (``steps``:
    ``Tree.lockstep_arrays``; ``threshold``: the tree's live thresholds), in the
    calling thread: :data:`LOCKSTEP_ROWS` rows step together until none moves. The rule is
    :mod:`_tree_walk`'s: x <= threshold goes left, NaN follows the node's missing rule."""
    current = np.empty(LOCKSTEP_ROWS, dtype=np.int64)
    for start in range(0, X.shape[0], LOCKSTEP_ROWS):
        _lockstep_leaves(X, start, steps, threshold, current, out)


@njit(parallel=True, cache=True)
def predict_leaves_lockstep_parallel(X, steps, threshold, out):
    """:func:`predict_leaves_lockstep` with its groups of rows on numba's threads."""
    for group in prange((X.shape[0] + LOCKSTEP_ROWS - 1) // LOCKSTEP_ROWS):
        current = np.empty(LOCKSTEP_ROWS, dtype=np.int64)
        _lockstep_leaves(X, group * LOCKSTEP_ROWS, steps, threshold, current, out)


@njit(parallel=True, cache=True)
def predict_forest_lockstep(X, steps, threshold, roots, values, out):
    """:func:`predict_forest` for forests of numeric splits only, through the lock-step
    walk: the trees' ``Tree.lockstep_arrays`` packed in one table
    (``model.tree.forest_lockstep_arrays``), tree t walked from ``roots[t]``. Each task
    takes FOREST_ROWS rows through one tree after another, LOCKSTEP_ROWS of them stepping
    together; per row the trees are added in order, then divided by their number, as
    :func:`predict_forest` does: the same leaves, so the same bits, about twice as fast
    (250,000 rows through 30 trees of depth 10: 0.21 s against 0.44 s)."""
    n_rows, n_outputs = X.shape[0], values.shape[1]
    for block in prange((n_rows + FOREST_ROWS - 1) // FOREST_ROWS):
        first = block * FOREST_ROWS
        end = min(n_rows, first + FOREST_ROWS)
        current = np.empty(LOCKSTEP_ROWS, dtype=np.int64)
        for i in range(first, end):
            for c in range(n_outputs):
                out[i, c] = 0.0
        for t in range(roots.shape[0]):
            for start in range(first, end, LOCKSTEP_ROWS):
                # A view ending at the block's end, so a group stops there.
                m = _walk_lockstep_group(X[:end], start, roots[t], steps, threshold, current)
                for g in range(m):
                    for c in range(n_outputs):
                        out[start + g, c] += values[current[g], c]
        for i in range(first, end):
            for c in range(n_outputs):
                out[i, c] /= roots.shape[0]


# The compiled split search (kernels/_split_scan.py), the CPU twin of the CUDA kernel.
SPLIT_CRITERION_CODES = _scan.CRITERION_CODES
WINNER_FIXED_COLUMNS = _scan.WINNER_FIXED_COLUMNS
WINNER_FEATURE, WINNER_BIN = _scan.WINNER_FEATURE, _scan.WINNER_BIN
WINNER_NEXT_BIN, WINNER_MISSING_LEFT = _scan.WINNER_NEXT_BIN, _scan.WINNER_MISSING_LEFT
WINNER_SCORE, WINNER_NODE_WEIGHT = _scan.WINNER_SCORE, _scan.WINNER_NODE_WEIGHT
# Inlined (LLVM's alwaysinline) and without reference counting: called, each candidate
# paid a dozen calls with arrays passed by value, 15 times the inlined cost (2.6 us
# against 0.17 us a candidate, measured on a loaded 2-core machine); reference counting
# made it 3.6 times slower again. One set of helpers for every CPU search (this level-wise
# one, the subtree finisher's, the categorical one): numba compiles a helper once per
# signature and dispatcher, so searches that pass the same types share its compile.
SPLIT_SCAN_HELPERS = {}
_node_totals, _score_feature, _choose_winner = _scan.make_split_scan(
    borrowing_njit(forceinline=True),
    borrowing_njit(forceinline=True)(_scan.plain_product),
    SPLIT_SCAN_HELPERS,
    save_scores=True,
)
SPLIT_SCAN_HELPERS.update(
    node_totals=_node_totals, score_feature=_score_feature, choose_winner=_choose_winner
)
SPLIT_SCAN_SOURCE_HASH = hashlib.sha256(Path(_scan.__file__).read_bytes()).hexdigest()


def _compile_score_splits(source_hash):
    @njit(cache=True, nogil=True)
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
        winners,
    ):
        """Each node's best split (``kernels/_split_scan.py``), one node per task:
        ``winners`` (n_nodes, WINNER_FIXED_COLUMNS + 2 * n_channels) int64 gets the
        winner rows. ``hist`` (n_slots, n_features, >= n_bins, n_channels): bins
        ``< n_bins`` hold present values; ``missing`` (n_slots, n_features, n_channels)
        the missing rows (a 1-slot stand-in unless ``use_missing``); ``feature_mask``
        (n_nodes, n_features) (a stand-in unless ``use_mask``): where it is used, a
        feature outside it is never read but for its totals, which nothing uses (a
        search of drawn features, where only theirs were built); ``monotonic_cst``
        (n_features,) each feature's monotonicity constraint (0: none) and ``lower``,
        ``upper`` (n_nodes,) each node's bounds on its children's values."""
        source_hash  # noqa: B018 - in the cache key only
        n_features = hist.shape[1]
        n_channels = hist.shape[3]
        winner_values = winners.view(np.float64)
        for i in range(slots.shape[0]):
            slot = slots[i]
            missing_slot = slot if use_missing else 0
            node = np.empty(2)
            parent = np.empty(2)
            scored = np.empty(3 * (n_bins + 1))  # pass 1's results, for pass 2
            prefix = np.empty(n_channels, dtype=np.int64)
            totals = np.empty((n_features, n_channels), dtype=np.int64)
            results = np.empty((n_features, 4))
            # The node's totals from a feature it may use: where only the drawn features'
            # histograms were built, the others hold anything (none usable: all built).
            summed = 0
            if use_mask:
                for f in range(n_features):
                    if feature_mask[i, f]:
                        summed = f
                        break
            _node_totals(
                hist, slot, summed, missing, use_missing, n_bins, scale, n_classes, outputs, node
            )
            for f in range(n_features):
                _score_feature(
                    hist,
                    slot,
                    f,
                    n_bins,
                    missing[missing_slot, f],
                    use_missing,
                    (not use_mask) or feature_mask[i, f],
                    prefix,
                    totals[f],
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
                    node,
                    parent,
                    scored,
                    results[f],
                )
            _choose_winner(
                hist,
                slot,
                n_bins,
                missing[missing_slot],
                use_missing,
                results,
                totals,
                criterion,
                n_classes,
                count_channel,
                rtol,
                node,
                winners[i],
                winner_values[i],
            )

    return score_splits


score_splits = _compile_score_splits(SPLIT_SCAN_SOURCE_HASH)


# -- categorical columns of numbers to their codes ---------------------------------------------
# A categorical feature's categories are its distinct values, sorted; a value's code is its
# position among them, and a value that is not one of them (or is missing) becomes NaN.
# numpy did this with np.unique and a searchsorted per row and column: 0.6 s of a 1.4 s
# fit on 1M rows with 8 such columns, and 85 % of predicting 250k rows.


@njit(cache=True, nogil=True)
def number_spans(matrix, columns, n_present, lowest, highest, whole, infinite):
    """Over the present (non-NaN) values of each of ``matrix``'s ``columns[k]``, into the
    k-th entry of the outputs: how many, the smallest, the largest, whether all are whole
    numbers, whether any is infinite (one pass along the rows). Whole numbers of a short
    span find their categories by :func:`mark_whole_numbers`, with no sort."""
    n_present[:] = 0
    lowest[:] = np.inf
    highest[:] = -np.inf
    whole[:] = True
    infinite[:] = False
    for i in range(matrix.shape[0]):
        for k in range(columns.shape[0]):
            v = matrix[i, columns[k]]
            if v != v:
                continue
            n_present[k] += 1
            if abs(v) == np.inf:
                infinite[k] = True
                whole[k] = False
                continue
            lowest[k] = min(lowest[k], v)
            highest[k] = max(highest[k], v)
            if v != np.floor(v):
                whole[k] = False


@njit(cache=True, nogil=True)
def mark_whole_numbers(matrix, columns, lowest, seen, seen_start):
    """``seen[seen_start[k] + v - lowest[k]] = True`` for each present value v of column
    ``columns[k]``: whole numbers from ``lowest[k]`` that span less than
    ``seen_start[k + 1] - seen_start[k]`` (:func:`number_spans` said so)."""
    for i in range(matrix.shape[0]):
        for k in range(columns.shape[0]):
            v = matrix[i, columns[k]]
            if v == v:
                seen[seen_start[k] + int(v - lowest[k])] = True


@njit(parallel=True, cache=True)
def encode_number_categories(
    matrix, features, categories, category_start, tables, table_start, lowest
):
    """In place: each value of ``matrix``'s columns ``features[k]`` becomes its code, its
    position among the sorted ``categories[category_start[k]:category_start[k + 1]]``,
    or NaN where it is not one of them (missing values included).

    Whole-number categories spanning few values (``table_start[k + 1] > table_start[k]``)
    look a value up in their table, ``tables[table_start[k] + v - lowest[k]]`` (-1 for the
    whole numbers in the span that are not categories); others search their categories.
    Either way the code found is confirmed against the category itself."""
    for i in prange(matrix.shape[0]):
        for k in range(features.shape[0]):
            j = features[k]
            v = matrix[i, j]
            first, end = category_start[k], category_start[k + 1]
            code = -1
            if v == v and end > first:
                table_first, table_end = table_start[k], table_start[k + 1]
                if table_end > table_first:
                    offset = v - lowest[k]
                    if offset >= 0.0 and offset < table_end - table_first:
                        code = tables[table_first + int(offset)]
                else:
                    low, high = first, end  # the first category not below v
                    while low < high:
                        middle = (low + high) // 2
                        if categories[middle] < v:
                            low = middle + 1
                        else:
                            high = middle
                    code = low - first
                if code >= 0 and (code >= end - first or categories[first + code] != v):
                    code = -1
            matrix[i, j] = code if code >= 0 else np.nan


# -- small data on serial twins ---------------------------------------------------------------
# Compiling a parallel=True kernel takes numba about 2 s (its parfor passes and the
# gufunc it builds), a plain one about 0.4 s: on a first run, a 14-row `gputree train`
# spent 14 of its 18 s compiling five parallel kernels. On small data those
# kernels run on threads for microseconds anyway. Each parallel kernel below therefore
# has a serial twin, the same source compiled without parallel=True (prange runs as
# range; every kernel gives the same results in any order of its tasks), and a call
# whose work is at most SERIAL_MAX_ELEMENTS values (the rows times features of the nodes
# it builds, the rows it moves, the bins it scores, or its first argument's size) runs on
# the twin. Each compiles on its first call only, so a small fit compiles no parallel
# kernel (a large one both: its deep levels are small). Warm runs gain too: a small fit
# no longer starts numba's thread pool.
SERIAL_MAX_ELEMENTS = 1 << 17


def _serial_twin(kernel):
    """``kernel``'s Python function compiled without ``parallel``, under its own name
    (``<name>_serial``), so that numba caches it apart: its cache index is named after
    the function, and the compile options are not part of the cache key."""
    func = kernel.py_func
    twin = types.FunctionType(
        func.__code__, func.__globals__, func.__name__, func.__defaults__, func.__closure__
    )
    twin.__qualname__ = f"{func.__qualname__}_serial"
    twin.__doc__ = func.__doc__
    options = {k: v for k, v in kernel.targetoptions.items() if k not in ("parallel", "nopython")}
    return njit(cache=True, **options)(twin)


@njit(cache=True)
def breadth_first_order(children_left, children_right, multiway, opened, root):
    """The ids of a tree's nodes reached from ``root`` through ``opened`` nodes, breadth
    first, each node's children consecutively (a multiway node's children are
    ``children_left..children_right``, a binary node's those two): model.Tree.pruned's
    numbering, in one pass instead of numpy calls per level. ``root`` is 0 but in a
    forest grown together, whose trees are the subtrees of several roots."""
    order = np.empty(children_left.shape[0], dtype=np.int64)
    order[0] = root
    head = 0
    tail = 1
    while head < tail:
        node = order[head]
        head += 1
        if not opened[node]:
            continue
        if multiway[node]:
            for child in range(children_left[node], children_right[node] + 1):
                order[tail] = child
                tail += 1
        else:
            order[tail] = children_left[node]
            order[tail + 1] = children_right[node]
            tail += 2
    return order[:tail]


def _first_argument_size(args):
    return args[0].size


def _rows_of_nodes(args, start_at):
    """The rows of the nodes a kernel works on: its arguments ``start_at`` and the next
    are the nodes' first and end positions in the row partition."""
    return int((args[start_at + 1] - args[start_at]).sum())


def node_values(args):
    """Values read by a kernel over (features, rows) codes or values and the rows of its
    nodes (arguments 0, 2 and 3): rows times features (a :class:`SerialWhenSmall` work)."""
    return _rows_of_nodes(args, 2) * args[0].shape[0]


def _listed_values(args):
    """Codes read by a histogram kernel: the rows of its nodes (arguments 2 and 3) times
    the features listed per node (argument 4)."""
    return _rows_of_nodes(args, 2) * args[4].shape[1]


def _node_rows(args):
    """Rows moved by a partition (arguments 2 and 3: the nodes' first and end)."""
    return _rows_of_nodes(args, 2)


def _deviation_rows(args):
    """Rows read by the squared-deviation passes (arguments 1 and 2)."""
    return _rows_of_nodes(args, 1)


def _candidates(args):
    """Bins scored by the split search: its nodes (``slots``) times features times bins."""
    hist, slots = args[0], args[1]
    return slots.size * hist.shape[1] * hist.shape[2]


def _histogram_cells(args):
    """Cells written by the subtraction: its slots (argument 1) times a histogram's."""
    return args[1].size * args[0][0].size


def _forest_steps(args):
    """Rows times trees of a forest's walk (the rows of ``out``, the last argument: X
    may be a CSR tuple; the trees' roots, argument 6)."""
    return args[-1].shape[0] * args[6].size


def _forest_lockstep_steps(args):
    """Rows times trees of a forest's lock-step walk (arguments 0 and 3)."""
    return args[0].shape[0] * args[3].size


class SerialWhenSmall:
    """Calls ``parallel`` (the kernel as defined above) or its serial twin, by the work of
    the call (``work(args)``, by default the first argument's size) against
    :data:`SERIAL_MAX_ELEMENTS`, read at each call. The work is the call's, not the fit's:
    a fully grown tree's deep levels read a few rows each, where waking the thread pool
    costs more than the work (and much more on a busy machine, where a thread that is
    not scheduled holds up the others: 10,000 rows' partitions took 6 ms, serial 0.1)."""

    def __init__(self, parallel, work=_first_argument_size):
        self.parallel = parallel
        self.serial = _serial_twin(parallel)
        self.work = work
        self.py_func = parallel.py_func
        self.__name__ = parallel.__name__
        self.__doc__ = parallel.__doc__

    def __call__(self, *args):
        if self.work(args) <= SERIAL_MAX_ELEMENTS:
            return self.serial(*args)
        return self.parallel(*args)

    def __repr__(self):
        return f"<{self.__name__}: parallel kernel, serial on small data>"


class ThreadedWhenLarge:
    """Calls ``kernel``, compiled serial and without the GIL, on the whole call where its
    work is at most :data:`SERIAL_MAX_ELEMENTS` (``work(args)``, as
    :class:`SerialWhenSmall`), else on slices of its items, several at once on Python
    threads (numba's thread count for this thread: ``n_jobs``).

    For the largest kernels, whose items are independent (a node's search, a subtree's
    growth): numba's ``parallel=True`` made a second compile of the same code, with
    parfor passes over a function that inlines the whole split search, 21 and 24 CPU
    seconds of a first ``gputree bench`` (bench/RESULTS.md); one serial compile
    serves both now. ``item_args`` name the arguments with a row per item, sliced per
    task (one that has not, a stand-in, is passed whole), ``offset_args`` those with the
    items' bounds (n_items + 1 entries); ``weights(args)`` each item's share of the work,
    by which the items are split into about four tasks per thread."""

    TASKS_PER_THREAD = 4

    def __init__(self, kernel, work, item_args, offset_args=(), weights=None):
        names = list(inspect.signature(kernel.py_func).parameters)
        self.serial = kernel
        self.work = work
        self.item_positions = [names.index(name) for name in item_args]
        self.offset_positions = [names.index(name) for name in offset_args]
        self.weights = weights
        self.py_func = kernel.py_func
        self.__name__ = kernel.__name__
        self.__doc__ = kernel.__doc__

    def __call__(self, *args):
        n_items = args[self.item_positions[0]].shape[0]
        threads = numba_get_num_threads()
        # A small call, or kernels run as Python (whose mode is this thread's alone).
        if (
            threads < 2
            or n_items < 2
            or self.work(args) <= SERIAL_MAX_ELEMENTS
            or python_mode.active()
        ):
            return self.serial(*args)
        bounds = self._task_bounds(args, n_items, threads)
        tasks = [
            _thread_pool().submit(self.serial, *self._slice(args, n_items, a, b))
            for a, b in zip(bounds[:-1], bounds[1:], strict=True)
            if b > a
        ]
        for task in tasks:
            task.result()  # waits for all: one failing task's error is raised

    def _task_bounds(self, args, n_items, threads):
        n_tasks = min(n_items, threads * self.TASKS_PER_THREAD)
        if self.weights is None:
            return np.linspace(0, n_items, n_tasks + 1).astype(np.int64)
        cumulative = np.cumsum(self.weights(args), dtype=np.float64)
        targets = cumulative[-1] * np.arange(1, n_tasks) / n_tasks
        inner = np.searchsorted(cumulative, targets, side="right")
        return np.concatenate([[0], inner, [n_items]])

    def _slice(self, args, n_items, a, b):
        sliced = list(args)
        for position in self.item_positions:
            if args[position].shape[0] == n_items:
                sliced[position] = args[position][a:b]
        for position in self.offset_positions:
            sliced[position] = args[position][a : b + 1]
        return sliced

    def __repr__(self):
        return f"<{self.__name__}: serial kernel, on threads for large calls>"


_pool = {"executor": None}
_pool_lock = threading.Lock()


def _thread_pool():
    """The threads :class:`ThreadedWhenLarge` runs its tasks on, one per CPU numba may
    use (made on first use)."""
    with _pool_lock:
        if _pool["executor"] is None:
            from concurrent.futures import ThreadPoolExecutor

            _pool["executor"] = ThreadPoolExecutor(
                max_workers=numba_config.NUMBA_NUM_THREADS, thread_name_prefix="gpu_tree"
            )
        return _pool["executor"]


def _forget_the_pool_in_a_forked_child():
    # A forked child has the pool but none of its threads: its tasks would wait for ever
    # (a multiprocessing "fork" pool started after a large fit). It makes its own.
    global _pool_lock
    _pool_lock = threading.Lock()
    _pool["executor"] = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_the_pool_in_a_forked_child)


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())

# The tree walk is not among them: Tree.apply picks predict_leaves or its serial twin by
# the batch's rows (model.tree.PARALLEL_MIN_ROWS).
nonfinite_columns = SerialWhenSmall(nonfinite_columns)
filled_bins = SerialWhenSmall(filled_bins, _candidates)
one_hot_stats = SerialWhenSmall(one_hot_stats)
random_split_histograms = SerialWhenSmall(random_split_histograms, _candidates)
subtract_histograms = SerialWhenSmall(subtract_histograms, _histogram_cells)
predict_forest = SerialWhenSmall(predict_forest, _forest_steps)
predict_forest_lockstep = SerialWhenSmall(predict_forest_lockstep, _forest_lockstep_steps)
build_bin_lookup = SerialWhenSmall(build_bin_lookup)
bin_columns = SerialWhenSmall(bin_columns)
histograms_classification = SerialWhenSmall(histograms_classification, _listed_values)
histograms_dense = SerialWhenSmall(histograms_dense, _listed_values)
partition_rows = SerialWhenSmall(partition_rows, _node_rows)
compact_histograms = SerialWhenSmall(compact_histograms, node_values)
compact_code_histograms = SerialWhenSmall(compact_code_histograms, node_values)
encode_number_categories = SerialWhenSmall(encode_number_categories)
partition_rows_multiway = SerialWhenSmall(partition_rows_multiway, _node_rows)
largest_squared_deviations = SerialWhenSmall(largest_squared_deviations, _deviation_rows)
squared_deviation_sums = SerialWhenSmall(squared_deviation_sums, _deviation_rows)
score_splits = ThreadedWhenLarge(
    score_splits,
    _candidates,
    item_args=("slots", "feature_mask", "lower", "upper", "winners"),
)
SERIAL_WHEN_SMALL = (
    nonfinite_columns,
    filled_bins,
    one_hot_stats,
    random_split_histograms,
    subtract_histograms,
    predict_forest,
    predict_forest_lockstep,
    build_bin_lookup,
    bin_columns,
    histograms_classification,
    histograms_dense,
    partition_rows,
    compact_histograms,
    compact_code_histograms,
    encode_number_categories,
    partition_rows_multiway,
    largest_squared_deviations,
    squared_deviation_sums,
)
compilation.watch({kernel.__name__: kernel.serial for kernel in SERIAL_WHEN_SMALL})
