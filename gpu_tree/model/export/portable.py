"""What the ONNX and Treelite exports share: the trees of a model, the numbers each tree
adds up, the refusals, and the numeric input both exported forms read.

An exported model reads one float array of ``n_features`` columns, categories coded as
the model file keeps them (``export_inputs``): category ``k`` of a categorical feature's
fitted categories is the number ``k``, a missing value and a category never seen in
training NaN. Prediction follows gpu_tree's walk (``kernels/_tree_walk.py``): a numeric
node sends ``x <= threshold`` left, a subset node the codes of its set, a multiway node
each code to its child; NaN follows the node's missing side (a multiway node's: its
default child). An oblique tree's node sends ``coefficients @ x <= threshold`` left
(``node_tests`` reads both kinds of tree alike); only ONNX translates it, Treelite's
refusal names the node.

The outputs are the leaves' values, averaged over the trees: a classifier's class
fractions (its ``predict_proba``), a regressor's mean targets (its ``predict``); with
several outputs, each output's columns one after another (a classifier's: each output's
own classes, the padding past them dropped).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpu_tree.model.oblique import (
    OBLIQUE,
    TREE_LEAF,
    ObliqueTree,
    checked_oblique_X,
    linear_form,
)
from gpu_tree.model.tree import CATEGORICAL_SUBSET, LEAF, MULTIWAY, NUMERIC, Tree
from gpu_tree.utils.install_hints import install_hint

# The kind of an oblique tree's hyperplane test (``coefficients @ x <= threshold``), past
# the axis-parallel kinds of ``Tree.split_kind``.
OBLIQUE_SPLIT = 4

# The forests whose prediction is their trees' mean (a model file's forest takes its
# estimator's class name).
FORESTS = (
    "RandomForestClassifier",
    "RandomForestRegressor",
    "ExtraTreesClassifier",
    "ExtraTreesRegressor",
)


class Exported(NamedTuple):
    """The trees of a model as an export reads them."""

    trees: list  # of Tree
    n_features: int
    classifier: bool
    # (output, class) of each exported column: the column's value is ``value[:, output,
    # class]`` of a tree's node (a regressor's class is 0).
    columns: list


def exported_trees(model, what: str, oblique: bool = False) -> Exported:
    """``model``'s trees (a tree estimator's one, a forest's ``estimators_``), checked to
    be what ``what`` (the export's name) translates; a ``ValueError`` names what it
    refuses and the way out. ``oblique``: whether the export translates oblique splits
    (an oblique tree without one is an axis-parallel tree to every export)."""
    name = type(model).__name__
    if hasattr(model, "estimators_") and not hasattr(model, "tree_"):
        forest = any(base.__name__ in FORESTS for base in type(model).__mro__)
        members = list(model.estimators_)
        if not forest or not all(hasattr(m, "tree_") for m in members):
            raise ValueError(
                f"{what} exports a decision tree or a forest that averages its trees "
                f"({', '.join(FORESTS)}); {name} is neither: export its trees one by one"
            )
        if not members:
            raise ValueError(f"{what} needs a fitted forest; {name} has no trees (fit it first)")
        trees = [m.tree_ for m in members]
    elif hasattr(model, "tree_"):
        trees = [model.tree_]
    else:
        raise ValueError(
            f"{what} needs a fitted tree or forest; {name} has no trees (fit it first)"
        )
    for tree in trees:
        if isinstance(tree, ObliqueTree):
            if not oblique and tree.n_oblique:
                raise ValueError(_oblique_refusal(what, name, tree, model))
        elif not isinstance(tree, Tree):
            raise ValueError(f"{what} cannot translate {name}: its tree_ is no gpu_tree tree")
    first = trees[0]
    if getattr(first, "class_counts", None) is not None:
        counts = first.class_counts
    else:
        counts = (first.max_n_classes,) * first.n_outputs
    classifier = bool(getattr(model, "_is_classification", hasattr(model, "classes_")))
    if not classifier:
        counts = (1,) * first.n_outputs
    columns = [(k, c) for k, n in enumerate(counts) for c in range(n)]
    return Exported(trees, first.n_features, classifier, columns)


def _oblique_refusal(what, name, tree, model) -> str:
    """The refusal of an oblique split: the first one, written out, and the way out."""
    node = int(np.flatnonzero(tree.is_oblique)[0])
    names = getattr(model, "feature_names_in_", None)
    names = [f"x{j}" for j in range(tree.n_features)] if names is None else list(names)
    split = f"{linear_form(tree.coefficients[node], names)} <= {tree.threshold[node]:.6g}"
    return (
        f"{what} cannot translate {name}: its node {node} splits on {split}, and oblique "
        "splits (a linear combination of features) have no test in the format. Export "
        "it with gpu_tree.export_onnx (gputree export --format onnx), whose graph computes "
        "the combinations, or fit an axis-parallel tree (DecisionTreeClassifier / "
        "DecisionTreeRegressor)"
    )


class NodeTests(NamedTuple):
    """Each node's test, for a ``Tree`` or an ``ObliqueTree`` alike (arrays of node_count
    entries)."""

    kind: np.ndarray  # LEAF, NUMERIC, CATEGORICAL_SUBSET, MULTIWAY or OBLIQUE_SPLIT
    feature: np.ndarray  # the feature tested (an oblique split's: OBLIQUE)
    threshold: np.ndarray  # left where x <= threshold (numeric and oblique splits)
    missing_left: np.ndarray  # whether NaN goes left (a multiway node's: unused)
    left: np.ndarray
    right: np.ndarray


def node_tests(tree) -> NodeTests:
    """The tests of ``tree``'s nodes. An oblique tree's NaN goes right, as its walk
    (``ObliqueTree.goes_left``: ``value <= threshold``, false for NaN) sends it; its
    estimators refuse NaN, and so does :func:`export_inputs` for them."""
    if isinstance(tree, ObliqueTree):
        leaf = tree.children_left == TREE_LEAF
        kind = np.where(leaf, LEAF, np.where(tree.feature == OBLIQUE, OBLIQUE_SPLIT, NUMERIC))
        missing_left = np.zeros(tree.node_count, dtype=bool)
    else:
        kind, missing_left = tree.split_kind, tree.missing_go_to_left.astype(bool)
    return NodeTests(
        np.asarray(kind),
        tree.feature,
        tree.threshold,
        missing_left,
        tree.children_left,
        tree.children_right,
    )


def category_set(tree: Tree, node: int) -> list:
    """The category codes a subset node sends left, in increasing order."""
    start = int(tree.category_offset[node])
    words = tree.category_bitsets[start : start + tree.n_category_words].astype("<i8")
    bits = np.unpackbits(words.view(np.uint8), bitorder="little")
    return [int(code) for code in np.flatnonzero(bits)]


def multiway_chain(tree: Tree, node: int):
    """A multiway node as a chain of equality tests: ``(codes, default)``, ``codes`` the
    (code, child) pairs whose child is not the node's default child (missing values and
    unseen or later codes), in code order. A row tests ``x == code`` down the chain and
    ends at ``default`` where none holds; NaN holds none."""
    start = int(tree.branch_offset[node])
    n = int(tree.n_branches[node])
    table = tree.branch_children[start : start + n + 1]
    default = int(table[n])
    return [(k, int(child)) for k, child in enumerate(table[:n]) if child != default], default


def leaf_values(tree: Tree, columns) -> np.ndarray:
    """Every node's exported values, (node_count, len(columns)), float64."""
    value = tree.value
    return np.stack([value[:, k, c] for k, c in columns], axis=1)


