"""The CUDA backend: kernels against their oracles, and CUDA trees == CPU trees.

Without a GPU these run under numba's CUDA simulator (see conftest.py), which executes
the same kernel source on the CPU; keep the data small there.
"""

import numpy as np
import pytest
from conftest import REAL_GPU
from numba import cuda

from gpu_tree import DecisionTreeClassifier, DecisionTreeRegressor, assert_tree_equal
from gpu_tree.backends.cuda import cuda_status
from gpu_tree.kernels.cpu import prediction as cpu_prediction
from gpu_tree.kernels.cuda import histograms as cuda_histograms
from gpu_tree.kernels.cuda import launch as cuda_launch
from gpu_tree.kernels.cuda import partition as cuda_partition
from gpu_tree.kernels.cuda import prediction as cuda_prediction
from gpu_tree.testing import naive_histograms

USABLE, REASON, xp = cuda_status()
pytestmark = pytest.mark.skipif(not USABLE, reason=f"CUDA backend not usable: {REASON}")
CLASSIFICATION_CRITERIA = ["gini", "entropy", "log_loss", "gain_ratio", "cart", "misclassification"]


def _to_host(array):
    return array if isinstance(array, np.ndarray) else xp.asnumpy(array)


def _classification_data(n_samples, n_features, n_classes, n_values, seed):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, n_values, size=(n_samples, n_features)).astype(float)
    signal = X[:, 0] + (X[:, 1] if n_features > 1 else 0)
    y = (signal.astype(int) + (rng.random(n_samples) < 0.15)) % n_classes
    return X, y


