"""Grow a tree from a backend's histograms; fill the shared :class:`Tree`.

The tree-growing loop of Zaki and Meira, *Data Mining and Machine Learning*, Algorithm
19.1 (as in Breiman et al.'s CART, 1984, and Quinlan's ID3, 1986): evaluate every open
node's best split, split the nodes whose split is accepted, repeat on the children.

Level-wise by default: every open node of a depth is one batch, so a backend builds the
histograms of a whole level in one pass (one launch on the GPU). With
``max_leaf_nodes`` the grower expands best-first (the node whose split decreases the
weighted impurity most), as scikit-learn does, still asking for both children's
histograms at once. The grower never touches rows itself and does not know whether the
backend holds numpy or cupy arrays: it and its collaborators talk to the backend only
through the contract :class:`gpu_tree.backends.contract.HistogramBackend`.

The grower holds the loop and the two growth policies; its collaborators, each built
with explicit inputs (the shape of scikit-learn's HistGradientBoosting ``TreeGrower``
with its ``Splitter`` and ``HistogramBuilder``), do the rest:

- :class:`~gpu_tree.growing.node_table.NodeTable`: the nodes, their values and
  impurities, the stopping rules, and the per-node state growth tracks;
- :class:`~gpu_tree.growing.feature_draws.FeatureDraws`: the features each node draws,
  and the histograms of the drawn features only;
- :class:`~gpu_tree.growing.split_evaluation.SplitEvaluator`: each open node's best split
  and whether it is accepted;
- :class:`~gpu_tree.growing.split_application.SplitApplier`: the accepted splits made,
  the rows partitioned, the open children's histograms built;
- :class:`~gpu_tree.growing.subtree_finishing.SubtreeFinisher`: small nodes' whole
  subtrees grown in one backend call.

Vocabulary: a node's *size* is its number of rows; the other terms are those of
:mod:`gpu_tree.growing.batches`.
"""

from __future__ import annotations

import heapq
import logging
import time
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np

from gpu_tree.backends.contract import HistogramBackend
from gpu_tree.data.stats import StatsLayout
from gpu_tree.growing.absolute_error import medians_and_deviations
from gpu_tree.growing.batches import EvaluatedSplits, dense_batch, merged
from gpu_tree.growing.feature_draws import FeatureDraws
from gpu_tree.growing.node_table import NodeTable
from gpu_tree.growing.random_draws import root_keys
from gpu_tree.growing.row_measures import poisson_deviances
from gpu_tree.growing.split_application import SplitApplier
from gpu_tree.growing.split_evaluation import SplitEvaluator
from gpu_tree.growing.splitting import CategoricalSearch
from gpu_tree.growing.subtree_finishing import SubtreeFinisher
from gpu_tree.model.tree import MULTIWAY, Tree
from gpu_tree.utils.fit_stats import SETUP, enter_level
from gpu_tree.utils.phase_timer import PhaseTimer
from gpu_tree.utils.progress import grower_logger as logger
from gpu_tree.utils.progress import step

