"""The absolute-error split search (issue 22, scikit-learn's criterion="absolute_error").

Node error: sum w |y - m| about the node's weighted median m (scikit-learn's convention:
the smallest sorted target whose cumulative weight exceeds half the total, the mid-point
with the one before where that one's cumulative weight is exactly half). Checked here
against a brute-force search written with np.sort and against scikit-learn's trees.

The estimators do not offer criterion="absolute_error" yet: only the compiled search
(gpu_tree.kernels.cpu_absolute_error) exists; they still refuse it.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.tree import DecisionTreeRegressor as SkDecisionTreeRegressor

from gpu_tree import DecisionTreeClassifier, DecisionTreeRegressor
from gpu_tree.kernels.cpu_absolute_error import (
    best_absolute_error_split,
    node_median_and_error,
)


def weighted_median(y, w):
    order = np.argsort(y, kind="stable")
    sorted_y = np.sort(y, kind="stable")
    cumulative = np.cumsum(w[order])
    half = 0.5 * cumulative[-1]
    k = int(np.searchsorted(cumulative, half, side="right"))
    if k > 0 and cumulative[k - 1] == half:
        return 0.5 * (sorted_y[k - 1] + sorted_y[k])
    return sorted_y[k]


def absolute_error(y, w):
    return float(np.sum(w * np.abs(y - weighted_median(y, w))))


def brute_force_split(x, y, w, min_samples_leaf=1):
    """(improvement, lowest value going left) of the best split; ties: lowest threshold."""
    parent = absolute_error(y, w)
    best, best_value = -np.inf, None
    for value in np.unique(x)[:-1]:
        left = x <= value
        if min(left.sum(), (~left).sum()) < min_samples_leaf:
            continue
        gain = parent - absolute_error(y[left], w[left]) - absolute_error(y[~left], w[~left])
        if gain > best + 1e-9 * max(1.0, abs(parent)):
            best, best_value = gain, value
    return best, best_value


def best_root_split(X, y, w, min_samples_leaf=1):
    """(feature, threshold) of the best split over every feature: lowest feature on ties."""
    best, feature, threshold = -np.inf, -1, np.nan
    for j in range(X.shape[1]):
        gain, thr, _ = best_absolute_error_split(X[:, j], y, w, min_samples_leaf, 0.0)
        if gain > best + 1e-9 * max(1.0, abs(gain)):
            best, feature, threshold = gain, j, thr
    return feature, threshold


@pytest.mark.parametrize("weighted", [False, True])
def test_median_and_error_match_brute_force(weighted):
    rng = np.random.default_rng(1)
    for _ in range(200):
        n = int(rng.integers(1, 25))
        y = rng.integers(0, 5, n).astype(float)  # many ties
        w = rng.integers(1, 4, n).astype(float) if weighted else np.ones(n)
        median, error = node_median_and_error(y, w)
        assert median == weighted_median(y, w)
        assert error == pytest.approx(absolute_error(y, w), abs=1e-9)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("min_samples_leaf", [1, 3])
def test_split_matches_brute_force(weighted, min_samples_leaf):
    rng = np.random.default_rng(2)
    for _ in range(150):
        n = int(rng.integers(2, 30))
        x = rng.integers(0, 6, n).astype(float)
        y = rng.normal(size=n).round(1)
        w = rng.uniform(0.5, 3.0, n) if weighted else np.ones(n)
        gain, threshold, parent = best_absolute_error_split(x, y, w, min_samples_leaf, 0.0)
        assert parent == pytest.approx(absolute_error(y, w), abs=1e-9)
        expected, value = brute_force_split(x, y, w, min_samples_leaf)
        if value is None:
            assert gain == -np.inf
            continue
        assert gain == pytest.approx(expected, abs=1e-9)
        above = np.unique(x)[np.unique(x) > value][0]
        assert value <= threshold < above
        assert threshold == 0.5 * (value + above)


def test_min_weight_leaf_refuses_light_children():
    x = np.arange(6.0)
    y = np.array([0.0, 0.0, 0.0, 5.0, 5.0, 5.0])
    w = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 10.0])
    gain, threshold, _ = best_absolute_error_split(x, y, w, 1, 0.0)
    assert threshold == 2.5 and gain > 0
    gain, threshold, _ = best_absolute_error_split(x, y, w, 1, 4.0)
    assert threshold == 3.5  # a left side of rows 0-2 weighs 3 only; 0-3 weighs 4


@pytest.mark.parametrize("weighted", [False, True])
def test_leaf_values_and_impurities_match_scikit_learn(weighted):
    """A node's weighted median and mean absolute deviation are scikit-learn's
    tree_.value and tree_.impurity of the same rows (ties and weights included)."""
    rng = np.random.default_rng(3)
    for _ in range(40):
        n = int(rng.integers(2, 20))
        X = rng.integers(0, 3, (n, 1)).astype(float)
        y = rng.integers(0, 4, n).astype(float)
        w = rng.integers(1, 4, n).astype(float) if weighted else np.ones(n)
        sk = SkDecisionTreeRegressor(criterion="absolute_error", max_depth=1)
        sk.fit(X, y, sample_weight=w)
        tree = sk.tree_
        for node in range(tree.node_count):
            rows = sk.apply(X) == node if tree.children_left[node] < 0 else None
            if node == 0:
                rows = np.ones(n, dtype=bool)
            if rows is None:
                continue
            median, error = node_median_and_error(y[rows], w[rows])
            assert median == pytest.approx(tree.value[node, 0, 0])
            assert error / w[rows].sum() == pytest.approx(tree.impurity[node], abs=1e-12)


def _datasets():
    X, y = load_diabetes(return_X_y=True)
    yield X.astype(np.float32), y
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 5)).astype(np.float32)
    yield X, X[:, 0] * 2 + np.abs(X[:, 3]) + rng.standard_t(2, size=300)


@pytest.mark.parametrize("data", list(_datasets()), ids=["diabetes", "random"])
def test_root_split_matches_scikit_learn(data):
    X, y = data
    X64 = X.astype(np.float64)
    w = np.ones(y.size)
    sk = SkDecisionTreeRegressor(criterion="absolute_error", min_samples_leaf=5, random_state=0)
    sk.fit(X, y)
    feature, threshold = best_root_split(X64, y, w, min_samples_leaf=5)
    assert feature == sk.tree_.feature[0]
    assert threshold == pytest.approx(sk.tree_.threshold[0], rel=1e-12)
    # Each child's median and mean absolute deviation too.
    for child, rows in (
        (sk.tree_.children_left[0], X64[:, feature] <= threshold),
        (sk.tree_.children_right[0], X64[:, feature] > threshold),
    ):
        median, error = node_median_and_error(y[rows], w[rows])
        assert median == pytest.approx(sk.tree_.value[child, 0, 0])
        assert error / rows.sum() == pytest.approx(sk.tree_.impurity[child])


@pytest.mark.parametrize("Estimator", [DecisionTreeRegressor, DecisionTreeClassifier])
def test_estimators_refuse_it_for_now(Estimator):
    X = np.arange(20.0).reshape(10, 2)
    y = np.arange(10) % 2
    with pytest.raises(ValueError, match="criterion='absolute_error'"):
        Estimator(criterion="absolute_error").fit(X, y)
