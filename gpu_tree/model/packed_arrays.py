"""Numeric arrays inside a model file's JSON as typed, compressed binary.

A packed array is a JSON object ``{"dtype": "<i4", "count": 59129, "zlib_base64": "..."}``:
``count`` little-endian values of ``dtype`` (integers "|i1", "<i2", "<i4", "<i8"; floats
"<f8"), compressed with zlib and written as base64 text. It is still data, read by
numpy, never code. Floats keep their exact 64-bit value (NaN and infinities included);
integers are written in the narrowest of those types that holds them and read back as
64-bit integers, so a reader's checks see the same arrays as from a JSON list.

Unpacking bounds its memory before it allocates: ``count`` times the item size must be
at most what the compressed bytes can expand to (zlib's largest ratio), and the data
must decompress to exactly that many bytes, no more, no less, with nothing after it.
"""

from __future__ import annotations

import base64
import binascii
import zlib

import numpy as np

# The field names of a packed array, exactly these.
FIELDS = frozenset({"dtype", "count", "zlib_base64"})
INTEGER_DTYPES = ("|i1", "<i2", "<i4", "<i8")
FLOAT_DTYPES = ("<f8",)
# zlib's deflate expands a stream by at most about 1032 times; a claimed size beyond that
# is refused before any memory is taken for it.
_MOST_EXPANSION = 1032
_COMPRESSION_LEVEL = 6


def is_packed(value) -> bool:
    """Whether a model file's array field holds a packed array (else a JSON list)."""
    return isinstance(value, dict)


def pack_integers(values) -> dict:
    """Integers -> a packed array in the narrowest signed type that holds them all."""
    array = np.asarray(values).ravel().astype(np.int64, copy=False)
    dtype = INTEGER_DTYPES[-1]
    if array.size:
        low, high = int(array.min()), int(array.max())
        dtype = next(d for d in INTEGER_DTYPES if _fits(np.dtype(d), low, high))
    return _packed(array.astype(dtype), dtype)


def integers(values, packed: bool):
    """An integer array field of a model file: packed, or a JSON list of ints."""
    if packed:
        return pack_integers(values)
    return np.asarray(values).ravel().astype(np.int64).tolist()


def pack_floats(values) -> dict:
    """Floats -> a packed array of exact 64-bit values."""
    array = np.asarray(values, dtype=np.float64).ravel()
    return _packed(array.astype(FLOAT_DTYPES[0]), FLOAT_DTYPES[0])


def _fits(dtype, low, high) -> bool:
    limits = np.iinfo(dtype)
    return limits.min <= low and high <= limits.max


def _packed(array, dtype) -> dict:
    data = zlib.compress(np.ascontiguousarray(array).tobytes(), _COMPRESSION_LEVEL)
    return {
        "dtype": dtype,
        "count": int(array.size),
        "zlib_base64": base64.b64encode(data).decode("ascii"),
    }


def unpack(value, dtypes, fail) -> np.ndarray:
    """A packed array's values, as a 1-D array of its own dtype (one of ``dtypes``);
    ``fail(message)`` raises the error that names the field."""
    if set(value) != FIELDS:
        fail(f"a packed array has the fields {sorted(FIELDS)}, got {sorted(value)}")
    dtype, count, text = value["dtype"], value["count"], value["zlib_base64"]
    if dtype not in dtypes:
        fail(f"a packed array of dtype {dtype!r:.40}; expected one of {list(dtypes)}")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        fail(f"a packed array's count should be an integer >= 0, got {count!r:.40}")
    if not isinstance(text, str):
        fail("a packed array's zlib_base64 should be a string")
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        fail("a packed array's zlib_base64 is not base64 text")
    size = count * np.dtype(dtype).itemsize
    if size > _MOST_EXPANSION * len(data) + 64:
        fail(f"a packed array claims {count} values, more than its {len(data)} bytes can hold")
    inflater = zlib.decompressobj()
    try:
        # max_length 0 would mean "no limit": ask for one byte more than expected instead
        raw = inflater.decompress(data, size + 1)
        if len(raw) == size and not inflater.eof and inflater.unconsumed_tail:
            # the output is complete but the stream's end marker is still unread
            raw += inflater.decompress(inflater.unconsumed_tail, 1)
        complete = inflater.eof and not inflater.unconsumed_tail and not inflater.unused_data
    except zlib.error as exc:
        fail(f"a packed array's data is damaged ({exc})")
    if len(raw) != size or not complete:
        fail(
            f"a packed array's data does not hold exactly {count} values of {dtype} "
            "(damaged or truncated)"
        )
    return np.frombuffer(raw, dtype=dtype)
