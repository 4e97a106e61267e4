"""The subtree finisher: a small node's whole subtree grown in one compiled call (CPU).

Level-wise growth pays Python work, numba dispatch and numpy calls per level: nothing
next to a level of a million rows, nearly everything at the deep levels of a fully
grown tree, where nodes hold a few rows each and there may be hundreds of levels. Once
a node is small (the grower's ``FINISH_BELOW_ROWS``), this module grows its subtree
depth-first in compiled code, many subtrees per call (one task each), and returns the
nodes for the grower to add.

It builds the tree the level-wise path builds, split for split:

- the same candidates: a node's present bin codes of each feature, in order, as the
  compact histograms of the level-wise path hold them; the rows missing a feature on
  either side;
- the same arithmetic and ties: the split scan of ``kernels/_split_scan.py`` (the
  compiled twin of the vectorised search, tested against it), on integer statistics
  that no summation order changes;
- the same stopping rules, in the grower's order (``NodeTable.splittable`` and
  ``SplitEvaluator.evaluate``'s acceptance), and regression impurities measured on the
  node's rows by the same fixed-point passes (``kernels/_squared_deviations.py``).

The one difference: a classification node's impurity for the purity test is computed
here with ``math.log2``, numpy's ``log2`` there, which may differ in the last bit; only a
node whose impurity lay within a rounding error of scikit-learn's EPSILON (2.2e-16) could
be judged differently, and integer class counts below 2**31 never come that close.

Fits with categorical features (binary subset splits) score each node through the
level-wise path's own compiled search, ``kernels/cpu/categorical.py``'s ``score_nodes``,
on the node's compact histogram (a batch of one node): every feature, numeric and
categorical, by the same code. A categorical feature's bin code is its category code, so
the compact histogram is built the same way. Its one input that depends on the batch is
how candidates are grouped into passes (``orderings_per_pass``, ``subsets_per_pass``:
the level-wise path sizes them by the chunk's nodes to bound the vectorised search's
memory), and the grouping decides between candidates whose scores are within the
tolerance of each other but not equal. Here a feature's orderings are one pass and its
subsets another, as the level-wise path groups them wherever a chunk's candidates fit in one pass (binary
targets and regression: always, as they have one ordering and no subsets; multiclass
targets: unless ``chunk nodes x categorical features x width x channels x classes``
exceeds 2**24 floats, or the subsets' table rows ``x nodes x categorical features x
channels`` does). Beyond those sizes the level-wise tree itself depends on which nodes
share a chunk (with or without this finisher), and only scores within the tolerance of
each other but not equal could part the two: grouped or not, a feature's choice is its
first candidate scoring the best where every other candidate scores either the same or
less by more than twice the tolerance. (tests/kernels/test_subtree_finisher.py also grows
multiclass trees whose level-wise passes hold one candidate each: the trees are the same.)

Fits of multiway categorical splits (ID3) run the same code: ``score_nodes`` scores a
categorical feature's one multiway candidate, and a multiway winner makes a child per
category present at the node, in code order, the missing rows in its largest branch, as
``SplitApplier._split_multiway`` makes them. A feature a multiway ancestor split is not
searched again (the level-wise path's feature mask), nor is its histogram built or its
sorted list kept in order below it. Level-wise growth numbers a level's binary splits'
children before its multiway splits' children, and the grower renumbers a finished tree
so (``Tree.level_wise``).

Fits with feature costs or monotonicity constraints (numeric features only) run the
``constrained`` variant, compiled apart so that a plain fit never compiles it. With costs,
each node's best split per feature (the scan's winner rows per feature, as the level-wise
``score_each_feature`` writes them) goes to ``feature_costs.choose_by_cost``, the twin of
``select_by_cost``: the same measure (one compiled formula for both paths), tolerances
and ties. With constraints, each node's bounds on its children's values are kept with
it, the split scan checks every candidate against them as the level-wise scan does, and
its children's bounds are set as NodeTable.bound_children sets them; they come back with
the nodes, whose values the grower clips into them.

Poisson's node deviances are measured on the rows once the tree is grown
(``row_measures.poisson_deviances``): its fits ask for each root's rows back in
``sample_indices`` in the order its nodes hold them, each node's a range the backend's
partition takes (``place_finished_rows``).

Each subtree works on a private copy of its rows (local indices 0..n-1): its bin codes
feature by feature, its statistics, and per feature the rows sorted by code. A split
partitions every feature's sorted rows stably, so each child's rows stay sorted: a node's
compact histogram is one pass over its rows per feature, with no sort and no n_bins term.

Fits that draw features per node (random forests) and extremely randomised trees read
about max_features features a node (those met in draw order) and need no sorted order,
where sorting every feature's rows per subtree and moving them all at every split took
about a third of the finisher's time (10 fully grown trees on 100k HIGGS-like rows;
bench/RESULTS.md, 2026-11-28). Their variant (``one_row_order``, compiled apart) keeps one
row order per subtree, a node a contiguous range of it. It builds a drawn feature's
compact histogram from the node's rows in that order: the codes met are summed by code
and listed in code order (``_compact_feature_of_rows``), the same histogram. Extremely
randomised trees build none: a feature's split comes from the node's rows
(``kernels/_random_split.py``'s ``random_split_of_rows``: two passes, the split of the
histogram it would have built). A split partitions the one list.
"""

import hashlib
import math
from pathlib import Path

import numpy as np
from numba import njit

from .. import _random_keys as _keys
from .. import _random_split, compilation, log2
from .. import _split_scan as _scan
from .. import _squared_deviations as _deviations
from . import categorical, feature_costs
from .categorical import score_nodes, search_scratch
from .launch import ThreadedWhenLarge, borrowing_njit, node_values
from .split_scan import (
    SPLIT_SCAN_HELPERS,
    WINNER_BIN,
    WINNER_FEATURE,
    WINNER_FIXED_COLUMNS,
    WINNER_MISSING_LEFT,
    WINNER_NEXT_BIN,
    WINNER_NODE_WEIGHT,
    WINNER_SCORE,
    each_feature_winners,
)

# The level-wise search's helpers (kernels/cpu/split_scan.py): the same compiled code where the
# types agree (the finisher passes its statistics as int64).
_node_totals = SPLIT_SCAN_HELPERS["node_totals"]
_score_feature = SPLIT_SCAN_HELPERS["score_feature"]
_choose_winner = SPLIT_SCAN_HELPERS["choose_winner"]
_row_count = SPLIT_SCAN_HELPERS["row_count"]
_weighted_impurity = SPLIT_SCAN_HELPERS["weighted_impurity"]
_run_time = SPLIT_SCAN_HELPERS["run_time"]
_choose_by_cost = feature_costs.choose_by_cost
_log2_cost_term = feature_costs.log2_cost_term
_squared_deviation = njit(inline="always")(_deviations.squared_deviation)
_fixed_point_term = njit(inline="always")(_deviations.fixed_point_term)
_term_exponent = njit(inline="always")(_deviations.term_exponent)
_, _, _child_key, _draw_score = _keys.make_random_keys(njit(inline="always"))
# Extremely randomised trees' split, as the level-wise search draws it, from a node's rows
# (its own copy of the inlined helpers: this module's cache key holds _random_split's source).
_, _random_split_of_rows = _random_split.make_random_split(borrowing_njit(forceinline=True))
_unit_interval = njit(inline="always")(_keys.unit_interval)

