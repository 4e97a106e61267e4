"""CPU hot loops of sparse input (CSR), compiled with numba.

A sparse feature matrix is binned into CSR bin codes: the stored values' codes, aligned
with the matrix's ``indptr`` and ``indices``, and ``zero_code[f]``, the bin of the value 0
of feature f (where every value not stored falls). A histogram pass then reads a node's
stored values only: a zero-valued row adds nothing to its feature's histogram, and each
feature's zero bin is filled afterwards from the node's totals, by subtraction (the node's
statistics less those of every other bin), as LightGBM and XGBoost do for sparse input.
A row's code for one feature (to route it at a split) is a binary search of its stored
columns.
"""

import numpy as np
from numba import njit, prange

from .. import compilation
from .binning import bin_code, merge_block_bounds, widen_bounds
from .histograms import feature_group_size, group_task
from .prediction import WALK_SOURCE_HASH, stored_position


@njit(parallel=True, cache=True)
def bin_sparse_values(
    indptr,
    indices,
    data,
    edges,
    edge_offsets,
    lookup,
    cells_per_unit,
    track_bounds,
    missing_bin,
    codes,
    bin_lower,
    bin_upper,
):
    """The bin code of each stored value of a CSR matrix (``codes``, aligned with
    ``data``), and the smallest and largest stored value of each bin (``bin_lower`` /
    ``bin_upper`` come in filled with +inf / -inf; updated where ``track_bounds``).

    The same search as the dense ``bin_columns``; values not stored (zeros) are the
    caller's: one code per feature. Parallel over blocks of rows, each with private
    min/max tables merged at the end."""
    n_samples = indptr.shape[0] - 1
    n_features, n_bins = bin_lower.shape
    n_blocks = min(64, max(1, n_samples // 4096))
    block_lower = np.full((n_blocks, n_features, n_bins), np.inf)
    block_upper = np.full((n_blocks, n_features, n_bins), -np.inf)
    for block in prange(n_blocks):
        lower = block_lower[block]
        upper = block_upper[block]
        first = indptr[block * n_samples // n_blocks]
        last = indptr[(block + 1) * n_samples // n_blocks]
        for k in range(first, last):
            f = indices[k]
            x = data[k]
            b = bin_code(x, f, edges, edge_offsets, lookup, cells_per_unit, missing_bin)
            codes[k] = b
            if b != missing_bin and track_bounds[f]:
                widen_bounds(lower, upper, f, b, x)
    merge_block_bounds(block_lower, block_upper, bin_lower, bin_upper)


@njit(parallel=True, cache=True)
def sparse_histograms(
    indptr,
    indices,
    codes,
    zero_code,
    sample_indices,
    node_start,
    node_end,
    node_features,
    row_stats,
    n_threads,
    hist,
):
    """Histograms of a batch of nodes from CSR bin codes: what a node's stored values
    cost, plus one subtraction per (node, feature) for its zero bin.

    ``node_features`` (n_nodes, k), or (1, k) for every node, ``hist[node, j]`` feature
    ``node_features[node, j]``'s, as the dense kernels take it; tasks are (node, group of
    its listed features), each owning and zeroing its blocks. A task reads the node's
    stored values and keeps those of its features; then each feature's zero bin receives
    the node's totals less the feature's other bins (so an explicitly stored 0 counts
    once, in the zero bin)."""
    n_nodes = node_start.shape[0]
    n_listed = node_features.shape[1]
    n_features = zero_code.shape[0]
    per_node = node_features.shape[0] > 1
    n_channels = row_stats.shape[1]
    n_bins = hist.shape[2]
    group = feature_group_size(n_nodes, n_listed, n_threads)
    n_groups = -(-n_listed // group)
    for task in prange(n_nodes * n_groups):
        node, first, last = group_task(task, n_listed, group)
        features = node_features[node if per_node else 0]
        node_hist = hist[node]
        node_hist[first:last] = 0
        # slot[f]: where feature f's histogram is in this task's block (-1: not in it).
        slot = np.full(n_features, -1, dtype=np.int64)
        for j in range(first, last):
            slot[features[j]] = j
        totals = np.zeros(n_channels, dtype=hist.dtype)
        for position in range(node_start[node], node_end[node]):
            i = sample_indices[position]
            for c in range(n_channels):
                totals[c] += row_stats[i, c]
            for k in range(indptr[i], indptr[i + 1]):
                j = slot[indices[k]]
                if j >= 0:
                    b = codes[k]
                    for c in range(n_channels):
                        node_hist[j, b, c] += row_stats[i, c]
        for j in range(first, last):
            zero = zero_code[features[j]]
            for c in range(n_channels):
                rest = 0
                for b in range(n_bins):
                    if b != zero:
                        rest += node_hist[j, b, c]
                node_hist[j, zero, c] = totals[c] - rest


def _compile_split_feature_codes(walk_source_hash):
    @njit(parallel=True, cache=True)
    def split_feature_codes(
        indptr, indices, codes, zero_code, sample_indices, node_start, node_end, feature, out
    ):
        """``out[i]``: the bin code of row i for the split feature of its node (its stored
        value's, else the zero bin), for every row of the nodes given (a row belongs to one
        node, so one array serves them all); the dense partition then routes the rows on
        ``out`` as on a one-feature matrix."""
        walk_source_hash  # noqa: B018 - in the cache key only (stored_position's source)
        for node in prange(node_start.shape[0]):
            f = feature[node]
            for position in range(node_start[node], node_end[node]):
                i = sample_indices[position]
                k = stored_position(indptr, indices, i, f)
                out[i] = codes[k] if k >= 0 else zero_code[f]

    return split_feature_codes


split_feature_codes = _compile_split_feature_codes(WALK_SOURCE_HASH)


@njit(parallel=True, cache=True)
def dense_codes(indptr, indices, codes, zero_code, out):
    """The CSR bin codes written out as a dense (n_features, n_samples) code matrix (the
    GPU backend's input)."""
    n_samples = indptr.shape[0] - 1
    for i in prange(n_samples):
        for f in range(zero_code.shape[0]):
            out[f, i] = zero_code[f]
        for k in range(indptr[i], indptr[i + 1]):
            out[indices[k], i] = codes[k]


@njit(parallel=True, cache=True)
def row_codes(indptr, indices, codes, zero_code, rows, features, out):
    """``out[j, i]``: the bin code of row ``rows[i]`` for feature ``features[j]`` (its
    stored value's, else the zero bin): a dense block of a few rows' codes, costing the
    block plus those rows' stored values (a search on a node's rows reads it)."""
    # position[f]: feature f's row of ``out`` (-1: not asked for).
    position = np.full(zero_code.shape[0], -1, dtype=np.int64)
    for j in range(features.shape[0]):
        position[features[j]] = j
    for i in prange(rows.shape[0]):
        row = rows[i]
        for j in range(features.shape[0]):
            out[j, i] = zero_code[features[j]]
        for k in range(indptr[row], indptr[row + 1]):
            j = position[indices[k]]
            if j >= 0:
                out[j, i] = codes[k]


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())
