"""Post-pruning of a fitted tree: each internal node may be collapsed into a leaf.

Two methods, one engine. Every node t has a cost ``own[t]`` as a leaf; ``branch[t]`` is
the summed ``own`` of the current leaves below t and ``n_leaves[t]`` their number. Collapsing
t makes ``branch[t] = own[t]`` and passes the change up to its ancestors.

- Minimal cost-complexity pruning (weakest-link cutting, Breiman et al.,
  *Classification and Regression Trees*, 1984, ch. 3: ``alpha * size + sum over the
  leaves of I(N)``, with size the number of leaves). The
  cost of a node as a leaf is ``R(t) = W(t) / W(root) * impurity(t)``, from the impurity
  stored in the tree (the split criterion's own). The weakest link is the internal node
  with the smallest effective alpha ``(R(t) - R(T_t)) / (|leaves(T_t)| - 1)``, ties going
  to the node met first depth first (children in order), which is scikit-learn's node
  numbering; it is collapsed, alone, and the alphas of its ancestors updated. The path
  records each collapse, so equal alphas appear once per collapsed node, as in
  scikit-learn. Pruning with ``ccp_alpha`` collapses weakest links while their effective
  alpha is <= ``ccp_alpha`` (a node whose alpha equals ``ccp_alpha`` is pruned).
  Arithmetic follows scikit-learn's order (leaf costs summed up the tree in depth-first
  leaf order, changes passed up one by one), so a tree equal to scikit-learn's gives the
  same path to the last bit.
- Reduced-error pruning (Quinlan, "Simplifying decision trees", 1987): the cost of a node as a leaf is its validation error
  (misclassified validation weight, or weighted squared error); the node whose collapse
  lowers the validation error the most is collapsed first, while no collapse raises it.
"""

from __future__ import annotations

import heapq

import numpy as np

from gpu_tree.data.stats import target_exponent
from gpu_tree.model.tree import MULTIWAY, TREE_LEAF, check_impurities_finite


def depth_first_order(tree) -> np.ndarray:
    """Node ids depth first, each node before its children, children in order (first /
    left child first): scikit-learn's numbering of the same tree."""
    left, right = tree.children_left.tolist(), tree.children_right.tolist()
    multiway = (tree.split_kind == MULTIWAY).tolist()
    order, stack = [], [0]
    while stack:
        node = stack.pop()
        order.append(node)
        if left[node] == TREE_LEAF:
            continue
        if multiway[node]:
            stack.extend(range(right[node], left[node] - 1, -1))
        else:
            stack.extend((right[node], left[node]))
    return np.asarray(order, dtype=np.int64)


class _Collapser:
    """The bottom-up state of a tree being pruned (see the module docstring)."""

    def __init__(self, tree, own):
        self.tree = tree
        n = tree.node_count
        self.parent = tree.parents().tolist()
        self.left, self.right = tree.children_left.tolist(), tree.children_right.tolist()
        self.multiway = (tree.split_kind == MULTIWAY).tolist()
        self.is_leaf = (tree.children_left == TREE_LEAF).tolist()
        self.collapsed = np.zeros(n, dtype=bool)
        self.alive = [True] * n
        self.version = [0] * n  # bumped whenever a node's branch sum changes
        self.rank = np.empty(n, dtype=np.int64)
        order = depth_first_order(tree)
        self.rank[order] = np.arange(n)
        self.rank = self.rank.tolist()
        self.own = np.asarray(own, dtype=np.float64).tolist()

        # Sum the leaves' costs into each ancestor, leaves taken depth first: starting at
        # 0 and adding in that order, the sums come out as scikit-learn's do.
        is_leaf = np.asarray(self.is_leaf)
        leaves = order[is_leaf[order]]
        parent = np.asarray(self.parent)
        own = np.asarray(self.own)
        pair_nodes, pair_leaves = [], []
        node, leaf = parent[leaves], leaves
        while node.size:
            up = node >= 0
            node, leaf = node[up], leaf[up]
            pair_nodes.append(node)
            pair_leaves.append(leaf)
            node = parent[node]
        branch = np.zeros(n)
        n_leaves = is_leaf.astype(np.int64)
        if pair_nodes:
            nodes, sources = np.concatenate(pair_nodes), np.concatenate(pair_leaves)
            by_leaf = np.argsort(np.asarray(self.rank)[sources], kind="stable")
            np.add.at(branch, nodes[by_leaf], own[sources[by_leaf]])
            np.add.at(n_leaves, nodes, 1)
        branch[leaves] = own[leaves]
        self.branch, self.n_leaves = branch.tolist(), n_leaves.tolist()

    def internal(self) -> list:
        """Current internal nodes."""
        return [t for t in range(len(self.own)) if self.alive[t] and not self.is_leaf[t]]

    def children(self, node):
        if self.multiway[node]:
            return range(self.left[node], self.right[node] + 1)
        return (self.left[node], self.right[node])

    def collapse(self, node) -> list:
        """Make ``node`` a leaf; return its ancestors (whose sums changed)."""
        stack = list(self.children(node))
        while stack:
            child = stack.pop()
            self.alive[child] = False
            if not self.is_leaf[child]:
                stack.extend(self.children(child))
        self.is_leaf[node] = True
        self.collapsed[node] = True
        change = self.own[node] - self.branch[node]
        removed = self.n_leaves[node] - 1
        self.branch[node] = self.own[node]
        self.n_leaves[node] = 1
        ancestors = []
        ancestor = self.parent[node]
        while ancestor >= 0:
            self.branch[ancestor] += change
            self.n_leaves[ancestor] -= removed
            self.version[ancestor] += 1
            ancestors.append(ancestor)
            ancestor = self.parent[ancestor]
        return ancestors

    def is_current(self, node, version) -> bool:
        return self.alive[node] and not self.is_leaf[node] and self.version[node] == version

    def pruned_tree(self):
        return self.tree.pruned(self.collapsed) if self.collapsed.any() else self.tree


