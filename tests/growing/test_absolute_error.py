"""The absolute-error split search (issue 22, scikit-learn's criterion="absolute_error").

Node error: sum w |y - m| about the node's weighted median m (scikit-learn's convention:
the smallest sorted target whose cumulative weight exceeds half the total, the mid-point
with the one before where that one's cumulative weight is exactly half). Checked here
against a brute-force search written with np.sort and against scikit-learn's trees,
from the compiled search of one feature (gpu_tree.kernels.cpu.absolute_error) to the
estimators' trees and forests (criterion="absolute_error").
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse
from sklearn.datasets import load_diabetes
from sklearn.tree import DecisionTreeRegressor as SkDecisionTreeRegressor

import gpu_tree
from gpu_tree import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreeRegressor,
    ExtraTreesRegressor,
    RandomForestRegressor,
    assert_tree_equal,
)
from gpu_tree.backends.cuda import cuda_status
from gpu_tree.data.binning import SparseCodes
from gpu_tree.data.stats import (
    fixed_point_exponent,
    from_fixed_point,
    regression_centre,
    to_fixed_point,
)
from gpu_tree.growing import grower as grower_module
from gpu_tree.kernels import _median_errors
from gpu_tree.kernels._split_scan import plain_product
from gpu_tree.kernels.cpu.absolute_error import (
    _side_error,
    _target_ranks,
    best_absolute_error_split,
    node_median_and_error,
)
from gpu_tree.model.export.text import export_text

CUDA_USABLE, CUDA_REASON, _ = cuda_status()


def fixed_point(y, w):
    """What the kernels sum, as RowData makes it: the fixed-point weights and weighted
    targets, and their scales (gpu_tree.data.stats)."""
    weight_exponent = fixed_point_exponent(w)
    weight = to_fixed_point(w, weight_exponent)
    weighted = from_fixed_point(weight, weight_exponent) * y
    sum_exponent = fixed_point_exponent(weighted)
    scales = np.ldexp(1.0, -np.array([weight_exponent, sum_exponent]))
    return weight, to_fixed_point(weighted, sum_exponent), scales


def median_and_error(y, w):
    """The compiled weighted median and absolute error of one node's rows."""
    return node_median_and_error(y, *fixed_point(y, w))


def split_of(x, y, w, min_samples_leaf=1, min_weight_leaf=0.0, missing=None):
    """The compiled search of one feature: (improvement, threshold, parent error,
    missing_left); the threshold the mid-point of the values the split falls between
    (+inf: every present row left, the missing ones right). Ties within the estimators'
    rounding tolerance (1e-12 of the node's error) go to the lowest threshold."""
    sorted_y, rank_of = (a[None] for a in _target_ranks(y))  # one output
    tolerance = 1e-12 * median_and_error(y, w)[1]
    if missing is None:
        missing = np.zeros(y.size, dtype=bool)
    weight, sums, scales = fixed_point(y, w)
    gain, low, high, missing_left, parent = best_absolute_error_split(
        x,
        missing,
        rank_of,
        sorted_y,
        weight,
        sums[None],
        scales,
        min_samples_leaf,
        min_weight_leaf,
        tolerance,
    )
    threshold = np.inf if np.isnan(high) else 0.5 * (low + high)
    return gain, threshold, parent, missing_left


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
        gain, thr, _, _ = split_of(X[:, j], y, w, min_samples_leaf)
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
        median, error = median_and_error(y, w)
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
        gain, threshold, parent, _ = split_of(x, y, w, min_samples_leaf)
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
    gain, threshold, _, _ = split_of(x, y, w, 1, 0.0)
    assert threshold == 2.5 and gain > 0
    gain, threshold, _, _ = split_of(x, y, w, 1, 4.0)
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
            median, error = median_and_error(y[rows], w[rows])
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
        median, error = median_and_error(y[rows], w[rows])
        assert median == pytest.approx(sk.tree_.value[child, 0, 0])
        assert error / rows.sum() == pytest.approx(sk.tree_.impurity[child])


# -- missing values in the search of one feature ------------------------------------------
def _gain_of(x, y, w, missing, threshold, missing_left):
    """Brute force: the improvement of one split (present x <= threshold left)."""
    left = np.where(missing, missing_left, x <= threshold)
    if left.all() or not left.any():
        return -np.inf
    return (
        absolute_error(y, w) - absolute_error(y[left], w[left]) - absolute_error(y[~left], w[~left])
    )


@pytest.mark.parametrize("weighted", [False, True])
def test_split_with_missing_values_matches_brute_force(weighted):
    """Missing rows on either side of every split, and the split of every present row
    left, every missing one right: the best improvement is brute force's, and the
    chosen split (threshold, side of the missing rows) really has it."""
    rng = np.random.default_rng(5)
    for _ in range(300):
        n = int(rng.integers(2, 25))
        x = rng.integers(0, 5, n).astype(float)
        missing = rng.random(n) < 0.3
        y = rng.normal(size=n).round(1)
        w = rng.uniform(0.5, 3.0, n) if weighted else np.ones(n)
        gain, threshold, _, missing_left = split_of(x, y, w, missing=missing)
        present = np.unique(x[~missing])
        candidates = [(v, side) for v in present[:-1] for side in (False, True)]
        if missing.any() and present.size:
            candidates.append((np.inf, False))
        gains = [_gain_of(x, y, w, missing, v, side) for v, side in candidates]
        best = max(gains, default=-np.inf)
        if best == -np.inf:
            assert gain == -np.inf
            continue
        assert gain == pytest.approx(best, abs=1e-9)
        assert _gain_of(x, y, w, missing, threshold, missing_left) == pytest.approx(best, abs=1e-9)


