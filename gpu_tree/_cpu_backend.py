"""CPU backends: numpy arrays, hot loops in :mod:`gpu_tree.kernels.cpu`.

The grower talks to a backend through four calls:

- ``root_stats()``: the statistics vector of all rows;
- ``candidates(nodes)``: histograms of those nodes plus the values bounding each bin
  (used to place thresholds);
- ``subtract(parent_hist, child_hist)``: a sibling's histogram, where supported;
- ``partition(nodes, feature, bin, threshold, left_nodes, right_nodes)``: route rows.

Rows of a node are a contiguous slice of ``sample_indices``; splitting a node
partitions its slice in place, so a histogram pass reads only the rows of the nodes
asked for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ._criteria import StatsLayout
from .kernels import cpu as cpu_kernels


@dataclass
class RowData:
    """What each row contributes to a histogram.

    Classification: ``y_class`` (int) and ``weight``; regression: dense ``row_stats``.
    ``row_stats`` (n_samples, n_channels) is always available (built on first use for
    classification: one-hot weights) because exact mode sums dense statistics.
    """

    layout: StatsLayout
    weight: np.ndarray
    y_class: np.ndarray | None = None
    y: np.ndarray | None = None
    _row_stats: np.ndarray | None = None

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

    def split(self, columns, nodes, feature, threshold, left_nodes, right_nodes):
        nodes = np.asarray(nodes, dtype=np.int64)
        n_left = cpu_kernels.partition_rows(
            columns,
            self.sample_indices,
            self.start[nodes],
            self.end[nodes],
            np.asarray(feature, dtype=np.int64),
            threshold,
            self._scratch,
        )
        self._ensure(int(max(np.max(left_nodes), np.max(right_nodes))) + 1)
        middle = self.start[nodes] + n_left
        self.start[left_nodes] = self.start[nodes]
        self.end[left_nodes] = middle
        self.start[right_nodes] = middle
        self.end[right_nodes] = self.end[nodes]
        return n_left


class CPUHistogramBackend:
    """Histogram mode on the CPU: binned features, sibling histograms by subtraction."""

    xp = np
    supports_subtraction = True

    def __init__(self, X_binned, bin_lower, bin_upper, rows: RowData):
        self.X_binned = X_binned
        self.n_bins = bin_lower.shape[1]
        self.bin_lower = bin_lower
        self.bin_upper = bin_upper
        self.rows = rows
        self.partition_state = _RowPartition(rows.n_samples)

    def root_stats(self):
        return self.rows.total_stats()

    def candidates(self, nodes, out=None):
        """Histograms (n_nodes, n_features, n_bins, n_channels) and the bins' value bounds.

        With ``out`` the histograms are written there and only the bounds are returned.
        """
        nodes = np.asarray(nodes, dtype=np.int64)
        layout = self.rows.layout
        n_features = self.X_binned.shape[0]
        if out is None:
            hist = np.zeros((nodes.size, n_features, self.n_bins, layout.n_channels))
        else:
            hist = out
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

    @staticmethod
    def subtract(hist, parent_rows, child_hist, out):
        """out = hist[parent_rows] - child_hist: the larger siblings' histograms."""
        np.take(hist, parent_rows, axis=0, out=out)
        out -= child_hist

    def partition(self, nodes, feature, bin_threshold, threshold, left_nodes, right_nodes):
        return self.partition_state.split(
            self.X_binned,
            nodes,
            feature,
            np.asarray(bin_threshold, dtype=np.int64),
            left_nodes,
            right_nodes,
        )


class CPUExactBackend:
    """Exact mode (seed 000, Algorithm 19.2): every midpoint between distinct node values.

    Each node's "bins" are its own sorted distinct values per feature, so the shared split
    selection sees every midpoint; thresholds and partitions use raw values.
    """

    xp = np
    supports_subtraction = False

    def __init__(self, X, rows: RowData):
        # Feature-major copy so a node's column reads are contiguous.
        self.X_columns = np.ascontiguousarray(X.T, dtype=np.float64)
        self.rows = rows
        self.partition_state = _RowPartition(rows.n_samples)

    def root_stats(self):
        return self.rows.total_stats()

    def candidates(self, nodes):
        layout = self.rows.layout
        n_features = self.X_columns.shape[0]
        parts = []
        width = 1
        for node in np.asarray(nodes, dtype=np.int64):
            rows = self.partition_state.sample_indices[
                self.partition_state.start[node] : self.partition_state.end[node]
            ]
            node_width = max(1, rows.size)
            hist = np.zeros((n_features, node_width, layout.n_channels))
            values = np.full((n_features, node_width), np.inf)
            n_distinct = cpu_kernels.exact_node_histogram(
                self.X_columns, rows, self.rows.row_stats, hist, values
            )
            used = max(1, int(n_distinct.max(initial=1)))
            parts.append((hist[:, :used], values[:, :used]))
            width = max(width, used)
        hist = np.zeros((len(parts), n_features, width, layout.n_channels))
        values = np.full((len(parts), n_features, width), np.inf)
        for k, (h, v) in enumerate(parts):
            hist[k, :, : h.shape[1]] = h
            values[k, :, : v.shape[1]] = v
        return hist, values, values

    def partition(self, nodes, feature, bin_threshold, threshold, left_nodes, right_nodes):
        return self.partition_state.split(
            self.X_columns,
            nodes,
            feature,
            np.asarray(threshold, dtype=np.float64),
            left_nodes,
            right_nodes,
        )
