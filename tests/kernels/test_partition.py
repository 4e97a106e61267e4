"""The CPU partition kernel (kernels/cpu/partition.py): each node's rows split stably, left
rows first, each side in its old order."""

import numpy as np
import pytest

from gpu_tree.kernels.cpu import partition as cpu_partition

MISSING_CODE = 255


def stable_partition(column, sample_indices, start, end, threshold, missing_left):
    """Each node's rows, lefts then rights, each side in its old order (numpy)."""
    expected = sample_indices.copy()
    n_left = np.zeros(start.size, dtype=np.int64)
    for node in range(start.size):
        rows = sample_indices[start[node] : end[node]]
        values = column[node][rows]
        missing = values == MISSING_CODE
        goes_left = np.where(missing, missing_left[node] != 0, values <= threshold[node])
        expected[start[node] : end[node]] = np.concatenate([rows[goes_left], rows[~goes_left]])
        n_left[node] = np.count_nonzero(goes_left)
    return expected, n_left


@pytest.mark.parametrize("kernel", ["parallel", "serial"])
@pytest.mark.parametrize(
    "sizes",
    [
        [20_000],
        [7_000, 3, 0, 4_000, 1, 2],  # empty and one-row nodes beside larger ones
        [5] * 50,
    ],
)
def test_each_node_is_split_stably(kernel, sizes):
    """The kernel writes each row to both sides' next places in scratch (no branch on
    the side): the lefts and the rights still come out in their old order."""
    rng = np.random.default_rng(len(sizes))
    n_rows, n_features = sum(sizes) + 7, 3
    codes = rng.integers(0, 256, size=(n_rows, n_features), dtype=np.uint8)  # 255: missing
    columns = codes.T  # the CPU's codes: row-major, indexed [feature, row]
    sample_indices = rng.permutation(n_rows).astype(np.int64)
    end = np.cumsum(sizes, dtype=np.int64)
    start = end - np.asarray(sizes, dtype=np.int64)
    n_nodes = len(sizes)
    feature = rng.integers(0, n_features, n_nodes).astype(np.int64)
    threshold = rng.integers(0, 255, n_nodes).astype(np.int64)
    missing_left = rng.integers(0, 2, n_nodes).astype(np.uint8)
    expected, expected_left = stable_partition(
        columns[feature], sample_indices, start, end, threshold, missing_left
    )

    scratch = np.empty(n_rows, dtype=np.int64)
    n_left = getattr(cpu_partition.partition_rows, kernel)(
        columns,
        sample_indices,
        start,
        end,
        feature,
        threshold,
        missing_left,
        MISSING_CODE,
        np.full(n_nodes, -1, dtype=np.int64),  # no category sets
        np.zeros(1, dtype=np.int64),
        scratch,
    )
    np.testing.assert_array_equal(n_left, expected_left)
    np.testing.assert_array_equal(sample_indices, expected)
