"""Prediction on the GPU: the tree walk of ``kernels/_tree_walk.py`` (shared with the
CPU kernels: the same leaves), a thread per row, for one tree or a forest."""

from .. import _tree_walk as _walk
from .. import compilation
from .api import cuda, device_function
from .launch import HELPERS_SOURCE_KEY

# The tree walk shared with the CPU prediction kernel (one source, the same leaves).
_in_category_set = device_function(cache=True)(_walk.in_category_set)
_dense_value = device_function(cache=True)(_walk.dense_value)
_leaf_of_row = device_function(cache=True)(_walk.make_leaf_of_row(_in_category_set, _dense_value))
_add_tree_values = device_function(cache=True)(_walk.make_add_tree_values(_leaf_of_row))


def _compile_predict_leaves(helpers_key):
    @cuda.jit(cache=True)
    def predict_leaves(
        X, nodes, threshold, category_bitsets, n_category_words, branch_children, out
    ):
        """Leaf reached by each row, one thread per row: ``Tree.walk_arrays()`` are the
        arguments between ``X`` and ``out`` (the node rules and the layout: :mod:`_tree_walk`)."""
        helpers_key  # noqa: B018 - in the cache key only (see HELPERS_SOURCE_KEY)
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        for i in range(start, X.shape[0], stride):
            out[i] = _leaf_of_row(
                X, i, nodes, threshold, category_bitsets, n_category_words, branch_children, 0
            )

    @cuda.jit(cache=True)
    def predict_forest(
        X, nodes, threshold, category_bitsets, n_category_words, branch_children, roots, values, out
    ):
        """The trees' leaf values averaged, one thread per row, every tree in one launch:
        the arguments of ``kernels.cpu.prediction.predict_forest`` (``model.tree.forest_walk_arrays``),
        whose order of additions it keeps, so both devices give the same bits."""
        helpers_key  # noqa: B018 - in the cache key only (see HELPERS_SOURCE_KEY)
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        n_outputs = values.shape[1]
        for i in range(start, X.shape[0], stride):
            for c in range(n_outputs):
                out[i, c] = 0.0
            for t in range(roots.shape[0]):
                _add_tree_values(
                    X,
                    i,
                    nodes,
                    threshold,
                    category_bitsets,
                    n_category_words,
                    branch_children,
                    roots[t],
                    values,
                    out,
                )
            for c in range(n_outputs):
                out[i, c] /= roots.shape[0]

    return predict_leaves, predict_forest


predict_leaves, predict_forest = _compile_predict_leaves(HELPERS_SOURCE_KEY)


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())
