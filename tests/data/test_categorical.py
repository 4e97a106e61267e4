"""Categorical features: declaration, subset splits, ID3 multiway splits, missing values.

The optimal-subset tests check the learned root split against a brute force over every
subset of categories (and both sides for the missing rows), scored by impurities written
in the tests (``_parity.weighted_child_impurity``), not by the library's criterion code;
the tennis test checks the whole ID3 tree of seed 001.
"""

from __future__ import annotations

import itertools
import pickle
import warnings

import numpy as np
import pytest
from _parity import weighted_child_impurity
from numba import config

from gpu_tree import DecisionTreeClassifier, DecisionTreeRegressor
from gpu_tree.app.metrics import confusion_matrix
from gpu_tree.data.categorical import (
    CategoryMaps,
    IdLikeColumnWarning,
    label_codes,
    stray_text,
    stray_text_limit,
    with_codes,
)
from gpu_tree.data.stats import bitset, bitset_members
from gpu_tree.data.validation import check_X, columns_named
from gpu_tree.model.tree import CATEGORICAL_SUBSET, MULTIWAY, NUMERIC
from gpu_tree.testing import assert_tree_equal

pd = pytest.importorskip("pandas")


def _mixed_data(n=600, n_categories=7, n_classes=2, missing=0.0, seed=0, regression=False):
    """A categorical feature whose categories matter in no particular order, a numeric
    feature, and a second categorical feature of noise."""
    rng = np.random.default_rng(seed)
    category = rng.integers(0, n_categories, n)
    numeric = rng.normal(size=n)
    noise = rng.integers(0, 3, n)
    effect = rng.permutation(n_categories)[category]
    if regression:
        y = effect + 0.5 * numeric + rng.normal(scale=0.3, size=n)
    else:
        score = effect / n_categories + 0.3 * numeric + rng.normal(scale=0.15, size=n)
        y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    X = np.c_[category, numeric, noise].astype(float)
    if missing:
        X[rng.random(n) < missing, 0] = np.nan
        X[rng.random(n) < missing, 1] = np.nan
    return X, y


def _best_subset_impurity(codes, y, criterion, missing_rows):
    """Brute force: the lowest n_Y I(D_Y) + n_N I(D_N) over every split "code in V" of
    the present categories, the missing rows tried on both sides (the best split: the
    parent's impurity is the same for all)."""
    present = np.unique(codes[~missing_rows]).astype(int)
    best = np.inf
    for size in range(1, present.size):
        for subset in itertools.combinations(present, size):
            goes_left = np.isin(codes, subset) & ~missing_rows
            lefts = [goes_left | missing_rows, goes_left] if missing_rows.any() else [goes_left]
            for left in lefts:
                best = min(best, weighted_child_impurity(y, left, criterion))
    return best


def _root_left(model, X):
    """Rows of X that the root sends left (to any leaf below its left child)."""
    tree = model.tree_
    return np.isin(model.apply(X), _subtree(tree, tree.children_left[0]))


def _root_impurity(model, X, y, criterion):
    return weighted_child_impurity(y, _root_left(model, X), criterion)


def _subtree(tree, node):
    nodes, stack = [], [node]
    while stack:
        k = stack.pop()
        nodes.append(k)
        stack.extend(tree.children_of(k).tolist())
    return nodes


# -- declaring categorical features ---------------------------------------------------------
def test_indices_names_mask_and_dtype_declare_the_same_features():
    X, y = _mixed_data(seed=1)
    frame = pd.DataFrame({"colour": X[:, 0], "size": X[:, 1], "noise": X[:, 2]})
    by_dtype = frame.astype({"colour": "category", "noise": "category"})
    trees = [
        DecisionTreeClassifier(max_depth=4, categorical_features=spec, device="cpu")
        .fit(data, y)
        .tree_
        for spec, data in [
            ([0, 2], X),
            ([0, -1], X),
            (["colour", "noise"], frame),
            ([True, False, True], X),
            ("from_dtype", by_dtype),
        ]
    ]
    assert (trees[0].split_kind == CATEGORICAL_SUBSET).any()
    for tree in trees[1:]:
        assert_tree_equal(trees[0], tree)


@pytest.mark.parametrize(
    "spec, message",
    [
        (["colour", "shape"], "'shape', which is not a column"),
        ([5], "index 5, but X has 3 features"),
        ([True, False], "mask of length 2, but X has 3 features"),
        ("all", "'all' is not understood"),
        ([1.5], "holds 1.5"),
    ],
)
def test_bad_declarations_name_the_problem(spec, message):
    X, y = _mixed_data(n=50)
    frame = pd.DataFrame({"colour": X[:, 0], "size": X[:, 1], "noise": X[:, 2]})
    with pytest.raises(ValueError, match=message):
        DecisionTreeClassifier(categorical_features=spec, device="cpu").fit(frame, y)


def test_names_need_feature_names():
    X, y = _mixed_data(n=50)
    with pytest.raises(ValueError, match="X has no feature names"):
        DecisionTreeClassifier(categorical_features=["colour"], device="cpu").fit(X, y)


def test_too_many_categories_is_refused_naming_the_feature():
    rng = np.random.default_rng(0)
    X = np.c_[rng.normal(size=300), np.arange(300) % 20]
    y = rng.integers(0, 2, 300)
    with pytest.raises(ValueError, match=r"feature 1 has 20 categories, more than the 16 bins"):
        DecisionTreeClassifier(categorical_features=[1], max_bins=16, device="cpu").fit(X, y)
    X[0, 0] = np.nan  # a missing value takes a bin of its own: 16 is then one too many
    X16 = np.c_[X[:, 0], np.arange(300) % 16]
    with pytest.raises(ValueError, match="one bin is kept for missing values"):
        DecisionTreeClassifier(categorical_features=[1], max_bins=16, device="cpu").fit(X16, y)
    for splitter in ("hist", "exact"):  # the same limit in both modes
        with pytest.raises(ValueError, match="20 categories"):
            DecisionTreeClassifier(
                categorical_features=[1], max_bins=16, splitter=splitter, device="cpu"
            ).fit(X, y)


def test_bad_split_parameters_are_refused():
    X, y = _mixed_data(n=50)
    with pytest.raises(ValueError, match="Unknown categorical_split='ternary'"):
        DecisionTreeClassifier(categorical_features=[0], categorical_split="ternary").fit(X, y)
    with pytest.raises(ValueError, match="max_category_subset must be >= 0"):
        DecisionTreeClassifier(categorical_features=[0], max_category_subset=-1).fit(X, y)
    with pytest.raises(ValueError, match="criterion='cart' scores binary splits only"):
        DecisionTreeClassifier(
            categorical_features=[0], categorical_split="multiway", criterion="cart"
        ).fit(X, y)


def test_string_categories_and_unseen_ones_follow_the_missing_rule():
    X, y = _mixed_data(n=400, missing=0.1, seed=3)
    names = np.array(["blue", "green", "plum", "red", "rose", "sand", "teal"], dtype=object)
    colour = np.where(np.isnan(X[:, 0]), None, names[np.nan_to_num(X[:, 0]).astype(int)])
    frame = pd.DataFrame({"colour": colour, "size": X[:, 1], "noise": X[:, 2]})
    model = DecisionTreeClassifier(
        max_depth=5, categorical_features=["colour", "noise"], device="cpu"
    ).fit(frame, y)
    numeric = DecisionTreeClassifier(max_depth=5, categorical_features=[0, 2], device="cpu")
    # Categories are numbered in sorted order: names[k] gets code k, the numeric code.
    assert_tree_equal(model.tree_, numeric.fit(X, y).tree_)
    # A colour never seen in training is predicted as a missing colour, without an error.
    unseen = frame.iloc[:40].copy()
    unseen["colour"] = "ultraviolet"
    missing = frame.iloc[:40].copy()
    missing["colour"] = None
    np.testing.assert_array_equal(model.predict_proba(unseen), model.predict_proba(missing))
    assert model.categories_[0].tolist() == names.tolist()
    assert model.categories_[1] is None
    assert model.is_categorical_.tolist() == [True, False, True]


