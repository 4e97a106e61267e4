"""The oblique trees' CPU kernels (kernels/cpu/oblique.py): the weighted Gram matrices
sum in numpy's einsum order, bit for bit, with the zero-weight rows skipped; the
weighted sums of rows and the rows' products with a vector sum in their stated order."""

import numpy as np
import pytest

from gpu_tree.kernels.cpu.oblique import ROWS_PER_BLOCK, row_dots, weighted_gram, weighted_sums


def _einsum_gram(A, weight):
    return np.einsum("bpi,bpj->bij", A * weight[..., None], A)


def _gram(A, weight):
    out = np.full((A.shape[0], A.shape[2], A.shape[2]), np.nan)
    weighted_gram(A, weight, out)
    return out


@pytest.mark.parametrize("k", [2, 3, 5, 8, 17, 29])
@pytest.mark.parametrize(("n_nodes", "n_rows"), [(1, 1), (1, 3000), (4, 16), (3, 257)])
def test_gram_is_numpy_s_einsum_bit_for_bit(k, n_nodes, n_rows):
    """Values over many magnitudes (so that the order of the sums shows in the last bits),
    a third of the rows of zero weight (padding, rows outside a hinge's margin)."""
    rng = np.random.default_rng(k * 1000 + n_rows)
    A = rng.normal(size=(n_nodes, n_rows, k)) * np.exp(3 * rng.normal(size=(n_nodes, n_rows, k)))
    weight = rng.random((n_nodes, n_rows)) * (rng.random((n_nodes, n_rows)) > 0.3)
    got = _gram(A, weight)
    assert np.array_equal(got, _einsum_gram(A, weight))


def test_zero_weight_rows_with_non_finite_values_are_summed_as_numpy_sums_them():
    A = np.ones((2, 4, 3))
    A[0, 1, 2] = np.inf
    A[1, 3, 0] = np.nan
    weight = np.array([[1.0, 0.0, 2.0, 1.0], [1.0, 1.0, 1.0, 0.0]])
    expected = _einsum_gram(A, weight)
    assert np.isnan(expected).any()
    np.testing.assert_array_equal(_gram(A, weight), expected)


def test_one_column_is_the_weighted_sum_of_squares():
    """numpy sums a single column in blocks; the kernel row by row (equal up to rounding)."""
    rng = np.random.default_rng(1)
    A = rng.normal(size=(2, 500, 1))
    weight = rng.random((2, 500))
    np.testing.assert_allclose(_gram(A, weight), _einsum_gram(A, weight), rtol=1e-13)


def test_weighted_sums_add_the_rows_in_order():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(3, 40, 5)) * np.exp(3 * rng.normal(size=(3, 40, 5)))
    weight = rng.random((3, 40)) * (rng.random((3, 40)) > 0.3)
    expected = np.zeros((3, 5))
    for p in range(40):
        expected = expected + weight[:, p, None] * X[:, p]
    out = np.full((3, 5), np.nan)
    weighted_sums(weight, X, out)
    assert np.array_equal(out, expected)
    X[1, 7, 2] = np.inf  # a zero-weight row with a non-finite value is summed: NaN
    weight[1, 7] = 0.0
    weighted_sums(weight, X, out)
    assert np.isnan(out[1, 2]) and np.isfinite(out[0]).all()


@pytest.mark.parametrize("n_rows", [1, ROWS_PER_BLOCK - 1, ROWS_PER_BLOCK + 3])
def test_row_dots_add_the_columns_in_order(n_rows):
    rng = np.random.default_rng(n_rows)
    A = rng.normal(size=(2, n_rows, 7)) * np.exp(3 * rng.normal(size=(2, n_rows, 7)))
    coefficients = rng.normal(size=(2, 7))
    expected = np.zeros((2, n_rows))
    for j in range(7):
        expected = expected + A[:, :, j] * coefficients[:, j, None]
    out = np.full((2, n_rows), np.nan)
    row_dots(A, coefficients, out)
    assert np.array_equal(out, expected)
