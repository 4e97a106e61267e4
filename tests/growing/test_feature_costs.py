"""Features with differing costs (issue 21): ``feature_costs``, ``cost_criterion``
(Tan and Schlimmer's gain**2 / cost, Núñez's (2**gain - 1) / (cost + 1)**w) and
``prediction_cost``, against brute force on small data."""

import numpy as np
import pytest
from sklearn.base import clone

import gpu_tree
from gpu_tree import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    RandomForestClassifier,
    assert_tree_equal,
)
from gpu_tree.backends.cpu import score_splits_on_cpu
from gpu_tree.backends.cuda import cuda_status
from gpu_tree.data.stats import StatsLayout, fixed_point_exponent, to_fixed_point
from gpu_tree.growing.feature_costs import each_column_alone
from gpu_tree.growing.splitting import (
    MonotonicBounds,
    SplitConstraints,
    select_splits,
    select_splits_each_column,
)
from gpu_tree.model.tree import MULTIWAY, TREE_LEAF
from gpu_tree.utils.compat import NotFittedError


# -- brute force ------------------------------------------------------------------------------
def _entropy(y):
    p = np.bincount(y) / y.size
    p = p[p > 0]
    return float(-np.sum(p * np.log2(p)))


def _gini(y):
    p = np.bincount(y) / y.size
    return float(1.0 - np.sum(p * p))


def _variance(y):
    return float(np.mean((y - y.mean()) ** 2))


IMPURITY = {"entropy": _entropy, "gini": _gini, "squared_error": _variance}


def _threshold_gain(x, y, impurity, threshold):
    left = x <= threshold
    share = left.mean()
    return impurity(y) - share * impurity(y[left]) - (1 - share) * impurity(y[~left])


def _best_threshold_gain(x, y, impurity):
    """The best impurity decrease over every midpoint between x's distinct values, or None
    where x is constant."""
    values = np.unique(x)
    if values.size < 2:
        return None
    return max(_threshold_gain(x, y, impurity, t) for t in (values[:-1] + values[1:]) / 2)


def _multiway_gain(x, y, impurity):
    """ID3's gain of one branch per value of x, or None where x is constant."""
    values = np.unique(x)
    if values.size < 2:
        return None
    children = sum(np.mean(x == v) * impurity(y[x == v]) for v in values)
    return impurity(y) - children


def _measure(cost_criterion, gain, cost, cost_weight=1.0):
    """The papers' measures, as written (the library ranks by their log2). 2**g - 1 as
    expm1(g ln 2), the same number, exact for tiny gains too."""
    if cost_criterion == "tan_schlimmer":
        return gain**2 / cost
    return np.expm1(gain * np.log(2.0)) / (cost + 1.0) ** cost_weight


def _expected_feature(gains, costs, cost_criterion, cost_weight=1.0):
    """The feature of the highest measure (None: no feature can split); the lowest feature
    among measures equal up to rounding."""
    measures = {
        j: _measure(cost_criterion, max(gain, 0.0), costs[j], cost_weight)
        for j, gain in gains.items()
        if gain is not None
    }
    if not measures:
        return None
    best = max(measures.values())
    return min(j for j, m in measures.items() if m >= best - 1e-9 * abs(best) - 1e-300)


def _multiway_ancestors(tree, node):
    """The features split multiway above ``node`` (ID3 does not test them again)."""
    parent = tree.parents()
    used = set()
    while parent[node] >= 0:
        node = parent[node]
        if tree.split_kind[node] == MULTIWAY:
            used.add(int(tree.feature[node]))
    return used


def _check_against_brute_force(model, X, y, costs, multiway_features=()):
    """Every split of ``model`` is on the feature of the highest measure of the per-feature
    best gains of its node's rows, computed by brute force, and a numeric split's threshold
    makes that feature's best gain."""
    tree = model.tree_
    impurity = IMPURITY[model.criterion]
    path = model.decision_path(X).toarray().astype(bool)
    internal = np.flatnonzero(tree.children_left != TREE_LEAF)
    assert internal.size >= 3, "too small a tree to test anything"
    for node in internal:
        rows = path[:, node]
        used = _multiway_ancestors(tree, node)
        gains = {}
        for j in range(X.shape[1]):
            if j in used:
                continue
            if j in multiway_features:
                gains[j] = _multiway_gain(X[rows, j], y[rows], impurity)
            else:
                gains[j] = _best_threshold_gain(X[rows, j], y[rows], impurity)
        expected = _expected_feature(gains, costs, model.cost_criterion, model.cost_weight)
        feature = int(tree.feature[node])
        assert feature == expected, (node, feature, expected, gains)
        if feature not in multiway_features:
            made = _threshold_gain(X[rows, feature], y[rows], impurity, tree.threshold[node])
            assert made == pytest.approx(gains[feature], rel=1e-9, abs=1e-12), node


