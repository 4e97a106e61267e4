"""The column of true values and the weight column: the task "auto" picks for a target,
and the checks of its values (and the weights') before training or scoring."""

from __future__ import annotations

import numpy as np

# Task "auto": a numeric target is a classification target when its values are whole
# numbers with at most this many distinct values, and (beyond 2 of them) at least
# MIN_ROWS_PER_CLASS rows per value on average; text or categorical targets always are.
MAX_AUTO_CLASSES = 20
MIN_ROWS_PER_CLASS = 5


def check_target_present(table, column):
    missing = column.missing()
    if missing.any():
        first = int(np.flatnonzero(missing)[0])
        raise ValueError(
            f"{table.source}: the target column {column.name!r} has {int(missing.sum())} "
            f"missing value(s), the first at {table.where(first)}; remove those rows"
        )


def sample_weights(table, column) -> np.ndarray:
    """The --weight column's values, checked by the estimators' rule (finite,
    non-negative, not all zero), its errors naming the column and the line."""
    from gpu_tree.data.validation import ALL_ZERO, weight_problem

    values = np.asarray(column.values, dtype=np.float64)
    problem, row = weight_problem(values)
    if problem == ALL_ZERO:
        raise ValueError(f"{table.source}: every weight in the column {column.name!r} is 0")
    if problem is not None:
        value = float(values[row])
        shown = "a missing value" if np.isnan(value) else repr(value)
        raise ValueError(
            f"{table.source}, {table.where(row)}: the weight column {column.name!r} holds "
            f"{shown}; weights must be finite, non-negative numbers"
        )
    return values


def as_numbers(column, table, why):
    """A text column's values as float64, or a ValueError naming the first bad value."""
    values = column.values
    if not column.is_text:
        return values
    try:  # numpy converts the whole column at C speed; the loop only finds a bad value
        return np.array(values.tolist(), dtype=np.float64)
    except (TypeError, ValueError):
        pass
    out = np.empty(values.shape[0])
    for i, value in enumerate(values.tolist()):
        try:
            out[i] = float(value)
        except (TypeError, ValueError):
            raise ValueError(
                f"{table.source}, {table.where(i)}: the target column {column.name!r} holds "
                f"{value!r}; {why}"
            ) from None
    return out


def _numeric_or_none(column):
    if not column.is_text:
        return column.values
    try:
        values = np.array(column.values.tolist(), dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return values if np.isfinite(values).all() else None


def auto_task(numeric, categorical: bool) -> str:
    """The task "auto" picks for a target (see MAX_AUTO_CLASSES)."""
    if numeric is None or categorical:
        return "classification"
    whole = bool(np.all(numeric == np.round(numeric)))
    return auto_task_of_numbers(whole, np.unique(numeric).size if whole else 0, numeric.size)


def auto_task_of_numbers(whole: bool, n_distinct: int, n_rows: int) -> str:
    """The task "auto" picks for a target of finite numbers: ``whole`` when each is a whole
    number, of ``n_distinct`` distinct values (any number above MAX_AUTO_CLASSES reads
    the same) over ``n_rows`` rows."""
    if not whole:
        return "regression"
    k = n_distinct
    if k <= 2 or (k <= MAX_AUTO_CLASSES and n_rows >= MIN_ROWS_PER_CLASS * k):
        return "classification"
    return "regression"


def target_values(table, column, task):
    """(y, task) for training."""
    check_target_present(table, column)
    numeric = _numeric_or_none(column)
    if task == "auto":
        task = auto_task(numeric, column.categorical)
    if task == "regression":
        if numeric is not None:
            return numeric, task
        return as_numbers(column, table, "--task regression needs numbers"), task
    if numeric is None or column.categorical and column.is_text:
        return np.asarray(column.values.tolist()), task  # string labels
    fractional = numeric != np.round(numeric)
    if fractional.any():  # the estimator's refusal would name its Python class
        row = int(np.argmax(fractional))
        value = column.values[row] if column.is_text else repr(float(numeric[row]))
        raise ValueError(
            f"{table.source}, {table.where(row)}: the target column {column.name!r} holds "
            f"{value}, a number that is not whole, and --task classification needs class "
            "labels: to predict a number, pass --task regression (or --task auto)"
        )
    if np.abs(numeric).max() < 2**53:
        return numeric.astype(np.int64), task
    return numeric, task
