"""Model files: exact round trips, atomic writes, and a clear error for every bad file."""

from __future__ import annotations

import json
import os
import pickle
import re

import numpy as np
import pytest
from _plain_models import plain_document

import gpu_tree
from gpu_tree import DecisionTreeClassifier, DecisionTreeRegressor, assert_tree_equal
from gpu_tree.model.file_format.writing import unpacked_document
from gpu_tree.utils.compat import NotFittedError

pd = pytest.importorskip("pandas")


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = np.c_[rng.integers(0, 5, n), rng.normal(size=n), rng.normal(size=n)]
    X[rng.random(n) < 0.1, 1] = np.nan
    y = ((X[:, 0] % 2 == 0) ^ (np.nan_to_num(X[:, 1]) > 0.3)).astype(int)
    return X, y


def _fitted(kind="classifier", **params):
    X, y = _data()
    if kind == "regressor":
        return DecisionTreeRegressor(max_depth=5, device="cpu", **params).fit(
            X, y * 2.5 + X[:, 2]
        ), X
    labels = np.array(["no", "yes"])[y]
    return DecisionTreeClassifier(max_depth=5, device="cpu", **params).fit(X, labels), X


@pytest.mark.parametrize(
    "kind, params",
    [
        ("classifier", {}),
        ("classifier", {"criterion": "gain_ratio", "splitter": "exact"}),
        ("classifier", {"categorical_features": [0], "class_weight": {"no": 2.0, "yes": 1.0}}),
        ("classifier", {"categorical_features": [0], "categorical_split": "multiway"}),
        ("regressor", {"max_bins": 16}),
        ("regressor", {"categorical_features": [0]}),
        ("regressor", {"monotonic_cst": [0, 1, 1]}),
        ("classifier", {"monotonic_cst": [0, -1, 1], "splitter": "exact"}),
    ],
)
def test_round_trip_is_exact(tmp_path, kind, params):
    model, X = _fitted(kind, **params)
    path = tmp_path / "model.json"
    model.save(path)
    loaded = gpu_tree.load(path)
    assert type(loaded) is type(model)
    assert_tree_equal(model.tree_, loaded.tree_, impurity_rtol=0, value_rtol=0)
    np.testing.assert_array_equal(loaded.tree_.threshold, model.tree_.threshold)
    np.testing.assert_array_equal(loaded.tree_.value, model.tree_.value)  # bit for bit
    if kind == "classifier":
        np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
        np.testing.assert_array_equal(loaded.classes_, model.classes_)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert loaded.get_params() == model.get_params()
    # Saved again, the file is the same, byte for byte.
    loaded.save(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == path.read_bytes()


def test_string_categories_feature_names_and_unseen_values_survive(tmp_path):
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
    model = DecisionTreeClassifier(max_depth=4, categorical_features=["colour"], device="cpu").fit(
        frame, y
    )
    model.save(tmp_path / "m.json")
    loaded = gpu_tree.load(tmp_path / "m.json")
    assert list(loaded.feature_names_in_) == ["colour", "size", "weight"]
    probe = frame.iloc[:30].copy()
    probe.loc[:5, "colour"] = "ultraviolet"  # unseen: the missing rule, no error
    np.testing.assert_array_equal(loaded.predict_proba(probe), model.predict_proba(probe))


def test_the_file_is_versioned_json_data(tmp_path):
    model, _ = _fitted(categorical_features=[0])
    model.save(tmp_path / "m.json")
    document = json.loads((tmp_path / "m.json").read_text())
    assert document["format"] == "gpu_tree.model" and document["format_version"] == 2
    assert document["library_version"] == gpu_tree.__version__
    assert document["estimator"] == "DecisionTreeClassifier"
    assert document["params"]["max_depth"] == 5
    assert len(document["binning"]["edges"]) == 3
    assert document["categorical"]["is_categorical"] == [True, False, False]
    children = document["tree"]["children_left"]  # packed: small integers in one byte each
    assert children["dtype"] == "|i1" and children["count"] == model.tree_.node_count
    assert plain_document(tmp_path / "m.json")["tree"]["children_left"] == (
        model.tree_.children_left.tolist()
    )


def test_write_is_atomic(tmp_path, monkeypatch):
    model, _ = _fitted()
    path = tmp_path / "m.json"
    path.write_text("previous contents")

    def broken_replace(source, target):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        model.save(path)
    assert path.read_text() == "previous contents"  # untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]  # no temporary left


def test_saved_file_has_ordinary_permissions(tmp_path):
    # The temporary file behind the atomic write is private (mkstemp's 0600); the model
    # must come out as open() would make it, and keep an existing file's mode.
    model, _ = _fitted()
    umask = os.umask(0o022)
    try:
        model.save(tmp_path / "new.json")
        existing = tmp_path / "shared.json"
        existing.write_text("{}")
        existing.chmod(0o664)
        model.save(existing)
    finally:
        os.umask(umask)
    assert (tmp_path / "new.json").stat().st_mode & 0o777 == 0o644
    assert existing.stat().st_mode & 0o777 == 0o664


def test_unfitted_estimator_cannot_be_saved(tmp_path):
    with pytest.raises(NotFittedError):
        DecisionTreeClassifier().save(tmp_path / "m.json")
    assert not (tmp_path / "m.json").exists()


def test_pickling_still_works():
    model, X = _fitted(categorical_features=[0], categorical_split="multiway")
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict_proba(X), model.predict_proba(X))


