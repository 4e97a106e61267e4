"""Split criteria, each written once over (cumulative) histogram statistics.

Every function takes arrays whose last axis holds a node's *channels* and works
through an array namespace ``xp`` (numpy on the CPU, cupy on the GPU), so one code
path scores every (node, feature, bin) candidate at once on either device.

Channel layout of a statistics vector (owned by :mod:`gpu_tree.data.stats`):

- classification: ``n_classes`` weighted class totals, then an unweighted row count
  when the fit is weighted (otherwise the class totals already are counts);
- regression: ``[sum w, sum w*y]`` (y centred; one ``sum w*y`` per output of a
  multi-output y), then the row count when weighted.

The functions read *real* statistics (:meth:`StatsLayout.real` of the integer ones).

Formulas, with their published sources:

- entropy  H(D) = -sum_i P(c_i|D) log2 P(c_i|D)                 (Zaki and Meira, eq. 19.3)
- gini     G(D) = 1 - sum_i P(c_i|D)^2                            (Zaki and Meira, ch. 19)
- misclassification  1 - max_i P(c_i|D)                          (ESL, section 9.2.3)
- squared_error: the weighted variance of y, scored in the S1^2/W form (Breiman et al. 1984)
- poisson: the half Poisson deviance  sum_i w_i (y_i log(y_i / m) - y_i + m) / w  (m the
  node's weighted mean; y >= 0), scored as scikit-learn's Poisson proxy
  sum_k S_k log(S_k / W_k) (S = sum w y, W = sum w) in a better conditioned form
  (:func:`poisson_split_terms`); a child whose S is not positive is no split; with
  several outputs, the mean of the outputs' deviances and scores (scikit-learn's)
- information gain  H(D) - n_Y/n H(D_Y) - n_N/n H(D_N)           (Zaki and Meira, eq. 19.5)
- multiway gain  H(D) - sum_v n_v/n H(D_v)                       (Quinlan 1986, ID3)
- gain_ratio  gain / (-sum_k f_k log2 f_k)                       (Quinlan 1993, C4.5)
- cart  2 (n_Y/n)(n_N/n) sum_i |P(c_i|D_Y) - P(c_i|D_N)|         (Zaki and Meira, ch. 19)

Cost-sensitive feature selection (features with differing costs), of a split's gain and
its feature's cost (:func:`log2_cost_measure`):

- tan_schlimmer  gain^2 / cost                                   (Tan and Schlimmer 1990)
- nunez  (2^gain - 1) / (cost + 1)^w                            (Nunez 1991)

- Zaki and Meira: M. J. Zaki and W. Meira Jr., *Data Mining and Machine Learning*, 2nd
  ed., Cambridge University Press, 2020, chapter 19 (Algorithms 19.1-19.3).
- Quinlan 1986: J. R. Quinlan, "Induction of decision trees", *Machine Learning* 1 (ID3).
- Quinlan 1993: J. R. Quinlan, *C4.5: Programs for Machine Learning*, Morgan Kaufmann.
- Breiman et al. 1984: L. Breiman, J. Friedman, R. Olshen and C. Stone, *Classification
  and Regression Trees*, Wadsworth.
- ESL: T. Hastie, R. Tibshirani and J. Friedman, *The Elements of Statistical Learning*,
  2nd ed., Springer, 2009.
- Tan and Schlimmer 1990: M. Tan and J. C. Schlimmer, "Two case studies in
  cost-sensitive concept acquisition", *Proceedings of AAAI-90*, pp. 854-860.
- Nunez 1991: M. Núñez, "The use of background knowledge in decision tree induction",
  *Machine Learning* 6, pp. 231-250.
"""

from __future__ import annotations

import warnings

import numpy as np

from gpu_tree.data.stats import StatsLayout, channel_sum
from gpu_tree.kernels.cpu.feature_costs import log2_cost_measure_of_arrays
from gpu_tree.kernels.log2 import log2_of_array
from gpu_tree.model.tree import NODE_IMPURITY

CLASSIFICATION_CRITERIA = ("gini", "entropy", "log_loss", "gain_ratio", "cart", "misclassification")
REGRESSION_CRITERIA = ("squared_error", "poisson", "absolute_error")
# Criteria whose node impurities (and for absolute_error values) are measured on the rows
# once the tree is grown, and whose split scores scale as the targets do (a variance
# decrease scales as their square).
ROW_MEASURED_CRITERIA = ("poisson", "absolute_error")
LINEAR_SCORE_CRITERIA = ("poisson", "absolute_error")
COST_CRITERIA = ("tan_schlimmer", "nunez")


