"""The split search of fits with categorical features, compiled (CPU): every feature of a
node, numeric and categorical, scored and the node's winner chosen in one pass per node.

The vectorised search of ``gpu_tree.growing.splitting`` (``_score_categorical`` and
``_CategoricalScores``) is the reference, and this is its twin, as
``kernels/_split_scan.py`` is the numeric search's: the same candidates in the same
order, scored by the same arithmetic (the split scan's helpers), the same ties. Where the
vectorised search pads every (node, feature) row to the chunk's widest and scores every
padded position, this one visits only the categories present at the node: a node
holding k categories of a feature costs k prefixes per ordering (and, for multiclass
targets, its subsets of at most ``max_subset`` categories), whatever the other nodes or
the feature's category count.

Candidates of a categorical feature, in the reference's order (ties, scores within the
tolerance, go to the earlier):

- binary subset splits: prefixes of the present categories sorted by a statistic (one
  ordering for binary targets and regression, one per class for multiclass targets;
  ties by code: a stable sort), the orderings scored in groups of
  ``orderings_per_pass`` (the reference's passes: each group's first candidate within
  the tolerance of its best is offered, and replaces the best so far only when better
  by more than the tolerance); then, multiclass only, every subset of at most
  ``max_subset`` categories where the node holds at most ``subset_limit``, in the order
  of the reference's subset table (sizes ascending, each size lexicographic), offered in
  groups of ``subsets_per_pass`` table rows;
- multiway splits: one candidate, a branch per present category, the missing rows in
  the largest branch (the first of the largest).

A node's winner is its first feature within the tolerance of the best feature
(``_split_scan``'s ``choose_winner``).
"""

import hashlib
import math
from pathlib import Path

import numpy as np
from numba import njit

from .. import _split_scan as _scan
from .. import compilation, log2
from .launch import borrowing_njit
from .split_scan import SPLIT_SCAN_HELPERS

# The level-wise numeric search's helpers (kernels/cpu/split_scan.py), inlined and without
# reference counting: one compile of each where the types agree.
_helpers = SPLIT_SCAN_HELPERS
_node_totals, _score_feature = _helpers["node_totals"], _helpers["score_feature"]
_candidate = _helpers["candidate"]
_tolerance = _helpers["tolerance"]
_weighted_impurity = _helpers["weighted_impurity"]
_weight_of = _helpers["weight_of"]
_count_of = _helpers["count_of"]
_row_count = _helpers["row_count"]
_plog2p = _helpers["plog2p"]
_channel = _helpers["channel"]

LEFT, RIGHT, PARENT = _scan.LEFT, _scan.RIGHT, _scan.PARENT
GAIN_RATIO, SQUARED_ERROR = _scan.GAIN_RATIO, _scan.SQUARED_ERROR
WINNER_FEATURE, WINNER_BIN = _scan.WINNER_FEATURE, _scan.WINNER_BIN
WINNER_NEXT_BIN, WINNER_MISSING_LEFT = _scan.WINNER_NEXT_BIN, _scan.WINNER_MISSING_LEFT
WINNER_SCORE, WINNER_NODE_WEIGHT = _scan.WINNER_SCORE, _scan.WINNER_NODE_WEIGHT
WINNER_FIXED_COLUMNS = _scan.WINNER_FIXED_COLUMNS

# The families of binary subset candidates (a feature's result column 3 holds the family,
# column 4 the candidate's index in it).
ORDERING_PREFIX, SMALL_SUBSET = 0, 1
RESULT_COLUMNS = 6  # score, divisor, missing left, family or position, index, default

# Orderings of at most this many present categories are sorted in place (insertion sort:
# no allocation, quicker than a merge sort at these sizes); longer ones by np.argsort.
INSERTION_SORT_MOST = 48

# The cache key follows the split scan's source too (numba keys on this file only).
SOURCE_HASH = hashlib.sha256(
    Path(_scan.__file__).read_bytes()
    + Path(log2.__file__).read_bytes()
    + Path(__file__).read_bytes()
).hexdigest()


