"""The compiled categorical split search (kernels/cpu/categorical.py, issue 17) grows the
trees the vectorised search grows, node for node: on adult and on random data with many
categories, binary subset and multiway splits, classification and regression, with
missing values, weights and leaf-size limits. And the vectorised category coding (per
distinct type of value, not per row) codes as the value-by-value rule does."""

from __future__ import annotations

import numpy as np
import pytest
from _backends import set_compiled_categorical_search
from _shared_data import bench_module, dataset_path

from gpu_tree import DecisionTreeClassifier, DecisionTreeRegressor
from gpu_tree.data import categorical
from gpu_tree.data.stats import bitset, bitsets
from gpu_tree.testing import assert_tree_equal


def _both_trees(monkeypatch, make, X, y, **fit):
    """The tree of the vectorised search (the reference) and of the compiled one."""
    trees = []
    for compiled in (False, True):
        set_compiled_categorical_search(monkeypatch, compiled)
        trees.append(make().fit(X, y, **fit).tree_)
    return trees


def _assert_same_trees(monkeypatch, make, X, y, **fit):
    reference, compiled = _both_trees(monkeypatch, make, X, y, **fit)
    assert_tree_equal(compiled, reference, impurity_rtol=0, value_rtol=0)
    return compiled


def _random_data(seed, n, categories, n_classes, missing, n_numeric=2):
    rng = np.random.default_rng(seed)
    columns = [rng.integers(0, k, n).astype(float) for k in categories]
    columns += [rng.normal(size=n) for _ in range(n_numeric)]
    X = np.column_stack(columns)
    if missing:
        X[rng.random(X.shape) < missing] = np.nan
    signal = sum((np.nan_to_num(X[:, j]) * (j + 3)) % 7 for j in range(len(categories)))
    if n_classes:
        y = ((signal + rng.integers(0, 3, n)) % n_classes).astype(int)
    else:
        y = signal + rng.normal(size=n)
    return X, y, list(range(len(categories)))


CASES = [
    # (categories per categorical column, classes (0: regression), missing share)
    ((20,), 2, 0.0),
    ((20,), 3, 0.1),
    ((200, 5), 2, 0.1),
    ((200, 5), 5, 0.0),
    ((200, 5), 0, 0.1),
    ((3, 40), 4, 0.1),
    ((20, 200), 0, 0.0),
]


@pytest.mark.parametrize("categories, n_classes, missing", CASES)
@pytest.mark.parametrize("categorical_split", ["binary", "multiway"])
def test_compiled_search_grows_the_reference_tree(
    monkeypatch, categories, n_classes, missing, categorical_split
):
    X, y, features = _random_data(0, 600, categories, n_classes, missing)
    params = dict(categorical_features=features, categorical_split=categorical_split, device="cpu")
    if n_classes:
        criteria = ["entropy", "gain_ratio"]
        if categorical_split == "binary":
            criteria = ["gini", "cart", "misclassification"]
        for criterion in criteria:
            _assert_same_trees(
                monkeypatch, lambda c=criterion: DecisionTreeClassifier(criterion=c, **params), X, y
            )
    else:
        tree = _assert_same_trees(monkeypatch, lambda: DecisionTreeRegressor(**params), X, y)
        assert tree.node_count > 20


@pytest.mark.parametrize("categorical_split", ["binary", "multiway"])
@pytest.mark.parametrize(
    "settings",
    [
        {"min_samples_leaf": 3},
        {"min_weight_fraction_leaf": 0.002},
        {"max_leaf_nodes": 40},
        {"splitter": "exact"},
        {"max_features": 2, "random_state": 0},
        {"max_category_subset": 3},
        {"max_category_subset": 0},
    ],
)
@pytest.mark.parametrize("n_classes", [3, 0])
def test_compiled_search_keeps_every_setting(monkeypatch, categorical_split, settings, n_classes):
    X, y, features = _random_data(1, 500, (30, 6), n_classes, 0.1)
    if n_classes == 0 and "max_category_subset" in settings:
        pytest.skip("subsets of a few categories are searched for multiclass targets only")
    weight = np.random.default_rng(1).integers(1, 4, len(y)).astype(float)
    params = dict(
        categorical_features=features,
        categorical_split=categorical_split,
        device="cpu",
        **settings,
    )
    if n_classes:
        criterion = "gain_ratio" if categorical_split == "multiway" else "gini"
        make = lambda: DecisionTreeClassifier(criterion=criterion, **params)  # noqa: E731
    else:
        make = lambda: DecisionTreeRegressor(**params)  # noqa: E731
    _assert_same_trees(monkeypatch, make, X, y)
    _assert_same_trees(monkeypatch, make, X, y, sample_weight=weight)