def test_missing_values_follow_the_bigger_side_where_a_node_has_none():
    # No missing row in training: missing values go to the side of more present rows.
    x = np.arange(6.0)
    y = np.array([0.0, 0.0, 5.0, 5.0, 5.0, 5.0])
    assert split_of(x, y, np.ones(6))[3] is False or not split_of(x, y, np.ones(6))[3]
    y = np.array([0.0, 0.0, 0.0, 0.0, 5.0, 5.0])
    assert split_of(x, y, np.ones(6))[3]


# -- the estimators ------------------------------------------------------------------------
def _node_rows(estimator, X):
    """Each node's rows (bool, (n_nodes, n_samples)) from the decision path."""
    return estimator.decision_path(X).toarray().T.astype(bool)


def _best_gain_by_brute_force(X, y, w, min_samples_leaf):
    """The best improvement of any split of these rows (every feature, both sides of the
    missing rows, lowest threshold on ties is not needed: gains only)."""
    best = -np.inf
    for j in range(X.shape[1]):
        x = X[:, j]
        missing = np.isnan(x)
        present = np.unique(x[~missing])
        candidates = [(v, side) for v in present[:-1] for side in (False, True)]
        if missing.any() and present.size:
            candidates.append((np.inf, False))
        for v, side in candidates:
            left = np.where(missing, side, x <= v)
            if min(left.sum(), (~left).sum()) < min_samples_leaf:
                continue
            best = max(best, _gain_of(x, y, w, missing, v, side))
    return best


@pytest.mark.parametrize("splitter", ["best", "hist"])
@pytest.mark.parametrize("weighted", [False, True])
def test_every_node_is_the_best_split_of_its_rows(splitter, weighted):
    """Tie-proof check of whole trees: every split's improvement is the best any split of
    its node's rows has (brute force), every node's value is its rows' weighted median
    and its impurity their mean absolute deviation about it. Features of few distinct
    values: histogram mode's candidates are exact mode's."""
    rng = np.random.default_rng(6)
    X = rng.integers(0, 8, (150, 3)).astype(float)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) + rng.standard_t(2, 150).round(2)
    w = rng.uniform(0.5, 2.0, 150) if weighted else np.ones(150)
    model = DecisionTreeRegressor(
        criterion="absolute_error", splitter=splitter, min_samples_leaf=4, max_depth=5
    ).fit(X, y, sample_weight=w)
    tree = model.tree_
    rows = _node_rows(model, X)
    assert tree.node_count > 7
    for node in range(tree.node_count):
        r = rows[node]
        median = weighted_median(y[r], w[r])
        assert tree.value[node, 0, 0] == pytest.approx(median, rel=1e-12)
        mad = absolute_error(y[r], w[r]) / w[r].sum()
        assert tree.impurity[node] == pytest.approx(mad, rel=1e-9, abs=1e-12)
        assert tree.weighted_n_node_samples[node] == pytest.approx(w[r].sum())
        left = tree.children_left[node]
        if left < 0:
            continue
        right = tree.children_right[node]
        gain = (
            absolute_error(y[r], w[r])
            - absolute_error(y[rows[left]], w[rows[left]])
            - absolute_error(y[rows[right]], w[rows[right]])
        )
        assert gain == pytest.approx(_best_gain_by_brute_force(X[r], y[r], w[r], 4), abs=1e-9)


# -- a dominant sample weight -------------------------------------------------------------
def test_side_error_is_within_an_ulp_of_its_integers_error():
    """A side's error from its integer sums is a difference of terms up to 2**62 units
    that can cancel to a few (one row weighing 1e15 times the others, at the median):
    computed from exact products and carried roundings, it is within an ulp of the exact
    error of those integers, whatever their size; the CPU's compiled helper and the
    simulator's plain Python arithmetic give the same bits."""
    from fractions import Fraction

    python_side_error = _median_errors.make_side_error(lambda function: function, plain_product)
    rng = np.random.default_rng(11)
    checked = 0
    for _ in range(3000):
        w_total = int(rng.integers(1, 2**61))
        w_below = int(rng.integers(0, w_total))
        weight_scale = 2.0 ** -int(rng.integers(0, 62))
        sum_scale = 2.0 ** -int(rng.integers(0, 62))
        # Weighted sums of about median * weight, a few units above it to the median's
        # right and below it to its left: the terms cancel to a few units.
        ratio = float(rng.normal() * 2.0 ** rng.integers(-30, 1))
        median = ratio * sum_scale / weight_scale
        wy_total = int(round(ratio * w_total)) + int(rng.integers(0, 2**12))
        wy_below = int(round(ratio * w_below)) - int(rng.integers(0, 2**12))
        if max(abs(wy_total), abs(wy_total - 2 * wy_below)) >= 2**62:
            continue
        sums = (np.int64(w_below), np.int64(wy_below), np.int64(w_total), np.int64(wy_total))
        error = _side_error(*sums, median, weight_scale, sum_scale)
        assert python_side_error(*sums, median, weight_scale, sum_scale) == error
        exact = Fraction(wy_total - 2 * wy_below) * Fraction(sum_scale) - Fraction(
            median
        ) * Fraction(w_total - 2 * w_below) * Fraction(weight_scale)
        if exact <= 0:
            assert error == 0.0
            continue
        assert abs(Fraction(error) - exact) <= exact * Fraction(2.0**-52)
        checked += 1
    assert checked > 2000


