"""Multi-output y (issue 22): a 2-D y of n_outputs columns, one tree for all.

As in scikit-learn: a node's impurity is the mean of its outputs' impurities (variances,
half Poisson deviances, or Gini / entropy of each output's classes), a split's score the
mean of their decreases; ``value`` holds each output's weighted mean target, shape
(node_count, n_outputs, 1), or its class fractions, (node_count, n_outputs, max classes)
padded with zeros; ``predict`` returns (n_samples, n_outputs), ``predict_proba`` a list of one array
per output.
Checked against brute force on every node, against scikit-learn's trees on its bundled
multi-output data (linnerud) and on random data, across search modes and code paths.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from _plain_models import plain_document
from sklearn.datasets import load_linnerud
from sklearn.metrics import r2_score
from sklearn.tree import DecisionTreeClassifier as SkDecisionTreeClassifier
from sklearn.tree import DecisionTreeRegressor as SkDecisionTreeRegressor
from sklearn.tree import export_graphviz as sk_export_graphviz
from sklearn.tree import export_text as sk_export_text

import gpu_tree
from gpu_tree import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreeClassifier,
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


def _decrease(impurity, w, node, left, right):
    """The weighted impurity decrease of splitting the rows ``node`` (bool) into ``left``
    and ``right``, ``impurity(rows)`` a node's impurity."""
    return (
        w[node].sum() * impurity(node)
        - w[left].sum() * impurity(left)
        - w[right].sum() * impurity(right)
    )


def _best_decrease_by_brute_force(impurity, X, w, node, min_samples_leaf):
    """The best :func:`_decrease` of any split of the rows ``node`` at a value of any
    feature (no missing values), leaves of ``min_samples_leaf`` rows at least."""
    best = -np.inf
    for j in range(X.shape[1]):
        for v in np.unique(X[node, j])[:-1]:
            left, right = node & (X[:, j] <= v), node & (X[:, j] > v)
            if min(left.sum(), right.sum()) >= min_samples_leaf:
                best = max(best, _decrease(impurity, w, node, left, right))
    return best


def _assert_best_split(tree, node, rows, impurity, X, w):
    """A split node's decrease is the best any split of its rows has (brute force, leaves
    of 5 rows at least); ``rows[node]`` its rows (bool)."""
    if tree.children_left[node] < 0:
        return
    left, right = rows[tree.children_left[node]], rows[tree.children_right[node]]
    chosen = _decrease(impurity, w, rows[node], left, right)
    best = _best_decrease_by_brute_force(impurity, X, w, rows[node], min_samples_leaf=5)
    assert chosen == pytest.approx(best, rel=1e-9)


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
        _assert_best_split(tree, node, rows, impurity, X, w)


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
    # Multi-output regression grows level-wise only (SubtreeFinisher.available).
    X, Y = _data(n=600, seed=6)
    trees = []
    for below in (0, 1 << 30):
        monkeypatch.setattr(grower_module, "FINISH_BELOW_ROWS", below)
        monkeypatch.setattr(grower_module, "FINISH_ROOT_BELOW_ROWS", below)
        trees.append(DecisionTreeRegressor(max_depth=7).fit(X, Y).tree_)
    assert_tree_equal(*trees, impurity_rtol=0, value_rtol=0)


@pytest.mark.parametrize("splitter", ["hist", "exact"])
def test_the_subtree_finisher_grows_the_classifiers_tree(monkeypatch, splitter):
    """Several classification outputs are finished (tests/kernels/test_subtree_finisher.py
    holds more cases): the tree level-wise growth grows, bit for bit."""
    X, Y, w = _class_data(n=800, seed=25)
    trees = []
    for below in (0, 1 << 30):
        monkeypatch.setattr(grower_module, "FINISH_BELOW_ROWS", below)
        monkeypatch.setattr(grower_module, "FINISH_ROOT_BELOW_ROWS", below)
        model = DecisionTreeClassifier(splitter=splitter, min_samples_leaf=2)
        trees.append(model.fit(X, Y, sample_weight=w))
    phases = [{phase for level in m.fit_stats_ for phase in level["seconds"]} for m in trees]
    assert "subtrees" not in phases[0] and "subtrees" in phases[1]
    assert_tree_equal(trees[0].tree_, trees[1].tree_, impurity_rtol=0, value_rtol=0)


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


