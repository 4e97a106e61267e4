"""utils.memory: freed memory stays in the allocator's heap while a forest grows, and is
given back afterwards (glibc); elsewhere nothing changes."""

import ctypes

import numpy as np
import pytest

from gpu_tree.utils import memory

pytestmark = pytest.mark.skipif(not memory.is_supported(), reason="glibc only")

MB = 1 << 20


class _MallInfo2(ctypes.Structure):
    # glibc's struct mallinfo2 (2.33+): size_t fields.
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
            "uordblks", "fordblks", "keepcost",
        )
    ]  # fmt: skip


def _mallinfo():
    libc = ctypes.CDLL("libc.so.6")
    if not hasattr(libc, "mallinfo2"):
        pytest.skip("glibc before 2.33: no mallinfo2")
    libc.mallinfo2.restype = _MallInfo2
    return libc.mallinfo2()


def _touched(n_bytes):
    array = np.empty(n_bytes, dtype=np.uint8)
    array[::4096] = 1  # fault every page in
    return array


def test_large_arrays_come_from_the_heap_and_are_given_back_after():
    """Outside: a 64 MB array is mapped apart (hblkhd) and unmapped on free. Inside: it
    comes from the heap, and once freed its memory stays free in the heap for the next
    array; on exit the heap is trimmed."""
    before = _mallinfo()
    outside = _touched(64 * MB)
    assert _mallinfo().hblkhd >= before.hblkhd + 64 * MB  # its own mapping
    del outside
    with memory.reusing_freed_memory():
        mapped = _mallinfo().hblkhd
        inside = _touched(64 * MB)
        assert _mallinfo().hblkhd < mapped + 64 * MB  # not mapped apart: from the heap
        del inside
        kept = _mallinfo().fordblks
        assert kept >= 64 * MB  # freed, kept for the next array
        again = _touched(64 * MB)
        assert _mallinfo().fordblks < kept  # served from what was kept
        del again
    # Trimmed: given back to the system. Against the heap's free memory at the start: in
    # a long test run, earlier tests leave free chunks below the heap's top that no trim
    # returns (69.8 MB of them in a CI run, against an absolute 64 MB bound).
    assert _mallinfo().fordblks < before.fordblks + 32 * MB


def test_nested_uses_keep_the_outermost_settings():
    with memory.reusing_freed_memory():
        with memory.reusing_freed_memory():
            pass
        inside = _touched(48 * MB)  # still from the heap after the inner exit
        mapped = _mallinfo().hblkhd
        del inside
        assert _mallinfo().hblkhd == mapped
        kept = _mallinfo().fordblks
        assert kept >= 48 * MB