# -- minimal cost-complexity pruning ----------------------------------------------------------
def _weighted_impurity(tree) -> np.ndarray:
    """R(t): each node's impurity weighted by its fraction of the training weight."""
    return tree.weighted_n_node_samples * tree.impurity / tree.weighted_n_node_samples[0]


def _cut_weakest_links(tree, max_alpha=np.inf, record=None) -> _Collapser:
    """Collapse weakest links one at a time while their effective alpha is <= max_alpha,
    at most down to the root alone; ``record(alpha, R of the tree)`` for the full tree
    (alpha 0) and after each collapse."""
    check_impurities_finite(tree, "cost-complexity pruning")
    state = _Collapser(tree, _weighted_impurity(tree))
    if record is not None:
        record(0.0, state.branch[0])

    def entry(t):
        alpha = (state.own[t] - state.branch[t]) / (state.n_leaves[t] - 1)
        return (alpha, state.rank[t], t, state.version[t])

    heap = [entry(t) for t in state.internal()]
    heapq.heapify(heap)
    while heap:
        alpha, _, node, version = heapq.heappop(heap)
        if not state.is_current(node, version):
            continue  # collapsed, below a collapsed node, or its alpha changed since
        if max_alpha < alpha:
            break
        for ancestor in state.collapse(node):
            heapq.heappush(heap, entry(ancestor))
        if record is not None:
            record(alpha, state.branch[0])
    return state


def cost_complexity_path(tree) -> tuple[np.ndarray, np.ndarray]:
    """(ccp_alphas, impurities) of the pruning sequence, as scikit-learn defines them: the
    full tree (alpha 0) first, then after each collapse the weakest link's effective alpha
    and the total leaf cost R of the pruned tree, ending with the root alone."""
    alphas, impurities = [], []

    def record(alpha, total):
        alphas.append(alpha)
        impurities.append(total)

    _cut_weakest_links(tree, record=record)
    return np.asarray(alphas, dtype=np.float64), np.asarray(impurities, dtype=np.float64)


def cost_complexity_prune(tree, ccp_alpha: float):
    """The subtree minimising ``R + ccp_alpha * n_leaves`` found by weakest-link cutting:
    links are cut while their effective alpha is <= ``ccp_alpha``. Returns ``tree`` itself
    when nothing is cut, else a new compact tree."""
    return _cut_weakest_links(tree, max_alpha=ccp_alpha).pruned_tree()