# -- kernels against oracles ---------------------------------------------------------------
def _launch_histograms(
    path, X_binned, node_of_row, hist_slot_of_node, row_arrays, hist, features_per_block
):
    is_classification = row_arrays["device_row_stats"] is None
    n_hist_slots, n_features, n_bins, n_channels = hist.shape
    # The kernels read only the listed rows: those of the nodes built, as the backend's
    # row lists give them (here in reverse order: any order sums the same).
    row_list = np.flatnonzero(np.asarray(hist_slot_of_node)[node_of_row] >= 0)[::-1]
    args = (
        xp.asarray(X_binned),
        xp.asarray(row_list.astype(np.int32)),
        xp.asarray(node_of_row),
        xp.asarray(hist_slot_of_node),
        is_classification,
        xp.asarray(row_arrays["y_class"]),
        xp.asarray(row_arrays["weight"]),
        row_arrays["unit_weight"],
        row_arrays["count_channel"],
        xp.asarray(row_arrays["device_row_stats"] if not is_classification else np.zeros((1, 1))),
        hist.reshape(-1),
        n_bins,
        n_channels,
    )
    if path == "global":
        blocks, threads = cuda_launch.launch_config(row_list.size * n_features)
        cuda_histograms.histograms_global[blocks, threads](*args)
    else:
        n_groups = -(-n_features // features_per_block)
        grid, threads = cuda_histograms.shared_launch_config(row_list.size, n_groups)
        kernel = (
            cuda_histograms.histograms_shared_int32
            if path == "shared-int32"
            else cuda_histograms.histograms_shared
        )
        kernel[grid, threads](*args, n_hist_slots, features_per_block)


HISTOGRAM_KINDS = ["unit", "weighted", "regression", "unit-regression"]
# (path, kind): both paths for every kind, and the int32 shared histogram (class counts)
# for unit weights, the only rows the backend gives it.
HISTOGRAM_CASES = [(path, kind) for path in ("global", "shared") for kind in HISTOGRAM_KINDS]
HISTOGRAM_CASES.append(("shared-int32", "unit"))


def _histogram_case(kind, n_features=3, n_samples=90, n_bins=7, seed=1):
    """Binned rows, their nodes, and what each row adds (row_arrays, for the kernels, and
    row_stats, every channel, for the oracle). Unit weights ("unit", "unit-regression")
    give the kernels no weight: a 1-element stand-in for classification, and a regression
    row's statistics without channel 0, the weight, which is 1 for every row."""
    rng = np.random.default_rng(seed)
    n_classes = 3
    X_binned = rng.integers(0, n_bins, size=(n_features, n_samples)).astype(np.uint8)
    # Rows of nodes 0..3; nodes 1, 3 and 4 are built, and node 4 holds no row (an empty
    # histogram must come out all zeros).
    node_of_row = rng.integers(0, 4, size=n_samples).astype(np.int32)
    hist_slot_of_node = np.array([-1, 0, -1, 1, 2], dtype=np.int32)
    y_class = rng.integers(0, n_classes, size=n_samples).astype(np.int32)
    weight = rng.integers(1, 4, n_samples).astype(float)
    if kind in ("regression", "unit-regression"):
        row_stats = rng.integers(-5, 6, size=(n_samples, 4)).astype(float)
        unit = kind == "unit-regression"
        if unit:
            row_stats[:, 0] = 1.0
        row_arrays = {
            "y_class": np.zeros(1, np.int32),
            "weight": np.zeros(1),
            "unit_weight": unit,
            "count_channel": -1,
            "device_row_stats": np.ascontiguousarray(row_stats[:, 1:]) if unit else row_stats,
        }
    else:
        unit = kind == "unit"
        if unit:
            weight = np.ones(n_samples)
        n_channels = n_classes + (kind == "weighted")
        row_stats = np.zeros((n_samples, n_channels))
        row_stats[np.arange(n_samples), y_class] = weight
        if kind == "weighted":
            row_stats[:, -1] = 1.0
        row_arrays = {
            "y_class": y_class,
            "weight": np.zeros(1) if unit else weight,  # unit: never read
            "unit_weight": unit,
            "count_channel": n_classes if kind == "weighted" else -1,
            "device_row_stats": None,
        }
    return X_binned, node_of_row, hist_slot_of_node, row_arrays, row_stats


def _expected_histograms(X_binned, node_of_row, row_stats, n_bins):
    order = np.argsort(node_of_row, kind="stable")
    counts = np.bincount(node_of_row, minlength=5)
    end = np.cumsum(counts)
    start = end - counts
    built = np.array([1, 3, 4])
    return naive_histograms(X_binned, order, start[built], end[built], row_stats, n_bins)


@pytest.mark.parametrize(("path", "kind"), HISTOGRAM_CASES)
def test_histogram_kernels_match_naive_oracle(path, kind):
    n_features, n_bins = 3, 7
    X_binned, node_of_row, hist_slot_of_node, row_arrays, row_stats = _histogram_case(kind)
    dtype = np.int32 if path == "shared-int32" else np.float64
    hist = xp.zeros((3, n_features, n_bins, row_stats.shape[1]), dtype=dtype)
    # Two features per block: one group of two and a group of one (a partial group).
    _launch_histograms(
        path, X_binned, node_of_row, hist_slot_of_node, row_arrays, hist, features_per_block=2
    )
    expected = _expected_histograms(X_binned, node_of_row, row_stats, n_bins)
    np.testing.assert_array_equal(_to_host(hist), expected)
    assert not _to_host(hist)[2].any()  # the empty node


def test_shared_histograms_fall_back_to_global_memory_when_too_big():
    fits = cuda_histograms.shared_features_per_block
    assert fits(4, 256, 2, 28, np.int64) == 3  # 6144 // 2048
    assert fits(2, 256, 2, 2, np.int64) == 2  # capped at n_features
    assert fits(64, 256, 2, 28, np.int64) == 0  # does not fit: global
    assert fits(1, 65535, 1, 28, np.int64) == 0
    # int32 class counts: the same 48 KiB hold twice the entries.
    assert cuda_histograms.shared_histogram_entries(np.int32) == 12_288 == 2 * 6144
    assert cuda_histograms.shared_histogram_entries(np.int64) == 6144
    assert fits(4, 256, 2, 28, np.int32) == 6  # 12288 // 2048
    assert fits(12, 256, 2, 28, np.int32) == 2 and fits(12, 256, 2, 28, np.int64) == 1
    assert fits(24, 256, 2, 28, np.int32) == 1 and fits(24, 256, 2, 28, np.int64) == 0
    assert fits(25, 256, 2, 28, np.int32) == 0  # 12,800 entries: global
    assert (
        cuda_histograms.shared_histogram_kernel(np.int32) is cuda_histograms.histograms_shared_int32
    )
    for dtype in (np.int64, np.float64):
        assert cuda_histograms.shared_histogram_kernel(dtype) is cuda_histograms.histograms_shared


def _record_histogram_launches(monkeypatch):
    """[(kernel name, histogram dtype, n_slots, n_bins, n_channels, features_per_block)]
    of every histogram launch (features_per_block 0 for the global-memory kernel)."""
    launched = []

    class Recording:
        def __init__(self, name, kernel):
            self.name, self.kernel = name, kernel

        def __getitem__(self, config):
            def launch(*args):
                hist_flat, n_bins, n_channels = args[10:13]
                n_slots, group = args[13:15] if len(args) == 15 else (0, 0)
                launched.append((self.name, hist_flat.dtype, n_slots, n_bins, n_channels, group))
                return self.kernel[config](*args)

            return launch

    for name in ("histograms_global", "histograms_shared", "histograms_shared_int32"):
        monkeypatch.setattr(cuda_histograms, name, Recording(name, getattr(cuda_histograms, name)))
    return launched


def test_unweighted_class_counts_take_int32_shared_histograms_with_twice_the_features(
    monkeypatch,
):
    """Unweighted classification (int32 class counts): the shared histogram is int32, so a
    block holds twice the features. 20 classes x 256 bins is 5,120 entries per feature and
    node: at the root more than half of the 6,144 int64 entries (one feature per block)
    but two features of the 12,288 int32 ones; two nodes (10,240) would not fit int64
    shared memory at all but still take the shared path. The trees are the CPU's."""
    rng = np.random.default_rng(16)
    n, n_features = 400, 4
    X = rng.normal(size=(n, n_features))
    signal = X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=n)
    y = np.searchsorted(np.quantile(signal, np.linspace(0, 1, 21)[1:-1]), signal)
    assert np.unique(y).size == 20
    launched = _record_histogram_launches(monkeypatch)
    # Entropy splits these classes evenly enough that level 2 builds two nodes.
    params = {"max_depth": 3, "max_bins": 256, "criterion": "entropy"}
    cuda_tree = DecisionTreeClassifier(device="cuda", **params).fit(X, y).tree_
    monkeypatch.undo()
    cpu_tree = DecisionTreeClassifier(device="cpu", **params).fit(X, y).tree_
    assert_tree_equal(cuda_tree, cpu_tree, impurity_rtol=0, value_rtol=0)
    assert launched and {entry[0] for entry in launched} == {"histograms_shared_int32"}
    fits = cuda_histograms.shared_features_per_block
    choices = set()
    for _, dtype, n_slots, n_bins, n_channels, group in launched:
        assert dtype == np.int32 and n_bins == 256 and n_channels == 20
        assert group == fits(n_slots, n_bins, n_channels, n_features, np.int32)
        choices.add((n_slots, group, fits(n_slots, n_bins, n_channels, n_features, np.int64)))
    # The root and level 1 (one node built, its sibling by subtraction): two features per
    # block where int64 held one; level 2's two nodes: one where int64 held none.
    assert choices == {(1, 2, 1), (2, 1, 0)}


@pytest.mark.parametrize("estimator", ["weighted-classifier", "regressor"])
def test_weighted_classification_and_regression_keep_int64_shared_histograms(
    estimator, monkeypatch
):
    """Fixed-point weights and regression sums are int64: their shared histograms stay
    int64 (6,144 entries a block), and the trees are the CPU's."""
    rng = np.random.default_rng(17)
    X, y = _classification_data(150, 3, 3, 6, seed=17)
    weight = None
    if estimator == "regressor":
        model, y = DecisionTreeRegressor, X[:, 0] * 2.0 + rng.normal(scale=0.5, size=150)
    else:
        model, weight = DecisionTreeClassifier, rng.uniform(0.5, 2.0, size=150)
    launched = _record_histogram_launches(monkeypatch)
    cuda_tree = model(device="cuda", max_depth=4).fit(X, y, sample_weight=weight).tree_
    monkeypatch.undo()
    cpu_tree = model(device="cpu", max_depth=4).fit(X, y, sample_weight=weight).tree_
    assert_tree_equal(cuda_tree, cpu_tree, impurity_rtol=0, value_rtol=0)
    assert launched and {entry[0] for entry in launched} == {"histograms_shared"}
    for _, dtype, n_slots, n_bins, n_channels, group in launched:
        assert dtype == np.int64
        assert group == cuda_histograms.shared_features_per_block(
            n_slots, n_bins, n_channels, 3, np.int64
        )


