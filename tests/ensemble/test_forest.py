"""Random forests: each tree is the tree its bootstrap sample grows, whatever batch it
grew in and on whichever device; out-of-bag scores against a brute force; determinism;
scikit-learn's estimator checks and parameter errors."""

from __future__ import annotations

import numpy as np
import pytest
from _oracles import extra_trees_root_split
from sklearn.datasets import load_iris, make_classification, make_regression
from sklearn.utils.class_weight import compute_sample_weight
from sklearn.utils.estimator_checks import check_estimator

import gpu_tree.ensemble.forest as forest_module
import gpu_tree.growing.feature_draws as feature_draws_module
import gpu_tree.growing.grower as grower_module
from gpu_tree import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
    assert_tree_equal,
)
from gpu_tree.backends.cuda import cuda_status, predict_forest_on_device
from gpu_tree.growing.feature_draws import FeatureDraws
from gpu_tree.growing.random_draws import draw_features, root_keys, uniform_draws
from gpu_tree.kernels.cpu import prediction as cpu_prediction
from gpu_tree.model.tree import (
    CATEGORICAL_SUBSET,
    forest_lockstep_arrays,
    forest_walk_arrays,
    predict_forest,
    predict_forest_lockstep,
)


@pytest.fixture(scope="module")
def classification():
    X, y = make_classification(
        600, 8, n_informative=5, n_classes=3, n_clusters_per_class=1, random_state=0
    )
    X = np.round(X, 1)  # ties between rows, bins of several values
    X[::17, 2] = np.nan  # missing values
    return X, y


@pytest.fixture(scope="module")
def regression():
    X, y = make_regression(500, 6, n_informative=4, noise=5.0, random_state=1)
    return np.round(X, 2), y


def _trees(forest):
    return [e.tree_ for e in forest.estimators_]


def _assert_forests_equal(a, b):
    assert len(a.estimators_) == len(b.estimators_)
    for first, second in zip(_trees(a), _trees(b), strict=True):
        assert_tree_equal(first, second, impurity_rtol=0, value_rtol=0)


# -- each tree is its bootstrap sample's tree -----------------------------------------------
def _bootstrap_weights(forest, tree, n_samples, n_drawn):
    return forest._bootstrap_counts(tree, n_samples, n_drawn).astype(float)


def test_each_tree_is_the_tree_of_its_bootstrap_sample(classification):
    """With every feature searched (no draws), tree t equals a lone tree fitted with its
    bootstrap counts as sample weights; the counts are what the roots hold."""
    X, y = classification
    forest = RandomForestClassifier(
        6, max_features=None, max_depth=6, random_state=3, device="cpu"
    ).fit(X, y)
    for t, estimator in enumerate(forest.estimators_):
        counts = _bootstrap_weights(forest, t, X.shape[0], X.shape[0])
        assert estimator.tree_.n_node_samples[0] == np.count_nonzero(counts)
        assert estimator.tree_.weighted_n_node_samples[0] == counts.sum()
        lone = DecisionTreeClassifier(max_depth=6, device="cpu").fit(X, y, sample_weight=counts)
        assert_tree_equal(estimator.tree_, lone.tree_, impurity_rtol=0, value_rtol=0)


def test_balanced_subsample_weighs_classes_per_tree(classification):
    """'balanced_subsample': scikit-learn's balanced weights of each bootstrap sample."""
    X, y = classification
    forest = RandomForestClassifier(
        3, max_features=None, max_depth=4, class_weight="balanced_subsample", random_state=5
    ).fit(X, y)
    for t, estimator in enumerate(forest.estimators_):
        counts = _bootstrap_weights(forest, t, X.shape[0], X.shape[0])
        drawn = np.repeat(np.arange(X.shape[0]), counts.astype(int))
        weight = counts * compute_sample_weight("balanced", y, indices=drawn)
        lone = DecisionTreeClassifier(max_depth=4, device="cpu").fit(X, y, sample_weight=weight)
        assert_tree_equal(estimator.tree_, lone.tree_)


