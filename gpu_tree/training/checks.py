"""The checks of single parameter values, each raising an error that names the parameter:
the parameter table (training/parameters.py) declares which parameter each one serves."""

from __future__ import annotations

import math
import numbers

import numpy as np


def check_int(name, value, low, high=None, allow_none=False):
    """``value`` as an int in [low, high] (None where ``allow_none``); a TypeError for
    another type, a ValueError out of range, each naming the parameter."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be an integer{' or None' if allow_none else ''}, got {value!r}"
        )
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return int(value)


def check_float(name, value, low, high, low_open=False, high_open=False):
    """``value`` as a float in the interval from ``low`` to ``high`` (open at an end where
    said); a TypeError for a non-number, a ValueError outside it or for NaN."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    value = float(value)
    too_low = value <= low if low_open else value < low
    too_high = value >= high if high_open else value > high
    if too_low or too_high or math.isnan(value):
        interval = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        raise ValueError(f"{name} must be in {interval}, got {value}")
    return value


def count_or_fraction(name, value, n_samples, int_low, frac_high, frac_high_open):
    """scikit-learn's int-or-fraction parameters (min_samples_split, min_samples_leaf)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return check_int(name, value, int_low)
    fraction = check_float(name, value, 0.0, frac_high, low_open=True, high_open=frac_high_open)
    return max(int_low, math.ceil(fraction * n_samples))


def resolve_max_features(max_features, n_features):
    """The features drawn per node (None: all), from scikit-learn's forms of the
    parameter: an int, a fraction, "sqrt" or "log2"."""
    if max_features is None:
        return None
    if isinstance(max_features, str):
        if max_features == "sqrt":
            return max(1, int(math.sqrt(n_features)))
        if max_features == "log2":
            return max(1, int(math.log2(n_features)))
        raise ValueError(
            f"max_features must be None, an int, a float, 'sqrt' or 'log2'; got {max_features!r}"
        )
    if isinstance(max_features, numbers.Integral) and not isinstance(max_features, bool):
        return check_int("max_features", max_features, 1, n_features)
    fraction = check_float("max_features", max_features, 0.0, 1.0, low_open=True)
    return max(1, int(fraction * n_features))


def check_feature_costs(feature_costs, n_features, cost_criterion=None) -> np.ndarray | None:
    """``feature_costs`` as float64, one finite cost >= 0 per feature (None: no costs); a
    ValueError naming the problem: the wrong length, or the first bad cost's feature.
    Tan and Schlimmer's gain**2 / cost is undefined for a cost of 0: such a cost is
    refused where ``cost_criterion`` (the measure the costs are for) is "tan_schlimmer"."""
    if feature_costs is None:
        return None
    try:
        costs = np.asarray(feature_costs, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"feature_costs must be None or numbers, one per feature; got {feature_costs!r}"
        ) from None
    if costs.ndim != 1 or costs.size != n_features:
        raise ValueError(
            f"feature_costs must hold one cost per feature: X has {n_features} features, "
            f"feature_costs has shape {costs.shape}"
        )
    bad = np.flatnonzero(~(np.isfinite(costs) & (costs >= 0)))
    if bad.size:
        j = int(bad[0])
        raise ValueError(f"feature_costs[{j}] must be finite and >= 0, got {float(costs[j])}")
    # A path's cost sums its features' costs (prediction_cost, the cost-aware criteria):
    # the costs of all the features together must be finite, or a sum overflows to inf.
    with np.errstate(over="ignore"):
        total = np.cumsum(costs)
    over = np.flatnonzero(~np.isfinite(total))
    if over.size:
        j = int(over[0])
        raise ValueError(
            f"feature_costs[{j}] is {float(costs[j])!r}: the costs of all the features "
            f"together must be finite (at most {np.finfo(np.float64).max:.4g}), as a "
            "prediction's cost sums them; scale the costs down"
        )
    free = np.flatnonzero(costs == 0)
    if cost_criterion == "tan_schlimmer" and free.size:
        j = int(free[0])
        raise ValueError(
            f"feature_costs[{j}] is 0, but cost_criterion='tan_schlimmer' divides by the "
            "cost (gain**2 / cost): give it a positive cost, or use cost_criterion='nunez' "
            "((2**gain - 1) / (cost + 1)**cost_weight), which allows free features"
        )
    return costs


def random_generator(random_state) -> np.random.Generator:
    """The numpy Generator a ``random_state`` stands for (an int: the same every time;
    None: a fresh one; a RandomState or Generator: drawn from)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(np.iinfo(np.int32).max))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:  # numpy's own message names no parameter
            raise ValueError(f"random_state must be a non-negative integer, got {random_state}")
        return np.random.default_rng(random_state)
    if random_state is None:
        return np.random.default_rng()
    raise ValueError(
        f"random_state must be None, an int or a numpy Generator, got {random_state!r}"
    )


def random_seed(random_state) -> int:
    """A seed for the counter-based draws (growing/random_draws.py) from ``random_state``
    (an int gives the same seed every time; None a fresh one; a numpy RandomState or
    Generator is drawn from)."""
    return int(random_generator(random_state).integers(np.iinfo(np.int64).max))


def check_monotonic_cst(monotonic_cst, n_features, n_classes, categorical_features):
    """``monotonic_cst`` checked against the fitted input (scikit-learn's messages):
    int8 per feature, or None where no feature is constrained. ``n_classes``: the
    classes of a classifier's one output (None for a regressor); ``categorical_features``:
    the indices of the categorical features (None: none)."""
    if monotonic_cst is None:
        return None
    cst = np.asarray(monotonic_cst)
    if cst.ndim != 1 or cst.shape[0] != n_features:
        raise ValueError(
            f"monotonic_cst has shape {cst.shape[0] if cst.ndim else cst.shape} but the "
            f"input data X has {n_features} features."
        )
    if not np.all(np.isin(cst, (-1, 0, 1))):
        raise ValueError(
            f"monotonic_cst must be None or an array-like of -1, 0 or 1, but got {np.unique(cst)}"
        )
    cst = cst.astype(np.int8)
    if n_classes is not None and n_classes > 2:
        raise ValueError(
            "Monotonicity constraints are not supported with multiclass classification"
        )
    if categorical_features is not None:
        constrained = [int(f) for f in categorical_features if cst[f] != 0]
        if constrained:
            raise ValueError(
                f"monotonic_cst constrains the categorical features {constrained}: "
                "categories have no order; constrain numeric features only (or pass "
                "categorical_features=[] to treat their codes as numbers)"
            )
    return cst if np.any(cst) else None
