"""``gputree train --scheduler ADDRESS`` / ``--workers N``: training on data files that
the Dask workers read, not the client.

The client expands globs and folders into file names and learns the column names (and,
for Parquet, the types) from the files' headers and footers; the workers read the rows,
one task per partition. What comes back to the client is small: per partition a few
counts and at most ``DISTINCT_CAP`` distinct target values, then the fit's histograms
(:mod:`gpu_tree.dask`). CSV rows are read as text and typed by the same rule as the
in-memory reader (a column is numeric when every present value is a number, over every
file), which takes one more pass over the files than Parquet needs.

Dask is imported here only, inside the functions that need it, so that ``gputree
--help`` stays fast and works where Dask is not installed.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import functools
import glob
import gzip
import logging
import os
import re
from dataclasses import dataclass, field

import numpy as np

from gpu_tree.app.data_io import (
    MISSING_TOKENS,
    PARQUET_HINT,
    MissingValues,
    TextFormat,
    extension,
)
from gpu_tree.utils.install_hints import install_hint

# gpu_tree is not on a package index: name the packages pip finds anywhere, and the
# checkout's extra (as gpu_tree.utils.install_hints words every other hint).
DASK_HINT = install_hint("dask")
PARQUET_EXTENSIONS = (".parquet", ".pq")
TEXT_EXTENSIONS = (".csv", ".tsv", ".csv.gz", ".tsv.gz")
# Distinct target values a partition reports: one more than the most classes task
# "auto" accepts is enough to tell "too many".
DISTINCT_CAP = 64
_GLOB_CHARACTERS = re.compile(r"[*?\[]")


def require_dask():
    """The ``distributed`` module, or an ImportError saying how to install Dask."""
    try:
        import dask.dataframe  # noqa: F401
        import distributed
    except ImportError as exc:
        raise ImportError(
            f"--scheduler and --workers need Dask ({exc.name or exc} is not installed): {DASK_HINT}"
        ) from None
    return distributed


def lost_worker_errors() -> tuple:
    """The exceptions that say a worker went away mid-command (the rows it held with it):
    an expected failure, to be reported in one line; training again is the remedy."""
    import distributed

    from gpu_tree.dask import WorkerLostError

    return (WorkerLostError, distributed.KilledWorker)


# -- the files ---------------------------------------------------------------------------------
@dataclass
class DataFiles:
    """The files a distributed command reads, in row order, and their format."""

    files: list[str]
    kind: str  # "parquet" or "text"
    gzipped: bool = False
    default_sep: str = ","

    def describe(self) -> str:
        if len(self.files) == 1:
            return self.files[0]
        return f"{len(self.files)} files ({self.files[0]}, ...)"


def _natural_key(path: str):
    """part.2.parquet before part.10.parquet (how Dask's writers number their files)."""
    return [int(piece) if piece.isdigit() else piece for piece in re.split(r"(\d+)", path)]


def _files_in_folder(folder: str) -> list[str]:
    found = [
        os.path.join(folder, name)
        for name in os.listdir(folder)
        if extension(name) in PARQUET_EXTENSIONS and os.path.isfile(os.path.join(folder, name))
    ]
    if not found:
        raise FileNotFoundError(
            f"{folder}: a folder given as DATA should hold .parquet files; it holds none"
        )
    return sorted(found, key=_natural_key)


def find_data_files(specs) -> DataFiles:
    """The files that ``specs`` (paths, globs, folders of Parquet files) name, checked:
    each exists and is not empty, no file twice, one format throughout."""
    files = []
    for spec in specs:
        spec = str(spec)
        if _GLOB_CHARACTERS.search(spec) and not os.path.exists(spec):
            matches = sorted(glob.glob(spec, recursive=True), key=_natural_key)
            if not matches:
                raise FileNotFoundError(f"{spec}: no file matches this pattern")
        else:
            matches = [spec]
        for path in matches:
            if os.path.isdir(path):
                files += _files_in_folder(path)
            elif os.path.isfile(path):
                files.append(path)
            else:
                raise FileNotFoundError(f"{path}: no such file")
    seen = {}
    for path in files:
        real = os.path.realpath(path)
        if real in seen:
            raise ValueError(f"{path} is named twice in DATA (also as {seen[real]})")
        seen[real] = path
        if os.path.getsize(path) == 0:
            raise ValueError(f"{path}: the file is empty")
    extensions = {extension(path) for path in files}
    unknown = extensions - set(PARQUET_EXTENSIONS) - set(TEXT_EXTENSIONS)
    if unknown:
        path = next(p for p in files if extension(p) in unknown)
        raise ValueError(
            f"{path}: distributed training reads {', '.join(PARQUET_EXTENSIONS + TEXT_EXTENSIONS)}"
            f" files, not {extension(path) or 'files without an extension'}"
        )
    separators = {"\t" if ext.startswith(".tsv") else "," for ext in extensions}
    if extensions <= set(PARQUET_EXTENSIONS):
        return DataFiles(files, "parquet")
    if extensions <= set(TEXT_EXTENSIONS) and len(separators) == 1:
        gzipped = any(ext.endswith(".gz") for ext in extensions)
        return DataFiles(files, "text", gzipped, separators.pop())
    raise ValueError(
        f"DATA mixes file formats ({', '.join(sorted(extensions))}): give files of one format"
    )


# -- the cluster -------------------------------------------------------------------------------
def check_scheduler_address(address: str):
    """A ValueError naming ``--scheduler`` when ``address`` is no Dask address (before any
    connection: a Client refused mid-construction prints a traceback when collected)."""
    from distributed.comm import parse_address
    from distributed.comm.addressing import parse_host_port
    from distributed.comm.registry import get_backend

    try:
        scheme, location = parse_address(address)
        get_backend(scheme)
        if scheme in ("tcp", "tls", "ws", "wss"):
            parse_host_port(location)
    except ValueError as exc:
        raise ValueError(
            f"--scheduler {address!r} is not a Dask scheduler address (such as "
            f"tcp://host:8786): {_one_line(exc)}"
        ) from None


@contextlib.contextmanager
def _distributed_logs_at(level):
    """distributed's own log lines (cluster start and stop) at ``level`` and above only."""
    distributed_logger = logging.getLogger("distributed")
    previous = distributed_logger.level
    distributed_logger.setLevel(level)
    try:
        yield
    finally:
        distributed_logger.setLevel(previous)


@contextlib.contextmanager
def dask_client(scheduler=None, workers=None, connect_timeout=10.0, verbose=False):
    """A ``distributed.Client`` of the scheduler at ``scheduler``, or of a local cluster of
    ``workers`` processes of one thread each, closed (with the cluster) on exit. Yields
    (client, words for messages)."""
    distributed = require_dask()
    level = logging.INFO if verbose else logging.ERROR
    with _distributed_logs_at(level), contextlib.ExitStack() as stack:
        if scheduler is not None:
            check_scheduler_address(scheduler)
            try:
                client = distributed.Client(
                    scheduler, timeout=connect_timeout, set_as_default=False
                )
            except (OSError, TimeoutError, ValueError, TypeError) as exc:
                reason = " ".join(str(exc).split()) or type(exc).__name__
                raise ConnectionError(
                    f"cannot reach the Dask scheduler at {scheduler!r} within "
                    f"{connect_timeout:g} s (--connect-timeout): {reason}"
                ) from None
            stack.enter_context(client)
            where = f"the scheduler at {scheduler}"
        else:
            cluster = stack.enter_context(
                distributed.LocalCluster(
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    silence_logs=level,
                )
            )
            client = stack.enter_context(distributed.Client(cluster, set_as_default=False))
            where = f"a local cluster of {workers} worker process{'es' if workers > 1 else ''}"
        # The current client for this context only (not a process-wide default): code
        # that asks distributed for "the" client (distributed.wait, a collection's
        # compute) gets this one, and nothing outlives the command.
        with client.as_current():
            yield client, where


# -- reading -----------------------------------------------------------------------------------
@dataclass
class DistributedTable:
    """A lazy Dask DataFrame of the files' columns (as read: CSV columns are text) and
    what the client knows of them without reading the rows."""

    frame: object  # dask.dataframe.DataFrame
    names: list[str]
    source: str
    text_columns: set = field(default_factory=set)  # holding text (categorical features)
    text_file: bool = False  # CSV/TSV: every column read as text, typed by typed_columns
    missing: MissingValues = field(default_factory=MissingValues)


def _parquet_columns(path) -> list[str]:
    """A Parquet file's column names, from its footer (pandas' index columns left out,
    as Dask's reader leaves them)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(PARQUET_HINT) from None
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException) as exc:
        raise ValueError(f"{path}: not readable as Parquet ({_one_line(exc)})") from None
    index = (schema.pandas_metadata or {}).get("index_columns", [])
    return [name for name in schema.names if name not in index]


def _text_header(path, header, sep, encoding) -> list[str]:
    """A CSV/TSV file's first non-blank row, its fields stripped: the column names, or
    with ``header=False`` the first row of data (only its width counts)."""
    opener = gzip.open if path.lower().endswith(".gz") else open
    if codecs.lookup(encoding).name == "utf-8":
        encoding = "utf-8-sig"  # a byte-order mark is no part of the first name
    try:
        with opener(path, "rt", encoding=encoding, newline="") as handle:
            for row in csv.reader(handle, delimiter=sep):
                if any(field.strip() for field in row):
                    return [field.strip() for field in row]
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path}: not {exc.encoding} text ({exc.reason}); if the file has another "
            "encoding, pass it: --encoding latin-1, say"
        ) from None
    except (csv.Error, EOFError, gzip.BadGzipFile) as exc:
        raise ValueError(f"{path}: not readable as CSV ({_one_line(exc)})") from None
    return []


def check_same_columns(files: DataFiles, header=True, sep=None, encoding="utf-8"):
    """A ValueError naming the first file whose columns are not the first file's (the
    columns it lacks and those it adds; without a header, its width), before any worker
    reads a row: Dask takes the first file's columns for every file, and a file
    without one of them fails on a worker. The order of the columns may differ."""
    if len(files.files) < 2:
        return
    if files.kind == "parquet":
        columns_of = _parquet_columns
    else:
        sep = sep or files.default_sep
        columns_of = functools.partial(_text_header, header=header, sep=sep, encoding=encoding)
    first, *others = files.files
    expected = columns_of(first)
    for path in others:
        found = columns_of(path)
        if not header and files.kind == "text":
            if len(found) != len(expected):
                raise ValueError(
                    f"{path}: it has {len(found)} columns, {first} has {len(expected)}; "
                    "every file must have the same columns"
                )
            continue
        missing = [name for name in expected if name not in found]
        extra = [name for name in found if name not in expected]
        if missing or extra:
            differences = [
                f"{what} {_shown(names)}"
                for what, names in (("missing", missing), ("extra", extra))
                if names
            ]
            raise ValueError(
                f"{path}: its columns are not those of {first}: {'; '.join(differences)} "
                "(every file must have the same columns, in any order)"
            )


def _shown(names, limit=8) -> str:
    shown = ", ".join(repr(name) for name in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def read_files(files: DataFiles, header=True, sep=None, na_values=(), encoding="utf-8"):
    """A :class:`DistributedTable` over ``files`` (nothing read but headers and footers;
    every file's, to check that they have the same columns)."""
    import dask.dataframe as dd

    source = files.describe()
    if files.kind == "parquet":
        for given, option in (
            (not header, "--no-header"),
            (sep, "--sep"),
            (na_values, "--na-values"),
        ):
            if given:
                raise ValueError(f"{source}: {option} is for .csv and .tsv files only")
        if encoding.lower().replace("-", "").replace("_", "") not in ("utf8", "utf8sig"):
            raise ValueError(f"{source}: --encoding is for .csv and .tsv files only")
        check_same_columns(files)
        try:
            frame = dd.read_parquet(files.files)
        except (OSError, ValueError) as exc:
            raise ValueError(f"{source}: not readable as Parquet ({_one_line(exc)})") from None
        names = [str(name) for name in frame.columns]
        text = {name for name, dtype in frame.dtypes.items() if _is_text_dtype(dtype)}
        return DistributedTable(frame, names, source, text)
    # The tokens and the encoding checked as a single-file train checks them (an
    # infinite token, a codec of bytes), before any file is opened.
    missing = TextFormat(
        sep or files.default_sep, header, MissingValues(na_values), encoding
    ).missing
    check_same_columns(files, header, sep, encoding)
    frame = dd.read_csv(
        files.files,
        sep=sep or files.default_sep,
        header=0 if header else None,
        dtype=str,  # typed by typed_columns, over every file, as the in-memory reader does
        keep_default_na=False,
        na_filter=False,
        encoding=encoding,
        blocksize=None if files.gzipped else "default",
        compression="infer" if files.gzipped else None,
    )
    if header:
        names = [str(name).strip() for name in frame.columns]
    else:
        names = [f"x{j}" for j in range(len(frame.columns))]
    frame = frame.rename(columns=dict(zip(frame.columns, names, strict=True)))
    return DistributedTable(frame, names, source, text_file=True, missing=missing)


def _one_line(text) -> str:
    return " ".join(str(text).split())


def _is_text_dtype(dtype) -> bool:
    import pandas as pd

    return (
        pd.api.types.is_object_dtype(dtype)
        or isinstance(dtype, pd.CategoricalDtype)
        or pd.api.types.is_string_dtype(dtype)
    )


def _is_number_dtype(dtype) -> bool:
    import pandas as pd

    return pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)


