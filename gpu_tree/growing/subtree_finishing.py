"""Small nodes' whole subtrees grown in one call (the backend's ``finish_subtrees``),
and their nodes added to the tree.

Which nodes are small enough is the grower's policy (``grower.FINISH_BELOW_ROWS``); this
module decides whether a fit can be finished that way at all, hands the backend the
rules level-wise growth applies (:class:`SubtreeRules`), and adds what comes back.
"""

from __future__ import annotations

import numpy as np

from gpu_tree.backends.contract import HistogramBackend, SubtreeCategories, SubtreeRules
from gpu_tree.data.stats import StatsLayout
from gpu_tree.growing.criteria import ROW_MEASURED_CRITERIA
from gpu_tree.growing.feature_costs import fit_score
from gpu_tree.growing.node_table import EPSILON, NodeTable
from gpu_tree.growing.splitting import SCORE_RTOL, midpoint, subset_search_tables
from gpu_tree.utils.fit_stats import count_per_level, enter_level


class SubtreeFinisher:
    """Finishes the subtrees of open nodes in one backend call.

    Parameters
    ----------
    backend : HistogramBackend
    layout : StatsLayout
    params : GrowthParams
    n_features : int
    nodes : NodeTable
        Where the subtrees' nodes are added.
    draws_features : bool
        Whether the fit draws features per node (the finisher draws them as level-wise
        growth does, keyed by the node's path).
    phase : callable
        ``phase(name, nodes)``: the timer's context of a phase.
    on_finished : callable
        ``on_finished(split_depth)``: called after each backend call with the depths of
        the nodes it split (the grower reports them).
    """

    def __init__(
        self,
        backend: HistogramBackend,
        layout: StatsLayout,
        params,
        n_features: int,
        nodes: NodeTable,
        draws_features: bool,
        phase,
        on_finished,
    ):
        self.backend = backend
        self.layout = layout
        self.params = params
        self.n_features = n_features
        self.nodes = nodes
        self.draws_features = draws_features
        self.phase = phase
        self.on_finished = on_finished
        self.available = self._available()
        self.finished_some = False  # their nodes are numbered depth first: renumber

    def _available(self) -> bool:
        """Whether the backend's ``finish_subtrees`` grows this fit's tree as the
        level-wise path would: not for best-first growth (its order is global), nor for
        multiway categorical splits with features drawn per node (the draws there do not
        know the features a multiway ancestor used). Features drawn per node, and
        extremely randomised trees' thresholds, are drawn there as here (keyed by the
        node's path). Feature costs and monotonicity constraints are the finisher's
        constrained variant's, for numeric features; Poisson's rows are left for its
        deviances (``SubtreeRules.keep_row_order``)."""
        p = self.params
        categorical = p.categorical is not None and p.categorical.features.size > 0
        constrained = p.feature_costs is not None or self.nodes.monotonic is not None
        capabilities = self.backend.capabilities
        return not (
            not capabilities.subtree_finisher
            or p.max_leaf_nodes is not None
            or (self.nodes.multiway and self.draws_features)
            # The constrained variant searches numeric features only (and the level-wise
            # categorical search of a constrained fit is the vectorised one).
            or (constrained and categorical)
            # Costs: select_by_cost's weights are numpy's sums, in another order than the
            # finisher's above 16 classes (data.stats.channel_sum).
            or (p.feature_costs is not None and self._first_output_classes() > 16)
            # Absolute error's splits are searched on the rows, its values and impurities
            # measured there (Grower._grow_all). Poisson's deviances are measured on the
            # rows after growth too: the finisher leaves them in its nodes' order for the
            # backend's partition (SubtreeRules.keep_row_order); numeric features only,
            # as level-wise its categorical search is the vectorised one.
            or p.criterion == "absolute_error"
            or (p.criterion == "poisson" and (categorical or not capabilities.row_leaves))
            # Several regression outputs: the finisher measures one output's squared
            # deviations (several classification outputs' impurities come from their
            # class totals, as the split scan's do).
            or (self.layout.n_outputs > 1 and not self.layout.is_classification)
            # Exact search finishes on value ranks, which are no category codes.
            or (capabilities.exact and categorical)
        )

    def _first_output_classes(self) -> int:
        """The classes of a classifier's first output (0: regression)."""
        layout = self.layout
        if not layout.is_classification:
            return 0
        first, end = layout.output_classes[0]
        return end - first

    def _categories(self) -> SubtreeCategories | None:
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
            self.nodes.tree.n_category_words,
            bool(categorical.multiway),
        )

    def _rules(self, root_weight) -> SubtreeRules:
        p = self.params
        layout = self.layout
        return SubtreeRules(
            max_depth=p.max_depth,
            min_samples_split=p.min_samples_split,
            min_samples_leaf=p.min_samples_leaf,
            min_weight_leaf=p.min_weight_leaf,
            min_purity=p.min_purity if layout.is_classification else 1.0,
            min_decrease=fit_score(p.min_impurity_decrease, p.criterion, layout),
            root_weight=root_weight,
            pure_impurity=self.nodes.pure_impurity,
            rtol=SCORE_RTOL,
            epsilon=EPSILON,
            max_features=p.max_features if self.draws_features else 0,
            random_thresholds=p.random_thresholds,
            feature_costs=p.feature_costs,
            cost_criterion=p.cost_criterion,
            cost_weight=p.cost_weight,
            monotonic_cst=self.nodes.monotonic,
            keep_row_order=p.criterion in ROW_MEASURED_CRITERIA,
        )

    def finish(self, nodes):
        """Grow the subtrees of ``nodes`` (open, splittable) in one call and add their
        nodes to the tree (numbered in the order made: the grower renumbers)."""
        tree = self.nodes.tree
        root_weight = tree.weighted_n_node_samples[self.nodes.root[nodes]]
        if self.params.min_impurity_decrease == 0.0:  # the only reader of the root weight
            root_weight = np.full_like(root_weight, root_weight[0])  # one call
        for weight in np.unique(root_weight):  # one call per tree weight (forests)
            self._finish_below_roots(nodes[root_weight == weight], weight)

    def _finish_below_roots(self, nodes, root_weight):
        """:meth:`finish` for nodes whose trees' roots weigh ``root_weight``."""
        table = self.nodes
        tree = table.tree
        layout = self.layout
        with self.phase("subtrees", nodes):
            out = self.backend.finish_subtrees(
                nodes,
                tree.depth[nodes],
                tree.impurity[nodes],
                self.params.criterion,
                self._rules(root_weight),
                self._categories(),
                keys=table.key[nodes],
                used=None if not table.multiway else ~table.usable_features(nodes),
                bounds=None if table.monotonic is None else table.bounds[nodes],
            )
            is_root = out.parent < 0
            ids = np.empty(is_root.size, dtype=np.int64)
            ids[is_root] = nodes
            new = np.flatnonzero(~is_root)
            if new.size:
                stats = out.stats[new]
                ids[new] = table.add(out.depth[new], stats)
                # Each subtree's entries follow its root: the root of each entry's tree.
                # No draw happens below (features drawn: no finisher): keys are unused.
                subtree_root = np.maximum.accumulate(np.where(is_root, np.arange(ids.size), 0))
                table.track(ids[new], table.root[ids[subtree_root[new]]], 0)
                if not layout.is_classification:
                    table.set_impurity(ids[new], layout.real(stats)[:, 0], out.impurity[new])
                if self.params.criterion in ROW_MEASURED_CRITERIA:  # their rows, kept
                    self.backend.place_finished_rows(
                        ids[new], ids[subtree_root[new]], out.rows[new, 0], out.rows[new, 1]
                    )
                if table.monotonic is not None:  # as bound_children bounds and clips them
                    table.bounds[ids[new]] = out.bounds[new]
                    table.clip_values(ids[new], stats)
            split = np.flatnonzero(out.feature >= 0)
            numeric, subset, multiway = (split[out.subset[split] == kind] for kind in (0, 1, 2))
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
                -1 if self.backend.capabilities.exact else code,  # exact: ranks, no bins
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
            if multiway.size:
                self._set_multiway_splits(out, ids, multiway)
        self.on_finished(tree.depth[ids[split]])
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
        self.finished_some = True

    def _set_multiway_splits(self, out, ids, multiway):
        """The finished multiway nodes ``multiway`` (positions in ``out``, numbered
        ``ids``) set in the tree: each one's children, one per code it holds (in code
        order), and its table of the child of each code, codes it did not hold sent to
        the child of the missing rows (as ``SplitApplier._split_multiway`` sets them)."""
        n_children = out.next_code[multiway]
        first = ids[out.left[multiway]]
        default = first + out.code[multiway]
        # The codes each node holds: the set bits of its words, in code order.
        words = np.ascontiguousarray(out.category_words[multiway], dtype="<i8")
        bits = np.unpackbits(words.view(np.uint8), axis=1, bitorder="little")
        holder, code = np.nonzero(bits)
        n_codes = np.zeros(multiway.size, dtype=np.int64)
        np.maximum.at(n_codes, holder, code + 1)
        table_end = np.cumsum(n_codes + 1)
        tables = np.repeat(default, n_codes + 1)
        child_end = np.cumsum(n_children)
        branch = np.arange(child_end[-1]) - np.repeat(child_end - n_children, n_children)
        tables[(table_end - n_codes - 1)[holder] + code] = first[holder] + branch
        self.nodes.tree.set_multiway_splits(
            ids[multiway],
            out.feature[multiway],
            first,
            first + n_children - 1,
            tables,
            n_codes,
        )
