"""export_text: scikit-learn's layout, and every node kind (numeric, subset, multiway)."""

import re

import numpy as np
import pytest

from gpu_tree import DecisionTreeClassifier, DecisionTreeRegressor, export_text

pd = pytest.importorskip("pandas")
sklearn_tree = pytest.importorskip("sklearn.tree")
datasets = pytest.importorskip("sklearn.datasets")


def _same_tree(ours, theirs):
    """Assert that two fitted trees (ours numbered breadth first, scikit-learn's depth
    first) have the same splits: features, thresholds and shape, node by node."""
    a, b = ours.tree_, theirs.tree_
    assert a.node_count == b.node_count
    stack = [(0, 0)]
    while stack:
        i, j = stack.pop()
        assert (a.children_left[i] < 0) == (b.children_left[j] < 0), (i, j)
        if a.children_left[i] >= 0:
            assert (a.feature[i], a.threshold[i]) == (b.feature[j], b.threshold[j]), (i, j)
            stack += [(a.children_left[i], b.children_left[j])]
            stack += [(a.children_right[i], b.children_right[j])]


def _pair(kind, y=None, **params):
    """Our exact-mode tree and scikit-learn's, fitted on the same data, with the same
    splits (checked). The data are float32 numbers, as scikit-learn fits them: its
    thresholds are midpoints of float32 values, ours of the values given (a float64
    midpoint can round the other way at 2 decimals: 2.115 prints 2.12 against 2.11).
    Depth 3: deeper, the trees part at tied splits."""
    if kind == "classifier":
        X, target = datasets.load_wine(return_X_y=True)
        make = (DecisionTreeClassifier, sklearn_tree.DecisionTreeClassifier)
    elif kind == "multiclass":  # leaves at several depths
        X, target = datasets.make_classification(
            n_samples=300, n_features=5, n_informative=3, n_classes=3, random_state=0
        )
        make = (DecisionTreeClassifier, sklearn_tree.DecisionTreeClassifier)
    else:
        X, target = datasets.load_diabetes(return_X_y=True)
        make = (DecisionTreeRegressor, sklearn_tree.DecisionTreeRegressor)
    X = X.astype(np.float32)
    y = target if y is None else y(target)
    params = {"max_depth": 3, **params}
    ours = make[0](splitter="exact", device="cpu", **params).fit(X, y)
    theirs = make[1](random_state=0, **params).fit(X, y)
    _same_tree(ours, theirs)
    return ours, theirs


_TEXT_OPTIONS = [
    {},
    {"show_weights": True},
    {"max_depth": 0},
    {"max_depth": 1},
    {"max_depth": 2},
    {"decimals": 0},
    {"decimals": 4, "spacing": 1},
    {"spacing": 5, "show_weights": True, "decimals": 1},
    {"feature_names": "named"},
    {"feature_names": "array", "class_names": "named", "show_weights": True},
]


@pytest.mark.parametrize("kind", ["classifier", "multiclass", "regressor"])
@pytest.mark.parametrize("options", _TEXT_OPTIONS, ids=lambda o: "-".join(o) or "defaults")
def test_export_text_prints_scikit_learns_text_character_for_character(kind, options):
    # scikit-learn's defaults: unnamed features read "feature_0", "feature_1", ...; only
    # leaves have a class (value) line; the same rounding, spacing and truncation.
    ours, theirs = _pair(kind)
    options = dict(options)
    n_features = ours.n_features_in_
    if options.get("feature_names") == "named":
        options["feature_names"] = [f"f{j} (cm)" for j in range(n_features)]
    elif options.get("feature_names") == "array":
        options["feature_names"] = np.array([f"col{j}" for j in range(n_features)])
    if options.get("class_names") == "named":
        if kind == "regressor":
            del options["class_names"]
        else:
            options["class_names"] = [f"kind {c}" for c in theirs.classes_]
    text = export_text(ours, **options)
    assert text == sklearn_tree.export_text(theirs, **options)
    if "feature_names" not in options:
        assert re.match(r"\|-+ feature_\d+ <= ", text) and " x" not in text


@pytest.mark.parametrize(
    "labels",
    [
        lambda y: np.array(["red", "green", "blue"])[y],
        lambda y: y.astype(float) + 1,
        lambda y: y + 10,
    ],
    ids=["strings", "floats", "ints"],
)
def test_export_text_prints_class_labels_as_scikit_learn_does(labels):
    ours, theirs = _pair("classifier", y=labels, max_depth=2)
    assert list(ours.classes_) == list(theirs.classes_)
    for show_weights in (False, True):
        assert export_text(ours, show_weights=show_weights) == sklearn_tree.export_text(
            theirs, show_weights=show_weights
        )


def test_export_text_prints_weighted_leaves_as_scikit_learn_does():
    # Fractional sample weights: "weights: [...]" are the leaves' weighted class totals.
    X, y = datasets.load_wine(return_X_y=True)
    X = X.astype(np.float32)
    weight = np.random.default_rng(0).uniform(0.5, 2.0, size=y.size)
    ours = DecisionTreeClassifier(max_depth=2, splitter="exact", device="cpu")
    ours.fit(X, y, sample_weight=weight)
    theirs = sklearn_tree.DecisionTreeClassifier(max_depth=2, random_state=0)
    theirs.fit(X, y, sample_weight=weight)
    _same_tree(ours, theirs)
    assert export_text(ours, show_weights=True, decimals=3) == sklearn_tree.export_text(
        theirs, show_weights=True, decimals=3
    )


def test_old_names_and_a_data_frame_s_columns():
    # feature_names gives any names: [x0, x1, ...] prints what gpu_tree printed before it
    # took scikit-learn's "feature_j" (and what ``gputree export`` prints).
    ours, theirs = _pair("regressor")
    old = [f"x{j}" for j in range(ours.n_features_in_)]
    text = export_text(ours, feature_names=old)
    assert text.startswith("|--- x8 <= -0.00\n") and "feature_" not in text
    assert text == sklearn_tree.export_text(theirs, feature_names=old)
    # Fitted on a DataFrame, the tree names its features by their columns (where
    # scikit-learn prints "feature_j" unless told the names).
    X, y = datasets.load_diabetes(return_X_y=True, as_frame=True)
    X = X.astype(np.float32)
    framed = DecisionTreeRegressor(max_depth=3, splitter="exact", device="cpu").fit(X, y)
    columns = list(X.columns)
    assert export_text(framed) == sklearn_tree.export_text(theirs, feature_names=columns)
    assert export_text(framed).startswith("|--- s5 <= -0.00\n")


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


def test_the_command_line_keeps_its_names_x0_x1(tmp_path):
    # ``gputree export`` names unnamed features x0, x1, ... in text, DOT and PNG, and marks
    # the missing side, as it did before export_text took scikit-learn's defaults.
    from _cli import run_cli

    from gpu_tree import export_graphviz

    X, y = datasets.load_iris(return_X_y=True)
    model = DecisionTreeClassifier(max_depth=2, device="cpu").fit(X, y)
    path = tmp_path / "tree.json"
    model.save(path)
    old = [f"x{j}" for j in range(4)]
    text = run_cli("export", path)
    assert text.exit_code == 0, text.output
    assert text.stdout == export_text(model, feature_names=old, show_missing=True)
    assert text.stdout.startswith("|--- x2 <= 2.45\n")
    dot = run_cli("export", path, "--format", "dot")
    assert dot.exit_code == 0, dot.output
    assert dot.stdout == export_graphviz(
        model, feature_names=old, class_names=["0", "1", "2"], filled=True, precision=2
    )
    assert 'label="x2 <= 2.45\\n' in dot.stdout