def test_absolute_error_grows_scikit_learns_tree():
    """Several outputs' absolute errors add up in the split search (the mean over the
    outputs, scikit-learn's impurity); each output's leaf value is its median."""
    X, Y = _data(seed=16)
    Y = Y + np.random.default_rng(16).standard_t(2, Y.shape)  # heavy tails: medians
    w = np.random.default_rng(17).uniform(0.5, 3.0, len(Y))
    params = dict(criterion="absolute_error", min_samples_leaf=10, max_depth=6)
    ours = DecisionTreeRegressor(splitter="best", **params).fit(X, Y, sample_weight=w)
    theirs = SkDecisionTreeRegressor(random_state=0, **params).fit(X, Y, sample_weight=w)
    assert _nodes(ours.tree_) == _nodes(theirs.tree_)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-12)
    forest = RandomForestRegressor(n_estimators=3, random_state=0, **params).fit(X, Y)
    assert forest.predict(X).shape == Y.shape


# -- criterion="poisson" ----------------------------------------------------------------------
def _count_data(n=400, seed=18):
    """Counts of three outputs: two with rates depending on features, one of constant
    rate (Poisson noise only); X float32-exact (scikit-learn splits float32 copies)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    rates = [np.exp(0.5 * X[:, 0] + 0.3), np.exp(X[:, 1] - 0.5 * X[:, 2]), np.full(n, 3.0)]
    return X, np.column_stack([rng.poisson(rate) for rate in rates]).astype(float)


def _mean_half_deviance(Y, w):
    """The mean over the outputs of sum w (y log(y / m) - y + m) / sum w (m each output's
    weighted mean, 0 log 0 = 0); +inf where an output sums to 0 (scikit-learn's)."""
    sums = w @ Y
    if np.any(sums <= 0):
        return np.inf
    m = sums / w.sum()
    logs = np.log(np.where(Y > 0, Y, 1.0) / m)
    terms = np.where(Y > 0, Y * logs, 0.0) - (Y - m)
    return float(np.mean(w @ terms / w.sum()))


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_poisson_grows_scikit_learns_tree(weighted):
    """Exact mode grows scikit-learn's multi-output Poisson tree: a node's impurity the
    mean of its outputs' half Poisson deviances, a split's score their mean decrease."""
    X, Y = _count_data()
    w = np.random.default_rng(19).uniform(0.5, 3.0, len(Y)) if weighted else None
    params = dict(criterion="poisson", min_samples_leaf=10, max_depth=8)
    ours = DecisionTreeRegressor(splitter="best", **params).fit(X, Y, sample_weight=w)
    theirs = SkDecisionTreeRegressor(random_state=0, **params).fit(X, Y, sample_weight=w)
    assert ours.tree_.node_count > 20
    assert _nodes(ours.tree_) == _nodes(theirs.tree_)
    np.testing.assert_allclose(ours.tree_.impurity[0], theirs.tree_.impurity[0], rtol=1e-12)
    assert ours.predict(X).shape == Y.shape
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-12)


