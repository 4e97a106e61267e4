"""Missing values (NaN): the side of each split is learned, on both devices and modes."""

import numpy as np
import pytest
from _parity import assert_same_predictions_away_from_ties, goes_left, weighted_child_impurity

from gpu_tree import DecisionTreeClassifier, DecisionTreeRegressor, assert_tree_equal


def _data_with_missing(n_samples, n_features, seed, fraction=0.2, n_values=6):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, n_values, size=(n_samples, n_features)).astype(float)
    y = ((X[:, 0] + X[:, 1 % n_features]) > n_values - 1).astype(int)
    hidden = rng.random(X.shape) < fraction
    # Make missingness informative in feature 0, so the learned side matters.
    y[hidden[:, 0]] = rng.random(hidden[:, 0].sum()) < 0.85
    X[hidden] = np.nan
    return X, y


def _brute_force_root(X, y, criterion):
    """Best (score, feature, threshold, missing_left) over every threshold and side."""
    best = None
    for f in range(X.shape[1]):
        values = X[:, f]
        present = np.sort(np.unique(values[~np.isnan(values)]))
        thresholds = list((present[:-1] + present[1:]) / 2) + [np.inf]
        for threshold in thresholds:
            for missing_left in (True, False):
                left = np.where(np.isnan(values), missing_left, values <= threshold)
                if left.all() or not left.any():
                    continue
                score = -weighted_child_impurity(y, left, criterion)
                if best is None or score > best[0] + 1e-12:
                    best = (score, f, threshold, missing_left, left)
    return best


@pytest.mark.parametrize("splitter", ["hist", "exact"])
@pytest.mark.parametrize("criterion", ["gini", "entropy"])
@pytest.mark.parametrize("seed", range(6))
def test_learned_missing_side_equals_brute_force(splitter, criterion, seed):
    X, y = _data_with_missing(80, 3, seed)
    tree = DecisionTreeClassifier(criterion=criterion, splitter=splitter, max_depth=1)
    tree = tree.fit(X, y).tree_
    best_score, _, _, _, _ = _brute_force_root(X, y, criterion)
    ours = goes_left(tree, 0, X)
    # Our split partitions the rows as well as the best one (ties may pick another).
    assert -weighted_child_impurity(y, ours, criterion) == pytest.approx(best_score, abs=1e-9)


def test_split_on_missingness_alone():
    """Every present value left, the missing ones right: threshold +inf."""
    X = np.array([[1.0], [2.0], [3.0], [np.nan], [np.nan], [np.nan]])
    y = np.array([0, 0, 0, 1, 1, 1])
    for splitter in ("hist", "exact"):
        model = DecisionTreeClassifier(splitter=splitter).fit(X, y)
        assert model.tree_.threshold[0] == np.inf and model.tree_.missing_go_to_left[0] == 0
        np.testing.assert_array_equal(model.predict(X), y)
        np.testing.assert_array_equal(model.predict([[100.0], [np.nan]]), [0, 1])


def test_nodes_without_missing_values_send_them_to_the_bigger_child():
    X = np.array([[0.0], [1.0], [2.0], [3.0], [4.0]])
    y = np.array([0, 1, 1, 1, 1])
    model = DecisionTreeClassifier(max_depth=1).fit(X, y)
    # Left child holds 1 row, right 4: missing goes right, and predicts their class.
    assert model.tree_.missing_go_to_left[0] == 0
    assert model.predict([[np.nan]])[0] == 1


@pytest.mark.parametrize("seed", range(4))
def test_hist_equals_exact_with_missing_values(seed):
    X, y = _data_with_missing(300, 4, seed)
    for model in (DecisionTreeClassifier(criterion="entropy"), DecisionTreeClassifier(max_depth=5)):
        hist = model.set_params(splitter="hist").fit(X, y).tree_
        exact = model.set_params(splitter="exact").fit(X, y).tree_
        assert_tree_equal(hist, exact)
    target = np.nan_to_num(X[:, 0], nan=7.0) * 1.5 + np.random.default_rng(seed).normal(size=300)
    hist = DecisionTreeRegressor(max_depth=6).fit(X, target).tree_
    exact = DecisionTreeRegressor(max_depth=6, splitter="exact").fit(X, target).tree_
    assert_tree_equal(hist, exact, impurity_rtol=0, value_rtol=0)


def test_missing_values_only_at_predict_time():
    X, y = _data_with_missing(200, 3, seed=9, fraction=0.0)
    model = DecisionTreeClassifier(max_depth=4).fit(X, y)
    X_test = X.copy()
    X_test[::3, 0] = np.nan
    tree = model.tree_
    leaves = model.apply(X_test)
    for i in range(0, 30, 3):  # walk by hand: NaN follows each node's bigger child
        node = 0
        while tree.children_left[node] >= 0:
            node = (
                tree.children_left[node]
                if goes_left(tree, node, X_test[i : i + 1])[0]
                else tree.children_right[node]
            )
        assert leaves[i] == node


def _continuous_with_missing(n_samples, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, 4)).astype(np.float32).astype(np.float64)  # scikit-learn's
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=n_samples) > 0).astype(int)
    hidden = rng.random(X.shape) < 0.2
    y[hidden[:, 0]] = rng.random(hidden[:, 0].sum()) < 0.8
    X[hidden] = np.nan
    return X, y


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_exact_mode_matches_sklearn_with_missing_values(criterion):
    """scikit-learn >= 1.3 also learns the side of missing values per split: where the
    trees have no tie, predictions (missing values included) are the same."""
    sklearn_tree = pytest.importorskip("sklearn.tree")
    compared = 0
    for seed in range(4):
        X, y = _continuous_with_missing(400, seed)
        X_test, _ = _continuous_with_missing(300, seed + 50)
        for max_depth in (3, 5):
            ours = DecisionTreeClassifier(
                criterion=criterion, splitter="exact", max_depth=max_depth
            )
            theirs = sklearn_tree.DecisionTreeClassifier(
                criterion=criterion, max_depth=max_depth, random_state=0
            )
            ours.fit(X, y)
            theirs.fit(X, y)
            compared += assert_same_predictions_away_from_ties(
                ours, theirs, X, y, X_test, criterion
            ) * len(X_test)
    assert compared >= 3 * len(X_test)  # the comparison really happens, on many rows


@pytest.mark.parametrize("rows", [7, 20_000])  # the serial twin and the parallel kernel
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nonfinite_columns_flags_each_columns_nans_and_infinities(rows, dtype):
    from gpu_tree.data.binning import missing_by_feature
    from gpu_tree.kernels.cpu import binning as cpu_binning

    X = np.zeros((rows, 5), dtype=dtype)
    X[rows - 1, 0] = np.nan
    X[rows // 2, 1] = np.inf
    X[0, 2], X[rows - 1, 2] = -np.inf, np.nan
    X[1, 4] = np.finfo(dtype).max  # large, finite
    flags = cpu_binning.nonfinite_columns(X)
    nan, infinity = cpu_binning.HOLDS_NAN, cpu_binning.HOLDS_INFINITY
    np.testing.assert_array_equal(flags, [nan, infinity, nan | infinity, 0, 0])
    np.testing.assert_array_equal(missing_by_feature(X), [True, False, True, False, False])
