"""Histogram search on the CPU from a sparse X's bin codes (:class:`SparseCodes`).

The dense CPU backend with four differences:

- a node's histograms read its rows' stored values only, each feature's zero bin filled
  from the node's totals by subtraction (``kernels/cpu/sparse.py``): a pass costs what the
  stored values cost, plus one subtraction per (node, feature);
- a split routes its rows on their codes of the split feature, found by a binary search
  of each row's stored columns, then partitions them as the dense backend does;
- every node's histograms are dense (no compact histograms of small nodes and no compiled
  subtree finisher: both read dense codes), so a deep tree costs a histogram per node.
- a search on a node's rows (the absolute-error criterion's) reads a dense block of those
  rows' codes of the searched features, filled from their stored values (``row_columns``).
"""

from __future__ import annotations

import dataclasses

import numba
import numpy as np

from gpu_tree.backends.contract import DenseHistograms
from gpu_tree.backends.cpu import CPUHistogramBackend
from gpu_tree.backends.rows import RowData
from gpu_tree.data.binning import SparseCodes
from gpu_tree.kernels.cpu import sparse as sparse_kernels

__all__ = ["CPUSparseHistogramBackend"]


class CPUSparseHistogramBackend(CPUHistogramBackend):
    """Histogram search on the CPU over a sparse X's CSR bin codes."""

    # The subtree finisher and compact histograms read dense codes: every node gets
    # dense histograms, grown level by level.
    capabilities = dataclasses.replace(CPUHistogramBackend.capabilities, subtree_finisher=False)

    def __init__(
        self, codes: SparseCodes, bin_lower, bin_upper, row_data: RowData, missing_bin: int = -1
    ):
        super().__init__(codes, bin_lower, bin_upper, row_data, missing_bin)
        self.small_node_size = 0  # never compact histograms
        # The split feature's code of each row being routed (one array: a row is in one node).
        self._split_codes = np.empty(codes.n_samples, dtype=codes.codes.dtype)

    def _rows_of(self, nodes):
        """The CSR codes and the rows of ``nodes``, as the sparse kernels take them."""
        partition, codes = self.row_partition, self.X_binned
        return (
            codes.indptr,
            codes.indices,
            codes.codes,
            codes.zero_code,
            partition.sample_indices,
            partition.start[nodes],
            partition.end[nodes],
        )

    def histograms(self, nodes, out=None, features=None) -> DenseHistograms:
        nodes = np.asarray(nodes, dtype=np.int64)
        features = self._listed_features(features)
        if out is None:  # the kernel zeroes it
            out = self.empty_histograms(nodes.size, features.shape[1])
        self._count_built(nodes)
        sparse_kernels.sparse_histograms(
            *self._rows_of(nodes),
            features,
            self.row_data.row_stats,
            numba.get_num_threads(),
            out,
        )
        return DenseHistograms(out, self.bin_lower[None], self.bin_upper[None])

    def row_columns(self, rows, features) -> np.ndarray:
        """The codes of ``features`` (distinct) at ``rows``: (features.size, rows.size),
        filled from the rows' stored values (the zero bin elsewhere), as the dense
        backend's slice of its codes."""
        codes = self.X_binned
        out = np.empty((features.size, rows.size), dtype=codes.codes.dtype)
        sparse_kernels.row_codes(
            codes.indptr, codes.indices, codes.codes, codes.zero_code, rows, features, out
        )
        return out

    def compact_histograms(self, nodes):
        raise NotImplementedError("sparse codes: every node's histograms are dense")

    def _routing_columns(self, nodes, feature):
        """A one-row code matrix holding, for each row of ``nodes``, its code of its node's
        split feature (a row is in one node), and the row (0) every node reads."""
        nodes = np.asarray(nodes, dtype=np.int64)
        sparse_kernels.split_feature_codes(
            *self._rows_of(nodes), np.asarray(feature, dtype=np.int64), self._split_codes
        )
        return self._split_codes[None], np.zeros(nodes.size, dtype=np.int64)
