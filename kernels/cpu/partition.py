"""Partitions on the CPU: a level's split nodes' rows moved, stably, to their children
(binary splits by a threshold or a category set; multiway splits by each code's branch)."""

import numpy as np
from numba import njit, prange

from .. import _tree_walk as _walk
from .. import compilation
from .._prefetch import ROWS_AHEAD, prefetch_item
from .launch import SerialWhenSmall, rows_of_nodes

# The tree walk's category-set test (kernels/_tree_walk.py): a row goes where prediction
# will send it.
_in_category_set = njit(cache=True, inline="always")(_walk.in_category_set)


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
        # copied back in order: stable on both sides. Each row is written to both sides'
        # next places and only its own side's advances (the other write is overwritten
        # later, or is the same place): no branch on a side that is as likely either way.
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
            scratch[left] = i
            scratch[right - 1] = i
            step = np.int64(goes_left)
            left += step
            right -= 1 - step
        for j in range(start, left):
            sample_indices[j] = scratch[j]
        n_right = end - left
        for k in range(n_right):
            sample_indices[left + k] = scratch[end - 1 - k]
        n_left[node] = left - start
    return n_left


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


def _node_rows(args):
    """Rows moved by a partition (arguments 2 and 3: the nodes' first and end)."""
    return rows_of_nodes(args, 2)


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())
partition_rows = SerialWhenSmall(partition_rows, _node_rows)
partition_rows_multiway = SerialWhenSmall(partition_rows_multiway, _node_rows)
compilation.watch(
    {
        kernel.__name__: kernel.serial
        for kernel in (
            partition_rows,
            partition_rows_multiway,
        )
    }
)
