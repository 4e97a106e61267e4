"""Distributed training on Dask: one tree from rows spread over many workers,
identical to the in-memory estimators' tree; only histograms and split decisions travel.
Needs the ``dask`` extra (``dask[distributed]``).

The public names load on first use (PEP 562): a worker process that runs only the
functions of ``gpu_tree.dask.shards`` imports this package first, and must not pay for
the estimators and scikit-learn, at start-up or when its cluster closes.
"""

import importlib

# Public name -> the module it is loaded from.
_PUBLIC = {
    "DecisionTreeClassifier": "gpu_tree.dask.estimators",
    "DecisionTreeRegressor": "gpu_tree.dask.estimators",
    "WorkerLostError": "gpu_tree.dask.backend",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'gpu_tree.dask' has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))
