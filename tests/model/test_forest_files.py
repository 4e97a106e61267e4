"""Random forests in model files: one versioned JSON file per forest (the shared fitted
state once, each tree's arrays in a list), exact round trips, a clear error for every
damaged file, and the exports of one of a forest's trees (``tree_index``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import gpu_tree
from gpu_tree import (
    DecisionTreeClassifier,
    RandomForestClassifier,
    RandomForestRegressor,
    assert_tree_equal,
)
from gpu_tree.model.file_format.writing import model_document, unpacked_document
from gpu_tree.utils.compat import NotFittedError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _quiet_oob():
    # Forests of a few trees leave some rows in every tree's bootstrap sample.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Some inputs do not have OOB scores")
        yield


def _data(n=240, seed=0):
    """A category code (0..4), a feature with missing values, two plain features."""
    rng = np.random.default_rng(seed)
    X = np.c_[rng.integers(0, 5, n), rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)]
    X[rng.random(n) < 0.15, 1] = np.nan
    y = ((X[:, 0] % 2 == 0) ^ (np.nan_to_num(X[:, 1]) > 0.3)).astype(int)
    return X, y


def _forest(kind="classifier", n_estimators=4, **params):
    X, y = _data()
    params = {"max_depth": 4, "device": "cpu", "random_state": 0, **params}
    if kind == "regressor":
        return RandomForestRegressor(n_estimators, **params).fit(X, y * 2.5 + X[:, 2]), X
    labels = np.array(["no", "yes"])[y]
    return RandomForestClassifier(n_estimators, **params).fit(X, labels), X


def _fitted_names(estimator):
    return sorted(name for name in vars(estimator) if name.endswith("_") or name == "_seed")


def _assert_same_forest(loaded, forest, X):
    assert type(loaded) is type(forest)
    assert loaded.get_params() == {**forest.get_params(), "verbose": 0}
    assert _fitted_names(loaded) == _fitted_names(forest)
    assert loaded._seed == forest._seed and loaded.n_batches_ == forest.n_batches_
    assert len(loaded.estimators_) == len(forest.estimators_)
    for ours, theirs in zip(loaded.estimators_, forest.estimators_, strict=True):
        assert type(ours) is type(theirs)
        assert ours.get_params() == theirs.get_params()
        assert_tree_equal(theirs.tree_, ours.tree_, impurity_rtol=0, value_rtol=0)
        np.testing.assert_array_equal(ours.tree_.threshold, theirs.tree_.threshold)
        np.testing.assert_array_equal(ours.tree_.value, theirs.tree_.value)
        # The fitted state of a tree of a fit, less the fit's statistics.
        assert _fitted_names(ours) == _fitted_names(theirs)
        assert ours.max_features_ == theirs.max_features_
    if hasattr(forest, "classes_"):
        np.testing.assert_array_equal(loaded.classes_, forest.classes_)
        assert loaded.classes_.dtype == forest.classes_.dtype
        np.testing.assert_array_equal(loaded.predict_proba(X), forest.predict_proba(X))
    np.testing.assert_array_equal(loaded.predict(X), forest.predict(X))  # bit for bit
    np.testing.assert_array_equal(loaded.apply(X), forest.apply(X))
    np.testing.assert_array_equal(loaded.feature_importances_, forest.feature_importances_)


@pytest.mark.parametrize(
    "kind, params",
    [
        ("classifier", {}),
        ("classifier", {"bootstrap": False, "max_features": 2, "criterion": "entropy"}),
        ("classifier", {"categorical_features": [0], "class_weight": {"no": 2.0, "yes": 1.0}}),
        ("classifier", {"categorical_features": [0], "categorical_split": "multiway"}),
        ("classifier", {"class_weight": "balanced_subsample", "max_samples": 0.5}),
        ("classifier", {"splitter": "exact", "ccp_alpha": 0.01}),
        ("regressor", {"max_bins": 16, "max_features": "log2"}),
        ("regressor", {"categorical_features": [0], "max_leaf_nodes": 6}),
    ],
)
def test_round_trip_is_exact(tmp_path, kind, params):
    forest, X = _forest(kind, **params)
    path = tmp_path / "forest.json"
    forest.save(path)
    loaded = gpu_tree.load(path)
    _assert_same_forest(loaded, forest, X)
    # The trees share one copy of the fitted state, as in a fit.
    first = loaded.estimators_[0]
    for name in ("_category_maps", "_bin_mapper", "categories_", "classes_"):
        assert all(getattr(e, name, None) is getattr(first, name, None) for e in loaded.estimators_)
    # Saved again, the file is the same, byte for byte.
    loaded.save(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == path.read_bytes()


def test_an_impurity_rounded_below_zero_loads(tmp_path):
    # Fractional weights (class_weight="balanced_subsample" above, "balanced" in a single
    # tree) can leave a pure node's impurity a few ulps below 0, as fit computed it: the
    # model loads, bit for bit; a real negative impurity is still refused.
    X, y = _data()
    tree = DecisionTreeClassifier(max_depth=3, device="cpu").fit(X, y)
    leaf = int(np.flatnonzero(tree.tree_.children_left == -1)[0])
    tree.tree_.impurity[leaf] = -1.3395419324350096e-16
    tree.save(tmp_path / "t.json")
    assert gpu_tree.load(tmp_path / "t.json").tree_.impurity[leaf] == -1.3395419324350096e-16
    tree.tree_.impurity[leaf] = -1e-6
    tree.save(tmp_path / "t.json")
    with pytest.raises(ValueError, match=f"node {leaf} has impurity -1e-06, expected a finite"):
        gpu_tree.load(tmp_path / "t.json")


@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_extra_trees_round_trip_and_keep_growing_as_extra_trees(tmp_path, kind):
    X, y = _data()
    if kind == "classifier":
        forest = gpu_tree.ExtraTreesClassifier(3, max_depth=4, device="cpu", random_state=2)
    else:
        forest = gpu_tree.ExtraTreesRegressor(3, max_depth=4, device="cpu", random_state=2)
        y = y * 2.5 + X[:, 2]
    forest.fit(X, y)
    forest.save(tmp_path / "f.json")
    assert json.loads((tmp_path / "f.json").read_text())["estimator"] == type(forest).__name__
    loaded = gpu_tree.load(tmp_path / "f.json")
    _assert_same_forest(loaded, forest, X)
    for model in (forest, loaded):  # the trees to come draw their thresholds too
        model.set_params(warm_start=True, n_estimators=5).fit(X, y)
    _assert_same_forest(loaded, forest, X)


def test_one_file_with_the_shared_state_once_and_the_trees_in_a_list(tmp_path):
    forest, _ = _forest(categorical_features=[0], n_estimators=3)
    forest.save(tmp_path / "f.json")
    document = json.loads((tmp_path / "f.json").read_text())
    assert document["format"] == "gpu_tree.model" and document["format_version"] == 2
    assert document["estimator"] == "RandomForestClassifier"
    assert document["params"]["n_estimators"] == 3 and "verbose" not in document["params"]
    assert "tree" not in document
    assert len(document["trees"]) == 3
    assert [t["node_count"] for t in document["trees"]] == [
        e.tree_.node_count for e in forest.estimators_
    ]
    assert len(document["binning"]["edges"]) == 4  # once, not per tree
    assert document["categorical"]["is_categorical"] == [True, False, False, False]
    assert document["missing_in_training"] == [False, True, False, False]
    assert document["classes"] == {"dtype": "<U3", "values": ["no", "yes"]}
    assert document["forest"] == {
        "seed": forest._seed,
        "n_batches": forest.n_batches_,
        "max_features": 2,  # sqrt(4)
        "oob": None,
    }


def test_a_single_tree_file_keeps_its_layout(tmp_path):
    X, y = _data()
    tree = DecisionTreeClassifier(max_depth=3, device="cpu").fit(X, y)
    assert list(model_document(tree)) == [
        "format",
        "format_version",
        "library_version",
        "estimator",
        "params",
        "device",
        "n_features_in",
        "feature_names_in",
        "classes",
        "categorical",
        "binning",
        "missing_in_training",
        "tree",
    ]


def test_string_categories_feature_names_and_unseen_values_survive(tmp_path):
    pd = pytest.importorskip("pandas")
    X, y = _data(seed=3)
    frame = pd.DataFrame(
        {
            "colour": np.array(["blue", "green", "plum", "red", "rose"], dtype=object)[
                X[:, 0].astype(int)
            ],
            "size": X[:, 1],
            "weight": X[:, 2],
        }
    )
    forest = RandomForestClassifier(
        3, max_depth=4, categorical_features=["colour"], device="cpu", random_state=1
    ).fit(frame, y)
    forest.save(tmp_path / "f.json")
    loaded = gpu_tree.load(tmp_path / "f.json")
    assert list(loaded.feature_names_in_) == ["colour", "size", "weight"]
    assert all(e.feature_names_in_ is loaded.feature_names_in_ for e in loaded.estimators_)
    probe = frame.iloc[:40].copy()
    probe.loc[:5, "colour"] = "ultraviolet"  # unseen: the missing rule, no error
    np.testing.assert_array_equal(loaded.predict_proba(probe), forest.predict_proba(probe))
    with pytest.raises(ValueError, match="feature names should match"):
        loaded.predict(probe.rename(columns={"size": "length"}))


@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_out_of_bag_attributes_round_trip(tmp_path, kind):
    forest, X = _forest(kind, n_estimators=5, oob_score=True)
    forest.save(tmp_path / "f.json")
    loaded = gpu_tree.load(tmp_path / "f.json")
    _assert_same_forest(loaded, forest, X)
    assert loaded.oob_score_ == forest.oob_score_
    name = "oob_decision_function_" if kind == "classifier" else "oob_prediction_"
    np.testing.assert_array_equal(getattr(loaded, name), getattr(forest, name))
    assert getattr(loaded, name).shape == getattr(forest, name).shape


def test_a_regressor_s_oob_score_of_a_constant_y_round_trips(tmp_path):
    X, _ = _data()
    forest = RandomForestRegressor(3, max_depth=2, oob_score=True, device="cpu", random_state=0)
    forest.fit(X, np.full(X.shape[0], 4.0))  # no spread: scikit-learn's finite R^2, 1 or 0
    assert forest.oob_score_ in (0.0, 1.0)
    forest.save(tmp_path / "f.json")
    assert gpu_tree.load(tmp_path / "f.json").oob_score_ == forest.oob_score_


def test_warm_start_and_oob_after_loading_continue_the_same_forest(tmp_path):
    # random_state=None: the trees and bootstrap samples to come depend on the forest's
    # seed, which only the file keeps.
    X, y = _data()
    forest = RandomForestClassifier(3, max_depth=4, device="cpu").fit(X, y)
    forest.save(tmp_path / "f.json")
    loaded = gpu_tree.load(tmp_path / "f.json")
    for model in (forest, loaded):
        model.set_params(warm_start=True, n_estimators=5, oob_score=True).fit(X, y)
    _assert_same_forest(loaded, forest, X)
    assert loaded.oob_score_ == forest.oob_score_
    np.testing.assert_array_equal(loaded.oob_decision_function_, forest.oob_decision_function_)


def test_a_forest_that_cannot_be_written_leaves_no_file(tmp_path):
    with pytest.raises(NotFittedError):
        RandomForestClassifier(2).save(tmp_path / "f.json")
    forest, _ = _forest(n_estimators=2)
    forest.set_params(n_estimators=5)  # not fitted again
    with pytest.raises(ValueError, match="n_estimators is 5 but the forest has 2 trees"):
        forest.save(tmp_path / "f.json")
    assert not (tmp_path / "f.json").exists()


def test_write_is_atomic(tmp_path, monkeypatch):
    forest, _ = _forest(n_estimators=2)
    path = tmp_path / "f.json"
    path.write_text("previous contents")

    def broken_replace(source, target):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        forest.save(path)
    assert path.read_text() == "previous contents"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]


def test_a_fresh_process_loads_a_forest_through_gpu_tree_ensemble(tmp_path):
    forest, X = _forest(n_estimators=2)
    forest.save(tmp_path / "f.json")
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "expected.npy", forest.predict_proba(X))
    code = (
        "import sys, numpy as np\n"
        "from gpu_tree.ensemble import load_model\n"
        "model = load_model(sys.argv[1] + '/f.json')\n"
        "proba = model.predict_proba(np.load(sys.argv[1] + '/X.npy'))\n"
        "assert (proba == np.load(sys.argv[1] + '/expected.npy')).all()\n"
        "print(type(model).__name__)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, cwd=REPO
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["RandomForestClassifier"]


def test_a_fresh_process_loads_a_forest_through_gpu_tree_load(tmp_path):
    forest, _ = _forest(n_estimators=2)
    forest.save(tmp_path / "f.json")
    code = "import sys, gpu_tree\nprint(type(gpu_tree.load(sys.argv[1])).__name__)\n"
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "f.json")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["RandomForestClassifier"]


# -- every damaged forest file is refused, the error naming the tree or field -------------------
_SAVED = {}


def _saved(tmp_path, model="classifier"):
    """The JSON document of a real saved forest (fitted and saved once per session)."""
    if model not in _SAVED:
        params = {
            "classifier": ("classifier", {"oob_score": True}),
            "subset": ("classifier", {"categorical_features": [0]}),
            "regressor": ("regressor", {"oob_score": True}),
        }[model]
        forest, _ = _forest(params[0], **params[1])
        forest.save(tmp_path / "saved.json")
        _SAVED[model] = (tmp_path / "saved.json").read_text()
    return unpacked_document(json.loads(_SAVED[model]))


def _refused(tmp_path, document, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match=message) as error:
        gpu_tree.load(path)
    assert str(error.value).startswith(str(path) + ": ")
    return str(error.value)


def _first_internal(tree):
    return next(node for node, left in enumerate(tree["children_left"]) if left >= 0)


def _with_three_classes(tree):
    """A tree's document given three outputs (the new ones 0 everywhere)."""
    old, value = tree["n_classes"], tree["value"]
    rows = [value[k : k + old] for k in range(0, len(value), old)]
    tree["n_classes"] = 3
    tree["value"] = [v for row in rows for v in (*row, *[0.0] * (3 - old))]


