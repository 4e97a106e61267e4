"""Brute-force oracle for the split finder ``gpu_tree.growing.splitting.select_splits``.

The oracle walks every (node, feature, bin) candidate in plain Python with the candidate
rules of the module docstring (only non-empty bins are candidates, the right side must
be non-empty, ``min_samples_leaf`` counts rows, ``min_weight_leaf`` weights), scores it
with hand-written formulas, and keeps the lowest feature, then the lowest bin, among the
best.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _oracles import python_impurity

from gpu_tree.data.stats import StatsLayout
from gpu_tree.growing import splitting as _splitting
from gpu_tree.growing.criteria import CLASSIFICATION_CRITERIA, split_score
from gpu_tree.growing.splitting import SplitConstraints, midpoint, select_splits

ALL_CRITERIA = CLASSIFICATION_CRITERIA + ("squared_error",)


# ---------------------------------------------------------------------------------------
# Oracle
# ---------------------------------------------------------------------------------------


def oracle_score(criterion, layout, left, right):
    """Score of one candidate from its left / right statistics vectors (Python floats)."""
    if layout.is_classification:
        k = layout.n_classes
        left, right = list(left[:k]), list(right[:k])
        w_l, w_r = sum(left), sum(right)
        w = w_l + w_r
        if criterion == "cart":
            diff = sum(abs(a / w_l - b / w_r) for a, b in zip(left, right, strict=True))
            return 2.0 * (w_l / w) * (w_r / w) * diff
        kind = {"log_loss": "entropy", "gain_ratio": "entropy"}.get(criterion, criterion)
        parent = [a + b for a, b in zip(left, right, strict=True)]
        gain = (
            python_impurity(kind, parent)
            - w_l / w * python_impurity(kind, left)
            - w_r / w * python_impurity(kind, right)
        )
        if criterion == "gain_ratio":
            f = w_l / w
            return gain / (-f * math.log2(f) - (1 - f) * math.log2(1 - f))
        return gain
    # Regression [sum w, sum w y]: the variance decrease is (S_L^2/W_L + S_R^2/W_R - S^2/W) / W
    # (sum w y^2 cancels).
    (w_l, s_l), (w_r, s_r) = left[:2], right[:2]
    w, s = w_l + w_r, s_l + s_r
    return (s_l * s_l / w_l + s_r * s_r / w_r - s * s / w) / w


def _weight(layout, stats):
    return float(sum(stats[: layout.n_classes])) if layout.is_classification else float(stats[0])


def _count(layout, stats):
    return float(stats[-1]) if layout.has_count_channel else _weight(layout, stats)


def oracle_candidates(hist_node, criterion, layout, constraints, feature_mask_node=None):
    """{(feature, bin): (score, left, right)} of every allowed candidate of one node."""
    n_features, n_bins, _ = hist_node.shape
    out = {}
    for f in range(n_features):
        if feature_mask_node is not None and not feature_mask_node[f]:
            continue
        total = hist_node[f].sum(axis=0)
        for b in range(n_bins - 1):
            if _count(layout, hist_node[f, b]) <= 0:
                continue  # only non-empty bins are candidates
            left = hist_node[f, : b + 1].sum(axis=0)
            right = total - left
            n_left, n_right = _count(layout, left), _count(layout, right)
            if n_right <= 0:
                continue
            if n_left < constraints.min_samples_leaf or n_right < constraints.min_samples_leaf:
                continue
            if constraints.min_weight_leaf > 0 and (
                _weight(layout, left) < constraints.min_weight_leaf
                or _weight(layout, right) < constraints.min_weight_leaf
            ):
                continue
            out[(f, b)] = (oracle_score(criterion, layout, left, right), left, right)
    return out


def _tolerance(score):
    return 1e-9 * max(1.0, abs(score))


def check_against_oracle(hist, criterion, layout, constraints, feature_mask=None):
    """Run select_splits on ``hist`` and compare every node with the oracle.

    Returns the number of nodes whose choice was the oracle's lowest (feature, bin) among
    its best-scoring candidates, and the number of nodes with a split.
    """
    chosen = select_splits(hist, criterion, layout, constraints, feature_mask)
    n_nodes, n_features, n_bins, _ = hist.shape
    # The project's own scores, only to tell a rounding-broken tie from a wrong choice.
    cumulative = np.cumsum(hist, axis=2)
    project_scores = split_score(
        criterion, layout, cumulative[:, :, :-1], cumulative[:, :, -1:] - cumulative[:, :, :-1]
    )
    exact_first = 0
    n_split = 0
    for node in range(n_nodes):
        mask = None if feature_mask is None else feature_mask[node]
        candidates = oracle_candidates(hist[node], criterion, layout, constraints, mask)
        if not candidates:
            assert not chosen.has_split[node], node
            assert chosen.score[node] == -np.inf
            continue
        n_split += 1
        assert chosen.has_split[node], node
        best = max(score for score, _, _ in candidates.values())
        ties = sorted(key for key, (s, _, _) in candidates.items() if s >= best - _tolerance(best))
        key = (int(chosen.feature[node]), int(chosen.bin[node]))
        assert key in ties, (node, key, ties, best)
        assert chosen.score[node] == pytest.approx(best, rel=1e-9, abs=1e-12)
        if key == ties[0]:
            exact_first += 1
        else:
            # Only acceptable when every lower (feature, bin) of the tie really scored a
            # rounding error less in the project's arithmetic: argmax keeps the first max.
            for other in ties:
                if other >= key:
                    break
                assert project_scores[node][other] < project_scores[node][key], (node, other, key)
        _, left, right = candidates[key]
        np.testing.assert_allclose(chosen.left_stats[node], left, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(chosen.right_stats[node], right, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(
            chosen.left_stats[node] + chosen.right_stats[node],
            hist[node, key[0]].sum(axis=0),
            rtol=1e-12,
            atol=1e-12,
        )
        counts = [_count(layout, hist[node, key[0], b]) for b in range(n_bins)]
        expected_next = next(b for b in range(key[1] + 1, n_bins) if counts[b] > 0)
        assert chosen.next_bin[node] == expected_next, node
    return exact_first, n_split


# ---------------------------------------------------------------------------------------
# Random histograms built from random rows
# ---------------------------------------------------------------------------------------


def random_histograms(rng, criterion, *, n_nodes, n_features, n_bins, n_classes, weighted):
    """Histograms of random rows: several nodes, sparse bins (many empty), integer counts."""
    is_classification = criterion != "squared_error"
    layout = StatsLayout(is_classification, n_classes if is_classification else 0, weighted)
    hist = np.zeros((n_nodes, n_features, n_bins, layout.n_channels))
    for node in range(n_nodes):
        n_rows = int(rng.integers(0, 25))
        if is_classification:
            y = rng.integers(0, n_classes, size=n_rows)
        else:
            y = rng.integers(-4, 5, size=n_rows).astype(float)
        w = rng.integers(1, 4, size=n_rows).astype(float) * 0.5 if weighted else np.ones(n_rows)
        for f in range(n_features):
            # Each (node, feature) uses a random subset of the bins: empty bins everywhere.
            used = rng.choice(n_bins, size=int(rng.integers(1, n_bins + 1)), replace=False)
            codes = rng.choice(used, size=n_rows)
            for i in range(n_rows):
                cell = hist[node, f, codes[i]]
                if is_classification:
                    cell[y[i]] += w[i]
                else:
                    cell[:2] += (w[i], w[i] * y[i])
                if weighted:
                    cell[-1] += 1.0
    return hist, layout


CASES = [
    # n_nodes, n_features, n_bins, n_classes, weighted, min_samples_leaf, min_weight_leaf
    (6, 3, 7, 2, False, 1, 0.0),
    (5, 4, 5, 3, False, 2, 0.0),
    (4, 2, 9, 4, False, 3, 0.0),
    (6, 3, 6, 3, True, 1, 0.0),
    (5, 3, 8, 2, True, 2, 1.5),
    (3, 5, 4, 5, False, 1, 0.0),
]


@pytest.mark.parametrize("criterion", ALL_CRITERIA)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_select_splits_matches_brute_force(criterion, case):
    n_nodes, n_features, n_bins, n_classes, weighted, msl, mwl = CASES[case]
    rng = np.random.default_rng(1000 * case + ALL_CRITERIA.index(criterion))
    constraints = SplitConstraints(min_samples_leaf=msl, min_weight_leaf=mwl)
    exact_first = n_split = 0
    for _ in range(6):
        hist, layout = random_histograms(
            rng,
            criterion,
            n_nodes=n_nodes,
            n_features=n_features,
            n_bins=n_bins,
            n_classes=n_classes,
            weighted=weighted,
        )
        first, split = check_against_oracle(hist, criterion, layout, constraints)
        exact_first += first
        n_split += split
    assert n_split > 0  # the data did produce splittable nodes
    # Mathematical ties between different partitions (frequent for misclassification)
    # are settled by rounding, as in scikit-learn; the oracle checked those case by case.
    assert exact_first > 0


@pytest.mark.parametrize("criterion", ALL_CRITERIA)
def test_select_splits_with_a_feature_mask_matches_brute_force(criterion):
    rng = np.random.default_rng(7 + ALL_CRITERIA.index(criterion))
    constraints = SplitConstraints()
    n_checked = 0
    for _ in range(5):
        hist, layout = random_histograms(
            rng, criterion, n_nodes=6, n_features=4, n_bins=6, n_classes=3, weighted=False
        )
        mask = rng.random((6, 4)) < 0.5
        mask[0] = False  # a node with no feature allowed has no split
        _, n_split = check_against_oracle(hist, criterion, layout, constraints, mask)
        n_checked += n_split
        chosen = select_splits(hist, criterion, layout, constraints, mask)
        assert not chosen.has_split[0]
        assert np.all(mask[np.flatnonzero(chosen.has_split), chosen.feature[chosen.has_split]])
    assert n_checked > 0


def test_select_splits_in_chunks_matches_one_pass(monkeypatch):
    if not hasattr(_splitting, "_CANDIDATES_PER_CHUNK"):
        pytest.skip("select_splits no longer scores in chunks")
    rng = np.random.default_rng(3)
    hist, layout = random_histograms(
        rng, "gini", n_nodes=9, n_features=3, n_bins=5, n_classes=2, weighted=False
    )
    whole = select_splits(hist, "gini", layout, SplitConstraints())
    monkeypatch.setattr(_splitting, "_CANDIDATES_PER_CHUNK", 20)  # one node per chunk
    chunked = select_splits(hist, "gini", layout, SplitConstraints())
    for name in ("has_split", "feature", "bin", "next_bin", "score", "left_stats", "right_stats"):
        np.testing.assert_array_equal(getattr(chunked, name), getattr(whole, name), err_msg=name)
    check_against_oracle(hist, "gini", layout, SplitConstraints())


# ---------------------------------------------------------------------------------------
# Hand-made histograms
# ---------------------------------------------------------------------------------------


def _two_class_hist(per_bin):
    """One node, one feature, bins given as [class0, class1] counts."""
    return np.array(per_bin, dtype=float)[None, None]


def _planted_hist(criterion, n_bins, b, rng):
    """Every bin non-empty; bins <= b hold one class/target, bins > b the other."""
    counts = rng.integers(1, 5, size=n_bins).astype(float)
    if criterion == "squared_error":
        y = np.where(np.arange(n_bins) <= b, 0.0, 10.0)
        stats = np.stack([counts, counts * y], axis=-1)
        return stats[None, None], StatsLayout(False, 0, False)
    stats = np.zeros((n_bins, 2))
    stats[np.arange(n_bins), (np.arange(n_bins) > b).astype(int)] = counts
    return stats[None, None], StatsLayout(True, 2, False)


@pytest.mark.parametrize("criterion", ALL_CRITERIA)
@pytest.mark.parametrize("n_bins", [2, 5, 12])
def test_a_split_planted_at_every_bin_is_found(criterion, n_bins):
    rng = np.random.default_rng(n_bins)
    for b in range(n_bins - 1):
        hist, layout = _planted_hist(criterion, n_bins, b, rng)
        chosen = select_splits(hist, criterion, layout, SplitConstraints())
        assert chosen.has_split[0]
        assert chosen.feature[0] == 0
        assert chosen.bin[0] == b, (criterion, n_bins, b)
        assert chosen.next_bin[0] == b + 1
        if criterion != "squared_error":
            assert chosen.left_stats[0, 1] == 0 and chosen.right_stats[0, 0] == 0


@pytest.mark.parametrize("criterion", ALL_CRITERIA)
def test_planted_split_between_empty_bins(criterion):
    # Bins 2..4 empty: the candidate is the last non-empty bin left of the gap (bin 1) and
    # next_bin the first non-empty bin after it, whatever lies in between.
    rng = np.random.default_rng(11)
    hist, layout = _planted_hist(criterion, 8, 1, rng)
    hist[:, :, 2:5] = 0.0
    chosen = select_splits(hist, criterion, layout, SplitConstraints())
    assert (chosen.bin[0], chosen.next_bin[0]) == (1, 5)


@pytest.mark.parametrize("criterion", ALL_CRITERIA)
def test_ties_resolve_to_the_lowest_feature(criterion):
    rng = np.random.default_rng(5)
    hist, layout = _planted_hist(criterion, 6, 2, rng)
    weak, _ = _planted_hist(criterion, 6, 2, rng)
    weak = weak[:, :, ::-1].copy()  # a mixed, worse feature
    mixed = np.concatenate([weak[:, :, :3] + weak[:, :, 3:], np.zeros_like(weak[:, :, 3:])], axis=2)
    # features: 0 weak, 1 best, 2 best (identical copy), 3 best (identical copy)
    stacked = np.concatenate([mixed, hist, hist, hist], axis=1)
    chosen = select_splits(stacked, criterion, layout, SplitConstraints())
    assert chosen.feature[0] == 1
    assert chosen.bin[0] == 2
    # Identical features everywhere: feature 0.
    same = np.concatenate([hist] * 4, axis=1)
    assert select_splits(same, criterion, layout, SplitConstraints()).feature[0] == 0
    # Masking feature 1 out moves the choice to the next copy, feature 2.
    mask = np.array([[True, False, True, True]])
    assert select_splits(stacked, criterion, layout, SplitConstraints(), mask).feature[0] == 2


@pytest.mark.parametrize("criterion", ["gini", "entropy", "cart", "misclassification"])
def test_ties_between_bins_resolve_to_the_lowest_bin(criterion):
    # Classes 0 | 0 | 1 | 1 with equal counts and nothing else: bins 0 and 2 are weaker
    # mirror images of each other; bin 1 is the perfect split and wins.
    layout = StatsLayout(True, 2, False)
    hist = _two_class_hist([[1, 0], [1, 0], [0, 1], [0, 1]])
    assert select_splits(hist, criterion, layout, SplitConstraints()).bin[0] == 1
    # A node with two identical bins of mixed classes at both ends: splits after bin 0 and
    # after bin 2 partition the same rows into mirrored halves; bin 0 is kept.
    hist = _two_class_hist([[2, 2], [0, 0], [2, 2], [0, 0]])
    chosen = select_splits(hist, criterion, layout, SplitConstraints())
    assert chosen.has_split[0]
    assert chosen.bin[0] == 0 and chosen.next_bin[0] == 2
    assert chosen.score[0] == pytest.approx(0.0, abs=1e-15)


def test_misclassification_prefers_lowest_bin_among_zero_gains():
    # Misclassification is flat here: every split keeps class 0 the majority on both sides.
    layout = StatsLayout(True, 2, False)
    hist = _two_class_hist([[3, 1], [3, 1], [3, 1], [3, 1]])
    chosen = select_splits(hist, "misclassification", layout, SplitConstraints())
    assert chosen.score[0] == pytest.approx(0.0, abs=1e-15)
    assert chosen.bin[0] == 0


def test_no_candidate_when_a_node_has_one_value():
    layout = StatsLayout(True, 2, False)
    hist = np.zeros((2, 2, 4, 2))
    hist[0, :, 3] = [3, 2]  # everything in the last bin: never a candidate
    hist[1, :, 1] = [3, 2]  # everything in one bin: right side empty
    chosen = select_splits(hist, "gini", layout, SplitConstraints())
    assert not chosen.has_split.any()
    assert np.all(chosen.score == -np.inf)


def test_min_samples_leaf_counts_rows_not_weights():
    # Weighted: bin 0 holds one row of weight 10. With min_samples_leaf=2 it may not be a
    # leaf on its own although its weight is large.
    layout = StatsLayout(True, 2, has_count_channel=True)
    hist = np.array([[10.0, 0.0, 1.0], [0.0, 1.0, 1.0], [0.0, 1.0, 1.0], [0.0, 1.0, 1.0]])[
        None, None
    ]
    assert select_splits(hist, "gini", layout, SplitConstraints(1)).bin[0] == 0
    chosen = select_splits(hist, "gini", layout, SplitConstraints(2))
    assert chosen.bin[0] == 1
    np.testing.assert_array_equal(chosen.left_stats[0], [10.0, 1.0, 2.0])
    # min_weight_leaf is on weights: 2.5 of weight on the right needs 3 rows there.
    chosen = select_splits(hist, "gini", layout, SplitConstraints(1, min_weight_leaf=2.5))
    assert chosen.bin[0] == 0
    chosen = select_splits(hist, "gini", layout, SplitConstraints(1, min_weight_leaf=3.5))
    assert not chosen.has_split[0]


def test_midpoint_rule():
    np.testing.assert_array_equal(midpoint([1.0, 2.0, -3.0], [2.0, 5.0, -1.0]), [1.5, 3.5, -2.0])
    big = np.finfo(np.float64).max
    assert midpoint(big / 2, big) == pytest.approx(0.75 * big)  # no overflow
    # Neighbouring doubles 1 + eps and 1 + 2 eps: a/2 + b/2 = 1 + 1.5 eps rounds (to even)
    # onto b, which would send b left; the lower value is used instead. (For 1 and 1 + eps
    # the sum rounds down by itself, so that pair cannot show the guard.)
    a = np.nextafter(1.0, 2.0)
    b = np.nextafter(a, 2.0)
    assert a / 2 + b / 2 == b
    assert midpoint(a, b) == a
    assert midpoint(a, b) < b


@pytest.mark.parametrize("splitter", ["hist", "exact"])
def test_neighbouring_doubles_are_split_apart(splitter):
    """Two classes at neighbouring doubles whose midpoint rounds onto the upper one: the
    threshold must still separate them, in training and at prediction."""
    from gpu_tree import DecisionTreeClassifier

    a = np.nextafter(1.0, 2.0)
    X = np.array([[a], [a], [np.nextafter(a, 2.0)], [np.nextafter(a, 2.0)]])
    model = DecisionTreeClassifier(splitter=splitter).fit(X, [0, 0, 1, 1])
    assert model.tree_.threshold[0] == a
    np.testing.assert_array_equal(model.predict(X), [0, 0, 1, 1])


@pytest.mark.parametrize("criterion", ["gini", "squared_error"])
def test_single_bin_histograms_have_no_split(criterion):
    # Exact mode builds such a batch for any node whose rows share one value per feature
    # (this used to raise: argmax of an empty sequence).
    if criterion == "squared_error":
        layout = StatsLayout(False, 0, False)
        hist = np.array([2.0, 1.0])[None, None, None].repeat(3, axis=1).repeat(2, axis=0)
    else:
        layout = StatsLayout(True, 2, False)
        hist = np.array([1.0, 1.0])[None, None, None].repeat(3, axis=1).repeat(2, axis=0)
    assert hist.shape[2] == 1
    chosen = select_splits(hist, criterion, layout, SplitConstraints())
    assert not chosen.has_split.any()
    assert np.all(chosen.score == -np.inf)


# ---------------------------------------------------------------------------------------
# Where missing values go, and categorical edge cases, through the estimators
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("splitter", "device"), [("hist", "cpu"), ("exact", "cpu"), ("hist", "cuda")]
)
def test_missing_rows_tied_between_sides_go_to_the_side_with_more_present_rows(splitter, device):
    """One present row (y = -7) left, 49 (y = 5) right, one missing row (y = 0). Its two
    placements have the same squared error exactly (sums of squares of whole numbers:
    (-7)**2/2 + 245**2/49 = 1249.5 = (-7)**2 + 245**2/50), so the documented tie rule
    decides: the side with more present rows, the right."""
    from gpu_tree import DecisionTreeRegressor

    X = np.array([[0.0]] + [[1.0]] * 49 + [[np.nan]])
    y = np.array([-7.0] + [5.0] * 49 + [0.0])
    tree = DecisionTreeRegressor(max_depth=1, splitter=splitter, device=device).fit(X, y)
    assert tree.tree_.feature[0] == 0 and not tree.tree_.missing_go_to_left[0]
    # The right leaf holds the 49 rows and the missing one: mean 245 / 50.
    np.testing.assert_array_equal(tree.predict([[np.nan], [0.0], [1.0]]), [4.9, -7.0, 4.9])


@pytest.mark.parametrize(
    ("splitter", "device"), [("hist", "cpu"), ("exact", "cpu"), ("hist", "cuda")]
)
def test_missing_values_unseen_in_training_follow_the_bigger_child_left_on_ties(splitter, device):
    from gpu_tree import DecisionTreeClassifier

    equal = DecisionTreeClassifier(splitter=splitter, device=device)
    equal.fit([[0.0], [0.0], [1.0], [1.0]], [0, 0, 1, 1])
    assert equal.tree_.missing_go_to_left[0] and equal.predict([[np.nan]])[0] == 0
    bigger_right = DecisionTreeClassifier(splitter=splitter, device=device)
    bigger_right.fit([[0.0], [1.0], [1.0], [1.0]], [0, 1, 1, 1])
    assert not bigger_right.tree_.missing_go_to_left[0] and bigger_right.predict([[np.nan]])[0] == 1


@pytest.mark.parametrize("categorical_split", ["binary", "multiway"])
@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_no_split_leaves_a_child_empty(categorical_split, device):
    """One category present plus missing rows of the same class mix: the only split that
    moves a row (missing rows apart) gains nothing but is allowed; none may send every row
    to one side. Then random categorical data with missing values: no node is empty, and
    every multiway node has at least two branches."""
    from gpu_tree import DecisionTreeClassifier

    params = dict(categorical_features=[0], categorical_split=categorical_split, device=device)
    X = np.array([[0.0], [0.0], [np.nan], [np.nan]])
    tree = DecisionTreeClassifier(**params).fit(X, [0, 1, 0, 1]).tree_
    assert tree.n_node_samples.min() > 0
    rng = np.random.default_rng(3)
    for seed in range(3):
        X = rng.integers(0, 4, size=(120, 3)).astype(float)
        X[rng.random(X.shape) < 0.2] = np.nan
        y = rng.integers(0, 3, size=120)
        tree = DecisionTreeClassifier(**params, random_state=seed).fit(X, y).tree_
        assert tree.n_node_samples.min() > 0, seed
        assert np.all(tree.n_branches[tree.n_branches > 0] >= 2)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_multiway_node_with_one_category_is_a_leaf(device):
    from gpu_tree import DecisionTreeClassifier

    X = np.zeros((6, 1))  # one category, both classes: no split can separate them
    tree = (
        DecisionTreeClassifier(
            categorical_features=[0], categorical_split="multiway", device=device
        )
        .fit(X, [0, 1, 0, 1, 0, 1])
        .tree_
    )
    assert tree.node_count == 1


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_multiway_missing_and_unseen_categories_take_the_largest_branch(device):
    """The default branch is the category with the most rows at the node (here code 2,
    neither the first nor the last), in training and at prediction."""
    from gpu_tree import DecisionTreeClassifier

    rows = {0: 5, 1: 6, 2: 12, 3: 4}
    X = np.concatenate([np.full(n, float(code)) for code, n in rows.items()] + [[np.nan] * 3])
    y = np.concatenate([np.full(n, code % 2) for code, n in rows.items()] + [[1, 1, 1]])
    model = DecisionTreeClassifier(
        categorical_features=[0], categorical_split="multiway", device=device
    ).fit(X[:, None], y)
    leaf_of = dict(
        zip([0.0, 1.0, 2.0, 3.0], model.apply(np.array([[0.0], [1.0], [2.0], [3.0]])), strict=True)
    )
    assert len(set(leaf_of.values())) == 4
    assert model.apply([[np.nan]])[0] == leaf_of[2.0]
    # Code 2's leaf holds its 12 rows and the 3 missing ones: 15.
    assert model.tree_.n_node_samples[leaf_of[2.0]] == 15


def test_categorical_ties_go_to_the_first_candidate_class_orderings_before_subsets():
    """Three pure categories of three classes: every one-against-the-rest split ties.
    Candidates are tried class ordering by class ordering (categories sorted by P(class),
    ties by code), shortest prefix first, then the small subsets; the first wins. Class
    0's ordering is (1, 2, 0), so its first prefix {1} goes left."""
    from gpu_tree import DecisionTreeClassifier
    from gpu_tree.data.stats import bitset_members

    X = np.repeat([0.0, 1.0, 2.0], 10)[:, None]
    y = np.repeat([0, 1, 2], 10)
    for device in ("cpu", "cuda"):
        tree = DecisionTreeClassifier(max_depth=1, categorical_features=[0], device=device)
        tree = tree.fit(X, y).tree_
        words = tree.category_bitsets[tree.category_offset[0] :][: tree.n_category_words]
        assert set(bitset_members(words).tolist()) & {0, 1, 2} == {1}, device


