"""Model files name their estimator class; the loader builds it from a registry that the
estimators fill, so the model layer never imports the estimators."""

import json

import numpy as np
import pytest

import gpu_tree
from gpu_tree.model.file_format import registry
from gpu_tree.model.file_format.reading import model_from_document
from gpu_tree.model.file_format.writing import model_document


def test_the_estimators_register_themselves():
    import gpu_tree.ensemble  # registers the forests (gpu_tree.load imports it too)

    assert registry._REGISTRY == {
        "DecisionTreeClassifier": gpu_tree.DecisionTreeClassifier,
        "DecisionTreeRegressor": gpu_tree.DecisionTreeRegressor,
        "ExtraTreeClassifier": gpu_tree.ExtraTreeClassifier,
        "ExtraTreeRegressor": gpu_tree.ExtraTreeRegressor,
        "ObliqueDecisionTreeClassifier": gpu_tree.ObliqueDecisionTreeClassifier,
        "ObliqueDecisionTreeRegressor": gpu_tree.ObliqueDecisionTreeRegressor,
        "RandomForestClassifier": gpu_tree.RandomForestClassifier,
        "RandomForestRegressor": gpu_tree.RandomForestRegressor,
        "ExtraTreesClassifier": gpu_tree.ExtraTreesClassifier,
        "ExtraTreesRegressor": gpu_tree.ExtraTreesRegressor,
    }


def test_a_second_class_under_a_registered_name_is_refused():
    imposter = type("DecisionTreeClassifier", (), {})
    with pytest.raises(ValueError, match="already registered as 'DecisionTreeClassifier'"):
        registry.register_estimator(imposter)
    assert registry._REGISTRY["DecisionTreeClassifier"] is gpu_tree.DecisionTreeClassifier
    # registering the same class again changes nothing
    assert (
        registry.register_estimator(gpu_tree.DecisionTreeRegressor)
        is gpu_tree.DecisionTreeRegressor
    )


def test_a_registered_class_loads_and_an_unregistered_name_does_not(tmp_path, monkeypatch):
    X = np.arange(40.0).reshape(20, 2)
    y = (X[:, 0] > 15).astype(int)
    document = model_document(gpu_tree.DecisionTreeClassifier(device="cpu").fit(X, y))
    document = json.loads(json.dumps(document))

    class Special(gpu_tree.DecisionTreeClassifier):
        pass

    document["estimator"] = "Special"
    with pytest.raises(ValueError, match="unknown estimator 'Special'"):
        model_from_document(document)
    monkeypatch.setitem(registry._REGISTRY, "Special", Special)
    loaded = model_from_document(document)
    assert type(loaded) is Special
    np.testing.assert_array_equal(loaded.predict(X), y)
