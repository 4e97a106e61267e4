"""The layout of the statistics that histograms sum, and of categorical bitsets.

This module is their one owner: the integer types, the channels, the fixed-point scales
on which sums are exact, and the bit layout of category sets. Backends, criteria, the
grower and the model read them from here.

Channels of a statistics vector (the last axis of every statistics array):

- classification: ``n_classes`` class totals (weights), then an unweighted row count
  when the fit is weighted (otherwise the class totals already are counts);
- regression: ``[sum w, sum w*(y - centre)]``, then the row count when weighted; with
  several outputs (multi-output y), one ``sum w*(y_k - centre_k)`` channel per output
  after the weight. The centre is a training target (see :func:`regression_centre`),
  one per output; the sum of squares is no
  statistic: split scores do without it (criteria) and node impurities are measured on
  the rows (backends). Targets spread so widely that their squares could overflow are
  first scaled by a power of two (:func:`target_exponent`): the statistics, scores and
  impurities of the fit are in those units, and :meth:`StatsLayout.target` and
  :meth:`StatsLayout.target_variance` give real ones back.

Every statistic is an integer: counts as they are, weights and sums of ``w*(y-centre)``
in fixed point, ``round(value * 2**exponent)`` with one power-of-two exponent per channel
chosen from the data so that no partial sum can reach 2**62
(:func:`fixed_point_exponent`, after XGBoost's gradient quantiser and Demmel and Nguyen's
reproducible sums). Integer sums are exact in any order, so histograms are identical on
the CPU, in GPU atomics, and across machines. :meth:`StatsLayout.real` turns them into
float64 in real units for the criteria.

Category sets: ``n_words`` words of :data:`BITSET_WORD_DTYPE` per set, category ``k`` at
bit ``k % 64`` of word ``k // 64``. The tree walk in ``kernels/_tree_walk.py`` and the
split search read the same layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

# The type of statistics arrays (per-row statistics, histograms, node totals) ...
STATS_DTYPE = np.int64
# ... except unweighted classification, whose class counts fit 32 bits below this many
# rows: half the histogram memory.
COUNT_DTYPE = np.int32
COUNT_DTYPE_MAX_ROWS = np.iinfo(COUNT_DTYPE).max

# Fixed point: |every column's total| * 2**exponent stays at most 2**FIXED_POINT_BITS, so
# that with each value's rounding (at most a unit per row: half a unit, or a positive
# weight below half a unit raised to one; for fewer than 2**61 rows) every partial sum
# stays below 2**62 and far from int64's limit.
FIXED_POINT_BITS = 61

# Regression: centred targets, times the total weight (at least 1), stay below 2 to this
# power, so that no square of a weighted sum (split scores) or of a deviation (node
# variances) overflows float64, whose largest value is about 2**1024; and targets spread
# less than 2 to the floor's power are scaled up to about 1, so that their squares do not
# underflow (float64's smallest normal is 2**-1022).
TARGET_SPREAD_LIMIT_EXPONENT = 500
TARGET_SPREAD_FLOOR_EXPONENT = -300

# The channels of a regression statistics vector, in order (before the count channel).
REGRESSION_CHANNELS = ("weight", "weighted_centred_sum")

# Category sets: words of 64 bits, stored as signed integers (JSON and numba read int64).
BITSET_WORD_DTYPE = np.int64
CATEGORIES_PER_WORD = 64


def channel_sum(values, xp=np):
    """Sum over the last (channel) axis.

    Unrolled for the usual few classes: a reduction over a short trailing axis is several
    times slower in numpy than a handful of whole-array additions.
    """
    n_channels = values.shape[-1]
    if n_channels > 16 or n_channels == 0:
        return xp.sum(values, axis=-1)
    total = values[..., 0]
    for c in range(1, n_channels):
        total = total + values[..., c]
    return total


@dataclass(frozen=True)
class StatsLayout:
    """Where each quantity lives on the channel axis of a statistics array, and how its
    integers map to real values.

    ``exponents``: per channel, statistic = integer * 2**-exponent (empty: all 0, plain
    counts). Every method but :meth:`real` and :meth:`count` reads *real* statistics, the
    float64 output of :meth:`real` (raw integers do where every exponent is 0).
    """

    is_classification: bool
    n_classes: int  # 0 for regression
    has_count_channel: bool
    exponents: tuple = ()
    # Every statistics array (per-row statistics, histograms, node totals) holds this type.
    dtype: type = STATS_DTYPE
    # Regression: the target the sums of w*(y - centre) are taken about; a tuple of one
    # per output where there are several.
    centre: float | tuple = 0.0
    # Regression: the fit's targets are (y - centre) * 2**-target_exponent (0: unscaled).
    target_exponent: int = 0
    # The fit's weights are the real ones times 2**-weight_exponent (0: unscaled).
    weight_exponent: int = 0
    # Targets per row (multi-output y). Regression: each its own weighted-sum channel;
    # classification: each its own block of class channels, ``class_counts`` (one count
    # per output, adding up to n_classes; empty for one output).
    n_outputs: int = 1
    class_counts: tuple = ()

    @property
    def n_channels(self) -> int:
        base = self.n_classes if self.is_classification else 1 + self.n_outputs
        return base + (1 if self.has_count_channel else 0)

    def zeros(self, leading_shape=(), xp=np):
        """A zeroed statistics array of shape ``leading_shape + (n_channels,)``."""
        return xp.zeros((*tuple(leading_shape), self.n_channels), dtype=self.dtype)

    def real(self, stats, xp=np):
        """float64 statistics in real units: each channel's integers times 2**-exponent.

        Exact scaling of the (correctly rounded) conversion to float64, so it gives the same
        bits on every device."""
        out = stats.astype(np.float64)
        if any(self.exponents):
            out *= xp.asarray(self.scales())
        return out

    def scales(self) -> np.ndarray:
        """Each channel's power of two: a real statistic is its integer times it."""
        exponents = np.asarray(self.exponents or (0,) * self.n_channels, dtype=np.int64)
        return np.ldexp(1.0, -exponents)

    def weight(self, stats, xp=np):
        """Weighted number of rows (classification: of the first output's classes, which
        every output's add up to)."""
        if self.is_classification:
            return channel_sum(stats[..., : self.output_classes[0][1]], xp)
        return stats[..., 0]

    @property
    def output_classes(self) -> tuple:
        """Classification: each output's (first, end) class channels."""
        counts = self.class_counts or (self.n_classes,)
        ends = np.cumsum(counts)
        return tuple((int(end - count), int(end)) for count, end in zip(counts, ends, strict=True))

    def count(self, stats, xp=np):
        """Unweighted number of rows (raw or real statistics alike: its exponent is 0)."""
        if self.has_count_channel:
            return stats[..., -1]
        return self.weight(stats, xp)

    def class_weights(self, stats):
        return stats[..., : self.n_classes]

    def centred_mean(self, stats, xp=np, output: int = 0):
        """Regression: the weighted mean of ``y - centre`` (0 where there is no weight)
        of one output, the first by default (:meth:`centred_means` gives every output's)."""
        weight = stats[..., 0]
        return stats[..., 1 + output] / xp.where(weight > 0, weight, 1.0)

    def centred_means(self, stats, xp=np):
        """Regression: the weighted mean of ``y_k - centre_k`` of every output k, shape
        ``stats.shape[:-1] + (n_outputs,)`` (0 where there is no weight)."""
        weight = stats[..., :1]
        return stats[..., 1 : 1 + self.n_outputs] / xp.where(weight > 0, weight, 1.0)

    @property
    def fit_centres(self) -> tuple:
        """Regression: every output's centre in the fit's units, ``centre * 2**-t``
        (t: ``target_exponent``, one for all outputs): a row's target in those units is
        its centred target plus this."""
        centres = self.centre if isinstance(self.centre, tuple) else (self.centre,)
        return tuple(float(np.ldexp(centre, -self.target_exponent)) for centre in centres)

    @property
    def fit_centre(self) -> float:
        """Regression: the first output's :attr:`fit_centres` (the only one, but for
        multi-output y)."""
        return self.fit_centres[0]

    def weighted_target_sum(self, stats, xp=np, output: int = 0):
        """Regression: ``sum w*y`` (y in the fit's units, not centred) of real statistics,
        ``sum w*(y - centre) + centre * sum w``, of one output (the Poisson criterion
        reads it)."""
        return stats[..., 1 + output] + self.fit_centres[output] * stats[..., 0]

    def target(self, centred):
        """Regression: real targets from centred ones (the fit's units). Added in those
        units, then scaled: ``centre + centred * 2**t`` could overflow where the target
        itself does not (centre -1e308, target 1e308)."""
        t = self.target_exponent
        return np.ldexp(np.ldexp(np.asarray(self.centre, dtype=np.float64), -t) + centred, t)

    def target_variance(self, variance):
        """Regression: a variance in the fit's units, in real ones (+inf beyond float64's
        range: targets 1e200 apart vary by 1e400; 0 below it)."""
        with np.errstate(over="ignore", under="ignore"):
            return np.ldexp(variance, 2 * self.target_exponent)

    def real_weight(self, weight):
        """Weights in the fit's units (``weight_exponent``), in real ones."""
        with np.errstate(under="ignore"):
            return np.ldexp(weight, self.weight_exponent)

    def fit_variance(self, variance):
        """Regression: a real variance (a bound on impurity decreases) in the fit's units."""
        return float(np.ldexp(variance, -2 * self.target_exponent))


