"""DataFrames of every kind, through one path: each becomes a pandas DataFrame.

pandas DataFrames are taken as they are. Every other table goes through Arrow, the format
they all export: a pyarrow ``Table`` or ``RecordBatch``, a polars DataFrame, and anything
that exports an Arrow stream (the Arrow PyCapsule protocol, ``__arrow_c_stream__``: DuckDB,
cuDF, ...) become a pyarrow Table, then a pandas DataFrame through pyarrow's own
converter. A table with only the older DataFrame interchange protocol (``__dataframe__``)
goes through pandas' interchange reader.

Why pandas as the meeting point: the estimators already take pandas' types (a
``category`` column is categorical, a column of text too, names become
``feature_names_in_``), and pyarrow's converter keeps what matters on the way: an Arrow
dictionary column (polars ``Categorical`` and ``Enum``) becomes a pandas ``category``, a
string column a column of text, a null a missing value (NaN; an integer column with nulls
becomes float). So one set of rules, written once (``data/categorical.py``), serves every
kind of table, and no table library is needed by the core package: a user passing a
polars DataFrame is asked for pyarrow and pandas only then.
"""

from __future__ import annotations

import warnings

from gpu_tree.utils.install_hints import install_hint


def is_pandas_frame(X) -> bool:
    return type(X).__module__.partition(".")[0] == "pandas" and hasattr(X, "iloc")


def is_other_frame(X) -> bool:
    """A table that is not a pandas DataFrame but can become one: it has columns and
    exports an Arrow stream or the DataFrame interchange protocol (a 1-D Arrow array or
    polars Series exports a stream too, but has no columns: it stays what it is)."""
    if is_pandas_frame(X) or not hasattr(X, "columns"):
        return False
    return hasattr(X, "__arrow_c_stream__") or hasattr(X, "__dataframe__")


def as_pandas_frame(X):
    """X as a pandas DataFrame when it is a table of another kind (see the module's
    docstring); anything else (a pandas DataFrame, an array, a list) unchanged."""
    if not is_other_frame(X):
        return X
    kind = f"{type(X).__module__.partition('.')[0]}.{type(X).__name__}"
    try:
        import pandas  # noqa: F401  (the destination of either path)
    except ImportError as error:
        raise ImportError(
            f"X is a {kind}; gpu_tree reads such tables through pandas: {install_hint('frames')}"
        ) from error
    if hasattr(X, "__arrow_c_stream__"):
        try:
            import pyarrow
        except ImportError:
            pyarrow = None
        if pyarrow is not None:
            return _sorted_unordered_categories(_arrow_table(X, pyarrow).to_pandas())
        if not hasattr(X, "__dataframe__"):
            raise ImportError(
                f"X is a {kind}; gpu_tree reads Arrow tables through pyarrow: "
                f"{install_hint('frames')}"
            )
    from pandas.api.interchange import from_dataframe

    with warnings.catch_warnings():
        # pandas 3 deprecates the protocol in favour of Arrow's; a table that offers only
        # the protocol is still read, and the user cannot act on the warning.
        warnings.filterwarnings("ignore", message=".*Interchange Protocol is deprecated")
        frame = from_dataframe(X, allow_copy=True)
    return _sorted_unordered_categories(frame)


def _sorted_unordered_categories(frame):
    """The frame with each unordered category column's categories sorted, as pandas
    sorts them when it builds a categorical itself. An Arrow dictionary lists its values
    in the order rows first showed them (polars ``Categorical``), and a category's code
    decides which side of a subset split it is written on: without this, the same data
    in another row order would grow a mirrored tree. Ordered columns (polars ``Enum``,
    Arrow ``ordered`` dictionaries) keep their declared order."""
    for j, dtype in enumerate(frame.dtypes):
        if str(dtype) != "category" or dtype.ordered:
            continue
        categories = dtype.categories
        if not categories.is_monotonic_increasing:
            column = frame.iloc[:, j]
            frame.isetitem(j, column.cat.reorder_categories(categories.sort_values()))
    return frame


def _arrow_table(X, pyarrow):
    if isinstance(X, pyarrow.Table):
        return X
    if isinstance(X, pyarrow.RecordBatch):
        return pyarrow.Table.from_batches([X])
    return pyarrow.table(X)  # reads the Arrow stream (PyCapsule protocol)
