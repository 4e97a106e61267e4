"""Post-pruning: minimal cost-complexity pruning against scikit-learn, reduced-error pruning
against a brute-force oracle, and the compact trees both leave behind."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tree
from gpu_tree import DecisionTreeClassifier, DecisionTreeRegressor, Tree, assert_tree_equal
from gpu_tree.model.pruning import cost_complexity_path, cost_complexity_prune, depth_first_order
from gpu_tree.model.tree import CATEGORICAL_SUBSET, LEAF, MULTIWAY, TREE_LEAF
from gpu_tree.utils.compat import NotFittedError

sklearn = pytest.importorskip("sklearn")
from sklearn import datasets  # noqa: E402
from sklearn.tree import DecisionTreeClassifier as SklearnClassifier  # noqa: E402
from sklearn.tree import DecisionTreeRegressor as SklearnRegressor  # noqa: E402

pd = pytest.importorskip("pandas")

SKLEARN_CASES = {
    "iris-gini": (datasets.load_iris, "gini"),
    "breast_cancer-gini": (datasets.load_breast_cancer, "gini"),
    "breast_cancer-entropy": (datasets.load_breast_cancer, "entropy"),
    "wine-entropy": (datasets.load_wine, "entropy"),
    "digits-gini": (datasets.load_digits, "gini"),
    "diabetes-squared_error": (datasets.load_diabetes, "squared_error"),
}


# -- helpers ----------------------------------------------------------------------------------
def _sklearn_class(criterion):
    return SklearnRegressor if criterion == "squared_error" else SklearnClassifier


def _ours_class(criterion):
    return DecisionTreeRegressor if criterion == "squared_error" else DecisionTreeClassifier


def _tree_from_sklearn(fitted) -> Tree:
    """scikit-learn's fitted tree copied node for node into ours (renumbered breadth first),
    so that our pruning runs on exactly the tree scikit-learn prunes."""
    sk = fitted.tree_
    order, depth = [0], {0: 0}
    for node in order:  # grows while iterating: breadth first
        if sk.children_left[node] != TREE_LEAF:
            for child in (sk.children_left[node], sk.children_right[node]):
                order.append(child)
                depth[child] = depth[node] + 1
    order = np.array(order)
    new_id = np.empty_like(order)
    new_id[order] = np.arange(order.size)
    tree = Tree(sk.n_features, sk.value.shape[2], capacity=order.size)
    tree.add_nodes(
        np.array([depth[n] for n in order]),
        sk.impurity[order],
        sk.n_node_samples[order],
        sk.weighted_n_node_samples[order],
        sk.value[order, 0, :],
    )
    inner = np.flatnonzero(sk.children_left[order] != TREE_LEAF)
    old = order[inner]
    tree.set_numeric_splits(
        inner,
        sk.feature[old],
        sk.threshold[old],
        -1,
        new_id[sk.children_left[old]],
        new_id[sk.children_right[old]],
        0,
    )
    return tree


def _alphas_to_try(path_alphas, limit=30):
    """Path values (exactly: the boundary) and midpoints between them, at most ``limit``."""
    alphas = np.unique(np.r_[path_alphas, (path_alphas[1:] + path_alphas[:-1]) / 2])
    alphas = alphas[alphas > 0]
    if alphas.size > limit:
        alphas = alphas[np.linspace(0, alphas.size - 1, limit).round().astype(int)]
    return alphas


def _sklearn_leaf_values(fitted, X):
    return fitted.tree_.predict(X.astype(np.float32)).reshape(X.shape[0], -1)


def _same_shape(ours, theirs) -> bool:
    """The same tree up to tie-broken split choices: depth first, the same node kinds,
    sample counts, impurities and values (all a pruning path depends on). scikit-learn
    numbers its nodes depth first."""
    a, b = depth_first_order(ours), np.arange(theirs.node_count)
    return (
        a.size == b.size
        and np.array_equal(ours.children_left[a] == TREE_LEAF, theirs.children_left[b] == TREE_LEAF)
        and np.array_equal(ours.n_node_samples[a], theirs.n_node_samples[b])
        and np.allclose(ours.impurity[a], theirs.impurity[b], rtol=1e-12, atol=1e-15)
        and np.allclose(ours.value[a], theirs.value[b], rtol=1e-12, atol=1e-15)
    )


def check_compact_tree(tree: Tree):
    """The invariants of a compact tree (those the model file checks, and more)."""
    n = tree.node_count
    left, right, kind = tree.children_left, tree.children_right, tree.split_kind
    leaf = left == TREE_LEAF
    assert np.all(right[leaf] == TREE_LEAF) and np.all(kind[leaf] == LEAF)
    assert np.all(kind[~leaf] != LEAF) and np.all(right[~leaf] > left[~leaf])
    parents_seen = np.zeros(n, dtype=int)
    for node in np.flatnonzero(~leaf):
        children = tree.children_of(node)
        assert np.all(children > node)
        assert np.all(tree.depth[children] == tree.depth[node] + 1)
        parents_seen[children] += 1
        if kind[node] == MULTIWAY:
            start = tree.branch_offset[node]
            table = tree.branch_children[start : start + tree.n_branches[node] + 1]
            assert set(table.tolist()) <= set(children.tolist())
        if kind[node] == CATEGORICAL_SUBSET:
            assert (
                0
                <= tree.category_offset[node]
                <= tree.category_bitsets.size - tree.n_category_words
            )
    assert parents_seen[0] == 0 and np.all(parents_seen[1:] == 1)
    assert np.all(np.diff(tree.depth) >= 0)  # breadth first
    assert np.all(tree.category_offset[kind != CATEGORICAL_SUBSET] == -1)
    assert np.all(tree.branch_offset[kind != MULTIWAY] == -1)
    assert tree.category_bitsets.size == tree.n_category_words * np.sum(kind == CATEGORICAL_SUBSET)


def check_pruned_model(model, original_tree, X, tmp_path):
    """A pruned model: compact, each row's leaf one of the nodes on its original path (at
    the same depth, with that node's value), and the same after a save/load round trip."""
    tree = model.tree_
    check_compact_tree(tree)
    assert tree.node_count <= original_tree.node_count
    leaves = model.apply(X)
    assert np.all(tree.children_left[leaves] == TREE_LEAF)
    indptr, path = original_tree.decision_path_csr(model._validate_X_predict(X))
    on_path = path[indptr[:-1] + tree.depth[leaves]]  # the original node at the leaf's depth
    np.testing.assert_array_equal(tree.value[leaves], original_tree.value[on_path])
    np.testing.assert_array_equal(
        tree.n_node_samples[leaves], original_tree.n_node_samples[on_path]
    )
    decision = model.decision_path(X)
    assert decision.shape == (X.shape[0], tree.node_count)
    np.testing.assert_array_equal(np.asarray(decision.sum(axis=1)).ravel(), tree.depth[leaves] + 1)
    assert model.get_n_leaves() == int(np.sum(tree.children_left == TREE_LEAF))
    assert model.get_depth() == int(tree.depth[tree.children_left == TREE_LEAF].max())
    importances = model.feature_importances_
    assert np.all(importances >= 0) and importances.sum() == pytest.approx(
        1.0 if tree.node_count > 1 else 0.0
    )

    model.save(tmp_path / "pruned.json")
    loaded = gpu_tree.load(tmp_path / "pruned.json")
    assert_tree_equal(loaded.tree_, tree, impurity_rtol=0, value_rtol=0)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(loaded.feature_importances_, importances)
    np.testing.assert_array_equal(loaded.apply(X), leaves)
    assert loaded.get_params() == model.get_params()


