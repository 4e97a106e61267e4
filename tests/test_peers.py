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
