"""A model file's class labels, each checked against its saved dtype before an array of
that dtype is made: the labels' array is bounded by the file's size, and no label is
truncated, overflowed or of a kind a fit never makes."""

from __future__ import annotations

import numpy as np

# The class label dtypes a fit makes and a model file keeps (``classes_.dtype.str``, or
# "object"): bool, integers, floats, datetime64 and timedelta64 (their values saved as
# integers), str (``<U`` n). Nothing else: a structured, bytes, complex or void dtype
# loaded, then failed in predict.
_LABEL_KINDS = "biufMmU"
# A str dtype may be wider than its longest label (a fit keeps y's dtype: "<U10" for
# labels of 2 characters), by this many bytes at most beyond what the labels need: the
# labels' array stays bounded by the file's size ("<U200000000" in a 9 KB file asked
# for 2.4 GB).
_LABEL_STR_SLACK_BYTES = 1 << 20


def read_class_labels(read, classes, where="classes"):
    """The class labels of a model file's ``classes`` entry ({"dtype", "values"}) as a
    1-D array of that dtype, each label checked against it first: JSON booleans for
    bool, integers in the dtype's range for integers (and datetime64 / timedelta64),
    numbers the dtype holds exactly for floats, strings no longer than a str dtype's
    length, and strings, or numbers, or booleans for "object" (as a fit's labels are);
    labels distinct. Anything else, and any other dtype, is a ValueError naming the
    field and the value (never an OverflowError, a huge allocation or a truncated
    label)."""
    values = read.field(classes, "values", list, where)
    dtype_text = read.field(classes, "dtype", str, where)
    if dtype_text == "object":
        labels = _object_labels(read, values, where)
    else:
        dtype = _label_dtype(read, dtype_text, where)
        labels = _typed_labels(read, values, dtype, dtype_text, where)
    try:
        distinct = np.unique(labels).size
    except TypeError:  # an object label NumPy cannot order: refused above, kept safe
        distinct = len(set(labels.tolist()))
    if distinct != labels.size:
        read.fail(f"{where}.values repeat a label: each class needs its own")
    return labels


def _label_dtype(read, text, where):
    try:
        dtype = np.dtype(text) if len(text) <= 40 else None
    except (TypeError, ValueError, SyntaxError, OverflowError):
        dtype = None
    if (
        dtype is None
        or dtype.kind not in _LABEL_KINDS
        or dtype.names is not None
        or dtype.subdtype is not None
    ):
        read.fail(
            f"{where}.dtype is {text!r:.60}: class labels are bool, integers, floats, "
            "datetime64, timedelta64, str (<U) or 'object'"
        )
    return dtype


def _typed_labels(read, values, dtype, text, where):
    def refuse(value, reason):
        read.fail(f"{where}.values holds {value!r:.60}, {reason} (dtype {text!r})")

    kind = dtype.kind
    if kind == "b":
        for v in values:
            if not isinstance(v, bool):
                refuse(v, "not a boolean")
        return np.array(values, dtype=dtype)
    if kind == "U":
        longest = 0
        for v in values:
            if not isinstance(v, str):
                refuse(v, "not a string")
            longest = max(longest, len(v))
        length = dtype.itemsize // 4
        if length < max(longest, 1):
            read.fail(
                f"{where}.dtype is {text!r}, too short for its labels: the longest has "
                f"{longest} characters"
            )
        if len(values) * (length - longest) * 4 > _LABEL_STR_SLACK_BYTES:
            read.fail(
                f"{where}.dtype is {text!r}: {len(values)} labels of {length} characters "
                f"({len(values) * length * 4:,} bytes), for labels of at most {longest}"
            )
        return np.array(values, dtype=dtype)
    if kind in "Mm" and np.datetime_data(dtype)[0] == "generic":
        read.fail(f"{where}.dtype is {text!r}: a datetime64 or timedelta64 label needs a unit")
    if kind in "iuMm":
        low, high = (
            (np.iinfo(dtype).min, np.iinfo(dtype).max)
            if kind in "iu"
            else (np.iinfo(np.int64).min, np.iinfo(np.int64).max)
        )
        for v in values:
            if not isinstance(v, int) or isinstance(v, bool):
                refuse(v, "not an integer")
            if not low <= v <= high:
                refuse(v, f"out of the range [{low}, {high}] of its dtype")
        return np.array(values, dtype=np.int64 if kind in "Mm" else dtype).astype(dtype)

    # Floats: numbers that the dtype holds exactly (a fit's labels are whole, finite).
    def held(v):
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                x = dtype.type(v)
            return bool(np.isfinite(x)) and float(x) == v  # Python's exact comparison
        except OverflowError:  # an integer past the dtype's range
            return False

    for v in values:
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            refuse(v, "not a number")
        if not held(v):
            refuse(v, "not a finite number its dtype holds exactly")
    return np.array(values, dtype=dtype)


def _object_labels(read, values, where):
    kinds = set()
    for v in values:
        if isinstance(v, str):
            kinds.add(str)
        elif isinstance(v, (bool, int, float)):
            if isinstance(v, float) and not np.isfinite(v):
                read.fail(f"{where}.values holds {v!r}: a class label is finite")
            kinds.add(float)
        else:
            read.fail(
                f"{where}.values holds {v!r:.60}: an 'object' label is a string, a number "
                "or a boolean"
            )
    if len(kinds) > 1:
        read.fail(f"{where}.values mix strings and numbers: a fit's labels are one or the other")
    labels = np.empty(len(values), dtype=object)
    labels[:] = values
    return labels
