"""The fitted tree: one struct of arrays that every backend fills.

Array names follow scikit-learn's ``sklearn.tree._tree.Tree`` (``children_left``,
``children_right``, ``feature``, ``threshold``, ``impurity``, ``n_node_samples``,
``weighted_n_node_samples``, ``value``), so code written against scikit-learn's trees
reads ours. Nodes are numbered level by level (breadth first), root 0.

Beyond scikit-learn's arrays, per node:

- ``bin_threshold``: the histogram bin the split was found at (rows with a bin code
  <= it went left in training); -1 for leaves and exact-mode splits.
- ``depth``: distance from the root.
- ``missing_go_to_left``: where a missing value goes (1 left, 0 right).
- ``split_kind``: LEAF, NUMERIC (x <= threshold goes left), CATEGORICAL_SUBSET (the
  category code x in a set goes left) or MULTIWAY (one child per category, ID3).
- ``category_offset``: a subset node's first word in ``category_bitsets``: the set of
  codes sent left, ``n_category_words`` words per node in the bitset layout of
  :mod:`gpu_tree.data.stats`. Missing values and categories never seen in training
  (NaN codes) follow ``missing_go_to_left``; so do categories absent from the node's
  training rows, which the set includes when missing values go left.
- ``branch_offset``/``n_branches``: a multiway node's child for category code k is
  ``branch_children[branch_offset + k]`` for k < n_branches; entry
  ``branch_offset + n_branches`` is the child of missing values and of categories the
  node did not see (its largest branch). Its children have consecutive ids,
  ``children_left`` (first) to ``children_right`` (last), so "children_left == -1"
  still means a leaf.

Subset and multiway nodes have ``threshold`` -2 (undefined). All of these are -1 /
empty in numeric trees.
"""

from __future__ import annotations

import numpy as np

from gpu_tree.data.sparse import canonical_csr, check_sparse_structure
from gpu_tree.data.stats import BITSET_WORD_DTYPE
from gpu_tree.kernels import python_mode
from gpu_tree.kernels.walk import WALK_NODE_COLUMNS

# The compiled kernels (numba: a second or more to import on a busy machine) are imported
# by the methods that run them (:func:`_kernels`): a model file is read, described and
# exported without them.

TREE_LEAF = -1
TREE_UNDEFINED = -2

LEAF = 0
NUMERIC = 1
CATEGORICAL_SUBSET = 2
MULTIWAY = 3

# Thresholds, impurities, values (class fractions, mean targets) and weighted node sizes
# are float64, as in scikit-learn (the growing statistics are integers: gpu_tree.data.stats;
# the tree keeps their real values).
VALUE_DTYPE = np.float64

# The impurity ``impurity`` holds (and pruning and feature importances use) for each split
# criterion: gain_ratio normalises an entropy decrease; the CART measure is a split score
# with no node impurity of its own, so its nodes report Gini.
NODE_IMPURITY = {
    "gini": "gini",
    "entropy": "entropy",
    "log_loss": "entropy",
    "gain_ratio": "entropy",
    "cart": "gini",
    "misclassification": "misclassification",
    "squared_error": "squared_error",
    "absolute_error": "absolute_error",
}

# The per-node arrays (scikit-learn's names and ours) and their dtypes; ``value`` aside.
NODE_ARRAYS = {
    "children_left": np.int64,
    "children_right": np.int64,
    "feature": np.int64,
    "threshold": VALUE_DTYPE,
    "bin_threshold": np.int64,
    "impurity": VALUE_DTYPE,
    "n_node_samples": np.int64,
    "weighted_n_node_samples": VALUE_DTYPE,
    "depth": np.int64,
    "missing_go_to_left": np.uint8,
    "split_kind": np.uint8,
    "category_offset": np.int64,
    "branch_offset": np.int64,
    "n_branches": np.int64,
}


def scaled_weighted_impurity(weight, impurity):
    """Each node's weight times impurity, as ``(scaled, exponent)`` with
    ``weight * impurity == ldexp(scaled, exponent)``: weights and impurities are each
    scaled by a power of two to at most 1 (exactly), so that the products and their sums
    stay finite whatever their size (a variance near 1e300 times a million rows overflows
    float64). Feature importances and the model loader's check of impurity decreases sum
    these."""
    _, weight_exponent = np.frexp(np.max(weight))
    _, impurity_exponent = np.frexp(np.max(impurity))
    scaled = np.ldexp(weight, -weight_exponent) * np.ldexp(impurity, -impurity_exponent)
    return scaled, int(weight_exponent + impurity_exponent)


def check_impurities_finite(tree, what: str) -> None:
    """Refuse ``what`` (a computation that sums impurities) on a tree whose impurities lie
    beyond float64's range: regression targets spread wider than about 1e154 have
    variances above it, stored as +inf, and targets closer than about 1e-162 ones below
    it, stored as 0 (a split node is never pure, so 0 there can only be such). Their tree
    and predictions are exact all the same: the fit runs on targets scaled by a power of
    two (data.stats.target_exponent)."""
    impurity = tree.impurity
    split = tree.children_left != TREE_LEAF
    beyond = np.flatnonzero(~np.isfinite(impurity) | (split & (impurity == 0)))
    if beyond.size:
        node = int(beyond[0])
        side = "above 1.8e308" if impurity[node] > 0 else "below 5e-324"
        raise ValueError(
            f"{what} is undefined for this tree: node {node}'s impurity lies beyond "
            f"float64's range (a variance {side}); fit on y scaled by a power of two, "
            "which grows the same tree"
        )


