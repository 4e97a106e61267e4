"""Split criteria checked against published worked examples, small hand-computed ones
and hand formulas.

Sources: Zaki and Meira, *Data Mining and Machine Learning*, 2nd ed., 2020, chapter 19
(entropy eq. 19.3, information gain eq. 19.5, Gini, the CART measure, the midpoint
candidates of Algorithm 19.2); Quinlan, "Induction of decision trees", 1986 (ID3) on
Mitchell's PlayTennis table (*Machine Learning*, 1997, chapter 3, whose figures these
tests reproduce); Quinlan, *C4.5*, 1993 (gain ratio); misclassification error as in
Hastie, Tibshirani and Friedman, *The Elements of Statistical Learning*, section 9.2.3.
The heights/genders, midpoint and e-mail examples are small hand-computed cases.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _oracles import python_impurity

import gpu_tree
from gpu_tree.backends.cpu import CPUExactBackend, RowData
from gpu_tree.data.binning import feature_edges
from gpu_tree.growing.criteria import (
    CLASSIFICATION_CRITERIA,
    REGRESSION_CRITERIA,
    SCORE_RTOL,
    StatsLayout,
    branch_split_info,
    cart_measure,
    check_criterion,
    entropy,
    gini,
    misclassification,
    multiway_information_gain,
    node_impurity,
    score_tolerance,
    split_info,
    split_score,
)

TWO_CLASSES = StatsLayout(is_classification=True, n_classes=2, has_count_channel=False)


# ---------------------------------------------------------------------------------------
# Mitchell's PlayTennis table (ID3's worked example)
# ---------------------------------------------------------------------------------------

# day, outlook, temperature, humidity, wind, play   (Mitchell 1997, Table 3.2)
TENNIS = [
    (1, "sunny", "hot", "high", "weak", "no"),
    (2, "sunny", "hot", "high", "strong", "no"),
    (3, "overcast", "hot", "high", "weak", "yes"),
    (4, "rain", "mild", "high", "weak", "yes"),
    (5, "rain", "cool", "normal", "weak", "yes"),
    (6, "rain", "cool", "normal", "strong", "no"),
    (7, "overcast", "cool", "normal", "strong", "yes"),
    (8, "sunny", "mild", "high", "weak", "no"),
    (9, "sunny", "cool", "normal", "weak", "yes"),
    (10, "rain", "mild", "normal", "weak", "yes"),
    (11, "sunny", "mild", "normal", "strong", "yes"),
    (12, "overcast", "mild", "high", "strong", "yes"),
    (13, "overcast", "hot", "normal", "weak", "yes"),
    (14, "rain", "mild", "high", "strong", "no"),
]
TENNIS_COLUMNS = {"outlook": 1, "temperature": 2, "humidity": 3, "wind": 4}


def _branch_counts(rows, attribute):
    """Per-value [yes, no] counts of ``attribute``: shape (n_values, 2)."""
    column = TENNIS_COLUMNS[attribute]
    values = sorted({row[column] for row in rows})
    counts = np.zeros((len(values), 2))
    for row in rows:
        counts[values.index(row[column]), 0 if row[5] == "yes" else 1] += 1
    return counts


def _truncate3(x):
    """The published three-decimal figures are truncations (see the tennis tests)."""
    return math.floor(x * 1000) / 1000


def test_tennis_table_class_totals_and_root_entropy():
    counts = _branch_counts(TENNIS, "wind").sum(axis=0)
    np.testing.assert_array_equal(counts, [9, 5])  # S = [9+, 5-]
    assert float(entropy(counts)) == pytest.approx(0.940, abs=5e-4)  # Mitchell: 0.940
    # S_weak = [6+, 2-] -> 0.811, S_strong = [3+, 3-] -> 1
    np.testing.assert_array_equal(_branch_counts(TENNIS, "wind"), [[3, 3], [6, 2]])
    assert float(entropy(np.array([6.0, 2.0]))) == pytest.approx(0.811, abs=5e-4)
    assert float(entropy(np.array([3.0, 3.0]))) == 1.0


# Mitchell's root gains. Exact values: outlook 0.24675, humidity 0.15184,
# wind 0.04813, temperature 0.02922. Rounded to three decimals outlook would read 0.247
# and humidity 0.152: the published figures are truncations (or come from rounded
# intermediates such as H(S) = 0.940), so the check is "truncated to three decimals equals
# the published figure", which also bounds the difference by 1e-3.
ROOT_GAINS = {"outlook": 0.246, "humidity": 0.151, "wind": 0.048, "temperature": 0.029}
EXACT_ROOT_GAINS = {
    "outlook": 0.246749819774,
    "humidity": 0.151835501362,
    "wind": 0.048127030408,
    "temperature": 0.029222565659,
}


@pytest.mark.parametrize("attribute", sorted(ROOT_GAINS))
def test_tennis_root_information_gains(attribute):
    gain = float(multiway_information_gain(_branch_counts(TENNIS, attribute)))
    assert gain == pytest.approx(EXACT_ROOT_GAINS[attribute], abs=1e-11)
    assert abs(gain - ROOT_GAINS[attribute]) < 1e-3
    assert _truncate3(gain) == pytest.approx(ROOT_GAINS[attribute], abs=1e-12)


def test_tennis_outlook_has_the_largest_root_gain():
    gains = {a: float(multiway_information_gain(_branch_counts(TENNIS, a))) for a in ROOT_GAINS}
    assert max(gains, key=gains.get) == "outlook"
    assert sorted(gains, key=gains.get, reverse=True) == [
        "outlook",
        "humidity",
        "wind",
        "temperature",
    ]


# Sunny branch, S = [2+, 3-] (days 1, 2, 8, 9, 11). Exact: humidity 0.97095 (Mitchell
# 0.970), temperature 0.57095 (Mitchell 0.570, where 0.971 - 2/5 reads 0.571), wind
# 0.01997 (Mitchell 0.019, where rounding would give 0.020): truncations again.
SUNNY_GAINS = {"humidity": 0.970, "temperature": 0.570, "wind": 0.019}


@pytest.mark.parametrize("attribute", sorted(SUNNY_GAINS))
def test_tennis_sunny_branch_information_gains(attribute):
    sunny = [row for row in TENNIS if row[1] == "sunny"]
    assert [row[0] for row in sunny] == [1, 2, 8, 9, 11]
    assert float(entropy(_branch_counts(sunny, "wind").sum(axis=0))) == pytest.approx(
        0.971, abs=5e-4
    )
    gain = float(multiway_information_gain(_branch_counts(sunny, attribute)))
    assert abs(gain - SUNNY_GAINS[attribute]) < 1e-3
    assert _truncate3(gain) == pytest.approx(SUNNY_GAINS[attribute], abs=1e-12)


def test_tennis_sunny_temperature_by_hand():
    # hot [0+, 2-], mild [1+, 1-], cool [1+, 0-]: 0.971 - 2/5 * 0 - 2/5 * 1 - 1/5 * 0
    h = -(2 / 5) * math.log2(2 / 5) - (3 / 5) * math.log2(3 / 5)
    counts = np.array([[0.0, 2.0], [1.0, 1.0], [1.0, 0.0]])
    assert float(multiway_information_gain(counts)) == pytest.approx(h - 2 / 5, abs=1e-14)


def test_multiway_gain_with_two_branches_is_the_binary_entropy_decrease():
    rng = np.random.default_rng(0)
    for _ in range(20):
        left, right = rng.integers(0, 6, size=(2, 3)).astype(float) + np.array([1.0, 0, 0])
        multi = float(multiway_information_gain(np.stack([left, right])))
        layout = StatsLayout(True, 3, False)
        assert multi == pytest.approx(float(split_score("entropy", layout, left, right)), abs=1e-14)


def test_multiway_gain_batched_over_leading_axes():
    counts = np.stack([_branch_counts(TENNIS, a) for a in ("humidity", "wind")])  # (2, 2, 2)
    gains = multiway_information_gain(counts)
    assert gains.shape == (2,)
    np.testing.assert_allclose(
        gains, [EXACT_ROOT_GAINS["humidity"], EXACT_ROOT_GAINS["wind"]], atol=1e-11
    )


# ---------------------------------------------------------------------------------------
# A hand-computed example: heights / genders, N * gain form
# ---------------------------------------------------------------------------------------

HEIGHTS = np.array([180, 170, 160, 170, 170, 160, 170], dtype=float)
GENDERS = np.array(["m", "m", "f", "f", "m", "f", "m"])


def _side_counts(threshold):
    """[f, m] counts of the rows with height <= threshold and > threshold."""
    left = HEIGHTS <= threshold
    count = [[np.sum(side & (GENDERS == g)) for g in ("f", "m")] for side in (left, ~left)]
    return np.array(count[0], dtype=float), np.array(count[1], dtype=float)


def test_heights_node_entropies():
    left, right = _side_counts(165)
    np.testing.assert_array_equal(left, [2, 0])
    np.testing.assert_array_equal(right, [1, 4])
    # H(V) ~ 0.98 to two decimals truncated. Exact 0.98523 rounds to 0.99 (and so does
    # p = {0.57, 0.43}, giving 0.9858): the figure is a truncation, like the tennis ones.
    h = float(entropy(left + right))
    assert abs(h - 0.98) < 0.01
    assert math.floor(h * 100) / 100 == pytest.approx(0.98, abs=1e-12)
    assert float(entropy(left)) == 0.0
    assert round(float(entropy(right)), 2) == 0.72  # H(V(R)) ~ 0.72


def test_heights_gain_at_165():
    # I(x <= 165) = 7 * H(V) - 2 * H(V(L)) - 5 * H(V(R)): with entropies rounded to two
    # decimals 7 * 0.98 - 2 * 0 - 5 * 0.72 = 3.26, and the exact value is
    # 7 * 0.98523 - 5 * 0.72193 = 3.28696, i.e. 3.29, not 3.92 (its digits transposed).
    left, right = _side_counts(165)
    n_gain = 7 * float(split_score("entropy", TWO_CLASSES, left, right))
    expected = 7 * (-(3 / 7) * math.log2(3 / 7) - (4 / 7) * math.log2(4 / 7)) - 5 * (
        -0.8 * math.log2(0.8) - 0.2 * math.log2(0.2)
    )
    assert n_gain == pytest.approx(expected, abs=1e-13)
    assert round(n_gain, 2) == 3.29
    assert abs(n_gain - 3.92) > 0.6  # 3.92, its digits transposed, is not what it gives


def test_heights_gain_at_175():
    # I(x <= 175) = 7 * 0.98 - 6 * 1 - 1 * 0 = 0.9 with H(V) truncated; exact 0.8966
    # (0.86 with the rounded 0.98), so 0.90 to two decimals.
    left, right = _side_counts(175)
    np.testing.assert_array_equal(left, [3, 3])
    np.testing.assert_array_equal(right, [0, 1])
    n_gain = 7 * float(split_score("entropy", TWO_CLASSES, left, right))
    assert n_gain == pytest.approx(0.8966, abs=1e-4)
    assert round(n_gain, 2) == 0.90
    # 165 is the better split, so Zaki and Meira's Algorithm 19.2 keeps it.
    assert n_gain < 7 * float(split_score("entropy", TWO_CLASSES, *_side_counts(165)))


@pytest.mark.parametrize("splitter", ["hist", "exact"])
def test_heights_stump_splits_at_165(splitter):
    clf = gpu_tree.DecisionTreeClassifier(criterion="entropy", max_depth=1, splitter=splitter)
    clf.fit(HEIGHTS[:, None], GENDERS)
    tree = clf.tree_
    assert tree.node_count == 3
    assert tree.feature[0] == 0
    assert tree.threshold[0] == 165.0
    np.testing.assert_array_equal(tree.n_node_samples, [7, 2, 5])
    # value rows are [P(f), P(m)] (classes_ sorted): the leaves' class fractions
    np.testing.assert_array_equal(clf.classes_, ["f", "m"])
    np.testing.assert_allclose(tree.value[1, 0], [1.0, 0.0])
    np.testing.assert_allclose(tree.value[2, 0], [0.2, 0.8])
    np.testing.assert_allclose(tree.impurity, [0.98522813603, 0.0, 0.72192809489], atol=1e-10)


# ---------------------------------------------------------------------------------------
# Midpoint candidates V(1), V(2) of a small data set (Zaki and Meira, Algorithm 19.2)
# ---------------------------------------------------------------------------------------

MIDPOINT_X = np.array([[1, 5], [3, 4], [1, 6], [5, 5], [4, 8]], dtype=float)
MIDPOINT_Y = np.array([1, 0, 1, 1, 1])
V = {0: [2.0, 3.5, 4.5], 1: [4.5, 5.5, 7.0]}


@pytest.mark.parametrize("feature", [0, 1])
def test_feature_edges_are_the_midpoints(feature):
    edges = feature_edges(MIDPOINT_X[:, feature], max_bins=256)
    np.testing.assert_array_equal(edges, V[feature])
    # With exactly as many bins as distinct values the edges are still the midpoints.
    np.testing.assert_array_equal(feature_edges(MIDPOINT_X[:, feature], max_bins=4), V[feature])


def test_exact_backend_candidates_are_the_midpoints():
    layout = StatsLayout(True, 2, False)
    rows = RowData(layout=layout, weight=np.ones(5), y_class=MIDPOINT_Y.astype(np.int64))
    backend = CPUExactBackend(MIDPOINT_X, rows)
    hist, lower, upper, code, missing = backend.compact_histograms(np.array([0]))
    assert not missing.any()  # no missing values here
    assert hist.shape == (1, 2, 4, 2)
    assert code is None  # exact mode's slots are values, not bins
    np.testing.assert_array_equal(lower, upper)
    for feature in (0, 1):
        values = lower[0, feature]
        np.testing.assert_array_equal(values, np.unique(MIDPOINT_X[:, feature]))
        np.testing.assert_array_equal((values[:-1] + values[1:]) / 2, V[feature])
    # Per-value class counts: feature 0 values 1, 3, 4, 5 hold [0,2], [1,0], [0,1], [0,1].
    np.testing.assert_array_equal(hist[0, 0], [[0, 2], [1, 0], [0, 1], [0, 1]])
    np.testing.assert_array_equal(hist[0, 1], [[1, 0], [0, 2], [0, 1], [0, 1]])


@pytest.mark.parametrize("splitter", ["hist", "exact"])
@pytest.mark.parametrize("feature", [0, 1])
@pytest.mark.parametrize("which", [0, 1, 2])
def test_each_midpoint_is_a_threshold(splitter, feature, which):
    # Labels separated perfectly at the chosen midpoint make it the unique best split.
    v = V[feature][which]
    X = MIDPOINT_X[:, [feature]]
    y = (X[:, 0] <= v).astype(int)
    clf = gpu_tree.DecisionTreeClassifier(max_depth=1, splitter=splitter).fit(X, y)
    assert clf.tree_.node_count == 3
    assert clf.tree_.threshold[0] == v


@pytest.mark.parametrize("splitter", ["hist", "exact"])
def test_midpoint_dataset_stump(splitter):
    # The data set D: only (3, 4) is class 0. Feature 0 isolates it by x <= 2 and x <= 3.5
    # together; feature 1 isolates it at x2 <= 4.5 (gain H(1/5)), the only perfect split.
    clf = gpu_tree.DecisionTreeClassifier(criterion="entropy", splitter=splitter, max_depth=1)
    clf.fit(MIDPOINT_X, MIDPOINT_Y)
    assert clf.tree_.feature[0] == 1
    assert clf.tree_.threshold[0] == 4.5
    np.testing.assert_array_equal(clf.predict(MIDPOINT_X), MIDPOINT_Y)


# ---------------------------------------------------------------------------------------
# A hand-computed example: 8 e-mails (4 spam, 4 non-spam), N * gain
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("left", "right", "n_gain"),
    [([4, 0], [0, 4], 8.0), ([2, 2], [2, 2], 0.0)],
    ids=["split1-perfect", "split2-useless"],
)
def test_eight_emails(left, right, n_gain):
    left = np.array(left, dtype=float)
    right = np.array(right, dtype=float)
    assert 8 * float(entropy(left + right)) == 8.0  # N * H(V) = 8 * 1
    assert 8 * float(split_score("entropy", TWO_CLASSES, left, right)) == n_gain
    assert 8 * float(split_score("log_loss", TWO_CLASSES, left, right)) == n_gain


# ---------------------------------------------------------------------------------------
# Impurity extremes (Zaki and Meira ch. 19; ESL section 9.2.3)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", range(2, 11))
def test_impurity_maxima_at_uniform_distribution(k):
    uniform = np.full(k, 3.0)
    assert float(gini(uniform)) == pytest.approx((k - 1) / k, abs=1e-15)
    assert float(entropy(uniform)) == pytest.approx(math.log2(k), abs=1e-14)
    assert float(misclassification(uniform)) == pytest.approx((k - 1) / k, abs=1e-15)
    # ... and they are maxima: any other distribution of k classes scores no higher.
    rng = np.random.default_rng(k)
    others = rng.integers(0, 10, size=(200, k)).astype(float)
    others = others[others.sum(axis=1) > 0]
    assert np.all(gini(others) <= (k - 1) / k + 1e-15)
    assert np.all(entropy(others) <= math.log2(k) + 1e-14)
    assert np.all(misclassification(others) <= (k - 1) / k + 1e-15)


@pytest.mark.parametrize("k", range(2, 11))
def test_impurities_vanish_on_pure_nodes(k):
    for c in range(k):
        pure = np.zeros(k)
        pure[c] = 7.0
        assert float(gini(pure)) == 0.0
        assert float(entropy(pure)) == 0.0
        assert float(misclassification(pure)) == 0.0


def test_impurities_of_an_empty_node_are_finite():
    empty = np.zeros(3)
    with np.errstate(all="raise"):
        assert float(entropy(empty)) == 0.0
        # Empty sides are masked out by the split finder; they only must not warn or NaN.
        assert np.isfinite(float(gini(empty)))
        assert np.isfinite(float(misclassification(empty)))


def test_misclassification_by_hand():
    assert float(misclassification(np.array([3.0, 5.0, 2.0]))) == pytest.approx(0.5, abs=1e-15)
    left, right = np.array([3.0, 1.0]), np.array([1.0, 3.0])
    # parent 1 - 4/8 = 0.5; children 1/4 each
    expected = 0.5 - 0.5 * 0.25 - 0.5 * 0.25
    assert float(split_score("misclassification", TWO_CLASSES, left, right)) == pytest.approx(
        expected, abs=1e-15
    )


# ---------------------------------------------------------------------------------------
# CART measure, gain ratio, regression variance
# ---------------------------------------------------------------------------------------


def _cart_by_hand(left, right):
    n_y, n_n = sum(left), sum(right)
    n = n_y + n_n
    diff = sum(abs(a / n_y - b / n_n) for a, b in zip(left, right, strict=True))
    return 2 * (n_y / n) * (n_n / n) * diff


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ([2, 0], [1, 4]),
        ([4, 0], [0, 4]),
        ([2, 2], [2, 2]),
        ([3, 1, 2], [0, 5, 1]),
        ([1, 0, 0], [0, 0, 9]),
    ],
)
def test_cart_measure_by_hand(left, right):
    expected = _cart_by_hand(left, right)
    k = len(left)
    layout = StatsLayout(True, k, False)
    left_a, right_a = np.array(left, dtype=float), np.array(right, dtype=float)
    assert float(cart_measure(left_a, right_a)) == pytest.approx(expected, abs=1e-15)
    assert float(split_score("cart", layout, left_a, right_a)) == pytest.approx(expected, abs=1e-15)


def test_cart_measure_heights_exact_fraction():
    # 2 * (2/7) * (5/7) * (|1 - 0.2| + |0 - 0.8|) = 32/49
    left, right = _side_counts(165)
    assert float(cart_measure(left, right)) == pytest.approx(32 / 49, abs=1e-15)
    # A perfect 4/4 split scores 2 * 1/2 * 1/2 * 2 = 1, the maximum for two classes.
    assert float(cart_measure(np.array([4.0, 0.0]), np.array([0.0, 4.0]))) == 1.0


def test_cart_uses_class_weights_not_the_count_channel():
    layout = StatsLayout(True, 2, has_count_channel=True)
    left = np.array([2.0, 0.0, 99.0])  # last channel: unweighted row count, ignored
    right = np.array([1.0, 4.0, 1.0])
    assert float(split_score("cart", layout, left, right)) == pytest.approx(32 / 49, abs=1e-15)


def _h(*counts):
    n = sum(counts)
    return -sum(c / n * math.log2(c / n) for c in counts if c)


@pytest.mark.parametrize(
    ("left", "right"), [([2, 0], [1, 4]), ([3, 1], [0, 4]), ([1, 2, 3], [4, 0, 1])]
)
def test_gain_ratio_by_hand(left, right):
    n_y, n_n = sum(left), sum(right)
    n = n_y + n_n
    parent = [a + b for a, b in zip(left, right, strict=True)]
    gain = _h(*parent) - n_y / n * _h(*left) - n_n / n * _h(*right)
    info = -(n_y / n) * math.log2(n_y / n) - (n_n / n) * math.log2(n_n / n)
    layout = StatsLayout(True, len(left), False)
    left_a, right_a = np.array(left, dtype=float), np.array(right, dtype=float)
    assert float(split_info(np.array(n_y / n))) == pytest.approx(info, abs=1e-15)
    assert float(split_score("entropy", layout, left_a, right_a)) == pytest.approx(gain, abs=1e-14)
    assert float(split_score("gain_ratio", layout, left_a, right_a)) == pytest.approx(
        gain / info, abs=1e-14
    )


def test_gain_ratio_heights_value():
    left, right = _side_counts(165)
    gain = _h(3, 4) - 5 / 7 * _h(1, 4)
    info = _h(2, 5)
    assert info == pytest.approx(0.863120568567, abs=1e-12)
    assert float(split_score("gain_ratio", TWO_CLASSES, left, right)) == pytest.approx(
        gain / info, abs=1e-14
    )


def test_split_info_extremes():
    np.testing.assert_allclose(split_info(np.array([0.5, 0.25, 0.0, 1.0])), [1.0, _h(1, 3), 0, 0])


def _regression_stats(y, w, with_count=False):
    stats = [np.sum(w), np.sum(w * y)]
    if with_count:
        stats.append(float(len(y)))
    return np.array(stats)


@pytest.mark.parametrize("with_count", [False, True])
def test_squared_error_scores_the_weighted_variance_decrease(with_count):
    """The S1^2/W form scores a split by the weighted variance decrease, without sums of
    squares."""
    rng = np.random.default_rng(4)
    layout = StatsLayout(False, 0, has_count_channel=with_count)
    for _ in range(30):
        n = int(rng.integers(2, 30))
        y = rng.normal(3.0, 2.0, size=n)
        w = rng.uniform(0.1, 3.0, size=n) if with_count else np.ones(n)
        expected = np.average((y - np.average(y, weights=w)) ** 2, weights=w)
        cut = int(rng.integers(1, n))
        left = _regression_stats(y[:cut], w[:cut], with_count)
        right = _regression_stats(y[cut:], w[cut:], with_count)
        if with_count:
            assert layout.count(left) == cut
        wl, wr = w[:cut].sum(), w[cut:].sum()
        decrease = expected - (
            wl * np.average((y[:cut] - np.average(y[:cut], weights=w[:cut])) ** 2, weights=w[:cut])
            + wr
            * np.average((y[cut:] - np.average(y[cut:], weights=w[cut:])) ** 2, weights=w[cut:])
        ) / (wl + wr)
        assert float(split_score("squared_error", layout, left, right)) == pytest.approx(
            decrease, rel=1e-8, abs=1e-10
        )


@pytest.mark.parametrize("with_count", [False, True])
@pytest.mark.parametrize("centre", [0.0, 2.0, 1e6])
def test_poisson_scores_the_weighted_half_deviance_decrease(with_count, centre):
    """S_L log(S_L / W_L) + S_R log(S_R / W_R) - S log(S / W), from centred sums (any
    centre), is w times the decrease of the half Poisson deviance."""
    rng = np.random.default_rng(5)
    layout = StatsLayout(False, 0, has_count_channel=with_count, centre=centre)

    def weighted_deviance(y, w):  # in long double: y log(y / m) at y = 1e6 loses digits
        y, w = y.astype(np.longdouble), w.astype(np.longdouble)
        m = np.sum(w * y) / np.sum(w)
        logs = np.log(np.where(y > 0, y, 1.0) / m)
        return np.sum(w * (np.where(y > 0, y * logs, 0.0) - (y - m)))

    for _ in range(30):
        n = int(rng.integers(2, 30))
        y = rng.poisson(3.0, size=n) + (1e6 if centre == 1e6 else 0.0)
        y[0] += 1.0  # a positive sum on either side of any cut
        y[-1] += 1.0
        w = rng.uniform(0.1, 3.0, size=n) if with_count else np.ones(n)
        cut = int(rng.integers(1, n))
        left = _regression_stats(y[:cut] - centre, w[:cut], with_count)
        right = _regression_stats(y[cut:] - centre, w[cut:], with_count)
        decrease = (
            weighted_deviance(y, w)
            - weighted_deviance(y[:cut], w[:cut])
            - weighted_deviance(y[cut:], w[cut:])
        ) / np.sum(w.astype(np.longdouble))
        score = float(split_score("poisson", layout, left, right))
        assert score == pytest.approx(float(decrease), rel=1e-6, abs=1e-12)


def test_poisson_refuses_children_whose_targets_sum_to_zero():
    layout = StatsLayout(False, 0, has_count_channel=False, centre=2.0)
    zeros = _regression_stats(np.zeros(3) - 2.0, np.ones(3), False)
    counts = _regression_stats(np.array([1.0, 4.0]) - 2.0, np.ones(2), False)
    assert split_score("poisson", layout, zeros, counts) == -np.inf
    assert np.isfinite(split_score("poisson", layout, counts, counts))


def test_a_regression_node_impurity_is_not_computed_from_sums():
    for criterion in ("squared_error", "poisson"):
        with pytest.raises(ValueError, match="measured on its rows"):
            node_impurity(criterion, StatsLayout(False, 0, False), np.array([2.0, 1.0]))


def test_node_impurity_kinds():
    counts = np.array([3.0, 1.0])
    assert float(node_impurity("gini", TWO_CLASSES, counts)) == pytest.approx(0.375)
    assert float(node_impurity("cart", TWO_CLASSES, counts)) == pytest.approx(0.375)
    for name in ("entropy", "log_loss", "gain_ratio"):
        assert float(node_impurity(name, TWO_CLASSES, counts)) == pytest.approx(_h(3, 1))
    assert float(node_impurity("misclassification", TWO_CLASSES, counts)) == pytest.approx(0.25)


def test_stats_layout_channels():
    assert StatsLayout(True, 3, False).n_channels == 3
    assert StatsLayout(True, 3, True).n_channels == 4
    assert StatsLayout(False, 0, False).n_channels == 2  # [sum w, sum w (y - centre)]
    assert StatsLayout(False, 0, True).n_channels == 3
    weighted = StatsLayout(True, 2, True)
    stats = np.array([[0.5, 2.5, 4.0]])
    np.testing.assert_array_equal(weighted.weight(stats), [3.0])
    np.testing.assert_array_equal(weighted.count(stats), [4.0])
    unweighted = StatsLayout(True, 3, False)
    np.testing.assert_array_equal(unweighted.count(np.array([1.0, 2.0, 3.0])), 6.0)
    # Fixed point: integers times 2**-exponent per channel; the count channel's is 0.
    fixed = StatsLayout(True, 2, True, exponents=(3, 3, 0))
    np.testing.assert_array_equal(fixed.real(np.array([[4, 20, 4]])), [[0.5, 2.5, 4.0]])
    reg = StatsLayout(False, 0, True)
    np.testing.assert_array_equal(reg.weight(np.array([2.5, 1.0, 1.0, 3.0])), 2.5)
    np.testing.assert_array_equal(reg.count(np.array([2.5, 1.0, 1.0, 3.0])), 3.0)


# ---------------------------------------------------------------------------------------
# Criteria through an array namespace, on (nodes, features, bins, channels) arrays
# ---------------------------------------------------------------------------------------


class RecordingNamespace:
    """numpy, but remembers which functions a criterion asked the namespace for."""

    def __init__(self):
        self.used = set()

    def __getattr__(self, name):
        self.used.add(name)
        return getattr(np, name)


def _py_score(criterion, left, right):
    n_y, n_n = sum(left), sum(right)
    n = n_y + n_n
    if criterion == "cart":
        return _cart_by_hand(left, right)
    kind = {"log_loss": "entropy", "gain_ratio": "entropy"}.get(criterion, criterion)
    parent = [a + b for a, b in zip(left, right, strict=True)]
    gain = (
        python_impurity(kind, parent)
        - n_y / n * python_impurity(kind, left)
        - n_n / n * python_impurity(kind, right)
    )
    if criterion == "gain_ratio":
        return gain / (-(n_y / n) * math.log2(n_y / n) - (n_n / n) * math.log2(n_n / n))
    return gain


SHAPE = (3, 2, 5)  # nodes, features, bins


def _random_counts(seed, k):
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 5, size=SHAPE + (k,)).astype(float)
    counts[..., 0] += 1  # every cell non-empty
    return counts


@pytest.mark.parametrize("kind", ["gini", "entropy", "misclassification"])
def test_impurities_on_4d_arrays_match_a_python_loop(kind):
    counts = _random_counts(1, 4)
    xp = RecordingNamespace()
    function = {"gini": gini, "entropy": entropy, "misclassification": misclassification}[kind]
    result = function(counts, xp=xp)
    assert result.shape == SHAPE
    for index in np.ndindex(*SHAPE):
        expected = python_impurity(kind, counts[index].tolist())
        assert result[index] == pytest.approx(expected, abs=1e-14), index
    assert xp.used  # computed through the namespace
    if kind == "entropy":
        # The logarithm (kernels/log2.py's) tells its table's integers from the values
        # it computes through the namespace: it runs on xp's device.
        assert "floor" in xp.used


@pytest.mark.parametrize("criterion", CLASSIFICATION_CRITERIA)
@pytest.mark.parametrize("with_count", [False, True])
def test_split_scores_on_4d_arrays_match_a_python_loop(criterion, with_count):
    k = 3
    left = _random_counts(2, k)
    right = _random_counts(3, k)
    layout = StatsLayout(True, k, has_count_channel=with_count)
    if with_count:  # a count channel that must not enter the score
        left = np.concatenate([left, np.full(SHAPE + (1,), 1000.0)], axis=-1)
        right = np.concatenate([right, np.full(SHAPE + (1,), 1.0)], axis=-1)
    xp = RecordingNamespace()
    scores = split_score(criterion, layout, left, right, xp=xp)
    assert scores.shape == SHAPE
    assert xp.used  # the criterion computed through the namespace
    for index in np.ndindex(*SHAPE):
        expected = _py_score(criterion, left[index][:k].tolist(), right[index][:k].tolist())
        assert scores[index] == pytest.approx(expected, abs=1e-13), (criterion, index)


def test_squared_error_scores_on_4d_arrays_match_a_python_loop():
    rng = np.random.default_rng(5)
    layout = StatsLayout(False, 0, False)
    ys = {}
    left = np.empty(SHAPE + (2,))
    right = np.empty(SHAPE + (2,))
    for index in np.ndindex(*SHAPE):
        y_left = rng.integers(-5, 6, size=int(rng.integers(1, 6))).astype(float)
        y_right = rng.integers(-5, 6, size=int(rng.integers(1, 6))).astype(float)
        ys[index] = (y_left, y_right)
        left[index] = _regression_stats(y_left, np.ones_like(y_left))
        right[index] = _regression_stats(y_right, np.ones_like(y_right))
    xp = RecordingNamespace()
    scores = split_score("squared_error", layout, left, right, xp=xp)
    assert xp.used
    for index in np.ndindex(*SHAPE):
        y_left, y_right = ys[index]
        y = np.concatenate([y_left, y_right])
        expected = np.var(y) - (
            len(y_left) * np.var(y_left) + len(y_right) * np.var(y_right)
        ) / len(y)
        assert scores[index] == pytest.approx(expected, abs=1e-12), index


def test_cart_and_split_info_on_4d_arrays():
    left = _random_counts(6, 2)
    right = _random_counts(7, 2)
    xp = RecordingNamespace()
    cart = cart_measure(left, right, xp=xp)
    fractions = left.sum(axis=-1) / (left.sum(axis=-1) + right.sum(axis=-1))
    info = split_info(fractions, xp=xp)
    for index in np.ndindex(*SHAPE):
        assert cart[index] == pytest.approx(
            _cart_by_hand(left[index].tolist(), right[index].tolist()), abs=1e-14
        )
        f = fractions[index]
        assert info[index] == pytest.approx(
            -f * math.log2(f) - (1 - f) * math.log2(1 - f), abs=1e-14
        )
    assert "log2" in xp.used  # split_info's logarithm goes through the namespace


def test_scores_with_an_empty_side_raise_no_warnings():
    left = np.zeros((1, 1, 2, 2))
    right = np.array([[[[1.0, 2.0], [3.0, 0.0]]]])
    with np.errstate(all="raise"):
        for criterion in CLASSIFICATION_CRITERIA:
            scores = split_score(criterion, TWO_CLASSES, left, right)
            assert scores.shape == (1, 1, 2)


# ---------------------------------------------------------------------------------------
# check_criterion
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CLASSIFICATION_CRITERIA)
def test_check_criterion_accepts_classification_names(name):
    assert check_criterion(name, True) == name


def test_check_criterion_accepts_the_regression_criteria():
    assert REGRESSION_CRITERIA == ("squared_error", "poisson", "absolute_error")
    for name in REGRESSION_CRITERIA:
        assert check_criterion(name, False) == name


def test_check_criterion_poisson_for_a_classifier():
    with pytest.raises(ValueError, match="criterion='poisson'") as info:
        check_criterion("poisson", True)
    assert "regression criterion" in str(info.value)


@pytest.mark.parametrize("name", ["ginni", "Gini", "friedman_mse", "absolute_error", ""])
def test_check_criterion_unknown_classification_name(name):
    with pytest.raises(ValueError, match=f"criterion={name!r}"):
        check_criterion(name, True)


@pytest.mark.parametrize("name", ["variance", "mse", "mae"])
def test_check_criterion_unknown_regression_name(name):
    with pytest.raises(ValueError, match=f"criterion={name!r}") as info:
        check_criterion(name, False)
    assert "squared_error" in str(info.value)  # the message lists the valid choices


@pytest.mark.parametrize("name", CLASSIFICATION_CRITERIA)
def test_check_criterion_classification_name_for_a_regressor(name):
    with pytest.raises(ValueError, match=f"criterion={name!r}") as info:
        check_criterion(name, False)
    assert "classification criterion" in str(info.value)


def test_check_criterion_regression_name_for_a_classifier():
    with pytest.raises(ValueError, match="criterion='squared_error'") as info:
        check_criterion("squared_error", True)
    assert "regression criterion" in str(info.value)


@pytest.mark.parametrize("value", [None, 3, ("gini",)])
def test_check_criterion_non_string(value):
    with pytest.raises(ValueError, match="criterion="):
        check_criterion(value, True)


def test_estimators_refuse_other_kind_criteria():
    X = np.arange(6, dtype=float)[:, None]
    with pytest.raises(ValueError, match="'squared_error'"):
        gpu_tree.DecisionTreeClassifier(criterion="squared_error").fit(X, [0, 1, 0, 1, 0, 1])
    with pytest.raises(ValueError, match="'gini'"):
        gpu_tree.DecisionTreeRegressor(criterion="gini").fit(X, np.arange(6.0))


# ---------------------------------------------------------------------------------------
# The tolerance under which split scores tie
# ---------------------------------------------------------------------------------------


def test_tie_tolerance_is_about_rounding_and_far_below_real_differences():
    # float64 rounding is 1.1e-16; one row of a million moves scores by about 1e-6.
    assert 1e-14 <= SCORE_RTOL <= 1e-10


@pytest.mark.parametrize("criterion", ["gini", "misclassification", "cart"])
def test_tie_tolerance_of_the_quadratic_and_linear_criteria_scales_with_the_weight(criterion):
    # Their terms (c^2 / w, max c, w) are of the node's weight w: 30 here, whatever the
    # score; the score's own rounding adds |best|.
    parent = np.array([[10.0, 20.0], [1e6, 2e6]])
    tolerance = score_tolerance(criterion, TWO_CLASSES, parent, np.array([2.0, -4.0]))
    np.testing.assert_allclose(tolerance, SCORE_RTOL * np.array([32.0, 3e6 + 4.0]), rtol=1e-15)


@pytest.mark.parametrize("criterion", ["entropy", "log_loss", "gain_ratio"])
def test_tie_tolerance_of_the_entropy_criteria_scales_with_w_log_w(criterion):
    # Terms c log2 c: w (1 + |log2 w|) = 1024 * 11 for w = 1024, 0.25 * 3 for w = 0.25.
    parent = np.array([[1000.0, 24.0], [0.125, 0.125]])
    tolerance = score_tolerance(criterion, TWO_CLASSES, parent, np.array([5.0, 0.5]))
    np.testing.assert_allclose(tolerance, SCORE_RTOL * np.array([11264 + 5.0, 0.75 + 0.5]))


def test_gain_ratio_tolerance_is_divided_by_the_split_information():
    """gain_ratio divides the entropy decrease, and with it its rounding error, by the
    split information of the best candidate: a tenth of a bit, ten times the tolerance."""
    parent = np.array([1000.0, 24.0])
    plain = score_tolerance("gain_ratio", TWO_CLASSES, parent, 0.0)
    divided = score_tolerance("gain_ratio", TWO_CLASSES, parent, 0.0, divisor=0.1)
    assert divided == pytest.approx(10 * plain, rel=1e-15)
    # The other criteria do not divide their scores.
    assert score_tolerance("entropy", TWO_CLASSES, parent, 0.0, divisor=0.1) == plain
    # A split information of 0 (a side weighing nothing: a score of 0) divides nothing.
    assert score_tolerance("gain_ratio", TWO_CLASSES, parent, 0.0, divisor=0.0) == plain


def test_branch_split_info_is_gain_ratios_denominator():
    weights = np.array([[3.0, 1.0], [2.0, 2.0], [4.0, 0.0]])
    np.testing.assert_allclose(branch_split_info(weights), split_info(weights[:, 0] / 4))
    # Four equal branches: 2 bits; empty branches add nothing.
    assert branch_split_info(np.array([1.0, 1.0, 0.0, 1.0, 1.0])) == pytest.approx(2.0)


@pytest.mark.parametrize("with_count", [False, True])
def test_squared_error_tolerance_reads_only_the_weight_and_the_weighted_sum(with_count):
    """(sum w y)^2 / w of the node plus |best|: 40^2 / 8 + 3. The sum of w y^2 (channel 2)
    and the count do not enter it."""
    layout = StatsLayout(False, 0, has_count_channel=with_count)
    parent = np.array([8.0, 40.0, 250.0] + ([5.0] if with_count else []))
    tolerance = score_tolerance("squared_error", layout, parent, -3.0)
    assert tolerance == pytest.approx(SCORE_RTOL * 203.0, rel=1e-15)
    other = parent.copy()
    other[2] = 1e9
    if with_count:
        other[3] = 1.0
    assert score_tolerance("squared_error", layout, other, -3.0) == tolerance


@pytest.mark.parametrize("criterion", CLASSIFICATION_CRITERIA + REGRESSION_CRITERIA)
def test_tie_tolerance_without_an_allowed_candidate_is_finite(criterion):
    """best = -inf (no candidate allowed): the tolerance is that of the node alone, finite,
    also for an empty node; per node for a batch of nodes, through the namespace."""
    is_classification = criterion not in REGRESSION_CRITERIA
    layout = StatsLayout(is_classification, 3 if is_classification else 0, False)
    parent = np.array([[4.0, 2.0, 2.0], [0.0, 0.0, 0.0]])
    xp = RecordingNamespace()
    tolerance = score_tolerance(criterion, layout, parent, np.array([-np.inf, -np.inf]), xp)
    assert tolerance.shape == (2,)
    assert np.all(np.isfinite(tolerance)) and tolerance[0] > 0 and tolerance[1] == 0
    assert xp.used
