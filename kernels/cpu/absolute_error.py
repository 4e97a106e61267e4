"""Compiled helpers of the absolute-error criterion (scikit-learn's "absolute_error").

A node's absolute error is sum_i w_i |y_i - m| about its weighted median m; medians
are not additive, so splits are not scored from histogram sums but from the node's
rows in the order of a feature: every prefix's (left child's) and suffix's (right
child's) absolute error, each added one row at a time into a Fenwick tree over the
ranks of the node's sorted targets, which gives the weighted median of the rows added
so far and the sums of w and w*y below it in O(log n) (as scikit-learn's
``precompute_absolute_errors``).

The sums are the rows' fixed-point statistics (integers: the weight channel and each
output's ``w * (y - centre)`` channel of ``RowData.row_stats``), and the median and
error come from them by :mod:`._median_errors`, which the GPU's search
(:mod:`.cuda_absolute_error`) shares: the same integers give the same bits on both
devices. ``scales`` holds the channels' powers of two: the weight's, then each output's
sum's (StatsLayout.real).
"""

import hashlib
from pathlib import Path

import numpy as np
from numba import njit, prange

from .. import _median_errors as _medians
from .. import _split_scan as _scan
from .. import compilation
from .launch import SerialWhenSmall, ThreadedWhenLarge

# The shared arithmetic, inlined; its source hash goes into the cache keys of the
# kernels that inline it (numba keys its cache on this file alone, see kernels/cuda/launch.py).
_exceeds_half = njit(cache=True, inline="always")(_medians.exceeds_half)
_reaches_half = njit(cache=True, inline="always")(_medians.reaches_half)
_median_of = njit(cache=True, inline="always")(_medians.median_of)
_side_error = _medians.make_side_error(
    njit(inline="always"), njit(inline="always")(_scan.plain_product)
)
_admissible = njit(cache=True, inline="always")(_medians.admissible)
_missing_go_left = njit(cache=True, inline="always")(_medians.missing_go_left)
_leaves_allowed = njit(cache=True, inline="always")(_medians.leaves_allowed)
MEDIAN_ERRORS_SOURCE_KEY = int(
    hashlib.sha256(Path(_medians.__file__).read_bytes()).hexdigest()[:15], 16
)


# The walk of the median's rank (_walked_pass) takes at most this many steps per rank
# and row of a pass (about ln n per row with unit weights) before the Fenwick tree takes
# over: the cost of a walk that gives up stays about that of a Fenwick pass.
WALK_STEPS_PER_RANK = 32


@njit(cache=True)
def _fenwick_add(tree_w, tree_wy, rank, w, wy):
    i = rank + 1
    n = tree_w.size - 1
    while i <= n:
        tree_w[i] += w
        tree_wy[i] += wy
        i += i & (-i)


@njit(cache=True)
def _fenwick_search(tree_w, tree_wy, total, strict, top_bit):
    """The first rank whose cumulative weight (inclusive) exceeds half ``total``
    (strict) or reaches it (not strict), with the sums of w and w*y of the ranks before
    it (integers: the comparisons are exact)."""
    n = tree_w.size - 1
    pos = 0
    cum_w = 0
    cum_wy = 0
    bit = top_bit
    while bit > 0:
        nxt = pos + bit
        if nxt <= n:
            c = cum_w + tree_w[nxt]
            if (strict and not _exceeds_half(c, total)) or (
                (not strict) and not _reaches_half(c, total)
            ):
                pos = nxt
                cum_w = c
                cum_wy += tree_wy[nxt]
        bit >>= 1
    return min(pos, n - 1), cum_w, cum_wy  # pos: the 0-based rank found


@njit(cache=True)
def _target_ranks(y):
    """The node's targets sorted, and each row's rank among them (ties by row order)."""
    n = y.size
    order_y = _order_by_value(y, np.arange(n))
    rank_of = np.empty(n, dtype=np.int64)
    for k in range(n):
        rank_of[order_y[k]] = k
    return y[order_y], rank_of


# Counting sorts order bin codes (whole numbers below this) where they are not far more
# than the rows; raw values take a merge sort.
_COUNTING_SORT_VALUES = 1 << 16
# Up to this many rows, an insertion sort (numba's merge sort costs about a microsecond
# on a few rows, the insertion sort a tenth of that).
_INSERTION_SORT_ROWS = 32


