"""The warm-up's own choices (gpu_tree/app/warm_up.py); test_cli runs the command."""

import numpy as np

from gpu_tree.app import warm_up
from gpu_tree.kernels.cpu import binning
from gpu_tree.kernels.cpu import launch as cpu_launch


class _Recorded:
    """Stands in for a kernel variant, recording that it ran."""

    def __init__(self, name, calls):
        self.name, self.calls = name, calls

    def __call__(self, *args):
        self.calls.append(self.name)


def test_the_large_run_takes_every_parallel_kernel_the_binning_ones_included():
    # The binning kernels go parallel by their measured serial time (4 ms of work), which
    # the warm-up's large file does not reach: without the override their parallel
    # versions would compile on a user's first large fit instead.
    calls = []
    kernel = cpu_launch.SerialWhenSmall.__new__(cpu_launch.SerialWhenSmall)
    kernel.parallel = _Recorded("parallel", calls)
    kernel.serial = _Recorded("serial", calls)
    kernel.work = binning.nonfinite_columns.work
    kernel.units_per_work = binning.nonfinite_columns.units_per_work
    large = (np.zeros((cpu_launch.SERIAL_MAX_ELEMENTS // 28 + 1000, 28)),)
    limit = cpu_launch.SERIAL_MAX_ELEMENTS
    kernel(*large)
    with warm_up._every_kernel_parallel(False):
        kernel(*large)
    with warm_up._every_kernel_parallel(True):
        kernel(*large)
        kernel(np.zeros((2, 2)))
    assert calls == ["serial", "serial", "parallel", "parallel"]
    assert cpu_launch.SERIAL_MAX_ELEMENTS == limit  # put back
