"""The oblique trees' CPU kernels (kernels/cpu/oblique.py): the weighted Gram matrices
sum in numpy's einsum order, bit for bit, with the zero-weight rows skipped."""

import numpy as np
import pytest

from gpu_tree.kernels.cpu.oblique import weighted_gram


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