def test_columns_of_text_and_category_dtype_are_categorical_by_default():
    # As HistGradientBoosting, LightGBM and XGBoost take them: no declaration needed.
    rng = np.random.default_rng(4)
    colour = rng.choice(["red", "blue", "teal"], size=120).astype(object)
    colour[::11] = None
    shape = pd.Categorical(rng.choice(["round", "square"], size=120))
    size = rng.normal(size=120)
    codes = rng.integers(0, 3, size=120)  # numbers: numeric unless declared
    y = ((colour == "red") ^ (size > 0)).astype(int)
    frame = pd.DataFrame({"colour": colour, "shape": shape, "size": size, "codes": codes})
    default = DecisionTreeClassifier(device="cpu").fit(frame, y)
    assert default.is_categorical_.tolist() == [True, True, False, False]
    declared = DecisionTreeClassifier(categorical_features=["colour", "shape"], device="cpu").fit(
        frame, y
    )
    assert_tree_equal(default.tree_, declared.tree_)
    assert_tree_equal(
        DecisionTreeClassifier(categorical_features="from_dtype", device="cpu").fit(frame, y).tree_,
        default.tree_,
    )
    # A numpy array of text: every column is text, so every column is categorical.
    text = np.column_stack([colour.astype(str), np.where(size > 0, "hi", "lo")])
    assert DecisionTreeClassifier(device="cpu").fit(text, y).is_categorical_.tolist() == [
        True,
        True,
    ]


def test_an_empty_declaration_makes_a_text_column_an_error_naming_it():
    frame = pd.DataFrame({"colour": ["red", "blue"] * 10, "size": np.arange(20.0)})
    with pytest.raises(ValueError, match=r"column 0 \('colour'\).*'red'.*categorical_features"):
        DecisionTreeClassifier(categorical_features=[], device="cpu").fit(frame, np.arange(20) % 2)


@pytest.mark.parametrize("categorical_features", [None, "from_dtype"])
def test_a_column_mixing_text_and_numbers_is_refused_naming_it_and_rows(categorical_features):
    frame = pd.DataFrame(
        {"size": np.arange(5.0), "colour": np.array([None, "red", 3, "blue", 4.5], dtype=object)}
    )
    message = r"feature 1 \('colour'\) mixes text and numbers: row 1 holds 'red', row 2 holds 3\."
    with pytest.raises(ValueError, match=message):
        DecisionTreeClassifier(categorical_features=categorical_features, device="cpu").fit(
            frame, np.arange(5) % 2
        )
    # Declared, its values are categories, the number 3 and the text "red" alike.
    model = DecisionTreeClassifier(categorical_features=["colour"], device="cpu")
    assert model.fit(frame, np.arange(5) % 2).is_categorical_.tolist() == [False, True]


@pytest.mark.parametrize("index", [3, -4, 4])
def test_an_index_just_past_the_features_is_refused_naming_it(index):
    # X has 3 features: valid indices are -3..2; 3 (== n_features) and -4 are one past.
    X, y = _mixed_data(n=50)
    with pytest.raises(ValueError, match=rf"holds the index {index}, but X has 3 features"):
        DecisionTreeClassifier(categorical_features=[index], device="cpu").fit(X, y)
    with pytest.raises(ValueError, match=rf"holds the index {index}, but X has 3 features"):
        DecisionTreeClassifier(categorical_features=[0, index], device="cpu").fit(X, y)


# -- text that reads as numbers, explicit lists, identifier-like columns (issue 45) ----------
def _sales_frame(n=400, seed=0):
    """Age as numbers written as text (an object column, as pandas.read_csv leaves a
    column with one typo in it), a column of numbers and one of text."""
    rng = np.random.default_rng(seed)
    age = rng.integers(25, 81, n)
    frame = pd.DataFrame(
        {
            "Age": age.astype(str).astype(object),
            "Income": rng.normal(size=n),
            "ShelveLoc": rng.choice(["Bad", "Good", "Medium"], n).astype(object),
        }
    )
    return frame, (age > 50).astype(int)


@pytest.mark.parametrize("dtype", ["object", "string"])
def test_text_of_numbers_with_a_typo_is_refused_naming_column_rows_and_values(dtype):
    """One "4G" made Age (numbers read as text) categorical, 57 categories, silently."""
    frame, y = _sales_frame()
    frame.loc[17, "Age"] = "4G"
    frame.loc[[3, 9], "Age"] = None  # missing values are not typos
    frame = frame.astype({"Age": dtype})
    message = (
        r"feature 0 \('Age'\) is text that reads as numbers but for 1 of its 398 values: "
        r"'4G' \(row 17\)\. Typos\? .*\(57 categories\).*na_values.*categorical_features"
    )
    with pytest.raises(ValueError, match=message):
        DecisionTreeClassifier(device="cpu").fit(frame, y)
    # Declared, the column is categorical as the user says, "4G" a category among others.
    model = DecisionTreeClassifier(categorical_features=["Age"], device="cpu").fit(frame, y)
    assert model.is_categorical_.tolist() == [True, False, True]
    assert "4G" in model.categories_[0].tolist()
    # Made missing, it is a column of numbers.
    fixed = frame.assign(Age=pd.to_numeric(frame["Age"], errors="coerce"))
    assert DecisionTreeClassifier(device="cpu").fit(fixed, y).is_categorical_.tolist() == [
        False,
        False,
        True,
    ]


def test_a_numpy_array_of_text_with_a_typo_is_refused_by_position():
    frame, y = _sales_frame()
    text = frame[["ShelveLoc", "Age"]].to_numpy().astype(str)
    text[[5, 6], 1] = "?"
    with pytest.raises(ValueError, match=r"feature 1 is text .* 2 of its 400 .*'\?' \(rows 5, 6\)"):
        DecisionTreeClassifier(device="cpu").fit(text, y)


def test_a_typo_in_a_wide_text_column_of_numbers_is_the_typo_error_not_raise_max_bins():
    # Thousands of distinct numbers and one "12x4": the advice was to raise max_bins.
    rng = np.random.default_rng(1)
    values = rng.normal(0, 1000, 3000).round(3).astype(str).astype(object)
    values[33] = "12x4"
    frame = pd.DataFrame({"a": rng.random(3000), "b": values})
    with pytest.raises(
        ValueError, match=r"feature 1 \('b'\) is text .*'12x4' \(row 33\)"
    ) as caught:
        DecisionTreeClassifier(device="cpu").fit(frame, np.arange(3000) % 2)
    assert "max_bins" not in str(caught.value)


def test_what_the_typo_rule_leaves_categorical():
    frame, y = _sales_frame()
    # Text that is all numbers is a type chosen on purpose: categorical, as before.
    model = DecisionTreeClassifier(device="cpu").fit(frame, y)
    assert model.is_categorical_.tolist() == [True, False, True]
    # More values of text than max(3, 1%) of 400: a column of text.
    more = frame.copy()
    more.loc[[1, 2, 3, 4, 5], "Age"] = "unknown"
    assert DecisionTreeClassifier(device="cpu").fit(more, y).is_categorical_[0]
    # A pandas category column is categorical by its type: not looked at.
    typed = frame.copy()
    typed.loc[17, "Age"] = "4G"
    typed = typed.astype({"Age": "category"})
    assert DecisionTreeClassifier(device="cpu").fit(typed, y).is_categorical_[0]


