"""The absolute-error criterion (scikit-learn's ``criterion="absolute_error"``).

A node's impurity is its mean absolute deviation about its weighted median,
sum w |y - m| / sum w, and its value is that median. Medians are not additive, so no
split is scored from histogram sums: each open node's rows are read. On the CPU, node by
node in the order of each feature (:mod:`gpu_tree.kernels.cpu.absolute_error`, a
Fenwick tree over the targets' ranks, O(n log n) per node and feature); on the GPU,
every node of the level at once (:mod:`gpu_tree.backends.cuda_absolute_error`, a thread
per node, column and bin scanning the node's rows in target order). Both sum the rows'
fixed-point integers and share the arithmetic (:mod:`gpu_tree.kernels._median_errors`),
so both grow the same tree. The chosen split is then handed to the grower as a
histogram search's winner would be (its bins and both sides' statistics), so that
partition, children and growth are the same code as every other criterion's.

In histogram mode the rows' values are their bin codes: the candidates are the bin
boundaries, as for the other criteria, and the medians and errors are still exact. The
CPU search reads a node's rows through the backend's ``row_columns`` (a block of the
node's rows and searched features), so a sparse X's codes are filled in for those rows
only; the GPU's reads a sparse X's stored values row by row. Node values and impurities
are measured on the rows once the tree is grown (:func:`medians_and_deviations`); until
then a node's value is its mean (unused).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from gpu_tree.growing.splitting import SCORE_RTOL, ChosenSplits, SplitConstraints
from gpu_tree.kernels.cpu.absolute_error import (
    best_level_splits,
    drawn_absolute_error_splits,
    level_targets,
    node_median_and_error,
    tree_medians,
)
from gpu_tree.utils.device_copies import device_to_host


def absolute_error_search(
    backend,
    layout,
    constraints: SplitConstraints,
    batch,
    slots,
    hist,
    missing,
    feature_mask,
    drawn_splits=None,
    monotonic=None,
) -> ChosenSplits:
    """The best absolute-error split of the nodes of ``batch`` at ``slots``, as
    :func:`gpu_tree.growing.splitting.select_splits` returns it.

    ``hist`` (n_slots, n_columns, n_bins, n_channels) and ``missing`` (n_slots, n_columns,
    n_channels, or None) are the histograms the search reads (a dense batch's missing bin
    apart); they give the chosen split's bins and the statistics of its sides.
    ``feature_mask`` (len(slots), n_columns) bool, or None: the columns each node may
    use; a column is a feature, or the node's drawn feature at that position.
    ``drawn_splits``: extremely randomised trees' batch of one drawn split per node and
    column (``SplitEvaluator._random_split_batch``, whose ``hist`` this is): only those splits
    are scored, bin 0 going left. ``monotonic`` (splitting.MonotonicBounds, or None):
    constraints checked on the children's medians, as scikit-learn checks them.
    """
    n_nodes, n_channels = slots.size, hist.shape[-1]
    n_columns = hist.shape[1]
    chosen = ChosenSplits.none(n_nodes, n_channels, hist.dtype)
    n_outputs = layout.n_outputs
    on_device = backend.capabilities.device == "cuda"
    level = None
    if on_device:  # every node's columns in a few launches (backends/cuda_absolute_error)
        winners = _device_winners(
            backend, constraints, batch, slots, n_columns, drawn_splits, monotonic
        )
    elif drawn_splits is None:  # every node's columns in one call
        level = _cpu_level_winners(
            backend, constraints, batch, slots, n_columns, feature_mask, monotonic
        )
    else:
        node_search = _CPUNodeSearch(backend, constraints, batch, drawn_splits, monotonic)
    for j, slot in enumerate(slots):
        columns = np.arange(n_columns)
        if feature_mask is not None:
            columns = np.flatnonzero(feature_mask[j])
        if columns.size == 0:
            continue
        if level is not None:
            gain, left_value = level.gain[j, columns], level.left_value[j, columns]
            next_value, missing_left = level.next_value[j, columns], level.missing_left[j, columns]
            weight, tolerance = level.node_weight[j], level.tolerance[j]
        elif on_device:
            gain = winners.gain[j, columns]
            left_value = winners.low_bin[j, columns].astype(np.float64)
            next_bin = winners.next_bin[j, columns]
            next_value = np.where(next_bin < 0, np.nan, next_bin.astype(np.float64))
            missing_left = winners.missing_left[j, columns]
            weight, tolerance = winners.node_weight[j], winners.tolerance[j]
        else:
            gain, left_value, next_value, missing_left, weight, tolerance = node_search(
                j, slot, columns
            )
        if not np.any(np.isfinite(gain)):
            continue
        # The lowest column whose improvement is within rounding of the best (as the
        # histogram search breaks ties).
        k = int(np.argmax(gain >= np.max(gain) - tolerance))
        column = int(columns[k])
        # One row of a GPU fit's histograms back (counted there only: on the CPU a no-op).
        column_hist = device_to_host(hist[slot, column])
        if drawn_splits is not None:
            low, high = 0, 1
        else:
            keys = _bin_keys(batch, slot, column, hist.shape[2])
            nonempty = layout.count(column_hist) > 0
            low = _bin_of(keys, nonempty, left_value[k])
            high = -1 if np.isnan(next_value[k]) else _bin_of(keys, nonempty, next_value[k])
        left = column_hist[: low + 1].sum(axis=0)
        parent = column_hist.sum(axis=0)
        if missing is not None:
            column_missing = device_to_host(missing[slot, column])
            parent = parent + column_missing
            if missing_left[k]:
                left = left + column_missing
        chosen.has_split[j] = True
        chosen.feature[j] = column
        chosen.bin[j] = low
        chosen.next_bin[j] = high
        # Per unit weight, as the other criteria's; the outputs' mean (their errors add).
        chosen.score[j] = gain[k] / weight / n_outputs
        chosen.left_stats[j] = left
        chosen.right_stats[j] = parent - left
        chosen.missing_left[j] = missing_left[k]
    return chosen


@dataclasses.dataclass
class _LevelWinners:
    """The CPU's best split of each node (rows) on each column: its improvement (-inf:
    none, or a column not searched), the largest value going left, the smallest going
    right (NaN: none), where missing values go; and each node's weight and the rounding
    tolerance of its improvements."""

    gain: np.ndarray
    left_value: np.ndarray
    next_value: np.ndarray
    missing_left: np.ndarray
    node_weight: np.ndarray
    tolerance: np.ndarray


def _cpu_level_winners(backend, constraints, batch, slots, n_columns, feature_mask, monotonic):
    """Every node of ``slots`` searched on its columns in one call of the CPU kernels
    (:func:`gpu_tree.kernels.cpu.absolute_error.best_level_splits`, a task per node and
    column): the nodes' rows read through the backend's row partition and, as one block
    of the level's rows and searched features, ``row_columns``."""
    n_nodes = slots.size
    nodes = batch.nodes[slots]
    partition, row_data = backend.row_partition, backend.row_data
    sizes = partition.node_sizes(nodes)
    node_start = np.zeros(n_nodes + 1, dtype=np.int64)
    np.cumsum(sizes, out=node_start[1:])
    positions = np.repeat(partition.start[nodes] - node_start[:-1], sizes) + np.arange(
        node_start[-1]
    )
    rows = np.ascontiguousarray(partition.sample_indices[positions], dtype=np.int64)
    searched = np.ones((n_nodes, n_columns), dtype=bool)
    if feature_mask is not None:
        searched = np.asarray(feature_mask, dtype=bool)
    task_node, task_column = np.nonzero(searched)
    feature_of = np.broadcast_to(np.arange(n_columns), (n_nodes, n_columns))
    if batch.drawn_features is not None:
        feature_of = batch.drawn_features[slots][:, :n_columns]
    task_feature = feature_of[task_node, task_column]
    # The block holds each feature searched once; a task reads its feature's row.
    features, task_block_row = np.unique(task_feature, return_inverse=True)
    block = backend.row_columns(rows, features.astype(np.int64))
    csts = np.zeros(task_node.size, dtype=np.int8)
    lower = np.full(task_node.size, -np.inf)
    upper = np.full(task_node.size, np.inf)
    if monotonic is not None:  # bounds in the fit's units, as the medians
        csts = np.ascontiguousarray(monotonic.cst[task_feature], dtype=np.int8)
        lower = np.ascontiguousarray(monotonic.lower[task_node], dtype=np.float64)
        upper = np.ascontiguousarray(monotonic.upper[task_node], dtype=np.float64)
    targets = _targets(row_data)
    weight, sums, scales = fixed_point_rows(row_data)
    n_outputs = targets.shape[1]
    node_sums = np.empty((n_outputs, rows.size), dtype=np.int64)
    node_sorted_y = np.empty((n_outputs, rows.size))
    node_rank_of = np.empty((n_outputs, rows.size), dtype=np.int64)
    node_weight, tolerance = level_targets(
        rows,
        node_start,
        targets,
        weight,
        sums,
        scales,
        SCORE_RTOL,
        node_sums,
        node_sorted_y,
        node_rank_of,
    )
    n_tasks = task_node.size
    gain = np.empty(n_tasks)
    left_value = np.empty(n_tasks)
    next_value = np.empty(n_tasks)
    missing_left = np.empty(n_tasks, dtype=np.bool_)
    best_level_splits(
        task_node.astype(np.int64),
        task_block_row.astype(np.int64),
        block,
        rows,
        node_start,
        np.float64(backend.missing_code),
        weight,
        node_sums,
        node_sorted_y,
        node_rank_of,
        scales,
        constraints.min_samples_leaf,
        constraints.min_weight_leaf,
        tolerance,
        csts,
        lower,
        upper,
        gain,
        left_value,
        next_value,
        missing_left,
    )
    winners = _LevelWinners(
        np.full((n_nodes, n_columns), -np.inf),
        np.full((n_nodes, n_columns), np.nan),
        np.full((n_nodes, n_columns), np.nan),
        np.zeros((n_nodes, n_columns), dtype=bool),
        node_weight,
        tolerance,
    )
    winners.gain[task_node, task_column] = gain
    winners.left_value[task_node, task_column] = left_value
    winners.next_value[task_node, task_column] = next_value
    winners.missing_left[task_node, task_column] = missing_left
    return winners