def _safe_divide(numerator, denominator, xp):
    """numerator / denominator, and 0 where the denominator is 0 (an empty side, which
    callers mask out anyway) without 0/0 warnings."""
    if xp is np:
        # One masked pass into a zeroed (lazily allocated) output instead of a select
        # then a divide: this sits on the scoring hot path.
        numerator, denominator = np.broadcast_arrays(numerator, denominator)
        out = np.zeros(numerator.shape, dtype=np.float64)
        return np.divide(numerator, denominator, out=out, where=denominator > 0)
    return numerator / xp.where(denominator > 0, denominator, 1.0)


def _class_fractions(class_weights, xp):
    """P(c_i|D) for each class, as a list of arrays (one per class)."""
    total = channel_sum(class_weights, xp)
    return [_safe_divide(class_weights[..., c], total, xp) for c in range(class_weights.shape[-1])]


def _plog2p(p, xp):
    # 0 log 0 = 0 (the limit), without evaluating log2(0). The kernels' log2, not the
    # device's own: the same bits on the CPU and a GPU (kernels/log2.py).
    return xp.where(p > 0, p * log2_of_array(xp.where(p > 0, p, 1.0), xp), 0.0)


# Each impurity is written once, in its *weighted* form W = w * I(D) (w: the node's
# weight). Split scores need only W of parent and children, and W avoids a division
# per class: I(D) = W / w, and the impurity decrease of a split is
# (W(D) - W(D_Y) - W(D_N)) / w, which equals I(D) - w_Y/w I(D_Y) - w_N/w I(D_N).


def weighted_entropy(class_weights, xp=np):
    """w * H(D) = w log2 w - sum_i c_i log2 c_i   (c_i: class weights, w = sum_i c_i)."""
    w = channel_sum(class_weights, xp)
    result = _plog2p(w, xp)
    for c in range(class_weights.shape[-1]):
        result = result - _plog2p(class_weights[..., c], xp)
    return result


def weighted_gini(class_weights, xp=np):
    """w * G(D) = w - sum_i c_i^2 / w."""
    w = channel_sum(class_weights, xp)
    squares = 0.0
    for c in range(class_weights.shape[-1]):
        squares = squares + class_weights[..., c] * class_weights[..., c]
    return w - _safe_divide(squares, w, xp)


def weighted_misclassification(class_weights, xp=np):
    """w * (1 - max_i P(c_i|D)) = w - max_i c_i."""
    return channel_sum(class_weights, xp) - xp.max(class_weights, axis=-1)


def weighted_squared_error_term(regression_stats, xp=np, n_outputs: int = 1):
    """-(sum w y)^2 / w: w * Var(y) less sum w y^2, the part of the regression impurity
    (Breiman et al. 1984) that split scores need. With several outputs (channels
    1..n_outputs), the mean of their terms: a multi-output node's impurity is the mean
    of its outputs' variances, as in scikit-learn.

    w * Var(y) = sum w y^2 - (sum w y)^2 / w, and sum w y^2 is the same for a node and its
    children together, so it cancels from every impurity decrease: a split's weighted
    score is (sum_L w y)^2 / w_L + (sum_R w y)^2 / w_R - (sum w y)^2 / w, no square sums
    needed (the S1^2/W form). Node impurities themselves are measured on the rows, by the
    backend (two-pass: about the node's mean).
    """
    w = regression_stats[..., 0]
    squares = 0.0
    for k in range(1, 1 + n_outputs):
        sum_y = regression_stats[..., k]
        squares = squares + sum_y * sum_y
    return -_safe_divide(squares, w, xp) / n_outputs


def poisson_sums(layout: StatsLayout, regression_stats, xp=np, output: int = 0):
    """(W, S, size) of one output (the first by default): a side's weight W = sum w, its
    S = sum w y (y in the fit's units, not centred: :meth:`StatsLayout.weighted_target_sum`)
    and the size of the terms S was computed from, |sum w (y - centre)| + |centre| W >= S,
    which bounds its rounding."""
    w = regression_stats[..., 0]
    centred_sum = regression_stats[..., 1 + output]
    size = xp.abs(centred_sum) + abs(layout.fit_centres[output]) * xp.abs(w)
    return w, layout.weighted_target_sum(regression_stats, xp, output), size


