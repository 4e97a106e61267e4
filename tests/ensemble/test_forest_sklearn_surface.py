"""Forests against scikit-learn's own (issue 43): max_samples' rules, 'balanced_subsample'
without bootstrap and with several outputs, the out-of-bag attributes and scores, and
the ensemble surface (len, iteration, indexing, estimator, decision_path,
estimators_samples_, a sparse y refused). Each scikit-learn behaviour is compared with
scikit-learn's same-named forest, fitted with the same parameters."""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import ensemble as sk_ensemble
from sklearn import tree as sk_tree
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils.class_weight import compute_sample_weight

import gpu_tree.ensemble.forest as forest_module
from gpu_tree import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreeClassifier,
    ExtraTreeRegressor,
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
    assert_tree_equal,
)

FORESTS = [RandomForestClassifier, RandomForestRegressor, ExtraTreesClassifier, ExtraTreesRegressor]


def _sk(model):
    """scikit-learn's forest of the same name."""
    return getattr(sk_ensemble, model.__name__)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(120, 4)), 2)
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int) + (X[:, 2] > 1.0)  # 3 unbalanced classes
    return X, y


def _quiet(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # too few trees for every OOB row
        return fit()


# -- max_samples (defect 2) -------------------------------------------------------------------
@pytest.mark.parametrize(
    "max_samples", [1.5, 2.0, 0.7, 0.33, 0.05, 200, 1, np.float64(1.25), np.int64(130)]
)
def test_max_samples_draws_as_many_rows_as_scikit_learn(max_samples, data):
    """An int above the rows and a float above 1.0 are allowed (scikit-learn >= 1.5), a
    float's rows rounded down: each tree draws the rows scikit-learn's trees draw."""
    X, y = data
    params = dict(n_estimators=3, max_samples=max_samples, max_depth=2, random_state=0)
    with warnings.catch_warnings(record=True) as theirs_warned:
        warnings.simplefilter("always")
        theirs = sk_ensemble.RandomForestClassifier(**params).fit(X, y)
    with warnings.catch_warnings(record=True) as ours_warned:
        warnings.simplefilter("always")
        ours = RandomForestClassifier(**params, device="cpu").fit(X, y)
    assert [len(s) for s in ours.estimators_samples_] == [
        len(s) for s in theirs.estimators_samples_
    ]
    # scikit-learn's warning of a fraction that draws suspiciously few rows, word for word.
    low = [str(w.message) for w in theirs_warned if "low number" in str(w.message)]
    assert low == [str(w.message) for w in ours_warned if "low number" in str(w.message)]


@pytest.mark.parametrize(
    "max_samples", [True, False, 0, -3, 0.0, -0.5, np.nan, np.inf, "1", np.float32(0.5)]
)
def test_max_samples_refused_as_scikit_learn_refuses_it(max_samples, data):
    """What scikit-learn refuses (its InvalidParameterError is a ValueError and a
    TypeError; True passes its check, then fails as a TypeError), refused here too, in
    scikit-learn's words; True is not taken as 1.0 any more. A fraction is a float, as
    scikit-learn's RealNotInt (np.float64 is one, np.float32 not)."""
    X, y = data
    if max_samples is not np.inf:  # scikit-learn lets inf through to an OverflowError
        with pytest.raises((ValueError, TypeError)):
            sk_ensemble.RandomForestClassifier(3, max_samples=max_samples).fit(X, y)
    with pytest.raises((ValueError, TypeError), match="'max_samples' parameter") as caught:
        RandomForestClassifier(3, max_samples=max_samples, device="cpu").fit(X, y)
    expected = TypeError if isinstance(max_samples, bool | str | np.float32) else ValueError
    assert caught.type is expected
    assert "must be None, a float in the range (0.0, inf) or an int in the range [1, inf)" in (
        str(caught.value)
    )


@pytest.mark.parametrize("max_samples", [10**12, 10**15])
def test_max_samples_that_cannot_fit_in_memory_is_refused_before_drawing(max_samples, data):
    """A bootstrap sample whose row indices cannot fit in memory: a ValueError naming the
    parameter and the bytes, before anything of that size is allocated (it was a 7.28 TiB
    MemoryError)."""
    X, y = data
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"max_samples=\d+ .* bytes") as caught:
            RandomForestRegressor(2, max_samples=max_samples, device="cpu").fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert f"{8 * max_samples:,} bytes" in str(caught.value)
    assert peak < 64 << 20