def _classification(seed, n_samples=160, n_features=4, n_values=8, n_classes=3):
    """Integer features (few distinct values: histogram search is exact) and labels that
    depend on several of them, features 0 and 1 the most."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, n_values, size=(n_samples, n_features)).astype(float)
    signal = 2 * X[:, 0] + X[:, 1] + 0.5 * X[:, 2] + rng.normal(0, 2, n_samples)
    y = np.digitize(signal, np.quantile(signal, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X, y


def _regression(seed, n_samples=160, n_features=4, n_values=8):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, n_values, size=(n_samples, n_features)).astype(float)
    y = 0.3 * X[:, 0] + 0.2 * X[:, 1] * (X[:, 2] > 3) + rng.normal(0, 0.3, n_samples)
    return X, y


COST_VECTORS = [
    np.array([1.0, 1.0, 1.0, 1.0]),
    np.array([8.0, 1.0, 2.0, 0.5]),
    np.array([0.3, 5.0, 1.0, 3.0]),
]
MEASURES = [("tan_schlimmer", 1.0), ("nunez", 1.0), ("nunez", 0.4)]


@pytest.mark.parametrize("criterion", ["entropy", "gini"])
@pytest.mark.parametrize(("cost_criterion", "cost_weight"), MEASURES)
@pytest.mark.parametrize("which", range(len(COST_VECTORS)))
def test_classifier_splits_maximise_the_measure(criterion, cost_criterion, cost_weight, which):
    X, y = _classification(seed=which)
    costs = COST_VECTORS[which]
    model = DecisionTreeClassifier(
        criterion=criterion,
        max_depth=4,
        device="cpu",
        feature_costs=costs,
        cost_criterion=cost_criterion,
        cost_weight=cost_weight,
    ).fit(X, y)
    _check_against_brute_force(model, X, y, costs)


@pytest.mark.parametrize(("cost_criterion", "cost_weight"), MEASURES)
@pytest.mark.parametrize("which", range(len(COST_VECTORS)))
def test_regressor_splits_maximise_the_measure_of_the_variance_decrease(
    cost_criterion, cost_weight, which
):
    X, y = _regression(seed=10 + which)
    costs = COST_VECTORS[which]
    model = DecisionTreeRegressor(
        max_depth=4,
        device="cpu",
        feature_costs=costs,
        cost_criterion=cost_criterion,
        cost_weight=cost_weight,
    ).fit(X, y)
    _check_against_brute_force(model, X, y, costs)


def test_tiny_regression_targets_split_as_the_measure_of_their_real_gains():
    """Targets of 2**-400 are fitted scaled (StatsLayout.target_exponent), and so are their
    variance decreases; the splits still maximise Núñez's measure of the real (tiny)
    gains, where 2**g - 1 is about g ln 2."""
    X, y = _regression(seed=21)
    costs = COST_VECTORS[1]
    model = DecisionTreeRegressor(
        max_depth=3, device="cpu", feature_costs=costs, cost_criterion="nunez", cost_weight=1.0
    ).fit(X, y * 2.0**-400)
    _check_against_brute_force(model, X, y * 2.0**-400, costs)


@pytest.mark.parametrize("max_leaf_nodes", [5, 9])
def test_best_first_growth_splits_maximise_the_measure(max_leaf_nodes):
    """With max_leaf_nodes every split is still chosen by the measure (the order the
    nodes are expanded in stays the weighted gain's)."""
    X, y = _classification(seed=4)
    costs = COST_VECTORS[2]
    model = DecisionTreeClassifier(
        criterion="entropy",
        max_leaf_nodes=max_leaf_nodes,
        device="cpu",
        feature_costs=costs,
        cost_criterion="nunez",
    ).fit(X, y)
    assert model.get_n_leaves() == max_leaf_nodes
    _check_against_brute_force(model, X, y, costs)


@pytest.mark.parametrize("cost_criterion", ["tan_schlimmer", "nunez"])
def test_multiway_categorical_splits_maximise_the_measure(cost_criterion):
    """ID3 (one branch per category): a categorical feature's gain is its multiway
    split's, and a feature used above is not tested again."""
    rng = np.random.default_rng(5)
    X, y = _classification(seed=5, n_values=4)
    X[:, 3] = rng.integers(0, 6, size=X.shape[0])
    costs = np.array([6.0, 1.0, 2.0, 1.0])
    model = DecisionTreeClassifier(
        criterion="entropy",
        max_depth=3,
        device="cpu",
        categorical_features=[0, 1],
        categorical_split="multiway",
        feature_costs=costs,
        cost_criterion=cost_criterion,
    ).fit(X, y)
    assert np.any(model.tree_.split_kind == MULTIWAY)
    _check_against_brute_force(model, X, y, costs, multiway_features=(0, 1))


def test_a_high_cost_on_the_best_feature_moves_the_root():
    X, y = _classification(seed=6)
    plain = DecisionTreeClassifier(criterion="entropy", max_depth=2, device="cpu").fit(X, y)
    assert plain.tree_.feature[0] == 0
    for cost_criterion in ("tan_schlimmer", "nunez"):
        costly = DecisionTreeClassifier(
            criterion="entropy",
            max_depth=2,
            device="cpu",
            feature_costs=[1000.0, 1.0, 1.0, 1.0],
            cost_criterion=cost_criterion,
        ).fit(X, y)
        assert costly.tree_.feature[0] != 0
        # ... and makes a tree that never measures feature 0 here.
        assert 0 not in costly.tree_.feature[costly.tree_.children_left != TREE_LEAF]


@pytest.mark.parametrize(
    ("model", "criterion"),
    [
        (DecisionTreeClassifier, "gini"),
        (DecisionTreeClassifier, "entropy"),
        (DecisionTreeClassifier, "gain_ratio"),
        (DecisionTreeClassifier, "cart"),
        (DecisionTreeRegressor, "squared_error"),
    ],
)
@pytest.mark.parametrize(("cost_criterion", "cost_weight"), MEASURES)
def test_equal_costs_grow_the_tree_without_costs(model, criterion, cost_criterion, cost_weight):
    """Both measures increase with the gain: with one cost for every feature they rank the
    features as the gain does, so the tree is the cost-blind one, node for node."""
    fit_data = _classification if model is DecisionTreeClassifier else _regression
    X, y = fit_data(seed=7, n_samples=300, n_features=5)
    X[:40, 2] = np.nan  # missing values go where they do without costs
    params = dict(criterion=criterion, max_depth=6, device="cpu", min_samples_leaf=2)
    plain = model(**params).fit(X, y)
    costed = model(
        **params,
        feature_costs=np.full(5, 2.5),
        cost_criterion=cost_criterion,
        cost_weight=cost_weight,
    ).fit(X, y)
    assert_tree_equal(costed.tree_, plain.tree_, impurity_rtol=0, value_rtol=0)


@pytest.mark.parametrize("seed", [3, 11])
@pytest.mark.parametrize("model", [DecisionTreeClassifier, DecisionTreeRegressor])
def test_measures_equal_within_rounding_tie_to_the_lowest_feature(model, seed):
    """Feature 1 is feature 0 mirrored (x1 = -x0): the same partitions, whose gains are
    summed in another order and may differ in their last bits. Without costs the lower
    feature wins those ties (select_splits' tolerance); with equal costs it must too, so
    the measures compare within the gains' rounding tolerance, not bit for bit."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(200, 3))
    X[:, 1] = -X[:, 0]
    signal = X[:, 0] + rng.normal(size=200)
    y = (signal > 0).astype(int) if model is DecisionTreeClassifier else signal
    weight = rng.uniform(0.1, 3.0, 200)
    params = dict(max_depth=4, device="cpu")
    if model is DecisionTreeClassifier:
        params["criterion"] = "entropy"
    plain = model(**params).fit(X, y, sample_weight=weight)
    assert 1 not in plain.tree_.feature
    for cost_criterion in ("tan_schlimmer", "nunez"):
        costed = model(**params, feature_costs=[2.0] * 3, cost_criterion=cost_criterion)
        costed.fit(X, y, sample_weight=weight)
        assert_tree_equal(costed.tree_, plain.tree_, impurity_rtol=0, value_rtol=0)


def test_costs_off_is_the_default_and_none_grows_the_same_tree():
    X, y = _classification(seed=8)
    params = DecisionTreeClassifier().get_params()
    assert params["feature_costs"] is None
    assert params["cost_criterion"] == "tan_schlimmer" and params["cost_weight"] == 1.0
    assert DecisionTreeRegressor().get_params()["feature_costs"] is None
    plain = DecisionTreeClassifier(device="cpu").fit(X, y)
    # cost_criterion and cost_weight mean nothing without costs.
    other = DecisionTreeClassifier(device="cpu", cost_criterion="nunez", cost_weight=0.2)
    assert_tree_equal(other.fit(X, y).tree_, plain.tree_, impurity_rtol=0, value_rtol=0)


def test_drawn_features_are_costed_as_themselves():
    """With max_features (a third of the features or fewer: the histograms of the drawn
    features only, columns in draw order) each drawn column costs its own feature's cost:
    the most informative feature, priced out, is never chosen though often drawn."""
    rng = np.random.default_rng(9)
    X = rng.normal(size=(2000, 6))
    y = (X[:, 5] + 0.5 * X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    costs = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1e12])
    params = dict(max_features=2, max_depth=5, random_state=0, device="cpu")
    plain = DecisionTreeClassifier(**params).fit(X, y)
    assert np.count_nonzero(plain.tree_.feature == 5) >= 3  # drawn and chosen by gain
    costed = DecisionTreeClassifier(**params, feature_costs=costs).fit(X, y)
    assert costed.tree_.node_count > 15
    assert 5 not in costed.tree_.feature


# -- prediction cost ------------------------------------------------------------------------
def _features_on_paths(model, X):
    """Per row, the features tested on its path (decision_path), repeats kept."""
    tree = model.tree_
    path = model.decision_path(X).tocsr()
    return [
        tree.feature[nodes[tree.children_left[nodes] != TREE_LEAF]].tolist()
        for nodes in np.split(path.indices, path.indptr[1:-1])
    ]


def test_prediction_cost_sums_the_distinct_features_on_each_path():
    X, y = _classification(seed=11, n_samples=300)
    costs = np.array([3.0, 1.0, 0.5, 2.0])
    model = DecisionTreeClassifier(
        max_depth=6, device="cpu", feature_costs=costs, cost_criterion="nunez"
    ).fit(X, y)
    tested = _features_on_paths(model, X)
    assert any(len(set(row)) < len(row) for row in tested), "no path tests a feature twice"
    paid = model.prediction_cost(X)
    assert paid.shape == (X.shape[0],) and paid.dtype == np.float64
    np.testing.assert_allclose(paid, [sum(costs[j] for j in set(row)) for row in tested])
    # Other costs for the same tree (free features are fine here).
    other = np.array([0.0, 2.0, 0.0, 1.0])
    np.testing.assert_allclose(
        model.prediction_cost(X, feature_costs=other),
        [sum(other[j] for j in set(row)) for row in tested],
    )
    # A tree grown without costs is costed the same way.
    plain = DecisionTreeClassifier(max_depth=6, device="cpu").fit(X, y)
    np.testing.assert_allclose(
        plain.prediction_cost(X, feature_costs=costs),
        [sum(costs[j] for j in set(row)) for row in _features_on_paths(plain, X)],
    )


def test_prediction_cost_of_a_one_leaf_tree_is_zero():
    X = np.arange(10.0).reshape(5, 2)
    model = DecisionTreeClassifier(device="cpu", feature_costs=[1.0, 2.0]).fit(X, [1] * 5)
    assert model.get_n_leaves() == 1
    np.testing.assert_array_equal(model.prediction_cost(X), np.zeros(5))


def test_prediction_cost_needs_costs_and_a_fitted_tree():
    X, y = _classification(seed=12)
    model = DecisionTreeClassifier(device="cpu")
    with pytest.raises(NotFittedError):
        model.prediction_cost(X, feature_costs=[1, 1, 1, 1])
    model.fit(X, y)
    with pytest.raises(ValueError, match=r"feature_costs=None.*prediction_cost\(X, feature_costs"):
        model.prediction_cost(X)
    with pytest.raises(ValueError, match="X has 4 features"):
        model.prediction_cost(X, feature_costs=[1, 1, 1])
    with pytest.raises(ValueError, match=r"feature_costs\[1\] must be finite and >= 0"):
        model.prediction_cost(X, feature_costs=[1, -1, 1, 1])


def test_costs_whose_sum_overflows_are_refused_naming_the_feature():
    """Each cost finite but their sum not (1.7e308 twice): a path's cost would be inf."""
    X, y = _classification(seed=12)
    huge = [1.7e308, 1.7e308, 1.0, 1.0]
    model = DecisionTreeClassifier(device="cpu").fit(X, y)
    with pytest.raises(ValueError, match=r"feature_costs\[1\] is 1.7e\+308: the costs of all"):
        model.prediction_cost(X, feature_costs=huge)
    with pytest.raises(ValueError, match=r"feature_costs\[1\] is 1.7e\+308"):
        DecisionTreeClassifier(device="cpu", feature_costs=huge).fit(X, y)
    costs = model.prediction_cost(X, feature_costs=[8e307, 8e307, 1.0, 1.0])  # sums finite
    assert np.isfinite(costs).all()


# -- parameters ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"feature_costs": [1.0, 2.0, 3.0]}, r"X has 4 features, feature_costs has shape \(3,\)"),
        ({"feature_costs": [[1.0, 2.0, 3.0, 4.0]]}, r"shape \(1, 4\)"),
        ({"feature_costs": [1.0, -2.0, 3.0, 4.0]}, r"feature_costs\[1\] must be finite and >= 0"),
        ({"feature_costs": [1.0, 2.0, np.nan, 4.0]}, r"feature_costs\[2\] .*got nan"),
        ({"feature_costs": [1.0, 2.0, 3.0, np.inf]}, r"feature_costs\[3\] .*got inf"),
        ({"feature_costs": ["a", 1, 1, 1]}, "feature_costs must be None or numbers"),
        (
            {"feature_costs": [1.0, 0.0, 3.0, 4.0]},
            r"feature_costs\[1\] is 0, but cost_criterion='tan_schlimmer' divides",
        ),
        ({"cost_criterion": "cheapest"}, r"Unknown cost_criterion='cheapest'.*'nunez'"),
        ({"cost_criterion": "nunez", "cost_weight": -0.5}, r"cost_weight must be in \[0"),
        ({"cost_weight": np.inf}, r"cost_weight must be in \[0.0, inf\)"),
    ],
)
@pytest.mark.parametrize("model", [DecisionTreeClassifier, DecisionTreeRegressor])
def test_bad_cost_parameters_are_refused_naming_the_problem(model, params, message):
    X, y = _classification(seed=13)
    with pytest.raises(ValueError, match=message):
        model(device="cpu", **params).fit(X, y)


