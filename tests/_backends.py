"""Backends' capabilities as tests switch them."""

import dataclasses


def without_compiled_search(backend_class):
    """``backend_class``'s capabilities without the compiled split scan: the grower then
    scores numeric features by the vectorised search, the reference."""
    return dataclasses.replace(backend_class.capabilities, compiled_search=False)