def _dominated_problem(ratio, seed=1, n=60):
    """Rows of weight 1 and one weighing ``ratio`` times more (integers: exact in the
    weight channel's fixed point)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)).round(2)
    y = (3 * X[:, 0] + rng.normal(size=n)).round(2)
    w = np.ones(n)
    w[rng.integers(n)] = ratio
    return X, y, w


def _children_error(X, y, w, feature, threshold):
    left = X[:, feature] <= threshold
    return absolute_error(y[left], w[left]) + absolute_error(y[~left], w[~left])


def _best_children_error(X, y, w):
    """Brute force: the least error of the children of any split."""
    return min(
        _children_error(X, y, w, j, value)
        for j in range(X.shape[1])
        for value in np.unique(X[:, j])[:-1]
    )


def _fixed_point_slack(y, w, n_rows):
    """How far from exact the search's error of ``n_rows`` of a fit's rows can be: it sums
    each row's w (y - centre) rounded to its channel's fixed-point unit, half a unit off
    each (gpu_tree.data.stats); the heavy row makes that unit large."""
    unit = 2.0 ** -fixed_point_exponent(w * (y - regression_centre(y)))
    return n_rows * unit


@pytest.mark.parametrize("splitter", ["best", "hist"])
@pytest.mark.parametrize("ratio", [1e12, 1e15])
def test_a_dominant_weight_leaves_the_best_split_chosen(ratio, splitter):
    """One row weighing 1e12 or 1e15 times each other one: the root's split is the best
    (brute force, to the fixed point's rounding) and no worse than scikit-learn's. The
    node's sums are of the heavy row's size, its errors and their differences of the
    others': a tie tolerance scaled by the sums took, at 1e15, a split of error 172.6
    where 93.6 is the best (95.2 at 1e12)."""
    X, y, w = _dominated_problem(ratio)
    model = DecisionTreeRegressor(criterion="absolute_error", splitter=splitter, max_depth=1)
    tree = model.fit(X, y, sample_weight=w).tree_
    chosen = _children_error(X, y, w, tree.feature[0], tree.threshold[0])
    slack = _fixed_point_slack(y, w, y.size)
    assert chosen <= _best_children_error(X, y, w) + slack
    sk = SkDecisionTreeRegressor(criterion="absolute_error", max_depth=1)
    sk_tree = sk.fit(X, y, sample_weight=w).tree_
    assert chosen <= _children_error(X, y, w, sk_tree.feature[0], sk_tree.threshold[0]) + slack


@pytest.mark.parametrize("ratio", [1e12, 1e15])
def test_a_dominant_weight_every_node_is_the_best_split_of_its_rows(ratio):
    """Deeper, with missing values: every split of the nodes the heavy row passes through
    (and of the others) improves its node as much as the best split of its rows does
    (brute force, both sides of the missing rows), to the fixed point's rounding."""
    X, y, w = _dominated_problem(ratio, seed=4, n=80)
    X[np.random.default_rng(3).random(X.shape) < 0.1] = np.nan
    model = DecisionTreeRegressor(
        criterion="absolute_error", splitter="best", max_depth=3, min_samples_leaf=2
    ).fit(X, y, sample_weight=w)
    tree = model.tree_
    rows = _node_rows(model, X)
    assert tree.node_count > 7
    for node in np.flatnonzero(tree.children_left >= 0):
        r, left, right = rows[node], rows[tree.children_left[node]], rows[tree.children_right[node]]
        gain = (
            absolute_error(y[r], w[r])
            - absolute_error(y[left], w[left])
            - absolute_error(y[right], w[right])
        )
        best = _best_gain_by_brute_force(X[r], y[r], w[r], 2)
        assert gain >= best - _fixed_point_slack(y, w, r.sum()), node


def test_histogram_mode_grows_exact_modes_tree_where_every_value_has_a_bin():
    """Where every distinct value has its own bin the candidates are the same: the same
    tree. With fewer bins than values, histogram mode tries the bin boundaries only (its
    medians and errors are still exact), as for every other criterion."""
    rng = np.random.default_rng(7)
    X = rng.integers(0, 30, (400, 4)).astype(float)
    y = X[:, 1] * 0.5 + rng.standard_t(3, 400)
    params = dict(criterion="absolute_error", min_samples_leaf=10)
    exact = DecisionTreeRegressor(splitter="best", **params).fit(X, y)
    hist = DecisionTreeRegressor(splitter="hist", **params).fit(X, y)
    assert_tree_equal(exact.tree_, hist.tree_)
    coarse = DecisionTreeRegressor(splitter="hist", max_bins=4, **params).fit(X, y).tree_
    split = coarse.children_left >= 0
    assert split.sum() > 3
    for feature in np.unique(coarse.feature[split]):  # 4 bins: 3 boundaries a feature
        assert np.unique(coarse.threshold[split & (coarse.feature == feature)]).size <= 3


def _scikit_learn_cases():
    X, y = load_diabetes(return_X_y=True)
    yield "diabetes", X.astype(np.float32), y, None
    rng = np.random.default_rng(8)
    X = rng.normal(size=(500, 5)).astype(np.float32)
    y = 3 * X[:, 0] + np.abs(X[:, 2]) + rng.standard_t(2, 500)
    yield "weighted", X, y, rng.uniform(0.5, 3.0, 500)
    X = X.copy()
    X[rng.random(X.shape) < 0.15] = np.nan
    # Weighted: unweighted absolute errors tie often (moving a split past rows on the
    # median's far side changes no error), and scikit-learn's order of trying the
    # missing rows' sides breaks such ties apart from ours (its second side's candidates
    # after all of its first's). The tie-proof test above covers unweighted ones.
    yield "missing", X, y, rng.uniform(0.5, 3.0, 500)


@pytest.mark.parametrize("case", list(_scikit_learn_cases()), ids=lambda case: case[0])
def test_grows_scikit_learns_tree(case):
    """Exact mode grows scikit-learn's tree: the same splits (ours numbered breadth
    first), node sizes, medians and impurities, and predictions. min_samples_leaf=10
    keeps apart the splits that would tie (two features sending the same rows left),
    which scikit-learn breaks by its random feature order and we by the lowest feature."""
    _, X, y, w = case
    params = dict(criterion="absolute_error", min_samples_leaf=10, max_depth=8)
    ours = DecisionTreeRegressor(splitter="best", **params).fit(X, y, sample_weight=w)
    theirs = SkDecisionTreeRegressor(random_state=0, **params).fit(X, y, sample_weight=w)

    def nodes(tree):
        return sorted(
            (int(f), float(t), int(n), round(float(i), 9), round(float(v), 9))
            for f, t, n, i, v in zip(
                tree.feature,
                tree.threshold,
                tree.n_node_samples,
                tree.impurity,
                tree.value[:, 0, 0],
                strict=True,
            )
        )

    assert nodes(ours.tree_) == nodes(theirs.tree_)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-12)