def test_without_bootstrap_and_every_feature_all_trees_are_the_lone_tree(regression):
    X, y = regression
    forest = RandomForestRegressor(3, bootstrap=False, max_depth=5, device="cpu").fit(X, y)
    lone = DecisionTreeRegressor(max_depth=5, device="cpu").fit(X, y)
    for tree in _trees(forest):
        assert_tree_equal(tree, lone.tree_)


@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_trees_do_not_depend_on_their_batch(kind, classification, regression, monkeypatch):
    """Grown all together, one at a time, or by warm start: the same trees."""
    X, y = classification if kind == "classifier" else regression
    model = RandomForestClassifier if kind == "classifier" else RandomForestRegressor
    weight = np.random.default_rng(0).uniform(0.5, 3.0, X.shape[0])
    params = dict(max_features=0.5, max_depth=7, random_state=11, device="cpu")
    together = model(8, **params).fit(X, y, sample_weight=weight)
    assert together.n_batches_ == 1
    monkeypatch.setattr(forest_module, "FOREST_BATCH_BYTES", 1)
    alone = model(8, **params).fit(X, y, sample_weight=weight)
    assert alone.n_batches_ == 8
    _assert_forests_equal(together, alone)
    warm = model(3, warm_start=True, **params).fit(X, y, sample_weight=weight)
    warm.set_params(n_estimators=8).fit(X, y, sample_weight=weight)
    _assert_forests_equal(together, warm)


@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_cuda_forest_equals_cpu_forest(kind, classification, regression):
    """CUDA (the simulator here) grows the same trees as the CPU, tree for tree."""
    X, y = classification if kind == "classifier" else regression
    X, y = X[:200], y[:200]
    model = RandomForestClassifier if kind == "classifier" else RandomForestRegressor
    params = dict(max_features=3, max_depth=4, random_state=2, oob_score=True)
    cpu = model(4, device="cpu", **params).fit(X, y)
    cuda = model(4, device="cuda", **params).fit(X, y)
    assert cuda.device_ == "cuda"
    _assert_forests_equal(cpu, cuda)
    assert cpu.oob_score_ == cuda.oob_score_


def test_forest_prediction_on_the_device_is_one_launch_equal_to_the_cpus(
    classification, regression
):
    """Every tree of a forest walked in one CUDA kernel (the simulator here), adding the
    trees in the CPU's order: the same bits as the CPU's compiled loop, numeric and
    category-subset splits, classification and regression."""
    usable, reason, xp = cuda_status()
    if not usable:
        pytest.skip(f"CUDA backend not usable: {reason}")
    X, y = classification
    X = X[:150].copy()
    X[:, 0] = np.floor(np.abs(X[:, 0]) * 3) % 6  # category codes, split by subsets
    fitted = [
        RandomForestClassifier(3, max_depth=4, random_state=0, categorical_features=[0]).fit(
            X, y[:150]
        ),
        RandomForestRegressor(3, max_depth=4, random_state=0).fit(*regression),
    ]
    for forest, rows in zip(fitted, (X, regression[0][:150]), strict=True):
        packed = forest_walk_arrays([e.tree_ for e in forest.estimators_])
        on_device = predict_forest_on_device(packed, xp.asarray(rows), xp)
        on_device = on_device.get() if hasattr(on_device, "get") else on_device
        np.testing.assert_array_equal(on_device, predict_forest(packed, rows))
    kinds = np.concatenate([e.tree_.split_kind for e in fitted[0].estimators_])
    assert (kinds == CATEGORICAL_SUBSET).any()  # the category sets were walked


# -- determinism and the draws ---------------------------------------------------------------
def test_random_state_fixes_the_forest(classification):
    X, y = classification
    params = dict(max_depth=5, device="cpu")
    a = RandomForestClassifier(5, random_state=7, **params).fit(X, y)
    b = RandomForestClassifier(5, random_state=7, **params).fit(X, y)
    _assert_forests_equal(a, b)
    c = RandomForestClassifier(5, random_state=8, **params).fit(X, y)
    assert any(
        t.node_count != u.node_count or not np.array_equal(t.feature, u.feature)
        for t, u in zip(_trees(a), _trees(c), strict=True)
    )
    # Trees of one forest differ from each other (own bootstrap, own draws).
    assert len({tuple(t.feature[:3]) for t in _trees(a)}) > 1


