"""The oblique trees' CPU kernels (kernels/cpu/oblique.py): the weighted Gram matrices
sum in numpy's einsum order, bit for bit, with the zero-weight rows skipped; the
weighted sums of rows and the rows' products with a vector sum in their stated order;
the threshold search's sorted values and cumulative statistics are numpy's stable sort
and cumsum, bit for bit, whether sorted per node or read from the presorted features."""

import numpy as np
import pytest

from gpu_tree.kernels.cpu.oblique import (
    ROWS_TOGETHER,
    children_sorted_rows,
    node_orders,
    ordered_cumulative_stats,
    row_dots,
    sorted_cumulative_stats,
    weighted_sums,
    weighted_sums_and_gram,
)


def _einsum_gram(A, weight):
    return np.einsum("bpi,bpj->bij", A * weight[..., None], A)


def _sums_in_order(weight, X):
    expected = np.zeros((X.shape[0], X.shape[2]))
    for p in range(X.shape[1]):
        expected = expected + weight[:, p, None] * X[:, p]
    return expected


def _sums_and_gram(A, sum_weight, gram_weight):
    sums = np.full((A.shape[0], A.shape[2]), np.nan)
    gram = np.full((A.shape[0], A.shape[2], A.shape[2]), np.nan)
    weighted_sums_and_gram(A, sum_weight, gram_weight, sums, gram)
    return sums, gram


def _gram(A, weight):
    return _sums_and_gram(A, weight, weight)[1]


@pytest.mark.parametrize("k", [2, 3, 5, 8, 17, 29])
@pytest.mark.parametrize(("n_nodes", "n_rows"), [(1, 1), (1, 3000), (4, 16), (3, 257)])
def test_gram_is_numpy_s_einsum_bit_for_bit(k, n_nodes, n_rows):
    """Values over many magnitudes (so that the order of the sums shows in the last bits),
    a third of the rows of zero weight (padding, rows outside a hinge's margin)."""
    rng = np.random.default_rng(k * 1000 + n_rows)
    A = rng.normal(size=(n_nodes, n_rows, k)) * np.exp(3 * rng.normal(size=(n_nodes, n_rows, k)))
    weight = rng.random((n_nodes, n_rows)) * (rng.random((n_nodes, n_rows)) > 0.3)
    assert np.array_equal(_gram(A, weight), _einsum_gram(A, weight))


def test_sums_and_gram_in_one_pass_are_each_alone():
    """A Newton step's gradient and Hessian: rows where one weight is zero and the other
    not (the rows are skipped only where both are) change no bit of the first."""
    rng = np.random.default_rng(6)
    A = rng.normal(size=(3, 301, 6)) * np.exp(3 * rng.normal(size=(3, 301, 6)))
    sum_weight = rng.normal(size=(3, 301)) * (rng.random((3, 301)) > 0.3)
    gram_weight = rng.random((3, 301)) * (rng.random((3, 301)) > 0.3)
    sums, gram = _sums_and_gram(A, sum_weight, gram_weight)
    assert np.array_equal(gram, _einsum_gram(A, gram_weight))
    assert np.array_equal(sums, _sums_in_order(sum_weight, A))


def test_zero_weight_rows_with_non_finite_values_are_summed_as_numpy_sums_them():
    A = np.ones((2, 4, 3))
    A[0, 1, 2] = np.inf
    A[1, 3, 0] = np.nan
    weight = np.array([[1.0, 0.0, 2.0, 1.0], [1.0, 1.0, 1.0, 0.0]])
    with np.errstate(invalid="ignore"):  # 0 * inf
        expected = _einsum_gram(A, weight)
    assert np.isnan(expected).any()
    np.testing.assert_array_equal(_gram(A, weight), expected)


def test_one_column_is_the_weighted_sum_of_squares():
    """numpy sums a single column in blocks; the kernel row by row (equal up to rounding)."""
    rng = np.random.default_rng(1)
    A = rng.normal(size=(2, 500, 1))
    weight = rng.random((2, 500))
    np.testing.assert_allclose(_gram(A, weight), _einsum_gram(A, weight), rtol=1e-13)


@pytest.mark.parametrize("n_rows", [1, 7, 40, 301])
def test_weighted_sums_add_the_rows_in_order(n_rows):
    rng = np.random.default_rng(n_rows)
    X = rng.normal(size=(3, n_rows, 5)) * np.exp(3 * rng.normal(size=(3, n_rows, 5)))
    weight = rng.random((3, n_rows)) * (rng.random((3, n_rows)) > 0.3)
    expected = _sums_in_order(weight, X)
    out = np.full((3, 5), np.nan)
    weighted_sums(weight, X, out)
    assert np.array_equal(out, expected)
    X[1, n_rows - 1, 2] = np.inf  # a zero-weight row with a non-finite value is summed: NaN
    weight[1, n_rows - 1] = 0.0
    weighted_sums(weight, X, out)
    assert np.isnan(out[1, 2]) and np.isfinite(out[0]).all()


def test_row_dots_are_the_model_s_projections():
    """Training projects the rows as prediction does (gpu_tree.model.oblique.project, which
    skips zero coefficients) bit for bit: a zero coefficient adds ±0 to a finite sum."""
    from gpu_tree.model.oblique import project

    rng = np.random.default_rng(8)
    A = rng.normal(size=(3, 37, 6)) * np.exp(3 * rng.normal(size=(3, 37, 6)))
    coefficients = rng.normal(size=(3, 6)) * (rng.random((3, 6)) > 0.4)
    coefficients[0, 0] = -0.0
    out = np.empty((3, 37))
    row_dots(A, coefficients, out)
    for b in range(3):
        np.testing.assert_array_equal(out[b], project(A[b], coefficients[b]))


