"""Tree growth: histogram == exact search, row-order independence and the stopping rules."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _strategies import small_integer_data
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpu_tree.growing.grower as grower_module
from gpu_tree import DecisionTreeClassifier, DecisionTreeRegressor, assert_tree_equal
from gpu_tree.backends.contract import (
    BackendCapabilities,
    CompactHistograms,
    DenseHistogramBackend,
    DenseHistograms,
    HistogramBackend,
)
from gpu_tree.backends.cpu import CPUExactBackend, CPUHistogramBackend
from gpu_tree.backends.cuda import CUDAHistogramBackend, cuda_status
from gpu_tree.backends.factory import make_backend
from gpu_tree.backends.rows import RowData
from gpu_tree.data.stats import StatsLayout, bitset_members
from gpu_tree.growing.criteria import CLASSIFICATION_CRITERIA, split_score
from gpu_tree.growing.grower import Grower, GrowthParams
from gpu_tree.growing.splitting import CategoricalSearch
from gpu_tree.testing import naive_histograms
from gpu_tree.training.binning import bin_features
from gpu_tree.utils.phase_timer import PHASES, PhaseTimer

SPLITTERS = ["hist", "exact"]
HYPOTHESIS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------------------------------
# hist == exact when every feature has at most max_bins distinct values
# ---------------------------------------------------------------------------------------


@HYPOTHESIS
@given(data=small_integer_data(), criterion=st.sampled_from(CLASSIFICATION_CRITERIA))
def test_hist_equals_exact_classification(data, criterion):
    X, y, weight, params = data
    hist = DecisionTreeClassifier(criterion=criterion, splitter="hist", **params)
    exact = DecisionTreeClassifier(criterion=criterion, splitter="exact", **params)
    hist.fit(X, y, sample_weight=weight)
    exact.fit(X, y, sample_weight=weight)
    assert_tree_equal(hist.tree_, exact.tree_)
    np.testing.assert_array_equal(hist.predict_proba(X), exact.predict_proba(X))


@HYPOTHESIS
@given(data=small_integer_data(regression=True))
def test_hist_equals_exact_regression(data):
    X, y, weight, params = data
    hist = DecisionTreeRegressor(splitter="hist", **params).fit(X, y, sample_weight=weight)
    exact = DecisionTreeRegressor(splitter="exact", **params).fit(X, y, sample_weight=weight)
    assert_tree_equal(hist.tree_, exact.tree_)
    np.testing.assert_array_equal(hist.predict(X), exact.predict(X))


@pytest.mark.parametrize("criterion", CLASSIFICATION_CRITERIA)
def test_hist_equals_exact_on_a_larger_dataset(criterion):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 30, size=(400, 5)).astype(float) / 4
    y = (X[:, 0] + rng.integers(0, 4, size=400) > X[:, 1] + 3).astype(int) + (X[:, 2] > 5)
    hist = DecisionTreeClassifier(criterion=criterion, splitter="hist").fit(X, y)
    exact = DecisionTreeClassifier(criterion=criterion, splitter="exact").fit(X, y)
    assert hist.tree_.node_count > 20
    assert_tree_equal(hist.tree_, exact.tree_)


# ---------------------------------------------------------------------------------------
# Row order
# ---------------------------------------------------------------------------------------


def _mixed_data(seed=0, n=240):
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [
            rng.integers(0, 8, size=n),  # few distinct values
            np.round(rng.normal(size=n), 3),  # many distinct values: quantile bins
            rng.integers(0, 3, size=n),
            rng.uniform(-5, 5, size=n),
        ]
    ).astype(float)
    noise = rng.normal(scale=0.5, size=n)
    y_class = ((X[:, 0] > 3) ^ (X[:, 1] + noise > 0)).astype(int) + (X[:, 2] == 2)
    # Quarter-integer targets: sums are exact in any order, so row order cannot even move
    # the last bit of a leaf value.
    y_reg = X[:, 0] * 2 - 0.25 * np.round(4 * X[:, 1]) + np.round(noise)
    return X, y_class, y_reg


@pytest.mark.parametrize("splitter", SPLITTERS)
@pytest.mark.parametrize("criterion", ["gini", "entropy", "gain_ratio", "squared_error"])
def test_predictions_do_not_depend_on_row_order(splitter, criterion):
    X, y_class, y_reg = _mixed_data()
    X_test = _mixed_data(seed=99, n=300)[0]
    if criterion == "squared_error":
        model, y, predict = DecisionTreeRegressor, y_reg, "predict"
    else:
        model, y, predict = DecisionTreeClassifier, y_class, "predict_proba"
    params = {"criterion": criterion, "splitter": splitter, "max_bins": 16, "max_depth": 6}
    reference = model(**params).fit(X, y)
    expected = getattr(reference, predict)(X_test)
    rng = np.random.default_rng(1)
    for _ in range(3):
        order = rng.permutation(X.shape[0])
        permuted = model(**params).fit(X[order], y[order])
        np.testing.assert_array_equal(getattr(permuted, predict)(X_test), expected)
        assert_tree_equal(permuted.tree_, reference.tree_)


# ---------------------------------------------------------------------------------------
# Stopping rules
# ---------------------------------------------------------------------------------------


def _internal(tree):
    return np.flatnonzero(tree.children_left >= 0)


def _leaves(tree):
    return np.flatnonzero(tree.children_left < 0)


@pytest.mark.parametrize("splitter", SPLITTERS)
def test_max_depth(splitter):
    X, y, _ = _mixed_data()
    full = DecisionTreeClassifier(splitter=splitter).fit(X, y)
    assert full.get_depth() > 4
    for depth in (1, 2, 3, 4):
        tree = DecisionTreeClassifier(splitter=splitter, max_depth=depth).fit(X, y).tree_
        assert tree.max_depth == depth
        assert tree.depth.max() == depth
        assert np.all(tree.depth[_internal(tree)] < depth)
        # Children are exactly one level below their parent.
        internal = _internal(tree)
        np.testing.assert_array_equal(
            tree.depth[tree.children_left[internal]], tree.depth[internal] + 1
        )


@pytest.mark.parametrize("splitter", SPLITTERS)
def test_min_samples_split(splitter):
    X, y, _ = _mixed_data()
    full = DecisionTreeClassifier(splitter=splitter).fit(X, y).tree_
    assert np.any(full.n_node_samples[_internal(full)] < 20)  # the rule will matter
    tree = DecisionTreeClassifier(splitter=splitter, min_samples_split=20).fit(X, y).tree_
    assert np.all(tree.n_node_samples[_internal(tree)] >= 20)
    # Impure leaves below the limit exist: they were stopped by the rule.
    leaves = _leaves(tree)
    impure = tree.impurity[leaves] > 0
    assert np.any(impure & (tree.n_node_samples[leaves] < 20))
    assert tree.node_count < full.node_count
    # A float is a fraction of the rows (ceil(0.1 * 240) = 24).
    frac = DecisionTreeClassifier(splitter=splitter, min_samples_split=0.1).fit(X, y).tree_
    assert np.all(frac.n_node_samples[_internal(frac)] >= 24)
    assert np.any(frac.n_node_samples[_internal(frac)] < 30)


@pytest.mark.parametrize("splitter", SPLITTERS)
@pytest.mark.parametrize("criterion", ["gini", "squared_error"])
def test_min_samples_leaf(splitter, criterion):
    X, y_class, y_reg = _mixed_data()
    if criterion == "squared_error":
        model, y = DecisionTreeRegressor, y_reg
    else:
        model, y = DecisionTreeClassifier, y_class
    full = model(criterion=criterion, splitter=splitter).fit(X, y).tree_
    assert full.n_node_samples[_leaves(full)].min() < 7
    tree = model(criterion=criterion, splitter=splitter, min_samples_leaf=7).fit(X, y).tree_
    assert tree.n_node_samples[_leaves(tree)].min() >= 7
    assert tree.node_count > 10  # still a real tree
    # Leaves of exactly the minimum size exist (the bound is tight, not padded).
    assert np.any(tree.n_node_samples[_leaves(tree)] == 7)


@pytest.mark.parametrize("splitter", SPLITTERS)
def test_min_purity(splitter):
    X, y, _ = _mixed_data()
    full = DecisionTreeClassifier(splitter=splitter).fit(X, y).tree_
    purity_full = full.value[:, 0, :].max(axis=1)
    assert np.any(purity_full[_internal(full)] >= 0.8)  # the rule will matter
    tree = DecisionTreeClassifier(splitter=splitter, min_purity=0.8).fit(X, y).tree_
    purity = tree.value[:, 0, :].max(axis=1)
    # Zaki and Meira, Data Mining and Machine Learning, Algorithm 19.1: purity(D) >= pi
    # makes a leaf.
    assert np.all(purity[_internal(tree)] < 0.8)
    leaves = _leaves(tree)
    stopped = leaves[(purity[leaves] >= 0.8) & (purity[leaves] < 1.0)]
    assert stopped.size > 0  # impure leaves stopped by purity
    counts = np.rint(tree.value[stopped, 0, :] * tree.weighted_n_node_samples[stopped, None])
    assert np.all(np.count_nonzero(counts, axis=1) >= 2)  # really impure counts
    assert tree.node_count < full.node_count


@pytest.mark.parametrize("splitter", SPLITTERS)
def test_min_purity_boundary(splitter):
    # 8 of 10 rows in class 0, perfectly separable: purity exactly 0.8.
    X = np.arange(10, dtype=float)[:, None]
    y = np.array([0] * 8 + [1] * 2)
    leaf = DecisionTreeClassifier(splitter=splitter, min_purity=0.8).fit(X, y)
    assert leaf.tree_.node_count == 1
    np.testing.assert_array_equal(leaf.predict(X), np.zeros(10))
    split = DecisionTreeClassifier(splitter=splitter, min_purity=0.81).fit(X, y)
    assert split.tree_.node_count == 3
    assert split.tree_.threshold[0] == 7.5
    np.testing.assert_array_equal(split.predict(X), y)


def _impurity_decrease(tree):
    """N_t/N (I(t) - N_tL/N_t I(tL) - N_tR/N_t I(tR)) of every split, from tree_.impurity."""
    internal = _internal(tree)
    w = tree.weighted_n_node_samples
    left, right = tree.children_left[internal], tree.children_right[internal]
    return (
        w[internal] * tree.impurity[internal]
        - w[left] * tree.impurity[left]
        - w[right] * tree.impurity[right]
    ) / w[0]


def _weighted_scores(tree, criterion, n_classes):
    """N_t/N times the criterion score of every split, recomputed from the node values."""
    internal = _internal(tree)
    w = tree.weighted_n_node_samples
    if criterion == "squared_error":
        return _impurity_decrease(tree)  # from the recorded variances
    layout = StatsLayout(True, n_classes, False)
    stats = tree.value[:, 0, :] * w[:, None]
    left = stats[tree.children_left[internal]]
    right = stats[tree.children_right[internal]]
    return w[internal] / w[0] * split_score(criterion, layout, left, right)


@pytest.mark.parametrize("splitter", SPLITTERS)
@pytest.mark.parametrize("criterion", CLASSIFICATION_CRITERIA + ("squared_error",))
def test_min_impurity_decrease(splitter, criterion):
    X, y_class, y_reg = _mixed_data()
    if criterion == "squared_error":
        model, y, beta = DecisionTreeRegressor, y_reg, 0.05
    else:
        model, y, beta = DecisionTreeClassifier, y_class, 0.01
    n_classes = 3
    full = model(criterion=criterion, splitter=splitter).fit(X, y).tree_
    assert np.any(_weighted_scores(full, criterion, n_classes) < beta)  # the rule will matter
    tree = model(criterion=criterion, splitter=splitter, min_impurity_decrease=beta).fit(X, y).tree_
    assert tree.node_count > 1
    assert tree.node_count < full.node_count
    scores = _weighted_scores(tree, criterion, n_classes)
    assert np.all(scores >= beta - 1e-12), (criterion, scores.min())
    if criterion in ("gini", "entropy", "log_loss", "misclassification"):
        # For the impurity criteria the score is the impurity decrease of tree_.impurity.
        np.testing.assert_allclose(_impurity_decrease(tree), scores, rtol=1e-9, atol=1e-12)
    # A large beta stops at the root.
    stump = model(criterion=criterion, splitter=splitter, min_impurity_decrease=1e3).fit(X, y)
    assert stump.tree_.node_count == 1


def test_min_impurity_decrease_seed_beta_boundary():
    # One perfect split of 8 rows, N * gain = 8 bits: information gain 1 bit.
    X = np.arange(8, dtype=float)[:, None]
    y = np.array([0] * 4 + [1] * 4)
    for splitter in SPLITTERS:
        fit = DecisionTreeClassifier(
            criterion="entropy", splitter=splitter, min_impurity_decrease=1.0
        )
        assert fit.fit(X, y).tree_.node_count == 3  # decrease 1.0 >= beta 1.0
        fit.set_params(min_impurity_decrease=1.0 + 1e-9)
        assert fit.fit(X, y).tree_.node_count == 1


@pytest.mark.parametrize("splitter", SPLITTERS)
def test_max_leaf_nodes_gives_exactly_that_many_leaves(splitter):
    X, y, _ = _mixed_data()
    full = DecisionTreeClassifier(splitter=splitter).fit(X, y)
    assert full.get_n_leaves() > 30
    for k in (2, 3, 5, 8, 13, 30):
        clf = DecisionTreeClassifier(splitter=splitter, max_leaf_nodes=k).fit(X, y)
        assert clf.get_n_leaves() == k
        assert clf.tree_.node_count == 2 * k - 1
    # More leaves allowed than the full tree has: the full tree.
    big = DecisionTreeClassifier(splitter=splitter, max_leaf_nodes=10_000).fit(X, y)
    assert big.get_n_leaves() == full.get_n_leaves()
    np.testing.assert_array_equal(big.predict_proba(X), full.predict_proba(X))


def _best_weighted_gain(X, y, rows, n_total, criterion):
    """Best weighted impurity decrease of one node's rows, from a stump fitted on them."""
    stump = DecisionTreeClassifier(criterion=criterion, splitter="exact", max_depth=1)
    stump.fit(X[rows], y[rows])
    t = stump.tree_
    if t.node_count == 1:
        return -np.inf
    n = rows.size
    return (
        n * t.impurity[0]
        - t.n_node_samples[1] * t.impurity[1]
        - t.n_node_samples[2] * t.impurity[2]
    ) / n_total


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_max_leaf_nodes_expands_the_best_leaf_first(criterion):
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    previous = DecisionTreeClassifier(criterion=criterion, splitter="exact", max_leaf_nodes=2).fit(
        X, y
    )
    for k in range(3, 9):
        current = DecisionTreeClassifier(
            criterion=criterion, splitter="exact", max_leaf_nodes=k
        ).fit(X, y)
        # The k-leaf tree is the (k-1)-leaf tree with one leaf split: the one whose best
        # split decreases the weighted impurity most.
        before = previous.apply(X)
        after = current.apply(X)
        split_leaf = [
            leaf for leaf in np.unique(before) if np.unique(after[before == leaf]).size > 1
        ]
        assert len(split_leaf) == 1
        gains = {
            leaf: _best_weighted_gain(X, y, np.flatnonzero(before == leaf), X.shape[0], criterion)
            for leaf in np.unique(before)
        }
        best = max(gains.values())
        assert gains[split_leaf[0]] == pytest.approx(best, rel=1e-9, abs=1e-12)
        previous = current


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_max_leaf_nodes_matches_scikit_learn_on_iris(criterion):
    sklearn_tree = pytest.importorskip("sklearn.tree")
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    for k in range(2, 10):
        ours = DecisionTreeClassifier(criterion=criterion, splitter="exact", max_leaf_nodes=k).fit(
            X, y
        )
        theirs = sklearn_tree.DecisionTreeClassifier(
            criterion=criterion, max_leaf_nodes=k, random_state=0
        ).fit(X, y)
        assert ours.get_n_leaves() == theirs.get_n_leaves() == k
        np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
        np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-12)
        np.testing.assert_array_equal(
            np.sort(ours.tree_.n_node_samples[_leaves(ours.tree_)]),
            np.sort(theirs.tree_.n_node_samples[theirs.tree_.children_left < 0]),
        )
        # hist mode on iris (< 256 distinct values per feature) builds the same tree.
        hist = DecisionTreeClassifier(criterion=criterion, max_leaf_nodes=k).fit(X, y)
        assert_tree_equal(hist.tree_, ours.tree_)


