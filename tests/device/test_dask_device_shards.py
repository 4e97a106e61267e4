"""GPU workers' shard operations (gpu_tree.dask.device_shards) against the CPU shards'
(gpu_tree.dask.shards), in-process: the same rows, bins, scales and splits give exactly
the same histograms, compact histograms, squared-deviation parts and routing.

Without a GPU the CUDA backend runs under numba's CUDA simulator (see conftest.py),
which is slow: a few hundred rows, few features, 16 bins.
"""

import uuid

import numpy as np
import pytest

from gpu_tree.backends.cuda import cuda_status
from gpu_tree.backends.rows import RowData, RowScales, compact_from_dense
from gpu_tree.dask import device_shards, shards
from gpu_tree.data.binning import BinMapper
from gpu_tree.data.stats import StatsLayout

USABLE, REASON, _ = cuda_status()
pytestmark = pytest.mark.skipif(not USABLE, reason=f"CUDA backend not usable: {REASON}")

MAX_BINS = 16
N_CATEGORIES = 5
CATEGORICAL = 2  # the feature holding category codes 0..N_CATEGORIES-1
N_CLASSES = 3


def _dataset(kind, n_samples=240, seed=0):
    """X (a numeric feature, one with missing values, a categorical one, a numeric one),
    the targets as shards hold them (class codes, or float targets) and the weights."""
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [
            rng.normal(size=n_samples),
            np.where(rng.random(n_samples) < 0.2, np.nan, rng.integers(0, 30, n_samples)),
            rng.integers(0, N_CATEGORIES, n_samples),
            rng.exponential(size=n_samples),
        ]
    ).astype(np.float64)
    signal = X[:, 0] + (X[:, 2] == 1) - np.nan_to_num(X[:, 1], nan=15.0) / 15
    if kind == "regression":
        y = 3.0 * signal + rng.normal(scale=0.5, size=n_samples) + 100.0
    else:
        y = np.digitize(signal + rng.normal(scale=0.3, size=n_samples), [-0.5, 0.5])
    w = rng.uniform(0.2, 3.0, n_samples) if kind != "unweighted" else np.ones(n_samples)
    return X, y, w


def _fit_constants(kind, y, w):
    """The layout and scales the client gives every shard: those of all the rows."""
    is_classification = kind != "regression"
    layout = StatsLayout(
        is_classification,
        N_CLASSES if is_classification else 0,
        has_count_channel=kind != "unweighted",
    )
    target = {"y_class": y} if is_classification else {"y": y}
    whole = RowData(layout=layout, weight=w, **target).layout
    scales = RowScales(
        whole.weight_exponent,
        whole.exponents[0],
        y.size,
        centre=whole.centre or 0.0,
        target_exponent=whole.target_exponent or 0,
        sum_exponent=0 if is_classification else whole.exponents[1],
    )
    return layout, scales


def _shard_dict(X, y, w):
    """A shard as shards.load leaves it: its kept rows, concatenated."""
    return {
        "X_parts": [np.ascontiguousarray(X, dtype=np.float64)],
        "y": y.astype(np.int64) if y.dtype.kind in "iu" else y.astype(np.float64),
        "w": np.asarray(w, dtype=np.float64),
        "parts": [len(y)],
    }


class _Pair:
    """One shard's rows twice: a CPU shard (in the worker registry, by key, as the
    client's calls find it) and a device shard (the dictionary device_shards takes)."""

    def __init__(self, X, y, w, layout, scales, mapper):
        self.key = (uuid.uuid4().hex, "in-process")
        self.device_key = (uuid.uuid4().hex, "in-process")
        # Registered as shards.load registers its shards; shards.build dispatches on the
        # device it is given.
        shards._SHARDS[self.key] = _shard_dict(X, y, w)
        shards._SHARDS[self.device_key] = self.device = _shard_dict(X, y, w)
        cpu_built = shards.build(self.key, layout, scales, mapper, "cpu")
        device_built = shards.build(self.device_key, layout, scales, mapper, "cuda")
        assert self.device["device"] == "cuda" and "X_parts" not in self.device
        for a, b in zip(cpu_built[:3], device_built[:3], strict=True):
            _assert_identical(a, b)
        assert cpu_built[3] == device_built[3]
        self.layout = device_built[3]

    def release(self):
        shards.release(self.key)
        shards.release(self.device_key)