class _CPUNodeSearch:
    """The CPU's search of one node for extremely randomised trees' drawn splits
    (:mod:`gpu_tree.kernels.cpu.absolute_error`): its rows read through the backend's row
    partition and ``row_columns``."""

    def __init__(self, backend, constraints, batch, drawn_splits, monotonic):
        self.backend, self.constraints, self.batch = backend, constraints, batch
        self.drawn_splits, self.monotonic = drawn_splits, monotonic
        self.targets = _targets(backend.row_data)
        self.weight, self.sums, self.scales = fixed_point_rows(backend.row_data)

    def __call__(self, j, slot, columns):
        """(gain, left_value, next_value, missing_left) per column, the node's weight and
        the tolerance of its gains: node ``j`` of the search, at ``slot`` of the batch."""
        backend, batch, monotonic = self.backend, self.batch, self.monotonic
        features = columns
        if batch.drawn_features is not None:
            features = batch.drawn_features[slot, columns]
        rows = backend.row_partition.rows(batch.nodes[slot])
        features = np.ascontiguousarray(features, dtype=np.int64)
        csts, lower, upper = np.zeros(features.size, dtype=np.int8), -np.inf, np.inf
        if monotonic is not None:  # bounds in the fit's units, as the medians
            csts = np.ascontiguousarray(monotonic.cst[features], dtype=np.int8)
            lower, upper = float(monotonic.lower[j]), float(monotonic.upper[j])
        # The kernels read the node alone: its rows' values of the searched features (a
        # sparse X's filled in from its stored values), targets and weights, its rows
        # and features numbered from 0 in them.
        node_columns = backend.row_columns(rows, features)
        node_rows = np.arange(rows.size, dtype=np.int64)
        node_features = np.arange(features.size, dtype=np.int64)
        node_data = (
            np.float64(backend.missing_code),
            self.targets[rows],
            self.weight[rows],
            self.sums[rows],
            self.scales,
            self.constraints.min_samples_leaf,
            self.constraints.min_weight_leaf,
            SCORE_RTOL,
            csts,
            lower,
            upper,
        )
        drawn_splits = self.drawn_splits
        # What goes left of the drawn split: bin codes up to the collapsed left bin's
        # highest (histogram mode), raw values up to its highest value (exact mode).
        split_values = (
            drawn_splits.bin_code[slot, columns, 0]
            if drawn_splits.bin_code is not None
            else drawn_splits.bin_upper[slot, columns, 0]
        )
        gain, missing_left, weight, tolerance = drawn_absolute_error_splits(
            node_columns, node_rows, node_features, split_values.astype(np.float64), *node_data
        )
        return gain, None, None, missing_left, weight, tolerance


