"""gpu_tree.export_treelite, checked by Treelite's own predictor (treelite.gtil.predict):
its outputs against gpu_tree's predict_proba / predict on training rows, held-out rows,
rows with missing values and rows with unseen categories.

The model's thresholds and leaves are float64 and it reads float64 rows, so every row
reaches gpu_tree's leaf. A tree's outputs are equal, bit for bit; a forest's are within a
float64 sum's rounding where Treelite adds the trees in another order: |treelite -
gpu_tree| <= n_trees * 2**-52 * max |leaf value|.
"""

import numpy as np
import pytest
from _export_cases import (
    SHARED,
    assert_float64_matches,
    gpu_tree_prediction,
    mixed_rows,
    synthetic_models,
)

import gpu_tree

treelite = pytest.importorskip("treelite")


def treelite_predict(model, X):
    """gtil.predict's output as the exported columns."""
    out = treelite.gtil.predict(gpu_tree.export_treelite(model), gpu_tree.export_inputs(model, X))
    return exported_columns(model, out)


def exported_columns(model, out):
    """Treelite's (n_samples, n_outputs, n_classes) predictions as the exported columns:
    each output's own classes, side by side."""
    tree = getattr(model, "estimators_", [model])[0].tree_
    if not hasattr(model, "predict_proba"):
        return out[:, :, 0]
    counts = tree.class_counts or (tree.max_n_classes,) * tree.n_outputs
    return np.hstack([out[:, k, :n] for k, n in enumerate(counts)])


@pytest.fixture(scope="module")
def synthetic():
    return synthetic_models()


@pytest.mark.parametrize("index", range(11))
def test_gtil_gives_gpu_trees_predictions(synthetic, index):
    label, model, X = synthetic[index]
    assert_float64_matches(model, treelite_predict(model, X), gpu_tree_prediction(model, X), label)


@pytest.mark.parametrize("dataset", sorted(SHARED))
def test_gtil_on_the_shared_datasets(dataset):
    for label, model, X in SHARED[dataset]():
        assert_float64_matches(
            model, treelite_predict(model, X), gpu_tree_prediction(model, X), label
        )


def test_treelite_model_survives_serialization(tmp_path):
    X, y = mixed_rows(200, 0)
    model = gpu_tree.DecisionTreeClassifier(categorical_features=[3]).fit(X, y)
    path = tmp_path / "model.tl"
    gpu_tree.export_treelite(model).serialize(str(path))
    again = treelite.Model.deserialize(str(path))
    out = treelite.gtil.predict(again, gpu_tree.export_inputs(model, X))
    np.testing.assert_array_equal(out[:, 0, :], model.predict_proba(X))


def test_refusals_name_the_node_kind_and_the_way_out():
    X, y = mixed_rows(100, 0)
    oblique = gpu_tree.ObliqueDecisionTreeRegressor().fit(np.nan_to_num(X), y)
    with pytest.raises(ValueError, match="oblique splits.*axis-parallel"):
        gpu_tree.export_treelite(oblique)
    with pytest.raises(ValueError, match="fit it first"):
        gpu_tree.export_treelite(gpu_tree.RandomForestRegressor())


def test_missing_treelite_gives_the_install_hint(monkeypatch):
    import sys

    X, y = mixed_rows(50, 0)
    model = gpu_tree.DecisionTreeClassifier().fit(X, y)
    monkeypatch.setitem(sys.modules, "treelite", None)
    with pytest.raises(ImportError, match=r"export_treelite needs treelite: pip install"):
        gpu_tree.export_treelite(model)


@pytest.mark.parametrize(
    "label",
    ["tree", "tree_multiway", "tree_regressor", "forest_regressor", "multi_output_regressor"],
)
def test_tl2cgen_compiled_model_gives_gpu_trees_predictions(synthetic, label, tmp_path):
    """The model compiled to C by TL2cgen (with the system's gcc) predicts as gpu_tree:
    classifiers, multiway chains, and regressors of one output, whose leaves must be
    plain numbers (TL2cgen 1.0 compiles a one-element leaf vector as 0) and of two."""
    tl2cgen = pytest.importorskip("tl2cgen")
    _, model, X = next(case for case in synthetic if case[0] == label)
    library = tmp_path / "model.so"
    tl2cgen.export_lib(
        gpu_tree.export_treelite(model), toolchain="gcc", libpath=str(library), nthread=1
    )
    out = tl2cgen.Predictor(str(library)).predict(tl2cgen.DMatrix(gpu_tree.export_inputs(model, X)))
    got = exported_columns(model, out)
    assert_float64_matches(model, got, gpu_tree_prediction(model, X), label)
