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
from gpu_tree.dask.backend import DistributedBackend  # noqa: E402
from gpu_tree.data.categorical import IdLikeColumnWarning  # noqa: E402
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


@pytest.fixture(autouse=True)
def _level_wise_unless_finishing(request, monkeypatch):
    """The data here is small: the client would finish every tree at its root
    (``DistributedBackend.finish_below_rows``), and the workers' level-wise growth would
    go untested. Tests that ask for ``finishing`` choose for themselves."""
    if "finishing" not in request.fixturenames:
        monkeypatch.setattr(DistributedBackend, "finish_below_rows", 0)


@pytest.fixture(params=["level-wise", "finished below 300 rows", "finished at the root"])
def finishing(request, monkeypatch):
    """How the client finishes subtrees: never; from nodes of fewer than 300 rows on,
    their rows gathered from both workers mid-tree (the grower's root rule off); or as
    shipped (small data: the whole tree from the root)."""
    from gpu_tree.growing import grower

    if request.param == "level-wise":
        monkeypatch.setattr(DistributedBackend, "finish_below_rows", 0)
    elif request.param == "finished below 300 rows":
        monkeypatch.setattr(grower, "FINISH_ROOT_BELOW_ROWS", 0)
        monkeypatch.setattr(DistributedBackend, "finish_below_rows", 300)
    return request.param


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
def test_classifier_matches_in_memory(client, criterion, weighted, finishing):
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
def test_regressor_any_partitioning(client, cuts, weighted, finishing):
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
    stats = model.distributed_stats_
    assert stats["wire"] and all(entry["bytes"] > 0 for entry in stats["wire"])
    # Bytes per level: each level's histograms (4 features x 256 bins x 3 classes of
    # int32 per node built, from each other worker and to the client), its split
    # decisions and counts; nothing else.
    per_level = stats["bytes_per_level"]
    assert sorted(per_level) == list(range(model.get_depth()))
    assert sum(per_level.values()) == sum(entry["bytes"] for entry in stats["wire"])
    root_histograms = 4 * 256 * model.n_classes_ * 4
    assert stats["wire"][0] == {
        "level": 0,
        "kind": "histograms",
        "n_nodes": 1,
        "bytes": stats["n_workers"] * root_histograms,  # Dask chose where the chunks sit
    }
    # (small nodes' histograms travel compact: only the bins their rows fill)
    assert {entry["kind"] for entry in stats["wire"]} == {"histograms", "compact", "partition"}


def test_partition_mismatch_is_a_clear_error(client):
    X, y, _, _ = _data(600)
    with pytest.raises(ValueError, match="partition"):
        DecisionTreeClassifier(device="cpu").fit(
            da.from_array(X, chunks=(200, 4)), da.from_array(y, chunks=300)
        )


# -- categories, DataFrames, partitions of any size --------------------------------------

dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")


def _frame(n=900, seed=2):
    """Text, a pandas category column (known categories), codes given as numbers and a
    numeric column; the rare categories sit in the last rows only (one partition)."""
    rng = np.random.default_rng(seed)
    colour = rng.choice(["red", "green", "blue", "grey"], n).astype(object)
    colour[-40:] = "violet"  # seen by one worker only
    colour[rng.random(n) < 0.05] = None
    size = pd.Categorical(rng.choice(["S", "M", "L", "XL"], n), categories=["XL", "L", "M", "S"])
    code = rng.integers(0, 6, n).astype(float)
    code[-30:] = 9.0
    x = rng.normal(size=n)
    frame = pd.DataFrame({"colour": colour, "size": size, "code": code, "x": x})
    y = (
        (frame.colour.isin(["red", "violet"]).to_numpy() ^ (code > 2))
        + (np.asarray(size) == "S")
        + (x > 1)
    ).astype(int)
    return frame, y


def test_partitions_of_other_table_kinds_are_read_as_pandas():
    """A partition that is an Arrow table (as cuDF and polars partitions become through
    Arrow) gives the distinct values and the rows of its pandas equivalent."""
    pa = pytest.importorskip("pyarrow")
    from gpu_tree.dask import shards

    frame = pd.DataFrame({"colour": ["red", None, "blue", "red"], "x": [1.0, 2.0, np.nan, 4.0]})
    candidates = np.array([True, False])
    from_arrow = shards.distinct_values(pa.table(frame), candidates)
    from_pandas = shards.distinct_values(frame, candidates)
    assert from_arrow["colour"].tolist() == from_pandas["colour"].tolist() == ["red", "blue"]
    assert list(from_arrow.columns) == ["colour", "x"]


