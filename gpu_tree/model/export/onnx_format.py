"""ONNX export: a fitted tree or forest as one ``ai.onnx.ml`` opset-5 ``TreeEnsemble``.

Opset 5's ``TreeEnsemble`` is the one ONNX tree operator with set-membership tests
(``BRANCH_MEMBER``), a missing-value side on every node, and float64 thresholds and
leaves; the older ``TreeEnsembleClassifier`` / ``TreeEnsembleRegressor`` have no set
test and give float32 scores. onnxruntime runs it from 1.21, but 1.21 and 1.22 exhaust
memory on category sets of some tens of codes (adult's; onnxruntime #25400): use 1.23 on.

- A numeric node is ``BRANCH_LEQ`` (``x <= threshold`` true, left); its missing side is
  ``nodes_missing_value_tracks_true``.
- A subset node is ``BRANCH_MEMBER`` over the category codes it sends left.
- A multiway node is a chain of ``BRANCH_EQ`` tests, one per code whose child is not
  the node's default child; NaN fails them all and ends at the default child.

A ``TreeEnsemble`` leaf adds one weight to one target, so each tree is written once per
exported column (class or output), its leaves carrying that column's value; the trees'
sums are divided by their number (a ``Div``), as gpu_tree averages a forest: per row the
trees added in order, then divided.
"""

from __future__ import annotations

import numpy as np

from gpu_tree.model.export.portable import (
    CATEGORICAL_SUBSET,
    LEAF,
    MULTIWAY,
    category_set,
    exported_trees,
    float32_threshold,
    leaf_values,
    multiway_chain,
    needed,
)

# ai.onnx.ml opset 5 TreeEnsemble's node modes and aggregate function.
BRANCH_LEQ = 0
BRANCH_EQ = 4
BRANCH_MEMBER = 6
AGGREGATE_SUM = 1
ONNX_OPSET = 21
ONNX_ML_OPSET = 5


def _tree_graph(tree):
    """One tree as ``TreeEnsemble`` nodes: (nodes, leaves), ``nodes`` a list of
    [mode, feature, split, members, true_ref, false_ref, missing_true] and ``leaves`` the
    gpu_tree node of each leaf; a ref is ``(is_leaf, index)``. The root is node 0."""
    nodes = []
    leaves = []
    kinds = tree.split_kind
    # (gpu_tree node, slot to fill with its ref): (list, position) or None for the root.
    pending = [(0, None)]

    def new_node(mode, feature, split, members, missing_true):
        nodes.append([mode, feature, split, members, None, None, missing_true])
        return len(nodes) - 1

    def fill(slot, ref):
        if slot is not None:
            nodes[slot[0]][slot[1]] = ref

    while pending:
        node, slot = pending.pop()
        kind = int(kinds[node])
        feature = int(tree.feature[node])
        if kind == LEAF:
            leaves.append(node)
            ref = (True, len(leaves) - 1)
            if slot is None:  # a tree of one leaf: a test whose both sides reach it
                index = new_node(BRANCH_LEQ, 0, 0.0, None, 1)
                nodes[index][4] = nodes[index][5] = ref
            else:
                fill(slot, ref)
            continue
        left, right = int(tree.children_left[node]), int(tree.children_right[node])
        missing_left = int(tree.missing_go_to_left[node])
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
        else:
            index = new_node(BRANCH_LEQ, feature, float(tree.threshold[node]), None, missing_left)
        fill(slot, (False, index))
        pending.append((right, (index, 5)))
        pending.append((left, (index, 4)))
    return nodes, leaves


