"""What the model-file reader proves of a tree before prediction relies on it: every
index in range, every node but the root with exactly one parent and numbered after it (so
the walk ends), depths, split kinds agreeing with their offsets, node numbers finite and
non-negative, no split raising the weighted impurity, values finite (a classifier's
class probabilities), and categorical splits only on categorical features. Each check
raises through the reader, naming the first problem."""

from __future__ import annotations

import numpy as np

from gpu_tree.model.tree import (
    CATEGORICAL_SUBSET,
    LEAF,
    MULTIWAY,
    NUMERIC,
    TREE_LEAF,
    TREE_UNDEFINED,
    scaled_weighted_impurity,
)


def check_categorical_nodes(read, tree, mask):
    """Only categorical features are split by category."""
    if tree.n_category_words < 1:
        read.fail("n_category_words must be at least 1")
    if tree.node_count:
        internal = tree.children_left != TREE_LEAF
        kinds = tree.split_kind
        categorical_nodes = internal & ((kinds == CATEGORICAL_SUBSET) | (kinds == MULTIWAY))
        bad = np.flatnonzero(categorical_nodes & ~mask[tree.feature.clip(0)])
        if bad.size:
            read.fail(
                f"node {bad[0]} splits feature {tree.feature[bad[0]]} by category, but that "
                "feature is not categorical"
            )


def check_structure(read, n, n_features, n_words, arrays, bitsets, branch_children, regression):
    """Every index in range, every node but the root with exactly one parent, and children
    numbered after their parent (so the walk always ends: no cycle); depths, node numbers
    and impurity decreases as below.

    Checked on whole arrays first (:func:`_structure_is_valid`: a forest's trees hold
    millions of nodes); a tree that does not pass is checked node by node, in the order
    below, which names the first problem."""
    if _structure_is_valid(n, n_features, n_words, arrays, bitsets, branch_children, regression):
        return
    _check_structure_node_by_node(
        read, n, n_features, n_words, arrays, bitsets, branch_children, regression
    )


def _structure_is_valid(n, n_features, n_words, arrays, bitsets, branch_children, regression):
    """Whether the tree passes every check of :func:`_check_structure_node_by_node`, on
    whole arrays: True only where that check passes too (same comparisons; offsets
    compared without int64 overflow); False sends the tree to it, for the message."""
    left, right = arrays["children_left"], arrays["children_right"]
    kind, feature = arrays["split_kind"], arrays["feature"]
    go_left = arrays["missing_go_to_left"]
    if np.any((go_left != 0) & (go_left != 1)):
        return False
    leaf = (left == TREE_LEAF) | (right == TREE_LEAF)
    if np.any(leaf & ((left != right) | (kind != LEAF))):
        return False
    for name, expected in _LEAF_FIELDS.items():
        if np.any(leaf & (arrays[name] != expected)):
            return False
    internal = ~leaf
    nodes = np.arange(n)
    for child in (left, right):
        if np.any(internal & ((child < 0) | (child >= n) | (child <= nodes))):
            return False
    if np.any(internal & ((feature < 0) | (feature >= n_features))):
        return False
    multiway = internal & (kind == MULTIWAY)
    subset = internal & (kind == CATEGORICAL_SUBSET)
    numeric = internal & (kind == NUMERIC)
    if np.any(internal & ~(multiway | subset | numeric)):
        return False
    if np.any(internal & ~multiway & (arrays["branch_offset"] >= 0)):
        return False
    if np.any(numeric & (arrays["category_offset"] >= 0)):
        return False
    if np.any(numeric & (left == right)):
        return False
    offset = arrays["category_offset"]
    if np.any(subset & ((offset < 0) | (offset > bitsets.size - n_words))):
        return False
    binary = np.flatnonzero(internal & ~multiway)
    edge_parent, edge_child = [binary, binary], [left[binary], right[binary]]
    for node in np.flatnonzero(multiway):
        children = np.arange(left[node], right[node] + 1)
        start, entries = int(arrays["branch_offset"][node]), int(arrays["n_branches"][node])
        if start < 0 or entries < 1 or start + entries + 1 > branch_children.size:
            return False
        if not np.isin(branch_children[start : start + entries + 1], children).all():
            return False
        edge_parent.append(np.full(children.size, node))
        edge_child.append(children)
    edge_parent, edge_child = np.concatenate(edge_parent), np.concatenate(edge_child)
    parents = np.bincount(edge_child, minlength=n)
    if parents[0] != 0 or np.any(parents[1:] != 1):
        return False
    depth = arrays["depth"]
    if depth[0] != 0 or np.any(depth[edge_child] != depth[edge_parent] + 1):
        return False
    if _bad_node_number(arrays, regression) is not None:
        return False
    return _impurity_decreases_are_valid(arrays, left, right, binary, np.flatnonzero(multiway))


