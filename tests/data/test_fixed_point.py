"""Integer statistics (issue 14): the fixed point, its bounds, and what it makes exact.

- the fixed point of weights and regression sums, and the README's bound on how much a
  weight can lose against the total;
- node variances measured on the rows, exact in any order and the same on both devices;
- weighted classification at any weight scale. (Regression at any offset, scale and
  weighting: tests/data/test_regression_precision.py.)
"""

import math

import numpy as np
import pytest
from conftest import REAL_GPU

from gpu_tree import DecisionTreeClassifier
from gpu_tree.backends.cuda import cuda_status
from gpu_tree.backends.rows import RowData, squared_deviation_sums
from gpu_tree.data.stats import (
    COUNT_DTYPE,
    FIXED_POINT_BITS,
    STATS_DTYPE,
    StatsLayout,
    fixed_point_exponent,
    from_fixed_point,
    regression_centre,
    to_fixed_point,
)
from gpu_tree.kernels.cpu import row_statistics as cpu_row_statistics


# -- the fixed point --------------------------------------------------------------------
@pytest.mark.parametrize("total", [1e-300, 3e-7, 1.0, 1.5, 2.0**40, 7e200])
def test_the_exponent_keeps_the_total_just_below_2_to_the_61(total):
    values = np.array([total / 4, -total / 4, total / 2])
    e = fixed_point_exponent(values)
    scaled = math.ldexp(total, e)
    assert 2.0 ** (FIXED_POINT_BITS - 1) <= scaled < 2.0**FIXED_POINT_BITS


def test_the_exponent_of_zeros_is_zero_and_of_infinities_an_error():
    assert fixed_point_exponent(np.zeros(5)) == 0
    with pytest.raises(ValueError, match="finite"):
        fixed_point_exponent(np.array([1.0, np.inf]))


def test_a_power_of_two_scale_shifts_the_exponent_and_keeps_the_integers():
    rng = np.random.default_rng(0)
    weight = rng.uniform(0.1, 3.0, size=1000)
    base = RowData(StatsLayout(True, 3, True), weight, y_class=rng.integers(0, 3, 1000))
    scaled = RowData(StatsLayout(True, 3, True), weight * 2.0**-30, y_class=base.y_class)
    np.testing.assert_array_equal(scaled.weight_fixed, base.weight_fixed)
    assert scaled.layout.exponents[0] == base.layout.exponents[0] + 30


@pytest.mark.parametrize("exponent", [-1074, -1060, -1023, -1022, -600, -1, 0, 40, 62, 1023, 1030])
def test_fixed_point_conversions_round_as_ldexp_does(exponent):
    """The conversions multiply by 2**exponent where it is a normal float (faster than
    ldexp on a forest's millions of rows): the very same bits as ldexp, in the
    subnormals, at overflow and for exponents beyond a normal power of two."""
    rng = np.random.default_rng(exponent & 0xFFFF)
    values = rng.standard_normal(20_000) * 10.0 ** rng.integers(-320, 300, 20_000)
    values = np.concatenate([values, [0.0, -0.0, 5e-324, 1e-310, 1.7e308, 3.5, -2.5]])
    with np.errstate(over="ignore", invalid="ignore"):
        expected_real = np.ldexp(values, -exponent)
        got_real = from_fixed_point(values, exponent)
        np.testing.assert_array_equal(got_real.view(np.int64), expected_real.view(np.int64))
        small = values[np.abs(np.ldexp(values, exponent)) < 2.0**62]
        expected_fixed = np.rint(np.ldexp(small, exponent)).astype(np.int64)
        np.testing.assert_array_equal(to_fixed_point(small, exponent), expected_fixed)


def _weighted_rows(weight):
    n = weight.size
    return RowData(StatsLayout(True, 2, True), weight, y_class=np.arange(n) % 2)


def test_the_weight_bound_of_the_readme():
    """Each weight moves by at most 2**-61 of the total weight; a positive one below
    2**-62 of it, which would round to 0, counts as one unit (2**-61 to 2**-60 of it)."""
    rng = np.random.default_rng(1)
    weight = rng.lognormal(0.0, 3.0, size=10_000)
    total = weight.sum()
    rows = _weighted_rows(weight)
    assert np.max(np.abs(rows.weight - weight)) <= total * 2.0**-61
    tiny = np.append(np.ones(1000), [1000 * 2.0**-62 * 0.999, 1e-300])
    rows = _weighted_rows(tiny)
    np.testing.assert_array_equal(rows.weight_fixed[-2:], [1, 1])
    assert np.all((rows.weight[-2:] >= 1000 * 2.0**-61) & (rows.weight[-2:] <= 1000 * 2.0**-60))
    # The histograms' sums never come near int64's limit.
    assert int(np.sum(rows.weight_fixed)) < 2**62


