"""Input checks: every problem is reported before any work, naming the column and value."""

from __future__ import annotations

import contextlib
import contextvars
import numbers
import warnings

import numpy as np

from gpu_tree.utils.device_copies import is_device_array


def is_dataframe(X) -> bool:
    return hasattr(X, "columns") and hasattr(X, "dtypes") and hasattr(X, "iloc")


def feature_names_of(X):
    """Column names of a DataFrame whose names are all strings, else None."""
    if not is_dataframe(X):
        return None
    names = np.asarray(list(X.columns), dtype=object)
    _refuse_duplicates(list(X.columns), "the DataFrame's columns")
    if names.size and all(isinstance(name, str) for name in names):
        return names
    return None


def check_feature_names(estimator, X):
    """Compare X's column names with those ``estimator`` was fitted with
    (``feature_names_in_``), as scikit-learn does: a warning where one side has names and
    the other none, a ValueError naming both lists where they differ."""
    fitted_names = getattr(estimator, "feature_names_in_", None)
    names = feature_names_of(X)
    name = type(estimator).__name__
    if fitted_names is None and names is not None:
        warnings.warn(
            f"X has feature names, but {name} was fitted without feature names",
            UserWarning,
            stacklevel=4,
        )
    elif fitted_names is not None and names is None:
        warnings.warn(
            f"X does not have valid feature names, but {name} was fitted with feature names",
            UserWarning,
            stacklevel=4,
        )
    elif fitted_names is not None and (
        len(fitted_names) != len(names) or np.any(fitted_names != names)
    ):
        raise ValueError(
            "The feature names should match those that were passed during fit. "
            f"Fitted with {list(fitted_names)}, got {list(names)}."
        )


def _refuse_duplicates(names, where):
    """Two columns of one name: which is meant at predict time is anyone's guess (swapping
    the twins changed predictions), so they are refused, as scikit-learn does."""
    seen = set()
    for j, name in enumerate(names):
        if name in seen:
            raise ValueError(f"{where} name {name!r} twice (again at position {j}): rename one")
        seen.add(name)


# Column names for messages about X when X itself has none: the command line fits on an
# array of a file's columns, whose user knows them by name (and whose positions in X are
# not the file's, the target and the ignored columns left out).
_GIVEN_NAMES = contextvars.ContextVar("gpu_tree_given_column_names", default=None)


@contextlib.contextmanager
def columns_named(names):
    """Within the block, messages name the columns of an X without names by ``names``."""
    token = _GIVEN_NAMES.set([str(name) for name in names])
    try:
        yield
    finally:
        _GIVEN_NAMES.reset(token)


def given_column_name(j) -> str | None:
    """Column j's name from :func:`columns_named`, or None outside it."""
    names = _GIVEN_NAMES.get()
    return names[int(j)] if names is not None and 0 <= int(j) < len(names) else None


def column_label(j, names):
    if names is not None:
        return f"column {j} ({names[j]!r})"
    name = given_column_name(j)
    return f"column {name!r}" if name is not None else f"column {j}"


def _convert_object_columns(array, names, first_column=0):
    """Object / string array to float64, one column at a time so errors name the column.

    ``first_column`` is the index of ``array``'s first column in the user's X.
    """
    out = np.empty(array.shape, dtype=np.float64)
    for k in range(array.shape[1]):
        j = first_column + k
        column = array[:, k]
        try:
            out[:, k] = column.astype(np.float64)
            continue
        except (TypeError, ValueError, OverflowError):
            pass
        # The slow path, value by value: missing markers (None, pandas' NA) are NaN, and
        # a value that is no number, or none float64 can hold, is named with its row.
        for i, value in enumerate(column):
            if value is None or type(value).__name__ == "NAType":
                out[i, k] = np.nan
                continue
            try:
                out[i, k] = float(value)
            except OverflowError:
                raise ValueError(
                    f"{column_label(j, names)} holds {str(value)[:40]!r} at row {i}, beyond "
                    "float64's range"
                ) from None
            except (TypeError, ValueError) as exc:
                kind = TypeError if isinstance(exc, TypeError) else ValueError
                raise kind(
                    f"{column_label(j, names)} holds a non-numeric value {value!r} at row {i} "
                    f"({exc}); declare categorical columns with categorical_features"
                ) from None
    return out


