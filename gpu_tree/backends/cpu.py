"""CPU backends: numpy arrays, hot loops in :mod:`gpu_tree.kernels.cpu`.

Both implement the grower's contract, :class:`gpu_tree.backends.contract.HistogramBackend`
(its docstrings describe every call). Rows of a node are a contiguous slice of
``sample_indices`` (:class:`~gpu_tree.backends.rows.RowPartition`); splitting a node
partitions its slice in place, so a histogram pass reads only the rows of the nodes asked
for.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from gpu_tree.backends.contract import (
    BackendCapabilities,
    CompactHistograms,
    DenseHistograms,
    FinishedSubtrees,
    SubtreeCategories,
    SubtreeRules,
)
from gpu_tree.backends.rows import RowData, RowPartition, squared_deviation_sums
from gpu_tree.data.stats import scan_outputs
from gpu_tree.kernels.cpu import feature_costs as cpu_feature_costs
from gpu_tree.kernels.cpu import histograms as cpu_histograms
from gpu_tree.kernels.cpu import row_statistics as cpu_row_statistics
from gpu_tree.kernels.cpu import split_scan as cpu_split_scan
from gpu_tree.kernels.cpu import subtrees as cpu_subtrees
from gpu_tree.model.tree import NODE_IMPURITY
from gpu_tree.utils.fit_stats import count

__all__ = ["CPUExactBackend", "CPUHistogramBackend", "RowData"]


def _check_sizes(counted, expected):
    """The rows the partition sent each child equal what the histograms counted (a check
    the CPU gets for free: its partition counts as it goes)."""
    if any(not np.array_equal(a, b) for a, b in zip(counted, expected, strict=True)):
        raise RuntimeError("internal error: partition disagrees with the histogram counts")


class _CPUBackend:
    """What both CPU modes share: rows partitioned per node, compact histograms."""

    xp = np

    def __init__(self, columns, row_data: RowData):
        self.columns = columns  # feature-major: bin codes or raw values
        self.row_data = row_data
        self.row_partition = RowPartition(row_data.n_samples, row_data.root_sizes)

    def root_stats(self):
        return self.row_data.root_stats()

    def node_sizes(self, nodes):
        return self.row_partition.node_sizes(nodes)

    def place_finished_rows(self, nodes, roots, start, end):
        """The rows of ``nodes`` grown by ``finish_subtrees`` with
        ``SubtreeRules.keep_row_order``: positions ``start:end`` (FinishedSubtrees.rows)
        of the rows of their subtree's root ``roots``, which it left in their order."""
        partition = self.row_partition
        nodes = np.asarray(nodes, dtype=np.int64)
        if nodes.size == 0:
            return
        partition.reserve(int(nodes.max()) + 1)
        first = partition.start[np.asarray(roots, dtype=np.int64)]
        partition.start[nodes] = first + start
        partition.end[nodes] = first + end

    def leaf_of_row(self, leaves):
        """The leaf each row ended in (int64): a leaf's rows are a slice of the
        partition's ``sample_indices``."""
        partition = self.row_partition
        start, sizes = partition.start[leaves], partition.node_sizes(leaves)
        offsets = np.repeat(start - (np.cumsum(sizes) - sizes), sizes)
        positions = offsets + np.arange(int(sizes.sum()))
        leaf_of_row = np.full(partition.sample_indices.size, -1, dtype=np.int64)
        leaf_of_row[partition.sample_indices[positions]] = np.repeat(leaves, sizes)
        return leaf_of_row

    def _count_built(self, nodes):
        """Histograms of ``nodes`` are built from their rows alone (``fit_stats_``)."""
        count("nodes_built", nodes.size)
        count("rows_read", int(np.sum(self.node_sizes(nodes))))

    def squared_deviation_sums(self, nodes, means, output=None):
        nodes = np.asarray(nodes, dtype=np.int64)
        partition, row_data = self.row_partition, self.row_data
        rows = (
            partition.sample_indices,
            partition.start[nodes],
            partition.end[nodes],
            row_data.centred_output(output),
            row_data.weight,
            not row_data.layout.has_count_channel,  # unweighted: every weight is 1
            np.ascontiguousarray(means, dtype=np.float64),
        )
        return squared_deviation_sums(
            nodes.size,
            lambda *extremes: cpu_row_statistics.largest_squared_deviations(*rows, *extremes),
            lambda *parts: cpu_row_statistics.squared_deviation_sums(*rows, *parts),
        )

    def row_columns(self, rows, features) -> np.ndarray:
        """The values (bin codes or raw values) of ``features`` at ``rows`` (int64), as a
        feature-major block (features.size, rows.size): what a search on a node's rows
        reads (the absolute-error criterion's), costing the block's size only."""
        return self.columns[np.ix_(features, rows)]

    def _routing_columns(self, nodes, feature):
        """The feature-major matrix a split routes rows by, and the row of it each node's
        split feature is (here: the columns themselves, at the features)."""
        return self.columns, feature

    def partition(
        self,
        nodes,
        feature,
        bin_threshold,
        threshold,
        missing_left,
        left_children,
        right_children,
        category_sets=None,
        *,
        sizes,
        child_means=None,
    ):
        # Histogram mode splits the bin codes at the bin, exact mode the raw values at the
        # threshold (_split_points); the row partition is the same.
        columns, feature = self._routing_columns(nodes, feature)
        n_left = self.row_partition.split(
            columns,
            nodes,
            feature,
            self._split_points(bin_threshold, threshold),
            missing_left,
            self.missing_code,
            left_children,
            right_children,
            category_sets,
        )
        _check_sizes([n_left], [sizes[0]])

    def partition_multiway(self, nodes, feature, child_of_code, default_child, children, *, sizes):
        first = np.array([c[0] for c in children], dtype=np.int64)
        columns, feature = self._routing_columns(nodes, feature)
        child_sizes = self.row_partition.split_multiway(
            columns,
            nodes,
            feature,
            np.asarray(child_of_code) - first[:, None],
            np.asarray(default_child) - first,
            self.missing_code,
            children,
        )
        _check_sizes(child_sizes, sizes)

    def _distinct_value_histograms(self, nodes):
        """Distinct column values of each node's rows: hist (n, F, width, C), values
        (n, F, width), and the statistics of rows missing each feature (n, F, C)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        partition = self.row_partition
        start, end = partition.start[nodes], partition.end[nodes]
        width = max(1, int((end - start).max(initial=1)))
        n_features = self.columns.shape[0]
        layout = self.row_data.layout
        hist = layout.zeros((nodes.size, n_features, width))
        values = np.full((nodes.size, n_features, width), np.inf, dtype=self.columns.dtype)
        missing = layout.zeros((nodes.size, n_features))
        cpu_histograms.compact_histograms(
            self.columns,
            partition.sample_indices,
            start,
            end,
            self.row_data.row_stats,
            self.missing_code,
            hist,
            values,
            missing,
        )
        used = max(1, int(np.isfinite(values).sum(axis=2).max(initial=1)))
        return hist[:, :, :used], values[:, :, :used], missing


def score_splits_on_cpu(search):
    """The compiled split search (``kernels/_split_scan.py``, one task per node) of a
    ``CompiledSearch`` (gpu_tree.growing.splitting) on numpy arrays: the winner rows,
    (n_nodes, WINNER_FIXED_COLUMNS + 2 * n_channels) int64."""
    n_channels = search.hist.shape[3]
    shape = (search.slots.size, cpu_split_scan.WINNER_FIXED_COLUMNS + 2 * n_channels)
    winners = np.empty(shape, dtype=np.int64)
    cpu_split_scan.score_splits(*search, winners)
    return winners


class CPUHistogramBackend(_CPUBackend):
    """Histogram search on the CPU: binned features, sibling histograms by subtraction."""

    capabilities = BackendCapabilities(
        device="cpu",
        exact=False,
        subtraction=True,
        drawn_histograms=True,
        compiled_search=True,
        subtree_finisher=True,
        compiled_categorical_search=True,
        row_leaves=True,
    )

    def __init__(self, X_binned, bin_lower, bin_upper, row_data: RowData, missing_bin: int = -1):
        super().__init__(X_binned, row_data)
        # Missing values' bin code, the last bin of every feature (-1: no missing values).
        self.missing_bin = missing_bin
        self.missing_code = int(missing_bin)  # an integer compare against the codes
        self.X_binned = X_binned
        self.n_bins = bin_lower.shape[1]
        self.bin_lower = bin_lower
        self.bin_upper = bin_upper
        # A node with fewer rows than bins fills few of them: a compact histogram (one
        # compact bin per bin code present) costs its rows, a dense one costs n_bins.
        self.small_node_size = self.n_bins
        self._every_feature = np.arange(X_binned.shape[0], dtype=np.int64)[None]
        self._class_rows = None  # the histograms' classes and weights (_histogram_rows)

    # The split search of numeric fits, compiled (the grower's select_splits passes it a
    # CompiledSearch): a third of the vectorised numpy search's time at 100,000 rows,
    # depth 10 (bench/RESULTS.md), the same winners (tests/kernels/test_split_scan.py).
    score_splits = staticmethod(score_splits_on_cpu)

    def histograms(self, nodes, out=None, features=None) -> DenseHistograms:
        """Dense histograms of ``nodes``; ``features`` (n_nodes, k) int64: only these
        features', ``hist[node, j]`` feature ``features[node, j]``'s (a forest's drawn
        features)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        layout = self.row_data.layout
        features = self._listed_features(features)
        if out is None:  # the kernels zero it
            out = self.empty_histograms(nodes.size, features.shape[1])
        hist = out
        self._count_built(nodes)
        partition = self.row_partition
        start = partition.start[nodes]
        end = partition.end[nodes]
        if layout.is_classification and layout.n_outputs == 1:  # from the class codes
            count_channel = layout.n_channels - 1 if layout.has_count_channel else -1
            y_class, weight, weight_unit = self._histogram_rows()
            cpu_histograms.histograms_classification(
                self.X_binned,
                partition.sample_indices,
                start,
                end,
                features,
                y_class,
                weight,
                weight_unit,
                not layout.has_count_channel,  # unweighted: every weight is 1
                count_channel,
                numba.get_num_threads(),
                hist,
            )
        else:
            cpu_histograms.histograms_dense(
                self.X_binned,
                partition.sample_indices,
                start,
                end,
                features,
                self.row_data.row_stats,
                numba.get_num_threads(),
                hist,
            )
        return DenseHistograms(hist, self.bin_lower[None], self.bin_upper[None])

    def _histogram_rows(self):
        """One output's rows as the classification histograms read them (made once):
        class codes and weights of one byte a row where they fit, the weights as
        multiples of their smallest (a forest's bootstrap counts), else the rows' own
        int64 codes and weights (unit 1): (y_class, weight, weight_unit).

        Below the first levels a node's rows lie far apart and every row read is a cache
        miss; a byte a row keeps a batch's classes and weights in cache (5 million rows:
        10 MB, not 80): a third off the histograms of a forest's deepest levels (a
        batch of 8 trees of a million rows, one thread: 150 -> 100 ms at depth 9)."""
        if self._class_rows is None:
            row_data = self.row_data
            y_class, weight, unit = row_data.y_class, row_data.weight_fixed, 1
            if row_data.layout.n_classes <= np.iinfo(np.uint8).max + 1:
                y_class = y_class.astype(np.uint8)
            if not row_data.layout.has_count_channel:  # unweighted: the weights go unread
                weight = y_class
            else:
                multiples = np.empty(weight.shape, dtype=np.uint8)
                smallest = int(cpu_histograms.weight_multiples(weight, multiples))
                if smallest:
                    weight, unit = multiples, smallest
            self._class_rows = (y_class, weight, unit)
        return self._class_rows

    def _listed_features(self, features):
        """``histograms``' features as the kernels take them: (1, n_features) every feature
        for None, else the (n_nodes, k) drawn ones as int64."""
        if features is None:
            return self._every_feature
        return np.ascontiguousarray(features, dtype=np.int64)

    def empty_histograms(self, n_nodes, n_features=None):
        layout = self.row_data.layout
        n_features = self.X_binned.shape[0] if n_features is None else n_features
        shape = (n_nodes, n_features, self.n_bins, layout.n_channels)
        return np.empty(shape, dtype=layout.dtype)

    @staticmethod
    def subtract(hist, parent_slots, child_hist, out):
        cpu_histograms.subtract_histograms(
            hist, np.asarray(parent_slots, dtype=np.int64), child_hist, out
        )

    def compact_histograms(self, nodes) -> CompactHistograms:
        """Compact histograms over the bin codes present in each node (bin order)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        self._count_built(nodes)
        partition = self.row_partition
        start, end = partition.start[nodes], partition.end[nodes]
        n_features = self.X_binned.shape[0]
        # A node holds at most min(rows, bins) distinct codes.
        width = max(1, min(int((end - start).max(initial=1)), self.n_bins))
        layout = self.row_data.layout
        hist = layout.zeros((nodes.size, n_features, width))
        code = np.empty((nodes.size, n_features, width), dtype=np.int64)
        lower = np.empty((nodes.size, n_features, width), dtype=self.bin_lower.dtype)
        upper = np.empty((nodes.size, n_features, width), dtype=self.bin_upper.dtype)
        missing = layout.zeros((nodes.size, n_features))
        cpu_histograms.compact_code_histograms(
            self.X_binned,
            partition.sample_indices,
            start,
            end,
            self.row_data.row_stats,
            self.missing_bin,
            self.bin_lower,
            self.bin_upper,
            hist,
            code,
            lower,
            upper,
            missing,
        )
        return CompactHistograms(hist, lower, upper, code, missing)

    def finish_subtrees(
        self,
        nodes,
        depth,
        impurity,
        criterion,
        rules: SubtreeRules,
        categories: SubtreeCategories | None = None,
        keys=None,
        used=None,
        bounds=None,
    ):
        """Grow the whole subtree of each of ``nodes`` (known splittable) in one compiled
        call (``kernels/cpu/subtrees.py``): ``depth`` and ``impurity`` are theirs,
        ``criterion`` the split criterion's name and ``rules`` the rules it grows by;
        ``categories``: the categorical features and their
        subset search (None: every feature is numeric); ``keys``: the nodes' keys of the
        per-node feature draws (uint64; None: zeros, for fits that draw none); ``used``
        (multiway splits): (n_nodes, n_features) bool, the features the nodes' multiway
        ancestors split; ``bounds`` (monotonicity constraints, ``rules.monotonic_cst``):
        (n_nodes, 2) the nodes' bounds on their values (None: unbounded). Returns
        :class:`FinishedSubtrees`."""
        nodes = np.asarray(nodes, dtype=np.int64)
        partition = self.row_partition
        rows = SubtreeRows(
            self.X_binned,
            partition.sample_indices,
            partition.start[nodes],
            partition.end[nodes],
            self.row_data.row_stats,
            self.row_data.centred,
            self.row_data.weight,
        )
        return grow_subtrees(
            rows,
            self.row_data.layout,
            (self.n_bins, self.missing_code, self.missing_bin, self.bin_lower, self.bin_upper),
            nodes.size,
            depth,
            impurity,
            criterion,
            rules,
            categories,
            keys,
            used,
            bounds,
        )

    @staticmethod
    def _split_points(bin_threshold, threshold):
        return np.asarray(bin_threshold, dtype=np.int64)  # codes <= it go left


class SubtreeRows(NamedTuple):
    """The rows a subtree finisher grows from: ``X_binned`` (n_features, n) bin codes;
    node k's rows are ``sample_indices[start[k]:end[k]]``, whose ``row_stats`` (n,
    n_channels) integers and, for regression, ``centred`` targets and ``weight`` the
    finisher reads (RowData's; for classification they may be empty)."""

    X_binned: np.ndarray
    sample_indices: np.ndarray
    start: np.ndarray
    end: np.ndarray
    row_stats: np.ndarray
    centred: np.ndarray | None
    weight: np.ndarray | None


def grow_subtrees(
    rows: SubtreeRows,
    layout,
    bins,
    n_nodes: int,
    depth,
    impurity,
    criterion,
    rules: SubtreeRules,
    categories: SubtreeCategories | None = None,
    keys=None,
    used=None,
    bounds=None,
) -> FinishedSubtrees:
    """The whole subtree of each of ``n_nodes`` nodes (their ``rows``), grown in one
    compiled call (``kernels/cpu/subtrees.py``): the CPU backend's
    :meth:`~CPUHistogramBackend.finish_subtrees` on its own rows, and a distributed
    fit's on rows gathered from its workers (gpu_tree/dask/backend.py). ``bins``:
    (n_bins, missing_code, missing_bin, bin_lower, bin_upper); the rest as
    ``finish_subtrees`` takes them."""
    n_bins, missing_code, missing_bin, bin_lower, bin_upper = bins
    start, end = rows.start, rows.end
    capacity = 2 * (end - start) - 1  # a binary tree of n leaves has 2n - 1 nodes
    offset = np.concatenate([[0], np.cumsum(capacity)]).astype(np.int64)
    total = int(offset[-1])
    n_channels = layout.n_channels
    if categories is None:  # stand-ins: no feature is categorical
        categories = SubtreeCategories(
            np.zeros(rows.X_binned.shape[0], dtype=bool),
            0,
            0,
            0,
            np.zeros((1, 2), dtype=np.int64),
            np.zeros(2, dtype=np.int64),
            1,
        )
    out = FinishedSubtrees(
        parent=np.empty(total, dtype=np.int64),
        depth=np.empty(total, dtype=np.int64),
        stats=np.empty((total, n_channels), dtype=np.int64),
        impurity=np.empty(total, dtype=np.float64),
        feature=np.empty(total, dtype=np.int64),
        code=np.empty(total, dtype=np.int64),
        next_code=np.empty(total, dtype=np.int64),
        missing_left=np.empty(total, dtype=np.uint8),
        left=np.empty(total, dtype=np.int64),
        searched=np.empty(total, dtype=np.uint8),
        subset=np.empty(total, dtype=np.uint8),
        category_words=np.empty((total, categories.n_category_words), dtype=np.int64),
        bounds=np.empty((total, 2), dtype=np.float64),
        rows=np.empty((total, 2), dtype=np.int64),
    )
    written = np.empty(n_nodes, dtype=np.int64)
    regression = not layout.is_classification
    no_rows = np.zeros(0)
    has_categorical = bool(np.any(categories.is_categorical))
    n_classes, outputs = scan_outputs(layout)
    n_features = rows.X_binned.shape[0]
    constrained = rules.feature_costs is not None or rules.monotonic_cst is not None
    costs = rules.feature_costs if rules.feature_costs is not None else np.zeros(n_features)
    cst = rules.monotonic_cst if rules.monotonic_cst is not None else np.zeros(n_features)
    if bounds is None:
        bounds = np.tile([-np.inf, np.inf], (n_nodes, 1))
    draws_features = 0 < rules.max_features < n_features
    cpu_subtrees.finisher(has_categorical, rules.random_thresholds, constrained, draws_features)(
        rows.X_binned,
        rows.sample_indices,
        start,
        end,
        rows.row_stats,
        rows.centred if regression else no_rows,
        rows.weight if regression else no_rows,
        not layout.has_count_channel,  # unweighted: every weight is 1
        np.asarray(depth, dtype=np.int64),
        np.asarray(impurity, dtype=np.float64),
        np.zeros(n_nodes, np.uint64) if keys is None else np.asarray(keys, np.uint64),
        np.zeros((1, 0), np.bool_) if used is None else np.ascontiguousarray(used, np.bool_),
        n_bins,
        missing_code,
        missing_bin >= 0,
        # Poisson's scan reads the centre after the channels' scales (CompiledSearch.scale).
        np.append(layout.scales(), layout.fit_centre) if regression else layout.scales(),
        cpu_split_scan.SPLIT_CRITERION_CODES[criterion],
        # Regression's (squared deviations: Poisson's too, until growth ends) is not read.
        cpu_subtrees.IMPURITY_CODES[NODE_IMPURITY.get(criterion, "squared_error")],
        n_classes,
        outputs,
        n_channels - 1 if layout.has_count_channel else -1,
        _finisher_settings(rules, 2 * layout.target_exponent),
        np.asarray(categories.is_categorical, dtype=np.bool_),
        has_categorical,
        has_categorical and categories.multiway,
        int(categories.max_subset),
        int(categories.subset_limit),
        int(categories.most),
        np.asarray(categories.binom, dtype=np.int64),
        np.asarray(categories.offsets, dtype=np.int64),
        bin_lower,
        bin_upper,
        np.ascontiguousarray(costs, dtype=np.float64),
        np.ascontiguousarray(cst, dtype=np.int64),
        np.ascontiguousarray(bounds, dtype=np.float64),
        offset,
        *out,
        written,
    )
    if np.any(written < 0):
        raise RuntimeError("internal error: partition disagrees with the split statistics")
    # The written part of each subtree's block, blocks in order.
    keep = np.concatenate([np.arange(a, a + n) for a, n in zip(offset[:-1], written, strict=True)])
    position = np.full(total, -1, dtype=np.int64)
    position[keep] = np.arange(keep.size)
    first = np.repeat(offset[:-1], written)  # each kept node's block start
    kept = {name: getattr(out, name)[keep] for name in FinishedSubtrees._fields}
    for name in ("parent", "left"):  # block positions -> positions in the result
        local = kept[name]
        kept[name] = np.where(local >= 0, position[first + np.maximum(local, 0)], -1)
    return FinishedSubtrees(**kept)


class ValueRanks(NamedTuple):
    """Each feature's values as ranks: ``codes`` (n_features, n_samples), the rank of a
    row's value among the feature's distinct values (``values[f, rank]``, increasing,
    +inf past the feature's last), and ``missing_code`` for NaN, one code past every
    feature's ranks, as a histogram's missing bin is its last."""

    codes: np.ndarray  # the smallest unsigned integer type that holds missing_code
    values: np.ndarray  # (n_features, missing_code + 1) float64
    missing_code: int
    has_missing: bool

    @classmethod
    def of(cls, columns) -> ValueRanks:
        """The ranks of ``columns`` (n_features, n_samples) float64: one sort of every
        column at once (NaN sorts last), a rank where a sorted value differs from the
        one before it."""
        n_features, n_samples = columns.shape
        order = np.argsort(columns, axis=1)
        ordered = np.take_along_axis(columns, order, axis=1)
        present = ~np.isnan(ordered)
        starts = present.copy()  # each distinct value's first place in sorted order
        starts[:, 1:] &= ordered[:, 1:] != ordered[:, :-1]
        rank = np.cumsum(starts, axis=1) - 1
        n_distinct = starts.sum(axis=1)
        missing_code = int(n_distinct.max(initial=0))
        dtype = next(t for t in (np.uint8, np.uint16, np.uint32) if missing_code <= np.iinfo(t).max)
        codes = np.empty((n_features, n_samples), dtype=dtype)
        np.put_along_axis(codes, order, np.where(present, rank, missing_code), axis=1)
        values = np.full((n_features, missing_code + 1), np.inf)
        feature, place = np.nonzero(starts)
        values[feature, rank[feature, place]] = ordered[feature, place]
        return cls(codes, values, missing_code, not bool(present.all()))


class CPUExactBackend(_CPUBackend):
    """Exact search: every midpoint between a node's distinct values (Zaki and Meira,
    *Data Mining and Machine Learning*, Algorithm 19.2; CART's exhaustive search).

    Each node's compact bins are its own sorted distinct values per feature, so the shared
    split selection sees every midpoint; thresholds and partitions use raw values.

    Small nodes' subtrees are finished as the histogram backend's are (the subtree
    finisher, ``kernels/cpu/subtrees.py``), on each feature's value ranks
    (:class:`ValueRanks`): a node's present ranks, in order, are its distinct values in
    order, so the finisher meets the candidates, ties and midpoints of the exact search.
    """

    capabilities = BackendCapabilities(
        device="cpu",
        exact=True,
        subtraction=False,
        compiled_search=True,
        subtree_finisher=True,
        compiled_categorical_search=True,
        row_leaves=True,
    )
    small_node_size = None  # every node is searched on its own values
    missing_bin = -1  # no bins: missing raw values are NaN
    missing_code = np.nan
    # The compiled split scan reads compact histograms of values as it reads those of bins.
    score_splits = staticmethod(score_splits_on_cpu)

    def __init__(self, X, row_data: RowData):
        # Feature-major copy so a node's column reads are contiguous.
        super().__init__(np.ascontiguousarray(X.T, dtype=np.float64), row_data)
        self._ranks: ValueRanks | None = None

    @property
    def value_ranks(self) -> ValueRanks:
        """The columns' value ranks, made on first use (fits that finish no subtree, a
        shallow tree's on many rows, never sort whole columns)."""
        if self._ranks is None:
            self._ranks = ValueRanks.of(self.columns)
        return self._ranks

    @property
    def bin_lower(self) -> np.ndarray:
        """The finisher's bins' bounds (subtree_finishing places thresholds between
        them): each rank's value."""
        return self.value_ranks.values

    bin_upper = bin_lower

    def finish_subtrees(
        self,
        nodes,
        depth,
        impurity,
        criterion,
        rules: SubtreeRules,
        categories: SubtreeCategories | None = None,
        keys=None,
        used=None,
        bounds=None,
    ):
        """:meth:`CPUHistogramBackend.finish_subtrees` on the value ranks; numeric
        features only (a categorical feature's ranks are no category codes:
        ``SubtreeFinisher.available``)."""
        if categories is not None:
            raise ValueError("exact search finishes subtrees of numeric features only")
        nodes = np.asarray(nodes, dtype=np.int64)
        ranks = self.value_ranks
        partition = self.row_partition
        rows = SubtreeRows(
            ranks.codes,
            partition.sample_indices,
            partition.start[nodes],
            partition.end[nodes],
            self.row_data.row_stats,
            self.row_data.centred,
            self.row_data.weight,
        )
        missing_bin = ranks.missing_code if ranks.has_missing else -1
        return grow_subtrees(
            rows,
            self.row_data.layout,
            (ranks.values.shape[1], ranks.missing_code, missing_bin, ranks.values, ranks.values),
            nodes.size,
            depth,
            impurity,
            criterion,
            rules,
            None,
            keys,
            used,
            bounds,
        )

    def compact_histograms(self, nodes) -> CompactHistograms:
        """Compact histograms over each node's distinct raw values (no bin codes)."""
        self._count_built(np.asarray(nodes, dtype=np.int64))
        hist, values, missing = self._distinct_value_histograms(nodes)
        return CompactHistograms(hist, values, values, None, missing)

    @staticmethod
    def _split_points(bin_threshold, threshold):
        return np.asarray(threshold, dtype=np.float64)  # raw values <= it go left


def _finisher_settings(rules: SubtreeRules, variance_exponent: int = 0) -> np.ndarray:
    """The finisher kernel's settings array (float64, in its order) of ``rules``;
    ``variance_exponent``: a regression's variances in real units are the fit's times
    2**it (feature_costs.real_score)."""
    settings = np.zeros(cpu_subtrees.N_SETTINGS)
    settings[cpu_subtrees.MAX_DEPTH] = rules.max_depth
    settings[cpu_subtrees.MIN_SAMPLES_SPLIT] = rules.min_samples_split
    settings[cpu_subtrees.MIN_SAMPLES_LEAF] = rules.min_samples_leaf
    settings[cpu_subtrees.MIN_WEIGHT_LEAF] = rules.min_weight_leaf
    settings[cpu_subtrees.MIN_PURITY] = rules.min_purity
    settings[cpu_subtrees.MIN_DECREASE] = rules.min_decrease
    settings[cpu_subtrees.ROOT_WEIGHT] = rules.root_weight
    settings[cpu_subtrees.PURE_IMPURITY] = rules.pure_impurity
    settings[cpu_subtrees.RTOL] = rules.rtol
    settings[cpu_subtrees.EPSILON] = rules.epsilon
    settings[cpu_subtrees.MAX_FEATURES] = rules.max_features
    settings[cpu_subtrees.RANDOM_THRESHOLDS] = 1.0 if rules.random_thresholds else 0.0
    settings[cpu_subtrees.COST_CRITERION] = (
        cpu_subtrees.NO_COSTS
        if rules.feature_costs is None
        else cpu_feature_costs.COST_CRITERION_CODES[rules.cost_criterion]
    )
    settings[cpu_subtrees.COST_WEIGHT] = rules.cost_weight
    settings[cpu_subtrees.VARIANCE_EXPONENT] = variance_exponent
    settings[cpu_subtrees.KEEP_ROW_ORDER] = 1.0 if rules.keep_row_order else 0.0
    return settings
