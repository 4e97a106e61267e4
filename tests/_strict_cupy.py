"""A strict stand-in for CuPy, backed by numpy: the CuPy-only branches of gpu_tree run
without a GPU, under numba's CUDA simulator (issue 42, item 5).

Under the simulator the CUDA backend's array module is numpy itself (``cuda_status()``),
so the branches taken only when ``xp`` is CuPy never run, and numpy forgives what CuPy
refuses. :class:`StrictCupy` is a module that looks like ``cupy`` for what gpu_tree uses;
its arrays (:class:`StrictArray`) wrap numpy arrays and refuse what a CuPy 14 array
refuses (checked against CuPy's ``_core/core.pyx``, ``_kernel.pyx``,
``_routines_indexing.pyx`` and ``_scalar.pyx``):

- implicit conversion to a host array (``np.asarray(a)``, ``np.array(a)``, a numpy
  function with no CuPy twin, a device array used as a numpy array's index):
  ``TypeError: Implicit conversion to a NumPy array is not allowed...`` (``__array__``);
- a host numpy array given to a CuPy function or ufunc, or mixed with a device array in an
  operator (``d + h``, ``h + d``): ``TypeError: Unsupported type <class
  'numpy.ndarray'>`` (the creation functions ``array``/``asarray``/``asanyarray`` take
  host data, as CuPy's do: a copy to the "device");
- a host array (or list) assigned through basic indexing (``d[1:3] = h``): CuPy fills
  with it, ``ValueError: non-scalar numpy.ndarray cannot be used for fill``; advanced
  indexing (``d[idx] = h``) takes host values, as CuPy does;
- ``int()``/``float()``/``complex()`` of an array: CuPy copies it back and asks numpy,
  so only 0-d arrays convert (numpy >= 2.5); ``bool()``: one element only (ValueError
  for more); there is no ``__index__``: a device array is never a Python index
  (``range(d.sum())``, ``host[d[0]]`` fail);
- what numpy gives as scalars CuPy gives as 0-d device arrays (an element, a reduction);
- iteration yields 0-d device arrays, and ``len()`` works, as in CuPy;
- attributes and functions that CuPy lacks are missing here too, and calls are bound to
  CuPy's own signatures where CuPy is importable (it imports without a GPU).

Copies are real: ``asarray(host)`` and ``.get()`` copy, so no device array aliases host
memory. :func:`install` makes gpu_tree use the stand-in (tests only, no product change):
every ``cuda_status`` binding answers it, ``import cupy`` returns it, kernels are launched
through a wrapper that hands the simulator the wrapped numpy arrays in place (strided
views too, as numba-cuda takes strided CuPy arrays) and refuses host arrays and 0-d
device arrays as kernel arguments (numba on a GPU would copy the one to the device and
back, and type the other as an array), and the simulator's ``external_stream`` (which
raises there) returns a simulator stream for the stand-in's stream pointer.
"""

from __future__ import annotations

import functools
import inspect
import re
import sys
import types
import warnings

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

try:  # CuPy imports without a GPU: its namespace and signatures are what is allowed
    import cupy as _cupy
except Exception:  # noqa: BLE001 - no CuPy: nothing to check names against
    _cupy = None

IMPLICIT_CONVERSION = (
    "Implicit conversion to a NumPy array is not allowed. "
    "Please use `.get()` to construct a NumPy array explicitly."
)
# The functions that take host data (a copy to the device), as CuPy's do.
CREATION = frozenset({"array", "asarray", "asanyarray"})
_COMPARISONS = frozenset({"greater", "greater_equal", "less", "less_equal", "equal", "not_equal"})
FREE_BYTES = 64 << 30  # what memGetInfo reports as free, unless a test says otherwise


def _unsupported(value):
    return TypeError(f"Unsupported type {type(value)} (a host array given to CuPy)")


