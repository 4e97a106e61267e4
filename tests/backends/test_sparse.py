"""Sparse X (SciPy CSR, CSC, COO, ...): binned without densifying, histograms from the
stored values with each zero bin by subtraction, rows routed and predicted on the sparse
rows themselves. The yardstick is the dense path: the same data, dense, grows the same
tree, node for node, on every device and splitter."""

from __future__ import annotations

import numpy as np
import pytest
from _shared_data import read_arff

from gpu_tree import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreeClassifier,
    RandomForestClassifier,
    assert_tree_equal,
)
from gpu_tree.backends.cuda import cuda_status
from gpu_tree.data.binning import BinMapper
from gpu_tree.data.sparse import canonical_csr
from gpu_tree.kernels.cpu import sparse as cpu_sparse

sparse = pytest.importorskip("scipy.sparse")


def sparse_problem(n=1500, n_features=30, density=0.2, seed=0):
    """Continuous values (no ties between features' gains), most of them 0, a few
    negative; a class and a regression target read from several features."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, n_features))
    X[rng.random((n, n_features)) > density] = 0.0
    X[rng.random((n, n_features)) < 0.05] *= -1.0
    y_class = ((X[:, 0] + X[:, 3] - X[:, 5]) > 0.15).astype(np.int64)
    y_value = 3.0 * X[:, 1] - X[:, 2] + 0.1 * rng.normal(size=n)
    return X, y_class, y_value


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "lil", "dok"])
@pytest.mark.parametrize("splitter", ["hist", "exact", "random"])
def test_every_format_and_splitter_grows_the_dense_tree(fmt, splitter):
    X, y, _ = sparse_problem()
    S = sparse.csr_matrix(X).asformat(fmt)
    dense = DecisionTreeClassifier(max_depth=8, splitter=splitter, random_state=3).fit(X, y)
    tree = DecisionTreeClassifier(max_depth=8, splitter=splitter, random_state=3).fit(S, y)
    assert_tree_equal(dense.tree_, tree.tree_, impurity_rtol=0, value_rtol=0)
    assert tree.tree_.node_count > 15
    assert np.array_equal(tree.predict_proba(S), dense.predict_proba(X))
    assert np.array_equal(tree.apply(S), dense.apply(X))
    assert (tree.decision_path(S) != dense.decision_path(X)).nnz == 0


def test_regression_weights_missing_values_and_sparse_arrays():
    X, _, y = sparse_problem(seed=1)
    X[::17, 4] = np.nan  # stored NaN: a missing value, as in a dense X
    weight = np.random.default_rng(2).integers(1, 4, size=y.size).astype(float)
    S = sparse.csr_array(X)  # the array API as well as the matrix one
    dense = DecisionTreeRegressor(max_depth=10, min_samples_leaf=3).fit(X, y, sample_weight=weight)
    tree = DecisionTreeRegressor(max_depth=10, min_samples_leaf=3).fit(S, y, sample_weight=weight)
    assert_tree_equal(dense.tree_, tree.tree_, impurity_rtol=0, value_rtol=0)
    assert np.array_equal(tree.predict(S), dense.predict(X))
    assert np.array_equal(tree.predict(S), tree.predict(X))  # either kind of X predicts


def test_stored_zeros_duplicates_and_unsorted_columns_mean_what_scipy_means():
    # COO with an entry stored twice (summed), an explicit 0 and columns out of order.
    rows = np.array([0, 0, 1, 2, 2, 3, 0])
    cols = np.array([2, 0, 1, 0, 0, 2, 2])
    vals = np.array([1.0, 5.0, 0.0, 2.0, 3.0, -1.0, 0.5])
    S = sparse.coo_matrix((vals, (rows, cols)), shape=(4, 3))
    before = (S.row.copy(), S.col.copy(), S.data.copy())
    csr = canonical_csr(S)
    assert np.array_equal(csr.toarray(), S.toarray())
    assert all(
        np.all(np.diff(csr.indices[a:b]) > 0)
        for a, b in zip(csr.indptr, csr.indptr[1:], strict=False)
    )
    assert all(
        np.array_equal(a, b) for a, b in zip(before, (S.row, S.col, S.data), strict=True)
    )  # untouched
    y = np.array([0, 1, 0, 1])
    tree = DecisionTreeClassifier(splitter="exact").fit(S, y)
    assert np.array_equal(
        tree.predict(S), DecisionTreeClassifier(splitter="exact").fit(S.toarray(), y).predict(S)
    )


def test_binning_sees_the_zeros_it_is_not_given():
    # Quantile edges (more distinct values than bins) and one-value-per-bin edges: the
    # same as of the dense column, zeros included, and each zero bin is the bin of 0.
    X, _, _ = sparse_problem(n=4000, n_features=6, density=0.4, seed=4)
    X[:, 5] = np.round(X[:, 5] * 4)  # few distinct values: a bin each
    for max_bins in (8, 255):
        dense = BinMapper(max_bins=max_bins).fit(X)
        mapper = BinMapper(max_bins=max_bins).fit(canonical_csr(sparse.csr_matrix(X)))
        for a, b in zip(dense.edges_, mapper.edges_, strict=True):
            assert np.array_equal(a, b)
        codes, lower, upper = mapper.transform_sparse(canonical_csr(sparse.csr_matrix(X)))
        dense_codes, dense_lower, dense_upper = dense.transform(X)
        assert np.array_equal(codes.dense(), dense_codes)
        assert np.array_equal(lower, dense_lower) and np.array_equal(upper, dense_upper)


def test_histograms_are_the_dense_ones_by_subtraction():
    X, y, _ = sparse_problem(n=600, n_features=7, seed=5)
    csr = canonical_csr(sparse.csr_matrix(X))
    mapper = BinMapper(max_bins=16).fit(csr)
    codes, _, _ = mapper.transform_sparse(csr)
    dense_codes = codes.dense()
    rng = np.random.default_rng(0)
    sample_indices = rng.permutation(X.shape[0]).astype(np.int64)
    start, end = np.array([0, 200, 450]), np.array([200, 450, 600])
    stats = np.stack([np.ones(X.shape[0]), y], axis=1).astype(np.int64)
    features = np.array([[0, 3, 6], [6, 1, 2], [5, 5, 4]], dtype=np.int64)  # drawn, per node
    hist = np.full((3, 3, mapper.n_bins_, 2), 99, dtype=np.int64)  # the kernel zeroes it
    cpu_sparse.sparse_histograms(
        codes.indptr, codes.indices, codes.codes, codes.zero_code,
        sample_indices, start, end, features, stats, 2, hist,
    )  # fmt: skip
    for node in range(3):
        rows = sample_indices[start[node] : end[node]]
        for j, f in enumerate(features[node]):
            for channel in range(2):
                expected = np.bincount(
                    dense_codes[f, rows], weights=stats[rows, channel], minlength=mapper.n_bins_
                )
                assert np.array_equal(hist[node, j, :, channel], expected)


def test_row_codes_are_the_dense_codes_of_those_rows():
    # A node's block of codes (the absolute-error search's input): stored values' codes,
    # the zero bin elsewhere, stored NaN's the missing bin; rows and features in any order.
    X, _, _ = sparse_problem(n=500, n_features=9, seed=8)
    X[::13, 2] = np.nan
    csr = canonical_csr(sparse.csr_matrix(X))
    codes, _, _ = BinMapper(max_bins=16).fit(csr).transform_sparse(csr)
    rng = np.random.default_rng(1)
    rows = rng.choice(X.shape[0], 120, replace=False).astype(np.int64)
    features = np.array([7, 2, 0, 5], dtype=np.int64)
    out = np.empty((features.size, rows.size), dtype=codes.codes.dtype)
    cpu_sparse.row_codes(
        codes.indptr, codes.indices, codes.codes, codes.zero_code, rows, features, out
    )
    assert np.array_equal(out, codes.dense()[np.ix_(features, rows)])


def test_forest_on_sparse_input_equals_the_dense_forest():
    X, y, _ = sparse_problem(n=800, seed=6)
    S = sparse.csr_matrix(X)

    def make():
        return RandomForestClassifier(n_estimators=4, max_depth=6, random_state=0, oob_score=True)

    dense, forest = make().fit(X, y), make().fit(S, y)
    for a, b in zip(dense.estimators_, forest.estimators_, strict=True):
        assert_tree_equal(a.tree_, b.tree_, impurity_rtol=0, value_rtol=0)
    assert np.array_equal(forest.predict_proba(S), dense.predict_proba(X))
    assert forest.oob_score_ == dense.oob_score_


def test_exact_mode_grows_scikit_learns_tree_on_sparse_input():
    from sklearn.tree import DecisionTreeRegressor as SklearnRegressor

    X, _, y = sparse_problem(n=700, seed=7)
    S = sparse.csc_matrix(X.astype(np.float32))  # scikit-learn's trees read float32
    # Leaves of 10 rows or more: in smaller nodes, two features often split the rows
    # alike (a tie, broken differently).
    ours = DecisionTreeRegressor(splitter="best", max_depth=8, min_samples_leaf=10).fit(S, y)
    theirs = SklearnRegressor(max_depth=8, min_samples_leaf=10, random_state=0).fit(S, y)

    def splits(tree):  # node order differs (breadth-first here, depth-first there)
        inner = tree.feature >= 0
        return sorted(zip(tree.feature[inner], np.round(tree.threshold[inner], 12), strict=True))

    assert ours.tree_.node_count == theirs.tree_.node_count
    assert splits(ours.tree_) == splits(theirs.tree_)
    assert np.allclose(ours.predict(S), theirs.predict(S))


def test_one_hot_encoded_real_data():
    # A real sparse problem: the mushroom data set one-hot encoded by scikit-learn.
    from sklearn.preprocessing import OneHotEncoder

    names, rows = read_arff("mushroom.arff")
    table = np.array(rows, dtype=object)
    table[table == None] = "?"  # noqa: E711 - missing values: a category of their own
    X = OneHotEncoder().fit_transform(table[:, :-1].astype(str))
    y = table[:, -1].astype(str)
    assert sparse.issparse(X) and X.nnz == X.shape[0] * (len(names) - 1)
    dense = DecisionTreeClassifier(max_depth=5).fit(X.toarray(), y)
    tree = DecisionTreeClassifier(max_depth=5).fit(X, y)
    assert_tree_equal(dense.tree_, tree.tree_, impurity_rtol=0, value_rtol=0)
    assert tree.score(X, y) > 0.99


def test_cuda_tree_of_sparse_input_equals_cpu_tree():
    usable, reason, _ = cuda_status()
    if not usable:
        pytest.skip(f"CUDA backend not usable: {reason}")
    X, y, _ = sparse_problem(n=300, n_features=12, seed=8)
    S = sparse.csr_matrix(X)
    cpu = DecisionTreeClassifier(max_depth=5).fit(S, y)
    cuda = DecisionTreeClassifier(max_depth=5, device="cuda").fit(S, y)
    assert cuda.device_ == "cuda"
    assert_tree_equal(cpu.tree_, cuda.tree_)
    assert np.array_equal(cuda.predict(S), cpu.predict(S))
    extra = ExtraTreeClassifier(max_depth=5, random_state=0)
    assert_tree_equal(
        extra.fit(S, y).tree_,
        ExtraTreeClassifier(max_depth=5, random_state=0, device="cuda").fit(S, y).tree_,
    )


@pytest.mark.parametrize("case", ["regression", "forest", "multi_output"])
def test_cuda_sparse_fits_equal_cpu_fits_and_never_densify(case, monkeypatch):
    """The GPU keeps the CSR codes (the stored values' codes, never n_samples x
    n_features of them), builds histograms from the stored values with the zero bins by
    subtraction, routes rows by a binary search of their stored columns: the CPU's
    trees, bit for bit, with weights, stored NaNs, several outputs and forests."""
    from gpu_tree import RandomForestRegressor
    from gpu_tree.backends import cuda_sparse
    from gpu_tree.data.binning import SparseCodes

    usable, reason, _ = cuda_status()
    if not usable:
        pytest.skip(f"CUDA backend not usable: {reason}")
    X, y_class, y = sparse_problem(n=240, n_features=10, density=0.15, seed=9)
    X[::13, 4] = np.nan  # stored NaNs: the missing bin
    weight = np.random.default_rng(3).integers(1, 4, size=y.size).astype(float)
    S = sparse.csr_matrix(X)
    monkeypatch.setattr(SparseCodes, "dense", None)  # any densifying fails
    built = []
    init = cuda_sparse.CUDASparseHistogramBackend.__init__

    def recording_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        built.append(self)

    monkeypatch.setattr(cuda_sparse.CUDASparseHistogramBackend, "__init__", recording_init)
    if case == "forest":
        make = lambda device: RandomForestRegressor(  # noqa: E731
            n_estimators=3, max_depth=5, random_state=0, device=device
        )
        cpu, cuda = (make(d).fit(S, y, sample_weight=weight) for d in ("cpu", "cuda"))
        for a, b in zip(cuda.estimators_, cpu.estimators_, strict=True):
            assert_tree_equal(a.tree_, b.tree_, impurity_rtol=0, value_rtol=0)
    else:
        Y = np.column_stack([y_class, (X[:, 1] > 0.5).astype(int)]) if case == "multi_output" else y
        model = DecisionTreeClassifier if case == "multi_output" else DecisionTreeRegressor
        cpu = model(max_depth=6, min_samples_leaf=2).fit(S, Y, sample_weight=weight)
        cuda = model(max_depth=6, min_samples_leaf=2, device="cuda").fit(S, Y, sample_weight=weight)
        assert cuda.tree_.node_count > 15
        assert_tree_equal(cuda.tree_, cpu.tree_, impurity_rtol=0, value_rtol=0)
    np.testing.assert_array_equal(cuda.predict(S), cpu.predict(S))
    assert built, "the CUDA sparse backend grew the trees"
    for backend in built:
        codes = backend.X_binned
        assert isinstance(codes, SparseCodes)
        # The stored values only (about a fifth of the cells here), one code each.
        assert codes.codes.size == codes.indices.size == int(codes.indptr[-1])
        assert codes.codes.size < 0.3 * backend.n_samples * backend.n_features


def test_bad_sparse_input_is_named():
    X, y, _ = sparse_problem(n=50, n_features=6)
    S = sparse.csr_matrix(X)
    S.data[3] = np.inf
    row = int(np.searchsorted(S.indptr, 3, side="right")) - 1
    with pytest.raises(ValueError, match=f"column {S.indices[3]} at row {row}"):
        DecisionTreeClassifier().fit(S, y)
    good = sparse.csr_matrix(X)
    with pytest.raises(ValueError, match="categorical features of a sparse X"):
        DecisionTreeClassifier(categorical_features=[1]).fit(good, y)
    with pytest.raises(ValueError, match="[Cc]omplex"):
        DecisionTreeClassifier().fit(good.astype(np.complex128), y)
    fitted = DecisionTreeClassifier().fit(good, y)
    with pytest.raises(ValueError, match="features"):
        fitted.predict(sparse.csr_matrix(np.zeros((2, 5))))
    with pytest.raises(ValueError, match="0 sample"):
        DecisionTreeClassifier().fit(sparse.csr_matrix((0, 6)), y[:0])


def test_tree_apply_reads_any_sparse_matrix():
    """tree_.apply (and decision_path) on a matrix the estimators did not check: columns
    unsorted within rows, another format, 32-bit indices. Found by scikit-learn's
    test_explicit_sparse_zeros (tests/quality/sklearn_yardstick.py): the binary search of a row's
    columns read unsorted ones wrongly."""
    import scipy.sparse as sp

    rng = np.random.default_rng(30)
    dense = np.where(rng.random((40, 8)) < 0.5, rng.integers(-1, 2, (40, 8)), 0).astype(np.float32)
    y = rng.integers(0, 3, 40)
    model = DecisionTreeClassifier(max_depth=4).fit(dense, y)
    expected = model.tree_.apply(dense.astype(np.float64))
    for X in (sp.csc_matrix(dense), sp.csr_matrix(dense), sp.coo_matrix(dense)):
        np.testing.assert_array_equal(model.tree_.apply(X), expected)
    # Each row's stored columns in reverse order (32-bit indices, as scipy makes them).
    csr = sp.csr_matrix(dense)
    order = np.concatenate(
        [np.arange(csr.indptr[i], csr.indptr[i + 1])[::-1] for i in range(dense.shape[0])]
    )
    unsorted = sp.csr_matrix((csr.data[order], csr.indices[order], csr.indptr), dense.shape)
    assert not unsorted.has_sorted_indices
    np.testing.assert_array_equal(model.tree_.apply(unsorted), expected)
    exact = model.tree_.decision_path(dense.astype(np.float64))
    assert (model.tree_.decision_path(unsorted) != exact).nnz == 0
    assert not unsorted.has_sorted_indices  # the caller's matrix is left as it was


def _corrupt(case):
    """A 3 x 5 CSR matrix with one of its index arrays broken as ``case`` says, and the
    error that must name it. SciPy checks none of these once the matrix is built; its
    compiled conversions (tocsc, sum_duplicates, tocsr) then crashed or read out of
    bounds (issue 43: a column index past the shape segfaulted fit)."""
    X = sparse.csr_matrix(np.array([[1.0, 0, 0, 0, 2.0], [0, 3.0, 0, 0, 0], [0, 0, 4.0, 0, 0]]))
    indptr, indices = X.indptr.astype(np.int64), X.indices.astype(np.int64)  # [0 2 3 4], [0 4 1 2]
    expected = {
        "column past the shape": r"column index 7 at stored value 1 \(row 0\), but only 5 columns",
        "negative column": r"column index -1 at stored value 1 \(row 0\): an index cannot be",
        "indptr not from 0": r"indptr starting at 1, not 0",
        "indptr decreasing": r"indptr decreasing at row 1 \(3 then 2\)",
        "indptr short of nnz": r"indptr ending at 3, but 4 stored values",
        "indptr past nnz": r"indptr ending at 9, but 4 stored values",
        "indptr too short": r"indptr of length 3, but its shape needs 4 \(3 rows \+ 1\)",
        "indptr not integers": r"indptr of dtype float64",
    }[case]
    if case == "column past the shape":
        indices[1] = 7
    elif case == "negative column":
        indices[1] = -1
    elif case == "indptr not from 0":
        indptr[0] = 1
    elif case == "indptr decreasing":
        indptr[1] = 3
        indptr[2] = 2
    elif case == "indptr short of nnz":
        indptr[3] = 3
    elif case == "indptr past nnz":
        indptr[3] = 9
    elif case == "indptr too short":
        indptr = indptr[[0, 1, 3]]
    else:
        indptr = indptr.astype(np.float64)
    X.indices, X.indptr = indices, indptr
    return X, expected


CORRUPTIONS = [
    "column past the shape",
    "negative column",
    "indptr not from 0",
    "indptr decreasing",
    "indptr short of nnz",
    "indptr past nnz",
    "indptr too short",
    "indptr not integers",
]


@pytest.mark.parametrize("case", CORRUPTIONS)
def test_corrupt_csr_index_arrays_are_named_before_any_use(case):
    # Issue 43: these passed the sparse check, then crashed (segfault, abort, SciPy's
    # RuntimeError) or fitted silently on what SciPy read. scikit-learn's own fit is no
    # yardstick: it segfaults on some of them and fits the others.
    y = np.array([0, 1, 0])
    X, expected = _corrupt(case)
    with pytest.raises(ValueError, match=expected):
        DecisionTreeClassifier().fit(X, y)
    X, _ = _corrupt(case)  # a fitted model's predict and its tree's walk refuse it too
    fitted = DecisionTreeClassifier().fit(np.eye(3, 5), y)
    for use in (fitted.predict, fitted.tree_.apply):
        with pytest.raises(ValueError, match=expected):
            use(X)


def test_corrupt_csc_coo_and_bsr_index_arrays_are_named():
    y = np.array([0, 1, 0, 1])
    dense = np.array([[1.0, 0, 2.0], [0, 3.0, 0], [4.0, 0, 0], [0, 0, 5.0]])
    csc = sparse.csc_matrix(dense)
    csc.indices[0] = 6  # a row past the shape: csr_tocsc would write out of bounds
    with pytest.raises(ValueError, match=r"CSC\) has row index 6 .*column 0\), but only 4 rows"):
        DecisionTreeClassifier().fit(csc, y)
    coo = sparse.coo_matrix(dense)
    coo.col[2] = 3
    with pytest.raises(ValueError, match=r"COO\) has column index 3 at stored value 2, but only"):
        DecisionTreeClassifier().fit(coo, y)
    coo = sparse.coo_matrix(dense)
    coo.row[0] = -2
    with pytest.raises(ValueError, match=r"COO\) has row index -2 at stored value 0: an index"):
        DecisionTreeClassifier().fit(coo, y)
    bsr = sparse.bsr_matrix(np.eye(4), blocksize=(2, 2))
    bsr.indices[1] = 2
    with pytest.raises(ValueError, match=r"block column index 2 .*only 2 block columns"):
        DecisionTreeClassifier().fit(bsr, y)
    csr = sparse.csr_matrix(dense)
    csr.data = csr.data[:-1]  # one value short of its indices
    with pytest.raises(ValueError, match=r"5 indices entries but data of shape \(4,\)"):
        DecisionTreeClassifier().fit(csr, y)


def test_many_empty_columns_cost_their_stored_values_only(monkeypatch):
    # Issue 43: 50 rows x 1e6 columns holding 200 values took 27.5 s of CPU to fit
    # (scikit-learn: 0.6 s), nearly all in binning's loop over the columns, one
    # column_values and one _edges_of_sorted each. Now the columns that store nothing are
    # binned together, and the columns holding a few distinct values by one sort.
    import gpu_tree.data.binning as binning
    import gpu_tree.data.sparse as sparse_data

    calls = {"edges": 0, "column": 0}
    edges_of_sorted, column_values = binning._edges_of_sorted, sparse_data.column_values

    def counted(key, function):
        def call(*args, **kwargs):
            calls[key] += 1
            return function(*args, **kwargs)

        return call

    monkeypatch.setattr(binning, "_edges_of_sorted", counted("edges", edges_of_sorted))
    monkeypatch.setattr(sparse_data, "column_values", counted("column", column_values))
    rng = np.random.default_rng(43)
    n_rows, n_cols = 30, 4000
    X = np.zeros((n_rows, n_cols))
    X[rng.integers(0, n_rows, 120), rng.integers(0, n_cols, 120)] = rng.random(120)
    X[:, 7] = rng.integers(0, 40, n_rows)  # more distinct values than bins: quantiles
    X[:, 9] = rng.random(n_rows) + 1.0  # every row stored
    X[::3, 11] = np.nan  # missing values
    mapper = BinMapper(max_bins=16).fit(canonical_csr(sparse.csr_matrix(X)))
    assert calls["edges"] <= 2 and calls["column"] <= 2  # columns 7 and 9 only
    dense = BinMapper(max_bins=16).fit(X)  # the same edges, column by column
    for f in range(n_cols):
        np.testing.assert_array_equal(mapper.edges_[f], dense.edges_[f])
    assert np.array_equal(mapper.one_value_per_bin_, dense.one_value_per_bin_)
    assert np.array_equal(mapper.n_bins_per_feature_, dense.n_bins_per_feature_)
    assert mapper.n_bins_ == dense.n_bins_
    y = (X[:, 7] + X[:, 9] > 20).astype(np.int64)
    monkeypatch.undo()
    wide = DecisionTreeClassifier(max_bins=16, random_state=0).fit(sparse.csr_matrix(X), y)
    narrow = DecisionTreeClassifier(max_bins=16, random_state=0).fit(X, y)
    assert_tree_equal(narrow.tree_, wide.tree_, impurity_rtol=0, value_rtol=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_edges_are_those_of_each_column_alone(dtype):
    """The vectorised sparse binning gives each column the edges, bit for bit (the sign of
    a zero and the dtype included), that _edges_of_sorted gives it alone: stored zeros of
    either sign, NaN, ties, tiny and huge values, columns full or empty."""
    from gpu_tree.data.binning import _edges_of_sorted
    from gpu_tree.data.sparse import column_values

    rng = np.random.default_rng(7)
    for max_bins in (2, 3, 4, 6, 256):
        X = rng.choice([0.0, -0.0, 1.0, -1.0, 2.5, np.nan, 5e-324, -5e-324, 1e30], (40, 60))
        X[:, :20] = np.where(rng.random((40, 20)) < 0.8, 0.0, rng.normal(size=(40, 20)))
        X[:, 20:25] = rng.random((40, 5))  # full columns
        X[:, 25:30] = 0.0  # empty ones
        csr = canonical_csr(sparse.csr_matrix(X.astype(dtype)))
        csr.data[rng.random(csr.data.size) < 0.1] = -0.0  # stored zeros
        mapper = BinMapper(max_bins=max_bins).fit(csr)
        assert mapper.has_missing_  # its values get max_bins - 1 bins
        columns = csr.tocsc()
        for f in range(X.shape[1]):
            present, n_zeros = column_values(columns, f)
            alone, one_per_bin = _edges_of_sorted(present, max_bins - 1, n_zeros)
            assert mapper.edges_[f].dtype == alone.dtype
            assert mapper.edges_[f].tobytes() == alone.tobytes(), f
            assert mapper.one_value_per_bin_[f] == one_per_bin
