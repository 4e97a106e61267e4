"""Native categorical splits against one-hot encoding, on real public data
(../shared/datasets; skipped when absent).

The data sets and their loaders are bench/_categorical_data.py's (shared with
bench/bench_categorical.py): categorical columns hold strings, with None (ARFF files) or NaN
(CSV files) for missing values; numeric columns are float64 with NaN. gpu_tree's tree gets
the DataFrame with ``categorical_features=<the categorical column names>``; the baseline is
scikit-learn's tree on a one-hot encoding (missing its own indicator column, unseen
categories all zeros) plus the numeric columns with their NaN. Both grow to the same
depth. Adult is scored on its own test file, the other data sets by 5-fold stratified
cross-validation (seed 0), which scores every row once and so keeps small data sets from
resting on a few test rows.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass

import numpy as np
import pytest
from _shared_data import bench_module, dataset_path

from gpu_tree import DecisionTreeClassifier

pytest.importorskip("pandas")
sklearn_tree = pytest.importorskip("sklearn.tree")
model_selection = pytest.importorskip("sklearn.model_selection")

MULTIWAY = 3  # Tree.split_kind of an ID3 multiway node (gpu_tree/model/tree.py)
DEPTH = 6  # deep enough that no tree here is pure (mushroom's comes closest: 8 leaves)
FOLDS = 5

DATASETS = ("adult", "mushroom", "car_evaluation", "nursery", "titanic", "penguins", "hypothyroid")

# Accuracy the native tree may lose against the one-hot tree, in percentage points. Both
# search the same kind of binary split, and a one-hot split (one category against the
# rest) is one of the subsets the native search scores, so the native tree should not lose
# at all on its categorical splits; what remains is numeric columns (gpu_tree bins them
# into 256 quantile bins, scikit-learn searches every threshold) and ties broken another
# way. One point is 163 of adult's 16,281 test rows and 17 of car's 1,728 rows; titanic
# (891 rows) and penguins (344 rows) get two points: there one point is 9 and 3 rows.
TOLERANCE_PP = {name: 1.0 for name in DATASETS} | {"titanic": 2.0, "penguins": 2.0}

# Where the native tree has no more leaves than the one-hot tree at the same depth,
# measured at DEPTH (leaves summed over the 5 folds, native / one-hot): mushroom 40 / 67;
# titanic 184 / 184, penguins 62 / 62, hypothyroid 73 / 73 (their categorical columns
# have 2 or 3 categories, or one category decides, so both trees make the same splits).
NOT_LARGER = {"mushroom", "titanic", "penguins", "hypothyroid"}
# Where it does not hold (measured at DEPTH): adult 50 / 48 leaves (test file), car
# 83 / 74, nursery 155 / 140. With a depth limit, subset splits keep more nodes worth
# splitting, so the native tree fills more of the levels; per leaf it is better: capped at
# the one-hot tree's leaf count (max_leaf_nodes) it is still as accurate (adult 85.42 %
# vs 85.73 %, car 92.42 % vs 88.25 %, nursery 90.97 % vs 89.63 %). Asserted for these:
# at most 15 % more leaves, and the capped tree within the tolerance.
MAX_EXTRA_LEAVES = 0.15


@functools.cache
def _load(name):
    return bench_module("_categorical_data").load(name, dataset_path)


def _splits(data):
    if data.name == "adult":
        return [(data.train, data.test)]
    folds = model_selection.StratifiedKFold(FOLDS, shuffle=True, random_state=0)
    with warnings.catch_warnings():  # hypothyroid's 'secondary' and nursery's 'recommend'
        warnings.filterwarnings("ignore", "The least populated class", UserWarning)
        return list(folds.split(np.zeros(len(data.y)), data.y))


def _rows(data, index):
    return data.X.iloc[index].reset_index(drop=True), data.y[index]


def _native(data, **params):
    base = {"max_depth": DEPTH, "categorical_features": data.categorical, "device": "cpu"}
    return DecisionTreeClassifier(**(base | params))


@dataclass
class Comparison:
    n_scored: int
    native_correct: int
    one_hot_correct: int
    capped_correct: int  # the native tree with at most the one-hot tree's leaves
    native_leaves: list
    one_hot_leaves: list
    native_depth: int


@functools.cache
def _compare(name) -> Comparison:
    data = _load(name)
    encode = bench_module("_categorical_data").one_hot
    result = Comparison(0, 0, 0, 0, [], [], 0)
    for train, test in _splits(data):
        X_train, y_train = _rows(data, train)
        X_test, y_test = _rows(data, test)
        native = _native(data).fit(X_train, y_train)
        H_train, H_test = encode(data, X_train, X_test)
        one_hot = sklearn_tree.DecisionTreeClassifier(max_depth=DEPTH, random_state=0)
        one_hot.fit(H_train, y_train)
        correct = int(np.sum(native.predict(X_test) == y_test))
        result.n_scored += len(test)
        result.native_correct += correct
        result.one_hot_correct += int(np.sum(one_hot.predict(H_test) == y_test))
        result.native_leaves.append(int(native.get_n_leaves()))
        result.one_hot_leaves.append(int(one_hot.get_n_leaves()))
        result.native_depth = max(result.native_depth, int(native.get_depth()))
        if native.get_n_leaves() > one_hot.get_n_leaves():
            capped = _native(data, max_leaf_nodes=int(one_hot.get_n_leaves()))
            capped.fit(X_train, y_train)
            assert capped.get_n_leaves() <= one_hot.get_n_leaves()
            correct = int(np.sum(capped.predict(X_test) == y_test))
        result.capped_correct += correct
    return result


# name: (rows, columns, categorical columns, {column: missing values}) per MANIFEST.md
PENGUINS_MISSING = dict.fromkeys(
    ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"], 2
) | {"sex": 11}
HYPOTHYROID_MISSING = {"age": 1, "sex": 150, "TSH": 369, "T3": 769, "TT4": 231, "T4U": 387}
HYPOTHYROID_MISSING |= {"FTI": 385, "TBG": 3772}
EXPECTED = {
    "adult": (48842, 14, 8, {"workclass": 2799, "occupation": 2809, "native_country": 857}),
    "mushroom": (8124, 22, 22, {"stalk-root": 2480}),
    "car_evaluation": (1728, 6, 6, {}),
    "nursery": (12960, 8, 8, {}),
    "titanic": (891, 7, 2, {"age": 177, "embarked": 2}),
    "penguins": (344, 6, 2, PENGUINS_MISSING),
    "hypothyroid": (3772, 29, 22, HYPOTHYROID_MISSING),
}


@pytest.mark.parametrize("name", DATASETS)
def test_loaded_tables_match_the_manifest(name):
    data = _load(name)
    rows, columns, n_categorical, missing = EXPECTED[name]
    assert data.X.shape == (rows, columns) and len(data.y) == rows
    assert len(data.categorical) == n_categorical
    counts = data.X.isna().sum()
    assert {c: int(n) for c, n in counts.items() if n} == missing
    for column in data.categorical:
        assert all(isinstance(v, str) for v in data.X[column].dropna())
    for column in data.numeric:
        assert data.X[column].dtype == np.float64
    assert len(np.intersect1d(data.train, data.test)) == 0
    if name == "adult":
        assert set(data.y) == {"<=50K", ">50K"}  # the test file's trailing '.' is gone


@pytest.mark.parametrize("name", DATASETS)
def test_native_categorical_accuracy_not_below_one_hot(name):
    result = _compare(name)
    native = 100.0 * result.native_correct / result.n_scored
    one_hot = 100.0 * result.one_hot_correct / result.n_scored
    assert native >= one_hot - TOLERANCE_PP[name], (native, one_hot)
    assert native > 75.0  # a real model, not a majority vote
    assert result.native_depth <= DEPTH


@pytest.mark.parametrize("name", DATASETS)
def test_native_categorical_tree_size_against_one_hot(name):
    result = _compare(name)
    native, one_hot = result.native_leaves, result.one_hot_leaves
    assert all(n <= 2**DEPTH for n in native)
    if name in NOT_LARGER:
        assert all(a <= b for a, b in zip(native, one_hot, strict=True)), (native, one_hot)
        if name == "mushroom":  # a subset split does what several one-hot splits do
            assert sum(native) < 0.75 * sum(one_hot), (native, one_hot)
    else:
        assert sum(native) <= (1 + MAX_EXTRA_LEAVES) * sum(one_hot), (native, one_hot)
    capped = 100.0 * result.capped_correct / result.n_scored
    one_hot_accuracy = 100.0 * result.one_hot_correct / result.n_scored
    assert capped >= one_hot_accuracy - TOLERANCE_PP[name], (capped, one_hot_accuracy)


# Multiway (ID3) splits with gain ratio against binary subset splits, both at depth 6, on
# the all-categorical data sets (5-fold accuracy measured: car 90.51 % multiway vs 92.94 %
# binary, every feature is used up by depth 6 on car's 6 features; nursery 96.94 % vs
# 90.97 %). Car's multiway tree trails by 2.4 points, hence three points of slack.
MULTIWAY_TOLERANCE_PP = 3.0


@pytest.mark.parametrize("name", ["car_evaluation", "nursery"])
def test_multiway_gain_ratio_tree_is_valid_and_close_to_binary(name):
    data = _load(name)
    assert data.all_categorical
    binary = _compare(name)
    correct = n_scored = 0
    for train, test in _splits(data):
        X_train, y_train = _rows(data, train)
        X_test, y_test = _rows(data, test)
        model = _native(data, criterion="gain_ratio", categorical_split="multiway")
        model.fit(X_train, y_train)
        predictions = model.predict(X_test)
        assert predictions.shape == (len(test),)
        assert set(np.unique(predictions)) <= set(model.classes_)
        correct += int(np.sum(predictions == y_test))
        n_scored += len(test)

        tree = model.tree_
        internal = np.flatnonzero(tree.children_left != -1)
        assert internal.size > 1 and model.get_depth() <= DEPTH
        assert np.all(tree.split_kind[internal] == MULTIWAY)
        names = np.asarray(model.feature_names_in_)
        assert set(names[tree.feature[internal]]) <= set(data.categorical)
        # Every branch holds a single category of its feature: no path splits a feature twice.
        parent = tree.parents()
        for node in internal:
            above, up = set(), parent[node]
            while up >= 0:
                above.add(int(tree.feature[up]))
                up = parent[up]
            assert int(tree.feature[node]) not in above
        assert model.get_n_leaves() == tree.n_leaves == np.count_nonzero(tree.children_left == -1)
    multiway = 100.0 * correct / n_scored
    binary_accuracy = 100.0 * binary.native_correct / binary.n_scored
    assert multiway >= binary_accuracy - MULTIWAY_TOLERANCE_PP, (multiway, binary_accuracy)


def test_all_missing_column_and_unseen_categories():
    """Hypothyroid keeps TBG, missing in every row: it is never split on. Titanic rows
    with categories never seen in training and with missing values get predictions, and
    an unseen category is treated as a missing one."""
    data = _load("hypothyroid")
    X_train, y_train = _rows(data, data.train)
    model = _native(data).fit(X_train, y_train)
    tbg = list(data.X.columns).index("TBG")
    internal = model.tree_.children_left != -1
    assert tbg not in set(model.tree_.feature[internal])

    data = _load("titanic")
    X_train, y_train = _rows(data, data.train)
    model = _native(data).fit(X_train, y_train)
    X_test, _ = _rows(data, data.test)
    unseen, missing = X_test.copy(), X_test.copy()
    unseen["sex"] = "unknown"
    unseen["embarked"] = "X"
    missing["sex"] = None
    missing["embarked"] = None
    np.testing.assert_array_equal(model.predict(unseen), model.predict(missing))
    np.testing.assert_allclose(model.predict_proba(unseen), model.predict_proba(missing))
