"""The absolute-error criterion on the GPU: what the CUDA backends run for
``criterion="absolute_error"`` (:mod:`gpu_tree.kernels.cuda.absolute_error`).

Medians are not additive, so a split is scored on the node's rows, not on histogram
sums. A level's open nodes are searched in a few launches: the rows of the nodes are
ordered by target within each node (two stable device sorts per output), cumulative sums
over those rows give every node's median and the sums on either side of it (a thread per
node then finishes its error; no thread walks a node's rows), one thread per (node,
column, bin) measures each candidate's
four sets (their sums from the level's histograms, their medians from a walk of the
node's rows in target order), and one per (node, column) runs the CPU search's choice
over them. Only the
per-(node, column) winners come back to the host, where
:mod:`gpu_tree.growing.absolute_error` picks each node's column as on the CPU.

Every sum is of the rows' fixed-point integers and the arithmetic is
:mod:`gpu_tree.kernels._median_errors`, which the CPU's Fenwick search shares: the
trees are the CPU backend's, bit for bit.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpu_tree.utils.device_copies import device_to_host, host_to_device


class ColumnWinners(NamedTuple):
    """Per (node, column): the best split's improvement (-inf: none), its bin, the next
    bin holding rows (-1: none), where missing rows go; per node its weight (real) and the
    rounding tolerance of its improvements."""

    gain: np.ndarray
    low_bin: np.ndarray
    next_bin: np.ndarray
    missing_left: np.ndarray
    node_weight: np.ndarray
    tolerance: np.ndarray


class _NodeRows(NamedTuple):
    orders: list  # per output, the nodes' rows ordered by node, then target (device)
    start: object  # per node, where its rows begin in each order (device)
    size: object  # per node, its rows (device)
    host_size: np.ndarray
    position_slot: object  # the node of each position of every order (device)


def _scales(layout) -> np.ndarray:
    """The powers of two of the weight channel and each output's sum channel."""
    return layout.scales()[: 1 + layout.n_outputs]


def _columns(backend):
    """Where the kernels read a row's fixed-point weight (-1: 1, an unweighted fit) and
    each output's weighted sum, in ``backend.row_stats`` (which leaves out the weight
    channel of an unweighted fit)."""
    n_outputs = backend.row_data.layout.n_outputs
    if backend.unit_weight:
        return -1, list(range(n_outputs))
    return 0, [1 + k for k in range(n_outputs)]


def _slot_of_row(backend, nodes):
    """On the device: each row's position in ``nodes`` (-1: in none), by its node."""
    slot_of_node = host_to_device(backend._host_slot_table(np.asarray(nodes)), backend.xp)
    return slot_of_node[backend.node_of_row]


def _output_rows(backend, k):
    """What the kernels read of each row for output ``k``: its centred targets, the row
    statistics, the columns of the weight and of the output's weighted sum
    (:func:`_columns`), and those channels' scales."""
    weight_column, sum_columns = _columns(backend)
    scales = _scales(backend.row_data.layout)
    return (
        backend.centred_by_output[k],
        backend.row_stats,
        weight_column,
        sum_columns[k],
        scales[0],
        scales[1 + k],
    )


def _node_rows(backend, n_nodes, slot_of_row) -> _NodeRows:
    """The rows of ``n_nodes`` nodes (``slot_of_row``: each row's node, -1: none) grouped
    by node, and within each node ordered by each output's target: ties by row number,
    as the CPU ranks them (its nodes keep their rows in row order)."""
    xp = backend.xp
    rows = xp.flatnonzero(slot_of_row >= 0)
    slot = slot_of_row[rows]
    host_size = device_to_host(xp.bincount(slot, minlength=n_nodes)).astype(np.int64)
    start = np.concatenate(([0], np.cumsum(host_size)[:-1])).astype(np.int64)
    orders = []
    for k in range(backend.row_data.layout.n_outputs):
        by_target = xp.argsort(backend.centred_by_output[k][rows], kind="stable")
        by_node = xp.argsort(slot[by_target], kind="stable")
        orders.append(xp.ascontiguousarray(rows[by_target[by_node]]))
    position_slot = xp.sort(slot)  # grouped by node, in node order: the same in every order
    return _NodeRows(
        orders,
        host_to_device(start, xp),
        host_to_device(host_size, xp),
        host_size,
        position_slot,
    )


def _prefix_sums(xp, values):
    """Exclusive prefix sums with the total at the end: sums[i] is values[:i]'s (int64)."""
    sums = xp.zeros(values.shape[0] + 1, dtype=np.int64)
    xp.cumsum(values, out=sums[1:])
    return sums