@pytest.mark.parametrize("categorical_split", ["binary", "multiway"])
def test_categories_seen_on_some_workers_are_coded_globally(client, categorical_split, finishing):
    frame, y = _frame()
    params = dict(
        device="cpu",
        criterion="entropy",
        categorical_split=categorical_split,
        categorical_features=["colour", "size", "code"],
        max_depth=6,
    )
    X = dd.from_pandas(frame, npartitions=3, sort=False)
    target = dd.from_pandas(pd.Series(y), npartitions=3, sort=False)
    model = DecisionTreeClassifier(**params).fit(X, target)
    local = LocalClassifier(**params).fit(frame, y)
    assert_tree_equal(model.tree_, local.tree_)
    for ours, theirs in zip(model.categories_, local.categories_, strict=True):
        np.testing.assert_array_equal(ours, theirs)
    assert "violet" in list(model.categories_[0])
    # Prediction on the Dask DataFrame codes each partition with the fit's categories.
    np.testing.assert_array_equal(model.predict(X).compute().to_numpy(), local.predict(frame))


def test_unknown_categories_are_unioned_as_dask_concatenates(client):
    """A category column made on the workers (``astype("category")``) has categories
    the client does not know until the fit unions each partition's."""
    frame, y = _frame(600, seed=8)
    frame["colour"] = frame["colour"].astype(str)
    X = dd.from_pandas(frame, npartitions=3, sort=False).astype({"colour": "category"})
    assert not X["colour"].cat.known
    model = DecisionTreeClassifier(device="cpu", max_depth=6).fit(
        X, dd.from_pandas(pd.Series(y), npartitions=3, sort=False)
    )
    local = LocalClassifier(device="cpu", max_depth=6).fit(X.compute(), y)
    np.testing.assert_array_equal(model.categories_[0], local.categories_[0])
    assert_tree_equal(model.tree_, local.tree_)


def test_text_columns_are_categorical_by_type(client):
    frame, y = _frame(600, seed=3)
    frame = frame[["colour", "x"]]
    X = dd.from_pandas(frame, npartitions=2, sort=False)
    model = DecisionTreeClassifier(device="cpu", max_depth=5).fit(
        X, dd.from_pandas(pd.Series(y), npartitions=2, sort=False)
    )
    local = LocalClassifier(device="cpu", max_depth=5).fit(frame, y)
    assert model.is_categorical_.tolist() == [True, False]
    assert_tree_equal(model.tree_, local.tree_)


def _ages(n=400, seed=6):
    """Age as text of numbers, and a label."""
    rng = np.random.default_rng(seed)
    age = rng.integers(25, 81, n)
    frame = pd.DataFrame({"Age": age.astype(str).astype(object), "x": rng.normal(size=n)})
    return frame, (age > 50).astype(int)


def test_text_of_numbers_with_typos_is_refused_as_in_memory(client):
    """The rows that hold the typos are read on the workers and numbered as in the frame."""
    import warnings

    frame, y = _ages()
    frame.loc[[150, 390], "Age"] = ["4G", "twelve"]  # in the second and the last partition
    frame.loc[3, "Age"] = None  # a missing value is no typo
    with pytest.raises(ValueError) as in_memory:
        LocalClassifier(device="cpu").fit(frame, y)
    X = dd.from_pandas(frame, npartitions=3, sort=False)
    labels = dd.from_pandas(pd.Series(y), npartitions=3, sort=False)
    with pytest.raises(ValueError) as distributed_fit:
        DecisionTreeClassifier(device="cpu").fit(X, labels)
    assert str(distributed_fit.value) == str(in_memory.value)
    assert "'4G', 'twelve' (rows 150, 390)" in str(distributed_fit.value)
    # Declared categorical, the column is taken as the user says: no refusal, nor warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = DecisionTreeClassifier(device="cpu", categorical_features=["Age"]).fit(X, labels)
    assert model.is_categorical_.tolist() == [True, False]


def test_an_identifier_like_column_is_warned_of_as_in_memory(client):
    frame, y = _ages(100)
    frame["name"] = [f"customer {i}" for i in range(100)]
    X = dd.from_pandas(frame, npartitions=2, sort=False)
    labels = dd.from_pandas(pd.Series(y), npartitions=2, sort=False)
    with pytest.warns(IdLikeColumnWarning, match=r"feature 2 \('name'\) has 100 categories in 100"):
        DecisionTreeClassifier(device="cpu").fit(X, labels)