@pytest.mark.parametrize(
    "growth",
    [dict(max_leaf_nodes=12), dict(min_impurity_decrease=0.4), dict(ccp_alpha=0.3)],
    ids=["max_leaf_nodes", "min_impurity_decrease", "ccp_alpha"],
)
def test_growth_controls_as_in_scikit_learn(growth):
    """Best-first growth, the minimal impurity decrease (per unit weight of the whole
    data, scikit-learn's definition) and cost-complexity pruning read the absolute
    error as they read every other impurity."""
    X, y = load_diabetes(return_X_y=True)
    X = X.astype(np.float32)
    params = dict(criterion="absolute_error", min_samples_leaf=10, **growth)
    ours = DecisionTreeRegressor(splitter="best", **params).fit(X, y)
    theirs = SkDecisionTreeRegressor(random_state=0, **params).fit(X, y)
    assert ours.get_n_leaves() == theirs.get_n_leaves()
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-12)


def test_the_subtree_finisher_leaves_the_tree_unchanged(monkeypatch):
    # Absolute-error fits grow level-wise only (SubtreeFinisher.available).
    rng = np.random.default_rng(9)
    X = rng.normal(size=(600, 4))
    y = X[:, 0] + rng.standard_t(2, 600)
    trees = []
    for below in (0, 1 << 30):
        monkeypatch.setattr(grower_module, "FINISH_BELOW_ROWS", below)
        monkeypatch.setattr(grower_module, "FINISH_ROOT_BELOW_ROWS", below)
        model = DecisionTreeRegressor(criterion="absolute_error", max_depth=7)
        trees.append(model.fit(X, y).tree_)
    assert_tree_equal(*trees, impurity_rtol=0, value_rtol=0)


def test_forests():
    """A forest of one tree on every row and feature is that tree; a bootstrap forest's
    trees hold medians of their own rows and predict about as scikit-learn's forest."""
    X, y = load_diabetes(return_X_y=True)
    single = RandomForestRegressor(
        n_estimators=1,
        bootstrap=False,
        max_features=None,
        criterion="absolute_error",
        min_samples_leaf=5,
    ).fit(X, y)
    tree = DecisionTreeRegressor(criterion="absolute_error", min_samples_leaf=5).fit(X, y)
    np.testing.assert_array_equal(single.predict(X), tree.predict(X))
    forest = RandomForestRegressor(
        n_estimators=20, criterion="absolute_error", min_samples_leaf=5, random_state=0
    ).fit(X[:300], y[:300])
    again = RandomForestRegressor(
        n_estimators=20, criterion="absolute_error", min_samples_leaf=5, random_state=0
    ).fit(X[:300], y[:300])
    np.testing.assert_array_equal(forest.predict(X[300:]), again.predict(X[300:]))
    from sklearn.ensemble import RandomForestRegressor as SkForest

    theirs = SkForest(
        n_estimators=20, criterion="absolute_error", min_samples_leaf=5, random_state=0
    )
    theirs.fit(X[:300], y[:300])
    assert forest.score(X[300:], y[300:]) > theirs.score(X[300:], y[300:]) - 0.05