# Each kernel is made by a factory of its own, whose closure holds the sources' hash (in
# numba's cache key: an edit to _split_scan.py recompiles them), and calls the others as
# module globals: a closure variable holding a dispatcher would give a new cache key in
# every process, and the kernels would compile on every run.
def _compile_first_near_max(source_hash):
    @borrowing_njit(cache=True)
    def first_near_max(score, divisor, m, criterion, node, rtol):
        """Index of the first of ``score[:m]`` within the tolerance of their maximum
        (splitting._first_near_max)."""
        source_hash  # noqa: B018 - in the cache key only
        at = 0
        best = score[0]
        for j in range(1, m):
            if score[j] > best:
                best = score[j]
                at = j
        limit = best - _tolerance(criterion, node[0], node[1], best, divisor[at], rtol)
        for j in range(m):
            if score[j] >= limit:
                return j
        return at

    return first_near_max


first_near_max = _compile_first_near_max(SOURCE_HASH)


def _compile_offer(source_hash):
    @borrowing_njit(cache=True)
    def offer(result, score, divisor, missing_left, family, index, criterion, node, rtol):
        """The best candidate of a group replaces the best so far (``result``) only when
        better by more than the tolerance (splitting._CategoricalScores.offer)."""
        source_hash  # noqa: B018 - in the cache key only
        tied = result[0] >= score - _tolerance(criterion, node[0], node[1], score, divisor, rtol)
        if score > result[0] and not tied:
            result[0] = score
            result[1] = divisor
            result[2] = missing_left
            result[3] = family
            result[4] = index

    return offer


offer = _compile_offer(SOURCE_HASH)


def _compile_ordering(source_hash):
    @njit(cache=True)
    def ordering(compact, i, f, k, o, scale, n_classes, keys, order):
        """``order[:k]``: the present positions sorted by ordering ``o``'s key (the mean
        target, P(class 1) or P(class o)), stable (splitting._category_order_keys)."""
        source_hash  # noqa: B018 - in the cache key only
        key_channel = 1 if n_classes == 0 or n_classes == 2 else o
        n_weight = 1 if n_classes == 0 else n_classes
        for p in range(k):
            weight = 0.0
            for c in range(n_weight):
                weight += float(compact[i, f, p, c]) * scale[c]
            safe = weight if weight > 0.0 else 1.0
            keys[p] = float(compact[i, f, p, key_channel]) * scale[key_channel] / safe
        if k > INSERTION_SORT_MOST:
            sorted_positions = np.argsort(keys[:k], kind="mergesort")
            for p in range(k):
                order[p] = sorted_positions[p]
            return
        # A stable insertion sort: the same order as the merge sort, without allocating.
        for p in range(k):
            key = keys[p]
            q = p
            while q > 0 and keys[order[q - 1]] > key:
                order[q] = order[q - 1]
                q -= 1
            order[q] = p

    return ordering


ordering = _compile_ordering(SOURCE_HASH)


def _compile_table_index(source_hash):
    @borrowing_njit(cache=True)
    def table_index(members, s, most, binom, offsets):
        """The row of subset ``members[:s]`` in the reference's subset table of ``most``
        categories (``splitting._subset_table``): sizes ascending, each lexicographic."""
        source_hash  # noqa: B018 - in the cache key only
        rank = 0
        previous = -1
        for j in range(s):
            rank += binom[most - previous - 1, s - j] - binom[most - members[j], s - j]
            previous = members[j]
        return offsets[s] + rank

    return table_index


table_index = _compile_table_index(SOURCE_HASH)


def _compile_next_subset(source_hash):
    @borrowing_njit(cache=True)
    def next_subset(members, s, k):
        """The next subset of ``s`` of range(k) in lexicographic order; False after the
        last."""
        source_hash  # noqa: B018 - in the cache key only
        j = s - 1
        while j >= 0 and members[j] == k - s + j:
            j -= 1
        if j < 0:
            return False
        members[j] += 1
        for t in range(j + 1, s):
            members[t] = members[t - 1] + 1
        return True

    return next_subset