@njit(cache=True)
def _order_by_value(x, rows):
    """``rows`` (indices into ``x``, ascending) in order of their values, ties in the
    order given: a stable sort, so the order a merge sort gives. A few rows by insertion;
    bin codes (whole numbers from 0 to a few times the rows) by counting, O(n + codes);
    other values by a merge sort."""
    n = rows.size
    if n <= _INSERTION_SORT_ROWS:  # a stable insertion sort: moves only past larger values
        order = rows.copy()
        for i in range(1, n):
            row = order[i]
            value = x[row]
            j = i - 1
            while j >= 0 and x[order[j]] > value:
                order[j + 1] = order[j]
                j -= 1
            order[j + 1] = row
        return order
    largest = 0.0
    whole = True
    for i in range(n):
        value = x[rows[i]]
        if not (value >= 0.0 and value == np.floor(value) and value < _COUNTING_SORT_VALUES):
            whole = False
            break
        largest = max(largest, value)
    if not whole or largest > 2 * n + 32:
        return rows[np.argsort(x[rows], kind="mergesort")]
    n_values = int(largest) + 1
    first = np.zeros(n_values + 1, dtype=np.int64)
    for i in range(n):
        first[int(x[rows[i]]) + 1] += 1
    for v in range(n_values):
        first[v + 1] += first[v]
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        v = int(x[rows[i]])
        order[first[v]] = rows[i]
        first[v] += 1
    return order


@njit(cache=True)
def _feature_values(columns, f, rows, missing_code):
    """A node's values of feature ``f`` (float64) and which are missing (NaN where
    ``missing_code`` is NaN, else that code)."""
    n = rows.size
    x = np.empty(n)
    missing = np.empty(n, dtype=np.bool_)
    missing_is_nan = missing_code != missing_code
    for i in range(n):
        value = np.float64(columns[f, rows[i]])
        x[i] = value
        missing[i] = (value != value) if missing_is_nan else (value == missing_code)
    return x, missing