def test_compiled_search_exhausts_small_subsets_in_the_reference_order(monkeypatch):
    # Many nodes of up to 20 categories, five classes: the subsets of at most two are
    # offered in passes of the subset table; the tie-break must follow them.
    X, y, features = _random_data(2, 2000, (20, 20), 5, 0.05, n_numeric=0)
    X[:, 1] = X[:, 0]  # a twin column: ties between features go to the lower index
    tree = _assert_same_trees(
        monkeypatch,
        lambda: DecisionTreeClassifier(categorical_features=features, device="cpu"),
        X,
        y,
    )
    assert np.all(tree.feature[tree.children_left >= 0] != 1)


@pytest.mark.parametrize("categorical_split", ["binary", "multiway"])
def test_compiled_search_grows_adults_reference_tree(monkeypatch, categorical_split):
    pytest.importorskip("pandas")
    data = bench_module("_categorical_data").load("adult", dataset_path)
    X, y = data.X.iloc[data.train].reset_index(drop=True), data.y[data.train]
    params = dict(categorical_features=data.categorical, max_depth=12, device="cpu")
    if categorical_split == "multiway":
        params |= dict(categorical_split="multiway", criterion="gain_ratio")
    tree = _assert_same_trees(monkeypatch, lambda: DecisionTreeClassifier(**params), X, y)
    assert np.any(tree.split_kind != 0)  # categorical splits were chosen


def test_bitsets_of_many_sets_are_each_sets_bitset():
    rng = np.random.default_rng(0)
    sets = [np.sort(rng.choice(200, size, replace=False)) for size in (0, 1, 5, 64, 130)]
    words = bitsets(np.array(sets + [np.array([63, 64, 127])], dtype=object), 4)
    for row, codes in zip(words, sets + [np.array([63, 64, 127])], strict=True):
        np.testing.assert_array_equal(row, bitset(codes, 4))
    assert bitsets([], 2).shape == (0, 2)


def test_present_and_text_follow_the_value_by_value_rule():
    pd = pytest.importorskip("pandas")
    values = [
        "a",
        np.str_("b"),
        None,
        float("nan"),
        np.float64("nan"),
        np.float32("nan"),  # not a Python float: a category, as before
        1.5,
        np.float64(2.0),
        3,
        True,
        pd.NA,
        pd.NaT,
        b"bytes",
        ("a", 1),
    ]
    column = np.empty(len(values) * 3, dtype=object)
    column[:] = values * 3
    present, is_text = categorical._present_and_text(column)
    expected_present = [not categorical.is_missing_value(v) for v in column]
    np.testing.assert_array_equal(present, expected_present)
    np.testing.assert_array_equal(is_text, [isinstance(v, str) for v in column])


def test_string_codes_are_the_categories_positions():
    categories = np.array([1.0, "b", "a", "c"], dtype=object)  # mixed kinds, not sorted
    values = np.array(["c", "a", "zz", "b", "a"])
    codes = categorical._text_codes(values, categories)
    np.testing.assert_array_equal(codes, [3.0, 2.0, np.nan, 1.0, 2.0])
    assert np.isnan(categorical._text_codes(values, np.array([1.0], dtype=object))).all()


@pytest.mark.parametrize("k", [1, 2, 7, 48, 49, 130])
@pytest.mark.parametrize("n_classes", [0, 2, 3])
def test_category_ordering_is_the_stable_sort_of_its_keys(k, n_classes):
    """The compiled search sorts a node's present categories by their statistic: in place
    (insertion) up to INSERTION_SORT_MOST of them, by np.argsort above. Either way the
    order is the stable sort of the keys, ties (many here: few distinct counts) by
    position, as the vectorised reference orders them."""
    from gpu_tree.kernels.cpu import categorical as cpu_categorical

    assert 1 < cpu_categorical.INSERTION_SORT_MOST < 130
    rng = np.random.default_rng(k * 10 + n_classes)
    n_channels = 2 if n_classes == 0 else n_classes
    width = k + 3
    compact = np.zeros((2, 1, width, n_channels), dtype=np.int64)
    # Node 1, feature 0: small counts, so that many keys tie exactly.
    compact[1, 0, :k] = rng.integers(0, 3, size=(k, n_channels))
    scale = np.ones(n_channels)
    for o in range(max(n_classes, 1)):
        keys = np.full(width, np.nan)
        order = np.full(width, -1, dtype=np.int64)
        cpu_categorical.ordering(compact, 1, 0, k, o, scale, n_classes, keys, order)
        key_channel = 1 if n_classes in (0, 2) else o
        weight = compact[1, 0, :k, : max(n_classes, 1)].sum(axis=1).astype(float)
        expected_keys = compact[1, 0, :k, key_channel] / np.where(weight > 0, weight, 1.0)
        np.testing.assert_array_equal(keys[:k], expected_keys)
        np.testing.assert_array_equal(order[:k], np.argsort(expected_keys, kind="stable"))
        assert (order[k:] == -1).all()  # nothing written past the present categories
