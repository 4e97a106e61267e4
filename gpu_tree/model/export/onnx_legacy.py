"""ONNX export for runtimes that read only the older tree operators: ``ai.onnx.ml`` opset
3's ``TreeEnsembleClassifier`` and ``TreeEnsembleRegressor`` (``export_onnx(...,
operator="legacy")``).

They have no set test: a subset node becomes a chain of ``BRANCH_EQ`` tests, one per
code it sends left, each test's true branch the node's left child (the chain's tests
share it) and the last one's false branch its right child; NaN takes the node's missing
side at the chain's first test (``nodes_missing_value_tracks_true``) and fails every
``BRANCH_EQ`` after it. Multiway nodes and numeric nodes are as in opset 5
(:mod:`.onnx_trees`). Each tree is written once, its leaves carrying every exported
column's value divided by the number of trees, so that the trees' sum is their mean.

Precision: the operators' scores are float32 tensors. With ``dtype="float64"`` the input,
thresholds and leaf weights are float64 (the ``*_as_tensor`` attributes, which
onnxruntime reads for a float64 input): every row goes where gpu_tree sends it, and
onnxruntime adds the leaves in float64 and rounds the sum once to float32, so an output
is within 2⁻²⁴ of gpu_tree's relative to it, plus n_trees·2⁻⁵² times the largest leaf
for a forest. With ``dtype="float32"`` thresholds follow opset 5's float32 rule (the
largest float32 not above gpu_tree's) and leaves and sums are float32.

A single-output classifier is a ``TreeEnsembleClassifier``: ``label`` (the class of
highest float32 probability, the first on ties, as ``predict`` picks it from the float64
ones: they differ only where two classes' probabilities are within a float32 rounding,
2⁻²⁴ relative, of each other; integer classes as int64, others as their text) and
``probabilities``. A classifier of several outputs has no one label:
it is a ``TreeEnsembleRegressor`` whose ``probabilities`` are each output's classes side
by side. A regressor is a ``TreeEnsembleRegressor`` (``predictions``).
"""

from __future__ import annotations

import numpy as np

from gpu_tree.model.export.onnx_trees import BRANCH_EQ, BRANCH_LEQ, BRANCH_MEMBER
from gpu_tree.model.export.portable import float32_threshold, leaf_values

LEGACY_ML_OPSET = 3
LEGACY_OPSET = 13
LEGACY_IR_VERSION = 7
MODE_NAMES = {BRANCH_LEQ: "BRANCH_LEQ", BRANCH_EQ: "BRANCH_EQ"}


def _legacy_nodes(tests, n_leaves):
    """One tree's tests and leaves as the legacy operators' nodes: a list of (mode name,
    feature, value, true id, false id, missing_true) for the tests, set tests unrolled,
    then the leaves' ids (numbered after the tests)."""
    first_id = []
    count = 0
    for test in tests:
        first_id.append(count)
        count += len(test.members) if test.mode == BRANCH_MEMBER else 1
    leaf_ids = list(range(count, count + n_leaves))

    def node_id(ref):
        return leaf_ids[ref[1]] if ref[0] else first_id[ref[1]]

    nodes = []
    for test in tests:
        true_id, false_id = node_id(test.true_ref), node_id(test.false_ref)
        if test.mode != BRANCH_MEMBER:
            mode = MODE_NAMES[test.mode]
            nodes.append((mode, test.feature, test.split, true_id, false_id, test.missing_true))
            continue
        start = len(nodes)
        for k, code in enumerate(test.members):
            last = k == len(test.members) - 1
            next_id = false_id if last else start + k + 1
            missing = test.missing_true if k == 0 else 0
            nodes.append(("BRANCH_EQ", test.feature, float(code), true_id, next_id, missing))
    return nodes, leaf_ids


