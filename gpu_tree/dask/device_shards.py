"""What runs on a GPU worker (dask-cuda: one worker per GPU): a shard whose backend is
the CUDA backend (:class:`~gpu_tree.backends.cuda.CUDAHistogramBackend`) over its rows.

The same operations as :mod:`gpu_tree.dask.shards`, on the shard's dictionary rather
than its key, with the same results: the CUDA backend's integer histograms and exact
squared-deviation parts are those of the CPU backend over the same rows, in any order.
Rows stay on the device (its node id of each row); only results travel, as host numpy
arrays: histograms come back to be summed by the client's tree reduction.

Under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) the arrays are numpy ones and
the same kernels run on the CPU, which is how CI checks this path without a GPU.
"""

from __future__ import annotations

import numpy as np

from gpu_tree.backends.contract import BinnedData
from gpu_tree.backends.cuda import check_device_memory, cuda_status, current_stream
from gpu_tree.backends.factory import make_backend
from gpu_tree.backends.rows import compact_from_dense
from gpu_tree.utils.device_copies import device_to_host, host_to_device


def build(shard, X, rows, mapper):
    """:func:`gpu_tree.dask.shards.build` on the device: bin the shard's rows ``X``
    there with the fit's global edges and make its CUDA backend over ``rows`` (their
    RowData)
    (``shard["backend"]``, ``shard["device"] = "cuda"``); returns its bin bounds
    (n_features, n_bins), the root statistics and the layout its RowData chose."""
    usable, reason, xp = cuda_status()
    if not usable:
        raise RuntimeError(f"a GPU worker of a device='cuda' fit cannot run CUDA: {reason}")
    check_device_memory(X, mapper, rows.layout, xp)
    X_binned, lower, upper = mapper.transform_on_device(
        host_to_device(X, xp), xp, current_stream(xp)
    )
    binned = BinnedData(X_binned, lower, upper, mapper.missing_bin_)
    shard["backend"] = make_backend(binned, rows, device="cuda")
    shard["device"] = "cuda"
    return lower, upper, rows.total_stats(), rows.layout


def histograms(shard, nodes):
    """Dense histograms of ``nodes`` over this shard's rows, on the host:
    (n_nodes, n_features, n_bins, n_channels) of the layout's integer type."""
    backend = shard["backend"]
    return device_to_host(backend.histograms(np.asarray(nodes, dtype=np.int64)).hist)


def compact_histograms(shard, nodes):
    """This shard's compact histograms as (hist, code, missing), as
    :func:`gpu_tree.dask.shards.compact_histograms` returns them: the CUDA backend
    builds dense histograms only, whose bins with rows are the codes present."""
    backend = shard["backend"]
    nodes = np.asarray(nodes, dtype=np.int64)
    dense = histograms(shard, nodes)
    # As wide as the CPU backend's: a node holds at most min(rows, bins) distinct codes.
    width = max(1, min(int(backend.node_sizes(nodes).max(initial=1)), backend.n_bins))
    return compact_from_dense(dense, backend.missing_bin, width)


def squared_deviation_extremes(shard, nodes, means):
    """Pass 1 of ``kernels/_squared_deviations.py`` over this shard's rows: (largest
    term, lowest and highest centred target) of each node, float64 on the host."""
    return shard["backend"].largest_squared_deviations(nodes, means)


def squared_deviation_parts(shard, nodes, means, largest):
    """Pass 2 given the global largest terms: (exponent, high, low), int64 on the host."""
    return shard["backend"].squared_deviation_parts(nodes, means, largest)


def partition(shard, nodes, feature, bin_threshold, missing_left, left, right, category_sets):
    """Route this shard's rows (bin codes <= ``bin_threshold`` left, missing values where
    ``missing_left`` says, categorical subsets by ``category_sets``); returns the rows
    sent left per node, int64."""
    backend = shard["backend"]
    left = np.asarray(left, dtype=np.int64)
    backend.partition(
        np.asarray(nodes, dtype=np.int64),
        np.asarray(feature, dtype=np.int64),
        np.asarray(bin_threshold, dtype=np.int64),
        None,  # the real thresholds: histogram search routes by bin code alone
        missing_left,
        left,
        np.asarray(right, dtype=np.int64),
        category_sets,
    )  # no sizes: each child's rows here are counted on the device
    return backend.node_sizes(left)


def partition_multiway(shard, nodes, feature, branch_of_code, default_branch, children):
    """Route this shard's rows into each node's consecutive ``children`` (a list of id
    arrays) by branch (``branch_of_code``, ``default_branch``: positions among the
    node's children, as the CPU shard takes them); returns each node's children's rows
    here, a list of int64 arrays."""
    first = np.array([c[0] for c in children], dtype=np.int64)
    backend = shard["backend"]
    backend.partition_multiway(
        np.asarray(nodes, dtype=np.int64),
        np.asarray(feature, dtype=np.int64),
        np.asarray(branch_of_code) + first[:, None],
        np.asarray(default_branch) + first,
        children,
    )  # no sizes: counted on the device
    return [backend.node_sizes(np.asarray(ids, dtype=np.int64)) for ids in children]