# The impurity a classification node's purity test reads (model.tree.NODE_IMPURITY's
# kinds, numbered as the split scan numbers its criteria).
IMPURITY_CODES = {
    "gini": _scan.GINI,
    "entropy": _scan.ENTROPY,
    "misclassification": _scan.MISCLASSIFICATION,
    "squared_error": _scan.SQUARED_ERROR,
}

# Settings every subtree shares, in one float64 array (their order): what a node needs
# to be split (NodeTable.splittable) and for its split to be accepted.
(
    MAX_DEPTH,
    MIN_SAMPLES_SPLIT,
    MIN_SAMPLES_LEAF,
    MIN_WEIGHT_LEAF,
    MIN_PURITY,
    MIN_DECREASE,
    ROOT_WEIGHT,
    PURE_IMPURITY,
    RTOL,
    EPSILON,
    MAX_FEATURES,
    RANDOM_THRESHOLDS,
    COST_CRITERION,
    COST_WEIGHT,
    VARIANCE_EXPONENT,
    KEEP_ROW_ORDER,
) = range(16)
N_SETTINGS = 16
# settings[COST_CRITERION] of a fit without feature costs (else feature_costs.py's code).
NO_COSTS = -1

# The finisher calls categorical.py's score_nodes: an edit there must recompile it too.
SOURCE_HASH = hashlib.sha256(
    b"".join(
        Path(m.__file__).read_bytes()
        for m in (_scan, log2, _deviations, categorical, _keys, _random_split, feature_costs)
    )
).hexdigest()

# Candidates of a categorical feature offered in one pass (see the module docstring): more
# than any node has orderings (classes) or subset table rows.
ONE_PASS = 1 << 62


@njit(cache=True, inline="always")
def _real_weight(stats, n_classes, scale):
    """A node's weight in real units (StatsLayout.weight of StatsLayout.real)."""
    if n_classes == 0:
        return float(stats[0]) * scale[0]
    weight = float(stats[0]) * scale[0]
    for c in range(1, n_classes):
        weight = weight + float(stats[c]) * scale[c]
    return weight


@borrowing_njit(cache=True)
def _squared_deviations(rows, start, end, centred, weight, unit_weight, mean):
    """Sum of w * (d - mean)**2 over ``rows[start:end]`` (local indices), by the two
    fixed-point passes of ``_squared_deviations`` (the backends' measure, any order)."""
    largest = 0.0
    lowest = np.inf
    highest = -np.inf
    for j in range(start, end):
        i = rows[j]
        largest = max(largest, _squared_deviation(centred, weight, unit_weight, i, mean))
        lowest = min(lowest, centred[i])
        highest = max(highest, centred[i])
    if not lowest < highest:
        return 0.0
    exponent = _term_exponent(largest)
    high = 0
    low = 0
    for j in range(start, end):
        q = _fixed_point_term(
            _squared_deviation(centred, weight, unit_weight, rows[j], mean), exponent
        )
        high += q >> _deviations.LOW_BITS
        low += q & _deviations.LOW_MASK
    return math.ldexp(float(high), _deviations.LOW_BITS - exponent) + math.ldexp(
        float(low), -exponent
    )


@borrowing_njit(cache=True)
def _stable_order(keys, order, scratch):
    """``order`` gets 0..n-1 sorted by ``keys`` (n of them), stably: a bottom-up merge
    sort, ``scratch`` as long. numpy's argsort(kind="mergesort") does the same, and cost
    the finisher's first compile about 6 s (its generic sort and the shape checks of
    assigning its result)."""
    n = keys.shape[0]
    for j in range(n):
        order[j] = j
    width = 1
    while width < n:
        for left in range(0, n, 2 * width):
            middle = min(left + width, n)
            right = min(left + 2 * width, n)
            i, j, k = left, middle, left
            while i < middle and j < right:
                if keys[order[j]] < keys[order[i]]:  # equal keys: the left run's first
                    scratch[k] = order[j]
                    j += 1
                else:
                    scratch[k] = order[i]
                    i += 1
                k += 1
            while i < middle:
                scratch[k] = order[i]
                i += 1
                k += 1
            while j < right:
                scratch[k] = order[j]
                j += 1
                k += 1
        for j in range(n):
            order[j] = scratch[j]
        width *= 2


@borrowing_njit(forceinline=True)
def _compact_feature(
    order,
    codes,
    stats,
    f,
    start,
    end,
    use_missing,
    missing_code,
    hist,
    missing,
    bin_code,
    n_nonempty,
):
    """Feature f's compact histogram of the node's rows ``order[f, start:end]`` (sorted by
    code): its present codes in order (``bin_code[f]``, ``hist[0, f]``, the rest of the
    row zeroed), its missing rows' statistics (``missing[0, f]``) and how many codes are
    present (``n_nonempty[0, f]``). Returns the bins it fills, the missing rows' counted
    (more than one: the feature is not constant in the node)."""
    n_channels = stats.shape[1]
    node_width = hist.shape[2]
    for c in range(n_channels):
        missing[0, f, c] = 0
    position = -1
    previous = -1
    for j in range(start, end):
        i = order[f, j]
        code = codes[f, i]
        if use_missing and code == missing_code:
            for c in range(n_channels):
                missing[0, f, c] += stats[i, c]
            continue
        if code != previous:
            position += 1
            previous = code
            bin_code[f, position] = code
            for c in range(n_channels):
                hist[0, f, position, c] = 0
        for c in range(n_channels):
            hist[0, f, position, c] += stats[i, c]
    for b in range(position + 1, node_width):
        for c in range(n_channels):
            hist[0, f, b, c] = 0
    n_nonempty[0, f] = position + 1
    return _filled_bins(n_nonempty, missing, use_missing, f)


