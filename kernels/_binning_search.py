"""The bin search, written once in plain Python and compiled for both devices.

:mod:`gpu_tree.kernels.cpu` compiles it with ``numba.njit`` and
:mod:`gpu_tree.kernels.cuda` with ``numba.cuda.jit(device=True)``: one source, so both
devices map every value to the same bin (the trees' equality depends on it).
"""

# Cells per edge of the lookup grid that narrows each value's search to a few edges.
LOOKUP_CELLS_PER_EDGE = 8


def lookup_cell(x, first_edge, cells_per_unit, n_cells):
    """Grid cell of x (first_edge < x <= the last edge). Monotone non-decreasing in x, the
    property that makes the lookup exact: a value never lands in a cell before an edge
    below it. Always in 0..n_cells - 1: a position that is not a finite number below
    n_cells (an overflow; :func:`grid_scale` avoids them) is the last cell, never an
    index out of range."""
    if cells_per_unit == 0.0:  # a one-cell grid (see grid_scale): no arithmetic to overflow
        return 0
    position = (x - first_edge) * cells_per_unit
    if not position < n_cells:  # also inf and NaN
        return n_cells - 1
    if not position > 0.0:
        return 0
    return min(int(position), n_cells - 1)


def grid_scale(first_edge, last_edge, n_cells):
    """Cells per unit of value for a grid of ``n_cells`` cells from the first edge to the
    last one; 0 (one cell: a plain binary search over every edge) where that number or the
    positions it gives would not be finite: edges spanning more than float64's range
    (last - first overflows), or so close that n_cells / (last - first) overflows
    (subnormal or one-ulp spans)."""
    span = last_edge - first_edge
    if not (span > 0.0 and span < 1.7e308):
        return 0.0
    scale = n_cells / span
    if not scale < 1.7e308:
        return 0.0
    return scale


def make_bin_code(cell_of):
    """The bin search, calling ``cell_of``: :func:`lookup_cell` compiled for the device."""

    def bin_code(x, f, edges, edge_offsets, lookup, cells_per_unit, missing_bin):
        """Bin of value x of feature f: the number of f's edges below x, i.e.
        edges[b-1] < x <= edges[b]; NaN goes to ``missing_bin``. The binary search runs
        over the edges of x's grid cell only."""
        if x != x:
            return missing_bin
        offset = edge_offsets[f]
        n_edges = edge_offsets[f + 1] - offset
        if n_edges == 0 or x <= edges[offset]:
            return 0
        if x > edges[offset + n_edges - 1]:
            return n_edges
        cell = cell_of(x, edges[offset], cells_per_unit[f], lookup.shape[1] - 1)
        lo = lookup[f, cell]
        hi = lookup[f, cell + 1]
        while lo < hi:  # first edge >= x, among this cell's edges
            mid = (lo + hi) >> 1
            if edges[offset + mid] < x:
                lo = mid + 1
            else:
                hi = mid
        return lo

    return bin_code
