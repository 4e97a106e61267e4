"""Test session set-up.

Without a real NVIDIA GPU, the CUDA backend is tested under numba's CUDA simulator:
NUMBA_ENABLE_CUDASIM must be set before numba is first imported, hence here. With a GPU
(CuPy sees one), the same tests run the real kernels, and the ``gpu`` tests run too.
"""

import os

import pytest


def _real_gpu_count() -> int:
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device: no GPU
        return 0


REAL_GPU = _real_gpu_count() > 0
if not REAL_GPU and "NUMBA_ENABLE_CUDASIM" not in os.environ:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"


def pytest_collection_modifyitems(config, items):
    if REAL_GPU:
        return
    skip_gpu = pytest.mark.skip(reason="needs a real NVIDIA GPU (CuPy sees none)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)
