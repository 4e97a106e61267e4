"""A data-race detector for kernels run under numba's CUDA simulator.

The simulator runs blocks one after another, so a plain ``a[i] += v`` that two blocks
make on the same global entry gives the right sum there and the wrong one on a GPU,
where the blocks run at once. Results alone cannot show such a race; this records every
write to a kernel's global arrays instead: which thread of which block wrote which entry,
and whether through an atomic. Two different threads writing one entry, one of them not
atomically, is a race on a GPU, whatever order the simulator happened to run them in.

Shared memory is not watched (it is block-private; the simulator hands kernels plain
numpy arrays for it), nor are reads.
"""

from __future__ import annotations

import contextlib
import threading
from collections import defaultdict

import numpy as np

_local = threading.local()


class RaceRecord:
    """Writes seen during a :func:`watch_global_writes` block, launch by launch (a kernel
    boundary orders the writes of two launches: no race between them)."""

    def __init__(self):
        # (launch, id of the array, flat index) -> {(block, thread): atomic every time}
        self.writers = defaultdict(dict)
        self.names = {}
        self.launch = 0
        # Every array written stays referenced, so that no id is reused by another array.
        self._arrays = []
        self.n_writes = 0
        self.n_atomic_writes = 0
        self._lock = threading.Lock()

    def note(self, array, index, atomic):
        thread = threading.current_thread()
        writer = (tuple(thread.blockIdx), tuple(thread.threadIdx))
        flat = int(np.ravel_multi_index(_index_tuple(index, array.ndim), array.shape))
        key = (self.launch, id(array), flat)
        with self._lock:
            if id(array) not in self.names:
                self.names[id(array)] = array.shape
                self._arrays.append(array)
            seen = self.writers[key]
            seen[writer] = seen.get(writer, True) and atomic
            self.n_writes += 1
            self.n_atomic_writes += atomic

    def races(self):
        """Entries written by several threads, at least one of them non-atomically."""
        return [
            (self.names[array], flat, sorted(writers))
            for (_, array, flat), writers in self.writers.items()
            if len(writers) > 1 and not all(writers.values())
        ]

    def blocks_writing(self):
        """Distinct blocks that wrote any watched entry."""
        return {writer[0] for writers in self.writers.values() for writer in writers}


def _index_tuple(index, ndim):
    if not isinstance(index, tuple):
        index = (index,)
    if len(index) != ndim:
        raise AssertionError(f"race detector: index {index} of a {ndim}-d array")
    return tuple(int(i) for i in index)


@contextlib.contextmanager
def watch_global_writes(monkeypatch):
    """Record the global-memory writes of every simulated kernel launched inside."""
    from numba.cuda.simulator import kernel, kernelapi
    from numba.cuda.simulator.cudadrv import devicearray

    record = RaceRecord()
    plain_call = kernel.FakeCUDAKernel.__call__

    def counted_call(self, *args):
        if not self._device:
            record.launch += 1
        return plain_call(self, *args)

    monkeypatch.setattr(kernel.FakeCUDAKernel, "__call__", counted_call)
    plain_setitem = devicearray.FakeWithinKernelCUDAArray.__setitem__

    def watched_setitem(self, index, value):
        thread = threading.current_thread()
        if hasattr(thread, "blockIdx") and not isinstance(index, str):
            record.note(self._item._ary, index, getattr(_local, "in_atomic", False))
        plain_setitem(self, index, value)

    monkeypatch.setattr(devicearray.FakeWithinKernelCUDAArray, "__setitem__", watched_setitem)
    atomics = kernelapi.FakeCUDAAtomic
    for name in [n for n in vars(atomics) if not n.startswith("_")]:
        monkeypatch.setattr(atomics, name, _flagged(getattr(atomics, name)))
    yield record


def _flagged(operation):
    def atomic(self, *args, **kwargs):
        _local.in_atomic = True
        try:
            return operation(self, *args, **kwargs)
        finally:
            _local.in_atomic = False

    return atomic