def test_a_large_bootstrap_sample_is_drawn_in_bounded_memory(monkeypatch):
    """Drawing a tree's sample counts its rows chunk by chunk: the same counts as one
    draw of every index (the same stream of numbers), in a few MB rather than 8 bytes a
    drawn row (max_samples=10**9 took 7.5 GiB per tree)."""
    forest = RandomForestRegressor(random_state=3)
    forest._seed = 12345
    n_samples, n_drawn = 1000, 8 * forest_module.BOOTSTRAP_CHUNK + 17
    expected = np.bincount(
        np.random.default_rng([12345, 4]).integers(0, n_samples, n_drawn), minlength=n_samples
    )
    tracemalloc.start()
    try:
        counts = forest._bootstrap_counts(4, n_samples, n_drawn)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(counts, expected)
    assert peak < 3 * 8 * forest_module.BOOTSTRAP_CHUNK < 8 * n_drawn / 2


def test_max_samples_above_the_rows_grows_every_tree_on_its_sample(data):
    """max_samples above the row count: each tree is the lone tree of its (larger)
    bootstrap sample's counts."""
    X, y = data
    forest = RandomForestClassifier(
        3, max_samples=500, max_features=None, max_depth=4, random_state=2, device="cpu"
    ).fit(X, y)
    for estimator, samples in zip(forest.estimators_, forest.estimators_samples_, strict=True):
        assert samples.shape == (500,)
        counts = np.bincount(samples, minlength=X.shape[0]).astype(float)
        assert estimator.tree_.weighted_n_node_samples[0] == 500
        lone = DecisionTreeClassifier(max_depth=4, device="cpu").fit(X, y, sample_weight=counts)
        assert_tree_equal(estimator.tree_, lone.tree_, impurity_rtol=0, value_rtol=0)


# -- class_weight="balanced_subsample" (defect 6) ---------------------------------------------
def test_balanced_subsample_without_bootstrap_is_balanced(data):
    """Without bootstrap, scikit-learn weighs 'balanced_subsample' as 'balanced' (every
    tree's sample is all the rows); it applied no weights."""
    X, y = data
    params = dict(n_estimators=2, bootstrap=False, max_depth=3, random_state=0)
    ours = RandomForestClassifier(class_weight="balanced_subsample", **params, device="cpu")
    ours.fit(X, y)
    theirs = sk_ensemble.RandomForestClassifier(class_weight="balanced_subsample", **params)
    theirs.fit(X, y)
    for mine, their in zip(ours.estimators_, theirs.estimators_, strict=True):
        # The root's weighted class proportions: 1/3 each once balanced.
        np.testing.assert_allclose(mine.tree_.value[0], their.tree_.value[0], rtol=1e-12)
    balanced = RandomForestClassifier(class_weight="balanced", **params, device="cpu").fit(X, y)
    for mine, other in zip(ours.estimators_, balanced.estimators_, strict=True):
        assert_tree_equal(mine.tree_, other.tree_, impurity_rtol=0, value_rtol=0)