def test_feature_draws_are_uniform_and_keyed():
    keys = root_keys(12345, np.arange(20000))
    mask = draw_features(keys, 10, 3)
    assert (mask.sum(axis=1) == 3).all()
    frequency = mask.mean(axis=0)
    assert np.allclose(frequency, 0.3, atol=0.015)  # 3 of 10, every feature alike
    assert np.array_equal(mask, draw_features(keys, 10, 3))  # a function of the keys
    eligible = np.zeros((keys.size, 10), dtype=bool)
    eligible[:, [1, 4]] = True  # fewer eligible than drawn: all of them
    assert (draw_features(keys, 10, 3, eligible) == eligible).all()
    uniform = uniform_draws(keys, 4)
    assert ((uniform >= 0) & (uniform < 1)).all()
    assert abs(uniform.mean() - 0.5) < 0.01


def test_features_are_drawn_among_non_constant_ones():
    """A node draws among its non-constant features (as scikit-learn): with max_features=1
    and nine constant columns beside one informative one, every split uses it."""
    rng = np.random.default_rng(0)
    X = np.zeros((300, 10))
    X[:, 6] = rng.normal(size=300)
    y = (X[:, 6] > 0.1).astype(int)
    forest = RandomForestClassifier(5, max_features=1, max_depth=3, random_state=0).fit(X, y)
    for tree in _trees(forest):
        split = tree.feature[tree.children_left >= 0]
        assert split.size and (split == 6).all()


# -- out of bag ----------------------------------------------------------------------------
def test_oob_against_brute_force(classification):
    X, y = classification
    with pytest.warns(UserWarning, match="Some inputs do not have OOB scores"):
        forest = RandomForestClassifier(
            12, max_depth=6, oob_score=True, random_state=4, device="cpu"
        ).fit(X, y)
    n = X.shape[0]
    in_bag = np.array([_bootstrap_weights(forest, t, n, n) > 0 for t in range(12)])
    expected = np.zeros((n, forest.n_classes_))
    for i in range(n):
        out = [e for t, e in enumerate(forest.estimators_) if not in_bag[t, i]]
        if out:
            expected[i] = np.mean([e.predict_proba(X[i : i + 1])[0] for e in out], axis=0)
    np.testing.assert_allclose(forest.oob_decision_function_, expected, rtol=1e-12)
    # Rows in every tree's bag (0.632**12 of them: a few) have no OOB estimate: zeros,
    # as in scikit-learn, and the warning above.
    uncovered = in_bag.all(axis=0)
    assert 0 < uncovered.sum() < 10
    assert (forest.oob_decision_function_[uncovered] == 0).all()
    accuracy = np.mean(forest.classes_[expected.argmax(axis=1)] == y)
    assert forest.oob_score_ == pytest.approx(accuracy)


