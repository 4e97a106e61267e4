"""Oblique (multivariate) trees: fewer leaves on oblique boundaries, the keep rule,
determinism, scikit-learn compatibility, exports, model files, prediction, input errors."""

import json
import warnings

import numpy as np
import pytest
from _plain_models import plain_document

import gpu_tree
from gpu_tree import (
    DecisionTreeClassifier,
    ObliqueDecisionTreeClassifier,
    ObliqueDecisionTreeRegressor,
)
from gpu_tree.model.oblique import OBLIQUE, TREE_LEAF, TREE_UNDEFINED

sklearn = pytest.importorskip("sklearn")
from sklearn.utils.estimator_checks import check_estimator  # noqa: E402

DIRECTIONS = ("logistic", "perceptron", "svm", "lda")


def _rotated(n=1500, seed=0):
    """Two classes separated by x1 + x2 <= 0 (three noise features)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    return X, (X[:, 1] + X[:, 2] <= 0).astype(int)


def _split_data(X, y, n_train):
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_oblique_boundary_needs_fewer_leaves(direction):
    X, y = _rotated(3000)
    X_train, y_train, X_test, y_test = _split_data(X, y, 2000)
    axis = DecisionTreeClassifier(random_state=0).fit(X_train, y_train)
    oblique = ObliqueDecisionTreeClassifier(direction, random_state=0).fit(X_train, y_train)
    assert oblique.tree_.n_oblique >= 1
    assert oblique.tree_.feature[0] == OBLIQUE
    # The root's hyperplane is close to x1 + x2 (coefficients scaled to a largest of 1).
    root = oblique.tree_.coefficients[0]
    assert abs(root[1] - root[2]) < 0.3 * max(abs(root[1]), abs(root[2]))
    assert np.max(np.abs(root[[0, 3, 4]])) < 0.2
    assert oblique.get_n_leaves() * 2 <= axis.get_n_leaves()
    assert oblique.score(X_test, y_test) >= axis.score(X_test, y_test)
    assert oblique.score(X_test, y_test) > 0.95


def test_full_trees_on_an_oblique_boundary_are_small():
    X, y = _rotated(2000)
    axis = DecisionTreeClassifier().fit(X, y).get_n_leaves()
    assert axis > 30
    for direction in DIRECTIONS:
        assert ObliqueDecisionTreeClassifier(direction).fit(X, y).get_n_leaves() <= axis / 2.5
    assert ObliqueDecisionTreeClassifier("perceptron").fit(X, y).get_n_leaves() <= 6


def test_axis_parallel_split_wins_on_axis_aligned_data():
    """Classes split exactly by x0 <= 0: no hyperplane can score higher, so every split
    stays axis-parallel (ties go to it), and the tree is the one-split tree."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 4))
    y = (X[:, 0] > 0).astype(int)
    for direction in DIRECTIONS:
        tree = ObliqueDecisionTreeClassifier(direction).fit(X, y).tree_
        assert tree.n_oblique == 0
        assert tree.node_count == 3 and tree.feature[0] == 0
        assert np.all(tree.coefficients == 0)


def test_oblique_split_kept_only_where_it_scores_higher():
    """Node by node, an oblique split's impurity decrease beats the best axis split's."""
    from sklearn.tree import DecisionTreeClassifier as Stump

    X, y = _rotated(800, seed=3)
    model = ObliqueDecisionTreeClassifier("lda", max_depth=3).fit(X, y)
    tree = model.tree_
    node_rows = model.decision_path(X).toarray().astype(bool)
    for node in range(tree.node_count):
        if tree.children_left[node] == TREE_LEAF:
            continue
        rows = node_rows[:, node]
        left = tree.goes_left(node, X[rows])

        def gini(labels):
            p = np.bincount(labels, minlength=2) / max(labels.size, 1)
            return 1 - np.sum(p**2)

        def decrease(mask, labels=y[rows]):
            n = labels.size
            return gini(labels) - (
                mask.sum() / n * gini(labels[mask]) + (~mask).sum() / n * gini(labels[~mask])
            )

        stump = Stump(max_depth=1, random_state=0).fit(X[rows], y[rows])
        if stump.tree_.node_count == 1:
            continue
        best_axis = decrease(X[rows, stump.tree_.feature[0]] <= stump.tree_.threshold[0])
        if tree.feature[node] == OBLIQUE:
            assert decrease(left) > best_axis + 1e-12
        else:
            assert decrease(left) == pytest.approx(best_axis, abs=1e-12)


