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
- ``split_kind``: LEAF, NUMERIC (x <= threshold), and, reserved so that later node kinds
  need no format change, CATEGORICAL_SUBSET (x in a category set) and MULTIWAY (one
  child per category, ID3). ``category_offset`` indexes a node's category words in
  ``category_bitsets``; ``branch_offset``/``n_branches`` index a multiway node's
  children in ``branch_children``. All are -1 / empty for numeric trees.
"""

from __future__ import annotations

import numpy as np

from .kernels import cpu as cpu_kernels

TREE_LEAF = -1
TREE_UNDEFINED = -2

LEAF = 0
NUMERIC = 1
CATEGORICAL_SUBSET = 2
MULTIWAY = 3

_NODE_ARRAYS = {
    "children_left": np.int64,
    "children_right": np.int64,
    "feature": np.int64,
    "threshold": np.float64,
    "bin_threshold": np.int64,
    "impurity": np.float64,
    "n_node_samples": np.int64,
    "weighted_n_node_samples": np.float64,
    "depth": np.int64,
    "missing_go_to_left": np.uint8,
    "split_kind": np.uint8,
    "category_offset": np.int64,
    "branch_offset": np.int64,
    "n_branches": np.int64,
}


class Tree:
    """Struct of arrays for one fitted tree (``n_outputs`` is always 1).

    ``value`` has shape (node_count, 1, n_classes) and holds the weighted class fractions
    for classification (as scikit-learn >= 1.4 does) or, with n_classes == 1, the weighted
    mean target for regression.
    """

    def __init__(self, n_features: int, n_classes: int, capacity: int = 64):
        self.n_features = int(n_features)
        self.n_classes = int(n_classes)  # 1 for regression
        self.n_outputs = 1
        self.node_count = 0
        self._capacity = 0
        for name, dtype in _NODE_ARRAYS.items():
            setattr(self, "_" + name, np.empty(0, dtype=dtype))
        self._value = np.empty((0, 1, self.n_classes))
        self.category_bitsets = np.empty(0, dtype=np.uint64)
        self.branch_children = np.empty(0, dtype=np.int64)
        self._grow(capacity)

    # -- building ---------------------------------------------------------------------
    def _grow(self, capacity):
        if capacity <= self._capacity:
            return
        capacity = max(capacity, 2 * self._capacity)
        for name in _NODE_ARRAYS:
            old = getattr(self, "_" + name)
            new = np.empty(capacity, dtype=old.dtype)
            new[: self.node_count] = old[: self.node_count]
            setattr(self, "_" + name, new)
        value = np.empty((capacity, 1, self.n_classes))
        value[: self.node_count] = self._value[: self.node_count]
        self._value = value
        self._capacity = capacity

    def add_nodes(self, depth, impurity, n_node_samples, weighted_n_node_samples, value):
        """Append leaves (to be split later or not); returns their node ids."""
        n_new = len(depth)
        first = self.node_count
        self._grow(first + n_new)
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
        self._value[sl, 0, :] = value
        self.node_count += n_new
        return np.arange(first, first + n_new)

    def set_numeric_splits(
        self, nodes, feature, threshold, bin_threshold, left, right, missing_go_to_left
    ):
        self._split_kind[nodes] = NUMERIC
        self._feature[nodes] = feature
        self._threshold[nodes] = threshold
        self._bin_threshold[nodes] = bin_threshold
        self._children_left[nodes] = left
        self._children_right[nodes] = right
        self._missing_go_to_left[nodes] = missing_go_to_left

    # -- scikit-learn's array names (views trimmed to node_count) ----------------------
    def __getattr__(self, name):
        # Only reached for names not found normally: the trimmed views of the node arrays.
        if name in _NODE_ARRAYS or name == "value":
            storage = self.__dict__.get("_" + name)
            if storage is not None:
                return storage[: self.node_count]
        raise AttributeError(name)

    @property
    def max_depth(self) -> int:
        return int(self.depth.max()) if self.node_count else 0

    @property
    def n_leaves(self) -> int:
        return int(np.count_nonzero(self.children_left == TREE_LEAF))

    # -- using the tree -----------------------------------------------------------------
    def apply(self, X) -> np.ndarray:
        """Leaf id of each row of X (n_samples, n_features), finite floats."""
        out = np.empty(X.shape[0], dtype=np.int64)
        cpu_kernels.predict_leaves(
            X,
            self.children_left,
            self.children_right,
            self.feature,
            self.threshold,
            self.missing_go_to_left,
            out,
        )
        return out

    def predict(self, X) -> np.ndarray:
        """``value`` of each row's leaf: shape (n_samples, n_classes)."""
        return self.value[self.apply(X), 0, :]

    def decision_path_csr(self, X):
        """(indptr, indices) of the nodes each row passes through, root first."""
        leaves = self.apply(X)
        parent = np.full(self.node_count, -1, dtype=np.int64)
        internal = np.flatnonzero(self.children_left != TREE_LEAF)
        parent[self.children_left[internal]] = internal
        parent[self.children_right[internal]] = internal
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

    def compute_feature_importances(self, normalize: bool = True) -> np.ndarray:
        """Total weighted impurity decrease contributed by each feature."""
        importances = np.zeros(self.n_features)
        internal = np.flatnonzero(self.children_left != TREE_LEAF)
        if internal.size:
            w = self.weighted_n_node_samples
            left = self.children_left[internal]
            right = self.children_right[internal]
            decrease = (
                w[internal] * self.impurity[internal]
                - w[left] * self.impurity[left]
                - w[right] * self.impurity[right]
            )
            np.add.at(importances, self.feature[internal], decrease)
            importances /= w[0]
        if normalize:
            total = importances.sum()
            if total > 0:
                importances /= total
        return importances

    def __getstate__(self):
        state = {k: v for k, v in self.__dict__.items() if not k.startswith("_")}
        for name in _NODE_ARRAYS:
            state[name] = getattr(self, name).copy()
        state["value"] = self.value.copy()
        return state

    def __setstate__(self, state):
        state = dict(state)
        arrays = {name: state.pop(name) for name in list(_NODE_ARRAYS) + ["value"]}
        self.__dict__.update(state)
        for name, array in arrays.items():
            self.__dict__["_" + name] = array
        self._capacity = self.node_count


def assert_tree_equal(a: Tree, b: Tree, impurity_rtol: float = 1e-12, value_rtol: float = 1e-12):
    """Node-for-node equality of two fitted trees (test helper, also for users' checks)."""
    assert a.node_count == b.node_count, f"node_count differs: {a.node_count} != {b.node_count}"
    for name in (
        "children_left",
        "children_right",
        "feature",
        "split_kind",
        "n_node_samples",
        "depth",
    ):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_array_equal(a.threshold, b.threshold, err_msg="threshold")
    np.testing.assert_allclose(a.weighted_n_node_samples, b.weighted_n_node_samples, rtol=1e-12)
    np.testing.assert_allclose(
        a.impurity, b.impurity, rtol=impurity_rtol, atol=1e-12, err_msg="impurity"
    )
    np.testing.assert_allclose(a.value, b.value, rtol=value_rtol, atol=1e-12, err_msg="value")