def fixed_point_exponent(values) -> int:
    """The exponent e of ``values``' fixed point: sum(|values|) * 2**e <= 2**FIXED_POINT_BITS,
    the largest such e (0 for an all-zero column).

    A value then moves by at most half a unit, 2**-e / 2, which is at most 2**-61 of the
    column's absolute total (a unit is between 2**-61 and 2**-60 of it); a value below
    2**-62 of the total becomes 0 (a positive weight counts as one unit instead:
    rows.fixed_point_weights). A power-of-two scale of the values shifts e and leaves
    the integers unchanged.
    """
    return fixed_point_exponent_of(binade_sum(np.abs(np.asarray(values, dtype=np.float64))))


def fixed_point_exponent_of(total: float) -> int:
    """:func:`fixed_point_exponent` from the values' absolute total (:func:`exact_sum`),
    however it was summed (on one machine, or from parts summed on many)."""
    if total == 0.0:
        return 0
    if not np.isfinite(total):
        raise ValueError("statistics must be finite: their absolute total is not")
    _, exponent = np.frexp(total)  # 2**(exponent - 1) <= total < 2**exponent
    return FIXED_POINT_BITS - int(exponent)


def _scaled_by_power_of_two(values, exponent: int) -> np.ndarray:
    """``values * 2**exponent`` (float64), correctly rounded as ``np.ldexp`` gives it.

    Where ``2**exponent`` is a normal float64, multiplying by it is the same operation
    (exact, or one correct rounding into the subnormals) and several times faster than
    ``ldexp`` on millions of rows (a forest's batch); elsewhere ``ldexp``.
    """
    values = np.asarray(values, dtype=np.float64)
    if -1022 <= exponent <= 1023:
        return values * (2.0**exponent)
    return np.ldexp(values, exponent)


