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
