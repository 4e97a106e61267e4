"""Hypothesis properties over inputs: dtypes, extreme values, weights and categories.

Issue "Hostile input never crashes, hangs, overwrites or silently misleads": whatever form
valid data comes in (any numeric dtype, any finite value, any weights, categories under
any names), the tree is the one its float64 values, labels and weights define, the
inputs are left as they were, and what cannot be fitted is refused naming the culprit.
Each property compares two fits that must agree, or a fit with what its input promises
(every training row told apart at full depth, every target kept within the fixed point's
bound).
"""

from __future__ import annotations

import numpy as np
import pytest
from _strategies import consistent_targets, small_integer_data
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gpu_tree import DecisionTreeClassifier, DecisionTreeRegressor, assert_tree_equal
from gpu_tree.backends.cuda import cuda_status
from gpu_tree.growing.criteria import CLASSIFICATION_CRITERIA

pd = pytest.importorskip("pandas")

PROPERTIES = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FLOAT64_MAX = np.finfo(np.float64).max


def _estimator(regression, **params):
    return (DecisionTreeRegressor if regression else DecisionTreeClassifier)(device="cpu", **params)


def _outputs(model, X):
    """What a fitted model says about X: its probabilities, or its regression values."""
    return model.predict(X) if isinstance(model, DecisionTreeRegressor) else model.predict_proba(X)


class _With:
    """A fitted tree with some arrays replaced, for :func:`assert_tree_equal`."""

    def __init__(self, tree, **replaced):
        self._tree, self._replaced = tree, replaced

    def __getattr__(self, name):
        return self._replaced[name] if name in self._replaced else getattr(self._tree, name)


@st.composite
def _pooled_matrix(draw, elements, dtype=np.float64, max_rows=30, max_features=3):
    """A matrix whose entries come from a few values (ties and repeated rows are common)."""
    pool = draw(hnp.arrays(dtype, draw(st.integers(1, 8)), elements=elements))
    shape = (draw(st.integers(2, max_rows)), draw(st.integers(1, max_features)))
    return pool[draw(hnp.arrays(np.intp, shape, elements=st.integers(0, pool.size - 1)))]


def _targets(n_rows, regression):
    """Class codes 0..3, or regression targets -3..3."""
    if regression:
        return hnp.arrays(np.float64, n_rows, elements=st.integers(-3, 3).map(float))
    return hnp.arrays(np.int64, n_rows, elements=st.integers(0, 3))


# ---------------------------------------------------------------------------------------
# dtypes: any numeric X grows the tree of its float64 values, and is not written to
# ---------------------------------------------------------------------------------------

X_DTYPES = "float16 float32 float64 >f8 >f4 int8 int16 int32 int64 >i4 uint8 <u2 uint32 uint64"
X_DTYPES = [*X_DTYPES.split(), "bool", np.longdouble]


def _elements(dtype):
    """Every value of ``dtype`` the product accepts: NaN (missing) included, no infinity."""
    if np.dtype(dtype).kind != "f":
        return hnp.from_dtype(np.dtype(dtype))
    if np.dtype(dtype).itemsize > 8:  # extended precision, within float64's range
        return hnp.from_dtype(np.dtype(dtype), min_value=-FLOAT64_MAX, max_value=FLOAT64_MAX)
    return hnp.from_dtype(np.dtype(dtype), allow_infinity=False)


@PROPERTIES
@given(
    dtype=st.sampled_from(X_DTYPES),
    regression=st.booleans(),
    splitter=st.sampled_from(["hist", "exact"]),
    data=st.data(),
)
def test_X_of_any_numeric_dtype_grows_the_tree_of_its_float64_values(
    dtype, regression, splitter, data
):
    """Floats of any width or byte order (NaN: missing), integers, bools: the tree of
    X.astype(float64), which also predicts them as their float64 values."""
    X = data.draw(_pooled_matrix(_elements(dtype), dtype=dtype))
    y = data.draw(_targets(X.shape[0], regression))
    X_before, y_before = X.copy(), y.copy()
    X64 = X.astype(np.float64)
    model = _estimator(regression, splitter=splitter).fit(X, y)
    reference = _estimator(regression, splitter=splitter).fit(X64, y)
    assert_tree_equal(model.tree_, reference.tree_, impurity_rtol=0, value_rtol=0)
    np.testing.assert_array_equal(_outputs(model, X), _outputs(reference, X64))
    np.testing.assert_array_equal(_outputs(reference, X), _outputs(reference, X64))
    # Fit and predict converted copies: the caller's arrays are as they were.
    np.testing.assert_array_equal(X, X_before)
    np.testing.assert_array_equal(y, y_before)


COLUMN_DTYPES = "float64 float32 Float64 Int64 Int8 object int16 uint8 boolean bool".split()


@PROPERTIES
@given(
    codes=hnp.arrays(
        np.int64, st.tuples(st.integers(2, 30), st.integers(1, 4)), elements=st.integers(-3, 3)
    ),
    dtypes=st.lists(st.sampled_from(COLUMN_DTYPES), min_size=4, max_size=4),
    missing=st.data(),
)
def test_dataframe_columns_of_any_dtype_grow_the_tree_of_their_float64_values(
    codes, dtypes, missing
):
    """pandas' nullable dtypes, object columns and plain numpy columns: each column's values
    as float64, pd.NA and None as NaN (a missing value)."""
    X = codes.astype(np.float64)
    columns = {}
    for j, dtype in enumerate(dtypes[: X.shape[1]]):
        if dtype in ("uint8", "boolean", "bool"):
            X[:, j] = np.abs(X[:, j]) % (256 if dtype == "uint8" else 2)
        if dtype not in ("int16", "uint8", "bool"):  # the dtypes that can hold a missing value
            X[missing.draw(hnp.arrays(bool, X.shape[0])), j] = np.nan
        if dtype in ("Float64", "Int64", "Int8", "boolean", "object"):
            kind = bool if dtype == "boolean" else int
            hole = None if dtype == "object" else pd.NA
            values = [hole if np.isnan(v) else kind(v) for v in X[:, j]]
            columns[f"x{j}"] = pd.array(values, dtype=dtype)
        else:
            columns[f"x{j}"] = X[:, j].astype(dtype)
    frame = pd.DataFrame(columns)
    y = np.arange(X.shape[0]) % 3
    model = DecisionTreeClassifier(device="cpu").fit(frame, y)
    reference = DecisionTreeClassifier(device="cpu").fit(X, y)
    assert_tree_equal(model.tree_, reference.tree_, impurity_rtol=0, value_rtol=0)
    np.testing.assert_array_equal(model.predict_proba(frame), reference.predict_proba(X))
    assert model.feature_names_in_.tolist() == list(columns)


