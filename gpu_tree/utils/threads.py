"""One pool of threads for the CPU work that numpy does without the GIL (sorts, array
loops), shared by every fit, and used only where the work pays for handing it out.

Starting a pool costs about a millisecond and each task a few tens of microseconds: on a
small fit that was most of the time binning took. The pool starts on first use
and is rebuilt in a forked child, whose copy of the parent's threads does not run.
"""

from __future__ import annotations

import numbers
import os
import threading
from concurrent.futures import ThreadPoolExecutor

CPU_THREADS = os.cpu_count() or 1

# Below this many elements (values sorted, candidates scored...) in all, a map runs in
# the calling thread: the hand-out costs more than the work. Measured on binning's sorts
# of 10 features, 2 cores, the shared pool against one thread: 10k values 1.8 ms / 0.5
# ms, 80k 2.7 / 2.2, 160k 3.6 / 4.0, 640k 8.8 / 12.4 (bench/RESULTS.md).
PARALLEL_MIN_ELEMENTS = 1 << 17

_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def _shared_pool() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=CPU_THREADS, thread_name_prefix="gpu_tree")
        return _pool


def _forget_pool_in_child():
    global _pool, _lock
    _pool, _lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool_in_child)


def parallel_map(function, items, n_elements: int) -> list:
    """``[function(item) for item in items]``, on the shared pool when the calls touch at
    least :data:`PARALLEL_MIN_ELEMENTS` elements in all (``n_elements``), there are
    several and several cores; else in this thread. Results keep the items' order."""
    items = list(items)
    if len(items) < 2 or CPU_THREADS < 2 or n_elements < PARALLEL_MIN_ELEMENTS:
        return [function(item) for item in items]
    return list(_shared_pool().map(function, items))


class numba_threads:
    """numba's threads limited to ``n_jobs`` for a block, as the forests fit and predict
    with them (None: every core, as gpu_tree's trees use; -1 too; -k: all but k - 1).
    numba is imported only where a limit is set: the command line's saved models predict
    small batches without it."""

    def __init__(self, n_jobs):
        if n_jobs is None:
            self.threads = None
            return
        if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0:
            raise ValueError(f"n_jobs must be None or a non-zero int, got {n_jobs!r}")
        import numba

        self._numba = numba
        cores = numba.config.NUMBA_NUM_THREADS
        self.threads = min(n_jobs, cores) if n_jobs > 0 else max(1, cores + 1 + n_jobs)

    def __enter__(self):
        if self.threads is not None:
            self.before = self._numba.get_num_threads()
            self._numba.set_num_threads(self.threads)
        return self

    def __exit__(self, *exc):
        if self.threads is not None:
            self._numba.set_num_threads(self.before)
        return False