@pytest.mark.parametrize("splitter", SPLITTERS)
def test_max_features_is_reproducible(splitter):
    rng = np.random.default_rng(3)
    X = rng.integers(0, 10, size=(300, 8)).astype(float)
    y = (X[:, :4].sum(axis=1) + rng.integers(0, 6, size=300) > 22).astype(int)
    params = {"splitter": splitter, "max_features": 3, "max_depth": 6}
    a = DecisionTreeClassifier(random_state=0, **params).fit(X, y)
    b = DecisionTreeClassifier(random_state=0, **params).fit(X, y)
    assert_tree_equal(a.tree_, b.tree_)
    # Refitting the same estimator with an int seed repeats the draws too.
    assert_tree_equal(a.fit(X, y).tree_, b.tree_)
    differ = 0
    for seed in range(1, 8):
        other = DecisionTreeClassifier(random_state=seed, **params).fit(X, y).tree_
        same = other.node_count == a.tree_.node_count and np.array_equal(
            other.feature, a.tree_.feature
        )
        differ += not same
    assert differ > 0
    # Without max_features the seed has no effect.
    full = [
        DecisionTreeClassifier(splitter=splitter, random_state=s).fit(X, y).tree_ for s in (0, 1)
    ]
    assert_tree_equal(*full)