def _dataframe_to_array(X, names):
    dtypes = list(X.dtypes)
    if dtypes and all(
        getattr(dtype, "kind", "O") in "biuf" and str(dtype) != "category" for dtype in dtypes
    ):
        # Numbers only: one conversion, not a column at a time and a stack. A frame of
        # float32 columns stays float32, as a float32 array does (same values, half the
        # bytes); other numbers become float64.
        if all(dtype == np.float32 for dtype in dtypes):
            return X.to_numpy(dtype=np.float32)
        return X.to_numpy(dtype=np.float64, na_value=np.nan)
    columns = []
    for j, dtype in enumerate(X.dtypes):
        kind = getattr(dtype, "kind", "O")
        if str(dtype) == "category" or kind in "OSUM":
            column = X.iloc[:, j].to_numpy(dtype=object)
            columns.append(_convert_object_columns(column[:, None], names, first_column=j))
        else:
            if kind == "c":
                raise ValueError(
                    f"Complex data not supported: {column_label(j, names)} has dtype {dtype}"
                )
            columns.append(X.iloc[:, j].to_numpy(dtype=np.float64, na_value=np.nan)[:, None])
    return np.hstack(columns) if columns else np.empty((len(X), 0))


def check_n_features(n_features, n_features_expected, estimator_name):
    if n_features_expected is not None and n_features != n_features_expected:
        raise ValueError(
            f"X has {n_features} features, but {estimator_name} is expecting "
            f"{n_features_expected} features as input."
        )


# The kernels' float types, in native byte order.
KERNEL_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
# From this many values on (150,000 rows of 28 features), X is searched for infinity by a
# parallel kernel rather than numpy (whose np.isinf(X).any() runs in one thread and
# writes a boolean array). Below it the threads' start, on a busy machine, costs more
# than they save: with 1 << 18, a 10,000-row prediction took 11 ms instead of 3.
PARALLEL_CHECK_MIN_VALUES = 1 << 22


def _has_infinity(array) -> bool:
    """Whether a 2-D float32/float64 array holds an infinity."""
    if array.size >= PARALLEL_CHECK_MIN_VALUES and array.flags.c_contiguous:
        from gpu_tree.kernels.cpu import binning as cpu_binning  # numba: imported where used

        return bool((cpu_binning.nonfinite_columns(array) & cpu_binning.HOLDS_INFINITY).any())
    return bool(np.isinf(array).any())


