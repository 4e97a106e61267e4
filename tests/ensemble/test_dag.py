"""gpu_tree.DAGClassifier: the DAG and the adaptive DAG of seed document 002 ("Tree-Based
Reduction"): the seed's knockout example, the counts of its table, the class grouping
against brute force, scikit-learn compatibility, and accuracy on digits."""

import itertools
import math

import numpy as np
import pytest

pytest.importorskip("sklearn")
from sklearn.base import BaseEstimator, ClassifierMixin  # noqa: E402
from sklearn.datasets import load_breast_cancer, load_digits, make_blobs  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.utils.estimator_checks import check_estimator  # noqa: E402

from gpu_tree import DAGClassifier, DecisionTreeClassifier, assert_tree_equal  # noqa: E402
from gpu_tree.ensemble.dag import group_classes  # noqa: E402

SEED_CLASSES = np.array(["ω1", "ω2", "ω3", "ω4"])


# -- helpers ----------------------------------------------------------------------------------
class StrengthMatch(ClassifierMixin, BaseEstimator):
    """A scripted binary classifier for the knockout: each class has a strength column,
    and the stronger of the two classes of the pair wins. It learns its pair from the
    training rows (class c's rows are 1 in column c), and logs every call in MATCHES as
    (class of label 0, class of label 1, rows)."""

    MATCHES = []

    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        self.pair_ = (int(np.argmax(X[y == 0].mean(axis=0))), int(np.argmax(X[y == 1].mean(0))))
        return self

    def predict(self, X):
        first, second = self.pair_
        StrengthMatch.MATCHES.append((first, second, len(X)))
        return (X[:, second] > X[:, first]).astype(int)

    def predict_proba(self, X):
        second_wins = self.predict(X)
        return np.column_stack([1 - second_wins, second_wins]).astype(float)


class FitOnly(BaseEstimator):
    def fit(self, X, y):
        return self


class CountingTree(DecisionTreeClassifier):
    """gpu_tree's tree, counting the rows it is asked to predict (or give probabilities
    for) after fitting."""

    def fit(self, X, y, sample_weight=None):
        self.rows_evaluated_ = 0
        return super().fit(X, y, sample_weight=sample_weight)

    def predict(self, X):
        self.rows_evaluated_ += len(X)
        return super().predict(X)

    def predict_proba(self, X):
        self.rows_evaluated_ += len(X)
        return super().predict_proba(X)


def _rows_evaluated(model):
    return sum(estimator.rows_evaluated_ for estimator in model.estimators_)


def _reset_counts(model):
    for estimator in model.estimators_:
        estimator.rows_evaluated_ = 0


def _blobs(n_classes, per_class=30, random_state=0, spread=0.5):
    return make_blobs(
        n_samples=n_classes * per_class,
        centers=n_classes,
        n_features=4,
        cluster_std=spread,
        random_state=random_state,
    )


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)


# -- the seed's examples ----------------------------------------------------------------------
def test_seed_knockout_example():
    """Seed 002, "Adaptive Directed Acyclic Graph": classifier 2 decides w1 against w2
    (w1), classifier 3 w3 against w4 (w4), and classifier 1 w1 against w4 for the final
    result; "Classifier 1 changes depending on the class outputs": a row whose first
    match goes to w2 meets w4 with the w2-w4 classifier instead."""
    X_train = np.repeat(np.eye(4), 3, axis=0)  # class c's rows: strength 1 in column c
    y_train = np.repeat(SEED_CLASSES, 3)
    adag = DAGClassifier(StrengthMatch(), kind="adag").fit(X_train, y_train)
    assert len(adag.estimators_) == 6 == 4 * 3 // 2
    assert adag.structure_ == [
        (("ω1",), ("ω2",)),
        (("ω1",), ("ω3",)),
        (("ω1",), ("ω4",)),
        (("ω2",), ("ω3",)),
        (("ω2",), ("ω4",)),
        (("ω3",), ("ω4",)),
    ]
    # Row 0: w1 beats w2, w4 beats w3, then w1 beats w4. Row 1: w2 beats w1, w4 beats w3,
    # then w4 beats w2.
    strengths = np.array([[3.0, 1.0, 1.0, 2.0], [1.0, 2.0, 0.0, 5.0]])
    StrengthMatch.MATCHES.clear()
    assert adag.predict(strengths).tolist() == ["ω1", "ω4"]
    # Round 1 on both rows, each classifier called once for them; round 2: w1-w4 for
    # row 0, w2-w4 for row 1. K - 1 = 3 evaluations per row.
    assert StrengthMatch.MATCHES == [(0, 1, 2), (2, 3, 2), (0, 3, 1), (1, 3, 1)]
    assert sum(rows for _, _, rows in StrengthMatch.MATCHES) == 2 * 3
    assert adag.n_evaluations_per_prediction_ == 3
    assert np.array_equal(adag.predict_proba(strengths), [[1, 0, 0, 0], [0, 0, 0, 1]])


