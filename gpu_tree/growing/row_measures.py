"""Node impurities measured on the rows once a tree is grown.

Poisson's node impurities (half Poisson deviances) are not a function of a node's
statistics: they are measured on its rows after growth, from the leaf each row ended in.
"""

from __future__ import annotations

import numpy as np

from gpu_tree.data.stats import StatsLayout
from gpu_tree.model.tree import TREE_LEAF, Tree


def poisson_deviances(backend, layout: StatsLayout, tree: Tree) -> np.ndarray:
    """Poisson: every node's half Poisson deviance in real units, measured on its rows
    as scikit-learn's ``tree_.impurity`` holds it: sum w (y log(y / m) - y + m) / sum w,
    m the node's mean target (its value); with several outputs, the mean of the
    outputs' deviances.

    Each row's term is written y log1p(d / m) - d (d = y - m), non-negative and of the
    size of the deviance: y log(y / m) - y + m in floats would lose it to the size of
    y where y is far from 0 (1e6 + Poisson noise). Until now a regression node's
    impurity was its variance (the mean of its outputs'), measured by the backend
    (zero exactly where its targets are all equal: the only use growth has for it,
    the purity test); such nodes keep 0. Each row's term adds to its leaf and to
    every ancestor: the backend's rows end in the leaves (:func:`_leaf_of_row`).
    """
    row_data = backend.row_data
    n_nodes = tree.node_count
    parent = tree.parents()
    # The fit's units (targets scaled by 2**-t; weights too, which cancel): rows by
    # outputs, as nodes' means by outputs.
    mean = np.ldexp(tree.value[:, :, 0], -layout.target_exponent)
    centred = row_data.centred.reshape(row_data.centred.shape[0], -1)
    y = centred + np.asarray(layout.fit_centres)
    weight = row_data.weight
    node = _leaf_of_row(backend, tree, parent)
    weights = np.zeros(n_nodes)
    deviances = np.zeros(n_nodes)
    while node.size:
        m = mean[node]
        d = y - m
        ratio = np.where((y > 0) & (m > 0), d / np.where(m > 0, m, 1.0), 0.0)
        terms = np.where(y > 0, y * np.log1p(ratio) - d, m)
        term = weight * (terms.sum(axis=1) / layout.n_outputs)
        deviances += np.bincount(node, weights=term, minlength=n_nodes)
        weights += np.bincount(node, weights=weight, minlength=n_nodes)
        up = parent[node]
        keep = up >= 0
        node, y, weight = up[keep], y[keep], weight[keep]
    deviance = np.maximum(deviances, 0.0) / np.where(weights > 0, weights, 1.0)
    deviance = np.ldexp(deviance, layout.target_exponent)
    return np.where(tree.impurity[:n_nodes] == 0.0, 0.0, deviance)


def _leaf_of_row(backend, tree: Tree, parent) -> np.ndarray:
    """The leaf each row of the backend ended in (int64; the contract's ``leaf_of_row``,
    where the backend declares ``row_leaves``)."""
    if not backend.capabilities.row_leaves:
        raise ValueError(f"criterion='poisson' is not supported by {type(backend).__name__}")
    is_leaf = tree.children_left == TREE_LEAF
    is_leaf[parent[parent >= 0]] = False
    return backend.leaf_of_row(np.flatnonzero(is_leaf))
