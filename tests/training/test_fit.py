"""The fit stage (gpu_tree/training/fit.py): the one pipeline the estimators run."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_diabetes

import gpu_tree
from gpu_tree.testing import assert_tree_equal
from gpu_tree.training.fit import fit_tree, monotonic_constraints
from gpu_tree.training.inputs import Task, prepare
from gpu_tree.training.parameters import check_settings


@pytest.mark.parametrize("splitter", ["hist", "exact"])
def test_the_pipeline_grows_the_estimator_s_tree(splitter):
    X, y = load_diabetes(return_X_y=True)
    estimator = gpu_tree.DecisionTreeRegressor(
        max_depth=5, splitter=splitter, ccp_alpha=10.0, device="cpu"
    )
    estimator.fit(X, y)
    settings = check_settings(estimator.get_params(), is_classification=False)
    task = Task(False, True, "DecisionTreeRegressor")
    prepared = prepare(X, y, None, settings, task, "cpu")
    fitted = fit_tree(prepared, settings, "cpu", None)
    assert_tree_equal(fitted.tree, estimator.tree_, impurity_rtol=0, value_rtol=0)
    assert (fitted.searched.bin_mapper is None) == (splitter == "exact")
    assert set(fitted.setup_stats["seconds"]) == (
        {"backend"} if splitter == "exact" else {"binning", "backend"}
    )


def test_monotonic_constraints_are_checked_against_the_prepared_input():
    X = np.arange(40.0).reshape(20, 2)
    y = np.arange(20) % 3
    estimator = gpu_tree.DecisionTreeClassifier(monotonic_cst=[1, 0])
    settings = check_settings(estimator.get_params(), is_classification=True)
    prepared = prepare(X, y, None, settings, Task(True, True, "DecisionTreeClassifier"), "cpu")
    with pytest.raises(ValueError, match="multiclass"):
        monotonic_constraints(settings, 2, prepared.coded, prepared.categories)
    binary = prepare(X, y % 2, None, settings, Task(True, True, "x"), "cpu")
    cst = monotonic_constraints(settings, 2, binary.coded, binary.categories)
    assert cst.dtype == np.int8 and cst.tolist() == [1, 0]