# -- every damaged or foreign file gets a ValueError saying what is wrong ---------------------
def _document():
    model, _ = _fitted(categorical_features=[0], categorical_split="multiway")
    from gpu_tree.model.file_format.writing import model_document

    return json.loads(json.dumps(model_document(model, packed=False)))


def _write(tmp_path, document):
    path = tmp_path / "bad.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def _broken(change):
    document = _document()
    change(document)
    return document


def _first_internal(tree, kind=None):
    for node, left in enumerate(tree["children_left"]):
        if left >= 0 and (kind is None or tree["split_kind"][node] == kind):
            return node
    raise AssertionError("no such node")


def _set_child(document, value):
    tree = document["tree"]
    node = _first_internal(tree, kind=1)
    tree["children_right"][node] = value


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: '{"format": "gpu_tree.model", "format_vers', "invalid or truncated JSON"),
        (lambda: "not json at all", "invalid or truncated JSON"),
        (lambda: {"name": "something else"}, "not a gpu_tree model \\(format None"),
        (lambda: [1, 2, 3], "not a gpu_tree model \\(format 'list'"),
        (
            lambda: _broken(lambda d: d.update(format_version=7)),
            "format_version 7 is not supported",
        ),
        (
            lambda: _broken(lambda d: d.update(estimator="os.system")),
            "unknown estimator 'os.system'",
        ),
        (lambda: _broken(lambda d: d["tree"]["feature"].pop()), "array 'feature' has"),
        (lambda: _broken(lambda d: d["tree"].pop("threshold")), "no field 'threshold'"),
        (lambda: _broken(lambda d: _set_child(d, 10_000)), "child 10000, out of range"),
        (
            lambda: _broken(lambda d: _set_child(d, 0)),
            "numbered before it: the tree would have a cycle",
        ),
        (
            lambda: _broken(lambda d: d["tree"]["value"].__setitem__(0, "many")),
            "'many', which is not a number",
        ),
        (lambda: _broken(lambda d: d["tree"]["children_left"].__setitem__(0, -1)), "half a leaf"),
        (
            lambda: _broken(lambda d: d["classes"]["values"].pop()),
            "1 class labels, but the tree has 2",
        ),
        (lambda: _broken(lambda d: d.update(n_features_in=9)), "n_features_in is 9"),
        (
            lambda: _broken(lambda d: d["tree"]["branch_children"].clear()),
            "branch table is out of range",
        ),
        (
            lambda: _broken(
                lambda d: d["categorical"].update(is_categorical=[False] * 3, categories=[None] * 3)
            ),
            "is not categorical",
        ),
        (
            lambda: _broken(lambda d: d["tree"].update(node_count="7")),
            "'node_count' of the tree should be an integer",
        ),
    ],
)
def test_bad_files_raise_value_error_naming_the_problem(tmp_path, make, message):
    path = _write(tmp_path, make())
    with pytest.raises(ValueError, match=message):
        gpu_tree.load(path)


def test_shared_child_is_refused(tmp_path):
    document = _document()
    tree = document["tree"]
    node = _first_internal(tree, kind=1)
    # Point a later numeric node's child at a node that already has a parent.
    later = [
        k
        for k in range(node + 1, len(tree["split_kind"]))
        if tree["split_kind"][k] == 1 and tree["children_left"][k] > k
    ]
    if not later:
        pytest.skip("the tree has a single numeric node")
    k = later[0]
    tree["children_left"][k] = tree["children_right"][k]
    with pytest.raises(ValueError, match="same child on both sides|parents"):
        gpu_tree.load(_write(tmp_path, document))