# ---------------------------------------------------------------------------------------
# Ties within rounding: scores closer than criteria.score_tolerance are ties
# ---------------------------------------------------------------------------------------


def _search(criterion="gini", layout=None):
    """What the choosing helpers read of a search: the criterion, the layout, numpy."""
    from types import SimpleNamespace

    return SimpleNamespace(criterion=criterion, layout=layout or StatsLayout(True, 2, False), xp=np)


def _tie_tolerance(parent, best, criterion="gini", layout=None):
    from gpu_tree.growing.criteria import score_tolerance

    layout = layout or StatsLayout(True, 2, False)
    return float(score_tolerance(criterion, layout, np.asarray(parent, float), best))


def test_first_near_max_keeps_the_first_index_within_the_tie_tolerance():
    first = _splitting._first_near_max
    parent = np.array([30.0, 10.0])  # gini: the tolerance is 1e-12 * (w + |best|)
    tol = _tie_tolerance(parent, 5.0)
    assert tol > 0
    search = _search()
    assert first(search, np.array([5.0 - 0.5 * tol, 5.0, 4.0]), parent) == 0
    assert first(search, np.array([4.0, 5.0 - 0.9 * tol, 5.0]), parent) == 1
    assert first(search, np.array([5.0 - 2 * tol, 5.0, 4.0]), parent) == 1  # apart: the max
    # -inf (not allowed) never ties with a finite maximum; all -inf gives index 0.
    assert first(search, np.array([-np.inf, 5.0 - 0.5 * tol, 5.0]), parent) == 1
    assert first(search, np.array([-np.inf, -np.inf]), parent) == 0
    # Row by row, each with its node's tolerance: 1e-7 apart ties in a node weighing 1e6
    # (rounding of terms of 1e6) and not in one weighing 40.
    rows = np.array([[1.0, 1.0 + 1e-7], [1.0, 1.0 + 1e-7]])
    parents = np.array([[5e5, 5e5], [30.0, 10.0]])
    np.testing.assert_array_equal(first(search, rows, parents), [0, 1])


