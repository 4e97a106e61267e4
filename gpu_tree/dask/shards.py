"""What runs on the workers: each worker's share of the rows (a *shard*: the partitions
it holds, concatenated), kept in the worker's memory between the calls of one fit.

A shard is a :class:`~gpu_tree.backends.cpu.CPUHistogramBackend` over its own rows, with
the fit's global bin edges and fixed-point scales; the functions here are what the
client's :class:`~gpu_tree.dask.backend.DistributedBackend` runs on each worker (with
``client.submit(..., workers=[address])``). Every sum they return is of integers, or
an exact parts dictionary (:func:`gpu_tree.data.stats.exact_sum_parts`), so that the
client's totals do not depend on the number of workers or how the rows are split.
"""

from __future__ import annotations

import atexit
import functools
import gc

import numpy as np

from gpu_tree.backends.cpu import CPUHistogramBackend
from gpu_tree.backends.devices import resolve_device
from gpu_tree.backends.rows import RowData, fixed_point_weights
from gpu_tree.dask import device_shards
from gpu_tree.data.binning import missing_by_feature
from gpu_tree.data.categorical import is_missing_value, with_codes
from gpu_tree.data.frames import as_pandas_frame
from gpu_tree.data.stats import exact_sum_parts
from gpu_tree.data.validation import (
    NEGATIVE,
    NOT_FINITE,
    check_sample_weight,
    check_X,
    check_y,
    is_dataframe,
    weight_problem,
)
from gpu_tree.kernels.cpu import row_statistics as cpu_row_statistics

# fit id -> this process's shards of that fit (one per worker address).
_SHARDS: dict = {}


@functools.cache
def _untrack_objects_at_exit():
    """Once per process that holds rows, freeze the garbage collector's objects at exit.

    A worker that compiled the kernels holds numba's objects for every signature, and the
    interpreter traverses them in each collection it runs while it shuts down: 1.1 s of
    CPU after a first fit, 0.3 s frozen (bench/RESULTS.md). On a loaded machine that
    passed the 4 s a Dask nanny waits for a closing worker, which it then killed with a
    warning. Frozen objects are freed with the process, as they would be; CPython makes
    no promise to run ``__del__`` at exit either way."""
    atexit.register(gc.freeze)


def _shard(key):
    try:
        return _SHARDS[key]
    except KeyError:
        raise RuntimeError(
            f"this worker holds no rows of distributed fit {key[0]!r}: the worker holding "
            "them was lost or restarted; fit again"
        ) from None


def partition_summary(X, y, w, is_classification, name, index=0):
    """Sizes and labels of one partition (the fit's ``index``-th), checked as the
    in-memory fit checks y and sample_weight: (n_X, n_y, n_w, distinct labels). A
    partition may weigh nothing (another may hold the positive weights)."""
    n_X = len(X)
    n_y = len(y) if y is not None else -1
    n_w = -1 if w is None else len(w)
    labels = None
    try:
        if n_y > 0:
            y = check_y(
                np.asarray(y), n_y, estimator_name=name, is_classification=is_classification
            )
            if is_classification:
                labels = np.unique(y)
        if n_w > 0:
            weight = np.asarray(w)
            try:
                problem, _ = weight_problem(weight.astype(np.float64))
            except (TypeError, ValueError):
                problem = NOT_FINITE  # not numbers: check_sample_weight says so
            if problem in (NOT_FINITE, NEGATIVE):  # all zero is this partition's right
                check_sample_weight(weight, n_w)  # raises, in the in-memory fit's words
    except ValueError as exc:
        raise ValueError(f"partition {index}: {exc}") from None
    return n_X, n_y, n_w, labels


def distinct_values(X, candidates):
    """The distinct present values of one partition's ``candidates`` columns (a mask),
    as a small table of the partition's own kind, the other columns empty: the client
    unions these into the fit's categories."""
    X = as_pandas_frame(X)  # cuDF, polars or Arrow partitions: as the in-memory fit reads them
    if is_dataframe(X):
        import pandas as pd

        columns = [
            X.iloc[:, j].dropna().drop_duplicates() if candidates[j] else X.iloc[:0, j]
            for j in range(X.shape[1])
        ]
        table = pd.concat([c.reset_index(drop=True) for c in columns], axis=1, ignore_index=True)
        table.columns = X.columns
        return table
    X = np.asarray(X)
    values = [_distinct_present(X[:, j]) if candidates[j] else [] for j in range(X.shape[1])]
    longest = max((len(v) for v in values), default=0)
    numeric = X.dtype.kind in "biuf"
    table = np.full(
        (longest, X.shape[1]), np.nan if numeric else None, dtype=X.dtype if numeric else object
    )
    for j, v in enumerate(values):
        table[: len(v), j] = v
    return table


