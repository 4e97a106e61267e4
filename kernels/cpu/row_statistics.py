"""The rows' statistics on the CPU: classification rows one-hot, and the two passes of a
regression node's exact squared deviations (``kernels/_squared_deviations.py``)."""

import hashlib
from pathlib import Path

import numpy as np
from numba import njit, prange

from .. import _squared_deviations as _deviations
from .. import compilation
from .launch import SerialWhenSmall, rows_of_nodes


@njit(parallel=True, cache=True)
def one_hot_stats(y_class, weight, count_channel, out):
    """``out[i]``: row i's classification statistics: its weight in its class's channel,
    1 in ``count_channel`` (< 0: none), 0 in the others (zeroed here, in parallel: the
    rows of a forest's batch are millions)."""
    for i in prange(y_class.shape[0]):
        for c in range(out.shape[1]):
            out[i, c] = 0
        out[i, y_class[i]] = weight[i]
        if count_channel >= 0:
            out[i, count_channel] = 1


# The host step after the two passes (numpy; the CUDA backend uses it too).
combine_squared_deviation_parts = _deviations.combine
_squared_deviation = njit(inline="always")(_deviations.squared_deviation)
_fixed_point_term = njit(inline="always")(_deviations.fixed_point_term)
_term_exponent = njit(inline="always")(_deviations.term_exponent)
DEVIATIONS_SOURCE_HASH = hashlib.sha256(Path(_deviations.__file__).read_bytes()).hexdigest()


def _compile_squared_deviation_kernels(source_hash):
    # The helpers' source hash is in the cache key, as for predict_leaves below.
    @njit(parallel=True, cache=True)
    def largest_squared_deviations(
        sample_indices,
        node_start,
        node_end,
        centred,
        weight,
        unit_weight,
        means,
        largest,
        lowest,
        highest,
    ):
        """Pass 1 of :mod:`_squared_deviations`: each node's largest term, lowest and
        highest centred target."""
        source_hash  # noqa: B018 - in the cache key only
        for k in prange(node_start.shape[0]):
            most = 0.0
            low = np.inf
            high = -np.inf
            for j in range(node_start[k], node_end[k]):
                i = sample_indices[j]
                most = max(most, _squared_deviation(centred, weight, unit_weight, i, means[k]))
                low = min(low, centred[i])
                high = max(high, centred[i])
            largest[k] = most
            lowest[k] = low
            highest[k] = high

    @njit(parallel=True, cache=True)
    def squared_deviation_sums(
        sample_indices,
        node_start,
        node_end,
        centred,
        weight,
        unit_weight,
        means,
        largest,
        exponent,
        high,
        low,
    ):
        """Pass 2 of :mod:`_squared_deviations`: each node's exponent (from its largest
        term), and its fixed-point terms summed as their high and low parts."""
        source_hash  # noqa: B018 - in the cache key only
        for k in prange(node_start.shape[0]):
            high_sum = 0
            low_sum = 0
            exponent[k] = _term_exponent(largest[k])
            for j in range(node_start[k], node_end[k]):
                term = _squared_deviation(centred, weight, unit_weight, sample_indices[j], means[k])
                q = _fixed_point_term(term, exponent[k])
                high_sum += q >> _deviations.LOW_BITS
                low_sum += q & _deviations.LOW_MASK
            high[k] = high_sum
            low[k] = low_sum

    return largest_squared_deviations, squared_deviation_sums


largest_squared_deviations, squared_deviation_sums = _compile_squared_deviation_kernels(
    DEVIATIONS_SOURCE_HASH
)


def _deviation_rows(args):
    """Rows read by the squared-deviation passes (arguments 1 and 2)."""
    return rows_of_nodes(args, 1)


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())
one_hot_stats = SerialWhenSmall(one_hot_stats)
largest_squared_deviations = SerialWhenSmall(largest_squared_deviations, _deviation_rows)
squared_deviation_sums = SerialWhenSmall(squared_deviation_sums, _deviation_rows)
compilation.watch(
    {
        kernel.__name__: kernel.serial
        for kernel in (
            one_hot_stats,
            largest_squared_deviations,
            squared_deviation_sums,
        )
    }
)
