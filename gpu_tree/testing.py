"""Helpers for testing gpu_tree and code built on it.

- :func:`assert_tree_equal`: node-for-node comparison of two fitted trees;
- naive pure-numpy reference implementations, the oracles that kernels are tested
  against: slow and obviously right, never used for training.
"""

from __future__ import annotations

import numpy as np


def naive_histograms(X_binned, sample_indices, node_start, node_end, row_stats, n_bins):
    """Sum of ``row_stats`` per (node, feature, bin).

    Parameters
    ----------
    X_binned : ndarray of shape (n_features, n_samples), integer bin codes
    sample_indices : ndarray of shape (n_samples,)
        Rows of node k are ``sample_indices[node_start[k]:node_end[k]]``.
    node_start, node_end : ndarray of shape (n_nodes,)
    row_stats : ndarray of shape (n_samples, n_channels)
    n_bins : int

    Returns
    -------
    ndarray of shape (n_nodes, n_features, n_bins, n_channels)
    """
    n_features = X_binned.shape[0]
    hist = np.zeros((len(node_start), n_features, n_bins, row_stats.shape[1]), row_stats.dtype)
    for node, (start, end) in enumerate(zip(node_start, node_end, strict=True)):
        rows = sample_indices[start:end]
        for f in range(n_features):
            np.add.at(hist[node, f], X_binned[f, rows].astype(np.int64), row_stats[rows])
    return hist


def assert_tree_equal(a, b, impurity_rtol: float = 1e-12, value_rtol: float = 1e-12):
    """Node-for-node equality of two fitted trees (test helper, also for users' checks).

    Structure and thresholds must be equal. Impurities and values may differ by the given
    relative tolerances (plus 1e-12 absolute, for values near zero); a tolerance of 0 asks
    for bit-identical arrays, as do the weighted node sizes when ``value_rtol`` is 0.

    Parameters
    ----------
    a, b : gpu_tree.Tree
        The fitted trees (an estimator's ``tree_``).
    impurity_rtol : float, default=1e-12
        Relative tolerance of the nodes' impurities.
    value_rtol : float, default=1e-12
        Relative tolerance of the nodes' values (and, at 0, exact weighted node sizes).

    Raises
    ------
    AssertionError
        Naming the first array that differs.
    """
    assert a.node_count == b.node_count, f"node_count differs: {a.node_count} != {b.node_count}"
    for name in (
        "children_left",
        "children_right",
        "feature",
        "split_kind",
        "n_node_samples",
        "depth",
        "missing_go_to_left",
        "category_offset",
        "branch_offset",
        "n_branches",
        "category_bitsets",
        "branch_children",
    ):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_array_equal(a.threshold, b.threshold, err_msg="threshold")
    _assert_close(
        a.weighted_n_node_samples,
        b.weighted_n_node_samples,
        min(value_rtol, 1e-12),
        "weighted_n_node_samples",
    )
    _assert_close(a.impurity, b.impurity, impurity_rtol, "impurity")
    _assert_close(a.value, b.value, value_rtol, "value")


def _assert_close(actual, desired, rtol, name):
    if rtol == 0:
        np.testing.assert_array_equal(actual, desired, err_msg=name)
    else:
        np.testing.assert_allclose(actual, desired, rtol=rtol, atol=1e-12, err_msg=name)
