"""ONNX export: a fitted tree or forest as one tree operator, by default ``ai.onnx.ml``
opset 5's ``TreeEnsemble``.

Opset 5's ``TreeEnsemble`` is the one ONNX tree operator with set-membership tests
(``BRANCH_MEMBER``), a missing-value side on every node, and float64 thresholds and
leaves; the older ``TreeEnsembleClassifier`` / ``TreeEnsembleRegressor`` have no set
test and give float32 scores, but are what most runtimes read (``operator="legacy"``,
:mod:`.onnx_legacy`). onnxruntime runs opset 5 from 1.21, but 1.21 and 1.22 exhaust
memory on category sets of some tens of codes (adult's; onnxruntime #25400): use 1.23 on.

The modules: :mod:`.onnx_trees` turns a tree into tests and leaves (how each node kind
is translated), :mod:`.onnx_oblique` computes oblique nodes' sides ahead of the tree
operator, :mod:`.onnx_legacy` writes the legacy operators; this module writes opset 5's
and assembles the graph.

A ``TreeEnsemble`` leaf adds one weight to one target, so each tree is written once per
exported column (class or output), its leaves carrying that column's value; the trees'
sums are divided by their number (a ``Div``), as gpu_tree averages a forest: per row the
trees added in order, then divided.
"""

from __future__ import annotations

import numpy as np

from gpu_tree.model.export.onnx_legacy import (
    LEGACY_IR_VERSION,
    LEGACY_ML_OPSET,
    LEGACY_OPSET,
    legacy_operator,
)
from gpu_tree.model.export.onnx_oblique import PROJECTIONS, oblique_sides, side_graph
from gpu_tree.model.export.onnx_trees import BRANCH_LEQ, tree_graph
from gpu_tree.model.export.portable import (
    exported_trees,
    float32_threshold,
    leaf_values,
    needed,
)

AGGREGATE_SUM = 1
ONNX_OPSET = 21
ONNX_ML_OPSET = 5
IR_VERSION = 10
OPERATORS = ("TreeEnsemble", "legacy")


def _tree_ensemble(exported, graphs, dtype, tree_input, output):
    """Opset 5's ``TreeEnsemble`` over ``graphs`` (each tree's (tests, leaves)), reading
    ``tree_input``, and the ``Div`` by the number of trees writing ``output``: (nodes,
    initializers)."""
    from onnx import helper, numpy_helper

    np_dtype = np.float64 if dtype == "float64" else np.float32
    n_columns = len(exported.columns)
    modes, features, splits, true_ids, true_leaf, false_ids, false_leaf, missing = (
        [] for _ in range(8)
    )
    members, roots, leaf_targets, leaf_weights = [], [], [], []
    for tree, (tests, leaves) in zip(exported.trees, graphs, strict=True):
        values = leaf_values(tree, exported.columns)[leaves]
        for column in range(n_columns):
            node_start, leaf_start = len(modes), len(leaf_weights)
            roots.append(node_start)
            for test in tests:
                modes.append(test.mode)
                features.append(test.feature)
                splits.append(test.split)
                for ref, ids, is_leaf in (
                    (test.true_ref, true_ids, true_leaf),
                    (test.false_ref, false_ids, false_leaf),
                ):
                    ids.append(ref[1] + (leaf_start if ref[0] else node_start))
                    is_leaf.append(int(ref[0]))
                missing.append(test.missing_true)
                if test.members is not None:
                    members.extend([*test.members, np.nan])
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
    nodes = [
        helper.make_node(
            "TreeEnsemble", [tree_input], ["tree_sum"], domain="ai.onnx.ml", **attributes
        ),
        helper.make_node("Div", ["tree_sum", "n_trees"], [output]),
    ]
    return nodes, [tensor(len(exported.trees), np_dtype, "n_trees")]


