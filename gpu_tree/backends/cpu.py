"""CPU backends: numpy arrays, hot loops in :mod:`gpu_tree.kernels.cpu`.

The grower talks to a backend through a handful of calls:

- ``root_stats()``: the statistics vector of all rows;
- ``node_rows(nodes)``: how many rows each node holds;
- ``candidates(nodes, out)``: dense histograms (every bin) of those nodes, plus the
  values bounding each bin (used to place thresholds); histogram mode only;
- ``subtract(hist, parent_rows, child_hist, out)``: siblings' histograms by subtraction;
- ``compact_candidates(nodes)``: per node and feature, one slot per distinct value (exact
  mode) or bin code (histogram mode, for nodes with fewer rows than ``small_node_rows``)
  among the node's rows, with each slot's value bounds and bin code;
- ``partition(nodes, feature, bin, threshold, left_nodes, right_nodes)``: route rows.

Rows of a node are a contiguous slice of ``sample_indices``; splitting a node
partitions its slice in place, so a histogram pass reads only the rows of the nodes
asked for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from gpu_tree.data.stats import StatsLayout, round_to_exact_sum_grid
from gpu_tree.kernels import cpu as cpu_kernels


@dataclass
class RowData:
    """What each row contributes to a histogram.

    Classification: ``y_class`` (int) and ``weight``; regression: dense ``row_stats``.
    ``row_stats`` (n_samples, n_channels) is always available (built on first use for
    classification: one-hot weights) because exact mode sums dense statistics. Weights
    and regression statistics are put on exact-sum grids (:func:`round_to_exact_sum_grid`)
    when the rows are given, so that no sum depends on its order.
    """

    layout: StatsLayout
    weight: np.ndarray
    y_class: np.ndarray | None = None
    y: np.ndarray | None = None
    _row_stats: np.ndarray | None = None

    def __post_init__(self):
        self.weight = round_to_exact_sum_grid(self.weight)

    @property
    def n_samples(self):
        return self.weight.shape[0]

    def total_stats(self) -> np.ndarray:
        """The statistics vector of all rows (the root's)."""
        layout = self.layout
        if not layout.is_classification:
            return self.row_stats.sum(axis=0)
        stats = np.zeros(layout.n_channels)
        stats[: layout.n_classes] = np.bincount(
            self.y_class, weights=self.weight, minlength=layout.n_classes
        )
        if layout.has_count_channel:
            stats[-1] = self.n_samples
        return stats

    @property
    def row_stats(self) -> np.ndarray:
        if self._row_stats is None:
            layout = self.layout
            stats = np.zeros((self.n_samples, layout.n_channels))
            if layout.is_classification:
                stats[np.arange(self.n_samples), self.y_class] = self.weight
            else:
                stats[:, 0] = self.weight
                stats[:, 1] = self.weight * self.y
                stats[:, 2] = self.weight * self.y * self.y
                stats[:, :3] = round_to_exact_sum_grid(stats[:, :3])
            if layout.has_count_channel:
                stats[:, -1] = 1.0
            self._row_stats = stats
        return self._row_stats


class _RowPartition:
    """Node -> slice of ``sample_indices``, split in place."""

    def __init__(self, n_samples: int):
        self.sample_indices = np.arange(n_samples, dtype=np.int64)
        self._scratch = np.empty(n_samples, dtype=np.int64)
        self.start = np.zeros(1, dtype=np.int64)
        self.end = np.full(1, n_samples, dtype=np.int64)

    def _ensure(self, n_nodes):
        if n_nodes > self.start.size:
            size = max(n_nodes, 2 * self.start.size)
            self.start = np.resize(self.start, size)
            self.end = np.resize(self.end, size)

    def split(self, columns, nodes, feature, threshold, missing_left, missing_code, left_nodes,
              right_nodes, category_sets=None):  # fmt: skip
        nodes = np.asarray(nodes, dtype=np.int64)
        category_offset, category_words = _category_tables(category_sets, nodes.size)
        n_left = cpu_kernels.partition_rows(
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
        self._ensure(int(max(np.max(left_nodes), np.max(right_nodes))) + 1)
        middle = self.start[nodes] + n_left
        self.start[left_nodes] = self.start[nodes]
        self.end[left_nodes] = middle
        self.start[right_nodes] = middle
        self.end[right_nodes] = self.end[nodes]
        return n_left

    def split_multiway(self, columns, nodes, feature, branch_of_code, default_branch,
                       missing_code, children):  # fmt: skip
        """Split each node k into the consecutive children ``children[k]`` (a list of id
        arrays) by its category table; returns the rows of each child, per node."""
        nodes = np.asarray(nodes, dtype=np.int64)
        branch_rows = np.zeros((nodes.size, max(len(c) for c in children)), dtype=np.int64)
        cpu_kernels.partition_rows_multiway(
            columns, self.sample_indices, self.start[nodes], self.end[nodes],
            np.asarray(feature, dtype=np.int64), branch_of_code, default_branch, missing_code,
            self._scratch, branch_rows,
        )  # fmt: skip
        self._ensure(int(max(c.max() for c in children)) + 1)
        counts = []
        for k, node in enumerate(nodes):
            ids = children[k]
            rows = branch_rows[k, : ids.size]
            first = self.start[node] + np.concatenate([[0], np.cumsum(rows)[:-1]])
            self.start[ids] = first
            self.end[ids] = first + rows
            counts.append(rows)
        return counts


def _category_tables(category_sets, n_nodes):
    """(per node: offset of its category words or -1, the words) for the partition kernels.

    ``category_sets``: None, or a pair (is_subset (n_nodes,) bool, words (n_nodes, n_words)).
    """
    if category_sets is None:
        return np.full(n_nodes, -1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    is_subset, words = category_sets
    words = np.asarray(words, dtype=np.int64)
    offsets = np.where(is_subset, np.arange(n_nodes) * words.shape[1], -1).astype(np.int64)
    return offsets, np.ascontiguousarray(words).ravel()


class _CPUBackend:
    """What both CPU modes share: rows partitioned per node, compact histograms."""

    xp = np

    def __init__(self, columns, rows: RowData):
        self.columns = columns  # feature-major: bin codes or raw values
        self.rows = rows
        self.partition_state = _RowPartition(rows.n_samples)

    def root_stats(self):
        return self.rows.total_stats()

    def node_rows(self, nodes):
        state = self.partition_state
        return state.end[nodes] - state.start[nodes]

    def partition_multiway(self, nodes, feature, child_of_code, default_child, children):
        """Route the rows of multiway ``nodes`` to their children (``children[k]``: node
        k's consecutive child ids; ``child_of_code`` (n_nodes, n_codes) holds child ids,
        ``default_child`` the child of missing values). Returns rows per child, per node."""
        first = np.array([c[0] for c in children], dtype=np.int64)
        return self.partition_state.split_multiway(
            self.columns, nodes, feature, np.asarray(child_of_code) - first[:, None],
            np.asarray(default_child) - first, self.missing_code, children,
        )  # fmt: skip

    def _compact_histograms(self, nodes):
        """Distinct column values of each node's rows: hist (n, F, width, C), values
        (n, F, width), and the statistics of rows missing each feature (n, F, C)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        state = self.partition_state
        start, end = state.start[nodes], state.end[nodes]
        width = max(1, int((end - start).max(initial=1)))
        n_features = self.columns.shape[0]
        n_channels = self.rows.layout.n_channels
        hist = np.zeros((nodes.size, n_features, width, n_channels))
        values = np.full((nodes.size, n_features, width), np.inf)
        missing = np.zeros((nodes.size, n_features, n_channels))
        cpu_kernels.compact_histograms(
            self.columns, state.sample_indices, start, end, self.rows.row_stats,
            self.missing_code, hist, values, missing,
        )  # fmt: skip
        used = max(1, int(np.isfinite(values).sum(axis=2).max(initial=1)))
        return hist[:, :, :used], values[:, :, :used], missing


class CPUHistogramBackend(_CPUBackend):
    """Histogram mode on the CPU: binned features, sibling histograms by subtraction."""

    supports_subtraction = True

    def __init__(self, X_binned, bin_lower, bin_upper, rows: RowData, missing_bin: int = -1):
        super().__init__(X_binned, rows)
        # Missing values' bin code, the last bin of every feature (-1: no missing values).
        self.missing_bin = missing_bin
        self.missing_code = int(missing_bin)  # an integer compare against the codes
        self.X_binned = X_binned
        self.n_bins = bin_lower.shape[1]
        self.bin_lower = bin_lower
        self.bin_upper = bin_upper
        # A node with fewer rows than bins fills few of them: a compact histogram (one
        # slot per bin code present) costs its rows, a dense one costs n_bins.
        self.small_node_rows = self.n_bins

    def candidates(self, nodes, out=None):
        """Histograms (n_nodes, n_features, n_bins, n_channels) and the bins' value bounds.

        With ``out`` the histograms are written there and only the bounds are returned.
        """
        nodes = np.asarray(nodes, dtype=np.int64)
        layout = self.rows.layout
        hist = self.empty_histograms(nodes.size) if out is None else out
        hist.fill(0.0)
        start = self.partition_state.start[nodes]
        end = self.partition_state.end[nodes]
        if layout.is_classification:
            count_channel = layout.n_channels - 1 if layout.has_count_channel else -1
            cpu_kernels.histograms_classification(
                self.X_binned,
                self.partition_state.sample_indices,
                start,
                end,
                self.rows.y_class,
                self.rows.weight,
                not layout.has_count_channel,  # unweighted: every weight is 1
                count_channel,
                numba.get_num_threads(),
                hist,
            )
        else:
            cpu_kernels.histograms_dense(
                self.X_binned,
                self.partition_state.sample_indices,
                start,
                end,
                self.rows.row_stats,
                numba.get_num_threads(),
                hist,
            )
        if out is not None:
            return self.bin_lower[None], self.bin_upper[None]
        return hist, self.bin_lower[None], self.bin_upper[None]

    def empty_histograms(self, n_nodes):
        """Uninitialised dense histograms for ``n_nodes`` nodes (filled by the caller)."""
        shape = (n_nodes, self.X_binned.shape[0], self.n_bins, self.rows.layout.n_channels)
        return np.empty(shape)

    @staticmethod
    def subtract(hist, parent_rows, child_hist, out):
        """out = hist[parent_rows] - child_hist: the larger siblings' histograms."""
        np.take(hist, parent_rows, axis=0, out=out)
        out -= child_hist

    def compact_candidates(self, nodes):
        """Compact histograms over the bin codes present in each node.

        Returns hist (n, F, width, C), the value bounds of each slot's bin, each slot's
        bin code (-1 past the codes present) and the missing values' statistics (n, F, C).
        """
        nodes = np.asarray(nodes, dtype=np.int64)
        state = self.partition_state
        start, end = state.start[nodes], state.end[nodes]
        n_features = self.X_binned.shape[0]
        # A node holds at most min(rows, bins) distinct codes.
        width = max(1, min(int((end - start).max(initial=1)), self.n_bins))
        n_channels = self.rows.layout.n_channels
        hist = np.zeros((nodes.size, n_features, width, n_channels))
        code = np.empty((nodes.size, n_features, width), dtype=np.int64)
        lower = np.empty((nodes.size, n_features, width))
        upper = np.empty((nodes.size, n_features, width))
        missing = np.zeros((nodes.size, n_features, n_channels))
        cpu_kernels.compact_code_histograms(
            self.X_binned, state.sample_indices, start, end, self.rows.row_stats,
            self.missing_bin, self.bin_lower, self.bin_upper, hist, code, lower, upper, missing,
        )  # fmt: skip
        return hist, lower, upper, code, missing

    def partition(self, nodes, feature, bin_threshold, threshold, missing_left, left_nodes,
                  right_nodes, category_sets=None):  # fmt: skip
        return self.partition_state.split(
            self.X_binned, nodes, feature, np.asarray(bin_threshold, dtype=np.int64),
            missing_left, self.missing_code, left_nodes, right_nodes, category_sets,
        )  # fmt: skip


class CPUExactBackend(_CPUBackend):
    """Exact mode (seed 000, Algorithm 19.2): every midpoint between distinct node values.

    Each node's "bins" are its own sorted distinct values per feature, so the shared split
    selection sees every midpoint; thresholds and partitions use raw values.
    """

    supports_subtraction = False
    small_node_rows = None  # every node is searched on its own values
    missing_bin = -1  # no bins: missing raw values are NaN
    missing_code = np.nan

    def __init__(self, X, rows: RowData):
        # Feature-major copy so a node's column reads are contiguous.
        super().__init__(np.ascontiguousarray(X.T, dtype=np.float64), rows)

    def compact_candidates(self, nodes):
        hist, values, missing = self._compact_histograms(nodes)
        return hist, values, values, None, missing

    def partition(self, nodes, feature, bin_threshold, threshold, missing_left, left_nodes,
                  right_nodes, category_sets=None):  # fmt: skip
        return self.partition_state.split(
            self.columns, nodes, feature, np.asarray(threshold, dtype=np.float64),
            missing_left, self.missing_code, left_nodes, right_nodes, category_sets,
        )  # fmt: skip
