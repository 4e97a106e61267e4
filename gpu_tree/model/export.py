"""Human-readable views of a fitted tree: text, Graphviz DOT and a matplotlib drawing.

``export_text`` follows scikit-learn's layout (one line per branch, ``|---`` indents),
extended to every node kind: numeric thresholds, categorical subsets ("colour in {red,
blue}"), one line per branch of a multiway (ID3) node, and where missing values go (on
the splits of features that had missing values in training).
``export_graphviz`` and ``plot_tree`` draw the same tree as boxes and labelled edges;
all three word the split conditions through ``_branches``. ``export_png`` writes a
drawing sized to the tree (through Graphviz's ``dot`` where installed, else matplotlib),
and refuses, before rendering anything, a tree too large to read in one picture.
Each takes a single tree estimator, or a random forest and ``tree_index``, the index of
the tree to show in its ``estimators_``.
"""

from __future__ import annotations

import colorsys
import functools
import numbers
import shutil
import subprocess
import textwrap
from typing import NamedTuple

import numpy as np

from gpu_tree.data.stats import bitset_members
from gpu_tree.model.oblique import ObliqueTree
from gpu_tree.model.tree import CATEGORICAL_SUBSET, MULTIWAY, NODE_IMPURITY, TREE_LEAF
from gpu_tree.utils.atomic_files import atomic_path, atomic_text
from gpu_tree.utils.compat import check_fitted
from gpu_tree.utils.install_hints import install_hint

_MULTIWAY_DEFAULT = "(or another category)"
_MULTIWAY_DEFAULT_AND_MISSING = "(or missing, or another category)"
_MISSING = "or missing"


class _Branch(NamedTuple):
    """One branch of an internal node: "<subject> <relation> [<note>]"."""

    child: int
    subject: str  # the feature's name
    relation: str  # "<= 0.50", ">  0.50", "in {a, b}", "not in {a, b}", "= a", "is missing"
    note: str  # where else rows go: "or missing", the multiway default's note, or ""

    @property
    def condition(self) -> str:
        return f"{self.subject} {self.relation}"

    @property
    def text(self) -> str:
        return f"{self.condition} {self.note}" if self.note else self.condition


# -- names and wording, shared by every view --------------------------------------------
# The names of unnamed features (a tree fitted on an array without column names), as
# scikit-learn's exporters print them: export_text "feature_0", export_graphviz and
# plot_tree "x[0]". Oblique trees, which scikit-learn has not, keep "x0" (their linear
# forms read "0.31·x1 − 0.72·x4").
TEXT_FEATURE_NAME = "feature_{}"
GRAPH_FEATURE_NAME = "x[{}]"
OBLIQUE_FEATURE_NAME = "x{}"


def _labels(estimator, feature_names, unnamed):
    """The feature names to print: ``feature_names``, else the DataFrame's column names
    (``feature_names_in_``), else ``unnamed.format(j)`` for feature j."""
    n_features = estimator.tree_.n_features
    if isinstance(estimator.tree_, ObliqueTree):
        unnamed = OBLIQUE_FEATURE_NAME
    if feature_names is None:
        names = getattr(estimator, "feature_names_in_", None)
        feature_names = (
            list(names) if names is not None else [unnamed.format(j) for j in range(n_features)]
        )
    feature_names = [str(n) for n in feature_names]
    if len(feature_names) != n_features:
        raise ValueError(
            f"feature_names has {len(feature_names)} names, but the tree has {n_features} features"
        )
    return feature_names


def _check_fitted_and_names(
    estimator, feature_names, class_names, caller, unnamed=GRAPH_FEATURE_NAME
):
    """The feature names to print (``unnamed``: the pattern of unnamed features' names, see
    :func:`_labels`); raises NotFittedError for an unfitted estimator (as scikit-learn's
    exporters do) and ValueError for wrong name counts."""
    check_fitted(estimator, hasattr(estimator, "tree_"), caller)
    if class_names is not None and estimator.tree_.n_outputs > 1:
        raise ValueError(
            f"class_names names one output's classes; this tree has "
            f"{estimator.tree_.n_outputs} outputs, each labelled by its classes_"
        )
    names = _labels(estimator, feature_names, unnamed)
    if class_names is not None and len(class_names) != estimator.tree_.max_n_classes:
        raise ValueError(
            f"class_names has {len(class_names)} names, but the tree has "
            f"{estimator.tree_.max_n_classes} classes"
        )
    return names