def poisson_positive(layout: StatsLayout, regression_stats, xp=np, output: int = 0):
    """Whether a side's S = sum w y of one output is positive beyond the rounding of its
    reconstruction from the centred sums (:data:`SCORE_RTOL` of their size): a Poisson
    child whose S is not predicts 0, of infinite deviance, and is no split (scikit-learn:
    S <= EPSILON, in any output)."""
    _, s, size = poisson_sums(layout, regression_stats, xp, output)
    return _beyond_rounding(s, size)


def _beyond_rounding(s, size):
    """Whether sums ``s`` exceed their rounding, :data:`SCORE_RTOL` of their ``size``."""
    return s > SCORE_RTOL * size


def poisson_split_terms(layout: StatsLayout, children, parent, xp=np, output: int = 0):
    """S_k log(m_k / m) of each child k of one output (m_k its mean target, m the
    parent's; 0 where a side's W is not positive or its S not beyond rounding
    (:func:`poisson_positive`): no split's term): a Poisson split's weighted score
    is their sum (the mean of the outputs' sums: :func:`poisson_split`).

    w * D = sum w (y log(y / m) - y + m) = sum w y log y - S log(S / W) (S = sum w y,
    W = sum w, m = S / W), and sum w y log y is the same for a node and its children
    together, so a split's weighted score is sum_k S_k log(S_k / W_k) - S log(S / W),
    scikit-learn's Poisson proxy up to the node's term, and as sum_k S_k = S, that is
    sum_k S_k log(m_k / m). Written so, with m_k / m = 1 + (c_k - c) / m (c_k, c the
    centred means, whose difference the centre does not enter), each term is of the size
    of the children's differences, not of S log m: targets far from 0 (1e6 + Poisson
    noise) keep their splits apart. ``parent`` broadcasts against ``children``.
    """
    w, s, size = poisson_sums(layout, children, xp, output)
    parent_w, parent_s, _ = poisson_sums(layout, parent, xp, output)
    # A child's S within rounding of 0 makes no split (poisson_split); its m_k may round
    # to 0, whose log (a divide-by-zero warning) is not taken.
    ok = _beyond_rounding(s, size) & (w > 0) & (parent_s > 0) & (parent_w > 0)
    mean = xp.where(ok, parent_s, 1.0) / xp.where(ok, parent_w, 1.0)
    difference = layout.centred_mean(children, xp, output) - layout.centred_mean(parent, xp, output)
    return xp.where(ok, s * xp.log1p(xp.where(ok, difference, 0.0) / mean), 0.0)


def poisson_term_scale(layout: StatsLayout, terms, parent, xp=np, output: int = 0):
    """The size a Poisson split score's rounding scales with (score_tolerance), from its
    children's :func:`poisson_split_terms` of one output (last axis): sum_k |term_k|
    times the parent's size / S (the relative rounding of its mean, which every term
    reads)."""
    _, parent_s, size = poisson_sums(layout, parent, xp, output)
    return xp.sum(xp.abs(terms), axis=-1) * _safe_divide(size, parent_s, xp)


def poisson_split(layout: StatsLayout, children, parent, xp=np):
    """(weighted score, term scale) of Poisson splits of ``parent`` (..., n_channels) into
    ``children`` (..., n_children, n_channels): the sum of :func:`poisson_split_terms`
    (-inf where a child holding rows has no positive S) and :func:`poisson_term_scale`.

    With several outputs, the mean over them of each output's score and term scale, as
    a node's deviance is the mean of its outputs' (scikit-learn's); -inf where a child
    holding rows has no positive S in any one output. (One output's scores are divided
    by 1, exactly: unchanged.)"""
    holds_rows = layout.weight(children, xp) > 0
    score, scale, invalid = 0.0, 0.0, False
    for output in range(layout.n_outputs):
        terms = poisson_split_terms(layout, children, parent[..., None, :], xp, output)
        positive = poisson_positive(layout, children, xp, output)
        invalid = invalid | xp.any(holds_rows & ~positive, axis=-1)
        score = score + xp.sum(terms, axis=-1)
        scale = scale + poisson_term_scale(layout, terms, parent, xp, output)
    score = xp.where(invalid, -xp.inf, score / layout.n_outputs)
    return score, scale / layout.n_outputs