def test_tolerance_of_a_gain_ratio_row_follows_the_split_information_of_its_maximum():
    first = _splitting._first_near_max
    search = _search("gain_ratio")
    parent = np.array([30.0, 10.0])
    tol = _tie_tolerance(parent, 5.0, "gain_ratio")
    scores = np.array([5.0 - 5 * tol, 5.0])
    assert first(search, scores, parent, np.array([1.0, 1.0])) == 1
    # The maximum's score was divided by a split information of 0.1: ten times the error.
    assert first(search, scores, parent, np.array([1.0, 0.1])) == 0


def _script_scores(monkeypatch, *arrays):
    """Make select_splits rank the given scores, one array per call of the criterion (in
    call order), broadcast to the candidates' shape (n, F, positions)."""
    queue = list(arrays)

    def scripted(criterion, layout, left, right, parent=None, xp=np):
        return np.broadcast_to(np.asarray(queue.pop(0), dtype=float), left.shape[:-1]).copy()

    monkeypatch.setattr(_splitting, "weighted_split_score", scripted)


def _one_row_per_bin(n_features, n_bins):
    """One node; every feature holds one row in each bin, classes alternating."""
    hist = np.zeros((1, n_features, n_bins, 2))
    hist[0, :, np.arange(n_bins), np.arange(n_bins) % 2] = 1.0
    return hist, StatsLayout(True, 2, False)


