"""What the backends share below their contract (:mod:`gpu_tree.backends.contract`):
the rows' data, and row bookkeeping.

- :class:`RowData`: what each training row contributes to a histogram;
- :class:`RowPartition`: the CPU backends' node -> slice of rows, split in place;
- :func:`category_tables`: categorical subset splits as the partition kernels (CPU and
  CUDA) read them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from gpu_tree.data.stats import (
    BITSET_WORD_DTYPE,
    COUNT_DTYPE,
    COUNT_DTYPE_MAX_ROWS,
    STATS_DTYPE,
    StatsLayout,
    binade_sum,
    centred_targets,
    exact_sum,
    fixed_point_exponent,
    fixed_point_exponent_of,
    from_fixed_point,
    regression_centre,
    target_exponent,
    to_fixed_point,
    weight_scale_exponent,
)
from gpu_tree.kernels.cpu import partition as cpu_partition
from gpu_tree.kernels.cpu import row_statistics as cpu_row_statistics
from gpu_tree.utils.device_copies import device_to_host


def compact_from_dense(dense, missing_bin, width=None):
    """Compact histograms (hist, code, missing) of dense ones, (n_nodes, n_features,
    n_bins, n_channels): per node and feature the bins holding rows, but the missing
    bin (whose statistics are ``missing``), in code order, ``width`` compact bins (code
    -1 and zero statistics past those present; None: as many as the fullest node and
    feature has).

    A bin holds rows exactly where a statistic is non-zero: weighted fits count rows in
    a channel of their own, and unweighted ones add a weight of 1 per row.
    """
    n_nodes, n_features, n_bins, n_channels = dense.shape
    missing = np.zeros((n_nodes, n_features, n_channels), dtype=dense.dtype)
    present = np.any(dense != 0, axis=3)
    if missing_bin >= 0:
        missing[...] = dense[:, :, missing_bin]
        present[:, :, missing_bin] = False
    if width is None:
        width = max(1, int(present.sum(axis=2).max(initial=1)))
    hist = np.zeros((n_nodes, n_features, width, n_channels), dtype=dense.dtype)
    code = np.full((n_nodes, n_features, width), -1, dtype=np.int64)
    k, f, b = np.nonzero(present)  # row-major: codes in increasing order per (k, f)
    position = np.cumsum(present, axis=2)[k, f, b] - 1
    hist[k, f, position] = dense[k, f, b]
    code[k, f, position] = b
    return hist, code, missing


def fixed_point_weights(weight, weight_exponent):
    """Weights (already in the fit's power-of-two scale) as the histograms count them:
    their fixed-point integers, and those integers' real values.

    A positive weight below half a unit (2**-62 of the total weight) counts as one unit,
    not 0: a row the tree holds must weigh something, as in scikit-learn, where only rows
    of zero weight are left out. A node of such rows alone would otherwise weigh 0 and
    hold class fractions summing to 0 (predict_proba rows of zeros)."""
    fixed = to_fixed_point(weight, weight_exponent)
    np.maximum(fixed, np.asarray(weight) > 0, out=fixed)
    return fixed, from_fixed_point(fixed, weight_exponent)


class RowScales(NamedTuple):
    """The data-dependent constants of :class:`RowData`, as all of a fit's rows give them
    (a distributed fit computes them from every machine's parts): the weights' power-of-two
    scale and fixed-point exponent, the number of rows, and for regression the centre,
    the targets' scale and the fixed-point exponent of the weighted centred targets."""

    weight_scale: int
    weight_exponent: int
    n_samples: int
    # Multi-output regression: a tuple of one centre and one sum exponent per output.
    centre: float | tuple = 0.0
    target_exponent: int = 0
    sum_exponent: int | tuple = 0


def forest_row_scales(weight, y, n_per_tree: int, weight_bound: float | None = None) -> RowScales:
    """The scales (RowScales) of a forest's rows, one for all its trees: fixed from bounds
    on what any one tree's rows sum to, so that a tree's integer statistics, hence the
    tree, do not depend on the trees it grows beside (its batch).

    Parameters
    ----------
    weight : ndarray of shape (n_samples,)
        Every row's weight, once (before any bootstrap count).
    y : ndarray of shape (n_samples,) or None
        Regression targets (None: classification).
    n_per_tree : int
        The most rows (counted with repetition) one tree holds.
    weight_bound : float or None
        The largest total weight of one tree's rows; None: the total of ``weight`` (every
        tree holds every row once).
    """
    weight = np.asarray(weight, dtype=np.float64)
    scale = weight_scale_exponent(weight)  # a power of two: changes no tree
    total = binade_sum(weight) if weight_bound is None else float(weight_bound)
    total = float(np.ldexp(total, -scale))
    weight_exponent = fixed_point_exponent_of(total)
    if y is None:
        return RowScales(scale, weight_exponent, int(n_per_tree))
    y = np.asarray(y, dtype=np.float64)
    if y.ndim == 2:  # multi-output: per output, as RowData centres and sums them
        centres, t = multi_output_centres(y, total)
        sum_exponents = tuple(
            _bound_sum_exponent(y[:, k], centres[k], t, total) for k in range(y.shape[1])
        )
        return RowScales(scale, weight_exponent, int(n_per_tree), centres, t, sum_exponents)
    centre = regression_centre(y)
    t = target_exponent(y, centre, total)
    sum_exponent = _bound_sum_exponent(y, centre, t, total)
    return RowScales(scale, weight_exponent, int(n_per_tree), centre, t, sum_exponent)


def _bound_sum_exponent(y, centre, t, total) -> int:
    """The fixed-point exponent of sums of w * (y - centre) of any rows weighing at most
    ``total``: each row's weighted target is at most the largest |y - centre| times its
    weight."""
    largest_target = float(np.max(np.abs(centred_targets(y, centre, t)), initial=0.0))
    return fixed_point_exponent_of(total * largest_target)


def multi_output_centres(y, total_weight) -> tuple[tuple, int]:
    """Multi-output regression (y of shape (n_samples, n_outputs)): each output's centre
    (its median target) and the one power-of-two scale of them all, the largest any
    output needs (:func:`target_exponent`)."""
    centres = tuple(regression_centre(y[:, k]) for k in range(y.shape[1]))
    scale = max(target_exponent(y[:, k], centres[k], total_weight) for k in range(y.shape[1]))
    return centres, scale


@dataclass
class RowData:
    """What each training row contributes to a histogram.

    Built from real weights (and ``y_class`` or ``y``) and a layout that says the kind of
    target; on construction it fixes the layout's fixed-point exponents, integer type and
    regression centre (:mod:`gpu_tree.data.stats`) and turns every row's statistics into
    integers, so that no sum depends on its order. Afterwards:

    - ``weight``: the weights the histograms count, in the fit's units (the real ones
      times ``2**-layout.weight_exponent``), each rounded to its fixed point;
    - ``weight_fixed``: those weights as integers;
    - ``centred`` (regression): ``(y - layout.centre) * 2**-layout.target_exponent``,
      float64, the targets in the fit's units, which node impurities are measured on;
    - ``row_stats`` (n_samples, n_channels): each row's integer statistics; always
      available (built on first use for classification: one-hot weights) because exact
      mode sums dense statistics.
    """

    layout: StatsLayout
    weight: np.ndarray
    y_class: np.ndarray | None = None
    y: np.ndarray | None = None
    _row_stats: np.ndarray | None = None
    # Given, the fit's scales (RowScales) instead of those of these rows: the rows are
    # one machine's share of a distributed fit, whose scales are the whole data's, or the
    # rows of several trees of a forest (forest_row_scales).
    scales: Any = None
    # The rows form consecutive groups of these sizes, each the rows of one root: the
    # trees of a forest that grow together (None: one root, every row).
    root_sizes: Any = None

    def __post_init__(self):
        weight = np.asarray(self.weight, dtype=np.float64)
        if self.root_sizes is not None:
            self.root_sizes = tuple(int(size) for size in self.root_sizes)
            if sum(self.root_sizes) != weight.shape[0] or min(self.root_sizes) < 1:
                raise ValueError(
                    f"root_sizes {self.root_sizes[:5]}... must be positive counts adding "
                    f"up to the {weight.shape[0]} rows"
                )
        scales = self.scales
        scale = weight_scale_exponent(weight) if scales is None else scales.weight_scale
        if scale:
            weight = np.ldexp(weight, -scale)
        layout = self.layout = replace(self.layout, weight_exponent=scale)
        n_samples = weight.shape[0]
        # Unweighted fits count rows: exponent 0, and 32-bit classification histograms
        # where no count can reach 2**31.
        if not layout.has_count_channel:
            weight_exponent = 0
        elif scales is None:
            weight_exponent = fixed_point_exponent(weight)
        else:
            weight_exponent = scales.weight_exponent
        self.weight_fixed, self.weight = fixed_point_weights(weight, weight_exponent)
        count = (0,) if layout.has_count_channel else ()
        if layout.is_classification:
            n_total = n_samples if scales is None else scales.n_samples
            small = not layout.has_count_channel and n_total <= COUNT_DTYPE_MAX_ROWS
            self.layout = replace(
                layout,
                exponents=(weight_exponent,) * layout.n_classes + count,
                dtype=COUNT_DTYPE if small else STATS_DTYPE,
            )
            self.centred = None
            if layout.n_outputs > 1:  # each output's one-hot block
                self._row_stats = self._multi_output_class_stats()
            return
        y = np.asarray(self.y, dtype=np.float64)
        if y.ndim == 2:
            self._set_multi_output_stats(y, layout, weight_exponent, count)
            return
        if scales is None:
            centre = regression_centre(y)
            scale = target_exponent(y, centre, binade_sum(self.weight))
        else:
            centre, scale = scales.centre, scales.target_exponent
        self.centred = centred_targets(y, centre, scale)
        weighted_sum = self.weight * self.centred
        sum_exponent = fixed_point_exponent(weighted_sum) if scales is None else scales.sum_exponent
        self.layout = replace(
            layout,
            exponents=(weight_exponent, sum_exponent) + count,
            dtype=STATS_DTYPE,
            centre=centre,
            target_exponent=scale,
        )
        stats = np.empty((n_samples, self.layout.n_channels), dtype=STATS_DTYPE)
        stats[:, 0] = self.weight_fixed
        stats[:, 1] = to_fixed_point(weighted_sum, sum_exponent)
        if layout.has_count_channel:
            stats[:, 2] = 1
        self._row_stats = stats

    def _set_multi_output_stats(self, y, layout, weight_exponent, count):
        """Regression with several outputs (y of shape (n_samples, n_outputs)): each
        output centred on its own median target, all scaled by one power of two (the
        largest any output needs: :func:`multi_output_centres`), each weighted sum a
        channel of its own fixed point (a forest's ``scales`` fix them for all its
        trees). ``centred`` is then (n_samples, n_outputs)."""
        n_outputs = y.shape[1]
        scales = self.scales
        if scales is None:
            centres, scale = multi_output_centres(y, binade_sum(self.weight))
        else:  # a forest's, for all its trees
            centres, scale = scales.centre, scales.target_exponent
        self.centred = np.column_stack(
            [centred_targets(y[:, k], centres[k], scale) for k in range(n_outputs)]
        )
        weighted_sums = self.weight[:, None] * self.centred
        sum_exponents = (
            tuple(fixed_point_exponent(weighted_sums[:, k]) for k in range(n_outputs))
            if scales is None
            else scales.sum_exponent
        )
        self.layout = replace(
            layout,
            n_outputs=n_outputs,
            exponents=(weight_exponent, *sum_exponents) + count,
            dtype=STATS_DTYPE,
            centre=centres,
            target_exponent=scale,
        )
        stats = np.empty((y.shape[0], self.layout.n_channels), dtype=STATS_DTYPE)
        stats[:, 0] = self.weight_fixed
        for k in range(n_outputs):
            stats[:, 1 + k] = to_fixed_point(weighted_sums[:, k], sum_exponents[k])
        if layout.has_count_channel:
            stats[:, -1] = 1
        self._row_stats = stats

    def _multi_output_class_stats(self) -> np.ndarray:
        """Multi-output classification (``y_class`` (n_samples, n_outputs)): each row's
        weight in the channel of its class of every output, and its count."""
        layout = self.layout
        stats = np.zeros((self.n_samples, layout.n_channels), dtype=layout.dtype)
        rows = np.arange(self.n_samples)
        for k, (first, _) in enumerate(layout.output_classes):
            stats[rows, first + self.y_class[:, k]] = self.weight_fixed
        if layout.has_count_channel:
            stats[:, -1] = 1
        return stats

    def centred_output(self, output=None) -> np.ndarray:
        """The centred targets of one output (contiguous, (n_samples,)): ``centred`` itself
        for a single output (``output`` None), its column ``output`` for several."""
        if output is None:
            return self.centred
        return np.ascontiguousarray(self.centred[:, output])

    @property
    def n_roots(self) -> int:
        return 1 if self.root_sizes is None else len(self.root_sizes)

    def root_of_row(self) -> np.ndarray:
        """The root (0 .. n_roots - 1) of each row, int32."""
        if self.root_sizes is None:
            return np.zeros(self.n_samples, dtype=np.int32)
        return np.repeat(np.arange(self.n_roots, dtype=np.int32), self.root_sizes)

    def root_stats(self) -> np.ndarray:
        """The statistics of the roots' rows: shape (n_channels,) for one root (every row:
        :meth:`total_stats`), (n_roots, n_channels) for several (``root_sizes``)."""
        if self.root_sizes is None:
            return self.total_stats()
        # Each root's rows follow the previous root's: sums of consecutive rows (the
        # classification rows' statistics are made for the histograms anyway).
        sizes = np.asarray(self.root_sizes, dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        return np.add.reduceat(self.row_stats, starts, axis=0).astype(self.layout.dtype)

    def total_weight(self) -> float:
        """The rows' total weight in the fit's units, correctly rounded (the same for any
        order of the rows, and from a fit's parts on many machines)."""
        return exact_sum(self.weight)

    @property
    def n_samples(self):
        return self.weight.shape[0]

    def total_stats(self) -> np.ndarray:
        """The statistics vector of all rows (the root's), shape (n_channels,)."""
        layout = self.layout
        if not layout.is_classification or layout.n_outputs > 1:
            return self.row_stats.sum(axis=0).astype(layout.dtype)
        stats = np.zeros(layout.n_channels, dtype=STATS_DTYPE)
        np.add.at(stats, self.y_class, self.weight_fixed)
        if layout.has_count_channel:
            stats[-1] = self.n_samples
        return stats.astype(layout.dtype)

    @property
    def row_stats(self) -> np.ndarray:
        """Integer statistics of each row: shape (n_samples, n_channels)."""
        if self._row_stats is None:  # classification: one-hot weights
            layout = self.layout
            stats = np.empty((self.n_samples, layout.n_channels), dtype=layout.dtype)
            count_channel = layout.n_channels - 1 if layout.has_count_channel else -1
            cpu_row_statistics.one_hot_stats(self.y_class, self.weight_fixed, count_channel, stats)
            self._row_stats = stats
        return self._row_stats


def squared_deviation_buffer(n_nodes, xp=np):
    """The one array both passes of ``kernels/_squared_deviations.py`` write, (6,
    n_nodes) int64: rows 0-2 are float64 (by their bits) for pass 1's largest term,
    lowest and highest centred target (zero, +inf, -inf on entry), rows 3-5 integers for
    pass 2's exponent and high and low sums (zeros). It comes back in one copy."""
    buffer = xp.zeros((6, n_nodes), dtype=np.int64)
    extremes = buffer[:3].view(np.float64)
    extremes[1], extremes[2] = np.inf, -np.inf
    return buffer


def squared_deviation_rows(buffer):
    """The rows of a :func:`squared_deviation_buffer` the passes take: pass 1's (largest,
    lowest, highest) and pass 2's (largest, exponent, high, low)."""
    largest, lowest, highest = buffer[:3].view(np.float64)
    return (largest, lowest, highest), (largest, buffer[3], buffer[4], buffer[5])


def squared_deviation_passes(n_nodes, largest_pass, sum_pass, xp=np, buffer=None):
    """Run the two passes of ``kernels/_squared_deviations.py`` for ``n_nodes`` nodes;
    returns their :func:`squared_deviation_buffer`, on the device.

    ``largest_pass(largest, lowest, highest)`` and ``sum_pass(largest, exponent, high,
    low)`` write its rows; a ``buffer`` given holds pass 1's results already (the CUDA
    partition ran it), and pass 1 is skipped.
    """
    if buffer is None:
        buffer = squared_deviation_buffer(n_nodes, xp)
        largest_pass(*squared_deviation_rows(buffer)[0])
    sum_pass(*squared_deviation_rows(buffer)[1])
    return buffer


def squared_deviations_from(buffer):
    """Sum of w * (d - mean)**2 over each node's rows (float64, on the host) from a
    :func:`squared_deviation_buffer` brought back: 0 for a node whose targets are all
    equal."""
    _, lowest, highest = buffer[:3].view(np.float64)
    exponent, high, low = buffer[3:]
    sums = cpu_row_statistics.combine_squared_deviation_parts(high, low, exponent)
    return np.where(lowest < highest, sums, 0.0)


def squared_deviation_sums(n_nodes, largest_pass, sum_pass, xp=np, buffer=None):
    """:func:`squared_deviation_passes`, brought back at once (one copy):
    :func:`squared_deviations_from` the buffer."""
    buffer = squared_deviation_passes(n_nodes, largest_pass, sum_pass, xp, buffer)
    return squared_deviations_from(device_to_host(buffer))


class PendingCopy:
    """Values computed on the device whose copy back waits to share one: the backend's
    next copy back brings every pending array along (:meth:`receive`); :meth:`get` asks
    for one itself if none has come yet.

    ``array``: the device array (int64); ``finish``: host array -> the values;
    ``copy_back``: the backend's call that copies every pending array back.
    """

    def __init__(self, array, finish, copy_back):
        self.array = array
        self._finish = finish
        self._copy_back = copy_back
        self._values = None

    def receive(self, host_array):
        self._values = self._finish(host_array)

    def get(self):
        if self._values is None:
            self._copy_back()
        return self._values


def category_tables(category_sets, n_nodes):
    """Categorical subset splits as the partition kernels read them.

    Parameters
    ----------
    category_sets : None or tuple (is_subset, words)
        ``is_subset`` (n_nodes,) bool: the nodes split on a category subset; ``words``
        (n_nodes, n_words): the bitset of the codes each such node sends left.
    n_nodes : int

    Returns
    -------
    offset : ndarray of shape (n_nodes,), int64
        Where each node's words start in ``words`` (-1: not a subset split).
    words : ndarray of shape (n_nodes * n_words,) (at least 1), int64
    """
    if category_sets is None:
        return np.full(n_nodes, -1, dtype=np.int64), np.zeros(1, dtype=BITSET_WORD_DTYPE)
    is_subset, words = category_sets
    words = np.asarray(words, dtype=BITSET_WORD_DTYPE)
    offsets = np.where(is_subset, np.arange(n_nodes) * words.shape[1], -1).astype(np.int64)
    return offsets, np.ascontiguousarray(words).ravel()


class RowPartition:
    """The CPU backends' rows: node -> slice ``start[node]:end[node]`` of
    ``sample_indices``, split in place (a node's children take consecutive slices of its
    own), so that a histogram pass reads only the rows of the nodes asked for."""

    def __init__(self, n_samples: int, root_sizes=None):
        self.sample_indices = np.arange(n_samples, dtype=np.int64)
        self._scratch = np.empty(n_samples, dtype=np.int64)
        # Node r < n_roots is a root, holding the r-th group of rows (RowData.root_sizes).
        sizes = np.array([n_samples] if root_sizes is None else root_sizes, dtype=np.int64)
        self.end = np.cumsum(sizes)
        self.start = self.end - sizes

    def rows(self, node) -> np.ndarray:
        """The rows of one node (a view of ``sample_indices``)."""
        return self.sample_indices[self.start[node] : self.end[node]]

    def node_sizes(self, nodes) -> np.ndarray:
        """Rows in each of ``nodes``."""
        return self.end[nodes] - self.start[nodes]

    def reserve(self, n_nodes):
        """Make room for node ids below ``n_nodes``."""
        if n_nodes > self.start.size:
            size = max(n_nodes, 2 * self.start.size)
            self.start = np.resize(self.start, size)
            self.end = np.resize(self.end, size)

    def split(
        self,
        columns,
        nodes,
        feature,
        threshold,
        missing_left,
        missing_code,
        left_children,
        right_children,
        category_sets=None,
    ):
        """Split each node's slice in two (rows going left first, each side in its old
        order); returns the rows sent left, per node."""
        nodes = np.asarray(nodes, dtype=np.int64)
        category_offset, category_words = category_tables(category_sets, nodes.size)
        n_left = cpu_partition.partition_rows(
            columns,
            self.sample_indices,
            self.start[nodes],
            self.end[nodes],
            np.asarray(feature, dtype=np.int64),
            threshold,
            np.asarray(missing_left, dtype=np.uint8),
            missing_code,
            category_offset,
            category_words,
            self._scratch,
        )
        self.reserve(int(max(np.max(left_children), np.max(right_children))) + 1)
        middle = self.start[nodes] + n_left
        self.start[left_children] = self.start[nodes]
        self.end[left_children] = middle
        self.start[right_children] = middle
        self.end[right_children] = self.end[nodes]
        return n_left

    def split_multiway(
        self, columns, nodes, feature, branch_of_code, default_branch, missing_code, children
    ):
        """Split each node k into the consecutive children ``children[k]`` (a list of id
        arrays) by its category table; returns the rows of each child, per node."""
        nodes = np.asarray(nodes, dtype=np.int64)
        branch_sizes = np.zeros((nodes.size, max(len(c) for c in children)), dtype=np.int64)
        cpu_partition.partition_rows_multiway(
            columns,
            self.sample_indices,
            self.start[nodes],
            self.end[nodes],
            np.asarray(feature, dtype=np.int64),
            branch_of_code,
            default_branch,
            missing_code,
            self._scratch,
            branch_sizes,
        )
        ids = np.concatenate(children)
        self.reserve(int(ids.max()) + 1)
        n_branches = np.fromiter(map(len, children), dtype=np.int64, count=nodes.size)
        branch = np.arange(branch_sizes.shape[1])[None, :] < n_branches[:, None]
        ends = self.start[nodes][:, None] + np.cumsum(branch_sizes, axis=1)
        self.start[ids] = (ends - branch_sizes)[branch]
        self.end[ids] = ends[branch]
        return [sizes[:n] for sizes, n in zip(branch_sizes, n_branches.tolist(), strict=True)]


__all__ = [
    "RowData",
    "RowScales",
    "fixed_point_weights",
    "forest_row_scales",
    "compact_from_dense",
    "PendingCopy",
    "RowPartition",
    "category_tables",
    "squared_deviation_buffer",
    "squared_deviation_passes",
    "squared_deviation_rows",
    "squared_deviation_sums",
    "squared_deviations_from",
]