@pytest.mark.parametrize(
    "n_present, limit", [(5, 0), (10, 1), (29, 2), (30, 3), (400, 4), (1000, 10), (10**6, 10**4)]
)
def test_the_typo_limit_is_max_3_or_1_percent_and_at_most_a_tenth(n_present, limit):
    assert stray_text_limit(n_present) == limit


def test_stray_text_finds_the_rows_and_values_of_a_few_words_among_numbers():
    values = np.array(["1", "2.5", None, "4G", " 7 ", "x", "4G"] + ["3"] * 293, dtype=object)
    rows, words, n_present = stray_text(values)
    assert rows.tolist() == [3, 5, 6] and words == ["4G", "x"] and n_present == 299
    words_only = np.array(["a", "b", "c"] * 10 + ["1"], dtype=object)
    assert stray_text(words_only) is None  # mostly text
    assert stray_text(np.array(["1", "2"] * 20, dtype=object)) is None  # all numbers


def test_a_list_of_categorical_features_adds_to_the_columns_of_text():
    """categorical_features=['balance'] once switched off the columns of text, so that a
    text column (student) was then an error; it adds to them, as --categorical does."""
    rng = np.random.default_rng(2)
    frame = pd.DataFrame(
        {
            "student": rng.choice(["No", "Yes"], 80).astype(object),
            "balance": rng.integers(0, 4, 80),
            "income": rng.normal(size=80),
        }
    )
    y = (frame["student"] == "Yes").to_numpy() ^ (frame["balance"] > 1).to_numpy()
    for spec in (["balance"], [1]):
        model = DecisionTreeClassifier(categorical_features=spec, device="cpu").fit(frame, y)
        assert model.is_categorical_.tolist() == [True, True, False]
    # A boolean mask says exactly which: the column of text must be among them.
    mask = DecisionTreeClassifier(categorical_features=[True, True, False], device="cpu")
    assert mask.fit(frame, y).is_categorical_.tolist() == [True, True, False]
    with pytest.raises(ValueError, match=r"column 0 \('student'\) holds a non-numeric value"):
        DecisionTreeClassifier(categorical_features=[False, True, False], device="cpu").fit(
            frame, y
        )


def test_an_identifier_like_column_is_warned_of_naming_it():
    frame, y = _sales_frame(n=100)
    frame["name"] = [f"customer {i}" for i in range(100)]
    with pytest.warns(
        IdLikeColumnWarning, match=r"feature 3 \('name'\) has 100 categories in 100"
    ) as caught:
        DecisionTreeClassifier(device="cpu").fit(frame, y)
    assert [w.message.feature for w in caught if w.category is IdLikeColumnWarning] == [3]
    assert issubclass(IdLikeColumnWarning, UserWarning)
    assert "drop the column from X" in str(caught[0].message)
    # Half the rows or fewer, or under 20 rows: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdLikeColumnWarning)
        DecisionTreeClassifier(device="cpu").fit(
            frame.assign(name=[f"c{i % 50}" for i in range(100)]), y
        )
        DecisionTreeClassifier(device="cpu").fit(frame.iloc[:19], y[:19])


def test_messages_name_the_columns_an_unnamed_x_is_given():
    """The command line fits on an array of a file's columns: its errors named them by
    position in that array ("categorical feature 1 has 7608 categories")."""
    rng = np.random.default_rng(0)
    X = np.c_[rng.normal(size=300), np.arange(300) % 20]
    y = rng.integers(0, 2, 300)
    estimator = DecisionTreeClassifier(categorical_features=[1], max_bins=16, device="cpu")
    with columns_named(["income", "store"]):
        with pytest.raises(ValueError, match=r"categorical column 'store' has 20 categories"):
            estimator.fit(X, y)
        X[4, 0] = np.inf
        with pytest.raises(ValueError, match=r"in column 'income' at row 4"):
            check_X(X)
    with pytest.raises(ValueError, match=r"in column 0 at row 4"):  # outside: positions
        check_X(X)


def _hand_walk(tree, x, categorical):
    """The leaf of one row, walked here: numeric nodes send x <= threshold left; a node on
    a categorical feature sends ``categorical[feature]`` rows (an unseen category) where
    its missing values go, as does NaN anywhere."""
    node = 0
    while tree.children_left[node] >= 0:
        f = tree.feature[node]
        if categorical[f] or np.isnan(x[f]):
            if tree.branch_offset[node] >= 0:  # multiway: the missing values' entry
                node = tree.branch_children[tree.branch_offset[node] + tree.n_branches[node]]
                continue
            go_left = bool(tree.missing_go_to_left[node])
        else:
            assert tree.category_offset[node] < 0
            go_left = x[f] <= tree.threshold[node]
        node = tree.children_left[node] if go_left else tree.children_right[node]
    return node


@pytest.mark.parametrize("categorical_split", ["binary", "multiway"])
@pytest.mark.parametrize("column_kind", ["strings", "pandas category", "numbers"])
def test_unseen_categories_at_predict_follow_each_nodes_missing_rule(
    categorical_split, column_kind
):
    X, y = _mixed_data(n=600, n_categories=7, missing=0.1, seed=21)
    names = np.array([f"k{k}" for k in range(7)], dtype=object)
    unseen_value = {"strings": "never", "pandas category": "never", "numbers": 2.5}
    if column_kind == "numbers":
        colour = X[:, 0]
    else:
        colour = np.where(np.isnan(X[:, 0]), None, names[np.nan_to_num(X[:, 0]).astype(int)])
    frame = pd.DataFrame({"colour": colour, "size": X[:, 1], "noise": X[:, 2]})
    if column_kind == "pandas category":
        frame["colour"] = frame["colour"].astype("category")
    model = DecisionTreeClassifier(
        max_depth=4,
        categorical_features=[0],
        categorical_split=categorical_split,
        criterion="entropy",
        device="cpu",
    ).fit(frame, y)
    tree = model.tree_
    assert (tree.feature[tree.children_left >= 0] == 0).any()  # the colour is used
    probe = frame.iloc[:60].copy()
    if column_kind == "pandas category":
        # A category the training column did not have, in a column of its own categories.
        probe["colour"] = pd.Categorical(["never"] * 60, categories=["k3", "never"])
    else:
        probe["colour"] = pd.Series([unseen_value[column_kind]] * 60, dtype=object)
    numeric = np.c_[np.zeros(60), probe["size"].to_numpy(), probe["noise"].to_numpy()]
    expected = [_hand_walk(tree, row, [True, False, False]) for row in numeric]
    np.testing.assert_array_equal(model.apply(probe), expected)
    np.testing.assert_array_equal(model.predict_proba(probe), tree.value[expected, 0, :])


def test_category_codes_are_nan_for_unseen_categories():
    # The coded X handed to the tree walk: seen categories get their position among the
    # sorted training categories, unseen and missing ones NaN (never a negative code).
    train = pd.DataFrame(
        {
            "s": ["b", "a", "c", None],
            "p": pd.Categorical(["y", "x", "y", "x"], categories=["x", "y", "z"]),
            "o": np.array([3, "t", 3, "t"], dtype=object),
        }
    )
    maps = CategoryMaps(np.array([True, True, True])).fit(train)
    probe = pd.DataFrame(
        {
            "s": ["c", "zz", None, "a"],
            "p": pd.Categorical(["z", "w", "y", None], categories=["w", "y", "z"]),
            "o": np.array([4, "t", "u", 3], dtype=object),
        }
    )
    expected = np.array(
        [
            [2, np.nan, np.nan],  # "c" -> 2; "z" was a category, never seen in training
            [np.nan, np.nan, 1],  # "w" was no training category; "t" sorts after 3
            [np.nan, 1, np.nan],
            [0, np.nan, 0],
        ]
    )
    np.testing.assert_array_equal(maps.encode(probe), expected)
    coded = with_codes(probe, maps)
    assert not (coded.to_numpy(dtype=float) < 0).any()


