"""CUDA kernels (numba.cuda), launched on CuPy arrays, or numpy arrays in the simulator.

Layout conventions shared with :mod:`gpu_tree.kernels.cpu`:

- ``X_binned`` is indexed [feature, row], feature-major on the device so that the
  threads of a warp, which take consecutive rows, read consecutive bytes.
- ``node_of_row`` holds each row's current tree node; a level's histogram launch maps
  node ids to histogram slots with ``slot_of_node`` (-1: the node is not built).
- Histograms have shape (n_slots, n_features, n_bins, n_channels), float64. Every
  per-row statistic lies on an exact-sum grid (``gpu_tree._cpu_backend.
  round_to_exact_sum_grid``: class counts, weights, regression sums), so float64 atomic
  additions are exact and their order does not matter: trees are deterministic and
  equal to the CPU backend's.

Under ``NUMBA_ENABLE_CUDASIM=1`` the same source runs on the CPU, one Python thread per
CUDA thread: CI checks these kernels there on small data. The simulator path is the GPU
path: no warp intrinsics are used yet.
"""

from numba import config, cuda

THREADS_PER_BLOCK = 256
# The simulator runs each CUDA thread as a Python thread: one small grid-striding block
# does the same work as a full grid, thousands of times faster there.
SIMULATOR_GRID = (1, 32)


@cuda.jit
def histograms_classification(
    X_binned, node_of_row, slot_of_node, y_class, weight, unit_weight, count_channel, hist
):
    """Class-weight histograms of every node of a level in one launch.

    One thread per (row, feature) pair, grid-striding: thread t handles row
    t % n_samples of feature t // n_samples, so a warp reads consecutive rows of one
    feature. Rows whose node has no slot are skipped.
    """
    n_features, n_samples = X_binned.shape
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for task in range(start, n_samples * n_features, stride):
        f = task // n_samples
        i = task - f * n_samples
        slot = slot_of_node[node_of_row[i]]
        if slot < 0:
            continue
        b = X_binned[f, i]
        w = 1.0 if unit_weight else weight[i]
        cuda.atomic.add(hist, (slot, f, b, y_class[i]), w)
        if count_channel >= 0:
            cuda.atomic.add(hist, (slot, f, b, count_channel), 1.0)


@cuda.jit
def histograms_dense(X_binned, node_of_row, slot_of_node, row_stats, hist):
    """Histograms of dense per-row statistics (regression: w, w*y, w*y^2[, 1]) of every
    node of a level in one launch; thread layout as :func:`histograms_classification`."""
    n_features, n_samples = X_binned.shape
    n_channels = row_stats.shape[1]
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for task in range(start, n_samples * n_features, stride):
        f = task // n_samples
        i = task - f * n_samples
        slot = slot_of_node[node_of_row[i]]
        if slot < 0:
            continue
        b = X_binned[f, i]
        for c in range(n_channels):
            cuda.atomic.add(hist, (slot, f, b, c), row_stats[i, c])


@cuda.jit
def partition_rows(X_binned, node_of_row, split_feature, split_bin, left_child, right_child):
    """Move every row of a split node to its child: bin <= split_bin goes left.

    ``split_feature[node]`` < 0 marks nodes not split at this level (rows stay).
    """
    n_samples = node_of_row.shape[0]
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n_samples, stride):
        node = node_of_row[i]
        f = split_feature[node]
        if f < 0:
            continue
        if X_binned[f, i] <= split_bin[node]:
            node_of_row[i] = left_child[node]
        else:
            node_of_row[i] = right_child[node]


@cuda.jit
def count_rows(node_of_row, counts):
    """Rows per node id (integer atomics: exact in any order)."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, node_of_row.shape[0], stride):
        cuda.atomic.add(counts, node_of_row[i], 1)


@cuda.jit
def predict_leaves(X, children_left, children_right, feature, threshold, missing_go_to_left, out):
    """Leaf reached by each row, one thread per row; NaN follows the node's missing rule."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, X.shape[0], stride):
        node = 0
        while children_left[node] >= 0:
            x = X[i, feature[node]]
            if x != x:
                go_left = missing_go_to_left[node] != 0
            else:
                go_left = x <= threshold[node]
            node = children_left[node] if go_left else children_right[node]
        out[i] = node


def launch_config(n_tasks: int, max_blocks: int = 4096):
    """(blocks, threads) for a grid-striding kernel over ``n_tasks`` items."""
    if config.ENABLE_CUDASIM:
        return SIMULATOR_GRID
    blocks = max(1, min(max_blocks, -(-n_tasks // THREADS_PER_BLOCK)))
    return blocks, THREADS_PER_BLOCK
