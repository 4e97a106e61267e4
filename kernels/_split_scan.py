"""The split search over histograms, compiled: every candidate of a node scored and the
best one chosen in one pass per (node, feature), written once for both devices.

This is the fused split-scoring kernel's arithmetic. The vectorised search in
``gpu_tree.growing.splitting`` (with ``gpu_tree.growing.criteria``) is its reference: the
same candidates, the same formulas term by term, the same ties. Tests compare the two
on every criterion. Only numeric features are searched here; categorical ones take the
vectorised path.

For one node (histogram slot ``slot``) and one feature, the candidates are its non-empty
bins in order: bin ``b`` sends the present rows of bins ``<= b`` left. Statistics are the
histogram's integers; each side becomes real (``float(integer) * scale[c]``, the exact
power-of-two scale of :meth:`StatsLayout.real`) where a formula reads it, so nothing but
the running prefix is kept per candidate:

- left: the prefix; right: total minus prefix (integers, exact), each plus the missing
  rows' statistics when the candidate sends them that way;
- with missing values (``use_missing``), each candidate is scored with the missing rows on
  either side; the better side wins, tied sides (within the tolerance) the side holding
  more present rows. Every present value left and the missing ones right is a candidate
  too;
- a candidate is allowed when both sides hold rows and the leaf-size limits hold, and on
  a feature with a monotonicity constraint, when its sides' values are ordered by it and
  within the node's bounds (splitting.MonotonicBounds); the first candidate within the
  tolerance of the best (:func:`make_split_scan`'s ``tolerance``) wins a feature, and
  the first feature within it wins the node.

``scale`` (float64) holds each channel's power-of-two scale, then one more entry: the
regression centre in the fit's units (``StatsLayout.fit_centre``), which the Poisson
criterion adds back to the centred sums (``criteria.poisson_sums``); only it reads that
entry. For Poisson, the ``divisor`` the helpers pass around (gain_ratio's split
information) is the candidate's term scale instead (``criteria.poisson_term_scale``),
which its tolerance scales with.

:mod:`gpu_tree.kernels.cpu` compiles these helpers with ``numba.njit`` and
:mod:`gpu_tree.kernels.cuda` with ``numba.cuda.jit(device=True)``.

Every product that an addition or subtraction reads goes through ``product``: on the
CPU plain ``a * b``; on a GPU libdevice's ``dmul_rn``, which the compiler never fuses with
the addition into one fused multiply-add. NVVM fuses ``a * b + c`` by default (its
``-fma=1``, which numba-cuda gives no way to turn off), rounding once where the CPU
rounds twice: a score one unit in the last place away from the CPU's, enough to turn a
tie or a ``min_impurity_decrease`` boundary the other way. Products by the channels'
power-of-two scales are exact, so fusing them would change nothing; they go through
``product`` all the same, so that tests/kernels/test_split_scan.py can prove that no product of
this file is fused on the GPU.
"""

import math

from .log2 import make_log2

# The criteria, as these helpers number them (CRITERION_CODES maps the names).
GINI, ENTROPY, GAIN_RATIO, CART, MISCLASSIFICATION, SQUARED_ERROR, POISSON = range(7)
CRITERION_CODES = {
    "gini": GINI,
    "entropy": ENTROPY,
    "log_loss": ENTROPY,  # the same tree as entropy (scikit-learn's name)
    "gain_ratio": GAIN_RATIO,
    "cart": CART,
    "misclassification": MISCLASSIFICATION,
    "squared_error": SQUARED_ERROR,
    "poisson": POISSON,
}

# Which statistics a side's value reads.
LEFT, RIGHT, PARENT = range(3)

# The columns of a node's winner row (int64; the score and node weight are float64 bits),
# then the left statistics (n_channels), then the right ones.
WINNER_FEATURE, WINNER_BIN, WINNER_NEXT_BIN, WINNER_MISSING_LEFT = range(4)
WINNER_SCORE, WINNER_NODE_WEIGHT = 4, 5
WINNER_FIXED_COLUMNS = 6


