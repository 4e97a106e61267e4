"""The oblique trees' work on the CPU (``gpu_tree/growing/oblique.py``), compiled: the
sums of each direction fit (weighted Gram matrices ``A'WA``, weighted sums of rows
``w'A``, the rows' products with a vector ``Ab``) and the threshold search's sorted values
and cumulative statistics, for a batch of nodes (B, P, ...) at a time.

Every sum has a fixed, stated order, whatever the machine or its threads (BLAS's change
with both): a sum over rows adds them one at a time in row order, a sum over columns in
column order, each term rounded as numpy rounds it (no fused multiply-add: numba
compiles without fast-math). A Gram entry is numpy's ``einsum("bpi,bpj->bij", U, A)``
with ``U = A * weight[..., None]``, bit for bit: numpy keeps that order for every k >= 2
(checked by the tests); for k = 1 it sums in blocks, and there the Gram matrix is a
single number whose last bits leave the direction's sign, and so the tree, unchanged.
Rows are taken :data:`ROWS_PER_PASS` or :data:`ROWS_TOGETHER` at a time for speed; each
sum still adds its terms one after the other.

Rows of zero weight are skipped where their values are finite: their terms are +0 or
-0, and a sum that starts at +0 is never -0, so adding them changes no bit. That skips
the padding of a batch, and in the squared hinge's Newton steps the rows outside the
margin; a non-finite value is summed as numpy sums it (0 * inf is NaN).

The kernels are serial: on two threads (``launch.ThreadedWhenLarge``, a batch's nodes
shared out) the Gram matrices of a 10,000-row fit took twice as long on a busy two-core
machine.
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
def weighted_sums_and_gram(A, sum_weight, gram_weight, sums, gram):
    """For A (B, P, k) and the rows' weights sum_weight and gram_weight (B, P): ``sums[b,
    j]`` (B, k), the sum over rows p, in order, of ``sum_weight[b, p] * A[b, p, j]``, and
    ``gram[b, i, j]`` (B, k, k), the sum over rows p, in order, of ``(A[b, p, i] *
    gram_weight[b, p]) * A[b, p, j]`` (both overwritten): a Newton step's gradient and
    Hessian in one pass over the rows. A row whose two weights are zero is skipped where
    its values are finite; a row with one weight zero adds ±0 to that one's sums, which
    changes no bit of them."""
    n_nodes, n_rows, k = A.shape
    scaled = np.empty((ROWS_PER_PASS, k))
    rows = np.empty((ROWS_PER_PASS, k))
    weights = np.empty(ROWS_PER_PASS)
    for b in range(n_nodes):
        for i in range(k):
            sums[b, i] = 0.0
            for j in range(k):
                gram[b, i, j] = 0.0
        held = 0
        for p in range(n_rows):
            w = gram_weight[b, p]
            v = sum_weight[b, p]
            if w == 0.0 and v == 0.0:
                finite = True
                for i in range(k):
                    finite = finite and math.isfinite(A[b, p, i])
                if finite:
                    continue
            weights[held] = v
            for i in range(k):
                rows[held, i] = A[b, p, i]
                scaled[held, i] = A[b, p, i] * w
            held += 1
            if held == ROWS_PER_PASS:
                _add_rows(scaled, rows, gram[b])
                _add_weighted_rows(weights, rows, sums[b])
                held = 0
        for t in range(held):
            _add_row(scaled[t], rows[t], gram[b])
            for j in range(k):
                sums[b, j] += weights[t] * rows[t, j]


@njit(inline="always")
def _add_weighted_rows(weights, rows, sums):
    for j in range(sums.shape[0]):
        total = sums[j] + weights[0] * rows[0, j]
        total = total + weights[1] * rows[1, j]
        total = total + weights[2] * rows[2, j]
        total = total + weights[3] * rows[3, j]
        total = total + weights[4] * rows[4, j]
        total = total + weights[5] * rows[5, j]
        total = total + weights[6] * rows[6, j]
        sums[j] = total + weights[7] * rows[7, j]


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
    values are skipped, as in :func:`weighted_sums_and_gram`, and the others added
    :data:`ROWS_PER_PASS` at a time."""
    n_nodes, n_rows, d = X.shape
    weights = np.empty(ROWS_PER_PASS)
    rows = np.empty((ROWS_PER_PASS, d))
    for b in range(n_nodes):
        for j in range(d):
            out[b, j] = 0.0
        held = 0
        for p in range(n_rows):
            w = weight[b, p]
            if w == 0.0:
                finite = True
                for j in range(d):
                    finite = finite and math.isfinite(X[b, p, j])
                if finite:
                    continue
            weights[held] = w
            for j in range(d):
                rows[held, j] = X[b, p, j]
            held += 1
            if held == ROWS_PER_PASS:
                _add_weighted_rows(weights, rows, out[b])
                held = 0
        for t in range(held):
            for j in range(d):
                out[b, j] += weights[t] * rows[t, j]


# Rows whose sums are carried together, one term of each in turn: eight chains of
# additions in flight instead of one (each row's sum is still in column order).
ROWS_TOGETHER = 8


