"""The prediction paths of issue 17: a serial walk for small batches and a parallel one for
large ones (the same leaves), the walk's packed arrays cached on the tree (and rebuilt
whenever the tree changes), and the quick check of a plain float array."""

import pickle

import numpy as np
import pandas as pd
import pytest

from gpu_tree import DecisionTreeClassifier, DecisionTreeRegressor
from gpu_tree.data import validation
from gpu_tree.data.validation import check_X
from gpu_tree.kernels.cpu import binning as cpu_binning
from gpu_tree.kernels.cpu import prediction as cpu_prediction
from gpu_tree.model import tree as tree_module
from gpu_tree.model.tree import Tree


def _numeric_data(n=3000, n_features=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    X[rng.random(X.shape) < 0.05] = np.nan  # missing values take the learned side
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2 > 0.7).astype(int)
    return X, y


def _categorical_frame(n=2000, seed=1):
    rng = np.random.default_rng(seed)
    colour = rng.choice(["red", "green", "blue", "ochre", "teal", None], size=n)
    size = rng.normal(size=n)
    y = ((colour == "red") | (colour == "teal")) ^ (size > 0.5)
    return pd.DataFrame({"colour": colour, "size": size}), y.astype(int)


def _fitted(name):
    """A fitted model of each kind of split, and the X it was fitted on (fitted afresh:
    some tests change the tree)."""
    if name in ("numeric", "regressor"):
        X, y = _numeric_data()
        if name == "numeric":
            return DecisionTreeClassifier(device="cpu", random_state=0).fit(X, y), X
        return DecisionTreeRegressor(device="cpu").fit(X, np.nan_to_num(X[:, 2]) + y), X
    frame, labels = _categorical_frame()
    params = dict(device="cpu", categorical_features=["colour"])
    if name == "multiway":
        params["categorical_split"] = "multiway"
    return DecisionTreeClassifier(**params).fit(frame, labels), frame


KINDS = ["numeric", "regressor", "subset", "multiway"]


@pytest.mark.parametrize("name", KINDS)
def test_serial_and_parallel_walks_reach_the_same_leaves(name):
    model, X = _fitted(name)
    codes = model._validate_X_predict(X)  # categories coded, NaN kept
    codes = np.vstack([codes, np.full((3, codes.shape[1]), np.nan)])  # all missing
    arrays = model.tree_.walk_arrays()
    serial = np.full(codes.shape[0], -7, dtype=np.int64)
    parallel = np.full(codes.shape[0], -7, dtype=np.int64)
    cpu_prediction.predict_leaves_serial(codes, *arrays, serial)
    cpu_prediction.predict_leaves(codes, *arrays, parallel)
    np.testing.assert_array_equal(serial, parallel)
    assert np.all(model.tree_.children_left[serial] == -1)  # every row ends on a leaf
    assert model.tree_.n_leaves > 4  # a tree worth walking


WALKS = (
    "predict_leaves",
    "predict_leaves_serial",
    "predict_leaves_lockstep",
    "predict_leaves_lockstep_parallel",
)


def _record_walks(monkeypatch):
    """The CPU walks called from here on, by name, in order."""
    calls = []
    for kernel in WALKS:
        original = getattr(cpu_prediction, kernel)
        monkeypatch.setattr(
            cpu_prediction,
            kernel,
            lambda *args, kernel=kernel, original=original: (calls.append(kernel), original(*args)),
        )
    return calls


@pytest.mark.parametrize("name", KINDS)
def test_predictions_do_not_depend_on_the_batch_size_thresholds(name, monkeypatch):
    model, X = _fitted(name)
    numeric = name in ("numeric", "regressor")
    calls = _record_walks(monkeypatch)
    results = {}
    for parallel_min, lockstep_min, expected in [
        (1, 1, "predict_leaves_lockstep_parallel" if numeric else "predict_leaves"),
        (1, 10**9, "predict_leaves"),
        (10**9, 1, "predict_leaves_lockstep" if numeric else "predict_leaves_serial"),
        (10**9, 10**9, "predict_leaves_serial"),
    ]:
        monkeypatch.setattr(tree_module, "PARALLEL_MIN_ROWS", parallel_min)
        monkeypatch.setattr(tree_module, "LOCKSTEP_MIN_ROWS", lockstep_min)
        calls.clear()
        results[expected] = (model.apply(X), model.predict(X))
        assert set(calls) == {expected}
    first, *others = results.values()
    for other in others:
        for a, b in zip(first, other, strict=True):
            np.testing.assert_array_equal(a, b)