# -- launch grids within the device's limits, for any number of rows and features ------------
@pytest.mark.parametrize("n_features", [1, 28, 65_535, 65_536, 200_000, 10_000_000])
@pytest.mark.parametrize("n_samples", [1, 100_000, 10_000_000_000])
@pytest.mark.parametrize("simulator", [False, True])
def test_launch_grids_stay_within_the_device_limits(n_features, n_samples, simulator):
    """gridDim.y <= 65,535 and gridDim.x <= 2**31 - 1 on every CUDA GPU. One feature per
    block (a histogram too big for two) and more than 65,535 features used to ask for as
    many y-blocks; now the y-blocks stop at the limit and the kernel strides over groups.
    The GPU's configuration (simulator=False) is checked without launching."""
    assert cuda_launch.MAX_GRID_Y == 65_535 and cuda_launch.MAX_GRID_X == 2**31 - 1
    for features_per_block in (1, 3):
        n_groups = -(-n_features // features_per_block)
        grid, threads = cuda_histograms.shared_launch_config(
            n_samples, n_groups, simulator=simulator
        )
        assert 1 <= grid[0] <= 2**31 - 1 and 1 <= grid[1] <= 65_535
        assert grid[1] == min(n_groups, 65_535)  # every group gets a block while they fit
        assert 1 <= threads <= 1024
    for n_tasks, max_blocks in ((n_samples * n_features, 4096), (n_samples * n_features, 2**40)):
        blocks, threads = cuda_launch.launch_config(n_tasks, max_blocks, simulator=simulator)
        assert 1 <= blocks <= 2**31 - 1 and 1 <= threads <= 1024
    if not simulator:
        assert cuda_launch.launch_config(10**15, 2**40, simulator=False)[0] == 2**31 - 1


@pytest.mark.parametrize("features_per_block", [1, 2])
@pytest.mark.parametrize("y_blocks", [1, 2])
@pytest.mark.parametrize("kind", ["unit", "weighted", "unit-regression"])
def test_shared_histograms_stride_over_more_feature_groups_than_y_blocks(
    features_per_block, y_blocks, kind, monkeypatch
):
    """A grid with fewer y-blocks than feature groups (as more than 65,535 groups get on
    a GPU): every block loops over the groups y, y + gridDim.y, ... and the histograms
    are still the oracle's, every feature of every group included."""
    n_features, n_bins = 5, 7
    X_binned, node_of_row, hist_slot_of_node, row_arrays, row_stats = _histogram_case(
        kind, n_features=n_features
    )
    n_groups = -(-n_features // features_per_block)  # 5 or 3 (the last one partial)
    monkeypatch.setattr(cuda_launch, "MAX_GRID_Y", y_blocks)
    grid, _ = cuda_histograms.shared_launch_config(X_binned.shape[1], n_groups)
    assert grid[1] == y_blocks < n_groups
    hist = xp.zeros((3, n_features, n_bins, row_stats.shape[1]))
    _launch_histograms(
        "shared", X_binned, node_of_row, hist_slot_of_node, row_arrays, hist, features_per_block
    )
    expected = _expected_histograms(X_binned, node_of_row, row_stats, n_bins)
    np.testing.assert_array_equal(_to_host(hist), expected)
    assert all(_to_host(hist)[:2, f].any() for f in range(n_features))


def test_cuda_tree_equals_cpu_tree_with_fewer_y_blocks_than_feature_groups(monkeypatch):
    """Whole fits, one feature per block and two y-blocks for four features: the
    launches stride over the groups and the trees are the CPU's."""
    monkeypatch.setattr(cuda_launch, "MAX_GRID_Y", 2)
    monkeypatch.setattr(cuda_histograms, "shared_features_per_block", lambda *args: 1)
    configure = cuda_histograms.shared_launch_config
    grids = []

    def recording(n_samples, n_groups, *args, **kwargs):
        grid, threads = configure(n_samples, n_groups, *args, **kwargs)
        grids.append((grid[1], n_groups))
        return grid, threads

    monkeypatch.setattr(cuda_histograms, "shared_launch_config", recording)
    X, y = _classification_data(120, 4, 3, 5, seed=41)
    weight = np.random.default_rng(41).integers(1, 4, size=120).astype(float)
    target = X[:, 0] * 1.5 + X[:, 3] + np.random.default_rng(42).normal(scale=0.2, size=120)
    for model, labels, w in (
        (DecisionTreeClassifier(max_depth=4), y, None),
        (DecisionTreeClassifier(max_depth=4, criterion="entropy"), y, weight),
        (DecisionTreeRegressor(max_depth=4), target, None),
    ):
        cuda_tree = model.set_params(device="cuda").fit(X, labels, sample_weight=w).tree_
        cpu_tree = model.set_params(device="cpu").fit(X, labels, sample_weight=w).tree_
        assert_tree_equal(cuda_tree, cpu_tree, impurity_rtol=0, value_rtol=0)
    assert grids and all(y_blocks == 2 < n_groups == 4 for y_blocks, n_groups in grids)


# -- unit weights stay on the host ------------------------------------------------------------
class _CopyRecorder:
    """Stands in for the array module while the backend is built, recording every host
    array handed to ``asarray``, ``ascontiguousarray`` or ``array``: what goes to the
    device (under the simulator, the 'device' is numpy too)."""

    def __init__(self, xp):
        self._xp = xp
        self.copied = []

    def __getattr__(self, name):
        attr = getattr(self._xp, name)
        if name not in ("asarray", "ascontiguousarray", "array"):
            return attr

        def copy(a, *args, **kwargs):
            # One copy per host array (numpy's asarray of a numpy array is the array).
            if isinstance(a, np.ndarray) and not any(a is b for b in self.copied):
                self.copied.append(a)
            return attr(a, *args, **kwargs)

        return copy


def _record_backend_copies(monkeypatch):
    """[(backend, row_data, arrays copied to the device)] for each CUDA backend built."""
    import inspect

    from gpu_tree.backends.cuda import CUDAHistogramBackend

    built = []
    original = CUDAHistogramBackend.__init__
    signature = inspect.signature(original)

    def init(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        real_xp = bound.arguments["xp"]
        recorder = bound.arguments["xp"] = _CopyRecorder(real_xp)
        original(*bound.args, **bound.kwargs)
        self.xp = real_xp
        built.append((self, bound.arguments["row_data"], recorder.copied))

    monkeypatch.setattr(CUDAHistogramBackend, "__init__", init)
    return built


def _per_row(copied, n_samples):
    """(shape, dtype) of the copied arrays with a row axis, sorted."""
    return sorted((a.shape, a.dtype.str) for a in copied if n_samples in a.shape)


@pytest.mark.parametrize("estimator", ["classifier", "regressor"])
@pytest.mark.parametrize("weighted", [False, True])
def test_unit_weights_are_never_copied_to_the_device(estimator, weighted, monkeypatch):
    """An unweighted fit copies no weight to the device: not the float64 weights, not
    their integer fixed point, not a regression row's weight channel (all ones). A
    weighted fit does copy them (the recorder sees them). Trees equal the CPU's."""
    n, n_features = 150, 3
    rng = np.random.default_rng(5)
    X, y = _classification_data(n, n_features, 3, 6, seed=5)
    if estimator == "regressor":
        y = X[:, 0] * 2.0 + rng.normal(scale=0.5, size=n)
    weight = rng.integers(1, 4, size=n).astype(float) if weighted else None
    built = _record_backend_copies(monkeypatch)
    model = DecisionTreeClassifier if estimator == "classifier" else DecisionTreeRegressor
    cuda_tree = model(device="cuda", max_depth=5).fit(X, y, sample_weight=weight).tree_
    monkeypatch.undo()
    cpu_tree = model(device="cpu", max_depth=5).fit(X, y, sample_weight=weight).tree_
    assert_tree_equal(cuda_tree, cpu_tree, impurity_rtol=0, value_rtol=0)
    assert len(built) == 1
    backend, row_data, copied = built[0]
    # The bin codes, feature-major. On a GPU they are made there from X (bin_columns), so
    # the backend finds them on the device and copies nothing; the simulator's device
    # arrays are host arrays, so there the backend's copy of them is seen.
    codes = [] if REAL_GPU else [((n_features, n), "|u1")]
    if estimator == "classifier":
        rows = [((n,), "<i4")] + ([((n,), "<i8")] if weighted else [])  # classes, weights
    else:
        # Integer statistics (weight, weighted target, count; unit weights: the weighted
        # target alone), the centred targets (a row per output), and the real weights
        # where weighted.
        stats = ((n, 3), "<i8") if weighted else ((n, 1), "<i8")
        rows = [stats, ((1, n), "<f8")] + ([((n,), "<f8")] if weighted else [])
    assert _per_row(copied, n) == sorted([*codes, *rows])
    if not weighted:
        assert backend.unit_weight
        assert _to_host(backend.weight).size == 1
        assert estimator == "classifier" or _to_host(backend.real_weight).size == 1
        for a in copied:  # nothing of a row's weight: no all-ones row axis
            if a.shape[0] == n:
                columns = a.reshape(n, -1)
                assert not (columns == 1).all(axis=0).any(), a.shape
    else:
        assert any(np.array_equal(a, row_data.weight_fixed) for a in copied) or any(
            a.ndim == 2 and np.array_equal(a[:, 0], row_data.weight_fixed) for a in copied
        )


def test_partition_kernel_moves_rows_of_split_nodes_only():
    rng = np.random.default_rng(2)
    X_binned = rng.integers(0, 5, size=(2, 60)).astype(np.uint8)
    node_of_row = rng.integers(0, 3, size=60).astype(np.int32)  # nodes 0, 1, 2
    before = node_of_row.copy()
    split_feature = np.array([-1, 1, 0, -1, -1, -1, -1], dtype=np.int32)  # split 1 and 2
    split_bin = np.array([0, 2, 0, 0, 0, 0, 0], dtype=np.int32)
    left = np.array([-1, 3, 5, -1, -1, -1, -1], dtype=np.int32)
    right = np.array([-1, 4, 6, -1, -1, -1, -1], dtype=np.int32)
    device_rows = xp.asarray(node_of_row)
    blocks, threads = cuda_launch.launch_config(60)
    # Code 4 is the missing values' bin: node 1 sends them left, node 2 right.
    missing_left = np.array([0, 1, 0, 0, 0, 0, 0], dtype=np.uint8)
    # Node 2 is a categorical subset split sending codes {1, 3} left (bits 1 and 3).
    category_offset = np.array([-1, -1, 0, -1, -1, -1, -1], dtype=np.int64)
    category_words = np.array([0b1010], dtype=np.int64)
    cuda_partition.partition_rows[blocks, threads](
        xp.asarray(X_binned),
        device_rows,
        xp.asarray(split_feature),
        xp.asarray(split_bin),
        xp.asarray(missing_left),
        4,
        xp.asarray(category_offset),
        xp.asarray(category_words),
        xp.asarray(left),
        xp.asarray(right),
        # Classification's stand-ins: no first pass of squared deviations.
        *(xp.zeros(1, dtype=np.int64), *(xp.zeros(1) for _ in range(3))),
        True,
        *(xp.zeros(1) for _ in range(3)),
    )
    expected = before.copy()
    for node in (1, 2):
        rows = before == node
        codes = X_binned[split_feature[node], rows]
        present_rule = codes <= split_bin[node] if node == 1 else np.isin(codes, [1, 3])
        goes_left = np.where(codes == 4, missing_left[node] == 1, present_rule)
        expected[rows] = np.where(goes_left, left[node], right[node])
    np.testing.assert_array_equal(_to_host(device_rows), expected)


@pytest.mark.parametrize("unit_weight", [True, False])
def test_a_regression_partition_runs_the_childrens_first_variance_pass(unit_weight):
    """Given the children's slots and means, partition_rows also records each child's
    largest squared-deviation term, lowest and highest centred target (pass 1 of
    kernels/_squared_deviations.py): what largest_squared_deviations would record after
    the partition, so a regression level needs one launch less."""
    rng = np.random.default_rng(7)
    n = 80
    X_binned = rng.integers(0, 4, size=(1, n)).astype(np.uint8)
    node_of_row = rng.integers(0, 2, size=n).astype(np.int32)  # node 1 splits, node 0 not
    centred = rng.normal(size=n)
    weight = rng.uniform(0.5, 2.0, size=n)
    # Node 1 splits on bin <= 1 into nodes 2 (slot 1) and 3 (slot 0).
    table = np.array(
        [[-1, 0, -1, -1], [0, 1, 0, 0], [0, 0, 0, 0], [-1, 2, -1, -1], [-1, 3, -1, -1]],
        dtype=np.int64,
    )
    child_slot = np.array([-1, -1, 1, 0], dtype=np.int64)
    child_mean = np.array([0.0, 0.0, 0.25, -0.5])
    extremes = [np.zeros(2), np.full(2, np.inf), np.full(2, -np.inf)]
    device_rows = xp.asarray(node_of_row)
    device_extremes = [xp.asarray(e) for e in extremes]
    blocks, threads = cuda_launch.launch_config(n)
    cuda_partition.partition_rows[blocks, threads](
        xp.asarray(X_binned),
        device_rows,
        *(xp.asarray(row) for row in table[:3]),
        -1,
        xp.asarray(np.full(4, -1, dtype=np.int64)),
        xp.asarray(np.zeros(1, dtype=np.int64)),
        *(xp.asarray(row) for row in table[3:]),
        xp.asarray(child_slot),
        xp.asarray(child_mean),
        xp.asarray(centred),
        xp.asarray(weight),
        unit_weight,
        *device_extremes,
    )
    moved = _to_host(device_rows)
    np.testing.assert_array_equal(moved[node_of_row == 0], 0)
    for child in (2, 3):
        rows = moved == child
        assert rows.any()
        terms = (centred[rows] - child_mean[child]) ** 2 * (1.0 if unit_weight else weight[rows])
        slot = child_slot[child]
        largest, lowest, highest = (_to_host(e)[slot] for e in device_extremes)
        assert largest == terms.max()
        assert (lowest, highest) == (centred[rows].min(), centred[rows].max())


@pytest.mark.parametrize("categorical_split", [None, "binary", "multiway"])
def test_prediction_kernel_matches_cpu_traversal(categorical_split):
    X, y = _classification_data(120, 3, 2, 6, seed=3)
    params = (
        {}
        if categorical_split is None
        else {"categorical_features": [0, 2], "categorical_split": categorical_split}
    )
    tree = DecisionTreeClassifier(max_depth=4, device="cpu", **params).fit(X, y).tree_
    if categorical_split is not None:
        assert (tree.split_kind >= 2).any()  # the walk meets categorical nodes
    X_test = np.random.default_rng(4).integers(-1, 8, size=(50, 3)).astype(float)
    X_test[::7, 1] = np.nan  # missing values follow each node's rule
    X_test[::5, 0] = np.nan
    expected = np.empty(50, dtype=np.int64)
    cpu_prediction.predict_leaves(X_test, *tree.walk_arrays(), expected)
    out = xp.zeros(50, dtype=np.int64)
    blocks, threads = cuda_launch.launch_config(50)
    arrays = [a if np.isscalar(a) else xp.asarray(a) for a in tree.walk_arrays()]
    cuda_prediction.predict_leaves[blocks, threads](xp.asarray(X_test), *arrays, out)
    np.testing.assert_array_equal(_to_host(out), expected)


# -- the same tree on both devices -----------------------------------------------------------
@pytest.fixture(params=["shared", "shared-pairs", "global"])
def histogram_path(request, monkeypatch):
    """Run a test with the launcher's shared-memory path, with at most two features per
    block (so that a launch has several feature groups, the last one partial, as wide or
    deep data has on a GPU), or forced onto global memory."""
    if request.param == "global":
        monkeypatch.setattr(cuda_histograms, "shared_features_per_block", lambda *args: 0)
    elif request.param == "shared-pairs":
        fitting = cuda_histograms.shared_features_per_block
        monkeypatch.setattr(
            cuda_histograms, "shared_features_per_block", lambda *args: min(2, fitting(*args))
        )
    return request.param


@pytest.mark.parametrize("criterion", CLASSIFICATION_CRITERIA)
@pytest.mark.parametrize(("max_depth", "n_classes"), [(1, 2), (3, 3), (6, 2)])
def test_cuda_tree_equals_cpu_tree(criterion, max_depth, n_classes, histogram_path):
    X, y = _classification_data(160, 3, n_classes, 5, seed=max_depth + n_classes)
    params = {"criterion": criterion, "max_depth": max_depth}
    cuda_model = DecisionTreeClassifier(device="cuda", **params).fit(X, y)
    cpu_model = DecisionTreeClassifier(device="cpu", **params).fit(X, y)
    assert cuda_model.device_ == "cuda"
    assert_tree_equal(cuda_model.tree_, cpu_model.tree_)
    np.testing.assert_array_equal(cuda_model.predict(X), cpu_model.predict(X))


@pytest.mark.parametrize("n_samples", [12, 31, 33, 200])
def test_cuda_tree_equals_cpu_tree_for_batches_below_and_above_a_block(n_samples, histogram_path):
    """Fewer rows than one block's threads leave threads idle; more make them stride."""
    X, y = _classification_data(n_samples, 2, 2, 4, seed=n_samples)
    cuda_tree = DecisionTreeClassifier(device="cuda", max_depth=4).fit(X, y).tree_
    cpu_tree = DecisionTreeClassifier(device="cpu", max_depth=4).fit(X, y).tree_
    assert_tree_equal(cuda_tree, cpu_tree)


def test_cuda_tree_single_feature_many_bins_and_integer_weights():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(150, 1))  # more distinct values than bins: quantile bins
    y = (X[:, 0] + 0.3 * rng.normal(size=150) > 0).astype(int)
    weight = rng.integers(0, 4, size=150).astype(float)  # zeros drop rows; counts channel
    params = {"max_depth": 5, "max_bins": 16, "min_samples_leaf": 2}
    cuda_tree = DecisionTreeClassifier(device="cuda", **params).fit(X, y, sample_weight=weight)
    cpu_tree = DecisionTreeClassifier(device="cpu", **params).fit(X, y, sample_weight=weight)
    assert_tree_equal(cuda_tree.tree_, cpu_tree.tree_)
    assert cuda_tree.tree_.node_count > 5


def test_cuda_tree_with_pure_and_empty_children_and_max_leaf_nodes():
    # Node batches of every size: best-first growth expands one node at a time.
    X, y = _classification_data(140, 2, 2, 4, seed=11)
    for params in ({"max_leaf_nodes": 6}, {"min_purity": 0.9}, {"min_impurity_decrease": 0.01}):
        cuda_tree = DecisionTreeClassifier(device="cuda", **params).fit(X, y).tree_
        cpu_tree = DecisionTreeClassifier(device="cpu", **params).fit(X, y).tree_
        assert_tree_equal(cuda_tree, cpu_tree)


def test_cuda_refuses_exact_search():
    X, y = _classification_data(40, 2, 2, 4, seed=5)
    with pytest.raises(ValueError, match="exact.*CPU"):
        DecisionTreeClassifier(device="cuda", splitter="exact").fit(X, y)


@pytest.mark.parametrize("max_depth", [2, 5])
def test_cuda_regression_tree_equals_cpu_tree(max_depth, histogram_path):
    """Real-valued targets and fractional weights: integer (fixed-point) sums make the
    atomic order irrelevant, so the trees are identical node for node."""
    rng = np.random.default_rng(max_depth)
    X = rng.integers(0, 6, size=(150, 3)).astype(float)
    y = np.sin(X[:, 0]) * 3.7 + X[:, 1] ** 1.5 + rng.normal(scale=0.3, size=150)
    weight = rng.uniform(0.1, 3.0, size=150)
    cuda_tree = DecisionTreeRegressor(device="cuda", max_depth=max_depth).fit(X, y, weight)
    cpu_tree = DecisionTreeRegressor(device="cpu", max_depth=max_depth).fit(X, y, weight)
    assert_tree_equal(cuda_tree.tree_, cpu_tree.tree_, impurity_rtol=0, value_rtol=0)
    assert cuda_tree.tree_.node_count > 3


def test_cuda_fractional_class_weights_tree_equals_cpu_tree():
    X, y = _classification_data(150, 3, 3, 5, seed=9)
    weight = np.random.default_rng(9).uniform(0.2, 2.0, size=150)
    params = {"max_depth": 4, "class_weight": "balanced", "criterion": "entropy"}
    cuda_tree = DecisionTreeClassifier(device="cuda", **params).fit(X, y, weight)
    cpu_tree = DecisionTreeClassifier(device="cpu", **params).fit(X, y, weight)
    assert_tree_equal(cuda_tree.tree_, cpu_tree.tree_, impurity_rtol=0, value_rtol=0)


@pytest.mark.gpu
def test_real_gpu_tree_equals_cpu_tree_on_larger_data():
    assert REAL_GPU
    X, y = _classification_data(200_000, 8, 3, 50, seed=0)
    gpu = DecisionTreeClassifier(device="cuda", max_depth=10).fit(X, y)
    cpu = DecisionTreeClassifier(device="cpu", max_depth=10).fit(X, y)
    assert_tree_equal(gpu.tree_, cpu.tree_)


@pytest.mark.parametrize("max_bins", [3, 16, 256, 1000])
def test_device_binning_equals_cpu_binning(max_bins):
    """Same codes and bounds as the CPU kernel, including values exactly at, just above
    and just below every edge, heavy tails and few distinct values."""
    from gpu_tree.data.binning import BinMapper

    rng = np.random.default_rng(max_bins)
    X = np.column_stack(
        [
            rng.normal(size=300),
            np.exp(rng.normal(scale=3, size=300)),
            rng.integers(0, 5, size=300).astype(float),
            np.full(300, 2.5),
        ]
    )
    mapper = BinMapper(max_bins=max_bins).fit(X)
    probes = [
        np.concatenate([e, np.nextafter(e, np.inf), np.nextafter(e, -np.inf)])
        for e in mapper.edges_
    ]
    length = max(p.size for p in probes)
    P = np.column_stack([np.resize(p, length) if p.size else np.full(length, 2.5) for p in probes])
    for data in (X, np.vstack([X, P])):
        codes, lower, upper = mapper.transform(data)
        device_codes, device_lower, device_upper = mapper.transform_on_device(xp.asarray(data), xp)
        np.testing.assert_array_equal(_to_host(device_codes), codes)
        np.testing.assert_array_equal(device_lower, lower)
        np.testing.assert_array_equal(device_upper, upper)


def test_fit_that_cannot_fit_fails_first_with_bytes_needed_and_free():
    from gpu_tree.backends.cuda import check_device_memory, required_device_bytes
    from gpu_tree.data.binning import BinMapper
    from gpu_tree.data.stats import StatsLayout

    X = np.zeros((1000, 10))
    mapper = BinMapper(max_bins=256).fit(np.random.default_rng(0).normal(size=(1000, 10)))
    layout = StatsLayout(True, 2, False)
    needed, parts = required_device_bytes(1000, 10, 1, 8, True, layout, mapper.n_bins_)
    assert parts["float X while binning"] == 80_000 and parts["bin codes"] == 10_000
    assert needed >= 90_000
    with pytest.raises(MemoryError, match=rf"needs {needed:,} bytes .* but 50,000 bytes are free"):
        check_device_memory(X, mapper, layout, xp, free_bytes=50_000)
    check_device_memory(X, mapper, layout, xp, free_bytes=needed)  # exactly enough: fine


def test_device_input_checks_name_the_problem():
    from gpu_tree.data.validation import check_X_on_device

    X = xp.asarray(np.arange(12.0).reshape(4, 3))
    assert check_X_on_device(X, xp).shape == (4, 3)
    bad = X.copy()
    bad[2, 1] = np.nan  # a missing value: accepted
    assert np.isnan(_to_host(check_X_on_device(bad, xp))[2, 1])
    bad[2, 1] = np.inf
    with pytest.raises(ValueError, match="infinity .* column 1 at row 2"):
        check_X_on_device(bad, xp)
    with pytest.raises(ValueError, match="2-D"):
        check_X_on_device(X[:, 0], xp)
    with pytest.raises(ValueError, match="X has 3 features, but T is expecting 5"):
        check_X_on_device(X, xp, n_features_expected=5, estimator_name="T")
    assert check_X_on_device(xp.asarray(np.ones((2, 2), dtype=np.int32)), xp).dtype == np.float64


def test_prediction_on_the_device_equals_the_cpu():
    from gpu_tree.backends.cuda import apply_on_device, predict_on_device

    X, y = _classification_data(200, 3, 3, 6, seed=12)
    model = DecisionTreeClassifier(max_depth=5, device="cuda").fit(X, y)
    X_device = xp.asarray(X)
    np.testing.assert_array_equal(
        _to_host(apply_on_device(model.tree_, X_device, xp)), model.apply(X)
    )
    np.testing.assert_array_equal(
        _to_host(predict_on_device(model.tree_, X_device, xp)), model.predict_proba(X)
    )


@pytest.mark.gpu
def test_cupy_inputs_are_used_in_place_and_predictions_stay_on_the_gpu():
    import cupy

    X, y = _classification_data(50_000, 6, 3, 40, seed=1)
    gpu = DecisionTreeClassifier(device="cuda", max_depth=8).fit(cupy.asarray(X), y)
    cpu = DecisionTreeClassifier(device="cpu", max_depth=8).fit(X, y)
    assert_tree_equal(gpu.tree_, cpu.tree_)
    predicted = gpu.predict(cupy.asarray(X))
    assert isinstance(predicted, cupy.ndarray)
    np.testing.assert_array_equal(predicted.get(), cpu.predict(X))
    np.testing.assert_array_equal(gpu.predict(X), cpu.predict(X))  # host input: host output


def test_cuda_tree_equals_cpu_tree_with_missing_values(histogram_path):
    rng = np.random.default_rng(21)
    X = rng.normal(size=(180, 3)).round(1)
    y = (X[:, 0] > 0).astype(int)
    hidden = rng.random(X.shape) < 0.25
    y[hidden[:, 0]] = 1  # missingness is informative
    X[hidden] = np.nan
    for model in (DecisionTreeClassifier(max_depth=5), DecisionTreeClassifier(criterion="entropy")):
        cuda_tree = model.set_params(device="cuda").fit(X, y).tree_
        cpu_tree = model.set_params(device="cpu").fit(X, y).tree_
        assert_tree_equal(cuda_tree, cpu_tree)
        # Rows missing feature 0 are class 1: the learned side sends them there.
        assert model.predict(np.array([[np.nan, 0.0, 0.0]]))[0] == 1
    target = np.nan_to_num(X[:, 0], nan=3.0) + rng.normal(scale=0.1, size=180)
    cuda_tree = DecisionTreeRegressor(device="cuda", max_depth=4).fit(X, target).tree_
    cpu_tree = DecisionTreeRegressor(device="cpu", max_depth=4).fit(X, target).tree_
    assert_tree_equal(cuda_tree, cpu_tree, impurity_rtol=0, value_rtol=0)


def test_device_binning_puts_missing_values_in_the_last_bin():
    from gpu_tree.data.binning import BinMapper

    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 2))
    X[rng.random(X.shape) < 0.1] = np.nan
    mapper = BinMapper(max_bins=8).fit(X)
    assert mapper.missing_bin_ == mapper.n_bins_ - 1 == 7  # values keep max_bins - 1 bins
    codes, lower, upper = mapper.transform(X)
    device_codes, device_lower, device_upper = mapper.transform_on_device(xp.asarray(X), xp)
    np.testing.assert_array_equal(_to_host(device_codes), codes)
    np.testing.assert_array_equal(codes.T == mapper.missing_bin_, np.isnan(X))
    np.testing.assert_array_equal(device_lower, lower)
    np.testing.assert_array_equal(device_upper, upper)