def to_fixed_point(values, exponent: int) -> np.ndarray:
    """``round(values * 2**exponent)`` as int64 (ties to even)."""
    scaled = _scaled_by_power_of_two(values, exponent)
    return np.rint(scaled, out=scaled).astype(STATS_DTYPE)


def from_fixed_point(integers, exponent: int) -> np.ndarray:
    """The real values of fixed-point ``integers``."""
    return _scaled_by_power_of_two(integers, -exponent)


def regression_centre(y) -> float:
    """The value regression targets are centred on: a median training target.

    A target itself (the lower middle one), not a mean: then ``y + c`` centres to the very
    same values as ``y`` wherever ``y + c`` is exact, and ``k * y`` (k a power of two) to
    ``k`` times them; and one huge outlier does not move it, as it would a mean.
    """
    y = np.asarray(y, dtype=np.float64)
    if y.size == 0:
        return 0.0
    middle = (y.size - 1) // 2
    return float(np.partition(y, middle)[middle])


def target_exponent(y, centre: float, total_weight: float) -> int:
    """The power of two t by which regression targets are scaled, ``(y - centre) * 2**-t``:
    0 for all but extreme targets. Where ``|y - centre| * max(total_weight, 1)`` reaches
    2**TARGET_SPREAD_LIMIT_EXPONENT (about 3e150), the smallest t that brings it below;
    where it stays under 2**TARGET_SPREAD_FLOOR_EXPONENT (about 5e-91), the t that brings
    it to about 1.

    A power of two scales exactly, so the tree grown on the scaled targets is the tree of
    the real ones, and ``y * 2**k`` centres to the same values.
    """
    y = np.asarray(y, dtype=np.float64)
    if y.size == 0:
        return 0
    return target_exponent_of(float(np.max(y)), float(np.min(y)), centre, total_weight)