LABEL_FORMS = {
    "int8": lambda codes: codes.astype(np.int8),
    "uint64": lambda codes: codes.astype(np.uint64),
    "float32": lambda codes: codes.astype(np.float32),
    "float64": lambda codes: codes.astype(np.float64),
    "object": lambda codes: codes.astype(object),
    "strings": lambda codes: np.array([f"class {k}" for k in codes]),
    "object strings": lambda codes: np.array([f"class {k}" for k in codes], dtype=object),
    "pandas category": lambda codes: pd.Series(pd.Categorical([f"c{k}" for k in codes])),
}


@PROPERTIES
@given(
    data=small_integer_data(),
    form=st.sampled_from(sorted(LABEL_FORMS)),
    criterion=st.sampled_from(CLASSIFICATION_CRITERIA),
)
def test_class_labels_of_any_dtype_grow_the_tree_of_their_codes(data, form, criterion):
    """Labels numbered in their sorted order: ints of any width, whole floats, strings,
    objects, a pandas category column all grow the tree of those numbers; classes_ and
    predict speak the labels."""
    X, codes, weight, params = data
    labels = LABEL_FORMS[form](codes)
    model = DecisionTreeClassifier(criterion=criterion, device="cpu", **params)
    reference = DecisionTreeClassifier(criterion=criterion, device="cpu", **params)
    model.fit(X, labels, sample_weight=weight)
    reference.fit(X, codes, sample_weight=weight)
    assert_tree_equal(model.tree_, reference.tree_, impurity_rtol=0, value_rtol=0)
    as_labels = LABEL_FORMS[form]
    assert model.classes_.tolist() == np.asarray(as_labels(reference.classes_)).tolist()
    assert model.predict(X).tolist() == np.asarray(as_labels(reference.predict(X))).tolist()


_LABEL_DTYPES = [np.int8, np.int16, np.int64, np.uint8, np.uint64, np.float32, np.float64, bool]


@PROPERTIES
@given(data=st.data(), dtype=st.sampled_from(_LABEL_DTYPES))
@example(data=None, dtype=np.int8)
def test_class_labels_are_coded_as_numpy_unique_codes_them(data, dtype):
    # Whole-number labels of a short span are counted, not sorted: the same classes, in
    # the same dtype, and the same codes as np.unique, at the ends of every dtype too.
    from gpu_tree.data.validation import check_classification_labels

    if data is None:  # int8's whole range: offsets wrap in the label's own width
        y = np.array([-128, 127, 0, -128], dtype=np.int8)
    else:
        if dtype is bool:
            elements = st.booleans()
        elif np.dtype(dtype).kind == "f":
            base = data.draw(st.sampled_from([0.0, -3.0, 2.0**40, 1e20]))
            elements = st.integers(0, 40).map(lambda k: np.float64(base) + 2 * k)
        else:
            info = np.iinfo(dtype)
            edge = data.draw(st.sampled_from([info.min, info.max - 40, 0]))
            elements = st.integers(0, 40).map(lambda k: edge + k)
        y = np.array(data.draw(st.lists(elements, min_size=1, max_size=60)), dtype=dtype)
    classes, codes = check_classification_labels(y)
    expected_classes, expected_codes = np.unique(y, return_inverse=True)
    assert classes.dtype == expected_classes.dtype
    np.testing.assert_array_equal(classes, expected_classes)
    np.testing.assert_array_equal(codes, expected_codes)


@PROPERTIES
@given(
    data=small_integer_data(),
    names=st.permutations(["ash", "birch", "cedar", "dogwood"]),
    criterion=st.sampled_from(CLASSIFICATION_CRITERIA),
)
def test_renaming_classes_in_any_order_permutes_the_probabilities(data, names, criterion):
    """Class names that sort in another order than the codes: every criterion is
    symmetric in the classes, so the tree is the same with its class columns permuted."""
    X, codes, weight, params = data
    model = DecisionTreeClassifier(criterion=criterion, device="cpu", **params)
    reference = DecisionTreeClassifier(criterion=criterion, device="cpu", **params)
    model.fit(X, np.array(names)[codes], sample_weight=weight)
    reference.fit(X, codes, sample_weight=weight)
    # The model's column of each of the reference's classes.
    columns = [model.classes_.tolist().index(names[k]) for k in reference.classes_]
    permuted = _With(model.tree_, value=model.tree_.value[:, :, columns])
    assert_tree_equal(permuted, reference.tree_)
    np.testing.assert_array_equal(model.predict_proba(X)[:, columns], reference.predict_proba(X))


REGRESSION_TARGET_DTYPES = ["int8", "int64", "uint16", "float32", "float64", ">f8", "object"]


@PROPERTIES
@given(data=small_integer_data(regression=True), dtype=st.sampled_from(REGRESSION_TARGET_DTYPES))
def test_regression_targets_of_any_dtype_grow_the_tree_of_their_float64_values(data, dtype):
    X, y, weight, params = data
    if dtype.startswith("u"):
        y = np.abs(y)
    model = DecisionTreeRegressor(device="cpu", **params).fit(
        X, y.astype(dtype), sample_weight=weight
    )
    reference = DecisionTreeRegressor(device="cpu", **params).fit(X, y, sample_weight=weight)
    assert_tree_equal(model.tree_, reference.tree_, impurity_rtol=0, value_rtol=0)


