"""Host and device arrays: which an array is, and the copies between them, counted in a
CUDA fit's statistics (``utils.fit_stats``). Every copy of the library goes through
here."""

from __future__ import annotations

import numpy as np

from gpu_tree.utils.fit_stats import count_copy


def is_device_array(X) -> bool:
    """A GPU array (CuPy or any ``__cuda_array_interface__`` producer), not a host array."""
    return hasattr(X, "__cuda_array_interface__") and not isinstance(X, np.ndarray)


def to_host(array):
    """A GPU array copied to a host numpy array; anything else returned unchanged."""
    return array.get() if is_device_array(array) else array


def device_to_host(array):
    """:func:`to_host` for an array of the fit's device (a CuPy array, or a numpy one under
    the CUDA simulator): counted as a copy in a CUDA fit (``utils.fit_stats``)."""
    host = to_host(array)
    count_copy("device_to_host", getattr(host, "nbytes", 8))
    return host


def host_to_device(array, xp):
    """Host data as an array of ``xp`` (CuPy: a copy to the GPU), counted as a copy in a
    CUDA fit."""
    device = xp.asarray(array)
    count_copy("host_to_device", device.nbytes)
    return device