def test_binary_file_is_refused(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(b"\x80\x04\x95 pickle bytes \xff\xfe")
    with pytest.raises(ValueError, match="not a gpu_tree model file"):
        gpu_tree.load(path)


# -- one precise defect per file, each named by the loader ------------------------------------
# Each test starts from a real saved model and changes one thing. The match is on the
# loader's own message: a file refused only by a later accident (an IndexError, numpy's
# reshape error, a different check) does not pass.
_MODELS = {
    "classifier": ("classifier", {}),
    "regressor": ("regressor", {}),
    "subset": ("classifier", {"categorical_features": [0]}),
    "multiway": ("classifier", {"categorical_features": [0], "categorical_split": "multiway"}),
}
_SAVED = {}


def _saved(tmp_path, model):
    """The JSON document of a real saved model (fitted and saved once per session)."""
    if model not in _SAVED:
        kind, params = _MODELS[model]
        estimator, _ = _fitted(kind, **params)
        estimator.save(tmp_path / "saved.json")
        _SAVED[model] = (tmp_path / "saved.json").read_text()
    return unpacked_document(json.loads(_SAVED[model]))


def _nodes(tree, kind):
    return [k for k, s in enumerate(tree["split_kind"]) if s == kind]


def _refused(tmp_path, document, message):
    with pytest.raises(ValueError, match=message):
        gpu_tree.load(_write(tmp_path, document))


def test_the_unchanged_documents_load(tmp_path):
    for model in _MODELS:  # so every refusal below is the one change's doing
        gpu_tree.load(_write(tmp_path, _saved(tmp_path, model)))


@pytest.mark.parametrize("model", ["classifier", "multiway"])
@pytest.mark.parametrize("array", ["depth", "children_left", "n_node_samples", "category_bitsets"])
def test_true_false_in_an_integer_array_is_refused(tmp_path, model, array):
    document = _saved(tmp_path, model)
    values = document["tree"][array]
    if not values:
        pytest.skip(f"{array} is empty in this model")
    values[-1] = bool(values[-1] == 1)  # 1 -> true: the value numpy would read is unchanged
    _refused(tmp_path, document, f"array '{array}' holds a value that is not an integer")


@pytest.mark.parametrize(
    "where, name",
    [
        ((), "format_version"),
        ((), "n_features_in"),
        (("tree",), "node_count"),
        (("tree",), "n_features"),
        (("tree",), "n_category_words"),
    ],
)
def test_true_false_in_an_integer_field_is_refused(tmp_path, where, name):
    document = _saved(tmp_path, "classifier")
    holder = document
    for key in where:
        holder = holder[key]
    holder[name] = True  # for format_version and n_category_words, 1: only the type is wrong
    _refused(tmp_path, document, f"field '{name}' of .* should be an integer, got True")


def test_format_version_true_is_not_version_1(tmp_path):
    document = _saved(tmp_path, "regressor")
    document["format_version"] = True
    _refused(
        tmp_path, document, "field 'format_version' of the model should be an integer, got True"
    )


@pytest.mark.parametrize("model", ["classifier", "regressor", "subset"])
@pytest.mark.parametrize("side", ["children_left", "children_right"])
def test_a_node_that_is_its_own_child_is_refused(tmp_path, model, side):
    document = _saved(tmp_path, model)
    tree = document["tree"]
    node = [k for k in range(1, tree["node_count"]) if tree["children_left"][k] >= 0][0]
    tree[side][node] = node  # not the root: the 'root has a parent' check cannot catch it
    _refused(
        tmp_path,
        document,
        f"node {node} has child {node}, numbered before it: the tree would have a cycle",
    )


@pytest.mark.parametrize("model", ["classifier", "subset", "multiway"])
def test_a_child_one_past_the_last_node_is_refused(tmp_path, model):
    document = _saved(tmp_path, model)
    tree = document["tree"]
    n = tree["node_count"]
    node = _first_internal(tree)
    tree["children_right"][node] = n
    _refused(
        tmp_path, document, f"node {node} has child {n}, out of range \\(the tree has {n} nodes\\)"
    )


@pytest.mark.parametrize(
    "model, kind", [("classifier", 1), ("subset", 2), ("multiway", 3), ("regressor", 1)]
)
@pytest.mark.parametrize("shift", [0, 1])
def test_a_split_feature_past_the_last_is_refused(tmp_path, model, kind, shift):
    document = _saved(tmp_path, model)
    tree = document["tree"]
    node = _nodes(tree, kind)[-1]
    bad = tree["n_features"] + shift  # == n_features is the off-by-one
    tree["feature"][node] = bad
    _refused(tmp_path, document, f"node {node} splits feature {bad}, out of range \\(3 features\\)")


@pytest.mark.parametrize("model", ["classifier", "regressor", "subset"])
def test_orphan_nodes_are_refused(tmp_path, model):
    # An internal node whose children are both leaves becomes a leaf: its two children
    # keep their place in the arrays but nothing leads to them any more.
    document = _saved(tmp_path, model)
    tree = document["tree"]
    left, right = tree["children_left"], tree["children_right"]
    node = [
        k
        for k in range(tree["node_count"])
        if left[k] >= 0 and left[left[k]] < 0 and left[right[k]] < 0
    ][-1]
    orphan = left[node]
    left[node] = right[node] = -1
    tree["split_kind"][node] = 0
    tree["feature"][node] = -2
    tree["category_offset"][node] = -1
    tree["missing_go_to_left"][node] = 0
    _refused(
        tmp_path,
        document,
        f"node {orphan} has 0 parents; every node but the root needs exactly one",
    )


@pytest.mark.parametrize(
    "model, kind", [("classifier", 1), ("subset", 2), ("multiway", 3), ("multiway", 7)]
)
def test_a_leaf_with_an_internal_split_kind_is_refused(tmp_path, model, kind):
    document = _saved(tmp_path, model)
    tree = document["tree"]
    leaf = _nodes(tree, 0)[0]
    tree["split_kind"][leaf] = kind
    _refused(tmp_path, document, f"node {leaf} is half a leaf: children -1, -1, split kind {kind}")


def test_a_multiway_table_without_its_default_slot_is_refused(tmp_path):
    # The table of the last multiway node loses its last entry (the child of missing values
    # and unseen categories): the walk would read past branch_children.
    document = _saved(tmp_path, "multiway")
    tree = document["tree"]
    node = max(_nodes(tree, 3), key=lambda k: tree["branch_offset"][k])
    assert tree["branch_offset"][node] + tree["n_branches"][node] + 1 == len(
        tree["branch_children"]
    )
    tree["branch_children"].pop()
    _refused(tmp_path, document, f"multiway node {node}: its branch table is out of range")


@pytest.mark.parametrize(
    "field, value",
    [("branch_offset", -1), ("branch_offset", -3), ("n_branches", 0), ("n_branches", 6)],
)
def test_a_multiway_table_out_of_range_is_refused(tmp_path, field, value):
    document = _saved(tmp_path, "multiway")
    tree = document["tree"]
    node = _nodes(tree, 3)[0]
    tree[field][node] = value
    _refused(tmp_path, document, f"multiway node {node}: its branch table is out of range")


@pytest.mark.parametrize("offset", [-1, -2, -64])
def test_a_negative_category_set_offset_is_refused(tmp_path, offset):
    document = _saved(tmp_path, "subset")
    tree = document["tree"]
    node = _nodes(tree, 2)[-1]
    tree["category_offset"][node] = offset
    _refused(tmp_path, document, f"subset node {node}: its category set is out of range")


def test_a_category_set_past_the_bitsets_is_refused(tmp_path):
    document = _saved(tmp_path, "subset")
    tree = document["tree"]
    node = _nodes(tree, 2)[-1]
    tree["category_offset"][node] = len(tree["category_bitsets"])
    _refused(tmp_path, document, f"subset node {node}: its category set is out of range")


@pytest.mark.parametrize("model", ["classifier", "multiway"])
def test_an_empty_tree_is_refused(tmp_path, model):
    # A consistent empty tree: node_count 0 and every per-node array empty.
    document = _saved(tmp_path, model)
    tree = document["tree"]
    tree["node_count"] = 0
    for values in tree.values():
        if isinstance(values, list):
            values.clear()
    _refused(
        tmp_path,
        document,
        "node_count, n_features, n_classes and n_category_words must be positive",
    )


@pytest.mark.parametrize("model", ["classifier", "regressor", "subset"])
@pytest.mark.parametrize("change", [1, -1, "one node"])
def test_a_value_array_of_the_wrong_length_is_refused(tmp_path, model, change):
    document = _saved(tmp_path, model)
    tree = document["tree"]
    values = tree["value"]
    expected = tree["node_count"] * tree["n_classes"]
    assert len(values) == expected
    if change == 1:
        values.append(0.5)
    elif change == -1:
        values.pop()
    else:
        values.extend(values[: tree["n_classes"]])  # one node's worth more: still reshapes
    _refused(tmp_path, document, f"array 'value' has {len(values)} entries, expected {expected}")


@pytest.mark.parametrize(
    "model, feature", [("subset", 1), ("subset", 2), ("multiway", 1), ("classifier", 0)]
)
def test_is_categorical_true_without_categories_is_refused(tmp_path, model, feature):
    document = _saved(tmp_path, model)
    document["categorical"]["is_categorical"][feature] = True
    assert document["categorical"]["categories"][feature] is None
    _refused(tmp_path, document, f"feature {feature}: is_categorical and its categories disagree")


@pytest.mark.parametrize("model", ["subset", "multiway"])
def test_categories_for_a_feature_marked_numeric_are_refused(tmp_path, model):
    document = _saved(tmp_path, model)
    document["categorical"]["is_categorical"][0] = False
    assert document["categorical"]["categories"][0] is not None
    _refused(tmp_path, document, "feature 0: is_categorical and its categories disagree")


@pytest.mark.parametrize(
    "change", ["swap", "repeat", "infinite", "not a number"], ids=lambda change: change
)
def test_number_categories_out_of_order_are_refused(tmp_path, change):
    # A value's code is found by a sorted search among its feature's categories: unsorted,
    # repeated or non-finite ones would code values wrongly, without an error.
    document = _saved(tmp_path, "subset")
    entry = document["categorical"]["categories"][0]
    assert entry["kind"] == "number" and len(entry["values"]) >= 2
    values = entry["values"]
    if change == "swap":
        values[0], values[1] = values[1], values[0]
    elif change == "repeat":
        values[1] = values[0]
    elif change == "infinite":
        values[-1] = "inf"
    else:
        values[-1] = "nan"
    _refused(
        tmp_path,
        document,
        "categories of feature 0 should be finite numbers in increasing order, each once",
    )


@pytest.mark.parametrize("model", ["classifier", "regressor", "multiway"])
def test_infinite_thresholds_and_negative_zero_round_trip_bit_for_bit(tmp_path, model):
    kind, params = _MODELS[model]
    estimator, X = _fitted(kind, **params)
    tree = estimator.tree_
    numeric = np.flatnonzero(tree.split_kind == 1)
    leaves = np.flatnonzero(tree.children_left == -1)
    # A threshold of -inf sends only -inf left; +inf sends every present value left.
    tree.threshold[numeric[0]] = -np.inf
    tree.threshold[numeric[-1]] = np.inf
    tree.value[leaves[3], 0, 0] = -0.0 if model == "regressor" else tree.value[leaves[3], 0, 0]
    estimator._bin_mapper.edges_[1][0] = -np.inf
    path = tmp_path / "model.json"
    estimator.save(path)
    saved = plain_document(path)["tree"]
    assert saved["threshold"][numeric[0]] == "-inf" and saved["threshold"][numeric[-1]] == "inf"
    loaded = gpu_tree.load(path)

    def bits(a):
        return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)

    for name in ("threshold", "impurity", "weighted_n_node_samples", "value"):
        np.testing.assert_array_equal(
            bits(getattr(loaded.tree_, name)), bits(getattr(tree, name)), err_msg=name
        )
    for mine, theirs in zip(loaded._bin_mapper.edges_, estimator._bin_mapper.edges_, strict=True):
        np.testing.assert_array_equal(bits(mine), bits(theirs))
    np.testing.assert_array_equal(loaded.predict(X), estimator.predict(X))


