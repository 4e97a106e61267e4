"""The rows' statistics on the GPU: the two passes of a regression node's exact squared
deviations (``kernels/_squared_deviations.py``); :func:`record_extremes` is pass 1's step
for one row, which the partition takes as it moves the rows."""

from .. import _squared_deviations as _deviations
from .. import compilation
from .api import cuda, device_function
from .launch import HELPERS_SOURCE_KEY

_squared_deviation = device_function(cache=True)(_deviations.squared_deviation)
_fixed_point_term = device_function(cache=True)(_deviations.fixed_point_term)
_term_exponent = device_function(cache=True)(_deviations.term_exponent)


@device_function(inline=True, cache=True)
def record_extremes(i, slot, centred, weight, unit_weight, mean, largest, lowest, highest):
    """Row i's part of pass 1 for its node's ``slot``: atomic max and min (any order)."""
    term = _squared_deviation(centred, weight, unit_weight, i, mean)
    cuda.atomic.max(largest, slot, term)
    cuda.atomic.min(lowest, slot, centred[i])
    cuda.atomic.max(highest, slot, centred[i])


def _compile_squared_deviation_kernels(helpers_key):
    @cuda.jit(cache=True)
    def largest_squared_deviations(
        node_of_row,
        slot_of_node,
        centred,
        weight,
        unit_weight,
        mean_of_node,
        largest,
        lowest,
        highest,
    ):
        """Pass 1 of :mod:`_squared_deviations` for the nodes with a slot: their largest
        term, lowest and highest centred target. ``mean_of_node`` is indexed by node id;
        ``weight`` is not read with ``unit_weight`` (a 1-element stand-in will do)."""
        helpers_key  # noqa: B018 - in the cache key only (see HELPERS_SOURCE_KEY)
        start = cuda.grid(1)
        for i in range(start, node_of_row.shape[0], cuda.gridsize(1)):
            node = node_of_row[i]
            slot = slot_of_node[node]
            if slot >= 0:
                record_extremes(
                    i,
                    slot,
                    centred,
                    weight,
                    unit_weight,
                    mean_of_node[node],
                    largest,
                    lowest,
                    highest,
                )

    @cuda.jit(cache=True)
    def squared_deviation_sums(
        node_of_row,
        slot_of_node,
        centred,
        weight,
        unit_weight,
        mean_of_node,
        largest,
        exponent,
        high,
        low,
    ):
        """Pass 2 of :mod:`_squared_deviations`: each slot's exponent (thread k writes slot
        k's; the grid covers the slots even where they outnumber the rows, as a
        distributed fit's worker may hold no row of some nodes), and the fixed-point
        terms summed as their high and low parts (integer atomics: exact in any order)."""
        helpers_key  # noqa: B018 - in the cache key only (see HELPERS_SOURCE_KEY)
        n_rows = node_of_row.shape[0]
        start = cuda.grid(1)
        # Not max(): Numba-CUDA-MLIR 0.6 cannot compile max() of two array lengths.
        end = n_rows if n_rows > exponent.shape[0] else exponent.shape[0]
        for i in range(start, end, cuda.gridsize(1)):
            if i < exponent.shape[0]:
                exponent[i] = _term_exponent(largest[i])
            if i >= n_rows:
                continue
            node = node_of_row[i]
            slot = slot_of_node[node]
            if slot >= 0:
                term = _squared_deviation(centred, weight, unit_weight, i, mean_of_node[node])
                q = _fixed_point_term(term, _term_exponent(largest[slot]))
                cuda.atomic.add(high, slot, q >> _deviations.LOW_BITS)
                cuda.atomic.add(low, slot, q & _deviations.LOW_MASK)

    return largest_squared_deviations, squared_deviation_sums


largest_squared_deviations, squared_deviation_sums = _compile_squared_deviation_kernels(
    HELPERS_SOURCE_KEY
)


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())
