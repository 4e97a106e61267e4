"""The split scan's helpers run without numba's reference counting (issue 17).

With it, every array a helper takes costs an atomic increment and decrement per call,
inlined or not: three quarters of a split candidate's time. ``borrowing_njit`` compiles
without it, which numba allows only for code that allocates nothing.
"""

import numpy as np
import pytest
from numba.core.errors import TypingError

from gpu_tree.kernels.cpu import categorical as cpu_categorical
from gpu_tree.kernels.cpu import launch as cpu_launch
from gpu_tree.kernels.cpu import split_scan as cpu_split_scan
from gpu_tree.kernels.cpu import subtrees as cpu_subtrees


def test_borrowing_njit_refuses_to_compile_an_allocation():
    @cpu_launch.borrowing_njit()
    def allocates(n):
        return np.empty(n)

    with pytest.raises(TypingError):
        allocates(3)


def test_borrowing_njit_reads_and_writes_the_arrays_it_is_given():
    @cpu_launch.borrowing_njit()
    def add_one(values):
        for i in range(values.shape[0]):
            values[i] += 1.0
        return values[0]

    values = np.arange(4.0)
    assert add_one(values) == 1.0
    np.testing.assert_array_equal(values, [1.0, 2.0, 3.0, 4.0])


@pytest.mark.parametrize(
    "helper",
    [
        cpu_subtrees._score_feature,
        cpu_subtrees._choose_winner,
        cpu_subtrees._node_totals,
        cpu_subtrees._squared_deviations,
        cpu_categorical._candidate,
        cpu_categorical._score_feature,
        cpu_categorical.subset_sum,
        cpu_split_scan._score_feature,
    ],
    ids=lambda helper: helper.py_func.__qualname__,
)
def test_the_split_scan_helpers_borrow_their_arrays(helper):
    assert helper.targetoptions.get("_nrt") is False