# Open nodes with fewer rows than this grow their whole subtree in one compiled call
# (the backend's finish_subtrees, where it has one: growing/subtree_finishing.py) instead of
# level by level; and a whole tree whose root has fewer than FINISH_ROOT_BELOW_ROWS.
# Chosen by measurement (bench/RESULTS.md): a level-wise node costs its features' full
# histograms (zeroed, subtracted and scored over every bin) and the level's Python, the
# finisher's a pass over its rows per feature, so nodes of a few hundred rows are cheaper
# finished. Against a 256-row limit, CPU time on a loaded machine: fully grown trees of
# 10,000 to 100,000 rows 0.74-1.01x (HIGGS-like 0.85-1.01, adult 0.74-0.91, regression
# 0.82-0.95), 10 extremely randomised trees 0.85x, 10 random-forest trees 1.03x, a 1M-row
# depth-10 tree 1.01x; a 2,048-row limit cost that tree 1.14x. A whole tree of 10,000 rows
# is cheaper finished from its root than grown level-wise to 1,024-row nodes: against a
# 2,048-row limit, CPU time (loaded) 0.71x on adult (category splits or none), 0.73x for
# 10 random-forest or extremely randomised trees, 0.98-1.01x HIGGS-like and regression;
# 30,000 rows the same at 16,384 and 1.26x finished from their root (one thread a tree).
FINISH_BELOW_ROWS = 1024
FINISH_ROOT_BELOW_ROWS = 16384
# A fit with categorical features finishes nodes this many times larger: its level-wise
# subset search costs more Python per node. Measured on adult's 32,561 rows with category
# splits (bench/RESULTS.md, a loaded machine): 2,048 rows 124 ms of CPU, 1,024 126,
# 4,096 to 8,192 129-130.
CATEGORICAL_FINISH_FACTOR = 2
# A fit of multiway (ID3) splits, this many times larger: a multiway node's children get
# histograms of their own (no subtraction) and each level pays Python per node, where the
# finisher's cost per row is its binary trees'. Measured on adult's 10,000 and 32,561
# rows (bench/RESULTS.md): a 1,024-row limit -> 16,384 took their growth from 38 to 22
# ms and 98 to 78 ms; finishing every tree from its root cost 32,561 rows its parallelism.
MULTIWAY_FINISH_FACTOR = 16
# An exact-search fit, this many times larger: its level-wise levels sort every node's
# values of every feature, where the finisher sorts a subtree's value ranks once and then
# partitions them. Measured on Higgs-shaped two-output fits (bench/RESULTS.md, a loaded
# machine): 10,000 rows 0.91 -> 0.43 s; at 100,000 rows the fit's CPU time 8.4 -> 4.7 s
# (4.0 s finishing the whole tree from its root, one thread, and buffers of features x
# rows x channels).
EXACT_FINISH_FACTOR = 16

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
    # on the feature of the highest gain (see feature_costs.select_by_cost).
    feature_costs: np.ndarray | None = None
    cost_criterion: str = "tan_schlimmer"
    cost_weight: float = 1.0
    # Monotonicity constraints (scikit-learn's monotonic_cst): int8, one per feature, +1
    # non-decreasing, -1 non-increasing, 0 free; None: none. Binary classification (over
    # P(class 1)) and regression; checked on every candidate by the split search.
    monotonic_cst: np.ndarray | None = None


