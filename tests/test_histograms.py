"""Histogram kernels and binning against naive numpy oracles (gpu_tree.testing)."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tree
from gpu_tree.backends.cpu import CPUHistogramBackend
from gpu_tree.backends.rows import RowData
from gpu_tree.data.binning import BinMapper, check_max_bins, feature_edges
from gpu_tree.data.stats import StatsLayout
from gpu_tree.kernels import cpu as cpu_kernels
from gpu_tree.testing import naive_histograms

# ---------------------------------------------------------------------------------------
# Oracles
# ---------------------------------------------------------------------------------------


def classification_row_stats(y_class, weight, n_classes, with_count):
    stats = np.zeros((y_class.size, n_classes + int(with_count)))
    stats[np.arange(y_class.size), y_class] = weight
    if with_count:
        stats[:, -1] = 1.0
    return stats


def naive_bins(X, edges):
    """Bin b holds edges[b-1] < x <= edges[b]: the first edge >= x."""
    return np.stack([np.searchsorted(e, X[:, f], side="left") for f, e in enumerate(edges)])


def random_node_ranges(rng, n_samples, n_nodes):
    """A random permutation of the rows cut into n_nodes contiguous slices (some empty)."""
    sample_indices = rng.permutation(n_samples).astype(np.int64)
    cuts = np.sort(rng.integers(0, n_samples + 1, size=n_nodes - 1))
    bounds = np.concatenate([[0], cuts, [n_samples]]).astype(np.int64)
    return sample_indices, bounds[:-1].copy(), bounds[1:].copy()


def random_binned(rng, n_features, n_samples, n_bins):
    dtype = np.uint8 if n_bins <= 256 else np.uint16
    X_binned = np.empty((n_features, n_samples), dtype=dtype)
    for f in range(n_features):
        # Each feature uses a random subset of the bins, so some bins stay empty.
        used = rng.choice(n_bins, size=int(rng.integers(1, n_bins + 1)), replace=False)
        X_binned[f] = rng.choice(used, size=n_samples)
    return X_binned


# ---------------------------------------------------------------------------------------
# Histogram kernels
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("with_count", [False, True])
@pytest.mark.parametrize(("n_bins", "n_classes", "n_nodes"), [(7, 2, 1), (16, 3, 5), (300, 4, 3)])
def test_histograms_classification_matches_naive(with_count, n_bins, n_classes, n_nodes):
    rng = np.random.default_rng(n_bins + n_classes + int(with_count))
    n_samples, n_features = 400, 4
    X_binned = random_binned(rng, n_features, n_samples, n_bins)
    y_class = rng.integers(0, n_classes, size=n_samples).astype(np.int64)
    # Integer-valued weights keep every sum exact, so the comparison is exact too.
    weight = rng.integers(1, 4, size=n_samples).astype(float) if with_count else np.ones(n_samples)
    sample_indices, start, end = random_node_ranges(rng, n_samples, n_nodes)
    n_channels = n_classes + int(with_count)
    hist = np.zeros((n_nodes, n_features, n_bins, n_channels))
    count_channel = n_channels - 1 if with_count else -1
    # Unweighted fits take the kernel's unit-weight path (the weights are not read).
    unit_weight = not with_count
    for n_threads in (1, 3):  # feature groups of every size give the same histograms
        hist[:] = 0.0
        cpu_kernels.histograms_classification(
            X_binned,
            sample_indices,
            start,
            end,
            np.arange(n_features)[None],  # every feature, in order
            y_class,
            weight,
            unit_weight,
            count_channel,
            n_threads,
            hist,
        )
        row_stats = classification_row_stats(y_class, weight, n_classes, with_count)
        expected = naive_histograms(X_binned, sample_indices, start, end, row_stats, n_bins)
        np.testing.assert_array_equal(hist, expected)
    expected = naive_histograms(X_binned, sample_indices, start, end, row_stats, n_bins)
    np.testing.assert_array_equal(hist, expected)
    # Sanity of the oracle itself: each (node, feature) histogram holds the node's rows.
    for node in range(n_nodes):
        rows = sample_indices[start[node] : end[node]]
        for f in range(n_features):
            np.testing.assert_array_equal(hist[node, f].sum(axis=0), row_stats[rows].sum(axis=0))


def test_histograms_classification_float_weights():
    rng = np.random.default_rng(9)
    n_samples, n_features, n_bins, n_classes, n_nodes = 500, 3, 20, 3, 4
    X_binned = random_binned(rng, n_features, n_samples, n_bins)
    y_class = rng.integers(0, n_classes, size=n_samples).astype(np.int64)
    weight = rng.uniform(0.01, 5.0, size=n_samples)
    sample_indices, start, end = random_node_ranges(rng, n_samples, n_nodes)
    hist = np.zeros((n_nodes, n_features, n_bins, n_classes + 1))
    cpu_kernels.histograms_classification(
        X_binned,
        sample_indices,
        start,
        end,
        np.arange(n_features)[None],
        y_class,
        weight,
        False,
        n_classes,
        2,
        hist,
    )
    row_stats = classification_row_stats(y_class, weight, n_classes, True)
    expected = naive_histograms(X_binned, sample_indices, start, end, row_stats, n_bins)
    np.testing.assert_allclose(hist, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(hist[..., -1], expected[..., -1])  # counts exact


@pytest.mark.parametrize("with_count", [False, True])
@pytest.mark.parametrize(("n_bins", "n_nodes"), [(5, 1), (40, 6), (1000, 2)])
def test_histograms_dense_matches_naive(with_count, n_bins, n_nodes):
    rng = np.random.default_rng(n_bins + 10 * n_nodes)
    n_samples, n_features = 300, 3
    X_binned = random_binned(rng, n_features, n_samples, n_bins)
    y = rng.integers(-10, 11, size=n_samples).astype(float)
    w = rng.integers(1, 3, size=n_samples).astype(float) if with_count else np.ones(n_samples)
    layout = StatsLayout(False, 0, with_count)
    row_data = RowData(layout=layout, weight=w, y=y)
    row_stats = row_data.row_stats
    # Integers: [w, w * (y - centre)] in fixed point (exact here: small integer targets).
    assert row_stats.dtype == np.int64
    centre = row_data.layout.centre
    np.testing.assert_array_equal(
        row_data.layout.real(row_stats)[:, :2], np.stack([w, w * (y - centre)], axis=1)
    )
    sample_indices, start, end = random_node_ranges(rng, n_samples, n_nodes)
    hist = np.zeros((n_nodes, n_features, n_bins, row_stats.shape[1]), dtype=row_stats.dtype)
    every = np.arange(n_features)[None]
    cpu_kernels.histograms_dense(X_binned, sample_indices, start, end, every, row_stats, 2, hist)
    expected = naive_histograms(X_binned, sample_indices, start, end, row_stats, n_bins)
    np.testing.assert_array_equal(hist, expected)


def test_histograms_overwrite_the_given_array():
    """The kernels zero the nodes' histograms themselves (in parallel, each task its own
    block): whatever ``hist`` held, a call writes the histograms; a second the same."""
    rng = np.random.default_rng(2)
    X_binned = random_binned(rng, 2, 50, 6)
    y_class = rng.integers(0, 2, size=50).astype(np.int64)
    sample_indices, start, end = random_node_ranges(rng, 50, 2)
    hist = np.full((2, 2, 6, 2), 7.0)
    every = np.arange(2)[None]
    args = (X_binned, sample_indices, start, end, every, y_class, np.ones(50), True, -1, 2, hist)
    cpu_kernels.histograms_classification(*args)
    once = hist.copy()
    assert once.sum() == 2 * (end - start).sum()  # each row counted once per feature
    cpu_kernels.histograms_classification(*args)
    np.testing.assert_array_equal(hist, once)
    row_stats = rng.integers(-5, 5, size=(50, 3))
    dense = np.full((2, 2, 6, 3), -1)
    cpu_kernels.histograms_dense(X_binned, sample_indices, start, end, every, row_stats, 2, dense)
    expected = naive_histograms(X_binned, sample_indices, start, end, row_stats, 6)
    np.testing.assert_array_equal(dense, expected)


@pytest.mark.parametrize("row_major", [False, True])
@pytest.mark.parametrize("n_threads", [1, 3])
def test_histograms_of_listed_features(row_major, n_threads):
    """A forest's nodes build only their drawn features' histograms: ``hist[node, j]`` is
    feature ``node_features[node, j]``'s, each node its own list, in any order; both
    kernels, on codes stored feature by feature or row by row (the rows are read ahead of
    use, so nodes hold many more rows than the prefetch distance)."""
    rng = np.random.default_rng(11 + n_threads)
    n_samples, n_features, n_bins, n_nodes, n_listed = 3000, 9, 30, 5, 3
    X_binned = random_binned(rng, n_features, n_samples, n_bins)
    if row_major:
        X_binned = np.asfortranarray(X_binned)
    y_class = rng.integers(0, 3, size=n_samples).astype(np.int64)
    weight = rng.integers(1, 4, size=n_samples).astype(np.int64)
    sample_indices, start, end = random_node_ranges(rng, n_samples, n_nodes)
    listed = np.stack([rng.choice(n_features, n_listed, replace=False) for _ in range(n_nodes)])
    row_stats = classification_row_stats(y_class, weight, 3, True).astype(np.int64)
    every_feature = naive_histograms(X_binned, sample_indices, start, end, row_stats, n_bins)
    expected = every_feature[np.arange(n_nodes)[:, None], listed]
    hist = np.full((n_nodes, n_listed, n_bins, 4), -9, dtype=np.int64)
    cpu_kernels.histograms_classification(
        X_binned, sample_indices, start, end, listed, y_class, weight, False, 3, n_threads, hist
    )
    np.testing.assert_array_equal(hist, expected)
    hist[:] = -9
    cpu_kernels.histograms_dense(
        X_binned, sample_indices, start, end, listed, row_stats, n_threads, hist
    )
    np.testing.assert_array_equal(hist, expected)


def test_subtract_histograms_is_parent_minus_child():
    rng = np.random.default_rng(3)
    hist = rng.integers(0, 100, size=(4, 3, 5, 2))
    child = rng.integers(0, 100, size=(3, 3, 5, 2))
    parents = np.array([2, 0, 2])
    out = np.full((3, 3, 5, 2), 99)
    cpu_kernels.subtract_histograms(hist, parents, child, out)
    np.testing.assert_array_equal(out, hist[parents] - child)


# ---------------------------------------------------------------------------------------
# Backend: children sum to the parent
# ---------------------------------------------------------------------------------------


def _backend(rng, n_samples, n_features, *, classification, weighted, max_bins=256):
    X = rng.integers(0, 12, size=(n_samples, n_features)).astype(float)
    X[:, 0] += rng.normal(size=n_samples)  # one feature with many distinct values
    mapper = BinMapper(max_bins=max_bins).fit(X)
    X_binned, lower, upper = mapper.transform(X)
    weight = rng.integers(1, 4, size=n_samples).astype(float) if weighted else np.ones(n_samples)
    if classification:
        layout = StatsLayout(True, 3, weighted)
        row_data = RowData(
            layout, weight, y_class=rng.integers(0, 3, size=n_samples).astype(np.int64)
        )
    else:
        layout = StatsLayout(False, 0, weighted)
        row_data = RowData(layout, weight, y=rng.integers(-5, 6, size=n_samples).astype(float))
    return CPUHistogramBackend(X_binned, lower, upper, row_data), X_binned


@pytest.mark.parametrize("classification", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
def test_children_histograms_sum_to_the_parent(classification, weighted):
    rng = np.random.default_rng(int(classification) + 2 * int(weighted))
    backend, X_binned = _backend(
        rng, 600, 4, classification=classification, weighted=weighted, max_bins=32
    )
    root_hist, _, _ = backend.histograms(np.array([0]))
    root_stats = backend.root_stats()
    for f in range(4):  # every feature's histogram holds all rows
        np.testing.assert_array_equal(root_hist[0, f].sum(axis=0), root_stats)

    # Split the root, then both children, then check every parent/children triple.
    splits = {0: (1, 6), 1: (2, 3), 2: (0, 20)}  # node: (feature, bin)
    children = {0: (1, 2), 1: (3, 4), 2: (5, 6)}
    hists = {0: root_hist[0]}
    for parent in (0, 1, 2):
        f, b = splits[parent]
        left, right = children[parent]
        layout = backend.row_data.layout
        # The children's sizes, as the histograms count them (the partition checks them).
        n_left = np.array([layout.count(hists[parent][f, : b + 1].sum(axis=0))])
        n_right = np.array([layout.count(hists[parent][f].sum(axis=0))]) - n_left
        backend.partition(
            np.array([parent]),
            np.array([f]),
            np.array([b]),
            np.array([np.nan]),
            np.array([False]),  # missing values go right (there are none here)
            np.array([left]),
            np.array([right]),
            sizes=(n_left, n_right),
        )
        h, _, _ = backend.histograms(np.array([left, right]))
        hists[left], hists[right] = h[0], h[1]
        # Integer statistics: exact.
        np.testing.assert_array_equal(h[0] + h[1], hists[parent])
        larger = np.empty_like(h[:1])
        backend.subtract(hists[parent][None], np.array([0]), h[:1], out=larger)
        np.testing.assert_array_equal(larger[0], h[1])
        # The rows went where the bin threshold says, stably (ascending within each side).
        state = backend.row_partition
        for child, goes_left in ((left, True), (right, False)):
            rows = state.sample_indices[state.start[child] : state.end[child]]
            assert np.all((X_binned[f, rows] <= b) == goes_left)
            assert np.all(np.diff(rows) > 0)
        assert n_left[0] == state.end[left] - state.start[left]
        assert 0 < n_left[0] < state.end[parent] - state.start[parent]  # a real split
        assert n_left[0] == layout.count(hists[left][f].sum(axis=0))
        assert hists[left][f, b + 1 :].sum() == 0  # left child holds no bin above b
        assert hists[right][f, : b + 1].sum() == 0


def test_batch_of_nodes_histograms_match_one_at_a_time():
    rng = np.random.default_rng(5)
    backend, _ = _backend(rng, 300, 3, classification=True, weighted=False)
    root, _, _ = backend.histograms(np.array([0]))
    layout = backend.row_data.layout
    n_left = np.array([layout.count(root[0, 0, :6].sum(axis=0))])
    backend.partition(
        np.array([0]),
        np.array([0]),
        np.array([5]),
        np.array([np.nan]),
        np.array([False]),
        np.array([1]),
        np.array([2]),
        sizes=(n_left, np.array([300]) - n_left),
    )
    both, _, _ = backend.histograms(np.array([1, 2]))
    one, _, _ = backend.histograms(np.array([1]))
    two, _, _ = backend.histograms(np.array([2]))
    np.testing.assert_array_equal(both, np.concatenate([one, two]))


# ---------------------------------------------------------------------------------------
# BinMapper
# ---------------------------------------------------------------------------------------


def _check_bounds(X, X_binned, lower, upper, mapper=None):
    """bin_lower / bin_upper are the smallest / largest value of each bin for features
    with one value per bin, and the bin's edges for quantile-binned features."""
    n_samples, n_features = X.shape
    for f in range(n_features):
        codes = X_binned[f].astype(np.int64)
        if mapper is not None and not mapper.one_value_per_bin_[f]:
            edges = mapper.edges_[f]
            np.testing.assert_array_equal(upper[f, : edges.size], edges)
            np.testing.assert_array_equal(lower[f, 1 : edges.size + 1], edges)
            assert lower[f, 0] == -np.inf and upper[f, edges.size] == np.inf
            assert np.all(lower[f, codes] < X[:, f]) and np.all(X[:, f] <= upper[f, codes])
            continue
        for b in range(lower.shape[1]):
            values = X[codes == b, f]
            if values.size:
                assert lower[f, b] == values.min() and upper[f, b] == values.max()
            else:
                assert lower[f, b] == np.inf and upper[f, b] == -np.inf
        assert np.all(lower[f, codes] <= X[:, f]) and np.all(X[:, f] <= upper[f, codes])
        # Codes are monotone in the value.
        order = np.argsort(X[:, f], kind="stable")
        assert np.all(np.diff(codes[order]) >= 0)


