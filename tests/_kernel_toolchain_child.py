"""Child process of tests/device/test_kernel_toolchain.py: build every recorded kernel signature
as numba-cuda builds it for an sm_90 GPU, with no GPU present.

    python tests/_kernel_toolchain_child.py probe
    python tests/_kernel_toolchain_child.py build JOBS.json OUT_DIR [--workers N]
                                                 [--drop-row-stack-shim]

Run with ``NUMBA_ENABLE_CUDASIM=0``. ``probe`` prints one JSON line: which CUDA compiler
module the kernels use and whether libNVVM and nvJitLink load. ``build`` reads jobs
``[[kernel, index, signature], ...]`` (signatures as bench/kernel_resources.py records
them), and for each writes OUT_DIR/<kernel>_<index>.ptx and .cubin (the latter where
nvJitLink links in-process) and prints a JSON line.

What a launch on a compute capability 9.0 device does, and what is done here instead:

- ``CUDADispatcher.compile`` builds ``_Kernel(py_func, argtypes, **targetoptions)`` (here
  the same call); that compiles the kernel with NVVM, PTX included, for the current
  device's compute capability, which numba-cuda reads from the driver (here it answers
  9.0) and turns into ``(9, 0, "a")``, i.e. sm_90a (``CUDACodeLibrary._ensure_cc``; here
  the same answer without a driver);
- ``_Kernel.bind`` asks the code library for a cubin (``get_cubin``: NVVM's LTO-IR linked
  by ``cuda.core.Linker``, which is nvJitLink, in this process, where nvJitLink is
  installed; here the same call) and hands the cubin to the driver
  (``cuModuleLoadData``; here the cubin is written out instead).

``--drop-row-stack-shim`` removes the ``numpy.row_stack`` alias that
gpu_tree.kernels.cuda.api adds, to show that the build then fails.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from types import SimpleNamespace

BENCH = Path(__file__).resolve().parents[1] / "bench"
CC = (9, 0)
DEVICE_CC = (9, 0, "a")  # numba-cuda's target for a cc 9.0 device (codegen._ensure_cc)


_READY = []


def _setup(drop_row_stack_shim: bool):
    """Import the kernels' compiler and make it answer the device's compute capability."""
    from gpu_tree.kernels.cuda import api as cuda_api

    if _READY:
        return cuda_api
    _READY.append(True)
    sys.path.insert(0, str(BENCH))
    if drop_row_stack_shim and cuda_api.NUMPY_ROW_STACK_RESTORED:
        import numpy

        delattr(numpy, "row_stack")
    from numba.cuda import codegen, dispatcher

    dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=CC)
    ensure_cc = codegen.CUDACodeLibrary._ensure_cc
    codegen.CUDACodeLibrary._ensure_cc = lambda self, cc: (
        ensure_cc(self, cc) if cc is not None else DEVICE_CC
    )
    return cuda_api


def kernels():
    """The names of the kernels (not device functions) the modules of
    gpu_tree.kernels.cuda define."""
    import importlib
    import pkgutil

    package = importlib.import_module("gpu_tree.kernels.cuda")
    names = set()
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for name, value in vars(module).items():
            options = getattr(value, "targetoptions", None)
            if hasattr(value, "py_func") and options is not None and not options.get("device"):
                names.add(name)
    return sorted(names)


def probe():
    report = {}
    try:
        cuda_api = _setup(False)
        report["provider"] = cuda_api.PROVIDER
        from importlib import metadata

        report["numba_cuda"] = metadata.version("numba-cuda")
        report["kernels"] = kernels()
    except Exception as exc:  # noqa: BLE001 - reported to the test, which skips
        report["error"] = f"{type(exc).__name__}: {exc}"
        return report
    try:
        from numba.cuda.cudadrv import nvvm

        report["nvvm_ir"] = list(nvvm.NVVM().get_ir_version())
    except Exception as exc:  # noqa: BLE001
        report["nvvm_error"] = f"{type(exc).__name__}: {exc}".splitlines()[0]
    try:
        from numba.cuda.cudadrv.driver import _have_nvjitlink

        report["nvjitlink"] = bool(_have_nvjitlink())
        if report["nvjitlink"]:
            from cuda.bindings import nvjitlink
            from cuda.core import Linker

            report["nvjitlink_version"] = list(nvjitlink.version())
            report["linker_backend"] = str(Linker.which_backend())
    except Exception as exc:  # noqa: BLE001
        report["nvjitlink"] = False
        report["nvjitlink_error"] = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return report


def build(job, out: str, drop_row_stack_shim: bool):
    name, index, signature = job
    row = {"kernel": name, "index": index}
    start = time.perf_counter()
    try:
        row["row_stack_restored"] = _setup(drop_row_stack_shim).NUMPY_ROW_STACK_RESTORED
        import kernel_resources
        from numba import types
        from numba.cuda import dispatcher
        from numba.cuda.cudadrv.driver import _have_nvjitlink

        kernel = getattr(kernel_resources.kernel_module(name), name)
        argtypes = tuple(kernel_resources._numba_type(d) for d in signature)
        compiled = dispatcher._Kernel(kernel.py_func, argtypes, **kernel.targetoptions)
        assert compiled.signature.args == types.void(*argtypes).args
        library = compiled._codelibrary
        ptx = library.get_asm_str()
        row["compile_s"] = round(time.perf_counter() - start, 2)
        linked = time.perf_counter()
        # Without nvJitLink numba-cuda links through the driver (cuLink), which needs one.
        cubin = library.get_cubin() if _have_nvjitlink() else None
        row["link_s"] = round(time.perf_counter() - linked, 2)
    except Exception as exc:  # noqa: BLE001 - reported to the test
        row["error"] = f"{type(exc).__name__}: {exc}"
        row["traceback"] = traceback.format_exc()[-3000:]
        return row
    stem = Path(out) / f"{name}_{index}"
    stem.with_suffix(".ptx").write_text(ptx)
    if cubin is not None:
        stem.with_suffix(".cubin").write_bytes(bytes(getattr(cubin, "code", cubin)))
    row.update(entry=compiled.entry_name, lto=bool(library._lto), cubin=cubin is not None)
    return row


def main(argv):
    if argv[0] == "probe":
        print(json.dumps(probe()))
        return 0
    jobs = json.loads(Path(argv[1]).read_text())
    out = argv[2]
    drop = "--drop-row-stack-shim" in argv
    workers = int(argv[argv.index("--workers") + 1]) if "--workers" in argv else os.cpu_count()
    with ProcessPoolExecutor(max(1, min(workers, len(jobs)))) as pool:
        for row in pool.map(build, jobs, [out] * len(jobs), [drop] * len(jobs)):
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