def _child_out_of_range(tree):
    tree["children_right"][_first_internal(tree)] = 10_000


def _bad_probability(tree):
    tree["value"][0] = 2.0


def _set(*path_and_value):
    *path, value = path_and_value

    def change(document):
        for key in path[:-1]:
            document = document[key]
        document[path[-1]] = value

    return change


@pytest.mark.parametrize(
    "model, change, message",
    [
        ("classifier", lambda d: d["trees"].clear(), "a forest needs at least one tree"),
        (
            "classifier",
            lambda d: d["trees"].pop(),
            "params.n_estimators is 4, but the forest has 3",
        ),
        (
            "classifier",
            _set("params", "n_estimators", 9),
            "n_estimators is 9, but the forest has 4",
        ),
        ("classifier", _set("params", "n_estimators", True), "n_estimators is True"),
        ("classifier", lambda d: d.pop("trees"), "the model has no field 'trees'"),
        ("classifier", _set("trees", 2, "a tree"), "tree 2: the tree has no field 'node_count'"),
        (
            "classifier",
            lambda d: _child_out_of_range(d["trees"][2]),
            "tree 2: node \\d+ has child 10000, out of range",
        ),
        (
            "classifier",
            lambda d: _bad_probability(d["trees"][1]),
            "tree 1: node 0 has value .*class probabilities must be >= 0 and sum to 1",
        ),
        (
            "classifier",
            _set("trees", 3, "n_features", 7),
            "tree 3: the tree has 7 features, but n_features_in is 4",
        ),
        (
            "classifier",
            lambda d: _with_three_classes(d["trees"][1]),
            "tree 1: 2 class labels, but the tree has 3 classes",
        ),
        (
            "regressor",
            lambda d: _with_three_classes(d["trees"][0]),
            "tree 0: a regressor's tree must have 1 output column, not 3",
        ),
        (
            "classifier",
            _set("trees", 2, "n_category_words", 2),
            "tree 2: n_category_words is 2, but tree 0's is 1",
        ),
        (
            "subset",
            lambda d: d["categorical"].update(is_categorical=[False] * 4, categories=[None] * 4),
            "tree \\d: node \\d+ splits feature 0 by category, but that feature is not categorical",
        ),
        ("classifier", lambda d: d.pop("forest"), "the model has no field 'forest'"),
        ("classifier", _set("forest", "seed", -1), "forest.seed is -1"),
        ("classifier", _set("forest", "seed", 2**64), "forest.seed is 18446744073709551616"),
        ("classifier", _set("forest", "seed", "7"), "field 'seed' of forest should be an integer"),
        ("classifier", lambda d: d["forest"].pop("seed"), "forest has no field 'seed'"),
        ("classifier", _set("forest", "n_batches", 0), "forest.n_batches should be null or"),
        ("classifier", _set("forest", "max_features", 0), "forest.max_features is 0, expected 1"),
        ("classifier", _set("forest", "max_features", 5), "forest.max_features is 5, expected 1"),
        ("classifier", _set("forest", "oob", "score"), "forest.oob has no field 'score'"),
        ("classifier", _set("forest", "oob", "score", "high"), "'high', which is not a number"),
        (
            "classifier",
            lambda d: d["forest"]["oob"]["values"].pop(),
            "array 'values' has 479 entries, expected 480",
        ),
        (
            "regressor",
            _set("forest", "oob", "n_samples", 0),
            "forest.oob.n_samples is 0, expected a positive integer",
        ),
        (
            "regressor",
            _set("forest", "oob", "values", 0, "nan"),
            "forest.oob.values should be finite",
        ),
        (
            "classifier",
            _set("params", "colour", "blue"),
            "the saved parameters do not fit RandomForestClassifier",
        ),
        (
            "classifier",
            _set("estimator", "DecisionTreeClassifier"),
            "the model has no field 'tree'",
        ),
    ],
)
def test_damaged_forest_files_are_refused_naming_the_problem(tmp_path, model, change, message):
    document = _saved(tmp_path, model)
    change(document)
    _refused(tmp_path, document, message)


