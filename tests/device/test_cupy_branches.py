"""The CuPy-only branches of the CUDA backend, run without a GPU (issue 42, item 5).

Under the simulator the backend's array module is numpy, so the branches taken when it is
CuPy never ran, and numpy forgives what CuPy refuses. Here ``xp`` is the strict stand-in
of ``tests/_strict_cupy.py`` (numpy arrays wrapped to refuse what CuPy refuses), the
kernels still run in the simulator, and every fit must grow the CPU's tree.

Found: ``CategoryMaps.fit`` (data/categorical.py) read X with ``np.asarray``, so a fit
on a CuPy X with ``categorical_features`` failed (``Implicit conversion to a NumPy
array``); fixed, and tested below.

Branches the stand-in still cannot reach, and why:

- ``backends/cuda.py``, ``cuda_status``'s GPU path (``_cupy_or_none``, the driver's
  device count, "NVIDIA GPU", the probe kernel's GPU grid): they ask the driver; the
  stand-in answers ``cuda_status`` itself.
- ``current_stream``'s ``cuda.external_stream(ptr)``: the line runs, but the simulator
  has no external streams, so a simulator stream stands in: numba's wrapping of a real
  CuPy stream, and the order of CuPy work and kernels on it, are not checked.
- Launches: numba-cuda's own reading of CuPy arrays (``__cuda_array_interface__``,
  strided views typed as layout "A"): the stand-in hands the simulator the wrapped
  arrays; it only refuses host arrays and 0-d device arrays as kernel arguments.
- A distributed worker's branches: ``largest_squared_deviations``,
  ``squared_deviation_parts`` and ``_record_sizes`` without sizes (device row counts),
  and ``dask/device_shards.py``: reached through a dask cluster only, not run here.
- ``splitting._select_in_chunk``'s compact-input padding on the device: the CUDA backend
  builds no compact histograms (``small_node_size = 0``) and random-threshold batches are
  searched on the host, so no device fit reaches it, on a GPU either.
- What CuPy does differently inside a call it accepts (dtype promotion, wrap-around of
  out-of-bounds indices, its kernels' rounding) and the device's memory and timing
  (``memGetInfo``, the memory pool, asynchronous streams): numpy's and the stand-in's
  answers stand in for them.
"""

import sys
import warnings

import _strict_cupy
import numpy as np
import pytest
from _strict_cupy import StrictArray, StrictCupy, install
from numba import config
from scipy import sparse

from gpu_tree import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreeClassifier,
    RandomForestClassifier,
    RandomForestRegressor,
    assert_tree_equal,
)

pytestmark = pytest.mark.skipif(
    not config.ENABLE_CUDASIM, reason="the strict CuPy stand-in runs under the CUDA simulator"
)


@pytest.fixture
def xp(monkeypatch):
    return install(monkeypatch)


def _classification(n=160, n_features=4, n_classes=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features)).round(1)
    y = ((X[:, 0] > 0) + (X[:, 1] > 0.5) + (rng.random(n) < 0.1)) % n_classes
    return X, y


def _regression(n=160, n_features=4, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features)).round(1)
    y = X[:, 0] - 2 * (X[:, 1] > 0) + 0.1 * rng.normal(size=n)
    return X, y


def _cpu_and_cuda(make, X, y, xp, sample_weight=None, device_X=True, **params):
    """The same model fitted on the CPU and (X copied to the stand-in's "device" when
    ``device_X``) with device="cuda"."""
    cpu = make(device="cpu", **params).fit(X, y, sample_weight=sample_weight)
    X_cuda = xp.asarray(X) if device_X else X
    cuda = make(device="cuda", **params).fit(X_cuda, y, sample_weight=sample_weight)
    assert cuda.device_ == "cuda"
    return cpu, cuda


def _host(array):
    assert isinstance(array, StrictArray), f"expected a device array, got {type(array)}"
    return array.get()