# -- cost-complexity pruning: scikit-learn's own trees -----------------------------------------
@pytest.mark.parametrize("case", SKLEARN_CASES)
def test_path_and_pruned_trees_equal_sklearn_on_sklearn_trees(case):
    load, criterion = SKLEARN_CASES[case]
    X, y = load(return_X_y=True)
    X32 = X.astype(np.float32).astype(np.float64)  # the values scikit-learn's splits saw
    theirs = _sklearn_class(criterion)(criterion=criterion, random_state=0).fit(X, y)
    tree = _tree_from_sklearn(theirs)
    np.testing.assert_array_equal(tree.predict(X32), _sklearn_leaf_values(theirs, X))

    expected = theirs.cost_complexity_pruning_path(X, y)
    alphas, impurities = cost_complexity_path(tree)
    # The same arithmetic in the same order: equal to the last bit, repeats included.
    np.testing.assert_array_equal(alphas, expected.ccp_alphas)
    np.testing.assert_array_equal(impurities, expected.impurities)

    for alpha in _alphas_to_try(expected.ccp_alphas):
        pruned = cost_complexity_prune(tree, alpha)
        reference = _sklearn_class(criterion)(
            criterion=criterion, random_state=0, ccp_alpha=alpha
        ).fit(X, y)
        assert pruned.n_leaves == reference.get_n_leaves(), alpha
        assert pruned.max_depth == reference.get_depth(), alpha
        np.testing.assert_array_equal(pruned.predict(X32), _sklearn_leaf_values(reference, X))
        check_compact_tree(pruned)


