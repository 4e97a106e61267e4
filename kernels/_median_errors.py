"""A side's weighted median and absolute error from exact integer sums, written once for
both devices (the absolute-error criterion, scikit-learn's ``"absolute_error"``).

The error of a set of rows about its weighted median m is

    sum_i w_i |y_i - m| = (WY_above - m * W_above) + (m * W_below - WY_below)

where "below" holds the rows ranked before the median's row in the node's target order
and "above" the rest. W and WY are sums of the rows' fixed-point statistics (integers:
``gpu_tree.data.stats``, the weight channel and an output's ``w * (y - centre)``
channel), so they are the same whatever order the rows are added in: the CPU's Fenwick
tree over target ranks (:mod:`gpu_tree.kernels.cpu.absolute_error`) and the GPU's scan of
a node's rows in target order (:mod:`gpu_tree.kernels.cuda.absolute_error`) reach the
same integers, and the side error (:func:`make_side_error`) turns them into the same
float64 bits.

That error is a difference of terms that can be far larger than itself: where one row
weighs 1e15 times the others and sits at the median, ``WY_above`` and ``m * W_above``
are both of its size and cancel to the others' few units. So it is computed without
that cancellation: the integers split exactly into float64 pairs, the products by the
median exact as pairs (Dekker's TwoProduct) and the six terms summed with their rounding
errors carried (Ogita, Rump and Oishi's Sum2): the float64 nearest the integers' error
to within a few units in its own last place, however large the terms. Split searches
can then take as ties only improvements within rounding of the node's own error (the
bound on every side's), never within rounding of its sums.

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


# Veltkamp's splitter for float64: 2**27 + 1 (53 bits of significand, halves of 26).
_SPLITTER = 134217729.0


def make_side_error(device_function, product):
    """The side error, its helpers compiled by ``device_function`` (``numba.njit`` or a
    CUDA device function). ``product``: ``a * b`` rounded on its own, never fused with an
    addition that reads it (the CPU's plain product; libdevice's ``dmul_rn`` on a GPU,
    kernels/_split_scan.py says why): Dekker's TwoProduct is exact only if every product
    in it is rounded, and a fused multiply-add would also give the GPU other bits than
    the CPU.

    Returns ``side_error(w_below, wy_below, w_total, wy_total, median, weight_scale,
    sum_scale)``: sum w |y - median| of a set of rows from its integer sums (``w_total``,
    ``wy_total``) and those of its rows ranked before the median's (``w_below``,
    ``wy_below``); the scales are the channels' powers of two (StatsLayout.real), by which
    products are exact. A tiny negative (a set of equal targets, whose weighted sums are
    rounded to the fixed point apart from its weights) gives 0."""

    @device_function
    def two_sum(a, b):
        """(s, e): s = a + b rounded and e its rounding error, s + e = a + b exactly
        (Knuth)."""
        s = a + b
        b_part = s - a
        a_part = s - b_part
        return s, (a - a_part) + (b - b_part)

    @device_function
    def halves(a):
        """a = high + low exactly, each of at most 26 significant bits (Veltkamp)."""
        c = product(_SPLITTER, a)
        high = c - (c - a)
        return high, a - high

    @device_function
    def two_product(a, b):
        """(p, e): p = a * b rounded and e its rounding error, p + e = a * b exactly
        (Dekker; neither overflows nor underflows here)."""
        p = product(a, b)
        a_high, a_low = halves(a)
        b_high, b_low = halves(b)
        e = product(a_high, b_high) - p
        e = e + product(a_high, b_low)
        e = e + product(a_low, b_high)
        return p, e + product(a_low, b_low)

    @device_function
    def integer_halves(n):
        """An integer of magnitude below 2**62 as float64 high + low exactly (high the
        nearest float64; low the rest, below 2**10)."""
        high = float(n)
        return high, float(n - int(high))

    @device_function
    def side_error(w_below, wy_below, w_total, wy_total, median, weight_scale, sum_scale):
        # sum w |y - m| = (WY_above - WY_below) - m (W_above - W_below), each difference
        # at most a sum of |fixed-point values| (below 2**62: gpu_tree.data.stats).
        wy_high, wy_low = integer_halves((wy_total - wy_below) - wy_below)
        w_high, w_low = integer_halves((w_total - w_below) - w_below)
        p_high, e_high = two_product(median, product(w_high, weight_scale))
        p_low, e_low = two_product(median, product(w_low, weight_scale))
        # Sum2: the terms' rounding errors gathered in ``carried``.
        error, carried = two_sum(product(wy_high, sum_scale), -p_high)
        error, e = two_sum(error, product(wy_low, sum_scale))
        carried = carried + e
        error, e = two_sum(error, -p_low)
        carried = carried + e
        error, e = two_sum(error, -e_high)
        carried = carried + e
        error, e = two_sum(error, -e_low)
        error = error + (carried + e)
        if error > 0.0:
            return error
        return 0.0

    return side_error


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
