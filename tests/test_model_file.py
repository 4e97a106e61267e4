"""Model files: exact round trips, atomic writes, and a clear error for every bad file."""

from __future__ import annotations

import json
import os
import pickle

import numpy as np
import pytest

import gpu_tree
from gpu_tree import DecisionTreeClassifier, DecisionTreeRegressor, assert_tree_equal
from gpu_tree._compat import NotFittedError

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
        return DecisionTreeRegressor(max_depth=5, device="cpu", **params).fit(X, y * 2.5 + X[:, 2]), X
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
    frame = pd.DataFrame({
        "colour": np.array(["blue", "green", "plum", "red", "rose"], dtype=object)[X[:, 0].astype(int)],
        "size": X[:, 1], "weight": X[:, 2],
    })  # fmt: skip
    model = DecisionTreeClassifier(
        max_depth=4, categorical_features=["colour"], device="cpu"
    ).fit(frame, y)
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
    assert document["format"] == "gpu_tree.model" and document["format_version"] == 1
    assert document["library_version"] == gpu_tree.__version__
    assert document["estimator"] == "DecisionTreeClassifier"
    assert document["params"]["max_depth"] == 5
    assert len(document["binning"]["edges"]) == 3
    assert document["categorical"]["is_categorical"] == [True, False, False]
    assert len(document["tree"]["children_left"]) == model.tree_.node_count


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
    from gpu_tree._model_file import model_document

    return json.loads(json.dumps(model_document(model)))


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
        (lambda: _broken(lambda d: d.update(format_version=7)), "format_version 7 is not supported"),
        (lambda: _broken(lambda d: d.update(estimator="os.system")), "unknown estimator 'os.system'"),
        (lambda: _broken(lambda d: d["tree"]["feature"].pop()), "array 'feature' has"),
        (lambda: _broken(lambda d: d["tree"].pop("threshold")), "no field 'threshold'"),
        (lambda: _broken(lambda d: _set_child(d, 10_000)), "child 10000, out of range"),
        (lambda: _broken(lambda d: _set_child(d, 0)), "numbered before it: the tree would have a cycle"),
        (lambda: _broken(lambda d: d["tree"]["value"].__setitem__(0, "many")), "'many', which is not a number"),
        (lambda: _broken(lambda d: d["tree"]["children_left"].__setitem__(0, -1)), "half a leaf"),
        (lambda: _broken(lambda d: d["classes"]["values"].pop()), "1 class labels, but the tree has 2"),
        (lambda: _broken(lambda d: d.update(n_features_in=9)), "n_features_in is 9"),
        (lambda: _broken(lambda d: d["tree"]["branch_children"].clear()), "branch table is out of range"),
        (lambda: _broken(lambda d: d["categorical"].update(is_categorical=[False] * 3,
                                                          categories=[None] * 3)),
         "is not categorical"),
        (lambda: _broken(lambda d: d["tree"].update(node_count="7")), "'node_count' of the tree should be an integer"),
    ],
)  # fmt: skip
def test_bad_files_raise_value_error_naming_the_problem(tmp_path, make, message):
    path = _write(tmp_path, make())
    with pytest.raises(ValueError, match=message):
        gpu_tree.load(path)


def test_shared_child_is_refused(tmp_path):
    document = _document()
    tree = document["tree"]
    node = _first_internal(tree, kind=1)
    # Point a later numeric node's child at a node that already has a parent.
    later = [k for k in range(node + 1, len(tree["split_kind"]))
             if tree["split_kind"][k] == 1 and tree["children_left"][k] > k]  # fmt: skip
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
