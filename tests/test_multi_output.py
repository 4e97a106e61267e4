"""Multi-output regression (issue 22): a 2-D y of n_outputs columns, one tree for all.

As in scikit-learn: a node's impurity is the mean of its outputs' variances, a split's
score the mean of their decreases, and ``value`` holds each output's weighted mean
target, shape (node_count, n_outputs, 1); ``predict`` returns (n_samples, n_outputs).
Checked against brute force on every node, against scikit-learn's trees on its bundled
multi-output data (linnerud) and on random data, across search modes and code paths.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.datasets import load_linnerud
from sklearn.metrics import r2_score
from sklearn.tree import DecisionTreeRegressor as SkDecisionTreeRegressor
from sklearn.tree import export_graphviz as sk_export_graphviz
from sklearn.tree import export_text as sk_export_text

import gpu_tree
from gpu_tree import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreeRegressor,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
    assert_tree_equal,
)
from gpu_tree.backends.cuda import cuda_status
from gpu_tree.growing import grower as grower_module

CUDA_USABLE, CUDA_REASON, _ = cuda_status()


def _data(n=400, seed=0, missing=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    Y = np.column_stack(
        [
            3 * X[:, 0] + rng.normal(size=n),
            10 * np.sin(X[:, 1]) + X[:, 2],
            100 + rng.normal(size=n),  # an output far from 0, of little signal
        ]
    )
    if missing:
        X[rng.random(X.shape) < missing] = np.nan
    return X, Y


def _nodes(tree):
    """Every node as a sortable tuple (numbering apart: ours breadth first)."""
    return sorted(
        (int(f), float(t), int(n), round(float(i), 9), *np.round(v[:, 0], 9).tolist())
        for f, t, n, i, v in zip(
            tree.feature,
            tree.threshold,
            tree.n_node_samples,
            tree.impurity,
            tree.value,
            strict=True,
        )
    )


def _cases():
    X, Y = load_linnerud(return_X_y=True)  # 20 rows, 3 outputs
    yield "linnerud", X.astype(np.float32), Y, None, 2
    X, Y = _data()
    yield "random", X, Y, None, 10
    yield "weighted", X, Y, np.random.default_rng(1).uniform(0.5, 3.0, len(Y)), 10
    X, Y = _data(missing=0.15, seed=2)
    yield "missing", X, Y, None, 10


@pytest.mark.parametrize("case", list(_cases()), ids=lambda case: case[0])
def test_grows_scikit_learns_tree(case):
    """Exact mode grows scikit-learn's multi-output tree: splits, sizes, impurities,
    every output's value and the predictions. min_samples_leaf keeps apart splits that
    would tie (scikit-learn breaks ties by its random feature order)."""
    _, X, Y, w, leaf = case
    ours = DecisionTreeRegressor(splitter="best", min_samples_leaf=leaf, max_depth=8)
    ours.fit(X, Y, sample_weight=w)
    theirs = SkDecisionTreeRegressor(min_samples_leaf=leaf, max_depth=8, random_state=0)
    theirs.fit(X, Y, sample_weight=w)
    assert ours.n_outputs_ == theirs.n_outputs_ == Y.shape[1]
    assert ours.tree_.n_outputs == Y.shape[1]
    assert ours.tree_.value.shape == theirs.tree_.value.shape
    np.testing.assert_array_equal(ours.tree_.n_classes, theirs.tree_.n_classes)
    assert _nodes(ours.tree_) == _nodes(theirs.tree_)
    assert ours.predict(X).shape == Y.shape
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-12)
    assert ours.score(X, Y) == pytest.approx(r2_score(Y, theirs.predict(X)))


@pytest.mark.parametrize("splitter", ["best", "hist"])
def test_every_node_holds_its_rows_means_and_mean_variance(splitter):
    """Brute force on every node: its value is each output's weighted mean over its
    rows, its impurity the mean of the outputs' weighted variances, and its split the
    best mean decrease any split of its rows has."""
    rng = np.random.default_rng(3)
    X = rng.integers(0, 6, (200, 3)).astype(float)
    Y = np.column_stack([X[:, 0] + rng.normal(size=200), X[:, 1] * rng.normal(size=200)])
    w = rng.uniform(0.5, 2.0, 200)
    model = DecisionTreeRegressor(splitter=splitter, min_samples_leaf=5, max_depth=4)
    model.fit(X, Y, sample_weight=w)
    tree = model.tree_
    rows = model.decision_path(X).toarray().T.astype(bool)

    def impurity(r):
        means = np.average(Y[r], axis=0, weights=w[r])
        return float(np.mean(np.average((Y[r] - means) ** 2, axis=0, weights=w[r])))

    for node in range(tree.node_count):
        r = rows[node]
        np.testing.assert_allclose(tree.value[node, :, 0], np.average(Y[r], axis=0, weights=w[r]))
        assert tree.impurity[node] == pytest.approx(impurity(r), rel=1e-9)
        if tree.children_left[node] < 0:
            continue
        best = -np.inf
        for j in range(X.shape[1]):
            for v in np.unique(X[r, j])[:-1]:
                left = r & (X[:, j] <= v)
                right = r & (X[:, j] > v)
                if min(left.sum(), right.sum()) < 5:
                    continue
                decrease = w[r].sum() * impurity(r) - (
                    w[left].sum() * impurity(left) + w[right].sum() * impurity(right)
                )
                best = max(best, decrease)
        left, right = rows[tree.children_left[node]], rows[tree.children_right[node]]
        chosen = w[r].sum() * impurity(r) - (
            w[left].sum() * impurity(left) + w[right].sum() * impurity(right)
        )
        assert chosen == pytest.approx(best, rel=1e-9)


def test_identical_outputs_grow_the_single_output_tree():
    """K copies of one target: the mean of K equal variances is that variance, so the
    tree is the single-output tree, every output holding its value."""
    X, Y = _data(seed=4)
    y = Y[:, 0]
    single = DecisionTreeRegressor(max_depth=6).fit(X, y).tree_
    multi = DecisionTreeRegressor(max_depth=6).fit(X, np.column_stack([y, y, y])).tree_
    np.testing.assert_array_equal(multi.feature, single.feature)
    np.testing.assert_array_equal(multi.threshold, single.threshold)
    np.testing.assert_allclose(multi.impurity, single.impurity, rtol=1e-12)
    for k in range(3):
        np.testing.assert_allclose(multi.value[:, k, 0], single.value[:, 0, 0], rtol=1e-12)


def test_histogram_mode_grows_exact_modes_tree_where_every_value_has_a_bin():
    rng = np.random.default_rng(5)
    X = rng.integers(0, 20, (300, 3)).astype(float)
    Y = np.column_stack([X[:, 0] + rng.normal(size=300), -X[:, 2] + rng.normal(size=300)])
    exact = DecisionTreeRegressor(splitter="best", min_samples_leaf=5).fit(X, Y)
    hist = DecisionTreeRegressor(splitter="hist", min_samples_leaf=5).fit(X, Y)
    assert_tree_equal(exact.tree_, hist.tree_)


def test_the_subtree_finisher_leaves_the_tree_unchanged(monkeypatch):
    # Multi-output fits grow level-wise only (Grower._subtree_finisher).
    X, Y = _data(n=600, seed=6)
    trees = []
    for below in (0, 1 << 30):
        monkeypatch.setattr(grower_module, "FINISH_BELOW_ROWS", below)
        monkeypatch.setattr(grower_module, "FINISH_ROOT_BELOW_ROWS", below)
        trees.append(DecisionTreeRegressor(max_depth=7).fit(X, Y).tree_)
    assert_tree_equal(*trees, impurity_rtol=0, value_rtol=0)


@pytest.mark.parametrize(
    "growth",
    [dict(max_leaf_nodes=9), dict(min_impurity_decrease=0.5), dict(ccp_alpha=0.4)],
    ids=["max_leaf_nodes", "min_impurity_decrease", "ccp_alpha"],
)
def test_growth_controls_as_in_scikit_learn(growth):
    X, Y = _data(seed=7)
    ours = DecisionTreeRegressor(splitter="best", min_samples_leaf=10, **growth).fit(X, Y)
    theirs = SkDecisionTreeRegressor(min_samples_leaf=10, random_state=0, **growth).fit(X, Y)
    assert ours.get_n_leaves() == theirs.get_n_leaves()
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-12)


def test_pruning_path_and_reduced_error_pruning():
    X, Y = _data(seed=8)
    ours = DecisionTreeRegressor(splitter="best", min_samples_leaf=10)
    theirs = SkDecisionTreeRegressor(min_samples_leaf=10, random_state=0)
    path = ours.cost_complexity_pruning_path(X, Y)
    expected = theirs.cost_complexity_pruning_path(X, Y)
    np.testing.assert_allclose(path.ccp_alphas, expected.ccp_alphas, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(path.impurities, expected.impurities, rtol=1e-9)
    # Reduced-error pruning adds the outputs' squared errors: pruned on the training
    # rows themselves, nothing can be gained by a collapse that is not a tie.
    ours.fit(X[:300], Y[:300])
    leaves = ours.get_n_leaves()
    ours.reduced_error_prune(X[300:], Y[300:])
    assert 1 <= ours.get_n_leaves() < leaves
    assert ours.predict(X).shape == (len(X), 3)
    with pytest.raises(ValueError, match="y_val has 2 outputs but the tree was fitted on 3"):
        ours.reduced_error_prune(X[300:], Y[300:, :2])


def test_extra_tree_leaves_hold_their_rows_means():
    X, Y = _data(seed=9)
    model = ExtraTreeRegressor(random_state=0, min_samples_leaf=5).fit(X, Y)
    leaves = model.apply(X)
    for leaf in np.unique(leaves):
        np.testing.assert_allclose(
            model.tree_.value[leaf, :, 0], Y[leaves == leaf].mean(axis=0), rtol=1e-9
        )
    assert model.predict(X).shape == Y.shape


def test_forests(tmp_path):
    """Random forests and extra trees average every output's leaf values; the OOB
    prediction is (n_samples, n_outputs) and its score R² averaged over the outputs, as
    scikit-learn's; a forest of one tree on every row and feature is that tree."""
    from sklearn.ensemble import RandomForestRegressor as SkRandomForestRegressor

    X, Y = _data(n=600, seed=15)
    forest = RandomForestRegressor(n_estimators=20, random_state=0, oob_score=True)
    forest.fit(X[:400], Y[:400])
    assert forest.n_outputs_ == 3 and forest.predict(X[400:]).shape == (200, 3)
    theirs = SkRandomForestRegressor(n_estimators=20, random_state=0).fit(X[:400], Y[:400])
    assert forest.score(X[400:], Y[400:]) > theirs.score(X[400:], Y[400:]) - 0.03
    assert forest.oob_prediction_.shape == (400, 3)
    assert forest.oob_score_ == pytest.approx(r2_score(Y[:400], forest.oob_prediction_))
    mean = np.mean([tree.predict(X[400:]) for tree in forest.estimators_], axis=0)
    np.testing.assert_allclose(forest.predict(X[400:]), mean, rtol=1e-12)
    path = tmp_path / "forest.json"
    forest.save(path)
    loaded = gpu_tree.load(path)
    assert loaded.n_outputs_ == 3
    np.testing.assert_array_equal(loaded.predict(X), forest.predict(X))
    np.testing.assert_array_equal(loaded.oob_prediction_, forest.oob_prediction_)
    one = RandomForestRegressor(n_estimators=1, bootstrap=False, max_features=None).fit(X, Y)
    tree = DecisionTreeRegressor().fit(X, Y)
    np.testing.assert_allclose(one.predict(X), tree.predict(X), rtol=1e-12, atol=1e-12)
    extra = ExtraTreesRegressor(n_estimators=10, random_state=0).fit(X[:400], Y[:400])
    assert extra.score(X[400:], Y[400:]) > 0.5