class Grower:
    """Grows one tree (or a forest's trees together) through ``backend``.

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
        self.timer = timer
        self.layout = layout
        self.params = params
        self.n_features = n_features
        self.nodes = NodeTable(backend, layout, params, n_features)
        self.draws = FeatureDraws(backend, params, n_features, self.nodes, self.phase)
        self.evaluator = SplitEvaluator(
            backend, layout, params, n_features, self.nodes, self.draws, self.phase
        )
        self.applier = SplitApplier(backend, self.nodes, self.draws, self.phase)
        self.finisher = SubtreeFinisher(
            backend,
            layout,
            params,
            n_features,
            self.nodes,
            self.draws.draws,
            self.phase,
            self._report_finished,
        )

    @property
    def tree(self) -> Tree:
        """The tree being grown (every root's, for a forest)."""
        return self.nodes.tree

    def phase(self, name, nodes, features=None):
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

    # -- which nodes are finished in one call ---------------------------------------------
    def _finish_below(self) -> int:
        """Open nodes with fewer rows than this are finished in one call (read at each
        call: tests set FINISH_BELOW_ROWS to 0 to grow level-wise only)."""
        categorical = self.params.categorical
        if categorical is not None and categorical.features.size and categorical.multiway:
            below = FINISH_BELOW_ROWS * MULTIWAY_FINISH_FACTOR
        elif categorical is not None and categorical.features.size:
            below = FINISH_BELOW_ROWS * CATEGORICAL_FINISH_FACTOR
        elif self.backend.capabilities.exact:
            below = FINISH_BELOW_ROWS * EXACT_FINISH_FACTOR
        else:
            below = FINISH_BELOW_ROWS
        # A backend whose levels cost round trips (a distributed fit's) finishes larger
        # nodes: the same tree, fewer levels grown one by one.
        backend_below = self.backend.capabilities.finish_below_rows
        return max(below, backend_below) if below and backend_below else below

    def _finishing(self, nodes, below=None):
        """Which open ``nodes`` are small enough (fewer than ``below`` rows, default
        :meth:`_finish_below`) to finish in one call (none when the fit has no finisher)."""
        if not self.finisher.available or nodes.size == 0:
            return np.zeros(nodes.size, dtype=bool)
        limit = self._finish_below() if below is None else below
        return self.backend.node_sizes(nodes) < limit

    def _report_finished(self, split_depth):
        """Log one line for a call of the finisher that split nodes at ``split_depth``:
        the subtrees reach levels that level-wise growth has yet to report, and a line
        per level read as levels out of order."""
        if split_depth.size and logger.isEnabledFor(logging.INFO):
            low, high = int(split_depth.min()), int(split_depth.max())
            logger.info(
                "%s: %d nodes split in finished subtrees, %d nodes in the tree (%.2f s)",
                f"level {low}" if low == high else f"levels {low}-{high}",
                split_depth.size,
                self.tree.node_count,
                time.perf_counter() - self._start,
                extra=self._level_step(high),
            )

    # -- growth -------------------------------------------------------------------------
    def grow(self) -> Tree:
        """Grow the tree (a backend of one root)."""
        tree = self._grow_all(one_root=True)
        if self.finisher.finished_some:  # their nodes were numbered depth first
            tree = self.nodes.tree = tree.level_wise()
        return tree

    def grow_forest(self) -> list[Tree]:
        """Grow one tree per root of the backend (``RowData.root_sizes``: the trees of a
        forest), together: each level's histograms of every tree in one pass. Returns the
        trees, in root order, each numbered breadth first from its own root."""
        tree = self._grow_all(one_root=False)
        return [tree.subtree(root) for root in range(self._n_roots)]

    def _grow_all(self, one_root: bool) -> Tree:
        tree = self._grow(one_root)
        self.nodes.receive_remaining_impurities()
        layout = self.layout
        if self.params.criterion == "poisson":  # in real units already
            tree.impurity[:] = poisson_deviances(self.backend, layout, tree)
        elif self.params.criterion == "absolute_error":  # medians: in real units already
            medians, tree.impurity[:] = medians_and_deviations(self.backend, layout, tree)
            if self.nodes.monotonic is not None:  # clipped into their bounds, as scikit-learn's
                bounds = layout.target(self.nodes.bounds[: tree.node_count])
                medians = np.clip(medians, bounds[:, :1], bounds[:, 1:])
            tree.value[:, :, 0] = medians
        elif not layout.is_classification:  # impurities in real units
            tree.impurity[:] = layout.target_variance(tree.impurity)
        if layout.weight_exponent:  # weighted sizes too
            tree.weighted_n_node_samples[:] = layout.real_weight(tree.weighted_n_node_samples)
        return tree

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
        roots = self.nodes.add(np.zeros(n_roots, dtype=np.int64), root_stats)
        trees = self.params.first_tree + np.arange(n_roots)
        self.nodes.track(roots, roots, root_keys(self.params.seed, trees))
        self.nodes.measure_impurity(roots, root_stats)
        roots = roots[self.nodes.splittable(roots, root_stats)]
        if roots.size == 0:
            return self.tree
        finish = self._finishing(roots, max(FINISH_ROOT_BELOW_ROWS, self._finish_below()))
        if finish.any():
            self.finisher.finish(roots[finish])
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
        if self.backend.capabilities.subtraction:
            dense = self.backend.node_sizes(roots) >= small
        evaluated = []
        if dense.any() and self.draws.drawn_only:
            evaluated.append(self.evaluator.evaluate(self.draws.drawn_batch(roots[dense])))
        elif dense.any():
            with self.phase("histograms", roots[dense]):
                built = self.backend.histograms(roots[dense])
            evaluated.append(self.evaluator.evaluate(dense_batch(roots[dense], built)))
        if not dense.all():
            evaluated += self.evaluator.evaluate_compact(roots[~dense])
        if self.params.max_leaf_nodes is None:
            self._grow_level_wise(evaluated)
        else:
            self._grow_best_first(evaluated)

    def _evaluate_children(self, children) -> list[EvaluatedSplits]:
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
            self.finisher.finish(finish)
        evaluated = [self.evaluator.evaluate(batch) for batch in dense_batches]
        return evaluated + self.evaluator.evaluate_compact(compact_nodes)

    def _grow_level_wise(self, evaluated):
        while evaluated:
            ev = merged(evaluated, self.backend.xp)
            if ev.nodes.size == 0:
                break
            evaluated = self._evaluate_children(self.applier.split(ev, np.arange(ev.nodes.size)))
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

        push(merged(evaluated, self.backend.xp))
        while heap and n_leaves < self.params.max_leaf_nodes:
            _, _, k, ev = heapq.heappop(heap)
            if ev.kind[k] == MULTIWAY and n_leaves + len(ev.branch_stats[k]) - 1 > (
                self.params.max_leaf_nodes
            ):
                continue  # its branches would exceed max_leaf_nodes: it stays a leaf
            before = self.tree.node_count
            children = self._evaluate_children(self.applier.split(ev, np.array([k])))
            n_leaves += self.tree.node_count - before - 1  # a leaf became n children
            if children:
                push(merged(children, self.backend.xp))