# -- the stand-in refuses what CuPy refuses -----------------------------------------------
def test_the_stand_in_refuses_what_cupy_refuses():
    xp = StrictCupy()
    d, h = xp.arange(6.0), np.arange(6.0)
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array"):
        np.asarray(d)
    with pytest.raises(TypeError, match="Implicit conversion"):
        h[d[1:2]]  # a device array as a host array's index
    for mixed in (lambda: d + h, lambda: h + d, lambda: xp.concatenate([d, h])):
        with pytest.raises(TypeError, match="Unsupported type"):
            mixed()
    with pytest.raises(TypeError):
        float(d)  # more than one element
    with pytest.raises(TypeError):
        range(d.sum().astype(np.int64))  # no __index__
    with pytest.raises(ValueError, match="ambiguous"):
        bool(d > 1)
    with pytest.raises(ValueError, match="non-scalar numpy.ndarray cannot be used for fill"):
        d[1:3] = h[:2]  # basic indexing fills: CuPy refuses host arrays there
    with pytest.raises(TypeError, match="initial"):
        d.max(initial=0)  # CuPy's signature has no initial
    if _strict_cupy._cupy is not None:  # names are checked against an installed CuPy
        with pytest.raises(AttributeError, match="module 'cupy' has no attribute 'insert'"):
            xp.insert  # noqa: B018 - numpy has it, CuPy 14 not
    # What CuPy allows: 0-d conversions, len, iteration (0-d device arrays), host index
    # arrays and values under advanced indexing, explicit copies.
    assert float(d.sum()) == 15.0 and int(d[2]) == 2 and len(d) == 6
    assert all(isinstance(v, StrictArray) and v.ndim == 0 for v in d)
    d[np.array([1, 2])] = h[:2]
    assert d.get().tolist() == [0.0, 0.0, 1.0, 3.0, 4.0, 5.0]
    assert isinstance(d.sum(), StrictArray)  # reductions stay on the device
    copy = xp.asarray(h)
    copy[0] = 9.0
    assert h[0] == 0.0  # a copy to the "device", never an alias


# -- fits through the public estimators ---------------------------------------------------
@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_dense_classification_equals_cpu(xp, criterion):
    X, y = _classification()
    cpu, cuda = _cpu_and_cuda(DecisionTreeClassifier, X, y, xp, criterion=criterion, max_depth=5)
    assert_tree_equal(cuda.tree_, cpu.tree_)
    X_device = xp.asarray(X)
    np.testing.assert_array_equal(_host(cuda.predict(X_device)), cpu.predict(X))
    np.testing.assert_array_equal(_host(cuda.predict_proba(X_device)), cpu.predict_proba(X))
    np.testing.assert_array_equal(_host(cuda.apply(X_device)), cpu.apply(X))
    np.testing.assert_array_equal(cuda.predict(X), cpu.predict(X))  # host in, host out


def test_string_labels_come_back_to_the_host(xp):
    X, y = _classification(n_classes=2)
    labels = np.array(["no", "yes"])[y]
    cpu, cuda = _cpu_and_cuda(DecisionTreeClassifier, X, labels, xp, max_depth=3)
    np.testing.assert_array_equal(cuda.predict(xp.asarray(X)), cpu.predict(X))


def test_weighted_regression_equals_cpu(xp):
    X, y = _regression()
    weight = np.random.default_rng(2).integers(0, 4, size=y.size).astype(float)  # zeros drop
    cpu, cuda = _cpu_and_cuda(
        DecisionTreeRegressor, X, y, xp, sample_weight=weight, max_depth=5, min_samples_leaf=2
    )
    assert_tree_equal(cuda.tree_, cpu.tree_, impurity_rtol=0, value_rtol=0)
    np.testing.assert_array_equal(_host(cuda.predict(xp.asarray(X))), cpu.predict(X))


def test_weighted_classification_with_max_features_equals_cpu(xp):
    X, y = _classification(n_features=6)
    weight = np.random.default_rng(3).random(y.size) + 0.5
    params = dict(max_depth=5, max_features=3, random_state=4)
    cpu, cuda = _cpu_and_cuda(DecisionTreeClassifier, X, y, xp, sample_weight=weight, **params)
    assert_tree_equal(cuda.tree_, cpu.tree_)


def test_missing_values_equal_cpu(xp):
    X, y = _classification(n=180, n_classes=2, seed=5)
    hidden = np.random.default_rng(6).random(X.shape) < 0.2
    y[hidden[:, 0]] = 1
    X[hidden] = np.nan
    cpu, cuda = _cpu_and_cuda(DecisionTreeClassifier, X, y, xp, max_depth=5)
    assert_tree_equal(cuda.tree_, cpu.tree_)
    X_device = xp.asarray(X)
    np.testing.assert_array_equal(_host(cuda.predict_proba(X_device)), cpu.predict_proba(X))
    target = np.nan_to_num(X[:, 0], nan=3.0) + np.nan_to_num(X[:, 1])
    cpu, cuda = _cpu_and_cuda(DecisionTreeRegressor, X, target, xp, max_depth=4)
    assert_tree_equal(cuda.tree_, cpu.tree_, impurity_rtol=0, value_rtol=0)