# -- several blocks, and races that the simulator's one-block-at-a-time order would hide ----
simulator_only = pytest.mark.skipif(REAL_GPU, reason="checks the simulator's launch shapes")


@simulator_only
def test_simulator_launches_span_several_blocks():
    blocks, threads = cuda_launch.launch_config(1000)
    assert blocks >= 2 and threads < 1000  # grid-striding across blocks
    grid, threads = cuda_histograms.shared_launch_config(1000, n_groups=2)
    assert grid[0] >= 2 and grid[1] == 2  # several block-private histograms per group


@cuda.jit
def _plain_sum(values, total):
    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
        total[0] += values[i]


@cuda.jit
def _atomic_sum(values, total):
    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
        cuda.atomic.add(total, 0, values[i])


@simulator_only
def test_race_detector_flags_a_non_atomic_cross_block_sum(monkeypatch):
    """The detector itself: the same sum made with ``+=`` from every thread is a race
    (whether or not the simulator's thread switches happened to lose an update), and
    with an atomic it is not."""
    from _simulator_races import watch_global_writes

    values = np.arange(100.0)
    for kernel, racy in ((_plain_sum, True), (_atomic_sum, False)):
        total = np.zeros(1)
        with watch_global_writes(monkeypatch) as record:
            kernel[3, 8](values, total)
        assert bool(record.races()) is racy
        if not racy:
            assert total[0] == values.sum()
        assert record.blocks_writing() == {(0, 0, 0), (1, 0, 0), (2, 0, 0)}


