"""How the CPU kernels are compiled and run, by the work of each call.

- :func:`borrowing_njit`: helpers compiled without reference counting.
- :class:`SerialWhenSmall`: a parallel kernel, or its serial twin on small calls.
- :class:`ThreadedWhenLarge`: a serial kernel without the GIL, its items shared out to
  Python threads on large calls (the split search, the subtree finisher).

The work measures (``rows_of_nodes``, ``node_values``, ``candidate_bins``) are shared by
the stage modules; a stage's own measures live beside its kernels.
"""

import inspect
import os
import threading
import types

import numpy as np
from numba import config as numba_config
from numba import get_num_threads as numba_get_num_threads
from numba import njit

from .. import python_mode


def borrowing_njit(**options):
    """``numba.njit`` without reference counting (numba's ``_nrt=False``), for helpers that
    only read and write the arrays they are given. With it, every array a helper takes
    costs an atomic increment and decrement per call, inlined or not: a split candidate
    cost 140 ns with it and 39 ns without (gini, two classes, the scan inlined; bench in
    bench/RESULTS.md). numba refuses to compile an allocation without reference
    counting, so a helper that allocates fails to compile instead of leaking."""
    return njit(_nrt=False, **options)


# -- small data on serial twins ---------------------------------------------------------------
# Compiling a parallel=True kernel takes numba about 2 s (its parfor passes and the
# gufunc it builds), a plain one about 0.4 s: on a first run, a 14-row `gputree train`
# spent 14 of its 18 s compiling five parallel kernels. On small data those
# kernels run on threads for microseconds anyway. Each parallel kernel below therefore
# has a serial twin, the same source compiled without parallel=True (prange runs as
# range; every kernel gives the same results in any order of its tasks), and a call
# whose work is at most SERIAL_MAX_ELEMENTS values (the rows times features of the nodes
# it builds, the rows it moves, the bins it scores, or its first argument's size) runs on
# the twin. Each compiles on its first call only, so a small fit compiles no parallel
# kernel (a large one both: its deep levels are small). Warm runs gain too: a small fit
# no longer starts numba's thread pool.
SERIAL_MAX_ELEMENTS = 1 << 17
# A kernel whose serial time per unit of work was measured (SerialWhenSmall's
# seconds_per_unit: the binning kernels) runs on its twin unless that time reaches
# PARALLEL_MIN_SECONDS. Waking the pool costs microseconds on an idle machine but 6 to
# 18 ms on a busy one (2 cores, load 3: a thread not scheduled holds up the call), where
# a binning kernel's parallel run cost 15 ms for 0.2 ms of serial work (nonfinite_columns
# on 10,000 x 28); SERIAL_MAX_ELEMENTS values of its compare each are 0.1 ms. Their work
# counts in SERIAL_MAX_ELEMENTS' units, that many to PARALLEL_MIN_SECONDS, so that the one
# limit moves every kernel (tests send all of them serial, or parallel, by it).
PARALLEL_MIN_SECONDS = 4e-3


def _serial_twin(kernel):
    """``kernel``'s Python function compiled without ``parallel``, under its own name
    (``<name>_serial``), so that numba caches it apart: its cache index is named after
    the function, and the compile options are not part of the cache key."""
    func = kernel.py_func
    twin = types.FunctionType(
        func.__code__, func.__globals__, func.__name__, func.__defaults__, func.__closure__
    )
    twin.__qualname__ = f"{func.__qualname__}_serial"
    twin.__doc__ = func.__doc__
    options = {k: v for k, v in kernel.targetoptions.items() if k not in ("parallel", "nopython")}
    return njit(cache=True, **options)(twin)


def _first_argument_size(args):
    return args[0].size


def rows_of_nodes(args, start_at):
    """The rows of the nodes a kernel works on: its arguments ``start_at`` and the next
    are the nodes' first and end positions in the row partition."""
    return int((args[start_at + 1] - args[start_at]).sum())


def node_values(args):
    """Values read by a kernel over (features, rows) codes or values and the rows of its
    nodes (arguments 0, 2 and 3): rows times features (a :class:`SerialWhenSmall` work)."""
    return rows_of_nodes(args, 2) * args[0].shape[0]


def candidate_bins(args):
    """Bins scored by the split search: its nodes (``slots``) times features times bins."""
    hist, slots = args[0], args[1]
    return slots.size * hist.shape[1] * hist.shape[2]