def _categorical_data(n=240, seed=7):
    rng = np.random.default_rng(seed)
    colour = rng.integers(0, 6, size=n).astype(float)
    X = np.column_stack([colour, rng.normal(size=n).round(1), rng.integers(0, 4, size=n)])
    y = (np.isin(colour, [1, 4, 5]) ^ (X[:, 1] > 0.8)).astype(int)
    X[rng.random(n) < 0.1, 0] = np.nan
    return X, y


@pytest.mark.parametrize("categorical_split", ["binary", "multiway"])
def test_categorical_splits_equal_cpu(xp, categorical_split):
    """Subset splits found by the vectorised categorical search running on the device
    (splitting._score_categorical through CuPy), and multiway splits; X given on the
    device to predict goes through categorical.with_codes' CuPy branch."""
    X, y = _categorical_data()
    params = dict(max_depth=4, categorical_features=[0, 2], categorical_split=categorical_split)
    cpu, cuda = _cpu_and_cuda(DecisionTreeClassifier, X, y, xp, device_X=False, **params)
    assert (cpu.tree_.split_kind != 0).any(), "the test needs categorical splits"
    assert_tree_equal(cuda.tree_, cpu.tree_)
    X_device = xp.asarray(X)
    np.testing.assert_array_equal(_host(cuda.predict_proba(X_device)), cpu.predict_proba(X))
    cpu_r, cuda_r = _cpu_and_cuda(
        DecisionTreeRegressor, X, X[:, 1] + y, xp, device_X=False, **params
    )
    assert_tree_equal(cuda_r.tree_, cpu_r.tree_, impurity_rtol=0, value_rtol=0)


# Fits with a categorical feature take the vectorised search (the compiled one knows no
# categories), through CuPy on a GPU: every criterion's scores, the subset search of
# several classes, the constraints and the feature draw run there.
CATEGORICAL_CASES = [
    ("classifier", "gini", "binary", dict(min_samples_leaf=3, max_features=2, random_state=0)),
    ("classifier", "entropy", "multiway", dict(min_samples_leaf=2, min_weight_fraction_leaf=0.02)),
    ("classifier", "gain_ratio", "binary", {}),
    ("classifier", "gain_ratio", "multiway", {}),
    ("classifier", "log_loss", "binary", dict(min_weight_fraction_leaf=0.02)),
    ("classifier", "misclassification", "binary", {}),
    ("classifier2", "cart", "binary", {}),
    ("regressor", "squared_error", "multiway", dict(min_samples_leaf=2)),
    ("regressor", "poisson", "binary", {}),
    ("regressor", "poisson", "multiway", {}),
    ("regressor", "squared_error", "binary", dict(monotonic_cst=[0, 1, 0, -1])),
    # No missing value: the search without the missing rows' side (missing=False).
    ("classifier2", "gini", "binary", dict(monotonic_cst=[0, 1, 0, 0], missing=False)),
]


@pytest.mark.parametrize(("kind", "criterion", "categorical_split", "extra"), CATEGORICAL_CASES)
def test_categorical_search_on_the_device_for_every_criterion(
    xp, kind, criterion, categorical_split, extra
):
    extra = dict(extra)
    X, y = _categorical_data(n=180, seed=len(criterion))
    if not extra.pop("missing", True):
        X = np.nan_to_num(X)
    X = X[:, [0, 1, 2, 1]]  # a fourth feature for max_features to draw
    X[:, 3] = np.round(X[:, 3] * 3) % 5
    weight = np.random.default_rng(19).integers(1, 3, size=y.size).astype(float)
    if kind == "regressor":
        make, target = DecisionTreeRegressor, X[:, 3] + 2 * y + 1.0  # positive: poisson
    else:
        make = DecisionTreeClassifier
        target = y if kind == "classifier2" else (y + (X[:, 1] > 0)) % 3
    params = dict(
        criterion=criterion,
        max_depth=3,
        categorical_features=[0, 2],
        categorical_split=categorical_split,
        **extra,
    )
    cpu, cuda = _cpu_and_cuda(make, X, target, xp, sample_weight=weight, device_X=False, **params)
    assert (cpu.tree_.split_kind != 0).any(), "the test needs categorical splits"
    assert_tree_equal(cuda.tree_, cpu.tree_)