def test_dataframe_regression_with_weights_and_pruning(client):
    X, _, target, weight = _data(800, seed=4)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    params = dict(device="cpu", ccp_alpha=0.01, min_weight_fraction_leaf=0.02)
    model = DecisionTreeRegressor(**params).fit(
        dd.from_pandas(frame, npartitions=3, sort=False),
        dd.from_pandas(pd.Series(target), npartitions=3, sort=False),
        dd.from_pandas(pd.Series(weight), npartitions=3, sort=False),
    )
    local = LocalRegressor(**params).fit(frame, target, weight)
    assert_tree_equal(model.tree_, local.tree_)
    assert list(model.feature_names_in_) == ["a", "b", "c", "d"]


@pytest.mark.parametrize("class_weight", [None, "balanced"])
def test_empty_partitions_and_unknown_sizes(client, class_weight):
    X, y, _, _ = _data(900, seed=5)
    Xd = da.from_array(X, chunks=(300, 4))
    keep_all = np.arange(900) % 300 >= 100
    keep_all[300:600] = False
    # A boolean mask leaves unknown chunk sizes; the middle partition ends up empty.
    keep = da.from_array(keep_all, chunks=300)
    X_kept, y_kept = Xd[keep], da.from_array(y, chunks=300)[keep]
    assert np.isnan(X_kept.chunks[0][0])
    params = dict(device="cpu", min_weight_fraction_leaf=0.01, class_weight=class_weight)
    model = DecisionTreeClassifier(**params).fit(X_kept, y_kept)
    local = LocalClassifier(**params).fit(X[keep_all], y[keep_all])
    assert_tree_equal(model.tree_, local.tree_)
    # Prediction over the same chunks, the empty one included (once refused: 0 rows).
    np.testing.assert_array_equal(model.predict(X_kept).compute(), local.predict(X[keep_all]))
    np.testing.assert_array_equal(
        model.predict_proba(X_kept).compute(), local.predict_proba(X[keep_all])
    )
    np.testing.assert_array_equal(model.apply(X_kept).compute(), local.apply(X[keep_all]))
    import dask.dataframe as dd
    import pandas as pd

    frame = dd.from_pandas(pd.DataFrame(X), npartitions=3)
    filtered = frame[frame[0] > 10.0]  # no row passes: every partition empty
    assert len(model.predict(filtered).compute()) == 0


def test_no_rows_at_all_is_a_clear_error(client):
    X, y, _, _ = _data(300)
    keep = da.zeros(300, dtype=bool, chunks=150)
    with pytest.raises(ValueError, match="0 sample"):
        DecisionTreeClassifier(device="cpu").fit(
            da.from_array(X, chunks=(150, 4))[keep], da.from_array(y, chunks=150)[keep]
        )


def test_bad_values_name_their_partition(client):
    X, y, _, _ = _data(600)
    X[450, 2] = np.inf
    with pytest.raises(ValueError, match="partition 2 of X.*inf"):
        DecisionTreeClassifier(device="cpu").fit(
            da.from_array(X, chunks=(200, 4)), da.from_array(y, chunks=200)
        )


@pytest.mark.parametrize("bad", [-1.0, np.nan])
def test_weights_the_in_memory_fit_refuses_are_refused_naming_their_partition(client, bad):
    """A negative or NaN weight was once dropped with its row; the in-memory fit refuses
    it, and so does this one, in its words. A partition of zero weights is allowed."""
    X, y, _, _ = _data(600)
    w = np.ones(600)
    w[:200] = 0.0  # partition 0 weighs nothing: fine
    w[450] = bad
    with pytest.raises(ValueError) as in_memory:
        LocalClassifier(device="cpu").fit(X, y, sample_weight=w)
    with pytest.raises(ValueError, match=r"partition 2: ") as distributed_error:
        DecisionTreeClassifier(device="cpu").fit(
            da.from_array(X, chunks=(200, 4)),
            da.from_array(y, chunks=200),
            sample_weight=da.from_array(w, chunks=200),
        )
    assert str(in_memory.value).replace("450", "50") in str(distributed_error.value)