# ---------------------------------------------------------------------------------------
# Extreme values: anything finite is fitted, and every training row told apart
# ---------------------------------------------------------------------------------------

_any_float = st.floats(allow_infinity=False, allow_nan=True)
_finite_float = st.floats(allow_infinity=False, allow_nan=False)
# Values at the edges of float64's range, and neighbours one ulp apart.
_edge_float = st.sampled_from(
    [
        FLOAT64_MAX,
        -FLOAT64_MAX,
        np.nextafter(FLOAT64_MAX, 0.0),
        np.finfo(np.float64).tiny,
        5e-324,
        -5e-324,
        1e-323,
        0.0,
        -0.0,
        1.0,
        np.nextafter(1.0, 2.0),
        np.nextafter(1.0, 0.0),
    ]
)
_hostile_X = _pooled_matrix(st.one_of(_any_float, _edge_float))


@PROPERTIES
@given(
    X=_hostile_X,
    labels=st.data(),
    criterion=st.sampled_from(CLASSIFICATION_CRITERIA),
)
def test_extreme_feature_values_are_told_apart_at_full_depth(X, labels, criterion):
    """X anywhere in float64's range (subnormals, +-0.0, +-max, NaN as missing): with
    every row's label that of its equals, hist and exact search grow the same tree, which
    predicts every training label, and valid probabilities for any row."""
    y = consistent_targets(X, labels.draw(_targets(X.shape[0], regression=False)))
    hist = DecisionTreeClassifier(criterion=criterion, device="cpu").fit(X, y)
    exact = DecisionTreeClassifier(criterion=criterion, splitter="exact", device="cpu").fit(X, y)
    assert_tree_equal(hist.tree_, exact.tree_, impurity_rtol=0, value_rtol=0)
    np.testing.assert_array_equal(hist.predict(X), y)
    probe = labels.draw(_hostile_X.filter(lambda probe: probe.shape[1] == X.shape[1]))
    proba = hist.predict_proba(np.vstack([X, probe]))
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)


@st.composite
def _extreme_regression(draw):
    """(X, y): hostile X, targets anywhere in float64's range, equal where X is."""
    X = draw(_hostile_X)
    elements = st.one_of(_finite_float, _edge_float)
    return X, consistent_targets(X, draw(hnp.arrays(np.float64, X.shape[0], elements=elements)))