@pytest.mark.parametrize("splitter", ["best", "hist"])
def test_poisson_nodes_hold_their_rows_mean_deviance(splitter):
    """Brute force on every node: its value is each output's weighted mean, its impurity
    the mean of the outputs' half Poisson deviances, and its split the best mean decrease
    of any split of its rows whose children have a positive sum in every output."""
    rng = np.random.default_rng(20)
    X = rng.integers(0, 6, (200, 3)).astype(float)
    Y = np.column_stack([rng.poisson(1.0 + X[:, 0]), rng.poisson(0.2 + 0.5 * X[:, 1])])
    w = rng.uniform(0.5, 2.0, 200)
    params = dict(criterion="poisson", min_samples_leaf=5, max_depth=4)
    model = DecisionTreeRegressor(splitter=splitter, **params).fit(X, Y, sample_weight=w)
    tree = model.tree_
    assert tree.node_count > 7
    rows = model.decision_path(X).toarray().T.astype(bool)

    def impurity(r):
        return _mean_half_deviance(Y[r], w[r])

    for node in range(tree.node_count):
        r = rows[node]
        np.testing.assert_allclose(tree.value[node, :, 0], np.average(Y[r], axis=0, weights=w[r]))
        assert tree.impurity[node] == pytest.approx(impurity(r), rel=1e-9, abs=1e-13)
        _assert_best_split(tree, node, rows, impurity, X, w)


def test_poisson_identical_outputs_grow_the_single_output_tree():
    """The mean of K equal scores (and deviances) is that score: K copies of one count
    target grow the single-output Poisson tree."""
    X, Y = _count_data(seed=21)
    y = Y[:, 0]
    single = DecisionTreeRegressor(criterion="poisson", max_depth=6).fit(X, y).tree_
    multi = DecisionTreeRegressor(criterion="poisson", max_depth=6)
    multi = multi.fit(X, np.column_stack([y, y])).tree_
    np.testing.assert_array_equal(multi.feature, single.feature)
    np.testing.assert_array_equal(multi.threshold, single.threshold)
    np.testing.assert_array_equal(multi.impurity, single.impurity)
    for k in range(2):
        np.testing.assert_array_equal(multi.value[:, k, 0], single.value[:, 0, 0])


@pytest.mark.parametrize(
    ("estimator", "kind"),
    [
        (DecisionTreeRegressor, "tree"),
        (ExtraTreeRegressor, "tree"),
        (RandomForestRegressor, "forest"),
        (ExtraTreesRegressor, "forest"),
    ],
)
def test_poisson_targets_are_checked_per_output(estimator, kind):
    """scikit-learn's messages, naming the output: a negative count in one output, or an
    output summing to 0 (no split could leave both children a positive sum of it)."""
    X, Y = _count_data(n=60, seed=22)
    negative = Y.copy()
    negative[5, 1] = -1.0
    with pytest.raises(
        ValueError,
        match=re.escape(
            "Some value(s) of y are negative which is not allowed for Poisson regression. "
            "(output 1, y[:, 1])"
        ),
    ):
        estimator(criterion="poisson").fit(X, negative)
    zero = Y.copy()
    zero[:, 2] = 0.0
    sum_message = {
        "tree": "Sum of y is not positive which is necessary for Poisson regression.",
        "forest": "Sum of y is not strictly positive which is necessary for Poisson regression.",
    }[kind]
    with pytest.raises(ValueError, match=re.escape(f"{sum_message} (output 2, y[:, 2])")):
        estimator(criterion="poisson").fit(X, zero)


@pytest.mark.parametrize("forest", [RandomForestRegressor, ExtraTreesRegressor])
def test_poisson_forests_fit_and_predict_every_output(forest):
    X, Y = _count_data(n=300, seed=23)
    model = forest(n_estimators=5, criterion="poisson", max_depth=6, random_state=0)
    predicted = model.fit(X, Y).predict(X)
    assert predicted.shape == Y.shape
    assert np.all(predicted > 0)
    for tree in model.estimators_:
        assert tree.tree_.value.shape[1:] == (3, 1)
        assert np.all(tree.tree_.impurity >= 0)
    # The first output's rate grows with the first feature: so do the predictions.
    assert np.corrcoef(predicted[:, 0], X[:, 0])[0, 1] > 0.5
    extra = ExtraTreeRegressor(criterion="poisson", random_state=0, min_samples_leaf=5)
    assert extra.fit(X, Y).predict(X).shape == Y.shape


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
    document = plain_document(path)
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
        (lambda: DecisionTreeRegressor(monotonic_cst=[1, 0, 0, 0]), "multiple outputs"),
    ],
    ids=["monotonic"],
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