# -- binary subset splits -------------------------------------------------------------------
@pytest.mark.parametrize("missing", [0.0, 0.15])
@pytest.mark.parametrize(
    "criterion, n_classes",
    [("gini", 2), ("entropy", 2), ("squared_error", 0), ("gini", 3), ("entropy", 4)],
)
@pytest.mark.parametrize("seed", range(3))
def test_root_subset_split_is_the_best_over_every_subset(criterion, n_classes, missing, seed):
    # Binary targets and regression: the ordering by P(class 1) / the mean is exact
    # (Breiman, Fisher). Multiclass with 5 categories: every subset of at most
    # max_category_subset=2 categories covers every partition, so also exact.
    regression = n_classes == 0
    X, y = _mixed_data(
        n=300,
        n_categories=5 if n_classes > 2 else 7,
        n_classes=max(n_classes, 2),
        missing=missing,
        seed=seed,
        regression=regression,
    )
    X = X[:, :1]
    estimator = DecisionTreeRegressor if regression else DecisionTreeClassifier
    for splitter in ("hist", "exact"):
        model = estimator(
            max_depth=1,
            criterion=criterion,
            categorical_features=[0],
            splitter=splitter,
            device="cpu",
        ).fit(X, y)
        assert model.tree_.split_kind[0] == CATEGORICAL_SUBSET
        best = _best_subset_impurity(X[:, 0], y, criterion, np.isnan(X[:, 0]))
        assert _root_impurity(model, X, y, criterion) == pytest.approx(best, rel=1e-12)


def test_multiclass_beyond_the_exhaustive_size_uses_orderings_and_small_subsets():
    # 9 categories, 3 classes: the search is a heuristic there; it must still find a
    # split at least as good as the best single category against the rest (size-1
    # subsets are always tried) and as the best prefix of each class ordering.
    X, y = _mixed_data(n=900, n_categories=9, n_classes=3, seed=5)
    X = X[:, :1]
    model = DecisionTreeClassifier(max_depth=1, categorical_features=[0], device="cpu").fit(X, y)
    found = _root_impurity(model, X, y, "gini")
    codes = X[:, 0].astype(int)
    singles = min(weighted_child_impurity(y, codes == v, "gini") for v in range(9))
    best = _best_subset_impurity(X[:, 0], y, "gini", np.zeros(900, bool))
    assert singles >= found >= best
    # Not guaranteed in general, but measured: the orderings reach the exhaustive
    # optimum on this data (and on seeds 6-9 of it too).
    assert found == pytest.approx(best, rel=1e-12)
    # Allowing only singletons (l=1) can only do worse or equal.
    narrow = DecisionTreeClassifier(
        max_depth=1, categorical_features=[0], max_category_subset=0, device="cpu"
    ).fit(X, y)
    assert _root_impurity(narrow, X, y, "gini") >= found


# Rows per (category, class), 5 categories x 4 classes, found by a search for a table on
# which no prefix of any P(class) ordering is the best entropy split: only the subset
# search (every subset of at most two categories, exhaustive for five) finds {2, 4}.
_SUBSET_ONLY_TABLE = np.array(
    [[2, 7, 38, 0], [1, 38, 21, 5], [0, 0, 4, 8], [0, 9, 19, 11], [20, 10, 11, 16]]
)


def _ordering_prefixes(codes, y, n_classes):
    """Left sides of every prefix of the categories sorted by P(class c), each c."""
    categories = np.unique(codes)
    for c in range(n_classes):
        share = [np.mean(y[codes == k] == c) for k in categories]
        order = categories[np.argsort(share, kind="stable")]
        for end in range(1, categories.size):
            yield np.isin(codes, order[:end])