@pytest.mark.parametrize(
    "model",
    [ObliqueDecisionTreeClassifier(d, max_depth=5) for d in DIRECTIONS]
    + [ObliqueDecisionTreeRegressor(d, max_depth=5) for d in ("least_squares", *DIRECTIONS)],
    ids=lambda m: f"{type(m).__name__}-{m.direction}",
)
def test_deterministic_and_brute_force_prediction(model):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(600, 4))
    if isinstance(model, ObliqueDecisionTreeClassifier):
        y = (X[:, 0] - 2 * X[:, 1] + 0.3 * rng.normal(size=600) > 0).astype(int) + (X[:, 2] > 1)
    else:
        y = X[:, 0] - 2 * X[:, 1] + 0.1 * rng.normal(size=600)
    first = sklearn.base.clone(model).fit(X, y)
    second = sklearn.base.clone(model).fit(X, y)
    for name in ("children_left", "feature", "threshold", "coefficients", "value"):
        assert np.array_equal(getattr(first.tree_, name), getattr(second.tree_, name))
    assert first.tree_.n_oblique >= 1
    tree = first.tree_
    X_new = rng.normal(size=(300, 4))

    def walk(x):
        node = 0
        while tree.children_left[node] != TREE_LEAF:
            if tree.feature[node] == OBLIQUE:
                value = sum(c * v for c, v in zip(tree.coefficients[node], x, strict=True))
            else:
                value = x[tree.feature[node]]
            node = (
                tree.children_left[node]
                if value <= tree.threshold[node]
                else tree.children_right[node]
            )
        return node

    expected = np.array([walk(x) for x in X_new])
    assert np.array_equal(first.apply(X_new), expected)
    predicted = tree.value[expected, 0]
    if isinstance(model, ObliqueDecisionTreeClassifier):
        assert np.array_equal(first.predict_proba(X_new), predicted)
        assert np.array_equal(first.predict(X_new), first.classes_[predicted.argmax(axis=1)])
    else:
        assert np.array_equal(first.predict(X_new), predicted[:, 0])
        assert first.score(X, y) > 0.9
    # Training rows land in leaves whose values they made: a leaf's value is its rows' mean.
    path = first.decision_path(X_new).toarray()
    assert np.array_equal(path[np.arange(300), expected], np.ones(300))
    assert np.array_equal(path.sum(axis=1), tree.node_depths()[expected] + 1)


def test_regressor_least_squares_on_oblique_target():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(1000, 3))
    y = np.where(X[:, 0] + X[:, 1] > 0, 5.0, -5.0)
    oblique = ObliqueDecisionTreeRegressor(max_depth=2).fit(X, y)
    from sklearn.tree import DecisionTreeRegressor

    axis = DecisionTreeRegressor(max_depth=2).fit(X, y)
    assert oblique.tree_.feature[0] == OBLIQUE
    assert oblique.score(X, y) > axis.score(X, y) + 0.2


def test_multiclass_grouping_and_sample_weight():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    model = ObliqueDecisionTreeClassifier("lda", random_state=0).fit(X, y)
    assert model.score(X, y) == 1.0
    assert model.get_n_leaves() <= DecisionTreeClassifier().fit(X, y).get_n_leaves()
    weights = np.random.default_rng(0).integers(0, 3, size=y.size)
    weighted = ObliqueDecisionTreeClassifier("logistic").fit(X, y, sample_weight=weights)
    repeated = ObliqueDecisionTreeClassifier("logistic").fit(
        np.repeat(X, weights, axis=0), np.repeat(y, weights)
    )
    assert weighted.tree_.node_count == repeated.tree_.node_count
    assert np.allclose(weighted.tree_.threshold, repeated.tree_.threshold)
    assert np.array_equal(weighted.predict(X), repeated.predict(X))