def _distinct_present(column):
    if column.dtype.kind in "biuf":
        column = column.astype(np.float64)
        return np.unique(column[~np.isnan(column)])
    present = [v for v in column.tolist() if not is_missing_value(v)]
    return list(dict.fromkeys(present))


def load(key, spec, partition_indices, *parts):
    """Build this worker's shard from its partitions (X, y, w triples, in partition
    order; ``partition_indices`` their positions in the collection, for messages);
    returns per partition the rows kept (positive weight) and the shard's partial
    statistics. The partitions' X stay as they are (checked, not copied where every row
    is kept, float32 kept float32, as the in-memory fit keeps it): only their bin codes
    are ever concatenated (:func:`build`)."""
    X_parts, y_parts, w_parts = parts[0::3], parts[1::3], parts[2::3]
    kept_X, kept_y, kept_w, kept_rows = [], [], [], []
    maps = spec["category_maps"]
    for index, X, y, w in zip(partition_indices, X_parts, y_parts, w_parts, strict=True):
        if len(X) == 0:
            X = np.zeros((0, spec["n_features"]))
        else:
            X = as_pandas_frame(X)
            if maps is not None:
                X = with_codes(X, maps)  # the fit's global codes (NaN: missing)
            try:
                X = check_X(
                    X, n_features_expected=spec["n_features"], estimator_name=spec["estimator"]
                )
            except ValueError as exc:
                raise ValueError(f"partition {index} of X: {exc}") from None
        y = np.asarray(y).ravel()
        w = np.ones(len(y)) if w is None else np.asarray(w, dtype=np.float64).ravel()
        if spec["is_classification"]:
            y = np.searchsorted(spec["classes"], y).astype(np.int64)
            w = w * spec["class_weights"][y]
        else:
            y = y.astype(np.float64)
        keep = w > 0
        if not keep.all():
            X, y, w = X[keep], y[keep], w[keep]
        kept_X.append(X)
        kept_y.append(y)
        kept_w.append(w)
        kept_rows.append(len(y))
    _untrack_objects_at_exit()
    _SHARDS[key] = shard = {
        "X_parts": kept_X,
        "y": np.concatenate(kept_y) if kept_y else np.zeros(0),
        "w": np.concatenate(kept_w) if kept_w else np.zeros(0),
        "parts": kept_rows,
    }
    y = shard["y"]
    missing = [missing_by_feature(X) for X in kept_X if X.shape[0]]
    return {
        "rows": kept_rows,
        "missing": np.any(missing, axis=0) if missing else np.zeros(spec["n_features"], bool),
        "weight_parts": exact_sum_parts(shard["w"]),
        "unit": bool(np.all(shard["w"] == 1.0)),
        "y_max": float(y.max()) if y.size and not spec["is_classification"] else None,
        "y_min": float(y.min()) if y.size and not spec["is_classification"] else None,
    }


def sample_rows(key, local_rows):
    """The rows at ``local_rows`` (increasing positions in this shard) of X: its part
    of the binning sample."""
    X_parts = _shard(key)["X_parts"]
    starts = np.cumsum([0] + [X.shape[0] for X in X_parts])
    local_rows = np.asarray(local_rows, dtype=np.int64)
    part_of_row = np.searchsorted(starts, local_rows, side="right") - 1
    return np.concatenate(
        [X[local_rows[part_of_row == i] - starts[i]] for i, X in enumerate(X_parts)]
    )


def shard_matrix(shard):
    """The shard's rows of X as one array (once, for a backend that bins it whole),
    releasing the partitions."""
    X_parts = shard.pop("X_parts")
    return np.concatenate(X_parts) if len(X_parts) != 1 else X_parts[0]


def weight_abs_parts(key, scale):
    return exact_sum_parts(np.abs(np.ldexp(_shard(key)["w"], -scale)))


