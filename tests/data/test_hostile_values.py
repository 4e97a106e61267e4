"""Feature values from anywhere in float64's range (issue 15, defect 1).

Before: values spanning more than float64's range (-1.7e308 .. 1.79e308), subnormals, and
values one ulp apart made the bin lookup's grid scale infinite and its cell index
unchecked: a segfault or an LLVM assertion. Now every value maps to the bin a plain
binary search over the edges gives, on both devices, and trees split such values apart.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_tree import DecisionTreeClassifier
from gpu_tree.backends.cuda import cuda_status
from gpu_tree.data.binning import BinMapper

EXTREMES = {
    "beyond the range": [-1.7e308, -1e308, 1e308, 1.79e308],
    "subnormals": [0.0, 5e-324, 1e-323, 1.5e-323],
    "one ulp apart near 1e-300": [
        np.nextafter(1e-300, 0.0),
        1e-300,
        np.nextafter(1e-300, 1.0),
        np.nextafter(np.nextafter(1e-300, 1.0), 1.0),
    ],
    "largest finite": [-np.finfo(float).max, 0.0, np.finfo(float).tiny, np.finfo(float).max],
}


def _reference_codes(mapper, X):
    """Bin of each value by a plain binary search: the number of edges below it."""
    return np.stack(
        [np.searchsorted(mapper.edges_[f], X[:, f], side="left") for f in range(X.shape[1])]
    )


@pytest.mark.parametrize("values", EXTREMES.values(), ids=EXTREMES.keys())
def test_extreme_values_bin_as_a_binary_search_does(values):
    X = np.array(values * 3, dtype=float)[:, None]
    mapper = BinMapper(max_bins=256).fit(X)
    codes, lower, upper = mapper.transform(X)
    np.testing.assert_array_equal(codes, _reference_codes(mapper, X))
    assert np.unique(codes).size == len(set(values))  # each distinct value a bin of its own
    usable, _, xp = cuda_status()
    if usable:  # the CUDA kernel: the same source, the same bins
        device_codes, _, _ = mapper.transform_on_device(xp.asarray(X), xp)
        np.testing.assert_array_equal(
            device_codes if isinstance(device_codes, np.ndarray) else xp.asnumpy(device_codes),
            codes,
        )


DEVICES = ["cpu"] + (["cuda"] if cuda_status()[0] else [])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("values", EXTREMES.values(), ids=EXTREMES.keys())
def test_trees_split_extreme_values_apart_on_both_devices(values, device):
    X = np.array(values * 5, dtype=float)[:, None]
    y = np.arange(X.shape[0]) % len(values)
    hist = DecisionTreeClassifier(device=device).fit(X, y)
    exact = DecisionTreeClassifier(splitter="exact").fit(X, y)
    assert hist.score(X, y) == 1.0
    np.testing.assert_array_equal(hist.tree_.threshold, exact.tree_.threshold)


_finite = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(_finite, min_size=2, max_size=40), st.integers(2, 300))
def test_any_finite_values_bin_as_a_binary_search_does(values, max_bins):
    X = np.array(values, dtype=float)[:, None]
    mapper = BinMapper(max_bins=max_bins).fit(X)
    codes, _, _ = mapper.transform(X)
    np.testing.assert_array_equal(codes, _reference_codes(mapper, X))
