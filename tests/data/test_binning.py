"""Binning (gpu_tree.data.binning): BinMapper's edges, codes and per-bin bounds against
naive numpy oracles, the binning sample, and the max_bins checks."""

from __future__ import annotations

import numpy as np
import pytest

import gpu_tree
from gpu_tree.data.binning import BinMapper, check_max_bins, feature_edges


def naive_bins(X, edges):
    """Bin b holds edges[b-1] < x <= edges[b]: the first edge >= x."""
    return np.stack([np.searchsorted(e, X[:, f], side="left") for f, e in enumerate(edges)])


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


@pytest.mark.parametrize("seed", range(8))
def test_edges_of_all_columns_at_once_are_each_columns_own_bit_for_bit(seed):
    """The edges found for all columns in one pass equal those of each sorted column on
    its own (_edges_of_sorted): few and many distinct values side by side, NaN in
    different numbers per column (so several groups of present counts among the
    quantile-binned ones), ties, zeros of both signs and infinities; the same bits, the
    same kind (one value per bin or quantiles)."""
    from gpu_tree.data.binning import _edges_of_columns, _edges_of_sorted

    rng = np.random.default_rng(seed)
    n_rows, max_bins = int(rng.integers(300, 900)), int(rng.integers(3, 80))
    signed_zeros = rng.choice([-0.0, 0.0], size=n_rows)
    X = np.column_stack(
        [
            rng.normal(size=n_rows),
            np.where(rng.random(n_rows) < 0.2, np.nan, rng.normal(size=n_rows)),
            np.where(rng.random(n_rows) < 0.5, np.nan, rng.normal(size=n_rows)),
            rng.integers(0, max_bins + 2, size=n_rows).astype(float),
            rng.choice([-0.0, 0.0, 1.5, np.inf, -np.inf, np.nan], size=n_rows),
            np.where(rng.random(n_rows) < 0.8, signed_zeros, rng.normal(size=n_rows)),
            np.full(n_rows, 3.0),
            np.full(n_rows, np.nan),
        ]
    )
    features = rng.permutation(X.shape[1])[: int(rng.integers(1, X.shape[1] + 1))]
    together = _edges_of_columns(X, features, max_bins)
    columns = np.sort(X[:, features], axis=0)
    for k, (edges, one_per_bin) in enumerate(together):
        column = columns[:, k]
        alone, alone_one_per_bin = _edges_of_sorted(column[~np.isnan(column)], max_bins)
        assert one_per_bin == alone_one_per_bin, features[k]
        assert edges.dtype == alone.dtype and edges.shape == alone.shape, features[k]
        np.testing.assert_array_equal(edges.view(np.int64), alone.view(np.int64))
