"""Backends' capabilities as tests switch them."""

import dataclasses


def without_compiled_search(backend_class):
    """``backend_class``'s capabilities without the compiled split scan: the grower then
    scores numeric features by the vectorised search, the reference."""
    return dataclasses.replace(backend_class.capabilities, compiled_search=False)


def set_compiled_categorical_search(monkeypatch, enabled: bool):
    """Every CPU backend's categorical features scored by the compiled categorical search
    (True, as they declare) or by the vectorised search, the reference (False)."""
    from gpu_tree.backends.cpu import CPUExactBackend, CPUHistogramBackend
    from gpu_tree.backends.cpu_sparse import CPUSparseHistogramBackend

    for backend in (CPUHistogramBackend, CPUExactBackend, CPUSparseHistogramBackend):
        capabilities = dataclasses.replace(
            backend.capabilities, compiled_categorical_search=enabled
        )
        monkeypatch.setattr(backend, "capabilities", capabilities)
