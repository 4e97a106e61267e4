"""Per-feature bin edges and the binned (feature-major) matrix.

When a feature has no more distinct values than ``max_bins``, its edges are the
midpoints between consecutive distinct values: every distinct value gets its own bin,
so histogram search sees exactly the candidates exact search sees. Otherwise the edges
are quantiles of the values (computed on a row sample when there are many rows).

Thresholds are not the edges themselves: the grower places each threshold midway
between the largest value left of the split and the smallest value right of it
(``bin_upper`` / ``bin_lower``), so a tree predicts on raw X with no binning.
"""

from __future__ import annotations

import functools
import time
from typing import NamedTuple

import numpy as np

from gpu_tree.data import sparse
from gpu_tree.data.categorical import feature_label
from gpu_tree.utils.device_copies import device_to_host, host_to_device, to_host
from gpu_tree.utils.fit_stats import launch
from gpu_tree.utils.progress import binning_logger as logger
from gpu_tree.utils.progress import step
from gpu_tree.utils.threads import PARALLEL_MIN_ELEMENTS, parallel_map

MAX_BINS_LIMIT = 65535
# Rows used to find quantile edges; more buys little precision for 256 bins.
DEFAULT_BINNING_SUBSAMPLE = 200_000


def check_max_bins(max_bins) -> int:
    if isinstance(max_bins, bool) or not isinstance(max_bins, (int, np.integer)):
        raise TypeError(f"max_bins must be an integer in [2, {MAX_BINS_LIMIT}], got {max_bins!r}")
    if not 2 <= max_bins <= MAX_BINS_LIMIT:
        raise ValueError(f"max_bins must be in [2, {MAX_BINS_LIMIT}], got {max_bins}")
    return int(max_bins)


def check_category_counts(n_categories, max_bins, has_missing, feature_names=None):
    """Each category needs a bin of its own: refuse, naming the feature, more categories
    than ``max_bins`` (less the missing values' bin when X has missing values) allows."""
    value_bins = max_bins - 1 if has_missing else max_bins
    too_many = np.flatnonzero(np.asarray(n_categories) > value_bins)
    if too_many.size:
        f = too_many[0]
        reason = " (one bin is kept for missing values)" if has_missing else ""
        raise ValueError(
            f"categorical {feature_label(f, feature_names)} has {n_categories[f]:,} categories, "
            f"more than the {value_bins} bins max_bins={max_bins} allows{reason}; raise "
            f"max_bins (up to {MAX_BINS_LIMIT}) or merge rare categories"
        )


def missing_by_feature(X) -> np.ndarray:
    """Whether each feature (column) of X holds a missing value (NaN), as a bool array:
    a host array in one compiled pass, a GPU array on the GPU (only the answer comes
    back)."""
    from gpu_tree.kernels.cpu import binning as cpu_binning

    if isinstance(X, np.ndarray):
        return (cpu_binning.nonfinite_columns(X) & cpu_binning.HOLDS_NAN) != 0
    return np.asarray(device_to_host((X != X).any(axis=0)), dtype=bool)


def _midpoints(values):
    # Same rounding guard as the split thresholds: never land on the upper value.
    mid = values[:-1] / 2.0 + values[1:] / 2.0
    return np.where(mid >= values[1:], values[:-1], mid)


def feature_edges(column, max_bins: int) -> np.ndarray:
    """Bin edges of one feature: at most ``max_bins - 1`` increasing values."""
    return _edges_and_kind(column, max_bins)[0]


def _edges_and_kind(column, max_bins: int):
    """(edges, one_value_per_bin): whether every distinct value got a bin of its own.
    Missing values (NaN) take no part: they have a bin of their own."""
    values = np.asarray(column, dtype=np.float64)
    return _edges_of_sorted(np.sort(values[~np.isnan(values)]), max_bins)