def _assert_identical(expected, got):
    expected, got = np.asarray(expected), np.asarray(got)
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def _same(pair, function, *args):
    """Run shards.<function> and device_shards.<function> with ``args``; check that the
    results are identical; return them."""
    expected = getattr(shards, function)(pair.key, *args)
    got = getattr(device_shards, function)(pair.device, *args)
    if isinstance(expected, tuple | list):
        assert len(got) == len(expected)
        for a, b in zip(expected, got, strict=True):
            _assert_identical(a, b)
    else:
        _assert_identical(expected, got)
    return got


def _check_level(pairs, nodes, rng):
    """Every read of a level's nodes on every shard: histograms, compact histograms and,
    for regression, both squared-deviation passes. Returns the nodes' rows per feature
    and bin, over every shard."""
    rows = 0
    for pair in pairs:
        rows = rows + _rows_per_bin(_same(pair, "histograms", nodes), pair.layout)
        _same(pair, "compact_histograms", nodes)
    if not pairs[0].layout.is_classification:
        means = rng.normal(scale=2.0, size=nodes.size)
        extremes = [_same(pair, "squared_deviation_extremes", nodes, means) for pair in pairs]
        # As the client does: pass 2 on the largest terms over every shard (a shard with
        # no row of a node still says its exponent, which the client reads from one).
        largest = np.max([e[0] for e in extremes], axis=0)
        for pair in pairs:
            _same(pair, "squared_deviation_parts", nodes, means, largest)
    return rows


def _rows_per_bin(hist, layout):
    if layout.has_count_channel:
        return hist[..., -1]
    if layout.is_classification:
        return hist.sum(axis=-1)  # unweighted: a weight of 1 per row
    return hist[..., 0]


def _splits(rows, rng, subsets):
    """A level's binary splits: per node a feature, the bin splitting its present rows
    in halves (so that the next level's nodes hold rows) and a missing side; with
    ``subsets``, every other node splits the categorical feature by a random set."""
    n_nodes = rows.shape[0]
    feature = rng.integers(0, rows.shape[1], n_nodes)
    if subsets:
        feature[::2] = CATEGORICAL
    counts = np.cumsum(rows[np.arange(n_nodes), feature, :-1], axis=1)  # the last: missing
    bin_threshold = np.argmax(counts >= counts[:, -1:] / 2, axis=1)
    missing_left = rng.integers(0, 2, n_nodes).astype(np.uint8)
    category_sets = None
    if subsets:
        words = np.zeros((n_nodes, 1), dtype=np.int64)
        words[:, 0] = rng.integers(1, (1 << N_CATEGORIES) - 1, n_nodes)
        category_sets = (feature == CATEGORICAL, words)
    return feature, bin_threshold, missing_left, category_sets


def _grow(pairs, rng, levels=3, subsets=False, multiway=False):
    """Split every node, level after level, on every pair; check each level's reads and
    routing; end with a multiway split on the categorical feature where asked."""
    nodes = np.array([0])
    next_id = 1
    for _ in range(levels):
        rows = _check_level(pairs, nodes, rng)
        feature, bin_threshold, missing_left, category_sets = _splits(rows, rng, subsets)
        left = next_id + 2 * np.arange(nodes.size)
        right = left + 1
        next_id += 2 * nodes.size
        for pair in pairs:
            _same(
                pair,
                "partition",
                nodes,
                feature,
                bin_threshold,
                missing_left,
                left,
                right,
                category_sets,
            )
        nodes = np.column_stack([left, right]).ravel()
    if multiway:
        n_children = rng.integers(2, 4, nodes.size)
        children = []
        for n in n_children:
            children.append(np.arange(next_id, next_id + n, dtype=np.int64))
            next_id += n
        branch_of_code = np.column_stack(
            [rng.integers(0, n_children) for _ in range(N_CATEGORIES)]
        ).astype(np.int64)
        default_branch = rng.integers(0, n_children).astype(np.int64)
        feature = np.full(nodes.size, CATEGORICAL, dtype=np.int64)
        for pair in pairs:
            _same(
                pair,
                "partition_multiway",
                nodes,
                feature,
                branch_of_code,
                default_branch,
                children,
            )
        nodes = np.concatenate(children)
    _check_level(pairs, nodes, rng)


