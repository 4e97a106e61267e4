"""Regression statistics at any offset and scale (issue 14's properties).

Before issue 14 every per-row statistic was rounded onto a grid of 2^-51 of its column's
total, and for an offset target the total of w*y^2 is near n*c^2, which wiped out the
variance: offsets from 1e6 changed the tree, and from 1e3 the node impurities. Now the
target is centred on one of its values, sums are integers, splits are scored without sums
of squares and node variances are measured on the rows.
"""

import math

import numpy as np
import pytest

from gpu_tree import DecisionTreeRegressor

OFFSETS = (1e3, 1e6, 1e9, 1e12)


def _data(n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, size=(n, 4))
    y = np.sin(2.0 * X[:, 0]) + 0.5 * X[:, 1] + 0.3 * rng.standard_normal(n)
    return X, y


def _fit(X, y):
    return DecisionTreeRegressor(max_depth=6, device="cpu").fit(X, y)


def _two_pass_variance(values):
    """Two-pass float64 variance, about the correctly rounded mean (math.fsum) of the
    values less their first one.

    Not np.var on the values: near 1e12 float64 values are 1.2e-4 apart, so a mean there
    (numpy's pairwise one errs further) is off by up to 6e-5, which moves a variance of
    0.4 by about 1e-8 relative, ten times this file's tolerance. The differences to one
    of the values are exact (Sterbenz) and their mean is not limited so.
    """
    shifted = values - values[0]
    mean = math.fsum(shifted) / len(shifted)
    return float(np.mean((shifted - mean) ** 2))


def _node_variances(model, X, y):
    """Two-pass float64 variance of every node's training rows."""
    path = model.decision_path(X).tocsc()
    return np.array(
        [
            _two_pass_variance(y[path.indices[path.indptr[k] : path.indptr[k + 1]]])
            for k in range(path.shape[1])
        ]
    )


def _same_structure(a, b):
    ta, tb = a.tree_, b.tree_
    assert ta.node_count == tb.node_count
    np.testing.assert_array_equal(ta.feature, tb.feature)
    np.testing.assert_array_equal(ta.threshold, tb.threshold)
    np.testing.assert_array_equal(ta.n_node_samples, tb.n_node_samples)


@pytest.mark.parametrize("offset", OFFSETS)
def test_an_offset_target_grows_the_same_tree_and_shifts_predictions(offset):
    X, y = _data()
    base, shifted = _fit(X, y), _fit(X, y + offset)
    _same_structure(shifted, base)
    np.testing.assert_allclose(
        shifted.predict(X) - offset, base.predict(X), rtol=0, atol=1e-9 * offset
    )


@pytest.mark.parametrize("offset", OFFSETS)
def test_node_impurities_equal_a_two_pass_variance(offset):
    X, y = _data()
    y = y + offset
    model = _fit(X, y)
    np.testing.assert_allclose(
        model.tree_.impurity, _node_variances(model, X, y), rtol=1e-9, atol=0
    )


def test_node_impurities_equal_a_two_pass_variance_without_offset():
    X, y = _data()
    model = _fit(X, y)
    np.testing.assert_allclose(
        model.tree_.impurity, _node_variances(model, X, y), rtol=1e-9, atol=0
    )


@pytest.mark.parametrize("power", [-20, -1, 1, 40])
def test_a_power_of_two_scale_grows_the_same_tree_and_scales_predictions_exactly(power):
    X, y = _data()
    k = 2.0**power
    base, scaled = _fit(X, y), _fit(X, y * k)
    _same_structure(scaled, base)
    np.testing.assert_array_equal(scaled.predict(X), base.predict(X) * k)
    np.testing.assert_array_equal(scaled.tree_.impurity, base.tree_.impurity * k * k)