@simulator_only
@pytest.mark.parametrize(("path", "kind"), HISTOGRAM_CASES)
def test_histogram_kernels_merge_several_blocks_without_races(path, kind, monkeypatch):
    """Three blocks add to the same global entries (each its own shared histogram, then
    the merge): every such write must be atomic, and the sums equal the oracle's."""
    from _simulator_races import watch_global_writes

    with watch_global_writes(monkeypatch) as record:
        test_histogram_kernels_match_naive_oracle(path, kind)
    assert record.n_writes > 0 and not record.races(), record.races()[:5]
    shared_by_blocks = [
        writers for writers in record.writers.values() if len({w[0] for w in writers}) > 1
    ]
    assert shared_by_blocks, "no entry was merged from several blocks: the test proves nothing"


@simulator_only
@pytest.mark.parametrize("categorical_split", [None, "binary", "multiway"])
def test_whole_cuda_fit_and_predict_have_no_races(categorical_split, histogram_path, monkeypatch):
    """Every kernel a fit and a prediction launch (binning, histograms, partition, row
    counts, tree walk), over several blocks: no global entry written by two threads
    unless every write is atomic, and the tree is still the CPU's."""
    from _simulator_races import watch_global_writes

    X, y = _classification_data(150, 3, 3, 5, seed=31)
    X[::9, 1] = np.nan
    params = {"max_depth": 4}
    if categorical_split is not None:
        params.update(categorical_features=[0], categorical_split=categorical_split)
    with watch_global_writes(monkeypatch) as record:
        cuda_model = DecisionTreeClassifier(device="cuda", **params).fit(X, y)
        from gpu_tree.backends.cuda import predict_on_device

        predicted = _to_host(predict_on_device(cuda_model.tree_, xp.asarray(X), xp))
    assert not record.races(), record.races()[:5]
    assert len(record.blocks_writing()) >= 3 and record.n_atomic_writes > 0
    cpu_model = DecisionTreeClassifier(device="cpu", **params).fit(X, y)
    assert_tree_equal(cuda_model.tree_, cpu_model.tree_)
    np.testing.assert_array_equal(predicted, cpu_model.predict_proba(X))


