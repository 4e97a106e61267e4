"""export_text: scikit-learn's layout, and every node kind (numeric, subset, multiway)."""

import re

import numpy as np
import pytest

from gpu_tree import DecisionTreeClassifier, DecisionTreeRegressor, export_text

pd = pytest.importorskip("pandas")
sklearn_tree = pytest.importorskip("sklearn.tree")
datasets = pytest.importorskip("sklearn.datasets")


def test_numeric_tree_prints_as_scikit_learn_prints_it():
    # Exact mode builds scikit-learn's tree here (no ties in the criterion on this data).
    X, y = datasets.load_diabetes(return_X_y=True)
    ours = DecisionTreeRegressor(max_depth=3, splitter="exact", device="cpu").fit(X, y)
    theirs = sklearn_tree.DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
    names = [f"x{j}" for j in range(X.shape[1])]
    assert export_text(ours, show_missing=False) == sklearn_tree.export_text(
        theirs, feature_names=names
    )


@pytest.mark.parametrize("max_depth", [0, 1, 2, 3])
def test_truncation_is_scikit_learns(max_depth):
    # A node at max_depth still shows its split; deeper ones read "truncated branch of
    # depth N", N the levels below, as scikit-learn prints them.
    X, y = datasets.load_diabetes(return_X_y=True)
    # Depth 3: deeper, the two trees part at tied splits.
    ours = DecisionTreeRegressor(max_depth=3, splitter="exact", device="cpu").fit(X, y)
    theirs = sklearn_tree.DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
    names = [f"x{j}" for j in range(X.shape[1])]
    assert export_text(ours, max_depth=max_depth, show_missing=False) == (
        sklearn_tree.export_text(theirs, feature_names=names, max_depth=max_depth)
    )


def test_multiway_tree_prints_one_line_per_branch():
    days = [
        ("sunny", "high", "no"),
        ("sunny", "normal", "yes"),
        ("overcast", "high", "yes"),
        ("rain", "high", "yes"),
        ("rain", "normal", "no"),
        ("overcast", "normal", "yes"),
    ]
    frame = pd.DataFrame(days, columns=["outlook", "humidity", "play"])
    model = DecisionTreeClassifier(
        criterion="entropy",
        categorical_features=["outlook", "humidity"],
        categorical_split="multiway",
        device="cpu",
    ).fit(frame[["outlook", "humidity"]], frame["play"])
    # Other categories (and missing values) take the largest branch (ties: the first);
    # training saw no missing value, so the default branch does not speak of them.
    assert export_text(model) == (
        "|--- outlook = overcast (or another category)\n"
        "|   |--- class: yes\n"
        "|--- outlook = rain\n"
        "|   |--- humidity = high (or another category)\n"
        "|   |   |--- class: yes\n"
        "|   |--- humidity = normal\n"
        "|   |   |--- class: no\n"
        "|--- outlook = sunny\n"
        "|   |--- humidity = high (or another category)\n"
        "|   |   |--- class: no\n"
        "|   |--- humidity = normal\n"
        "|   |   |--- class: yes\n"
    )


def test_subset_split_names_its_categories_and_the_missing_side():
    rng = np.random.default_rng(0)
    colour = rng.choice(["blue", "green", "red", "teal"], size=200).astype(object)
    colour[::9] = None
    y = np.isin(colour, ["blue", "teal"]).astype(int)
    frame = pd.DataFrame({"colour": colour, "size": rng.normal(size=200)})
    model = DecisionTreeClassifier(max_depth=1, categorical_features=["colour"], device="cpu").fit(
        frame, y
    )
    lines = export_text(model, class_names=["other", "blue or teal"]).splitlines()
    conditions = {lines[0][5:], lines[2][5:]}
    sets = {
        "colour in {blue, teal}",
        "colour not in {blue, teal}",
        "colour in {green, red}",
        "colour not in {green, red}",
    }
    assert len({c.removesuffix(" or missing") for c in conditions} & sets) == 2
    assert sum(c.endswith(" or missing") for c in conditions) == 1
    assert {lines[1], lines[3]} == {"|   |--- class: other", "|   |--- class: blue or teal"}


