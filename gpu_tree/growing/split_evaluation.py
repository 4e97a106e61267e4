"""Split evaluation for the grower: each open node's best split, and whether it is
accepted.

:class:`SplitEvaluator` runs the split search (``splitting.select_splits``, or absolute
error's search on the rows) over a batch of histograms, applies the acceptance rules
(``min_impurity_decrease``, purity) and turns the winners' bins into what the tree stores
(thresholds, bin codes, category codes): an :class:`EvaluatedSplits`.
"""

from __future__ import annotations

import numpy as np

from gpu_tree.backends.contract import HistogramBackend
from gpu_tree.backends.cpu import score_splits_on_cpu
from gpu_tree.data.stats import StatsLayout
from gpu_tree.growing.absolute_error import absolute_error_search
from gpu_tree.growing.batches import EvaluatedSplits, HistogramBatch
from gpu_tree.growing.feature_costs import each_column_alone, fit_score, select_by_cost
from gpu_tree.growing.feature_draws import FeatureDraws
from gpu_tree.growing.node_table import EPSILON, NodeTable
from gpu_tree.growing.random_draws import uniform_draws
from gpu_tree.growing.splitting import (
    ChosenSplits,
    MonotonicBounds,
    SplitConstraints,
    compiled_scan_scores,
    midpoint,
    select_splits,
    select_splits_each_column,
)
from gpu_tree.kernels.cpu import histograms as cpu_histograms
from gpu_tree.model.tree import NUMERIC, TREE_UNDEFINED
from gpu_tree.utils.device_copies import device_to_host

# Cells (nodes x features x compact bins) per chunk of compact histograms: bounds their
# memory.
_COMPACT_CELLS_PER_CHUNK = 1 << 21