def check_X(X, *, n_features_expected=None, estimator_name="the estimator") -> np.ndarray:
    """Validate a feature matrix; return a C-contiguous float32 or float64 array.

    NaN is accepted (a missing value); infinity is refused, naming the column and row."""
    if (
        type(X) is np.ndarray
        and X.ndim == 2
        and X.dtype in KERNEL_FLOATS
        and X.flags.c_contiguous
        and X.shape[0] > 0
        and X.shape[1] > 0
        and (n_features_expected is None or X.shape[1] == n_features_expected)
        and not _has_infinity(X)
    ):
        # The common case, checked in a few microseconds: an array the kernels read as it
        # is. Anything else (an error to report included) takes the path below.
        return X
    if X is None:
        raise ValueError("X is None; expected a 2-D array of shape (n_samples, n_features)")
    if hasattr(X, "format") and hasattr(X, "tocsr"):
        raise TypeError("sparse input is not supported; pass a dense array (X.toarray())")
    names = feature_names_of(X)
    if is_dataframe(X):
        array = _dataframe_to_array(X, names)
    else:
        array = np.asarray(X)
    if array.dtype.kind == "c":
        raise ValueError("Complex data not supported; X has a complex dtype")
    if array.ndim != 2:
        raise ValueError(
            f"Expected a 2-D array for X, got a {array.ndim}-D array of shape {array.shape}. "
            "Reshape your data either using array.reshape(-1, 1) if your data has a single feature "
            "or array.reshape(1, -1) if it contains a single sample."
        )
    if array.shape[0] == 0:
        raise ValueError(
            f"Found array with 0 sample(s) (shape={array.shape}) while a minimum of 1 is required."
        )
    if array.shape[1] == 0:
        raise ValueError(
            f"Found array with 0 feature(s) (shape={array.shape}) while a minimum of 1 is required."
        )
    if array.dtype.kind in "OSUV":
        array = _convert_object_columns(array.astype(object), names)
    elif array.dtype.kind == "b" or array.dtype.kind in "iu":
        array = array.astype(np.float64)
    elif array.dtype == np.float16:
        array = array.astype(np.float32)
    elif array.dtype.kind != "f":
        raise TypeError(f"X has unsupported dtype {array.dtype}; expected numbers")
    elif array.dtype not in (np.float32, np.float64):
        # Big-endian floats and extended precision (longdouble): the kernels read native
        # float32 / float64. A longdouble beyond float64's range becomes infinity below,
        # which is refused naming its column and row.
        with np.errstate(over="ignore"):
            array = array.astype(np.float32 if array.dtype.itemsize == 4 else np.float64)
    check_n_features(array.shape[1], n_features_expected, estimator_name)
    # NaN is a missing value; infinity is an error
    if _has_infinity(array):
        bad_rows, bad_cols = np.nonzero(np.isinf(array))
        raise ValueError(
            f"Input X contains infinity or a value too large in {column_label(bad_cols[0], names)} "
            f"at row {bad_rows[0]} (value {array[bad_rows[0], bad_cols[0]]})"
        )
    return np.ascontiguousarray(array)


def is_sparse(values) -> bool:
    """Whether ``values`` is a SciPy sparse matrix or array (SciPy not imported for it)."""
    module = type(values).__module__ or ""
    return module.startswith("scipy.sparse") and hasattr(values, "toarray")


def check_y(y, n_samples: int, *, estimator_name: str, is_classification: bool, multi_output=False):
    """Validate targets: 1-D, right length, finite; a column vector is raveled with a
    warning. ``multi_output``: a 2-D y of several columns (one per output) is accepted
    too, and returned 2-D."""
    if y is None:
        raise ValueError(f"{estimator_name} requires y to be passed, but the target y is None")
    if is_sparse(y):
        # As scikit-learn: np.asarray of a sparse matrix is a 0-d object array, whose shape
        # error would mislead.
        raise TypeError(
            "Sparse data was passed for y, but dense data is required: use y.toarray() "
            "(and ravel() for one column)"
        )
    if hasattr(y, "to_numpy"):
        y = y.to_numpy()
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        from gpu_tree.utils.compat import DataConversionWarning  # scikit-learn's, if installed

        warnings.warn(
            "A column-vector y was passed when a 1d array was expected. Please change the shape of y "
            "to (n_samples,), for example using ravel().",
            DataConversionWarning,
            stacklevel=3,
        )
        y = y.ravel()
    if y.ndim != 1 and not (multi_output and y.ndim == 2):
        if y.ndim == 2 and not multi_output:
            raise ValueError(
                f"y should be a 1d array, got an array of shape {y.shape}: multi-output y "
                f"is not supported by {estimator_name} yet (the decision and extra trees "
                "and the regressor forests fit it)"
            )
        raise ValueError(f"y should be a 1d array (or 2d for multi-output), got shape {y.shape}")
    if y.ndim == 2 and y.shape[1] == 0:
        raise ValueError(f"y has {y.shape[0]} rows but no column: give at least one output")
    if y.shape[0] != n_samples:
        raise ValueError(f"X has {n_samples} rows but y has {y.shape[0]}: their lengths must match")
    if y.dtype.kind == "c":
        raise ValueError("Complex data not supported; y has a complex dtype")
    if y.dtype.kind in "fiub" or not is_classification:
        try:
            numeric = y.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"y holds non-numeric values ({exc}); a regressor needs numbers"
            ) from None
        bad = ~np.isfinite(numeric)
        if bad.any():
            first = int(np.argmax(bad))
            what = "NaN" if np.isnan(numeric.flat[first]) else "infinity"
            raise ValueError(f"Input y contains {what} at {_position(first, y.shape)}")
        if not is_classification:
            return numeric
    elif y.dtype.kind == "O":
        missing = next(
            (
                k
                for k, v in enumerate(y.flat)
                if v is None or (isinstance(v, (float, np.floating)) and v != v)
            ),
            None,
        )
        if missing is not None:
            raise ValueError(
                f"Input y contains NaN (a missing label) at {_position(missing, y.shape)}"
            )
    return y


