"""Sample weights far below the total weight (issue 43): a positive weight under half a
unit of the fit's fixed point used to round to 0, so a leaf holding only such rows
weighed 0, held class fractions of 0 and predict_proba gave rows summing to 0. In
scikit-learn every row a tree holds has positive weight (it leaves out only rows of
weight 0), and every leaf's probabilities sum to 1."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import ensemble as sk_ensemble
from sklearn import tree as sk_tree

from gpu_tree import (
    DAGClassifier,
    DecisionTreeClassifier,
    ExtraTreesClassifier,
    RandomForestClassifier,
)

# Row 0 weighs 1e-30 against a total of 2: scikit-learn splits it off (the root is impure
# and x = 0 is the only threshold), into a leaf of class 0 alone.
X_SPLIT_OFF = np.array([[0.0], [1.0], [1.0]])
Y_SPLIT_OFF = np.array([0, 0, 1])
W_SPLIT_OFF = np.array([1e-30, 1.0, 1.0])


def test_a_leaf_of_tiny_weights_predicts_scikit_learn_s_probabilities():
    ours = DecisionTreeClassifier(device="cpu").fit(X_SPLIT_OFF, Y_SPLIT_OFF, W_SPLIT_OFF)
    theirs = sk_tree.DecisionTreeClassifier().fit(X_SPLIT_OFF, Y_SPLIT_OFF, W_SPLIT_OFF)
    assert ours.tree_.node_count == theirs.tree_.node_count == 3
    np.testing.assert_array_equal(
        ours.predict_proba(X_SPLIT_OFF), theirs.predict_proba(X_SPLIT_OFF)
    )
    np.testing.assert_array_equal(ours.predict(X_SPLIT_OFF), theirs.predict(X_SPLIT_OFF))
    assert np.all(ours.tree_.weighted_n_node_samples > 0)


def test_a_forest_without_bootstrap_predicts_scikit_learn_s_probabilities():
    # Every tree sees every row and every feature: each is the tree above.
    params = dict(n_estimators=3, bootstrap=False, max_features=None, random_state=0)
    ours = RandomForestClassifier(device="cpu", **params).fit(X_SPLIT_OFF, Y_SPLIT_OFF, W_SPLIT_OFF)
    theirs = sk_ensemble.RandomForestClassifier(**params).fit(X_SPLIT_OFF, Y_SPLIT_OFF, W_SPLIT_OFF)
    np.testing.assert_array_equal(
        ours.predict_proba(X_SPLIT_OFF), theirs.predict_proba(X_SPLIT_OFF)
    )


def test_weights_spread_over_e_to_the_60_leave_no_node_of_zero_weight():
    # The model-file fuzzer's data: weights exp(N(0, 12)) put some leaves' rows below a
    # unit of the total, which made nodes of weight 0 and zero fractions.
    rng = np.random.default_rng(0)
    X = np.c_[rng.integers(0, 5, 3000), rng.normal(size=3000), rng.normal(size=3000)]
    y = ((X[:, 0] % 2 == 0) ^ (X[:, 1] > 0.3)).astype(int)
    weight = np.exp(rng.normal(0, 12, size=y.size))
    ours = DecisionTreeClassifier(device="cpu").fit(X, y, sample_weight=weight)
    theirs = sk_tree.DecisionTreeClassifier(random_state=0).fit(X, y, sample_weight=weight)
    for tree in (ours.tree_, theirs.tree_):
        assert np.all(tree.weighted_n_node_samples > 0)
        np.testing.assert_allclose(tree.value[:, 0].sum(axis=1), 1.0, rtol=1e-9)
    X_test = rng.normal(size=(500, 3)) * [3, 1, 1]
    np.testing.assert_allclose(ours.predict_proba(X_test).sum(axis=1), 1.0, rtol=1e-9)


def _wide_weights(seed):
    """Weights from 1e-30 to 1e20 (and some 0): many rows below a unit of the total."""
    rng = np.random.default_rng(seed)
    n = 40
    X = rng.normal(size=(n, 2)).round(1)
    y = rng.integers(0, 3, n)
    weight = rng.choice([0.0, 1e-30, 1e-18, 1e-12, 1.0, 1e6, 1e20], n)
    weight[0] = 1.0  # some weight to fit
    return X, y, weight, rng.normal(size=(200, 2))


@pytest.mark.parametrize(
    "make",
    [
        lambda: DecisionTreeClassifier(device="cpu"),
        lambda: DecisionTreeClassifier(max_bins=8, device="cpu"),
        lambda: DecisionTreeClassifier(class_weight="balanced", device="cpu"),
        lambda: RandomForestClassifier(n_estimators=4, bootstrap=False, device="cpu"),
        lambda: ExtraTreesClassifier(n_estimators=4, random_state=0, device="cpu"),
        lambda: DAGClassifier(),
    ],
    ids=["tree", "histogram tree", "balanced", "forest", "extra trees", "dag"],
)
def test_probabilities_sum_to_one_whatever_the_weights_spread(make):
    for seed in range(6):
        X, y, weight, X_test = _wide_weights(seed)
        model = make().fit(X, y, sample_weight=weight)
        # scikit-learn's tree on the same rows: its probabilities sum to 1 everywhere.
        theirs = sk_tree.DecisionTreeClassifier(random_state=0).fit(X, y, sample_weight=weight)
        np.testing.assert_allclose(
            model.predict_proba(X_test).sum(axis=1), theirs.predict_proba(X_test).sum(axis=1)
        )


def test_multi_output_probabilities_sum_to_one_whatever_the_weights_spread():
    X, y, weight, X_test = _wide_weights(3)
    Y = np.c_[y, (X[:, 0] > 0).astype(int)]
    model = DecisionTreeClassifier(device="cpu").fit(X, Y, sample_weight=weight)
    theirs = sk_tree.DecisionTreeClassifier(random_state=0).fit(X, Y, sample_weight=weight)
    for ours_k, theirs_k in zip(
        model.predict_proba(X_test), theirs.predict_proba(X_test), strict=True
    ):
        np.testing.assert_allclose(ours_k.sum(axis=1), theirs_k.sum(axis=1))
