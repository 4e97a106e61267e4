"""The scikit-learn estimators: compatibility, parity with scikit-learn, input errors."""

import pickle
import warnings

import numpy as np
import pytest
from _parity import assert_same_predictions_away_from_ties

from gpu_tree import DecisionTreeClassifier, DecisionTreeRegressor, assert_tree_equal
from gpu_tree.backends.cuda import cuda_status

sklearn = pytest.importorskip("sklearn")
from sklearn import datasets  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.tree import DecisionTreeClassifier as SklearnClassifier  # noqa: E402
from sklearn.tree import DecisionTreeRegressor as SklearnRegressor  # noqa: E402
from sklearn.utils.estimator_checks import check_estimator  # noqa: E402

CLASSIFICATION_SETS = {
    "iris": datasets.load_iris,
    "wine": datasets.load_wine,
    "breast_cancer": datasets.load_breast_cancer,
    "digits": datasets.load_digits,
}


@pytest.mark.parametrize("estimator", [DecisionTreeClassifier(), DecisionTreeRegressor()], ids=type)
def test_check_estimator(estimator):
    results = check_estimator(estimator, on_fail=None)
    failed = [
        (r["check_name"], repr(r["exception"])[:300]) for r in results if r["status"] == "failed"
    ]
    assert not failed, failed
    assert len(results) > 40


def _sklearn_parity(ours, theirs, X_train, y_train, X_test):
    ours.fit(X_train, y_train)
    theirs.fit(X_train, y_train)
    return ours.predict(X_test), theirs.predict(X_test)


def _cv_folds(n_samples, n_repeats=3):
    """(train, test) boolean masks of n_repeats x 5-fold cross-validation."""
    for repeat in range(n_repeats):
        folds = np.random.default_rng(repeat).permutation(n_samples) % 5
        for fold in range(5):
            yield folds != fold, folds == fold


def _sklearn_cv_accuracy(X, y, criterion, random_state):
    correct = sum(
        np.sum(
            SklearnClassifier(criterion=criterion, random_state=random_state)
            .fit(X[train], y[train])
            .predict(X[test])
            == y[test]
        )
        for train, test in _cv_folds(len(y))
    )
    return correct / (3 * len(y))


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_exact_mode_matches_sklearn_classifier(criterion):
    """Same criterion, exact search: the same predictions where there are no ties.

    Where a tie is broken differently (each verified to be a tie), predictions below it
    may differ; every test row whose path passes no tie is predicted alike.
    Bound: one point over the 3 x 5-fold predictions of all bundled datasets pooled; per
    dataset, one point beyond the spread scikit-learn itself shows across random_state
    (its own tie-breaking), which is about 2 points on wine's 178 rows.
    """
    pooled_gap = pooled_n = 0
    shares = []  # per fold, the test rows whose paths pass no tie
    for name, loader in sorted(CLASSIFICATION_SETS.items()):
        X, y = loader(return_X_y=True)
        X = X.astype(np.float32).astype(np.float64)  # scikit-learn's float32 values
        correct_ours = correct_theirs = 0
        for train, test in _cv_folds(len(y)):
            ours = DecisionTreeClassifier(criterion=criterion, splitter="exact")
            theirs = SklearnClassifier(criterion=criterion, random_state=0)
            pred_ours, pred_theirs = _sklearn_parity(ours, theirs, X[train], y[train], X[test])
            shares.append(
                assert_same_predictions_away_from_ties(
                    ours, theirs, X[train], y[train], X[test], criterion
                )
            )
            assert ours.score(X[train], y[train]) == 1.0  # grown to purity
            correct_ours += np.sum(pred_ours == y[test])
            correct_theirs += np.sum(pred_theirs == y[test])
        n = 3 * len(y)
        sklearn_accuracies = [correct_theirs / n] + [
            _sklearn_cv_accuracy(X, y, criterion, random_state) for random_state in (1, 2, 3)
        ]
        spread = max(sklearn_accuracies) - min(sklearn_accuracies)
        assert abs(correct_ours - correct_theirs) / n <= 0.01 + spread, (name, spread)
        pooled_gap += correct_ours - correct_theirs
        pooled_n += n
    assert abs(pooled_gap) / pooled_n <= 0.01
    # Measured 37% (gini) and 50% (entropy) of the test rows compared; digits' roots tie.
    assert np.mean(shares) >= 0.25, np.round(shares, 2)