def plain_product(a, b):
    """``a * b``, rounded: the CPU's arithmetic, which never fuses it into an addition."""
    return a * b


def make_split_scan(
    device_function, product, helpers=None, save_scores=False, integer_log2_table_size=0
):
    """The helpers, compiled by ``device_function`` (``njit`` or ``cuda.jit(device=True)``).

    ``product``: a compiled ``a * b`` rounded on its own, never fused into the addition
    that reads it (the module docstring; :func:`plain_product` on the CPU).

    ``save_scores``: :func:`score_feature`'s pass 1 keeps each candidate's result in its
    ``scored`` scratch (then 3 * (n_bins + 1) entries) and pass 2 reads them back instead
    of scoring again: for the CPU's subtree finisher, whose scratch costs nothing; a GPU
    thread keeps three numbers.

    ``integer_log2_table_size``: the entropy criteria's log2 (kernels/log2.py, the same
    bits on every device) looks up the integers below it (unweighted class counts) in a
    table instead of computing them: for the CPU.

    Returns ``(node_totals, score_feature, choose_winner)``: see their docstrings.
    ``helpers`` (a dict, or None) also gets the inner helpers by name, for searches that
    score other candidates with the same arithmetic (``kernels/cpu/categorical.py``).
    """

    log2 = make_log2(device_function, product, integer_log2_table_size)

    @device_function
    def plog2p(p):
        """p log2 p, and 0 for p = 0 (the limit)."""
        if p > 0.0:
            return product(p, log2(p))
        return 0.0

    @device_function
    def run_time(anchor):
        """The constants the helpers pass each other, as run-time values: (LEFT, RIGHT,
        PARENT, False, True, 0, 1), for any run-time integer ``anchor``. numba compiles a
        helper once per literal argument value it is called with: passed as literals,
        these would compile channel() alone in 20 variants, and the kernels several
        times slower (the compiler folds them back to constants all the same)."""
        zero = anchor - anchor
        return LEFT + zero, RIGHT + zero, PARENT + zero, zero != 0, zero == 0, zero, zero + 1

    @device_function
    def channel(c, prefix, total, missing, side, with_missing, scale):
        """Channel ``c`` of a side, real: left (the prefix), right (total - prefix) or the
        parent (total), plus the missing rows' statistics if ``with_missing``."""
        if side == LEFT:
            value = product(float(prefix[c]), scale[c])
        elif side == RIGHT:
            value = product(float(total[c] - prefix[c]), scale[c])
        else:
            value = product(float(total[c]), scale[c])
        if with_missing:
            value += product(float(missing[c]), scale[c])
        return value

    @device_function
    def weight_of(n_classes, prefix, total, missing, side, with_missing, scale):
        """The side's weight: its class totals' sum, or a regression's channel 0."""
        left_side, right_side, parent_side, no, yes, zero, one = run_time(n_classes)
        if n_classes == 0:
            return channel(zero, prefix, total, missing, side, with_missing, scale)
        weight = 0.0
        for c in range(n_classes):
            weight += channel(c, prefix, total, missing, side, with_missing, scale)
        return weight

    @device_function
    def count_of(n_classes, count_channel, prefix, total, missing, side, with_missing, scale):
        """The side's number of rows: the count channel, or the weight (unit weights)."""
        if count_channel >= 0:
            return channel(count_channel, prefix, total, missing, side, with_missing, scale)
        return weight_of(n_classes, prefix, total, missing, side, with_missing, scale)

    @device_function
    def poisson_sums(prefix, total, missing, side, with_missing, scale):
        """(W, S, size) of a side (criteria.poisson_sums): its weight, its sum of w y (y
        not centred: the centre is ``scale``'s last entry) and |sum w (y - centre)| +
        |centre| W."""
        left_side, right_side, parent_side, no, yes, zero, one = run_time(side)
        w = channel(zero, prefix, total, missing, side, with_missing, scale)
        centred = channel(one, prefix, total, missing, side, with_missing, scale)
        centre = scale[scale.shape[0] - 1]
        return w, centred + product(centre, w), abs(centred) + product(abs(centre), abs(w))

    @device_function
    def poisson_positive(prefix, total, missing, side, with_missing, scale, rtol):
        """criteria.poisson_positive: the side's sum of w y is positive."""
        w, s, size = poisson_sums(prefix, total, missing, side, with_missing, scale)
        return s > rtol * size

    @device_function
    def poisson_term(prefix, total, missing, side, with_missing, parent_missing, scale):
        """criteria.poisson_split_terms: S log(m_side / m) of a side, m the parent's mean
        (the parent: total, plus the missing rows if ``parent_missing``)."""
        left_side, right_side, parent_side, no, yes, zero, one = run_time(side)
        w, s, size = poisson_sums(prefix, total, missing, side, with_missing, scale)
        parent_w, parent_s, parent_size = poisson_sums(
            prefix, total, missing, parent_side, parent_missing, scale
        )
        if not (s > 0.0 and w > 0.0 and parent_s > 0.0 and parent_w > 0.0):
            return 0.0
        centred = channel(one, prefix, total, missing, side, with_missing, scale)
        parent_centred = channel(one, prefix, total, missing, parent_side, parent_missing, scale)
        difference = centred / w - parent_centred / parent_w
        return product(s, math.log1p(difference / (parent_s / parent_w)))

    @device_function
    def poisson_scale(prefix, total, missing, to_left, to_right, use_missing, scale):
        """criteria.poisson_term_scale of a candidate: its terms' sizes times the parent's
        size / S."""
        left_side, right_side, parent_side, no, yes, zero, one = run_time(scale.shape[0])
        left = poisson_term(prefix, total, missing, left_side, to_left, use_missing, scale)
        right = poisson_term(prefix, total, missing, right_side, to_right, use_missing, scale)
        parent_w, parent_s, parent_size = poisson_sums(
            prefix, total, missing, parent_side, use_missing, scale
        )
        ratio = parent_size / parent_s if parent_s > 0.0 else 0.0
        return (abs(left) + abs(right)) * ratio

    @device_function
    def output_squares(n_outputs, prefix, total, missing, side, with_missing, scale):
        """The sum over the outputs of (sum w y_k)^2 of a side (regression: channels
        1..n_outputs), in output order (criteria.weighted_squared_error_term)."""
        squares = 0.0
        for k in range(n_outputs):
            s = channel(1 + k, prefix, total, missing, side, with_missing, scale)
            squares += product(s, s)
        return squares

    @device_function
    def class_impurity(criterion, first, end, prefix, total, missing, side, with_missing, scale):
        """w * I(side) of the classes in channels [first, end) (one output's),
        w their weight (criteria.weighted_gini, weighted_entropy, ...)."""
        w = 0.0
        for c in range(first, end):
            w += channel(c, prefix, total, missing, side, with_missing, scale)
        if criterion == ENTROPY or criterion == GAIN_RATIO:
            result = plog2p(w)
            for c in range(first, end):
                result -= plog2p(channel(c, prefix, total, missing, side, with_missing, scale))
            return result
        if criterion == GINI:
            squares = 0.0
            for c in range(first, end):
                v = channel(c, prefix, total, missing, side, with_missing, scale)
                squares += product(v, v)
            return w - (squares / w if w > 0.0 else 0.0)
        largest = -math.inf  # misclassification: w - max_i c_i
        for c in range(first, end):
            largest = max(largest, channel(c, prefix, total, missing, side, with_missing, scale))
        return w - largest

    @device_function
    def weighted_impurity(
        criterion, n_classes, outputs, prefix, total, missing, side, with_missing, scale
    ):
        """w * I(side) (criteria.weighted_gini, weighted_entropy, ...), or for regression
        -(sum w y)^2 / w (criteria.weighted_squared_error_term). Several outputs
        (``outputs``: one entry per output; a classifier's the end of each output's
        class channels): the mean of the outputs' terms, summed in output order."""
        left_side, right_side, parent_side, no, yes, zero, one = run_time(n_classes)
        n_outputs = outputs.shape[0]
        if criterion == POISSON:
            return 0.0  # its score is written per split (weighted_score)
        if criterion == SQUARED_ERROR:
            w = channel(zero, prefix, total, missing, side, with_missing, scale)
            squares = output_squares(n_outputs, prefix, total, missing, side, with_missing, scale)
            return -(squares / w) / n_outputs if w > 0.0 else -0.0
        if n_outputs == 1:
            return class_impurity(
                criterion, zero, n_classes, prefix, total, missing, side, with_missing, scale
            )
        result = 0.0
        first = zero
        for k in range(n_outputs):
            result += class_impurity(
                criterion, first, outputs[k], prefix, total, missing, side, with_missing, scale
            )
            first = outputs[k]
        return result / n_outputs

    @device_function
    def split_info(left_fraction):
        return -plog2p(left_fraction) - plog2p(1.0 - left_fraction)

    @device_function
    def weighted_score(
        criterion,
        n_classes,
        outputs,
        prefix,
        total,
        missing,
        missing_left,
        use_missing,
        scale,
        parent,
        rtol,
    ):
        """The candidate's score times its node's weight (criteria.weighted_split_score):
        left = prefix, right = total - prefix, the missing rows (if ``use_missing``) on
        the left or right; ``parent``: the W of the parent (impurity criteria) or its
        weight (cart, gain_ratio's fraction). Poisson: -inf where a side's sum of w y is
        not positive (``rtol``: criteria.poisson_positive)."""
        left_side, right_side, parent_side, no, yes, zero, one = run_time(n_classes)
        to_left = use_missing and missing_left
        to_right = use_missing and not missing_left
        if criterion == POISSON:  # criteria.poisson_split
            if not (
                poisson_positive(prefix, total, missing, left_side, to_left, scale, rtol)
                and poisson_positive(prefix, total, missing, right_side, to_right, scale, rtol)
            ):
                return -math.inf
            return poisson_term(
                prefix, total, missing, left_side, to_left, use_missing, scale
            ) + poisson_term(prefix, total, missing, right_side, to_right, use_missing, scale)
        if criterion == CART:
            w_left = weight_of(n_classes, prefix, total, missing, left_side, to_left, scale)
            w_right = weight_of(n_classes, prefix, total, missing, right_side, to_right, scale)
            w = w_left + w_right
            distance = 0.0
            for c in range(n_classes):
                p_left = channel(c, prefix, total, missing, left_side, to_left, scale)
                p_left = p_left / w_left if w_left > 0.0 else 0.0
                p_right = channel(c, prefix, total, missing, right_side, to_right, scale)
                p_right = p_right / w_right if w_right > 0.0 else 0.0
                distance += abs(p_left - p_right)
            f_left = w_left / w if w > 0.0 else 0.0
            f_right = w_right / w if w > 0.0 else 0.0
            return product(parent[1], 2.0 * f_left * f_right * distance)
        decrease = (
            parent[0]
            - weighted_impurity(
                criterion, n_classes, outputs, prefix, total, missing, left_side, to_left, scale
            )
            - weighted_impurity(
                criterion, n_classes, outputs, prefix, total, missing, right_side, to_right, scale
            )
        )
        if criterion == GAIN_RATIO:
            w_left = weight_of(n_classes, prefix, total, missing, left_side, to_left, scale)
            fraction = w_left / parent[1] if parent[1] > 0.0 else 0.0
            info = split_info(fraction)
            return decrease / info if info > 0.0 else 0.0
        return decrease

    @device_function
    def divisor_of(criterion, n_classes, prefix, total, missing, missing_left, use_missing, scale):
        """gain_ratio: the candidate's split information (splitting._divisor); Poisson: its
        term scale (criteria.poisson_term_scale, what tolerance scales with); else 1."""
        left_side, right_side, parent_side, no, yes, zero, one = run_time(n_classes)
        to_left = use_missing and missing_left
        to_right = use_missing and not missing_left
        if criterion == POISSON:
            return poisson_scale(prefix, total, missing, to_left, to_right, use_missing, scale)
        if criterion != GAIN_RATIO:
            return 1.0
        to_left = use_missing and missing_left
        to_right = use_missing and not missing_left
        w_left = weight_of(n_classes, prefix, total, missing, left_side, to_left, scale)
        w = w_left + weight_of(n_classes, prefix, total, missing, right_side, to_right, scale)
        return split_info(w_left / (w if w > 0.0 else 1.0))

    @device_function
    def squared_error_scale(n_outputs, weight, squares):
        """The size of a regression node's term (criteria.score_tolerance): the mean over
        the outputs of (sum w y_k)^2 / w, from their ``squares`` (:func:`output_squares`)."""
        return squares / weight / n_outputs if weight > 0.0 else 0.0

    @device_function
    def tolerance(criterion, weight, term_scale, best, divisor, rtol):
        """criteria.score_tolerance for a node of this (real) weight and, for regression,
        size of its term (:func:`squared_error_scale`); ``divisor``: gain_ratio's split
        information of ``best``, or Poisson's term scale of ``best`` (:func:`divisor_of`)."""
        w = abs(weight)
        if criterion == POISSON:
            scale = divisor
        elif criterion == ENTROPY or criterion == GAIN_RATIO:
            scale = product(w, 1.0 + abs(log2(w if w > 0.0 else 1.0)))
            if criterion == GAIN_RATIO and divisor > 0.0:
                scale = scale / divisor
        elif criterion == SQUARED_ERROR:
            scale = term_scale
        else:
            scale = w
        magnitude = abs(best) if math.isfinite(best) else 0.0
        return product(rtol, scale + magnitude)

    @device_function
    def monotonic_value(n_classes, prefix, total, missing, side, with_missing, scale):
        """criteria.monotonic_value of a side: channel 1 over the side's weight (P(class
        1) of a binary classifier, a regression's centred mean), 0 where it has none."""
        left_side, right_side, parent_side, no, yes, zero, one = run_time(n_classes)
        weight = weight_of(n_classes, prefix, total, missing, side, with_missing, scale)
        value = channel(one, prefix, total, missing, side, with_missing, scale)
        return value / weight if weight > 0.0 else 0.0

    @device_function
    def monotonic_admissible(cst, lower, upper, left_value, right_value):
        """criteria.monotonic_admissible: the sides' values ordered by the feature's
        constraint ``cst`` (equal allowed) and within the node's bounds [lower, upper]."""
        ordered = (left_value - right_value) * cst <= 0.0
        within_lower = left_value >= lower and right_value >= lower
        within_upper = left_value <= upper and right_value <= upper
        return ordered and within_lower and within_upper

    @device_function
    def allowed(
        n_classes,
        count_channel,
        prefix,
        total,
        missing,
        to_left,
        to_right,
        scale,
        msl,
        mwl,
        cst,
        lower,
        upper,
    ):
        """The leaf-size limits on both sides, and for a feature of monotonicity
        constraint ``cst`` (+1 or -1; 0: none, nothing read) in a node bounded by [lower,
        upper], the constraint on the sides' values (splitting._allowed)."""
        left_side, right_side, parent_side, no, yes, zero, one = run_time(n_classes)
        if msl > 1:
            if (
                count_of(
                    n_classes, count_channel, prefix, total, missing, left_side, to_left, scale
                )
                < msl
            ):
                return False
            if (
                count_of(
                    n_classes, count_channel, prefix, total, missing, right_side, to_right, scale
                )
                < msl
            ):
                return False
        if mwl > 0.0:
            if weight_of(n_classes, prefix, total, missing, left_side, to_left, scale) < mwl:
                return False
            if weight_of(n_classes, prefix, total, missing, right_side, to_right, scale) < mwl:
                return False
        if cst != 0:
            return monotonic_admissible(
                cst,
                lower,
                upper,
                monotonic_value(n_classes, prefix, total, missing, left_side, to_left, scale),
                monotonic_value(n_classes, prefix, total, missing, right_side, to_right, scale),
            )
        return True

    @device_function
    def candidate(
        criterion,
        n_classes,
        outputs,
        count_channel,
        prefix,
        total,
        missing,
        use_missing,
        has_missing,
        scale,
        parent,
        msl,
        mwl,
        cst,
        lower,
        upper,
        rtol,
        out,
    ):
        """Score the candidate whose left side is ``prefix``: ``out`` gets its score (-inf
        where not allowed), its split information (gain_ratio) and whether the missing
        rows go left (splitting._score_sides). ``cst``, ``lower``, ``upper``: the
        feature's monotonicity constraint and the node's bounds (:func:`allowed`)."""
        left_side, right_side, parent_side, no, yes, zero, one = run_time(n_classes)
        values_right = (
            count_of(n_classes, count_channel, prefix, total, missing, right_side, no, scale) > 0.0
        )
        if not use_missing:
            score = -math.inf
            if values_right and allowed(
                n_classes,
                count_channel,
                prefix,
                total,
                missing,
                no,
                no,
                scale,
                msl,
                mwl,
                cst,
                lower,
                upper,
            ):
                score = weighted_score(
                    criterion,
                    n_classes,
                    outputs,
                    prefix,
                    total,
                    missing,
                    no,
                    no,
                    scale,
                    parent,
                    rtol,
                )
            out[0] = score
            out[1] = divisor_of(criterion, n_classes, prefix, total, missing, no, no, scale)
            out[2] = 0.0
            return
        score_left = -math.inf
        if values_right and allowed(
            n_classes,
            count_channel,
            prefix,
            total,
            missing,
            yes,
            no,
            scale,
            msl,
            mwl,
            cst,
            lower,
            upper,
        ):
            score_left = weighted_score(
                criterion, n_classes, outputs, prefix, total, missing, yes, yes, scale, parent, rtol
            )
        score_right = -math.inf
        if (values_right or has_missing) and allowed(
            n_classes,
            count_channel,
            prefix,
            total,
            missing,
            no,
            yes,
            scale,
            msl,
            mwl,
            cst,
            lower,
            upper,
        ):
            score_right = weighted_score(
                criterion, n_classes, outputs, prefix, total, missing, no, yes, scale, parent, rtol
            )
        divisor_left = divisor_of(criterion, n_classes, prefix, total, missing, yes, yes, scale)
        divisor_right = divisor_of(criterion, n_classes, prefix, total, missing, no, yes, scale)
        more_rows_left = count_of(
            n_classes, count_channel, prefix, total, missing, left_side, no, scale
        ) >= count_of(n_classes, count_channel, prefix, total, missing, right_side, no, scale)
        better_left = score_left > score_right
        best = max(score_left, score_right)
        divisor = divisor_left if better_left else divisor_right
        # The tie's parent is the feature's: its present and missing rows.
        weight = parent[1]
        term_scale = 0.0
        if criterion == SQUARED_ERROR:
            n_outputs = outputs.shape[0]
            squares = output_squares(n_outputs, prefix, total, missing, parent_side, yes, scale)
            term_scale = squared_error_scale(n_outputs, weight, squares)
        tied = min(score_left, score_right) >= best - tolerance(
            criterion, weight, term_scale, best, divisor, rtol
        )
        missing_left = more_rows_left if tied else better_left
        out[0] = score_left if missing_left else score_right
        out[1] = divisor_left if missing_left else divisor_right
        out[2] = 1.0 if missing_left else 0.0

    @device_function
    def row_count(row, n_classes, count_channel):
        """Rows in an integer statistics row (a histogram bin, the missing rows): the
        count channel, else the class totals' or the regression weight's integers."""
        if count_channel >= 0:
            return row[count_channel]
        if n_classes == 0:
            return row[0]
        count = row[0]
        for c in range(1, n_classes):
            count += row[c]
        return count

    @device_function
    def bin_rows(hist, slot, f, b, n_classes, count_channel):
        """:func:`row_count` of histogram bin ``hist[slot, f, b]``, read in place: a view
        per bin would cost the CPU its reference counting, more than the read."""
        if count_channel >= 0:
            return hist[slot, f, b, count_channel]
        count = hist[slot, f, b, 0]
        for c in range(1, n_classes):  # none for regression (n_classes 0): its weight
            count += hist[slot, f, b, c]
        return count

    @device_function
    def node_totals(
        hist, slot, feature, missing, use_missing, n_bins, scale, n_classes, outputs, out
    ):
        """``out`` gets the node's real weight and (regression) the size of its term
        (:func:`squared_error_scale`): ``feature``'s present rows plus its missing ones
        (every feature's hold all the node's rows; the vectorised search takes feature
        0's; a search of the drawn features only, whose histograms alone are built, one
        of those)."""
        n_weight = n_classes if n_classes > 0 else 1
        n_outputs = outputs.shape[0]
        weight = 0.0
        squares = 0.0
        for c in range(n_weight + (n_outputs if n_classes == 0 else 0)):
            value = 0
            for b in range(n_bins):
                value += hist[slot, feature, b, c]
            if use_missing:
                value += missing[slot, feature, c]
            if c < n_weight:
                weight += product(float(value), scale[c])
            else:
                s = product(float(value), scale[c])
                squares += product(s, s)
        out[0] = weight
        out[1] = squared_error_scale(n_outputs, weight, squares)

    @device_function
    def score_feature(
        hist,
        slot,
        f,
        n_bins,
        missing,
        use_missing,
        usable,
        prefix,
        total,
        scale,
        criterion,
        n_classes,
        outputs,
        count_channel,
        msl,
        mwl,
        cst,
        lower,
        upper,
        rtol,
        node,
        parent,
        scored,
        result,
    ):
        """The best candidate of one (node, feature): ``result`` gets its score (-inf: none
        allowed), split information (gain_ratio, else 1), missing side (1.0: left) and bin
        (-1: the feature holds no present row). ``total`` gets the feature's present
        rows' statistics. ``missing``: the feature's missing rows (read if
        ``use_missing``); ``usable``: the feature mask's entry; ``cst``: the feature's
        monotonicity constraint (0: none) and ``lower``, ``upper`` the node's bounds
        (:func:`allowed`); ``node``: the node's real
        weight and weighted sum (:func:`node_totals`); ``prefix``, ``parent`` (2) and
        ``scored`` (3; 3 * (n_bins + 1) with ``save_scores``) are scratch."""
        left_side, right_side, parent_side, no, yes, zero, one = run_time(n_classes)
        n_channels = hist.shape[3]
        for c in range(n_channels):
            total[c] = 0
        for b in range(n_bins):
            for c in range(n_channels):
                total[c] += hist[slot, f, b, c]
        result[0] = -math.inf
        result[1] = 1.0
        result[2] = 0.0
        result[3] = -1.0
        if not usable:
            return
        has_missing = use_missing and row_count(missing, n_classes, count_channel) > 0
        parent[1] = weight_of(n_classes, prefix, total, missing, parent_side, use_missing, scale)
        parent[0] = 0.0
        if criterion != CART:
            parent[0] = weighted_impurity(
                criterion,
                n_classes,
                outputs,
                prefix,
                total,
                missing,
                parent_side,
                use_missing,
                scale,
            )
        # Pass 1: the best score (the first maximum) and its split information; pass 2:
        # the first candidate that ties with it.
        best = -math.inf
        best_divisor = 1.0
        limit = -math.inf
        for sweep in range(2):
            found = False
            for c in range(n_channels):
                prefix[c] = 0
            for b in range(n_bins):
                if bin_rows(hist, slot, f, b, n_classes, count_channel) == 0:
                    continue
                kept = 3 * (b + 1)  # where pass 1 keeps bin b's result (save_scores)
                if save_scores and sweep == 1:
                    if scored[kept] >= limit:
                        result[0] = scored[kept]
                        result[1] = scored[kept + 1]
                        result[2] = scored[kept + 2]
                        result[3] = float(b)
                        return
                    continue
                for c in range(n_channels):
                    prefix[c] += hist[slot, f, b, c]
                candidate(
                    criterion,
                    n_classes,
                    outputs,
                    count_channel,
                    prefix,
                    total,
                    missing,
                    use_missing,
                    has_missing,
                    scale,
                    parent,
                    msl,
                    mwl,
                    cst,
                    lower,
                    upper,
                    rtol,
                    scored,
                )
                if sweep == 0:
                    if save_scores:
                        scored[kept] = scored[0]
                        scored[kept + 1] = scored[1]
                        scored[kept + 2] = scored[2]
                    if not found or scored[0] > best:
                        best = scored[0]
                        best_divisor = scored[1]
                        found = True
                elif scored[0] >= limit:
                    result[0] = scored[0]
                    result[1] = scored[1]
                    result[2] = scored[2]
                    result[3] = float(b)
                    return
            if not found:
                return  # no present row
            limit = best - tolerance(criterion, node[0], node[1], best, best_divisor, rtol)

    @device_function
    def choose_winner(
        hist,
        slot,
        n_bins,
        missing,
        use_missing,
        results,
        totals,
        criterion,
        n_classes,
        count_channel,
        rtol,
        node,
        winner,
        winner_values,
    ):
        """The node's split from its features' best candidates (``results`` (n_features,
        4) and ``totals`` (n_features, n_channels) from :func:`score_feature`): the first
        feature within the tolerance of the best, written to ``winner`` (int64, the
        WINNER_* columns then the left and right statistics) and ``winner_values`` (the
        same memory as float64, for the score and the node weight). ``missing``: the
        node's missing rows, (n_features, n_channels)."""
        n_features = hist.shape[1]
        n_channels = hist.shape[3]
        best = results[0, 0]
        at = 0
        for f in range(1, n_features):
            if results[f, 0] > best:
                best = results[f, 0]
                at = f
        limit = best - tolerance(criterion, node[0], node[1], best, results[at, 1], rtol)
        chosen = at
        for f in range(n_features):
            if results[f, 0] >= limit:
                chosen = f
                break
        split_bin = int(results[chosen, 3])
        left = winner[WINNER_FIXED_COLUMNS : WINNER_FIXED_COLUMNS + n_channels]
        right = winner[WINNER_FIXED_COLUMNS + n_channels : WINNER_FIXED_COLUMNS + 2 * n_channels]
        for c in range(n_channels):
            left[c] = 0
            for b in range(split_bin + 1):
                left[c] += hist[slot, chosen, b, c]
            right[c] = totals[chosen, c] - left[c]
        next_bin = -1
        for b in range(split_bin + 1, n_bins):
            if bin_rows(hist, slot, chosen, b, n_classes, count_channel) != 0:
                next_bin = b
                break
        if use_missing:
            goes_left = results[chosen, 2] != 0.0
            for c in range(n_channels):
                if goes_left:
                    left[c] += missing[chosen, c]
                else:
                    right[c] += missing[chosen, c]
        else:  # missing values never seen here: at prediction they follow the bigger child
            goes_left = row_count(left, n_classes, count_channel) >= row_count(
                right, n_classes, count_channel
            )
        winner[WINNER_FEATURE] = chosen
        winner[WINNER_BIN] = split_bin
        winner[WINNER_NEXT_BIN] = next_bin
        winner[WINNER_MISSING_LEFT] = 1 if goes_left else 0
        winner_values[WINNER_SCORE] = results[chosen, 0]
        winner_values[WINNER_NODE_WEIGHT] = node[0]

    if helpers is not None:
        helpers.update(
            run_time=run_time,
            plog2p=plog2p,
            channel=channel,
            weight_of=weight_of,
            count_of=count_of,
            weighted_impurity=weighted_impurity,
            split_info=split_info,
            tolerance=tolerance,
            candidate=candidate,
            row_count=row_count,
        )
    return node_totals, score_feature, choose_winner
