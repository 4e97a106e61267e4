"""A side's weighted median and absolute error from exact integer sums, written once for
both devices (the absolute-error criterion, scikit-learn's ``"absolute_error"``).

The error of a set of rows about its weighted median m is

    sum_i w_i |y_i - m| = (WY_above - m * W_above) + (m * W_below - WY_below)

where "below" holds the rows ranked before the median's row in the node's target order
and "above" the rest. W and WY are sums of the rows' fixed-point statistics (integers:
``gpu_tree.data.stats``, the weight channel and an output's ``w * (y - centre)``
channel), so they are the same whatever order the rows are added in: the CPU's Fenwick
tree over target ranks (:mod:`gpu_tree.kernels.cpu_absolute_error`) and the GPU's scan of
a node's rows in target order (:mod:`gpu_tree.kernels.cuda_absolute_error`) reach the
same integers, and :func:`side_error` turns them into the same float64 bits.

The median follows scikit-learn's tree criterion, decided on those integers: the first
row in target order whose cumulative weight exceeds half the set's (``2 * cumulative >
total``); where the rows before it weigh exactly half, the mid-point of its target and
that of the first row whose cumulative weight reaches half (:func:`reaches_half`).
Ties in the target are ranked by row number on both devices (a stable sort of the
node's rows, which both keep in row order).

:func:`admissible` and :func:`missing_go_left` are the split rules both devices' searches
apply to the errors.
"""

import math


def exceeds_half(cumulative, total):
    """Whether a cumulative weight is past half the total (integers: exact)."""
    return 2 * cumulative > total


def reaches_half(cumulative, total):
    """Whether a cumulative weight is at least half the total (integers: exact)."""
    return 2 * cumulative >= total


def median_of(y_low, y_high, w_below, total):
    """The median from the target of the first row past half (``y_high``), the rows
    before it weighing ``w_below``, and that of the first row reaching half
    (``y_low``)."""
    if 2 * w_below == total:
        return 0.5 * (y_low + y_high)
    return y_high


def side_error(w_below, wy_below, w_total, wy_total, median, weight_scale, sum_scale):
    """sum w |y - median| of a set of rows from its integer sums (``w_total``,
    ``wy_total``) and those of its rows ranked before the median's (``w_below``,
    ``wy_below``); the scales are the channels' powers of two (StatsLayout.real).
    Rounding can leave a tiny negative for a set of equal targets: 0 then."""
    w_above = w_total - w_below
    wy_above = wy_total - wy_below
    above = float(wy_above) * sum_scale - median * (float(w_above) * weight_scale)
    below = median * (float(w_below) * weight_scale) - float(wy_below) * sum_scale
    error = above + below
    if error > 0.0:
        return error
    return 0.0


def leaves_allowed(
    n_left, n, fixed_left, fixed_total, weight_scale, min_samples_leaf, min_weight_leaf
):
    """Whether both sides of a split of ``n`` rows (fixed-point weight ``fixed_total``)
    whose left holds ``n_left`` rows of weight ``fixed_left`` meet the leaf-size limits
    (weights compared in real units)."""
    if n_left < min_samples_leaf or n - n_left < min_samples_leaf:
        return False
    w_left = float(fixed_left) * weight_scale
    w_right = float(fixed_total - fixed_left) * weight_scale
    return w_left >= min_weight_leaf and w_right >= min_weight_leaf


def admissible(cst, lower, upper, left_median, right_median):
    """scikit-learn's monotonicity check of a split (``cst`` +1 or -1; 0: none) with the
    children's medians as their values: ordered by ``cst`` and both within the node's
    bounds [lower, upper] (criteria.monotonic_admissible, for one candidate)."""
    if cst == 0:
        return True
    ordered = (left_median - right_median) * cst <= 0
    within = lower <= left_median <= upper and lower <= right_median <= upper
    return ordered and within


def missing_go_left(score_left, score_right, n_missing, n_present_left, n_present_right, tolerance):
    """Where missing rows go, as the histogram search decides: the better side; sides
    within rounding, or a node with no missing row (then missing values met later follow
    this rule): the side holding more present rows."""
    both = score_left > -math.inf and score_right > -math.inf
    if n_missing == 0 or (both and abs(score_left - score_right) <= tolerance):
        return n_present_left >= n_present_right
    return score_left > score_right
