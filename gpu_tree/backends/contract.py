"""The contract between the grower and a backend, in one place.

- :class:`HistogramBackend` and :class:`DenseHistogramBackend`: what the
  :class:`~gpu_tree.growing.grower.Grower` calls and reads (``typing.Protocol``; their
  docstrings are the one description of the contract). A backend declares its optional
  methods in its :class:`BackendCapabilities`; nothing is probed.
- The records they exchange: :class:`BackendCapabilities`, :class:`DenseHistograms`,
  :class:`CompactHistograms`, :class:`FinishedSubtrees`, :class:`SubtreeRules`,
  :class:`SubtreeCategories`, and the search's data, :class:`BinnedData` (the rows' statistics are
  :class:`gpu_tree.backends.rows.RowData`).
- The one builder of backends, ``backends.factory.make_backend`` (beside this module,
  as it imports every backend, which import this one).

"Backend" means one thing in this package: an object of this contract. The devices it
runs on are ``DEVICES``; ``backends.devices`` resolves an estimator's ``device``.

Vocabulary: a node's *size* is its number of training rows; a node's *histogram slot* is
its position along the first axis of a batch of histograms; a *compact bin* is one
position along the bin axis of a compact histogram (one bin code, or one raw value,
present among the node's rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    pass

DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class BackendCapabilities:
    """What a backend can do, as the grower asks it.

    Attributes
    ----------
    device : {"cpu", "cuda"}
        Where the histograms live: host numpy arrays, or the GPU's (CuPy arrays; numpy
        ones under the CUDA simulator).
    exact : bool
        Exact split search: histograms are over each node's distinct raw values, split
        thresholds are raw values and rows are routed by them (no bin codes: the tree
        stores bin -1). False: histogram search over bin codes; rows are routed by the
        chosen bin.
    subtraction : bool
        The backend builds dense histograms (one bin axis of ``n_bins`` for every node)
        and derives a sibling's as parent minus child (the subtraction trick): it also
        implements :class:`gpu_tree.backends.contract.DenseHistogramBackend`. False: every
        node is searched through compact histograms.
    drawn_histograms : bool
        A dense backend's ``histograms`` takes ``features`` (n_nodes, k): it builds those
        features' histograms only (a forest's nodes search the features drawn for them;
        scikit-learn's forests read no other).
    compiled_search : bool
        It has ``score_splits(search)``: the compiled split scan
        (``kernels/_split_scan.py``) of a ``gpu_tree.growing.splitting.CompiledSearch``,
        returning the winner rows on the host. False: the vectorised search scores its
        numeric features.
    subtree_finisher : bool
        It has ``finish_subtrees(...)`` (``gpu_tree.backends.cpu.CPUHistogramBackend``'s
        signature): a small node's whole subtree grown in one compiled call
        (``kernels/cpu/subtrees.py``). False: every node is grown level by level.
    finish_below_rows : int or None
        With ``subtree_finisher``: nodes of fewer rows than this are finished (a
        distributed backend's, whose levels cost round trips); None: the grower's own
        threshold (``gpu_tree.growing.grower.FINISH_BELOW_ROWS`` and its factors).
    compiled_categorical_search : bool
        Categorical features are scored on the host histograms by the compiled
        categorical search (``kernels/cpu/categorical.py``, one call per chunk of nodes).
        False: by the vectorised search, the reference.
    row_leaves : bool
        It has ``leaf_of_row(leaves)``: once a tree is grown, the leaf each training row
        ended in (int64, on the host), given the ids of the tree's leaves. What is
        measured on the rows after growth (Poisson's node deviances) needs it. False:
        such criteria are refused. With ``subtree_finisher`` too, it has
        ``place_finished_rows(nodes, roots, start, end)``: the finished ``nodes`` hold
        positions ``start:end`` of their subtree roots' rows (``FinishedSubtrees.rows``,
        grown with ``SubtreeRules.keep_row_order``).
    """

    device: str
    exact: bool
    subtraction: bool
    drawn_histograms: bool = False
    compiled_search: bool = False
    subtree_finisher: bool = False
    finish_below_rows: int | None = None
    compiled_categorical_search: bool = False
    row_leaves: bool = False

    def __post_init__(self):
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {DEVICES}, got {self.device!r}")
        if self.exact and self.subtraction:
            raise ValueError("exact search has no dense histograms, hence no subtraction")
        if self.drawn_histograms and not self.subtraction:
            raise ValueError("drawn features' histograms are dense: they need subtraction=True")


class DenseHistograms(NamedTuple):
    """Dense histograms of a batch of nodes and the value bounds of their bins.

    Attributes
    ----------
    hist : array of shape (n_nodes, n_features, n_bins, n_channels)
        Summed row statistics per node, feature and bin (the backend's array module:
        numpy or CuPy). Node k of the request is ``hist[k]``, its *histogram slot*.
    bin_lower, bin_upper : ndarray of shape (1, n_features, n_bins)
        The smallest and largest training value of each bin (shared by every node),
        on the host: thresholds are placed between them.
    """

    hist: Any
    bin_lower: np.ndarray
    bin_upper: np.ndarray


class CompactHistograms(NamedTuple):
    """Compact histograms: per node and feature, only the bins (or values) present.

    Each *compact bin* along the third axis holds one distinct bin code (histogram
    search) or raw value (exact search) of the node's rows, in increasing order; compact
    bins past the ones present are empty (zero statistics).

    Attributes
    ----------
    hist : ndarray of shape (n_nodes, n_features, width, n_channels)
    bin_lower, bin_upper : ndarray of shape (n_nodes, n_features, width)
        The value bounds of each compact bin (exact search: the value itself, twice;
        +inf past the ones present).
    bin_code : ndarray of shape (n_nodes, n_features, width) or None
        The bin code of each compact bin (-1 past the ones present); None in exact
        search, which has no codes.
    missing : ndarray of shape (n_nodes, n_features, n_channels)
        Statistics of the node's rows missing each feature.
    """

    hist: np.ndarray
    bin_lower: np.ndarray
    bin_upper: np.ndarray
    bin_code: np.ndarray | None
    missing: np.ndarray


class FinishedSubtrees(NamedTuple):
    """Subtrees grown by a backend's ``finish_subtrees`` (``kernels/cpu/subtrees.py``):
    every node of every subtree, each subtree's root first, then its other nodes in the
    order they were made (a split node's two children consecutively).

    ``parent`` and ``left`` are positions in these arrays (-1: a root; a leaf), the
    right child is ``left + 1``. ``impurity``: regression, the node's sum of squared
    deviations (the grower divides by its weight); classification, its impurity; a
    root's entry is the one the grower gave. ``feature`` -1: a leaf; ``code`` and
    ``next_code``: the split's bin code and the next present code (-1: only missing
    values go right). ``searched``: the node's split was searched (fit_stats_).
    ``subset`` 1: a categorical subset split (``code`` and ``next_code`` -1), whose
    ``category_words`` (n_category_words int64 words) are the set of codes it sends left,
    as ``Tree.set_subset_splits`` takes it. ``subset`` 2: a multiway split (ID3), whose
    children are ``next_code`` consecutive entries from ``left``, one per code of its
    ``category_words`` (the codes present at the node) in code order; ``code`` is the
    position among them of the child that takes the missing rows. ``bounds`` (lower,
    upper): monotonicity-constrained fits' nodes' bounds on their values, as
    NodeTable.bounds holds them (other fits: not written). ``rows`` (start, end): the
    positions of each node's rows among its subtree root's, in the order
    ``finish_subtrees`` left them where ``SubtreeRules.keep_row_order``.
    """

    parent: np.ndarray
    depth: np.ndarray
    stats: np.ndarray
    impurity: np.ndarray
    feature: np.ndarray
    code: np.ndarray
    next_code: np.ndarray
    missing_left: np.ndarray
    left: np.ndarray
    searched: np.ndarray
    subset: np.ndarray
    category_words: np.ndarray
    bounds: np.ndarray
    rows: np.ndarray


class SubtreeRules(NamedTuple):
    """The rules a backend's ``finish_subtrees`` grows by, as level-wise growth applies
    them (scores and weights in the fit's units)."""

    max_depth: int
    min_samples_split: int
    min_samples_leaf: int
    min_weight_leaf: float
    min_purity: float  # a node this pure is a leaf (1.0: no such rule)
    min_decrease: float  # min_impurity_decrease, in the fit's units
    root_weight: float  # the weight of the subtrees' tree's root (the decrease's scale)
    pure_impurity: float  # impurities at or below this count as pure
    rtol: float  # splitting.SCORE_RTOL: scores this close tie
    epsilon: float  # the slack on the min_decrease comparison
    max_features: int  # features drawn per node (0: every feature)
    random_thresholds: bool  # extremely randomised trees' one threshold per feature
    # Features' costs (float64, one per feature; None: none), chosen among as
    # feature_costs.select_by_cost chooses (GrowthParams' cost_criterion, cost_weight).
    feature_costs: np.ndarray | None = None
    cost_criterion: str = "tan_schlimmer"
    cost_weight: float = 1.0
    # Monotonicity constraints (int, one per feature, 0: none; None: none at all): the
    # nodes' bounds are ``finish_subtrees``' ``bounds``, and come back with the nodes.
    monotonic_cst: np.ndarray | None = None
    # The rows of each finished node kept (FinishedSubtrees.rows; the backend's
    # place_finished_rows): what is measured on the rows after growth needs them.
    keep_row_order: bool = False


class SubtreeCategories(NamedTuple):
    """What a backend's ``finish_subtrees`` needs to split categorical features (binary
    subset splits, or multiway ones), as the level-wise search
    (``splitting._select_compiled``) has it."""

    is_categorical: np.ndarray  # (n_features,) bool
    max_subset: int  # multiclass: subsets of at most this many categories are tried
    subset_limit: int  # ... at nodes holding at most this many categories
    most: int  # the most categories a node can hold, up to subset_limit
    binom: np.ndarray  # splitting.subset_table_counts(most, max_subset)
    offsets: np.ndarray
    n_category_words: int  # int64 words of a category bitset
    multiway: bool = False  # one child per category instead (ID3), not binary subsets


# The splitters that sort each node's values and try every midpoint: "exact", and "best",
# scikit-learn's name for the same search (its default splitter). The others search
# histograms of binned features: "hist", and "random" (extremely randomised trees' one
# random threshold per feature, drawn between the node's bins).
EXACT_SPLITTERS = ("exact", "best")
HISTOGRAM_SPLITTERS = ("hist", "random")


@runtime_checkable
class HistogramBackend(Protocol):
    """What the grower asks of every backend.

    The grower numbers nodes (the root is 0; children get new, larger ids) and never
    touches rows: the backend keeps track of which rows each node holds, sums their
    statistics into histograms, and routes them to the children of a split. Statistics
    vectors follow :class:`gpu_tree.data.stats.StatsLayout` (``n_channels`` on the last
    axis, of its ``dtype``).

    Attributes
    ----------
    capabilities : BackendCapabilities
        Where it runs, whether its search is exact, whether it builds dense histograms
        and subtracts siblings' (then it is also a :class:`DenseHistogramBackend`).
    xp : module
        The array module of its histograms (numpy, or CuPy on a GPU).
    missing_bin : int
        The bin code of missing values, the last bin of every feature; -1 when there are
        none (and always in exact search, where missing raw values are NaN).
    small_node_size : int or None
        Nodes of fewer rows than this are searched through compact histograms (0: never;
        None: always, the exact search's case).
    """

    capabilities: BackendCapabilities
    xp: Any
    missing_bin: int
    small_node_size: int | None

    def root_stats(self) -> np.ndarray:
        """The statistics of all rows; of each root's rows where the rows form several
        roots (the trees of a forest grown together: ``RowData.root_sizes``; node r <
        n_roots is root r).

        Returns
        -------
        ndarray of shape (n_channels,), or (n_roots, n_channels) for several roots
        """

    def node_sizes(self, nodes) -> np.ndarray:
        """The number of rows each node holds.

        Parameters
        ----------
        nodes : ndarray of shape (n_nodes,), int
            Ids of nodes that are leaves of the tree grown so far.

        Returns
        -------
        ndarray of shape (n_nodes,), int64
        """

    def squared_deviation_sums(self, nodes, means, output=None) -> np.ndarray:
        """Regression: sum of w * (d - mean)**2 over each node's rows, d the centred target
        in the fit's units (``RowData.centred``), exact in any order
        (``kernels/_squared_deviations.py``): the weighted variance of a node is this over
        its weight, measured on its rows rather than from sums of squares.

        Parameters
        ----------
        nodes : ndarray of shape (n_nodes,), int
        means : ndarray of shape (n_nodes,), float64
            Each node's weighted mean of d (see ``StatsLayout.centred_mean``).
        output : int, optional
            Multi-output y: the output whose targets d are (``RowData.centred_output``);
            backends that fit one output only may leave it out.

        Returns
        -------
        ndarray of shape (n_nodes,), float64, on the host
        """

    def compact_histograms(self, nodes) -> CompactHistograms:
        """Compact histograms of ``nodes``: per feature, only the bins (histogram search)
        or raw values (exact search) present among each node's rows, in increasing order.

        Called for nodes of fewer than ``small_node_size`` rows (never when it is 0).

        Parameters
        ----------
        nodes : ndarray of shape (n_nodes,), int

        Returns
        -------
        CompactHistograms
            ``hist`` (n_nodes, n_features, width, n_channels), the compact bins' value
            bounds (n_nodes, n_features, width), their bin codes or None (exact search),
            and the statistics of rows missing each feature (n_nodes, n_features,
            n_channels).
        """

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
    ) -> None:
        """Route the rows of binary-split ``nodes`` to their two children.

        A row goes left when its value of the node's feature is at most the threshold
        (``bin_threshold``, a bin code, in histogram search; ``threshold``, a raw value,
        in exact search), when it is missing and ``missing_left``, or, for a categorical
        subset split, when its category is in the node's set.

        Parameters
        ----------
        nodes : ndarray of shape (n_nodes,), int
        feature : ndarray of shape (n_nodes,), int
        bin_threshold : ndarray of shape (n_nodes,), int
        threshold : ndarray of shape (n_nodes,), float
        missing_left : ndarray of shape (n_nodes,), bool
        left_children, right_children : ndarray of shape (n_nodes,), int
            The new ids of each node's children.
        category_sets : None or tuple (is_subset, words)
            ``is_subset`` (n_nodes,) bool marks categorical subset splits, ``words``
            (n_nodes, n_words) holds the bitset of the codes each sends left (see
            :func:`gpu_tree.backends.rows.category_tables`).
        sizes : tuple (left, right) of ndarrays of shape (n_nodes,), int
            The rows each child receives, as the histograms count them: a backend records
            them as the children's sizes instead of counting rows again (a launch and a
            copy back, on a GPU); one that counts its rows as it routes them (the CPU's
            row partition) checks them.
        child_means : None or tuple (left, right) of ndarrays of shape (n_nodes,), float
            Regression: the children's centred means, as :meth:`squared_deviation_sums`
            will be given them next. A backend may run that measurement's first pass
            over the rows as it routes them (the CUDA one does: one launch less); the
            CPU's ignores them.
        """

    def partition_multiway(
        self, nodes, feature, child_of_code, default_child, children, *, sizes
    ) -> None:
        """Route the rows of multiway-split ``nodes`` to one child per category.

        Parameters
        ----------
        nodes : ndarray of shape (n_nodes,), int
        feature : ndarray of shape (n_nodes,), int
        child_of_code : ndarray of shape (n_nodes, n_codes), int
            The child id of each category code, per node.
        default_child : ndarray of shape (n_nodes,), int
            The child of missing values and of codes past ``n_codes``.
        children : list of n_nodes ndarrays
            Node k's children: consecutive ids, in branch order.
        sizes : list of n_nodes ndarrays
            The rows each child receives, per node, in the order of ``children[k]``, as
            the histograms count them (see :meth:`partition`).
        """


@runtime_checkable
class DenseHistogramBackend(HistogramBackend, Protocol):
    """A backend with dense histograms and the subtraction trick
    (``capabilities.subtraction``): nodes of at least ``small_node_size`` rows get a
    histogram over every bin, and the larger of two siblings gets its own as its parent's
    minus its sibling's, without reading its rows."""

    def histograms(self, nodes, out=None, features=None) -> DenseHistograms:
        """Dense histograms of ``nodes`` (one pass over their rows) and the bins' bounds.

        Parameters
        ----------
        nodes : ndarray of shape (n_nodes,), int
        out : array of shape (n_nodes, n_features, n_bins, n_channels), optional
            Where to write the histograms (from :meth:`empty_histograms`); returned as
            ``hist``.
        features : ndarray of shape (n_nodes, k), int, optional
            Backends whose capabilities have ``drawn_histograms`` only: build these
            features' histograms of each node, ``hist[node, j]`` feature
            ``features[node, j]``'s (``out``: from ``empty_histograms(n_nodes, k)``).

        Returns
        -------
        DenseHistograms
            ``hist`` (n_nodes, n_features, n_bins, n_channels), node k in histogram slot
            k, and the bins' value bounds ``bin_lower``, ``bin_upper`` (1, n_features,
            n_bins), on the host.
        """

    def empty_histograms(self, n_nodes: int, n_features: int | None = None) -> Any:
        """Uninitialised dense histograms for ``n_nodes`` nodes (of ``n_features``
        features each: ``drawn_histograms`` backends only; default every feature).

        Returns
        -------
        array of shape (n_nodes, n_features, n_bins, n_channels)
        """

    def subtract(self, hist, parent_slots, child_hist, out) -> None:
        """``out = hist[parent_slots] - child_hist``: the larger siblings' histograms.

        Parameters
        ----------
        hist : array of shape (n_parents_in_batch, n_features, n_bins, n_channels)
            The parents' batch of histograms.
        parent_slots : ndarray of shape (n_nodes,), int
            Each sibling's parent's histogram slot in ``hist``.
        child_hist : array of shape (n_nodes, n_features, n_bins, n_channels)
            The histograms built for the other (smaller) siblings.
        out : array of shape (n_nodes, n_features, n_bins, n_channels)
        """


# -- building a backend -----------------------------------------------------------------
class BinnedData(NamedTuple):
    """Features as histogram search reads them.

    Attributes
    ----------
    X_binned : array of shape (n_features, n_samples)
        Bin codes, feature-major (numpy, or CuPy on a GPU).
    bin_lower, bin_upper : ndarray of shape (n_features, n_bins)
        The smallest and largest training value of each bin.
    missing_bin : int
        The bin of missing values (-1: none).
    """

    X_binned: Any
    bin_lower: np.ndarray
    bin_upper: np.ndarray
    missing_bin: int = -1