def test_integer_statistics_types():
    y_class = np.arange(10) % 2
    unweighted = RowData(StatsLayout(True, 2, False), np.ones(10), y_class=y_class)
    assert unweighted.layout.dtype == COUNT_DTYPE  # half the histogram memory
    assert unweighted.row_stats.dtype == COUNT_DTYPE
    np.testing.assert_array_equal(unweighted.total_stats(), [5, 5])
    weighted = RowData(StatsLayout(True, 2, True), np.full(10, 0.5), y_class=y_class)
    assert weighted.layout.dtype == STATS_DTYPE
    np.testing.assert_array_equal(weighted.layout.real(weighted.total_stats()), [2.5, 2.5, 10])
    regression = RowData(StatsLayout(False, 0, False), np.ones(4), y=np.array([1.0, 2, 3, 10]))
    assert regression.layout.centre == 2.0  # the lower middle target
    np.testing.assert_array_equal(regression.layout.real(regression.total_stats()), [4, 8])


def test_the_regression_centre_is_a_target_unmoved_by_an_outlier():
    y = np.array([5.0, 1.0, 3.0, 2.0, 4.0, 1e300])
    assert regression_centre(y) == 3.0
    assert regression_centre(y + 2.0**40) == 3.0 + 2.0**40
    assert regression_centre(np.array([7.0])) == 7.0


# -- squared deviations, measured on the rows -------------------------------------------
def _reference_squared_deviations(centred, weight, mean):
    return math.fsum(weight * (centred - mean) ** 2)


def _cpu_squared_deviations(centred, weight, unit_weight, starts, ends, means):
    sample_indices = np.arange(centred.size, dtype=np.int64)
    rows = (sample_indices, starts, ends, centred, weight, unit_weight, means)
    return squared_deviation_sums(
        starts.size,
        lambda *extremes: cpu_row_statistics.largest_squared_deviations(*rows, *extremes),
        lambda *parts: cpu_row_statistics.squared_deviation_sums(*rows, *parts),
    )


@pytest.mark.parametrize("unit_weight", [True, False])
def test_squared_deviation_sums_match_an_exact_sum(unit_weight):
    """Nodes of ordinary, huge-offset, outlier and constant rows: within 1e-12 of fsum."""
    rng = np.random.default_rng(2)
    parts = [
        rng.normal(0, 1, 5000),
        rng.normal(1e9, 1e-3, 5000),
        np.append(rng.normal(0, 1, 4999), 1e12),
        np.full(100, 3.25),
    ]
    centred = np.concatenate(parts)
    weight = np.ones(centred.size) if unit_weight else rng.uniform(0.01, 10, centred.size)
    ends = np.cumsum([p.size for p in parts])
    starts = np.concatenate([[0], ends[:-1]])
    means = np.array(
        [np.average(centred[a:b], weights=weight[a:b]) for a, b in zip(starts, ends, strict=True)]
    )
    measured = _cpu_squared_deviations(centred, weight, unit_weight, starts, ends, means)
    expected = [
        _reference_squared_deviations(centred[a:b], weight[a:b], m)
        for a, b, m in zip(starts, ends, means, strict=True)
    ]
    np.testing.assert_allclose(measured[:3], expected[:3], rtol=1e-12)
    assert measured[3] == 0.0


def test_squared_deviation_sums_do_not_depend_on_the_row_order():
    rng = np.random.default_rng(3)
    centred = rng.lognormal(0, 4, 3000)
    weight = rng.uniform(0, 5, 3000)
    whole = (np.array([0]), np.array([3000]), np.array([centred.mean()]))
    first = _cpu_squared_deviations(centred, weight, False, *whole)
    order = rng.permutation(3000)
    second = _cpu_squared_deviations(centred[order], weight[order], False, *whole)
    assert first[0] == second[0]


CUDA_USABLE = cuda_status()[0]