def test_oob_regression_and_max_samples(regression):
    X, y = regression
    forest = RandomForestRegressor(
        15, max_samples=0.5, oob_score=True, random_state=0, device="cpu"
    ).fit(X, y)
    n = X.shape[0]
    for t, estimator in enumerate(forest.estimators_):
        counts = _bootstrap_weights(forest, t, n, n // 2)
        assert counts.sum() == n // 2 == estimator.tree_.weighted_n_node_samples[0]
    residual = np.sum((y - forest.oob_prediction_) ** 2)
    assert forest.oob_score_ == pytest.approx(1 - residual / np.sum((y - y.mean()) ** 2))
    assert 0.5 < forest.oob_score_ < forest.score(X, y)


# -- prediction and importances -----------------------------------------------------------------
def test_predictions_average_the_trees(classification, regression):
    X, y = classification
    forest = RandomForestClassifier(7, max_depth=5, random_state=1).fit(X, y)
    mean = np.mean([e.predict_proba(X) for e in forest.estimators_], axis=0)
    np.testing.assert_allclose(forest.predict_proba(X), mean, rtol=1e-12)
    np.testing.assert_array_equal(forest.predict(X), forest.classes_[mean.argmax(axis=1)])
    leaves = forest.apply(X)
    assert leaves.shape == (X.shape[0], 7)
    assert np.array_equal(leaves[:, 2], forest.estimators_[2].apply(X))
    Xr, yr = regression
    regressor = RandomForestRegressor(5, max_depth=5, random_state=1).fit(Xr, yr)
    expected = np.mean([e.predict(Xr) for e in regressor.estimators_], axis=0)
    np.testing.assert_allclose(regressor.predict(Xr), expected, rtol=1e-12)


def test_the_lockstep_forest_walk_gives_the_general_walks_bits(classification, regression):
    """Forests of numeric splits predict through the lock-step walk: the general walk's
    bits, row for row, with missing values (both missing rules), values equal to a
    threshold, infinities, and batches that end inside a group of rows stepping
    together or inside a block; serial and parallel. A forest with a category split has
    no lock-step table and takes the general walk."""
    X, y = classification
    X = X.copy()
    X[::7, 1] = np.nan  # missing values: the trees learn where they go
    Xr, yr = regression
    forests = [
        RandomForestClassifier(6, max_depth=6, random_state=3).fit(X, y),
        RandomForestRegressor(5, max_depth=7, random_state=3).fit(Xr, yr),
    ]
    for forest, rows in zip(forests, (X, Xr), strict=True):
        trees = [e.tree_ for e in forest.estimators_]
        lockstep = forest_lockstep_arrays(trees)
        general = forest_walk_arrays(trees)
        internal = [(t, np.flatnonzero(t.children_left >= 0)) for t in trees]
        at_threshold = np.vstack([np.tile(rows[:1], (n.size, 1)) for _, n in internal if n.size])
        first = 0
        for tree, nodes in internal:  # each split's own threshold, on its own feature
            at_threshold[first + np.arange(nodes.size), tree.feature[nodes]] = tree.threshold[nodes]
            first += nodes.size
        extremes = np.random.default_rng(4).choice(
            [np.nan, np.inf, -np.inf, 0.0], size=(40, rows.shape[1])
        )
        every = np.ascontiguousarray(np.vstack([rows, at_threshold, extremes]))
        for n in (
            every.shape[0],
            1,
            cpu_prediction.LOCKSTEP_ROWS + 3,
            cpu_prediction.FOREST_ROWS + 5,
        ):
            expected = predict_forest(general, every[:n])
            np.testing.assert_array_equal(predict_forest_lockstep(lockstep, every[:n]), expected)
            for walk in (
                cpu_prediction.predict_forest_lockstep.serial,
                cpu_prediction.predict_forest_lockstep.parallel,
            ):
                out = np.full_like(expected, -7.0)
                walk(every[:n], *lockstep, out)
                np.testing.assert_array_equal(out, expected)
        model_rows = rows[:50]
        expected = predict_forest(general, model_rows)
        if isinstance(forest, RandomForestClassifier):
            np.testing.assert_array_equal(forest.predict_proba(model_rows), expected)
        else:
            np.testing.assert_array_equal(forest.predict(model_rows), expected[:, 0])
    X_cat = X[:150].copy()
    X_cat[:, 0] = np.floor(np.abs(np.nan_to_num(X_cat[:, 0])) * 3) % 6
    categorical = RandomForestClassifier(
        3, max_depth=4, random_state=0, categorical_features=[0]
    ).fit(X_cat, y[:150])
    trees = [e.tree_ for e in categorical.estimators_]
    assert (np.concatenate([t.split_kind for t in trees]) == CATEGORICAL_SUBSET).any()
    assert forest_lockstep_arrays(trees) is None
    np.testing.assert_array_equal(
        categorical.predict_proba(X_cat), predict_forest(forest_walk_arrays(trees), X_cat)
    )


def test_feature_importances_average_the_trees(classification):
    X, y = classification
    forest = RandomForestClassifier(6, max_depth=4, random_state=2).fit(X, y)
    per_tree = np.mean([e.feature_importances_ for e in forest.estimators_], axis=0)
    np.testing.assert_allclose(forest.feature_importances_, per_tree / per_tree.sum())
    assert forest.feature_importances_.sum() == pytest.approx(1.0)


def test_forest_beats_a_tree_on_iris_like_scikit_learn():
    from sklearn.ensemble import RandomForestClassifier as SklearnForest
    from sklearn.model_selection import cross_val_score

    X, y = load_iris(return_X_y=True)
    ours = cross_val_score(RandomForestClassifier(50, random_state=0), X, y, cv=5).mean()
    theirs = cross_val_score(SklearnForest(50, random_state=0), X, y, cv=5).mean()
    assert ours >= theirs - 0.02


def test_categorical_columns_and_dataframes():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    colour = rng.choice(["red", "green", "blue", "grey"], 400)
    size = rng.normal(size=400)
    y = ((colour == "red") | (size > 1)).astype(int)
    frame = pd.DataFrame({"colour": colour, "size": size})
    forest = RandomForestClassifier(10, max_features=None, random_state=0).fit(frame, y)
    assert forest.estimators_[0].is_categorical_.tolist() == [True, False]
    assert forest.score(frame, y) > 0.95
    assert list(forest.feature_names_in_) == ["colour", "size"]


def test_fewest_rows_and_settings_that_grow_trees_one_at_a_time(classification):
    X, y = classification
    forest = RandomForestClassifier(4, max_leaf_nodes=6, random_state=0).fit(X, y)
    assert forest.n_batches_ == 4
    assert all(t.n_leaves <= 6 for t in _trees(forest))
    forest = RandomForestClassifier(3, min_weight_fraction_leaf=0.1, random_state=0).fit(X, y)
    for tree in _trees(forest):
        leaves = tree.children_left < 0
        assert (tree.weighted_n_node_samples[leaves] >= 0.1 * tree.weighted_n_node_samples[0]).all()
    tiny = RandomForestClassifier(3, random_state=0).fit([[0.0], [1.0]], [0, 1])
    assert tiny.predict([[0.0], [1.0]]).shape == (2,)


# -- parameters and scikit-learn's checks ---------------------------------------------------
@pytest.mark.parametrize(
    "params, message",
    [
        ({"n_estimators": 0}, "n_estimators must be >= 1"),
        ({"oob_score": True, "bootstrap": False}, "only available if bootstrap=True"),
        ({"max_samples": 10, "bootstrap": False}, "max_samples cannot be set"),
        ({"max_samples": 0.0}, "'max_samples' parameter of RandomForestClassifier must be"),
        ({"n_jobs": 0}, "n_jobs must be None or a non-zero int"),
        ({"max_features": "half"}, "max_features"),
    ],
)
def test_parameter_errors(params, message, classification):
    X, y = classification
    with pytest.raises(ValueError, match=message):
        RandomForestClassifier(**params).fit(X, y)


def test_integer_parameters_refuse_other_types(classification):
    """As the trees' integer parameters: a number of another type is a TypeError."""
    X, y = classification
    with pytest.raises(TypeError, match="n_estimators must be an integer, got 2.5"):
        RandomForestClassifier(2.5).fit(X, y)


def test_warm_start_errors_and_warnings(classification):
    X, y = classification
    forest = RandomForestClassifier(4, warm_start=True, max_depth=3, random_state=0).fit(X, y)
    with pytest.warns(UserWarning, match="without increasing n_estimators"):
        forest.fit(X, y)
    assert len(forest.estimators_) == 4
    forest.set_params(n_estimators=2)
    with pytest.raises(ValueError, match="must be larger or equal to len"):
        forest.fit(X, y)


def test_a_warm_start_refuses_input_its_kept_trees_would_misread(classification):
    """The kept trees read category codes and class indices as they were: a refit whose
    column has other categories, or whose classes differ, once grew new trees on the new
    codes beside them (a forest scoring 0.49 whose trees each scored 1.0)."""
    import pandas as pd

    rng = np.random.default_rng(7)
    colour = rng.choice(["red", "green", "blue"], size=300)
    frame = pd.DataFrame({"colour": colour, "x": rng.normal(size=300)})
    y = (colour == "red").astype(int)
    forest = RandomForestClassifier(3, warm_start=True, max_depth=3, random_state=0)
    forest.fit(frame, y)
    forest.set_params(n_estimators=5)
    other = frame.assign(colour=np.where(colour == "red", "crimson", colour))
    with pytest.raises(ValueError, match=r"column 'colour' has the categories .*crimson"):
        forest.fit(other, y)
    with pytest.raises(ValueError, match=r"warm_start: the classes \['no', 'yes'\] differ"):
        forest.fit(frame, np.where(y == 1, "yes", "no"))
    assert len(forest.estimators_) == 3  # nothing grown by the refused fits
    forest.fit(frame, y)  # the same input: more trees
    assert len(forest.estimators_) == 5 and forest.score(frame, y) == 1.0
    X, y_numbers = classification
    numbers = RandomForestClassifier(2, warm_start=True, max_depth=2, random_state=0)
    numbers.fit(X, y_numbers).set_params(n_estimators=3)
    with pytest.raises(ValueError, match="n_features_in_=3 but the kept trees have"):
        numbers.fit(X[:, :3], y_numbers)


def test_n_jobs_limits_threads_and_restores_them(classification):
    import numba

    X, y = classification
    before = numba.get_num_threads()
    one = RandomForestClassifier(4, n_jobs=1, max_depth=4, random_state=0).fit(X, y)
    assert numba.get_num_threads() == before
    every = RandomForestClassifier(4, n_jobs=-1, max_depth=4, random_state=0).fit(X, y)
    _assert_forests_equal(one, every)


@pytest.mark.parametrize(
    "estimator",
    [RandomForestClassifier(n_estimators=5), RandomForestRegressor(n_estimators=5)],
    ids=type,
)
def test_check_estimator(estimator):
    # As scikit-learn's own forests: a bootstrap sample draws rows uniformly, then weighs
    # them, which is not the sample of data with rows repeated per their weight.
    not_equivalent = {
        "check_sample_weight_equivalence_on_dense_data": "bootstrap draws ignore weights",
        "check_sample_weight_equivalence_on_sparse_data": "bootstrap draws ignore weights",
    }
    results = check_estimator(estimator, on_fail=None, expected_failed_checks=not_equivalent)
    failed = [
        (r["check_name"], repr(r["exception"])[:300]) for r in results if r["status"] == "failed"
    ]
    assert not failed, failed
    assert len(results) > 40
    if estimator.bootstrap:
        expected = [r for r in results if r["check_name"] in not_equivalent]
        assert expected and all(r["status"] == "xfail" for r in expected)


# -- extremely randomised trees ---------------------------------------------------------------
def test_extra_trees_root_split_against_brute_force():
    """Each feature's candidate: a threshold drawn uniformly between the root's lowest
    and highest value (the root's key's draws), splitting after the last value at or
    below it; the root takes the candidate of largest Gini decrease."""
    rng = np.random.default_rng(4)
    X = np.round(rng.normal(size=(300, 5)), 2)
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    forest = ExtraTreesClassifier(
        3, max_features=None, max_depth=1, splitter="exact", random_state=9
    ).fit(X, y)
    for t, estimator in enumerate(forest.estimators_):
        uniform = uniform_draws(root_keys(forest._seed, [t]), X.shape[1])[0]
        feature, threshold = extra_trees_root_split(X, y, uniform)
        assert estimator.tree_.feature[0] == feature
        assert estimator.tree_.threshold[0] == pytest.approx(threshold)


def test_extra_trees_cuda_equals_cpu_and_scores_like_scikit_learn():
    from sklearn.ensemble import ExtraTreesClassifier as SklearnExtraTrees
    from sklearn.model_selection import cross_val_score

    X, y = load_iris(return_X_y=True)
    params = dict(max_depth=4, random_state=1, max_features=2)
    cpu = ExtraTreesClassifier(4, device="cpu", **params).fit(X, y)
    cuda = ExtraTreesClassifier(4, device="cuda", **params).fit(X, y)
    _assert_forests_equal(cpu, cuda)
    ours = cross_val_score(ExtraTreesClassifier(50, random_state=0), X, y, cv=5).mean()
    theirs = cross_val_score(SklearnExtraTrees(50, random_state=0), X, y, cv=5).mean()
    assert ours >= theirs - 0.02


def test_extra_trees_regression_and_refused_categories(regression):
    X, y = regression
    forest = ExtraTreesRegressor(20, random_state=0).fit(X[:400], y[:400])
    assert forest.score(X[400:], y[400:]) > 0.7
    assert not forest.bootstrap
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"colour": ["a", "b"] * 10, "size": np.arange(20.0)})
    with pytest.raises(ValueError, match="draws thresholds of numeric features only"):
        ExtraTreesClassifier(3).fit(frame, np.arange(20) % 2)