def poisson_node_size(layout: StatsLayout, regression_stats, xp=np):
    """The mean over the outputs of a node's :func:`poisson_sums` size (what its scores'
    rounding scales with where no split's term scale is at hand)."""
    size = 0.0
    for output in range(layout.n_outputs):
        size = size + poisson_sums(layout, regression_stats, xp, output)[2]
    return size / layout.n_outputs


def _per_weight(weighted_impurity):
    def impurity(class_weights, xp=np):
        w = channel_sum(class_weights, xp)
        return _safe_divide(weighted_impurity(class_weights, xp), w, xp)

    impurity.__name__ = weighted_impurity.__name__.removeprefix("weighted_")
    impurity.__doc__ = f"Impurity per unit weight: {weighted_impurity.__name__}(...) / w."
    return impurity


entropy = _per_weight(weighted_entropy)
gini = _per_weight(weighted_gini)
misclassification = _per_weight(weighted_misclassification)


_WEIGHTED_IMPURITY = {
    "gini": weighted_gini,
    "entropy": weighted_entropy,
    "misclassification": weighted_misclassification,
}


def impurity_kind(criterion: str) -> str:
    """The impurity a criterion's nodes report (model.tree.NODE_IMPURITY; poisson's own)."""
    return NODE_IMPURITY.get(criterion, criterion)


def _weighted_node_impurity(criterion, layout, stats, xp):
    kind = impurity_kind(criterion)
    if kind == "squared_error":
        return weighted_squared_error_term(stats, xp, layout.n_outputs)
    if layout.n_outputs > 1:  # the mean over the outputs, as scikit-learn's
        total = 0.0
        for first, end in layout.output_classes:
            total = total + _WEIGHTED_IMPURITY[kind](stats[..., first:end], xp)
        return total / layout.n_outputs
    return _WEIGHTED_IMPURITY[kind](layout.class_weights(stats), xp)


def node_impurity(criterion: str, layout: StatsLayout, stats, xp=np):
    """The impurity ``tree_.impurity`` holds for classification nodes with these (real)
    statistics. Regression nodes' impurities need their rows: they are measured there."""
    if impurity_kind(criterion) in REGRESSION_CRITERIA:
        raise ValueError("a regression node's impurity is measured on its rows, not its sums")
    return _safe_divide(
        _weighted_node_impurity(criterion, layout, stats, xp), layout.weight(stats, xp), xp
    )


def monotonic_value(layout: StatsLayout, stats, xp=np):
    """The value monotonicity constraints hold over, of nodes with these (real)
    statistics: P(class 1) for binary classification, the mean centred target (the fit's
    units) for regression; 0 where a node has no weight. As scikit-learn's splitter, a
    candidate's children must be ordered by it along a constrained feature."""
    if layout.is_classification:
        return _safe_divide(layout.class_weights(stats)[..., 1], layout.weight(stats, xp), xp)
    return _safe_divide(stats[..., 1], stats[..., 0], xp)


def monotonic_admissible(cst, lower, upper, left_value, right_value, xp=np):
    """scikit-learn's check of a split on a constrained feature (``cst`` +1 or -1; 0: no
    check): the children's values ordered by ``cst`` (equal allowed) and both within the
    node's bounds [lower, upper]. Arguments broadcast together."""
    ordered = (left_value - right_value) * cst <= 0
    within = (
        (left_value >= lower)
        & (right_value >= lower)
        & (left_value <= upper)
        & (right_value <= upper)
    )
    return (cst == 0) | (ordered & within)


def monotonic_child_bounds(cst, lower, upper, left_value, right_value):
    """Bounds of the children of splits on features of constraint ``cst`` (arrays, one
    per split) of nodes bounded by [lower, upper], as scikit-learn's builders set them:
    the middle m = (left + right) / 2 is the left child's upper bound and the right
    child's lower bound for +1 (reversed for -1); unconstrained splits pass the node's
    bounds on. Returns (left_lower, left_upper, right_lower, right_upper)."""
    middle = left_value / 2.0 + right_value / 2.0
    left_lower = np.where(cst < 0, middle, lower)
    left_upper = np.where(cst > 0, middle, upper)
    right_lower = np.where(cst > 0, middle, lower)
    right_upper = np.where(cst < 0, middle, upper)
    return left_lower, left_upper, right_lower, right_upper


def split_info(left_fraction, xp=np):
    """-sum_k f_k log2 f_k over the two children (gain ratio's denominator: Quinlan's C4.5)."""
    return -_plog2p(left_fraction, xp) - _plog2p(1.0 - left_fraction, xp)