def test_nan_in_a_regression_target_is_refused_naming_its_partition(client):
    X, _, target, _ = _data(400)
    target[250] = np.nan
    with pytest.raises(ValueError, match=r"partition 1: Input y contains NaN at row 50"):
        DecisionTreeRegressor(device="cpu").fit(
            da.from_array(X, chunks=(200, 4)), da.from_array(target, chunks=200)
        )


def test_poisson_is_refused_with_the_reason_not_an_attribute_error(client):
    X, _, target, _ = _data(200)
    with pytest.raises(NotImplementedError, match="criterion='poisson' fits on one machine"):
        DecisionTreeRegressor(criterion="poisson", device="cpu").fit(
            da.from_array(X, chunks=(100, 4)), da.from_array(np.abs(target), chunks=100)
        )


@pytest.mark.parametrize("timeout", [-5, 0, float("nan"), float("inf"), "10", True])
def test_a_timeout_that_is_no_positive_number_is_refused(client, timeout):
    X, y, _, _ = _data(100)
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
        DecisionTreeClassifier(device="cpu").fit(
            da.from_array(X, chunks=(50, 4)), da.from_array(y, chunks=50), timeout=timeout
        )


def test_binning_sample_beyond_200k_rows(client):
    """Past the binning subsample (200,000 rows) the edges come from a sample of rows
    drawn by global position: the same sample as the in-memory fit's."""
    rng = np.random.default_rng(6)
    n = 230_000
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] > rng.normal(size=n)).astype(np.int8)
    model = DecisionTreeClassifier(device="cpu", max_depth=4).fit(
        da.from_array(X, chunks=(70_000, 3)), da.from_array(y, chunks=70_000)
    )
    local = LocalClassifier(device="cpu", max_depth=4).fit(X, y)
    assert_tree_equal(model.tree_, local.tree_)


def _spread(client, array, chunks):
    """A Dask array whose chunks sit on the client's workers in turn (Dask alone may
    leave a worker without any)."""
    import dask

    workers = sorted(client.scheduler_info()["workers"])
    pieces, start = [], 0
    for i, size in enumerate(chunks):
        part = array[start : start + size]
        future = client.scatter(part, workers=[workers[i % len(workers)]])
        pieces.append(da.from_delayed(dask.delayed(future), part.shape, part.dtype))
        start += size
    return da.concatenate(pieces)


@pytest.mark.parametrize("n_workers", [1, 3])
def test_any_number_of_workers(client, n_workers):
    """On a cluster of 1 or 3 workers given as ``client=`` while another client (the
    module's) is the current one."""
    X, y, _, _ = _data(900, seed=7)
    with (
        distributed.LocalCluster(
            n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as other,
    ):
        chunks = _chunks(len(y), [100, 250, 600, 640])
        X_spread, y_spread = _spread(other, X, chunks), _spread(other, y, chunks)
        with client.as_current():
            model = DecisionTreeClassifier(device="cpu", max_depth=7).fit(
                X_spread, y_spread, client=other
            )
        assert model.distributed_stats_["n_workers"] == n_workers
    local = LocalClassifier(device="cpu", max_depth=7).fit(X, y)
    assert_tree_equal(model.tree_, local.tree_)


def test_a_fit_s_workers_import_no_estimator_and_exit_without_traversing_their_objects(tmp_path):
    """A worker runs gpu_tree.dask.shards only: it does not import the estimators or
    scikit-learn (seconds of start-up, and of exit), and once it holds rows its objects
    are frozen at exit, so that the interpreter's last collections skip numba's compiled
    kernels (issue 45: workers killed after 4 s as a loaded machine's cluster closed)."""
    import _worker_probe

    X, y, _, _ = _data(900, seed=3)
    frozen = tmp_path / "frozen"
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as other,
    ):
        other.run(_worker_probe.report_frozen_at_exit, str(frozen))
        chunks = _chunks(len(y), [300, 600])
        X_spread, y_spread = _spread(other, X, chunks), _spread(other, y, chunks)
        DecisionTreeClassifier(device="cpu", max_depth=5).fit(X_spread, y_spread, client=other)
        heavy = ["sklearn", "gpu_tree.estimators", "gpu_tree.dask.estimators", "scipy.stats"]
        assert list(other.run(_worker_probe.loaded, heavy).values()) == [[]]
    assert int(frozen.read_text()) > 10_000  # numba's objects, among others


# -- faults -------------------------------------------------------------------------------


