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

from gpu_tree.data.validation import check_n_features, column_label, is_sparse

__all__ = [
    "canonical_csr",
    "check_sparse_X",
    "check_sparse_structure",
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
    0. Infinity is refused, naming its column and row. Index arrays that do not describe
    X's shape (:func:`check_sparse_structure`) are refused before anything reads them."""
    if len(X.shape) != 2:
        raise ValueError(f"X (sparse) must be 2-D, got shape {X.shape}")
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
            f"Input X contains infinity or a value too large in "
            f"{column_label(csr.indices[k], None)} at row {row} (value {csr.data[k]})"
        )
    return csr


def canonical_csr(X):
    """X as a new canonical CSR matrix (float32 or float64 values, int64 index arrays,
    each row's columns increasing, none stored twice); X itself is not modified. X's index
    arrays are checked first (:func:`check_sparse_structure`): SciPy's compiled routines
    trust them, and read or write out of bounds where they are wrong."""
    dtype = _value_dtype(X.dtype)
    check_sparse_structure(X)
    csr = X.tocsr(copy=True) if X.format == "csr" else X.tocsr()
    if X.format not in _CHECKED_FORMATS:  # LIL, DOK, DIA: their own conversion's result
        check_sparse_structure(csr)
    csr.sum_duplicates()  # also sorts each row's columns
    csr.data = csr.data.astype(dtype, copy=False)
    csr.indices = csr.indices.astype(np.int64, copy=False)
    csr.indptr = csr.indptr.astype(np.int64, copy=False)
    return csr


# The formats whose index arrays check_sparse_structure reads (the others hold Python
# lists or dicts, or diagonals, which SciPy's conversions read safely; their CSR is checked).
_CHECKED_FORMATS = ("csr", "csc", "bsr", "coo")


def check_sparse_structure(X):
    """Refuse, with a ValueError naming the array and the value, a SciPy sparse X whose
    index arrays do not describe its shape: a CSR, CSC or BSR ``indptr`` of the wrong
    length, not starting at 0, decreasing or not ending at the number of stored values;
    an index (``indices``, a COO's ``row`` / ``col``) negative or past the shape; index
    arrays of another length than ``data``. SciPy checks none of this once a matrix is
    built (its attributes can be set, or a file can hold anything), and its compiled
    conversions (``tocsc``, ``sum_duplicates``) then crash or corrupt memory. O(stored
    values), vectorised; other formats pass (nothing compiled reads them unchecked)."""
    if len(X.shape) != 2:
        raise ValueError(f"X (sparse) must be 2-D, got shape {X.shape}")
    n_rows, n_cols = (int(n) for n in X.shape)
    if X.format in ("csr", "csc", "bsr"):
        if X.format == "csc":
            major, minor, major_name, minor_name = n_cols, n_rows, "column", "row"
        elif X.format == "csr":
            major, minor, major_name, minor_name = n_rows, n_cols, "row", "column"
        else:
            block_rows, block_cols = (int(n) for n in X.blocksize)
            major, minor = n_rows // block_rows, n_cols // block_cols
            major_name, minor_name = "block row", "block column"
        name = f"X (sparse, {X.format.upper()})"
        indptr = _index_array(name, "indptr", X.indptr)
        indices = _index_array(name, "indices", X.indices)
        n_stored = _stored_count(name, X.data, indices.size, "indices")
        _check_indptr(name, indptr, major, major_name, n_stored)
        _check_index_range(name, indices, minor, minor_name, indptr, major_name)
    elif X.format == "coo":
        name = "X (sparse, COO)"
        row = _index_array(name, "row", X.row)
        col = _index_array(name, "col", X.col)
        n_stored = _stored_count(name, X.data, row.size, "row")
        if col.size != n_stored:
            raise ValueError(
                f"{name} has {col.size} col indices but {n_stored} stored values (data)"
            )
        _check_index_range(name, row, n_rows, "row")
        _check_index_range(name, col, n_cols, "column")


def _index_array(name, field, values) -> np.ndarray:
    values = np.asarray(values)
    if values.ndim != 1 or values.dtype.kind not in "iu":
        raise ValueError(
            f"{name} has {field} of dtype {values.dtype} and shape {values.shape}: "
            "expected a 1-D array of integers"
        )
    return values


def _stored_count(name, data, n_indices, field) -> int:
    """The number of stored values (``data``'s first axis), which must be the number of
    indices."""
    data = np.asarray(data)
    n_stored = int(data.shape[0]) if data.ndim else -1
    if n_stored != n_indices:
        raise ValueError(
            f"{name} has {n_indices} {field} entries but data of shape {data.shape}: "
            "each stored value needs one"
        )
    return n_stored


def _check_indptr(name, indptr, major, major_name, n_stored):
    if indptr.size != major + 1:
        raise ValueError(
            f"{name} has indptr of length {indptr.size}, but its shape needs {major + 1} "
            f"({major} {major_name}s + 1)"
        )
    if indptr[0] != 0:
        raise ValueError(f"{name} has indptr starting at {indptr[0]}, not 0")
    decreasing = np.flatnonzero(indptr[1:] < indptr[:-1])  # no subtraction: uint-safe
    if decreasing.size:
        i = int(decreasing[0])
        raise ValueError(
            f"{name} has indptr decreasing at {major_name} {i} ({indptr[i]} then "
            f"{indptr[i + 1]}): it must not decrease"
        )
    if indptr[-1] != n_stored:
        raise ValueError(
            f"{name} has indptr ending at {indptr[-1]}, but {n_stored} stored values: "
            "its last entry must be the number of stored values"
        )


def _check_index_range(name, indices, size, kind, indptr=None, major_name=None):
    """Every index in [0, size); the first one that is not is named (with the row, or
    column, of its stored value where ``indptr`` says)."""
    if indices.size == 0:
        return
    if indices.min() >= 0 and indices.max() < size:
        return
    k = int(np.flatnonzero((indices < 0) | (indices >= size))[0])
    where = ""
    if indptr is not None:
        major = int(np.searchsorted(indptr, k, side="right")) - 1
        where = f" ({major_name} {major})"
    reason = ": an index cannot be negative" if indices[k] < 0 else f", but only {size} {kind}s"
    raise ValueError(f"{name} has {kind} index {indices[k]} at stored value {k}{where}{reason}")


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