def _chosen_tree(estimator, tree_index, caller):
    """The tree estimator to show: ``estimator`` itself, or a forest's tree ``tree_index``
    (required for a forest: its trees differ, and none stands for the others)."""
    if not hasattr(estimator, "n_estimators"):  # a single tree
        if tree_index is not None:
            raise ValueError(
                f"{caller}: tree_index picks a forest's tree, but {type(estimator).__name__} "
                "is a single tree; leave tree_index out"
            )
        return estimator
    trees = getattr(estimator, "estimators_", None)
    check_fitted(estimator, bool(trees), caller)
    last = len(trees) - 1
    if tree_index is None:
        raise ValueError(
            f"{caller}: {type(estimator).__name__} is a forest of {len(trees)} trees; choose "
            f"one with tree_index=0 to {last}"
        )
    if (
        isinstance(tree_index, (bool, np.bool_))
        or not isinstance(tree_index, numbers.Integral)
        or not 0 <= tree_index <= last
    ):
        raise ValueError(
            f"{caller}: tree_index must be an int from 0 to {last} (the forest has "
            f"{len(trees)} trees), got {tree_index!r}"
        )
    return trees[int(tree_index)]


def _missing_marked(estimator, show_missing) -> np.ndarray:
    """Per feature, whether its splits mark the side missing values take: where training
    saw a missing value in it (``missing_in_training_``). Every split sends missing values
    somewhere, but on a feature that had none the side is a default, not something learned,
    and marking it on every line buries the splits where it was. A model saved before
    this was recorded marks every feature; ``show_missing=False`` none."""
    n_features = estimator.tree_.n_features
    if not show_missing:
        return np.zeros(n_features, dtype=bool)
    seen = getattr(estimator, "missing_in_training_", None)
    return np.ones(n_features, dtype=bool) if seen is None else np.asarray(seen, dtype=bool)


def _category_label(estimator, feature, code):
    categories = getattr(estimator, "categories_", None)
    values = None if categories is None else categories[feature]
    if values is None or not 0 <= code < len(values):
        return str(code)
    value = values[code]
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def _subset_words(tree, node) -> np.ndarray:
    """The category set of a subset split: the codes sent left, as uint64 words."""
    offset = tree.category_offset[node]
    words = tree.category_bitsets[offset : offset + tree.n_category_words]
    return np.ascontiguousarray(words).view(np.uint64)


def _children_reach(tree, node, reach):
    """What can reach each child of ``node`` (in child order), from what reaches the node:
    ``reach`` maps a categorical feature to the words of the categories that can still
    arrive (a feature not in it: every category). A subset split on the feature sends
    its set's categories left and the others right; other splits change nothing."""
    if tree.split_kind[node] == MULTIWAY:  # (ID3 never tests its feature again below)
        return [reach] * (int(tree.children_right[node] - tree.children_left[node]) + 1)
    if tree.split_kind[node] != CATEGORICAL_SUBSET:
        return [reach, reach]
    feature = int(tree.feature[node])
    words = _subset_words(tree, node)
    arriving = reach.get(feature)
    if arriving is None:
        arriving = np.full(words.size, np.iinfo(np.uint64).max, dtype=np.uint64)
    return [{**reach, feature: arriving & words}, {**reach, feature: arriving & ~words}]


def _branches(estimator, node, name, number, missing_marked, reach=None):
    """The branches (``_Branch``) of an internal node, in child order.

    ``number`` formats a threshold (each view rounds its own way); the wording is the
    same everywhere. ``missing_marked`` (per feature, :func:`_missing_marked`): whether
    to say where missing values go. A subset split lists only the categories that can
    reach the node (``reach``: see :func:`_children_reach`; None: every category).
    """
    tree = estimator.tree_
    feature = tree.feature[node]
    kind = tree.split_kind[node]
    missing_left = bool(tree.missing_go_to_left[node])
    show_missing = bool(missing_marked[feature])
    if kind == MULTIWAY:
        offset, entries = tree.branch_offset[node], tree.n_branches[node]
        table = tree.branch_children[offset : offset + entries + 1]
        default = table[-1]
        branches = []
        for child in range(tree.children_left[node], tree.children_right[node] + 1):
            codes = np.flatnonzero(table[:-1] == child)
            labels = ", ".join(_category_label(estimator, feature, c) for c in codes)
            relation = f"= {labels}" if codes.size == 1 else f"in {{{labels}}}"
            default_note = _MULTIWAY_DEFAULT_AND_MISSING if show_missing else _MULTIWAY_DEFAULT
            note = default_note if child == default else ""
            branches.append(_Branch(int(child), name, relation, note))
        return branches
    left, right = int(tree.children_left[node]), int(tree.children_right[node])
    if kind == CATEGORICAL_SUBSET:
        words = _subset_words(tree, node)
        arriving = None if reach is None else reach.get(int(feature))
        if arriving is not None:
            words = words & arriving
        categories = getattr(estimator, "categories_", [None] * tree.n_features)[feature]
        known = 64 * tree.n_category_words if categories is None else len(categories)
        members = [int(c) for c in bitset_members(words) if c < known]
        labels = ", ".join(_category_label(estimator, feature, c) for c in members)
        left_relation, right_relation = f"in {{{labels}}}", f"not in {{{labels}}}"
    else:
        threshold = tree.threshold[node]
        if np.isposinf(threshold):  # a split of the missing values from the rest
            return [_Branch(left, name, "is present", ""), _Branch(right, name, "is missing", "")]
        left_relation, right_relation = f"<= {number(threshold)}", f">  {number(threshold)}"
    left_note = _MISSING if show_missing and missing_left else ""
    right_note = _MISSING if show_missing and not missing_left else ""
    return [
        _Branch(left, name, left_relation, left_note),
        _Branch(right, name, right_relation, right_note),
    ]


