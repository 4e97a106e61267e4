"""Walking a fitted tree, written once in plain Python and compiled for both devices.

:mod:`gpu_tree.kernels.cpu` compiles it with ``numba.njit`` and
:mod:`gpu_tree.kernels.cuda` with ``numba.cuda.jit(device=True)``: one source, so both
devices send every row to the same leaf.
"""


def leaf_of_row(X, i, children_left, children_right, feature, threshold, missing_go_to_left):
    """Leaf reached by row i of X: x <= threshold goes left; NaN follows the node's rule."""
    node = 0
    while children_left[node] >= 0:
        x = X[i, feature[node]]
        if x != x:
            go_left = missing_go_to_left[node] != 0
        else:
            go_left = x <= threshold[node]
        node = children_left[node] if go_left else children_right[node]
    return node
