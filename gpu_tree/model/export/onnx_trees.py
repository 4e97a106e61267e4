"""A tree as the nodes of an ONNX tree operator, before either operator's attributes are
written (:mod:`.onnx_format` for opset 5's ``TreeEnsemble``, :mod:`.onnx_legacy` for
``TreeEnsembleClassifier`` / ``TreeEnsembleRegressor``).

- A numeric node is ``BRANCH_LEQ`` (``x <= threshold`` true, left); its missing side is
  the node's ``missing_true``.
- A subset node is ``BRANCH_MEMBER`` over the category codes it sends left (the legacy
  operators, which have no set test, unroll it into ``BRANCH_EQ`` tests).
- A multiway node is a chain of ``BRANCH_EQ`` tests, one per code whose child is not
  the node's default child; NaN fails them all and ends at the default child.
- An oblique node reads the column the graph computes for it (:mod:`.onnx_oblique`):
  1 where the row's projection is above the node's threshold, else 0; the node is
  ``BRANCH_LEQ`` at 0.5, so that rows at or below the threshold go left.
"""

from __future__ import annotations

from typing import NamedTuple

from gpu_tree.model.export.portable import (
    CATEGORICAL_SUBSET,
    LEAF,
    MULTIWAY,
    OBLIQUE_SPLIT,
    category_set,
    multiway_chain,
    node_tests,
)

# ai.onnx.ml's node modes (opset 5's numbers; the legacy operators spell them).
BRANCH_LEQ = 0
BRANCH_EQ = 4
BRANCH_MEMBER = 6

# An oblique node's test of its side column (0: at or below the threshold, 1: above).
SIDE_THRESHOLD = 0.5


class TestNode(NamedTuple):
    """One test of a tree operator. A ref is ``(is_leaf, index)``: a leaf's index in the
    tree's leaves, or a test's in its tests."""

    mode: int
    feature: int
    split: float
    members: list | None  # a BRANCH_MEMBER's codes
    true_ref: tuple
    false_ref: tuple
    missing_true: int


def tree_graph(tree, oblique_columns=None):
    """``tree`` as (tests, leaves): a list of :class:`TestNode` (the root first) and the
    gpu_tree node of each leaf. ``oblique_columns``: the input column of each oblique
    node's side (a dict, node -> column)."""
    tests = node_tests(tree)
    nodes = []  # [mode, feature, split, members, true_ref, false_ref, missing_true]
    leaves = []
    # (gpu_tree node, slot to fill with its ref): (test, 4 or 5) or None for the root.
    pending = [(0, None)]

    def new_node(mode, feature, split, members, missing_true):
        nodes.append([mode, feature, split, members, None, None, missing_true])
        return len(nodes) - 1

    def fill(slot, ref):
        if slot is not None:
            nodes[slot[0]][slot[1]] = ref

    while pending:
        node, slot = pending.pop()
        kind = int(tests.kind[node])
        feature = int(tests.feature[node])
        if kind == LEAF:
            leaves.append(node)
            ref = (True, len(leaves) - 1)
            if slot is None:  # a tree of one leaf: a test whose both sides reach it
                index = new_node(BRANCH_LEQ, 0, 0.0, None, 1)
                nodes[index][4] = nodes[index][5] = ref
            else:
                fill(slot, ref)
            continue
        missing_left = int(tests.missing_left[node])
        if kind == MULTIWAY:
            chain, default = multiway_chain(tree, node)
            if not chain:
                pending.append((default, slot))
                continue
            previous = slot
            for code, child in chain:
                index = new_node(BRANCH_EQ, feature, float(code), None, 0)
                fill(previous, (False, index))
                pending.append((child, (index, 4)))
                previous = (index, 5)
            pending.append((default, previous))
            continue
        if kind == CATEGORICAL_SUBSET:
            codes = category_set(tree, node)
            if codes:
                index = new_node(BRANCH_MEMBER, feature, 0.0, codes, missing_left)
            else:  # no code goes left: x <= -1 holds for none, NaN takes the missing side
                index = new_node(BRANCH_LEQ, feature, -1.0, None, missing_left)
        elif kind == OBLIQUE_SPLIT:
            column = oblique_columns[node]
            index = new_node(BRANCH_LEQ, column, SIDE_THRESHOLD, None, missing_left)
        else:
            threshold = float(tests.threshold[node])
            index = new_node(BRANCH_LEQ, feature, threshold, None, missing_left)
        fill(slot, (False, index))
        pending.append((int(tests.right[node]), (index, 5)))
        pending.append((int(tests.left[node]), (index, 4)))
    return [TestNode(*node) for node in nodes], leaves
