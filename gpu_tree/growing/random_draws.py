"""Counter-based random draws: every random choice of a fit is a pure function of a
seed, a tree and a node's place in its tree, never of the order in which nodes are met.

So a forest's trees are the same whether they grow one at a time or together, in
batches of any size, on the CPU or a GPU, and a node's features do not depend on how its
level was batched (dense or compact histograms, subtrees finished in one call). The
generator (``kernels/_random_keys.py``, one source for the grower and the compiled
subtree finisher) mixes *node keys*: a root's key comes from the seed and its tree's
index, any other node's from its parent's key and the branch taken.
"""

from __future__ import annotations

import numpy as np

from gpu_tree.kernels.cpu import random_draws as cpu_random_draws

__all__ = [
    "child_keys",
    "draw_features",
    "feature_order",
    "root_keys",
    "take_drawn",
    "uniform_draws",
]


def root_keys(seed: int, trees) -> np.ndarray:
    """The node keys of the roots of ``trees`` (indices within the forest; 0 for a lone
    tree) under ``seed`` (a non-negative integer below 2**63)."""
    trees = np.ascontiguousarray(trees, dtype=np.int64)
    out = np.empty(trees.size, dtype=np.uint64)
    cpu_random_draws.root_keys(np.uint64(seed), trees, out)
    return out


def child_keys(parent_keys, branches) -> np.ndarray:
    """The node keys of children: the parent's key mixed with the branch taken (0 left,
    1 right; a multiway node's k-th child takes branch k)."""
    parent_keys = np.ascontiguousarray(parent_keys, dtype=np.uint64)
    branches = np.ascontiguousarray(branches, dtype=np.int64)
    out = np.empty(parent_keys.size, dtype=np.uint64)
    cpu_random_draws.child_keys(parent_keys, branches, out)
    return out


def _scores(keys, n_features, salt) -> np.ndarray:
    keys = np.ascontiguousarray(keys, dtype=np.uint64)
    out = np.empty((keys.size, n_features), dtype=np.uint64)
    cpu_random_draws.draw_scores(keys, n_features, salt, out)
    return out


def feature_order(keys, n_features: int) -> np.ndarray:
    """Each node's features in the order of its draws (lowest first; ties: the lower
    feature): (n_nodes, n_features) int64. A node draws the first of them it may use."""
    scores = _scores(keys, n_features, cpu_random_draws.FEATURE_SALT)
    return np.argsort(scores, axis=1, kind="stable")


def take_drawn(eligible_in_order, n_drawn: int, already=0) -> np.ndarray:
    """Which features, met in draw order (``eligible_in_order`` (n_nodes, k) bool: the
    node may use the feature), are drawn: the eligible ones until ``n_drawn`` are, counting
    ``already`` (per node) drawn among the features met before."""
    rank = np.cumsum(eligible_in_order, axis=1) + np.asarray(already)[..., None]
    return eligible_in_order & (rank <= n_drawn)


def draw_features(keys, n_features: int, n_drawn: int, eligible=None) -> np.ndarray:
    """The features each node may split on: the ``n_drawn`` of its ``eligible`` ones (all
    features where None) met first in :func:`feature_order`, i.e. drawn without
    replacement, uniformly; every eligible one where it has no more than ``n_drawn``.
    (The subtree finisher draws the same: kernels/cpu/subtrees.py.)

    Returns
    -------
    ndarray of shape (n_nodes, n_features), bool
    """
    order = feature_order(keys, n_features)
    if eligible is None:
        eligible_in_order = np.ones(order.shape, dtype=bool)
    else:
        eligible_in_order = np.take_along_axis(np.asarray(eligible, dtype=bool), order, axis=1)
    mask = np.zeros(order.shape, dtype=bool)
    np.put_along_axis(mask, order, take_drawn(eligible_in_order, n_drawn), axis=1)
    return mask


def uniform_draws(keys, n_features: int) -> np.ndarray:
    """(n_nodes, n_features) float64 in [0, 1): one uniform draw per node and feature,
    independent of :func:`draw_features`' (extremely randomised trees' thresholds)."""
    scores = _scores(keys, n_features, cpu_random_draws.THRESHOLD_SALT)
    return cpu_random_draws.unit_interval(scores)