def test_binmapper_one_bin_per_distinct_value():
    rng = np.random.default_rng(0)
    X = np.stack(
        [
            rng.choice([-3.5, 0.0, 0.25, 7.0, 1e6], size=200),
            rng.permutation(200).astype(float) * 1.5,  # 200 distinct values
            np.full(200, 4.0),  # a constant feature: one bin, no edges
        ],
        axis=1,
    )
    mapper = BinMapper(max_bins=256).fit(X)
    X_binned, lower, upper = mapper.transform(X)
    assert X_binned.shape == (3, 200) and X_binned.dtype == np.uint8
    for f in range(3):
        distinct = np.unique(X[:, f])
        np.testing.assert_array_equal(mapper.edges_[f], (distinct[:-1] + distinct[1:]) / 2)
        assert mapper.n_bins_per_feature_[f] == distinct.size
        # Every distinct value has its own bin, in order, and the bin's bounds are it.
        np.testing.assert_array_equal(
            X_binned[f], np.searchsorted(distinct, X[:, f]).astype(np.uint8)
        )
        np.testing.assert_array_equal(lower[f, : distinct.size], distinct)
        np.testing.assert_array_equal(upper[f, : distinct.size], distinct)
    assert mapper.edges_[2].size == 0
    _check_bounds(X, X_binned, lower, upper, mapper)


