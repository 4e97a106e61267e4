"""The features × sizes matrix's cases (bench/bench_sizes.py ``--parts features``).

Each case is one gpu_tree feature beyond the plain tree and the reference a user would
otherwise reach for: scikit-learn's estimator of the same feature where it has one, its
plain tree where it has none (oblique splits, feature costs, ID3's multiway splits). A
case names the data it runs on, how to build both models, which phase is timed (the fit,
or the prediction of the training rows), and how its quality is read (accuracy, or R²
for regression). ``cause`` is what a profile found where gpu_tree was slower than the
reference (bench/RESULTS.md holds the measurements); the table prints it beside every
figure below 1×.

The data (``make_data(kind, rows, seed)``, from bench_sizes):

* ``higgs``       28 numeric features, a binary label
* ``counts``      the same features, a count target (Poisson's and absolute error's)
* ``two_labels``  the same features, the label and a second binary label
* ``adult``       ../shared/datasets' adult: 8 categorical columns (codes, NaN missing)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

N_TREES = 10
PREDICT_DEPTH = 10
MONOTONIC_FEATURES = 3  # constrained: the first three features increase the label


@dataclass(frozen=True)
class FeatureCase:
    key: str  # for --cases
    name: str
    data: str
    reference: str
    ours: Callable  # (data, args) -> unfitted gpu_tree model
    theirs: Callable  # (data, args) -> unfitted reference model
    timed: str = "fit"  # or "predict"
    regression: bool = False
    cause: str = ""


def _categorical(data):
    return list(data.categorical) or None


def _monotonic(data):
    constraints = np.zeros(data.X_train.shape[1], dtype=np.int64)
    constraints[:MONOTONIC_FEATURES] = 1
    return constraints.tolist()


def _costs(data):
    # Whole-number costs 1..20 per feature, drawn once: the cost-sensitive search scores
    # every feature's best split against its cost.
    return np.random.default_rng(0).integers(1, 21, size=data.X_train.shape[1]).tolist()


def _gpu_tree(name, **params):
    def make(data, args):
        import gpu_tree

        return getattr(gpu_tree, name)(device="cpu", random_state=args.seed, **params)

    return make


def _sklearn(module, name, **params):
    def make(data, args):
        import importlib

        return getattr(importlib.import_module(module), name)(random_state=args.seed, **params)

    return make


def _forest(gpu_tree_name, sklearn_name):
    def ours(data, args):
        import gpu_tree

        return getattr(gpu_tree, gpu_tree_name)(
            n_estimators=N_TREES, n_jobs=args.n_jobs, device="cpu", random_state=args.seed
        )

    def theirs(data, args):
        import sklearn.ensemble

        return getattr(sklearn.ensemble, sklearn_name)(
            n_estimators=N_TREES, n_jobs=args.n_jobs, random_state=args.seed
        )

    return ours, theirs


def _with_data(make_params, factory):
    """A model factory whose parameters depend on the data (its columns): ``factory``
    (``_gpu_tree`` or ``_sklearn`` with their fixed arguments) gets ``make_params(data)``."""

    def make(data, args):
        return factory(**make_params(data))(data, args)

    return make


_SKLEARN_TREE = _sklearn("sklearn.tree", "DecisionTreeClassifier")
_extra_ours, _extra_theirs = _forest("ExtraTreesClassifier", "ExtraTreesClassifier")
_forest_ours, _forest_theirs = _forest("RandomForestClassifier", "RandomForestClassifier")

CASES = (
    FeatureCase(
        "extra_trees",
        "extra trees (10, full depth)",
        "higgs",
        "scikit-learn ExtraTreesClassifier(10)",
        _extra_ours,
        _extra_theirs,
        cause="fixed work per node in the subtree finisher (every feature's draw score, two "
        "passes over the node's rows per drawn feature, the general split scan of two-bin "
        "histograms): about 1.6 µs a node and 0.36 µs a drawn feature, against "
        "scikit-learn's 0.2 and 0.23",
    ),
    FeatureCase(
        "random_forest",
        "random forest (10, full depth)",
        "higgs",
        "scikit-learn RandomForestClassifier(10)",
        _forest_ours,
        _forest_theirs,
    ),
    FeatureCase(
        "categorical",
        "native categorical (full depth)",
        "adult",
        "scikit-learn tree on the ordinal codes",
        _with_data(
            lambda d: {"categorical_features": _categorical(d)},
            partial(_gpu_tree, "DecisionTreeClassifier"),
        ),
        _SKLEARN_TREE,
        cause="the subtree finisher scores each node by the level-wise batch search run on one "
        "node (about 9 µs a node at 1,000 rows, scikit-learn's whole cost of one), and 1.5-2 "
        "ms of fixed Python, category coding and binning per fit",
    ),
    FeatureCase(
        "multiway",
        "multiway (ID3) splits (full depth)",
        "adult",
        "scikit-learn tree on the ordinal codes",
        _with_data(
            lambda d: {"categorical_features": _categorical(d)},
            partial(
                _gpu_tree,
                "DecisionTreeClassifier",
                categorical_split="multiway",
                criterion="entropy",
            ),
        ),
        _SKLEARN_TREE,
        cause="a small fit's fixed costs: at 1,000 rows about 3 ms of Python and numpy per "
        "fit (inputs, binning, the finisher's set-up), binning's serial kernel 0.9 ms, the "
        "subtree finisher 1.3 ms (the whole tree)",
    ),
    FeatureCase(
        "oblique",
        "oblique splits (depth 10)",
        "higgs",
        "scikit-learn tree (axis-parallel), depth 10",
        _gpu_tree("ObliqueDecisionTreeClassifier", max_depth=10),
        _sklearn("sklearn.tree", "DecisionTreeClassifier", max_depth=10),
        cause="exact Newton fits per node (up to 50 steps, a Gram matrix of (features + 1)^2 "
        "per step) and an exact score of every threshold; serial compiled kernels",
    ),
    FeatureCase(
        "feature_costs",
        "feature costs (full depth)",
        "higgs",
        "scikit-learn tree (no costs)",
        _with_data(
            lambda d: {"feature_costs": _costs(d)},
            partial(_gpu_tree, "DecisionTreeClassifier", criterion="entropy"),
        ),
        _sklearn("sklearn.tree", "DecisionTreeClassifier", criterion="entropy"),
        cause="nodes above the subtree finisher's size search every column alone level by "
        "level (select_by_cost); below it, the finisher's constrained variant",
    ),
    FeatureCase(
        "exact_two_outputs",
        "exact splits, two outputs (full depth)",
        "two_labels",
        "scikit-learn tree, two outputs",
        _gpu_tree("DecisionTreeClassifier", splitter="exact"),
        _SKLEARN_TREE,
        cause="levels above 16,384 rows sort each node's values every level; a 1,000-row fit "
        "is fixed costs",
    ),
    FeatureCase(
        "monotonic",
        "monotonic constraints (full depth)",
        "higgs",
        "scikit-learn tree with monotonic_cst",
        _with_data(
            lambda d: {"monotonic_cst": _monotonic(d)},
            partial(_gpu_tree, "DecisionTreeClassifier"),
        ),
        _with_data(
            lambda d: {"monotonic_cst": _monotonic(d)},
            partial(_sklearn, "sklearn.tree", "DecisionTreeClassifier"),
        ),
        cause="nodes above the subtree finisher's size grow level by level; below it, the "
        "finisher's constrained variant (bounds kept per node)",
    ),
    FeatureCase(
        "poisson",
        "poisson (depth 10)",
        "counts",
        "scikit-learn DecisionTreeRegressor(criterion='poisson'), depth 10",
        _gpu_tree("DecisionTreeRegressor", criterion="poisson", max_depth=10),
        _sklearn("sklearn.tree", "DecisionTreeRegressor", criterion="poisson", max_depth=10),
        regression=True,
        cause="the split scan's logarithms per candidate (kernels/log2.py's, the same bits on "
        "every device); nodes above the subtree finisher's size grow level by level",
    ),
    FeatureCase(
        "absolute_error",
        "absolute error (depth 10)",
        "counts",
        "scikit-learn DecisionTreeRegressor(criterion='absolute_error'), depth 10",
        _gpu_tree("DecisionTreeRegressor", criterion="absolute_error", max_depth=10),
        _sklearn("sklearn.tree", "DecisionTreeRegressor", criterion="absolute_error", max_depth=10),
        regression=True,
        cause="searched level by level (not in the subtree finisher): the compiled median walk "
        "costs about 120 ns per row and feature a level, 3.3 ms a level at 1,000 x 28",
    ),
    FeatureCase(
        "prediction",
        f"prediction (depth {PREDICT_DEPTH})",
        "higgs",
        f"scikit-learn tree's predict, depth {PREDICT_DEPTH}",
        _gpu_tree("DecisionTreeClassifier", max_depth=PREDICT_DEPTH),
        _sklearn("sklearn.tree", "DecisionTreeClassifier", max_depth=PREDICT_DEPTH),
        timed="predict",
        cause="a fixed cost per call (input checks, the compiled walk's launch)",
    ),
)


def quality(model, X, y, regression: bool) -> float:
    """Accuracy in percent (the mean over outputs for several), or R² in percent."""
    predicted = np.asarray(model.predict(X))
    y = np.asarray(y)
    if regression:
        residual = float(np.sum((y - predicted) ** 2))
        total = float(np.sum((y - y.mean()) ** 2))
        return 100.0 * (1.0 - residual / total) if total > 0 else 0.0
    return 100.0 * float(np.mean(predicted == y))


def counts_target(X: np.ndarray, seed: int) -> np.ndarray:
    """A count target that grows with the first two features (Poisson's kind of data)."""
    rate = np.exp(1.5 * np.tanh(X[:, 0]) + 1.0 * np.tanh(X[:, 1]))
    return np.random.default_rng(seed).poisson(rate).astype(np.float64)


def second_label(X: np.ndarray) -> np.ndarray:
    """A second binary label for the two-output case: a threshold of two features."""
    return (X[:, 2] + 0.5 * X[:, 3] > 0).astype(np.int64)