@pytest.mark.parametrize(
    ("device", "splitter"), [("cpu", "hist"), ("cpu", "exact"), ("cuda", "hist")]
)
def test_multiclass_subset_search_finds_a_split_no_class_ordering_reaches(device, splitter):
    table = _SUBSET_ONLY_TABLE
    codes = np.repeat(np.arange(5), table.sum(axis=1)).astype(float)
    y = np.concatenate([np.repeat(np.arange(4), row) for row in table])
    X = codes[:, None]
    best = _best_subset_impurity(codes, y, "entropy", np.zeros(y.size, bool))
    via_orderings = min(
        weighted_child_impurity(y, left, "entropy") for left in _ordering_prefixes(codes, y, 4)
    )
    assert via_orderings > best + 1.0  # bits x rows: the orderings cannot get there
    params = dict(
        max_depth=1, criterion="entropy", categorical_features=[0], device=device, splitter=splitter
    )
    model = DecisionTreeClassifier(**params).fit(X, y)
    assert model.tree_.split_kind[0] == CATEGORICAL_SUBSET
    assert _root_impurity(model, X, y, "entropy") == pytest.approx(best, rel=1e-12)
    left = _root_left(model, X)
    assert set(np.unique(codes[left])) in ({2.0, 4.0}, {0.0, 1.0, 3.0})
    # The stored set (bitset) decodes to the same categories the rows were sent by.
    tree = model.tree_
    words = tree.category_bitsets[tree.category_offset[0] :][: tree.n_category_words]
    sent_left = set(bitset_members(words).tolist()) & set(range(5))
    assert sent_left == set(np.unique(codes[left]).astype(int))
    # Without the subset search only the orderings' best is found.
    narrow = DecisionTreeClassifier(**params, max_category_subset=0).fit(X, y)
    assert _root_impurity(narrow, X, y, "entropy") == pytest.approx(via_orderings, rel=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_permuting_category_codes_gives_the_same_partition(seed):
    X, y = _mixed_data(n=500, n_categories=8, missing=0.1, seed=seed)
    permutation = np.random.default_rng(100 + seed).permutation(8)
    X_permuted = X.copy()
    present = ~np.isnan(X[:, 0])
    X_permuted[present, 0] = permutation[X[present, 0].astype(int)]
    for splitter in ("hist", "exact"):
        params = dict(max_depth=4, categorical_features=[0, 2], splitter=splitter, device="cpu")
        a = DecisionTreeClassifier(**params).fit(X, y)
        b = DecisionTreeClassifier(**params).fit(X_permuted, y)
        # The same rows end in the same leaves: the same partition of the training set.
        np.testing.assert_array_equal(a.apply(X), b.apply(X_permuted))
        np.testing.assert_array_equal(a.tree_.feature, b.tree_.feature)


def test_subset_node_stores_the_codes_sent_left():
    X, y = _mixed_data(n=400, seed=7)
    model = DecisionTreeClassifier(max_depth=1, categorical_features=[0], device="cpu")
    tree = model.fit(X[:, :1], y).tree_
    words = tree.category_bitsets[tree.category_offset[0] :][: tree.n_category_words]
    left_codes = set(bitset_members(words).tolist())
    rows_left = model.apply(X[:, :1]) == tree.children_left[0]
    # Where missing values go left, so do the codes the node never saw (7..63 here).
    assert all(code in left_codes for code in range(7, 64)) == bool(tree.missing_go_to_left[0])
    assert set(np.unique(X[rows_left, 0]).astype(int)) == left_codes & set(range(7))
    assert np.isnan(tree.threshold[0]) or tree.threshold[0] == -2


def test_bitset_round_trip():
    codes = np.array([0, 5, 63, 64, 130, 255])
    words = bitset(codes, 4)
    assert words.dtype == np.int64 and words.size == 4
    np.testing.assert_array_equal(bitset_members(words), codes)


def test_missing_direction_of_a_categorical_split_is_the_better_side():
    X, y = _mixed_data(n=400, missing=0.2, seed=11)
    X = X[:, :1]
    model = DecisionTreeClassifier(max_depth=1, categorical_features=[0], device="cpu").fit(X, y)
    tree = model.tree_
    missing_rows = np.isnan(X[:, 0])
    left = model.apply(X) == tree.children_left[0]
    assert (left[missing_rows] == bool(tree.missing_go_to_left[0])).all()
    # Moving the missing rows to the other side scores no better.
    other = np.where(missing_rows, ~left, left)
    flipped = weighted_child_impurity(y, other, "gini")
    assert _root_impurity(model, X, y, "gini") <= flipped


def test_categories_absent_from_a_node_follow_its_missing_rule():
    # Category 3 occurs only on the right of the root's numeric split; the left child
    # splits on the category, and a left row with category 3 follows that node's
    # missing rule, as a NaN would.
    rng = np.random.default_rng(4)
    n = 400
    numeric = rng.normal(size=n)
    category = np.where(numeric > 0, rng.integers(0, 4, n), rng.integers(0, 3, n))
    y = np.where(numeric > 0, 1, (category == 1).astype(int))
    X = np.c_[numeric, category].astype(float)
    model = DecisionTreeClassifier(max_depth=2, categorical_features=[1], device="cpu").fit(X, y)
    probe = np.array([[-1.0, 3.0], [-1.0, np.nan]])
    np.testing.assert_array_equal(model.apply(probe[:1]), model.apply(probe[1:]))


def test_words_for_rounds_up_to_whole_words():
    from gpu_tree.data.stats import words_for

    for n_categories, words in [(0, 1), (1, 1), (64, 1), (65, 2), (70, 2), (128, 2), (129, 3)]:
        assert words_for(n_categories) == words, n_categories


@pytest.mark.parametrize("splitter", ["hist", "exact"])
def test_a_category_past_the_first_bitset_word_is_split_off(splitter):
    # 70 categories; only category 66 (bit 2 of the second word) is class 1. The stump
    # must send 66 alone to one side, and predict every row right.
    codes = np.arange(70 * 12) % 70
    y = (codes == 66).astype(int)
    X = codes[:, None].astype(float)
    model = DecisionTreeClassifier(
        max_depth=1, categorical_features=[0], splitter=splitter, device="cpu"
    ).fit(X, y)
    tree = model.tree_
    assert tree.split_kind[0] == CATEGORICAL_SUBSET and tree.n_category_words == 2
    np.testing.assert_array_equal(model.predict(X), y)
    left = model.apply(X) == tree.children_left[0]
    assert set(codes[left].tolist()) in ({66}, set(range(70)) - {66})
    words = tree.category_bitsets[tree.category_offset[0] :][: tree.n_category_words]
    members = set(bitset_members(words).tolist()) & set(range(70))
    assert members == set(codes[left].tolist())


@pytest.mark.parametrize(
    ("splitter", "device"), [("hist", "cpu"), ("exact", "cpu"), ("hist", "cuda")]
)
def test_training_partition_agrees_with_the_stored_two_word_category_sets(splitter, device):
    """Several subset nodes of one level on a 70-category feature (two bitset words each):
    the rows each node received in training are the rows the stored tree routes there, and
    the categories on each side are the stored set (each node reads its own words)."""
    rng = np.random.default_rng(4)
    codes = rng.integers(0, 70, size=1400)
    side = rng.random(1400) < 0.5
    effect = rng.permutation(70)
    y = (effect[codes] + 35 * side > 52).astype(int)
    X = np.column_stack([codes, side]).astype(float)
    model = DecisionTreeClassifier(
        max_depth=3, categorical_features=[0], splitter=splitter, device=device
    ).fit(X, y)
    tree = model.tree_
    subset_nodes = np.flatnonzero(tree.split_kind == CATEGORICAL_SUBSET)
    assert np.sum(tree.depth[subset_nodes] == 1) + np.sum(tree.depth[subset_nodes] == 2) >= 2
    assert tree.n_category_words == 2
    paths = model.decision_path(X).toarray().astype(bool)
    np.testing.assert_array_equal(paths.sum(axis=0), tree.n_node_samples)
    for node in subset_nodes:
        words = tree.category_bitsets[tree.category_offset[node] :][: tree.n_category_words]
        members = set(bitset_members(words).tolist())
        went_left = paths[:, tree.children_left[node]]
        assert set(codes[went_left].tolist()) <= members
        assert not set(codes[paths[:, node] & ~went_left].tolist()) & members


# -- both backends and both modes build the same tree --------------------------------------
@pytest.mark.parametrize("categorical_split", ["binary", "multiway"])
@pytest.mark.parametrize("n_classes", [0, 2, 3])
def test_hist_exact_and_cuda_build_the_same_categorical_tree(categorical_split, n_classes):
    regression = n_classes == 0
    X, y = _mixed_data(
        n=400,
        n_categories=6,
        n_classes=max(n_classes, 2),
        missing=0.1,
        seed=n_classes,
        regression=regression,
    )
    X[:, 1] = np.round(X[:, 1], 1)  # few distinct values: hist mode equals exact mode
    estimator = DecisionTreeRegressor if regression else DecisionTreeClassifier
    criterion = "squared_error" if regression else "gain_ratio"
    params = dict(
        max_depth=4,
        criterion=criterion,
        categorical_features=[0, 2],
        categorical_split=categorical_split,
    )
    exact = estimator(splitter="exact", device="cpu", **params).fit(X, y)
    hist = estimator(device="cpu", **params).fit(X, y)
    cuda = estimator(device="cuda", **params).fit(X, y)
    kind = MULTIWAY if categorical_split == "multiway" else CATEGORICAL_SUBSET
    assert (exact.tree_.split_kind == kind).any()
    assert_tree_equal(exact.tree_, hist.tree_)
    assert_tree_equal(hist.tree_, cuda.tree_)
    np.testing.assert_array_equal(hist.predict(X), cuda.predict(X))


# -- ID3 multiway splits ----------------------------------------------------------------------
TENNIS = """\
sunny hot high weak no
sunny hot high strong no
overcast hot high weak yes
rain mild high weak yes
rain cool normal weak yes
rain cool normal strong no
overcast cool normal strong yes
sunny mild high weak no
sunny cool normal weak yes
rain mild normal weak yes
sunny mild normal strong yes
overcast mild high strong yes
overcast hot normal weak yes
rain mild high strong no"""


def _tennis():
    """Seed 001's 14 days (the same table as play_tennis_weather_nominal.arff, which
    spells rain 'rainy' and wind 'windy TRUE/FALSE')."""
    table = np.array([line.split() for line in TENNIS.splitlines()], dtype=object)
    frame = pd.DataFrame(table[:, :4], columns=["outlook", "temperature", "humidity", "wind"])
    return frame, table[:, 4]


def _children_by_category(model, node, feature):
    tree = model.tree_
    categories = model.categories_[feature]
    offset, n = tree.branch_offset[node], tree.n_branches[node]
    return {categories[k]: int(tree.branch_children[offset + k]) for k in range(n)}


@pytest.mark.parametrize("criterion", ["entropy", "gain_ratio"])
@pytest.mark.parametrize("device, splitter", [("cpu", "hist"), ("cpu", "exact"), ("cuda", "hist")])
def test_id3_builds_the_seed_tennis_tree(criterion, device, splitter):
    X, y = _tennis()
    model = DecisionTreeClassifier(
        criterion=criterion,
        categorical_features=list(X.columns),
        categorical_split="multiway",
        splitter=splitter,
        device=device,
    ).fit(X, y)
    tree = model.tree_
    names = list(X.columns)

    def leaf_label(node):
        assert tree.children_left[node] == -1
        return model.classes_[np.argmax(tree.value[node, 0])]

    # Seed 001: IG(outlook) = 0.246 is the largest gain (humidity 0.151, wind 0.048,
    # temperature 0.029), so outlook is the root, with one branch per value.
    assert names[tree.feature[0]] == "outlook" and tree.split_kind[0] == MULTIWAY
    root = _children_by_category(model, 0, 0)
    assert set(root) == {"sunny", "overcast", "rain"}
    assert leaf_label(root["overcast"]) == "yes"
    sunny, rain = root["sunny"], root["rain"]
    assert names[tree.feature[sunny]] == "humidity"
    humidity = _children_by_category(model, sunny, names.index("humidity"))
    assert {k: leaf_label(v) for k, v in humidity.items()} == {"high": "no", "normal": "yes"}
    assert names[tree.feature[rain]] == "wind"
    wind = _children_by_category(model, rain, names.index("wind"))
    assert {k: leaf_label(v) for k, v in wind.items()} == {"strong": "no", "weak": "yes"}
    assert model.get_depth() == 2
    assert model.get_n_leaves() == 5
    assert tree.node_count == 8
    np.testing.assert_array_equal(model.predict(X), y)  # the tree fits all 14 days
    # The root's gain, as the seed computes it: 0.940 - 5/14 0.971 - 4/14 0 - 5/14 0.971.
    # The seed prints 0.246; recomputed it is 0.24675 (0.246 is a truncation, as with
    # its other three-decimal gains).
    assert tree.impurity[0] == pytest.approx(0.9403, abs=5e-5)
    gain = tree.impurity[0] - sum(
        tree.weighted_n_node_samples[c] / 14 * tree.impurity[c] for c in root.values()
    )
    assert gain == pytest.approx(0.24675, abs=5e-6)


def test_tennis_tree_from_the_shared_arff_file():
    from _shared_data import read_arff

    names, rows = read_arff("play_tennis_weather_nominal.arff")
    table = pd.DataFrame(rows, columns=names)
    model = DecisionTreeClassifier(
        criterion="entropy",
        categorical_features=names[:4],
        categorical_split="multiway",
        device="cpu",
    ).fit(table[names[:4]], table["play"])
    assert names[model.tree_.feature[0]] == "outlook"
    assert model.get_n_leaves() == 5 and model.get_depth() == 2
    np.testing.assert_array_equal(model.predict(table[names[:4]]), table["play"])


def test_multiway_feature_is_not_tested_again_below():
    X, y = _mixed_data(n=600, n_categories=6, missing=0.1, seed=9)
    model = DecisionTreeClassifier(
        max_depth=6, categorical_features=[0, 2], categorical_split="multiway", device="cpu"
    ).fit(X, y)
    tree = model.tree_
    multiway = np.flatnonzero(tree.split_kind == MULTIWAY)
    assert multiway.size
    for node in multiway:
        below = _subtree(tree, node)[1:]
        internal = [k for k in below if tree.children_left[k] >= 0]
        assert tree.feature[node] not in tree.feature[internal]
    # Numeric features keep binary splits.
    assert set(tree.split_kind[tree.feature == 1][tree.children_left[tree.feature == 1] >= 0]) <= {
        NUMERIC
    }


def test_multiway_tree_walks_paths_importances_and_pickles():
    X, y = _mixed_data(n=500, n_categories=5, missing=0.1, seed=12)
    model = DecisionTreeClassifier(
        max_depth=5, categorical_features=[0, 2], categorical_split="multiway", device="cpu"
    ).fit(X, y)
    tree = model.tree_
    leaves = model.apply(X)
    path = model.decision_path(X)
    np.testing.assert_array_equal(np.asarray(path.sum(axis=1)).ravel(), tree.depth[leaves] + 1)
    assert (path.toarray()[np.arange(X.shape[0]), leaves] == 1).all()
    importances = model.feature_importances_
    assert importances.sum() == pytest.approx(1.0) and importances[0] > 0
    assert model.get_n_leaves() == int((tree.children_left == -1).sum())
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict_proba(X), model.predict_proba(X))
    # Missing values and unseen codes go to the node's default (largest) branch.
    probe = X[:20].copy()
    probe[:, 0] = 17.0  # never seen: treated as missing
    expected = X[:20].copy()
    expected[:, 0] = np.nan
    np.testing.assert_array_equal(model.apply(probe), model.apply(expected))