def _edges_of_columns(sample, features, max_bins: int) -> list:
    """:func:`_edges_and_kind` of several columns of ``sample``: one sort for all of them,
    and each step of :func:`_edges_of_sorted` on all the columns at once (a numpy call or
    two per step, where a call per column and step was most of a small fit's binning).
    The same operations on the same values, so the same edges."""
    columns = np.sort(np.asarray(sample[:, features], dtype=np.float64), axis=0)
    n_rows, n_columns = columns.shape
    n_present = n_rows - np.count_nonzero(np.isnan(columns), axis=0)  # NaN last
    is_new = np.empty(columns.shape, dtype=bool)  # a column's distinct values, in order
    is_new[:1] = True
    np.not_equal(columns[1:], columns[:-1], out=is_new[1:])
    if np.any(n_present < n_rows):
        is_new &= np.arange(n_rows)[:, None] < n_present
    n_distinct = np.count_nonzero(is_new, axis=0)
    found = [None] * n_columns
    few = np.flatnonzero(n_distinct <= max_bins)
    if few.size:  # an edge between each two neighbouring values (_midpoints)
        distinct = columns.T[few][is_new.T[few]]  # column by column
        column_of = np.repeat(np.arange(few.size), n_distinct[few])
        pair = column_of[1:] == column_of[:-1]
        below, above = distinct[:-1][pair], distinct[1:][pair]
        midpoints = below / 2.0 + above / 2.0
        flat = np.where(midpoints >= above, below, midpoints)
        n_edges = np.maximum(n_distinct[few] - 1, 0)
        ends = np.cumsum(n_edges)
        for k, start, end in zip(
            few.tolist(), (ends - n_edges).tolist(), ends.tolist(), strict=True
        ):
            found[k] = (flat[start:end], True)
    many = np.flatnonzero(n_distinct > max_bins)
    for n_values in np.unique(n_present[many]).tolist():  # quantile edges (_edges_of_sorted)
        group = many[n_present[many] == n_values]
        positions = _quantile_fractions(max_bins) * (n_values - 1)
        below = columns[np.floor(positions).astype(np.int64)][:, group]
        above = columns[np.ceil(positions).astype(np.int64)][:, group]
        edges = below / 2.0 + above / 2.0  # increasing down each column: unique = runs
        keep = np.empty(edges.shape, dtype=bool)
        keep[:1] = True
        np.not_equal(edges[1:], edges[:-1], out=keep[1:])
        keep &= edges < columns[n_values - 1, group]  # not the largest value (an empty bin)
        flat = edges.T[keep.T]
        n_edges = np.count_nonzero(keep, axis=0)
        ends = np.cumsum(n_edges)
        # Edges of 0.0 and -0.0 are one edge, whose sign np.unique's sort chooses: a column
        # with several zero edges takes its choice.
        zeros = np.count_nonzero(edges == 0.0, axis=0) > 1
        for j, (k, start, end) in enumerate(
            zip(group.tolist(), (ends - n_edges).tolist(), ends.tolist(), strict=True)
        ):
            if zeros[j]:
                alone = np.unique(edges[:, j])
                found[k] = (alone[alone < columns[n_values - 1, k]], False)
            else:
                found[k] = (flat[start:end], False)
    return found


@functools.cache
def _quantile_fractions(max_bins: int) -> np.ndarray:
    fractions = np.linspace(0, 100, num=max_bins + 1)[1:-1] / 100.0
    fractions.flags.writeable = False
    return fractions