def _compile_searches(source_key):
    """The kernels that inline :mod:`._median_errors` (directly or through each other),
    each with its source hash as a closure variable: numba puts closure variables in its
    cache key, and keys the cache on this file alone, so an edit to the shared arithmetic
    recompiles them. They call each other by their module-level names (globals): a
    compiled function held in a closure variable would change the cache key in every
    process, and nothing would ever be loaded from the cache."""

    @njit(cache=True)
    def keyed_median_and_error(
        sorted_y, lo, hi, w_left, wy_left, total_w, total_wy, weight_scale, sum_scale
    ):
        """The weighted median and absolute error of a set of rows whose first rank past
        half is ``hi`` (``lo`` the first reaching half), the ranks before ``hi`` weighing
        ``w_left`` and summing ``wy_left``, the set ``total_w`` and ``total_wy``."""
        source_key  # noqa: B018 - in the cache key only
        median = _median_of(sorted_y[lo], sorted_y[hi], w_left, total_w)
        error = _side_error(w_left, wy_left, total_w, total_wy, median, weight_scale, sum_scale)
        return median, error

    @njit(cache=True)
    def keyed_walked_pass(
        order,
        rank_of,
        sorted_y,
        weight,
        weighted_sum,
        scales,
        output,
        wanted,
        out_error,
        out_median,
    ):
        """:func:`keyed_pass` by walking the median's rank: the rows added so far marked at
        their ranks, and the sums of those before the walk's position kept as rows are
        added, it steps over ranks to the new median at each wanted prefix alone, O(1) a
        row where the median moves a rank or so a row (unit weights: half a row), and the
        same integers as the Fenwick tree's. Weights of very different sizes can send the
        median across the node at every row: past WALK_STEPS_PER_RANK steps per rank and
        row it gives up, returning False (the outputs part-written)."""
        source_key  # noqa: B018 - in the cache key only
        n_ranks = sorted_y.size
        # Each rank's row's weight (0: no row yet, or a weightless one) and weighted sum.
        at_rank = np.zeros((2, n_ranks), dtype=np.int64)
        w_at, wy_at = at_rank[0], at_rank[1]
        steps_left = WALK_STEPS_PER_RANK * (n_ranks + order.size)
        at = 0  # the walk's rank; w_below, wy_below: the sums of the added rows before it
        w_below = 0
        wy_below = 0
        total_w = 0
        total_wy = 0
        weight_scale, sum_scale = scales[0], scales[1 + output]
        for p in range(order.size):
            i = order[p]
            r = rank_of[i]
            w_at[r] = weight[i]
            wy_at[r] = weighted_sum[i]
            total_w += weight[i]
            total_wy += weighted_sum[i]
            if r < at:
                w_below += weight[i]
                wy_below += weighted_sum[i]
            if not wanted[p]:
                continue
            if total_w == 0:  # what the Fenwick searches find in a weightless set
                lo, hi, w_left, wy_left = 0, n_ranks - 1, 0, total_wy
            else:
                # Back while the ranks before the walk weigh over half, then on to the first
                # rank past half (weightless ranks add nothing: it is a weighted row's).
                while _exceeds_half(w_below, total_w):
                    at -= 1
                    w_below -= w_at[at]
                    wy_below -= wy_at[at]
                    steps_left -= 1
                while not _exceeds_half(w_below + w_at[at], total_w):
                    w_below += w_at[at]
                    wy_below += wy_at[at]
                    at += 1
                    steps_left -= 1
                hi, w_left, wy_left = at, w_below, wy_below
                lo = hi
                if 2 * w_left == total_w:  # then the last weighted rank before hi reaches half
                    lo -= 1
                    while w_at[lo] == 0:
                        lo -= 1
                        steps_left -= 1
                if steps_left < 0:
                    return False
            out_median[p], out_error[p] = _median_and_error(
                sorted_y, lo, hi, w_left, wy_left, total_w, total_wy, weight_scale, sum_scale
            )
        return True

    @njit(cache=True)
    def keyed_fenwick_pass(
        order,
        rank_of,
        sorted_y,
        weight,
        weighted_sum,
        scales,
        output,
        wanted,
        out_error,
        out_median,
    ):
        """:func:`keyed_pass` with a Fenwick tree over the ranks: O(log n) a row, whatever
        the weights."""
        source_key  # noqa: B018 - in the cache key only
        n_ranks = sorted_y.size
        tree_w = np.zeros(n_ranks + 1, dtype=np.int64)
        tree_wy = np.zeros(n_ranks + 1, dtype=np.int64)
        top_bit = 1
        while top_bit * 2 <= n_ranks:
            top_bit *= 2
        total_w = 0
        total_wy = 0
        weight_scale, sum_scale = scales[0], scales[1 + output]
        for p in range(order.size):
            i = order[p]
            r = rank_of[i]
            _fenwick_add(tree_w, tree_wy, r, weight[i], weighted_sum[i])
            total_w += weight[i]
            total_wy += weighted_sum[i]
            if not wanted[p]:
                continue
            hi, w_left, wy_left = _fenwick_search(tree_w, tree_wy, total_w, True, top_bit)
            # The targets before hi weighing exactly half: the mid-point with the first
            # rank whose cumulative weight reaches half.
            lo = hi
            if 2 * w_left == total_w:
                lo = _fenwick_search(tree_w, tree_wy, total_w, False, top_bit)[0]
            out_median[p], out_error[p] = _median_and_error(
                sorted_y, lo, hi, w_left, wy_left, total_w, total_wy, weight_scale, sum_scale
            )

    @njit(cache=True)
    def keyed_pass(
        order,
        rank_of,
        sorted_y,
        weight,
        weighted_sum,
        scales,
        output,
        wanted,
        out_error,
        out_median,
    ):
        """For each wanted p (``wanted[p]``), the absolute error and weighted median of
        rows order[:p + 1] (any subset of the rows ``rank_of`` ranks), of output
        ``output`` (its weighted sums ``weighted_sum``, its scale ``scales[1 + output]``);
        the other entries of ``out_error`` and ``out_median`` are left as they were. The
        walk of the median's rank (:func:`_walked_pass`), or the Fenwick tree where the
        walk gives up: the same integers, so the same bits either way."""
        source_key  # noqa: B018 - in the cache key only
        if not _walked_pass(
            order,
            rank_of,
            sorted_y,
            weight,
            weighted_sum,
            scales,
            output,
            wanted,
            out_error,
            out_median,
        ):
            _fenwick_pass(
                order,
                rank_of,
                sorted_y,
                weight,
                weighted_sum,
                scales,
                output,
                wanted,
                out_error,
                out_median,
            )

    @njit(cache=True)
    def keyed_errors(order, rank_of, sorted_y, weight, weighted_sums, scales, wanted):
        """The absolute error and weighted median of rows order[:p + 1], for each wanted
        p (``wanted[p]``; the other entries undefined).

        ``rank_of``, ``sorted_y`` and ``weighted_sums`` hold one row per output
        (:func:`_node_targets`): the error is the sum of the outputs' (multi-output y),
        the median the first output's (the one monotonicity constraints read: they take
        one output)."""
        source_key  # noqa: B018 - in the cache key only
        error = np.zeros(order.size)
        median = np.empty(order.size)
        if rank_of.shape[0] == 1:  # one output: its pass writes the answer
            _pass(
                order,
                rank_of[0],
                sorted_y[0],
                weight,
                weighted_sums[0],
                scales,
                0,
                wanted,
                error,
                median,
            )
            return error, median
        output_error = np.empty(order.size)
        output_median = np.empty(order.size)
        for k in range(rank_of.shape[0]):
            _pass(
                order,
                rank_of[k],
                sorted_y[k],
                weight,
                weighted_sums[k],
                scales,
                k,
                wanted,
                output_error,
                output_median,
            )
            for p in range(order.size):
                if wanted[p]:
                    error[p] += output_error[p]
                    if k == 0:
                        median[p] = output_median[p]
        return error, median

    @njit(cache=True)
    def keyed_node_median_and_error(y, weight, weighted_sum, scales):
        """(weighted median, sum w |y - median|) of a node's rows: their targets ``y``
        and fixed-point weights and weighted sums (one output: ``scales[:2]``)."""
        source_key  # noqa: B018 - in the cache key only
        n = y.size
        sorted_y, rank_of = _target_ranks(y)
        error = np.empty(n)
        median = np.empty(n)
        wanted = np.zeros(n, dtype=np.bool_)
        wanted[n - 1] = True
        _pass(
            np.arange(n), rank_of, sorted_y, weight, weighted_sum, scales, 0, wanted, error, median
        )
        return median[n - 1], error[n - 1]

    @njit(cache=True)
    def keyed_best_split(
        x,
        missing,
        rank_of,
        sorted_y,
        weight,
        weighted_sums,
        scales,
        min_samples_leaf,
        min_weight_leaf,
        tolerance,
        cst=0,
        lower=-np.inf,
        upper=np.inf,
    ):
        """The best split of a node's rows on one feature.

        ``x``: the rows' values (raw values or bin codes), ``missing``: the rows whose
        value is missing; ``rank_of``/``sorted_y``/``weighted_sums`` from the node's
        targets, one row per output (:func:`_node_targets`; several outputs: their errors
        add up), ``weight`` the rows' fixed-point weights.
        Rows with a present value at most the split's go left; missing ones go to the
        side that scores better (both are tried, as in the histogram search; on a tie,
        and where the node has none, to the side of more present rows), and one more
        candidate sends every present row left and every missing one right.

        Returns (improvement, left_value, next_value, missing_left, parent error):
        improvement the parent's sum of w |y - median| less its children's (-inf: no
        valid split); left_value the largest present value going left, next_value the
        smallest going right (NaN: none, the present-left, missing-right split). Ties go
        to the lowest split: a later candidate wins only by more than ``tolerance``.
        ``cst``, ``lower``, ``upper``: a monotonicity constraint on the feature and the
        node's bounds (:func:`_admissible`).
        """
        source_key  # noqa: B018 - in the cache key only
        n = x.size
        n_missing = 0
        for i in range(n):
            n_missing += missing[i]
        n_present = n - n_missing
        present = np.empty(n_present, dtype=np.int64)
        absent = np.empty(n_missing, dtype=np.int64)
        a = 0
        b = 0
        for i in range(n):
            if missing[i]:
                absent[b] = i
                b += 1
            else:
                present[a] = i
                a += 1
        order = _order_by_value(x, present)
        reverse = order[::-1].copy()
        # Errors of the first k present rows (forward[k - 1]) and of the last j
        # (backward[j - 1]), then of the missing rows followed by them (index
        # n_missing + k - 1), and their medians (the same indices): at the candidate
        # splits alone (k rows left where the k-th and next values differ, or all).
        wanted = np.zeros((4, n), dtype=np.bool_)
        wanted_forward, wanted_backward = wanted[0, :n_present], wanted[1, :n_present]
        wanted_forward_missing, wanted_backward_missing = wanted[2], wanted[3]
        for k in range(1, n_present + 1):
            if k < n_present and not x[order[k - 1]] < x[order[k]]:
                continue
            j = n_present - k
            wanted_forward[k - 1] = True
            wanted_forward_missing[n_missing + k - 1] = True
            if j > 0:
                wanted_backward[j - 1] = True
            if n_missing + j > 0:
                wanted_backward_missing[n_missing + j - 1] = True
        if n > 0:
            wanted_forward_missing[n - 1] = True  # the parent's
        forward, forward_median = _errors(
            order, rank_of, sorted_y, weight, weighted_sums, scales, wanted_forward
        )
        backward, backward_median = _errors(
            reverse, rank_of, sorted_y, weight, weighted_sums, scales, wanted_backward
        )
        # No missing row: the same passes (the same wanted prefixes).
        forward_missing, forward_missing_median = forward, forward_median
        backward_missing, backward_missing_median = backward, backward_median
        if n_missing:
            forward_missing, forward_missing_median = _errors(
                np.concatenate((absent, order)),
                rank_of,
                sorted_y,
                weight,
                weighted_sums,
                scales,
                wanted_forward_missing,
            )
            backward_missing, backward_missing_median = _errors(
                np.concatenate((absent, reverse)),
                rank_of,
                sorted_y,
                weight,
                weighted_sums,
                scales,
                wanted_backward_missing,
            )
        parent = forward_missing[n - 1] if n > 0 else 0.0
        prefix_w = np.zeros(n_present + 1, dtype=np.int64)
        for k in range(n_present):
            prefix_w[k + 1] = prefix_w[k] + weight[order[k]]
        missing_w = 0
        for i in range(n_missing):
            missing_w += weight[absent[i]]
        total_w = prefix_w[n_present] + missing_w
        weight_scale = scales[0]

        best = -np.inf
        best_k = 0
        best_missing_left = False
        for k in range(1, n_present + 1):
            if k < n_present and not x[order[k - 1]] < x[order[k]]:
                continue
            j = n_present - k  # present rows right
            if j == 0 and n_missing == 0:
                break  # every row left
            score_right = -np.inf  # missing rows right
            score_left = -np.inf  # missing rows left
            for side in range(2):
                if side == 1 and (n_missing == 0 or j == 0):
                    continue
                if not _leaves_allowed(
                    k + side * n_missing,
                    n,
                    prefix_w[k] + side * missing_w,
                    total_w,
                    weight_scale,
                    min_samples_leaf,
                    min_weight_leaf,
                ):
                    continue
                if side == 0:
                    at = n_missing + j - 1  # the missing rows (if any) and the last j present
                    if not _admissible(
                        cst, lower, upper, forward_median[k - 1], backward_missing_median[at]
                    ):
                        continue
                    score_right = parent - forward[k - 1] - backward_missing[at]
                else:
                    at = n_missing + k - 1  # the missing rows and the first k present
                    if not _admissible(
                        cst, lower, upper, forward_missing_median[at], backward_median[j - 1]
                    ):
                        continue
                    score_left = parent - forward_missing[at] - backward[j - 1]
            go_left = _missing_go_left(score_left, score_right, n_missing, k, j, tolerance)
            improvement = max(score_left, score_right)
            if improvement > best + tolerance:
                best = improvement
                best_k = k
                best_missing_left = go_left
        left_value = np.nan
        next_value = np.nan
        if best_k > 0:
            left_value = x[order[best_k - 1]]
            if best_k < n_present:
                next_value = x[order[best_k]]
        return best, left_value, next_value, best_missing_left, parent

    @njit(cache=True)
    def keyed_error_of(part, rank_of, sorted_y, weight, weighted_sums, scales):
        """The absolute error and weighted median of the rows ``part`` (0 and NaN for
        none)."""
        source_key  # noqa: B018 - in the cache key only
        if part.size == 0:
            return 0.0, np.nan
        wanted = np.zeros(part.size, dtype=np.bool_)
        wanted[part.size - 1] = True
        error, median = _errors(part, rank_of, sorted_y, weight, weighted_sums, scales, wanted)
        return error[part.size - 1], median[part.size - 1]

    @njit(cache=True, parallel=True)
    def keyed_drawn_splits(
        columns,
        rows,
        features,
        split_values,
        missing_code,
        y_all,
        weight_all,
        sums_all,
        scales,
        min_samples_leaf,
        min_weight_leaf,
        rtol,
        csts,
        lower,
        upper,
    ):
        """Extremely randomised trees: the improvement of one given split per feature of
        one node (present values at most ``split_values[j]`` go left, on feature
        ``features[j]``), missing rows on the better side (:func:`_missing_go_left`).

        The node is the rows ``rows`` of ``y_all``, ``weight_all`` and ``sums_all``;
        ``columns`` is feature-major (raw values, missing as NaN, or bin codes, missing as
        ``missing_code``); ``rtol``, ``csts``, ``lower``, ``upper`` as
        :func:`level_targets`' and :func:`best_level_splits`'. Returns per feature
        (improvement, -inf where a side is empty, too small or not admissible;
        missing_left), the node's weight and the tolerance.
        """
        source_key  # noqa: B018 - in the cache key only
        n = rows.size
        weight, sums, sorted_y, rank_of, total_w = _node_targets(
            rows, y_all, weight_all, sums_all, scales
        )
        parent = _error_of(np.arange(n), rank_of, sorted_y, weight, sums, scales)[0]
        tolerance = rtol * parent
        total_fixed = np.sum(weight)
        weight_scale = scales[0]
        n_features = features.size
        improvement = np.full(n_features, -np.inf)
        missing_left = np.zeros(n_features, dtype=np.bool_)
        for j in prange(n_features):
            x, missing = _feature_values(columns, features[j], rows, missing_code)
            left = np.empty(n, dtype=np.int64)
            right = np.empty(n, dtype=np.int64)
            absent = np.empty(n, dtype=np.int64)
            n_left = n_right = n_missing = 0
            fixed_left = fixed_missing = 0
            for i in range(n):
                if missing[i]:
                    absent[n_missing] = i
                    n_missing += 1
                    fixed_missing += weight[i]
                elif x[i] <= split_values[j]:
                    left[n_left] = i
                    n_left += 1
                    fixed_left += weight[i]
                else:
                    right[n_right] = i
                    n_right += 1
            if n_left == 0 or n_right == 0:
                continue
            left, right, absent = left[:n_left], right[:n_right], absent[:n_missing]
            score_right = -np.inf  # missing rows right
            score_left = -np.inf  # missing rows left
            for side in range(2):
                if side == 1 and n_missing == 0:
                    continue
                if not _leaves_allowed(
                    n_left + side * n_missing,
                    n,
                    fixed_left + side * fixed_missing,
                    total_fixed,
                    weight_scale,
                    min_samples_leaf,
                    min_weight_leaf,
                ):
                    continue
                if side == 0:
                    left_error, left_median = _error_of(
                        left, rank_of, sorted_y, weight, sums, scales
                    )
                    right_error, right_median = _error_of(
                        np.concatenate((right, absent)), rank_of, sorted_y, weight, sums, scales
                    )
                else:
                    left_error, left_median = _error_of(
                        np.concatenate((left, absent)), rank_of, sorted_y, weight, sums, scales
                    )
                    right_error, right_median = _error_of(
                        right, rank_of, sorted_y, weight, sums, scales
                    )
                if not _admissible(csts[j], lower, upper, left_median, right_median):
                    continue
                if side == 0:
                    score_right = parent - left_error - right_error
                else:
                    score_left = parent - left_error - right_error
            improvement[j] = max(score_left, score_right)
            missing_left[j] = _missing_go_left(
                score_left, score_right, n_missing, n_left, n_right, tolerance
            )
        return improvement, missing_left, total_w, tolerance

    @njit(cache=True)
    def keyed_level_targets(
        rows, node_start, y_all, weight_all, sums_all, scales, rtol, sums, sorted_y, rank_of
    ):
        """Each node's targets as its searches read them (:func:`_node_targets`): node k's
        rows are ``rows[node_start[k]:node_start[k + 1]]``, and its sums, sorted targets
        and ranks go to the same columns of ``sums``, ``sorted_y`` and ``rank_of``
        (n_outputs, rows.size). Returns each node's weight and the rounding tolerance of
        its improvements: ``rtol`` times the node's error (the outputs' added), which
        bounds every side's error and so the terms improvements differ by (a node's sums
        can be far larger: one row weighing 1e15 times the others, at the median, adds
        nothing to the error and all but everything to sum |w * y|)."""
        source_key  # noqa: B018 - in the cache key only
        n_nodes = node_start.size - 1
        node_weight = np.empty(n_nodes)
        tolerance = np.empty(n_nodes)
        for k in range(n_nodes):
            a, b = node_start[k], node_start[k + 1]
            weight, node_sums, node_sorted_y, node_rank_of, node_weight[k] = _node_targets(
                rows[a:b], y_all, weight_all, sums_all, scales
            )
            sums[:, a:b] = node_sums
            sorted_y[:, a:b] = node_sorted_y
            rank_of[:, a:b] = node_rank_of
            parent = _error_of(
                np.arange(b - a), node_rank_of, node_sorted_y, weight, node_sums, scales
            )
            tolerance[k] = rtol * parent[0]
        return node_weight, tolerance

    @njit(cache=True, nogil=True)
    def keyed_level_splits(
        task_node,
        task_column,
        block,
        block_row,
        node_start,
        missing_code,
        weight_all,
        sums,
        sorted_y,
        rank_of,
        scales,
        min_samples_leaf,
        min_weight_leaf,
        tolerance,
        csts,
        lower,
        upper,
        gain,
        left_value,
        next_value,
        missing_left,
    ):
        """The best split of several nodes on several features, a task each
        (``task_node``, ``task_column``: a row of ``block``, the values of the level's
        rows, raw or bin codes, missing as NaN or ``missing_code``), as
        :func:`best_absolute_error_split` finds it: into ``gain``, ``left_value``,
        ``next_value`` and ``missing_left`` at the task's index. Node k's rows are the
        columns ``node_start[k]:node_start[k + 1]`` of ``block``; ``block_row`` their
        rows of ``weight_all``; ``sums``, ``sorted_y`` and ``rank_of`` their targets
        (:func:`level_targets`) in the same columns. ``tolerance``: each node's;
        ``csts``, ``lower``, ``upper``: each task's monotonicity constraint and node
        bounds."""
        source_key  # noqa: B018 - in the cache key only
        missing_is_nan = missing_code != missing_code
        for t in range(task_node.size):
            k = task_node[t]
            a, b = node_start[k], node_start[k + 1]
            n = b - a
            x = np.empty(n)
            missing = np.empty(n, dtype=np.bool_)
            weight = np.empty(n, dtype=np.int64)
            for i in range(n):
                value = np.float64(block[task_column[t], a + i])
                x[i] = value
                missing[i] = (value != value) if missing_is_nan else (value == missing_code)
                weight[i] = weight_all[block_row[a + i]]
            gain[t], left_value[t], next_value[t], missing_left[t], _ = best_absolute_error_split(
                x,
                missing,
                rank_of[:, a:b],
                sorted_y[:, a:b],
                weight,
                sums[:, a:b],
                scales,
                min_samples_leaf,
                min_weight_leaf,
                tolerance[k],
                csts[t],
                lower[t],
                upper[t],
            )

    @njit(cache=True)
    def keyed_tree_medians(sample_indices, start, end, y_all, weight_all, sums_all, scales):
        """Each node's weighted median and absolute error per output (n_nodes, n_outputs)
        and its fixed-point weight: node k's rows are
        ``sample_indices[start[k]:end[k]]``, taken in row order (as they were when the node
        was grown: tied targets rank by row number), each output's as
        :func:`node_median_and_error` measures it."""
        source_key  # noqa: B018 - in the cache key only
        n_nodes, n_outputs = start.size, y_all.shape[1]
        medians = np.empty((n_nodes, n_outputs))
        errors = np.empty((n_nodes, n_outputs))
        weights = np.zeros(n_nodes, dtype=np.int64)
        output_scales = np.empty(2)
        output_scales[0] = scales[0]
        for node in range(n_nodes):
            rows = np.sort(sample_indices[start[node] : end[node]])
            n = rows.size
            weight = np.empty(n, dtype=np.int64)
            for i in range(n):
                weight[i] = weight_all[rows[i]]
                weights[node] += weight[i]
            y = np.empty(n)
            sums = np.empty(n, dtype=np.int64)
            for k in range(n_outputs):
                for i in range(n):
                    y[i] = y_all[rows[i], k]
                    sums[i] = sums_all[rows[i], k]
                output_scales[1] = scales[1 + k]
                medians[node, k], errors[node, k] = node_median_and_error(
                    y, weight, sums, output_scales
                )
        return medians, errors, weights

    return (
        keyed_median_and_error,
        keyed_walked_pass,
        keyed_fenwick_pass,
        keyed_pass,
        keyed_errors,
        keyed_error_of,
        keyed_node_median_and_error,
        keyed_best_split,
        keyed_drawn_splits,
        keyed_level_targets,
        keyed_level_splits,
        keyed_tree_medians,
    )