def _median_sums(backend, node_rows, k):
    """Output ``k``'s sums of every node at once, from cumulative sums over its rows in
    target order: the totals of w and w * y, those of the rows before the median
    (the first row whose cumulative weight exceeds half the node's) and the targets of
    that row and of the first reaching half (``_median_errors``' median, found on the
    integers as the CPU's Fenwick search finds it: where no row's weight exceeds half,
    an all-zero weight, every row is "before" and the last row's target is taken)."""
    xp = backend.xp
    order = node_rows.orders[k]
    centred, row_stats, weight_column, sum_column, _, _ = _output_rows(backend, k)
    weight = (
        xp.ones(order.shape[0], dtype=np.int64)
        if weight_column < 0
        else row_stats[order, weight_column]
    )
    weighted = row_stats[order, sum_column]
    start = node_rows.start
    end = start + node_rows.size
    weight_sums = _prefix_sums(xp, weight)
    weighted_sums = _prefix_sums(xp, weighted)
    total_w = weight_sums[end] - weight_sums[start]
    # Each position's cumulative weight within its node (inclusive), against its total.
    slot = node_rows.position_slot
    twice_cumulative = 2 * (weight_sums[1:] - weight_sums[start[slot]])
    node_total = total_w[slot]
    not_past = _prefix_sums(xp, (twice_cumulative <= node_total).astype(np.int64))
    below_half = _prefix_sums(xp, (twice_cumulative < node_total).astype(np.int64))
    high = start + (not_past[end] - not_past[start])  # the first row past half
    low = start + (below_half[end] - below_half[start])  # the first reaching half
    last = end - 1
    return (
        total_w,
        weighted_sums[end] - weighted_sums[start],
        weight_sums[high] - weight_sums[start],
        weighted_sums[high] - weighted_sums[start],
        centred[order[xp.minimum(low, last)]],
        centred[order[xp.minimum(high, last)]],
    )


def _launch(backend, kernel, n_tasks, *args):
    blocks, threads = backend.kernels.launch.launch_config(max(1, n_tasks))
    backend._launch(kernel, (blocks, threads), *args)


def median_errors(backend, nodes):
    """Each of ``nodes``' weighted median per output (n_nodes, n_outputs; the fit's
    centred units), absolute error per output (the same shape) and fixed-point weight,
    on the host, measured on the rows they hold now."""
    node_rows = _node_rows(backend, len(nodes), _slot_of_row(backend, nodes))
    return _median_errors_of(backend, node_rows, len(nodes))


def tree_medians(backend, tree):
    """Every node's median and absolute error per output (n_nodes, n_outputs) and its
    fixed-point weight, once the tree is grown. Only leaves hold rows then
    (``node_of_row``), so each depth's nodes are measured on the rows of the leaves below
    them: a launch per output and depth."""
    n_nodes = tree.node_count
    left, right = tree.children_left[:n_nodes], tree.children_right[:n_nodes]
    parent = np.full(n_nodes, -1, dtype=np.int64)
    depth = np.zeros(n_nodes, dtype=np.int64)
    for node in range(n_nodes):  # children are numbered after their parent
        if left[node] >= 0:
            parent[[left[node], right[node]]] = node
            depth[[left[node], right[node]]] = depth[node] + 1
    n_outputs = backend.row_data.layout.n_outputs
    medians = np.empty((n_nodes, n_outputs))
    errors = np.empty((n_nodes, n_outputs))
    weights = np.empty(n_nodes, dtype=np.int64)
    table_size = backend._node_size.size
    for d in range(int(depth.max(initial=0)) + 1):
        nodes = np.flatnonzero(depth == d)
        # Each node's ancestor at depth d (itself there; -1 above it), then its slot.
        ancestor = np.arange(n_nodes)
        while np.any(depth[ancestor] > d):
            ancestor = np.where(depth[ancestor] > d, parent[ancestor], ancestor)
        slot_of_node = np.full(table_size, -1, dtype=np.int32)
        slot_of_depth_node = np.full(n_nodes, -1, dtype=np.int32)
        slot_of_depth_node[nodes] = np.arange(nodes.size, dtype=np.int32)
        below = depth >= d
        slot_of_node[:n_nodes][below] = slot_of_depth_node[ancestor[below]]
        slot_of_row = host_to_device(slot_of_node, backend.xp)[backend.node_of_row]
        node_rows = _node_rows(backend, nodes.size, slot_of_row)
        medians[nodes], errors[nodes], weights[nodes] = _median_errors_of(
            backend, node_rows, nodes.size
        )
    return medians, errors, weights


def _median_errors_of(backend, node_rows, n_nodes):
    from gpu_tree.kernels.cuda import absolute_error as kernels

    xp = backend.xp
    layout = backend.row_data.layout
    n_outputs = layout.n_outputs
    medians = xp.empty((n_nodes, n_outputs))
    errors = xp.empty((n_nodes, n_outputs))
    scales = _scales(layout)
    for k in range(n_outputs):
        sums = _median_sums(backend, node_rows, k)
        weights = sums[0]
        _launch(
            backend,
            kernels.node_median_errors,
            n_nodes,
            *sums,
            scales[0],
            scales[1 + k],
            k,
            medians,
            errors,
        )
    return tuple(device_to_host(a) for a in (medians, errors, weights))