def test_the_unchanged_documents_load(tmp_path):
    # So that every refusal above is its one change's doing.
    for model in ("classifier", "subset", "regressor"):
        path = tmp_path / f"{model}.json"
        path.write_text(json.dumps(_saved(tmp_path, model)))
        assert len(gpu_tree.load(path).estimators_) == 4


def test_whole_array_and_node_by_node_checks_agree(tmp_path, monkeypatch):
    # A tree is checked on whole arrays, and node by node (for the message) only when that
    # fails: the two must pass and fail the same trees. Random one-entry edits of the
    # trees' arrays, each loaded with both checks compared.
    from gpu_tree.model.file_format import checks
    from gpu_tree.model.file_format.fields import Reader

    verdicts = []
    whole_arrays = checks._structure_is_valid

    def both(*args):
        fast = whole_arrays(*args)
        try:
            checks._check_structure_node_by_node(Reader("x"), *args)
            verdicts.append((fast, True))
        except ValueError:
            verdicts.append((fast, False))
        return fast

    monkeypatch.setattr(checks, "_structure_is_valid", both)
    rng = np.random.default_rng(0)
    for model in ("subset", "classifier", "regressor"):
        for _ in range(40):
            document = _saved(tmp_path, model)
            tree = document["trees"][int(rng.integers(4))]
            name = str(rng.choice([k for k, v in tree.items() if isinstance(v, list) and v]))
            k = int(rng.integers(len(tree[name])))
            tree[name][k] = tree[name][k] + int(rng.choice([-2, -1, 1, 2]))
            path = tmp_path / "edited.json"
            path.write_text(json.dumps(document))
            try:
                gpu_tree.load(path)
            except ValueError:
                pass
    assert all(fast == slow for fast, slow in verdicts)
    assert sum(not slow for _, slow in verdicts) > 20 and sum(slow for _, slow in verdicts) > 20


