"""Split choice is immune to last-bit differences in the scores (issue 14).

numpy and CuPy may round a candidate's score differently in its last bits (their log2
differ, and so may the order of a few operations), so two near-equal candidates must not
be told apart by rounding: scores closer than ``criteria.score_tolerance`` are ties, and
ties fall to the fixed rule (lowest feature, then lowest threshold; earlier categorical
family; the missing rows to the side with more present rows).

The tests here grow each tree twice on real data (../shared/datasets; skipped when
absent) and ask for the same tree: as usual, and with every score the split search ranks
moved by one ulp, up or down at random (every criterion), or with the terms the scores
are made of computed another way, as another device's log2 and division would (a few
criteria). Without the tolerance the same one-ulp moves change trees: the test can fail.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from _backends import set_compiled_categorical_search, without_compiled_search
from _shared_data import bench_module, dataset_path, numeric_arff

import gpu_tree.growing.grower as grower_module
from gpu_tree import DecisionTreeClassifier, DecisionTreeRegressor, assert_tree_equal
from gpu_tree.backends.cpu import CPUExactBackend, CPUHistogramBackend
from gpu_tree.growing import criteria, splitting
from gpu_tree.growing.criteria import CLASSIFICATION_CRITERIA

ROWS = 8000  # rows sampled from each data set (HIGGS's sample has 7,000)
DEPTH = 8


@functools.cache
def _data(name):
    """X, y and estimator arguments of a data set (a fixed sample of its rows)."""
    rng = np.random.default_rng(0)
    if name == "letter":
        X, y = numeric_arff("letter.arff", "class")
        rows = rng.choice(len(y), ROWS, replace=False)
        return X[rows], y[rows], {}
    if name == "cal_housing":
        X, y = numeric_arff("cal_housing.arff", "medianHouseValue")
        rows = rng.choice(len(y), ROWS, replace=False)
        return X[rows], y[rows].astype(np.float64), {}
    if name == "adult":  # categorical columns (subset splits) and missing values
        pytest.importorskip("pandas")
        data = bench_module("_categorical_data").load("adult", dataset_path)
        rows = np.sort(rng.choice(data.train, ROWS, replace=False))
        X = data.X.iloc[rows].reset_index(drop=True)
        return X, data.y[rows], {"categorical_features": data.categorical}
    higgs = np.loadtxt(dataset_path("higgs_subset_lightgbm_train.tsv"), delimiter="\t")
    if name == "higgs":  # the first column is the label
        return higgs[:, 1:], higgs[:, 0].astype(int), {}
    # higgs_regression: the last high-level feature (m_wwbb) from the 21 low-level ones.
    return higgs[:, 1:22], higgs[:, 28], {}


# (data set, criterion, splitter): histogram search for every criterion, and exact search
# (candidates between each node's distinct values) on two of them.
CASES = [
    *(
        (name, criterion, "hist")
        for name in ("letter", "adult", "higgs")
        for criterion in CLASSIFICATION_CRITERIA
    ),
    ("cal_housing", "squared_error", "hist"),
    ("higgs_regression", "squared_error", "hist"),
    ("higgs", "entropy", "exact"),
    ("cal_housing", "squared_error", "exact"),
]


def _perturbed(function, rng):
    """``function``, its scores each moved one ulp towards +inf or -inf at random."""

    def perturbed(*args, **kwargs):
        score = np.asarray(function(*args, **kwargs))
        direction = np.where(rng.random(score.shape) < 0.5, -np.inf, np.inf)
        return np.nextafter(score, direction)

    return perturbed


def _fit(monkeypatch, name, criterion, splitter, perturb):
    X, y, params = _data(name)
    estimator = DecisionTreeRegressor if criterion == "squared_error" else DecisionTreeClassifier
    params = params | {"criterion": criterion, "splitter": splitter, "max_depth": DEPTH}
    model = estimator(device="cpu", **params)
    with monkeypatch.context() as patch:
        # One thread: the random moves are drawn in the same order on every run.
        patch.setattr(splitting, "_CPU_THREADS", 1, raising=False)
        # Level by level, by the vectorised search, whose scorers are perturbed here (the
        # compiled ones, which finish small subtrees and search every level on the CPU,
        # meet their ties in test_split_scan.py and test_categorical_compiled.py).
        for backend in (CPUHistogramBackend, CPUExactBackend):
            patch.setattr(backend, "capabilities", without_compiled_search(backend))
        patch.setattr(grower_module, "FINISH_BELOW_ROWS", 0)
        patch.setattr(grower_module, "FINISH_ROOT_BELOW_ROWS", 0)
        set_compiled_categorical_search(patch, False)
        if perturb:
            rng = np.random.default_rng(14)
            for scorer in ("weighted_split_score", "weighted_multiway_split_score"):
                patch.setattr(splitting, scorer, _perturbed(getattr(splitting, scorer), rng))
        return model.fit(X, y).tree_


def _same_tree(a, b):
    """Node for node, bit for bit: features, thresholds, category sets, missing sides,
    node sizes, impurities and values."""
    assert_tree_equal(a, b, impurity_rtol=0, value_rtol=0)


def _ids(cases):
    return ["-".join(case) for case in cases]


@pytest.mark.parametrize(("name", "criterion", "splitter"), CASES, ids=_ids(CASES))
def test_scores_one_ulp_apart_grow_the_same_tree(monkeypatch, name, criterion, splitter):
    tree = _fit(monkeypatch, name, criterion, splitter, perturb=False)
    assert tree.node_count > 30  # a real tree, with many choices made
    _same_tree(_fit(monkeypatch, name, criterion, splitter, perturb=True), tree)


VACUITY_CASES = [
    ("letter", "gini", "hist"),
    ("adult", "entropy", "hist"),
    ("higgs", "gain_ratio", "hist"),
    ("cal_housing", "squared_error", "hist"),
    ("cal_housing", "squared_error", "exact"),
]


@pytest.mark.parametrize(("name", "criterion", "splitter"), VACUITY_CASES, ids=_ids(VACUITY_CASES))
def test_without_the_tolerance_one_ulp_changes_the_tree(monkeypatch, name, criterion, splitter):
    """The test above can fail: with exact comparisons, the same moves decide real ties
    (candidates whose scores are equal, or equal up to rounding) another way."""
    monkeypatch.setattr(criteria, "SCORE_RTOL", 0.0)
    tree = _fit(monkeypatch, name, criterion, splitter, perturb=False)
    with pytest.raises(AssertionError):
        _same_tree(_fit(monkeypatch, name, criterion, splitter, perturb=True), tree)


def _plog2p_via_log(p, xp):
    """p log2 p, with log2 p computed as ln p / ln 2: differs from numpy's log2 in the
    last bit for many p, as another device's log2 may."""
    return xp.where(p > 0, p * (xp.log(xp.where(p > 0, p, 1.0)) / np.log(2.0)), 0.0)