def _deviations(y):
    """y - centre (the lower median, the product's centre), computed in halves where it
    would overflow (1e308 - -1e308), and doubled back: +-inf there."""
    centre = np.sort(y)[(y.size - 1) // 2]
    with np.errstate(over="ignore"):
        return 2 * (y / 2 - centre / 2)


def _fixed_point_bound(y, deviation):
    """How far from y a leaf holding y alone may be: one fixed-point unit (2**-60 of the
    absolute total of y - centre), plus the float64 rounding of y - centre and back."""
    with np.errstate(over="ignore"):
        magnitude = np.maximum(np.abs(y), np.abs(y - deviation))
        # Where y - centre overflowed (deviation +-inf), no bound: spacing(inf) is NaN,
        # which failed the comparisons of predictions that were right.
        ulp = np.where(np.isfinite(magnitude), 2 * np.spacing(magnitude / 2), np.inf)
        return 2.0**-60 * np.sum(np.abs(deviation)) + 4 * ulp


@PROPERTIES
@given(data=_extreme_regression())
def test_targets_anywhere_in_float64_fit_and_predict_within_their_range(data):
    """Targets anywhere in float64's range fit (the fit scales them by a power of two
    where their squares would overflow or underflow): hist and exact search grow the same
    tree, whose predictions lie within the targets' range (a leaf's value is a weighted
    mean), give or take the fixed point's bound."""
    X, y = data
    deviation = _deviations(y)
    hist = DecisionTreeRegressor(device="cpu").fit(X, y)
    exact = DecisionTreeRegressor(splitter="exact", device="cpu").fit(X, y)
    assert_tree_equal(hist.tree_, exact.tree_, impurity_rtol=0, value_rtol=0)
    predicted = hist.predict(X)
    assert np.all(np.isfinite(predicted))
    slack = _fixed_point_bound(y, deviation)
    with np.errstate(over="ignore"):  # -max - slack: -inf, as good a bound
        assert np.all((predicted >= y.min() - slack) & (predicted <= y.max() + slack))


@PROPERTIES
@example(data=(np.array([[0.0], [1.0]]), np.array([1e-200, 0.0])))
@given(data=_extreme_regression())
def test_extreme_targets_are_told_apart_at_full_depth_within_the_fixed_point_bound(data):
    """Every training row predicted within the fixed point's bound: also where targets
    are closer than about 1e-162 (a node's variance underflowed to 0 and the node counted
    as pure, before the fit scaled such targets up)."""
    X, y = data
    deviation = _deviations(y)
    predicted = DecisionTreeRegressor(device="cpu").fit(X, y).predict(X)
    assert np.all(np.abs(predicted - y) <= _fixed_point_bound(y, deviation))


INFINITIES = {
    "inf": np.inf,
    "-inf": -np.inf,
    "a longdouble beyond float64": np.longdouble(FLOAT64_MAX) * 4,
}


@PROPERTIES
@given(
    X=_pooled_matrix(_finite_float),
    where=st.data(),
    infinity=st.sampled_from(sorted(INFINITIES)),
)
def test_infinity_is_refused_naming_its_first_column_and_row(X, where, infinity):
    """At fit and at predict, in an array or a DataFrame: the first infinite entry in row
    order is named."""
    bad = where.draw(hnp.arrays(bool, X.shape).filter(np.any))
    hostile = X.astype(np.longdouble if infinity.startswith("a long") else np.float64)
    hostile[bad] = INFINITIES[infinity]
    row, column = np.argwhere(bad)[0]
    y = np.arange(X.shape[0]) % 2
    message = f"infinity or a value too large in column {column} at row {row}"
    with pytest.raises(ValueError, match=message):
        DecisionTreeClassifier(device="cpu").fit(hostile, y)
    fitted = DecisionTreeClassifier(device="cpu").fit(X, y)
    with pytest.raises(ValueError, match=message):
        fitted.predict(hostile)
    frame = pd.DataFrame(hostile, columns=[f"x{j}" for j in range(X.shape[1])])
    with pytest.raises(ValueError, match=rf"column {column} \('x{column}'\) at row {row}"):
        DecisionTreeClassifier(device="cpu").fit(frame, y)


# ---------------------------------------------------------------------------------------
# Weights: a weight is a number of copies of its row, on any scale, and checked
# ---------------------------------------------------------------------------------------

_counts_rules = {"min_samples_leaf": 1, "min_samples_split": 2}  # rules that count rows


def _copies(n_rows):
    """Whole-number weights, 0 included, not all 0."""
    return hnp.arrays(np.int64, n_rows, elements=st.integers(0, 3)).filter(np.any)


@PROPERTIES
@given(
    regression=st.booleans(),
    data=st.data(),
    splitter=st.sampled_from(["hist", "exact"]),
)
def test_a_whole_weight_is_that_many_copies_of_its_row(regression, data, splitter):
    """Weight k grows the tree that k copies of the row grow (0: the row left out), node
    for node: the same splits, values, impurities and weighted sizes. All but where a
    node that saw no missing values sends them: to its child with more rows, a count of
    rows, not of weight."""
    X, y, _, params = data.draw(small_integer_data(regression=regression))
    copies = data.draw(_copies(X.shape[0]))
    # A class whose rows all weigh 0 keeps its column in classes_; its copies have none.
    assume(regression or np.unique(y[copies > 0]).size == np.unique(y).size)
    params = {**params, **_counts_rules}
    weighted = _estimator(regression, splitter=splitter, **params)
    weighted.fit(X, y, sample_weight=copies.astype(np.float64))
    repeated = _estimator(regression, splitter=splitter, **params)
    repeated.fit(np.repeat(X, copies, axis=0), np.repeat(y, copies))
    rows_counted = _With(
        weighted.tree_,
        n_node_samples=repeated.tree_.n_node_samples,
        missing_go_to_left=repeated.tree_.missing_go_to_left,  # X has no missing values
    )
    assert_tree_equal(rows_counted, repeated.tree_)
    np.testing.assert_allclose(_outputs(weighted, X), _outputs(repeated, X), rtol=1e-12)


@PROPERTIES
@given(
    X=_pooled_matrix(st.one_of(_finite_float, _edge_float, st.just(np.nan)), max_rows=40),
    data=st.data(),
    max_bins=st.integers(2, 8),
)
def test_rows_of_zero_weight_are_as_if_removed_even_from_the_bins(X, data, max_bins):
    """Few bins for many values: the bin edges are quantiles, which rows of zero weight
    must not move (nor add split candidates)."""
    y = data.draw(_targets(X.shape[0], regression=False))
    weight = data.draw(
        hnp.arrays(np.float64, X.shape[0], elements=st.sampled_from([0.0, 0.5, 1.0, 3.0])).filter(
            np.any
        )
    )
    kept = weight > 0
    assume(np.unique(y[kept]).size == np.unique(y).size)  # as above: the same classes_
    with_zeros = DecisionTreeClassifier(max_bins=max_bins, device="cpu").fit(
        X, y, sample_weight=weight
    )
    without = DecisionTreeClassifier(max_bins=max_bins, device="cpu").fit(
        X[kept], y[kept], sample_weight=weight[kept]
    )
    assert_tree_equal(with_zeros.tree_, without.tree_, impurity_rtol=0, value_rtol=0)
    np.testing.assert_array_equal(with_zeros.predict_proba(X), without.predict_proba(X))


def _assert_weight_scale_leaves_the_tree(data, criterion, power):
    X, y, weight, params = data
    regression = criterion == "squared_error"
    weight = np.ones(y.size) if weight is None else weight
    k = 2.0**power
    base = _estimator(regression, criterion=criterion, **params).fit(X, y, sample_weight=weight)
    scaled = _estimator(regression, criterion=criterion, **params)
    scaled.fit(X, y, sample_weight=weight * k)
    sizes = scaled.tree_.weighted_n_node_samples / k
    assert_tree_equal(_With(scaled.tree_, weighted_n_node_samples=sizes), base.tree_)
    np.testing.assert_array_equal(_outputs(scaled, X), _outputs(base, X))


_criteria = st.sampled_from([*CLASSIFICATION_CRITERIA, "squared_error"])


@PROPERTIES
@given(data=st.data(), criterion=_criteria, power=st.integers(-200, 200))
def test_a_power_of_two_weight_scale_leaves_the_tree(data, criterion, power):
    """Sample weights times 2**p: the same tree, its weighted sizes times 2**p."""
    data = data.draw(small_integer_data(regression=criterion == "squared_error"))
    _assert_weight_scale_leaves_the_tree(data, criterion, power)


SIX_ROWS = (np.arange(6.0)[:, None], np.array([0, 1, 0, 1, 1, 0]), None, {})


@PROPERTIES
@example(data=SIX_ROWS, criterion="gini", power=-600)
@given(data=small_integer_data(), criterion=_criteria, power=st.integers(-1070, 1000))
def test_a_power_of_two_weight_scale_leaves_the_tree_at_any_scale(data, criterion, power):
    """Down to subnormal weights and up to 2**1000: the fit scales weights whose total
    leaves 2**+-128 back near the number of rows (the criteria square weight sums)."""
    _assert_weight_scale_leaves_the_tree(data, criterion, power)


@PROPERTIES
@given(
    data=small_integer_data(),
    multipliers=st.lists(st.sampled_from([0.0, 0.25, 1.0, 3.0, 1e6]), min_size=4, max_size=4),
    balanced=st.booleans(),
)
def test_class_weight_multiplies_the_sample_weights(data, multipliers, balanced):
    """class_weight (a dict, or "balanced") grows the tree of sample weights multiplied by
    its class's weight."""
    X, y, weight, params = data
    weight = np.ones(y.size) if weight is None else weight
    classes, counts = np.unique(y, return_counts=True)
    if balanced:
        class_weight, per_class = "balanced", y.size / (classes.size * counts)
    else:
        per_class = np.array(multipliers[: classes.size])
        class_weight = dict(zip(classes.tolist(), per_class.tolist(), strict=True))
    assume(np.any(per_class[np.searchsorted(classes, y)] * weight > 0))
    model = DecisionTreeClassifier(class_weight=class_weight, device="cpu", **params)
    model.fit(X, y, sample_weight=weight)
    reference = DecisionTreeClassifier(device="cpu", **params)
    reference.fit(X, y, sample_weight=weight * per_class[np.searchsorted(classes, y)])
    assert_tree_equal(model.tree_, reference.tree_, impurity_rtol=0, value_rtol=0)


_bad_weight = st.sampled_from([-1.0, -5e-324, -FLOAT64_MAX, np.nan, np.inf, -np.inf])
WEIGHT_CONTAINERS = {
    "array": np.asarray,
    "list": list,
    "float32": lambda w: w.astype(np.float32),
    "Series": pd.Series,
}


@PROPERTIES
@given(
    weight=hnp.arrays(np.float64, st.integers(1, 20), elements=st.floats(0.0, 10.0)),
    bad=st.data(),
    value=_bad_weight,
    container=st.sampled_from(sorted(WEIGHT_CONTAINERS)),
    regression=st.booleans(),
)
def test_a_negative_nan_or_infinite_weight_is_refused_naming_its_row(
    weight, bad, value, container, regression
):
    """In any container, and as a scalar: named as sample_weight, with the first bad row."""
    weight[bad.draw(hnp.arrays(bool, weight.size).filter(np.any))] = value
    with np.errstate(over="ignore"):  # float32 makes -FLOAT64_MAX -inf
        passed = WEIGHT_CONTAINERS[container](weight)
    as_float = np.asarray(passed, dtype=np.float64)  # float32 rounds -5e-324 to -0.0
    non_finite, negative = ~np.isfinite(as_float), as_float < 0
    assume(non_finite.any() or negative.any())
    if non_finite.any():
        message = rf"sample_weight contains NaN or infinity at row {np.argmax(non_finite)}\b"
    else:
        message = rf"Negative values in data passed to sample_weight: row {np.argmax(negative)}\b"
    X, y = np.arange(weight.size, dtype=np.float64)[:, None], np.arange(weight.size) % 2
    with pytest.raises(ValueError, match=message):
        _estimator(regression).fit(X, y, sample_weight=passed)
    with pytest.raises(ValueError, match="sample_weight"):
        _estimator(regression).fit(X, y, sample_weight=value)


@PROPERTIES
@given(
    label=st.sampled_from([0, 1]),
    value=st.one_of(_bad_weight, st.sampled_from(["1", None, [1.0]])),
)
def test_a_bad_class_weight_is_refused_naming_its_class(label, value):
    X, y = np.arange(8.0)[:, None], np.arange(8) % 2
    with pytest.raises(ValueError, match=rf"class_weight\[{label}\] must be"):
        DecisionTreeClassifier(class_weight={label: value}, device="cpu").fit(X, y)


# ---------------------------------------------------------------------------------------
# Categories: labels name categories, the order of the categories is all that counts
# ---------------------------------------------------------------------------------------

CATEGORICAL = [0, 2]  # columns 0 and 2 are categorical, column 1 numeric


@st.composite
def _categorical_data(draw, max_categories=6):
    """(codes, y, weight, params): X with category codes 0..K-1 (NaN: missing) in columns
    0 and 2, a numeric column 1, and the categories' counts K."""
    n_rows = draw(st.integers(2, 40))
    n_categories = [draw(st.integers(1, max_categories)) for _ in CATEGORICAL]
    columns = [
        draw(
            hnp.arrays(
                np.float64, n_rows, elements=st.integers(0, k - 1).map(float) | st.just(np.nan)
            )
        )
        for k in n_categories
    ]
    numeric = draw(hnp.arrays(np.float64, n_rows, elements=st.integers(-2, 2).map(float)))
    X = np.c_[columns[0], numeric, columns[1]]
    regression = draw(st.booleans())
    y = draw(_targets(n_rows, regression))
    weight = draw(
        st.none() | hnp.arrays(np.float64, n_rows, elements=st.sampled_from([0.5, 1.0, 2.0]))
    )
    params = {
        "max_depth": draw(st.sampled_from([1, 2, 3, None])),
        "categorical_split": draw(st.sampled_from(["binary", "multiway"])),
        "criterion": "squared_error"
        if regression
        else draw(st.sampled_from(["gini", "entropy", "gain_ratio"])),
    }
    return X, y, weight, params, n_categories


def _as_frame(X, names, dtype=None):
    """X's category codes as the labels ``names[j][code]`` (None: missing), in a DataFrame."""
    frame = {}
    for j, column in enumerate(X.T):
        if j not in CATEGORICAL:
            frame[f"x{j}"] = column
        elif dtype == "category":
            codes = np.where(np.isnan(column), -1, column).astype(int)
            frame[f"x{j}"] = pd.Categorical.from_codes(codes, categories=names[j])
        else:
            frame[f"x{j}"] = [None if np.isnan(v) else names[j][int(v)] for v in column]
    return pd.DataFrame(frame)


def _ordered_names(n):
    return [f"c{k}" for k in range(n)]  # sorted as the codes are (n <= 10)


# Each form of the same categories, for (X, names): what fit and predict are given, and
# the categorical_features that declares them.
CATEGORY_FORMS = {
    "float codes": (lambda X, names: X, CATEGORICAL),
    "float codes, mask": (lambda X, names: X, [True, False, True]),
    "float codes, negative indices": (lambda X, names: X, [-3, -1]),
    "shifted and scaled codes": (
        lambda X, names: np.c_[X[:, 0] * 2.5 - 7, X[:, 1], X[:, 2] - 1e6],
        CATEGORICAL,
    ),
    "strings, object array": (
        lambda X, names: _as_frame(X, names).to_numpy(dtype=object),
        CATEGORICAL,
    ),
    "strings, DataFrame": (lambda X, names: _as_frame(X, names), ["x0", "x2"]),
    "pandas category, any names": (lambda X, names: _as_frame(X, names, "category"), "from_dtype"),
}


@PROPERTIES
@given(
    data=_categorical_data(),
    form=st.sampled_from(sorted(CATEGORY_FORMS)),
    any_names=st.lists(st.text(min_size=1, max_size=3), min_size=7, max_size=7, unique=True),
)
def test_categories_in_any_form_grow_the_tree_of_their_codes(data, form, any_names):
    """Codes, numbers in the same order, strings, a pandas category column under any
    names in the same category order: the same tree, the same predictions for every
    combination of known categories, and a category never seen in training predicted as a
    missing one."""
    X, y, weight, params, n_categories = data
    convert, declared = CATEGORY_FORMS[form]
    # names[j][k] labels code k of column j; the last label, K, is never seen in training.
    if form.startswith("pandas"):
        names = {j: any_names[: k + 1] for j, k in zip(CATEGORICAL, n_categories, strict=True)}
    else:
        names = {j: _ordered_names(k + 1) for j, k in zip(CATEGORICAL, n_categories, strict=True)}
    regression = params["criterion"] == "squared_error"
    model = _estimator(regression, categorical_features=declared, **params)
    model.fit(convert(X, names), y, sample_weight=weight)
    reference = _estimator(regression, categorical_features=CATEGORICAL, **params)
    reference.fit(X, y, sample_weight=weight)
    assert_tree_equal(model.tree_, reference.tree_, impurity_rtol=0, value_rtol=0)
    # Every combination of each column's categories, missing and unseen ones included.
    grid = [np.r_[np.arange(k + 1), np.nan] for k in n_categories]
    a, b = (g.ravel() for g in np.meshgrid(*grid))
    probe = np.c_[a, np.resize(X[:, 1], a.size), b]
    seen = np.c_[
        np.where(a == n_categories[0], np.nan, a),
        probe[:, 1],
        np.where(b == n_categories[1], np.nan, b),
    ]
    expected = _outputs(reference, seen)  # an unseen category: as if missing
    np.testing.assert_array_equal(_outputs(model, convert(probe, names)), expected)
    np.testing.assert_array_equal(_outputs(reference, probe), expected)


def _root_children_impurity(tree):
    """W_L I_L + W_R I_R of the root's split (or of each multiway branch); None: a leaf."""
    children = tree.children_of(0)
    if children.size == 0:
        return None
    return float(np.sum(tree.weighted_n_node_samples[children] * tree.impurity[children]))


@PROPERTIES
@given(data=_categorical_data(max_categories=5), relabel=st.data())
def test_relabelling_categories_in_any_order_finds_as_good_a_split(data, relabel):
    """Codes permuted (labels that sort in another order): as good a split. A multiway
    tree puts the rows in the same leaves (one child per category: no order to depend
    on). Binary splits may break ties otherwise, so there the root split's weighted
    impurity must be the same (the search is exhaustive for at most 5 categories: every
    subset of at most max_category_subset=2 categories, or its complement)."""
    X, y, weight, params, n_categories = data
    if params["categorical_split"] == "multiway":
        # Missing values go to the largest branch: ties between branches broken by code.
        rows = ~np.isnan(X).any(axis=1)
        assume(rows.any())
        X, y = X[rows], y[rows]
        weight = None if weight is None else weight[rows]
    else:
        params = {**params, "max_depth": 1}
    relabelled = X.copy()
    for j, k in zip(CATEGORICAL, n_categories, strict=True):
        permutation = np.array(relabel.draw(st.permutations(range(k))), dtype=np.float64)
        present = ~np.isnan(X[:, j])
        relabelled[present, j] = permutation[X[present, j].astype(int)]
    regression = params["criterion"] == "squared_error"
    a = _estimator(regression, categorical_features=CATEGORICAL, **params)
    b = _estimator(regression, categorical_features=CATEGORICAL, **params)
    a.fit(X, y, sample_weight=weight)
    b.fit(relabelled, y, sample_weight=weight)
    if params["categorical_split"] == "multiway":
        leaves_a, leaves_b = a.apply(X).tolist(), b.apply(relabelled).tolist()
        pairs = set(zip(leaves_a, leaves_b, strict=True))
        assert len(pairs) == len(set(leaves_a)) == len(set(leaves_b))  # the same partition
        np.testing.assert_allclose(_outputs(a, X), _outputs(b, relabelled), rtol=1e-12, atol=0)
    else:
        before, after = _root_children_impurity(a.tree_), _root_children_impurity(b.tree_)
        assert (before is None) == (after is None)
        if before is not None:
            assert after == pytest.approx(before, rel=1e-9, abs=1e-12)


@PROPERTIES
@given(data=_categorical_data(), order=st.data())
def test_row_order_changes_nothing(data, order):
    """Rows shuffled (categories, missing values, weights and all): the same tree to the
    bit, every statistic being an integer sum."""
    X, y, weight, params, _ = data
    rows = np.array(order.draw(st.permutations(range(y.size))))
    regression = params["criterion"] == "squared_error"
    a = _estimator(regression, categorical_features=CATEGORICAL, **params)
    b = _estimator(regression, categorical_features=CATEGORICAL, **params)
    a.fit(X, y, sample_weight=weight)
    b.fit(X[rows], y[rows], sample_weight=None if weight is None else weight[rows])
    assert_tree_equal(a.tree_, b.tree_, impurity_rtol=0, value_rtol=0)
    np.testing.assert_array_equal(_outputs(a, X), _outputs(b, X))


# ---------------------------------------------------------------------------------------
# The same input, the same tree: run after run, and on either device
# ---------------------------------------------------------------------------------------

CUDA_USABLE, CUDA_REASON, _ = cuda_status()


@pytest.mark.skipif(not CUDA_USABLE, reason=f"CUDA backend not usable: {CUDA_REASON}")
@settings(PROPERTIES, max_examples=6)  # the simulator is slow: a few small fits
@given(
    X=_pooled_matrix(st.one_of(_any_float, _edge_float), max_rows=16, max_features=2),
    data=st.data(),
    categorical=st.booleans(),
    regression=st.booleans(),
)
def test_the_same_hostile_input_grows_the_same_tree_twice_and_on_cuda(
    X, data, categorical, regression
):
    """Extreme values, missing values, categories, weights from 2**-40 to 2**40."""
    params = {"max_depth": 3}
    if categorical:  # column 0 holds categories: the codes of its values
        missing = np.isnan(X[:, 0])
        X[:, 0] = np.unique(X[:, 0], return_inverse=True)[1].ravel()
        X[missing, 0] = np.nan
        params["categorical_features"] = [0]
    y = data.draw(_targets(X.shape[0], regression))
    weight = 2.0 ** data.draw(
        hnp.arrays(np.float64, X.shape[0], elements=st.integers(-40, 40).map(float))
    )
    Estimator = DecisionTreeRegressor if regression else DecisionTreeClassifier
    cpu = [Estimator(device="cpu", **params).fit(X, y, sample_weight=weight) for _ in range(2)]
    cuda = [Estimator(device="cuda", **params).fit(X, y, sample_weight=weight) for _ in range(2)]
    for model in (cpu[1], *cuda):
        assert_tree_equal(model.tree_, cpu[0].tree_, impurity_rtol=0, value_rtol=0)
        np.testing.assert_array_equal(_outputs(model, X), _outputs(cpu[0], X))


# ---------------------------------------------------------------------------------------
# Newer surfaces: sparse X, multi-output y, the median and Poisson criteria, monotonicity
# constraints, forests
# ---------------------------------------------------------------------------------------

FAST = settings(PROPERTIES, max_examples=15)  # each property runs in a few seconds
SPARSE_FORMATS = ["csr", "csc", "coo"]


@st.composite
def _sparse_matrix(draw, dense):
    """``dense`` as a SciPy sparse matrix of a drawn format, some of its zeros stored
    explicitly (a stored 0 is a zero all the same)."""
    import scipy.sparse as sp

    rows, columns = np.nonzero(dense)
    zero_rows, zero_columns = np.nonzero(dense == 0)
    stored_zeros = draw(hnp.arrays(bool, zero_rows.size))
    rows = np.r_[rows, zero_rows[stored_zeros]]
    columns = np.r_[columns, zero_columns[stored_zeros]]
    coo = sp.coo_matrix((dense[rows, columns], (rows, columns)), shape=dense.shape)
    return coo.asformat(draw(st.sampled_from(SPARSE_FORMATS)))


@FAST
@given(
    X=_pooled_matrix(st.sampled_from([0.0, 0.0, 0.0, -0.0, 1.0, -2.5, 3.0, 1e3]), max_rows=30),
    regression=st.booleans(),
    splitter=st.sampled_from(["hist", "exact", "random"]),
    data=st.data(),
)
def test_a_sparse_X_grows_the_tree_of_the_dense_X(X, regression, splitter, data):
    """CSR, CSC or COO, zeros implicit or stored, rows of zero weight: the tree the same
    values grow dense, node for node, and the same predictions of the sparse rows."""
    y = data.draw(_targets(X.shape[0], regression))
    weight = data.draw(
        st.none()
        | hnp.arrays(np.float64, X.shape[0], elements=st.sampled_from([0.0, 0.5, 1.0, 3.0])).filter(
            np.any
        )
    )
    X_sparse = data.draw(_sparse_matrix(X))
    params = {"splitter": splitter, "random_state": 0, "max_bins": data.draw(st.integers(2, 8))}
    dense = _estimator(regression, **params).fit(X, y, sample_weight=weight)
    sparse = _estimator(regression, **params).fit(X_sparse, y, sample_weight=weight)
    assert_tree_equal(sparse.tree_, dense.tree_, impurity_rtol=0, value_rtol=0)
    np.testing.assert_array_equal(_outputs(sparse, X_sparse), _outputs(dense, X))
    np.testing.assert_array_equal(sparse.apply(X_sparse), dense.apply(X))


@FAST
@given(
    data=small_integer_data(regression=True),
    n_outputs=st.integers(2, 3),
    scales=st.lists(st.sampled_from([1.0, -0.5, 1e6, 3e-4]), min_size=3, max_size=3),
    splitter=st.sampled_from(["hist", "exact"]),
    more=st.data(),
)
def test_a_multi_output_regressor_predicts_each_leaf_s_weighted_mean_of_every_output(
    data, n_outputs, scales, splitter, more
):
    """predict gives (n_samples, n_outputs), and where a row lands, each output's value is
    the weighted mean of that output over the training rows of its leaf."""
    X, y, weight, params = data
    others = [
        more.draw(hnp.arrays(np.float64, y.size, elements=st.integers(-3, 3).map(float)))
        for _ in range(n_outputs - 1)
    ]
    Y = np.column_stack([y, *others]) * np.array(scales[:n_outputs])
    model = DecisionTreeRegressor(splitter=splitter, device="cpu", **params)
    model.fit(X, Y, sample_weight=weight)
    predicted = model.predict(X)
    assert predicted.shape == (y.size, n_outputs)
    w = np.ones(y.size) if weight is None else weight
    leaves = model.apply(X)
    tolerance = {"rtol": 1e-12, "atol": 1e-12 * np.max(np.abs(Y))}
    for leaf in np.unique(leaves):
        rows = leaves == leaf
        mean = np.average(Y[rows], axis=0, weights=w[rows])
        np.testing.assert_allclose(predicted[rows], np.tile(mean, (rows.sum(), 1)), **tolerance)
        np.testing.assert_allclose(model.tree_.value[leaf, :, 0], mean, **tolerance)


_target_pool = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False),
    st.sampled_from([0.0, 1.0, 2.0**-40, 1e300, -1e300, 5e-324]),
)