def key_counts(key, shift, prefix, prefix_bits):
    """Regression centre (radix select): counts of the targets' 16-bit digit at ``shift``
    among those whose order key's bits above it equal ``prefix``."""
    keys = order_keys(_shard(key)["y"])
    if prefix_bits:
        keys = keys[(keys >> np.uint64(shift + 16)) == np.uint64(prefix)]
    digits = ((keys >> np.uint64(shift)) & np.uint64(0xFFFF)).astype(np.int64)
    return np.bincount(digits, minlength=1 << 16)


_SIGN = np.uint64(1 << 63)


def order_keys(y):
    """uint64 keys of float64 values in the values' order."""
    bits = np.asarray(y, dtype=np.float64).view(np.uint64)
    return np.where(bits & _SIGN, ~bits, bits | _SIGN)


def from_order_keys(keys):
    """The float64 values of :func:`order_keys`' keys."""
    keys = np.asarray(keys, dtype=np.uint64)
    return np.where(keys & _SIGN, keys ^ _SIGN, ~keys).view(np.float64)


def fixed_weights_parts(key, scale, weight_exponent):
    """Exact parts of the fixed-point weights' real values (the fit's total weight)."""
    _, weight = fixed_point_weights(np.ldexp(_shard(key)["w"], -scale), weight_exponent)
    return exact_sum_parts(weight)


def weighted_sum_parts(key, layout, scales):
    """Exact parts of sum |w * centred| (the regression sum channel's exponent)."""
    shard = _shard(key)
    rows = RowData(layout=layout, weight=shard["w"], y=shard["y"], scales=scales)
    return exact_sum_parts(np.abs(rows.weight * rows.centred))


def device(key, device):
    """The backend this worker runs for a fit's ``device`` parameter ("cpu" or "cuda"),
    decided here, where the rows are: "auto" takes this worker's GPU when it has one."""
    return resolve_device(device)


def build(key, layout, scales, mapper, device):
    """Bin the shard with the global edges and make its backend (CUDA where ``device``
    is "cuda": :mod:`gpu_tree.dask.device_shards`); returns its bin bounds (n_features,
    n_bins), the root statistics and the layout its RowData chose."""
    shard = _shard(key)
    if layout.is_classification:
        rows = RowData(layout=layout, weight=shard["w"], y_class=shard["y"], scales=scales)
    else:
        rows = RowData(layout=layout, weight=shard["w"], y=shard["y"], scales=scales)
    if device == "cuda":
        return device_shards.build(shard, shard_matrix(shard), rows, mapper)
    shard["device"] = "cpu"
    # Each partition binned on its own: only the codes (a byte a value) are concatenated.
    # The bins' bounds where a bin holds one value are the values seen: over every part.
    rows_of_codes = []
    lower, upper = np.inf, -np.inf
    while shard["X_parts"]:  # a shard holds one partition at least
        codes, part_lower, part_upper = mapper.transform(shard["X_parts"].pop(0), row_major=True)
        rows_of_codes.append(codes.T)  # (n_rows, n_features), C order
        lower, upper = np.minimum(lower, part_lower), np.maximum(upper, part_upper)
    if len(rows_of_codes) > 1:
        X_binned = np.concatenate(rows_of_codes).T  # still indexed [feature, row]
    else:
        X_binned = rows_of_codes[0].T
    del rows_of_codes
    backend = CPUHistogramBackend(X_binned, lower, upper, rows, mapper.missing_bin_)
    shard["backend"] = backend
    return lower, upper, rows.total_stats(), rows.layout


def histograms(key, nodes):
    shard = _shard(key)
    if shard["device"] == "cuda":
        return device_shards.histograms(shard, nodes)
    backend = shard["backend"]
    return backend.histograms(np.asarray(nodes, dtype=np.int64)).hist


