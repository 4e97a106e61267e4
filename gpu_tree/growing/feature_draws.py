"""The features each node draws (``max_features``), and the batches of the drawn
features' histograms only.

As in scikit-learn, a node draws ``max_features`` among the features that are not
constant in it and searches those only. The draw is keyed by the node's place in its tree
(random_draws), so it does not depend on how its level was batched.
"""

from __future__ import annotations

import numpy as np

from gpu_tree.backends.contract import HistogramBackend
from gpu_tree.growing.batches import HistogramBatch
from gpu_tree.growing.node_table import NodeTable
from gpu_tree.growing.random_draws import draw_features, feature_order, take_drawn
from gpu_tree.growing.splitting import compiled_scan_scores
from gpu_tree.kernels.cpu import histograms as cpu_histograms
from gpu_tree.utils.device_copies import device_to_host

# A fit drawing at most this fraction of the features per node (forests: sqrt of them)
# builds the histograms of the drawn features only, every node's from its rows, where the
# backend can (drawn_histograms), instead of every feature's for the smaller child and
# the subtraction trick for the larger: both children's rows times the drawn features
# against the smaller child's rows times all of them, and no subtraction pass.
DRAWN_ONLY_MAX_FRACTION = 1 / 3


class FeatureDraws:
    """The per-node feature draws of a fit.

    Parameters
    ----------
    backend : HistogramBackend
    params : GrowthParams
    n_features : int
    nodes : NodeTable
        Holds each node's draw key.
    phase : callable
        ``phase(name, nodes)``: the timer's context of a phase (the grower's).
    """

    def __init__(self, backend: HistogramBackend, params, n_features, nodes: NodeTable, phase):
        self.backend = backend
        self.params = params
        self.n_features = n_features
        self.nodes = nodes
        self.phase = phase
        self.draws = params.max_features is not None and params.max_features < n_features
        self.drawn_only = self._builds_drawn_histograms_only()

    def _builds_drawn_histograms_only(self) -> bool:
        """Whether dense histograms are built for the drawn features only (see
        DRAWN_ONLY_MAX_FRACTION): where the backend can, features are drawn from few
        enough, and the compiled numeric search (which reads only the masked features)
        scores them: no categorical feature, no multiway split."""
        p = self.params
        capabilities = self.backend.capabilities
        categorical = p.categorical is not None and p.categorical.features.size > 0
        return (
            capabilities.drawn_histograms
            and self.draws
            and p.max_features <= DRAWN_ONLY_MAX_FRACTION * self.n_features
            and not categorical
            and not self.nodes.multiway
            and capabilities.compiled_search
            and compiled_scan_scores(self.nodes.layout, p.criterion)
            # The constrained searches (compiled and vectorised) read each column's
            # constraint by its index, a feature's: a drawn batch's columns are not.
            and self.nodes.monotonic is None
        )

    def drawn_batch(self, nodes) -> HistogramBatch:
        """A dense batch of ``nodes`` (all open) holding the histograms of their drawn
        features only, built from their rows (see :class:`HistogramBatch`).

        A node draws the first ``max_features`` of its features, in its draw order
        (random_draws.feature_order), that are not constant in it, which their
        histograms tell: the first ``max_features`` in that order are built, then, for
        the nodes that found some constant, the next ``max_features``, until each has
        drawn its own or has none left: the draw of :meth:`feature_mask`, from fewer
        histograms. Each node's drawn features are kept in feature order, so the split
        search breaks ties between them as it does over every feature.
        """
        n_drawn = self.params.max_features
        order = feature_order(self.nodes.key[nodes], self.n_features)
        with self.phase("histograms", nodes):
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
        return HistogramBatch(
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
        cpu_histograms.filled_bins(hist, slots, positions, hist[:1, 0], False, filled)
        return filled > 1

    def _draw_on(self, nodes, order, hist, slots, first_listed, first_eligible):
        """:meth:`drawn_batch` for nodes of which some first drawn feature was constant:
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

    def feature_mask(self, batch: HistogramBatch, slots, usable):
        """The features drawn for the nodes of ``slots`` (None: every feature is searched).

        As in scikit-learn, ``max_features`` are drawn among the features that are not
        constant in the node (its rows fill more than one bin, the missing values' counted),
        and usable (multiway: not used above); a node with fewer such features searches
        them all.
        """
        if not self.draws:
            return None
        if batch.drawn_mask is not None:  # drawn as its histograms were built
            return batch.drawn_mask[slots]
        if self.backend.xp is np:
            filled = np.empty((slots.size, self.n_features), dtype=np.int64)
            use_missing = batch.missing is not None  # compact batches' missing rows
            missing = batch.missing if use_missing else batch.hist[:1, 0]  # or a stand-in
            every_feature = np.arange(self.n_features)[None]
            cpu_histograms.filled_bins(
                batch.hist, slots, every_feature, missing, use_missing, filled
            )
        else:
            filled = (batch.hist[slots] != 0).any(axis=-1).sum(axis=2)
            if batch.missing is not None:
                filled = filled + (batch.missing[slots] != 0).any(axis=-1)
            filled = device_to_host(filled)
        eligible = filled > 1
        if usable is not None:
            eligible &= usable
        keys = self.nodes.key[batch.nodes[slots]]
        return draw_features(keys, self.n_features, self.params.max_features, eligible)