def check_column_types(table: DistributedTable, columns):
    """Parquet: each of ``columns`` holds numbers, booleans or text."""
    if table.text_file:
        return
    dtypes = table.frame.dtypes
    for name in columns:
        dtype = dtypes[name]
        if not (_is_text_dtype(dtype) or _is_number_dtype(dtype)):
            raise ValueError(
                f"{table.source}: column {name!r} has type {dtype}, which gputree cannot use "
                "(numbers, booleans and strings only)"
            )


def _text_values(series, missing: MissingValues):
    """A CSV column's fields stripped, its missing-value tokens as NaN."""
    stripped = series.astype(object).str.strip()
    is_missing = stripped.str.lower().isin(MISSING_TOKENS) | stripped.isin(missing.extra)
    return stripped.mask(is_missing | series.isna())


def _parsed_numbers(stripped, missing: MissingValues):
    """(numbers, fields that are not numbers) of stripped text fields."""
    import pandas as pd

    numbers = pd.to_numeric(stripped, errors="coerce").astype(np.float64)
    not_numbers = numbers.isna() & stripped.notna()
    values = missing.blank_numbers(numbers.to_numpy(dtype=np.float64, copy=True))
    return pd.Series(values, index=stripped.index), not_numbers


def numeric_text_columns_of(part, columns, missing):
    """For one CSV partition: whether each of ``columns`` holds only numbers (or missing)."""
    return np.array(
        [not _parsed_numbers(_text_values(part[c], missing), missing)[1].any() for c in columns],
        dtype=bool,
    )