def subtree_rows(key, nodes):
    """This shard's rows of ``nodes`` for a subtree finisher on the client
    (DistributedBackend.finish_subtrees): their bin codes (n_features, n) in node order,
    their integer statistics and, for regression, centred targets and weights, and the
    rows each node holds here. CPU shards only (a fit with CUDA shards finishes none)."""
    backend = _shard(key)["backend"]
    partition = backend.row_partition
    nodes = np.asarray(nodes, dtype=np.int64)
    rows = np.concatenate(
        [partition.sample_indices[partition.start[k] : partition.end[k]] for k in nodes]
        + [np.empty(0, dtype=np.int64)]
    )
    row_data = backend.row_data
    regression = not row_data.layout.is_classification
    return (
        np.ascontiguousarray(backend.X_binned[:, rows]),
        row_data.row_stats[rows],
        row_data.centred[rows] if regression else None,
        row_data.weight[rows] if regression else None,
        partition.node_sizes(nodes),
    )


def sum_arrays(*arrays):
    """One of the tree reduction's steps."""
    total = arrays[0].copy()
    for a in arrays[1:]:
        total += a
    return total


def compact_histograms(key, nodes):
    """This shard's compact histograms as (hist, code, missing); the client merges them."""
    shard = _shard(key)
    if shard["device"] == "cuda":
        return device_shards.compact_histograms(shard, nodes)
    compact = shard["backend"].compact_histograms(np.asarray(nodes, dtype=np.int64))
    return compact.hist, compact.bin_code, compact.missing


def squared_deviation_extremes(key, nodes, means):
    """Pass 1 of ``kernels/_squared_deviations.py``: largest term, lowest and highest
    centred target of each node's rows here."""
    shard = _shard(key)
    if shard["device"] == "cuda":
        return device_shards.squared_deviation_extremes(shard, nodes, means)
    backend = shard["backend"]
    partition, rows = backend.row_partition, backend.row_data
    nodes = np.asarray(nodes, dtype=np.int64)
    largest = np.zeros(nodes.size)
    lowest = np.full(nodes.size, np.inf)
    highest = np.full(nodes.size, -np.inf)
    cpu_row_statistics.largest_squared_deviations(
        *_deviation_rows(partition, rows, nodes, means), largest, lowest, highest
    )
    return largest, lowest, highest


def squared_deviation_parts(key, nodes, means, largest):
    """Pass 2 given the global largest terms: (exponent, high, low) integer sums."""
    shard = _shard(key)
    if shard["device"] == "cuda":
        return device_shards.squared_deviation_parts(shard, nodes, means, largest)
    backend = shard["backend"]
    partition, rows = backend.row_partition, backend.row_data
    nodes = np.asarray(nodes, dtype=np.int64)
    exponent = np.zeros(nodes.size, dtype=np.int64)
    high = np.zeros(nodes.size, dtype=np.int64)
    low = np.zeros(nodes.size, dtype=np.int64)
    cpu_row_statistics.squared_deviation_sums(
        *_deviation_rows(partition, rows, nodes, means),
        np.asarray(largest, dtype=np.float64),
        exponent,
        high,
        low,
    )
    return exponent, high, low


def _deviation_rows(partition, rows, nodes, means):
    return (
        partition.sample_indices,
        partition.start[nodes],
        partition.end[nodes],
        rows.centred,
        rows.weight,
        not rows.layout.has_count_channel,
        np.ascontiguousarray(means, dtype=np.float64),
    )


def partition(key, nodes, feature, bin_threshold, missing_left, left, right, category_sets):
    """Route this shard's rows; returns the rows sent left per node."""
    shard = _shard(key)
    if shard["device"] == "cuda":
        return device_shards.partition(
            shard, nodes, feature, bin_threshold, missing_left, left, right, category_sets
        )
    backend = shard["backend"]
    return backend.row_partition.split(
        backend.columns,
        nodes,
        feature,
        np.asarray(bin_threshold, dtype=np.int64),
        missing_left,
        backend.missing_code,
        left,
        right,
        category_sets,
    )


def partition_multiway(key, nodes, feature, branch_of_code, default_branch, children):
    shard = _shard(key)
    if shard["device"] == "cuda":
        return device_shards.partition_multiway(
            shard, nodes, feature, branch_of_code, default_branch, children
        )
    backend = shard["backend"]
    return backend.row_partition.split_multiway(
        backend.columns,
        nodes,
        feature,
        branch_of_code,
        default_branch,
        backend.missing_code,
        children,
    )


def after(previous, function, key, *args):
    """``function(key, *args)``, run once ``previous`` (this shard's last write, a
    future Dask resolves on the worker before calling this) is done."""
    return function(key, *args)


def release(key):
    _SHARDS.pop(key, None)