def test_each_batch_size_takes_its_walk(monkeypatch):
    """Small batches: the serial walk; from LOCKSTEP_MIN_ROWS rows (numeric trees): the
    lock-step walk; from PARALLEL_MIN_ROWS: its parallel twin. The last row's prediction
    is the same whichever walk carried it."""
    model, X = _fitted("numeric")
    calls = _record_walks(monkeypatch)
    big = np.tile(X, (tree_module.PARALLEL_MIN_ROWS // len(X) + 1, 1))
    lockstep, parallel = tree_module.LOCKSTEP_MIN_ROWS, tree_module.PARALLEL_MIN_ROWS
    assert 1 < lockstep < parallel
    for rows, kernel in [
        (1, "predict_leaves_serial"),
        (lockstep - 1, "predict_leaves_serial"),
        (lockstep, "predict_leaves_lockstep"),
        (parallel - 1, "predict_leaves_lockstep"),
        (parallel, "predict_leaves_lockstep_parallel"),
    ]:
        calls.clear()
        one_by_one = model.predict_proba(big[:rows])
        assert calls == [kernel], rows
        np.testing.assert_array_equal(one_by_one[-1:], model.predict_proba(big[rows - 1 : rows]))


@pytest.mark.parametrize("name", KINDS)
def test_the_lockstep_walk_reaches_the_general_walks_leaves(name):
    """Every row, missing values, values equal to a threshold, infinities and batches
    that are not a multiple of LOCKSTEP_ROWS included; trees with category splits have
    no lock-step table."""
    model, X = _fitted(name)
    tree = model.tree_
    arrays = tree.lockstep_arrays()
    if name not in ("numeric", "regressor"):
        assert arrays is None
        return
    codes = model._validate_X_predict(X)
    internal = np.flatnonzero(tree.children_left >= 0)
    at_threshold = np.zeros((internal.size, codes.shape[1]))
    at_threshold[np.arange(internal.size), tree.feature[internal]] = tree.threshold[internal]
    rng = np.random.default_rng(3)
    extremes = rng.choice([np.nan, np.inf, -np.inf, 0.0], size=(50, codes.shape[1]))
    rows = np.vstack([codes, at_threshold, extremes, np.full((3, codes.shape[1]), np.nan)])
    for n in (rows.shape[0], 1, cpu_prediction.LOCKSTEP_ROWS + 3):
        general = np.full(n, -7, dtype=np.int64)
        lockstep = np.full(n, -7, dtype=np.int64)
        lockstep_parallel = np.full(n, -7, dtype=np.int64)
        cpu_prediction.predict_leaves_serial(rows[:n], *tree.walk_arrays(), general)
        cpu_prediction.predict_leaves_lockstep(rows[:n], *arrays, lockstep)
        cpu_prediction.predict_leaves_lockstep_parallel(rows[:n], *arrays, lockstep_parallel)
        np.testing.assert_array_equal(lockstep, general)
        np.testing.assert_array_equal(lockstep_parallel, general)
    assert tree.lockstep_arrays() is arrays  # packed once
    steps, threshold = arrays
    assert np.shares_memory(threshold, tree.threshold)  # the live thresholds
    leaves = np.flatnonzero(tree.children_left < 0)
    np.testing.assert_array_equal(steps[leaves, cpu_prediction.STEP_LEFT], leaves)
    np.testing.assert_array_equal(steps[leaves, cpu_prediction.STEP_RIGHT], leaves)


# -- the cached walk arrays -----------------------------------------------------------------


def test_the_walk_arrays_are_packed_once_per_tree():
    model, _ = _fitted("subset")
    tree = model.tree_
    first = tree.walk_arrays()
    assert tree.walk_arrays() is first
    nodes = first[0]
    assert nodes.shape == (tree.node_count, len(cpu_prediction.WALK_NODE_COLUMNS))
    for column, name in enumerate(cpu_prediction.WALK_NODE_COLUMNS):
        np.testing.assert_array_equal(nodes[:, column], getattr(tree, name))


def test_building_the_tree_after_a_walk_rebuilds_the_walk_arrays():
    tree = Tree(n_features=1, n_classes=2)
    tree.add_nodes([0], [0.5], [4], [4.0], [[0.5, 0.5]])
    X = np.array([[-1.0], [1.0]])
    np.testing.assert_array_equal(tree.apply(X), [0, 0])  # a lone leaf; walk arrays cached
    children = tree.add_nodes([1, 1], [0.0, 0.0], [2, 2], [2.0, 2.0], [[1, 0], [0, 1]])
    tree.set_numeric_splits([0], [0], [0.0], [0], [children[0]], [children[1]], [0])
    np.testing.assert_array_equal(tree.apply(X), [1, 2])
    np.testing.assert_array_equal(tree.predict(X), [[1, 0], [0, 1]])


def test_pickling_keeps_predictions_and_drops_the_cache():
    for name in KINDS:
        model, X = _fitted(name)
        expected = model.predict(X)
        model.tree_.walk_arrays()
        copy = pickle.loads(pickle.dumps(model))
        assert copy.tree_.__dict__["_walk"] is None
        np.testing.assert_array_equal(copy.predict(X), expected)


def test_pruning_set_params_and_refitting_give_fresh_predictions():
    X, y = _numeric_data()
    X_other, y_other = _numeric_data(seed=5)
    model = DecisionTreeClassifier(device="cpu", random_state=0).fit(X, y)
    full_count = model.tree_.node_count
    model.apply(X)  # the full tree's walk arrays, cached
    # Reduced-error pruning replaces the tree: its walk has the pruned tree's nodes.
    model.reduced_error_prune(X_other, y_other)
    assert model.tree_.node_count < full_count
    pruned_leaves = model.apply(X)
    assert pruned_leaves.max() < model.tree_.node_count
    assert np.all(model.tree_.children_left[pruned_leaves] == -1)
    # set_params then fit: the same as a new estimator with those parameters.
    model.set_params(ccp_alpha=0.002).fit(X, y)
    fresh = DecisionTreeClassifier(device="cpu", random_state=0, ccp_alpha=0.002).fit(X, y)
    np.testing.assert_array_equal(model.apply(X), fresh.apply(X))
    np.testing.assert_array_equal(model.predict_proba(X), fresh.predict_proba(X))
    # Refitting on other data: the new tree's predictions, not the old tree's.
    model.set_params(ccp_alpha=0.0).fit(X_other, y_other)
    fresh = DecisionTreeClassifier(device="cpu", random_state=0).fit(X_other, y_other)
    np.testing.assert_array_equal(model.apply(X), fresh.apply(X))
    np.testing.assert_array_equal(model.predict(X), fresh.predict(X))


def test_the_walked_arrays_are_read_only_and_the_others_stay_live():
    model, X = _fitted("numeric")
    tree = model.tree_
    tree.walk_arrays()
    for name in cpu_prediction.WALK_NODE_COLUMNS:
        with pytest.raises(ValueError, match="read-only"):
            getattr(tree, name)[0] = 0
    # A threshold written in place is read by the next walk (the walk reads the tree's
    # own threshold array), as are the leaves' values.
    went_left = model.decision_path(X)[:, tree.children_left[0]].toarray().ravel()
    assert 0 < went_left.sum() < len(X)
    tree.threshold[0] = np.inf  # every present value goes left at the root
    present = ~np.isnan(X[:, tree.feature[0]])
    went_left = model.decision_path(X)[:, tree.children_left[0]].toarray().ravel()
    assert np.all(went_left[present] == 1)
    leaf = int(model.apply(X[:1])[0])
    tree.value[leaf, 0, :] = [0.25, 0.75]
    np.testing.assert_array_equal(model.predict_proba(X[:1]), [[0.25, 0.75]])
    assert model.predict(X[:1])[0] == 1


# -- the classes of many rows ---------------------------------------------------------------


def test_classes_of_many_and_few_nodes_agree_on_ties():
    tree = Tree(n_features=1, n_classes=3)
    tree.add_nodes(
        [0, 1, 1], [0.5] * 3, [4] * 3, [4.0] * 3, [[0.5, 0.5, 0], [0, 0.5, 0.5], [1, 0, 0]]
    )
    nodes = np.array([0, 1, 2, 1, 0])
    few = tree.classes_of(nodes[:2])  # fewer nodes than the tree: argmax per row
    many = tree.classes_of(nodes)  # more: argmax per node, looked up
    np.testing.assert_array_equal(few, [0, 1])
    np.testing.assert_array_equal(many, [0, 1, 0, 1, 0])


# -- the quick check of a plain float array --------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_c_contiguous_float_array_passes_unchanged(dtype):
    X = np.arange(12, dtype=dtype).reshape(4, 3)
    assert check_X(X, n_features_expected=3) is X


@pytest.mark.parametrize("size", ["small", "large"])
def test_infinity_is_refused_naming_its_column_and_row_at_every_size(size, monkeypatch):
    # "large": past the size from which the parallel kernel searches (made small here).
    monkeypatch.setattr(validation, "PARALLEL_CHECK_MIN_VALUES", 64)
    rows = 10 if size == "small" else 100
    # fitted first: its binning asks the same kernel for the NaNs
    model = DecisionTreeRegressor(device="cpu").fit(np.arange(40.0).reshape(10, 4), np.arange(10))
    searched = []
    kernel = cpu_binning.nonfinite_columns  # validation imports the kernels where used
    monkeypatch.setattr(cpu_binning, "nonfinite_columns", lambda X: searched.append(1) or kernel(X))
    X = np.zeros((rows, 4))
    X[rows - 1, 2] = -np.inf
    with pytest.raises(ValueError, match=f"column 2 at row {rows - 1}"):
        check_X(X)
    with pytest.raises(ValueError, match=f"column 2 at row {rows - 1}"):
        model.predict(X)
    assert bool(searched) == (size == "large")
    assert check_X(np.ones((rows, 4))).shape == (rows, 4)  # and none: passes


def test_other_layouts_predict_as_the_plain_array():
    model, X = _fitted("numeric")
    expected = model.predict_proba(X)
    for variant in (
        np.asfortranarray(X),
        X.astype(">f8"),
        X.tolist(),
        np.hstack([X, X])[:, : X.shape[1]],  # a strided view
    ):
        np.testing.assert_array_equal(model.predict_proba(variant), expected)
    with pytest.raises(ValueError, match="X has 5 features"):
        model.predict(X[:, :5])
    with pytest.raises(ValueError, match="0 sample"):
        model.predict(X[:0])


def test_float32_rows_reach_the_leaves_of_their_float64_values():
    model, X = _fitted("regressor")
    X32 = X.astype(np.float32)
    np.testing.assert_array_equal(model.predict(X32), model.predict(X32.astype(np.float64)))
