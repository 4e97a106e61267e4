"""Human-readable views of a fitted tree.

``export_text`` follows scikit-learn's layout (one line per branch, ``|---`` indents),
extended to every node kind: numeric thresholds, categorical subsets ("colour in {red,
blue}"), one line per branch of a multiway (ID3) node, and where missing values go.
"""

from __future__ import annotations

import numpy as np

from ._categorical import bitset_members
from ._tree import CATEGORICAL_SUBSET, MULTIWAY, TREE_LEAF


def _labels(estimator, feature_names):
    n_features = estimator.tree_.n_features
    if feature_names is None:
        names = getattr(estimator, "feature_names_in_", None)
        feature_names = list(names) if names is not None else [f"x{j}" for j in range(n_features)]
    feature_names = [str(n) for n in feature_names]
    if len(feature_names) != n_features:
        raise ValueError(
            f"feature_names has {len(feature_names)} names, but the tree has {n_features} features"
        )
    return feature_names


def _category_label(estimator, feature, code):
    categories = getattr(estimator, "categories_", None)
    values = None if categories is None else categories[feature]
    if values is None or not 0 <= code < len(values):
        return str(code)
    value = values[code]
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def _branches(estimator, node, name, decimals, show_missing=True):
    """(child, condition text) of each branch of an internal node, in order."""
    tree = estimator.tree_
    feature = tree.feature[node]
    kind = tree.split_kind[node]
    missing_left = bool(tree.missing_go_to_left[node])
    if kind == MULTIWAY:
        offset, entries = tree.branch_offset[node], tree.n_branches[node]
        table = tree.branch_children[offset : offset + entries + 1]
        default = table[-1]
        branches = []
        for child in range(tree.children_left[node], tree.children_right[node] + 1):
            codes = np.flatnonzero(table[:-1] == child)
            labels = ", ".join(_category_label(estimator, feature, c) for c in codes)
            text = f"{name} = {labels}" if codes.size == 1 else f"{name} in {{{labels}}}"
            if child == default:
                text += " (or missing, or another category)"
            branches.append((child, text))
        return branches
    if kind == CATEGORICAL_SUBSET:
        offset = tree.category_offset[node]
        words = tree.category_bitsets[offset : offset + tree.n_category_words]
        categories = getattr(estimator, "categories_", [None] * tree.n_features)[feature]
        known = 64 * tree.n_category_words if categories is None else len(categories)
        members = [int(c) for c in bitset_members(words) if c < known]
        labels = ", ".join(_category_label(estimator, feature, c) for c in members)
        left_text, right_text = f"{name} in {{{labels}}}", f"{name} not in {{{labels}}}"
    else:
        threshold = tree.threshold[node]
        if np.isposinf(threshold):
            left_text, right_text = f"{name} is present", f"{name} is missing"
            return [(tree.children_left[node], left_text), (tree.children_right[node], right_text)]
        left_text = f"{name} <= {threshold:.{decimals}f}"
        right_text = f"{name} >  {threshold:.{decimals}f}"
    if show_missing and missing_left:
        left_text += " or missing"
    elif show_missing:
        right_text += " or missing"
    return [(tree.children_left[node], left_text), (tree.children_right[node], right_text)]


def _leaf_text(estimator, node, class_names, decimals, show_weights):
    tree = estimator.tree_
    value = tree.value[node, 0]
    if hasattr(estimator, "classes_"):
        names = class_names if class_names is not None else [str(c) for c in estimator.classes_]
        text = f"class: {names[int(np.argmax(value))]}"
        if show_weights:  # scikit-learn's layout
            weights = value * tree.weighted_n_node_samples[node]
            text = "weights: [" + ", ".join(f"{w:.{decimals}f}" for w in weights) + "] " + text
        return text
    return f"value: [{value[0]:.{decimals}f}]"


def export_text(estimator, *, feature_names=None, class_names=None, max_depth=10, decimals=2,
                show_weights=False, spacing=3, show_missing=True) -> str:  # fmt: skip
    """The tree as text, one line per branch, as scikit-learn's ``export_text`` prints it.

    Numeric splits read "x <= t" / "x >  t", categorical subset splits "x in {...}" /
    "x not in {...}", multiway nodes have a line per branch; "or missing" marks the side
    missing values take at prediction (``show_missing=False`` leaves it out, for trees
    trained without missing values). Branches below ``max_depth`` are summarised as
    "truncated".
    """
    if not hasattr(estimator, "tree_"):
        raise ValueError("export_text needs a fitted estimator")
    names = _labels(estimator, feature_names)
    if class_names is not None and len(class_names) != estimator.tree_.n_classes:
        raise ValueError(
            f"class_names has {len(class_names)} names, but the tree has "
            f"{estimator.tree_.n_classes} classes"
        )
    tree = estimator.tree_
    lines = []
    bar = "|" + " " * spacing
    stack = [(0, 0, None)]
    while stack:
        node, depth, condition = stack.pop()
        indent = bar * (depth - 1) + "|" + "-" * spacing + " " if depth else ""
        if condition is not None:
            lines.append(indent + condition)
        prefix = bar * depth + "|" + "-" * spacing + " "
        if tree.children_left[node] == TREE_LEAF:
            lines.append(prefix + _leaf_text(estimator, node, class_names, decimals, show_weights))
            continue
        if depth >= max_depth:
            lines.append(prefix + "truncated branch")
            continue
        branches = _branches(estimator, node, names[tree.feature[node]], decimals, show_missing)
        for child, text in reversed(branches):
            stack.append((child, depth + 1, text))
    return "\n".join(lines) + "\n"