def _impurity_decreases_are_valid(arrays, left, right, binary, multiway):
    """:func:`_check_impurity_decreases`'s comparison, on whole arrays (a binary node's
    two children summed as np.sum sums them; a multiway node's by np.sum itself)."""
    weight, impurity = arrays["weighted_n_node_samples"], arrays["impurity"]
    infinite = np.isinf(impurity)
    weighted, _ = scaled_weighted_impurity(weight, np.where(infinite, 0.0, impurity))
    slack = 1e-9 * np.max(weighted)
    lower, upper = left[binary], right[binary]
    checked = ~(infinite[binary] | infinite[lower] | infinite[upper])
    children_sum = weighted[lower] + weighted[upper]
    if np.any(checked & (children_sum > weighted[binary] * (1 + 1e-9) + slack)):
        return False
    for node in multiway:
        children = np.arange(left[node], right[node] + 1)
        if infinite[node] or infinite[children].any():
            continue
        if np.sum(weighted[children]) > weighted[node] * (1 + 1e-9) + slack:
            return False
    return True


def _check_structure_node_by_node(
    read, n, n_features, n_words, arrays, bitsets, branch_children, regression
):
    """:func:`check_structure`, node by node: raises naming the first problem."""
    left, right = arrays["children_left"], arrays["children_right"]
    kind, feature = arrays["split_kind"], arrays["feature"]
    go_left = arrays["missing_go_to_left"]
    bad = np.flatnonzero((go_left != 0) & (go_left != 1))
    if bad.size:
        read.fail(f"node {bad[0]} has missing_go_to_left {go_left[bad[0]]}, expected 0 or 1")
    parents = np.zeros(n, dtype=np.int64)
    children_of = {}  # internal node -> its children
    for node in range(n):
        if left[node] == TREE_LEAF or right[node] == TREE_LEAF:
            if left[node] != right[node] or kind[node] != LEAF:
                read.fail(
                    f"node {node} is half a leaf: children {left[node]}, {right[node]}, "
                    f"split kind {kind[node]}"
                )
            # What a leaf holds where a split holds its rule (the tree's own leaves, and
            # pruning's): nothing that a reader of the arrays could follow.
            for name, expected in _LEAF_FIELDS.items():
                if arrays[name][node] != expected:
                    read.fail(f"leaf {node} has {name} {arrays[name][node]}, expected {expected}")
            continue
        for child in (left[node], right[node]):
            if not 0 <= child < n:
                read.fail(f"node {node} has child {child}, out of range (the tree has {n} nodes)")
            if child <= node:
                read.fail(
                    f"node {node} has child {child}, numbered before it: the tree would "
                    "have a cycle"
                )
        if not 0 <= feature[node] < n_features:
            read.fail(
                f"node {node} splits feature {feature[node]}, out of range ({n_features} features)"
            )
        # Prediction picks a node's rule by its offsets, not its split kind: a branch table
        # (branch_offset >= 0) makes it multiway, else a category set (category_offset >= 0)
        # a subset split. They must agree with split_kind, or the walk reads unchecked offsets.
        if kind[node] != MULTIWAY and arrays["branch_offset"][node] >= 0:
            read.fail(
                f"node {node} has branch_offset {arrays['branch_offset'][node]} but split "
                f"kind {kind[node]}: only a multiway node has a branch table"
            )
        if kind[node] == NUMERIC and arrays["category_offset"][node] >= 0:
            read.fail(
                f"node {node} has category_offset {arrays['category_offset'][node]} but "
                "is a numeric split: only a subset node has a category set"
            )
        if kind[node] == MULTIWAY:
            children = np.arange(left[node], right[node] + 1)
            offset, entries = arrays["branch_offset"][node], arrays["n_branches"][node]
            if offset < 0 or entries < 1 or offset + entries + 1 > branch_children.size:
                read.fail(f"multiway node {node}: its branch table is out of range")
            table = branch_children[offset : offset + entries + 1]
            if not np.isin(table, children).all():
                read.fail(f"multiway node {node}: a branch leads outside its children")
        elif kind[node] == CATEGORICAL_SUBSET:
            offset = arrays["category_offset"][node]
            if offset < 0 or offset + n_words > bitsets.size:
                read.fail(f"subset node {node}: its category set is out of range")
            children = np.array([left[node], right[node]])
        elif kind[node] == NUMERIC:
            if left[node] == right[node]:
                read.fail(f"node {node} has the same child on both sides")
            children = np.array([left[node], right[node]])
        else:
            read.fail(f"node {node} has unknown split kind {kind[node]}")
        parents[children] += 1
        children_of[node] = children
    if parents[0] != 0:
        read.fail("the root has a parent")
    orphan = np.flatnonzero(parents[1:] != 1)
    if orphan.size:
        k = orphan[0] + 1
        read.fail(f"node {k} has {parents[k]} parents; every node but the root needs exactly one")
    _check_depths(read, arrays, children_of)
    _check_node_numbers(read, arrays, regression)
    _check_impurity_decreases(read, arrays, children_of)