@njit(cache=True)
def row_dots(A, coefficients, out):
    """``out[b, p]``: the sum over columns j, in order, of ``A[b, p, j] * coefficients[b, j]``
    (from +0), for A (B, P, k), coefficients (B, k) and out (B, P) (overwritten)."""
    n_nodes, n_rows, k = A.shape
    for b in range(n_nodes):
        c = coefficients[b]
        together = n_rows - n_rows % ROWS_TOGETHER
        for p in range(0, together, ROWS_TOGETHER):
            s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
            for j in range(k):
                s0 += A[b, p, j] * c[j]
                s1 += A[b, p + 1, j] * c[j]
                s2 += A[b, p + 2, j] * c[j]
                s3 += A[b, p + 3, j] * c[j]
                s4 += A[b, p + 4, j] * c[j]
                s5 += A[b, p + 5, j] * c[j]
                s6 += A[b, p + 6, j] * c[j]
                s7 += A[b, p + 7, j] * c[j]
            out[b, p] = s0
            out[b, p + 1] = s1
            out[b, p + 2] = s2
            out[b, p + 3] = s3
            out[b, p + 4] = s4
            out[b, p + 5] = s5
            out[b, p + 6] = s6
            out[b, p + 7] = s7
        for p in range(together, n_rows):
            total = 0.0
            for j in range(k):
                total += A[b, p, j] * c[j]
            out[b, p] = total


@njit(cache=True)
def sorted_cumulative_stats(values, stats, n_rows, ordered, cumulative):
    """Each node's values sorted, column by column, and its rows' statistics summed in that
    order: for values (B, P, m) of which node b's first ``n_rows[b]`` rows are real and
    the rest padding (taken as +inf), stats (B, P, C), ``ordered[b, t, c]`` (B, P, m) is
    the t-th smallest and ``cumulative[b, t, c]`` (B, P, m, C) the sum of the statistics
    of the rows up to it. The sort is stable (ties in row order; NaN after +inf, as
    numpy's ``argsort(kind="stable")``)."""
    n_nodes, n_padded, n_columns = values.shape
    keyed = np.empty(n_padded)
    for b in range(n_nodes):
        for c in range(n_columns):
            for p in range(n_padded):
                keyed[p] = values[b, p, c] if p < n_rows[b] else np.inf
            order = np.argsort(keyed, kind="mergesort")
            _gather_cumulative(keyed, order, stats, b, c, ordered, cumulative)


@njit(cache=True)
def ordered_cumulative_stats(values, stats, n_rows, order, ordered, cumulative):
    """:func:`sorted_cumulative_stats` with each column's stable order given: ``order[b, :,
    c]`` (B, P, m) lists node b's rows (positions in P) by increasing value, the padding
    last in its own order (:func:`node_orders`)."""
    n_nodes, n_padded, n_columns = values.shape
    keyed = np.empty(n_padded)
    for b in range(n_nodes):
        for c in range(n_columns):
            for p in range(n_padded):
                keyed[p] = values[b, p, c] if p < n_rows[b] else np.inf
            _gather_cumulative(keyed, order[b, :, c], stats, b, c, ordered, cumulative)


@njit(inline="always")
def _gather_cumulative(keyed, order, stats, b, c, ordered, cumulative):
    # Each cumulative sum adds one row after the other, from the first row's statistics
    # as they are: numpy's cumsum.
    for t in range(order.shape[0]):
        row = order[t]
        ordered[b, t, c] = keyed[row]
        for ch in range(stats.shape[2]):
            if t == 0:
                cumulative[b, t, c, ch] = stats[b, row, ch]
            else:
                cumulative[b, t, c, ch] = cumulative[b, t - 1, c, ch] + stats[b, row, ch]


# -- each feature's rows presorted --------------------------------------------------------------
# The level's rows of each feature, grouped by node as the level's rows are, and within a
# node by increasing value, ties by row: X's columns are sorted once, at the root, and each
# level's lists are the parent's filtered into its children, which keeps their order. A
# node's order of a feature is then read, not sorted.


@njit(cache=True)
def node_orders(sorted_rows, position_in_node, starts, n_rows, order):
    """``order[b, t, f]`` (B, P, d): the position in its node of node b's t-th row by
    feature f, from ``sorted_rows`` (d, level rows: each feature's rows grouped by node,
    node b's from ``starts[b]``, ``n_rows[b]`` of them) and ``position_in_node`` (a row's
    position among its node's rows); the padding (t >= n_rows[b]) in its own order."""
    n_nodes, n_padded, n_features = order.shape
    for b in range(n_nodes):
        n = n_rows[b]
        for f in range(n_features):
            for t in range(n):
                order[b, t, f] = position_in_node[sorted_rows[f, starts[b] + t]]
            for t in range(n, n_padded):
                order[b, t, f] = t


@njit(cache=True)
def children_sorted_rows(sorted_rows, child_of_row, child_starts, out):
    """The next level's ``sorted_rows``: each feature's rows moved, in order, to their
    child's group (``child_of_row``: the child of each row, -1 for a row that leaves the
    growing nodes; ``child_starts``: where each child's group begins in ``out``)."""
    n_features, n_level = sorted_rows.shape
    cursor = np.empty(child_starts.shape[0], dtype=np.int64)
    for f in range(n_features):
        cursor[:] = child_starts
        for t in range(n_level):
            row = sorted_rows[f, t]
            child = child_of_row[row]
            if child >= 0:
                out[f, cursor[child]] = row
                cursor[child] += 1


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())