def test_multiway_respects_max_leaf_nodes():
    X, y = _mixed_data(n=500, n_categories=6, seed=13)
    for limit in (2, 5, 9):
        model = DecisionTreeClassifier(
            max_leaf_nodes=limit,
            categorical_features=[0, 2],
            categorical_split="multiway",
            device="cpu",
        ).fit(X, y)
        assert model.get_n_leaves() <= limit


def test_multiway_min_samples_leaf_holds_in_every_branch():
    X, y = _mixed_data(n=300, n_categories=6, seed=14)
    model = DecisionTreeClassifier(
        min_samples_leaf=20,
        categorical_features=[0, 2],
        categorical_split="multiway",
        device="cpu",
    ).fit(X, y)
    tree = model.tree_
    assert tree.n_node_samples[tree.children_left == -1].min() >= 20


def test_label_codes_one_rule_for_every_kind_of_label():
    labels = np.array([1, "b", False], dtype=object)
    # 1, 1.0 and numpy numbers are one label; numpy bools and strings are the Python ones;
    # True is not 1 and "1" is not 1 (-1: not among the labels).
    values = np.array(
        [1.0, np.int64(1), "b", np.str_("b"), np.False_, False, True, "1", 0], dtype=object
    )
    expected = [0, 0, 1, 1, 2, 2, -1, -1, -1]
    np.testing.assert_array_equal(label_codes(values, labels), expected)
    assert label_codes(values, labels).dtype == np.int64
    # Numeric, bool and string arrays take the np.unique route: same rule.
    np.testing.assert_array_equal(label_codes(np.array([1, 0, 1]), labels), [0, -1, 0])
    np.testing.assert_array_equal(label_codes(np.array([True, False]), labels), [-1, 2])
    np.testing.assert_array_equal(label_codes(np.array(["b", "1"]), labels), [1, -1])
    np.testing.assert_array_equal(label_codes(np.array([1.0, 2.0]), [2, 1]), [1, 0])
    # The confusion matrix refuses, naming the first row whose label is unknown.
    with pytest.raises(ValueError, match=r"true label True \(row 6\) is not among"):
        confusion_matrix(values, np.ones(values.size), [1, "b", False])
    pred = np.array([2, 2, "a"], object)
    matrix = confusion_matrix(np.array(["a", 2, 2], object), pred, [2, "a"])
    np.testing.assert_array_equal(matrix, [[1, 1], [1, 0]])


def test_the_number_1_and_the_string_1_are_two_categories_whatever_the_batch():
    """Issue 15: they were listed as two categories but coded as one (as text they are the
    same), so a row's prediction depended on the other rows of its batch."""
    X = np.array([[1], ["1"], [2], ["2"]] * 5, dtype=object)
    y = np.array([0, 1, 0, 1] * 5)
    model = DecisionTreeClassifier(categorical_features=[0]).fit(X, y)
    assert model.score(X, y) == 1.0
    alone = [model.predict(np.array([[v]], dtype=object))[0] for v in (1, "1", 1.0, "2")]
    assert alone == [0, 1, 0, 1]
    together = model.predict(np.array([["1"], [1], [1.0], ["2"]], dtype=object))
    np.testing.assert_array_equal(together, [1, 0, 0, 1])


def test_subset_search_is_bounded_whatever_max_category_subset():
    """Issue 15: subsets were listed in full (K**l of them): max_category_subset=20 on 40
    categories raised MemoryError, and 8,000 categories took 3.3 GiB. Subsets are now
    tried only at nodes whose categories give at most 65,536 of them."""
    from gpu_tree.growing.splitting import MAX_SUBSET_CANDIDATES, most_categories_for_subsets

    assert MAX_SUBSET_CANDIDATES == 65_536
    assert [most_categories_for_subsets(size) for size in (1, 2, 3, 20)] == [65_536, 361, 73, 16]
    rng = np.random.default_rng(0)
    X = rng.integers(0, 40, size=(2000, 1)).astype(float)
    y = X[:, 0].astype(int) % 3
    model = DecisionTreeClassifier(
        max_depth=3, categorical_features=[0], max_category_subset=20
    ).fit(X, y)
    assert model.score(X, y) == 1.0  # the prefixes of the P(c) orderings still separate


