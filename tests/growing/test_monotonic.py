"""Monotonicity constraints (``monotonic_cst``, issue 22), after scikit-learn's
test_monotonic_tree.py: constrained predictions are monotone along each constrained
feature, exact mode grows scikit-learn's tree, unconstrained fits are unchanged, the CUDA
backend (simulator) grows the CPU's tree, constrained fits take the compiled split scan
and grow the vectorised search's tree, and what scikit-learn refuses is refused."""

import numpy as np
import pytest
from _backends import without_compiled_search
from sklearn import tree as sk_tree

import gpu_tree
import gpu_tree.growing.grower as grower_module
from gpu_tree import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreeRegressor,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from gpu_tree.backends.cpu import CPUHistogramBackend
from gpu_tree.backends.cuda import CUDAHistogramBackend, cuda_status
from gpu_tree.testing import assert_tree_equal
from gpu_tree.utils.device_copies import to_host

CST = np.array([1, -1, 0, 0, 1])


def _data(seed, n=300, classification=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, CST.size))
    y = 2 * X[:, 0] - X[:, 1] + 0.5 * X[:, 2] - 0.3 * X[:, 4] + rng.normal(size=n)
    if classification:
        y = (y > 0).astype(np.int64)
    return X, y


def _response(model, X, classification):
    if classification:
        return model.predict_proba(X)[:, 1]
    return model.predict(X)


def assert_monotone(model, X, cst, classification, n_rows=40):
    """Vary each constrained feature over a grid, the others fixed at one of X's rows:
    the predictions must follow the constraint."""
    grid = np.linspace(X.min() - 1, X.max() + 1, 200)
    for feature in np.flatnonzero(cst):
        for row in X[:n_rows]:
            Z = np.repeat(row[None], grid.size, axis=0)
            Z[:, feature] = grid
            step = np.diff(_response(model, Z, classification)) * cst[feature]
            assert np.all(step >= 0), (feature, step.min())


@pytest.mark.parametrize("classification", [False, True])
@pytest.mark.parametrize("splitter", ["hist", "exact"])
@pytest.mark.parametrize("min_samples_leaf", [1, 5])
def test_predictions_are_monotone(classification, splitter, min_samples_leaf):
    make = DecisionTreeClassifier if classification else DecisionTreeRegressor
    for seed in range(3):
        X, y = _data(seed, classification=classification)
        for cst in (CST, -CST):
            model = make(
                splitter=splitter, min_samples_leaf=min_samples_leaf, monotonic_cst=cst
            ).fit(X, y)
            assert model.tree_.node_count > 3
            assert_monotone(model, X, cst, classification)
    free = make(splitter=splitter, min_samples_leaf=min_samples_leaf).fit(X, y)
    with pytest.raises(AssertionError):  # the check can fail: without constraints it does
        assert_monotone(free, X, CST, classification)


def test_monotone_with_missing_values_and_max_depth():
    X, y = _data(7)
    X[::6, 0] = np.nan
    X[::7, 1] = np.nan
    for splitter in ("hist", "exact"):
        model = DecisionTreeRegressor(splitter=splitter, monotonic_cst=CST, max_depth=6)
        assert_monotone(model.fit(X, y), np.nan_to_num(X), CST, False)


def test_values_stay_within_bounds_on_unconstrained_splits():
    """Leaves below a constrained split keep their values within its bounds even when
    later splits are on free features (scikit-learn clips node values)."""
    X, y = _data(3, n=500)
    model = DecisionTreeRegressor(monotonic_cst=[1, 0, 0, 0, 0], max_depth=8).fit(X, y)
    assert_monotone(model, X, np.array([1, 0, 0, 0, 0]), False, n_rows=100)


@pytest.mark.parametrize("classification", [False, True])
@pytest.mark.parametrize("splitter", ["hist", "exact"])
def test_unconstrained_fits_are_unchanged(classification, splitter):
    make = DecisionTreeClassifier if classification else DecisionTreeRegressor
    X, y = _data(1, classification=classification)
    plain = make(splitter=splitter, max_depth=6).fit(X, y)
    for cst in (None, np.zeros(CST.size, dtype=int), [0] * CST.size):
        other = make(splitter=splitter, max_depth=6, monotonic_cst=cst).fit(X, y)
        assert_tree_equal(plain.tree_, other.tree_, 0.0, 0.0)


def _sorted_splits(t):
    inner = t.children_left >= 0
    return sorted(zip(t.feature[inner].tolist(), t.threshold[inner].tolist(), strict=True))