def typed_columns(client, table: DistributedTable, columns):
    """CSV: the names among ``columns`` that hold text somewhere (one pass over the
    files on the workers); Parquet: from the schema."""
    if not table.text_file:
        return {name for name in columns if name in table.text_columns}
    import dask

    parts = table.frame[list(columns)].to_delayed()
    checks = [dask.delayed(numeric_text_columns_of)(p, list(columns), table.missing) for p in parts]
    numeric = np.all(client.gather(client.compute(checks)), axis=0)
    return {name for name, is_numeric in zip(columns, numeric, strict=True) if not is_numeric}


# -- the target and weight columns, summarised on the workers ---------------------------------
@dataclass
class ColumnSummary:
    """What the client needs to know of a target or weight column over every partition."""

    rows: int = 0
    missing: int = 0
    text_value: object = None  # a present value that is not a number, if any
    non_finite: bool = False  # a number that is infinite
    whole: bool = True  # every finite number is a whole number
    max_abs: float = 0.0
    negative: float | None = None  # a negative number, if any
    any_positive: bool = False
    distinct: set | None = field(default_factory=set)  # None: more than DISTINCT_CAP

    def merged(self, other: ColumnSummary) -> ColumnSummary:
        distinct = None
        if self.distinct is not None and other.distinct is not None:
            distinct = self.distinct | other.distinct
            if len(distinct) > DISTINCT_CAP:
                distinct = None
        return ColumnSummary(
            rows=self.rows + other.rows,
            missing=self.missing + other.missing,
            text_value=self.text_value if self.text_value is not None else other.text_value,
            non_finite=self.non_finite or other.non_finite,
            whole=self.whole and other.whole,
            max_abs=max(self.max_abs, other.max_abs),
            negative=self.negative if self.negative is not None else other.negative,
            any_positive=self.any_positive or other.any_positive,
            distinct=distinct,
        )

    @property
    def numeric(self) -> bool:
        """Every present value a finite number."""
        return self.text_value is None and not self.non_finite