def test_the_forest_s_class_labels_are_checked_against_every_tree(tmp_path):
    document = _saved(tmp_path)
    document["classes"]["values"].append("eh")  # fits the labels' dtype ("maybe" would not)
    message = _refused(tmp_path, document, "tree 0: 3 class labels, but the tree has 2 classes")
    assert "tree 0" in message


def test_a_tree_s_parameters_come_from_the_forest(tmp_path):
    document = _saved(tmp_path)
    document["params"]["max_depth"] = 2  # the trees' parameters follow (not their arrays)
    path = tmp_path / "f.json"
    path.write_text(json.dumps(document))
    loaded = gpu_tree.load(path)
    assert [e.max_depth for e in loaded.estimators_] == [2] * 4
    assert [e.random_state for e in loaded.estimators_] == [0, 1, 2, 3]


# -- exports of a forest's tree -------------------------------------------------------------------
def test_export_text_and_graphviz_show_the_tree_chosen_by_tree_index(tmp_path):
    forest, _ = _forest(categorical_features=[0], n_estimators=3)
    forest.save(tmp_path / "f.json")
    loaded = gpu_tree.load(tmp_path / "f.json")
    for k in range(3):
        tree = forest.estimators_[k]
        text = gpu_tree.export_text(forest, tree_index=k)
        assert text == gpu_tree.export_text(tree)
        assert gpu_tree.export_text(loaded, tree_index=k, max_depth=2) == gpu_tree.export_text(
            tree, max_depth=2
        )
        dot = gpu_tree.export_graphviz(forest, tree_index=k, filled=True)
        assert dot == gpu_tree.export_graphviz(tree, filled=True)
        assert gpu_tree.export_graphviz(loaded, tree_index=k, filled=True) == dot
    assert gpu_tree.export_text(forest, tree_index=0) != gpu_tree.export_text(forest, tree_index=1)
    gpu_tree.export_graphviz(forest, tmp_path / "t.dot", tree_index=np.int64(2))
    assert (tmp_path / "t.dot").read_text() == gpu_tree.export_graphviz(forest.estimators_[2])