@borrowing_njit(forceinline=True)
def _compact_feature_of_rows(
    rows,
    codes,
    stats,
    f,
    start,
    end,
    use_missing,
    missing_code,
    hist,
    missing,
    bin_code,
    n_nonempty,
    code_met,
    code_sums,
    codes_met,
):
    """:func:`_compact_feature`'s histogram of feature f, from the node's rows
    ``rows[start:end]`` in any order: each code's statistics summed in ``code_sums``
    (n_bins, channels) as it is met (``code_met``, n_bins, all False on entry and on
    return; ``codes_met``: room for the node's codes), then the codes met written in
    order: by a scan of the codes between the lowest and highest met, or, where that
    range is wide next to the codes met (a deep node's few rows), by an insertion sort
    of them. Returns what :func:`_compact_feature` returns."""
    n_channels = stats.shape[1]
    node_width = hist.shape[2]
    for c in range(n_channels):
        missing[0, f, c] = 0
    n_met = 0
    lowest = code_met.shape[0]
    highest = -1
    for j in range(start, end):
        i = rows[j]
        code = codes[f, i]
        if use_missing and code == missing_code:
            for c in range(n_channels):
                missing[0, f, c] += stats[i, c]
            continue
        if code_met[code]:
            for c in range(n_channels):
                code_sums[code, c] += stats[i, c]
        else:
            code_met[code] = True
            codes_met[n_met] = code
            n_met += 1
            lowest = min(lowest, code)
            highest = max(highest, code)
            for c in range(n_channels):
                code_sums[code, c] = stats[i, c]
    if highest - lowest < n_met * n_met // 4 + 8:
        position = 0
        for code in range(lowest, highest + 1):
            if code_met[code]:
                bin_code[f, position] = code
                position += 1
    else:
        for p in range(n_met):
            code = codes_met[p]
            q = p
            while q > 0 and bin_code[f, q - 1] > code:
                bin_code[f, q] = bin_code[f, q - 1]
                q -= 1
            bin_code[f, q] = code
    for p in range(n_met):
        code = bin_code[f, p]
        code_met[code] = False
        for c in range(n_channels):
            hist[0, f, p, c] = code_sums[code, c]
    for b in range(n_met, node_width):
        for c in range(n_channels):
            hist[0, f, b, c] = 0
    n_nonempty[0, f] = n_met
    return _filled_bins(n_nonempty, missing, use_missing, f)