@pytest.mark.parametrize("classification", [False, True])
@pytest.mark.parametrize("min_samples_leaf", [5, 10])
def test_exact_mode_grows_scikit_learns_tree(classification, min_samples_leaf):
    """Leaves of several rows: nodes of two or three rows have splits of tied scores on
    several features, which scikit-learn breaks at random (ours: the lowest feature), even
    without constraints. Binary class counts tie across features at any size: there, one
    feature at a time (within a feature both take the lowest threshold)."""
    for seed in range(3):
        X, y = _data(seed + 10, n=200, classification=classification)
        X = X.astype(np.float32).astype(np.float64)  # scikit-learn splits float32 values
        if classification:
            cases = [(X[:, [f]], [c]) for f in (0, 1, 4) for c in (1, -1)]
        else:
            cases = [(X, cst) for cst in (CST, -CST, [0, 0, 1, 0, 0])]
        for X_case, cst in cases:
            kwargs = {"monotonic_cst": cst, "min_samples_leaf": min_samples_leaf, "max_depth": 5}
            if classification:
                ours = DecisionTreeClassifier(splitter="exact", **kwargs).fit(X_case, y)
                theirs = sk_tree.DecisionTreeClassifier(random_state=0, **kwargs).fit(X_case, y)
            else:
                ours = DecisionTreeRegressor(splitter="exact", **kwargs).fit(X_case, y)
                theirs = sk_tree.DecisionTreeRegressor(random_state=0, **kwargs).fit(X_case, y)
            assert ours.tree_.node_count == theirs.tree_.node_count
            # Features alike; thresholds alike but for scikit-learn's float32 rounding.
            ours_splits = np.array(_sorted_splits(ours.tree_)).reshape(-1, 2)
            theirs_splits = np.array(_sorted_splits(theirs.tree_)).reshape(-1, 2)
            np.testing.assert_array_equal(ours_splits[:, 0], theirs_splits[:, 0])
            np.testing.assert_allclose(ours_splits[:, 1], theirs_splits[:, 1], rtol=1e-6)
            rng = np.random.default_rng(seed)
            for Z in (X_case, rng.normal(size=(500, X_case.shape[1])).astype(np.float32) * 2):
                np.testing.assert_allclose(
                    _response(ours, Z, classification),
                    _response(theirs, Z, classification),
                    atol=1e-12,
                )


def test_cuda_tree_equals_cpu_tree():
    usable, reason, _ = cuda_status()
    if not usable:
        pytest.skip(f"CUDA backend not usable: {reason}")
    X, y = _data(5, n=200)
    X[::9, 0] = np.nan
    for classification in (False, True):
        target = (y > 0).astype(int) if classification else y
        make = DecisionTreeClassifier if classification else DecisionTreeRegressor
        for splitter in ("hist",):  # exact search runs on the CPU only
            cpu = make(splitter=splitter, max_depth=5, monotonic_cst=CST, device="cpu")
            cuda = make(splitter=splitter, max_depth=5, monotonic_cst=CST, device="cuda")
            cpu.fit(X, target)
            cuda.fit(X, target)
            assert cuda.device_ == "cuda"
            assert_tree_equal(cpu.tree_, cuda.tree_)


def _counting_constrained_scans(patch, backend, calls):
    """Patch ``backend``'s ``score_splits`` to count in ``calls`` the compiled searches
    it runs with some monotonicity constraint."""
    original = backend.__dict__["score_splits"]
    scan = original.__func__ if isinstance(original, staticmethod) else original

    def counting(*args):
        search = args[-1]  # a method's or a static method's: the CompiledSearch last
        if np.any(to_host(search.monotonic_cst)):
            calls.append(search.slots.shape[0])
        return scan(*args)

    patch.setattr(
        backend, "score_splits", staticmethod(counting) if scan is not original else counting
    )


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("classification", [False, True])
def test_constrained_fits_take_the_compiled_scan(monkeypatch, device, classification):
    """Every level of a constrained fit is searched by the backend's compiled scan (the
    fused kernel on a GPU), with its constraints, and the tree is the vectorised search's
    node for node (level-wise: the CPU's subtree finisher would grow it at once)."""
    monkeypatch.setattr(grower_module, "FINISH_BELOW_ROWS", 0)
    monkeypatch.setattr(grower_module, "FINISH_ROOT_BELOW_ROWS", 0)
    if device == "cuda":
        usable, reason, _ = cuda_status()
        if not usable:
            pytest.skip(f"CUDA backend not usable: {reason}")
    backend = CUDAHistogramBackend if device == "cuda" else CPUHistogramBackend
    make = DecisionTreeClassifier if classification else DecisionTreeRegressor
    X, y = _data(6, n=250, classification=classification)
    X[::8, 0] = np.nan
    X[::11, 4] = np.nan
    params = {"max_depth": 5, "min_samples_leaf": 3, "monotonic_cst": CST, "device": device}
    calls = []
    with monkeypatch.context() as patch:
        _counting_constrained_scans(patch, backend, calls)
        compiled = make(**params).fit(X, y)
    assert len(calls) >= 4  # a search per level
    with monkeypatch.context() as patch:
        patch.setattr(backend, "capabilities", without_compiled_search(backend))
        vectorised = make(**params).fit(X, y)
    assert compiled.tree_.node_count > 7
    assert_tree_equal(compiled.tree_, vectorised.tree_, 0.0, 0.0)
    assert_monotone(compiled, np.nan_to_num(X), CST, classification)


