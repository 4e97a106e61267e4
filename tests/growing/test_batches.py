"""The records the grower's collaborators pass each other: merging evaluations."""

from __future__ import annotations

import numpy as np

from gpu_tree.growing.batches import EvaluatedSplits, merged


def _evaluated(nodes, hist, hist_slots):
    n = len(nodes)
    objects = np.full(n, None, dtype=object)
    return EvaluatedSplits(
        nodes=np.asarray(nodes),
        hist=hist,
        hist_slots=np.asarray(hist_slots),
        feature=np.asarray(nodes) * 10,
        bin=np.zeros(n, dtype=np.int64),
        threshold=np.zeros(n),
        left_stats=np.zeros((n, 2), dtype=np.int64),
        right_stats=np.zeros((n, 2), dtype=np.int64),
        priority=np.zeros(n),
        missing_left=np.zeros(n, dtype=bool),
        kind=np.zeros(n, dtype=np.uint8),
        left_codes=objects,
        present_codes=objects.copy(),
        branch_stats=objects.copy(),
        default_branch=np.zeros(n, dtype=np.int64),
    )


def test_one_evaluation_is_returned_as_it_is():
    one = _evaluated([3, 1], np.zeros((2, 1, 1, 1)), [0, 1])
    assert merged([one], np) is one


def test_merged_evaluations_are_in_node_order_with_their_histogram_slots():
    first = _evaluated([7, 2], np.full((2, 1, 1, 1), 1.0), [1, 0])
    compact = _evaluated([5], None, [-1])
    second = _evaluated([4, 9, 1], np.full((3, 1, 1, 1), 2.0), [2, 0, 1])
    ev = merged([first, compact, second], np)
    np.testing.assert_array_equal(ev.nodes, [1, 2, 4, 5, 7, 9])
    np.testing.assert_array_equal(ev.feature, ev.nodes * 10)  # every field follows
    assert ev.hist.shape[0] == 5  # the dense parts' histograms, one array
    # Each node's slot points at its own histogram in the concatenation; compact: -1.
    np.testing.assert_array_equal(ev.hist_slots, [3, 0, 4, -1, 1, 2])
    owner = {1: 2.0, 2: 1.0, 4: 2.0, 7: 1.0, 9: 2.0}
    for node, slot in zip(ev.nodes, ev.hist_slots, strict=True):
        if slot >= 0:
            assert ev.hist[slot, 0, 0, 0] == owner[node]
