"""What every view of a tree shares: the tree to show (a forest's by ``tree_index``), the
feature and class names to print, and the words of each branch (:func:`node_branches`:
thresholds, category sets, multiway branches, where missing values go)."""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np

from gpu_tree.data.stats import bitset_members
from gpu_tree.model.oblique import ObliqueTree
from gpu_tree.model.tree import CATEGORICAL_SUBSET, MULTIWAY
from gpu_tree.utils.compat import check_fitted

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


def check_fitted_and_names(
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


def chosen_tree(estimator, tree_index, caller):
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


def missing_marks(estimator, show_missing) -> np.ndarray:
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


def children_reach(tree, node, reach):
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


def node_branches(estimator, node, name, number, missing_marked, reach=None):
    """The branches (``_Branch``) of an internal node, in child order.

    ``number`` formats a threshold (each view rounds its own way); the wording is the
    same everywhere. ``missing_marked`` (per feature, :func:`missing_marks`): whether
    to say where missing values go. A subset split lists only the categories that can
    reach the node (``reach``: see :func:`children_reach`; None: every category).
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


def class_label(estimator, node, class_names):
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


def output_rows(rows):
    """Lines of one row of numbers per output, bracketed as scikit-learn prints a
    multi-output value: "[[a, b]", "[c, d]]"."""
    rows = list(rows)
    rows[0], rows[-1] = "[" + rows[0], rows[-1] + "]"
    return rows


def oblique_class_names(estimator, class_names):
    """The class names an oblique tree's leaves print; None for a regressor."""
    if not hasattr(estimator, "classes_"):
        return None
    return [str(c) for c in (estimator.classes_ if class_names is None else class_names)]
