"""Counter-based random draws: every random choice of a fit is a pure function of a
seed, a tree and a node's place in its tree, never of the order in which nodes are met.

So a forest's trees are the same whether they grow one at a time or together, in
batches of any size, on the CPU or a GPU, and a node's features do not depend on how its
level was batched (dense or compact histograms, subtrees finished in one call). The
generator is SplitMix64's finaliser (Steele, Lea and Flood, "Fast splittable
pseudorandom number generators", OOPSLA 2014), applied to keys built from the tree index
and the path from the root: a *node key* is the root's key for a root, else its parent's
key mixed with the branch taken.
"""

from __future__ import annotations

import numpy as np

__all__ = ["child_keys", "draw_features", "mix64", "root_keys", "uniform_draws"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # 2**64 / golden ratio: SplitMix64's increment
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)
# Salts that keep the streams of different kinds of draw apart for one node.
_FEATURE_SALT = np.uint64(0x5851F42D4C957F2D)
_THRESHOLD_SALT = np.uint64(0x2545F4914F6CDD1D)


def mix64(x) -> np.ndarray:
    """SplitMix64's finaliser on uint64 values (wrapping arithmetic): a bijection whose
    outputs look independent for consecutive inputs."""
    x = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * _MIX_1
        x = (x ^ (x >> np.uint64(27))) * _MIX_2
    return x ^ (x >> np.uint64(31))


def _counter(values) -> np.ndarray:
    """Small non-negative integers as well-spread uint64 counters: (value + 1) * golden."""
    with np.errstate(over="ignore"):
        return (np.asarray(values, dtype=np.uint64) + np.uint64(1)) * _GOLDEN


def root_keys(seed: int, trees) -> np.ndarray:
    """The node keys of the roots of ``trees`` (indices within the forest; 0 for a lone
    tree) under ``seed`` (a non-negative integer below 2**64)."""
    return mix64(mix64(np.uint64(seed)) ^ _counter(trees))


def child_keys(parent_keys, branches) -> np.ndarray:
    """The node keys of children: the parent's key mixed with the branch taken (0 left,
    1 right; a multiway node's k-th child takes branch k)."""
    return mix64(np.asarray(parent_keys, dtype=np.uint64) ^ mix64(_counter(branches)))


def _feature_scores(keys, n_features, salt) -> np.ndarray:
    """(n_nodes, n_features) uint64: one independent draw per node and feature."""
    keys = np.asarray(keys, dtype=np.uint64)
    return mix64(keys[:, None] ^ mix64(_counter(np.arange(n_features)) ^ salt))


def draw_features(keys, n_features: int, n_drawn: int, eligible=None) -> np.ndarray:
    """The features each node may split on: ``n_drawn`` of its ``eligible`` ones (all
    features where None), drawn without replacement, uniformly, from the node's key;
    every eligible one where it has no more than ``n_drawn``.

    Returns
    -------
    ndarray of shape (n_nodes, n_features), bool
    """
    scores = _feature_scores(keys, n_features, _FEATURE_SALT)
    if eligible is not None:
        scores = np.where(eligible, scores, np.iinfo(np.uint64).max)
    # The n_drawn lowest scores: the draw is a random order of the features, cut.
    order = np.argsort(scores, axis=1, kind="stable")
    mask = np.zeros(scores.shape, dtype=bool)
    np.put_along_axis(mask, order[:, :n_drawn], True, axis=1)
    if eligible is not None:
        mask &= eligible
    return mask


def uniform_draws(keys, n_features: int) -> np.ndarray:
    """(n_nodes, n_features) float64 in [0, 1): one uniform draw per node and feature,
    independent of :func:`draw_features`' (extremely randomised trees' thresholds)."""
    scores = _feature_scores(keys, n_features, _THRESHOLD_SALT)
    return (scores >> np.uint64(11)).astype(np.float64) * 2.0**-53