def _pairs(kind, split_at, seed=0):
    """Shards of the rows before and after ``split_at`` (a small second shard holds no
    row of some nodes), with the fit's mapper, layout and scales."""
    X, y, w = _dataset(kind, seed=seed)
    mapper = BinMapper(max_bins=MAX_BINS, random_state=0).fit(X)
    layout, scales = _fit_constants(kind, y, w)
    bounds = [0, split_at, len(y)] if split_at else [0, len(y)]
    pairs = [
        _Pair(X[a:b], y[a:b], w[a:b], layout, scales, mapper)
        for a, b in zip(bounds[:-1], bounds[1:], strict=True)
    ]
    return pairs


@pytest.mark.parametrize("kind", ["unweighted", "weighted", "regression"])
def test_device_shards_match_cpu_shards(kind):
    pairs = _pairs(kind, split_at=236)
    try:
        _grow(pairs, np.random.default_rng(1))
    finally:
        for pair in pairs:
            pair.release()


@pytest.mark.parametrize("kind", ["unweighted", "regression"])
def test_categorical_subsets_and_multiway(kind):
    pairs = _pairs(kind, split_at=0, seed=2)
    try:
        _grow(pairs, np.random.default_rng(3), levels=2, subsets=True, multiway=True)
    finally:
        for pair in pairs:
            pair.release()


def test_compact_from_dense_keeps_bins_with_rows():
    """A bin is present where any statistic is non-zero; the missing bin never is."""
    dense = np.zeros((1, 2, 5, 2), dtype=np.int64)
    dense[0, 0, 3] = (4, 1)
    dense[0, 0, 1] = (0, 2)
    dense[0, 0, 4] = (7, 7)  # the missing bin
    dense[0, 1, 2] = (-3, 1)
    hist, code, missing = compact_from_dense(dense, 4, 3)
    np.testing.assert_array_equal(code, [[[1, 3, -1], [2, -1, -1]]])
    np.testing.assert_array_equal(hist[0, 0], [(0, 2), (4, 1), (0, 0)])
    np.testing.assert_array_equal(hist[0, 1], [(-3, 1), (0, 0), (0, 0)])
    np.testing.assert_array_equal(missing, [[(7, 7), (0, 0)]])


def test_a_shard_without_rows():
    """A worker may hold no row (every row of its partitions weighs 0): its reads are
    zeros and its routing sends nothing, as the CPU shard's."""
    X, y, w = _dataset("regression")
    mapper = BinMapper(max_bins=MAX_BINS, random_state=0).fit(X)
    layout, scales = _fit_constants("regression", y, w)
    pair = _Pair(X[:0], y[:0], w[:0], layout, scales, mapper)
    rng = np.random.default_rng(0)
    try:
        root = np.array([0])
        _check_level([pair], root, rng)
        splits = (np.array([0]), np.array([3]), np.array([1], dtype=np.uint8))
        _same(pair, "partition", root, *splits, np.array([1]), np.array([2]), None)
        nodes = np.array([1, 2])
        _check_level([pair], nodes, rng)
        children = [np.array([3, 4]), np.array([5, 6, 7])]
        branches = np.zeros((2, N_CATEGORIES), dtype=np.int64)
        feature = np.full(2, CATEGORICAL)
        _same(pair, "partition_multiway", nodes, feature, branches, np.array([1, 0]), children)
    finally:
        pair.release()
