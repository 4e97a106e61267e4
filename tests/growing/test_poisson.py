"""criterion="poisson" (issue 22): the half Poisson deviance, as scikit-learn's.

Split proxy: S_L log(S_L / W_L) + S_R log(S_R / W_R) (S = sum w y, W = sum w), children
of S <= 0 refused; node impurity: sum w (y log(y / m) - y + m) / sum w. Checked here
against a brute-force search and hand-computed deviances written independently of the
library, against scikit-learn, across search modes, devices and code paths.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor as SkRandomForestRegressor
from sklearn.tree import DecisionTreeRegressor as SkDecisionTreeRegressor

import gpu_tree
from gpu_tree import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreesRegressor,
    RandomForestRegressor,
    assert_tree_equal,
)
from gpu_tree.backends.cpu import score_splits_on_cpu
from gpu_tree.backends.cuda import cuda_status
from gpu_tree.data.stats import (
    StatsLayout,
    fixed_point_exponent,
    regression_centre,
    to_fixed_point,
)
from gpu_tree.growing import grower as grower_module
from gpu_tree.growing.criteria import REGRESSION_CRITERIA
from gpu_tree.growing.splitting import SplitConstraints, select_splits

CUDA_USABLE, CUDA_REASON, _ = cuda_status()


def _poisson_data(n=300, n_features=4, seed=0, float32=True):
    """Counts whose rate depends on the first two features; X float32-exact (scikit-learn
    splits float32 copies) and without ties."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, n_features))
    if float32:
        X = X.astype(np.float32).astype(np.float64)
    y = rng.poisson(np.exp(0.5 + 2.0 * X[:, 0] - 1.5 * X[:, 1])).astype(np.float64)
    return X, y


def _half_deviance(y, w):
    """sum w (y log(y / m) - y + m) / sum w, m the weighted mean (0 log 0 = 0), in long
    double: each term is y log(y / m) - (y - m), summed."""
    y, w = y.astype(np.longdouble), w.astype(np.longdouble)
    m = np.sum(w * y) / np.sum(w)
    logs = np.log(np.where(y > 0, y, 1.0) / m)
    terms = np.where(y > 0, y * logs, 0.0) - (y - m)
    return float(np.sum(w * terms) / np.sum(w))


def _brute_force_root(X, y, w):
    """(feature, threshold) maximising the Poisson proxy over every threshold, children
    of a positive sum of w y only; the lowest feature, then threshold, wins ties."""
    best, found = -np.inf, None
    for f in range(X.shape[1]):
        order = np.argsort(X[:, f], kind="stable")
        xs, ys, ws = X[order, f], y[order], w[order]
        sum_wy, sum_w = np.cumsum(ws * ys), np.cumsum(ws)
        for i in range(len(xs) - 1):
            if xs[i] == xs[i + 1]:
                continue
            s_l, w_l = sum_wy[i], sum_w[i]
            s_r, w_r = sum_wy[-1] - s_l, sum_w[-1] - w_l
            if s_l <= 1e-12 or s_r <= 1e-12:
                continue
            proxy = s_l * np.log(s_l / w_l) + s_r * np.log(s_r / w_r)
            if proxy > best * (1 + 1e-12) + 1e-12:
                best, found = proxy, (f, (xs[i] + xs[i + 1]) / 2)
    return found


def _proxy(X, y, w, rows, feature, threshold):
    """The Poisson proxy sum_k S_k log(S_k / W_k) of a split of ``rows``."""
    left = X[rows, feature] <= threshold
    total = 0.0
    for side in (left, ~left):
        s, weight = np.sum(w[rows][side] * y[rows][side]), np.sum(w[rows][side])
        total += s * np.log(s / weight)
    return total


