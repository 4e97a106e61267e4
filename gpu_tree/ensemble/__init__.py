"""Ensembles of gpu_tree's trees: random forests whose trees grow together."""

from gpu_tree.ensemble.dag import DAGClassifier
from gpu_tree.ensemble.forest import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
    unfitted_tree,
)
from gpu_tree.estimators import load_model
from gpu_tree.model.file_format.registry import register_estimator

# Model files name these classes; the loader builds them, and their trees, from its
# registry. Importing this package registers them (and, through gpu_tree.estimators, the
# trees' classes): its ``load_model`` loads any model file, a forest's included.
for _forest_class in (
    RandomForestClassifier,
    RandomForestRegressor,
    ExtraTreesClassifier,
    ExtraTreesRegressor,
):
    register_estimator(_forest_class, tree_estimator=unfitted_tree)

__all__ = [
    "DAGClassifier",
    "ExtraTreesClassifier",
    "ExtraTreesRegressor",
    "RandomForestClassifier",
    "RandomForestRegressor",
    "load_model",
]