# Batches of fewer rows than this are walked in the calling thread. Starting numba's
# threads costs from tens of microseconds on an idle machine to milliseconds on a busy
# one, where a thread waits for a core and the batch waits for its slowest thread. On 2
# cores under load (others' jobs; depth-10 tree), serial against parallel: 1 row 2 against
# 130 us, 1,000 rows 180 against 410 us, 10,000 rows 7.0 against 21.9 ms, 30,000 rows
# 18.5 against 31.3 ms, 100,000 rows 64 against 65 ms: batches up to 10,000 rows no
# slower than scikit-learn's (serial), and large batches in parallel.
#: Rows from which :meth:`~gpu_tree.Tree.apply` walks a batch on numba's threads; a
#: smaller batch is walked in the calling thread.
PARALLEL_MIN_ROWS = 32768
# Batches of at least this many rows of a tree of numeric splits only take the lock-step
# walk (kernels.cpu.prediction.predict_leaves_lockstep, its parallel twin from PARALLEL_MIN_ROWS):
# its node table is a second copy of the tree, packed on first use, worth it for batches.
#: Rows from which :meth:`~gpu_tree.Tree.apply` walks a tree of numeric splits only
#: many rows in lock step (a second node table, packed on first use); smaller batches, a
#: sparse X and trees with categorical splits take the general walk. Both reach the same
#: leaves.
LOCKSTEP_MIN_ROWS = 1024