def _class_label(estimator, node, class_names):
    """The class a node predicts; for several outputs, each output's, as "[a, 2]"."""
    tree = estimator.tree_
    if tree.n_outputs > 1:
        return (
            "["
            + ", ".join(
                str(classes[int(np.argmax(tree.value[node, k, : len(classes)]))])
                for k, classes in enumerate(estimator.classes_)
            )
            + "]"
        )
    names = class_names if class_names is not None else [str(c) for c in estimator.classes_]
    return str(names[int(np.argmax(tree.value[node, 0]))])


def _output_rows(rows):
    """Lines of one row of numbers per output, bracketed as scikit-learn prints a
    multi-output value: "[[a, b]", "[c, d]]"."""
    rows = list(rows)
    rows[0], rows[-1] = "[" + rows[0], rows[-1] + "]"
    return rows


def _leaf_text(estimator, node, class_names, decimals, show_weights):
    tree = estimator.tree_
    if hasattr(estimator, "classes_"):
        text = f"class: {_class_label(estimator, node, class_names)}"
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
    """
    estimator = _chosen_tree(estimator, tree_index, "export_text")
    names = _check_fitted_and_names(
        estimator, feature_names, class_names, "export_text", unnamed=TEXT_FEATURE_NAME
    )
    if isinstance(estimator.tree_, ObliqueTree):  # oblique splits: "0.31·x1 − 0.72·x4 ≤ 1.20"
        return estimator.tree_.export_text(
            feature_names=names,
            class_names=_oblique_class_names(estimator, class_names),
            max_depth=max_depth,
            decimals=decimals,
            show_weights=show_weights,
            spacing=spacing,
        )
    tree = estimator.tree_
    missing_marked = _missing_marked(estimator, show_missing)
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
        branches = _branches(
            estimator, node, names[tree.feature[node]], number, missing_marked, reach
        )
        below = _children_reach(tree, node, reach)
        for branch, arriving in zip(reversed(branches), reversed(below), strict=True):
            stack.append((branch.child, depth + 1, branch.text, arriving))
    return "\n".join(lines) + "\n"


# -- the tree as boxes and labelled edges (export_graphviz, plot_tree) -------------------
_TRUNCATED_COLOR = "#c0c0c0"
_EDGE_TEXT_SCALE = 0.85  # plot_tree's edge labels: 0.85 of the box text


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


def _number(x, precision):
    """x rounded to ``precision`` decimals, as scikit-learn's graphs print numbers
    ("0.5", "784.0")."""
    return str(round(float(x), precision) + 0.0)  # + 0.0: no "-0.0"


def _numbers(values, precision):
    """A list of numbers: whole numbers without decimals ("[50, 0]"), else rounded."""
    rounded = np.round(values, precision)  # weight x fraction: 31.000000000000004
    if np.all(np.mod(rounded, 1) == 0):
        return "[" + ", ".join(str(int(v)) for v in rounded) + "]"
    return "[" + ", ".join(_number(v, precision) for v in values) + "]"


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


def _check_graph_options(label, precision, max_depth):
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
            number = functools.partial(_number, precision=precision)
            branches = _branches(estimator, node, name, number, missing_marked, reach)
            lines.append(branches[0].condition)
    if impurity:
        criterion = str(getattr(estimator, "criterion", "impurity"))
        key = NODE_IMPURITY.get(criterion, criterion)
        lines.append(named(key, _number(tree.impurity[node], precision)))
    if proportion:
        share = 100.0 * tree.n_node_samples[node] / tree.n_node_samples[0]
        lines.append(named("samples", _number(share, precision) + "%"))
    else:
        lines.append(named("samples", str(int(tree.n_node_samples[node]))))
    value = tree.value[node, 0]
    if hasattr(estimator, "classes_"):
        scale = 1.0 if proportion else tree.weighted_n_node_samples[node]
        if tree.n_outputs > 1:  # one line per output: its classes' weights
            rows = _output_rows(
                _numbers(tree.value[node, k, :count] * scale, precision)
                for k, count in enumerate(tree.n_classes)
            )
            lines.append(named("value", rows[0]))
            lines.extend(rows[1:])
        else:
            lines.append(named("value", _numbers(value * scale, precision)))
        lines.append(named("class", _class_label(estimator, node, class_names)))
    elif tree.n_outputs > 1:  # one line per output, as scikit-learn's [[v0]\n[v1]]
        rows = _output_rows(f"[{_number(v, precision)}]" for v in tree.value[node, :, 0])
        lines.append(named("value", rows[0]))
        lines.extend(rows[1:])
    else:
        lines.append(named("value", _number(value[0], precision)))
    return lines


def _graph(
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
    names = _check_fitted_and_names(estimator, feature_names, class_names, caller)
    _check_graph_options(label, precision, max_depth)
    tree = estimator.tree_
    colors = _node_colors(estimator) if filled else None
    missing_marked = _missing_marked(estimator, show_missing)
    number = functools.partial(_number, precision=precision)
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
        branches = _branches(
            estimator, node, names[tree.feature[node]], number, missing_marked, reach
        )
        below = _children_reach(tree, node, reach)
        for i in reversed(range(len(branches))):
            # A binary node's box holds its left condition: its edges read True / False.
            head = branches[i].relation if multiway else ("True" if i == 0 else "False")
            note = branches[i].note
            edge = [head, note] if note else [head]
            stack.append((branches[i].child, node, depth + 1, edge, below[i]))
    return nodes, edges


def _dot_quote(lines):
    """A DOT double-quoted string showing ``lines`` one per line: backslashes and quotes
    escaped, line breaks inside a name shown as line breaks."""
    escaped = []
    for line in lines:
        text = str(line).replace("\\", "\\\\").replace('"', '\\"')
        text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
        escaped.append(text)
    return '"' + "\\n".join(escaped) + '"'


def _dot_source(nodes, edges, *, filled, rounded):
    """The DOT statements of ``_graph``'s boxes and edges."""
    styles = [s for s, on in (("filled", filled), ("rounded", rounded)) if on]
    node_style = f', style="{", ".join(styles)}"' if styles else ""
    out = [
        "digraph Tree {",
        f'node [shape=box{node_style}, color="black", fontname="helvetica"] ;',
        'edge [fontname="helvetica"] ;',
    ]
    edge_of = {edge.child: edge for edge in edges}
    for box in nodes:
        fill = f', fillcolor="{box.color}"' if box.color else ""
        out.append(f"{box.node} [label={_dot_quote(box.lines)}{fill}] ;")
        if box.parent >= 0:
            edge = _dot_quote(edge_of[box.node].lines)
            out.append(f"{box.parent} -> {box.node} [label={edge}] ;")
    out.append("}")
    return "\n".join(out) + "\n"


