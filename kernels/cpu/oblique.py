"""The oblique trees' sums on the CPU (``gpu_tree/growing/oblique.py``): the weighted Gram
matrices of a batch of nodes, the bulk of each direction fit.

The summation order is fixed and the same as numpy's ``einsum("bpi,bpj->bij", U, A)``
with ``U = A * weight[..., None]``, the CPU's code before this kernel: each entry is
summed one row at a time, in row order, each term ``(A[p, i] * weight[p]) * A[p, j]``
rounded as numpy rounds it (no fused multiply-add: numba compiles without fast-math).
numpy keeps that order for every k >= 2 (checked by the tests); for k = 1 it sums in
blocks, and there the Gram matrix is a single number whose last bits leave the
direction's sign, and so the tree, unchanged.

Rows of zero weight are skipped where their values are finite: their terms are +0 or
-0, and a sum that starts at +0 is never -0, so adding them changes no bit. That skips
the padding of a batch, and in the squared hinge's Newton steps the rows outside the
margin; a non-finite value is summed as numpy sums it (0 * inf is NaN).
"""

import math

import numpy as np
from numba import njit

from .. import compilation


@njit(cache=True)
def weighted_gram(A, weight, out):
    """``out[b, i, j]``: the sum over rows p, in order, of
    ``(A[b, p, i] * weight[b, p]) * A[b, p, j]``, for A (B, P, k), weight (B, P) and out
    (B, k, k) (overwritten)."""
    n_nodes, n_rows, k = A.shape
    scaled = np.empty(k)
    for b in range(n_nodes):
        for i in range(k):
            for j in range(k):
                out[b, i, j] = 0.0
        for p in range(n_rows):
            w = weight[b, p]
            if w == 0.0:
                finite = True
                for i in range(k):
                    finite = finite and math.isfinite(A[b, p, i])
                if finite:
                    continue
            for i in range(k):
                scaled[i] = A[b, p, i] * w
            for i in range(k):
                s = scaled[i]
                for j in range(k):
                    out[b, i, j] += s * A[b, p, j]


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())