def test_balanced_subsample_with_several_outputs(data):
    """Multi-output y: each tree weighs its bootstrap sample as scikit-learn's
    compute_sample_weight('balanced', Y, indices=sample) does (the product of every
    output's balanced weights), as scikit-learn's forests do; it was refused."""
    X, y = data
    Y = np.column_stack([y, (X[:, 3] > 0.8).astype(int)])
    params = dict(n_estimators=3, max_depth=3, class_weight="balanced_subsample", random_state=1)
    sk_ensemble.RandomForestClassifier(**params).fit(X, Y)  # scikit-learn fits it
    forest = RandomForestClassifier(**params, max_features=None, device="cpu").fit(X, Y)
    for estimator, samples in zip(forest.estimators_, forest.estimators_samples_, strict=True):
        counts = np.bincount(samples, minlength=X.shape[0])
        weight = counts * compute_sample_weight("balanced", Y, indices=samples)
        lone = DecisionTreeClassifier(max_depth=3, device="cpu").fit(X, Y, sample_weight=weight)
        assert_tree_equal(estimator.tree_, lone.tree_)
    # Without bootstrap: 'balanced' over every row, as scikit-learn.
    whole = RandomForestClassifier(
        2, bootstrap=False, max_depth=3, class_weight="balanced_subsample", device="cpu"
    ).fit(X, Y)
    theirs = sk_ensemble.RandomForestClassifier(
        2, bootstrap=False, max_depth=3, class_weight="balanced_subsample"
    ).fit(X, Y)
    for k in range(2):
        np.testing.assert_allclose(
            whole.estimators_[0].tree_.value[0, k, :2],
            theirs.estimators_[0].tree_.value[0, k, :2],
            rtol=1e-12,
        )


def test_balanced_subsample_of_many_outputs_refuses_weights_its_units_cannot_hold(data):
    """Each further output multiplies a drawn row's weight by up to n_drawn / 2: where a
    tree's weights could span more than the forest's 61-bit integer statistics hold to
    1 part in 4096, a ValueError before any tree grows (not trees of rounded weights)."""
    X, y = data
    Y = np.column_stack([y, X[:, 3] > 0.8, X[:, 1] > 0, X[:, 2] > 0]).astype(int)
    params = dict(class_weight="balanced_subsample", max_depth=2, device="cpu")
    RandomForestClassifier(2, **params).fit(X, Y)  # 120 rows a tree: held precisely
    with pytest.raises(ValueError, match="4 outputs and 100,000 rows drawn per tree"):
        RandomForestClassifier(2, max_samples=100_000, **params).fit(X, Y)


# -- out-of-bag (defect 14) -------------------------------------------------------------------
def _multilabel(data):
    X, y = data
    return X, np.column_stack([y > 0, X[:, 3] > 0.3, X[:, 1] < -0.5]).astype(int)


def test_multilabel_oob_is_scikit_learn_s_array_and_subset_accuracy(data):
    """Multilabel y: oob_decision_function_ (n_samples, n_classes, n_outputs) as
    scikit-learn's, each row the mean over its out-of-bag trees; oob_score_ the subset
    accuracy score() reports (not the outputs' mean accuracy)."""
    X, Y = _multilabel(data)
    params = dict(n_estimators=10, max_depth=3, oob_score=True, random_state=0)
    theirs = _quiet(lambda: sk_ensemble.RandomForestClassifier(**params).fit(X, Y))
    ours = _quiet(lambda: RandomForestClassifier(**params, device="cpu").fit(X, Y))
    oob = ours.oob_decision_function_
    assert isinstance(oob, np.ndarray)
    assert oob.shape == theirs.oob_decision_function_.shape == (X.shape[0], 2, 3)
    n = X.shape[0]
    expected = np.zeros((n, 2, 3))
    for estimator, samples in zip(ours.estimators_, ours.estimators_samples_, strict=True):
        out = np.setdiff1d(np.arange(n), samples)
        expected[out] += np.stack(estimator.predict_proba(X[out]), axis=-1)
    n_out = np.zeros(n)
    for samples in ours.estimators_samples_:
        n_out[np.setdiff1d(np.arange(n), samples)] += 1
    covered = n_out > 0
    expected[covered] /= n_out[covered, None, None]
    np.testing.assert_allclose(oob, expected, rtol=1e-12)
    predicted = oob.argmax(axis=1)
    assert ours.oob_score_ == pytest.approx(accuracy_score(Y, predicted))
    assert ours.oob_score_ < np.mean(predicted == Y)  # subset accuracy: not the mean