@FAST
@given(
    X=_pooled_matrix(st.one_of(_finite_float, _edge_float, st.just(np.nan)), max_rows=30),
    criterion=st.sampled_from(["absolute_error", "poisson"]),
    splitter=st.sampled_from(["hist", "exact", "random"]),
    data=st.data(),
)
def test_the_median_and_poisson_criteria_fit_any_valid_input_to_their_leaf_values(
    X, criterion, splitter, data
):
    """Hostile X (missing values, float64's extremes), targets from 5e-324 to 1e300 (Poisson:
    none negative, a positive sum), weights with zeros: the fit does not raise, every
    prediction is finite, and a leaf's value is what the criterion makes of its training
    rows of weight: a weighted median (no value has a smaller weighted absolute error) or
    the weighted mean (to the fixed point's precision: 2**-61 of the total per row)."""
    n_rows = X.shape[0]
    targets = _target_pool.map(abs) if criterion == "poisson" else _target_pool
    y = data.draw(hnp.arrays(np.float64, n_rows, elements=targets))
    weight = data.draw(
        st.none()
        | hnp.arrays(np.float64, n_rows, elements=st.sampled_from([0.0, 0.5, 1.0, 3.0])).filter(
            np.any
        )
    )
    w = np.ones(n_rows) if weight is None else weight
    kept = w > 0
    assume(criterion != "poisson" or np.sum(y[kept]) > 0)
    model = DecisionTreeRegressor(
        criterion=criterion, splitter=splitter, random_state=0, max_depth=4, device="cpu"
    ).fit(X, y, sample_weight=weight)
    predicted = model.predict(X)
    assert np.all(np.isfinite(predicted))
    leaves = model.apply(X)
    largest = np.max(np.abs(y[kept]))
    for leaf in np.unique(leaves[kept]):
        rows = kept & (leaves == leaf)
        value = model.tree_.value[leaf, 0, 0]
        np.testing.assert_array_equal(predicted[leaves == leaf], value)
        leaf_weight = np.sum(w[rows])
        if criterion == "poisson":
            # Each row's w * (y - centre) moves by at most 2**-61 of their absolute total.
            slack = rows.sum() * 2.0**-60 * np.sum(w) * 2 * largest / leaf_weight
            mean = np.average(y[rows], weights=w[rows])
            assert abs(value - mean) <= slack + 1e-12 * mean, (value, mean)
        else:

            def error(v, rows=rows):
                return np.sum(w[rows] * np.abs(y[rows] - v))

            least = min(error(t) for t in y[rows])
            assert error(value) <= least + 1e-12 * leaf_weight * largest, (value, least)


