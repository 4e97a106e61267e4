"""gpu_tree.export_onnx(..., operator="legacy"): the older ``TreeEnsembleClassifier`` /
``TreeEnsembleRegressor`` (ai.onnx.ml opset 3), checked by onnxruntime on the cases of
the opset-5 tests (tests/_export_cases.py).

Their scores are float32 tensors. float64 export: every row reaches gpu_tree's leaf and
the leaves are added in float64, then rounded once: |onnx - gpu_tree| <= 2**-24 *
|gpu_tree| (+ n_trees * 2**-52 * max |leaf value| for a forest). float32 export: the
opset-5 float32 bound, (n_trees + 2) * 2**-24 * max |leaf value|. A single-output
classifier's ``label`` is gpu_tree's ``predict``, integer classes as int64, others as text.
"""

import numpy as np
import pytest
from _export_cases import (
    SHARED,
    assert_float32_scores_match,
    float32_bound,
    gpu_tree_prediction,
    mixed_rows,
    onnx_outputs,
    synthetic_models,
)

import gpu_tree

pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")


def assert_legacy_matches(model, X, label, float32=True):
    """The legacy export's outputs against gpu_tree's: float64, and float32 where the
    rows are float32 numbers (others may cross a threshold within half a float32
    spacing of them: opset 5's float32 rule)."""
    expected = gpu_tree_prediction(model, X)
    outputs = onnx_outputs(model, X, operator="legacy")
    assert_float32_scores_match(model, outputs[-1], expected, label)
    if len(outputs) == 2:  # a single-output classifier's label
        predicted = model.predict(X)
        np.testing.assert_array_equal(outputs[0], predicted.astype(outputs[0].dtype), label)
    else:
        assert not (hasattr(model, "classes_") and np.ndim(model.classes_[0]) == 0), label
    if float32:
        got32 = onnx_outputs(model, X, operator="legacy", dtype="float32")[-1]
        assert np.abs(got32 - expected).max() <= float32_bound(model), label


@pytest.fixture(scope="module")
def synthetic():
    return synthetic_models()


@pytest.mark.parametrize("index", range(11))
def test_legacy_operators_give_gpu_trees_predictions(synthetic, index):
    label, model, X = synthetic[index]
    assert_legacy_matches(model, X, label)


@pytest.mark.parametrize("dataset", sorted(SHARED))
def test_legacy_operators_on_the_shared_datasets(dataset):
    for label, model, X in SHARED[dataset]():
        assert_legacy_matches(model, X, label, float32=False)


def test_legacy_model_reads_only_opset_3_operators(synthetic):
    _, model, _ = synthetic[0]  # category sets on column 3, missing values on each side
    proto = gpu_tree.export_onnx(model, operator="legacy")
    assert {(o.domain, o.version) for o in proto.opset_import} == {("", 13), ("ai.onnx.ml", 3)}
    (tree,) = [n for n in proto.graph.node if n.domain == "ai.onnx.ml"]
    assert tree.op_type == "TreeEnsembleClassifier"
    attributes = {a.name: onnx.helper.get_attribute_value(a) for a in tree.attribute}
    modes = [m.decode() for m in attributes["nodes_modes"]]
    assert set(modes) <= {"BRANCH_LEQ", "BRANCH_EQ", "LEAF"}
    # The subset nodes became equality chains, some of them sending NaN to the true side.
    equality = np.flatnonzero(np.array(modes) == "BRANCH_EQ")
    features = np.array(attributes["nodes_featureids"])
    tracks = np.array(attributes["nodes_missing_value_tracks_true"])
    assert equality.size > 1 and np.all(features[equality] == 3)
    assert tracks[equality].any() and not tracks[equality].all()
    assert [o.name for o in proto.graph.output] == ["label", "probabilities"]


def test_binary_labels_follow_the_highest_probability():
    # onnxruntime's own two-class label is class 1 wherever its score is above 0; the
    # exported label is the class of highest probability, the first on ties (0.5 here).
    X = np.repeat(np.arange(4, dtype=np.float64), 2).reshape(-1, 1)
    y = np.array(["a", "b", "a", "a", "b", "b", "b", "a"])
    model = gpu_tree.DecisionTreeClassifier().fit(X, y)
    proba = model.predict_proba(X)
    assert np.any(proba[:, 0] == 0.5) and np.any(proba[:, 0] == 1) and np.any(proba[:, 1] == 1)
    label, scores = onnx_outputs(model, X, operator="legacy")
    np.testing.assert_array_equal(label, model.predict(X))
    np.testing.assert_array_equal(label, ["a", "a", "a", "a", "b", "b", "a", "a"])
    np.testing.assert_array_equal(scores, proba.astype(np.float32))
    numbered = gpu_tree.DecisionTreeClassifier().fit(X, np.where(y == "a", 7, 3))
    label, _ = onnx_outputs(numbered, X, operator="legacy")
    np.testing.assert_array_equal(label, [3, 3, 7, 7, 3, 3, 3, 3])
    np.testing.assert_array_equal(label, numbered.predict(X))


def test_legacy_regressor_predictions_are_one_dimensional():
    X, y = mixed_rows(100, 0)
    model = gpu_tree.DecisionTreeRegressor(max_depth=3).fit(X, y * 2.5)
    proto = gpu_tree.export_onnx(model, operator="legacy")
    assert [o.name for o in proto.graph.output] == ["predictions"]
    assert len(proto.graph.output[0].type.tensor_type.shape.dim) == 1