@pytest.mark.parametrize(("max_depth", "min_share"), [(3, 1.0), (6, 0.5), (None, 0.02)])
def test_exact_mode_matches_sklearn_regressor(max_depth, min_share):
    """Every divergence from scikit-learn's tree is a verified tie, and every test row
    whose path passes no tie gets scikit-learn's prediction: all rows at depth 3, over
    half at depth 6 (measured 54-90% per fold), a few in fully grown trees, whose many
    two-row leaves tie on every feature. Data on float32 values, as scikit-learn trains."""
    X, y = datasets.load_diabetes(return_X_y=True)
    X = X.astype(np.float32).astype(np.float64)
    r2_ours = r2_theirs = 0.0
    for train, test in _cv_folds(len(y), n_repeats=1):
        ours = DecisionTreeRegressor(splitter="exact", max_depth=max_depth)
        theirs = SklearnRegressor(max_depth=max_depth, random_state=0)
        _sklearn_parity(ours, theirs, X[train], y[train], X[test])
        assert_same_predictions_away_from_ties(
            ours, theirs, X[train], y[train], X[test], "squared_error", min_share=min_share
        )
        r2_ours += ours.score(X[test], y[test]) / 5
        r2_theirs += theirs.score(X[test], y[test]) / 5
    assert abs(r2_ours - r2_theirs) < 0.05


def test_hist_mode_close_to_sklearn_accuracy_on_many_distinct_values():
    X, y = datasets.make_classification(
        n_samples=6000, n_features=10, n_informative=6, flip_y=0.05, random_state=0
    )
    ours = DecisionTreeClassifier(max_depth=8).fit(X[:4000], y[:4000]).score(X[4000:], y[4000:])
    theirs = (
        SklearnClassifier(max_depth=8, random_state=0)
        .fit(X[:4000], y[:4000])
        .score(X[4000:], y[4000:])
    )
    assert abs(ours - theirs) < 0.03


def test_string_labels_and_proba():
    X, y = datasets.load_iris(return_X_y=True)
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    model = DecisionTreeClassifier(max_depth=3).fit(X, labels)
    assert list(model.classes_) == ["setosa", "versicolor", "virginica"]
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert set(model.predict(X)) <= set(labels)
    np.testing.assert_array_equal(model.predict(X), model.classes_[np.argmax(proba, axis=1)])
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(model.predict_log_proba(X), np.log(proba))


def test_apply_decision_path_and_depth():
    X, y = datasets.load_wine(return_X_y=True)
    model = DecisionTreeClassifier(max_depth=4).fit(X, y)
    leaves = model.apply(X)
    tree = model.tree_
    assert np.all(tree.children_left[leaves] == -1)
    path = model.decision_path(X).toarray()
    assert path.shape == (len(X), tree.node_count)
    assert np.all(path[:, 0] == 1)
    assert np.all(path[np.arange(len(X)), leaves] == 1)
    np.testing.assert_array_equal(path.sum(axis=1), tree.depth[leaves] + 1)
    assert model.get_depth() <= 4
    assert model.get_n_leaves() == np.count_nonzero(tree.children_left == -1)


def test_sample_weight_equals_repetition():
    X, y = datasets.load_iris(return_X_y=True)
    weight = np.random.default_rng(0).integers(0, 4, size=len(y))
    weighted = DecisionTreeClassifier(max_depth=4).fit(X, y, sample_weight=weight)
    repeated = DecisionTreeClassifier(max_depth=4).fit(
        np.repeat(X, weight, axis=0), np.repeat(y, weight)
    )
    np.testing.assert_array_equal(weighted.predict(X), repeated.predict(X))
    np.testing.assert_allclose(
        weighted.tree_.weighted_n_node_samples, repeated.tree_.weighted_n_node_samples
    )


