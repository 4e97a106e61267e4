"""Exact-in-any-order sums of squared deviations, written once for both devices.

A regression node's impurity is its weighted variance, measured on its rows in two
passes: about the node's mean (which the exact integer sums give), so that no offset of
the target cancels digits away. For the sum to come out the same in any order (CPU
loops, GPU atomics), each row's term ``w * (d - mean)**2`` is put in fixed point on a
grid set per node by its largest term (:func:`term_exponent`) and summed as integers:

- pass 1: the largest term of each node, and its lowest and highest centred target (max
  and min: any order). A node whose targets are all equal has variance 0, exactly (its
  mean, from the integer sums, may differ from its one target in the last bits);
- pass 2: the exponent e of each node, and each term as ``round(term * 2**e)`` < 2**62,
  split into its low :data:`LOW_BITS` bits and the rest, each part summed in int64: the
  low parts stay below 2**63 for up to 2**32 rows of a node, the high ones far below.

Pass 1 needs only the node's mean, so the CUDA partition runs it for the children it
makes (their means come with the split), one launch less per level.

Each term moves by at most 2**-62 of the largest, so the sum by at most
n_rows * 2**-62 of itself (about 2**-30 = 1e-9 for a billion rows, 2**-39 for ten
million). :mod:`gpu_tree.kernels.cpu` compiles these helpers with ``numba.njit`` and
:mod:`gpu_tree.kernels.cuda` with ``numba.cuda.jit(device=True)``.
"""

import math

import numpy as np

# Terms are scaled below 2**TERM_BITS.
TERM_BITS = 62
LOW_BITS = 31
LOW_MASK = (1 << LOW_BITS) - 1


def squared_deviation(centred, weight, unit_weight, i, mean):
    """Row i's term: w * (d - mean)**2 (d: the row's centred target)."""
    deviation = centred[i] - mean
    term = deviation * deviation
    if unit_weight:
        return term
    return term * weight[i]


def fixed_point_term(term, exponent):
    """round(term * 2**exponent), half up, as an integer below 2**TERM_BITS."""
    return int(math.floor(math.ldexp(term, int(exponent)) + 0.5))


def term_exponent(largest):
    """The exponent that puts a node's largest term just below 2**TERM_BITS (pass 2 finds
    it on the device, from pass 1's largest term, and returns it with the sums)."""
    if largest > 0.0:
        _, exponent = math.frexp(largest)  # largest < 2**exponent
        return TERM_BITS - exponent
    return 0


def combine(high, low, exponent):
    """The sums' real value from their high and low integer parts (host, numpy)."""
    high = np.asarray(high, dtype=np.float64)
    low = np.asarray(low, dtype=np.float64)
    return np.ldexp(high, LOW_BITS - exponent) + np.ldexp(low, -exponent)