@pytest.mark.parametrize(
    "estimator", [ObliqueDecisionTreeClassifier(), ObliqueDecisionTreeRegressor()], ids=type
)
def test_check_estimator(estimator):
    results = check_estimator(estimator, on_fail=None)
    failed = [
        (r["check_name"], repr(r["exception"])[:300]) for r in results if r["status"] == "failed"
    ]
    assert not failed, failed
    assert len(results) > 40


def test_export_text_and_graphviz():
    X, y = _rotated(1000)
    model = ObliqueDecisionTreeClassifier("lda").fit(X, y)
    tree = model.tree_
    text = gpu_tree.export_text(model, decimals=2)
    first = text.splitlines()[0]
    c = tree.coefficients[0]
    kept = [j for j in range(5) if abs(c[j]) >= 1e-3 * np.max(np.abs(c))]
    assert first.startswith("|--- ") and " \u2264 " in first
    for j in range(5):
        assert (f"\u00b7x{j}" in first) == (j in kept)
    assert text.count("class: ") == model.get_n_leaves()
    # Hand-built coefficients: the documented format, near-zero terms left out.
    tree.coefficients[0] = [0.0, 0.31, 1e-9, 0.0, -0.72]
    tree.threshold[0] = 1.2
    named = gpu_tree.export_text(model, feature_names=["a", "b", "c", "d", "e"])
    assert named.splitlines()[0] == "|--- 0.31\u00b7b \u2212 0.72\u00b7e \u2264 1.20"
    assert "0.31\u00b7x1 \u2212 0.72\u00b7x4 \u2264 1.20" in gpu_tree.export_text(model)
    assert "0.31\u00b7x1 \u2212 0.72\u00b7x4 > 1.20" in gpu_tree.export_text(model)
    dot = gpu_tree.export_graphviz(model)
    assert dot.startswith("digraph Tree {") and dot.count(" -> ") == tree.node_count - 1
    assert "0.310\u00b7x1 \u2212 0.720\u00b7x4 \u2264 1.200" in dot
    regressor = ObliqueDecisionTreeRegressor(max_depth=1).fit(X, X[:, 1] + X[:, 2])
    assert gpu_tree.export_text(regressor).count("value: [") == 2


def test_model_file_round_trip(tmp_path):
    X, y = _rotated(600)
    labels = np.array(["no", "yes"])[y]
    for model, target in (
        (ObliqueDecisionTreeClassifier("svm", max_depth=4), labels),
        (ObliqueDecisionTreeRegressor("least_squares", max_depth=4), X[:, 1] - X[:, 2]),
    ):
        model.fit(X, target)
        path = tmp_path / "oblique.json"
        model.save(path)
        loaded = gpu_tree.load(path)
        assert type(loaded) is type(model) and loaded.get_params() == model.get_params()
        for name in ("children_left", "children_right", "feature", "threshold", "coefficients"):
            assert np.array_equal(getattr(loaded.tree_, name), getattr(model.tree_, name))
        assert np.array_equal(loaded.predict(X), model.predict(X))
        assert [p.name for p in tmp_path.iterdir()] == ["oblique.json"]  # no temporary left


def _damaged(tmp_path, change):
    X, y = _rotated(300)
    path = tmp_path / "model.json"
    ObliqueDecisionTreeClassifier("lda", max_depth=3).fit(X, y).save(path)
    document = plain_document(path)
    change(document["oblique_tree"])
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t["children_left"].__setitem__(0, 0), "child must come after"),
        (lambda t: t["coefficients"].__setitem__(0, "nan"), "not finite"),
        (lambda t: t["coefficients"].pop(), "entries, expected"),
        (lambda t: t["feature"].__setitem__(0, 7), "feature"),
        (lambda t: t["threshold"].__setitem__(0, "inf"), "not finite"),
        (lambda t: t.__setitem__("n_features", 3), "n_features"),
        (lambda t: t["value"].__setitem__(0, 2.0), "fractions"),
    ],
)
def test_damaged_model_file_is_refused(tmp_path, change, message):
    path = _damaged(tmp_path, change)
    with pytest.raises(ValueError, match=message):
        gpu_tree.load(path)