# -- reduced-error pruning --------------------------------------------------------------------
def validation_errors(tree, X, target, weight, is_classification) -> np.ndarray:
    """Each node's validation error as a leaf: the weight of the validation rows reaching
    it that its value predicts wrongly (classification, ``target`` the class index, -1 for
    labels never seen in training), or their weighted squared error (regression).

    Each row is routed to its leaf once (``tree.apply``); the leaves' sums are then added
    into their ancestors, deepest level first, so memory is O(rows + nodes * classes),
    never rows * depth.
    - Classification: per node, the weighted count of each class and the weight of unseen
      labels; the error is the weight of every class but the one the node's training
      ``value`` predicts (its first largest entry, as ``predict``), plus the unseen weight.
    - Regression: per node t, W = sum w, S = sum w (y - v_t) and E = sum w (y - v_t)^2,
      centred on the node's own value v_t. A leaf's E is summed row by row; a child c
      passes its sums to its parent p shifted by d = v_c - v_p (S + d W and
      E + 2 d S + d^2 W), which stays accurate where sum w y^2 - 2 v sum w y + v^2 W
      would cancel. Several outputs: the sum of their errors. Targets and values are first scaled by one power of two
      (:func:`gpu_tree.data.stats.target_exponent`, 0 but for targets beyond about 1e150)
      so that no square overflows: the errors are then in units of that power squared,
      which reduced-error pruning, comparing them only, does not mind.
    """
    n = tree.node_count
    leaves = tree.apply(X)
    parent = tree.parents()
    depth = tree.depth
    # Internal nodes' sums are built level by level, deepest first: when a level is
    # passed up, every node on it already holds the sums of all its descendants.
    levels = [np.flatnonzero(depth == d) for d in range(int(depth.max(initial=0)), 0, -1)]
    if is_classification:
        n_classes = tree.value.shape[2]
        seen = target >= 0
        counts = np.bincount(
            leaves[seen] * n_classes + target[seen], weights=weight[seen], minlength=n * n_classes
        ).reshape(n, n_classes)
        unseen = np.bincount(leaves[~seen], weights=weight[~seen], minlength=n)
        for nodes in levels:
            np.add.at(counts, parent[nodes], counts[nodes])
            np.add.at(unseen, parent[nodes], unseen[nodes])
        predicted = np.argmax(tree.value[:, 0, :], axis=1)  # lowest class on ties, as predict
        counts[np.arange(n), predicted] = 0.0  # what remains is predicted wrongly
        return counts.sum(axis=1) + unseen
    target = np.asarray(target, dtype=np.float64)
    if tree.n_outputs > 1:  # multi-output: the outputs' errors added up
        return sum(
            _squared_errors(tree.value[:, k, 0], target[:, k], weight, leaves, levels, parent)
            for k in range(tree.n_outputs)
        )
    return _squared_errors(tree.value[:, 0, 0], target, weight, leaves, levels, parent)


def _squared_errors(value, target, weight, leaves, levels, parent) -> np.ndarray:
    """Regression's :func:`validation_errors` of one output: each node's E, its values
    ``value`` (one per node), the rows' ``target`` reaching ``leaves``."""
    n = value.size
    scale = target_exponent(np.concatenate([target, value]), 0.0, float(np.sum(weight)))
    value, target = np.ldexp(value, -scale), np.ldexp(target, -scale)
    residual = target - value[leaves]
    total = np.bincount(leaves, weights=weight, minlength=n)
    first = np.bincount(leaves, weights=weight * residual, minlength=n)
    error = np.bincount(leaves, weights=weight * residual**2, minlength=n)
    for nodes in levels:
        up = parent[nodes]
        shift = value[nodes] - value[up]
        np.add.at(error, up, error[nodes] + 2 * shift * first[nodes] + shift**2 * total[nodes])
        np.add.at(first, up, first[nodes] + shift * total[nodes])
        np.add.at(total, up, total[nodes])
    return error


def reduced_error_prune(tree, errors):
    """Greedy reduced-error pruning from each node's validation error as a leaf.

    Repeatedly collapse the internal node whose collapse lowers the total validation error
    the most; collapses that leave it unchanged are taken too (a smaller tree, equally
    good), and pruning stops when every collapse would raise it. Among equal changes the
    node with the most leaves below it goes first (the smallest tree), then the lowest
    node id. A collapse only ever lowers the gains of the collapsed node's ancestors, so
    when the best gain is negative no later one can be better. Returns ``tree`` itself
    when nothing is collapsed, else a new compact tree.
    """
    state = _Collapser(tree, errors)

    def entry(t):
        gain = state.branch[t] - state.own[t]
        return (-gain, -state.n_leaves[t], t, state.version[t])

    heap = [entry(t) for t in state.internal()]
    heapq.heapify(heap)
    while heap:
        negative_gain, _, node, version = heapq.heappop(heap)
        if not state.is_current(node, version):
            continue
        if negative_gain > 0:
            break
        for ancestor in state.collapse(node):
            heapq.heappush(heap, entry(ancestor))
    return state.pruned_tree()
