"""Grow a tree from a backend's histograms; fill the shared :class:`Tree`.

The tree-growing loop of Zaki and Meira, *Data Mining and Machine Learning*, Algorithm
19.1 (as in Breiman et al.'s CART, 1984, and Quinlan's ID3, 1986): evaluate every open
node's best split, split the nodes whose split is accepted, repeat on the children.

Level-wise by default: every open node of a depth is one batch, so a backend builds the
histograms of a whole level in one pass (one launch on the GPU). With
``max_leaf_nodes`` the grower expands best-first (the node whose split decreases the
weighted impurity most), as scikit-learn does, still asking for both children's
histograms at once. The grower never touches rows itself and does not know whether the
backend holds numpy or cupy arrays: it talks to the backend only through the contract
:class:`gpu_tree.backends.contract.HistogramBackend`.

Vocabulary: a node's *size* is its number of rows; a node's *histogram slot* is its
position along the first axis of a batch of histograms; a *compact bin* is one position
along the bin axis of a compact histogram.
"""

from __future__ import annotations

import heapq
import logging
import time
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np

from gpu_tree.backends.contract import HistogramBackend, SubtreeCategories
from gpu_tree.backends.cpu import score_splits_on_cpu
from gpu_tree.backends.rows import PendingCopy
from gpu_tree.data.stats import StatsLayout, bitsets
from gpu_tree.growing.absolute_error import (
    absolute_error_search,
    medians_and_deviations,
    node_medians,
)
from gpu_tree.growing.criteria import (
    LINEAR_SCORE_CRITERIA,
    ROW_MEASURED_CRITERIA,
    branch_split_info,
    log2_cost_measure,
    monotonic_child_bounds,
    monotonic_value,
    node_impurity,
    poisson_split,
    score_tolerance,
    split_info,
)
from gpu_tree.growing.random_draws import (
    child_keys,
    draw_features,
    feature_order,
    root_keys,
    take_drawn,
    uniform_draws,
)
from gpu_tree.growing.splitting import (
    SCORE_RTOL,
    CategoricalSearch,
    ChosenSplits,
    MonotonicBounds,
    SplitConstraints,
    midpoint,
    select_splits,
    subset_search_tables,
)
from gpu_tree.kernels import cpu as cpu_kernels
from gpu_tree.kernels import cpu_subtrees
from gpu_tree.model.tree import (
    CATEGORICAL_SUBSET,
    MULTIWAY,
    NUMERIC,
    TREE_LEAF,
    TREE_UNDEFINED,
    Tree,
)
from gpu_tree.utils.device_copies import device_to_host
from gpu_tree.utils.fit_stats import SETUP, count_per_level, enter_level
from gpu_tree.utils.phase_timer import PhaseTimer
from gpu_tree.utils.progress import grower_logger as logger
from gpu_tree.utils.progress import step

# Cells (nodes x features x compact bins) per chunk of compact histograms: bounds their
# memory.
_COMPACT_CELLS_PER_CHUNK = 1 << 21

# Open nodes with fewer rows than this grow their whole subtree in one compiled call
# (the backend's finish_subtrees, where it has one: kernels/cpu_subtrees.py) instead of
# level by level; and a whole tree whose root has fewer than FINISH_ROOT_BELOW_ROWS.
# Chosen by measurement (bench/RESULTS.md): below 256 rows the compiled
# search costs less than a level's vectorised one; a root of a few thousand rows is
# cheaper finished at once than by a few vectorised levels first.
FINISH_BELOW_ROWS = 256
FINISH_ROOT_BELOW_ROWS = 2048
# A fit with categorical features finishes nodes this many times larger: its level-wise
# subset search costs more Python per node. Measured over 256 to 16,384 rows
# (bench/RESULTS.md): nursery's fully grown fit 31 -> 18 ms at 1,024, adult's 10,000 rows
# 89 -> 74 ms, 100,000 cat20 rows 354 -> 280 ms, while adult's depth 10 lost 10 %;
# numeric data gained nothing above 256 (Higgs-shaped 100,000 rows lost up to 1.6x).
CATEGORICAL_FINISH_FACTOR = 4

# A fit drawing at most this fraction of the features per node (forests: sqrt of them)
# builds the histograms of the drawn features only, every node's from its rows, where the
# backend can (drawn_histograms), instead of every feature's for the smaller child and
# the subtraction trick for the larger: both children's rows times the drawn features
# against the smaller child's rows times all of them, and no subtraction pass.
DRAWN_ONLY_MAX_FRACTION = 1 / 3

# scikit-learn's EPSILON: classification impurities at or below it count as pure (see
# Grower._pure_impurity), and it is the slack on the min_impurity_decrease comparison.
EPSILON = np.finfo(np.float64).eps

# The context of a phase when no timer is given: nothing to do.
_UNTIMED = nullcontext()
# A max_depth above this is no total for a progress bar (an unlimited tree's is int64's
# largest): the bar counts levels without an ETA.
_LEVELS_SHOWN_AS_A_TOTAL = 1000


@dataclass
class GrowthParams:
    criterion: str
    max_depth: int
    min_samples_split: int = 2
    min_samples_leaf: int = 1
    min_weight_leaf: float = 0.0
    min_purity: float = 1.0
    min_impurity_decrease: float = 0.0
    max_leaf_nodes: int | None = None
    max_features: int | None = None  # features drawn per node; None: all
    # The draws' seed (gpu_tree.growing.random_draws), and the index of the tree of the
    # first root in its forest (roots r = 0, 1, ... are trees first_tree + r).
    seed: int = 0
    first_tree: int = 0
    # Extremely randomised trees: one random threshold per node and feature (numeric
    # features only), the best of those kept (Geurts, Ernst and Wehenkel, 2006).
    random_thresholds: bool = False
    categorical: CategoricalSearch | None = None
    n_category_words: int = 1  # int64 words of a category bitset (64 categories each)
    # Features with differing costs (float64, one per feature; None: no costs): a node
    # splits on the feature of the highest cost-sensitive measure of its best split's
    # gain and its cost (criteria.log2_cost_measure: cost_criterion, cost_weight), not
    # on the feature of the highest gain (see Grower._select_by_cost).
    feature_costs: np.ndarray | None = None
    cost_criterion: str = "tan_schlimmer"
    cost_weight: float = 1.0
    # Monotonicity constraints (scikit-learn's monotonic_cst): int8, one per feature, +1
    # non-decreasing, -1 non-increasing, 0 free; None: none. Binary classification (over
    # P(class 1)) and regression; checked on every candidate by the split search.
    monotonic_cst: np.ndarray | None = None


@dataclass
class _Batch:
    """Nodes whose histograms are ready; ``open_slots`` are the ones to evaluate.

    Histogram slots may be in any node order and may include nodes that are not open (a
    closed smaller sibling still serves the subtraction); nodes are evaluated and split
    in node-id order, so the tree's numbering does not depend on it.
    """

    nodes: np.ndarray  # node id of each histogram slot
    hist: object  # xp array (n_slots, n_features, n_bins or width, n_channels)
    open_slots: np.ndarray
    bin_lower: np.ndarray  # (n_slots or 1, n_features, n_bins or width)
    bin_upper: np.ndarray
    # Compact histograms: the bin code of each compact bin (None: dense histograms, whose
    # bins are the codes, or exact search's distinct values, which have no code).
    bin_code: np.ndarray | None = None
    dense: bool = True  # dense histograms can serve the subtraction trick
    # Compact batches: statistics of the rows missing each feature (n_slots, n_features,
    # n_channels), or None. Dense batches keep them in the backend's missing bin.
    missing: object = None
    # Batches of drawn features' histograms (Grower._drawn_batch): hist[slot, j] is
    # feature drawn_features[slot, j]'s (n_slots, max_features), each slot's in feature
    # order, as far as drawn_mask[slot, j] (a node with fewer non-constant features draws
    # fewer); bin_lower and bin_upper are still per feature.
    drawn_features: np.ndarray | None = None
    drawn_mask: np.ndarray | None = None


@dataclass
class _Evaluated:
    """Nodes of a batch that have an accepted split, with what splitting them needs."""

    nodes: np.ndarray
    hist: object  # the dense batch's histograms (None if there is none)
    hist_slots: np.ndarray  # slot of each node in ``hist`` (-1: it had a compact histogram)
    feature: np.ndarray
    bin: np.ndarray
    threshold: np.ndarray
    left_stats: np.ndarray
    right_stats: np.ndarray
    priority: np.ndarray  # weighted score, for best-first growth
    missing_left: np.ndarray  # bool: where missing values go
    kind: np.ndarray  # uint8 split kind: NUMERIC, CATEGORICAL_SUBSET or MULTIWAY
    left_codes: np.ndarray  # object: category codes sent left (subset splits)
    present_codes: np.ndarray  # object: category codes the node holds (categorical splits)
    branch_stats: np.ndarray  # object: multiway, statistics per present code
    default_branch: np.ndarray  # multiway: branch of missing values and unseen codes