def test_model_file_and_exports(tmp_path):
    X, Y = _data(seed=10)
    model = DecisionTreeRegressor(splitter="best", max_depth=2, min_samples_leaf=10).fit(X, Y)
    path = tmp_path / "model.json"
    model.save(path)
    document = json.loads(path.read_text())
    assert document["tree"]["n_outputs"] == 3
    loaded = gpu_tree.load(path)
    assert loaded.n_outputs_ == 3
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    # The loader refuses a value array of the wrong length.
    document["tree"]["value"] = document["tree"]["value"][:-1]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document))
    with pytest.raises(ValueError, match="value"):
        gpu_tree.load(bad)
    # Exports print every output, as scikit-learn's.
    theirs = SkDecisionTreeRegressor(max_depth=2, min_samples_leaf=10, random_state=0).fit(X, Y)
    assert gpu_tree.export_text(model) == sk_export_text(theirs)
    ours_dot = gpu_tree.export_graphviz(model)
    for line in sk_export_graphviz(theirs).splitlines():
        if "label=" in line and "->" not in line:
            assert line.split("label=")[1].split('"]')[0] in ours_dot


def test_single_output_files_are_unchanged(tmp_path):
    # One output: no n_outputs field, as before multi-output existed.
    X, Y = _data(seed=11)
    DecisionTreeRegressor(max_depth=2).fit(X, Y[:, 0]).save(tmp_path / "one.json")
    assert "n_outputs" not in json.loads((tmp_path / "one.json").read_text())["tree"]


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: DecisionTreeRegressor(criterion="poisson"), "criterion='squared_error' only"),
        (lambda: DecisionTreeRegressor(criterion="absolute_error"), "'squared_error' only"),
        (lambda: DecisionTreeRegressor(monotonic_cst=[1, 0, 0, 0]), "multiple outputs"),
        (lambda: DecisionTreeClassifier(), "multi-output y is not supported"),
        (lambda: RandomForestClassifier(n_estimators=2), "multi-output y is not supported"),
    ],
    ids=["poisson", "absolute_error", "monotonic", "classifier", "forest-classifier"],
)
def test_what_it_refuses(make, match):
    X, Y = _data(n=60, seed=12)
    with pytest.raises(ValueError, match=match):
        make().fit(X, np.abs(np.round(Y)))


def test_targets_are_checked_per_output():
    X, Y = _data(n=50, seed=13)
    Y[7, 2] = np.nan
    with pytest.raises(ValueError, match="NaN at row 7, output 2"):
        DecisionTreeRegressor().fit(X, Y)
    with pytest.raises(ValueError, match="no column"):
        DecisionTreeRegressor().fit(X, np.empty((50, 0)))


@pytest.mark.skipif(not CUDA_USABLE, reason=f"CUDA backend not usable: {CUDA_REASON}")
def test_cuda_refuses_it_naming_the_cpu():
    X, Y = _data(n=60, seed=14)
    with pytest.raises(ValueError, match="device='cpu'"):
        DecisionTreeRegressor(device="cuda").fit(X, Y)