def _assert_same_tree(ours, theirs, impurity_rtol=1e-7, data=None):
    """Walk both trees together (scikit-learn numbers depth first, we breadth first).
    With ``data`` (X, y, w), where the two split a node on different features their
    splits must score the same (a tie, which scikit-learn breaks by its random feature
    order, we by the lowest feature): their subtrees are not compared. Returns how many
    nodes were compared."""
    a, b = ours.tree_, theirs.tree_
    path = None if data is None else ours.decision_path(data[0]).toarray().astype(bool)
    compared = 0
    stack = [(0, 0)]
    while stack:
        i, j = stack.pop()
        compared += 1
        if path is not None and a.children_left[i] != -1 and a.feature[i] != b.feature[j]:
            X, y, w = data
            rows = path[:, i]
            score_a = _proxy(X, y, w, rows, a.feature[i], a.threshold[i])
            score_b = _proxy(X, y, w, rows, b.feature[j], b.threshold[j])
            assert score_a == pytest.approx(score_b, rel=1e-12), f"node {i}"
            continue
        assert a.n_node_samples[i] == b.n_node_samples[j]
        np.testing.assert_allclose(a.value[i].ravel(), b.value[j].ravel(), rtol=1e-9)
        np.testing.assert_allclose(a.impurity[i], b.impurity[j], rtol=impurity_rtol, atol=1e-12)
        np.testing.assert_allclose(a.weighted_n_node_samples[i], b.weighted_n_node_samples[j])
        leaf = a.children_left[i] == -1
        assert leaf == (b.children_left[j] == -1), f"node {i}"
        if not leaf:
            assert a.feature[i] == b.feature[j], f"node {i}"
            np.testing.assert_allclose(a.threshold[i], b.threshold[j], rtol=1e-12)
            stack.append((a.children_left[i], b.children_left[j]))
            stack.append((a.children_right[i], b.children_right[j]))
    if data is None:
        assert a.node_count == b.node_count
    return compared


def _assert_valid_poisson_tree(model, X, y, w=None, impurity_rtol=1e-9):
    """Every node's value is its rows' weighted mean, its impurity their half deviance,
    every node's sum of y positive (so every prediction is)."""
    w = np.ones(len(y)) if w is None else w
    tree = model.tree_
    path = model.decision_path(X).toarray().astype(bool)
    for node in range(tree.node_count):
        rows = path[:, node]
        assert rows.any()
        np.testing.assert_allclose(
            tree.value[node, 0, 0], np.sum(w[rows] * y[rows]) / np.sum(w[rows]), rtol=1e-12
        )
        np.testing.assert_allclose(
            tree.impurity[node], _half_deviance(y[rows], w[rows]), rtol=impurity_rtol, atol=1e-13
        )
        assert np.sum(w[rows] * y[rows]) > 0
    assert np.all(model.predict(X) > 0)


def test_poisson_is_a_regression_criterion():
    assert "poisson" in REGRESSION_CRITERIA
    assert "poisson" in DecisionTreeRegressor.__doc__


# -- brute force and hand-computed deviances ---------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_exact_root_split_is_the_brute_force_best(seed, weighted):
    X, y = _poisson_data(n=150, seed=seed)
    rng = np.random.default_rng(seed + 100)
    w = rng.choice([0.5, 1.0, 2.0, 3.0], size=len(y)) if weighted else np.ones(len(y))
    model = DecisionTreeRegressor(criterion="poisson", splitter="exact", max_depth=1)
    model.fit(X, y, sample_weight=w if weighted else None)
    feature, threshold = _brute_force_root(X, y, w)
    assert model.tree_.feature[0] == feature
    np.testing.assert_allclose(model.tree_.threshold[0], threshold, rtol=1e-12)


@pytest.mark.parametrize("splitter", ["exact", "hist"])
@pytest.mark.parametrize("weighted", [False, True])
def test_node_impurities_are_half_poisson_deviances(splitter, weighted):
    X, y = _poisson_data(n=400, seed=3)
    rng = np.random.default_rng(7)
    w = rng.choice([0.25, 1.0, 2.5], size=len(y)) if weighted else None
    model = DecisionTreeRegressor(criterion="poisson", splitter=splitter, max_depth=6)
    model.fit(X, y, sample_weight=w)
    _assert_valid_poisson_tree(model, X, y, w)


def test_zero_targets_only_children_are_never_made():
    # y is 0 wherever x < 0.5: squared error splits there, Poisson may not isolate them.
    rng = np.random.default_rng(0)
    X = rng.random((200, 1))
    y = np.where(X[:, 0] < 0.5, 0.0, rng.poisson(3.0, 200) + 1.0)
    for splitter in ("exact", "hist"):
        model = DecisionTreeRegressor(criterion="poisson", splitter=splitter).fit(X, y)
        _assert_valid_poisson_tree(model, X, y)
    squared = DecisionTreeRegressor(splitter="exact", max_depth=1).fit(X, y)
    assert squared.tree_.value[1, 0, 0] == 0.0  # the split Poisson refuses