def test_max_features_hist_equals_exact_with_same_seed():
    # Both modes draw the same features per node when they grow the same nodes.
    rng = np.random.default_rng(4)
    X = rng.integers(0, 6, size=(200, 6)).astype(float)
    y = (X[:, 0] + X[:, 3] + rng.integers(0, 3, size=200) > 6).astype(int)
    hist = DecisionTreeClassifier(max_features=2, random_state=7, max_depth=5).fit(X, y)
    exact = DecisionTreeClassifier(max_features=2, random_state=7, max_depth=5, splitter="exact")
    assert_tree_equal(hist.tree_, exact.fit(X, y).tree_)


@pytest.mark.parametrize(
    ("categorical_split", "splitter", "device", "n_seeds"),
    [
        ("binary", "hist", "cpu", 40),
        ("binary", "exact", "cpu", 40),
        ("multiway", "hist", "cpu", 40),
        ("binary", "hist", "cuda", 16),
    ],
)
def test_max_features_draw_binds_categorical_features_too(
    categorical_split, splitter, device, n_seeds
):
    """A categorical feature that decides y and a numeric feature of noise, one feature
    drawn per node: the root may split on the categorical feature only when it was drawn,
    about half the seeds (Binomial(n, 1/2); the bounds are 3.5 standard deviations). A
    search that ignored the draw for categorical columns would take it every time."""
    rng = np.random.default_rng(8)
    category = rng.integers(0, 4, size=400)
    X = np.column_stack([category, rng.normal(size=400)]).astype(float)
    y = np.isin(category, [1, 2]).astype(int)
    params = dict(
        max_features=1,
        max_depth=1,
        categorical_features=[0],
        splitter=splitter,
        categorical_split=categorical_split,
        device=device,
    )
    on_category = sum(
        DecisionTreeClassifier(random_state=seed, **params).fit(X, y).tree_.feature[0] == 0
        for seed in range(n_seeds)
    )
    half, spread = n_seeds / 2, 3.5 * np.sqrt(n_seeds) / 2
    assert half - spread <= on_category <= half + spread, on_category
    # With every feature available the categorical feature always wins.
    assert (
        DecisionTreeClassifier(**{**params, "max_features": None}).fit(X, y).tree_.feature[0] == 0
    )


