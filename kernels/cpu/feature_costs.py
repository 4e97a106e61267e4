"""The cost-sensitive selection measure (criteria.log2_cost_measure), compiled once for
both its readers: the level-wise selection (``feature_costs.select_by_cost``, through
:func:`log2_cost_measures` on arrays) and the subtree finisher (``kernels/cpu/subtrees.py``,
through the inlined :func:`log2_cost_measure`). One compiled formula gives both the same
bits: numpy's ``expm1`` and ``log2`` on arrays may use other code (SIMD) than the scalar
calls compiled code makes, and differ in the last bit.

The logarithm is ``kernels/log2.py``'s (the same bits on every device); ``expm1`` is the
C library's, called the same way from both.

:func:`choose_by_cost` is the finisher's twin of ``select_by_cost`` on one node's winner
rows per feature, in the same arithmetic (the split scan's tolerance and log2 are the
vectorised ones' twins, tested bit for bit against them).
"""

import math

import numpy as np
from numba import njit

from .. import _split_scan as _scan
from .. import compilation, log2
from .launch import borrowing_njit
from .split_scan import SPLIT_SCAN_HELPERS, WINNER_FIXED_COLUMNS

_tolerance = SPLIT_SCAN_HELPERS["tolerance"]
_split_info = SPLIT_SCAN_HELPERS["split_info"]

# The cost criteria, as the kernels number them (criteria.COST_CRITERIA).
TAN_SCHLIMMER, NUNEZ = range(2)
COST_CRITERION_CODES = {"tan_schlimmer": TAN_SCHLIMMER, "nunez": NUNEZ}
LN2 = math.log(2.0)

_log2 = log2.make_log2(
    borrowing_njit(forceinline=True), borrowing_njit(forceinline=True)(_scan.plain_product)
)


@borrowing_njit(forceinline=True)
def log2_gain_term(cost_criterion, gain):
    """The measure's term of a split's ``gain`` (``cost_criterion``: TAN_SCHLIMMER or
    NUNEZ): 2 log2(gain), or log2(2^gain - 1) = gain + log2(1 - 2^-gain); -inf for a
    gain of 0 or below."""
    if not gain > 0.0:
        return -math.inf
    if cost_criterion == TAN_SCHLIMMER:
        return 2.0 * _log2(gain)
    return gain + _log2(-math.expm1(-gain * LN2))


@borrowing_njit(forceinline=True)
def log2_cost_term(cost_criterion, cost, cost_weight):
    """The measure's term of a feature's ``cost``, subtracted: log2(cost), or
    cost_weight log2(cost + 1) (a feature's, computed once per subtree by the finisher)."""
    if cost_criterion == TAN_SCHLIMMER:
        return _log2(cost)
    return cost_weight * _log2(cost + 1.0)


@borrowing_njit(forceinline=True)
def log2_cost_measure(cost_criterion, gain, cost, cost_weight):
    """criteria.log2_cost_measure of one split's ``gain`` on a feature of ``cost``: its
    gain's term less its cost's."""
    return log2_gain_term(cost_criterion, gain) - log2_cost_term(cost_criterion, cost, cost_weight)


@njit(cache=True, nogil=True)
def log2_cost_measures(cost_criterion, gain, cost, cost_weight, out):
    """:func:`log2_cost_measure` of each ``gain[i]`` and ``cost[i]`` (float64, flat) into
    ``out``."""
    for i in range(gain.shape[0]):
        out[i] = log2_cost_measure(cost_criterion, gain[i], cost[i], cost_weight)


@borrowing_njit(forceinline=True)
def choose_by_cost(
    results,
    node,
    winners,
    cost_terms,
    cost_criterion,
    variance_exponent,
    criterion,
    n_classes,
    scale,
    rtol,
    measure,
    raised,
):
    """feature_costs.select_by_cost of one node: the feature whose best split
    (``results[f]``, the split scan's: score -inf where none) measures the highest
    (``log2_cost_measure`` of its score per unit weight and its feature's cost:
    ``cost_terms[f]`` is the cost's ``log2_cost_term``), the lowest of those whose score
    raised by its rounding tolerance measures at least that; -1 where no feature has a
    split.

    The tolerance is ``feature_costs._score_rounding``'s: criteria.score_tolerance of the
    weighted score (the scan's ``tolerance`` helper), per unit weight; regression scores
    and tolerances in real units (times 2**``variance_exponent``). Its node statistics
    are ``node``'s (``node_totals``: the weight, and a regression's term, which
    ``_score_rounding`` sums from the two sides' integers, as node_totals sums the node's
    the same way); gain_ratio's divisor is the split information of the sides of the
    winner row ``winners[f]`` (``each_feature_winners``: read for gain_ratio only).
    ``criterion``: the scan's code; ``n_classes``: the scan's (0: regression, one output);
    ``measure`` and ``raised`` (n_features,): scratch."""
    n_features = results.shape[0]
    weight = node[0]
    term_scale = node[1]  # 0 for classification, where it is not read
    best = -math.inf
    for f in range(n_features):
        if not math.isfinite(results[f, 0]):
            continue
        score = results[f, 0] / weight
        divisor = 1.0  # read by gain_ratio's tolerance only
        if criterion == _scan.GAIN_RATIO:  # as feature_costs._split_information divides
            left_weight = 0.0  # StatsLayout.weight of the left side: its classes, in order
            for c in range(n_classes):
                left_weight += float(winners[f, WINNER_FIXED_COLUMNS + c]) * scale[c]
            divisor = _split_info(left_weight / (weight if weight > 0.0 else 1.0))
        tolerance = _tolerance(criterion, weight, term_scale, score * weight, divisor, rtol)
        tolerance = tolerance / (weight if weight > 0.0 else 1.0)
        if n_classes == 0:  # real_score: the real variance decreases
            score = math.ldexp(score, variance_exponent)
            tolerance = math.ldexp(tolerance, variance_exponent)
        measure[f] = log2_gain_term(cost_criterion, score) - cost_terms[f]
        raised[f] = score + tolerance
        if measure[f] > best:
            best = measure[f]
    for f in range(n_features):  # the raised measures in order, up to the first tied
        if not math.isfinite(results[f, 0]):
            continue
        if log2_gain_term(cost_criterion, raised[f]) - cost_terms[f] >= best:
            return f
    return -1


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())


def log2_cost_measure_of_arrays(cost_criterion: str, gain, cost, cost_weight: float):
    """:func:`log2_cost_measure` elementwise on arrays (broadcast together)."""
    gain, cost = np.broadcast_arrays(
        np.asarray(gain, dtype=np.float64), np.asarray(cost, dtype=np.float64)
    )
    out = np.empty(gain.shape)
    log2_cost_measures(
        COST_CRITERION_CODES[cost_criterion],
        np.ascontiguousarray(gain).ravel(),
        np.ascontiguousarray(cost).ravel(),
        float(cost_weight),
        out.reshape(-1),
    )
    return out