def test_targets_of_large_offset_keep_their_sums():
    # Sums of w y come back from centred fixed-point sums: a large centre must not hide
    # a child's zero sum, nor spoil the split.
    X, y = _poisson_data(n=200, seed=5)
    y = y + 1e6
    ours = DecisionTreeRegressor(criterion="poisson", splitter="exact", max_depth=3).fit(X, y)
    theirs = SkDecisionTreeRegressor(criterion="poisson", max_depth=3).fit(X, y)
    # scikit-learn's impurities lose digits here (y log(y / m) summed at y = 1e6): ours are
    # compared with the hand-computed deviances, in long double.
    _assert_same_tree(ours, theirs, impurity_rtol=1e-3)
    _assert_valid_poisson_tree(ours, X, y, impurity_rtol=1e-7)


# -- against scikit-learn --------------------------------------------------------------------
def _diabetes_counts():
    X, y = load_diabetes(return_X_y=True)
    X = X.astype(np.float32).astype(np.float64)
    return X, np.round(y / 5.0)


@pytest.mark.parametrize(
    "params",
    [
        {"max_depth": 4},
        {"max_depth": 8, "min_samples_leaf": 5},
        {"max_leaf_nodes": 12},
        {"max_depth": 6, "min_impurity_decrease": 0.02},
    ],
)
def test_exact_mode_grows_scikit_learns_tree_on_diabetes_counts(params):
    # Rounded counts tie at small nodes: a tie's subtrees are not compared.
    X, y = _diabetes_counts()
    ours = DecisionTreeRegressor(criterion="poisson", splitter="exact", **params).fit(X, y)
    theirs = SkDecisionTreeRegressor(criterion="poisson", random_state=0, **params).fit(X, y)
    compared = _assert_same_tree(ours, theirs, data=(X, y, np.ones(len(y))))
    assert compared >= 0.6 * ours.tree_.node_count
    _assert_valid_poisson_tree(ours, X, y)


@pytest.mark.parametrize("seed", range(3))
def test_exact_mode_grows_scikit_learns_tree_on_random_counts(seed):
    X, y = _poisson_data(n=300, seed=seed)
    w = np.random.default_rng(seed).choice([1.0, 2.0, 4.0], size=len(y))
    ours = DecisionTreeRegressor(criterion="poisson", splitter="exact").fit(X, y, w)
    theirs = SkDecisionTreeRegressor(criterion="poisson", random_state=0).fit(X, y, w)
    # Fully grown: a node of two rows splits them alike on any feature (a tie).
    compared = _assert_same_tree(ours, theirs, data=(X, y, w))
    assert compared >= 0.6 * ours.tree_.node_count
    limited = dict(criterion="poisson", min_samples_leaf=8)
    ours = DecisionTreeRegressor(splitter="exact", **limited).fit(X, y, w)
    theirs = SkDecisionTreeRegressor(random_state=0, **limited).fit(X, y, w)
    _assert_same_tree(ours, theirs)


def test_histogram_mode_with_a_bin_per_value_equals_exact_mode():
    rng = np.random.default_rng(4)
    X = np.round(rng.random((500, 3)) * 100) / 100  # at most 101 distinct values
    y = rng.poisson(np.exp(X[:, 0] + X[:, 1])).astype(float)
    w = rng.choice([1.0, 2.0], size=len(y))
    params = dict(criterion="poisson", max_depth=8)
    hist = DecisionTreeRegressor(splitter="hist", max_bins=256, **params).fit(X, y, w)
    exact = DecisionTreeRegressor(splitter="exact", **params).fit(X, y, w)
    assert_tree_equal(hist.tree_, exact.tree_, impurity_rtol=1e-12)


def test_missing_values_histogram_equals_exact_and_trees_are_valid():
    rng = np.random.default_rng(6)
    X = np.round(rng.random((400, 3)) * 50) / 50
    y = rng.poisson(np.exp(X[:, 0] + X[:, 1])).astype(float)
    X[rng.random(X.shape) < 0.15] = np.nan
    params = dict(criterion="poisson", max_depth=6)
    hist = DecisionTreeRegressor(splitter="hist", **params).fit(X, y)
    exact = DecisionTreeRegressor(splitter="exact", **params).fit(X, y)
    assert_tree_equal(hist.tree_, exact.tree_, impurity_rtol=1e-12)
    _assert_valid_poisson_tree(hist, X, y)