def summarize_column(series, text_file, missing) -> ColumnSummary:
    """One partition's :class:`ColumnSummary` of one column."""
    import pandas as pd

    if text_file:
        stripped = _text_values(series, missing)
        numbers, not_numbers = _parsed_numbers(stripped, missing)
        is_missing = numbers.isna() & ~not_numbers  # number tokens (--na-values) too
        labels = stripped
    elif _is_text_dtype(series.dtype):
        is_missing = series.isna()
        not_numbers = ~is_missing
        numbers = pd.Series(np.nan, index=series.index)
        labels = series
    else:
        numbers = _as_float(series)
        is_missing = numbers.isna()
        not_numbers = is_missing & False
        labels = numbers
    present = ~is_missing & ~not_numbers
    values = numbers[present].to_numpy(dtype=np.float64)
    finite = values[np.isfinite(values)]
    negatives = finite[finite < 0]
    if not_numbers.any():
        distinct = set(labels[~is_missing].astype(str).unique().tolist())
    else:
        distinct = set(np.unique(finite).tolist())
    return ColumnSummary(
        rows=len(series),
        missing=int(is_missing.sum()),
        text_value=str(labels[not_numbers].iloc[0]) if not_numbers.any() else None,
        non_finite=bool(finite.size < values.size),
        whole=bool(np.all(finite == np.round(finite))),
        max_abs=float(np.abs(finite).max()) if finite.size else 0.0,
        negative=float(negatives[0]) if negatives.size else None,
        any_positive=bool((finite > 0).any()),
        distinct=distinct if len(distinct) <= DISTINCT_CAP else None,
    )