def test_row_sampled_binning_of_a_device_X(xp, monkeypatch):
    """More rows than the binning subsample: the sampled rows are taken from the device
    X with a device index (BinMapper.fit's CuPy branch)."""
    from gpu_tree.data.binning import BinMapper

    max_bins, _, random_state = BinMapper.__init__.__defaults__
    monkeypatch.setattr(BinMapper.__init__, "__defaults__", (max_bins, 50, random_state))
    X, y = _regression(n=150, seed=20)
    X = np.round(X * 40)  # more values than the sample holds: sampled edges
    cpu, cuda = _cpu_and_cuda(DecisionTreeRegressor, X, y, xp, max_depth=4)
    assert_tree_equal(cuda.tree_, cpu.tree_, impurity_rtol=0, value_rtol=0)


def test_categorical_features_of_a_device_X(xp):
    """CategoryMaps.fit once read X with np.asarray (refused for a CuPy X): it copies the
    categorical columns alone to the host now."""
    X, y = _categorical_data()
    params = dict(max_depth=3, categorical_features=[0, 2])
    cpu, cuda = _cpu_and_cuda(DecisionTreeClassifier, X, y, xp, **params)
    assert_tree_equal(cuda.tree_, cpu.tree_)


def test_sparse_input_equals_cpu(xp):
    rng = np.random.default_rng(8)
    X = rng.normal(size=(200, 8)) * (rng.random((200, 8)) < 0.25)
    X[::17, 3] = np.nan
    y = ((X[:, 0] > 0) | (X[:, 1] < -0.3)).astype(int)
    S = sparse.csr_matrix(X)
    cpu = DecisionTreeClassifier(max_depth=5, device="cpu").fit(S, y)
    cuda = DecisionTreeClassifier(max_depth=5, device="cuda").fit(S, y)
    assert_tree_equal(cuda.tree_, cpu.tree_)
    weight = rng.integers(1, 3, size=200).astype(float)
    cpu = DecisionTreeRegressor(max_depth=4, device="cpu").fit(S, X[:, 2], sample_weight=weight)
    cuda = DecisionTreeRegressor(max_depth=4, device="cuda").fit(S, X[:, 2], sample_weight=weight)
    assert_tree_equal(cuda.tree_, cpu.tree_, impurity_rtol=0, value_rtol=0)


@pytest.mark.parametrize("sparse_X", [False, True])
def test_absolute_error_equals_cpu(xp, sparse_X):
    """Dense X unweighted, sparse X weighted (cuda_absolute_error reads both)."""
    X, y = _regression(n=80, seed=9)
    Y = np.column_stack([y, X[:, 2] ** 2])
    weight = None
    if sparse_X:
        weight = np.random.default_rng(10).integers(1, 3, size=y.size).astype(float)
    data = sparse.csr_matrix(X) if sparse_X else X
    params = dict(criterion="absolute_error", max_depth=3, max_bins=16)
    cpu = DecisionTreeRegressor(device="cpu", **params).fit(data, Y, sample_weight=weight)
    cuda = DecisionTreeRegressor(device="cuda", **params).fit(
        data if sparse_X else xp.asarray(X), Y, sample_weight=weight
    )
    assert_tree_equal(cuda.tree_, cpu.tree_, impurity_rtol=0, value_rtol=0)


def test_several_outputs_equal_cpu(xp):
    X, y = _classification(seed=11)
    Y = np.column_stack([y, (X[:, 2] > 0).astype(int)])
    cpu, cuda = _cpu_and_cuda(DecisionTreeClassifier, X, Y, xp, max_depth=4)
    assert_tree_equal(cuda.tree_, cpu.tree_)
    np.testing.assert_array_equal(cuda.predict(xp.asarray(X)), cpu.predict(X))
    X, y = _regression(seed=12)
    Y = np.column_stack([y, X[:, 3]])
    weight = np.random.default_rng(13).random(y.size) + 0.5
    cpu, cuda = _cpu_and_cuda(DecisionTreeRegressor, X, Y, xp, sample_weight=weight, max_depth=4)
    assert_tree_equal(cuda.tree_, cpu.tree_, impurity_rtol=0, value_rtol=0)
    np.testing.assert_array_equal(_host(cuda.predict(xp.asarray(X))), cpu.predict(X))


