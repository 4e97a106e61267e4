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

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ._criteria import StatsLayout, weighted_split_score
from ._validation import to_host
from .kernels import cpu as cpu_kernels

# Candidates per chunk when scoring: bounds the temporaries of the vectorised criteria.
# On the CPU, chunks small enough for the caches, scored on parallel threads; on a GPU,
# large chunks (temporaries of about 64 MB), since every array operation is a launch.
_CANDIDATES_PER_CHUNK = 1 << 18
_DEVICE_CANDIDATES_PER_CHUNK = 1 << 23
_CPU_THREADS = os.cpu_count() or 1


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
    next_bin: np.ndarray  # int64: first non-empty bin of the node right of the split, or -1
    score: np.ndarray  # float64, criterion score (-inf where no split)
    left_stats: np.ndarray  # (n_nodes, n_channels), missing rows included if they go left
    right_stats: np.ndarray  # (n_nodes, n_channels)
    # Where missing values go: the better side where the node has some (both sides are
    # scored), else the child with more rows. next_bin is -1 for a split that sends every
    # present value left and the missing ones right (threshold +inf).
    missing_left: np.ndarray  # bool


def select_splits(
    hist,
    criterion: str,
    layout: StatsLayout,
    constraints: SplitConstraints,
    feature_mask=None,
    xp=np,
    rows=None,
    compact_input=False,
    missing=None,
) -> ChosenSplits:
    """Best split of the nodes ``hist[rows]`` (hist: (n, n_features, n_bins, n_channels)).

    ``rows`` (host indices, default all) picks the histogram rows to evaluate; results
    come in that order. ``compact_input``: every row already holds its non-empty slots
    first, in order (compact histograms), so no compaction is needed. ``missing``
    (n, n_features, n_channels), or None: the statistics of each node's rows that miss
    each feature (not in ``hist``); every candidate is then scored with them on either
    side, and the better side is kept.
    ``feature_mask`` (len(rows), n_features) bool restricts the
    features each may use. Only small per-node results leave the device; the
    histograms stay where they are.

    Each (node, feature) row is first compacted to its non-empty bins (the only
    candidates), and nodes are scored in chunks of similar width, so a node holding a
    few rows costs a few candidates, not ``n_bins``. Compaction keeps the bin order, so
    scores and the tie-break are those of the full histogram.
    """
    _, n_features, n_bins, n_channels = hist.shape
    rows = np.arange(hist.shape[0]) if rows is None else np.asarray(rows, dtype=np.int64)
    n_nodes = rows.size
    chosen = ChosenSplits(
        has_split=np.zeros(n_nodes, dtype=bool),
        feature=np.zeros(n_nodes, dtype=np.int64),
        bin=np.zeros(n_nodes, dtype=np.int64),
        next_bin=np.zeros(n_nodes, dtype=np.int64),
        score=np.full(n_nodes, -np.inf),
        left_stats=np.zeros((n_nodes, n_channels)),
        right_stats=np.zeros((n_nodes, n_channels)),
        missing_left=np.zeros(n_nodes, dtype=bool),
    )
    if missing is not None and not bool(xp.any(layout.count(missing, xp) > 0)):
        missing = None  # no node misses anything: the usual search, half the work
    if n_nodes == 0 or (n_bins < 2 and missing is None):  # nothing to split on
        return chosen
    nonempty = layout.count(hist, xp) > 0
    widest = to_host(xp.max(xp.sum(nonempty, axis=2), axis=1))  # per histogram row
    width = widest[rows]
    order = np.argsort(width, kind="stable")
    chunks = []
    start = 0
    per_chunk = _CANDIDATES_PER_CHUNK if xp is np else _DEVICE_CANDIDATES_PER_CHUNK
    while start < n_nodes:
        stop = start + 1
        while stop < n_nodes and (stop + 1 - start) * n_features * width[order[stop]] <= per_chunk:
            stop += 1
        chunks.append(order[start:stop])
        start = stop

    def score_chunk(positions):
        _select_in_chunk(hist, nonempty, rows[positions], positions, int(width[positions].max()),
                         criterion, layout, constraints, feature_mask, xp, chosen,
                         compact_input, missing)  # fmt: skip

    if xp is np and len(chunks) > 1:
        # numpy releases the GIL inside its array loops: chunks score in parallel.
        with ThreadPoolExecutor(max_workers=_CPU_THREADS) as pool:
            list(pool.map(score_chunk, chunks))
    else:
        for nodes in chunks:
            score_chunk(nodes)
    return chosen


