"""scikit-learn's conventions on a fitted tree (issue 22): ``tree_.n_classes`` is an intp
array of one entry per output, as scikit-learn's, so that code written for scikit-learn's
trees (``tree_.n_classes[0]``) runs unchanged on ours."""

import json
import pickle

import numpy as np
import pytest

import gpu_tree
from gpu_tree import DecisionTreeClassifier, DecisionTreeRegressor

sklearn_tree = pytest.importorskip("sklearn.tree")
datasets = pytest.importorskip("sklearn.datasets")


def _data(kind):
    if kind == "binary":
        X, y = datasets.load_breast_cancer(return_X_y=True)
    elif kind == "multiclass":
        X, y = datasets.load_wine(return_X_y=True)
    else:
        X, y = datasets.load_diabetes(return_X_y=True)
    return X.astype(np.float32), y


@pytest.mark.parametrize("kind", ["binary", "multiclass", "regressor"])
def test_tree_arrays_have_scikit_learns_types_and_shapes(kind):
    X, y = _data(kind)
    if kind == "regressor":
        ours = DecisionTreeRegressor(max_depth=3, device="cpu").fit(X, y)
        theirs = sklearn_tree.DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
    else:
        ours = DecisionTreeClassifier(max_depth=3, device="cpu").fit(X, y)
        theirs = sklearn_tree.DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    a, b = ours.tree_, theirs.tree_
    assert isinstance(a.n_classes, np.ndarray)
    np.testing.assert_array_equal(a.n_classes, b.n_classes)
    assert a.n_classes.dtype == b.n_classes.dtype == np.intp
    assert a.n_classes.shape == b.n_classes.shape == (1,)
    assert a.n_classes[0] == (1 if kind == "regressor" else len(theirs.classes_))
    assert a.max_n_classes == b.max_n_classes and isinstance(a.max_n_classes, int)
    assert a.n_outputs == b.n_outputs == 1
    assert a.n_features == b.n_features
    assert a.value.shape[1:] == b.value.shape[1:] == (1, a.max_n_classes)
    assert a.value.shape[0] == a.node_count


def test_n_classes_is_read_only_and_a_copy():
    X, y = _data("multiclass")
    tree = DecisionTreeClassifier(max_depth=2, device="cpu").fit(X, y).tree_
    with pytest.raises(AttributeError):
        tree.n_classes = np.array([5])
    tree.n_classes[0] = 7  # a new array on each read: the tree is unchanged
    assert tree.n_classes.tolist() == [3] and tree.max_n_classes == 3


@pytest.mark.parametrize(
    "make",
    [
        lambda: gpu_tree.ExtraTreeClassifier(max_depth=3, random_state=0, device="cpu"),
        lambda: gpu_tree.RandomForestClassifier(n_estimators=2, random_state=0, device="cpu"),
        lambda: gpu_tree.ObliqueDecisionTreeClassifier(max_depth=2, random_state=0),
    ],
    ids=["extra_tree", "forest", "oblique"],
)
def test_every_tree_kind_has_the_array(make):
    X, y = _data("multiclass")
    model = make().fit(X, y)
    trees = [e.tree_ for e in model.estimators_] if hasattr(model, "estimators_") else [model.tree_]
    for tree in trees:
        assert tree.n_classes.tolist() == [3] and tree.n_classes.dtype == np.intp
        assert tree.max_n_classes == 3 and tree.value.shape[2] == 3
    regressor = gpu_tree.ObliqueDecisionTreeRegressor(max_depth=2, random_state=0)
    regressor.fit(*_data("regressor"))
    assert regressor.tree_.n_classes.tolist() == [1] and regressor.tree_.max_n_classes == 1


def test_model_files_keep_the_int_and_load_the_array(tmp_path):
    X, y = _data("multiclass")
    model = DecisionTreeClassifier(max_depth=2, device="cpu").fit(X, y)
    path = tmp_path / "tree.json"
    model.save(path)
    assert json.loads(path.read_text())["tree"]["n_classes"] == 3  # the format is unchanged
    loaded = gpu_tree.load(path)
    assert loaded.tree_.n_classes.tolist() == [3] and loaded.tree_.max_n_classes == 3
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))


def test_pickles_old_and_new():
    X, y = _data("multiclass")
    model = DecisionTreeClassifier(max_depth=2, device="cpu").fit(X, y)
    copy = pickle.loads(pickle.dumps(model))
    assert copy.tree_.n_classes.tolist() == [3] and copy.tree_.max_n_classes == 3
    # A tree pickled when n_classes was its int attribute.
    state = model.tree_.__getstate__()
    state["n_classes"] = state.pop("max_n_classes")
    old = gpu_tree.Tree.__new__(gpu_tree.Tree)
    old.__setstate__(state)
    assert old.n_classes.tolist() == [3] and old.max_n_classes == 3
    np.testing.assert_array_equal(old.predict(X), model.tree_.predict(X))
    # A pickle keeps capacity, as scikit-learn's (found by tests/quality/sklearn_yardstick.py);
    # the tree still grows past it. (Best-first growth: its arrays keep spare room.)
    model = DecisionTreeClassifier(max_depth=2, max_leaf_nodes=4, device="cpu").fit(X, y)
    copy = pickle.loads(pickle.dumps(model))
    assert copy.tree_.capacity == model.tree_.capacity > copy.tree_.node_count
    before = copy.tree_.node_count
    copy.tree_.add_nodes([3] * 70, [0.0] * 70, [1] * 70, [1.0] * 70, np.ones((70, 3)) / 3)
    assert copy.tree_.node_count == before + 70 and copy.tree_.capacity >= before + 70
    np.testing.assert_array_equal(copy.tree_.predict(X), model.tree_.predict(X))


def test_tree_decision_path_is_scikit_learns():
    # tree_.decision_path(X): the CSR indicator scikit-learn's Tree has, the estimator's.
    X, y = _data("multiclass")
    model = DecisionTreeClassifier(max_depth=3, device="cpu").fit(X, y)
    path = model.tree_.decision_path(np.asarray(X, dtype=np.float64))
    assert path.shape == (len(X), model.tree_.node_count)
    assert (path != model.decision_path(X)).nnz == 0
    np.testing.assert_array_equal(path.sum(axis=1).A.ravel(), model.tree_.depth[model.apply(X)] + 1)


@pytest.mark.parametrize("kind", ["multiclass", "regressor"])
def test_scikit_learns_graphviz_export_reads_our_trees(kind):
    # scikit-learn's exporter reads tree_.n_classes[0], tree_.n_outputs and tree_.value:
    # it runs on our trees unchanged, and shows the same boxes as on its own tree.
    X, y = _data(kind)
    make = DecisionTreeRegressor if kind == "regressor" else DecisionTreeClassifier
    ours = make(max_depth=2, splitter="exact", device="cpu").fit(X, y)
    source = sklearn_tree.export_graphviz(ours)
    assert source.startswith("digraph Tree {") and "x[" in source
    assert source.count(" [label=") == ours.tree_.node_count
    theirs_make = getattr(sklearn_tree, make.__name__)
    theirs = theirs_make(max_depth=2, random_state=0).fit(X, y)

    def boxes(dot):  # the labels, in preorder (both exporters walk the tree depth first)
        return [line.split(" [label=", 1)[1] for line in dot.splitlines() if "[label=" in line]

    assert boxes(source) == boxes(sklearn_tree.export_graphviz(theirs))