def export_graphviz(
    estimator,
    out_file=None,
    *,
    max_depth=None,
    feature_names=None,
    class_names=None,
    label="all",
    filled=False,
    impurity=True,
    node_ids=False,
    proportion=False,
    rounded=False,
    precision=3,
    show_missing=True,
    tree_index=None,
):
    """The tree in Graphviz's DOT language (render it with ``dot -Tpng tree.dot``).

    Each box shows the split (a binary node's left condition: "x <= t", "x in {...}";
    a multiway node's feature), the impurity, the samples, the value and, for a
    classifier, the majority class. Edges under a binary node read "True" (left) and
    "False"; edges under a multiway node name their categories. "or missing" marks the
    edge missing values take, under splits of features that had missing values in
    training; a multiway node's default edge takes unseen categories (and missing
    values).

    Parameters
    ----------
    estimator : fitted DecisionTreeClassifier, DecisionTreeRegressor or random forest
    out_file : None, path or file-like object
        None returns the DOT source; a path is written atomically (a temporary file in
        the same folder, then renamed); a file-like object is written to.
    max_depth : int or None
        Nodes deeper than this are drawn as one "(...)" box per cut subtree.
    feature_names, class_names : sequences of str, optional
        Default: the DataFrame's column names (else x[0], x[1], ..., as scikit-learn
        names them; an oblique tree's x0, x1, ...) and ``classes_``.
    label : {"all", "root", "none"}
        Which boxes name their numbers ("samples = 10" or "10").
    filled : bool
        Colour boxes by majority class (regression: by value); the palette is fixed.
    impurity, node_ids, proportion : bool
        Show the impurity; show node ids; show samples and class values as fractions.
    rounded : bool
        Rounded boxes.
    precision : int
        Decimals of thresholds, impurities and values (trailing zeros dropped).
    show_missing : bool
        Mark the edge missing values take (where the feature had missing values in
        training; a model saved without that record: every split). False: nowhere.
    tree_index : int or None
        A forest's tree to draw, by its index in ``estimators_`` (required for a forest;
        left out for a single tree).

    Returns
    -------
    str or None
        The DOT source when ``out_file`` is None.
    """
    chosen = _chosen_tree(estimator, tree_index, "export_graphviz")
    if isinstance(getattr(chosen, "tree_", None), ObliqueTree):
        # Oblique trees: boxes with the condition, impurity, samples, value and class.
        source = chosen.tree_.export_graphviz(
            feature_names=_check_fitted_and_names(
                chosen, feature_names, class_names, "export_graphviz"
            ),
            class_names=_oblique_class_names(chosen, class_names),
            precision=precision,
            criterion=getattr(chosen, "criterion", "impurity"),
        )
        return _write_dot(source, out_file)
    nodes, edges = _graph(
        chosen,
        "export_graphviz",
        max_depth=max_depth,
        feature_names=feature_names,
        class_names=class_names,
        label=label,
        filled=filled,
        impurity=impurity,
        node_ids=node_ids,
        proportion=proportion,
        precision=precision,
        show_missing=show_missing,
    )
    return _write_dot(_dot_source(nodes, edges, filled=filled, rounded=rounded), out_file)


