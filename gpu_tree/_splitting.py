"""Choose the best split of many nodes at once from their histograms.

One code path for every mode and device: ``hist`` is an ``xp`` array of shape
(n_nodes, n_features, n_bins, n_channels). In histogram mode the bins are the global
feature bins; in exact mode they are the distinct values of each (node, feature), so
exact mode and histogram mode share the criteria, the candidate rules and the tie-break.

A candidate "bin b" sends bins 0..b left. Only non-empty bins are candidates: every
b between two non-empty bins makes the same partition, and keeping the lowest makes the
threshold the node-local midpoint between neighbouring values, as exact search does.
Ties go to the lowest feature index, then the lowest bin (``argmax`` returns the first
maximum of the row-major (feature, bin) order).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._criteria import StatsLayout, split_score

# Candidates per chunk when scoring: bounds the temporaries of the vectorised criteria.
_CANDIDATES_PER_CHUNK = 1 << 18


@dataclass
class SplitConstraints:
    min_samples_leaf: int = 1
    min_weight_leaf: float = 0.0


@dataclass
class ChosenSplits:
    """The best split of each node (arrays of shape (n_nodes,) unless stated)."""

    has_split: np.ndarray  # bool
    feature: np.ndarray  # int64
    bin: np.ndarray  # int64: last bin sent left (a non-empty bin of the node)
    next_bin: np.ndarray  # int64: first non-empty bin of the node right of the split
    score: np.ndarray  # float64, criterion score (-inf where no split)
    left_stats: np.ndarray  # (n_nodes, n_channels)
    right_stats: np.ndarray  # (n_nodes, n_channels)


def select_splits(
    hist,
    criterion: str,
    layout: StatsLayout,
    constraints: SplitConstraints,
    feature_mask=None,
    xp=np,
) -> ChosenSplits:
    """Best split per node of ``hist`` (n_nodes, n_features, n_bins, n_channels).

    ``feature_mask`` (n_nodes, n_features) bool restricts the features a node may use.
    Only small per-node results leave the device; the histograms stay where they are.
    """
    n_nodes, n_features, n_bins, n_channels = hist.shape
    if n_bins < 2:  # every feature constant: nothing to split on
        empty_stats = np.zeros((n_nodes, n_channels))
        no_split = np.zeros(n_nodes, dtype=np.int64)
        return ChosenSplits(
            np.zeros(n_nodes, dtype=bool), no_split, no_split, no_split,
            np.full(n_nodes, -np.inf), empty_stats, empty_stats.copy(),
        )  # fmt: skip
    best_score = np.full(n_nodes, -np.inf)
    best_flat = np.zeros(n_nodes, dtype=np.int64)
    nodes_per_chunk = max(1, _CANDIDATES_PER_CHUNK // max(1, n_features * n_bins))
    for start in range(0, n_nodes, nodes_per_chunk):
        stop = min(n_nodes, start + nodes_per_chunk)
        chunk_mask = None if feature_mask is None else feature_mask[start:stop]
        score = _score_candidates(hist[start:stop], criterion, layout, constraints, chunk_mask, xp)
        flat = score.reshape(stop - start, -1)
        arg = xp.argmax(flat, axis=1)
        best_flat[start:stop] = _to_host(arg, xp)
        best_score[start:stop] = _to_host(xp.take_along_axis(flat, arg[:, None], axis=1)[:, 0], xp)

    candidates_per_feature = n_bins - 1
    has_split = np.isfinite(best_score)
    feature = np.where(has_split, best_flat // max(1, candidates_per_feature), 0)
    bin_ = np.where(has_split, best_flat % max(1, candidates_per_feature), 0)

    # Gather the chosen rows of the histogram (small: n_nodes x n_bins x n_channels).
    node_idx = xp.arange(n_nodes)
    chosen = hist[node_idx, xp.asarray(feature)]  # (n_nodes, n_bins, n_channels)
    cumulative = xp.cumsum(chosen, axis=1)
    left = cumulative[node_idx, xp.asarray(bin_)]
    total = cumulative[:, -1]
    counts = layout.count(chosen, xp)  # (n_nodes, n_bins)
    right_of_split = xp.arange(n_bins)[None, :] > xp.asarray(bin_)[:, None]
    next_bin = xp.argmax((counts > 0) & right_of_split, axis=1)
    return ChosenSplits(
        has_split=has_split,
        feature=feature.astype(np.int64),
        bin=bin_.astype(np.int64),
        next_bin=_to_host(next_bin, xp).astype(np.int64),
        score=best_score,
        left_stats=_to_host(left, xp),
        right_stats=_to_host(total - left, xp),
    )


def _score_candidates(hist, criterion, layout, constraints, feature_mask, xp):
    """Scores of every (node, feature, bin) candidate; -inf where a split is not allowed."""
    cumulative = xp.cumsum(hist, axis=2)
    left = cumulative[:, :, :-1, :]
    total = cumulative[:, :, -1:, :]
    right = total - left
    score = split_score(criterion, layout, left, right, parent=total, xp=xp)

    bin_count = layout.count(hist[:, :, :-1, :], xp)
    left_count = layout.count(left, xp)
    right_count = layout.count(right, xp)
    allowed = (
        (bin_count > 0)
        & (right_count > 0)
        & (left_count >= constraints.min_samples_leaf)
        & (right_count >= constraints.min_samples_leaf)
    )
    if constraints.min_weight_leaf > 0:
        allowed &= layout.weight(left, xp) >= constraints.min_weight_leaf
        allowed &= layout.weight(right, xp) >= constraints.min_weight_leaf
    if feature_mask is not None:
        allowed &= xp.asarray(feature_mask)[:, :, None]
    return xp.where(allowed, score, -xp.inf)


def _to_host(array, xp):
    if xp is np:
        return np.asarray(array)
    return xp.asnumpy(array)


def midpoint(lower, upper):
    """Threshold between two neighbouring values, as scikit-learn's exact splitter computes it.

    ``lower/2 + upper/2`` cannot overflow; where rounding lands on ``upper`` (or the sum is
    not finite) the lower value is used, so ``lower <= threshold < upper`` always holds.
    """
    lower = np.asarray(lower, dtype=np.float64)
    upper = np.asarray(upper, dtype=np.float64)
    mid = lower / 2.0 + upper / 2.0
    bad = (mid >= upper) | ~np.isfinite(mid)
    return np.where(bad, lower, mid)