def test_small_nodes_keep_their_exhaustive_subset_search_next_to_large_ones():
    """Whether a node tries subsets depends on its own categories only, never on the
    other nodes scored with it."""
    from gpu_tree.growing.splitting import most_categories_for_subsets

    limit = most_categories_for_subsets(2)
    rng = np.random.default_rng(1)
    X = rng.integers(0, 5, size=(4000, 1)).astype(float)
    y = np.isin(X[:, 0], [1, 3]).astype(int) + 2 * (X[:, 0] == 4)
    params = {"max_depth": 1, "max_bins": 1000}
    alone = DecisionTreeClassifier(categorical_features=[0], **params).fit(X, y)
    # A second feature of more categories than the limit, scored in the same pass.
    wide = np.column_stack([X, rng.integers(0, limit + 50, size=(4000, 1))])
    assert np.unique(wide[:, 1]).size > limit
    together = DecisionTreeClassifier(categorical_features=[0, 1], **params).fit(wide, y)
    np.testing.assert_array_equal(together.tree_.feature[:1], [0])
    np.testing.assert_array_equal(alone.predict(X), together.predict(wide))


@pytest.mark.parametrize("dtype", [object, "string"])
def test_text_columns_of_a_dataframe_code_as_their_values_row_by_row(dtype):
    """DataFrame text columns are coded through pandas' factorize (each distinct string
    once): the categories and codes must be those of the same values as an object array,
    missing values (None, NaN, pd.NA) and unseen strings NaN."""
    pd = pytest.importorskip("pandas")

    train = ["b", "a", None, "c", "a", np.nan, "b", "Z"]
    test = ["a", "unseen", None, "Z", "c", np.nan, "b", "a"]
    if dtype == "string":
        train[2], test[2] = pd.NA, pd.NA
    mask = np.array([True, False])
    frame = pd.DataFrame({"text": pd.Series(train, dtype=dtype), "x": np.arange(8.0)})
    rows = np.array([train, np.arange(8.0)], dtype=object).T
    from_frame = CategoryMaps(mask).fit(frame)
    from_rows = CategoryMaps(mask).fit(rows)
    assert from_frame.categories[0].tolist() == ["Z", "a", "b", "c"]
    assert from_rows.categories[0].tolist() == ["Z", "a", "b", "c"]
    test_frame = pd.DataFrame({"text": pd.Series(test, dtype=dtype), "x": np.arange(8.0)})
    test_rows = np.array([test, np.arange(8.0)], dtype=object).T
    expected = [1, np.nan, np.nan, 0, 3, np.nan, 2, 1]
    np.testing.assert_array_equal(from_frame.encode(test_frame)[:, 0], expected)
    np.testing.assert_array_equal(from_rows.encode(test_rows)[:, 0], expected)


# -- categorical columns of numbers: coded in one compiled pass ------------------------------
_NUMBER_COLUMNS = {
    # name: (training values, probe values beyond them)
    "codes": (np.arange(20.0), [20.0, -1.0, 0.5, 19.5]),  # a table from value to code
    "years": (np.arange(1950.0, 2030.0, 3.0), [1951.0, 2029.0, 1949.0, 2031.0]),  # gaps
    "zip codes": (np.array([1001.0, 10001.0, 60601.0, 94105.0]), [1002.0, 99999.0]),  # sparse
    "fractions": (np.array([-2.5, -0.25, 0.0, 0.125, 7.75]), [-2.4, 0.126, -0.0]),
    "huge": (np.array([2.0**60, 2.0**60 + 256, -(2.0**62)]), [2.0**60 + 512, 2.0**53]),
    "negative codes": (np.arange(-6.0, 3.0), [-7.0, 3.0, -0.5]),
}


def _coded_by_a_dictionary(values, categories):
    position = {float(c): k for k, c in enumerate(categories)}
    return np.array([position.get(float(v), np.nan) for v in values])


@pytest.mark.parametrize("name", sorted(_NUMBER_COLUMNS))
@pytest.mark.parametrize("rows", [50, 200_000])  # the serial kernel, then the parallel one
def test_number_categories_code_as_a_dictionary_would(name, rows):
    seen, beyond = _NUMBER_COLUMNS[name]
    rng = np.random.default_rng(rows)
    train = rng.choice(seen, size=(rows, 2))
    train[: seen.size, 0] = seen  # every category seen, in both columns
    train[: seen.size, 1] = seen[::-1]
    train[seen.size, :] = np.nan  # and a missing value
    maps = CategoryMaps(np.array([False, True, True])).fit(np.column_stack([train[:, :1], train]))
    for j in (1, 2):
        np.testing.assert_array_equal(maps.categories[j], np.unique(seen))
    pool = np.concatenate([seen, beyond, [np.nan, np.inf, -np.inf]])
    probe = np.column_stack([rng.normal(size=rows), rng.choice(pool, size=(rows, 2))])
    before = probe.copy()
    coded = with_codes(probe, maps)
    np.testing.assert_array_equal(probe, before)  # the caller's array is not touched
    np.testing.assert_array_equal(coded[:, 0], probe[:, 0])
    for j in (1, 2):
        expected = _coded_by_a_dictionary(probe[:, j], np.unique(seen))
        np.testing.assert_array_equal(coded[:, j], expected)
    np.testing.assert_array_equal(maps.encode(probe), coded[:, 1:])
    frame = pd.DataFrame(probe, columns=["x", "a", "b"])
    np.testing.assert_array_equal(maps.encode(frame), coded[:, 1:])


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint16, np.float32, bool])
def test_number_categories_of_any_numeric_dtype_and_memory_order(dtype):
    rng = np.random.default_rng(3)
    values = rng.integers(0, 2 if dtype is bool else 9, size=(300, 3)).astype(dtype)
    maps = CategoryMaps(np.array([True, False, True])).fit(values)
    for order in "CF":
        probe = np.asarray(values, order=order)
        coded = with_codes(probe, maps)
        for j in (0, 2):
            expected = _coded_by_a_dictionary(probe[:, j], maps.categories[j])
            np.testing.assert_array_equal(coded[:, j], expected)
        np.testing.assert_array_equal(coded[:, 1], probe[:, 1].astype(np.float64))


def test_an_infinite_number_category_is_refused_naming_the_feature():
    X = np.array([[0.0, 1.0], [1.0, np.inf], [2.0, 2.0]])
    with pytest.raises(ValueError, match=r"feature 1 holds the category inf"):
        CategoryMaps(np.array([False, True])).fit(X)


# -- a GPU X: coded on the device ---------------------------------------------------------
# Under the CUDA simulator, the strict CuPy stand-in (tests/_strict_cupy.py) plays the GPU:
# every copy between it and the host is recorded, so a test sees which data crossed.
_NEEDS_SIMULATOR = pytest.mark.skipif(
    not config.ENABLE_CUDASIM,
    reason="the strict CuPy stand-in runs under the CUDA simulator",
)


@pytest.fixture
def copies(monkeypatch):
    """(xp, copies): the stand-in installed, and the list of its copies, each
    ("device_to_host" or "host_to_device", number of values)."""
    from _strict_cupy import StrictArray, install

    xp = install(monkeypatch)
    recorded = []
    get = StrictArray.get

    def recorded_get(self, *args, **kwargs):
        recorded.append(("device_to_host", self.size))
        return get(self, *args, **kwargs)

    monkeypatch.setattr(StrictArray, "get", recorded_get)
    for name in ("array", "asarray", "asanyarray"):
        create = getattr(xp, name)

        def recorded_create(source, *args, _create=create, **kwargs):
            if not isinstance(source, StrictArray):
                recorded.append(("host_to_device", np.size(source)))
            return _create(source, *args, **kwargs)

        monkeypatch.setattr(xp, name, recorded_create, raising=False)
    return xp, recorded