def test_seed_dag_example_top_classifier_separates_w1_w2_from_w3_w4():
    """Seed 002, "Tree-Based Reduction": the top classifier separates {w1, w2} from
    {w3, w4}; the grouping comes from the purity measure (entropy: the middle split of
    four classes in a row is the purest), and each group's classifier decides within it:
    log2(4) = 2 evaluations per prediction."""
    rng = np.random.default_rng(0)
    position = np.repeat(np.arange(4.0), 10)
    X = np.column_stack([position, rng.normal(size=40)])
    y = SEED_CLASSES[position.astype(int)]
    dag = DAGClassifier(kind="dag", criterion="entropy").fit(X, y)
    assert dag.structure_ == [
        (("ω1", "ω2"), ("ω3", "ω4")),
        (("ω1",), ("ω2",)),
        (("ω3",), ("ω4",)),
    ]
    assert dag.evaluations_by_class_.tolist() == [2, 2, 2, 2]
    assert np.array_equal(dag.predict(X), y)


@pytest.mark.parametrize("n_classes", [4, 8, 16])
def test_counts_of_the_seed_table(n_classes):
    """Seed 002's table, measured: the DAG has K - 1 classifiers and a prediction
    evaluates log2(K) of them; the ADAG has K(K - 1)/2 and evaluates K - 1."""
    X, y = _blobs(n_classes)
    X_test = X[::3] + 0.1
    expected = {
        "dag": (n_classes - 1, int(math.log2(n_classes))),
        "adag": (n_classes * (n_classes - 1) // 2, n_classes - 1),
    }
    for kind, (classifiers, operations) in expected.items():
        model = DAGClassifier(CountingTree(), kind=kind).fit(X, y)
        assert len(model.estimators_) == len(model.structure_) == classifiers
        assert model.n_evaluations_per_prediction_ == operations
        assert model.evaluations_by_class_.tolist() == [operations] * n_classes
        for method in (model.predict, model.predict_proba):
            _reset_counts(model)
            method(X_test)
            # Every row's path has `operations` classifiers (none is evaluated twice).
            assert _rows_evaluated(model) == operations * len(X_test), (kind, method)
            assert all(e.rows_evaluated_ <= len(X_test) for e in model.estimators_)


@pytest.mark.parametrize("n_classes", [3, 5, 6, 7])
def test_dag_paths_when_k_is_not_a_power_of_two(n_classes):
    """Groups of ceil(k/2) and floor(k/2): depths floor(log2 K) or ceil(log2 K), at most
    ceil(log2 K); each prediction costs its class's depth. The ADAG still costs K - 1."""
    X, y = _blobs(n_classes, random_state=n_classes)
    dag = DAGClassifier(CountingTree()).fit(X, y)
    depths = dag.evaluations_by_class_
    assert len(dag.estimators_) == n_classes - 1
    assert set(depths.tolist()) == {
        math.floor(math.log2(n_classes)),
        math.ceil(math.log2(n_classes)),
    }
    assert dag.n_evaluations_per_prediction_ == math.ceil(math.log2(n_classes))
    sizes = sorted((len(first), len(second)) for first, second in dag.structure_)
    assert all(a - b in (0, -1, 1) for a, b in sizes)  # each node halves its classes
    _reset_counts(dag)
    predicted = dag.predict(X)
    classes = np.searchsorted(dag.classes_, predicted)
    assert _rows_evaluated(dag) == depths[classes].sum()
    adag = DAGClassifier(CountingTree(), kind="adag").fit(X, y)
    _reset_counts(adag)
    adag.predict(X)
    assert _rows_evaluated(adag) == (n_classes - 1) * len(X)


# -- the DAG's class grouping -----------------------------------------------------------------
def _gini_decrease(class_weights_left, class_weights_right):
    def weighted_gini(w):
        total = w.sum()
        return 0.0 if total == 0 else total - np.sum(w * w) / total

    parent = class_weights_left + class_weights_right
    return (
        weighted_gini(parent)
        - weighted_gini(class_weights_left)
        - weighted_gini(class_weights_right)
    )


def _brute_force_grouping(X, labels, weight, n_classes):
    """The best split by a plain loop over features and midpoints, then every division of
    the classes into ceil(k/2) and floor(k/2): (the least disagreeing weight, the
    divisions reaching it as sets of frozensets, the split's (feature, left mask))."""
    best = (-np.inf, None, None)
    for feature in range(X.shape[1]):
        values = np.unique(X[:, feature])
        for low, high in zip(values[:-1], values[1:], strict=True):
            left = X[:, feature] <= (low + high) / 2
            per_class = [
                np.bincount(labels[side], weight[side], n_classes) for side in (left, ~left)
            ]
            score = _gini_decrease(*per_class)
            if score > best[0] + 1e-9:
                best = (score, feature, left)
    _, feature, left = best
    left_weight = np.bincount(labels[left], weight[left], n_classes)
    right_weight = np.bincount(labels[~left], weight[~left], n_classes)
    costs = {}
    for first in itertools.combinations(range(n_classes), math.ceil(n_classes / 2)):
        second = tuple(c for c in range(n_classes) if c not in first)
        for on_left in (first, second):  # either group may take the split's left side
            cost = sum(
                right_weight[c] if c in on_left else left_weight[c] for c in range(n_classes)
            )
            key = frozenset([first, second])
            costs[key] = min(costs.get(key, np.inf), cost)
    least = min(costs.values())
    return least, {k for k, v in costs.items() if np.isclose(v, least)}, (feature, left)


@pytest.mark.parametrize("seed", range(6))
def test_grouping_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    n_classes = 5 if seed % 2 else 6
    X = rng.integers(0, 6, size=(60, 3)).astype(float)
    labels = np.concatenate([np.arange(n_classes), rng.integers(0, n_classes, 60 - n_classes)])
    X[:, seed % 3] += labels  # some feature says something about the class
    weight = rng.uniform(0.5, 2.0, size=60)
    grouping = group_classes(X, labels, weight, n_classes, criterion="gini")
    least, best_divisions, (feature, left) = _brute_force_grouping(X, labels, weight, n_classes)
    assert grouping.feature == feature
    assert np.array_equal(X[:, feature] <= grouping.threshold, left)
    assert len(grouping.first) == math.ceil(n_classes / 2)
    assert sorted(grouping.first + grouping.second) == list(range(n_classes))
    assert frozenset([grouping.first, grouping.second]) in best_divisions
    if len(best_divisions) == 1:
        (expected,) = best_divisions
        assert frozenset([grouping.first, grouping.second]) == expected


def test_grouping_moves_the_class_of_least_weight_difference():
    """The best split isolates the heavy class 0 (x <= 0) from 1, 2, 3; two groups of two
    are needed, and class 2 (2 rows, the fewest on the crowded side) joins class 0."""
    X = np.repeat([0.0, 1.0, 2.0, 3.0], [10, 3, 2, 4])[:, None]
    labels = np.repeat([0, 1, 2, 3], [10, 3, 2, 4])
    grouping = group_classes(X, labels, None, 4)
    assert (grouping.feature, grouping.threshold) == (0, 0.0)
    assert (grouping.first, grouping.second) == ((0, 2), (1, 3))
    # Weights count as rows: class 2 at 5 per row (10 in all) becomes the dearest to move,
    # and class 1 (3) joins class 0 instead; the split stays.
    weighted = group_classes(X, labels, np.where(labels == 2, 5.0, 1.0), 4)
    assert (weighted.feature, weighted.threshold) == (0, 0.0)
    assert (weighted.first, weighted.second) == ((0, 1), (2, 3))


def test_grouping_without_any_split_takes_the_class_order():
    grouping = group_classes(np.ones((6, 2)), [0, 1, 2, 0, 1, 2], None, 3)
    assert (grouping.first, grouping.second, grouping.feature) == ((0, 1), (2,), -1)


def test_grouping_is_deterministic_and_ignores_row_order(digits):
    X_train, _, y_train, _ = digits
    first = DAGClassifier().fit(X_train, y_train)
    again = DAGClassifier().fit(X_train, y_train)
    assert first.structure_ == again.structure_
    assert np.array_equal(first.predict(X_train), again.predict(X_train))
    order = np.random.default_rng(1).permutation(len(y_train))
    shuffled = DAGClassifier().fit(X_train[order], y_train[order])
    assert shuffled.structure_ == first.structure_
    # The criterion is the purity measure: entropy groups the digits differently here.
    assert (
        DAGClassifier(criterion="entropy").fit(X_train, y_train).structure_[0]
        != (first.structure_[0])
    )


# -- degenerate class counts ------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["dag", "adag"])
def test_two_classes_is_one_binary_classifier(kind):
    X, y = load_breast_cancer(return_X_y=True)
    labels = np.array(["benign", "malignant"])[1 - y]
    model = DAGClassifier(DecisionTreeClassifier(max_depth=4), kind=kind).fit(X, labels)
    direct = DecisionTreeClassifier(max_depth=4).fit(X, labels)
    assert len(model.estimators_) == 1
    assert model.structure_ == [(("benign",), ("malignant",))]
    assert model.n_evaluations_per_prediction_ == 1
    assert_tree_equal(model.estimators_[0].tree_, direct.tree_)
    assert np.array_equal(model.predict(X), direct.predict(X))
    assert np.array_equal(model.predict_proba(X), direct.predict_proba(X))


def test_one_class_predicts_it_without_classifiers():
    X = np.arange(12.0).reshape(6, 2)
    model = DAGClassifier().fit(X, ["only"] * 6)
    assert model.estimators_ == [] and model.structure_ == []
    assert model.n_evaluations_per_prediction_ == 0
    assert model.predict(X[:2]).tolist() == ["only", "only"]
    assert np.array_equal(model.predict_proba(X[:2]), [[1.0], [1.0]])


# -- any binary classifier; probabilities ---------------------------------------------------------
@pytest.mark.parametrize("kind", ["dag", "adag"])
def test_scikit_learn_logistic_regression_as_binary_classifier(digits, kind):
    X_train, X_test, y_train, y_test = digits
    model = DAGClassifier(LogisticRegression(solver="liblinear"), kind=kind).fit(
        X_train / 16, y_train
    )
    assert all(isinstance(e, LogisticRegression) for e in model.estimators_)
    assert model.score(X_test / 16, y_test) > 0.85
    proba = model.predict_proba(X_test / 16)
    assert proba.shape == (len(X_test), 10) and np.allclose(proba.sum(axis=1), 1.0)
    assert np.mean(model.classes_[proba.argmax(axis=1)] == model.predict(X_test / 16)) > 0.95


def _side_probabilities(estimator, X):
    proba = estimator.predict_proba(X)
    return proba[:, list(estimator.classes_).index(0)], proba[:, list(estimator.classes_).index(1)]


def test_dag_probabilities_are_products_along_the_paths():
    X, y = _blobs(5, spread=3.0)
    dag = DAGClassifier(LogisticRegression(solver="liblinear")).fit(X, y)
    expected = np.ones((len(X), 5))
    for estimator, (first, second) in zip(dag.estimators_, dag.structure_, strict=True):
        to_first, to_second = _side_probabilities(estimator, X)
        expected[:, list(first)] *= to_first[:, None]
        expected[:, list(second)] *= to_second[:, None]
    proba = dag.predict_proba(X)
    assert np.allclose(proba, expected) and np.allclose(proba.sum(axis=1), 1.0)
    assert 0.0 < proba.min() and proba.max() < 1.0  # soft: every path is taken
    assert np.allclose(dag.predict_log_proba(X), np.log(expected))


def test_adag_probabilities_are_those_of_winning_a_random_knockout():
    """Against every outcome of every match enumerated: K = 5, so one class has a bye."""
    X, y = _blobs(5, spread=3.0)
    adag = DAGClassifier(LogisticRegression(solver="liblinear"), kind="adag").fit(X, y)
    X = X[:20]
    beats = {}  # (a, b) -> P(a beats b), per row
    for estimator, ((a,), (b,)) in zip(adag.estimators_, adag.structure_, strict=True):
        beats[a, b], beats[b, a] = _side_probabilities(estimator, X)

    def outcomes(candidates):
        """(winner, probability per row) of each way the knockout can go."""
        if len(candidates) == 1:
            yield candidates[0], np.ones(len(X))
            return
        pairs = [candidates[i : i + 2] for i in range(0, len(candidates) - 1, 2)]
        bye = [candidates[-1]] if len(candidates) % 2 else []
        for winners in itertools.product(*pairs):
            chance = np.ones(len(X))
            for winner, (first, second) in zip(winners, pairs, strict=True):
                chance = chance * beats[winner, second if winner == first else first]
            for winner, rest in outcomes(list(winners) + bye):
                yield winner, chance * rest

    expected = np.zeros((len(X), 5))
    for winner, chance in outcomes([0, 1, 2, 3, 4]):
        expected[:, winner] += chance
    proba = adag.predict_proba(X)
    assert np.allclose(proba, expected) and np.allclose(proba.sum(axis=1), 1.0)
    assert 0.0 < proba.min()


def test_hard_classifiers_give_probabilities_agreeing_with_predict(digits):
    X_train, X_test, y_train, _ = digits
    for kind in ("dag", "adag"):
        model = DAGClassifier(kind=kind).fit(X_train, y_train)
        proba = model.predict_proba(X_test)
        assert set(np.unique(proba)) <= {0.0, 1.0}  # fully grown trees are sure
        assert np.array_equal(model.classes_[proba.argmax(axis=1)], model.predict(X_test))


@pytest.mark.parametrize("kind", ["dag", "adag"])
def test_check_estimator(kind):
    results = check_estimator(DAGClassifier(kind=kind), on_fail=None)
    failed = [
        (r["check_name"], repr(r["exception"])[:300]) for r in results if r["status"] == "failed"
    ]
    assert not failed, failed
    assert len(results) > 40


# -- input ------------------------------------------------------------------------------------
def test_errors():
    X, y = _blobs(3)
    with pytest.raises(ValueError, match="Unknown kind='tree'"):
        DAGClassifier(kind="tree").fit(X, y)
    with pytest.raises(ValueError, match="criterion='purity'"):
        DAGClassifier(criterion="purity").fit(X, y)
    with pytest.raises(TypeError, match="with fit and predict.*has no predict"):
        DAGClassifier(estimator=FitOnly()).fit(X, y)
    from sklearn.linear_model import LinearRegression, Perceptron
    from sklearn.neighbors import KNeighborsClassifier

    with pytest.raises(TypeError, match="not the regressor LinearRegression"):
        DAGClassifier(LinearRegression()).fit(X, y)
    with pytest.raises(ValueError, match="KNeighborsClassifier takes no sample_weight"):
        DAGClassifier(KNeighborsClassifier()).fit(X, y, sample_weight=np.ones(len(y)))
    with pytest.raises(NotFittedError):
        DAGClassifier().predict(X)
    model = DAGClassifier().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :2])
    # No predict_proba where the binary classifier has none; predict still works.
    perceptron = DAGClassifier(Perceptron(), kind="adag")
    assert not hasattr(perceptron, "predict_proba") and hasattr(DAGClassifier(), "predict_proba")
    assert perceptron.fit(X, y).score(X, y) > 0.9
    with pytest.raises(AttributeError, match="Perceptron has none"):
        perceptron.predict_proba(X)
    # NaN: taken where the binary classifier takes it (gpu_tree's trees), else refused.
    X_missing = X.copy()
    X_missing[::7, 0] = np.nan
    assert DAGClassifier().fit(X_missing, y).score(X_missing, y) > 0.9
    with pytest.raises(ValueError, match="NaN"):
        DAGClassifier(LogisticRegression(solver="liblinear")).fit(X_missing, y)


