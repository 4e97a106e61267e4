"""Choose the best split of many nodes at once from their histograms.

Which search scores a node. The grower and its collaborators decide
(``SubtreeFinisher.available`` and ``SplitEvaluator.evaluate``), top row first; every
search chooses what the vectorised one below chooses (tests/kernels/test_split_scan.py,
test_categorical_compiled.py, test_subtree_finisher.py and the model snapshots hold them
to it):

=====================================  ===============================  ====================
When                                   Search                           Code
=====================================  ===============================  ====================
CPU histogram backend (dense input)     the node's whole subtree, grown  kernels/cpu/
or exact search (numeric features,      depth-first in one compiled      subtrees.py
on value ranks), a node below           call: numeric features by the
``FINISH_BELOW_ROWS`` rows (times       split scan, categorical ones by
``CATEGORICAL_FINISH_FACTOR`` with      categorical.score_nodes (binary
categorical features, times             subsets, or a multiway split)
``MULTIWAY_FINISH_FACTOR`` with
multiway splits, times
``EXACT_FINISH_FACTOR`` in exact
search; a root below
``FINISH_ROOT_BELOW_ROWS``),
level-wise growth, one output (or
several classification outputs), no
monotonic constraints, no feature
costs, no features drawn per node
with multiway splits, neither poisson
nor absolute_error
absolute_error                          medians, searched on the rows    absolute_error.py
numeric features only, a backend with   the compiled split scan, one     kernels/_split_scan.py
``score_splits`` (CPU histograms and    task (or GPU block) per node     (kernels/cpu/ and
exact search, CUDA histograms, Dask),                                    cuda/split_scan.py)
but poisson with several outputs
extremely randomised thresholds         one random split per node and    split_evaluation.py,
                                        feature, as a two-bin histogram, then as above
                                        scored on the CPU
categorical features on the CPU         the compiled categorical search  kernels/cpu/
(histogram or exact), but poisson or    (:func:`_select_compiled`)       categorical.py
monotonic constraints
everything else: categorical features   the vectorised search of this    this module,
on a GPU or with poisson or monotonic   module, in numpy or CuPy (the    criteria.py
constraints, poisson with several       reference of the others)
outputs
feature costs                           one of the above per feature,    feature_costs.py
                                        then the cost-sensitive measure
oblique trees                           projections, exact thresholds    oblique.py
=====================================  ===============================  ====================

The vectorised search: ``hist`` is an ``xp`` array of shape (n_nodes, n_features,
n_bins, n_channels). In histogram mode the bins are the global feature bins; in exact
mode they are the distinct values of each (node, feature), so exact mode and histogram
mode share the criteria, the candidate rules and the tie-break.

A candidate "bin b" sends bins 0..b left. Only non-empty bins are candidates: every
b between two non-empty bins makes the same partition, and keeping the lowest makes the
threshold the node-local midpoint between neighbouring values, as exact search does.
Ties go to the lowest feature index, then the lowest bin. Scores within rounding of each
other are ties (:func:`gpu_tree.growing.criteria.score_tolerance`): numpy and CuPy may
round a score differently in its last bits, and must still choose alike.

Names: a *histogram slot* is an index along the histogram's first axis (one node's
histograms); each (node, feature) row is compacted to its non-empty bins, and a
*position* is an index along that compacted row, a compact bin (``n_nonempty`` positions
hold bins; ``bin_index`` maps positions back to bins).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from gpu_tree.data.stats import StatsLayout, scan_outputs
from gpu_tree.growing.criteria import (
    SCORE_RTOL,
    branch_split_info,
    monotonic_admissible,
    monotonic_value,
    poisson_split,
    score_tolerance,
    split_info,
    weighted_multiway_split_score,
    weighted_split_score,
)
from gpu_tree.kernels.cpu import categorical as cpu_categorical
from gpu_tree.kernels.cpu import histograms as cpu_histograms
from gpu_tree.kernels.cpu import split_scan as cpu_split_scan
from gpu_tree.kernels.cpu.split_scan import (
    SPLIT_CRITERION_CODES,
    WINNER_BIN,
    WINNER_FEATURE,
    WINNER_FIXED_COLUMNS,
    WINNER_MISSING_LEFT,
    WINNER_NEXT_BIN,
    WINNER_NODE_WEIGHT,
    WINNER_SCORE,
)
from gpu_tree.model.tree import CATEGORICAL_SUBSET, MULTIWAY, NUMERIC
from gpu_tree.utils.device_copies import device_to_host, host_to_device
from gpu_tree.utils.threads import parallel_map

# Candidates per chunk when scoring: bounds the temporaries of the vectorised criteria.
# On the CPU, chunks small enough for the caches, scored on parallel threads; on a GPU,
# large chunks (temporaries of about 64 MB), since every array operation is a launch.
_CANDIDATES_PER_CHUNK = 1 << 18
_DEVICE_CANDIDATES_PER_CHUNK = 1 << 23

# Split scores are no statistics (see gpu_tree.data.stats): they have their own type.
SCORE_DTYPE = np.float64


@dataclass
class SplitConstraints:
    min_samples_leaf: int = 1
    min_weight_leaf: float = 0.0


@dataclass
class MonotonicBounds:
    """Monotonicity constraints (scikit-learn's ``monotonic_cst``) for one search: a
    split on a constrained feature is a candidate only if its children's values
    (criteria.monotonic_value) are ordered by the constraint and lie within the node's
    bounds (criteria.monotonic_admissible); every other candidate is unchanged."""

    cst: np.ndarray  # (n_features,) int8: +1 non-decreasing, -1 non-increasing, 0 free
    lower: np.ndarray  # (n_nodes,) float64: each searched node's bounds, in result order
    upper: np.ndarray


@dataclass
class CategoricalSearch:
    """How categorical features are split: binary splits on a subset of the categories
    (Zaki and Meira's X in V, Algorithm 19.3), or one branch per category (Quinlan's ID3)."""

    features: np.ndarray  # int64 indices of the categorical features
    multiway: bool = False  # one child per category (ID3) instead of a binary subset split
    max_subset: int = 2  # multiclass: every subset of at most this many categories is tried


@dataclass
class ChosenSplits:
    """The best split of each node (arrays of shape (n_nodes,) unless stated)."""

    has_split: np.ndarray  # bool
    feature: np.ndarray  # int64
    bin: np.ndarray  # int64: last bin sent left (a non-empty bin of the node)
    next_bin: np.ndarray  # int64: first non-empty bin of the node right of the split, or -1
    score: np.ndarray  # float64, criterion score (-inf where no split)
    left_stats: np.ndarray  # (n_nodes, n_channels), missing rows included if they go left
    right_stats: np.ndarray  # (n_nodes, n_channels)
    # Where missing values go: the better side where the node has some (both sides are
    # scored), else the child with more rows. next_bin is -1 for a split that sends every
    # present value left and the missing ones right (threshold +inf).
    missing_left: np.ndarray  # bool
    # Categorical splits (None for numeric ones), as bins of the node's histogram row (the
    # caller's bins: indices into hist's third axis): the bins sent left (subset splits),
    # every non-empty bin (the node's categories), and for multiway splits the statistics
    # of each non-empty bin's branch (missing rows included in the branch
    # ``default_branch``).
    kind: np.ndarray  # uint8: NUMERIC, CATEGORICAL_SUBSET or MULTIWAY (gpu_tree.model.tree)
    left_bins: np.ndarray  # object
    present_bins: np.ndarray  # object
    branch_stats: np.ndarray  # object
    default_branch: np.ndarray  # int64, multiway: branch of missing and unseen categories

    @classmethod
    def none(cls, n_nodes: int, n_channels: int, stats_dtype) -> ChosenSplits:
        """No split for any of ``n_nodes`` nodes yet: the arrays a search fills."""
        return cls(
            has_split=np.zeros(n_nodes, dtype=bool),
            feature=np.zeros(n_nodes, dtype=np.int64),
            bin=np.zeros(n_nodes, dtype=np.int64),
            next_bin=np.zeros(n_nodes, dtype=np.int64),
            score=np.full(n_nodes, -np.inf, dtype=SCORE_DTYPE),
            left_stats=np.zeros((n_nodes, n_channels), dtype=stats_dtype),
            right_stats=np.zeros((n_nodes, n_channels), dtype=stats_dtype),
            missing_left=np.zeros(n_nodes, dtype=bool),
            kind=np.full(n_nodes, NUMERIC, dtype=np.uint8),
            left_bins=np.full(n_nodes, None, dtype=object),
            present_bins=np.full(n_nodes, None, dtype=object),
            branch_stats=np.full(n_nodes, None, dtype=object),
            default_branch=np.zeros(n_nodes, dtype=np.int64),
        )


@dataclass(frozen=True, eq=False)
class _SearchContext:
    """What stays fixed for one :func:`select_splits` call, passed down to its helpers."""

    hist: Any  # (n, n_features, n_bins, n_channels), on the device
    nonempty: Any  # (n, n_features, n_bins) bool: the bins holding rows (the candidates)
    missing: Any  # (n, n_features, n_channels): each node's rows missing each feature, or None
    compact_input: bool  # every node's non-empty bins come first already
    feature_mask: np.ndarray | None  # (len(slots), n_features) bool: usable features
    criterion: str
    layout: StatsLayout
    constraints: SplitConstraints
    categorical: CategoricalSearch | None  # None: no categorical feature
    xp: Any  # the array namespace of ``hist``: numpy or cupy
    monotonic: MonotonicBounds | None = None  # None: no monotonicity constraint
    compiled_categorical: bool = False  # categorical features by _select_compiled


def select_splits(
    hist,
    criterion: str,
    layout: StatsLayout,
    constraints: SplitConstraints,
    feature_mask=None,
    xp=np,
    slots=None,
    compact_input=False,
    missing=None,
    categorical: CategoricalSearch | None = None,
    on_device: bool = False,
    compiled=None,
    monotonic: MonotonicBounds | None = None,
    compiled_categorical: bool = False,
) -> ChosenSplits:
    """Best split of the nodes whose histograms are ``hist[slots]`` (hist: (n, n_features,
    n_bins, n_channels)).

    ``slots`` (host indices into hist's first axis, default all) picks the nodes to
    evaluate; results come in that order. ``compact_input``: every (node, feature) row
    already holds its non-empty bins first, in order (compact histograms), so no
    compaction is needed. ``missing``
    (n, n_features, n_channels), or None: the statistics of each node's rows that miss
    each feature (not in ``hist``); every candidate is then scored with them on either
    side, and the better side is kept. ``categorical`` says which features hold category
    codes and how they split (see :func:`_score_categorical`).
    ``feature_mask`` (len(slots), n_features) bool restricts the
    features each may use. Only small per-node results leave the device; the
    histograms stay where they are.

    Each (node, feature) row is first compacted to its non-empty bins (the only
    candidates), and nodes are scored in chunks of similar width, so a node holding a
    few rows costs a few candidates, not ``n_bins``. Compaction keeps the bin order, so
    scores and the tie-break are those of the full histogram. ``on_device`` (the
    histograms are a GPU's): every row keeps the width ``n_bins`` instead, so that the
    widths need not come back to the host to size the search (the GPU scores them all at
    once); the winners are the same.

    ``compiled`` (a backend's ``score_splits``, or None): where no feature is categorical,
    the whole search runs in one compiled call instead (``kernels/_split_scan.py``, the
    same winners). It takes a :class:`CompiledSearch` and returns the winner rows on the
    host (the backend copies them back, in one copy).

    ``monotonic`` (:class:`MonotonicBounds`, or None): monotonicity constraints, checked
    on every candidate (the best admissible one wins), by the compiled search too.

    ``compiled_categorical`` (a CPU backend's ``compiled_categorical_search``): host
    histograms with categorical features are scored in one compiled call per chunk
    (:func:`_select_compiled`, the same winners); False: by the vectorised search, the
    reference.
    """
    _, n_features, n_bins, n_channels = hist.shape
    if monotonic is not None and not np.any(monotonic.cst):
        monotonic = None
    if slots is None:
        slots = np.arange(hist.shape[0])
    slots = np.asarray(slots, dtype=np.int64)
    n_nodes = slots.size
    chosen = ChosenSplits.none(n_nodes, n_channels, hist.dtype)
    if categorical is not None and categorical.features.size == 0:
        categorical = None
    if n_nodes == 0 or (n_bins < 2 and missing is None):  # nothing to split on
        return chosen
    if compiled is not None and categorical is None:
        search = compiled_search(
            hist, slots, missing, feature_mask, criterion, layout, constraints, xp, monotonic
        )
        _record_winners(chosen, slice(None), *_unpack_winners(compiled(search), n_channels))
        return chosen
    if missing is not None and not bool(device_to_host(xp.any(layout.count(missing, xp) > 0))):
        missing = None  # no node misses anything: the usual search, half the work
    nonempty = layout.count(hist, xp) > 0
    if on_device:
        width = np.full(n_nodes, n_bins, dtype=np.int64)
    else:
        widest = device_to_host(xp.max(xp.sum(nonempty, axis=2), axis=1))  # per slot
        width = widest[slots]
    order = np.argsort(width, kind="stable")
    chunks = []
    start = 0
    per_chunk = _CANDIDATES_PER_CHUNK if xp is np else _DEVICE_CANDIDATES_PER_CHUNK
    while start < n_nodes:
        stop = start + 1
        while stop < n_nodes and (stop + 1 - start) * n_features * width[order[stop]] <= per_chunk:
            stop += 1
        chunks.append(order[start:stop])
        start = stop

    search = _SearchContext(
        hist=hist,
        nonempty=nonempty,
        missing=missing,
        compact_input=compact_input,
        feature_mask=feature_mask,
        criterion=criterion,
        layout=layout,
        constraints=constraints,
        categorical=categorical,
        xp=xp,
        monotonic=monotonic,
        compiled_categorical=compiled_categorical,
    )

    def score_chunk(chunk):
        _select_in_chunk(search, chosen, chunk, slots[chunk], int(width[chunk].max()))

    if xp is np:
        # numpy releases the GIL inside its array loops: chunks score in parallel.
        parallel_map(score_chunk, chunks, n_features * int(width.sum()))
    else:
        for chunk in chunks:
            score_chunk(chunk)
    return chosen


def select_splits_each_column(
    hist,
    criterion: str,
    layout: StatsLayout,
    constraints: SplitConstraints,
    feature_mask=None,
    slots=None,
    missing=None,
    monotonic: MonotonicBounds | None = None,
) -> ChosenSplits:
    """Each node's best split on each column alone, on the CPU, in one compiled call
    (``kernels/cpu/split_scan.py``'s ``score_each_feature``): what :func:`select_splits`
    with the CPU's compiled search finds for a node whose feature mask holds that column
    only, every column of every node at once, each scored once.

    Takes numpy arrays, as :func:`select_splits` does, numeric features only (no
    categorical search). Returns ``len(slots) * n_columns`` results, node by node: node
    ``i``'s column ``c`` is entry ``i * n_columns + c`` (no split where ``feature_mask``
    leaves the column out).
    """
    _, n_columns, n_bins, n_channels = hist.shape
    if monotonic is not None and not np.any(monotonic.cst):
        monotonic = None
    if slots is None:
        slots = np.arange(hist.shape[0])
    slots = np.asarray(slots, dtype=np.int64)
    chosen = ChosenSplits.none(slots.size * n_columns, n_channels, hist.dtype)
    if slots.size == 0 or (n_bins < 2 and missing is None):  # nothing to split on
        return chosen
    search = compiled_search(
        hist, slots, missing, feature_mask, criterion, layout, constraints, np, monotonic
    )
    winners = np.empty((slots.size, n_columns, WINNER_FIXED_COLUMNS + 2 * n_channels), np.int64)
    cpu_split_scan.score_each_feature(*search, winners)
    flat = winners.reshape(slots.size * n_columns, -1)
    _record_winners(chosen, slice(None), *_unpack_winners(flat, n_channels))
    return chosen


def _select_in_chunk(search, chosen, chunk, slots, width):
    """Score the nodes of histogram slots ``slots``, whose results are ``chunk`` (indices into
    ``chosen``); write their best splits into ``chosen``. ``width``: the most non-empty
    bins of one of their (node, feature) rows."""
    hist, nonempty, layout, xp = search.hist, search.nonempty, search.layout, search.xp
    categorical = search.categorical
    # The compiled categorical search (kernels/cpu/categorical.py) knows no Poisson: its
    # fits take the vectorised search, the reference, which scores every criterion.
    compiled_categorical = search.compiled_categorical and search.criterion != "poisson"
    compiled_categorical = compiled_categorical and search.monotonic is None
    if xp is np and categorical is not None and compiled_categorical:
        _select_compiled(search, chosen, chunk, slots, width)
        return
    n = slots.size
    n_features = hist.shape[1]
    device_slots = host_to_device(slots, xp)
    width = max(width, 2)  # at least one candidate position, even if it is never allowed
    if search.compact_input:
        compact = hist[device_slots][:, :, :width]
        if compact.shape[2] < width:
            pad_shape = compact.shape[:2] + (width - compact.shape[2],) + compact.shape[3:]
            pad = xp.zeros(pad_shape, dtype=hist.dtype)
            compact = xp.concatenate([compact, pad], axis=2)
        bin_index = xp.broadcast_to(xp.arange(width), compact.shape[:3])
    elif xp is np:
        compact = np.zeros((n, n_features, width, hist.shape[3]), dtype=hist.dtype)
        bin_index = np.empty((n, n_features, width), dtype=np.int64)
        cpu_histograms.compact_rows(hist, slots, nonempty, compact, bin_index)
    else:
        compact, bin_index = _compact(hist[device_slots], nonempty[device_slots], width, xp)
    mask = None if search.feature_mask is None else np.asarray(search.feature_mask[chunk])
    n_nonempty = xp.sum(nonempty[device_slots], axis=2)  # per (node, feature)
    node_missing = None if search.missing is None else search.missing[device_slots]

    # The node's statistics (feature 0's present and missing rows), the parent of every
    # candidate: how close two scores must be to tie depends on it.
    parent = xp.sum(compact[:, 0], axis=1)
    if node_missing is not None:
        parent = parent + node_missing[:, 0]
    parent = layout.real(parent, xp)

    # The best candidate of every (node, feature), then the best feature: the lowest
    # feature wins ties, and within a feature the first candidate (lowest bin).
    if categorical is None:
        cat_features = np.zeros(0, dtype=np.int64)
        numeric_host = numeric = slice(None)
    else:
        cat_features = categorical.features
        numeric_host = np.setdiff1d(np.arange(n_features), cat_features)
        numeric = host_to_device(numeric_host, xp)
    feature_best = xp.full((n, n_features), -xp.inf, dtype=SCORE_DTYPE)
    # gain_ratio: the split information of each feature's best candidate (poisson: its
    # term scale), else None.
    feature_divisor = None if not _has_divisor(search) else xp.ones_like(feature_best)
    best_position = xp.zeros((n, 1), dtype=xp.int64)
    missing_left = None
    if n_features > cat_features.size:
        monotonic = None
        if search.monotonic is not None:
            bounds = search.monotonic
            monotonic = (
                host_to_device(np.asarray(bounds.cst, dtype=np.float64)[numeric_host], xp)[
                    None, :, None
                ],
                host_to_device(np.asarray(bounds.lower[chunk], dtype=np.float64), xp)[
                    :, None, None
                ],
                host_to_device(np.asarray(bounds.upper[chunk], dtype=np.float64), xp)[
                    :, None, None
                ],
            )
        score, missing_left, divisor = _score_candidates(
            search,
            compact[:, numeric],
            n_nonempty[:, numeric],
            _take(node_missing, numeric),
            _take(mask, numeric_host),
            monotonic,
        )
        best_position = _first_near_max(search, score, parent[:, None], divisor)
        feature_best[:, numeric] = _take_last(score, best_position, xp)
        if divisor is not None:
            feature_divisor[:, numeric] = _take_last(divisor, best_position, xp)
    cat = None
    if cat_features.size:
        device_cat = host_to_device(cat_features, xp)
        cat = _score_categorical(
            search,
            compact[:, device_cat],
            n_nonempty[:, device_cat],
            _take(node_missing, device_cat),
            _take(mask, cat_features),
        )
        feature_best[:, device_cat] = cat.best
        if cat.divisor is not None:
            feature_divisor[:, device_cat] = cat.divisor
    # The winners, found on the device and copied back in one packed array.
    each_node = xp.arange(n)
    feature = _first_near_max(search, feature_best, parent, feature_divisor)
    best = feature_best[each_node, feature]
    is_categorical = np.zeros(n_features, dtype=bool)
    is_categorical[cat_features] = True
    # Numeric winners: positions 0..position of the compacted row go left.
    numeric_index = np.cumsum(~is_categorical) - 1  # feature -> column of the numeric scores
    column = host_to_device(np.where(is_categorical, 0, numeric_index), xp)[feature]
    position = best_position[each_node, column]
    cumulative = xp.cumsum(compact[each_node, feature], axis=1)  # (n, width, n_channels)
    left = cumulative[each_node, position]
    right = cumulative[:, -1] - left
    if missing_left is None or node_missing is None:
        # Missing values never seen here: at prediction they follow the bigger child.
        goes_left = layout.count(left, xp) >= layout.count(right, xp)
    else:
        goes_left = missing_left[each_node, column, position]
        chosen_missing = node_missing[each_node, feature]
        left = left + xp.where(goes_left[:, None], chosen_missing, 0)
        right = right + xp.where(goes_left[:, None], 0, chosen_missing)
    chosen_bins = bin_index[each_node, feature]
    # Every compacted bin is non-empty, so the next one is the first non-empty bin right
    # of the split; past the last one, the split sends only missing values right.
    next_position = xp.minimum(position + 1, compact.shape[2] - 1)
    next_bin = xp.where(
        position + 1 < n_nonempty[each_node, feature], chosen_bins[each_node, next_position], -1
    )
    feature, bin_, next_bin, goes_left, best, node_weight, left, right = _to_host_packed(
        xp,
        feature,
        chosen_bins[each_node, position],
        next_bin,
        goes_left,
        best,
        layout.weight(parent, xp),  # the real statistics of the node
        left,
        right,
    )
    _record_winners(
        chosen, chunk, feature, bin_, next_bin, goes_left, best, node_weight, left, right
    )
    if cat is not None:
        has_split = np.isfinite(best)
        winners = np.flatnonzero(has_split & is_categorical[feature])
        if winners.size:
            column = np.searchsorted(cat_features, feature[winners])
            bins = device_to_host(
                bin_index[host_to_device(winners, xp), host_to_device(feature[winners], xp)]
            )
            for k, detail in zip(winners, cat.decode(winners, column, bins), strict=True):
                left[k], right[k] = detail.left, detail.right
                result = chunk[k]
                chosen.missing_left[result] = detail.missing_left
                chosen.kind[result] = MULTIWAY if categorical.multiway else CATEGORICAL_SUBSET
                chosen.left_bins[result] = detail.left_bins
                chosen.present_bins[result] = detail.present_bins
                chosen.branch_stats[result] = detail.branch_stats
                chosen.default_branch[result] = detail.default_branch
                chosen.bin[result] = -1
                chosen.next_bin[result] = -1
        chosen.left_stats[chunk] = left
        chosen.right_stats[chunk] = right


def _select_compiled(search, chosen, chunk, slots, width):
    """:func:`_select_in_chunk` on the CPU for fits with categorical features: one compiled
    call (``kernels/cpu/categorical.py``, the vectorised search's twin) scores every
    feature of every node, visiting only the categories present at each node, and
    chooses the winners; the categorical winners' bins come back as one mask."""
    hist, layout, categorical = search.hist, search.layout, search.categorical
    n = slots.size
    _, n_features, _, n_channels = hist.shape
    width = max(width, 2)
    nonempty = search.nonempty[slots]
    compact = np.zeros((n, n_features, width, n_channels), dtype=hist.dtype)
    if search.compact_input:
        part = hist[slots][:, :, :width]
        compact[:, :, : part.shape[2]] = part
        bin_index = np.broadcast_to(np.arange(width), compact.shape[:3])
    else:
        bin_index = np.empty((n, n_features, width), dtype=np.int64)
        cpu_histograms.compact_rows(search.hist, slots, search.nonempty, compact, bin_index)
    n_nonempty = np.sum(nonempty, axis=2)
    use_missing = search.missing is not None
    if use_missing:
        missing = np.ascontiguousarray(search.missing[slots])
    else:
        missing = np.zeros((1, n_features, n_channels), dtype=hist.dtype)
    use_mask = search.feature_mask is not None
    if use_mask:
        mask = np.ascontiguousarray(search.feature_mask[chunk], dtype=bool)
    else:
        mask = np.ones((1, n_features), dtype=bool)
    is_categorical = np.zeros(n_features, dtype=bool)
    is_categorical[categorical.features] = True
    n_cat = categorical.features.size
    # The vectorised search's passes (its ties are offered pass by pass).
    orderings_per_pass = max(1, _SUBSET_FLOATS_PER_PASS // max(1, n * n_cat * width * n_channels))
    subsets_per_pass = max(1, _SUBSET_FLOATS_PER_PASS // max(1, n * n_cat * n_channels))
    limit, most, binom, offsets = subset_search_tables(
        layout, categorical, int(n_nonempty[:, categorical.features].max(initial=0))
    )
    winners = np.empty((n, WINNER_FIXED_COLUMNS + 2 * n_channels), dtype=np.int64)
    left_positions = np.empty((n, width), dtype=np.uint8)
    default_branch = np.empty(n, dtype=np.int64)
    n_classes = layout.n_classes if layout.is_classification else 0
    cpu_categorical.score_nodes(
        compact,
        n_nonempty,
        missing,
        use_missing,
        mask,
        use_mask,
        is_categorical,
        categorical.multiway,
        layout.scales(),
        SPLIT_CRITERION_CODES[search.criterion],
        n_classes,
        layout.n_channels - 1 if layout.has_count_channel else -1,
        int(search.constraints.min_samples_leaf),
        float(search.constraints.min_weight_leaf),
        SCORE_RTOL,
        orderings_per_pass,
        int(categorical.max_subset),
        limit,
        most,
        binom,
        offsets,
        subsets_per_pass,
        winners,
        left_positions,
        default_branch,
        cpu_categorical.search_scratch(
            n_features, width, n_channels, n_classes, int(categorical.max_subset)
        ),
    )
    feature, position, next_position, goes_left, best, node_weight, left, right = _unpack_winners(
        winners, n_channels
    )
    rows = np.arange(n)
    bins = bin_index[rows, feature]  # (n, width): the bin at each position of the winner's row
    bin_ = bins[rows, np.maximum(position, 0)]
    next_bin = np.where(next_position >= 0, bins[rows, np.maximum(next_position, 0)], -1)
    _record_winners(
        chosen, chunk, feature, bin_, next_bin, goes_left, best, node_weight, left, right
    )
    winners_at = np.flatnonzero(np.isfinite(best) & is_categorical[feature])
    if winners_at.size == 0:
        return
    result = chunk[winners_at]
    chosen.kind[result] = MULTIWAY if categorical.multiway else CATEGORICAL_SUBSET
    chosen.bin[result] = -1
    chosen.next_bin[result] = -1
    bins = bins[winners_at]
    n_present = n_nonempty[winners_at, feature[winners_at]]
    present = np.arange(width)[None, :] < n_present[:, None]
    splits = np.cumsum(n_present)[:-1]
    chosen.present_bins[result] = _object_array(np.split(bins[present], splits))
    if categorical.multiway:
        branches = compact[winners_at, feature[winners_at]].astype(hist.dtype, copy=True)
        if use_missing:
            default = default_branch[winners_at]
            branches[np.arange(winners_at.size), default] += missing[
                winners_at, feature[winners_at]
            ]
        chosen.branch_stats[result] = _object_array(np.split(branches[present], splits))
        chosen.default_branch[result] = default_branch[winners_at]
    else:
        sent_left = left_positions[winners_at] != 0
        left_splits = np.cumsum(np.sum(sent_left, axis=1))[:-1]
        chosen.left_bins[result] = _object_array(np.split(bins[sent_left], left_splits))


def subset_search_tables(layout, categorical, most_present):
    """(limit, most, binom, offsets): the small-subset search's bounds for
    ``kernels/cpu/categorical.py`` (multiclass binary splits only; zeros otherwise), where
    a node holds at most ``most_present`` categories of a feature."""
    limit, most = 0, 0
    multiclass = layout.is_classification and layout.n_classes > 2
    if multiclass and not categorical.multiway and categorical.max_subset >= 1:
        limit = most_categories_for_subsets(categorical.max_subset)
        most = min(most_present, limit)
    binom, offsets = subset_table_counts(most, categorical.max_subset)
    return limit, most, binom, offsets


def subset_table_counts(most, max_subset):
    """For ``kernels/cpu/categorical.py``: binomials C(a, r) (a <= most, r <= the largest
    subset + 1) and, per subset size, the first row of its subsets in the subset table of
    ``most`` categories (:func:`_subset_table`)."""
    largest = min(max_subset, most)
    binom = np.array(
        [[math.comb(a, r) for r in range(largest + 2)] for a in range(most + 1)], dtype=np.int64
    )
    offsets = np.zeros(largest + 2, dtype=np.int64)
    for size in range(1, largest + 1):
        offsets[size + 1] = offsets[size] + binom[most, size]
    return binom, offsets


def _object_array(parts):
    """A 1-D object array holding each of ``parts`` (arrays) as one element."""
    return np.fromiter(parts, dtype=object, count=len(parts))


def _record_winners(
    chosen, chunk, feature, bin_, next_bin, goes_left, best, node_weight, left, right
):
    """Write numeric winners (host arrays, one entry per node of ``chunk``) into
    ``chosen``: ``best`` is the weighted score (-inf: no split), ``node_weight`` the
    node's real weight."""
    has_split = np.isfinite(best)
    chosen.has_split[chunk] = has_split
    chosen.feature[chunk] = np.where(has_split, feature, 0)
    chosen.bin[chunk] = np.where(has_split, bin_, 0)
    chosen.next_bin[chunk] = np.where(has_split, next_bin, 0)
    chosen.missing_left[chunk] = goes_left
    chosen.kind[chunk] = NUMERIC
    chosen.left_bins[chunk] = None
    chosen.present_bins[chunk] = None
    chosen.branch_stats[chunk] = None
    chosen.default_branch[chunk] = 0
    chosen.score[chunk] = np.where(has_split, best / np.where(has_split, node_weight, 1.0), -np.inf)
    chosen.left_stats[chunk] = left
    chosen.right_stats[chunk] = right


class CompiledSearch(NamedTuple):
    """The arguments of a compiled split search (``kernels/_split_scan.py``), on the
    histograms' device. The backends' ``score_splits`` pass them to their kernel in
    this order and return its winner rows (n_nodes, WINNER_FIXED_COLUMNS + 2 *
    n_channels) int64, on the host."""

    hist: Any  # (n_slots, n_features, n_bins, n_channels): present values only
    slots: Any  # (n_nodes,) int64: each node's histogram slot
    n_bins: int
    missing: Any  # (n_slots, n_features, n_channels), or a 1-slot stand-in
    use_missing: bool
    feature_mask: Any  # (n_nodes, n_features) bool, or a 1-row stand-in
    use_mask: bool
    # (n_channels + 1,) float64: 2**-exponent, each channel's integers to real units, then
    # the regression centre in the fit's units (StatsLayout.fit_centre; 0: classification)
    scale: Any
    criterion: int  # kernels/_split_scan.py's CRITERION_CODES
    n_classes: int  # 0: regression; the first output's classes where there are several
    # (n_outputs,) int64: one entry per output; a classifier's the end channel of each
    # output's classes (a regressor's are not read)
    outputs: Any
    count_channel: int  # -1: none
    min_samples_leaf: int
    min_weight_leaf: float
    rtol: float  # criteria.SCORE_RTOL
    # (n_features,) int64: each feature's monotonicity constraint (MonotonicBounds.cst;
    # all 0 without constraints, where nothing else of them is read)
    monotonic_cst: Any
    # (n_nodes,) float64, in the order of ``slots``: each node's bounds on its children's
    # values (MonotonicBounds.lower and upper; -inf and +inf without constraints)
    lower: Any
    upper: Any


def compiled_scan_scores(layout, criterion) -> bool:
    """Whether the compiled split scan (``kernels/_split_scan.py``) scores a fit's
    ``criterion``: every one, of one output or several, but Poisson of several."""
    return not (layout.n_outputs > 1 and criterion == "poisson")


def compiled_search(
    hist, slots, missing, feature_mask, criterion, layout, constraints, xp, monotonic=None
):
    """The :class:`CompiledSearch` of these nodes (``slots``, host int64) and ``hist``,
    ``missing`` (or None), ``feature_mask`` (host, or None) and ``monotonic`` (a
    :class:`MonotonicBounds`, or None) as :func:`select_splits` takes them. The small host
    tables go to the device in one copy."""
    _, n_features, n_bins, n_channels = hist.shape
    n_nodes = slots.size
    use_missing = missing is not None
    if not use_missing:
        missing = xp.zeros((1, n_features, n_channels), dtype=hist.dtype)
    if xp is np:
        # Contiguous host arrays: one compiled signature per statistics type for the CPU
        # twin, and the CUDA simulator copies each argument whole (a view it refuses).
        # The missing rows as int64 whatever the histograms' type, as the subtree
        # finisher passes them: the CPU searches then share their candidate scoring's
        # compiled code (a few values per node and feature to widen).
        hist = np.ascontiguousarray(hist)
        missing = np.ascontiguousarray(missing, dtype=np.int64)
    use_mask = feature_mask is not None
    mask = np.ones((1, n_features), dtype=np.int64)
    if use_mask:
        mask = np.asarray(feature_mask, dtype=np.int64)
    centre = layout.fit_centre if not layout.is_classification else 0.0
    scale_bits = np.append(layout.scales(), centre).view(np.int64)
    n_classes, outputs = scan_outputs(layout)
    if monotonic is None:
        cst = np.zeros(n_features, dtype=np.int64)
        lower, upper = np.full(n_nodes, -np.inf), np.full(n_nodes, np.inf)
    else:
        cst = np.asarray(monotonic.cst, dtype=np.int64)
        lower = np.ascontiguousarray(monotonic.lower, dtype=np.float64)
        upper = np.ascontiguousarray(monotonic.upper, dtype=np.float64)
    parts = [
        slots.astype(np.int64),
        mask.ravel(),
        outputs,
        cst,
        lower.view(np.int64),
        upper.view(np.int64),
        scale_bits,
    ]
    tables = host_to_device(np.concatenate(parts), xp)
    ends = np.cumsum([part.size for part in parts])
    slot_table, mask_table, output_table, cst_table, lower_bits, upper_bits, scale_table = (
        tables[start:end] for start, end in zip([0, *ends[:-1]], ends, strict=True)
    )
    return CompiledSearch(
        hist=hist,
        slots=slot_table,
        n_bins=n_bins,
        missing=missing,
        use_missing=use_missing,
        feature_mask=mask_table.reshape(mask.shape),
        use_mask=use_mask,
        outputs=output_table,
        scale=scale_table.view(np.float64),
        criterion=SPLIT_CRITERION_CODES[criterion],
        n_classes=n_classes,
        count_channel=layout.n_channels - 1 if layout.has_count_channel else -1,
        min_samples_leaf=int(constraints.min_samples_leaf),
        min_weight_leaf=float(constraints.min_weight_leaf),
        rtol=SCORE_RTOL,
        monotonic_cst=cst_table,
        lower=lower_bits.view(np.float64),
        upper=upper_bits.view(np.float64),
    )


def _unpack_winners(packed, n_channels):
    """The winner rows (``kernels/_split_scan.py``'s WINNER_* columns, on the host) as
    the arrays :func:`_record_winners` takes."""
    first = WINNER_FIXED_COLUMNS
    values = np.ascontiguousarray(packed[:, [WINNER_SCORE, WINNER_NODE_WEIGHT]]).view(np.float64)
    return (
        packed[:, WINNER_FEATURE],
        packed[:, WINNER_BIN],
        packed[:, WINNER_NEXT_BIN],
        packed[:, WINNER_MISSING_LEFT] != 0,
        values[:, 0],
        values[:, 1],
        packed[:, first : first + n_channels],
        packed[:, first + n_channels : first + 2 * n_channels],
    )


def _to_host_packed(xp, *columns):
    """``device_to_host`` of each of ``columns`` (per-node results: 1-D, or 2-D
    statistics), in one copy: packed into one int64 array, float64 columns by their bits,
    and unpacked on the host to their own types."""
    parts = []
    for column in columns:
        if column.dtype.kind == "f":
            column = xp.ascontiguousarray(column, dtype=np.float64).view(np.int64)
        column = column.astype(np.int64, copy=False)
        parts.append(column if column.ndim == 2 else column[:, None])
    packed = device_to_host(xp.concatenate(parts, axis=1))
    out, start = [], 0
    for column, part in zip(columns, parts, strict=True):
        values = packed[:, start : start + part.shape[1]]
        start += part.shape[1]
        if column.dtype.kind == "f":
            values = np.ascontiguousarray(values).view(np.float64)
        values = values.astype(column.dtype, copy=False)
        out.append(values if column.ndim == 2 else values[:, 0])
    return out


def _take(array, index):
    """``array[:, index]``, or None for None."""
    if array is None:
        return None
    return array[:, index]


def _take_last(array, index, xp):
    """``array[..., index]`` with one index per row: ``index`` has ``array``'s shape
    without the last axis."""
    return xp.take_along_axis(array, index[..., None], axis=-1)[..., 0]


def _tied(search, score, best, parent, divisor=None):
    """Whether ``score`` ties with ``best`` (the highest score it is compared with): lies
    within :func:`~gpu_tree.growing.criteria.score_tolerance` of it, so that rounding
    cannot tell them apart. ``parent``: the statistics of their node, broadcastable to
    ``best.shape + (n_channels,)``; ``divisor`` (gain_ratio, else None): the split
    information of ``best``. -inf scores (not allowed) never tie with a finite ``best``.
    """
    tolerance = score_tolerance(search.criterion, search.layout, parent, best, search.xp, divisor)
    return score >= best - tolerance


def _first_near_max(search, score, parent, divisor=None):
    """Along the last axis of ``score``: the index of the first score that ties with the
    maximum (:func:`_tied`), so the lowest index wins among scores that rounding cannot
    tell apart, whichever of them rounded highest on this device.

    ``parent``: the statistics of the scored candidates' node, broadcastable to
    ``score.shape[:-1] + (n_channels,)``; ``divisor`` (gain_ratio, like ``score``, else
    None): each score's split information. A row of -inf gives index 0.
    """
    xp = search.xp
    at_max = xp.argmax(score, axis=-1)[..., None]
    best = xp.take_along_axis(score, at_max, axis=-1)
    best_divisor = None if divisor is None else xp.take_along_axis(divisor, at_max, axis=-1)
    return xp.argmax(_tied(search, score, best, parent[..., None, :], best_divisor), axis=-1)


def _compact(hist, nonempty, width, xp):
    """Move each (node, feature) row's non-empty bins to the front, keeping their order.

    Returns the compacted histogram (n, n_features, width, n_channels) and, for each
    compacted position, the original bin index (-1 past the row's non-empty bins).
    """
    n, n_features, _, n_channels = hist.shape
    position = xp.cumsum(nonempty, axis=2) - 1
    node_i, feature_i, bin_i = xp.nonzero(nonempty)
    target = position[node_i, feature_i, bin_i]
    compact = xp.zeros((n, n_features, width, n_channels), dtype=hist.dtype)
    compact[node_i, feature_i, target] = hist[node_i, feature_i, bin_i]
    bin_index = xp.full((n, n_features, width), -1, dtype=xp.int64)
    bin_index[node_i, feature_i, target] = bin_i
    return compact, bin_index


def _score_candidates(search, compact, n_nonempty, missing, feature_mask, monotonic=None):
    """Scores of every (node, feature, position) candidate; -inf where a split is not
    allowed.

    ``compact`` holds each row's ``n_nonempty`` non-empty bins first, so "the bin is
    non-empty and so is the right side" is just ``position < n_nonempty - 1``: the row
    counts are only needed for a ``min_samples_leaf`` above 1. ``feature_mask`` (n, F)
    bool or None: the features each node may use.

    With ``missing`` (n, n_features, n_channels), each candidate is scored with the
    missing rows on the left and on the right; the better side wins (tied scores: the
    side holding more present rows), and one more candidate per feature, every present
    value left and the missing ones right, is allowed. Returns what
    :func:`_score_sides` returns. ``monotonic``: see :func:`_allowed`.
    """
    xp = search.xp
    cumulative = xp.cumsum(compact, axis=2)
    total = cumulative[:, :, -1:, :]
    if missing is None:  # the last position cannot be a split: nothing would go right
        cumulative = cumulative[:, :, :-1]
    position = xp.arange(cumulative.shape[2])
    present_left = position[None, None, :] < n_nonempty[:, :, None]
    values_right = position[None, None, :] < (n_nonempty - 1)[:, :, None]
    return _score_sides(
        search, cumulative, total, missing, present_left, values_right, feature_mask, monotonic
    )


def _score_sides(
    search, left, total, missing, present_left, values_right, feature_mask, monotonic=None
):
    """Score candidate splits given by the present rows they send left.

    ``left`` (n, F, P, C): statistics of the present rows each candidate sends left;
    ``total`` (n, F, 1, C): of all present rows; ``present_left`` / ``values_right``
    (n, F, P): whether some present row goes left / right. Without missing values a
    candidate needs both sides non-empty. With ``missing`` (n, F, C) each candidate is
    also scored with the missing rows on either side (see :func:`_score_candidates`).
    Returns the scores (-inf where not allowed), where missing rows go (or None), and for
    gain_ratio the split information of each scored split (else None; see
    :func:`_first_near_max`).
    """
    criterion, layout, xp = search.criterion, search.layout, search.xp
    # The histograms' integers (exact sums: right = total - left exactly) become real
    # statistics here, where scoring starts.
    right = layout.real(total - left, xp)
    left = layout.real(left, xp)
    total = layout.real(total, xp)
    if missing is None:
        # Ranked by w * score: w is constant within a node, and dropping the division
        # saves passes over every candidate; the winner's score is divided by w afterwards.
        score = weighted_split_score(criterion, layout, left, right, parent=total, xp=xp)
        allowed = _allowed(
            search, present_left & values_right, left, right, feature_mask, monotonic
        )
        divisor = _divisor(search, left, right)
        return xp.where(allowed, score, -xp.inf), None, divisor

    has_missing = (layout.count(missing, xp) > 0)[:, :, None]
    m = layout.real(missing, xp)[:, :, None, :]
    parent = total + m
    score_left = weighted_split_score(criterion, layout, left + m, right, parent=parent, xp=xp)
    score_right = weighted_split_score(criterion, layout, left, right + m, parent=parent, xp=xp)
    allowed_left = _allowed(
        search, present_left & values_right, left + m, right, feature_mask, monotonic
    )
    allowed_right = _allowed(
        search,
        present_left & (values_right | has_missing),
        left,
        right + m,
        feature_mask,
        monotonic,
    )
    score_left = xp.where(allowed_left, score_left, -xp.inf)
    score_right = xp.where(allowed_right, score_right, -xp.inf)
    divisor_left = _divisor(search, left + m, right)
    divisor_right = _divisor(search, left, right + m)
    # The better side; tied sides (scores within rounding): the one holding more present
    # rows, as in _first_near_max for these two scores with that side first.
    more_rows_left = layout.count(left, xp) >= layout.count(right, xp)
    better_left = score_left > score_right
    divisor = None
    if divisor_left is not None:
        divisor = xp.where(better_left, divisor_left, divisor_right)
    best = xp.maximum(score_left, score_right)
    tied = _tied(search, xp.minimum(score_left, score_right), best, parent, divisor)
    missing_left = xp.where(tied, more_rows_left, better_left)
    score = xp.where(missing_left, score_left, score_right)
    if divisor is not None:
        divisor = xp.where(missing_left, divisor_left, divisor_right)
    return score, missing_left, divisor


def _has_divisor(search) -> bool:
    """Whether candidates carry a divisor (:func:`_divisor`) their ties are judged with."""
    return search.criterion in ("gain_ratio", "poisson")


def _divisor(search, left, right):
    """gain_ratio: the split information of splits into ``left`` and ``right`` (what their
    scores are divided by); poisson: their term scale (criteria.poisson_term_scale, which
    their rounding scales with); None for the other criteria."""
    layout, xp = search.layout, search.xp
    if search.criterion == "poisson":
        children = xp.stack(xp.broadcast_arrays(left, right), axis=-2)
        return poisson_split(layout, children, left + right, xp)[1]
    if search.criterion != "gain_ratio":
        return None
    left_weight = layout.weight(left, xp)
    weight = left_weight + layout.weight(right, xp)
    return split_info(left_weight / xp.where(weight > 0, weight, 1.0), xp)


# Candidates per scoring pass of categorical features (multiclass: per-class orderings
# and small subsets): bounds the temporaries (nodes x features x candidates x channels).
_SUBSET_FLOATS_PER_PASS = 1 << 24


@dataclass
class _CategoricalDetail:
    """The chosen categorical split of one node, on the host."""

    left: np.ndarray  # statistics of the rows sent left (multiway: all rows)
    right: np.ndarray  # (multiway: zeros)
    missing_left: bool
    left_bins: np.ndarray | None  # bins sent left (subset splits)
    present_bins: np.ndarray  # bins present at the node, ascending
    branch_stats: np.ndarray | None  # multiway: one row per present bin
    default_branch: int


class _CategoricalScores:
    """Best categorical candidate per (node, categorical feature) and how to rebuild it.

    Candidates come in families, tried in this order (ties, scores within rounding of each
    other, go to the earlier one):

    - prefixes of the node's categories ordered by a statistic: P(class 1) for binary
      targets and the mean for regression, where the best prefix is the best subset
      (Breiman et al. 1984; Fisher 1958 for squared error); for multiclass targets one
      ordering per class, P(c), a heuristic;
    - multiclass only: every subset of at most ``max_subset`` categories (Zaki and
      Meira's Algorithm 19.3 with l = max_subset): exhaustive when a node holds at most
      2 * max_subset + 1 categories; tried at nodes whose categories give at most
      :data:`MAX_SUBSET_CANDIDATES` such subsets.
    - multiway mode instead has a single candidate per feature: one branch per category.
    """

    def __init__(self, search, compact, n_nonempty, missing, parent):
        self.compact, self.n_nonempty, self.missing = compact, n_nonempty, missing
        self.search, self.layout, self.xp = search, search.layout, search.xp
        self.parent = parent  # (n, F_cat, n_channels): each node's statistics
        xp = self.xp
        n, n_cat = compact.shape[:2]
        self.best = xp.full((n, n_cat), -xp.inf, dtype=SCORE_DTYPE)
        # gain_ratio: the split information of the best candidate (poisson: its term
        # scale; else None).
        self.divisor = xp.ones((n, n_cat)) if _has_divisor(search) else None
        self.index = xp.zeros((n, n_cat), dtype=xp.int64)
        self.family = xp.zeros((n, n_cat), dtype=xp.int64)
        self.missing_left = xp.zeros((n, n_cat), dtype=bool)
        # Per family: decoder(node, column, index) -> the positions it sends left.
        self.families = []
        self.default = None  # multiway: (n, F_cat) position of the branch of missing rows

    def offer(self, score, missing_left, decoder, divisor=None):
        """Keep, per (node, feature), the family's best candidate if it beats the best so
        far by more than rounding. ``score``, ``missing_left`` (or None) and ``divisor``
        (gain_ratio's split information, else None): (n, F_cat, candidates)."""
        xp, search = self.xp, self.search
        index = _first_near_max(search, score, self.parent, divisor)
        best = _take_last(score, index, xp)
        best_divisor = None if divisor is None else _take_last(divisor, index, xp)
        # Not better when tied: the earlier family wins ties.
        tied = _tied(search, self.best, best, self.parent, best_divisor)
        better = (best > self.best) & ~tied
        if divisor is not None:
            self.divisor = xp.where(better, best_divisor, self.divisor)
        self.best = xp.where(better, best, self.best)
        self.index = xp.where(better, index, self.index)
        self.family = xp.where(better, len(self.families), self.family)
        if missing_left is not None:
            chosen = _take_last(missing_left, index, xp)
            self.missing_left = xp.where(better, chosen, self.missing_left)
        self.families.append(decoder)

    def decode(self, nodes, columns, bins):
        """The split of feature column ``columns[k]`` at node ``nodes[k]`` (of the
        chunk); ``bins[k]`` maps the positions of that node and feature to bins."""
        xp, layout = self.xp, self.layout
        at = (host_to_device(nodes, xp), host_to_device(columns, xp))
        index = device_to_host(self.index[at])
        family = device_to_host(self.family[at])
        chosen_missing_left = device_to_host(self.missing_left[at])
        if self.default is not None:
            defaults = device_to_host(self.default[at])
        details = []
        for k, (node, column) in enumerate(zip(nodes, columns, strict=True)):
            compact = device_to_host(self.compact[int(node), int(column)])  # (width, n_channels)
            n_nonempty = int(device_to_host(self.n_nonempty[int(node), int(column)]))
            missing = (
                layout.zeros()
                if self.missing is None
                else device_to_host(self.missing[int(node), int(column)])
            )
            present = compact[:n_nonempty]
            total = present.sum(axis=0)
            if self.default is not None:  # multiway
                default = int(defaults[k])
                branches = present.copy()
                branches[default] += missing
                details.append(
                    _CategoricalDetail(
                        total + missing,
                        np.zeros_like(total),
                        False,
                        None,
                        bins[k][:n_nonempty],
                        branches,
                        default,
                    )
                )
                continue
            positions = np.sort(self.families[family[k]](node, column, int(index[k])))
            left = present[positions].sum(axis=0)
            right = total - left
            if self.missing is None:
                goes_left = bool(layout.count(left) >= layout.count(right))
            else:
                goes_left = bool(chosen_missing_left[k])
            if goes_left:
                left = left + missing
            else:
                right = right + missing
            details.append(
                _CategoricalDetail(
                    left, right, goes_left, bins[k][positions], bins[k][:n_nonempty], None, 0
                )
            )
        return details


def _category_order_keys(compact, layout, xp):
    """Per position, the statistic categories are ordered by: (n, F, n_orderings, width)."""
    compact = layout.real(compact, xp)
    weight = layout.weight(compact, xp)
    safe = xp.where(weight > 0, weight, 1.0)
    if not layout.is_classification or layout.n_classes == 2:
        # Channel 1 holds sum(w y) (regression: key = the mean target) or the weight of
        # class 1 (binary: key = P(class 1)).
        return (compact[..., 1] / safe)[:, :, None, :]
    fractions = layout.class_weights(compact) / safe[..., None]  # P(c), one ordering per c
    return xp.moveaxis(fractions, -1, 2)


def _subset_table(n_categories, max_size):
    """Every subset of 1..max_size of range(n_categories), padded with n_categories."""
    from itertools import combinations

    width = min(max_size, n_categories)
    subsets = [
        combo + (n_categories,) * (width - size)
        for size in range(1, width + 1)
        for combo in combinations(range(n_categories), size)
    ]
    return np.array(subsets, dtype=np.int64).reshape(len(subsets), width)


# Exhaustive subsets (Algorithm 19.3) are tried at a node whose present categories give at
# most this many: their number grows as K**l, so past it the orderings' prefixes (linear
# in K) are the search, and time and memory stay linear in the number of categories.
MAX_SUBSET_CANDIDATES = 1 << 16


def _subset_count(n_categories, max_size):
    """Subsets of 1..max_size of n categories, counted up to just past the cap."""
    count = 0
    for size in range(1, min(max_size, n_categories) + 1):
        count += math.comb(n_categories, size)
        if count > MAX_SUBSET_CANDIDATES:
            break
    return count


@functools.lru_cache(maxsize=64)
def most_categories_for_subsets(max_size: int) -> int:
    """The most categories a node may hold for its subsets of at most ``max_size`` to be
    tried (361 for subsets of at most 2)."""
    low, high = 0, MAX_SUBSET_CANDIDATES  # _subset_count grows with n: bisect
    while low < high:
        middle = (low + high + 1) // 2
        if _subset_count(middle, max_size) <= MAX_SUBSET_CANDIDATES:
            low = middle
        else:
            high = middle - 1
    return low


def _score_categorical(search, compact, n_nonempty, missing, feature_mask):
    """Best split of each (node, categorical feature); see :class:`_CategoricalScores`.

    ``compact`` (n, F_cat, width, C) holds each row's ``n_nonempty`` categories present
    first (empty categories are no candidates: they send no row anywhere).
    """
    criterion, layout, xp = search.criterion, search.layout, search.xp
    constraints, categorical = search.constraints, search.categorical
    n, n_cat, width, _ = compact.shape
    position = xp.arange(width)
    present = position[None, None, :] < n_nonempty[:, :, None]
    total = xp.sum(compact, axis=2)
    # The node's real statistics: the parent of every candidate.
    parent = layout.real(total if missing is None else total + missing, xp)
    scores = _CategoricalScores(search, compact, n_nonempty, missing, parent)
    if categorical.multiway:
        counts = xp.where(present, layout.count(compact, xp), -1.0)
        default = xp.argmax(counts, axis=2)  # the largest branch takes missing rows
        scores.default = default
        branches = compact
        if missing is not None:
            branches = (
                compact
                + (position[None, None, :, None] == default[..., None, None])
                * (missing[:, :, None, :])
            )
        branches = layout.real(branches, xp)
        score = weighted_multiway_split_score(criterion, layout, branches, parent, xp)
        allowed = n_nonempty >= 2
        branch_count = xp.where(present, layout.count(branches, xp), xp.inf)
        branch_weight = xp.where(present, layout.weight(branches, xp), xp.inf)
        if constraints.min_samples_leaf > 1:
            allowed = allowed & (xp.min(branch_count, axis=2) >= constraints.min_samples_leaf)
        if constraints.min_weight_leaf > 0:
            allowed = allowed & (xp.min(branch_weight, axis=2) >= constraints.min_weight_leaf)
        if feature_mask is not None:
            allowed = allowed & host_to_device(feature_mask, xp)
        divisor = None
        if criterion == "gain_ratio":
            divisor = branch_split_info(layout.weight(branches, xp), xp)[..., None]
        elif criterion == "poisson":
            divisor = poisson_split(layout, branches, parent, xp)[1][..., None]
        scores.offer(xp.where(allowed, score, -xp.inf)[..., None], None, None, divisor)
        return scores

    # Orderings: sort each row's present categories by the key (absent ones last, ties by
    # code: the sort is stable), then every prefix is a candidate subset.
    keys = _category_order_keys(compact, layout, xp)
    keys = xp.where(present[:, :, None, :], keys, xp.inf)
    order = xp.argsort(keys, axis=-1, **({"kind": "stable"} if xp is np else {}))
    n_orderings = order.shape[2]
    n_channels = compact.shape[3]
    per_pass = max(1, _SUBSET_FLOATS_PER_PASS // max(1, n * n_cat * width * n_channels))
    for first in range(0, n_orderings, per_pass):
        part = order[:, :, first : first + per_pass]
        shape = part.shape + (n_channels,)
        ordered = xp.take_along_axis(
            xp.broadcast_to(compact[:, :, None], shape),
            xp.broadcast_to(part[..., None], shape),
            axis=3,
        )
        left = xp.cumsum(ordered, axis=3).reshape(n, n_cat, part.shape[2] * width, n_channels)
        prefix_end = xp.tile(position, part.shape[2])  # last position of each prefix
        score, missing_left, divisor = _score_sides(
            search,
            left,
            total[:, :, None, :],
            missing,
            prefix_end[None, None, :] < n_nonempty[:, :, None],
            prefix_end[None, None, :] < (n_nonempty - 1)[:, :, None],
            feature_mask,
        )

        def ordering_prefix(node, column, index, first=first):
            ordering, end = divmod(index, width)
            return device_to_host(order[node, column, first + ordering, : end + 1])

        scores.offer(score, missing_left, ordering_prefix, divisor)

    multiclass = layout.is_classification and layout.n_classes > 2
    if multiclass and categorical.max_subset >= 1:
        limit = most_categories_for_subsets(categorical.max_subset)
        eligible = (n_nonempty <= limit)[:, :, None]  # each node on its own categories
        most = min(int(device_to_host(xp.max(n_nonempty))), limit)
        table = _subset_table(most, categorical.max_subset)
        if table.shape[0]:
            size = np.sum(table < most, axis=1)
            largest = np.max(np.where(table < most, table, -1), axis=1)
            padded = xp.concatenate(
                [compact[:, :, :most], xp.zeros_like(compact[:, :, :1])], axis=2
            )
            per_pass = max(1, _SUBSET_FLOATS_PER_PASS // max(1, n * n_cat * compact.shape[3]))
            for first in range(0, table.shape[0], per_pass):
                part = table[first : first + per_pass]
                subset_left = padded[:, :, host_to_device(part[:, 0], xp)]
                for j in range(1, part.shape[1]):
                    subset_left = subset_left + padded[:, :, host_to_device(part[:, j], xp)]
                device_size = host_to_device(size[first : first + per_pass], xp)
                device_largest = host_to_device(largest[first : first + per_pass], xp)
                score, missing_left, divisor = _score_sides(
                    search,
                    subset_left,
                    total[:, :, None, :],
                    missing,
                    (device_largest[None, None, :] < n_nonempty[:, :, None]) & eligible,
                    device_size[None, None, :] < n_nonempty[:, :, None],
                    feature_mask,
                )

                def subset(node, column, index, part=part):
                    members = part[index]
                    return members[members < most]

                scores.offer(score, missing_left, subset, divisor)
    return scores


def _allowed(search, base, left, right, feature_mask, monotonic=None):
    """``base`` and the leaf-size constraints on both sides and the feature mask, and
    ``monotonic`` (None, or (cst, lower, upper) broadcastable to the candidates: see
    :class:`MonotonicBounds`) on the sides' values."""
    layout, constraints, xp = search.layout, search.constraints, search.xp
    allowed = base
    if monotonic is not None:
        cst, lower, upper = monotonic
        left_value = monotonic_value(layout, left, xp)
        right_value = monotonic_value(layout, right, xp)
        allowed = allowed & monotonic_admissible(cst, lower, upper, left_value, right_value, xp)
    if constraints.min_samples_leaf > 1:
        allowed = allowed & (layout.count(left, xp) >= constraints.min_samples_leaf)
        allowed &= layout.count(right, xp) >= constraints.min_samples_leaf
    if constraints.min_weight_leaf > 0:
        allowed = allowed & (layout.weight(left, xp) >= constraints.min_weight_leaf)
        allowed &= layout.weight(right, xp) >= constraints.min_weight_leaf
    if feature_mask is not None:
        allowed = allowed & host_to_device(feature_mask, xp)[:, :, None]
    return allowed


def midpoint(lower, upper):
    """Threshold between two neighbouring values, as scikit-learn's exact splitter computes it.

    ``lower/2 + upper/2`` cannot overflow; where rounding lands on ``upper`` (or the sum is
    not finite) the lower value is used, so ``lower <= threshold < upper`` always holds.
    """
    lower = np.asarray(lower, dtype=np.float64)
    upper = np.asarray(upper, dtype=np.float64)
    with np.errstate(invalid="ignore"):  # inf + -inf (a bin with no bounds): handled below
        mid = lower / 2.0 + upper / 2.0
    bad = (mid >= upper) | ~np.isfinite(mid)
    return np.where(bad, lower, mid)
