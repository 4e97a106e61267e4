"""Binning on the CPU: each column's missing values and infinities, the bin of every
value (the bin search of ``kernels/_binning_search.py``, shared with the CUDA kernel), and
categorical columns of numbers to their codes."""

import numpy as np
from numba import njit, prange

from .. import _binning_search as _search
from .. import compilation
from .launch import SerialWhenSmall, borrowing_njit

# nonfinite_columns' flags: a column holds a NaN (a missing value), an infinity.
HOLDS_NAN, HOLDS_INFINITY = 1, 2


@njit(parallel=True, cache=True)
def nonfinite_columns(X):
    """Each column of the 2-D array X's :data:`HOLDS_NAN` and :data:`HOLDS_INFINITY`
    flags (uint8): one parallel pass over blocks of rows (each thread reads its rows
    contiguously), no temporary array of X's size. One kernel for both questions: binning
    asks for the NaNs and input checks for infinities, and each kernel costs a first run
    its compile."""
    n_samples, n_features = X.shape
    n_blocks = min(64, max(1, n_samples // 4096))
    found = np.zeros((n_blocks, n_features), dtype=np.uint8)
    for block in prange(n_blocks):
        for i in range(block * n_samples // n_blocks, (block + 1) * n_samples // n_blocks):
            for f in range(n_features):
                value = X[i, f]
                if value != value:
                    found[block, f] |= HOLDS_NAN
                elif abs(value) == np.inf:
                    found[block, f] |= HOLDS_INFINITY
    out = np.zeros(n_features, dtype=np.uint8)
    for block in range(n_blocks):
        for f in range(n_features):
            out[f] |= found[block, f]
    return out


# The bin search is shared with the CUDA kernels (one source, the same codes).
LOOKUP_CELLS_PER_EDGE = _search.LOOKUP_CELLS_PER_EDGE
_lookup_cell = njit(cache=True, inline="always")(_search.lookup_cell)
_grid_scale = njit(cache=True, inline="always")(_search.grid_scale)
# The search and widen_bounds borrow their arrays (borrowing_njit): inlined as numba IR,
# they cost an atomic increment and decrement per array per value, six per value, and
# made bin_columns' serial twin 5 times slower than its parallel kernel on one thread
# (10,000 x 28: 11.6 ms against 2.4; 2.4 now).
bin_code = borrowing_njit(forceinline=True)(_search.make_bin_code(_lookup_cell))


@njit(parallel=True, cache=True)
def build_bin_lookup(edges, edge_offsets, n_cells, lookup, cells_per_unit):
    """lookup[f, c] = number of edges of feature f whose cell is < c (c = 0..n_cells)."""
    n_features = edge_offsets.shape[0] - 1
    for f in prange(n_features):
        offset = edge_offsets[f]
        n_edges = edge_offsets[f + 1] - offset
        for c in range(n_cells + 1):
            lookup[f, c] = 0
        cells_per_unit[f] = 0.0
        if n_edges < 2:
            continue
        first = edges[offset]
        cells_per_unit[f] = _grid_scale(first, edges[offset + n_edges - 1], n_cells)
        # Edge 0 sits at the grid's origin; count each later edge into every cell past its own.
        for k in range(1, n_edges):
            cell = _lookup_cell(edges[offset + k], first, cells_per_unit[f], n_cells)
            lookup[f, cell + 1] += 1
        lookup[f, 0] = 0
        lookup[f, 1] += 1  # edge 0 is in cell 0
        for c in range(1, n_cells + 1):
            lookup[f, c] += lookup[f, c - 1]


@njit(parallel=True, cache=True)
def bin_columns(
    X,
    edges,
    edge_offsets,
    lookup,
    cells_per_unit,
    track_bounds,
    missing_bin,
    X_binned,
    bin_lower,
    bin_upper,
):
    """Map raw values to bins; record each bin's smallest and largest value.

    A value goes to bin b when edges[b-1] < x <= edges[b] (b = number of edges below x).
    ``lookup``/``cells_per_unit`` come from :func:`build_bin_lookup`: the binary search
    runs only over the edges sharing x's grid cell. ``bin_lower``/``bin_upper``
    (n_features, n_bins) must come in filled with +inf/-inf; they are updated only for
    features with ``track_bounds`` set (two compares per value saved on the others).
    NaN goes to ``missing_bin`` (the last bin; the caller passes -1 when X has no NaN).

    Parallel over blocks of rows, so each thread reads rows of the row-major X
    contiguously; each block keeps private min/max tables, merged at the end.
    """
    n_samples, n_features = X.shape
    n_bins = bin_lower.shape[1]
    n_blocks = min(64, max(1, n_samples // 4096))
    block_lower = np.full((n_blocks, n_features, n_bins), np.inf)
    block_upper = np.full((n_blocks, n_features, n_bins), -np.inf)
    for block in prange(n_blocks):
        first_row = block * n_samples // n_blocks
        last_row = (block + 1) * n_samples // n_blocks
        lower = block_lower[block]
        upper = block_upper[block]
        for i in range(first_row, last_row):
            for f in range(n_features):
                x = X[i, f]
                b = bin_code(x, f, edges, edge_offsets, lookup, cells_per_unit, missing_bin)
                X_binned[f, i] = b
                if b == missing_bin:
                    continue
                if track_bounds[f]:
                    widen_bounds(lower, upper, f, b, x)
    merge_block_bounds(block_lower, block_upper, bin_lower, bin_upper)


@borrowing_njit(cache=True, forceinline=True)
def widen_bounds(lower, upper, f, b, x):
    """Feature f's bin b: its smallest and largest value so far, widened to hold x."""
    if x < lower[f, b]:
        lower[f, b] = x
    if x > upper[f, b]:
        upper[f, b] = x


@njit(cache=True)
def merge_block_bounds(block_lower, block_upper, bin_lower, bin_upper):
    """The bounds each block of rows kept privately, merged into ``bin_lower`` /
    ``bin_upper`` (n_features, n_bins)."""
    n_blocks, n_features, n_bins = block_lower.shape
    for block in range(n_blocks):
        for f in range(n_features):
            for b in range(n_bins):
                bin_lower[f, b] = min(bin_lower[f, b], block_lower[block, f, b])
                bin_upper[f, b] = max(bin_upper[f, b], block_upper[block, f, b])


# -- categorical columns of numbers to their codes ---------------------------------------------
# A categorical feature's categories are its distinct values, sorted; a value's code is its
# position among them, and a value that is not one of them (or is missing) becomes NaN.
# numpy did this with np.unique and a searchsorted per row and column: 0.6 s of a 1.4 s
# fit on 1M rows with 8 such columns, and 85 % of predicting 250k rows.


@njit(cache=True, nogil=True)
def number_spans(matrix, columns, n_present, lowest, highest, whole, infinite):
    """Over the present (non-NaN) values of each of ``matrix``'s ``columns[k]``, into the
    k-th entry of the outputs: how many, the smallest, the largest, whether all are whole
    numbers, whether any is infinite (one pass along the rows). Whole numbers of a short
    span find their categories by :func:`mark_whole_numbers`, with no sort."""
    n_present[:] = 0
    lowest[:] = np.inf
    highest[:] = -np.inf
    whole[:] = True
    infinite[:] = False
    for i in range(matrix.shape[0]):
        for k in range(columns.shape[0]):
            v = matrix[i, columns[k]]
            if v != v:
                continue
            n_present[k] += 1
            if abs(v) == np.inf:
                infinite[k] = True
                whole[k] = False
                continue
            lowest[k] = min(lowest[k], v)
            highest[k] = max(highest[k], v)
            if v != np.floor(v):
                whole[k] = False


@njit(cache=True, nogil=True)
def mark_whole_numbers(matrix, columns, lowest, seen, seen_start):
    """``seen[seen_start[k] + v - lowest[k]] = True`` for each present value v of column
    ``columns[k]``: whole numbers from ``lowest[k]`` that span less than
    ``seen_start[k + 1] - seen_start[k]`` (:func:`number_spans` said so)."""
    for i in range(matrix.shape[0]):
        for k in range(columns.shape[0]):
            v = matrix[i, columns[k]]
            if v == v:
                seen[seen_start[k] + int(v - lowest[k])] = True


@njit(parallel=True, cache=True)
def encode_number_categories(
    matrix, features, categories, category_start, tables, table_start, lowest
):
    """In place: each value of ``matrix``'s columns ``features[k]`` becomes its code, its
    position among the sorted ``categories[category_start[k]:category_start[k + 1]]``,
    or NaN where it is not one of them (missing values included).

    Whole-number categories spanning few values (``table_start[k + 1] > table_start[k]``)
    look a value up in their table, ``tables[table_start[k] + v - lowest[k]]`` (-1 for the
    whole numbers in the span that are not categories); others search their categories.
    Either way the code found is confirmed against the category itself."""
    for i in prange(matrix.shape[0]):
        for k in range(features.shape[0]):
            j = features[k]
            v = matrix[i, j]
            first, end = category_start[k], category_start[k + 1]
            code = -1
            if v == v and end > first:
                table_first, table_end = table_start[k], table_start[k + 1]
                if table_end > table_first:
                    offset = v - lowest[k]
                    if offset >= 0.0 and offset < table_end - table_first:
                        code = tables[table_first + int(offset)]
                else:
                    low, high = first, end  # the first category not below v
                    while low < high:
                        middle = (low + high) // 2
                        if categories[middle] < v:
                            low = middle + 1
                        else:
                            high = middle
                    code = low - first
                if code >= 0 and (code >= end - first or categories[first + code] != v):
                    code = -1
            matrix[i, j] = code if code >= 0 else np.nan


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())


def _lookup_cells(args):
    """build_bin_lookup's work: the cells of its lookup grid (features times cells)."""
    return args[3].size


def _coded_values(args):
    """encode_number_categories' work: its matrix's rows times the columns it codes."""
    return args[0].shape[0] * args[1].shape[0]


# Each pass's serial time per value (X's rows times features; the lookup's cells), the
# median over 1,000 to 100,000 rows of 28 features (float64, 2 % NaN; the lookup: 28 to
# 2,000 features of 256 bins): the parallel run pays only on calls of milliseconds
# (kernels/cpu/launch.py, PARALLEL_MIN_SECONDS).
nonfinite_columns = SerialWhenSmall(nonfinite_columns, seconds_per_unit=0.7e-9)
build_bin_lookup = SerialWhenSmall(build_bin_lookup, _lookup_cells, seconds_per_unit=1e-9)
bin_columns = SerialWhenSmall(bin_columns, seconds_per_unit=8e-9)
encode_number_categories = SerialWhenSmall(
    encode_number_categories, _coded_values, seconds_per_unit=5e-9
)
compilation.watch(
    {
        kernel.__name__: kernel.serial
        for kernel in (
            nonfinite_columns,
            build_bin_lookup,
            bin_columns,
            encode_number_categories,
        )
    }
)
