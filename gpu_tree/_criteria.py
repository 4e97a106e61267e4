"""Split criteria, each written once over (cumulative) histogram statistics.

Every function takes arrays whose last axis holds a node's *channels* and works
through an array namespace ``xp`` (numpy on the CPU, cupy on the GPU), so one code
path scores every (node, feature, bin) candidate at once on either device.

Channel layout of a statistics vector (see :class:`StatsLayout`):

- classification: ``n_classes`` weighted class totals, then an unweighted row count
  when the fit is weighted (otherwise the class totals already are counts);
- regression: ``[sum w, sum w*y, sum w*y**2]``, then the row count when weighted.

Formulas follow the seed lecture notes (seeds 000-004):

- entropy  H(D) = -sum_i P(c_i|D) log2 P(c_i|D)                     (seed 000, eq. 19.3)
- gini     G(D) = 1 - sum_i P(c_i|D)^2                                (seed 000)
- misclassification  1 - max_i P(c_i|D)                              (seed 002)
- squared_error: the weighted variance of y                          (seed 004)
- information gain  H(D) - n_Y/n H(D_Y) - n_N/n H(D_N)               (seed 000, eq. 19.5)
- gain_ratio  gain / (-sum_k f_k log2 f_k)                           (seed 002)
- cart  2 (n_Y/n)(n_N/n) sum_i |P(c_i|D_Y) - P(c_i|D_N)|             (seed 000)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CLASSIFICATION_CRITERIA = ("gini", "entropy", "log_loss", "gain_ratio", "cart", "misclassification")
REGRESSION_CRITERIA = ("squared_error",)

# The impurity each criterion reports in ``tree_.impurity`` (and uses for pruning and
# feature importances). gain_ratio normalises an entropy decrease; the CART measure is a
# split score with no node impurity of its own, so its nodes report Gini.
_NODE_IMPURITY = {
    "gini": "gini",
    "entropy": "entropy",
    "log_loss": "entropy",
    "gain_ratio": "entropy",
    "cart": "gini",
    "misclassification": "misclassification",
    "squared_error": "squared_error",
}


@dataclass(frozen=True)
class StatsLayout:
    """Where each quantity lives on the channel axis of a statistics array."""

    is_classification: bool
    n_classes: int  # 0 for regression
    has_count_channel: bool

    @property
    def n_channels(self) -> int:
        base = self.n_classes if self.is_classification else 3
        return base + (1 if self.has_count_channel else 0)

    def weight(self, stats, xp=np):
        """Weighted number of rows."""
        if self.is_classification:
            return xp.sum(stats[..., : self.n_classes], axis=-1)
        return stats[..., 0]

    def count(self, stats, xp=np):
        """Unweighted number of rows."""
        if self.has_count_channel:
            return stats[..., -1]
        return self.weight(stats, xp)

    def class_weights(self, stats):
        return stats[..., : self.n_classes]


def _safe_divide(numerator, denominator, xp):
    # Empty sides (denominator 0) are masked out by the caller; avoid 0/0 warnings.
    return numerator / xp.where(denominator > 0, denominator, 1.0)


def entropy(class_weights, xp=np):
    """Entropy in bits of each class-weight vector along the last axis."""
    total = xp.sum(class_weights, axis=-1, keepdims=True)
    p = _safe_divide(class_weights, total, xp)
    plogp = xp.where(p > 0, p * xp.log2(xp.where(p > 0, p, 1.0)), 0.0)
    return -xp.sum(plogp, axis=-1)


def gini(class_weights, xp=np):
    total = xp.sum(class_weights, axis=-1, keepdims=True)
    p = _safe_divide(class_weights, total, xp)
    return 1.0 - xp.sum(p * p, axis=-1)


def misclassification(class_weights, xp=np):
    total = xp.sum(class_weights, axis=-1)
    return 1.0 - _safe_divide(xp.max(class_weights, axis=-1), total, xp)


def variance(regression_stats, xp=np):
    """Weighted variance of y from ``[sum w, sum w*y, sum w*y**2]`` (seed 004's impurity)."""
    w = regression_stats[..., 0]
    mean = _safe_divide(regression_stats[..., 1], w, xp)
    # Round-off can push E[y^2] - E[y]^2 a hair below zero for constant y.
    return xp.maximum(_safe_divide(regression_stats[..., 2], w, xp) - mean * mean, 0.0)


_IMPURITY_FUNCTIONS = {
    "gini": gini,
    "entropy": entropy,
    "misclassification": misclassification,
}


def node_impurity(criterion: str, layout: StatsLayout, stats, xp=np):
    """The impurity ``tree_.impurity`` holds for nodes with these statistics."""
    kind = _NODE_IMPURITY[criterion]
    if kind == "squared_error":
        return variance(stats, xp)
    return _IMPURITY_FUNCTIONS[kind](layout.class_weights(stats), xp)


def split_info(left_fraction, xp=np):
    """-sum_k f_k log2 f_k over the two children (gain ratio's denominator, seed 002)."""
    right_fraction = 1.0 - left_fraction
    terms = xp.zeros_like(left_fraction)
    for f in (left_fraction, right_fraction):
        terms = terms - xp.where(f > 0, f * xp.log2(xp.where(f > 0, f, 1.0)), 0.0)
    return terms


def cart_measure(left_class_weights, right_class_weights, xp=np):
    """2 (n_Y/n)(n_N/n) sum_i |P(c_i|D_Y) - P(c_i|D_N)|   (seed 000)."""
    w_left = xp.sum(left_class_weights, axis=-1)
    w_right = xp.sum(right_class_weights, axis=-1)
    w = w_left + w_right
    p_left = _safe_divide(left_class_weights, w_left[..., None], xp)
    p_right = _safe_divide(right_class_weights, w_right[..., None], xp)
    f_left = _safe_divide(w_left, w, xp)
    f_right = _safe_divide(w_right, w, xp)
    return 2.0 * f_left * f_right * xp.sum(xp.abs(p_left - p_right), axis=-1)


def split_score(criterion: str, layout: StatsLayout, left, right, xp=np):
    """Score of splitting a node into children with statistics ``left`` and ``right``.

    Higher is better. For the impurity criteria this is the impurity decrease
    ``I(D) - w_Y/w I(D_Y) - w_N/w I(D_N)``; gain_ratio divides the entropy decrease by
    the split information; cart is the CART measure itself.
    """
    if criterion == "cart":
        return cart_measure(layout.class_weights(left), layout.class_weights(right), xp)
    parent = left + right
    w_left = layout.weight(left, xp)
    w_right = layout.weight(right, xp)
    w = w_left + w_right
    f_left = _safe_divide(w_left, w, xp)
    f_right = _safe_divide(w_right, w, xp)
    decrease = (
        node_impurity(criterion, layout, parent, xp)
        - f_left * node_impurity(criterion, layout, left, xp)
        - f_right * node_impurity(criterion, layout, right, xp)
    )
    if criterion == "gain_ratio":
        info = split_info(f_left, xp)
        return _safe_divide(decrease, info, xp)
    return decrease


def multiway_information_gain(branch_class_weights, xp=np):
    """ID3's gain for a split into several branches (seed 001): H(S) - sum_v |S_v|/|S| H(S_v).

    ``branch_class_weights`` has shape (..., n_branches, n_classes).
    """
    parent = xp.sum(branch_class_weights, axis=-2)
    w_branch = xp.sum(branch_class_weights, axis=-1)
    w = xp.sum(w_branch, axis=-1, keepdims=True)
    fractions = _safe_divide(w_branch, w, xp)
    return entropy(parent, xp) - xp.sum(fractions * entropy(branch_class_weights, xp), axis=-1)


def check_criterion(criterion, is_classification: bool) -> str:
    """Validate a criterion name for the estimator kind; return it."""
    valid = CLASSIFICATION_CRITERIA if is_classification else REGRESSION_CRITERIA
    other = REGRESSION_CRITERIA if is_classification else CLASSIFICATION_CRITERIA
    kind = "classifier" if is_classification else "regressor"
    if not isinstance(criterion, str) or criterion not in valid:
        if isinstance(criterion, str) and criterion in other:
            raise ValueError(
                f"criterion={criterion!r} is a "
                f"{'regression' if is_classification else 'classification'} criterion and "
                f"cannot be used by a {kind}; choose one of {list(valid)}"
            )
        raise ValueError(f"Unknown criterion={criterion!r} for a {kind}; choose one of {list(valid)}")
    return criterion