def test_extremely_randomised_trees():
    """splitter="random" scores the one drawn threshold of each drawn feature. The draws
    are keyed by the node's path, not by the criterion: with one feature drawn per node
    each node has one candidate, so the absolute-error tree makes the squared-error
    tree's splits, and only the leaves' values (medians) differ."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(400, 4))
    y = X[:, 0] + rng.standard_t(2, 400)
    params = dict(splitter="random", max_features=1, min_samples_leaf=5, random_state=3)
    error = DecisionTreeRegressor(criterion="absolute_error", **params).fit(X, y)
    squared = DecisionTreeRegressor(criterion="squared_error", **params).fit(X, y)
    np.testing.assert_array_equal(error.tree_.feature, squared.tree_.feature)
    np.testing.assert_array_equal(error.tree_.threshold, squared.tree_.threshold)
    leaves = error.apply(X)
    for leaf in np.unique(leaves):
        assert error.tree_.value[leaf, 0, 0] == weighted_median(
            y[leaves == leaf], np.ones(np.sum(leaves == leaf))
        )


def test_extremely_randomised_missing_rows_take_the_better_side():
    rng = np.random.default_rng(12)
    X = rng.normal(size=(300, 3))
    y = X[:, 0] + rng.standard_t(2, 300)
    X[rng.random(X.shape) < 0.2] = np.nan
    model = ExtraTreeRegressor(criterion="absolute_error", min_samples_leaf=5, random_state=0)
    model.fit(X, y)
    tree, w = model.tree_, np.ones(len(y))
    rows = _node_rows(model, X)
    split = np.flatnonzero(tree.children_left >= 0)
    assert split.size > 5
    for node in split:
        r = rows[node]
        x, f = X[r, tree.feature[node]], tree.feature[node]
        missing = np.isnan(x)
        if not missing.any():
            continue
        side = bool(tree.missing_go_to_left[node])
        chosen = _gain_of(x, y[r], w[r], missing, tree.threshold[node], side)
        left = np.where(missing, not side, x <= tree.threshold[node])
        if min(left.sum(), (~left).sum()) < 5:  # the other side breaks min_samples_leaf
            continue
        other = _gain_of(x, y[r], w[r], missing, tree.threshold[node], not side)
        assert chosen >= other - 1e-9, (node, f)


def test_extra_trees_forest_is_about_as_good_as_scikit_learns():
    from sklearn.datasets import make_friedman1
    from sklearn.ensemble import ExtraTreesRegressor as SkExtraTrees

    X, y = make_friedman1(n_samples=1200, noise=1.0, random_state=0)
    ours = ExtraTreesRegressor(n_estimators=20, criterion="absolute_error", random_state=0)
    theirs = SkExtraTrees(n_estimators=20, criterion="absolute_error", random_state=0)
    ours.fit(X[:800], y[:800])
    theirs.fit(X[:800], y[:800])
    assert ours.score(X[800:], y[800:]) > theirs.score(X[800:], y[800:]) - 0.05


def test_monotonic_constraints_as_scikit_learns():
    """Candidates checked on the children's medians, bounds from their mid-point, values
    clipped into them: exact mode grows scikit-learn's constrained tree (weighted, so no
    split ties); every mode and the forests predict monotonically."""
    rng = np.random.default_rng(13)
    X = rng.normal(size=(500, 3))
    y = 2 * X[:, 0] - X[:, 1] + rng.standard_t(2, 500)
    w = rng.uniform(0.5, 2.0, 500)
    cst = [1, -1, 0]
    params = dict(criterion="absolute_error", monotonic_cst=cst, min_samples_leaf=10)
    ours = DecisionTreeRegressor(splitter="best", **params).fit(X, y, sample_weight=w)
    theirs = SkDecisionTreeRegressor(random_state=0, **params).fit(X, y, sample_weight=w)
    assert ours.tree_.node_count == theirs.tree_.node_count
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-12, atol=1e-12)
    models = [
        ours,
        DecisionTreeRegressor(splitter="hist", **params).fit(X, y),
        ExtraTreeRegressor(random_state=0, **params).fit(X, y),
        RandomForestRegressor(n_estimators=5, random_state=0, **params).fit(X, y),
    ]
    for model in models:
        for feature, sign in ((0, 1), (1, -1)):
            lower, higher = X.copy(), X.copy()
            higher[:, feature] += rng.uniform(0.0, 1.0, len(X))
            change = model.predict(higher) - model.predict(lower)
            assert np.all(change * sign >= -1e-12), (type(model).__name__, feature)


def test_model_file_and_exports(tmp_path):
    X, y = load_diabetes(return_X_y=True)
    model = DecisionTreeRegressor(criterion="absolute_error", max_depth=3).fit(X, y)
    path = tmp_path / "model.json"
    model.save(path)
    assert json.loads(path.read_text())  # versioned JSON
    loaded = gpu_tree.load(path)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(loaded.tree_.impurity, model.tree_.impurity)
    assert "absolute_error = " in gpu_tree.export_graphviz(model)
    assert "value: [" in export_text(model)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: DecisionTreeClassifier(criterion="absolute_error"), "regression criterion"),
        (
            lambda: DecisionTreeRegressor(criterion="absolute_error", categorical_features=[0]),
            r"categorical features \[0\]",
        ),
        # Forests check as their trees do (found by tests/quality/sklearn_yardstick.py: they
        # crashed or ignored the limits).
        (
            lambda: RandomForestRegressor(
                n_estimators=2, criterion="absolute_error", categorical_features=[0]
            ),
            r"categorical features \[0\]",
        ),
    ],
    ids=[
        "classifier",
        "categorical",
        "forest-categorical",
    ],
)
def test_what_it_refuses(make, match):
    X = np.arange(40.0).reshape(20, 2) % 7
    y = np.arange(20) % 3
    with pytest.raises(ValueError, match=match):
        make().fit(X, y)


def _sparse_problem(seed=10):
    """Mostly zeros, some negative values, stored NaN (missing values) in one feature;
    heavy-tailed targets and integer weights."""
    rng = np.random.default_rng(seed)
    dense = rng.random((600, 8))
    dense[rng.random(dense.shape) > 0.3] = 0.0
    dense[rng.random(dense.shape) < 0.05] *= -1.0
    dense[::11, 3] = np.nan
    y = 3.0 * dense[:, 0] - dense[:, 1] + rng.standard_t(2, 600)
    weight = rng.integers(1, 4, size=600).astype(float)
    return dense, y, weight


@pytest.fixture
def never_dense(monkeypatch):
    """A sparse X's codes are never written out whole (only nodes' blocks of them)."""

    def refuse(codes):
        raise AssertionError("the sparse codes were made dense")

    monkeypatch.setattr(SparseCodes, "dense", refuse)


def test_sparse_input_in_exact_mode():
    """splitter='best' reads a sparse X dense, and grows the dense X's tree."""
    dense, y, _ = _sparse_problem()
    X = scipy.sparse.csr_matrix(dense)
    params = dict(criterion="absolute_error", splitter="best", min_samples_leaf=5)
    assert_tree_equal(
        DecisionTreeRegressor(**params).fit(X, y).tree_,
        DecisionTreeRegressor(**params).fit(dense, y).tree_,
    )


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize(
    "make",
    [
        lambda: DecisionTreeRegressor(criterion="absolute_error", min_samples_leaf=3),
        lambda: ExtraTreeRegressor(criterion="absolute_error", min_samples_leaf=3, random_state=4),
    ],
    ids=["hist", "random"],
)
def test_sparse_input_grows_the_dense_tree(never_dense, make, fmt):
    """Histogram and random splits on a sparse X (each node's codes read from its rows'
    stored values) grow the dense X's tree, weights and missing values included."""
    dense, y, weight = _sparse_problem()
    X = scipy.sparse.csr_matrix(dense).asformat(fmt)
    tree = make().fit(X, y, sample_weight=weight)
    expected = make().fit(dense, y, sample_weight=weight)
    assert_tree_equal(expected.tree_, tree.tree_, impurity_rtol=0, value_rtol=0)
    assert tree.tree_.node_count > 50
    assert np.any(tree.tree_.feature == 3)  # the feature with missing values is split on
    np.testing.assert_array_equal(tree.predict(X), expected.predict(dense))


