"""Prediction on the CPU: the tree walk of ``kernels/_tree_walk.py`` (shared with the
CUDA kernel) over dense or CSR rows, the lock-step walk of trees of numeric splits, a
forest's averaged leaves, and the breadth-first (and level-wise) order of a tree's nodes."""

import hashlib
from pathlib import Path

import numpy as np
from numba import njit, prange
from numba import types as numba_types
from numba.extending import overload

from .. import _tree_walk as _walk
from .. import compilation, python_mode
from .launch import SerialWhenSmall, borrowing_njit

# The tree walk is shared with the CUDA prediction kernel (one source, the same leaves).
_in_category_set = njit(cache=True, inline="always")(_walk.in_category_set)
_dense_value = njit(cache=True, inline="always")(_walk.dense_value)
stored_position = njit(cache=True, inline="always")(_walk.stored_position)
_sparse_value = njit(inline="always")(_walk.make_sparse_value(stored_position))


def _value_of(X, i, f):
    """X[i, f] for the walk: a dense array, or a CSR matrix as (indptr, indices, data)."""
    raise NotImplementedError("compiled only: see the overload below")


@overload(_value_of, inline="always")
def _value_of_by_kind(X, i, f):
    # Chosen at compile time by X's type: the prediction kernels take either kind of X,
    # each compiled once for it, with one walk.
    if isinstance(X, numba_types.BaseTuple):
        return lambda X, i, f: _sparse_value(X, i, f)
    return lambda X, i, f: _dense_value(X, i, f)


def _value_of_in_python(X, i, f):
    """:func:`_value_of` run as Python (kernels/python_mode.py): X's kind at run time."""
    if isinstance(X, tuple):
        return _sparse_value(X, i, f)
    return _dense_value(X, i, f)


python_mode.python_equivalent(_value_of, _value_of_in_python)
_leaf_of_row = njit(inline="always")(_walk.make_leaf_of_row(_in_category_set, _value_of))
_add_tree_values = njit(inline="always")(_walk.make_add_tree_values(_leaf_of_row))


# numba's on-disk cache is keyed on the file a kernel is defined in (its time stamp and
# size), not on the files it inlines code from: an edit to _tree_walk.py alone (its node
# columns, say) would leave a stale predict_leaves in the cache. The walk's source, hashed,
# is a closure variable of the kernel, and numba puts closure variables in the cache key.
WALK_SOURCE_HASH = hashlib.sha256(Path(_walk.__file__).read_bytes()).hexdigest()
# The columns of the node table the walk reads (Tree.walk_arrays builds it).
WALK_NODE_COLUMNS = _walk.NODE_COLUMNS


# Rows a forest's prediction takes through each tree in turn (kernels' predict_forest).
FOREST_ROWS = 256


