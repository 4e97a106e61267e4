"""The tree as boxes and labelled edges (:func:`boxes_and_edges`): what ``export_graphviz``,
``plot_tree`` and ``export_png`` draw, with each box's lines and fill colour."""

from __future__ import annotations

import colorsys
import functools
from typing import NamedTuple

import numpy as np

from gpu_tree.model.export.wording import (
    check_fitted_and_names,
    children_reach,
    class_label,
    missing_marks,
    node_branches,
    output_rows,
)
from gpu_tree.model.tree import MULTIWAY, NODE_IMPURITY, TREE_LEAF

_TRUNCATED_COLOR = "#c0c0c0"
EDGE_TEXT_SCALE = 0.85  # plot_tree's edge labels: 0.85 of the box text


class _GraphNode(NamedTuple):
    node: int  # the tree's node id (a truncated subtree keeps its root's id)
    parent: int  # -1 for the root
    depth: int
    lines: list  # the box's text, one entry per line
    color: str | None  # fill colour (filled=True), "#rrggbb"
    truncated: bool  # a "(...)" box standing for a subtree below max_depth


class _GraphEdge(NamedTuple):
    parent: int
    child: int
    lines: list  # the edge's label, one entry per line


def rounded_number(x, precision):
    """x rounded to ``precision`` decimals, as scikit-learn's graphs print numbers
    ("0.5", "784.0")."""
    return str(round(float(x), precision) + 0.0)  # + 0.0: no "-0.0"


def _numbers(values, precision):
    """A list of numbers: whole numbers without decimals ("[50, 0]"), else rounded."""
    rounded = np.round(values, precision)  # weight x fraction: 31.000000000000004
    if np.all(np.mod(rounded, 1) == 0):
        return "[" + ", ".join(str(int(v)) for v in rounded) + "]"
    return "[" + ", ".join(rounded_number(v, precision) for v in values) + "]"


def _palette(n_colors):
    """n evenly spaced hues (deterministic), as RGB triples in 0..255."""
    hues = [(0.07 + k / max(n_colors, 1)) % 1.0 for k in range(n_colors)]
    return [tuple(round(255 * c) for c in colorsys.hsv_to_rgb(h, 0.7, 0.92)) for h in hues]


def _tint(rgb, strength):
    """rgb mixed with white: strength 0 is white, 1 the full colour."""
    strength = min(max(float(strength), 0.0), 1.0)
    return "#" + "".join(f"{round(255 - strength * (255 - c)):02x}" for c in rgb)


def _node_colors(estimator):
    """Fill colour of every node: its majority class's hue (classifiers), as strong as the
    majority's lead over the runner-up; for regressors one hue, as strong as the node's
    value is high among the tree's values."""
    tree = estimator.tree_
    value = tree.value[:, 0, :]
    if hasattr(estimator, "classes_"):
        palette = _palette(tree.max_n_classes)
        if tree.max_n_classes == 1:
            return [_tint(palette[0], 1.0)] * tree.node_count
        top_two = -np.sort(-value, axis=1)[:, :2]
        lead = top_two[:, 0] - top_two[:, 1]
        winner = np.argmax(value, axis=1)
        return [_tint(palette[w], s) for w, s in zip(winner, lead, strict=True)]
    (rgb,) = _palette(1)
    low, high = float(value.min()), float(value.max())
    span = high - low
    strength = (value[:, 0] - low) / span if span > 0 else np.zeros(tree.node_count)
    return [_tint(rgb, s) for s in strength]


def check_graph_options(label, precision, max_depth):
    if label not in ("all", "root", "none"):
        raise ValueError(f"label must be 'all', 'root' or 'none', got {label!r}")
    if isinstance(precision, bool) or not isinstance(precision, (int, np.integer)) or precision < 0:
        raise ValueError(f"precision must be a non-negative int, got {precision!r}")
    if max_depth is not None and (
        isinstance(max_depth, bool) or not isinstance(max_depth, (int, np.integer)) or max_depth < 0
    ):
        raise ValueError(f"max_depth must be None or a non-negative int, got {max_depth!r}")