@pytest.mark.parametrize("forest_class", [ExtraTreesRegressor, RandomForestRegressor])
def test_forest_on_sparse_input_equals_the_dense_forest(never_dense, forest_class):
    dense, y, _ = _sparse_problem(seed=11)
    X = scipy.sparse.csc_matrix(dense)

    def make():
        return forest_class(
            n_estimators=3, criterion="absolute_error", min_samples_leaf=3, random_state=0
        )

    forest, expected = make().fit(X, y), make().fit(dense, y)
    for a, b in zip(expected.estimators_, forest.estimators_, strict=True):
        assert_tree_equal(a.tree_, b.tree_, impurity_rtol=0, value_rtol=0)
    np.testing.assert_array_equal(forest.predict(X), expected.predict(dense))


# -- the GPU (CUDA under the simulator without one) -----------------------------------------
needs_cuda = pytest.mark.skipif(not CUDA_USABLE, reason=f"CUDA backend not usable: {CUDA_REASON}")


def _gpu_problem(seed, n=200, n_features=3):
    """Rounded targets (ties, and even halves: mid-point medians), some missing values."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]).round(1) * 2 + rng.standard_t(2, size=n).round(1)
    Y = np.column_stack([y, rng.integers(0, 5, n).astype(float)])
    return X, y, Y, rng.uniform(0.5, 3.0, n)


def _assert_same_trees(expected, actual):
    trees = [
        [e.tree_ for e in m.estimators_] if hasattr(m, "estimators_") else [m.tree_]
        for m in (expected, actual)
    ]
    for a, b in zip(*trees, strict=True):
        assert_tree_equal(a, b, impurity_rtol=0, value_rtol=0)


@needs_cuda
@pytest.mark.parametrize(
    "make, outputs, weighted",
    [
        (lambda: DecisionTreeRegressor(max_depth=3, min_samples_leaf=5), 1, False),
        (lambda: DecisionTreeRegressor(max_depth=3), 1, True),
        (lambda: DecisionTreeRegressor(max_depth=3), 2, False),
        (lambda: DecisionTreeRegressor(max_depth=3, monotonic_cst=[1, 0, -1]), 1, False),
        (lambda: DecisionTreeRegressor(max_depth=3, max_features=2, random_state=0), 1, True),
        (lambda: DecisionTreeRegressor(max_depth=3, min_weight_fraction_leaf=0.1), 1, True),
        (lambda: ExtraTreeRegressor(max_depth=3, random_state=0), 1, False),
        (lambda: ExtraTreeRegressor(max_depth=3, random_state=0), 2, True),
        (lambda: RandomForestRegressor(n_estimators=2, max_depth=2, random_state=0), 1, False),
        (lambda: ExtraTreesRegressor(n_estimators=2, max_depth=2, random_state=0), 1, True),
    ],
    ids=[
        "min_samples_leaf",
        "weighted",
        "two-outputs",
        "monotonic",
        "max_features",
        "min_weight_fraction",
        "extra-tree",
        "extra-tree-two-outputs-weighted",
        "forest",
        "extra-trees-weighted",
    ],
)
def test_cuda_grows_the_cpu_tree(make, outputs, weighted):
    """The GPU's search (a thread per node, column and bin, each candidate's sets scanned
    in target order) and its node medians reach the CPU's integers: the same trees, bit
    for bit, medians and impurities included."""
    X, y, Y, w = _gpu_problem(seed=1)
    target, weight = (y if outputs == 1 else Y), (w if weighted else None)

    def fit(device):
        return (
            make()
            .set_params(criterion="absolute_error", max_bins=16, device=device)
            .fit(X, target, sample_weight=weight)
        )

    cpu, cuda = fit("cpu"), fit("cuda")
    assert cuda.device_ == "cuda"
    _assert_same_trees(cpu, cuda)
    np.testing.assert_array_equal(cuda.predict(X), cpu.predict(X))


@needs_cuda
def test_cuda_medians_of_many_ties_and_even_halves():
    """Integer targets from a few values, unweighted: ties at the median and halves of
    equal weight (mid-point medians) in most nodes."""
    rng = np.random.default_rng(7)
    X = rng.integers(0, 6, size=(160, 2)).astype(float)
    y = rng.integers(0, 4, 160).astype(float) + (X[:, 0] > 2)
    params = dict(criterion="absolute_error", max_depth=4, min_samples_leaf=2)
    cpu = DecisionTreeRegressor(device="cpu", **params).fit(X, y)
    cuda = DecisionTreeRegressor(device="cuda", **params).fit(X, y)
    _assert_same_trees(cpu, cuda)
    values = cpu.tree_.value[:, 0, 0]
    assert np.any(values != np.round(values))  # some mid-point medians were met


@needs_cuda
@pytest.mark.parametrize("ratio", [1e12, 1e15])
def test_cuda_grows_the_cpu_tree_under_a_dominant_weight(ratio):
    """The GPU's errors of a node whose sums are a heavy row's, and its tie tolerance,
    are the CPU's: the same tree, whose root split is the best."""
    X, y, w = _dominated_problem(ratio)

    def fit(device):
        model = DecisionTreeRegressor(criterion="absolute_error", max_depth=2, device=device)
        return model.fit(X, y, sample_weight=w)

    cpu, cuda = fit("cpu"), fit("cuda")
    assert cuda.device_ == "cuda"
    _assert_same_trees(cpu, cuda)
    chosen = _children_error(X, y, w, cuda.tree_.feature[0], cuda.tree_.threshold[0])
    assert chosen <= _best_children_error(X, y, w) + _fixed_point_slack(y, w, y.size)


