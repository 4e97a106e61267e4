"""Split application for the grower: the accepted splits made in the tree and on the
rows, and the histograms of the children that stay open.

:class:`SplitApplier` adds each split node's children (:class:`NodeTable`), has the
backend partition the rows, and builds the open children's histograms: a dense batch
(the smaller child's histograms built, the larger's derived as parent minus smaller: the
subtraction trick), or compact histograms for the small ones.
"""

from __future__ import annotations

import numpy as np

from gpu_tree.backends.contract import HistogramBackend
from gpu_tree.data.stats import bitsets
from gpu_tree.growing.batches import EvaluatedSplits, HistogramBatch, dense_batch
from gpu_tree.growing.feature_draws import FeatureDraws
from gpu_tree.growing.node_table import NodeTable
from gpu_tree.model.tree import CATEGORICAL_SUBSET, MULTIWAY


class SplitApplier:
    """Splits evaluated nodes and prepares their open children for evaluation.

    Parameters
    ----------
    backend : HistogramBackend
        Partitions the rows and builds the children's histograms.
    nodes : NodeTable
        Where the children are added and tracked.
    draws : FeatureDraws
        Builds the drawn features' histograms of big open children, where the fit does.
    phase : callable
        ``phase(name, nodes, features=None)``: the timer's context of a phase.
    """

    def __init__(self, backend: HistogramBackend, nodes: NodeTable, draws: FeatureDraws, phase):
        self.backend = backend
        self.layout = nodes.layout
        self.nodes = nodes
        self.draws = draws
        self.phase = phase

    def split(
        self, ev: EvaluatedSplits, which: np.ndarray
    ) -> tuple[list[HistogramBatch], np.ndarray]:
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

    def _category_words(self, ev, which):
        """Bitset of the codes each subset node sends left, as the tree stores it: where
        missing values go left, so do the categories the node did not see (the set is
        then the complement of the codes sent right)."""
        n_words = self.nodes.tree.n_category_words
        words = np.zeros((which.size, n_words), dtype=np.int64)
        subset = np.flatnonzero(ev.kind[which] == CATEGORICAL_SUBSET)
        if subset.size == 0:
            return words
        nodes = which[subset]
        left = bitsets(ev.left_codes[nodes], n_words)
        right = bitsets(ev.present_codes[nodes], n_words) & ~left  # the left codes are present
        words[subset] = np.where(ev.missing_left[nodes][:, None], ~right, left)
        return words

    def _split_binary(
        self, ev: EvaluatedSplits, which: np.ndarray
    ) -> tuple[HistogramBatch | None, np.ndarray]:
        """Split nodes in two (numeric and categorical subset splits); see :meth:`split`."""
        layout = self.layout
        table = self.nodes
        tree = table.tree
        nodes = ev.nodes[which]
        n = nodes.size
        left_stats = ev.left_stats[which]
        right_stats = ev.right_stats[which]
        child_stats = np.empty((2 * n, layout.n_channels), dtype=layout.dtype)
        child_stats[0::2] = left_stats
        child_stats[1::2] = right_stats
        child_depth = np.repeat(tree.depth[nodes] + 1, 2)
        children = table.add(child_depth, child_stats)
        left, right = children[0::2], children[1::2]
        table.track_children(np.repeat(nodes, 2), children, np.tile([0, 1], n))
        table.inherit_used_features(np.repeat(nodes, 2), children)
        left_count = layout.count(left_stats)
        right_count = layout.count(right_stats)
        subset = ev.kind[which] == CATEGORICAL_SUBSET
        missing_left = ev.missing_left[which].astype(np.uint8)
        numeric = ~subset
        tree.set_numeric_splits(
            nodes[numeric],
            ev.feature[which][numeric],
            ev.threshold[which][numeric],
            -1 if self.backend.capabilities.exact else ev.bin[which][numeric],
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
        means = table.centred_means(child_stats)
        # A CUDA partition measures the children's variances as it goes (one output).
        single = means is not None and means.ndim == 1
        child_means = (means[0::2], means[1::2]) if single else None
        with self.phase("partition", nodes, ev.feature[which]):
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
        table.bound_children(ev.feature[which], left, right, left_stats, right_stats)
        table.measure_impurity(children, child_stats, means)

        open_mask = table.splittable(children, child_stats)
        no_compact = np.zeros(0, dtype=np.int64)
        if not open_mask.any():
            return None, no_compact
        if not self.backend.capabilities.subtraction:
            return None, children[open_mask]
        if self.draws.drawn_only:  # big open children: their drawn features', from their rows
            open_children = children[open_mask]
            big = self.backend.node_sizes(open_children) >= self.backend.small_node_size
            batch = self.draws.drawn_batch(open_children[big]) if big.any() else None
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
        with self.phase("histograms", smaller):
            built = self.backend.histograms(smaller, out=hist[:m])
        with self.phase("subtraction", larger):
            self.backend.subtract(ev.hist, ev.hist_slots[which[parents]], hist[:m], out=hist[m:])
        batch_nodes = np.concatenate([smaller, larger])
        # Children ids are parent-major (left = even offset), so this maps id -> open.
        is_open = open_mask[batch_nodes - children[0]]
        batch = HistogramBatch(
            batch_nodes, hist, np.flatnonzero(is_open), built.bin_lower, built.bin_upper
        )
        return batch, compact_children

    def _split_multiway(
        self, ev: EvaluatedSplits, which: np.ndarray
    ) -> tuple[HistogramBatch | None, np.ndarray]:
        """Split nodes into one child per category present (Quinlan's ID3, 1986); see
        :meth:`split`.

        Missing values and categories the node did not see go to its largest branch.
        Children get histograms of their own (no subtraction: a parent has many children).
        """
        layout = self.layout
        table = self.nodes
        tree = table.tree
        nodes = ev.nodes[which]
        branch_stats = list(ev.branch_stats[which])
        n_branches = np.fromiter(map(len, branch_stats), dtype=np.int64, count=which.size)
        child_stats = np.concatenate(branch_stats)
        parents = np.repeat(nodes, n_branches)
        all_children = table.add(np.repeat(tree.depth[nodes] + 1, n_branches), child_stats)
        first = all_children[np.cumsum(n_branches) - n_branches]
        table.track_children(parents, all_children, all_children - np.repeat(first, n_branches))
        table.clip_values(all_children, child_stats)
        feature = ev.feature[which]
        # The child of each code a node holds; codes it did not hold (up to the largest
        # any node holds) go to the child of its missing rows, its default.
        codes = np.concatenate(list(ev.present_codes[which]))
        holder = np.repeat(np.arange(which.size), n_branches)
        default_child = first + ev.default_branch[which]
        child_of_code = np.repeat(default_child[:, None], 1 + int(codes.max()), axis=1)
        child_of_code[holder, codes] = all_children
        n_codes = np.zeros(which.size, dtype=np.int64)
        np.maximum.at(n_codes, holder, codes + 1)
        # Each node's table: its codes' children up to its largest code, then its default.
        tables = np.append(child_of_code, default_child[:, None], axis=1)
        in_table = np.arange(tables.shape[1])[None, :] <= n_codes[:, None]
        tree.set_multiway_splits(
            nodes, feature, first, first + n_branches - 1, tables[in_table], n_codes
        )
        table.inherit_used_features(parents, all_children, np.repeat(feature, n_branches))
        with self.phase("partition", nodes, feature):
            self.backend.partition_multiway(
                nodes,
                feature,
                child_of_code,
                default_child,
                np.split(all_children, np.cumsum(n_branches)[:-1]),
                sizes=np.split(layout.count(child_stats), np.cumsum(n_branches)[:-1]),
            )
        table.measure_impurity(all_children, child_stats)
        open_children = all_children[table.splittable(all_children, child_stats)]
        if open_children.size == 0:
            return None, open_children
        if not self.backend.capabilities.subtraction:  # compact histograms only
            return None, open_children
        dense = self.backend.node_sizes(open_children) >= self.backend.small_node_size
        if not dense.any():
            return None, open_children
        with self.phase("histograms", open_children[dense]):
            built = self.backend.histograms(open_children[dense])
        return dense_batch(open_children[dense], built), open_children[~dense]
