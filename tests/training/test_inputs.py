"""The input stage (gpu_tree/training/inputs.py): the input's kind decided once, the
prepared record, and the fitted attributes every front end records from it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import gpu_tree
from gpu_tree.data.validation import DENSE, SPARSE, input_kind
from gpu_tree.training.inputs import (
    Task,
    input_attributes,
    prepare,
    with_positive_weight,
)
from gpu_tree.training.parameters import check_settings

CLASSIFIER = Task(True, True, "DecisionTreeClassifier")
REGRESSOR = Task(False, True, "DecisionTreeRegressor")


def settings_of(estimator):
    return check_settings(estimator.get_params(), estimator._is_classification)


def test_the_kind_is_decided_once_and_travels_with_the_prepared_input():
    X = np.arange(12.0).reshape(6, 2)
    y = np.array([0, 1, 0, 1, 0, 1])
    settings = settings_of(gpu_tree.DecisionTreeClassifier())
    dense = prepare(X, y, None, settings, CLASSIFIER, "cpu")
    sparse = prepare(sp.csr_matrix(X), y, None, settings, CLASSIFIER, "cpu")
    assert (dense.kind, sparse.kind) == (DENSE, SPARSE)
    assert input_kind(sparse.X) == SPARSE and input_kind(dense.X) == DENSE
    assert dense.coded.classes.tolist() == [0, 1] and dense.n_outputs == 1


def test_a_frame_s_categories_are_coded_and_recorded():
    frame = pd.DataFrame(
        {"colour": pd.Categorical(["red", "blue", "red", "teal"]), "size": [1.0, 2, 3, 4]}
    )
    y = np.array([1.5, 2.0, 1.0, 0.5])
    settings = settings_of(gpu_tree.DecisionTreeRegressor())
    prepared = prepare(frame, y, None, settings, REGRESSOR, "cpu")
    assert prepared.kind == DENSE
    assert prepared.categorical.features.tolist() == [0]
    assert prepared.X[:, 0].tolist() == [1.0, 0.0, 1.0, 2.0]  # codes of blue, red, teal
    attributes = input_attributes(prepared)
    assert attributes["feature_names_in_"].tolist() == ["colour", "size"]
    assert attributes["categories_"][0].tolist() == ["blue", "red", "teal"]
    assert attributes["categories_"][1] is None
    assert "classes_" not in attributes


def test_a_gpu_array_for_a_cpu_fit_is_refused_naming_the_way_out(monkeypatch):
    import gpu_tree.training.inputs as inputs

    monkeypatch.setattr(inputs, "input_kind", lambda X: "device")
    settings = settings_of(gpu_tree.DecisionTreeClassifier(device="cpu"))
    with pytest.raises(ValueError, match="device='cuda'"):
        prepare(np.zeros((2, 1)), [0, 1], None, settings, CLASSIFIER, "cpu")


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_rows_of_zero_weight_leave_before_binning(sparse):
    X = np.arange(10.0).reshape(5, 2)
    y = np.array([0, 1, 0, 1, 1])
    weight = np.array([1.0, 0.0, 2.0, 0.0, 1.0])
    settings = settings_of(gpu_tree.DecisionTreeClassifier())
    prepared = prepare(sp.csr_matrix(X) if sparse else X, y, weight, settings, CLASSIFIER, "cpu")
    kept = with_positive_weight(prepared)
    assert kept.kind == prepared.kind
    dense = kept.X.toarray() if sparse else kept.X
    assert dense.tolist() == X[[0, 2, 4]].tolist()
    assert kept.targets.tolist() == [0, 0, 1] and kept.weight.tolist() == [1.0, 2.0, 1.0]
    no_weight = settings_of(gpu_tree.DecisionTreeClassifier(class_weight={0: 0.0, 1: 0.0}))
    nothing = prepare(X, y, None, no_weight, CLASSIFIER, "cpu")
    with pytest.raises(ValueError, match="no row has a positive weight"):
        with_positive_weight(nothing)


def test_the_tree_the_forest_and_its_trees_record_the_same_input_attributes():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {"a": rng.normal(size=60), "b": pd.Categorical(rng.choice(["x", "y", "z"], 60))}
    )
    y = rng.integers(0, 3, 60)
    tree = gpu_tree.DecisionTreeClassifier(max_depth=3).fit(frame, y)
    forest = gpu_tree.RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0)
    forest.fit(frame, y)
    for name in ("n_features_in_", "n_outputs_", "n_classes_"):
        assert getattr(forest.estimators_[0], name) == getattr(tree, name)
    assert forest.estimators_[0].max_features_ == 1  # sqrt of 2 features; the tree's: all
    assert tree.max_features_ == 2
    for estimator in (forest, *forest.estimators_):
        assert estimator.classes_.tolist() == tree.classes_.tolist()
        assert estimator.feature_names_in_.tolist() == ["a", "b"]
    for member in forest.estimators_:
        assert member.categories_[1].tolist() == ["x", "y", "z"]
        assert member.is_categorical_.tolist() == [False, True]
        assert member.device_ == forest.device_ == tree.device_
        assert member.missing_in_training_.tolist() == tree.missing_in_training_.tolist()
