"""The subtree finisher (kernels/cpu/subtrees.py) builds the level-wise path's tree.

Small nodes' subtrees are grown depth-first in one compiled call; every test here fits
the same data twice, once with the finisher off (``FINISH_BELOW_ROWS = 0``: level-wise
to the leaves) and once with it taking every node (the root included) or only the small
ones, and asks for the same tree bit for bit: splits, thresholds, tie-breaks, numbering,
impurities, values.
"""

import numpy as np
import pytest
from _backends import without_compiled_search
from _shared_data import bench_module, dataset_path, numeric_arff

import gpu_tree.growing.grower as grower_module
import gpu_tree.growing.splitting as splitting
from gpu_tree import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    assert_tree_equal,
)
from gpu_tree.backends.cpu import CPUExactBackend, CPUHistogramBackend, ValueRanks
from gpu_tree.datasets import make_higgs_like
from gpu_tree.kernels.cpu import subtrees as cpu_subtrees
from gpu_tree.model.tree import MULTIWAY, NUMERIC

EVERY_NODE = 10**12  # the finisher grows the whole tree from the root


def _fit_both(monkeypatch, make, X, y, sample_weight=None, finish_below=EVERY_NODE):
    """(level-wise model, finished model) of ``make()`` on the data."""
    monkeypatch.setattr(grower_module, "FINISH_BELOW_ROWS", 0)
    monkeypatch.setattr(grower_module, "FINISH_ROOT_BELOW_ROWS", 0)
    level_wise = make().fit(X, y, sample_weight=sample_weight)
    monkeypatch.setattr(grower_module, "FINISH_BELOW_ROWS", finish_below)
    finished = make().fit(X, y, sample_weight=sample_weight)
    return level_wise, finished


def _phases(model):
    return {phase for level in model.fit_stats_ for phase in level["seconds"]}


def _assert_same(level_wise, finished):
    assert "subtrees" not in _phases(level_wise)
    assert "subtrees" in _phases(finished)
    assert_tree_equal(level_wise.tree_, finished.tree_, impurity_rtol=0, value_rtol=0)
    assert level_wise.tree_.node_count > 7  # a tree worth comparing


def _data(n_rows, seed, missing=0.0, duplicates=False):
    rng = np.random.default_rng(seed)
    X, y = make_higgs_like(n_rows, random_state=seed)
    X = X[:, :8]
    if duplicates:  # few distinct values: many ties between candidates
        X = np.round(X, 1)
    if missing:
        X[rng.random(X.shape) < missing] = np.nan
    return X, y, rng


@pytest.mark.parametrize(
    "criterion", ["gini", "entropy", "log_loss", "gain_ratio", "cart", "misclassification"]
)
@pytest.mark.parametrize("missing", [0.0, 0.15])
def test_classification_every_criterion(monkeypatch, criterion, missing):
    X, y, _ = _data(1200, 1, missing=missing, duplicates=True)
    _assert_same(*_fit_both(monkeypatch, lambda: DecisionTreeClassifier(criterion=criterion), X, y))


@pytest.mark.parametrize("finish_below", [EVERY_NODE, 300, 40])
def test_finisher_takes_over_at_any_size(monkeypatch, finish_below):
    """From the root, or below a size the level-wise path reaches by subtraction (dense
    batches) or by compact histograms."""
    X, y, _ = _data(3000, 2, missing=0.05)
    _assert_same(*_fit_both(monkeypatch, DecisionTreeClassifier, X, y, finish_below=finish_below))


def test_multiclass_weighted_with_stopping_rules(monkeypatch):
    X, _, rng = _data(1500, 3, missing=0.1)
    y = rng.integers(0, 5, size=X.shape[0])
    y[X[:, 0] > 0.5] = 4  # some structure, so that the tree is more than noise
    weight = rng.random(X.shape[0]) * 3

    def make():
        return DecisionTreeClassifier(
            criterion="entropy",
            max_depth=9,
            min_samples_split=6,
            min_samples_leaf=2,
            min_weight_fraction_leaf=0.001,
            min_impurity_decrease=1e-4,
            min_purity=0.95,
        )

    _assert_same(*_fit_both(monkeypatch, make, X, y, sample_weight=weight))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("missing", [0.0, 0.1])
def test_regression(monkeypatch, weighted, missing):
    X, _, rng = _data(1500, 4, missing=missing, duplicates=True)
    y = np.nan_to_num(X[:, 0]) * 3 + rng.normal(size=X.shape[0])
    y[::7] = 5.0  # repeated targets: pure nodes whose variance is exactly 0
    weight = rng.random(X.shape[0]) + 0.1 if weighted else None
    _assert_same(
        *_fit_both(
            monkeypatch,
            lambda: DecisionTreeRegressor(min_samples_leaf=2),
            X,
            y,
            sample_weight=weight,
        )
    )


def test_regression_large_offset_targets(monkeypatch):
    """Targets around 1e9 with small spread: the impurities are measured about each
    node's mean, as the level-wise backend measures them."""
    X, _, rng = _data(800, 5)
    y = 1e9 + rng.normal(size=X.shape[0]) * 1e-3
    _assert_same(*_fit_both(monkeypatch, DecisionTreeRegressor, X, y))


def test_letter_dataset(monkeypatch):
    """A real dataset: 16 integer features, 26 classes, fully grown on 3,000 rows."""
    X, y = numeric_arff("letter.arff", "class")
    _assert_same(*_fit_both(monkeypatch, DecisionTreeClassifier, X[:3000], y[:3000]))


