"""The CPU kernels run as plain Python, for fits too small to be worth compiling them.

numba compiles a kernel, and everything it calls, on its first call in a fresh
environment: 40 to 100 CPU seconds before a first small tree (bench/RESULTS.md, issue
44), where the work itself takes milliseconds. The kernels are written in the subset of
Python that numba compiles, and their source means the same thing run by the
interpreter (the CUDA simulator relies on it for the CUDA kernels). So inside
:func:`uncompiled_as_python`, a kernel called from Python on that thread that has no
compiled code yet (none in this process, none in numba's disk cache) runs its *Python
twin* instead of compiling: the kernel's own function, whose globals and closure name the
twins of the kernels it calls where they named the compiled ones. The same source gives
the same tree; only the speed differs, about a microsecond per operation instead of a
nanosecond, which a fit of a few thousand values pays in a second or two.

The fits decide when to ask (:func:`small_enough`): a few values, and while this
process has spent less than :data:`PYTHON_SECONDS_BUDGET` running kernels as Python, so
that a loop of small fits (a grid search, a forest) compiles once it would have paid for
it. Warm caches are used as ever: a kernel with compiled code runs it.

Every compiled CPU kernel of the package is registered here (:func:`register`, through
``compilation.watch``). Two kinds of function have no meaning as Python and name their
Python equivalents with :func:`python_equivalent`: numba's ``@overload`` targets and
``@intrinsic`` functions.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import types
import warnings

import numpy as np

# A fit of at most this many values (rows times features, times trees for a forest)
# may run its kernels as Python: about 1 CPU second for 1,000 rows of 10 features grown
# to depth 5 (bench/RESULTS.md), against 40 to 100 s compiling.
PYTHON_MAX_VALUES = 50_000
# "never": every fit compiles its kernels (as the test suite asks, for its children too);
# "auto", the default: small fits run uncompiled kernels as Python.
ENVIRONMENT_SWITCH = "GPU_TREE_PYTHON_KERNELS"
# Once a process has run kernels as Python for this long (CPU seconds), its fits compile.
PYTHON_SECONDS_BUDGET = 20.0

_state = threading.local()
_spent = {"seconds": 0.0}
_always_compiled = {"depth": 0}
# ids of the kernels known to have compiled code (in this process or numba's disk cache).
_ready: set[int] = set()
# Python object -> its twin (a function, or a namespace standing for a module).
_twins: dict[int, object] = {}
# id(object) -> the plain-Python function that stands for it (overloads, intrinsics, wrappers).
_equivalents: dict[int, object] = {}
_lock = threading.RLock()
_PACKAGE = __name__.rpartition(".")[0]


def active() -> bool:
    """Whether kernels without compiled code run as Python on this thread."""
    return getattr(_state, "depth", 0) > 0


def small_enough(values: int) -> bool:
    """Whether a fit of ``values`` values may run uncompiled kernels as Python."""
    return (
        not _always_compiled["depth"]
        and _allowed_by_environment()
        and values <= PYTHON_MAX_VALUES
        and _spent["seconds"] < PYTHON_SECONDS_BUDGET
    )


def _allowed_by_environment() -> bool:
    setting = os.environ.get(ENVIRONMENT_SWITCH, "auto").strip().lower()
    if setting not in ("auto", "never"):
        raise ValueError(
            f"the environment variable {ENVIRONMENT_SWITCH} is {setting!r}: set it to "
            "'auto' (small fits run uncompiled kernels as Python) or 'never' (always compile)"
        )
    return setting == "auto"


def as_python_when_small(values: int | None):
    """The context of a fit or walk of ``values`` values (None: not known): kernels without
    compiled code run as Python where it is :func:`small_enough`, else nothing changes."""
    return uncompiled_as_python(values is not None and small_enough(values))


@contextlib.contextmanager
def always_compiled():
    """Inside the block, on every thread, no fit runs kernels as Python: what runs is
    compiled (and cached), as ``gputree warm-up`` and the benchmarks need."""
    with _lock:
        _always_compiled["depth"] += 1
    try:
        yield
    finally:
        with _lock:
            _always_compiled["depth"] -= 1


@contextlib.contextmanager
def uncompiled_as_python(enabled: bool = True):
    """Inside the block (where ``enabled``), kernels called on this thread that have no
    compiled code run as Python. numpy's scalar overflow warnings are silenced there:
    the kernels' hashes wrap on purpose, as they do compiled."""
    if not enabled:
        yield
        return
    _state.depth = getattr(_state, "depth", 0) + 1
    started = time.process_time()
    try:
        with np.errstate(over="ignore"), warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore", message="overflow encountered", category=RuntimeWarning
            )
            yield
    finally:
        _state.depth -= 1
        if _state.depth == 0:
            _spent["seconds"] += time.process_time() - started