# -- CUDA (the simulator without a GPU) --------------------------------------------------------
@pytest.mark.skipif(not CUDA_USABLE, reason=f"CUDA backend not usable: {CUDA_REASON}")
@pytest.mark.parametrize("case", ["unweighted", "weighted", "missing"])
def test_cuda_regression_tree_equals_cpu_tree(case):
    """The device's histograms of every output's sums, and each output's variance
    measured on its rows (one pass per output), grow the CPU's tree bit for bit."""
    X, Y = _data(n=300, seed=14, missing=0.15 if case == "missing" else 0.0)
    w = np.random.default_rng(15).uniform(0.5, 2.0, len(Y)) if case == "weighted" else None
    params = dict(max_depth=6, min_samples_leaf=3)
    cpu = DecisionTreeRegressor(device="cpu", **params).fit(X, Y, sample_weight=w)
    cuda = DecisionTreeRegressor(device="cuda", **params).fit(X, Y, sample_weight=w)
    assert cuda.tree_.node_count > 15
    assert_tree_equal(cuda.tree_, cpu.tree_, impurity_rtol=0, value_rtol=0)
    np.testing.assert_array_equal(cuda.predict(X), cpu.predict(X))


# -- classification ------------------------------------------------------------------------
@pytest.mark.skipif(not CUDA_USABLE, reason=f"CUDA backend not usable: {CUDA_REASON}")
@pytest.mark.parametrize("case", ["weighted", "missing"])
def test_cuda_poisson_tree_equals_cpu_tree(case):
    """Every output's Poisson scores from the device's histograms, and the deviances
    measured on the rows of the device's partition, make the CPU's tree bit for bit."""
    X, Y = _count_data(n=300, seed=24)
    w = None
    if case == "weighted":
        w = np.random.default_rng(25).uniform(0.5, 2.0, len(Y))
    else:
        X[np.random.default_rng(26).random(X.shape) < 0.15] = np.nan
    params = dict(criterion="poisson", max_depth=6, min_samples_leaf=3)
    cpu = DecisionTreeRegressor(device="cpu", **params).fit(X, Y, sample_weight=w)
    cuda = DecisionTreeRegressor(device="cuda", **params).fit(X, Y, sample_weight=w)
    assert cuda.tree_.node_count > 15
    assert_tree_equal(cuda.tree_, cpu.tree_, impurity_rtol=0, value_rtol=0)
    np.testing.assert_array_equal(cuda.predict(X), cpu.predict(X))


@pytest.mark.skipif(not CUDA_USABLE, reason=f"CUDA backend not usable: {CUDA_REASON}")
def test_cuda_poisson_forest_equals_cpu_forest():
    """Extra trees grown together on the device (a root per tree, drawn thresholds)."""
    X, Y = _count_data(n=200, seed=31)
    params = dict(criterion="poisson", n_estimators=3, max_depth=4, random_state=0)
    cpu = ExtraTreesRegressor(device="cpu", **params).fit(X, Y)
    cuda = ExtraTreesRegressor(device="cuda", **params).fit(X, Y)
    for a, b in zip(cuda.estimators_, cpu.estimators_, strict=True):
        assert_tree_equal(a.tree_, b.tree_, impurity_rtol=0, value_rtol=0)
    np.testing.assert_array_equal(cuda.predict(X), cpu.predict(X))


def _class_data(n=500, seed=20):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    Y = np.column_stack(
        [
            (X[:, 0] > 0).astype(int),
            np.digitize(X[:, 1] + 0.3 * rng.normal(size=n), [-1.0, 0.0, 1.0]),  # 4 classes
            rng.integers(0, 2, n),  # noise
        ]
    )
    return X, Y, rng.uniform(0.5, 2.0, n)