def test_truncation_and_bad_names():
    X, y = datasets.load_iris(return_X_y=True)
    model = DecisionTreeClassifier(max_depth=4, device="cpu").fit(X, y)
    text = export_text(model, max_depth=1, feature_names=["a", "b", "c", "d"])
    assert "truncated branch" in text and "x0" not in text
    with pytest.raises(ValueError, match="feature_names has 2 names, but the tree has 4"):
        export_text(model, feature_names=["a", "b"])
    with pytest.raises(ValueError, match="class_names has 1 names"):
        export_text(model, class_names=["a"])
    with pytest.raises(ValueError, match="fitted"):
        export_text(DecisionTreeClassifier())


def test_a_subset_split_lists_only_the_categories_that_reach_it():
    # Six colours in three classes: the root's subset split sends some colours away, and
    # a split below on the same feature may store those absent colours on either side
    # (absent categories follow the node's missing rule). Printed, each split names only
    # colours that reach it, in text and in DOT.
    from gpu_tree import export_graphviz

    colours = np.array(list("abcdef"), dtype=object)
    rng = np.random.default_rng(1)
    colour = rng.choice(colours, size=600)
    y = np.searchsorted(colours, colour) // 2  # a, b -> 0; c, d -> 1; e, f -> 2
    frame = pd.DataFrame({"colour": colour})
    model = DecisionTreeClassifier(categorical_features=["colour"], device="cpu").fit(frame, y)
    tree = model.tree_
    paths = model.decision_path(pd.DataFrame({"colour": colours})).toarray().astype(bool)
    reaching = [set(colours[paths[:, node]]) for node in range(tree.node_count)]
    internal = np.flatnonzero(tree.children_left >= 0)
    assert internal.size >= 2  # the feature is split again below the root

    def listed(condition):
        return set(condition[condition.index("{") + 1 : condition.index("}")].split(", "))

    # export_text prints each internal node's branches in order, each followed by its
    # subtree: the parents of the condition lines, in print order.
    parents = []

    def visit(node):
        if tree.children_left[node] < 0:
            return
        for child in (tree.children_left[node], tree.children_right[node]):
            parents.append(node)
            visit(child)

    visit(0)
    conditions = [
        line.split("--- ")[1]
        for line in export_text(model).splitlines()
        if line.split("--- ")[1].startswith("colour ")
    ]
    assert len(conditions) == len(parents) == 2 * internal.size
    for parent, condition in zip(parents, conditions, strict=True):
        assert listed(condition) <= reaching[parent], (parent, condition, reaching[parent])
    dot = export_graphviz(model, node_ids=True)
    for node in internal:
        box = dot[dot.index(f'{node} [label="node #{node}') :].split("\\n")[1]
        assert box.startswith("colour in {") and listed(box) <= reaching[node], (node, box)


# -- "or missing" only on the features that had missing values in training ---------------------
def _split_lines(text):
    """The condition lines of export_text, without their indents."""
    return [line.split("--- ", 1)[1] for line in text.splitlines() if "class:" not in line]


def test_a_tree_trained_without_missing_values_never_says_or_missing():
    from gpu_tree import export_graphviz

    X, y = datasets.load_iris(return_X_y=True)
    for splitter in ("hist", "exact"):
        model = DecisionTreeClassifier(max_depth=3, splitter=splitter, device="cpu").fit(X, y)
        assert model.missing_in_training_.tolist() == [False] * 4
        assert "missing" not in export_text(model)
        assert "missing" not in export_graphviz(model)