@njit(cache=True)
def _node_targets(rows, y_all, weight_all, sums_all, scales):
    """A node's fixed-point weights and weighted sums (rows ``rows``; the sums one row per
    output), each output's sorted targets and their ranks (:func:`_target_ranks`, from
    ``y_all``, (n_samples, n_outputs)), and its weight."""
    n = rows.size
    n_outputs = y_all.shape[1]
    weight = np.empty(n, dtype=np.int64)
    total_w = 0
    for i in range(n):
        weight[i] = weight_all[rows[i]]
        total_w += weight[i]
    sums = np.empty((n_outputs, n), dtype=np.int64)
    sorted_y = np.empty((n_outputs, n))
    rank_of = np.empty((n_outputs, n), dtype=np.int64)
    y = np.empty(n)
    for k in range(n_outputs):
        for i in range(n):
            y[i] = y_all[rows[i], k]
            sums[k, i] = sums_all[rows[i], k]
        sorted_y[k], rank_of[k] = _target_ranks(y)
    return weight, sums, sorted_y, rank_of, float(total_w) * scales[0]


(
    _median_and_error,
    _walked_pass,
    _fenwick_pass,
    _pass,
    _errors,
    _error_of,
    node_median_and_error,
    best_absolute_error_split,
    drawn_absolute_error_splits,
    level_targets,
    best_level_splits,
    tree_medians,
) = _compile_searches(MEDIAN_ERRORS_SOURCE_KEY)