@needs_cuda
@pytest.mark.parametrize(
    "make", [DecisionTreeRegressor, ExtraTreeRegressor], ids=["hist", "random"]
)
def test_cuda_on_sparse_input_grows_the_dense_tree(never_dense, make):
    """A sparse X on the GPU: each row's code read from its stored values (a binary
    search of its stored columns), never the whole X dense."""
    dense, y, weight = (a[:250] for a in _sparse_problem(seed=12))  # the simulator is slow
    params = dict(criterion="absolute_error", max_depth=3, max_bins=16, random_state=0)
    expected = make(device="cpu", **params).fit(dense, y, sample_weight=weight)
    tree = make(device="cuda", **params).fit(
        scipy.sparse.csr_matrix(dense), y, sample_weight=weight
    )
    _assert_same_trees(expected, tree)


@needs_cuda
@pytest.mark.parametrize("n_outputs", [1, 2])
def test_cuda_search_launches_and_copies(monkeypatch, n_outputs):
    """Per searched level: a node launch and a candidate launch per output and one choice
    launch; and only per-(node, feature) winners come back, never the candidates' arrays
    (4 sets x features x bins per node). Once grown, one node launch per output and depth
    measures every node's median."""
    from gpu_tree.kernels.cuda import absolute_error as kernels

    tally = []

    class Counting:
        def __init__(self, name, kernel):
            self.name, self.kernel = name, kernel

        def __getitem__(self, config):
            tally.append(self.name)
            return self.kernel[config]

    for name in ("node_median_errors", "candidate_errors", "choose_splits"):
        monkeypatch.setattr(kernels, name, Counting(name, getattr(kernels, name)))
    from gpu_tree.backends.cuda import CUDAHistogramBackend

    memory_checks = []
    monkeypatch.setattr(
        CUDAHistogramBackend,
        "_check_level_memory",
        lambda self, needed, n_nodes, what="histograms": memory_checks.append((what, needed)),
    )
    rng = np.random.default_rng(3)
    X = rng.normal(size=(150, 8))
    Y = X[:, :n_outputs] + rng.standard_t(2, size=(150, n_outputs))
    depth, n_bins = 3, 32
    model = DecisionTreeRegressor(
        criterion="absolute_error", max_depth=depth, max_bins=n_bins, device="cuda"
    ).fit(X, Y[:, 0] if n_outputs == 1 else Y)
    node_depth = np.zeros(model.tree_.node_count, dtype=int)
    for node in range(model.tree_.node_count):
        for child in (model.tree_.children_left[node], model.tree_.children_right[node]):
            if child >= 0:
                node_depth[child] = node_depth[node] + 1
    assert node_depth.max() == depth
    assert tally.count("choose_splits") == depth
    assert tally.count("candidate_errors") == depth * n_outputs
    assert tally.count("node_median_errors") == (depth + (depth + 1)) * n_outputs
    checked = [needed for what, needed in memory_checks if what == "absolute-error candidates"]
    for level, entry in enumerate(model.fit_stats_[:depth]):
        open_nodes = np.sum(node_depth == entry["level"])
        candidate_bytes = open_nodes * X.shape[1] * n_bins * 4 * 8  # no missing bin here
        assert 0 < 4 * entry["device_to_host_bytes"] < candidate_bytes
        # Checked against the free memory before they are allocated: the four sets'
        # errors and medians, the left sides' counts and weights, 8 bytes each.
        assert checked[level] == open_nodes * X.shape[1] * n_bins * (2 * 4 + 2) * 8