def test_a_worker_lost_mid_fit_fails_fast_and_the_client_stays_usable(monkeypatch):
    """A real worker process exits at the third level: the fit raises WorkerLostError
    in about a second (not at its 300 s timeout), and once the nanny has restarted the
    worker the same client fits the in-memory tree."""
    import os
    import signal
    import time

    from gpu_tree.dask import WorkerLostError
    from gpu_tree.dask.backend import DistributedBackend

    X, y, _, _ = _data(1200, seed=9)
    Xd, yd = da.from_array(X, chunks=(400, 4)), da.from_array(y, chunks=400)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as own_client,
    ):
        histograms = DistributedBackend.histograms
        calls, killed_at = [], []

        def histograms_then_a_worker_exits(backend, nodes, out=None):
            calls.append(len(nodes))
            if len(calls) == 3:
                victim = backend.group.keys[-1][1]
                pid = own_client.run(os.getpid, workers=[victim])[victim]
                os.kill(pid, signal.SIGKILL)  # a worker process of this test's own cluster
                killed_at.append(time.monotonic())
            return histograms(backend, nodes, out)

        monkeypatch.setattr(DistributedBackend, "histograms", histograms_then_a_worker_exits)
        with pytest.raises(WorkerLostError, match="left during the distributed fit"):
            DecisionTreeClassifier(device="cpu").fit(Xd, yd, client=own_client)
        assert time.monotonic() - killed_at[0] < 10  # about WORKER_CHECK_SECONDS
        monkeypatch.setattr(DistributedBackend, "histograms", histograms)
        own_client.wait_for_workers(2, timeout=60)
        model = DecisionTreeClassifier(device="cpu").fit(Xd, yd, client=own_client)
    assert_tree_equal(model.tree_, LocalClassifier(device="cpu").fit(X, y).tree_)


def test_a_call_the_workers_do_not_answer_times_out(client, monkeypatch):
    from gpu_tree.dask import shards

    X, y, _, _ = _data(300)
    # The workers import shards afresh: a slow histogram there needs a function they can
    # import, so the client's reduction step is the one made slow (it runs on a worker
    # too, but is submitted by name from here).
    monkeypatch.setattr(shards, "sum_arrays", _slow_sum)
    with pytest.raises(TimeoutError, match="timeout=1 s"):
        DecisionTreeClassifier(device="cpu").fit(
            da.from_array(X, chunks=(150, 4)), da.from_array(y, chunks=150), timeout=1
        )


def _slow_sum(*arrays):
    import time

    time.sleep(4)
    return sum(arrays)


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    cuts=st.lists(st.integers(1, 899), max_size=3, unique=True),
    categorical_split=st.sampled_from(["binary", "multiway"]),
)
def test_categorical_frames_any_partitioning(client, cuts, categorical_split, finishing):
    """Partition boundaries anywhere (categories seen in one partition only included):
    the tree of the whole frame."""
    frame, y = _frame(900, seed=10)
    frame["y"] = y
    divisions = [0, *sorted(cuts), len(frame) - 1]
    both = dd.from_pandas(frame, npartitions=1).repartition(divisions=divisions)
    params = dict(
        device="cpu",
        criterion="gini",
        categorical_split=categorical_split,
        categorical_features=["colour", "size", "code"],
    )
    model = DecisionTreeClassifier(**params).fit(both.drop(columns="y"), both["y"])
    local = LocalClassifier(**params).fit(frame.drop(columns="y"), y)
    assert_tree_equal(model.tree_, local.tree_)


# -- GPU workers ----------------------------------------------------------------------------


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_cuda_workers_grow_the_cpu_tree(client, task):
    """device="cuda": every worker bins its rows and builds its histograms with the CUDA
    backend (here the CUDA simulator, which the worker processes inherit from the test
    session; a real GPU per worker under dask-cuda). Small data: the simulator is slow."""
    simulated = client.run(lambda: __import__("os").environ.get("NUMBA_ENABLE_CUDASIM"))
    if not all(simulated.values()):
        pytest.skip("the workers have neither a GPU nor the CUDA simulator")
    X, y, target, weight = _data(160, seed=11)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    frame["d"] = frame["d"].astype("category")
    labels = y if task == "classification" else target
    Estimator, Local = (
        (DecisionTreeClassifier, LocalClassifier)
        if task == "classification"
        else (DecisionTreeRegressor, LocalRegressor)
    )
    params = dict(max_depth=3, max_bins=16)
    model = Estimator(device="cuda", **params).fit(
        dd.from_pandas(frame, npartitions=2, sort=False),
        dd.from_pandas(pd.Series(labels), npartitions=2, sort=False),
        dd.from_pandas(pd.Series(weight), npartitions=2, sort=False),
    )
    assert model.device_ == "cuda"
    assert set(model.distributed_stats_["devices"].values()) == {"cuda"}
    local = Local(device="cpu", **params).fit(frame, labels, weight)
    assert_tree_equal(model.tree_, local.tree_)