@pytest.mark.parametrize("model", ["classifier", "regressor"])
@pytest.mark.parametrize(
    ("name", "bad", "message"),
    [
        ("impurity", -np.inf, "impurity -inf, expected a finite number >= 0"),
        ("impurity", np.nan, "impurity nan, expected a finite number >= 0"),
        ("impurity", -1.0, "impurity -1.0, expected a finite number >= 0"),
        ("weighted_n_node_samples", np.inf, "weighted_n_node_samples inf, expected a finite"),
        ("value", np.inf, "expected finite numbers"),
        ("value", np.nan, "expected finite numbers"),
    ],
)
def test_non_finite_or_negative_node_numbers_are_refused(tmp_path, model, name, bad, message):
    """Saving writes whatever the tree holds; loading refuses what prediction, export or
    pruning could not use, naming the field and the node."""
    kind, params = _MODELS[model]
    estimator, _ = _fitted(kind, **params)
    leaf = int(np.flatnonzero(estimator.tree_.children_left == -1)[0])
    array = estimator.tree_.value[:, 0, 0] if name == "value" else getattr(estimator.tree_, name)
    array[leaf] = bad
    path = tmp_path / "model.json"
    estimator.save(path)
    with pytest.raises(ValueError, match=re.escape(message)):
        gpu_tree.load(path)


