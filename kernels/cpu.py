"""CPU hot loops, compiled with numba (cached on disk after the first call).

Layout conventions shared with the CUDA kernels:

- ``X_binned`` is feature-major, shape (n_features, n_samples), uint8 or uint16, so a
  histogram pass reads each feature column sequentially.
- Rows of a node are the slice ``sample_indices[start:end]``; a split partitions that
  slice in place, stably (left rows first), so row order inside every node stays
  ascending and reads stay cache friendly.
- Histograms have shape (n_nodes, n_features, n_bins, n_channels), float64. Class
  counts and integer weights are exact in float64 (below 2**53).
"""

import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True)
def bin_columns(X, edges, edge_offsets, X_binned, bin_lower, bin_upper):
    """Map raw values to bins; record each bin's smallest and largest value.

    A value goes to bin b when edges[b-1] < x <= edges[b]. ``bin_lower``/``bin_upper``
    (n_features, n_bins) must come in filled with +inf/-inf.

    Parallel over blocks of rows, so each thread reads rows of the row-major X
    contiguously; each block keeps private min/max tables, merged at the end.
    """
    n_samples, n_features = X.shape
    n_bins = bin_lower.shape[1]
    n_blocks = min(64, max(1, n_samples // 4096))
    block_lower = np.full((n_blocks, n_features, n_bins), np.inf)
    block_upper = np.full((n_blocks, n_features, n_bins), -np.inf)
    for block in prange(n_blocks):
        first = block * n_samples // n_blocks
        last = (block + 1) * n_samples // n_blocks
        lower = block_lower[block]
        upper = block_upper[block]
        for i in range(first, last):
            for f in range(n_features):
                x = X[i, f]
                offset = edge_offsets[f]
                lo = 0
                hi = edge_offsets[f + 1] - offset
                while lo < hi:  # first edge >= x
                    mid = (lo + hi) >> 1
                    if edges[offset + mid] < x:
                        lo = mid + 1
                    else:
                        hi = mid
                X_binned[f, i] = lo
                if x < lower[f, lo]:
                    lower[f, lo] = x
                if x > upper[f, lo]:
                    upper[f, lo] = x
    for block in range(n_blocks):
        for f in range(n_features):
            for b in range(n_bins):
                bin_lower[f, b] = min(bin_lower[f, b], block_lower[block, f, b])
                bin_upper[f, b] = max(bin_upper[f, b], block_upper[block, f, b])


@njit(parallel=True, cache=True)
def histograms_classification(
    X_binned, sample_indices, node_start, node_end, y_class, weight, count_channel, hist
):
    """Class-weight histograms for a batch of nodes; ``count_channel`` < 0 means none.

    One task per (node, feature): each task owns its histogram block, so no two threads
    write the same memory.
    """
    n_nodes = node_start.shape[0]
    n_features = X_binned.shape[0]
    for task in prange(n_nodes * n_features):
        node = task // n_features
        f = task % n_features
        column = X_binned[f]
        block = hist[node, f]
        for j in range(node_start[node], node_end[node]):
            i = sample_indices[j]
            b = column[i]
            block[b, y_class[i]] += weight[i]
            if count_channel >= 0:
                block[b, count_channel] += 1.0


@njit(parallel=True, cache=True)
def histograms_dense(X_binned, sample_indices, node_start, node_end, row_stats, hist):
    """Histograms of dense per-row statistics (regression: w, w*y, w*y^2[, 1])."""
    n_nodes = node_start.shape[0]
    n_features = X_binned.shape[0]
    n_channels = row_stats.shape[1]
    for task in prange(n_nodes * n_features):
        node = task // n_features
        f = task % n_features
        column = X_binned[f]
        block = hist[node, f]
        for j in range(node_start[node], node_end[node]):
            i = sample_indices[j]
            b = column[i]
            for c in range(n_channels):
                block[b, c] += row_stats[i, c]


@njit(parallel=True, cache=True)
def partition_rows(columns, sample_indices, node_start, node_end, feature, threshold, scratch):
    """Stable in-place partition of each node's rows: ``columns[f, i] <= threshold`` goes left.

    ``columns`` is either ``X_binned`` with bin thresholds (histogram mode) or the raw
    feature-major values with real thresholds (exact mode). Returns rows sent left, per node.
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
        for j in range(start, end):
            i = sample_indices[j]
            if column[i] <= limit:
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


@njit(parallel=True, cache=True)
def exact_node_histogram(X_columns, rows, row_stats, hist, values):
    """Exact mode: per feature, one 'bin' per distinct value of the node's rows.

    ``hist`` (n_features, max_distinct, n_channels) comes in zeroed and ``values``
    (n_features, max_distinct) filled with +inf; both are filled in sorted value order.
    Returns the number of distinct values per feature.
    """
    n_features = X_columns.shape[0]
    n_rows = rows.shape[0]
    n_channels = row_stats.shape[1]
    n_distinct = np.zeros(n_features, dtype=np.int64)
    for f in prange(n_features):
        column_values = np.empty(n_rows, dtype=np.float64)
        for j in range(n_rows):
            column_values[j] = X_columns[f, rows[j]]
        order = np.argsort(column_values, kind="mergesort")
        slot = -1
        previous = np.nan
        for j in range(n_rows):
            k = order[j]
            x = column_values[k]
            if slot < 0 or x != previous:
                slot += 1
                values[f, slot] = x
                previous = x
            i = rows[k]
            for c in range(n_channels):
                hist[f, slot, c] += row_stats[i, c]
        n_distinct[f] = slot + 1
    return n_distinct


@njit(parallel=True, cache=True)
def predict_leaves(X, children_left, children_right, feature, threshold, missing_go_to_left, out):
    """Leaf index reached by each row; x <= threshold goes left, NaN follows the node's rule."""
    n_samples = X.shape[0]
    for i in prange(n_samples):
        node = 0
        while children_left[node] >= 0:
            x = X[i, feature[node]]
            if x != x:
                go_left = missing_go_to_left[node] != 0
            else:
                go_left = x <= threshold[node]
            node = children_left[node] if go_left else children_right[node]
        out[i] = node