class SerialWhenSmall:
    """Calls ``parallel`` (a kernel of ``parallel=True``) or its serial twin, by the work of
    the call (``work(args)``, by default the first argument's size) against
    :data:`SERIAL_MAX_ELEMENTS`, read at each call. The work is the call's, not the fit's:
    a fully grown tree's deep levels read a few rows each, where waking the thread pool
    costs more than the work (and much more on a busy machine, where a thread that is
    not scheduled holds up the others: 10,000 rows' partitions took 6 ms, serial 0.1).

    ``seconds_per_unit``, the serial twin's measured time per unit of work, switches by
    that time instead: serial below :data:`PARALLEL_MIN_SECONDS`."""

    def __init__(self, parallel, work=_first_argument_size, seconds_per_unit=None):
        self.parallel = parallel
        self.serial = _serial_twin(parallel)
        self.work = work
        self.seconds_per_unit = seconds_per_unit
        # Work to SERIAL_MAX_ELEMENTS' units (see PARALLEL_MIN_SECONDS).
        self.units_per_work = (
            1.0
            if seconds_per_unit is None
            else seconds_per_unit * (SERIAL_MAX_ELEMENTS / PARALLEL_MIN_SECONDS)
        )
        self.py_func = parallel.py_func
        self.__name__ = parallel.__name__
        self.__doc__ = parallel.__doc__

    def __call__(self, *args):
        if self.work(args) * self.units_per_work <= SERIAL_MAX_ELEMENTS:
            return self.serial(*args)
        return self.parallel(*args)

    def __repr__(self):
        return f"<{self.__name__}: parallel kernel, serial on small data>"


class ThreadedWhenLarge:
    """Calls ``kernel``, compiled serial and without the GIL, on the whole call where its
    work is at most :data:`SERIAL_MAX_ELEMENTS` (``work(args)``, as
    :class:`SerialWhenSmall`), else on slices of its items, several at once on Python
    threads (numba's thread count for this thread: ``n_jobs``).

    For the largest kernels, whose items are independent (a node's search, a subtree's
    growth): numba's ``parallel=True`` made a second compile of the same code, with
    parfor passes over a function that inlines the whole split search, 21 and 24 CPU
    seconds of a first ``gputree bench`` (bench/RESULTS.md); one serial compile
    serves both now. ``item_args`` name the arguments with a row per item, sliced per
    task (one that has not, a stand-in, is passed whole), ``offset_args`` those with the
    items' bounds (n_items + 1 entries); ``weights(args)`` each item's share of the work,
    by which the items are split into about four tasks per thread."""

    TASKS_PER_THREAD = 4

    def __init__(self, kernel, work, item_args, offset_args=(), weights=None):
        names = list(inspect.signature(kernel.py_func).parameters)
        self.serial = kernel
        self.work = work
        self.item_positions = [names.index(name) for name in item_args]
        self.offset_positions = [names.index(name) for name in offset_args]
        self.weights = weights
        self.py_func = kernel.py_func
        self.__name__ = kernel.__name__
        self.__doc__ = kernel.__doc__

    def __call__(self, *args):
        n_items = args[self.item_positions[0]].shape[0]
        threads = numba_get_num_threads()
        # A small call, or kernels run as Python (whose mode is this thread's alone).
        if (
            threads < 2
            or n_items < 2
            or self.work(args) <= SERIAL_MAX_ELEMENTS
            or python_mode.active()
        ):
            return self.serial(*args)
        bounds = self._task_bounds(args, n_items, threads)
        tasks = [
            _thread_pool().submit(self.serial, *self._slice(args, n_items, a, b))
            for a, b in zip(bounds[:-1], bounds[1:], strict=True)
            if b > a
        ]
        for task in tasks:
            task.result()  # waits for all: one failing task's error is raised

    def _task_bounds(self, args, n_items, threads):
        n_tasks = min(n_items, threads * self.TASKS_PER_THREAD)
        if self.weights is None:
            return np.linspace(0, n_items, n_tasks + 1).astype(np.int64)
        cumulative = np.cumsum(self.weights(args), dtype=np.float64)
        targets = cumulative[-1] * np.arange(1, n_tasks) / n_tasks
        inner = np.searchsorted(cumulative, targets, side="right")
        return np.concatenate([[0], inner, [n_items]])

    def _slice(self, args, n_items, a, b):
        sliced = list(args)
        for position in self.item_positions:
            if args[position].shape[0] == n_items:
                sliced[position] = args[position][a:b]
        for position in self.offset_positions:
            sliced[position] = args[position][a : b + 1]
        return sliced

    def __repr__(self):
        return f"<{self.__name__}: serial kernel, on threads for large calls>"


_pool = {"executor": None}
_pool_lock = threading.Lock()


def _thread_pool():
    """The threads :class:`ThreadedWhenLarge` runs its tasks on, one per CPU numba may
    use (made on first use)."""
    with _pool_lock:
        if _pool["executor"] is None:
            from concurrent.futures import ThreadPoolExecutor

            _pool["executor"] = ThreadPoolExecutor(
                max_workers=numba_config.NUMBA_NUM_THREADS, thread_name_prefix="gpu_tree"
            )
        return _pool["executor"]


def _forget_the_pool_in_a_forked_child():
    # A forked child has the pool but none of its threads: its tasks would wait for ever
    # (a multiprocessing "fork" pool started after a large fit). It makes its own.
    global _pool_lock
    _pool_lock = threading.Lock()
    _pool["executor"] = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_the_pool_in_a_forked_child)