@pytest.mark.parametrize("criterion", ["gini", "entropy", "log_loss"])
def test_classifier_grows_scikit_learns_tree(criterion):
    """Weighted (unweighted class counts tie often between features, which scikit-learn
    breaks by its random feature order): the same splits, impurities, class fractions,
    predictions and probabilities, as a list of one array per output."""
    X, Y, w = _class_data()
    params = dict(criterion=criterion, min_samples_leaf=5, max_depth=6)
    ours = DecisionTreeClassifier(splitter="best", **params).fit(X, Y, sample_weight=w)
    theirs = SkDecisionTreeClassifier(random_state=0, **params).fit(X, Y, sample_weight=w)
    assert ours.n_outputs_ == 3
    np.testing.assert_array_equal(ours.n_classes_, theirs.n_classes_)
    assert ours.n_classes_.dtype == theirs.n_classes_.dtype and ours.n_classes_.tolist() == [
        2,
        4,
        2,
    ]
    for a, b in zip(ours.classes_, theirs.classes_, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ours.tree_.n_classes, theirs.tree_.n_classes)
    assert ours.tree_.value.shape == theirs.tree_.value.shape
    assert _nodes(ours.tree_) == _nodes(theirs.tree_)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    ours_proba, theirs_proba = ours.predict_proba(X), theirs.predict_proba(X)
    assert len(ours_proba) == 3
    for a, b in zip(ours_proba, theirs_proba, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-12)
    assert [p.shape[1] for p in ours.predict_log_proba(X)] == [2, 4, 2]


@pytest.mark.parametrize("splitter", ["best", "hist"])
def test_classifier_nodes_hold_their_rows_fractions_and_mean_gini(splitter):
    X, Y, w = _class_data(n=200, seed=21)
    X = np.round(X * 2)  # few distinct values: histogram mode tries every one too
    model = DecisionTreeClassifier(splitter=splitter, min_samples_leaf=5, max_depth=4)
    model.fit(X, Y, sample_weight=w)
    tree = model.tree_
    rows = model.decision_path(X).toarray().T.astype(bool)

    def fractions(r, k):
        return np.bincount(Y[r, k], weights=w[r], minlength=model.n_classes_[k]) / w[r].sum()

    def impurity(r):
        return np.mean([1.0 - np.sum(fractions(r, k) ** 2) for k in range(3)])

    for node in range(tree.node_count):
        r = rows[node]
        for k, n_classes in enumerate(model.n_classes_):
            np.testing.assert_allclose(tree.value[node, k, :n_classes], fractions(r, k))
            assert not tree.value[node, k, n_classes:].any()  # padding
        assert tree.impurity[node] == pytest.approx(impurity(r), rel=1e-9)
        _assert_best_split(tree, node, rows, impurity, X, w)
    exact = DecisionTreeClassifier(splitter="best", min_samples_leaf=5, max_depth=4)
    assert_tree_equal(exact.fit(X, Y, sample_weight=w).tree_, tree)


def test_classifier_labels_of_any_kind_and_identical_outputs():
    X, Y, _ = _class_data(seed=22)
    labels = np.empty((len(Y), 2), dtype=object)
    labels[:, 0] = np.where(Y[:, 0] == 1, "yes", "no")
    labels[:, 1] = Y[:, 1]
    model = DecisionTreeClassifier(max_depth=4).fit(X, labels)
    assert [c.tolist() for c in model.classes_] == [["no", "yes"], [0, 1, 2, 3]]
    predicted = model.predict(X)
    assert predicted.shape == (len(X), 2) and set(predicted[:, 0]) <= {"no", "yes"}
    # K copies of one output: the single-output tree.
    single = DecisionTreeClassifier(max_depth=5).fit(X, Y[:, 1]).tree_
    multi = DecisionTreeClassifier(max_depth=5).fit(X, np.column_stack([Y[:, 1]] * 2)).tree_
    np.testing.assert_array_equal(multi.feature, single.feature)
    np.testing.assert_array_equal(multi.threshold, single.threshold)
    np.testing.assert_allclose(multi.impurity, single.impurity, rtol=1e-12)


