"""The grower's node bookkeeping, driven directly: the stopping rules checked before any
split search, the per-node state children inherit, and monotonic clipping."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_tree.data.stats import StatsLayout
from gpu_tree.growing.grower import GrowthParams
from gpu_tree.growing.node_table import EPSILON, NodeTable
from gpu_tree.growing.random_draws import child_keys
from gpu_tree.growing.splitting import CategoricalSearch

TWO_CLASSES = StatsLayout(True, 2, False)  # unweighted: the channels are class counts


def _table(n_features=3, **params):
    # Classification needs no backend: impurities come from the class counts.
    return NodeTable(None, TWO_CLASSES, GrowthParams(criterion="gini", **params), n_features)


def test_splittable_applies_every_rule_before_a_search():
    table = _table(max_depth=2, min_samples_split=4, min_samples_leaf=2, min_purity=0.9)
    cases = {  # (depth, class counts): splittable
        "open": (0, (5, 5), True),
        "at max_depth": (2, (5, 5), False),
        "below min_samples_split": (0, (2, 1), False),
        "pure": (0, (10, 0), False),
        "purer than min_purity": (0, (19, 1), False),
        "just splittable": (0, (3, 1), True),
    }
    depth = np.array([d for d, _, _ in cases.values()])
    stats = np.array([s for _, s, _ in cases.values()], dtype=TWO_CLASSES.dtype)
    nodes = table.add(depth, stats)
    got = dict(zip(cases, table.splittable(nodes, stats), strict=True))
    assert got == {name: expected for name, (_, _, expected) in cases.items()}


def test_min_samples_leaf_needs_two_leaves_of_rows():
    table = _table(max_depth=5, min_samples_leaf=3)
    stats = np.array([[3, 2], [3, 3]], dtype=TWO_CLASSES.dtype)
    nodes = table.add(np.zeros(2, dtype=np.int64), stats)
    np.testing.assert_array_equal(table.splittable(nodes, stats), [False, True])


def test_added_nodes_carry_values_and_impurities():
    table = _table(max_depth=3)
    stats = np.array([[6, 2], [0, 4]], dtype=TWO_CLASSES.dtype)
    nodes = table.add(np.array([0, 1]), stats)
    tree = table.tree
    np.testing.assert_array_equal(tree.n_node_samples[nodes], [8, 4])
    np.testing.assert_allclose(tree.value[nodes, 0], [[0.75, 0.25], [0.0, 1.0]])
    np.testing.assert_allclose(tree.impurity[nodes], [1 - 0.75**2 - 0.25**2, 0.0])
    assert table.pure_impurity == EPSILON


def test_children_inherit_their_parents_root_and_keys_follow_the_branch():
    table = _table(max_depth=9)
    root_stats = np.array([[4, 4], [2, 6]], dtype=TWO_CLASSES.dtype)
    roots = table.add(np.zeros(2, dtype=np.int64), root_stats)
    table.track(roots, roots, np.array([11, 22], dtype=np.uint64))
    # Enough children to outgrow the arrays several times over.
    parents = np.repeat(roots, 50)
    branches = np.tile(np.arange(50), 2)
    children = table.add(np.ones(100, dtype=np.int64), np.repeat(root_stats, 50, axis=0))
    table.track_children(parents, children, branches)
    np.testing.assert_array_equal(table.root[children], parents)
    expected = child_keys(np.repeat(np.array([11, 22], dtype=np.uint64), 50), branches)
    np.testing.assert_array_equal(table.key[children], expected)
    np.testing.assert_array_equal(table.key[roots], [11, 22])


def test_multiway_used_features_are_inherited_and_grow_with_the_tree():
    categorical = CategoricalSearch(np.array([0, 2]), multiway=True)
    table = _table(n_features=3, max_depth=9, categorical=categorical)
    stats = np.array([[4, 4]], dtype=TWO_CLASSES.dtype)
    root = table.add(np.zeros(1, dtype=np.int64), stats)
    assert table.usable_features(root).all()
    children = table.add(np.ones(100, dtype=np.int64), np.repeat(stats, 100, axis=0))
    table.inherit_used_features(np.repeat(root, 100), children, feature=2)
    grandchild = table.add(np.array([2]), stats)
    table.inherit_used_features(children[-1:], grandchild)
    np.testing.assert_array_equal(table.usable_features(children)[:, 2], False)
    np.testing.assert_array_equal(table.usable_features(grandchild), [[True, True, False]])


def test_without_multiway_splits_every_feature_stays_usable():
    assert _table(max_depth=3).usable_features(np.array([0])) is None


@pytest.mark.parametrize("value, clipped", [(0.9, 0.6), (0.1, 0.2), (0.5, 0.5)])
def test_monotonic_bounds_clip_a_child_s_probability(value, clipped):
    table = _table(n_features=1, max_depth=3, monotonic_cst=np.array([1], dtype=np.int8))
    stats = np.array([[round(10 * (1 - value)), round(10 * value)]], dtype=TWO_CLASSES.dtype)
    node = table.add(np.zeros(1, dtype=np.int64), stats)
    table.track(node, node, 0)
    np.testing.assert_array_equal(table.bounds[node], [[-np.inf, np.inf]])
    table.bounds[node] = (0.2, 0.6)
    table.clip_values(node, stats)
    np.testing.assert_allclose(table.tree.value[node, 0], [[1 - clipped, clipped]])