def has_compiled_code(kernel) -> bool:
    """Whether ``kernel`` (a numba dispatcher) has compiled code in this process, or an
    index of some in numba's disk cache that is still current for its source."""
    key = id(kernel)
    if key in _ready:
        return True
    if kernel.signatures or _cached_on_disk(kernel):
        _ready.add(key)
        return True
    return False


def _cached_on_disk(kernel) -> bool:
    cache_file = getattr(getattr(kernel, "_cache", None), "_cache_file", None)
    index_path = getattr(cache_file, "_index_path", None)
    if index_path is None or not os.path.exists(index_path):
        return False  # numba's NullCache (no folder to cache in), or nothing cached yet
    try:
        # numba's own reading: {} where the source changed since (a stale index).
        return bool(cache_file._load_index())
    except Exception:  # noqa: BLE001 - a numba whose cache reads otherwise: compile
        return True


def python_equivalent(compiled_only, equivalent) -> None:
    """Have the twin of ``compiled_only`` (an overload target, an intrinsic) be
    ``equivalent``, a plain-Python function (itself twinned: the kernels it
    names run as Python too)."""
    _equivalents[id(compiled_only)] = equivalent


def twin(kernel):
    """The plain-Python function that does what ``kernel`` does; ``kernel`` itself where
    it is neither a kernel of this package nor a module of them."""
    key = id(kernel)
    # Always under the lock: a twin is stored while the globals it reads are still being
    # filled in (modules that name each other), and another thread must not call it then.
    with _lock:
        found = _twins.get(key)
        if found is None:
            found = _make_twin(kernel)
            if found is not kernel:
                _twins[key] = found
    return found


def _make_twin(kernel):
    equivalent = _equivalents.get(id(kernel))
    if equivalent is not None:
        return _rebound(equivalent) if isinstance(equivalent, types.FunctionType) else equivalent
    if isinstance(kernel, types.ModuleType):
        return _ModuleTwin(kernel) if kernel.__name__.startswith(_PACKAGE + ".") else kernel
    function = getattr(kernel, "py_func", None)
    if isinstance(function, types.FunctionType) and _ours(function):
        return _rebound(function)
    return kernel


def _ours(function) -> bool:
    return getattr(function, "__module__", "").startswith(_PACKAGE + ".")


class _ModuleTwin:
    """A kernel module's names, with its kernels as their twins."""

    def __init__(self, module):
        self.__dict__.update(_globals_twin(vars(module)))


def _globals_twin(namespace: dict) -> dict:
    """A module's globals with each kernel (and kernel module) replaced by its twin: a
    plain dict, which the interpreter reads fastest; one per module."""
    key = id(namespace)
    found = _twins.get(key)
    if found is None:
        found = {}
        _twins[key] = found  # first: kernels of modules that name each other
        for name, value in list(namespace.items()):
            found[name] = twin(value)
    return found


def _rebound(function):
    """``function``'s code with twins for the kernels its globals and closure name."""
    closure = function.__closure__
    if closure is not None:
        closure = tuple(types.CellType(twin(cell.cell_contents)) for cell in closure)
    rebound = types.FunctionType(
        function.__code__,
        _globals_twin(function.__globals__),
        function.__name__,
        function.__defaults__,
        closure,
    )
    rebound.__qualname__ = function.__qualname__
    rebound.__doc__ = function.__doc__
    return rebound


def _switching_class(base):
    """``base`` (numba's dispatcher class) whose calls from Python run the twin on a
    thread inside :func:`uncompiled_as_python` until it has compiled code."""

    def __call__(self, *args, **kwargs):
        if getattr(_state, "depth", 0) and not has_compiled_code(self):
            return twin(self)(*args, **kwargs)
        return base.__call__(self, *args, **kwargs)

    name = f"PythonWhenAsked{base.__name__}"
    switching = type(name, (base,), {"__call__": __call__, "__module__": __name__})
    switching.__qualname__ = name
    # Dispatchers pickle their class by reference (numba's Dispatcher.__reduce__).
    globals()[name] = switching
    return switching


def register(namespace) -> None:
    """Let the kernels in ``namespace`` (a kernel module's globals) run as Python where
    :func:`uncompiled_as_python` asks."""
    from numba.core.registry import CPUDispatcher

    for value in list(namespace.values()):
        if not isinstance(value, CPUDispatcher) or not _ours(value.py_func):
            continue
        base = type(value)
        if not getattr(base, "_gpu_tree_switching", False):
            value.__class__ = _class_for(base)


_classes: dict[type, type] = {}


def _class_for(base):
    with _lock:
        found = _classes.get(base)
        if found is None:
            found = _switching_class(base)
            found._gpu_tree_switching = True
            _classes[base] = found
    return found