def test_a_sparse_fit_is_checked_for_its_stored_values_only():
    """A sparse X's codes on the GPU cost its stored values (an int32 column index and a
    code each) and a row pointer per row, not n_samples x n_features codes; no float X is
    copied (it is binned on the host)."""
    from scipy import sparse

    from gpu_tree.backends.cuda import check_device_memory, required_device_bytes
    from gpu_tree.data.binning import BinMapper
    from gpu_tree.data.stats import StatsLayout

    dense = np.zeros((1000, 400))
    dense[np.arange(1000), np.arange(1000) % 400] = 1.0  # one stored value a row
    X = sparse.csr_matrix(dense)
    mapper = BinMapper(max_bins=256).fit(X)
    layout = StatsLayout(True, 2, False)
    needed, parts = required_device_bytes(
        1000, 400, 1, 8, True, layout, mapper.n_bins_, stored=X.nnz
    )
    assert parts["float X while binning"] == 0
    assert parts["bin codes"] == 1000 * 5 + 8 * 1001 + 1000 < 1000 * 400 // 20
    with pytest.raises(MemoryError, match=rf"needs {needed:,} bytes"):
        check_device_memory(X, mapper, layout, xp, free_bytes=needed - 1)
    check_device_memory(X, mapper, layout, xp, free_bytes=needed)