@borrowing_njit(forceinline=True)
def _split_multiway(
    k,
    feature,
    start,
    end,
    key,
    order,
    n_lists,
    codes,
    scratch,
    hist,
    missing,
    use_missing,
    missing_code,
    bin_code,
    n_branches,
    default,
    n_classes,
    count_channel,
    branch_of_code,
    branch_of_row,
    branch_bounds,
    next_at,
    used,
    sub_parent,
    sub_depth,
    sub_stats,
    sub_feature,
    sub_code,
    sub_next_code,
    sub_missing_left,
    sub_left,
    sub_subset,
    sub_category_words,
    stack_node,
    stack_start,
    stack_end,
    stack_key,
    top,
    n_nodes,
):
    """Node k's multiway split on ``feature`` (its rows ``start:end`` of every list): a
    child per present code, in code order, from ``n_nodes`` on, the missing rows in
    branch ``default`` (``SplitApplier._split_multiway``'s children); every list
    partitioned stably by branch; the children pushed on the stack from ``top``, the
    first on top. Returns the nodes written, or -1 where a branch's rows disagree with
    its statistics (an internal error)."""
    n_channels = sub_stats.shape[1]
    n_features = used.shape[1]
    for p in range(n_branches):
        branch_of_code[bin_code[feature, p]] = p
        next_at[p] = 0
    for j in range(start, end):
        i = order[feature, j]
        code = codes[feature, i]
        if use_missing and code == missing_code:
            branch = default
        else:
            branch = branch_of_code[code]
        branch_of_row[i] = branch
        next_at[branch] += 1
    # The children: their statistics (the default's with the missing rows), checked
    # against the rows counted, and their rows' bounds in the lists.
    branch_bounds[0] = start
    for p in range(n_branches):
        child = n_nodes + p
        for c in range(n_channels):
            sub_stats[child, c] = hist[0, feature, p, c]
            if use_missing and p == default:
                sub_stats[child, c] += missing[0, feature, c]
        if _row_count(sub_stats[child], n_classes, count_channel) != next_at[p]:
            return -1
        branch_bounds[p + 1] = branch_bounds[p] + next_at[p]
        sub_parent[child] = k
        sub_depth[child] = sub_depth[k] + 1
        for f in range(n_features):
            used[child, f] = used[k, f]
        used[child, feature] = True
    # Every list still read below partitioned stably by branch (a counting sort
    # through ``scratch``): not those of the features a multiway split used, this one
    # now included, but feature 0's (the finisher reads the node's totals there).
    for f in range(n_lists):
        if f > 0 and (used[k, f] or f == feature):
            continue
        for p in range(n_branches):
            next_at[p] = branch_bounds[p]
        for j in range(start, end):
            i = order[f, j]
            scratch[next_at[branch_of_row[i]] - start] = i
            next_at[branch_of_row[i]] += 1
        for j in range(start, end):
            order[f, j] = scratch[j - start]
    sub_feature[k] = feature
    sub_code[k] = default
    sub_next_code[k] = n_branches
    sub_subset[k] = 2
    sub_missing_left[k] = 0
    sub_left[k] = n_nodes
    for w in range(sub_category_words.shape[1]):
        sub_category_words[k, w] = 0
    for p in range(n_branches):
        code = bin_code[feature, p]
        sub_category_words[k, code // 64] |= np.int64(1) << np.int64(code % 64)
    # The last child pushed first: the first is visited next.
    at = top
    for p in range(n_branches - 1, -1, -1):
        stack_node[at] = n_nodes + p
        stack_start[at] = branch_bounds[p]
        stack_end[at] = branch_bounds[p + 1]
        stack_key[at] = _child_key(key, p)
        at += 1
    return n_nodes + n_branches


@borrowing_njit(forceinline=True)
def _monotonic_value(stats, n_classes, scale):
    """criteria.monotonic_value of a node's integer statistics: P(class 1) (binary
    classification: channel 1 over the weight), or the centred mean (regression: channel
    1 over channel 0); 0 where it has no weight."""
    weight = _real_weight(stats, n_classes, scale)
    value = float(stats[1]) * scale[1]
    return value / weight if weight > 0.0 else 0.0


@borrowing_njit(forceinline=True)
def _bound_children(cst, bounds, k, left, left_stats, right_stats, n_classes, scale):
    """Node k's children's bounds (``bounds[left]``, ``bounds[left + 1]``) from its own
    and its split feature's constraint ``cst``, as NodeTable.bound_children sets them
    (criteria.monotonic_child_bounds): the middle of the children's values bounds the
    left child above and the right one below for +1, the reverse for -1; an
    unconstrained split passes the node's bounds on."""
    lower = bounds[k, 0]
    upper = bounds[k, 1]
    middle = (
        _monotonic_value(left_stats, n_classes, scale) / 2.0
        + _monotonic_value(right_stats, n_classes, scale) / 2.0
    )
    bounds[left, 0] = middle if cst < 0 else lower
    bounds[left, 1] = middle if cst > 0 else upper
    bounds[left + 1, 0] = middle if cst > 0 else lower
    bounds[left + 1, 1] = middle if cst < 0 else upper


@njit(cache=True, inline="always")
def _filled_bins(n_nonempty, missing, use_missing, f):
    """The bins feature f fills in the node: its present codes, plus 1 where missing rows
    are (as the level-wise draw counts them: kernels.cpu.histograms.filled_bins)."""
    filled = n_nonempty[0, f]
    if use_missing:
        for c in range(missing.shape[2]):
            if missing[0, f, c] != 0:
                return filled + 1
    return filled


def _variant(function, with_categorical, one_row_order, constrained):
    """``function`` named after its variant: numba names a compiled function's symbols and
    its cache files after the Python function's qualified name, and two variants under
    one name could meet in one process, one from the disk cache and one compiled there,
    where a call could reach the other's code."""
    if one_row_order:
        suffix = "_one_row_order"
    else:
        suffix = "_categorical" if with_categorical else "_numeric"
    if constrained:
        suffix += "_constrained"
    function.__name__ += suffix
    function.__qualname__ += suffix
    return function


def _compile_finish_subtrees(source_hash, with_categorical, one_row_order, constrained=False):
    # The helpers' source hash is in the cache key (see kernels/cpu/prediction.py's WALK_SOURCE_HASH).
    # ``with_categorical`` is a constant of the compiled code: where it is False, numba
    # prunes the categorical search before typing it, and a fit without categorical
    # features does not compile it (about half the finisher's first compile). The loop
    # over the roots and a subtree's growth are one function: a kernel that called
    # another compiled function would optimise and emit the callee's code again inside
    # its own (about 6 s of a first run). ``one_row_order`` is one too: where True (extremely
    # randomised trees, numeric features), one row order per subtree replaces the sorted
    # lists (the module docstring), and a plain fit does not compile that variant.
    # ``constrained`` too: where True, nodes keep monotonicity bounds and splits may be
    # chosen by their features' costs (numeric features only), which a plain fit does not
    # compile.
    def finish_subtrees(
        X_binned,
        sample_indices,
        root_start,
        root_end,
        row_stats,
        centred,
        weight,
        unit_weight,
        root_depth,
        root_impurity,
        root_keys,
        root_used,
        n_bins,
        missing_code,
        use_missing,
        scale,
        criterion,
        impurity_kind,
        n_classes,
        outputs,
        count_channel,
        settings,
        is_categorical,
        has_categorical,
        multiway,
        max_subset,
        subset_limit,
        most,
        binom,
        offsets,
        bin_lower,
        bin_upper,
        costs,
        monotonic_cst,
        root_bounds,
        out_offset,
        out_parent,
        out_depth,
        out_stats,
        out_impurity,
        out_feature,
        out_code,
        out_next_code,
        out_missing_left,
        out_left,
        out_searched,
        out_subset,
        out_category_words,
        out_bounds,
        out_rows,
        out_count,
    ):
        """Grow the subtree of every root r (rows ``sample_indices[root_start[r]:
        root_end[r]]``), one after another, into the slices ``out_offset[r]:out_offset[r +
        1]`` of the ``out_*`` arrays (room for 2 n_r - 1 nodes); ``out_count[r]`` gets
        the nodes written (-1 where a partition disagrees with the split statistics: an
        internal error). Each root is known splittable (the grower checked it); its
        depth, impurity and random key are ``root_depth[r]``, ``root_impurity[r]`` and
        ``root_keys[r]``.

        ``n_classes`` and ``outputs`` are the split scan's (``splitting.compiled_search``):
        a classifier's first output's class channels (whose totals are the weight) and the
        end channel of each output's classes, several outputs' scores and impurities the
        mean of theirs; a regression fit grown here has one output (0, and one zero).

        ``has_categorical``: the features marked in ``is_categorical`` hold category codes
        and split on subsets of them (``score_nodes`` scores every node; ``max_subset``,
        ``subset_limit``, ``most``, ``binom`` and ``offsets`` are its multiclass subset
        search's, as ``splitting._select_compiled`` passes them). A subset split's node
        gets ``out_subset`` 1 and, in ``out_category_words``, the bitset of the codes it
        sends left as the tree stores it (``SplitApplier._category_words``).

        ``multiway`` (with ``has_categorical``): categorical features split one child per
        present category (ID3), as the level-wise path splits them
        (``SplitApplier._split_multiway``), and a feature a multiway ancestor split is
        not searched again (``root_used[r]``: the features the root's ancestors used). A
        multiway node gets ``out_subset`` 2, in ``out_category_words`` the bitset of its
        present codes (its children, consecutive from ``out_left``, in code order), in
        ``out_code`` the position of the child that takes the missing rows (the largest
        branch) and in ``out_next_code`` its number of children.

        ``settings[MAX_FEATURES]`` > 0: each node searches that many of its non-constant
        features, drawn from its key (the root's ``root_keys[r]``, a child's from its
        parent's and the branch) as ``gpu_tree.growing.random_draws.draw_features``
        draws them.

        Compiled ``one_row_order`` (extremely randomised trees: ``settings[RANDOM_THRESHOLDS]``
        != 0, which :func:`finisher` compiles it for): each feature's candidates are one
        random split, drawn from the node's key as the level-wise path draws it
        (``random_split_histograms``, from ``random_draws.uniform_draws``), between its
        present bins' bounds ``bin_lower`` and ``bin_upper`` (n_features, n_bins).

        Compiled ``constrained`` (numeric features only): ``monotonic_cst`` (n_features,)
        int64 holds each feature's monotonicity constraint (0: none), which the split
        search checks against each node's bounds on its children's values, as the
        level-wise search does; the root's bounds are ``root_bounds[r]`` and each node's
        are written to ``out_bounds`` (lower, upper), a child's as NodeTable.bound_children
        sets them (criteria.monotonic_child_bounds). ``settings[COST_CRITERION]`` >= 0
        (feature_costs.py's code): each node splits on the feature chosen by
        ``feature_costs.choose_by_cost`` (select_by_cost's choice) from its best split per
        feature and the features' ``costs`` (n_features,), with ``settings[COST_WEIGHT]`` and
        ``settings[VARIANCE_EXPONENT]`` (regression: twice the target's exponent).
        Elsewhere these arguments are stand-ins, never read.

        ``out_rows`` gets each node's rows' positions (start, end) among its root's, and
        where ``settings[KEEP_ROW_ORDER]`` != 0 each root's rows in ``sample_indices``
        are left in the order its nodes hold them (each node's a contiguous range): the
        rows of the finished nodes, for what is measured on them after growth (Poisson's
        deviances: the backend's ``place_finished_rows``)."""
        source_hash  # noqa: B018 - in the cache key only
        # The helpers' constant arguments as run-time values, as the level-wise search
        # passes them: a literal argument would compile each helper once more for it.
        _, _, parent_side, no, _, first_slot, _ = _run_time(n_classes)
        for r in range(root_start.shape[0]):
            a, b = out_offset[r], out_offset[r + 1]
            rows = sample_indices[root_start[r] : root_end[r]]
            subtree_depth = root_depth[r]
            subtree_impurity = root_impurity[r]
            subtree_key = root_keys[r]
            sub_parent = out_parent[a:b]
            sub_depth = out_depth[a:b]
            sub_stats = out_stats[a:b]
            sub_impurity = out_impurity[a:b]
            sub_feature = out_feature[a:b]
            sub_code = out_code[a:b]
            sub_next_code = out_next_code[a:b]
            sub_missing_left = out_missing_left[a:b]
            sub_left = out_left[a:b]
            sub_searched = out_searched[a:b]
            sub_subset = out_subset[a:b]
            sub_category_words = out_category_words[a:b]
            sub_bounds = out_bounds[a:b]
            sub_rows = out_rows[a:b]
            failed = False
            n = rows.shape[0]
            n_features = X_binned.shape[0]
            n_channels = row_stats.shape[1]
            regression = n_classes == 0
            # The subtree's rows, copied: bin codes feature-major, statistics, targets.
            codes = np.empty((n_features, n), dtype=np.int64)
            for f in range(n_features):
                for j in range(n):
                    codes[f, j] = X_binned[f, rows[j]]
            stats = np.empty((n, n_channels), dtype=np.int64)
            local_centred = np.zeros(n if regression else 0)
            local_weight = np.zeros(n if regression else 0)
            for j in range(n):
                for c in range(n_channels):
                    stats[j, c] = row_stats[rows[j], c]
                if regression:
                    local_centred[j] = centred[rows[j]]
                    local_weight[j] = weight[rows[j]]
            scratch = np.empty(n, dtype=np.int64)
            if one_row_order:
                # One row order (one list), a node a contiguous range of it; the codes met
                # while a drawn feature's histogram is built, by code.
                n_lists = 1
                order = np.empty((1, n), dtype=np.int64)
                for j in range(n):
                    order[0, j] = j
                code_met = np.zeros(n_bins, dtype=np.bool_)
                code_sums = np.empty((n_bins, n_channels), dtype=np.int64)
                codes_met = np.empty(min(n, n_bins), dtype=np.int64)
            else:
                # Per feature, the local rows sorted by bin code (missing values' code
                # included), stably: by counting where the codes are few next to the rows (a
                # tenth of a merge sort's time at 1,000 rows), else by a merge sort.
                n_lists = n_features
                order = np.empty((n_features, n), dtype=np.int64)
                if n_bins <= 4 * n:
                    next_of_code = np.empty(n_bins + 1, dtype=np.int64)
                    for f in range(n_features):
                        next_of_code[:] = 0
                        for j in range(n):
                            next_of_code[codes[f, j] + 1] += 1
                        for b in range(n_bins):
                            next_of_code[b + 1] += next_of_code[b]
                        for j in range(n):
                            code = codes[f, j]
                            order[f, next_of_code[code]] = j
                            next_of_code[code] += 1
                else:
                    for f in range(n_features):
                        _stable_order(codes[f], order[f], scratch)
            goes_left = np.zeros(n, dtype=np.uint8)

            width = min(n, n_bins)
            # A node's compact histogram is the start of this buffer, shaped (1, n_features,
            # its width, n_channels): contiguous, as score_nodes takes a batch's.
            hist_buffer = np.zeros(n_features * width * n_channels, dtype=np.int64)
            bin_code = np.empty((n_features, width), dtype=np.int64)
            missing = np.zeros((1, n_features, n_channels), dtype=np.int64)
            node = np.empty(2)
            parent = np.empty(2)
            scored = np.empty(3 * (width + 1))  # pass 1's results, for pass 2 (save_scores)
            prefix = np.empty(n_channels, dtype=np.int64)
            # The node's bounds on its children's values (monotonicity constraints):
            # none but in the constrained variant.
            unconstrained = np.zeros(1, dtype=np.int64)
            node_bounds = np.array([-math.inf, math.inf])
            # Feature costs: each feature's winner row, and choose_by_cost's scratch.
            cost_criterion = int(settings[COST_CRITERION]) if constrained else NO_COSTS
            cost_weight = settings[COST_WEIGHT]
            variance_exponent = int(settings[VARIANCE_EXPONENT])
            n_cost_rows = n_features if cost_criterion != NO_COSTS else 1
            column_winners = np.empty(
                (n_cost_rows, WINNER_FIXED_COLUMNS + 2 * n_channels), dtype=np.int64
            )
            column_values = column_winners.view(np.float64)
            cost_terms = np.empty(n_cost_rows)
            if constrained:  # each feature's cost term, once (a plain fit compiles none)
                if cost_criterion != NO_COSTS:
                    for f in range(n_features):
                        cost_terms[f] = _log2_cost_term(cost_criterion, costs[f], cost_weight)
            cost_measure = np.empty(n_cost_rows)
            alone = np.empty((n_cost_rows, 4))
            cost_raised = np.empty(n_cost_rows)
            totals = np.empty((n_features, n_channels), dtype=np.int64)
            results = np.empty((n_features, 4))
            winners = np.empty((1, WINNER_FIXED_COLUMNS + 2 * n_channels), dtype=np.int64)
            winner = winners[0]
            winner_values = winner.view(np.float64)
            # score_nodes' other inputs and outputs, for a batch of one node.
            n_nonempty = np.empty((1, n_features), dtype=np.int64)
            left_positions = np.empty((1, width), dtype=np.uint8)
            default_branch = np.empty(1, dtype=np.int64)
            code_goes_left = np.zeros(n_bins, dtype=np.uint8)
            n_words = sub_category_words.shape[1]
            left_words = np.empty(n_words, dtype=np.int64)
            present_words = np.empty(n_words, dtype=np.int64)
            # score_nodes's scratch, allocated once for all the subtree's nodes.
            search = search_scratch(n_features, width, n_channels, n_classes, max_subset)
            # Features drawn per node (0: every feature is searched), and the draw's state.
            n_drawn = int(settings[MAX_FEATURES])
            drawing = 0 < n_drawn < n_features
            drawn = np.ones((1, n_features), dtype=np.bool_)
            # Multiway splits: each node's features used by a multiway ancestor (a row per
            # node), each present code's branch and each row's, the branches' bounds.
            used = np.zeros((sub_parent.shape[0] if multiway else 1, n_features), dtype=np.bool_)
            if multiway:
                for f in range(n_features):
                    used[0, f] = root_used[r, f]
            branch_of_code = np.empty(n_bins if multiway else 1, dtype=np.int64)
            branch_of_row = np.empty(n if multiway else 1, dtype=np.int64)
            branch_bounds = np.empty(width + 1 if multiway else 1, dtype=np.int64)
            next_at = np.empty(width if multiway else 1, dtype=np.int64)
            draw = np.empty(n_features, dtype=np.uint64)
            met = np.zeros(n_features, dtype=np.bool_)
            # Extremely randomised trees (one-row-order variant: finisher()): each feature's
            # two-bin histogram of its random split, drawn from the node's rows, and the
            # codes it needs (split, last, next present).
            random_thresholds = one_row_order and settings[RANDOM_THRESHOLDS] != 0.0
            random_hist = np.zeros((1, n_features, 2, n_channels), dtype=np.int64)
            random_codes = np.zeros((n_features, 3), dtype=np.int64)

            max_depth = settings[MAX_DEPTH]
            min_samples_split = settings[MIN_SAMPLES_SPLIT]
            min_samples_leaf = settings[MIN_SAMPLES_LEAF]
            # As an integer, as the level-wise searches pass it: the same compiled helpers.
            leaf_rows = int(min_samples_leaf)
            min_weight_leaf = settings[MIN_WEIGHT_LEAF]
            min_purity = settings[MIN_PURITY]
            min_decrease = settings[MIN_DECREASE]
            root_weight = settings[ROOT_WEIGHT]
            pure = settings[PURE_IMPURITY]
            rtol = settings[RTOL]
            epsilon = settings[EPSILON]

            # The nodes still to visit: (node, first row, end row) in the sorted lists.
            stack_node = np.empty(n + 1, dtype=np.int64)
            stack_start = np.empty(n + 1, dtype=np.int64)
            stack_end = np.empty(n + 1, dtype=np.int64)
            stack_key = np.empty(n + 1, dtype=np.uint64)
            sub_parent[0] = -1
            sub_depth[0] = subtree_depth
            for c in range(n_channels):  # the root's statistics: its rows' sums
                total = 0
                for j in range(n):
                    total += stats[j, c]
                sub_stats[0, c] = total
            sub_impurity[0] = subtree_impurity
            if constrained:
                sub_bounds[0, 0] = root_bounds[r, 0]
                sub_bounds[0, 1] = root_bounds[r, 1]
            n_nodes = 1
            stack_node[0] = 0
            stack_start[0] = 0
            stack_end[0] = n
            stack_key[0] = subtree_key
            top = 1
            while top > 0:
                top -= 1
                k, start, end = stack_node[top], stack_start[top], stack_end[top]
                sub_rows[k, 0] = start  # in every list (feature 0's: the row order's)
                sub_rows[k, 1] = end
                key = stack_key[top]
                sub_feature[k] = -1
                sub_left[k] = -1
                sub_searched[k] = 0
                sub_subset[k] = 0
                node_stats = sub_stats[k]
                weight_k = _real_weight(node_stats, n_classes, scale)
                if k > 0:  # the root was checked by the grower (NodeTable.splittable)
                    count = _row_count(node_stats, n_classes, count_channel)
                    if regression:
                        mean_weight = float(node_stats[0]) * scale[0]
                        mean = (float(node_stats[1]) * scale[1]) / (
                            mean_weight if mean_weight > 0.0 else 1.0
                        )
                        deviations = _squared_deviations(
                            order[0], start, end, local_centred, local_weight, unit_weight, mean
                        )
                        sub_impurity[k] = deviations  # the grower divides by the weight
                        impurity = deviations / (weight_k if weight_k > 0.0 else 1.0)
                    else:
                        # criteria.node_impurity (W / w), as the scan computes a parent's W
                        weighted = _weighted_impurity(
                            impurity_kind,
                            n_classes,
                            outputs,
                            node_stats,
                            node_stats,
                            node_stats,
                            parent_side,
                            no,
                            scale,
                        )
                        impurity = weighted / weight_k if weight_k > 0.0 else 0.0
                        sub_impurity[k] = impurity
                    if not (
                        sub_depth[k] < max_depth
                        and count >= min_samples_split
                        and count >= 2 * min_samples_leaf
                        and weight_k >= 2 * min_weight_leaf
                        and not impurity <= pure
                    ):
                        continue
                    if not regression and min_purity < 1.0:
                        largest = -math.inf
                        for c in range(outputs[-1]):  # every output's classes (class_weights)
                            largest = max(largest, float(node_stats[c]) * scale[c])
                        if not largest / (weight_k if weight_k > 0.0 else 1.0) < min_purity:
                            continue
                else:
                    impurity = subtree_impurity
                sub_searched[k] = 1
                if constrained:
                    node_bounds[0] = sub_bounds[k, 0]
                    node_bounds[1] = sub_bounds[k, 1]

                # The node's compact histograms: its present codes per feature, in order.
                n_node = end - start
                node_width = min(n_node, n_bins)
                hist = hist_buffer[: n_features * node_width * n_channels].reshape(
                    (1, n_features, node_width, n_channels)
                )
                # Every feature's histogram where every feature is searched, or where the
                # categorical search reads them all; else only the features met in draw order
                # (about max_features of them, as scikit-learn reads only those it tries).
                build_all = not drawing or has_categorical
                if build_all:
                    for f in range(n_features):
                        if multiway and f > 0 and used[k, f]:
                            # ID3 tests a feature once on a path: no histogram, and its
                            # list is no longer kept (feature 0's is: the node's totals).
                            n_nonempty[0, f] = 0
                            for c in range(n_channels):
                                missing[0, f, c] = 0
                            continue
                        if random_thresholds:  # no histogram: the split from the rows
                            _random_split_of_rows(
                                order[0],
                                codes,
                                stats,
                                f,
                                start,
                                end,
                                use_missing,
                                missing_code,
                                bin_lower[f],
                                bin_upper[f],
                                _unit_interval(_draw_score(key, f, _keys.THRESHOLD_SALT)),
                                missing[0, f],
                                random_hist[0, f],
                                random_codes[f],
                            )
                        elif one_row_order:
                            _compact_feature_of_rows(
                                order[0],
                                codes,
                                stats,
                                f,
                                start,
                                end,
                                use_missing,
                                missing_code,
                                hist,
                                missing,
                                bin_code,
                                n_nonempty,
                                code_met,
                                code_sums,
                                codes_met,
                            )
                        else:
                            _compact_feature(
                                order,
                                codes,
                                stats,
                                f,
                                start,
                                end,
                                use_missing,
                                missing_code,
                                hist,
                                missing,
                                bin_code,
                                n_nonempty,
                            )
                first_drawn = 0
                if drawing:
                    # The n_drawn non-constant features of lowest draw (ties: the lower).
                    for f in range(n_features):
                        drawn[0, f] = False
                        met[f] = False
                        draw[f] = _draw_score(key, f, _keys.FEATURE_SALT)
                    taken = 0
                    first_drawn = -1
                    while taken < n_drawn:
                        at = -1
                        for f in range(n_features):
                            if not met[f] and (at < 0 or draw[f] < draw[at]):
                                at = f
                        if at < 0:
                            break
                        met[at] = True
                        if random_thresholds:  # uniform as random_draws.uniform_draws
                            filled = _random_split_of_rows(
                                order[0],
                                codes,
                                stats,
                                at,
                                start,
                                end,
                                use_missing,
                                missing_code,
                                bin_lower[at],
                                bin_upper[at],
                                _unit_interval(_draw_score(key, at, _keys.THRESHOLD_SALT)),
                                missing[0, at],
                                random_hist[0, at],
                                random_codes[at],
                            )
                        elif build_all:
                            filled = _filled_bins(n_nonempty, missing, use_missing, at)
                        elif one_row_order:
                            filled = _compact_feature_of_rows(
                                order[0],
                                codes,
                                stats,
                                at,
                                start,
                                end,
                                use_missing,
                                missing_code,
                                hist,
                                missing,
                                bin_code,
                                n_nonempty,
                                code_met,
                                code_sums,
                                codes_met,
                            )
                        else:
                            filled = _compact_feature(
                                order,
                                codes,
                                stats,
                                at,
                                start,
                                end,
                                use_missing,
                                missing_code,
                                hist,
                                missing,
                                bin_code,
                                n_nonempty,
                            )
                        if filled > 1:
                            drawn[0, at] = True
                            taken += 1
                            if first_drawn < 0:
                                first_drawn = at
                if with_categorical and has_categorical:
                    if multiway:  # the features no multiway ancestor used (NodeTable's mask)
                        for f in range(n_features):
                            drawn[0, f] = not used[k, f]
                    # The level-wise path's search, on this node alone; every pass holds all
                    # of a feature's candidates (the module docstring says why).
                    score_nodes(
                        hist,
                        n_nonempty,
                        missing,
                        use_missing,
                        drawn,
                        drawing or multiway,
                        is_categorical,
                        multiway,
                        scale,
                        criterion,
                        n_classes,
                        count_channel,
                        leaf_rows,
                        min_weight_leaf,
                        rtol,
                        ONE_PASS,
                        max_subset,
                        subset_limit,
                        most,
                        binom,
                        offsets,
                        ONE_PASS,
                        winners,
                        left_positions,
                        default_branch,
                        search,
                    )
                else:
                    searched = hist
                    searched_width = node_width
                    if random_thresholds:  # each feature's split, drawn above
                        searched = random_hist
                        searched_width = 2
                    # The node's totals from a drawn feature: where features are drawn lazily,
                    # only theirs were built (any feature holds all the node's rows). None drawn:
                    # no candidate, and the totals are not read.
                    _node_totals(
                        searched,
                        first_slot,
                        max(first_drawn, 0),
                        missing,
                        use_missing,
                        searched_width,
                        scale,
                        n_classes,
                        outputs,
                        node,
                    )
                    for f in range(n_features):
                        if not drawn[0, f]:  # not drawn: no candidate
                            results[f, 0] = -math.inf
                            continue
                        _score_feature(
                            searched,
                            0,
                            f,
                            searched_width,
                            missing[0, f],
                            use_missing,
                            True,
                            prefix,
                            totals[f],
                            scale,
                            criterion,
                            n_classes,
                            outputs,
                            count_channel,
                            leaf_rows,
                            min_weight_leaf,
                            monotonic_cst[f] if constrained else unconstrained[0],
                            node_bounds[0],
                            node_bounds[1],
                            rtol,
                            node,
                            parent,
                            scored,
                            results[f],
                        )
                    candidates = results  # every feature's best split
                    if constrained and cost_criterion != NO_COSTS:
                        # select_by_cost's choice among each feature's best split (the
                        # sides of each, gain_ratio's tolerance reads: its winner rows).
                        if criterion == _scan.GAIN_RATIO:
                            each_feature_winners(
                                searched,
                                0,
                                searched_width,
                                missing[0],
                                use_missing,
                                results,
                                totals,
                                criterion,
                                n_classes,
                                count_channel,
                                rtol,
                                node,
                                column_winners,
                                column_values,
                            )
                        chosen = _choose_by_cost(
                            results,
                            node,
                            column_winners,
                            cost_terms,
                            cost_criterion,
                            variance_exponent,
                            criterion,
                            n_classes,
                            scale,
                            rtol,
                            cost_measure,
                            cost_raised,
                        )
                        if chosen < 0:
                            continue
                        # Its winner row: choose_winner's were it the only feature with
                        # a split (each_feature_winners').
                        for f in range(n_features):
                            alone[f, 0] = -math.inf
                            alone[f, 1] = 1.0
                            alone[f, 2] = 0.0
                            alone[f, 3] = -1.0
                        for column in range(4):
                            alone[chosen, column] = results[chosen, column]
                        candidates = alone
                    _choose_winner(
                        searched,
                        0,
                        searched_width,
                        missing[0],
                        use_missing,
                        candidates,
                        totals,
                        criterion,
                        n_classes,
                        count_channel,
                        rtol,
                        node,
                        winner,
                        winner_values,
                    )
                best = winner_values[WINNER_SCORE]
                if not math.isfinite(best):
                    continue
                # SplitEvaluator.evaluate's acceptance: the weighted impurity decrease.
                score = best / winner_values[WINNER_NODE_WEIGHT]
                priority = weight_k / root_weight * score
                if not (priority + epsilon >= min_decrease and impurity > pure):
                    continue

                feature = winner[WINNER_FEATURE]
                missing_left = winner[WINNER_MISSING_LEFT] != 0
                subset = has_categorical and is_categorical[feature]
                if with_categorical and multiway and subset:
                    n_nodes = _split_multiway(
                        k,
                        feature,
                        start,
                        end,
                        key,
                        order,
                        n_lists,
                        codes,
                        scratch,
                        hist,
                        missing,
                        use_missing,
                        missing_code,
                        bin_code,
                        n_nonempty[0, feature],
                        default_branch[0],
                        n_classes,
                        count_channel,
                        branch_of_code,
                        branch_of_row,
                        branch_bounds,
                        next_at,
                        used,
                        sub_parent,
                        sub_depth,
                        sub_stats,
                        sub_feature,
                        sub_code,
                        sub_next_code,
                        sub_missing_left,
                        sub_left,
                        sub_subset,
                        sub_category_words,
                        stack_node,
                        stack_start,
                        stack_end,
                        stack_key,
                        top,
                        n_nodes,
                    )
                    if n_nodes < 0:
                        failed = True
                        break
                    top += n_nonempty[0, feature]
                    continue
                if subset:
                    # The codes sent left, by position; as bitsets for the tree: where the
                    # missing values go left, so do the codes the node did not see.
                    for w in range(n_words):
                        left_words[w] = 0
                        present_words[w] = 0
                    for p in range(n_nonempty[0, feature]):
                        code = bin_code[feature, p]
                        code_goes_left[code] = left_positions[0, p]
                        bit = np.int64(1) << np.int64(code % 64)
                        present_words[code // 64] |= bit
                        if left_positions[0, p]:
                            left_words[code // 64] |= bit
                    for w in range(n_words):
                        right = present_words[w] & ~left_words[w]
                        sub_category_words[k, w] = ~right if missing_left else left_words[w]
                    split_code = -1
                    next_code = -1
                elif random_thresholds:  # bin 0: up to the split; bin 1: every present value
                    split_code = random_codes[feature, winner[WINNER_BIN]]
                    next_code = random_codes[feature, 2] if winner[WINNER_NEXT_BIN] >= 0 else -1
                else:
                    split_code = bin_code[feature, winner[WINNER_BIN]]
                    next_bin = winner[WINNER_NEXT_BIN]
                    next_code = bin_code[feature, next_bin] if next_bin >= 0 else -1
                if one_row_order:
                    listed = 0  # the one row order
                else:
                    listed = feature  # the feature's sorted rows
                for j in range(start, end):
                    i = order[listed, j]
                    code = codes[feature, i]
                    if use_missing and code == missing_code:
                        goes_left[i] = 1 if missing_left else 0
                    elif subset:
                        goes_left[i] = code_goes_left[code]
                    else:
                        goes_left[i] = 1 if code <= split_code else 0
                # Every list (each feature's sorted rows, or the one row order), partitioned
                # stably: left rows first.
                n_left = 0
                for f in range(n_lists):
                    if multiway and f > 0 and used[k, f]:
                        continue  # no longer read (above)
                    n_left = 0
                    n_right = 0
                    for j in range(start, end):
                        i = order[f, j]
                        if goes_left[i]:
                            order[f, start + n_left] = i
                            n_left += 1
                        else:
                            scratch[n_right] = i
                            n_right += 1
                    for j in range(n_right):
                        order[f, start + n_left + j] = scratch[j]
                left_stats = winner[WINNER_FIXED_COLUMNS : WINNER_FIXED_COLUMNS + n_channels]
                right_stats = winner[
                    WINNER_FIXED_COLUMNS + n_channels : WINNER_FIXED_COLUMNS + 2 * n_channels
                ]
                if n_left != _row_count(left_stats, n_classes, count_channel):
                    failed = True
                    break
                sub_feature[k] = feature
                sub_code[k] = split_code
                sub_next_code[k] = next_code
                sub_subset[k] = 1 if subset else 0
                sub_missing_left[k] = 1 if missing_left else 0
                sub_left[k] = n_nodes
                for child in range(2):
                    sub_parent[n_nodes + child] = k
                    sub_depth[n_nodes + child] = sub_depth[k] + 1
                    if multiway:
                        for f in range(n_features):
                            used[n_nodes + child, f] = used[k, f]
                # Channel by channel: a row assignment's shape check cost the first compile 4 s.
                for c in range(n_channels):
                    sub_stats[n_nodes, c] = left_stats[c]
                    sub_stats[n_nodes + 1, c] = right_stats[c]
                if constrained:
                    _bound_children(
                        monotonic_cst[feature],
                        sub_bounds,
                        k,
                        n_nodes,
                        left_stats,
                        right_stats,
                        n_classes,
                        scale,
                    )
                # Right pushed first: the left child is visited next (any order would do;
                # the grower renumbers breadth first).
                stack_node[top] = n_nodes + 1
                stack_start[top] = start + n_left
                stack_end[top] = end
                stack_key[top] = _child_key(key, 1)
                stack_node[top + 1] = n_nodes
                stack_start[top + 1] = start
                stack_end[top + 1] = start + n_left
                stack_key[top + 1] = _child_key(key, 0)
                top += 2
                n_nodes += 2
            out_count[r] = -1 if failed else n_nodes
            if settings[KEEP_ROW_ORDER] != 0.0 and not failed:
                # The rows in list 0's order (``rows`` is a view of sample_indices).
                for j in range(n):
                    scratch[j] = rows[order[0, j]]
                for j in range(n):
                    rows[j] = scratch[j]

    return njit(cache=True, nogil=True)(
        _variant(finish_subtrees, with_categorical, one_row_order, constrained)
    )


finish_subtrees_numeric = _compile_finish_subtrees(SOURCE_HASH, False, False)
finish_subtrees_categorical = _compile_finish_subtrees(SOURCE_HASH, True, False)
finish_subtrees_one_row_order = _compile_finish_subtrees(SOURCE_HASH, False, True)
finish_subtrees_numeric_constrained = _compile_finish_subtrees(SOURCE_HASH, False, False, True)
finish_subtrees_one_row_order_constrained = _compile_finish_subtrees(SOURCE_HASH, False, True, True)

# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())

# Serial below SERIAL_MAX_ELEMENTS of the roots' rows times features: a small tree is one
# task, for which waking threads cost as much as growing it (3 ms of a 1,000-row fit's 6
# on a busy machine); above, the roots are shared out to threads by their rows.
_ROOT_ARGUMENTS = (
    "root_start",
    "root_end",
    "root_depth",
    "root_impurity",
    "root_keys",
    "root_used",
    "root_bounds",
    "out_count",
)


def _root_rows(args):
    """Each root's rows (arguments 2 and 3: its first and end positions)."""
    return args[3] - args[2]


finish_subtrees_numeric = ThreadedWhenLarge(
    finish_subtrees_numeric, node_values, _ROOT_ARGUMENTS, ("out_offset",), _root_rows
)
finish_subtrees_categorical = ThreadedWhenLarge(
    finish_subtrees_categorical, node_values, _ROOT_ARGUMENTS, ("out_offset",), _root_rows
)
finish_subtrees_one_row_order = ThreadedWhenLarge(
    finish_subtrees_one_row_order, node_values, _ROOT_ARGUMENTS, ("out_offset",), _root_rows
)
finish_subtrees_numeric_constrained = ThreadedWhenLarge(
    finish_subtrees_numeric_constrained,
    node_values,
    _ROOT_ARGUMENTS,
    ("out_offset",),
    _root_rows,
)
finish_subtrees_one_row_order_constrained = ThreadedWhenLarge(
    finish_subtrees_one_row_order_constrained,
    node_values,
    _ROOT_ARGUMENTS,
    ("out_offset",),
    _root_rows,
)


def finisher(
    has_categorical: bool,
    random_thresholds: bool = False,
    constrained: bool = False,
    draws_features: bool = False,
):
    """The subtree finisher for a fit: ``finish_subtrees`` above, compiled with the
    categorical search only where the fit has categorical features, with one row
    order per subtree for extremely randomised trees and for features drawn per node, on
    numeric features (the module docstring says why), and with monotonicity bounds and the cost-sensitive choice
    only where the fit has constraints or feature costs (numeric features only)."""
    if has_categorical:
        if constrained:
            raise ValueError("the finisher grows constrained fits of numeric features only")
        return finish_subtrees_categorical
    one_row_order = random_thresholds or draws_features
    if constrained:
        if one_row_order:
            return finish_subtrees_one_row_order_constrained
        return finish_subtrees_numeric_constrained
    return finish_subtrees_one_row_order if one_row_order else finish_subtrees_numeric