def export_onnx(
    model,
    dtype="float64",
    name: str = "gpu_tree",
    operator: str = "TreeEnsemble",
    projection: str = "exact",
):
    """A fitted tree or forest as an ONNX model.

    The model reads one input ``X``: the coded rows of :func:`gpu_tree.export_inputs`
    (n_samples, n_features), categories as their codes, missing values and unseen
    categories NaN. Its output ``probabilities`` (a classifier's ``predict_proba``) or
    ``predictions`` (a regressor's ``predict``) is (n_samples, n_columns), a
    single-output regressor's (n_samples,). With several outputs, each output's columns
    follow one another (a classifier's: each output's own classes).

    ``operator="TreeEnsemble"``: ``ai.onnx.ml`` opset 5's ``TreeEnsemble`` (onnxruntime
    1.23 on). With ``dtype="float64"``, thresholds, leaves and the input are float64: the
    exported model sends every row where gpu_tree does and (in onnxruntime, which adds
    the trees in order) returns the same numbers. With ``dtype="float32"`` (for runtimes
    that read float only), each threshold ``t`` is the largest float32 not above it, so
    that every float32 value goes the side it goes in gpu_tree (``x <= t``), training
    values included; float64 values that are not float32 numbers are rounded when cast
    and may cross a threshold within half a float32 spacing of them; leaf values are
    rounded to float32 and summed in float32.

    ``operator="legacy"``: ``TreeEnsembleClassifier`` / ``TreeEnsembleRegressor``
    (``ai.onnx.ml`` opset 3, default domain opset 13), which most runtimes in the field
    read: category sets unrolled into equality tests, outputs float32 whatever ``dtype``
    (float64: every row goes where gpu_tree sends it, the leaves summed in float64 and
    rounded once to float32); a single-output classifier also outputs its ``label`` first.

    Oblique trees (``ObliqueDecisionTreeClassifier`` / ``Regressor``): the graph computes
    each oblique node's projection ``coefficients @ x`` in float64 and compares it with the
    node's threshold before the tree operator reads the result. With ``projection="exact"``
    the projections are summed as gpu_tree sums them, feature by feature, and every row goes
    where gpu_tree sends it, in float32 exports too (float32 rows are cast to float64
    first). With ``projection="matmul"`` one ``MatMul`` sums them in the runtime's order: a
    row can take the other side only where its projection is within the rounding of two sums
    of d terms of the threshold, 2·d·2⁻⁵³·Σ|c_j·x_j|. Oblique trees take no NaN
    (``export_inputs`` refuses it, as their ``predict`` does).

    Refused, with a ``ValueError`` naming the way out: models that are not a tree or a
    forest of trees.

    Parameters
    ----------
    model : fitted gpu_tree tree or forest estimator
        A ``DecisionTreeClassifier`` / ``Regressor``, ``ExtraTreeClassifier`` /
        ``Regressor``, ``ObliqueDecisionTreeClassifier`` / ``Regressor``, or a random
        forest or extra-trees ensemble (its trees averaged).
    dtype : {"float64", "float32"}, default="float64"
        The type of the input, thresholds and leaves (and of the output, but with
        ``operator="legacy"``, whose outputs are float32).
    name : str, default="gpu_tree"
        The ONNX graph's name.
    operator : {"TreeEnsemble", "legacy"}, default="TreeEnsemble"
        The tree operator: opset 5's ``TreeEnsemble``, or the older
        ``TreeEnsembleClassifier`` / ``TreeEnsembleRegressor``.
    projection : {"exact", "matmul"}, default="exact"
        How an oblique tree's projections are summed: feature by feature in gpu_tree's
        order (its sides exactly), or by one ``MatMul`` (see above). Unused for
        axis-parallel trees.

    Returns
    -------
    onnx.ModelProto
        The model, checked by ``onnx.checker``; ``SerializeToString()`` gives its bytes.
    """
    onnx = needed("onnx", "export_onnx")
    from onnx import TensorProto, helper

    if dtype not in ("float64", "float32"):
        raise ValueError(f'dtype must be "float64" or "float32", got {dtype!r}')
    if operator not in OPERATORS:
        raise ValueError(f"operator must be one of {OPERATORS}, got {operator!r}")
    if projection not in PROJECTIONS:
        raise ValueError(f"projection must be one of {PROJECTIONS}, got {projection!r}")
    proto_dtype = TensorProto.DOUBLE if dtype == "float64" else TensorProto.FLOAT
    exported = exported_trees(model, "export_onnx", oblique=True)
    sides = oblique_sides(exported.trees, exported.n_features)
    graphs = [
        tree_graph(tree, columns)
        for tree, columns in zip(exported.trees, sides.columns, strict=True)
    ]
    nodes, initializers, tree_input = [], [], "X"
    if sides.thresholds.size:
        nodes, initializers, tree_input = side_graph(sides, dtype, projection)

    output = "probabilities" if exported.classifier else "predictions"
    squeeze = not exported.classifier and len(exported.columns) == 1
    scores = "scores" if squeeze else output
    outputs = []
    if operator == "TreeEnsemble":
        more_nodes, more_initializers = _tree_ensemble(exported, graphs, dtype, tree_input, scores)
        nodes += more_nodes
        initializers += more_initializers
        scores_type = proto_dtype
        opsets, ir_version = {"": ONNX_OPSET, "ai.onnx.ml": ONNX_ML_OPSET}, IR_VERSION
    else:
        one_label = exported.classifier and exported.trees[0].n_outputs == 1
        classes = model.classes_ if one_label else None
        more_nodes, more_initializers, label = legacy_operator(
            exported, graphs, dtype, tree_input, classes, scores
        )
        nodes += more_nodes
        initializers += more_initializers
        outputs += [label] if label else []
        scores_type = TensorProto.FLOAT  # the legacy operators' scores are float32
        opsets = {"": LEGACY_OPSET, "ai.onnx.ml": LEGACY_ML_OPSET}
        ir_version = LEGACY_IR_VERSION
    outputs.append((output, scores_type, [None] if squeeze else [None, len(exported.columns)]))
    if squeeze:  # a single-output regressor's predictions: (n_samples,)
        nodes.append(helper.make_node("Squeeze", [scores, "squeezed_axis"], [output]))
        initializers.append(helper.make_tensor("squeezed_axis", TensorProto.INT64, [1], [1]))
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("X", proto_dtype, [None, exported.n_features])],
        [helper.make_tensor_value_info(*out) for out in outputs],
        initializer=initializers,
    )
    proto = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid(domain, version) for domain, version in opsets.items()],
        producer_name="gpu_tree",
    )
    proto.ir_version = min(proto.ir_version, ir_version)
    onnx.checker.check_model(proto)
    return proto
