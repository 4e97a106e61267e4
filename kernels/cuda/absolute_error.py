"""CUDA kernels of the absolute-error criterion (scikit-learn's ``"absolute_error"``): the
GPU's twin of :mod:`.cpu_absolute_error`, with the same integers and so the same trees.

A level's open nodes are searched together. The host orders each node's rows by target
(a stable sort: ties by row number, as the CPU ranks them) and hands the kernels that
order, node by node (``order[node_start[s]:node_start[s] + node_size[s]]`` for slot s):

- :func:`node_median_errors`, a thread per node: its weighted median and absolute error
  (one output per launch) from the sums the host finds for every node at once
  (cumulative sums over all the rows in target order: no thread walks a node's rows);
- :func:`candidate_errors`, a thread per (node, column, bin b): the four sets a split
  after bin b makes of the node's rows (present codes <= b, alone and with the missing
  rows, and the rest), each set's median and error. Each set's weight and weighted
  target come from the level's histogram (O(bins)); one walk of the rows in target order
  finds each set's median. The threads of a warp take neighbouring bins of one column,
  so they read the same rows;
- :func:`choose_splits`, a thread per (node, column): the CPU search's loop over the
  candidates (the same rules and ties: :mod:`._median_errors`), or one drawn split's
  score (extremely randomised trees).

Every sum is an integer (the rows' fixed-point statistics), so the medians and errors
are :mod:`._median_errors`'s arithmetic on the same integers as the CPU's Fenwick tree
reaches. The work is a scan of a node's rows per candidate: O(rows x bins) per feature
and level, against the CPU's O(rows log rows) per feature, spread over
nodes x columns x bins threads.
"""

import hashlib
import math
from pathlib import Path

import numpy as np
from numba import config

from .. import _median_errors as _medians
from .. import _split_scan as _scan
from .. import _tree_walk as _walk
from .. import compilation
from .api import cuda, device_function

# Where no folder can hold numba's cache, the kernels below compile uncached.
compilation.allow_uncached_cuda(cuda)

# The kernels inline _median_errors.py; numba keys its cache on this file alone, so they
# take its source hash as a closure variable (see kernels/cuda/launch.py).
MEDIAN_ERRORS_SOURCE_KEY = int(
    hashlib.sha256(b"".join(Path(m.__file__).read_bytes() for m in (_medians, _walk))).hexdigest()[
        :15
    ],
    16,
)

# The four sets of a candidate split after bin b, on the last axis of the candidate
# arrays: present codes <= b (left, the missing rows right), the rest (its right side),
# present codes <= b and the missing rows (left, the missing rows left), the rest.
LEFT, RIGHT_WITH_MISSING, LEFT_WITH_MISSING, RIGHT = range(4)
N_SETS = 4


def _unfused_product(a, b):
    """``a * b`` as libdevice's ``dmul_rn``, which NVVM never fuses into an addition: the
    side error's exact products need every product rounded (kernels/_split_scan.py)."""
    return cuda.libdevice.dmul_rn(a, b)


# The simulator runs plain Python arithmetic and has no libdevice.
_product = device_function(cache=True)(
    _scan.plain_product if config.ENABLE_CUDASIM else _unfused_product
)

_exceeds_half = device_function(cache=True)(_medians.exceeds_half)
_reaches_half = device_function(cache=True)(_medians.reaches_half)
_median_of = device_function(cache=True)(_medians.median_of)
_side_error = _medians.make_side_error(device_function(cache=True), _product)
_admissible = device_function(cache=True)(_medians.admissible)
_missing_go_left = device_function(cache=True)(_medians.missing_go_left)
_leaves_allowed = device_function(cache=True)(_medians.leaves_allowed)


_stored_position = device_function(cache=True)(_walk.stored_position)


@device_function(inline=True, cache=True)
def _code_at(codes, sparse, indptr, indices, stored, zero_code, f, row):
    """Row ``row``'s bin code of feature ``f``: ``codes[f, row]``, or for a sparse X
    (``sparse``) its stored value's code, found by a binary search of the row's stored
    columns (CSR ``indptr``, ``indices``, ``stored``), else the feature's zero bin."""
    if not sparse:
        return codes[f, row]
    k = _stored_position(indptr, indices, row, f)
    if k >= 0:
        return stored[k]
    return zero_code[f]


