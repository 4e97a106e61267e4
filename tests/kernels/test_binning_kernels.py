"""The binning kernels (kernels/cpu/binning.py): their serial twins give the parallel
kernels' results, bit for bit, and each call takes the twin unless its measured serial
time pays for the thread pool (kernels/cpu/launch.py, PARALLEL_MIN_SECONDS)."""

import numpy as np
import pytest

from gpu_tree.data.binning import BinMapper
from gpu_tree.data.categorical import _NumberLookup
from gpu_tree.kernels.cpu import binning as cpu_binning
from gpu_tree.kernels.cpu import launch as cpu_launch

# Rows enough for several of the parallel kernels' blocks (4,096 rows each), and a tail.
N_ROWS = 4096 * 5 + 123


def _messy_matrix(rng, n_rows, dtype=np.float64):
    """Columns of every kind binning meets: many values (quantile bins), few values (a bin
    each, bounds tracked), one value, all missing, with NaN, +inf and -inf about."""
    X = np.column_stack(
        [
            rng.normal(size=n_rows),
            rng.integers(0, 7, n_rows).astype(float),
            np.round(rng.exponential(size=n_rows), 1),
            np.full(n_rows, 3.0),
            np.full(n_rows, np.nan),
            rng.uniform(-1.0, 1.0, n_rows) * (np.finfo(dtype).max / 2),  # wide edges
        ]
    )
    X[rng.random(X.shape) < 0.03] = np.nan
    X[rng.random(X.shape) < 0.005] = np.inf
    X[rng.random(X.shape) < 0.005] = -np.inf
    return X.astype(dtype)


def _both(kernel, make_args):
    """``kernel``'s serial twin's and parallel kernel's outputs, each on fresh arguments."""
    outputs = []
    for variant in (kernel.serial, kernel.parallel):
        args = make_args()
        returned = variant(*args)
        outputs.append((returned, args))
    return outputs


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nonfinite_columns_serial_twin_flags_the_columns_the_parallel_kernel_flags(dtype):
    X = _messy_matrix(np.random.default_rng(0), N_ROWS, dtype)
    X[N_ROWS - 1, 0] = np.inf  # in the last block only
    (serial, _), (parallel, _) = _both(cpu_binning.nonfinite_columns, lambda: (X,))
    np.testing.assert_array_equal(serial, parallel)
    expected = (
        np.isnan(X).any(axis=0) * cpu_binning.HOLDS_NAN
        + np.isinf(X).any(axis=0) * cpu_binning.HOLDS_INFINITY
    )
    np.testing.assert_array_equal(serial, expected)


@pytest.mark.parametrize("row_major", [False, True])
@pytest.mark.parametrize("max_bins", [256, 1000])  # uint8 and uint16 codes
def test_bin_columns_serial_twin_gives_the_parallel_kernels_codes_and_bounds(row_major, max_bins):
    rng = np.random.default_rng(1)
    X = _messy_matrix(rng, N_ROWS)
    # Edges from finite values (a fit refuses infinities); the codes of all of them.
    mapper = BinMapper(max_bins=max_bins).fit(np.where(np.isinf(X), np.nan, X))
    assert mapper.missing_bin_ == mapper.n_bins_ - 1
    edges, offsets, lookup, cells_per_unit = mapper._search_tables()
    n_samples, n_features = X.shape

    def make_args():
        if row_major:
            X_binned = np.empty((n_samples, n_features), dtype=mapper.bin_dtype_).T
        else:
            X_binned = np.empty((n_features, n_samples), dtype=mapper.bin_dtype_)
        return (
            X,
            edges,
            offsets,
            lookup,
            cells_per_unit,
            mapper.one_value_per_bin_,
            mapper.missing_bin_,
            X_binned,
            np.full((n_features, mapper.n_bins_), np.inf),
            np.full((n_features, mapper.n_bins_), -np.inf),
        )

    (_, serial), (_, parallel) = _both(cpu_binning.bin_columns, make_args)
    for position in (7, 8, 9):  # the codes, the bins' smallest and largest values
        np.testing.assert_array_equal(serial[position], parallel[position])
    codes = serial[7].T
    assert (codes[np.isnan(X)] == mapper.missing_bin_).all()
    assert (codes[~np.isnan(X)] != mapper.missing_bin_).all()


