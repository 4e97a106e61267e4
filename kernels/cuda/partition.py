"""Partitions on the GPU: every row of a split node moved to its child (binary splits by
a threshold or a category set, multiway splits by each code's child), each row's node
kept in ``node_of_row``."""

from .. import _tree_walk as _walk
from .. import compilation
from .api import cuda, device_function
from .launch import HELPERS_SOURCE_KEY
from .row_statistics import record_extremes

# The tree walk's category-set test (kernels/_tree_walk.py): a row goes where prediction
# will send it.
_in_category_set = device_function(cache=True)(_walk.in_category_set)


def _compile_partition_rows(helpers_key):
    @cuda.jit(cache=True)
    def partition_rows(
        X_binned,
        node_of_row,
        split_feature,
        split_bin,
        missing_left,
        missing_bin,
        category_offset,
        category_words,
        left_child,
        right_child,
        child_slot,
        child_mean,
        centred,
        weight,
        unit_weight,
        largest,
        lowest,
        highest,
    ):
        """Move every row of a split node to its child: bin <= split_bin goes left, and the
        missing bin goes where ``missing_left[node]`` says. Categorical subset nodes
        (``category_offset[node]`` >= 0) send the codes in their bitset left.

        ``split_feature[node]`` < 0 marks nodes not split at this level (rows stay).
        Regression (``child_slot`` of more than one entry): each row also does pass 1 of
        :mod:`_squared_deviations` for its child, whose slot and mean are
        ``child_slot[child]`` and ``child_mean[child]``; classification passes 1-element
        stand-ins for these and the arrays after them.
        """
        helpers_key  # noqa: B018 - in the cache key only (see HELPERS_SOURCE_KEY)
        n_samples = node_of_row.shape[0]
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        for i in range(start, n_samples, stride):
            node = node_of_row[i]
            f = split_feature[node]
            if f < 0:
                continue
            code = X_binned[f, i]
            offset = category_offset[node]
            if code == missing_bin:
                goes_left = missing_left[node] != 0
            elif offset >= 0:
                goes_left = _in_category_set(category_words, offset, int(code))
            else:
                goes_left = code <= split_bin[node]
            child = left_child[node] if goes_left else right_child[node]
            node_of_row[i] = child
            if child_slot.shape[0] > 1:
                record_extremes(
                    i,
                    child_slot[child],
                    centred,
                    weight,
                    unit_weight,
                    child_mean[child],
                    largest,
                    lowest,
                    highest,
                )

    return partition_rows


partition_rows = _compile_partition_rows(HELPERS_SOURCE_KEY)


@cuda.jit(cache=True)
def partition_rows_multiway(X_binned, node_of_row, slot_of_node, split_feature, child_of_code):
    """Move every row of a multiway node (``slot_of_node[node]`` >= 0) to the child of its
    category code: ``child_of_code[slot, code]``, whose entry for the missing bin, like
    those of codes the node did not see, is the node's default child."""
    n_samples = node_of_row.shape[0]
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n_samples, stride):
        slot = slot_of_node[node_of_row[i]]
        if slot < 0:
            continue
        node_of_row[i] = child_of_code[slot, X_binned[split_feature[slot], i]]


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())