def test_auto_device_is_decided_on_each_worker(client):
    """ "auto" takes a worker's GPU where it has one, never the simulator: CPU here."""
    X, y, _, _ = _data(300)
    model = DecisionTreeClassifier(device="auto", max_depth=3).fit(
        da.from_array(X, chunks=(150, 4)), da.from_array(y, chunks=150)
    )
    assert model.device_ == "cpu"
    assert model.to_local().device_ == "cpu"


def test_histograms_summed_on_the_client_give_the_same_tree(client, monkeypatch):
    """The alternative to the tree reduction (each worker's histograms to the client):
    the same integers, so the same tree; more bytes into the client."""
    from gpu_tree.dask.backend import DistributedBackend

    X, y, _, weight = _data(900, seed=12)
    Xd, yd, wd = (da.from_array(a, chunks=300) for a in (X, y, weight))
    Xd = Xd.rechunk((300, 4))
    trees = {}
    for reduction in ("tree", "client"):
        monkeypatch.setattr(DistributedBackend, "reduction", reduction)
        trees[reduction] = DecisionTreeClassifier(device="cpu", max_depth=6).fit(Xd, yd, wd)
    assert_tree_equal(trees["tree"].tree_, trees["client"].tree_)
    assert_tree_equal(trees["tree"].tree_, LocalClassifier(max_depth=6).fit(X, y, weight).tree_)


def test_columns_of_one_parquet_read(client, tmp_path):
    """X and y taken from one ``read_parquet`` frame, not persisted first: a projection
    of few columns alone may be fused into fewer partitions; fit reads them together."""
    pytest.importorskip("pyarrow")
    X, y, _, _ = _data(1200, seed=13)
    frame = pd.DataFrame(X.astype(np.float32), columns=["a", "b", "c", "d"])
    frame["label"] = y
    for i in range(6):
        frame.iloc[i * 200 : (i + 1) * 200].to_parquet(tmp_path / f"part{i}.parquet")
    read = dd.read_parquet(str(tmp_path / "*.parquet"))
    model = DecisionTreeClassifier(device="cpu", max_depth=6).fit(
        read[["a", "b", "c", "d"]], read["label"]
    )
    local = LocalClassifier(device="cpu", max_depth=6).fit(frame[["a", "b", "c", "d"]], y)
    assert_tree_equal(model.tree_, local.tree_)


def test_y_in_memory_with_dask_X_is_a_clear_error(client):
    X, y, _, _ = _data(300)
    with pytest.raises(TypeError, match="y is a ndarray"):
        DecisionTreeClassifier(device="cpu").fit(da.from_array(X, chunks=(150, 4)), y)


def _waits_while_growing(monkeypatch, fit):
    """While the grower grows the tree of ``fit()``: how many times the client waited
    for the workers, and how many times the grower asked the backend for histograms
    (dense or compact) and for a partition; and the fitted model."""
    from gpu_tree.dask import backend
    from gpu_tree.growing.grower import Grower

    counts = {"waits": 0, "histograms": 0, "partitions": 0}
    growing = []

    def counted(function, what):
        def call(*args, **kwargs):
            if growing:
                counts[what] += 1
            return function(*args, **kwargs)

        return call

    def grow_and_count(self):
        growing.append(True)
        try:
            return grow(self)
        finally:
            growing.clear()

    grow = Grower.grow
    monkeypatch.setattr(
        backend, "results_from_workers", counted(backend.results_from_workers, "waits")
    )
    for name, what in [
        ("histograms", "histograms"),
        ("compact_histograms", "histograms"),
        ("partition", "partitions"),
        ("partition_multiway", "partitions"),
    ]:
        method = getattr(backend.DistributedBackend, name)
        monkeypatch.setattr(backend.DistributedBackend, name, counted(method, what))
    monkeypatch.setattr(Grower, "grow", grow_and_count)
    model = fit()
    return counts, model