# -- the probe: a GPU is chosen only once a kernel has compiled and run there ----------
@pytest.fixture
def failing_probe(monkeypatch):
    """The probe kernel replaced by one whose launch fails as a broken toolchain's does;
    the cached verdicts are cleared before and after."""
    import gpu_tree.backends.cuda as cuda_backend
    import gpu_tree.backends.devices as devices

    class Broken:
        def __getitem__(self, config):
            raise AttributeError("module 'numpy' has no attribute 'row_stack'")

    def clear():
        cuda_backend.probe_failure.cache_clear()
        devices.warn_gpu_broken_once.cache_clear()

    clear()
    monkeypatch.setattr(cuda_launch, "probe", Broken())
    yield
    monkeypatch.undo()
    clear()


def test_the_probe_kernel_runs_on_the_device():
    from gpu_tree.backends.cuda import probe_failure

    probe_failure.cache_clear()
    assert probe_failure(xp) is None
    assert cuda_status()[0]


def test_a_failing_probe_makes_the_device_unusable_with_its_cause(failing_probe):
    usable, reason, module = cuda_status()
    assert not usable and module is None
    assert "test kernel failed to compile or run" in reason
    assert "AttributeError: module 'numpy' has no attribute 'row_stack'" in reason
    X, y = _classification_data(60, 3, 2, 4, seed=1)
    with pytest.raises(ValueError, match="device='cuda' is not usable here: .*row_stack"):
        DecisionTreeClassifier(device="cuda").fit(X, y)


