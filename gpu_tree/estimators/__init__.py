"""Estimators: scikit-learn's interface over the training pipeline."""

from gpu_tree.estimators.oblique import (
    ObliqueDecisionTreeClassifier,
    ObliqueDecisionTreeRegressor,
)
from gpu_tree.estimators.tree import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreeClassifier,
    ExtraTreeRegressor,
)
from gpu_tree.model.file_format.reading import load_model
from gpu_tree.model.file_format.registry import register_estimator
from gpu_tree.model.oblique import OBLIQUE_CODEC

# Model files name these classes; the loader builds them from its registry. Load models
# through this package's ``load_model``: importing it registers them.
register_estimator(DecisionTreeClassifier)
register_estimator(DecisionTreeRegressor)
register_estimator(ExtraTreeClassifier)
register_estimator(ExtraTreeRegressor)
register_estimator(ObliqueDecisionTreeClassifier, codec=OBLIQUE_CODEC)
register_estimator(ObliqueDecisionTreeRegressor, codec=OBLIQUE_CODEC)

__all__ = [
    "DecisionTreeClassifier",
    "DecisionTreeRegressor",
    "ExtraTreeClassifier",
    "ExtraTreeRegressor",
    "ObliqueDecisionTreeClassifier",
    "ObliqueDecisionTreeRegressor",
    "load_model",
]