def test_feature_edges_exactly_max_bins_distinct_values():
    values = np.repeat(np.arange(10.0), 3)
    np.testing.assert_array_equal(feature_edges(values, 10), np.arange(9) + 0.5)
    assert feature_edges(values, 9).size <= 8  # one too many distinct values: quantiles


@pytest.mark.parametrize("max_bins", [2, 3, 16, 255, 256])
def test_binmapper_more_distinct_values_than_bins(max_bins):
    rng = np.random.default_rng(max_bins)
    X = np.stack([rng.normal(size=3000), rng.exponential(size=3000), rng.integers(0, 900, 3000)], 1)
    X = X.astype(float)
    mapper = BinMapper(max_bins=max_bins).fit(X)
    X_binned, lower, upper = mapper.transform(X)
    assert np.all(mapper.n_bins_per_feature_ <= max_bins)
    assert mapper.n_bins_ <= max_bins
    assert X_binned.dtype == np.uint8
    assert int(X_binned.max()) < max_bins
    for f in range(3):
        edges = mapper.edges_[f]
        assert edges.size <= max_bins - 1
        assert np.all(np.diff(edges) > 0)
        assert edges[-1] < X[:, f].max()  # the last bin is not empty
        np.testing.assert_array_equal(X_binned[f], naive_bins(X, mapper.edges_)[f])
    _check_bounds(X, X_binned, lower, upper, mapper)