def _select_in_chunk(hist, nonempty, hist_rows, positions, width, criterion, layout, constraints,
                     feature_mask, xp, chosen, compact_input, missing):  # fmt: skip
    """Score ``hist[hist_rows]``; write the best splits into ``chosen`` at ``positions``."""
    n = hist_rows.size
    device_rows = xp.asarray(hist_rows)
    width = max(width, 2)  # at least one candidate position, even if it is never allowed
    if compact_input:
        compact = hist[device_rows][:, :, :width]
        if compact.shape[2] < width:
            pad = xp.zeros(compact.shape[:2] + (width - compact.shape[2],) + compact.shape[3:])
            compact = xp.concatenate([compact, pad], axis=2)
        bin_index = xp.broadcast_to(xp.arange(width), compact.shape[:3])
    elif xp is np:
        compact = np.zeros((n, hist.shape[1], width, hist.shape[3]))
        bin_index = np.empty((n, hist.shape[1], width), dtype=np.int64)
        cpu_kernels.compact_rows(hist, hist_rows, nonempty, compact, bin_index)
    else:
        compact, bin_index = _compact(hist[device_rows], nonempty[device_rows], width, xp)
    mask = None if feature_mask is None else feature_mask[positions]
    n_slots = xp.sum(nonempty[device_rows], axis=2)  # non-empty slots per (node, feature)
    node_missing = None if missing is None else missing[device_rows]
    score, missing_left = _score_candidates(
        compact, n_slots, node_missing, criterion, layout, constraints, mask, xp
    )
    flat = score.reshape(n, -1)
    arg = xp.argmax(flat, axis=1)
    best = to_host(xp.take_along_axis(flat, arg[:, None], axis=1)[:, 0])
    arg_host = to_host(arg)
    candidates_per_feature = score.shape[2]
    feature = arg_host // candidates_per_feature
    position = arg_host % candidates_per_feature
    rows = xp.arange(n)
    device_feature = xp.asarray(feature)
    device_position = xp.asarray(position)
    cumulative = xp.cumsum(compact[rows, device_feature], axis=1)  # (n, width, n_channels)
    left = cumulative[rows, device_position]
    total = cumulative[:, -1]
    right = total - left
    if missing_left is None:
        # Missing values never seen here: at prediction they follow the bigger child.
        goes_left = to_host(layout.count(left, xp) >= layout.count(right, xp))
    else:
        goes_left = to_host(missing_left[rows, device_feature, device_position])
        chosen_missing = node_missing[rows, device_feature]
        side = xp.asarray(goes_left)[:, None]
        left = left + xp.where(side, chosen_missing, 0.0)
        right = right + xp.where(side, 0.0, chosen_missing)
    has_split = np.isfinite(best)
    node_weight = to_host(layout.weight(left + right, xp))
    nodes = positions
    chosen.has_split[nodes] = has_split
    chosen.score[nodes] = np.where(has_split, best / np.where(has_split, node_weight, 1.0), -np.inf)
    chosen.feature[nodes] = np.where(has_split, feature, 0)
    chosen_bins = bin_index[rows, device_feature]
    chosen.bin[nodes] = np.where(has_split, to_host(chosen_bins[rows, device_position]), 0)
    # Every compacted bin is non-empty, so the next one is the first non-empty bin right
    # of the split; past the last one, the split sends only missing values right.
    slots = to_host(n_slots[rows, device_feature])
    next_position = xp.asarray(np.minimum(position + 1, compact.shape[2] - 1))
    next_bin = np.where(position + 1 < slots, to_host(chosen_bins[rows, next_position]), -1)
    chosen.next_bin[nodes] = np.where(has_split, next_bin, 0)
    chosen.missing_left[nodes] = goes_left
    chosen.left_stats[nodes] = to_host(left)
    chosen.right_stats[nodes] = to_host(right)


