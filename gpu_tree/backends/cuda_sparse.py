"""Histogram search on an NVIDIA GPU (or the simulator) from a sparse X's bin codes
(:class:`~gpu_tree.data.binning.SparseCodes`).

The CUDA backend with three differences, as the CPU's sparse backend has
(:mod:`gpu_tree.backends.cpu_sparse`):

- the codes stay in their CSR layout on the device (row pointers, column indices and one
  code per stored value): they cost what the stored values cost, never n_samples x
  n_features;
- a level's histograms read its rows' stored values only (one thread per row), each
  feature's zero bin filled from the node's totals by subtraction, as LightGBM and
  XGBoost do: a pass costs what the stored values cost, plus one subtraction per (node,
  feature, channel);
- a split routes its rows on their codes of the split feature, each found by a binary
  search of the row's stored columns, then partitions them as the dense backend does.

Trees are the CPU's and the dense X's, bit for bit: the statistics are the same integers.
"""

from __future__ import annotations

import numpy as np

from gpu_tree.backends.cuda import CUDAHistogramBackend
from gpu_tree.data.binning import SparseCodes
from gpu_tree.utils.device_copies import host_to_device

__all__ = ["CUDASparseHistogramBackend"]


class CUDASparseHistogramBackend(CUDAHistogramBackend):
    """Histogram search on an NVIDIA GPU over a sparse X's CSR bin codes; implements
    :class:`gpu_tree.backends.contract.DenseHistogramBackend`."""

    def __init__(
        self, codes: SparseCodes, bin_lower, bin_upper, row_data, xp, missing_bin=-1, timer=None
    ):
        super().__init__(codes, bin_lower, bin_upper, row_data, xp, missing_bin, timer)
        # The split feature's code of each row being routed (one row: a row is in one node).
        self._split_codes = xp.empty((1, self.n_samples), dtype=codes.codes.dtype)
        self._features = xp.arange(self.n_features)

    def _codes_on_device(self, codes: SparseCodes) -> SparseCodes:
        """The CSR codes on the device, each array copied once: row pointers (int64),
        column indices (int32: half the bytes of a stored value's), codes and the zero
        bins."""
        xp = self.xp
        parts = (
            codes.indptr.astype(np.int64),
            codes.indices.astype(np.int32),
            codes.codes,
            codes.zero_code.astype(np.int64),
        )
        return SparseCodes(
            *(host_to_device(np.ascontiguousarray(p), xp) for p in parts), codes.n_samples
        )

    def _launch_histograms(self, row_list, hist_slot_of_node, n_hist_slots, hist):
        """The stored values' histograms in one launch, then each feature's zero bin: the
        node's totals less every other bin of the feature (an explicitly stored 0 is
        counted once, in the zero bin, as the CPU's sparse kernel counts it)."""
        xp, kernels, codes = self.xp, self.kernels, self.X_binned
        n_channels = self.row_data.layout.n_channels
        totals = xp.zeros((n_hist_slots, n_channels), dtype=hist.dtype)
        self._launch(
            kernels.sparse.sparse_histograms,
            kernels.launch.launch_config(row_list.shape[0]),
            codes.indptr,
            codes.indices,
            codes.codes,
            row_list,
            *self._row_statistics(hist_slot_of_node),
            hist.reshape(-1),
            totals.reshape(-1),
            self.n_features,
            self.n_bins,
            n_channels,
        )
        zero_bins = (slice(None), self._features, codes.zero_code)
        rest = hist.sum(axis=2, dtype=hist.dtype) - hist[zero_bins]
        hist[zero_bins] = totals[:, None, :] - rest

    def _routing_codes(self, split_feature):
        """Each routed row's code of its node's split feature, found in its stored values
        (one launch), as a one-row code matrix that every split node reads (row 0)."""
        codes = self.X_binned
        self._launch(
            self.kernels.sparse.split_feature_codes,
            self.kernels.launch.launch_config(self.n_samples),
            codes.indptr,
            codes.indices,
            codes.codes,
            codes.zero_code,
            self.node_of_row,
            split_feature,
            self._split_codes,
        )
        return self._split_codes, self.xp.minimum(split_feature, 0)

    def absolute_error_codes(self):
        """The CSR codes, which the absolute-error search reads row by row (a binary
        search of each row's stored columns), and a stand-in for dense codes."""
        codes = self.X_binned
        stand_in = self.xp.zeros((1, 1), dtype=codes.codes.dtype)
        return (stand_in, True, codes.indptr, codes.indices, codes.codes, codes.zero_code)

    def partition_multiway(self, *args, **kwargs):
        raise NotImplementedError(
            "multiway splits are categorical: a sparse X has numeric features only"
        )
