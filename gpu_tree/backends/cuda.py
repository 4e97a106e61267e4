"""CUDA backend: the grower's contract (:class:`gpu_tree.backends.contract.HistogramBackend`)
implemented with the kernels of :mod:`gpu_tree.kernels.cuda` (a module per stage).

On a GPU the arrays are CuPy arrays and split scoring runs the shared criterion code
through CuPy; under the CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) numpy arrays stand in
and the same kernel source runs on the CPU, which is how CI checks this backend.

Rows are tracked by node id (``node_of_row``) rather than partitioned: one histogram
launch covers every node of a level. Only per-node results (chosen splits, row counts)
travel to the host; histograms stay on the device.

Every row statistic is an integer (the fixed point of ``gpu_tree.data.stats``), so the
atomic sums are exact in any order, and so are the regression nodes' sums of squared
deviations (``kernels/_squared_deviations.py``): trees are identical to the CPU
backend's, for classification and regression, with any weights, and identical from run
to run.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import Any, NamedTuple

import numpy as np

from gpu_tree.backends import cuda_absolute_error
from gpu_tree.backends.contract import (
    HISTOGRAM_SPLITTERS,
    BackendCapabilities,
    CompactHistograms,
    DenseHistograms,
)
from gpu_tree.backends.rows import (
    PendingCopy,
    RowData,
    category_tables,
    squared_deviation_buffer,
    squared_deviation_passes,
    squared_deviation_rows,
    squared_deviations_from,
)
from gpu_tree.data.validation import is_sparse
from gpu_tree.kernels.compilation import choose_cupy_cache_folder
from gpu_tree.utils.device_copies import device_to_host, host_to_device, is_device_array, to_host
from gpu_tree.utils.fit_stats import count, launch
from gpu_tree.utils.install_hints import install_hint


@functools.cache
def _cupy_or_none():
    """CuPy, or None where it is not installed. Asked once per process: a failed import
    is not remembered by Python, and searching sys.path again cost every fit with
    device="auto" 0.4 ms (a small fit's tenth). Its kernel cache folder is chosen first:
    CuPy fails to import where it cannot make it (``docker run -u``, HOME /)."""
    choose_cupy_cache_folder()
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def cuda_status():
    """(usable, reason, xp): whether the CUDA backend can run here, and its array module.

    A device (a GPU, or the simulator) counts as usable only once the probe kernel has
    compiled and run on it (:func:`probe_failure`): a toolchain that cannot build
    kernels for it makes the CUDA backend unusable, with the cause as the reason."""
    found, reason, xp = _device_found()
    if not found:
        return False, reason, None
    failure = probe_failure(xp)
    if failure is not None:
        return False, f"{reason} found, but {failure}", None
    return True, reason, xp


def cuda_array_module():
    """The CUDA backend's array module (CuPy; numpy under the simulator), for code that
    runs once the device was chosen (a fit or a model on ``device="cuda"``)."""
    usable, reason, xp = cuda_status()
    if not usable:
        raise RuntimeError(f"the CUDA backend cannot run here: {reason}")
    return xp


def _device_found():
    """(found, what, xp): a device to run the kernels on (the GPU, or the simulator)."""
    try:
        from numba import config

        from gpu_tree.kernels.cuda.api import cuda
    except ImportError as exc:  # pragma: no cover - numba is a core dependency
        return False, f"numba.cuda is not importable ({exc})", None
    if config.ENABLE_CUDASIM:
        return True, "CUDA simulator (NUMBA_ENABLE_CUDASIM=1)", np
    cupy = _cupy_or_none()
    if cupy is None:
        hint = f"{install_hint('cuda13')}; CUDA 12: {install_hint('cuda12')}"
        return False, f"CuPy is not installed ({hint})", None
    try:
        if not cuda.is_available() or cupy.cuda.runtime.getDeviceCount() < 1:
            return False, "no usable NVIDIA GPU was found", None
    except Exception as exc:  # noqa: BLE001 - any driver error means "not usable"
        return False, f"no usable NVIDIA GPU ({exc})", None
    return True, "NVIDIA GPU", cupy


def gpu_found_but_broken() -> bool:
    """Whether a device is here (a GPU, or the simulator) that fails the probe."""
    found, _, xp = _device_found()
    return found and probe_failure(xp) is not None


# The probe's launch: 128 blocks (numba-cuda warns below that) of 32 threads, one
# element each; the simulator's small grid strides over the same elements.
PROBE_BLOCKS, PROBE_THREADS = 128, 32


def cuda_kernels() -> SimpleNamespace:
    """The CUDA kernel modules by stage (``kernels/cuda/``), imported on first use: importing
    them declares every kernel with the CUDA module, which must be there. The backend
    reads each kernel from its module at each launch."""
    from gpu_tree.kernels.cuda import (
        binning,
        histograms,
        partition,
        prediction,
        row_statistics,
        sparse,
        split_scan,
    )
    from gpu_tree.kernels.cuda import launch as launch_kernels

    return SimpleNamespace(
        binning=binning,
        histograms=histograms,
        launch=launch_kernels,
        partition=partition,
        prediction=prediction,
        row_statistics=row_statistics,
        sparse=sparse,
        split_scan=split_scan,
    )


@functools.cache
def probe_failure(xp):
    """None where gpu_tree's probe kernel (``kernels/cuda/launch.py``, ``probe``) compiles,
    launches and writes what it should on the device ``xp`` works with; else what went
    wrong, for a message. Once per process and array module: a GPU whose toolchain is
    broken (numba-cuda against a NumPy it predates, PTX newer than the driver reads)
    fails here, before a fit chooses it, instead of in the middle of one."""
    try:
        launch_kernels = cuda_kernels().launch
        grid = launch_kernels.SIMULATOR_GRID if xp is np else (PROBE_BLOCKS, PROBE_THREADS)
        blocks, threads = grid
        n = 2 * blocks * threads if xp is np else blocks * threads
        out = xp.zeros(n, dtype=np.int64)
        launch_kernels.probe[blocks, threads, current_stream(xp)](out)
        result = to_host(out)  # uncounted: no fit's copy
    except Exception as exc:  # noqa: BLE001 - whatever breaks, the GPU is not usable
        first_line = (str(exc).strip().splitlines() or [""])[0]
        return (
            f"gpu_tree's test kernel failed to compile or run ({type(exc).__name__}: {first_line})"
        )
    expected = np.arange(n, dtype=np.int64) * 3 + 1
    expected[0] = n
    if not np.array_equal(result, expected):
        wrong = int(np.flatnonzero(result != expected)[0])
        return (
            f"gpu_tree's test kernel ran but wrote {int(result[wrong])} where "
            f"{int(expected[wrong])} was due (element {wrong})"
        )
    return None


def current_stream(xp):
    """The stream numba's launches must use: CuPy's current one, so that a kernel and the
    CuPy work around it run in order even inside a non-default ``cupy.cuda.Stream`` (on
    numba's default stream a later CuPy read could overtake the kernel). 0, numba's
    default stream, in the simulator, which runs everything in order."""
    if xp is np:
        return 0
    from numba import cuda

    return cuda.external_stream(xp.cuda.get_current_stream().ptr)


def check_cuda_support(splitter: str):
    """Refuse, with the reason, what the CUDA backend does not do."""
    if splitter not in HISTOGRAM_SPLITTERS:
        raise ValueError(
            f"splitter={splitter!r} (exact search) runs on the CPU only; use device='cpu' "
            "for exact search, or splitter='hist'"
        )


class CUDAHistogramBackend:
    """Histogram search on an NVIDIA GPU (or the simulator); implements
    :class:`gpu_tree.backends.contract.DenseHistogramBackend`.

    ``timer``: an optional :class:`gpu_tree.utils.phase_timer.PhaseTimer`; when given, the
    histogram kernel's launch is recorded as the phase ``"histogram_kernel"`` (a part of
    the grower's ``"histograms"`` phase).
    """

    capabilities = BackendCapabilities(
        device="cuda", exact=False, subtraction=True, compiled_search=True, row_leaves=True
    )
    small_node_size = 0  # every node takes a dense histogram: one launch per level

    def __init__(
        self,
        X_binned,
        bin_lower,
        bin_upper,
        row_data: RowData,
        xp,
        missing_bin: int = -1,
        timer=None,
    ):
        self.kernels = cuda_kernels()
        self.xp = xp
        self.timer = timer
        self.missing_bin = missing_bin  # the last bin of every feature (-1: none)
        self.row_data = row_data
        layout = row_data.layout
        self.n_bins = bin_lower.shape[1]
        self.bin_lower = bin_lower
        self.bin_upper = bin_upper
        self.n_features, self.n_samples = X_binned.shape
        self.X_binned = self._codes_on_device(X_binned)
        # Classification rows of one output carry a class and a weight; regression rows,
        # and the rows of several outputs' classes (a class in each output's block), dense
        # statistics (RowData.row_stats). The kernels take both kinds of argument, so the
        # unused one is a 1-element stand-in.
        self.class_rows = layout.is_classification and layout.n_outputs == 1
        # Unit weights (an unweighted fit: every weight is 1) never go to the device: the
        # kernels add 1 instead of reading a weight, and a regression row's statistics
        # leave out channel 0, the weight (see kernels.cuda.histograms.add_row). Several outputs'
        # classes have no weight channel to leave out: their rows are read whole.
        self.unit_weight = not layout.has_count_channel and (
            self.class_rows or not layout.is_classification
        )
        if self.class_rows:
            self.y_class = host_to_device(row_data.y_class.astype(np.int32), xp)
            self.weight = (
                xp.zeros(1, dtype=np.int64)
                if self.unit_weight
                else host_to_device(row_data.weight_fixed, xp)
            )
            self.row_stats = xp.zeros((1, 1), dtype=layout.dtype)
        else:
            self.y_class = xp.zeros(1, dtype=np.int32)
            self.weight = xp.zeros(1, dtype=np.int64)
            row_stats = row_data.row_stats
            self.row_stats = host_to_device(
                np.ascontiguousarray(row_stats[:, 1:]) if self.unit_weight else row_stats, xp
            )
        if layout.is_classification:
            self.centred_by_output = xp.zeros((1, 1), dtype=np.float64)
            self.real_weight = xp.zeros(1, dtype=np.float64)
        else:
            # What node impurities are measured on (squared_deviation_sums): each output's
            # centred targets, a contiguous row of their own.
            self.centred_by_output = host_to_device(
                np.ascontiguousarray(np.atleast_2d(row_data.centred.T)), xp
            )
            self.real_weight = (
                xp.zeros(1, dtype=np.float64)
                if self.unit_weight
                else host_to_device(row_data.weight, xp)
            )
        self.centred = self.centred_by_output[0]
        self.count_channel = layout.n_channels - 1 if layout.has_count_channel else -1
        # Node r < n_roots is a root, holding the r-th group of rows (RowData.root_sizes).
        self.node_of_row = (
            xp.zeros(self.n_samples, dtype=np.int32)
            if row_data.root_sizes is None
            else host_to_device(row_data.root_of_row(), xp)
        )
        # Regression: the last partition's children, with pass 1 of their squared
        # deviations done by it (see partition and squared_deviation_sums), else None.
        self._children_extremes = None
        # Device results waiting to come back with the next copy back (_copy_back).
        self._pending_copies: list[PendingCopy] = []
        # What partition_rows takes instead of the children's tables and pass-1 rows when
        # it runs no pass 1 (classification, or no means given).
        self._no_extremes = (xp.zeros(1, dtype=np.int64), *(xp.zeros(1) for _ in range(6)))
        self._node_size = np.array(
            [self.n_samples] if row_data.root_sizes is None else row_data.root_sizes,
            dtype=np.int64,
        )
        # Every row's index: the root's row list, and what _rows_of compacts.
        self.all_rows = xp.arange(self.n_samples, dtype=np.int32)

    def _codes_on_device(self, X_binned):
        """The bin codes as the kernels read them: (n_features, n_samples), contiguous."""
        return self.xp.ascontiguousarray(host_to_device(X_binned, self.xp))

    def _routing_codes(self, split_feature):
        """What the partition reads a row's code of its node's split feature from: a code
        matrix, and the row of it each node's split feature is (``split_feature``, by node
        id, on the device; -1: not split). Here the codes themselves, at the features."""
        return self.X_binned, split_feature

    def root_stats(self):
        return self.row_data.root_stats()

    # criterion="absolute_error": medians, searched on the rows (backends/cuda_absolute_error)
    def absolute_error_winners(self, nodes, *args):
        """Each node's best absolute-error split per column
        (:func:`gpu_tree.backends.cuda_absolute_error.column_winners`)."""
        return cuda_absolute_error.column_winners(self, nodes, *args)

    def absolute_error_medians(self, nodes):
        """Each node's medians, errors and weight, measured on its rows
        (:func:`gpu_tree.backends.cuda_absolute_error.median_errors`)."""
        return cuda_absolute_error.median_errors(self, nodes)

    def tree_medians(self, tree):
        """Every node's medians, errors and weight once the tree is grown
        (:func:`gpu_tree.backends.cuda_absolute_error.tree_medians`)."""
        return cuda_absolute_error.tree_medians(self, tree)

    def absolute_error_codes(self):
        """The bin codes the absolute-error search reads (``kernels.cuda.absolute_error.
        _code_at``'s arguments): the dense (n_features, n_samples) codes, and stand-ins
        for a sparse X's."""
        stand_in = self.xp.zeros(1, dtype=np.int64)
        return (self.X_binned, False, stand_in, stand_in, stand_in, stand_in)

    def _launch(self, kernel, config, *args):
        """``kernel[config](*args)`` on CuPy's current stream (:func:`current_stream`),
        counted (``fit_stats_``)."""
        launch(kernel, (*config, current_stream(self.xp)), *args)

    def node_sizes(self, nodes):
        return self._node_size[np.asarray(nodes)]

    def leaf_of_row(self, leaves):
        """The leaf each row ended in (int64, on the host): the node each row is tracked
        in, which after growth is a leaf (``leaves`` is implied)."""
        return device_to_host(self.node_of_row).astype(np.int64)

    def squared_deviation_sums(self, nodes, means, output=None):
        nodes = np.asarray(nodes, dtype=np.int64)
        pending, self._children_extremes = self._children_extremes, None
        if pending is not None and output is None and np.array_equal(pending.nodes, nodes):
            tables, buffer = pending.tables, pending.buffer  # pass 1 is done
        else:
            tables, buffer = self._deviation_tables(nodes, means), None
        centred = self.centred_by_output[0 if output is None else output]
        largest_pass, sum_pass = self._squared_deviation_launches(tables, centred)
        buffer = squared_deviation_passes(nodes.size, largest_pass, sum_pass, self.xp, buffer)
        # The sums come back with the next level's split winners (see _copy_back).
        pending = PendingCopy(buffer, squared_deviations_from, self._copy_back)
        self._pending_copies.append(pending)
        return pending

    def largest_squared_deviations(self, nodes, means):
        """Pass 1 of ``kernels/_squared_deviations.py`` alone, brought back: each node's
        largest term and its lowest and highest centred target (0, +inf and -inf for a
        node with no row here). With :meth:`squared_deviation_parts`, the passes of a
        distributed fit, whose largest terms are the maximum over every machine's."""
        nodes = np.asarray(nodes, dtype=np.int64)
        largest_pass, _ = self._squared_deviation_launches(self._deviation_tables(nodes, means))
        buffer = squared_deviation_buffer(nodes.size, self.xp)
        largest_pass(*squared_deviation_rows(buffer)[0])
        largest, lowest, highest = device_to_host(buffer[:3]).view(np.float64)
        return largest, lowest, highest

    def squared_deviation_parts(self, nodes, means, largest):
        """Pass 2 alone on the given largest terms (see :meth:`largest_squared_deviations`),
        brought back: each node's exponent and its high and low integer sums, int64."""
        nodes = np.asarray(nodes, dtype=np.int64)
        _, sum_pass = self._squared_deviation_launches(self._deviation_tables(nodes, means))
        buffer = squared_deviation_buffer(nodes.size, self.xp)
        buffer[0] = host_to_device(np.asarray(largest, dtype=np.float64).view(np.int64), self.xp)
        sum_pass(*squared_deviation_rows(buffer)[1])
        exponent, high, low = device_to_host(buffer[3:])
        return exponent, high, low

    def _squared_deviation_launches(self, tables, centred=None):
        """The two passes' launches over every row, for the nodes of ``tables``
        (:meth:`_deviation_tables`, on the device): (largest_pass, sum_pass), which take
        the rows of a :func:`squared_deviation_buffer` (:func:`squared_deviation_rows`).
        ``centred``: the targets measured (one output's; default the first output's)."""
        kernels = self.kernels
        rows = (
            self.node_of_row,
            tables[0],  # slot of each node
            self.centred if centred is None else centred,
            self.real_weight,
            self.unit_weight,
            tables[1].view(np.float64),  # mean of each node
        )
        config = kernels.launch.launch_config(self.n_samples)

        def largest_pass(*extremes):
            self._launch(
                kernels.row_statistics.largest_squared_deviations, config, *rows, *extremes
            )

        def sum_pass(*parts):
            self._launch(kernels.row_statistics.squared_deviation_sums, config, *rows, *parts)

        return largest_pass, sum_pass

    def _copy_back(self, *arrays):
        """Host copies of the device int64 ``arrays``, and of every pending copy
        (:class:`PendingCopy`, which receive theirs), in one copy back."""
        pending, self._pending_copies = self._pending_copies, []
        parts = [*arrays, *(p.array for p in pending)]
        if not parts:
            return []
        flat = (
            parts[0].ravel() if len(parts) == 1 else self.xp.concatenate([a.ravel() for a in parts])
        )
        host = device_to_host(flat)
        out, start = [], 0
        for part in parts:
            out.append(host[start : start + part.size].reshape(part.shape))
            start += part.size
        for copy, values in zip(pending, out[len(arrays) :], strict=True):
            copy.receive(values)
        return out[: len(arrays)]

    def _deviation_tables(self, nodes, means):
        """:meth:`_deviation_host_tables` on the device (one copy)."""
        return host_to_device(self._deviation_host_tables(nodes, means), self.xp)

    def _deviation_host_tables(self, nodes, means):
        """By node id: the node's slot among ``nodes`` (-1 for the others) and its mean
        (float64 bits), as the squared-deviation passes read them; (2, n_node_ids) int64."""
        tables = np.zeros((2, self._node_size.size), dtype=np.int64)
        tables[0] = self._host_slot_table(nodes, np.int64)
        tables[1, nodes] = np.asarray(means, dtype=np.float64).view(np.int64)
        return tables

    def score_splits(self, search):
        """The fused split search (``kernels/_split_scan.py``) in one launch: ``search``
        is a ``CompiledSearch`` (gpu_tree.growing.splitting) on the device; returns the
        winner rows on the host, copied back with every pending copy (one copy)."""
        xp = self.xp
        n_nodes = search.slots.shape[0]
        _, n_features, _, n_channels = search.hist.shape
        winners = xp.empty(
            (n_nodes, self.kernels.split_scan.WINNER_FIXED_COLUMNS + 2 * n_channels), np.int64
        )
        scratch = (
            xp.empty((n_nodes, n_features, n_channels), dtype=np.int64),  # prefix
            xp.empty((n_nodes, n_features, n_channels), dtype=np.int64),  # totals
            xp.empty((n_nodes, n_features, 4), dtype=np.float64),  # results
            xp.empty((n_nodes, 2), dtype=np.float64),  # nodes
        )
        self._launch(
            self.kernels.split_scan.score_splits,
            self.kernels.split_scan.scoring_launch_config(n_nodes),
            *search,
            *scratch,
            winners,
        )
        return self._copy_back(winners)[0]

    def _slot_table(self, nodes):
        """:meth:`_host_slot_table` on the device (one copy)."""
        return host_to_device(self._host_slot_table(nodes), self.xp)

    def _host_slot_table(self, nodes, dtype=np.int32):
        """Node id -> its position in ``nodes`` (-1 for other nodes): the table a launch
        over every row uses to find each row's slot."""
        slot_of_node = self._node_table(-1, dtype)
        slot_of_node[nodes] = np.arange(nodes.size, dtype=dtype)
        return slot_of_node

    def _rows_of(self, nodes, slot_of_node):
        """On the device: the rows of ``nodes`` (whose slots ``slot_of_node`` gives), in
        row order, so that the histogram kernels read only these rows' codes, and in
        ascending order (neighbouring threads, neighbouring bytes).

        One pass over the node ids compacts them (a scan, then a scatter whose other
        rows all land on one spare entry): no sort, no per-node work, and no copy back,
        since the host knows how many rows the nodes hold.
        """
        xp = self.xp
        total = int(self._node_size[nodes].sum())
        if total == self.n_samples:  # the root, or every row's node
            return self.all_rows
        listed = slot_of_node[self.node_of_row] >= 0
        place = xp.cumsum(listed, dtype=np.int32) - 1
        rows = xp.empty(total + 1, dtype=np.int32)
        rows[xp.where(listed, place, total)] = self.all_rows
        return rows[:total]

    def _node_table(self, fill, dtype):
        return np.full(self._node_size.size, fill, dtype=dtype)

    def histograms(self, nodes, out=None) -> DenseHistograms:
        """Dense histograms of ``nodes`` (one launch) and the bins' value bounds."""
        nodes = np.asarray(nodes, dtype=np.int64)
        hist = self.empty_histograms(nodes.size) if out is None else out
        hist.fill(0)
        hist_slot_of_node = self._slot_table(nodes)
        row_list = self._rows_of(nodes, hist_slot_of_node)
        count("nodes_built", nodes.size)
        count("rows_read", row_list.shape[0])  # the built nodes' rows, no others
        if self.timer is None:
            self._launch_histograms(row_list, hist_slot_of_node, nodes.size, hist)
        else:
            with self.timer.phase("histogram_kernel", n_nodes=nodes.size):
                self._launch_histograms(row_list, hist_slot_of_node, nodes.size, hist)
        return DenseHistograms(hist, self.bin_lower[None], self.bin_upper[None])

    def empty_histograms(self, n_nodes):
        """Uninitialised dense histograms for ``n_nodes`` nodes, after checking they fit."""
        layout = self.row_data.layout
        shape = (n_nodes, self.n_features, self.n_bins, layout.n_channels)
        itemsize = np.dtype(layout.dtype).itemsize
        self._check_level_memory(int(np.prod(shape)) * itemsize, n_nodes)
        return self.xp.empty(shape, dtype=layout.dtype)

    def _check_level_memory(self, needed, n_nodes, what="histograms"):
        """Every level keeps dense histograms (no small-node path on the GPU yet), and an
        absolute-error level its candidates' arrays: say so clearly, rather than failing
        inside CuPy, when a deep level does not fit."""
        if self.xp is np:
            return
        free = int(self.xp.cuda.runtime.memGetInfo()[0])
        free += int(self.xp.get_default_memory_pool().free_bytes())
        if needed > free:
            raise MemoryError(
                f"device='cuda': a tree level of {n_nodes:,} nodes needs {needed:,} bytes of "
                f"{what} but {free:,} bytes of GPU memory are free; limit max_depth or "
                "max_leaf_nodes, use fewer bins, or use device='cpu' for very deep trees"
            )

    def _row_statistics(self, hist_slot_of_node):
        """What the histogram kernels read of a row, after the row itself: its node and
        that node's slot, and its statistics (kernels.cuda.histograms.add_row's arguments)."""
        return (
            self.node_of_row,
            hist_slot_of_node,
            self.class_rows,
            self.y_class,
            self.weight,
            self.unit_weight,
            self.count_channel,
            self.row_stats,
        )

    def _launch_histograms(self, row_list, hist_slot_of_node, n_hist_slots, hist):
        """One launch for the whole level: shared-memory histograms when every node's
        histogram of at least one feature fits a block's shared memory, else global. The
        shared histogram's entries are of the histogram's type: int32 class counts
        (unweighted classification) fit twice the entries of int64 ones, so twice the
        features, in a block's 48 KiB."""
        kernels = self.kernels
        layout = self.row_data.layout
        n_channels = layout.n_channels
        common = (
            self.X_binned,
            row_list,
            *self._row_statistics(hist_slot_of_node),
            hist.reshape(-1),
            self.n_bins,
            n_channels,
        )
        group = kernels.histograms.shared_features_per_block(
            n_hist_slots, self.n_bins, n_channels, self.n_features, hist.dtype
        )
        if group > 0:
            n_groups = -(-self.n_features // group)
            grid, threads = kernels.histograms.shared_launch_config(row_list.shape[0], n_groups)
            kernel = kernels.histograms.shared_histogram_kernel(hist.dtype)
            self._launch(kernel, (grid, threads), *common, n_hist_slots, group)
        else:
            blocks, threads = kernels.launch.launch_config(row_list.shape[0] * self.n_features)
            self._launch(kernels.histograms.histograms_global, (blocks, threads), *common)

    def subtract(self, hist, parent_slots, child_hist, out):
        """out = hist[parent_slots] - child_hist, on the device."""
        xp = self.xp
        xp.take(hist, host_to_device(parent_slots, xp), axis=0, out=out)
        out -= child_hist

    def compact_histograms(self, nodes) -> CompactHistograms:
        raise NotImplementedError(
            "the CUDA backend builds dense histograms for every node (small_node_size 0)"
        )

    def _grow_node_tables(self, n_nodes):
        if n_nodes > self._node_size.size:
            grown = np.zeros(n_nodes, dtype=np.int64)
            grown[: self._node_size.size] = self._node_size
            self._node_size = grown

    def _record_sizes(self, nodes, children, sizes):
        """The children's row counts: ``sizes``, from the histograms (no launch, no copy
        back), or where None (a distributed fit's worker, whose share of each node's rows
        no histogram on the client says), counted on the device."""
        children = np.concatenate(children)
        if sizes is None:
            counts = self.xp.bincount(self.node_of_row, minlength=self._node_size.size)
            self._node_size[children] = device_to_host(counts)[children]
        else:
            self._node_size[children] = np.concatenate(sizes)
        self._node_size[np.asarray(nodes)] = 0

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
        sizes=None,
        child_means=None,
    ):
        """The grower's partition; ``sizes`` None: the children's row counts are counted
        on the device (see :meth:`_record_sizes`)."""
        xp = self.xp
        self._grow_node_tables(int(max(np.max(left_children), np.max(right_children))) + 1)
        offsets, words = category_tables(category_sets, len(nodes))
        # The per-node tables, as rows of one array, and the category words after them: one
        # copy to the device. Regression (child_means given): the children's slots and
        # means, for pass 1 of their squared deviations, which the partition runs as it
        # moves each row.
        n_ids = self._node_size.size
        n_rows = 6 if child_means is None else 8
        tables = np.empty((n_rows, n_ids), dtype=np.int64)
        tables[:] = np.array([-1, 0, 0, -1, -1, -1, -1, 0][:n_rows], dtype=np.int64)[:, None]
        split_feature, split_bin, goes_left, left_child, right_child, category_offset = range(6)
        tables[split_feature, nodes] = feature
        tables[split_bin, nodes] = bin_threshold
        tables[goes_left, nodes] = missing_left
        tables[left_child, nodes] = left_children
        tables[right_child, nodes] = right_children
        tables[category_offset, nodes] = offsets
        children = np.column_stack([left_children, right_children]).ravel()  # as grown
        if child_means is not None:
            means = np.column_stack(child_means).ravel()
            tables[6:] = self._deviation_host_tables(children, means)
        packed = host_to_device(np.concatenate([tables.ravel(), words]), xp)
        device = packed[: tables.size].reshape(tables.shape)
        extremes = self._no_extremes
        if child_means is not None:
            buffer = squared_deviation_buffer(children.size, xp)
            tables_on_device = device[6:]
            self._children_extremes = _ChildrenExtremes(children, tables_on_device, buffer)
            extremes = (
                tables_on_device[0],
                tables_on_device[1].view(np.float64),
                self.centred,
                self.real_weight,
                *squared_deviation_rows(buffer)[0],
            )
        codes, routed_feature = self._routing_codes(device[split_feature])
        self._launch(
            self.kernels.partition.partition_rows,
            self.kernels.launch.launch_config(self.n_samples),
            codes,
            self.node_of_row,
            routed_feature,
            device[split_bin],
            device[goes_left],
            self.missing_bin,
            device[category_offset],
            packed[tables.size :],
            device[left_child],
            device[right_child],
            *extremes[:4],
            self.unit_weight,
            *extremes[4:],
        )
        self._record_sizes(nodes, [left_children, right_children], sizes)

    def partition_multiway(
        self, nodes, feature, child_of_code, default_child, children, *, sizes=None
    ):
        """The grower's multiway partition; ``sizes`` None: counted on the device, as in
        :meth:`partition`."""
        xp = self.xp
        self._grow_node_tables(int(max(c.max() for c in children)) + 1)
        table = np.empty((len(nodes), self.n_bins), dtype=np.int32)
        n_codes = min(child_of_code.shape[1], self.n_bins)
        for k in range(len(nodes)):
            table[k] = default_child[k]  # the missing bin and unseen codes
            table[k, :n_codes] = child_of_code[k, :n_codes]
            if self.missing_bin >= 0:
                table[k, self.missing_bin] = default_child[k]
        blocks, threads = self.kernels.launch.launch_config(self.n_samples)
        self._launch(
            self.kernels.partition.partition_rows_multiway,
            (blocks, threads),
            self.X_binned,
            self.node_of_row,
            self._slot_table(np.asarray(nodes, dtype=np.int64)),  # each node's table row
            host_to_device(np.asarray(feature, dtype=np.int32), xp),
            host_to_device(table, xp),
        )
        self._record_sizes(nodes, children, sizes)


class _ChildrenExtremes(NamedTuple):
    """Pass 1 of the squared deviations of a partition's children, run by the partition:
    the children (in the order the grower measures them), their tables on the device
    (:meth:`CUDAHistogramBackend._deviation_host_tables`) and the pass's buffer."""

    nodes: np.ndarray
    tables: Any
    buffer: Any


def required_device_bytes(
    n_samples, n_features, bin_itemsize, x_itemsize, x_on_host, layout, n_bins, stored=None
):
    """Peak GPU memory of a fit, in bytes, and its parts.

    Binning holds the float X (when it came from the host) and its codes; growth holds the
    codes, per-row labels or statistics, weights and node ids, and the histograms of two
    levels (parents kept for the subtraction trick), counted here for the root's children.
    ``stored``: a sparse X's number of stored values, whose CSR codes the GPU holds (a
    column index and a code each, a row pointer per row; binned on the host, and the
    routing's one code per row), instead of every value's.
    """
    if stored is None:
        codes = n_samples * n_features * bin_itemsize
        floats = n_samples * n_features * x_itemsize if x_on_host else 0
    else:
        codes = stored * (4 + bin_itemsize) + 8 * (n_samples + 1) + n_samples * bin_itemsize
        floats = 0
    stat_bytes = np.dtype(layout.dtype).itemsize  # a statistic, a histogram entry
    # Node id, the index of every row, and the row list's compaction (_rows_of) at its
    # peak: slot, mask, running count, target and the list itself (about 21 bytes);
    # classification: class and int64 weight (one output), or every output's class
    # block (several); regression: integer statistics, and the float64 centred targets
    # and weight that node variances are measured on. Unweighted fits copy no weight (nor
    # a regression row's weight channel).
    weighted = layout.has_count_channel
    if layout.is_classification and layout.n_outputs == 1:
        row_bytes = 4 + (8 if weighted else 0)
    elif layout.is_classification:
        row_bytes = stat_bytes * layout.n_channels
    else:
        row_bytes = stat_bytes * (layout.n_channels - (0 if weighted else 1))
        row_bytes += 8 * (layout.n_outputs + weighted)
    per_row = n_samples * (4 + 4 + 21 + row_bytes)
    histograms = 3 * n_features * n_bins * layout.n_channels * stat_bytes
    parts = {
        "float X while binning": floats,
        "bin codes": codes,
        "per-row arrays": per_row,
        "histograms": histograms,
    }
    return max(floats + codes, codes + per_row + histograms), parts


def free_device_bytes(xp) -> int | None:
    """The GPU's free memory in bytes; None in the simulator (whose arrays are numpy's)."""
    if xp is np:
        return None
    return int(xp.cuda.runtime.memGetInfo()[0])


def check_device_memory(X, bin_mapper, layout, xp, free_bytes=None):
    """Fail before any work when the fit cannot fit in the GPU's free memory.

    ``free_bytes`` defaults to what the device reports (nothing to check in the simulator).
    """
    if free_bytes is None:
        free_bytes = free_device_bytes(xp)
        if free_bytes is None:
            return
    x_on_host = isinstance(X, np.ndarray) and xp is not np
    needed, parts = required_device_bytes(
        X.shape[0],
        X.shape[1],
        np.dtype(bin_mapper.bin_dtype_).itemsize,
        X.dtype.itemsize,
        x_on_host or xp is np,
        layout,
        bin_mapper.n_bins_,
        stored=int(X.nnz) if is_sparse(X) else None,
    )
    if needed > free_bytes:
        detail = ", ".join(f"{name} {size:,}" for name, size in parts.items() if size)
        raise MemoryError(
            f"device='cuda' needs {needed:,} bytes of GPU memory for this fit ({detail}) but "
            f"{free_bytes:,} bytes are free; use fewer rows, fewer bins, or device='cpu'"
        )


def apply_on_device(tree, X, xp):
    """Leaf of each row of the GPU array X, computed on the GPU (one thread per row)."""
    kernels = cuda_kernels()
    leaves = xp.empty(X.shape[0], dtype=np.int64)
    arrays = [a if np.isscalar(a) else xp.asarray(a) for a in tree.walk_arrays()]
    blocks, threads = kernels.launch.launch_config(X.shape[0])
    config = (blocks, threads, current_stream(xp))
    launch(kernels.prediction.predict_leaves, config, X, *arrays, leaves)
    return leaves


def predict_forest_on_device(packed, X, xp):
    """The trees' leaf values averaged for each row of the GPU array X, (n_samples,
    n_values), on the GPU, in one launch: ``packed`` is ``model.tree.forest_walk_arrays``'
    result (copied to the device)."""
    kernels = cuda_kernels()
    arrays = [a if np.isscalar(a) else xp.asarray(a) for a in packed]
    out = xp.empty((X.shape[0], packed[-1].shape[1]), dtype=np.float64)
    blocks, threads = kernels.launch.launch_config(X.shape[0])
    config = (blocks, threads, current_stream(xp))
    launch(kernels.prediction.predict_forest, config, X, *arrays, out)
    return out


def predict_on_device(tree, X, xp):
    """``tree.value`` of each row's leaf, on the GPU: (n_samples, n_classes), or
    (n_samples, n_outputs, n_classes) for several outputs (as ``Tree.values_of``)."""
    value = tree.value[:, 0, :] if tree.n_outputs == 1 else tree.value
    return xp.asarray(value)[apply_on_device(tree, X, xp)]


def labels_of_winners(classes, winner):
    """The labels of the winning class indices: on the GPU (``winner`` a device array)
    numeric labels stay there and other labels come back as a host array; on the host,
    host labels."""
    if is_device_array(winner) and classes.dtype.kind in "biuf":
        return cuda_array_module().asarray(classes)[winner]
    return classes.take(to_host(winner))