def test_free_features_are_allowed_with_nunez():
    """A cost of 0 (a feature already measured) divides nothing in Núñez's measure."""
    X, y = _classification(seed=14)
    costs = np.array([5.0, 0.0, 1.0, 0.0])
    model = DecisionTreeClassifier(
        criterion="entropy", max_depth=3, device="cpu", feature_costs=costs, cost_criterion="nunez"
    ).fit(X, y)
    _check_against_brute_force(model, X, y, costs)


def test_params_round_trip_through_get_set_params_and_clone():
    costs = np.array([1.0, 2.0, 3.0, 4.0])
    model = DecisionTreeRegressor(feature_costs=costs, cost_criterion="nunez", cost_weight=0.5)
    params = model.get_params()
    assert params["feature_costs"] is costs
    assert (params["cost_criterion"], params["cost_weight"]) == ("nunez", 0.5)
    copy = clone(model)
    assert copy.feature_costs is not None
    np.testing.assert_array_equal(copy.feature_costs, costs)
    assert (copy.cost_criterion, copy.cost_weight) == ("nunez", 0.5)
    copy.set_params(feature_costs=None, cost_criterion="tan_schlimmer")
    assert copy.get_params()["feature_costs"] is None
    assert model.get_params()["feature_costs"] is costs  # the original is untouched