@pytest.mark.parametrize("splitter", SPLITTERS)
def test_pure_node_is_a_leaf(splitter):
    X = np.array([[1.0], [2.0], [3.0]])
    tree = DecisionTreeClassifier(splitter=splitter).fit(X, [1, 1, 1]).tree_
    assert tree.node_count == 1
    assert tree.impurity[0] == 0.0


# Regression tests: select_splits used to call argmax on an empty candidate axis when a
# batch's histograms had a single bin. In exact mode that is any impure node whose rows
# share one value on every feature (duplicate rows with conflicting labels); in hist
# mode, an all-constant X with an impure target.


@pytest.mark.parametrize("splitter", SPLITTERS)
def test_constant_features_give_a_leaf(splitter):
    tree = DecisionTreeClassifier(splitter=splitter).fit(np.ones((6, 2)), [0, 1, 0, 1, 0, 1]).tree_
    assert tree.node_count == 1
    np.testing.assert_allclose(tree.value[0, 0], [0.5, 0.5])


@pytest.mark.parametrize("splitter", SPLITTERS)
def test_constant_feature_regression_gives_a_leaf(splitter):
    reg = DecisionTreeRegressor(splitter=splitter).fit(np.zeros((2, 1)), [0.0, 1.0])
    assert reg.tree_.node_count == 1
    assert reg.predict(np.zeros((1, 1)))[0] == 0.5