def test_scores_within_tolerance_choose_the_lowest_feature_then_position(monkeypatch):
    hist, layout = _one_row_per_bin(2, 4)  # positions 0, 1, 2 are candidates
    tol = _tie_tolerance(hist[0, 0].sum(axis=0), 5.0)

    def choose(scores, mask=None):
        _script_scores(monkeypatch, [scores])
        chosen = select_splits(hist, "gini", layout, SplitConstraints(), mask)
        return int(chosen.feature[0]), int(chosen.bin[0])

    # Within the tolerance: feature 0 before feature 1, position 1 before position 2.
    assert choose([[1.0, 5.0, 5.0 + 0.5 * tol], [5.0 + 0.9 * tol, 2.0, 0.0]]) == (0, 1)
    # Apart by more than the tolerance: the true maximum.
    assert choose([[1.0, 5.0, 5.0 + 2 * tol], [5.0 + 0.9 * tol, 2.0, 0.0]]) == (0, 2)
    assert choose([[1.0, 5.0, 5.0], [5.0 + 2 * tol, 2.0, 0.0]]) == (1, 0)
    # A feature that may not be used (-inf scores) ties with nothing.
    mask = np.array([[False, True]])
    assert choose([[5.0, 5.0, 5.0], [5.0 - 0.5 * tol, 5.0, 0.0]], mask) == (1, 0)
    # The chosen score is the chosen candidate's own, per unit weight.
    _script_scores(monkeypatch, [[1.0, 5.0, 5.0 + 0.5 * tol], [0.0, 0.0, 0.0]])
    chosen = select_splits(hist, "gini", layout, SplitConstraints())
    assert chosen.score[0] == 5.0 / 4


