"""The grower's contract with a backend, the one builder of backends, and the phase timer.

- :class:`HistogramBackend` and :class:`DenseHistogramBackend`: what the
  :class:`~gpu_tree.growing.grower.Grower` calls and reads (``typing.Protocol``; their
  docstrings are the one description of the contract). The records they exchange,
  :class:`BackendCapabilities`, :class:`DenseHistograms` and :class:`CompactHistograms`,
  are defined in :mod:`gpu_tree.backends.rows`, below the grower, and re-exported here.
- :func:`bin_features` and :func:`make_backend`: how the training pipeline (the
  estimators, the benchmarks) turns data into a backend: CPU histogram search, CPU exact
  search, CUDA histogram search.
- :class:`PhaseTimer`: per-level wall time of the growth phases, off unless a timer is
  given to the grower (and to :func:`make_backend` for the backend's own sub-phases).

Vocabulary: a node's *size* is its number of training rows; a node's *histogram slot* is
its position along the first axis of a batch of histograms; a *compact bin* is one
position along the bin axis of a compact histogram (one bin code, or one raw value,
present among the node's rows).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from gpu_tree.backends import cuda as cuda_backend
from gpu_tree.backends.cpu import CPUExactBackend, CPUHistogramBackend
from gpu_tree.backends.cpu_sparse import CPUSparseHistogramBackend
from gpu_tree.backends.cuda import (
    CUDAHistogramBackend,
    check_cuda_support,
    check_device_memory,
    cuda_array_module,
)
from gpu_tree.backends.cuda_sparse import CUDASparseHistogramBackend
from gpu_tree.backends.rows import (
    EXACT_SPLITTERS,
    HISTOGRAM_SPLITTERS,
    BackendCapabilities,
    CompactHistograms,
    DenseHistograms,
    RowData,
)
from gpu_tree.data.binning import BinMapper, SparseCodes
from gpu_tree.data.validation import host_to_device, is_device_array, is_sparse
from gpu_tree.utils.fit_stats import SETUP, FitCounters, enter_level

__all__ = [
    "PHASES",
    "BackendCapabilities",
    "BinnedData",
    "CompactHistograms",
    "DenseHistogramBackend",
    "DenseHistograms",
    "HistogramBackend",
    "PhaseRecord",
    "PhaseTimer",
    "RowData",
    "bin_features",
    "make_backend",
]


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


def bin_features(
    X, *, max_bins=256, device="cpu", layout=None, n_categories=None, feature_names=None
) -> tuple[BinMapper, BinnedData]:
    """Fit a :class:`~gpu_tree.data.binning.BinMapper` on X and bin X with it.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
        Host numpy, or (``device="cuda"``) a device array, or a sparse matrix in
        canonical CSR form (``data.sparse.check_sparse_X``): binned on the host into
        :class:`~gpu_tree.data.binning.SparseCodes` (for either device).
    max_bins : int
    device : {"cpu", "cuda"}
        ``"cuda"``: X is moved to the device (once) and binned there; its codes stay
        there. With ``layout`` the GPU's free memory is checked first.
    layout : StatsLayout, optional
    n_categories, feature_names : as :meth:`BinMapper.fit`

    Returns
    -------
    mapper : BinMapper
    binned : BinnedData
    """
    mapper = BinMapper(max_bins=max_bins, random_state=0).fit(X, n_categories, feature_names)
    if is_sparse(X):  # canonical CSR (data.sparse.check_sparse_X), binned on the host
        # On either device the codes keep X's CSR layout (the backend copies them to the
        # GPU): nothing is densified.
        if device == "cuda" and layout is not None:
            check_device_memory(X, mapper, layout, cuda_array_module())
        codes, bin_lower, bin_upper = mapper.transform_sparse(X)
        return mapper, BinnedData(codes, bin_lower, bin_upper, mapper.missing_bin_)
    if device == "cuda":
        xp = cuda_array_module()
        if layout is not None:
            check_device_memory(X, mapper, layout, xp)
        X_device = X if is_device_array(X) else host_to_device(X, xp)
        X_binned, bin_lower, bin_upper = mapper.transform_on_device(
            X_device, xp, cuda_backend.current_stream(xp)
        )
    else:
        X_binned, bin_lower, bin_upper = mapper.transform(X, row_major=True)
    return mapper, BinnedData(X_binned, bin_lower, bin_upper, mapper.missing_bin_)


def make_backend(
    data, row_data: RowData, *, device="cpu", splitter="hist", timer: PhaseTimer | None = None
) -> HistogramBackend:
    """The backend of the training pipeline.

    Parameters
    ----------
    data : BinnedData or ndarray of shape (n_samples, n_features)
        Binned features (``splitter="hist"``, from :func:`bin_features`), or the raw
        host values (``splitter="exact"``).
    row_data : RowData
        What each row contributes to the histograms.
    device : {"cpu", "cuda"}
        ``"cuda"`` runs histogram search only.
    splitter : {"hist", "random", "exact", "best"}
    timer : PhaseTimer, optional
        Given, the backend records its own sub-phases in it (the CUDA histogram kernel).

    Returns
    -------
    HistogramBackend
        :class:`CPUHistogramBackend`, :class:`CPUExactBackend` or
        :class:`CUDAHistogramBackend`.
    """
    if device not in ("cpu", "cuda"):
        raise ValueError(f"Unknown device={device!r}; choose 'cpu' or 'cuda'")
    if device == "cuda":
        check_cuda_support(splitter)
    if splitter in EXACT_SPLITTERS:
        if isinstance(data, BinnedData):
            raise TypeError("splitter='exact' searches raw values: pass X, not BinnedData")
        return CPUExactBackend(data, row_data)
    if splitter not in HISTOGRAM_SPLITTERS:
        raise ValueError(
            f"Unknown splitter={splitter!r}; choose 'hist', 'random', 'exact' or 'best'"
        )
    if not isinstance(data, BinnedData):
        raise TypeError("splitter='hist' needs BinnedData (see bin_features)")
    sparse = isinstance(data.X_binned, SparseCodes)
    if device == "cuda":
        xp = cuda_array_module()
        return (CUDASparseHistogramBackend if sparse else CUDAHistogramBackend)(
            data.X_binned,
            data.bin_lower,
            data.bin_upper,
            row_data,
            xp,
            data.missing_bin,
            timer=timer,
        )
    backend_class = CPUSparseHistogramBackend if sparse else CPUHistogramBackend
    return backend_class(data.X_binned, data.bin_lower, data.bin_upper, row_data, data.missing_bin)


# -- phase timer ------------------------------------------------------------------------
# The phases the grower records, in the order of a level's work. A backend may record
# parts of them under names of its own ("histogram_kernel": the CUDA launch alone).
# "subtrees": small nodes' whole subtrees grown in one call (the CPU's finish_subtrees),
# recorded at the level of the nodes it started from.
PHASES = ("histograms", "subtraction", "split_scoring", "partition", "subtrees")


@dataclass(frozen=True)
class PhaseRecord:
    """One timed call.

    Attributes
    ----------
    phase : str
        One of :data:`PHASES`, or a backend's sub-phase.
    level : int
        The depth of the nodes it worked on (partition: the parents'; histograms,
        subtraction, split scoring: the nodes whose histograms they are).
    start : float
        ``time.perf_counter()`` when it started (after synchronising the device).
    seconds : float
        Its wall time, the device synchronised before and after.
    n_nodes : int
        Nodes it worked on (histograms: built; subtraction: derived; split scoring:
        searched; partition: split).
    n_rows : int
        Rows in those nodes (histograms: rows read; partition: rows routed).
    n_features : int
        Partition: the distinct split features; 0 otherwise.
    """

    phase: str
    level: int
    start: float
    seconds: float
    n_nodes: int = 0
    n_rows: int = 0
    n_features: int = 0


class PhaseTimer:
    """Wall time of each growth phase, per tree level.

    Give one to :class:`~gpu_tree.growing.grower.Grower` (and to :func:`make_backend`
    for the backend's sub-phases); after ``grow()``, :attr:`records` holds one
    :class:`PhaseRecord` per timed call. Without a timer the grower times nothing.

    Parameters
    ----------
    xp : module
        The backend's array module: a CuPy module's current stream is synchronised at
        each phase's start and end, so that the device's queued work is counted in the
        phase that queued it; numpy (the CPU, the CUDA simulator) needs nothing.
    """

    def __init__(self, xp=np):
        self.xp = xp
        self.records: list[PhaseRecord] = []
        self.level = 0  # the level of the phase under way (sub-phases record under it)

    def synchronize(self):
        if self.xp is not np:
            self.xp.cuda.get_current_stream().synchronize()

    @contextmanager
    def phase(
        self,
        name: str,
        level: int | None = None,
        *,
        n_nodes: int = 0,
        n_rows: int = 0,
        n_features: int = 0,
    ):
        """Time the body as phase ``name`` of ``level`` (None: the enclosing phase's)."""
        if level is not None:
            self.level = int(level)
            enter_level(self.level)  # the structural counters follow the timer's level
        record_level = self.level
        self.synchronize()
        start = time.perf_counter()
        try:
            yield
        finally:
            self.synchronize()
            seconds = time.perf_counter() - start
            self.records.append(
                PhaseRecord(
                    name, record_level, start, seconds, int(n_nodes), int(n_rows), int(n_features)
                )
            )

    def totals(self) -> dict[str, float]:
        """Seconds per phase, over the whole tree."""
        out: dict[str, float] = {}
        for record in self.records:
            out[record.phase] = out.get(record.phase, 0.0) + record.seconds
        return out

    def by_level(self) -> dict[int, dict[str, float]]:
        """Seconds per phase, per level (levels in increasing order)."""
        out: dict[int, dict[str, float]] = {}
        for record in sorted(self.records, key=lambda r: r.level):
            level = out.setdefault(record.level, {})
            level[record.phase] = level.get(record.phase, 0.0) + record.seconds
        return out

    def fit_stats(self, counters: FitCounters) -> list[dict]:
        """``fit_stats_``: per tree level, ``counters``' counts (``utils.fit_stats``) and
        the seconds of each phase this timer recorded."""
        seconds = self.by_level()
        levels = sorted({*seconds, *(k for k in counters.by_level if k is not SETUP)})
        return [
            {"level": level, **counters.at(level), "seconds": seconds.get(level, {})}
            for level in levels
        ]

    def levels(self, phase: str) -> list[int]:
        """The levels at which ``phase`` ran, in increasing order."""
        return sorted({record.level for record in self.records if record.phase == phase})