def test_an_infinite_impurity_is_a_regressor_s_only(tmp_path):
    """+inf is how a regression variance beyond float64 is stored (targets 1e200 apart):
    a regressor's loads; a classifier's impurity is at most log2(classes), so +inf there
    is damage."""
    for model, loads in (("regressor", True), ("classifier", False)):
        kind, params = _MODELS[model]
        estimator, _ = _fitted(kind, **params)
        estimator.tree_.impurity[0] = np.inf
        path = tmp_path / f"{model}.json"
        estimator.save(path)
        if loads:
            assert gpu_tree.load(path).tree_.impurity[0] == np.inf
        else:
            with pytest.raises(ValueError, match=r"node 0 has impurity inf, expected a finite"):
                gpu_tree.load(path)


def test_class_probabilities_must_be_non_negative_and_sum_to_one(tmp_path):
    estimator, _ = _fitted("classifier")
    leaf = int(np.flatnonzero(estimator.tree_.children_left == -1)[0])
    estimator.tree_.value[leaf, 0, :] = 0.0
    estimator.tree_.value[leaf, 0, 0] = 0.75  # sums to 0.75
    path = tmp_path / "model.json"
    estimator.save(path)
    with pytest.raises(ValueError, match=f"node {leaf} has value .* sum to 1"):
        gpu_tree.load(path)


# -- loader gaps: files the walk would misread, refused by name -------------------------------
@pytest.mark.parametrize("model, kind", [("classifier", 1), ("subset", 2)])
@pytest.mark.parametrize("offset", [0, 10**9])
def test_a_branch_table_on_a_non_multiway_node_is_refused(tmp_path, model, kind, offset):
    # Prediction takes any node with branch_offset >= 0 as multiway, whatever its split
    # kind says; unchecked, a far offset read past branch_children (a segfault).
    document = _saved(tmp_path, model)
    tree = document["tree"]
    node = _nodes(tree, kind)[0]
    tree["branch_offset"][node] = offset
    _refused(tmp_path, document, f"node {node} has branch_offset {offset} but split kind {kind}")


@pytest.mark.parametrize("model", ["classifier", "subset", "multiway"])
@pytest.mark.parametrize("offset", [0, 10**9])
def test_a_category_set_on_a_numeric_node_is_refused(tmp_path, model, offset):
    document = _saved(tmp_path, model)
    tree = document["tree"]
    node = _nodes(tree, 1)[0]
    tree["category_offset"][node] = offset
    _refused(tmp_path, document, f"node {node} has category_offset {offset} but is a numeric split")


