"""Naive pure-numpy reference implementations: the oracles that kernels are tested against.

Slow and obviously right; never used for training.
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
    hist = np.zeros((len(node_start), n_features, n_bins, row_stats.shape[1]))
    for node, (start, end) in enumerate(zip(node_start, node_end, strict=True)):
        rows = sample_indices[start:end]
        for f in range(n_features):
            np.add.at(hist[node, f], X_binned[f, rows].astype(np.int64), row_stats[rows])
    return hist
