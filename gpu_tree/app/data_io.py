"""Reading tables for the command line.

Formats, chosen by the file's extension:

- ``.csv`` (``.tsv``: tab-separated; either may end in ``.gz``): read as the standard
  ``csv`` module reads it, no pandas (quote-free stretches of rows through np.loadtxt,
  with the same result: :func:`_read_rows_fast`). The first non-blank row is the header
  and names the columns; a header field that is a number is an error (``header=False``,
  the command line's ``--no-header``: the first row is data, the columns ``x0``, ``x1``...).
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

import codecs
import contextlib
import csv
import gzip
import itertools
import math
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gpu_tree.utils.install_hints import install_hint

# What a caller asks of each column: a number, a categorical (strings kept in text
# formats), raw text decided later (a target), or not read at all.
NUMBER, CATEGORY, TEXT, SKIP = "number", "category", "text", "skip"
KINDS = (NUMBER, CATEGORY, TEXT, SKIP)
MISSING_TOKENS = frozenset({"", "?", "na", "n/a", "nan"})
EXTENSIONS = (".csv", ".tsv", ".csv.gz", ".tsv.gz", ".parquet", ".pq", ".arff", ".npz", ".npy")
PARQUET_HINT = f"reading Parquet files needs pyarrow: {install_hint('parquet')}"
_CHUNK_ROWS = 65_536
# CSV rows without the csv module where that gives the same result (_read_rows_fast);
# tests turn it off to compare.
_FAST_CSV = True


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


def read_table(path, plan, number_hint=None, header=True) -> Table:
    """Read ``path``; ``plan(names)`` returns each column's kind (:data:`KINDS`).

    ``number_hint`` ends the message of a non-numeric value in a numeric column ("{name}"
    in it becomes the column's name). ``header=False``: a CSV file's first row is data and
    its columns are named ``x0``, ``x1``, ... (CSV and TSV files only).
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
    hint = number_hint or "if text columns are categorical, declare them: --categorical {name}"
    if ext in (".csv", ".tsv", ".csv.gz", ".tsv.gz"):
        return _read_csv(path, "\t" if ext.startswith(".tsv") else ",", plan, hint, header)
    if not header:
        raise ValueError(f"{path}: --no-header is for .csv and .tsv files only")
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


class _NonNumeric(ValueError):
    """Text in a numeric column; ``column`` names it (the message ends before the hint)."""

    def __init__(self, message, column):
        super().__init__(message)
        self.column = column


def _is_number_or_missing(text: str) -> bool:
    text = text.strip()
    if _is_missing(text):
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


def _quoted(names) -> str:
    shown = ", ".join(repr(n) for n in names[:8])
    return shown + (f" and {len(names) - 8} more" if len(names) > 8 else "")


def _parse_numbers(values, lines, name, source):
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
                raise _NonNumeric(
                    f"{source}, line {lines[i]}: column {name!r} holds the non-numeric value "
                    f"{text!r}",
                    name,
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
    # Each distinct string once: categorical columns have few.
    kept = {v: None if _is_missing(t := v.strip()) else t for v in set(values)}
    out = np.empty(len(values), dtype=object)
    out[:] = [kept[v] for v in values]
    return out


def _read_csv(path, delimiter, plan, hint, header=True) -> Table:
    source = str(path)
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8-sig", newline="") as handle:
            return _parse_csv(handle, delimiter, plan, hint, source, header)
    except csv.Error as exc:
        raise ValueError(f"{source}: malformed CSV: {exc}") from None
    except UnicodeDecodeError as exc:
        # exc.start counts from the start of the decoder's last chunk, not of the file.
        offset, line = _first_undecodable(path, opener)
        raise ValueError(
            f"{source}, line {line}: not UTF-8 text ({exc.reason} at byte {offset})"
        ) from None
    except (EOFError, gzip.BadGzipFile) as exc:
        raise ValueError(f"{source}: damaged gzip file ({exc})") from None


def _first_undecodable(path, opener):
    """(offset, line) of the first byte of ``path`` (decompressed) that is not UTF-8:
    its offset from the start of the text, from 0, and its line, from 1."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = newlines = 0
    with opener(path, "rb") as raw:
        while True:
            block = raw.read(1 << 20)
            pending = decoder.getstate()[0]  # an unfinished character: no line break in it
            try:
                decoder.decode(block, final=not block)
            except UnicodeDecodeError as exc:
                before = (pending + block)[: exc.start]
                return offset - len(pending) + exc.start, newlines + before.count(b"\n") + 1
            if not block:
                return offset, newlines + 1  # not found again: the end of the file
            offset += len(block)
            newlines += block.count(b"\n")


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _header_names(row, line, source) -> list[str]:
    names = [f.strip() for f in row]
    number = next((name for name in names if _is_number(name)), None)
    if number is not None:
        raise ValueError(
            f"{source}, line {line}: the header row has the number {number!r} as a column "
            "name; if the file has no header row, pass --no-header (columns x0, x1, ...)"
        )
    for j, name in enumerate(names):
        if not name:
            raise ValueError(f"{source}, line {line}: column {j + 1} has no name")
        if name in names[:j]:
            raise ValueError(f"{source}, line {line}: the column name {name!r} appears twice")
    return names


def _parse_csv(handle, delimiter, plan, hint, source, header=True) -> Table:
    # The first non-blank row, through the csv module (it may be quoted); ``taken`` keeps
    # its physical lines so that, without a header, they are read again as data.
    taken = []

    def lines_of_handle():
        for text in handle:
            taken.append(text)
            yield text

    reader = csv.reader(lines_of_handle(), delimiter=delimiter)
    first = None
    blank_lines = 0
    for row in reader:
        if any(f.strip() for f in row):
            first = row
            break
        blank_lines = reader.line_num
    if first is None:
        what = "no header row" if header else "no rows"
        raise ValueError(f"{source}: the file is empty ({what})")
    if header:
        names = _header_names(first, reader.line_num, source)
        pending, done = [], reader.line_num
    else:
        names = [f"x{j}" for j in range(len(first))]
        pending, done = taken[blank_lines:], blank_lines
    kinds = _checked_plan(plan, names, source)
    out = _CsvColumns(names, kinds, source, hint, generated=not header)
    if _FAST_CSV and len(names) > 1:
        _read_rows_fast(handle, pending, delimiter, out, done)
    else:
        _read_rows_slow(itertools.chain(pending, handle), delimiter, out, done)
    return out.table()


class _CsvColumns:
    """The columns read so far, in chunks of rows."""

    def __init__(self, names, kinds, source, hint, generated=False):
        self.names, self.kinds, self.source, self.hint = names, kinds, source, hint
        self.generated = generated
        self.keep = [j for j, kind in enumerate(kinds) if kind != SKIP]
        self.parts = {j: [] for j in self.keep}
        self.line_parts = []

    def add_rows(self, rows, lines):
        """Rows of strings (each with every column) from ``lines``."""
        if not rows:
            return
        lines = np.array(lines, dtype=np.int64)
        transposed = list(zip(*rows, strict=True))
        self.add_fields({j: transposed[j] for j in self.keep}, lines)

    def add_fields(self, fields, lines, numbers=None):
        """Each kept column's strings (``fields``) or, for numeric columns, floats
        already parsed (``numbers``)."""
        numbers = numbers or {}
        for j in self.keep:
            if j in numbers:
                self.parts[j].append(numbers[j])
            elif self.kinds[j] == NUMBER:
                try:
                    parsed = _parse_numbers(fields[j], lines, self.names[j], self.source)
                except _NonNumeric as exc:
                    raise self._non_numeric(exc, fields, numbers) from None
                self.parts[j].append(parsed)
            else:
                self.parts[j].append(_parse_text(fields[j]))
        self.line_parts.append(lines)

    def _non_numeric(self, first, fields, numbers) -> ValueError:
        """The error for text in a numeric column, naming every such column of the rows
        at hand, so that one run says all that --categorical needs."""
        names = [first.column]
        for j in self.keep:
            if self.kinds[j] != NUMBER or j in numbers or self.names[j] == first.column:
                continue
            if any(not _is_number_or_missing(v) for v in set(fields[j])):
                names.append(self.names[j])
        also = f" (so do {_quoted(names[1:])})" if len(names) > 1 else ""
        return ValueError(f"{first}{also}; {self.hint.format(name=','.join(names))}")

    def table(self) -> Table:
        if not self.line_parts:
            raise ValueError(f"{self.source}: no data rows after the header")
        columns = [
            Column(self.names[j], np.concatenate(self.parts[j]), self.kinds[j] == CATEGORY)
            for j in self.keep
        ]
        lines = np.concatenate(self.line_parts)
        return Table(
            self.source,
            self.names,
            columns,
            int(lines.size),
            lines=lines,
            generated_names=self.generated,
        )


def _read_rows_slow(lines, delimiter, out, done):
    """The csv module's rows of ``lines`` (physical lines after line ``done``), checked and
    parsed in chunks of _CHUNK_ROWS rows."""
    reader = csv.reader(lines, delimiter=delimiter)
    n_columns = len(out.names)
    chunk, chunk_lines = [], []
    for row in reader:
        if len(row) != n_columns:
            if not any(f.strip() for f in row):
                continue  # a blank line
            raise ValueError(
                f"{out.source}, line {done + reader.line_num}: {len(row)} fields, but the "
                f"header has {n_columns} columns"
            )
        chunk.append(row)
        chunk_lines.append(done + reader.line_num)
        if len(chunk) >= _CHUNK_ROWS:
            out.add_rows(chunk, chunk_lines)
            chunk.clear()
            chunk_lines.clear()
    out.add_rows(chunk, chunk_lines)


def _read_rows_fast(handle, pending, delimiter, out, done):
    """The data rows, _CHUNK_ROWS at a time, as the csv module would read them.

    A chunk of lines is parsed without the csv module when it holds no double quote and
    no NUL character, and each of its lines has the header's number of fields or is blank
    (blank lines are skipped): then each line is one row and its fields are the text
    between delimiters. Numeric columns are parsed by numpy's C parser (np.loadtxt), first
    as they are, then with every missing-value field that is exactly "", "?", "NA" or
    "N/A" (any case) replaced by "nan". Any other chunk, one where either attempt fails,
    and one holding an infinite value is read by the csv module path instead, which gives
    the same values or the same error (chunks hold the same rows on both paths, so the
    first error found is the same). From the first chunk holding a double quote on, the
    rest of the file goes through the csv module (a quoted field may span lines).
    """
    expected = len(out.names) - 1  # delimiters in a row
    lines = list(pending)
    while True:
        chunk, data, complete = [], [], True
        while len(data) < _CHUNK_ROWS:
            new = lines if lines else list(itertools.islice(handle, _CHUNK_ROWS - len(data)))
            lines = []
            if not new:
                break
            counts = [text.count(delimiter) for text in new]
            if counts.count(expected) == len(new):
                data.extend(range(len(chunk), len(chunk) + len(new)))
            else:
                for i, count in enumerate(counts):
                    if count == expected:
                        data.append(len(chunk) + i)
                    elif new[i].replace(delimiter, "").strip():
                        complete = False  # a row of another length: the csv path says which
            chunk.extend(new)
        if not chunk:
            return
        joined = "".join(chunk)
        if '"' in joined:
            _read_rows_slow(itertools.chain(chunk, handle), delimiter, out, done)
            return
        rows = chunk if len(data) == len(chunk) else [chunk[i] for i in data]
        line_numbers = done + 1 + np.asarray(data, dtype=np.int64)
        if not (
            complete and "\0" not in joined and _fast_chunk(rows, line_numbers, delimiter, out)
        ):
            _read_rows_slow(chunk, delimiter, out, done)
        done += len(chunk)


def _fast_chunk(data, line_numbers, delimiter, out) -> bool:
    """Add the rows of ``data`` (lines of quote-free text, each with every column) to
    ``out``; False, having added nothing, when np.loadtxt cannot parse a numeric column
    or finds an infinite value."""
    if not data:
        return True
    n_columns = len(out.names)
    numeric = [j for j in out.keep if out.kinds[j] == NUMBER]
    numbers = {}
    if numeric:
        parsed = _loadtxt(data, delimiter, numeric, 0)
        if parsed is None:
            wrapped = _missing_as_nan("".join(data), delimiter)
            parsed = None if wrapped is None else _loadtxt(wrapped, delimiter, numeric, 1)
        if parsed is None or parsed.shape[0] != len(data) or np.isinf(parsed).any():
            return False
        numbers = {j: np.ascontiguousarray(parsed[:, k]) for k, j in enumerate(numeric)}
    texts = [j for j in out.keep if out.kinds[j] != NUMBER]
    fields = {}
    # Each column on its own splits only up to it, from the nearer end; many at once, all.
    if sum(min(j + 1, n_columns - j) for j in texts) > n_columns:
        rows = [text.split(delimiter) for text in data]
        fields = {j: [row[j] for row in rows] for j in texts}
    else:
        for j in texts:
            if j <= (n_columns - 1) // 2:
                fields[j] = [text.split(delimiter, j + 1)[j] for text in data]
            else:
                fields[j] = [text.rsplit(delimiter, n_columns - j)[1] for text in data]
    out.add_fields(fields, line_numbers, numbers)
    return True


def _loadtxt(lines, delimiter, columns, shift):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.loadtxt(
                lines,
                delimiter=delimiter,
                dtype=np.float64,
                usecols=[j + shift for j in columns],
                comments=None,
                quotechar=None,
                ndmin=2,
            )
    except (ValueError, IndexError, TypeError):
        return None


# Missing-value fields np.loadtxt does not read as NaN by itself ("nan" it does).
_MISSING_SPELLINGS = ("", "?", "NA", "na", "Na", "nA", "N/A", "n/a", "N/a", "n/A")


def _missing_as_nan(text, delimiter):
    """The lines of ``text``, each framed by a delimiter at both ends (so every field is
    between two), with each field that is exactly a missing-value token made "nan"; None
    when ``text`` has a lone carriage return."""
    text = text.replace("\r\n", "\n")
    if "\r" in text:
        return None
    if text.endswith("\n"):
        text = text[:-1]
    text = delimiter + text.replace("\n", delimiter + "\n" + delimiter) + delimiter
    nan = delimiter + "nan" + delimiter
    for token in _MISSING_SPELLINGS:
        field = delimiter + token + delimiter
        if field in text:
            # Twice: neighbouring fields share a delimiter, so one pass misses every other.
            text = text.replace(field, nan).replace(field, nan)
    return text.split("\n")


# -- ARFF --------------------------------------------------------------------------------------
def _read_arff(path, plan, hint) -> Table:
    from gpu_tree.app.arff import read_arff

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