def cart_measure(left_class_weights, right_class_weights, xp=np):
    """2 (n_Y/n)(n_N/n) sum_i |P(c_i|D_Y) - P(c_i|D_N)|   (the CART measure: Zaki and Meira,
    ch. 19)."""
    w_left = channel_sum(left_class_weights, xp)
    w_right = channel_sum(right_class_weights, xp)
    w = w_left + w_right
    distance = 0.0
    for p_left, p_right in zip(
        _class_fractions(left_class_weights, xp),
        _class_fractions(right_class_weights, xp),
        strict=True,
    ):
        distance = distance + xp.abs(p_left - p_right)
    f_left = _safe_divide(w_left, w, xp)
    f_right = _safe_divide(w_right, w, xp)
    return 2.0 * f_left * f_right * distance


def weighted_split_score(criterion: str, layout: StatsLayout, left, right, parent=None, xp=np):
    """The score of a split times its node's weight w: what candidates are ranked by.

    For the impurity criteria this is W(D) - W(D_Y) - W(D_N) (W = w * I, see above): no
    division at all, and within a node w is one positive constant, so ranking by it
    ranks by :func:`split_score`. gain_ratio divides the entropy decrease by the split
    information; cart is w times the CART measure. ``parent`` (broadcastable, default
    ``left + right``) lets a caller compute the node's terms once per node.
    """
    if parent is None:
        parent = left + right
    if criterion == "poisson":
        children = xp.stack(xp.broadcast_arrays(left, right), axis=-2)
        return poisson_split(layout, children, parent, xp)[0]
    if criterion == "cart":
        cart = cart_measure(layout.class_weights(left), layout.class_weights(right), xp)
        return layout.weight(parent, xp) * cart
    decrease = (
        _weighted_node_impurity(criterion, layout, parent, xp)
        - _weighted_node_impurity(criterion, layout, left, xp)
        - _weighted_node_impurity(criterion, layout, right, xp)
    )
    if criterion == "gain_ratio":
        left_fraction = _safe_divide(layout.weight(left, xp), layout.weight(parent, xp), xp)
        return _safe_divide(decrease, split_info(left_fraction, xp), xp)
    return decrease


# Split scores closer than this, relative to the size of the terms they are computed from
# (see score_tolerance), are ties. A score is a difference of a few dozen terms (one per
# class and side) that float64 rounds to 2**-53 = 1.1e-16 each; numpy's and CUDA's log2
# may differ by an ulp or two more. Measured on letter and HIGGS nodes, scoring with another
# log2 moves the scores near the best by at most 1e-15 of that scale: 1e-12 is a margin of
# about a thousand above that. And it is far below any difference worth a choice: moving
# one row of a node of a million rows changes its scores by about 1e-6 of the scale.
SCORE_RTOL = 1e-12


def score_tolerance(criterion: str, layout: StatsLayout, parent, best, xp=np, divisor=None):
    """How far below ``best`` a weighted split score (:func:`weighted_split_score`,
    :func:`weighted_multiway_split_score`) of a node still ties with it: rounding cannot
    tell them apart.

    ``parent`` (..., n_channels): the node's statistics; ``best`` (...): the best weighted
    score among the candidates compared (-inf: none allowed); ``divisor`` (..., gain_ratio
    only): the best candidate's split information (:func:`split_info`). A score is
    a difference of terms much larger than itself, so its rounding error scales with those
    terms, not with the score: the tolerance is :data:`SCORE_RTOL` times |best| (the
    score's own rounding) plus

    - entropy, log_loss: w (1 + |log2 w|), the size of the terms c log2 c (c <= w);
    - gain_ratio: the same divided by the split information, as the score is (a split
      sending a few rows aside has a small one, and a score of larger error);
    - gini, misclassification, cart: w, the size of their terms (c^2 / w, max c, w);
    - squared_error: (sum w y)^2 / w of the node, the size of its term (the mean over
      the outputs of several); the children's terms add up to the node's plus the score;
    - poisson: ``divisor``, the best candidate's :func:`poisson_term_scale` (its terms
      are of the size of its children's differences, which no statistic of the node
      bounds); without one, the node's |sum w (y - centre)| + |centre| w
      (:func:`poisson_node_size`: the mean over the outputs).

    w is the node's weight.
    """
    weight = xp.abs(layout.weight(parent, xp))
    kind = impurity_kind(criterion)
    if kind == "entropy":
        scale = weight * (1.0 + xp.abs(log2_of_array(xp.where(weight > 0, weight, 1.0), xp)))
        if criterion == "gain_ratio" and divisor is not None:
            scale = xp.where(divisor > 0, scale / xp.where(divisor > 0, divisor, 1.0), scale)
    elif kind == "squared_error":
        scale = -weighted_squared_error_term(parent, xp, layout.n_outputs)
    elif kind == "poisson":
        scale = poisson_node_size(layout, parent, xp) if divisor is None else divisor
    else:
        scale = weight
    magnitude = xp.where(xp.isfinite(best), xp.abs(best), 0.0)
    return SCORE_RTOL * (scale + magnitude)