@pytest.mark.parametrize("value", [2, 256, -1])
def test_missing_go_to_left_must_be_0_or_1(tmp_path, value):
    # Stored as uint8: 256 would wrap to 0 (right) and 2 would read as left.
    document = _saved(tmp_path, "classifier")
    tree = document["tree"]
    node = _nodes(tree, 1)[0]
    tree["missing_go_to_left"][node] = value
    _refused(tmp_path, document, f"node {node} has missing_go_to_left {value}, expected 0 or 1")


@pytest.mark.parametrize("array", ["depth", "children_left", "category_bitsets"])
@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**30])
def test_an_integer_beyond_64_bits_is_refused(tmp_path, array, value):
    # numpy would raise OverflowError, which is not a ValueError.
    document = _saved(tmp_path, "subset")
    document["tree"][array][0] = value
    _refused(tmp_path, document, f"array '{array}' holds {value}, out of the 64-bit integer range")


def test_an_integer_beyond_64_bits_in_a_float_array_is_refused(tmp_path):
    document = _saved(tmp_path, "regressor")
    document["tree"]["threshold"][0] = 10**400
    _refused(tmp_path, document, "array 'threshold' holds 1000.*, which is not a number")


def test_a_count_beyond_64_bits_is_refused(tmp_path):
    document = _saved(tmp_path, "classifier")
    document["tree"]["n_category_words"] = 2**64
    _refused(tmp_path, document, "n_category_words must fit 64 bits")


# -- issue 15: every field the walk or the arrays' readers rely on, for every node ----------
@pytest.mark.parametrize("model", ["classifier", "multiway"])
@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("feature", 10**9),  # read by feature_importances_ and export: an IndexError before
        ("category_offset", 10**12),
        ("branch_offset", 0),  # with branch_children [0]: a walk that never ended
        ("n_branches", 3),
        ("missing_go_to_left", 1),
    ],
)
def test_a_leaf_holding_a_rule_is_refused(tmp_path, model, field, bad):
    document = _saved(tmp_path, model)
    tree = document["tree"]
    leaf = tree["children_left"].index(-1)
    tree[field][leaf] = bad
    if field == "branch_offset" and not tree["branch_children"]:
        tree["branch_children"] = [0]
    _refused(tmp_path, document, rf"leaf {leaf} has {field} {bad}, expected")


@pytest.mark.parametrize("depth", [10**12, 0, 5])
def test_a_depth_that_is_not_one_below_the_parent_is_refused(tmp_path, depth):
    # decision_path sized its arrays by the largest depth: 10**12 asked for 14.6 TiB.
    document = _saved(tmp_path, "classifier")
    tree = document["tree"]
    child = tree["children_left"][0]
    tree["depth"][child] = depth
    _refused(tmp_path, document, rf"node {child} has depth {depth}, expected 1")


def test_a_root_below_depth_zero_is_refused(tmp_path):
    document = _saved(tmp_path, "regressor")
    document["tree"]["depth"][0] = 1
    _refused(tmp_path, document, "the root has depth 1, expected 0")