def test_encode_number_categories_serial_twin_codes_as_the_parallel_kernel():
    rng = np.random.default_rng(2)
    n_rows = N_ROWS
    categories = [
        np.arange(10.0),  # whole numbers of a short span: a table
        np.array([-3.0, 0.0, 2.0, 1e6]),  # a long span: searched
        np.array([0.5, 1.5, 2.25]),  # not whole numbers: searched
        np.empty(0),  # no category: every value NaN
    ]
    matrix = np.column_stack(
        [
            rng.integers(-2, 13, n_rows).astype(float),  # some outside the categories
            rng.choice([-3.0, 0.0, 2.0, 1e6, 5.0], n_rows),
            rng.choice([0.5, 1.5, 2.25, 7.0], n_rows),
            rng.normal(size=n_rows),
            rng.normal(size=n_rows),  # a column not coded
        ]
    )
    matrix[rng.random(matrix.shape) < 0.03] = np.nan
    matrix[rng.random(matrix.shape) < 0.005] = np.inf
    lookup = _NumberLookup(categories)
    columns = np.arange(4, dtype=np.int64)

    def make_args():
        return (
            matrix.copy(),
            columns,
            lookup.categories,
            lookup.category_start,
            lookup.tables,
            lookup.table_start,
            lookup.lowest,
        )

    (_, serial), (_, parallel) = _both(cpu_binning.encode_number_categories, make_args)
    np.testing.assert_array_equal(serial[0], parallel[0])
    for k, column_categories in enumerate(categories):
        values = matrix[:, k]
        found = np.isin(values, column_categories)
        expected = np.full(n_rows, np.nan)
        expected[found] = np.searchsorted(column_categories, values[found])
        np.testing.assert_array_equal(serial[0][:, k], expected)
    np.testing.assert_array_equal(serial[0][:, 4], matrix[:, 4])


def test_the_bin_search_and_bounds_borrow_their_arrays():
    """Inlined with numba's reference counting, they cost six atomic operations a value."""
    for helper in (cpu_binning.bin_code, cpu_binning.widen_bounds):
        assert helper.targetoptions.get("_nrt") is False, helper


@pytest.mark.parametrize(
    ("kernel", "values_per_row"),
    [
        (cpu_binning.nonfinite_columns, 28),
        (cpu_binning.bin_columns, 28),
        (cpu_binning.encode_number_categories, 28),
        (cpu_binning.build_bin_lookup, 2041),  # a feature's cells at 256 bins, a row each
    ],
    ids=lambda kernel: getattr(kernel, "__name__", ""),
)
def test_a_binning_call_runs_parallel_only_from_its_measured_serial_time(
    monkeypatch, kernel, values_per_row
):
    """Serial below PARALLEL_MIN_SECONDS of the kernel's measured time per value, parallel
    from it: values are counted here, nothing is timed."""
    row_seconds = kernel.seconds_per_unit * values_per_row
    rows_at_the_limit = cpu_launch.PARALLEL_MIN_SECONDS / row_seconds
    called = []
    monkeypatch.setattr(kernel, "serial", lambda *args: called.append("serial"))
    monkeypatch.setattr(kernel, "parallel", lambda *args: called.append("parallel"))
    columns = np.arange(values_per_row, dtype=np.int64)  # encode_number_categories' columns
    for rows in (int(rows_at_the_limit * 0.9), int(rows_at_the_limit * 1.1)):
        values = np.broadcast_to(np.zeros(1), (rows, values_per_row))  # no memory
        if kernel is cpu_binning.build_bin_lookup:  # its work: the lookup's cells
            kernel(None, None, values_per_row - 1, values, None)
        else:
            kernel(values, columns)
    assert called == ["serial", "parallel"]
