"""Hypothesis strategies shared by the property tests."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st


def consistent_targets(X, y):
    """y with each row given the target of the first row whose features equal its own
    (NaN equal to NaN, -0.0 to 0.0): no node is then impure with a single X value."""
    keys = np.where(np.isnan(X), np.inf, X) + 0.0  # X holds no infinity; + 0.0: no -0.0
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    return y[first[inverse.ravel()]]


@st.composite
def small_integer_data(draw, regression=False):
    """(X, y, weight, params): a few rows of a few values per feature (so that histogram
    and exact search see the same candidates), integer targets, integer weights or None,
    and stopping rules."""
    n_rows = draw(st.integers(2, 40))
    n_features = draw(st.integers(1, 3))
    n_values = draw(st.integers(1, 6))
    scale = draw(st.sampled_from([1.0, 0.1, 2.5]))
    offset = draw(st.sampled_from([0.0, -3.0, 1e3]))
    codes = draw(
        st.lists(
            st.integers(0, n_values - 1), min_size=n_rows * n_features, max_size=n_rows * n_features
        )
    )
    X = np.array(codes, dtype=float).reshape(n_rows, n_features) * scale + offset
    if regression:
        y = np.array(draw(st.lists(st.integers(-3, 3), min_size=n_rows, max_size=n_rows)), float)
    else:
        n_classes = draw(st.integers(2, 4))
        y = np.array(
            draw(st.lists(st.integers(0, n_classes - 1), min_size=n_rows, max_size=n_rows))
        )
    if draw(st.booleans()):
        y = consistent_targets(X, y)
    weighted = draw(st.booleans())
    weight = None
    if weighted:
        weight = np.array(
            draw(st.lists(st.integers(1, 3), min_size=n_rows, max_size=n_rows)), dtype=float
        )
    params = {
        "max_depth": draw(st.sampled_from([1, 2, 3, None])),
        "min_samples_leaf": draw(st.sampled_from([1, 2, 3])),
        "min_samples_split": draw(st.sampled_from([2, 4])),
        "max_leaf_nodes": draw(st.sampled_from([None, None, 3])),
        "max_bins": draw(st.sampled_from([n_values if n_values >= 2 else 2, 256])),
    }
    return X, y, weight, params