def test_cal_housing_regression(monkeypatch):
    X, y = numeric_arff("cal_housing.arff", "medianHouseValue")
    _assert_same(
        *_fit_both(monkeypatch, DecisionTreeRegressor, X[:3000], y[:3000].astype(np.float64))
    )


@pytest.mark.parametrize(
    ("make", "data"),
    [
        (lambda: DecisionTreeClassifier(max_leaf_nodes=40), "numeric"),
        (lambda: DecisionTreeRegressor(), "two outputs"),
        (
            lambda: DecisionTreeClassifier(splitter="exact", categorical_features=[1]),
            "categorical",
        ),
    ],
    ids=["best-first", "regression-two-outputs", "exact-categorical"],
)
def test_not_used_where_it_would_grow_another_tree(monkeypatch, make, data):
    """Best-first growth, several regression outputs (the finisher measures one output's
    squared deviations) and exact search with categorical features (its value ranks are
    no category codes) stay level-wise."""
    monkeypatch.setattr(grower_module, "FINISH_BELOW_ROWS", EVERY_NODE)
    X, y, rng = _data(600, 6)
    if data == "two outputs":
        y = np.column_stack([X[:, 0] + rng.normal(size=y.size), y])
    elif data == "categorical":
        X[:, 1] = rng.integers(0, 5, size=y.size)
    assert "subtrees" not in _phases(make().fit(X, y))


def _two_labels(X, y, rng, n_outputs):
    """``y`` and ``n_outputs - 1`` more labels: a threshold of two features, and a noisy
    four-class one."""
    second = (np.nan_to_num(X[:, 2]) + 0.5 * np.nan_to_num(X[:, 3]) > 0).astype(int)
    third = np.digitize(np.nan_to_num(X[:, 1]) + 0.3 * rng.normal(size=y.size), [-1, 0, 1])
    return np.column_stack([y, second, third][:n_outputs])