def test_tree_layout():
    X, y = _rotated(500)
    tree = ObliqueDecisionTreeClassifier(max_depth=3).fit(X, y).tree_
    leaf = tree.children_left == TREE_LEAF
    assert np.all(tree.feature[leaf] == TREE_UNDEFINED)
    assert np.all(tree.children_left[~leaf] > np.flatnonzero(~leaf))
    oblique = tree.feature == OBLIQUE
    assert np.allclose(np.max(np.abs(tree.coefficients[oblique]), axis=1), 1.0)
    assert tree.max_depth <= 3 and tree.n_leaves == leaf.sum()


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"direction": "ridge"}, "Unknown direction"),
        ({"direction": "least_squares"}, "Unknown direction"),
        ({"criterion": "squared_error"}, "regression criterion"),
        ({"max_depth": -1}, "max_depth"),
        ({"min_samples_leaf": 0}, "min_samples_leaf"),
        ({"direction_max_iter": 0}, "direction_max_iter"),
        ({"alpha": 0.0}, "alpha"),
    ],
)
def test_bad_parameters(params, message):
    X, y = _rotated(50)
    with pytest.raises(ValueError, match=message):
        ObliqueDecisionTreeClassifier(**params).fit(X, y)


def test_poisson_is_refused_not_ignored():
    X, y = _rotated(50)
    with pytest.raises(ValueError, match="not available for oblique trees"):
        ObliqueDecisionTreeRegressor(criterion="poisson").fit(X, np.abs(X[:, 0]) + 1.0)


def test_bad_input():
    X, y = _rotated(50)
    X_nan = X.copy()
    X_nan[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ObliqueDecisionTreeClassifier().fit(X_nan, y)
    model = ObliqueDecisionTreeClassifier().fit(X, y)
    with pytest.raises(ValueError, match="NaN"):
        model.predict(X_nan)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :3])
    with pytest.raises(ValueError, match="Unknown direction"):
        ObliqueDecisionTreeRegressor(direction="gini").fit(X, y.astype(float))


# -- batched levels, devices, the SVM solver ----------------------------------------------------
def test_batched_level_fit_matches_nodes_fitted_alone():
    """Nodes of different sizes padded into one batch: each node's threshold search is the
    node's alone bit for bit, and its direction the same up to BLAS rounding."""
    from gpu_tree.data.stats import StatsLayout
    from gpu_tree.growing.oblique import (
        batched_best_thresholds,
        batched_fit_direction,
        best_thresholds,
        fit_direction,
    )

    rng = np.random.default_rng(7)
    layout = StatsLayout(True, 3, has_count_channel=False)
    sizes = [40, 64, 7, 33]
    P, d = 64, 4
    X = np.zeros((len(sizes), P, d))
    z = np.zeros((len(sizes), P))
    w = np.zeros((len(sizes), P))
    stats = np.zeros((len(sizes), P, 3))
    nodes = []
    for b, n in enumerate(sizes):
        Xn = np.round(rng.normal(size=(n, d)), 1)  # ties in the values
        yn = rng.integers(0, 3, size=n)
        wn = rng.integers(1, 4, size=n).astype(float)
        zn = (Xn[:, 0] - Xn[:, 1] + 0.5 * rng.normal(size=n) > 0).astype(float)
        X[b, :n], z[b, :n], w[b, :n] = Xn, zn, wn
        stats[b, np.arange(n), yn] = wn
        X[b, n:] = rng.normal(size=(P - n, d))  # padding: any finite values
        nodes.append((Xn, zn, wn, stats[b, :n]))
    scores, thresholds = batched_best_thresholds(X, stats, np.asarray(sizes), layout, "gini", 2)
    for direction in ("logistic", "perceptron", "svm", "lda"):
        coefficients, ok = batched_fit_direction(X, z, w, direction, 50)
        for b, (Xn, zn, wn, _) in enumerate(nodes):
            alone = fit_direction(Xn, zn, wn, direction, 50)
            assert ok[b] and alone is not None
            np.testing.assert_allclose(coefficients[b], alone, rtol=1e-9, atol=1e-12)
    for b, (Xn, _, _, sn) in enumerate(nodes):
        s, t = best_thresholds(Xn, sn, layout, "gini", 2)
        assert np.array_equal(scores[b], s) and np.array_equal(thresholds[b], t)


