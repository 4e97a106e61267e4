"""Test session set-up.

Without a real NVIDIA GPU, the CUDA backend is tested under numba's CUDA simulator:
NUMBA_ENABLE_CUDASIM must be set before numba is first imported, hence here. With a GPU
(CuPy sees one), the same tests run the real kernels, and the ``gpu`` tests run too.
"""

import os
import sys

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
    if "numba" in sys.modules:
        # Something (a plugin, a warning filter) imported numba before this file: make
        # it read the variable again. numba.cuda picks the simulator when first imported.
        if "numba.cuda" in sys.modules:
            raise RuntimeError(
                "numba.cuda was imported before tests/conftest.py could enable the simulator"
            )
        from numba.core import config

        config.reload_config()


# Tests run the compiled kernels whatever the size of their data, in this process and in
# the ones they start: small fits would otherwise run the kernels that have no compiled
# code yet as Python (kernels/python_mode.py), and the compiled code would go untested.
# tests/kernels/test_python_mode.py asks for Python.
os.environ["GPU_TREE_PYTHON_KERNELS"] = "never"


def pytest_collection_modifyitems(config, items):
    # The tests a whole run found slow (tests/slow_tests.txt): `pytest -m "not slow"`
    # runs the others in a few minutes.
    from _slow_tests import read_list

    slow = read_list()
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)
    if REAL_GPU:
        return
    skip_gpu = pytest.mark.skip(reason="needs a real NVIDIA GPU (CuPy sees none)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


@pytest.fixture(autouse=True)
def environment_as_it_was():
    """Each test leaves the environment variables as it found them. A Dask LocalCluster
    of worker processes sets OMP_NUM_THREADS, MKL_NUM_THREADS and others to 1 in the
    process that starts it (distributed's pre-spawn environment) and leaves them there,
    so every later child process of the run would get one OpenMP thread."""
    saved = dict(os.environ)
    yield
    if os.environ != saved:
        os.environ.clear()
        os.environ.update(saved)