@pytest.mark.parametrize("categorical_split", ["binary", "multiway"])
def test_categorical_features(categorical_split):
    rng = np.random.default_rng(8)
    n = 400
    code = rng.integers(0, 6, n)
    rate = np.array([0.2, 3.0, 1.0, 6.0, 0.5, 2.0])[code]
    X = np.c_[code, rng.random(n)]
    y = rng.poisson(rate * (1 + X[:, 1])).astype(float)
    model = DecisionTreeRegressor(
        criterion="poisson",
        max_depth=4,
        categorical_features=[0],
        categorical_split=categorical_split,
    ).fit(X, y)
    assert np.any(model.tree_.feature == 0)
    _assert_valid_poisson_tree(model, X, y)


# -- the compiled search against the vectorised one, and the subtree finisher ---------------
@pytest.mark.parametrize("seed", range(6))
def test_the_compiled_search_chooses_what_the_vectorised_one_does(seed):
    rng = np.random.default_rng(seed)
    n_nodes, n_features, n_bins = int(rng.integers(1, 6)), int(rng.integers(1, 5)), 16
    weighted, missing_rate = bool(seed % 2), [0.0, 0.2][seed % 2]
    rows = rng.integers(1, 100, size=n_nodes)
    node = np.repeat(np.arange(n_nodes), rows)
    n = int(rows.sum())
    bins = rng.integers(0, n_bins, size=(n, n_features))
    bins[rng.random((n, n_features)) < missing_rate] = n_bins
    y = rng.poisson(rng.choice([0.3, 2.0, 50.0]), size=n).astype(float) + [0.0, 1e4][seed // 3]
    y[rng.random(n) < 0.3] = 0.0
    weight = rng.choice([0.5, 1.0, 3.25], size=n) if weighted else np.ones(n)
    centre = regression_centre(y)
    weighted_sum = weight * (y - centre)
    exponents = (
        fixed_point_exponent(weight) if weighted else 0,
        fixed_point_exponent(weighted_sum),
    )
    columns = [to_fixed_point(weight, exponents[0]), to_fixed_point(weighted_sum, exponents[1])]
    if weighted:
        columns.append(np.ones(n, dtype=np.int64))
        exponents = (*exponents, 0)
    stats = np.stack(columns, axis=1)
    layout = StatsLayout(False, 0, weighted, exponents=exponents, centre=centre)
    hist = np.zeros((n_nodes, n_features, n_bins + 1, stats.shape[1]), dtype=np.int64)
    for f in range(n_features):
        np.add.at(hist, (node, f, bins[:, f]), stats)
    common = dict(
        criterion="poisson",
        layout=layout,
        constraints=SplitConstraints(min_samples_leaf=int(rng.choice([1, 3]))),
        missing=hist[:, :, n_bins] if missing_rate else None,
    )
    reference = select_splits(hist[:, :, :n_bins], **common)
    compiled = select_splits(hist[:, :, :n_bins], compiled=score_splits_on_cpu, **common)
    np.testing.assert_array_equal(compiled.has_split, reference.has_split)
    split = reference.has_split
    for name in ("feature", "bin", "next_bin", "missing_left"):
        np.testing.assert_array_equal(
            getattr(compiled, name)[split], getattr(reference, name)[split]
        )
    np.testing.assert_allclose(compiled.score, reference.score, rtol=1e-9, atol=1e-12)


def test_the_subtree_finisher_leaves_the_tree_unchanged(monkeypatch):
    # The same tree, deviances included (measured on the rows the finisher leaves in its
    # nodes' order), with the finisher asked to take over at every size or at none.
    X, y = _poisson_data(n=600, seed=2)
    models = []
    for below in (0, 1 << 30):
        monkeypatch.setattr(grower_module, "FINISH_BELOW_ROWS", below)
        monkeypatch.setattr(grower_module, "FINISH_ROOT_BELOW_ROWS", below)
        models.append(DecisionTreeRegressor(criterion="poisson", max_depth=7).fit(X, y))
    phases = [{p for level in m.fit_stats_ for p in level["seconds"]} for m in models]
    assert "subtrees" not in phases[0] and "subtrees" in phases[1]
    assert_tree_equal(*(m.tree_ for m in models), impurity_rtol=0, value_rtol=0)


# -- CUDA (the simulator without a GPU) --------------------------------------------------------
@pytest.mark.skipif(not CUDA_USABLE, reason=f"CUDA backend not usable: {CUDA_REASON}")
@pytest.mark.parametrize("case", ["weighted", "missing", "categorical"])
def test_cuda_tree_equals_cpu_tree(case):
    rng = np.random.default_rng(9)
    n = 160
    X = np.round(rng.random((n, 3)) * 20) / 20
    y = rng.poisson(np.exp(X[:, 0] + X[:, 1])).astype(float)
    w = None
    params = dict(criterion="poisson", max_depth=4)
    if case == "weighted":
        w = rng.choice([0.5, 1.0, 2.0], size=n)
    elif case == "missing":
        X[rng.random(X.shape) < 0.1] = np.nan
    else:
        X[:, 2] = rng.integers(0, 5, n)
        params["categorical_features"] = [2]
    cpu = DecisionTreeRegressor(device="cpu", **params).fit(X, y, sample_weight=w)
    cuda = DecisionTreeRegressor(device="cuda", **params).fit(X, y, sample_weight=w)
    assert_tree_equal(cuda.tree_, cpu.tree_, impurity_rtol=1e-12)
    _assert_valid_poisson_tree(cuda, X, y, w)


# -- errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize("estimator", [DecisionTreeRegressor, RandomForestRegressor])
def test_negative_targets_are_refused(estimator):
    X, y = _poisson_data(n=50)
    y[3] = -1.0
    with pytest.raises(ValueError, match="Some value\\(s\\) of y are negative"):
        estimator(criterion="poisson").fit(X, y)


@pytest.mark.parametrize(
    "estimator, message",
    [
        (DecisionTreeRegressor, "Sum of y is not positive which is necessary"),
        (RandomForestRegressor, "Sum of y is not strictly positive which is necessary"),
        (ExtraTreesRegressor, "Sum of y is not strictly positive which is necessary"),
    ],
)
def test_targets_summing_to_zero_are_refused(estimator, message):
    X, _ = _poisson_data(n=50)
    with pytest.raises(ValueError, match=message):
        estimator(criterion="poisson").fit(X, np.zeros(50))


def test_a_classifier_refuses_poisson():
    X, y = _poisson_data(n=50)
    with pytest.raises(ValueError, match="regression criterion"):
        DecisionTreeClassifier(criterion="poisson").fit(X, y > 2)


def test_squared_error_fits_accept_negative_targets_still():
    X, y = _poisson_data(n=50)
    DecisionTreeRegressor(max_depth=2).fit(X, y - 10.0)


# -- forests and model files -----------------------------------------------------------------
@pytest.mark.parametrize("forest", [RandomForestRegressor, ExtraTreesRegressor])
def test_forests_grow_poisson_trees(forest):
    X, y = _poisson_data(n=300, seed=1)
    model = forest(n_estimators=5, criterion="poisson", max_depth=6, random_state=0).fit(X, y)
    assert np.all(model.predict(X) > 0)
    for tree in model.estimators_:
        assert tree.criterion == "poisson"
        assert np.all(tree.tree_.impurity >= 0)
        leaves = tree.tree_.children_left == -1
        assert np.all(tree.tree_.value[leaves, 0, 0] > 0)


def test_random_forest_fits_the_rates_as_scikit_learns_does():
    X, y = _poisson_data(n=300, seed=1)
    rate = np.exp(0.5 + 2.0 * X[:, 0] - 1.5 * X[:, 1])
    params = dict(n_estimators=10, criterion="poisson", max_depth=6, random_state=0)
    ours = RandomForestRegressor(**params).fit(X, y).predict(X)
    theirs = SkRandomForestRegressor(**params).fit(X, y).predict(X)
    assert np.all(ours > 0) and np.all(theirs > 0)
    assert np.corrcoef(ours, theirs)[0, 1] > 0.9
    assert np.corrcoef(ours, rate)[0, 1] > 0.8


def test_a_forest_without_bootstrap_grows_the_single_tree():
    X, y = _poisson_data(n=300, seed=2)
    params = dict(criterion="poisson", max_depth=6)
    tree = DecisionTreeRegressor(**params).fit(X, y)
    forest = RandomForestRegressor(n_estimators=2, bootstrap=False, **params).fit(X, y)
    for estimator in forest.estimators_:
        assert_tree_equal(estimator.tree_, tree.tree_, impurity_rtol=1e-12)
        _assert_valid_poisson_tree(estimator, X, y)


def test_model_file_round_trip(tmp_path):
    X, y = _poisson_data(n=200)
    model = DecisionTreeRegressor(criterion="poisson", max_depth=5).fit(X, y)
    path = tmp_path / "model.json"
    model.save(path)
    loaded = gpu_tree.load(path)
    assert loaded.criterion == "poisson"
    assert_tree_equal(model.tree_, loaded.tree_, impurity_rtol=0, value_rtol=0)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
