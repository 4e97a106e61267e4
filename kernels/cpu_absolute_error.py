"""Compiled helpers of the absolute-error criterion (scikit-learn's "absolute_error").

A node's absolute error is sum_i w_i |y_i - m| about its weighted median m; medians
are not additive, so splits are not scored from histogram sums but from the node's
rows in the order of a feature: every prefix's (left child's) and suffix's (right
child's) absolute error, each added one row at a time into a Fenwick tree over the
ranks of the node's sorted targets, which gives the weighted median of the rows added
so far and the sums of w and w*y below it in O(log n) (as scikit-learn's
``precompute_absolute_errors``).

The weighted median follows scikit-learn's tree criterion: the smallest sorted target
whose cumulative weight exceeds half the total; where the cumulative weight of the
targets before it is exactly half, the mid-point of that target and the one before.
"""

from pathlib import Path

import numpy as np
from numba import njit

from . import compilation

# Before the first kernel is decorated: where numba caches them (see .compilation).
compilation.choose_cache_folder(Path(__file__).parent)


@njit(cache=True)
def _fenwick_add(tree_w, tree_wy, rank, w, wy):
    i = rank + 1
    n = tree_w.size - 1
    while i <= n:
        tree_w[i] += w
        tree_wy[i] += wy
        i += i & (-i)


@njit(cache=True)
def _fenwick_search(tree_w, tree_wy, target, strict, top_bit):
    """The first rank whose cumulative weight (inclusive) exceeds ``target`` (strict)
    or reaches it (not strict), with the sums of w and w*y of the ranks before it."""
    n = tree_w.size - 1
    pos = 0
    cum_w = 0.0
    cum_wy = 0.0
    bit = top_bit
    while bit > 0:
        nxt = pos + bit
        if nxt <= n:
            c = cum_w + tree_w[nxt]
            if (strict and c <= target) or ((not strict) and c < target):
                pos = nxt
                cum_w = c
                cum_wy += tree_wy[nxt]
        bit >>= 1
    return pos, cum_w, cum_wy  # pos: the 0-based rank found


@njit(cache=True)
def _pass(order, rank_of, sorted_y, weight, out_error, out_median):
    """For each p, the absolute error and weighted median of rows order[:p + 1]."""
    n = order.size
    tree_w = np.zeros(n + 1)
    tree_wy = np.zeros(n + 1)
    top_bit = 1
    while top_bit * 2 <= n:
        top_bit *= 2
    total_w = 0.0
    total_wy = 0.0
    for p in range(n):
        i = order[p]
        r = rank_of[i]
        w = weight[i]
        _fenwick_add(tree_w, tree_wy, r, w, w * sorted_y[r])
        total_w += w
        total_wy += w * sorted_y[r]
        half = 0.5 * total_w
        hi, w_left, wy_left = _fenwick_search(tree_w, tree_wy, half, True, top_bit)
        lo, w_lo, wy_lo = _fenwick_search(tree_w, tree_wy, half, False, top_bit)
        median = sorted_y[hi]
        if lo != hi and w_lo + tree_weight_at(tree_w, lo) == half:
            median = 0.5 * (sorted_y[lo] + sorted_y[hi])
        w_right = total_w - w_left
        wy_right = total_wy - wy_left
        error = (wy_right - median * w_right) + (median * w_left - wy_left)
        out_error[p] = max(error, 0.0)
        out_median[p] = median


@njit(cache=True)
def tree_weight_at(tree_w, rank):
    """The weight held at one rank (prefix(rank + 1) - prefix(rank))."""
    return _prefix(tree_w, rank + 1) - _prefix(tree_w, rank)


@njit(cache=True)
def _prefix(tree_w, count):
    s = 0.0
    i = count
    while i > 0:
        s += tree_w[i]
        i -= i & (-i)
    return s


@njit(cache=True)
def node_median_and_error(y, weight):
    """(weighted median, sum w |y - median|) of a node's rows."""
    n = y.size
    order_y = np.argsort(y, kind="mergesort")
    sorted_y = y[order_y]
    rank_of = np.empty(n, dtype=np.int64)
    for k in range(n):
        rank_of[order_y[k]] = k
    error = np.empty(n)
    median = np.empty(n)
    _pass(order_y, rank_of, sorted_y, weight, error, median)
    return median[n - 1], error[n - 1]


@njit(cache=True)
def best_absolute_error_split(x, y, weight, min_samples_leaf, min_weight_leaf, rtol=1e-12):
    """The best threshold of one feature for a node's rows (no NaN in ``x``).

    Returns (improvement, threshold, parent error): improvement the parent's sum of
    w |y - median| less its children's (-inf: no valid split); the threshold the
    mid-point between the two values the split falls between (rows x <= threshold go
    left); ties go to the lowest threshold: a later candidate wins only by more than
    ``rtol`` times sum w |y| (the size of the sums each error is computed from, which
    bounds their rounding).
    """
    n = y.size
    order_y = np.argsort(y, kind="mergesort")
    sorted_y = y[order_y]
    rank_of = np.empty(n, dtype=np.int64)
    for k in range(n):
        rank_of[order_y[k]] = k
    order_x = np.argsort(x, kind="mergesort")
    left_error = np.empty(n)
    left_median = np.empty(n)
    _pass(order_x, rank_of, sorted_y, weight, left_error, left_median)
    reverse = order_x[::-1].copy()
    right_error_rev = np.empty(n)
    right_median = np.empty(n)
    _pass(reverse, rank_of, sorted_y, weight, right_error_rev, right_median)
    parent = left_error[n - 1]
    best = -np.inf
    threshold = np.nan
    w_left = 0.0
    total_w = 0.0
    size = 0.0
    for i in range(n):
        total_w += weight[i]
        size += weight[i] * abs(y[i])
    tolerance = rtol * size
    for p in range(n - 1):
        w_left += weight[order_x[p]]
        x_here = x[order_x[p]]
        x_next = x[order_x[p + 1]]
        if not x_here < x_next:
            continue
        n_left = p + 1
        if n_left < min_samples_leaf or n - n_left < min_samples_leaf:
            continue
        if w_left < min_weight_leaf or total_w - w_left < min_weight_leaf:
            continue
        children = left_error[p] + right_error_rev[n - 2 - p]
        improvement = parent - children
        if improvement > best + tolerance:
            best = improvement
            threshold = 0.5 * (x_here + x_next)
            if threshold == x_next:  # no float between them
                threshold = x_here
    return best, threshold, parent
