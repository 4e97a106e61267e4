"""The CUDA Python compiler the kernels are written against: chosen here, in one place.

numba-cuda has been in maintenance mode since mid-2026; its successor, Numba-CUDA-MLIR
(``pip install numba-cuda-mlir[cu13]``), takes the same kernel source under another
import name (``from numba_cuda_mlir import cuda`` for ``from numba import cuda``). Every
module that compiles or launches gpu_tree's kernels imports ``cuda`` from here:

- ``numba_cuda_mlir.cuda`` where it is installed and imports, and the CUDA simulator is
  off: Numba-CUDA-MLIR has no simulator (it removed ``cudasim``);
- otherwise ``numba.cuda`` (numba-cuda's, or numba's built-in target), which under
  ``NUMBA_ENABLE_CUDASIM=1`` is numba's simulator: how CI runs the kernels without a GPU.

A Numba-CUDA-MLIR that is installed but fails to import, or does not look like a CUDA
module (no callable ``jit``), is passed over with a warning rather than breaking import.
``PROVIDER`` names the module in use.
"""

from __future__ import annotations

import importlib
import warnings

MLIR_MODULE = "numba_cuda_mlir.cuda"


def restore_numpy_row_stack():
    """Give numpy back ``row_stack`` where it is gone, before any kernel compiles.

    numba-cuda (0.24 to at least 0.30.4, numba/cuda/np/arrayobj.py) registers an overload
    of ``np.row_stack`` when its typing context first loads, that is at a kernel's first
    compile; NumPy 2.5 removed the function (deprecated since 2.0 as an alias of
    ``vstack``), so every compile raised AttributeError. The alias is what numpy itself
    defined, and it is added only where missing. Returns whether it was added."""
    import numpy

    if hasattr(numpy, "row_stack"):
        return False
    numpy.row_stack = numpy.vstack  # noqa: NPY201 - restoring the removed name is the point
    return True


NUMPY_ROW_STACK_RESTORED = restore_numpy_row_stack()


def _simulator_enabled() -> bool:
    from numba.core import config

    return bool(config.ENABLE_CUDASIM)


# numba-cuda (to at least 0.30.4) makes ``np.timedelta64("nat")`` when its datetime
# helpers are imported; NumPy 2.5 deprecates the bare unit that implies, so importing
# numba.cuda warns once, and under ``warnings.simplefilter("error")`` a user's first CUDA
# fit would fail on it. Ignored around that import alone.
NUMPY_TIMEDELTA_WARNING = r"The 'generic' unit for NumPy timedelta is deprecated"


def _import_quietly(name):
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=NUMPY_TIMEDELTA_WARNING, category=DeprecationWarning
        )
        return importlib.import_module(name)


def select_cuda():
    """(module, name): the CUDA module to compile kernels with, and its import name."""
    if not _simulator_enabled():
        try:
            module = _import_quietly(MLIR_MODULE)
        except ModuleNotFoundError as exc:
            if exc.name not in ("numba_cuda_mlir", MLIR_MODULE):  # not merely absent
                _passed_over(f"it failed to import ({exc})")
        except Exception as exc:  # noqa: BLE001 - a broken install must not stop import
            _passed_over(f"it failed to import ({type(exc).__name__}: {exc})")
        else:
            if callable(getattr(module, "jit", None)):
                return module, MLIR_MODULE
            _passed_over("its cuda module has no jit decorator")
    return _import_quietly("numba.cuda"), "numba.cuda"


def _passed_over(why: str):
    warnings.warn(
        f"gpu_tree: numba-cuda-mlir is installed but not used, {why}; the kernels use "
        "numba.cuda instead",
        RuntimeWarning,
        stacklevel=3,
    )


cuda, PROVIDER = select_cuda()


def device_function(**options):
    """The decorator that compiles a CUDA device function: ``cuda.jit(device=True,
    **options)``.

    Under the simulator, a function that reads no global bound to the CUDA module is
    returned as it is, plain Python. The simulator's device-function wrapper exists to
    swap that module for its fake one, a no-op for such a function, yet it takes a lock
    shared by every thread of the launch twice a call: with a kernel calling helpers per
    row, the threads queued on that lock and a 200-row absolute-error fit took minutes.
    Functions that use ``cuda.`` (atomics, local arrays) keep the wrapper."""
    jit = cuda.jit(device=True, **options)
    if not _simulator_enabled():
        return jit

    def compile_or_keep(function):
        return jit(function) if _reads_cuda(function) else function

    return compile_or_keep


def _reads_cuda(function) -> bool:
    """Whether ``function`` (or a function defined in it) reads a global bound to the
    CUDA module."""
    cuda_names = {name for name, value in function.__globals__.items() if value is cuda}
    codes = [function.__code__]
    while codes:
        code = codes.pop()
        if cuda_names.intersection(code.co_names):
            return True
        codes.extend(c for c in code.co_consts if hasattr(c, "co_names"))
    return False