class Tree:
    """Struct of arrays for one fitted tree.

    ``value`` has shape (node_count, n_outputs, max_n_classes) and holds the weighted
    class fractions for classification (as scikit-learn >= 1.4 does) or, with
    max_n_classes == 1, the weighted mean target of each output for regression
    (``n_outputs`` > 1: multi-output regression). As in scikit-learn, ``max_n_classes`` is
    that int and ``n_classes`` an array of one entry per output: ``array([3])`` for three
    classes, ``array([1])`` for a regressor.

    The walk's node table (:meth:`walk_arrays`) is built once and cached until a building
    method changes the tree. The arrays packed into it (``WALK_NODE_COLUMNS``: the
    children, features, missing rules and category and branch offsets) are read-only by
    their public names, so that a change made there cannot leave stale predictions; the
    others (``threshold``, ``value``, ``impurity``...) are writable views, read afresh by
    every prediction.

    A new tree has no nodes: :meth:`add_nodes` appends leaves, and
    :meth:`set_numeric_splits`, :meth:`set_subset_splits` and :meth:`set_multiway_split`
    turn leaves into splits of the children added for them.

    Parameters
    ----------
    n_features : int
        Columns of the X the tree splits (feature ids run from 0 to ``n_features - 1``);
        :meth:`compute_feature_importances` returns one entry per feature.
    n_classes : int
        Length of ``value``'s last axis, kept as ``max_n_classes``: the number of classes
        (with several outputs, the most classes of any output), 1 for a regressor. The
        ``n_classes`` attribute is scikit-learn's array of one entry per output.
    capacity : int, default=64
        Nodes the arrays have room for at first. Adding nodes beyond it reallocates them,
        to at least twice the room; the ``capacity`` attribute is the room now.
    n_category_words : int, default=1
        Words of 64 bits (stored as int64) of each categorical subset split's set in
        ``category_bitsets``: category code ``k`` at bit ``k % 64`` of word ``k // 64``,
        so codes up to ``64 * n_category_words - 1``.
    n_outputs : int, default=1
        Length of ``value``'s middle axis: the targets fitted together (multi-output
        classification or regression).
    class_counts : sequence of int, optional
        Multi-output classification: the classes of each output (``n_outputs`` entries,
        each at most ``n_classes``); an output's row of ``value`` is padded with zeros
        past its classes. None: every output has ``n_classes`` classes.
    """

    def __init__(
        self,
        n_features: int,
        n_classes: int,
        capacity: int = 64,
        n_category_words: int = 1,
        n_outputs: int = 1,
        class_counts=None,
    ):
        self.n_features = int(n_features)
        self.max_n_classes = int(n_classes)  # value's last axis: 1 for regression
        self.n_outputs = int(n_outputs)  # value's middle axis: one row per output
        # Multi-output classification: each output's classes (its value row is padded
        # with zeros past them); None: every output has max_n_classes.
        self.class_counts = None if class_counts is None else tuple(int(c) for c in class_counts)
        self.n_category_words = int(n_category_words)
        self.node_count = 0
        self._capacity = 0
        for name, dtype in NODE_ARRAYS.items():
            setattr(self, "_" + name, np.empty(0, dtype=dtype))
        self._value = np.empty((0, self.n_outputs, self.max_n_classes), dtype=VALUE_DTYPE)
        self.category_bitsets = np.empty(0, dtype=BITSET_WORD_DTYPE)
        self.branch_children = np.empty(0, dtype=np.int64)
        self._changes = 0  # calls of the building methods: part of the walk cache's key
        self._walk = None  # (key, walk_arrays())
        self._grow(capacity)

    # -- building ---------------------------------------------------------------------
    def _changed(self):
        """Forget the walk's packed arrays (every building method calls this)."""
        self.__dict__["_changes"] = self.__dict__.get("_changes", 0) + 1
        self.__dict__["_walk"] = None

    def _grow(self, capacity):
        if capacity <= self._capacity:
            return
        self._changed()
        capacity = max(capacity, 2 * self._capacity)
        for name in NODE_ARRAYS:
            old = getattr(self, "_" + name)
            new = np.empty(capacity, dtype=old.dtype)
            new[: self.node_count] = old[: self.node_count]
            setattr(self, "_" + name, new)
        value = np.empty((capacity, self.n_outputs, self.max_n_classes), dtype=VALUE_DTYPE)
        value[: self.node_count] = self._value[: self.node_count]
        self._value = value
        self._capacity = capacity

    def add_nodes(self, depth, impurity, n_node_samples, weighted_n_node_samples, value):
        """Append leaves (to be split later or not); returns their node ids.

        Each new node is a leaf: no children, feature and threshold -2 (undefined), no
        category set or branch table, missing values to the right.

        Parameters
        ----------
        depth : array of int, shape (n_new,)
            Each new node's distance from the root; its length is the number of nodes
            added.
        impurity : array of float, shape (n_new,)
            Each node's impurity (the criterion's node impurity: ``NODE_IMPURITY``).
        n_node_samples : array of int, shape (n_new,)
            Training rows that reached each node.
        weighted_n_node_samples : array of float, shape (n_new,)
            Their total sample weight.
        value : array of float
            Each node's value, ``n_new * n_outputs * n_classes`` numbers reshaped to
            (n_new, n_outputs, n_classes): weighted class fractions, or mean targets.

        Returns
        -------
        ndarray of int64
            The new nodes' ids, consecutive after the existing nodes.
        """
        n_new = len(depth)
        first = self.node_count
        self._grow(first + n_new)
        self._changed()
        sl = slice(first, first + n_new)
        self._children_left[sl] = TREE_LEAF
        self._children_right[sl] = TREE_LEAF
        self._feature[sl] = TREE_UNDEFINED
        self._threshold[sl] = TREE_UNDEFINED
        self._bin_threshold[sl] = -1
        self._impurity[sl] = impurity
        self._n_node_samples[sl] = n_node_samples
        self._weighted_n_node_samples[sl] = weighted_n_node_samples
        self._depth[sl] = depth
        self._missing_go_to_left[sl] = 0
        self._split_kind[sl] = LEAF
        self._category_offset[sl] = -1
        self._branch_offset[sl] = -1
        self._n_branches[sl] = 0
        self._value[sl] = np.reshape(value, (n_new, self.n_outputs, self.max_n_classes))
        self.node_count += n_new
        return np.arange(first, first + n_new)

    def set_numeric_splits(
        self, nodes, feature, threshold, bin_threshold, left, right, missing_go_to_left
    ):
        """Numeric splits: a row of each of ``nodes`` goes left where ``x[feature] <=
        threshold``, right where it is greater.

        The arguments other than ``nodes`` are per node (arrays of ``len(nodes)``) or one
        value for them all (numpy broadcasting).

        Parameters
        ----------
        nodes : array of int
            The leaves (from :meth:`add_nodes`) that become splits.
        feature : array of int
            The feature each node splits.
        threshold : array of float
            The split value: ``x <= threshold`` goes left.
        bin_threshold : array of int
            The histogram bin the split was found at (rows with a bin code <= it went
            left in training); -1 for a split found on exact values.
        left, right : array of int
            Each node's two children (already added).
        missing_go_to_left : array of int or bool
            Where a missing value (NaN) goes: 1 left, 0 right.
        """
        self._changed()
        self._split_kind[nodes] = NUMERIC
        self._feature[nodes] = feature
        self._threshold[nodes] = threshold
        self._bin_threshold[nodes] = bin_threshold
        self._children_left[nodes] = left
        self._children_right[nodes] = right
        self._missing_go_to_left[nodes] = missing_go_to_left

    def set_subset_splits(self, nodes, feature, words, left, right, missing_go_to_left):
        """Categorical subset splits: a row of each of ``nodes`` goes left where the
        category code ``x[feature]`` is in the node's set, right where it is not.

        Each node's set is appended to ``category_bitsets`` (its ``category_offset`` the
        first word); ``threshold`` is -2 (undefined) and ``bin_threshold`` -1.

        Parameters
        ----------
        nodes : array of int
            The leaves (from :meth:`add_nodes`) that become splits.
        feature : array of int
            The categorical feature each node splits (one value for all, or per node).
        words : array of int64, shape (len(nodes), n_category_words)
            The sets of codes sent left, one row of bitset words per node (code ``k`` at
            bit ``k % 64`` of word ``k // 64``).
        left, right : array of int
            Each node's two children (already added).
        missing_go_to_left : array of int or bool
            Where missing values go, and categories never seen in training (read as
            missing): 1 left, 0 right.
        """
        self._changed()
        nodes = np.asarray(nodes, dtype=np.int64)
        self._split_kind[nodes] = CATEGORICAL_SUBSET
        self._feature[nodes] = feature
        self._threshold[nodes] = TREE_UNDEFINED
        self._bin_threshold[nodes] = -1
        self._children_left[nodes] = left
        self._children_right[nodes] = right
        self._missing_go_to_left[nodes] = missing_go_to_left
        first = self.category_bitsets.size
        self._category_offset[nodes] = first + self.n_category_words * np.arange(nodes.size)
        words = np.asarray(words, dtype=np.int64).reshape(nodes.size, self.n_category_words)
        self.category_bitsets = np.concatenate([self.category_bitsets, words.ravel()])

    def set_multiway_split(self, node, feature, children, child_of_code, default_child):
        """A multiway node: ``child_of_code[k]`` is the child of category code k; missing
        values and unseen categories go to ``default_child``.

        The node's branch table (``child_of_code`` then ``default_child``) is appended to
        ``branch_children``; ``children_left`` and ``children_right`` become its first
        and last child.

        Parameters
        ----------
        node : int
            The leaf (from :meth:`add_nodes`) that becomes the split.
        feature : int
            The categorical feature it splits.
        children : array of int
            Its children, consecutive ids in order (already added).
        child_of_code : array of int
            The child of each category code 0, 1, ... (``n_branches`` entries); codes
            past its end go to ``default_child``.
        default_child : int
            The child of missing values and of categories the node did not see in
            training.
        """
        table = np.append(np.asarray(child_of_code, dtype=np.int64), default_child)
        self.set_multiway_splits(
            [node], [feature], [children[0]], [children[-1]], table, [len(child_of_code)]
        )

    def set_multiway_splits(self, nodes, feature, first_child, last_child, tables, n_branches):
        """:meth:`set_multiway_split` for several nodes at once; their branch tables are
        appended in the order of ``nodes``.

        Parameters
        ----------
        nodes : array of int
            The leaves that become multiway splits.
        feature : array of int
            Each node's categorical feature.
        first_child, last_child : array of int
            Each node's first and last child (its children are the ids between them).
        tables : array of int
            The nodes' branch tables laid end to end: node j's child of each of its
            ``n_branches[j]`` codes, then its default child.
        n_branches : array of int
            Each node's number of codes in its table.
        """
        self._changed()
        nodes = np.asarray(nodes, dtype=np.int64)
        n_branches = np.asarray(n_branches, dtype=np.int64)
        self._split_kind[nodes] = MULTIWAY
        self._feature[nodes] = feature
        self._threshold[nodes] = TREE_UNDEFINED
        self._bin_threshold[nodes] = -1
        self._children_left[nodes] = first_child
        self._children_right[nodes] = last_child
        self._missing_go_to_left[nodes] = 0
        table_ends = np.cumsum(n_branches + 1)
        self._branch_offset[nodes] = self.branch_children.size + table_ends - (n_branches + 1)
        self._n_branches[nodes] = n_branches
        self.branch_children = np.concatenate(
            [self.branch_children, np.asarray(tables, dtype=np.int64)]
        )

    def children_of(self, node) -> np.ndarray:
        """Child ids of a node, in order (none for a leaf).

        Parameters
        ----------
        node : int
            A node id (0 is the root).

        Returns
        -------
        ndarray of int64
            A binary split's left and right child, a multiway node's children in branch
            order, or an empty array for a leaf.
        """
        first = self.children_left[node]
        if first < 0:
            return np.zeros(0, dtype=np.int64)
        if self.split_kind[node] == MULTIWAY:
            return np.arange(first, self.children_right[node] + 1)
        return np.array([first, self.children_right[node]])

    def parents(self) -> np.ndarray:
        """Parent id of every node (-1 for the root)."""
        parent = np.full(self.node_count, -1, dtype=np.int64)
        internal = np.flatnonzero(self.children_left != TREE_LEAF)
        first, last = self.children_left[internal], self.children_right[internal]
        multiway = self.split_kind[internal] == MULTIWAY
        parent[first] = internal
        parent[last] = internal
        for node, a, b in zip(internal[multiway], first[multiway], last[multiway], strict=True):
            parent[a : b + 1] = node
        return parent

    def pruned(self, collapse, root: int = 0) -> Tree:
        """A compact copy of this tree in which every node marked in ``collapse`` (bool,
        node_count) is a leaf: its descendants are dropped, it keeps its own ``value``,
        ``impurity`` and sample counts (so it predicts what its training rows held).

        The surviving nodes are renumbered breadth first, each node's children
        consecutively (so a multiway node's children stay contiguous and every child's id
        is above its parent's); category sets and branch tables of surviving nodes are
        carried over, those of dropped or collapsed nodes removed.

        Parameters
        ----------
        collapse : array of bool, shape (node_count,)
            The nodes to make leaves (an entry for a leaf, or for a node below a
            collapsed one, changes nothing). A ``ValueError`` for another shape.
        root : int, default=0
            The node the copy starts from (0, the root; in a forest grown together, the
            root of one of its trees: see :meth:`subtree`). Only the nodes below it are
            copied.

        Returns
        -------
        Tree
            The new tree; this one is unchanged.
        """
        collapse = np.asarray(collapse, dtype=bool)
        if collapse.shape != (self.node_count,):
            raise ValueError(f"collapse must have one entry per node ({self.node_count})")
        left, right, kind = self.children_left, self.children_right, self.split_kind
        opened = (left != TREE_LEAF) & ~collapse  # internal nodes that stay internal
        old = _kernels().breadth_first_order(left, right, kind == MULTIWAY, opened, root)
        return self._renumbered(old, opened)

    def _renumbered(self, old, opened) -> Tree:
        """A copy of the nodes ``old`` (each node's children consecutive, every child
        after its parent), node ``old[i]`` numbered i; nodes not ``opened`` are leaves."""
        left, right, kind = self.children_left, self.children_right, self.split_kind
        new_id = np.full(self.node_count, TREE_LEAF, dtype=np.int64)
        new_id[old] = np.arange(old.size)

        out = Tree(
            self.n_features,
            self.max_n_classes,
            capacity=old.size,
            n_category_words=self.n_category_words,
            n_outputs=self.n_outputs,
            class_counts=getattr(self, "class_counts", None),
        )
        out.node_count = old.size
        for name in NODE_ARRAYS:
            getattr(out, "_" + name)[: old.size] = getattr(self, name)[old]
        out._value[: old.size] = self.value[old]

        leaf = ~opened[old]
        out._children_left[: old.size][leaf] = TREE_LEAF
        out._children_right[: old.size][leaf] = TREE_LEAF
        out._feature[: old.size][leaf] = TREE_UNDEFINED
        out._threshold[: old.size][leaf] = TREE_UNDEFINED
        out._bin_threshold[: old.size][leaf] = -1
        out._missing_go_to_left[: old.size][leaf] = 0
        out._split_kind[: old.size][leaf] = LEAF
        out._n_branches[: old.size][leaf] = 0
        inner = np.flatnonzero(~leaf)
        out._children_left[inner] = new_id[left[old[inner]]]
        out._children_right[inner] = new_id[right[old[inner]]]

        # Category sets: one block of n_category_words per surviving subset node.
        out._category_offset[: old.size] = -1
        subset = inner[kind[old[inner]] == CATEGORICAL_SUBSET]
        words = self.n_category_words
        out._category_offset[subset] = words * np.arange(subset.size)
        word_index = self.category_offset[old[subset]][:, None] + np.arange(words)
        out.category_bitsets = self.category_bitsets[word_index.ravel()].astype(BITSET_WORD_DTYPE)

        # Branch tables of surviving multiway nodes, pointing at the new ids, in the
        # nodes' new order.
        out._branch_offset[: old.size] = -1
        multiway = inner[kind[old[inner]] == MULTIWAY]
        sizes = self.n_branches[old[multiway]] + 1
        ends = np.cumsum(sizes)
        out._branch_offset[multiway] = ends - sizes
        entry = np.arange(int(ends[-1]) if ends.size else 0)
        entry += np.repeat(self.branch_offset[old[multiway]] - (ends - sizes), sizes)
        out.branch_children = new_id[self.branch_children[entry]]
        return out

    def breadth_first(self) -> Tree:
        """This tree numbered breadth first (:meth:`pruned`'s order, nothing collapsed)."""
        return self.pruned(np.zeros(self.node_count, dtype=bool))

    def level_wise(self) -> Tree:
        """This tree numbered as level-wise growth numbers it, for nodes added in
        another order: level by level, the children of the level's binary splits, then
        those of its multiway splits, each in their parents' order (breadth first where
        the tree has no multiway split)."""
        left, right = self.children_left, self.children_right
        old = _kernels().level_wise_order(left, right, self.split_kind == MULTIWAY, 0)
        return self._renumbered(old, left != TREE_LEAF)

    def subtree(self, root: int) -> Tree:
        """The tree below node ``root`` (itself the new root), numbered breadth first. A
        forest's trees grow together as one node table with a root per tree
        (gpu_tree.growing.grower.Grower.grow_forest); this takes each one out.

        Parameters
        ----------
        root : int
            The node whose subtree is copied (:meth:`pruned` with nothing collapsed).

        Returns
        -------
        Tree
            The new tree; this one is unchanged.
        """
        return self.pruned(np.zeros(self.node_count, dtype=bool), root=root)

    def walk_arrays(self):
        """The arguments of the tree walk (the CPU and CUDA ``predict_leaves`` kernels)
        between ``X`` and the output, in order: the node table (node_count,
        len(WALK_NODE_COLUMNS)) int64, one row per node holding the arrays named in
        ``WALK_NODE_COLUMNS`` (column indices: ``kernels/_tree_walk.py``), then
        ``threshold``, ``category_bitsets``, ``n_category_words`` and ``branch_children``.

        Built once and kept until the tree changes (packing the table of a fully grown
        tree costs milliseconds, more than predicting a few rows). The key holds, besides
        the building methods' count, what code outside them may replace: the file-format
        reader sets ``node_count`` and the category and branch tables directly (the cache
        holds on to those tables, so that their ids cannot be reused while it lives).
        """
        return self._packed("_walk", self._pack_walk_arrays)

    def lockstep_arrays(self):
        """The arguments of ``kernels.cpu.prediction.predict_leaves_lockstep`` between ``X`` and the
        output: its node table (node_count, STEP_COLUMNS) int64 (a leaf leads back to
        itself) and the live ``threshold``; None where some split is not numeric (the
        general walk takes those). Kept until the tree changes, as :meth:`walk_arrays`."""
        return self._packed("_lockstep", self._pack_lockstep_arrays)

    def _packed(self, name, pack):
        """``pack()``'s arrays, built once and kept until the tree changes (see
        :meth:`walk_arrays` for what the key holds)."""
        key = (
            self.__dict__.get("_changes", 0),
            self.node_count,
            id(self.category_bitsets),
            id(self.branch_children),
        )
        cached = self.__dict__.get(name)
        if cached is None or cached[0] != key:
            tables = (self.category_bitsets, self.branch_children)
            cached = self.__dict__[name] = (key, pack(), tables)
        return cached[1]

    def _pack_lockstep_arrays(self):
        n = self.node_count
        # The general walk's own test of a node's kind (its offsets), not split_kind.
        if np.any(self._category_offset[:n] >= 0) or np.any(self._branch_offset[:n] >= 0):
            return None
        leaf = self._children_left[:n] == TREE_LEAF
        itself = np.arange(n, dtype=np.int64)
        cpu_kernels = _kernels()
        steps = np.empty((n, cpu_kernels.STEP_COLUMNS), dtype=np.int64)
        steps[:, cpu_kernels.STEP_LEFT] = np.where(leaf, itself, self._children_left[:n])
        steps[:, cpu_kernels.STEP_RIGHT] = np.where(leaf, itself, self._children_right[:n])
        steps[:, cpu_kernels.STEP_FEATURE] = np.where(leaf, 0, self._feature[:n])
        steps[:, cpu_kernels.STEP_MISSING_LEFT] = self._missing_go_to_left[:n]
        return steps, self._threshold[:n]

    def _pack_walk_arrays(self):
        n = self.node_count
        nodes = np.empty((n, len(WALK_NODE_COLUMNS)), dtype=np.int64)
        for column, name in enumerate(WALK_NODE_COLUMNS):
            nodes[:, column] = self.__dict__["_" + name][:n]
        return (
            nodes,
            np.ascontiguousarray(self._threshold[:n]),
            np.ascontiguousarray(self.category_bitsets),
            self.n_category_words,
            np.ascontiguousarray(self.branch_children),
        )

    # -- scikit-learn's array names (views trimmed to node_count) ----------------------
    def __getattr__(self, name):
        # Only reached for names not found normally: the trimmed views of the node arrays
        # (read-only where the walk's cached table is built from them: see the class
        # docstring).
        if name in NODE_ARRAYS or name == "value":
            storage = self.__dict__.get("_" + name)
            if storage is not None:
                view = storage[: self.node_count]
                if name in WALK_NODE_COLUMNS:
                    view.flags.writeable = False
                return view
        raise AttributeError(name)

    @property
    def n_classes(self) -> np.ndarray:
        """The classes of each output, as scikit-learn's ``Tree.n_classes``: an intp array
        of shape (n_outputs,), ``array([1])`` for a regressor (a new array on each read;
        the int is ``max_n_classes``)."""
        if getattr(self, "class_counts", None) is not None:
            return np.array(self.class_counts, dtype=np.intp)
        return np.full(self.n_outputs, self.max_n_classes, dtype=np.intp)

    @property
    def max_depth(self) -> int:
        """The depth of the deepest node (0 for a root alone or an empty tree)."""
        return int(self.depth.max()) if self.node_count else 0

    @property
    def capacity(self) -> int:
        """Nodes the tree's arrays have room for (at least ``node_count``), as
        scikit-learn's ``Tree.capacity``."""
        return int(self._capacity)

    @property
    def n_leaves(self) -> int:
        """The number of leaves (nodes with no children)."""
        return int(np.count_nonzero(self.children_left == TREE_LEAF))

    # -- using the tree -----------------------------------------------------------------
    def apply(self, X) -> np.ndarray:
        """Leaf id of each row of X (n_samples, n_features), finite floats or NaN.

        Batches of :data:`~gpu_tree.model.tree.PARALLEL_MIN_ROWS` rows or more are walked
        on numba's threads, smaller ones in this thread; from
        :data:`~gpu_tree.model.tree.LOCKSTEP_MIN_ROWS` rows, a tree of numeric splits only
        is walked many rows in lock step. Every walk reaches the same leaves. A sparse X
        (canonical CSR: ``data.sparse.check_sparse_X``) is walked as it is, each value a
        binary search of its row's stored columns.

        Parameters
        ----------
        X : ndarray or SciPy sparse matrix of shape (n_samples, n_features)
            The rows, unchecked: a C-contiguous float32 or float64 array (NaN: a missing
            value; a category as its code), as the estimators' checks make it, or a
            sparse matrix (another format than canonical CSR is converted first).

        Returns
        -------
        ndarray of int64, shape (n_samples,)
            The node id of each row's leaf.
        """
        with python_mode.as_python_when_small(X.shape[0]):
            return self._apply(X)

    def _apply(self, X) -> np.ndarray:
        cpu_kernels = _kernels()
        out = np.empty(X.shape[0], dtype=np.int64)
        rows = X.shape[0]
        if not isinstance(X, np.ndarray):  # CSR: the walk takes (indptr, indices, data)
            X = _canonical(X)
            parallel = rows >= PARALLEL_MIN_ROWS
            walk = cpu_kernels.predict_leaves if parallel else cpu_kernels.predict_leaves_serial
            walk(_walked(X), *self.walk_arrays(), out)
            return out
        lockstep = self.lockstep_arrays() if rows >= LOCKSTEP_MIN_ROWS else None
        if lockstep is not None:
            if rows >= PARALLEL_MIN_ROWS:
                cpu_kernels.predict_leaves_lockstep_parallel(X, *lockstep, out)
            else:
                cpu_kernels.predict_leaves_lockstep(X, *lockstep, out)
        elif rows >= PARALLEL_MIN_ROWS:
            cpu_kernels.predict_leaves(X, *self.walk_arrays(), out)
        else:
            cpu_kernels.predict_leaves_serial(X, *self.walk_arrays(), out)
        return out

    def predict(self, X) -> np.ndarray:
        """``value`` of each row's leaf: shape (n_samples, n_classes), or (n_samples,
        n_outputs, n_classes) for several outputs.

        Parameters
        ----------
        X : ndarray or SciPy sparse matrix of shape (n_samples, n_features)
            The rows, as :meth:`apply` takes them.

        Returns
        -------
        ndarray of float64
            Each row's leaf value (:meth:`values_of` of :meth:`apply`'s leaves): class
            fractions, or mean targets (``n_classes`` 1).
        """
        return self.values_of(self.apply(X))

    def values_of(self, nodes) -> np.ndarray:
        """``value`` of each of ``nodes``: shape (len(nodes), n_classes), or (len(nodes),
        n_outputs, n_classes) for several outputs.

        Parameters
        ----------
        nodes : array of int
            Node ids (any, leaves or not; repeats allowed), e.g. :meth:`apply`'s leaves.

        Returns
        -------
        ndarray of float64
            A copy of their values.
        """
        value = self._value[: self.node_count]
        return np.take(value[:, 0, :] if self.n_outputs == 1 else value, nodes, axis=0)

    def classes_of(self, nodes) -> np.ndarray:
        """The class index each of ``nodes`` predicts: its value's first largest entry
        (the lowest class on ties); (len(nodes), n_outputs) for several outputs. For more
        nodes than the tree has, every node's class is found once and looked up (the
        same argmax over the same values).

        Parameters
        ----------
        nodes : array of int
            Node ids (repeats allowed), e.g. :meth:`apply`'s leaves.

        Returns
        -------
        ndarray of int64
            The class indices, shape (len(nodes),) or (len(nodes), n_outputs): indices
            into the estimator's ``classes_`` (of each output).
        """
        values = self._value[: self.node_count]
        if self.n_outputs == 1:
            values = values[:, 0, :]
        if len(nodes) > self.node_count:
            return np.argmax(values, axis=-1).take(nodes, axis=0)
        return np.argmax(np.take(values, nodes, axis=0), axis=-1)

    def decision_path_csr(self, X):
        """(indptr, indices) of the nodes each row passes through, root first.

        Parameters
        ----------
        X : ndarray or SciPy sparse matrix of shape (n_samples, n_features)
            The rows, as :meth:`apply` takes them.

        Returns
        -------
        indptr : ndarray of int64, shape (n_samples + 1,)
            Row ``i``'s path is ``indices[indptr[i]:indptr[i + 1]]``.
        indices : ndarray of int64
            The node ids of all the paths, one after another, each from the root down to
            the row's leaf.
        """
        leaves = self.apply(X)
        parent = self.parents()
        path_length = self.depth[leaves] + 1
        indptr = np.zeros(X.shape[0] + 1, dtype=np.int64)
        np.cumsum(path_length, out=indptr[1:])
        indices = np.empty(indptr[-1], dtype=np.int64)
        node = leaves.copy()
        # Walk all rows up together, one level per step, filling paths from the end.
        for step in range(int(path_length.max(initial=0))):
            active = step < path_length
            indices[indptr[1:][active] - 1 - step] = node[active]
            node[active] = parent[node[active]]
        return indptr, indices

    def decision_path(self, X):
        """Sparse indicator (n_samples, node_count) of the nodes each row of X (checked
        as :meth:`apply` reads it) passes through: a SciPy CSR matrix, as scikit-learn's
        ``Tree.decision_path``.

        Parameters
        ----------
        X : ndarray or SciPy sparse matrix of shape (n_samples, n_features)
            The rows, as :meth:`apply` takes them.

        Returns
        -------
        scipy.sparse.csr_matrix of int64, shape (n_samples, node_count)
            1 at (row, node) for each node on the row's path (:meth:`decision_path_csr`).
        """
        from scipy.sparse import csr_matrix

        indptr, indices = self.decision_path_csr(X)
        data = np.ones(indices.size, dtype=np.int64)
        return csr_matrix((data, indices, indptr), shape=(indptr.size - 1, self.node_count))

    def compute_feature_importances(self, normalize: bool = True) -> np.ndarray:
        """Total weighted impurity decrease contributed by each feature.

        Each split node's decrease is its weighted impurity less its children's (any
        number of children), summed over the nodes that split each feature, as
        scikit-learn's ``Tree.compute_feature_importances``. A ``ValueError`` where the
        tree's impurities lie beyond float64's range (regression targets spread wider
        than about 1e154).

        Parameters
        ----------
        normalize : bool, default=True
            True: the importances divided by their sum, so that they sum to 1 (all zero
            where no split decreased the impurity; a tree with no split: all zero).
            False: the decreases themselves, each node's impurity weighted by its
            fraction of the root's sample weight.

        Returns
        -------
        ndarray of float64, shape (n_features,)
            One importance per feature.
        """
        importances = np.zeros(self.n_features, dtype=VALUE_DTYPE)
        internal = np.flatnonzero(self.children_left != TREE_LEAF)
        if internal.size == 0:
            return importances
        check_impurities_finite(self, "feature importance")
        weighted, exponent = scaled_weighted_impurity(self.weighted_n_node_samples, self.impurity)
        # Every node's weighted impurity leaves its parent's total (any number of
        # children): decrease(parent) = W(parent) - sum over its children of W(child).
        decrease = np.zeros(self.node_count, dtype=VALUE_DTYPE)
        decrease[internal] = weighted[internal]
        parent = self.parents()
        children = np.flatnonzero(parent >= 0)
        np.subtract.at(decrease, parent[children], weighted[children])
        np.add.at(importances, self.feature[internal], decrease[internal])
        if normalize:
            total = importances.sum()
            return importances / total if total > 0 else importances
        return np.ldexp(importances, exponent) / self.weighted_n_node_samples[0]

    def __getstate__(self):
        state = {k: v for k, v in self.__dict__.items() if not k.startswith("_")}
        for name in NODE_ARRAYS:
            state[name] = getattr(self, name).copy()
        state["value"] = self.value.copy()
        state["capacity"] = self._capacity  # as scikit-learn's, unchanged by a pickle
        return state

    def __setstate__(self, state):
        state = dict(state)
        if "n_classes" in state:  # pickled before n_classes became scikit-learn's array
            state["max_n_classes"] = int(state.pop("n_classes"))
        arrays = {name: state.pop(name) for name in list(NODE_ARRAYS) + ["value"]}
        capacity = max(int(state.pop("capacity", 0)), state["node_count"])
        self.__dict__.update(state)
        self.__dict__.setdefault("n_outputs", 1)
        for name, array in arrays.items():
            room = np.empty((capacity, *array.shape[1:]), dtype=array.dtype)
            room[: array.shape[0]] = array
            self.__dict__["_" + name] = room
        self._capacity = capacity
        self._changed()