next_subset = _compile_next_subset(SOURCE_HASH)


def _compile_subset_at(source_hash):
    @borrowing_njit(cache=True)
    def subset_at(seq, k, max_subset, members):
        """The ``seq``-th subset (sizes ascending, each lexicographic) of range(k); its
        size."""
        source_hash  # noqa: B018 - in the cache key only
        for s in range(1, min(max_subset, k) + 1):
            for t in range(s):
                members[t] = t
            while True:
                if seq == 0:
                    return s
                seq -= 1
                if not next_subset(members, s, k):
                    break
        return 0

    return subset_at


subset_at = _compile_subset_at(SOURCE_HASH)


def _compile_subset_sum(source_hash):
    @borrowing_njit(cache=True)
    def subset_sum(compact, i, f, members, s, prefix):
        source_hash  # noqa: B018 - in the cache key only
        n_channels = compact.shape[3]
        for c in range(n_channels):
            prefix[c] = 0
        for t in range(s):
            for c in range(n_channels):
                prefix[c] += compact[i, f, members[t], c]

    return subset_sum


subset_sum = _compile_subset_sum(SOURCE_HASH)


def _compile_search_scratch(source_hash):
    @njit(cache=True)
    def search_scratch(n_features, width, n_channels, n_classes, max_subset):
        """The scratch arrays of :func:`score_nodes` for histograms of ``n_features``
        features and at most ``width`` present bins: allocated once per batch (or, in
        the subtree finisher, once per call) instead of once per node and feature."""
        source_hash  # noqa: B018 - in the cache key only
        per_group = max(n_classes, 1) * width  # the candidates of a pass of orderings
        return (
            np.empty(2),  # the node's weight and weighted sum
            np.empty(2),  # a feature's parent (impurity term, weight)
            np.empty(3 * (width + 1)),  # a candidate's score, divisor, missing side; per bin
            np.empty(n_channels, dtype=np.int64),  # a prefix's statistics
            np.empty((n_features, n_channels), dtype=np.int64),  # present rows per feature
            np.empty((n_features, RESULT_COLUMNS)),  # each feature's best
            np.empty(max(max_subset, 1), dtype=np.int64),  # a small subset's members
            np.empty(width),  # ordering keys
            np.empty(width, dtype=np.int64),  # an ordering
            np.empty(per_group),  # a pass's scores,
            np.empty(per_group),  # divisors
            np.empty(per_group),  # and missing sides
        )

    return search_scratch


search_scratch = _compile_search_scratch(SOURCE_HASH)