def _compile_predict_leaves(walk_source_hash):
    @njit(parallel=True, cache=True)
    def predict_leaves(
        X, nodes, threshold, category_bitsets, n_category_words, branch_children, out
    ):
        """Leaf index reached by each row: ``Tree.walk_arrays()`` are the arguments between
        ``X`` and ``out`` (the node rules and the layout: :mod:`_tree_walk`)."""
        walk_source_hash  # noqa: B018 - in the cache key only (see WALK_SOURCE_HASH)
        for i in prange(out.shape[0]):  # X: dense, or CSR as (indptr, indices, data)
            out[i] = _leaf_of_row(
                X, i, nodes, threshold, category_bitsets, n_category_words, branch_children, 0
            )

    @njit(cache=True)
    def predict_leaves_serial(
        X, nodes, threshold, category_bitsets, n_category_words, branch_children, out
    ):
        """:func:`predict_leaves` in the calling thread: for small batches, where waking
        the thread pool costs more than the walk (the same walk, so the same leaves)."""
        walk_source_hash  # noqa: B018 - in the cache key only (see WALK_SOURCE_HASH)
        for i in range(out.shape[0]):
            out[i] = _leaf_of_row(
                X, i, nodes, threshold, category_bitsets, n_category_words, branch_children, 0
            )

    @njit(parallel=True, cache=True)
    def predict_forest(
        X, nodes, threshold, category_bitsets, n_category_words, branch_children, roots, values, out
    ):
        """The trees' leaf values averaged, per row: the trees packed in one node table
        (``model.tree.forest_walk_arrays``), tree t walked from ``roots[t]``, ``values``
        (n_nodes, n_outputs) the leaves' values. Per row the trees are added in order,
        then divided by their number (as summing the trees' predictions would). A task
        takes FOREST_ROWS rows through one tree after another: a tree's nodes stay in
        cache for its rows (one row through every tree would evict them)."""
        walk_source_hash  # noqa: B018 - in the cache key only (see WALK_SOURCE_HASH)
        n_rows, n_outputs = out.shape[0], values.shape[1]  # X dense or CSR, as above
        for block in prange((n_rows + FOREST_ROWS - 1) // FOREST_ROWS):
            first = block * FOREST_ROWS
            end = min(n_rows, first + FOREST_ROWS)
            for i in range(first, end):
                for c in range(n_outputs):
                    out[i, c] = 0.0
            for t in range(roots.shape[0]):
                for i in range(first, end):
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
            for i in range(first, end):
                for c in range(n_outputs):
                    out[i, c] /= roots.shape[0]

    return predict_leaves, predict_leaves_serial, predict_forest


predict_leaves, predict_leaves_serial, predict_forest = _compile_predict_leaves(WALK_SOURCE_HASH)


# The lock-step walk's node table (Tree.lockstep_arrays): one row per node, these columns.
# A leaf's row leads back to itself (both children the leaf, feature 0), so a row that
# has reached its leaf keeps stepping in place instead of leaving the loop.
STEP_LEFT, STEP_RIGHT, STEP_FEATURE, STEP_MISSING_LEFT = range(4)
STEP_COLUMNS = 4
# Rows walked together: their steps are independent, so the core overlaps their loads and
# comparisons instead of waiting on one row's chain of dependent loads and mispredicted
# branches (a 10,000-row batch on a 25,000-node tree: about 20 % less time).
LOCKSTEP_ROWS = 16


@borrowing_njit(forceinline=True)
def _walk_lockstep_group(X, start, root, steps, threshold, current):
    """Rows ``start`` to ``start + LOCKSTEP_ROWS`` (or X's end) walked from node ``root``,
    stepping together until none moves; leaves their leaves in ``current``
    (LOCKSTEP_ROWS, scratch) and returns how many rows it walked."""
    m = min(LOCKSTEP_ROWS, X.shape[0] - start)
    for g in range(m):
        current[g] = root
    moving = True
    while moving:
        moving = False
        for g in range(m):
            node = current[g]
            x = X[start + g, steps[node, STEP_FEATURE]]
            # Bitwise, not short-circuit: a select, not a branch the core mispredicts.
            go_left = (x <= threshold[node]) | ((x != x) & (steps[node, STEP_MISSING_LEFT] != 0))
            following = steps[node, STEP_LEFT] if go_left else steps[node, STEP_RIGHT]
            moving |= following != node
            current[g] = following
    return m


@borrowing_njit(forceinline=True)
def _lockstep_leaves(X, start, steps, threshold, current, out):
    """``out``: the leaves of :func:`_walk_lockstep_group`'s rows from the root."""
    m = _walk_lockstep_group(X, start, 0, steps, threshold, current)
    for g in range(m):
        out[start + g] = current[g]


@njit(cache=True)
def predict_leaves_lockstep(X, steps, threshold, out):
    """The leaf each row of ``X`` reaches in a tree of numeric splits only (``steps``:
    ``Tree.lockstep_arrays``; ``threshold``: the tree's live thresholds), in the
    calling thread: :data:`LOCKSTEP_ROWS` rows step together until none moves. The rule is
    :mod:`_tree_walk`'s: x <= threshold goes left, NaN follows the node's missing rule."""
    current = np.empty(LOCKSTEP_ROWS, dtype=np.int64)
    for start in range(0, X.shape[0], LOCKSTEP_ROWS):
        _lockstep_leaves(X, start, steps, threshold, current, out)


@njit(parallel=True, cache=True)
def predict_leaves_lockstep_parallel(X, steps, threshold, out):
    """:func:`predict_leaves_lockstep` with its groups of rows on numba's threads."""
    for group in prange((X.shape[0] + LOCKSTEP_ROWS - 1) // LOCKSTEP_ROWS):
        current = np.empty(LOCKSTEP_ROWS, dtype=np.int64)
        _lockstep_leaves(X, group * LOCKSTEP_ROWS, steps, threshold, current, out)


@njit(parallel=True, cache=True)
def predict_forest_lockstep(X, steps, threshold, roots, values, out):
    """:func:`predict_forest` for forests of numeric splits only, through the lock-step
    walk: the trees' ``Tree.lockstep_arrays`` packed in one table
    (``model.tree.forest_lockstep_arrays``), tree t walked from ``roots[t]``. Each task
    takes FOREST_ROWS rows through one tree after another, LOCKSTEP_ROWS of them stepping
    together; per row the trees are added in order, then divided by their number, as
    :func:`predict_forest` does: the same leaves, so the same bits, about twice as fast
    (250,000 rows through 30 trees of depth 10: 0.21 s against 0.44 s)."""
    n_rows, n_outputs = X.shape[0], values.shape[1]
    for block in prange((n_rows + FOREST_ROWS - 1) // FOREST_ROWS):
        first = block * FOREST_ROWS
        end = min(n_rows, first + FOREST_ROWS)
        current = np.empty(LOCKSTEP_ROWS, dtype=np.int64)
        for i in range(first, end):
            for c in range(n_outputs):
                out[i, c] = 0.0
        for t in range(roots.shape[0]):
            for start in range(first, end, LOCKSTEP_ROWS):
                # A view ending at the block's end, so a group stops there.
                m = _walk_lockstep_group(X[:end], start, roots[t], steps, threshold, current)
                for g in range(m):
                    for c in range(n_outputs):
                        out[start + g, c] += values[current[g], c]
        for i in range(first, end):
            for c in range(n_outputs):
                out[i, c] /= roots.shape[0]


@njit(cache=True)
def breadth_first_order(children_left, children_right, multiway, opened, root):
    """The ids of a tree's nodes reached from ``root`` through ``opened`` nodes, breadth
    first, each node's children consecutively (a multiway node's children are
    ``children_left..children_right``, a binary node's those two): model.Tree.pruned's
    numbering, in one pass instead of numpy calls per level. ``root`` is 0 but in a
    forest grown together, whose trees are the subtrees of several roots."""
    order = np.empty(children_left.shape[0], dtype=np.int64)
    order[0] = root
    head = 0
    tail = 1
    while head < tail:
        node = order[head]
        head += 1
        if not opened[node]:
            continue
        if multiway[node]:
            for child in range(children_left[node], children_right[node] + 1):
                order[tail] = child
                tail += 1
        else:
            order[tail] = children_left[node]
            order[tail + 1] = children_right[node]
            tail += 2
    return order[:tail]


@njit(cache=True)
def level_wise_order(children_left, children_right, multiway, root):
    """The ids of a tree's nodes in the order level-wise growth numbers them: level by
    level, the children of the level's binary splits first, then those of its multiway
    splits (the grower splits each kind of a level in one pass, binary first), each
    group in the order of its parents, each node's children consecutively. Without
    multiway splits, :func:`breadth_first_order`'s order."""
    order = np.empty(children_left.shape[0], dtype=np.int64)
    order[0] = root
    level_start = 0
    tail = 1
    while level_start < tail:
        level_end = tail
        for multiway_pass in (False, True):
            for h in range(level_start, level_end):
                node = order[h]
                if children_left[node] < 0 or multiway[node] != multiway_pass:
                    continue
                if multiway_pass:
                    for child in range(children_left[node], children_right[node] + 1):
                        order[tail] = child
                        tail += 1
                else:
                    order[tail] = children_left[node]
                    order[tail + 1] = children_right[node]
                    tail += 2
        level_start = level_end
    return order[:tail]


def _forest_steps(args):
    """Rows times trees of a forest's walk (the rows of ``out``, the last argument: X
    may be a CSR tuple; the trees' roots, argument 6)."""
    return args[-1].shape[0] * args[6].size


def _forest_lockstep_steps(args):
    """Rows times trees of a forest's lock-step walk (arguments 0 and 3)."""
    return args[0].shape[0] * args[3].size


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())

# The tree walk is not among them: Tree.apply picks predict_leaves or its serial twin by
# the batch's rows (model.tree.PARALLEL_MIN_ROWS).
predict_forest = SerialWhenSmall(predict_forest, _forest_steps)
predict_forest_lockstep = SerialWhenSmall(predict_forest_lockstep, _forest_lockstep_steps)
compilation.watch(
    {
        kernel.__name__: kernel.serial
        for kernel in (
            predict_forest,
            predict_forest_lockstep,
        )
    }
)
