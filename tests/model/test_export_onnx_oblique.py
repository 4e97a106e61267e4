"""gpu_tree.export_onnx on oblique trees, checked by onnxruntime: the graph computes each
oblique node's projection and side ahead of the tree operator.

Bounds. ``projection="exact"`` sums the projections as gpu_tree does (feature by
feature, in feature order), so every row takes gpu_tree's side at every node: a float64
export's outputs are gpu_tree's bit for bit (opset 5), or their float32 rounding (the
legacy operators); a float32 export, whose rows are cast to float64 for the sides, gives
the float32 rounding of gpu_tree's prediction on those float32 rows.
``projection="matmul"``: a row may differ only where some oblique projection lies within
2 * d * 2**-53 * sum_j |c_j * x_j| of its threshold (two sums of d terms rounded).
"""

import numpy as np
import pytest
from _export_cases import (
    assert_float32_scores_match,
    gpu_tree_prediction,
    mixed_rows,
    oblique_models,
    oblique_shared,
    onnx_outputs,
)

import gpu_tree
from gpu_tree.model.oblique import OBLIQUE, TREE_LEAF, TREE_UNDEFINED, ObliqueTree, project

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")


def near_threshold_rows(model, X):
    """Rows whose projection at some oblique node lies within the rounding of two sums
    of its d terms of the node's threshold: those a MatMul may send the other way."""
    tree = model.tree_
    near = np.zeros(len(X), dtype=bool)
    for node in np.flatnonzero(tree.is_oblique):
        coefficients = tree.coefficients[node]
        scale = np.abs(X * coefficients).sum(axis=1)
        margin = np.abs(project(X, coefficients) - tree.threshold[node])
        near |= margin <= 2 * X.shape[1] * 2.0**-53 * scale
    return near


def assert_exact_sides(model, X, label):
    """Every export of ``model`` (opset 5 and legacy, float64 and float32, exact
    projections) against gpu_tree's predictions on X."""
    assert model.tree_.n_oblique > 0, label  # the case has oblique splits to translate
    expected = gpu_tree_prediction(model, X)
    np.testing.assert_array_equal(onnx_outputs(model, X)[-1], expected, label)
    legacy = onnx_outputs(model, X, operator="legacy")
    assert_float32_scores_match(model, legacy[-1], expected, label)
    if hasattr(model, "classes_"):
        np.testing.assert_array_equal(legacy[0], model.predict(X).astype(legacy[0].dtype))
    # float32 rows: gpu_tree's leaves for those very numbers, their values as float32.
    X32 = X.astype(np.float32).astype(np.float64)
    expected32 = gpu_tree_prediction(model, X32).astype(np.float32)
    for operator in ("TreeEnsemble", "legacy"):
        got = onnx_outputs(model, X32, dtype="float32", operator=operator)[-1]
        np.testing.assert_array_equal(got, expected32, f"{label} {operator}")


def assert_matmul_differs_only_near_thresholds(model, X, label):
    expected = gpu_tree_prediction(model, X)
    got = onnx_outputs(model, X, projection="matmul")[-1]
    differs = np.any(got != expected, axis=1)
    assert not np.any(differs & ~near_threshold_rows(model, X)), label


@pytest.fixture(scope="module")
def oblique():
    return oblique_models()


@pytest.mark.parametrize("index", range(3))
def test_oblique_exports_send_every_row_where_gpu_tree_does(oblique, index):
    label, model, X = oblique[index]
    assert_exact_sides(model, X, label)
    assert_matmul_differs_only_near_thresholds(model, X, label)


def test_oblique_trees_on_the_shared_datasets():
    for label, model, X in oblique_shared():
        assert_exact_sides(model, X, label)
        assert_matmul_differs_only_near_thresholds(model, X, label)


def hand_built(threshold):
    """A regressor whose root tests x0 + x1 + x2 <= threshold (leaves 1 and 2)."""
    X, y = mixed_rows(50, 0)
    model = gpu_tree.ObliqueDecisionTreeRegressor(max_depth=1).fit(np.nan_to_num(X[:, :3]), y)
    model.tree_ = ObliqueTree(
        children_left=[1, TREE_LEAF, TREE_LEAF],
        children_right=[2, TREE_LEAF, TREE_LEAF],
        feature=[OBLIQUE, TREE_UNDEFINED, TREE_UNDEFINED],
        threshold=[threshold, 0.0, 0.0],
        coefficients=[[1.0, 1.0, 1.0], [0, 0, 0], [0, 0, 0]],
        value=[[[1.5]], [[1.0]], [[2.0]]],
        impurity=[0.0, 0.0, 0.0],
        n_node_samples=[2, 1, 1],
        weighted_n_node_samples=[2.0, 1.0, 1.0],
    )
    return model


def test_exact_projection_sums_in_gpu_trees_order():
    # 1 + 1e16 rounds to 1e16 in float64, so gpu_tree's (1 + 1e16) - 1e16 is 0 and the
    # row goes left at threshold 0; summed in any other order (1e16 - 1e16 first) it is 1.
    row = np.array([[1.0, 1e16, -1e16]])
    assert project(row, [1.0, 1.0, 1.0])[0] == 0.0 and row[0, 0] + (row[0, 1] + row[0, 2]) == 1
    model = hand_built(0.0)
    assert model.predict(row)[0] == 1.0
    assert onnx_outputs(model, row)[-1][0, 0] == 1.0
    assert onnx_outputs(model, row, operator="legacy")[-1][0, 0] == 1.0
    assert near_threshold_rows(model, row)[0]  # a row the MatMul bound leaves open


def test_oblique_rows_with_nan_are_refused_as_predict_refuses_them(oblique):
    _, model, X = oblique[0]
    X = X[:5].copy()
    X[2, 1] = np.nan
    with pytest.raises(ValueError, match="oblique trees do not take missing values"):
        gpu_tree.export_inputs(model, X)


def test_treelite_refuses_an_oblique_split_naming_it_and_onnx():
    treelite = pytest.importorskip("treelite")
    model = hand_built(0.5)
    pattern = (
        r"its node 0 splits on 1\.00·x0 \+ 1\.00·x1 \+ 1\.00·x2 <= 0\.5.*gpu_tree\.export_onnx"
    )
    with pytest.raises(ValueError, match=pattern):
        gpu_tree.export_treelite(model)
    # An oblique tree without an oblique split is an axis-parallel tree to Treelite.
    model.tree_.feature[0] = 1
    model.tree_.coefficients[0] = 0.0
    X = np.array([[0.0, 0.2, 9.0], [0.0, 0.7, -9.0]])
    out = treelite.gtil.predict(gpu_tree.export_treelite(model), gpu_tree.export_inputs(model, X))
    np.testing.assert_array_equal(out[:, 0, 0], model.predict(X))
    np.testing.assert_array_equal(model.predict(X), [1.0, 2.0])