def test_class_weight_balanced_shifts_predictions_to_rare_class():
    X, y = datasets.make_classification(
        n_samples=2000, weights=[0.95, 0.05], flip_y=0.1, random_state=1
    )
    plain = DecisionTreeClassifier(max_depth=2).fit(X, y)
    balanced = DecisionTreeClassifier(max_depth=2, class_weight="balanced").fit(X, y)
    assert np.mean(balanced.predict(X) == 1) > np.mean(plain.predict(X) == 1)
    as_dict = DecisionTreeClassifier(max_depth=2, class_weight={0: 1.0, 1: 19.0}).fit(X, y)
    assert np.mean(as_dict.predict(X) == 1) > np.mean(plain.predict(X) == 1)
    with pytest.raises(ValueError, match="not present"):
        DecisionTreeClassifier(class_weight={7: 2.0}).fit(X, y)


def test_float32_integer_and_pandas_inputs():
    pd = pytest.importorskip("pandas")
    X, y = datasets.load_iris(return_X_y=True)
    reference = DecisionTreeClassifier(max_depth=3).fit(X, y).predict(X)
    frame = pd.DataFrame(X, columns=["sepal_l", "sepal_w", "petal_l", "petal_w"])
    model = DecisionTreeClassifier(max_depth=3).fit(frame, pd.Series(y))
    assert list(model.feature_names_in_) == list(frame.columns)
    np.testing.assert_array_equal(model.predict(frame), reference)
    with pytest.raises(ValueError, match="feature names should match"):
        model.predict(frame[frame.columns[::-1]])
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        model.predict(X)
    assert DecisionTreeClassifier(max_depth=3).fit(X.astype(np.float32), y).score(X, y) > 0.9
    X_int = np.round(X * 10).astype(np.int64)
    assert DecisionTreeClassifier().fit(X_int, y).score(X_int, y) == 1.0


def test_edge_cases_fit():
    X = np.arange(10.0).reshape(-1, 1)
    one_class = DecisionTreeClassifier().fit(X, np.zeros(10, dtype=int))
    assert one_class.tree_.node_count == 1 and np.all(one_class.predict(X) == 0)
    one_row = DecisionTreeRegressor().fit([[1.0, 2.0]], [3.0])
    assert one_row.predict([[5.0, 5.0]]) == pytest.approx([3.0])
    constant = DecisionTreeClassifier().fit(np.ones((20, 3)), np.arange(20) % 2)
    assert constant.tree_.node_count == 1
    np.testing.assert_allclose(constant.predict_proba(np.ones((1, 3))), [[0.5, 0.5]])


def test_pickle_and_clone_round_trip():
    X, y = datasets.load_wine(return_X_y=True)
    model = DecisionTreeClassifier(max_depth=4, criterion="gain_ratio").fit(X, y)
    restored = pickle.loads(pickle.dumps(model))
    assert_tree_equal(model.tree_, restored.tree_)
    np.testing.assert_array_equal(restored.predict_proba(X), model.predict_proba(X))
    fresh = clone(model)
    assert not hasattr(fresh, "tree_") and fresh.get_params() == model.get_params()


@pytest.mark.parametrize(
    "criterion", ["gini", "entropy", "gain_ratio", "cart", "misclassification", "log_loss"]
)
def test_every_classification_criterion_learns(criterion):
    """A depth-4 tree under each criterion beats a one-split stump by 2 points of
    cross-validated accuracy (breast cancer: stumps about 0.89, depth-4 trees 0.92-0.94),
    and is no more than a point behind scikit-learn's depth-4 gini tree: bars that a
    criterion scoring splits wrongly, or a tree that stops at the root, cannot clear."""
    from sklearn.model_selection import RepeatedStratifiedKFold, cross_val_score

    X, y = datasets.load_breast_cancer(return_X_y=True)
    folds = RepeatedStratifiedKFold(n_splits=5, n_repeats=2, random_state=0)

    def cv_accuracy(model):
        return cross_val_score(model, X, y, cv=folds).mean()

    stump = max(
        cv_accuracy(SklearnClassifier(max_depth=1, criterion=c)) for c in ("gini", "entropy")
    )
    reference = cv_accuracy(SklearnClassifier(max_depth=4, random_state=0))
    ours = cv_accuracy(DecisionTreeClassifier(criterion=criterion, max_depth=4))
    assert ours >= stump + 0.02, (ours, stump)
    assert ours >= reference - 0.01, (ours, reference)
    model = DecisionTreeClassifier(criterion=criterion, max_depth=4).fit(X, y)
    assert model.feature_importances_.sum() == pytest.approx(1.0)


