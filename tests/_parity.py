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


def tied_nodes(ours, theirs, X, y, criterion):
    """Walk both trees together. Wherever they split a node differently, the two splits
    must score the same: a tie, which scikit-learn breaks by its random feature order and
    we break by the lowest feature index. Returns the nodes of our tree where a tie was
    met (below a tie the subtrees are not comparable); above them the trees are equal."""
    a, b = ours.tree_, theirs.tree_
    ties = []
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
            ties.append(node_a)
            continue
        if a.feature[node_a] != b.feature[node_b]:
            ties.append(node_a)  # two features partition these rows identically: a tie
            continue
        stack.append((a.children_left[node_a], b.children_left[node_b], rows[left_a]))
        stack.append((a.children_right[node_a], b.children_right[node_b], rows[~left_a]))
    return ties


def assert_same_predictions_away_from_ties(
    ours, theirs, X_train, y_train, X_test, criterion, min_share=0.0
):
    """The tie-invariant comparison: every divergence of the two trees is a tie (checked
    on the training rows), and every test row whose path in our tree passes no tied node
    gets the same prediction from both trees. Returns the share of such rows, which must
    be at least ``min_share`` (so that the comparison is not empty)."""
    ties = tied_nodes(ours, theirs, X_train, y_train, criterion)
    untouched = np.ones(len(X_test), dtype=bool)
    if ties:
        paths = ours.decision_path(X_test)
        untouched = np.asarray(paths[:, ties].sum(axis=1)).ravel() == 0
    share = float(np.mean(untouched))
    assert share >= min_share, f"only {share:.1%} of the test rows pass no tied node"
    if not untouched.any():
        return share
    predicted_ours = ours.predict(X_test[untouched])
    predicted_theirs = theirs.predict(X_test[untouched])
    if predicted_ours.dtype.kind == "f":
        np.testing.assert_allclose(predicted_ours, predicted_theirs, rtol=1e-12)
    else:
        np.testing.assert_array_equal(predicted_ours, predicted_theirs)
    return share


def goes_left(tree, node, X):
    """Rows of X that a tree's node sends left; missing values follow the node's rule."""
    values = X[:, tree.feature[node]]
    return np.where(
        np.isnan(values), bool(tree.missing_go_to_left[node]), values <= tree.threshold[node]
    )
