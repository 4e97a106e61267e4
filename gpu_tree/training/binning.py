"""Stage 3 of a fit: what the split search reads. Histogram search reads X binned (a
BinMapper fitted on X, the codes on the fit's device); exact search reads X itself."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from gpu_tree.backends import cuda as cuda_backend
from gpu_tree.backends.contract import HISTOGRAM_SPLITTERS, BinnedData
from gpu_tree.backends.cuda import check_cuda_support, check_device_memory, cuda_array_module
from gpu_tree.data.binning import BinMapper, check_category_counts, missing_by_feature
from gpu_tree.data.sparse import densified
from gpu_tree.data.validation import DENSE, DEVICE, SPARSE
from gpu_tree.training.inputs import PreparedInput
from gpu_tree.training.parameters import Settings
from gpu_tree.utils.device_copies import host_to_device


@dataclass(frozen=True)
class SearchedData:
    """The search's data (BinnedData, or the raw X of exact search), the BinMapper that
    binned it (None for exact search), the features X has missing values in (the
    exports mark where missing values go only on those features' splits) and the
    seconds binning took."""

    data: object
    bin_mapper: BinMapper | None
    missing_in_training: np.ndarray
    seconds: float


def bin_features(
    X,
    *,
    kind=DENSE,
    max_bins=256,
    device="cpu",
    layout=None,
    n_categories=None,
    feature_names=None,
) -> tuple[BinMapper, BinnedData]:
    """Fit a :class:`~gpu_tree.data.binning.BinMapper` on X and bin X with it.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
        Host numpy, or (``device="cuda"``) a device array, or a sparse matrix in
        canonical CSR form (``data.sparse.check_sparse_X``): binned on the host into
        :class:`~gpu_tree.data.binning.SparseCodes` (for either device).
    kind : one of ``data.validation.INPUT_KINDS``
        What X is (the prepared input's ``kind``).
    max_bins : int
    device : {"cpu", "cuda"}
        ``"cuda"``: X is moved to the device (once) and binned there; its codes stay
        there. With ``layout`` the GPU's free memory is checked first.
    layout : StatsLayout, optional
    n_categories, feature_names : as :meth:`BinMapper.fit`

    Returns
    -------
    mapper : BinMapper
    binned : BinnedData
    """
    mapper = BinMapper(max_bins=max_bins, random_state=0).fit(X, n_categories, feature_names)
    if kind == SPARSE:  # canonical CSR (data.sparse.check_sparse_X), binned on the host
        # On either device the codes keep X's CSR layout (the backend copies them to the
        # GPU): nothing is densified.
        if device == "cuda" and layout is not None:
            check_device_memory(X, mapper, layout, cuda_array_module())
        codes, bin_lower, bin_upper = mapper.transform_sparse(X)
        return mapper, BinnedData(codes, bin_lower, bin_upper, mapper.missing_bin_)
    if device == "cuda":
        xp = cuda_array_module()
        if layout is not None:
            check_device_memory(X, mapper, layout, xp)
        X_device = X if kind == DEVICE else host_to_device(X, xp)
        # The stream is read from the module at each call: one set there (by a caller,
        # or a test) is the one every launch of the fit must get.
        stream = cuda_backend.current_stream(xp)
        X_binned, bin_lower, bin_upper = mapper.transform_on_device(X_device, xp, stream)
    else:
        X_binned, bin_lower, bin_upper = mapper.transform(X, row_major=True)
    return mapper, BinnedData(X_binned, bin_lower, bin_upper, mapper.missing_bin_)


def searched_data(prepared: PreparedInput, settings: Settings, device, layout=None):
    """Bin X for histogram search (``layout``, where given: the GPU's free memory is
    checked for the fit's rows), or keep it, dense, for exact search."""
    n_categories = prepared.categories.maps.n_categories()
    if device == "cuda":
        check_cuda_support(settings.splitter)
    if settings.splitter in HISTOGRAM_SPLITTERS:
        start = time.perf_counter()
        mapper, data = bin_features(
            prepared.X,
            kind=prepared.kind,
            max_bins=settings.max_bins,
            device=device,
            layout=layout,
            n_categories=n_categories,
            feature_names=prepared.feature_names,
        )
        seconds = time.perf_counter() - start
        return SearchedData(data, mapper, mapper.missing_by_feature_, seconds)
    X = densified(prepared.X) if prepared.kind == SPARSE else prepared.X
    missing = missing_by_feature(X)
    categorical = prepared.categorical
    if categorical is not None:  # the same limit as in histogram mode
        has_missing = bool(missing[categorical.features].any())
        check_category_counts(n_categories, settings.max_bins, has_missing, prepared.feature_names)
    return SearchedData(X, None, missing, 0.0)


def searched_attributes(searched: SearchedData) -> dict:
    """The fitted attributes of what the search read (None: the attribute is removed)."""
    return {
        "_bin_mapper": searched.bin_mapper,
        "missing_in_training_": searched.missing_in_training,
    }