def test_cuda_level_too_big_for_the_gpu_says_what_needs_the_memory():
    """A level whose candidates' arrays do not fit in the free GPU memory is refused
    before anything is allocated, naming them (checked with a stand-in for CuPy: the
    simulator has no device memory to ask about)."""
    from types import SimpleNamespace

    from gpu_tree.backends.cuda import CUDAHistogramBackend

    runtime = SimpleNamespace(memGetInfo=lambda: (1000, 10**9))
    pool = SimpleNamespace(free_bytes=lambda: 24)
    backend = SimpleNamespace(
        xp=SimpleNamespace(
            cuda=SimpleNamespace(runtime=runtime), get_default_memory_pool=lambda: pool
        )
    )
    check = CUDAHistogramBackend._check_level_memory
    check(backend, 1024, 3, "absolute-error candidates")  # exactly what is free
    with pytest.raises(
        MemoryError, match="3 nodes needs 1,025 bytes of absolute-error candidates but 1,024"
    ):
        check(backend, 1025, 3, "absolute-error candidates")


def test_small_searches_run_on_one_thread(monkeypatch):
    """A search through a parallel region or the thread pool for a few rows costs more
    than it saves (a forest's small nodes ran 20-50 times slower on a busy machine,
    threads spinning at a barrier). A level's best splits are one call, on the calling
    thread where its rows are few, else shared out to the pool's threads; a node's drawn
    splits take the serial twin where it is small, the parallel kernel where large."""
    import threading

    from gpu_tree.kernels.cpu import absolute_error as searches
    from gpu_tree.kernels.cpu import launch as cpu_launch

    calls = []

    def recording(function, label):
        def call(*args):
            calls.append(label(function) if callable(label) else label)
            return function(*args)

        return call

    def on_which_thread(function):
        pooled = threading.current_thread().name.startswith("gpu_tree")
        return ("best_level_splits", "pool" if pooled else "caller")

    level = searches.best_level_splits
    monkeypatch.setattr(level, "serial", recording(level.serial, on_which_thread))
    monkeypatch.setattr(cpu_launch, "numba_get_num_threads", lambda: 2)  # a pool on 1 CPU too
    drawn = searches.drawn_absolute_error_splits
    serial = drawn.serial
    monkeypatch.setattr(drawn, "serial", recording(serial, ("drawn", "serial")))
    # The routing is what is checked: "parallel" runs the serial twin here, sparing CI a
    # compile of the parallel kernel that no other test needs.
    monkeypatch.setattr(drawn, "parallel", recording(serial, ("drawn", "parallel")))
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 4))
    y = X[:, 0] + rng.laplace(size=300)

    def fits():
        params = dict(criterion="absolute_error", max_depth=4, device="cpu")
        exact = DecisionTreeRegressor(splitter="best", **params).fit(X, y)
        drawn = ExtraTreeRegressor(random_state=0, **params).fit(X, y)
        return exact, drawn

    expected = fits()
    assert set(calls) == {("best_level_splits", "caller"), ("drawn", "serial")}
    calls.clear()
    monkeypatch.setattr(cpu_launch, "SERIAL_MAX_ELEMENTS", 0)  # every search "large"
    for model, again in zip(expected, fits(), strict=True):
        assert_tree_equal(model.tree_, again.tree_)
    assert {label for _, label in calls} == {"pool", "parallel"}