def per_output(values, n_classes) -> list:
    """Multi-output classification: values of shape (n, n_outputs, most classes), or
    flattened to (n, n_outputs * most classes), as a list of one (n, n_classes[k]) array
    per output (the padding past an output's classes dropped)."""
    values = values.reshape(values.shape[0], len(n_classes), -1)
    return [values[:, k, :n] for k, n in enumerate(n_classes)]


def labels_per_output(classes, codes) -> np.ndarray:
    """Multi-output classification: the labels of class ``codes`` (n_samples,
    n_outputs), ``classes`` one array of labels per output."""
    return np.column_stack([labels.take(codes[:, k]) for k, labels in enumerate(classes)])


def forest_walk_arrays(trees) -> tuple:
    """The trees packed into one walk (``kernels.cpu.prediction.predict_forest``'s arguments between
    ``X`` and ``out``): the node tables one after another, each tree's node ids, category
    offsets and branch tables shifted past the trees before it; then the root of each
    tree and every node's value (n_nodes, n_outputs). The trees share their number of
    category words (a forest's trees do: one fit's categories)."""
    trees = list(trees)
    words = {tree.n_category_words for tree in trees}
    if len(words) != 1:
        raise ValueError(f"the trees' category words differ: {sorted(words)}")
    parts = [tree.walk_arrays() for tree in trees]
    node_start = np.cumsum([0] + [tree.node_count for tree in trees])
    word_start = np.cumsum([0] + [p[2].size for p in parts])
    branch_start = np.cumsum([0] + [p[4].size for p in parts])
    shifted = []
    for k, (nodes, *_rest) in enumerate(parts):
        nodes = nodes.copy()
        for column, shift in (
            (_walk_column("children_left"), node_start[k]),
            (_walk_column("children_right"), node_start[k]),
            (_walk_column("category_offset"), word_start[k]),
            (_walk_column("branch_offset"), branch_start[k]),
        ):
            nodes[:, column] = np.where(nodes[:, column] >= 0, nodes[:, column] + shift, -1)
        shifted.append(nodes)
    return (
        np.concatenate(shifted),
        np.concatenate([p[1] for p in parts]),
        np.concatenate([p[2] for p in parts]).astype(BITSET_WORD_DTYPE),
        words.pop(),
        np.concatenate([p[4] + node_start[k] for k, p in enumerate(parts)]).astype(np.int64),
        node_start[:-1].astype(np.int64),
        # Each node's values in a row: (n_nodes, n_outputs * n_classes).
        np.concatenate([tree.value.reshape(tree.node_count, -1) for tree in trees]),
    )


