"""Distributed training on Dask (issue 19): one tree from rows spread over many workers,
identical to the in-memory estimators' tree; only histograms and split decisions travel.
Needs the ``dask`` extra (``dask[distributed]``)."""

from gpu_tree.dask.backend import WorkerLostError
from gpu_tree.dask.estimators import DecisionTreeClassifier, DecisionTreeRegressor

__all__ = ["DecisionTreeClassifier", "DecisionTreeRegressor", "WorkerLostError"]