def export_onnx(model, dtype="float64", name: str = "gpu_tree"):
    """A fitted tree or forest as an ONNX model (``ai.onnx.ml`` opset 5 ``TreeEnsemble``).

    The model reads one input ``X``: the coded rows of :func:`gpu_tree.export_inputs`
    (n_samples, n_features), categories as their codes, missing values and unseen
    categories NaN. Its one output is ``probabilities`` (a classifier's
    ``predict_proba``) or ``predictions`` (a regressor's ``predict``): (n_samples,
    n_columns), a single-output regressor's (n_samples,). With several outputs, each
    output's columns follow one another (a classifier's: each output's own classes).

    With ``dtype="float64"``, thresholds, leaves and the input are float64: the exported
    model sends every row where gpu_tree does and (in onnxruntime, which adds the trees in
    order) returns the same numbers. With ``dtype="float32"`` (for runtimes that read
    float only), each threshold ``t`` is the largest float32 not above it, so that every
    float32 value goes the side it goes in gpu_tree (``x <= t``), training values
    included; float64 values that are not float32 numbers are rounded when cast and may
    cross a threshold within half a float32 spacing of them; leaf values are rounded to
    float32 and summed in float32.

    Refused, with a ``ValueError`` naming the way out: oblique trees (a linear
    combination of features) and models that are not a tree or a forest of trees.

    Parameters
    ----------
    model : fitted gpu_tree tree or forest estimator
        A ``DecisionTreeClassifier`` / ``Regressor``, ``ExtraTreeClassifier`` /
        ``Regressor``, or a random forest or extra-trees ensemble (its trees averaged).
    dtype : {"float64", "float32"}, default="float64"
        The type of the input, thresholds, leaves and output.
    name : str, default="gpu_tree"
        The ONNX graph's name.

    Returns
    -------
    onnx.ModelProto
        The model, checked by ``onnx.checker``; ``SerializeToString()`` gives its bytes.
    """
    onnx = needed("onnx", "export_onnx")
    from onnx import TensorProto, helper, numpy_helper

    if dtype not in ("float64", "float32"):
        raise ValueError(f'dtype must be "float64" or "float32", got {dtype!r}')
    np_dtype = np.float64 if dtype == "float64" else np.float32
    proto_dtype = TensorProto.DOUBLE if dtype == "float64" else TensorProto.FLOAT
    exported = exported_trees(model, "export_onnx")
    n_columns = len(exported.columns)

    modes, features, splits, true_ids, true_leaf, false_ids, false_leaf, missing = (
        [] for _ in range(8)
    )
    members, roots, leaf_targets, leaf_weights = [], [], [], []
    for tree in exported.trees:
        nodes, leaves = _tree_graph(tree)
        values = leaf_values(tree, exported.columns)[leaves]
        for column in range(n_columns):
            node_start, leaf_start = len(modes), len(leaf_weights)
            roots.append(node_start)
            for mode, feature, split, codes, true_ref, false_ref, missing_true in nodes:
                modes.append(mode)
                features.append(feature)
                splits.append(split)
                for ref, ids, is_leaf in (
                    (true_ref, true_ids, true_leaf),
                    (false_ref, false_ids, false_leaf),
                ):
                    ids.append(ref[1] + (leaf_start if ref[0] else node_start))
                    is_leaf.append(int(ref[0]))
                missing.append(missing_true)
                if codes is not None:
                    members.extend([*codes, np.nan])
            leaf_targets.extend([column] * len(leaves))
            leaf_weights.extend(values[:, column])

    splits = np.asarray(splits, dtype=np.float64)
    numeric = np.asarray(modes) == BRANCH_LEQ
    if dtype == "float32":
        splits = np.where(numeric, float32_threshold(splits), splits.astype(np.float32))

    def tensor(values, dt, label):
        return numpy_helper.from_array(np.asarray(values, dtype=dt), label)

    attributes = dict(
        n_targets=n_columns,
        aggregate_function=AGGREGATE_SUM,
        post_transform=0,
        tree_roots=roots,
        nodes_modes=tensor(modes, np.uint8, "nodes_modes"),
        nodes_featureids=features,
        nodes_splits=tensor(splits, np_dtype, "nodes_splits"),
        nodes_truenodeids=true_ids,
        nodes_trueleafs=true_leaf,
        nodes_falsenodeids=false_ids,
        nodes_falseleafs=false_leaf,
        nodes_missing_value_tracks_true=missing,
        leaf_targetids=leaf_targets,
        leaf_weights=tensor(leaf_weights, np_dtype, "leaf_weights"),
    )
    if members:
        attributes["membership_values"] = tensor(members, np_dtype, "membership_values")
    output = "probabilities" if exported.classifier else "predictions"
    squeeze = not exported.classifier and n_columns == 1
    graph_nodes = [
        helper.make_node("TreeEnsemble", ["X"], ["tree_sum"], domain="ai.onnx.ml", **attributes),
        helper.make_node("Div", ["tree_sum", "n_trees"], ["tree_mean" if squeeze else output]),
    ]
    initializers = [tensor(len(exported.trees), np_dtype, "n_trees")]
    shape = [None, n_columns]
    if squeeze:
        graph_nodes.append(helper.make_node("Squeeze", ["tree_mean", "squeezed_axis"], [output]))
        initializers.append(tensor([1], np.int64, "squeezed_axis"))
        shape = [None]
    graph = helper.make_graph(
        graph_nodes,
        name,
        [helper.make_tensor_value_info("X", proto_dtype, [None, exported.n_features])],
        [helper.make_tensor_value_info(output, proto_dtype, shape)],
        initializer=initializers,
    )
    proto = helper.make_model(
        graph,
        opset_imports=[
            helper.make_opsetid("", ONNX_OPSET),
            helper.make_opsetid("ai.onnx.ml", ONNX_ML_OPSET),
        ],
        producer_name="gpu_tree",
    )
    proto.ir_version = min(proto.ir_version, 10)
    onnx.checker.check_model(proto)
    return proto