def _divide_via_reciprocal(numerator, denominator, xp):
    """numerator * (1 / denominator) (0 where the denominator is 0): a last bit off the
    quotient for many values, as a device's fast division may be."""
    safe = xp.where(denominator > 0, denominator, 1.0)
    return xp.where(denominator > 0, numerator * (1.0 / safe), 0.0)


TERM_CASES = [
    ("letter", "entropy", "hist"),
    ("letter", "gain_ratio", "hist"),
    ("higgs", "log_loss", "hist"),
    ("higgs", "gain_ratio", "hist"),
    ("adult", "gini", "hist"),
    ("adult", "gain_ratio", "hist"),
    ("cal_housing", "squared_error", "hist"),
    ("higgs_regression", "squared_error", "hist"),
]


@pytest.mark.parametrize(("name", "criterion", "splitter"), TERM_CASES, ids=_ids(TERM_CASES))
def test_another_devices_log2_and_division_grow_the_same_tree(
    monkeypatch, name, criterion, splitter
):
    """As a device with another log2 and division would: the terms a score is made of
    (c log2 c, the quotients c^2 / w, (sum w y)^2 / w and fractions) are computed
    another way, each off by an ulp or so. The scores then move by far more than an ulp
    of themselves (they are differences of larger terms), within the tolerance, which
    scales with those terms. The nodes' impurities move likewise: equal to rounding."""
    tree = _fit(monkeypatch, name, criterion, splitter, perturb=False)
    with monkeypatch.context() as patch:
        patch.setattr(criteria, "_plog2p", _plog2p_via_log)
        patch.setattr(criteria, "_safe_divide", _divide_via_reciprocal)
        moved = _fit(monkeypatch, name, criterion, splitter, perturb=False)
    assert_tree_equal(moved, tree, impurity_rtol=1e-9)
