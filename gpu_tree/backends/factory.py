"""The one builder of backends: CPU histogram search, CPU exact search, CUDA histogram
search, over dense or sparse bin codes (the contract they keep:
:mod:`gpu_tree.backends.contract`)."""

from __future__ import annotations

from gpu_tree.backends.contract import (
    DEVICES,
    EXACT_SPLITTERS,
    HISTOGRAM_SPLITTERS,
    BinnedData,
    HistogramBackend,
)
from gpu_tree.backends.cpu import CPUExactBackend, CPUHistogramBackend
from gpu_tree.backends.cpu_sparse import CPUSparseHistogramBackend
from gpu_tree.backends.cuda import (
    CUDAHistogramBackend,
    check_cuda_support,
    cuda_array_module,
)
from gpu_tree.backends.cuda_sparse import CUDASparseHistogramBackend
from gpu_tree.backends.rows import RowData
from gpu_tree.data.binning import SparseCodes
from gpu_tree.utils.phase_timer import PhaseTimer


def make_backend(
    data, row_data: RowData, *, device="cpu", splitter="hist", timer: PhaseTimer | None = None
) -> HistogramBackend:
    """The backend of the training pipeline.

    Parameters
    ----------
    data : BinnedData or ndarray of shape (n_samples, n_features)
        Binned features (``splitter="hist"``, from :func:`bin_features`), or the raw
        host values (``splitter="exact"``).
    row_data : RowData
        What each row contributes to the histograms.
    device : {"cpu", "cuda"}
        ``"cuda"`` runs histogram search only.
    splitter : {"hist", "random", "exact", "best"}
    timer : PhaseTimer, optional
        Given, the backend records its own sub-phases in it (the CUDA histogram kernel).

    Returns
    -------
    HistogramBackend
        :class:`CPUHistogramBackend`, :class:`CPUExactBackend` or
        :class:`CUDAHistogramBackend`.
    """
    if device not in DEVICES:
        raise ValueError(f"Unknown device={device!r}; choose 'cpu' or 'cuda'")
    if device == "cuda":
        check_cuda_support(splitter)
    if splitter in EXACT_SPLITTERS:
        if isinstance(data, BinnedData):
            raise TypeError("splitter='exact' searches raw values: pass X, not BinnedData")
        return CPUExactBackend(data, row_data)
    if splitter not in HISTOGRAM_SPLITTERS:
        raise ValueError(
            f"Unknown splitter={splitter!r}; choose 'hist', 'random', 'exact' or 'best'"
        )
    if not isinstance(data, BinnedData):
        raise TypeError("splitter='hist' needs BinnedData (see training.binning.bin_features)")
    sparse = isinstance(data.X_binned, SparseCodes)
    if device == "cuda":
        xp = cuda_array_module()
        return (CUDASparseHistogramBackend if sparse else CUDAHistogramBackend)(
            data.X_binned,
            data.bin_lower,
            data.bin_upper,
            row_data,
            xp,
            data.missing_bin,
            timer=timer,
        )
    backend_class = CPUSparseHistogramBackend if sparse else CPUHistogramBackend
    return backend_class(data.X_binned, data.bin_lower, data.bin_upper, row_data, data.missing_bin)
