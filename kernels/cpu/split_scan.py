"""The compiled split search on the CPU (``kernels/_split_scan.py``, the CPU twin of the
CUDA kernel): each node's best split, one node per task, and the scan's inlined helpers,
which the subtree finisher and the categorical search share."""

import hashlib
from pathlib import Path

import numpy as np
from numba import njit

from .. import _split_scan as _scan
from .. import compilation, log2
from .launch import ThreadedWhenLarge, borrowing_njit, candidate_bins

# The compiled split search (kernels/_split_scan.py), the CPU twin of the CUDA kernel.
SPLIT_CRITERION_CODES = _scan.CRITERION_CODES
WINNER_FIXED_COLUMNS = _scan.WINNER_FIXED_COLUMNS
WINNER_FEATURE, WINNER_BIN = _scan.WINNER_FEATURE, _scan.WINNER_BIN
WINNER_NEXT_BIN, WINNER_MISSING_LEFT = _scan.WINNER_NEXT_BIN, _scan.WINNER_MISSING_LEFT
WINNER_SCORE, WINNER_NODE_WEIGHT = _scan.WINNER_SCORE, _scan.WINNER_NODE_WEIGHT
# Inlined (LLVM's alwaysinline) and without reference counting: called, each candidate
# paid a dozen calls with arrays passed by value, 15 times the inlined cost (2.6 us
# against 0.17 us a candidate, measured on a loaded 2-core machine); reference counting
# made it 3.6 times slower again. One set of helpers for every CPU search (this level-wise
# one, the subtree finisher's, the categorical one): numba compiles a helper once per
# signature and dispatcher, so searches that pass the same types share its compile.
SPLIT_SCAN_HELPERS = {}
# Class counts below this many rows read their log2 from a table (kernels/log2.py): a
# fully grown entropy tree of 20,000 rows took 3.2 times a gini tree's time with every
# log2 computed, 1.0 times with the table (glibc's log2: 1.3 times).
INTEGER_LOG2_TABLE_SIZE = 1 << 12
_node_totals, _score_feature, _choose_winner = _scan.make_split_scan(
    borrowing_njit(forceinline=True),
    borrowing_njit(forceinline=True)(_scan.plain_product),
    SPLIT_SCAN_HELPERS,
    save_scores=True,
    integer_log2_table_size=INTEGER_LOG2_TABLE_SIZE,
)
SPLIT_SCAN_HELPERS.update(
    node_totals=_node_totals, score_feature=_score_feature, choose_winner=_choose_winner
)
SPLIT_SCAN_SOURCE_HASH = hashlib.sha256(
    Path(_scan.__file__).read_bytes() + Path(log2.__file__).read_bytes()
).hexdigest()


@njit(forceinline=True)
def each_feature_winners(
    hist,
    slot,
    n_bins,
    missing,
    use_missing,
    results,
    totals,
    criterion,
    n_classes,
    count_channel,
    rtol,
    node,
    winners,
    winner_values,
):
    """A node's winner row per feature alone (``score_each_feature``): row ``f`` of
    ``winners`` (n_features, WINNER_FIXED_COLUMNS + 2 * n_channels) and ``winner_values``
    (its float64 view) is the row ``choose_winner`` writes from ``results`` were ``f`` the
    node's only usable feature: chosen among its result and unusable features' results
    (score_feature's -inf, 1, 0, -1). A feature without an allowed split (outside the
    mask, or none of its candidates allowed) gets score -inf and zeros elsewhere."""
    n_features = results.shape[0]
    alone = np.empty((n_features, 4))
    for f in range(n_features):
        alone[f, 0] = -np.inf
        alone[f, 1] = 1.0
        alone[f, 2] = 0.0
        alone[f, 3] = -1.0
    for f in range(n_features):
        if results[f, 0] == -np.inf:  # no split, nor a winner row to build
            for k in range(winners.shape[1]):
                winners[f, k] = 0
            winner_values[f, WINNER_SCORE] = -np.inf
            continue
        for k in range(4):
            alone[f, k] = results[f, k]
        _choose_winner(
            hist,
            slot,
            n_bins,
            missing,
            use_missing,
            alone,
            totals,
            criterion,
            n_classes,
            count_channel,
            rtol,
            node,
            winners[f],
            winner_values[f],
        )
        alone[f, 0] = -np.inf
        alone[f, 1] = 1.0
        alone[f, 2] = 0.0
        alone[f, 3] = -1.0


