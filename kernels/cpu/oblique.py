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

# Rows added to the Gram matrix per pass over it: each entry is loaded and stored once
# per group of rows (its terms added one after the other, in order), not once per row:
# 1.8 times the speed of a pass per row. _add_rows is written out for this many.
ROWS_PER_PASS = 8


@njit(cache=True)
def weighted_gram(A, weight, out):
    """``out[b, i, j]``: the sum over rows p, in order, of
    ``(A[b, p, i] * weight[b, p]) * A[b, p, j]``, for A (B, P, k), weight (B, P) and out
    (B, k, k) (overwritten)."""
    n_nodes, n_rows, k = A.shape
    scaled = np.empty((ROWS_PER_PASS, k))
    rows = np.empty((ROWS_PER_PASS, k))
    for b in range(n_nodes):
        for i in range(k):
            for j in range(k):
                out[b, i, j] = 0.0
        held = 0
        for p in range(n_rows):
            w = weight[b, p]
            if w == 0.0:
                finite = True
                for i in range(k):
                    finite = finite and math.isfinite(A[b, p, i])
                if finite:
                    continue
            for i in range(k):
                rows[held, i] = A[b, p, i]
                scaled[held, i] = A[b, p, i] * w
            held += 1
            if held == ROWS_PER_PASS:
                _add_rows(scaled, rows, out[b])
                held = 0
        for t in range(held):
            _add_row(scaled[t], rows[t], out[b])


@njit(inline="always")
def _add_rows(scaled, rows, gram):
    k = gram.shape[0]
    for i in range(k):
        s0 = scaled[0, i]
        s1 = scaled[1, i]
        s2 = scaled[2, i]
        s3 = scaled[3, i]
        s4 = scaled[4, i]
        s5 = scaled[5, i]
        s6 = scaled[6, i]
        s7 = scaled[7, i]
        for j in range(k):
            total = gram[i, j] + s0 * rows[0, j]
            total = total + s1 * rows[1, j]
            total = total + s2 * rows[2, j]
            total = total + s3 * rows[3, j]
            total = total + s4 * rows[4, j]
            total = total + s5 * rows[5, j]
            total = total + s6 * rows[6, j]
            gram[i, j] = total + s7 * rows[7, j]


@njit(inline="always")
def _add_row(scaled, row, gram):
    k = gram.shape[0]
    for i in range(k):
        s = scaled[i]
        for j in range(k):
            gram[i, j] += s * row[j]


@njit(cache=True)
def weighted_sums(weight, X, out):
    """``out[b, j]``: the sum over rows p, in order, of ``weight[b, p] * X[b, p, j]``, for
    weight (B, P), X (B, P, d) and out (B, d) (overwritten). Zero-weight rows of finite
    values are skipped, as in :func:`weighted_gram`."""
    n_nodes, n_rows, d = X.shape
    for b in range(n_nodes):
        for j in range(d):
            out[b, j] = 0.0
        for p in range(n_rows):
            w = weight[b, p]
            if w == 0.0:
                finite = True
                for j in range(d):
                    finite = finite and math.isfinite(X[b, p, j])
                if finite:
                    continue
            for j in range(d):
                out[b, j] += w * X[b, p, j]


# Rows whose products with the coefficients are summed together, column by column: their
# sums stay in the cache between columns, and each row's sum is still in column order.
ROWS_PER_BLOCK = 256


@njit(cache=True)
def row_dots(A, coefficients, out):
    """``out[b, p]``: the sum over columns j, in order, of ``A[b, p, j] * coefficients[b, j]``
    (from +0), for A (B, P, k), coefficients (B, k) and out (B, P) (overwritten)."""
    n_nodes, n_rows, k = A.shape
    for b in range(n_nodes):
        for start in range(0, n_rows, ROWS_PER_BLOCK):
            end = min(start + ROWS_PER_BLOCK, n_rows)
            for p in range(start, end):
                out[b, p] = 0.0
            for j in range(k):
                c = coefficients[b, j]
                for p in range(start, end):
                    out[b, p] += A[b, p, j] * c


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())