def _device(value):
    """A CuPy function's argument as the numpy it wraps; host arrays refused."""
    if isinstance(value, StrictArray):
        return value._a
    if isinstance(value, np.ndarray):
        raise _unsupported(value)
    if isinstance(value, (list, tuple)):
        items = [_device(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    return value


def _host_or_device(value):
    """A creation function's argument: host data allowed, device arrays unwrapped."""
    if isinstance(value, StrictArray):
        return value._a
    if isinstance(value, (list, tuple)):
        return type(value)(_host_or_device(v) for v in value)
    return value


def _wrap(result):
    """numpy results as device arrays: arrays and numpy scalars (CuPy gives 0-d arrays)."""
    if isinstance(result, StrictArray):
        return result
    if isinstance(result, np.ndarray):
        return StrictArray(result)
    if isinstance(result, np.generic):
        return StrictArray(np.asarray(result))
    if isinstance(result, tuple):
        items = [_wrap(v) for v in result]
        return type(result)(*items) if hasattr(result, "_fields") else tuple(items)
    if isinstance(result, list):
        return [_wrap(v) for v in result]
    return result


def _cupy_signature(target):
    """``target``'s signature where Python can read it; CuPy's Cython methods carry theirs
    in the first docstring line (``_ndarray_base.sum(self, axis=None, ...)``)."""
    try:
        return inspect.signature(target)
    except (TypeError, ValueError):
        pass
    first = (getattr(target, "__doc__", None) or "").strip().split("\n", 1)[0]
    match = re.fullmatch(r"[\w.]+\((.*)\)(\s*->.*)?", first)
    if match is None:
        return None
    params = match.group(1)
    try:
        return inspect.signature(eval(f"lambda {params}: None", {}))  # noqa: S307
    except Exception:  # noqa: BLE001 - an unusual default: leave the call unchecked
        return None


def _check_call(owner, name, args, kwargs, bound_self=False):
    """Refuse a call CuPy's ``owner.name`` would refuse by its signature (an argument
    numpy has and CuPy lacks, such as ``max(initial=...)``), and a sort ``kind`` other
    than "stable", which CuPy refuses by value."""
    if _cupy is None or owner is None:
        return
    target = getattr(owner, name, None)
    if target is None:
        raise AttributeError(f"CuPy has no {name!r}")
    signature = _cupy_signature(target)
    if signature is None:
        return
    try:
        signature.bind(*(("self",) if bound_self else ()), *args, **kwargs)
    except TypeError as exc:
        if bound_self and "self" not in signature.parameters:
            return
        raise TypeError(f"CuPy's {name}{signature} refuses this call: {exc}") from None
    if name in ("sort", "argsort") and kwargs.get("kind") not in (None, "stable"):
        raise ValueError(f"CuPy's {name} takes kind=None or 'stable' only")


def _strict_function(name, function, owner):
    creation = name in CREATION

    @functools.wraps(function)
    def call(*args, **kwargs):
        _check_call(owner, name, args, kwargs)
        if creation:
            source = args[0] if args else kwargs.get("a", kwargs.get("obj"))
            kwargs.pop("blocking", None)  # CuPy's; numpy has none
            args = tuple(_host_or_device(a) for a in args)
            kwargs = {k: _host_or_device(v) for k, v in kwargs.items()}
            result = function(*args, **kwargs)
            if not isinstance(source, StrictArray):
                # Host data is copied to the device: never an alias of host memory.
                result = np.array(result, copy=True)
            return _wrap(result)
        args = _device(args)
        kwargs = {k: _device(v) for k, v in kwargs.items()}
        return _wrap(function(*args, **kwargs))

    return call


class StrictUfunc:
    """A CuPy ufunc: device arrays and scalars only."""

    def __init__(self, ufunc):
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__

    def __call__(self, *args, **kwargs):
        return _apply_ufunc(self._ufunc, "__call__", args, kwargs)

    def __getattr__(self, attribute):
        if attribute in ("reduce", "accumulate", "reduceat", "outer", "at"):
            return functools.partial(_apply_ufunc, self._ufunc, attribute)
        return getattr(self._ufunc, attribute)


def _apply_ufunc(ufunc, method, inputs, kwargs, from_numpy=False):
    if from_numpy and ufunc.__name__ in _COMPARISONS:
        # CuPy's workaround for numpy/numpy#12142: 0-d host arrays compared as scalars.
        inputs = tuple(x.item() if isinstance(x, np.ndarray) and x.ndim == 0 else x for x in inputs)
    inputs = tuple(_device(x) for x in inputs)
    out = kwargs.get("out")
    if out is not None:
        outs = out if isinstance(out, tuple) else (out,)
        for o in outs:
            if not isinstance(o, StrictArray):
                raise TypeError(f"Output arrays must be cupy.ndarray, got {type(o)}")
        kwargs = {**kwargs, "out": tuple(o._a for o in outs)}
        getattr(ufunc, method)(*inputs, **kwargs)
        return outs[0] if len(outs) == 1 else outs
    return _wrap(getattr(ufunc, method)(*inputs, **kwargs))


def _is_advanced(key) -> bool:
    """Whether CuPy indexes with ``key`` by arrays (a list, an array, a bool): only then
    does assignment take host values (``_scatter_op``: basic indexing fills)."""
    parts = key if isinstance(key, tuple) else (key,)
    return any(isinstance(p, (list, tuple, np.ndarray, StrictArray, bool, np.bool_)) for p in parts)


def _index(key):
    """An index for the wrapped numpy array: device arrays unwrapped; host arrays and
    lists allowed (CuPy copies them to the device)."""
    if isinstance(key, StrictArray):
        return key._a
    if isinstance(key, tuple):
        return tuple(_index(k) for k in key)
    if isinstance(key, list):
        return [_index(k) for k in key]
    return key


class StrictArray(NDArrayOperatorsMixin):
    """A device array of :class:`StrictCupy`: a numpy array that refuses what a CuPy
    array refuses."""

    __slots__ = ("_a",)

    def __init__(self, array):
        if not isinstance(array, np.ndarray):
            raise TypeError(f"StrictArray wraps a numpy array, not {type(array)}")
        self._a = array

    # -- what it is
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: StrictArray(self._a.T))
    real = property(lambda self: StrictArray(self._a.real))
    imag = property(lambda self: StrictArray(self._a.imag))

    @property
    def __cuda_array_interface__(self):
        interface = dict(self._a.__array_interface__)
        interface["version"] = 3
        interface.pop("descr", None)
        return interface

    # -- what CuPy refuses
    def __array__(self, dtype=None, copy=None):
        raise TypeError(IMPLICIT_CONVERSION)

    def __int__(self):
        return int(self._a.copy())

    def __float__(self):
        return float(self._a.copy())

    def __complex__(self):
        return complex(self._a.copy())

    def __bool__(self):
        if self._a.size == 0:
            warnings.warn("The truth value of an empty array is ambiguous.", DeprecationWarning, 2)
            return False
        if self._a.size == 1:
            return bool(self._a.reshape(()))
        raise ValueError(
            "The truth value of an array with more than one element is ambiguous. "
            "Use a.any() or a.all()"
        )

    def __len__(self):
        if self._a.ndim == 0:
            raise TypeError("len() of unsized object")
        return self._a.shape[0]

    def __iter__(self):
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self._a.shape[0]))

    def __repr__(self):
        return repr(self._a)

    def __str__(self):
        return str(self._a)

    def __copy__(self):
        return StrictArray(self._a.copy())

    def __deepcopy__(self, memo):
        return StrictArray(self._a.copy())

    def __reduce__(self):
        return (StrictArray, (self._a.copy(),))

    # -- indexing
    def __getitem__(self, key):
        return _wrap(self._a[_index(key)])

    def __setitem__(self, key, value):
        if isinstance(value, StrictArray):
            value = value._a
        elif isinstance(value, (np.ndarray, list, tuple)) and not _is_advanced(key):
            if np.asarray(value).shape != ():
                raise ValueError("non-scalar numpy.ndarray cannot be used for fill")
        self._a[_index(key)] = value

    # -- numpy's protocols, as CuPy answers them
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method not in ("__call__", "outer", "at", "reduce", "accumulate", "reduceat"):
            return NotImplemented
        if _cupy is not None and getattr(_cupy, ufunc.__name__, None) is None:
            return NotImplemented
        out = kwargs.get("out")
        if out is not None and len(out) != 1:
            raise ValueError("The 'out' parameter must have exactly one array value")
        if out is not None:
            kwargs = {**kwargs, "out": out[0]}
        return _apply_ufunc(ufunc, method, inputs, kwargs, from_numpy=True)

    def __array_function__(self, func, types_, args, kwargs):
        owner = _cupy
        if _cupy is not None:
            try:
                owner = functools.reduce(getattr, func.__module__.split(".")[1:], _cupy)
                if getattr(owner, func.__name__) is func:
                    return NotImplemented
            except AttributeError:
                return NotImplemented
        for t in types_:
            if not issubclass(t, (StrictArray, np.ndarray)):
                return NotImplemented
        return _strict_function(func.__name__, func, owner)(*args, **kwargs)

    # -- methods
    def get(self, stream=None, order="C", out=None, blocking=True):
        """The host copy."""
        if out is not None:
            np.copyto(out, self._a)
            return out
        return np.array(self._a, order=order, copy=True)

    def set(self, arr, stream=None):
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"Only numpy.ndarray can be set to cupy.ndarray, not {type(arr)}")
        if arr.shape != self._a.shape:
            raise ValueError("Shape mismatch")
        self._a[...] = arr

    def fill(self, value):
        if isinstance(value, StrictArray):
            if value.shape != ():
                raise ValueError("non-scalar cupy.ndarray cannot be used for fill")
            value = value._a
        elif np.asarray(value).shape != ():
            raise ValueError("non-scalar numpy.ndarray cannot be used for fill")
        self._a.fill(value)

    def tolist(self):
        return self._a.tolist()

    def item(self):
        return self._a.item()

    def __getattr__(self, name):
        if name.startswith("__") or name == "_a":
            raise AttributeError(name)
        owner = None if _cupy is None else _cupy.ndarray
        if owner is not None and not hasattr(owner, name):
            raise AttributeError(f"'cupy.ndarray' object has no attribute {name!r}")
        attribute = getattr(self._a, name)
        if not callable(attribute):
            return _wrap(attribute)

        def method(*args, **kwargs):
            _check_call(owner, name, args, kwargs, bound_self=True)
            args = _device(args)
            kwargs = {k: _device(v) for k, v in kwargs.items()}
            if "out" in kwargs and kwargs["out"] is not None:
                raise NotImplementedError("out= on a StrictArray method")
            return _wrap(attribute(*args, **kwargs))

        return method