def _position(flat_index: int, shape) -> str:
    """Where an element of y is, for a message: its row, and its output where y has
    several."""
    row, *output = np.unravel_index(flat_index, shape)
    return f"row {row}" + (f", output {output[0]}" if output else "")


def check_classification_labels(y):
    """Return (classes, encoded y). Continuous float targets are refused."""
    if y.dtype.kind == "f" and np.any(y != np.round(y)):
        raise ValueError(
            "Unknown label type: continuous. A classifier needs discrete class labels; "
            "use DecisionTreeRegressor for a continuous target."
        )
    if y.dtype.kind == "O":
        kinds = {type(v) for v in y}
        if len(kinds) > 1 and not all(issubclass(k, numbers.Number) for k in kinds):
            raise ValueError(
                f"Unknown label type: mixed label types {sorted(k.__name__ for k in kinds)}"
            )
    counted = _counted_classes(y)
    if counted is not None:
        return counted
    classes, encoded = np.unique(y, return_inverse=True)
    return classes, encoded.astype(np.int64)


def _counted_classes(y):
    """(classes, encoded y) as np.unique gives them, by counting: for labels that are whole
    numbers (integers, bools, whole floats) spanning fewer values than there are rows.
    np.unique sorts: 62 ms of a 1M-row fit's 0.9 s. None for other labels."""
    kind = y.dtype.kind
    if y.size == 0 or kind not in "biuf":
        return None
    values = y.view(np.uint8) if kind == "b" else y
    lowest, highest = values.min(), values.max()
    number = float if kind == "f" else int  # Python's: no overflow in the span
    if not number(highest) - number(lowest) < values.size:  # NaN and inf fail it too
        return None
    # Offsets from the lowest label: whole numbers (checked above), so exact; integers
    # subtract in their own width, wrapping, and read back unsigned (int8's -128..127).
    offsets = np.subtract(values, lowest, dtype=values.dtype)
    if kind == "i":
        offsets = offsets.view(f"u{values.dtype.itemsize}")
    offsets = offsets.astype(np.intp)
    present = np.bincount(offsets) > 0
    code_of = np.cumsum(present) - 1
    classes = np.add(lowest, np.flatnonzero(present).astype(values.dtype), dtype=values.dtype)
    return classes.astype(y.dtype), code_of[offsets].astype(np.int64)