def test_one_huge_outlier_does_not_flatten_the_regression_tree():
    """y ~ smooth signal + N(0, 0.1) with one row at 1e8: the outlier gets a leaf of its
    own and the other rows are fitted as without it (scikit-learn: about 190 leaves, R²
    0.96 on the other rows; before issue 14's integer statistics and measured node
    variances: 7 leaves, R² 0.06)."""
    rng = np.random.default_rng(0)
    n = 20_000
    X = rng.uniform(-2, 2, size=(n, 4))
    y = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=n)
    y[123] = 1e8
    rest = np.arange(n) != 123
    theirs = SklearnRegressor(max_depth=8, random_state=0).fit(X, y)
    ours = DecisionTreeRegressor(max_depth=8).fit(X, y)
    r2_theirs = theirs.score(X[rest], y[rest])
    assert r2_theirs > 0.9
    assert ours.score(X[rest], y[rest]) >= r2_theirs - 0.02
    assert ours.get_n_leaves() >= theirs.get_n_leaves() // 2


# -- bad input ---------------------------------------------------------------------------
X_GOOD = np.arange(20.0).reshape(10, 2)
Y_GOOD = np.arange(10) % 2


@pytest.mark.parametrize(
    ("X", "y", "exception", "match"),
    [
        (X_GOOD, np.where(Y_GOOD == 0, np.nan, 1.0), ValueError, "y contains NaN at row 0"),
        (X_GOOD, np.where(Y_GOOD == 0, np.inf, 1.0), ValueError, "y contains infinity"),
        (
            np.where(X_GOOD == 7, np.inf, X_GOOD),
            Y_GOOD,
            ValueError,
            r"infinity .* column 1 at row 3",
        ),
        (np.arange(10.0), Y_GOOD, ValueError, "Expected a 2-D array"),
        (np.zeros((10, 2, 2)), Y_GOOD, ValueError, "Expected a 2-D array"),
        (np.zeros((0, 2)), np.zeros(0), ValueError, "0 sample"),
        (X_GOOD, Y_GOOD[:9], ValueError, "X has 10 rows but y has 9"),
        (X_GOOD + 1j, Y_GOOD, ValueError, "Complex data not supported"),
        # (A column of text alone is categorical: categorical_features' default rule.)
        (
            np.array([[1.0, "a"], [2.0, 3]] * 5, dtype=object),
            Y_GOOD,
            ValueError,
            r"feature 1 mixes text and numbers: row 0 holds 'a', row 1 holds 3",
        ),
        (X_GOOD, None, ValueError, "requires y to be passed"),
        (X_GOOD, np.linspace(0, 1, 10), ValueError, "Unknown label type: continuous"),
    ],
)
def test_bad_input_is_named(X, y, exception, match):
    with pytest.raises(exception, match=match):
        DecisionTreeClassifier().fit(X, y)


def test_bad_dataframe_column_is_named():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"age": np.arange(10.0), "city": ["Oslo"] * 10})
    # A text column is categorical by default; declared numeric-only, it is an error.
    assert DecisionTreeClassifier().fit(frame, Y_GOOD).is_categorical_.tolist() == [False, True]
    with pytest.raises(ValueError, match=r"column 1 \('city'\) holds a non-numeric value 'Oslo'"):
        DecisionTreeClassifier(categorical_features=[]).fit(frame, Y_GOOD)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"max_depth": 0}, "max_depth must be >= 1"),
        ({"max_depth": 2.5}, "max_depth must be an integer"),
        ({"max_bins": 1}, r"max_bins must be in \[2, 65535\]"),
        ({"max_bins": 65536}, r"max_bins must be in \[2, 65535\]"),
        ({"min_purity": 0.0}, r"min_purity must be in \(0.0, 1.0\]"),
        ({"min_purity": 1.5}, "min_purity"),
        ({"criterion": "squared_error"}, "regression criterion"),
        ({"criterion": "gini_index"}, "Unknown criterion='gini_index'"),
        ({"device": "tpu"}, "Unknown device='tpu'"),
        ({"splitter": "bogus"}, "Unknown splitter"),
        ({"min_samples_split": 1}, "min_samples_split must be >= 2"),
        ({"min_samples_leaf": 0}, "min_samples_leaf must be >= 1"),
        ({"max_features": 3}, r"max_features must be in \[1, 2\]"),
        ({"max_leaf_nodes": 1}, "max_leaf_nodes must be >= 2"),
        ({"min_impurity_decrease": -1.0}, "min_impurity_decrease"),
    ],
)
def test_bad_parameters_are_named(params, match):
    with pytest.raises((ValueError, TypeError), match=match):
        DecisionTreeClassifier(**params).fit(X_GOOD, Y_GOOD)