def _write_dot(source, out_file):
    if out_file is None:
        return source
    if hasattr(out_file, "write"):
        out_file.write(source)
    else:
        with atomic_text(out_file, newline="\n") as out:
            out.write(source)
    return None


def _oblique_class_names(estimator, class_names):
    """The class names an oblique tree's leaves print; None for a regressor."""
    if not hasattr(estimator, "classes_"):
        return None
    return [str(c) for c in (estimator.classes_ if class_names is None else class_names)]


def _tidy_positions(nodes):
    """(x, y) in axes fractions: leaves spread evenly left to right, each parent centred
    over its first and last child, one level per depth (any number of children)."""
    children = {}
    for box in nodes:
        if box.parent >= 0:
            children.setdefault(box.parent, []).append(box.node)
    x = {}
    leaves = [box.node for box in nodes if box.node not in children]  # preorder: left to right
    for slot, node in enumerate(leaves):
        x[node] = (slot + 0.5) / len(leaves)
    for box in reversed(nodes):  # children before their parent
        kids = children.get(box.node)
        if kids:
            x[box.node] = (x[kids[0]] + x[kids[-1]]) / 2
    n_levels = max(box.depth for box in nodes) + 1
    positions = {box.node: (x[box.node], 1.0 - (box.depth + 0.5) / n_levels) for box in nodes}
    return positions, len(leaves), n_levels


def _auto_fontsize(ax, nodes, n_slots, n_levels):
    """The largest font (<= 12 pt) at which the widest box fits its leaf slot and the
    tallest box about half its level."""
    extent = ax.get_window_extent()
    widest = max(len(line) for box in nodes for line in box.lines)
    tallest = max(len(box.lines) for box in nodes)
    by_width = extent.width / n_slots * 0.9 / (0.58 * max(widest, 1))
    by_height = extent.height / n_levels * 0.55 / (1.3 * tallest)
    return float(np.clip(min(by_width, by_height) * 72.0 / ax.figure.dpi, 1.0, 12.0))


def plot_tree(
    estimator,
    *,
    max_depth=None,
    feature_names=None,
    class_names=None,
    label="all",
    filled=False,
    impurity=True,
    node_ids=False,
    proportion=False,
    rounded=False,
    precision=3,
    ax=None,
    fontsize=None,
    show_missing=True,
    tree_index=None,
):
    """Draw the tree with matplotlib (``pip install matplotlib``).

    The boxes and edge labels read as ``export_graphviz``'s (see there for the options).
    The layout spreads the leaves evenly and centres each parent over its children, so
    multiway nodes draw as well as binary ones.

    Parameters
    ----------
    ax : matplotlib Axes, optional
        Where to draw (default: the current axes).
    fontsize : float, optional
        Box text size in points; default: as large as fits (at most 12).
    tree_index : int or None
        A forest's tree to draw (required for a forest; left out for a single tree).

    Returns
    -------
    list of matplotlib artists
        One ``Annotation`` per box (preorder, root first), then one ``Text`` per edge
        label.
    """
    nodes, edges = _graph(
        _chosen_tree(estimator, tree_index, "plot_tree"),
        "plot_tree",
        max_depth=max_depth,
        feature_names=feature_names,
        class_names=class_names,
        label=label,
        filled=filled,
        impurity=impurity,
        node_ids=node_ids,
        proportion=proportion,
        precision=precision,
        show_missing=show_missing,
    )
    try:
        import matplotlib  # noqa: F401

        if ax is None:
            from matplotlib import pyplot as plt

            ax = plt.gca()
    except ImportError as error:
        raise ImportError(f"plot_tree needs matplotlib: {install_hint('plot')}") from error
    if fontsize is None:
        _, n_slots, n_levels = _tidy_positions(nodes)
        fontsize = _auto_fontsize(ax, nodes, n_slots, n_levels)
    return _draw(ax, nodes, edges, fontsize=fontsize, rounded=rounded)


