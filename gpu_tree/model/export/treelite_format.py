"""Treelite export: a fitted tree or forest built node by node with
``treelite.model_builder.ModelBuilder``.

Thresholds and leaves are float64 (``threshold_type`` and ``leaf_output_type``), so the
model compares as gpu_tree does:

- a numeric node is ``x <= threshold`` (``opname="<="``) with its missing side as
  ``default_left``;
- a subset node is a categorical test whose category list is the set of codes it sends
  left;
- a multiway node is a chain of one-category tests, one per code whose child is not
  the node's default child; NaN fails them all (``default_left`` false) and ends at the
  default child.

Each leaf holds the node's value vector (a classifier's class fractions, a regressor's
targets; a one-output regressor's leaf is its one number, as Treelite's own importers
write it); a forest averages its trees (``average_tree_output``). TL2cgen compiles the
model to C as it is.
"""

from __future__ import annotations

import numpy as np

from gpu_tree.model.export.portable import (
    CATEGORICAL_SUBSET,
    LEAF,
    MULTIWAY,
    category_set,
    exported_trees,
    multiway_chain,
    needed,
    node_tests,
)


def _add_tree(builder, tree, leaf_vector):
    """Add one tree: gpu_tree's node ids are the node keys, a multiway chain's extra
    tests take keys past ``node_count``."""
    builder.start_tree()
    extra = tree.node_count
    pending = [(0, 0)]  # (gpu_tree node, its key)
    tests = node_tests(tree)
    while pending:
        node, key = pending.pop()
        kind = int(tests.kind[node])
        if kind == LEAF:
            builder.start_node(key)
            builder.leaf(leaf_vector(node))
            builder.end_node()
            continue
        feature = int(tests.feature[node])
        if kind == MULTIWAY:
            chain, default = multiway_chain(tree, node)
            if not chain:
                pending.append((default, key))
                continue
            for k, (code, child) in enumerate(chain):
                child_key, next_key = extra, extra + 1
                extra += 2
                builder.start_node(key)
                builder.categorical_test(
                    feature,
                    default_left=False,
                    category_list=[code],
                    category_list_right_child=False,
                    left_child_key=child_key,
                    right_child_key=next_key,
                )
                builder.end_node()
                pending.append((child, child_key))
                key = next_key
                if k == len(chain) - 1:
                    pending.append((default, next_key))
            continue
        left_key, right_key = extra, extra + 1
        extra += 2
        builder.start_node(key)
        default_left = bool(tests.missing_left[node])
        if kind == CATEGORICAL_SUBSET:
            builder.categorical_test(
                feature,
                default_left=default_left,
                category_list=category_set(tree, node),
                category_list_right_child=False,
                left_child_key=left_key,
                right_child_key=right_key,
            )
        else:
            builder.numerical_test(
                feature,
                float(tests.threshold[node]),
                default_left=default_left,
                opname="<=",
                left_child_key=left_key,
                right_child_key=right_key,
            )
        builder.end_node()
        pending.append((int(tests.right[node]), right_key))
        pending.append((int(tests.left[node]), left_key))
    builder.end_tree()


def export_treelite(model):
    """A fitted tree or forest as a Treelite model (``treelite.Model``), float64
    thresholds and leaves.

    The model reads the coded rows of :func:`gpu_tree.export_inputs` (categories as their
    codes, missing values and unseen categories NaN), as float64. ``treelite.gtil.predict``
    returns (n_samples, n_outputs, n_classes): a classifier's ``predict_proba`` (each
    output's row padded with zeros past its classes), a regressor's ``predict`` (its last
    axis 1). Every row goes where gpu_tree sends it, and a forest's trees are averaged.

    Refused, with a ``ValueError`` naming the way out: oblique splits (a linear
    combination of features, which Treelite has no test for: the message names the
    first, and :func:`gpu_tree.export_onnx` exports them), and models that are not a
    tree or a forest of trees. An oblique tree none of whose nodes is oblique is
    exported as the axis-parallel tree it is.

    Parameters
    ----------
    model : fitted gpu_tree tree or forest estimator
        A ``DecisionTreeClassifier`` / ``Regressor``, ``ExtraTreeClassifier`` /
        ``Regressor``, or a random forest or extra-trees ensemble (or an oblique tree
        without an oblique split).

    Returns
    -------
    treelite.Model
        The model: ``treelite.gtil.predict`` runs it, TL2cgen compiles it, and
        ``serialize`` writes it to a file.
    """
    needed("treelite", "export_treelite")
    from treelite.model_builder import Metadata, ModelBuilder, PostProcessorFunc, TreeAnnotation

    exported = exported_trees(model, "export_treelite")
    first = exported.trees[0]
    n_outputs = first.n_outputs
    n_trees = len(exported.trees)
    if exported.classifier:
        counts = list(getattr(first, "class_counts", None) or (first.max_n_classes,) * n_outputs)
        width = first.max_n_classes
        task, postprocessor = "kMultiClf", "identity_multiclass"
    else:
        counts, width = [1] * n_outputs, 1
        task, postprocessor = "kRegressor", "identity"
    # A one-output regressor's leaves are plain numbers of target 0, as Treelite's own
    # importers write them: TL2cgen 1.0 compiles a one-element leaf vector as 0.
    scalar_leaves = not exported.classifier and n_outputs == 1
    annotation = 0 if scalar_leaves else -1
    builder = ModelBuilder(
        threshold_type="float64",
        leaf_output_type="float64",
        metadata=Metadata(
            num_feature=exported.n_features,
            task_type=task,
            average_tree_output=True,
            num_target=n_outputs,
            num_class=counts,
            leaf_vector_shape=(n_outputs, width),
        ),
        tree_annotation=TreeAnnotation(
            num_tree=n_trees,
            target_id=[annotation] * n_trees,
            class_id=[annotation] * n_trees,
        ),
        postprocessor=PostProcessorFunc(name=postprocessor),
        base_scores=[0.0] * (n_outputs * width),
    )
    for tree in exported.trees:
        value = tree.value

        def leaf_vector(node, value=value):
            leaf = [float(v) for v in np.ravel(value[node])]
            return leaf[0] if scalar_leaves else leaf

        _add_tree(builder, tree, leaf_vector)
    return builder.commit()