def test_multiclass_multioutput_oob_is_refused_as_scikit_learn_refuses_it(data):
    X, y = data
    Y = np.column_stack([y, X[:, 3] > 0.3])  # 3 classes, then 2
    with pytest.raises(ValueError) as theirs:
        sk_ensemble.RandomForestClassifier(4, oob_score=True, random_state=0).fit(X, Y)
    with pytest.raises(ValueError) as ours:
        RandomForestClassifier(4, oob_score=True, random_state=0, device="cpu").fit(X, Y)
    assert str(ours.value) == str(theirs.value)
    assert "multiclass-multioutput" in str(ours.value)


@pytest.mark.parametrize("model", FORESTS, ids=lambda m: m.__name__)
@pytest.mark.parametrize("multi_output", [False, True])
def test_a_callable_oob_score_is_called_as_scikit_learn_calls_it(model, multi_output, data):
    """oob_score=callable: called as scoring(y, y_pred), with what scikit-learn passes it
    (y's class indices as float64 of shape (n_samples, n_outputs), and the argmax of
    oob_decision_function_; a regressor's oob_prediction_); its value is oob_score_. It
    was ignored (the accuracy or R² stood instead)."""
    X, y = data
    classification = "Classifier" in model.__name__
    if multi_output:
        y = _multilabel(data)[1] if classification else np.column_stack([y, X[:, 0]])
    elif not classification:
        y = y + X[:, 0]
    seen = {}

    def scoring(name):
        def score(y_true, y_pred):
            seen[name] = (y_true.shape, y_true.dtype, y_pred.shape, y_true.copy(), y_pred.copy())
            return 0.25

        return score

    params = dict(n_estimators=5, max_depth=2, bootstrap=True, random_state=0)
    _quiet(lambda: _sk(model)(**params, oob_score=scoring("theirs")).fit(X, y))
    ours = _quiet(lambda: model(**params, oob_score=scoring("ours"), device="cpu").fit(X, y))
    assert ours.oob_score_ == 0.25
    assert seen["ours"][:3] == seen["theirs"][:3]
    np.testing.assert_array_equal(seen["ours"][3], seen["theirs"][3])  # y as passed
    if classification:
        np.testing.assert_array_equal(seen["ours"][4], ours.oob_decision_function_.argmax(1))
    else:
        np.testing.assert_array_equal(seen["ours"][4], ours.oob_prediction_)


