"""The CPU backend's own translations of the contract's records for its kernels."""

from __future__ import annotations

import numpy as np

from gpu_tree.backends.contract import SubtreeRules
from gpu_tree.backends.cpu import _finisher_settings
from gpu_tree.kernels.cpu import feature_costs, subtrees


def test_every_subtree_rule_lands_in_the_finisher_s_slot_of_its_name():
    # Distinct values, so a rule written to another's slot shows.
    rules = SubtreeRules(
        max_depth=7,
        min_samples_split=5,
        min_samples_leaf=3,
        min_weight_leaf=0.5,
        min_purity=0.875,
        min_decrease=0.25,
        root_weight=123.0,
        pure_impurity=2.0**-52,
        rtol=1e-12,
        epsilon=2.0**-50,
        max_features=4,
        random_thresholds=True,
        feature_costs=np.array([1.0, 2.0]),
        cost_criterion="nunez",
        cost_weight=0.75,
        monotonic_cst=np.array([1, -1]),
    )
    settings = _finisher_settings(rules, variance_exponent=6)
    assert settings.dtype == np.float64
    # Every rule but the per-feature arrays and the cost criterion's name has its slot.
    passed_apart = {"feature_costs", "monotonic_cst", "cost_criterion"}
    numbers = {k: v for k, v in rules._asdict().items() if k not in passed_apart}
    assert settings.shape == (subtrees.N_SETTINGS,) == (len(numbers) + 2,)
    for name, value in numbers.items():
        assert settings[getattr(subtrees, name.upper())] == float(value), name
    assert settings[subtrees.COST_CRITERION] == feature_costs.COST_CRITERION_CODES["nunez"]
    assert settings[subtrees.VARIANCE_EXPONENT] == 6.0


def test_no_feature_costs_is_no_cost_criterion():
    rules = SubtreeRules(3, 2, 1, 0.0, 1.0, 0.0, 1.0, 0.0, 1e-12, 0.0, 0, False)
    assert _finisher_settings(rules)[subtrees.COST_CRITERION] == subtrees.NO_COSTS


def test_extremely_randomised_thresholds_off_is_zero():
    rules = SubtreeRules(3, 2, 1, 0.0, 1.0, 0.0, 1.0, 0.0, 1e-12, 0.0, 0, False)
    assert _finisher_settings(rules)[subtrees.RANDOM_THRESHOLDS] == 0.0
