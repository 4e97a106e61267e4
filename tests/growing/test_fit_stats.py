"""``fit_stats_``: per tree level, what the device was asked to do (issue 16).

The counts are exact and the same under the CUDA simulator as on a GPU, so they are checked
here against oracles that do not use the counters: the tree's own node sizes (which nodes'
histograms the subtraction trick builds), and kernel dispatchers wrapped to count their
launches. The issue's goals for the GPU engine hold under the simulator: one
device-to-host copy and at most four launches per level (the fused split search; a
regression partition that runs the children's first variance pass; their sums copied
back with the next level's winners), and histogram kernels that read only the rows of
the nodes they build (row lists) on both devices.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _cli import run_cli

import gpu_tree.growing.grower as grower_module
from gpu_tree import DecisionTreeClassifier, DecisionTreeRegressor
from gpu_tree.utils.fit_stats import COUNTS, FitCounters, count_per_level, counting


@pytest.fixture(autouse=True)
def level_by_level(monkeypatch):
    """These tests hold the level-wise engine to its counts: every level grown by
    histograms, none finished in one call (that path's counts: test_subtree_finisher)."""
    monkeypatch.setattr(grower_module, "FINISH_BELOW_ROWS", 0)
    monkeypatch.setattr(grower_module, "FINISH_ROOT_BELOW_ROWS", 0)


N_ROWS, MAX_BINS, DEPTH = 1500, 16, 3


def _data(regression=False):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(N_ROWS, 5))
    signal = X[:, 0] + 0.7 * X[:, 1] - 0.4 * X[:, 2]
    if regression:
        return X, signal + 0.1 * rng.normal(size=N_ROWS)
    return X, (signal > 0.2).astype(int) + (signal > 1.0).astype(int)


def _fit(device, regression=False, **params):
    X, y = _data(regression)
    kind = DecisionTreeRegressor if regression else DecisionTreeClassifier
    return kind(max_depth=DEPTH, max_bins=MAX_BINS, device=device, **params).fit(X, y)


def _built_by_subtraction(tree):
    """Per level, the nodes and rows a dense-histogram backend builds: the root, then at
    each split the smaller child (left on ties); the larger is parent minus it. Every node
    here holds more rows than bins, so no node takes the small-node (compact) path."""
    nodes, rows = {0: 1}, {0: int(tree.n_node_samples[0])}
    for parent in np.flatnonzero(tree.children_left >= 0):
        left, right = tree.children_left[parent], tree.children_right[parent]
        level = int(tree.depth[parent]) + 1
        if level >= DEPTH:
            continue  # leaves at max_depth are never searched: no histograms
        smaller = min(int(tree.n_node_samples[left]), int(tree.n_node_samples[right]))
        assert smaller > MAX_BINS, "the oracle assumes dense histograms everywhere"
        nodes[level] = nodes.get(level, 0) + 1
        rows[level] = rows.get(level, 0) + smaller
    return nodes, rows


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_every_level_lists_every_count_and_its_phase_times(device):
    model = _fit(device)
    stats = model.fit_stats_
    assert [entry["level"] for entry in stats] == list(range(DEPTH))
    for entry in stats:
        assert set(entry) == {"level", "seconds", *COUNTS}
        assert all(isinstance(entry[key], int) and entry[key] >= 0 for key in COUNTS)
        assert {"histograms", "split_scoring", "partition"} <= set(entry["seconds"])
        assert all(s >= 0.0 for s in entry["seconds"].values())
    assert set(model.fit_setup_stats_["seconds"]) == {"binning", "backend"}
    assert model.fit_setup_stats_["nodes_built"] == 0


@pytest.mark.parametrize("regression", [False, True])
def test_the_cpu_reads_only_the_rows_of_the_nodes_it_builds_and_copies_nothing(regression):
    model = _fit("cpu", regression)
    nodes, rows = _built_by_subtraction(model.tree_)
    for entry in [model.fit_setup_stats_, *model.fit_stats_]:
        assert entry["kernel_launches"] == 0
        for way in ("device_to_host", "host_to_device"):
            assert entry[f"{way}_copies"] == entry[f"{way}_bytes"] == 0
    assert [entry["nodes_built"] for entry in model.fit_stats_] == [nodes[k] for k in range(DEPTH)]
    assert [entry["rows_read"] for entry in model.fit_stats_] == [rows[k] for k in range(DEPTH)]


class _CountingKernel:
    """A kernel dispatcher that counts its launches (the oracle for kernel_launches)."""

    def __init__(self, kernel, tally):
        self.kernel, self.tally = kernel, tally

    def __getitem__(self, config):
        self.tally.append(config)
        return self.kernel[config]


@pytest.fixture
def launches(monkeypatch):
    """Every kernel of the modules of gpu_tree.kernels.cuda, wrapped to count its launches."""
    import importlib
    import pkgutil

    from gpu_tree.kernels import cuda

    tally = []
    for info in pkgutil.iter_modules(cuda.__path__):
        module = importlib.import_module(f"{cuda.__name__}.{info.name}")
        for name in dir(module):
            kernel = getattr(module, name)
            simulated_kernel = getattr(kernel, "_device", None) is False
            gpu_kernel = not getattr(kernel, "targetoptions", {"device": True}).get("device")
            if hasattr(kernel, "__getitem__") and (simulated_kernel or gpu_kernel):
                monkeypatch.setattr(module, name, _CountingKernel(kernel, tally))
    return tally