@pytest.mark.parametrize("model", [RandomForestClassifier, RandomForestRegressor])
def test_warm_start_without_new_trees_computes_a_newly_asked_oob_score(model, data):
    """A warm-start fit that grows no tree, with oob_score newly on: scikit-learn
    computes the OOB score of the trees it has; it was left unset."""
    X, y = data
    params = dict(max_depth=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        theirs = _sk(model)(6, warm_start=True, **params).fit(X, y)
        theirs.set_params(oob_score=True).fit(X, y)
        ours = model(6, warm_start=True, **params, device="cpu").fit(X, y)
        ours.set_params(oob_score=True).fit(X, y)
        fresh = model(6, oob_score=True, **params, device="cpu").fit(X, y)
    assert hasattr(theirs, "oob_score_") and hasattr(ours, "oob_score_")
    assert ours.oob_score_ == fresh.oob_score_


@pytest.mark.parametrize("model", [RandomForestRegressor, ExtraTreesRegressor])
@pytest.mark.parametrize("n_estimators", [2, 30], ids=["rows without OOB trees", "every row"])
@pytest.mark.parametrize("outputs", ["one", "two constant", "constant and not"])
def test_oob_r2_of_a_constant_y_is_scikit_learn_s_finite_score(model, n_estimators, outputs, data):
    """Issue 43: a constant y has no spread, and oob_score_ was NaN. scikit-learn's R²
    (r2_score, force_finite) scores such an output 1 where every OOB prediction is exact
    and 0 where one is not (a row no tree left out is predicted 0)."""
    X, _ = data
    constant = np.full(X.shape[0], 3.0)
    y = {
        "one": constant,
        "two constant": np.c_[constant, constant - 7.0],
        "constant and not": np.c_[constant, X[:, 0]],
    }[outputs]
    params = dict(n_estimators=n_estimators, oob_score=True, bootstrap=True, random_state=0)
    theirs = _quiet(lambda: _sk(model)(**params).fit(X, y))
    ours = _quiet(lambda: model(**params, device="cpu").fit(X, y))
    assert np.isfinite(ours.oob_score_)
    assert ours.oob_score_ == pytest.approx(r2_score(y, ours.oob_prediction_), rel=1e-12)
    if outputs != "constant and not":  # the trees' predictions are exact alike
        assert ours.oob_score_ == theirs.oob_score_


# -- the ensemble surface -----------------------------------------------------------------------
@pytest.mark.parametrize("model", FORESTS, ids=lambda m: m.__name__)
def test_len_iteration_and_indexing_as_scikit_learn_s_ensembles(model, data):
    X, y = data
    theirs = _sk(model)(4, max_depth=2, random_state=0).fit(X, y)
    ours = model(4, max_depth=2, random_state=0, device="cpu").fit(X, y)
    assert len(ours) == len(theirs) == 4
    assert list(ours) == ours.estimators_
    assert ours[1] is ours.estimators_[1] and ours[-1] is ours.estimators_[-1]
    assert ours[1:3] == ours.estimators_[1:3]
    with pytest.raises(AttributeError):  # unfitted: as scikit-learn's
        len(_sk(model)(4))
    with pytest.raises(AttributeError):
        len(model(4))


@pytest.mark.parametrize("model", FORESTS, ids=lambda m: m.__name__)
def test_estimator_and_estimator_(model, data):
    """``estimator``: the unfitted tree of the forest's kind (not a parameter, as in
    scikit-learn's forests), ``estimator_`` the same once fitted."""
    X, y = data
    theirs = _sk(model)(2, max_depth=2)
    ours = model(2, max_depth=2, device="cpu")
    assert ("estimator" in ours.get_params()) == ("estimator" in theirs.get_params())
    assert type(ours.estimator).__name__ == type(theirs.estimator).__name__
    expected = {
        RandomForestClassifier: DecisionTreeClassifier,
        RandomForestRegressor: DecisionTreeRegressor,
        ExtraTreesClassifier: ExtraTreeClassifier,
        ExtraTreesRegressor: ExtraTreeRegressor,
    }[model]
    assert type(ours.estimator) is expected
    assert ours.estimator.get_params() == expected().get_params()  # the defaults
    assert not hasattr(ours.estimator, "tree_")
    assert not hasattr(ours, "estimator_")
    ours.fit(X, y)
    theirs.fit(X, y)
    assert type(ours.estimator_) is type(ours.estimator)
    assert ours.estimator_.get_params() == ours.estimator.get_params()
    # The parameters the forest passes on to each tree, as scikit-learn's estimator_params.
    tree_params = ours.estimators_[0].get_params()
    assert ours.estimator_params and set(ours.estimator_params) <= set(tree_params)
    for name in ours.estimator_params:
        assert tree_params[name] == getattr(ours, name)


def _tree_equal_pair(model):
    """A gpu_tree forest and scikit-learn's whose trees are the same trees: every row,
    every feature, the exact splitter, values without ties."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(80, 3))
    y = (X[:, 0] > 0.2).astype(int) + (X[:, 1] > 0.5)
    if "Regressor" in model.__name__:
        y = X[:, 0] * 3 + X[:, 1]
    params = dict(n_estimators=3, bootstrap=False, max_features=None, max_depth=3)
    theirs = _sk(model)(**params, random_state=0).fit(X, y)
    ours = model(**params, splitter="best", random_state=0, device="cpu").fit(X, y)
    return X, ours, theirs


@pytest.mark.parametrize("model", [RandomForestClassifier, RandomForestRegressor])
def test_decision_path_as_scikit_learn_s(model):
    """(indicator, n_nodes_ptr): a CSR indicator of every tree's nodes side by side, and
    where each tree's columns start; on trees equal to scikit-learn's, the same nodes
    counts and path lengths, and each row's path in a tree ends at its leaf."""
    X, ours, theirs = _tree_equal_pair(model)
    indicator, ptr = ours.decision_path(X)
    their_indicator, their_ptr = theirs.decision_path(X)
    assert sp.issparse(indicator) and indicator.format == "csr"
    assert indicator.shape == their_indicator.shape
    np.testing.assert_array_equal(ptr, their_ptr)
    assert ptr.dtype == their_ptr.dtype
    leaves = ours.apply(X)
    for t, estimator in enumerate(ours.estimators_):
        block = indicator[:, ptr[t] : ptr[t + 1]]
        their_block = their_indicator[:, their_ptr[t] : their_ptr[t + 1]]
        np.testing.assert_array_equal(block.getnnz(axis=1), their_block.getnnz(axis=1))
        np.testing.assert_array_equal(block.toarray(), estimator.decision_path(X).toarray())
        assert (block[np.arange(X.shape[0]), leaves[:, t]] == 1).all()


@pytest.mark.parametrize("model", FORESTS, ids=lambda m: m.__name__)
@pytest.mark.parametrize("bootstrap", [True, False])
def test_estimators_samples_are_the_rows_each_tree_was_grown_on(model, bootstrap, data):
    """estimators_samples_: each tree's drawn rows (n_samples_bootstrap indices, with
    repeats, as scikit-learn's), or every row without bootstrap; the tree refitted alone
    on those rows' counts is the same tree, and the out-of-bag rows are the others."""
    X, y = data
    if "Regressor" in model.__name__:
        y = y + X[:, 0]
    params = dict(n_estimators=4, bootstrap=bootstrap, max_depth=3, random_state=0)
    theirs = _sk(model)(**params).fit(X, y)
    ours = model(**params, max_features=None, device="cpu").fit(X, y)
    samples = ours.estimators_samples_
    assert len(samples) == 4
    for mine, their in zip(samples, theirs.estimators_samples_, strict=True):
        assert mine.shape == their.shape and mine.dtype == their.dtype
    n = X.shape[0]
    for t, (estimator, drawn) in enumerate(zip(ours.estimators_, samples, strict=True)):
        counts = np.bincount(drawn, minlength=n).astype(float)
        if not bootstrap:
            np.testing.assert_array_equal(drawn, np.arange(n))
        else:
            out = np.flatnonzero(ours._bootstrap_counts(t, n, n) == 0)
            np.testing.assert_array_equal(out, np.setdiff1d(np.arange(n), drawn))
        lone = estimator.__class__(**estimator.get_params()).set_params(
            max_features=None, random_state=0
        )
        lone.fit(X, y, sample_weight=counts)
        if not ours._random_thresholds:  # (regression: sums in the forest's units)
            assert_tree_equal(estimator.tree_, lone.tree_)
        else:  # random thresholds are keyed by the tree: its root holds the same rows
            assert estimator.tree_.weighted_n_node_samples[0] == counts.sum()
            assert estimator.tree_.n_node_samples[0] == np.count_nonzero(counts)


@pytest.mark.parametrize("model", FORESTS, ids=lambda m: m.__name__)
def test_a_sparse_y_is_refused_with_scikit_learn_s_error(model, data):
    X, y = data
    Y = sp.csr_matrix(np.column_stack([y > 0, y > 1]).astype(float))
    with pytest.raises(ValueError) as theirs:
        _sk(model)(2).fit(X, Y)
    with pytest.raises(ValueError) as ours:
        model(2, device="cpu").fit(X, Y)
    assert str(ours.value) == str(theirs.value)


def test_the_base_trees_are_scikit_learn_s_kinds():
    """The default trees scikit-learn's forests name: the same kinds here."""
    for model in FORESTS:
        assert type(model().estimator).__name__ == type(_sk(model)().estimator).__name__
    assert type(sk_tree.ExtraTreeClassifier()).__name__ == ExtraTreeClassifier.__name__