@pytest.mark.parametrize("class_weight", ["balanced", "list"])
def test_classifier_class_weights_as_scikit_learns(class_weight):
    """One class weight per output, multiplied (scikit-learn's compute_sample_weight):
    'balanced', or a list of one dict per output."""
    X, Y, w = _class_data(seed=26)
    if class_weight == "list":
        class_weight = [{0: 1.0, 1: 3.0}, {0: 2.0, 3: 0.5}, {1: 1.5}]
    params = dict(class_weight=class_weight, min_samples_leaf=5, max_depth=5)
    ours = DecisionTreeClassifier(splitter="best", **params).fit(X, Y, sample_weight=w)
    theirs = SkDecisionTreeClassifier(random_state=0, **params).fit(X, Y, sample_weight=w)
    assert _nodes(ours.tree_) == _nodes(theirs.tree_)
    np.testing.assert_allclose(
        ours.tree_.weighted_n_node_samples[0], theirs.tree_.weighted_n_node_samples[0]
    )


def test_classifier_pruning_and_extra_trees():
    X, Y, w = _class_data(seed=23)
    ours = DecisionTreeClassifier(splitter="best", min_samples_leaf=5, ccp_alpha=0.005)
    theirs = SkDecisionTreeClassifier(min_samples_leaf=5, ccp_alpha=0.005, random_state=0)
    ours.fit(X, Y, sample_weight=w)
    theirs.fit(X, Y, sample_weight=w)
    assert ours.get_n_leaves() == theirs.get_n_leaves()
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    extra = ExtraTreeClassifier(random_state=0, min_samples_leaf=5).fit(X, Y)
    leaves = extra.apply(X)
    for leaf in np.unique(leaves)[:10]:
        counts = np.bincount(Y[leaves == leaf, 1], minlength=4)
        np.testing.assert_allclose(extra.tree_.value[leaf, 1], counts / counts.sum())


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: DecisionTreeClassifier(class_weight={0: 2.0}), "list of dicts"),
        (lambda: DecisionTreeClassifier(class_weight=[{0: 2.0}]), "number of outputs"),
        (lambda: DecisionTreeClassifier(criterion="cart"), "defined for one output"),
        (lambda: DecisionTreeClassifier(criterion="gain_ratio"), "defined for one output"),
        (lambda: DecisionTreeClassifier(min_purity=0.9), "min_purity"),
        (lambda: DecisionTreeClassifier(categorical_features=[0]), "numeric features only"),
        (
            lambda: RandomForestClassifier(n_estimators=2, oob_score=True),
            "Got multiclass-multioutput",  # as scikit-learn: no OOB score of such y
        ),
    ],
    ids=[
        "class_weight-dict",
        "class_weight-count",
        "cart",
        "gain_ratio",
        "min_purity",
        "categorical",
        "forest",
    ],
)
def test_classifier_refusals(make, match):
    X, Y, _ = _class_data(n=80, seed=24)
    X[:, 0] = np.abs(np.round(X[:, 0]))
    with pytest.raises(ValueError, match=match):
        make().fit(X, Y)


