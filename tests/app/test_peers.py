"""The benchmark peers are defined once (gpu_tree.app.peers): ``gputree bench`` and the
scripts in bench/ ask for the same trees with the same settings."""

import argparse

import numpy as np
import pytest
from _shared_data import bench_module

from gpu_tree.app import bench
from gpu_tree.app.peers import PEERS, PeerWork

WORK = PeerWork(depth=3, bins=32, n_jobs=1, seed=0)


@pytest.mark.parametrize("name", [n for n, p in PEERS.items() if p.device != "cuda"])
def test_each_installed_peer_grows_one_tree_of_the_asked_depth(name):
    peer = PEERS[name]
    if not peer.available():
        pytest.skip(f"{peer.module} not installed")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4))
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * rng.normal(size=3000) > 0.4).astype(int)
    model = peer.make(WORK).fit(X, y)
    leaves, depth = peer.tree_shape(model)
    # Depth-bound, with no minimum leaf size or regularisation stopping it earlier: every
    # peer reaches the asked depth on this data, and no more.
    assert depth == WORK.depth and 2 <= leaves <= 2**WORK.depth
    assert model.score(X, y) > 0.8


def test_gputree_bench_and_bench_cpu_ask_for_the_same_peers():
    bench_cpu = bench_module("bench_cpu")
    args = argparse.Namespace(depth=5, bins=64, n_jobs=None, seed=0, repeats=1, sklearn_repeats=1)
    contenders = {c.name: c for c in bench_cpu.build_contenders(args)}
    assert set(contenders) - {"gpu_tree"} == set(bench_cpu.PEER_NAMES)
    work = PeerWork(depth=5, bins=64, seed=0, device="cpu")
    for name in bench_cpu.PEER_NAMES:
        assert contenders[name].settings == PEERS[name].settings(work), name
        assert contenders[name].label == PEERS[name].label
    listed = {label: device for label, device, _, _ in bench.peers(5, 64, "cpu")}
    assert listed == {p.label: p.device_for(work) for p in PEERS.values()}


def test_a_cpu_run_never_asks_xgboost_for_the_gpu():
    settings = PEERS["xgboost"].settings(PeerWork(depth=4, device="cpu"))
    assert settings["device"] == "cpu"
    assert PEERS["xgboost"].device_for(PeerWork(depth=4, device="cpu")) == "cpu"


def test_an_unavailable_peer_is_listed_with_the_reason(monkeypatch):
    missing = {"lightgbm", "xgboost"}
    monkeypatch.setattr(type(PEERS["lightgbm"]), "available", lambda self: self.name not in missing)
    listed = bench.peers(4, 32, "cpu")
    rows = {label: (factory, why) for label, _, factory, why in listed}
    for name in missing:
        assert rows[PEERS[name].label] == (None, "not installed")
    assert rows[PEERS["sklearn"].label][0] is not None
    # a missing peer is still listed on the device it would run on
    assert {device for _, device, _, _ in listed} <= {"cpu", "cuda"}


@pytest.mark.parametrize("name", ["sklearn", "lightgbm", "hist_gb", "xgboost"])
def test_each_installed_peer_grows_a_fully_grown_tree_for_depth_none(name):
    peer = PEERS[name]
    if not peer.available():
        pytest.skip(f"{peer.module} not installed")
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] * X[:, 1] > 0.1).astype(int) ^ (rng.random(400) < 0.1)
    work = PeerWork(depth=None, bins=64, n_jobs=1, rows=len(y))
    model = peer.fit(peer.make(work), X, y, work)
    leaves, depth = peer.tree_shape(model)
    assert depth > 6 and leaves > 20  # far past any default depth limit
    assert model.score(X, y) > 0.97  # pure leaves, but for rows sharing a bin


def test_lightgbm_leaves_for_an_unlimited_tree_are_bounded_by_the_rows():
    settings = PEERS["lightgbm"].settings(PeerWork(depth=None, rows=1000))
    assert settings["max_depth"] == -1 and settings["num_leaves"] == 1000
    settings = PEERS["lightgbm"].settings(PeerWork(depth=None))
    assert settings["num_leaves"] == 131072
    assert PEERS["lightgbm"].settings(PeerWork(depth=4))["num_leaves"] == 16


@pytest.mark.parametrize("name", ["lightgbm", "hist_gb"])
def test_the_boosters_split_declared_category_codes_as_categories(name):
    peer = PEERS[name]
    if not peer.available():
        pytest.skip(f"{peer.module} not installed")
    assert peer.categorical_input == "codes"
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 12, size=2000).astype(float)
    codes[rng.random(2000) < 0.05] = np.nan
    X = np.column_stack([codes, rng.normal(size=2000)])
    # Codes 1, 4, 7, 10 against the rest: no threshold on the codes separates them.
    y = np.isin(codes, [1, 4, 7, 10]).astype(int)
    work = PeerWork(depth=1, bins=64, n_jobs=1, categorical=(0,))
    model = peer.fit(peer.make(work), X, y, work)
    assert model.score(X, y) > 0.94  # one categorical split (missing rows aside)
    numeric = PeerWork(depth=1, bins=64, n_jobs=1)
    assert peer.fit(peer.make(numeric), X, y, numeric).score(X, y) < 0.9


def test_peers_without_categorical_splits_want_one_hot_columns():
    for name in ("sklearn", "xgboost", "cuml"):
        assert PEERS[name].categorical_input == "one-hot"
    with pytest.raises(ValueError, match="depth limit"):
        PEERS["cuml"].settings(PeerWork(depth=None))


def test_the_dask_peers_take_their_in_memory_twins_settings():
    """bench/bench_dask.py's xgboost.dask and lightgbm.dask grow the same one tree as
    the in-memory peers: the settings are theirs, defined once."""
    from gpu_tree.app.peers import DASK_PEERS

    assert set(DASK_PEERS) == {"xgboost", "lightgbm"}
    work = PeerWork(depth=10, bins=256, n_jobs=1, seed=0)
    for name, peer in DASK_PEERS.items():
        assert peer.base == name
        assert peer.settings(work) == PEERS[name].settings(work)
        settings = peer.settings(work)
        assert settings["n_estimators"] == 1 and settings["learning_rate"] == 1.0
        assert settings["max_depth"] == 10 and settings["n_jobs"] == 1
    assert DASK_PEERS["xgboost"].settings(work)["max_bin"] == 256
    assert DASK_PEERS["lightgbm"].settings(work)["num_leaves"] == 1024


@pytest.mark.parametrize("name", ["xgboost", "lightgbm"])
def test_each_installed_dask_peer_makes_its_dask_estimator(name):
    from gpu_tree.app.peers import DASK_PEERS

    peer = DASK_PEERS[name]
    if not peer.available():
        pytest.skip(f"{peer.module} not installed")
    model = peer.make(WORK)  # on the default client, found when it fits
    assert type(model).__module__.startswith(f"{name}.")  # xgboost.dask, lightgbm.dask
    assert "Dask" in type(model).__name__
    params = model.get_params()
    assert all(params[k] == v for k, v in peer.settings(WORK).items()), name