@pytest.mark.parametrize("export", ["export_text", "export_graphviz", "plot_tree"])
def test_a_forest_needs_a_tree_index_in_range(export):
    forest, _ = _forest(n_estimators=3)
    function = getattr(gpu_tree, export)
    with pytest.raises(
        ValueError, match=f"{export}: .*forest of 3 trees; choose one with tree_index=0 to 2"
    ):
        function(forest)
    for bad in (3, -1, 1.0, True, "0"):
        with pytest.raises(ValueError, match="tree_index must be an int from 0 to 2 .*3 trees"):
            function(forest, tree_index=bad)
    with pytest.raises(NotFittedError, match=f"{export}: .*RandomForestRegressor .*not fitted"):
        function(RandomForestRegressor(), tree_index=0)


def test_a_single_tree_takes_no_tree_index():
    X, y = _data()
    tree = DecisionTreeClassifier(max_depth=2, device="cpu").fit(X, y)
    assert gpu_tree.export_text(tree).startswith("|--- ")
    with pytest.raises(ValueError, match="DecisionTreeClassifier is a single tree; leave"):
        gpu_tree.export_text(tree, tree_index=0)
    with pytest.raises(ValueError, match="is a single tree"):
        gpu_tree.export_graphviz(tree, tree_index=0)


def test_plot_tree_and_export_png_draw_a_forest_s_tree(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from gpu_tree.model.export.png import export_png

    forest, _ = _forest(n_estimators=2, max_depth=2)
    axes = Figure().add_subplot()
    boxes = gpu_tree.plot_tree(forest, tree_index=1, ax=axes)
    assert len(boxes) == len(gpu_tree.plot_tree(forest.estimators_[1], ax=Figure().add_subplot()))
    assert export_png(forest, tmp_path / "t.png", tree_index=0, renderer="matplotlib")
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="export_png: .*tree_index=0 to 1"):
        export_png(forest, tmp_path / "u.png")
    assert not (tmp_path / "u.png").exists()