class Grower:
    """Grows one tree through ``backend``.

    Parameters
    ----------
    backend : HistogramBackend
    layout : StatsLayout
        The layout of the backend's statistics.
    params : GrowthParams
    n_features : int
    timer : PhaseTimer, optional
        Records the wall time of each phase (histograms, subtraction, split scoring,
        partition) per level; None (the default) times nothing.
    """

    def __init__(
        self,
        backend: HistogramBackend,
        layout: StatsLayout,
        params: GrowthParams,
        n_features: int,
        timer: PhaseTimer | None = None,
    ):
        self.backend = backend
        self.capabilities = backend.capabilities
        self.timer = timer
        self.xp = backend.xp
        self.layout = layout
        self.params = params
        self.n_features = n_features
        self.constraints = SplitConstraints(params.min_samples_leaf, params.min_weight_leaf)
        n_values = (
            max(layout.class_counts or (layout.n_classes,)) if layout.is_classification else 1
        )
        self.tree = Tree(
            n_features,
            n_values,
            n_category_words=params.n_category_words,
            n_outputs=layout.n_outputs,
            class_counts=layout.class_counts or None,
        )
        # ID3: a feature split multiway is not tested again below (per node, the features
        # its multiway ancestors used).
        self.multiway = params.categorical is not None and params.categorical.multiway
        self._used_multiway = np.zeros((64, n_features), dtype=bool) if self.multiway else None
        # Regression impurities measured on the device, still on their way back (a CUDA
        # backend copies them back with the next split winners): (nodes, weights, one
        # copy per output).
        self._pending_impurities: list[tuple[np.ndarray, np.ndarray, list[PendingCopy]]] = []
        # Monotonicity constraints (None: none): per node id, the bounds [lower, upper] of
        # its value (criteria.monotonic_value), set as scikit-learn's builders set them.
        cst = params.monotonic_cst
        self._monotonic = None if cst is None or not np.any(cst) else np.asarray(cst, np.int8)
        self._node_bounds = np.zeros((0, 2), dtype=np.float64)
        self._finisher = self._subtree_finisher()
        self._finished_subtrees = False  # some subtree was finished: renumber at the end
        # Per node id: the root of its tree (a forest grows a root per tree) and its key
        # for the random draws (random_draws: from the root's and the path's).
        self._node_root = np.zeros(0, dtype=np.int64)
        self._node_key = np.zeros(0, dtype=np.uint64)
        self._drawn_only = self._builds_drawn_histograms_only()

    def _phase(self, name, nodes, features=None):
        """The timer's context for phase ``name`` over ``nodes`` (nothing without a timer).

        The level is the nodes' depth; ``features``: the split features (partition)."""
        timer = self.timer
        if timer is None:
            return _UNTIMED
        nodes = np.asarray(nodes, dtype=np.int64)
        level = int(self.tree.depth[nodes[0]]) if nodes.size else None
        n_rows = int(np.sum(self.backend.node_sizes(nodes))) if nodes.size else 0
        n_features = 0 if features is None else np.unique(np.asarray(features)).size
        return timer.phase(name, level, n_nodes=nodes.size, n_rows=n_rows, n_features=n_features)

    # -- node bookkeeping -------------------------------------------------------------
    def _node_values(self, real_stats):
        layout = self.layout
        if layout.is_classification:
            weight = np.where((w := layout.weight(real_stats)) > 0, w, 1.0)[:, None]
            if layout.n_outputs == 1:
                return layout.class_weights(real_stats) / weight
            # Each output's class fractions, padded with zeros to the most classes.
            values = np.zeros((len(real_stats), layout.n_outputs, max(layout.class_counts)))
            for k, (first, end) in enumerate(layout.output_classes):
                values[:, k, : end - first] = real_stats[:, first:end] / weight
            return values
        return layout.target(layout.centred_means(real_stats))[:, :, None]

    def _add_nodes(self, depth, stats):
        """Add nodes with these (integer) statistics. A regression node's impurity needs its
        rows: it is NaN until :meth:`_measure_impurity`, once the rows are partitioned."""
        layout = self.layout
        real = layout.real(stats)
        if layout.is_classification:
            impurity = node_impurity(self.params.criterion, layout, real)
        else:
            impurity = np.full(stats.shape[0], np.nan)
        return self.tree.add_nodes(
            depth=depth,
            impurity=impurity,
            n_node_samples=layout.count(stats).astype(np.int64),
            weighted_n_node_samples=layout.weight(real),
            value=self._node_values(real),
        )

    def _centred_means(self, stats):
        """Regression: the nodes' centred means, which their variances are measured about
        (None for classification)."""
        if self.layout.is_classification:
            return None
        if self.layout.n_outputs > 1:  # (n_nodes, n_outputs)
            return self.layout.centred_means(self.layout.real(stats))
        return self.layout.centred_mean(self.layout.real(stats))

    def _measure_impurity(self, nodes, stats, means=None):
        """Regression: each node's weighted variance, two-pass on its rows (about the mean
        its sums give, ``means`` if the caller has them: :meth:`_centred_means`), as the
        backend measures it; classification impurities come from the class totals when
        the nodes are added."""
        if self.layout.is_classification:
            return
        weight = self.layout.real(stats)[:, 0]
        if means is None:
            means = self._centred_means(stats)
        # Several outputs: the mean of the outputs' variances, as in scikit-learn.
        if self.layout.n_outputs > 1:
            parts = [
                self.backend.squared_deviation_sums(nodes, means[:, k], output=k)
                for k in range(self.layout.n_outputs)
            ]
        else:
            parts = [self.backend.squared_deviation_sums(nodes, means)]
        if isinstance(parts[0], PendingCopy):
            # NaN until it comes back: _splittable leaves the purity test to _evaluate_batch.
            self._pending_impurities.append((nodes, weight, parts))
        else:
            self._set_impurity(nodes, weight, sum(parts) / len(parts))

    def _set_impurity(self, nodes, weight, squared_deviations):
        # In the fit's units (see StatsLayout.target_exponent) until the tree is grown.
        self.tree.impurity[nodes] = squared_deviations / np.where(weight > 0, weight, 1.0)

    def _receive_impurities(self):
        """Put the impurities that came back from the device (or bring them) into the tree."""
        pending, self._pending_impurities = self._pending_impurities, []
        for nodes, weight, parts in pending:  # the outputs' copies
            self._set_impurity(nodes, weight, sum(part.get() for part in parts) / len(parts))

    def _receive_remaining_impurities(self):
        """After growth: the impurities no split winners brought back (the last children's,
        mostly) in one copy, counted at their level (fit_stats_)."""
        if self._pending_impurities:
            enter_level(
                max(int(self.tree.depth[nodes].max()) for nodes, _, _ in self._pending_impurities)
            )
            self._receive_impurities()

    @property
    def _pure_impurity(self):
        """Impurities at or below this count as pure: scikit-learn's EPSILON for the
        classification impurities (fractions); 0 for regression, whose nodes of equal
        targets measure exactly 0 (kernels/_squared_deviations.py), so that scaling the
        target scales the tree (an absolute bound would make pure a node of y * 2**-30
        that y's tree splits)."""
        return EPSILON if self.layout.is_classification else 0.0

    def _splittable(self, nodes, stats):
        """Stopping rules checked before any split search: among them Zaki and Meira's
        minimum size and purity thresholds (eta and pi, Algorithm 19.1)."""
        p = self.params
        tree = self.tree
        count = tree.n_node_samples[nodes]
        weight = tree.weighted_n_node_samples[nodes]
        ok = (
            (tree.depth[nodes] < p.max_depth)
            & (count >= p.min_samples_split)
            & (count >= 2 * p.min_samples_leaf)
            & (weight >= 2 * p.min_weight_leaf)
            # An impurity still on its way back from the device (NaN) is tested once it
            # comes, with the split winners (_evaluate_batch).
            & ~(tree.impurity[nodes] <= self._pure_impurity)
        )
        if self.layout.is_classification and p.min_purity < 1.0:
            class_weights = self.layout.class_weights(self.layout.real(stats))
            purity = np.max(class_weights, axis=1) / np.where(weight > 0, weight, 1.0)
            ok &= purity < p.min_purity
        return ok

    # -- split search -------------------------------------------------------------------
    def _draws_features(self) -> bool:
        p = self.params
        return p.max_features is not None and p.max_features < self.n_features

    def _builds_drawn_histograms_only(self) -> bool:
        """Whether dense histograms are built for the drawn features only (see
        DRAWN_ONLY_MAX_FRACTION): where the backend can, features are drawn from few
        enough, and the compiled numeric search (which reads only the masked features)
        scores them: no categorical feature, no multiway split."""
        p = self.params
        categorical = p.categorical is not None and p.categorical.features.size > 0
        return (
            self.capabilities.drawn_histograms
            and self._draws_features()
            and p.max_features <= DRAWN_ONLY_MAX_FRACTION * self.n_features
            and not categorical
            and not self.multiway
            and self.capabilities.compiled_search
            and self._compiled_scan_scores()
            # The constrained searches (compiled and vectorised) read each column's
            # constraint by its index, a feature's: a drawn batch's columns are not.
            and self._monotonic is None
        )

    def _compiled_scan_scores(self) -> bool:
        """Whether the compiled split scan (``kernels/_split_scan.py``) scores this fit's
        criterion: every one, of one output or several, but Poisson of several."""
        return not (self.layout.n_outputs > 1 and self.params.criterion == "poisson")

    def _drawn_batch(self, nodes) -> _Batch:
        """A dense batch of ``nodes`` (all open) holding the histograms of their drawn
        features only, built from their rows (see :class:`_Batch`).

        A node draws the first ``max_features`` of its features, in its draw order
        (random_draws.feature_order), that are not constant in it, which their
        histograms tell: the first ``max_features`` in that order are built, then, for
        the nodes that found some constant, the next ``max_features``, until each has
        drawn its own or has none left: the draw of :meth:`_feature_mask`, from fewer
        histograms. Each node's drawn features are kept in feature order, so the split
        search breaks ties between them as it does over every feature.
        """
        n_drawn = self.params.max_features
        order = feature_order(self._node_key[nodes], self.n_features)
        with self._phase("histograms", nodes):
            listed = np.sort(order[:, :n_drawn], axis=1)
            hist = self.backend.empty_histograms(nodes.size, n_drawn)
            built = self.backend.histograms(nodes, out=hist, features=listed)
            eligible = self._non_constant(hist, np.arange(nodes.size), n_drawn)
            short = np.flatnonzero(~eligible.all(axis=1))
            mask = eligible
            if short.size:  # some drawn feature was constant: draw on, for these nodes
                listed[short], mask[short] = self._draw_on(
                    nodes[short], order[short], hist, short, listed[short], eligible[short]
                )
        return _Batch(
            nodes,
            hist,
            np.arange(nodes.size),
            built.bin_lower,
            built.bin_upper,
            drawn_features=listed,
            drawn_mask=mask,
        )

    def _non_constant(self, hist, slots, n_listed):
        """Whether each of the first ``n_listed`` histograms of ``slots`` fills more than one
        bin (the missing values' bin is one of a dense histogram's)."""
        filled = np.empty((slots.size, n_listed), dtype=np.int64)
        positions = np.arange(n_listed)[None]
        cpu_kernels.filled_bins(hist, slots, positions, hist[:1, 0], False, filled)
        return filled > 1

    def _draw_on(self, nodes, order, hist, slots, first_listed, first_eligible):
        """:meth:`_drawn_batch` for nodes of which some first drawn feature was constant:
        keeping the non-constant ones of the first ``max_features`` (``first_listed``,
        their histograms in ``hist[slots]``, ``first_eligible``), the histograms of
        their next features in draw order, ``max_features`` at a time, until
        ``max_features`` are not constant or none is left; writes the drawn ones' into
        ``hist[slots]``, in feature order, and returns them and their mask."""
        n_drawn = self.params.max_features
        # Per node: (feature, its histogram), the first ones' copied out of the slots
        # that the drawn ones are written back to.
        found = [
            [(first_listed[k, j], hist[slots[k], j].copy()) for j in np.flatnonzero(row)]
            for k, row in enumerate(first_eligible)
        ]
        pending = np.arange(nodes.size)
        for first in range(n_drawn, self.n_features, n_drawn):
            if pending.size == 0:
                break
            listed = np.ascontiguousarray(order[pending, first : first + n_drawn])
            part = self.backend.histograms(nodes[pending], features=listed).hist
            eligible = self._non_constant(part, np.arange(pending.size), listed.shape[1])
            taken = take_drawn(eligible, n_drawn, [len(found[k]) for k in pending])
            for row, k in enumerate(pending):
                found[k] += [(listed[row, j], part[row, j]) for j in np.flatnonzero(taken[row])]
            pending = np.asarray([k for k in pending if len(found[k]) < n_drawn], dtype=np.int64)
        features = np.zeros((nodes.size, n_drawn), dtype=np.int64)
        mask = np.zeros((nodes.size, n_drawn), dtype=bool)
        for k, drawn in enumerate(found):
            drawn.sort(key=lambda pair: pair[0])
            for j, (feature, feature_hist) in enumerate(drawn):
                features[k, j] = feature
                mask[k, j] = True
                hist[slots[k], j] = feature_hist
        return features, mask

    def _feature_mask(self, batch: _Batch, slots, usable):
        """The features drawn for the nodes of ``slots`` (None: every feature is searched).

        As in scikit-learn, ``max_features`` are drawn among the features that are not
        constant in the node (its rows fill more than one bin, the missing values' counted),
        and usable (multiway: not used above); a node with fewer such features searches
        them all. The draw is keyed by the node's place in its tree (random_draws), so it
        does not depend on how its level was batched.
        """
        if not self._draws_features():
            return None
        if batch.drawn_mask is not None:  # drawn as its histograms were built
            return batch.drawn_mask[slots]
        if self.xp is np:
            filled = np.empty((slots.size, self.n_features), dtype=np.int64)
            use_missing = batch.missing is not None  # compact batches' missing rows
            missing = batch.missing if use_missing else batch.hist[:1, 0]  # or a stand-in
            every_feature = np.arange(self.n_features)[None]
            cpu_kernels.filled_bins(batch.hist, slots, every_feature, missing, use_missing, filled)
        else:
            filled = (batch.hist[slots] != 0).any(axis=-1).sum(axis=2)
            if batch.missing is not None:
                filled = filled + (batch.missing[slots] != 0).any(axis=-1)
            filled = device_to_host(filled)
        eligible = filled > 1
        if usable is not None:
            eligible &= usable
        keys = self._node_key[batch.nodes[slots]]
        return draw_features(keys, self.n_features, self.params.max_features, eligible)

    def _evaluate(self, batch: _Batch) -> _Evaluated:
        with self._phase("split_scoring", batch.nodes[batch.open_slots]):
            return self._evaluate_batch(batch)

    def _evaluate_batch(self, batch: _Batch) -> _Evaluated:
        p = self.params
        xp = self.xp
        slots = batch.open_slots[np.argsort(batch.nodes[batch.open_slots], kind="stable")]
        nodes = batch.nodes[slots]
        usable = None if not self.multiway else ~self._used_multiway[nodes]
        drawn = self._feature_mask(batch, slots, usable)
        mask = usable if drawn is None else drawn
        on_device = self.capabilities.device == "cuda"  # GPU histograms: see select_splits
        # The backend's compiled split search (the fused kernel on a GPU), where it has one.
        compiled = self.backend.score_splits if self.capabilities.compiled_search else None
        searched = batch  # what the split search reads
        if p.random_thresholds:
            searched = self._random_split_batch(batch, slots)
            xp, on_device, compiled = np, False, score_splits_on_cpu
        if not self._compiled_scan_scores():
            compiled = None
        compact = not searched.dense
        hist, missing = searched.hist, searched.missing
        missing_bin = self.backend.missing_bin
        if searched.dense and missing_bin >= 0:
            hist, missing = searched.hist[:, :, :missing_bin], searched.hist[:, :, missing_bin]

        monotonic = None
        if self._monotonic is not None:
            # Constraints by feature index: every searched column, a random-threshold
            # batch's too, is the feature of its index, since constrained fits build no
            # batch of drawn columns (_builds_drawn_histograms_only).
            bounds = self._node_bounds[nodes]
            monotonic = MonotonicBounds(self._monotonic, bounds[:, 0], bounds[:, 1])

        def search(feature_mask) -> ChosenSplits:
            if p.criterion == "absolute_error":  # medians: searched on the rows
                return absolute_error_search(
                    self.backend,
                    self.layout,
                    self.constraints,
                    batch,
                    slots,
                    hist,
                    missing,
                    feature_mask,
                    drawn_splits=searched if p.random_thresholds else None,
                    monotonic=monotonic,
                )
            return select_splits(
                hist,
                p.criterion,
                self.layout,
                self.constraints,
                feature_mask,
                xp,
                slots,
                compact,
                missing,
                p.categorical,
                on_device=on_device,
                compiled=compiled,
                monotonic=monotonic,
            )

        if p.feature_costs is None:
            chosen = search(mask)
        else:
            chosen = self._select_by_cost(search, mask, self._column_costs(batch, slots))
        # The fraction of its tree's weight a node holds (trees of a forest weigh apart).
        root_weight = self.tree.weighted_n_node_samples[self._node_root[nodes]]
        priority = self.tree.weighted_n_node_samples[nodes] / root_weight * chosen.score
        # Scores are in the fit's units (regression targets may be scaled: StatsLayout).
        min_decrease = self._fit_score(p.min_impurity_decrease)
        self._receive_impurities()  # the copy back that brought the winners brought them
        accept = (
            chosen.has_split
            & (priority + EPSILON >= min_decrease)
            & (self.tree.impurity[nodes] > self._pure_impurity)
        )
        k = np.flatnonzero(accept)
        # A drawn batch's histograms are its drawn features': the search's feature is a
        # position among them (so are the bounds of the random splits made from them).
        position = feature = chosen.feature[k]
        if batch.drawn_features is not None:
            feature = batch.drawn_features[slots[k], position]
        bound_feature = position if searched is not batch else feature
        bound_slot = slots[k] if searched.bin_lower.shape[0] > 1 else np.zeros_like(k)
        next_bin = chosen.next_bin[k]
        threshold = midpoint(
            searched.bin_upper[bound_slot, bound_feature, chosen.bin[k]],
            searched.bin_lower[bound_slot, bound_feature, np.maximum(next_bin, 0)],
        )
        # next_bin -1: every present value goes left, the missing ones right.
        threshold = np.where(next_bin < 0, np.inf, threshold)
        chosen_bin = chosen.bin[k]
        if searched.bin_code is not None:
            chosen_bin = searched.bin_code[slots[k], position, chosen_bin]
        kind = chosen.kind[k]
        categorical = kind != NUMERIC
        threshold = np.where(categorical, TREE_UNDEFINED, threshold)
        chosen_bin = np.where(categorical, -1, chosen_bin)

        def codes(bins, j):
            """Category codes of node k[j]'s (compact) bins ``bins`` of its chosen feature."""
            if bins is None:
                return None
            slot, feature = slots[k[j]], chosen.feature[k[j]]
            if batch.bin_code is not None:  # compact histograms of bin codes
                return batch.bin_code[slot, feature, bins].astype(np.int64)
            if not batch.dense:  # exact search: the compact bins' values are the codes
                return batch.bin_lower[slot, feature, bins].astype(np.int64)
            return np.asarray(bins, dtype=np.int64)  # dense: a bin is a code

        left_codes = np.full(k.size, None, dtype=object)
        present_codes = np.full(k.size, None, dtype=object)
        for j in np.flatnonzero(categorical):
            left_codes[j] = codes(chosen.left_bins[k[j]], j)
            present_codes[j] = codes(chosen.present_bins[k[j]], j)
        return _Evaluated(
            nodes=nodes[k],
            hist=batch.hist if batch.dense else None,
            hist_slots=slots[k] if batch.dense else np.full(k.size, -1),
            feature=feature,
            bin=chosen_bin,
            threshold=threshold,
            left_stats=chosen.left_stats[k],
            right_stats=chosen.right_stats[k],
            priority=priority[k],
            missing_left=chosen.missing_left[k],
            kind=kind,
            left_codes=left_codes,
            present_codes=present_codes,
            branch_stats=chosen.branch_stats[k],
            default_branch=chosen.default_branch[k],
        )

    def _column_costs(self, batch: _Batch, slots) -> np.ndarray:
        """The cost of the feature of each histogram column of the nodes of ``slots``:
        (len(slots), n_columns). A column is a feature, or in a batch of drawn features'
        histograms the node's drawn feature at that position."""
        costs = self.params.feature_costs
        if batch.drawn_features is not None:
            return costs[batch.drawn_features[slots]]
        return np.broadcast_to(costs, (slots.size, self.n_features))

    def _select_by_cost(self, search, mask, column_costs) -> ChosenSplits:
        """The best split of each node among its features' best splits, by the
        cost-sensitive measure (criteria.log2_cost_measure) of their gains and costs.

        ``search(feature_mask)`` is the node's split search (select_splits) restricted to
        ``feature_mask``; ``mask`` (n_nodes, n_columns) bool, or None: the columns each
        node may use; ``column_costs`` (n_nodes, n_columns): their features' costs.

        Each column is searched alone: its best split (threshold, subset or branches) is
        the one of highest gain, since both measures increase with the gain at a fixed
        cost. The gain is the split's score (chosen.score: the impurity decrease, the
        gain ratio or the CART measure) in real units (a regression's targets may be
        scaled, which scales its variance decreases). Measures that rounding cannot tell
        apart tie (a column whose gain, raised by its score's rounding tolerance, measures
        at least the best): the lowest column wins, as in select_splits. A node with no
        allowed split in any column keeps ``has_split`` False.
        """
        p = self.params
        layout = self.layout
        n_nodes, n_columns = column_costs.shape
        per_column: list[ChosenSplits | None] = []
        for column in range(n_columns):
            only = np.zeros((n_nodes, n_columns), dtype=bool)
            only[:, column] = True if mask is None else mask[:, column]
            per_column.append(search(only) if only[:, column].any() else None)
        searched = [chosen for chosen in per_column if chosen is not None]
        if not searched:  # no node may use any column
            return search(np.zeros((n_nodes, n_columns), dtype=bool))
        no_split = np.zeros(n_nodes, dtype=bool)
        has_split = np.stack(
            [no_split if chosen is None else chosen.has_split for chosen in per_column], axis=1
        )
        # A column nobody searched: any search's arrays stand in (never chosen).
        per_column = [searched[0] if chosen is None else chosen for chosen in per_column]
        score = np.stack([chosen.score for chosen in per_column], axis=1)
        tolerance = np.stack([self._score_rounding(chosen) for chosen in per_column], axis=1)
        score = np.where(has_split, score, 0.0)
        if not layout.is_classification:  # the real variance (or deviance) decreases
            score = self._real_score(score)
            tolerance = self._real_score(tolerance)
        measure = log2_cost_measure(p.cost_criterion, score, column_costs, p.cost_weight)
        highest = log2_cost_measure(
            p.cost_criterion, score + tolerance, column_costs, p.cost_weight
        )
        best = np.max(np.where(has_split, measure, -np.inf), axis=1, keepdims=True)
        tied = has_split & (highest >= best)
        winner = np.argmax(tied, axis=1)  # the lowest tied column (0 where none)
        rows = np.arange(n_nodes)
        fields = {
            name: np.stack([getattr(chosen, name) for chosen in per_column], axis=1)[rows, winner]
            for name in ChosenSplits.__dataclass_fields__
        }
        fields["has_split"] = found = tied.any(axis=1)
        fields["score"] = np.where(found, fields["score"], -np.inf)
        return ChosenSplits(**fields)

    def _real_score(self, score):
        """Regression split scores (impurity decreases) in real units from the fit's (its
        targets scaled by 2**-t: a variance scales by 2**-2t, a Poisson deviance and an
        absolute error by 2**-t)."""
        layout = self.layout
        if self.params.criterion in LINEAR_SCORE_CRITERIA:
            return np.ldexp(score, layout.target_exponent)
        return layout.target_variance(score)

    def _fit_score(self, score: float) -> float:
        """A real impurity decrease in the fit's units (:meth:`_real_score`'s inverse)."""
        layout = self.layout
        if self.params.criterion in LINEAR_SCORE_CRITERIA:
            return float(np.ldexp(score, -layout.target_exponent))
        return layout.fit_variance(score)

    def _score_rounding(self, chosen: ChosenSplits) -> np.ndarray:
        """How far each node's chosen score (per unit weight, the fit's units) may be from
        its exact value by rounding: criteria.score_tolerance of its weighted score, per
        unit weight (0 where there is no split)."""
        layout = self.layout
        parent = layout.real(chosen.left_stats + chosen.right_stats)
        weight = layout.weight(parent)
        positive = np.where(weight > 0, weight, 1.0)
        weighted = np.where(chosen.has_split, chosen.score * weight, -np.inf)
        divisor = None
        if self.params.criterion == "gain_ratio":
            divisor = self._split_information(chosen, parent)
        elif self.params.criterion == "poisson":  # the chosen split's term scale
            children = np.stack(
                [layout.real(chosen.left_stats), layout.real(chosen.right_stats)], 1
            )
            divisor = poisson_split(layout, children, parent)[1]
        tolerance = score_tolerance(self.params.criterion, layout, parent, weighted, np, divisor)
        return np.where(chosen.has_split, tolerance / positive, 0.0)

    def _split_information(self, chosen: ChosenSplits, parent) -> np.ndarray:
        """gain_ratio: the split information of each node's chosen split (its score's
        divisor): of its two sides, or of a multiway split's branches."""
        layout = self.layout
        weight = layout.weight(parent)
        left_fraction = layout.weight(layout.real(chosen.left_stats)) / np.where(
            weight > 0, weight, 1.0
        )
        information = split_info(left_fraction)
        for k in np.flatnonzero(chosen.has_split & (chosen.kind == MULTIWAY)):
            branches = layout.weight(layout.real(chosen.branch_stats[k]))
            information[k] = branch_split_info(branches)
        return information

    def _random_split_batch(self, batch: _Batch, slots) -> _Batch:
        """Extremely randomised trees: the batch's histograms of ``slots`` collapsed to
        one random split per node and feature (``kernels.cpu.random_split_histograms``),
        as a compact batch of two bins per feature, on the host, indexed as ``batch``.
        Each node's thresholds are drawn from its key (random_draws.uniform_draws)."""
        hist = device_to_host(batch.hist)
        n_slots, n_features, n_bins, n_channels = hist.shape
        if batch.dense:
            missing_bin = self.backend.missing_bin
            codes = np.broadcast_to(np.arange(n_bins, dtype=np.int64), (1, n_features, n_bins))
            missing = hist[:, :, missing_bin] if missing_bin >= 0 else None
        else:
            missing_bin = -1
            codes = batch.bin_code
            if codes is None:  # exact search: values, no codes
                codes = np.zeros((1, n_features, n_bins), dtype=np.int64)
            missing = None if batch.missing is None else device_to_host(batch.missing)
        lower, upper = batch.bin_lower, batch.bin_upper
        uniform = uniform_draws(self._node_key[batch.nodes[slots]], self.n_features)
        if batch.drawn_features is not None:  # per slot: its drawn features' bounds
            lower, upper = lower[0][batch.drawn_features], upper[0][batch.drawn_features]
            uniform = np.take_along_axis(uniform, batch.drawn_features[slots], axis=1)
            codes = np.broadcast_to(codes, lower.shape)  # indexed as the bounds
        k = slots.size
        out_hist = np.zeros((k, n_features, 2, n_channels), dtype=hist.dtype)
        out_code = np.zeros((k, n_features, 2), dtype=np.int64)
        out_lower = np.zeros((k, n_features, 2), dtype=lower.dtype)
        out_upper = np.zeros((k, n_features, 2), dtype=upper.dtype)
        cpu_kernels.random_split_histograms(
            hist,
            np.asarray(slots, dtype=np.int64),
            missing_bin,
            codes,
            lower,
            upper,
            uniform,
            out_hist,
            out_code,
            out_lower,
            out_upper,
        )

        def by_slot(values):
            out = np.zeros((n_slots, *values.shape[1:]), dtype=values.dtype)
            out[slots] = values
            return out

        return _Batch(
            batch.nodes,
            by_slot(out_hist),
            batch.open_slots,
            by_slot(out_lower),
            by_slot(out_upper),
            bin_code=by_slot(out_code) if batch.bin_code is not None or batch.dense else None,
            dense=False,
            missing=missing,
        )

    def _evaluate_compact(self, nodes) -> list[_Evaluated]:
        """Evaluate nodes through compact histograms, in chunks of similar size.

        A chunk's arrays are n_nodes x n_features x (its largest node's size): grouping
        nodes by size and bounding each chunk keeps memory at a few times the chunk's
        rows, however many small nodes a level holds.
        """
        if len(nodes) == 0:
            return []
        nodes = np.asarray(nodes, dtype=np.int64)
        sizes = self.backend.node_sizes(nodes)
        order = np.argsort(sizes, kind="stable")
        evaluated = []
        start = 0
        while start < nodes.size:
            stop = start + 1
            while (
                stop < nodes.size
                and (stop + 1 - start) * self.n_features * sizes[order[stop]]
                <= _COMPACT_CELLS_PER_CHUNK
            ):
                stop += 1
            chunk = nodes[order[start:stop]]
            with self._phase("histograms", chunk):
                compact = self.backend.compact_histograms(chunk)
            batch = _Batch(
                chunk,
                compact.hist,
                np.arange(chunk.size),
                compact.bin_lower,
                compact.bin_upper,
                compact.bin_code,
                False,
                compact.missing,
            )
            evaluated.append(self._evaluate(batch))
            start = stop
        return evaluated

    def _merge(self, evaluated: list[_Evaluated]) -> _Evaluated:
        """One evaluation in node-id order (dense parts' histograms are concatenated)."""
        if len(evaluated) == 1:
            return evaluated[0]
        dense = [ev for ev in evaluated if ev.hist is not None]
        hist = dense[0].hist if dense else None
        if len(dense) > 1:  # several dense batches (multiway children): one array
            offset = 0
            for ev in dense:
                ev.hist_slots = np.where(ev.hist_slots >= 0, ev.hist_slots + offset, -1)
                offset += ev.hist.shape[0]
            hist = self.xp.concatenate([ev.hist for ev in dense])
        fields = {
            name: np.concatenate([getattr(ev, name) for ev in evaluated])
            for name in _Evaluated.__dataclass_fields__
            if name != "hist"
        }
        order = np.argsort(fields["nodes"], kind="stable")
        return _Evaluated(hist=hist, **{name: value[order] for name, value in fields.items()})

    # -- splitting ----------------------------------------------------------------------
    def _split(self, ev: _Evaluated, which: np.ndarray) -> tuple[list[_Batch], np.ndarray]:
        """Split the nodes ``ev.nodes[which]``; return the children that stay open.

        Returns batches of dense histograms and the ids of the open children to evaluate
        through compact histograms.
        """
        multiway = ev.kind[which] == MULTIWAY
        batches, compact = [], []
        for part, split in (
            (which[~multiway], self._split_binary),
            (which[multiway], self._split_multiway),
        ):
            if part.size:
                batch, compact_children = split(ev, part)
                batches += [] if batch is None else [batch]
                compact.append(compact_children)
        compact = np.sort(np.concatenate(compact)) if compact else np.zeros(0, dtype=np.int64)
        return batches, compact

    def _track(self, nodes, root, key):
        """Record ``nodes``' roots and draw keys (the arrays grow with the tree)."""
        size = self._node_root.size
        if self.tree.node_count > size:
            grown = max(self.tree.node_count, 2 * size)
            self._node_root = np.resize(self._node_root, grown)
            self._node_key = np.resize(self._node_key, grown)
            if self._monotonic is not None:
                bounds = np.empty((grown, 2), dtype=np.float64)
                bounds[: self._node_bounds.shape[0]] = self._node_bounds
                self._node_bounds = bounds
        self._node_root[nodes] = root
        self._node_key[nodes] = key
        if self._monotonic is not None:  # unbounded, until a constrained split bounds them
            self._node_bounds[nodes] = (-np.inf, np.inf)

    def _track_children(self, parents, children, branches):
        """Children inherit their parent's root; their keys follow the branch taken."""
        self._track(
            children, self._node_root[parents], child_keys(self._node_key[parents], branches)
        )
        if self._monotonic is not None:  # children inherit their parent's bounds
            self._node_bounds[children] = self._node_bounds[parents]

    def _bound_children(self, features, left, right, left_stats, right_stats):
        """Monotonicity constraints: the bounds of binary splits' children (``left``,
        ``right``: their ids; splits on ``features``), then every child's value clipped
        into its bounds, as scikit-learn clips node values."""
        if self._monotonic is None:
            return
        layout = self.layout
        if self.params.criterion == "absolute_error":
            # The children's medians (the fit's units), measured on their rows: the
            # partition has run. Their values are set, and clipped, once the tree is
            # grown (_grow_all).
            left_value, right_value = (
                node_medians(self.backend, children) for children in (left, right)
            )
        else:
            left_value = monotonic_value(layout, layout.real(left_stats))
            right_value = monotonic_value(layout, layout.real(right_stats))
        bounds = self._node_bounds[left]  # the parents' (inherited)
        left_lower, left_upper, right_lower, right_upper = monotonic_child_bounds(
            self._monotonic[features], bounds[:, 0], bounds[:, 1], left_value, right_value
        )
        self._node_bounds[left, 0], self._node_bounds[left, 1] = left_lower, left_upper
        self._node_bounds[right, 0], self._node_bounds[right, 1] = right_lower, right_upper
        if self.params.criterion != "absolute_error":
            self._clip_values(
                np.concatenate([left, right]), np.concatenate([left_stats, right_stats])
            )

    def _clip_values(self, nodes, stats):
        """Monotonicity constraints: clip the values of ``nodes`` (with these integer
        statistics) into their bounds: P(class 1) (P(class 0) = 1 - it), or the mean."""
        if self._monotonic is None or nodes.size == 0:
            return
        layout = self.layout
        value = monotonic_value(layout, layout.real(stats))
        lower, upper = self._node_bounds[nodes, 0], self._node_bounds[nodes, 1]
        outside = (value < lower) | (value > upper)
        if not outside.any():
            return
        nodes = nodes[outside]
        clipped = np.clip(value[outside], lower[outside], upper[outside])
        if layout.is_classification:
            self.tree.value[nodes, 0, 1] = clipped
            self.tree.value[nodes, 0, 0] = 1.0 - clipped
        else:
            self.tree.value[nodes, 0, 0] = layout.target(clipped)

    def _inherit_used_features(self, parents, children, feature=None):
        """Children's multiway-used features: their parents', plus ``feature``."""
        if not self.multiway:
            return
        used = self._used_multiway
        if self.tree.node_count > used.shape[0]:
            grown = np.zeros((max(self.tree.node_count, 2 * used.shape[0]), used.shape[1]), bool)
            grown[: used.shape[0]] = used
            self._used_multiway = used = grown
        used[children] = used[parents]
        if feature is not None:
            used[children, feature] = True

    def _category_words(self, ev, which):
        """Bitset of the codes each subset node sends left, as the tree stores it: where
        missing values go left, so do the categories the node did not see (the set is
        then the complement of the codes sent right)."""
        n_words = self.tree.n_category_words
        words = np.zeros((which.size, n_words), dtype=np.int64)
        subset = np.flatnonzero(ev.kind[which] == CATEGORICAL_SUBSET)
        if subset.size == 0:
            return words
        nodes = which[subset]
        left = bitsets(ev.left_codes[nodes], n_words)
        right = bitsets(ev.present_codes[nodes], n_words) & ~left  # the left codes are present
        words[subset] = np.where(ev.missing_left[nodes][:, None], ~right, left)
        return words

    def _split_binary(self, ev: _Evaluated, which: np.ndarray) -> tuple[_Batch | None, np.ndarray]:
        """Split nodes in two (numeric and categorical subset splits); see :meth:`_split`."""
        layout = self.layout
        tree = self.tree
        nodes = ev.nodes[which]
        n = nodes.size
        left_stats = ev.left_stats[which]
        right_stats = ev.right_stats[which]
        child_stats = np.empty((2 * n, layout.n_channels), dtype=layout.dtype)
        child_stats[0::2] = left_stats
        child_stats[1::2] = right_stats
        child_depth = np.repeat(tree.depth[nodes] + 1, 2)
        children = self._add_nodes(child_depth, child_stats)
        left, right = children[0::2], children[1::2]
        self._track_children(np.repeat(nodes, 2), children, np.tile([0, 1], n))
        self._inherit_used_features(np.repeat(nodes, 2), children)
        left_count = layout.count(left_stats)
        right_count = layout.count(right_stats)
        subset = ev.kind[which] == CATEGORICAL_SUBSET
        missing_left = ev.missing_left[which].astype(np.uint8)
        numeric = ~subset
        tree.set_numeric_splits(
            nodes[numeric],
            ev.feature[which][numeric],
            ev.threshold[which][numeric],
            -1 if self.capabilities.exact else ev.bin[which][numeric],
            left[numeric],
            right[numeric],
            missing_go_to_left=missing_left[numeric],
        )
        category_sets = None
        if subset.any():
            words = self._category_words(ev, which)
            tree.set_subset_splits(
                nodes[subset],
                ev.feature[which][subset],
                words[subset],
                left[subset],
                right[subset],
                missing_left[subset],
            )
            category_sets = (subset, words)
        means = self._centred_means(child_stats)
        # A CUDA partition measures the children's variances as it goes (one output).
        single = means is not None and means.ndim == 1
        child_means = (means[0::2], means[1::2]) if single else None
        with self._phase("partition", nodes, ev.feature[which]):
            self.backend.partition(
                nodes,
                ev.feature[which],
                ev.bin[which],
                ev.threshold[which],
                ev.missing_left[which],
                left,
                right,
                category_sets,
                sizes=(left_count, right_count),
                child_means=child_means,
            )
        # Once partitioned: absolute error bounds the children by their rows' medians.
        self._bound_children(ev.feature[which], left, right, left_stats, right_stats)
        self._measure_impurity(children, child_stats, means)

        open_mask = self._splittable(children, child_stats)
        no_compact = np.zeros(0, dtype=np.int64)
        if not open_mask.any():
            return None, no_compact
        if not self.capabilities.subtraction:
            return None, children[open_mask]
        if self._drawn_only:  # big open children: their drawn features', from their rows
            open_children = children[open_mask]
            big = self.backend.node_sizes(open_children) >= self.backend.small_node_size
            batch = self._drawn_batch(open_children[big]) if big.any() else None
            return batch, open_children[~big]

        # Parents from a dense batch whose larger child is big keep dense histograms: build
        # the smaller child's and derive the larger one as parent - smaller (the
        # subtraction trick), written in place next to it: slots [smaller..., larger...].
        # Children of small parents take compact histograms.
        left_open, right_open = open_mask[0::2], open_mask[1::2]
        has_open_child = left_open | right_open
        larger_size = np.maximum(left_count, right_count)
        dense = (
            has_open_child
            & (ev.hist_slots[which] >= 0)
            & (larger_size >= self.backend.small_node_size)
        )
        compact_parents = np.flatnonzero(has_open_child & ~dense)
        compact_children = np.concatenate([left[compact_parents], right[compact_parents]])
        compact_children = np.sort(compact_children[open_mask[compact_children - children[0]]])
        parents = np.flatnonzero(dense)
        if parents.size == 0:
            return None, compact_children
        smaller_is_left = left_count[parents] <= right_count[parents]
        smaller = np.where(smaller_is_left, left[parents], right[parents])
        larger = np.where(smaller_is_left, right[parents], left[parents])
        m = parents.size
        hist = self.backend.empty_histograms(2 * m)
        with self._phase("histograms", smaller):
            built = self.backend.histograms(smaller, out=hist[:m])
        with self._phase("subtraction", larger):
            self.backend.subtract(ev.hist, ev.hist_slots[which[parents]], hist[:m], out=hist[m:])
        batch_nodes = np.concatenate([smaller, larger])
        # Children ids are parent-major (left = even offset), so this maps id -> open.
        is_open = open_mask[batch_nodes - children[0]]
        batch = _Batch(batch_nodes, hist, np.flatnonzero(is_open), built.bin_lower, built.bin_upper)
        return batch, compact_children

    def _split_multiway(
        self, ev: _Evaluated, which: np.ndarray
    ) -> tuple[_Batch | None, np.ndarray]:
        """Split nodes into one child per category present (Quinlan's ID3, 1986); see
        :meth:`_split`.

        Missing values and categories the node did not see go to its largest branch.
        Children get histograms of their own (no subtraction: a parent has many children).
        """
        layout = self.layout
        tree = self.tree
        nodes = ev.nodes[which]
        branch_stats = [ev.branch_stats[k] for k in which]
        n_branches = np.array([len(b) for b in branch_stats])
        child_depth = np.repeat(tree.depth[nodes] + 1, n_branches)
        all_children = self._add_nodes(child_depth, np.concatenate(branch_stats))
        children = np.split(all_children, np.cumsum(n_branches)[:-1])
        self._track_children(
            np.repeat(nodes, n_branches),
            all_children,
            np.concatenate([np.arange(b) for b in n_branches]),
        )
        self._clip_values(all_children, np.concatenate(branch_stats))
        n_codes = 1 + max(int(ev.present_codes[k].max()) for k in which)
        child_of_code = np.empty((which.size, n_codes), dtype=np.int64)
        default_child = np.empty(which.size, dtype=np.int64)
        for j, k in enumerate(which):
            ids, codes = children[j], ev.present_codes[k]
            default_child[j] = ids[ev.default_branch[k]]
            child_of_code[j] = default_child[j]
            child_of_code[j, codes] = ids
            tree.set_multiway_split(
                nodes[j], ev.feature[k], ids, child_of_code[j, : codes.max() + 1], default_child[j]
            )
            self._inherit_used_features(np.full(ids.size, nodes[j]), ids, ev.feature[k])
        with self._phase("partition", nodes, ev.feature[which]):
            self.backend.partition_multiway(
                nodes,
                ev.feature[which],
                child_of_code,
                default_child,
                children,
                sizes=[layout.count(b) for b in branch_stats],
            )

        child_stats = np.concatenate(branch_stats)
        self._measure_impurity(all_children, child_stats)
        open_children = all_children[self._splittable(all_children, child_stats)]
        if open_children.size == 0:
            return None, open_children
        if not self.capabilities.subtraction:  # compact histograms only
            return None, open_children
        dense = self.backend.node_sizes(open_children) >= self.backend.small_node_size
        if not dense.any():
            return None, open_children
        with self._phase("histograms", open_children[dense]):
            built = self.backend.histograms(open_children[dense])
        batch = _Batch(
            open_children[dense],
            built.hist,
            np.arange(int(dense.sum())),
            built.bin_lower,
            built.bin_upper,
        )
        return batch, open_children[~dense]

    # -- subtrees finished in one call ----------------------------------------------------
    def _subtree_finisher(self):
        """The backend's ``finish_subtrees`` where it grows this fit's tree as the
        level-wise path would, else None: not for best-first growth (its order is
        global) or multiway categorical splits (the finisher makes binary splits only).
        Features drawn per node, and extremely randomised trees' thresholds, are drawn
        there as here (keyed by the node's path)."""
        p = self.params
        if (
            not self.capabilities.subtree_finisher
            or p.max_leaf_nodes is not None
            or self.multiway
            or p.feature_costs is not None  # the finisher chooses splits by gain alone
            # Poisson and absolute-error node impurities (and the latter's values) are
            # measured on the rows after growth (see _grow_all), from the row partition
            # the finisher does not keep; absolute-error splits are searched on the rows.
            or p.criterion in ROW_MEASURED_CRITERIA
            # Monotonicity constraints: the finisher keeps no node bounds.
            or self._monotonic is not None
            # Several outputs: the finisher measures one output's values and impurities.
            or self.layout.n_outputs > 1
        ):
            return None
        return self.backend.finish_subtrees

    def _subtree_categories(self) -> SubtreeCategories | None:
        """The finisher's view of the categorical features and their subset search, as
        ``splitting._select_compiled`` sets it up (None: every feature is numeric)."""
        categorical = self.params.categorical
        if categorical is None or categorical.features.size == 0:
            return None
        is_categorical = np.zeros(self.n_features, dtype=bool)
        is_categorical[categorical.features] = True
        # A node holds at most every code but the missing one (bins per feature).
        limit, most, binom, offsets = subset_search_tables(
            self.layout, categorical, self.backend.bin_lower.shape[1]
        )
        return SubtreeCategories(
            is_categorical,
            int(categorical.max_subset),
            limit,
            most,
            binom,
            offsets,
            self.tree.n_category_words,
        )

    def _finish_below(self) -> int:
        """Open nodes with fewer rows than this are finished in one call (read at each
        call: tests set FINISH_BELOW_ROWS to 0 to grow level-wise only)."""
        categorical = self.params.categorical
        if categorical is not None and categorical.features.size:
            return FINISH_BELOW_ROWS * CATEGORICAL_FINISH_FACTOR
        return FINISH_BELOW_ROWS

    def _finishing(self, nodes, below=None):
        """Which open ``nodes`` are small enough (fewer than ``below`` rows, default
        :meth:`_finish_below`) to finish in one call (none when the fit has no finisher)."""
        if self._finisher is None or nodes.size == 0:
            return np.zeros(nodes.size, dtype=bool)
        limit = self._finish_below() if below is None else below
        return self.backend.node_sizes(nodes) < limit

    def _finish(self, nodes):
        """Grow the subtrees of ``nodes`` (open, splittable) in one call and add their
        nodes to the tree (numbered in the order made: :meth:`grow` renumbers)."""
        root_weight = self.tree.weighted_n_node_samples[self._node_root[nodes]]
        if self.params.min_impurity_decrease == 0.0:  # the only reader of the root weight
            root_weight = np.full_like(root_weight, root_weight[0])  # one call
        for weight in np.unique(root_weight):  # one call per tree weight (forests)
            self._finish_below_roots(nodes[root_weight == weight], weight)

    def _finish_below_roots(self, nodes, root_weight):
        """:meth:`_finish` for nodes whose trees' roots weigh ``root_weight``."""
        p = self.params
        tree = self.tree
        layout = self.layout
        settings = np.zeros(cpu_subtrees.N_SETTINGS)
        settings[cpu_subtrees.MAX_DEPTH] = p.max_depth
        settings[cpu_subtrees.MIN_SAMPLES_SPLIT] = p.min_samples_split
        settings[cpu_subtrees.MIN_SAMPLES_LEAF] = self.constraints.min_samples_leaf
        settings[cpu_subtrees.MIN_WEIGHT_LEAF] = self.constraints.min_weight_leaf
        settings[cpu_subtrees.MIN_PURITY] = p.min_purity if layout.is_classification else 1.0
        settings[cpu_subtrees.MIN_DECREASE] = layout.fit_variance(p.min_impurity_decrease)
        settings[cpu_subtrees.ROOT_WEIGHT] = root_weight
        settings[cpu_subtrees.PURE_IMPURITY] = self._pure_impurity
        settings[cpu_subtrees.RTOL] = SCORE_RTOL
        settings[cpu_subtrees.EPSILON] = EPSILON
        settings[cpu_subtrees.MAX_FEATURES] = p.max_features if self._draws_features() else 0
        settings[cpu_subtrees.RANDOM_THRESHOLDS] = 1.0 if p.random_thresholds else 0.0
        with self._phase("subtrees", nodes):
            out = self._finisher(
                nodes,
                tree.depth[nodes],
                tree.impurity[nodes],
                p.criterion,
                settings,
                self._subtree_categories(),
                keys=self._node_key[nodes],
            )
            is_root = out.parent < 0
            ids = np.empty(is_root.size, dtype=np.int64)
            ids[is_root] = nodes
            new = np.flatnonzero(~is_root)
            if new.size:
                stats = out.stats[new]
                ids[new] = self._add_nodes(out.depth[new], stats)
                # Each subtree's entries follow its root: the root of each entry's tree.
                # No draw happens below (features drawn: no finisher): keys are unused.
                subtree_root = np.maximum.accumulate(np.where(is_root, np.arange(ids.size), 0))
                self._track(ids[new], self._node_root[ids[subtree_root[new]]], 0)
                if not layout.is_classification:
                    self._set_impurity(ids[new], layout.real(stats)[:, 0], out.impurity[new])
            split = np.flatnonzero(out.feature >= 0)
            is_subset = out.subset[split] != 0
            numeric, subset = split[~is_subset], split[is_subset]
            feature, code, next_code = (
                out.feature[numeric],
                out.code[numeric],
                out.next_code[numeric],
            )
            bin_lower, bin_upper = self.backend.bin_lower, self.backend.bin_upper
            threshold = midpoint(
                bin_upper[feature, code], bin_lower[feature, np.maximum(next_code, 0)]
            )
            left = ids[out.left[numeric]]
            tree.set_numeric_splits(
                ids[numeric],
                feature,
                np.where(next_code < 0, np.inf, threshold),
                code,
                left,
                left + 1,
                missing_go_to_left=out.missing_left[numeric],
            )
            if subset.size:
                left = ids[out.left[subset]]
                tree.set_subset_splits(
                    ids[subset],
                    out.feature[subset],
                    out.category_words[subset],
                    left,
                    left + 1,
                    out.missing_left[subset],
                )
        split_depth = tree.depth[ids[split]]
        if split_depth.size and logger.isEnabledFor(logging.INFO):
            # One line for the call: the subtrees reach levels that level-wise growth has
            # yet to report, and a line per level read as levels out of order.
            low, high = int(split_depth.min()), int(split_depth.max())
            logger.info(
                "%s: %d nodes split in finished subtrees, %d nodes in the tree (%.2f s)",
                f"level {low}" if low == high else f"levels {low}-{high}",
                split_depth.size,
                tree.node_count,
                time.perf_counter() - self._start,
                extra=self._level_step(high),
            )
        # fit_stats_: the nodes searched and their rows, at their levels.
        searched = ids[out.searched != 0]
        levels, level_of = np.unique(tree.depth[searched], return_inverse=True)
        levels = levels.tolist()
        count_per_level("nodes_built", levels, np.bincount(level_of).tolist())
        rows = np.zeros(len(levels), dtype=np.int64)
        np.add.at(rows, level_of, tree.n_node_samples[searched])
        count_per_level("rows_read", levels, rows.tolist())
        if levels:  # later work counts at the deepest level, as it did level by level
            enter_level(levels[-1])
        self._finished_subtrees = True

    # -- growth policies ----------------------------------------------------------------
    def grow(self) -> Tree:
        """Grow the tree (a backend of one root)."""
        tree = self._grow_all(one_root=True)
        if self._finished_subtrees:  # their nodes were numbered depth first
            tree = self.tree = tree.breadth_first()
        return tree

    def grow_forest(self) -> list[Tree]:
        """Grow one tree per root of the backend (``RowData.root_sizes``: the trees of a
        forest), together: each level's histograms of every tree in one pass. Returns the
        trees, in root order, each numbered breadth first from its own root."""
        tree = self._grow_all(one_root=False)
        return [tree.subtree(root) for root in range(self._n_roots)]

    def _grow_all(self, one_root: bool) -> Tree:
        tree = self._grow(one_root)
        self._receive_remaining_impurities()
        layout = self.layout
        if self.params.criterion == "poisson":  # in real units already
            tree.impurity[:] = self._poisson_deviances(tree)
        elif self.params.criterion == "absolute_error":  # medians: in real units already
            medians, tree.impurity[:] = medians_and_deviations(self.backend, layout, tree)
            if self._monotonic is not None:  # clipped into their bounds, as scikit-learn's
                bounds = layout.target(self._node_bounds[: tree.node_count])
                medians = np.clip(medians, bounds[:, :1], bounds[:, 1:])
            tree.value[:, :, 0] = medians
        elif not layout.is_classification:  # impurities in real units
            tree.impurity[:] = layout.target_variance(tree.impurity)
        if layout.weight_exponent:  # weighted sizes too
            tree.weighted_n_node_samples[:] = layout.real_weight(tree.weighted_n_node_samples)
        return tree

    def _poisson_deviances(self, tree: Tree) -> np.ndarray:
        """Poisson: every node's half Poisson deviance in real units, measured on its rows
        as scikit-learn's ``tree_.impurity`` holds it: sum w (y log(y / m) - y + m) / sum w,
        m the node's mean target (its value); with several outputs, the mean of the
        outputs' deviances.

        Each row's term is written y log1p(d / m) - d (d = y - m), non-negative and of the
        size of the deviance: y log(y / m) - y + m in floats would lose it to the size of
        y where y is far from 0 (1e6 + Poisson noise). Until now a regression node's
        impurity was its variance (the mean of its outputs'), measured by the backend
        (zero exactly where its targets are all equal: the only use growth has for it,
        the purity test); such nodes keep 0. Each row's term adds to its leaf and to
        every ancestor: the backend's rows end in the leaves (:meth:`_node_of_row`).
        """
        layout = self.layout
        row_data = self.backend.row_data
        n_nodes = tree.node_count
        parent = tree.parents()
        # The fit's units (targets scaled by 2**-t; weights too, which cancel): rows by
        # outputs, as nodes' means by outputs.
        mean = np.ldexp(tree.value[:, :, 0], -layout.target_exponent)
        centred = row_data.centred.reshape(row_data.centred.shape[0], -1)
        y = centred + np.asarray(layout.fit_centres)
        weight = row_data.weight
        node = self._node_of_row(tree, parent)
        weights = np.zeros(n_nodes)
        deviances = np.zeros(n_nodes)
        while node.size:
            m = mean[node]
            d = y - m
            ratio = np.where((y > 0) & (m > 0), d / np.where(m > 0, m, 1.0), 0.0)
            terms = np.where(y > 0, y * np.log1p(ratio) - d, m)
            term = weight * (terms.sum(axis=1) / layout.n_outputs)
            deviances += np.bincount(node, weights=term, minlength=n_nodes)
            weights += np.bincount(node, weights=weight, minlength=n_nodes)
            up = parent[node]
            keep = up >= 0
            node, y, weight = up[keep], y[keep], weight[keep]
        deviance = np.maximum(deviances, 0.0) / np.where(weights > 0, weights, 1.0)
        deviance = np.ldexp(deviance, layout.target_exponent)
        return np.where(tree.impurity[:n_nodes] == 0.0, 0.0, deviance)

    def _node_of_row(self, tree: Tree, parent) -> np.ndarray:
        """The leaf of every row of the backend (int64): the CPU backends' row partition
        holds each node's rows (a leaf's are a slice of its ``sample_indices``), the CUDA
        backend's ``node_of_row`` each row's node."""
        backend = self.backend
        partition = getattr(backend, "row_partition", None)
        if partition is None:
            node_of_row = getattr(backend, "node_of_row", None)
            if node_of_row is None:
                raise ValueError(
                    f"criterion='poisson' is not supported by {type(backend).__name__}"
                )
            return device_to_host(node_of_row).astype(np.int64)
        is_leaf = tree.children_left == TREE_LEAF
        is_leaf[parent[parent >= 0]] = False
        leaves = np.flatnonzero(is_leaf)
        start, sizes = partition.start[leaves], partition.node_sizes(leaves)
        offsets = np.repeat(start - (np.cumsum(sizes) - sizes), sizes)
        positions = offsets + np.arange(int(sizes.sum()))
        node_of_row = np.full(partition.sample_indices.size, -1, dtype=np.int64)
        node_of_row[partition.sample_indices[positions]] = np.repeat(leaves, sizes)
        return node_of_row

    def _grow(self, one_root: bool) -> Tree:
        self._start = time.perf_counter()
        self._deepest_reported = -1  # the progress bar's level (_level_step)
        # The roots' statistics and impurities are the fit's set-up (fit_setup_stats_); a
        # level's work begins with its first phase (PhaseTimer.phase enters the level).
        enter_level(SETUP)
        layout = self.layout
        root_stats = np.asarray(self.backend.root_stats(), dtype=layout.dtype)
        root_stats = root_stats.reshape(-1, layout.n_channels)
        n_roots = self._n_roots = root_stats.shape[0]
        if one_root and n_roots != 1:
            raise ValueError("the backend has several roots: grow them with grow_forest")
        if n_roots > 1 and self.params.max_leaf_nodes is not None:
            raise ValueError("best-first growth (max_leaf_nodes) grows one tree at a time")
        roots = self._add_nodes(np.zeros(n_roots, dtype=np.int64), root_stats)
        trees = self.params.first_tree + np.arange(n_roots)
        self._track(roots, roots, root_keys(self.params.seed, trees))
        self._measure_impurity(roots, root_stats)
        roots = roots[self._splittable(roots, root_stats)]
        if roots.size == 0:
            return self.tree
        finish = self._finishing(roots, max(FINISH_ROOT_BELOW_ROWS, self._finish_below()))
        if finish.any():
            self._finish(roots[finish])
        if not finish.all():
            self._grow_from_roots(roots[~finish])
        tree = self.tree
        logger.info(
            "%s grown: depth %s%d, %d leaves, %d nodes (%.2f s)",
            "tree" if self._n_roots == 1 else f"{self._n_roots} trees",
            "" if self._n_roots == 1 else "up to ",
            tree.max_depth,
            tree.n_leaves,
            tree.node_count,
            time.perf_counter() - self._start,
            extra=step("growing", tree.max_depth, unit="level", done=True),
        )
        return tree

    def _level_step(self, depth: int) -> dict:
        """The progress of a level split at ``depth``: depth + 1 levels grown, of
        max_depth where that is a real limit (an unlimited tree's total is unknown)."""
        limit = self.params.max_depth
        total = limit if limit <= _LEVELS_SHOWN_AS_A_TOTAL else None
        # Never backwards: finished subtrees report deeper levels than the next level-wise.
        self._deepest_reported = max(self._deepest_reported, depth)
        return step("growing", self._deepest_reported + 1, total, unit="level")

    def _grow_from_roots(self, roots):
        """Level-wise or best-first growth from the roots (too big to finish at once)."""
        small = self.backend.small_node_size
        dense = np.zeros(roots.size, dtype=bool)
        if self.capabilities.subtraction:
            dense = self.backend.node_sizes(roots) >= small
        evaluated = []
        if dense.any() and self._drawn_only:
            evaluated.append(self._evaluate(self._drawn_batch(roots[dense])))
        elif dense.any():
            with self._phase("histograms", roots[dense]):
                built = self.backend.histograms(roots[dense])
            batch = _Batch(
                roots[dense],
                built.hist,
                np.arange(int(dense.sum())),
                built.bin_lower,
                built.bin_upper,
            )
            evaluated.append(self._evaluate(batch))
        if not dense.all():
            evaluated += self._evaluate_compact(roots[~dense])
        if self.params.max_leaf_nodes is None:
            self._grow_level_wise(evaluated)
        else:
            self._grow_best_first(evaluated)

    def _evaluate_children(self, children) -> list[_Evaluated]:
        dense_batches, compact_nodes = children
        small = self._finishing(compact_nodes)
        finish = [compact_nodes[small]]
        compact_nodes = compact_nodes[~small]
        for batch in dense_batches:  # small open nodes leave their batch (they may
            small = self._finishing(batch.nodes[batch.open_slots])  # serve subtraction)
            finish.append(batch.nodes[batch.open_slots[small]])
            batch.open_slots = batch.open_slots[~small]
        finish = np.sort(np.concatenate(finish))
        if finish.size:
            self._finish(finish)
        evaluated = [self._evaluate(batch) for batch in dense_batches]
        return evaluated + self._evaluate_compact(compact_nodes)

    def _grow_level_wise(self, evaluated):
        while evaluated:
            ev = self._merge(evaluated)
            if ev.nodes.size == 0:
                break
            evaluated = self._evaluate_children(self._split(ev, np.arange(ev.nodes.size)))
            depth = int(self.tree.depth[ev.nodes[0]])
            logger.info(
                "level %d: %d nodes split, %d nodes in the tree (%.2f s)",
                depth,
                ev.nodes.size,
                self.tree.node_count,
                time.perf_counter() - self._start,
                extra=self._level_step(depth),
            )

    def _grow_best_first(self, evaluated):
        heap = []
        n_leaves = 1

        def push(ev):
            for k in range(ev.nodes.size):
                # Highest weighted score first; equal scores: lowest node id first.
                heapq.heappush(heap, (-ev.priority[k], int(ev.nodes[k]), k, ev))

        push(self._merge(evaluated))
        while heap and n_leaves < self.params.max_leaf_nodes:
            _, _, k, ev = heapq.heappop(heap)
            if ev.kind[k] == MULTIWAY and n_leaves + len(ev.branch_stats[k]) - 1 > (
                self.params.max_leaf_nodes
            ):
                continue  # its branches would exceed max_leaf_nodes: it stays a leaf
            before = self.tree.node_count
            children = self._evaluate_children(self._split(ev, np.array([k])))
            n_leaves += self.tree.node_count - before - 1  # a leaf became n children
            if children:
                push(self._merge(children))
