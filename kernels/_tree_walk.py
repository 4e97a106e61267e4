"""Walking a fitted tree, written once in plain Python and compiled for both devices.

:mod:`gpu_tree.kernels.cpu` compiles it with ``numba.njit`` and
:mod:`gpu_tree.kernels.cuda` with ``numba.cuda.jit(device=True)``: one source, so both
devices send every row to the same leaf. The node layout is described in
:mod:`gpu_tree.model.tree`; ``Tree.walk_arrays`` packs what the walk reads into the
arguments below.

The walk's arguments (after ``X`` and the row ``i``):

- ``nodes``: int64 (n_nodes, len(NODE_COLUMNS)), C order: one row per node holding the
  tree's per-node integer arrays named in :data:`NODE_COLUMNS`, at the column indices
  defined below (a node's fields lie side by side in memory);
- ``threshold``: float64 (n_nodes,), the numeric thresholds;
- ``category_bitsets`` and ``n_category_words``: the category sets of subset nodes,
  ``n_category_words`` int64 words each (the bitset layout of :mod:`gpu_tree.data.stats`);
- ``branch_children``: int64, the multiway nodes' child tables.
"""

# The columns of ``nodes``, in order: each the tree array of that name, as int64. The
# column indices below are derived from this one list.
NODE_COLUMNS = (
    "children_left",
    "children_right",
    "feature",
    "missing_go_to_left",
    "category_offset",
    "branch_offset",
    "n_branches",
)
CHILDREN_LEFT = NODE_COLUMNS.index("children_left")
CHILDREN_RIGHT = NODE_COLUMNS.index("children_right")
FEATURE = NODE_COLUMNS.index("feature")
MISSING_GO_TO_LEFT = NODE_COLUMNS.index("missing_go_to_left")
CATEGORY_OFFSET = NODE_COLUMNS.index("category_offset")
BRANCH_OFFSET = NODE_COLUMNS.index("branch_offset")
N_BRANCHES = NODE_COLUMNS.index("n_branches")


def in_category_set(words, offset, code):
    """Whether category ``code`` is in the bitset starting at ``words[offset]``."""
    return (words[offset + (code >> 6)] >> (code & 63)) & 1 != 0


def dense_value(X, i, f):
    """Value of feature f in row i of a dense X (n_samples, n_features)."""
    return X[i, f]


def stored_position(indptr, indices, i, f):
    """Where row i of a CSR matrix (each row's indices increasing) stores column f: its
    position in ``indices``, or -1 where it stores none (the value is 0). A binary search
    of the row's stored columns."""
    lo = indptr[i]
    hi = indptr[i + 1]
    while lo < hi:
        mid = (lo + hi) >> 1
        if indices[mid] < f:
            lo = mid + 1
        else:
            hi = mid
    if lo < indptr[i + 1] and indices[lo] == f:
        return lo
    return -1


def make_sparse_value(position_of):
    """The walk's value reader of a CSR X, calling ``position_of`` (:func:`stored_position`
    compiled for the device)."""

    def sparse_value(X, i, f):
        """Value of feature f in row i of a CSR matrix given as the tuple ``X = (indptr,
        indices, data)``; a column not stored is 0."""
        indptr, indices, data = X
        k = position_of(indptr, indices, i, f)
        if k >= 0:
            return data[k]
        return 0.0

    return sparse_value


def make_leaf_of_row(in_set, value_of):
    """The tree walk, calling ``in_set`` (:func:`in_category_set`) and ``value_of``
    (:func:`dense_value`, or :func:`make_sparse_value`'s reader), compiled for the device."""

    def leaf_of_row(
        X, i, nodes, threshold, category_bitsets, n_category_words, branch_children, root
    ):
        """Leaf reached by row i of X from node ``root`` (0; a forest's trees packed in
        one table start at their own roots).

        Numeric nodes send x <= threshold left; subset nodes send the category codes of
        their set left; multiway nodes have a child per code. NaN (a missing value or an
        unseen category) follows the node's missing rule, and so does a code outside the
        node's table.
        """
        node = root
        while nodes[node, CHILDREN_LEFT] >= 0:
            x = value_of(X, i, nodes[node, FEATURE])
            branch_offset = nodes[node, BRANCH_OFFSET]
            if branch_offset >= 0:
                entries = nodes[node, N_BRANCHES]
                k = entries  # the entry of missing values and unseen categories
                if x == x and x >= 0 and x < entries:
                    k = int(x)
                node = branch_children[branch_offset + k]
                continue
            category_offset = nodes[node, CATEGORY_OFFSET]
            if x != x:
                go_left = nodes[node, MISSING_GO_TO_LEFT] != 0
            elif category_offset >= 0:
                if x >= 0 and x < 64 * n_category_words:
                    go_left = in_set(category_bitsets, category_offset, int(x))
                else:
                    go_left = nodes[node, MISSING_GO_TO_LEFT] != 0
            else:
                go_left = x <= threshold[node]
            node = nodes[node, CHILDREN_LEFT] if go_left else nodes[node, CHILDREN_RIGHT]
        return node

    return leaf_of_row


def make_add_tree_values(leaf_of_row):
    """A forest's step for one row and one tree, calling ``leaf_of_row``
    (:func:`make_leaf_of_row`'s walk compiled for the device): both devices' forest
    kernels add the trees' values in the same order, so their sums are the same bits."""

    def add_tree_values(
        X,
        i,
        nodes,
        threshold,
        category_bitsets,
        n_category_words,
        branch_children,
        root,
        values,
        out,
    ):
        """``out[i] += values[leaf]``: the value of the leaf row i of X reaches in the tree
        rooted at ``root`` of a forest's packed walk (``model.tree.forest_walk_arrays``)."""
        leaf = leaf_of_row(
            X, i, nodes, threshold, category_bitsets, n_category_words, branch_children, root
        )
        for c in range(values.shape[1]):
            out[i, c] += values[leaf, c]

    return add_tree_values
