"""Node bookkeeping for the grower: the tree's nodes and what growth tracks per node.

:class:`NodeTable` adds nodes to the :class:`~gpu_tree.model.tree.Tree` with their
values and impurities, applies the stopping rules checked before any split search, and
keeps, per node id, what the rest of growth reads: the root of its tree (a forest grows
a root per tree), its key for the random draws, its monotonicity bounds and the features
its multiway ancestors used.
"""

from __future__ import annotations

import numpy as np

from gpu_tree.backends.contract import HistogramBackend
from gpu_tree.backends.rows import PendingCopy
from gpu_tree.data.stats import StatsLayout
from gpu_tree.growing.absolute_error import node_medians
from gpu_tree.growing.criteria import monotonic_child_bounds, monotonic_value, node_impurity
from gpu_tree.growing.random_draws import child_keys
from gpu_tree.model.tree import Tree
from gpu_tree.utils.fit_stats import enter_level

# scikit-learn's EPSILON: classification impurities at or below it count as pure (see
# NodeTable.pure_impurity), and it is the slack on the min_impurity_decrease comparison.
EPSILON = np.finfo(np.float64).eps


class NodeTable:
    """The nodes of the tree being grown, and their per-node growth state.

    Parameters
    ----------
    backend : HistogramBackend
        Measures regression impurities (and absolute error's medians) on the nodes' rows.
    layout : StatsLayout
    params : GrowthParams
    n_features : int
    """

    def __init__(self, backend: HistogramBackend, layout: StatsLayout, params, n_features):
        self.backend = backend
        self.layout = layout
        self.params = params
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
        self.monotonic = None if cst is None or not np.any(cst) else np.asarray(cst, np.int8)
        self.bounds = np.zeros((0, 2), dtype=np.float64)
        # Per node id: the root of its tree and its key for the random draws
        # (random_draws: from the root's and the path's).
        self.root = np.zeros(0, dtype=np.int64)
        self.key = np.zeros(0, dtype=np.uint64)

    # -- adding nodes ---------------------------------------------------------------------
    def add(self, depth, stats):
        """Add nodes with these (integer) statistics; returns their ids. A regression
        node's impurity needs its rows: it is NaN until :meth:`measure_impurity`, once
        the rows are partitioned."""
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
            value=self._values(real),
        )

    def _values(self, real_stats):
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

    # -- impurities -----------------------------------------------------------------------
    def centred_means(self, stats):
        """Regression: the nodes' centred means, which their variances are measured about
        (None for classification)."""
        if self.layout.is_classification:
            return None
        if self.layout.n_outputs > 1:  # (n_nodes, n_outputs)
            return self.layout.centred_means(self.layout.real(stats))
        return self.layout.centred_mean(self.layout.real(stats))

    def measure_impurity(self, nodes, stats, means=None):
        """Regression: each node's weighted variance, two-pass on its rows (about the mean
        its sums give, ``means`` if the caller has them: :meth:`centred_means`), as the
        backend measures it; classification impurities come from the class totals when
        the nodes are added."""
        if self.layout.is_classification:
            return
        weight = self.layout.real(stats)[:, 0]
        if means is None:
            means = self.centred_means(stats)
        # Several outputs: the mean of the outputs' variances, as in scikit-learn.
        if self.layout.n_outputs > 1:
            parts = [
                self.backend.squared_deviation_sums(nodes, means[:, k], output=k)
                for k in range(self.layout.n_outputs)
            ]
        else:
            parts = [self.backend.squared_deviation_sums(nodes, means)]
        if isinstance(parts[0], PendingCopy):
            # NaN until it comes back: splittable leaves the purity test to the split
            # evaluation, which receives it with the winners.
            self._pending_impurities.append((nodes, weight, parts))
        else:
            self.set_impurity(nodes, weight, sum(parts) / len(parts))

    def set_impurity(self, nodes, weight, squared_deviations):
        # In the fit's units (see StatsLayout.target_exponent) until the tree is grown.
        self.tree.impurity[nodes] = squared_deviations / np.where(weight > 0, weight, 1.0)

    def receive_impurities(self):
        """Put the impurities that came back from the device (or bring them) into the tree."""
        pending, self._pending_impurities = self._pending_impurities, []
        for nodes, weight, parts in pending:  # the outputs' copies
            self.set_impurity(nodes, weight, sum(part.get() for part in parts) / len(parts))

    def receive_remaining_impurities(self):
        """After growth: the impurities no split winners brought back (the last children's,
        mostly) in one copy, counted at their level (fit_stats_)."""
        if self._pending_impurities:
            enter_level(
                max(int(self.tree.depth[nodes].max()) for nodes, _, _ in self._pending_impurities)
            )
            self.receive_impurities()

    @property
    def pure_impurity(self):
        """Impurities at or below this count as pure: scikit-learn's EPSILON for the
        classification impurities (fractions); 0 for regression, whose nodes of equal
        targets measure exactly 0 (kernels/_squared_deviations.py), so that scaling the
        target scales the tree (an absolute bound would make pure a node of y * 2**-30
        that y's tree splits)."""
        return EPSILON if self.layout.is_classification else 0.0

    def splittable(self, nodes, stats):
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
            # comes, with the split winners (SplitEvaluator.evaluate).
            & ~(tree.impurity[nodes] <= self.pure_impurity)
        )
        if self.layout.is_classification and p.min_purity < 1.0:
            class_weights = self.layout.class_weights(self.layout.real(stats))
            purity = np.max(class_weights, axis=1) / np.where(weight > 0, weight, 1.0)
            ok &= purity < p.min_purity
        return ok

    # -- per-node growth state ------------------------------------------------------------
    def track(self, nodes, root, key):
        """Record ``nodes``' roots and draw keys (the arrays grow with the tree)."""
        size = self.root.size
        if self.tree.node_count > size:
            grown = max(self.tree.node_count, 2 * size)
            self.root = np.resize(self.root, grown)
            self.key = np.resize(self.key, grown)
            if self.monotonic is not None:
                bounds = np.empty((grown, 2), dtype=np.float64)
                bounds[: self.bounds.shape[0]] = self.bounds
                self.bounds = bounds
        self.root[nodes] = root
        self.key[nodes] = key
        if self.monotonic is not None:  # unbounded, until a constrained split bounds them
            self.bounds[nodes] = (-np.inf, np.inf)

    def track_children(self, parents, children, branches):
        """Children inherit their parent's root; their keys follow the branch taken."""
        self.track(children, self.root[parents], child_keys(self.key[parents], branches))
        if self.monotonic is not None:  # children inherit their parent's bounds
            self.bounds[children] = self.bounds[parents]

    def bound_children(self, features, left, right, left_stats, right_stats):
        """Monotonicity constraints: the bounds of binary splits' children (``left``,
        ``right``: their ids; splits on ``features``), then every child's value clipped
        into its bounds, as scikit-learn clips node values."""
        if self.monotonic is None:
            return
        layout = self.layout
        if self.params.criterion == "absolute_error":
            # The children's medians (the fit's units), measured on their rows: the
            # partition has run. Their values are set, and clipped, once the tree is
            # grown (Grower.grow).
            left_value, right_value = (
                node_medians(self.backend, children) for children in (left, right)
            )
        else:
            left_value = monotonic_value(layout, layout.real(left_stats))
            right_value = monotonic_value(layout, layout.real(right_stats))
        bounds = self.bounds[left]  # the parents' (inherited)
        left_lower, left_upper, right_lower, right_upper = monotonic_child_bounds(
            self.monotonic[features], bounds[:, 0], bounds[:, 1], left_value, right_value
        )
        self.bounds[left, 0], self.bounds[left, 1] = left_lower, left_upper
        self.bounds[right, 0], self.bounds[right, 1] = right_lower, right_upper
        if self.params.criterion != "absolute_error":
            self.clip_values(
                np.concatenate([left, right]), np.concatenate([left_stats, right_stats])
            )

    def clip_values(self, nodes, stats):
        """Monotonicity constraints: clip the values of ``nodes`` (with these integer
        statistics) into their bounds: P(class 1) (P(class 0) = 1 - it), or the mean."""
        if self.monotonic is None or nodes.size == 0:
            return
        layout = self.layout
        value = monotonic_value(layout, layout.real(stats))
        lower, upper = self.bounds[nodes, 0], self.bounds[nodes, 1]
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

    def usable_features(self, nodes):
        """Multiway splits: the features each of ``nodes`` may still split on (no
        multiway ancestor used them); None where every feature may be used."""
        return None if not self.multiway else ~self._used_multiway[nodes]

    def inherit_used_features(self, parents, children, feature=None):
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