def forest_lockstep_arrays(trees):
    """The trees' lock-step tables (:meth:`Tree.lockstep_arrays`) packed into one, for
    ``kernels.cpu.prediction.predict_forest_lockstep`` (its arguments between ``X`` and ``out``):
    the node tables one after another, each tree's node ids shifted past the trees
    before it (its leaves still lead back to themselves), the thresholds, the root of
    each tree and every node's value (n_nodes, n_outputs). None where some tree has a
    split that is not numeric: the general walk (:func:`forest_walk_arrays`) takes
    those forests."""
    trees = list(trees)
    parts = [tree.lockstep_arrays() for tree in trees]
    if any(part is None for part in parts):
        return None
    node_start = np.cumsum([0] + [tree.node_count for tree in trees])
    shifted = []
    cpu_kernels = _kernels()
    for k, (steps, _) in enumerate(parts):
        steps = steps.copy()
        for column in (cpu_kernels.STEP_LEFT, cpu_kernels.STEP_RIGHT):
            steps[:, column] += node_start[k]
        shifted.append(steps)
    return (
        np.concatenate(shifted),
        np.concatenate([threshold for _, threshold in parts]),
        node_start[:-1].astype(np.int64),
        # Each node's values in a row: (n_nodes, n_outputs * n_classes).
        np.concatenate([tree.value.reshape(tree.node_count, -1) for tree in trees]),
    )


