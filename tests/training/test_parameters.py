"""The parameter table (gpu_tree/training/parameters.py): it names every estimator
parameter, checks each where it says, and writes every estimator's docstring."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import gpu_tree
import gpu_tree.dask
from gpu_tree.training.parameters import (
    PARAMETERS,
    check_settings,
    int_bounds,
    resolve_sizes,
)

ESTIMATORS = [
    gpu_tree.DecisionTreeClassifier,
    gpu_tree.DecisionTreeRegressor,
    gpu_tree.ExtraTreeClassifier,
    gpu_tree.ExtraTreeRegressor,
    gpu_tree.RandomForestClassifier,
    gpu_tree.RandomForestRegressor,
    gpu_tree.ExtraTreesClassifier,
    gpu_tree.ExtraTreesRegressor,
    gpu_tree.dask.DecisionTreeClassifier,
    gpu_tree.dask.DecisionTreeRegressor,
]
STAGES = {"settings", "data", "display", "forest"}


def parameters_of(estimator):
    return [p for p in inspect.signature(estimator.__init__).parameters.values()][1:]


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: f"{e.__module__}.{e.__name__}")
def test_every_parameter_is_in_the_table_and_in_the_docstring_with_its_default(estimator):
    doc = inspect.getdoc(estimator)
    assert "Parameters\n----------\n" in doc
    section = doc.split("Parameters\n----------\n", 1)[1]
    for parameter in parameters_of(estimator):
        assert parameter.name in PARAMETERS, parameter.name
        default = parameter.default
        shown = f'"{default}"' if isinstance(default, str) else repr(default)
        assert f"\n{parameter.name} : " in f"\n{section}", parameter.name
        line = next(x for x in section.splitlines() if x.startswith(f"{parameter.name} : "))
        assert line.endswith(f"default={shown}"), line


def test_the_docstrings_say_what_each_kind_of_estimator_reads():
    def entry(estimator, name):
        section = inspect.getdoc(estimator).split("Parameters\n----------\n", 1)[1]
        start = section.index(f"{name} : ")
        return section[start : section.index("\n", start)]

    assert "squared_error" in entry(gpu_tree.DecisionTreeRegressor, "criterion")
    assert "gini" in entry(gpu_tree.DecisionTreeClassifier, "criterion")
    assert "squared_error" in entry(gpu_tree.RandomForestRegressor, "criterion")
    assert "balanced_subsample" in entry(gpu_tree.RandomForestClassifier, "class_weight")
    assert "balanced_subsample" not in entry(gpu_tree.DecisionTreeClassifier, "class_weight")
    # No estimator's documentation sends the reader to another's.
    for estimator in ESTIMATORS:
        assert "as the classifier's" not in inspect.getdoc(estimator)


def test_every_entry_declares_a_stage_and_a_check_where_its_stage_needs_one():
    for name, parameter in PARAMETERS.items():
        assert parameter.stage in STAGES, name
        assert parameter.doc.strip() and parameter.type_doc.strip(), name
        if parameter.stage == "settings":
            assert callable(parameter.check), name


GOOD = gpu_tree.DecisionTreeClassifier().get_params()


@pytest.mark.parametrize(
    ("name", "bad", "error", "words"),
    [
        ("criterion", "variance", ValueError, "criterion"),
        ("splitter", "fast", ValueError, "splitter"),
        ("max_bins", 1, ValueError, "max_bins"),
        ("max_bins", 2.5, TypeError, "max_bins"),
        ("max_depth", 0, ValueError, "max_depth"),
        ("max_leaf_nodes", 1, ValueError, "max_leaf_nodes"),
        ("min_impurity_decrease", -1.0, ValueError, "min_impurity_decrease"),
        ("min_weight_fraction_leaf", 0.6, ValueError, "min_weight_fraction_leaf"),
        ("min_purity", 0.0, ValueError, "min_purity"),
        ("ccp_alpha", -0.1, ValueError, "ccp_alpha"),
        ("random_state", -1, ValueError, "random_state"),
        ("cost_criterion", "cheap", ValueError, "cost_criterion"),
        ("cost_weight", float("inf"), ValueError, "cost_weight"),
        ("categorical_split", "ternary", ValueError, "categorical_split"),
        ("max_category_subset", -1, ValueError, "max_category_subset"),
    ],
)
def test_each_settings_parameter_is_refused_by_name_before_any_data(name, bad, error, words):
    with pytest.raises(error, match=words):
        check_settings({**GOOD, name: bad}, is_classification=True)
    # The estimator refuses it the same way, before reading X (X here is no array at all).
    with pytest.raises(error, match=words):
        gpu_tree.DecisionTreeClassifier(**{name: bad}).fit(object(), None)


def test_the_first_bad_parameter_in_the_table_order_is_the_one_named():
    with pytest.raises(ValueError, match="criterion"):
        check_settings({**GOOD, "criterion": "x", "max_depth": 0}, is_classification=True)
    with pytest.raises(ValueError, match="max_depth"):
        check_settings({**GOOD, "max_depth": 0, "ccp_alpha": -1.0}, is_classification=True)


def test_parameters_an_estimator_lacks_take_the_values_that_leave_them_without_effect():
    params = gpu_tree.DecisionTreeRegressor().get_params()
    assert "min_purity" not in params
    settings = check_settings(params, is_classification=False)
    assert settings.min_purity == 1.0
    assert settings.criterion == "squared_error"


def test_sizes_resolve_fractions_of_the_rows_and_features():
    settings = check_settings(
        {**GOOD, "min_samples_split": 0.1, "min_samples_leaf": 0.05, "max_features": "sqrt"},
        is_classification=True,
    )
    sizes = resolve_sizes(settings, n_samples=1000, n_features=16)
    assert (sizes.min_samples_split, sizes.min_samples_leaf, sizes.max_features) == (100, 50, 4)
    assert sizes.feature_costs is None
    settings = check_settings({**GOOD, "feature_costs": [1.0, 0.0]}, is_classification=True)
    with pytest.raises(ValueError, match=r"feature_costs\[1\] is 0"):
        resolve_sizes(settings, n_samples=10, n_features=2)
    costs = resolve_sizes(
        check_settings({**GOOD, "feature_costs": [1, 2]}, True), 10, 2
    ).feature_costs
    assert costs.dtype == np.float64 and costs.tolist() == [1.0, 2.0]


def test_integer_bounds_are_the_checks_bounds():
    for name in ("max_depth", "max_leaf_nodes", "max_bins", "max_category_subset"):
        low, high = int_bounds(name)
        check_settings({**GOOD, name: low}, is_classification=True)
        with pytest.raises(ValueError, match=name):
            check_settings({**GOOD, name: low - 1}, is_classification=True)
        if high is not None:
            check_settings({**GOOD, name: high}, is_classification=True)
            with pytest.raises(ValueError, match=name):
                check_settings({**GOOD, name: high + 1}, is_classification=True)


def test_the_command_line_takes_its_ranges_and_choices_from_the_table():
    from gpu_tree.app.cli import main
    from gpu_tree.training.parameters import choices_of

    options = {p.name: p for p in main.commands["train"].params}
    for option, name in [
        ("max_depth", "max_depth"),
        ("max_bins", "max_bins"),
        ("min_samples_leaf", "min_samples_leaf"),
        ("min_samples_split", "min_samples_split"),
        ("max_leaf_nodes", "max_leaf_nodes"),
        ("forest", "n_estimators"),
    ]:
        kind = options[option].type
        assert (kind.min, kind.max) == int_bounds(name), option
    for option in ("categorical_split", "device"):
        assert tuple(options[option].type.choices) == choices_of(option)