def test_regressor_rejects_classification_criterion():
    with pytest.raises(ValueError, match="classification criterion"):
        DecisionTreeRegressor(criterion="gini").fit(X_GOOD, Y_GOOD.astype(float))


@pytest.mark.parametrize(
    ("sample_weight", "match"),
    [
        (-np.ones(10), "Negative values in data passed to sample_weight: row 0"),
        (np.ones(9), r"sample_weight.shape == \(9,\), expected \(10,\)"),
        (np.zeros(10), "all are zero"),
        (np.full(10, np.nan), "NaN or infinity"),
    ],
)
def test_bad_sample_weight(sample_weight, match):
    with pytest.raises(ValueError, match=match):
        DecisionTreeClassifier().fit(X_GOOD, Y_GOOD, sample_weight=sample_weight)


def test_predict_errors():
    with pytest.raises(NotFittedError, match="not fitted yet"):
        DecisionTreeClassifier().predict(X_GOOD)
    model = DecisionTreeClassifier().fit(X_GOOD, Y_GOOD)
    with pytest.raises(
        ValueError, match="X has 3 features, but DecisionTreeClassifier is expecting 2"
    ):
        model.predict(np.zeros((4, 3)))
    with pytest.raises(ValueError, match=r"infinity .* column 1 at row 0"):
        model.predict(np.array([[1.0, np.inf]]))
    assert model.predict(np.array([[1.0, np.nan]])).shape == (1,)  # NaN: a missing value


def test_column_vector_y_warns_and_fits():
    from sklearn.exceptions import DataConversionWarning

    with pytest.warns(DataConversionWarning):
        DecisionTreeRegressor().fit(X_GOOD, Y_GOOD.reshape(-1, 1).astype(float))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DecisionTreeRegressor().fit(X_GOOD, Y_GOOD.astype(float))


def test_device_cuda_says_why_it_cannot_run(monkeypatch):
    import gpu_tree.backends.devices as devices

    monkeypatch.setattr(
        devices, "cuda_status", lambda: (False, "no usable NVIDIA GPU was found", None)
    )
    with pytest.raises(ValueError, match="device='cuda' is not usable here: no usable NVIDIA GPU"):
        DecisionTreeClassifier(device="cuda").fit(X_GOOD, Y_GOOD)
    # 'auto' falls back to the CPU.
    assert DecisionTreeClassifier(device="auto").fit(X_GOOD, Y_GOOD).device_ == "cpu"


@pytest.mark.parametrize(
    "params",
    [dict(splitter="best"), dict(splitter="exact")],
    ids=["best", "exact"],
)
def test_auto_device_fits_cpu_only_work_on_the_cpu_of_a_gpu_machine(monkeypatch, params):
    """On a machine with a usable GPU, device='auto' is the GPU, except for what runs on
    the CPU only: scikit-learn's splitter='best' must not fail where a GPU is present.
    device='cuda' still refuses it, naming the CPU."""
    import gpu_tree.backends.devices as devices
    import gpu_tree.training.inputs as inputs

    gpu_here = (True, "NVIDIA GPU", object())  # an array module that is not numpy
    monkeypatch.setattr(devices, "cuda_status", lambda: gpu_here)
    monkeypatch.setattr(inputs, "cuda_status", lambda: gpu_here)
    assert devices.resolve_device("auto") == "cuda"
    assert DecisionTreeRegressor(**params).fit(X_GOOD, Y_GOOD).device_ == "cpu"
    with pytest.raises(ValueError, match="CPU|device='cpu'"):
        DecisionTreeRegressor(device="cuda", **params).fit(X_GOOD, Y_GOOD)