def _draw(ax, nodes, edges, *, fontsize, rounded):
    """Draw ``_graph``'s boxes and edges on ``ax``; return the artists (boxes in preorder,
    then edge labels)."""
    positions, _, _ = _tidy_positions(nodes)
    ax.set_axis_off()
    boxes, artists = {}, []
    for box in nodes:  # parents first: an edge's arrow stops at its parent's drawn box
        style = "round,pad=0.3" if rounded else "square,pad=0.3"
        common = dict(
            xycoords="axes fraction",
            textcoords="axes fraction",
            ha="center",
            va="center",
            fontsize=fontsize,
            zorder=3,
            parse_math=False,  # names are plain text, no mathtext
            bbox=dict(boxstyle=style, facecolor=box.color or "white", edgecolor="black"),
        )
        text = "\n".join(box.lines)
        if box.parent < 0:
            artist = ax.annotate(text, xy=positions[box.node], **common)
        else:
            arrow = dict(
                arrowstyle="<-",
                color="black",
                shrinkA=0,
                shrinkB=0,
                patchB=boxes[box.parent].get_bbox_patch(),
            )
            artist = ax.annotate(
                text,
                xy=positions[box.parent],
                xytext=positions[box.node],
                arrowprops=arrow,
                **common,
            )
        boxes[box.node] = artist
        artists.append(artist)
    for edge in edges:
        (x0, y0), (x1, y1) = positions[edge.parent], positions[edge.child]
        artists.append(
            ax.text(
                (x0 + x1) / 2,
                (y0 + y1) / 2,
                "\n".join(edge.lines),
                transform=ax.transAxes,
                ha="center",
                va="center",
                fontsize=_EDGE_TEXT_SCALE * fontsize,
                zorder=4,
                parse_math=False,
                bbox=dict(
                    boxstyle="round,pad=0.15", facecolor="white", edgecolor="none", alpha=0.85
                ),
            )
        )
    return artists


# -- PNG: a drawing sized to the tree, or a refusal before any rendering --------------------
# The most leaf boxes (the tree's leaves, and the "(...)" boxes standing for cut subtrees)
# a PNG shows side by side. At the drawing's 10-point text a leaf box ("value = [1234,
# 567]", "squared_error = 12.345") is 1.6 to 2.3 inches wide, so 64 of them make an image
# 10,000 to 15,000 pixels wide at 100 dpi: about the most that image viewers and browsers
# open (16,384 pixels a side is a common limit) and a reader can still pan across. More
# leaves would need smaller text than can be read; the text and DOT exports show any tree.
MAX_PNG_LEAVES = 64
MAX_PNG_PIXELS = 16_384  # on either side: long labels can make even fewer leaves too wide
PNG_DPI = 100
PNG_FONT_POINTS = 10.0
# A box line longer than this (a category set: "education in {10th, 11th, ...}") is
# wrapped in the PNG: one long line would widen every leaf slot of the picture.
PNG_LINE_CHARACTERS = 40
# Text measures, in ems of the font: DejaVu Sans (matplotlib's default) and Helvetica
# average about 0.6 em a character over digits, letters and spaces; a line is 1.2 em
# high; a box adds its padding (0.3 em a side) and a gap to its neighbour.
_CHAR_EMS = 0.6
_LINE_EMS = 1.2
_BOX_EMS = 1.4
_LEVEL_GAP_EMS = 2.0
_DOT_TIMEOUT_SECONDS = 300


class TreeTooLargeToDraw(ValueError):
    """``export_png``'s refusal, raised before any rendering: the drawing would be
    unreadable. ``fitting_depth`` is the deepest ``max_depth`` whose drawing is readable
    (None where even the root's level is not)."""

    def __init__(self, problem: str, fitting_depth: int | None):
        self.problem = problem
        self.fitting_depth = fitting_depth
        super().__init__(self.advice("max_depth=", "export_text or export_graphviz"))

    def advice(self, depth_option: str, whole_tree: str) -> str:
        """The message, in the caller's words: ``depth_option`` cuts the tree
        ("max_depth=", "--max-depth "), ``whole_tree`` shows all of it as text or DOT."""
        if self.fitting_depth is None:
            return f"{self.problem}; show it with {whole_tree} instead"
        return (
            f"{self.problem}; draw its top with {depth_option}{self.fitting_depth}, or "
            f"show the whole tree with {whole_tree}"
        )