def test_duplicate_rows_with_conflicting_labels_exact():
    # Root splits at 0.5; its left child holds two rows x = 0 with labels 0 and 1.
    X = np.array([[0.0], [0.0], [1.0]])
    y = np.array([0, 1, 1])
    hist = DecisionTreeClassifier(splitter="hist").fit(X, y)
    assert hist.tree_.node_count == 3
    exact = DecisionTreeClassifier(splitter="exact").fit(X, y)
    assert_tree_equal(hist.tree_, exact.tree_)


def test_duplicate_rows_with_conflicting_targets_hist_equals_exact():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(60, 2)).astype(float)  # 9 distinct rows, many duplicates
    y = rng.integers(0, 2, size=60)
    hist = DecisionTreeClassifier(splitter="hist").fit(X, y)
    exact = DecisionTreeClassifier(splitter="exact").fit(X, y)
    assert_tree_equal(hist.tree_, exact.tree_)


def test_duplicate_rows_with_conflicting_targets_regression_hist_equals_exact():
    rng = np.random.default_rng(1)
    X = rng.integers(0, 3, size=(60, 2)).astype(float)
    y = rng.integers(-3, 4, size=60).astype(float)
    hist = DecisionTreeRegressor(splitter="hist").fit(X, y)
    exact = DecisionTreeRegressor(splitter="exact").fit(X, y)
    assert hist.tree_.n_leaves == 9  # one leaf per distinct row: nothing left to split
    assert_tree_equal(hist.tree_, exact.tree_)


@pytest.mark.parametrize("finisher", [True, False], ids=["finisher", "level_wise"])
def test_a_split_improving_exactly_min_impurity_decrease_is_made(finisher, monkeypatch):
    """scikit-learn's rule: a node stays a leaf when improvement + EPSILON <
    min_impurity_decrease. Gini improvement of the root split of this data is 1/5 in
    rational arithmetic; float arithmetic lands a few ulps below 0.2, which the EPSILON
    slack absorbs, so the split is made at exactly 0.2 and not just above. Both
    acceptances hold to it: the subtree finisher's (a tree this small is finished in one
    call) and the level-wise split evaluation's."""
    from fractions import Fraction

    if not finisher:
        monkeypatch.setattr(grower_module, "FINISH_BELOW_ROWS", 0)
        monkeypatch.setattr(grower_module, "FINISH_ROOT_BELOW_ROWS", 0)

    X = np.arange(7.0)[:, None]
    y = np.array([0, 2, 1, 1, 1, 2, 1])
    split = DecisionTreeClassifier(max_depth=1).fit(X, y).tree_
    left = X[:, 0] <= split.threshold[0]

    def gini(labels):
        n = len(labels)
        return 1 - sum(Fraction(int(np.sum(labels == k)), n) ** 2 for k in range(3))

    improvement = (
        gini(y)
        - Fraction(int(left.sum()), 7) * gini(y[left])
        - Fraction(int((~left).sum()), 7) * gini(y[~left])
    )
    assert improvement == Fraction(1, 5)
    at = DecisionTreeClassifier(max_depth=1, min_impurity_decrease=0.2).fit(X, y)
    assert at.tree_.node_count == 3
    above = DecisionTreeClassifier(max_depth=1, min_impurity_decrease=0.2 + 1e-9).fit(X, y)
    assert above.tree_.node_count == 1


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_max_features_keeps_searching_when_the_drawn_features_cannot_split(device):
    """As in scikit-learn: a node whose drawn features hold no valid split (here the
    constant feature 0) searches the other features, so every seed splits the root on
    feature 1."""
    X = np.column_stack([np.zeros(40), np.arange(40.0)])
    y = (np.arange(40) >= 20).astype(int)
    for seed in range(12 if device == "cpu" else 6):
        tree = (
            DecisionTreeClassifier(max_features=1, max_depth=1, random_state=seed, device=device)
            .fit(X, y)
            .tree_
        )
        assert tree.node_count == 3 and tree.feature[0] == 1, seed


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_multiway_split_reaching_exactly_max_leaf_nodes_is_made(device):
    X = np.repeat([0.0, 1.0, 2.0], 5)[:, None]
    y = np.repeat([0, 1, 2], 5)
    params = dict(categorical_features=[0], categorical_split="multiway", device=device)
    three = DecisionTreeClassifier(max_leaf_nodes=3, **params).fit(X, y)
    assert three.get_n_leaves() == 3 and three.score(X, y) == 1.0
    two = DecisionTreeClassifier(max_leaf_nodes=2, **params).fit(X, y)
    assert two.get_n_leaves() == 1  # three branches would exceed two leaves