def test_a_gpu_array_with_cpu_only_work_says_which_part_runs_on_the_cpu(monkeypatch):
    import gpu_tree.backends.devices as devices
    import gpu_tree.training.inputs as inputs

    monkeypatch.setattr(devices, "cuda_status", lambda: (True, "NVIDIA GPU", object()))
    monkeypatch.setattr(inputs, "cuda_status", lambda: (True, "NVIDIA GPU", object()))
    monkeypatch.setattr(inputs, "input_kind", lambda X: "device")
    with pytest.raises(ValueError, match="splitter='best' \\(exact search\\) runs on the CPU"):
        DecisionTreeRegressor(splitter="best").fit(X_GOOD, Y_GOOD)


def test_hist_equals_exact_for_real_targets_and_fractional_weights():
    """Row statistics are integers (fixed point), so histogram sums (bin by bin) and exact
    sums (value by value) agree to the bit: the trees are identical, not just close."""
    rng = np.random.default_rng(3)
    X = rng.integers(0, 12, size=(400, 4)).astype(float) / 4.0
    y = np.exp(X[:, 0]) - 2.0 * np.cos(3.0 * X[:, 1]) + rng.normal(scale=0.5, size=400)
    weight = rng.uniform(0.05, 4.0, size=400)
    hist = DecisionTreeRegressor(max_depth=7).fit(X, y, sample_weight=weight)
    exact = DecisionTreeRegressor(max_depth=7, splitter="exact").fit(X, y, sample_weight=weight)
    assert_tree_equal(hist.tree_, exact.tree_, impurity_rtol=0, value_rtol=0)
    labels = (y > np.median(y)).astype(int) + (y > np.quantile(y, 0.8))
    hist = DecisionTreeClassifier(criterion="entropy").fit(X, labels, sample_weight=weight)
    exact = DecisionTreeClassifier(criterion="entropy", splitter="exact").fit(
        X, labels, sample_weight=weight
    )
    assert_tree_equal(hist.tree_, exact.tree_, impurity_rtol=0, value_rtol=0)


# -- issue 15: weights get one validation, scalar or array, sample or class -----------------
@pytest.mark.parametrize(
    ("sample_weight", "match"),
    [
        (-1.0, "Negative values in data passed to sample_weight"),
        (0.0, "at least one positive value"),
        (float("nan"), "NaN or infinity"),
        (float("inf"), "NaN or infinity"),
    ],
)
def test_a_scalar_sample_weight_is_checked_as_an_array_is(sample_weight, match):
    """Before, a scalar -1, 0 or NaN fitted on zero rows and predicted [0, 0]."""
    X, y = np.arange(20.0)[:, None], np.arange(20) % 2
    with pytest.raises(ValueError, match=match):
        DecisionTreeClassifier().fit(X, y, sample_weight=sample_weight)


@pytest.mark.parametrize("model", [DecisionTreeClassifier, DecisionTreeRegressor])
def test_sparse_y_is_a_type_error_as_in_scikit_learn(model):
    from scipy import sparse

    X, y = np.arange(20.0)[:, None], np.arange(20) % 2
    for matrix in (sparse.csr_matrix(y[:, None]), sparse.csc_array(y[:, None])):
        with pytest.raises(TypeError, match=r"Sparse data was passed for y.*y\.toarray\(\)"):
            model().fit(X, matrix)