# A leaf's fields that a split uses for its rule (see Tree.add_nodes and Tree.pruned).
_LEAF_FIELDS = {
    "feature": TREE_UNDEFINED,
    "category_offset": -1,
    "branch_offset": -1,
    "n_branches": 0,
    "missing_go_to_left": 0,
}


def _check_depths(read, arrays, children_of):
    """The root at depth 0, every child one below its parent (what decision_path and the
    level-wise code size their arrays by)."""
    depth = arrays["depth"]
    if depth[0] != 0:
        read.fail(f"the root has depth {depth[0]}, expected 0")
    for node, children in children_of.items():
        for child in children:
            if depth[child] != depth[node] + 1:
                read.fail(
                    f"node {child} has depth {depth[child]}, expected {depth[node] + 1} "
                    f"(one below its parent {node})"
                )


# How far below 0 an impurity may be: a pure node's w - sum_i c_i^2 / w, in floats, comes
# out a few ulps below 0 when its weights are fractions (class_weight="balanced", sample
# weights), and a fitted tree holds it as computed (-1.3e-16, say). Impurities of
# classification nodes are of order 1 (Gini <= 1, entropy <= log2 of the classes), so
# this is rounding, never a real value.
_IMPURITY_ROUNDING = 1e-12


def _check_node_numbers(read, arrays, regression):
    """Impurities and weighted sizes are finite and non-negative (an impurity to rounding:
    _IMPURITY_ROUNDING), node sizes too; but a regression impurity may be +inf (a
    variance beyond float64's range: targets 1e200 apart)."""
    bad = _bad_node_number(arrays, regression)
    if bad is not None:
        node, name, value = bad
        read.fail(f"node {node} has {name} {value}, expected a finite number >= 0")


def _bad_node_number(arrays, regression):
    """(node, array name, value) of the first number _check_node_numbers refuses, or None."""
    for name in ("impurity", "weighted_n_node_samples", "n_node_samples"):
        values = arrays[name]
        finite = np.isfinite(values)
        if regression and name == "impurity":
            finite |= values == np.inf
        low = -_IMPURITY_ROUNDING if name == "impurity" else 0.0
        bad = np.flatnonzero(~finite | (values < low))
        if bad.size:
            return bad[0], name, values[bad[0]]
    return None


def _check_impurity_decreases(read, arrays, children_of):
    """No split raises the weighted impurity (each impurity is concave, so a grown or
    pruned tree never does, to rounding): feature importances and the pruning path sum
    these decreases. Compared on scaled weighted impurities (:func:`scaled_weighted_impurity`),
    so that huge ones do not overflow the check."""
    weight, impurity = arrays["weighted_n_node_samples"], arrays["impurity"]
    # A regression variance beyond float64's range is +inf (its true value is unknown, so
    # splits next to one go unchecked; importances and pruning refuse such trees).
    infinite = np.isinf(impurity)
    weighted, _ = scaled_weighted_impurity(weight, np.where(infinite, 0.0, impurity))
    slack = 1e-9 * np.max(weighted)
    for node, children in children_of.items():
        if infinite[node] or infinite[children].any():
            continue
        if np.sum(weighted[children]) > weighted[node] * (1 + 1e-9) + slack:
            read.fail(
                f"node {node}'s children hold more weighted impurity than it does "
                f"(impurity {impurity[node]!r} at weight {weight[node]!r}): no split raises it"
            )


def check_values(read, tree, is_classification):
    """Values are finite, every output's; a classifier's are class probabilities (each
    >= 0, summing to 1 within 1e-9: a fit's sum to a few ulps), and past an output's
    classes (multi-output: padding to the most classes) zeros, so that no prediction
    names a class the output does not have. Only a node of zero weight may hold zeros
    (files of fits that rounded weights below their fixed point's unit to 0 hold such
    nodes); a weighted node's zeros would predict probabilities summing to 0."""
    weight = tree.weighted_n_node_samples
    for k, count in enumerate(tree.n_classes):
        value = tree.value[:, k, :]
        where = f" (output {k})" if tree.n_outputs > 1 else ""
        bad = np.flatnonzero(~np.all(np.isfinite(value), axis=1))
        if bad.size:
            read.fail(
                f"node {bad[0]} has value {value[bad[0]].tolist()}{where}, expected finite numbers"
            )
        if not is_classification:
            continue
        if np.any(value[:, count:] != 0):
            node = int(np.flatnonzero(np.any(value[:, count:] != 0, axis=1))[0])
            read.fail(f"node {node} has values past output {k}'s {count} classes")
        value = value[:, :count]
        total = value.sum(axis=1)
        unweighted_zeros = (total == 0) & (weight == 0)
        bad = np.flatnonzero(
            np.any(value < 0, axis=1) | ((np.abs(total - 1) > 1e-9) & ~unweighted_zeros)
        )
        if bad.size:
            node = int(bad[0])
            read.fail(
                f"node {node} has value {value[node].tolist()!r:.200}{where} at "
                f"weighted_n_node_samples {float(weight[node])!r}: class probabilities must be "
                ">= 0 and sum to 1 (only a node of zero weight may hold zeros)"
            )