@pytest.mark.skipif(not CUDA_USABLE, reason="CUDA backend not usable")
def test_cuda_squared_deviation_sums_equal_the_cpu_ones_bit_for_bit():
    from gpu_tree.kernels.cuda import launch as cuda_launch
    from gpu_tree.kernels.cuda import row_statistics as cuda_row_statistics

    _, _, xp = cuda_status()
    rng = np.random.default_rng(4)
    n = 600 if not REAL_GPU else 200_000
    centred = np.append(rng.normal(0, 1, n - 1), 1e10)
    weight = rng.uniform(0, 2, n)
    node_of_row = rng.integers(0, 4, n).astype(np.int32)
    slot_of_node = np.array([1, -1, 0, 2], dtype=np.int32)  # node 1 is not asked for
    means = np.array([0.1, -0.2, 5.0])  # by slot, as the CPU kernels take them
    mean_of_node = means[np.maximum(slot_of_node, 0)]  # by node id, as the CUDA ones do
    rows = (
        xp.asarray(node_of_row),
        xp.asarray(slot_of_node),
        xp.asarray(centred),
        xp.asarray(weight),
        False,
        xp.asarray(mean_of_node),
    )
    blocks, threads = cuda_launch.launch_config(n)
    on_device = squared_deviation_sums(
        3,
        lambda *extremes: cuda_row_statistics.largest_squared_deviations[blocks, threads](
            *rows, *extremes
        ),
        lambda *parts: cuda_row_statistics.squared_deviation_sums[blocks, threads](*rows, *parts),
        xp,
    )
    order = np.argsort(slot_of_node[node_of_row], kind="stable")
    slots = slot_of_node[node_of_row][order]
    starts = np.searchsorted(slots, [0, 1, 2])
    ends = np.searchsorted(slots, [0, 1, 2], side="right")
    on_cpu = _cpu_squared_deviations(centred[order], weight[order], False, starts, ends, means)
    np.testing.assert_array_equal(on_device, on_cpu)


def test_weighted_classification_counts_are_exact_whatever_the_weight_scale():
    rng = np.random.default_rng(6)
    X = rng.uniform(size=(500, 3))
    y = (X[:, 0] + 0.2 * rng.standard_normal(500) > 0.5).astype(int)
    weight = rng.uniform(0.5, 2, 500)
    base = DecisionTreeClassifier(max_depth=4).fit(X, y, sample_weight=weight)
    scaled = DecisionTreeClassifier(max_depth=4).fit(X, y, sample_weight=weight * 2.0**-40)
    ta, tb = scaled.tree_, base.tree_
    np.testing.assert_array_equal(ta.feature, tb.feature)
    np.testing.assert_array_equal(ta.threshold, tb.threshold)
    np.testing.assert_array_equal(
        scaled.tree_.weighted_n_node_samples, base.tree_.weighted_n_node_samples * 2.0**-40
    )


def test_a_wide_but_representable_spread_still_fits_exactly():
    from gpu_tree import DecisionTreeRegressor

    X = np.arange(10.0)[:, None]
    y = np.array([0.0] * 5 + [1e150] * 5)
    model = DecisionTreeRegressor().fit(X, y)
    np.testing.assert_array_equal(model.predict(X), y)
    assert model.tree_.impurity[0] == pytest.approx(0.25e300, rel=1e-12)


@pytest.mark.parametrize(
    ("weights", "class_weight"), [([1e308] * 6, None), ([1.0] * 6, {0: 1e308, 1: 1e308})]
)
def test_weights_summing_beyond_float64_are_refused_naming_sample_weight(weights, class_weight):
    """Finite weights whose total overflows: named, not "statistics must be finite"."""
    from gpu_tree import DecisionTreeClassifier

    X, y = np.arange(6.0)[:, None], np.array([0, 1, 0, 1, 1, 0])
    with pytest.raises(ValueError, match=r"sample_weight \(times class_weight\) sums beyond"):
        DecisionTreeClassifier(class_weight=class_weight).fit(X, y, sample_weight=weights)


def test_tiny_and_huge_uniform_weights_grow_the_unit_weight_tree():
    """Issue 15's property run: weights 2**-600 or 2**600 each changed the tree (Gini
    squares weight sums). The fit scales them to a total near the number of rows."""
    from gpu_tree import DecisionTreeClassifier

    X, y = np.arange(6.0)[:, None], np.array([0, 1, 0, 1, 1, 0])
    base = DecisionTreeClassifier().fit(X, y)
    for power in (-600, 600):
        scaled = DecisionTreeClassifier().fit(X, y, sample_weight=np.full(6, 2.0**power))
        np.testing.assert_array_equal(scaled.tree_.impurity, base.tree_.impurity)
        np.testing.assert_array_equal(
            scaled.tree_.weighted_n_node_samples, base.tree_.weighted_n_node_samples * 2.0**power
        )