def target_exponent_of(highest: float, lowest: float, centre: float, total_weight: float) -> int:
    """:func:`target_exponent` from the targets' extremes (of at least one target)."""
    with np.errstate(over="ignore"):
        spread = max(abs(highest - centre), abs(lowest - centre))  # exact for subnormals
    if spread == 0.0:
        return 0
    if np.isinf(spread):  # 1e308 - -1e308: halved, it is finite
        half = max(abs(0.5 * highest - 0.5 * centre), abs(0.5 * lowest - 0.5 * centre))
        spread_exponent = int(np.frexp(half)[1]) + 1
    else:
        spread_exponent = int(np.frexp(spread)[1])  # spread < 2**spread_exponent
    _, weight_exponent = np.frexp(max(float(total_weight), 1.0))
    bound = spread_exponent + int(weight_exponent)
    if bound > TARGET_SPREAD_LIMIT_EXPONENT:
        return bound - TARGET_SPREAD_LIMIT_EXPONENT
    return bound if bound < TARGET_SPREAD_FLOOR_EXPONENT else 0


# Weights whose total lies outside [2**-WEIGHT_TOTAL_RANGE, 2**WEIGHT_TOTAL_RANGE] are
# scaled by a power of two, to a total about the number of rows: the criteria square sums
# of weights (Gini, S1**2 / W), which would underflow or overflow beyond about 2**+-500.
WEIGHT_TOTAL_RANGE = 128


def weight_scale_exponent(weight) -> int:
    """The power of two e by which a fit's weights are scaled, ``weight * 2**-e``: 0 unless
    their total lies outside 2**+-WEIGHT_TOTAL_RANGE; then the e that brings it near the
    number of rows. A power of two scales every criterion's score by the same factor, so
    the tree is unchanged; only the weighted node sizes are scaled back.
    """
    weight = np.asarray(weight, dtype=np.float64)
    with np.errstate(over="ignore"):
        return weight_scale_exponent_of(binade_sum(weight), weight.size)


def weight_scale_exponent_of(total: float, n_samples: int) -> int:
    """:func:`weight_scale_exponent` from the weights' total (:func:`exact_sum`) and
    number."""
    if not np.isfinite(total):
        raise ValueError(
            "sample_weight (times class_weight) sums beyond float64's range (about 1.8e308); "
            "scale the weights down (a power of two grows the same tree)"
        )
    if total == 0.0 or abs(np.frexp(total)[1]) <= WEIGHT_TOTAL_RANGE:
        return 0
    return int(np.frexp(total)[1]) - int(np.frexp(float(n_samples))[1])


def centred_targets(y, centre: float, exponent: int) -> np.ndarray:
    """``(y - centre) * 2**-exponent`` in float64, computed so that it cannot overflow for
    the exponent :func:`target_exponent` chose (scaled down first: exact but for
    subnormal results, which are far below the spread; scaled up last)."""
    y = np.asarray(y, dtype=np.float64)
    if exponent == 0:
        return y - centre
    if exponent < 0:
        return np.ldexp(y - centre, -exponent)
    return np.ldexp(y, -exponent) - np.ldexp(centre, -exponent)