def _cuda_usable():
    from gpu_tree.backends.cuda import cuda_status

    return cuda_status()


@pytest.mark.parametrize("direction", [*DIRECTIONS, "least_squares"])
def test_cuda_tree_equals_cpu_tree(direction):
    """device="cuda" runs the same batched code on the device's array module: under the
    simulator that is numpy, and the trees are equal bit for bit; on a GPU cuBLAS rounds
    sums differently, and coefficients and thresholds agree to 1e-9."""
    usable, reason, xp = _cuda_usable()
    if not usable:
        pytest.skip(f"CUDA backend not usable: {reason}")
    rng = np.random.default_rng(11)
    X = rng.normal(size=(700, 4))
    if direction == "least_squares":
        y = X[:, 0] - 2 * X[:, 1] + 0.1 * rng.normal(size=700)
        make = ObliqueDecisionTreeRegressor
    else:
        y = (X[:, 0] - 2 * X[:, 1] + 0.3 * rng.normal(size=700) > 0).astype(int) + (X[:, 2] > 1)
        make = ObliqueDecisionTreeClassifier
    cpu = make(direction, max_depth=4, device="cpu").fit(X, y)
    cuda = make(direction, max_depth=4, device="cuda").fit(X, y)
    assert cuda.device_ == "cuda" and cpu.device_ == "cpu"
    assert cpu.tree_.n_oblique >= 1
    for name in ("children_left", "children_right", "feature", "n_node_samples"):
        assert np.array_equal(getattr(cuda.tree_, name), getattr(cpu.tree_, name)), name
    for name in ("threshold", "coefficients", "value"):
        got, expected = getattr(cuda.tree_, name), getattr(cpu.tree_, name)
        if xp is np:
            assert np.array_equal(got, expected), name
        else:
            np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12, err_msg=name)


def test_unknown_device_is_refused():
    X, y = _rotated(50)
    with pytest.raises(ValueError, match="device"):
        ObliqueDecisionTreeClassifier(device="tpu").fit(X, y)


def test_svm_needs_no_more_leaves_than_lda():
    """The squared-hinge Newton solver (started from lda's direction) converges: on the
    rotated set its trees are no larger than lda's."""
    X, y = _rotated(3000)
    leaves = {
        d: ObliqueDecisionTreeClassifier(d).fit(X[:2000], y[:2000]).get_n_leaves()
        for d in ("svm", "lda")
    }
    assert leaves["svm"] <= leaves["lda"], leaves
    svm = ObliqueDecisionTreeClassifier("svm").fit(X[:2000], y[:2000])
    assert svm.score(X[2000:], y[2000:]) > 0.97


def test_huge_regression_targets_grow_the_same_tree_scaled():
    """Targets around 1e155 and beyond once left the oblique regressor a single leaf
    (its squared sums overflowed; every split scored NaN). Scaled by a power of two, the
    targets give the same tree, its values scaled by it (the axis-parallel tree splits
    them too)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 3))
    y = X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.1, size=300)
    scale = 2.0**520  # about 3.4e156
    small = ObliqueDecisionTreeRegressor(max_depth=3).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # impurities past 1.8e308 are inf
        huge = ObliqueDecisionTreeRegressor(max_depth=3).fit(X, y * scale)
    assert small.tree_.node_count > 1
    assert huge.tree_.node_count == small.tree_.node_count
    np.testing.assert_array_equal(huge.tree_.feature, small.tree_.feature)
    np.testing.assert_array_equal(huge.tree_.threshold, small.tree_.threshold)
    np.testing.assert_array_equal(huge.predict(X), small.predict(X) * scale)