def test_poisson_and_random_splits_equal_cpu(xp):
    X, y = _regression(seed=14)
    counts = np.floor(np.exp(y / 2)).astype(float)
    cpu, cuda = _cpu_and_cuda(
        DecisionTreeRegressor, X, counts, xp, criterion="poisson", max_depth=4
    )
    assert_tree_equal(cuda.tree_, cpu.tree_)
    X, y = _classification(seed=15)
    cpu, cuda = _cpu_and_cuda(ExtraTreeClassifier, X, y, xp, max_depth=4, random_state=0)
    assert_tree_equal(cuda.tree_, cpu.tree_)


def test_monotonic_constraints_and_feature_costs_equal_cpu(xp):
    X, y = _regression(seed=16)
    params = dict(max_depth=4, monotonic_cst=[1, -1, 0, 0])
    cpu, cuda = _cpu_and_cuda(DecisionTreeRegressor, X, y, xp, **params)
    assert_tree_equal(cuda.tree_, cpu.tree_, impurity_rtol=0, value_rtol=0)
    X, y = _classification(seed=17)
    params = dict(max_depth=4, feature_costs=[1.0, 3.0, 1.0, 2.0])
    cpu, cuda = _cpu_and_cuda(DecisionTreeClassifier, X, y, xp, **params)
    assert_tree_equal(cuda.tree_, cpu.tree_)


@pytest.mark.parametrize("make", [RandomForestClassifier, RandomForestRegressor])
def test_forests_equal_cpu(xp, make):
    X, y = _classification(seed=18) if make is RandomForestClassifier else _regression(seed=18)
    params = dict(n_estimators=3, max_features=2, max_depth=4, random_state=1)
    cpu, cuda = _cpu_and_cuda(make, X, y, xp, **params)
    for a, b in zip(cuda.estimators_, cpu.estimators_, strict=True):
        assert_tree_equal(a.tree_, b.tree_)
    X_device = xp.asarray(X)
    if make is RandomForestClassifier:
        np.testing.assert_array_equal(_host(cuda.predict_proba(X_device)), cpu.predict_proba(X))
        # Numeric labels stay on the device, as the single tree's do.
        labels = cuda.predict(X_device)
        assert isinstance(labels, type(X_device))
        np.testing.assert_array_equal(_host(labels), cpu.predict(X))
    else:
        np.testing.assert_array_equal(_host(cuda.predict(X_device)), cpu.predict(X))
    np.testing.assert_array_equal(cuda.apply(X_device), cpu.apply(X))


def test_device_input_checks_run_on_the_device(xp):
    X, y = _classification()
    bad = X.copy()
    bad[3, 2] = np.inf
    with pytest.raises(ValueError, match="infinity .* column 2 at row 3"):
        DecisionTreeClassifier(device="cuda").fit(xp.asarray(bad), y)
    ints = xp.asarray(np.round(X * 10).astype(np.int32))
    model = DecisionTreeClassifier(device="cuda", max_depth=3).fit(ints, y)
    cpu = DecisionTreeClassifier(device="cpu", max_depth=3).fit(np.round(X * 10), y)
    assert_tree_equal(model.tree_, cpu.tree_)


def test_a_fit_too_big_for_the_free_memory_says_so(xp, monkeypatch):
    X, y = _classification()
    monkeypatch.setattr(_strict_cupy, "FREE_BYTES", 1000)
    with pytest.raises(MemoryError, match="needs .* bytes of GPU memory for this fit"):
        DecisionTreeClassifier(device="cuda").fit(X, y)
    X, y = _regression()
    monkeypatch.setattr(_strict_cupy, "FREE_BYTES", 60_000)  # the fit's start fits
    with pytest.raises(MemoryError, match="a tree level of .* nodes needs"):
        DecisionTreeRegressor(device="cuda").fit(X, y)


def test_the_fit_never_touches_the_real_cupy(xp):
    """What gpu_tree imports as cupy inside a fit is the stand-in."""
    assert sys.modules["cupy"] is xp
    X, y = _classification(n=60)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # e.g. bool() of an empty array
        DecisionTreeClassifier(device="cuda", max_depth=3).fit(xp.asarray(X), y)
