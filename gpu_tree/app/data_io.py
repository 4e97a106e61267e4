"""Reading tables for the command line.

Formats, chosen by the file's extension:

- ``.csv`` (``.tsv``: tab-separated; either may end in ``.gz``; ``sep`` another
  separator, ``encoding`` another text encoding): read through pyarrow's multithreaded
  CSV reader where pyarrow is installed (:func:`_read_csv_arrow`), else as the standard
  ``csv`` module reads it (quote-free stretches of rows through np.loadtxt, with the same
  result: :func:`_read_rows_fast`). The two give the same table; where pyarrow cannot
  read a file as the csv module does, or a value needs a message with its line, the csv
  module's reader reads it (so pyarrow is optional: it is 170 MB installed, more than
  numba and llvmlite together, and a user training on arrays needs none of it). The
  first non-blank row is the header and names the columns; a header field that is a
  number is an error (``header=False``, the command line's ``--no-header``: the first row
  is data, the columns ``x0``, ``x1``...). Fields are stripped of surrounding spaces. An
  empty field and ``?``, ``NA``, ``N/A``, ``nan`` (any case), and the caller's
  ``na_values``, are missing values. A FEATURE column is numeric unless a value is not a
  number; then it is categorical, every value kept as its text. Declared categorical
  columns keep their values as strings; a non-numeric value in a NUMBER column is an
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
import io
import itertools
import math
import os
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gpu_tree.utils.install_hints import install_hint

# What a caller asks of each column: a number, a categorical (strings kept in text
# formats), a feature whose values decide (FEATURE: numbers if every present value is one,
# else categories, each value's text a category, as Parquet's and ARFF's types decide),
# raw text decided later (a target), or not read at all.
NUMBER, CATEGORY, FEATURE, TEXT, SKIP = "number", "category", "feature", "text", "skip"
KINDS = (NUMBER, CATEGORY, FEATURE, TEXT, SKIP)
MISSING_TOKENS = frozenset({"", "?", "na", "n/a", "nan"})
EXTENSIONS = (".csv", ".tsv", ".csv.gz", ".tsv.gz", ".parquet", ".pq", ".arff", ".npz", ".npy")
PARQUET_HINT = f"reading Parquet files needs pyarrow: {install_hint('parquet')}"
_CHUNK_ROWS = 65_536
# CSV rows without the csv module where that gives the same result (_read_rows_fast);
# tests turn it off to compare.
_FAST_CSV = True
# CSV files through pyarrow's multithreaded reader when pyarrow is installed
# (_read_csv_arrow): "auto", files of _ARROW_MIN_BYTES or more; True, every file (tests
# set True or False to compare it with the readers above). Importing pyarrow, and pandas,
# which its conversion to NumPy imports, takes 0.5 s and up (1.3 s on a busy 2-core
# machine): the readers above (18 MB/s) read a smaller file sooner.
_ARROW_CSV = "auto"
_ARROW_MIN_BYTES = 8 << 20


@dataclass
class Column:
    name: str
    values: np.ndarray  # float64 with NaN for missing, or object: str with None for missing
    categorical: bool = False
    nominal: bool = False  # an ARFF nominal attribute: categorical, its values declared

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
    # For a text file read without line numbers (pyarrow's reader): finds them, only
    # when a message needs one.
    find_lines: Callable[[], np.ndarray] | None = None

    def __post_init__(self):
        self.by_name = {column.name: column for column in self.columns}

    def where(self, row: int) -> str:
        if self.lines is None and self.find_lines is not None:
            self.lines = self.find_lines()
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


class MissingValues:
    """What reads as a missing value in a text file: an empty field, ``?``, ``NA``,
    ``N/A``, ``nan`` (any case), and the user's own tokens (``--na-values``), each compared
    with a field stripped of surrounding spaces, exactly. A token that is a number also
    marks every field of that value in a numeric column ("-999" and "-999.0" alike).

    A token that is an infinite number ("inf", "-Infinity", "1e400") is refused, here,
    for every reader of text files (pyarrow's, the csv module's, Dask's): infinite
    values are not allowed in data (a numeric column holding one is an error naming its
    line, from every reader), and a number token would mark every spelling of its value,
    so such a token would be a second, partial rule for them."""

    def __init__(self, extra=()):
        self.extra = frozenset(token.strip() for token in extra)
        infinite = sorted(t for t in self.extra if _is_infinite(t))
        if infinite:
            raise ValueError(
                f"--na-values {infinite[0]!r}: an infinite number cannot mark missing values "
                "(infinite values are not allowed in data); write the file's missing values "
                "as empty fields, NA, or a finite token given to --na-values (-999, say)"
            )
        self.numbers = np.array(sorted(float(t) for t in self.extra if _is_number(t)))

    def __contains__(self, text: str) -> bool:
        return text.lower() in MISSING_TOKENS or text in self.extra

    def spellings(self) -> list[str]:
        """Every field that is exactly a missing value (for readers that match exactly):
        each default token in every mix of cases, and the user's tokens."""
        spelled = {
            "".join(letters)
            for token in MISSING_TOKENS
            for letters in itertools.product(*({c.lower(), c.upper()} for c in token))
        }
        return sorted(spelled | self.extra)

    def blank_numbers(self, values: np.ndarray) -> np.ndarray:
        """``values`` with the user's number tokens made NaN (in place)."""
        if self.numbers.size:
            values[np.isin(values, self.numbers)] = np.nan
        return values


DEFAULT_MISSING = MissingValues()


def read_table(
    path, plan, number_hint=None, header=True, sep=None, na_values=(), encoding="utf-8"
) -> Table:
    """Read ``path``; ``plan(names)`` returns each column's kind (:data:`KINDS`).

    ``number_hint`` ends the message of a non-numeric value in a numeric column ("{name}"
    in it becomes the column's name). For CSV and TSV files only: ``header=False``, the
    first row is data and the columns are named ``x0``, ``x1``, ...; ``sep``, the field
    separator (default: by extension); ``na_values``, more missing-value tokens (see
    :class:`MissingValues`); ``encoding``, the text's (default UTF-8, a BOM skipped).
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
        if sep is None:
            sep = "\t" if ext.startswith(".tsv") else ","
        text_format = TextFormat(sep, header, MissingValues(na_values), encoding)
        return _read_csv(path, text_format, plan, hint)
    for given, option in ((not header, "--no-header"), (sep, "--sep"), (na_values, "--na-values")):
        if given:
            raise ValueError(f"{path}: {option} is for .csv and .tsv files only")
    if encoding.lower().replace("-", "").replace("_", "") not in ("utf8", "utf8sig"):
        raise ValueError(f"{path}: --encoding is for .csv and .tsv files only")
    if ext in (".parquet", ".pq"):
        return _read_parquet(path, plan)
    if ext == ".arff":
        return _read_arff(path, plan, hint)
    return _read_numpy(path, ext, plan)


def _checked_plan(plan, names, source, sep=None):
    try:
        kinds = list(plan(names))
    except ValueError as exc:
        raise ValueError(f"{source}: {exc}{_separator_hint(names, sep)}") from None
    if len(kinds) != len(names) or any(kind not in KINDS for kind in kinds):
        raise RuntimeError(f"internal error: bad column plan {kinds!r} for {source}")
    return kinds


def _separator_hint(names, sep) -> str:
    """A hint when a text file's header came out as one column holding another usual
    separator: the file is likely separated by it (a semicolon file read as commas)."""
    if sep is None or len(names) != 1:
        return ""
    other = next((c for c in ";,\t|" if c != sep and c in names[0]), None)
    if other is None:
        return ""
    return (
        f" (the header was read as one column, {names[0]!r}: if the fields are separated "
        f"by {other!r}, pass --sep {other!r})"
    )


# -- CSV -------------------------------------------------------------------------------------
def _is_missing(text: str, missing: MissingValues = DEFAULT_MISSING) -> bool:
    return text in missing


class _NonNumeric(ValueError):
    """Text in a numeric column; ``column`` names it (the message ends before the hint)."""

    def __init__(self, message, column):
        super().__init__(message)
        self.column = column


def _is_number_or_missing(text: str, missing: MissingValues = DEFAULT_MISSING) -> bool:
    text = text.strip()
    if _is_missing(text, missing):
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


def _quoted(names) -> str:
    shown = ", ".join(repr(n) for n in names[:8])
    return shown + (f" and {len(names) - 8} more" if len(names) > 8 else "")


def _parse_numbers(values, lines, name, source, missing=DEFAULT_MISSING):
    """Strings -> float64 (NaN for missing tokens), naming the line of a bad value (the
    user's number tokens are made NaN later, once per column: _CsvColumns.table)."""
    try:
        out = np.array(values, dtype=np.float64)
    except ValueError:
        out = np.empty(len(values))
        for i, text in enumerate(values):
            text = text.strip()
            if _is_missing(text, missing):
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


def _parse_text(values, missing=DEFAULT_MISSING):
    # Each distinct string once: categorical columns have few.
    kept = {v: None if _is_missing(t := v.strip(), missing) else t for v in set(values)}
    out = np.empty(len(values), dtype=object)
    out[:] = [kept[v] for v in values]
    return out


@dataclass(frozen=True)
class TextFormat:
    sep: str
    header: bool
    missing: MissingValues
    encoding: str

    def __post_init__(self):
        try:
            codecs.lookup(self.encoding)
        except LookupError:
            raise ValueError(f"unknown text encoding {self.encoding!r}") from None
        try:  # a codec of bytes to bytes (base64, zlib, hex) is known but reads no text
            io.TextIOWrapper(io.BytesIO(), encoding=self.encoding)
        except LookupError:
            raise ValueError(
                f"{self.encoding!r} is not a text encoding (it turns bytes into bytes); "
                "--encoding takes one such as latin-1, cp1252 or utf-16"
            ) from None

    @property
    def python_encoding(self) -> str:
        """The codec for Python's reader: UTF-8 skips a byte-order mark, as pyarrow does."""
        return "utf-8-sig" if self._is_utf8 else self.encoding

    @property
    def arrow_encoding(self) -> str:
        """The encoding for pyarrow's reader: its own "utf8" (which skips a BOM), else a
        Python codec it transcodes through."""
        return "utf8" if self._is_utf8 else self.encoding

    @property
    def _is_utf8(self) -> bool:
        return codecs.lookup(self.encoding).name == "utf-8"


def _opener(path):
    """How to open a text file: through gzip when its name ends in .gz."""
    return gzip.open if path.name.lower().endswith(".gz") else open


class _BecameText(Exception):
    """A FEATURE column read as numbers in earlier chunks met text: read again."""

    def __init__(self, names):
        super().__init__(names)
        self.names = names


def _read_csv(path, text_format, plan, hint) -> Table:
    source = str(path)
    if len(text_format.sep) != 1 or text_format.sep in '\r\n"':
        raise ValueError(
            f"the field separator must be one character, not a quote or line break: "
            f"{text_format.sep!r}"
        )
    opener = _opener(path)
    as_text = set()  # FEATURE columns found to hold text after numbers: read once more

    def plan_as_found(names):
        kinds = plan(names)
        return [CATEGORY if name in as_text else k for name, k in zip(names, kinds, strict=False)]

    while True:
        try:
            with opener(path, "rt", encoding=text_format.python_encoding, newline="") as handle:
                return _parse_csv(handle, text_format, plan_as_found, hint, source, path)
        except _BecameText as exc:
            as_text.update(exc.names)
        except csv.Error as exc:
            raise ValueError(f"{source}: malformed CSV: {exc}") from None
        except UnicodeDecodeError as exc:
            # exc.start counts from the start of the decoder's last chunk, not of the file.
            offset, line = _first_undecodable(path, opener, text_format.encoding)
            what = "UTF-8" if exc.encoding.startswith("utf") else exc.encoding
            raise ValueError(
                f"{source}, line {line}: not {what} text ({exc.reason} at byte {offset}); "
                "if the file has another encoding, pass it: --encoding latin-1, say"
            ) from None
        except (EOFError, gzip.BadGzipFile) as exc:
            raise ValueError(f"{source}: damaged gzip file ({exc})") from None


def _first_undecodable(path, opener, encoding="utf-8"):
    """(offset, line) of the first byte of ``path`` (decompressed) that is not text in
    ``encoding``: its offset from the start of the text, from 0, and its line, from 1."""
    decoder = codecs.getincrementaldecoder(encoding)()
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


def _read_csv_arrow(path, text_format, names, kinds, skip_rows, source) -> Table | None:
    """The table through pyarrow's multithreaded CSV reader, or None to read it with the
    readers below: pyarrow is not installed, or it cannot read the file as they would
    (rows of another length, quoted line breaks, blank lines of spaces), or a value needs
    a message with its line (text in a numeric column, an infinite value), which they
    give. The same rules as theirs: fields stripped of surrounding spaces, the same
    missing values, numbers as Python's float() reads them (pyarrow parses the columns it
    finds to be all numbers itself; any other column is read as text and converted here,
    and a value pyarrow cannot cast but float() can sends the file to the readers below).
    Row line numbers are found only when a message needs one."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as pa_csv
    except ImportError:
        return None
    kept = [j for j, kind in enumerate(kinds) if kind != SKIP]
    as_text = [names[j] for j in kept if kinds[j] in (TEXT, CATEGORY)]
    wanted = [names[j] for j in kept]
    table = _arrow_read(path, text_format, skip_rows, names, wanted, as_text, pa, pa_csv)
    if table is None or table.num_rows == 0:
        return None
    # Columns pyarrow took for dates, times or anything but numbers and text: their text.
    unusual = [
        name
        for name in table.column_names
        if not _arrow_numeric(table.column(name).type, pa)
        and name not in as_text
        and not pa.types.is_string(table.column(name).type)
    ]
    if unusual:
        again = _arrow_read(path, text_format, skip_rows, names, unusual, unusual, pa, pa_csv)
        if again is None or again.num_rows != table.num_rows:
            return None
        for name in unusual:
            table = table.set_column(table.column_names.index(name), name, again.column(name))
    missing = text_format.missing
    columns = []
    for j in kept:
        data = table.column(names[j])
        values, kind = None, kinds[j]
        if kind in (NUMBER, FEATURE):
            values = _arrow_numbers(data, missing, pa, pc)
            if values is None and (
                kind == NUMBER
                or _arrow_numeric(data.type, pa)  # numbers pyarrow read, an infinite one among
                or _all_numbers(data, missing, pc)
            ):
                return None  # an error to locate, or numbers only Python reads
        if values is None:
            values, kind = _arrow_text(data, missing, pc), CATEGORY if kind == FEATURE else kind
        columns.append(Column(names[j], values, kind == CATEGORY))

    def find_lines():
        with _opener(path)(path, "rt", encoding=text_format.python_encoding, newline="") as handle:
            skip_all = lambda names: [SKIP] * len(names)  # noqa: E731
            return _parse_csv(handle, text_format, skip_all, "", source).lines

    return Table(
        source,
        names,
        columns,
        table.num_rows,
        generated_names=not text_format.header,
        find_lines=find_lines,
    )


def _arrow_read(path, text_format, skip_rows, names, columns, as_text, pa, pa_csv):
    """pyarrow's table of ``columns`` (``as_text`` read as strings, the others as its type
    inference finds them, never as booleans), or None where it cannot read the file."""
    try:
        return pa_csv.read_csv(
            path,  # a .gz file is decompressed (pyarrow goes by the extension)
            read_options=pa_csv.ReadOptions(
                skip_rows=skip_rows,
                column_names=names,
                encoding=text_format.arrow_encoding,
            ),
            parse_options=pa_csv.ParseOptions(delimiter=text_format.sep),
            convert_options=pa_csv.ConvertOptions(
                include_columns=columns,
                column_types=dict.fromkeys(as_text, pa.string()),
                null_values=text_format.missing.spellings(),
                strings_can_be_null=True,
                quoted_strings_can_be_null=True,
                true_values=[],  # "true" stays text, as the csv-module readers keep it
                false_values=[],
            ),
        )
    except (pa.ArrowException, OSError, UnicodeError, ValueError):
        return None


def _arrow_numeric(kind, pa) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_null(kind)


def _arrow_numbers(data, missing, pa, pc) -> np.ndarray | None:
    """A column of text as float64 (NaN where missing), or None when a value is not a
    number pyarrow reads, or is infinite."""
    try:
        # Integers beyond 2**53 round to the nearest float, as float() rounds them.
        numbers = pc.cast(data, pa.float64(), safe=False)
    except pa.ArrowInvalid:  # spaces around fields, or text
        trimmed = pc.utf8_trim_whitespace(data)
        is_missing = pc.or_(
            pc.is_in(pc.utf8_lower(trimmed), value_set=pa.array(sorted(MISSING_TOKENS))),
            pc.is_in(trimmed, value_set=pa.array(sorted(missing.extra), type=pa.string())),
        )
        try:
            numbers = pc.cast(pc.if_else(is_missing, None, trimmed), pa.float64())
        except pa.ArrowInvalid:
            return None
    values = np.asarray(numbers.fill_null(np.nan).to_numpy(), dtype=np.float64)
    if not values.flags.writeable:  # Arrow's own memory, lent
        values = values.copy()
    if np.isinf(values).any():
        return None
    return missing.blank_numbers(values)


def _all_numbers(data, missing, pc) -> bool:
    """Whether every distinct value of a column of text is a number or missing as
    Python's float() reads it (so "1_000" is a number, as the csv-module reader has it)."""
    return all(_is_number_or_missing(v, missing) for v in pc.unique(data).drop_null().to_pylist())


def _arrow_text(data, missing, pc) -> np.ndarray:
    """A column of text as an object array of stripped strings, None where missing: each
    distinct value converted once."""
    distinct = pc.unique(data).drop_null()
    codes = np.asarray(pc.index_in(data, value_set=distinct).fill_null(-1).to_numpy())
    texts = np.empty(len(distinct) + 1, dtype=object)  # the last: missing (code -1)
    texts[:-1] = [None if (t := v.strip()) in missing else t for v in distinct.to_pylist()]
    return texts[codes]


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _is_infinite(text: str) -> bool:
    """Whether ``text`` reads (as Python's float() reads it) as an infinite number."""
    try:
        return math.isinf(float(text))
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


def _parse_csv(handle, text_format, plan, hint, source, path=None) -> Table:
    # The first non-blank row, through the csv module (it may be quoted); ``taken`` keeps
    # its physical lines so that, without a header, they are read again as data.
    taken = []

    def lines_of_handle():
        for text in handle:
            taken.append(text)
            yield text

    delimiter, header = text_format.sep, text_format.header
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
    kinds = _checked_plan(plan, names, source, text_format.sep)
    if path is not None and (
        _ARROW_CSV is True or (_ARROW_CSV and os.path.getsize(path) >= _ARROW_MIN_BYTES)
    ):
        skip = reader.line_num if header else blank_lines
        table = _read_csv_arrow(path, text_format, names, kinds, skip, source)
        if table is not None:
            return table
    out = _CsvColumns(names, kinds, source, hint, text_format.missing, generated=not header)
    if _FAST_CSV and len(names) > 1:
        _read_rows_fast(handle, pending, delimiter, out, done)
    else:
        _read_rows_slow(itertools.chain(pending, handle), delimiter, out, done)
    return out.table()


class _CsvColumns:
    """The columns read so far, in chunks of rows."""

    def __init__(self, names, kinds, source, hint, missing=DEFAULT_MISSING, generated=False):
        self.names, self.kinds, self.source, self.hint = names, list(kinds), source, hint
        self.missing, self.generated = missing, generated
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
            parsed = None
            if j in numbers:
                parsed = numbers[j]
            elif self.kinds[j] in (NUMBER, FEATURE):
                try:
                    parsed = _parse_numbers(
                        fields[j], lines, self.names[j], self.source, self.missing
                    )
                except _NonNumeric as exc:
                    if self.kinds[j] == NUMBER:
                        raise self._non_numeric(exc, fields, numbers) from None
                    if self.parts[j]:  # numbers so far: the column is read again as text
                        raise _BecameText([self.names[j]]) from None
                    self.kinds[j] = CATEGORY  # text from its first chunk on
            if parsed is None:
                parsed = _parse_text(fields[j], self.missing)
            self.parts[j].append(parsed)
        self.line_parts.append(lines)

    def _non_numeric(self, first, fields, numbers) -> ValueError:
        """The error for text in a numeric column, naming every such column of the rows
        at hand, so that one run says all that --categorical needs."""
        names = [first.column]
        for j in self.keep:
            if self.kinds[j] != NUMBER or j in numbers or self.names[j] == first.column:
                continue
            if any(not _is_number_or_missing(v, self.missing) for v in set(fields[j])):
                names.append(self.names[j])
        also = f" (so do {_quoted(names[1:])})" if len(names) > 1 else ""
        return ValueError(f"{first}{also}; {self.hint.format(name=','.join(names))}")

    def table(self) -> Table:
        if not self.line_parts:
            raise ValueError(f"{self.source}: no data rows after the header")
        columns = []
        for j in self.keep:
            values = np.concatenate(self.parts[j])
            if values.dtype != object:
                self.missing.blank_numbers(values)
            columns.append(Column(self.names[j], values, self.kinds[j] == CATEGORY))
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
    numeric = [j for j in out.keep if out.kinds[j] in (NUMBER, FEATURE)]
    numbers = {}
    if numeric:
        parsed = _loadtxt(data, delimiter, numeric, 0)
        if parsed is None:
            wrapped = _missing_as_nan("".join(data), delimiter)
            parsed = None if wrapped is None else _loadtxt(wrapped, delimiter, numeric, 1)
        if parsed is None or parsed.shape[0] != len(data) or np.isinf(parsed).any():
            return False
        numbers = {j: np.ascontiguousarray(parsed[:, k]) for k, j in enumerate(numeric)}
    texts = [j for j in out.keep if out.kinds[j] not in (NUMBER, FEATURE)]
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
            columns.append(Column(names[j], text, categorical=True, nominal=nominal[j]))
            continue
        out = np.empty(len(values))
        for i, value in enumerate(values):
            if value is None or _is_missing(value.strip()):
                out[i] = np.nan
                continue
            try:
                out[i] = float(value)
            except ValueError:
                if kind in (TEXT, FEATURE):  # a text target, a feature of text: strings
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
            columns.append(Column(names[j], out, categorical=kind == FEATURE))
            continue
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
    return np.asarray(array, dtype=np.float64)


def _refuse_infinity(X, what, names, source):
    """An infinite value of X, named by its row and its column's position and name."""
    bad = np.argwhere(np.isinf(X))
    if bad.size:
        row, j = int(bad[0][0]), int(bad[0][1])
        raise ValueError(
            f"{source}: {what} is infinite at row {row + 1}, column {j} ({names[j]!r})"
        )


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
        _refuse_infinity(X, "the array", names, source)
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
        _refuse_infinity(X, "array 'X'", names, source)
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