def test_sample_weight_shapes_as_scikit_learn():
    """A number weighs every row (the same tree as that weight in an array); a 0-d array
    is refused with a TypeError that says what to pass, as scikit-learn refuses it; a
    2-D array is a ValueError naming its shape."""
    X, y = np.arange(20.0)[:, None], np.arange(20) % 2
    number = DecisionTreeClassifier().fit(X, y, sample_weight=2.0)
    array = DecisionTreeClassifier().fit(X, y, sample_weight=np.full(20, 2.0))
    assert_tree_equal(number.tree_, array.tree_)
    with pytest.raises(TypeError, match=r"0-d array \(array\(2\.\)\); pass the number itself"):
        DecisionTreeClassifier().fit(X, y, sample_weight=np.array(2.0))
    with pytest.raises(ValueError, match=r"a number or a 1-D array, got shape \(20, 1\)"):
        DecisionTreeClassifier().fit(X, y, sample_weight=np.ones((20, 1)))


@pytest.mark.parametrize(
    ("class_weight", "match"),
    [
        ({0: -1}, r"class_weight\[0\] must be finite and >= 0, got -1"),
        ({0: float("nan")}, r"class_weight\[0\] must be finite and >= 0, got nan"),
        ({0: float("inf")}, r"class_weight\[0\] must be finite and >= 0, got inf"),
        ({0: "x"}, r"class_weight\[0\] must be a number, got 'x'"),
        ({0: 0, 1: 0}, "no row has a positive weight"),
    ],
)
def test_bad_class_weights_are_refused_naming_the_class(class_weight, match):
    """Before, a negative, NaN or infinite class weight silently dropped the class or gave
    NaN probabilities."""
    X, y = np.arange(20.0)[:, None], np.arange(20) % 2
    with pytest.raises(ValueError, match=match):
        DecisionTreeClassifier(class_weight=class_weight).fit(X, y)


def test_a_dataframe_with_two_columns_of_one_name_is_refused():
    """Before, it was accepted, and swapping the twins changed predictions."""
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(np.arange(40.0).reshape(20, 2), columns=["a", "a"])
    with pytest.raises(ValueError, match=r"name 'a' twice \(again at position 1\)"):
        DecisionTreeClassifier().fit(X, np.arange(20) % 2)


@pytest.mark.parametrize("dtype", [">f8", ">f4", np.longdouble])
def test_big_endian_and_extended_precision_X_are_converted(dtype):
    """Before: a numba TypingError at fit and predict (scikit-learn accepts them)."""
    X = np.arange(40.0).reshape(20, 2)
    y = np.arange(20) % 2
    model = DecisionTreeClassifier().fit(X.astype(dtype), y)
    np.testing.assert_array_equal(model.predict(X.astype(dtype)), model.predict(X))
    assert model.score(X.astype(dtype), y) == 1.0


def test_an_extended_precision_value_beyond_float64_is_refused_naming_it():
    X = np.arange(40.0).reshape(20, 2).astype(np.longdouble)
    X[3, 1] = np.longdouble(10) ** 400
    with pytest.raises(ValueError, match="infinity or a value too large in column 1 at row 3"):
        DecisionTreeClassifier().fit(X, np.arange(20) % 2)


def test_pandas_na_is_a_missing_value_and_huge_integers_are_named():
    pd = pytest.importorskip("pandas")
    y = np.arange(6) % 2
    X = pd.DataFrame({"a": pd.array([1, 2, pd.NA, 4, 5, 6], dtype=object), "b": [1.0] * 6})
    from gpu_tree.data.validation import check_X

    assert np.isnan(check_X(X)[2, 0])  # missing, as None and NaN are
    assert DecisionTreeClassifier().fit(X, y).score(X, y) == 1.0
    huge = np.array([[1, 2], [10**400, 3]] + [[1, 1]] * 4, dtype=object)
    with pytest.raises(ValueError, match=r"column 0 holds '1000.*' at row 1, beyond float64"):
        DecisionTreeClassifier().fit(huge, y)


@pytest.mark.parametrize("random_state", [-1, -(2**40)])
def test_a_negative_random_state_is_refused_naming_the_parameter(random_state):
    X, y = np.arange(20.0)[:, None], np.arange(20) % 2
    with pytest.raises(
        ValueError, match=f"random_state must be a non-negative integer, got {random_state}"
    ):
        DecisionTreeClassifier(random_state=random_state, max_features=1).fit(X, y)