def _edges_of_sorted(values, max_bins: int, n_zeros: int = 0):
    """:func:`_edges_and_kind` of sorted values, none missing, and ``n_zeros`` more values
    0 (a sparse column's rows that store nothing): the edges of the values with the zeros
    inserted in order, without building that array."""
    if n_zeros:
        split = int(np.searchsorted(values, 0.0, side="left"))
        distinct_values = np.concatenate([values[:split], [0.0], values[split:]])
    else:
        distinct_values = values
    if distinct_values.size == 0:
        return np.zeros(0), True
    is_new = np.empty(distinct_values.size, dtype=bool)
    is_new[:1] = True
    np.not_equal(distinct_values[1:], distinct_values[:-1], out=is_new[1:])
    distinct = distinct_values[is_new]
    if distinct.size <= max_bins:
        return _midpoints(distinct), True
    n_values = values.size + n_zeros

    def value_at(positions):  # the i-th smallest value of the column, zeros included
        if not n_zeros:
            return values[positions]
        after_zeros = positions >= split + n_zeros
        stored = np.where(after_zeros, positions - n_zeros, np.minimum(positions, split))
        among_zeros = (positions >= split) & ~after_zeros
        return np.where(among_zeros, 0.0, values[np.minimum(stored, values.size - 1)])

    # Quantiles with numpy's 'midpoint' method, read off the sorted values: edges fall
    # between data values rather than on them where they can.
    positions = _quantile_fractions(max_bins) * (n_values - 1)
    edges = np.unique(
        value_at(np.floor(positions).astype(np.int64)) / 2.0
        + value_at(np.ceil(positions).astype(np.int64)) / 2.0
    )
    # A heavy value can make an edge equal the largest value; that edge would leave the
    # last bin empty, so drop it.
    return edges[edges < distinct[-1]], False


# The edges of a feature that has none (one value, or none at all): shared by every such
# feature, as a sparse X's empty columns are (size 0: nothing in it can change).
_NO_EDGES = np.zeros(0)
_NO_EDGES.flags.writeable = False


def _sparse_edges(sample, features, max_bins: int):
    """:func:`_edges_of_sorted` of the columns ``features`` of a canonical CSR ``sample``
    (each column's stored values, NaN left out, and its rows that store nothing counted
    as zeros), for those of them that store a value: (their positions, their (edges,
    one_value_per_bin) pairs). A column that stores nothing has a single value, 0, so no
    edge, and one value per bin: the caller's default, never visited here.

    The cost follows the stored values, not the columns: the columns that store a value
    and have a few distinct values (at most ``max_bins``, zero included; most columns of
    a sparse X) get their midpoints from one sort of all stored values, and only the
    others (more distinct values than bins: at most stored values / ``max_bins`` of them,
    quantile edges; or every row stored: edges in the values' own dtype) are visited one
    by one, with the same :func:`_edges_of_sorted`. Either way, the edges are those it
    gives column by column (the same operations on the same values)."""
    n_rows, n_features = sample.shape
    columns = sample.tocsc()  # O(stored values + columns), in SciPy's compiled code
    n_stored = np.diff(columns.indptr)  # NaN included: a stored NaN is not a zero
    wanted = np.zeros(n_features, dtype=bool)
    wanted[features] = True
    wanted &= n_stored > 0
    # Columns whose every row stores a value: no zero inserted, so _edges_of_sorted
    # computes in their dtype (float32 edges of float32 values): visited one by one.
    full = wanted & (n_stored == n_rows)
    with_zeros = wanted & ~full
    # Each column with zeros: its stored values (NaN out) and one 0.0, in float64, as
    # _edges_of_sorted concatenates them; sorted by column, then value, the inserted zero
    # before any stored one (-0.0 or 0.0), as its searchsorted(side="left") puts it.
    column_of = np.repeat(np.arange(n_features, dtype=np.int64), n_stored)
    keep = with_zeros[column_of] & ~np.isnan(columns.data)
    zero_columns = np.flatnonzero(with_zeros)
    column_of = np.concatenate([column_of[keep], zero_columns])
    values = np.concatenate([columns.data[keep].astype(np.float64), np.zeros(zero_columns.size)])
    is_stored = np.concatenate([np.ones(keep.sum(), np.int8), np.zeros(zero_columns.size, np.int8)])
    order = np.lexsort((is_stored, values, column_of))
    column_of, values = column_of[order], values[order]
    is_new = np.ones(values.size, dtype=bool)  # distinct (column, value) pairs
    np.not_equal(values[1:], values[:-1], out=is_new[1:])
    is_new[1:] |= column_of[1:] != column_of[:-1]
    column_of, distinct = column_of[is_new], values[is_new]
    n_distinct = np.bincount(column_of, minlength=n_features)
    few = with_zeros & (n_distinct <= max_bins)
    # Few distinct values: an edge between each two neighbours, _midpoints' arithmetic.
    pair = (column_of[1:] == column_of[:-1]) & few[column_of[1:]]
    below, above = distinct[:-1][pair], distinct[1:][pair]
    midpoints = below / 2.0 + above / 2.0
    flat = np.where(midpoints >= above, below, midpoints)
    few_columns = np.flatnonzero(few)
    ends = np.cumsum(n_distinct[few_columns] - 1)
    starts = ends - (n_distinct[few_columns] - 1)
    found = {
        f: (flat[start:end], True)
        for f, start, end in zip(few_columns.tolist(), starts.tolist(), ends.tolist(), strict=True)
    }
    for f in np.flatnonzero(full | (with_zeros & ~few)).tolist():
        present, n_zeros = sparse.column_values(columns, f)
        found[f] = _edges_of_sorted(present, max_bins, n_zeros)
    return list(found), list(found.values())


