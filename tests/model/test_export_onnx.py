"""gpu_tree.export_onnx, checked by onnxruntime itself: the exported model's outputs
against gpu_tree's predict_proba / predict on training rows, held-out rows, rows with
missing values and rows with unseen categories.

float64 export: a tree's outputs are equal, bit for bit. A forest's are the same leaves
added in another order (onnxruntime's, where gpu_tree adds the trees in order), then
divided by their number: within the rounding of a float64 sum, |onnx - gpu_tree| <=
n_trees * 2**-52 * max |leaf value|. float32 export: every float32 value takes
gpu_tree's side (the thresholds are the largest float32 not above gpu_tree's; tested
below on adjacent float32 values), and the output is within the float32 rounding of the
leaves and their sum: |onnx - gpu_tree| <= (n_trees + 2) * 2**-24 * max |leaf value|.
"""

import numpy as np
import pytest
from _export_cases import (
    SHARED,
    assert_float64_matches,
    float32_bound,
    gpu_tree_prediction,
    mixed_rows,
    onnx_outputs,
    synthetic_models,
)

import gpu_tree
from gpu_tree.model.export.portable import float32_threshold

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")


def onnx_predict(model, X, dtype="float64"):
    return onnx_outputs(model, X, dtype=dtype)[-1]


@pytest.fixture(scope="module")
def synthetic():
    return synthetic_models()


@pytest.mark.parametrize("index", range(11))
def test_onnxruntime_gives_gpu_trees_predictions(synthetic, index):
    label, model, X = synthetic[index]
    expected = gpu_tree_prediction(model, X)
    assert_float64_matches(model, onnx_predict(model, X), expected, label)
    got32 = onnx_predict(model, X, "float32")
    assert np.abs(got32 - expected).max() <= float32_bound(model), label


@pytest.mark.parametrize("dataset", sorted(SHARED))
def test_onnxruntime_on_the_shared_datasets(dataset):
    for label, model, X in SHARED[dataset]():
        expected = gpu_tree_prediction(model, X)
        assert_float64_matches(model, onnx_predict(model, X), expected, label)


def test_float32_thresholds_keep_adjacent_float32_values_apart():
    # 200 consecutive float32 numbers above 1, each its own target: an exact tree puts a
    # threshold between neighbours (their float64 midpoint, no float32 number). Rounded to
    # nearest, half of them would round up onto the value above and send it left.
    x = np.float32(1.0) + np.arange(200, dtype=np.float32) * np.spacing(np.float32(1.0))
    X = x.reshape(-1, 1).astype(np.float64)
    y = np.arange(200, dtype=np.float64)
    model = gpu_tree.DecisionTreeRegressor(splitter="exact").fit(X, y)
    split = model.tree_.children_left != -1
    thresholds = model.tree_.threshold[split]
    assert np.any(thresholds.astype(np.float32).astype(np.float64) > thresholds)  # discriminating
    got = onnx_predict(model, X, "float32")[:, 0]
    np.testing.assert_array_equal(got, model.predict(X).astype(np.float32))
    np.testing.assert_array_equal(got, y)


def test_float32_threshold_rule():
    t = np.array([1.0, 1.0 + 2.0**-30, -(1.0 + 2.0**-30), 0.1, -0.1, 3e38, 1e300, -1e300])
    t32 = float32_threshold(t)
    assert t32.dtype == np.float32
    assert np.all(t32.astype(np.float64) <= t)
    # t32 is the largest float32 not above t: the next float32 is above t.
    finite = np.isfinite(t32) & (t32 < np.finfo(np.float32).max)
    above = np.nextafter(t32[finite], np.float32(np.inf))
    assert np.all(above.astype(np.float64) > t[finite])
    assert t32[-2] == np.finfo(np.float32).max and t32[-1] == -np.inf
    # Every float32 near each threshold compares the same with t32 as with t.
    for value, value32 in zip(t[:5], t32[:5], strict=True):
        near = value32 + np.arange(-3, 4, dtype=np.float32) * np.spacing(value32)
        near = near[np.isfinite(near)]
        np.testing.assert_array_equal(near <= value32, near.astype(np.float64) <= value)


def test_refusals_name_the_node_kind_and_the_way_out():
    X, y = mixed_rows(100, 0)
    X = np.nan_to_num(X)
    with pytest.raises(ValueError, match="fit it first"):
        gpu_tree.export_onnx(gpu_tree.DecisionTreeClassifier())
    dag = gpu_tree.DAGClassifier(gpu_tree.DecisionTreeClassifier(max_depth=2)).fit(X, y)
    with pytest.raises(ValueError, match="DAGClassifier is neither: export its trees one by one"):
        gpu_tree.export_onnx(dag)
    model = gpu_tree.DecisionTreeClassifier().fit(X, y)
    with pytest.raises(ValueError, match="dtype"):
        gpu_tree.export_onnx(model, dtype="float16")
    with pytest.raises(ValueError, match="operator must be one of"):
        gpu_tree.export_onnx(model, operator="TreeEnsembleRegressor")
    with pytest.raises(ValueError, match="projection must be one of"):
        gpu_tree.export_onnx(model, projection="sum")


def test_missing_onnx_gives_the_install_hint(monkeypatch):
    import sys

    X, y = mixed_rows(50, 0)
    model = gpu_tree.DecisionTreeClassifier().fit(X, y)
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(
        ImportError, match=r'pip install onnx onnxruntime treelite .*"\.\[export\]"'
    ):
        gpu_tree.export_onnx(model)