def _task_rows(args):
    """Rows each task of :func:`best_level_splits` reads: its node's."""
    task_node, node_start = args[0], args[4]
    return node_start[task_node + 1] - node_start[task_node]


def _level_values(args):
    """Values :func:`best_level_splits` reads: its tasks' rows."""
    return int(_task_rows(args).sum())


def _node_values(args):
    """Values a node's search reads: its rows (argument 1) times its features (2)."""
    return args[1].size * args[2].size


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())

# A node's search is one call: a forest's small nodes, each a parallel region ending in a
# barrier where idle threads spin, ran 20-50 times slower on a busy machine than on one
# thread. Small nodes take the serial twin (kernels/cpu/launch.py, SerialWhenSmall).
drawn_absolute_error_splits = SerialWhenSmall(drawn_absolute_error_splits, _node_values)
compilation.watch({drawn_absolute_error_splits.__name__: drawn_absolute_error_splits.serial})
# A level's search is one call of a serial kernel, its tasks (node, feature) shared out
# to threads by their rows on large levels.
best_level_splits = ThreadedWhenLarge(
    best_level_splits,
    _level_values,
    item_args=(
        "task_node",
        "task_column",
        "csts",
        "lower",
        "upper",
        "gain",
        "left_value",
        "next_value",
        "missing_left",
    ),
    weights=_task_rows,
)