def float32_threshold(threshold) -> np.ndarray:
    """The float32 thresholds of a float32 export: for each float64 ``t``, the largest
    float32 not above it. With ``x <= t32`` (BRANCH_LEQ), every float32 ``x`` goes the
    side it goes in gpu_tree (``x <= t``): a float32 above ``t32`` and at most ``t``
    would be a float32 between ``t32`` and ``t``, and ``t32`` is the largest. Float64
    inputs that are not float32 numbers are rounded to the nearest when cast, and may
    cross a threshold that lies within half a float32 spacing of them."""
    threshold = np.asarray(threshold, dtype=np.float64)
    with np.errstate(over="ignore"):
        rounded = threshold.astype(np.float32)
    above = rounded.astype(np.float64) > threshold
    rounded[above] = np.nextafter(rounded[above], np.float32(-np.inf))
    return rounded


def needed(package: str, what: str, extra: str = "export"):
    """Import ``package`` for the export ``what``, or an ``ImportError`` with the install
    hint."""
    import importlib

    try:
        return importlib.import_module(package)
    except ImportError as error:
        raise ImportError(f"{what} needs {package}: {install_hint(extra)}") from error


def export_inputs(model, X) -> np.ndarray:
    """The numeric array an exported model (:func:`gpu_tree.export_onnx`,
    :func:`gpu_tree.export_treelite`) reads for the rows ``X``.

    Numeric columns are X's values as float64; each categorical column holds its
    category's code, as the model file keeps the categories: the position of the
    category in the feature's fitted categories (0, 1, ...). Missing values, and
    categories the fit never saw, are NaN, so that the exported model sends them where
    gpu_tree does: along each node's missing side.

    Parameters
    ----------
    model : fitted gpu_tree tree or forest estimator
        The model that was exported (a forest's trees share its categories).
    X : array-like or DataFrame of shape (n_samples, n_features)
        The rows as the model's ``predict`` takes them (raw categories, names checked;
        an oblique tree's refuse NaN, as its ``predict`` does).

    Returns
    -------
    ndarray of float64, shape (n_samples, n_features)
        The coded rows: pass them to the exported model (cast to float32 for an ONNX
        model exported with ``dtype="float32"``).
    """
    from gpu_tree.data.predict_input import checked_host_X, coded_for_predict

    member = model.estimators_[0] if hasattr(model, "estimators_") else model
    if not hasattr(member, "n_features_in_"):
        raise ValueError(
            f"export_inputs needs a fitted model; {type(model).__name__} is not fitted"
        )
    if isinstance(getattr(member, "tree_", None), ObliqueTree):  # NaN refused, as predict does
        return np.ascontiguousarray(checked_oblique_X(member, X))
    X = checked_host_X(member, coded_for_predict(member, X))
    if not isinstance(X, np.ndarray):  # a SciPy sparse matrix, checked: its dense rows
        X = X.toarray()
    return np.ascontiguousarray(X, dtype=np.float64)


__all__ = [
    "CATEGORICAL_SUBSET",
    "LEAF",
    "MULTIWAY",
    "NUMERIC",
    "OBLIQUE_SPLIT",
    "Exported",
    "NodeTests",
    "category_set",
    "export_inputs",
    "exported_trees",
    "float32_threshold",
    "leaf_values",
    "multiway_chain",
    "needed",
    "node_tests",
]