@pytest.mark.parametrize("more_rows_left", [True, False])
def test_missing_rows_tied_within_tolerance_go_to_the_side_with_more_present_rows(
    monkeypatch, more_rows_left
):
    """One feature, two present values (two rows and one row), two missing rows: the
    missing rows scored left and right, scores scripted a fraction of the tolerance or
    more apart."""
    layout = StatsLayout(True, 2, False)
    bins = [[2.0, 0.0], [0.0, 1.0]] if more_rows_left else [[1.0, 0.0], [0.0, 2.0]]
    hist = np.array(bins)[None, None]
    missing = np.array([[[1.0, 1.0]]])
    tol = _tie_tolerance(hist[0, 0].sum(axis=0) + missing[0, 0], 5.0)

    def missing_left(on_left, on_right):
        # Position 0 is the split between the two values (position 1, every value left,
        # scores -inf with the missing rows left and 0 with them right).
        _script_scores(monkeypatch, [[[on_left, 0.0]]], [[[on_right, 0.0]]])
        chosen = select_splits(hist, "gini", layout, SplitConstraints(), missing=missing)
        assert chosen.has_split[0] and chosen.bin[0] == 0
        return bool(chosen.missing_left[0])

    near = 0.5 * tol
    assert missing_left(5.0, 5.0 + near) == more_rows_left
    assert missing_left(5.0 + near, 5.0) == more_rows_left
    assert missing_left(5.0, 5.0 + 2 * tol) is False
    assert missing_left(5.0 + 2 * tol, 5.0) is True