@FAST
@given(
    data=small_integer_data(),
    regression=st.booleans(),
    cst=st.lists(st.sampled_from([1, -1, 0]), min_size=3, max_size=3),
    splitter=st.sampled_from(["hist", "exact"]),
    forest=st.booleans(),
)
def test_predictions_are_monotone_along_a_constrained_feature(
    data, regression, cst, splitter, forest
):
    """monotonic_cst +1 (-1): with the other features fixed, the prediction (a binary
    classifier's probability of classes_[1]) never falls (rises) as the constrained
    feature grows, through and beyond its training values, for a tree and a forest."""
    X, y, weight, params = data
    cst = cst[: X.shape[1]]
    assume(any(cst))
    if not regression:
        y = (y > 0).astype(int)
        assume(np.unique(y).size == 2)  # scikit-learn's rule: binary classification only
    params = {**params, "splitter": splitter, "monotonic_cst": cst}
    if forest:
        from gpu_tree import RandomForestClassifier, RandomForestRegressor

        Forest = RandomForestRegressor if regression else RandomForestClassifier
        del params["splitter"]  # a forest's trees search as its max_bins says
        model = Forest(n_estimators=3, random_state=0, device="cpu", **params)
    else:
        model = _estimator(regression, **params)
    model.fit(X, y, sample_weight=weight)
    for feature in np.flatnonzero(cst):
        values = np.unique(X[:, feature])
        grid = np.r_[values[0] - 1, values, (values[:-1] + values[1:]) / 2, values[-1] + 1]
        grid.sort()
        for row in X[: min(8, X.shape[0])]:
            probes = np.repeat(row[None], grid.size, axis=0)
            probes[:, feature] = grid
            out = model.predict(probes) if regression else model.predict_proba(probes)[:, 1]
            steps = np.diff(out) * cst[feature]
            assert np.all(steps >= 0), (feature, grid, out)


@FAST
@given(
    data=small_integer_data(),
    bootstrap=st.booleans(),
    extra=st.booleans(),
    max_features=st.sampled_from([None, "sqrt", 1]),
)
def test_a_forest_s_probabilities_are_its_trees_mean_and_sum_to_one(
    data, bootstrap, extra, max_features
):
    """RandomForestClassifier (and ExtraTreesClassifier): every predict_proba row sums to 1
    and is the mean of its trees' predict_proba rows, one column per class of the forest
    even where a tree drew no row of a class."""
    from gpu_tree import ExtraTreesClassifier, RandomForestClassifier

    X, y, weight, params = data
    Forest = ExtraTreesClassifier if extra else RandomForestClassifier
    model = Forest(
        n_estimators=4,
        bootstrap=bootstrap,
        max_features=max_features,
        random_state=0,
        device="cpu",
        **params,
    ).fit(X, y, sample_weight=weight)
    proba = model.predict_proba(X)
    assert proba.shape == (y.size, np.unique(y).size)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    trees = np.mean([tree.predict_proba(X) for tree in model.estimators_], axis=0)
    np.testing.assert_allclose(proba, trees, rtol=1e-12, atol=1e-15)