def test_dataframe_input_keeps_the_feature_names():
    pd = pytest.importorskip("pandas")
    X, y = _blobs(4)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    for kind in ("dag", "adag"):
        model = DAGClassifier(kind=kind).fit(frame, y)
        assert model.feature_names_in_.tolist() == ["a", "b", "c", "d"]
        assert model.n_features_in_ == 4
        assert np.array_equal(model.predict(frame), DAGClassifier(kind=kind).fit(X, y).predict(X))
        with pytest.warns(UserWarning, match="does not have valid feature names"):
            model.predict(X)
        with pytest.raises(ValueError, match="feature names"):
            model.predict(frame.rename(columns={"a": "z"}))
    assert not hasattr(DAGClassifier().fit(X, y), "feature_names_in_")


@pytest.mark.parametrize("kind", ["dag", "adag"])
def test_sample_weight_reaches_the_binary_classifiers(digits, kind):
    X_train, X_test, y_train, _ = digits
    X_train, y_train = X_train[:600], y_train[:600]
    weight = np.random.default_rng(0).integers(0, 4, size=len(y_train)).astype(float)
    weighted = DAGClassifier(kind=kind).fit(X_train, y_train, sample_weight=weight)
    # Integer weights are repeated rows: the same grouping, trees and predictions.
    repeated = DAGClassifier(kind=kind).fit(
        X_train.repeat(weight.astype(int), axis=0), y_train.repeat(weight.astype(int))
    )
    assert weighted.structure_ == repeated.structure_
    for ours, theirs in zip(weighted.estimators_, repeated.estimators_, strict=True):
        _assert_same_splits(ours.tree_, theirs.tree_)
    assert np.array_equal(weighted.predict(X_test), repeated.predict(X_test))
    # Each classifier got the weights of its rows.
    (first, second) = weighted.structure_[0]
    rows = np.isin(y_train, first + second)
    direct = DecisionTreeClassifier().fit(
        X_train[rows], np.isin(y_train[rows], second).astype(int), sample_weight=weight[rows]
    )
    assert_tree_equal(weighted.estimators_[0].tree_, direct.tree_)


