"""A model file's name and versions, and its fields read one by one, each error naming
the field: :class:`Reader`, which the loader, the checks and the codecs of estimators
with another fitted state (the oblique trees) all read through."""

from __future__ import annotations

import numpy as np

from gpu_tree.model import packed_arrays

FORMAT_NAME = "gpu_tree.model"
FORMAT_VERSION = 2
# Version 1 is version 2 with every array a JSON list (no packed arrays): still read.
READABLE_VERSIONS = (1, 2)

_NON_FINITE = {"inf": np.inf, "-inf": -np.inf, "nan": np.nan}
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class Reader:
    """Field access that names the field in every error."""

    def __init__(self, source, format_version=FORMAT_VERSION):
        self.source = source
        self.format_version = format_version

    def tree_reader(self, k):
        """The reader of a forest's tree ``k``, naming it in its errors."""
        return Reader(f"{self.source}: tree {k}", self.format_version)

    def fail(self, message):
        raise ValueError(f"{self.source}: {message}")

    def field(self, document, name, kind, where="the model"):
        if not isinstance(document, dict) or name not in document:
            self.fail(f"{where} has no field {name!r}")
        value = document[name]
        if (
            kind is not None
            and not isinstance(value, kind)
            or isinstance(value, bool)
            and kind is int
        ):
            self.fail(f"field {name!r} of {where} should be {_kind_name(kind)}, got {value!r:.60}")
        return value

    def feature_names(self, document, n_features):
        """The model's ``feature_names_in`` as an object array of ``n_features`` strings,
        or None where the model has none."""
        names = document.get("feature_names_in")
        if names is None:
            return None
        if (
            not isinstance(names, list)
            or len(names) != n_features
            or not all(isinstance(n, str) for n in names)
        ):
            self.fail(f"feature_names_in should be {n_features} strings")
        return np.asarray(names, dtype=object)

    def _array(self, document, name, length, where, dtypes):
        """Array field ``name``: a JSON list, or (from format version 2) a packed array,
        then an array of one of ``dtypes``; of ``length`` entries where that is known."""
        values = self.field(document, name, None, where)
        if packed_arrays.is_packed(values) and self.format_version >= 2:
            values = packed_arrays.unpack(
                values, dtypes, lambda message: self.fail(f"array {name!r} of {where}: {message}")
            )
        elif not isinstance(values, list):
            self.fail(
                f"field {name!r} of {where} should be a list"
                + (" or a packed array" if self.format_version >= 2 else "")
                + f", got {values!r:.60}"
            )
        if length is not None and len(values) != length:
            self.fail(f"array {name!r} has {len(values)} entries, expected {length}")
        return values

    def ints(self, document, name, length, where="the tree"):
        values = self._array(document, name, length, where, packed_arrays.INTEGER_DTYPES)
        if isinstance(values, np.ndarray):
            return values.astype(np.int64)
        if set(map(type, values)) <= {int}:  # the usual array, checked at C speed
            try:
                return np.array(values, dtype=np.int64)
            except OverflowError:
                pass  # the value out of range is named below
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            self.fail(f"array {name!r} holds a value that is not an integer")
        big = next((v for v in values if not INT64_MIN <= v <= INT64_MAX), None)
        if big is not None:
            self.fail(f"array {name!r} holds {big}, out of the 64-bit integer range")
        return np.array(values, dtype=np.int64)

    def floats(self, document, name, length, where="the tree"):
        values = self._array(document, name, length, where, packed_arrays.FLOAT_DTYPES)
        if isinstance(values, np.ndarray):
            return values.astype(np.float64)
        kinds = set(map(type, values))
        if kinds <= {float, int} and (  # the usual array: numbers, converted at C speed
            int not in kinds or all(INT64_MIN <= v <= INT64_MAX for v in values if type(v) is int)
        ):
            return np.array(values, dtype=np.float64)
        out = np.empty(len(values))
        for k, v in enumerate(values):
            if isinstance(v, str) and v in _NON_FINITE:
                out[k] = _NON_FINITE[v]
            elif (
                isinstance(v, float)
                or isinstance(v, int)
                and not isinstance(v, bool)
                and (INT64_MIN <= v <= INT64_MAX)
            ):
                out[k] = v
            else:
                self.fail(f"array {name!r} holds {v!r}, which is not a number")
        return out


def _kind_name(kind):
    names = {int: "an integer", str: "a string", list: "a list", dict: "an object"}
    return names.get(kind, getattr(kind, "__name__", str(kind)))
