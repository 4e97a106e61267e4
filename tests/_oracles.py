"""Plain-Python impurities: test oracles independent of the library's array code."""

import math


def python_impurity(kind, counts):
    """Gini, entropy (bits) or misclassification of class counts; None for an empty node."""
    n = sum(counts)
    if n == 0:
        return None
    p = [c / n for c in counts]
    if kind == "gini":
        return 1.0 - sum(q * q for q in p)
    if kind == "entropy":
        return -sum(q * math.log2(q) for q in p if q > 0)
    if kind == "misclassification":
        return 1.0 - max(p)
    raise AssertionError(kind)


def extra_trees_root_split(X, y, uniform):
    """Extremely randomised trees' root split by brute force, for binary ``y``: each
    feature f's candidate is a threshold ``uniform[f]`` of the way from its lowest to its
    highest value, splitting after the last value at or below it (the highest value always
    goes right); the candidate of largest Gini decrease wins (ties: the lower feature).
    Returns (feature, threshold): the midpoint between the split value and the next."""
    import numpy as np

    def gini(labels):
        counts = np.bincount(labels, minlength=2)
        return python_impurity("gini", counts.tolist()) or 0.0

    best = (-np.inf, None, None)
    for f in range(X.shape[1]):
        values = np.unique(X[:, f])
        threshold = values[0] + uniform[f] * (values[-1] - values[0])
        split = max(0, np.searchsorted(values, threshold, side="right") - 1)
        split = min(split, values.size - 2)
        left = X[:, f] <= values[split]
        decrease = gini(y) - (left.mean() * gini(y[left]) + (~left).mean() * gini(y[~left]))
        if decrease > best[0] + 1e-12:
            best = (decrease, f, (values[split] + values[split + 1]) / 2)
    return best[1], best[2]