# ---------------------------------------------------------------------------------------
# The Grower driven directly, through the backend contract (as scikit-learn tests its
# TreeGrower): a naive pure-numpy backend grows the same tree as the CPU backend
# ---------------------------------------------------------------------------------------


class NaiveBackend:
    """The grower's contract (HistogramBackend, DenseHistogramBackend) with obvious loops:
    a node id per row, histograms by :func:`gpu_tree.testing.naive_histograms`, compact
    histograms as the dense ones' non-empty bins, partitions row by row."""

    xp = np
    capabilities = BackendCapabilities(device="cpu", exact=False, subtraction=True)

    def __init__(self, binned, row_data, small_node_size=0):
        self.X_binned = np.asarray(binned.X_binned)
        self.bin_lower, self.bin_upper = binned.bin_lower, binned.bin_upper
        self.missing_bin = binned.missing_bin
        self.row_data = row_data
        self.small_node_size = small_node_size
        self.node_of_row = np.zeros(row_data.n_samples, dtype=np.int64)

    def _rows(self, node):
        return np.flatnonzero(self.node_of_row == node)

    def root_stats(self):
        return self.row_data.row_stats.sum(axis=0)

    def node_sizes(self, nodes):
        return np.array([self._rows(node).size for node in nodes], dtype=np.int64)

    def squared_deviation_sums(self, nodes, means):
        """Each node's sum of w * (y - mean)**2, row by row (math.fsum); 0 for equal targets."""
        centred, weight = self.row_data.centred, self.row_data.weight
        sums = []
        for node, mean in zip(nodes, means, strict=True):
            rows = self._rows(node)
            constant = np.ptp(centred[rows]) == 0
            sums.append(0.0 if constant else math.fsum(weight[rows] * (centred[rows] - mean) ** 2))
        return np.array(sums)

    def histograms(self, nodes, out=None):
        n_bins = self.bin_lower.shape[1]
        hist = np.concatenate(
            [
                naive_histograms(
                    self.X_binned,
                    self._rows(node),
                    [0],
                    [self._rows(node).size],
                    self.row_data.row_stats,
                    n_bins,
                )
                for node in nodes
            ]
        )
        if out is not None:
            out[...] = hist
            hist = out
        return DenseHistograms(hist, self.bin_lower[None], self.bin_upper[None])

    def empty_histograms(self, n_nodes):
        layout = self.row_data.layout
        return np.empty((n_nodes, *self.bin_lower.shape, layout.n_channels), dtype=layout.dtype)

    def subtract(self, hist, parent_slots, child_hist, out):
        for k, parent in enumerate(parent_slots):
            out[k] = hist[parent] - child_hist[k]

    def compact_histograms(self, nodes):
        dense = self.histograms(nodes).hist
        layout = self.row_data.layout
        n_nodes, n_features, n_bins, _ = dense.shape
        if self.missing_bin >= 0:
            missing, dense = dense[:, :, self.missing_bin].copy(), dense[:, :, : self.missing_bin]
        else:
            missing = layout.zeros((n_nodes, n_features))
        width = max(1, min(int(self.node_sizes(nodes).max()), dense.shape[2]))
        hist = layout.zeros((n_nodes, n_features, width))
        code = np.full((n_nodes, n_features, width), -1, dtype=np.int64)
        lower = np.full((n_nodes, n_features, width), np.inf)
        upper = np.full((n_nodes, n_features, width), np.inf)
        for k in range(n_nodes):
            for f in range(n_features):
                present = np.flatnonzero(layout.count(dense[k, f]) > 0)
                hist[k, f, : present.size] = dense[k, f, present]
                code[k, f, : present.size] = present
                lower[k, f, : present.size] = self.bin_lower[f, present]
                upper[k, f, : present.size] = self.bin_upper[f, present]
        return CompactHistograms(hist, lower, upper, code, missing)

    def partition(
        self,
        nodes,
        feature,
        bin_threshold,
        threshold,
        missing_left,
        left_children,
        right_children,
        category_sets=None,
        *,
        sizes,
        child_means=None,
    ):
        n_left = np.zeros(len(nodes), dtype=np.int64)
        for k, node in enumerate(nodes):
            rows = self._rows(node)
            for row in rows:
                code = int(self.X_binned[feature[k], row])
                if code == self.missing_bin:
                    left = bool(missing_left[k])
                elif category_sets is not None and category_sets[0][k]:
                    left = code in bitset_members(category_sets[1][k])
                else:
                    left = code <= bin_threshold[k]
                self.node_of_row[row] = left_children[k] if left else right_children[k]
                n_left[k] += left
        np.testing.assert_array_equal(n_left, sizes[0])  # what the histograms counted

    def partition_multiway(self, nodes, feature, child_of_code, default_child, children, *, sizes):
        for k, node in enumerate(nodes):
            for row in self._rows(node):
                code = int(self.X_binned[feature[k], row])
                known = code != self.missing_bin and code < child_of_code.shape[1]
                self.node_of_row[row] = child_of_code[k, code] if known else default_child[k]
        for ids, expected in zip(children, sizes, strict=True):
            np.testing.assert_array_equal(self.node_sizes(ids), expected)