@pytest.mark.skipif(not CUDA_USABLE, reason=f"CUDA backend not usable: {CUDA_REASON}")
@pytest.mark.parametrize("case", ["unweighted", "weighted", "missing"])
def test_cuda_classifier_tree_equals_cpu_tree(case):
    """Each row adds its weight to its class in every output's block of the device's
    histograms (32-bit counts where unweighted): the CPU's tree, bit for bit."""
    X, Y, w = _class_data(n=300, seed=27)
    if case == "missing":
        X[np.random.default_rng(28).random(X.shape) < 0.15] = np.nan
    if case != "weighted":
        w = None
    params = dict(max_depth=6, min_samples_leaf=3, criterion="entropy")
    cpu = DecisionTreeClassifier(device="cpu", **params).fit(X, Y, sample_weight=w)
    cuda = DecisionTreeClassifier(device="cuda", **params).fit(X, Y, sample_weight=w)
    assert cuda.tree_.node_count > 15
    assert_tree_equal(cuda.tree_, cpu.tree_, impurity_rtol=0, value_rtol=0)
    for a, b in zip(cuda.predict_proba(X), cpu.predict_proba(X), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.skipif(not CUDA_USABLE, reason=f"CUDA backend not usable: {CUDA_REASON}")
@pytest.mark.parametrize("estimator", [RandomForestClassifier, ExtraTreesRegressor])
def test_cuda_forests_equal_cpu_forests(estimator):
    """Forests grow their trees together on the device (a root per tree) and draw the
    same rows, features and thresholds as on the CPU."""
    if estimator is RandomForestClassifier:
        X, Y, _ = _class_data(n=200, seed=30)
    else:
        X, Y = _data(n=200, seed=31)
    params = dict(n_estimators=3, max_depth=4, random_state=0)
    cpu = estimator(device="cpu", **params).fit(X, Y)
    cuda = estimator(device="cuda", **params).fit(X, Y)
    for a, b in zip(cuda.estimators_, cpu.estimators_, strict=True):
        assert_tree_equal(a.tree_, b.tree_, impurity_rtol=0, value_rtol=0)
    np.testing.assert_array_equal(cuda.predict(X), cpu.predict(X))


def test_classifier_forests(tmp_path):
    """Forests average each output's class probabilities: predict (n, n_outputs),
    predict_proba a list of one array per output; for multilabel y
    oob_decision_function_ (n, 2, n_outputs) and oob_score_ the subset accuracy, as
    scikit-learn's; about as accurate as scikit-learn's forest; a forest of one tree on
    every row and feature is that tree; files keep it all."""
    from sklearn.ensemble import RandomForestClassifier as SkRandomForestClassifier
    from sklearn.metrics import accuracy_score

    X, Y, _ = _class_data(n=900, seed=29)
    Y = Y[:, :2]
    forest = RandomForestClassifier(n_estimators=20, random_state=0)
    forest.fit(X[:600], Y[:600])
    theirs = SkRandomForestClassifier(n_estimators=20, random_state=0).fit(X[:600], Y[:600])

    def accuracy(predicted):
        return np.mean(predicted == Y[600:])

    assert forest.predict(X[600:]).shape == (300, 2)
    assert accuracy(forest.predict(X[600:])) > accuracy(theirs.predict(X[600:])) - 0.03
    assert [p.shape for p in forest.predict_proba(X[:5])] == [(5, 2), (5, 4)]
    forest.save(tmp_path / "forest.json")
    loaded = gpu_tree.load(tmp_path / "forest.json")
    np.testing.assert_array_equal(loaded.predict(X), forest.predict(X))
    labels = np.column_stack([Y[:, 0], Y[:, 1] > 1]).astype(int)  # multilabel
    multilabel = RandomForestClassifier(n_estimators=20, random_state=0, oob_score=True)
    multilabel.fit(X[:600], labels[:600])
    oob = multilabel.oob_decision_function_
    assert oob.shape == (600, 2, 2)
    assert multilabel.oob_score_ == pytest.approx(accuracy_score(labels[:600], oob.argmax(1)))
    multilabel.save(tmp_path / "multilabel.json")
    loaded = gpu_tree.load(tmp_path / "multilabel.json")
    np.testing.assert_array_equal(loaded.oob_decision_function_, oob)
    assert loaded.oob_score_ == multilabel.oob_score_
    one = RandomForestClassifier(n_estimators=1, bootstrap=False, max_features=None).fit(X, Y)
    np.testing.assert_array_equal(one.predict(X), DecisionTreeClassifier().fit(X, Y).predict(X))


def test_classifier_model_files(tmp_path):
    """Classes per output ({"dtype", "values"} each) and the tree's class_counts: an
    exact round trip; the loader refuses values past an output's classes (a prediction
    would name a class the output does not have) and labels that do not fit the counts."""
    X, Y, _ = _class_data(n=200, seed=25)
    labels = np.empty((len(Y), 2), dtype=object)
    labels[:, 0] = np.where(Y[:, 0] == 1, "yes", "no")
    labels[:, 1] = Y[:, 1]
    model = DecisionTreeClassifier(max_depth=3).fit(X, labels)
    path = tmp_path / "model.json"
    model.save(path)
    loaded = gpu_tree.load(path)
    assert loaded.n_outputs_ == 2 and loaded.n_classes_.tolist() == [2, 4]
    assert [c.tolist() for c in loaded.classes_] == [["no", "yes"], [0, 1, 2, 3]]
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    for a, b in zip(loaded.predict_proba(X), model.predict_proba(X), strict=True):
        np.testing.assert_array_equal(a, b)
    document = json.loads(path.read_text())
    assert document["tree"]["class_counts"] == [2, 4]

    def load_changed(change, name):
        changed = plain_document(path)
        change(changed)
        (tmp_path / name).write_text(json.dumps(changed))
        return gpu_tree.load(tmp_path / name)

    def pad_with_a_class(doc):  # output 0 has 2 classes; its third column is padding
        doc["tree"]["value"][2] = 0.5
        doc["tree"]["value"][0] = 0.5
        doc["tree"]["value"][1] = 0.0

    with pytest.raises(ValueError, match="past output 0's 2 classes"):
        load_changed(pad_with_a_class, "padding.json")
    with pytest.raises(ValueError, match="classes per output"):
        load_changed(lambda doc: doc["classes"][1]["values"].pop(), "labels.json")
    with pytest.raises(ValueError, match="class_counts"):
        load_changed(lambda doc: doc["tree"].update(class_counts=[2, 3]), "counts.json")


def test_classifier_exports():
    """Each output's weights on a line of its own, and the class of every output: text
    "class: [a, 2]" and boxes "class = [a, 2]"; class_names (one output's) is refused."""
    X, Y, _ = _class_data(n=200, seed=27)
    model = DecisionTreeClassifier(max_depth=1, splitter="best").fit(X, Y[:, :2])
    predicted = model.predict(X)
    text = gpu_tree.export_text(model, show_weights=True)
    leaf = model.apply(X[:1])[0]
    assert f"class: [{predicted[0, 0]}, {predicted[0, 1]}]" in text
    weights = model.tree_.value[leaf] * model.tree_.weighted_n_node_samples[leaf]
    assert f"weights: [[{weights[0, 0]:.2f}, {weights[0, 1]:.2f}], [" in text
    dot = gpu_tree.export_graphviz(model)
    assert f"class = [{predicted[0, 0]}, {predicted[0, 1]}]" in dot
    assert "value = [[" in dot and "]\\n[" in dot
    with pytest.raises(ValueError, match="class_names names one output"):
        gpu_tree.export_text(model, class_names=["a", "b"])


def test_classifier_reduced_error_pruning_is_refused():
    X, Y, _ = _class_data(n=80, seed=28)
    model = DecisionTreeClassifier(max_depth=2).fit(X, Y)
    with pytest.raises(ValueError, match="reduced_error_prune"):
        model.reduced_error_prune(X, Y)


@pytest.mark.parametrize("missing", [np.nan, None, np.float32("nan")])
def test_a_missing_label_in_a_2d_object_y_is_refused_as_scikit_learn_refuses_it(missing):
    """Each output's labels are checked, not the rows as wholes: a NaN or None label in
    an object y of two outputs is named by row and output (it once became a class).
    scikit-learn refuses both too (a ValueError for NaN; None fails its label sort)."""
    X = np.arange(8.0)[:, None]
    Y = np.array([["a", "x"], ["b", missing], ["a", "x"], ["b", "y"]] * 2, dtype=object)
    with pytest.raises((ValueError, TypeError)):
        SkDecisionTreeClassifier().fit(X, Y)
    with pytest.raises(ValueError, match=r"missing label\) at row 1, output 1"):
        DecisionTreeClassifier().fit(X, Y)