def test_forests_take_no_costs():
    """A forest passes its own list of tree parameters on; feature_costs is not one."""
    with pytest.raises(TypeError, match="feature_costs"):
        RandomForestClassifier(feature_costs=[1.0, 2.0])
    X, y = _classification(seed=15)
    forest = RandomForestClassifier(5, max_depth=2, random_state=0, device="cpu").fit(X, y)
    # Its trees are cost-blind, and can still be costed.
    assert all(tree.feature_costs is None for tree in forest.estimators_)
    assert forest.estimators_[0].prediction_cost(X, feature_costs=[1, 1, 1, 1]).max() <= 3


# -- model files -----------------------------------------------------------------------------
@pytest.mark.parametrize("model", [DecisionTreeClassifier, DecisionTreeRegressor])
def test_costs_round_trip_through_a_model_file(tmp_path, model):
    fit_data = _classification if model is DecisionTreeClassifier else _regression
    X, y = fit_data(seed=16)
    costs = np.array([2.0, 0.5, 1.0, 4.0])
    fitted = model(
        max_depth=4, device="cpu", feature_costs=costs, cost_criterion="nunez", cost_weight=0.7
    ).fit(X, y)
    path = tmp_path / "model.json"
    fitted.save(path)
    loaded = gpu_tree.load(path)
    assert type(loaded) is model
    np.testing.assert_array_equal(np.asarray(loaded.feature_costs, dtype=float), costs)
    assert (loaded.cost_criterion, loaded.cost_weight) == ("nunez", 0.7)
    assert_tree_equal(loaded.tree_, fitted.tree_, impurity_rtol=0, value_rtol=0)
    np.testing.assert_array_equal(loaded.prediction_cost(X), fitted.prediction_cost(X))
    # Refitted from the file's parameters: the same tree; saved again: the same bytes.
    refitted = model(**loaded.get_params()).fit(X, y)
    assert_tree_equal(refitted.tree_, fitted.tree_, impurity_rtol=0, value_rtol=0)
    loaded.save(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == path.read_bytes()


# -- CPU and CUDA -----------------------------------------------------------------------------
USABLE, REASON, _ = cuda_status()


@pytest.mark.skipif(not USABLE, reason=f"CUDA backend not usable: {REASON}")
@pytest.mark.parametrize(
    ("model", "params"),
    [
        (DecisionTreeClassifier, {"criterion": "entropy", "cost_criterion": "tan_schlimmer"}),
        (DecisionTreeClassifier, {"criterion": "gain_ratio", "cost_criterion": "nunez"}),
        (DecisionTreeClassifier, {"max_leaf_nodes": 7, "cost_criterion": "nunez"}),
        (DecisionTreeRegressor, {"cost_criterion": "nunez", "cost_weight": 0.5}),
    ],
)
def test_cuda_trees_with_costs_equal_cpu_trees(model, params):
    """The cost-sensitive choice is the grower's: the CUDA backend (the simulator without a
    GPU) grows the CPU's tree, node for node and bit for bit."""
    fit_data = _classification if model is DecisionTreeClassifier else _regression
    X, y = fit_data(seed=17, n_samples=200)
    X[:15, 1] = np.nan
    costs = np.array([4.0, 1.0, 2.0, 0.5])
    params = dict(max_depth=4, feature_costs=costs, **params)
    cpu = model(device="cpu", **params).fit(X, y)
    cuda = model(device="cuda", **params).fit(X, y)
    assert cpu.tree_.node_count >= 7
    assert_tree_equal(cuda.tree_, cpu.tree_, impurity_rtol=0, value_rtol=0)
    np.testing.assert_array_equal(cuda.prediction_cost(X), cpu.prediction_cost(X))


# -- each column searched alone, at once ------------------------------------------------------
def _node_histograms(rng, criterion, n_nodes, n_features, n_bins):
    """Histograms (n_nodes, n_features, n_bins, n_channels) of random rows, each node's
    rows in every feature (as the backends build them), the rows missing each feature
    (n_nodes, n_features, n_channels) apart, and their layout."""
    rows = rng.integers(2, 80, size=n_nodes)
    node = np.repeat(np.arange(n_nodes), rows)
    levels = rng.integers(1, n_bins + 1, size=n_features)  # few values: empty bins, ties
    bins = rng.integers(0, 1 << 20, size=(node.size, n_features)) % levels
    bins[rng.random(bins.shape) < 0.1] = n_bins  # missing
    if criterion == "squared_error":
        y = np.round(rng.normal(size=node.size), 1)
        exponent = fixed_point_exponent(y)
        stats = np.stack([np.ones(node.size, np.int64), to_fixed_point(y, exponent)], axis=1)
        layout = StatsLayout(False, 0, False, exponents=(0, exponent))
    else:
        n_classes = int(rng.choice([2, 3, 5]))
        stats = np.eye(n_classes, dtype=np.int64)[rng.integers(0, n_classes, node.size)]
        layout = StatsLayout(True, n_classes, False)
    hist = np.zeros((n_nodes, n_features, n_bins + 1, stats.shape[1]), dtype=np.int64)
    for f in range(n_features):
        np.add.at(hist, (node, f, bins[:, f]), stats)
    return hist[:, :, :n_bins], hist[:, :, n_bins], layout


@pytest.mark.parametrize("criterion", ["gini", "entropy", "gain_ratio", "squared_error"])
@pytest.mark.parametrize("seed", range(3))
def test_the_compiled_search_of_each_column_is_the_search_of_that_column_alone(criterion, seed):
    """select_by_cost's input from one compiled call (select_splits_each_column) is, for
    every node and column, what the compiled search finds with that column alone in the
    node's feature mask: the same split, bit for bit, under feature masks, leaf-size
    limits, missing values and (seed 2) monotonicity constraints."""
    rng = np.random.default_rng([seed, len(criterion)])
    n_nodes, n_features = 7, 5
    present, missing, layout = _node_histograms(rng, criterion, n_nodes, n_features, n_bins=9)
    slots = rng.permutation(n_nodes)[:6]
    mask = rng.random((slots.size, n_features)) < 0.7
    constraints = SplitConstraints(min_samples_leaf=int(rng.choice([1, 3])))
    monotonic = None
    if seed == 2 and criterion != "gain_ratio":
        cst = np.array([1, 0, -1, 1, 0], dtype=np.int8)
        monotonic = MonotonicBounds(cst, np.full(slots.size, -np.inf), np.full(slots.size, np.inf))
    each = select_splits_each_column(
        present, criterion, layout, constraints, mask, slots, missing, monotonic
    )
    assert each.has_split.shape == (slots.size * n_features,)
    assert each.has_split.any() and not each.has_split.all()
    for column in range(n_features):
        alone = np.zeros_like(mask)
        alone[:, column] = mask[:, column]
        reference = select_splits(
            present,
            criterion,
            layout,
            constraints,
            alone,
            slots=slots,
            missing=missing,
            compiled=score_splits_on_cpu,
            monotonic=monotonic,
        )
        at = np.arange(slots.size) * n_features + column
        np.testing.assert_array_equal(each.has_split[at], reference.has_split)
        split = reference.has_split
        for name in ("feature", "bin", "next_bin", "missing_left", "score"):
            expected = getattr(reference, name)[split]
            np.testing.assert_array_equal(getattr(each, name)[at][split], expected, name)
        np.testing.assert_array_equal(each.left_stats[at][split], reference.left_stats[split])
        np.testing.assert_array_equal(each.right_stats[at][split], reference.right_stats[split])


def test_each_column_alone_is_one_search_of_a_node_per_column():
    """The search of each column alone on the paths without a compiled one (the CUDA
    backend, categorical features, absolute error): node i's column c is searched node
    i * n_columns + c, its mask that column, where the node may use it."""
    mask = np.array([[True, False, True], [False, True, True]])
    node, alone = each_column_alone(mask, 2, 3)
    np.testing.assert_array_equal(node, [0, 0, 0, 1, 1, 1])
    expected = np.zeros((6, 3), dtype=bool)
    expected[[0, 2, 4, 5], [0, 2, 1, 2]] = True
    np.testing.assert_array_equal(alone, expected)
    node, alone = each_column_alone(None, 1, 2)
    np.testing.assert_array_equal(alone, np.eye(2, dtype=bool))


@pytest.mark.parametrize("cost_criterion", ["tan_schlimmer", "nunez"])
def test_exact_search_grows_the_histogram_searchs_tree_with_costs(cost_criterion):
    """Integer features of few values (every value its own bin): the exact search (each
    column alone through the vectorised search) and the histogram search (the compiled
    search of each column) choose the same splits by the measure."""
    X, y = _classification(seed=8, n_samples=400, n_features=5)
    X[:30, 2] = np.nan
    params = dict(
        criterion="entropy",
        max_depth=7,
        device="cpu",
        feature_costs=[3.0, 1.0, 2.0, 0.5, 1.0],
        cost_criterion=cost_criterion,
    )
    hist = DecisionTreeClassifier(splitter="hist", **params).fit(X, y)
    exact = DecisionTreeClassifier(splitter="exact", **params).fit(X, y)
    assert hist.tree_.node_count >= 15
    assert_tree_equal(exact.tree_, hist.tree_, impurity_rtol=0, value_rtol=0)