def predict_forest_lockstep(packed, X) -> np.ndarray:
    """:func:`predict_forest` through the lock-step walk: ``packed`` is
    :func:`forest_lockstep_arrays`' result (the same leaves, so the same bits)."""
    out = np.empty((X.shape[0], packed[-1].shape[1]), dtype=np.float64)
    with python_mode.as_python_when_small(X.shape[0] * packed[2].size):
        _kernels().predict_forest_lockstep(X, *packed, out)
    return out


def predict_forest(packed, X) -> np.ndarray:
    """The trees' leaf values averaged for each row of X (host, as ``Tree.apply`` takes
    it): ``packed`` is :func:`forest_walk_arrays`' result. One compiled parallel loop
    over the rows walks every tree (the serial twin on small batches). A sparse X
    (canonical CSR) is walked as it is."""
    out = np.empty((X.shape[0], packed[-1].shape[1]), dtype=np.float64)
    with python_mode.as_python_when_small(X.shape[0] * packed[5].size):
        _kernels().predict_forest(_walked(X), *packed, out)
    return out


def _canonical(X):
    """A SciPy sparse X as the walk reads it: canonical CSR (each row's columns sorted,
    the binary search needs it), X itself where it is one already (the estimators' check
    made it so); another format, unsorted or duplicate columns (tree_.apply called on
    any matrix) are converted, never read wrongly. Its index arrays are checked first
    (``check_sparse_structure``): the walk, and SciPy's own canonical-format check, read
    them unchecked."""
    check_sparse_structure(X)
    canonical = (
        X.format == "csr"
        and X.indices.dtype == np.int64
        and X.indptr.dtype == np.int64
        and X.data.dtype in (np.float32, np.float64)
        and X.has_canonical_format
    )
    return X if canonical else canonical_csr(X)


def _walked(X):
    """X as the walk kernels take it: a dense array, or a CSR matrix's (indptr, indices,
    data)."""
    return X if isinstance(X, np.ndarray) else (X.indptr, X.indices, X.data)


def _walk_column(name) -> int:
    return WALK_NODE_COLUMNS.index(name)


def _kernels():
    """The CPU prediction kernels (gpu_tree.kernels.cpu.prediction), imported on first use."""
    from gpu_tree.kernels.cpu import prediction

    return prediction