def _compact(hist, nonempty, width, xp):
    """Move each (node, feature) row's non-empty bins to the front, keeping their order.

    Returns the compacted histogram (n, n_features, width, n_channels) and, for each
    compacted position, the original bin index (-1 past the row's non-empty bins).
    """
    n, n_features, _, n_channels = hist.shape
    position = xp.cumsum(nonempty, axis=2) - 1
    node_i, feature_i, bin_i = xp.nonzero(nonempty)
    target = position[node_i, feature_i, bin_i]
    compact = xp.zeros((n, n_features, width, n_channels), dtype=hist.dtype)
    compact[node_i, feature_i, target] = hist[node_i, feature_i, bin_i]
    bin_index = xp.full((n, n_features, width), -1, dtype=xp.int64)
    bin_index[node_i, feature_i, target] = bin_i
    return compact, bin_index


def _score_candidates(compact, n_slots, missing, criterion, layout, constraints, feature_mask, xp):
    """Scores of every (node, feature, slot) candidate; -inf where a split is not allowed.

    ``compact`` holds each row's ``n_slots`` non-empty slots first, so "the bin is
    non-empty and so is the right side" is just ``slot < n_slots - 1``: the row counts
    are only needed for a ``min_samples_leaf`` above 1.

    With ``missing`` (n, n_features, n_channels), each candidate is scored with the
    missing rows on the left and on the right; the better side wins (equal scores: the
    side holding more present rows), and one more candidate per feature, every present
    value left and the missing ones right, is allowed. Returns the scores and, with
    ``missing``, whether the missing rows go left for each candidate (else None).
    """
    cumulative = xp.cumsum(compact, axis=2)
    total = cumulative[:, :, -1:, :]
    slot = xp.arange(compact.shape[2] - (1 if missing is None else 0))
    values_right = slot[None, None, :] < (n_slots - 1)[:, :, None]
    if missing is None:
        left = cumulative[:, :, :-1, :]
        right = total - left
        # Ranked by w * score: w is constant within a node, and dropping the division
        # saves passes over every candidate; the winner's score is divided by w afterwards.
        score = weighted_split_score(criterion, layout, left, right, parent=total, xp=xp)
        allowed = _allowed(values_right, layout, constraints, left, right, feature_mask, xp)
        return xp.where(allowed, score, -xp.inf), None

    m = missing[:, :, None, :]
    parent = total + m
    left = cumulative
    right = total - cumulative
    has_missing = (layout.count(missing, xp) > 0)[:, :, None]
    present_left = slot[None, None, :] < n_slots[:, :, None]
    score_left = weighted_split_score(criterion, layout, left + m, right, parent=parent, xp=xp)
    score_right = weighted_split_score(criterion, layout, left, right + m, parent=parent, xp=xp)
    allowed_left = _allowed(values_right, layout, constraints, left + m, right, feature_mask, xp)
    allowed_right = _allowed(
        present_left & (values_right | has_missing), layout, constraints, left, right + m,
        feature_mask, xp,
    )  # fmt: skip
    score_left = xp.where(allowed_left, score_left, -xp.inf)
    score_right = xp.where(allowed_right, score_right, -xp.inf)
    more_rows_left = layout.count(left, xp) >= layout.count(right, xp)
    missing_left = (score_left > score_right) | ((score_left == score_right) & more_rows_left)
    return xp.where(missing_left, score_left, score_right), missing_left


def _allowed(base, layout, constraints, left, right, feature_mask, xp):
    """``base`` and the leaf-size constraints on both sides and the feature mask."""
    allowed = base
    if constraints.min_samples_leaf > 1:
        allowed = allowed & (layout.count(left, xp) >= constraints.min_samples_leaf)
        allowed &= layout.count(right, xp) >= constraints.min_samples_leaf
    if constraints.min_weight_leaf > 0:
        allowed = allowed & (layout.weight(left, xp) >= constraints.min_weight_leaf)
        allowed &= layout.weight(right, xp) >= constraints.min_weight_leaf
    if feature_mask is not None:
        allowed = allowed & xp.asarray(feature_mask)[:, :, None]
    return allowed


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
