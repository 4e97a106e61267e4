"""Estimators: scikit-learn's interface over the training pipeline."""

from gpu_tree.estimators.tree import DecisionTreeClassifier, DecisionTreeRegressor
from gpu_tree.model.file_format import register_estimator

# Model files name these classes; the loader builds them from its registry.
register_estimator(DecisionTreeClassifier)
register_estimator(DecisionTreeRegressor)

__all__ = ["DecisionTreeClassifier", "DecisionTreeRegressor"]