@device_function(inline=True, cache=True)
def _row_weight(row_stats, weight_column, row):
    """A row's fixed-point weight: 1 in an unweighted fit (``weight_column`` -1)."""
    if weight_column < 0:
        return 1
    return row_stats[row, weight_column]


def _compile(source_key):
    @cuda.jit(cache=True)
    def node_median_errors(
        total_w,
        total_wy,
        w_below,
        wy_below,
        y_low,
        y_high,
        weight_scale,
        sum_scale,
        output,
        medians,
        errors,
    ):
        """Per slot: the weighted median of output ``output`` into
        ``medians[slot, output]`` and its absolute error into ``errors[slot, output]``,
        from the node's integer sums (``total_w``, ``total_wy``), those of its rows before
        the median's (``w_below``, ``wy_below``), the target of the first row past half
        (``y_high``) and of the first reaching half (``y_low``): the host finds them for
        every node at once, with cumulative sums over the rows in target order."""
        source_key  # noqa: B018 - in the cache key only
        start = cuda.grid(1)
        for slot in range(start, total_w.size, cuda.gridsize(1)):
            median = _median_of(y_low[slot], y_high[slot], w_below[slot], total_w[slot])
            medians[slot, output] = median
            errors[slot, output] = _side_error(
                w_below[slot],
                wy_below[slot],
                total_w[slot],
                total_wy[slot],
                median,
                weight_scale,
                sum_scale,
            )

    @cuda.jit(cache=True)
    def candidate_errors(
        order,
        node_start,
        node_size,
        hist,
        hist_slot,
        hist_sum_channel,
        count_channel,
        codes,
        sparse,
        indptr,
        indices,
        stored,
        zero_code,
        feature_of,
        missing_bin,
        n_present_bins,
        centred,
        row_stats,
        weight_column,
        sum_column,
        weight_scale,
        sum_scale,
        first_output,
        errors,
        medians,
        left_counts,
        left_weights,
        missing_counts,
        missing_weights,
    ):
        """Per (slot, column, bin b < n_present_bins): the error and median of each of the
        four sets (LEFT ... RIGHT) that a split after bin b of the column's feature
        (``feature_of[slot, column]``; the rows' codes as :func:`_code_at` reads them)
        makes of the slot's rows. The sets' sums come from the level's histograms
        (``hist[hist_slot[slot], column]``: the weight channel 0, the output's sum channel
        ``hist_sum_channel`` and the row counts in ``count_channel``, -1: the weight
        channel's, an unweighted fit's): O(bins); then one walk of the rows in target
        order finds every set's median.
        ``errors`` (n_slots, n_columns, n_present_bins, 4) is set by the first output and
        added to by the others; ``medians`` (the same shape) holds the first output's, the
        one monotonicity constraints read. The first output also writes the count and
        fixed-point weight of the present rows of bins <= b (``left_counts``,
        ``left_weights``, (n_slots, n_columns, n_present_bins)) and, at b = 0, of the
        missing rows (``missing_counts``, ``missing_weights``, (n_slots, n_columns))."""
        source_key  # noqa: B018 - in the cache key only
        n_columns = feature_of.shape[1]
        per_slot = n_columns * n_present_bins
        n_tasks = node_size.size * per_slot
        totals_w = cuda.local.array(N_SETS, np.int64)
        totals_wy = cuda.local.array(N_SETS, np.int64)
        n_sets = cuda.local.array(N_SETS, np.int64)
        cum_w = cuda.local.array(N_SETS, np.int64)
        cum_wy = cuda.local.array(N_SETS, np.int64)
        y_low = cuda.local.array(N_SETS, np.float64)
        member = cuda.local.array(N_SETS, np.bool_)
        done = cuda.local.array(N_SETS, np.bool_)
        start = cuda.grid(1)
        for task in range(start, n_tasks, cuda.gridsize(1)):
            slot = task // per_slot
            column = (task - slot * per_slot) // n_present_bins
            b = task - slot * per_slot - column * n_present_bins
            f = feature_of[slot, column]
            first, n = node_start[slot], node_size[slot]
            h = hist_slot[slot]
            # The sums of the present rows of bins <= b, of the missing rows and of all
            # the node's rows, from its histogram.
            n_left = 0
            n_missing = 0
            w_left = 0
            wy_left = 0
            w_missing = 0
            wy_missing = 0
            w_all = 0
            wy_all = 0
            for k in range(hist.shape[2]):
                w = hist[h, column, k, 0]
                wy = hist[h, column, k, hist_sum_channel]
                rows = w if count_channel < 0 else hist[h, column, k, count_channel]
                w_all += w
                wy_all += wy
                if k == missing_bin:
                    n_missing += rows
                    w_missing += w
                    wy_missing += wy
                elif k <= b:
                    n_left += rows
                    w_left += w
                    wy_left += wy
            totals_w[LEFT], totals_wy[LEFT] = w_left, wy_left
            totals_w[RIGHT_WITH_MISSING] = w_all - w_left
            totals_wy[RIGHT_WITH_MISSING] = wy_all - wy_left
            totals_w[LEFT_WITH_MISSING] = w_left + w_missing
            totals_wy[LEFT_WITH_MISSING] = wy_left + wy_missing
            totals_w[RIGHT] = w_all - w_left - w_missing
            totals_wy[RIGHT] = wy_all - wy_left - wy_missing
            n_sets[LEFT], n_sets[RIGHT_WITH_MISSING] = n_left, n - n_left
            n_sets[LEFT_WITH_MISSING] = n_left + n_missing
            n_sets[RIGHT] = n - n_left - n_missing
            n_open = 0
            for s in range(N_SETS):
                cum_w[s] = 0
                cum_wy[s] = 0
                y_low[s] = math.nan
                done[s] = n_sets[s] == 0
                if not done[s]:
                    n_open += 1
                if first_output:
                    errors[slot, column, b, s] = 0.0
                    medians[slot, column, b, s] = math.nan
            # Pass 2: each set's rows in target order, up to its median.
            q = first
            while n_open > 0 and q < first + n:
                row = order[q]
                q += 1
                w = _row_weight(row_stats, weight_column, row)
                code = _code_at(codes, sparse, indptr, indices, stored, zero_code, f, row)
                is_missing = code == missing_bin
                is_left = (not is_missing) and code <= b
                member[LEFT] = is_left
                member[RIGHT_WITH_MISSING] = not is_left
                member[LEFT_WITH_MISSING] = is_left or is_missing
                member[RIGHT] = not (is_left or is_missing)
                for s in range(N_SETS):
                    if done[s] or not member[s]:
                        continue
                    grown = cum_w[s] + w
                    if y_low[s] != y_low[s] and _reaches_half(grown, totals_w[s]):
                        y_low[s] = centred[row]
                    if _exceeds_half(grown, totals_w[s]):
                        median = _median_of(y_low[s], centred[row], cum_w[s], totals_w[s])
                        errors[slot, column, b, s] += _side_error(
                            cum_w[s],
                            cum_wy[s],
                            totals_w[s],
                            totals_wy[s],
                            median,
                            weight_scale,
                            sum_scale,
                        )
                        if first_output:
                            medians[slot, column, b, s] = median
                        done[s] = True
                        n_open -= 1
                        continue
                    cum_w[s] = grown
                    cum_wy[s] += row_stats[row, sum_column]
            if first_output:
                left_counts[slot, column, b] = n_left
                left_weights[slot, column, b] = w_left
                if b == 0:
                    missing_counts[slot, column] = n_missing
                    missing_weights[slot, column] = w_missing

    @cuda.jit(cache=True)
    def choose_splits(
        errors,
        medians,
        left_counts,
        left_weights,
        missing_counts,
        missing_weights,
        node_size,
        node_weight,
        parent_error,
        tolerance,
        drawn_bin,
        min_samples_leaf,
        min_weight_leaf,
        weight_scale,
        csts,
        lower,
        upper,
        gain,
        low_bin,
        next_bin,
        missing_left,
    ):
        """Per (slot, column): the best split of the candidates (:func:`candidate_errors`'s
        arrays), as the CPU's ``best_absolute_error_split`` chooses it among the bins that
        hold rows; or, where ``drawn_bin[slot, column]`` >= 0, the score of that one split,
        as ``drawn_absolute_error_splits``. Writes the improvement (``gain``, -inf: none),
        the split's bin (``low_bin``) and the next bin holding rows (``next_bin``, -1:
        none, the present-left, missing-right split), and where the missing rows go.
        ``csts`` (n_slots, n_columns): each column's monotonicity constraint, ``lower`` and
        ``upper`` the slots' bounds."""
        source_key  # noqa: B018 - in the cache key only
        n_slots, n_columns, n_bins = left_counts.shape
        start = cuda.grid(1)
        for task in range(start, n_slots * n_columns, cuda.gridsize(1)):
            slot = task // n_columns
            column = task - slot * n_columns
            n = node_size[slot]
            total_w = node_weight[slot]
            parent = parent_error[slot]
            tol = tolerance[slot]
            cst = csts[slot, column]
            n_missing = missing_counts[slot, column]
            fixed_missing = missing_weights[slot, column]
            n_present = n - n_missing
            chosen = drawn_bin[slot, column]
            best = -math.inf
            best_bin = -1
            best_next = -1
            best_missing_left = False
            previous = 0
            for b in range(n_bins):
                k = left_counts[slot, column, b]  # present rows left
                if chosen >= 0:
                    if b != chosen:
                        continue
                    if k == 0 or k == n_present:
                        break
                elif k == previous:
                    continue  # bin b holds no row: no candidate of its own
                if chosen < 0 and best_bin >= 0 and best_next < 0:
                    best_next = b  # the next bin holding rows after the best one's
                previous = k
                j = n_present - k  # present rows right
                if chosen < 0 and j == 0 and n_missing == 0:
                    break  # every row left
                score_right = -math.inf  # missing rows right
                score_left = -math.inf  # missing rows left
                for side in range(2):
                    if side == 1 and (n_missing == 0 or (chosen < 0 and j == 0)):
                        continue
                    if not _leaves_allowed(
                        k + side * n_missing,
                        n,
                        left_weights[slot, column, b] + side * fixed_missing,
                        total_w,
                        weight_scale,
                        min_samples_leaf,
                        min_weight_leaf,
                    ):
                        continue
                    left_set = LEFT if side == 0 else LEFT_WITH_MISSING
                    right_set = RIGHT_WITH_MISSING if side == 0 else RIGHT
                    if not _admissible(
                        cst,
                        lower[slot],
                        upper[slot],
                        medians[slot, column, b, left_set],
                        medians[slot, column, b, right_set],
                    ):
                        continue
                    score = (
                        parent
                        - errors[slot, column, b, left_set]
                        - errors[slot, column, b, right_set]
                    )
                    if side == 0:
                        score_right = score
                    else:
                        score_left = score
                go_left = _missing_go_left(score_left, score_right, n_missing, k, j, tol)
                # The larger (numba's built-in CUDA target cannot assemble max() here).
                improvement = score_left if score_left > score_right else score_right
                if chosen >= 0:
                    best = improvement
                    best_bin = b
                    best_missing_left = go_left
                    break
                if improvement > best + tol:
                    best = improvement
                    best_bin = b
                    best_next = -1  # set at the next bin holding rows, if any
                    best_missing_left = go_left
            gain[slot, column] = best
            low_bin[slot, column] = best_bin
            next_bin[slot, column] = best_next
            missing_left[slot, column] = best_missing_left

    return node_median_errors, candidate_errors, choose_splits


node_median_errors, candidate_errors, choose_splits = _compile(MEDIAN_ERRORS_SOURCE_KEY)

# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())