def column_winners(
    backend,
    nodes,
    hist,
    hist_slots,
    feature_of,
    drawn_bin,
    csts,
    lower,
    upper,
    min_samples_leaf,
    min_weight_leaf,
    rtol,
) -> ColumnWinners:
    """The best split of each of ``nodes`` on each column (:class:`ColumnWinners`).

    ``hist`` (n_slots, n_columns, n_bins, n_channels): the level's dense histograms on the
    device, node j's at slot ``hist_slots[j]``, column by column as ``feature_of``
    (n_nodes, n_columns) numbers the features; ``drawn_bin`` (the
    same shape, or None): extremely randomised trees' drawn split of each column (its
    left side's highest bin), the one split scored; ``csts`` (the same shape) each
    column's monotonicity constraint, ``lower``/``upper`` (n_nodes) the nodes' bounds.
    """
    from gpu_tree.kernels.cuda import absolute_error as kernels

    xp = backend.xp
    layout = backend.row_data.layout
    n_outputs = layout.n_outputs
    scales = _scales(layout)
    n_nodes, n_columns = feature_of.shape
    node_rows = _node_rows(backend, n_nodes, _slot_of_row(backend, nodes))
    _, parent_errors, weights = _median_errors_of(backend, node_rows, n_nodes)
    # As the CPU's level_targets: the outputs' errors added in order, the
    # tolerance that of the node's error.
    parent = np.zeros(n_nodes)
    for k in range(n_outputs):
        parent += parent_errors[:, k]
    tolerance = rtol * parent
    missing_bin = backend.missing_bin
    n_present_bins = missing_bin if missing_bin >= 0 else backend.n_bins
    shape = (n_nodes, n_columns, n_present_bins)
    # Each candidate's four sets' errors and medians (float64), its left side's count and
    # weight (int64).
    backend._check_level_memory(
        int(np.prod(shape)) * 8 * (2 * kernels.N_SETS + 2), n_nodes, "absolute-error candidates"
    )
    # What candidate_errors writes and choose_splits reads: the sets' errors and medians,
    # the left sides' counts and weights, the missing rows' count and weight.
    candidates = (
        xp.empty((*shape, kernels.N_SETS)),
        xp.empty((*shape, kernels.N_SETS)),
        xp.empty(shape, dtype=np.int64),
        xp.empty(shape, dtype=np.int64),
        xp.empty((n_nodes, n_columns), dtype=np.int64),
        xp.empty((n_nodes, n_columns), dtype=np.int64),
    )
    features = host_to_device(np.ascontiguousarray(feature_of, dtype=np.int64), xp)
    hist_slots = host_to_device(np.ascontiguousarray(hist_slots, dtype=np.int64), xp)
    codes = backend.absolute_error_codes()
    for k in range(n_outputs):
        _launch(
            backend,
            kernels.candidate_errors,
            int(np.prod(shape)),
            node_rows.orders[k],
            node_rows.start,
            node_rows.size,
            hist,
            hist_slots,
            1 + k,
            backend.count_channel,
            *codes,
            features,
            missing_bin,
            n_present_bins,
            *_output_rows(backend, k),
            k == 0,
            *candidates,
        )
    drawn = np.full((n_nodes, n_columns), -1, dtype=np.int64) if drawn_bin is None else drawn_bin
    winners = (
        xp.empty((n_nodes, n_columns)),
        xp.empty((n_nodes, n_columns), dtype=np.int64),
        xp.empty((n_nodes, n_columns), dtype=np.int64),
        xp.empty((n_nodes, n_columns), dtype=np.bool_),
    )
    _launch(
        backend,
        kernels.choose_splits,
        n_nodes * n_columns,
        *candidates,
        node_rows.size,
        host_to_device(weights, xp),
        host_to_device(parent, xp),
        host_to_device(tolerance, xp),
        host_to_device(np.ascontiguousarray(drawn, dtype=np.int64), xp),
        min_samples_leaf,
        float(min_weight_leaf),
        scales[0],
        host_to_device(np.ascontiguousarray(csts, dtype=np.int8), xp),
        host_to_device(np.ascontiguousarray(lower, dtype=np.float64), xp),
        host_to_device(np.ascontiguousarray(upper, dtype=np.float64), xp),
        *winners,
    )
    gain, low_bin, next_bin, missing_left = (device_to_host(a) for a in winners)
    node_weight = weights.astype(np.float64) * scales[0]
    return ColumnWinners(gain, low_bin, next_bin, missing_left, node_weight, tolerance)