class SparseCodes(NamedTuple):
    """The bin codes of a sparse X, in its CSR layout.

    Attributes
    ----------
    indptr, indices : ndarray of int64
        X's (canonical CSR): row i stores the columns ``indices[indptr[i]:indptr[i+1]]``.
    codes : ndarray of uint8 or uint16
        The bin code of each stored value, aligned with ``indices``.
    zero_code : ndarray of int64, shape (n_features,)
        Each feature's bin of the value 0: the code of every value not stored.
    n_samples : int
    """

    indptr: np.ndarray
    indices: np.ndarray
    codes: np.ndarray
    zero_code: np.ndarray
    n_samples: int

    @property
    def shape(self):
        """(n_features, n_samples), as a dense X_binned's."""
        return (self.zero_code.size, self.n_samples)

    def dense(self) -> np.ndarray:
        """The codes as a dense (n_features, n_samples) matrix (a GPU backend's input)."""
        from gpu_tree.kernels.cpu import sparse as cpu_sparse_kernels

        out = np.empty(self.shape, dtype=self.codes.dtype)
        cpu_sparse_kernels.dense_codes(self.indptr, self.indices, self.codes, self.zero_code, out)
        return out

    def take_rows(self, rows):
        """The codes of the rows ``rows`` (int64 positions), in that order."""
        starts, ends = self.indptr[rows], self.indptr[rows + 1]
        lengths = ends - starts
        indptr = np.zeros(rows.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        picked = np.repeat(starts - indptr[:-1], lengths) + np.arange(indptr[-1])
        return SparseCodes(
            indptr, self.indices[picked], self.codes[picked], self.zero_code, rows.size
        )


class BinMapper:
    """Learns per-feature bin edges and maps a float matrix to bin codes.

    Parameters
    ----------
    max_bins : int
        Most bins per feature, in [2, 65535]. Codes are uint8 up to 256 bins, else uint16.
    subsample : int
        Rows sampled to compute quantile edges (all rows when there are fewer).
    random_state : int
        Seed of that row sample.
    """

    def __init__(
        self, max_bins: int = 256, subsample: int = DEFAULT_BINNING_SUBSAMPLE, random_state=0
    ):
        self.max_bins = check_max_bins(max_bins)
        self.subsample = subsample
        self.random_state = random_state

    def fit(self, X, n_categories=None, feature_names=None):
        """X: ndarray of shape (n_samples, n_features), floats (NaN: missing).

        ``n_categories`` (per feature, 0 for numeric ones): categorical features hold codes
        0..K-1, and code k gets bin k, so a bin code is a category code.
        """
        start = time.perf_counter()
        n_samples = X.shape[0]
        rows = self.sample_rows(n_samples)
        if sparse.is_sparse(X):  # canonical CSR (data.sparse.check_sparse_X)
            sample = X if rows is None else X[rows]
            missing = sparse.missing_by_feature(X)
            return self.fit_sample(sample, missing, n_categories, feature_names, start)
        if rows is not None and not isinstance(X, np.ndarray):
            import cupy  # a GPU array: index it with a device array

            rows = cupy.asarray(rows)
        sample = X if rows is None else X[rows]
        sample = to_host(sample)  # from a GPU array, only the row sample comes to the host
        # Missing values (decided on all rows, not the sample) get the last bin, so the
        # values of every feature keep max_bins - 1 bins, as in HistGradientBoosting.
        # Which features had them is kept: the exports mark a split's missing side only
        # where its feature did.
        return self.fit_sample(sample, missing_by_feature(X), n_categories, feature_names, start)

    def sample_rows(self, n_samples):
        """The rows (increasing positions) :meth:`fit` finds quantile edges on, for X of
        ``n_samples`` rows: None for all of them."""
        if n_samples <= self.subsample:
            return None
        rng = np.random.default_rng(self.random_state)
        return np.sort(rng.choice(n_samples, self.subsample, replace=False))

    def fit_sample(self, sample, missing, n_categories=None, feature_names=None, start=None):
        """:meth:`fit` from its row sample (X at :meth:`sample_rows`, on the host) and
        which features have missing values among all rows: a distributed fit gathers
        only these."""
        start = time.perf_counter() if start is None else start
        n_features = sample.shape[1]
        self.missing_by_feature_ = np.asarray(missing, dtype=bool)
        self.has_missing_ = bool(self.missing_by_feature_.any())
        value_bins = self.max_bins - 1 if self.has_missing_ else self.max_bins

        if n_categories is None:
            n_categories = np.zeros(n_features, dtype=np.int64)
        n_categories = np.asarray(n_categories)
        check_category_counts(n_categories, self.max_bins, self.has_missing_, feature_names)

        # Each feature's edges (none, one bin, until found: a sparse X's columns that
        # store nothing keep these), and whether each of its values has a bin of its own:
        # arrays, not a list of pairs per feature (a sparse X may have millions of columns).
        edges = [_NO_EDGES] * n_features
        # Features whose sampled values each have a bin: thresholds go midway between
        # the actual neighbouring values (so histogram search equals exact search), which
        # needs each bin's smallest and largest value. Quantile-binned features use
        # their edges as bin bounds instead.
        one_value_per_bin = np.ones(n_features, dtype=bool)
        n_bins_per_feature = np.ones(n_features, dtype=np.int64)

        def record(features, found):
            for f, (feature_edges, one_per_bin) in zip(features, found, strict=True):
                edges[f] = feature_edges
                one_value_per_bin[f] = one_per_bin
                n_bins_per_feature[f] = feature_edges.size + 1

        categorical = np.flatnonzero(n_categories > 0)  # code k gets bin k: edges between codes
        record(categorical, [(np.arange(n_categories[f] - 1) + 0.5, True) for f in categorical])
        numeric = np.flatnonzero(n_categories == 0)
        n_values = sample.shape[0] * numeric.size
        if sparse.is_sparse(sample):  # a column's stored values, and its zeros counted
            record(*_sparse_edges(sample, numeric, value_bins))
        elif n_values < PARALLEL_MIN_ELEMENTS:
            record(numeric, _edges_of_columns(sample, numeric, value_bins))
        else:
            # numpy's sort releases the GIL, so threads sort several features at once.
            record(
                numeric,
                parallel_map(
                    lambda f: _edges_and_kind(sample[:, f], value_bins), numeric, n_values
                ),
            )
        self.edges_ = edges
        self.one_value_per_bin_ = one_value_per_bin
        self._tables = None
        self.n_bins_per_feature_ = n_bins_per_feature
        self.n_bins_ = int(self.n_bins_per_feature_.max()) + (1 if self.has_missing_ else 0)
        # The missing values' bin (-1: the training data had none).
        self.missing_bin_ = self.n_bins_ - 1 if self.has_missing_ else -1
        self.bin_dtype_ = np.uint8 if self.n_bins_ <= 256 else np.uint16
        logger.debug(
            "bin edges of %d features from %s rows (%.2f s)",
            n_features,
            f"{sample.shape[0]:,}",
            time.perf_counter() - start,
        )
        return self

    def transform(self, X, row_major: bool = False):
        """Bin codes of X, feature-major, with each bin's smallest and largest value.

        Returns
        -------
        X_binned : ndarray of shape (n_features, n_samples), uint8 or uint16
            Indexed [feature, row] either way. ``row_major`` stores each row's codes
            together (the transpose of a C-contiguous (n_samples, n_features) array):
            the CPU backend gathers the scattered rows of a node, one cache line per row
            instead of one per feature. Feature-major suits a GPU's coalesced reads.
        bin_lower, bin_upper : ndarray of shape (n_features, n_bins), float64
            Bounds of the values in each bin. For features with one value per bin: the
            smallest / largest value of X in it (+inf / -inf for empty bins); for
            quantile-binned features: its edges, edges[b-1] < x <= edges[b] (-inf / +inf
            past the first / last edge).
        """
        from gpu_tree.kernels.cpu import binning as cpu_binning

        start = time.perf_counter()
        n_samples, n_features = X.shape
        edges, offsets, lookup, cells_per_unit = self._search_tables()
        if row_major:
            X_binned = np.empty((n_samples, n_features), dtype=self.bin_dtype_).T
        else:
            X_binned = np.empty((n_features, n_samples), dtype=self.bin_dtype_)
        bin_lower = np.full((n_features, self.n_bins_), np.inf)
        bin_upper = np.full((n_features, self.n_bins_), -np.inf)
        cpu_binning.bin_columns(
            X,
            edges,
            offsets,
            lookup,
            cells_per_unit,
            self.one_value_per_bin_,
            self.missing_bin_,
            X_binned,
            bin_lower,
            bin_upper,
        )
        self._bounds_from_edges(bin_lower, bin_upper)
        logger.info(
            "binned %s rows x %d features, at most %d bins (%.2f s)",
            f"{n_samples:,}",
            n_features,
            self.n_bins_,
            time.perf_counter() - start,
            extra=step("binning", n_features, n_features, unit="feature", done=True),
        )
        return X_binned, bin_lower, bin_upper

    def transform_sparse(self, X):
        """:meth:`transform` of a sparse X (canonical CSR: data.sparse.check_sparse_X),
        without densifying it: the codes of its stored values (:class:`SparseCodes`), and
        each bin's bounds (those of the value 0 included where a feature has rows that
        store nothing)."""
        from gpu_tree.kernels.cpu import sparse as cpu_sparse_kernels

        start = time.perf_counter()
        n_samples, n_features = X.shape
        edges, offsets, lookup, cells_per_unit = self._search_tables()
        codes = np.empty(X.data.size, dtype=self.bin_dtype_)
        bin_lower = np.full((n_features, self.n_bins_), np.inf)
        bin_upper = np.full((n_features, self.n_bins_), -np.inf)
        cpu_sparse_kernels.bin_sparse_values(
            *sparse.csr_arrays(X),
            edges,
            offsets,
            lookup,
            cells_per_unit,
            self.one_value_per_bin_,
            self.missing_bin_,
            codes,
            bin_lower,
            bin_upper,
        )
        # The value 0's bin: the number of edges below 0 (edges[b-1] < x <= edges[b]).
        zero_code = np.zeros(n_features, dtype=np.int64)  # a feature without edges: bin 0
        for f in np.flatnonzero(self.n_bins_per_feature_ > 1).tolist():  # columns that store
            zero_code[f] = np.searchsorted(self.edges_[f], 0.0, side="left")
        has_zeros = np.bincount(X.indices, minlength=n_features) < n_samples
        tracked = np.flatnonzero(has_zeros & self.one_value_per_bin_)
        bin_lower[tracked, zero_code[tracked]] = np.minimum(
            bin_lower[tracked, zero_code[tracked]], 0.0
        )
        bin_upper[tracked, zero_code[tracked]] = np.maximum(
            bin_upper[tracked, zero_code[tracked]], 0.0
        )
        self._bounds_from_edges(bin_lower, bin_upper)
        logger.info(
            "binned %s rows x %d features (sparse, %s values stored), at most %d bins (%.2f s)",
            f"{n_samples:,}",
            n_features,
            f"{X.data.size:,}",
            self.n_bins_,
            time.perf_counter() - start,
            extra=step("binning", n_features, n_features, unit="feature", done=True),
        )
        return SparseCodes(X.indptr, X.indices, codes, zero_code, n_samples), bin_lower, bin_upper

    def transform_on_device(self, X, xp, stream=0):
        """As :meth:`transform`, on the GPU (or the CUDA simulator when ``xp`` is numpy).

        ``X`` is an ``xp`` array (n_samples, n_features), used in place; ``stream``: the
        stream to launch on (the backend's ``current_stream``). Returns the
        feature-major codes on the device (coalesced for the histogram kernels) and the
        bin bounds on the host (they only place thresholds).
        """
        from gpu_tree.kernels.cuda import binning as cuda_binning
        from gpu_tree.kernels.cuda import launch as cuda_launch

        start = time.perf_counter()
        n_samples, n_features = X.shape
        tables = [host_to_device(table, xp) for table in self._search_tables()]
        X_binned = xp.empty((n_features, n_samples), dtype=self.bin_dtype_)
        bin_lower = xp.full((n_features, self.n_bins_), np.inf)
        bin_upper = xp.full((n_features, self.n_bins_), -np.inf)
        blocks, threads = cuda_launch.launch_config(n_samples * n_features)
        launch(
            cuda_binning.bin_columns,
            (blocks, threads, stream),
            X,
            *tables,
            host_to_device(self.one_value_per_bin_, xp),
            self.missing_bin_,
            X_binned,
            bin_lower,
            bin_upper,
        )
        bin_lower, bin_upper = device_to_host(bin_lower), device_to_host(bin_upper)
        self._bounds_from_edges(bin_lower, bin_upper)
        logger.info(
            "binned %s rows x %d features on the GPU, at most %d bins (%.2f s)",
            f"{n_samples:,}",
            n_features,
            self.n_bins_,
            time.perf_counter() - start,
            extra=step("binning", n_features, n_features, unit="feature", done=True),
        )
        return X_binned, bin_lower, bin_upper

    def _search_tables(self):
        """Flat edges, their offsets per feature, and the lookup grid (built once)."""
        from gpu_tree.kernels.cpu import binning as cpu_binning

        if getattr(self, "_tables", None) is None:
            n_features = len(self.edges_)
            offsets = np.zeros(n_features + 1, dtype=np.int64)
            np.cumsum(self.n_bins_per_feature_ - 1, out=offsets[1:])
            # Only the features with edges: a sparse X may have millions without.
            with_edges = [self.edges_[f] for f in np.flatnonzero(self.n_bins_per_feature_ > 1)]
            flat = np.concatenate(with_edges).astype(np.float64) if with_edges else np.zeros(0)
            n_cells = cpu_binning.LOOKUP_CELLS_PER_EDGE * max(1, self.n_bins_ - 1)
            lookup = np.empty((n_features, n_cells + 1), dtype=np.int64)
            cells_per_unit = np.empty(n_features)
            cpu_binning.build_bin_lookup(flat, offsets, n_cells, lookup, cells_per_unit)
            self._tables = (flat, offsets, lookup, cells_per_unit)
        return self._tables

    def _bounds_from_edges(self, bin_lower, bin_upper):
        """Quantile-binned features: a bin's bounds are its edges."""
        for f in np.flatnonzero(~self.one_value_per_bin_):
            edges = self.edges_[f]
            bin_upper[f, : edges.size] = edges
            bin_upper[f, edges.size] = np.inf
            bin_lower[f, 0] = -np.inf
            bin_lower[f, 1 : edges.size + 1] = edges