def test_or_missing_marks_only_the_splits_of_features_that_had_missing_values():
    from gpu_tree import export_graphviz

    rng = np.random.default_rng(4)
    n = 600
    colour = rng.choice(["red", "green", "blue"], size=n).astype(object)
    colour[::11] = None  # the categorical feature has missing values
    size = rng.normal(size=n)
    size[::7] = np.nan  # and so does "size"; "age" has none
    age = rng.normal(size=n)
    y = ((colour == "red") ^ (np.nan_to_num(size, nan=1.0) > 0.2) ^ (age > 0.5)).astype(int)
    frame = pd.DataFrame({"colour": colour, "age": age, "size": size})
    for splitter in ("hist", "exact"):
        model = DecisionTreeClassifier(
            max_depth=4, categorical_features=["colour"], splitter=splitter, device="cpu"
        ).fit(frame, y)
        assert model.missing_in_training_.tolist() == [True, False, True]
        tree = model.tree_
        internal = tree.children_left >= 0
        assert set(tree.feature[internal]) == {0, 1, 2}  # every feature is split on
        lines = _split_lines(export_text(model))
        marked = [line for line in lines if line.endswith(" or missing")]
        assert not [line for line in lines if line.startswith("age ") and "missing" in line]
        # Each split on colour or size marks exactly one side.
        for name in ("colour", "size"):
            splits = np.count_nonzero(tree.feature[internal] == list(frame).index(name))
            assert len([line for line in marked if line.startswith(name + " ")]) == splits
        edges = re.findall(r'label="(True|False)\\nor missing"', export_graphviz(model))
        assert len(edges) == len(marked)


def test_a_multiway_default_branch_names_missing_values_only_where_there_were_some():
    days = [
        ("sunny", "high", "no"),
        ("sunny", "normal", "yes"),
        ("overcast", None, "yes"),
        ("rain", "high", "yes"),
        ("rain", "normal", "no"),
        ("overcast", "normal", "yes"),
        ("sunny", "high", "no"),
    ]
    frame = pd.DataFrame(days, columns=["outlook", "humidity", "play"])
    model = DecisionTreeClassifier(
        criterion="entropy",
        categorical_features=["outlook", "humidity"],
        categorical_split="multiway",
        device="cpu",
    ).fit(frame[["outlook", "humidity"]], frame["play"])
    assert model.missing_in_training_.tolist() == [False, True]
    lines = _split_lines(export_text(model))
    defaults = [line for line in lines if line.endswith("another category)")]
    assert sorted(line.split(" ", 1)[0] for line in defaults) == ["humidity", "humidity", "outlook"]
    for line in defaults:
        missing = line.startswith("humidity")
        assert line.endswith("(or missing, or another category)") == missing


def test_a_model_that_does_not_know_marks_missing_values_on_every_split():
    # A model loaded from a file written before missing_in_training was recorded.
    X, y = datasets.load_iris(return_X_y=True)
    model = DecisionTreeClassifier(max_depth=2, device="cpu").fit(X, y)
    del model.missing_in_training_
    lines = _split_lines(export_text(model))
    assert sum(line.endswith(" or missing") for line in lines) == len(lines) // 2 > 0


@pytest.mark.parametrize("export", ["export_text", "export_graphviz", "plot_tree", "export_png"])
@pytest.mark.parametrize(
    "make",
    [DecisionTreeClassifier, DecisionTreeRegressor, "ObliqueDecisionTreeClassifier"],
    ids=["classifier", "regressor", "oblique"],
)
def test_unfitted_estimators_raise_not_fitted_error_as_scikit_learn(export, make, tmp_path):
    """Every exporter refuses an unfitted tree with scikit-learn's NotFittedError (a
    ValueError too), naming the exporter and the estimator."""
    from sklearn.exceptions import NotFittedError

    import gpu_tree

    estimator = getattr(gpu_tree, make)() if isinstance(make, str) else make()
    arguments = (tmp_path / "tree.png",) if export == "export_png" else ()
    with pytest.raises(NotFittedError, match=f"{export}: This {type(estimator).__name__} .*"):
        getattr(gpu_tree, export)(estimator, *arguments)
    assert not (tmp_path / "tree.png").exists()