class SplitEvaluator:
    """Finds and accepts the best split of the open nodes of a batch.

    Parameters
    ----------
    backend : HistogramBackend
    layout : StatsLayout
    params : GrowthParams
    n_features : int
    nodes : NodeTable
        The nodes' impurities, weights, roots, bounds and multiway-used features.
    draws : FeatureDraws
        The features each node searches.
    phase : callable
        ``phase(name, nodes)``: the timer's context of a phase (the grower's).
    """

    def __init__(
        self,
        backend: HistogramBackend,
        layout: StatsLayout,
        params,
        n_features: int,
        nodes: NodeTable,
        draws: FeatureDraws,
        phase,
    ):
        self.backend = backend
        self.layout = layout
        self.params = params
        self.n_features = n_features
        self.nodes = nodes
        self.draws = draws
        self.phase = phase
        self.constraints = SplitConstraints(params.min_samples_leaf, params.min_weight_leaf)

    def evaluate(self, batch: HistogramBatch) -> EvaluatedSplits:
        """The open nodes of ``batch`` whose best split is accepted, in node-id order."""
        with self.phase("split_scoring", batch.nodes[batch.open_slots]):
            return self._evaluate(batch)

    def evaluate_compact(self, nodes) -> list[EvaluatedSplits]:
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
            with self.phase("histograms", chunk):
                compact = self.backend.compact_histograms(chunk)
            batch = HistogramBatch(
                chunk,
                compact.hist,
                np.arange(chunk.size),
                compact.bin_lower,
                compact.bin_upper,
                compact.bin_code,
                False,
                compact.missing,
            )
            evaluated.append(self.evaluate(batch))
            start = stop
        return evaluated

    def _evaluate(self, batch: HistogramBatch) -> EvaluatedSplits:
        p = self.params
        table = self.nodes
        tree = table.tree
        xp = self.backend.xp
        capabilities = self.backend.capabilities
        slots = batch.open_slots[np.argsort(batch.nodes[batch.open_slots], kind="stable")]
        nodes = batch.nodes[slots]
        usable = table.usable_features(nodes)
        drawn = self.draws.feature_mask(batch, slots, usable)
        mask = usable if drawn is None else drawn
        on_device = capabilities.device == "cuda"  # GPU histograms: see select_splits
        # The backend's compiled split search (the fused kernel on a GPU), where it has one.
        compiled = self.backend.score_splits if capabilities.compiled_search else None
        searched = batch  # what the split search reads
        if p.random_thresholds:
            searched = self._random_split_batch(batch, slots)
            xp, on_device, compiled = np, False, score_splits_on_cpu
        if not compiled_scan_scores(self.layout, p.criterion):
            compiled = None
        compact = not searched.dense
        hist, missing = searched.hist, searched.missing
        missing_bin = self.backend.missing_bin
        if searched.dense and missing_bin >= 0:
            hist, missing = searched.hist[:, :, :missing_bin], searched.hist[:, :, missing_bin]

        def monotonic_bounds(node=None) -> MonotonicBounds | None:
            """The constraints of the nodes (or of ``node``: indices into them)."""
            if table.monotonic is None:
                return None
            # Constraints by feature index: every searched column, a random-threshold
            # batch's too, is the feature of its index, since constrained fits build no
            # batch of drawn columns (FeatureDraws.drawn_only).
            bounds = table.bounds[nodes if node is None else nodes[node]]
            return MonotonicBounds(table.monotonic, bounds[:, 0], bounds[:, 1])

        def search(feature_mask, node=None) -> ChosenSplits:
            """The split search of the nodes (or of ``node``: indices into them, which
            may repeat) under ``feature_mask``, one row per searched node."""
            searched_slots = slots if node is None else slots[node]
            monotonic = monotonic_bounds(node)
            if p.criterion == "absolute_error":  # medians: searched on the rows
                return absolute_error_search(
                    self.backend,
                    self.layout,
                    self.constraints,
                    batch,
                    searched_slots,
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
                searched_slots,
                compact,
                missing,
                p.categorical,
                on_device=on_device,
                compiled=compiled,
                monotonic=monotonic,
                compiled_categorical=capabilities.compiled_categorical_search,
            )

        def search_each_column() -> ChosenSplits:
            """Each node's best split on each column alone (select_by_cost's input): in
            one compiled call where the CPU's compiled search would search the nodes
            (numeric features), else as one search of a node per (node, column)."""
            categorical = p.categorical is not None and p.categorical.features.size > 0
            searched_by_scan = p.criterion != "absolute_error" and not categorical
            if compiled is score_splits_on_cpu and searched_by_scan:
                return select_splits_each_column(
                    hist,
                    p.criterion,
                    self.layout,
                    self.constraints,
                    mask,
                    slots,
                    missing,
                    monotonic_bounds(),
                )
            node, alone = each_column_alone(mask, slots.size, hist.shape[1])
            return search(alone, node)

        if p.feature_costs is None:
            chosen = search(mask)
        else:
            costs = self._column_costs(batch, slots)
            chosen = select_by_cost(search_each_column(), costs, p, self.layout)
        # The fraction of its tree's weight a node holds (trees of a forest weigh apart).
        root_weight = tree.weighted_n_node_samples[table.root[nodes]]
        priority = tree.weighted_n_node_samples[nodes] / root_weight * chosen.score
        # Scores are in the fit's units (regression targets may be scaled: StatsLayout).
        min_decrease = fit_score(p.min_impurity_decrease, p.criterion, self.layout)
        table.receive_impurities()  # the copy back that brought the winners brought them
        accept = (
            chosen.has_split
            & (priority + EPSILON >= min_decrease)
            & (tree.impurity[nodes] > table.pure_impurity)
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
        return EvaluatedSplits(
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

    def _column_costs(self, batch: HistogramBatch, slots) -> np.ndarray:
        """The cost of the feature of each histogram column of the nodes of ``slots``:
        (len(slots), n_columns). A column is a feature, or in a batch of drawn features'
        histograms the node's drawn feature at that position."""
        costs = self.params.feature_costs
        if batch.drawn_features is not None:
            return costs[batch.drawn_features[slots]]
        return np.broadcast_to(costs, (slots.size, self.n_features))

    def _random_split_batch(self, batch: HistogramBatch, slots) -> HistogramBatch:
        """Extremely randomised trees: the batch's histograms of ``slots`` collapsed to
        one random split per node and feature (``kernels.cpu.histograms.random_split_histograms``),
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
        uniform = uniform_draws(self.nodes.key[batch.nodes[slots]], self.n_features)
        if batch.drawn_features is not None:  # per slot: its drawn features' bounds
            lower, upper = lower[0][batch.drawn_features], upper[0][batch.drawn_features]
            uniform = np.take_along_axis(uniform, batch.drawn_features[slots], axis=1)
            codes = np.broadcast_to(codes, lower.shape)  # indexed as the bounds
        k = slots.size
        out_hist = np.zeros((k, n_features, 2, n_channels), dtype=hist.dtype)
        out_code = np.zeros((k, n_features, 2), dtype=np.int64)
        out_lower = np.zeros((k, n_features, 2), dtype=lower.dtype)
        out_upper = np.zeros((k, n_features, 2), dtype=upper.dtype)
        cpu_histograms.random_split_histograms(
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

        return HistogramBatch(
            batch.nodes,
            by_slot(out_hist),
            batch.open_slots,
            by_slot(out_lower),
            by_slot(out_upper),
            bin_code=by_slot(out_code) if batch.bin_code is not None or batch.dense else None,
            dense=False,
            missing=missing,
        )
