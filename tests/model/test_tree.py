"""The Tree's multiway splits set several at a time, and its level-wise numbering."""

import numpy as np

from gpu_tree import assert_tree_equal
from gpu_tree.model.tree import MULTIWAY, Tree


def _leaves(tree, depth, rows):
    """Leaves of ``depth``, told apart by their row counts ``rows``."""
    n = len(rows)
    value = np.tile([0.5, 0.5], n)
    return tree.add_nodes(
        np.full(n, depth), np.zeros(n), np.asarray(rows), np.asarray(rows, float), value
    )


def _depth_first_tree():
    """A root split in two (numeric), its left child split multiway on feature 1 (codes
    0, 2 and 3; the default, code 2's child, takes the others), its right child in two
    again: nodes added depth first, as the subtree finisher adds them."""
    tree = Tree(n_features=2, n_classes=2)
    (root,) = _leaves(tree, 0, [100])
    left, right = _leaves(tree, 1, [60, 40])
    tree.set_numeric_splits([root], [0], [0.5], [3], [left], [right], [0])
    branches = _leaves(tree, 2, [10, 30, 20])
    b0, b1, b2 = branches  # codes 0, 2 and 3's children; code 1 and the rest go to b1
    tree.set_multiway_splits([left], [1], [b0], [b2], [b0, b1, b1, b2, b1], [4])
    low, high = _leaves(tree, 2, [15, 25])
    tree.set_numeric_splits([right], [0], [0.7], [5], [low], [high], [1])
    return tree


def test_level_wise_numbers_a_levels_binary_children_before_its_multiway_children():
    tree = _depth_first_tree().level_wise()
    # Level 2: the right child's (binary) children, then the left child's branches.
    np.testing.assert_array_equal(tree.n_node_samples, [100, 60, 40, 15, 25, 10, 30, 20])
    np.testing.assert_array_equal(tree.children_left, [1, 5, 3, -1, -1, -1, -1, -1])
    np.testing.assert_array_equal(tree.children_right, [2, 7, 4, -1, -1, -1, -1, -1])
    assert tree.split_kind[1] == MULTIWAY
    start = tree.branch_offset[1]
    np.testing.assert_array_equal(tree.branch_children[start : start + 5], [5, 6, 6, 7, 6])
    # Breadth first, the left child's branches come first.
    np.testing.assert_array_equal(
        _depth_first_tree().breadth_first().n_node_samples, [100, 60, 40, 10, 30, 20, 15, 25]
    )


def test_multiway_splits_set_together_equal_those_set_one_by_one():
    def grown(together):
        tree = Tree(n_features=3, n_classes=2)
        parents = _leaves(tree, 1, [50, 50])
        children = [_leaves(tree, 2, [20, 30]), _leaves(tree, 2, [10, 15, 25])]
        codes = [np.array([1, 4]), np.array([0, 2, 3])]
        defaults = [children[0][1], children[1][2]]
        tables = []
        for ids, code, default in zip(children, codes, defaults, strict=True):
            table = np.full(code.max() + 1, default)
            table[code] = ids
            tables.append(table)
        if together:
            tree.set_multiway_splits(
                parents,
                [2, 0],
                [c[0] for c in children],
                [c[-1] for c in children],
                np.concatenate([np.append(t, d) for t, d in zip(tables, defaults, strict=True)]),
                [t.size for t in tables],
            )
        else:
            for node, feature, ids, table, default in zip(
                parents, [2, 0], children, tables, defaults, strict=True
            ):
                tree.set_multiway_split(node, feature, ids, table, default)
        return tree

    assert_tree_equal(grown(True), grown(False), impurity_rtol=0, value_rtol=0)