def _compile_score_subsets(source_hash):
    @njit(cache=True)
    def score_subsets(
        compact,
        i,
        f,
        k,
        total,
        missing_row,
        use_missing,
        has_missing,
        scale,
        criterion,
        n_classes,
        count_channel,
        msl,
        mwl,
        rtol,
        node,
        parent,
        max_subset,
        most,
        binom,
        offsets,
        per_pass,
        prefix,
        scored,
        result,
    ):
        """Offer every subset of at most ``max_subset`` of the k present categories, in
        the reference's groups of ``per_pass`` table rows."""
        source_hash  # noqa: B018 - in the cache key only
        # The helpers' ``outputs``: one output (the only kind searched here).
        outputs = np.full(1, n_classes, dtype=np.int64)
        # No monotonicity constraint, no bounds: constrained fits search categorical
        # features by the vectorised path (splitting._select_in_chunk).
        unconstrained = np.zeros(1, dtype=np.int64)
        unbounded = np.array([-math.inf, math.inf])
        largest = min(max_subset, k)
        count = 0
        for s in range(1, largest + 1):
            count += binom[k, s]
        score = np.empty(count)
        divisor = np.empty(count)
        goes_left = np.empty(count)
        group = np.empty(count, dtype=np.int64)
        members = np.empty(max(largest, 1), dtype=np.int64)
        seq = 0
        for s in range(1, largest + 1):
            for t in range(s):
                members[t] = t
            while True:
                subset_sum(compact, i, f, members, s, prefix)
                _candidate(
                    criterion,
                    n_classes,
                    outputs,
                    count_channel,
                    prefix,
                    total,
                    missing_row,
                    use_missing,
                    has_missing,
                    scale,
                    parent,
                    msl,
                    mwl,
                    unconstrained[0],
                    unbounded[0],
                    unbounded[1],
                    rtol,
                    scored,
                )
                score[seq] = scored[0]
                divisor[seq] = scored[1]
                goes_left[seq] = scored[2]
                group[seq] = table_index(members, s, most, binom, offsets) // per_pass
                seq += 1
                if not next_subset(members, s, k):
                    break
        start = 0
        while start < count:
            stop = start + 1
            while stop < count and group[stop] == group[start]:
                stop += 1
            j = start + first_near_max(
                score[start:stop], divisor[start:stop], stop - start, criterion, node, rtol
            )
            offer(
                result, score[j], divisor[j], goes_left[j], SMALL_SUBSET, j, criterion, node, rtol
            )
            start = stop

    return score_subsets


score_subsets = _compile_score_subsets(SOURCE_HASH)


def _compile_score_subset_splits(source_hash):
    @njit(cache=True)
    def score_subset_splits(
        compact,
        i,
        f,
        k,
        missing_row,
        use_missing,
        usable,
        scale,
        criterion,
        n_classes,
        count_channel,
        msl,
        mwl,
        rtol,
        node,
        orderings_per_pass,
        max_subset,
        subset_limit,
        most,
        binom,
        offsets,
        subsets_per_pass,
        total,
        result,
        scratch,
    ):
        """The best binary subset split of one (node, categorical feature): ``result``
        gets its score (-inf: none allowed), split information, missing side, family and
        index in it; ``total`` the feature's present rows' statistics; ``scratch``:
        :func:`search_scratch`'s arrays."""
        source_hash  # noqa: B018 - in the cache key only
        # The helpers' ``outputs``: one output (the only kind searched here).
        outputs = np.full(1, n_classes, dtype=np.int64)
        # No monotonicity constraint, no bounds: constrained fits search categorical
        # features by the vectorised path (splitting._select_in_chunk).
        unconstrained = np.zeros(1, dtype=np.int64)
        unbounded = np.array([-math.inf, math.inf])
        n_channels = compact.shape[3]
        width = compact.shape[2]
        for c in range(n_channels):
            total[c] = 0
        for p in range(k):
            for c in range(n_channels):
                total[c] += compact[i, f, p, c]
        result[0] = -math.inf
        result[1] = 1.0
        result[2] = 0.0
        result[3] = ORDERING_PREFIX
        result[4] = 0.0
        if not usable or k == 0:
            return
        _, parent, scored, prefix, _, _, _, keys, order, score, divisor, goes_left = scratch
        has_missing = use_missing and _row_count(missing_row, n_classes, count_channel) > 0
        parent[1] = _weight_of(n_classes, prefix, total, missing_row, PARENT, use_missing, scale)
        parent[0] = 0.0
        if criterion != _scan.CART:
            parent[0] = _weighted_impurity(
                criterion,
                n_classes,
                outputs,
                prefix,
                total,
                missing_row,
                PARENT,
                use_missing,
                scale,
            )
        multiclass = n_classes > 2
        n_orderings = n_classes if n_classes > 2 or n_classes == 1 else 1
        for first in range(0, n_orderings, orderings_per_pass):
            last = min(first + orderings_per_pass, n_orderings)
            m = 0
            for o in range(first, last):
                ordering(compact, i, f, k, o, scale, n_classes, keys, order)
                for c in range(n_channels):
                    prefix[c] = 0
                for end in range(k):
                    for c in range(n_channels):
                        prefix[c] += compact[i, f, order[end], c]
                    _candidate(
                        criterion,
                        n_classes,
                        outputs,
                        count_channel,
                        prefix,
                        total,
                        missing_row,
                        use_missing,
                        has_missing,
                        scale,
                        parent,
                        msl,
                        mwl,
                        unconstrained[0],
                        unbounded[0],
                        unbounded[1],
                        rtol,
                        scored,
                    )
                    score[m] = scored[0]
                    divisor[m] = scored[1]
                    goes_left[m] = scored[2]
                    m += 1
            j = first_near_max(score, divisor, m, criterion, node, rtol)
            # The reference's index: ordering-major over the chunk's width.
            o, end = first + j // k, j % k
            offer(
                result,
                score[j],
                divisor[j],
                goes_left[j],
                ORDERING_PREFIX,
                o * width + end,
                criterion,
                node,
                rtol,
            )
        if multiclass and max_subset >= 1 and k <= subset_limit and most > 0:
            score_subsets(
                compact,
                i,
                f,
                k,
                total,
                missing_row,
                use_missing,
                has_missing,
                scale,
                criterion,
                n_classes,
                count_channel,
                msl,
                mwl,
                rtol,
                node,
                parent,
                max_subset,
                most,
                binom,
                offsets,
                subsets_per_pass,
                prefix,
                scored,
                result,
            )

    return score_subset_splits