def _grower_data(task, with_categories):
    rng = np.random.default_rng(11)
    n = 160
    X = np.column_stack(
        [
            rng.integers(0, 9, size=n),
            np.round(rng.normal(size=n), 2),
            rng.integers(0, 4, size=n),
        ]
    ).astype(float)
    signal = (X[:, 0] > 4) ^ (X[:, 1] > 0) | (X[:, 2] == 2)
    if with_categories:
        X[rng.random(n) < 0.1, 1] = np.nan  # missing values, learned per split
    if task == "regression":
        layout = StatsLayout(False, 0, has_count_channel=False)
        y = 2.0 * signal + np.round(rng.normal(size=n))
        row_data = RowData(layout, np.ones(n), y=y)
    else:
        layout = StatsLayout(True, 3, has_count_channel=True)  # weighted rows
        y = (signal + (rng.random(n) < 0.2)).astype(np.int64)
        row_data = RowData(layout, rng.integers(1, 3, size=n).astype(float), y_class=y)
    n_categories = np.array([0, 0, 4 if with_categories else 0])
    _, binned = bin_features(X, max_bins=16, n_categories=n_categories)
    return binned, row_data


@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("categories", [None, "binary", "multiway"])
@pytest.mark.parametrize("small_node_size", [0, 16])
@pytest.mark.parametrize("max_leaf_nodes", [None, 9])
def test_grower_with_a_naive_backend_grows_the_cpu_backends_tree(
    task, categories, small_node_size, max_leaf_nodes
):
    binned, row_data = _grower_data(task, categories is not None)
    criterion = "squared_error" if task == "regression" else "entropy"
    categorical = None
    if categories is not None:
        categorical = CategoricalSearch(np.array([2]), multiway=categories == "multiway")
    params = dict(
        criterion=criterion, max_depth=5, max_leaf_nodes=max_leaf_nodes, categorical=categorical
    )
    naive = NaiveBackend(binned, row_data, small_node_size)
    assert isinstance(naive, DenseHistogramBackend)
    grown = Grower(naive, row_data.layout, GrowthParams(**params), 3).grow()
    cpu = make_backend(binned, row_data, device="cpu", splitter="hist")
    expected = Grower(cpu, row_data.layout, GrowthParams(**params), 3).grow()
    assert expected.node_count > 7
    if categories is not None:
        assert np.any(expected.feature == 2)
    assert_tree_equal(grown, expected, impurity_rtol=0, value_rtol=0)


def test_a_declared_capability_is_a_method_there():
    from gpu_tree.backends.cpu_sparse import CPUSparseHistogramBackend
    from gpu_tree.backends.cuda import CUDAHistogramBackend
    from gpu_tree.backends.cuda_sparse import CUDASparseHistogramBackend

    backends = [
        CPUHistogramBackend,
        CPUExactBackend,
        CPUSparseHistogramBackend,
        CUDAHistogramBackend,
        CUDASparseHistogramBackend,
    ]
    for backend in backends:
        capabilities = backend.capabilities
        assert not capabilities.compiled_search or callable(backend.score_splits), backend
        assert not capabilities.subtree_finisher or callable(backend.finish_subtrees), backend
        assert capabilities.row_leaves and callable(backend.leaf_of_row), backend
    # the finisher reads dense codes: sparse input grows level by level
    assert CPUHistogramBackend.capabilities.subtree_finisher
    assert CPUExactBackend.capabilities.subtree_finisher  # on value ranks
    assert not CPUSparseHistogramBackend.capabilities.subtree_finisher
    assert not CUDAHistogramBackend.capabilities.subtree_finisher
    assert all(b.capabilities.compiled_search for b in backends)
    # the compiled categorical search reads host histograms: the CPU backends'
    cpu = {CPUHistogramBackend, CPUExactBackend, CPUSparseHistogramBackend}
    for backend in backends:
        assert backend.capabilities.compiled_categorical_search == (backend in cpu), backend


