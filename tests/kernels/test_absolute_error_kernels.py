"""The absolute-error kernels' two ways to a prefix's median (kernels/cpu/absolute_error.py):
the walk of the median's rank and the Fenwick tree it falls back to give the same bits,
at every wanted prefix, whatever the weights; and the rows' order by value (a counting
sort of bin codes) is the merge sort's.

The estimators' trees are checked against scikit-learn and a brute-force search in
tests/growing/test_absolute_error.py; here the two passes meet each other on sets of
rows chosen to reach the walk's corners: tied targets, weightless rows (a weightless
prefix too), the exact half where the median is a mid-point, and weights so unequal
that the walk gives up.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_tree.kernels.cpu.absolute_error import (
    _fenwick_pass,
    _order_by_value,
    _target_ranks,
    _walked_pass,
)

WEIGHTS = ("unit", "small_integers", "with_zeros", "zero_first", "powers_of_two")


def _weights(rng, kind, n):
    """Fixed-point weights of ``n`` rows (int64, as RowData's weight channel)."""
    if kind == "unit":
        return np.full(n, 1 << 20, dtype=np.int64)
    if kind == "small_integers":
        return rng.integers(1, 4, size=n).astype(np.int64) << 20
    if kind == "with_zeros":
        return rng.integers(0, 3, size=n).astype(np.int64) << 20
    if kind == "zero_first":  # a weightless prefix in any order: the first rows weigh 0
        weight = rng.integers(1, 3, size=n).astype(np.int64) << 20
        weight[: n // 3] = 0
        return weight
    return np.left_shift(1, rng.integers(0, 50, size=n)).astype(np.int64)


def _passes(rng, n, kind, subset):
    """Both passes over one random order of (a subset of) ``n`` rows: (walked, fenwick),
    each (gave_up, errors, medians) at the wanted prefixes."""
    y = np.round(rng.normal(size=n) * 3)  # tied targets
    sorted_y, rank_of = _target_ranks(y)
    weight = _weights(rng, kind, n)
    weighted_sum = np.round(y * weight / (1 << 20) * (1 << 10)).astype(np.int64)
    scales = np.ldexp(1.0, -np.array([20, 10]))
    order = rng.permutation(n)
    if subset:
        order = order[: max(1, n // 2)]
    if kind == "zero_first":
        order = np.concatenate([order[weight[order] == 0], order[weight[order] > 0]])
    wanted = rng.random(order.size) < 0.5
    wanted[-1] = True
    results = []
    for one_pass in (_walked_pass, _fenwick_pass):
        error = np.full(order.size, -1.0)
        median = np.full(order.size, -1.0)
        walked = one_pass(
            order, rank_of, sorted_y, weight, weighted_sum, scales, 0, wanted, error, median
        )
        results.append((walked, error[wanted], median[wanted]))
    return results


@pytest.mark.parametrize("kind", WEIGHTS)
@pytest.mark.parametrize("subset", [False, True])
def test_the_walk_gives_the_fenwick_trees_bits(kind, subset):
    rng = np.random.default_rng([WEIGHTS.index(kind), subset])
    walked_any = False
    for n in (1, 2, 3, 8, 57, 400):
        (walked, error, median), (_, fenwick_error, fenwick_median) = _passes(rng, n, kind, subset)
        walked_any |= bool(walked)
        if walked:
            assert error.view(np.int64).tolist() == fenwick_error.view(np.int64).tolist()
            assert median.view(np.int64).tolist() == fenwick_median.view(np.int64).tolist()
    if kind != "powers_of_two":
        assert walked_any


def test_the_walk_gives_up_where_weights_send_the_median_across_the_node():
    # Rows at the two ends of the ranks in turn, each outweighing the other end (the
    # first weighs 1, the others 2): the median crosses the node at every row.
    n = 400
    y = np.arange(n, dtype=np.float64)
    sorted_y, rank_of = _target_ranks(y)
    order = np.ravel(np.column_stack([np.arange(n // 2), n - 1 - np.arange(n // 2)]))
    weight = np.full(n, 2, dtype=np.int64)
    weight[order[0]] = 1
    weighted_sum = weight * np.arange(n)
    scales = np.ones(2)
    wanted = np.ones(n, dtype=bool)
    outputs = [(np.empty(n), np.empty(n)) for _ in range(2)]
    args = (order, rank_of, sorted_y, weight, weighted_sum, scales, 0, wanted)
    assert not _walked_pass(*args, *outputs[0])
    _fenwick_pass(*args, *outputs[1])
    medians = outputs[1][1]
    assert medians[1::2].tolist() == (n - 1 - np.arange(n // 2)).tolist()


@pytest.mark.parametrize("n", [0, 1, 5, 25, 40, 3000])
def test_rows_in_order_of_value_as_a_merge_sort(n):
    rng = np.random.default_rng(n)
    codes = rng.integers(0, 256, size=n).astype(np.float64)  # counting, or (small n) merging
    wide_codes = rng.integers(0, 60_000, size=n).astype(np.float64)  # too many codes: merging
    raw = np.round(rng.normal(size=n), 1)  # negative, fractional values with ties
    for x in (codes, wide_codes, raw):
        rows = np.flatnonzero(rng.random(n) < 0.8).astype(np.int64)
        expected = rows[np.argsort(x[rows], kind="mergesort")]
        assert _order_by_value(x, rows).tolist() == expected.tolist()