score_subset_splits = _compile_score_subset_splits(SOURCE_HASH)


def _compile_score_multiway(source_hash):
    @njit(cache=True)
    def score_multiway(
        compact,
        i,
        f,
        k,
        missing_row,
        use_missing,
        usable,
        scale,
        criterion,
        n_classes,
        count_channel,
        msl,
        mwl,
        total,
        result,
    ):
        """The multiway split of one (node, categorical feature), a branch per present
        category (splitting._score_categorical's multiway part): ``result`` gets its
        score (-inf: not allowed), split information and default branch (column 5)."""
        source_hash  # noqa: B018 - in the cache key only
        # The helpers' ``outputs``: one output (the only kind searched here).
        outputs = np.full(1, n_classes, dtype=np.int64)
        n_channels = compact.shape[3]
        for c in range(n_channels):
            total[c] = 0
        for p in range(k):
            for c in range(n_channels):
                total[c] += compact[i, f, p, c]
        # The largest branch (the first of them) takes the missing rows.
        default = 0
        largest = -1
        for p in range(k):
            rows = _row_count(compact[i, f, p], n_classes, count_channel)
            if rows > largest:
                largest = rows
                default = p
        result[0] = -math.inf
        result[1] = 1.0
        result[2] = 0.0
        result[3] = -1.0
        result[4] = 0.0
        result[5] = default
        prefix = np.zeros(n_channels, dtype=np.int64)
        # Each branch's statistics, the missing rows in the default one; its weight and
        # impurity are then the split scan's of a parent (the same arithmetic).
        branches = np.empty((k, n_channels), dtype=np.int64)
        weights = np.empty(k)
        for p in range(k):
            for c in range(n_channels):
                branches[p, c] = compact[i, f, p, c]
                if use_missing and p == default:
                    branches[p, c] += missing_row[c]
            weights[p] = _weight_of(
                n_classes, prefix, branches[p], missing_row, PARENT, False, scale
            )
        allowed = usable and k >= 2
        for p in range(k):
            if not allowed:
                break
            if msl > 1:
                if count_channel >= 0:
                    if float(branches[p, count_channel]) < msl:
                        allowed = False
                elif weights[p] < msl:
                    allowed = False
            if mwl > 0.0:
                if weights[p] < mwl:
                    allowed = False
        parent_weight = _weight_of(
            n_classes, prefix, total, missing_row, PARENT, use_missing, scale
        )
        children = 0.0
        info = 0.0
        branch_total = 0.0
        for p in range(k):
            children += _weighted_impurity(
                criterion,
                n_classes,
                outputs,
                prefix,
                branches[p],
                missing_row,
                PARENT,
                False,
                scale,
            )
            branch_total += weights[p]
        decrease = (
            _weighted_impurity(
                criterion,
                n_classes,
                outputs,
                prefix,
                total,
                missing_row,
                PARENT,
                use_missing,
                scale,
            )
            - children
        )
        score = decrease
        divisor = 1.0
        if criterion == GAIN_RATIO:
            for p in range(k):
                fraction = weights[p] / parent_weight if parent_weight > 0.0 else 0.0
                info -= _plog2p(fraction)
            score = decrease / info if info > 0.0 else 0.0
            divisor = 0.0
            for p in range(k):
                fraction = weights[p] / branch_total if branch_total > 0.0 else 0.0
                divisor -= _plog2p(fraction)
        if allowed:
            result[0] = score
        result[1] = divisor

    return score_multiway