def legacy_operator(exported, graphs, dtype, tree_input, classes, scores):
    """The graph node of a ``TreeEnsembleClassifier`` or ``TreeEnsembleRegressor`` over
    ``graphs`` (each tree's (tests, leaves) from :func:`.onnx_trees.tree_graph`), reading
    ``tree_input`` and writing the float32 ``scores``: (nodes, initializers, the
    classifier's label output as (name, ONNX element type, shape), or None).
    ``classes``: a single-output classifier's labels, else None (a
    ``TreeEnsembleRegressor``)."""
    from onnx import TensorProto, helper, numpy_helper

    columns = exported.columns
    n_trees = len(exported.trees)
    tree_ids, node_ids, features, modes, values = [], [], [], [], []
    true_ids, false_ids, missing = [], [], []
    leaf_tree, leaf_node, leaf_column, weights = [], [], [], []
    for tree_id, (tree, (tests, leaves)) in enumerate(zip(exported.trees, graphs, strict=True)):
        nodes, leaf_ids = _legacy_nodes(tests, len(leaves))
        for node_id, (mode, feature, value, true_id, false_id, missing_true) in enumerate(nodes):
            tree_ids.append(tree_id)
            node_ids.append(node_id)
            modes.append(mode)
            features.append(feature)
            values.append(value)
            true_ids.append(true_id)
            false_ids.append(false_id)
            missing.append(missing_true)
        for leaf_id in leaf_ids:
            tree_ids.append(tree_id)
            node_ids.append(leaf_id)
            modes.append("LEAF")
            features.append(0)
            values.append(0.0)
            true_ids.append(0)
            false_ids.append(0)
            missing.append(0)
        # The trees' mean as their sum: each leaf's values divided by the number of trees.
        leaf_weights = leaf_values(tree, columns)[leaves] / n_trees
        for leaf_id, row in zip(leaf_ids, leaf_weights, strict=True):
            leaf_tree.extend([tree_id] * len(columns))
            leaf_node.extend([leaf_id] * len(columns))
            leaf_column.extend(range(len(columns)))
            weights.extend(row.tolist())

    values = np.asarray(values, dtype=np.float64)
    numeric = np.asarray(modes) == "BRANCH_LEQ"
    attributes = dict(
        nodes_treeids=tree_ids,
        nodes_nodeids=node_ids,
        nodes_featureids=features,
        nodes_modes=modes,
        nodes_truenodeids=true_ids,
        nodes_falsenodeids=false_ids,
        nodes_missing_value_tracks_true=missing,
        post_transform="NONE",
    )
    prefix = "class" if classes is not None else "target"
    attributes.update(
        {
            f"{prefix}_treeids": leaf_tree,
            f"{prefix}_nodeids": leaf_node,
            f"{prefix}_ids": leaf_column,
        }
    )
    if dtype == "float64":  # the double attributes, which onnxruntime reads for a double input
        attributes["nodes_values_as_tensor"] = numpy_helper.from_array(values, "nodes_values")
        attributes[f"{prefix}_weights_as_tensor"] = numpy_helper.from_array(
            np.asarray(weights, dtype=np.float64), "weights"
        )
    else:
        values32 = np.where(numeric, float32_threshold(values), values.astype(np.float32))
        attributes["nodes_values"] = values32.tolist()
        attributes[f"{prefix}_weights"] = np.asarray(weights, dtype=np.float32).tolist()

    if classes is None:
        attributes.update(n_targets=len(columns), aggregate_function="SUM")
        node = helper.make_node(
            "TreeEnsembleRegressor", [tree_input], [scores], domain="ai.onnx.ml", **attributes
        )
        return [node], [], None
    # The label is computed from the probabilities (ArgMax, the first on ties, then the
    # class): onnxruntime's own label for two classes is class 1 wherever its score is
    # above 0, not the class of highest probability.
    attributes["classlabels_int64s"] = list(range(len(classes)))
    if np.asarray(classes).dtype.kind in "iu":
        labels = np.asarray(classes, dtype=np.int64)
        label_type = TensorProto.INT64
    else:
        labels = np.array([str(c) for c in classes], dtype=object)
        label_type = TensorProto.STRING
    nodes = [
        helper.make_node(
            "TreeEnsembleClassifier",
            [tree_input],
            ["operator_label", scores],
            domain="ai.onnx.ml",
            **attributes,
        ),
        helper.make_node("ArgMax", [scores], ["class_index"], axis=1, keepdims=0),
        helper.make_node("Gather", ["classes", "class_index"], ["label"], axis=0),
    ]
    return nodes, [numpy_helper.from_array(labels, "classes")], ("label", label_type, [None])