def test_ccp_alpha_boundary_prunes_links_of_exactly_that_alpha():
    X, y = datasets.load_breast_cancer(return_X_y=True)
    tree = _tree_from_sklearn(SklearnClassifier(random_state=0).fit(X, y))
    alphas, _ = cost_complexity_path(tree)
    step = alphas.size // 2
    at = cost_complexity_prune(tree, alphas[step])
    below = cost_complexity_prune(tree, np.nextafter(alphas[step], 0))
    assert at.n_leaves < below.n_leaves
    assert cost_complexity_prune(tree, alphas[-1]).node_count == 1  # the root alone
    assert cost_complexity_prune(tree, 0.0) is tree  # nothing to prune: the same tree


# -- cost-complexity pruning: our estimators, exact mode ---------------------------------------
ESTIMATOR_CASES = {
    "iris-gini": (datasets.load_iris, "gini", {}),
    "iris-entropy": (datasets.load_iris, "entropy", {}),
    "wine-gini": (datasets.load_wine, "gini", {}),
    "wine-entropy": (datasets.load_wine, "entropy", {}),
    "breast_cancer-gini": (datasets.load_breast_cancer, "gini", {}),
    "diabetes-squared_error": (datasets.load_diabetes, "squared_error", {"min_samples_leaf": 5}),
}