def test_json_nested_too_deeply_is_refused_not_a_recursion_error(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(ValueError, match="nested too deeply"):
        gpu_tree.load(path)


def test_a_split_that_raises_the_weighted_impurity_is_refused(tmp_path):
    """Found by tests/quality/fuzz_model_files.py (11 cases of 10,000, seed 1): impurity 1e308 at
    a node loaded, and feature_importances_ overflowed to inf and NaN. No grown or pruned
    tree has a split that raises the weighted impurity (every impurity is concave)."""
    document = _saved(tmp_path, "classifier")
    internal = [k for k, c in enumerate(document["tree"]["children_left"]) if c >= 0]
    child = document["tree"]["children_left"][internal[-1]]
    document["tree"]["impurity"][child] = 1e308
    _refused(tmp_path, document, f"node {internal[-1]}'s children hold more weighted impurity")


def test_huge_weighted_impurities_give_finite_importances():
    """Weights and impurities are scaled before their products are summed: a tree whose
    impurities times weights overflow float64 still has finite importances."""
    X = np.arange(40.0).reshape(20, 2)
    model = DecisionTreeRegressor(max_depth=3).fit(X, np.arange(20) % 3)
    model.tree_.impurity[:] *= 1e306
    importances = model.feature_importances_
    assert np.all(np.isfinite(importances))
    assert importances.sum() == pytest.approx(1.0)


# -- missing_in_training: which features had missing values (the exports read it) ------------
def test_missing_in_training_is_saved_and_loaded(tmp_path):
    model, _ = _fitted(categorical_features=[0])  # _data: missing values in feature 1 only
    assert model.missing_in_training_.tolist() == [False, True, False]
    model.save(tmp_path / "m.json")
    document = json.loads((tmp_path / "m.json").read_text())
    assert document["missing_in_training"] == [False, True, False]
    loaded = gpu_tree.load(tmp_path / "m.json")
    assert loaded.missing_in_training_.dtype == bool
    assert loaded.missing_in_training_.tolist() == [False, True, False]
    assert gpu_tree.export_text(loaded) == gpu_tree.export_text(model)


def test_a_file_written_before_missing_in_training_loads_and_marks_every_split(tmp_path):
    model, X = _fitted()
    document = _saved(tmp_path, "classifier")
    del document["missing_in_training"]  # all that such a file lacks
    old = gpu_tree.load(_write(tmp_path, document))
    assert not hasattr(old, "missing_in_training_")
    np.testing.assert_array_equal(old.predict(X), model.predict(X))
    lines = [line for line in gpu_tree.export_text(old).splitlines() if "class:" not in line]
    # One side of every split, as before ("x1 is missing" splits say it themselves).
    lines = [line for line in lines if not line.endswith(("is present", "is missing"))]
    marked = [line for line in lines if line.endswith(" or missing")]
    assert len(marked) == len(lines) // 2 > 0
    assert any(" feature_0 " in line for line in marked)  # feature 0 had no missing value
    # null says the same (a model that does not know), and is what saving it writes.
    document["missing_in_training"] = None
    assert not hasattr(gpu_tree.load(_write(tmp_path, document)), "missing_in_training_")
    old.save(tmp_path / "again.json")
    assert json.loads((tmp_path / "again.json").read_text())["missing_in_training"] is None


@pytest.mark.parametrize(
    "value",
    [[False, True], [False, True, False, False], [0, 1, 0], "yes", {"x1": True}, [None] * 3],
)
def test_a_bad_missing_in_training_is_refused(tmp_path, value):
    document = _saved(tmp_path, "classifier")
    document["missing_in_training"] = value
    _refused(
        tmp_path,
        document,
        r"missing_in_training should be a list of 3 true/false values \(one per feature\)",
    )


# -- class labels: only the dtypes a fit makes, each label checked (issue 43, defect 3) --------
@pytest.mark.parametrize(
    "labels",
    [
        np.array([False, True]),
        np.array([-3, 7], dtype=np.int8),
        np.array([1, 2**64 - 1], dtype=np.uint64),
        np.array([1.0, 2048.0], dtype=np.float16),
        np.array([-1e300, 2.0**70]),
        np.array([1.0, 3.0], dtype=np.longdouble),
        np.array(["no", "yes"], dtype="<U10"),  # wider than its labels: a fit keeps y's
        np.array(["no", "yes"], dtype=object),
        np.array([1, 2.5e10], dtype=object),
        np.array(["2020-01-01", "2021-06-30"], dtype="M8[ns]"),
        np.array([5, 10**15], dtype="m8[ns]"),
    ],
    ids=lambda labels: str(labels.dtype),
)
def test_class_labels_of_every_dtype_a_fit_makes_round_trip(tmp_path, labels):
    X, y = _data()
    model = DecisionTreeClassifier(max_depth=3, device="cpu").fit(X, labels[y])
    model.save(tmp_path / "model.json")
    loaded = gpu_tree.load(tmp_path / "model.json")
    assert loaded.classes_.dtype == model.classes_.dtype
    np.testing.assert_array_equal(loaded.classes_, model.classes_)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


_LABELLED = {}


def _labelled_document(tmp_path, kind):
    """A saved classifier of labels "no" / "yes" (a forest, an oblique tree, a two-output
    tree too), and its classes entry (the first output's for two outputs)."""
    if kind not in _LABELLED:
        X, y = _data()
        labels = np.array(["no", "yes"])[y]
        model = {
            "tree": lambda: DecisionTreeClassifier(max_depth=3, device="cpu").fit(X, labels),
            "forest": lambda: gpu_tree.RandomForestClassifier(
                n_estimators=2, max_depth=3, random_state=0, device="cpu"
            ).fit(X, labels),
            "oblique": lambda: gpu_tree.ObliqueDecisionTreeClassifier(max_depth=3).fit(
                np.nan_to_num(X), labels
            ),
            "two outputs": lambda: DecisionTreeClassifier(max_depth=3, device="cpu").fit(
                X, np.c_[labels, labels[::-1]]
            ),
        }[kind]()
        model.save(tmp_path / "labelled.json")
        _LABELLED[kind] = (tmp_path / "labelled.json").read_text()
    document = unpacked_document(json.loads(_LABELLED[kind]))
    classes = document["classes"]
    return document, classes[0] if isinstance(classes, list) else classes


@pytest.mark.parametrize("kind", ["tree", "forest", "oblique", "two outputs"])
@pytest.mark.parametrize(
    "dtype, values, message",
    [
        # 2.4 GB for a 9 KB file in the issue; 160 MB here, so that the old loader's
        # failure to refuse it stays cheap.
        ("<U20000000", ["no", "yes"], r"dtype is '<U20000000': 2 labels of 20000000 characters"),
        ("<U2", ["no", "yes"], r"dtype is '<U2', too short for its labels: the longest has 3"),
        ("i8,i8", [[1, 2], [3, 4]], r"dtype is 'i8,i8': class labels are bool, integers"),
        ("|S3", ["no", "yes"], r"dtype is '\|S3': class labels are"),
        ("<c16", [1, 2], r"dtype is '<c16': class labels are"),
        ("|V8", [1, 2], r"dtype is '\|V8': class labels are"),
        ("<M8[ns]", ["no", "yes"], r"values holds 'no', not an integer \(dtype '<M8\[ns\]'\)"),
        ("<i8", [0, 2**70], r"values holds 1180591620717411303424, out of the range"),
        ("<i8", [0, 1e308], r"values holds 1e\+308, not an integer"),
        ("<i8", [0, 1.5], r"values holds 1.5, not an integer"),
        ("<f4", [0.0, 1e308], r"values holds 1e\+308, not a finite number its dtype holds"),
        ("|b1", [0, 1], r"values holds 0, not a boolean"),
        ("<i8", [3, 3], r"values repeat a label"),
        ("object", ["no", 1], r"values mix strings and numbers"),
        ("object", ["no", None], r"values holds None: an 'object' label is a string"),
    ],
)
def test_class_labels_beyond_their_dtype_are_refused_by_name(
    tmp_path, kind, dtype, values, message
):
    # Issue 43: any numpy dtype string loaded ("<U200000000" allocated 2.4 GB; "M8[ns]" or
    # "i8,i8" loaded, then predict failed), and a label beyond its dtype (1e308 or 2**70
    # as "<i8") raised OverflowError, for every model kind.
    document, classes = _labelled_document(tmp_path, kind)
    classes.update(dtype=dtype, values=values)
    field = "classes[0]" if kind == "two outputs" else "classes"
    _refused(tmp_path, document, re.escape(field) + r"\." + message)


# -- class fractions: proved, not trusted (issue 43, defect 12) --------------------------------
def _leaf_row(tree_doc, leaf, n_classes):
    return tree_doc["value"][leaf * n_classes : (leaf + 1) * n_classes]


@pytest.mark.parametrize("kind", ["tree", "forest"])
def test_a_weighted_leaf_of_zero_class_fractions_is_refused(tmp_path, kind):
    # Issue 43: it loaded, and predict_proba's rows reaching it summed to 0.
    document, _ = _labelled_document(tmp_path, kind)
    tree = document["tree"] if kind == "tree" else document["trees"][1]
    leaf = tree["children_left"].index(-1)
    assert tree["weighted_n_node_samples"][leaf] > 0
    start = leaf * tree["n_classes"]
    tree["value"][start : start + tree["n_classes"]] = [0.0] * tree["n_classes"]
    where = "" if kind == "tree" else "tree 1: "
    _refused(
        tmp_path,
        document,
        rf"{where}node {leaf} has value \[0.0, 0.0\] at weighted_n_node_samples [0-9.]+: "
        r"class probabilities must be >= 0 and sum to 1",
    )
    # The tolerance a fit's rounding needs, and no more.
    tree["value"][start : start + 2] = [0.5, 0.5 + 1e-12]
    gpu_tree.load(_write(tmp_path, document))
    tree["value"][start : start + 2] = [0.5, 0.5 + 1e-6]
    _refused(tmp_path, document, rf"{where}node {leaf} has value .* sum to 1")


def test_zero_fractions_on_a_node_of_zero_weight_load(tmp_path):
    # Fits that rounded sample weights below their fixed point's unit to 0 saved nodes
    # of weight 0 and zero fractions (tests/data/test_tiny_weights.py: fits no longer
    # make them); such files still load.
    document, _ = _labelled_document(tmp_path, "tree")
    tree = document["tree"]
    leaf = tree["children_left"].index(-1)
    tree["weighted_n_node_samples"][leaf] = 0.0
    start = leaf * tree["n_classes"]
    tree["value"][start : start + tree["n_classes"]] = [0.0] * tree["n_classes"]
    loaded = gpu_tree.load(_write(tmp_path, document))
    np.testing.assert_array_equal(loaded.tree_.value[leaf], 0.0)


@pytest.mark.parametrize(
    "change, shown",
    [
        (lambda row: [0.0 for _ in row], r"\[0.0, 0.0\]"),
        (lambda row: [v / 2 for v in row], r"\[.*\]"),
        (lambda row: [row[0] + 1e-6, row[1]], r"\[.*\]"),
    ],
    ids=["zeros", "halved", "over by 1e-6"],
)
def test_an_oblique_classifier_s_fractions_must_sum_to_one(tmp_path, change, shown):
    # Issue 43: fractions in [0, 1] were checked, not their sum: a leaf whose fractions
    # summed to 0.5, or 0, loaded.
    document, _ = _labelled_document(tmp_path, "oblique")
    tree = document["oblique_tree"]
    leaf = tree["children_left"].index(-1)
    n_outputs = tree["n_outputs"]
    row = tree["value"][leaf * n_outputs : (leaf + 1) * n_outputs]
    tree["value"][leaf * n_outputs : (leaf + 1) * n_outputs] = change(row)
    _refused(
        tmp_path,
        document,
        rf"node {leaf} has value {shown} \(weighted_n_node_samples [0-9.]+\): a classifier's "
        r"class fractions must sum to 1",
    )
