"""The tree as text, one line per branch, in scikit-learn's ``export_text`` layout."""

from __future__ import annotations

import numpy as np

from gpu_tree.model.export.wording import (
    TEXT_FEATURE_NAME,
    check_fitted_and_names,
    children_reach,
    chosen_tree,
    class_label,
    missing_marks,
    node_branches,
    oblique_class_names,
)
from gpu_tree.model.oblique import ObliqueTree
from gpu_tree.model.tree import TREE_LEAF


def _leaf_text(estimator, node, class_names, decimals, show_weights):
    tree = estimator.tree_
    if hasattr(estimator, "classes_"):
        text = f"class: {class_label(estimator, node, class_names)}"
        if show_weights:  # scikit-learn's layout; several outputs: a list per output
            lists = [
                "[" + ", ".join(f"{w:.{decimals}f}" for w in weights) + "]"
                for weights in (
                    tree.value[node, k, :count] * tree.weighted_n_node_samples[node]
                    for k, count in enumerate(tree.n_classes)
                )
            ]
            weights = lists[0] if tree.n_outputs == 1 else "[" + ", ".join(lists) + "]"
            text = f"weights: {weights} {text}"
        return text
    outputs = tree.value[node, :, 0]  # one value per output (multi-output regression)
    return "value: [" + ", ".join(f"{v:.{decimals}f}" for v in outputs) + "]"


def _subtree_levels(tree) -> np.ndarray:
    """Levels of nodes in each node's subtree, itself included (a leaf: 1)."""
    levels = np.ones(tree.node_count, dtype=np.int64)
    parents = tree.parents()
    # Children are numbered after their parents: going down the ids, every child is
    # complete before it is folded into its parent.
    for node in range(tree.node_count - 1, 0, -1):
        parent = parents[node]
        levels[parent] = max(levels[parent], levels[node] + 1)
    return levels


def export_text(
    estimator,
    *,
    feature_names=None,
    class_names=None,
    max_depth=10,
    decimals=2,
    show_weights=False,
    spacing=3,
    show_missing=True,
    tree_index=None,
) -> str:
    """The tree as text, one line per branch, as scikit-learn's ``export_text`` prints it:
    with the defaults, a tree of numeric splits prints character for character as
    scikit-learn prints the same tree (unnamed features read "feature_0", "feature_1",
    ...; leaves read "class: c", or "value: [v]" for a regressor).

    Numeric splits read "x <= t" / "x >  t", categorical subset splits "x in {...}" /
    "x not in {...}", multiway nodes have a line per branch. Nodes deeper than
    ``max_depth`` are summarised as "truncated branch of depth N" (N levels below), as in
    scikit-learn. Without ``feature_names``, a tree fitted on a DataFrame names its
    features by their columns (``feature_names_in_``; scikit-learn prints "feature_j"
    there too).

    Beyond scikit-learn's output, "or missing" marks the side missing values take at
    prediction, on the splits of features that had missing values in training (every
    split, for a model saved before that was recorded), and a multiway node's default
    branch reads "(or missing, or another category)" there; ``show_missing=False`` leaves
    these out, as scikit-learn prints its trees. A tree fitted without missing values
    prints no such mark. A forest's tree is shown by its index in ``estimators_``:
    ``tree_index`` (required for a forest, left out for a single tree).

    Parameters
    ----------
    estimator : fitted tree estimator or random forest
        A decision tree, extra tree or oblique tree (classifier or regressor), or a
        random forest or extra-trees ensemble with ``tree_index``; an unfitted one raises
        scikit-learn's ``NotFittedError``.
    feature_names : sequence of str, optional
        One name per feature, in column order (a ``ValueError`` for another count).
        Default: the DataFrame's column names, else "feature_0", "feature_1", ... (an
        oblique tree's "x0", "x1", ...).
    class_names : sequence of str, optional
        A classifier's class names, one per class in the order of ``classes_`` (default:
        ``classes_``); not for a tree of several outputs, whose leaves name each output's
        ``classes_``.
    max_depth : int, default=10
        The deepest level whose splits are printed; a split below it prints as one
        "truncated branch of depth N" line (N: the levels of its subtree).
    decimals : int, default=2
        Decimals of thresholds, leaf values and weights.
    show_weights : bool, default=False
        A classifier's leaves also print their weighted class counts
        ("weights: [8.00, 2.00] class: a"; one list per output for several outputs).
        No effect for a regressor.
    spacing : int, default=3
        Width of each level's indent: "|" and ``spacing`` dashes before a line, "|" and
        ``spacing`` spaces for each level above it.
    show_missing : bool, default=True
        Mark where missing values go (see above); False leaves the marks out. Oblique
        trees print no marks.
    tree_index : int, optional
        A forest's tree to print, by its index in ``estimators_`` (required for a
        forest; a ``ValueError`` for a single tree).

    Returns
    -------
    str
        The lines, each ending with a line break.
    """
    estimator = chosen_tree(estimator, tree_index, "export_text")
    names = check_fitted_and_names(
        estimator, feature_names, class_names, "export_text", unnamed=TEXT_FEATURE_NAME
    )
    if isinstance(estimator.tree_, ObliqueTree):  # oblique splits: "0.31·x1 − 0.72·x4 ≤ 1.20"
        return estimator.tree_.export_text(
            feature_names=names,
            class_names=oblique_class_names(estimator, class_names),
            max_depth=max_depth,
            decimals=decimals,
            show_weights=show_weights,
            spacing=spacing,
        )
    tree = estimator.tree_
    missing_marked = missing_marks(estimator, show_missing)
    subtree_levels = _subtree_levels(tree)

    def number(threshold):
        return f"{threshold:.{decimals}f}"

    lines = []
    bar = "|" + " " * spacing
    stack = [(0, 0, None, {})]
    while stack:
        node, depth, condition, reach = stack.pop()
        indent = bar * (depth - 1) + "|" + "-" * spacing + " " if depth else ""
        if condition is not None:
            lines.append(indent + condition)
        prefix = bar * depth + "|" + "-" * spacing + " "
        if tree.children_left[node] == TREE_LEAF:
            lines.append(prefix + _leaf_text(estimator, node, class_names, decimals, show_weights))
            continue
        if depth > max_depth:  # scikit-learn's rule: a node at max_depth still shows its split
            levels = int(subtree_levels[node])
            lines.append(prefix + f"truncated branch of depth {levels}")
            continue
        branches = node_branches(
            estimator, node, names[tree.feature[node]], number, missing_marked, reach
        )
        below = children_reach(tree, node, reach)
        for branch, arriving in zip(reversed(branches), reversed(below), strict=True):
            stack.append((branch.child, depth + 1, branch.text, arriving))
    return "\n".join(lines) + "\n"