def _split_levels(model):
    """The levels whose nodes were searched (``range(DEPTH)``), and for regression on the
    GPU the leaves' level after them: their impurities' one copy back, nothing else."""
    levels = [entry for entry in model.fit_stats_ if entry["level"] < DEPTH]
    leaves = [entry for entry in model.fit_stats_ if entry["level"] >= DEPTH]
    return levels, leaves


@pytest.mark.parametrize("regression", [False, True])
def test_cuda_counts_each_launch_and_copy(launches, regression):
    model = _fit("cuda", regression)
    entries = [model.fit_setup_stats_, *model.fit_stats_]
    assert sum(entry["kernel_launches"] for entry in entries) == len(launches) > 0
    nodes, rows = _built_by_subtraction(model.tree_)
    levels, leaves = _split_levels(model)
    assert [entry["level"] for entry in levels] == list(range(DEPTH))
    for entry in levels:
        assert entry["nodes_built"] == nodes[entry["level"]]
        # Row lists: the histogram kernel reads the built nodes' rows, no others.
        assert entry["rows_read"] == rows[entry["level"]]
        assert entry["device_to_host_copies"] >= 1 and entry["device_to_host_bytes"] > 0
        assert entry["host_to_device_copies"] >= 1 and entry["host_to_device_bytes"] > 0
    if regression:  # the leaves' impurities come back after the last split, in one copy
        n_leaves = int(np.sum(model.tree_.depth == DEPTH))
        assert [entry["level"] for entry in leaves] == [DEPTH]
        assert leaves[0]["device_to_host_copies"] == 1
        assert leaves[0]["device_to_host_bytes"] == 6 * 8 * n_leaves  # squared_deviation_buffer
        assert leaves[0]["kernel_launches"] == leaves[0]["nodes_built"] == 0
    else:
        assert leaves == []
    setup = model.fit_setup_stats_
    # Binning; a regression root's impurity takes the two squared-deviation passes.
    assert setup["kernel_launches"] == (3 if regression else 1)
    assert setup["host_to_device_bytes"] >= 5 * N_ROWS * 8  # X itself went over


def test_copies_are_counted_on_the_gpu_only():
    """The same split search runs on both devices; only a CUDA fit's copies are copies."""
    cpu, cuda = _fit("cpu"), _fit("cuda")
    assert sum(entry["device_to_host_copies"] for entry in cpu.fit_stats_) == 0
    assert sum(entry["device_to_host_copies"] for entry in cuda.fit_stats_) > 0


@pytest.mark.parametrize("regression", [False, True])
@pytest.mark.parametrize("missing", [False, True])
def test_each_level_copies_back_once_and_launches_at_most_four_kernels(regression, missing):
    """The split winners, packed, are a level's one copy back; a regression level's
    children's impurities ride on the next level's (the last ones on a copy of their
    own, at the leaves' level). Launches: histograms, the fused split search, the
    partition, and for regression the children's squared-deviation sums (the partition
    runs their first pass). With missing values too: no "does any node miss a value"
    copy."""
    X, y = _data(regression)
    if missing:
        X = X.copy()
        X[np.random.default_rng(5).random(X.shape) < 0.05] = np.nan
    kind = DecisionTreeRegressor if regression else DecisionTreeClassifier
    model = kind(max_depth=DEPTH, max_bins=MAX_BINS, device="cuda").fit(X, y)
    levels, _ = _split_levels(model)
    assert [entry["device_to_host_copies"] for entry in model.fit_stats_] == [1] * len(
        model.fit_stats_
    )
    expected = [4 if regression else 3] * DEPTH
    assert [entry["kernel_launches"] for entry in levels] == expected


@pytest.mark.parametrize("regression", [False, True])
def test_histogram_kernels_read_only_the_rows_of_the_nodes_built(regression):
    """Row lists, on both devices: each level reads what the subtraction trick builds
    (the smaller child of every split), so deep levels cost what their rows cost."""
    for device in ("cpu", "cuda"):
        model = _fit(device, regression)
        _, rows = _built_by_subtraction(model.tree_)
        levels, _ = _split_levels(model)
        assert [e["rows_read"] for e in levels] == [rows[k] for k in range(DEPTH)]
        assert sum(e["rows_read"] for e in levels[1:]) <= N_ROWS * (DEPTH - 1) / 2


def test_gputree_train_verbose_prints_the_table(tmp_path):
    X, y = _data()
    data = tmp_path / "data.csv"
    lines = ["a,b,c,d,e,y"] + [
        ",".join(f"{v:.6g}" for v in row) + f",{label}" for row, label in zip(X, y, strict=True)
    ]
    data.write_text("\n".join(lines) + "\n")
    result = run_cli("-v", "train", data, "-t", "y", "-o", tmp_path / "m.json", "--max-depth", "3")
    assert result.exit_code == 0, result.stderr
    table = result.stderr[result.stderr.index("fit statistics") :].splitlines()
    assert table[1].split()[:3] == ["level", "nodes", "launches"]
    assert [line.split()[0] for line in table[2:6]] == ["set-up", "0", "1", "2"]
    assert table[3].split()[7] == f"{N_ROWS:,}"  # the root's histogram read every row


