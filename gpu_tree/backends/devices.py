"""Which backend a ``device`` parameter selects on this machine.

Below the estimators, so that code that needs only this rule (a Dask worker deciding for
its rows, the benchmark command) does not import them and, through them, scikit-learn.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from gpu_tree.backends.cuda import cuda_status, gpu_found_but_broken
from gpu_tree.utils.device_names import DEVICES


def resolve_device(device, cpu_only: str | None = None) -> str:
    """The backend a ``device`` parameter selects on this machine: "cpu" or "cuda".

    ``auto`` is the GPU when CuPy and an NVIDIA GPU are usable (never the simulator),
    and the CPU where the fit asks for what runs there only (``cpu_only``, what that is:
    exact search, the absolute-error criterion); ``cuda`` also accepts the CUDA
    simulator (``NUMBA_ENABLE_CUDASIM=1``) and otherwise says why it cannot run.
    """
    if device not in DEVICES:
        raise ValueError(f"Unknown device={device!r}; choose one of {list(DEVICES)}")
    if device == "cpu" or (device == "auto" and cpu_only is not None):
        return "cpu"
    usable, reason, xp = cuda_status()
    if device == "cuda":
        if not usable:
            raise ValueError(
                f"device='cuda' is not usable here: {reason}; use device='cpu' or 'auto'"
            )
        return "cuda"
    if not usable and gpu_found_but_broken():
        warn_gpu_broken_once(reason)
    return "cuda" if usable and xp is not np else "cpu"


@functools.cache
def warn_gpu_broken_once(reason):
    """device="auto" on a machine whose GPU fails gpu_tree's probe: fits run on the CPU,
    and the user is told why once per process, not at every fit."""
    warnings.warn(
        f"gpu_tree: device='auto' fits on the CPU: {reason}",
        RuntimeWarning,
        stacklevel=4,
    )