@pytest.mark.parametrize("categorical_split", ["binary", "multiway"])
def test_routing_the_rows_costs_no_round_trip(client, monkeypatch, categorical_split):
    """The rows' routing to the children is not waited for: each shard's next task runs
    after it, and its counts come back with that task's results. The client waits once
    per histogram request (a level: once, or twice where it has small nodes' compact
    histograms too), never for a partition; the tree is the same."""
    X, y, _, _ = _data(4000, seed=21)
    Xd, yd = da.from_array(X, chunks=(1000, 4)), da.from_array(y, chunks=1000)
    params = dict(max_depth=5, categorical_features=[3], categorical_split=categorical_split)
    counts, model = _waits_while_growing(
        monkeypatch, lambda: DecisionTreeClassifier(device="cpu", **params).fit(Xd, yd)
    )
    assert counts["partitions"] >= 4  # a partition at every level but the last
    assert counts["waits"] == counts["histograms"]
    assert_tree_equal(model.tree_, LocalClassifier(device="cpu", **params).fit(X, y).tree_)


def test_finishing_on_the_client_saves_round_trips_and_grows_the_same_tree(client, monkeypatch):
    """Nodes below ``finish_below_rows`` rows are grown on the client from their rows,
    gathered once: fewer waits than a round trip per level, the same tree; and gathered
    in turns where they pass ``most_gathered_rows``."""
    from gpu_tree.growing import grower

    X, y, _, weight = _data(6000, seed=5)
    Xd, yd = da.from_array(X, chunks=(2000, 4)), da.from_array(y, chunks=2000)
    wd = da.from_array(weight, chunks=2000)
    local = LocalClassifier(device="cpu", max_depth=12).fit(X, y, weight)
    monkeypatch.setattr(grower, "FINISH_ROOT_BELOW_ROWS", 0)
    waits = {}
    for name, below, most in [
        ("level-wise", 0, DistributedBackend.most_gathered_rows),
        ("finished", 1500, DistributedBackend.most_gathered_rows),
        ("finished in turns", 1500, 1000),
    ]:
        monkeypatch.setattr(DistributedBackend, "finish_below_rows", below)
        monkeypatch.setattr(DistributedBackend, "most_gathered_rows", most)
        counts, model = _waits_while_growing(
            monkeypatch, lambda: DecisionTreeClassifier(device="cpu", max_depth=12).fit(Xd, yd, wd)
        )
        assert_tree_equal(model.tree_, local.tree_)
        waits[name] = counts["waits"]
    assert waits["finished"] < waits["level-wise"] - 4, waits
    assert waits["finished in turns"] > waits["finished"], waits


@pytest.mark.parametrize("which", ["first", "last"])
def test_a_routing_that_disagrees_with_the_split_counts_still_fails_the_fit(
    client, monkeypatch, which
):
    """The partition's check runs though nobody waits for the partition: a count off by
    one (as a bug in a worker's routing would give) fails the fit, whether the next
    level's histograms bring the counts back (the first routing) or the end of the fit
    does (the last)."""
    from gpu_tree.dask.backend import DistributedBackend

    X, y, _, _ = _data(1200, seed=4)
    Xd, yd = da.from_array(X, chunks=(400, 4)), da.from_array(y, chunks=400)
    partition = DistributedBackend.partition
    calls = []

    def counted(self, *args, **kwargs):
        calls.append(1)
        return partition(self, *args, **kwargs)

    monkeypatch.setattr(DistributedBackend, "partition", counted)
    DecisionTreeClassifier(device="cpu", max_depth=4).fit(Xd, yd)
    n_partitions = len(calls)
    wrong_call = 1 if which == "first" else n_partitions
    calls.clear()

    def off_by_one(self, *args, sizes, **kwargs):
        calls.append(1)
        if len(calls) == wrong_call:
            sizes = (np.asarray(sizes[0]) + 1, sizes[1])
        return partition(self, *args, sizes=sizes, **kwargs)

    monkeypatch.setattr(DistributedBackend, "partition", off_by_one)
    with pytest.raises(RuntimeError, match="partition disagrees with the histogram counts"):
        DecisionTreeClassifier(device="cpu", max_depth=4).fit(Xd, yd)
    assert n_partitions > 1 and len(calls) == wrong_call