def test_binmapper_uint16_codes_above_256_bins():
    rng = np.random.default_rng(1)
    X = np.stack([rng.normal(size=5000), rng.integers(0, 5, size=5000).astype(float)], 1)
    mapper = BinMapper(max_bins=1000).fit(X)
    X_binned, lower, upper = mapper.transform(X)
    assert mapper.n_bins_ > 256
    assert mapper.n_bins_ <= 1000
    assert mapper.bin_dtype_ == np.uint16 and X_binned.dtype == np.uint16
    assert lower.shape == upper.shape == (2, mapper.n_bins_)
    assert mapper.n_bins_per_feature_[1] == 5
    np.testing.assert_array_equal(X_binned, naive_bins(X, mapper.edges_))
    _check_bounds(X, X_binned, lower, upper, mapper)


def test_binmapper_uint8_when_few_bins_although_max_bins_is_large():
    X = np.arange(40, dtype=float).reshape(20, 2)
    mapper = BinMapper(max_bins=1000).fit(X)
    X_binned, _, _ = mapper.transform(X)
    assert mapper.n_bins_ == 20
    assert X_binned.dtype == np.uint8


def test_binmapper_exactly_256_and_257_bins():
    X = np.arange(257, dtype=float)[:, None]
    assert BinMapper(max_bins=300).fit(X[:256]).transform(X[:256])[0].dtype == np.uint8
    assert BinMapper(max_bins=300).fit(X).transform(X)[0].dtype == np.uint16