def _device_winners(backend, constraints, batch, slots, n_columns, drawn_splits, monotonic):
    """The GPU's best split of every node of ``slots`` on every column
    (backends/cuda_absolute_error.ColumnWinners)."""
    n_nodes = slots.size
    feature_of = np.tile(np.arange(n_columns), (n_nodes, 1))
    if batch.drawn_features is not None:
        feature_of = batch.drawn_features[slots][:, :n_columns]
    drawn_bin = None
    if drawn_splits is not None:
        drawn_bin = drawn_splits.bin_code[slots, :n_columns, 0]
    csts = np.zeros((n_nodes, n_columns), dtype=np.int8)
    lower, upper = np.full(n_nodes, -np.inf), np.full(n_nodes, np.inf)
    if monotonic is not None:
        csts = monotonic.cst[feature_of]
        lower, upper = monotonic.lower, monotonic.upper
    return backend.absolute_error_winners(
        batch.nodes[slots],
        batch.hist,  # the level's dense histograms: the candidates' sums
        slots,
        feature_of,
        drawn_bin,
        csts,
        lower,
        upper,
        constraints.min_samples_leaf,
        constraints.min_weight_leaf,
        SCORE_RTOL,
    )


def _bin_keys(batch, slot, column, n_bins) -> np.ndarray:
    """What each bin of a node's histogram row stands for, in the rows' own terms: a
    dense histogram's bins are the bin codes; a compact one's, its ``bin_code`` (histogram
    mode) or the distinct raw values (exact mode, ``bin_lower``)."""
    if batch.dense:
        return np.arange(n_bins)
    if batch.bin_code is not None:
        return batch.bin_code[slot, column, :n_bins]
    return batch.bin_lower[slot, column, :n_bins]