def test_the_backends_implement_the_contract():
    binned, row_data = _grower_data("classification", False)
    X = np.zeros((row_data.n_samples, 3))
    cpu = make_backend(binned, row_data, device="cpu", splitter="hist")
    exact = make_backend(X, row_data, device="cpu", splitter="exact")
    for backend, capabilities in (
        (
            cpu,
            BackendCapabilities(
                "cpu",
                exact=False,
                subtraction=True,
                drawn_histograms=True,
                compiled_search=True,
                subtree_finisher=True,
                compiled_categorical_search=True,
                row_leaves=True,
            ),
        ),
        (
            exact,
            BackendCapabilities(
                "cpu",
                exact=True,
                subtraction=False,
                compiled_search=True,
                subtree_finisher=True,
                compiled_categorical_search=True,
                row_leaves=True,
            ),
        ),
    ):
        assert isinstance(backend, HistogramBackend)
        assert backend.capabilities == capabilities
        # The subtraction capability is the promise of the dense histogram calls.
        assert isinstance(backend, DenseHistogramBackend) == capabilities.subtraction
    assert isinstance(cpu, CPUHistogramBackend) and isinstance(exact, CPUExactBackend)
    with pytest.raises(ValueError, match="exact search has no dense histograms"):
        BackendCapabilities("cpu", exact=True, subtraction=True)
    with pytest.raises(ValueError, match="drawn features' histograms are dense"):
        BackendCapabilities("cpu", exact=False, subtraction=False, drawn_histograms=True)


def _classification_data_on(device):
    """``_grower_data("classification", False)`` with its bin codes on ``device`` (the
    test is skipped where the CUDA backend is not usable)."""
    usable, reason, xp = cuda_status()
    if device == "cuda" and not usable:
        pytest.skip(f"CUDA backend not usable: {reason}")
    binned, row_data = _grower_data("classification", False)
    if device == "cuda":
        binned = binned._replace(X_binned=xp.asarray(binned.X_binned))
    return binned, row_data


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_the_cuda_backend_implements_the_contract(device):
    binned, row_data = _classification_data_on(device)
    backend = make_backend(binned, row_data, device=device)
    assert isinstance(backend, DenseHistogramBackend)
    assert backend.capabilities.device == device and not backend.capabilities.exact
    assert isinstance(backend, CUDAHistogramBackend) == (device == "cuda")


# ---------------------------------------------------------------------------------------
# The phase timer
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("max_leaf_nodes", [None, 12])
def test_phase_timer_records_every_phase_of_every_level(monkeypatch, device, max_leaf_nodes):
    # Level by level to the leaves: no subtree is finished in one call (that phase's
    # records: tests/kernels/test_subtree_finisher.py).
    monkeypatch.setattr(grower_module, "FINISH_BELOW_ROWS", 0)
    monkeypatch.setattr(grower_module, "FINISH_ROOT_BELOW_ROWS", 0)
    binned, row_data = _classification_data_on(device)
    params = GrowthParams(criterion="gini", max_depth=4, max_leaf_nodes=max_leaf_nodes)
    untimed = Grower(make_backend(binned, row_data, device=device), row_data.layout, params, 3)
    expected = untimed.grow()
    timer = PhaseTimer(np if device == "cpu" else cuda_status()[2])
    backend = make_backend(binned, row_data, device=device, timer=timer)
    tree = Grower(backend, row_data.layout, params, 3, timer=timer).grow()
    assert_tree_equal(tree, expected, impurity_rtol=0, value_rtol=0)  # timing changes nothing

    internal = np.flatnonzero(tree.children_left >= 0)
    split_levels = sorted(set(tree.depth[internal].tolist()))
    assert len(split_levels) == 4  # a tree of depth 4 grew
    # Every level that split had histograms, was scored and was partitioned (the nodes at
    # max_depth are leaves: no histograms there).
    assert timer.levels("partition") == split_levels
    assert timer.levels("split_scoring") == timer.levels("histograms") == split_levels
    assert set(timer.totals()) >= set(PHASES) - {"subtraction", "subtrees"}
    assert 1 in timer.levels("subtraction")  # the larger root child: parent - smaller
    by_level = timer.by_level()
    assert sorted(by_level) == split_levels
    assert all(seconds >= 0 for phases in by_level.values() for seconds in phases.values())
    records = [r for r in timer.records if r.phase == "partition"]
    assert sum(r.n_nodes for r in records) == internal.size  # every split node, once
    assert [r.n_rows for r in records if r.level == 0] == [row_data.n_samples]
    histograms = [r for r in timer.records if r.phase == "histograms" and r.level == 0]
    assert [(r.n_nodes, r.n_rows) for r in histograms] == [(1, row_data.n_samples)]
    if device == "cuda":  # the backend's own sub-phase, inside the histograms phase
        assert timer.levels("histogram_kernel") == timer.levels("histograms")
    if max_leaf_nodes is None:  # level-wise: one scoring pass over each level's dense batch
        dense_levels = [r.level for r in timer.records if r.phase == "subtraction"]
        assert dense_levels == sorted(set(dense_levels))


def test_grower_times_nothing_without_a_timer():
    binned, row_data = _grower_data("regression", False)
    params = GrowthParams("squared_error", max_depth=3)
    grower = Grower(make_backend(binned, row_data), row_data.layout, params, 3)
    assert grower.timer is None
    tree = grower.grow()
    timer = PhaseTimer()
    timed = Grower(make_backend(binned, row_data), row_data.layout, params, 3, timer=timer)
    assert_tree_equal(timed.grow(), tree, impurity_rtol=0, value_rtol=0)
    assert timer.records and {r.phase for r in timer.records} <= set(PHASES)
