"""Walking a fitted tree, written once in plain Python and compiled for both devices.

:mod:`gpu_tree.kernels.cpu` compiles it with ``numba.njit`` and
:mod:`gpu_tree.kernels.cuda` with ``numba.cuda.jit(device=True)``: one source, so both
devices send every row to the same leaf. The node layout is described in
:mod:`gpu_tree._tree`.
"""


def in_category_set(words, offset, code):
    """Whether category ``code`` is in the bitset starting at ``words[offset]``."""
    return (words[offset + (code >> 6)] >> (code & 63)) & 1 != 0


def make_leaf_of_row(in_set):
    """The tree walk, calling ``in_set``: :func:`in_category_set` compiled for the device."""

    def leaf_of_row(X, i, children_left, children_right, feature, threshold, missing_go_to_left,
                    category_offset, category_bitsets, n_category_words, branch_offset, n_branches,
                    branch_children):  # fmt: skip
        """Leaf reached by row i of X.

        Numeric nodes send x <= threshold left; subset nodes send the category codes of
        their set left; multiway nodes have a child per code. NaN (a missing value or an
        unseen category) follows the node's missing rule, and so does a code outside the
        node's table.
        """
        node = 0
        while children_left[node] >= 0:
            x = X[i, feature[node]]
            if branch_offset[node] >= 0:
                entries = n_branches[node]
                k = entries  # the entry of missing values and unseen categories
                if x == x and x >= 0 and x < entries:
                    k = int(x)
                node = branch_children[branch_offset[node] + k]
                continue
            if x != x:
                go_left = missing_go_to_left[node] != 0
            elif category_offset[node] >= 0:
                if x >= 0 and x < 64 * n_category_words:
                    go_left = in_set(category_bitsets, category_offset[node], int(x))
                else:
                    go_left = missing_go_to_left[node] != 0
            else:
                go_left = x <= threshold[node]
            node = children_left[node] if go_left else children_right[node]
        return node

    return leaf_of_row