@pytest.mark.parametrize("n_rows", [1, ROWS_TOGETHER - 1, ROWS_TOGETHER + 3])
def test_row_dots_add_the_columns_in_order(n_rows):
    rng = np.random.default_rng(n_rows)
    A = rng.normal(size=(2, n_rows, 7)) * np.exp(3 * rng.normal(size=(2, n_rows, 7)))
    coefficients = rng.normal(size=(2, 7))
    expected = np.zeros((2, n_rows))
    for j in range(7):
        expected = expected + A[:, :, j] * coefficients[:, j, None]
    out = np.full((2, n_rows), np.nan)
    row_dots(A, coefficients, out)
    assert np.array_equal(out, expected)


def _numpy_sorted_cumulative(values, stats, n_rows):
    """The threshold search's sort and sums as numpy computes them (CuPy's path)."""
    P = values.shape[1]
    keyed = np.where(np.arange(P)[None, :, None] < n_rows[:, None, None], values, np.inf)
    order = np.argsort(keyed, axis=1, kind="stable")
    ordered = np.take_along_axis(keyed, order, axis=1)
    gathered = np.take_along_axis(stats[:, :, None, :], order[..., None], axis=1)
    return order, ordered, np.cumsum(gathered, axis=1)


def _batch(seed, n_rows, P=64, m=3, n_channels=3):
    rng = np.random.default_rng(seed)
    values = np.round(rng.normal(size=(len(n_rows), P, m)), 1)  # ties
    values[0, 0, 0] = -0.0  # equal to 0.0: a tie
    values[0, 1, 0] = 0.0
    stats = rng.random((len(n_rows), P, n_channels)) * np.exp(3 * rng.normal(size=(1, P, 1)))
    stats[np.arange(P)[None, :] >= np.asarray(n_rows)[:, None]] = 0.0
    return values, stats, np.asarray(n_rows, dtype=np.int64)


def test_sorted_cumulative_stats_are_numpy_s_sort_and_cumsum():
    values, stats, n_rows = _batch(0, [64, 40, 1, 17])
    values[1, 3, 2] = np.nan  # NaN sorts after the padding's +inf, as in numpy
    values[1, 5, 1] = np.inf
    _, expected_ordered, expected_cumulative = _numpy_sorted_cumulative(values, stats, n_rows)
    ordered = np.empty(values.shape)
    cumulative = np.empty(values.shape + (stats.shape[2],))
    sorted_cumulative_stats(values, stats, n_rows, ordered, cumulative)
    np.testing.assert_array_equal(ordered, expected_ordered)
    np.testing.assert_array_equal(cumulative, expected_cumulative)


def test_presorted_orders_are_the_stable_sort_s():
    """Rows of three nodes, each feature sorted once over all rows, filtered into the
    nodes, then into two children each (children_sorted_rows): each node's order read
    from them (node_orders) is numpy's stable argsort of its padded values."""
    rng = np.random.default_rng(4)
    n, d = 120, 3
    X = np.round(rng.normal(size=(n, d)), 1)
    node_of_row = rng.integers(0, 3, size=n)

    def level_orders(sorted_rows, rows, counts, length):
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        position_in_node = np.empty(n, dtype=np.int64)
        position_in_node[rows] = np.arange(rows.size) - np.repeat(starts, counts)
        order = np.empty((len(counts), length, d), dtype=np.int64)
        node_orders(sorted_rows, position_in_node, starts, counts, order)
        values = np.zeros((len(counts), length, d))
        for b, (start, count) in enumerate(zip(starts, counts, strict=True)):
            values[b, :count] = X[rows[start : start + count]]
        expected, _, _ = _numpy_sorted_cumulative(
            values, np.zeros((len(counts), length, 1)), counts
        )
        np.testing.assert_array_equal(order, expected)
        stats = rng.random((len(counts), length, 2))
        stats[np.arange(length)[None, :] >= counts[:, None]] = 0.0
        ordered = np.empty(values.shape)
        cumulative = np.empty(values.shape + (2,))
        ordered_cumulative_stats(values, stats, counts, order, ordered, cumulative)
        _, expected_ordered, expected_cumulative = _numpy_sorted_cumulative(values, stats, counts)
        np.testing.assert_array_equal(ordered, expected_ordered)
        np.testing.assert_array_equal(cumulative, expected_cumulative)

    root_sorted = np.ascontiguousarray(np.argsort(X, axis=0, kind="stable").T)
    rows = np.argsort(node_of_row, kind="stable")  # grouped by node, in row order
    counts = np.bincount(node_of_row, minlength=3).astype(np.int64)
    sorted_rows = np.empty((d, n), dtype=np.int64)
    children_sorted_rows(
        root_sorted,
        node_of_row.astype(np.int64),
        np.concatenate([[0], np.cumsum(counts)[:-1]]),
        sorted_rows,
    )
    level_orders(sorted_rows, rows, counts, 64)
    # The next level: node 1 is a leaf; nodes 0 and 2 split by feature 0's sign.
    side = (X[:, 0] > 0).astype(np.int64)
    child = np.where(node_of_row == 1, -1, np.where(node_of_row == 0, 0, 2) + side)
    child_counts = np.bincount(child[child >= 0], minlength=4).astype(np.int64)
    next_sorted = np.empty((d, int(child_counts.sum())), dtype=np.int64)
    child_starts = np.concatenate([[0], np.cumsum(child_counts)[:-1]])
    children_sorted_rows(sorted_rows, child, child_starts, next_sorted)
    next_rows = np.flatnonzero(child >= 0)[np.argsort(child[child >= 0], kind="stable")]
    level_orders(next_sorted, next_rows, child_counts, 64)
