"""Keeping freed memory for the next allocation during a forest's fit (glibc only).

A forest grows its trees in batches, and each batch allocates the same large arrays
again: its rows' codes (about 120 MB for 7 trees of a million rows), their statistics,
the row partition, each level's histograms. glibc serves an allocation above its mmap
threshold (at most 32 MiB, by default) with fresh pages from the kernel and gives them
back on free, so every batch faults its pages in afresh (the kernel zeroes each one).
On the 2-core benchmark machine (30 trees of depth 10 on a million rows, three fits
each) that cost 1.7 to 2.7 s of system time a fit, against 0.2 to 1.1 s while freed
memory is reused, and the fits took 8.3 to 8.9 s against 5.9 to 7.4 s (bench/RESULTS.md).

:func:`reusing_freed_memory` raises the thresholds for its duration, so freed arrays
stay in the allocator's heap and the next batch reuses pages already mapped; on exit it
sets glibc's default thresholds back (fixed values: glibc's own adjustment of the mmap
threshold, which any ``mallopt`` call turns off, is not restored) and returns the freed
memory to the system (``malloc_trim``). Nested uses keep the outermost's settings.
Elsewhere (another C library, another system) it does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import sys
import threading

# mallopt parameters (malloc.h) and glibc's defaults for them.
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
DEFAULT_TRIM_THRESHOLD = 128 * 1024
DEFAULT_MMAP_THRESHOLD = 128 * 1024
# While a forest grows: allocations up to 1 GiB come from the heap, and the heap is not
# trimmed below 2 GiB of free memory (mallopt takes an int).
REUSE_MMAP_THRESHOLD = 1 << 30
REUSE_TRIM_THRESHOLD = (1 << 31) - 1

_lock = threading.Lock()
_depth = 0


@functools.cache
def _glibc():
    """glibc's handle (its soname, libc.so.6: no ldconfig search), or None where the C
    library is another or cannot be loaded. Loaded on first use, not at import."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.gnu_get_libc_version.restype = ctypes.c_char_p
        libc.gnu_get_libc_version()
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError):
        return None
    return libc


def is_supported() -> bool:
    """Whether :func:`reusing_freed_memory` changes anything here (glibc)."""
    return _glibc() is not None


@contextlib.contextmanager
def reusing_freed_memory():
    """Keep freed memory in the allocator's heap for the duration (see the module
    docstring); a no-op where the C library is not glibc."""
    global _depth
    libc = _glibc()
    if libc is None:
        yield
        return
    with _lock:
        _depth += 1
        if _depth == 1:
            libc.mallopt(M_MMAP_THRESHOLD, REUSE_MMAP_THRESHOLD)
            libc.mallopt(M_TRIM_THRESHOLD, REUSE_TRIM_THRESHOLD)
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                libc.mallopt(M_MMAP_THRESHOLD, DEFAULT_MMAP_THRESHOLD)
                libc.mallopt(M_TRIM_THRESHOLD, DEFAULT_TRIM_THRESHOLD)
                libc.malloc_trim(0)
