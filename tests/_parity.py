"""Comparing our trees with scikit-learn's where ties may be broken differently."""

import numpy as np
import pytest


def weighted_child_impurity(y, left_mask, criterion):
    """n_Y I(D_Y) + n_N I(D_N), computed independently of the library."""
    total = 0.0
    for side in (y[left_mask], y[~left_mask]):
        if side.size == 0:
            continue
        if criterion == "squared_error":
            total += np.sum((side - side.mean()) ** 2)
            continue
        p = np.unique(side, return_counts=True)[1] / side.size
        impurity = 1.0 - np.sum(p * p) if criterion == "gini" else -np.sum(p * np.log2(p))
        total += side.size * impurity
    return total


def divergences_are_ties(ours, theirs, X, y, criterion):
    """Walk both trees together. Wherever they split a node differently, the two splits
    must score the same: a tie, which scikit-learn breaks by its random feature order and
    we break by the lowest feature index. Returns whether any tie was met (below a tie the
    subtrees are not comparable)."""
    a, b = ours.tree_, theirs.tree_
    met_tie = False
    stack = [(0, 0, np.arange(len(y)))]
    while stack:
        node_a, node_b, rows = stack.pop()
        leaf_a, leaf_b = a.children_left[node_a] == -1, b.children_left[node_b] == -1
        assert leaf_a == leaf_b, "one library split a node the other kept as a leaf"
        if leaf_a:
            continue
        left_a = goes_left(a, node_a, X[rows])
        left_b = goes_left(b, node_b, X[rows])
        if not np.array_equal(left_a, left_b):
            score_a = weighted_child_impurity(y[rows], left_a, criterion)
            score_b = weighted_child_impurity(y[rows], left_b, criterion)
            assert score_a == pytest.approx(score_b, rel=1e-9, abs=1e-9), (score_a, score_b)
            met_tie = True
            continue
        if a.feature[node_a] != b.feature[node_b]:
            met_tie = True  # two features partition these rows identically: a tie
            continue
        stack.append((a.children_left[node_a], b.children_left[node_b], rows[left_a]))
        stack.append((a.children_right[node_a], b.children_right[node_b], rows[~left_a]))
    return met_tie


def goes_left(tree, node, X):
    """Rows of X that a tree's node sends left; missing values follow the node's rule."""
    values = X[:, tree.feature[node]]
    return np.where(
        np.isnan(values), bool(tree.missing_go_to_left[node]), values <= tree.threshold[node]
    )