@pytest.mark.parametrize("n_outputs", [2, 3])
@pytest.mark.parametrize("criterion", ["gini", "entropy"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("missing", [0.0, 0.1])
def test_several_classification_outputs(monkeypatch, n_outputs, criterion, weighted, missing):
    """Each output's class channels scored and measured as the split scan does (the mean
    of the outputs' impurities and decreases)."""
    X, y, rng = _data(1500, 7, missing=missing, duplicates=True)
    Y = _two_labels(X, y, rng, n_outputs)
    weight = rng.random(y.size) * 3 if weighted else None
    _assert_same(
        *_fit_both(monkeypatch, lambda: DecisionTreeClassifier(criterion=criterion), X, Y, weight)
    )


@pytest.mark.parametrize("finish_below", [300, 40])
def test_several_classification_outputs_with_stopping_rules(monkeypatch, finish_below):
    X, y, rng = _data(2000, 8, missing=0.05)
    Y = _two_labels(X, y, rng, 3)

    def make():
        return DecisionTreeClassifier(
            max_depth=9, min_samples_split=6, min_samples_leaf=3, min_impurity_decrease=1e-4
        )

    _assert_same(*_fit_both(monkeypatch, make, X, Y, finish_below=finish_below))


def _exact_level_wise_vectorised(monkeypatch, make, X, y, sample_weight):
    """``make()`` fitted as exact search grew every tree before it had a compiled path:
    level by level, by the vectorised search (the reference)."""
    with monkeypatch.context() as patch:
        patch.setattr(grower_module, "FINISH_BELOW_ROWS", 0)
        patch.setattr(grower_module, "FINISH_ROOT_BELOW_ROWS", 0)
        patch.setattr(CPUExactBackend, "capabilities", without_compiled_search(CPUExactBackend))
        return make().fit(X, y, sample_weight=sample_weight)


EXACT_CASES = {
    "one-output": (1, "gini", {}),
    "two-outputs": (2, "gini", {}),
    "three-outputs-entropy": (3, "entropy", {}),
    "two-outputs-max_depth": (2, "gini", {"max_depth": 6}),
    "two-outputs-min_samples_leaf": (2, "entropy", {"min_samples_leaf": 4}),
    "regression": (0, "squared_error", {"min_samples_leaf": 2}),
}


@pytest.mark.parametrize("case", list(EXACT_CASES))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("missing", [0.0, 0.1])
def test_exact_search_grows_the_level_wise_vectorised_tree(monkeypatch, case, weighted, missing):
    """Exact search, by the compiled scan level by level and the finisher on value ranks
    below (the default), grows the tree of the vectorised level-wise search, bit for bit:
    thresholds the midpoints of the node's neighbouring values, ties, missing sides."""
    n_outputs, criterion, params = EXACT_CASES[case]
    X, y, rng = _data(3000, 9, missing=missing, duplicates=True)
    X[:, 5:] = X[:, 5:] * 1e3 + rng.normal(size=(y.size, 3))  # distinct values: wide ranks
    weight = rng.random(y.size) * 3 if weighted else None
    if n_outputs:
        Y = y if n_outputs == 1 else _two_labels(X, y, rng, n_outputs)
        estimator = DecisionTreeClassifier
    else:
        Y = np.nan_to_num(X[:, 0]) * 3 + rng.normal(size=y.size)
        estimator = DecisionTreeRegressor

    def make():
        return estimator(splitter="exact", criterion=criterion, **params)

    reference = _exact_level_wise_vectorised(monkeypatch, make, X, Y, weight)
    monkeypatch.setattr(grower_module, "FINISH_BELOW_ROWS", 500)  # level-wise above it
    monkeypatch.setattr(grower_module, "EXACT_FINISH_FACTOR", 1)
    monkeypatch.setattr(grower_module, "FINISH_ROOT_BELOW_ROWS", 0)
    _assert_same(reference, make().fit(X, Y, sample_weight=weight))
    assert np.all(reference.tree_.bin_threshold == -1)  # exact splits name no bin


def test_value_ranks_order_each_features_distinct_values():
    columns = np.array([[2.5, -1.0, 2.5, np.nan, 0.0], [7.0, 7.0, 7.0, 7.0, 7.0]])
    ranks = ValueRanks.of(columns)
    assert ranks.missing_code == 3 and ranks.has_missing and ranks.codes.dtype == np.uint8
    np.testing.assert_array_equal(ranks.codes, [[2, 0, 2, 3, 1], [0, 0, 0, 0, 0]])
    np.testing.assert_array_equal(ranks.values, [[-1.0, 0.0, 2.5, np.inf], [7.0] + [np.inf] * 3])
    wide = ValueRanks.of(np.arange(300.0)[None])
    assert wide.codes.dtype == np.uint16 and not wide.has_missing


@pytest.mark.parametrize("missing", [0.0, 0.1])
@pytest.mark.parametrize(
    "make",
    [
        lambda: DecisionTreeClassifier(max_features=3, random_state=0),
        lambda: DecisionTreeClassifier(max_features=2, criterion="entropy", random_state=4),
        lambda: DecisionTreeRegressor(max_features=0.5, random_state=1),
    ],
    ids=["gini", "entropy", "regression"],
)
def test_features_drawn_per_node_are_drawn_there_as_level_wise(monkeypatch, make, missing):
    """The finisher draws each node's features from the node's key (its path), as the
    level-wise path does: the same tree."""
    X, y, _ = _data(1500, 9, missing=missing, duplicates=True)
    if isinstance(make(), DecisionTreeRegressor):
        y = np.nan_to_num(X[:, 0]) * 2.0 + np.nan_to_num(X[:, 1])
    _assert_same(*_fit_both(monkeypatch, make, X, y))


@pytest.mark.parametrize("finish_below", [EVERY_NODE, 40])
@pytest.mark.parametrize("missing", [0.0, 0.15])
@pytest.mark.parametrize(
    "make",
    [
        lambda: ExtraTreesClassifier(3, max_features=3, random_state=2),
        lambda: ExtraTreesClassifier(2, max_features=None, criterion="entropy", random_state=5),
        lambda: ExtraTreesRegressor(3, random_state=1),
        lambda: ExtraTreesRegressor(2, max_features=0.5, bootstrap=True, random_state=3),
    ],
    ids=["gini-drawn", "entropy-every-feature", "regression", "regression-bootstrap"],
)
def test_extra_trees_random_splits_are_drawn_there_as_level_wise(
    monkeypatch, make, missing, finish_below
):
    """Extremely randomised trees: the finisher draws each node's thresholds from its key
    and splits between the same present bins as the level-wise path
    (kernels/_random_split.py, one source): every tree of the forest the same, bit for
    bit, with missing values and ties; the finisher did grow subtrees."""
    X, y, _ = _data(1500, 13, missing=missing, duplicates=True)
    if isinstance(make(), ExtraTreesRegressor):
        y = np.nan_to_num(X[:, 0]) * 2.0 + np.nan_to_num(X[:, 1])
    calls = []
    finish = CPUHistogramBackend.finish_subtrees

    def counted(self, nodes, *args, **kwargs):
        calls.append(len(nodes))
        return finish(self, nodes, *args, **kwargs)

    monkeypatch.setattr(CPUHistogramBackend, "finish_subtrees", counted)
    level_wise, finished = _fit_both(monkeypatch, make, X, y, finish_below=finish_below)
    assert sum(calls) > 0  # the second fit finished subtrees, the first none
    for a, b in zip(level_wise.estimators_, finished.estimators_, strict=True):
        assert_tree_equal(a.tree_, b.tree_, impurity_rtol=0, value_rtol=0)
        assert a.tree_.node_count > 7
    np.testing.assert_array_equal(level_wise.predict(X), finished.predict(X))


@pytest.mark.parametrize("max_bins", [256, 4000])
@pytest.mark.parametrize("forest", ["extra_trees", "random_forest"])
def test_drawn_features_are_finished_on_one_row_order(monkeypatch, forest, max_bins):
    """Extremely randomised trees and forests that draw features per node are finished by
    the variant that keeps one row order per subtree (``finish_subtrees_one_row_order``):
    the first draw each feature's split from a node's rows, the second build a drawn
    feature's histogram from them unsorted. The level-wise trees, with missing values,
    with bins enough for a scan of each node's codes, and with more bins than rows (a
    deep node's codes put in order by insertion)."""
    chosen = []
    finisher = cpu_subtrees.finisher

    def spied(*args):
        kernel = finisher(*args)
        chosen.append(kernel)
        return kernel

    monkeypatch.setattr(cpu_subtrees, "finisher", spied)
    X, y, _ = _data(1500, 21, missing=0.1)
    estimator = ExtraTreesClassifier if forest == "extra_trees" else RandomForestClassifier

    def make():
        return estimator(3, max_bins=max_bins, random_state=7)

    level_wise, finished = _fit_both(monkeypatch, make, X, y)
    assert chosen and all(k is cpu_subtrees.finish_subtrees_one_row_order for k in chosen)
    for a, b in zip(level_wise.estimators_, finished.estimators_, strict=True):
        assert_tree_equal(a.tree_, b.tree_, impurity_rtol=0, value_rtol=0)
        assert a.tree_.node_count > 7


def test_plain_trees_are_not_finished_on_one_row_order(monkeypatch):
    """A best-split tree keeps the sorted lists' variant (a plain fit does not compile
    the one-row-order one)."""
    chosen = []
    finisher = cpu_subtrees.finisher
    monkeypatch.setattr(
        cpu_subtrees, "finisher", lambda *args: chosen.append(finisher(*args)) or chosen[-1]
    )
    monkeypatch.setattr(grower_module, "FINISH_BELOW_ROWS", EVERY_NODE)
    X, y, _ = _data(600, 6)
    DecisionTreeClassifier().fit(X, y)
    assert chosen and all(k is cpu_subtrees.finish_subtrees_numeric for k in chosen)


# -- feature costs and monotonicity constraints (the constrained variant) -------------------


def _costs(n_features, seed):
    return np.random.default_rng(seed).integers(1, 21, size=n_features).astype(np.float64)


def _regression_targets(X, rng):
    y = np.nan_to_num(X[:, 0]) * 3 + np.nan_to_num(X[:, 2]) + rng.normal(size=X.shape[0])
    y[::7] = 5.0  # repeated targets: pure nodes
    return y


def _assert_constrained_same(monkeypatch, make, X, y, sample_weight=None, finish_below=EVERY_NODE):
    """The finisher grows the level-wise tree of a fit with costs or constraints, in its
    constrained variant (a plain fit's variants never see one)."""
    chosen = []
    finisher = cpu_subtrees.finisher
    monkeypatch.setattr(
        cpu_subtrees, "finisher", lambda *args: chosen.append(finisher(*args)) or chosen[-1]
    )
    level_wise, finished = _fit_both(
        monkeypatch, make, X, y, sample_weight=sample_weight, finish_below=finish_below
    )
    assert chosen and all(
        k
        in (
            cpu_subtrees.finish_subtrees_numeric_constrained,
            cpu_subtrees.finish_subtrees_one_row_order_constrained,
        )
        for k in chosen
    )
    _assert_same_predictions(level_wise, finished, X)


@pytest.mark.parametrize("criterion", ["entropy", "gain_ratio", "gini", "cart"])
@pytest.mark.parametrize("cost_criterion", ["tan_schlimmer", "nunez"])
@pytest.mark.parametrize("missing", [0.0, 0.15])
def test_feature_costs_classification(monkeypatch, criterion, cost_criterion, missing):
    """select_by_cost's choice (the same measure, tolerances and ties) made in the
    finisher: the level-wise tree, bit for bit."""
    X, y, _ = _data(1500, 31, missing=missing, duplicates=True)
    costs = _costs(X.shape[1], 1)

    def make():
        return DecisionTreeClassifier(
            criterion=criterion, feature_costs=costs, cost_criterion=cost_criterion
        )

    _assert_constrained_same(monkeypatch, make, X, y)


@pytest.mark.parametrize("cost_criterion", ["tan_schlimmer", "nunez"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("scale", [1.0, 1e6])
def test_feature_costs_regression(monkeypatch, cost_criterion, weighted, scale):
    """Regression gains in real units (the fit's targets scaled by a power of two):
    Nunez's measure of gains far above 1 bit, weights, missing values."""
    X, _, rng = _data(1500, 32, missing=0.1, duplicates=True)
    y = _regression_targets(X, rng) * scale
    weight = rng.random(X.shape[0]) + 0.1 if weighted else None
    costs = _costs(X.shape[1], 2)

    def make():
        return DecisionTreeRegressor(
            feature_costs=costs, cost_criterion=cost_criterion, cost_weight=0.5
        )

    _assert_constrained_same(monkeypatch, make, X, y, sample_weight=weight)


@pytest.mark.parametrize(
    "make",
    [
        lambda costs: DecisionTreeClassifier(
            criterion="entropy", feature_costs=costs, max_features=4, random_state=3
        ),
        lambda costs: DecisionTreeClassifier(
            splitter="random", feature_costs=costs, cost_criterion="nunez", random_state=5
        ),
        lambda costs: DecisionTreeClassifier(
            criterion="entropy",
            feature_costs=costs,
            min_samples_leaf=3,
            min_impurity_decrease=1e-3,
            max_depth=9,
        ),
    ],
    ids=["features-drawn", "random-thresholds", "stopping-rules"],
)
@pytest.mark.parametrize("finish_below", [EVERY_NODE, 40])
def test_feature_costs_with_draws_and_rules(monkeypatch, make, finish_below):
    X, y, _ = _data(1500, 33, missing=0.1, duplicates=True)
    costs = _costs(X.shape[1], 3)
    _assert_constrained_same(monkeypatch, lambda: make(costs), X, y, finish_below=finish_below)


@pytest.mark.parametrize("seed", range(6))
def test_feature_costs_seeded_sweep(monkeypatch, seed):
    """Random costs (ties among equal ones), classes, weights and missing values."""
    X, _, rng = _data(900, 40 + seed, missing=0.1 * (seed % 2), duplicates=seed % 3 == 0)
    y = rng.integers(0, 2 + seed % 3, size=X.shape[0])
    y[np.nan_to_num(X[:, 1]) > 0.3] = 0
    costs = rng.integers(1, 4, size=X.shape[1]).astype(np.float64)
    weight = rng.random(X.shape[0]) * 2 if seed % 2 else None
    criterion = ("entropy", "gini", "gain_ratio")[seed % 3]
    cost_criterion = ("tan_schlimmer", "nunez")[seed % 2]

    def make():
        return DecisionTreeClassifier(
            criterion=criterion, feature_costs=costs, cost_criterion=cost_criterion
        )

    _assert_constrained_same(monkeypatch, make, X, y, sample_weight=weight)


def _monotonic_cst(n_features, signs):
    cst = np.zeros(n_features, dtype=np.int64)
    cst[: len(signs)] = signs
    return cst


@pytest.mark.parametrize("signs", [(1, -1, 1), (-1, 1, -1)], ids=["increasing", "decreasing"])
@pytest.mark.parametrize("missing", [0.0, 0.15])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("finish_below", [EVERY_NODE, 40])
def test_monotonic_classification(monkeypatch, signs, missing, weighted, finish_below):
    """Each node's bounds kept on the finisher's stack as NodeTable keeps them, the
    children's values clipped into them: the level-wise tree, values included."""
    X, y, rng = _data(1500, 34, missing=missing, duplicates=True)
    weight = rng.random(X.shape[0]) + 0.1 if weighted else None
    cst = _monotonic_cst(X.shape[1], signs)
    _assert_constrained_same(
        monkeypatch,
        lambda: DecisionTreeClassifier(monotonic_cst=cst),
        X,
        y,
        sample_weight=weight,
        finish_below=finish_below,
    )


@pytest.mark.parametrize("signs", [(1, -1, 1), (-1, 1, -1)], ids=["increasing", "decreasing"])
@pytest.mark.parametrize("missing", [0.0, 0.15])
@pytest.mark.parametrize("finish_below", [EVERY_NODE, 40])
def test_monotonic_regression(monkeypatch, signs, missing, finish_below):
    X, _, rng = _data(1500, 35, missing=missing, duplicates=True)
    y = _regression_targets(X, rng)
    cst = _monotonic_cst(X.shape[1], signs)
    _assert_constrained_same(
        monkeypatch,
        lambda: DecisionTreeRegressor(monotonic_cst=cst, min_samples_leaf=2),
        X,
        y,
        finish_below=finish_below,
    )


@pytest.mark.parametrize(
    "make",
    [
        lambda cst, costs: DecisionTreeClassifier(
            splitter="random", monotonic_cst=cst, random_state=2
        ),
        lambda cst, costs: DecisionTreeRegressor(monotonic_cst=cst, max_features=5, random_state=4),
        lambda cst, costs: DecisionTreeClassifier(
            criterion="entropy", monotonic_cst=cst, feature_costs=costs
        ),
        lambda cst, costs: DecisionTreeRegressor(
            monotonic_cst=cst, feature_costs=costs, cost_criterion="nunez"
        ),
    ],
    ids=["random-thresholds", "features-drawn", "with-costs", "regression-with-costs"],
)
def test_monotonic_with_draws_and_costs(monkeypatch, make):
    X, y, rng = _data(1500, 36, missing=0.1, duplicates=True)
    if isinstance(make(None, None), DecisionTreeRegressor):
        y = _regression_targets(X, rng)
    cst = _monotonic_cst(X.shape[1], (1, 0, -1))
    costs = _costs(X.shape[1], 4)
    _assert_constrained_same(monkeypatch, lambda: make(cst, costs), X, y, finish_below=300)


@pytest.mark.parametrize(
    "make",
    [
        lambda: DecisionTreeClassifier(feature_costs=np.ones(8), categorical_features=[1]),
        lambda: DecisionTreeClassifier(monotonic_cst=[1] + [0] * 7, categorical_features=[1]),
        lambda: DecisionTreeClassifier(feature_costs=np.arange(1.0, 9.0)),
    ],
    ids=["costs-categorical", "monotonic-categorical", "costs-many-classes"],
)
def test_constrained_fits_it_does_not_grow_stay_level_wise(monkeypatch, make):
    """Costs or constraints with categorical features (the finisher's categorical search
    has neither), and costs with more than 16 classes (select_by_cost's weights are
    numpy's pairwise sums there)."""
    monkeypatch.setattr(grower_module, "FINISH_BELOW_ROWS", EVERY_NODE)
    X, y, rng = _data(600, 6)
    X[:, 1] = rng.integers(0, 5, size=y.size)
    if make().feature_costs is not None and make().categorical_features is None:
        y = rng.integers(0, 20, size=y.size)
    assert "subtrees" not in _phases(make().fit(X, y))


# -- Poisson: deviances measured on the rows after growth -----------------------------------


def _counts(n_rows, seed, missing):
    X, _, rng = _data(n_rows, seed, missing=missing, duplicates=True)
    y = rng.poisson(np.exp(np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 3]) / 2)).astype(float)
    return X, y, rng


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("missing", [0.0, 0.1])
@pytest.mark.parametrize("finish_below", [EVERY_NODE, 40])
def test_poisson(monkeypatch, weighted, missing, finish_below):
    """The finisher leaves each root's rows in its nodes' order and the backend's
    partition takes their ranges: the deviances measured on them after growth are the
    level-wise tree's, bit for bit, as are the splits."""
    X, y, rng = _counts(1500, 50, missing)
    weight = rng.random(X.shape[0]) + 0.2 if weighted else None

    def make():
        return DecisionTreeRegressor(criterion="poisson", min_samples_leaf=2)

    level_wise, finished = _fit_both(
        monkeypatch, make, X, y, sample_weight=weight, finish_below=finish_below
    )
    _assert_same_predictions(level_wise, finished, X)


def test_poisson_forest_and_depth_limit(monkeypatch):
    """Several roots (a forest's trees) in one backend, each tree's rows its own."""
    X, y, _ = _counts(1500, 51, 0.1)

    def make():
        return ExtraTreesRegressor(3, criterion="poisson", max_depth=10, random_state=2)

    level_wise, finished = _fit_both(monkeypatch, make, X, y, finish_below=300)
    for a, b in zip(level_wise.estimators_, finished.estimators_, strict=True):
        assert_tree_equal(a.tree_, b.tree_, impurity_rtol=0, value_rtol=0)
        assert a.tree_.node_count > 7
    np.testing.assert_array_equal(level_wise.predict(X), finished.predict(X))


@pytest.mark.parametrize(
    "make",
    [
        lambda: DecisionTreeClassifier(splitter="exact", feature_costs=_costs(8, 5)),
        lambda: DecisionTreeRegressor(splitter="exact", monotonic_cst=[1, -1] + [0] * 6),
        lambda: DecisionTreeRegressor(splitter="exact", criterion="poisson", max_depth=8),
    ],
    ids=["costs", "monotonic", "poisson"],
)
def test_exact_search_constrained_and_poisson(monkeypatch, make):
    """Exact search's finisher (value ranks) with costs, constraints or Poisson."""
    X, y, rng = _counts(1200, 52, 0.1)
    if isinstance(make(), DecisionTreeClassifier):
        y = (y > np.median(y)).astype(int)
    _assert_same_predictions(*_fit_both(monkeypatch, make, X, y), X)


# -- categorical features (binary subset splits) ---------------------------------------


def _assert_same_predictions(level_wise, finished, X):
    _assert_same(level_wise, finished)
    np.testing.assert_array_equal(level_wise.predict(X), finished.predict(X))
    if hasattr(level_wise, "predict_proba"):
        np.testing.assert_array_equal(level_wise.predict_proba(X), finished.predict_proba(X))


def _categorical_data(n_rows, seed, n_categories=20, n_classes=2, missing=0.0):
    """Three categorical columns (up to ``n_categories`` codes, NaN for missing values)
    between numeric ones, and classes that depend on both."""
    X, _, rng = _data(n_rows, seed, duplicates=True)
    X = X[:, :5]
    codes = rng.integers(0, n_categories, size=(n_rows, 3))
    # Some categories carry the class, others noise; duplicates make ties likely.
    signal = (codes[:, 0] % 3 == 0).astype(int) + (codes[:, 1] < n_categories // 2)
    y = (signal + (X[:, 1] > 0.3) + rng.integers(0, 2, size=n_rows)) % n_classes
    X[:, [0, 2, 4]] = codes
    if missing:
        X[:, [0, 2, 4]] = np.where(rng.random((n_rows, 3)) < missing, np.nan, X[:, [0, 2, 4]])
    return X, y, rng


CATEGORICAL = [0, 2, 4]


@pytest.mark.parametrize(
    "criterion", ["gini", "entropy", "log_loss", "gain_ratio", "cart", "misclassification"]
)
@pytest.mark.parametrize("missing", [0.0, 0.15])
def test_categorical_every_criterion(monkeypatch, criterion, missing):
    X, y, _ = _categorical_data(1500, 11, missing=missing)

    def make():
        return DecisionTreeClassifier(criterion=criterion, categorical_features=CATEGORICAL)

    _assert_same_predictions(*_fit_both(monkeypatch, make, X, y), X)


def test_categorical_with_features_drawn_per_node(monkeypatch):
    """Drawn features on the categorical search: the finisher masks the same features."""
    X, y, _ = _categorical_data(1500, 12, missing=0.1)

    def make():
        return DecisionTreeClassifier(
            categorical_features=CATEGORICAL, max_features=2, random_state=3
        )

    _assert_same_predictions(*_fit_both(monkeypatch, make, X, y), X)


@pytest.mark.parametrize("max_subset", [0, 1, 2])
@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_categorical_multiclass_subsets(monkeypatch, max_subset, criterion):
    """Multiclass targets: one ordering per class, then every subset of at most
    ``max_category_subset`` categories."""
    X, y, _ = _categorical_data(2000, 12, n_classes=4, missing=0.05)

    def make():
        return DecisionTreeClassifier(
            criterion=criterion,
            categorical_features=CATEGORICAL,
            max_category_subset=max_subset,
        )

    _assert_same_predictions(*_fit_both(monkeypatch, make, X, y), X)


def test_categorical_multiclass_in_passes_of_one_candidate(monkeypatch):
    """The level-wise search offers a multiclass node's orderings and subsets in passes
    sized by its chunk (memory), the finisher in one pass each: only scores within the
    tolerance of each other but not equal could be chosen differently (cpu_subtrees'
    docstring). Here the level-wise passes hold one ordering or one subset each, the
    most the grouping can differ, and the trees are still the same."""
    monkeypatch.setattr(splitting, "_SUBSET_FLOATS_PER_PASS", 1)
    X, y, _ = _categorical_data(2500, 18, n_classes=6, missing=0.05)

    def make():
        return DecisionTreeClassifier(criterion="entropy", categorical_features=CATEGORICAL)

    _assert_same_predictions(*_fit_both(monkeypatch, make, X, y), X)


@pytest.mark.parametrize("finish_below", [300, 40])
def test_categorical_finisher_takes_over_at_any_size(monkeypatch, finish_below):
    X, y, _ = _categorical_data(3000, 13, n_classes=3, missing=0.05)

    def make():
        return DecisionTreeClassifier(categorical_features=CATEGORICAL)

    _assert_same_predictions(*_fit_both(monkeypatch, make, X, y, finish_below=finish_below), X)


def test_categorical_weighted_with_stopping_rules(monkeypatch):
    X, y, rng = _categorical_data(2000, 14, n_classes=5, missing=0.1)
    weight = rng.random(X.shape[0]) * 3

    def make():
        return DecisionTreeClassifier(
            criterion="entropy",
            categorical_features=CATEGORICAL,
            max_depth=12,
            min_samples_split=5,
            min_samples_leaf=3,
            min_weight_fraction_leaf=0.001,
            min_impurity_decrease=1e-4,
            min_purity=0.97,
        )

    _assert_same_predictions(*_fit_both(monkeypatch, make, X, y, sample_weight=weight), X)


@pytest.mark.parametrize("min_samples_leaf", [1, 4])
def test_categorical_min_samples_leaf(monkeypatch, min_samples_leaf):
    X, y, _ = _categorical_data(1500, 15, n_classes=3)

    def make():
        return DecisionTreeClassifier(
            categorical_features=CATEGORICAL, min_samples_leaf=min_samples_leaf
        )

    _assert_same_predictions(*_fit_both(monkeypatch, make, X, y), X)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("missing", [0.0, 0.1])
def test_categorical_regression(monkeypatch, weighted, missing):
    X, _, rng = _categorical_data(1500, 16, missing=missing)
    codes = np.nan_to_num(X[:, CATEGORICAL], nan=7.0)
    y = np.sin(codes[:, 0]) * 2 + (codes[:, 1] % 4) + X[:, 1] + rng.normal(size=X.shape[0])
    y[::9] = 3.0  # repeated targets: pure nodes
    weight = rng.random(X.shape[0]) + 0.1 if weighted else None

    def make():
        return DecisionTreeRegressor(categorical_features=CATEGORICAL, min_samples_leaf=2)

    _assert_same_predictions(*_fit_both(monkeypatch, make, X, y, sample_weight=weight), X)


def test_categorical_only_features(monkeypatch):
    """Every feature categorical (a 64-category column: two bitset words)."""
    rng = np.random.default_rng(17)
    X = np.column_stack([rng.integers(0, 70, size=2500), rng.integers(0, 6, size=2500)]).astype(
        np.float64
    )
    y = ((X[:, 0] % 5 == 1) | (X[:, 1] == 2)).astype(int) ^ (rng.random(2500) < 0.1)

    def make():
        return DecisionTreeClassifier(categorical_features=[0, 1])

    level_wise, finished = _fit_both(monkeypatch, make, X, y)
    assert level_wise.tree_.n_category_words == 2
    _assert_same_predictions(level_wise, finished, X)


@pytest.mark.parametrize("name", ["mushroom", "nursery", "car_evaluation", "adult"])
def test_categorical_real_datasets(monkeypatch, name):
    """Real data sets with categorical features (../shared/datasets), fully grown."""
    pytest.importorskip("pandas")
    data = bench_module("_categorical_data").load(name, dataset_path)
    X, y = data.X.iloc[data.train].reset_index(drop=True), data.y[data.train]

    def make():
        return DecisionTreeClassifier(categorical_features=data.categorical)

    level_wise, finished = _fit_both(
        monkeypatch, make, X, y, finish_below=grower_module.FINISH_BELOW_ROWS
    )
    _assert_same_predictions(level_wise, finished, X)


# -- multiway categorical splits (ID3) -------------------------------------------------


def _multiway(estimator=DecisionTreeClassifier, **params):
    def make():
        return estimator(categorical_features=CATEGORICAL, categorical_split="multiway", **params)

    return make


@pytest.mark.parametrize("criterion", ["gini", "entropy", "gain_ratio", "misclassification"])
@pytest.mark.parametrize("missing", [0.0, 0.15])
def test_multiway_every_criterion(monkeypatch, criterion, missing):
    """Numeric features split in two between the multiway nodes, the missing rows go to
    each multiway node's largest branch, and the finished tree is numbered as the
    level-wise path numbers it."""
    X, y, _ = _categorical_data(1500, 21, n_categories=8, missing=missing)
    level_wise, finished = _fit_both(monkeypatch, _multiway(criterion=criterion), X, y)
    assert MULTIWAY in level_wise.tree_.split_kind
    assert NUMERIC in level_wise.tree_.split_kind
    _assert_same_predictions(level_wise, finished, X)


@pytest.mark.parametrize("finish_below", [300, 40])
def test_multiway_finisher_takes_over_at_any_size(monkeypatch, finish_below):
    """Below nodes grown level by level: a feature a multiway ancestor split is not
    searched in the finished subtrees either."""
    monkeypatch.setattr(grower_module, "MULTIWAY_FINISH_FACTOR", 1)
    X, y, _ = _categorical_data(3000, 22, n_categories=6, n_classes=3, missing=0.05)
    level_wise, finished = _fit_both(monkeypatch, _multiway(), X, y, finish_below=finish_below)
    assert "split_scoring" in _phases(finished)  # the top levels were grown level by level
    _assert_same_predictions(level_wise, finished, X)


def test_multiway_weighted_multiclass_with_stopping_rules(monkeypatch):
    X, y, rng = _categorical_data(2000, 23, n_categories=10, n_classes=4, missing=0.1)
    weight = rng.random(X.shape[0]) * 3
    make = _multiway(
        criterion="entropy",
        max_depth=9,
        min_samples_split=5,
        min_samples_leaf=3,
        min_weight_fraction_leaf=0.001,
        min_impurity_decrease=1e-4,
        min_purity=0.97,
    )
    _assert_same_predictions(*_fit_both(monkeypatch, make, X, y, sample_weight=weight), X)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("missing", [0.0, 0.1])
def test_multiway_regression(monkeypatch, weighted, missing):
    X, _, rng = _categorical_data(1500, 24, n_categories=7, missing=missing)
    codes = np.nan_to_num(X[:, CATEGORICAL], nan=3.0)
    y = np.sin(codes[:, 0]) * 2 + (codes[:, 1] % 4) + X[:, 1] + rng.normal(size=X.shape[0])
    y[::9] = 3.0  # repeated targets: pure nodes
    weight = rng.random(X.shape[0]) + 0.1 if weighted else None
    make = _multiway(DecisionTreeRegressor, min_samples_leaf=2)
    _assert_same_predictions(*_fit_both(monkeypatch, make, X, y, sample_weight=weight), X)


def test_multiway_categorical_only_features(monkeypatch):
    """Every feature categorical, one of 70 categories (two bitset words)."""
    rng = np.random.default_rng(25)
    X = np.column_stack(
        [rng.integers(0, 70, size=2500), rng.integers(0, 6, size=2500), rng.integers(0, 3, 2500)]
    ).astype(np.float64)
    y = ((X[:, 0] % 5 == 1) | (X[:, 1] == 2)).astype(int) ^ (rng.random(2500) < 0.1)

    def make():
        return DecisionTreeClassifier(categorical_features=[0, 1, 2], categorical_split="multiway")

    level_wise, finished = _fit_both(monkeypatch, make, X, y)
    assert level_wise.tree_.n_category_words == 2
    _assert_same_predictions(level_wise, finished, X)


@pytest.mark.parametrize("name", ["mushroom", "car_evaluation", "adult"])
def test_multiway_real_datasets(monkeypatch, name):
    """Real data sets with categorical features (../shared/datasets), fully grown, the
    finisher taking the nodes it takes in a fit."""
    pytest.importorskip("pandas")
    data = bench_module("_categorical_data").load(name, dataset_path)
    X, y = data.X.iloc[data.train].reset_index(drop=True), data.y[data.train]

    def make():
        return DecisionTreeClassifier(
            categorical_features=data.categorical, categorical_split="multiway"
        )

    level_wise, finished = _fit_both(
        monkeypatch, make, X, y, finish_below=grower_module.FINISH_BELOW_ROWS
    )
    _assert_same_predictions(level_wise, finished, X)


def test_multiway_with_features_drawn_per_node_stays_level_wise(monkeypatch):
    """The finisher's draws would not know the features multiway ancestors used."""
    monkeypatch.setattr(grower_module, "FINISH_BELOW_ROWS", EVERY_NODE)
    X, y, _ = _categorical_data(600, 26, n_categories=5)
    model = _multiway(max_features=2, random_state=0)().fit(X, y)
    assert "subtrees" not in _phases(model)


def test_level_wise_numbering_is_identity_on_level_wise_multiway_trees(monkeypatch):
    """Level-wise growth splits a level's binary nodes before its multiway nodes, so a
    tree with both at one level is not numbered breadth first: Tree.level_wise, the
    finished trees' renumbering, is that numbering."""
    monkeypatch.setattr(grower_module, "FINISH_BELOW_ROWS", 0)
    monkeypatch.setattr(grower_module, "FINISH_ROOT_BELOW_ROWS", 0)
    X, y, _ = _categorical_data(1500, 27, n_categories=6)
    tree = _multiway()().fit(X, y).tree_
    assert_tree_equal(tree.level_wise(), tree, impurity_rtol=0, value_rtol=0)
    with pytest.raises(AssertionError):
        assert_tree_equal(tree.breadth_first(), tree, impurity_rtol=0, value_rtol=0)


def test_fit_stats_count_every_node_searched(monkeypatch):
    """The finisher's searched nodes are counted at their own levels: every split node
    was searched, and the rows read at a level are the rows of its nodes searched."""
    monkeypatch.setattr(grower_module, "FINISH_BELOW_ROWS", EVERY_NODE)
    X, y, _ = _data(700, 8)
    model = DecisionTreeClassifier(max_depth=6).fit(X, y)
    tree = model.tree_
    split = tree.children_left >= 0
    for entry in model.fit_stats_:
        at_level = tree.depth == entry["level"]
        assert entry["nodes_built"] >= np.count_nonzero(split & at_level)
        assert entry["nodes_built"] <= np.count_nonzero(at_level)
        rows = tree.n_node_samples
        assert entry["rows_read"] >= rows[split & at_level].sum()
        assert entry["rows_read"] <= rows[at_level].sum()
    assert sum(e["nodes_built"] for e in model.fit_stats_) >= np.count_nonzero(split)
    levels = [e["level"] for e in model.fit_stats_]
    assert levels == sorted(set(levels))  # one entry per level, in order
    assert set(np.unique(tree.depth[split]).tolist()) <= set(levels)


def test_breadth_first_is_identity_on_level_wise_trees(monkeypatch):
    monkeypatch.setattr(grower_module, "FINISH_BELOW_ROWS", 0)
    monkeypatch.setattr(grower_module, "FINISH_ROOT_BELOW_ROWS", 0)
    X, y, _ = _data(900, 9)
    tree = DecisionTreeClassifier().fit(X, y).tree_
    assert_tree_equal(tree.breadth_first(), tree, impurity_rtol=0, value_rtol=0)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 8, 33, 1000])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_rows_are_ordered_by_code_as_a_stable_sort_orders_them(n, dtype):
    """The finisher's merge sort (subtrees of fewer rows than bins) is numpy's stable sort."""
    from gpu_tree.kernels.cpu.subtrees import _stable_order

    rng = np.random.default_rng(n)
    codes = rng.integers(0, 4 if n < 40 else np.iinfo(dtype).max, n).astype(dtype)
    order = np.empty(n, dtype=np.int64)
    _stable_order(codes, order, np.empty(n, dtype=np.int64))
    np.testing.assert_array_equal(order, np.argsort(codes, kind="stable"))