def _summaries_of(part, columns, text_file, missing):
    return [summarize_column(part[c], text_file, missing) for c in columns]


def summarize_columns(client, table: DistributedTable, columns) -> list[ColumnSummary]:
    """The :class:`ColumnSummary` of each of ``columns`` over every partition (one pass on
    the workers, reading those columns only where the format allows)."""
    import dask

    parts = table.frame[list(columns)].to_delayed()
    per_part = client.gather(
        client.compute(
            [
                dask.delayed(_summaries_of)(p, list(columns), table.text_file, table.missing)
                for p in parts
            ]
        )
    )
    merged = [ColumnSummary() for _ in columns]
    for summaries in per_part:
        merged = [a.merged(b) for a, b in zip(merged, summaries, strict=True)]
    return merged


# -- the frame the estimator fits --------------------------------------------------------------
@dataclass(frozen=True)
class PartitionPlan:
    """How each partition becomes the estimator's input: the features (numbers as float64,
    text stripped, its missing values NaN), the target as ``target_kind`` ("int",
    "float" or "label") and the weights as float64."""

    features: tuple
    text_features: frozenset
    target: str
    target_kind: str
    weight: str | None
    text_file: bool
    missing: MissingValues


def prepared_partition(part, plan: PartitionPlan):
    import pandas as pd

    columns = {}
    for name in plan.features:
        series = part[name]
        if name in plan.text_features:
            columns[name] = _text_values(series, plan.missing) if plan.text_file else series
        elif plan.text_file:
            columns[name] = _parsed_numbers(_text_values(series, plan.missing), plan.missing)[0]
        else:
            columns[name] = _as_float(series)
    target = part[plan.target]
    if plan.text_file:
        target = _text_values(target, plan.missing)
        if plan.target_kind != "label":
            target = _parsed_numbers(target, plan.missing)[0]
    if plan.target_kind == "int":
        target = _as_float(target).astype(np.int64)
    elif plan.target_kind == "float":
        target = _as_float(target)
    columns[plan.target] = target  # "label": text as read
    if plan.weight is not None:
        weight = part[plan.weight]
        if plan.text_file:
            weight = _parsed_numbers(_text_values(weight, plan.missing), plan.missing)[0]
        columns[plan.weight] = _as_float(weight)
    return pd.DataFrame(columns, index=part.index)


def _as_float(series):
    import pandas as pd

    values = series.to_numpy(dtype=np.float64, na_value=np.nan)
    return pd.Series(values, index=series.index, name=series.name)


def prepared_frame(table: DistributedTable, plan: PartitionPlan):
    """The lazy frame of :func:`prepared_partition` over every partition."""
    import pandas as pd

    wanted = [*plan.features, plan.target] + ([plan.weight] if plan.weight else [])
    frame = table.frame[wanted]
    empty = pd.DataFrame({name: pd.Series(dtype=dtype) for name, dtype in frame.dtypes.items()})
    meta = prepared_partition(empty, plan)
    return frame.map_partitions(prepared_partition, plan, meta=meta)