def test_binmapper_subsample_still_bounds_every_value():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(2000, 2))
    mapper = BinMapper(max_bins=32, subsample=200, random_state=0).fit(X)
    X_binned, lower, upper = mapper.transform(X)
    assert mapper.n_bins_ <= 32
    np.testing.assert_array_equal(X_binned, naive_bins(X, mapper.edges_))
    _check_bounds(X, X_binned, lower, upper, mapper)
    # Same seed, same edges.
    again = BinMapper(max_bins=32, subsample=200, random_state=0).fit(X)
    for a, b in zip(mapper.edges_, again.edges_, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kind", ["uniform weights", "offset target", "tiny and huge", "signed"])
def test_fixed_point_sums_are_exact_in_any_order(kind):
    """Fixed-point integers sum exactly in any order and never near int64's limit (the
    property that makes CPU and GPU histograms identical); each value moves by at most
    2**-61 of its column's absolute total; integers with exponent 0 are untouched."""
    from fractions import Fraction

    from gpu_tree.data.stats import fixed_point_exponent, from_fixed_point, to_fixed_point

    rng = np.random.default_rng(5)
    n = 2000
    columns = {
        "uniform weights": rng.uniform(0.1, 3.0, size=n),
        "offset target": 1e6 + rng.normal(size=n),
        "tiny and huge": np.concatenate([rng.uniform(size=n - 2) * 1e-9, [1e12, 3.3e11]]),
        "signed": rng.normal(size=n) * 1e3,
    }
    raw = columns[kind]
    exponent = fixed_point_exponent(raw)
    integers = to_fixed_point(raw, exponent)
    assert integers.dtype == np.int64
    assert int(np.sum(np.abs(integers))) < 2**62
    exact = sum(Fraction(int(v)) for v in integers)
    for order in (np.arange(n), np.arange(n)[::-1], rng.permutation(n)):
        assert Fraction(int(np.cumsum(integers[order])[-1])) == exact
    bound = np.sum(np.abs(raw)) * 2.0**-61
    assert np.max(np.abs(from_fixed_point(integers, exponent) - raw)) <= bound
    counts = np.arange(n, dtype=float) % 7
    np.testing.assert_array_equal(to_fixed_point(counts, 0), counts)


def test_binning_sample_is_a_seeded_uniform_sample_of_all_rows():
    """Edges come from a uniform sample of every row, not the first rows: on a column
    sorted by row the quantile edges must span the whole range, and they are exactly the
    edges of the sample drawn as documented (without replacement, seeded)."""
    n, subsample, max_bins = 5000, 400, 9
    X = np.column_stack([np.arange(n, dtype=float), np.arange(n, dtype=float)[::-1] ** 2])
    for seed in (0, 7):
        mapper = BinMapper(max_bins=max_bins, subsample=subsample, random_state=seed).fit(X)
        rows = np.random.default_rng(seed).choice(n, subsample, replace=False)
        for f in range(2):
            np.testing.assert_array_equal(mapper.edges_[f], feature_edges(X[rows, f], max_bins))
        # Deciles of the sorted column 0 are near 500, 1000, ..., 4500 (a 400-row sample
        # puts each within about 2.5 standard errors, 2.5 * sqrt(.25 / 400) * 5000 = 312);
        # the first 400 rows would put every edge below 400.
        deciles = np.arange(1, max_bins) * n / max_bins
        assert np.all(np.abs(mapper.edges_[0] - deciles) < 350), mapper.edges_[0]
    other = BinMapper(max_bins=max_bins, subsample=subsample, random_state=1).fit(X)
    assert not np.array_equal(other.edges_[0], mapper.edges_[0])  # the seed is used


def test_missing_values_beyond_the_binning_sample_still_get_the_missing_bin():
    X = np.arange(3000, dtype=float)[:, None]
    X[-1, 0] = np.nan  # one missing value, almost surely outside a 100-row sample
    mapper = BinMapper(max_bins=8, subsample=100, random_state=0).fit(X)
    assert mapper.has_missing_ and mapper.missing_bin_ == 7
    assert mapper.transform(X)[0][0, -1] == 7


def test_bin_columns_kernel_matches_searchsorted_on_many_blocks():
    # Enough rows for several parallel blocks (4096 rows each).
    rng = np.random.default_rng(4)
    X = np.round(rng.normal(size=(20000, 3)), 2)
    mapper = BinMapper(max_bins=64).fit(X)
    X_binned, lower, upper = mapper.transform(X)
    np.testing.assert_array_equal(X_binned, naive_bins(X, mapper.edges_))
    _check_bounds(X, X_binned, lower, upper, mapper)


@pytest.mark.parametrize("bad", [1, 0, -5, 65536, 100000])
def test_max_bins_out_of_range(bad):
    with pytest.raises(ValueError, match="max_bins"):
        check_max_bins(bad)
    with pytest.raises(ValueError, match="max_bins"):
        BinMapper(max_bins=bad)
    with pytest.raises(ValueError, match="max_bins"):
        gpu_tree.DecisionTreeClassifier(max_bins=bad).fit(np.arange(4.0)[:, None], [0, 1, 0, 1])


@pytest.mark.parametrize("bad", [2.5, 256.0, "256", None, True])
def test_max_bins_not_an_integer(bad):
    with pytest.raises(TypeError, match="max_bins"):
        check_max_bins(bad)
    with pytest.raises(TypeError, match="max_bins"):
        BinMapper(max_bins=bad)


@pytest.mark.parametrize("good", [2, 256, 65535, np.int64(300)])
def test_max_bins_in_range(good):
    assert check_max_bins(good) == int(good)


def _adjacent_pair_rounding_up(x):
    """Two adjacent floats a < b from x on whose midpoint a/2 + b/2 rounds to b (a has an
    odd last mantissa bit, so the tie goes to b's even one)."""
    a = np.float64(x)
    for _ in range(4):
        b = np.nextafter(a, np.inf)
        if a / 2 + b / 2 == b:
            return a, b
        a = b
    raise AssertionError(f"no rounding-up pair near {x}")


def test_adjacent_floats_whose_midpoint_rounds_up_keep_separate_bins():
    # An edge at the rounded midpoint would equal b, and b (edges[k-1] < x <= edges[k])
    # would share a's bin. The edge must stay strictly below b, at or above a.
    pairs = [_adjacent_pair_rounding_up(x) for x in (1.0, 3.0, -7.25, 1e10, 1e-300)]
    for a, b in pairs:
        assert b == np.nextafter(a, np.inf) and a / 2 + b / 2 == b  # the case meant
    values = np.array([v for pair in pairs for v in pair])
    X = np.repeat(values, 3)[:, None]
    mapper = BinMapper(max_bins=256).fit(X)
    X_binned, lower, upper = mapper.transform(X)
    distinct = np.unique(values)
    assert mapper.n_bins_per_feature_[0] == distinct.size == 10
    edges = mapper.edges_[0]
    assert np.all(distinct[:-1] <= edges) and np.all(edges < distinct[1:])
    # Each value its own bin, in order: the position among the distinct values.
    np.testing.assert_array_equal(X_binned[0], np.searchsorted(distinct, X[:, 0]))
    np.testing.assert_array_equal(lower[0, :10], distinct)
    np.testing.assert_array_equal(upper[0, :10], distinct)
    # A tree separates the two values of each pair, as exact search does.
    y = np.tile(np.repeat([0, 1], 3), len(pairs))
    for splitter in ("hist", "exact"):
        model = gpu_tree.DecisionTreeClassifier(splitter=splitter, device="cpu").fit(X, y)
        np.testing.assert_array_equal(model.predict(X), y)


def test_a_heavy_largest_value_leaves_no_empty_last_bin():
    # 0..9 once and 100 twenty times, 4 bins: the 'midpoint' quantiles of the 30 sorted
    # values sit at positions 7.25, 14.5 and 21.75, i.e. (7 + 8) / 2 = 7.5, then 100 and
    # 100. An edge at 100 (the largest value) would open a bin no value can reach.
    X = np.r_[np.arange(10.0), np.full(20, 100.0)][:, None]
    mapper = BinMapper(max_bins=4).fit(X)
    np.testing.assert_array_equal(mapper.edges_[0], [7.5])
    assert mapper.n_bins_per_feature_[0] == 2 and not mapper.one_value_per_bin_[0]
    X_binned, _, _ = mapper.transform(X)
    np.testing.assert_array_equal(X_binned[0], (X[:, 0] > 7.5).astype(int))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_bin_is_non_empty_on_the_data_it_was_fitted_on(seed):
    # Heavy values (a quarter of the rows at the maximum, a quarter at 0) among spread
    # ones, more distinct values than bins; with and without missing values.
    rng = np.random.default_rng(seed)
    n = 4000
    column = rng.exponential(size=n)
    column[rng.random(n) < 0.25] = column.max()
    column[rng.random(n) < 0.25] = 0.0
    X = np.c_[column, np.round(rng.normal(size=n), 1), rng.integers(0, 6, n)].astype(float)
    for missing in (False, True):
        if missing:
            X[rng.random(n) < 0.1, :2] = np.nan
        for max_bins in (4, 16, 64):
            mapper = BinMapper(max_bins=max_bins).fit(X)
            X_binned, _, _ = mapper.transform(X)
            for f in range(X.shape[1]):
                codes = X_binned[f][~np.isnan(X[:, f])].astype(np.int64)
                counts = np.bincount(codes, minlength=mapper.n_bins_per_feature_[f])
                assert counts.size == mapper.n_bins_per_feature_[f], (f, max_bins)
                assert counts[-1] > 0 and counts[0] > 0, (f, max_bins, counts)
            if missing:
                # At most max_bins bins in all, the missing values' code apart from
                # every value code.
                assert mapper.n_bins_ <= max_bins
                assert mapper.missing_bin_ == mapper.n_bins_ - 1
                assert np.all(mapper.n_bins_per_feature_ <= mapper.missing_bin_)
                assert np.all(X_binned[np.isnan(X.T)] == mapper.missing_bin_)


def test_bin_bounds_are_reduced_over_every_row_block():
    # Edges fitted on 0, 1, 2, 3 (one value per bin), then 12,288 other rows binned:
    # three parallel row blocks of 4096, each keeping its own per-bin minima and maxima.
    # Every bin's smallest and largest value are planted in the first block, so a merge
    # that kept only one block's tables would get them wrong.
    mapper = BinMapper(max_bins=256).fit(np.arange(4.0)[:, None].repeat(2, axis=1))
    np.testing.assert_array_equal(mapper.edges_[0], [0.5, 1.5, 2.5])
    rng = np.random.default_rng(5)
    n = 3 * 4096
    X = rng.integers(0, 4, size=(n, 2)) + rng.uniform(-0.4, 0.4, size=(n, 2))
    # Each bin b's extremes: b - 0.45 and b + 0.45, beyond every random value b +- 0.4.
    planted = np.arange(4).repeat(2) + np.tile([-0.45, 0.45], 4)
    X[10 : 10 + planted.size, 0] = planted  # rows of block 0
    X[20 : 20 + planted.size, 1] = planted[::-1]
    X_binned, lower, upper = mapper.transform(X)
    for f in range(2):
        codes = np.searchsorted([0.5, 1.5, 2.5], X[:, f], side="left")
        np.testing.assert_array_equal(X_binned[f], codes)
        for b in range(4):
            assert lower[f, b] == X[codes == b, f].min() == planted[2 * b], (f, b)
            assert upper[f, b] == X[codes == b, f].max() == planted[2 * b + 1], (f, b)


@pytest.mark.parametrize("n_classes", [2, 5])
@pytest.mark.parametrize("weighted", [False, True])
def test_compact_histograms_are_the_dense_ones_without_empty_bins(n_classes, weighted):
    """Small nodes take compact histograms (one slot per bin code present): the same
    statistics as the dense histogram's non-empty bins, in bin order, with each slot's
    bin code and value bounds."""
    rng = np.random.default_rng(n_classes + 2 * weighted)
    n_samples, n_features, n_nodes = 300, 4, 6
    X = rng.integers(0, 40, size=(n_samples, n_features)).astype(float) + rng.random((n_samples, 1))
    mapper = BinMapper(max_bins=64).fit(X)
    X_binned, bin_lower, bin_upper = mapper.transform(X)
    y_class = rng.integers(0, n_classes, size=n_samples).astype(np.int64)
    weight = rng.integers(1, 4, size=n_samples).astype(float) if weighted else np.ones(n_samples)
    row_data = RowData(
        layout=StatsLayout(True, n_classes, weighted), weight=weight, y_class=y_class
    )
    backend = CPUHistogramBackend(X_binned, bin_lower, bin_upper, row_data)
    sample_indices, start, end = random_node_ranges(rng, n_samples, n_nodes)
    state = backend.row_partition
    state.sample_indices[:] = sample_indices
    state.reserve(n_nodes)
    state.start[:n_nodes], state.end[:n_nodes] = start, end
    nodes = np.arange(n_nodes)
    dense, _, _ = backend.histograms(nodes)
    compact, lower, upper, code, missing = backend.compact_histograms(nodes)
    assert not missing.any()
    for node in nodes:
        for f in range(n_features):
            present = np.flatnonzero(row_data.layout.count(dense[node, f]) > 0)
            k = present.size
            np.testing.assert_array_equal(code[node, f, :k], present)
            assert np.all(code[node, f, k:] == -1)
            np.testing.assert_array_equal(compact[node, f, :k], dense[node, f, present])
            assert not compact[node, f, k:].any()
            np.testing.assert_array_equal(lower[node, f, :k], bin_lower[f, present])
            np.testing.assert_array_equal(upper[node, f, :k], bin_upper[f, present])


def test_a_partition_that_disagrees_with_the_histogram_counts_is_an_internal_error():
    """The CPU partition counts its rows as it routes them, and checks the histograms'
    counts it is given (the CUDA backend trusts them: no launch, no copy back)."""
    rng = np.random.default_rng(5)
    backend, _ = _backend(rng, 300, 3, classification=True, weighted=False)
    root, _, _ = backend.histograms(np.array([0]))
    n_left = int(backend.row_data.layout.count(root[0, 0, :6].sum(axis=0)))
    with pytest.raises(RuntimeError, match="partition disagrees with the histogram counts"):
        backend.partition(
            *(np.array([v]) for v in (0, 0, 5, np.nan, False, 1, 2)),
            sizes=(np.array([n_left + 1]), np.array([300 - n_left - 1])),
        )


@pytest.mark.parametrize("n_rows", [40, 3000, 40_000])
def test_binmapper_edges_the_same_sorted_together_or_column_by_column(monkeypatch, n_rows):
    """Small samples sort all their numeric columns in one call, large ones one column
    per task: the edges must not depend on which (NaN, ties, quantiles, categorical)."""
    rng = np.random.default_rng(n_rows)
    X = np.column_stack(
        [
            rng.normal(size=n_rows),  # quantile-binned past 255 distinct values
            np.round(rng.normal(size=n_rows) * 2),  # few distinct values
            np.where(rng.random(n_rows) < 0.3, np.nan, rng.normal(size=n_rows)),
            np.full(n_rows, np.nan),  # no value at all
            rng.integers(0, 4, size=n_rows).astype(float),  # categorical codes
        ]
    )
    n_categories = np.array([0, 0, 0, 0, 4])
    together = BinMapper(max_bins=64).fit(X, n_categories=n_categories)
    monkeypatch.setattr("gpu_tree.data.binning.PARALLEL_MIN_ELEMENTS", 0)
    apart = BinMapper(max_bins=64).fit(X, n_categories=n_categories)
    for f in range(X.shape[1]):
        np.testing.assert_array_equal(together.edges_[f], apart.edges_[f])
        if f < 4:
            np.testing.assert_array_equal(together.edges_[f], feature_edges(X[:, f], 63))
    np.testing.assert_array_equal(together.one_value_per_bin_, apart.one_value_per_bin_)
    np.testing.assert_array_equal(together.edges_[4], [0.5, 1.5, 2.5])
    assert together.edges_[3].size == 0