def test_params_and_model_file(tmp_path):
    model = DecisionTreeRegressor(monotonic_cst=[1, 0, -1, 0, 0])
    assert model.get_params()["monotonic_cst"] == [1, 0, -1, 0, 0]
    model.set_params(monotonic_cst=CST)
    X, y = _data(2)
    model.fit(X, y)
    model.save(tmp_path / "tree.json")
    loaded = gpu_tree.load(tmp_path / "tree.json")
    np.testing.assert_array_equal(loaded.monotonic_cst, CST)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def test_errors():
    X, y = _data(0, n=60)
    with pytest.raises(ValueError, match="monotonic_cst has shape 3 but the input data X"):
        DecisionTreeRegressor(monotonic_cst=[1, 0, 0]).fit(X, y)
    with pytest.raises(ValueError, match="array-like of -1, 0 or 1"):
        DecisionTreeRegressor(monotonic_cst=[2, 0, 0, 0, 0]).fit(X, y)
    with pytest.raises(ValueError, match="array-like of -1, 0 or 1"):
        DecisionTreeRegressor(monotonic_cst=[0.5, 0, 0, 0, 0]).fit(X, y)
    y3 = np.arange(60) % 3
    with pytest.raises(ValueError, match="not supported with multiclass classification"):
        DecisionTreeClassifier(monotonic_cst=CST).fit(X, y3)
    with pytest.raises(ValueError, match="multiclass"):  # as scikit-learn, even all zeros
        DecisionTreeClassifier(monotonic_cst=[0] * 5).fit(X, y3)
    X_cat = X.copy()
    X_cat[:, 2] = np.arange(60) % 4
    with pytest.raises(ValueError, match="constrains the categorical features \\[2\\]"):
        DecisionTreeRegressor(categorical_features=[2], monotonic_cst=[0, 0, 1, 0, 0]).fit(X_cat, y)
    # A free categorical feature beside constrained numeric ones: allowed, and monotone.
    model = DecisionTreeRegressor(categorical_features=[2], monotonic_cst=CST).fit(X_cat, y)
    assert_monotone(model, X_cat, CST, False)


@pytest.mark.parametrize(
    "make", [RandomForestRegressor, RandomForestClassifier], ids=["regressor", "classifier"]
)
def test_forests_pass_constraints_on(make):
    classification = make is RandomForestClassifier
    X, y = _data(4, classification=classification)
    forest = make(n_estimators=4, max_depth=6, random_state=0, monotonic_cst=CST).fit(X, y)
    assert_monotone(forest, X, CST, classification, n_rows=15)


@pytest.mark.parametrize(
    "model",
    [
        ExtraTreeRegressor(random_state=0, monotonic_cst=CST),
        DecisionTreeRegressor(max_leaf_nodes=20, monotonic_cst=CST),
        DecisionTreeRegressor(max_leaf_nodes=20, splitter="exact", monotonic_cst=CST),
        DecisionTreeRegressor(max_features=2, random_state=0, monotonic_cst=CST),
        ExtraTreesRegressor(n_estimators=3, random_state=0, monotonic_cst=CST),
    ],
    ids=["extra-tree", "best-first", "best-first-exact", "max-features", "extra-trees"],
)
def test_other_growth_modes_are_monotone(model):
    X, y = _data(3)
    assert_monotone(model.fit(X, y), X, CST, False)