def _bin_of(keys, nonempty, value) -> int:
    """The non-empty bin that holds rows of ``value``."""
    return int(np.flatnonzero(nonempty & (keys == value))[0])


def _targets(row_data) -> np.ndarray:
    """The centred targets as the kernels take them: (n_samples, n_outputs)."""
    return row_data.centred.reshape(row_data.centred.shape[0], -1)


def fixed_point_rows(row_data):
    """What the kernels sum (:mod:`gpu_tree.kernels._median_errors`): every row's
    fixed-point weight (n_samples,), each output's fixed-point weighted sum
    (n_samples, n_outputs), and the scales of those channels (the weight's, then each
    output's: StatsLayout.real's powers of two)."""
    layout = row_data.layout
    n_outputs = layout.n_outputs
    stats = row_data.row_stats
    return stats[:, 0], stats[:, 1 : 1 + n_outputs], layout.scales()[: 1 + n_outputs]


def node_medians(backend, nodes) -> np.ndarray:
    """The weighted median of each of ``nodes``' rows (the first output's: the one
    monotonicity constraints read; centred targets, the fit's units)."""
    if backend.capabilities.device == "cuda":
        return backend.absolute_error_medians(np.asarray(nodes, dtype=np.int64))[0][:, 0]
    partition, row_data = backend.row_partition, backend.row_data
    targets = _targets(row_data)
    weight, sums, scales = fixed_point_rows(row_data)
    medians = np.empty(len(nodes))
    for k, node in enumerate(nodes):
        rows = partition.rows(node)
        medians[k] = node_median_and_error(
            targets[rows, 0], weight[rows], sums[rows, 0], scales[:2]
        )[0]
    return medians


def medians_and_deviations(backend, layout, tree) -> tuple[np.ndarray, np.ndarray]:
    """Every node's weighted median of each output (its value: (n_nodes, n_outputs)) and
    mean absolute deviation about it, the mean over the outputs (its impurity), in real
    units, measured on its rows: on the CPU, each node's slice of the row partition
    (internal nodes' too: their children split it); on the GPU, the rows of each depth's
    nodes found from their leaves (``tree_medians``)."""
    scales = fixed_point_rows(backend.row_data)[2]
    if backend.capabilities.device == "cuda":
        medians, errors, weights = backend.tree_medians(tree)
    else:
        medians, errors, weights = _cpu_medians(backend, tree.node_count)
    n_outputs = medians.shape[1]
    node_weight = weights.astype(np.float64) * scales[0]
    deviations = np.zeros(tree.node_count)
    for k in range(n_outputs):
        deviations += errors[:, k] / node_weight / n_outputs
    return layout.target(medians), np.ldexp(deviations, layout.target_exponent)


def _cpu_medians(backend, n_nodes):
    """Each node's median and absolute error per output (n_nodes, n_outputs) and its
    fixed-point weight, from the CPU backends' row partition (one compiled call:
    :func:`gpu_tree.kernels.cpu.absolute_error.tree_medians`)."""
    partition, row_data = backend.row_partition, backend.row_data
    weight, sums, scales = fixed_point_rows(row_data)
    return tree_medians(
        partition.sample_indices,
        partition.start[:n_nodes],
        partition.end[:n_nodes],
        _targets(row_data),
        weight,
        sums,
        scales,
    )


def check_absolute_error_fit(*, categorical) -> None:
    """Refuse, with a message naming the way out, the fits the absolute-error search does
    not serve: it splits numeric features only (of a dense or sparse X, with every
    splitter, on either device)."""
    what = "criterion='absolute_error'"
    if categorical is not None and categorical.features.size:
        raise ValueError(
            f"{what} splits numeric features only; the categorical features "
            f"{categorical.features.tolist()} need another criterion (or pass "
            "categorical_features=[] to treat their codes as numbers)"
        )