class _Stream:
    ptr = 0
    null = None

    def synchronize(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Runtime:
    CUDARuntimeError = RuntimeError

    @staticmethod
    def memGetInfo():  # noqa: N802 - CuPy's name
        return FREE_BYTES, 80 << 30

    @staticmethod
    def getDeviceCount():  # noqa: N802 - CuPy's name
        return 1


class _MemoryPool:
    def free_bytes(self):
        return 0

    def used_bytes(self):
        return 0

    def total_bytes(self):
        return 0

    def free_all_blocks(self):
        pass


_STREAM = _Stream()
_POOL = _MemoryPool()


class StrictCupy(types.ModuleType):
    """The stand-in module: numpy's functions, as far as CuPy has them, on
    :class:`StrictArray`."""

    ndarray = StrictArray

    def __init__(self):
        super().__init__("cupy", "strict numpy-backed stand-in for CuPy (tests)")
        self.__version__ = getattr(_cupy, "__version__", "14.0.0")
        self.cuda = types.SimpleNamespace(
            runtime=_Runtime,
            get_current_stream=lambda device=None: _STREAM,
            Stream=_Stream,
            is_available=lambda: True,
        )

    def asnumpy(self, a, stream=None, order="C", out=None, blocking=True):
        if isinstance(a, StrictArray):
            return a.get(order=order, out=out)
        return np.asarray(a, order=order)

    def get_array_module(self, *args):
        return self if any(isinstance(a, StrictArray) for a in args) else np

    def get_default_memory_pool(self):
        return _POOL

    def get_default_pinned_memory_pool(self):
        return _POOL

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if _cupy is not None and not hasattr(_cupy, name):
            raise AttributeError(f"module 'cupy' has no attribute {name!r}")
        target = getattr(np, name)
        if isinstance(target, type) or not callable(target):
            return target  # dtypes, constants
        if isinstance(target, np.ufunc):
            return StrictUfunc(target)
        return _strict_function(name, target, _cupy)


# -- using it ---------------------------------------------------------------------------
def _kernel_argument(arg):
    """What the simulator is given for a launch argument."""
    if isinstance(arg, StrictArray):
        if arg.ndim == 0:
            raise TypeError(
                "a 0-d device array passed to a kernel: numba types it as an array, not "
                "the scalar it holds"
            )
        # The simulator's device array around the same memory: no copy, and strided views
        # too (numba-cuda takes a strided CuPy array; the simulator copies numpy
        # arguments whole and refuses views).
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        return FakeCUDAArray(arg._a)
    if isinstance(arg, np.ndarray):
        raise TypeError(
            "a host numpy array passed to a kernel on the GPU: numba would copy it to the "
            "device and back at every launch (uncounted), or refuse it"
        )
    return arg


def install(monkeypatch, xp: StrictCupy | None = None) -> StrictCupy:
    """Make gpu_tree's CUDA backend use the strict stand-in, for one test (``monkeypatch``
    undoes it). Needs the CUDA simulator (numba's kernels run on the host)."""
    import importlib

    from numba import config
    from numba import cuda as numba_cuda

    if not config.ENABLE_CUDASIM:
        raise RuntimeError("the strict CuPy stand-in runs with the CUDA simulator only")
    xp = xp or StrictCupy()
    for name in (
        "gpu_tree.backends.cuda",
        "gpu_tree.backends.cuda_sparse",
        "gpu_tree.backends.cuda_absolute_error",
        "gpu_tree.data.binning",
        "gpu_tree.backends.contract",
        "gpu_tree.training.inputs",
        "gpu_tree.training.binning",
        "gpu_tree.training.fit",
        "gpu_tree.estimators.tree",
        "gpu_tree.estimators.oblique",
        "gpu_tree.ensemble.forest",
        "gpu_tree.dask.device_shards",
    ):
        try:
            importlib.import_module(name)
        except ImportError:  # an optional part (dask) that is not installed
            pass
    from gpu_tree.backends import cuda as cuda_backend
    from gpu_tree.utils import fit_stats

    original_status = cuda_backend.cuda_status
    original_launch = fit_stats.launch

    def status():
        return True, "strict CuPy stand-in (CUDA simulator)", xp

    def strict_launch(kernel, config, *args):
        original_launch(kernel, config, *(_kernel_argument(a) for a in args))

    for name, module in list(sys.modules.items()):
        if not name.startswith("gpu_tree") or module is None:
            continue
        if getattr(module, "cuda_status", None) is original_status:
            monkeypatch.setattr(module, "cuda_status", status)
        if getattr(module, "launch", None) is original_launch:
            monkeypatch.setattr(module, "launch", strict_launch)
    monkeypatch.setitem(sys.modules, "cupy", xp)

    def external_stream(ptr):
        if not isinstance(ptr, int):
            raise TypeError(f"external_stream takes a pointer (int), not {type(ptr)}")
        return numba_cuda.stream()

    monkeypatch.setattr(numba_cuda, "external_stream", external_stream, raising=False)
    return xp