@pytest.mark.parametrize(
    "estimator",
    [ExtraTreesClassifier(n_estimators=5), ExtraTreesRegressor(n_estimators=5)],
    ids=type,
)
def test_extra_trees_check_estimator(estimator):
    test_check_estimator(estimator)


@pytest.mark.parametrize("dense", [True, False])
def test_random_split_histograms_against_a_loop(dense):
    """The collapsed two-bin histograms of extremely randomised trees, against a plain
    loop: present bins up to the drawn threshold left, the rest right, the codes and
    bounds of both sides; the missing bin (dense) left out."""
    from gpu_tree.kernels.cpu import histograms as cpu_histograms

    rng = np.random.default_rng(8)
    n_slots, n_features, n_bins, n_channels = 5, 4, 9, 3
    hist = rng.integers(0, 3, size=(n_slots, n_features, n_bins, n_channels))
    hist[:, 1, 2:] = 0  # few present bins
    hist[:, 2] = 0
    hist[:, 2, 4, 0] = 5  # one present bin: no candidate
    missing_bin = n_bins - 1 if dense else -1
    first_axis = 1 if dense else n_slots
    codes = np.sort(rng.choice(50, size=(first_axis, n_features, n_bins)), axis=2)
    lower = np.sort(rng.normal(size=(first_axis, n_features, n_bins)), axis=2)
    upper = lower + 0.01
    slots = np.array([4, 0, 2])
    uniform = rng.random((slots.size, n_features))
    out = [np.full((slots.size, n_features, 2, n_channels), -7)]
    out += [np.full((slots.size, n_features, 2), -7, dtype=t) for t in (np.int64, float, float)]
    cpu_histograms.random_split_histograms(
        hist, slots, missing_bin, codes, lower, upper, uniform, *out
    )
    out_hist, out_code, out_lower, out_upper = out
    for k, slot in enumerate(slots):
        at = 0 if dense else slot
        for f in range(n_features):
            present = [b for b in range(n_bins) if b != missing_bin and hist[slot, f, b].any()]
            if len(present) < 2:
                assert (out_hist[k, f, 1] == 0).all()
                continue
            low, high = lower[at, f, present[0]], upper[at, f, present[-1]]
            threshold = low + uniform[k, f] * (high - low)
            below = [b for b in present[:-1] if upper[at, f, b] <= threshold]
            split = below[-1] if below else present[0]
            left = [b for b in present if b <= split]
            right = [b for b in present if b > split]
            np.testing.assert_array_equal(out_hist[k, f, 0], hist[slot, f, left].sum(axis=0))
            np.testing.assert_array_equal(out_hist[k, f, 1], hist[slot, f, right].sum(axis=0))
            assert out_code[k, f].tolist() == [codes[at, f, split], codes[at, f, present[-1]]]
            assert out_lower[k, f].tolist() == [lower[at, f, present[0]], lower[at, f, right[0]]]
            assert out_upper[k, f].tolist() == [upper[at, f, split], upper[at, f, present[-1]]]


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_a_lone_dense_root_draws_among_its_non_constant_features(device):
    """A level of one dense histogram (a big root) counts each feature's filled bins, no
    missing values' stand-in among them: with max_features=1 the constant feature 0 is
    never drawn, so every seed splits the root on feature 1."""
    # A root the CPU grows level-wise (it finishes smaller ones whole).
    rows = grower_module.FINISH_ROOT_BELOW_ROWS + 1000 if device == "cpu" else 300
    X = np.column_stack([np.zeros(rows), np.arange(float(rows))])
    y = (np.arange(rows) >= rows // 2).astype(int)
    for seed in range(6):
        tree = DecisionTreeClassifier(
            max_features=1, max_depth=1, random_state=seed, device=device
        ).fit(X, y)
        assert tree.tree_.node_count == 3 and tree.tree_.feature[0] == 1, seed


@pytest.mark.parametrize(
    "model", [RandomForestClassifier, RandomForestRegressor, ExtraTreesClassifier]
)
@pytest.mark.parametrize("finish_subtrees", [False, True])
def test_drawn_features_histograms_grow_the_trees_of_every_features(
    model, finish_subtrees, monkeypatch
):
    """Drawing few features per node, the CPU builds only their histograms, each node's
    from its rows (feature_draws.DRAWN_ONLY_MAX_FRACTION), and draws on where a drawn feature is
    constant in the node: the trees are those of every feature's histograms and the
    subtraction trick. Constant columns, two-valued ones (constant below a split on them)
    and missing values make the nodes draw on; ties (a copied column) are broken alike:
    the lower feature wins, as over every feature."""
    rng = np.random.default_rng(5)
    rows = 4000
    X = np.zeros((rows, 12))
    X[:, 4:8] = rng.integers(0, 2, size=(rows, 4))  # 0..3: constant
    X[:, 8:] = np.round(rng.normal(size=(rows, 4)), 1)
    X[rng.random(rows) < 0.05, 9] = np.nan
    X[:, 11] = X[:, 8]  # a copy: where both are drawn, they tie; the lower one wins
    signal = X[:, 4] + X[:, 5] - X[:, 8] + np.nan_to_num(X[:, 9])
    y = signal if model is RandomForestRegressor else (signal > 0.5).astype(int) + (signal > 1.5)
    # Roots level by level (the finisher takes small nodes, or none: every node level by
    # level, the drawn batches at every size).
    monkeypatch.setattr(grower_module, "FINISH_ROOT_BELOW_ROWS", 0)
    if not finish_subtrees:
        monkeypatch.setattr(grower_module, "FINISH_BELOW_ROWS", 0)
    drew_on = []
    draw_on = FeatureDraws._draw_on

    def spy(self, nodes, *args):
        drew_on.append(nodes.size)
        return draw_on(self, nodes, *args)

    monkeypatch.setattr(FeatureDraws, "_draw_on", spy)
    params = dict(max_features=3, max_depth=8, random_state=3, device="cpu")
    weight = rng.integers(1, 4, rows).astype(float)
    drawn = model(4, **params).fit(X, y, sample_weight=weight)
    assert sum(drew_on) > 0  # some node found a drawn feature constant and drew on
    monkeypatch.setattr(feature_draws_module, "DRAWN_ONLY_MAX_FRACTION", 0.0)
    drew_on.clear()
    every = model(4, **params).fit(X, y, sample_weight=weight)
    assert not drew_on
    _assert_forests_equal(drawn, every)
    assert max(t.max_depth for t in _trees(drawn)) == 8