def test_categorical_families_tied_within_tolerance_keep_the_earlier_family():
    parent = np.array([[[30.0, 10.0]]])  # (node, categorical feature, channels)
    tol = _tie_tolerance(parent[0, 0], 5.0)
    compact = np.zeros((1, 1, 3, 2))
    scores = _splitting._CategoricalScores(_search(), compact, np.array([[3]]), None, parent)

    def offer(values):
        scores.offer(np.array([[values]]), None, decoder=None)
        return int(scores.family[0, 0]), int(scores.index[0, 0])

    assert offer([4.0, 5.0 - 0.5 * tol, 5.0]) == (0, 1)  # within a family: the first tied
    assert offer([5.0 + 0.4 * tol, 1.0, 1.0]) == (0, 1)  # tied with the one kept: kept
    assert offer([1.0, 5.0 + 2 * tol, 1.0]) == (2, 1)  # better by more than rounding
    assert scores.best[0, 0] == 5.0 + 2 * tol


def test_midpoint_of_unbounded_bins_is_the_lower_value_without_a_warning():
    """A bin with no values has bounds (+inf, -inf): the sum is NaN, handled as any
    non-finite sum (issue 15's property run saw its RuntimeWarning on valid input:
    max_bins=2 with a missing value)."""
    import warnings

    from gpu_tree import DecisionTreeClassifier

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert midpoint([np.inf], [-np.inf])[0] == np.inf
        DecisionTreeClassifier(device="cpu", max_bins=2).fit(
            np.array([[np.nan], [0.0], [1.0]]), [0, 1, 1]
        )