def _number_and_object_maps():
    """Maps of five categorical features (and two numeric ones): negative whole numbers
    (a table from value to code on the host), fractions, sparse huge numbers (searched),
    a pandas category column of numbers (its own order: object categories), an object
    column mixing numbers, text and a bool, and a column with no category at all."""
    rng = np.random.default_rng(5)
    n = 200
    train = pd.DataFrame(
        {
            "negative": rng.choice(np.arange(-6.0, 3.0), n),
            "x": rng.normal(size=n),
            "fractions": rng.choice([-2.5, -0.25, 0.0, 0.125, 7.75], n),
            "huge": rng.choice([2.0**60, 2.0**60 + 256, -(2.0**62), 1001.0], n),
            "pandas": pd.Categorical(rng.choice([3, 1, 2], n), categories=[3, 1, 2, 7]),
            "mixed": np.array([3, "t", 2.5, True, -1], dtype=object)[rng.integers(0, 5, n)],
            "empty": np.full(n, np.nan),
            "y": rng.normal(size=n),
        }
    )
    train.loc[::7, ["negative", "fractions"]] = np.nan
    mask = np.array([True, False, True, True, True, True, True, False])
    return CategoryMaps(mask).fit(train), mask


def _number_probe(n_rows, seed, mask):
    """Rows of numbers for those features: each column's categories, values beyond
    them (unseen, between, infinite, -0.0) and NaN."""
    pool = np.concatenate(
        [
            np.arange(-7.0, 4.0),
            [-2.5, -2.4, -0.25, -0.0, 0.125, 0.126, 7.75, 2.5, 1001.0, 1002.0],
            [2.0**60, 2.0**60 + 256, 2.0**60 + 512, -(2.0**62), 2.0**53, 7.0],
            [np.nan, np.inf, -np.inf],
        ]
    )
    rng = np.random.default_rng(seed)
    return rng.choice(pool, size=(n_rows, mask.size))


@_NEEDS_SIMULATOR
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
@pytest.mark.parametrize("order", ["C", "F"])
def test_a_gpu_x_is_coded_on_the_device_as_on_the_host(copies, dtype, order):
    """with_codes of a GPU X: the host's codes, bit for bit (numbers, NaN for missing
    and unseen values), in a new float64 array of X's shape on the device; X is not
    touched and its rows never reach the host: only the categories cross, to it."""
    xp, recorded = copies
    maps, mask = _number_and_object_maps()
    probe = _number_probe(500, 1, mask)
    if np.dtype(dtype).kind == "i":
        probe = np.nan_to_num(probe, nan=-3, posinf=9, neginf=-9).clip(-(2**62), 2**62)
    probe = np.asarray(probe.astype(dtype), order=order)
    expected = with_codes(probe, maps)
    X = xp.asarray(probe)
    before = X.get()
    recorded.clear()
    coded = with_codes(X, maps)
    n_categories = sum(len(c) for c in maps.categories.values())
    assert recorded and all(
        direction == "host_to_device" and size <= 2 * n_categories for direction, size in recorded
    ), recorded
    assert isinstance(coded, type(X)) and coded.dtype == np.float64
    assert coded.shape == probe.shape
    np.testing.assert_array_equal(coded.get(), expected)
    np.testing.assert_array_equal(X.get(), before)
    assert np.isnan(expected[:, mask]).any() and (expected[:, mask] == 0).any()


@_NEEDS_SIMULATOR
def test_a_number_is_coded_as_its_object_category(copies):
    """Object categories on the device: 1 and 1.0 are one category (the last of them
    its code, as label_codes finds it), and a number is never the category True or
    "1"."""
    xp, _ = copies
    maps = CategoryMaps(np.array([True]))
    maps.categories[0] = np.array([True, "1", 2, 1.0, -0.0, 1], dtype=object)
    probe = np.array([[1.0], [2.0], [0.0], [-0.0], [np.nan], [3.0]])
    expected = np.array([[5.0], [2.0], [4.0], [4.0], [np.nan], [np.nan]])
    np.testing.assert_array_equal(with_codes(probe, maps), expected)
    np.testing.assert_array_equal(with_codes(xp.asarray(probe), maps).get(), expected)


def _categorical_tree_data(n=400, seed=3):
    """Three categorical features (negative whole numbers, fractions, codes 0..5, with
    missing values) beside a numeric one, and a probe holding unseen categories too."""
    rng = np.random.default_rng(seed)
    negative = rng.choice([-5.0, -3.0, -1.0, 0.0, 4.0], n)
    fractions = rng.choice([-2.75, 0.5, 1.25, 10.0], n)
    codes = rng.integers(0, 6, n).astype(float)
    numeric = rng.normal(size=n).round(2)
    X = np.column_stack([negative, numeric, fractions, codes])
    y = (np.isin(negative, [-3.0, 4.0]) ^ np.isin(fractions, [0.5]) ^ (codes > 3)).astype(int)
    y = y + (numeric > 1.0)
    X[rng.random(n) < 0.08, 0] = np.nan
    X[rng.random(n) < 0.08, 2] = np.nan
    probe = X.copy()
    probe[::5, 0] = rng.choice([-4.0, 7.0, 0.5, np.nan], probe[::5].shape[0])
    probe[1::5, 2] = rng.choice([0.0, 1.0, 12.5, -np.inf], probe[1::5].shape[0])
    probe[2::5, 3] = rng.choice([6.0, -1.0, 2.5], probe[2::5].shape[0])
    return X, y, probe


def _device_predictions(model, X_device, recorded, method):
    """``model.method(X_device)``, checked to read no row of X on the host: nothing
    crosses to the host while it predicts, and nothing of a column's size (its codes)
    to the device."""
    recorded.clear()
    out = getattr(model, method)(X_device)
    n_rows = X_device.shape[0]
    assert all(direction == "host_to_device" and size < n_rows for direction, size in recorded), (
        recorded
    )
    return out.get() if hasattr(out, "get") else out


@_NEEDS_SIMULATOR
@pytest.mark.parametrize(
    "make",
    ["DecisionTreeClassifier", "DecisionTreeRegressor", "RandomForestClassifier"],
)
def test_a_categorical_model_predicts_a_gpu_x_without_copying_its_rows(copies, make):
    import gpu_tree

    xp, recorded = copies
    X, y, probe = _categorical_tree_data()
    params = dict(max_depth=5, categorical_features=[0, 2, 3])
    if make.startswith("RandomForest"):
        params.update(n_estimators=3, max_features=2, random_state=0)
    target = y if make.endswith("Classifier") else y + 0.5 * X[:, 1]
    cpu = getattr(gpu_tree, make)(device="cpu", **params).fit(X, target)
    cuda = getattr(gpu_tree, make)(device="cuda", **params).fit(X, target)
    trees = cpu.estimators_ if hasattr(cpu, "estimators_") else [cpu]
    assert any((t.tree_.split_kind != NUMERIC).any() for t in trees), "needs categorical splits"
    probe = np.tile(probe, (5, 1))  # more rows than the trees' arrays hold values
    X_device = xp.asarray(probe)
    predicted = _device_predictions(cuda, X_device, recorded, "predict")
    np.testing.assert_array_equal(predicted, cpu.predict(probe))
    if make.endswith("Classifier"):
        proba = _device_predictions(cuda, X_device, recorded, "predict_proba")
        np.testing.assert_array_equal(proba, cpu.predict_proba(probe))