def _leaf_boxes_by_depth(tree) -> np.ndarray:
    """leaf_boxes[d]: the boxes at the bottom of a drawing cut at ``max_depth=d``, for d =
    0 .. the tree's depth: its leaves down to depth d, and a "(...)" box for each node at
    depth d + 1 (the root of a cut subtree)."""
    depth = np.asarray(tree.depth, dtype=np.int64)
    n_levels = int(depth.max()) + 1
    leaves = np.asarray(tree.children_left) == TREE_LEAF
    leaves_down_to = np.cumsum(np.bincount(depth[leaves], minlength=n_levels))
    nodes_at = np.bincount(depth, minlength=n_levels + 1)
    return leaves_down_to[:n_levels] + nodes_at[1 : n_levels + 1]


def _wrapped(lines, width):
    """Text lines of at most ``width`` characters where they can be broken (at spaces):
    a line break inside a name stays one."""
    out = []
    for line in lines:
        for part in str(line).split("\n"):
            out.extend(
                textwrap.wrap(part, width, break_long_words=False, break_on_hyphens=False) or [part]
            )
    return out


def _png_graph(estimator, depth, graph_options):
    """``_graph``'s boxes and edges cut at ``depth``, their lines wrapped for the PNG."""
    nodes, edges = _graph(estimator, "export_png", max_depth=depth, **graph_options)
    nodes = [box._replace(lines=_wrapped(box.lines, PNG_LINE_CHARACTERS)) for box in nodes]
    edges = [edge._replace(lines=_wrapped(edge.lines, PNG_LINE_CHARACTERS)) for edge in edges]
    return nodes, edges


def _drawing_inches(nodes, edges) -> tuple[float, float]:
    """(width, height) of a drawing of these boxes at PNG_FONT_POINTS, laid out as
    ``_tidy_positions`` lays them out: leaf slots wide enough that every box, and the label
    of the edge above it, fits the slots below it; levels tall enough for the tallest box
    and edge label."""
    children = {}
    for box in nodes:
        if box.parent >= 0:
            children.setdefault(box.parent, []).append(box.node)
    slots = {}
    for box in reversed(nodes):  # children before their parent
        kids = children.get(box.node)
        slots[box.node] = sum(slots[k] for k in kids) if kids else 1

    def width(lines, scale):
        return (max(map(len, lines)) * _CHAR_EMS + _BOX_EMS) * scale

    slot_ems = max(width(box.lines, 1.0) / slots[box.node] for box in nodes)
    for edge in edges:
        slot_ems = max(slot_ems, width(edge.lines, _EDGE_TEXT_SCALE) / slots[edge.child])
    tallest_box = max(len(box.lines) for box in nodes)
    tallest_edge = max((len(edge.lines) for edge in edges), default=0)
    level_ems = (tallest_box + _EDGE_TEXT_SCALE * tallest_edge) * _LINE_EMS + _LEVEL_GAP_EMS
    n_levels = max(box.depth for box in nodes) + 1
    em = PNG_FONT_POINTS / 72.0  # inches
    return slot_ems * slots[nodes[0].node] * em, level_ems * n_levels * em


def _png_problem(estimator, depth, leaf_boxes, graph_options):
    """Why a drawing cut at ``depth`` would be unreadable (None: it would not be); with
    the boxes, edges and size (inches) of the drawing where it was laid out."""
    if leaf_boxes[depth] > MAX_PNG_LEAVES:
        problem = (
            f"the tree would be drawn with {leaf_boxes[depth]:,} leaf boxes side by side, "
            f"more than the {MAX_PNG_LEAVES} a readable PNG holds"
        )
        return problem, None
    nodes, edges = _png_graph(estimator, depth, graph_options)
    inches = _drawing_inches(nodes, edges)
    pixels = [round(PNG_DPI * side) for side in inches]
    if max(pixels) > MAX_PNG_PIXELS:
        problem = (
            f"at readable {PNG_FONT_POINTS:g}-point text the drawing would be "
            f"{pixels[0]:,} x {pixels[1]:,} pixels, more than the {MAX_PNG_PIXELS:,} a side "
            "that image viewers open"
        )
        return problem, None
    return None, (nodes, edges, inches)