def test_splitter_best_is_scikit_learns_name_for_the_exact_search(tmp_path):
    """splitter="best" (scikit-learn's default name) grows the exact search's tree, for
    classification, regression with weights and missing values, and forests; it saves
    and loads as itself; on a GPU it is refused as exact search is, saying so."""
    import gpu_tree
    from gpu_tree import RandomForestClassifier

    X, y = datasets.load_breast_cancer(return_X_y=True)
    X = X.copy()
    X[::9, 3] = np.nan
    weight = np.random.default_rng(0).uniform(0.5, 2.0, size=y.size)
    for make in (
        lambda s: DecisionTreeClassifier(criterion="entropy", splitter=s, max_depth=6),
        lambda s: DecisionTreeRegressor(splitter=s, max_depth=6),
    ):
        best = make("best").fit(X, y, sample_weight=weight)
        exact = make("exact").fit(X, y, sample_weight=weight)
        assert_tree_equal(best.tree_, exact.tree_)
        assert best.get_params()["splitter"] == "best"
    forest_best = RandomForestClassifier(4, splitter="best", max_depth=4, random_state=1)
    forest_exact = RandomForestClassifier(4, splitter="exact", max_depth=4, random_state=1)
    pairs = zip(forest_best.fit(X, y).estimators_, forest_exact.fit(X, y).estimators_, strict=True)
    for a, b in pairs:
        assert_tree_equal(a.tree_, b.tree_)
    path = tmp_path / "best.json"
    best.save(path)
    loaded = gpu_tree.load(path)
    assert loaded.splitter == "best"
    np.testing.assert_array_equal(loaded.predict(X), best.predict(X))
    with pytest.raises(ValueError, match="splitter='best' \\(exact search\\) runs on the CPU"):
        DecisionTreeClassifier(splitter="best", device="cuda").fit(X, y)
    with pytest.raises(ValueError, match="Unknown splitter='bogus'"):
        DecisionTreeClassifier(splitter="bogus").fit(X, y)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_friedman_mse_is_squared_error_with_scikit_learns_future_warning(device):
    """scikit-learn 1.9 deprecates criterion="friedman_mse", mapping it to the squared
    error (Friedman's improvement ranks splits as the squared error's decrease does): the
    same tree, and the same warning, on either device (CUDA: the simulator)."""
    if device == "cuda" and not cuda_status()[0]:
        pytest.skip(f"CUDA backend not usable: {cuda_status()[1]}")
    X, y = datasets.load_diabetes(return_X_y=True)
    params = dict(max_depth=6 if device == "cpu" else 3, max_bins=256 if device == "cpu" else 32)
    with pytest.warns(FutureWarning, match='"friedman_mse" for criterion is deprecated'):
        friedman = DecisionTreeRegressor(criterion="friedman_mse", device=device, **params)
        friedman.fit(X, y)
    assert friedman.device_ == device
    squared = DecisionTreeRegressor(criterion="squared_error", device="cpu", **params).fit(X, y)
    assert_tree_equal(friedman.tree_, squared.tree_, impurity_rtol=0, value_rtol=0)
    assert friedman.get_params()["criterion"] == "friedman_mse"
    with pytest.raises(ValueError, match="regression criterion"):
        DecisionTreeClassifier(criterion="friedman_mse").fit(X, y > 100)


def test_tree_capacity_as_scikit_learns(tmp_path):
    """tree_.capacity: the nodes the arrays have room for, at least node_count, on a
    fitted, a pruned and a loaded tree."""
    import gpu_tree

    X, y = datasets.load_breast_cancer(return_X_y=True)
    model = DecisionTreeClassifier(max_depth=5).fit(X, y)
    assert model.tree_.capacity >= model.tree_.node_count > 1
    assert isinstance(model.tree_.capacity, int)
    pruned = DecisionTreeClassifier(ccp_alpha=0.01).fit(X, y)
    assert pruned.tree_.capacity >= pruned.tree_.node_count
    assert SklearnClassifier(max_depth=5).fit(X, y).tree_.capacity >= 1  # the same attribute
    path = tmp_path / "tree.json"
    model.save(path)
    loaded = gpu_tree.load(path).tree_
    assert loaded.capacity >= loaded.node_count == model.tree_.node_count
