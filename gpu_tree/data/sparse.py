"""Sparse feature matrices (SciPy's CSR, CSC, COO and the rest): checked, and put in one
canonical form that the kernels read without densifying.

The canonical form is CSR (a row's stored values together: a node's histogram reads its
rows), with float32 or float64 values, int64 ``indptr`` and ``indices``, each row's
columns increasing and no column stored twice. SciPy is not imported here: a sparse
matrix is recognised by its type's module and converted through its own methods (the
user who has one has SciPy).
"""

from __future__ import annotations

import numpy as np

from gpu_tree.data.validation import check_n_features, is_sparse

__all__ = [
    "canonical_csr",
    "check_sparse_X",
    "densified",
    "column_values",
    "csr_arrays",
    "is_sparse",
    "missing_by_feature",
]


def _value_dtype(dtype):
    """The float type the kernels read for a sparse matrix of ``dtype``."""
    if dtype.kind == "c":
        raise ValueError("Complex data not supported; X has a complex dtype")
    if dtype.kind in "biu":
        return np.float64
    if dtype.kind != "f":
        raise TypeError(f"X has unsupported dtype {dtype}; expected numbers")
    return np.float32 if dtype.itemsize <= 4 else np.float64


def check_sparse_X(X, *, n_features_expected=None, estimator_name="the estimator"):
    """A sparse X checked and in canonical CSR form (a new matrix: X is never modified).

    NaN stored in X is a missing value, as in a dense X; an implicit (not stored) entry is
    0. Infinity is refused, naming its column and row."""
    n_samples, n_features = X.shape
    if n_samples == 0:
        raise ValueError(
            f"Found array with 0 sample(s) (shape={X.shape}) while a minimum of 1 is required."
        )
    if n_features == 0:
        raise ValueError(
            f"Found array with 0 feature(s) (shape={X.shape}) while a minimum of 1 is required."
        )
    check_n_features(n_features, n_features_expected, estimator_name)
    csr = canonical_csr(X)
    infinite = np.flatnonzero(np.isinf(csr.data))
    if infinite.size:
        k = infinite[0]
        row = int(np.searchsorted(csr.indptr, k, side="right")) - 1
        raise ValueError(
            f"Input X contains infinity or a value too large in column {csr.indices[k]} at "
            f"row {row} (value {csr.data[k]})"
        )
    return csr


def canonical_csr(X):
    """X as a new canonical CSR matrix (float32 or float64 values, int64 index arrays,
    each row's columns increasing, none stored twice); X itself is not modified."""
    dtype = _value_dtype(X.dtype)
    csr = X.tocsr(copy=True) if X.format == "csr" else X.tocsr()
    csr.sum_duplicates()  # also sorts each row's columns
    csr.data = csr.data.astype(dtype, copy=False)
    csr.indices = csr.indices.astype(np.int64, copy=False)
    csr.indptr = csr.indptr.astype(np.int64, copy=False)
    return csr


def densified(csr) -> np.ndarray:
    """A canonical CSR matrix as a dense C-contiguous array (exact split search reads raw
    columns): n_samples * n_features values."""
    return np.ascontiguousarray(csr.toarray())


def csr_arrays(csr) -> tuple:
    """A canonical CSR matrix as the kernels take it: (indptr, indices, data)."""
    return csr.indptr, csr.indices, csr.data


def missing_by_feature(csr) -> np.ndarray:
    """Whether each feature has a missing value (a stored NaN), as a bool array."""
    missing = np.zeros(csr.shape[1], dtype=bool)
    missing[csr.indices[np.isnan(csr.data)]] = True
    return missing


def column_values(csc, f):
    """Feature f's stored values, sorted, NaN left out, and how many of its rows hold an
    implicit 0, from a CSC matrix."""
    stored = csc.data[csc.indptr[f] : csc.indptr[f + 1]]
    present = np.sort(stored[~np.isnan(stored)])
    return present, csc.shape[0] - stored.size