def export_png(
    estimator,
    out_file,
    *,
    max_depth=None,
    feature_names=None,
    class_names=None,
    filled=True,
    precision=3,
    show_missing=True,
    renderer="auto",
    tree_index=None,
) -> str:
    """Draw the tree into the PNG file ``out_file``, sized to the tree, and return the
    renderer used ("dot" or "matplotlib").

    The boxes and edges read as :func:`export_graphviz`'s, with lines longer than
    ``PNG_LINE_CHARACTERS`` wrapped. The text is a readable 10 points at 100 dpi; the
    picture is as wide as the leaf boxes shown need and as tall as the levels shown need.
    A tree that would draw more than ``MAX_PNG_LEAVES`` leaf boxes side by side (or an
    image wider or taller than ``MAX_PNG_PIXELS``) is refused with
    :class:`TreeTooLargeToDraw` before anything is rendered; its message names the
    deepest ``max_depth`` that draws readably.

    Parameters
    ----------
    out_file : path
        Written atomically (a temporary file in the same folder, then renamed).
    max_depth, feature_names, class_names, filled, precision, show_missing
        As :func:`export_graphviz`.
    renderer : {"auto", "dot", "matplotlib"}
        ``dot``: Graphviz's ``dot`` program (on the PATH) lays out and draws the boxes;
        ``matplotlib``: :func:`plot_tree`'s drawing on a figure of the computed size.
        ``auto``: ``dot`` where it is installed, else matplotlib.
    tree_index : int or None
        A forest's tree to draw (required for a forest; left out for a single tree).
    """
    estimator = _chosen_tree(estimator, tree_index, "export_png")
    if renderer not in ("auto", "dot", "matplotlib"):
        raise ValueError(f"renderer must be 'auto', 'dot' or 'matplotlib', got {renderer!r}")
    graph_options = dict(
        feature_names=feature_names,
        class_names=class_names,
        label="all",
        filled=filled,
        impurity=True,
        node_ids=False,
        proportion=False,
        precision=precision,
        show_missing=show_missing,
    )
    _check_fitted_and_names(estimator, feature_names, class_names, "export_png")
    _check_graph_options("all", precision, max_depth)
    dot = shutil.which("dot") if renderer in ("auto", "dot") else None
    if renderer == "dot" and dot is None:
        raise FileNotFoundError(
            "renderer='dot' needs Graphviz's dot program on the PATH (install Graphviz)"
        )
    if dot is None:
        try:
            from matplotlib.figure import Figure
        except ImportError as error:
            raise ImportError(
                "export_png needs Graphviz's dot program or matplotlib: install Graphviz, "
                f"or {install_hint('plot')}"
            ) from error
    leaf_boxes = _leaf_boxes_by_depth(estimator.tree_)
    deepest = len(leaf_boxes) - 1
    depth = deepest if max_depth is None else min(int(max_depth), deepest)
    problem, drawing = _png_problem(estimator, depth, leaf_boxes, graph_options)
    if problem is not None:
        fitting = next(
            (
                d
                for d in range(depth - 1, -1, -1)
                if _png_problem(estimator, d, leaf_boxes, graph_options)[0] is None
            ),
            None,
        )
        raise TreeTooLargeToDraw(problem, fitting)
    nodes, edges, (width, height) = drawing
    if dot is not None:
        _render_with_dot(dot, _dot_source(nodes, edges, filled=filled, rounded=False), out_file)
        return "dot"
    figure = Figure(figsize=(max(width, 2.0), max(height, 1.5)), dpi=PNG_DPI)
    axes = figure.add_axes((0.0, 0.0, 1.0, 1.0))
    _draw(axes, nodes, edges, fontsize=PNG_FONT_POINTS, rounded=False)
    with atomic_path(out_file) as temporary:
        figure.savefig(temporary, format="png", dpi=PNG_DPI)
    return "matplotlib"


def _render_with_dot(dot, source, out_file):
    """Graphviz's ``dot`` draws ``source`` into ``out_file`` (atomically), at the text size
    and resolution of the matplotlib drawing."""
    with atomic_path(out_file) as temporary:
        command = [
            dot,
            "-Tpng",
            f"-Gdpi={PNG_DPI}",
            f"-Nfontsize={PNG_FONT_POINTS:g}",
            f"-Efontsize={_EDGE_TEXT_SCALE * PNG_FONT_POINTS:g}",
            "-o",
            temporary,
        ]
        try:
            result = subprocess.run(
                command,
                input=source,
                capture_output=True,
                text=True,
                encoding="utf-8",
                timeout=_DOT_TIMEOUT_SECONDS,
            )
        except subprocess.TimeoutExpired:
            raise OSError(
                f"Graphviz's dot took more than {_DOT_TIMEOUT_SECONDS} s to draw the tree; "
                "draw less of it (max_depth)"
            ) from None
        if result.returncode != 0:
            said = " ".join(result.stderr.split())[-300:] or "no message"
            raise OSError(f"Graphviz's dot failed (exit status {result.returncode}): {said}")