def branch_split_info(side_weights, xp=np):
    """-sum_k f_k log2 f_k with f_k = side_weights[..., k] / sum_k side_weights[..., k]:
    the split information gain_ratio divides by (Quinlan's C4.5), of splits into sides
    (or branches) of these weights; 0 where they weigh nothing."""
    total = channel_sum(side_weights, xp)
    fractions = _safe_divide(side_weights, total[..., None], xp)
    return -channel_sum(_plog2p(fractions, xp), xp)


def split_score(criterion: str, layout: StatsLayout, left, right, parent=None, xp=np):
    """Score of splitting a node into children with statistics ``left`` and ``right``.

    Higher is better. For the impurity criteria this is the impurity decrease
    ``I(D) - w_Y/w I(D_Y) - w_N/w I(D_N)``; gain_ratio divides the entropy decrease by
    the split information; cart is the CART measure itself.
    """
    if parent is None:
        parent = left + right
    weighted = weighted_split_score(criterion, layout, left, right, parent, xp)
    return _safe_divide(weighted, layout.weight(parent, xp), xp)


def weighted_multiway_split_score(criterion: str, layout: StatsLayout, branches, parent, xp=np):
    """w times the score of splitting a node into several branches (Quinlan's ID3).

    ``branches`` (..., n_branches, n_channels), empty branches allowed (they add
    nothing); ``parent`` (..., n_channels). The impurity criteria score
    W(D) - sum_v W(D_v), i.e. w (I(D) - sum_v w_v/w I(D_v)); gain_ratio divides the
    entropy decrease by the split information -sum_v f_v log2 f_v (Quinlan's C4.5). With two
    branches this is :func:`weighted_split_score`. The CART measure compares two sides
    only and has no multiway form.
    """
    if criterion == "cart":
        raise ValueError("the CART measure scores binary splits only; it has no multiway form")
    if criterion == "poisson":
        return poisson_split(layout, branches, parent, xp)[0]
    children = xp.sum(_weighted_node_impurity(criterion, layout, branches, xp), axis=-1)
    decrease = _weighted_node_impurity(criterion, layout, parent, xp) - children
    if criterion == "gain_ratio":
        fractions = _safe_divide(
            layout.weight(branches, xp), layout.weight(parent, xp)[..., None], xp
        )
        return _safe_divide(decrease, -xp.sum(_plog2p(fractions, xp), axis=-1), xp)
    return decrease


def multiway_information_gain(branch_class_weights, xp=np):
    """ID3's gain for a split into several branches (Quinlan 1986):
    H(S) - sum_v |S_v|/|S| H(S_v).

    ``branch_class_weights`` has shape (..., n_branches, n_classes).
    """
    n_classes = branch_class_weights.shape[-1]
    layout = StatsLayout(True, n_classes, has_count_channel=False)
    parent = xp.sum(branch_class_weights, axis=-2)
    weighted = weighted_multiway_split_score("entropy", layout, branch_class_weights, parent, xp)
    return _safe_divide(weighted, layout.weight(parent, xp), xp)


