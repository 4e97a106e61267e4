"""Histogram kernels and the CPU histogram backend against naive numpy oracles
(gpu_tree.testing). The binning they read: tests/data/test_binning.py."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_tree.backends.cpu import CPUHistogramBackend
from gpu_tree.backends.rows import RowData
from gpu_tree.data.binning import BinMapper
from gpu_tree.data.stats import StatsLayout
from gpu_tree.kernels.cpu import histograms as cpu_histograms
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
        cpu_histograms.histograms_classification(
            X_binned,
            sample_indices,
            start,
            end,
            np.arange(n_features)[None],  # every feature, in order
            y_class,
            weight,
            1,  # weight unit
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
    cpu_histograms.histograms_classification(
        X_binned,
        sample_indices,
        start,
        end,
        np.arange(n_features)[None],
        y_class,
        weight,
        1,  # weight unit
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
    cpu_histograms.histograms_dense(X_binned, sample_indices, start, end, every, row_stats, 2, hist)
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
    args = (X_binned, sample_indices, start, end, every, y_class, np.ones(50), 1, True, -1, 2, hist)
    cpu_histograms.histograms_classification(*args)
    once = hist.copy()
    assert once.sum() == 2 * (end - start).sum()  # each row counted once per feature
    cpu_histograms.histograms_classification(*args)
    np.testing.assert_array_equal(hist, once)
    row_stats = rng.integers(-5, 5, size=(50, 3))
    dense = np.full((2, 2, 6, 3), -1)
    cpu_histograms.histograms_dense(
        X_binned, sample_indices, start, end, every, row_stats, 2, dense
    )
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
    cpu_histograms.histograms_classification(
        X_binned, sample_indices, start, end, listed, y_class, weight, 1, False, 3, n_threads, hist
    )
    np.testing.assert_array_equal(hist, expected)
    # The CPU backend's one-byte rows: classes, and weights as multiples of a unit.
    unit = 3 << 40
    hist[:] = -9
    cpu_histograms.histograms_classification(
        X_binned,
        sample_indices,
        start,
        end,
        listed,
        y_class.astype(np.uint8),
        weight.astype(np.uint8),
        unit,
        False,
        3,
        n_threads,
        hist,
    )
    scaled = expected.copy()
    scaled[..., :3] *= unit
    np.testing.assert_array_equal(hist, scaled)
    hist[:] = -9
    cpu_histograms.histograms_dense(
        X_binned, sample_indices, start, end, listed, row_stats, n_threads, hist
    )
    np.testing.assert_array_equal(hist, expected)


def test_subtract_histograms_is_parent_minus_child():
    rng = np.random.default_rng(3)
    hist = rng.integers(0, 100, size=(4, 3, 5, 2))
    child = rng.integers(0, 100, size=(3, 3, 5, 2))
    parents = np.array([2, 0, 2])
    out = np.full((3, 3, 5, 2), 99)
    cpu_histograms.subtract_histograms(hist, parents, child, out)
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
# Fixed-point sums, compact histograms, the partition's check of the counts
# ---------------------------------------------------------------------------------------


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


@pytest.mark.parametrize("n_classes", [2, 5])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("with_missing", [False, True], ids=["complete", "missing"])
def test_compact_histograms_are_the_dense_ones_without_empty_bins(
    n_classes, weighted, with_missing
):
    """Small nodes take compact histograms (one slot per bin code present): the same
    statistics as the dense histogram's non-empty bins, in bin order, with each slot's
    bin code and value bounds; the rows missing a feature are summed apart, as the
    dense histogram's missing bin holds them."""
    rng = np.random.default_rng(n_classes + 2 * weighted)
    n_samples, n_features, n_nodes = 300, 4, 6
    X = rng.integers(0, 40, size=(n_samples, n_features)).astype(float) + rng.random((n_samples, 1))
    if with_missing:
        X[rng.random(X.shape) < 0.15] = np.nan
    mapper = BinMapper(max_bins=64).fit(X)
    X_binned, bin_lower, bin_upper = mapper.transform(X)
    missing_bin = mapper.missing_bin_
    assert (missing_bin >= 0) == with_missing
    y_class = rng.integers(0, n_classes, size=n_samples).astype(np.int64)
    weight = rng.integers(1, 4, size=n_samples).astype(float) if weighted else np.ones(n_samples)
    row_data = RowData(
        layout=StatsLayout(True, n_classes, weighted), weight=weight, y_class=y_class
    )
    backend = CPUHistogramBackend(X_binned, bin_lower, bin_upper, row_data, missing_bin)
    sample_indices, start, end = random_node_ranges(rng, n_samples, n_nodes)
    state = backend.row_partition
    state.sample_indices[:] = sample_indices
    state.reserve(n_nodes)
    state.start[:n_nodes], state.end[:n_nodes] = start, end
    nodes = np.arange(n_nodes)
    dense, _, _ = backend.histograms(nodes)
    compact, lower, upper, code, missing = backend.compact_histograms(nodes)
    if with_missing:
        np.testing.assert_array_equal(missing, dense[:, :, missing_bin])
        assert missing.any()
        dense = dense[:, :, :missing_bin]  # the present values' bins
    else:
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


@pytest.mark.parametrize(
    ("weight", "unit", "multiples"),
    [
        ([6, 0, 12, 6, 30], 6, [1, 0, 2, 1, 5]),  # a forest's bootstrap counts, scaled
        ([7, 7 * 255], 7, [1, 255]),
        ([1 << 60, 3 << 60], 1 << 60, [1, 3]),
        ([0, 0], 0, None),  # no positive weight: no unit
        ([2, 3], 0, None),  # no common unit
        ([1, 256], 0, None),  # more than a byte of units
        ([(1 << 62) - 1, 1 << 62], 0, None),  # the float quotient is not exact
    ],
)
def test_weight_multiples(weight, unit, multiples):
    weight = np.asarray(weight, dtype=np.int64)
    out = np.zeros(weight.size, dtype=np.uint8)
    assert cpu_histograms.weight_multiples(weight, out) == unit
    if multiples is not None:
        np.testing.assert_array_equal(out, multiples)
        np.testing.assert_array_equal(out.astype(np.int64) * unit, weight)
