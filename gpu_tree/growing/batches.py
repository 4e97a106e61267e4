"""The records the grower's collaborators pass each other: a batch of nodes whose
histograms are ready, and the nodes of a batch whose split was accepted.

Vocabulary: a node's *histogram slot* is its position along the first axis of a batch of
histograms; a *compact bin* is one position along the bin axis of a compact histogram.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class HistogramBatch:
    """Nodes whose histograms are ready; ``open_slots`` are the ones to evaluate.

    Histogram slots may be in any node order and may include nodes that are not open (a
    closed smaller sibling still serves the subtraction); nodes are evaluated and split
    in node-id order, so the tree's numbering does not depend on it.
    """

    nodes: np.ndarray  # node id of each histogram slot
    hist: object  # xp array (n_slots, n_features, n_bins or width, n_channels)
    open_slots: np.ndarray
    bin_lower: np.ndarray  # (n_slots or 1, n_features, n_bins or width)
    bin_upper: np.ndarray
    # Compact histograms: the bin code of each compact bin (None: dense histograms, whose
    # bins are the codes, or exact search's distinct values, which have no code).
    bin_code: np.ndarray | None = None
    dense: bool = True  # dense histograms can serve the subtraction trick
    # Compact batches: statistics of the rows missing each feature (n_slots, n_features,
    # n_channels), or None. Dense batches keep them in the backend's missing bin.
    missing: object = None
    # Batches of drawn features' histograms (FeatureDraws.drawn_batch): hist[slot, j] is
    # feature drawn_features[slot, j]'s (n_slots, max_features), each slot's in feature
    # order, as far as drawn_mask[slot, j] (a node with fewer non-constant features draws
    # fewer); bin_lower and bin_upper are still per feature.
    drawn_features: np.ndarray | None = None
    drawn_mask: np.ndarray | None = None


def dense_batch(nodes, built) -> HistogramBatch:
    """Every one of ``nodes`` open, with the dense histograms a backend ``built`` for them."""
    return HistogramBatch(
        nodes, built.hist, np.arange(nodes.size), built.bin_lower, built.bin_upper
    )


@dataclass
class EvaluatedSplits:
    """Nodes of a batch that have an accepted split, with what splitting them needs."""

    nodes: np.ndarray
    hist: object  # the dense batch's histograms (None if there is none)
    hist_slots: np.ndarray  # slot of each node in ``hist`` (-1: it had a compact histogram)
    feature: np.ndarray
    bin: np.ndarray
    threshold: np.ndarray
    left_stats: np.ndarray
    right_stats: np.ndarray
    priority: np.ndarray  # weighted score, for best-first growth
    missing_left: np.ndarray  # bool: where missing values go
    kind: np.ndarray  # uint8 split kind: NUMERIC, CATEGORICAL_SUBSET or MULTIWAY
    left_codes: np.ndarray  # object: category codes sent left (subset splits)
    present_codes: np.ndarray  # object: category codes the node holds (categorical splits)
    branch_stats: np.ndarray  # object: multiway, statistics per present code
    default_branch: np.ndarray  # multiway: branch of missing values and unseen codes


def merged(evaluated: list[EvaluatedSplits], xp) -> EvaluatedSplits:
    """One evaluation in node-id order (dense parts' histograms, of array module ``xp``,
    are concatenated)."""
    if len(evaluated) == 1:
        return evaluated[0]
    dense = [ev for ev in evaluated if ev.hist is not None]
    hist = dense[0].hist if dense else None
    if len(dense) > 1:  # several dense batches (multiway children): one array
        offset = 0
        for ev in dense:
            ev.hist_slots = np.where(ev.hist_slots >= 0, ev.hist_slots + offset, -1)
            offset += ev.hist.shape[0]
        hist = xp.concatenate([ev.hist for ev in dense])
    fields = {
        name: np.concatenate([getattr(ev, name) for ev in evaluated])
        for name in EvaluatedSplits.__dataclass_fields__
        if name != "hist"
    }
    order = np.argsort(fields["nodes"], kind="stable")
    return EvaluatedSplits(hist=hist, **{name: value[order] for name, value in fields.items()})
