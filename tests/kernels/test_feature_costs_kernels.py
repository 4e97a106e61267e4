"""The cost-sensitive measure's one compiled formula (kernels/cpu/feature_costs.py), which
the level-wise selection (criteria.log2_cost_measure) and the subtree finisher share."""

import numpy as np
import pytest
from numba import njit

from gpu_tree.growing.criteria import log2_cost_measure
from gpu_tree.kernels.cpu import feature_costs


def _numpy_measure(cost_criterion, gain, cost, cost_weight):
    """The measure's definition in numpy's functions (criteria.log2_cost_measure's docstring)."""
    gain = np.maximum(gain, 0.0)
    with np.errstate(divide="ignore"):
        if cost_criterion == "tan_schlimmer":
            return 2.0 * np.log2(gain) - np.log2(cost)
        return gain + np.log2(-np.expm1(-gain * np.log(2.0))) - cost_weight * np.log2(cost + 1.0)


@pytest.mark.parametrize("cost_criterion", ["tan_schlimmer", "nunez"])
def test_the_measure_is_its_definition_to_rounding(cost_criterion):
    rng = np.random.default_rng(0)
    gain = np.concatenate([rng.random(500), 10.0 ** rng.uniform(-12, 4, 500)])
    cost = rng.integers(1, 30, gain.size).astype(np.float64) * rng.choice([1.0, 0.37], gain.size)
    measure = log2_cost_measure(cost_criterion, gain, cost, 0.7)
    expected = _numpy_measure(cost_criterion, gain, cost, 0.7)
    np.testing.assert_allclose(measure, expected, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("cost_criterion", ["tan_schlimmer", "nunez"])
def test_no_gain_measures_minus_infinity(cost_criterion):
    measure = log2_cost_measure(cost_criterion, [0.0, -1e-17, 1.0], [2.0, 2.0, 2.0])
    assert measure[0] == measure[1] == -np.inf
    assert np.isfinite(measure[2])


def test_arrays_broadcast_and_keep_their_shape():
    measure = log2_cost_measure("tan_schlimmer", np.full((2, 3), 0.5), np.array([1.0, 2.0, 4.0]))
    assert measure.shape == (2, 3)
    np.testing.assert_array_equal(measure[0], [-2.0, -3.0, -4.0])


def test_compiled_callers_get_the_array_kernels_bits():
    """The finisher inlines the scalar measure; the level-wise path calls it on arrays:
    the same bits."""
    code = feature_costs.COST_CRITERION_CODES["nunez"]
    measure = feature_costs.log2_cost_measure

    @njit
    def each(gain, cost, out):
        for i in range(gain.shape[0]):
            out[i] = measure(code, gain[i], cost[i], 0.3)

    rng = np.random.default_rng(1)
    gain = 10.0 ** rng.uniform(-10, 3, 300)
    cost = rng.integers(0, 9, 300).astype(np.float64)
    out = np.empty(300)
    each(gain, cost, out)
    np.testing.assert_array_equal(out, log2_cost_measure("nunez", gain, cost, 0.3))


def test_unknown_cost_criterion_is_refused():
    with pytest.raises(ValueError, match="cost_criterion"):
        log2_cost_measure("cheapest", [1.0], [1.0])
