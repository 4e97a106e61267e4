"""Categorical features: which columns they are, and their categories as codes.

A categorical column's categories (the distinct values seen in training, missing
values excluded) are numbered 0..K-1 in sorted order (a pandas ``category`` column keeps
its own category order); the tree is learned and walked on those codes. A value never
seen in training, like a missing one, becomes NaN at prediction time, so it follows the
node's missing-value rule instead of raising.

Categories are labels: numbers in a numeric column (codes, years, zip codes) or strings
and other objects in an object, string or pandas ``category`` column.

Category sets of subset splits are stored as bitsets (layout: :mod:`gpu_tree.data.stats`).
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from gpu_tree.data.validation import given_column_name, is_dataframe, is_sparse
from gpu_tree.utils.device_copies import is_device_array

CATEGORICAL_SPLITS = ("binary", "multiway")
# Default of max_category_subset (the bound on a subset's size, l in Zaki and Meira's
# Algorithm 19.3): every subset of at most 2 categories is
# tried for multiclass targets. That is exhaustive up to 5 categories at a node (a
# subset and its complement make the same split) for a cost of about K^2/2 candidates;
# larger sets are reached through the per-class orderings.
DEFAULT_MAX_CATEGORY_SUBSET = 2


def _is_pandas_categorical(dtype) -> bool:
    return str(dtype) == "category"


def resolve_categorical_features(spec, X, n_features: int, feature_names) -> np.ndarray:
    """Boolean mask of the categorical features from ``categorical_features``.

    ``spec``: None or "from_dtype" (the columns whose type says they are categories:
    :func:`categorical_by_type`); feature indices or names, which add to those (a column
    of numbers listed is a categorical one, and the columns of text stay categorical: the
    command line's ``--categorical`` reads the same); or a boolean mask of length
    n_features, which says exactly which, as an empty list does (none: every column
    numeric). See :func:`declared_features`.
    """
    declared, exact = declared_features(spec, n_features, feature_names)
    if exact:
        return declared
    return declared | categorical_by_type(X, n_features, feature_names, skip=declared)


def declared_features(spec, n_features: int, feature_names) -> tuple[np.ndarray, bool]:
    """(mask, exact): the features ``categorical_features`` names, and whether they are
    all the categorical features (a boolean mask, or an empty list) rather than added to
    those found by type (None, "from_dtype", a list of indices or names)."""
    mask = np.zeros(n_features, dtype=bool)
    if spec is None:
        return mask, False
    if isinstance(spec, str):
        if spec != "from_dtype":
            raise ValueError(
                f"categorical_features={spec!r} is not understood: pass 'from_dtype', a "
                "boolean mask, or a list of feature indices or names"
            )
        return mask, False
    items = list(np.asarray(spec, dtype=object).ravel()) if not np.isscalar(spec) else [spec]
    if not items:
        return mask, True
    if all(isinstance(v, (bool, np.bool_)) for v in items):
        if len(items) != n_features:
            raise ValueError(
                f"categorical_features is a boolean mask of length {len(items)}, but X has "
                f"{n_features} features"
            )
        return np.asarray(items, dtype=bool), True
    for item in items:
        if isinstance(item, str):
            if feature_names is None:
                raise ValueError(
                    f"categorical_features names the feature {item!r}, but X has no feature "
                    "names (pass a DataFrame, or give column indices)"
                )
            matches = np.flatnonzero(np.asarray(feature_names) == item)
            if matches.size == 0:
                raise ValueError(
                    f"categorical_features names the feature {item!r}, which is not a column of "
                    f"X; its columns are {list(feature_names)}"
                )
            mask[matches[0]] = True
        elif isinstance(item, numbers.Integral) and not isinstance(item, (bool, np.bool_)):
            if not -n_features <= item < n_features:
                raise ValueError(
                    f"categorical_features holds the index {item}, but X has {n_features} features"
                )
            mask[int(item)] = True
        else:
            raise ValueError(
                f"categorical_features holds {item!r}: expected feature indices, names or a "
                "boolean mask"
            )
    return mask, False


def categorical_by_type(X, n_features: int, feature_names, skip=None) -> np.ndarray:
    """The features that are categories by their type, as HistGradientBoosting, LightGBM
    and XGBoost take them without being told: a pandas ``category`` column, and a column of
    text (a DataFrame's object or string column, a numpy string or object column) whose
    present values are all strings. A column of numbers stays numeric; one mixing numbers
    and text is refused, naming it and a row of each (which did the user mean?). The
    features of ``skip`` (a mask: those declared categorical) are not looked at."""
    mask = np.zeros(n_features, dtype=bool)
    if n_features == 0 or is_sparse(X):  # a sparse matrix holds numbers only
        return mask
    for j, kind in enumerate(column_kinds(X, n_features)):
        if skip is not None and skip[j]:
            continue
        if kind == "category" or kind in "US":
            mask[j] = True
        elif kind == "O":
            inferred = _inferred_type(X, j)
            if inferred in _TEXT_TYPES or inferred in _NON_TEXT_TYPES:
                mask[j] = inferred in _TEXT_TYPES
            else:  # mixed kinds: the detailed check, row by row, and its error
                mask[j] = _is_text_column(_column(X, j), j, feature_names)
    return mask


def column_kinds(X, n_features: int) -> list[str]:
    """Each column's kind by its type alone: "category" for a pandas category column,
    else numpy's dtype kind ("f", "i", "O", "U"...; a DataFrame's extension types without
    one count as "O")."""
    if is_dataframe(X):
        return [
            "category" if _is_pandas_categorical(dtype) else getattr(dtype, "kind", "O")
            for dtype in X.dtypes
        ]
    # An array (numpy, sparse, GPU) says its dtype; a list is read as numpy would.
    dtype = getattr(X, "dtype", None)
    kind = np.dtype(dtype).kind if dtype is not None else np.asarray(X).dtype.kind
    return [kind] * n_features


# pandas' names (infer_dtype, skipping missing values) for a column of strings only, and
# for columns of no strings; any other name is looked at value by value.
_TEXT_TYPES = frozenset({"string"})
_NON_TEXT_TYPES = frozenset(
    {"empty", "integer", "floating", "mixed-integer-float", "decimal", "boolean", "complex"}
)


def _inferred_type(X, j) -> str | None:
    """pandas' name for the kind of values in column j of a DataFrame (one pass in C; a
    string dtype column answers from its dtype), or None for other inputs."""
    if not is_dataframe(X):
        return None
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - a DataFrame without pandas
        return None
    return pd.api.types.infer_dtype(X.iloc[:, j], skipna=True)


def _is_text_column(column, j, feature_names) -> bool:
    """Whether an object column's present values are all strings (False for numbers and
    for a column with no present value); a mix of both is a ValueError."""
    present, is_text = _present_and_text(column)
    text = present & is_text
    if not text.any():
        return False
    others = present & ~is_text
    if others.any():
        values = np.asarray(column, dtype=object)
        at_text, at_other = int(np.argmax(text)), int(np.argmax(others))
        raise ValueError(
            f"{feature_label(j, feature_names)} mixes text and numbers: row {at_text} holds "
            f"{values[at_text]!r}, row {at_other} holds {values[at_other]!r}. Declare it in "
            "categorical_features to take every value as a category, or make it numeric"
        )
    return True


def is_missing_value(value) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and value != value:
        return True
    # pandas.NA and pandas.NaT are missing too, without importing pandas.
    return type(value).__name__ in ("NAType", "NaTType")


def _present(column) -> np.ndarray:
    """Which values of an object column are not missing."""
    return _present_and_text(column)[0]


def _present_and_text(column) -> tuple[np.ndarray, np.ndarray]:
    """Which values of an object column are not missing (:func:`is_missing_value`),
    and which are strings: decided per distinct type of value, not per value (each
    row's type is one C-level pass; only floats are then read, as one array, for NaN)."""
    column = np.asarray(column, dtype=object)
    present = np.ones(column.size, dtype=bool)
    is_text = np.zeros(column.size, dtype=bool)
    if column.size == 0:
        return present, is_text
    kinds = np.frompyfunc(type, 1, 1)(column).tolist()
    distinct = list(set(kinds))
    number = {kind: k for k, kind in enumerate(distinct)}
    kind_of_row = np.fromiter(map(number.__getitem__, kinds), dtype=np.int64, count=len(kinds))
    for k, kind in enumerate(distinct):
        rows = kind_of_row == k
        if kind is type(None) or kind.__name__ in ("NAType", "NaTType"):
            present[rows] = False
        elif issubclass(kind, float):  # a NaN is missing (numpy's float64 is a float)
            present[rows] = ~np.isnan(column[rows].astype(np.float64))
        elif issubclass(kind, str):
            is_text[rows] = True
    return present, is_text


def _column(X, j):
    """Column j of X as a 1-D array (object for DataFrame columns that are not numeric)."""
    if is_dataframe(X):
        series = X.iloc[:, j]
        if _is_pandas_categorical(series.dtype):
            return series
        kind = getattr(series.dtype, "kind", "O")
        if kind in "biuf":
            return series.to_numpy(dtype=np.float64, na_value=np.nan)
        return series.to_numpy(dtype=object)
    return np.asarray(X)[:, j]


def _factorized_text(X, j):
    """(codes, distinct) of column j of a DataFrame whose present values are all strings,
    by pandas' factorize (a hash table in C; codes -1 where missing), else None. Python
    objects row by row cost adult's eight text columns 0.23 s, more than its fit."""
    if not is_dataframe(X):
        return None
    series = X.iloc[:, j]
    if _is_pandas_categorical(series.dtype) or getattr(series.dtype, "kind", "O") in "biufcmM":
        return None
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - a DataFrame without pandas
        return None
    if _inferred_type(X, j) not in _TEXT_TYPES:
        return None
    codes, distinct = pd.factorize(series)
    return np.asarray(codes, dtype=np.int64), np.asarray(distinct, dtype=object)


def feature_label(j, feature_names):
    """How a message names feature ``j``: by position and name, by the name the caller
    gave (:func:`gpu_tree.data.validation.columns_named`), or by position alone."""
    if feature_names is not None:
        return f"feature {j} ({feature_names[j]!r})"
    name = given_column_name(j)
    return f"column {name!r}" if name is not None else f"feature {j}"


# A column of text whose present values all read as numbers but for a few is far more
# likely a numeric column with typos ("4G", "12x4") or unmarked missing values ("none")
# than a categorical feature: taken as text, each of its numbers became a category of
# its own, silently. Such a column is refused (stray_text) when the values that are not
# numbers are at most STRAY_TEXT_MIN of them or STRAY_TEXT_SHARE of the present values,
# whichever is more, and at most a tenth of them (a column of 9 words and 1 number is
# text). A column of text that is all numbers stays categorical: a type chosen on purpose.
STRAY_TEXT_MIN = 3
STRAY_TEXT_SHARE = 0.01


def stray_text_limit(n_present: int) -> int:
    """The most values that are not numbers a column of ``n_present`` present values of
    text may hold and still be refused as numbers with typos (see STRAY_TEXT_MIN)."""
    return min(max(STRAY_TEXT_MIN, int(n_present * STRAY_TEXT_SHARE)), n_present // 10)


def _reads_as_number(text) -> bool:
    try:
        return math.isfinite(float(text))
    except (TypeError, ValueError):
        return False


def _words_among_numbers(distinct, bound):
    """Those of ``distinct`` (a column's distinct values) that do not read as numbers,
    where there are 1 to ``bound`` of them beside at least one number; else None (looked
    at until more than ``bound`` are found: a column of words stops at once)."""
    words = []
    n_numbers = 0
    for value in distinct:
        if _reads_as_number(value):
            n_numbers += 1
        else:
            words.append(value)
            if len(words) > bound:
                return None
    return words if words and n_numbers else None


def stray_words(distinct, n_values: int):
    """Those of a text column's ``distinct`` present values that do not read as finite
    numbers (as Python's float() reads them), where there are a few of them (at most
    :func:`stray_text_limit` of ``n_values``) beside at least one number: the column is
    a suspect of numbers with typos, which its rows decide (:func:`stray_text`). Else
    None."""
    return _words_among_numbers(distinct, stray_text_limit(n_values))


def rows_holding(values, words):
    """(rows of the text column ``values`` that hold one of ``words``, their values, the
    column's number of present values): what :func:`stray_text` reads of the rows, for a
    part of them (a Dask partition) too."""
    values = np.asarray(values, dtype=object)
    present = _present(values)
    word_set = set(words)
    rows = np.flatnonzero(
        present & np.fromiter((v in word_set for v in values.tolist()), bool, values.size)
    )
    return rows, values[rows], int(present.sum())


def rows_holding_in_column(X, j, words):
    """:func:`rows_holding` of column ``j`` of X (an array or a DataFrame)."""
    return rows_holding(_column(X, j), words)


def is_stray_text(n_rows: int, n_present: int) -> bool:
    """Whether ``n_rows`` values that are not numbers, among ``n_present``, are few
    enough to be typos (:data:`STRAY_TEXT_MIN`)."""
    return 0 < n_rows <= stray_text_limit(n_present)


def stray_text(values, distinct=None):
    """For a column of text ``values`` (a 1-D object array of strings, missing values
    None, NaN or pandas' NA) whose present values all read as finite numbers (as
    Python's float() reads them) but for a few (at most :func:`stray_text_limit`):
    (rows of those values, their distinct values in order of first row, the number of
    present values). None for any other column. ``distinct``: the column's distinct
    present values, where known (the check then reads the rows only for a suspect)."""
    values = np.asarray(values, dtype=object)
    if distinct is None:
        distinct = [v for v in dict.fromkeys(values.tolist()) if not is_missing_value(v)]
    words = stray_words(distinct, values.size)
    if words is None:
        return None
    rows, held, n_present = rows_holding(values, words)
    if not is_stray_text(rows.size, n_present):
        return None
    return rows, list(dict.fromkeys(held.tolist())), n_present


def shown_values(values, limit=5) -> str:
    """Values for a message: their reprs, the first ``limit`` of them."""
    values = list(values)
    shown = ", ".join(repr(v) for v in values[:limit])
    return shown + (f" and {len(values) - limit} more" if len(values) > limit else "")


def check_text_of_numbers(X, maps, features, feature_names):
    """Refuse, naming the rows and values, each of ``features`` (columns of text taken as
    categorical by their type, not declared) that :func:`stray_text` finds to be numbers
    with a few values of text."""
    n_rows = len(X)
    for j in features:
        categories = maps.categories.get(int(j))
        if categories is None or stray_words(categories, n_rows) is None:
            continue  # from its categories alone: the column's rows are read for a suspect only
        found = stray_text(np.asarray(_column(X, j), dtype=object), categories.tolist())
        if found is not None:
            refuse_text_of_numbers(j, feature_names, *found, categories.size)


def refuse_text_of_numbers(j, feature_names, rows, words, n_present, n_categories):
    """The refusal of column ``j``: ``rows`` hold ``words`` (in order of first row), the
    values of its ``n_present`` that are not numbers; taken as text it has
    ``n_categories``."""
    at = ", ".join(str(int(i)) for i in rows[:5]) + (" ..." if rows.size > 5 else "")
    raise ValueError(
        f"{feature_label(j, feature_names)} is text that reads as numbers but for "
        f"{rows.size} of its {n_present:,} values: {shown_values(words)} (row"
        f"{'s' if rows.size > 1 else ''} {at}). Typos? Taken as text, every number would "
        f"be a category of its own ({n_categories:,} categories). Correct those "
        "values, make them missing (NaN; pandas.read_csv takes na_values=), or list the "
        "column in categorical_features to keep it categorical"
    )


# A categorical column with more categories than this share of the rows (from
# ID_LIKE_MIN_ROWS rows) is likely an identifier (an id, a name, free text): its splits
# learn the training rows by heart and send new ones down the missing-value path.
ID_LIKE_SHARE = 0.5
ID_LIKE_MIN_ROWS = 20


class IdLikeColumnWarning(UserWarning):
    """A categorical feature with nearly as many categories as rows; ``feature``, its
    index, ``n_categories`` and ``n_rows`` say which and how many (the command line
    words its own message from them)."""

    def __init__(self, message, feature, n_categories, n_rows):
        super().__init__(message)
        self.feature, self.n_categories, self.n_rows = feature, n_categories, n_rows


def is_id_like(n_categories: int, n_rows: int) -> bool:
    return n_rows >= ID_LIKE_MIN_ROWS and n_categories > ID_LIKE_SHARE * n_rows


def warn_id_like(maps, n_rows, feature_names, stacklevel=2):
    """An :class:`IdLikeColumnWarning` for each categorical feature of ``maps`` with
    nearly as many categories as rows (:func:`is_id_like`)."""
    for j, categories in maps.categories.items():
        if is_id_like(len(categories), n_rows):
            message = (
                f"categorical {feature_label(j, feature_names)} has {len(categories):,} "
                f"categories in {n_rows:,} rows: is it an identifier (an id, a name, free "
                "text)? Its splits would learn the training rows by heart and send new values "
                "down the missing-value path; drop the column from X (or, a column of numbers, "
                "leave it out of categorical_features)"
            )
            warnings.warn(
                IdLikeColumnWarning(message, j, len(categories), n_rows), stacklevel=stacklevel
            )


def _sorted_categories(values: np.ndarray, label: str) -> np.ndarray:
    """The distinct non-missing values of an object column, sorted."""
    distinct = list(set(values.tolist()))
    try:
        distinct.sort()
    except TypeError:  # mixed kinds (numbers and strings): order by kind, then value
        distinct.sort(key=lambda v: (type(v).__name__, repr(v)))
    for value in distinct:
        if isinstance(value, float) and not np.isfinite(value):
            raise ValueError(f"{label} holds the category {value!r}: categories must be finite")
    return np.asarray(distinct, dtype=object) if distinct else np.empty(0, dtype=object)


# Whole-number categories are looked up in a table indexed by value when they span at most
# this many values per category (plus a few): codes 0..K-1, years, small counts; sparse
# ones (zip codes) are searched instead. The table costs its span at each encode.
TABLE_SPAN_PER_CATEGORY = 8
TABLE_SPAN_EXTRA = 64


def _distinct_numbers(matrix: np.ndarray, columns: np.ndarray, labels) -> list[np.ndarray]:
    """The distinct present values of each of ``matrix``'s ``columns`` (a float64 C
    array), sorted: whole numbers spanning fewer values than the column has are marked in
    one pass with no sort; others go through np.unique."""
    from gpu_tree.kernels.cpu import binning as cpu_binning

    n = columns.size
    n_present, lowest, highest = np.zeros(n, np.int64), np.zeros(n), np.zeros(n)
    whole, infinite = np.zeros(n, bool), np.zeros(n, bool)
    cpu_binning.number_spans(matrix, columns, n_present, lowest, highest, whole, infinite)
    if infinite.any():
        label = labels[int(np.argmax(infinite))]
        raise ValueError(f"{label} holds the category inf: categories must be finite")
    span = np.where(n_present > 0, highest - lowest + 1, 0)
    marked = whole & (span <= n_present)  # then marking costs at most a pass of the rows
    seen_start = np.concatenate([[0], np.cumsum(np.where(marked, span, 0))]).astype(np.int64)
    seen = np.zeros(seen_start[-1], dtype=bool)
    if marked.any():
        cpu_binning.mark_whole_numbers(
            matrix, columns[marked], lowest[marked], seen, seen_start[np.append(marked, True)]
        )
    distinct = []
    for k in range(n):
        if n_present[k] == 0:
            distinct.append(np.empty(0))
        elif marked[k]:
            where = np.flatnonzero(seen[seen_start[k] : seen_start[k + 1]])
            distinct.append(lowest[k] + where.astype(np.float64))
        else:
            values = matrix[:, columns[k]]
            distinct.append(np.unique(values[~np.isnan(values)]))
    return distinct


class _NumberLookup:
    """Several features' categories (sorted numbers) in the flat arrays that
    ``kernels.cpu.binning.encode_number_categories`` reads: each feature's categories, and for
    whole numbers of a short span a table from value to code."""

    def __init__(self, category_arrays):
        self.categories = np.concatenate(
            [np.asarray(c, dtype=np.float64) for c in category_arrays] + [np.empty(0)]
        )
        sizes = [len(c) for c in category_arrays]
        self.category_start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        tables, self.lowest = [], np.zeros(len(sizes))
        for k, categories in enumerate(category_arrays):
            tables.append(self._table(np.asarray(categories, dtype=np.float64)))
            if categories.size:
                self.lowest[k] = categories[0]
        self.table_start = np.concatenate([[0], np.cumsum([t.size for t in tables])]).astype(
            np.int64
        )
        self.tables = np.concatenate(tables + [np.empty(0, dtype=np.int64)])

    @staticmethod
    def _table(categories: np.ndarray) -> np.ndarray:
        """Code of each whole number from the first category to the last (-1 for those
        that are not categories), or an empty table where the categories are not whole
        numbers or span too many values."""
        if categories.size == 0 or not np.all(categories == np.floor(categories)):
            return np.empty(0, dtype=np.int64)
        span = categories[-1] - categories[0] + 1
        if span > TABLE_SPAN_PER_CATEGORY * categories.size + TABLE_SPAN_EXTRA:
            return np.empty(0, dtype=np.int64)
        table = np.full(int(span), -1, dtype=np.int64)
        table[(categories - categories[0]).astype(np.int64)] = np.arange(categories.size)
        return table


class CategoryMaps:
    """The categories of each categorical feature, learned on training X."""

    def __init__(self, mask: np.ndarray, feature_names=None):
        self.mask = np.asarray(mask, dtype=bool)
        self.feature_names = feature_names
        self.categories: dict[int, np.ndarray] = {}

    @property
    def features(self) -> np.ndarray:
        return np.flatnonzero(self.mask)

    def n_categories(self) -> np.ndarray:
        """Categories per feature (0 for numeric features)."""
        counts = np.zeros(self.mask.size, dtype=np.int64)
        for j, categories in self.categories.items():
            counts[j] = len(categories)
        return counts

    def fit(self, X):
        features = self.features
        if features.size == 0:
            return self
        if is_device_array(X):
            X = _categorical_columns_on_host(X, features)
        if not is_dataframe(X) and np.ndim(X) == 2 and np.asarray(X).dtype.kind in "biuf":
            # One pass over the rows for every column (each a category per number).
            matrix = np.ascontiguousarray(X, dtype=np.float64)
            labels = [feature_label(j, self.feature_names) for j in features]
            distinct = _distinct_numbers(matrix, features, labels)
            for j, categories in zip(features, distinct, strict=True):
                self.categories[int(j)] = categories
            return self
        for j in features:
            label = feature_label(j, self.feature_names)
            text = _factorized_text(X, j)
            if text is not None:
                self.categories[int(j)] = _sorted_categories(text[1], label)
                continue
            column = _column(X, j)
            if hasattr(column, "cat"):  # pandas category column: its own order, seen ones
                codes = column.cat.codes.to_numpy()
                seen = np.unique(codes[codes >= 0])
                categories = np.asarray(column.cat.categories, dtype=object)[seen]
            elif column.dtype.kind in "biuf":
                matrix = np.ascontiguousarray(column, dtype=np.float64).reshape(-1, 1)
                categories = _distinct_numbers(matrix, np.zeros(1, np.int64), [label])[0]
            else:
                present = _present(column)
                categories = _sorted_categories(column[present], label)
            self.categories[int(j)] = categories
        return self

    def encode(self, X) -> np.ndarray:
        """The categorical columns of X as float codes (n_samples, n_categorical); NaN for
        missing values and for categories not seen in training."""
        features = self.features
        n_samples = len(X) if is_dataframe(X) else np.asarray(X).shape[0]
        out = np.full((n_samples, features.size), np.nan)
        numbers = []  # columns of numbers with categories of numbers: coded together below
        for k, j in enumerate(features):
            text = _factorized_text(X, j)
            if text is not None:  # each distinct string looked up once
                codes, distinct = text
                table = np.append(
                    _text_codes(distinct.astype(str), self.categories[int(j)]), np.nan
                )
                out[:, k] = table[codes]  # code -1 (missing) reads the last entry: NaN
                continue
            column = _column(X, j)
            if column.dtype.kind in "biuf" and self.categories[int(j)].dtype.kind == "f":
                out[:, k] = column
                numbers.append(k)
                continue
            out[:, k] = self._encode_column(column, self.categories[int(j)])
        if numbers:
            self._encode_numbers_in_place(out, np.array(numbers), features[numbers])
        return out

    def _numbers_to_numbers(self, X) -> bool:
        """Whether X (an array) holds numbers and every categorical feature's categories
        are numbers: then its columns are coded in place, in one compiled pass."""
        kind = (X.dtype if hasattr(X, "dtype") else np.asarray(X).dtype).kind
        return kind in "biuf" and all(
            self.categories[int(j)].dtype.kind == "f" for j in self.features
        )

    def _encode_numbers_in_place(self, matrix, columns, features) -> None:
        """Code ``matrix``'s ``columns`` (a float64 C array of this caller's), which hold
        the values of the categorical ``features``, whose categories are numbers."""
        from gpu_tree.kernels.cpu import binning as cpu_binning

        lookup = _NumberLookup([self.categories[int(j)] for j in features])
        cpu_binning.encode_number_categories(
            matrix,
            np.ascontiguousarray(columns, dtype=np.int64),
            lookup.categories,
            lookup.category_start,
            lookup.tables,
            lookup.table_start,
            lookup.lowest,
        )

    def encode_array(self, array: np.ndarray) -> np.ndarray:
        """A new float64 copy of the numeric array ``array`` with its categorical columns
        coded (:meth:`encode`), in one copy and one compiled pass where the categories are
        numbers."""
        if self._numbers_to_numbers(array):
            out = np.array(array, dtype=np.float64, order="C")
            self._encode_numbers_in_place(out, self.features, self.features)
            return out
        codes = self.encode(array)
        out = array.astype(np.float64, copy=True)
        out[:, self.features] = codes
        return out

    @staticmethod
    def _encode_column(column, categories):
        if hasattr(column, "cat"):  # map the column's own categories onto ours
            own = np.asarray(column.cat.categories, dtype=object)
            table = _lookup(own, categories)
            codes = column.cat.codes.to_numpy()
            out = np.full(codes.size, np.nan)
            present = codes >= 0
            out[present] = table[codes[present]]
            return out
        column = column.astype(object)
        present, is_text = _present_and_text(column)
        out = np.full(column.size, np.nan)
        # Strings and the other values apart: as text, 1 and "1" are one value, but they
        # are two categories (label_key), and merged, a row's code depended on which of
        # them came first in its batch.
        text = present & is_text
        if text.any():
            out[text] = _text_codes(column[text].astype(str), categories)
        group = present & ~is_text
        if group.any():
            values = column[group]
            distinct, inverse = np.unique(values.astype(str), return_inverse=True)
            # np.unique on strings: map each distinct string back to a value of the group.
            first = np.zeros(distinct.size, dtype=np.int64)
            first[inverse[::-1]] = np.arange(inverse.size)[::-1]
            out[group] = _lookup(values[first], categories)[inverse]
        return out


def _text_codes(values, categories) -> np.ndarray:
    """Code of each string of ``values`` (a numpy string array) among ``categories`` (NaN
    where it is not one): the categories' strings searched, sorted, so the cost is a
    binary search per row and no sort of the rows."""
    out = np.full(values.size, np.nan)
    known = np.flatnonzero([isinstance(c, str) for c in categories.tolist()])
    if known.size == 0:
        return out
    names = categories[known].astype(str)
    order = np.argsort(names, kind="stable")
    names = names[order]
    position = np.minimum(np.searchsorted(names, values), names.size - 1)
    found = names[position] == values
    out[found] = known[order[position[found]]]
    return out


def _lookup(values, categories) -> np.ndarray:
    """Code of each value among ``categories`` (NaN for values that are not there)."""
    codes = label_codes(values, categories).astype(np.float64)
    codes[codes < 0] = np.nan
    return codes


def label_key(value):
    """What makes two categories or class labels the same: 1, 1.0 and numpy scalars of the
    same number are one label; a numpy bool or string is the Python one. A bool is not a
    number (True is not the label 1), and a string never equals a number ("1" is not 1)."""
    if isinstance(value, (bool, np.bool_)):
        return ("bool", bool(value))
    if isinstance(value, str):  # np.str_ too
        return ("str", str(value))
    if isinstance(value, (numbers.Number, np.generic)):
        return ("number", float(value))
    return (type(value).__name__, value)


def label_codes(values, labels) -> np.ndarray:
    """The position (int64) of each of ``values`` (flattened) among ``labels``, labels
    compared as categories are (``label_key``), -1 for a value that is not among them.

    A numeric, bool or string array has each distinct value looked up once (np.unique),
    not each row: label columns run to millions of rows. An object array is looked up one
    row at a time: its values may not sort (numbers and strings), and np.unique would
    merge values that compare equal but are different labels (True and 1)."""
    labels = labels.tolist() if isinstance(labels, np.ndarray) else list(labels)
    index = {label_key(label): k for k, label in enumerate(labels)}
    values = np.asarray(values).ravel()
    if values.dtype.kind != "O":
        try:
            distinct, inverse = np.unique(values, return_inverse=True)
        except TypeError:
            pass
        else:
            codes = [index.get(label_key(v), -1) for v in distinct.tolist()]
            return np.array(codes, dtype=np.int64)[inverse.ravel()]
    return np.fromiter(
        (index.get(label_key(v), -1) for v in values.tolist()), dtype=np.int64, count=values.size
    )


def with_codes(X, maps: CategoryMaps):
    """X with each categorical column replaced by its float codes (a new object; X is
    not modified): a DataFrame stays a DataFrame (its names serve later error messages),
    a GPU array stays on the GPU and is coded there (:func:`_with_device_codes`)."""
    features = maps.features
    if features.size == 0:
        return X
    if is_dataframe(X):
        codes = maps.encode(X)
        X = X.copy(deep=False)
        for k, j in enumerate(features):
            X.isetitem(int(j), codes[:, k])
        return X
    if is_device_array(X):
        return _with_device_codes(X, maps)
    array = np.asarray(X)
    if array.dtype.kind not in "OSUV":
        return maps.encode_array(array)
    codes = maps.encode(array)
    array = array.astype(object, copy=True)
    array[:, features] = codes
    return array


def _with_device_codes(X, maps: CategoryMaps):
    """A GPU array X as a new float64 GPU array with its categorical columns coded as
    :meth:`CategoryMaps.encode` codes them: each column's values searched among its
    feature's sorted category values on the device, a code where one equals the value
    exactly, NaN elsewhere (missing values, unseen categories). Only the categories are
    copied (to the device, in one copy): X's rows never leave it (coded on the host, a
    million rows took 64 ms on an H200, against 1 ms to predict them)."""
    import cupy

    from gpu_tree.utils.device_copies import host_to_device

    features = maps.features
    lookups = [_number_codes(maps.categories[int(j)]) for j in features]
    start = np.concatenate([[0], np.cumsum([values.size for values, _ in lookups])])
    n_values = int(start[-1])
    table = host_to_device(
        np.concatenate([values for values, _ in lookups] + [codes for _, codes in lookups]),
        cupy,
    )
    coded = X.astype(cupy.float64, copy=True)
    for k, j in enumerate(features):
        first, end = int(start[k]), int(start[k + 1])
        if end == first:  # no category: every value is unseen
            coded[:, j] = cupy.nan
            continue
        values, codes = table[first:end], table[n_values + first : n_values + end]
        column = coded[:, j]
        position = cupy.minimum(cupy.searchsorted(values, column), end - first - 1)
        coded[:, j] = cupy.where(values[position] == column, codes[position], cupy.nan)
    return coded


def _number_codes(categories: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values, codes): the categories a number can equal, as sorted float64 values, and
    the code of each. Categories of numbers are those values (codes 0..K-1); an object
    array of them (a pandas category column's, a column of mixed labels) has its numbers
    taken as :func:`label_key` compares them (1 and 1.0 are one category, True and "1"
    are none a number equals), each keeping its own position as its code."""
    if categories.dtype.kind == "f":
        return categories.astype(np.float64), np.arange(categories.size, dtype=np.float64)
    code_of = {}
    for code, category in enumerate(categories.tolist()):
        kind, key = label_key(category)
        if kind == "number":
            code_of[key] = code  # the last of equal keys, as label_codes' index keeps it
    values = sorted(code_of)
    return np.array(values, dtype=np.float64), np.array(
        [code_of[v] for v in values], dtype=np.float64
    )


def _categorical_columns_on_host(X, features):
    """A GPU array's categorical columns copied to the host, in an (n, n_features) array
    holding them at ``features`` (what fit reads; the other columns, numeric, stay on the
    device and are never read here)."""
    import cupy

    columns = cupy.asnumpy(X[:, cupy.asarray(features)])
    out = np.empty((columns.shape[0], X.shape[1]), dtype=np.float64)
    out[:, features] = columns
    return out