def test_every_launch_runs_on_the_current_stream(launches, monkeypatch):
    """numba launches on CuPy's current stream (``current_stream``), so that inside a
    non-default ``cupy.cuda.Stream`` no CuPy read overtakes a kernel. Under the simulator
    a stand-in stream proves that every launch of a fit, binning and prediction included,
    receives it."""
    from numba import cuda

    import gpu_tree.backends.cuda as cuda_backend

    stream = cuda.stream()
    monkeypatch.setattr(cuda_backend, "current_stream", lambda xp: stream)
    model = _fit("cuda", regression=True)
    fit_launches = len(launches)
    assert fit_launches > 0
    from gpu_tree.backends.cuda import cuda_status, predict_on_device

    xp = cuda_status()[2]  # CuPy on a GPU: numba-cuda refuses host arrays on a stream
    predict_on_device(model.tree_, xp.asarray(_data(True)[0]), xp)
    assert len(launches) > fit_launches
    assert all(len(config) >= 3 and config[2] is stream for config in launches)


def test_count_per_level_adds_at_each_level_and_nothing_outside_a_fit():
    """Work counted for many levels at once (a finished subtree's nodes) lands at each
    level, adds to what was there, and leaves the current level alone."""
    count_per_level("rows_read", [0, 1], [5, 6])  # outside a fit: ignored, no error
    counters = FitCounters("cpu")
    counters.level = 2
    counters.add("rows_read", 7)
    with counting(counters):
        count_per_level("rows_read", [1, 2, 3], [10, 20, 30])
        count_per_level("nodes_built", [3], [4])
        with pytest.raises(ValueError):  # levels and amounts must pair up
            count_per_level("rows_read", [1, 2], [1])
    assert counters.level == 2
    assert counters.at(1)["rows_read"] == 10
    assert counters.at(2)["rows_read"] == 27
    assert counters.at(3)["rows_read"] == 30 and counters.at(3)["nodes_built"] == 4
    assert counters.at(0)["rows_read"] == 0


# -- numba-cuda's small-grid warning -----------------------------------------------------
def _small_grid_kernel():
    """A stand-in kernel whose launch warns as numba-cuda's does for a grid of fewer than
    128 blocks (dispatcher.py, _LaunchConfiguration), colour codes included."""
    from numba.core.errors import NumbaPerformanceWarning

    class Kernel:
        launched = 0

        def __getitem__(self, config):
            grid = config[0]
            warnings.warn(
                NumbaPerformanceWarning(
                    f"\x1b[1mGrid size {grid} will likely result in GPU under-utilization "
                    "due to low occupancy.\x1b[0m"
                ),
                stacklevel=2,
            )
            return self.run

        def run(self, *args):
            Kernel.launched += 1

    return Kernel()


def test_gpu_tree_launches_do_not_raise_the_small_grid_warning_and_others_still_do():
    from gpu_tree.utils.fit_stats import launch

    kernel = _small_grid_kernel()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        launch(kernel, (1, 256, 0))
        assert kernel.launched == 1
        with pytest.raises(Warning, match="Grid size 1 will likely"):
            kernel[(1, 256, 0)]()  # a user's own launch still warns

    class Noisy:
        def __getitem__(self, config):
            warnings.warn("some other warning", RuntimeWarning, stacklevel=2)
            return lambda *args: None

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="some other warning"):
            launch(Noisy(), (1, 256, 0))  # only the small-grid warning is ignored


def test_the_small_grid_pattern_matches_numba_cudas_message():
    """The ignored pattern follows numba-cuda's source, where it is installed: a changed
    message would otherwise warn on every fit again."""
    import importlib.util
    import re
    from pathlib import Path

    from gpu_tree.utils.fit_stats import SMALL_GRID_WARNING

    spec = importlib.util.find_spec("numba_cuda")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("numba-cuda is not installed")
    source = Path(spec.submodule_search_locations[0], "numba", "cuda", "dispatcher.py")
    text = source.read_text()
    assert "will likely result in GPU " in text and "under-utilization" in text
    assert re.match(
        SMALL_GRID_WARNING,
        "\x1b[1mGrid size 7 will likely result in GPU "
        "under-utilization due to low occupancy.\x1b[0m",
    )


@pytest.mark.parametrize("regression", [False, True])
def test_a_cuda_fit_and_prediction_raise_no_warning(regression):
    """tests/estimators/test_estimators.py fits with the default device under
    ``simplefilter("error")``: on a GPU that is device="cuda"."""
    X, y = _data(regression)
    kind = DecisionTreeRegressor if regression else DecisionTreeClassifier
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = kind(max_depth=DEPTH, max_bins=MAX_BINS, device="cuda").fit(X, y)
        model.predict(X)
    assert model.device_ == "cuda"