def _assert_same_splits(tree, other):
    """The same nodes, splits and leaf values (row counts aside: repeated rows count)."""
    for name in ("children_left", "children_right", "feature", "threshold"):
        assert np.array_equal(getattr(tree, name), getattr(other, name)), name
    assert np.allclose(tree.value, other.value)


# -- accuracy ---------------------------------------------------------------------------------
def test_accuracy_on_digits(digits):
    """Ten classes (chance: 10 %): both reductions of trees score far above chance and
    within a few points of one multiclass tree (the ADAG's pairwise trees above it)."""
    X_train, X_test, y_train, y_test = digits
    direct = DecisionTreeClassifier().fit(X_train, y_train).score(X_test, y_test)
    dag = DAGClassifier(kind="dag").fit(X_train, y_train).score(X_test, y_test)
    adag = DAGClassifier(kind="adag").fit(X_train, y_train).score(X_test, y_test)
    assert dag > 0.75 and dag >= direct - 0.05, (dag, direct)
    assert adag > 0.8 and adag >= direct - 0.02, (adag, direct)


def test_benchmark_runs_on_digits(capsys):
    from _shared_data import bench_module

    bench = bench_module("bench_dag")
    assert bench.main(["--datasets", "digits", "--repeats", "1"]) == 0
    table = capsys.readouterr().out
    for method in ("DAG", "ADAG", "one-vs-rest", "multiclass tree"):
        assert f"| digits | {method}" in table, table