score_multiway = _compile_score_multiway(SOURCE_HASH)


def _compile_score_nodes(source_hash):
    @njit(nogil=True, cache=True)
    def score_nodes(
        compact,
        n_nonempty,
        missing,
        use_missing,
        feature_mask,
        use_mask,
        is_categorical,
        multiway,
        scale,
        criterion,
        n_classes,
        count_channel,
        min_samples_leaf,
        min_weight_leaf,
        rtol,
        orderings_per_pass,
        max_subset,
        subset_limit,
        most,
        binom,
        offsets,
        subsets_per_pass,
        winners,
        left_positions,
        default_branch,
        scratch,
    ):
        """Each node's best split. ``compact`` (n, n_features, width, n_channels): each
        (node, feature) row's ``n_nonempty`` non-empty bins first, in order;
        ``missing`` (n, n_features, n_channels) (a 1-node stand-in unless
        ``use_missing``); ``feature_mask`` (n, n_features) (a stand-in unless
        ``use_mask``). ``winners`` gets the winner rows (``_split_scan``'s WINNER_*
        columns; the bins are positions of the compact rows, -1 for a categorical
        winner), ``left_positions`` (n, width) 1 at the positions a subset winner sends
        left, ``default_branch`` a multiway winner's branch of missing rows.
        ``scratch``: :func:`search_scratch`'s arrays for at least these features and
        this width."""
        source_hash  # noqa: B018 - in the cache key only
        # The helpers' ``outputs``: one output (the only kind searched here).
        outputs = np.full(1, n_classes, dtype=np.int64)
        # No monotonicity constraint, no bounds: constrained fits search categorical
        # features by the vectorised path (splitting._select_in_chunk).
        unconstrained = np.zeros(1, dtype=np.int64)
        unbounded = np.array([-math.inf, math.inf])
        n_nodes, n_features, width, n_channels = compact.shape
        winner_values = winners.view(np.float64)
        node, parent, scored, prefix, totals, results, members, keys, order, _, _, _ = scratch
        for i in range(n_nodes):
            slot = i if use_missing else 0
            _node_totals(
                compact, i, 0, missing, use_missing, width, scale, n_classes, outputs, node
            )
            for f in range(n_features):
                usable = (not use_mask) or feature_mask[i, f]
                k = n_nonempty[i, f]
                if not is_categorical[f]:
                    _score_feature(
                        compact,
                        i,
                        f,
                        width,
                        missing[slot, f],
                        use_missing,
                        usable,
                        prefix,
                        totals[f],
                        scale,
                        criterion,
                        n_classes,
                        outputs,
                        count_channel,
                        min_samples_leaf,
                        min_weight_leaf,
                        unconstrained[0],
                        unbounded[0],
                        unbounded[1],
                        rtol,
                        node,
                        parent,
                        scored,
                        results[f],
                    )
                elif multiway:
                    score_multiway(
                        compact,
                        i,
                        f,
                        k,
                        missing[slot, f],
                        use_missing,
                        usable,
                        scale,
                        criterion,
                        n_classes,
                        count_channel,
                        min_samples_leaf,
                        min_weight_leaf,
                        totals[f],
                        results[f],
                    )
                else:
                    score_subset_splits(
                        compact,
                        i,
                        f,
                        k,
                        missing[slot, f],
                        use_missing,
                        usable,
                        scale,
                        criterion,
                        n_classes,
                        count_channel,
                        min_samples_leaf,
                        min_weight_leaf,
                        rtol,
                        node,
                        orderings_per_pass,
                        max_subset,
                        subset_limit,
                        most,
                        binom,
                        offsets,
                        subsets_per_pass,
                        totals[f],
                        results[f],
                        scratch,
                    )
            # The first feature within the tolerance of the best (choose_winner).
            best = results[0, 0]
            at = 0
            for f in range(1, n_features):
                if results[f, 0] > best:
                    best = results[f, 0]
                    at = f
            limit = best - _tolerance(criterion, node[0], node[1], best, results[at, 1], rtol)
            chosen = at
            for f in range(n_features):
                if results[f, 0] >= limit:
                    chosen = f
                    break
            left = winners[i, WINNER_FIXED_COLUMNS : WINNER_FIXED_COLUMNS + n_channels]
            right = winners[
                i, WINNER_FIXED_COLUMNS + n_channels : WINNER_FIXED_COLUMNS + 2 * n_channels
            ]
            for p in range(width):
                left_positions[i, p] = 0
            default_branch[i] = 0
            k = n_nonempty[i, chosen]
            position = -1
            next_position = -1
            goes_left = False
            if not math.isfinite(results[chosen, 0]):
                pass  # no split: nothing to rebuild
            elif not is_categorical[chosen]:
                position = max(int(results[chosen, 3]), 0)
                for p in range(position + 1):
                    left_positions[i, p] = 1
                if position + 1 < k:
                    next_position = position + 1
                goes_left = results[chosen, 2] != 0.0
            elif multiway:
                for p in range(k):
                    left_positions[i, p] = 1
                default_branch[i] = int(results[chosen, 5])
            else:
                family = int(results[chosen, 3])
                index = int(results[chosen, 4])
                goes_left = results[chosen, 2] != 0.0
                if family == ORDERING_PREFIX:
                    o, end = index // width, index % width
                    ordering(compact, i, chosen, k, o, scale, n_classes, keys, order)
                    for p in range(end + 1):
                        left_positions[i, order[p]] = 1
                else:
                    s = subset_at(index, k, max_subset, members)
                    for t in range(s):
                        left_positions[i, members[t]] = 1
            for c in range(n_channels):
                left[c] = 0
                for p in range(k):
                    if left_positions[i, p]:
                        left[c] += compact[i, chosen, p, c]
                right[c] = totals[chosen, c] - left[c]
            if is_categorical[chosen] and multiway:
                for c in range(n_channels):
                    right[c] = 0
                    if use_missing:
                        left[c] += missing[slot, chosen, c]
            elif use_missing:
                for c in range(n_channels):
                    if goes_left:
                        left[c] += missing[slot, chosen, c]
                    else:
                        right[c] += missing[slot, chosen, c]
            else:  # missing values never seen here: at prediction they follow the bigger child
                goes_left = _row_count(left, n_classes, count_channel) >= _row_count(
                    right, n_classes, count_channel
                )
            winners[i, WINNER_FEATURE] = chosen
            winners[i, WINNER_BIN] = position if not is_categorical[chosen] else -1
            winners[i, WINNER_NEXT_BIN] = next_position
            winners[i, WINNER_MISSING_LEFT] = 1 if goes_left else 0
            winner_values[i, WINNER_SCORE] = results[chosen, 0]
            winner_values[i, WINNER_NODE_WEIGHT] = node[0]

    return score_nodes


score_nodes = _compile_score_nodes(SOURCE_HASH)

# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())
