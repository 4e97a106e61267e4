"""Distributed training on Dask (issue 19): the tree is the in-memory estimator's, bit for
bit, for any number of workers and any partitioning of the same rows. Real worker
processes (LocalCluster, processes=True), never a mock."""

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gpu_tree import DecisionTreeClassifier as LocalClassifier  # noqa: E402
from gpu_tree import DecisionTreeRegressor as LocalRegressor  # noqa: E402
from gpu_tree.dask import DecisionTreeClassifier, DecisionTreeRegressor  # noqa: E402
from gpu_tree.testing import assert_tree_equal  # noqa: E402

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def _data(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[:, 3] = rng.integers(0, 5, n)  # few distinct values: one bin each
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + rng.normal(size=n) > 0).astype(int) + (X[:, 3] > 2)
    target = np.nan_to_num(X[:, 1]) * 3 + rng.normal(size=n)
    weight = rng.random(n) + 0.1
    return X, y, target, weight


def _chunks(n, cuts):
    bounds = sorted({0, n, *cuts})
    return tuple(b - a for a, b in zip(bounds[:-1], bounds[1:], strict=True))


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
@pytest.mark.parametrize("weighted", [False, True])
def test_classifier_matches_in_memory(client, criterion, weighted):
    X, y, _, weight = _data()
    w = weight if weighted else None
    chunks = _chunks(len(y), [300, 700, 1000])
    distributed_fit = DecisionTreeClassifier(criterion=criterion, device="cpu").fit(
        da.from_array(X, chunks=(chunks, 4)),
        da.from_array(y, chunks=(chunks,)),
        None if w is None else da.from_array(w, chunks=(chunks,)),
    )
    local = LocalClassifier(criterion=criterion, device="cpu").fit(X, y, w)
    assert_tree_equal(distributed_fit.tree_, local.tree_)
    np.testing.assert_array_equal(distributed_fit.classes_, local.classes_)


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(cuts=st.lists(st.integers(0, 900), max_size=3), weighted=st.booleans())
def test_regressor_any_partitioning(client, cuts, weighted):
    X, _, target, weight = _data(900, seed=1)
    chunks = _chunks(len(target), cuts)
    w = weight if weighted else None
    distributed_fit = DecisionTreeRegressor(device="cpu", max_depth=8).fit(
        da.from_array(X, chunks=(chunks, 4)),
        da.from_array(target, chunks=(chunks,)),
        None if w is None else da.from_array(w, chunks=(chunks,)),
    )
    local = LocalRegressor(device="cpu", max_depth=8).fit(X, target, w)
    assert_tree_equal(distributed_fit.tree_, local.tree_)


def test_predict_on_dask_input_and_to_local(client):
    X, y, _, _ = _data(600)
    Xd = da.from_array(X, chunks=(200, 4))
    model = DecisionTreeClassifier(device="cpu", max_depth=5).fit(Xd, da.from_array(y, chunks=200))
    local = model.to_local()
    assert type(local) is LocalClassifier
    predicted = model.predict(Xd)
    assert isinstance(predicted, da.Array)
    np.testing.assert_array_equal(predicted.compute(), local.predict(X))
    np.testing.assert_array_equal(model.predict_proba(Xd).compute(), local.predict_proba(X))
    np.testing.assert_array_equal(model.apply(Xd).compute(), local.apply(X))
    np.testing.assert_array_equal(model.predict(X), local.predict(X))  # in-memory input
    wire = model.distributed_stats_["wire"]
    assert wire and all(entry["bytes"] > 0 for entry in wire)


def test_partition_mismatch_is_a_clear_error(client):
    X, y, _, _ = _data(600)
    with pytest.raises(ValueError, match="partition"):
        DecisionTreeClassifier(device="cpu").fit(
            da.from_array(X, chunks=(200, 4)), da.from_array(y, chunks=300)
        )