def check_criterion(criterion, is_classification: bool) -> str:
    """Validate a criterion name for the estimator kind; return it (``"friedman_mse"``, a
    regressor's, as ``"squared_error"``, with scikit-learn's FutureWarning)."""
    if criterion == "friedman_mse" and not is_classification:
        # Friedman's improvement, w_l w_r / (w_l + w_r) (mean_l - mean_r)^2, is the squared
        # error's impurity decrease times the node's weight: the same splits, always.
        warnings.warn(
            'Value "friedman_mse" for criterion is deprecated (as in scikit-learn 1.9). It '
            'maps to "squared_error", as both were always equivalent. Use '
            'criterion="squared_error" to remove this warning.',
            FutureWarning,
            stacklevel=4,
        )
        return "squared_error"
    valid = CLASSIFICATION_CRITERIA if is_classification else REGRESSION_CRITERIA
    other = (*REGRESSION_CRITERIA, "friedman_mse") if is_classification else CLASSIFICATION_CRITERIA
    kind = "classifier" if is_classification else "regressor"
    if not isinstance(criterion, str) or criterion not in valid:
        if isinstance(criterion, str) and criterion in other:
            raise ValueError(
                f"criterion={criterion!r} is a "
                f"{'regression' if is_classification else 'classification'} criterion and "
                f"cannot be used by a {kind}; choose one of {list(valid)}"
            )
        raise ValueError(
            f"Unknown criterion={criterion!r} for a {kind}; choose one of {list(valid)}"
        )
    return criterion


def log2_cost_measure(cost_criterion: str, gain, cost, cost_weight: float = 1.0):
    """log2 of a cost-sensitive selection measure of splits of ``gain`` on features of
    ``cost`` (arrays, broadcast): the feature of the highest measure is the better one.

    - ``"tan_schlimmer"``: gain^2 / cost (Tan and Schlimmer 1990), so
      2 log2(gain) - log2(cost). Undefined for a cost of 0 (the estimators refuse it).
    - ``"nunez"``: (2^gain - 1) / (cost + 1)^w with w = ``cost_weight`` (Nunez 1991),
      so log2(2^gain - 1) - w log2(cost + 1), where log2(2^g - 1) = g + log2(1 - 2^-g).

    Both papers' gain is the information gain in bits (the entropy criterion's score).
    The measure's log2 ranks as the measure does (log2 is increasing) and does not
    overflow where 2^gain would (a regression gain is a variance decrease: it may reach
    thousands). A gain of 0 or below (rounding can leave an impurity decrease slightly
    negative) measures 0: -inf.

    Computed by one compiled formula (kernels/cpu/feature_costs.py), which the subtree
    finisher calls too: the same bits on both paths.
    """
    if cost_criterion not in COST_CRITERIA:
        raise ValueError(
            f"Unknown cost_criterion={cost_criterion!r}; choose one of {list(COST_CRITERIA)}"
        )
    return log2_cost_measure_of_arrays(cost_criterion, gain, cost, cost_weight)


def check_cost_criterion(cost_criterion) -> str:
    """Validate a cost_criterion name; return it."""
    if not isinstance(cost_criterion, str) or cost_criterion not in COST_CRITERIA:
        raise ValueError(
            f"Unknown cost_criterion={cost_criterion!r}; choose one of {list(COST_CRITERIA)}"
        )
    return cost_criterion


# scikit-learn's messages: its trees and forests word the second one differently.
POISSON_NEGATIVE_MESSAGE = (
    "Some value(s) of y are negative which is not allowed for Poisson regression."
)
POISSON_SUM_MESSAGES = {
    "tree": "Sum of y is not positive which is necessary for Poisson regression.",
    "forest": "Sum of y is not strictly positive which is necessary for Poisson regression.",
}


def check_poisson_targets(y, estimator_kind: str = "tree") -> None:
    """Refuse targets the Poisson criterion cannot fit, with scikit-learn's messages: a
    negative target, or targets that sum to 0 (every prediction would be 0).
    ``estimator_kind``: "tree" or "forest" (whose message scikit-learn words apart).

    A multi-output y (n_samples, n_outputs) is checked output by output, and the message
    names the output. scikit-learn sums all of y at once; given an output summing to 0 it
    grows a lone root of infinite impurity (every child's sum of that output is 0, so no
    split is allowed): refused here instead."""
    y = np.asarray(y, dtype=np.float64)
    columns = y[:, None] if y.ndim == 1 else y

    def naming(output) -> str:
        return f" (output {output}, y[:, {output}])" if y.ndim == 2 else ""

    negative = np.flatnonzero(np.any(columns < 0, axis=0))
    if negative.size:
        raise ValueError(POISSON_NEGATIVE_MESSAGE + naming(negative[0]))
    not_positive = np.flatnonzero(np.sum(columns, axis=0) <= 0)
    if not_positive.size:
        raise ValueError(POISSON_SUM_MESSAGES[estimator_kind] + naming(not_positive[0]))