def check_sample_weight(sample_weight, n_samples: int) -> np.ndarray:
    if sample_weight is None:
        return np.ones(n_samples)
    if isinstance(sample_weight, numbers.Number):
        # A scalar gets the checks an array gets: -1.0, 0.0 or NaN fitted on no rows.
        sample_weight = np.full(n_samples, sample_weight)
    if hasattr(sample_weight, "to_numpy"):
        sample_weight = sample_weight.to_numpy()
    weight = np.asarray(sample_weight)
    if weight.ndim == 0:
        # As scikit-learn: a number is a weight for every row, a 0-d array is refused
        # (a TypeError) rather than taken for one.
        raise TypeError(
            "sample_weight must be a number or a 1-D array of one weight per row, got a "
            f"0-d array ({sample_weight!r}); pass the number itself"
        )
    if weight.ndim != 1:
        raise ValueError(f"sample_weight must be a number or a 1-D array, got shape {weight.shape}")
    if weight.shape[0] != n_samples:
        raise ValueError(f"sample_weight.shape == ({weight.shape[0]},), expected ({n_samples},)!")
    try:
        weight = weight.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"sample_weight must be numeric ({exc})") from None
    problem, i = weight_problem(weight)
    if problem == NOT_FINITE:
        raise ValueError(f"sample_weight contains NaN or infinity at row {i}")
    if problem == NEGATIVE:
        raise ValueError(
            f"Negative values in data passed to sample_weight: row {i} has {weight[i]}"
        )
    if problem == ALL_ZERO:
        raise ValueError("Sample weights must contain at least one positive value; all are zero")
    return weight


# What weight_problem finds wrong with sample weights.
NOT_FINITE, NEGATIVE, ALL_ZERO = "not finite", "negative", "all zero"


def weight_problem(weight: np.ndarray) -> tuple[str | None, int | None]:
    """The rule sample weights obey, in one place: (problem, row) for the first weight
    that is NaN or infinite, else the first negative one, else (ALL_ZERO, None) when no
    weight is positive; (None, None) for good weights (float64)."""
    for problem, bad in ((NOT_FINITE, ~np.isfinite(weight)), (NEGATIVE, weight < 0)):
        if bad.any():
            return problem, int(np.argmax(bad))
    if not (weight > 0).any():
        return ALL_ZERO, None
    return None, None


def values_in(X) -> int | None:
    """How many values an input of features holds (rows times columns), read from its
    shape without converting it; None where that is not known cheaply."""
    shape = getattr(X, "shape", None)
    if shape is None and isinstance(X, (list, tuple)):
        first = X[0] if X else ()
        shape = (len(X), len(first) if isinstance(first, (list, tuple)) else 1)
    try:
        rows, columns = shape
        return int(rows) * int(columns)
    except (TypeError, ValueError):
        return None


# What an X can be: a dense host array, a SciPy sparse matrix (binned as it is on the
# host) or a GPU array (checked and used on the device, never copied back). A fit or a
# prediction asks once (input_kind) and carries the answer.
DENSE, SPARSE, DEVICE = "dense", "sparse", "device"
INPUT_KINDS = (DENSE, SPARSE, DEVICE)


def input_kind(X) -> str:
    """Which of :data:`INPUT_KINDS` X is."""
    if is_device_array(X):
        return DEVICE
    return SPARSE if is_sparse(X) else DENSE


def check_X_on_device(X, xp, *, n_features_expected=None, estimator_name="the estimator"):
    """:func:`check_X` for an array already on the GPU: checked there, never copied to the
    host (only the position of a first bad value travels back)."""
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D array for X, got a {X.ndim}-D array of shape {X.shape}.")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(
            f"Found array with shape {X.shape}: X needs at least one row and one feature."
        )
    if X.dtype.kind == "c":
        raise ValueError("Complex data not supported; X has a complex dtype")
    if X.dtype.kind in "biu":
        X = X.astype(np.float64)
    elif X.dtype.kind != "f":
        raise TypeError(f"X has unsupported dtype {X.dtype}; expected numbers")
    check_n_features(X.shape[1], n_features_expected, estimator_name)
    bad = xp.isinf(X)  # NaN is a missing value; infinity is an error
    if bool(bad.any()):
        row, column = (int(v) for v in xp.argwhere(bad)[0])
        raise ValueError(
            f"Input X contains infinity or a value too large in {column_label(column, None)} "
            f"at row {row}"
        )
    return xp.ascontiguousarray(X)
