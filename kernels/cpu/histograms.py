"""Histograms on the CPU: dense and compact (a bin per distinct value among a node's
rows) histograms of a level's nodes, the larger siblings' by subtraction, the filled bins
the feature draws read, and extremely randomised trees' two-bin candidates."""

import hashlib
from pathlib import Path

import numpy as np
from numba import njit, prange

from .. import _random_split, compilation
from .._prefetch import ROWS_AHEAD, prefetch_item, prefetch_item_2d
from .launch import SerialWhenSmall, borrowing_njit, candidate_bins, node_values, rows_of_nodes


@njit(cache=True)
def feature_group_size(n_nodes, n_features, n_threads):
    """Features handled by one task: as many as keeps every thread busy (4 tasks each).

    A task reads each row's index, class and weight once for its whole group, so larger
    groups mean fewer redundant reads; too few tasks would leave threads idle.
    """
    tasks_wanted = 4 * n_threads
    groups_needed = max(1, -(-tasks_wanted // n_nodes))
    return max(1, min(n_features, -(-n_features // groups_needed)))


@njit(cache=True, inline="always")
def _holds_rows(hist, slot, f, b):
    """Whether bin b of feature f of histogram slot ``slot`` holds rows (any channel)."""
    for c in range(hist.shape[3]):
        if hist[slot, f, b, c] != 0:
            return True
    return False


@njit(parallel=True, cache=True)
def filled_bins(hist, slots, features, missing, use_missing, filled):
    """``filled[k, j]``: the bins of feature ``features[k, j]`` (``features`` (len(slots),
    m), or (1, m) for every slot) holding rows in histogram slot ``slots[k]`` (any
    channel non-zero; plus 1, where ``use_missing``, if ``missing`` (n_slots,
    n_features, n_channels; a stand-in otherwise) holds rows). The grower draws features
    among those filling more than one: the ones not constant in the node."""
    n_bins, n_channels = hist.shape[2], hist.shape[3]
    per_slot = features.shape[0] > 1
    for k in prange(slots.shape[0]):
        slot = slots[k]
        listed = features[np.int64(k) if per_slot else np.int64(0)]
        for j in range(listed.shape[0]):
            f = listed[j]
            count = 0
            for b in range(n_bins):
                if _holds_rows(hist, slot, f, b):
                    count += 1
            if use_missing:
                for c in range(n_channels):
                    if missing[slot, f, c] != 0:
                        count += 1
                        break
            filled[k, j] = count


@njit(cache=True, inline="always")
def group_task(task, n_features, group):
    """(node, first feature, end feature) of histogram task number ``task``."""
    n_groups = -(-n_features // group)
    first = (task % n_groups) * group
    return task // n_groups, first, min(n_features, first + group)


@njit(cache=True, inline="always")
def _listed_span(features, first, last):
    """The lowest and highest of ``features[first:last]``."""
    lowest = highest = features[first]
    for k in range(first + 1, last):
        lowest = min(lowest, features[k])
        highest = max(highest, features[k])
    return lowest, highest


@njit(parallel=True, cache=True)
def histograms_classification(
    X_binned,
    sample_indices,
    node_start,
    node_end,
    node_features,
    y_class,
    weight,
    weight_unit,
    unit_weight,
    count_channel,
    n_threads,
    hist,
):
    """Class-weight histograms for a batch of nodes; ``count_channel`` < 0 means none.

    ``node_features`` (n_nodes, k), or (1, k) for every node: the features whose
    histograms are built, ``hist[node, j]`` feature ``node_features[node, j]``'s (every
    feature, in order: ``hist[node, f]`` is feature f's; or a forest node's drawn
    features, the only ones it searches). One task per (node, group of its features):
    each task owns its histogram blocks, so no two threads write the same memory; it
    zeroes them first (``hist`` may hold anything: zeroed by the threads that fill it,
    the memory is touched once, in parallel). ``unit_weight``: every weight is 1 (not
    read). ``y_class``: the rows' class codes, of any integer type; a row weighs
    ``weight_unit * weight[i]`` (the CPU backend's weights as multiples of a unit where
    they are: one byte a row).
    """
    n_nodes = node_start.shape[0]
    n_listed = node_features.shape[1]
    per_node = node_features.shape[0] > 1
    group = feature_group_size(n_nodes, n_listed, n_threads)
    n_groups = -(-n_listed // group)
    row_major = X_binned.strides[0] < X_binned.strides[1]
    for task in prange(n_nodes * n_groups):
        node, first, last = group_task(task, n_listed, group)
        features = node_features[node if per_node else 0]
        lowest, highest = _listed_span(features, first, last)
        node_hist = hist[node]
        node_hist[first:last] = 0
        end = node_end[node]
        for j in range(node_start[node], end):
            if j + ROWS_AHEAD < end:  # a later row's codes, class and weight
                ahead = sample_indices[j + ROWS_AHEAD]
                if row_major:  # a row's codes lie between its lowest and highest feature's
                    prefetch_item_2d(X_binned, lowest, ahead)
                    prefetch_item_2d(X_binned, highest, ahead)
                else:
                    for k in range(first, last):
                        prefetch_item_2d(X_binned, features[k], ahead)
                prefetch_item(y_class, ahead)
                if not unit_weight:
                    prefetch_item(weight, ahead)
            i = sample_indices[j]
            c = y_class[i]
            w = 1 if unit_weight else weight_unit * weight[i]
            for k in range(first, last):
                b = X_binned[features[k], i]
                node_hist[k, b, c] += w
                if count_channel >= 0:
                    node_hist[k, b, count_channel] += 1


@njit(cache=True, nogil=True)
def weight_multiples(weight, multiples):
    """The weights (int64, none negative) as multiples of their smallest positive one,
    written to ``multiples`` (uint8): returns that unit, or 0 where there is none, some
    weight is no such multiple or is more than 255 units (``multiples`` then holds
    anything). Loops without branches (vectorised): a batch of a forest's trees holds
    millions of rows."""
    no_weight = np.iinfo(np.int64).max
    unit = no_weight
    for i in range(weight.shape[0]):
        unit = min(unit, weight[i] if weight[i] > 0 else no_weight)
    if unit == no_weight:
        return np.int64(0)
    largest = np.int64(np.iinfo(multiples.dtype).max)
    wrong = np.int64(0)
    if unit & (unit - 1) == 0:  # a power of two (unit sample weights): shifts
        shift = np.int64(0)
        while (np.int64(1) << shift) < unit:
            shift += 1
        for i in range(weight.shape[0]):
            multiple = weight[i] >> shift
            wrong |= (multiple > largest) | ((multiple << shift) != weight[i])
            multiples[i] = multiple
    else:
        inverse = 1.0 / unit
        for i in range(weight.shape[0]):
            # The float quotient may be off by one: the product checks it exactly.
            multiple = np.int64(weight[i] * inverse + 0.5)
            wrong |= (multiple > largest) | (multiple * unit != weight[i])
            multiples[i] = multiple
    return np.int64(0) if wrong else unit


@njit(parallel=True, cache=True)
def histograms_dense(
    X_binned, sample_indices, node_start, node_end, node_features, row_stats, n_threads, hist
):
    """Histograms of dense per-row statistics (regression: w, w*(y - centre)[, 1]);
    ``node_features``, tasks and zeroing as :func:`histograms_classification`'s."""
    n_nodes = node_start.shape[0]
    n_listed = node_features.shape[1]
    per_node = node_features.shape[0] > 1
    n_channels = row_stats.shape[1]
    group = feature_group_size(n_nodes, n_listed, n_threads)
    n_groups = -(-n_listed // group)
    for task in prange(n_nodes * n_groups):
        node, first, last = group_task(task, n_listed, group)
        features = node_features[node if per_node else 0]
        node_hist = hist[node]
        node_hist[first:last] = 0
        end = node_end[node]
        for j in range(node_start[node], end):
            if j + ROWS_AHEAD < end:  # a later row's codes and statistics
                ahead = sample_indices[j + ROWS_AHEAD]
                for k in range(first, last):
                    prefetch_item_2d(X_binned, features[k], ahead)
                prefetch_item_2d(row_stats, ahead, 0)
            i = sample_indices[j]
            for k in range(first, last):
                b = X_binned[features[k], i]
                for c in range(n_channels):
                    node_hist[k, b, c] += row_stats[i, c]


# Extremely randomised trees' split of a feature (kernels/_random_split.py), inlined here
# and in the subtree finisher; its source hash is in the kernels' cache keys.
_random_split_of_feature, _ = _random_split.make_random_split(borrowing_njit(forceinline=True))
RANDOM_SPLIT_SOURCE_HASH = hashlib.sha256(Path(_random_split.__file__).read_bytes()).hexdigest()


def _compile_random_split_histograms(source_hash):
    @njit(parallel=True, cache=True)
    def random_split_histograms(
        hist,
        slots,
        missing_bin,
        codes,
        lower,
        upper,
        uniform,
        out_hist,
        out_code,
        out_lower,
        out_upper,
    ):
        """Extremely randomised trees' candidates (``kernels/_random_split.py``): per node
        slot ``slots[k]`` and feature f, one threshold drawn uniformly between the node's
        lowest and highest value (``uniform[k, f]`` in [0, 1)), written as a compact
        histogram of two bins: ``out_hist[k, f, 0]`` the present bins up to the split,
        ``[1]`` the rest; ``out_code``, ``out_lower`` and ``out_upper`` their bounds: each
        collapsed bin's highest code, lowest and highest value (a split after a collapsed
        bin sends its codes and those below left). The outputs come zeroed: a side with no
        bin keeps its zeros.

        ``hist`` (slots, features, bins, channels): dense (bin b has code b;
        ``missing_bin`` its missing values' bin, skipped, -1: none) or compact (``codes``
        per slot). ``codes``, ``lower`` and ``upper``: (slots or 1, features, bins), each
        first axis broadcast where 1."""
        source_hash  # noqa: B018 - in the cache key only
        n_features, n_bins = hist.shape[1], hist.shape[2]
        for k in prange(slots.shape[0]):
            slot = slots[k]
            at = slot if lower.shape[0] > 1 else 0
            code_at = slot if codes.shape[0] > 1 else 0  # broadcast apart: exact mode's one row
            split_codes = np.empty(3, dtype=np.int64)
            bounds = np.empty(4)
            for f in range(n_features):
                present = _random_split_of_feature(
                    hist,
                    slot,
                    f,
                    n_bins,
                    missing_bin,
                    codes[code_at, f],
                    lower[at, f],
                    upper[at, f],
                    uniform[k, f],
                    out_hist[k, f],
                    split_codes,
                    bounds,
                )
                if not present:
                    continue
                out_code[k, f, 0] = split_codes[0]
                out_lower[k, f, 0] = bounds[0]
                out_upper[k, f, 0] = bounds[1]
                if split_codes[2] >= 0:
                    # A split at bin 1 sends every present value left: its code is the last.
                    out_code[k, f, 1] = split_codes[1]
                    out_lower[k, f, 1] = bounds[2]
                    out_upper[k, f, 1] = bounds[3]

    return random_split_histograms


random_split_histograms = _compile_random_split_histograms(RANDOM_SPLIT_SOURCE_HASH)


@njit(parallel=True, cache=True)
def subtract_histograms(hist, parent_slots, child_hist, out):
    """``out[k] = hist[parent_slots[k]] - child_hist[k]``: the larger siblings' histograms
    from their parents' and the smaller siblings' (the subtraction trick), in one
    parallel pass (a copy then a subtraction read the memory twice, the copy serially)."""
    for k in prange(parent_slots.shape[0]):
        parent = hist[parent_slots[k]]
        child = child_hist[k]
        target = out[k]
        for f in range(parent.shape[0]):
            for b in range(parent.shape[1]):
                for c in range(parent.shape[2]):
                    target[f, b, c] = parent[f, b, c] - child[f, b, c]


# Below this many rows a node's values are ordered by insertion sort (no allocation).
_INSERTION_SORT_ROWS = 32


@njit(parallel=True, cache=True)
def compact_histograms(
    columns, sample_indices, node_start, node_end, row_stats, missing_code, hist, values, missing
):
    """Per node and feature, one compact bin per distinct value among the node's rows, in
    increasing order, holding the summed row statistics.

    Exact mode runs it on raw values (every midpoint is a candidate, as in Zaki and
    Meira's Algorithm 19.2);
    histogram mode runs it on bin codes for nodes with fewer rows than bins, where a
    dense histogram would mostly hold empty bins. Cost follows the node's rows, not
    the number of bins.

    ``hist`` (n_nodes, n_features, width, n_channels) comes in zeroed and ``values``
    (n_nodes, n_features, width) filled with +inf; width >= the largest node's rows.
    Missing values (NaN, or ``missing_code``) are summed apart, into ``missing``
    (n_nodes, n_features, n_channels), zeroed on entry.
    """
    n_nodes = node_start.shape[0]
    n_features = columns.shape[0]
    n_channels = row_stats.shape[1]
    for node in prange(n_nodes):
        start = node_start[node]
        n_rows = node_end[node] - start
        keys = np.empty(n_rows, dtype=np.float64)
        order = np.empty(n_rows, dtype=np.int64)
        rows = np.empty(n_rows, dtype=np.int64)
        for f in range(n_features):
            column = columns[f]
            n_present = 0
            for j in range(n_rows):
                i = sample_indices[start + j]
                x = column[i]
                if x != x or x == missing_code:
                    for c in range(n_channels):
                        missing[node, f, c] += row_stats[i, c]
                else:
                    keys[n_present] = x
                    rows[n_present] = i
                    n_present += 1
            if n_present <= _INSERTION_SORT_ROWS:
                for j in range(n_present):
                    order[j] = j
                for j in range(1, n_present):
                    k = order[j]
                    t = j - 1
                    while t >= 0 and keys[order[t]] > keys[k]:
                        order[t + 1] = order[t]
                        t -= 1
                    order[t + 1] = k
            else:
                order[:n_present] = np.argsort(keys[:n_present], kind="mergesort")
            compact_bin = -1
            previous = 0.0
            for j in range(n_present):
                k = order[j]
                x = keys[k]
                if compact_bin < 0 or x != previous:
                    compact_bin += 1
                    values[node, f, compact_bin] = x
                    previous = x
                i = rows[k]
                for c in range(n_channels):
                    hist[node, f, compact_bin, c] += row_stats[i, c]


@njit(nogil=True, cache=True)
def compact_rows(hist, slots, nonempty, compact, bin_index):
    """Copy each (node, feature) row of the histograms ``hist[slots]`` (histogram slots)
    with its non-empty bins first, in bin order; ``bin_index`` gets the bin at each
    position of the compacted row (-1 past them).

    ``compact`` (len(slots), n_features, width, n_channels) comes in zeroed. One pass,
    where the array-namespace version needs index arrays and gathers. Serial and without
    the GIL: split selection already runs its chunks on parallel threads.
    """
    n_features = hist.shape[1]
    n_bins = hist.shape[2]
    n_channels = hist.shape[3]
    width = compact.shape[2]
    for task in range(slots.shape[0] * n_features):
        k = task // n_features
        f = task % n_features
        slot = slots[k]
        position = 0
        for b in range(n_bins):
            if nonempty[slot, f, b]:
                for c in range(n_channels):
                    compact[k, f, position, c] = hist[slot, f, b, c]
                bin_index[k, f, position] = b
                position += 1
        for rest in range(position, width):
            bin_index[k, f, rest] = -1


@njit(parallel=True, cache=True)
def compact_code_histograms(
    X_binned,
    sample_indices,
    node_start,
    node_end,
    row_stats,
    missing_bin,
    bin_lower,
    bin_upper,
    hist,
    code,
    lower,
    upper,
    missing,
):
    """:func:`compact_histograms` for bin codes: compact bins in code order without
    sorting.

    Codes are small integers: the codes present are collected with a presence table, then
    put in order by insertion sort when few, or by scanning the table when many, so a
    node costs about its rows, not its sort. Writes, per compact bin, the summed
    row statistics (``hist``, zeroed on entry), the bin ``code`` (-1 past the codes present)
    and that bin's value bounds (``lower``/``upper``, +inf past them); rows in
    ``missing_bin`` are summed into ``missing`` (zeroed on entry).
    """
    n_nodes = node_start.shape[0]
    n_features = X_binned.shape[0]
    n_bins = bin_lower.shape[1]
    n_channels = row_stats.shape[1]
    width = hist.shape[2]
    for node in prange(n_nodes):
        start = node_start[node]
        end = node_end[node]
        compact_bin_of_code = np.full(n_bins, -1, dtype=np.int64)
        distinct = np.empty(n_bins, dtype=np.int64)
        for f in range(n_features):
            n_present = 0
            for j in range(start, end):
                b = X_binned[f, sample_indices[j]]
                if b != missing_bin and compact_bin_of_code[b] < 0:
                    compact_bin_of_code[b] = 0
                    distinct[n_present] = b
                    n_present += 1
            if n_present * n_present <= n_bins:
                # Few codes: insertion sort them (cheaper than scanning every bin).
                for k in range(1, n_present):
                    b = distinct[k]
                    t = k - 1
                    while t >= 0 and distinct[t] > b:
                        distinct[t + 1] = distinct[t]
                        t -= 1
                    distinct[t + 1] = b
            else:
                # Many codes: the presence table, scanned in code order.
                k = 0
                for b in range(n_bins):
                    if compact_bin_of_code[b] >= 0:
                        distinct[k] = b
                        k += 1
            for k in range(n_present):
                b = distinct[k]
                compact_bin_of_code[b] = k
                code[node, f, k] = b
                lower[node, f, k] = bin_lower[f, b]
                upper[node, f, k] = bin_upper[f, b]
            for k in range(n_present, width):
                code[node, f, k] = -1
                lower[node, f, k] = np.inf
                upper[node, f, k] = np.inf
            for j in range(start, end):
                i = sample_indices[j]
                b = X_binned[f, i]
                if b == missing_bin:
                    for c in range(n_channels):
                        missing[node, f, c] += row_stats[i, c]
                else:
                    compact_bin = compact_bin_of_code[b]
                    for c in range(n_channels):
                        hist[node, f, compact_bin, c] += row_stats[i, c]
            for j in range(start, end):  # reset only what was set
                b = X_binned[f, sample_indices[j]]
                if b != missing_bin:
                    compact_bin_of_code[b] = -1


def _listed_values(args):
    """Codes read by a histogram kernel: the rows of its nodes (arguments 2 and 3) times
    the features listed per node (argument 4)."""
    return rows_of_nodes(args, 2) * args[4].shape[1]


def _histogram_cells(args):
    """Cells written by the subtraction: its slots (argument 1) times a histogram's."""
    return args[1].size * args[0][0].size


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())
filled_bins = SerialWhenSmall(filled_bins, candidate_bins)
random_split_histograms = SerialWhenSmall(random_split_histograms, candidate_bins)
subtract_histograms = SerialWhenSmall(subtract_histograms, _histogram_cells)
histograms_classification = SerialWhenSmall(histograms_classification, _listed_values)
histograms_dense = SerialWhenSmall(histograms_dense, _listed_values)
compact_histograms = SerialWhenSmall(compact_histograms, node_values)
compact_code_histograms = SerialWhenSmall(compact_code_histograms, node_values)
compilation.watch(
    {
        kernel.__name__: kernel.serial
        for kernel in (
            filled_bins,
            random_split_histograms,
            subtract_histograms,
            histograms_classification,
            histograms_dense,
            compact_histograms,
            compact_code_histograms,
        )
    }
)
