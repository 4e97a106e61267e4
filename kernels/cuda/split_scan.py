"""The fused split search on the GPU (``kernels/_split_scan.py``, shared with the CPU
twin: the same winners), a block per node."""

import numpy as np
from numba import config

from .. import _split_scan as _scan
from .. import compilation
from .api import cuda, device_function
from .launch import HELPERS_SOURCE_KEY, MAX_GRID_X, SIMULATOR_GRID, simulating


def _unfused_product(a, b):
    """``a * b`` as libdevice's ``dmul_rn``, which NVVM never fuses into an addition
    (kernels/_split_scan.py says why that matters)."""
    return cuda.libdevice.dmul_rn(a, b)


# The simulator runs plain Python arithmetic and has no libdevice.
_product = device_function(cache=True)(
    _scan.plain_product if config.ENABLE_CUDASIM else _unfused_product
)
# The split search shared with the CPU twin (kernels/_split_scan.py: the same winners).
_node_totals, _score_feature, _choose_winner = _scan.make_split_scan(
    device_function(cache=True), _product
)
# Threads of a split-scoring block: one per feature, striding; few, since a level's
# nodes give the blocks.
SCORING_THREADS = 64
WINNER_FIXED_COLUMNS = _scan.WINNER_FIXED_COLUMNS


def _compile_score_splits(helpers_key):
    @cuda.jit(cache=True)
    def score_splits(
        hist,
        slots,
        n_bins,
        missing,
        use_missing,
        feature_mask,
        use_mask,
        scale,
        criterion,
        n_classes,
        outputs,
        count_channel,
        min_samples_leaf,
        min_weight_leaf,
        rtol,
        monotonic_cst,
        lower,
        upper,
        prefix,
        totals,
        results,
        nodes,
        winners,
    ):
        """The fused split search: every candidate of every node scored and each node's
        winner chosen, on the device (``kernels/_split_scan.py``; the arguments up to
        ``upper`` are ``CompiledSearch``'s).

        A block per node (blocks stride over the nodes): thread 0 sums the node's
        statistics, the threads score a feature each (striding over the features), then
        thread 0 picks the node's winner. Scratch, in global memory since the number of
        channels is known only at run time: ``prefix`` and ``totals`` (n_nodes,
        n_features, n_channels) int64, ``results`` (n_nodes, n_features, 4) float64,
        ``nodes`` (n_nodes, 2) float64. ``winners`` (n_nodes, WINNER_FIXED_COLUMNS +
        2 n_channels) int64 gets the winner rows (their float64 columns by their bits).
        """
        helpers_key  # noqa: B018 - in the cache key only (see HELPERS_SOURCE_KEY)
        parent = cuda.local.array(2, np.float64)
        scored = cuda.local.array(3, np.float64)
        n_features = hist.shape[1]
        thread = cuda.threadIdx.x
        for i in range(cuda.blockIdx.x, slots.shape[0], cuda.gridDim.x):
            slot = slots[i]
            missing_slot = slot if use_missing else 0
            if thread == 0:
                _node_totals(
                    hist, slot, 0, missing, use_missing, n_bins, scale, n_classes, outputs, nodes[i]
                )
            cuda.syncthreads()
            for f in range(thread, n_features, cuda.blockDim.x):
                _score_feature(
                    hist,
                    slot,
                    f,
                    n_bins,
                    missing[missing_slot, f],
                    use_missing,
                    (not use_mask) or feature_mask[i, f] != 0,
                    prefix[i, f],
                    totals[i, f],
                    scale,
                    criterion,
                    n_classes,
                    outputs,
                    count_channel,
                    min_samples_leaf,
                    min_weight_leaf,
                    monotonic_cst[f],
                    lower[i],
                    upper[i],
                    rtol,
                    nodes[i],
                    parent,
                    scored,
                    results[i, f],
                )
            cuda.syncthreads()
            if thread == 0:
                _choose_winner(
                    hist,
                    slot,
                    n_bins,
                    missing[missing_slot],
                    use_missing,
                    results[i],
                    totals[i],
                    criterion,
                    n_classes,
                    count_channel,
                    rtol,
                    nodes[i],
                    winners[i],
                    winners[i].view(np.float64),
                )

    return score_splits


score_splits = _compile_score_splits(HELPERS_SOURCE_KEY)


def scoring_launch_config(n_nodes: int, simulator: bool | None = None):
    """(blocks, threads) for :func:`score_splits`: a block per node, up to
    :data:`MAX_GRID_X` (blocks stride over the rest)."""
    if simulating(simulator):
        return SIMULATOR_GRID
    return max(1, min(n_nodes, MAX_GRID_X)), SCORING_THREADS


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())