def _node_lines(
    estimator,
    node,
    names,
    class_names,
    *,
    show_names,
    impurity,
    node_ids,
    proportion,
    precision,
    missing_marked,
    reach,
):
    """The text of one box: id, split, impurity, samples, value, class."""
    tree = estimator.tree_

    def named(key, text):
        return f"{key} = {text}" if show_names else text

    lines = []
    if node_ids:
        lines.append(f"node #{node}" if show_names else f"#{node}")
    if tree.children_left[node] != TREE_LEAF:
        name = names[tree.feature[node]]
        if tree.split_kind[node] == MULTIWAY:
            lines.append(name)  # each edge names its categories
        else:
            number = functools.partial(rounded_number, precision=precision)
            branches = node_branches(estimator, node, name, number, missing_marked, reach)
            lines.append(branches[0].condition)
    if impurity:
        criterion = str(getattr(estimator, "criterion", "impurity"))
        key = NODE_IMPURITY.get(criterion, criterion)
        lines.append(named(key, rounded_number(tree.impurity[node], precision)))
    if proportion:
        share = 100.0 * tree.n_node_samples[node] / tree.n_node_samples[0]
        lines.append(named("samples", rounded_number(share, precision) + "%"))
    else:
        lines.append(named("samples", str(int(tree.n_node_samples[node]))))
    value = tree.value[node, 0]
    if hasattr(estimator, "classes_"):
        scale = 1.0 if proportion else tree.weighted_n_node_samples[node]
        if tree.n_outputs > 1:  # one line per output: its classes' weights
            rows = output_rows(
                _numbers(tree.value[node, k, :count] * scale, precision)
                for k, count in enumerate(tree.n_classes)
            )
            lines.append(named("value", rows[0]))
            lines.extend(rows[1:])
        else:
            lines.append(named("value", _numbers(value * scale, precision)))
        lines.append(named("class", class_label(estimator, node, class_names)))
    elif tree.n_outputs > 1:  # one line per output, as scikit-learn's [[v0]\n[v1]]
        rows = output_rows(f"[{rounded_number(v, precision)}]" for v in tree.value[node, :, 0])
        lines.append(named("value", rows[0]))
        lines.extend(rows[1:])
    else:
        lines.append(named("value", rounded_number(value[0], precision)))
    return lines


def boxes_and_edges(
    estimator,
    caller,
    *,
    max_depth,
    feature_names,
    class_names,
    label,
    filled,
    impurity,
    node_ids,
    proportion,
    precision,
    show_missing,
):
    """The boxes (preorder, root first) and edges that export_graphviz and plot_tree draw."""
    names = check_fitted_and_names(estimator, feature_names, class_names, caller)
    check_graph_options(label, precision, max_depth)
    tree = estimator.tree_
    colors = _node_colors(estimator) if filled else None
    missing_marked = missing_marks(estimator, show_missing)
    number = functools.partial(rounded_number, precision=precision)
    nodes, edges = [], []  # both in preorder (an edge where its child is)
    stack = [(0, -1, 0, None, {})]
    while stack:
        node, parent, depth, edge_lines, reach = stack.pop()
        if parent >= 0:
            edges.append(_GraphEdge(parent, node, edge_lines))
        if max_depth is not None and depth > max_depth:
            color = _TRUNCATED_COLOR if filled else None
            nodes.append(_GraphNode(node, parent, depth, ["(...)"], color, True))
            continue
        lines = _node_lines(
            estimator,
            node,
            names,
            class_names,
            show_names=label == "all" or (label == "root" and node == 0),
            impurity=impurity,
            node_ids=node_ids,
            proportion=proportion,
            precision=precision,
            missing_marked=missing_marked,
            reach=reach,
        )
        nodes.append(_GraphNode(node, parent, depth, lines, colors and colors[node], False))
        if tree.children_left[node] == TREE_LEAF:
            continue
        multiway = tree.split_kind[node] == MULTIWAY
        branches = node_branches(
            estimator, node, names[tree.feature[node]], number, missing_marked, reach
        )
        below = children_reach(tree, node, reach)
        for i in reversed(range(len(branches))):
            # A binary node's box holds its left condition: its edges read True / False.
            head = branches[i].relation if multiway else ("True" if i == 0 else "False")
            note = branches[i].note
            edge = [head, note] if note else [head]
            stack.append((branches[i].child, node, depth + 1, edge, below[i]))
    return nodes, edges
