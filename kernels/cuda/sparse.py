"""A sparse X's kernels on the GPU: histograms and the split feature's codes from the
CSR bin codes."""

from .. import _tree_walk as _walk
from .. import compilation
from .api import cuda, device_function
from .histograms import add_row
from .launch import HELPERS_SOURCE_KEY

# Where a CSR row stores a column (a sparse X's split feature, at a partition).
_stored_position = device_function(cache=True)(_walk.stored_position)


def _compile_sparse_kernels(helpers_key):
    """The kernels of a sparse X's CSR bin codes (``data.binning.SparseCodes``): each row
    stores the codes of its non-zero values (``indices`` increasing), every other value of
    feature f falls in the bin ``zero_code[f]``."""

    @cuda.jit(cache=True)
    def sparse_histograms(
        indptr,
        indices,
        codes,
        row_list,
        node_of_row,
        slot_of_node,
        is_classification,
        y_class,
        weight,
        unit_weight,
        count_channel,
        row_stats,
        hist_flat,
        totals_flat,
        n_features,
        n_bins,
        n_channels,
    ):
        """The histograms of a level's nodes from their rows' stored values only, one
        thread per listed row (grid-striding): each row adds its statistics to its node's
        totals (``totals_flat``, (n_slots, n_channels) flat) and to the bin of each of its
        stored values. The zero bins are filled afterwards from the totals, by
        subtraction (the backend's work), so a pass costs what the stored values cost."""
        helpers_key  # noqa: B018 - in the cache key only (see HELPERS_SOURCE_KEY)
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        for task in range(start, row_list.shape[0], stride):
            i = row_list[task]
            slot = slot_of_node[node_of_row[i]]
            if slot < 0:
                continue
            add_row(
                totals_flat,
                slot * n_channels,
                i,
                is_classification,
                y_class,
                weight,
                unit_weight,
                count_channel,
                row_stats,
            )
            for k in range(indptr[i], indptr[i + 1]):
                index = ((slot * n_features + indices[k]) * n_bins + codes[k]) * n_channels
                add_row(
                    hist_flat,
                    index,
                    i,
                    is_classification,
                    y_class,
                    weight,
                    unit_weight,
                    count_channel,
                    row_stats,
                )

    @cuda.jit(cache=True)
    def split_feature_codes(indptr, indices, codes, zero_code, node_of_row, split_feature, out):
        """``out[0, i]``: row i's bin code of its node's split feature (its stored value's,
        found by a binary search of its stored columns, else the zero bin), for the rows
        of split nodes (``split_feature[node]`` >= 0): the partition then routes them on
        ``out`` as on a one-feature code matrix."""
        helpers_key  # noqa: B018 - in the cache key only (see HELPERS_SOURCE_KEY)
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        for i in range(start, node_of_row.shape[0], stride):
            f = split_feature[node_of_row[i]]
            if f < 0:
                continue
            k = _stored_position(indptr, indices, i, f)
            out[0, i] = codes[k] if k >= 0 else zero_code[f]

    return sparse_histograms, split_feature_codes


sparse_histograms, split_feature_codes = _compile_sparse_kernels(HELPERS_SOURCE_KEY)


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())
