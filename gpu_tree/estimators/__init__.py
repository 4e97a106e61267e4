"""Estimators: scikit-learn's interface over the training pipeline."""

from gpu_tree.estimators.tree import DecisionTreeClassifier, DecisionTreeRegressor
from gpu_tree.model.file_format import load_model, register_estimator

# Model files name these classes; the loader builds them from its registry. Load models
# through this package's ``load_model``: importing it registers them.
register_estimator(DecisionTreeClassifier)
register_estimator(DecisionTreeRegressor)

__all__ = ["DecisionTreeClassifier", "DecisionTreeRegressor", "load_model"]