def test_the_array_module_is_the_devices():
    from gpu_tree.backends.cuda import cuda_array_module

    assert cuda_array_module() is xp


def test_no_array_module_where_the_device_fails_its_probe(failing_probe):
    from gpu_tree.backends.cuda import cuda_array_module

    with pytest.raises(RuntimeError, match="CUDA backend cannot run here: .*row_stack"):
        cuda_array_module()


def test_auto_fits_on_the_cpu_with_one_warning_naming_the_cause(failing_probe):
    import warnings

    X, y = _classification_data(60, 3, 2, 4, seed=1)
    with pytest.warns(RuntimeWarning, match="device='auto' fits on the CPU: .*row_stack"):
        first = DecisionTreeClassifier(device="auto").fit(X, y)
    assert first.device_ == "cpu"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per process, not at every fit
        assert DecisionTreeClassifier(device="auto").fit(X, y).device_ == "cpu"


def test_a_probe_that_writes_wrong_values_is_caught(monkeypatch, failing_probe):
    from gpu_tree.backends.cuda import probe_failure

    class Wrong:
        def __getitem__(self, config):
            def run(out):
                out[:] = 7

            return run

    monkeypatch.setattr(cuda_launch, "probe", Wrong())
    probe_failure.cache_clear()
    failure = probe_failure(xp)
    assert failure is not None and "wrote 7 where" in failure and "element 0" in failure