@pytest.mark.parametrize("case", ESTIMATOR_CASES)
def test_estimator_path_and_ccp_alpha_match_sklearn(case):
    load, criterion, params = ESTIMATOR_CASES[case]
    X, y = load(return_X_y=True)
    ours = _ours_class(criterion)(criterion=criterion, splitter="exact", device="cpu", **params)
    full = ours.fit(X, y).tree_
    # scikit-learn breaks ties between equally good splits by a random feature order: take
    # a seed whose tree is ours up to such ties (the same counts, impurities and values).
    seed = next(
        (
            s
            for s in range(40)
            if _same_shape(
                full,
                _sklearn_class(criterion)(criterion=criterion, random_state=s, **params)
                .fit(X, y)
                .tree_,
            )
        ),
        None,
    )
    if seed is None:
        pytest.skip("no scikit-learn seed grows a tree of the same shape")

    def theirs(alpha):
        return _sklearn_class(criterion)(
            criterion=criterion, random_state=seed, ccp_alpha=alpha, **params
        )

    path = ours.cost_complexity_pruning_path(X, y)
    expected = theirs(0.0).cost_complexity_pruning_path(X, y)
    assert sorted(path) == ["ccp_alphas", "impurities"]
    np.testing.assert_allclose(path.ccp_alphas, expected.ccp_alphas, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(path.impurities, expected.impurities, rtol=1e-12, atol=1e-15)
    same_rows = np.array_equal(ours.predict(X), theirs(0.0).fit(X, y).predict(X))

    mine, their_alphas = _alphas_to_try(path.ccp_alphas), _alphas_to_try(expected.ccp_alphas)
    for alpha, their_alpha in zip(mine, their_alphas, strict=True):
        ours.set_params(ccp_alpha=alpha).fit(X, y)
        reference = theirs(their_alpha).fit(X, y)
        assert ours.get_n_leaves() == reference.get_n_leaves(), alpha
        assert ours.get_depth() == reference.get_depth(), alpha
        assert _same_shape(ours.tree_, reference.tree_)
        if same_rows:  # no tie split sends rows elsewhere: the very same predictions
            np.testing.assert_allclose(ours.predict(X), reference.predict(X), rtol=1e-12)


def test_ccp_alpha_parameter():
    X, y = datasets.load_iris(return_X_y=True)
    model = DecisionTreeClassifier(ccp_alpha=0.02, device="cpu")
    assert model.get_params()["ccp_alpha"] == 0.02
    assert sklearn.base.clone(model).ccp_alpha == 0.02
    assert DecisionTreeRegressor().ccp_alpha == 0.0
    for bad, error in [
        (-0.1, ValueError),
        (float("nan"), ValueError),
        ("0.1", TypeError),
        (None, TypeError),
    ]:
        with pytest.raises(error, match="ccp_alpha"):
            DecisionTreeClassifier(ccp_alpha=bad, device="cpu").fit(X, y)
    full = DecisionTreeClassifier(device="cpu").fit(X, y)
    pruned = model.fit(X, y)
    assert pruned.get_n_leaves() < full.get_n_leaves()
    assert DecisionTreeClassifier(ccp_alpha=np.inf, device="cpu").fit(X, y).get_n_leaves() == 1
    # The path leaves the estimator as it was.
    path = pruned.cost_complexity_pruning_path(X, y)
    assert pruned.tree_.node_count < full.tree_.node_count
    assert path.ccp_alphas[0] == 0.0 and path["impurities"][-1] == pytest.approx(
        full.tree_.impurity[0]
    )
    assert np.all(np.diff(path.impurities) >= -1e-15)


# -- reduced-error pruning --------------------------------------------------------------------
def _accuracy(tree, model, X, y, weight):
    predicted = model.classes_[np.argmax(tree.predict(X), axis=1)]
    return np.average(predicted == y, weights=weight)


def _greedy_oracle(model, X, y, weight):
    """Reduced-error pruning by brute force: every candidate's tree re-built and
    re-predicted; the best score, then the most leaves removed, then the lowest id."""
    tree = model.tree_
    collapse = np.zeros(tree.node_count, dtype=bool)
    parent = tree.parents()
    current = _accuracy(tree, model, X, y, weight)

    def is_open(node):  # internal, not collapsed, not below a collapsed node
        while node >= 0:
            if collapse[node]:
                return False
            node = parent[node]
        return True

    while True:
        candidates = [
            t for t in range(tree.node_count) if tree.children_left[t] != TREE_LEAF and is_open(t)
        ]
        best = None
        for t in candidates:
            trial = collapse.copy()
            trial[t] = True
            pruned = tree.pruned(trial)
            key = (_accuracy(pruned, model, X, y, weight), -pruned.n_leaves, -t)
            best = max(best, (key, t)) if best else (key, t)
        if best is None or best[0][0] < current:
            return tree.pruned(collapse) if collapse.any() else tree
        collapse[best[1]] = True
        current = best[0][0]


@pytest.mark.parametrize("seed", range(4))
def test_reduced_error_pruning_equals_brute_force_greedy(seed):
    X, y = datasets.load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(seed)
    rows = rng.permutation(y.size)
    train, val = rows[:300], rows[300:]
    model = DecisionTreeClassifier(device="cpu", random_state=seed, max_features=0.5).fit(
        X[train], y[train]
    )
    weight = rng.integers(1, 3, val.size).astype(float) if seed % 2 else np.ones(val.size)
    expected = _greedy_oracle(model, X[val], y[val], weight)
    before = model.score(X[val], y[val], sample_weight=weight)
    model.reduced_error_prune(X[val], y[val], sample_weight=weight)
    assert_tree_equal(model.tree_, expected)
    assert model.score(X[val], y[val], sample_weight=weight) >= before
    # Stopped where every further removal would lower the accuracy.
    after = model.score(X[val], y[val], sample_weight=weight)
    for t in np.flatnonzero(model.tree_.children_left != TREE_LEAF):
        collapse = np.zeros(model.tree_.node_count, dtype=bool)
        collapse[t] = True
        assert _accuracy(model.tree_.pruned(collapse), model, X[val], y[val], weight) < after


@pytest.mark.parametrize("seed", range(3))
def test_reduced_error_pruning_regressor_never_lowers_r2(seed, tmp_path):
    X, y = datasets.load_diabetes(return_X_y=True)
    rows = np.random.default_rng(seed).permutation(y.size)
    train, val, test = rows[:250], rows[250:350], rows[350:]
    model = DecisionTreeRegressor(device="cpu", splitter="exact").fit(X[train], y[train])
    original = model.tree_
    before = model.score(X[val], y[val])
    model.reduced_error_prune(X[val], y[val])
    assert model.score(X[val], y[val]) >= before - 1e-12
    assert model.get_n_leaves() < original.n_leaves
    check_pruned_model(model, original, X[test], tmp_path)
    # Stopped where every further removal would raise the squared error (lower R^2).
    error = np.sum((y[val] - model.predict(X[val])) ** 2)
    for t in np.flatnonzero(model.tree_.children_left != TREE_LEAF):
        collapse = np.zeros(model.tree_.node_count, dtype=bool)
        collapse[t] = True
        residual = y[val] - model.tree_.pruned(collapse).predict(X[val])[:, 0]
        assert np.sum(residual**2) > error


def test_reduced_error_pruning_inputs():
    X, y = datasets.load_iris(return_X_y=True)
    with pytest.raises(NotFittedError):
        DecisionTreeClassifier().reduced_error_prune(X, y)
    model = DecisionTreeClassifier(device="cpu").fit(X[::2], y[::2])
    with pytest.raises(ValueError, match="features"):
        model.reduced_error_prune(X[:, :3], y)
    with pytest.raises(ValueError, match="rows"):
        model.reduced_error_prune(X, y[:-1])
    with pytest.raises(ValueError, match="y_val has 2 outputs but the tree was fitted on 1"):
        model.reduced_error_prune(X, np.c_[y, y])
    with pytest.raises(ValueError, match="seen in training"):
        model.reduced_error_prune(X, np.full(y.size, 7))
    with pytest.raises(ValueError, match="sample_weight"):
        model.reduced_error_prune(X, y, sample_weight=np.ones(3))
    # Labels unseen in training are errors under any tree: they are allowed.
    y_val = y.copy()
    y_val[:10] = 9
    assert model.reduced_error_prune(X[1::2], y_val[1::2]) is model
    assert model.score(X[1::2], y[1::2]) >= 0.9


def test_reduced_error_pruning_mixed_type_labels():
    # Validation labels of mixed types (that do not sort) are looked up, not a TypeError:
    # "a" and True were never seen in training, so they are errors under any tree, as 9
    # is; 1.0 is the class 1.
    X, y = datasets.load_iris(return_X_y=True)
    fit = DecisionTreeClassifier(device="cpu", random_state=0).fit
    y_int = y.copy()
    y_int[1:84:6] = 9
    y_mixed = y.astype(object)
    y_mixed[::5] = y[::5].astype(float)
    y_mixed[1:84:6] = ["a", True] * 7
    expected = fit(X[::2], y[::2]).reduced_error_prune(X[1::2], y_int[1::2])
    model = fit(X[::2], y[::2]).reduced_error_prune(X[1::2], y_mixed[1::2])
    assert_tree_equal(model.tree_, expected.tree_)
    with pytest.raises(ValueError, match="seen in training"):
        fit(X[::2], y[::2]).reduced_error_prune(X[:4], np.array(["a", 2.5, "b", True], object))


# -- compact trees of every node kind, both prunings -------------------------------------------
def _car_evaluation():
    from _shared_data import read_arff

    names, rows = read_arff("car_evaluation.arff")
    table = pd.DataFrame(rows, columns=names)
    return table[names[:-1]], table[names[-1]].to_numpy()


@pytest.mark.parametrize("categorical_split", ["binary", "multiway"])
def test_categorical_trees_pruned_on_real_data(categorical_split, tmp_path):
    X, y = _car_evaluation()
    for seed in range(3):
        rows = np.random.default_rng(seed).permutation(len(y))
        train, val = rows[:1000], rows[1000:]
        params = dict(
            categorical_features=list(X.columns),
            device="cpu",
            categorical_split=categorical_split,
            criterion="entropy",
        )
        model = DecisionTreeClassifier(**params).fit(X.iloc[train], y[train])
        original = model.tree_
        kinds = set(original.split_kind.tolist())
        assert (MULTIWAY if categorical_split == "multiway" else CATEGORICAL_SUBSET) in kinds
        before = model.score(X.iloc[val], y[val])
        model.reduced_error_prune(X.iloc[val], y[val])
        assert model.score(X.iloc[val], y[val]) >= before
        assert model.tree_.node_count < original.node_count
        check_pruned_model(model, original, X, tmp_path)

        path = model.cost_complexity_pruning_path(X.iloc[train], y[train])
        alpha = path.ccp_alphas[len(path.ccp_alphas) // 2]
        pruned = DecisionTreeClassifier(ccp_alpha=alpha, **params).fit(X.iloc[train], y[train])
        check_pruned_model(pruned, original, X, tmp_path)
        # The pruned tree's total leaf impurity is the one the path gives for that alpha.
        leaves = pruned.tree_.children_left == TREE_LEAF
        total = np.sum(pruned.tree_.weighted_n_node_samples[leaves] * pruned.tree_.impurity[leaves])
        last = np.flatnonzero(path.ccp_alphas <= alpha)[-1]
        assert total / pruned.tree_.weighted_n_node_samples[0] == pytest.approx(
            path.impurities[last]
        )


def test_histogram_trees_with_missing_values_pruned_on_real_data(tmp_path):
    from _shared_data import read_arff

    names, rows = read_arff("abalone.arff")
    table = pd.DataFrame(rows, columns=names)
    y = table.pop(names[-1]).astype(float).to_numpy()
    X = table.assign(**{c: table[c].astype(float) for c in names[1:-1]})
    X.loc[::7, names[2]] = np.nan
    rows = np.random.default_rng(0).permutation(len(y))
    train, val = rows[:2500], rows[2500:]
    model = DecisionTreeRegressor(categorical_features=[names[0]], device="cpu", max_depth=10)
    model.fit(X.iloc[train], y[train])
    original = model.tree_
    before = model.score(X.iloc[val], y[val])
    model.reduced_error_prune(X.iloc[val], y[val])
    assert model.score(X.iloc[val], y[val]) >= before - 1e-12
    check_pruned_model(model, original, X, tmp_path)
    model.set_params(ccp_alpha=0.05).fit(X.iloc[train], y[train])
    assert model.get_n_leaves() < original.n_leaves
    check_pruned_model(model, original, X, tmp_path)


def test_pruning_a_multiway_node_makes_one_leaf_of_its_subtree():
    X, y = _car_evaluation()
    model = DecisionTreeClassifier(
        categorical_features=list(X.columns), device="cpu", categorical_split="multiway"
    ).fit(X, y)
    tree = model.tree_
    multiway = np.flatnonzero((tree.split_kind == MULTIWAY) & (tree.depth == 1))
    collapse = np.zeros(tree.node_count, dtype=bool)
    collapse[multiway[0]] = True
    pruned = tree.pruned(collapse)
    check_compact_tree(pruned)
    # The root's children keep their places; the collapsed one is now a leaf.
    root_children = pruned.children_of(0)
    assert root_children.size == tree.children_of(0).size
    assert pruned.children_left[multiway[0]] == TREE_LEAF
    np.testing.assert_array_equal(pruned.value[root_children], tree.value[tree.children_of(0)])


def test_cuda_tree_pruned_like_the_cpu_tree():
    from gpu_tree.backends.cuda import cuda_status

    usable, reason, _ = cuda_status()
    if not usable:
        pytest.skip(f"CUDA backend not usable: {reason}")
    rng = np.random.default_rng(0)
    X = rng.integers(0, 6, size=(150, 3)).astype(float)
    y = (X[:, 0] + X[:, 1] + (rng.random(150) < 0.2)).astype(int) % 3
    params = {"max_depth": 5, "ccp_alpha": 0.01}
    cuda_model = DecisionTreeClassifier(device="cuda", **params).fit(X[:100], y[:100])
    cpu_model = DecisionTreeClassifier(device="cpu", **params).fit(X[:100], y[:100])
    assert_tree_equal(cuda_model.tree_, cpu_model.tree_)
    cuda_model.reduced_error_prune(X[100:], y[100:])
    cpu_model.reduced_error_prune(X[100:], y[100:])
    assert_tree_equal(cuda_model.tree_, cpu_model.tree_)
    check_compact_tree(cuda_model.tree_)
    np.testing.assert_array_equal(cuda_model.predict(X), cpu_model.predict(X))


def test_best_first_trees_pruned_both_ways(tmp_path):
    X, y = datasets.load_breast_cancer(return_X_y=True)
    model = DecisionTreeClassifier(max_leaf_nodes=30, device="cpu").fit(X[::2], y[::2])
    original = model.tree_
    path = model.cost_complexity_pruning_path(X[::2], y[::2])
    assert path.ccp_alphas.size == path.impurities.size >= 2
    model.set_params(ccp_alpha=path.ccp_alphas[-3]).fit(X[::2], y[::2])
    assert 1 < model.get_n_leaves() < original.n_leaves
    check_pruned_model(model, original, X, tmp_path)
    model.set_params(ccp_alpha=0.0).fit(X[::2], y[::2])
    before = model.score(X[1::2], y[1::2])
    model.reduced_error_prune(X[1::2], y[1::2])
    assert model.score(X[1::2], y[1::2]) >= before
    check_pruned_model(model, original, X, tmp_path)
