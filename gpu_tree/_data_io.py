"""Reading tables for the command line.

Formats, chosen by the file's extension:

- ``.csv`` (``.tsv``: tab-separated; either may end in ``.gz``): read with the standard
  ``csv`` module, no pandas. The first non-blank row is the header and names the columns.
  Fields are stripped of surrounding spaces. An empty field and ``?``, ``NA``, ``N/A``,
  ``nan`` (any case) are missing values. Columns are numeric unless declared categorical
  (their values are then kept as strings); a non-numeric value in a numeric column is an
  error naming the column, the line and the value. Blank lines are skipped; a row with a
  different number of fields than the header is an error naming its line.
- ``.parquet`` / ``.pq`` (needs pyarrow): numeric and boolean columns are numbers; string
  and dictionary columns are categorical automatically.
- ``.arff``: nominal attributes are categorical automatically, the others numeric.
- ``.npz``: an array ``X`` (2-D, numeric), optionally ``y`` (1-D, numbers or strings) and
  ``feature_names`` (strings); the columns are X's (named by ``feature_names``, else
  ``x0``, ``x1``, ...) and ``y``, a column named "y".
- ``.npy``: one 2-D numeric array; its columns are ``x0``, ``x1``, ... and may also be
  named by their index (``--target 8``).

A reader is told, once it knows the column names, what to do with each column
(:data:`KINDS`): so only the columns that are used are parsed.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import math
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# What a caller asks of each column: a number, a categorical (strings kept in text
# formats), raw text decided later (a target), or not read at all.
NUMBER, CATEGORY, TEXT, SKIP = "number", "category", "text", "skip"
KINDS = (NUMBER, CATEGORY, TEXT, SKIP)
MISSING_TOKENS = frozenset({"", "?", "na", "n/a", "nan"})
EXTENSIONS = (".csv", ".tsv", ".csv.gz", ".tsv.gz", ".parquet", ".pq", ".arff", ".npz", ".npy")
PARQUET_HINT = 'reading Parquet files needs pyarrow: pip install "gpu-tree[parquet]"'
_CHUNK_ROWS = 65_536


@dataclass
class Column:
    name: str
    values: np.ndarray  # float64 with NaN for missing, or object: str with None for missing
    categorical: bool = False

    @property
    def is_text(self) -> bool:
        return self.values.dtype == object

    def missing(self) -> np.ndarray:
        if self.is_text:
            return np.array([v is None for v in self.values.tolist()], dtype=bool)
        return np.isnan(self.values)


@dataclass
class Table:
    source: str
    names: list[str]  # every column of the file, read or not
    columns: list[Column]  # the columns read, in file order
    n_rows: int
    lines: np.ndarray | None = None  # line of each row in a text file, for messages
    generated_names: bool = False  # names made up (x0, x1, ...): the file has none
    by_name: dict = field(default_factory=dict)

    def __post_init__(self):
        self.by_name = {column.name: column for column in self.columns}

    def where(self, row: int) -> str:
        if self.lines is not None:
            return f"line {int(self.lines[row])}"
        return f"row {row + 1}"

    def column(self, name) -> Column:
        return self.by_name[name]


def resolve_column(spec, names, what="column") -> int:
    """Index of the column ``spec`` names: a column name, else an index (``3``, ``-1``)."""
    spec = str(spec).strip()
    if spec in names:
        return names.index(spec)
    with contextlib.suppress(ValueError):
        index = int(spec)
        if -len(names) <= index < len(names):
            return index % len(names)
    shown = ", ".join(repr(n) for n in names[:30]) + (", ..." if len(names) > 30 else "")
    raise ValueError(f"unknown {what} {spec!r}: the columns are {shown}")


def split_specs(text) -> list[str]:
    """``"a, b,3"`` -> ``["a", "b", "3"]`` (an option's comma-separated column list)."""
    if not text:
        return []
    items = text if isinstance(text, (list, tuple)) else [text]
    return [part.strip() for item in items for part in str(item).split(",") if part.strip()]


def extension(path) -> str:
    name = Path(path).name.lower()
    for ext in sorted(EXTENSIONS, key=len, reverse=True):
        if name.endswith(ext):
            return ext
    return Path(path).suffix.lower()


def read_table(path, plan, number_hint=None) -> Table:
    """Read ``path``; ``plan(names)`` returns each column's kind (:data:`KINDS`).

    ``number_hint`` ends the message of a non-numeric value in a numeric column ("{name}"
    in it becomes the column's name).
    """
    path = Path(path)
    ext = extension(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if path.is_dir():
        raise ValueError(f"{path} is a folder, not a data file")
    if ext not in EXTENSIONS:
        raise ValueError(
            f"{path}: unknown file extension {ext or '(none)'!r}; gputree reads "
            + ", ".join(EXTENSIONS)
        )
    if path.stat().st_size == 0:
        raise ValueError(f"{path}: the file is empty")
    hint = number_hint or "if it is categorical, declare it: --categorical {name}"
    if ext in (".csv", ".tsv", ".csv.gz", ".tsv.gz"):
        return _read_csv(path, "\t" if ext.startswith(".tsv") else ",", plan, hint)
    if ext in (".parquet", ".pq"):
        return _read_parquet(path, plan)
    if ext == ".arff":
        return _read_arff(path, plan, hint)
    return _read_numpy(path, ext, plan)


def _checked_plan(plan, names, source):
    try:
        kinds = list(plan(names))
    except ValueError as exc:
        raise ValueError(f"{source}: {exc}") from None
    if len(kinds) != len(names) or any(kind not in KINDS for kind in kinds):
        raise RuntimeError(f"internal error: bad column plan {kinds!r} for {source}")
    return kinds


# -- CSV -------------------------------------------------------------------------------------
def _is_missing(text: str) -> bool:
    return text.lower() in MISSING_TOKENS


def _parse_numbers(values, lines, name, source, hint):
    """Strings -> float64 (NaN for missing tokens), naming the line of a bad value."""
    try:
        out = np.array(values, dtype=np.float64)
    except ValueError:
        out = np.empty(len(values))
        for i, text in enumerate(values):
            text = text.strip()
            if _is_missing(text):
                out[i] = np.nan
                continue
            try:
                out[i] = float(text)
            except ValueError:
                raise ValueError(
                    f"{source}, line {lines[i]}: column {name!r} holds the non-numeric value "
                    f"{text!r}; {hint.format(name=name)}"
                ) from None
    infinite = np.flatnonzero(np.isinf(out))
    if infinite.size:
        i = infinite[0]
        raise ValueError(
            f"{source}, line {lines[i]}: column {name!r} holds {values[i].strip()!r}: infinite "
            "values are not allowed"
        )
    return out


def _parse_text(values):
    out = np.empty(len(values), dtype=object)
    out[:] = [None if _is_missing(t := v.strip()) else t for v in values]
    return out


def _read_csv(path, delimiter, plan, hint) -> Table:
    source = str(path)
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8-sig", newline="") as handle:
            return _parse_csv(handle, delimiter, plan, hint, source)
    except csv.Error as exc:
        raise ValueError(f"{source}: malformed CSV: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{source}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except (EOFError, gzip.BadGzipFile) as exc:
        raise ValueError(f"{source}: damaged gzip file ({exc})") from None


def _parse_csv(handle, delimiter, plan, hint, source) -> Table:
    reader = csv.reader(handle, delimiter=delimiter)
    header = None
    for row in reader:
        if any(f.strip() for f in row):
            header = row
            break
    if header is None:
        raise ValueError(f"{source}: the file is empty (no header row)")
    names = [f.strip() for f in header]
    for j, name in enumerate(names):
        if not name:
            raise ValueError(f"{source}, line {reader.line_num}: column {j + 1} has no name")
        if name in names[:j]:
            raise ValueError(
                f"{source}, line {reader.line_num}: the column name {name!r} appears twice"
            )
    kinds = _checked_plan(plan, names, source)
    keep = [j for j, kind in enumerate(kinds) if kind != SKIP]
    parts = {j: [] for j in keep}
    line_parts = []
    chunk, chunk_lines = [], []

    def flush():
        if not chunk:
            return
        lines = np.array(chunk_lines, dtype=np.int64)
        transposed = list(zip(*chunk, strict=True))
        for j in keep:
            values = transposed[j]
            if kinds[j] == NUMBER:
                parts[j].append(_parse_numbers(values, lines, names[j], source, hint))
            else:
                parts[j].append(_parse_text(values))
        line_parts.append(lines)
        chunk.clear()
        chunk_lines.clear()

    n_columns = len(names)
    for row in reader:
        if len(row) != n_columns:
            if not any(f.strip() for f in row):
                continue  # a blank line
            raise ValueError(
                f"{source}, line {reader.line_num}: {len(row)} fields, but the header has "
                f"{n_columns} columns"
            )
        chunk.append(row)
        chunk_lines.append(reader.line_num)
        if len(chunk) >= _CHUNK_ROWS:
            flush()
    flush()
    if not line_parts:
        raise ValueError(f"{source}: no data rows after the header")
    columns = [
        Column(names[j], np.concatenate(parts[j]), categorical=kinds[j] == CATEGORY) for j in keep
    ]
    lines = np.concatenate(line_parts)
    return Table(source, names, columns, int(lines.size), lines=lines)


# -- ARFF --------------------------------------------------------------------------------------
def _read_arff(path, plan, hint) -> Table:
    from ._arff import read_arff

    source = str(path)
    names, nominal, rows = read_arff(path)
    if not names:
        raise ValueError(f"{source}: no @attribute declarations: not an ARFF file")
    if not rows:
        raise ValueError(f"{source}: no data rows after @data")
    kinds = _checked_plan(plan, names, source)
    columns = []
    for j, kind in enumerate(kinds):
        if kind == SKIP:
            continue
        values = [row[j] for row in rows]
        if nominal[j] or kind == CATEGORY:
            text = np.empty(len(values), dtype=object)
            text[:] = values
            columns.append(Column(names[j], text, categorical=True))
            continue
        out = np.empty(len(values))
        for i, value in enumerate(values):
            if value is None or _is_missing(value.strip()):
                out[i] = np.nan
                continue
            try:
                out[i] = float(value)
            except ValueError:
                if kind == TEXT:  # a text target: keep the strings
                    out = None
                    break
                raise ValueError(
                    f"{source}, data row {i + 1}: attribute {names[j]!r} holds the non-numeric "
                    f"value {value!r}; {hint.format(name=names[j])}"
                ) from None
            if math.isinf(out[i]):
                raise ValueError(
                    f"{source}, data row {i + 1}: attribute {names[j]!r} is infinite ({value!r})"
                )
        if out is None:
            out = np.empty(len(values), dtype=object)
            out[:] = values
        columns.append(Column(names[j], out))
    return Table(source, names, columns, len(rows))


# -- Parquet -----------------------------------------------------------------------------------
def _read_parquet(path, plan) -> Table:
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(PARQUET_HINT) from None
    source = str(path)
    try:
        schema = pq.read_schema(path)
        names = list(schema.names)
        kinds = _checked_plan(plan, names, source)
        wanted = [names[j] for j, kind in enumerate(kinds) if kind != SKIP]
        table = pq.read_table(path, columns=wanted)
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(f"{source}: not a readable Parquet file ({exc})") from None
    columns = []
    for name in wanted:
        kind = kinds[names.index(name)]
        data = table.column(name)
        kind_of = data.type
        if pa.types.is_dictionary(kind_of):
            data = data.cast(kind_of.value_type)
            kind_of = data.type
        if pa.types.is_string(kind_of) or pa.types.is_large_string(kind_of):
            text = np.empty(len(data), dtype=object)
            text[:] = data.to_pylist()
            columns.append(Column(name, text, categorical=True))
        elif (
            pa.types.is_integer(kind_of)
            or pa.types.is_floating(kind_of)
            or pa.types.is_boolean(kind_of)
            or pa.types.is_decimal(kind_of)
        ):
            numbers = pc.cast(data, pa.float64()).fill_null(float("nan")).to_numpy()
            numbers = np.asarray(numbers, dtype=np.float64)
            bad = np.flatnonzero(np.isinf(numbers))
            if bad.size:
                raise ValueError(f"{source}: column {name!r} is infinite at row {bad[0] + 1}")
            columns.append(Column(name, numbers, categorical=kind == CATEGORY))
        else:
            raise ValueError(
                f"{source}: column {name!r} has type {kind_of}, which gputree cannot use "
                "(numbers, booleans and strings only)"
            )
    return Table(source, names, columns, table.num_rows)


# -- numpy -------------------------------------------------------------------------------------
def _numeric_matrix(array, what, source):
    if array.dtype.kind == "b":
        array = array.astype(np.float64)
    if array.dtype.kind not in "iuf":
        raise ValueError(f"{source}: {what} has dtype {array.dtype}; expected numbers")
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(
            f"{source}: {what} should be a non-empty 2-D array, got shape {array.shape}"
        )
    array = np.asarray(array, dtype=np.float64)
    bad = np.argwhere(np.isinf(array))
    if bad.size:
        raise ValueError(f"{source}: {what} is infinite at row {bad[0][0] + 1}, column {bad[0][1]}")
    return array


def _read_numpy(path, ext, plan) -> Table:
    source = str(path)
    try:
        loaded = np.load(path, allow_pickle=False)
    except (zipfile.BadZipFile, EOFError, ValueError, OSError) as exc:
        raise ValueError(f"{source}: not a readable {ext} file ({exc})") from None
    y = None
    if ext == ".npy":
        X = _numeric_matrix(loaded, "the array", source)
        names = [f"x{j}" for j in range(X.shape[1])]
        generated = True
    else:
        with loaded:
            files = set(loaded.files)
            if "X" not in files:
                raise ValueError(
                    f"{source}: an .npz file needs an array named 'X' (and 'y'); it holds "
                    f"{sorted(files)}"
                )
            try:
                X = _numeric_matrix(loaded["X"], "array 'X'", source)
                y = loaded["y"] if "y" in files else None
                feature_names = loaded["feature_names"] if "feature_names" in files else None
            except ValueError as exc:  # e.g. an object array
                raise ValueError(f"{source}: {exc}") from None
        generated = feature_names is None
        if feature_names is None:
            names = [f"x{j}" for j in range(X.shape[1])]
        else:
            names = [str(n) for n in np.asarray(feature_names).ravel().tolist()]
            if len(names) != X.shape[1] or len(set(names)) != len(names):
                raise ValueError(f"{source}: 'feature_names' should be {X.shape[1]} distinct names")
        if y is not None:
            if y.ndim != 1 or y.shape[0] != X.shape[0]:
                raise ValueError(
                    f"{source}: 'y' should be 1-D with {X.shape[0]} values, got shape {y.shape}"
                )
            if "y" in names:
                raise ValueError(f"{source}: a feature is named 'y', the name of the target")
            names = names + ["y"]
    kinds = _checked_plan(plan, names, source)
    columns = []
    for j, kind in enumerate(kinds):
        if kind == SKIP:
            continue
        if j < X.shape[1]:
            columns.append(Column(names[j], X[:, j].copy(), categorical=kind == CATEGORY))
        elif y.dtype.kind in "biuf":
            values = y.astype(np.float64)
            if np.isinf(values).any():
                raise ValueError(f"{source}: 'y' holds an infinite value")
            columns.append(Column("y", values, categorical=kind == CATEGORY))
        elif y.dtype.kind in "US":
            text = np.empty(y.shape[0], dtype=object)
            text[:] = [str(v) for v in y.tolist()]
            columns.append(Column("y", text, categorical=True))
        else:
            raise ValueError(f"{source}: 'y' has dtype {y.dtype}; expected numbers or strings")
    return Table(source, names, columns, X.shape[0], generated_names=generated)


# -- building X --------------------------------------------------------------------------------
def feature_matrix(columns) -> np.ndarray:
    """The columns side by side: float64, or object when a column holds strings (the
    estimator encodes categorical strings itself)."""
    n_rows = columns[0].values.shape[0] if columns else 0
    if any(column.is_text for column in columns):
        X = np.empty((n_rows, len(columns)), dtype=object)
        for j, column in enumerate(columns):
            X[:, j] = column.values
        return X
    X = np.empty((n_rows, len(columns)), dtype=np.float64)
    for j, column in enumerate(columns):
        X[:, j] = column.values
    return X
