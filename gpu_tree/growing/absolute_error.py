"""The absolute-error criterion (scikit-learn's ``criterion="absolute_error"``).

A node's impurity is its mean absolute deviation about its weighted median,
sum w |y - m| / sum w, and its value is that median. Medians are not additive, so no
split is scored from histogram sums: each open node's rows are read in the order of each
feature (:mod:`gpu_tree.kernels.cpu_absolute_error`, O(n log n) per node and feature).
The chosen split is then handed to the grower as a histogram search's winner would be
(its bins and both sides' statistics), so that partition, children and growth are the
same code as every other criterion's.

In histogram mode the rows' values are their bin codes: the candidates are the bin
boundaries, as for the other criteria, and the medians and errors are still exact. The
search reads a node's rows through the backend's ``row_columns`` (a block of the node's
rows and searched features), so a sparse X's codes are filled in for those rows only.
Node values and impurities are measured on the rows once the tree is grown
(:func:`medians_and_deviations`); until then a node's value is its mean (unused).
"""

from __future__ import annotations

import numpy as np

from gpu_tree.growing.splitting import SCORE_RTOL, ChosenSplits, SplitConstraints
from gpu_tree.kernels.cpu_absolute_error import (
    best_absolute_error_splits,
    drawn_absolute_error_splits,
    node_median_and_error,
)


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
    column (``Grower._random_split_batch``, whose ``hist`` this is): only those splits
    are scored, bin 0 going left. ``monotonic`` (splitting.MonotonicBounds, or None):
    constraints checked on the children's medians, as scikit-learn checks them.
    """
    partition, row_data = backend.row_partition, backend.row_data
    n_nodes, n_channels = slots.size, hist.shape[-1]
    n_columns = hist.shape[1]
    chosen = ChosenSplits.none(n_nodes, n_channels, hist.dtype)
    missing_code = np.float64(backend.missing_code)
    targets = _targets(row_data)
    n_outputs = targets.shape[1]
    for j, slot in enumerate(slots):
        node = batch.nodes[slot]
        columns = np.arange(n_columns)
        if feature_mask is not None:
            columns = np.flatnonzero(feature_mask[j])
        if columns.size == 0:
            continue
        features = columns
        if batch.drawn_features is not None:
            features = batch.drawn_features[slot, columns]
        rows = partition.rows(node)
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
            missing_code,
            targets[rows],
            row_data.weight[rows],
            constraints.min_samples_leaf,
            constraints.min_weight_leaf,
            SCORE_RTOL,
            csts,
            lower,
            upper,
        )
        if drawn_splits is not None:
            # What goes left of the drawn split: bin codes up to the collapsed left bin's
            # highest (histogram mode), raw values up to its highest value (exact mode).
            split_values = (
                drawn_splits.bin_code[slot, columns, 0]
                if drawn_splits.bin_code is not None
                else drawn_splits.bin_upper[slot, columns, 0]
            )
            gain, missing_left, weight, tolerance = drawn_absolute_error_splits(
                node_columns,
                node_rows,
                node_features,
                split_values.astype(np.float64),
                *node_data,
            )
        else:
            gain, left_value, next_value, missing_left, weight, tolerance = (
                best_absolute_error_splits(node_columns, node_rows, node_features, *node_data)
            )
        if not np.any(np.isfinite(gain)):
            continue
        # The lowest column whose improvement is within rounding of the best (as the
        # histogram search breaks ties).
        k = int(np.argmax(gain >= np.max(gain) - tolerance))
        column = int(columns[k])
        if drawn_splits is not None:
            low, high = 0, 1
        else:
            keys = _bin_keys(batch, slot, column, hist.shape[2])
            nonempty = layout.count(hist[slot, column]) > 0
            low = _bin_of(keys, nonempty, left_value[k])
            high = -1 if np.isnan(next_value[k]) else _bin_of(keys, nonempty, next_value[k])
        left = hist[slot, column, : low + 1].sum(axis=0)
        parent = hist[slot, column].sum(axis=0)
        if missing is not None:
            parent = parent + missing[slot, column]
            if missing_left[k]:
                left = left + missing[slot, column]
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


def node_medians(backend, nodes) -> np.ndarray:
    """The weighted median of each of ``nodes``' rows (centred targets, the fit's units)."""
    partition, row_data = backend.row_partition, backend.row_data
    medians = np.empty(len(nodes))
    for k, node in enumerate(nodes):
        rows = partition.rows(node)
        medians[k] = node_median_and_error(row_data.centred[rows], row_data.weight[rows])[0]
    return medians


def medians_and_deviations(backend, layout, tree) -> tuple[np.ndarray, np.ndarray]:
    """Every node's weighted median of each output (its value: (n_nodes, n_outputs)) and
    mean absolute deviation about it, the mean over the outputs (its impurity), in real
    units, measured on its rows: the CPU backends' row partition keeps each node's rows
    as a slice, internal nodes' too (their children split it)."""
    partition, row_data = backend.row_partition, backend.row_data
    targets = _targets(row_data)
    n_nodes, n_outputs = tree.node_count, targets.shape[1]
    medians = np.empty((n_nodes, n_outputs))
    deviations = np.zeros(n_nodes)
    for node in range(n_nodes):
        rows = partition.rows(node)
        weight = row_data.weight[rows]
        for k in range(n_outputs):
            median, error = node_median_and_error(targets[rows, k], weight)
            medians[node, k] = median
            deviations[node] += error / np.sum(weight) / n_outputs
    return layout.target(medians), np.ldexp(deviations, layout.target_exponent)


def check_absolute_error_fit(*, device, categorical) -> None:
    """Refuse, with a message naming the way out, the fits the absolute-error search does
    not serve: it reads each node's rows on the host (no GPU), of numeric features only
    (of a dense or sparse X, with every splitter: ``row_columns``)."""
    what = "criterion='absolute_error'"
    if device == "cuda":
        raise ValueError(
            f"{what} searches splits on each node's rows on the CPU: fit with device='cpu'"
        )
    if categorical is not None and categorical.features.size:
        raise ValueError(
            f"{what} splits numeric features only; the categorical features "
            f"{categorical.features.tolist()} need another criterion (or pass "
            "categorical_features=[] to treat their codes as numbers)"
        )