def words_for(n_categories: int) -> int:
    """Words of a bitset over ``n_categories`` categories."""
    return max(1, -(-int(n_categories) // CATEGORIES_PER_WORD))


def bitset(codes, n_words: int) -> np.ndarray:
    """The words (:data:`BITSET_WORD_DTYPE`) whose set bits are ``codes``."""
    words = np.zeros(n_words, dtype=np.uint64)
    codes = np.asarray(codes, dtype=np.int64)
    np.bitwise_or.at(
        words,
        codes // CATEGORIES_PER_WORD,
        np.left_shift(np.uint64(1), (codes % CATEGORIES_PER_WORD).astype(np.uint64)),
    )
    return words.view(BITSET_WORD_DTYPE)


def bitsets(code_sets, n_words: int) -> np.ndarray:
    """The bitsets of many sets at once: ``code_sets`` a sequence of int arrays of codes;
    returns (len(code_sets), n_words) words, row ``k`` the :func:`bitset` of set ``k``."""
    words = np.zeros((len(code_sets), n_words), dtype=np.uint64)
    if len(code_sets) == 0:
        return words.view(BITSET_WORD_DTYPE)
    sizes = np.fromiter((len(codes) for codes in code_sets), dtype=np.int64, count=len(code_sets))
    codes = np.concatenate([np.asarray(c, dtype=np.int64).ravel() for c in code_sets])
    rows = np.repeat(np.arange(len(code_sets)), sizes)
    np.bitwise_or.at(
        words,
        (rows, codes // CATEGORIES_PER_WORD),
        np.left_shift(np.uint64(1), (codes % CATEGORIES_PER_WORD).astype(np.uint64)),
    )
    return words.view(BITSET_WORD_DTYPE)


def bitset_members(words) -> np.ndarray:
    """The codes whose bits are set in ``words`` (int64 or uint64), ascending."""
    bits = np.unpackbits(np.asarray(words).view(np.uint8), bitorder="little")
    return np.flatnonzero(bits)


# -- sums that do not depend on the order of the values ---------------------------------
# A float64 is m * 2**(e - 53) with m an integer below 2**53 (numpy's frexp). Its two
# halves, m's bits above and below HALF_BITS, are summed per exponent e; each half is
# below 2**27, so a float64 sum (numpy's bincount) of up to 2**26 of them is exact.
_HALF_BITS = 26
_EXACT_CHUNK = 1 << 25


def exact_sum_parts(values) -> dict[int, int]:
    """The exact sum of float64 ``values`` as {e: integer}, the sum being
    ``sum(integer * 2**(e - 53))``: parts of several arrays add up (:func:`add_parts`) to
    the parts of their concatenation, in any order. Every value must be finite."""
    values = np.ravel(np.asarray(values, dtype=np.float64))
    parts: dict[int, int] = {}
    for start in range(0, values.size, _EXACT_CHUNK):
        chunk = values[start : start + _EXACT_CHUNK]
        chunk = chunk[chunk != 0.0]
        if chunk.size == 0:
            continue
        bits = chunk.view(np.int64)
        biased = (bits >> 52) & 0x7FF  # 0: subnormal, m * 2**-1074
        mantissa = bits & ((1 << 52) - 1)
        mantissa = np.where(biased > 0, mantissa | (1 << 52), mantissa)
        mantissa = np.where(bits < 0, -mantissa, mantissa)
        exponent = np.maximum(biased, 1) - 1022  # value = mantissa * 2**(exponent - 53)
        high = mantissa >> _HALF_BITS
        low = mantissa - (high << _HALF_BITS)
        lowest = int(exponent.min())
        slot = exponent - lowest
        high_sums = np.bincount(slot, weights=high.astype(np.float64))
        low_sums = np.bincount(slot, weights=low.astype(np.float64))
        for k in np.flatnonzero((high_sums != 0) | (low_sums != 0)):
            value = (int(high_sums[k]) << _HALF_BITS) + int(low_sums[k])
            e = lowest + int(k)
            parts[e] = parts.get(e, 0) + value
    return parts


def add_parts(*many) -> dict[int, int]:
    """The :func:`exact_sum_parts` of the concatenation of the arrays of ``many`` parts."""
    out: dict[int, int] = {}
    for parts in many:
        for e, value in parts.items():
            out[int(e)] = out.get(int(e), 0) + int(value)
    return out


def sum_of_parts(parts) -> float:
    """The float64 nearest the exact sum that ``parts`` hold (correctly rounded; inf
    beyond float64's range)."""
    if not parts:
        return 0.0
    lowest = min(parts)
    total = sum(value << (e - lowest) for e, value in parts.items())
    shift = lowest - 53
    exact = Fraction(total * 2**shift) if shift >= 0 else Fraction(total, 2**-shift)
    try:
        return float(exact)
    except OverflowError:
        return float(np.copysign(np.inf, total))


def binade_sum(values) -> float:
    """A sum of non-negative ``values`` with the exponent (numpy's frexp) of their exact
    sum, :func:`exact_sum`'s: numpy's sum where its rounding error (below
    n * 2**-52 of it) cannot cross a power of two, the exact sum otherwise. The
    fixed-point exponents need no more; they then do not depend on the order of the
    rows, nor on how they are split between machines."""
    total = float(np.sum(values))
    if total == 0.0 or not np.isfinite(total):
        return total
    error = total * values.size * 2.0**-52
    if np.frexp(total - error)[1] == np.frexp(total + error)[1]:
        return total
    return exact_sum(values)


def exact_sum(values) -> float:
    """The sum of float64 ``values``, correctly rounded: the same bits in any order and
    however the values are split between machines (``np.sum`` rounds as it goes, its
    result depends on the order). Non-finite values give numpy's sum."""
    values = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(values)):
        with np.errstate(over="ignore", invalid="ignore"):
            return float(np.sum(values))
    return sum_of_parts(exact_sum_parts(values))


def scan_outputs(layout) -> tuple[int, np.ndarray]:
    """The compiled split scan's ``n_classes`` and ``outputs`` of a fit (see
    ``gpu_tree.growing.splitting.CompiledSearch``), which the subtree finisher passes it too."""
    if layout.is_classification:
        outputs = np.array([end for _, end in layout.output_classes], dtype=np.int64)
        return layout.output_classes[0][1], outputs
    return 0, np.zeros(layout.n_outputs, dtype=np.int64)