def _compile_score_splits(source_hash, each_feature):
    @njit(cache=True, nogil=True)
    def score_splits(
        hist,
        slots,
        n_bins,
        missing,
        use_missing,
        feature_mask,
        use_mask,
        scale,
        criterion,
        n_classes,
        outputs,
        count_channel,
        min_samples_leaf,
        min_weight_leaf,
        rtol,
        monotonic_cst,
        lower,
        upper,
        winners,
    ):
        """Each node's best split (``kernels/_split_scan.py``), one node per task:
        ``winners`` (n_nodes, WINNER_FIXED_COLUMNS + 2 * n_channels) int64 gets the
        winner rows. ``hist`` (n_slots, n_features, >= n_bins, n_channels): bins
        ``< n_bins`` hold present values; ``missing`` (n_slots, n_features, n_channels)
        the missing rows (a 1-slot stand-in unless ``use_missing``); ``feature_mask``
        (n_nodes, n_features) (a stand-in unless ``use_mask``): where it is used, a
        feature outside it is never read but for its totals, which nothing uses (a
        search of drawn features, where only theirs were built); ``monotonic_cst``
        (n_features,) each feature's monotonicity constraint (0: none) and ``lower``,
        ``upper`` (n_nodes,) each node's bounds on its children's values.

        Compiled ``each_feature`` (``score_each_feature``): ``winners`` (n_nodes,
        n_features, WINNER_FIXED_COLUMNS + 2 * n_channels) gets a winner row per node
        and feature, the node's best split on that feature alone
        (:func:`each_feature_winners`); every feature is scored once."""
        source_hash  # noqa: B018 - in the cache key only
        n_features = hist.shape[1]
        n_channels = hist.shape[3]
        winner_values = winners.view(np.float64)
        for i in range(slots.shape[0]):
            slot = slots[i]
            missing_slot = slot if use_missing else 0
            node = np.empty(2)
            parent = np.empty(2)
            scored = np.empty(3 * (n_bins + 1))  # pass 1's results, for pass 2
            prefix = np.empty(n_channels, dtype=np.int64)
            totals = np.empty((n_features, n_channels), dtype=np.int64)
            results = np.empty((n_features, 4))
            # The node's totals from a feature it may use: where only the drawn features'
            # histograms were built, the others hold anything (none usable: all built).
            summed = 0
            if use_mask:
                for f in range(n_features):
                    if feature_mask[i, f]:
                        summed = f
                        break
            _node_totals(
                hist, slot, summed, missing, use_missing, n_bins, scale, n_classes, outputs, node
            )
            for f in range(n_features):
                _score_feature(
                    hist,
                    slot,
                    f,
                    n_bins,
                    missing[missing_slot, f],
                    use_missing,
                    (not use_mask) or feature_mask[i, f],
                    prefix,
                    totals[f],
                    scale,
                    criterion,
                    n_classes,
                    outputs,
                    count_channel,
                    min_samples_leaf,
                    min_weight_leaf,
                    monotonic_cst[f],
                    lower[i],
                    upper[i],
                    rtol,
                    node,
                    parent,
                    scored,
                    results[f],
                )
            # A constant of the closure: numba compiles one branch (the other is pruned).
            choose = each_feature_winners if each_feature else _choose_winner
            choose(
                hist,
                slot,
                n_bins,
                missing[missing_slot],
                use_missing,
                results,
                totals,
                criterion,
                n_classes,
                count_channel,
                rtol,
                node,
                winners[i],
                winner_values[i],
            )

    return score_splits


score_splits = _compile_score_splits(SPLIT_SCAN_SOURCE_HASH, False)
# Each node's best split on each feature alone (the cost-sensitive selection's input).
score_each_feature = _compile_score_splits(SPLIT_SCAN_SOURCE_HASH, True)


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())
score_splits = ThreadedWhenLarge(
    score_splits,
    candidate_bins,
    item_args=("slots", "feature_mask", "lower", "upper", "winners"),
)
score_each_feature = ThreadedWhenLarge(
    score_each_feature,
    candidate_bins,
    item_args=("slots", "feature_mask", "lower", "upper", "winners"),
)
