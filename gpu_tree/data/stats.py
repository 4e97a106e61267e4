"""The layout of the statistics that histograms sum, and of categorical bitsets.

This module is their one owner: the dtype, the channels, the grid on which sums are
exact, and the bit layout of category sets. Backends, criteria, the grower and the
model read them from here.

Channels of a statistics vector (the last axis of every statistics array):

- classification: ``n_classes`` weighted class totals, then an unweighted row count
  when the fit is weighted (otherwise the class totals already are counts);
- regression: ``[sum w, sum w*y, sum w*y**2]``, then the row count when weighted.

Sums are exact in any order (on the CPU, and with atomics in any order on the GPU)
because every per-row statistic lies on a power-of-two grid of its column's total:
:func:`round_to_exact_sum_grid`.

Category sets: ``n_words`` words of :data:`BITSET_WORD_DTYPE` per set, category ``k`` at
bit ``k % 64`` of word ``k // 64``. The tree walk in ``kernels/_tree_walk.py`` and the
split search read the same layout.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# The type of every statistics array: per-row statistics, histograms, node totals.
STATS_DTYPE = np.float64

# The channels of a regression statistics vector, in order (before the count channel).
REGRESSION_CHANNELS = ("weight", "weighted_sum", "weighted_sum_of_squares")

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
    """Where each quantity lives on the channel axis of a statistics array."""

    is_classification: bool
    n_classes: int  # 0 for regression
    has_count_channel: bool

    # Every statistics array (per-row statistics, histograms, node totals) holds this type.
    dtype = STATS_DTYPE

    @property
    def n_channels(self) -> int:
        base = self.n_classes if self.is_classification else len(REGRESSION_CHANNELS)
        return base + (1 if self.has_count_channel else 0)

    def zeros(self, leading_shape=(), xp=np):
        """A zeroed statistics array of shape ``leading_shape + (n_channels,)``."""
        return xp.zeros((*tuple(leading_shape), self.n_channels), dtype=self.dtype)

    def weight(self, stats, xp=np):
        """Weighted number of rows."""
        if self.is_classification:
            return channel_sum(stats[..., : self.n_classes], xp)
        return stats[..., 0]

    def count(self, stats, xp=np):
        """Unweighted number of rows."""
        if self.has_count_channel:
            return stats[..., -1]
        return self.weight(stats, xp)

    def class_weights(self, stats):
        return stats[..., : self.n_classes]


def round_to_exact_sum_grid(values: np.ndarray) -> np.ndarray:
    """Round each column onto a power-of-two grid on which every sum is exact.

    A column whose absolute values total T is rounded to multiples of 2**e, with e the
    exponent of T minus 50. Every partial sum of such values is then an integer multiple
    of 2**e below 2**52 multiples: exactly representable in float64. So histogram sums
    come out identical in any order: on the CPU and on the GPU (where atomics land in any
    order), in histogram and in exact mode. The rounding moves each value by at most
    2**-51 of its column's total; integer columns (unit or integer weights) are unchanged.
    """
    values = np.asarray(values, dtype=STATS_DTYPE)
    total = np.sum(np.abs(values), axis=0)
    _, exponent = np.frexp(total)  # total < 2**exponent
    exponent = np.where(total > 0, exponent - 51, 0).astype(np.int64)
    return np.ldexp(np.rint(np.ldexp(values, -exponent)), exponent)


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


def bitset_members(words) -> np.ndarray:
    """The codes whose bits are set in ``words`` (int64 or uint64), ascending."""
    bits = np.unpackbits(np.asarray(words).view(np.uint8), bitorder="little")
    return np.flatnonzero(bits)
